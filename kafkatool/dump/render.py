"""``kafkatool dump``'s ``text`` and ``json`` renderers (``dumplog_format`` has Kafka's format).

JSON lines, schema 1 (every object has ``"type"`` and ``"schema": 1``; documented in docs/dump.md):
``file``, ``batch``, ``record``, ``index_entry``, ``notice``, ``finding``, ``file_end``, ``summary``.
Lines are assembled from pre-escaped pieces rather than ``json.dumps`` of a dict per record: the record
line is the hot path of a deep dump (the output is the same compact JSON).

With a decoder option, records of non-control batches get ``key_decoded``/``value_decoded``: the texts the
decoder gives (JSON strings; null where Kafka's tool prints no ``key:``/``payload:``), and ``value_json``
when the decoder's value text is a JSON document (``cluster-metadata``: ``{"type":..,"version":..,"data":..}``,
the record's fields by name). ``key``/``value`` stay the raw bytes in the run's encoding, so schema 1 readers
see no change. Text and table views show the
decoded texts instead of the raw bytes.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from json.encoder import encode_basestring
from typing import IO, Any

from kafkatool import JSON_SCHEMA_VERSION
from kafkatool._accel import speedups as _C
from kafkatool.dump.control import describe_control
from kafkatool.dump.dumplog import entry_line
from kafkatool.dump.events import (
    BatchEvent,
    Event,
    FileEnd,
    FileStart,
    Finding,
    IndexEntryEvent,
    Notice,
    NoticeKind,
    RecordsEvent,
    Summary,
)
from kafkatool.dump.resync import batch_base_offset
from kafkatool.log.layout import parse_partition_dir_name
from kafkatool.record.batch import LOG_OVERHEAD
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.util.jsonl import escape_separators, json_line
from kafkatool.util.printable import shown
from kafkatool.util.units import TimestampFormatter, format_size

JsonValue = Callable[[bytes | None], str]
_SCHEMA = JSON_SCHEMA_VERSION
_JB = {True: "true", False: "false"}
_TS_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


def codec_label(codec_id: int) -> str:
    try:
        return Codec(codec_id).label
    except ValueError:
        return f"unknown({codec_id})"


def json_value_encoder(encoding: str) -> JsonValue:
    """Bytes -> a JSON token: a string in the chosen encoding, or ``null``. ``utf8`` replaces undecodable
    bytes with U+FFFD (lossy, as Kafka's StringDecoder); ``hex`` and ``base64`` are exact."""
    if encoding == "hex":
        return lambda b: "null" if b is None else f'"{b.hex()}"'
    if encoding == "base64":
        b64 = base64.b64encode
        return lambda b: "null" if b is None else f'"{b64(b).decode("ascii")}"'
    enc = encode_basestring
    return lambda b: "null" if b is None else str(enc(b.decode("utf-8", "replace")))


def _obj(kind: str, fields: dict[str, Any]) -> str:
    return json_line({"type": kind, "schema": _SCHEMA, **fields})


def partition_of(path: str) -> tuple[str | None, int | None]:
    """The topic and partition of a file, from the name of the partition dir it is in (None, None: not in one)."""
    parsed = parse_partition_dir_name(os.path.basename(os.path.dirname(os.path.abspath(path)))) if path != "-" else None
    return (parsed[0].topic, parsed[0].partition) if parsed else (None, None)


def batch_fields(ev: BatchEvent, decompress_limit: int | None) -> dict[str, Any]:
    b = ev.batch
    topic, partition = partition_of(ev.path)
    if type(b) is DefaultRecordBatch:
        h = b.h
        a = h.attributes
        return {"path": ev.path, "topic": topic, "partition": partition, "position": b.position,
                "base_offset": h.base_offset,
                "last_offset": h.base_offset + h.last_offset_delta, "magic": h.magic, "codec": codec_label(a & 7),
                "size": h.length + LOG_OVERHEAD, "crc": h.crc, "crc_valid": ev.crc_valid,
                "timestamp_type": "LogAppendTime" if a & 8 else "CreateTime", "max_timestamp": h.max_timestamp,
                "base_timestamp": h.base_timestamp, "producer_id": h.producer_id, "producer_epoch": h.producer_epoch,
                "base_sequence": h.base_sequence, "last_sequence": b.last_sequence,
                "is_transactional": bool(a & 0x10), "is_control": bool(a & 0x20),
                "partition_leader_epoch": h.partition_leader_epoch, "count": h.records_count,
                "delete_horizon_ms": h.base_timestamp if a & 0x40 else None}
    return {"path": ev.path, "topic": topic, "partition": partition, "position": b.position,
            "base_offset": batch_base_offset(ev, decompress_limit),
            "last_offset": b.last_offset, "magic": b.magic, "codec": codec_label(b.codec_id), "size": b.size,
            "crc": b.crc, "crc_valid": ev.crc_valid, "timestamp_type": b.timestamp_type.label,
            "max_timestamp": b.max_timestamp, "base_timestamp": None, "producer_id": -1, "producer_epoch": -1,
            "base_sequence": -1, "last_sequence": -1, "is_transactional": False, "is_control": False,
            "partition_leader_epoch": -1, "count": None, "delete_horizon_ms": None}


def _entry_fields(entry: object) -> dict[str, Any]:
    if is_dataclass(entry) and not isinstance(entry, type):
        return asdict(entry)
    raise TypeError(f"not an entry: {entry!r}")


class JsonWriter:
    def __init__(self, out: IO[str], *, encoding: str, decompress_limit: int | None, summary_only: bool = False,
                 file_ends: bool = False) -> None:
        self.out = out
        self.value = json_value_encoder(encoding)
        self.compiled = _C if encoding == "utf8" else None  # its record lines write keys and values as utf8 does
        self.limit = decompress_limit
        self.summary_only = summary_only
        self.file_ends = file_ends  # with summary_only: file_end objects too (a count's per-file numbers)
        self._where: tuple[str, str] = ("", "")  # (path, the record lines' "path","topic","partition" fields)

    def handle(self, ev: Event) -> None:
        t = type(ev)
        w = self.out.write
        if (self.summary_only and t is not Finding and t is not Notice and t is not Summary
                and not (self.file_ends and t is FileEnd)):
            return
        if t is BatchEvent:
            assert isinstance(ev, BatchEvent)
            lines = [_obj("batch", batch_fields(ev, self.limit))]
            if ev.records is not None:
                lines += self.record_lines(ev)
            lines.append("")
            w(escape_separators("\n".join(lines)))  # record lines are assembled by hand: escape them here
        elif t is RecordsEvent:
            assert isinstance(ev, RecordsEvent)
            lines = self.record_lines(ev)
            lines.append("")
            w(escape_separators("\n".join(lines)))
        elif t is FileStart:
            assert isinstance(ev, FileStart)
            f: dict[str, Any] = {"path": ev.path, "kind": ev.kind.value, "size": ev.size, "base_offset": ev.base_offset}
            if ev.snapshot_end_offset is not None:
                f["snapshot_end_offset"] = ev.snapshot_end_offset
                f["snapshot_epoch"] = ev.snapshot_epoch
            if ev.bootstrap:
                f["bootstrap"] = True
            w(_obj("file", f) + "\n")
        elif t is IndexEntryEvent:
            assert isinstance(ev, IndexEntryEvent)
            w(_obj("index_entry", {"path": ev.path, "kind": ev.kind.value, "slot": ev.slot,
                                   **_entry_fields(ev.entry)}) + "\n")
        elif t is Finding:
            assert isinstance(ev, Finding)
            w(_obj("finding", {"kind": ev.kind, "severity": ev.severity.value, "path": ev.path,
                               "position": ev.position, "offset": ev.offset, "message": ev.message, **ev.data}) + "\n")
        elif t is FileEnd:
            assert isinstance(ev, FileEnd)
            w(_obj("file_end", {"path": ev.path, "kind": ev.kind.value, "size": ev.size, "batches": ev.batches,
                                "records": ev.records, "entries": ev.entries, "valid_bytes": ev.valid_bytes,
                                "invalid_bytes": ev.invalid_bytes, "stopped": ev.stopped}) + "\n")
        elif t is Notice:
            assert isinstance(ev, Notice)
            w(_obj("notice", {"path": ev.path, "kind": ev.kind.value}) + "\n")
        elif t is Summary:
            assert isinstance(ev, Summary)
            w(_obj("summary", summary_fields(ev)) + "\n")

    def record_lines(self, ev: BatchEvent | RecordsEvent) -> list[str]:
        b = ev.batch
        enc = self.value
        hkey = encode_basestring
        is_v2 = type(b) is DefaultRecordBatch
        control = b.is_control
        out: list[str] = []
        append = out.append
        decoded = ev.decoded
        if self._where[0] != ev.path:
            topic, partition = partition_of(ev.path)
            self._where = (ev.path, f'"path":{json.dumps(ev.path, ensure_ascii=False)},"topic":'
                                    f'{json.dumps(topic, ensure_ascii=False)},"partition":{json.dumps(partition)},')
        where = self._where[1]
        records = ev.records or []
        head = f'{{"type":"record","schema":{_SCHEMA},{where}'  # every record line's start
        fast = None
        if self.compiled is not None and decoded is None and not control:
            # the compiled lines of the records without headers (the common case), these lines' exact text
            fast = self.compiled.json_record_lines(records, head, is_v2, enc)
        for i, r in enumerate(records):
            if fast is not None and fast[i] is not None:
                append(fast[i])
                continue
            key = r[2]
            value = r[3]
            if r[4]:
                headers = ",".join([f"[{hkey(h[0])},{enc(h[1])}]" for h in r[4]])
            else:
                headers = ""
            line = (f'{head}"offset":{r[0]},"timestamp":{r[1]},'
                    f'"size":{r[6]},"key_size":{-1 if key is None else len(key)},'
                    f'"value_size":{-1 if value is None else len(value)},"key":{enc(key)},"value":{enc(value)},'
                    f'"headers":[{headers}]')
            if is_v2:
                line += f',"sequence":{r[5]}'
            else:
                line += f',"crc":{r[7]},"crc_valid":{_JB[bool(r[8])]}'
            if decoded is not None:
                kt, vt = decoded[i]
                line += (f',"key_decoded":{"null" if kt is None else hkey(kt)}'
                         f',"value_decoded":{"null" if vt is None else hkey(vt)}')
                if getattr(vt, "is_json", False):  # a DecodedText that is a JSON document
                    line += f',"value_json":{vt}'  # the decoder's JSON document itself (cluster-metadata)
            if control:
                c = describe_control(key, value)
                line += ',"control":' + json.dumps(
                    {"type": c.name, "type_id": c.type_id, "coordinator_epoch": c.coordinator_epoch, "data": c.data,
                     "error": c.error}, separators=(",", ":"), ensure_ascii=False)
            append(line + "}")
        return out

    def close(self) -> None:
        pass


def summary_fields(s: Summary) -> dict[str, Any]:
    return {"files": s.files, "batches": s.batches, "records": s.records, "bytes": s.bytes,
            "invalid_batches": s.invalid_batches,
            "findings": {"error": s.errors, "warning": s.warnings, "info": s.infos}, "io_errors": s.io_errors,
            "first_offset": s.first_offset, "last_offset": s.last_offset, "max_timestamp": s.max_timestamp,
            "codecs": s.codecs, "magics": {str(k): v for k, v in s.magics.items()}, "entries": s.entries}


def _n(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def summary_text(s: Summary) -> str:
    recs = "?" if s.records is None else str(s.records)
    codecs = ", ".join(f"{k} {v}" for k, v in s.codecs.items()) or "-"
    offsets = "" if s.first_offset is None else f", offsets {s.first_offset}..{s.last_offset}"
    if s.entries:
        offsets += f", {_n(s.entries, 'entry', 'entries')}"
    return (f"{_n(s.files, 'file', 'files')}, {_n(s.batches, 'batch', 'batches')}, {recs} records, "
            f"{format_size(s.bytes)}{offsets}; "
            f"codecs: {codecs}; findings: {s.errors} errors, {s.warnings} warnings, {s.infos} info"
            + (f"; {s.io_errors} unreadable" if s.io_errors else ""))


# C0/C1 controls, DEL and the quote, escaped so a value cannot move the cursor or end the quoted string.
_ESCAPES = {**{chr(c): f"\\x{c:02x}" for c in range(0x20)}, **{chr(c): f"\\u{c:04x}" for c in range(0x7F, 0xA0)},
            "\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"'}
_NEEDS_ESCAPE = re.compile('[\x00-\x1f\x7f-\x9f"]')
_NEEDS_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f]')


def _escape(m: re.Match[str]) -> str:
    return _ESCAPES[m.group()]


def text_str(s: str) -> str:
    """A decoder's text for human eyes: control characters escaped so they cannot move the cursor; not quoted
    (decoders print JSON and Kafka's ``k=v`` texts, which quotes would only clutter)."""
    if s.isprintable():
        return s
    return _NEEDS_CONTROL.sub(_escape, s)


def decoded_parts(key: bytes | None, value: bytes | None, texts: tuple[str | None, str | None],
                  sep: str = " ") -> str:
    """``key <text> value <text>`` from a decoder's texts: a side the decoder did not print is left out, unless
    the record has no such bytes at all (then ``null``, as without a decoder). When the decoder printed neither
    (it failed: a ``decode-error`` finding says why), the sizes and ``(not decoded)``."""
    kt, vt = texts
    if kt is None and vt is None and (key is not None or value is not None):
        return (f"key{sep}{'null' if key is None else f'{len(key)}B'} "
                f"value{sep}{'null' if value is None else f'{len(value)}B'} (not decoded)")
    parts = []
    if kt is not None:
        parts.append(f"key{sep}{text_str(kt)}")
    elif key is None:
        parts.append(f"key{sep}null")
    if vt is not None:
        parts.append(f"value{sep}{text_str(vt)}")
    elif value is None:
        parts.append(f"value{sep}null")
    return " ".join(parts)


def text_bytes(b: bytes, encoding: str) -> str:
    """Keys and values for human eyes: hex/base64, or a double-quoted UTF-8 string in which quotes,
    backslashes and control characters are escaped and bytes that are not UTF-8 show as ``\\xNN``."""
    if encoding == "hex":
        return b.hex()
    if encoding == "base64":
        return base64.b64encode(b).decode("ascii")
    try:
        s = b.decode("utf-8")
        if s.isprintable() and '"' not in s and "\\" not in s:
            return f'"{s}"'
    except UnicodeDecodeError:
        pass
    # Doubling the backslashes first keeps the \\xNN of undecodable bytes unambiguous.
    return '"' + _NEEDS_ESCAPE.sub(_escape, b.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")) + '"'


class TextWriter:
    """A readable text dump: one line per batch (defaults left out), one per record, entries indented."""

    MAX_GAPS_SHOWN = 10

    def __init__(self, out: IO[str], err: Callable[[str], None], *, print_data: bool, encoding: str,
                 summary_only: bool = False) -> None:
        self.out = out
        self.err = err
        self.print_data = print_data
        self.encoding = encoding
        self.summary_only = summary_only
        self.gaps = 0
        self.ts = TimestampFormatter()  # ISO-8601 UTC with milliseconds

    def handle(self, ev: Event) -> None:
        t = type(ev)
        if t is BatchEvent:
            assert isinstance(ev, BatchEvent)
            lines = [self.batch_line(ev)]
            if ev.records is not None:
                lines += self.record_lines(ev)
            lines.append("")
            self.out.write("\n".join(lines))
        elif t is RecordsEvent:
            assert isinstance(ev, RecordsEvent)
            lines = self.record_lines(ev)
            lines.append("")
            self.out.write("\n".join(lines))
        elif t is FileStart:
            assert isinstance(ev, FileStart)
            self.gaps = 0
            extra = "" if ev.base_offset is None else f", base offset {ev.base_offset}"
            if ev.snapshot_end_offset is not None:
                extra += f", snapshot end offset {ev.snapshot_end_offset} epoch {ev.snapshot_epoch}"
            if not self.summary_only:
                self.out.write(f"== {shown(ev.path)} ({ev.kind.value}, {format_size(ev.size)}{extra})\n")
        elif t is IndexEntryEvent:
            assert isinstance(ev, IndexEntryEvent)
            self.out.write(f"  {entry_line(ev.kind, ev.entry)}\n")
        elif t is Finding:
            assert isinstance(ev, Finding)
            if ev.kind == "offset-gap":
                self.gaps += 1
                if self.gaps > self.MAX_GAPS_SHOWN:
                    return
            self.err(f"kafkatool: {ev}")
        elif t is FileEnd:
            assert isinstance(ev, FileEnd)
            if self.gaps > self.MAX_GAPS_SHOWN:
                self.err(f"kafkatool: info: offset-gap: {shown(ev.path)}: {self.gaps - self.MAX_GAPS_SHOWN} more "
                         "offset gaps not shown (the JSON lines list every one)")
            if self.summary_only:
                return
            if ev.kind.is_records:
                recs = "?" if ev.records is None else str(ev.records)
                tail = f", {ev.invalid_bytes} invalid bytes" if ev.invalid_bytes else ""
                stop = f", stopped at {ev.stopped}" if ev.stopped else ""
                self.out.write(f"-- {_n(ev.batches, 'batch', 'batches')}, {recs} records, {ev.valid_bytes} of "
                               f"{ev.size} bytes in batches{tail}{stop}\n")
            else:
                self.out.write(f"-- {_n(ev.entries, 'entry', 'entries')}\n")
        elif t is Notice:
            assert isinstance(ev, Notice)
            if ev.kind == NoticeKind.UNKNOWN_FILE:
                self.err(f"Ignoring unknown file {shown(ev.path)}")
            elif self.summary_only:
                return
            elif ev.kind == NoticeKind.INDEX_EMPTY:
                self.out.write("  (no entries)\n")
            else:
                self.out.write("  passed sanity check\n")

    def batch_line(self, ev: BatchEvent) -> str:
        b = ev.batch
        crc = "ok" if ev.crc_valid else f"BAD (stored {b.crc}, computed {b.compute_crc()})"
        if type(b) is DefaultRecordBatch:
            h = b.h
            a = h.attributes
            line = (f"@{b.position} offsets {h.base_offset}..{h.base_offset + h.last_offset_delta} "
                    f"count {h.records_count} v{h.magic} {codec_label(a & 7)} {h.length + LOG_OVERHEAD}B "
                    f"{'LogAppendTime' if a & 8 else 'CreateTime'} {self.ts(h.max_timestamp)} crc {crc}")
            if h.producer_id >= 0 or h.base_sequence >= 0:
                line += f" producer {h.producer_id} epoch {h.producer_epoch} seq {h.base_sequence}..{b.last_sequence}"
            if h.partition_leader_epoch >= 0:
                line += f" leaderEpoch {h.partition_leader_epoch}"
            if a & 0x10:
                line += " transactional"
            if a & 0x20:
                line += " control"
            if a & 0x40:
                line += f" deleteHorizon {self.ts(h.base_timestamp)}"
            return line
        base = ev.base_offset
        offsets = f"{base}..{b.last_offset}" if base is not None and base != b.last_offset else f"{b.last_offset}"
        return (f"@{b.position} offset {offsets} v{b.magic} {codec_label(b.codec_id)} {b.size}B "
                f"{b.timestamp_type.label} {self.ts(b.max_timestamp)} crc {crc}")

    def record_lines(self, ev: BatchEvent | RecordsEvent) -> list[str]:
        b = ev.batch
        control = b.is_control
        legacy = type(b) is not DefaultRecordBatch
        enc = self.encoding
        show = self.print_data
        decoded = ev.decoded
        out = []
        for i, r in enumerate(ev.records or ()):
            key, value = r[2], r[3]
            line = f"  {r[0]} {self.ts(r[1])}"
            if decoded is not None:
                line += " " + decoded_parts(key, value, decoded[i])
            elif control:
                c = describe_control(key, value)
                line += f" {c.name}"
                if c.coordinator_epoch is not None:
                    line += f" coordinatorEpoch {c.coordinator_epoch}"
                if c.data is not None:
                    line += " " + json.dumps(c.data, separators=(",", ":"))
                if c.error:
                    line += f" (undecodable: {c.error})"
            elif show:
                line += " key " + ("null" if key is None else text_bytes(key, enc))
                line += " value " + ("null" if value is None else text_bytes(value, enc))
            else:
                line += " key " + ("null" if key is None else f"{len(key)}B")
                line += " value " + ("null" if value is None else f"{len(value)}B")
            if r[4]:
                if show:
                    hs = ", ".join(f"{h[0]}: {'null' if h[1] is None else text_bytes(h[1], enc)}" for h in r[4])
                else:
                    hs = ", ".join(h[0] for h in r[4])
                line += " headers {" + hs + "}"
            if legacy and r[8] is False:
                line += f" crc BAD ({r[7]})"
            out.append(line)
        return out

    def close(self) -> None:
        pass

