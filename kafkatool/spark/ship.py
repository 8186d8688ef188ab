"""Getting kafkatool onto executors, with its compiled extension.

* First every executor slot is probed (``PROBE``, a function shipped by value, run in a child interpreter so
  the worker's own imports stay as they were): its Python, kafkatool's compiled dependencies (``lz4``,
  ``zstandard``, ``crc32c``, ``cramjam``, ``numpy``, ``pyarrow``, ``pandas``), and the kafkatool it has installed:
  a digest of its sources and whether its compiled extension loads.
* When every executor has this very kafkatool installed (the same source digest) with its extension active,
  nothing is shipped: the installed package runs. Otherwise the running package is zipped (sources, data files
  and the built extension) and shipped with ``SparkContext.addPyFile``; ``kafkatool._accel`` loads the extension
  from a copy on disk (zipimport cannot), when it was built for the executors' Python.
* The probe runs again after shipping, and the driver prints per executor where kafkatool comes from and whether
  its compiled path is active (a warning when not: up to ~4x the CPU). Missing dependencies stop the run before
  any data is read, in one line.
* Executors may instead run a packed virtualenv: a ``python_archive`` venv.tar.gz sets
  ``spark.archives=venv.tar.gz#environment`` and runs ``./environment/bin/python``. A venv packed with
  ``venv-pack`` does not include the interpreter, so nodes need the same Python version at the same path;
  conda-pack archives do.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kafkatool

ARCHIVE_ALIAS = "environment"
NEEDED_MODULES = ("lz4", "zstandard", "crc32c", "cramjam", "numpy", "pyarrow", "pandas")
_SHIPPED_SUFFIXES = (".py", ".json", ".typed", ".so", ".pyd")


def package_root() -> Path:
    return Path(kafkatool.__file__).resolve().parent


def _shipped_files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
            and p.name.endswith(_SHIPPED_SUFFIXES) and not p.name.endswith(".tmp")]


def source_digest(root: Path | None = None) -> str:
    """A digest of kafkatool's Python sources (names and bytes): equal digests, the same code."""
    root = root or package_root()
    h = hashlib.sha256()
    for name in sorted(str(p) for p in root.rglob("*.py") if "__pycache__" not in p.parts):
        h.update(os.path.relpath(name, root).encode())
        h.update(b"\0")
        with open(name, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def package_zip(directory: str) -> str:
    """Zip the running ``kafkatool`` package (sources, data files and the built extension) into ``directory``."""
    root = package_root()
    dest = os.path.join(directory, "kafkatool.zip")
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for p in _shipped_files(root):
            z.write(p, str(Path("kafkatool") / p.relative_to(root)))
    return dest


def from_shipped_zip(module_file: str) -> bool:
    """Whether an executor's ``kafkatool.__file__`` lies inside the zip ``package_zip`` built."""
    return "/kafkatool.zip/kafkatool/" in module_file.replace(os.sep, "/")


def archive_settings(archive: str) -> tuple[dict[str, str], dict[str, str]]:
    """(Spark conf, environment) to run executors on a packed virtualenv/conda env ``archive``."""
    python = f"./{ARCHIVE_ALIAS}/bin/python"
    conf = {"spark.archives": f"{archive}#{ARCHIVE_ALIAS}", "spark.pyspark.python": python,
            "spark.executorEnv.PYSPARK_PYTHON": python}
    return conf, {"PYSPARK_PYTHON": python}


# The probe, as source: it is compiled into a namespace of its own so cloudpickle ships it by value (an executor
# without kafkatool can run it), and its checks run in a child interpreter (imports made there do not stay in the
# Python worker, which may later import kafkatool from the shipped zip).
_PROBE_SOURCE = r'''
def probe(_):
    import json, os, socket, subprocess, sys
    child = """
import hashlib, importlib, json, os, platform, sys
missing = []
for name in %(needed)r:
    try:
        importlib.import_module(name)
    except Exception:
        missing.append(name)
out = {"python": platform.python_version() + " (" + sys.executable + ")", "missing": ",".join(missing)}
try:
    import kafkatool
    from kafkatool import _accel
    root = os.path.dirname(os.path.abspath(kafkatool.__file__))
    h = hashlib.sha256()
    if os.path.isdir(root):
        names = []
        for d, _, files in os.walk(root):
            if "__pycache__" in d:
                continue
            names += [os.path.join(d, f) for f in files if f.endswith(".py")]
        for p in sorted(names):
            h.update(os.path.relpath(p, root).encode()); h.update(b"\\0")
            with open(p, "rb") as f:
                h.update(f.read())
        digest = h.hexdigest()[:16]
    else:
        digest = ""
    out.update(kafkatool=kafkatool.__version__, kafkatool_file=os.path.abspath(kafkatool.__file__),
               digest=digest, compiled=_accel.speedups is not None)
except Exception as e:
    out.update(kafkatool="missing", kafkatool_file="", digest="", compiled=False, error=str(e)[:200])
print(json.dumps(out))
""" % {"needed": NEEDED}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120, env=env)
    try:
        found = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        found = {"python": sys.executable, "missing": "", "kafkatool": "missing", "kafkatool_file": "",
                 "digest": "", "compiled": False, "error": (r.stderr.strip().splitlines() or ["?"])[-1][:200]}
    found["host"] = socket.gethostname()
    return found
'''


def make_probe() -> Callable[[Any], dict[str, Any]]:
    """The executor probe (see the module doc), a function cloudpickle ships by value."""
    namespace: dict[str, Any] = {"__name__": "kafkatool_executor_probe", "NEEDED": NEEDED_MODULES}
    exec(compile(_PROBE_SOURCE, "<kafkatool executor probe>", "exec"), namespace)
    probe: Callable[[Any], dict[str, Any]] = namespace["probe"]
    return probe
