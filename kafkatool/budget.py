"""One memory budget for the whole run, divided top-down ("a single config bounds the total").

``--memory SIZE`` (or ``KAFKATOOL_MEMORY``) is the most the run may use. It is split in this order:

1. reserved overhead: the interpreter, kafkatool and its compiled libraries (measured: ~45 MiB RSS
   after importing everything a command needs), once per process;
2. per worker: what is left, divided by the number of workers (``--jobs``, or Spark executor cores);
3. per worker, among: the source chunk buffer (conversion and fetch-sim read ``chunk_size`` of source
   batches at a time), the decompression limit (the largest decompressed batch accepted; decoded
   records cost about ``RECORD_EXPANSION`` times their bytes as Python objects), the output buffer,
   and caches.

Commands never take per-structure sizes that could add up past the total: they ask the budget.
A budget too small to do the work is a clear error that says the minimum.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafkatool.errors import UsageError
from kafkatool.units import format_size, parse_size

MiB = 1024 * 1024
ENV = "KAFKATOOL_MEMORY"
DEFAULT_TOTAL = 256 * MiB  # sized for a small machine (and under the 150 MB RSS target in practice)
RESERVED_PER_PROCESS = 48 * MiB
MIN_DECOMPRESS_LIMIT = 2 * MiB  # below this even ordinary batches (producer max.request.size 1 MiB) fail
MAX_DECOMPRESS_LIMIT = 256 * MiB
RECORD_EXPANSION = 3  # decoded records as Python objects vs their bytes
DEFAULT_CHUNK = 128 * 1024  # Kafka's LazyDownConversionRecordsSend.MAX_READ_SIZE


@dataclass(frozen=True, slots=True)
class WorkerBudget:
    """What one worker may hold at once."""

    total: int
    chunk_bytes: int  # source bytes read per conversion/fetch chunk
    decompress_limit: int  # largest decompressed batch accepted (bombs beyond it are findings)
    output_bytes: int  # converted output held before it is written
    cache_bytes: int  # everything else (index entries, per-partition state)


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    total: int
    workers: int
    reserved: int
    worker: WorkerBudget

    @property
    def per_worker(self) -> int:
        return self.worker.total

    def describe(self) -> str:
        w = self.worker
        return (f"memory {format_size(self.total)}: reserved {format_size(self.reserved)}, {self.workers} worker(s) "
                f"x {format_size(w.total)} (chunk {format_size(w.chunk_bytes)}, decompression limit "
                f"{format_size(w.decompress_limit)}, output {format_size(w.output_bytes)}, cache "
                f"{format_size(w.cache_bytes)})")


def minimum_total(workers: int = 1, chunk_bytes: int = DEFAULT_CHUNK, processes: int | None = None) -> int:
    """The smallest total that still fits one minimum-size batch per worker."""
    procs = workers if processes is None else processes
    per_worker = MIN_DECOMPRESS_LIMIT * (1 + RECORD_EXPANSION) + 2 * chunk_bytes + MiB
    return procs * RESERVED_PER_PROCESS + workers * per_worker


def plan(total: int | None = None, *, workers: int = 1, chunk_bytes: int = DEFAULT_CHUNK,
         processes: int | None = None) -> MemoryBudget:
    """Divide ``total`` bytes among ``workers``. ``processes`` is how many Python processes pay the
    reserved overhead (default: one per worker when workers > 1 run as processes, else 1)."""
    if total is None:
        total = default_total()
    if workers < 1:
        raise UsageError(f"--jobs must be at least 1, got {workers}")
    if chunk_bytes < 1:
        raise UsageError(f"chunk size must be positive, got {chunk_bytes}")
    procs = (workers if workers > 1 else 1) if processes is None else processes
    need = minimum_total(workers, chunk_bytes, procs)
    if total < need:
        raise UsageError(f"--memory {format_size(total)} is too small for {workers} worker(s) with "
                         f"{format_size(chunk_bytes)} chunks: the minimum is {format_size(need)}")
    reserved = procs * RESERVED_PER_PROCESS
    per_worker = (total - reserved) // workers
    # Chunk buffers: the source chunk plus its converted output (which can be a little larger).
    chunk_area = 2 * chunk_bytes
    rest = per_worker - chunk_area
    cache = max(MiB, rest // 16)
    # The decompressed batch and the record objects made from it share what remains.
    decompress = min(MAX_DECOMPRESS_LIMIT, (rest - cache) // (1 + RECORD_EXPANSION))
    decompress = max(decompress, MIN_DECOMPRESS_LIMIT)
    return MemoryBudget(total, workers, reserved,
                        WorkerBudget(per_worker, chunk_bytes, decompress, chunk_bytes, cache))


def default_total() -> int:
    raw = os.environ.get(ENV)
    if raw:
        try:
            return parse_size(raw)
        except UsageError as e:
            raise UsageError(f"{ENV}: {e.message}") from None
    return DEFAULT_TOTAL


def resolve(option: str | int | None, *, workers: int = 1, chunk_bytes: int = DEFAULT_CHUNK,
            processes: int | None = None) -> MemoryBudget:
    """``--memory`` if given, else ``KAFKATOOL_MEMORY``, else the default; then :func:`plan`."""
    total = parse_size(option) if option is not None else None
    return plan(total, workers=workers, chunk_bytes=chunk_bytes, processes=processes)
