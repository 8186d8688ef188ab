"""Benchmark inputs: segments written by Kafka's own ``MemoryRecordsBuilder`` through ``kafka-ref gen``.

Every file is reproducible from its generation arguments (one fixed seed, ``SplittableRandom`` in the
harness). Each scenario becomes a small broker log dir, so that every command can be run on it as an
operator would::

    DATA/<scenario>-<size>/bench-0/00000000000000000000.log   (+ .index, .timeindex)

The indexes are written once by ``kafkatool reindex-time --in-place`` (the files a broker leaves), so
``reindex-time``'s check mode compares a rebuild against real files. A ``.json`` manifest beside the
log dir holds the exact ``kafka-ref gen`` arguments, the file size and its SHA-256; a log dir is reused
while its manifest matches and regenerated when the arguments change. The record count of a scenario
is chosen so that the segment is about ``size_mb`` MB: a small probe (same arguments, 64 batches) gives
the bytes per record first.

The same scenario also has a *tiny* log dir (4 batches, same shape): running a command on it measures
the command's fixed cost (interpreter start-up, imports, opening files, writing an empty output), which
the runner subtracts to compare with Kafka's warmed-up passes (see ``benchmarks/run.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = Path(os.environ.get("KAFKATOOL_BENCH_DATA", str(ROOT / "bench-data")))
SEED = 20240611  # one seed for every scenario: the files differ by their arguments
PARTITION = "bench-0"
SEGMENT = f"{0:020d}.log"
TINY_BATCHES = 4


@dataclass(frozen=True, slots=True)
class Scenario:
    magic: int
    codec: str
    value_bytes: int
    batch_records: int
    headers: int = 0  # record headers per record (v2 only): kafka-ref's "h0".."hN" keys, 8-byte values

    @property
    def name(self) -> str:
        size = "1k" if self.value_bytes == 1024 else f"{self.value_bytes}b"
        return f"v{self.magic}-{self.codec}-{size}x{self.batch_records}" + (f"-h{self.headers}" if self.headers else "")

    def gen_args(self, records: int) -> list[str]:
        args = ["--magic", str(self.magic), "--codec", self.codec, "--records", str(records),
                "--batch-records", str(self.batch_records), "--value-bytes", str(self.value_bytes),
                "--key-cardinality", "100000", "--compressible", "0.5", "--seed", str(SEED)]
        return args + (["--headers", str(self.headers)] if self.headers else [])


CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _codecs(magic: int) -> tuple[str, ...]:
    return CODECS if magic == 2 else tuple(c for c in CODECS if c != "zstd")  # zstd exists only in v2


# The default matrix: every codec at both record shapes for v2 (what brokers store today), the other
# batch sizes for uncompressed v2, two v2 shapes with record headers, and legacy v1/v0 files (1 KiB x 16)
# as old segments hold them.
DEFAULT_SCENARIOS = (
    [Scenario(2, c, 1024, 16) for c in CODECS]
    + [Scenario(2, c, 100, 256) for c in CODECS]
    + [Scenario(2, "none", 1024, 256), Scenario(2, "none", 100, 16)]
    + [Scenario(2, "lz4", 1024, 16, headers=2), Scenario(2, "none", 100, 256, headers=2)]
    + [Scenario(1, c, 1024, 16) for c in _codecs(1)]
    + [Scenario(0, c, 1024, 16) for c in ("none", "gzip")]
)

# Every combination the issue names: 1 KiB / 100 B values, 16 / 256 records per batch, v0/v1/v2 with every
# codec the format has; plus every v2 codec with two record headers at both record shapes.
FULL_SCENARIOS = (
    [Scenario(m, c, vb, br) for m in (2, 1, 0) for c in _codecs(m) for vb in (1024, 100) for br in (16, 256)]
    + [Scenario(2, c, vb, br, headers=2) for c in CODECS for vb, br in ((1024, 16), (100, 256))]
)

# A few minutes on small files: one v2 file per codec, a 100 B shape with headers, a legacy file.
QUICK_SCENARIOS = (
    [Scenario(2, c, 1024, 16) for c in CODECS]
    + [Scenario(2, "none", 100, 256, headers=2), Scenario(1, "gzip", 1024, 16)]
)


def scenario_by_name(name: str) -> Scenario:
    for s in (*FULL_SCENARIOS, *DEFAULT_SCENARIOS, *QUICK_SCENARIOS):
        if s.name == name:
            return s
    raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(x.name for x in FULL_SCENARIOS)}")


# ---------------------------------------------------------------------------------------------- kafka-ref

_LAUNCHER: str | None = None


def kafka_ref() -> str:
    """The kafka-ref launcher, located or built by ``tests/support/kafkaref.py`` (``$KAFKA_REF_BUILD``, ``$KAFKA_REF``,
    else compiled once into ``~/.cache/kafkatool``: the same build the interop tests use)."""
    global _LAUNCHER
    if _LAUNCHER is None:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        from tests.support.kafkaref import KafkaRefUnavailable, ensure_kafka_ref

        try:
            _LAUNCHER = str(ensure_kafka_ref())
        except KafkaRefUnavailable as e:
            raise SystemExit(f"kafka-ref is unavailable: {e}") from None
    return _LAUNCHER


def java_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("KAFKA_REF_JAVA_OPTS", "-Xmx2g -XX:+UseParallelGC")
    return env


TREE_ENV = "KAFKATOOL_BENCH_TREE"  # ``--tree``: an older tree's kafkatool instead of this checkout's


def py_cwd() -> Path:
    """Where kafkatool processes start (``python -m`` puts it first on sys.path): the ``--tree``, or this checkout."""
    tree = os.environ.get(TREE_ENV)
    return Path(tree) if tree else ROOT


def py_env() -> dict[str, str]:
    """The environment of every kafkatool process: this checkout first (or the ``--tree`` given, its extension
    built in place), no colour, default memory budget."""
    env = dict(os.environ)
    first = env.get(TREE_ENV) or str(ROOT)
    env["PYTHONPATH"] = first + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["NO_COLOR"] = "1"
    env.pop("KAFKATOOL_MEMORY", None)  # every figure is at the default settings
    return env


def _gen(out: Path, args: list[str]) -> dict[str, object]:
    p = subprocess.run([kafka_ref(), "gen", "--out", str(out), *args], capture_output=True, text=True,
                       env=java_env(), check=False)
    if p.returncode != 0:
        raise SystemExit(f"kafka-ref gen failed for {out}: {p.stdout}{p.stderr}")
    result: dict[str, object] = json.loads(p.stdout.strip().splitlines()[-1])
    return result


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# ---------------------------------------------------------------------------------------------- layouts

@dataclass(frozen=True, slots=True)
class Layout:
    """One scenario's log dir: ``logdir/bench-0/00000000000000000000.log`` with its indexes; with ``copies``,
    partitions ``bench-0`` .. ``bench-<copies-1>`` holding hard links of the same files."""

    scenario: Scenario
    logdir: Path
    manifest: dict[str, object]
    copies: int = 1

    @property
    def partition(self) -> Path:
        return self.logdir / PARTITION

    @property
    def log(self) -> Path:
        return self.partition / SEGMENT

    @property
    def partitions(self) -> list[Path]:
        return [self.logdir / f"bench-{i}" for i in range(self.copies)]

    @property
    def logs(self) -> list[Path]:
        return [p / SEGMENT for p in self.partitions]

    @property
    def size(self) -> int:
        """Bytes of one copy of the segment."""
        return self.log.stat().st_size


def _size_label(size_mb: float) -> str:
    return f"{size_mb:g}mb"


def _write_indexes(partition: Path) -> None:
    """The .index/.timeindex a broker would have left, written by kafkatool (checked against Kafka's rules by
    the reindex-time interop tests)."""
    p = subprocess.run([sys.executable, "-m", "kafkatool", "reindex-time", str(partition), "--in-place",
                        "--no-backup", "-q"], capture_output=True, text=True, env=py_env(), cwd=ROOT, check=False)
    if p.returncode not in (0, 1):
        raise SystemExit(f"writing the indexes of {partition} failed (exit {p.returncode}): {p.stderr[-2000:]}")


def _build(s: Scenario, logdir: Path, records: int, gen_args: list[str]) -> dict[str, object]:
    tmp = logdir.with_name(logdir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / PARTITION).mkdir(parents=True)
    info = _gen(tmp / PARTITION / SEGMENT, gen_args)
    _write_indexes(tmp / PARTITION)
    log = tmp / PARTITION / SEGMENT
    manifest: dict[str, object] = {"scenario": s.name, "records": records, "kafka_ref_gen_args": gen_args,
                                   "file_size": log.stat().st_size, "sha256": _sha256(log), "gen": info}
    shutil.rmtree(logdir, ignore_errors=True)
    tmp.rename(logdir)
    logdir.with_suffix(".json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _cached(s: Scenario, logdir: Path) -> dict[str, object] | None:
    mpath = logdir.with_suffix(".json")
    log = logdir / PARTITION / SEGMENT
    if not (mpath.is_file() and log.is_file()):
        return None
    m: dict[str, object] = json.loads(mpath.read_text())
    records = m.get("records")
    if m.get("scenario") != s.name or m.get("file_size") != log.stat().st_size or not isinstance(records, int) \
            or m.get("kafka_ref_gen_args") != s.gen_args(records):
        return None
    return m


def ensure_layout(s: Scenario, size_mb: float, data_dir: Path = DEFAULT_DATA_DIR) -> Layout:
    """The scenario's log dir with a segment of about ``size_mb`` MB, generated once and reused."""
    data_dir.mkdir(parents=True, exist_ok=True)
    logdir = data_dir / f"{s.name}-{_size_label(size_mb)}"
    m = _cached(s, logdir)
    if m is None:
        probe = data_dir / f".probe-{s.name}.log"
        probe_records = 64 * s.batch_records
        info = _gen(probe, s.gen_args(probe_records))
        per_record = int(str(info["file_size"])) / probe_records
        probe.unlink()
        batches = max(1, round(size_mb * 1e6 / per_record / s.batch_records))
        records = batches * s.batch_records
        print(f"# generating {logdir.name}: kafka-ref gen {' '.join(s.gen_args(records))}", file=sys.stderr, flush=True)
        m = _build(s, logdir, records, s.gen_args(records))
    return Layout(s, logdir, m)


