"""``metadata``: the one entry point of ``kafkatool metadata``, usable from Python with the same results.

A :class:`MetadataRequest` names the ``__cluster_metadata-0`` dir (or the log dir holding it) and the point
to rebuild the image at (the latest, an offset, a time) or two offsets to compare; the outcome holds the
image(s), the changes and the findings, and the exit code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.decoders import kafka_versions, resolve_kafka_version
from kafkatool.errors import ExitCode, UsageError
from kafkatool.log.lock import check_read, live_notice
from kafkatool.metadata.diff import MetadataChange, diff_images
from kafkatool.metadata.loader import ImageResult, MetadataFinding, build_image
from kafkatool.util import budget


@dataclass(frozen=True, slots=True)
class MetadataRequest:
    path: Path
    at_offset: int | None = None  # the image after the record at this offset
    at_time: int | None = None  # the image of every batch appended at or before this time (epoch ms)
    diff: tuple[int, int] | None = None  # compare the images at two offsets
    kafka_version: str | None = None  # record definitions of this Kafka version (None: the newest)
    live: bool = False  # read a log dir a live broker holds
    memory: str | None = None  # the run's budget as given (None: KAFKATOOL_MEMORY or the default)


class MetadataListener:
    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway)."""


@dataclass(slots=True)
class MetadataOutcome:
    image: ImageResult | None = None  # the image asked for (None with diff)
    before: ImageResult | None = None  # diff: the two images and what changed
    after: ImageResult | None = None
    changes: list[MetadataChange] = field(default_factory=list)

    @property
    def findings(self) -> list[MetadataFinding]:
        return [f for r in (self.image, self.before, self.after) if r is not None for f in r.findings]

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if any(f.severity in ("error", "warning") for f in self.findings) else ExitCode.OK


def metadata(request: MetadataRequest, listener: MetadataListener | None = None) -> MetadataOutcome:
    lis = listener or MetadataListener()
    req = request
    if req.at_offset is not None and req.at_time is not None:
        raise UsageError("an offset or a time, not both", field="at_offset")
    if req.diff is not None:
        if req.at_offset is not None or req.at_time is not None:
            raise UsageError("compares two offsets of its own: not with an offset or time", field="diff")
        if min(req.diff) < 0:
            raise UsageError("offsets must be at least 0", field="diff")
    version = None
    if req.kafka_version is not None:
        try:
            version = resolve_kafka_version(req.kafka_version)
        except KeyError:
            raise UsageError(f"{req.kafka_version}: kafkatool has the definitions of {', '.join(kafka_versions())}",
                             field="kafka_version") from None
    budget.activate(budget.resolve(req.memory))  # the mapped-file window of the segment and snapshot reads
    for lock in check_read([req.path], live=req.live):
        lis.warning(live_notice(lock))
    out = MetadataOutcome()
    if req.diff is not None:
        out.before = build_image(req.path, at_offset=req.diff[0], kafka_version=version)
        out.after = build_image(req.path, at_offset=req.diff[1], kafka_version=version)
        out.changes = diff_images(out.before.image.to_json(), out.after.image.to_json())
    else:
        out.image = build_image(req.path, at_offset=req.at_offset, at_time=req.at_time, kafka_version=version)
    return out
