"""Record decoders: how ``dump`` turns a record's key and value bytes into text.

Kafka's ``DumpLogSegments`` has a ``MessageParser`` per run: either a key and a value ``Decoder`` applied
to each side (``--key-decoder-class``/``--value-decoder-class``, default ``StringDecoder``), or a parser
for a whole record of an internal topic (``--offsets-decoder``, ``--transaction-log-decoder``). kafkatool
keeps that split:

* bytes decoders (one side): ``utf8`` (Kafka's ``StringDecoder``: UTF-8, malformed input replaced by
  U+FFFD), ``hex``, ``base64``, ``json`` (valid UTF-8 JSON re-serialised on one line, otherwise a
  one-line ``<not JSON: ...>`` marker);
* record decoders (both sides at once): ``offsets`` (``__consumer_offsets``, see :mod:`.offsets`),
  ``transactions`` (``__transaction_state``, see :mod:`.transactions`) and ``cluster-metadata`` (KRaft's
  ``__cluster_metadata``, see :mod:`.cluster_metadata`), ``remote-log-metadata`` (tiered storage's
  ``__remote_log_metadata``, :mod:`.remote_log`) and ``share-group-state`` (4.x ``__share_group_state``,
  :mod:`.share_state`); each picked by :func:`auto_decoder` for its topic's partition dirs;
* plugins: entry points in the group ``kafkatool.decoders``. The loaded object (a class is instantiated
  with no arguments) is a record decoder if it has ``decode_record(key, value, record)`` or is a plain
  callable ``(key, value, record) -> (key_text, value_text)``, and a bytes decoder if it has
  ``decode(data) -> str``. Built-in names cannot be shadowed.

:func:`resolve_parser` builds the per-run parser; its :meth:`MessageParser.parse` returns the
``(key, payload)`` texts to print, ``None`` meaning "not printed" as in Kafka.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Protocol, runtime_checkable

from kafkatool.decoders.cluster_metadata import (
    METADATA_PARTITION_DIR,
    METADATA_TOPIC,
    FramedMessage,
    MetadataParseError,
    decode_cluster_metadata_record,
    metadata_definition,
    metadata_types,
    read_metadata_record,
    record_type_name,
    uuid_text,
    write_metadata_record,
)
from kafkatool.decoders.decoded import DecodedText, DecodeProblem, problems_of
from kafkatool.decoders.kraft_control import ControlMessage, read_control_value
from kafkatool.decoders.message import MessageError, java_utf8
from kafkatool.decoders.offsets import (
    GROUP_METADATA_TOPIC,
    decode_offsets_record,
    offset_commit_key,
    offset_commit_value,
    partition_for_group,
)
from kafkatool.decoders.remote_log import REMOTE_LOG_METADATA_TOPIC, decode_remote_log_metadata_record
from kafkatool.decoders.schema import kafka_versions, resolve_kafka_version
from kafkatool.decoders.share_state import SHARE_GROUP_STATE_TOPIC, decode_share_state_record
from kafkatool.decoders.transactions import decode_transaction_record
from kafkatool.errors import ExitCode, KafkaToolError, UsageError
from kafkatool.record.batch import Record

ENTRY_POINT_GROUP = "kafkatool.decoders"

__all__ = [
    "GROUP_METADATA_TOPIC", "METADATA_PARTITION_DIR", "METADATA_TOPIC", "BytesDecoder", "ControlMessage",
    "DecodeProblem", "DecodedText", "DecoderError", "ENTRY_POINT_GROUP", "FramedMessage", "MessageError",
    "MessageParser", "MetadataParseError", "RecordDecoder", "auto_decoder", "available_decoders", "bytes_decoder",
    "java_utf8", "kafka_versions", "metadata_definition", "metadata_types", "offset_commit_key",
    "offset_commit_value", "partition_for_group", "problems_of", "read_control_value", "read_metadata_record",
    "record_decoder", "record_type_name", "resolve_kafka_version", "resolve_parser", "uuid_text",
    "write_metadata_record",
]


@runtime_checkable
class BytesDecoder(Protocol):
    """Decodes one side of a record (its key or its value); Kafka's ``org.apache.kafka.tools.api.Decoder``."""

    def decode(self, data: bytes) -> str: ...


