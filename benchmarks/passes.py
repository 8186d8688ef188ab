"""Library-level passes, each timed in its own process: ``python -m benchmarks.passes PASS FILE ...``.

Prints one JSON line: per-iteration wall and CPU milliseconds plus what the pass counted (batches,
records, payload bytes), so the runner can check that every reader saw the same data as Kafka.
Each pass mirrors one ``kafka-ref`` bench pass:

* ``verify``: the shallow walk with CRC of every batch (``kafka-ref bench``), on kafkatool's fast
  walker ``verify_segment``; ``verify-batches`` does the same through ``FileRecords.batches()`` +
  ``ensure_valid()`` (the generic path commands use when they need batch objects).
* ``deep``: ``kafka-ref bench --deep``: CRC of every batch, then every record, touching key, value,
  headers and timestamp.
* ``recover``: the header-only index rebuild (``recover_segment``, no CRC), for ``reindex-time``.
* ``hop-floor``: the floor under ``reindex-time``'s check: the bare header walk, one ``pread`` of the header per
  batch (the compiled ``hop_walk`` alone: no index, no comparison, no process), the file opened and advised as
  the check's walk does it (``O_NOATIME``, ``POSIX_FADV_RANDOM``).
* ``downconvert``: ``LazyDownConversionRecords.iterator(128 KiB)``: batches grouped up to 128 KiB
  and each group converted with ``down_convert`` (``--to-magic 1`` or ``0``).
* ``kp-deep`` / ``kp-verify``: kafka-python 3.0's ``MemoryRecords`` reader over the same file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

# As the CLI does (kafkatool/commands/__init__.py): numpy's OpenBLAS would start a thread per core that spins for
# ~0.1 s of CPU after the import, inside the timed passes of this process (time.process_time counts every thread).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from collections.abc import Callable
from typing import Any

PassFn = Callable[[str, argparse.Namespace], dict[str, Any]]
PASSES: dict[str, PassFn] = {}


def register(name: str) -> Callable[[PassFn], PassFn]:
    def deco(fn: PassFn) -> PassFn:
        PASSES[name] = fn
        return fn
    return deco


@register("verify")
def verify(path: str, args: argparse.Namespace) -> dict[str, Any]:
    from kafkatool.record.file_records import verify_segment

    v = verify_segment(path)
    if v.error is not None:
        raise SystemExit(f"verify failed: {v.error}")
    return {"batches": v.batches, "bytes": v.valid_bytes, "records_shallow": v.records}


@register("verify-batches")
def verify_batches(path: str, args: argparse.Namespace) -> dict[str, Any]:
    from kafkatool.record.file_records import FileRecords

    batches = records = nbytes = 0
    with FileRecords(path) as fr:
        for b in fr.batches():
            b.ensure_valid()
            batches += 1
            nbytes += b.size
            c = b.count
            records += c if c is not None else (0 if b.is_compressed else 1)
    return {"batches": batches, "bytes": nbytes, "records_shallow": records}


@register("deep")
def deep(path: str, args: argparse.Namespace) -> dict[str, Any]:
    from kafkatool.record.file_records import FileRecords

    batches = records = payload = nbytes = sink = 0
    with FileRecords(path) as fr:
        for b in fr.batches():
            b.ensure_valid()
            batches += 1
            nbytes += b.size
            for r in b.records():
                records += 1
                k = r.key
                v = r.value
                if k is not None:
                    payload += len(k)
                    if k:
                        sink += k[0]
                if v is not None:
                    payload += len(v)
                    if v:
                        sink += v[-1]
                sink += len(r.headers) + r.timestamp
                if r.crc_valid is False:  # legacy messages carry their own CRC: Record.ensureValid
                    raise SystemExit(f"record {r.offset} is corrupt")
    return {"batches": batches, "bytes": nbytes, "records": records, "payload_bytes": payload}


@register("hop-floor")
def hop_floor(path: str, args: argparse.Namespace) -> dict[str, Any]:
    from kafkatool._accel import speedups
    from kafkatool.log.recovery.fast import HOPS_C

    if speedups is None:
        raise SystemExit("hop-floor walks with the compiled hop_walk: build the extension (pip install -e .)")
    # As the check's own walk opens and advises its file (recovery/fast.py): without access-time updates, and no
    # readahead around each header read (on cached pages readahead is kernel work per read, not I/O saved).
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOATIME", 0))
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
    try:
        if hasattr(os, "POSIX_FADV_RANDOM"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        size = os.fstat(fd).st_size
        p = batches = 0
        headers = bytearray()
        while p < size:
            r = speedups.hop_walk(fd, p, size, HOPS_C, headers)
            if r is None or r.headers == 0:
                raise SystemExit(f"hop-floor: the walk stopped at byte {p} of {path}")
            p, batches = r.position, batches + r.headers
            del headers[:]  # the floor keeps nothing
    finally:
        os.close(fd)
    return {"batches": batches, "bytes": p}


@register("recover")
def recover(path: str, args: argparse.Namespace) -> dict[str, Any]:
    from kafkatool.log.recovery import recover_segment

    r = recover_segment(path, 0)
    if r.error is not None:
        raise SystemExit(f"recover failed: {r.error}")
    # The entry counts come from the arrays: ``offset_entries``/``time_entries`` would build one object per
    # entry, which ``reindex-time`` never does (it encodes the arrays).
    return {"batches": r.batches, "bytes": r.valid_bytes, "index_entries": len(r.index_offsets),
            "time_entries": len(r.time_offsets)}


@register("downconvert")
def downconvert(path: str, args: argparse.Namespace) -> dict[str, Any]:
    from kafkatool.record.down_convert import down_convert
    from kafkatool.record.file_records import FileRecords

    max_read = 128 * 1024  # LazyDownConversionRecordsSend's MAX_READ_SIZE
    out_bytes = converted = chunks = 0
    with FileRecords(path) as fr:
        group: list[Any] = []
        size = 0
        for b in fr.batches():
            # LazyDownConversionRecords.Iterator: at least one batch, then while the next still fits.
            if group and size + b.size > max_read:
                res = down_convert(group, args.to_magic, 0)
                out_bytes += len(res.data)
                converted += res.records_converted
                chunks += 1 if res.data else 0
                group, size = [], 0
            group.append(b)
            size += b.size
        if group:
            res = down_convert(group, args.to_magic, 0)
            out_bytes += len(res.data)
            converted += res.records_converted
            chunks += 1 if res.data else 0
    return {"out_bytes": out_bytes, "records_converted": converted, "chunks": chunks}


def _kp_batches(path: str) -> Any:
    from kafka.record.memory_records import MemoryRecords

    with open(path, "rb") as f:
        data = f.read()
    return MemoryRecords(data), len(data)


@register("kp-verify")
def kp_verify(path: str, args: argparse.Namespace) -> dict[str, Any]:
    mr, _ = _kp_batches(path)
    batches = nbytes = 0
    while (b := mr.next_batch()) is not None:
        if not b.validate_crc():
            raise SystemExit("kafka-python: CRC mismatch")
        batches += 1
        nbytes += len(b._buffer)
    return {"batches": batches, "bytes": nbytes}


@register("kp-deep")
def kp_deep(path: str, args: argparse.Namespace) -> dict[str, Any]:
    mr, _ = _kp_batches(path)
    batches = records = payload = nbytes = sink = 0
    while (b := mr.next_batch()) is not None:
        if not b.validate_crc():
            raise SystemExit("kafka-python: CRC mismatch")
        batches += 1
        nbytes += len(b._buffer)
        for r in b:
            records += 1
            k = r.key
            v = r.value
            if k is not None:
                payload += len(k)
                if k:
                    sink += k[0]
            if v is not None:
                payload += len(v)
                if v:
                    sink += v[-1]
            sink += len(r.headers) + (r.timestamp or 0)  # kafka-python gives v0 records a None timestamp
            if not r.validate_crc():
                raise SystemExit("kafka-python: record CRC mismatch")
    return {"batches": batches, "bytes": nbytes, "records": records, "payload_bytes": payload}


def _start_as_command(command: str, tiny: str) -> None:
    """This process as a fresh ``kafkatool COMMAND``'s is when its work begins: the console script's heap settings,
    and the command's modules imported and run once (on the tiny segment's partition dir, output discarded)."""
    import contextlib

    from kafkatool.commands.app import main as kafkatool_main
    from kafkatool.util.heap import keep_freed_heap

    keep_freed_heap()  # what main() does when it runs as the console script
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        try:
            kafkatool_main([command, "-f", "json", os.path.dirname(tiny)])
        except SystemExit as e:
            if e.code not in (0, 1, None):
                raise SystemExit(f"--as-command {command}: exit {e.code}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.passes")
    ap.add_argument("name", choices=sorted(PASSES))
    ap.add_argument("file")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--to-magic", type=int, default=1)
    ap.add_argument("--before", metavar="FILE",
                    help="one untimed pass over FILE first, as a command's start-up run does its tiny segment (the "
                         "imports and first calls of the process); with --warmup 0 the timed passes then run as a "
                         "fresh command's do")
    ap.add_argument("--as-command", metavar="COMMAND",
                    help="with --before: start as that kafkatool command's process does, untimed: the console "
                         "script's heap settings, then the command itself run in this process on FILE's partition "
                         "dir (its imports, its first calls)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="passes per timed iteration, timed together and divided: a pass of a few ms then reads as "
                         "many bytes as the command it is set beside (hop-floor beside reindex-time's 40 copies)")
    args = ap.parse_args(argv)
    fn = PASSES[args.name]
    if args.as_command:
        if not args.before:
            ap.error("--as-command goes with --before")
        _start_as_command(args.as_command, args.before)
    if args.before:
        fn(args.before, args)
    wall: list[float] = []
    cpu: list[float] = []
    result: dict[str, Any] = {}
    for i in range(-args.warmup, args.iterations):
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(args.repeat):
            result = fn(args.file, args)
        t1, c1 = time.perf_counter(), time.process_time()
        if i >= 0:
            wall.append((t1 - t0) * 1e3 / args.repeat)
            cpu.append((c1 - c0) * 1e3 / args.repeat)
    print(json.dumps({"pass": args.name, "file": args.file, "wall_ms": wall, "cpu_ms": cpu, "result": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
