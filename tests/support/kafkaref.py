"""kafka-ref, Apache Kafka's own record code (kafka-clients 3.9.1), as a test peer: locate or build it, run it.

Any test file can use it::

    from tests.support.kafkaref import KafkaRef          # the typed wrapper
    def test_x(kafka_ref: KafkaRef, tmp_path):   # session fixture (registered in tests/conftest.py)
        kafka_ref.gen(tmp_path / "a.log", magic="2", codec="lz4", records=10)
        dump = kafka_ref.dump(tmp_path / "a.log", deep=True)

Where the launcher comes from, first match wins:

1. ``$KAFKA_REF_BUILD``: a directory holding a ``kafka-ref`` launcher (``build.sh``'s BUILD_DIR), used when it
   answers ``version`` with kafka-clients 3.9.1 and, if the sources it was compiled from still exist, they are
   the same as ours (``tests/interop/kafka-ref/src``);
2. ``$KAFKA_REF``: the path of a launcher, same checks;
3. otherwise our copy ``tests/interop/kafka-ref`` is compiled into ``<cache>/kafka-ref/build-<hash of its
   sources>`` (cache: ``$KAFKATOOL_CACHE_DIR``, else ``$XDG_CACHE_HOME/kafkatool``, else ``~/.cache/kafkatool``).
   The jars come from ``$KAFKA_REF_JARS`` if it holds them, else from ``<cache>/kafka-ref/jars-3.9.1``, else
   ``fetch-jars.sh`` downloads the PyPI wheel with pip (``$KAFKA_REF_WHEEL`` reuses a wheel on disk). Every jar
   is checked against the SHA-256 pinned below. Concurrent test processes serialise on a file lock.

A missing Java 17, a failed download or a failed compile is a test *failure* with the reason, never a skip:
the interop tests are the project's proof of compatibility.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCE_DIR = ROOT / "tests" / "interop" / "kafka-ref"
KAFKA_CLIENTS_VERSION = "3.9.1"
SMALL_FILE_JAVA_OPTS = "-Xmx1g -XX:TieredStopAtLevel=1"
WHEEL = "shigawire-apache-flink-libraries==2.0.0.post1"

# SHA-256 of the jars inside the wheel above (printed by fetch-jars.sh on the run that produced
# KAFKA-FORMATS.md's golden vectors): a different jar would make every interop verdict meaningless.
JAR_SHA256 = {
    "kafka-clients": "7568b998572d256f0b7bc0afdc1b7a2588b8b08415c62ce314c864a6851ae9d9",
    "lz4-java": "d74a3334fb35195009b338a951f918203d6bbca3d1d359033dc33edd1cadc9ef",
    "snappy-java": "4c766cb3f855415ee734b2392949a0b6f12a60879334a74518deaf6270d32e36",
    "zstd-jni": "793ca8734aa15687e7e64564eab8b6ae9ee2720eae27aa663074682144b1c386",
    "slf4j-api": "d3ef575e3e4979678dc01bf1dcce51021493b4d11fb7f1be8ad982877c16a1c0",
}

# kafka-ref exit codes (KafkaRef.java): 2 = dump found trailing bytes Kafka ignores, 3 = dump hit an exception,
# 4 = Kafka refused the request.
OK, TRAILING, CORRUPT, REFUSED = 0, 2, 3, 4

T = TypeVar("T")
R = TypeVar("R")


class KafkaRefUnavailable(RuntimeError):
    """kafka-ref cannot be located or built here: the message says why and what to do."""


class KafkaRefError(AssertionError):
    """kafka-ref ended with an exit code the caller did not allow."""


# ---------------------------------------------------------------------------------------------- locating / building

def cache_dir() -> Path:
    base = os.environ.get("KAFKATOOL_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kafkatool"


def _source_files(src_root: Path) -> list[Path]:
    return sorted(p for p in (src_root / "src").rglob("*.java"))


def source_hash(src_root: Path = SOURCE_DIR) -> str:
    """Hash of what the build depends on: the Java sources and build.sh."""
    h = hashlib.sha256()
    for p in [*_source_files(src_root), src_root / "build.sh"]:
        h.update(p.relative_to(src_root).as_posix().encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _java_sources_digest(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths, key=lambda q: q.as_posix().split("/src/", 1)[-1]):
        h.update(p.as_posix().rsplit("/src/", 1)[-1].encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # blocks while another test process builds
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _jars_ok(d: Path) -> bool:
    return all((d / f"{n}.jar").is_file() and _sha256(d / f"{n}.jar") == s for n, s in JAR_SHA256.items())


def _run(cmd: Sequence[str | os.PathLike[str]], what: str, env: dict[str, str] | None = None,
         timeout: float = 900) -> subprocess.CompletedProcess[str]:
    try:
        p = subprocess.run([os.fspath(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise KafkaRefUnavailable(f"{what} failed: {e}") from None
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-25:])
        raise KafkaRefUnavailable(f"{what} failed (exit {p.returncode}):\n{tail}")
    return p


def check_java() -> None:
    """Java 17+ with javac on PATH, or a clear reason why not."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise KafkaRefUnavailable(
                f"`{tool}` is not on PATH: the interop tests compile and run Apache Kafka's own code "
                "(tests/interop/kafka-ref) and need a JDK 17+ (e.g. `apt-get install openjdk-17-jdk-headless`). "
                "They are never skipped; deselect them explicitly with `-m 'not interop'` if you must.")
    out = _run(["java", "-version"], "java -version").stderr
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(m.group(1)) if m else 0
    if major == 1 and m and m.group(2):
        major = int(m.group(2))
    if major < 17:
        raise KafkaRefUnavailable(f"Java 17+ is needed for kafka-ref, found: {out.strip().splitlines()[0]}")


