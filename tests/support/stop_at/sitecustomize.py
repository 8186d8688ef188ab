"""Stops a CLI the SIGINT tests start at a known point inside its work, whatever the machine's load.

A test puts this directory on the child's ``PYTHONPATH``, so that ``site`` imports this module at start-up, and names
a directory in ``KAFKATOOL_TEST_STOP_UNDER``. The first time the process itself (not a forked worker) opens a
``.log`` file under that directory, or starts a child process when ``KAFKATOOL_TEST_STOP_AT_FORK`` is set, it stops
itself (SIGSTOP). The test waits for the
stop, presses Ctrl-C (SIGINT, left pending) and continues it (SIGCONT): the interrupt arrives inside the work every
time. Looking for the work from outside raced with it: a check of 48 MiB lasts ~30 ms, and a loaded CI machine can
keep the looking test off its core for longer than that (the child then finished first, exit 0).

The hook is an audit hook (PEP 578): Python raises ``open`` for every ``open()``/``os.open()``, ``os.fork`` and
``subprocess.Popen`` for new processes. Nothing in the product changes.
"""

from __future__ import annotations

import os
import signal
import sys

_UNDER = os.environ.get("KAFKATOOL_TEST_STOP_UNDER")
_FORKS = ("os.fork", "os.posix_spawn", "subprocess.Popen") if os.environ.get("KAFKATOOL_TEST_STOP_AT_FORK") else ()


def _install(under: str) -> None:
    main = os.getpid()
    armed = [True]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if not armed[0] or os.getpid() != main:
            return
        if event == "open":
            path = args[0]
            if not isinstance(path, (str, bytes, os.PathLike)):
                return
            name = os.fsdecode(os.fspath(path))
            if not (name.endswith(".log") and os.path.realpath(name).startswith(under)):
                return
        elif event not in _FORKS:
            return
        armed[0] = False
        os.kill(main, signal.SIGSTOP)

    sys.addaudithook(hook)


if _UNDER:
    _install(os.path.join(os.path.realpath(_UNDER), ""))
