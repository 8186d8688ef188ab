"""Running the CLI as the tests need it: in this process by default, as a real ``python -m kafkatool`` process
where a process is the point, or on a terminal (a pty).

:func:`run_cli` calls the console script's entry point (``kafkatool.commands.app.main``) in this process, the
way Typer's ``CliRunner`` does: its own stdout and stderr (pipes, as far as the command can tell: no terminal,
no file descriptor), the process environment a run would get, a working directory, and the exit code from its
``SystemExit``; every piece of global state a fresh process starts without (the active memory budget, the root
``--memory``, signal handlers, warning filters) is set as a fresh process has it and put back afterwards. A
new interpreter costs 0.4 s per call; this costs what the command costs.

A real process is used (``subprocess=True``, or automatically, see :func:`process_reason`) where the
difference between a process and a call shows: environment variables the interpreter or kafkatool reads once
at start-up (``PYTHON*``, ``KAFKATOOL_PURE``, the crash points), a Spark run (its JVM gateway and the
environment it sets belong to a process), and a call while this process holds a POSIX lock, as a test playing
the broker holds a log dir's ``.lock`` (such locks are per process: kafkatool's probe from this process would
find the file free, and closing the probe would drop the lock). Signals, terminals and kill tests start their
own processes (:func:`pty_session`, :func:`run_on_pty`, the kill tests' helpers).
"""

from __future__ import annotations

import io
import os
import pty
import select
import signal
import subprocess as _subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.support.paths import ROOT


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


# Read once per process, at start-up or when kafkatool is first imported: a run that sets one needs its own.
_IMPORT_TIME_ENV = frozenset({"KAFKATOOL_PURE", "KAFKATOOL_CRASH_AFTER", "KAFKATOOL_CRASH_SIGNAL",
                              "KAFKATOOL_CRASH_COUNT", "KAFKATOOL_CRASH_PID"})


def run_cli(*args: str | os.PathLike[str], input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 300, cwd: str | os.PathLike[str] | None = None,
            subprocess: bool | None = None) -> CliResult:
    """Run ``kafkatool ARGS`` as the console script does, with stdout and stderr captured as text and ``env``
    over this process's environment (``NO_COLOR=1`` unless ``env`` says otherwise, ``COLUMNS=200``).

    ``subprocess``: True for a real ``python -m kafkatool`` process, False to insist on this process, None
    (the default) to let :func:`process_reason` decide. ``timeout`` bounds a real process only."""
    argv = [os.fspath(a) for a in args]
    full_env = _cli_env(env)
    if subprocess is None:
        subprocess = process_reason(argv, env) is not None
    if subprocess:
        p = _subprocess.run([sys.executable, "-m", "kafkatool", *argv], capture_output=True, text=True,
                            input=input, env=full_env, timeout=timeout, cwd=cwd)
        return CliResult(p.returncode, p.stdout, p.stderr)
    return _run_in_process(argv, input, full_env, cwd)


def process_reason(args: Sequence[str | os.PathLike[str]], env: Mapping[str, str] | None = None) -> str | None:
    """Why ``kafkatool ARGS`` with ``env`` must run as a real process (None: it can run in this one)."""
    for key in env or {}:
        if key.startswith("PYTHON") or key in _IMPORT_TIME_ENV:
            return f"{key} is read when the interpreter or kafkatool starts"
    argv = [os.fspath(a) for a in args]
    if _runs_spark(argv):
        return "Spark's JVM gateway, and the environment a session sets, belong to a process"
    if _holds_posix_locks():
        return "this process holds a POSIX lock (a log dir's .lock?): a probe from it would see none, and drop it"
    return None


def _holds_posix_locks() -> bool:
    """Whether this process holds a POSIX record lock (``fcntl.lockf``, as Kafka's ``tryLock()`` and kafkatool
    take a log dir's ``.lock``): such locks belong to the process, so kafkatool probing that file from this
    process would find it free, and closing its probe would release the lock."""
    from kafkatool.log import lock

    if lock._HELD:
        return True
    try:
        with open("/proc/locks") as f:
            table = f.read()
    except OSError:
        return False
    pid = str(os.getpid())
    return any(fields[1] == "POSIX" and fields[4] == pid
               for fields in (line.split() for line in table.splitlines()) if len(fields) > 4)


def _runs_spark(argv: list[str]) -> bool:
    """``spark-scan`` with its default engine (Spark), unless it only prints help."""
    if "spark-scan" not in argv or "--help" in argv or "-h" in argv:
        return False
    engine = "spark"
    for i, a in enumerate(argv):
        if a == "--engine" and i + 1 < len(argv):
            engine = argv[i + 1]
        elif a.startswith("--engine="):
            engine = a.partition("=")[2]
    return engine == "spark"