def _ensure_jars(base: Path) -> Path:
    env_jars = os.environ.get("KAFKA_REF_JARS")
    if env_jars and _jars_ok(Path(env_jars)):
        return Path(env_jars)
    jars = base / f"jars-{KAFKA_CLIENTS_VERSION}"
    if _jars_ok(jars):
        return jars
    tmp = base / f"jars-{KAFKA_CLIENTS_VERSION}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    env = dict(os.environ, PYTHON=sys.executable)
    try:
        _run(["bash", SOURCE_DIR / "fetch-jars.sh", tmp], "downloading the kafka-clients jars from PyPI "
             f"(pip download {WHEEL}, ~92 MB; set KAFKA_REF_WHEEL=/path/to/wheel to use one on disk, "
             "or KAFKA_REF_BUILD to an existing build)", env=env)
    except KafkaRefUnavailable:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    bad = {n: _sha256(tmp / f"{n}.jar") for n, s in JAR_SHA256.items() if _sha256(tmp / f"{n}.jar") != s}
    if bad:
        raise KafkaRefUnavailable(f"jars from {WHEEL} do not have the pinned SHA-256: {bad}")
    shutil.rmtree(jars, ignore_errors=True)
    tmp.rename(jars)
    return jars


def _probe(launcher: Path) -> dict[str, Any] | None:
    """The launcher's ``version`` line if it runs and is kafka-clients 3.9.1, else None."""
    if not (launcher.is_file() and os.access(launcher, os.X_OK)):
        return None
    try:
        p = subprocess.run([launcher, "version"], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, KAFKA_REF_JAVA_OPTS=SMALL_FILE_JAVA_OPTS))
        v: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[0])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    return v if p.returncode == 0 and v.get("kafka_clients") == KAFKA_CLIENTS_VERSION else None


def _same_sources(build_dir: Path) -> bool:
    """False only when we can see the build's sources and they differ from our copy."""
    listing = build_dir / "sources.txt"
    if not listing.is_file():
        return True
    paths = [Path(s) for s in listing.read_text().split()]
    if not paths or not all(p.is_file() for p in paths):
        return True
    return _java_sources_digest(paths) == _java_sources_digest(_source_files(SOURCE_DIR))


