"""``kafkatool downconvert`` / ``upconvert`` through the real entry point: output contract, exit codes,
crash safety (a run killed with SIGKILL), the live-broker refusal."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from kafkatool.record.codecs import Codec
from kafkatool.util.units import format_size
from tests.support.cli import pty_session, run_cli
from tests.support.convert_fixtures import (
    legacy_log,
    make_partition,
    read_segments,
    records_of,
    tree_digest,
    v2_log,
    v2_txn_log,
)
from tests.support.paths import ROOT
from tests.support.screen import data_lines_missing


def test_downconvert_text_summary(tmp_path):
    src = make_partition(tmp_path / "src", "orders-0", {0: v2_txn_log(0)})
    r = run_cli("downconvert", src, tmp_path / "out", "--to-magic", "1")
    assert r.returncode == 0, r.stderr
    assert "orders-0: " in r.stdout and "records    24 in, 24 out" in r.stdout
    assert "dropped    6 control batches" in r.stdout and "log end    30 in, 30 out" in r.stdout
    assert "keeps it at 30" in r.stderr  # notes go to stderr
    assert (tmp_path / "out" / "orders-0" / f"{0:020d}.log").exists()


def test_json_lines_and_dry_run(tmp_path):
    logs = tmp_path / "logs"
    make_partition(logs, "a-0", {0: v2_log(0, codec=Codec.GZIP)})
    make_partition(logs, "a-1", {0: v2_log(0)})
    r = run_cli("downconvert", logs, tmp_path / "out", "--to-magic", "0", "--dry-run", "--format", "json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["type"] for x in lines] == ["partition", "partition", "summary"]
    assert all(x["schema"] == 1 for x in lines)
    a0 = lines[0]
    assert a0["partition"] == "a-0" and a0["output"] is None and a0["records_out"] == 25
    assert a0["recompressed_batches"] == 5 and a0["splits"] == 0 and a0["split_rate"] == 0
    assert {"elapsed_s", "peak_rss_bytes", "bytes_in", "bytes_out", "headers_dropped"} <= set(a0)
    assert lines[2]["partitions"] == 2 and lines[2]["dry_run"] is True
    assert not (tmp_path / "out").exists()


def test_upconvert_cli(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: legacy_log(0) + legacy_log(1, 18)})
    r = run_cli("upconvert", src, tmp_path / "out", "--batch-bytes", "0", "--codec", "zstd", "--format", "json")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout.splitlines()[0])
    assert stats["to_magic"] == 2 and stats["records_in"] == stats["records_out"] == 36
    out = read_segments(tmp_path / "out" / "t-0")
    assert [(o, k, v) for o, _, k, v in records_of(out)] == [
        (o, k, v) for o, _, k, v in records_of(legacy_log(0) + legacy_log(1, 18))]


@pytest.mark.parametrize("args,code,text", [
    (["downconvert", "{src}", "{out}"], 2, "--to-magic"),
    (["downconvert", "{src}", "{out}", "--to-magic", "2"], 2, "to-magic"),
    (["downconvert", "{src}", "{out}", "--to-magic", "1", "--codec", "zstd"], 2, "zstd cannot be written"),
    (["downconvert", "{src}", "{out}", "--to-magic", "1", "--zstd-to", "brotli"], 2, "--zstd-to"),
    (["downconvert", "{src}", "{src}/inner", "--to-magic", "1"], 2, "inner lies inside the input partition dir"),
    (["upconvert", "{src}", "{out}", "--chunk-size", "lots"], 2, "--chunk-size"),
    (["upconvert", "{missing}", "{out}"], 2, "no such file"),
])
def test_usage_errors(tmp_path, args, code, text):
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log()})
    fill = {"src": str(src), "out": str(tmp_path / "out"), "missing": str(tmp_path / "nope")}
    r = run_cli(*[a.format(**fill) for a in args])
    assert r.returncode == code, (r.stdout, r.stderr)
    assert text in r.stderr and "Traceback" not in r.stderr


def test_zstd_refusal_names_file_position_offsets(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log(0, 1) + v2_log(5, 1, codec=Codec.ZSTD)})
    r = run_cli("downconvert", src, tmp_path / "out", "--to-magic", "0")
    assert r.returncode == 1
    assert f"{0:020d}.log at byte {len(v2_log(0, 1))}: zstd-compressed batch (offsets 5..9)" in r.stderr
    assert not (tmp_path / "out").exists()
    r = run_cli("downconvert", src, tmp_path / "out", "--to-magic", "0", "--zstd-to", "snappy")
    assert r.returncode == 0, r.stderr


def test_refuses_to_write_into_a_log_dir_a_live_broker_holds(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log()})
    live = tmp_path / "live"
    live.mkdir()
    (live / "meta.properties").write_text("version=1\n")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, sys, time
        fd = os.open({str(live / '.lock')!r}, os.O_RDWR | os.O_CREAT)
        fcntl.lockf(fd, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        r = run_cli("downconvert", src, live / "t-0-v1", "--to-magic", "1")
        assert r.returncode == 3 and ".lock" in r.stderr
        assert not (live / "t-0-v1").exists()
    finally:
        holder.kill()
        holder.wait()


KILLER = """
import os, signal, sys
sys.path.insert(0, {root!r})
from kafkatool.convert import files as convert_io
from kafkatool.convert.engine import ConvertOptions, convert_log

