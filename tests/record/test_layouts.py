"""The header layouts of kafkatool/record/: each field's offset, derived with struct.calcsize, is where Kafka puts
that field (the constants of Records.java, DefaultRecordBatch.java and LegacyRecord.java, 3.9), and reading a
batch written by the builders at those offsets gives back what was written."""

from __future__ import annotations

import struct

from kafkatool import constants
from kafkatool.record import batch as common
from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import iter_batches

# Kafka 3.9's own figures, copied from its sources (not from ours).
KAFKA_RECORDS = {"OFFSET_OFFSET": 0, "SIZE_OFFSET": 8, "LOG_OVERHEAD": 12, "MAGIC_OFFSET": 16,
                 "HEADER_SIZE_UP_TO_MAGIC": 17}
KAFKA_DEFAULT_RECORD_BATCH = {
    "BASE_OFFSET_OFFSET": 0, "LENGTH_OFFSET": 8, "PARTITION_LEADER_EPOCH_OFFSET": 12, "MAGIC_OFFSET": 16,
    "CRC_OFFSET": 17, "ATTRIBUTES_OFFSET": 21, "LAST_OFFSET_DELTA_OFFSET": 23, "BASE_TIMESTAMP_OFFSET": 27,
    "MAX_TIMESTAMP_OFFSET": 35, "PRODUCER_ID_OFFSET": 43, "PRODUCER_EPOCH_OFFSET": 51, "BASE_SEQUENCE_OFFSET": 53,
    "RECORDS_COUNT_OFFSET": 57, "RECORDS_OFFSET": 61, "RECORD_BATCH_OVERHEAD": 61,
}
KAFKA_LEGACY_RECORD = {"CRC_OFFSET": 0, "MAGIC_OFFSET": 4, "ATTRIBUTES_OFFSET": 5, "TIMESTAMP_OFFSET": 6,
                       "KEY_SIZE_OFFSET_V0": 6, "KEY_SIZE_OFFSET_V1": 14, "HEADER_SIZE_V0": 6, "HEADER_SIZE_V1": 14,
                       "RECORD_OVERHEAD_V0": 14, "RECORD_OVERHEAD_V1": 22}


def test_offsets_are_kafkas() -> None:
    for module, kafka in ((common, KAFKA_RECORDS), (v2, KAFKA_DEFAULT_RECORD_BATCH), (legacy, KAFKA_LEGACY_RECORD)):
        assert {name: getattr(module, name) for name in kafka} == kafka, module.__name__


def test_v2_offsets_read_the_fields_written() -> None:
    """Every field of a v2 batch built with distinct values, read at its offset with its own type."""
    data = v2.build_batch([(1000, 1_700_000_000_000, b"k", b"v", ()), (1002, 1_700_000_000_500, None, b"w", ())],
                          codec=Codec.GZIP, producer_id=77, producer_epoch=5, base_sequence=9, is_transactional=True,
                          partition_leader_epoch=3)
    (b,) = iter_batches(data)
    assert isinstance(b, v2.DefaultRecordBatch)
    want = {"BASE_OFFSET_OFFSET": ("q", 1000), "LENGTH_OFFSET": ("i", len(data) - common.LOG_OVERHEAD),
            "PARTITION_LEADER_EPOCH_OFFSET": ("i", 3), "MAGIC_OFFSET": ("b", 2), "CRC_OFFSET": ("I", b.compute_crc()),
            "ATTRIBUTES_OFFSET": ("h", int(Codec.GZIP) | v2.TRANSACTIONAL_FLAG_MASK),
            "LAST_OFFSET_DELTA_OFFSET": ("i", 2), "BASE_TIMESTAMP_OFFSET": ("q", 1_700_000_000_000),
            "MAX_TIMESTAMP_OFFSET": ("q", 1_700_000_000_500), "PRODUCER_ID_OFFSET": ("q", 77),
            "PRODUCER_EPOCH_OFFSET": ("h", 5), "BASE_SEQUENCE_OFFSET": ("i", 9), "RECORDS_COUNT_OFFSET": ("i", 2)}
    for name, (code, value) in want.items():
        assert struct.unpack_from(">" + code, data, getattr(v2, name))[0] == value, name
    # the named header holds the same fields, in HEADER's order
    assert len(v2.BatchHeader._fields) == len(v2.HEADER.unpack_from(data))
    h = v2.read_header(data, 0)
    assert h == v2.HEADER.unpack_from(data) and b.h == h
    assert (h.base_offset, h.length, h.partition_leader_epoch, h.magic, h.crc, h.last_offset_delta, h.producer_id,
            h.producer_epoch, h.base_sequence, h.records_count) == (
        1000, len(data) - common.LOG_OVERHEAD, 3, 2, b.compute_crc(), 2, 77, 5, 9, 2)
    assert data[v2.RECORDS_OFFSET:] == data[v2.RECORD_BATCH_OVERHEAD:] and b.records()[1].value == b"w"


