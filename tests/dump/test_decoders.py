"""``kafkatool dump`` with decoders and filters, through the real CLI.

Fixtures:

* segments of ``__transaction_state`` and ``__consumer_offsets`` rebuilt from a real Kafka 3.9 broker's
  ``kafka-dump-log.sh`` output (``tests/vectors/decoders/strimzi-kafka-dump-log.txt``): every batch's CRC
  equals the printed one, so the bytes are the broker's, and kafkatool's ``--format dump-log`` must print
  the published lines;
* a small ``kafkatool sample`` log dir: ``__consumer_offsets`` (offset commits, transactional offset commits
  with their markers, tombstones, compaction) and ``payments`` (transactional producers, aborts);
* hand-built segments for what decoders cannot read.

Expected counts are computed independently from the segment bytes (``file_records.iter_batches``), not
from the command's output.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkatool.decoders.offsets import offset_commit_record, partition_for_group, read_offset_commit_key
from kafkatool.decoders.transactions import transaction_record
from kafkatool.record import default_records as v2
from kafkatool.record.batch import Record
from kafkatool.record.file_records import RecordBatch, iter_batches
from tests.decoders.test_registry import ENTRY_POINTS, PLUGIN_MODULE
from tests.support.cli import run_cli
from tests.support.paths import ROOT, VECTORS


def published() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in (VECTORS / "decoders" / "strimzi-kafka-dump-log.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
        else:
            current.append(line)
    return sections


PUBLISHED = published()


def printed_crcs(lines: list[str]) -> list[int]:
    return [int(m.group(1)) for line in lines if (m := re.search(r" crc: (\d+) isvalid", line))]


def crcs(data: bytes) -> list[int]:
    return [b.crc for b in iter_batches(data)]


# ---------------------------------------------------------------------------------------------- Kafka's lines

def strimzi_transaction_state(directory: Path) -> Path:
    """``__transaction_state-30`` of the published dump: one transaction of ``kafka-txn-0`` (producer 1, epoch 0,
    timeout 60 s) from Empty to CompleteCommit. The start timestamps (not printed by Kafka) are the ones the
    CRCs admit: -1 while Empty, then the first AddPartitions time."""
    started = 1742739702876
    both = {"output-topic": [0], "__consumer_offsets": [12]}
    rows = [(1742739549438, "Empty", {}, 1742739549435, -1),
            (1742739702876, "Ongoing", {"output-topic": [0]}, 1742739702876, started),
            (1742739702882, "Ongoing", both, 1742739702882, started),
            (1742739703134, "PrepareCommit", both, 1742739703132, started),
            (1742739703240, "CompleteCommit", {}, 1742739703142, started)]
    batches = []
    for offset, (ts, state, partitions, updated, start) in enumerate(rows):
        k, v = transaction_record("kafka-txn-0", producer_id=1, producer_epoch=0, timeout_ms=60000, state=state,
                                  partitions=partitions, last_update_timestamp=updated, start_timestamp=start)
        batches.append(v2.build_batch([(offset, ts, k, v, ())], partition_leader_epoch=0))
    return write_log(directory / "__transaction_state-30", b"".join(batches))


def strimzi_consumer_offsets(directory: Path) -> Path:
    """``__consumer_offsets-12``: the transactional offset commit of ``my-group`` at offset 7 and its COMMIT
    marker, at byte 1974 as published. The published dump elides offsets 0-6: here they are offset commits of
    another group, the last one's metadata sized to end at byte 1974."""
    filler = [v2.build_batch([(o, 1742739600000 + o, *offset_commit_record("filler", "t", 0, o,
                                                                            commit_timestamp=1742739600000), ())])
              for o in range(6)]
    room = 1974 - sum(map(len, filler))
    for n in range(room):
        last = v2.build_batch([(6, 1742739600006, *offset_commit_record("filler", "t", 0, 6, metadata="m" * n,
                                                                        commit_timestamp=1742739600006), ())])
        if len(last) == room:
            break
    k, v = offset_commit_record("my-group", "input-topic", 0, 1, commit_timestamp=1742739702993)
    commit = v2.build_batch([(7, 1742739703027, k, v, ())], producer_id=1, producer_epoch=0, base_sequence=0,
                            is_transactional=True, partition_leader_epoch=0)
    marker = v2.build_end_txn_marker(offset=8, timestamp=1742739703213, producer_id=1, producer_epoch=0, commit=True,
                                     coordinator_epoch=0, partition_leader_epoch=0)
    data = b"".join([*filler, last, commit, marker])
    assert data.index(commit) == 1974
    return write_log(directory / "__consumer_offsets-12", data)


