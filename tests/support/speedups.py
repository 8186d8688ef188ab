"""Switching the library between its compiled and pure-Python paths inside a test, whatever KAFKATOOL_PURE says."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType


@contextmanager
def dispatching_to(extension: ModuleType | None, modules: Iterable[str]) -> Iterator[None]:
    """Inside the block every module of ``modules`` dispatches (its ``_C``) to ``extension``: the compiled
    extension, or None for the pure-Python paths; after it, to what it did before."""
    mods = [importlib.import_module(m) for m in modules]
    saved = [m._C for m in mods]
    for m in mods:
        m._C = extension
    try:
        yield
    finally:
        for m, s in zip(mods, saved, strict=True):
            m._C = s
