"""Getting kafkatool onto executors.

* The package itself (pure Python) is zipped from the running source and shipped with
  ``SparkContext.addPyFile``: executors always run the same kafkatool as the driver.
* Its compiled dependencies (``lz4``, ``zstandard``, ``crc32c``, ``cramjam``; ``numpy``, ``pyarrow``,
  ``pandas`` for Arrow) cannot travel in a zip. Either install them on every node (``pip install
  'kafkatool[spark]'`` into the Python the executors run), or ship a packed virtualenv:
  a ``python_archive`` venv.tar.gz sets ``spark.archives=venv.tar.gz#environment`` and runs the
  executors' Python as ``./environment/bin/python``. A venv packed with ``venv-pack`` does not include
  the interpreter, so nodes need the same Python version at the same path; conda-pack archives do.
* ``preflight`` runs on the executors first and names what is missing, instead of a job of failed tasks.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import kafkatool

ARCHIVE_ALIAS = "environment"
NEEDED_MODULES = ("lz4", "zstandard", "crc32c", "cramjam", "numpy", "pyarrow", "pandas")


def package_root() -> Path:
    return Path(kafkatool.__file__).resolve().parent


def package_zip(directory: str) -> str:
    """Zip the running ``kafkatool`` package (``.py`` files and ``py.typed``) into ``directory``."""
    root = package_root()
    dest = os.path.join(directory, "kafkatool.zip")
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(root.rglob("*")):
            if "__pycache__" in p.parts or not p.is_file():
                continue
            if p.suffix == ".py" or p.name == "py.typed":
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


def preflight_probe() -> dict[str, str]:
    """Runs on an executor: which of kafkatool's compiled dependencies its Python cannot import, and where
    its ``kafkatool`` comes from (inside the shipped ``kafkatool.zip`` unless something shadows it)."""
    import importlib
    import platform
    import socket
    import sys

    missing = []
    for name in NEEDED_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            missing.append(name)
    try:
        import kafkatool as package

        version, origin = package.__version__, os.path.abspath(str(package.__file__))  # a zip entry is relative
    except Exception:
        version, origin = "missing", ""
    return {"host": socket.gethostname(), "python": f"{platform.python_version()} ({sys.executable})",
            "kafkatool": version, "kafkatool_file": origin, "missing": ",".join(missing)}
