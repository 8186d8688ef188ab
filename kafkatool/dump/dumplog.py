"""Kafka 3.9's ``kafka-dump-log.sh`` (``DumpLogSegments.scala``) output, line for line, from dump events; with
``kafka4``, 4.x's (``org.apache.kafka.tools.DumpLogSegments`` in kafka-tools, the Java port: LeaderChange
records decoded as `` LeaderChange: <json>``, no stray ``}`` on legacy record lines; the rest is the same).

Spec §8.2. The exact tokens, including Kafka's quirks:

* batch lines: v2 ``baseOffset: .. lastOffset: .. count: .. baseSequence: .. lastSequence: .. producerId: ..
  producerEpoch: .. partitionLeaderEpoch: .. isTransactional: .. isControl: .. deleteHorizonMs: OptionalLong..``,
  v0/v1 ``offset: <lastOffset>``; then `` position: P <TimestampType>: T size: S magic: M compresscodec: C crc: U
  isvalid: B``. Kafka's ``position`` is the sum of the sizes of the batches before (its ``validBytes``); we print
  the batch's file position, which is the same number unless a corrupt region was skipped (Kafka stops there).
* record lines: ``| offset: O <batch TimestampType>: T keySize: K valueSize: V``, v2 `` sequence: S headerKeys:
  [a,b]``, legacy `` isValid: true crc: C}`` (the stray ``}`` is in 3.9), control records (``dump_control``),
  then with print-data and non-control batches `` key: k`` / `` payload: v``. Without record metadata the
  line starts with ``| key:``, or `` payload:`` when the key is null (Kafka's ``prefix`` variable).
* after a ``.log``: ``Found N invalid bytes at the end of <name>`` (only without a max-bytes cut), where N counts
  every byte from where Kafka's ``FileLogInputStream`` stops (a size field past the end, or 17 bytes or fewer
  left) to the end of the file. Where kafkatool resumes after a corrupt region, Kafka's tool does not: batch
  lines stop at the region, the ``Found`` line counts from it, and only kafkatool's findings (stderr) say what
  follows. Where Kafka's reader throws instead (a size field below 14: zero padding, most garbage), its tool
  dies with a stack trace and prints no ``Found`` line; so does this writer (the finding says it on stderr).
* files Kafka's tool does not know: ``Dumping <path>`` then ``Ignoring unknown file <path>`` on stderr, also for
  ``partition.metadata``, ``meta.properties`` and ``.kafka_cleanshutdown``. A name without a ``.``
  (``leader-epoch-checkpoint``, ``*-offset-checkpoint``) makes 3.9's tool throw
  ``StringIndexOutOfBoundsException`` and abort; here a stderr line says so and the next file is dumped.
* summaries on stderr after all files: index ``Mismatches in :<abs path>`` (newest first: Kafka prepends to a
  Scala List), time index mismatch / out of order / not found (in order), ``Non-consecutive offsets in <abs>``
  (newest first). Kafka iterates hash maps across files; we keep file order.

Kafka's default decoder prints keys and values as UTF-8 strings (``StringDecoder``); undecodable bytes become
U+FFFD, one per malformed sequence as Java's ``new String(bytes, UTF_8)`` counts them
(``decoders.message.java_utf8``). With a decoder (a record decoder, or a key and a value decoder: Kafka's
``--offsets-decoder``, ``--transaction-log-decoder``, ``--key-decoder-class``...) the key and payload texts
are the run's ``MessageParser``'s, decoded by the engine into ``BatchEvent.decoded``: `` key:`` /
`` payload:`` are left out where the parser gives None, as Kafka's ``Option``s are.
"""

from __future__ import annotations

import base64
import os
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import IO

