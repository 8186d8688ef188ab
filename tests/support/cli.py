"""Running the CLI as the tests need it: in this process by default, in a process of its own where a process is
the point, or on a terminal (a pty).

:func:`run_cli` calls the console script's entry point (``kafkatool.commands.app.main``) in this process, the
way Typer's ``CliRunner`` does: its own stdout and stderr (pipes, as far as the command can tell: no terminal,
no file descriptor), the process environment a run would get, a working directory, and the exit code from its
``SystemExit``; every piece of global state a fresh process starts without (the active memory budget, the root
``--memory``, signal handlers, warning filters) is set as a fresh process has it and put back afterwards. A
new interpreter costs 0.4 s per call; this costs what the command costs.

:func:`run_mode` picks a process of its own where the difference shows:

* a child forked from this process (kafkatool already imported, ~10 ms) for kill tests (``KAFKATOOL_CRASH_*``:
  the run SIGKILLs or SIGSTOPs itself; the child re-reads them as their import in a fresh process does) and
  for a call while this process holds a POSIX lock, as a test playing the broker holds a log dir's ``.lock``
  (such locks are per process: a probe from this process would find the file free, and closing it would
  drop the lock; a child holds none of them);
* a new interpreter (``python -m kafkatool``) for what only a fresh start gives: ``PYTHON*`` variables and
  ``KAFKATOOL_PURE`` (read at start-up and when the compiled paths load), and a Spark run (its JVM gateway
  and the environment a session sets belong to one process).

``subprocess=True`` asks for a process of its own where the rule cannot see why; ``KAFKATOOL_TEST_CLI=exec``
runs every call as a new interpreter (the suite as it ran before, to check that the in-process runs hide
nothing). Signals and terminals start their own processes (:func:`pty_session`, :func:`run_on_pty`, the SIGINT
and broken-pipe tests).
"""

from __future__ import annotations

import importlib
import io
import os
import pty
import select
import signal
import subprocess as _subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from tests.support.paths import ROOT


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


# Read when the interpreter starts or kafkatool's compiled paths load: a run that sets one needs a new interpreter.
_INTERPRETER_ENV = frozenset({"KAFKATOOL_PURE"})
# Read when kafkatool.util.crash is imported: a forked child re-reads them (kill tests: the child is SIGKILLed).
_CRASH_ENV = frozenset({"KAFKATOOL_CRASH_AFTER", "KAFKATOOL_CRASH_SIGNAL", "KAFKATOOL_CRASH_COUNT",
                       "KAFKATOOL_CRASH_PID"})
# KAFKATOOL_TEST_CLI=exec runs every run_cli call as its own `python -m kafkatool` (the suite as it was before
# the in-process runs: a check that they hide nothing); =fork forks every one that needs no new interpreter.
_FORCED = os.environ.get("KAFKATOOL_TEST_CLI", "").strip().lower()

Mode = Literal["here", "fork", "exec"]


def run_cli(*args: str | os.PathLike[str], input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 300, cwd: str | os.PathLike[str] | None = None,
            subprocess: bool | None = None) -> CliResult:
    """Run ``kafkatool ARGS`` as the console script does, with stdout and stderr captured as text and ``env``
    over this process's environment (``NO_COLOR=1`` unless ``env`` says otherwise, ``COLUMNS=200``).

    ``subprocess``: True for a real process of its own, False to insist on this process, None (the default) to
    let :func:`run_mode` decide. ``timeout`` bounds a real process only."""
    argv = [os.fspath(a) for a in args]
    full_env = _cli_env(env)
    mode = run_mode(argv, env)
    if subprocess is True and mode == "here":
        mode = "fork"
    elif subprocess is False:
        mode = "here"
    if mode == "exec":
        p = _subprocess.run([sys.executable, "-m", "kafkatool", *argv], capture_output=True, text=True,
                            input=input, env=full_env, timeout=timeout, cwd=cwd)
        return CliResult(p.returncode, p.stdout, p.stderr)
    if mode == "fork":
        return _run_forked(argv, input, full_env, cwd, timeout)
    return _run_in_process(argv, input, full_env, cwd)


def run_mode(args: Sequence[str | os.PathLike[str]], env: Mapping[str, str] | None = None) -> Mode:
    """How ``kafkatool ARGS`` with ``env`` runs: ``here`` (this process), ``fork`` (a child forked from this
    process, kafkatool already imported: a process of its own for kill tests and locks) or ``exec`` (a new
    interpreter, for what only a fresh start gives)."""
    if _FORCED == "exec":
        return "exec"
    keys = set(env or {})
    if any(k.startswith("PYTHON") for k in keys) or keys & _INTERPRETER_ENV:
        return "exec"  # read by the interpreter at start-up, or when kafkatool._accel loads the extension
    if _runs_spark([os.fspath(a) for a in args]):
        return "exec"  # Spark's JVM gateway and the environment a session sets belong to one fresh process
    if _FORCED == "fork" or keys & _CRASH_ENV:
        return "fork"  # the run SIGKILLs (or SIGSTOPs) itself
    if _holds_posix_locks():
        return "fork"  # a child holds none of this process's record locks: it probes them as a broker would
    return "here"


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
    full_env.pop("KAFKATOOL_CRASH_PID", None)  # a run owns its crash points (kafkatool.util.crash) unless told
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
_STDOUT_ERRORS = getattr(sys.__stdout__, "errors", None) or "strict"  # the locale's, as a new interpreter's
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP, signal.SIGQUIT)


