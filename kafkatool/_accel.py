"""The compiled fast paths: ``kafkatool._speedups`` when it is built, unless ``KAFKATOOL_PURE=1``.

Every compiled function has a pure-Python twin that stays the reference and the fallback. A compiled
function returns the Python function's exact result, or None whenever the Python function must run
instead (any error or anything unusual: the Python code then raises its exact error at its exact
position), so callers read::

    out = speedups.parse_records(...) if speedups is not None else None
    if out is None:
        out = parse_records_py(...)
"""

from __future__ import annotations

import os
from types import ModuleType


def pure_requested() -> bool:
    """``KAFKATOOL_PURE`` set to anything but empty or 0: run the pure-Python paths only."""
    return os.environ.get("KAFKATOOL_PURE", "").strip() not in ("", "0")


# Every function the callers use, and the result types they read by field name: a stale build (a source tree
# updated without rebuilding the extension) lacks some, and then the pure-Python paths run rather than an
# AttributeError mid-command.
REQUIRED = ("configure", "parse_records", "validate_records", "reframe_v2_records", "legacy_wrapper", "verify_walk",
            "headers_walk", "hop_walk", "dump_walk", "downconvert_run", "consumer_walk", "crc32", "Reframed",
            "VerifyWalk", "HeadersWalk", "DumpWalk", "DownconvertRun", "ConsumerWalk")


def load() -> ModuleType | None:
    """The extension module, configured; None when it is not built, is stale, or the pure paths are requested."""
    if pure_requested():
        return None
    try:
        from kafkatool import _speedups
    except ImportError:
        return None
    if not all(hasattr(_speedups, name) for name in REQUIRED):
        return None
    return _speedups  # kafkatool.record.batch hands it the Record and Header classes (configure) when it loads


speedups = load()
