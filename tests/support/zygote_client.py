"""``kafkatool`` for a shell script, run from the fork server of tests/support/zygote.py (its socket protocol).

    python -I -S tests/support/zygote_client.py SOCKET ARGS...

stands for ``python -m kafkatool ARGS...``: it hands the server its argv, working directory, umask, environment
and its stdin, stdout and stderr (the descriptors themselves, SCM_RIGHTS), the server forks a child that runs
kafkatool on them, and the client ends as that child ended (its exit code, or killed by its signal); signals the
client gets meanwhile (SIGINT, SIGTERM, SIGHUP, SIGQUIT) are passed on to the child, and a client that dies
(SIGKILL) takes its run with it (the server kills the run). Where only a new interpreter will do (the server says
which: tests/support/zygote.py ``fresh_only``), or the server cannot be reached, the client becomes
``python -m kafkatool ARGS...`` itself (exec). It imports nothing beyond the interpreter's built-in modules: under
``-I -S`` it starts in ~7 ms of CPU, against ~130-200 ms for kafkatool's interpreter.
"""

import _signal  # type: ignore[import-not-found]  # built in: `signal` would import enum (~4 ms)
import _socket
import os
import sys


def _fresh(args: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "kafkatool", *args])


def _fail(why: str) -> None:
    os.write(2, f"kafkatool (tests/support/zygote_client.py): {why}\n".encode())
    os._exit(120)


def main() -> None:
    path, args = sys.argv[1], sys.argv[2:]
    try:
        cwd = os.getcwd()
        for fd in (0, 1, 2):
            os.fstat(fd)  # a closed stdin/stdout/stderr: as a new interpreter has it
    except OSError:
        _fresh(args)
    umask = os.umask(0)
    os.umask(umask)
    parts = [os.fsencode(cwd), b"%d" % umask, b"%d" % len(args), *map(os.fsencode, args),
             *(k + b"=" + v for k, v in os.environb.items())]
    body = b"\0".join(parts)
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        _fresh(args)
    fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
    s.sendmsg([len(body).to_bytes(8, "little") + body], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    reply = _Replies(s)
    kind, pid = reply.next()
    if kind == b"exec":
        s.close()
        _fresh(args)
    if kind != b"pid":
        _fail(f"the fork server said {kind!r}")

    def forward(sig: int, frame: object) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

    for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT):
        _signal.signal(sig, forward)
    kind, rc = reply.next()
    if kind != b"rc":
        _fail(f"the fork server said {kind!r}")
    if rc < 0:  # killed: so is the client, as the shell would see the process it started
        _signal.signal(-rc, _signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
        os._exit(128 - rc)
    os._exit(rc & 0xFF)


class _Replies:
    """The server's answer lines: ``exec``, ``pid N``, ``rc N``."""

    def __init__(self, s: _socket.socket) -> None:
        self.s = s
        self.buf = b""

    def next(self) -> tuple[bytes, int]:
        while b"\n" not in self.buf:
            chunk = self.s.recv(4096)
            if not chunk:
                _fail("the fork server ended before the run did")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        kind, _, value = line.partition(b" ")
        return kind, int(value or 0)

main()
