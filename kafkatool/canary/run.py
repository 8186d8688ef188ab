"""``kafkatool canary run``: convert chosen partitions into a work dir, never touching the log dir.

For each partition matching the ``partitions`` globs:

1. every file of the partition dir is copied into ``W/originals/<partition>`` (SHA-256 computed on the
   bytes copied, mtimes kept); a file that changes while it is copied (a live broker appending) fails the
   run for that partition;
2. the copy is converted to v2 by the convert engine (:func:`kafkatool.convert.engine.convert_partition`, Kafka 4's
   cleaner rules: each compressed legacy wrapper -> one v2 batch, each uncompressed legacy message -> its
   own v2 batch with ``batch_bytes=0``, v0 -> CreateTime -1, LogAppendTime kept; v2 batches copied; indexes
   as ``LogSegment.recover`` builds them) into ``W/canary/<partition>``. Segments are not re-rolled: each
   output segment replaces exactly one input segment (same base offset, same offset range), which is what
   makes the swap in ``apply`` safe to complete or undo after a crash;
3. ``W/manifest.json`` records inputs and outputs (size, SHA-256, mtime), the options and the tool version.

W must be new or empty and outside the log dir. A failed run removes what it wrote. While a live broker holds
the log dir's ``.lock`` (or one above W) the run is refused (exit 3): a canary of files being appended to is no
rehearsal. The run never writes into the log dir, not even a ``.lock`` (a broker that starts meanwhile and
appends fails the copy of that partition). Crash safety: ``manifest.json`` is written last, after every file and
directory is fsynced; a work dir without it is an interrupted run (remove it and run again).
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kafkatool import __version__
from kafkatool.canary.inventory import scan_partitions
from kafkatool.canary.manifest import (
    CANARY,
    ORIGINALS,
    FileEntry,
    Manifest,
    PartitionEntry,
    Workdir,
    copy_file,
    dir_entries,
    remove_tree,
)
from kafkatool.canary.verify import verify_partition
from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.errors import ExitCode, InputError, KafkaToolError, UsageError
from kafkatool.log.layout import LOG_SUFFIX, LogDir, PartitionDir, is_log_dir, offset_from_filename
from kafkatool.log.lock import refuse_if_live
from kafkatool.log.outputs import Output, refuse_aliasing
from kafkatool.record.codecs import Codec
from kafkatool.util import crash
from kafkatool.util.atomic import DirMaker, fsync_dir, is_temp_name
from kafkatool.util.printable import shown

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class RunOptions:
    target_format: int = 2
    batch_bytes: int = 0  # 0: one v2 batch per uncompressed legacy message, as Kafka 4's cleaner writes them
    codec: str | None = None  # None: keep each batch's codec
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    skip_corrupt: bool = False  # leave corrupt batches and records out (counted) instead of refusing the partition

    def validate(self) -> None:
        if self.target_format != 2:
            raise UsageError("canary run converts to message format v2 only: v0/v1 are what Kafka 4 can no longer "
                             "write", field="target_format")
        if self.batch_bytes < 0:
            raise UsageError("must be >= 0", field="batch_bytes")
        if self.codec is not None:
            Codec.from_label(self.codec)


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.relative_to(parent)
        return True
    except ValueError:
        return False


def select_partitions(log_dir: Path, patterns: Sequence[str]) -> list[PartitionDir]:
    """Partition dirs whose name (``topic-N``) matches any glob; each glob must match something."""
    globs = [g.strip() for p in patterns for g in p.split(",") if g.strip()]
    if not globs:
        raise UsageError("needs at least one glob (e.g. 'orders-0' or 'legacy-*')", field="partitions")
    own = LogDir.scan(log_dir).not_regular
    if own:
        raise own[0].error()  # a checkpoint or meta.properties that is a FIFO, a device, a bad link: a finding
    parts = scan_partitions(log_dir)
    chosen = [pd for pd in parts if any(fnmatch.fnmatchcase(pd.path.name, g) for g in globs)]
    for g in globs:
        if not any(fnmatch.fnmatchcase(pd.path.name, g) for pd in parts):
            raise UsageError(f"{g!r} matches no partition of {shown(log_dir)}", field="partitions")
    return chosen


def check_workdir(log_dir: Path, workdir: Path) -> bool:
    """W new or empty, not inside the log dir, and the log dir not inside W. True when W must be created."""
    refuse_aliasing([log_dir], [Output("workdir", workdir)])  # inside the log dir: the broker would find it there
    ld, w = log_dir.resolve(), workdir.resolve()
    if _inside(ld, w):
        raise UsageError("the log dir must not be inside the work dir", path=workdir)
    if workdir.exists():
        if not workdir.is_dir():
            raise UsageError("the work dir exists and is not a directory", path=workdir)
        if any(workdir.iterdir()):
            raise UsageError("the work dir must be new or empty (each canary gets its own; one without "
                             "manifest.json is an interrupted run: remove it and run again)", path=workdir)
        return False
    return True


def run_canary(log_dir: str | os.PathLike[str], patterns: Sequence[str], workdir: str | os.PathLike[str],
               options: RunOptions | None = None, progress: Progress | None = None) -> Manifest:
    opts = options or RunOptions()
    opts.validate()
    note = progress or (lambda _s: None)
    ld = Path(log_dir)
    if not ld.is_dir() or not is_log_dir(ld):
        raise InputError("not a Kafka log dir", path=ld)
    refuse_if_live(ld)
    chosen = select_partitions(ld, patterns)
    for pd in chosen:
        if pd.not_regular:
            raise pd.not_regular[0].error()  # a finding (exit 1): a FIFO or a device is no file to copy
        if pd.pending:
            raise UsageError(f"{shown(pd.path.name)} has unfinished cleaner/split files ("
                             + ", ".join(p.name for p in pd.pending) + "): start and stop the broker once to "
                             "complete them first", path=pd.path)
    w = Workdir(workdir)
    refuse_if_live(w.path)
    created = check_workdir(ld, w.path)
    return _run(ld, chosen, w, created, opts, patterns, note)


def _run(ld: Path, chosen: list[PartitionDir], w: Workdir, created: bool, opts: RunOptions,
         patterns: Sequence[str], note: Progress) -> Manifest:
    made = DirMaker()
    if created:
        made.makedirs(w.path)
        fsync_dir(w.path.absolute().parent)
    try:
        (w.path / ORIGINALS).mkdir()
        (w.path / CANARY).mkdir()
        entries = []
        for pd in chosen:
            note(f"{shown(pd.path.name)}: copying the originals")
            entry = _copy_originals(pd, w.originals(pd.path.name))
            note(f"{shown(pd.path.name)}: converting to v{opts.target_format}")
            entry.convert = convert_partition_to_v2(w.originals(pd.path.name), w.path / CANARY, opts,
                                                    shown_as=pd.path)
            _check_outputs(entry, w.canary(pd.path.name))
            note(f"{shown(pd.path.name)}: verifying the canary against the original")
            _verify_before_publishing(w, entry, opts)
            entries.append(entry)
        fsync_dir(w.path / ORIGINALS)
        fsync_dir(w.path / CANARY)
        fsync_dir(w.path)
        manifest = Manifest("kafkatool", __version__, _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                            str(ld.resolve()), {**asdict(opts), "partitions": list(patterns)}, entries)
        w.write_manifest(manifest)
        crash.point()
        return manifest
    except BaseException:
        if created:
            made.remove()  # the work dir and the parents the run made
        else:
            for sub in (ORIGINALS, CANARY):
                remove_tree(w.path / sub)
        raise


def _copy_originals(pd: PartitionDir, dst: Path) -> PartitionEntry:
    assert pd.topic_partition is not None
    dst.mkdir()
    inputs: list[FileEntry] = []
    for src in sorted(pd.path.iterdir()):
        if not src.is_file() or is_temp_name(src.name):
            continue
        before = src.stat()
        entry = copy_file(src, dst / src.name)
        crash.point()
        after = src.stat()
        if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or entry.size != after.st_size:
            raise InputError("changed while it was copied (a live broker appending?): stop the broker or retry",
                             path=src)
        inputs.append(entry)
    fsync_dir(dst)
    segments = sorted(offset_from_filename(f.name) for f in inputs if f.name.endswith(LOG_SUFFIX)
                      and f.name[:20].isdigit() and f.name == f"{f.name[:20]}{LOG_SUFFIX}")
    return PartitionEntry(pd.path.name, pd.topic_partition.topic, pd.topic_partition.partition, inputs,
                          segments=segments)


def convert_partition_to_v2(src: Path, dst_root: Path, opts: RunOptions, *,
                            shown_as: Path | None = None) -> dict[str, Any]:
    """The one call into the convert engine: ``src`` (a partition dir) -> ``dst_root/<src.name>``; an error about
    one of its files names that file as ``shown_as`` (the partition dir ``src`` is a copy of).

    Options as Kafka 4's cleaner rewrites legacy data, except that a built batch over ``max.message.bytes`` is
    split (KIP-126) where the cleaner would fail; segments are never re-rolled (``segment_bytes`` at its int32
    maximum), so output segments map 1:1 onto input segments."""
    from kafkatool.convert import MAX_SEGMENT_BYTES, ConvertObserver, ConvertOptions, convert_partition, resolve_sources
    from kafkatool.record.estimator import CompressionRatioEstimator

    copts = ConvertOptions(to_magic=opts.target_format,
                           codec=None if opts.codec is None else Codec.from_label(opts.codec),
                           segment_bytes=MAX_SEGMENT_BYTES, max_message_bytes=opts.max_message_bytes,
                           batch_bytes=opts.batch_bytes, index_interval_bytes=opts.index_interval_bytes,
                           skip_corrupt=opts.skip_corrupt)
    copts.validate()
    (source,) = resolve_sources(src)
    try:
        stats = convert_partition(source, dst_root, copts, CompressionRatioEstimator(), ConvertObserver())
    except KafkaToolError as e:
        if e.path is not None and shown_as is not None and Path(e.path).parent == src:
            e.path = str(shown_as / Path(e.path).name)  # the file in the log dir, not its copy (removed now)
        elif e.path is None:
            e.message = f"{shown(src.name)}: {e.message}"
        raise
    return stats.as_dict()


class CanaryRunFailed(KafkaToolError):
    """The canary a run made would not pass ``canary verify``: nothing is published (exit 1)."""

    exit_code = ExitCode.FINDINGS


def _verify_before_publishing(w: Workdir, entry: PartitionEntry, opts: RunOptions, listed: int = 3) -> None:
    """``canary verify`` of the partition just converted, before the manifest exists: a run whose own verify would
    fail publishes nothing (its work dir is removed) and says why."""
    v = verify_partition(w, entry, max_bytes=opts.max_message_bytes, interval=opts.index_interval_bytes,
                         max_details=listed, skip_corrupt=opts.skip_corrupt)
    if not v.ok:
        more = v.difference_count - len(v.differences)
        raise CanaryRunFailed(f"{shown(entry.name)}: the canary would fail `canary verify` ({v.difference_count} "
                              f"difference(s)), so nothing is published: " + "; ".join(v.differences)
                              + (f"; and {more} more" if more > 0 else ""))


def _check_outputs(entry: PartitionEntry, out: Path) -> None:
    """Outputs hashed into the entry; the 1:1 segment mapping checked (it is what makes apply crash-safe)."""
    entry.outputs = dir_entries(out)
    bases = sorted(offset_from_filename(f.name) for f in entry.outputs if f.name.endswith(LOG_SUFFIX))
    if bases != entry.segments:
        raise KafkaToolError(
            f"{shown(entry.name)}: the converted segments start at {bases}, the originals at {entry.segments}: a "
            "segment grew past 2 GiB and had to be split; such a partition cannot be swapped segment by segment",
            path=out)
    entry.log_end_offset = int(entry.convert.get("log_end_offset_out", -1))
