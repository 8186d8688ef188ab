"""Index, snapshot and checkpoint dumps, and --verify-index against deliberately damaged indexes."""

from __future__ import annotations

from pathlib import Path

from kafkatool.dump.engine import DumpEngine
from kafkatool.dump.events import (
    DumpOptions,
    EntryKind,
    FileStart,
    Finding,
    IndexEntryEvent,
    Notice,
    NoticeKind,
)
from kafkatool.dump.paths import partition_files
from kafkatool.log.checkpoints import (
    EpochEntry,
    encode_leader_epoch_checkpoint,
    encode_offset_checkpoint,
    encode_partition_metadata,
)
from kafkatool.log.index import OffsetPosition, TimestampOffset
from kafkatool.log.layout import PartitionDir, TopicPartition
from kafkatool.log.snapshot import ProducerSnapshotEntry, encode_snapshot
from kafkatool.log.txn_index import AbortedTxn, encode_txn_index
from tests.support.dump_fixtures import TS, patch_index_entry, patch_time_entry, v2_batches, write_segment


def events(paths: list[Path], **kw: object) -> list[object]:
    return list(DumpEngine(DumpOptions(**kw)).run(paths))  # type: ignore[arg-type]


def entries(evs: list[object]) -> list[object]:
    return [e.entry for e in evs if isinstance(e, IndexEntryEvent)]


def findings(evs: list[object]) -> list[tuple[str, str, dict[str, object]]]:
    return [(e.kind, e.severity.value, e.data) for e in evs if isinstance(e, Finding)]


def segment(tmp_path: Path, n: int = 40) -> Path:
    return write_segment(tmp_path / "orders-0", v2_batches(n))


def test_clean_indexes_verify(tmp_path):
    log = segment(tmp_path)
    evs = events([log.with_suffix(".index"), log.with_suffix(".timeindex")], verify_index=True)
    assert findings(evs) == []
    ents = entries(evs)
    assert ents[:2] == [OffsetPosition(39, 4582), OffsetPosition(74, 9174)]
    assert TimestampOffset(TS + 39, 39) in ents and ents[-1] == TimestampOffset(TS + 199, 199)


def test_zero_padded_preallocated_index(tmp_path):
    log = segment(tmp_path)
    idx = log.with_suffix(".index")
    trimmed = idx.read_bytes()
    idx.write_bytes(trimmed + bytes(10 * 1024 * 1024 - len(trimmed)))  # as an active segment's index looks
    evs = events([idx], verify_index=True)
    assert len(entries(evs)) == len(trimmed) // 8
    (f,) = findings(evs)
    assert f[0:2] == ("index-padding", "info") and f[2]["slots"] == 1310720 - len(trimmed) // 8
    assert findings(events([idx], strict=True))[0][0:2] == ("index-padding", "error")
    # Kafka's sanityCheck passes an untrimmed offset index (it only looks at the last, zero, slot).
    evs = events([idx], index_sanity_check=True)
    assert any(isinstance(e, Notice) and e.kind == NoticeKind.SANITY_PASSED for e in evs)


def test_all_zero_index_has_no_entries(tmp_path):
    log = segment(tmp_path)
    idx, tix = log.with_suffix(".index"), log.with_suffix(".timeindex")
    idx.write_bytes(bytes(8 * 100))
    tix.write_bytes(bytes(12 * 100))
    evs = events([idx, tix], verify_index=True)
    assert entries(evs) == []
    assert any(isinstance(e, Notice) and e.kind == NoticeKind.INDEX_EMPTY for e in evs)
    assert [f[0] for f in findings(evs)] == ["index-padding", "index-padding"]


