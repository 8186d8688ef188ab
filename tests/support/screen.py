"""What a terminal shows of a run's bytes, line by line (for the rule that progress and data never share a line)."""

from __future__ import annotations

import re
from collections import Counter

_ERASE = re.compile(r"\r|\x1b\[2K")  # a carriage return, or rich's erase-line: the line is drawn again from here
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_FIGURES = re.compile(r"\d+(\.\d+)?")


def screen_lines(tty: bytes) -> list[str]:
    """Each line as it stays on screen: from its last carriage return or erase-line on, escape sequences removed,
    trailing blanks dropped."""
    text = tty.decode(errors="replace").replace("\r\n", "\n")
    return [_ESCAPE.sub("", _ERASE.split(raw)[-1]).rstrip() for raw in text.split("\n")]


def without_figures(text: str) -> str:
    """``text`` with every number as N (times, rates and peak memory differ from run to run)."""
    return _FIGURES.sub("N", text)


def data_lines_missing(piped_stdout: str, tty: bytes) -> list[str]:
    """The lines of a piped run's stdout that a terminal run of the same command does not show whole, on a line of
    their own (figures aside, each as many times as piped): a line glued after a stale progress bar is one."""
    shown = Counter(without_figures(line) for line in screen_lines(tty))
    missing = []
    for line in piped_stdout.splitlines():
        key = without_figures(line.rstrip())
        if shown[key] > 0:
            shown[key] -= 1
        else:
            missing.append(line)
    return missing
