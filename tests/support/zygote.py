"""A fork server for the runs that need a process of their own but not a new interpreter: the hostile sweep's
~500 runs (tests/hostile/test_sweep.py), each a process with its memory sampled, and the ``kafkatool`` lines of
the docs' and ``--help``'s examples, run by bash (tests/support/doc_examples.py, through
tests/support/zygote_client.py).

A new interpreter costs ~0.13-0.2 CPU-s before a command does anything (start-up and kafkatool's imports), which
is most of a sweep run on a small input. The server is one ``python`` that imports kafkatool's CLI and every
command module once, then forks a child per run; the child is a process of its own as a new one would be: its
own session (``setsid``: the caller can kill its whole group), working directory, umask, environment,
``sys.argv``, stdin, stdout and stderr (``sys.std*`` made anew over them as a new interpreter makes them:
buffering by ``PYTHONUNBUFFERED`` and whether each is a terminal), and it ends as an interpreter does (threads
joined, ``atexit`` handlers run, streams flushed) with the exit code of ``python -m kafkatool``. What the server
imported is shared copy-on-write and counted in the child's resident memory, so a memory bound measured on the
child is, if anything, stricter than on a new interpreter (~16 MiB more anonymous memory: numpy among them).

Not for what only a fresh interpreter gives (:func:`fresh_only` says which environments): ``PYTHON*`` variables
other than the server's own (``PYTHONUNBUFFERED`` aside: the child honours it), the locale variables the
interpreter reads at start-up, the ones Typer reads at import, ``KAFKATOOL_PURE`` (read when the compiled paths
load) and the crash points (``KAFKATOOL_CRASH_*``, read at import).

Two ways in. On its stdin the server reads requests as JSON lines (argv, env, cwd, stdout and stderr paths; stdin
``/dev/null``) and answers ``{"pid": N}`` when a child starts and ``{"rc": N}`` when it ends (negative: killed by
that signal, as ``subprocess`` says): :func:`spawn`, :func:`run`. On a Unix socket (:func:`client`) it takes a
client's argv, cwd, umask, environment and stdin, stdout and stderr descriptors, and answers ``pid N`` and
``rc N`` lines, or ``exec`` where a new interpreter is needed; runs on the socket may overlap. The socket is in a
short directory of its own (a socket path holds at most 107 bytes; the tests' temp dirs are deeper than that).
``KAFKATOOL_TEST_CLI=exec`` runs everything as a new interpreter, as the suite ran before the server.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

_FRESH_ONLY = ("KAFKATOOL_PURE", "KAFKATOOL_CRASH_")
# Read by the interpreter when it starts (locale and stdio encoding), or by Typer when kafkatool's CLI is imported:
# a run must have the server's values of these to be forked from it.
_AT_START = ("PYTHON", "LANG", "LC_ALL", "LC_CTYPE", "TYPER_", "_TYPER_", "TERMINAL_WIDTH", "GITHUB_ACTIONS",
             "FORCE_COLOR", "PY_COLORS")
_CHILD_HONOURS = frozenset({"PYTHONUNBUFFERED"})  # the child makes sys.std* as this says
CLIENT = Path(__file__).with_name("zygote_client.py")


def exec_only() -> bool:
    """``KAFKATOOL_TEST_CLI=exec``: the suite as it ran before the server, every run a new interpreter."""
    return os.environ.get("KAFKATOOL_TEST_CLI", "").strip().lower() == "exec"


def fresh_only(env: Mapping[str, str], served: Mapping[str, str]) -> bool:
    """Whether a run with ``env`` needs a new interpreter, the server having started with ``served``."""
    if any(k.startswith(_FRESH_ONLY) for k in env):
        return True
    keys = {k for k in {*env, *served} if k.startswith(_AT_START) and k not in _CHILD_HONOURS}
    return any(env.get(k) != served.get(k) for k in keys)


def usable(argv: Sequence[str], env: Mapping[str, str] | None) -> bool:
    """Whether ``argv`` (``python -m kafkatool ...``) with ``env`` can run forked from the server."""
    if list(argv[:3]) != [sys.executable, "-m", "kafkatool"]:
        return False
    if exec_only():
        return False
    return not fresh_only(env if env is not None else os.environ, _server_env())


def _server_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for k in list(env):
        if k.startswith(_FRESH_ONLY):
            del env[k]
    return env


def _socket_dir() -> str:
    """A new directory for the server's socket, its path short enough for one (``sun_path``: 107 bytes)."""
    import tempfile

    base = tempfile.gettempdir()
    return tempfile.mkdtemp(prefix="kz-", dir=base if len(base) <= 64 else "/tmp")


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
        self.socket = str(ready["socket"])

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
        shutil.rmtree(os.path.dirname(self.socket), ignore_errors=True)  # the server's own, unless it was killed


