"""``kafkatool canary run`` and ``verify``: clean conversions pass; a canary altered after the run (a flipped byte,
a dropped batch, a changed timestamp, a rewritten index, a batch over max.message.bytes) fails with exit 1 and a
report that says where; Kafka's own reader agrees that each canary holds its original's records."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from kafkatool.canary.manifest import Workdir
from kafkatool.record.default_records import crc32c
from kafkatool.record.file_records import FileRecords
from tests.support.canary_dirs import mixed_dir, tree
from tests.support.cli import run_cli

PARTITIONS = ["sensors-2016-0", "sensors-2017-0", "legacy-events-0", "legacy-compacted-0", "payments-0",
              "clickstream-0", "audit-log-0", "__consumer_offsets-0"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mixed_dir(tmp_path_factory.mktemp("runverify") / "logs")


@pytest.fixture(scope="module")
def canary(mixed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = tmp_path_factory.mktemp("w") / "c1"
    before = tree(mixed)
    r = run_cli("canary", "run", mixed, "--partitions", ",".join(PARTITIONS), "--workdir", w, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert tree(mixed) == before  # the log dir is never touched (bytes and mtimes)
    return w


def _verify(w: Path) -> tuple[int, list[dict], str]:
    r = run_cli("canary", "verify", w, "--format", "json")
    return r.returncode, [json.loads(x) for x in r.stdout.splitlines()], r.stderr


def _copy(w: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "w"
    shutil.copytree(w, dst)
    return dst


def test_run_writes_originals_canary_and_manifest(canary: Path, mixed: Path) -> None:
    m = Workdir(canary).read_manifest()
    assert [p.name for p in m.partitions] == sorted(PARTITIONS)
    assert m.log_dir == str(mixed.resolve()) and m.tool == "kafkatool" and m.options["batch_bytes"] == 0
    for p in m.partitions:
        assert sorted(f.name for f in p.inputs) == sorted(x.name for x in (mixed / p.name).iterdir())
        for f in p.inputs:
            src = mixed / p.name / f.name
            assert (canary / "originals" / p.name / f.name).read_bytes() == src.read_bytes()
            assert f.size == src.stat().st_size and f.mtime_ns == src.stat().st_mtime_ns
        assert sorted(f.name for f in p.outputs) == sorted(x.name for x in (canary / "canary" / p.name).iterdir())
        assert p.segments == sorted(int(f.name[:20]) for f in p.outputs if f.name.endswith(".log"))
    sensors = m.partition("sensors-2016-0")
    assert sensors.convert["records_in"] == sensors.convert["records_out"] == 1200


def test_clean_canary_passes(canary: Path) -> None:
    rc, lines, err = _verify(canary)
    assert rc == 0, (lines, err)
    parts = {j["partition"]: j for j in lines if j["type"] == "partition"}
    assert set(parts) == set(PARTITIONS)
    for name, j in parts.items():
        assert j["ok"] and j["difference_count"] == 0, (name, j["differences"])
        assert j["records"]["original"] == j["records"]["canary"] > 0
        assert set(j["magics"]["canary"]) == {"v2"}
    assert parts["sensors-2016-0"]["expected_changes"] == {
        "v0 records without a timestamp: timestamp -1, type CreateTime": 1200,
        "legacy per-message CRC-32 replaced by the v2 batch CRC-32C": 1200,
        "compressed legacy wrappers recompressed into v2 batches (same records, new bytes)": 39}
    assert parts["payments-0"]["expected_changes"] == {} and parts["payments-0"]["bytes"]["delta"] == 0
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["ok"] and not summary["interrupted"]
    state = {j["partition"]: j["state"] for j in lines if j["type"] == "log-dir-partition"}
    assert state["sensors-2016-0"] == "original" and state["payments-0"] == "identical"
    assert json.loads((canary / "verify.json").read_text())["ok"] is True


def test_flipped_byte(canary: Path, tmp_path: Path) -> None:
    w = _copy(canary, tmp_path)
    seg = w / "canary" / "sensors-2017-0" / "00000000000000000333.log"
    with FileRecords(seg) as fr:
        second = list(fr.batches())[1]
        pos, size, last = second.position, second.size, second.last_offset
    data = bytearray(seg.read_bytes())
    data[pos + size - 3] ^= 0x01  # inside the value: only the CRC can tell
    seg.write_bytes(bytes(data))
    rc, lines, err = _verify(w)
    assert rc == 1
    j = next(x for x in lines if x.get("partition") == "sensors-2017-0" and x["type"] == "partition")
    text = "\n".join(j["differences"])
    assert "canary 00000000000000000333.log differs from what `canary run` wrote" in text
    assert f"00000000000000000333.log at byte {pos}: Record is corrupt" in text and f"offsets {last}..{last}" in text
    assert "sensors-2017-0: " in err and not lines[-1]["ok"]


def test_dropped_batch(canary: Path, tmp_path: Path) -> None:
    w = _copy(canary, tmp_path)
    seg = w / "canary" / "legacy-compacted-0" / "00000000000000000000.log"
    with FileRecords(seg) as fr:
        batches = list(fr.batches())
        victim = batches[3]
        pos, size = victim.position, victim.size
        offsets = [r.offset for r in victim.records()]
    data = seg.read_bytes()
    seg.write_bytes(data[:pos] + data[pos + size:])
    rc, lines, _ = _verify(w)
    assert rc == 1
    j = next(x for x in lines if x.get("partition") == "legacy-compacted-0" and x["type"] == "partition")
    span = f"offset {offsets[0]}" if len(offsets) == 1 else f"offsets {offsets[0]}..{offsets[-1]}"
    assert any(d == f"{span} ({len(offsets)} item(s)) missing from the canary" for d in j["differences"]), j
    assert any("is not what LogSegment.recover rebuilds" in d for d in j["differences"]) or \
        j["records"]["canary"] == j["records"]["original"] - len(offsets)


def test_changed_timestamp_with_a_valid_crc(canary: Path, tmp_path: Path) -> None:
    """The worst case: a canary whose batch is self-consistent (CRC recomputed) but holds a different timestamp."""
    w = _copy(canary, tmp_path)
    seg = w / "canary" / "sensors-2017-0" / "00000000000000000632.log"
    with FileRecords(seg) as fr:
        b = list(fr.batches())[5]
        pos, size, offset = b.position, b.size, b.base_offset
        ts = b.records()[0].timestamp
    data = bytearray(seg.read_bytes())
    for field in (27, 35):  # baseTimestamp and maxTimestamp: the record's timestamp moves by +1000
        (v,) = struct.unpack_from(">q", data, pos + field)
        struct.pack_into(">q", data, pos + field, v + 1000)
    struct.pack_into(">I", data, pos + 17, crc32c(bytes(data[pos + 21:pos + size])))
    seg.write_bytes(bytes(data))
    rc, lines, _ = _verify(w)
    assert rc == 1
    j = next(x for x in lines if x.get("partition") == "sensors-2017-0" and x["type"] == "partition")
    want = (f"offset {offset}: timestamp {ts} in the original (v1, 00000000000000000632.log at byte ")
    assert any(d.startswith(want) and d.endswith(f"{ts + 1000} in the canary (00000000000000000632.log at byte {pos})")
               for d in j["differences"]), j["differences"]


def test_changed_leader_epoch_outside_the_crc(canary: Path, tmp_path: Path) -> None:
    """partitionLeaderEpoch is not covered by the batch CRC: only the field comparison and the epoch rebuild see it."""
    w = _copy(canary, tmp_path)
    seg = w / "canary" / "sensors-2016-0" / "00000000000000000000.log"
    with FileRecords(seg) as fr:
        b = list(fr.batches())[2]
        pos, first = b.position, b.base_offset
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, pos + 12, 99)
    seg.write_bytes(bytes(data))
    rc, lines, _ = _verify(w)
    assert rc == 1
    j = next(x for x in lines if x.get("partition") == "sensors-2016-0" and x["type"] == "partition")
    # One message for the batch, not one per record.
    msgs = [d for d in j["differences"] if "leader_epoch -1 in the original" in d]
    assert len(msgs) == 1 and msgs[0].startswith(f"offsets {first}..") and "99 in the canary" in msgs[0], msgs
    assert any(d.startswith("leader epochs recovery would assign: [(99, ") for d in j["differences"])


def test_rewritten_index_and_oversized_batches(canary: Path, tmp_path: Path) -> None:
    w = _copy(canary, tmp_path)
    idx = w / "canary" / "legacy-events-0" / "00000000000000000230.index"
    good = idx.read_bytes()
    data = bytearray(good)
    struct.pack_into(">i", data, 4, struct.unpack_from(">i", data, 4)[0] + 12)  # first entry's position
    idx.write_bytes(bytes(data))
    first = next(i for i, (a, b) in enumerate(zip(good, data, strict=True)) if a != b)
    m = json.loads((w / "manifest.json").read_text())
    m["options"]["max_message_bytes"] = 150  # v1 messages of <= 150 bytes become larger v2 batches
    (w / "manifest.json").write_text(json.dumps(m))
    rc, lines, _ = _verify(w)
    assert rc == 1
    parts = {x["partition"]: x for x in lines if x["type"] == "partition"}
    assert any(d.startswith("00000000000000000230.index is not what LogSegment.recover rebuilds")
               and f"first difference at byte {first})" in d for d in parts["legacy-events-0"]["differences"])
    over = [d for d in parts["sensors-2017-0"]["differences"] if "over max.message.bytes 150" in d]
    assert over and parts["sensors-2017-0"]["warnings"]  # batches over it before the conversion: warnings only


def test_apply_refuses_a_failed_or_missing_verify(canary: Path, mixed: Path, tmp_path: Path) -> None:
    w = _copy(canary, tmp_path)
    before = tree(mixed)
    (w / "verify.json").unlink()
    r = run_cli("canary", "apply", w)
    assert r.returncode == 2 and "has not been verified" in r.stderr
    seg = w / "canary" / "sensors-2016-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[100] ^= 0xFF
    seg.write_bytes(bytes(data))
    assert _verify(w)[0] == 1
    r = run_cli("canary", "apply", w)
    assert r.returncode == 1 and "failed" in r.stderr
    assert tree(mixed) == before


def test_damaged_work_dirs_are_one_line_errors(canary: Path, tmp_path: Path) -> None:
    w = _copy(canary, tmp_path)
    (w / "manifest.json").write_text('{"tool": "kafkatool", "partitions": [')
    for cmd in ("verify", "apply", "rollback"):
        r = run_cli("canary", cmd, w)
        assert r.returncode == 2 and "unreadable canary manifest" in r.stderr and "Traceback" not in r.stderr, cmd
    r = run_cli("canary", "verify", tmp_path / "nowhere")
    assert r.returncode == 2 and "no canary manifest" in r.stderr
    w2 = _copy(canary, tmp_path / "second")
    (w2 / "originals" / "sensors-2016-0" / "00000000000000000386.snapshot").unlink()
    rc, lines, _ = _verify(w2)
    assert rc == 1 and any("saved original 00000000000000000386.snapshot does not match the manifest" in d
                           for x in lines if x.get("partition") == "sensors-2016-0" for d in x.get("differences", []))
    r = run_cli("canary", "rollback", w2)
    assert r.returncode == 1 and "a byte-exact rollback is impossible" in r.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--partitions", "nope-*"], "matches no partition"),
    (["--partitions", "sensors-*", "--target-format", "1"], "target-format"),
])
def test_run_usage_errors(mixed: Path, tmp_path: Path, args: list[str], message: str) -> None:
    r = run_cli("canary", "run", mixed, "--workdir", tmp_path / "w", *args)
    assert r.returncode == 2 and message in r.stderr and not (tmp_path / "w").exists()


def test_run_refuses_bad_workdirs_and_pending_files(mixed: Path, tmp_path: Path) -> None:
    r = run_cli("canary", "run", mixed, "-p", "sensors-2016-0", "-w", mixed / "canary-w")
    assert r.returncode == 2 and "--workdir: " in r.stderr and "lies inside the input log dir" in r.stderr
    assert not (mixed / "canary-w").exists()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    r = run_cli("canary", "run", mixed, "-p", "sensors-2016-0", "-w", busy)
    assert r.returncode == 2 and "new or empty" in r.stderr
    d = tmp_path / "logs"
    d.mkdir()
    shutil.copytree(mixed / "sensors-2016-0", d / "sensors-2016-0")
    (d / "sensors-2016-0" / "00000000000000000386.log.swap").write_bytes(b"")
    r = run_cli("canary", "run", d, "-p", "sensors-2016-0", "-w", tmp_path / "w2")
    assert r.returncode == 2 and "unfinished cleaner/split files" in r.stderr and not (tmp_path / "w2").exists()


def test_run_on_a_corrupt_partition_fails_and_cleans_up(mixed: Path, tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    shutil.copytree(mixed / "sensors-2017-0", d / "sensors-2017-0")
    seg = d / "sensors-2017-0" / "00000000000000000333.log"
    data = bytearray(seg.read_bytes())
    data[40] ^= 0xFF
    seg.write_bytes(bytes(data))
    r = run_cli("canary", "run", d, "-p", "sensors-2017-0", "-w", tmp_path / "w")
    assert r.returncode == 1 and "00000000000000000333.log at byte 0" in r.stderr
    assert not (tmp_path / "w").exists()


def test_human_reports(canary: Path, tmp_path: Path, mixed: Path) -> None:
    r = run_cli("canary", "verify", canary)
    assert r.returncode == 0
    for text in ("canary verify:", "sensors-2016-0", "expected: v0 records without a timestamp", "log dir",
                 "COMPRESSION"):
        assert text in r.stdout, text
    assert "canary verify: PASSED" in r.stderr
    r = run_cli("canary", "run", mixed, "-p", "sensors-2017-0", "-w", tmp_path / "w")
    assert r.returncode == 0 and "canary run: 1 partition(s)" in r.stdout and "546 -> 546" in r.stdout


@pytest.mark.interop
def test_kafka_reads_each_canary_as_its_original(canary: Path, kafka_ref) -> None:  # type: ignore[no-untyped-def]
    """Kafka's own FileRecords reads every canary segment: all batches valid, magic 2, and the same records (offset,
    timestamp, key, value) as Kafka reads from the original segment."""
    m = Workdir(canary).read_manifest()
    pairs = [(canary / "originals" / p.name / f"{s:020d}.log", canary / "canary" / p.name / f"{s:020d}.log")
             for p in m.partitions for s in p.segments]
    groups = [[kafka_ref.dump_args(o, payload="crc32"), kafka_ref.dump_args(c, payload="crc32")] for o, c in pairs]
    for (_orig, can), (ro, rc) in zip(pairs, kafka_ref.run_batches(groups), strict=True):
        assert ro.returncode == 0 and rc.returncode == 0, (can, rc.lines[-3:])
        assert all(b["isValid"] and b["magic"] == 2 for b in rc.of_type("batch")), can

        def recs(run):  # type: ignore[no-untyped-def]
            return [(r["offset"], r["timestamp"], r["key"], r["value"]) for r in run.of_type("record")
                    if not r.get("control")]

        control_o = sum(1 for b in ro.of_type("batch") if b.get("isControl"))
        control_c = sum(1 for b in rc.of_type("batch") if b.get("isControl"))
        assert control_o == control_c, can
        assert recs(ro) == recs(rc), can
