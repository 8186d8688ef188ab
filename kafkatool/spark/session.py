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
from kafkatool.spark.ship import archive_settings, package_root

FAST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # ~6 s start instead of 10-17 s
MASTER_CONNECT_TIMEOUT = 5.0  # seconds per master address: an unreachable master is one line, not minutes of retries

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
    executor_env: dict[str, str] = field(default_factory=dict)  # also set on a cluster's executors


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
    if settings.fast_jvm or local:
        # The driver JVM (with local[N], the executor too) only schedules tasks and passes each task's one small
        # Arrow blob back: C1 and the serial collector start it in ~6 s instead of 10-17 s and cost nothing later.
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
    env.update(settings.executor_env)
    for k, v in settings.executor_env.items():
        conf.setdefault(f"spark.executorEnv.{k}", v)
    return conf, env


def master_addresses(master: str) -> list[tuple[str, int]]:
    """The ``(host, port)`` pairs a ``spark://`` (standalone, possibly several for HA) or ``k8s://`` master names."""
    from urllib.parse import urlsplit

    m = master.strip()
    if m.startswith("spark://"):
        out = []
        for part in m[len("spark://"):].split(","):
            host, _, port = part.strip().rstrip("/").rpartition(":")
            if host and port.isdigit():
                out.append((host.strip("[]"), int(port)))
        return out
    if m.startswith("k8s://"):
        u = urlsplit(m[len("k8s://"):] if "://" in m[len("k8s://"):] else "https://" + m[len("k8s://"):])
        if u.hostname:
            return [(u.hostname, u.port or (443 if u.scheme == "https" else 80))]
    return []


def check_master(master: str, timeout: float = MASTER_CONNECT_TIMEOUT) -> None:
    """Refuse a master none of whose addresses accepts a connection, in one line naming it and the cause (Spark itself
    retries for a minute and more, then prints Java stack traces)."""
    import socket

    addresses = master_addresses(master)
    if not addresses:
        return
    causes = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except TimeoutError:
            causes.append(f"{host}:{port}: no answer within {timeout:.0f}s")
        except OSError as e:
            causes.append(f"{host}:{port}: {e.strerror or type(e).__name__}")
    raise UsageError(f"cannot reach the Spark master {master}: {'; '.join(causes)}", field="master")


def build_session(settings: SessionSettings, warn: Callable[[str], None] = lambda s: None) -> Any:
    """Start (or join) the SparkSession for ``settings`` (a cluster master is checked first: reachable or one line).
    Shipping kafkatool to a cluster's executors is the caller's (``kafkatool.spark.job.ship_if_needed``)."""
    pyspark = require_pyspark()
    if find_java() is None:
        raise UsageError("spark needs Java 17 or 21 to start (set JAVA_HOME or put java on PATH), or choose "
                         "local-processes, which runs without Spark", field="engine")
    warning = spark_home_warning(pyspark.__version__, os.path.dirname(pyspark.__file__))
    if warning:
        warn(warning)
    if not is_local_master(settings.master):
        check_master(settings.master)
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
    return spark


def ship_dir() -> str:
    """A temp dir for the shipped package, removed at exit."""
    d = tempfile.mkdtemp(prefix="kafkatool-ship-")
    atexit.register(shutil.rmtree, d, True)
    return d