target, calls = {where!r}, [0]
# "append": every write goes through append_run (a unit's) or append_ran (a compiled run's units at once)
names = ("append_run", "append_ran") if target == "append" else (target,)

def dying(original):
    def die(self, *a, **kw):
        calls[0] += 1
        if calls[0] == {after}:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, *a, **kw)
    return die

for name in names:
    setattr(convert_io.SegmentWriter, name, dying(getattr(convert_io.SegmentWriter, name)))
convert_log({src!r}, {dst!r}, ConvertOptions(to_magic=1, segment_bytes=600))
"""


@pytest.mark.parametrize("where,after", [("append", 3), ("append", 20), ("_write_indexes", 1), ("finish", 2)])
def test_a_killed_run_leaves_nothing_that_looks_complete(tmp_path, where, after):
    logs = tmp_path / "logs"
    for p in ("a-0", "a-1"):
        make_partition(logs, p, {0: v2_txn_log(0), 30: v2_txn_log(30, codec=Codec.LZ4)})
    before = tree_digest(logs)
    ref = tmp_path / "ref"
    assert run_cli("downconvert", logs, ref, "--to-magic", "1", "--segment-bytes", "600").returncode == 0
    dst = tmp_path / "out"
    script = KILLER.format(root=str(ROOT), where=where, after=after, src=str(logs), dst=str(dst))
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == -9, p.stderr
    assert tree_digest(logs) == before
    for entry in dst.iterdir():
        if entry.name.startswith(".kafkatool-tmp-"):
            continue  # an interrupted partition: plainly not a partition dir
        assert tree_digest(entry) == tree_digest(ref / entry.name)  # whatever has its final name is complete
    assert any(e.name.startswith(".kafkatool-tmp-") for e in dst.iterdir())
    state = tree_digest(dst)
    r = run_cli("downconvert", logs, dst, "--to-magic", "1", "--segment-bytes", "600")
    assert r.returncode == 2 and "DST holds an interrupted conversion" in r.stderr and "(--resume)" in r.stderr
    assert tree_digest(dst) == state
    r = run_cli("downconvert", logs, dst, "--to-magic", "0", "--segment-bytes", "600", "--resume")
    assert r.returncode == 2 and "to_magic 1, now 0" in r.stderr  # other options: never mixed into one DST
    r = run_cli("downconvert", logs, dst, "--to-magic", "1", "--segment-bytes", "600", "--resume")
    assert r.returncode == 0, r.stderr
    assert tree_digest(dst) == tree_digest(ref)  # the staging dirs gone, every partition whole, _SUCCESS written


def _run_with_tty_stderr(*args: object) -> tuple[int, str, bytes]:
    """Run kafkatool with stderr on a pseudo-terminal (stdout a pipe): (exit code, stdout, terminal bytes)."""
    rc, tty, out = pty_session(list(map(str, args)), stderr_only=True)
    return rc, out, tty


@pytest.mark.parametrize("command", ["downconvert", "upconvert"])
def test_progress_bar_on_a_terminal(tmp_path, command):
    data = v2_log(0, batches=40, codec=Codec.GZIP) if command == "downconvert" else legacy_log(1, 0, batches=40)
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    extra = ["--to-magic", "1"] if command == "downconvert" else []
    rc, out, tty = _run_with_tty_stderr(command, src, tmp_path / "out", *extra, "--chunk-size", "1KiB")
    assert rc == 0, tty.decode(errors="replace")
    screen = tty.decode(errors="replace")
    # rich draws the bar (description, bar glyphs, bytes done/total in KiB as the summaries count) on stderr, then
    # clears it (transient)
    assert command in screen and "━" in screen and f"{format_size(len(data))}" in screen
    assert "\x1b["  in screen
    assert "\x1b" not in out and "t-0: " in out  # the summary on stdout stays plain
    # not on a terminal, or with -q: no bar at all
    r = run_cli(command, src, tmp_path / "out2", *extra)
    assert r.returncode == 0 and "━" not in r.stderr and "\x1b" not in r.stderr
    rc, _, tty = _run_with_tty_stderr(command, src, tmp_path / "out3", *extra, "-q")
    assert rc == 0 and "━" not in tty.decode(errors="replace")



@pytest.mark.parametrize("command", ["downconvert", "upconvert"])
def test_progress_and_data_never_share_a_line_on_one_terminal(tmp_path, command):
    """stdout and stderr on the same terminal (the operator's usual case): every line of the data shows whole, on
    a line of its own, never after a stale bar ('...0:00:01t-0: src/t-0 -> ...')."""
    data = v2_log(0, batches=40, codec=Codec.GZIP) if command == "downconvert" else legacy_log(1, 0, batches=40)
    extra = ["--to-magic", "1"] if command == "downconvert" else []
    for i in range(4):  # four partitions: four data lines, each after a bar
        src = make_partition(tmp_path / "src", f"t-{i}", {0: data})
    piped = run_cli(command, src.parent, tmp_path / "piped", *extra, "--chunk-size", "1KiB")
    assert piped.returncode == 0 and piped.stdout.count("\n") >= 4, piped.stderr
    rc, tty, _ = pty_session([command, src.parent, tmp_path / "tty", *extra, "--chunk-size", "1KiB"], columns=200)
    assert rc == 0 and "━" in tty.decode(errors="replace"), tty[-600:]  # a bar was drawn
    assert data_lines_missing(piped.stdout.replace(str(tmp_path / "piped"), str(tmp_path / "tty")), tty) == []