from kafkatool.dump.control import describe_control
from kafkatool.dump.events import (
    BatchEvent,
    EntryKind,
    Event,
    FileEnd,
    FileKind,
    FileStart,
    Finding,
    IndexEntryEvent,
    Notice,
    NoticeKind,
    OffsetCheckpointEntry,
    PropertyEntry,
    RecordsEvent,
    Severity,
)
from kafkatool.log.checkpoints import EpochEntry, PartitionMetadata
from kafkatool.log.index import OffsetPosition, TimestampOffset
from kafkatool.log.snapshot import ProducerSnapshotEntry
from kafkatool.log.txn_index import AbortedTxn
from kafkatool.record.batch import LOG_OVERHEAD, Record
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.record.file_records import RecordBatch
from kafkatool.util.printable import shown

Decoder = Callable[[bytes], str]
# Files DumpLogSegments 3.9 does not dump (it dispatches on the text after the last '.').
KAFKA_UNKNOWN_KINDS = frozenset({FileKind.LEADER_EPOCH_CHECKPOINT, FileKind.PARTITION_METADATA,
                                 FileKind.OFFSET_CHECKPOINT, FileKind.PROPERTIES, FileKind.CLEAN_SHUTDOWN,
                                 FileKind.QUORUM_STATE})
_TS_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
_BOOL = {True: "true", False: "false"}


def _codec_name(codec_id: int) -> str:
    try:
        return Codec(codec_id).label
    except ValueError:
        return f"unknown({codec_id})"


def make_decoder(encoding: str) -> Decoder:
    """``utf8`` (Kafka's StringDecoder), ``hex`` or ``base64`` for keys, values and header values."""
    if encoding == "hex":
        return bytes.hex
    if encoding == "base64":
        return lambda b: base64.b64encode(b).decode("ascii")
    from kafkatool.decoders import java_utf8  # the decoders load when a run decodes, not at every start

    return java_utf8


