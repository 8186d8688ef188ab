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
from typing import Any, Protocol, cast


def pure_requested() -> bool:
    """``KAFKATOOL_PURE`` set to anything but empty or 0: run the pure-Python paths only."""
    return os.environ.get("KAFKATOOL_PURE", "").strip() not in ("", "0")


# Every function the callers use, and the result types they read by field name: a stale build (a source tree
# updated without rebuilding the extension) lacks some, and then the pure-Python paths run rather than an
# AttributeError mid-command.
REQUIRED = ("configure", "parse_records", "parse_records_chunk", "validate_records", "reframe_v2_records",
            "legacy_wrapper", "legacy_deep_records", "encode_records", "encode_entries", "plan_step",
            "json_record_lines", "verify_walk", "headers_walk", "hop_walk", "index_walk", "dump_walk",
            "downconvert_run", "consumer_walk", "crc32", "recover_rules", "hop_rules", "answer_positions",
            "answer_times", "record_stats", "reframe_v2_wrapped",
            "Reframed", "VerifyWalk", "HeadersWalk", "DumpWalk", "DownconvertRun", "ConsumerWalk", "RecoverRules",
            "HopRules")


def load() -> ModuleType | None:
    """The extension module, configured; None when it is not built, is stale, or the pure paths are requested."""
    if pure_requested():
        return None
    try:
        from kafkatool import _speedups
    except ImportError:
        shipped = _from_zip()
        if shipped is None:
            return None
        _speedups = shipped
    if not all(hasattr(_speedups, name) for name in REQUIRED):
        return None
    return _speedups  # kafkatool.record.batch hands it the Record and Header classes (configure) when it loads


def _from_zip() -> ModuleType | None:
    """kafkatool imported from a zip (``spark-scan`` ships one to executors, the built extension inside): zipimport
    cannot load an extension, so a copy of it, when one was built for this interpreter, is loaded from disk (a
    private cache dir, named by the copy's content)."""
    import hashlib
    import importlib.machinery
    import importlib.util
    import sys
    import tempfile
    import zipfile

    here = __file__.replace(os.sep, "/")
    cut = here.find(".zip/kafkatool/")
    if cut < 0:
        return None
    try:
        with zipfile.ZipFile(here[:cut + 4]) as z:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                try:
                    data = z.read(f"kafkatool/_speedups{suffix}")
                except KeyError:
                    continue
                d = os.path.join(tempfile.gettempdir(),
                                 f"kafkatool-ext-{os.getuid()}-{hashlib.sha256(data).hexdigest()[:20]}")
                os.makedirs(d, mode=0o700, exist_ok=True)
                path = os.path.join(d, "_speedups" + suffix)
                if not os.path.exists(path):
                    tmp = f"{path}.{os.getpid()}.tmp"
                    with open(tmp, "wb") as f:
                        f.write(data)
                    os.replace(tmp, path)
                spec = importlib.util.spec_from_file_location("kafkatool._speedups", path)
                if spec is None or spec.loader is None:
                    return None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules["kafkatool._speedups"] = module
                return module
    except (OSError, ImportError, zipfile.BadZipFile):
        return None
    return None


speedups = load()


def load_crc32c() -> ModuleType:
    """The ``crc32c`` package's compiled module (``crc32c.crc32c(data[, value])``: CRC-32C, the v2 batch checksum),
    loaded without the package's ``__init__``, which asks importlib.metadata for its own version and imports its
    command line: two thirds of the CPU of a ``kafkatool dump`` of one small segment. The package itself when its
    layout is not the one known (crc32c 2.x: ``crc32c/_crc32c.<abi>.so``)."""
    import importlib.machinery
    import importlib.util

    try:
        spec = importlib.util.find_spec("crc32c")  # finds the package without running it
        for directory in (spec.submodule_search_locations or []) if spec is not None else []:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(directory, "_crc32c" + suffix)
                if os.path.exists(path):
                    loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    ext = importlib.util.spec_from_loader("crc32c._crc32c", loader)
                    if ext is None:
                        break
                    module = importlib.util.module_from_spec(ext)
                    loader.exec_module(module)
                    if hasattr(module, "crc32c"):
                        return module
    except (ImportError, OSError, ValueError):
        pass
    import crc32c

    return crc32c


class Crc32c(Protocol):
    """What the callers use of the crc32c module."""

    def crc32c(self, data: Any, value: int = 0, /) -> int: ...


crc32c: Crc32c = cast(Crc32c, load_crc32c())
