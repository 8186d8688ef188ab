"""``--recovery-report``: the 3.9 LogLoader's startup steps for a log dir, worked out read-only."""

from __future__ import annotations

import hashlib

from kafkatool.log.checkpoints import encode_offset_checkpoint
from kafkatool.log.layout import LogDir, PartitionDir, TopicPartition
from kafkatool.log.loader import LogDirState, simulate
from kafkatool.log.recovery import recover_segment
from tests.support.segments import T0, v2, v2_sized, write_segment

TP = TopicPartition("orders", 0)


def segment(d, base, n=5, *, indexes=True):
    log = write_segment(d, base, [v2_sized(base + i, 1000, ts=T0 + base + i) for i in range(n)])
    if indexes:
        r = recover_segment(log, base)
        log.with_suffix(".index").write_bytes(r.encode_offset_index())
        log.with_suffix(".timeindex").write_bytes(r.encode_time_index())
    return log


def log_dir(tmp_path, *, clean=False, recovery_point=None, log_start=None):
    root = tmp_path / "logs"
    part = root / "orders-0"
    for base in (0, 100, 200, 300):
        segment(part, base)
    if clean:
        (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    if recovery_point is not None:
        (root / "recovery-point-offset-checkpoint").write_bytes(encode_offset_checkpoint({TP: recovery_point}))
    if log_start is not None:
        (root / "log-start-offset-checkpoint").write_bytes(encode_offset_checkpoint({TP: log_start}))
    return root, part


def run(root):
    (part,) = LogDir.scan(root).partitions
    return simulate(part, LogDirState.read(root))


def steps(res):
    return [(s.action, s.path) for s in res.steps]


def test_clean_shutdown_recovers_nothing(tmp_path):
    root, _ = log_dir(tmp_path, clean=True, recovery_point=100)
    res = run(root)
    assert steps(res) == [("no-recovery", None)] and not res.loses_data and res.rebuilt_segments == []


def test_unclean_shutdown_recovers_from_the_recovery_point_segment(tmp_path):
    root, _ = log_dir(tmp_path, recovery_point=150)  # inside segment 100: it and all later ones
    res = run(root)
    assert steps(res) == [("recover", f"{b:020d}.log") for b in (100, 200, 300)]
    assert res.rebuilt_segments == [100, 200, 300] and not res.loses_data
    assert all(s.detail.endswith(": clean") for s in res.steps)


def test_missing_checkpoint_means_recovery_from_zero(tmp_path):
    root, _ = log_dir(tmp_path)
    assert run(root).rebuilt_segments == [0, 100, 200, 300]
    assert any("no recovery-point-offset-checkpoint" in n for n in LogDirState.read(root).notes)


def test_corrupt_batch_truncates_and_deletes_the_later_segments(tmp_path):
    root, part = log_dir(tmp_path, recovery_point=100)
    log = part / f"{200:020d}.log"
    data = bytearray(log.read_bytes())
    data[2500] ^= 0xFF  # a record byte of batch 2: its CRC fails
    log.write_bytes(bytes(data))
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in part.iterdir()}
    res = run(root)
    assert steps(res) == [("recover", f"{100:020d}.log"), ("recover", f"{200:020d}.log"),
                          ("delete-unflushed", f"{300:020d}.log")]
    assert "truncates 3000 bytes at byte 2000 (first invalid batch: Record is corrupt" in res.steps[1].detail
    # The same figures as fields, for machines.
    assert (res.steps[0].truncate_at, res.steps[0].truncated_bytes) == (None, 0)
    assert (res.steps[1].truncate_at, res.steps[1].truncated_bytes) == (2000, 3000)
    assert res.steps[2].deleted_bytes == 5000 and res.lost_bytes == 8000
    assert res.loses_data and res.steps[1].loses_data and res.steps[2].loses_data
    assert before == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in part.iterdir()}  # read-only


