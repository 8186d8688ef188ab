"""``convert``: the one entry point of ``kafkatool downconvert`` and ``kafkatool upconvert``, usable from Python
with the same results.

A :class:`ConvertRequest` says what to convert into what (``to_magic`` 0 or 1: down-conversion, 2:
up-conversion), with codecs given by name as an operator writes them (``keep``, ``none``, ``gzip``...); a
:class:`ConvertListener` hears the progress and every partition as it is done (the command renders them); the
:class:`ConvertOutcome` holds the per-partition summaries and the exit code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.constants import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_SEGMENT_BYTES
from kafkatool.constants import DOWN_CONVERSION_READ_SIZE as MAX_READ_SIZE
from kafkatool.convert.engine import (
    DEFAULT_BATCH_BYTES,
    ConvertObserver,
    ConvertOptions,
    PartitionStats,
    convert_log,
)
from kafkatool.errors import ExitCode, UsageError
from kafkatool.log.lock import check_read, live_notice, refuse_if_live
from kafkatool.record.codecs import Codec
from kafkatool.util import budget

KEEP = "keep"  # a codec name: each batch keeps its own codec


@dataclass(frozen=True, slots=True)
class ConvertRequest:
    """What to convert and how. ``codec``: keep (each batch's own), none, gzip, snappy, lz4 or zstd (v2 only);
    ``zstd_to`` (down-conversion): what zstd batches are recompressed with (None: refuse them, as Kafka does)."""

    src: Path
    dst: Path
    to_magic: int
    codec: str = KEEP
    zstd_to: str | None = None
    batch_bytes: int = DEFAULT_BATCH_BYTES
    chunk_size: int = MAX_READ_SIZE
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    dry_run: bool = False
    resume: bool = False  # continue an interrupted run over DST (the partitions it did not complete)
    skip_corrupt: bool = False  # leave corrupt batches and records out (counted) instead of stopping at the first
    live: bool = False  # read a source in a log dir a live broker holds (never written)
    memory: str | None = None  # the run's budget as given (None: KAFKATOOL_MEMORY or the default)


class ConvertListener(ConvertObserver):
    """What a run reports as it goes (progress and each partition done); every method does nothing unless
    overridden."""

    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway)."""


@dataclass(slots=True)
class ConvertOutcome:
    partitions: list[PartitionStats] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK  # a conversion that cannot be done raises; one that finishes is the result


def parse_codec(name: str, field: str, *, keep: bool = True) -> Codec | None:
    """A codec by name; ``keep`` (when allowed) is None: each batch keeps its own."""
    if keep and name.strip().lower() == KEEP:
        return None
    try:
        return Codec.from_label(name)
    except Exception:
        raise UsageError(f"must be keep, none, gzip, snappy, lz4 or zstd (got {name!r})", field=field) from None


def convert(request: ConvertRequest, listener: ConvertListener | None = None) -> ConvertOutcome:
    """Run ``downconvert``/``upconvert`` as the command does (budget, locks); the listener hears the results."""
    lis = listener or ConvertListener()
    req = request
    mem = budget.resolve(req.memory, chunk_bytes=req.chunk_size)  # a chunk that does not fit: the minimum
    budget.activate(mem)
    zstd = None
    if req.zstd_to is not None:
        zstd = parse_codec(req.zstd_to, "zstd_to")
        if zstd is None:
            raise UsageError("must be gzip, lz4, snappy or none", field="zstd_to")
    opts = ConvertOptions(to_magic=req.to_magic, codec=parse_codec(req.codec, "codec"), zstd_to=zstd,
                          batch_bytes=req.batch_bytes, chunk_size=req.chunk_size,
                          decompress_limit=mem.worker.decompress_limit, segment_bytes=req.segment_bytes,
                          max_message_bytes=req.max_message_bytes, dry_run=req.dry_run,
                          skip_corrupt=req.skip_corrupt)
    refuse_if_live(req.dst)  # a write into a live log dir is refused first: reading live never allows that
    for lock in check_read([req.src], live=req.live):
        lis.warning(live_notice(lock))
    return ConvertOutcome(convert_log(req.src, req.dst, opts, lis, resume=req.resume))
