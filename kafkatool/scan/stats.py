"""The per-range figures of ``spark-scan`` and how they merge, and the observer that counts them batch by batch.

``BatchStats`` is a ``dump`` batch observer: ``dump``'s own walk (``kafkatool.dump``) hands it every batch it counts,
with the CRC verdict and the decoded records, and it adds up ``Stats``: records, batches, bytes on disk and
uncompressed, per (magic, codec), offset and timestamp ranges, out-of-order timestamps, CRC and decode failures,
the largest batch against ``max.message.bytes``, transactional/control batch counts, a distinct-key sketch and,
with key sharing on, per-hash-range loads. It also remembers the first and last record offsets the walk followed,
so the walks of consecutive ranges can be joined as one walk (``kafkatool.scan.engine``).

Definitions (all per segment, partition or topic):

* bytes: batch sizes including the 12-byte log overhead; uncompressed: Kafka's
  ``MemoryRecordsBuilder.uncompressedBytesWritten`` for the batch (v2: 61 + records area; legacy
  wrapper: wrapper header + inner entries; uncompressed batches: their size); undecodable batches
  count their stored size.
* records: as ``dump`` counts them: the decoded records, else a v2 batch's header count when its CRC holds, one
  for an uncompressed legacy entry; a legacy wrapper that does not decode leaves the count unknown
  (``unknown_record_batches``).
* timestamps: records with a timestamp >= 0 (v0 has none). Out of order: a record whose timestamp
  is below the previous such record's in offset order.
* CRC failures: batches whose stored checksum does not match (``isValid``), and legacy wrappers
  with an inner message whose own CRC fails. Decode failures: batches whose records do not decode. Where and
  why is in the walk's findings, which are ``dump``'s own.
* keys: of non-control records; ``distinct_keys`` is a HyperLogLog estimate (``kafkatool.scan.sketches``).
"""

from __future__ import annotations

import operator
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkatool._accel import speedups as _C
from kafkatool.constants import DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.record.batch import Record
from kafkatool.record.default_records import RECORD_BATCH_OVERHEAD
from kafkatool.record.estimator import batch_header_size
from kafkatool.record.file_records import RecordBatch
from kafkatool.scan.keyshare import hash64_many, slots_of_many
from kafkatool.scan.sketches import HotKeys, HyperLogLog

_KEY_FLUSH = 65536
# MemoryRecordsBuilder.uncompressedBytesWritten counts a legacy wrapper's header: log overhead + message overhead.
_WRAPPER_OVERHEAD = {0: batch_header_size(0, 1), 1: batch_header_size(1, 1)}
_size = operator.itemgetter(6)
_lt = operator.lt

@dataclass(slots=True)
class Stats:
    batches: int = 0
    records: int = 0
    bytes: int = 0
    uncompressed_bytes: int = 0
    formats: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # (magic, codec) -> [b, r, by, unc]
    first_offset: int | None = None
    last_offset: int | None = None
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    first_timestamp: int | None = None  # first/last record timestamps in offset order (for merging)
    last_timestamp: int | None = None
    out_of_order: int = 0
    crc_failures: int = 0
    decode_failures: int = 0
    largest_batch: int = 0
    largest_batch_position: tuple[str, int] | None = None
    oversized_batches: int = 0
    transactional_batches: int = 0
    control_batches: int = 0
    null_keys: int = 0
    unknown_record_batches: int = 0  # legacy wrappers whose records do not decode: dump's count is unknown
    hll: HyperLogLog | None = None

    @property
    def distinct_keys(self) -> int:
        return self.hll.estimate() if self.hll is not None else 0

    @property
    def compression_ratio(self) -> float:
        return self.uncompressed_bytes / self.bytes if self.bytes else 0.0

    @property
    def records_known(self) -> bool:
        return self.unknown_record_batches == 0

    def merge(self, o: Stats, *, sequential: bool) -> None:
        """Fold ``o`` in: ``sequential`` when ``o`` follows in offset order (same partition)."""
        self.batches += o.batches
        self.records += o.records
        self.bytes += o.bytes
        self.uncompressed_bytes += o.uncompressed_bytes
        for k, v in o.formats.items():
            mine = self.formats.setdefault(k, [0, 0, 0, 0])
            for i in range(4):
                mine[i] += v[i]
        self.first_offset = _min(self.first_offset, o.first_offset)
        self.last_offset = _max(self.last_offset, o.last_offset)
        self.min_timestamp = _min(self.min_timestamp, o.min_timestamp)
        self.max_timestamp = _max(self.max_timestamp, o.max_timestamp)
        self.out_of_order += o.out_of_order
        if sequential:
            if self.last_timestamp is not None and o.first_timestamp is not None \
                    and o.first_timestamp < self.last_timestamp:
                self.out_of_order += 1
            if self.first_timestamp is None:
                self.first_timestamp = o.first_timestamp
            if o.last_timestamp is not None:
                self.last_timestamp = o.last_timestamp
        else:
            self.first_timestamp = self.last_timestamp = None
        self.crc_failures += o.crc_failures
        self.decode_failures += o.decode_failures
        if o.largest_batch > self.largest_batch:
            self.largest_batch = o.largest_batch
            self.largest_batch_position = o.largest_batch_position
        self.oversized_batches += o.oversized_batches
        self.transactional_batches += o.transactional_batches
        self.control_batches += o.control_batches
        self.null_keys += o.null_keys
        self.unknown_record_batches += o.unknown_record_batches
        if o.hll is not None:
            if self.hll is None:
                self.hll = HyperLogLog(o.hll.registers.copy())
            else:
                self.hll.merge(o.hll)

    def copy(self) -> Stats:
        c = Stats()
        c.merge(self, sequential=True)
        return c


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


