"""``kafkatool dump`` through the real entry point: formats, JSON schema, findings, exit codes, pipes."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool.log.checkpoints import EpochEntry, encode_leader_epoch_checkpoint, encode_partition_metadata
from kafkatool.record import default_records as v2
from kafkatool.record.batch import ControlRecordType
from tests.support.cli import interruptible, run_cli
from tests.support.dump_fixtures import TS, G, golden_commit_marker, patch_index_entry, v2_batches, write_segment
from tests.support.paths import ROOT

BATCH_KEYS = {"type", "schema", "path", "topic", "partition", "position", "base_offset", "last_offset", "magic",
              "codec", "size", "crc", "crc_valid", "timestamp_type", "max_timestamp", "base_timestamp", "producer_id",
              "producer_epoch",
              "base_sequence", "last_sequence", "is_transactional", "is_control", "partition_leader_epoch", "count",
              "delete_horizon_ms"}


def log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    part = root / "orders-0"
    write_segment(part, v2_batches(30))
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([EpochEntry(0, 0)]))
    (part / "partition.metadata").write_bytes(encode_partition_metadata("AAECAwQFBgcICQoLDA0ODw"))
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 150\n")
    return root


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_clean_log_dir_text_and_nothing_written(tmp_path):
    root = log_dir(tmp_path)
    before = tree_digest(root)
    r = run_cli("dump", root, "--deep", "--verify", "--verify-index")
    assert r.returncode == 0, r.stderr
    heads = [line for line in r.stdout.splitlines() if line.startswith("== ")]
    assert [h.split()[1].split("/")[-1] for h in heads] == [
        "recovery-point-offset-checkpoint", "00000000000000000000.log", "00000000000000000000.index",
        "00000000000000000000.timeindex", "leader-epoch-checkpoint", "partition.metadata"]
    assert "  0 2023-11-14T22:13:20.000Z key 5B value 100B headers {h}" in r.stdout
    assert "1 file" not in r.stderr and "6 files, 30 batches, 150 records" in r.stderr
    assert tree_digest(root) == before


def test_json_schema(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(G["v2_gzip_3rec(base100)"] + golden_commit_marker() + G["v1_none_LAT"])
    r = run_cli("dump", p, "--deep", "--format", "json", "--encoding", "base64")
    objs = jsonl(r.stdout)
    assert all(o["schema"] == 1 and "type" in o for o in objs)
    # A finding about a batch comes just before that batch.
    assert [o["type"] for o in objs] == ["file", "batch", "record", "record", "record", "finding", "batch", "record",
                                         "finding", "batch", "record", "file_end", "summary"]
    b = objs[1]
    assert set(b) == BATCH_KEYS
    assert (b["position"], b["base_offset"], b["last_offset"], b["codec"], b["crc"], b["crc_valid"], b["count"]) == \
        (0, 100, 102, "gzip", 0xB1F3B825, True, 3)
    # a file outside a partition dir: no topic or partition (tests/dump/test_operator.py has them in one)
    assert objs[2] == {"type": "record", "schema": 1, "path": str(p), "topic": None, "partition": None, "offset": 100,
                       "timestamp": TS, "size": 11, "key_size": 2, "value_size": 2, "key": "azE=", "value": "djE=",
                       "headers": [], "sequence": -1}
    assert objs[4]["key"] is None
    assert objs[7]["control"] == {"type": "COMMIT", "type_id": 1, "coordinator_epoch": 9, "data": None,
                                  "error": None}
    legacy = objs[9]
    assert (legacy["magic"], legacy["timestamp_type"], legacy["count"], legacy["producer_id"]) == \
        (1, "LogAppendTime", None, -1)
    assert objs[10]["crc_valid"] is True and objs[10]["timestamp"] == TS + 99
    assert objs[5]["kind"] == "offset-gap" and objs[8]["kind"] == "offset-order"
    assert objs[-1]["findings"] == {"error": 1, "warning": 0, "info": 1} and objs[-1]["records"] == 5
    assert r.returncode == 1


def test_json_headers_and_utf8(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(v2.build_batch([(0, TS, "ключ".encode(), b"\xff", [("h1", b"x"), ("h2", None)])]))
    (rec,) = [o for o in jsonl(run_cli("dump", p, "-d", "-f", "json").stdout) if o["type"] == "record"]
    assert rec["key"] == "ключ" and rec["value"] == "\ufffd" and rec["headers"] == [["h1", "x"], ["h2", None]]
    (rec,) = [o for o in jsonl(run_cli("dump", p, "-d", "-f", "json", "-e", "hex").stdout) if o["type"] == "record"]
    assert rec["value"] == "ff" and rec["headers"] == [["h1", "78"], ["h2", None]]


def test_findings_exit_code_and_stderr(tmp_path):
    data = b"".join(v2_batches(5))
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data[:700] + b"\xde\xad" * 300 + data[700:])
    r = run_cli("dump", p)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("kafkatool dump: error:")]
    assert lines[0].startswith(f"kafkatool dump: error: crc-mismatch: {p} at byte 651: ")
    assert lines[1].startswith(f"kafkatool dump: error: corrupt-region: {p} at byte 1302: 600 unparseable bytes")
    r = run_cli("dump", p, "--format", "json")
    (f,) = [o for o in jsonl(r.stdout) if o["type"] == "finding" and o["kind"] == "crc-mismatch"]
    assert f["position"] == 651 and f["severity"] == "error"


def test_torn_tail_with_strict_and_zero_padding(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"".join(v2_batches(3)) + bytes(4096))
    r = run_cli("dump", p)  # zero padding (preallocated segment or torn write): the broker's recovery truncates it
    assert r.returncode == 1 and "warning: trailing-zeros:" in r.stderr
    r = run_cli("dump", p, "--strict")
    assert r.returncode == 1 and "error: trailing-zeros:" in r.stderr


@pytest.mark.parametrize("fmt", ["text", "json", "dump-log", "table"])
def test_max_bytes_cut_is_not_reported_as_damage(tmp_path, fmt):
    # Kafka's --max-bytes reads the first N bytes and prints nothing about the batch the cut goes through.
    root = log_dir(tmp_path)
    part = root / "orders-0"
    size = (part / "00000000000000000000.log").stat().st_size
    for cut in ("10KiB", "1000", str(size - 1)):
        r = run_cli("dump", part, "--max-bytes", cut, "--deep", "--verify", "--format", fmt)
        assert r.returncode == 0, (cut, r.stderr)
        assert "torn-tail" not in r.stdout + r.stderr and "warning:" not in r.stderr and "error:" not in r.stderr
        if fmt == "json":
            objs = jsonl(r.stdout)
            assert not [o for o in objs if o["type"] == "finding"]
            (end,) = [o for o in objs if o["type"] == "file_end" and o["kind"] == "log"]
            assert (end["stopped"], end["invalid_bytes"]) == ("max-bytes", 0) and end["valid_bytes"] < size
        if fmt == "dump-log":
            assert "Found" not in r.stdout
    # A real torn tail inside the range read is still reported, and exits 1.
    log = part / "00000000000000000000.log"
    log.write_bytes(log.read_bytes()[:-50])
    r = run_cli("dump", part, "--max-bytes", str(size * 2), "--format", fmt)
    assert r.returncode == 1 and "torn-tail" in (r.stdout if fmt == "json" else r.stderr)
def test_max_bytes_cut_is_not_a_finding(tmp_path):
    """--max-bytes cuts each .log where the user asked: the batch across the cut ends the walk (stopped
    "max-bytes"), with no torn-tail finding and exit 0, as Kafka's DumpLogSegments says nothing then. A torn tail
    inside the cut, or with a --max-bytes past the file's end, is still found."""
    batches = v2_batches(5)
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"".join(batches))
    cut = len(batches[0]) + len(batches[1]) // 2  # in the middle of the second batch
    for size in (str(cut), f"{len(batches[0]) + 3}B"):  # the cut mid-batch, or mid-header
        r = run_cli("dump", p, "--max-bytes", size, "--format", "json")
        assert r.returncode == 0 and "torn-tail" not in r.stderr, r.stderr
        objs = jsonl(r.stdout)
        assert [o["base_offset"] for o in objs if o["type"] == "batch"] == [batches_offset(batches, 0)]
        (end,) = [o for o in objs if o["type"] == "file_end"]
        assert (end["stopped"], end["invalid_bytes"], end["valid_bytes"]) == ("max-bytes", 0, len(batches[0]))
        assert not [o for o in objs if o["type"] == "finding"]
    p.write_bytes(b"".join(batches)[:-7])  # torn for real
    for extra in ([], ["--max-bytes", "1GiB"]):
        r = run_cli("dump", p, *extra)
        assert r.returncode == 1 and f"warning: torn-tail: {p} at byte" in r.stderr, r.stderr


