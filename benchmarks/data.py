"""Benchmark inputs: segments written by Kafka's own ``MemoryRecordsBuilder`` through ``kafka-ref gen``.

Every file is reproducible from its generation arguments (fixed seeds, ``SplittableRandom`` in the
harness). Files are cached under the data directory with a ``.json`` manifest holding those
arguments; a file is regenerated only when its arguments change. The record count of a scenario is
chosen so that the file is about ``size_mb`` megabytes: a small probe file (same arguments, 64
batches) gives the bytes per record first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = Path(os.environ.get("KAFKATOOL_BENCH_DATA", "/work/bench-data/perf"))
SEED = 20240611  # one seed for every scenario: the files differ by their arguments


@dataclass(frozen=True, slots=True)
class Scenario:
    magic: int
    codec: str
    value_bytes: int
    batch_records: int

    @property
    def name(self) -> str:
        size = "1k" if self.value_bytes == 1024 else f"{self.value_bytes}b"
        return f"v{self.magic}-{self.codec}-{size}x{self.batch_records}"

    def gen_args(self, records: int) -> list[str]:
        return ["--magic", str(self.magic), "--codec", self.codec, "--records", str(records),
                "--batch-records", str(self.batch_records), "--value-bytes", str(self.value_bytes),
                "--key-cardinality", "100000", "--compressible", "0.5", "--seed", str(SEED)]


CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

# The default matrix: every codec at both record shapes for v2 (what brokers store today), the other
# batch size for uncompressed v2, and legacy v1/v0 files (1 KiB x 16) as old segments hold them.
DEFAULT_SCENARIOS = (
    [Scenario(2, c, 1024, 16) for c in CODECS]
    + [Scenario(2, c, 100, 256) for c in CODECS]
    + [Scenario(2, "none", 1024, 256), Scenario(2, "none", 100, 16)]
    + [Scenario(1, c, 1024, 16) for c in CODECS if c != "zstd"]
    + [Scenario(0, c, 1024, 16) for c in ("none", "gzip")]
)

# Every combination the issue names: 1 KiB / 100 B values, 16 / 256 records per batch, v0/v1/v2.
FULL_SCENARIOS = [Scenario(m, c, vb, br) for m in (2, 1, 0) for c in CODECS if not (m < 2 and c == "zstd")
                  for vb in (1024, 100) for br in (16, 256)]

QUICK_SCENARIOS = [Scenario(2, c, 1024, 16) for c in CODECS] + [Scenario(2, "none", 100, 256),
                                                                Scenario(1, "gzip", 1024, 16)]


def kafka_ref() -> str:
    """The kafka-ref launcher: ``$KAFKA_REF``, else the default build directory (built when missing)."""
    env = os.environ.get("KAFKA_REF")
    if env:
        return env
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    launcher = tmp / "kafka-ref-build" / "kafka-ref"
    if launcher.exists():
        return str(launcher)
    for build in (ROOT.parent / "shared" / "kafka-ref" / "build.sh", Path("/work/shared/kafka-ref/build.sh")):
        if build.exists():
            subprocess.run(["bash", str(build)], check=True)
            if launcher.exists():
                return str(launcher)
    raise SystemExit("kafka-ref not found: set KAFKA_REF to its launcher (see shared/kafka-ref/README.md)")


def java_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("KAFKA_REF_JAVA_OPTS", "-Xmx2g -XX:+UseParallelGC")
    return env


def _gen(out: Path, args: list[str]) -> dict[str, object]:
    p = subprocess.run([kafka_ref(), "gen", "--out", str(out), *args], capture_output=True, text=True,
                       env=java_env(), check=False)
    if p.returncode != 0:
        raise SystemExit(f"kafka-ref gen failed for {out}: {p.stdout}{p.stderr}")
    result: dict[str, object] = json.loads(p.stdout.strip().splitlines()[-1])
    return result


def ensure_file(s: Scenario, size_mb: float, data_dir: Path = DEFAULT_DATA_DIR) -> Path:
    """The scenario's segment of about ``size_mb`` MB, generated once and reused."""
    data_dir.mkdir(parents=True, exist_ok=True)
    target = int(size_mb * 1e6)
    path = data_dir / f"{s.name}-{_size_label(size_mb)}.log"
    manifest = path.with_suffix(".json")
    if path.exists() and manifest.exists():
        m = json.loads(manifest.read_text())
        if m.get("file_size") == path.stat().st_size and m.get("scenario") == s.name:
            return path
    probe = data_dir / f".probe-{s.name}.log"
    probe_records = 64 * s.batch_records
    info = _gen(probe, s.gen_args(probe_records))
    per_record = int(info["file_size"]) / probe_records  # type: ignore[call-overload]
    probe.unlink()
    batches = max(1, round(target / per_record / s.batch_records))
    args = s.gen_args(batches * s.batch_records)
    tmp = path.with_suffix(".tmp")
    info = _gen(tmp, args)
    shutil.move(tmp, path)
    manifest.write_text(json.dumps({"scenario": s.name, "kafka_ref_gen_args": args, "file_size": path.stat().st_size,
                                    "gen": info}, indent=1) + "\n")
    return path


def _size_label(size_mb: float) -> str:
    return f"{size_mb:g}mb"


def scenario_by_name(name: str) -> Scenario:
    for s in FULL_SCENARIOS + DEFAULT_SCENARIOS:
        if s.name == name:
            return s
    raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(x.name for x in FULL_SCENARIOS)}")
