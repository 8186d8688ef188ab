"""The benchmark runner: ``python -m benchmarks [options]`` (BENCHMARKS.md has the options and results).

For every scenario file it times kafkatool's passes and the peers' on the same file, back to back,
each in a fresh process (Python passes via ``benchmarks.passes``, Kafka via ``kafka-ref bench`` /
``bench-downconvert``, kafka-python via its ``MemoryRecords`` reader), then prints throughput
ratios: ``kafkatool throughput / peer throughput`` = ``peer time / kafkatool time``, by CPU time
(Kafka: the bench thread's CPU, which leaves out the JVM's JIT and GC threads) and by wall time,
medians of ``--iterations`` runs after ``--warmup``. Peak RSS is each process's ``ru_maxrss`` from
``wait4``. The counts every reader reports (batches, records, payload bytes) are cross-checked.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.data import (
    DEFAULT_DATA_DIR,
    DEFAULT_SCENARIOS,
    FULL_SCENARIOS,
    QUICK_SCENARIOS,
    ROOT,
    Scenario,
    ensure_file,
    java_env,
    kafka_ref,
    scenario_by_name,
)

# ---------------------------------------------------------------------------------------------- processes

@dataclass
class Measurement:
    key: str
    argv: list[str]
    wall_ms: float  # median
    cpu_ms: float  # median (Kafka: the bench thread's CPU)
    peak_rss_mb: float
    result: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str, float, float, float]:
    """Run a process; returns (rc, stdout, stderr, wall s, CPU s of the child, peak RSS MB of the child)."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=fo, stderr=fe, text=True, env=env, cwd=ROOT)
        _, status, ru = os.wait4(p.pid, 0)  # this child's own rusage (CPU, ru_maxrss)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        return p.returncode, fo.read(), fe.read(), wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def _py_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("NO_COLOR", "1")
    return env


def measure_pass(name: str, path: Path, iterations: int, warmup: int, extra: list[str] | None = None) -> Measurement:
    argv = [sys.executable, "-m", "benchmarks.passes", name, str(path), "--iterations", str(iterations),
            "--warmup", str(warmup), *(extra or [])]
    key = f"kafkatool:{name}{''.join(extra or [])}:{path.name}"
    rc, out, err, _, _, rss = _run(argv, _py_env())
    if rc != 0:
        return Measurement(key, argv, float("nan"), float("nan"), rss, error=(err or out).strip()[-500:])
    d = json.loads(out.strip().splitlines()[-1])
    return Measurement(key, argv, statistics.median(d["wall_ms"]), statistics.median(d["cpu_ms"]), rss,
                       d["result"], d)


def measure_kafka(kind: str, path: Path, iterations: int, warmup: int, extra: list[str] | None = None) -> Measurement:
    argv = [kafka_ref(), kind, "--in", str(path), "--iterations", str(iterations), "--warmup", str(warmup),
            *(extra or [])]
    key = f"kafka:{kind}{''.join(extra or [])}:{path.name}"
    rc, out, err, _, _, rss = _run(argv, java_env())
    lines = [json.loads(x) for x in out.strip().splitlines() if x.startswith("{")]
    if rc != 0 or not lines or lines[-1].get("type") not in ("bench", "bench-downconvert"):
        msg = lines[-1].get("message", "") if lines else (err or out).strip()[-500:]
        return Measurement(key, argv, float("nan"), float("nan"), rss, error=f"exit {rc}: {msg}")
    d = lines[-1]
    result = {k: d.get(k) for k in ("batches", "bytes", "records", "records_shallow", "payload_bytes", "out_bytes",
                                    "records_converted", "chunks") if d.get(k) is not None}
    return Measurement(key, argv, float(d["median_ms"]), float(d["thread_cpu_median_ms"]), rss, result, d)


def measure_cli(argv_tail: list[str], path: Path, iterations: int, warmup: int) -> Measurement:
    """A kafkatool command as an operator runs it: one process per run (interpreter start-up included)."""
    argv = [sys.executable, "-m", "kafkatool", *[a.replace("{file}", str(path)) for a in argv_tail]]
    key = f"cli:{' '.join(argv_tail)}:{path.name}"
    walls: list[float] = []
    cpus: list[float] = []
    rss_max = 0.0
    for i in range(-warmup, iterations):
        rc, out, err, wall, cpu, rss = _run(argv, _py_env())
        if rc not in (0, 1):
            return Measurement(key, argv, float("nan"), float("nan"), rss, error=f"exit {rc}: {err.strip()[-500:]}")
        rss_max = max(rss_max, rss)
        if i >= 0:
            walls.append(wall * 1e3)
            cpus.append(cpu * 1e3)
    return Measurement(key, argv, statistics.median(walls), statistics.median(cpus), rss_max,
                       {}, {"wall_ms": walls, "cpu_ms": cpus})


# ---------------------------------------------------------------------------------------------- rows

