"""Running the real CLI entry point (``python -m kafkatool``) in a subprocess, or on a terminal (a pty)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from dataclasses import dataclass

from tests.support.paths import ROOT


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
