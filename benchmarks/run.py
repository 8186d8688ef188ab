"""The benchmark suite: ``python -m benchmarks [options]`` (benchmarks/README.md documents it, results/ has the runs).

For every scenario (a segment written by Kafka's own code, see ``benchmarks/data.py``) it runs kafkatool's
**commands as an operator runs them**, each run a whole process, and in the same run the peers on the same
file: Kafka 3.9.1's own record code through ``kafka-ref bench`` / ``bench --deep`` / ``bench-downconvert``
and kafka-python 3.0's reader. It prints and records throughput ratios
``kafkatool throughput / peer throughput = peer time / kafkatool time``.

How process start-up is accounted for:

* **Kafka** runs ``--java-warmup`` passes, then ``--java-iterations`` timed passes in one JVM, and reports
  the median *thread* CPU and wall time of a pass: JVM start-up, class loading and JIT compilation are
  excluded (the warm-up passes trigger the JIT; thread CPU leaves out the JIT and GC threads, which
  favours Kafka).
* **kafkatool** commands run ``--warmup`` + ``--iterations`` times, each a fresh process (CPU time of the
  process tree from ``wait4``). The same command is also run ``--iterations`` times on a 4-batch file of
  the same shape (the *fixed cost*: interpreter start-up, imports, opening and writing files). The
  primary ratio (``ratio_cpu``) uses the median minus the fixed cost, i.e. start-up excluded on both
  sides; ``ratio_cpu_process`` uses the fixed cost plus one segment's work, i.e. the whole process over
  one segment, start-up included (conservative for kafkatool). A fast command reads its segment several
  times per run (``Command.min_bytes``: hard-linked partitions of the same files, the same cached pages, as
  Kafka's bench reads its file once per pass), so that its work stands well above the start-up's noise;
  a result whose work is within twice the spread of its timings is flagged ``resolved: false``.
* **kafka-python** and the **library passes** (``--lib``) are timed inside one process after ``--warmup``
  passes (``benchmarks/passes.py``): start-up excluded.

Targets (issue 10) are judged on ``ratio_cpu``: on a shared 2-core machine wall time mostly measures the
neighbours. Every row cross-checks what both sides counted (batches, bytes, records, converted records
and bytes) and flags ``COUNTS DIFFER``. Peak RSS is each process's ``ru_maxrss``.

The peak-RSS set (``--sets rss``, ``benchmarks/rss.py``) runs every single-process command once at
default settings over a 1 GiB segment. Results: one JSON (``--out``); ``python -m benchmarks report``
renders its Markdown tables, and the docs site's performance page from benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import procs
from benchmarks.data import (
    DEFAULT_DATA_DIR,
    DEFAULT_SCENARIOS,
    FULL_SCENARIOS,
    QUICK_SCENARIOS,
    ROOT,
    TREE_ENV,
    Layout,
    Scenario,
    ensure_copies,
    ensure_layout,
    ensure_tiny,
    java_env,
    kafka_ref,
    py_cwd,
    py_env,
    scenario_by_name,
)

SCHEMA = 2
MAX_COPIES = 200
INT32_MAX = "2147483647"  # the largest fetch size a Fetch request can carry: the whole segment in one fetch

# ---------------------------------------------------------------------------------------------- measurements


@dataclass
class Measurement:
    """One side of a row. ``cpu_ms``/``wall_ms``: medians of what was timed (a whole process for commands, a
    pass for in-process timings); ``net_*``: per copy of the file with a command's fixed cost subtracted
    (= ``cpu_ms`` for in-process timings); ``one_*``: a command's process over one copy, start-up included."""

    key: str
    kind: str  # "command" | "pass" | "kafka"
    argv: list[str]
    cpu_ms: float = float("nan")
    wall_ms: float = float("nan")
    net_cpu_ms: float = float("nan")  # per copy of the file, start-up excluded
    net_wall_ms: float = float("nan")
    one_cpu_ms: float = float("nan")  # a process over one copy: fixed cost + net (= cpu_ms with one copy)
    one_wall_ms: float = float("nan")
    copies: int = 1
    fixed_cpu_ms: float | None = None
    fixed_wall_ms: float | None = None
    resolved: bool = True  # the work stands out of the run-to-run noise of the timings (see measure_command)
    peak_rss_mb: float = float("nan")
    counts: dict[str, int] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)
    fixed_runs: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


# -- kafkatool commands ----------------------------------------------------------------------------------

CountFn = Callable[[list[dict[str, Any]]], dict[str, int]]


def _of_type(lines: list[dict[str, Any]], t: str) -> list[dict[str, Any]]:
    return [j for j in lines if j.get("type") == t]


def _dump_counts(lines: list[dict[str, Any]]) -> dict[str, int]:
    s = _of_type(lines, "summary")
    return {"batches": s[-1]["batches"], "bytes": s[-1]["bytes"]} if s else {}