def write_log(directory: Path, data: bytes, base: int = 0) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{base:020d}.log"
    log.write_bytes(data)
    return log


def test_transaction_log_decoder_prints_kafkas_lines(tmp_path: Path) -> None:
    log = strimzi_transaction_state(tmp_path)
    expected = PUBLISHED["transactions"]
    assert crcs(log.read_bytes()) == printed_crcs(expected)  # the broker's bytes
    for extra in ([], ["--deep"], ["--print-data", "--deep"]):
        r = run_cli("dump", log, "-f", "dump-log", "--decoder", "transactions", *extra)
        assert (r.returncode, r.stderr) == (0, "")
        assert r.stdout.splitlines() == [f"Dumping {log}", *expected]


def test_offsets_decoder_prints_kafkas_lines(tmp_path: Path) -> None:
    log = strimzi_consumer_offsets(tmp_path)
    expected = PUBLISHED["offsets"]
    assert crcs(log.read_bytes())[-2:] == printed_crcs(expected)
    r = run_cli("dump", log, "-f", "dump-log", "--decoder", "offsets")
    assert (r.returncode, r.stderr) == (0, "")
    lines = r.stdout.splitlines()
    assert lines[-4:] == expected
    assert lines[:2] == [f"Dumping {log}", "Log starting offset: 0"]
    assert lines[3] == ('| offset: 0 CreateTime: 1742739600000 keySize: 17 valueSize: 24 sequence: -1 headerKeys: [] '
                        'key: {"type":"1","data":{"group":"filler","topic":"t","partition":0}} '
                        'payload: {"version":"3","data":{"offset":0,"leaderEpoch":-1,"metadata":"",'
                        '"commitTimestamp":1742739600000}}')


def test_without_a_decoder_kafkas_string_decoder_prints_the_raw_bytes(tmp_path: Path) -> None:
    """The same batch without --offsets-decoder: StringDecoder over binary keys (what the decoders are for)."""
    log = strimzi_consumer_offsets(tmp_path)
    r = run_cli("dump", log, "-f", "dump-log", "--print-data", "--from-offset", "7", "--to-offset", "7")
    record = r.stdout.split("\n")[-2]  # not splitlines(): the key holds \x0b, a line break to Python
    assert record.startswith("| offset: 7 CreateTime: 1742739703027 keySize: 29 valueSize: 24 sequence: 0 "
                             "headerKeys: [] key: \x00\x01\x00\x08my-group\x00\x0binput-topic\x00\x00\x00\x00 "
                             "payload: \x00\x03")


# ---------------------------------------------------------------------------------------------- sample log dir

@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("decoders") / "kafka-logs"
    r = run_cli("sample", root, "--records", "200")
    assert r.returncode == 0, r.stderr
    return root


def batches(part: Path) -> Iterator[tuple[Path, RecordBatch]]:
    for log in sorted(part.glob("*.log")):
        for b in iter_batches(log.read_bytes()):
            yield log, b


def count(part: Path, keep_batch: Callable[[RecordBatch], bool],
          keep_record: Callable[[RecordBatch, Record], bool] = lambda b, r: True) -> int:
    return sum(1 for _, b in batches(part) if keep_batch(b) for r in b.records() if keep_record(b, r))


def total(stdout: str) -> int:
    last = stdout.splitlines()[-1]
    assert last.endswith(" total")
    return int(last.split()[0])