_server: Server | None = None


def server() -> Server:
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = Server()
        atexit.register(_server.close)
    return _server


def client() -> list[str] | None:
    """The command line that stands for ``python -m kafkatool`` in a shell script (ARGS after it) and runs
    forked from the server (tests/support/zygote_client.py); None under ``KAFKATOOL_TEST_CLI=exec``."""
    if exec_only():
        return None
    return [sys.executable, "-I", "-S", str(CLIENT), server().socket]


def serve() -> None:
    """The server's loop (``python -c``): import the CLI once, then fork a child per request, from its stdin
    (JSON lines) or its socket."""
    import importlib

    served = dict(os.environ)
    import kafkatool.commands.app  # noqa: F401
    from kafkatool.commands.registry import COMMANDS

    for c in COMMANDS:
        importlib.import_module(f"kafkatool.commands.{c.module}")
        kafkatool.commands.app._built(c.module)  # its click commands too: a child runs one, as a new process would
    kafkatool.commands.app._root_command()
    import kafkatool

    # what the imports put in the environment (kafkatool.commands: OPENBLAS_NUM_THREADS), put in a run's as a new
    # interpreter's imports would put it
    imported_env = {k: v for k, v in os.environ.items() if k not in served}
    main_path = os.path.join(os.path.dirname(os.path.abspath(kafkatool.__file__)), "__main__.py")
    sock_dir = _socket_dir()
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(os.path.join(sock_dir, "s"))
        listener.listen(64)
        _write_json({"ready": True, "socket": listener.getsockname()})
        _Serving(listener, served, imported_env, main_path).loop()
    finally:
        shutil.rmtree(sock_dir, ignore_errors=True)


def _write_json(obj: object) -> None:
    """A reply on the server's stdout (written as it is, so that no forked child finds it in a buffer)."""
    os.write(1, (json.dumps(obj) + "\n").encode())


class _Serving:
    """The server's state: its listening socket, and the runs going on, each a pidfd polled for its end."""

    def __init__(self, listener: socket.socket, served: dict[str, str], imported_env: dict[str, str],
                 main_path: str) -> None:
        import select

        self.listener = listener
        self.served = served
        self.imported_env = imported_env
        self.main_path = main_path
        self.poll = select.poll()
        self.poll.register(0, select.POLLIN)
        self.poll.register(listener.fileno(), select.POLLIN)
        self.runs: dict[int, tuple[int, socket.socket | None]] = {}  # pidfd: pid, client (None: a stdin request)
        self.clients: dict[int, tuple[int, socket.socket]] = {}  # a client's socket while its run goes on: pid
        self.pending = b""  # read from stdin, not yet a whole line

    def loop(self) -> None:
        while True:
            for fd, _ in self.poll.poll():
                if fd == 0:
                    if not self._stdin():
                        return  # the caller closed our stdin: the end
                elif fd == self.listener.fileno():
                    self._accept()
                elif fd in self.clients:
                    self._client_gone(fd)
                elif fd in self.runs:
                    self._ended(fd)

    def _stdin(self) -> bool:
        data = os.read(0, 1 << 16)
        if not data:
            return False
        self.pending += data
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            req = json.loads(line)
            pid = self._fork([str(a) for a in req["args"]], {str(k): str(v) for k, v in req["env"].items()},
                             str(req["cwd"]), None, (str(req["stdout"]), str(req["stderr"])))
            _write_json({"pid": pid})
            self._watch(pid, None)
        return True

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        try:
            conn.settimeout(10)  # a client sends its request at once
            args, env, cwd, umask, fds = _receive(conn)
            conn.settimeout(None)
        except (OSError, ValueError):
            conn.close()
            return
        try:
            if fresh_only(env, self.served):
                conn.sendall(b"exec\n")
                conn.close()
                return
            pid = self._fork(args, env, cwd, umask, fds, conn)
        finally:
            for fd in fds:
                os.close(fd)
        try:
            conn.sendall(b"pid %d\n" % pid)
        except OSError:
            pass  # the client is gone; its run goes on, as a process whose parent died would
        self._watch(pid, conn)

    def _fork(self, args: list[str], env: dict[str, str], cwd: str, umask: int | None,
              streams: tuple[int, int, int] | tuple[str, str], conn: socket.socket | None = None) -> int:
        pid = os.fork()
        if pid == 0:
            # the child keeps none of the server's descriptors: its socket, clients, pidfds
            for s in (self.listener, conn, *(c for _, c in self.runs.values())):
                if s is not None:
                    os.close(s.detach())
            for pidfd in self.runs:
                os.close(pidfd)
            _child(args, env, cwd, umask, streams, self.main_path, self.imported_env)  # never returns
        return pid

    def _watch(self, pid: int, conn: socket.socket | None) -> None:
        import select

        pidfd = os.pidfd_open(pid)
        self.runs[pidfd] = (pid, conn)
        self.poll.register(pidfd, select.POLLIN)
        if conn is not None:  # the client sends nothing more: readable means it is gone
            self.clients[conn.fileno()] = (pid, conn)
            self.poll.register(conn, select.POLLIN)

    def _client_gone(self, fd: int) -> None:
        """The client ended before its run (killed: it waits for the run otherwise); so does the run, as the
        process the client stands for would have."""
        pid, conn = self.clients[fd]
        try:
            conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return  # still there (the descriptor of a client gone earlier in this poll's answers, reused)
        except OSError:
            pass
        del self.clients[fd]
        self.poll.unregister(fd)
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass

    def _ended(self, pidfd: int) -> None:
        pid, conn = self.runs.pop(pidfd)
        self.poll.unregister(pidfd)
        os.close(pidfd)
        if conn is not None and self.clients.pop(conn.fileno(), None) is not None:
            self.poll.unregister(conn)
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)  # negative: killed by that signal
        if conn is None:
            _write_json({"rc": rc})
            return
        try:
            conn.sendall(b"rc %d\n" % rc)
        except OSError:
            pass
        conn.close()