def _dump_deep_counts(lines: list[dict[str, Any]]) -> dict[str, int]:
    s = _of_type(lines, "summary")
    return {**_dump_counts(lines), "records": s[-1]["records"]} if s else {}


def _reindex_counts(lines: list[dict[str, Any]]) -> dict[str, int]:
    # Check mode prints a segment line only with findings (or -v): the summary's bytes are the segments' sizes.
    segs = _of_type(lines, "segment")
    if segs:
        return {"batches": sum(j["batches"] for j in segs), "bytes": sum(j["valid_bytes"] for j in segs)}
    s = _of_type(lines, "summary")
    return {"bytes": s[-1]["bytes"]} if s else {}


def _down_counts(lines: list[dict[str, Any]]) -> dict[str, int]:
    s = _of_type(lines, "summary")
    return {"records_converted": s[-1]["records_out"], "out_bytes": s[-1]["bytes_out"]} if s else {}


def _fetch_counts(lines: list[dict[str, Any]]) -> dict[str, int]:
    # Not cross-checked: the send stops converting once it has written the committed size (the slice), as the
    # broker's LazyDownConversionRecordsSend does, so it converts up to one chunk less than bench-downconvert
    # (and less again when v1 is larger than v2). fetch-sim's bytes are checked against Kafka's own send
    # (kafka-ref lazysend) by the interop tests. Summed over the copies (one partition each).
    p = _of_type(lines, "partition")
    if not p or any(x.get("converted_size") is None for x in p):
        return {}
    return {"fetch_converted_bytes": sum(x["converted_size"] for x in p),
            "fetch_bytes_written": sum(x["bytes_written"] for x in p)}


def _scan_counts(lines: list[dict[str, Any]]) -> dict[str, int]:
    t = _of_type(lines, "total")
    return {"batches": t[-1]["batches"], "records": t[-1]["records"], "bytes": t[-1]["bytes"]} if t else {}


@dataclass(frozen=True)
class Command:
    """A kafkatool command line; ``{log}``, ``{part}``, ``{logdir}`` and ``{out}`` (a new directory) are filled in."""

    argv: tuple[str, ...]
    counts: CountFn
    tree: bool = False  # a process tree the root does not reap (Spark): sample /proc too
    iterations: int | None = None  # overrides --iterations / --warmup (Spark: its fixed cost is ~20 CPU-s)
    warmup: int | None = None
    # Read at least this many bytes per run: the segment is given ``ceil(min_bytes / size)`` times (hard-linked
    # partitions), so that a fast command's work stands out of the start-up's noise. Needs {log}, {part} or
    # {logdir}, which take every copy.
    min_bytes: float = 0

    def copies(self, size: int, scale: float = 1.0) -> int:
        """Copies of a ``size``-byte segment to read ``scale * min_bytes`` (``--read-scale``: --quick reads less)."""
        return max(1, min(MAX_COPIES, math.ceil(scale * self.min_bytes / size))) if self.min_bytes else 1

    def fill(self, layout: Layout, out: Path | None) -> list[str]:
        subst = {"{log}": [str(x) for x in layout.logs], "{part}": [str(x) for x in layout.partitions],
                 "{logdir}": [str(layout.logdir)], "{out}": [str(out)]}
        return [sys.executable, "-m", "kafkatool", *[x for a in self.argv for x in subst.get(a, [a])]]

    @property
    def writes(self) -> bool:
        return "{out}" in self.argv


def _run_command(cmd: Command, layout: Layout, scratch: Path) -> procs.Proc:
    out = None
    if cmd.writes:
        out = Path(tempfile.mkdtemp(dir=scratch)) / "out"
    try:
        return procs.run(cmd.fill(layout, out), env=py_env(), cwd=py_cwd(), tree=cmd.tree)
    finally:
        if out is not None:
            shutil.rmtree(out.parent, ignore_errors=True)


