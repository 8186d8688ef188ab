"""Fuzz the __consumer_offsets and __transaction_state decoders and the FetchResponse parser: any key,
value or response bytes give Kafka's fallback text or a domain error, never another exception."""

from __future__ import annotations

import sys

import _common  # noqa: F401
import atheris

with atheris.instrument_imports():
    from kafkatool.decoders.offsets import decode_offsets_record
    from kafkatool.decoders.transactions import decode_transaction_record
    from kafkatool.errors import KafkaToolError
    from kafkatool.fetch.response import parse_response


def TestOneInput(data: bytes) -> None:
    if len(data) < 2:
        return
    which, split = data[0] % 3, data[1]
    body = data[2:]
    key, value = body[:split], body[split:] or None
    try:
        if which == 0:
            decode_offsets_record(key, value, 42)
        elif which == 1:
            decode_transaction_record(key, value, 42)
        else:
            parse_response(body, split % 4)
    except KafkaToolError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
