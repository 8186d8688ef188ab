"""Stops a CLI the SIGINT tests start at a point inside its work, whatever the machine's load.

A test puts this directory on the child's ``PYTHONPATH``, so that ``site`` imports this module at start-up, and names
a directory in ``KAFKATOOL_TEST_STOP_UNDER``. The first time the process itself (its main thread, not a forked
worker) opens a ``.log`` file under that directory, it arms a one-shot CPU-time timer (``ITIMER_PROF``,
``KAFKATOOL_TEST_STOP_AFTER_MS`` of its own CPU, default 1): when it fires, wherever the work then is, the process
stops itself (SIGSTOP). The test waits for the stop, presses Ctrl-C (SIGINT, left pending) and continues it
(SIGCONT): the interrupt lands in the middle of the work, a few milliseconds of CPU into it, every time.

Looking for the work from outside raced with it: a check of 48 MiB lasts ~30 ms, and a loaded CI machine kept the
looking test off its core for longer than that (the child finished first, exit 0). Stopping right at the open made
the moment certain but always the same one, the ``open`` itself. A timer on the child's own CPU time is certain and
lands inside the walk, whatever else the machine runs. A Python signal handler runs between bytecodes, so the
KeyboardInterrupt comes out of whatever Python line was running when the timer fired, as a real Ctrl-C's would.

The hook is an audit hook (PEP 578): Python raises ``open`` for every ``open()`` and ``os.open()``. Nothing in the
product changes.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading

_UNDER = os.environ.get("KAFKATOOL_TEST_STOP_UNDER")
_AFTER = float(os.environ.get("KAFKATOOL_TEST_STOP_AFTER_MS", "1")) / 1000


def _install(under: str) -> None:
    main = os.getpid()
    armed = [True]

    def stop(signum: int, frame: object) -> None:
        os.kill(main, signal.SIGSTOP)

    def hook(event: str, args: tuple[object, ...]) -> None:
        if not armed[0] or event != "open" or os.getpid() != main \
                or threading.current_thread() is not threading.main_thread():
            return
        path = args[0]
        if not isinstance(path, (str, bytes, os.PathLike)):
            return
        name = os.fsdecode(os.fspath(path))
        if not (name.endswith(".log") and os.path.realpath(name).startswith(under)):
            return
        armed[0] = False
        signal.signal(signal.SIGPROF, stop)
        signal.setitimer(signal.ITIMER_PROF, _AFTER)
        # A timer still pending at exit is cancelled (finalization resets the handler, and SIGPROF would kill the
        # process): a run whose work ended first exits as it would, and the test says it never stopped.
        atexit.register(signal.setitimer, signal.ITIMER_PROF, 0)

    sys.addaudithook(hook)


if _UNDER:
    _install(os.path.join(os.path.realpath(_UNDER), ""))
