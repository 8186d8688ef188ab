"""``kafkatool spark-scan``'s engine without Spark: planning, byte-range sources, per-range statistics,
export and index checks, and the single-process (process pool) runner.
"""