@dataclass(slots=True)
class KeyShareStats:
    """One partition's (or range's) records per hash range, for ``slots`` consumers sharing it."""

    slots: int
    slot_records: list[int]
    slot_bytes: list[int]
    null_records: int = 0
    null_bytes: int = 0
    keyed_records: int = 0
    keyed_bytes: int = 0
    murmur2_match: int = 0  # keyed records whose murmur2 partition is the one they are in
    crc32_match: int = 0  # ... whose librdkafka consistent (CRC32) partition is
    hot: HotKeys = field(default_factory=HotKeys)

    @classmethod
    def empty(cls, slots: int, capacity: int) -> KeyShareStats:
        return cls(slots, [0] * slots, [0] * slots, hot=HotKeys(capacity))

    def merge(self, o: KeyShareStats) -> None:
        if o.slots != self.slots:
            raise ValueError(f"cannot merge key-sharing stats of {o.slots} and {self.slots} ranges")
        for i in range(self.slots):
            self.slot_records[i] += o.slot_records[i]
            self.slot_bytes[i] += o.slot_bytes[i]
        self.null_records += o.null_records
        self.null_bytes += o.null_bytes
        self.keyed_records += o.keyed_records
        self.keyed_bytes += o.keyed_bytes
        self.murmur2_match += o.murmur2_match
        self.crc32_match += o.crc32_match
        self.hot.merge(o.hot)

    def copy(self) -> KeyShareStats:
        c = KeyShareStats.empty(self.slots, self.hot.capacity)
        c.merge(self)
        return c


@dataclass(frozen=True, slots=True)
class ShareTarget:
    """Key sharing of the partition being scanned: its hash ranges and its topic's partition count (0: unknown)."""

    slots: int
    partition: int
    topic_partitions: int
    hot_key_capacity: int = 64


# A batch sink hears (batch, crc_valid, records, more): each batch once with its records (or their first chunk),
# then ``more`` True with each further chunk of a batch of more records than a chunk holds.
BatchSink = Callable[[RecordBatch, bool, "list[Record] | None", bool], None]


