"""Reports on simulated fetches, and the KIP-283 chunk-size sweep.

The sweep reads a log the way a consumer does (fetch, take the records it returns, fetch again from
the next offset) once to fix the sequence of fetch offsets, then replays that sequence for every
chunk size, timing the sends (nothing is written, nothing analysed) and measuring memory in a
separate traced pass. The ``whole`` row is the pre-KIP-283 broker: each slice converted at once by
one ``RecordsUtil.downConvert`` (``FileRecords.downConvert``), the whole result held in memory.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kafkatool.fetch.response import error_name
from kafkatool.fetch.simulate import FetchOptions, PartitionFetch, PartitionRequest, read_partition, simulate
from kafkatool.record.down_convert import ZstdDownConversionError, down_convert
from kafkatool.record.file_records import FileRecords

MAX_SWEEP_FETCHES = 100_000


def partition_case(plan: PartitionFetch) -> str:
    """exact / cut / overflow (§5.3), or empty / error / send-failed."""
    if plan.error_code != 0:
        return "error"
    return plan.stats.case


def partition_report(plan: PartitionFetch, options: FetchOptions) -> dict[str, Any]:
    """Every figure the text and JSON reports show for one partition (JSON keys, insertion-ordered)."""
    read = plan.read
    stats = plan.stats
    view = plan.consumer
    tp = plan.request.log.topic_partition
    out: dict[str, Any] = {
        "type": "partition",
        "topic": tp.topic,
        "partition": tp.partition,
        "path": str(plan.request.log.path),
        "fetch_version": options.fetch_version,
        "to_magic": options.to_magic,
        "fetch_offset": plan.request.fetch_offset,
        "error_code": plan.error_code,
        "error_name": error_name(plan.error_code),
        "error": plan.error,
        "high_watermark": plan.high_watermark,
        "log_start_offset": read.log_start_offset,
        "log_end_offset": read.log_end_offset,
        "segment": str(read.segment.log) if read.segment else None,
        "slice_position": read.position if read.segment else None,
        "slice_size": read.size,
        "max_bytes": read.max_bytes,
        "min_one_message": read.min_one_message,
        "first_batch": None if read.first_batch is None else {
            "last_offset": read.first_batch.offset, "position": read.first_batch.position,
            "size": read.first_batch.size},
        "committed_size": plan.committed_size,
        "case": partition_case(plan),
        "first_converted_batch_size": plan.lazy.first_converted_size if plan.lazy else 0,
        "converted_size": stats.converted_bytes,
        "bytes_written": stats.bytes_written,
        "chunks": stats.chunks,
        "chunk_size": options.chunk_size,
        "records_converted": stats.records_converted,
        "cut_bytes": stats.cut_bytes,
        "padding_bytes": stats.overflow_bytes,
        "overflow_buffers": stats.overflow_buffers,
        "overflow_header_positions": stats.overflow_headers[:32],
        "duplicated_first_batch": stats.duplicated_first_batch,
        "zstd_overflow": stats.zstd_overflow,
        "send_error": stats.send_error,
        "temporary_memory_bytes": stats.temporary_memory_bytes,
        "peak_conversion_memory": stats.peak_chunk_memory,
        "peak_conversion_memory_traced": stats.peak_traced_memory,
    }
    if view is not None:
        out.update({
            "batches_sent": view.complete_batches,
            "complete_bytes": view.complete_bytes,
            "records_sent": view.records_sent,
            "records_returned": view.records_returned,
            "first_returned_offset": view.first_returned_offset,
            "last_returned_offset": view.last_returned_offset,
            "next_fetch_offset": view.next_fetch_offset,
            "duplicate_offsets": view.duplicate_offsets,
            "records_below_fetch_offset": view.records_below_fetch_offset,
            "tail": view.tail,
            "tail_bytes": view.tail_bytes,
            "consumer_outcome": view.outcome,
            "consumer_error": view.error,
        })
    return out


def partition_problem(plan: PartitionFetch) -> str | None:
    """A one-line finding when an old consumer gets no records or an error from this partition."""
    tp = plan.request.log.topic_partition
    if plan.error_code != 0:
        return f"{tp}: error {error_name(plan.error_code)} ({plan.error})"
    if plan.stats.send_error is not None:
        return f"{tp}: the send fails after {plan.stats.bytes_written} of {plan.committed_size} bytes: " \
               f"{plan.stats.send_error}"
    view = plan.consumer
    if view is not None and view.error is not None:
        return f"{tp}: the consumer fails: {view.error}"
    return None


# ---------------------------------------------------------------------------------------------- sweep


@dataclass(frozen=True, slots=True)
class SweepRow:
    chunk_size: int  # 0: the whole slice converted at once (pre-KIP-283)
    fetches: int
    source_bytes: int  # slice bytes converted
    sent_bytes: int
    seconds: float
    peak_model_bytes: int  # max per chunk of source + decoded + converted bytes (Kafka's view of the heap)
    peak_traced_bytes: int  # tracemalloc peak of kafkatool's own conversion

    @property
    def mb_per_s(self) -> float:
        return self.source_bytes / self.seconds / 1e6 if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"type": "sweep", "chunk_size": self.chunk_size or "whole", "fetches": self.fetches,
                "source_bytes": self.source_bytes, "sent_bytes": self.sent_bytes, "seconds": round(self.seconds, 4),
                "mb_per_s": round(self.mb_per_s, 2), "peak_model_bytes": self.peak_model_bytes,
                "peak_traced_bytes": self.peak_traced_bytes}


def fetch_sequence(options: FetchOptions, requests: Sequence[PartitionRequest],
                   max_fetches: int = MAX_SWEEP_FETCHES) -> list[list[PartitionRequest]]:
    """The fetches a consumer makes to read from the requests' offsets to the end: each next fetch offset
    is the consumer's position after the previous response. Partitions that stop progressing drop out."""
    seq: list[list[PartitionRequest]] = []
    current = [replace(r, position=None) for r in requests]
    while current and len(seq) < max_fetches:
        seq.append(current)
        plans = simulate(options, current)
        nxt = []
        for req, plan in zip(current, plans, strict=True):
            view = plan.consumer
            if view is None or plan.error_code or view.next_fetch_offset <= req.fetch_offset:
                continue
            if view.next_fetch_offset >= plan.read.high_watermark:
                continue
            nxt.append(replace(req, fetch_offset=view.next_fetch_offset))
        current = nxt
    return seq


