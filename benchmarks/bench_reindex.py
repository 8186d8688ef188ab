"""Benchmark: ``reindex-time`` rebuild throughput against Kafka's own reader pass over the same segments.

The broker's recovery of a segment (``LogSegment.recover``) iterates ``FileRecords.batches()`` and calls
``ensureValid()`` (a CRC of every byte) on each batch; ``kafka-ref bench --in F`` runs exactly that loop
with kafka-clients 3.9.1 (one thread, as ``num.recovery.threads.per.data.dir=1``), so it stands for the
broker's reading cost (a lower bound: the broker also rebuilds producer state and writes the indexes).
We time, on the same files in the same run, interleaved:

* ``headers``: ``recover_segment`` (the fast path: size walk + numpy), one process, what ``--check``,
  ``--output`` and ``--in-place`` do without ``--verify``;
* ``verify``: the same with every CRC checked, as the broker does;
* ``cli -j1`` / ``cli -j2``: ``kafkatool reindex-time DIR --output OUT`` end to end (start-up included).

Data (``--generate``): a log dir of three topics written by kafka-ref gen (Kafka's MemoryRecordsBuilder):
small uncompressed batches of one 1000-byte record, lz4 batches of ~16 KiB, zstd batches of ~64 KiB, in
segments of ``--segment-mib``. Wall and CPU seconds are both reported: this machine is shared and
virtualised, so wall times carry steal time; ratios are of medians from the same run.

    python benchmarks/bench_reindex.py --data bench-data/reindex/logdir --generate --iterations 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.data import DEFAULT_DATA_DIR, kafka_ref  # noqa: E402
from kafkatool.log.recovery import recover_segment  # noqa: E402

SCENARIOS = {
    # topic: (kafka-ref gen args, approx bytes per record on disk)
    "small-1k-none": (["--magic", "2", "--codec", "none", "--batch-records", "1", "--value-bytes", "1000"], 1077),
    "medium-16k-lz4": (["--magic", "2", "--codec", "lz4", "--batch-records", "32", "--value-bytes", "1000",
                        "--compressible", "0.5"], 700),
    "large-64k-zstd": (["--magic", "2", "--codec", "zstd", "--batch-records", "128", "--value-bytes", "1000",
                        "--compressible", "0.5"], 520),
}


def generate(data: Path, segment_mib: int, segments: int) -> None:
    env = dict(os.environ, KAFKA_REF_JAVA_OPTS=os.environ.get("KAFKA_REF_JAVA_OPTS", "-Xmx2g"))
    data.mkdir(parents=True, exist_ok=True)
    (data / "meta.properties").write_text("version=1\nnode.id=1\n")
    for topic, (args, per_record) in SCENARIOS.items():
        part = data / f"{topic}-0"
        part.mkdir(exist_ok=True)
        base = 0
        for s in range(segments):
            records = segment_mib * 1024 * 1024 // per_record
            out = part / f"{base:020d}.log"
            p = subprocess.run([kafka_ref(), "gen", "--out", str(out), "--records", str(records), "--seed", str(s + 1),
                                "--base-offset", str(base), *args], capture_output=True, text=True, env=env, check=True)
            info = json.loads(p.stdout.splitlines()[-1])
            base = info["next_offset"]
            print(f"generated {out} {info['file_size']} bytes, {info['batches']} batches", file=sys.stderr)


def segments_of(part: Path) -> list[Path]:
    return sorted(part.glob("*.log"))


def java_pass(files: list[Path], iterations: int) -> tuple[float, float]:
    """Sum over files of kafka-ref bench medians: (wall s, thread CPU s)."""
    env = dict(os.environ, KAFKA_REF_JAVA_OPTS=os.environ.get("KAFKA_REF_JAVA_OPTS", "-Xmx1g"))
    wall = cpu = 0.0
    for f in files:
        p = subprocess.run([kafka_ref(), "bench", "--in", str(f), "--iterations", str(iterations), "--warmup", "1"],
                           capture_output=True, text=True, env=env, check=True)
        d = json.loads(p.stdout.splitlines()[-1])
        wall += d["median_ms"] / 1e3
        cpu += d["thread_cpu_median_ms"] / 1e3
    return wall, cpu


def our_pass(files: list[Path], iterations: int, verify: bool) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(iterations):
        w, c = time.perf_counter(), time.process_time()
        for f in files:
            r = recover_segment(f, int(f.name.split(".")[0]), verify=verify)
            assert r.error is None
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def cli_pass(data: Path, out: Path, jobs: int, iterations: int) -> float:
    walls = []
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    for _ in range(iterations):
        shutil.rmtree(out, ignore_errors=True)
        w = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kafkatool", "reindex-time", str(data), "--output", str(out), "--jobs",
                        str(jobs), "--quiet"], check=True, env=env, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - w)
    shutil.rmtree(out, ignore_errors=True)
    return statistics.median(walls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR / "reindex" / "logdir")
    ap.add_argument("--generate", action="store_true")
    ap.add_argument("--segment-mib", type=int, default=512)
    ap.add_argument("--segments", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--no-cli", action="store_true")
    a = ap.parse_args()
    if a.generate:
        generate(a.data, a.segment_mib, a.segments)
    rows = []
    total_bytes = 0
    for topic in SCENARIOS:
        files = segments_of(a.data / f"{topic}-0")
        size = sum(f.stat().st_size for f in files)
        batches = sum(recover_segment(f, int(f.name.split(".")[0])).batches for f in files)
        total_bytes += size
        jw, jc = java_pass(files, a.iterations)
        hw, hc = our_pass(files, a.iterations, verify=False)
        vw, vc = our_pass(files, a.iterations, verify=True)
        row = {"type": "scenario", "topic": topic, "bytes": size, "batches": batches,
               "avg_batch": size // max(batches, 1),
               "java_wall_s": round(jw, 3), "java_cpu_s": round(jc, 3),
               "headers_wall_s": round(hw, 3), "headers_cpu_s": round(hc, 3),
               "verify_wall_s": round(vw, 3), "verify_cpu_s": round(vc, 3),
               "java_gbps": round(size / jw / 1e9, 2), "headers_gbps": round(size / hw / 1e9, 2),
               "verify_gbps": round(size / vw / 1e9, 2),
               "speedup_wall": round(jw / hw, 1), "speedup_cpu": round(jc / hc, 1),
               "verify_speedup_wall": round(jw / vw, 1)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if not a.no_cli:
        out = a.data.parent / "bench-out"
        for jobs in (1, 2):
            w = cli_pass(a.data, out, jobs, a.iterations)
            print(json.dumps({"type": "cli", "jobs": jobs, "bytes": total_bytes, "wall_s": round(w, 3),
                              "gbps": round(total_bytes / w / 1e9, 2)}), flush=True)
    print("\n| data (avg batch) | size | Kafka reader pass (wall / CPU) | rebuild, headers only | x wall | x CPU "
          "| rebuild --verify | x wall |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['topic']} ({r['avg_batch']} B) | {r['bytes'] / 1e9:.2f} GB | {r['java_gbps']} GB/s "
              f"({r['java_wall_s']} s / {r['java_cpu_s']} s) | {r['headers_gbps']} GB/s ({r['headers_wall_s']} s / "
              f"{r['headers_cpu_s']} s) | {r['speedup_wall']} | {r['speedup_cpu']} | {r['verify_gbps']} GB/s | "
              f"{r['verify_speedup_wall']} |")


if __name__ == "__main__":
    main()
