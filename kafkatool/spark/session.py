"""Building the SparkSession: environment, quiet logging, memory settings, shipping to a cluster.

Measured on these machines (``/work/shared/SPARK-NOTES.md``): workers run ``PYSPARK_PYTHON`` (an
environment variable: the ``spark.pyspark.python`` conf is ignored for an in-process session), so it
is set to this interpreter; ``local`` masters bind to 127.0.0.1 (``SPARK_LOCAL_IP``); Spark logs at
WARN through a log4j2 file and draws no console progress bar; the UI is off unless asked for.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkatool.errors import UsageError
from kafkatool.spark.memory import MemoryPlan, is_local_master
from kafkatool.spark.ship import archive_settings, package_root, package_zip

FAST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # ~6 s start instead of 10-17 s; for tests

_LOG4J2 = """\
# kafkatool spark-scan: Spark's own logging at WARN on stderr
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""


@dataclass(frozen=True, slots=True)
class SessionSettings:
    master: str = "local[*]"
    conf: Sequence[tuple[str, str]] = ()  # the request's Spark settings, applied last
    memory: MemoryPlan | None = None
    driver_host: str | None = None
    python_archive: str | None = None
    ui: bool = False
    fast_jvm: bool = False
    app_name: str = "kafkatool spark-scan"
    extra_env: dict[str, str] = field(default_factory=dict)


def require_pyspark() -> Any:
    """Import pyspark, or say what to install."""
    try:
        import pyspark
    except ImportError:
        raise UsageError("spark needs pyspark: pip install 'kafkatool[spark]' (or choose local-processes, which "
                         "runs without Spark)", field="engine") from None
    return pyspark


def find_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def spark_home_warning(pyspark_version: str, pyspark_dir: str) -> str | None:
    """A warning when ``SPARK_HOME`` points at a different Spark than the installed pyspark."""
    home = os.environ.get("SPARK_HOME")
    if not home or os.path.realpath(home) == os.path.realpath(pyspark_dir):
        return None
    version = None
    release = os.path.join(home, "RELEASE")
    try:
        with open(release) as f:
            first = f.readline().split()
            if len(first) >= 2 and first[0] == "Spark":
                version = first[1]
    except OSError:
        pass
    if version is None:
        jars = os.path.join(home, "jars")
        try:
            for name in os.listdir(jars):
                if name.startswith("spark-core_") and name.endswith(".jar"):
                    version = name[:-4].split("-")[-1]
        except OSError:
            pass
    if version == pyspark_version:
        return None
    return (f"SPARK_HOME={home} is Spark {version or 'of an unknown version'} but pyspark is {pyspark_version}: "
            "the JVM side starts from SPARK_HOME; unset it to use pyspark's own Spark")


def log4j_file() -> str:
    d = tempfile.mkdtemp(prefix="kafkatool-spark-")
    atexit.register(shutil.rmtree, d, True)
    path = os.path.join(d, "log4j2.properties")
    with open(path, "w") as f:
        f.write(_LOG4J2)
    return path


def session_conf(settings: SessionSettings, log4j: str) -> tuple[dict[str, str], dict[str, str]]:
    """(Spark conf, environment variables) for ``settings``; the caller's ``conf`` wins, JVM options are joined."""
    local = is_local_master(settings.master)
    env: dict[str, str] = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j}"
    if settings.fast_jvm:
        java_opts += " " + FAST_JVM_OPTS
    conf: dict[str, str] = {
        "spark.master": settings.master,
        "spark.app.name": settings.app_name,
        "spark.ui.enabled": "true" if settings.ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.sql.debug.maxToStringFields": "1000",  # our schemas are wide; Spark warns past 25 fields
    }
    if local:
        env["SPARK_LOCAL_IP"] = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
        conf["spark.driver.host"] = settings.driver_host or "127.0.0.1"
        conf["spark.driver.bindAddress"] = settings.driver_host or "127.0.0.1"
        # Local workers inherit the environment: let them import this very kafkatool.
        parent = str(package_root().parent)
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join([parent, *[p for p in paths if p != parent]])
    elif settings.driver_host:
        conf["spark.driver.host"] = settings.driver_host
    if settings.memory is not None:
        conf.update(settings.memory.spark_conf())
    if settings.python_archive:
        extra_conf, extra_env = archive_settings(settings.python_archive)
        conf.update(extra_conf)
        env.update(extra_env)
    for k, v in settings.conf:
        if k in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions") and k in conf:
            conf[k] = conf[k] + " " + v
        else:
            conf[k] = v
    env.update(settings.extra_env)
    return conf, env


def build_session(settings: SessionSettings, warn: Callable[[str], None] = lambda s: None) -> Any:
    """Start (or join) the SparkSession for ``settings``; ships kafkatool when the master is a cluster."""
    pyspark = require_pyspark()
    if find_java() is None:
        raise UsageError("spark needs Java 17 or 21 to start (set JAVA_HOME or put java on PATH), or choose "
                         "local-processes, which runs without Spark", field="engine")
    warning = spark_home_warning(pyspark.__version__, os.path.dirname(pyspark.__file__))
    if warning:
        warn(warning)
    conf, env = session_conf(settings, log4j_file())
    os.environ.update(env)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    try:
        spark = builder.getOrCreate()
    except Exception as e:
        name = type(e).__name__
        text = str(e).splitlines()[0] if str(e) else name
        if "JAVA_GATEWAY_EXITED" in str(e) or "Java gateway process exited" in str(e):
            raise UsageError("Spark's JVM did not start (JAVA_GATEWAY_EXITED): check Java 17/21 and JAVA_HOME, "
                             "and the Spark messages above") from None
        raise UsageError(f"could not start Spark ({settings.master}): {name}: {text}") from None
    if not is_local_master(settings.master):
        d = tempfile.mkdtemp(prefix="kafkatool-ship-")
        atexit.register(shutil.rmtree, d, True)
        spark.sparkContext.addPyFile(package_zip(d))
    return spark