def _run_lazy(options: FetchOptions, seq: list[list[PartitionRequest]]) -> tuple[int, int, int]:
    source = sent = peak = 0
    for reqs in seq:
        for plan in simulate(options, reqs, analyse=False):
            source += plan.read.size
            sent += plan.stats.bytes_written
            peak = max(peak, plan.stats.peak_chunk_memory)
    return source, sent, peak


def _run_whole(options: FetchOptions, seq: list[list[PartitionRequest]]) -> tuple[int, int, int]:
    source = sent = peak = 0
    for reqs in seq:
        limit = options.response_max_bytes
        min_one = options.initial_min_one_message
        for req in reqs:
            read = read_partition(req.log, req.fetch_offset, min(options.partition_max_bytes, limit), min_one,
                                  high_watermark=req.high_watermark)
            if read.size > 0:
                min_one = False
            limit = max(0, limit - read.size)
            if read.segment is None or read.size == 0:
                continue
            with FileRecords(read.segment.log) as fr:
                try:
                    conv = down_convert(fr.batches(read.position, read.position + read.size), options.to_magic,
                                        req.fetch_offset, limit=options.decompress_limit)
                except ZstdDownConversionError:
                    continue
            source += read.size
            sent += len(conv.data)
            peak = max(peak, conv.temporary_memory_bytes + len(conv.data))
            del conv
    return source, sent, peak


def sweep(options: FetchOptions, requests: Sequence[PartitionRequest], chunk_sizes: Sequence[int], *,
          whole: bool = True, trace_memory: bool = True,
          progress: Callable[[str], None] | None = None) -> list[SweepRow]:
    options = replace(options, trace_memory=False)  # the traced pass below traces the whole run itself
    seq = fetch_sequence(options, requests)
    rows: list[SweepRow] = []
    for size in [*chunk_sizes, *([0] if whole else [])]:
        if progress is not None:
            progress(f"sweep: chunk size {size or 'whole'} over {len(seq)} fetches")
        opts = replace(options, chunk_size=size) if size else options

        def run(o: FetchOptions = opts, whole_run: bool = size == 0) -> tuple[int, int, int]:
            return _run_whole(o, seq) if whole_run else _run_lazy(o, seq)

        t0 = time.perf_counter()
        source, sent, peak = run()
        seconds = time.perf_counter() - t0
        traced = 0
        if trace_memory:
            tracemalloc.start()
            try:
                run()
                traced = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
        rows.append(SweepRow(size, len(seq), source, sent, seconds, peak, traced))
    return rows
