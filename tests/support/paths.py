"""Where the tests find the repository, its vectors, and Kafka's golden byte vectors."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
TESTS = ROOT / "tests"
VECTORS = TESTS / "vectors"
HOSTILE = TESTS / "hostile"


def golden() -> dict[str, bytes]:
    out = {}
    for line in (VECTORS / "kafka-3.9.1-golden.txt").read_text().splitlines():
        if "=" in line:
            name, hexdata = line.split("=", 1)
            try:
                out[name] = bytes.fromhex(hexdata)
            except ValueError:
                continue
    return out