@runtime_checkable
class RecordDecoder(Protocol):
    """Decodes a whole record: returns (key text, value text); None leaves that part out of the line."""

    def decode_record(self, key: bytes | None, value: bytes | None,
                      record: Record) -> tuple[str | None, str | None]: ...


class DecoderError(KafkaToolError):
    """A decoder failed on a record (Kafka would stop the dump; kafkatool reports it and goes on)."""

    exit_code = ExitCode.FINDINGS


@dataclass(frozen=True, slots=True)
class _FunctionBytesDecoder:
    func: Callable[[bytes], str]

    def decode(self, data: bytes) -> str:
        return self.func(data)


@dataclass(frozen=True, slots=True)
class _FunctionRecordDecoder:
    func: Callable[[bytes | None, bytes | None, Record], tuple[str | None, str | None]]

    def decode_record(self, key: bytes | None, value: bytes | None,
                      record: Record) -> tuple[str | None, str | None]:
        return self.func(key, value, record)


def _utf8(data: bytes) -> str:
    return java_utf8(data)


def _json(data: bytes) -> str:
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        return f"<not JSON: invalid UTF-8 at byte {e.start}, {len(data)} bytes>"
    except json.JSONDecodeError as e:
        return f"<not JSON: {e.msg} at byte {e.pos}, {len(data)} bytes>"
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


BUILTIN_BYTES_DECODERS: dict[str, BytesDecoder] = {
    "utf8": _FunctionBytesDecoder(_utf8),
    "hex": _FunctionBytesDecoder(lambda data: data.hex()),
    "base64": _FunctionBytesDecoder(lambda data: base64.b64encode(data).decode("ascii")),
    "json": _FunctionBytesDecoder(_json),
}
BUILTIN_RECORD_DECODERS: dict[str, RecordDecoder] = {
    "offsets": _FunctionRecordDecoder(lambda k, v, r: decode_offsets_record(k, v, r.offset)),
    "transactions": _FunctionRecordDecoder(lambda k, v, r: decode_transaction_record(k, v, r.offset)),
    "cluster-metadata": _FunctionRecordDecoder(lambda k, v, r: decode_cluster_metadata_record(k, v, r.offset)),
    "remote-log-metadata": _FunctionRecordDecoder(
        lambda k, v, r: decode_remote_log_metadata_record(k, v, r.offset)),
    "share-group-state": _FunctionRecordDecoder(lambda k, v, r: decode_share_state_record(k, v, r.offset)),
}

# The internal topics whose records only one decoder reads: dumping their partition dirs picks it when no
# decoder option is given (topic name -> decoder name).
AUTO_DECODERS = {
    METADATA_TOPIC: "cluster-metadata",
    REMOTE_LOG_METADATA_TOPIC: "remote-log-metadata",
    SHARE_GROUP_STATE_TOPIC: "share-group-state",
}


def auto_decoder(partition_dir_name: str) -> str | None:
    """The decoder a partition dir's records get without a decoder option (``__cluster_metadata-0``:
    ``cluster-metadata``), or None (Kafka's default, utf8)."""
    topic, sep, partition = partition_dir_name.rpartition("-")
    if not sep or not partition.isdigit():
        return None
    return AUTO_DECODERS.get(topic)


def _plugins() -> dict[str, EntryPoint]:
    builtins = BUILTIN_BYTES_DECODERS.keys() | BUILTIN_RECORD_DECODERS.keys()
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in builtins}


def available_decoders() -> dict[str, str]:
    """Every decoder name and its kind (``bytes``, ``record`` or ``plugin``), without loading plugins."""
    names = {n: "bytes" for n in BUILTIN_BYTES_DECODERS} | {n: "record" for n in BUILTIN_RECORD_DECODERS}
    return names | {n: f"plugin ({ep.value})" for n, ep in sorted(_plugins().items())}


def _load_plugin(name: str) -> BytesDecoder | RecordDecoder:
    ep = _plugins().get(name)
    if ep is None:
        raise UsageError(f"unknown decoder {name!r}; available: {', '.join(available_decoders())}")
    try:
        obj = ep.load()
        if isinstance(obj, type):
            obj = obj()
    except Exception as e:  # a broken plugin is a usage problem of this run, not a crash
        raise UsageError(f"decoder plugin {name!r} ({ep.value}) failed to load: {type(e).__name__}: {e}") from e
    if isinstance(obj, RecordDecoder) or isinstance(obj, BytesDecoder):
        return obj
    if callable(obj):
        return _FunctionRecordDecoder(obj)
    raise UsageError(f"decoder plugin {name!r} ({ep.value}) is neither a decode_record/decode object nor a callable")