def batches_offset(batches: list[bytes], i: int) -> int:
    return int.from_bytes(batches[i][:8], "big")


def test_usage_and_io_errors(tmp_path):
    r = run_cli("dump", tmp_path / "nope.log")
    assert r.returncode == 2
    assert r.stderr.strip() == f"kafkatool dump: error: {tmp_path / 'nope.log'}: no such file or directory"
    r = run_cli("dump", tmp_path, "--encoding", "rot13")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = run_cli("dump", "--from-offset", "10", "--to-offset", "5", tmp_path)
    assert r.returncode == 2
    ok = tmp_path / "00000000000000000000.index"
    ok.write_bytes(b"")
    os.symlink(tmp_path / "missing-target", tmp_path / "00000000000000000000.timeindex")
    r = run_cli("dump", ok, tmp_path / "00000000000000000000.timeindex")  # checked before anything is dumped
    assert (r.returncode, r.stdout) == (2, "")  # a dangling symlink named is not a regular file (issue 23)
    assert r.stderr.endswith("00000000000000000000.timeindex: not a regular file (a dangling symbolic link)\n")


@pytest.mark.parametrize("name,data", [
    ("00000000000000000000.log", b"\x00" * 8 + b"\x7f\xff\xff\xff" + b"\x02" * 60),  # hostile size
    ("00000000000000000000.log", b"\xff" * 12 + b"\x02" * 100),  # negative size
    ("00000000000000000000.log", G["v2_gzip_3rec(base100)"][:-20]),  # truncated compressed batch
    ("00000000000000000000.index", b"\x00\x00\x00\x01\x7f\xff\xff\xff" * 3),
    ("00000000000000000000.timeindex", b"\x80" * 25),
    ("00000000000000000000.txnindex", b"\x05" * 40),
    ("00000000000000000000.snapshot", b"\x00\x01\x00"),
    ("leader-epoch-checkpoint", b"\xff\xfe"),
    ("00000000000000000000-0000000001.checkpoint", b"\x00" * 11 + b"\x40" + b"\x00" * 60),
])
@pytest.mark.parametrize("fmt", ["text", "json", "dump-log"])
def test_hostile_files_one_line_errors(tmp_path, name, data, fmt):
    p = tmp_path / name
    p.write_bytes(data)
    r = run_cli("dump", p, "--deep", "--verify", "--verify-index", "-f", fmt)
    assert r.returncode in (0, 1, 2)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    for line in r.stderr.splitlines():
        if line.startswith("kafkatool dump: ") and not line.startswith("kafkatool dump: summary: "):
            assert str(p) in line