class BatchStats:
    """A ``dump.BatchObserver``: adds up ``Stats`` (and key sharing) over the batches a walk counts."""

    def __init__(self, path: str, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 share: ShareTarget | None = None, sink: BatchSink | None = None) -> None:
        self.path = path
        self.max_message_bytes = max_message_bytes
        self.stats = Stats(hll=HyperLogLog())
        self.share = share
        self.keyshare = KeyShareStats.empty(share.slots, share.hot_key_capacity) if share is not None else None
        self.sink = sink  # also hears every batch (the record export)
        # The record offsets the walk followed: the first (with its batch's position) and the last.
        self.first_followed: tuple[int, int] | None = None
        self.last_followed: int | None = None
        self._keys: list[bytes] = []
        self._sizes: list[int] = []
        self._last_ts: int | None = None
        self._crc_failed = False  # the batch seen last counts as a CRC failure

    def batch(self, batch: RecordBatch, crc_valid: bool, records: list[Record] | None) -> None:
        st = self.stats
        recs = records
        size = batch.size
        pos = batch.position
        magic = batch.magic
        codec = batch.codec_id
        fm = st.formats.get((magic, codec))
        if fm is None:
            fm = st.formats[(magic, codec)] = [0, 0, 0, 0]
        if size > st.largest_batch:
            st.largest_batch = size
            st.largest_batch_position = (self.path, pos)
        if size > self.max_message_bytes:
            st.oversized_batches += 1
        control = batch.is_control
        if batch.is_transactional:
            st.transactional_batches += 1
        if control:
            st.control_batches += 1
        crc_ok = crc_valid
        v2 = magic >= 2
        if recs is None:
            st.decode_failures += 1
        elif crc_ok and not v2 and codec and any(r[8] is False for r in recs):
            crc_ok = False
        if not crc_ok:
            st.crc_failures += 1
        self._crc_failed = not crc_ok
        unc = size
        first_off = batch.base_offset if v2 else batch.last_offset
        if recs is not None:
            n = 0  # the records' part is counted by _records
        elif v2:
            n = (batch.records_count or 0) if crc_valid else 0
        elif not codec:
            n = 1
        else:
            n = 0
            st.unknown_record_batches += 1
        if recs:
            first_off = recs[0][0]
            if self.first_followed is None:
                self.first_followed = (pos, first_off)
            if codec:
                unc = RECORD_BATCH_OVERHEAD if v2 else _WRAPPER_OVERHEAD[magic]
        fm[0] += 1
        fm[1] += n
        fm[2] += size
        fm[3] += unc
        st.batches += 1
        st.records += n
        st.bytes += size
        st.uncompressed_bytes += unc
        if st.first_offset is None or first_off < st.first_offset:
            st.first_offset = first_off
        last_off = batch.last_offset
        if st.last_offset is None or last_off > st.last_offset:
            st.last_offset = last_off
        if recs:
            self._records(recs, fm, bool(codec), control)
        if self.sink is not None:
            self.sink(batch, crc_valid, records, False)

    def fast_state(self) -> tuple[Any, int, int, int] | None:
        """What the compiled walk needs to add up :meth:`batch`'s figures itself (``_speedups.dump_walk``'s
        ``scan``): the distinct-key registers, max.message.bytes, the largest batch and the last record timestamp
        so far (-1: none). None while key sharing or a sink needs each batch: the walk then hands every batch
        here."""
        if self.keyshare is not None or self.sink is not None:
            return None
        hll = self.stats.hll
        assert hll is not None
        return hll.registers, self.max_message_bytes, self.stats.largest_batch, \
            -1 if self._last_ts is None else self._last_ts

    def absorb(self, f: Any, max_last_offset: int) -> None:
        """The figures of a run of batches the compiled walk took (``ScanFigures``; ``max_last_offset``: the run's
        largest last offset): as if each had come through :meth:`batch`. Its keys are in the registers already."""
        st = self.stats
        for codec, (b, r, by, unc) in enumerate(f.formats):
            if b:
                fm = st.formats.setdefault((2, codec), [0, 0, 0, 0])
                fm[0] += b
                fm[1] += r
                fm[2] += by
                fm[3] += unc
                st.batches += b
                st.records += r
                st.bytes += by
                st.uncompressed_bytes += unc
        if f.largest_position >= 0:
            st.largest_batch = f.largest_batch
            st.largest_batch_position = (self.path, f.largest_position)
        st.oversized_batches += f.oversized
        st.transactional_batches += f.transactional
        st.null_keys += f.null_keys
        if f.first_followed is not None:
            if self.first_followed is None:
                self.first_followed = f.first_followed
            self.last_followed = f.last_followed
        if f.timestamps is not None:
            self._add_timestamps(*f.timestamps)
        if f.first_offset is not None and (st.first_offset is None or f.first_offset < st.first_offset):
            st.first_offset = f.first_offset
        if st.last_offset is None or max_last_offset > st.last_offset:
            st.last_offset = max_last_offset

    def more_records(self, batch: RecordBatch, crc_valid: bool, records: list[Record]) -> None:
        """A further chunk of the records of the batch :meth:`batch` saw last (a batch of more records than a chunk
        holds, read a chunk at a time): counted as if they had come with it."""
        codec = batch.codec_id
        fm = self.stats.formats[(batch.magic, codec)]
        if records:
            if not self._crc_failed and batch.magic < 2 and codec and any(r[8] is False for r in records):
                self.stats.crc_failures += 1  # a legacy wrapper's inner message failed its own CRC
                self._crc_failed = True
            self._records(records, fm, bool(codec), batch.is_control)
        if self.sink is not None:
            self.sink(batch, crc_valid, records, True)

    def _records(self, recs: Sequence[Any], fm: list[int], compressed: bool, control: bool) -> None:
        """The figures a batch's records (or a chunk of them) add: their count, uncompressed size (a compressed
        batch's records), timestamps and keys."""
        st = self.stats
        n = len(recs)
        fm[1] += n
        st.records += n
        self.last_followed = recs[-1][0]
        if _C is None or self.keyshare is not None or not self._fast_records(recs, fm, compressed, control):
            self._records_py(recs, fm, compressed, control)

    def _fast_records(self, recs: Sequence[Any], fm: list[int], compressed: bool, control: bool) -> bool:
        """:meth:`_records_py`'s figures from ``_speedups.record_stats`` (no key sharing): whether it took them."""
        st = self.stats
        assert _C is not None and st.hll is not None
        r = _C.record_stats(recs, st.hll.registers, -1 if self._last_ts is None else self._last_ts, compressed,
                            control)
        if r is None:
            return False
        unc, nulls, tss = r
        if compressed:
            fm[3] += unc
            st.uncompressed_bytes += unc
        st.null_keys += nulls
        if tss is not None:
            self._add_timestamps(*tss)
        return True

    def _add_timestamps(self, lo: int, hi: int, first: int, last: int, out_of_order: int) -> None:
        """The timestamp figures the compiled code returns for records that follow those seen so far: their
        smallest, largest, first and last timestamp >= 0 and how many were below the one before (the first
        compared with the last seen so far)."""
        st = self.stats
        st.out_of_order += out_of_order
        if st.first_timestamp is None:
            st.first_timestamp = first
        self._last_ts = last
        if st.min_timestamp is None or lo < st.min_timestamp:
            st.min_timestamp = lo
        if st.max_timestamp is None or hi > st.max_timestamp:
            st.max_timestamp = hi

    def _records_py(self, recs: Sequence[Any], fm: list[int], compressed: bool, control: bool) -> None:
        """:meth:`_records`' uncompressed size, timestamps and keys, record by record (with key sharing, and the
        reference of ``_speedups.record_stats``)."""
        st = self.stats
        if compressed:
            unc = sum(map(_size, recs))
            fm[3] += unc
            st.uncompressed_bytes += unc
        tss = [r[1] for r in recs]
        if min(tss) < 0:
            tss = [t for t in tss if t >= 0]
        if tss:
            if self._last_ts is not None and tss[0] < self._last_ts:
                st.out_of_order += 1
            if len(tss) > 1:
                st.out_of_order += sum(map(_lt, tss[1:], tss))
            if st.first_timestamp is None:
                st.first_timestamp = tss[0]
            self._last_ts = tss[-1]
            lo, hi = min(tss), max(tss)
            if st.min_timestamp is None or lo < st.min_timestamp:
                st.min_timestamp = lo
            if st.max_timestamp is None or hi > st.max_timestamp:
                st.max_timestamp = hi
        if not control:
            self._keys_of(recs)

    def _keys_of(self, recs: Sequence[Any]) -> None:  # keys are bytes once the None ones are out
        st, ks = self.stats, self.keyshare
        keys = [r[2] for r in recs]
        nulls = keys.count(None)
        if ks is None:
            if nulls:
                st.null_keys += nulls
                keys = [k for k in keys if k is not None]
            self._keys.extend(keys)
        else:
            if nulls:
                st.null_keys += nulls
                _null_keys(ks, recs)
                self._keys.extend(r[2] for r in recs if r[2] is not None)
                self._sizes.extend(r[6] for r in recs if r[2] is not None)
            else:
                self._keys.extend(keys)
                self._sizes.extend(map(_size, recs))
        if len(self._keys) >= _KEY_FLUSH:
            self.flush()

    def flush(self) -> Stats:
        """Hash the keys still pending; the figures are final after it."""
        if self._keys:
            _flush_keys(self.share, self.stats, self.keyshare, self._keys, self._sizes)
            self._keys = []
            self._sizes = []
        self.stats.last_timestamp = self._last_ts
        return self.stats


