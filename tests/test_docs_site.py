"""The documentation site builds from docs/ with `mkdocs build --strict` (mkdocs.yml at the repository root): no
broken link or anchor, no page left out of the nav, and links to files outside docs/ checked by docs/_hooks.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytest.importorskip("mkdocs", reason="mkdocs is in the [test] extra: pip install -e '.[test]'")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(config), "-d",
                           str(site)], capture_output=True, text=True, timeout=300)


def test_the_site_builds_strictly(tmp_path):
    p = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert p.returncode == 0, p.stdout + p.stderr
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    assert {"index", "dump", "reindex-time", "concepts", "reference", "performance", "architecture"} <= pages
    for name in pages - {"index"}:
        assert (tmp_path / "site" / name / "index.html").exists(), name
    assert "kafkatool spark-scan" in (tmp_path / "site" / "reference" / "index.html").read_text()


def _project(tmp_path: Path, page: str) -> Path:
    """A small mkdocs project beside a repository file, with the repository's hooks."""
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text(page)
    (tmp_path / "NOTES.md").write_text("# Notes\n\n## A section\n\nText of the notes.\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"site_name: t\nstrict: true\nhooks:\n  - {ROOT / 'docs' / '_hooks.py'}\n")
    return config


def test_a_link_outside_docs_must_name_a_file_of_the_repository(tmp_path):
    ok = _project(tmp_path / "ok", "# Home\n\nSee [the notes](../NOTES.md).\n")
    p = _build(ok, tmp_path / "ok" / "site")
    assert p.returncode == 0, p.stderr
    html = (tmp_path / "ok" / "site" / "index.html").read_text()
    assert "<code>NOTES.md</code>" in html and "../NOTES.md" not in html
    bad = _project(tmp_path / "bad", "# Home\n\nSee [the notes](../NOTES-gone.md).\n")
    p = _build(bad, tmp_path / "bad" / "site")
    assert p.returncode != 0 and "NOTES-gone.md" in p.stdout + p.stderr


def test_an_include_inlines_a_repository_file(tmp_path):
    config = _project(tmp_path, "# Home\n\n<!-- include ../NOTES.md -->\n\n<!-- include ../ABSENT.md -->\n")
    p = _build(config, tmp_path / "site")
    assert p.returncode == 0, p.stderr
    html = (tmp_path / "site" / "index.html").read_text()
    assert "Text of the notes." in html and "<h2" in html and "<h3" in html  # its headings one level down
    assert "<code>ABSENT.md</code> is not in this checkout" in html
