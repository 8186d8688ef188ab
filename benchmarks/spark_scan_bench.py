"""Throughput of ``spark-scan``: Spark ``local[2]`` against the single-process scan, and the fixed cost.

    python benchmarks/spark_scan_bench.py generate DIR [GIB] # a log dir written by kafka-ref (Kafka's code):
                                                             # ~2.3 GiB, or about GIB (issue 22 asks >= 4 GB)
    python benchmarks/spark_scan_bench.py run DIR            # one measured run of each engine, JSON on stdout

The data (Kafka 3.9.1 ``MemoryRecordsBuilder`` via ``kafka-ref gen``, index files rebuilt by
``recover.py``): ``bench-0`` and ``bench-1`` hold one ~1 GiB segment each (Kafka's default
``segment.bytes``) so the planner must cut them; ``bench-2`` holds eight ~40 MiB segments of v1 and
v2 batches. 1000-byte values (half compressible), one header (v2), 100 records per batch, every codec.

Measured, each once (the machine is shared: big runs are not repeated in loops):

* ``single``: ``kafkatool.scan.pool.run_pass(jobs=1)``, the single-process scan spark-scan's local engine runs
  (wall and CPU time);
* ``dump``: ``kafkatool dump DIR --deep --verify --summary-only``, the peer issue 22 names (CPU of the process);
* ``pool2``: the same with a 2-process pool (``--engine local-processes -j 2``);
* ``spark``: the Spark job on a ``local[2]`` session already started (production JVM flags), then the same job
  again (``warm_*``: the Python workers have imported what a task needs, a one-time cost per worker), and
  separately the session start, the first tiny job (Python workers, Arrow) and ``stop()``: the fixed
  start-up cost an operator pays once per run; the job's CPU is split between the JVM and the Python
  workers (by process name);
* ``cli``: ``kafkatool spark-scan DIR --master local[2]`` end to end (wall);
* ``kafka_ref``: Kafka's own Java reader over the first 1 GiB segment (``kafka-ref bench --deep``,
  one iteration), for scale.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the repository root, not this script's dir, first on the path: benchmarks/profile.py would shadow the
# standard library's profile module, which pyspark imports
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(ROOT)
else:
    sys.path.insert(0, str(ROOT))

from benchmarks.data import kafka_ref  # noqa: E402
from kafkatool.log.index import encode_offset_index, encode_time_index  # noqa: E402
from kafkatool.log.recovery import recover_segment  # noqa: E402

COMMON = ["--value-bytes", "1000", "--compressible", "0.5", "--batch-records", "100",
          "--key-cardinality", "50000", "--null-key-fraction", "0.02"]


def gen(out: Path, *args: str) -> dict[str, object]:
    env = dict(os.environ, KAFKA_REF_JAVA_OPTS="-Xmx2g -XX:+UseParallelGC")
    p = subprocess.run([kafka_ref(), "gen", "--out", str(out), *COMMON, *args], check=True, capture_output=True,
                       text=True, env=env)
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


def write_indexes(log: Path, base: int) -> None:
    rec = recover_segment(log, base)
    log.with_suffix(".index").write_bytes(encode_offset_index(rec.offset_entries, base))
    log.with_suffix(".timeindex").write_bytes(encode_time_index(rec.time_entries, base))


def generate(root: Path, gib: float | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=1\nbroker.id=1\n")
    # a record of 1000 value bytes (half compressible) takes ~750 bytes on disk over the codecs; bench-2 adds ~0.3 GiB
    records = 1_300_000 if gib is None else max(1, int((gib - 0.3) / 2 * (1 << 30) / 750))
    for p, codecs in ((0, "lz4,zstd,none,snappy"), (1, "zstd,lz4,gzip,none")):
        d = root / f"bench-{p}"
        d.mkdir()
        log = d / f"{0:020d}.log"
        print(json.dumps(gen(log, "--magic", "2", "--codec", codecs, "--records", str(records), "--headers", "1",
                             "--seed", str(p))),
              file=sys.stderr)
        write_indexes(log, 0)
    d = root / "bench-2"
    d.mkdir()
    offset = 0
    for s in range(8):
        log = d / f"{offset:020d}.log"
        v2 = ["--magic", "2", "--headers", "1"] if s >= 3 else ["--magic", "1"]
        r = gen(log, *v2, "--codec", "lz4,snappy,none", "--records", "50000", "--seed", str(10 + s),
                "--base-offset", str(offset))
        offset = int(str(r["next_offset"]))
        write_indexes(log, int(log.name[:20]))


class TreeCpu:
    """CPU seconds of this process and all its descendants (JVM, Python workers, pool processes).

    The machine is shared, so wall time measures the neighbours too; CPU seconds of our own process
    tree do not. Our own process from rusage; descendants from /proc, sampled every 0.2 s, each
    one's last reading kept (a process that ends between samples loses at most 0.2 s of CPU).
    """

    def __init__(self) -> None:
        self.tick = os.sysconf("SC_CLK_TCK")
        self.base: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.names: dict[int, str] = {}
        self._stop = threading.Event()
        self.base = self._sample()
        self.rusage0 = self._rusage()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _rusage(self) -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def _sample(self) -> dict[int, float]:
        children: dict[int, list[int]] = {}
        times: dict[int, float] = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(d))
            times[int(d)] = (int(fields[11]) + int(fields[12])) / self.tick
            if int(d) not in self.names:
                try:
                    with open(f"/proc/{d}/comm") as f:
                        self.names[int(d)] = f.read().strip()
                except OSError:
                    pass
        out, todo = {}, list(children.get(os.getpid(), []))
        while todo:
            pid = todo.pop()
            out[pid] = times.get(pid, 0.0)
            todo.extend(children.get(pid, []))
        return out

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.last.update(self._sample())

    def stop(self) -> float:
        self._stop.set()
        self.thread.join()
        self.last.update(self._sample())
        own = self._rusage() - self.rusage0
        live = sum(t - self.base.get(pid, 0.0) for pid, t in self.last.items())
        return round(own + live, 2)

    def by_kind(self) -> dict[str, float]:
        """After :meth:`stop`: the descendants' CPU seconds by kind (``java``, ``python``, other)."""
        out: dict[str, float] = {}
        for pid, t in self.last.items():
            name = self.names.get(pid, "")
            kind = "java" if name == "java" else "python" if name.startswith("python") else "other"
            out[kind] = round(out.get(kind, 0.0) + t - self.base.get(pid, 0.0), 2)
        return out


