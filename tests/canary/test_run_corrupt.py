"""``canary run`` never launders (issue 23, item 5): corrupt data in a partition refuses it (exit 1, the file in the log
dir, its byte and offset; nothing published), ``skip_corrupt`` leaves it out and ``canary verify`` expects it gone;
``verify`` reads the original as ``dump --deep --verify`` does (a torn or zero-filled tail is what the broker's
recovery truncates, not an unreadable original); and a run whose own verify would fail publishes nothing."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import kafkatool.canary.run as canary_run_mod
from kafkatool.canary.manifest import Workdir
from kafkatool.canary.run import CanaryRunFailed, RunOptions, run_canary
from kafkatool.canary.verify import verify_workdir
from kafkatool.errors import CorruptDataError
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import crc32c
from kafkatool.record.file_records import iter_batches
from tests.support import damaged_batches as d


def log_dir(root: Path, partitions: dict[str, bytes]) -> Path:
    ld = root / "logs"
    ld.mkdir(parents=True)
    (ld / "meta.properties").write_text("version=0\nbroker.id=0\n")
    for name, data in partitions.items():
        (ld / name).mkdir()
        (ld / name / f"{0:020d}.log").write_bytes(data)
    return ld


def offsets(path: Path) -> list[int]:
    return [r.offset for b in iter_batches(path.read_bytes()) for r in b.records()]


@pytest.mark.parametrize("bad", [
    pytest.param(d.inner_crc_flip(1, Codec.GZIP, flip=2, base=3), id="v1-inner-crc"),
    pytest.param(d.inner_crc_flip(0, Codec.LZ4, flip=0, base=3), id="v0-inner-crc"),
    pytest.param(d.negative_delta(3, -2), id="negative-delta"),
    pytest.param(d.bad_control(offset=3), id="bad-control"),
])
def test_corrupt_data_refuses_the_partition_and_publishes_nothing(tmp_path, bad):
    ld = log_dir(tmp_path, {"ok-0": d.batch(0), "bad-0": d.batch(0) + bad + d.batch(8)})
    w = tmp_path / "w"
    with pytest.raises(CorruptDataError) as e:
        run_canary(ld, ["*"], w)
    assert e.value.exit_code == 1 and e.value.position == len(d.batch(0))
    assert e.value.path == str(ld / "bad-0" / f"{0:020d}.log")  # the log dir's file, not its copy in W
    assert e.value.message.startswith("offset ")
    assert not w.exists()  # a failed run removes what it wrote


def test_skip_corrupt_leaves_the_record_out_and_verify_expects_it(tmp_path):
    ld = log_dir(tmp_path, {"bad-0": d.batch(0) + d.inner_crc_flip(1, Codec.GZIP, flip=2, base=3) + d.batch(8)})
    w = tmp_path / "w"
    m = run_canary(ld, ["bad-0"], w, RunOptions(skip_corrupt=True))
    (p,) = m.partitions
    assert p.convert["corrupt_records_skipped"] == 1 and p.convert["corrupt_skipped"][0]["offset"] == 5
    assert offsets(w / "canary" / "bad-0" / f"{0:020d}.log") == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]
    assert m.options["skip_corrupt"] is True
    res = verify_workdir(w)
    (v,) = res.partitions
    assert res.ok and v.ok, v.differences
    assert v.expected["corrupt records left out by the run (skip_corrupt)"] == 1


@pytest.mark.parametrize("tail", [pytest.param(d.batch(3)[:40], id="torn"), pytest.param(b"\0" * 5000, id="zeros"),
                                  pytest.param(d.batch(3)[:9], id="short")])
def test_a_torn_or_zero_filled_tail_is_no_unreadable_original(tmp_path, tail):
    ld = log_dir(tmp_path, {"t-0": d.batch(0) + tail})
    w = tmp_path / "w"
    run_canary(ld, ["t-0"], w)
    res = verify_workdir(w)
    (v,) = res.partitions
    assert res.ok, v.differences
    assert v.expected["bytes of a torn tail left out, as the broker's recovery truncates them"] == len(tail)


def test_verify_fails_on_an_original_that_holds_corrupt_data_the_run_did_not_leave_out(tmp_path):
    # A canary made with skip_corrupt whose manifest no longer says so: verify reads the original as the converters
    # do, and the corrupt record stops it, as it would have stopped the run.
    ld = log_dir(tmp_path, {"bad-0": d.inner_crc_flip(1, Codec.GZIP, flip=1, base=0)})
    w = tmp_path / "w"
    run_canary(ld, ["bad-0"], w, RunOptions(skip_corrupt=True))
    wd = Workdir(w)
    m = wd.read_manifest()
    m.options["skip_corrupt"] = False
    wd.write_manifest(m)
    (v,) = verify_workdir(w).partitions
    assert not v.ok and "the saved original cannot be read" in v.differences[0]
    assert "offset 1: inner message" in v.differences[0]


def test_a_run_whose_own_verify_fails_publishes_nothing(tmp_path, monkeypatch):
    # A converter bug simulated: the canary's first record gets another value (CRC resealed, so the batch reads
    # fine). The run's own verify sees the difference: exit 1, the work dir removed.
    real = canary_run_mod.convert_partition_to_v2

    def buggy(src, dst_root, opts, **kw):
        stats = real(src, dst_root, opts, **kw)
        seg = dst_root / src.name / f"{0:020d}.log"
        data = bytearray(seg.read_bytes())
        data[-3] ^= 0x20  # inside the last record's value ("value", then the header count)
        size = struct.unpack_from(">i", data, 8)[0] + 12
        assert size == len(data)
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:size])))
        seg.write_bytes(bytes(data))
        return stats

    monkeypatch.setattr(canary_run_mod, "convert_partition_to_v2", buggy)
    ld = log_dir(tmp_path, {"t-0": d.batch(0)})
    w = tmp_path / "w"
    with pytest.raises(CanaryRunFailed, match=r"t-0: the canary would fail `canary verify`.*nothing is published") \
            as e:
        run_canary(ld, ["t-0"], w)
    assert e.value.exit_code == 1 and "value" in str(e.value)
    assert not w.exists()


def test_skip_corrupt_streams_a_wrapper_of_more_messages_than_a_run_holds(tmp_path, monkeypatch):
    """The same run and verify when every batch holds more records than ``budget.record_chunk``: the checks, the
    conversion and verify's reading of the original go a chunk at a time (never a list of a whole batch), and the
    bad inner message is left out of the streamed wrapper."""
    from kafkatool.record import default_records as v2
    from kafkatool.record import legacy_records as legacy
    from kafkatool.util import budget

    ld = log_dir(tmp_path, {"bad-0": d.batch(0) + d.inner_crc_flip(1, Codec.GZIP, flip=2, base=3) + d.batch(8)})
    w = tmp_path / "w"
    monkeypatch.setattr(budget, "record_chunk", lambda: 2)
    for cls in (v2.DefaultRecordBatch, legacy.LegacyRecordBatch):
        def bounded(self, *, limit=None, _whole=cls.records):  # type: ignore[no-untyped-def]
            out = _whole(self, limit=limit)
            assert len(out) <= 2, f"a batch of {len(out)} records decoded into one list"
            return out

        monkeypatch.setattr(cls, "records", bounded)
    m = run_canary(ld, ["bad-0"], w, RunOptions(skip_corrupt=True))
    (p,) = m.partitions
    assert p.convert["corrupt_records_skipped"] == 1 and p.convert["corrupt_skipped"][0]["offset"] == 5
    res = verify_workdir(w)
    (v,) = res.partitions
    assert res.ok and v.ok, v.differences
    assert v.expected["corrupt records left out by the run (skip_corrupt)"] == 1
    monkeypatch.undo()
    assert offsets(w / "canary" / "bad-0" / f"{0:020d}.log") == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]
