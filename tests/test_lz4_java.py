"""kafkatool.lz4_java against lz4-java 1.8.0's own blocks (tests/vectors/lz4_java/README.md)."""

from __future__ import annotations

import lz4.block
import pytest

from kafkatool.codecs import Codec, compress, decompress
from kafkatool.lz4_java import compress_block
from tests.conftest import VECTORS

D = VECTORS / "lz4_java"


@pytest.mark.parametrize("name", ["records", "text", "ab"])
def test_blocks_equal_lz4_java(name: str) -> None:
    raw = (D / f"{name}.bin").read_bytes()
    expected = (D / f"{name}.lz4").read_bytes()
    assert compress_block(raw) == expected
    assert lz4.block.decompress(expected, uncompressed_size=len(raw)) == raw


@pytest.mark.parametrize("data", [b"", b"a", b"abcdefghijkl", b"abcdefghijklm", b"x" * 13, bytes(range(256)) * 300])
def test_round_trip_through_kafka_frame(data: bytes) -> None:
    for magic in (0, 1, 2):
        assert decompress(Codec.LZ4, compress(Codec.LZ4, data, magic=magic), magic=magic) == data