def _null_keys(ks: KeyShareStats, recs: Sequence[Any]) -> None:
    """Null keys cannot be hash-ranged: they go round-robin by offset over the partition's consumers."""
    k = ks.slots
    for r in recs:
        if r[2] is None:
            slot = r[0] % k
            ks.slot_records[slot] += 1
            ks.slot_bytes[slot] += r[6]
            ks.null_records += 1
            ks.null_bytes += r[6]


def _flush_keys(share: ShareTarget | None, st: Stats, ks: KeyShareStats | None, keys: list[bytes],
                sizes: list[int]) -> None:
    import numpy as np

    h32, h64 = hash64_many(keys)
    assert st.hll is not None
    st.hll.add_hashes(h64)
    if ks is None or share is None:
        return
    k = ks.slots
    slots = slots_of_many(h32, k)
    size_arr = np.asarray(sizes, dtype=np.int64)
    recs = np.bincount(slots, minlength=k)
    byts = np.zeros(k, dtype=np.int64)
    np.add.at(byts, slots, size_arr)
    for i in range(k):
        ks.slot_records[i] += int(recs[i])
        ks.slot_bytes[i] += int(byts[i])
    ks.keyed_records += len(keys)
    ks.keyed_bytes += int(size_arr.sum())
    parts = share.topic_partitions
    if parts > 0:
        positive = h32 & np.uint32(0x7FFFFFFF)
        ks.murmur2_match += int(np.count_nonzero(positive % np.uint32(parts) == share.partition))
        crc = np.fromiter(map(zlib.crc32, keys), dtype=np.uint32, count=len(keys))
        ks.crc32_match += int(np.count_nonzero(crc % np.uint32(parts) == share.partition))
    ks.hot.update(keys, size_arr, h64, h32)