def measure_command(key: str, cmd: Command, big: Layout, tiny: Layout, a: argparse.Namespace) -> Measurement:
    iterations = cmd.iterations if cmd.iterations is not None else a.iterations
    warmup = cmd.warmup if cmd.warmup is not None else a.warmup
    big = ensure_copies(big, cmd.copies(big.size, a.read_scale))
    m = Measurement(key, "command", cmd.fill(big, Path("{out}")), peak_rss_mb=0.0, copies=big.copies)
    scratch = a.data_dir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    cpu: list[float] = []
    wall: list[float] = []
    for i in range(-warmup, iterations):
        p = _run_command(cmd, big, scratch)
        m.runs.append({**p.record(), "warmup": i < 0})
        if p.rc not in (0, 1) or not _json_lines(p.stdout):  # 1 = findings (e.g. an index that differs): the
            # work was done, and the command printed its JSON; exit 1 without it is a crash (a Python exception)
            m.error = f"exit {p.rc}: {(p.stderr or p.stdout).strip()[-500:]}"
            return m
        m.peak_rss_mb = max(m.peak_rss_mb, p.peak_rss_mb)
        if p.tree_pss_mb is not None:
            m.detail["tree_pss_peak_mb"] = max(p.tree_pss_mb, m.detail.get("tree_pss_peak_mb", 0.0))
        if i >= 0:
            cpu.append(p.cpu_s * 1e3)
            wall.append(p.wall_s * 1e3)
            m.counts = cmd.counts(_json_lines(p.stdout))
    fcpu: list[float] = []
    fwall: list[float] = []
    for _ in range(iterations):
        p = _run_command(cmd, tiny, scratch)
        m.fixed_runs.append(p.record())
        if p.rc not in (0, 1) or not _json_lines(p.stdout):
            m.error = f"fixed-cost run: exit {p.rc}: {(p.stderr or p.stdout).strip()[-500:]}"
            return m
        fcpu.append(p.cpu_s * 1e3)
        fwall.append(p.wall_s * 1e3)
    m.cpu_ms, m.wall_ms = _median(cpu), _median(wall)
    m.fixed_cpu_ms, m.fixed_wall_ms = _median(fcpu), _median(fwall)
    m.net_cpu_ms = (m.cpu_ms - m.fixed_cpu_ms) / m.copies
    m.net_wall_ms = (m.wall_ms - m.fixed_wall_ms) / m.copies
    m.one_cpu_ms, m.one_wall_ms = m.fixed_cpu_ms + m.net_cpu_ms, m.fixed_wall_ms + m.net_wall_ms
    # The subtraction means something only when the work is well above the spread of the CPU timings (start-up
    # varies by tens of ms between identical processes on a shared machine): flagged otherwise.
    spread = max(max(cpu) - min(cpu), max(fcpu) - min(fcpu)) if iterations > 1 else 0.0
    m.resolved = m.cpu_ms - m.fixed_cpu_ms > 2 * spread
    return m


# -- in-process passes (kafkatool library, kafka-python) and Kafka ---------------------------------------------

def measure_pass(key: str, name: str, extra: list[str], layout: Layout, a: argparse.Namespace, *,
                 iterations: int | None = None, warmup: int | None = None) -> Measurement:
    argv = [sys.executable, "-m", "benchmarks.passes", name, str(layout.log),
            "--iterations", str(a.iterations if iterations is None else iterations),
            "--warmup", str(a.warmup if warmup is None else warmup), *extra]
    m = Measurement(key, "pass", argv)
    if "--repeat" in extra:  # the bytes it reads per timed iteration, for the legend (its timings are per pass)
        m.copies = int(extra[extra.index("--repeat") + 1])
    p = procs.run(argv, env=py_env(), cwd=py_cwd())
    m.peak_rss_mb = p.peak_rss_mb
    m.detail["process"] = {"wall_s": p.wall_s, "cpu_s": p.cpu_s}
    if p.rc != 0:
        m.error = f"exit {p.rc}: {(p.stderr or p.stdout).strip()[-500:]}"
        return m
    d = _json_lines(p.stdout)[-1]
    m.runs = [{"cpu_ms": c, "wall_ms": w} for c, w in zip(d["cpu_ms"], d["wall_ms"], strict=True)]
    m.cpu_ms = m.net_cpu_ms = m.one_cpu_ms = _median(d["cpu_ms"])
    m.wall_ms = m.net_wall_ms = m.one_wall_ms = _median(d["wall_ms"])
    m.counts = {k: v * m.copies for k, v in d["result"].items() if isinstance(v, int)}  # one pass's, each repeat
    return m


def measure_kafka(key: str, kind: str, extra: list[str], layout: Layout, a: argparse.Namespace) -> Measurement:
    argv = [kafka_ref(), kind, "--in", str(layout.log), "--iterations", str(a.java_iterations),
            "--warmup", str(a.java_warmup), *extra]
    m = Measurement(key, "kafka", argv)
    p = procs.run(argv, env=java_env(), cwd=ROOT)
    m.peak_rss_mb = p.peak_rss_mb
    m.detail["process"] = {"wall_s": p.wall_s, "cpu_s": p.cpu_s}  # whole JVM: start-up, warm-up passes, JIT
    lines = [j for j in _json_lines(p.stdout) if j.get("type") in ("bench", "bench-downconvert")]
    if p.rc != 0 or not lines:
        err = _json_lines(p.stdout)
        m.error = f"exit {p.rc}: " + (err[-1].get("message", "") if err else (p.stderr or p.stdout).strip()[-500:])
        return m
    d = lines[-1]
    m.cpu_ms = m.net_cpu_ms = m.one_cpu_ms = float(d["thread_cpu_median_ms"])
    m.wall_ms = m.net_wall_ms = m.one_wall_ms = float(d["median_ms"])
    m.runs = [{"cpu_ms": c, "wall_ms": w, "process_cpu_ms": pc}
              for c, w, pc in zip(d["thread_cpu_ms"], d["times_ms"], d["process_cpu_ms"], strict=True)]
    m.detail["process_cpu_median_ms"] = d.get("process_cpu_median_ms")
    m.counts = {k: int(d[k]) for k in ("batches", "bytes", "records", "payload_bytes", "out_bytes",
                                       "records_converted") if d.get(k) is not None}
    return m