def control_type(r: Record) -> int:
    return int(struct.unpack_from(">h", r.key or b"", 2)[0])


def txn_producers(part: Path) -> list[tuple[int, int]]:
    return sorted({(b.producer_id, b.producer_epoch) for _, b in batches(part) if b.is_transactional})


def test_offsets_decoder_on_consumer_offsets_partitions(sample: Path) -> None:
    all_tombstones = 0
    for partition in range(3):
        part = sample / f"__consumer_offsets-{partition}"
        r = run_cli("dump", part, "-f", "dump-log", "--decoder", "offsets")
        assert (r.returncode, r.stderr) == (0, "")
        keys = values = tombstones = 0
        for line in r.stdout.splitlines():
            if not line.startswith("| offset:") or "endTxnMarker" in line:
                continue
            m = re.fullmatch(r"\| offset: \d+ .* headerKeys: \[\] key: (\{.*\}) payload: (.*)", line)
            assert m, line
            key = json.loads(m.group(1))
            assert key["type"] == "1" and set(key["data"]) == {"group", "topic", "partition"}
            assert partition_for_group(key["data"]["group"], 3) == partition  # the coordinator's partition rule
            keys += 1
            if m.group(2) == "<DELETE>":
                tombstones += 1
            else:
                value = json.loads(m.group(2))
                assert value["version"] == "3" and value["data"]["metadata"] == ""
                values += 1
        assert keys == count(part, lambda b: not b.is_control) > 0 and keys == values + tombstones
        assert tombstones == count(part, lambda b: True, lambda b, r: not b.is_control and r.value is None)
        all_tombstones += tombstones
    assert all_tombstones > 0


def test_json_keeps_raw_bytes_and_adds_the_decoded_texts(sample: Path) -> None:
    log = sample / "__consumer_offsets-0" / "00000000000000000000.log"
    objs = [json.loads(line) for line in run_cli("dump", log, "-f", "json", "--decoder", "offsets", "-e", "hex").stdout
            .splitlines()]
    records = [o for o in objs if o["type"] == "record"]
    raw = {r.offset: r for _, b in batches(log.parent) for r in b.records()}
    data = [o for o in records if "key_decoded" in o]
    control = [o for o in records if "control" in o]
    assert data and control and len(data) + len(control) == len(records)
    assert all("key_decoded" not in o for o in control)  # Kafka does not decode control records
    for o in data:
        r = raw[o["offset"]]
        assert o["key"] == (r.key or b"").hex()  # --encoding still governs the raw bytes
        assert json.loads(o["key_decoded"])["data"] == read_offset_commit_key(r.key or b"")
        assert (o["value_decoded"] == "<DELETE>") == (r.value is None)


def test_producer_and_transaction_filters(sample: Path) -> None:
    part = sample / "__consumer_offsets-0"
    (pid, epoch), = txn_producers(part)
    everything = total(run_cli("dump", part, "--count").stdout)
    txn = run_cli("dump", part, "--count", "--transactional")
    plain = run_cli("dump", part, "--count", "--no-transactional")
    assert total(txn.stdout) == count(part, lambda b: b.is_transactional) > 0
    assert total(plain.stdout) == count(part, lambda b: not b.is_transactional) > 0
    assert total(txn.stdout) + total(plain.stdout) == everything
    by_pid = run_cli("dump", part, "--count", "--producer-id", str(pid))
    assert total(by_pid.stdout) == count(part, lambda b: b.producer_id == pid) == total(txn.stdout)
    assert total(run_cli("dump", part, "--count", "--producer-id", str(pid), "--producer-epoch",
                         str(epoch + 1)).stdout) == 0
    # -1: the coordinator's plain commits (non-idempotent batches)
    assert total(run_cli("dump", part, "--count", "--producer-id", "-1").stdout) == total(plain.stdout)
    # The batch lines printed are exactly the matching batches, each one's header says so.
    r = run_cli("dump", part, "-f", "dump-log", "--producer-id", str(pid), "--producer-epoch", str(epoch))
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("baseOffset:")]
    assert len(lines) == sum(1 for _, b in batches(part) if b.producer_id == pid)
    assert all(f"producerId: {pid} producerEpoch: {epoch} " in ln and "isTransactional: true" in ln for ln in lines)