def test_time_index_sanity_check_fails_when_untrimmed(tmp_path):
    # Spec §4.2: on a zero-padded time index the last slot's timestamp (0) is below the first entry's, so
    # Kafka's TimeIndex.sanityCheck fails, although nothing is wrong with the entries.
    tix = segment(tmp_path).with_suffix(".timeindex")
    evs = events([tix], index_sanity_check=True)
    assert any(isinstance(e, Notice) and e.kind == NoticeKind.SANITY_PASSED for e in evs)
    tix.write_bytes(tix.read_bytes() + bytes(12 * 10))
    fs = findings(events([tix], index_sanity_check=True))
    assert [f[0] for f in fs] == ["index-padding", "index-sanity"]


def test_damaged_offset_index(tmp_path):
    log = segment(tmp_path)
    idx = log.with_suffix(".index")
    patch_index_entry(idx, 1, rel_delta=1)  # offset 75 at the batch ending at 74
    patch_index_entry(idx, 2, pos_delta=100)  # a position inside a batch
    patch_index_entry(idx, 3, pos_delta=10**6)  # past the end of the log, and entry 4 then goes backwards
    fs = findings(events([idx], verify_index=True))
    assert fs[0] == ("index-mismatch", "error", {"index_offset": 75, "log_offset": 74, "log_position": 9174})
    assert [f[0] for f in fs] == ["index-mismatch", "index-entry-invalid", "index-entry-past-end", "index-order"]
    # Without --verify-index the entries are listed and only checked against the log's size (a stat).
    assert findings(events([idx])) == [("index-entry-past-end", "error",
                                        {"index_offset": 144, "log_position": 1018398})]


def test_damaged_time_index(tmp_path):
    log = segment(tmp_path)
    tix = log.with_suffix(".timeindex")
    patch_time_entry(tix, 1, ts_delta=-1)  # timestamp mismatch
    patch_time_entry(tix, 2, ts_delta=-40)  # mismatch and out of order (prev 1700000000073)
    patch_time_entry(tix, 3, rel_delta=2)  # offset 146 is inside the batch 145..149
    fs = findings(events([tix], verify_index_only=True))
    assert fs == [
        ("time-index-mismatch", "error", {"index_timestamp": TS + 73, "log_timestamp": TS + 74}),
        ("time-index-mismatch", "error", {"index_timestamp": TS + 69, "log_timestamp": TS + 109}),
        ("time-index-out-of-order", "error", {"index_timestamp": TS + 69, "previous_timestamp": TS + 73}),
        ("time-index-offset-not-found", "error", {"index_offset": 146, "log_offset": 149}),
    ]
    assert entries(events([tix], verify_index_only=True)) == []


def test_time_index_without_offset_index_or_log(tmp_path):
    log = segment(tmp_path)
    tix = log.with_suffix(".timeindex")
    log.with_suffix(".index").unlink()
    assert findings(events([tix], verify_index=True)) == []  # scans from byte 0, finds every entry
    assert not log.with_suffix(".index").exists()  # Kafka's tool would have created it
    log.unlink()
    assert [f[0] for f in findings(events([tix], verify_index=True))] == ["missing-log"]


def test_partial_entries(tmp_path):
    log = segment(tmp_path)
    idx = log.with_suffix(".index")
    idx.write_bytes(idx.read_bytes() + b"\x01\x02\x03")
    assert findings(events([idx]))[0][0:2] == ("index-partial-entry", "warning")
    tx = tmp_path / "orders-0" / "00000000000000000000.txnindex"
    tx.write_bytes(encode_txn_index([AbortedTxn(1, 2, 3, 4)]) + b"\x00" * 10)
    evs = events([tx])
    assert entries(evs) == [AbortedTxn(1, 2, 3, 4)]
    assert findings(evs)[0][0:2] == ("txnindex-partial-entry", "error")