# ---------------------------------------------------------------------------------------------- rows

@dataclass(frozen=True)
class Spec:
    """How to take one measurement on a scenario; rows sharing a ``key`` share the measurement."""

    key: str
    fn: Callable[[str, Layout, Layout, argparse.Namespace], Measurement]
    shown: str  # the command line, with placeholders for the paths


_PLACEHOLDERS = {"{log}": "SEGMENT.log", "{part}": "PARTITION_DIR", "{logdir}": "LOG_DIR", "{out}": "NEW_DIR"}


def _cmd(name: str, command: Command) -> Spec:
    shown = "kafkatool " + " ".join(_PLACEHOLDERS.get(x, x) for x in command.argv)
    return Spec(f"kafkatool {name}", lambda k, big, tiny, a: measure_command(k, command, big, tiny, a), shown)


def _kafka(kind: str, *extra: str) -> Spec:
    return Spec(" ".join(("kafka", kind, *extra)), lambda k, big, tiny, a: measure_kafka(k, kind, list(extra), big, a),
                " ".join(("kafka-ref", kind, "--in SEGMENT.log", *extra)))


def _pass(name: str, *extra: str, like: Command | None = None) -> Spec:
    """A library pass; ``like``: timed over as many passes as that command reads copies (``--repeat``), so that the
    two are averaged over the same bytes (a single pass of a few ms is at the mercy of one noisy moment)."""
    def measure(k: str, big: Layout, tiny: Layout, a: argparse.Namespace) -> Measurement:
        repeat = like.copies(big.size, a.read_scale) if like is not None else 1
        return measure_pass(k, name, [*extra, *(["--repeat", str(repeat)] if repeat > 1 else [])], big, a)
    return Spec(" ".join(("pass", name, *extra)), measure,
                " ".join(("python -m benchmarks.passes", name, "SEGMENT.log", *extra,
                          *(["--repeat", "COPIES"] if like is not None else []))))


def _pass_fresh(name: str, *, like: Command) -> Spec:
    """A library pass timed as the command ``like`` is: each timed iteration its own process, which starts as the
    command's does, untimed (the console script's heap settings, the command itself run on the scenario's tiny
    segment, then one pass over it), with no warm-up passes, over as many passes as the command reads copies. A
    fresh process's first walks are slower than a warmed one's, the more so after the command's imports; the command
    pays that in every run."""
    def measure(k: str, big: Layout, tiny: Layout, a: argparse.Namespace) -> Measurement:
        repeat = like.copies(big.size, a.read_scale)
        extra = ["--repeat", str(repeat), "--before", str(tiny.log), "--as-command", like.argv[0]]
        runs = [measure_pass(k, name, extra, big, a, iterations=1, warmup=0) for _ in range(a.iterations)]
        failed = next((r for r in runs if r.error), None)
        if failed is not None:
            return failed
        m = runs[0]
        m.argv = [*m.argv, f"(x{len(runs)} processes)"]
        m.runs = [r.runs[0] for r in runs]
        m.peak_rss_mb = max(r.peak_rss_mb for r in runs)
        m.cpu_ms = m.net_cpu_ms = m.one_cpu_ms = _median([r["cpu_ms"] for r in m.runs])
        m.wall_ms = m.net_wall_ms = m.one_wall_ms = _median([r["wall_ms"] for r in m.runs])
        return m
    return Spec(" ".join(("pass-fresh", name)), measure,
                " ".join(("python -m benchmarks.passes", name, "SEGMENT.log --repeat COPIES --before TINY.log "
                          f"--as-command {like.argv[0]} --iterations 1 --warmup 0, a process per iteration")))


Target = Callable[[Scenario], float | None]


@dataclass(frozen=True)
class Row:
    """One column of the ratio table: a kafkatool measurement against a peer's, with the issue's target."""

    name: str
    title: str
    ours: Spec
    peer: Spec
    peer_label: str
    target: Target
    applies: Callable[[Scenario], bool] = lambda s: True


def _deep_target(s: Scenario) -> float | None:
    if s.codec != "none":
        return 0.5
    return 0.25 if s.value_bytes == 1024 else None


def _down_target(s: Scenario) -> float | None:
    return 1.0 if s.codec in ("gzip", "snappy", "lz4") else (0.25 if s.codec == "none" else None)


def _v2_convertible(s: Scenario) -> bool:
    return s.magic == 2 and s.codec != "zstd"  # Kafka cannot write zstd below v2


