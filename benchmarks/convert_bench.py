"""Down-conversion throughput against Kafka's own code, and peak memory on a 1 GiB segment.

    python benchmarks/convert_bench.py throughput [--data DIR] [--iterations N] [--to-magic 1]
    python benchmarks/convert_bench.py rss [--data DIR] [--codec none]

``throughput``: for each codec, a v2 segment written by Kafka's MemoryRecordsBuilder (``kafka-ref gen``,
64 000 records of 1 KiB, 16 per batch, half compressible) is down-converted

* by Kafka: ``kafka-ref bench-downconvert --mode lazy`` (``LazyDownConversionRecords`` over 128 KiB chunks,
  what a 3.9 broker does for an old fetcher; in memory, nothing written);
* by kafkatool's library doing the same work (``iter_chunks`` + ``down_convert`` per chunk, in memory);
* by ``kafkatool downconvert`` end to end (reading, converting, writing the segment, its indexes, fsync).

Medians over the iterations (after warm-up); the ratio is kafkatool's throughput over Kafka's in the same
run, by CPU time (robust on a shared machine) and by wall time.

``rss``: ``/usr/bin/time -v kafkatool downconvert`` on a 1 GiB segment with the default chunk size;
reports the maximum resident set size.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.data import DEFAULT_DATA_DIR  # noqa: E402
from benchmarks.data import kafka_ref as kafka_ref_launcher  # noqa: E402
from kafkatool.record.down_convert import down_convert, iter_chunks  # noqa: E402
from kafkatool.record.file_records import FileRecords  # noqa: E402

CODECS = ("none", "gzip", "snappy", "lz4")
GEN = ["--magic", "2", "--records", "64000", "--batch-records", "16", "--value-bytes", "1024",
       "--compressible", "0.5", "--seed", "42"]


def kafka_ref(*args: str) -> dict:
    env = dict(os.environ)
    env.setdefault("KAFKA_REF_JAVA_OPTS", "-Xmx2g")
    p = subprocess.run([kafka_ref_launcher(), *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(p.stdout.splitlines()[-1])


def data_file(data: Path, codec: str, records: str = "64000") -> Path:
    path = data / f"v2-{codec}-1k-{records}.log"
    if not path.exists():
        data.mkdir(parents=True, exist_ok=True)
        gen = list(GEN)
        gen[gen.index("--records") + 1] = records
        kafka_ref("gen", "--out", str(path), "--codec", codec, *gen)
    return path


def ours_in_memory(path: Path, to_magic: int, iterations: int, warmup: int) -> dict:
    walls, cpus = [], []
    out = 0
    for i in range(warmup + iterations):
        fr = FileRecords(path)
        t0, c0 = time.perf_counter(), time.process_time()
        out = 0
        for chunk in iter_chunks(fr.batches(), 128 * 1024):
            out += len(down_convert(chunk, to_magic, 0).data)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        fr.close()
        if i >= warmup:
            walls.append(wall * 1000)
            cpus.append(cpu * 1000)
    return {"median_ms": statistics.median(walls), "cpu_median_ms": statistics.median(cpus), "out_bytes": out}


def ours_cli(path: Path, to_magic: int, scratch: Path) -> dict:
    src = scratch / "src" / "bench-0"
    src.mkdir(parents=True)
    os.link(path, src / f"{0:020d}.log")
    dst = scratch / "dst"
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "kafkatool", "downconvert", str(src.parent),
                        str(dst), "--to-magic", str(to_magic), "--format", "json", "--quiet"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    wall = time.perf_counter() - t0
    stats = json.loads(p.stdout.splitlines()[0])
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) * 1024  # type: ignore[union-attr]
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", p.stderr))
    shutil.rmtree(scratch)
    return {"wall_ms": wall * 1000, "cpu_ms": cpu * 1000, "max_rss": rss, "bytes_out": stats["bytes_out"]}


def throughput(args: argparse.Namespace) -> None:
    rows = []
    for codec in args.codecs.split(","):
        path = data_file(args.data, codec)
        size = path.stat().st_size
        k = kafka_ref("bench-downconvert", "--in", str(path), "--to-magic", str(args.to_magic), "--iterations",
                      str(args.iterations), "--warmup", str(args.warmup), "--mode", "lazy")
        o = ours_in_memory(path, args.to_magic, args.iterations, args.warmup)
        c = ours_cli(path, args.to_magic, args.data / f"scratch-{codec}")
        assert o["out_bytes"] == k["out_bytes"] or codec != "none", (o, k)
        row = {
            "codec": codec, "in_mb": size / 1e6,
            "kafka_cpu_mb_s": size / 1e3 / k["thread_cpu_median_ms"], "kafka_wall_mb_s": size / 1e3 / k["median_ms"],
            "ours_cpu_mb_s": size / 1e3 / o["cpu_median_ms"], "ours_wall_mb_s": size / 1e3 / o["median_ms"],
            "cli_cpu_mb_s": size / 1e3 / c["cpu_ms"], "cli_wall_mb_s": size / 1e3 / c["wall_ms"],
            "cli_max_rss_mib": c["max_rss"] / 2**20,
        }
        row["ratio_cpu"] = row["ours_cpu_mb_s"] / row["kafka_cpu_mb_s"]
        row["ratio_wall"] = row["ours_wall_mb_s"] / row["kafka_wall_mb_s"]
        row["cli_ratio_cpu"] = row["cli_cpu_mb_s"] / row["kafka_cpu_mb_s"]
        rows.append(row)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    print()
    print("| codec | Kafka MB/CPU-s | kafkatool MB/CPU-s | ratio (CPU) | Kafka MB/s wall | kafkatool MB/s wall | "
          "ratio (wall) | CLI end to end MB/CPU-s (ratio) | CLI max RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['codec']} | {r['kafka_cpu_mb_s']:.0f} | {r['ours_cpu_mb_s']:.0f} | **{r['ratio_cpu']:.2f}** | "
              f"{r['kafka_wall_mb_s']:.0f} | {r['ours_wall_mb_s']:.0f} | {r['ratio_wall']:.2f} | "
              f"{r['cli_cpu_mb_s']:.0f} ({r['cli_ratio_cpu']:.2f}) | {r['cli_max_rss_mib']:.0f} MiB |")


def rss(args: argparse.Namespace) -> None:
    path = data_file(args.data, args.codec, records=str(args.records))
    scratch = args.data / "scratch-rss"
    res = ours_cli(path, args.to_magic, scratch)
    print(json.dumps({"file": str(path), "size_mib": round(path.stat().st_size / 2**20, 1),
                      "wall_s": round(res["wall_ms"] / 1000, 1), "cpu_s": round(res["cpu_ms"] / 1000, 1),
                      "max_rss_mib": round(res["max_rss"] / 2**20, 1), "bytes_out": res["bytes_out"]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["throughput", "rss"])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR / "convert")
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--to-magic", type=int, default=1)
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--codec", default="none", help="rss: codec of the 1 GiB segment")
    ap.add_argument("--records", type=int, default=1_000_000, help="rss: records of ~1 KiB (1e6 ~ 1 GiB)")
    args = ap.parse_args()
    throughput(args) if args.mode == "throughput" else rss(args)


if __name__ == "__main__":
    main()
