"""``dump --format dump-log``: Kafka 3.9 DumpLogSegments lines, line for line, for the spec's vectors.

Expected lines follow ``DumpLogSegments.scala`` (3.9) as quoted in KAFKA-FORMATS.md §8.2 and Appendix A;
the numbers in them come from the golden bytes Kafka 3.9.1 wrote (CRCs read from the vectors' hex, inner
legacy CRCs recomputed here with zlib over the message bytes Kafka's builder writes).
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest

from kafkatool.dump.dumplog import DumpLogWriter, PairSpool, make_decoder, snapshot_line
from kafkatool.dump.engine import DumpEngine
from kafkatool.dump.events import DumpOptions, FileEnd, Finding
from kafkatool.log.snapshot import ProducerSnapshotEntry, encode_snapshot
from kafkatool.log.txn_index import AbortedTxn, encode_txn_index
from kafkatool.record import default_records as v2
from kafkatool.record.batch import ControlRecordType
from tests.support.dump_fixtures import TS, G, golden_commit_marker, v2_batches, write_segment

V2_DEFAULTS = ("baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: -1 "
               "isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty")


def dumplog(paths: list[Path], *, deep: bool = False, print_data: bool = False, skip: bool = False,
            encoding: str = "utf8", max_bytes: int | None = None) -> tuple[list[str], list[str]]:
    out = io.StringIO()
    err: list[str] = []
    deep = deep or print_data
    w = DumpLogWriter(out, err.append, print_data=print_data, skip_record_metadata=skip,
                      decode=make_decoder(encoding), max_bytes_set=max_bytes is not None, deep=deep)
    for ev in DumpEngine(DumpOptions(deep=deep, kafka_compat=True, max_bytes=max_bytes)).run(paths):
        w.handle(ev)
    w.close()
    return out.getvalue().splitlines(), err


def seg(tmp_path: Path, data: bytes, name: str = "00000000000000000000.log") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def legacy_crc(magic: int, ts: int, key: bytes | None, value: bytes | None) -> int:
    body = bytes((magic, 0)) + (struct.pack(">q", ts) if magic else b"")
    for b in (key, value):
        body += b"\xff\xff\xff\xff" if b is None else struct.pack(">i", len(b)) + b
    return zlib.crc32(body)


# KAFKA-FORMATS.md §8.2's example, verbatim (the lines after "Dumping <path>").
SPEC_8_2 = """\
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 \
partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 \
CreateTime: 1700000000000 size: 70 magic: 2 compresscodec: none crc: 3919285720 isvalid: true
| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] key: k payload: v"""


def test_spec_8_2_example_v2_one_record(tmp_path):
    # The golden bytes are a producer's batch (partitionLeaderEpoch -1); §8.2 shows it as a broker stored it, with
    # the leader epoch stamped (0). The epoch is outside the CRC-32C, so the crc and isvalid stay the same.
    data = bytearray(G["v2_none_1rec"])
    assert struct.unpack_from(">i", data, 12) == (-1,)
    struct.pack_into(">i", data, 12, 0)
    p = seg(tmp_path, bytes(data))
    out, err = dumplog([p], print_data=True)
    assert out == [f"Dumping {p}", *SPEC_8_2.splitlines()]
    assert err == []
    # As the producer wrote it: only the epoch differs.
    out, _ = dumplog([seg(tmp_path, G["v2_none_1rec"])], print_data=True)
    assert out[2] == SPEC_8_2.splitlines()[1].replace("partitionLeaderEpoch: 0", "partitionLeaderEpoch: -1")


def test_appendix_a_v0_and_v1_one_record_lines(tmp_path):
    p0 = seg(tmp_path, G["v0_none_1rec"], "v0.log")
    p1 = seg(tmp_path, G["v1_none_1rec"], "v1.log")
    out, _ = dumplog([p0, p1], deep=True)
    # v0.log/v1.log have no base offset in their names: Kafka would fail on "Log starting offset", we skip it.
    assert out == [
        f"Dumping {p0}",
        "offset: 0 position: 0 NoTimestampType: -1 size: 28 magic: 0 compresscodec: none crc: 535615242 isvalid: true",
        "| offset: 0 NoTimestampType: -1 keySize: 1 valueSize: 1 isValid: true crc: 535615242}",
        f"Dumping {p1}",
        "offset: 0 position: 0 CreateTime: 1700000000000 size: 36 magic: 1 compresscodec: none crc: 958827571 "
        "isvalid: true",
        "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 isValid: true crc: 958827571}",
    ]


def test_v1_log_append_time_and_headers(tmp_path):
    out, _ = dumplog([seg(tmp_path, G["v1_none_LAT"] + G["v2_none_1rec_hdr"])], deep=True)
    assert out[2] == ("offset: 0 position: 0 LogAppendTime: 1700000000099 size: 36 magic: 1 compresscodec: none "
                      "crc: 4189151631 isvalid: true")
    assert out[3] == "| offset: 0 LogAppendTime: 1700000000099 keySize: 1 valueSize: 1 isValid: true crc: 4189151631}"
    assert out[4].startswith("baseOffset: 0 lastOffset: 0 count: 1 ") and " position: 36 " in out[4]
    assert out[4].endswith("size: 74 magic: 2 compresscodec: none crc: 1586713485 isvalid: true")
    assert out[5] == "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [h]"


THREE = [(100, TS, b"k1", b"v1"), (101, TS + 5, b"k2", b"v2"), (102, TS + 2, None, b"v3")]


@pytest.mark.parametrize("name,codec,crc,size", [
    ("v2_gzip_3rec(base100)", "gzip", 2985539621, 112),
    ("v2_lz4_3rec", "lz4", 2912737157, 107),
    ("v2_snappy_3rec", "snappy", 670568398, 114),
    ("v2_zstd_3rec", "zstd", 4166919902, 104),
])
def test_v2_compressed_vectors(tmp_path, name, codec, crc, size):
    out, _ = dumplog([seg(tmp_path, G[name])], print_data=True)
    assert out[2] == (f"baseOffset: 100 lastOffset: 102 count: 3 {V2_DEFAULTS} position: 0 CreateTime: 1700000000005 "
                      f"size: {size} magic: 2 compresscodec: {codec} crc: {crc} isvalid: true")
    assert out[3:] == [
        "| offset: 100 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [] key: k1 "
        "payload: v1",
        "| offset: 101 CreateTime: 1700000000005 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [] key: k2 "
        "payload: v2",
        "| offset: 102 CreateTime: 1700000000002 keySize: -1 valueSize: 2 sequence: -1 headerKeys: [] payload: v3",
    ]


@pytest.mark.parametrize("name,magic,codec,crc,size", [
    ("v0_lz4_3rec", 0, "lz4", 2757725908, 119), ("v0_snappy_3rec", 0, "snappy", 3675929615, 122),
    ("v0_gzip_3rec", 0, "gzip", 2871570508, 98), ("v1_lz4_3rec", 1, "lz4", 3728207630, 138),
    ("v1_snappy_3rec", 1, "snappy", 528738037, 140), ("v1_gzip_3rec", 1, "gzip", 378053854, 115),
])
def test_legacy_compressed_vectors(tmp_path, name, magic, codec, crc, size):
    out, _ = dumplog([seg(tmp_path, G[name])], print_data=True)
    ts_name, max_ts = ("NoTimestampType", -1) if magic == 0 else ("CreateTime", TS + 5)
    assert out[2] == (f"offset: 102 position: 0 {ts_name}: {max_ts} size: {size} magic: {magic} "
                      f"compresscodec: {codec} crc: {crc} isvalid: true")
    expected = []
    for off, ts, k, v in THREE:
        rts = -1 if magic == 0 else ts
        key_size = -1 if k is None else len(k)
        line = (f"| offset: {off} {ts_name}: {rts} keySize: {key_size} valueSize: 2 isValid: true "
                f"crc: {legacy_crc(magic, ts, k, v)}}}")
        line += (f" key: {k.decode()}" if k else "") + f" payload: {v.decode()}"
        expected.append(line)
    assert out[3:] == expected


def test_commit_marker_control_record(tmp_path):
    out, _ = dumplog([seg(tmp_path, golden_commit_marker())], print_data=True)
    assert out[2] == ("baseOffset: 500 lastOffset: 500 count: 1 baseSequence: -1 lastSequence: -1 producerId: 4242 "
                      "producerEpoch: 3 partitionLeaderEpoch: 7 isTransactional: true isControl: true "
                      "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 78 magic: 2 "
                      "compresscodec: none crc: 1437530890 isvalid: true")
    # Payloads of control batches are never printed, even with --print-data.
    assert out[3] == ("| offset: 500 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
                      "endTxnMarker: COMMIT coordinatorEpoch: 9")


def test_kraft_and_other_control_records(tmp_path):
    header = struct.pack(">hq", 0, TS) + b"\x00"
    footer = struct.pack(">h", 0) + b"\x00"
    kraft_version = struct.pack(">hh", 0, 1) + b"\x00"
    dir_id = bytes(range(16))
    voters = (struct.pack(">h", 0) + b"\x02" + struct.pack(">i", 1) + dir_id + b"\x02"
              + b"\x0bCONTROLLER" + b"\x0alocalhost" + struct.pack(">H", 9093) + b"\x00"
              + struct.pack(">hh", 0, 1) + b"\x00" + b"\x00" + b"\x00")
    batches = [v2.build_control_batch(offset=i, timestamp=TS, control_type=t, value=v)
               for i, (t, v) in enumerate([(ControlRecordType.SNAPSHOT_HEADER, header),
                                           (ControlRecordType.LEADER_CHANGE, b"\x00\x00"),
                                           (ControlRecordType.KRAFT_VERSION, kraft_version),
                                           (ControlRecordType.KRAFT_VOTERS, voters),
                                           (ControlRecordType.SNAPSHOT_FOOTER, footer)])]
    batches.append(v2.build_batch([(5, TS, struct.pack(">hh", 0, 9), b"", [])], is_control=True))
    out, _ = dumplog([seg(tmp_path, b"".join(batches))], deep=True)
    tails = [line.split("headerKeys: [] ", 1)[1] for line in out if line.startswith("| ")]
    assert tails == [
        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1700000000000}',
        "controlType: LEADER_CHANGE(2)",
        'KRaftVersion {"version":0,"kRaftVersion":1}',
        'KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"AAECAwQFBgcICQoLDA0ODw",'
        '"endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}',
        'SnapshotFooter {"version":0}',
        "controlType: UNKNOWN(9)",
    ]


def test_skip_record_metadata_prefixes(tmp_path):
    data = v2.build_batch([(0, TS, b"k", b"v", []), (1, TS, None, b"w", []), (2, TS, b"x", None, [])])
    out, _ = dumplog([seg(tmp_path, data)], print_data=True, skip=True)
    assert out[3:] == ["| key: k payload: v", " payload: w", "| key: x"]
    out, _ = dumplog([seg(tmp_path, data)], deep=True, skip=True)
    assert out[3:] == ["", "", ""]  # Kafka prints an empty line per record


def test_delete_horizon_and_producer_fields(tmp_path):
    data = v2.build_batch([(7, TS, b"k", b"v", [])], delete_horizon_ms=TS + 86_400_000, producer_id=12,
                          producer_epoch=1, base_sequence=2_147_483_647, is_transactional=True,
                          partition_leader_epoch=3)
    out, _ = dumplog([seg(tmp_path, data)])
    assert out[2].startswith("baseOffset: 7 lastOffset: 7 count: 1 baseSequence: 2147483647 lastSequence: 2147483647 "
                             "producerId: 12 producerEpoch: 1 partitionLeaderEpoch: 3 isTransactional: true "
                             "isControl: false deleteHorizonMs: OptionalLong[1700086400000] position: 0 ")


def test_encodings_for_key_and_payload(tmp_path):
    data = v2.build_batch([(0, TS, b"\x00\xff", b"\xe2\x82\xac", [])])
    for enc, key, val in [("utf8", "\x00\ufffd", "\u20ac"), ("hex", "00ff", "e282ac"), ("base64", "AP8=", "4oKs")]:
        out, _ = dumplog([seg(tmp_path, data)], print_data=True, encoding=enc)
        assert out[3].endswith(f" key: {key} payload: {val}"), enc


def test_found_invalid_bytes_and_max_bytes(tmp_path):
    data = b"".join(v2_batches(3))
    p = seg(tmp_path, data + data[:40])
    out, _ = dumplog([p])
    assert out[-1] == f"Found 40 invalid bytes at the end of {p.name}"
    assert len([x for x in out if x.startswith("baseOffset")]) == 3
    out, err = dumplog([p], max_bytes=len(data) + 20)
    assert not any(x.startswith("Found") for x in out)  # Kafka: only when --max-bytes is unset
    # (the 40 bytes are damage in the file, not a cut: they stay a finding on stderr)
    assert len(err) == 1 and "trailing-garbage" in err[0]
    out, err = dumplog([p], max_bytes=len(data) // 3 + 10)
    assert len([x for x in out if x.startswith("baseOffset")]) == 1
    assert err == []  # the cut --max-bytes asked for is not damage: no finding either


def test_max_bytes_cut_is_not_a_finding(tmp_path):
    data = b"".join(v2_batches(3))
    p = seg(tmp_path, data)
    for cut in (len(data) // 3 + 10, len(data) // 3 + 5, len(data) - 1):
        evs = list(DumpEngine(DumpOptions(max_bytes=cut, deep=True)).run([p]))
        assert [e for e in evs if isinstance(e, Finding)] == [], cut
        (end,) = [e for e in evs if isinstance(e, FileEnd)]
        assert (end.stopped, end.invalid_bytes, end.reader_stop) == ("max-bytes", 0, None)
    # Damage at the cut is still damage: a torn last batch whose end is past the end of the file too.
    p = seg(tmp_path, data[:-30])
    evs = list(DumpEngine(DumpOptions(max_bytes=len(data) - 40)).run([p]))
    last = sum(len(b) for b in v2_batches(3)[:2])
    assert [(f.kind, f.position) for f in evs if isinstance(f, Finding)] == [("torn-tail", last)]


def test_resync_is_not_shown_as_kafka_would_not_resync(tmp_path):
    # A size field past the end mid-file: Kafka's reader stops silently there and its tool prints
    # "Found <everything after> invalid bytes"; kafkatool resumes, but in this format only on stderr.
    batches = v2_batches(4)
    bad = bytearray(batches[1])
    struct.pack_into(">i", bad, 8, 1_000_000)
    data = batches[0] + bytes(bad) + batches[2] + batches[3]
    p = seg(tmp_path, data)
    out, err = dumplog([p], deep=True)
    assert [x.split(" lastOffset")[0] for x in out if x.startswith("baseOffset")] == ["baseOffset: 0"]
    assert out[-1] == f"Found {len(data) - len(batches[0])} invalid bytes at the end of {p.name}"
    assert len(err) == 1 and err[0].startswith(f"kafkatool: error: corrupt-region: {p} at byte {len(batches[0])}: ")
    assert "resuming at the next valid batch" in err[0]


def test_a_size_below_14_kills_kafkas_tool_no_found_line(tmp_path):
    # Kafka's reader throws CorruptRecordException on a size field below 14 (zero padding, most garbage): its tool
    # dies with a stack trace and prints no "Found" line. A zero tail of 17 bytes or fewer is only trailing bytes.
    data = b"".join(v2_batches(2))
    out, err = dumplog([seg(tmp_path, data + bytes(4096))])
    assert not any(x.startswith("Found") for x in out)
    assert len(err) == 1 and "warning: trailing-zeros:" in err[0]
    p = seg(tmp_path, data + bytes(17))
    out, _ = dumplog([p])
    assert out[-1] == f"Found 17 invalid bytes at the end of {p.name}"
    bad = bytearray(v2_batches(3)[2])
    struct.pack_into(">i", bad, 8, 5)
    out, err = dumplog([seg(tmp_path, data + bytes(bad) + v2_batches(4)[3])], deep=True)
    assert len([x for x in out if x.startswith("baseOffset")]) == 2 and not any(x.startswith("Found") for x in out)
    assert "corrupt-region" in err[0]


def test_files_kafka_does_not_dump_print_nothing_but_dumping(tmp_path):
    # DumpLogSegments dispatches on the text after the last '.': partition.metadata, meta.properties and
    # .kafka_cleanshutdown are unknown; a name without a '.' makes 3.9 throw StringIndexOutOfBoundsException.
    (tmp_path / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=1\n")
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n1\n4 0\n")
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 5\n")
    names = ["partition.metadata", "meta.properties", "leader-epoch-checkpoint", "recovery-point-offset-checkpoint"]
    paths = [tmp_path / n for n in names]
    out, err = dumplog(paths)
    assert out == [f"Dumping {p}" for p in paths]
    assert err[:2] == [f"Ignoring unknown file {paths[0]}", f"Ignoring unknown file {paths[1]}"]
    assert all("StringIndexOutOfBoundsException" in e for e in err[2:]) and len(err) == 4
    # A partition dir expands to the files Kafka's tool dumps.
    log = write_segment(tmp_path / "t-0", v2_batches(2))
    (log.parent / "leader-epoch-checkpoint").write_text("0\n1\n4 0\n")
    (log.parent / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    out, err = dumplog([log.parent])
    assert [x for x in out if x.startswith("Dumping")] == [
        f"Dumping {log}", f"Dumping {log.with_suffix('.index')}", f"Dumping {log.with_suffix('.timeindex')}"]
    assert err == []


def test_non_consecutive_offsets_newest_first(tmp_path):
    data = v2.build_batch([(0, TS, b"a", b"1", []), (2, TS, b"b", b"2", []), (3, TS, b"c", b"3", [])])
    data += v2.build_batch([(9, TS, b"d", b"4", [])])
    p = seg(tmp_path, data)
    _, err = dumplog([p], deep=True)
    assert err == [f"Non-consecutive offsets in {p}", "  3 is followed by 9", "  0 is followed by 2"]
    _, err = dumplog([p])  # only followed in deep iteration
    assert err == []


def test_index_time_index_lines_and_mismatch_summaries(tmp_path):
    log = write_segment(tmp_path / "t-0", v2_batches(40))
    idx, tix = log.with_suffix(".index"), log.with_suffix(".timeindex")
    out, err = dumplog([idx, tix])
    assert out[0] == f"Dumping {idx}"
    assert out[1:4] == ["offset: 39 position: 4582", "offset: 74 position: 9174", "offset: 109 position: 13771"]
    t0 = out.index(f"Dumping {tix}")
    assert out[t0 + 1] == "timestamp: 1700000000039 offset: 39"
    assert err == []
    data = bytearray(idx.read_bytes())
    data[8:16] = struct.pack(">ii", 75, 9174)  # entry 1 now says offset 75 (the batch there ends at 74)
    data[16:24] = struct.pack(">ii", 110, 13771)
    idx.write_bytes(bytes(data))
    _, err = dumplog([idx])
    assert err == [f"Mismatches in :{idx}", "  Index offset: 110, log offset: 109",
                   "  Index offset: 75, log offset: 74"]


def test_empty_and_zero_padded_index_like_kafka(tmp_path):
    log = write_segment(tmp_path / "t-0", v2_batches(2), indexes=False)
    idx = log.with_suffix(".index")
    idx.write_bytes(b"")
    out, err = dumplog([idx])
    assert out == [f"Dumping {idx}", f"{idx} is empty."]
    # A freshly preallocated index is all zeros: Kafka prints slot 0 and then complains about it.
    idx.write_bytes(bytes(8 * 1000))
    out, err = dumplog([idx])
    assert out == [f"Dumping {idx}", "offset: 0 position: 0"]
    assert err == [f"Mismatches in :{idx}", "  Index offset: 0, log offset: 4"]


def test_txn_index_and_producer_snapshot_lines(tmp_path):
    tx = tmp_path / "00000000000000000000.txnindex"
    tx.write_bytes(encode_txn_index([AbortedTxn(4242, 10, 20, 5), AbortedTxn(7, 30, 31, 30)]))
    snap = tmp_path / "00000000000000000100.snapshot"
    snap.write_bytes(encode_snapshot([ProducerSnapshotEntry(4242, 3, 41, 99, 4, TS, 9, -1),
                                      ProducerSnapshotEntry(7, 0, -1, -1, 0, TS + 1, -1, 55)]))
    out, err = dumplog([tx, snap])
    assert out == [
        f"Dumping {tx}",
        "version: 0 producerId: 4242 firstOffset: 10 lastOffset: 20 lastStableOffset: 5",
        "version: 0 producerId: 7 firstOffset: 30 lastOffset: 31 lastStableOffset: 30",
        f"Dumping {snap}",
        "producerId: 4242 producerEpoch: 3 coordinatorEpoch: 9 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1700000000000 firstSequence: 37 lastSequence: 41 lastOffset: 99 offsetDelta: 4 "
        "timestamp: 1700000000000",
        # No batch metadata (lastOffset -1): Kafka leaves the trailing space.
        "producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[55] "
        "lastTimestamp: 1700000000001 ",
    ]
    snap.write_bytes(snap.read_bytes()[:-1] + b"\x00")
    _, err = dumplog([snap])
    assert len(err) == 1 and err[0].startswith("Snapshot is corrupt (CRC is no longer valid). Stored crc: ")


def test_snapshot_first_sequence_wraps():
    e = ProducerSnapshotEntry(1, 0, 2, 10, 5, TS, 0, -1)  # lastSeq 2, delta 5: firstSeq wraps below 0
    assert "firstSequence: 2147483645 lastSequence: 2 " in snapshot_line(e)


def test_unknown_files_are_ignored_on_stderr(tmp_path):
    p = tmp_path / "00000000000000000000.log.deleted"
    p.write_bytes(G["v2_none_1rec"])
    out, err = dumplog([p])
    assert out == [f"Dumping {p}"] and err == [f"Ignoring unknown file {p}"]


def test_kraft_snapshot_file_header_lines(tmp_path):
    p = seg(tmp_path, G["v2_none_1rec"], "00000000000000000100-0000000002.checkpoint")
    b = seg(tmp_path, G["v2_none_1rec"], "bootstrap.checkpoint")
    out, _ = dumplog([p, b])
    assert out[1] == "Snapshot end offset: 100, epoch: 2"
    assert out[3] == f"Dumping {b}" and out[4] == "KRaft bootstrap snapshot"


def test_pair_spool_spills_and_keeps_order():
    s = PairSpool(max_memory=3)
    for i in range(10):
        s.add(i, i + 1)
    assert len(s) == 10 and s.file is not None
    assert list(s.newest_first()) == [(i, i + 1) for i in reversed(range(10))]
    assert list(s.in_order()) == [(i, i + 1) for i in range(10)]
    s.close()
