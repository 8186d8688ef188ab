"""Files that are not regular files, and file names that are not plain text (issue 23, items 1, 2, 6, 7, 8).

A FIFO, a directory, a device link, a dangling link or a symlink loop named on the command line: exit 2 and the
one line ``kafkatool <command>: error: <path>: not a regular file (<what>)``. The same file met in a walk of a partition
dir: the ``not-a-regular-file`` finding, exit 1, and the rest of the dir still read. Nothing ever blocks on a FIFO
or reads a device without end: every command runs in its own process under a timeout (a hang fails the test
instead of hanging it). A file that grows while it is read is read to its size at open. Names with terminal
escapes or newlines are printed escaped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkatool.record.file_records import FileRecords
from tests.support import zygote
from tests.support.hostile_corpus import SEG0, batch, good_partition
from tests.support.paths import ROOT

TIMEOUT = 60  # seconds; a command that blocks on a FIFO is killed and the test fails


def kafkatool(*args: str | os.PathLike[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200")
    try:
        return zygote.run([sys.executable, "-m", "kafkatool", *map(str, args)], env=env, cwd=cwd, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kafkatool {' '.join(map(str, args))} hung (killed after {TIMEOUT} s)")


# ------------------------------------------------------------------------------------------- the kinds

def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _directory(p: Path) -> None:
    p.mkdir()


def _dev_zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _dangling(p: Path) -> None:
    p.symlink_to("gone.log")


def _loop(p: Path) -> None:
    other = p.with_name("other")  # not a Kafka name: the loop is one finding
    p.symlink_to(other.name)
    other.symlink_to(p.name)


KINDS = [
    pytest.param(_fifo, "a FIFO", id="fifo"),
    pytest.param(_directory, "a directory", id="directory"),
    pytest.param(_dev_zero, "a character device", id="dev-zero-link"),
    pytest.param(_dangling, "a dangling symbolic link", id="dangling-link"),
    pytest.param(_loop, "a symbolic link loop", id="link-loop"),
]

# The commands that take a segment file, each with the arguments after it.
FILE_COMMANDS = {
    "dump": ["dump"],
    "dump --deep": ["dump", "--deep", "--verify"],
    "reindex-time": ["reindex-time"],
    "fetch-sim": ["fetch-sim"],
    "spark-scan": ["spark-scan", "--engine", "local-processes"],
    "downconvert": ["downconvert", "--to-magic", "1"],
    "upconvert": ["upconvert"],
}


def _argv(command: str, path: Path, out: Path) -> list[str | os.PathLike[str]]:
    head, *rest = FILE_COMMANDS[command]
    if head in ("downconvert", "upconvert"):
        return [head, path, out / "dst", *rest]
    return [head, path, *rest]


@pytest.mark.parametrize("command", list(FILE_COMMANDS))
@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_named_on_the_command_line_exit_2_in_one_line(tmp_path: Path, make: Callable[[Path], None], kind: str,
                                                     command: str) -> None:
    path = tmp_path / f"{SEG0}.log"
    make(path)
    r = kafkatool(*_argv(command, path, tmp_path), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    head = FILE_COMMANDS[command][0]
    assert r.stderr.splitlines() == [f"kafkatool {head}: error: {path}: not a regular file ({kind})"]
    assert r.stdout == ""
    assert not (tmp_path / "dst").exists()


# ------------------------------------------------------------------------------------------- in a dir walk

def _partition(tmp_path: Path, make: Callable[[Path], None]) -> tuple[Path, Path]:
    """A good partition whose first .log is replaced by the kind; (partition dir, that path)."""
    d = good_partition(tmp_path)
    bad = d / f"{SEG0}.log"
    bad.unlink()
    make(bad)
    return d, bad


@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_dump_of_the_partition_reports_the_finding_and_dumps_the_rest(tmp_path: Path, make: Callable[[Path], None],
                                                                     kind: str) -> None:
    d, bad = _partition(tmp_path, make)
    r = kafkatool("dump", d)
    assert r.returncode == 1, r.stderr
    assert f"kafkatool dump: error: not-a-regular-file: {bad}: not a regular file ({kind})" in r.stderr.splitlines()
    assert "findings: 1 errors" in r.stderr
    assert "offsets 6..11" in r.stderr  # the other segment is dumped
    r = kafkatool("dump", d, "--format", "json")
    findings = [o for o in map(json.loads, r.stdout.splitlines()) if o["type"] == "finding"]
    assert [(f["kind"], f["path"], f["message"], f["file_type"]) for f in findings] == [
        ("not-a-regular-file", str(bad), f"not a regular file ({kind})", kind)]
    assert r.returncode == 1


@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_reindex_time_of_the_partition_reports_the_finding(tmp_path: Path, make: Callable[[Path], None],
                                                           kind: str) -> None:
    d, bad = _partition(tmp_path, make)
    r = kafkatool("reindex-time", d)
    assert r.returncode == 1, r.stderr
    assert f"kafkatool reindex-time: error: not-a-regular-file: {bad}: not a regular file ({kind})" \
        in r.stderr.splitlines()
    assert "checked 1 segment" in r.stderr  # the readable one


@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_fetch_sim_of_the_partition_reports_the_finding(tmp_path: Path, make: Callable[[Path], None],
                                                        kind: str) -> None:
    d, bad = _partition(tmp_path, make)
    r = kafkatool("fetch-sim", d)
    assert r.returncode == 1, r.stderr
    assert f"kafkatool fetch-sim: error: {bad}: not a regular file ({kind})" in r.stderr.splitlines()


@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_downconvert_refuses_the_partition(tmp_path: Path, make: Callable[[Path], None], kind: str) -> None:
    d, bad = _partition(tmp_path, make)
    r = kafkatool("downconvert", d, tmp_path / "dst", "--to-magic", "1")
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [f"kafkatool downconvert: error: {bad}: not a regular file ({kind})"]
    assert not (tmp_path / "dst").exists()


@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_canary_plan_reports_a_damaged_partition(tmp_path: Path, make: Callable[[Path], None], kind: str) -> None:
    _, bad = _partition(tmp_path, make)
    r = kafkatool("canary", "plan", tmp_path, "--format", "json")
    assert r.returncode == 1, r.stderr
    assert f"kafkatool canary plan: error: t-0: {bad}: not a regular file ({kind})" in r.stderr.splitlines()


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_index_linked_to_a_device_is_never_read(tmp_path: Path, suffix: str, device: str) -> None:
    """reindex-time once grew to 7.5 GB on such an index; it is judged not-a-regular-file and never replaced."""
    d = good_partition(tmp_path)
    index = d / f"{SEG0}{suffix}"
    index.unlink()
    index.symlink_to(device)
    r = kafkatool("reindex-time", d)
    assert r.returncode == 1, r.stderr
    assert (f"kafkatool reindex-time: error: not-a-regular-file: t-0/{index.name}: not a regular file (a character "
            "device): the broker cannot open it; remove it, and the broker rebuilds it") in r.stderr.splitlines()
    r = kafkatool("reindex-time", d, "--in-place")
    assert r.returncode == 1, r.stderr
    assert os.readlink(index) == device and not index.with_name(index.name + ".bak").exists()
    r = kafkatool("reindex-time", d, "--output", tmp_path / "out")
    assert r.returncode == 1
    assert (tmp_path / "out" / "t-0" / index.name).is_file()  # the rebuild, written beside, not over it


def test_a_symlink_to_a_segment_is_followed(tmp_path: Path) -> None:
    d = good_partition(tmp_path)
    elsewhere = tmp_path / "other-disk"
    elsewhere.mkdir()
    (d / f"{SEG0}.log").rename(elsewhere / f"{SEG0}.log")
    (d / f"{SEG0}.log").symlink_to(elsewhere / f"{SEG0}.log")
    r = kafkatool("dump", d)
    assert r.returncode == 0, r.stderr
    assert "4 batches, 12 records" in r.stderr


def test_a_log_dir_checkpoint_that_is_a_fifo(tmp_path: Path) -> None:
    good_partition(tmp_path)
    fifo = tmp_path / "recovery-point-offset-checkpoint"
    os.mkfifo(fifo)
    r = kafkatool("reindex-time", tmp_path, "--recovery-report")
    assert r.returncode == 1, r.stderr
    assert f"kafkatool reindex-time: error: not-a-regular-file: {fifo}: not a regular file (a FIFO)" \
        in r.stderr.splitlines()
    assert "1 file not a regular file, not read" in r.stderr


# ------------------------------------------------------------------------------------------- growing files

def test_a_segment_that_grows_while_read_is_read_to_its_size_at_open(tmp_path: Path) -> None:
    path = tmp_path / f"{SEG0}.log"
    path.write_bytes(batch(0) + batch(3))
    with FileRecords(path) as fr:
        with open(path, "ab") as w:
            w.write(batch(6) * 50)
        assert fr.size == fr.file_size == len(batch(0)) * 2
        assert [b.base_offset for b in fr.batches()] == [0, 3]


def test_dump_of_a_segment_appended_to_meanwhile_ends(tmp_path: Path) -> None:
    """A writer appends to the segment while dump reads it: dump reads what was there when it opened the file and
    ends (a reader following the growth would never end while the writer goes on)."""
    one = len(batch(0))
    path = tmp_path / f"{SEG0}.log"
    path.write_bytes(b"".join(batch(i * 3) for i in range(2000)))
    start = path.stat().st_size
    script = ("import sys, time\n"
              f"data = open(sys.argv[1], 'rb').read({one})\n"
              "f = open(sys.argv[1], 'ab', buffering=0)\n"
              "while True:\n"
              "    f.write(data); time.sleep(0.001)\n")
    writer = subprocess.Popen([sys.executable, "-c", script, str(path)])
    try:
        _wait_for(lambda: path.stat().st_size > start)
        r = kafkatool("dump", path, "--format", "json")
        end = [o for o in map(json.loads, r.stdout.splitlines()) if o["type"] == "file_end"][0]
        _wait_for(lambda: path.stat().st_size > end["size"])  # the file went on growing after the open
    finally:
        writer.kill()
        writer.wait(TIMEOUT)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr  # the appended copies repeat offset 0
    assert end["size"] > start and end["valid_bytes"] == end["size"] == end["batches"] * one


def _wait_for(condition: Callable[[], bool]) -> None:
    for _ in range(TIMEOUT * 100):
        if condition():
            return
        time.sleep(0.01)
    pytest.fail("the writer did not write")


# ------------------------------------------------------------------------------------------- names

EVIL_DIR = "evil\x1b[2J-0"
EVIL_FILE = "note\nwith\x1b[31mescapes.log"


def _evil_log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    root.mkdir()
    d = good_partition(root, EVIL_DIR)
    (d / EVIL_FILE).write_bytes(batch(0))
    return root


HUMAN_RUNS = {
    "dump": ["dump", "{root}"],
    "dump table": ["dump", "{root}", "--format", "table"],
    "dump dump-log": ["dump", "{root}", "--format", "dump-log"],
    "reindex-time": ["reindex-time", "{root}", "-v"],
    "recovery-report": ["reindex-time", "{root}", "--recovery-report"],
    "reindex-time --output": ["reindex-time", "{root}", "--output", "{out}/r"],
    "fetch-sim": ["fetch-sim", "{root}"],
    "spark-scan": ["spark-scan", "{root}", "--engine", "local-processes", "--verify-index"],
    "downconvert": ["downconvert", "{root}", "{out}/down", "--to-magic", "1"],
    "canary plan": ["canary", "plan", "{root}"],
    "canary run": ["canary", "run", "{root}", "-p", "*", "-w", "{out}/work"],
    "named": ["dump", "{root}/" + EVIL_DIR + "/" + EVIL_FILE],
    "missing": ["dump", "{root}/" + EVIL_DIR + "/gone\x1b[5m.log"],
}


@pytest.mark.parametrize("run", list(HUMAN_RUNS))
def test_names_are_printed_escaped(tmp_path: Path, run: str) -> None:
    root = _evil_log_dir(tmp_path)
    args = [a.format(root=root, out=tmp_path) for a in HUMAN_RUNS[run]]
    r = kafkatool(*args)
    assert r.returncode in (0, 1, 2), r.stderr
    both = r.stdout + r.stderr
    assert "\x1b" not in both  # NO_COLOR and no terminal: no escape sequence is ours
    assert "\nwith\\x1b" not in both and "\nwith\x1b" not in both  # the name's newline never splits a line
    assert "evil\\x1b[2J" in both
    if run in ("dump", "named"):
        assert "note\\nwith\\x1b[31mescapes.log" in both
    if run == "missing":
        assert r.stderr.splitlines() == [f"kafkatool dump: error: {root}/evil\\x1b[2J-0/gone\\x1b[5m.log: no such "
                                         "file or directory, nor a match of it as a pattern"]


def test_canary_run_prints_names_escaped(tmp_path: Path) -> None:
    root = _evil_log_dir(tmp_path)
    r = kafkatool("canary", "run", root, "-p", "*", "-w", tmp_path / "work")
    # the stray file is not carried into the canary: run's own verify finds the difference that names it, and
    # nothing is published (issue 23: canary run fails where its verify would)
    assert r.returncode == 1, r.stderr
    both = r.stdout + r.stderr
    assert "\x1b" not in both and "\nwith" not in both
    assert "note\\nwith\\x1b[31mescapes.log was not carried into the canary" in r.stderr


def test_json_keeps_the_names_as_they_are(tmp_path: Path) -> None:
    root = _evil_log_dir(tmp_path)
    r = kafkatool("dump", root, "--format", "json")
    paths = {o["path"] for o in map(json.loads, r.stdout.splitlines()) if o["type"] == "file"}
    assert str(root / EVIL_DIR / EVIL_FILE) in paths
    assert "\x1b" not in r.stdout  # JSON escapes it (\u001b)