def _run_in_process(argv: list[str], input: str | None, env: dict[str, str], cwd: str | os.PathLike[str] | None,
                    ) -> CliResult:
    from kafkatool.commands.app import main  # imported before the environment is set: it sets a default

    out = _Pipe(errors=_STDOUT_ERRORS)
    err = _Pipe(errors="backslashreplace")  # Python's stderr, whatever the locale
    rc: int
    with _process_state(env, cwd), _streams(input, out, err), _process_warnings(err):
        try:
            main(argv)
            rc = 0
        except SystemExit as e:
            rc = _exit_status(e.code, err)
    return CliResult(rc, out.text(), err.text())


def _run_forked(argv: list[str], input: str | None, env: dict[str, str], cwd: str | os.PathLike[str] | None,
                timeout: float) -> CliResult:
    """The command in a child forked from this process: a process of its own (its pid, its record locks,
    SIGKILLed alone), without a new interpreter's start-up and imports. The child gets its own pipes as fds 0-2,
    ``env`` as its environment, ``cwd``, kafkatool's state as a fresh process has it (the crash points re-read
    from ``env`` as their import reads them, no atexit handler but the ones it registers) and ends in
    ``os._exit``: it never returns into the test."""
    from kafkatool.commands import app
    from kafkatool.commands.registry import BY_NAME

    words = app.command_words(argv)
    if words:  # the command's module imported here once, not in every child (a fresh process's import)
        app._register(BY_NAME[words[0]].module)
    main = app.main
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # nothing buffered here may be written twice
    pid = os.fork()
    if pid == 0:  # the child
        rc = 1
        try:
            for fd, target in ((in_r, 0), (out_w, 1), (err_w, 2)):
                os.dup2(fd, target)
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            rc = _forked_child(argv, env, cwd, main)
        except BaseException:
            try:
                traceback.print_exc()
                sys.stderr.flush()
            except BaseException:
                pass
        finally:
            os._exit(rc)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    try:
        if input:
            os.write(in_w, input.encode())
    except BrokenPipeError:
        pass
    finally:
        os.close(in_w)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    reading = [out_r, err_r]
    deadline = time.monotonic() + timeout
    while reading:
        ready, _, _ = select.select(reading, [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            for fd in reading:
                os.close(fd)
            raise _subprocess.TimeoutExpired(["kafkatool", *argv], timeout)
        for fd in ready:
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                os.close(fd)
                reading.remove(fd)
    _, status = os.waitpid(pid, 0)
    return CliResult(os.waitstatus_to_exitcode(status), _decode(b"".join(chunks[out_r])),
                     _decode(b"".join(chunks[err_r])))


def _forked_child(argv: list[str], env: dict[str, str], cwd: str | os.PathLike[str] | None,
                  main: Callable[[list[str]], None]) -> int:
    """In the forked child: become what a fresh ``python -m kafkatool`` is once it has imported kafkatool, run
    the command, return its exit status."""
    import atexit

    from kafkatool.commands import options
    from kafkatool.log import lock
    from kafkatool.util import budget, crash

    atexit._clear()  # the test process's handlers are not this process's
    _set_environ(env)
    if cwd is not None:
        os.chdir(cwd)
    for s in _SIGNALS:
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else
                      signal.SIG_IGN if s == signal.SIGPIPE else signal.SIG_DFL)
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))  # as a new interpreter with this environment reads it
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0 if unbuffered else -1, closefd=False),
                                  encoding="utf-8", errors=_STDOUT_ERRORS, write_through=unbuffered)
    sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0 if unbuffered else -1, closefd=False),
                                  encoding="utf-8", errors="backslashreplace", line_buffering=True,
                                  write_through=unbuffered)
    importlib.reload(crash)  # KAFKATOOL_CRASH_* as its import in a fresh process reads them, for this pid
    budget.activate(None)
    budget._fallback = None
    options.set_root_memory(None)
    lock._HELD.clear()  # a child holds none of its parent's record locks
    with _process_warnings(sys.stderr):
        try:
            main(argv)
            rc = 0
        except SystemExit as e:
            rc = _exit_status(e.code, sys.stderr)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    return rc


def _decode(data: bytes) -> str:
    """What ``subprocess.run(text=True)`` reads from a pipe: UTF-8 with universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()


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
        return _decode(self._bytes.getvalue())

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
    from tests.support import zygote

    leader, follower = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full_env.update(PYTHONPATH=str(ROOT), COLUMNS=str(columns), TERM="xterm-256color", **(env or {}))
    # the fork server's client (it hands the server this terminal; ~7 ms of CPU against a new interpreter's ~150)
    kafkatool = zygote.client() or [sys.executable, "-m", "kafkatool"]
    p = _subprocess.Popen([*kafkatool, *map(str, args)], stdin=_subprocess.DEVNULL,
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


def interruptible() -> None:
    """``preexec_fn`` for a child that a test interrupts: SIGINT back to its default, so that Python installs its
    KeyboardInterrupt handler. A test run started in the background of a shell (``cmd &``, ``nohup``) inherits
    SIGINT ignored, and an ignored SIGINT is kept ignored across exec: the child would finish its work instead."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