def _external_launcher() -> Path | None:
    candidates = []
    if os.environ.get("KAFKA_REF_BUILD"):
        candidates.append(Path(os.environ["KAFKA_REF_BUILD"]) / "kafka-ref")
    if os.environ.get("KAFKA_REF"):
        candidates.append(Path(os.environ["KAFKA_REF"]))
    for launcher in candidates:
        build = launcher.parent
        if (build / "classes" / "kafkaref" / "KafkaRefBatch.class").is_file() and (build / "classpath.txt").is_file() \
                and _same_sources(build) and _probe(launcher) is not None:
            return launcher
        print(f"kafkaref: ignoring {launcher} (not a working kafka-ref {KAFKA_CLIENTS_VERSION} built from "
              "tests/interop/kafka-ref/src); building our own", file=sys.stderr)
    return None


def ensure_kafka_ref() -> Path:
    """The path of a working ``kafka-ref`` launcher, building it if needed (see module docstring)."""
    ext = _external_launcher()
    if ext is not None:
        return ext
    base = cache_dir() / "kafka-ref"
    build = base / f"build-{source_hash()}"
    launcher = build / "kafka-ref"
    stamp = build / ".complete"
    if stamp.is_file() and _probe(launcher) is not None:
        return launcher
    check_java()
    with _file_lock(base / ".lock"):
        if stamp.is_file() and _probe(launcher) is not None:
            return launcher  # another process built it while we waited
        jars = _ensure_jars(base)
        shutil.rmtree(build, ignore_errors=True)
        # build.sh writes absolute paths into the launcher, so it builds in place; the stamp marks completion.
        _run(["bash", SOURCE_DIR / "build.sh", jars, build], "compiling kafka-ref (tests/interop/kafka-ref/build.sh)",
             env=dict(os.environ, PYTHON=sys.executable))
        if _probe(launcher) is None:
            raise KafkaRefUnavailable(f"kafka-ref built in {build} does not run `version`")
        stamp.write_text(source_hash() + "\n")
    return launcher


# ---------------------------------------------------------------------------------------------- results

@dataclass(frozen=True, slots=True)
class RefRun:
    """One kafka-ref invocation: exit code and the JSON lines it printed."""

    argv: tuple[str, ...]
    returncode: int
    lines: tuple[dict[str, Any], ...]
    stderr: str

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [j for j in self.lines if j.get("type") == type_]

    def one(self, type_: str) -> dict[str, Any]:
        found = self.of_type(type_)
        if len(found) != 1:
            raise KafkaRefError(f"expected one {type_!r} line from {' '.join(self.argv)}, got {len(found)}: "
                                f"{self.lines[:5]} stderr={self.stderr[-2000:]}")
        return found[0]


@dataclass(slots=True)
class Dump:
    """``dump`` output grouped: each batch line with its record lines under ``"records"`` (``--deep``).

    ``error`` is the ``"type":"error"`` line (exit 3), ``truncated`` the ``"type":"truncated"`` line (exit 2).
    """

    returncode: int
    batches: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    truncated: dict[str, Any] | None = None

    @classmethod
    def from_run(cls, run: RefRun) -> Dump:
        d = cls(run.returncode)
        for j in run.lines:
            t = j.get("type")
            if t == "batch":
                d.batches.append(dict(j, records=[]))
            elif t == "record":
                d.batches[-1]["records"].append(j)
            elif t == "summary":
                d.summary = j
            elif t == "error":
                d.error = j
            elif t == "truncated":
                d.truncated = j
        return d

    def records(self) -> list[dict[str, Any]]:
        return [r for b in self.batches for r in b["records"]]


def b64(data: bytes | None) -> str | None:
    """kafka-ref's payload encoding (``--payload b64``)."""
    return None if data is None else base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


