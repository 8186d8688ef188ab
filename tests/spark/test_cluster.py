"""End to end on a real Spark standalone cluster: a master and a worker started from the installed pyspark
on 127.0.0.1 (``spark-class``: pip's pyspark has no start-master.sh), ``kafkatool spark-scan --master
spark://127.0.0.1:PORT`` in a subprocess (kafkatool shipped as a zip, executors in their own JVM), and
both stopped with their whole process group. Every wait is bounded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import kafkatool
from kafkatool.scan.engine import run_local
from kafkatool.scan.plan import discover, make_plan
from kafkatool.scan.report import keyshare_setup, keyshare_tables, segment_row, topic_shares
from tests.support.cli import CliResult
from tests.support.dump_totals import assert_scan_equals_dump
from tests.support.paths import ROOT
from tests.support.procs import group_running

pytestmark = [pytest.mark.spark, pytest.mark.slow]

pyspark = pytest.importorskip("pyspark")
START_TIMEOUT = 90.0


def _free_port() -> int:
    from kafkatool.canary.sandbox import free_port

    return free_port()  # below the ephemeral range: no outgoing connection takes it before the server binds it


def _wait_for(path: Path, text: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{path.name}: exited with {proc.returncode}:\n{path.read_text(errors='replace')}")
        time.sleep(0.05)
    raise TimeoutError(f"{path.name}: no {text!r} within {START_TIMEOUT}s:\n{path.read_text(errors='replace')}")


def _gone(proc: subprocess.Popen[Any], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader: a zombie still counts as a member of its group
        if not group_running(proc.pid):
            return True
        time.sleep(0.1)
    return False


def _stop(proc: subprocess.Popen[Any], signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGKILL)) -> None:
    """SIGTERM, then SIGKILL, the whole process group ``proc`` leads (started with ``start_new_session``: a
    worker's executor JVMs, a driver's spark-submit JVM), each with a bounded wait; raise if it survives."""
    pgid = proc.pid
    for sig in signals:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        if _gone(proc, 10.0):
            break
    proc.poll()
    if group_running(pgid):
        raise RuntimeError(f"process group {pgid} ({proc.args}) survived SIGKILL")


def _run_cli_in_group(*args: str | os.PathLike[str], env: dict[str, str], timeout: float) -> CliResult:
    """``run_cli``, but the driver and its spark-submit JVM in their own process group, stopped as a whole
    whether the run ends or times out (run_cli's timeout would kill only the Python process)."""
    full_env = dict(os.environ, NO_COLOR="1", COLUMNS="200", **env)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "kafkatool", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=full_env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        _stop(proc)
    return CliResult(proc.returncode, out, err)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from kafkatool.spark.session import find_java

    if find_java() is None:
        pytest.skip("no Java")
    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    d = tmp_path_factory.mktemp("cluster")
    port = _free_port()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=os.path.dirname(pyspark.__file__),
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
               SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC", SPARK_DAEMON_MEMORY="256m")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(d / "master.log", "wb") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", "0"], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        deadline = time.monotonic() + START_TIMEOUT
        _wait_for(d / "master.log", "I have been elected leader", procs[0], deadline)
        with open(d / "worker.log", "wb") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host",
                 "127.0.0.1", "--webui-port", "0", "--cores", "1", "--memory", "1g", "--work-dir", str(d / "work")],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(d / "worker.log", "Successfully registered with master", procs[1], deadline)
        yield f"spark://127.0.0.1:{port}", d / "work", procs[1]
    finally:
        for p in reversed(procs):
            _stop(p)


def test_spark_scan_on_a_standalone_cluster_equals_the_single_process_scan(cluster, mixed_dir, sample_dir, dumped,
                                                                          tmp_path):
    master, work, _worker = cluster
    out = tmp_path / "out"
    # The mixed dir (damage, kafka-ref batches, known key routing) and a `kafkatool sample` dir in one run;
    # many ranges (16 KiB) in few tasks: one 1-core worker.
    r = _run_cli_in_group("spark-scan", mixed_dir.path, sample_dir, "--master", master, "--driver-host", "127.0.0.1",
                "--memory", "1536MiB", "--split-size", "16KiB", "--task-size", "1GiB", "--stats", "--key-sharing", "5",
                "--format", "json", "--output", out,
                env={"SPARK_LOCAL_IP": "127.0.0.1", "KAFKATOOL_SPARK_FAST_JVM": "1"}, timeout=300)
    assert r.returncode == 1, r.stderr  # damaged-0 holds a CRC failure and a torn tail
    assert "Traceback" not in r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    # Every partition's figures and the total equal kafkatool dump's counts of the same dirs.
    assert_scan_equals_dump(objs, dumped)
    found = discover([str(mixed_dir.path), str(sample_dir)])
    setup = keyshare_setup(found.segments, 5)
    want = run_local(make_plan(found.segments, split_bytes=16384, share_slots=setup.share_slots(),
                               topic_partitions=setup.topic_partitions()))
    segs = pq.read_table(out / "segments.parquet").to_pylist()
    expected = [segment_row(s) for s in want.segments]
    for row in segs + expected:
        row.pop("ranges")
        row.pop("rescanned")
    assert segs == expected
    (total,) = [o for o in objs if o["type"] == "total"]
    assert (total["records"], total["bytes"], total["crc_failures"]) == (want.total.records, want.total.bytes, 1)
    ks = keyshare_tables(topic_shares(want, setup))
    assert pq.read_table(out / "keyshare_consumers.parquet").to_pylist() == ks["keyshare_consumers"]

    # Shipping: the executors' Python has this very kafkatool installed (the venv's editable install of this
    # checkout) with its compiled extension, so nothing is shipped: the probe says so per executor, and the
    # installed package, not a zip, ran the scan.
    notes = [line for line in r.stderr.splitlines() if line.startswith("kafkatool spark-scan: executor ")]
    assert len(notes) == 1, r.stderr
    root = Path(kafkatool.__file__).parent
    assert notes[0].endswith(f"from {root / '__init__.py'} (installed: the same sources as this driver), "
                             "compiled path active"), notes
    assert not list(work.rglob("kafkatool.zip")), "shipped although every executor had it installed"


