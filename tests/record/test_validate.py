"""record/validate.py: what ``dump --deep --verify`` checks of a batch, as every reader that must refuse it sees it."""

from __future__ import annotations

import struct

import pytest

from kafkatool.errors import CorruptRecordError, InvalidRecordError
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import iter_batches
from kafkatool.record.validate import (
    batch_problems,
    check_batch,
    control_record_problem,
    record_problems,
)
from tests.support import damaged_batches as d


def only(data: bytes):
    (b,) = list(iter_batches(data))
    return b


@pytest.mark.parametrize("need_records", [True, False])
@pytest.mark.parametrize("data", [
    pytest.param(d.batch(0), id="v2"), pytest.param(d.batch(5, 4, Codec.LZ4), id="v2-lz4"),
    pytest.param(d.wrapper(1, Codec.GZIP, bytes(d.inner_entries(1)), 4), id="v1-gzip"),
    pytest.param(d.wrapper(0, Codec.SNAPPY, bytes(d.inner_entries(0, first=7)), 11), id="v0-snappy"),
    pytest.param(d.bad_control(b"\x00\x00\x00\x00\x00\x09"), id="commit-marker"),
])
def test_sound_batches_have_no_problem(data, need_records):
    c = check_batch(only(data), need_records=need_records)
    assert c.problems == [] and c.batch_problem is None
    if need_records:
        assert c.records is not None


@pytest.mark.parametrize("magic", [0, 1])
def test_a_flipped_bit_in_an_inner_message_is_that_record_s_problem(magic):
    b = only(d.inner_crc_flip(magic, flip=2, base=0))
    c = check_batch(b)
    (p,) = c.problems
    assert (p.kind, p.offset, p.position, p.record) == ("record-crc-mismatch", 2, 0, True)
    assert c.batch_problem is None and c.records is not None and len(c.records) == 5
    e = p.error("seg.log")
    assert isinstance(e, CorruptRecordError) and e.exit_code == 1
    assert str(e).startswith("seg.log at byte 0: offset 2: inner message of the wrapper")
    assert record_problems(b, c.records, crc=False) == []


def test_decreasing_inner_offsets_are_out_of_order():
    c = check_batch(only(d.decreasing_inner()))
    assert [(p.kind, p.offset) for p in c.problems][0] == ("offset-order", 7)
    assert c.batch_problem is not None and c.batch_problem.kind == "offset-order"


def test_an_inner_set_cut_inside_a_message_says_where_and_how_kafka_numbers_the_rest():
    b = only(d.inner_cut(magic=1, n=3))
    c = check_batch(b)
    (p,) = c.problems
    assert p.kind == "inner-set-truncated" and not p.record
    # Kafka's reader drops the cut message and counts back from the wrapper offset (2) without it: 1..2, where
    # the wrapper offset and the cut message put them at 0..1.
    assert [r.offset for r in c.records or []] == [1, 2]
    assert "read as offsets 1..2" in p.message and "puts them at 0..1" in p.message
    v0 = check_batch(only(d.inner_cut(magic=0, n=3)))
    assert [p.kind for p in v0.problems] == ["inner-set-truncated"] and "puts them" not in v0.problems[0].message


def test_negative_last_offset_delta_is_one_header_problem():
    b = only(d.negative_delta(10, -7))
    assert b.is_valid() and b.last_offset == 3
    (p,) = batch_problems(b)
    assert (p.kind, p.offset) == ("offset-range", 3) and "lastOffsetDelta -7" in p.message
    assert [q.kind for q in check_batch(b).problems] == ["offset-range"]


def test_records_past_the_batch_last_offset_are_out_of_range():
    c = check_batch(only(d.negative_delta(10, 0)), need_records=False)  # count 1 at 10, delta 0: sound
    assert c.problems == []
    data = bytearray(d.batch(10, n=3))
    struct.pack_into(">i", data, 23, 1)  # last offset 11, records 10..12
    c = check_batch(only(bytes(d.reseal(data))), need_records=False)
    assert [(p.kind, p.offset) for p in c.problems] == [("offset-range", 12)]


def test_offset_int64_max_leaves_no_next_offset():
    (p,) = check_batch(only(d.offset_max())).problems
    assert (p.kind, p.offset) == ("offset-int64", (1 << 63) - 1) and isinstance(p.error(), InvalidRecordError)


def test_malformed_control_records():
    (p,) = check_batch(only(d.bad_control(b"\x00"))).problems
    assert p.kind == "invalid-control-record" and "end transaction marker" in p.message and p.offset == 3
    (p,) = check_batch(only(d.bad_control(b"\x00" * 6, key=b"\x00"))).problems
    assert "control record key" in p.message
    assert control_record_problem(b"\x00\x00\x00\x02", None) is None  # LEADER_CHANGE: no marker to parse
    assert control_record_problem(b"\xff\xff\x00\x01", b"\x00" * 6) is not None  # negative key version


def test_records_that_do_not_decode_and_a_bad_crc():
    b = only(d.v2_bad_record())
    assert b.is_valid()
    for need in (True, False):
        (p,) = check_batch(b, need_records=need).problems
        assert p.kind == "invalid-records" and p.offset == 2
    damaged = bytearray(d.batch(0))
    damaged[70] ^= 1
    (p,) = check_batch(only(bytes(damaged))).problems
    assert p.kind == "crc-mismatch" and "stored crc" in p.message


def test_unknown_magic():
    data = bytearray(d.batch(0))
    data[16] = 3
    kinds = [p.kind for p in batch_problems(only(bytes(d.reseal(data))))]
    assert kinds == ["unknown-magic"]
