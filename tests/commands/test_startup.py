"""A fast start: what ``kafkatool --version``, ``--help`` and a dump of a one-batch segment import (not how long
they take: benchmarks/startup.py measures that, beside ``python -c pass``).

``--version`` and ``--help`` load no command module (the registry lists them), no codec, numpy, pyarrow, rich
or pydantic; a dump of one small uncompressed segment loads the dump engine and the record formats, and no
codec library, no decoder, no progress bar, no table renderer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.segments import v2, write_segment

# The whole of what --version and --help import of kafkatool, and the only libraries outside the standard library.
STARTUP_MODULES = {
    "kafkatool", "kafkatool.commands", "kafkatool.commands.app", "kafkatool.commands.help",
    "kafkatool.commands.options", "kafkatool.commands.registry", "kafkatool.errors", "kafkatool.util",
    "kafkatool.commands.examples",  # the root's Examples (its --help epilog): text only
    "kafkatool.util.jsonl", "kafkatool.util.units",
    "kafkatool.util.printable",  # names shown escaped in every error line (errors.py): a few lines of str methods
    "kafkatool.commands.interrupts",  # the error boundary's Ctrl-C where CPython loses or twists it: stdlib only
}
STARTUP_LIBRARIES = {"typer", "shellingham", "annotated_doc"}  # typer's own dependencies (no pydantic: < 0.29)

NEVER_AT_START = ("numpy", "pyarrow", "pydantic", "rich", "lz4", "zstandard", "cramjam", "crc32c", "pandas", "pyspark")


def imported(args: list[str], cwd: Path = ROOT) -> tuple[set[str], set[str], str]:
    """Run ``kafkatool ARGS`` in a fresh interpreter; the kafkatool modules and the non-stdlib top-level packages
    it imported, and its stdout."""
    probe = (
        "import atexit, json, sys, sysconfig\n"
        "base = set(sys.modules)\n"
        "def report():\n"
        "    new = [m for m in sys.modules if m not in base]\n"
        "    third = sorted({m.split('.')[0] for m in new if 'site-packages' in (getattr(sys.modules[m], '__file__', "
        "None) or '') and not m.startswith('kafkatool')})\n"
        "    kt = sorted(m for m in new if m.startswith('kafkatool'))\n"
        "    with open(sys.argv[1], 'w') as f: json.dump([kt, third], f)\n"
        "atexit.register(report)\n"
        "from kafkatool.commands.app import main\n"
        "main(sys.argv[2:])\n")
    out = cwd / "imports.json" if cwd != ROOT else \
        Path(os.environ.get("TMPDIR", "/tmp")) / f"imports-{os.getpid()}.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("KAFKATOOL_PURE", None)
    p = subprocess.run([sys.executable, "-c", probe, str(out), *args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode in (0, 2), p.stderr
    kt, third = json.loads(out.read_text())
    out.unlink()
    return set(kt), set(third), p.stdout


@pytest.mark.parametrize("args", [["--version"], ["--help"], []])
def test_version_and_help_import_only_the_shell(args):
    kt, third, _ = imported(args)
    assert kt == STARTUP_MODULES
    assert third == STARTUP_LIBRARIES


def test_the_root_help_lists_every_command_without_loading_one():
    kt, _, out = imported(["--help"])
    from kafkatool.commands.registry import COMMANDS

    for e in COMMANDS:
        assert f"  {e.name} " in out, e.name
    assert not any(m.startswith("kafkatool.commands.") and m.rsplit(".", 1)[1] in {e.module for e in COMMANDS}
                   for m in kt)


def test_a_dump_of_one_small_segment_loads_no_codec_decoder_or_progress_bar(tmp_path):
    write_segment(tmp_path / "t-0", 0, [v2(0, 3)])
    kt, third, out = imported(["dump", "t-0/00000000000000000000.log"], cwd=tmp_path)
    assert "offsets 0..2" in out
    assert third <= STARTUP_LIBRARIES | {"zlib_ng"}, third  # zlib-ng: CRC-32 of legacy batches, a small module
    for m in NEVER_AT_START:
        assert m not in third
    assert not any(m.startswith(("kafkatool.decoders", "kafkatool.commands.render.table", "kafkatool.sample",
                                 "kafkatool.reindex", "kafkatool.convert", "kafkatool.fetch", "kafkatool.scan",
                                 "kafkatool.spark", "kafkatool.canary")) for m in kt), sorted(kt)
    assert "kafkatool.commands.dump" in kt and "kafkatool.commands.canary" not in kt


def test_a_command_loads_only_its_own_module():
    kt, _, _ = imported(["sample", "--help"])
    commands = {m for m in kt if m.startswith("kafkatool.commands.") and m.count(".") == 2}
    assert commands == {"kafkatool.commands.app", "kafkatool.commands.help", "kafkatool.commands.options",
                        "kafkatool.commands.registry", "kafkatool.commands.sample", "kafkatool.commands.examples",
                        "kafkatool.commands.render", "kafkatool.commands.interrupts"}, commands


def test_typer_is_pinned_below_the_release_that_imports_pydantic():
    import re

    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"typer>=0\.26,<0\.29"', text), "typer 0.29 requires and imports pydantic at every start"