def test_checkpoints_and_metadata(tmp_path):
    part = tmp_path / "orders-0"
    part.mkdir()
    epochs = encode_leader_epoch_checkpoint([EpochEntry(0, 0), EpochEntry(3, 17)])
    (part / "leader-epoch-checkpoint").write_bytes(epochs)
    (part / "partition.metadata").write_bytes(encode_partition_metadata("AAECAwQFBgcICQoLDA0ODw"))
    (tmp_path / "recovery-point-offset-checkpoint").write_bytes(
        encode_offset_checkpoint({TopicPartition("orders", 0): 40}))
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=3\n")
    (tmp_path / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":12}')
    evs = events([part / "leader-epoch-checkpoint", part / "partition.metadata",
                  tmp_path / "recovery-point-offset-checkpoint", tmp_path / "meta.properties",
                  tmp_path / ".kafka_cleanshutdown"])
    assert [(e.kind, e.entry) for e in evs if isinstance(e, IndexEntryEvent)][:3] == [
        (EntryKind.LEADER_EPOCH, EpochEntry(0, 0)), (EntryKind.LEADER_EPOCH, EpochEntry(3, 17)),
        (EntryKind.PARTITION_METADATA, entries(evs)[2])]
    assert len(entries(evs)) == 2 + 1 + 1 + 2 + 2 and findings(evs) == []
    (part / "leader-epoch-checkpoint").write_text("0\n3\n1 5\n")
    assert findings(events([part / "leader-epoch-checkpoint"]))[0][0] == "checkpoint-corrupt"


def test_producer_snapshot_entries_and_corruption(tmp_path):
    snap = tmp_path / "00000000000000000050.snapshot"
    e = ProducerSnapshotEntry(4242, 1, 9, 49, 4, TS, 2, -1)
    snap.write_bytes(encode_snapshot([e]))
    evs = events([snap])
    assert entries(evs) == [e] and [x.base_offset for x in evs if isinstance(x, FileStart)] == [50]
    snap.write_bytes(b"\x00\x02" + snap.read_bytes()[2:])
    assert findings(events([snap]))[0][0] == "snapshot-corrupt"


def test_partition_dir_dump_order(tmp_path):
    part = tmp_path / "orders-0"
    write_segment(part, v2_batches(4), base=0)
    write_segment(part, v2_batches(4, base=20), base=20)
    (part / "00000000000000000020.txnindex").write_bytes(b"")
    (part / "00000000000000000040.snapshot").write_bytes(encode_snapshot([]))
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([EpochEntry(0, 0)]))
    (part / "partition.metadata").write_bytes(encode_partition_metadata("AAECAwQFBgcICQoLDA0ODw"))
    (part / "00000000000000000000.log.deleted").write_bytes(b"")
    (part / "00000000000000000060.index").write_bytes(b"")  # an index without its log
    names = [p.name for p in partition_files(PartitionDir.scan(part))]
    assert names == ["00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
                     "00000000000000000020.log", "00000000000000000020.index", "00000000000000000020.timeindex",
                     "00000000000000000020.txnindex", "00000000000000000060.index", "00000000000000000040.snapshot",
                     "leader-epoch-checkpoint", "partition.metadata", "00000000000000000000.log.deleted"]


def test_time_index_verification_resumes_after_a_corrupt_region(tmp_path):
    log = segment(tmp_path)
    data = bytearray(log.read_bytes())
    data[4582 + 8:4582 + 12] = b"\x00\x00\x00\x02"  # the batch 35..39 now has a size field of 2
    log.write_bytes(bytes(data))
    tix = log.with_suffix(".timeindex")
    fs = findings(events([tix], verify_index_only=True))
    # Only the entry that points into the destroyed batch is reported; Kafka's tool would have crashed.
    assert fs == [("time-index-offset-not-found", "error", {"index_offset": 39, "log_offset": 44})]


def test_negative_index_position_does_not_break_time_index_checks(tmp_path):
    # Found by fuzzing: a lookup position below 0 (Kafka's slice() throws IllegalArgumentException).
    log = segment(tmp_path)
    patch_index_entry(log.with_suffix(".index"), 0, pos_delta=-10**6)
    evs = events([log.with_suffix(".index"), log.with_suffix(".timeindex")], verify_index=True)
    assert [f[0] for f in findings(evs)] == ["index-entry-past-end"]
