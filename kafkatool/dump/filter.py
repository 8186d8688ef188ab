"""``kafkatool dump``'s record filters, and the decoding of records for output.

Filters combine with AND; several ``control_types`` are an OR of their values. They come in two kinds:

* batch-level (``producer_id``, ``producer_epoch``, ``transactional``, and the control flag implied by
  ``control_types`` or by a key filter): decided from the batch header, so a batch that fails them is
  skipped without decompressing its records. v0/v1 entries have Kafka's defaults: producer id and epoch
  -1, not transactional, not control (``AbstractLegacyRecordBatch``).
* record-level (``control_types``, ``key``, ``key_regex``): the engine decodes the records of the batches
  left and keeps those that match; a batch with none left is not reported. Without a deep walk only the batch
  line is shown (its records were decoded to decide, not printed).

``key`` is the exact key bytes (the UTF-8 bytes of the text given). ``key_regex`` is searched
(``re.search``) in the key *as the run's key decoder prints it*: ``utf8`` by default, the key decoder's,
or the key text of a record decoder (for ``offsets``: ``{"type":"1","data":{"group":...}}``). Key filters
apply to data records: control batches never match them, and a null key never matches.

Decoding for output (a decoder option was given) happens here too, so that a decoder failing on a
record is a finding of the walk (``decode-error``) rather than a crash in a renderer. Control batches are
not decoded, as DumpLogSegments does not print their keys and values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkatool.errors import KafkaToolError, UsageError
from kafkatool.record.batch import ControlRecordType, Record
from kafkatool.record.default_records import parse_control_type_id

if TYPE_CHECKING:
    from kafkatool.decoders import MessageParser

#: control type names: ``ControlRecordType`` in lower case with dashes.
CONTROL_TYPES: dict[str, ControlRecordType] = {
    t.name.lower().replace("_", "-"): t for t in ControlRecordType if t is not ControlRecordType.UNKNOWN}

DecodedTexts = tuple[str | None, str | None]


@dataclass(frozen=True, slots=True)
class RecordFilter:
    producer_id: int | None = None
    producer_epoch: int | None = None
    transactional: bool | None = None
    control_types: frozenset[int] | None = None  # ControlRecordType ids
    key: bytes | None = None
    key_regex: re.Pattern[str] | None = None

    @staticmethod
    def build(*, producer_id: int | None = None, producer_epoch: int | None = None,
              transactional: bool | None = None, control_types: Iterable[str] | None = None,
              key: str | None = None, key_regex: str | None = None) -> RecordFilter | None:
        """The filter for the CLI's options (None when none is set); raises :class:`UsageError`."""
        types = None
        if control_types:
            ids = set()
            for name in control_types:
                t = CONTROL_TYPES.get(name.lower())
                if t is None:
                    raise UsageError(f"unknown control type {name!r}; one of: {', '.join(CONTROL_TYPES)}",
                                     field="control_type")
                ids.add(int(t))
            types = frozenset(ids)
        pattern = None
        if key_regex is not None:
            try:
                pattern = re.compile(key_regex)
            except re.error as e:
                raise UsageError(f"{key_regex!r} is not a valid regular expression: {e}", field="key_regex") from e
        f = RecordFilter(producer_id, producer_epoch, transactional, types,
                         None if key is None else key.encode("utf-8"), pattern)
        return f if f != RecordFilter() else None

    @property
    def on_records(self) -> bool:
        """Does deciding need the records (not only the batch header)?"""
        return self.control_types is not None or self.key is not None or self.key_regex is not None

    def batch_matches(self, producer_id: int, producer_epoch: int, transactional: bool, control: bool) -> bool:
        if self.producer_id is not None and producer_id != self.producer_id:
            return False
        if self.producer_epoch is not None and producer_epoch != self.producer_epoch:
            return False
        if self.transactional is not None and transactional != self.transactional:
            return False
        if self.control_types is not None and not control:
            return False
        return not (control and (self.key is not None or self.key_regex is not None))


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    record: Record
    error: KafkaToolError


class RecordSelector:
    """Per run: keeps the records of a batch that pass the record-level filters, and decodes them for output
    with ``parser`` (when set and ``decode`` is asked for)."""

    def __init__(self, flt: RecordFilter | None, parser: MessageParser | None) -> None:
        self.flt = flt
        self.parser = parser
        from kafkatool.decoders import resolve_parser  # a selector is made when records are filtered or decoded

        self.key_parser = parser if parser is not None else resolve_parser()

    def select(self, recs: list[Record], control: bool,
               decode: bool) -> tuple[list[Record], list[DecodedTexts] | None, list[DecodeFailure]]:
        flt = self.flt
        types = key = regex = None
        if flt is not None:
            types, key, regex = flt.control_types, flt.key, flt.key_regex
        parser = self.parser if decode and not control else None
        if types is None and key is None and regex is None and parser is None:
            return recs, None, []
        kept: list[Record] = []
        texts: list[DecodedTexts] | None = [] if parser is not None else None
        failures: list[DecodeFailure] = []
        for r in recs:
            if types is not None:
                try:
                    if parse_control_type_id(r.key) not in types:
                        continue
                except KafkaToolError:
                    continue  # an unparseable control key is no type (the record line says INVALID)
            if key is not None and r.key != key:
                continue
            pair: DecodedTexts | None = None
            if regex is not None:
                if r.key is None:
                    continue
                try:
                    if parser is not None:
                        pair = parser.parse(r)
                        key_text = pair[0]
                    else:
                        key_text = self.key_parser.parse_key(r)
                except KafkaToolError as e:
                    failures.append(DecodeFailure(r, e))
                    continue
                if key_text is None or regex.search(key_text) is None:
                    continue
            if texts is not None:
                if pair is None:
                    try:
                        pair = parser.parse(r)  # type: ignore[union-attr]
                    except KafkaToolError as e:
                        failures.append(DecodeFailure(r, e))
                        pair = (None, None)
                for text in pair:
                    from kafkatool.decoders import DecoderError, problems_of

                    for problem in problems_of(text):  # the decoder printed Kafka's text and has more to say
                        failures.append(DecodeFailure(r, DecoderError(problem.describe(r.offset))))
                texts.append(pair)
            kept.append(r)
        return kept, texts, failures
