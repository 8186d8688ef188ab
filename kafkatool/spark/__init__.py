"""Scanning log dirs with Spark: planning, byte-range sources, Arrow schemas, the Spark job, cluster shipping.

Only ``session`` and ``job`` import pyspark, and only when called: planning, sources and schemas are
shared with the single-process engine (``kafkatool.scan.engine``), which needs no JVM.
"""