# ---------------------------------------------------------------------------------------------- the wrapper

Path_ = str | os.PathLike[str]


class KafkaRef:
    """Typed access to every kafka-ref command (``KafkaRef.java``); options map 1:1 to ``--kebab-case``."""

    def __init__(self, launcher: Path, *, java_opts: str = SMALL_FILE_JAVA_OPTS, timeout: float = 600) -> None:
        self.launcher = launcher
        self.java_opts = java_opts
        self.timeout = timeout

    def run(self, command: str, *args: str, allow: Iterable[int] = (OK,), java_opts: str | None = None) -> RefRun:
        argv = (os.fspath(self.launcher), command, *args)
        env = dict(os.environ, KAFKA_REF_JAVA_OPTS=java_opts or self.java_opts)
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=self.timeout)
        lines = []
        for line in p.stdout.splitlines():
            if line.strip():
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    raise KafkaRefError(f"non-JSON output from {' '.join(argv)}: {line[:200]!r}") from None
        run = RefRun(argv, p.returncode, tuple(lines), p.stderr)
        if p.returncode not in set(allow):
            raise KafkaRefError(f"{' '.join(argv)} exited {p.returncode}: {lines[-3:]} {p.stderr[-3000:]}")
        return run

    @staticmethod
    def options(**opts: object) -> list[str]:
        """``records=10, batch_records=3, deep=True`` -> ``--records 10 --batch-records 3 --deep``."""
        out: list[str] = []
        for name, value in opts.items():
            if value is None or value is False:
                continue
            flag = "--" + name.replace("_", "-")
            if value is True:
                out.append(flag)
            elif isinstance(value, (list, tuple)):
                out += [flag, ",".join(str(v) for v in value)]
            else:
                out += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
        return out

    def pmap(self, fn: Callable[[T], R], items: Iterable[T], workers: int | None = None) -> list[R]:
        """Run ``fn`` over ``items`` on a few threads: JVM start-up dominates small runs, overlap it."""
        n = workers or min(4, max(2, os.cpu_count() or 2))
        with ThreadPoolExecutor(max_workers=n) as ex:
            return list(ex.map(fn, items))

    # -------------------------------------------------------------------------------------- many in one JVM
    def run_batch(self, argvs: Sequence[Sequence[str]], *,
                  allow: Iterable[int] = (OK, TRAILING, CORRUPT, REFUSED)) -> list[RefRun]:
        """Run the commands (``[command, *options]`` lists, e.g. from ``dump_args``) in order in one JVM
        (``KafkaRefBatch``: each exactly as its own ``kafka-ref`` run, minus the JVM start-up)."""
        if not argvs:
            return []
        classpath = (self.launcher.parent / "classpath.txt").read_text().strip()
        for argv in argvs:
            if any("\t" in a or "\n" in a for a in argv):
                raise ValueError(f"kafka-ref batch arguments cannot hold tabs or newlines: {argv}")
        cmd = ["java", *shlex.split(self.java_opts), "-cp", classpath, "kafkaref.KafkaRefBatch"]
        p = subprocess.run(cmd, input="".join("\t".join(a) + "\n" for a in argvs), capture_output=True,
                           text=True, timeout=self.timeout)
        runs: list[RefRun] = []
        lines: list[dict[str, Any]] = []
        for line in p.stdout.splitlines():
            if not line.strip():
                continue
            try:
                j = json.loads(line)
            except ValueError:
                raise KafkaRefError(f"non-JSON output from kafka-ref batch: {line[:200]!r}") from None
            if j.get("type") == "batch-end":
                runs.append(RefRun(tuple(argvs[len(runs)]), int(j["rc"]), tuple(lines), p.stderr))
                lines = []
            else:
                lines.append(j)
        if p.returncode != 0 or len(runs) != len(argvs):
            raise KafkaRefError(f"kafka-ref batch died after {len(runs)} of {len(argvs)} commands "
                                f"(exit {p.returncode}): {p.stderr[-3000:]}")
        allowed = set(allow)
        for r in runs:
            if r.returncode not in allowed:
                raise KafkaRefError(f"kafka-ref {' '.join(r.argv)} exited {r.returncode}: {r.lines[-3:]} "
                                    f"{r.stderr[-3000:]}")
        return runs

    def run_batches(self, groups: Sequence[Sequence[Sequence[str]]], *, workers: int = 2,
                    allow: Iterable[int] = (OK, TRAILING, CORRUPT, REFUSED)) -> list[list[RefRun]]:
        """Groups of commands over ``workers`` JVMs; a group's commands run in order in one JVM (e.g. a ``gen``
        then ``gen --append`` then ``dump`` of the same file). Results come back per group, in order."""
        allowed = tuple(allow)
        lanes: list[list[int]] = [[] for _ in range(max(1, min(workers, len(groups))))]
        for i in sorted(range(len(groups)), key=lambda g: -len(groups[g])):
            min(lanes, key=lambda lane: sum(len(groups[g]) for g in lane)).append(i)

        def lane_run(lane: list[int]) -> list[RefRun]:
            return self.run_batch([argv for g in lane for argv in groups[g]], allow=allowed)

        out: list[list[RefRun]] = [[] for _ in groups]
        for lane, runs in zip(lanes, self.pmap(lane_run, lanes, workers=len(lanes)), strict=True):
            it = iter(runs)
            for g in lane:
                out[g] = [next(it) for _ in groups[g]]
        return out

    # -------------------------------------------------------------------------------------- commands
    def version(self) -> dict[str, Any]:
        return self.run("version").one("version")

    @classmethod
    def gen_args(cls, out: Path_, *, magic: str | int | Sequence[int] | None = None,
                 codec: str | Sequence[str] | None = None, records: int | None = None,
                 batch_records: int | None = None, value_bytes: int | None = None,
                 key_cardinality: int | None = None, null_key_fraction: float | None = None,
                 null_value_fraction: float | None = None, headers: int | None = None, seed: int | None = None,
                 base_offset: int | None = None, timestamp_type: str | None = None, start_ts: int | None = None,
                 ts_step: int | None = None, transactional: bool = False, idempotent: bool = False,
                 producer_id: int | None = None, producer_epoch: int | None = None, base_sequence: int | None = None,
                 control_every: int | None = None, abort_fraction: float | None = None, leave_open: bool = False,
                 coordinator_epoch: int | None = None, leader_epoch: int | None = None,
                 compressible: float | None = None, dict_bytes: int | None = None, level: int | None = None,
                 append: bool = False) -> list[str]:
        return ["gen", *cls.options(
            out=out, magic=magic, codec=codec, records=records, batch_records=batch_records,
            value_bytes=value_bytes, key_cardinality=key_cardinality, null_key_fraction=null_key_fraction,
            null_value_fraction=null_value_fraction, headers=headers, seed=seed, base_offset=base_offset,
            timestamp_type=timestamp_type, start_ts=start_ts, ts_step=ts_step, transactional=transactional,
            idempotent=idempotent, producer_id=producer_id, producer_epoch=producer_epoch,
            base_sequence=base_sequence, control_every=control_every, abort_fraction=abort_fraction,
            leave_open=leave_open, coordinator_epoch=coordinator_epoch, leader_epoch=leader_epoch,
            compressible=compressible, dict_bytes=dict_bytes, level=level, append=append)]

    def gen(self, out: Path_, *, allow: Iterable[int] = (OK,), **options: Any) -> RefRun:
        """``MemoryRecordsBuilder`` batches appended with ``FileRecords.append`` (options: ``gen_args``); the
        ``gen`` line has the counts."""
        return self.run(*self.gen_args(out, **options), allow=allow)

    @classmethod
    def dump_args(cls, path: Path_, *, deep: bool = True, payload: str = "b64",
                  limit_batches: int | None = None) -> list[str]:
        return ["dump", "--in", os.fspath(path), *cls.options(deep=deep, payload=payload,
                                                              limit_batches=limit_batches)]

    def dump(self, path: Path_, *, deep: bool = True, payload: str = "b64", limit_batches: int | None = None,
             allow: Iterable[int] = (OK, TRAILING, CORRUPT)) -> Dump:
        """``FileRecords.open`` + ``batches()``, ``isValid``, ``ensureValid``, ``streamingIterator``."""
        return Dump.from_run(self.run(*self.dump_args(path, deep=deep, payload=payload,
                                                      limit_batches=limit_batches), allow=allow))

    @classmethod
    def downconvert_args(cls, src: Path_, out: Path_, *, to_magic: int, first_offset: int | None = None,
                         api: str = "recordsutil") -> list[str]:
        return ["downconvert", "--in", os.fspath(src), *cls.options(out=out, to_magic=to_magic,
                                                                     first_offset=first_offset, api=api)]

    def downconvert(self, src: Path_, out: Path_, *, to_magic: int, first_offset: int | None = None,
                    api: str = "recordsutil", allow: Iterable[int] = (OK,)) -> RefRun:
        """``RecordsUtil.downConvert`` (``api="recordsutil"``), ``FileRecords.downConvert``, or lazy chunks."""
        return self.run(*self.downconvert_args(src, out, to_magic=to_magic, first_offset=first_offset, api=api),
                        allow=allow)

    def lazysend(self, src: Path_, out: Path_, *, to_magic: int, first_offset: int, size: int,
                 position: int | None = None, min_one_message: bool = False, max_write: int | None = None,
                 topic: str | None = None, partition: int | None = None, allow: Iterable[int] = (OK,)) -> RefRun:
        """The bytes ``LazyDownConversionRecordsSend`` writes for one partition of a down-converting fetch."""
        return self.run("lazysend", "--in", os.fspath(src), *self.options(
            out=out, to_magic=to_magic, first_offset=first_offset, size=size, position=position,
            min_one_message=min_one_message, max_write=max_write, topic=topic, partition=partition), allow=allow)

    def upconvert(self, src: Path_, out: Path_, *, codec: str | None = None, group_uncompressed: int | None = None,
                  timestamp_type: str | None = None, log_append_time: int | None = None,
                  leader_epoch: int | None = None, level: int | None = None, allow: Iterable[int] = (OK,)) -> RefRun:
        """v0/v1 -> v2 with ``MemoryRecordsBuilder`` as LogValidator does (an emulation, offsets kept)."""
        return self.run("upconvert", "--in", os.fspath(src), *self.options(
            out=out, codec=codec, group_uncompressed=group_uncompressed, timestamp_type=timestamp_type,
            log_append_time=log_append_time, leader_epoch=leader_epoch, level=level), allow=allow)

    def bench(self, src: Path_, *, iterations: int, warmup: int | None = None, deep: bool = False,
              java_opts: str | None = None) -> dict[str, Any]:
        return self.run("bench", "--in", os.fspath(src), *self.options(iterations=iterations, warmup=warmup,
                                                                     deep=deep), java_opts=java_opts).one("bench")

    def bench_downconvert(self, src: Path_, *, to_magic: int, iterations: int, warmup: int | None = None,
                          mode: str | None = None, first_offset: int | None = None,
                          java_opts: str | None = None) -> dict[str, Any]:
        return self.run("bench-downconvert", "--in", os.fspath(src), *self.options(
            to_magic=to_magic, iterations=iterations, warmup=warmup, mode=mode, first_offset=first_offset),
            java_opts=java_opts).one("bench-downconvert")