@pytest.mark.parametrize("name,type_id", [("commit", 1), ("abort", 0)])
def test_control_type_filter(sample: Path, name: str, type_id: int) -> None:
    part = sample / "payments-0"
    expected = count(part, lambda b: b.is_control, lambda b, r: control_type(r) == type_id)
    assert expected > 0
    r = run_cli("dump", part, "--count", "--control-type", name)
    assert (r.returncode, total(r.stdout)) == (0, expected)
    r = run_cli("dump", part, "-f", "dump-log", "--control-type", name, "--deep")
    records = [ln for ln in r.stdout.splitlines() if ln.startswith("| offset:")]
    assert len(records) == expected
    assert all(f"endTxnMarker: {name.upper()} coordinatorEpoch:" in ln for ln in records)
    both = run_cli("dump", part, "--count", "--control-type", "commit", "--control-type", "abort")
    assert total(both.stdout) == count(part, lambda b: b.is_control)
    none = run_cli("dump", part, "--count", "--control-type", "leader-change")
    assert total(none.stdout) == 0


def test_key_filters(sample: Path) -> None:
    part = sample / "payments-1"
    keys = [r.key for _, b in batches(part) if not b.is_control for r in b.records()]
    key = max(set(keys), key=keys.count)  # the most frequent key
    expected = keys.count(key)
    r = run_cli("dump", part, "--count", "--key", key.decode())
    assert total(r.stdout) == expected
    # Without --deep: the batches holding the key, no record lines.
    r = run_cli("dump", part, "-f", "dump-log", "--key", key.decode())
    assert not any(ln.startswith("|") for ln in r.stdout.splitlines())
    positions = sorted(int(m.group(1)) for m in re.finditer(r" position: (\d+) ", r.stdout))
    assert positions == sorted({b.position for _, b in batches(part)
                                if not b.is_control and any(x.key == key for x in b.records())})
    # With it: exactly the matching records.
    r = run_cli("dump", part, "-f", "dump-log", "--key", key.decode(), "--print-data")
    assert [ln.split(" key: ")[1].split(" payload: ")[0] for ln in r.stdout.splitlines()
            if ln.startswith("|")] == [key.decode()] * expected
    # --key-regex on the default (utf8) key decoder and on --key-decoder hex.
    prefix = key.decode()[:6]
    by_regex = total(run_cli("dump", part, "--count", "--key-regex", f"^{re.escape(prefix)}").stdout)
    assert by_regex == sum(1 for k in keys if k is not None and k.startswith(prefix.encode())) >= expected
    hex_prefix = prefix.encode().hex()
    assert total(run_cli("dump", part, "--count", "--key-decoder", "hex", "--key-regex", f"^{hex_prefix}")
                 .stdout) == by_regex


def test_key_regex_on_the_offsets_decoder_and_combined_filters(sample: Path) -> None:
    part = sample / "__consumer_offsets-0"
    (pid, _), = txn_producers(part)
    groups = [(b, read_offset_commit_key(r.key or b"")["group"]) for _, b in batches(part) if not b.is_control
              for r in b.records()]
    group = next(g for b, g in groups if b.is_transactional)
    regex = f'"group":"{group}"'
    r = run_cli("dump", part, "--count", "--decoder", "offsets", "--key-regex", regex)
    assert total(r.stdout) == sum(1 for _, g in groups if g == group) > 0
    # AND: the group's commits made inside transactions only
    r = run_cli("dump", part, "--count", "--decoder", "offsets", "--key-regex", regex, "--transactional")
    in_txn = sum(1 for b, g in groups if g == group and b.is_transactional)
    assert total(r.stdout) == in_txn > 0
    r = run_cli("dump", part, "--count", "--decoder", "offsets", "--key-regex", regex, "--producer-id", str(pid),
                "--no-transactional")
    assert total(r.stdout) == 0
    # Key filters never match control records.
    assert total(run_cli("dump", part, "--count", "--control-type", "commit", "--key-regex", ".").stdout) == 0
    # Text output of the filtered, decoded records.
    r = run_cli("dump", part, "--decoder", "offsets", "--key-regex", regex, "--transactional", "-q")
    shown = [ln for ln in r.stdout.splitlines() if ln.startswith("  ") and " key {" in ln]
    assert len(shown) == in_txn and all(regex in ln and ' value {"version":"3"' in ln for ln in shown)