def optional_long(value: int | None) -> str:
    """Java's ``OptionalLong.toString()``."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def batch_line(batch: RecordBatch, crc_valid: bool) -> str:
    """``printBatchLevel``."""
    if type(batch) is DefaultRecordBatch:
        h = batch.h
        a = h.attributes
        base = h.base_offset
        seq = h.base_sequence
        last_seq = batch.last_sequence
        head = (f"baseOffset: {base} lastOffset: {base + h.last_offset_delta} count: {h.records_count} "
                f"baseSequence: {seq} lastSequence: {last_seq} producerId: {h.producer_id} "
                f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
                f"isTransactional: {_BOOL[bool(a & 0x10)]} isControl: {_BOOL[bool(a & 0x20)]} "
                f"deleteHorizonMs: {optional_long(h.base_timestamp if a & 0x40 else None)}")
        ts_name = "LogAppendTime" if a & 0x08 else "CreateTime"
        return (f"{head} position: {batch.position} {ts_name}: {h.max_timestamp} size: {h.length + LOG_OVERHEAD} "
                f"magic: {h.magic} "
                f"compresscodec: {_codec_name(a & 7)} crc: {h.crc} isvalid: {_BOOL[crc_valid]}")
    return (f"offset: {batch.last_offset} position: {batch.position} {batch.timestamp_type.label}: "
            f"{batch.max_timestamp} size: {batch.size} magic: {batch.magic} compresscodec: "
            f"{_codec_name(batch.codec_id)} crc: {batch.crc} isvalid: {_BOOL[crc_valid]}")


def record_lines(batch: RecordBatch, records: list[Record], *, print_data: bool, skip_metadata: bool,
                 decode: Decoder, decoded: Sequence[tuple[str | None, str | None]] | None = None,
                 kafka4: bool = False) -> list[str]:
    """The ``| offset: ...`` lines of ``dumpLog``'s deep iteration.

    ``decoded``: the (key, payload) texts of the run's parser, one pair per record (a decoder option); else
    each present key and value is ``decode``d (Kafka's ``DecoderMessageParser`` with the encoding's decoder).
    """
    is_v2 = type(batch) is DefaultRecordBatch
    ts_name = _TS_NAMES[int(batch.timestamp_type)]
    control = batch.is_control
    out: list[str] = []
    append = out.append
    for i, r in enumerate(records):
        key = r[2]
        value = r[3]
        if skip_metadata:
            line = ""
            prefix = "| "
        else:
            line = (f"| offset: {r[0]} {ts_name}: {r[1]} keySize: {-1 if key is None else len(key)} "
                    f"valueSize: {-1 if value is None else len(value)}")
            prefix = " "
            if is_v2:
                line += f" sequence: {r[5]} headerKeys: [{','.join([h[0] for h in r[4]])}]"
            else:
                # 3.9's Scala string has a stray '}' (s"... crc: ${r.checksum}}"); 4.x's Java port has not.
                line += f" isValid: {_BOOL[bool(r[8])]} crc: {r[7]}" + ("" if kafka4 else "}")
            if control:
                line += describe_control(key, value).dumplog_text(kafka4)
        if print_data and not control:
            if decoded is not None:
                key_text, payload = decoded[i]
                if key_text is not None:
                    line += f"{prefix}key: {key_text}"
                if payload is not None:
                    line += f" payload: {payload}"
            else:
                if key is not None:
                    line += f"{prefix}key: {decode(key)}"
                if value is not None:
                    line += f" payload: {decode(value)}"
        append(line)
    return out


def entry_line(kind: EntryKind, entry: object) -> str:
    """One line of an index, snapshot or checkpoint dump."""
    if isinstance(entry, OffsetPosition):
        return f"offset: {entry.offset} position: {entry.position}"
    if isinstance(entry, TimestampOffset):
        return f"timestamp: {entry.timestamp} offset: {entry.offset}"
    if isinstance(entry, AbortedTxn):
        return (f"version: {entry.version} producerId: {entry.producer_id} firstOffset: {entry.first_offset} "
                f"lastOffset: {entry.last_offset} lastStableOffset: {entry.last_stable_offset}")
    if isinstance(entry, ProducerSnapshotEntry):
        return snapshot_line(entry)
    # Not dumped by Kafka's tool (the dump-log writer leaves them out): the text view's lines, in the same style.
    if isinstance(entry, EpochEntry):
        return f"epoch: {entry.epoch} startOffset: {entry.start_offset}"
    if isinstance(entry, OffsetCheckpointEntry):
        return f"topic: {entry.topic} partition: {entry.partition} offset: {entry.offset}"
    if isinstance(entry, PartitionMetadata):
        return f"version: {entry.version} topicId: {entry.topic_id}"
    if isinstance(entry, PropertyEntry):
        return f"{entry.key}={entry.value}"
    raise TypeError(f"no dump-log line for {kind}")


def snapshot_line(e: ProducerSnapshotEntry) -> str:
    """``dumpProducerIdSnapshot`` (3.9: ``currentTxnFirstOffset`` is an ``OptionalLong``, empty when < 0;
    ``lastTimestamp`` is the entry's timestamp; the batch part only when lastOffset >= 0)."""
    txn = optional_long(e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None)
    line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {txn} lastTimestamp: {e.timestamp} ")
    if e.has_batch_metadata:
        line += (f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                 f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
    return line


def java_absolute_path(path: str) -> str:
    """``File.getAbsolutePath``: the working directory prepended, nothing normalised."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


class PairSpool:
    """Pairs of longs kept for a summary printed at the end (Kafka keeps them in memory): in a list up to
    ``max_memory`` pairs, then in a temporary file, so a heavily compacted log cannot exhaust memory."""

    _PAIR = struct.Struct(">qq")

    def __init__(self, max_memory: int = 100_000) -> None:
        self.mem: list[tuple[int, int]] = []
        self.max_memory = max_memory
        self.file: IO[bytes] | None = None
        self.spilled = 0

    def add(self, a: int, b: int) -> None:
        if len(self.mem) >= self.max_memory:
            if self.file is None:
                self.file = tempfile.TemporaryFile()
            self.file.write(b"".join(self._PAIR.pack(x, y) for x, y in self.mem))
            self.spilled += len(self.mem)
            self.mem.clear()
        self.mem.append((a, b))

    def __len__(self) -> int:
        return self.spilled + len(self.mem)

    def newest_first(self) -> Iterator[tuple[int, int]]:
        yield from reversed(self.mem)
        if self.file is not None:
            size = self._PAIR.size
            chunk = 4096
            n = self.spilled
            while n > 0:
                k = min(chunk, n)
                n -= k
                self.file.seek(n * size)
                data = self.file.read(k * size)
                yield from reversed(list(self._PAIR.iter_unpack(data)))

    def in_order(self) -> Iterator[tuple[int, int]]:
        if self.file is not None:
            self.file.seek(0)
            while data := self.file.read(4096 * self._PAIR.size):
                yield from self._PAIR.iter_unpack(data)
        yield from self.mem

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class DumpLogWriter:
    """Renders dump events as DumpLogSegments 3.9 prints them: data on ``out``, summaries via ``err``."""

    def __init__(self, out: IO[str], err: Callable[[str], None], *, print_data: bool, skip_record_metadata: bool,
                 decode: Decoder, max_bytes_set: bool, deep: bool, kafka4: bool = False) -> None:
        self.out = out
        self.err = err
        self.print_data = print_data
        self.skip_metadata = skip_record_metadata
        self.decode = decode
        self.max_bytes_set = max_bytes_set
        self.deep = deep
        self.kafka4 = kafka4  # kafka-dump-log.sh 4.x (org.apache.kafka.tools.DumpLogSegments) instead of 3.9's
        self.index_mismatches: dict[str, PairSpool] = {}
        self.time_mismatches: dict[str, PairSpool] = {}
        self.time_out_of_order: dict[str, PairSpool] = {}
        self.time_not_found: dict[str, PairSpool] = {}
        self.non_consecutive: dict[str, PairSpool] = {}
        self.halt: tuple[int, bool] | None = None  # (position, throws) where Kafka's reader stopped in this file
        self.ignoring = False  # a file Kafka's tool does not dump: no entry lines

    def handle(self, ev: Event) -> None:
        t = type(ev)
        if t is BatchEvent:
            assert isinstance(ev, BatchEvent)
            if self.halt is not None:
                return  # past a corrupt region: Kafka's tool stopped there
            lines = [batch_line(ev.batch, ev.crc_valid)]
            if ev.records is not None:
                lines += record_lines(ev.batch, ev.records, print_data=self.print_data,
                                      skip_metadata=self.skip_metadata, decode=self.decode, decoded=ev.decoded,
                                      kafka4=self.kafka4)
            lines.append("")
            self.out.write("\n".join(lines))
        elif t is RecordsEvent:
            assert isinstance(ev, RecordsEvent)
            if self.halt is None:
                lines = record_lines(ev.batch, ev.records, print_data=self.print_data,
                                     skip_metadata=self.skip_metadata, decode=self.decode, decoded=ev.decoded,
                                     kafka4=self.kafka4)
                lines.append("")
                self.out.write("\n".join(lines))
        elif t is IndexEntryEvent:
            assert isinstance(ev, IndexEntryEvent)
            if not self.ignoring:
                self.out.write(entry_line(ev.kind, ev.entry) + "\n")
        elif t is FileStart:
            assert isinstance(ev, FileStart)
            self.halt = None
            self.ignoring = ev.kind in KAFKA_UNKNOWN_KINDS
            self.out.write(f"Dumping {shown(ev.path)}\n")
            if self.ignoring:
                if "." in os.path.basename(ev.path):
                    self.err(f"Ignoring unknown file {shown(ev.path)}")
                else:
                    self.err(f"kafkatool: {shown(ev.path)}: kafka-dump-log.sh 3.9 aborts on a file name without a '.' "
                             "(StringIndexOutOfBoundsException); not dumped in this format")
            if ev.kind == FileKind.LOG and ev.base_offset is not None:
                self.out.write(f"Log starting offset: {ev.base_offset}\n")
            elif ev.kind == FileKind.KRAFT_SNAPSHOT:
                if ev.bootstrap:
                    self.out.write("KRaft bootstrap snapshot\n")
                elif ev.snapshot_end_offset is not None:
                    self.out.write(f"Snapshot end offset: {ev.snapshot_end_offset}, epoch: {ev.snapshot_epoch}\n")
        elif t is FileEnd:
            assert isinstance(ev, FileEnd)
            if ev.kind.is_records and not self.max_bytes_set:
                stop, throws = self.halt if self.halt is not None else (ev.reader_stop, ev.reader_throws)
                if stop is not None and not throws and ev.size > stop:
                    name = shown(os.path.basename(ev.path))
                    self.out.write(f"Found {ev.size - stop} invalid bytes at the end of {name}\n")
        elif t is Notice:
            assert isinstance(ev, Notice)
            if ev.kind == NoticeKind.INDEX_EMPTY:
                self.out.write(f"{shown(ev.path)} is empty.\n")
            elif ev.kind == NoticeKind.SANITY_PASSED:
                self.out.write(f"{shown(ev.path)} passed sanity check.\n")
            else:
                self.err(f"Ignoring unknown file {shown(ev.path)}")
        elif t is Finding:
            assert isinstance(ev, Finding)
            self._finding(ev)

    def _spool(self, table: dict[str, PairSpool], path: str) -> PairSpool:
        key = java_absolute_path(path)
        spool = table.get(key)
        if spool is None:
            spool = table[key] = PairSpool()
        return spool

    def _finding(self, f: Finding) -> None:
        k = f.kind
        d = f.data
        if k == "corrupt-region" and self.halt is None and f.position is not None:
            self.halt = (f.position, d.get("kafka_reader") == "throws")
        if k == "index-mismatch":
            self._spool(self.index_mismatches, f.path).add(d["index_offset"], d["log_offset"])
        elif k == "time-index-mismatch":
            self._spool(self.time_mismatches, f.path).add(d["index_timestamp"], d["log_timestamp"])
        elif k == "time-index-out-of-order":
            self._spool(self.time_out_of_order, f.path).add(d["index_timestamp"], d["previous_timestamp"])
        elif k == "time-index-offset-not-found":
            self._spool(self.time_not_found, f.path).add(d["index_offset"], d["log_offset"])
        elif k in ("offset-gap", "offset-order") and self.halt is None:
            if self.deep:  # DumpLogSegments follows record offsets only in deep iteration
                self._spool(self.non_consecutive, f.path).add(d["previous"], d["next"])
            elif k == "offset-order":
                self.err(f"kafkatool: {f}")
        elif k == "snapshot-corrupt":
            self.err(f.message)
        elif f.severity != Severity.INFO:  # kafkatool's own findings; info ones stay out of Kafka's stderr
            self.err(f"kafkatool: {f}")

    def close(self) -> None:
        err = self.err
        for path, spool in self.index_mismatches.items():
            err(f"Mismatches in :{shown(path)}")
            for a, b in spool.newest_first():
                err(f"  Index offset: {a}, log offset: {b}")
        for path, spool in self.time_mismatches.items():
            err(f"Found timestamp mismatch in :{shown(path)}")
            for a, b in spool.in_order():
                err(f"  Index timestamp: {a}, log timestamp: {b}")
        for path, spool in self.time_out_of_order.items():
            err(f"Found out of order timestamp in :{shown(path)}")
            for a, b in spool.in_order():
                err(f"  Index timestamp: {a}, Previously indexed timestamp: {b}")
        for spool in self.time_not_found.values():
            err("The following indexed offsets are not found in the log.")
            for a, b in spool.in_order():
                err(f"Indexed offset: {a}, found log offset: {b}")
        for path, spool in self.non_consecutive.items():
            err(f"Non-consecutive offsets in {shown(path)}")
            for a, b in spool.newest_first():
                err(f"  {a} is followed by {b}")
        for table in (self.index_mismatches, self.time_mismatches, self.time_out_of_order, self.time_not_found,
                      self.non_consecutive):
            for spool in table.values():
                spool.close()