def bytes_decoder(name: str, field: str = "key_decoder") -> BytesDecoder:
    """A decoder of one side, keys or values (``field``: the request field that names it, for errors)."""
    found = BUILTIN_BYTES_DECODERS.get(name)
    if found is not None:
        return found
    if name in BUILTIN_RECORD_DECODERS:
        raise UsageError(f"{name!r} decodes whole records: use it as the record decoder, not for one side",
                         field=field)
    plugin = _load_plugin(name)
    if not isinstance(plugin, BytesDecoder):
        raise UsageError(f"decoder plugin {name!r} decodes whole records (no decode(data)): use it as the record "
                         "decoder", field=field)
    return plugin


def record_decoder(name: str) -> RecordDecoder:
    """A decoder of whole records: a record decoder, or a bytes decoder applied to both key and value."""
    found = BUILTIN_RECORD_DECODERS.get(name)
    if found is not None:
        return found
    if name in BUILTIN_BYTES_DECODERS:
        return _BothSides(BUILTIN_BYTES_DECODERS[name], BUILTIN_BYTES_DECODERS[name])
    plugin = _load_plugin(name)
    if isinstance(plugin, RecordDecoder):
        return plugin
    return _BothSides(plugin, plugin)


@dataclass(frozen=True, slots=True)
class _BothSides:
    """``DecoderMessageParser``: the key decoder on a present key, the value decoder on a present value."""

    key: BytesDecoder
    value: BytesDecoder

    def decode_record(self, key: bytes | None, value: bytes | None,
                      record: Record) -> tuple[str | None, str | None]:
        return (None if key is None else self.key.decode(key),
                None if value is None else self.value.decode(value))


@dataclass(frozen=True, slots=True)
class MessageParser:
    """One run's ``MessageParser``: turns a record into the (key, payload) texts dump prints."""

    name: str
    decoder: RecordDecoder

    def parse(self, record: Record) -> tuple[str | None, str | None]:
        """Raises :class:`DecoderError` (or the decoder's own :class:`KafkaToolError`) when decoding fails."""
        try:
            key, value = self.decoder.decode_record(record.key, record.value, record)
        except KafkaToolError:
            raise
        except Exception as e:  # a plugin's bug must not take the dump down with a traceback
            raise self._failed(record, e) from e
        if (key is not None and not isinstance(key, str)) or (value is not None and not isinstance(value, str)):
            raise DecoderError(f"decoder {self.name!r} returned {type(key).__name__}/{type(value).__name__} "
                               f"for the record at offset {record.offset}; expected str or None")
        return key, value

    def parse_key(self, record: Record) -> str | None:
        """The key text alone: only the key decoder runs when the parser has one per side (a value the value
        decoder cannot read does not matter to a key filter)."""
        d = self.decoder
        if not isinstance(d, _BothSides):
            return self.parse(record)[0]
        if record.key is None:
            return None
        try:
            key = d.key.decode(record.key)
        except KafkaToolError:
            raise
        except Exception as e:
            raise self._failed(record, e) from e
        if not isinstance(key, str):
            raise DecoderError(f"decoder {self.name!r} returned {type(key).__name__} for the key of the record at "
                               f"offset {record.offset}; expected str")
        return key

    def _failed(self, record: Record, e: Exception) -> DecoderError:
        return DecoderError(f"decoder {self.name!r} failed on the record at offset {record.offset}: "
                            f"{type(e).__name__}: {e}")


def resolve_parser(decoder: str | None = None, key_decoder: str | None = None,
                   value_decoder: str | None = None) -> MessageParser:
    """The parser for a record ``decoder`` or a ``key_decoder``/``value_decoder`` pair (default ``utf8`` both
    sides)."""
    if decoder is not None:
        if key_decoder is not None or value_decoder is not None:
            raise UsageError("decodes whole records; it cannot be combined with a key or value decoder",
                             field="decoder")
        return MessageParser(decoder, record_decoder(decoder))
    k = key_decoder or "utf8"
    v = value_decoder or "utf8"
    return MessageParser(k if k == v else f"{k}/{v}", _BothSides(bytes_decoder(k, "key_decoder"),
                                                                 bytes_decoder(v, "value_decoder")))