def end_jvm(spark: object) -> None:
    """End the session's JVM now (the CLI run starts its own): pyspark's JVM exits when its stdin closes."""
    from pyspark import SparkContext

    gw = SparkContext._gateway
    proc = getattr(gw, "proc", None)
    if gw is not None:
        gw.shutdown()
    if proc is not None:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    SparkContext._gateway = None
    SparkContext._jvm = None


def run(root: Path) -> dict[str, object]:
    from kafkatool.scan.plan import discover, make_plan
    from kafkatool.scan.pool import run_pass

    found = discover([str(root)])
    total = sum(s.size for s in found.segments)
    out: dict[str, object] = {"bytes": total, "segments": len(found.segments), "load_before": os.getloadavg()}
    plan1 = make_plan(found.segments, parallelism=1)
    out["ranges"] = len(plan1.items)

    t, c = time.perf_counter(), TreeCpu()
    rep = run_pass(plan1, jobs=1).report
    single = time.perf_counter() - t
    cs = c.stop()
    out["single"] = {"wall_s": round(single, 2), "cpu_s": cs, "records": rep.total.records,
                     "mb_s": round(total / 1e6 / single, 1), "mb_per_cpu_s": round(total / 1e6 / cs, 1)}
    print(json.dumps(out), file=sys.stderr)

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t, c = time.perf_counter(), TreeCpu()
    p = subprocess.run([sys.executable, "-m", "kafkatool", "dump", str(root), "--deep", "--verify", "--summary-only",
                        "--format", "json"], capture_output=True, text=True, env=env)
    dump_wall = time.perf_counter() - t
    dump_cpu = c.stop()
    assert p.returncode == 0, p.stderr
    out["dump"] = {"wall_s": round(dump_wall, 2), "cpu_s": dump_cpu, "mb_per_cpu_s": round(total / 1e6 / dump_cpu, 1)}
    print(json.dumps(out), file=sys.stderr)

    plan2 = make_plan(found.segments, parallelism=2)
    t, c = time.perf_counter(), TreeCpu()
    rep2 = run_pass(plan2, jobs=2).report
    pool = time.perf_counter() - t
    cs = c.stop()
    assert rep2.total.records == rep.total.records
    out["pool2"] = {"wall_s": round(pool, 2), "cpu_s": cs, "mb_s": round(total / 1e6 / pool, 1),
                    "mb_per_cpu_s": round(total / 1e6 / cs, 1), "tasks": len(plan2.tasks)}
    print(json.dumps(out), file=sys.stderr)

    from kafkatool.spark.job import collect_arrow
    from kafkatool.spark.job import run_pass as spark_pass
    from kafkatool.spark.memory import GiB, plan_memory
    from kafkatool.spark.session import SessionSettings, build_session

    t, c = time.perf_counter(), TreeCpu()
    spark = build_session(SessionSettings(master="local[2]", memory=plan_memory(4 * GiB, 2, local=True)))
    start = time.perf_counter() - t
    t = time.perf_counter()
    collect_arrow(spark.range(0, 2, 1, 2).mapInArrow(lambda it: it, "id long"))
    first = time.perf_counter() - t
    fixed_cpu = c.stop()
    plan_s = make_plan(found.segments, parallelism=int(spark.sparkContext.defaultParallelism))

    def spark_job() -> tuple[float, float, dict[str, float]]:
        """One scan job on the session: its wall, its process tree's CPU, that CPU by process kind."""
        t, c = time.perf_counter(), TreeCpu()
        got = spark_pass(spark, plan_s).report
        wall = time.perf_counter() - t
        cpu = c.stop()
        assert got.total.records == rep.total.records
        return wall, cpu, c.by_kind()

    job, job_cpu, job_kinds = spark_job()
    # The same job again on the same session: its Python workers have imported kafkatool, pyarrow and numpy in the
    # first job (a one-time cost per worker process); this is the per-byte cost of a longer scan.
    warm, warm_cpu, warm_kinds = spark_job()
    t = time.perf_counter()
    spark.stop()
    stop = time.perf_counter() - t
    out["spark"] = {"session_start_s": round(start, 2), "first_job_s": round(first, 2), "stop_s": round(stop, 2),
                    "start_cpu_s": fixed_cpu, "job_wall_s": round(job, 2), "job_cpu_s": job_cpu,
                    "job_mb_s": round(total / 1e6 / job, 1), "job_mb_per_cpu_s": round(total / 1e6 / job_cpu, 1),
                    "job_cpu_by_kind": job_kinds, "tasks": len(plan_s.tasks),
                    # issue 22's three figures: Python worker CPU per byte against dump's, the fixed cost, and the
                    # job's wall against the single process's
                    "python_cpu_vs_dump": round(job_kinds.get("python", 0.0) / dump_cpu, 2),
                    "fixed_s": round(start + first + stop, 2), "speedup_vs_single": round(single / job, 2),
                    "warm_job_wall_s": round(warm, 2), "warm_job_cpu_s": warm_cpu, "warm_job_cpu_by_kind": warm_kinds,
                    "warm_python_cpu_vs_dump": round(warm_kinds.get("python", 0.0) / dump_cpu, 2),
                    "warm_speedup_vs_single": round(single / warm, 2)}
    print(json.dumps(out), file=sys.stderr)
    end_jvm(spark)

    t, c = time.perf_counter(), TreeCpu()
    p = subprocess.run([sys.executable, "-m", "kafkatool", "spark-scan", str(root), "--master", "local[2]",
                        "--memory", "4GiB", "--format", "json", "--level", "topic"], capture_output=True, text=True,
                       env=env)
    cli = time.perf_counter() - t
    cli_cpu = c.stop()
    tot = [json.loads(x) for x in p.stdout.splitlines() if '"type":"total"' in x]
    assert p.returncode == 0 and tot and tot[0]["records"] == rep.total.records, p.stderr
    out["cli"] = {"wall_s": round(cli, 2), "cpu_s": cli_cpu, "mb_s": round(total / 1e6 / cli, 1)}

    seg = root / "bench-0" / f"{0:020d}.log"
    p = subprocess.run([kafka_ref(), "bench", "--in", str(seg), "--iterations", "1", "--warmup", "0", "--deep"],
                       capture_output=True, text=True, env=dict(os.environ, KAFKA_REF_JAVA_OPTS="-Xmx2g"))
    kr = json.loads(p.stdout.strip().splitlines()[-1])
    seg_only = make_plan([s for s in found.segments if s.path == str(seg)], parallelism=1)
    c = TreeCpu()
    run_pass(seg_only, jobs=1)
    ours = c.stop()
    out["kafka_ref"] = {"segment_bytes": seg.stat().st_size, "java_wall_mb_s": kr["mb_per_s_median"],
                        # None: a segment too small for the CPU clock's ticks (a small trial dir)
                        "single_mb_per_cpu_s": round(seg.stat().st_size / 1e6 / ours, 1) if ours > 0 else None}
    out["load_after"] = os.getloadavg()
    return out


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in ("generate", "run") or (len(sys.argv) == 4
                                                                                   and sys.argv[1] == "run"):
        sys.exit(__doc__)
    target = Path(sys.argv[2])
    if sys.argv[1] == "generate":
        generate(target, float(sys.argv[3]) if len(sys.argv) == 4 else None)
    else:
        print(json.dumps(run(target), indent=1))