def test_an_executor_without_the_compiled_extension_is_named_warned_about_and_still_right(cluster, mixed_dir,
                                                                                         sample_dir, dumped):
    """Issue 22, item 5: the preflight says per executor whether the compiled path is active and warns when not
    (here its Python workers have KAFKATOOL_PURE=1 through Spark's executor environment); the scan then takes the
    pure-Python path there and still equals dump."""
    master, _work, _worker = cluster
    r = _run_cli_in_group("spark-scan", mixed_dir.path, sample_dir, "--master", master, "--driver-host", "127.0.0.1",
                          "--memory", "1536MiB", "--format", "json", "--conf", "spark.executorEnv.KAFKATOOL_PURE=1",
                          env={"SPARK_LOCAL_IP": "127.0.0.1", "KAFKATOOL_SPARK_FAST_JVM": "1"}, timeout=300)
    assert r.returncode == 1, r.stderr  # damaged-0, as in every scan of the mixed dir
    notes = [line for line in r.stderr.splitlines() if line.startswith("kafkatool spark-scan: executor ")]
    assert len(notes) == 1 and notes[0].endswith("compiled path INACTIVE"), r.stderr
    host = notes[0].removeprefix("kafkatool spark-scan: executor ").split(":", 1)[0]
    assert (f"kafkatool spark-scan: warning: executor {host} runs kafkatool without its compiled extension (not "
            "built for its Python, or KAFKATOOL_PURE set): up to about 4x the CPU.") in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert_scan_equals_dump([json.loads(line) for line in r.stdout.splitlines()], dumped)


def test_an_unreachable_master_is_one_line_naming_it_and_the_cause(sample_dir):
    url = f"spark://127.0.0.1:{_free_port()}"  # nothing listens there
    r = _run_cli_in_group("spark-scan", sample_dir, "--master", url, "--driver-host", "127.0.0.1",
                          env={"SPARK_LOCAL_IP": "127.0.0.1"}, timeout=120)
    assert r.returncode == 2, r.stderr
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and f"cannot reach the Spark master {url}" in errors[0], r.stderr
    assert "Connection refused" in errors[0]
    assert "Traceback" not in r.stderr and "Py4J" not in r.stderr and "at org.apache" not in r.stderr


def test_a_worker_killed_mid_scan_ends_the_run_with_what_spark_reported(cluster, mixed_dir, sample_dir):
    """Last in the module: it kills the cluster's only worker once the scan has started (its executor probed)."""
    master, _work, worker = cluster
    env = dict(os.environ, NO_COLOR="1", SPARK_LOCAL_IP="127.0.0.1", KAFKATOOL_SPARK_FAST_JVM="1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "kafkatool", "spark-scan", str(mixed_dir.path), str(sample_dir),
                             "--master", master, "--driver-host", "127.0.0.1", "--memory", "1536MiB",
                             "--split-size", "4KiB", "--task-size", "64KiB", "--executor-timeout", "3",
                             "--format", "json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("kafkatool spark-scan: executor "):  # probed: the scan job is next
                # SIGKILL, at once, the worker with its executor and Python workers: a SIGTERM lets the worker
                # shut down gracefully for seconds, long enough on a quiet machine for the scan to finish (the
                # run then ended with its findings, exit 1, in one CI run).
                _stop(worker, (signal.SIGKILL,))
                break
        else:
            pytest.fail("the run ended before its executor was probed:\n" + "".join(lines))
        out, err = proc.communicate(timeout=180)  # bounded: --executor-timeout 3 and Spark's own cancel
        lines.append(err)
    finally:
        _stop(proc)
    text = "".join(lines)
    assert proc.returncode == 2, text
    assert "no Spark executor alive for 3s (executor timeout); Spark reported: executor" in text, text
    assert "Traceback" not in text
