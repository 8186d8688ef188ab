"""``sample``: the one entry point of ``kafkatool sample``, usable from Python with the same results.

A :class:`SampleRequest` names a profile (``demo``: one of everything; ``bench``: one ~200 MiB partition;
``custom``: the ``topics`` given) and the topic shape, each field None (or False) when not given: a shaping
field given without a profile means ``custom``. A :class:`SampleListener` hears every partition as it is
written; the :class:`SampleOutcome` holds the :class:`SampleResult` and the exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkatool.errors import ExitCode, UsageError
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import CODEC_LABELS, Codec
from kafkatool.sample.spec import DEFAULT_START_MS, IntRange, SampleSpec, TopicSpec, bench_topic, demo_topics
from kafkatool.util import budget

if TYPE_CHECKING:  # the generator imports numpy: only when a sample is written
    from kafkatool.sample.generate import SampleResult
    from kafkatool.sample.partition import PartitionSummary

TIMESTAMP_TYPES = {"create": TimestampType.CREATE_TIME, "append": TimestampType.LOG_APPEND_TIME}
ACTIVE_INDEXES = ("trimmed", "preallocated")


@dataclass(frozen=True, slots=True)
class SampleRequest:
    """What to write into ``directory`` (new or empty). ``active_indexes``: ``trimmed`` (a cleanly stopped
    broker's dir) or ``preallocated`` (a broker that died). The fields from ``topics`` on shape the custom and
    bench topics: ``magic`` 0, 1, 2 or ``mix``; ``codec`` a codec, a comma list drawn per batch, or ``mix``;
    ``batch_records`` N or MIN-MAX; ``timestamp_type`` ``create`` or ``append``."""

    directory: Path
    profile: str | None = None  # demo, bench, custom (None: custom when a shaping field is given, else demo)
    seed: int = 1
    start_time: int | None = None  # epoch ms of the first appends (None: 2024-06-03T08:00:00Z)
    active_indexes: str = "trimmed"
    records: int | None = None  # per partition (demo: scales every data topic)
    segment_bytes: int | None = None
    memory: str | None = None  # the run's budget as given (None: KAFKATOOL_MEMORY or the default)
    # the topic shape (custom and bench profiles)
    topics: str | Sequence[str] | None = None  # names (a string: comma-separated)
    partitions: int | None = None
    magic: str | None = None
    codec: str | None = None
    compression_level: int | None = None  # gzip, lz4 or zstd level
    partition_bytes: int | None = None  # instead of records: stop at this size per partition
    batch_records: str | int | None = None
    value_bytes: IntRange | None = None
    key_cardinality: int | None = None
    null_key_fraction: float | None = None
    headers: int | None = None
    timestamp_type: str | None = None
    producers: int | None = None
    idempotent: bool | None = None
    transactional: bool = False
    abort_fraction: float | None = None
    compacted: bool = False
    tombstone_fraction: float | None = None
    index_interval_bytes: int | None = None
    retention_bytes: int | None = None
    leader_epochs: int | None = None
    compressible: float | None = None

    def shaping(self) -> list[str]:
        """The shaping fields given (not at their default, None or False), in declaration order."""
        shape = [f for f in fields(self)]
        shape = shape[[f.name for f in shape].index("topics"):]
        return [f.name for f in shape if getattr(self, f.name) is not f.default]

    @property
    def chosen_profile(self) -> str:
        return self.profile or ("custom" if self.shaping() else "demo")


class SampleListener:
    """What a run reports as it goes; every method does nothing unless overridden."""

    def partition(self, summary: PartitionSummary) -> None:
        """One partition written (into the staging dir: the log dir appears whole at the end)."""


@dataclass(frozen=True, slots=True)
class SampleOutcome:
    result: SampleResult

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK


def sample_spec(request: SampleRequest) -> SampleSpec:
    """The log dir ``request`` describes (the profile's topics, shaped by the fields given)."""
    req = request
    chosen = req.chosen_profile
    if chosen not in ("demo", "bench", "custom"):
        raise UsageError(f"must be demo, bench or custom, not {chosen!r}", field="profile")
    if req.active_indexes not in ACTIVE_INDEXES:
        raise UsageError(f"must be trimmed or preallocated, not {req.active_indexes!r}", field="active_indexes")
    if chosen == "demo":
        given = req.shaping()
        if given:
            raise UsageError(f"the demo profile is fixed; {', '.join(given)} shape custom topics (choose the custom "
                             "or bench profile)", field="profile")
        topic_specs = demo_topics(req.records, req.segment_bytes)
    else:
        base = bench_topic() if chosen == "bench" else TopicSpec("sample")
        given_names = req.topics or [base.name]
        names = [n.strip() for n in (given_names.split(",") if isinstance(given_names, str) else given_names)
                 if n.strip()]
        if not names:
            raise UsageError("names no topic", field="topics")
        shaped = replace(base, **_shape(req))
        topic_specs = tuple(replace(shaped, name=n) for n in names)
    return SampleSpec(topic_specs, seed=req.seed,
                      start_ms=req.start_time if req.start_time is not None else DEFAULT_START_MS,
                      clean_shutdown=req.active_indexes == "trimmed", profile=chosen)


def sample(request: SampleRequest, listener: SampleListener | None = None) -> SampleOutcome:
    """Write the sample log dir as ``kafkatool sample`` does (budget, staging dir, locks); the listener hears every
    partition."""
    lis = listener or SampleListener()
    budget.activate(budget.resolve(request.memory))
    spec = sample_spec(request)
    from kafkatool.sample.generate import generate_sample

    return SampleOutcome(generate_sample(request.directory, spec, progress=lis.partition))


def _shape(req: SampleRequest) -> dict[str, Any]:
    """The changes the fields given make to the profile's topic."""
    c: dict[str, Any] = {}
    if req.records is not None:
        c.update(records=req.records, partition_bytes=None)
    if req.partition_bytes is not None:
        c["partition_bytes"] = req.partition_bytes
    if req.segment_bytes is not None:
        c["segment_bytes"] = req.segment_bytes
    if req.magic is not None:
        c["magics"] = _magics(req.magic)
    if req.codec is not None:
        c["codecs"] = _codecs(req.codec)
    if req.batch_records is not None:
        c["batch_records"] = IntRange.parse(req.batch_records, "batch_records", minimum=1)
    if req.value_bytes is not None:
        c["value_bytes"] = req.value_bytes
    if req.compression_level is not None:
        c["level"] = req.compression_level
    for name in ("partitions", "key_cardinality", "null_key_fraction", "headers", "abort_fraction",
                 "tombstone_fraction", "leader_epochs", "compressible", "idempotent", "producers"):
        if getattr(req, name) is not None:
            c[name] = getattr(req, name)
    if req.timestamp_type is not None:
        t = TIMESTAMP_TYPES.get(req.timestamp_type)
        if t is None:
            raise UsageError(f"must be create or append, not {req.timestamp_type!r}", field="timestamp_type")
        c["timestamp_type"] = t
    if req.transactional:
        c.update(transactional_producers=req.producers or 2, producers=0,
                 abort_fraction=0.2 if req.abort_fraction is None else req.abort_fraction)
    if req.compacted:
        c["compacted"] = True
    for name in ("index_interval_bytes", "retention_bytes"):
        if getattr(req, name) is not None:
            c[name] = getattr(req, name)
    return c


def _magics(text: str) -> tuple[int, ...]:
    v = str(text).strip().lower()
    if v == "mix":
        return (0, 1, 2)
    if v in ("0", "1", "2"):
        return (int(v),)
    raise UsageError(f"expected 0, 1, 2 or mix, got {text!r}", field="magic")


def _codecs(text: str) -> tuple[Codec, ...]:
    v = text.strip().lower()
    if v == "mix":
        return tuple(Codec)
    out = []
    for part in v.split(","):
        if part.strip() not in CODEC_LABELS:
            raise UsageError(f"unknown codec {part.strip()!r} ({', '.join(CODEC_LABELS)} or mix)", field="codec")
        out.append(Codec.from_label(part))
    return tuple(dict.fromkeys(out))
