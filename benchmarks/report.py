"""Render a results JSON of ``python -m benchmarks`` as the Markdown table BENCHMARKS.md shows.

``python -m benchmarks.report RESULTS.json``: one line per scenario, one column per row kind, each
cell ``cpu ratio (wall ratio)``; a trailing mark says whether the issue's target holds (by CPU).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def render(path: Path) -> str:
    d = json.loads(path.read_text())
    rows = d["rows"]
    kinds: list[str] = []
    for r in rows:
        if r["row"] not in kinds:
            kinds.append(r["row"])
    by: dict[tuple[str, str], dict[str, object]] = {(r["scenario"], r["row"]): r for r in rows}
    scenarios: list[str] = []
    for r in rows:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    out = ["| scenario | MB | " + " | ".join(kinds) + " |", "|---|---:|" + "---:|" * len(kinds)]
    for s in scenarios:
        mb = next(r["file_mb"] for r in rows if r["scenario"] == s)
        cells = []
        for k in kinds:
            r = by.get((s, k))
            if r is None:
                cells.append("")
                continue
            if r["ratio_cpu"] is None:
                cells.append("error" if r.get("error") else "-")
                continue
            mark = {"yes": " ✓", "NO": " ✗"}.get(str(r["ok"]), "")
            cells.append(f"{r['ratio_cpu']:.2f} ({r['ratio_wall']:.2f}){mark}")
        out.append(f"| {s} | {mb:.0f} | " + " | ".join(cells) + " |")
    m = d["machine"]
    out.append("")
    end_load = m.get("loadavg_end", [float("nan")])[0]
    out.append(f"Run {d['started']}, {m['cpu']}, {m['cores']} cores, load average {m['loadavg'][0]:.1f} at start and "
               f"{end_load:.1f} at end, Python {m['python']}, kafkatool {d['iterations']} "
               f"iterations after {d['warmup']} warm-up, Kafka {d.get('java_iterations', d['iterations'])} after "
               f"{d.get('java_warmup', d['warmup'])}, {d['size_mb']:g} MB files.")
    return "\n".join(out)


def rss(path: Path) -> str:
    d = json.loads(path.read_text())
    out = ["| scenario | MB | pass | peak RSS MB |", "|---|---:|---|---:|"]
    seen = set()
    for r in d["rows"]:
        m = d["measurements"].get(r["ours"])
        if m is None or r["ours"] in seen:
            continue
        seen.add(r["ours"])
        out.append(f"| {r['scenario']} | {r['file_mb']:.0f} | {r['ours'].split(':')[1]} | {m['peak_rss_mb']:.0f} |")
    return "\n".join(out)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--rss":
        print(rss(Path(args[1])))
    else:
        print(render(Path(args[0])))