def test_count_and_summary_only(tmp_path):
    root = log_dir(tmp_path)
    r = run_cli("dump", root, "--count")
    log = root / "orders-0" / "00000000000000000000.log"
    assert (r.returncode, r.stdout) == (0, f"150 {log}\n150 total\n")  # per records file, then the total
    r = run_cli("dump", root, "--deep", "--verify", "--summary-only")
    assert r.returncode == 0 and r.stdout.count("\n") == 1
    assert r.stdout.startswith("6 files, 30 batches, 150 records, ")
    objs = jsonl(run_cli("dump", root, "--summary-only", "-f", "json").stdout)
    assert [o["type"] for o in objs] == ["summary"] and objs[0]["records"] == 150


def test_a_named_file_that_is_not_kafkas_is_an_error_in_kafkatools_formats(tmp_path):
    """``dump /etc/passwd``: the operator asked for a file dump cannot read (exit 2, one line naming it); in a dir
    such a file is passed over; in Kafka's dump-log format, Kafka's own behaviour (a line, exit 0)."""
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    for fmt in ("text", "table"):
        r = run_cli("dump", p, "-f", fmt)
        assert r.returncode == 2, (fmt, r.stderr)
        assert f"kafkatool dump: error: not-a-kafka-file: {p}: not a Kafka file" in r.stderr, r.stderr
    r = run_cli("dump", p, "-f", "json")  # JSON lines carry findings as data
    assert r.returncode == 2 and [o["kind"] for o in jsonl(r.stdout) if o["type"] == "finding"] == ["not-a-kafka-file"]
    r = run_cli("dump", p, "-f", "dump-log")
    assert r.returncode == 0 and "Ignoring unknown file" in r.stderr
    part = tmp_path / "t-0"
    write_segment(part, v2_batches(2))
    (part / "notes.txt").write_text("hello")
    r = run_cli("dump", part)
    assert r.returncode == 0, r.stderr
    seg = tmp_path / "copy.bin"  # a segment under another name: dumped as what its bytes are
    seg.write_bytes((part / "00000000000000000000.log").read_bytes())
    r = run_cli("dump", seg, "--count")
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "10 total", r.stdout  # 2 batches of 5