def ensure_tiny(s: Scenario, data_dir: Path = DEFAULT_DATA_DIR) -> Layout:
    """The scenario's shape in ``TINY_BATCHES`` batches: what a command costs besides reading the data."""
    data_dir.mkdir(parents=True, exist_ok=True)
    logdir = data_dir / f"{s.name}-tiny"
    records = TINY_BATCHES * s.batch_records
    m = _cached(s, logdir)
    if m is None:
        m = _build(s, logdir, records, s.gen_args(records))
    return Layout(s, logdir, m)


def ensure_copies(layout: Layout, copies: int) -> Layout:
    """The scenario's log dir with ``copies`` partitions, each holding hard links of the same segment and indexes.

    A command run over it reads the same file (the same cached pages) ``copies`` times, as Kafka's bench reads it
    once per pass: the work grows well above the interpreter's start-up, whose run-to-run noise (tens of ms)
    would otherwise hide a fast command's time on one segment (reindex-time rebuilds 200 MB in milliseconds).
    """
    if copies <= 1:
        return layout
    logdir = layout.logdir.with_name(f"{layout.logdir.name}-x{copies}")
    files = sorted(layout.partition.iterdir())
    complete = all((logdir / f"bench-{i}" / f.name).is_file() and (logdir / f"bench-{i}" / f.name).stat().st_ino
                   == f.stat().st_ino for i in range(copies) for f in files)
    if not complete:
        shutil.rmtree(logdir, ignore_errors=True)
        for i in range(copies):
            part = logdir / f"bench-{i}"
            part.mkdir(parents=True)
            for f in files:
                os.link(f, part / f.name)
    return Layout(layout.scenario, logdir, layout.manifest, copies)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.data kafka-ref``: print the launcher's path (building it if needed), for scripts."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["kafka-ref"]:
        print("usage: python -m benchmarks.data kafka-ref", file=sys.stderr)
        return 2
    print(kafka_ref())
    return 0


if __name__ == "__main__":
    sys.exit(main())
