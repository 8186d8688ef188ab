"""``kafkatool reindex-time`` through the real entry point: modes, exit codes, JSON, the broker lock."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from kafkatool.log.checkpoints import encode_offset_checkpoint
from kafkatool.log.layout import TopicPartition
from kafkatool.log.recovery import recover_segment
from tests.support.cli import pty_session, run_cli, run_on_pty
from tests.support.screen import data_lines_missing
from tests.support.segments import T0, v2_sized, write_segment

STALE_TAIL = b"\x00\x00\x7f\x00\x00\x7f\x00\x00"  # an entry far past the end of the log


def make_log_dir(tmp_path, partitions=("orders-0", "orders-1"), segments=(0, 50), damage=True):
    """A log dir whose first segment of every partition has a stale .index and no .timeindex."""
    root = tmp_path / "logs"
    root.mkdir(parents=True)
    (root / "meta.properties").write_text("version=1\nnode.id=1\n")
    for name in partitions:
        for base in segments:
            log = write_segment(root / name, base, [v2_sized(base + i, 1000, ts=T0 + base + i) for i in range(20)])
            r = recover_segment(log, base)
            log.with_suffix(".index").write_bytes(r.encode_offset_index() + (STALE_TAIL if damage and base == 0
                                                                              else b""))
            if not (damage and base == 0):
                log.with_suffix(".timeindex").write_bytes(r.encode_time_index())
    return root


def digest(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_check_exit_codes_and_text(tmp_path):
    root = make_log_dir(tmp_path)
    before = digest(root)
    r = run_cli("reindex-time", root)
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""  # findings are not data: they go to stderr, as in every command
    lines = r.stderr.splitlines()
    assert ("kafkatool reindex-time: error: stale: orders-0/00000000000000000000.index: 1 of 4 entries: points past "
            "the end of the log") in lines[0]
    assert any(line.startswith("kafkatool reindex-time: error: missing: orders-1/00000000000000000000.timeindex")
               for line in lines)
    assert "checked 4 segments" in r.stderr and "4 errors" in r.stderr
    assert digest(root) == before  # --check writes nothing
    (tmp_path / "clean").mkdir()
    clean = make_log_dir(tmp_path / "clean", damage=False)
    r = run_cli("reindex-time", clean, "-v")
    assert r.returncode == 0 and r.stdout.count(": ok (") == 8


def test_json_lines(tmp_path):
    root = make_log_dir(tmp_path)
    r = run_cli("reindex-time", root / "orders-0", "--format", "json")
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert all(x["schema"] == 1 for x in recs)
    stale = [x for x in recs if x["type"] == "index" and x["status"] == "stale"]
    assert len(stale) == 1 and stale[0]["findings"][0]["reason"] == "past-end"
    assert stale[0]["entries_on_disk"] == 4 and stale[0]["entries_rebuilt"] == 3
    assert recs[-1]["type"] == "summary" and recs[-1]["exit"] == 1 and recs[-1]["errors"] == 2


def test_output_writes_a_mirror_tree(tmp_path):
    root = make_log_dir(tmp_path)
    before = digest(root)
    out = tmp_path / "rebuilt"
    r = run_cli("reindex-time", root, "--output", out)
    assert r.returncode == 1  # the log dir itself is unchanged: its errors remain
    assert digest(root) == before
    for part in ("orders-0", "orders-1"):
        for base in (0, 50):
            expected = recover_segment(root / part / f"{base:020d}.log", base)
            assert (out / part / f"{base:020d}.index").read_bytes() == expected.encode_offset_index()
            assert (out / part / f"{base:020d}.timeindex").read_bytes() == expected.encode_time_index()
    assert run_cli("reindex-time", root, "--output", root / "orders-0" / "x").returncode == 2


def test_in_place_fixes_keeps_backups_and_never_touches_logs(tmp_path):
    root = make_log_dir(tmp_path)
    logs = {k: v for k, v in digest(root).items() if k.endswith(".log")}
    old_index = (root / "orders-0" / "00000000000000000000.index").read_bytes()
    r = run_cli("reindex-time", root, "--in-place")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "replaced" in r.stdout and "4 files written" in r.stderr
    assert "error" not in r.stdout and "error: stale:" in r.stderr  # what was wrong: stderr; what was done: stdout
    assert (root / "orders-0" / "00000000000000000000.index.bak").read_bytes() == old_index
    assert not (root / "orders-0" / "00000000000000000000.timeindex.bak").exists()  # it was missing
    assert {k: v for k, v in digest(root).items() if k.endswith(".log")} == logs
    assert not (root / ".lock").exists()  # the lock we took is gone again
    r = run_cli("reindex-time", root)
    assert r.returncode == 0 and r.stdout == ""
    # Nothing to do the second time: the backups stay as they were.
    assert run_cli("reindex-time", root, "--in-place").stderr.count("0 files written") == 1


def test_in_place_no_backup_and_keep_valid(tmp_path):
    root = make_log_dir(tmp_path, partitions=("orders-0",))
    seg = root / "orders-0" / f"{50:020d}"
    other = recover_segment(seg.with_suffix(".log"), 50, index_interval_bytes=1500)
    seg.with_suffix(".index").write_bytes(other.encode_offset_index())  # valid, different index points
    r = run_cli("reindex-time", root, "--in-place", "--no-backup", "--keep-valid")
    assert r.returncode == 0
    assert not list(root.rglob("*.bak"))
    assert seg.with_suffix(".index").read_bytes() == other.encode_offset_index()
    assert run_cli("reindex-time", root, "--in-place", "--no-backup").returncode == 0
    assert seg.with_suffix(".index").read_bytes() == recover_segment(seg.with_suffix(".log"), 50).encode_offset_index()


def test_no_offset_index_leaves_index_files_alone(tmp_path):
    root = make_log_dir(tmp_path, partitions=("orders-0",))
    index = root / "orders-0" / "00000000000000000000.index"
    old = index.read_bytes()
    r = run_cli("reindex-time", root, "--in-place", "--no-offset-index", "--format", "json")
    assert index.read_bytes() == old
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert {x["index"] for x in recs if x["type"] == "index"} == {"time"}


def test_in_place_refuses_while_a_broker_holds_the_lock(tmp_path):
    root = make_log_dir(tmp_path)
    before = digest(root)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, sys, time
        fd = os.open({str(root / '.lock')!r}, os.O_RDWR | os.O_CREAT)
        fcntl.lockf(fd, fcntl.LOCK_EX)  # what FileChannel.tryLock() takes on Linux
        print("locked", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = run_cli("reindex-time", root, "--in-place")
        assert r.returncode == 3 and "a live broker holds this log dir's .lock" in r.stderr
        assert r.stderr.count("\n") == 1
        before.pop(".lock", None)
        after = digest(root)
        after.pop(".lock", None)
        assert after == before
        # --check reads only: refused too (a segment being appended reads as torn), unless --live
        assert run_cli("reindex-time", root).returncode == 3
        assert run_cli("reindex-time", root, "--live").returncode == 1
    finally:
        holder.kill()
        holder.wait()
    assert fcntl is not None


@pytest.mark.interop
def test_in_place_refuses_while_a_java_process_holds_the_lock_as_kafka_does(tmp_path):
    """Kafka's FileLock: FileChannel.open(CREATE, READ, WRITE).tryLock() (server-common FileLock.java), held by
    a real JVM, not a Python model of it: --in-place (with and without backups, in parallel) exits 3 and
    changes nothing."""
    if shutil.which("java") is None:
        pytest.fail("java is needed (JDK 17+), as for every interop test")
    root = make_log_dir(tmp_path)
    before = digest(root)
    src = tmp_path / "HoldLock.java"
    src.write_text(
        "import java.nio.channels.FileChannel; import java.nio.file.*;\n"
        "public class HoldLock { public static void main(String[] a) throws Exception {\n"
        "  FileChannel ch = FileChannel.open(Paths.get(a[0]), StandardOpenOption.CREATE, StandardOpenOption.READ,"
        " StandardOpenOption.WRITE);\n"
        "  if (ch.tryLock() == null) throw new IllegalStateException(\"not locked\");\n"
        "  System.out.println(\"locked\"); System.out.flush(); Thread.sleep(60000); } }\n")
    holder = subprocess.Popen(["java", "-Xmx64m", str(src), str(root / ".lock")], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        for args in (("--in-place",), ("--in-place", "--no-backup", "--jobs", "2")):
            r = run_cli("reindex-time", root, *args)
            assert r.returncode == 3 and "a live broker holds this log dir's .lock" in r.stderr, r.stderr
            assert r.stderr.count("\n") == 1
        after = digest(root)
        before.pop(".lock", None)
        after.pop(".lock", None)
        assert after == before
        assert run_cli("reindex-time", root).returncode == 3  # reading a live log dir needs --live
        assert run_cli("reindex-time", root, "--live").returncode == 1  # --check with --live reads, never writes
    finally:
        holder.kill()
        holder.wait()


def test_jobs_give_the_same_results(tmp_path):
    root = make_log_dir(tmp_path, partitions=("a-0", "a-1", "b-0"))
    one = run_cli("reindex-time", root, "--format", "json", "-v")
    two = run_cli("reindex-time", root, "--format", "json", "-v", "--jobs", "3")

    def strip(out):
        recs = [json.loads(x) for x in out.splitlines()]
        for x in recs:
            x.pop("seconds", None)
        return recs

    assert strip(one.stdout) == strip(two.stdout) and one.returncode == two.returncode == 1


def test_single_segment_path_and_active_flag(tmp_path):
    root = make_log_dir(tmp_path, partitions=("orders-0",))
    r = run_cli("reindex-time", root / "orders-0" / f"{50:020d}.log", "--format", "json", "-v")
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert recs[0]["type"] == "segment" and recs[0]["active"] is True and r.returncode == 0
    r = run_cli("reindex-time", root / "orders-0" / f"{50:020d}.index")
    assert r.returncode == 2 and "not a .log segment" in r.stderr


def test_usage_errors(tmp_path):
    root = make_log_dir(tmp_path)
    assert run_cli("reindex-time", root, "--in-place", "--output", tmp_path / "o").returncode == 2
    assert run_cli("reindex-time", root, "--no-backup").returncode == 2
    assert run_cli("reindex-time", tmp_path / "nope").returncode == 2
    assert run_cli("reindex-time", root, "--index-interval-bytes", "-5").returncode == 2


def test_recovery_report_cli(tmp_path):
    root = make_log_dir(tmp_path, partitions=("orders-0",), damage=False)
    (root / "recovery-point-offset-checkpoint").write_bytes(encode_offset_checkpoint({TopicPartition("orders", 0): 10}))
    r = run_cli("reindex-time", root, "--recovery-report")
    assert r.returncode == 0, r.stderr
    assert "unclean shutdown" in r.stdout and "orders-0 (recovery point 10, log start offset 0):" in r.stdout
    assert "  recover 00000000000000000000.log: unflushed (recovery point 10)" in r.stdout
    log = root / "orders-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    data[5500] ^= 1
    log.write_bytes(bytes(data))
    r = run_cli("reindex-time", root, "--recovery-report", "--format", "json")
    assert r.returncode == 1
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    actions = [(x["action"], x["file"]) for x in recs if x["type"] == "recovery"]
    assert actions == [("recover", f"{0:020d}.log"), ("delete-unflushed", f"{50:020d}.log")]
    assert os.path.exists(root / "orders-0" / f"{50:020d}.log")  # read-only


ETA = re.compile(r"(\d+|-):[\d-]{2}:[\d-]{2}")  # rich's TimeRemainingColumn: 0:00:03, or -:--:-- at first


def test_progress_bar_on_a_terminal_shows_segments_bytes_and_eta(tmp_path):
    root = make_log_dir(tmp_path, partitions=[f"orders-{i}" for i in range(4)], segments=(0, 50, 100),
                        damage=False)
    rc, shown = run_on_pty(["reindex-time", root, "--verify"], columns=160)
    assert rc == 0, shown[-600:]
    assert re.search(r"reindex-time.*\d+/12 segments", shown), shown[-600:]
    assert re.search(r"[\d.]+(B|KiB|MiB)/[\d.]+(KiB|MiB)", shown), shown[-600:]  # bytes done / total, as summaries
    assert ETA.search(shown), shown[-600:]
    rc, shown = run_on_pty(["reindex-time", root, "--recovery-report"], columns=160)
    assert rc == 0, shown[-600:]
    assert re.search(r"recovery-report.*\d+/4 partitions", shown) and ETA.search(shown), shown[-600:]
    # Piped (not a terminal): no bar at all.
    r = run_cli("reindex-time", root)
    assert "segments" not in r.stderr.replace("checked 12 segments", "")



def test_verbose_lines_never_share_a_line_with_the_bar(sample_dir):
    """-v prints a line per file while the bar runs: on one terminal each shows whole, on a line of its own (not
    'reindex-time ━━━ 1/77 segments ... -:--:--orders-0/...index: ok'), the bar redrawn below it."""
    piped = run_cli("reindex-time", sample_dir, "-v")
    assert piped.returncode == 0 and piped.stdout.count(": ok") > 100, piped.stdout  # .index and .timeindex
    rc, tty, _ = pty_session(["reindex-time", sample_dir, "-v"], columns=200)
    assert rc == 0 and "━" in tty.decode(errors="replace"), tty[-600:]
    assert data_lines_missing(piped.stdout, tty) == []

def test_verify_turns_a_bad_crc_into_exit_1(tmp_path):
    root = make_log_dir(tmp_path, damage=False)
    log = root / "orders-1" / f"{50:020d}.log"
    data = bytearray(log.read_bytes())
    data[7_500] ^= 0x10  # a value byte of batch 7: the header is intact, only the CRC can tell
    log.write_bytes(bytes(data))
    assert run_cli("reindex-time", root).returncode == 0  # headers only: nothing wrong
    r = run_cli("reindex-time", root, "--verify")
    assert r.returncode == 1, r.stderr
    assert ("kafkatool reindex-time: error: log-truncation: orders-1/00000000000000000050.log: recovery would truncate "
            "13000 bytes at byte 7000: the first invalid batch: Record is corrupt (stored crc = ") in r.stderr
    assert ": stale:" not in r.stderr and "info: past-invalid-batch:" in r.stderr


def test_output_mirror_keeps_two_log_dirs_with_the_same_partition_apart(tmp_path):
    a = make_log_dir(tmp_path / "a", partitions=["orders-0"], segments=(0,), damage=False)
    b = make_log_dir(tmp_path / "b", partitions=["orders-0"], segments=(0,), damage=False)
    c = make_log_dir(tmp_path / "c", partitions=["orders-9"], segments=(0,), damage=False)
    log_b = b / "orders-0" / f"{0:020d}.log"
    log_b.write_bytes(log_b.read_bytes()[:9000])  # another log (9 whole batches): another rebuild
    rb = recover_segment(log_b, 0)
    log_b.with_suffix(".index").write_bytes(rb.encode_offset_index())
    log_b.with_suffix(".timeindex").write_bytes(rb.encode_time_index())
    out = tmp_path / "out"
    r = run_cli("reindex-time", a, b, c, "--output", out, "-q")
    assert r.returncode == 0, r.stderr
    # Same base name "logs": each log dir is named by its path.
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.index"))
    assert len(written) == 3 and len({w.split("/")[0] for w in written}) == 3, written
    for root in (a, b):
        (mirror,) = [out / w for w in written if w.split("/")[0].endswith(root.parent.name + "_logs")]
        assert mirror.read_bytes() == recover_segment(root / "orders-0" / f"{0:020d}.log", 0).encode_offset_index()
    # Different base names: those.
    (tmp_path / "d").mkdir()
    d1 = a.rename(tmp_path / "d" / "logs1")
    d2 = b.rename(tmp_path / "d" / "logs2")
    r = run_cli("reindex-time", d1, d2, "--output", tmp_path / "out2", "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(str(p.relative_to(tmp_path / "out2")) for p in (tmp_path / "out2").rglob("*.index")) == [
        "logs1/orders-0/00000000000000000000.index", "logs2/orders-0/00000000000000000000.index"]
    # One log dir: the usual DIR/<partition dir>/.
    r = run_cli("reindex-time", d1, "--output", tmp_path / "out3", "-q")
    assert (tmp_path / "out3" / "orders-0" / f"{0:020d}.index").exists()