def _receive(conn: socket.socket) -> tuple[list[str], dict[str, str], str, int, tuple[int, int, int]]:
    """A client's request (tests/support/zygote_client.py): argv, environment, cwd, umask and its stdin, stdout
    and stderr, received as descriptors of the server's (the caller closes them)."""
    data, ancillary, flags, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i:i + 4], sys.byteorder) for i in range(0, len(payload) - 3, 4)]
    if flags & socket.MSG_CTRUNC or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request without its three descriptors")
    try:
        while len(data) < 8 or len(data) < 8 + int.from_bytes(data[:8], "little"):
            more = conn.recv(1 << 16)
            if not more:
                raise ValueError("a request cut short")
            data += more
        parts = [os.fsdecode(p) for p in data[8:].split(b"\0")]
        n = int(parts[2])
        env = dict(kv.partition("=")[::2] for kv in parts[3 + n:])
        return parts[3:3 + n], env, parts[0], int(parts[1]), (fds[0], fds[1], fds[2])
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _child(args: list[str], env: dict[str, str], cwd: str, umask: int | None,
           streams: tuple[int, int, int] | tuple[str, str], main_path: str, imported_env: dict[str, str]) -> None:
    """The forked run: ``streams`` are its stdin, stdout and stderr (descriptors), or the paths its stdout and
    stderr go to (stdin ``/dev/null``)."""
    code = 1
    server_streams = (sys.stdout, sys.stderr)  # over descriptors 1 and 2 too: whatever kept them writes there
    try:
        os.setsid()
        if len(streams) == 3:
            fds = [int(fd) for fd in streams]
        else:
            fds = [os.open(os.devnull, os.O_RDONLY),
                   os.open(streams[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                   os.open(streams[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
        for fd in fds:  # all above 2: the server's own 0-2 were open when it made them
            os.close(fd)
        if umask is not None:
            os.umask(umask)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        for k, v in imported_env.items():
            os.environ.setdefault(k, v)
        _stdio(unbuffered=bool(os.environ.get("PYTHONUNBUFFERED")))
        sys.argv = [main_path, *args]
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
        for stream in (sys.stdout, sys.stderr, *server_streams):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF)


def _stdio(unbuffered: bool) -> None:
    """``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` over descriptors 0-2 as a new interpreter makes them
    (CPython's ``create_stdio``): the server's encodings, line-buffered on a terminal (stderr always), with
    ``PYTHONUNBUFFERED`` written through."""
    import io

    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old: Any = getattr(sys, f"__{name}__")
        write = fd > 0
        buffering = 0 if unbuffered and write else -1
        buf: Any = open(fd, "wb" if write else "rb", buffering, closefd=False)
        raw = buf if buffering == 0 else buf.raw
        raw.name = f"<{name}>"
        stream: Any = io.TextIOWrapper(buf, encoding=getattr(old, "encoding", None),
                                       errors=getattr(old, "errors", None), newline="\n",
                                       line_buffering=not unbuffered and (raw.isatty() or fd == 2),
                                       write_through=unbuffered)
        stream.mode = "w" if write else "r"
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


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
