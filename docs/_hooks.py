"""mkdocs hooks (mkdocs.yml ``hooks:``): the site is built from docs/, but its pages also name files of the rest of
the repository (``../benchmarks/README.md``) and include ARCHITECTURE.md, which lives at the repository root.

* A link from a page to a file outside docs/ is checked here (the target must exist: ``mkdocs build --strict``
  fails otherwise, as it does for a broken link inside docs/) and becomes the file's path in code on the site,
  which has no copy of it; on GitHub the page's link works as written.
* ``<!-- include ../FILE.md -->`` on a line of its own is replaced by that file's text, its headings one level
  down (the page keeps its own title); a file not in the checkout leaves a line saying so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

_OUTSIDE_LINK = re.compile(r"\[([^\]]*)\]\((\.\./[^)#\s]*)(#[^)\s]*)?\)")
_INCLUDE = re.compile(r"^<!-- include (\S+) -->$", re.M)


def _demote(markdown: str) -> str:
    out, code = [], False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            code = not code
        if not code and re.match(r"#+ ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    root = Path(config["config_file_path"]).resolve().parent  # the repository: mkdocs.yml is at its root
    here = (Path(config["docs_dir"]) / page.file.src_uri).resolve().parent

    def include(m: re.Match[str]) -> str:
        target = (here / m[1]).resolve()
        if not target.is_file():
            return f"*`{target.relative_to(root).as_posix()}` is not in this checkout.*"
        return _demote(target.read_text().strip("\n"))

    def link(m: re.Match[str]) -> str:
        target = (here / m[2]).resolve()
        try:
            rel = target.relative_to(root).as_posix()
        except ValueError:
            raise PluginError(f"{page.file.src_uri}: link {m[2]!r} leaves the repository") from None
        if not target.exists():
            raise PluginError(f"{page.file.src_uri}: link {m[2]!r}: no such file in the repository")
        text = m[1]
        return text if text.strip("`") == rel else f"{text} (`{rel}`)"

    markdown = _INCLUDE.sub(include, markdown)
    return _OUTSIDE_LINK.sub(link, markdown)