def test_legacy_offsets_read_the_fields_written() -> None:
    """v0 and v1 messages: the message-relative offsets and the entry-relative ones read what was written."""
    for magic, layout in ((0, legacy.MESSAGE_HEADER_V0), (1, legacy.MESSAGE_HEADER_V1)):
        message = legacy.encode_message(magic, 0x08 if magic else 0, 1_700_000_000_123 if magic else -1, b"key",
                                        b"value")
        entry = legacy.encode_entry(42, message)
        fields = layout.unpack_from(message)
        assert fields[0] == struct.unpack_from(">I", message, legacy.CRC_OFFSET)[0]
        assert fields[1] == message[legacy.MAGIC_OFFSET] == entry[common.MAGIC_OFFSET] == magic
        assert fields[2] == message[legacy.ATTRIBUTES_OFFSET] == entry[legacy.ENTRY_ATTRIBUTES_OFFSET]
        assert fields[-1] == 3  # the key length, just before the key
        key_at = legacy.KEY_SIZE_OFFSET_V1 if magic else legacy.KEY_SIZE_OFFSET_V0
        assert message[key_at + 4:key_at + 7] == b"key" and layout.size == key_at + 4
        assert struct.unpack_from(">I", entry, legacy.ENTRY_CRC_OFFSET)[0] == fields[0]
        if magic:
            assert struct.unpack_from(">q", entry, legacy.ENTRY_TIMESTAMP_OFFSET)[0] == 1_700_000_000_123
            assert struct.unpack_from(">q", message, legacy.TIMESTAMP_OFFSET)[0] == fields[3]
        (b,) = iter_batches(entry)
        assert isinstance(b, legacy.LegacyRecordBatch)
        assert (b.offset, b.length, b.crc, b.magic) == legacy.ENTRY_HEADER.unpack_from(entry)[:4]
        assert b.ensure_valid() is None
        # the writers' heads are the header without its crc: what the CRC covers, up to the key
        head = legacy.HEAD_V1 if magic else legacy.HEAD_V0
        assert message[legacy.MAGIC_OFFSET:legacy.MAGIC_OFFSET + head.size] == head.pack(*fields[1:])


def test_log_entry_prefix_is_read_alike_in_every_format() -> None:
    for data in (v2.build_batch([(7, 0, None, b"x", ())]), legacy.encode_entry(7, legacy.encode_message(1, 0, 0, None,
                                                                                                       b"x"))):
        offset, size, magic = common.LOG_ENTRY_PREFIX.unpack_from(data)
        assert (offset, size + common.LOG_OVERHEAD) == (7, len(data))
        assert magic == data[common.MAGIC_OFFSET] and common.LOG_HEADER.unpack_from(data) == (offset, size)


def test_kafka_constants_are_defined_once() -> None:
    assert constants.DEFAULT_MAX_MESSAGE_BYTES == (1 << 20) + common.LOG_OVERHEAD == 1048588
    assert constants.INT32_MAX == 2 ** 31 - 1
    assert constants.DEFAULT_SEGMENT_BYTES == 1 << 30
    assert constants.DEFAULT_SEGMENT_INDEX_BYTES == 10 * 1024 * 1024
    assert constants.DEFAULT_INDEX_INTERVAL_BYTES == 4096


def test_no_module_defines_them_again() -> None:
    """Only kafkatool/constants.py types these values (a module may name one after it: ``X = constants.X``), and
    the header sizes are derived from the layouts, never typed."""
    import ast
    from pathlib import Path

    import kafkatool

    root = Path(kafkatool.__file__).parent
    names = {"INT32_MAX", "DEFAULT_MAX_MESSAGE_BYTES", "DEFAULT_SEGMENT_BYTES", "DEFAULT_INDEX_INTERVAL_BYTES",
             "DEFAULT_SEGMENT_INDEX_BYTES", "DEFAULT_INDEX_BYTES", "MAX_READ_SIZE", "V2_OVERHEAD", "V2_BATCH_OVERHEAD",
             "RECORD_BATCH_OVERHEAD", "LOG_OVERHEAD", "RECORD_OVERHEAD_V0", "RECORD_OVERHEAD_V1"}
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "constants.py" and path.parent == root:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                literal = all(isinstance(n, ast.Constant | ast.BinOp | ast.operator | ast.expr_context)
                              for n in ast.walk(node.value))
                for t in targets:
                    if isinstance(t, ast.Name) and t.id in names and literal:
                        found.append(f"{path.relative_to(root)}:{node.lineno}: {t.id}")
    assert found == []