def test_count_per_file_and_total(sample: Path) -> None:
    part = sample / "__consumer_offsets-0"
    logs = sorted(part.glob("*.log"))
    r = run_cli("dump", part, "--count", "--transactional")
    per_file = [sum(1 for b in iter_batches(log.read_bytes()) if b.is_transactional for _ in b.records())
                for log in logs]
    assert r.stdout.splitlines() == [f"{n} {log}" for n, log in zip(per_file, logs, strict=True)] + \
        [f"{sum(per_file)} total"]
    objs = [json.loads(line) for line in run_cli("dump", part, "--count", "--transactional", "-f", "json")
            .stdout.splitlines()]
    ends = [o for o in objs if o["type"] == "file_end" and o["kind"] == "log"]
    assert [o["records"] for o in ends] == per_file
    assert objs[-1]["type"] == "summary" and objs[-1]["records"] == sum(per_file)


# ---------------------------------------------------------------------------------------------- failures

def txn_state_with_problems(directory: Path) -> Path:
    ok_key, ok_value = transaction_record("tx-1", producer_id=7, producer_epoch=1, timeout_ms=60000, state="Ongoing",
                                          partitions={"orders": [0, 3]}, last_update_timestamp=1000)
    bad_state = bytearray(ok_value)
    bad_state[16] = 9  # TransactionStatus (after version 2, producer id 8, epoch 2, timeout 4)
    records = [(0, 1000, ok_key, ok_value, ()),
               (1, 1001, ok_key, bytes(bad_state), ()),
               (2, 1002, None, ok_value, ()),
               (3, 1003, b"\x00\x01\x00\x04tx-1", ok_value, ()),  # key version 1: an UnknownKey
               (4, 1004, ok_key, None, ())]  # tombstone
    return write_log(directory / "__transaction_state-0", v2.build_batch(records))


def test_transaction_decoder_failures_are_findings(tmp_path: Path) -> None:
    log = txn_state_with_problems(tmp_path)
    r = run_cli("dump", log, "-f", "dump-log", "--decoder", "transactions")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    records = [ln for ln in r.stdout.splitlines() if ln.startswith("|")]
    meta = "sequence: -1 headerKeys: []"
    assert records[0].endswith(f"{meta} key: transaction_metadata::transactionalId=tx-1 payload: producerId:7,"
                               "producerEpoch:1,state=Ongoing,partitions=[orders-0,orders-3],"
                               "txnLastUpdateTimestamp=1000,txnTimeoutMs=60000")
    assert records[1].endswith(meta) and records[2].endswith(meta)  # what Kafka printed before it threw
    assert records[3].endswith(f"{meta} key: unknown::version=1")  # Kafka's text, no payload
    assert records[4].endswith(f"{meta} key: transaction_metadata::transactionalId=tx-1 payload: <DELETE>")
    assert r.stderr.splitlines() == [
        f"kafkatool dump: warning: decode-error: {log} at byte 0: record at offset 1: Unknown transaction state id 9 "
        "from the transaction status message",
        f"kafkatool dump: warning: decode-error: {log} at byte 0: record at offset 2 has no key: Kafka's transaction "
        "log decoder throws NullPointerException"]
    objs = [json.loads(line) for line in run_cli("dump", log, "-f", "json", "--decoder", "transactions").stdout
            .splitlines()]
    findings = [(o["kind"], o["severity"], o["offset"]) for o in objs if o["type"] == "finding"]
    assert findings == [("decode-error", "warning", 1), ("decode-error", "warning", 2)]
    decoded = [(o["key_decoded"], o["value_decoded"]) for o in objs if o["type"] == "record"]
    assert decoded[1:4] == [(None, None), (None, None), ("unknown::version=1", None)]
    assert objs[-1]["findings"] == {"error": 0, "warning": 2, "info": 0}
    text = run_cli("dump", log, "--decoder", "transactions", "-q").stdout.splitlines()
    assert [ln.split("Z ", 1)[1] for ln in text[3:6]] == [
        "key 8B value 57B (not decoded)", "key null value 57B (not decoded)", "key unknown::version=1"]


