"""Wall time of ``kafkatool dump`` in each format on one segment, with kafka-ref's dump in the same run.

Usage: python benchmarks/bench_dump.py SEGMENT.log [--runs 3]
(a segment from ``kafka-ref gen --out none.log --records 40000 --batch-records 50 --value-bytes 100 --headers 1``
is ~5 MB). Each command runs ``--runs`` times; the best wall time is reported, as a process start to end
(kafkatool's own start-up, ~0.2 s here, included; kafka-ref's JVM start-up included too).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    ["--summary-only"],
    ["--deep", "--verify", "--summary-only"],
    ["-f", "text"],
    ["-f", "text", "--deep", "--print-data"],
    ["-f", "dump-log"],
    ["-f", "dump-log", "--deep", "--print-data"],
    ["-f", "json"],
    ["-f", "json", "--deep", "-e", "base64"],
    ["-f", "table"],
    ["-f", "table", "--deep"],
]


def best(cmd: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("segment")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    seg = Path(a.segment)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="160")
    env.setdefault("KAFKA_REF_JAVA_OPTS", "-Xmx1g")
    size = seg.stat().st_size
    print(f"segment {seg} ({size / 1e6:.1f} MB)")
    sys.path.insert(0, str(ROOT))
    from benchmarks.data import kafka_ref

    ref = kafka_ref()  # located or built by tests/support/kafkaref.py
    ref_deep = None
    if Path(ref).is_file():
        ref_deep = best([ref, "dump", "--in", str(seg), "--deep", "--payload", "b64"], a.runs, env)
        print(f"{'kafka-ref dump --deep --payload b64':45s} {ref_deep:6.2f} s")
        print(f"{'kafka-ref dump (shallow)':45s} {best([ref, 'dump', '--in', str(seg)], a.runs, env):6.2f} s")
    print(f"{'kafkatool --version (start-up)':45s} "
          f"{best([sys.executable, '-m', 'kafkatool', '--version'], a.runs, env):6.2f} s")
    for case in CASES:
        t = best([sys.executable, "-m", "kafkatool", "dump", str(seg), *case], a.runs, env)
        ratio = f"  {t / ref_deep:4.2f}x kafka-ref deep" if ref_deep else ""
        print(f"{'dump ' + ' '.join(case):45s} {t:6.2f} s  {size / t / 1e6:6.1f} MB/s{ratio}")


if __name__ == "__main__":
    main()