def _to_v0(s: Scenario) -> bool:
    return s.magic >= 1 and s.codec != "zstd"


def _spark_shape(s: Scenario) -> bool:
    # Spark's fixed cost is ~20 CPU-s a run: timed once, on the v2 1 KiB x 16 file of each codec.
    return s.magic == 2 and s.value_bytes == 1024 and s.batch_records == 16 and not s.headers


# Bytes read per run (see Command.min_bytes): at 200 MB, dump and dump --deep read their segment 10 times and
# reindex-time 40 times (with the compiled walks all take well under a second per GB: at one read, an uncompressed
# deep dump's work was inside the start-up noise); downconvert a 40 MB segment 5 times.
DUMP = Command(("dump", "--summary-only", "-f", "json", "{log}"), _dump_counts, min_bytes=2e9)
DUMP_DEEP = Command(("dump", "--deep", "--verify", "--summary-only", "-f", "json", "{log}"), _dump_deep_counts,
                   min_bytes=2e9)
REINDEX = Command(("reindex-time", "-f", "json", "{part}"), _reindex_counts, min_bytes=8e9)
DOWN_V1 = Command(("downconvert", "--to-magic", "1", "-f", "json", "{logdir}", "{out}"), _down_counts, min_bytes=2e8)
DOWN_V0 = Command(("downconvert", "--to-magic", "0", "-f", "json", "{logdir}", "{out}"), _down_counts, min_bytes=2e8)
FETCH_SIM = Command(("fetch-sim", "{part}", "--to-magic", "1", "--partition-max-bytes", INT32_MAX,
                     "--fetch-max-bytes", INT32_MAX, "--broker-fetch-max-bytes", INT32_MAX, "-f", "json"),
                    _fetch_counts, min_bytes=4e8)  # each copy a partition of the one response, its whole segment
SCAN_LOCAL = Command(("spark-scan", "{logdir}", "--engine", "local-processes", "-j", "1", "-f", "json"),
                     _scan_counts, min_bytes=2e8)  # -j 1 scans in the process itself (no pool)
SCAN_SPARK = Command(("spark-scan", "{logdir}", "--master", "local[2]", "-f", "json"), _scan_counts, tree=True,
                     iterations=1, warmup=0)

_K_SHALLOW = _kafka("bench")
_K_DEEP = _kafka("bench", "--deep")
_K_DOWN1 = _kafka("bench-downconvert", "--to-magic", "1", "--mode", "lazy")
_K_DOWN0 = _kafka("bench-downconvert", "--to-magic", "0", "--mode", "lazy")
_KP_DEEP = _pass("kp-deep")

ROWS: list[Row] = [
    Row("dump", "dump --summary-only (shallow: every batch CRC)", _cmd("dump", DUMP), _K_SHALLOW,
        "kafka bench", lambda s: 1.0),
    Row("dump-deep", "dump --deep --verify --summary-only", _cmd("dump-deep", DUMP_DEEP), _K_DEEP,
        "kafka bench --deep", _deep_target),
    Row("dump-deep-kp", "dump --deep --verify --summary-only vs kafka-python", _cmd("dump-deep", DUMP_DEEP), _KP_DEEP,
        "kafka-python MemoryRecords", lambda s: 1.0),
    Row("reindex", "reindex-time (check, no --verify)", _cmd("reindex", REINDEX), _K_SHALLOW, "kafka bench",
        lambda s: 10.0),
    Row("reindex-floor", "the floor under reindex-time's check: a bare header walk, one pread per batch",
        _pass("hop-floor", like=REINDEX), _K_SHALLOW, "kafka bench", lambda s: None),
    Row("reindex-floor-fresh", "the same floor timed as the command is: a fresh process per iteration, start-up "
        "untimed", _pass_fresh("hop-floor", like=REINDEX), _K_SHALLOW, "kafka bench", lambda s: None),
    Row("downconvert-v1", "downconvert --to-magic 1", _cmd("downconvert-v1", DOWN_V1), _K_DOWN1,
        "kafka bench-downconvert --to-magic 1", _down_target, _v2_convertible),
    Row("downconvert-v0", "downconvert --to-magic 0", _cmd("downconvert-v0", DOWN_V0), _K_DOWN0,
        "kafka bench-downconvert --to-magic 0", _down_target, _to_v0),
    Row("fetch-sim", "fetch-sim --to-magic 1, whole segment in one fetch", _cmd("fetch-sim", FETCH_SIM), _K_DOWN1,
        "kafka bench-downconvert --to-magic 1", lambda s: None, _v2_convertible),
    Row("spark-scan-local", "spark-scan --engine local-processes -j 1", _cmd("spark-scan-local", SCAN_LOCAL),
        _K_DEEP, "kafka bench --deep", lambda s: None),
    Row("spark-scan-spark", "spark-scan --master local[2]", _cmd("spark-scan-spark", SCAN_SPARK), _K_DEEP,
        "kafka bench --deep", lambda s: None, _spark_shape),
]