def test_offsets_decoder_on_other_records(tmp_path: Path, sample: Path) -> None:
    # A record without a key: Kafka's OffsetsMessageParser throws; kafkatool reports it with Kafka's message.
    k, v = offset_commit_record("g", "t", 0, 5, commit_timestamp=1)
    log = write_log(tmp_path / "__consumer_offsets-0", v2.build_batch([(0, 1, k, v, ()), (1, 1, None, v, ())]))
    r = run_cli("dump", log, "-f", "dump-log", "--decoder", "offsets")
    assert r.returncode == 1
    assert r.stderr == (f"kafkatool dump: warning: decode-error: {log} at byte 0: Failed to decode message at offset 1 "
                        "using offset topic decoder (message had a missing key)\n")
    # Records of another topic: Kafka's own fallback texts, not findings.
    r = run_cli("dump", sample / "payments-0", "-f", "dump-log", "--decoder", "offsets")
    assert (r.returncode, r.stderr) == (0, "")
    texts = {ln.split(" key: ")[1] for ln in r.stdout.splitlines() if ln.startswith("|") and " key: " in ln}
    # keys are "ord-..." : the int16 record type 0x6f72 = 28530
    assert texts and all(re.fullmatch(r"Unknown record type 28530 at offset \d+, skipping\.", t) for t in texts)


def test_unknown_decoder_and_bad_options_are_usage_errors(sample: Path) -> None:
    part = sample / "payments-0"
    for args, message in [
        (["--decoder", "avro"], "kafkatool dump: error: unknown decoder 'avro'; available: utf8, hex, base64, json, "
                                "offsets, transactions, cluster-metadata, remote-log-metadata, share-group-state"),
        (["--key-decoder", "offsets"], "kafkatool dump: error: --key-decoder: 'offsets' decodes whole records: use "
                                       "it as the record decoder, not for one side"),
        (["--decoder", "offsets", "--value-decoder", "hex"],
         "kafkatool dump: error: --decoder decodes whole records; it cannot be combined with "
         "--key-decoder/--value-decoder"),
        (["--key-regex", "(unclosed"], "kafkatool dump: error: --key-regex: '(unclosed' is not a valid regular "
                                       "expression: missing ), unterminated subpattern at position 0"),
    ]:
        r = run_cli("dump", part, *args)
        assert (r.returncode, r.stdout, r.stderr) == (2, "", message + "\n"), args
    r = run_cli("dump", part, "--control-type", "rollback")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "'rollback' is not one of" in r.stderr


# ---------------------------------------------------------------------------------------------- plugins

@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """An installed distribution with ``kafkatool.decoders`` entry points, on the subprocess's path."""
    site = tmp_path / "site"
    info = site / "kafkatool_testplugin-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "kafkatool_testplugin.py").write_text(PLUGIN_MODULE)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kafkatool-testplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}