def test_dump_log_format_via_cli(tmp_path):
    root = log_dir(tmp_path)
    log = root / "orders-0" / "00000000000000000000.log"
    patch_index_entry(log.with_suffix(".index"), 0, rel_delta=1)
    r = run_cli("dump", log, log.with_suffix(".index"), "-f", "dump-log", "--print-data")
    lines = r.stdout.splitlines()
    assert lines[0] == f"Dumping {log}" and lines[1] == "Log starting offset: 0"
    assert lines[3] == ("| offset: 0 CreateTime: 1700000000000 keySize: 5 valueSize: 100 sequence: -1 headerKeys: [h] "
                        "key: key-0 payload: " + "v" * 100)
    assert r.stderr.splitlines() == [f"Mismatches in :{log.with_suffix('.index')}",
                                     "  Index offset: 40, log offset: 39"]
    assert r.returncode == 1


def test_table_format(tmp_path):
    root = log_dir(tmp_path)
    r = run_cli("dump", root / "orders-0", "-f", "table", "--deep")
    assert r.returncode == 0 and "Position" in r.stdout and "00000000000000000000.log" in r.stdout


def test_control_records_in_text(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(golden_commit_marker() + v2.build_control_batch(
        offset=501, timestamp=TS, control_type=ControlRecordType.LEADER_CHANGE, value=b"\x00\x00"))
    r = run_cli("dump", p, "-d")
    assert "  500 2023-11-14T22:13:20.000Z COMMIT coordinatorEpoch 9" in r.stdout
    assert "  501 2023-11-14T22:13:20.000Z LEADER_CHANGE" in r.stdout


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_broken_pipe_head(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"".join(v2_batches(400)))
    proc = subprocess.run(f"'{sys.executable}' -m kafkatool dump '{p}' --deep --print-data | head -2; "
                          "echo \"rc=${PIPESTATUS[0]}\" >&2", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert len(proc.stdout.splitlines()) == 2
    assert "rc=0" in proc.stderr and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_interrupt_exits_130(tmp_path):
    import select

    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"".join(v2_batches(400)))
    # Nobody reads stdout after the first line: the dump blocks on a full pipe until SIGINT arrives. The signal is
    # sent only once the dump has printed that line, so it interrupts the work, not the interpreter's start-up.
    proc = subprocess.Popen([sys.executable, "-m", "kafkatool", "dump", str(p), "--deep", "--print-data"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), preexec_fn=interruptible)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    assert ready, "the dump printed nothing in 120 s"
    first = proc.stdout.readline()
    assert first.startswith(f"== {p} (log, ".encode()), first
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"Traceback" not in err


def _dump_bytes(data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``kafkatool dump - ARGS`` with ``data`` on a pipe (stdin spooled), as ``cat FILE | kafkatool dump -``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "kafkatool", "dump", "-", *args], input=data, capture_output=True,
                          env=env, timeout=120)


