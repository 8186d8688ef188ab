"""fetch-sim against Kafka's own bytes (no JVM needed).

Expected outputs are kafka-clients 3.9.1 ``LazyDownConversionRecordsSend`` bytes from
``tests/vectors/kafka-3.9.1-golden.txt`` (``down ...`` lines) and
``/work/shared/kafka-ref/golden/golden3-output.txt`` (the duplicate-first-batch quirk, copied below).
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from kafkatool.errors import UsageError
from kafkatool.fetch.lazy import iter_chunks, overflow_buffer
from kafkatool.fetch.response import UNSUPPORTED_COMPRESSION_TYPE
from kafkatool.fetch.simulate import FetchOptions, PartitionFetch, PartitionLog, PartitionRequest, simulate
from kafkatool.log.layout import TopicPartition
from kafkatool.record.batch import MAGIC_V1
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import build_batch, build_end_txn_marker
from kafkatool.record.file_records import iter_batches
from tests.support.paths import VECTORS, golden

TS = 1700000000000


def _down_vectors() -> dict[str, bytes]:
    out = {}
    for line in (VECTORS / "kafka-3.9.1-golden.txt").read_text().splitlines():
        if line.startswith("down ") and " hex=" in line:
            name, hexdata = line.split(" hex=", 1)
            out[name[5:]] = bytes.fromhex(hexdata)
    return out


DOWN = _down_vectors()
G = golden()
# golden3-output.txt: [commit marker @0 (78 B)][v2 "k"/"v" @1 (70 B)] -> v1, Spre 148.
QUIRK_HEX = (
    "00000000000000010000001839268c3301000000018bcfe56800000000016b00000001760000000000000001000000183926"
    "8c3301000000018bcfe56800000000016b0000000176ffffffffffffffff0000004d" + "00" * 64)


def _log(tmp_path: Path, data: bytes, name: str = "00000000000000000000.log") -> PartitionLog:
    d = tmp_path / "t-0"
    d.mkdir(exist_ok=True)
    (d / name).write_bytes(data)
    return PartitionLog.from_file(d / name)


def _run(log: PartitionLog, offset: int, size: int, version: int, *, min_one: bool = False,
         position: int | None = None) -> tuple[bytes, PartitionFetch]:
    buf = io.BytesIO()
    opts = FetchOptions(fetch_version=version, partition_max_bytes=size, min_one_message=min_one)
    plans = simulate(opts, [PartitionRequest(log, offset, position)], buf, raw=True)
    return buf.getvalue(), plans[0]


@pytest.mark.parametrize("name,version,offset,case", [
    pytest.param("v2none->v1 first=101", 3, 101, "overflow", id="v2none-v1-overflow"),
    pytest.param("v2none->v0 first=100", 1, 100, "overflow", id="v2none-v0-overflow"),
    pytest.param("v2gzip->v1 first=101", 3, 101, "exact", id="v2gzip-v1-spre-grows"),
    pytest.param("v2gzip->v0 first=100", 1, 100, "overflow", id="v2gzip-v0"),
])
def test_three_record_vectors_match_kafka(tmp_path: Path, name: str, version: int, offset: int, case: str) -> None:
    src = G["src_v2_none_3rec_hdr(base100)"] if "none" in name else G["v2_gzip_3rec(base100)"]
    out, plan = _run(_log(tmp_path, src), offset, len(src), version)
    assert out == DOWN[name]
    assert plan.committed_size == len(out)
    assert plan.stats.case == case


def test_gzip_committed_size_is_the_first_converted_batch(tmp_path: Path) -> None:
    # Spec §5.3: the v1 wrapper (115 bytes) is larger than the 112-byte source slice: Spre = 115, no overflow.
    out, plan = _run(_log(tmp_path, G["v2_gzip_3rec(base100)"]), 101, 112, 3)
    assert plan.read.size == 112 and plan.committed_size == 115 and len(out) == 115
    assert plan.consumer is not None and plan.consumer.records_returned == 2  # 101, 102; 100 is below the offset
    assert plan.consumer.records_below_fetch_offset == 1


def test_control_batch_only_commits_twelve_bytes(tmp_path: Path) -> None:
    marker = build_end_txn_marker(offset=0, timestamp=TS, producer_id=1, producer_epoch=0, commit=True,
                                  coordinator_epoch=0)
    out, plan = _run(_log(tmp_path, marker), 0, 1000, 3)
    assert out == DOWN["commitOnly->v1"] == bytes.fromhex("ffffffffffffffff0000003d")
    assert plan.consumer is not None and plan.consumer.outcome == "KafkaException"
    _, plan = _run(_log(tmp_path, marker), 0, 1000, 2)
    assert plan.consumer is not None and plan.consumer.outcome == "RecordTooLargeException"


@pytest.mark.parametrize("version,name", [(3, "[full v2 1rec + 30-byte partial]->v1"),
                                          (1, "[full v2 1rec + 30-byte partial]->v0")])
def test_partial_tail_batch_in_the_slice(tmp_path: Path, version: int, name: str) -> None:
    one = G["v2_none_1rec"]
    second = build_batch([(1, TS, b"k", b"v" * 40, ())])
    out, plan = _run(_log(tmp_path, one + second), 0, 100, version)  # slice ends 30 bytes into the second batch
    assert out == DOWN[name]
    at = plan.stats.converted_bytes  # the one converted message (36 bytes v1, 28 bytes v0)
    assert at == (36 if version == 3 else 28)
    assert plan.stats.overflow_headers == [at]
    assert struct.unpack_from(">qi", out, at) == (-1, 100 - at + 1)  # 0x41 / 0x49 as in the spec


def test_duplicate_first_batch_quirk(tmp_path: Path) -> None:
    marker = build_end_txn_marker(offset=0, timestamp=TS, producer_id=1, producer_epoch=0, commit=True,
                                  coordinator_epoch=0)
    data = build_batch([(1, TS, b"k", b"v", ())])
    out, plan = _run(_log(tmp_path, marker + data), 0, 148, 3)
    assert out == bytes.fromhex(QUIRK_HEX)
    assert plan.stats.duplicated_first_batch
    view = plan.consumer
    assert view is not None
    assert (view.complete_batches, view.records_sent, view.records_returned, view.duplicate_offsets) == (2, 2, 1, 1)
    assert view.next_fetch_offset == 2


def test_overflow_header_repeats_every_128k(tmp_path: Path) -> None:
    # One big uncompressed v2 batch; fetching its last records drops the rest in conversion (legacy
    # uncompressed messages are individually addressable), so ~300 KiB must be padded.
    recs = [(i, TS + i, b"key", b"x" * 100, ()) for i in range(3000)]
    src = build_batch(recs)
    out, plan = _run(_log(tmp_path, src), 2990, len(src), 3)
    assert len(out) == len(src) == plan.committed_size
    stats = plan.stats
    assert stats.case == "overflow" and stats.overflow_buffers == 3
    converted = stats.converted_bytes
    assert converted == len(out) - stats.overflow_bytes
    r = len(src) - converted
    for k, at in enumerate(stats.overflow_headers):
        assert at == converted + k * 131072
        remaining = r - k * 131072
        assert struct.unpack_from(">qi", out, at) == (-1, max(remaining + 1, 61))
        end = min(at + 131072, len(out))
        assert out[at + 12:end] == bytes(end - at - 12)
    assert plan.consumer is not None and plan.consumer.records_returned == 10
    assert plan.consumer.tail == "overflow"


def test_cut_when_converted_data_is_larger(tmp_path: Path) -> None:
    # v2 -> v0 grows small records (26 bytes of v0 overhead each): the output is cut at Spre, mid-message.
    src = b"".join(build_batch([(b * 10 + i, TS, b"k", b"v", ()) for i in range(10)]) for b in range(5))
    out, plan = _run(_log(tmp_path, src), 0, len(src), 1)
    assert plan.stats.case == "cut" and len(out) == len(src)
    assert plan.stats.cut_bytes > 0 and plan.stats.overflow_bytes == 0
    view = plan.consumer
    assert view is not None and view.tail == "truncated-batch" and view.records_returned == view.records_sent


def test_zstd_first_batch_is_unsupported_compression_type(tmp_path: Path) -> None:
    src = G["v2_zstd_3rec"]
    resp = io.BytesIO()
    log = _log(tmp_path, src)
    plans = simulate(FetchOptions(fetch_version=3), [PartitionRequest(log, 0)], resp)
    assert plans[0].error_code == UNSUPPORTED_COMPRESSION_TYPE and plans[0].committed_size == -1
    assert resp.getvalue()[-18:] == struct.pack(">ihqi", 0, 76, -1, -1)


def test_zstd_after_the_first_chunk(tmp_path: Path) -> None:
    first = build_batch([(0, TS, b"k", b"v" * 100, ())])
    zstd = build_batch([(i, TS, b"k", b"v" * 100, ()) for i in range(1, 4)], codec=Codec.ZSTD)
    tail = build_batch([(i, TS, b"k", b"v" * 100, ()) for i in range(4, 3000)])
    log = _log(tmp_path, first + zstd + tail)
    out, plan = _run(log, 0, 100_000, 3)  # <= 128 KiB committed beyond the first chunk: one overflow, no error
    assert plan.stats.zstd_overflow and plan.stats.case == "overflow" and plan.stats.send_error is None
    assert plan.consumer is not None and plan.consumer.records_returned == 1
    out, plan = _run(log, 0, 300_000, 3)  # more than 128 KiB left: Kafka's iterator is FAILED -> send fails
    assert plan.stats.case == "send-failed" and "IllegalStateException" in (plan.stats.send_error or "")
    assert len(out) == plan.stats.converted_bytes + 131072
    assert plan.consumer is not None and plan.consumer.outcome == "disconnected"


def test_min_one_message_grows_the_slice(tmp_path: Path) -> None:
    src = build_batch([(i, TS, b"k", b"v" * 50, ()) for i in range(20)])
    log = _log(tmp_path, src)
    out, plan = _run(log, 0, 100, 3, min_one=False)
    assert out == b"" and plan.read.size == 100 and plan.committed_size == 0  # no complete batch in the slice
    assert plan.read.first_batch_too_large  # FetchDataInfo.firstEntryIncomplete
    out, plan = _run(log, 0, 100, 3, min_one=True)
    assert plan.read.size == len(src) and not plan.read.first_batch_too_large
    assert plan.consumer is not None and plan.consumer.records_returned == 20


def test_position_skips_the_search(tmp_path: Path) -> None:
    a = build_batch([(0, TS, b"a", b"1", ())])
    b = build_batch([(1, TS, b"b", b"2", ())])
    log = _log(tmp_path, a + b)
    out, plan = _run(log, 0, 1000, 3, position=len(a))
    assert plan.read.position == len(a)
    assert [r.offset for batch in iter_batches(out[:plan.consumer.complete_bytes])  # type: ignore[union-attr]
            for r in batch.records()] == [1]


def test_overflow_buffer_layout() -> None:
    assert overflow_buffer(0) == bytes.fromhex("ffffffffffffffff0000003d")
    assert overflow_buffer(16)[:12] == bytes.fromhex("ffffffffffffffff0000003d") and len(overflow_buffer(16)) == 17
    big = overflow_buffer(500_000)
    assert len(big) == 131072 and struct.unpack_from(">qi", big) == (-1, 500_001) and not any(big[12:])


def test_chunk_grouping_is_kafkas() -> None:
    batches = [build_batch([(i, TS, b"k", b"v" * n, ())]) for i, n in enumerate([100, 60_000, 60_000, 20_000, 200_000])]
    walked = list(iter_batches(b"".join(batches)))
    sizes = [[b.size for b in g] for g in iter_chunks(iter(walked), 131072)]
    assert [len(g) for g in sizes] == [3, 1, 1]  # 100+60k+60k fits, +20k does not; a big batch stands alone
    assert all(sum(g) <= 131072 or len(g) == 1 for g in sizes)


def test_legacy_source_copied_verbatim_to_magic_one(tmp_path: Path) -> None:
    v1 = G["v1_none_1rec"]
    out, plan = _run(_log(tmp_path, v1), 0, 1000, 3)
    assert out == v1 and plan.stats.case == "exact"
    assert next(iter(iter_batches(out))).magic == MAGIC_V1


def test_topic_partition_from_dir(tmp_path: Path) -> None:
    log = _log(tmp_path, G["v2_none_1rec"])
    assert log.topic_partition == TopicPartition("t", 0)


@pytest.mark.parametrize("log_magic", [0, 1])
def test_a_broker_below_ibp_3_sends_a_readable_log_unconverted(tmp_path: Path, log_magic: int) -> None:
    """``maybeConvertFetchedData`` goes by the magic it takes the log to hold (the topic's message.format.version
    below IBP 3.0): a Fetch version that reads it gets the slice as it is, partial last batch included, no padding
    (seen from a real 3.9 ZooKeeper broker at IBP 2.8, tests/broker/test_fetch.py)."""
    from tests.support.segments import legacy

    data = b"".join(legacy(log_magic, i, value=40 + i) for i in range(6))
    log = _log(tmp_path, data)
    size = len(data) - 7  # the slice ends inside the last message
    for version in (2, 3) if log_magic == 1 else (0, 1, 2, 3):
        buf = io.BytesIO()
        opts = FetchOptions(fetch_version=version, partition_max_bytes=size, log_magic=log_magic)
        (plan,) = simulate(opts, [PartitionRequest(log, 0)], buf, raw=True)
        assert buf.getvalue() == data[:size] and plan.committed_size == size and plan.lazy is None
    # the default (IBP 3.0+: the log is taken to be v2) converts even v0/v1 batches, with its padding
    buf = io.BytesIO()
    simulate(FetchOptions(fetch_version=3, partition_max_bytes=size), [PartitionRequest(log, 0)], buf, raw=True)
    assert buf.getvalue() != data[:size] and len(buf.getvalue()) == size
    with pytest.raises(UsageError):
        FetchOptions(log_magic=3)
