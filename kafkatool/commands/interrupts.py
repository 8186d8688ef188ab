"""Ctrl-C where CPython does not deliver it as usual, for the error boundary in :mod:`kafkatool.commands.app`.

Two places lose or twist a SIGINT that lands in them:

- A KeyboardInterrupt raised where Python cannot raise it (a weakref callback, a ``__del__``, the module-lock
  bookkeeping of an import) is printed as "Exception ignored ... KeyboardInterrupt" and dropped: the command
  would run on. :func:`catching` installs a ``sys.unraisablehook`` that drops the print and delivers the
  interrupt again from a helper thread, so it is raised at the next ordinary line of the command.
- A KeyboardInterrupt that leaves a *string* ``exec``/``eval`` (dataclass and namedtuple creation run one; a lazy
  import mid-run does) is marked unhandled by CPython even when a caller catches it. Under ``python -m`` the
  interpreter then ends itself with SIGINT after ``sys.exit(130)``, and a parent sees a signal death instead of
  our exit code. :func:`forget_caught` clears the mark (each string exec clears it when it starts).
"""

from __future__ import annotations

import _thread
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Redelivery:
    """The interrupts :func:`catching` took out of unraisable contexts, on their way back."""

    def __init__(self) -> None:
        self.requested = 0
        self.delivered = 0  # counted by the delivering threads once they have tripped the flag

    def hook(self, previous: Any) -> Any:
        def hook(unraisable: Any) -> None:
            if unraisable.exc_type is None or not issubclass(unraisable.exc_type, KeyboardInterrupt):
                previous(unraisable)
                return
            # Not _thread.interrupt_main() here: the very next line, still inside this hook, would raise the
            # KeyboardInterrupt where it is lost again. Not threading.Thread.start() either: it waits for the
            # thread, and the wait would raise it. A bare thread trips the flag once this hook has returned.
            self.requested += 1
            returned = _thread.allocate_lock()
            returned.acquire()
            _thread.start_new_thread(self._deliver, (returned,))
            returned.release()

        return hook

    def _deliver(self, returned: Any) -> None:
        returned.acquire()  # the hook's last line ran
        time.sleep(0.001)  # and it has returned, with the GIL handed back to the command's thread
        _thread.interrupt_main()
        self.delivered += 1

    def settle(self) -> None:
        """Wait for the redelivered interrupts: the KeyboardInterrupt is raised in the caller, here."""
        while self.delivered < self.requested:
            time.sleep(0.001)
        for _ in range(2):  # the eval loop looks at the tripped flag at a call or a backward jump
            pass

    def settle_quietly(self) -> None:
        """Absorb the redelivered interrupts still on their way (the run has ended; its exit code stands)."""
        while True:
            try:
                self.settle()
                return
            except KeyboardInterrupt:
                continue


@contextmanager
def catching() -> Iterator[Redelivery]:
    """For the length of a run: a Ctrl-C lost in an unraisable context comes back as a KeyboardInterrupt. The
    caller calls ``settle()`` on the normal path, inside the same ``try`` that catches KeyboardInterrupt, so that
    an interrupt redelivered just as the command finished is raised there and not on the way out."""
    redelivery = Redelivery()
    previous = sys.unraisablehook
    sys.unraisablehook = redelivery.hook(previous)
    try:
        yield redelivery
    finally:
        sys.unraisablehook = previous


def forget_caught() -> None:
    """After a KeyboardInterrupt was caught: keep the exit code the caller gives (see the module docstring)."""
    exec("pass", {})