Target = Callable[[Scenario], float | None]


@dataclass(frozen=True)
class Spec:
    """How to take one measurement on a file; ``key`` identifies it so rows can share it."""

    key: str
    fn: Callable[[Path, argparse.Namespace], Measurement]


@dataclass(frozen=True)
class Row:
    """One line of the ratio table: a kafkatool measurement against a peer's, with the issue's target."""

    name: str
    ours: Spec
    peer: Spec
    peer_label: str
    target: Target
    applies: Callable[[Scenario], bool] = lambda s: True


def _kafka(kind: str, *extra: str) -> Spec:
    return Spec(f"kafka {kind} {' '.join(extra)}",
                lambda p, a: measure_kafka(kind, p, a.java_iterations, a.java_warmup, list(extra)))


def _ours(name: str, *extra: str) -> Spec:
    return Spec(f"pass {name} {' '.join(extra)}",
                lambda p, a: measure_pass(name, p, a.iterations, a.warmup, list(extra)))


def _cli(*argv: str) -> Spec:
    return Spec(f"cli {' '.join(argv)}", lambda p, a: measure_cli(list(argv), p, a.cli_iterations, 1))


_NO_PEER = Spec("none", lambda p, a: Measurement("none", [], float("nan"), float("nan"), 0.0))
_java_shallow = _kafka("bench")
_java_deep = _kafka("bench", "--deep")
_java_down = _kafka("bench-downconvert", "--to-magic", "1", "--mode", "lazy")


def _deep_target(s: Scenario) -> float | None:
    if s.codec != "none":
        return 0.5
    return 0.25 if s.value_bytes == 1024 else None


def _down_target(s: Scenario) -> float | None:
    return 1.0 if s.codec in ("gzip", "snappy", "lz4") else (0.25 if s.codec == "none" else None)


ROWS: list[Row] = [
    Row("verify", _ours("verify"), _java_shallow, "kafka bench", lambda s: 1.0),
    Row("verify (batch objects)", _ours("verify-batches"), _java_shallow, "kafka bench", lambda s: None),
    Row("deep", _ours("deep"), _java_deep, "kafka bench --deep", _deep_target),
    Row("deep vs kafka-python", _ours("deep"), _ours("kp-deep"), "kafka-python", lambda s: 1.0),
    Row("reindex (recover, no CRC)", _ours("recover"), _java_shallow, "kafka bench", lambda s: 10.0),
    Row("downconvert to v1 (128 KiB)", _ours("downconvert", "--to-magic", "1"), _java_down,
        "kafka bench-downconvert lazy", _down_target, lambda s: s.magic == 2 and s.codec != "zstd"),
]

# CLI rows: whole commands, one process per run (start-up included), against the same Kafka passes.
# Enabled when the command exists in this checkout (``python -m kafkatool CMD --help`` succeeds).
CLI_ROWS: list[tuple[str, Row]] = [
    ("dump", Row("cli: dump --verify --summary-only", _cli("dump", "--verify", "--summary-only", "{file}"),
                 _java_shallow, "kafka bench", lambda s: 1.0)),
    ("dump", Row("cli: dump --deep --verify --summary-only",
                 _cli("dump", "--deep", "--verify", "--summary-only", "{file}"), _java_deep, "kafka bench --deep",
                 _deep_target)),
]


def available_cli_rows() -> list[Row]:
    rows = []
    have: dict[str, bool] = {}
    for cmd, row in CLI_ROWS:
        if cmd not in have:
            rc, *_ = _run([sys.executable, "-m", "kafkatool", cmd, "--help"], _py_env())
            have[cmd] = rc == 0
        if have[cmd]:
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------- main

def _ratio(peer: float, ours: float) -> float | None:
    if not (peer == peer and ours == ours) or ours <= 0:  # NaN-safe
        return None
    return peer / ours


def _check_counts(ours: Measurement, peer: Measurement) -> str:
    """Both readers must have seen the same batches/records/payload, or the ratio means nothing."""
    diffs = []
    for k in ("batches", "bytes", "records", "payload_bytes", "records_converted"):
        if k in ours.result and k in peer.result and ours.result[k] != peer.result[k]:
            diffs.append(f"{k} {ours.result[k]} != {peer.result[k]}")
    return "; ".join(diffs)


def _fmt(x: float | None) -> str:
    return f"{x:.2f}" if x is not None else "-"


def _tput(mb: float, m: Measurement) -> str:
    """MB of file per CPU second."""
    return f"{mb / (m.cpu_ms / 1e3):.0f}" if m.cpu_ms == m.cpu_ms and m.cpu_ms > 0 else "-"


