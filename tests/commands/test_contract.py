"""The operator contract every subcommand keeps, checked through the real entry point (``python -m kafkatool``).

Every command: ``--format text|json`` (``table`` where it fits), data on stdout and progress on stderr,
colour only on a terminal and never with ``NO_COLOR``, ``--quiet``, ``--traceback``, one ``--memory``
budget (a bad size or one too small: exit 2 with the minimum), the shared exit codes 0/1/2/3/130 (SIGINT
is 130 without a traceback), and a reader that goes away (``| head``) is not an error.

Inputs: ``tests/canary_dirs.small_dir`` (a few small legacy partitions written by ``kafkatool sample``) for
the quick checks, and a ~48 MiB v2 and ~24 MiB v1 partition (also ``kafkatool sample``, no fsync) for the
runs that must still be working when SIGINT or a closed pipe arrives.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from kafkatool.commands.app import get_app
from kafkatool.commands.options import (
    OPTION_KINDS,
    SIZE,
    SIZE_LIST,
    SIZE_RANGE,
    TIME,
    TOPIC_SIZES,
    TopicSizes,
    parse_memory_value,
)
from kafkatool.sample.generate import generate_sample
from kafkatool.sample.spec import IntRange, SampleSpec, TopicSpec
from kafkatool.util import crash
from kafkatool.util.units import parse_size
from tests.metadata.fixtures import MetadataDirBuilder, partition, topic
from tests.support.canary_dirs import small_dir
from tests.support.cli import interruptible, run_cli, run_on_pty
from tests.support.paths import ROOT

STOP_AT = ROOT / "tests" / "support" / "stop_at"

MiB = 1 << 20

COMMANDS = ("info", "dump", "offsets-for-times", "metadata", "reindex-time",
            "downconvert", "upconvert", "fetch-sim", "canary plan",
            "canary run", "canary verify", "canary apply", "canary rollback", "spark-scan", "sample")


@dataclass
class Dirs:
    base: Path
    small: Path  # a log dir: old-0 (v0/v1/v2, compacted), v0-0, lat-0 (v1/v2 LogAppendTime)
    canary_tpl: Path  # logs + work dir after `canary run` and `canary verify`, to restore before apply/rollback
    meta: Path  # a KRaft metadata log dir (__cluster_metadata-0 inside): a snapshot and the log after it


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> Dirs:
    return _make_dirs(tmp_path_factory.mktemp("contract"))


def _make_dirs(base: Path) -> Dirs:
    small = small_dir(base / "small")
    live = base / "canary"
    shutil.copytree(small, live / "logs")
    r = run_cli("canary", "run", live / "logs", "-p", "v0-0", "-w", live / "work", "-q")
    assert r.returncode == 0, r.stderr
    r = run_cli("canary", "verify", live / "work", "-q")
    assert r.returncode == 0, r.stderr
    shutil.copytree(live, base / "canary-tpl", copy_function=shutil.copy2)
    return Dirs(base, small, base / "canary-tpl", _metadata_dir(base / "meta"))


def _metadata_dir(base: Path) -> Path:
    b = MetadataDirBuilder(base / "__cluster_metadata-0")
    b.append(topic("t", 1), partition(1, 0, [1], 1))
    b.append(topic("u", 2))
    b.write_log()
    b.snapshot(2, [topic("t", 1), partition(1, 0, [1], 1)])
    return base


def _restore_canary(d: Dirs) -> Path:
    live = d.base / "canary"
    shutil.rmtree(live)
    shutil.copytree(d.canary_tpl, live, copy_function=shutil.copy2)
    return live


def argv(command: str, d: Dirs, tmp: Path) -> list[str | os.PathLike[str]]:
    """A quick, clean (exit 0) invocation of ``command`` over the small inputs."""
    s = d.small
    if command == "info":
        return ["info", s]
    if command == "offsets-for-times":
        return ["offsets-for-times", s, "--time", "earliest"]
    if command == "dump":
        return ["dump", s / "old-0"]
    if command == "metadata":
        return ["metadata", d.meta]
    if command == "reindex-time":
        return ["reindex-time", s / "old-0"]
    if command == "downconvert":
        return ["downconvert", "--to-magic", "0", s / "lat-0", tmp / "out"]
    if command == "upconvert":
        return ["upconvert", s / "v0-0", tmp / "out"]
    if command == "fetch-sim":
        return ["fetch-sim", s / "old-0"]
    if command == "canary plan":
        return ["canary", "plan", s]
    if command == "canary run":
        return ["canary", "run", s, "-p", "v0-0", "-w", tmp / "work"]
    if command == "canary verify":
        return ["canary", "verify", d.canary_tpl / "work"]  # read-only
    if command in ("canary apply", "canary rollback"):
        live = _restore_canary(d)
        return ["canary", command.split()[1], live / "work"]
    if command == "spark-scan":
        return ["spark-scan", "--engine", "local-processes", "--jobs", "1", s / "old-0"]
    if command == "sample":
        return ["sample", tmp / "out", "--topics", "t", "--records", "50"]
    raise AssertionError(command)


def _fresh(tmp: Path) -> Path:
    shutil.rmtree(tmp / "out", ignore_errors=True)
    shutil.rmtree(tmp / "work", ignore_errors=True)
    return tmp


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def has_colour(text: str) -> bool:
    """Any SGR sequence that sets a colour (30-37, 38, 40-47, 48, 90-97, 100-107); bold and the like are
    not colour (rich keeps them under NO_COLOR, as the NO_COLOR convention allows)."""
    for m in _SGR.finditer(text):
        for p in (int(x) for x in m.group(1).split(";") if x):
            if 30 <= p <= 38 or 40 <= p <= 48 or 90 <= p <= 97 or 100 <= p <= 107:
                return True
    return False


try:  # typer >= 0.2x vendors click; older typer uses click itself
    import typer._click as click_mod  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover
    import click as click_mod  # type: ignore[no-redef,unused-ignore]


def leaf_commands() -> dict[str, click_mod.Command]:
    root = typer.main.get_command(get_app())
    out: dict[str, click_mod.Command] = {}

    def walk(cmd: click_mod.Command, path: str) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, f"{path} {name}".strip())
        else:
            out[path] = cmd

    walk(root, "")
    return out


def _options(cmd: click_mod.Command) -> dict[str, click_mod.Parameter]:
    return {o: p for p in cmd.params for o in getattr(p, "opts", [])}


def format_choices(command: str) -> set[str]:
    """The values ``--format`` accepts (its enum, as typer declares it)."""
    opt = _options(leaf_commands()[command])["--format"]
    enum_type = getattr(getattr(opt, "type_descriptor", None), "annotation", None) or getattr(opt, "type", None)
    return {str(getattr(m, "value", m)) for m in getattr(enum_type, "choices", None) or list(enum_type or ())}


# ------------------------------------------------------------------------------------------------ the options


# Commands that print kafkatool's own documentation and read no log dir: no formats, no budget (test_docs.py).
HELP_COMMANDS = ("completion", "man")
# Runs a real broker (a JVM, tens of seconds): its runs are tests/broker/test_rehearse.py's and
# tests/canary/rehearse's; here only the options every command shares.
BROKER_COMMANDS = ("canary rehearse",)


def test_the_contract_covers_every_subcommand():
    assert set(leaf_commands()) == set(COMMANDS) | set(HELP_COMMANDS) | set(BROKER_COMMANDS)


@pytest.mark.parametrize("command", BROKER_COMMANDS)
def test_broker_commands_have_the_shared_options(command):
    opts = _options(leaf_commands()[command])
    for name in ("--format", "--quiet", "--traceback", "--memory"):
        assert name in opts, f"{command} has no {name}"
    assert {"text", "json"} <= format_choices(command)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_the_shared_options(command):
    opts = _options(leaf_commands()[command])
    for name in ("--format", "--quiet", "--traceback", "--memory"):
        assert name in opts, f"{command} has no {name}"
    choices = format_choices(command)
    assert {"text", "json"} <= choices, (command, choices)


# ----------------------------------------------------------------------------------------- formats and streams


@pytest.mark.parametrize("command", COMMANDS)
def test_json_lines_on_stdout_progress_on_stderr(command, dirs, tmp_path):
    r = run_cli(*argv(command, dirs, _fresh(tmp_path)), "--format", "json")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines, "no data on stdout"
    for line in lines:
        obj = json.loads(line)
        assert obj["schema"] == 1 and isinstance(obj["type"], str), line
    for line in r.stderr.splitlines():  # stderr is for people: no data lines there
        assert not line.startswith("{"), line
    assert not has_colour(r.stdout + r.stderr)  # piped: never colour


@pytest.mark.parametrize("command", COMMANDS)
def test_text_and_table_formats_and_quiet(command, dirs, tmp_path):
    r = run_cli(*argv(command, dirs, _fresh(tmp_path)), "--format", "text")
    assert r.returncode == 0, r.stderr
    assert not r.stdout.lstrip().startswith("{")
    if command != "reindex-time":  # a clean check prints nothing on stdout (its summary is on stderr)
        assert r.stdout.strip()
    else:
        assert "checked 4 segments" in r.stderr
    assert not has_colour(r.stdout + r.stderr)
    q = run_cli(*argv(command, dirs, _fresh(tmp_path)), "--format", "text", "--quiet")
    assert q.returncode == 0, q.stderr
    # --quiet drops progress and summaries; findings (old-0's compaction gaps are info findings) stay.
    quiet_lines = q.stderr.splitlines()
    assert set(quiet_lines) <= set(r.stderr.splitlines())
    for line in quiet_lines:
        assert re.search(r"\b(info|warning|error)\b", line), line
    if r.stderr.strip() and not quiet_lines:
        assert q.stderr == ""
    if any(not re.search(r"\b(info|warning|error)\b", x) for x in r.stderr.splitlines()):
        assert len(quiet_lines) < len(r.stderr.splitlines())
    if "table" in format_choices(command):
        t = run_cli(*argv(command, dirs, _fresh(tmp_path)), "--format", "table")
        assert t.returncode == 0, t.stderr
        assert t.stdout.strip() or command == "reindex-time"
        assert not has_colour(t.stdout + t.stderr)


@pytest.fixture(scope="module")
def torn(dirs: Dirs) -> Path:
    """old-0 with its first segment torn mid-batch: a finding (exit 1) in dump and reindex-time."""
    p = dirs.base / "torn" / "old-0"
    shutil.copytree(dirs.small / "old-0", p)
    log = sorted(p.glob("*.log"))[0]
    with open(log, "r+b") as f:
        f.truncate(log.stat().st_size - 7)
    return p


def _tear(log: Path, n: int = 7) -> None:
    with open(log, "r+b") as f:
        f.truncate(log.stat().st_size - n)


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def damaged(dirs: Dirs) -> Path:
    return _damage(dirs, dirs.base / "damaged")


def _damage(dirs: Dirs, base: Path) -> Path:
    """Damaged inputs for every command: torn segments (old-0's first, lat-0's and v0-0's last), a batch with a
    bad CRC, a canary changed after its run, a canary whose saved original was changed."""
    shutil.copytree(dirs.small, base / "logs")
    _tear(sorted((base / "logs" / "old-0").glob("*.log"))[0])
    for p in ("lat-0", "v0-0"):
        _tear(sorted((base / "logs" / p).glob("*.log"))[-1])
    shutil.copytree(dirs.meta, base / "meta")
    _tear(sorted((base / "meta" / "__cluster_metadata-0").glob("*.checkpoint"))[0], 20)
    shutil.copytree(dirs.small / "old-0", base / "crc" / "old-0")
    shutil.copytree(dirs.small / "old-0", base / "epochs" / "old-0")  # a leader-epoch-checkpoint that does not read
    (base / "epochs" / "old-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")
    _flip(sorted((base / "crc" / "old-0").glob("*.log"))[0], 40)
    for name in ("bad-canary", "bad-original"):
        live = base / name
        shutil.copytree(dirs.small, live / "logs")
        for step in (["run", live / "logs", "-p", "v0-0", "-w", live / "work"], ["verify", live / "work"],
                     *([["apply", live / "work"]] if name == "bad-original" else [])):
            r = run_cli("canary", *step, "-q")
            assert r.returncode == 0, r.stderr
        side = "canary" if name == "bad-canary" else "originals"
        _flip(sorted((live / "work" / side / "v0-0").glob("*.log"))[0], 100)
    # the changed canary verified again (it fails), so that apply's refusal ("the last verify failed") does not
    # depend on whether the "canary verify" case ran first
    r = run_cli("canary", "verify", base / "bad-canary" / "work", "-q")
    assert r.returncode == 1, r.stderr
    return base


# command -> (arguments, exit code, text of its findings: on stderr only)
DAMAGED: dict[str, Callable[[Path, Path], tuple[list[str | os.PathLike[str]], int, str]]] = {
    "info": lambda d, t: (["info", d / "epochs" / "old-0"], 1, "leader-epoch-checkpoint"),
    "offsets-for-times": lambda d, t: (["offsets-for-times", d / "epochs" / "old-0", "--time", "earliest"], 1,
                                       "leader-epoch-checkpoint"),
    "dump": lambda d, t: (["dump", d / "logs" / "old-0"], 1, "torn-tail"),
    "metadata": lambda d, t: (["metadata", d / "meta"], 1, "the snapshot ends inside a batch"),
    "reindex-time": lambda d, t: (["reindex-time", d / "logs" / "old-0"], 1, "warning: log-truncation: "),
    "downconvert": lambda d, t: (["downconvert", "--to-magic", "0", d / "logs" / "lat-0", t / "out"], 0,
                                 "warning: "),
    "upconvert": lambda d, t: (["upconvert", d / "logs" / "v0-0", t / "out"], 0, "warning: "),
    "fetch-sim": lambda d, t: (["fetch-sim", d / "crc" / "old-0"], 1,
                               "kafkatool fetch-sim: error: old-0: the consumer fails"),
    # (the plan itself lists a damaged partition among its risks: that is the plan, data)
    "canary plan": lambda d, t: (["canary", "plan", d / "logs"], 1, "kafkatool canary plan: error: old-0: "),
    "canary run": lambda d, t: (["canary", "run", d / "logs", "-p", "old-0", "-w", t / "work"], 1,
                                "not a complete batch"),
    "canary verify": lambda d, t: (["canary", "verify", d / "bad-canary" / "work"], 1, "DIFFERENCE"),
    "canary apply": lambda d, t: (["canary", "apply", d / "bad-canary" / "work"], 1, "failed"),
    "canary rollback": lambda d, t: (["canary", "rollback", d / "bad-original" / "work"], 1,
                                     "does not match the manifest"),
    "spark-scan": lambda d, t: (["spark-scan", "--engine", "local-processes", "--jobs", "1", d / "logs" / "old-0"],
                                1, "kafkatool spark-scan: warning: torn-tail: "),  # dump's own finding
    "sample": lambda d, t: (["sample", d / "logs"], 2, "is not empty"),  # a log dir that holds data
}


# A parent directory whose name rich would read as markup: "[/x]" made every rich-rendered line that names a
# path an internal error (MarkupError), "[bold]" silently vanished.
BRACKETS = "[/x] [bold]k[/]"


@pytest.fixture(scope="module")
def bracketed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dirs, Path]:
    """The contract's clean and damaged inputs under BRACKETS, with a partition l[bold]at-0 beside lat-0."""
    d = _make_dirs(tmp_path_factory.mktemp("markup") / BRACKETS)
    shutil.copytree(d.small / "lat-0", d.small / "l[bold]at-0")
    return d, _damage(d, d.base / "damaged")


@pytest.mark.parametrize("command", COMMANDS)
def test_paths_and_names_with_brackets_print_as_they_are(command, bracketed, tmp_path):
    """File and directory names are the user's, printed as they are (never read as rich markup): every command,
    in every format, piped and on a terminal, on clean and on damaged input."""
    d, damaged = bracketed
    tmp = tmp_path / BRACKETS  # three directories: "[", "x] [bold]k[", "]"
    tmp.mkdir(parents=True)
    bad_rc = DAMAGED[command](damaged, tmp)[1]
    for make, rc, formats in ((lambda: argv(command, d, _fresh(tmp)), 0, sorted(format_choices(command))),
                              (lambda: DAMAGED[command](damaged, _fresh(tmp))[0], bad_rc, ["text"])):
        for fmt in formats:
            r = run_cli(*make(), "--format", fmt)
            assert r.returncode == rc and "internal error" not in r.stderr, (fmt, r.stderr[-600:])
        code, shown = run_on_pty(make(), {})
        assert code == rc and "internal error" not in shown, shown[-600:]
    if command == "dump":
        r = run_cli("dump", d.small / "l[bold]at-0", "--format", "table")
        assert r.returncode == 0 and f"{d.small}/l[bold]at-0/00000000000000000000.log · log" in r.stdout, r.stdout
        r = run_cli("dump", damaged / "logs" / "old-0", "--format", "table")
        assert r.returncode == 1 and f"torn-tail: {damaged}/logs/old-0/" in r.stderr, r.stderr
        r = run_cli("dump", d.small / "nothing[/x]here")
        assert (r.returncode, r.stderr) == (2, f"kafkatool dump: error: {d.small}/nothing[/x]here: no such file or "
                                                "directory, nor a match of it as a pattern\n")
    if command == "canary plan":
        r = run_cli("canary", "plan", d.small, "--format", "text")
        assert f"canary plan: {d.small} (" in r.stdout and "\nl[bold]at-0 " in r.stdout, r.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_findings_of_damaged_input_go_to_stderr_and_data_to_stdout(command, damaged, tmp_path):
    """The split holds on bad input too, where findings appear: in text the findings are on stderr and never on
    stdout; in JSON stdout is JSON lines only (findings there are data objects) and stderr has none."""
    args, rc, finding = DAMAGED[command](damaged, _fresh(tmp_path))
    text = run_cli(*args, "--format", "text")
    assert text.returncode == rc, text.stderr
    assert finding in text.stderr, text.stderr
    assert finding not in text.stdout, text.stdout
    assert "Traceback" not in text.stderr
    q = run_cli(*DAMAGED[command](damaged, _fresh(tmp_path))[0], "--format", "text", "--quiet")
    assert q.returncode == rc and finding in q.stderr, q.stderr  # findings survive --quiet
    js = run_cli(*DAMAGED[command](damaged, _fresh(tmp_path))[0], "--format", "json")
    assert js.returncode == rc, js.stderr
    for line in js.stdout.splitlines():
        obj = json.loads(line)
        assert obj["schema"] == 1 and isinstance(obj["type"], str), line
    for line in js.stderr.splitlines():
        assert not line.lstrip().startswith("{"), line


def test_colour_only_on_a_terminal_and_never_with_no_color(torn):
    rc, shown = run_on_pty(["dump", torn], {})
    assert rc == 1
    assert has_colour(shown), shown[-400:]  # findings are coloured on a terminal
    rc, shown = run_on_pty(["dump", torn], {"NO_COLOR": "1"})
    assert rc == 1
    assert not has_colour(shown), shown[-400:]
    r = run_cli("dump", torn, env={"NO_COLOR": ""})  # piped, even without NO_COLOR: no colour
    assert r.returncode == 1 and not has_colour(r.stdout + r.stderr)


@pytest.mark.parametrize("command", COMMANDS)
def test_no_color_on_a_terminal(command, dirs, tmp_path):
    rc, shown = run_on_pty(argv(command, dirs, _fresh(tmp_path)), {"NO_COLOR": "1"})
    assert rc == 0, shown[-400:]
    assert not has_colour(shown), shown[-400:]


# ------------------------------------------------------------------------------------------------- exit codes


def _one_line_error(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and re.match(r"kafkatool( [a-z-]+)*: error: ", lines[0]), stderr
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_usage_errors_exit_2_in_one_line(command, dirs, tmp_path):
    args = argv(command, dirs, _fresh(tmp_path))
    r = run_cli(*args, "--no-such-option")
    assert r.returncode == 2
    assert "--no-such-option" in _one_line_error(r.stderr)
    r = run_cli(*args, "--memory", "12XB")
    assert r.returncode == 2
    assert "not a size" in _one_line_error(r.stderr)


@pytest.mark.parametrize("command", COMMANDS)
def test_memory_too_small_says_the_minimum(command, dirs, tmp_path):
    args = argv(command, dirs, _fresh(tmp_path))
    for r in (run_cli("--memory", "1MiB", *args), run_cli(*args, "--memory", "1MiB"),
              run_cli(*args, env={"KAFKATOOL_MEMORY": "1MiB"})):
        assert r.returncode == 2, r.stderr
        line = _one_line_error(r.stderr)
        assert re.search(r"too small .*the minimum is \d", line), line
    assert not (tmp_path / "out").exists() and not (tmp_path / "work").exists()  # refused before any work


def test_memory_help_is_one_story():
    """Every command's --memory says the same (the shared text); spark-scan's adds how Spark splits it and the
    minimum; the root's says a command's own wins."""
    from kafkatool.commands.options import MEMORY_HELP
    from kafkatool.commands.spark_scan import SPARK_MEMORY_HELP

    seen = set()
    for path, _, p in every_option():
        if "--memory" not in p.opts:
            continue
        seen.add(path)
        if path == ():
            assert "A command's own --memory wins" in p.help and "KAFKATOOL_MEMORY" in p.help, p.help
            assert "[default: 256MiB; spark-scan with Spark: 2GiB]" in p.help, p.help
        elif path == ("spark-scan",):
            assert p.help == SPARK_MEMORY_HELP
        else:
            assert p.help == MEMORY_HELP, path
    assert seen == {(), *(tuple(c.split()) for c in (*COMMANDS, *BROKER_COMMANDS))}
    for text in (MEMORY_HELP, SPARK_MEMORY_HELP):
        assert "Wins over 'kafkatool --memory' and KAFKATOOL_MEMORY." in text and "[default: " in text


def test_command_memory_wins_over_root_and_env(dirs):
    r = run_cli("--memory", "1MiB", "spark-scan", "--engine", "local-processes", "--jobs", "1",
                dirs.small / "old-0", "--memory", "300MiB", env={"KAFKATOOL_MEMORY": "2MiB"})
    assert r.returncode == 0, r.stderr
    assert "memory 300MiB" in r.stderr  # the division it printed is of the command's --memory
    r = run_cli("--memory", "320MiB", "spark-scan", "--engine", "local-processes", "--jobs", "1",
                dirs.small / "old-0", env={"KAFKATOOL_MEMORY": "2MiB"})
    assert r.returncode == 0 and "memory 320MiB" in r.stderr, r.stderr
    r = run_cli("spark-scan", "--engine", "local-processes", "--jobs", "2", dirs.small / "old-0",
                env={"KAFKATOOL_MEMORY": "400MiB"})
    assert r.returncode == 0 and "memory 400MiB" in r.stderr and "2 worker(s)" in r.stderr, r.stderr


MISSING_INPUT = {
    "dump": ["dump", "{m}"], "metadata": ["metadata", "{m}"], "reindex-time": ["reindex-time", "{m}"],
    "downconvert": ["downconvert", "--to-magic", "1", "{m}", "{o}"], "upconvert": ["upconvert", "{m}", "{o}"],
    "fetch-sim": ["fetch-sim", "{m}"], "canary plan": ["canary", "plan", "{m}"],
    "canary run": ["canary", "run", "{m}", "-p", "x-0", "-w", "{o}"], "canary verify": ["canary", "verify", "{m}"],
    "canary apply": ["canary", "apply", "{m}"], "canary rollback": ["canary", "rollback", "{m}"],
    "spark-scan": ["spark-scan", "--engine", "local-processes", "{m}"],
    "sample": ["sample", "{f}"],  # a regular file where the directory should be
    "info": ["info", "{m}"], "offsets-for-times": ["offsets-for-times", "{m}", "--time", "earliest"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_bad_input_is_one_line_and_traceback_on_request(command, tmp_path):
    f = tmp_path / "file"
    f.write_text("not a dir")
    args = [a.format(m=tmp_path / "missing", o=tmp_path / "out", f=f) for a in MISSING_INPUT[command]]
    r = run_cli(*args)
    assert r.returncode == 2, r.stderr
    line = _one_line_error(r.stderr)
    assert "missing" in line or "file" in line, line
    t = run_cli(*args, "--traceback")
    assert t.returncode == 2
    assert "Traceback (most recent call last)" in t.stderr, t.stderr
    assert t.stderr.strip().splitlines()[-1] == line  # the same one line ends it


def test_findings_exit_1(torn):
    assert run_cli("dump", torn).returncode == 1
    r = run_cli("reindex-time", torn)
    assert r.returncode == 1, r.stderr


def _hold_lock(log_dir: Path) -> int:
    fd = os.open(log_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX)  # what a live broker holds (FileLock.tryLock)
    return fd


def test_refused_while_a_broker_holds_the_lock_exits_3(dirs, tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(dirs.small, logs)
    fd = _hold_lock(logs)
    try:
        r = run_cli("reindex-time", "--in-place", logs / "old-0")
        assert r.returncode == 3, r.stderr
        _one_line_error(r.stderr)
        r = run_cli("downconvert", "--to-magic", "1", dirs.small / "lat-0", logs / "converted")
        assert r.returncode == 3, r.stderr
        r = run_cli("upconvert", dirs.small / "v0-0", logs / "converted")
        assert r.returncode == 3, r.stderr
        assert "lock" in _one_line_error(r.stderr), r.stderr
        assert not (logs / "converted").exists()
        live = _restore_canary(dirs)
        fd2 = _hold_lock(live / "logs")
        try:
            r = run_cli("canary", "apply", live / "work")
            assert r.returncode == 3, r.stderr
            _one_line_error(r.stderr)
            r = run_cli("canary", "rollback", live / "work")
            assert r.returncode == 3, r.stderr
            assert "lock" in _one_line_error(r.stderr), r.stderr
        finally:
            os.close(fd2)
    finally:
        os.close(fd)


def test_sample_into_a_locked_log_dir_exits_3(tmp_path):
    d = tmp_path / "empty-log-dir"
    d.mkdir()
    fd = _hold_lock(d)
    try:
        r = run_cli("sample", d, "--topics", "t", "--records", "5")
        assert r.returncode == 3, r.stderr
        _one_line_error(r.stderr)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------- SIGINT and a closed pipe


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Inputs large enough that every command is still working when the signal arrives."""
    base = tmp_path_factory.mktemp("big")
    kib = IntRange(1024, 1024)
    generate_sample(base / "logs", SampleSpec((
        TopicSpec("big", partition_bytes=48 * MiB, value_bytes=kib, segment_bytes=64 * MiB),
        TopicSpec("bigv1", partition_bytes=24 * MiB, magics=(1,), value_bytes=kib, segment_bytes=64 * MiB),
        # many segments: per-segment work that lasts (a check of one 48 MiB segment's headers takes ~5 ms of CPU)
        TopicSpec("many", partition_bytes=32 * MiB, value_bytes=kib, segment_bytes=256 * 1024),
    ), profile="custom"), fsync=False)
    return base / "logs"


# Each case: the command line and the directory whose first ``.log`` the command opens as its work begins (it stops
# a millisecond of its own CPU later: tests/support/stop_at).
SIGINT_CASES: dict[str, Callable[[Path, Path], tuple[list[str | os.PathLike[str]], Path]]] = {
    "dump": lambda b, t: (["dump", "--deep", "--verify", b / "big-0"], b),
    "reindex-time": lambda b, t: (["reindex-time", "--verify", b], b),
    "downconvert": lambda b, t: (["downconvert", "--to-magic", "0", b, t / "out"], b),
    "upconvert": lambda b, t: (["upconvert", b / "bigv1-0", t / "out"], b),
    "fetch-sim": lambda b, t: (["fetch-sim", b, "--partition-max-bytes", "1GiB", "--fetch-max-bytes",
                                "1GiB", "--broker-fetch-max-bytes", "1GiB"], b),
    "canary plan": lambda b, t: (["canary", "plan", b], b),
    "canary run": lambda b, t: (["canary", "run", b, "-p", "bigv1-0", "-w", t / "work"], b),
    "spark-scan": lambda b, t: (["spark-scan", "--engine", "local-processes", "--jobs", "1", b], b),
    "sample": lambda b, t: (["sample", t / "out", "--topics", "t", "--partition-bytes", "512MiB"], t),
}


@pytest.mark.parametrize("command", sorted(SIGINT_CASES))
def test_sigint_exits_130_without_a_traceback(command, big, tmp_path):
    args, under = SIGINT_CASES[command](big, tmp_path)
    _interrupt(args, _stop_at_log(under))


@dataclass
class CanaryTemplates:
    live: Path  # where `canary run` ran (the manifest names this log dir): templates are restored here
    verified: Path  # logs + work after run and verify
    applied: Path  # ... and after apply


@pytest.fixture(scope="module")
def canary_big(tmp_path_factory: pytest.TempPathFactory) -> CanaryTemplates:
    """A v1 partition of 32 MiB in 128 segments: verify reads every record, apply and rollback swap segment by
    segment with an fsync per step, so each is still at work when SIGINT arrives."""
    base = tmp_path_factory.mktemp("canary-big")
    live = base / "live"
    generate_sample(live / "logs", SampleSpec((
        TopicSpec("canv1", partition_bytes=32 * MiB, magics=(1,), value_bytes=IntRange(1024, 1024),
                  segment_bytes=256 * 1024),), profile="custom"), fsync=False)
    for step in (["run", live / "logs", "-p", "canv1-0", "-w", live / "work"], ["verify", live / "work"]):
        r = run_cli("canary", *step, "-q")
        assert r.returncode == 0, r.stderr
    shutil.copytree(live, base / "verified", copy_function=shutil.copy2)
    r = run_cli("canary", "apply", live / "work", "-q")
    assert r.returncode == 0, r.stderr
    shutil.copytree(live, base / "applied", copy_function=shutil.copy2)
    return CanaryTemplates(live, base / "verified", base / "applied")


def _restore(t: CanaryTemplates, template: Path) -> Path:
    shutil.rmtree(t.live)
    shutil.copytree(template, t.live, copy_function=shutil.copy2)
    return t.live


@pytest.mark.slow
@pytest.mark.parametrize("op", ["verify", "apply", "rollback"])
def test_sigint_in_canary_verify_apply_and_rollback(op, canary_big):
    live = _restore(canary_big, canary_big.applied if op == "rollback" else canary_big.verified)
    work = live / "work"
    # verify: reading the canary's segments; apply and rollback: stopped after their second durable step, mid-swap
    stop = _stop_at_log(work) if op == "verify" else {crash.CRASH_ENV: "2", crash.SIGNAL_ENV: "STOP"}
    _interrupt(["canary", op, work], stop)
    if op != "verify":  # an interrupted swap is completed by the next run, as after a crash
        r = run_cli("canary", op, work, "--format", "json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.splitlines()[-1])["type"] == "summary"
        r = run_cli("canary", "verify", work, "--format", "json")
        assert r.returncode == 0, r.stderr
        states = {o["partition"]: o["state"] for o in map(json.loads, r.stdout.splitlines())
                  if o["type"] == "log-dir-partition"}
        assert states == {"canv1-0": "canary" if op == "apply" else "original"}, states


# A command whose Ctrl-C lands where CPython treats it specially, run the way tests and entry points run the
# tool (``python -m``): inside a string exec (dataclass and namedtuple creation, e.g. in a lazy import), which
# CPython marks as unhandled even when caught and then ends the process by SIGINT after ``sys.exit(130)``; and
# inside a weakref callback, where Python cannot raise and would print "Exception ignored" and run on.
_PROBE = """
import time
import weakref
import click
from kafkatool.commands import app

def string_exec():
    exec("raise KeyboardInterrupt", {})

def weakref_callback():
    class Thing:
        pass
    thing = Thing()
    ref = weakref.ref(thing, lambda r: (_ for _ in ()).throw(KeyboardInterrupt))
    del thing
    for _ in range(1000):  # 10 s of work: the interrupt must end it
        time.sleep(0.01)
    print("ran on", ref)

app._root.append(click.Command("probe", callback=WHERE))
app.main([])
"""


@pytest.mark.parametrize("where", ["string_exec", "weakref_callback"])
def test_sigint_where_python_cannot_raise_still_exits_130(where, tmp_path):
    (tmp_path / "kafkatool_probe.py").write_text(_PROBE.replace("WHERE", where))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), NO_COLOR="1")
    r = subprocess.run([sys.executable, "-m", "kafkatool_probe"], capture_output=True, text=True, env=env,
                       timeout=60, preexec_fn=interruptible)
    assert (r.returncode, r.stderr, r.stdout) == (130, "kafkatool: interrupted\n", "")


def _stop_at_log(under: Path) -> dict[str, str]:
    """The environment that stops the CLI a millisecond of its CPU after it opens its first ``.log`` under ``under``
    (tests/support/stop_at)."""
    return {"PYTHONPATH": os.pathsep.join([str(STOP_AT), str(ROOT)]), "KAFKATOOL_TEST_STOP_UNDER": str(under)}


def _interrupt(args: list[str | os.PathLike[str]], stop: dict[str, str]) -> None:
    """Start the CLI with the environment ``stop`` that makes it stop itself (SIGSTOP) inside its work, press Ctrl-C
    there: 130, no traceback. A test that looked for the work from outside raced with it and lost on a loaded
    machine (a check of 48 MiB lasts ~30 ms; the child finished first); the stop makes the moment certain. A child
    that never stops fails the test; one left behind by a failed assertion is killed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **stop}
    p = subprocess.Popen([sys.executable, "-m", "kafkatool", *map(str, args)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env, preexec_fn=interruptible)
    try:
        deadline = time.monotonic() + 120
        while Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            assert p.poll() is None, f"finished without reaching its work: {p.returncode} {p.stderr.read()}"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        p.send_signal(signal.SIGINT)  # pending while stopped: delivered the moment it continues
    except BaseException:
        p.kill()
        p.wait()
        raise
    finally:
        p.send_signal(signal.SIGCONT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "Traceback" not in err, err
    assert re.fullmatch(r"kafkatool( [a-z-]+)+: interrupted", err.strip().splitlines()[-1]), err


BROKEN_PIPE_CASES = {
    "dump": lambda b, d, t: ["dump", "--print-data", b / "big-0"],  # megabytes of lines: a real EPIPE
    "dump-json": lambda b, d, t: ["dump", "--deep", "--format", "json", b / "big-0"],
}
for _c in COMMANDS:
    if _c != "dump":
        BROKEN_PIPE_CASES[_c] = functools.partial(lambda c, b, d, t: argv(c, d, t), _c)


@pytest.mark.parametrize("case", sorted(BROKEN_PIPE_CASES))
def test_a_closed_pipe_is_not_an_error(case, big, dirs, tmp_path):
    args = BROKEN_PIPE_CASES[case](big, dirs, _fresh(tmp_path))
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    p = subprocess.Popen([sys.executable, "-m", "kafkatool", *map(str, args), *([] if "--format" in args else
                         ["--format", "json"])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()  # `| head -1`
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait(120)
    assert first, err
    assert rc == 0, err
    assert "Traceback" not in err and "Broken pipe" not in err and "BrokenPipe" not in err, err


# ---------------------------------------------------------------------------------- the budget's division


@pytest.mark.parametrize("command", ["fetch-sim", "downconvert", "upconvert"])
def test_chunk_size_is_checked_against_the_budget(command, dirs, tmp_path):
    """--chunk-size (Kafka's down-conversion read size: a semantic, kept) is part of --memory: the source
    chunk and its converted output are both held, so 100 MiB chunks need 2 x 100 MiB on top of the rest."""
    src = dirs.small / ("v0-0" if command == "upconvert" else "lat-0")
    args: list[str | os.PathLike[str]] = {
        "fetch-sim": ["fetch-sim", src], "downconvert": ["downconvert", "--to-magic", "1", src, tmp_path / "out"],
        "upconvert": ["upconvert", src, tmp_path / "out"]}[command]
    r = run_cli("--memory", "128MiB", *args, "--chunk-size", "100MiB")
    assert r.returncode == 2
    line = _one_line_error(r.stderr)
    assert "100MiB chunks" in line
    need = re.search(r"the minimum is ([\d.]+)MiB", line)
    assert need and float(need.group(1)) > 200, line
    r = run_cli("--memory", f"{int(float(need.group(1))) + 1}MiB", *args, "--chunk-size", "100MiB", "-q")
    assert r.returncode == 0, r.stderr


def test_jobs_divide_the_budget(dirs):
    """--jobs workers each get a share after the reserved overhead: more workers need a larger total."""
    r = run_cli("reindex-time", "-j", "4", "--memory", "100MiB", dirs.small)
    assert r.returncode == 2
    line = _one_line_error(r.stderr)
    m = re.search(r"too small for 4 workers .*the minimum is ([\d.]+)MiB", line)
    assert m, line
    assert run_cli("reindex-time", "-j", "1", "--memory", "100MiB", "-q", dirs.small).returncode == 0
    r = run_cli("reindex-time", "-j", "4", "--memory", f"{int(float(m.group(1))) + 1}MiB", "-q", dirs.small)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------------------------- units, times


# Every size and time option of every command, found through its kind marker (``_common``'s option factories
# set the metavar and the parser): a new option declared through them is covered here without a test change.
KIND_CASES: dict[str, list[tuple[str, object]]] = {
    SIZE: [("128KiB", 128 * 1024), ("1GiB", 1 << 30), ("4096", 4096), ("64MB", 64_000_000), ("1.5KiB", 1536)],
    TIME: [("2024-06-03T08:00:01.5Z", 1717401601500), ("1717401601500", 1717401601500),
           ("2024-06-03T10:00:01.500+02:00", 1717401601500), ("2024-06-03", 1717372800000)],
    SIZE_RANGE: [("1KiB", IntRange(1024, 1024)), ("100-4KiB", IntRange(100, 4096)), ("2048", IntRange(2048, 2048))],
    SIZE_LIST: [("16K,1MiB", (16384, 1 << 20)), ("4096", (4096,))],
    TOPIC_SIZES: [("1MiB", TopicSizes(((None, 1 << 20),))),
                  ("events=4MiB,2KiB", TopicSizes((("events", 4 << 20), (None, 2048))))],
}
GARBAGE = {SIZE: ("12XB", "not a size"), TIME: ("yesterday", "not a time"), SIZE_RANGE: ("1KiB-12XB", "not a size"),
           SIZE_LIST: ("16K,lots", "not a size"), TOPIC_SIZES: ("events=lots", "not a size")}
_SIZE_NAME = re.compile(r"(bytes|size|sizes|memory|limit|position)$")
_TIME_NAME = re.compile(r"-time$")


def every_option() -> list[tuple[tuple[str, ...], click_mod.Command, click_mod.Parameter]]:
    """(command path, command, option) for every option of every command, the root's included."""
    out = []

    def walk(cmd: click_mod.Command, path: tuple[str, ...]) -> None:
        out.extend((path, cmd, p) for p in cmd.params if p.param_type_name == "option")
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(get_app()), ())
    return out


def _kind(param: click_mod.Parameter) -> str | None:
    return param.metavar if param.metavar in OPTION_KINDS else None


# A time option that takes more than times: offsets-for-times --time is also earliest, latest or max-timestamp,
# parsed by the library (kafkatool.listoffsets.run.parse_time, tests/listoffsets).
NOT_PLAIN_TIMES = {(("offsets-for-times",), "--time")}

UNIT_OPTIONS = [(path, p.opts[0]) for path, _, p in every_option()
                if _kind(p) and (tuple(path), p.opts[0]) not in NOT_PLAIN_TIMES]


def test_every_size_and_time_option_is_marked():
    """An option whose name says it is a size or a time is declared through the shared factories (so it
    accepts units / ISO-8601, and the tests below cover it); every marked option has its kind's parser."""
    unmarked = []
    for path, _, p in every_option():
        longs = [o for o in p.opts if o.startswith("--")]
        if (tuple(path), longs[0] if longs else "") in NOT_PLAIN_TIMES:
            continue
        kind = _kind(p)
        if kind is not None:
            parser = getattr(p.type, "func", None)  # typer < 0.29: the parser wrapped in click's FuncParamType
            expected = parse_memory_value if p.name == "memory" else OPTION_KINDS[kind]
            assert parser is expected, (path, longs, parser)
        elif not p.is_flag and any(_SIZE_NAME.search(o) or _TIME_NAME.search(o) for o in longs):
            unmarked.append(f"{' '.join(path)} {longs[0]}")
    assert not unmarked, f"size/time options not declared through _common's factories: {unmarked}"
    assert len(UNIT_OPTIONS) >= 40  # all of them, not an empty selection
    assert {_kind(p) for _, _, p in every_option()} >= set(OPTION_KINDS)


def _required_args(cmd: click_mod.Command) -> list[str]:
    """Placeholder values for the command's required arguments and options (parsing only, nothing runs)."""
    args: list[str] = []
    for p in cmd.params:
        if not p.required:
            continue
        value = "1" if str(getattr(p.type, "name", "")).startswith("int") else "x"  # int, integer range
        args += [value] if p.param_type_name == "argument" else [p.opts[0], value]
    return args


@pytest.mark.parametrize("path,option", UNIT_OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_sizes_take_units_and_times_take_iso_8601_or_epoch_ms(path, option):
    cmd = typer.main.get_command(get_app())
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    param = next(p for p in cmd.params if option in p.opts)
    kind = _kind(param)
    assert kind is not None
    for text, expected in KIND_CASES[kind]:
        with cmd.make_context(" ".join(("kafkatool", *path)), [*_required_args(cmd), option, text]) as ctx:
            got = ctx.params[param.name]
        if param.multiple:  # a repeatable option: one value per occurrence
            (got,) = got
        if param.name == "memory":  # kept as written for the budget's messages, checked as a size
            got = parse_size(got)
        assert got == expected, (path, option, text, got)
        if isinstance(expected, tuple) and not isinstance(expected, TopicSizes):
            assert tuple(got) == expected


@pytest.mark.parametrize("path,option", UNIT_OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_a_bad_size_or_time_is_exit_2_in_one_line_naming_the_option(path, option, dirs):
    """Through the real entry point: rejected by the option parser, before anything is read or written."""
    cmd = typer.main.get_command(get_app())
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    param = next(p for p in cmd.params if option in p.opts)
    garbage, says = GARBAGE[_kind(param) or ""]
    # Real inputs: a usage error about the value must come before the command looks at any of them.
    args = [*path, *_required_args(cmd), option, garbage] if path else [option, garbage, "dump", dirs.small]
    r = run_cli(*args)
    assert r.returncode == 2, r.stderr
    line = _one_line_error(r.stderr)
    assert f"'{option}'" in line and says in line, line


def test_units_and_iso_times_take_effect_end_to_end(dirs, tmp_path):
    """The parsed values reach the work: the same run with units and with plain bytes (or epoch ms) gives the
    same output, and a different value a different one."""
    part = dirs.small / "old-0"

    def same(*variants: list[str | os.PathLike[str]]) -> str:
        runs = [run_cli(*v, "--format", "json") for v in variants]
        assert len({(r.returncode, r.stdout) for r in runs}) == 1, [r.stderr for r in runs]
        assert runs[0].returncode in (0, 1) and runs[0].stdout
        return runs[0].stdout

    cut = same(["dump", part, "--max-bytes", "1KiB"], ["dump", part, "--max-bytes", "1024"])
    assert run_cli("dump", part, "--max-bytes", "1KiB").returncode == 0  # a cut is not a finding
    assert cut != run_cli("dump", part, "--format", "json").stdout  # the cut took effect
    objs = [json.loads(x) for x in cut.splitlines()]
    # The cut is not damage: no finding about the batch it goes through (a torn tail would exit 1).
    assert "max-bytes" in {o["stopped"] for o in objs if o["type"] == "file_end" and o["kind"] == "log"}
    assert not [o for o in objs if o["type"] == "finding" and o["kind"] in ("torn-tail", "trailing-garbage")]
    same(["spark-scan", "--engine", "local-processes", "-j", "1", part, "--verify-index",
          "--index-interval-bytes", "4KiB", "--max-message-bytes", "1MiB"],
         ["spark-scan", "--engine", "local-processes", "-j", "1", part, "--verify-index",
          "--index-interval-bytes", "4096", "--max-message-bytes", "1048576"])
    r = run_cli("canary", "run", dirs.small, "-p", "v0-0", "-w", tmp_path / "w", "--index-interval-bytes", "2KiB",
                "--max-message-bytes", "1MiB", "-q")
    assert r.returncode == 0, r.stderr
    for option in ("--index-interval-bytes", "--max-message-bytes"):
        r = run_cli("spark-scan", "--engine", "local-processes", part, option, "12XB")
        assert r.returncode == 2 and option in _one_line_error(r.stderr)
    # 2024-06-03T08:00:00Z, the sample's first append, is 1717401600000 ms after the epoch.
    late = same(["dump", part, "--deep", "--from-time", "2024-06-03T08:00:01.5Z"],
                ["dump", part, "--deep", "--from-time", "1717401601500"],
                ["dump", part, "--deep", "--from-time", "2024-06-03T10:00:01.5+02:00"])
    assert late != run_cli("dump", part, "--deep", "--format", "json").stdout
    seg = sorted((dirs.small / "lat-0").glob("*.log"))[0]
    second = next(b for b in map(json.loads, run_cli("dump", seg, "--format", "json").stdout.splitlines())
                  if b["type"] == "batch" and b["position"] > 0)["position"]
    at = same(["fetch-sim", dirs.small / "lat-0", "--position", f"{second}B"],
              ["fetch-sim", dirs.small / "lat-0", "--position", str(second)])
    assert at != run_cli("fetch-sim", dirs.small / "lat-0", "--format", "json").stdout
    for name, extra in (("a", ["--start-time", "2024-01-01T00:00:00Z", "--value-bytes", "1KiB"]),
                        ("b", ["--start-time", "1704067200000", "--value-bytes", "1024"]),
                        ("c", ["--start-time", "2024-01-01T00:00:01Z", "--value-bytes", "1024"]),
                        ("d", ["--start-time", "1704067200000", "--value-bytes", "512-1KiB"])):
        r = run_cli("sample", tmp_path / name, "--topics", "t", "--records", "20", *extra, "-q")
        assert r.returncode == 0, r.stderr
    logs = {n: b"".join(p.read_bytes() for p in sorted((tmp_path / n / "t-0").glob("*.log"))) for n in "abcd"}
    assert logs["a"] == logs["b"] != logs["c"]
    assert len(logs["d"]) < len(logs["b"])  # values of 512..1024 bytes


def test_an_internal_error_exits_70_with_one_line(tmp_path):
    """A bug (an exception kafkatool does not expect) is EX_SOFTWARE (70), not a usage error: one line naming the
    exception, no traceback unless --traceback asks for it."""
    import subprocess
    import sys

    probe = ("import sys, kafkatool.info.run as r\n"
             "def boom(*a, **k): raise RuntimeError('the engine broke')\n"
             "r.info = boom\n"
             "from kafkatool.commands.app import main\n"
             "main(sys.argv[1:])\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for extra, traceback in (((), False), (("--traceback",), True)):
        p = subprocess.run([sys.executable, "-c", probe, "info", str(tmp_path), *extra], capture_output=True,
                           text=True, env=env, timeout=60)
        assert p.returncode == 70, p.stderr
        last = p.stderr.splitlines()[-1]
        assert last == ("kafkatool info: error: internal error: RuntimeError: the engine broke (rerun with "
                        "--traceback and report it)"), p.stderr
        assert ("Traceback" in p.stderr) is traceback, p.stderr
