"""Kafka's default-level lz4 blocks are lz4-java 1.8.0's fast compressor output; ours must be the same
bytes (tests/vectors/lz4_java/README.md says how the fixtures were made with lz4-java itself)."""

from __future__ import annotations

import lz4.block
import pytest

from kafkatool.record.codecs import LZ4_BLOCK, Codec, compress, decompress
from tests.support.paths import VECTORS

D = VECTORS / "lz4_java"


@pytest.mark.parametrize("name", ["records", "text", "ab"])
def test_frames_hold_lz4_java_blocks(name: str) -> None:
    raw = (D / f"{name}.bin").read_bytes()
    expected = (D / f"{name}.lz4").read_bytes()
    assert len(raw) <= LZ4_BLOCK
    frame = compress(Codec.LZ4, raw, magic=1)
    # Kafka frame: 7-byte header, one block [LE size][data], end mark.
    assert frame[7:11] == len(expected).to_bytes(4, "little")
    assert frame[11:11 + len(expected)] == expected
    assert lz4.block.decompress(expected, uncompressed_size=len(raw)) == raw


@pytest.mark.parametrize("data", [b"", b"a", b"abcdefghijkl", b"abcdefghijklm", b"x" * 13, bytes(range(256)) * 300])
def test_round_trip_through_kafka_frame(data: bytes) -> None:
    for magic in (0, 1, 2):
        assert decompress(Codec.LZ4, compress(Codec.LZ4, data, magic=magic), magic=magic) == data
