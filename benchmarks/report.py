"""Render a results JSON of ``python -m benchmarks`` as the Markdown section BENCHMARKS.md keeps per release.

    python -m benchmarks.report RESULTS.json [--title "0.2.0"] [--wall] [--insert BENCHMARKS.md]

The section names the exact command, the git commit and the dates, then one table of throughput ratios
(one line per scenario, one column per row, each cell ``start-up excluded (whole process)`` by CPU time with
✓/✗ against the issue's target) and one table of peak RSS. ``--insert`` puts the section at the top of the
results in BENCHMARKS.md (after the ``<!-- results: newest first -->`` marker), newest first.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- results: newest first -->"

SHORT = {
    "dump": "dump (shallow)",
    "dump-deep": "dump --deep",
    "dump-deep-kp": "dump --deep vs kafka-python",
    "reindex": "reindex-time",
    "downconvert-v1": "downconvert v1",
    "downconvert-v0": "downconvert v0",
    "fetch-sim": "fetch-sim",
    "spark-scan-local": "spark-scan local-processes",
    "spark-scan-spark": "spark-scan local[2]",
}


def _order(items: list[str]) -> list[str]:
    seen: list[str] = []
    for x in items:
        if x not in seen:
            seen.append(x)
    return seen


def _cell(r: dict[str, Any], wall: bool) -> str:
    main, proc = ("ratio_wall", "ratio_wall_process") if wall else ("ratio_cpu", "ratio_cpu_process")
    if r.get("error"):
        return "error"
    if r[main] is None:
        return "-"
    text = ("~" if r.get("resolved") is False else "") + f"{r[main]:.2f}"
    if r.get(proc) is not None and abs(r[proc] - r[main]) > 0.005:
        text += f" ({r[proc]:.2f})"
    if not wall and r.get("ok") is not None:
        text += " ✓" if r["ok"] else " ✗"
    if r.get("mismatch"):
        text += " ⚠"
    return text


def ratio_table(d: dict[str, Any], wall: bool = False, library: bool = False) -> str:
    rows = [r for r in d["rows"] if bool(r.get("library")) == library]
    if not rows:
        return ""
    kinds = _order([r["row"] for r in rows])
    scenarios = _order([r["scenario"] for r in rows])
    by = {(r["scenario"], r["row"]): r for r in rows}
    out = ["| scenario | MB | " + " | ".join(SHORT.get(k, k) for k in kinds) + " |",
           "|---|---:|" + "---:|" * len(kinds)]
    for s in scenarios:
        mb = next(r["file_mb"] for r in rows if r["scenario"] == s)
        cells = [_cell(by[(s, k)], wall) if (s, k) in by else "" for k in kinds]
        out.append(f"| {s} | {mb:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def legend(d: dict[str, Any]) -> str:
    seen: dict[str, dict[str, Any]] = {}
    for r in d["rows"]:
        seen.setdefault(r["row"], r)
    out = ["| column | what | kafkatool side | copies read per run | peer | targets |", "|---|---|---|---:|---|---|"]
    targets: dict[str, set[str]] = {}
    copies: dict[str, set[int]] = {}
    for r in d["rows"]:
        targets.setdefault(r["row"], set()).add("-" if r["target"] is None else f"≥ {r['target']:g}")
        copies.setdefault(r["row"], set()).add(int(r.get("copies", 1)))
    for k, r in seen.items():
        c = sorted(copies[k])
        out.append(f"| {SHORT.get(k, k)} | {r['title']} | `{r['ours_command']}` | "
                   f"{c[0] if len(c) == 1 else f'{c[0]}-{c[-1]}'} | `{r['peer_command']}` | "
                   f"{', '.join(sorted(targets[k]))} |")
    return "\n".join(out)


def rss_table(d: dict[str, Any]) -> str:
    out = ["| row | command | input | segment MiB | peak RSS MB | < 150 MB | CPU s | wall s |",
           "|---|---|---|---:|---:|---|---:|---:|"]
    for r in d["rss"]:
        verdict = ("error: " + r["error"].splitlines()[-1][:80]) if r.get("error") else ("yes" if r["ok"] else "**NO**")
        cmd = " ".join(Path(x).name if x.startswith("/") else x for x in r["argv"])
        out.append(f"| {r['command']} | `{cmd}` | {r['input']} | {r['largest_segment_bytes'] / 2**20:.0f} | "
                   f"{r['peak_rss_mb']:.1f} | {verdict} | {r['cpu_s']:.1f} | {r['wall_s']:.1f} |")
    return "\n".join(out)


def counts_note(d: dict[str, Any]) -> str:
    bad = [f"{r['scenario']} {r['row']}: {r['mismatch']}" for r in d["rows"] if r.get("mismatch")]
    errors = [f"{r['scenario']} {r['row']}: {r['error'].splitlines()[-1][:200]}" for r in d["rows"] if r.get("error")]
    out = []
    if bad:
        out.append("Counts that differ between kafkatool and the peer (⚠): " + "; ".join(bad) + ".")
    if errors:
        out.append("Errors: " + "; ".join(errors) + ".")
    return "\n\n".join(out)


def _kafka_version(text: str | None) -> str:
    try:
        v = json.loads(text or "")
    except ValueError:
        return ""
    return (f"; kafka-clients {v.get('kafka_clients')} on {v.get('jvm')} {v.get('java')} "
            f"(lz4-java {v.get('lz4_java')}, snappy-java {v.get('snappy_java')}, zstd-jni {v.get('zstd_jni')})")


def render(d: dict[str, Any], title: str | None = None, wall: bool = False) -> str:
    g, m, st = d["git"], d["machine"], d["settings"]
    head = title or f"{m.get('kafkatool', '')} at {g['describe']}".strip()
    dirty = ", with uncommitted changes" if g.get("dirty") else ""
    lines = [f"### {head} ({d['started'][:10]})", "",
             f"Command: `{d['command']}`, at commit `{g['commit'][:12]}` ({g['branch']}, committed "
             f"{g['commit_date']}{dirty}); run {d['started']} to {d['finished']}.",
             f"Machine: {m['cpu']}, {m['cores']} cores, load average {m['loadavg'][0]:.1f} at start and "
             f"{m.get('loadavg_end', [float('nan')])[0]:.1f} at end; Python {m['python']}"
             + _kafka_version(m.get("kafka_ref")) + f"; JVM options `{st['java_opts']}`."]
    if d["rows"]:
        lines += ["", f"Settings: {st['size_mb']:g} MB segments; kafkatool commands {st['iterations']} timed runs "
                  f"after {st['warmup']} warm-up, plus {st['iterations']} runs on a 4-batch file of the same shape "
                  f"(the fixed cost); Kafka {st['java_iterations']} timed passes after {st['java_warmup']} warm-up "
                  "passes in one JVM"
                  + (f"; fast commands read {st['read_scale']:g} x the release run's bytes (--read-scale)"
                     if st.get("read_scale", 1.0) != 1.0 else "") + ".", "",
                  "Throughput ratio = kafkatool / peer, by CPU time, medians. Each cell: start-up excluded on both "
                  "sides (our command minus its fixed cost, against Kafka's warm thread CPU), then in brackets the "
                  "whole kafkatool process over one segment (start-up included). ✓/✗: issue 10's target holds / "
                  "does not; ~: the command's work was within twice the spread of its repeated timings (indicative "
                  "only); ⚠: the two sides counted different data. Fast commands read the segment several times per "
                  "run (hard-linked partitions, see the legend) so that their work stands out of the start-up noise.",
                  "", ratio_table(d)]
        lib = ratio_table(d, library=True)
        if lib:
            lines += ["", "Library passes (in-process, start-up excluded), to locate a command's gap:", "", lib]
        if wall:
            lines += ["", "The same by wall time:", "", ratio_table(d, wall=True)]
        lines += ["", legend(d)]
        note = counts_note(d)
        if note:
            lines += ["", note]
    if d.get("rss"):
        size = st["rss_size"]
        lines += ["", f"Peak RSS at default settings (no `--memory`), one process each, over a {size} segment "
                  "(`ru_maxrss`; MB = 10^6 bytes):", "", rss_table(d)]
    return "\n".join(lines) + "\n"


def insert(path: Path, section: str) -> None:
    text = path.read_text()
    if MARKER not in text:
        raise SystemExit(f"{path} has no {MARKER!r} line to insert after")
    before, after = text.split(MARKER, 1)
    path.write_text(before + MARKER + "\n\n" + section + after)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--title", help="section title, e.g. the release (default: kafkatool version at git describe)")
    ap.add_argument("--wall", action="store_true", help="add the table of wall-time ratios")
    ap.add_argument("--insert", type=Path, metavar="BENCHMARKS.md", help="insert the section at the top of the results")
    a = ap.parse_args(argv)
    d = json.loads(a.results.read_text())
    if d.get("schema") != 2:
        raise SystemExit(f"{a.results}: not a results file of this suite (schema 2)")
    section = render(d, a.title, a.wall)
    if a.insert:
        insert(a.insert, section)
    else:
        sys.stdout.write(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