# ---------------------------------------------------------------------------------------------- one JVM, kept

class KafkaRefSession:
    """One ``KafkaRefBatch`` JVM kept running for many commands sent one at a time: each runs exactly as its own
    ``kafka-ref`` run (KafkaRefBatch: ``KafkaRef.run`` with ``main``'s error handling, nothing shared but the JVM),
    minus a JVM start-up and class loading per command (about 0.5 s each)."""

    def __init__(self, launcher: Path, *, java_opts: str = SMALL_FILE_JAVA_OPTS) -> None:
        classpath = (launcher.parent / "classpath.txt").read_text().strip()
        self.argv = ["java", *shlex.split(java_opts), "-cp", classpath, "kafkaref.KafkaRefBatch"]
        self._p = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, encoding="utf-8", bufsize=1)
        self._stderr: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._drain, name="kafka-ref-stderr", daemon=True).start()

    def _drain(self) -> None:
        assert self._p.stderr is not None
        for line in self._p.stderr:
            self._stderr.append(line)

    def run(self, *argv: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
        """``kafka-ref ARGV``: its exit code, stdout (the JSON lines) and what it wrote to stderr meanwhile."""
        args = [os.fspath(a) for a in argv]
        if any("\t" in a or "\n" in a for a in args):
            raise ValueError(f"kafka-ref batch arguments cannot hold tabs or newlines: {args}")
        with self._lock:
            assert self._p.stdin is not None and self._p.stdout is not None
            seen = len(self._stderr)
            try:
                self._p.stdin.write("\t".join(args) + "\n")
                self._p.stdin.flush()
            except BrokenPipeError:
                pass  # reported below: no batch-end line
            out: list[str] = []
            for line in self._p.stdout:
                if line.startswith('{"type":"batch-end"'):
                    rc = int(json.loads(line)["rc"])
                    return subprocess.CompletedProcess(["kafka-ref", *args], rc, "".join(out),
                                                       "".join(self._stderr[seen:]))
                out.append(line)
        raise KafkaRefError(f"kafka-ref batch JVM ended during `kafka-ref {' '.join(args)}` "
                            f"(exit {self._p.wait()}): {''.join(self._stderr)[-3000:]}")

    def close(self) -> None:
        if self._p.stdin is not None:
            self._p.stdin.close()
        try:
            self._p.wait(60)
        except subprocess.TimeoutExpired:
            self._p.kill()
            self._p.wait()


_SHARED: KafkaRefSession | None = None


def shared_session() -> KafkaRefSession:
    """The test session's kept kafka-ref JVM (``KAFKA_REF_JAVA_OPTS`` or the small-file options), started on
    first use and ended with the test session."""
    global _SHARED
    if _SHARED is None or _SHARED._p.poll() is not None:
        _SHARED = KafkaRefSession(get_kafka_ref().launcher,
                                  java_opts=os.environ.get("KAFKA_REF_JAVA_OPTS", SMALL_FILE_JAVA_OPTS))
    return _SHARED


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    global _SHARED
    if _SHARED is not None:
        _SHARED.close()
        _SHARED = None


# ---------------------------------------------------------------------------------------------- fixture

_LAUNCHER: Path | None = None
_FAILURE: str | None = None


def get_kafka_ref() -> KafkaRef:
    """The process-wide KafkaRef (located or built once); raises KafkaRefUnavailable with the reason."""
    global _LAUNCHER, _FAILURE
    if _FAILURE is not None:
        raise KafkaRefUnavailable(_FAILURE)
    if _LAUNCHER is None:
        try:
            _LAUNCHER = ensure_kafka_ref()
        except KafkaRefUnavailable as e:
            _FAILURE = str(e)
            raise
    return KafkaRef(_LAUNCHER)


@pytest.fixture(scope="session")
def kafka_ref() -> KafkaRef:
    """A working kafka-ref (kafka-clients 3.9.1). Fails, never skips, when Java or the jars are unavailable."""
    try:
        return get_kafka_ref()
    except KafkaRefUnavailable as e:
        reason = str(e)
    pytest.fail(f"kafka-ref (Apache Kafka's own code, needed by the interop tests) is unavailable: {reason}",
                pytrace=False)
