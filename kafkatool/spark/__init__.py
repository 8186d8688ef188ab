"""Scanning log dirs with Spark: the session, the job, cluster shipping, and the ``kafka-log`` DataFrame source.

pyspark is imported only in this package, and only when called: planning, sources and schemas are shared with the
single-process engine (``kafkatool.scan``), which needs no JVM.
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``kafka-log`` DataFrame source with ``spark``: ``spark.read.format("kafka-log").load(path)``
    (``kafkatool.spark.dataframe``)."""
    from kafkatool.spark.dataframe import register as _register

    _register(spark)