# Library passes (``--lib``): the same work without the command around it, to locate a gap.
LIB_ROWS: list[Row] = [
    Row("lib-verify", "verify_segment (shallow walk + CRC, no batch objects)", _pass("verify"), _K_SHALLOW,
        "kafka bench", lambda s: 1.0),
    Row("lib-verify-batches", "batches() + ensure_valid()", _pass("verify-batches"), _K_SHALLOW, "kafka bench",
        lambda s: None),
    Row("lib-deep", "batches() + records(), every field touched", _pass("deep"), _K_DEEP, "kafka bench --deep",
        _deep_target),
    Row("lib-deep-kp", "library deep pass vs kafka-python", _pass("deep"), _KP_DEEP, "kafka-python MemoryRecords",
        lambda s: 1.0),
    Row("lib-reindex", "recover_segment (header walk, no CRC)", _pass("recover"), _K_SHALLOW, "kafka bench",
        lambda s: 10.0),
    Row("lib-downconvert-v1", "down_convert per 128 KiB group, to v1", _pass("downconvert", "--to-magic", "1"),
        _K_DOWN1, "kafka bench-downconvert --to-magic 1", _down_target, _v2_convertible),
    Row("lib-downconvert-v0", "down_convert per 128 KiB group, to v0", _pass("downconvert", "--to-magic", "0"),
        _K_DOWN0, "kafka bench-downconvert --to-magic 0", _down_target, _to_v0),
]


def select_rows(spec: str | None, lib: bool) -> list[Row]:
    rows = list(ROWS) + (list(LIB_ROWS) if lib or (spec and "lib" in spec) else [])
    if not spec:
        return rows
    wanted = [w.strip() for w in spec.split(",") if w.strip()]
    known = {r.name for r in ROWS + LIB_ROWS}
    unknown = [w for w in wanted if not any(k == w or k.startswith(w) for k in known)]
    if unknown:
        raise SystemExit(f"unknown rows {', '.join(unknown)}; known: {', '.join(r.name for r in ROWS + LIB_ROWS)}")
    names = {r.name for r in rows}
    # An exact name selects that row alone ("dump" is not "dump-deep"); anything else is a prefix.
    return [r for r in rows if any(r.name == w if w in names else r.name.startswith(w) for w in wanted)]


# ---------------------------------------------------------------------------------------------- ratios

def ratio(peer: float, ours: float) -> float | None:
    """``peer time / our time`` = our throughput / the peer's; None when either is missing or ours is not positive
    (a start-up-excluded time at or below zero: the file is too small to measure against the start-up noise)."""
    if peer != peer or ours != ours or ours <= 0 or peer <= 0:  # NaN-safe
        return None
    return peer / ours


def check_counts(ours: dict[str, int], peer: dict[str, int], copies: int = 1) -> str:
    """Both sides must have seen the same data (ours ``copies`` times), or the ratio means nothing."""
    return "; ".join(f"{k} {ours[k]} != {copies} x {peer[k]}" if copies > 1 else f"{k} {ours[k]} != {peer[k]}"
                     for k in sorted(ours.keys() & peer.keys()) if ours[k] != peer[k] * copies)


def row_result(s: Scenario, layout: Layout, row: Row, ours: Measurement, peer: Measurement) -> dict[str, Any]:
    target = row.target(s)
    rc = ratio(peer.net_cpu_ms, ours.net_cpu_ms)
    ok = None if target is None or rc is None else rc >= target
    return {"scenario": s.name, "row": row.name, "title": row.title, "peer": row.peer_label,
            "ours_command": row.ours.shown, "peer_command": row.peer.shown, "library": row.name.startswith("lib-"),
            "file_mb":
            round(layout.size / 1e6, 1), "ratio_cpu": rc, "ratio_wall": ratio(peer.net_wall_ms, ours.net_wall_ms),
            "ratio_cpu_process": ratio(peer.net_cpu_ms, ours.one_cpu_ms),
            "ratio_wall_process": ratio(peer.net_wall_ms, ours.one_wall_ms), "target": target, "ok": ok,
            "copies": ours.copies, "resolved": ours.resolved and peer.resolved,
            "ours": ours.key, "peer_key": peer.key,
            "mismatch": check_counts(ours.counts, peer.counts, ours.copies) or None,
            "error": ours.error or peer.error}


def _fmt(x: float | None) -> str:
    return f"{x:.2f}" if x is not None else "-"


def _mbps(mb: float, ms: float) -> str:
    return f"{mb / (ms / 1e3):.0f}" if ms == ms and ms > 0 else "-"


# ---------------------------------------------------------------------------------------------- run metadata

