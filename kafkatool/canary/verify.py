"""``kafkatool canary verify``: prove each canary partition equivalent to its original, or say exactly why not.

Per partition of the manifest:

* files: every saved original and every canary file has the size and SHA-256 the manifest records (a
  changed original would make rollback inexact; a changed canary is reported, then examined record by record);
* records (:mod:`.equivalence`): every item of the original, as message format v2 keeps it, is in the canary at
  the same offset with the same timestamp, type, key, value, headers, producer fields and markers; nothing
  else is; every canary batch is v2 and passes ``ensureValid``;
* segments: the same base offsets and the same log end offset as the original;
* indexes: each canary ``.index``/``.timeindex`` is byte-identical to what ``LogSegment.recover`` (3.9) builds
  from the canary's batches (:func:`kafkatool.log.recovery.recover_segment`), and ``.txnindex`` lists the same
  aborted transactions as the original's;
* carried files (producer snapshots, ``leader-epoch-checkpoint``, ``partition.metadata``) are the originals;
* ``max.message.bytes``: a canary batch over the limit fails unless its original was over it already;
* sizes: bytes, batches and compression (payload bytes per stored byte) per codec, original vs canary.

Expected changes of the v2 format (not losses) are counted and listed: v0 timestamps -1 with CreateTime,
legacy per-message CRC-32s replaced by batch CRC-32Cs, legacy messages rebuilt as v2 batches.

The log dir is looked at too (read only): which partitions hold the originals, the canary, or an interrupted
apply/rollback (with what a broker starting now would do to its ``.swap`` files). An interrupted swap fails
verify: run ``canary apply`` or ``canary rollback`` again to complete it.

The verdict is written to ``W/verify.json`` (``apply`` requires a passing one for the same manifest).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkatool.canary.apply import PartitionState, classify, segment_file
from kafkatool.canary.equivalence import Comparison, StreamStats, compare, read_items, read_original
from kafkatool.canary.loader import predict
from kafkatool.canary.manifest import PartitionEntry, Workdir, hash_file, matches
from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.errors import KafkaToolError
from kafkatool.log.index import encode_offset_index, encode_time_index
from kafkatool.log.lock import live_lock, refuse_if_live
from kafkatool.log.recovery import recover_segment
from kafkatool.log.txn_index import read_txn_index
from kafkatool.util.printable import shown
from kafkatool.util.regular import read_regular

Progress = Callable[[str], None]


@dataclass(slots=True)
class PartitionVerdict:
    name: str
    differences: list[str] = field(default_factory=list)  # the first ones, in full
    difference_count: int = 0
    warnings: list[str] = field(default_factory=list)
    expected: dict[str, int] = field(default_factory=dict)  # expected change -> count
    comparison: Comparison | None = None
    source: StreamStats = field(default_factory=StreamStats)
    canary: StreamStats = field(default_factory=StreamStats)
    segments: int = 0
    indexes_checked: int = 0

    @property
    def ok(self) -> bool:
        return self.difference_count == 0

    def differ(self, msg: str, limit: int) -> None:
        self.difference_count += 1
        if len(self.differences) < limit:
            self.differences.append(msg)

    def as_dict(self) -> dict[str, Any]:
        c = self.comparison

        def codecs(s: StreamStats) -> dict[str, dict[str, Any]]:
            return {k: {**v, "payload_per_byte": round(v["payload"] / v["bytes"], 4) if v["bytes"] else None}
                    for k, v in sorted(s.by_codec.items())}

        return {
            "type": "partition", "partition": self.name, "ok": self.ok, "difference_count": self.difference_count,
            "differences": self.differences, "warnings": self.warnings, "expected_changes": self.expected,
            "items_compared": c.compared if c else 0, "records": {"original": self.source.records,
                                                                  "canary": self.canary.records},
            "batches": {"original": self.source.batches, "canary": self.canary.batches},
            "bytes": {"original": self.source.bytes, "canary": self.canary.bytes,
                      "delta": self.canary.bytes - self.source.bytes,
                      "delta_pct": round(100.0 * (self.canary.bytes - self.source.bytes) / self.source.bytes, 2)
                      if self.source.bytes else None},
            "magics": {"original": {f"v{k}": v for k, v in sorted(self.source.magics.items())},
                       "canary": {f"v{k}": v for k, v in sorted(self.canary.magics.items())}},
            "codecs": {"original": codecs(self.source), "canary": codecs(self.canary)},
            "segments": self.segments, "indexes_checked": self.indexes_checked,
        }


@dataclass(slots=True)
class VerifyResult:
    workdir: str
    log_dir: str
    partitions: list[PartitionVerdict]
    log_dir_state: list[PartitionState]
    loader: dict[str, list[str]]  # partition -> what a broker starting now would do
    journal: dict[str, Any] | None
    live_lock: str | None = None  # the .lock a live broker holds on the log dir (its state read only with live)

    @property
    def interrupted(self) -> list[str]:
        return [s.name for s in self.log_dir_state if s.state == "interrupted"]

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.partitions) and not self.interrupted


def verify_workdir(workdir: str | Path, *, max_details: int = 20, check_log_dir: bool = True, live: bool = False,
                   progress: Progress | None = None) -> VerifyResult:
    """Verify every partition of the canary; then, unless a live broker holds the log dir (``live``: anyway),
    what the log dir holds. Writes ``W/verify.json`` (refused, exit 3, if W is inside a live log dir)."""
    note = progress or (lambda _s: None)
    w = Workdir(workdir)
    refuse_if_live(w.path)
    m = w.read_manifest()
    max_bytes = int(m.options.get("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES))
    interval = int(m.options.get("index_interval_bytes", DEFAULT_INDEX_INTERVAL_BYTES))
    verdicts = []
    for p in m.partitions:
        note(f"{shown(p.name)}")
        verdicts.append(verify_partition(w, p, max_bytes=max_bytes, interval=interval, max_details=max_details,
                                         skip_corrupt=bool(m.options.get("skip_corrupt", False))))
    states: list[PartitionState] = []
    loader: dict[str, list[str]] = {}
    log_dir = Path(m.log_dir)
    lock = live_lock(log_dir) if check_log_dir and log_dir.is_dir() else None
    if check_log_dir and log_dir.is_dir() and (lock is None or live):
        for p in m.partitions:
            st = classify(log_dir / p.name, p)
            states.append(st)
            if st.state == "interrupted" and st.swaps:
                try:
                    loader[p.name] = predict(log_dir / p.name).describe()
                except KafkaToolError as e:
                    loader[p.name] = [f"cannot predict: {e}"]
    journal = w.read_optional(w.journal_path)
    result = VerifyResult(str(w.path), m.log_dir, verdicts, states, loader, journal,
                          str(lock) if lock is not None else None)
    w.write_json(w.verified_path, {
        "ok": all(v.ok for v in verdicts), "at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "manifest_sha256": hash_file(w.manifest_path)[1],
        "partitions": {v.name: {"ok": v.ok, "difference_count": v.difference_count} for v in verdicts}})
    return result


def verify_partition(w: Workdir, p: PartitionEntry, *, max_bytes: int, interval: int,
                     max_details: int = 20, skip_corrupt: bool = False) -> PartitionVerdict:
    """One partition of the canary against its saved original, read as ``canary run`` converted it (what dump's
    deep, verifying walk reports of the original stops it, unless the run left corrupt data out: ``skip_corrupt``)."""
    v = PartitionVerdict(p.name, segments=len(p.segments))
    orig, can = w.originals(p.name), w.canary(p.name)
    for e in p.inputs:
        if not matches(orig / e.name, e):
            v.differ(f"saved original {shown(e.name)} does not match the manifest (size/SHA-256): rollback would "
                     "not be byte-exact", max_details)
    for e in p.outputs:
        if not matches(can / e.name, e):
            v.differ(f"canary {shown(e.name)} differs from what `canary run` wrote (size/SHA-256)", max_details)
    present = sorted(f.name for f in can.iterdir() if f.is_file()) if can.is_dir() else []
    extra = sorted(set(present) - {e.name for e in p.outputs})
    if extra:
        v.differ(f"files in the canary that `canary run` did not write: {', '.join(extra)}", max_details)
    bases = sorted(s[0] for n in present if (s := segment_file(n)) is not None and s[1] == ".log")
    if bases != p.segments:
        v.differ(f"canary segments start at {bases}, the originals at {p.segments}", max_details)
    try:
        expected = read_original(orig, p.segments, v.source, max_message_bytes=max_bytes, skip_corrupt=skip_corrupt)
        actual = read_items(can, bases, v.canary, to_v2=False, max_message_bytes=max_bytes, canary=True)
        v.comparison = compare(expected, actual, v.canary.damage, max_details=max_details)
    except KafkaToolError as e:
        v.differ(f"the saved original cannot be read: {e}", max_details)
        return v
    c = v.comparison
    for d in v.canary.damage:
        span = f"offsets {d.first}..{d.last}" if d.last >= 0 else f"offsets from {d.first}"
        v.differ(f"damaged canary batch: {d.message} ({span} unreadable)", max_details)
    v.difference_count += c.difference_count
    v.differences += c.differences[:max(0, max_details - len(v.differences))]
    if c.in_damaged:
        v.warnings.append(f"{c.in_damaged} item(s) of the original fall in damaged canary batches")
    _check_boundaries(v, p, max_details)
    _check_indexes(v, orig, can, bases, p.segments, interval, max_details)
    _check_carried(v, orig, can, p, max_details)
    _check_sizes(v, max_bytes, max_details)
    _expected_changes(v)
    return v


def _check_boundaries(v: PartitionVerdict, p: PartitionEntry, limit: int) -> None:
    leo = int(p.convert.get("log_end_offset_in", -1))
    if p.log_end_offset != leo:
        v.differ(f"log end offset {p.log_end_offset} in the canary, {leo} in the original", limit)


def _epoch_assignments(part: Path, bases: list[int]) -> list[tuple[int, int]]:
    """The leader-epoch cache entries recovery assigns from the batches (epoch >= 0 and above the latest)."""
    out: list[tuple[int, int]] = []
    latest = -1
    for base in bases:
        rec = recover_segment(part / f"{base:020d}.log", base, latest_epoch=latest)
        out += rec.epochs
        if rec.epochs:
            latest = rec.epochs[-1][0]
    return out


def _check_indexes(v: PartitionVerdict, orig: Path, can: Path, bases: list[int], orig_bases: list[int], interval: int,
                   limit: int) -> None:
    # Converted legacy batches carry partition leader epoch -1 (as Kafka 4's cleaner writes them) and v2 batches
    # are copied, so recovery must assign the same leader epochs from both: the carried leader-epoch-checkpoint
    # stays true for the canary.
    e_orig, e_can = _epoch_assignments(orig, orig_bases), _epoch_assignments(can, bases)
    if e_orig != e_can:
        v.differ(f"leader epochs recovery would assign: {e_can} from the canary, {e_orig} from the original", limit)
    for base in bases:
        log = can / f"{base:020d}.log"
        rec = recover_segment(log, base, index_interval_bytes=interval, verify=True)
        if rec.error is not None or rec.truncated_bytes:
            v.differ(f"{shown(log.name)}: the broker's recovery would stop at byte {rec.valid_bytes} of {rec.file_size}"
                     + (f": {rec.error.message}" if rec.error else ""), limit)
            continue
        for suffix, data in ((".index", encode_offset_index(rec.offset_entries, base)),
                             (".timeindex", encode_time_index(rec.time_entries, base))):
            f = can / f"{base:020d}{suffix}"
            have = read_regular(f) if f.is_file() else None
            if have != data:
                v.differ(f"{shown(f.name)} is not what LogSegment.recover rebuilds from the canary's batches ("
                         + ("missing" if have is None else f"{len(have)} bytes, rebuild {len(data)} bytes,"
                            f" first difference at byte {_first_diff(have, data)}") + ")", limit)
            v.indexes_checked += 1
        txn_o, txn_c = orig / f"{base:020d}.txnindex", can / f"{base:020d}.txnindex"
        try:
            a = read_txn_index(txn_o) if txn_o.is_file() else []
            b = read_txn_index(txn_c) if txn_c.is_file() else []
        except KafkaToolError as e:
            v.differ(f"{shown(txn_c.name)}: {e}", limit)
            continue
        if a != b:
            v.differ(f"{shown(txn_c.name)}: aborted transactions {b} in the canary, {a} in the original", limit)


def _first_diff(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _check_carried(v: PartitionVerdict, orig: Path, can: Path, p: PartitionEntry, limit: int) -> None:
    for e in p.inputs:
        if segment_file(e.name) is not None:
            continue
        c = can / e.name
        if not c.is_file():
            v.differ(f"{shown(e.name)} was not carried into the canary", limit)
        elif hash_file(c)[1] != e.sha256:
            v.differ(f"{shown(e.name)} in the canary differs from the original's", limit)


def _check_sizes(v: PartitionVerdict, max_bytes: int, limit: int) -> None:
    """A canary batch over max.message.bytes fails unless the original batch ending at the same offset was over
    it already (then the conversion did not make it worse: one warning for all of them)."""
    before = {off for off, _, _ in v.source.oversized}
    inherited = []
    for off, size, where in v.canary.oversized:
        msg = f"canary batch ending at offset {off} is {size} bytes, over max.message.bytes {max_bytes} ({where})"
        if off in before:
            inherited.append(msg)
        else:
            v.differ(msg, limit)
    if inherited:
        v.warnings.append(f"{len(inherited)} canary batch(es) over max.message.bytes {max_bytes} whose original was "
                          f"over it already; the first: {inherited[0]}")


def _expected_changes(v: PartitionVerdict) -> None:
    s = v.source
    if s.torn_bytes:
        v.expected["bytes of a torn tail left out, as the broker's recovery truncates them"] = s.torn_bytes
    if s.left_out.count:
        k = s.left_out
        if k.records:
            v.expected["corrupt records left out by the run (skip_corrupt)"] = k.records
        if k.batches:
            v.expected["corrupt batches left out by the run (skip_corrupt)"] = k.batches
    if s.v0_records:
        v.expected["v0 records without a timestamp: timestamp -1, type CreateTime"] = s.v0_records
    if s.legacy_messages:
        v.expected["legacy per-message CRC-32 replaced by the v2 batch CRC-32C"] = s.legacy_messages
    if s.legacy_uncompressed:
        v.expected["uncompressed legacy messages rewritten as v2 batches"] = s.legacy_uncompressed
    if s.legacy_wrappers:
        v.expected["compressed legacy wrappers recompressed into v2 batches (same records, new bytes)"] = \
            s.legacy_wrappers
