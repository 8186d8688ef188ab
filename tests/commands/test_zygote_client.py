"""tests/support/zygote_client.py, the ``kafkatool`` of the docs' and --help's examples: in a shell script it
behaves as ``python -m kafkatool`` would (exit code, stdin, stdout and stderr as the script wired them, working
directory, umask, environment, death by a signal), forked from the fork server (tests/support/zygote.py) where
the environment allows and a new interpreter where it does not."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kafkatool
from tests.support import zygote
from tests.support.paths import ROOT


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", PYTHONUNBUFFERED="1", **extra)


def _bash(script: str, cwd: Path, kafkatool: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """``script`` in bash, its ``kafkatool`` the client (or the command line ``kafkatool``)."""
    kafkatool = kafkatool or zygote.client()
    if kafkatool is None:
        pytest.skip("KAFKATOOL_TEST_CLI=exec: no fork server")
    return subprocess.run(["bash", "-c", f'kafkatool() {{ {shlex.join(kafkatool)} "$@"; }}\n{script}'], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=120)


def _server_children() -> list[str]:
    pid = zygote.server().proc.pid
    return [c for t in os.listdir(f"/proc/{pid}/task") for c in Path(f"/proc/{pid}/task/{t}/children").read_text()
            .split()]


def test_the_socket_path_fits_in_sun_path() -> None:
    if zygote.exec_only():
        pytest.skip("KAFKATOOL_TEST_CLI=exec: no fork server")
    assert len(os.fsencode(zygote.server().socket)) < 108


def test_a_client_run_is_python_m_kafkatool(tmp_path: Path) -> None:
    script = ('kafkatool --version; echo "rc=$?"\n'
              'kafkatool dump one.log 2>&1; echo "rc=$?"\n'  # cwd-relative, stderr into the pipe with stdout
              'KAFKATOOL_MEMORY=1KiB kafkatool dump one.log; echo "rc=$?"\n'  # the run's environment
              'echo hi | kafkatool dump - --count 2>&1 >/dev/null | head -c 40; echo " ${PIPESTATUS[*]}"\n'
              "umask 077; kafkatool sample s --topics t --records 10 >/dev/null 2>&1; stat -c %a s/t-0/*.log\n")
    runs = []
    for way, cli in (("client", None), ("python -m kafkatool", [sys.executable, "-m", "kafkatool"])):
        (tmp_path / way).mkdir()
        (tmp_path / way / "one.log").write_bytes(b"x")
        runs.append(_bash(script, tmp_path / way, cli))
    forked, fresh = runs
    assert (forked.stdout, forked.stderr) == (fresh.stdout, fresh.stderr)
    lines = forked.stdout.splitlines()
    assert lines[:2] == [f"kafkatool {kafkatool.__version__}", "rc=0"] and lines[-1] == "600", lines
    assert "rc=1" in lines and "rc=2" in lines and "1KiB is too small" in forked.stderr, forked


def test_where_only_a_new_interpreter_will_do_the_client_becomes_one(tmp_path: Path) -> None:
    # KAFKATOOL_PURE (read when the compiled paths load), a closed stdin (a new interpreter has no sys.stdin)
    r = _bash('KAFKATOOL_PURE=1 kafkatool --version; echo "rc=$?"; kafkatool --version <&-; echo "rc=$?"', tmp_path)
    assert r.stdout.splitlines() == [f"kafkatool {kafkatool.__version__}", "rc=0"] * 2, (r.stdout, r.stderr)


def test_a_signal_to_the_client_ends_the_run(tmp_path: Path) -> None:
    """SIGTERM is passed on to the run, which dies of it; SIGKILL kills the client, and the server the run."""
    client = shlex.join(zygote.client() or [sys.executable, "-m", "kafkatool"])
    for sig, rc in (("TERM", 143), ("KILL", 137)):
        # the run waits on its stdin, a FIFO the shell holds open
        r = _bash(f'rm -f in; mkfifo in; exec 3<>in; {client} dump - --count <&3 & c=$!; sleep 0.5; kill -{sig} $c; '
                  'wait $c; echo "rc=$?"', tmp_path)
        assert f"rc={rc}" in r.stdout.splitlines(), (sig, r.stdout, r.stderr)
    deadline = time.monotonic() + 10
    while _server_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _server_children() == []
