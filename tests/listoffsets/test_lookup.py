"""ListOffsets from the files, as a 3.9 leader answers it (kafkatool/listoffsets): earliest and latest from the
checkpoints, a timestamp through the .timeindex, the .index and the batches, max-timestamp (KIP-734), and no
answer at or past the high watermark."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.errors import UsageError
from kafkatool.listoffsets.run import OffsetsRequest, offsets_for_times, parse_time
from kafkatool.log.checkpoints import EpochEntry, encode_leader_epoch_checkpoint, encode_offset_checkpoint
from kafkatool.log.index import TimestampOffset, encode_time_index
from kafkatool.log.layout import TopicPartition
from kafkatool.record.default_records import build_batch
from tests.support.segments import write_segment

T0 = 1_700_000_000_000


def _batch(first: int, stamps: list[int], epoch: int) -> bytes:
    return build_batch([(first + i, ts, None, b"v", ()) for i, ts in enumerate(stamps)],
                       partition_leader_epoch=epoch)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """t-0: segment 0 holds offsets 0..9 (two batches of 5, leader epoch 3), segment 10 offsets 10..19 (epoch 4);
    record i has timestamp T0 + 10*i except offset 13, the partition's largest (T0 + 1000), which appears again at
    offset 17. The log starts at 2 (DeleteRecords), the high watermark is 18 (two offsets not yet replicated)."""
    part = tmp_path / "t-0"
    ts = [T0 + 10 * i for i in range(20)]
    ts[13] = ts[17] = T0 + 1000
    write_segment(part, 0, [_batch(0, ts[0:5], 3), _batch(5, ts[5:10], 3)])
    write_segment(part, 10, [_batch(10, ts[10:15], 4), _batch(15, ts[15:20], 4)])
    # segment 0's time index as the broker leaves it after the roll: one entry per batch and the final one
    (part / "00000000000000000000.timeindex").write_bytes(encode_time_index(
        [TimestampOffset(ts[4], 4), TimestampOffset(ts[9], 9)], 0))
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint(
        [EpochEntry(3, 0), EpochEntry(4, 10)]))
    tp = TopicPartition("t", 0)
    (tmp_path / "log-start-offset-checkpoint").write_bytes(encode_offset_checkpoint({tp: 2}))
    (tmp_path / "replication-offset-checkpoint").write_bytes(encode_offset_checkpoint({tp: 18}))
    return tmp_path


def _ask(log_dir: Path, *times: int | str) -> dict[str, tuple[int, int, int | None]]:
    out = offsets_for_times(OffsetsRequest([log_dir], list(times)))
    assert out.exit_code == 0
    return {a.query: (a.timestamp, a.offset, a.leader_epoch) for a in out.answers}


def test_earliest_and_latest_come_from_the_checkpoints(log_dir: Path) -> None:
    got = _ask(log_dir, "earliest", "latest")
    assert got == {"earliest": (-1, 2, 3), "latest": (-1, 18, 4)}
    a = offsets_for_times(OffsetsRequest([log_dir], ["latest"])).answers[0]
    assert (a.log_start_offset, a.high_watermark, a.log_end_offset, a.high_watermark_source) == (2, 18, 20,
                                                                                                  "checkpoint")


def test_a_timestamp_finds_the_first_record_at_or_after_it(log_dir: Path) -> None:
    got = _ask(log_dir, T0 + 55, T0 + 60, T0 + 125, T0)
    assert got[str(T0 + 55)] == (T0 + 60, 6, 3)  # between records: the next one
    assert got[str(T0 + 60)] == (T0 + 60, 6, 3)  # exactly a record's
    # segment 0's largest timestamp is T0 + 90: T0 + 125 is in segment 10, whose first batch's max is T0 + 1000;
    # in it the first record >= T0 + 125 is offset 13 (timestamps 100, 110, 120 come first)
    assert got[str(T0 + 125)] == (T0 + 1000, 13, 4)
    assert got[str(T0)] == (T0 + 20, 2, 3)  # below the log start offset: the first record at or after it


def test_no_answer_past_the_high_watermark_or_the_largest_timestamp(log_dir: Path) -> None:
    got = _ask(log_dir, T0 + 185, T0 + 5000)
    assert got[str(T0 + 185)] == (T0 + 1000, 13, 4)  # offset order: 13 is the first record at or after it
    assert got[str(T0 + 5000)] == (-1, -1, None)  # past every segment's largest timestamp
    (log_dir / "replication-offset-checkpoint").write_bytes(encode_offset_checkpoint({TopicPartition("t", 0): 13}))
    got = _ask(log_dir, T0 + 125, T0 + 120)
    assert got[str(T0 + 125)] == (-1, -1, None)  # offset 13 is not below the high watermark: the leader filters it
    assert got[str(T0 + 120)] == (T0 + 120, 12, 4)


def test_max_timestamp_is_the_first_record_with_the_largest_timestamp(log_dir: Path) -> None:
    assert _ask(log_dir, "max-timestamp") == {"max-timestamp": (T0 + 1000, 13, 4)}


def test_without_a_replication_checkpoint_the_log_end_is_the_limit(log_dir: Path) -> None:
    (log_dir / "replication-offset-checkpoint").unlink()
    a = offsets_for_times(OffsetsRequest([log_dir], ["latest"])).answers
    assert [(x.offset, x.high_watermark, x.high_watermark_source) for x in a] == [(20, 20, "log end")]


def test_times_are_checked_as_usage_errors_about_the_time_field(log_dir: Path) -> None:
    assert parse_time("2023-11-14T22:13:20Z") == T0
    assert parse_time("EARLIEST") == -2
    for bad in (-5, "yesterday"):
        with pytest.raises(UsageError) as e:
            parse_time(bad)
        assert e.value.field == "time"
    with pytest.raises(UsageError):
        offsets_for_times(OffsetsRequest([log_dir], []))


def test_topic_and_partition_selections(log_dir: Path) -> None:
    write_segment(log_dir / "u-1", 0, [_batch(0, [T0], 0)])
    out = offsets_for_times(OffsetsRequest([log_dir], ["latest"], topic=["u*"]))
    assert [(a.topic, a.partition, a.offset) for a in out.answers] == [("u", 1, 1)]
    with pytest.raises(Exception, match="none of the topics and partitions asked for"):
        offsets_for_times(OffsetsRequest([log_dir], ["latest"], partition=[7]))
