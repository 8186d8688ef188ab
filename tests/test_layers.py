"""The architecture's import rules (tests/support/layers.py): kafkatool keeps them, and the check sees each
kind of violation in a tree built to break them."""

from __future__ import annotations

from pathlib import Path

from tests.support.layers import violations
from tests.support.paths import ROOT


def test_kafkatool_keeps_every_rule() -> None:
    assert violations(ROOT / "kafkatool") == []


def _tree(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "kafkatool"
    for rel, text in files.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for d in [pkg, *(p for p in pkg.rglob("*") if p.is_dir())]:
        (d / "__init__.py").touch()
    return pkg


def test_each_kind_of_violation_is_reported(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {
        "record/batch.py": "def f():\n    from kafkatool.log import layout\n",  # upward, lazy
        "log/layout.py": "from kafkatool.record.batch import f\n",
        "dump/engine.py": "from kafkatool.fetch.simulate import FetchOptions\nfrom kafkatool.fetch import hidden\n",
        "fetch/simulate.py": "FetchOptions = 1\n",
        "fetch/__init__.py": "from kafkatool.fetch.simulate import FetchOptions\n__all__ = ['FetchOptions']\n",
        "scan/plan.py": "import pyspark\n",
        "util/units.py": "import rich\n",
        "convert/a.py": "from kafkatool.convert import b\n",
        "convert/b.py": "def g():\n    from kafkatool.convert import a\n",
        "dump/dump_render.py": "",
        "sample/spec.py": "",
        "sample/spec_values.py": "",
    })
    found = "\n".join(violations(pkg))
    assert "upward import kafkatool.record.batch -> kafkatool.log.layout" in found
    assert "imports FetchOptions from kafkatool.fetch.simulate: another engine's internals" in found
    assert "imports hidden from kafkatool.fetch: another engine's internals" in found
    assert "scan/plan.py:1: imports pyspark: only kafkatool/spark/ may" in found
    assert "util/units.py:1: imports rich: only kafkatool/commands/ may" in found
    assert "import cycle: kafkatool.convert.a -> kafkatool.convert.b -> kafkatool.convert.a" in found
    assert "import cycle: kafkatool.log.layout -> kafkatool.record.batch" in found
    assert "dump/dump_render: named with its package's name as a prefix" in found
    assert "sample/spec_values: named with its sibling spec's name as a prefix" in found
    # the allowed forms are not reported
    assert "FetchOptions from kafkatool.fetch:" not in found
