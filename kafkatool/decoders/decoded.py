"""What a record decoder hands back beyond its text: that the text is a JSON document, and the problems the
walk reports as findings (a decoder prints what Kafka's tool prints, and kafkatool says more beside it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DecodeProblem:
    """Something a decoder met in a record that an operator should hear about, with the byte of the record's
    value (or key) where it is."""

    message: str
    position: int | None = None  # byte offset in the record value (key_side: in the key)
    key_side: bool = False

    def describe(self, offset: int) -> str:
        where = ""
        if self.position is not None:
            where = f" at byte {self.position} of its {'key' if self.key_side else 'value'}"
        return f"record at offset {offset}{where}: {self.message}"


class DecodedText(str):
    """A decoder's text (a plain ``str`` to every renderer) with two extras: ``is_json`` (the text is one JSON
    document: the JSON lines output embeds it as JSON) and ``problems`` (reported as ``decode-error`` findings)."""

    is_json: bool
    problems: tuple[DecodeProblem, ...]

    def __new__(cls, text: str, *, is_json: bool = False, problems: Iterable[DecodeProblem] = ()) -> DecodedText:
        self = super().__new__(cls, text)
        self.is_json = is_json
        self.problems = tuple(problems)
        return self


def problems_of(text: str | None) -> tuple[DecodeProblem, ...]:
    return text.problems if isinstance(text, DecodedText) else ()
