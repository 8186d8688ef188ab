"""One memory budget for the whole run, divided top-down ("a single config bounds the total").

A run's ``memory`` (or ``KAFKATOOL_MEMORY``) is the most it may use. It is split in this order:

1. reserved overhead: the interpreter, kafkatool, typer (which builds pydantic adapters for the
   options) and the compiled libraries: measured 55-58 MiB RSS when a command starts its work. A pool
   of forked workers (``jobs``) shares those pages with the parent until they are written: each
   worker is reserved the pages it copies (measured 8-10 MiB, reserved 16 MiB). Processes that start
   afresh (Spark's Python workers) pay the whole overhead each (``processes``);
2. per worker: what is left, divided by the number of workers (``jobs``, or Spark executor cores);
3. per worker: first the command's own working set where it has one (``reindex-time``: the index
   entries of its largest segment), then the source chunk buffer (conversion and fetch-sim read
   ``chunk_size`` of source batches at a time) and the converted output it becomes; then the window
   of memory-mapped file pages kept resident before they are handed back (file pages count in RSS),
   caches (per-partition state, the header arrays of an index rebuild) and the decompression limit
   (the largest decompressed batch accepted; decoded records cost about ``RECORD_EXPANSION`` times
   their bytes as Python objects).

Records are decoded a chunk at a time, never a whole batch: a valid batch of a few MB can hold millions of
tiny records, each a Python object of ``RECORD_OBJECT_BYTES`` beyond its key and value. At most
:func:`record_chunk` records of a batch are held at once (the cache share divided by that cost), so the
memory of a run depends on the budget, not on how many records a batch declares.

Commands never take per-structure sizes that could add up past the total: they resolve the budget once
and :func:`activate` it; library code that is given no size asks :func:`current` (the decompression
limit of :func:`kafkatool.record.codecs.decompress`, the mapped-page window of ``FileRecords``, the output
buffer of the converter). A budget too small to do the work is a clear error that says the minimum.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafkatool.constants import DOWN_CONVERSION_READ_SIZE
from kafkatool.errors import UsageError
from kafkatool.util.units import format_size, parse_size

KiB = 1024
MiB = 1024 * 1024
ENV = "KAFKATOOL_MEMORY"
DEFAULT_TOTAL = 256 * MiB  # sized for a small machine (and under the 150 MB RSS target in practice)
RESERVED_PER_PROCESS = 60 * MiB
RESERVED_PER_FORKED_WORKER = 16 * MiB
MIN_DECOMPRESS_LIMIT = 2 * MiB  # below this even ordinary batches (producer max.request.size 1 MiB) fail
MAX_DECOMPRESS_LIMIT = 256 * MiB
MIN_WINDOW = 1 * MiB  # mapped pages: below this the madvise calls cost more than the pages
MAX_WINDOW = 64 * MiB  # beyond this dropping pages costs nothing measurable and saves nothing
MIN_CACHE = 1 * MiB
# The output share grows up to this with room to spare: converted output is written in blocks of it around the
# page cache (util/direct_io), whose CPU per byte falls with the block size up to a few MiB.
MAX_OUTPUT = 4 * MiB
RECORD_EXPANSION = 3  # decoded records as Python objects vs their bytes
# One decoded record without its key and value: the 9-tuple, its ints, the list slot and what a renderer or a
# converter makes of it on the way (measured ~200 bytes for a record of a null key and an empty value).
RECORD_OBJECT_BYTES = 256
MIN_RECORD_CHUNK = 1024  # below this the per-chunk calls cost more than the records
MAX_RECORD_CHUNK = 16384  # beyond this larger chunks save nothing measurable (Kafka's batches rarely hold more)
DEFAULT_CHUNK = DOWN_CONVERSION_READ_SIZE  # Kafka's LazyDownConversionRecordsSend.MAX_READ_SIZE


@dataclass(frozen=True, slots=True)
class WorkerBudget:
    """What one worker may hold at once."""

    total: int
    chunk_bytes: int  # source bytes read per conversion/fetch chunk
    decompress_limit: int  # largest decompressed batch accepted (bombs beyond it are findings)
    output_bytes: int  # converted output held (and buffered) before it is written
    cache_bytes: int  # everything else (per-partition state, header arrays of an index rebuild)
    window_bytes: int = MIN_WINDOW  # memory-mapped file pages kept resident before they are dropped
    working_bytes: int = 0  # the command's own fixed need (reindex-time: index entries of a segment)

    def parts(self) -> int:
        """The most the parts can hold together (never above ``total``)."""
        return (self.working_bytes + self.chunk_bytes + self.output_bytes + self.window_bytes + self.cache_bytes
                + self.decompress_limit * (1 + RECORD_EXPANSION))


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    total: int
    workers: int
    reserved: int
    worker: WorkerBudget
    processes: int = 1

    @property
    def per_worker(self) -> int:
        return self.worker.total

    def describe(self) -> str:
        w = self.worker
        return (f"memory {format_size(self.total)}: reserved {format_size(self.reserved)}, {self.workers} worker(s) "
                f"x {format_size(w.total)} (chunk {format_size(w.chunk_bytes)}, output {format_size(w.output_bytes)}"
                f", mapped window {format_size(w.window_bytes)}, cache {format_size(w.cache_bytes)}, decompression "
                f"limit {format_size(w.decompress_limit)})")

    def as_dict(self) -> dict[str, int]:
        w = self.worker
        return {"total": self.total, "workers": self.workers, "processes": self.processes,
                "reserved": self.reserved, "per_worker": w.total, "chunk_bytes": w.chunk_bytes,
                "output_bytes": w.output_bytes, "window_bytes": w.window_bytes, "cache_bytes": w.cache_bytes,
                "decompress_limit": w.decompress_limit, "working_bytes": w.working_bytes}


def _processes(workers: int, processes: int | None) -> int:
    # A pool of N worker processes runs beside the parent that feeds it: N + 1 interpreters.
    return (workers + 1 if workers > 1 else 1) if processes is None else processes


def _reserved(workers: int, processes: int | None) -> int:
    if processes is not None:  # interpreters that each import everything (Spark's Python workers)
        return processes * RESERVED_PER_PROCESS
    # One interpreter; several workers are processes forked from it, sharing its pages.
    return RESERVED_PER_PROCESS + (workers * RESERVED_PER_FORKED_WORKER if workers > 1 else 0)


def minimum_per_worker(chunk_bytes: int = DEFAULT_CHUNK) -> int:
    return MIN_DECOMPRESS_LIMIT * (1 + RECORD_EXPANSION) + 2 * chunk_bytes + MIN_WINDOW + MIN_CACHE


def minimum_total(workers: int = 1, chunk_bytes: int = DEFAULT_CHUNK, processes: int | None = None,
                  working_bytes: int = 0) -> int:
    """The smallest total that still fits one minimum-size batch (and the working set) per worker."""
    return _reserved(workers, processes) + workers * (minimum_per_worker(chunk_bytes) + working_bytes)


def plan(total: int | None = None, *, workers: int = 1, chunk_bytes: int = DEFAULT_CHUNK,
         processes: int | None = None, working_bytes: int = 0, working: str = "") -> MemoryBudget:
    """Divide ``total`` bytes among ``workers``. ``processes``: how many interpreters pay the whole
    reserved overhead when the workers are not forked from this one (default: one interpreter, and a
    forked pool of ``workers`` beside it when there are several).
    ``working_bytes`` is a fixed per-worker need of the command (``working`` says what, for the error)."""
    if total is None:
        total = default_total()
    if workers < 1:
        raise UsageError(f"must be at least 1, got {workers}", field="jobs")
    if chunk_bytes < 1:
        raise UsageError(f"must be at least 1 byte, got {chunk_bytes}", field="chunk_size")
    procs = _processes(workers, processes)
    need = minimum_total(workers, chunk_bytes, processes, working_bytes)
    if total < need:
        who = f"{workers} workers" if workers > 1 else "1 worker"
        extra = [f"{format_size(chunk_bytes)} chunks"] if chunk_bytes != DEFAULT_CHUNK else []
        if working_bytes:
            extra.append(f"{working or 'working set'}: {format_size(working_bytes)}")
        detail = f" ({', '.join(extra)})" if extra else ""
        raise UsageError(f"{format_size(total)} is too small for {who}{detail}: the minimum is {format_size(need)}",
                         field="memory")
    reserved = _reserved(workers, processes)
    per_worker = (total - reserved) // workers
    # The command's working set, then the chunk buffers: the source chunk plus its converted output.
    rest = per_worker - working_bytes - 2 * chunk_bytes
    cache = max(MIN_CACHE, rest // 16)
    window = min(MAX_WINDOW, max(MIN_WINDOW, rest // 8))
    if rest - cache - window < MIN_DECOMPRESS_LIMIT * (1 + RECORD_EXPANSION):
        cache, window = MIN_CACHE, MIN_WINDOW  # near the minimum: the smallest of each
    # Output beyond the converted chunk (write blocks) comes out of the mapped window's share, not the
    # decompression limit's.
    more_output = max(0, min(MAX_OUTPUT - chunk_bytes, window - MIN_WINDOW, rest // 32))
    window -= more_output
    # The decompressed batch and the record objects made from it share what remains.
    decompress = min(MAX_DECOMPRESS_LIMIT, (rest - cache - window - more_output) // (1 + RECORD_EXPANSION))
    decompress = max(decompress, MIN_DECOMPRESS_LIMIT)
    return MemoryBudget(total, workers, reserved,
                        WorkerBudget(per_worker, chunk_bytes, decompress, chunk_bytes + more_output, cache, window,
                                     working_bytes),
                        procs)


def default_total() -> int:
    raw = os.environ.get(ENV)
    if raw:
        try:
            return parse_size(raw)
        except UsageError as e:
            raise UsageError(f"{ENV}: {e.message}") from None
    return DEFAULT_TOTAL


def resolve(option: str | int | None, *, workers: int = 1, chunk_bytes: int = DEFAULT_CHUNK,
            processes: int | None = None, working_bytes: int = 0, working: str = "") -> MemoryBudget:
    """The run's memory budget as given (``option``), else ``KAFKATOOL_MEMORY``, else the default; then
    :func:`plan`."""
    total = None
    if option is not None:
        try:
            total = parse_size(option)
        except UsageError as e:
            raise UsageError(e.message, field="memory") from None
    return plan(total, workers=workers, chunk_bytes=chunk_bytes, processes=processes, working_bytes=working_bytes,
                working=working)


# ---------------------------------------------------------------------------------------------- the active one

_active: MemoryBudget | None = None
_fallback: MemoryBudget | None = None


def activate(b: MemoryBudget | None) -> MemoryBudget | None:
    """Make ``b`` the budget library code sizes itself from (``None``: back to the default); returns the
    previous one. Commands call it once; a worker process calls it with its share (pool initializer)."""
    global _active
    previous, _active = _active, b
    return previous


def current() -> MemoryBudget:
    """The active budget; without one (library use), the default plan (``KAFKATOOL_MEMORY`` or 256 MiB)."""
    if _active is not None:
        return _active
    global _fallback
    if _fallback is None:
        _fallback = plan()
    return _fallback


def decompress_limit() -> int:
    return current().worker.decompress_limit


def window_bytes() -> int:
    return current().worker.window_bytes


def output_bytes() -> int:
    return current().worker.output_bytes


def cache_bytes() -> int:
    return current().worker.cache_bytes


def record_chunk() -> int:
    """How many decoded records of one batch may be held at once: the cache share at ``RECORD_OBJECT_BYTES``
    a record, between ``MIN_RECORD_CHUNK`` and ``MAX_RECORD_CHUNK``."""
    return min(MAX_RECORD_CHUNK, max(MIN_RECORD_CHUNK, cache_bytes() // RECORD_OBJECT_BYTES))