def _cli_env(env: Mapping[str, str] | None) -> dict[str, str]:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.setdefault("NO_COLOR", "1")
    full_env["COLUMNS"] = "200"
    full_env.update(env or {})
    return full_env


# A fresh interpreter's warning filters (no -W, no PYTHONWARNINGS): what a run shows on its stderr.
_PROCESS_WARNING_FILTERS: list[tuple[str, type[Warning], str]] = [
    ("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""), ("ignore", ResourceWarning, ""),
]
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP, signal.SIGQUIT)


def _run_in_process(argv: list[str], input: str | None, env: dict[str, str], cwd: str | os.PathLike[str] | None,
                    ) -> CliResult:
    from kafkatool.commands.app import main  # imported before the environment is set: it sets a default

    out = _Pipe(errors=getattr(sys.__stdout__, "errors", None) or "strict")
    err = _Pipe(errors="backslashreplace")  # Python's stderr, whatever the locale
    rc: int
    with _process_state(env, cwd), _streams(input, out, err), _process_warnings(err):
        try:
            main(argv)
            rc = 0
        except SystemExit as e:
            rc = _exit_status(e.code, err)
    return CliResult(rc, out.text(), err.text())


def _exit_status(code: Any, err: io.TextIOBase) -> int:
    """What the interpreter makes of ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    err.write(f"{code}\n")
    return 1


class _Pipe(io.TextIOWrapper):
    """A captured stream as a pipe is to the command: UTF-8 text with a byte buffer, not a terminal, no file
    descriptor."""

    def __init__(self, errors: str) -> None:
        self._bytes = io.BytesIO()
        super().__init__(self._bytes, encoding="utf-8", errors=errors, write_through=True)

    def text(self) -> str:
        """What ``subprocess.run(text=True)`` reads from the pipe: UTF-8 with universal newlines."""
        self.flush()
        data = self._bytes.getvalue()
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()

    def close(self) -> None:  # a command closing its stdout must not lose what it wrote
        self.flush()


@contextmanager
def _process_state(env: dict[str, str], cwd: str | os.PathLike[str] | None) -> Iterator[None]:
    """The environment, working directory and global state a fresh ``kafkatool`` process starts with; this
    process's own afterwards."""
    from kafkatool.commands import options
    from kafkatool.log import lock
    from kafkatool.util import budget

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_signals = {s: signal.getsignal(s) for s in _SIGNALS}
    saved_budget = budget.activate(None)
    saved_fallback, budget._fallback = budget._fallback, None  # the default plan depends on KAFKATOOL_MEMORY
    saved_root_memory = options._root_memory
    options.set_root_memory(None)
    _set_environ(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        _set_environ(saved_env)
        for s, handler in saved_signals.items():
            if handler is not None and signal.getsignal(s) != handler:
                signal.signal(s, handler)
        budget.activate(saved_budget)
        budget._fallback = saved_fallback
        options.set_root_memory(saved_root_memory)
    assert not lock._HELD, f"the command left log dir locks held: {lock._HELD}"


def _set_environ(env: Mapping[str, str]) -> None:
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


@contextmanager
def _streams(input: str | None, out: _Pipe, err: _Pipe) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(input or ""), out, err
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextmanager
def _process_warnings(err: io.TextIOBase) -> Iterator[None]:
    """Warnings as a fresh process shows them: the default filters, each once, on the command's stderr."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        err.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in _PROCESS_WARNING_FILTERS:
            warnings.filterwarnings(action, category=category, module=module, append=True)  # type: ignore[arg-type]
        warnings.showwarning = show
        yield


def pty_session(args: list[str | os.PathLike[str]], env: dict[str, str] | None = None, *, columns: int = 120,
                timeout: float = 120, stderr_only: bool = False) -> tuple[int, bytes, str]:
    """Run the CLI with stderr (and stdout, unless ``stderr_only``: then a pipe) on a terminal, NO_COLOR unset
    unless ``env`` sets it, so colour and progress bars show; returns (exit code, the terminal's bytes, what
    went to the stdout pipe)."""
    leader, follower = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full_env.update(PYTHONPATH=str(ROOT), COLUMNS=str(columns), TERM="xterm-256color", **(env or {}))
    p = _subprocess.Popen([sys.executable, "-m", "kafkatool", *map(str, args)], stdin=_subprocess.DEVNULL,
                          stdout=_subprocess.PIPE if stderr_only else follower, stderr=follower, env=full_env)
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