def test_temporary_files_swaps_and_orphans(tmp_path):
    root, part = log_dir(tmp_path, clean=True)
    (part / f"{300:020d}.log.deleted").write_bytes(b"x")
    (part / f"{300:020d}.index.deleted").write_bytes(b"x")
    (part / "00000000000000000500.checkpoint.deleted").write_bytes(b"x")  # a KRaft snapshot: left alone
    # The cleaner compacted segments 0 and 100 into a swap at base 0 (offsets 0..199) and crashed before
    # swapping; a split left a .cleaned at 200 and a .swap at 250 (KAFKA-6264: deleted).
    write_segment(tmp_path / "swap", 0, [v2(0, 100), v2(100, 100)]).rename(part / f"{0:020d}.log.swap")
    (part / f"{0:020d}.index.swap").write_bytes(b"")
    (part / f"{200:020d}.log.cleaned").write_bytes(b"x")
    (part / f"{250:020d}.log.swap").write_bytes(v2(250, 1))
    (part / f"{400:020d}.timeindex").write_bytes(b"")  # no 400.log: an orphan
    res = run(root)
    s = steps(res)
    assert ("delete-stray", f"{300:020d}.log.deleted") in s and ("delete-stray", f"{300:020d}.index.deleted") in s
    assert not any(p == "00000000000000000500.checkpoint.deleted" for _, p in s)
    assert ("delete-cleaned", f"{200:020d}.log.cleaned") in s
    assert ("delete-invalid-swap", f"{250:020d}.log.swap") in s
    compacted = {p for a, p in s if a == "delete-compacted"}
    assert compacted == {f"{b:020d}{x}" for b in (0, 100) for x in (".log", ".index", ".timeindex")}
    assert ("rename-swap", f"{0:020d}.log.swap") in s and ("rename-swap", f"{0:020d}.index.swap") in s
    assert ("delete-orphan-index", f"{400:020d}.timeindex") in s
    assert ("create-time-index", f"{0:020d}.timeindex") in s  # the swapped-in segment has no .timeindex
    assert not res.loses_data


def test_missing_index_is_rebuilt_at_load_even_after_a_clean_shutdown(tmp_path):
    root, part = log_dir(tmp_path, clean=True)
    (part / f"{100:020d}.index").unlink()
    (part / f"{200:020d}.timeindex").unlink()
    res = run(root)
    assert steps(res) == [("recover", f"{100:020d}.log"), ("create-time-index", f"{200:020d}.timeindex"),
                          ("no-recovery", None)]
    assert res.rebuilt_segments == [100] and "at load, because its .index is missing: clean" in res.steps[0].detail


def test_log_start_offset_above_the_log_end_deletes_everything(tmp_path):
    root, _ = log_dir(tmp_path, clean=True, log_start=10_000)
    res = run(root)
    assert steps(res)[-1] == ("delete-all", None) and res.loses_data
    assert res.log_start_offset == 10_000


def test_log_start_offset_is_at_least_the_first_segments_base(tmp_path):
    """LogLoader: max(log-start-offset-checkpoint, first segment's base offset). Retention deleted the segments
    before 100 and the checkpoint has no entry (the broker wrote 0 or none): the log starts at 100 (a 3.9 broker
    logs ``logStartOffset=100`` on loading it)."""
    root, part = log_dir(tmp_path, clean=True)
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex"):
        (part / name).unlink()
    assert run(root).log_start_offset == 100
    (root / "log-start-offset-checkpoint").write_bytes(encode_offset_checkpoint({TP: 150}))
    assert run(root).log_start_offset == 150  # DeleteRecords inside the first segment


def test_invalid_offset_at_load_fails_and_nothing_further_is_simulated(tmp_path):
    root = tmp_path / "logs"
    part = root / "orders-0"
    write_segment(part, 0, [v2_sized(10, 5000, ts=T0), v2_sized(20, 5000, ts=T0 + 1), v2_sized(15, 5000, ts=T0 + 2)])
    segment(part, 100)
    res = simulate(PartitionDir.scan(part), LogDirState.read(root))
    # No .index: the segment is recovered inside loadSegmentFiles, where InvalidOffsetException is not caught.
    # The broker never reaches recoverLog, so no step after this one is reported.
    assert steps(res) == [("create-time-index", f"{0:020d}.timeindex"), ("recover", f"{0:020d}.log")]
    assert "loading the partition fails" in res.steps[1].detail and res.steps[1].fails and res.fails


def test_invalid_offset_during_recovery_empties_the_segment(tmp_path):
    root = tmp_path / "logs"
    part = root / "orders-0"
    log = write_segment(part, 0, [v2_sized(10, 5000, ts=T0), v2_sized(20, 5000, ts=T0 + 1),
                                  v2_sized(15, 5000, ts=T0 + 2)])
    log.with_suffix(".index").write_bytes(b"")  # present: no recovery at load, recoverLog catches it
    log.with_suffix(".timeindex").write_bytes(b"")
    segment(part, 100)
    res = simulate(PartitionDir.scan(part), LogDirState.read(root))
    assert steps(res) == [("recover", f"{0:020d}.log"), ("delete-unflushed", f"{100:020d}.log")]
    assert "empties the segment" in res.steps[0].detail and not res.fails
    assert (res.steps[0].truncate_at, res.steps[0].truncated_bytes) == (0, 15000)
    assert res.steps[1].deleted_bytes == 5000 and res.lost_bytes == 20000


def test_partition_marked_for_deletion_is_not_recovered(tmp_path):
    root = tmp_path / "logs"
    d = root / "orders-0.0123456789abcdef0123456789abcdef-delete"
    segment(d, 0)
    res = simulate(PartitionDir.scan(d), LogDirState.read(root))
    assert steps(res)[-1] == ("no-recovery", None) and "marked for deletion" in res.steps[-1].detail
