"""The one Spark session the Spark tests share: ``local[2]``, down-sized, fast JVM flags (a session start is 6-17 s;
a second one per module would double the suite's Spark time)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    pyspark = pytest.importorskip("pyspark")
    from kafkatool.spark.memory import GiB, plan_memory
    from kafkatool.spark.session import SessionSettings, build_session, find_java

    if find_java() is None:
        pytest.skip("no Java")
    from tests.support.s3_server import CREDENTIALS

    # the object-storage tests' S3 credentials (moto's dummies) in the Python workers' environment from the start,
    # as a cluster's executors have theirs (tests/spark/test_object_storage.py reads through this session)
    session = build_session(SessionSettings(
        master="local[2]", fast_jvm=True, memory=plan_memory(2 * GiB, 2, local=True),
        conf=[("spark.sql.shuffle.partitions", "2"), ("spark.default.parallelism", "2")], extra_env=CREDENTIALS))
    assert pyspark.__version__
    session._kafkatool_shared = True  # spark_scan() in a test joins it and leaves it running
    yield session
    session.stop()