def test_stdin_reads_one_file_its_kind_sniffed_or_given(tmp_path):
    root = log_dir(tmp_path)
    log = root / "orders-0" / "00000000000000000000.log"
    from_file = jsonl(run_cli("dump", log, "-f", "json", "-q").stdout)
    p = _dump_bytes(log.read_bytes(), "-f", "json", "-q")
    assert p.returncode == 0, p.stderr
    piped = jsonl(p.stdout.decode())
    assert [b["path"] for b in piped if b["type"] == "batch"] == ["-"] * 30
    strip = ("path", "topic", "partition")
    assert ([{k: v for k, v in b.items() if k not in strip} for b in piped if b["type"] == "batch"]
            == [{k: v for k, v in b.items() if k not in strip} for b in from_file if b["type"] == "batch"])
    index = (root / "orders-0" / "00000000000000000000.index").read_bytes()
    p = _dump_bytes(index, "--kind", "index", "-f", "json", "-q")
    assert p.returncode == 0 and b'"type":"index_entry"' in p.stdout.replace(b" ", b""), p.stderr
    # bytes of no Kafka kind: walked as a log (a damaged segment sniffs as nothing too), which says what they are
    p = _dump_bytes(b"root:x:0:0:root:/root:/bin/bash\n" * 20, "-q")
    assert p.returncode == 1 and p.stderr.decode().startswith("kafkatool dump: error: wrong-file-type: - at byte 0: "
                                                              "not a log segment"), p.stderr
    assert b"Traceback" not in p.stderr


def test_a_quoted_glob_is_expanded_and_selections_pick_partitions(tmp_path):
    root = log_dir(tmp_path)
    write_segment(root / "orders-1", v2_batches(4))
    write_segment(root / "payments-0", v2_batches(2))
    r = run_cli("dump", str(root / "orders-*" / "*.log"), "--count")
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "170 total", r.stdout  # 30*5 + 4*5
    r = run_cli("dump", root, "-t", "orders*", "--partition", "1", "-f", "json", "-q")
    lines = jsonl(r.stdout)
    assert r.returncode == 0 and {(b["topic"], b["partition"]) for b in lines if b["type"] == "batch"} == {
        ("orders", 1)}
    r = run_cli("dump", str(root / "nothing-*"))
    assert r.returncode == 2 and "nor a match of it as a pattern" in r.stderr, r.stderr


def test_count_from_an_offset_counts_records_shallow_and_deep(tmp_path):
    root = log_dir(tmp_path)
    log = root / "orders-0" / "00000000000000000000.log"
    for deep in ((), ("--deep",)):
        r = run_cli("dump", log, "--count", "--from-offset", "13", "--to-offset", "41", *deep)
        assert r.returncode == 0 and r.stdout.splitlines()[-1] == "29 total", (deep, r.stdout)
