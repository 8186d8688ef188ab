"""tests/support/zygote.py, the fork server of the hostile runs: a forked run behaves as ``python -m kafkatool``
would (exit code, streams, working directory, environment, a timeout killing its group), and the runs it cannot
stand for still get a new interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kafkatool
from tests.support import zygote
from tests.support.paths import ROOT

PY = [sys.executable, "-m", "kafkatool"]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    env.update(extra)
    return env


def test_a_forked_run_is_a_run_of_its_own(tmp_path: Path) -> None:
    assert zygote.usable(PY, _env())
    r = zygote.run([*PY, "--version"], env=_env())
    assert (r.returncode, r.stdout.strip()) == (0, f"kafkatool {kafkatool.__version__}")
    # relative paths are the run's cwd's, and the exit code and stderr are the command's
    r = zygote.run([*PY, "dump", "missing.log"], env=_env(), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("kafkatool dump: error: missing.log: no such file"), r.stderr
    assert r.stdout == ""
    # the environment is the run's own: KAFKATOOL_MEMORY, read when the run sets its budget
    (tmp_path / "one.log").write_bytes(b"x")
    r = zygote.run([*PY, "dump", "one.log"], env=_env(KAFKATOOL_MEMORY="1KiB"), cwd=tmp_path)
    assert r.returncode == 2 and "1KiB is too small" in r.stderr, r.stderr
    r = zygote.run([*PY, "dump", "one.log"], env=_env(), cwd=tmp_path)
    assert r.returncode == 1 and "torn-tail" in r.stderr, r.stderr


def test_a_timeout_kills_the_run_and_the_server_serves_the_next(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        zygote.run([*PY, "sample", tmp_path / "logs"], env=_env(), timeout=0.05)
    r = zygote.run([*PY, "--version"], env=_env())
    assert r.returncode == 0


def test_what_only_a_new_interpreter_gives_is_not_forked() -> None:
    assert not zygote.usable(PY, _env(KAFKATOOL_PURE="1"))
    assert not zygote.usable(PY, _env(KAFKATOOL_CRASH_AFTER="3"))
    assert not zygote.usable(PY, _env(PYTHONHASHSEED="7"))
    assert not zygote.usable(PY, _env(PYTHONPATH="/elsewhere"))
    assert not zygote.usable([sys.executable, "-c", "pass"], _env())
    r = zygote.run([*PY, "--version"], env=_env(KAFKATOOL_PURE="1"))  # a new interpreter, as subprocess.run
    assert r.returncode == 0