def machine_info() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    java = subprocess.run([kafka_ref(), "version"], capture_output=True, text=True, env=java_env()).stdout.strip()
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpu": cpu,
            "cores": os.cpu_count(), "loadavg": os.getloadavg(), "kafka_ref": java}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="7 scenarios (v2 1 KiB x 16 per codec, ...)")
    ap.add_argument("--full", action="store_true", help="every magic x codec x value size x batch size")
    ap.add_argument("--scenarios", help="comma-separated scenario names (e.g. v2-lz4-1kx16)")
    ap.add_argument("--rows", help="comma-separated row-name prefixes to run (default: all)")
    ap.add_argument("--size-mb", type=float, default=200.0, help="segment size per scenario (default 200)")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    # The JVM needs more warm-up than CPython: with one warm-up pass its deep-read time varied 2x
    # between runs (JIT tiers); Kafka's passes are the cheap ones, so they get 5 + 5 by default.
    ap.add_argument("--java-iterations", type=int, default=5)
    ap.add_argument("--java-warmup", type=int, default=5)
    ap.add_argument("--cli-iterations", type=int, default=3)
    ap.add_argument("--no-cli", action="store_true", help="skip the whole-command rows")
    ap.add_argument("--no-peers", action="store_true",
                    help="time kafkatool only (e.g. the peak-RSS check on a 1 GiB segment)")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--out", type=Path, help="results JSON (default: DATA_DIR/results-<time>.json)")
    a = ap.parse_args(argv)

    if a.scenarios:
        scenarios = [scenario_by_name(n.strip()) for n in a.scenarios.split(",")]
    else:
        scenarios = list(FULL_SCENARIOS if a.full else QUICK_SCENARIOS if a.quick else DEFAULT_SCENARIOS)
    rows = list(ROWS) + ([] if a.no_cli else available_cli_rows())
    if a.rows:
        wanted = [w.strip() for w in a.rows.split(",")]
        rows = [r for r in rows if any(r.name.startswith(w) for w in wanted)]
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    info = machine_info()
    print(f"# {started}  {info['cpu']}  {info['cores']} cores  load {info['loadavg']}  Python {info['python']}",
          flush=True)
    print(f"# {info['kafka_ref']}", flush=True)
    out_rows: list[dict[str, Any]] = []
    measurements: dict[str, Measurement] = {}
    header = (f"{'scenario':<18} {'row':<34} {'MB':>6} {'ours MB/cpu-s':>13} {'peer MB/cpu-s':>13} "
              f"{'ratio cpu':>9} {'ratio wall':>10} {'target':>6} {'ok':>3} {'RSS MB ours/peer':>16}  peer")
    print(header, flush=True)
    for s in scenarios:
        path = ensure_file(s, a.size_mb, a.data_dir)
        mb = path.stat().st_size / 1e6
        cache: dict[str, Measurement] = {}
        for row in rows:
            if not row.applies(s):
                continue
            ms = []
            for spec in (row.ours, row.peer) if not a.no_peers else (row.ours, _NO_PEER):
                # Rows that share a measurement (the Kafka shallow pass ...) reuse it within a scenario.
                if spec.key not in cache:
                    cache[spec.key] = spec.fn(path, a)
                    measurements[cache[spec.key].key] = cache[spec.key]
                ms.append(cache[spec.key])
            ours, peer = ms
            target = row.target(s)
            rc = _ratio(peer.cpu_ms, ours.cpu_ms)
            rw = _ratio(peer.wall_ms, ours.wall_ms)
            mismatch = _check_counts(ours, peer)
            ok = "" if target is None or rc is None else ("yes" if rc >= target else "NO")
            err = ours.error or peer.error
            rec = {"scenario": s.name, "file": str(path), "file_mb": round(mb, 1), "row": row.name,
                   "peer": row.peer_label, "ratio_cpu": rc, "ratio_wall": rw, "target": target, "ok": ok,
                   "ours": ours.key, "peer_key": peer.key, "mismatch": mismatch or None, "error": err}
            out_rows.append(rec)
            line = (f"{s.name:<18} {row.name:<34} {mb:>6.0f} {_tput(mb, ours):>13} {_tput(mb, peer):>13} "
                    f"{_fmt(rc):>9} {_fmt(rw):>10} {'' if target is None else target:>6} {ok:>3} "
                    f"{ours.peak_rss_mb:>7.0f}/{peer.peak_rss_mb:<8.0f}  {row.peer_label}")
            if err:
                line += f"  ERROR: {err.splitlines()[-1][:120]}"
            if mismatch:
                line += f"  COUNTS DIFFER: {mismatch}"
            print(line, flush=True)
    info["loadavg_end"] = os.getloadavg()
    out = a.out or a.data_dir / f"results-{started.replace(':', '')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"started": started, "machine": info, "size_mb": a.size_mb,
                               "iterations": a.iterations, "warmup": a.warmup,
                               "java_iterations": a.java_iterations, "java_warmup": a.java_warmup, "rows": out_rows,
                               "measurements": {k: vars(m) for k, m in measurements.items()}}, indent=1) + "\n")
    print(f"# results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
