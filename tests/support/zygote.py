"""A fork server for the runs that need a process of their own but not a new interpreter: the hostile sweep's
~500 runs (tests/hostile/test_sweep.py), each a process with its memory sampled.

A new interpreter costs ~0.13-0.2 CPU-s before a command does anything (start-up and kafkatool's imports), which
is most of a sweep run on a small input. The server is one ``python`` that imports kafkatool's CLI and every
command module once, then forks a child per run; the child is a process of its own as a new one would be: its
own session (``setsid``: the caller can kill its whole group), working directory, environment, ``sys.argv``,
stdin from ``/dev/null``, stdout and stderr into the caller's files, and it ends as an interpreter does (threads
joined, ``atexit`` handlers run, streams flushed) with the exit code of ``python -m kafkatool``. What the server
imported is shared copy-on-write and counted in the child's resident memory, so a memory bound measured on the
child is, if anything, stricter than on a new interpreter (~16 MiB more anonymous memory: numpy among them).

Not for what only a fresh interpreter gives (:func:`usable` says which environments): ``PYTHON*`` variables other
than the server's own,
``KAFKATOOL_PURE`` (read when the compiled paths load) and the crash points (``KAFKATOOL_CRASH_*``, read at
import). The server reads requests as JSON lines on its stdin and answers ``{"pid": N}`` when a child starts and
``{"rc": N}`` when it ends (negative: killed by that signal, as ``subprocess`` says).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.paths import ROOT

_FRESH_ONLY = ("KAFKATOOL_PURE", "KAFKATOOL_CRASH_")


def usable(argv: Sequence[str], env: Mapping[str, str] | None) -> bool:
    """Whether ``argv`` (``python -m kafkatool ...``) with ``env`` can run forked from the server."""
    if list(argv[:3]) != [sys.executable, "-m", "kafkatool"]:
        return False
    if os.environ.get("KAFKATOOL_TEST_CLI", "").strip().lower() == "exec":
        return False  # the suite as it ran before: every run a new interpreter
    env = env if env is not None else os.environ
    if any(k.startswith(_FRESH_ONLY) for k in env):
        return False
    # the interpreter's own variables must be those the server started with (this process's, PYTHONPATH the root)
    served = _server_env()
    return all(env.get(k) == served.get(k) for k in {*env, *served} if k.startswith("PYTHON"))


def _server_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for k in list(env):
        if k.startswith(_FRESH_ONLY):
            del env[k]
    return env


class Server:
    """One fork server (per test process: each xdist worker has its own), started on first use."""

    def __init__(self) -> None:
        env = _server_env()
        self.proc = subprocess.Popen([sys.executable, "-c", "from tests.support.zygote import serve; serve()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=ROOT, start_new_session=True)
        self.lock = threading.Lock()
        ready = self._read()
        if ready.get("ready") is not True:
            raise RuntimeError(f"the fork server did not start: {ready}")

    def _read(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server ended (exit {self.proc.poll()})")
        return dict(json.loads(line))

    def start(self, args: Sequence[str], env: Mapping[str, str], cwd: str | os.PathLike[str] | None,
              stdout: Path, stderr: Path) -> int:
        """Start ``kafkatool ARGS`` in a child; its pid (call :meth:`wait` next, before another start)."""
        self.lock.acquire()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"args": list(args), "env": dict(env),
                                              "cwd": os.fspath(cwd or os.getcwd()), "stdout": str(stdout),
                                              "stderr": str(stderr)}) + "\n")
            self.proc.stdin.flush()
            return int(str(self._read()["pid"]))
        except BaseException:
            self.lock.release()
            raise

    def wait(self) -> int:
        try:
            return int(str(self._read()["rc"]))
        finally:
            self.lock.release()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_server: Server | None = None


def server() -> Server:
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = Server()
        atexit.register(_server.close)
    return _server


def serve() -> None:
    """The server's loop (``python -c``): import the CLI once, then fork a child per request line."""
    import importlib

    import kafkatool.commands.app  # noqa: F401
    from kafkatool.commands.registry import COMMANDS

    for c in COMMANDS:
        importlib.import_module(f"kafkatool.commands.{c.module}")
    import kafkatool

    main_path = os.path.join(os.path.dirname(os.path.abspath(kafkatool.__file__)), "__main__.py")
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req, main_path)  # never returns
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        out.write(json.dumps({"rc": rc}) + "\n")
        out.flush()


def _child(req: dict[str, object], main_path: str) -> None:
    code = 1
    try:
        os.setsid()
        fd_in = os.open(os.devnull, os.O_RDONLY)
        fd_out = os.open(str(req["stdout"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        fd_err = os.open(str(req["stderr"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((fd_in, 0), (fd_out, 1), (fd_err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(str(req["cwd"]))
        env = req["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        args = req["args"]
        assert isinstance(args, list)
        sys.argv = [main_path, *map(str, args)]
        from kafkatool.commands.app import main

        try:
            main()
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        # as an interpreter ends: non-daemon threads joined, atexit handlers run, streams flushed
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 120
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF)


class Child:
    """A run started by :func:`spawn`; :meth:`wait` before the next."""

    def __init__(self, pid: int, srv: Server, timeout: float) -> None:
        self.pid = pid
        self._server = srv
        self._killed = threading.Event()
        self._timer = threading.Timer(timeout, self._kill)
        self._timer.start()

    def _kill(self) -> None:
        self._killed.set()
        try:
            os.killpg(self.pid, 9)
        except ProcessLookupError:
            pass

    def wait(self) -> int | None:
        """The exit code (negative: a signal), or None when the timeout killed the run's group."""
        try:
            rc = self._server.wait()
        finally:
            self._timer.cancel()
        return None if self._killed.is_set() else rc


def spawn(argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None, stdout: Path,
          stderr: Path, timeout: float) -> Child:
    """Start ``argv`` (``python -m kafkatool ...``, :func:`usable`) forked from the server, its stdout and stderr
    into those files, its group SIGKILLed after ``timeout`` seconds."""
    srv = server()
    pid = srv.start(list(argv)[3:], env if env is not None else dict(os.environ), cwd, stdout, stderr)
    return Child(pid, srv, timeout)


def run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(argv, capture_output=True, text=True, errors="surrogateescape")``, forked from the server
    where :func:`usable` allows; raises ``subprocess.TimeoutExpired`` (the run's group killed) as it would."""
    import tempfile

    args = [str(a) for a in argv]
    if not usable(args, env):
        return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout,
                              errors="surrogateescape", stdin=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="zygote-") as d:
        out, err = Path(d, "out"), Path(d, "err")
        rc = spawn(args, env, cwd, out, err, timeout).wait()
        stdout = out.read_bytes().decode("utf-8", "surrogateescape")
        stderr = err.read_bytes().decode("utf-8", "surrogateescape")
        if rc is None:
            raise subprocess.TimeoutExpired(args, timeout, stdout, stderr)
        return subprocess.CompletedProcess(args, rc, stdout, stderr)
