"""The architecture's import rules, checked over every import statement in kafkatool/ (lazy ones included).

``python -m tests.support.layers`` prints one line per violation and exits 1 if there is any (CI runs it;
``tests/test_layers.py`` asserts it finds none). The rules (ARCHITECTURE.md):

1. layers run one way: util (with errors, constants, _accel) < record < log < engines (dump, reindex,
   convert, fetch, sample, scan, canary, decoders) < spark < commands; a module imports its own layer or
   lower ones;
2. no import cycles between modules;
3. an engine imports another engine only through that package's public names (``from kafkatool.fetch
   import FetchOptions``, a name in ``kafkatool/fetch/__init__.py``'s ``__all__``);
4. only kafkatool/spark/ imports pyspark; only kafkatool/commands/ imports typer or rich;
5. no module is named with a sibling's name as a prefix (``dump_render`` beside ``dump``), nor with its
   own package's (``dump/dump_render.py``): a prefix standing in for a package is a package.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

LAYERS: dict[str, int] = {
    "errors": 0, "constants": 0, "_accel": 0, "util": 0,
    "record": 1, "log": 2,
    "dump": 3, "reindex": 3, "convert": 3, "fetch": 3, "sample": 3, "scan": 3, "canary": 3, "decoders": 3,
    "metadata": 3, "info": 3, "listoffsets": 3,
    "spark": 4, "commands": 5, "__main__": 5,
}
ENGINES = {name for name, layer in LAYERS.items() if layer == 3}
ONLY_IN = {"pyspark": "spark", "typer": "commands", "rich": "commands", "click": "commands"}


@dataclass
class Module:
    name: str  # kafkatool.dump.engine
    path: Path
    is_package: bool
    imports: list[tuple[str, list[str], int]] = field(default_factory=list)  # (module, names imported, line)


def load(root: Path) -> dict[str, Module]:
    mods: dict[str, Module] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        pkg = parts[-1] == "__init__"
        if pkg:
            parts.pop()
        name = ".".join(parts)
        mods[name] = Module(name, path, pkg)
    for m in mods.values():
        tree = ast.parse(m.path.read_text(encoding="utf-8"), str(m.path))
        here = m.name if m.is_package else m.name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    m.imports.append((a.name, [], node.lineno))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                m.imports.append((base, [a.name for a in node.names], node.lineno))
    return mods


def _layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def _resolve(target: str, names: list[str], mods: dict[str, Module]) -> list[str]:
    """The kafkatool modules an import statement loads: ``from a.b import c`` is a.b.c when that is a module."""
    out = []
    if names:
        for n in names:
            if f"{target}.{n}" in mods:
                out.append(f"{target}.{n}")
            elif target in mods:
                out.append(target)
    else:
        t = target
        while t and t not in mods:
            t = t.rpartition(".")[0]
        if t:
            out.append(t)
    return list(dict.fromkeys(out))


def _public(pkg: Module) -> set[str]:
    tree = ast.parse(pkg.path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            value = ast.literal_eval(node.value)
            return set(value)
    return set()


def violations(root: Path) -> list[str]:
    mods = load(root)
    out: list[str] = []
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for m in mods.values():
        src_top = _layer(m.name)
        rel = m.path.relative_to(root.parent)
        for target, names, line in m.imports:
            top = target.split(".")[0]
            if top in ONLY_IN and src_top != ONLY_IN[top]:
                out.append(f"{rel}:{line}: imports {top}: only kafkatool/{ONLY_IN[top]}/ may")
            if top != "kafkatool":
                continue
            for dep in _resolve(target, names, mods):
                if dep == m.name:
                    continue
                graph[m.name].add(dep)
                dst_top = _layer(dep)
                if src_top is None or dst_top is None:
                    continue
                ls, ld = LAYERS.get(src_top), LAYERS.get(dst_top)
                if ls is None or ld is None:
                    out.append(f"{rel}:{line}: kafkatool.{src_top if ls is None else dst_top} has no layer")
                    continue
                if ld > ls:
                    out.append(f"{rel}:{line}: upward import {m.name} -> {dep} ({src_top} may not import {dst_top})")
                elif src_top in ENGINES and dst_top in ENGINES and src_top != dst_top:
                    pkg = f"kafkatool.{dst_top}"
                    public = _public(mods[pkg])
                    if target != pkg or not names or any(n not in public for n in names):
                        wanted = ", ".join(names) or target
                        out.append(f"{rel}:{line}: {m.name} imports {wanted} from {target}: another engine's "
                                   f"internals (import public names from {pkg}, listed in its __all__)")
    for cycle in _cycles(graph):
        out.append("import cycle: " + " -> ".join(cycle + [cycle[0]]))
    out += _prefixes(root)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _prefixes(root: Path) -> list[str]:
    out = []
    for d in sorted([root, *(p for p in root.rglob("*") if p.is_dir() and (p / "__init__.py").exists())]):
        names = sorted({p.stem for p in d.glob("*.py") if p.stem != "__init__"} |
                       {p.name for p in d.iterdir() if p.is_dir() and (p / "__init__.py").exists()})
        for n in names:
            bare = n.lstrip("_")
            if bare.startswith(d.name + "_"):
                out.append(f"{d.relative_to(root.parent)}/{n}: named with its package's name as a prefix")
            for other in names:
                o = other.lstrip("_")
                if o != bare and bare.startswith(o + "_"):
                    out.append(f"{d.relative_to(root.parent)}/{n}: named with its sibling {other}'s name as a prefix")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0] if args else Path(__file__).resolve().parents[2] / "kafkatool")
    found = violations(root)
    for line in found:
        print(line)
    print(f"layer check: {len(found)} violation(s) in {root}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