def git_info(where: Path = ROOT) -> dict[str, Any]:
    def git(*args: str) -> str:
        p = subprocess.run(["git", *args], capture_output=True, text=True, cwd=where, check=False)
        return p.stdout.strip() if p.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD"), "describe": git("describe", "--always", "--dirty", "--tags"),
            "branch": git("rev-parse", "--abbrev-ref", "HEAD"), "dirty": bool(git("status", "--porcelain",
                                                                                      "--untracked-files=no")),
            "commit_date": git("log", "-1", "--format=%cI")}


def machine_info() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform(), "cpu": cpu,
                            "cores": os.cpu_count(), "loadavg": os.getloadavg()}
    try:
        from kafkatool import __version__

        info["kafkatool"] = __version__
    except ImportError:
        pass
    return info


# ---------------------------------------------------------------------------------------------- main

PRESETS = {  # scenarios, --size-mb, --rss-size, --read-scale
    "quick": (QUICK_SCENARIOS, 50.0, "64MiB", 0.25),
    "default": (DEFAULT_SCENARIOS, 200.0, "1GiB", 1.0),
    "full": (FULL_SCENARIOS, 200.0, "1GiB", 1.0),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true",
                   help="7 scenarios, 50 MB files, a quarter of the reads, RSS set on 64 MiB: a smoke run")
    g.add_argument("--full", action="store_true", help="every magic x codec x value size x batch size, + headers")
    ap.add_argument("--scenarios", help="comma-separated scenario names (e.g. v2-lz4-1kx16,v2-none-100bx256-h2)")
    ap.add_argument("--rows", help="comma-separated row names or prefixes (default: every command row; see --list)")
    ap.add_argument("--lib", action="store_true", help="add the library-pass rows (lib-*)")
    ap.add_argument("--sets", default="ratios,rss", help="ratios, rss or both (default both)")
    ap.add_argument("--size-mb", type=float, help="segment size per scenario (default 200, --quick 50)")
    ap.add_argument("--read-scale", type=float,
                    help="fast commands read scale x the release run's bytes per run (default 1, --quick 0.25)")
    ap.add_argument("--rss-size", help="segment size of the peak-RSS set (default 1GiB, --quick 64MiB)")
    ap.add_argument("--rss-commands", help="comma-separated peak-RSS rows (default: all; see --list)")
    ap.add_argument("--rss-codecs", default="lz4,none", help="codecs of the v2 inputs of the RSS set")
    ap.add_argument("--iterations", type=int, default=3, help="timed runs of each kafkatool measurement")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first (page cache, .pyc)")
    # The JVM needs more warm-up than CPython: with one warm-up pass its deep-read time varied 2x between runs
    # (JIT tiers); Kafka's passes are the cheap ones, so they get 5 + 5.
    ap.add_argument("--java-iterations", type=int, default=5)
    ap.add_argument("--java-warmup", type=int, default=5)
    ap.add_argument("--no-peers", action="store_true", help="time kafkatool only")
    ap.add_argument("--tree", type=Path, help="time the kafkatool of this older source tree (its C extension "
                    "built in place: `python setup.py build_ext --inplace`) instead of this checkout's, with this "
                    "checkout's harness: a before/after pair at the same time")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                    help="generated inputs, cached (default $KAFKATOOL_BENCH_DATA or ./bench-data)")
    ap.add_argument("--out", type=Path, help="results JSON (default DATA_DIR/results-<time>.json)")
    ap.add_argument("--list", action="store_true", help="list scenarios and rows, then exit")
    a = ap.parse_args(argv)
    preset = "quick" if a.quick else "full" if a.full else "default"
    scen, size, rss_size, read_scale = PRESETS[preset]
    a.preset = preset
    a.scenario_list = [scenario_by_name(n.strip()) for n in a.scenarios.split(",")] if a.scenarios else list(scen)
    a.size_mb = a.size_mb if a.size_mb is not None else size
    a.rss_size = a.rss_size or rss_size
    a.read_scale = a.read_scale if a.read_scale is not None else read_scale
    if not a.read_scale > 0:
        ap.error("--read-scale must be > 0")
    a.set_list = [x.strip() for x in a.sets.split(",") if x.strip()]
    if not set(a.set_list) <= {"ratios", "rss"} or not a.set_list:
        ap.error("--sets takes ratios, rss or ratios,rss")
    a.data_dir = a.data_dir.resolve()
    return a


def list_all() -> None:
    from benchmarks.rss import RSS_ROWS

    print("scenarios (default matrix marked *):")
    for s in FULL_SCENARIOS:
        print(f"  {'*' if s in DEFAULT_SCENARIOS else ' '} {s.name}")
    print("ratio rows (kafkatool command -> peer):")
    for r in ROWS + LIB_ROWS:
        print(f"  {r.name:<20} {r.title}  ->  {r.peer_label}")
    print("peak-RSS rows:")
    for name, (_, argv) in RSS_ROWS.items():
        print(f"  {name:<20} kafkatool {' '.join(argv)}")