def test_plugins_through_entry_points(tmp_path: Path, plugin_env: dict[str, str]) -> None:
    log = write_log(tmp_path / "t-0", v2.build_batch([(0, 5, b"id-1", b"abc", ()), (1, 6, None, b"xy", ())]))
    r = run_cli("dump", log, "-f", "dump-log", "--value-decoder", "upper", env=plugin_env)
    assert (r.returncode, r.stderr) == (0, "")
    assert [ln.split("headerKeys: [] ")[1] for ln in r.stdout.splitlines() if ln.startswith("|")] == [
        "key: id-1 payload: ABC", "payload: XY"]
    r = run_cli("dump", log, "-f", "dump-log", "--decoder", "klen", "--key-regex", "^id-", env=plugin_env)
    assert [ln.split("headerKeys: [] ")[1] for ln in r.stdout.splitlines() if ln.startswith("|")] == [
        "key: id-1 payload: 3 bytes at 0"]
    # A plugin raising on records: findings with its message, exit 1, the dump goes on.
    r = run_cli("dump", log, "-f", "json", "--decoder", "crashy", env=plugin_env)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    findings = [json.loads(line) for line in r.stdout.splitlines() if '"finding"' in line]
    assert [(f["kind"], f["offset"], f["message"]) for f in findings] == [
        ("decode-error", 0, "decoder 'crashy' failed on the record at offset 0: ZeroDivisionError: boom"),
        ("decode-error", 1, "decoder 'crashy' failed on the record at offset 1: ZeroDivisionError: boom")]
    r = run_cli("dump", log, "--decoder", "broken", env=plugin_env)
    assert (r.returncode, r.stdout) == (2, "") and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith("kafkatool dump: error: decoder plugin 'broken' (kafkatool_testplugin:DoesNotExist) "
                               "failed to load: AttributeError")


def test_count_and_summary_only_print_nothing_else_in_any_format(tmp_path: Path) -> None:
    """An empty index ("is empty." / "(no entries)") and offset gaps in two files: stdout has only the counts or
    the summary, and the per-file limit of offset-gap lines restarts with each file."""
    part = tmp_path / "t-0"
    for base in (0, 100):
        recs = [(base + 2 * i, 5, b"k", b"v", ()) for i in range(13)]  # 12 gaps per file
        write_log(part, b"".join(v2.build_batch([r]) for r in recs), base=base)
        (part / f"{base:020d}.index").write_bytes(b"")
    for fmt in ("text", "dump-log", "table"):
        r = run_cli("dump", part, "--count", "-f", fmt)
        assert r.stdout == f"13 {part / '00000000000000000000.log'}\n13 {part / '00000000000000000100.log'}\n26 total\n"
        more = [ln for ln in r.stderr.splitlines() if "more offset gaps not shown" in ln]
        assert len(more) == 2 and all(": 2 more offset gaps" in ln for ln in more), r.stderr
        r = run_cli("dump", part, "--summary-only", "-f", fmt)
        assert r.stdout.startswith("4 files, 26 batches, 26 records, ") and r.stdout.count("\n") == 1


def test_batches_filtered_out_are_still_checked(tmp_path: Path) -> None:
    """A batch skipped by a header filter is still CRC-checked and followed for offset gaps (a filtered view
    never hides damage), without being decompressed."""
    def batch(first: int, pid: int) -> bytes:
        return v2.build_batch([(first, 5, b"k", b"v", ()), (first + 1, 6, b"k", b"v", ())], producer_id=pid,
                              producer_epoch=0, base_sequence=first)
    corrupt = bytearray(batch(7, 9))
    corrupt[-1] ^= 0xFF  # the last value byte: the CRC no longer matches
    log = write_log(tmp_path / "t-0", batch(0, 5) + batch(5, 9) + bytes(corrupt) + batch(9, 5))
    objs = [json.loads(line) for line in run_cli("dump", log, "-f", "json", "--producer-id", "5").stdout.splitlines()]
    assert [(o["kind"], o["offset"]) for o in objs if o["type"] == "finding"] == [("offset-gap", 5),
                                                                                 ("crc-mismatch", 8)]
    assert [o["base_offset"] for o in objs if o["type"] == "batch"] == [0, 9]
    r = run_cli("dump", log, "--count", "--producer-id", "5")
    assert (r.returncode, total(r.stdout)) == (1, 4)
    r = run_cli("dump", log, "--count", "--producer-id", "5", "--strict")
    assert total(r.stdout) == 2  # --strict stops at the corrupt batch, filtered or not
