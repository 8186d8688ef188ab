"""Shared fixtures: running the real CLI entry point, golden vectors."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors"


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str | os.PathLike[str], input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 300) -> CliResult:
    """Run ``python -m kafkatool`` (the console script's entry point) in a subprocess."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.setdefault("NO_COLOR", "1")
    full_env["COLUMNS"] = "200"
    if env:
        full_env.update(env)
    p = subprocess.run([sys.executable, "-m", "kafkatool", *map(str, args)], capture_output=True, text=True,
                       input=input, env=full_env, timeout=timeout)
    return CliResult(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def cli():
    return run_cli


def golden() -> dict[str, bytes]:
    out = {}
    for line in (VECTORS / "kafka-3.9.1-golden.txt").read_text().splitlines():
        if "=" in line:
            name, hexdata = line.split("=", 1)
            try:
                out[name] = bytes.fromhex(hexdata)
            except ValueError:
                continue
    return out


@pytest.fixture(scope="session")
def java_lock(tmp_path_factory: pytest.TempPathFactory):
    """A JVM holding a log dir's ``.lock`` as a Kafka broker does: ``with java_lock.holding(log_dir): ...``."""
    from tests.broker_lock import compile_holder

    return compile_holder(tmp_path_factory.mktemp("holdlock"))


# kafka-ref (Apache Kafka's own code) for every test directory: the session fixture lives in tests/kafkaref.py.
from tests.kafkaref import kafka_ref  # noqa: E402, F401


def pty_session(args: list[str | os.PathLike[str]], env: dict[str, str] | None = None, *, columns: int = 120,
                timeout: float = 120, stderr_only: bool = False) -> tuple[int, bytes, str]:
    """Run the CLI with stderr (and stdout, unless ``stderr_only``: then a pipe) on a terminal, NO_COLOR unset
    unless ``env`` sets it, so colour and progress bars show; returns (exit code, the terminal's bytes, what
    went to the stdout pipe)."""
    leader, follower = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full_env.update(PYTHONPATH=str(ROOT), COLUMNS=str(columns), TERM="xterm-256color", **(env or {}))
    p = subprocess.Popen([sys.executable, "-m", "kafkatool", *map(str, args)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE if stderr_only else follower, stderr=follower, env=full_env)
    os.close(follower)
    chunks = []
    try:
        while select.select([leader], [], [], timeout)[0]:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
    out = p.stdout.read().decode() if p.stdout is not None else ""
    return p.wait(timeout), b"".join(chunks), out


def run_on_pty(args: list[str | os.PathLike[str]], env: dict[str, str] | None = None, *, columns: int = 120,
               timeout: float = 120) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on a terminal (see :func:`pty_session`); returns (exit code,
    everything it printed)."""
    rc, tty, _ = pty_session(args, env, columns=columns, timeout=timeout)
    return rc, tty.decode("utf-8", "replace")