def run_ratios(a: argparse.Namespace, rows: list[Row]) -> tuple[list[dict[str, Any]], dict[str, Any],
                                                                  list[dict[str, Any]]]:
    out_rows: list[dict[str, Any]] = []
    measurements: dict[str, Any] = {}
    scenarios: list[dict[str, Any]] = []
    print(f"{'scenario':<22} {'row':<18} {'MB':>6} {'ours MB/cpu-s':>13} {'peer MB/cpu-s':>13} {'ratio cpu':>9} "
          f"{'(process)':>9} {'ratio wall':>10} {'target':>6} {'ok':>3} {'RSS MB ours/peer':>16}  peer", flush=True)
    for s in a.scenario_list:
        active = [r for r in rows if r.applies(s)]
        if not active:
            continue
        big = ensure_layout(s, a.size_mb, a.data_dir)
        tiny = ensure_tiny(s, a.data_dir)
        mb = big.size / 1e6
        scenarios.append({"name": s.name, "logdir": str(big.logdir), "file_bytes": big.size,
                          "kafka_ref_gen_args": big.manifest.get("kafka_ref_gen_args"),
                          "sha256": big.manifest.get("sha256"), "tiny_bytes": tiny.size})
        cache: dict[str, Measurement] = {}
        for row in active:
            sides = []
            for spec in (row.ours, row.peer):
                if a.no_peers and spec is row.peer:
                    sides.append(Measurement("none", "none", []))
                    continue
                if spec.key not in cache:  # rows sharing a measurement (Kafka's shallow pass ...) reuse it
                    key = f"{spec.key} :: {s.name}"
                    cache[spec.key] = spec.fn(key, big, tiny, a)
                    measurements[key] = asdict(cache[spec.key])
                sides.append(cache[spec.key])
            ours, peer = sides
            rec = row_result(s, big, row, ours, peer)
            out_rows.append(rec)
            ok = "" if rec["ok"] is None else ("yes" if rec["ok"] else "NO")
            line = (f"{s.name:<22} {row.name:<18} {mb:>6.0f} {_mbps(mb, ours.net_cpu_ms):>13} "
                    f"{_mbps(mb, peer.net_cpu_ms):>13} {_fmt(rec['ratio_cpu']):>9} {_fmt(rec['ratio_cpu_process']):>9} "
                    f"{_fmt(rec['ratio_wall']):>10} {'' if rec['target'] is None else rec['target']:>6} {ok:>3} "
                    f"{ours.peak_rss_mb:>7.0f}/{peer.peak_rss_mb:<8.0f}  {row.peer_label}")
            if rec["error"]:
                line += f"  ERROR: {rec['error'].splitlines()[-1][:160]}"
            if rec["mismatch"]:
                line += f"  COUNTS DIFFER: {rec['mismatch']}"
            print(line, flush=True)
    return out_rows, measurements, scenarios


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    a = parse_args(raw)
    if a.list:
        list_all()
        return 0
    rows = select_rows(a.rows, a.lib)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    info = machine_info()
    if "ratios" in a.set_list and not a.no_peers:
        info["kafka_ref"] = subprocess.run([kafka_ref(), "version"], capture_output=True, text=True,
                                           env=java_env()).stdout.strip()
    if a.tree is not None:
        os.environ[TREE_ENV] = str(a.tree.resolve())
        info["tree"] = {"path": str(a.tree.resolve()), **git_info(a.tree.resolve())}
    git = git_info()
    command = "python -m benchmarks" + (" " + shlex.join(raw) if raw else "")
    print(f"# {command}", flush=True)
    print(f"# {started}  commit {git['describe']}  {info['cpu']}  {info['cores']} cores  load {info['loadavg']}  "
          f"Python {info['python']}", flush=True)
    if a.tree is not None:
        print(f"# timing the kafkatool of {info['tree']['path']} (commit {info['tree']['describe']})", flush=True)
    results: dict[str, Any] = {
        "schema": SCHEMA, "command": command, "argv": raw, "started": started, "git": git, "machine": info,
        "preset": a.preset, "settings": {"size_mb": a.size_mb, "read_scale": a.read_scale, "rss_size": a.rss_size,
                                         "iterations": a.iterations, "warmup": a.warmup,
                                         "java_iterations": a.java_iterations, "java_warmup": a.java_warmup,
                                         "sets": a.set_list,
                                         "java_opts": java_env()["KAFKA_REF_JAVA_OPTS"]},
        "rows": [], "measurements": {}, "scenarios": [], "rss": []}
    out = a.out or a.data_dir / f"results-{started[:19].replace(':', '')}.json"
    if "ratios" in a.set_list:
        results["rows"], results["measurements"], results["scenarios"] = run_ratios(a, rows)
    if "rss" in a.set_list:
        from benchmarks.rss import run_rss

        results["rss"] = run_rss(a)
    info["loadavg_end"] = os.getloadavg()
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"# results: {out}  (Markdown: python -m benchmarks.report {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
