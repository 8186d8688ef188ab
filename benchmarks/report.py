"""Render results JSONs of ``python -m benchmarks`` as Markdown: one section, or the docs site's performance page.

    python -m benchmarks report RESULTS.json [--title "0.2.0"] [--wall]     # one run's section, on stdout
    python -m benchmarks report --page docs/performance.md [--check]        # the page, from benchmarks/results/

A section names the exact command, the git commit and the dates, then one table of throughput ratios (one line
per scenario, one column per row, each cell ``start-up excluded (whole process)`` by CPU time with ✓/✗ against
the issue's target) and one table of peak RSS.

The page is every run in benchmarks/results/ that has notes: ``NAME.json`` (the run) and ``NAME.md`` (its title
as the first ``# `` line, then what the numbers say; ``<!-- report: --wall -->`` adds the wall-time table),
newest first, each section followed by its notes; then the hand-written pages (``DOCUMENTS`` first: the profiles
and the history of earlier measurements; then any other note without a run, such as the suite's own time, by name)
and a list of the other results files. Nothing else is on it, so the
page cannot drift from the results (tests/test_benchmarks.py regenerates and compares it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
# Notes in benchmarks/results/ that belong to no single run, in the order the page shows them.
DOCUMENTS = ("startup.md", "where-the-time-goes.md", "hostile-memory.md", "history.md")

SHORT = {
    "dump": "dump (shallow)",
    "dump-deep": "dump --deep",
    "dump-deep-kp": "dump --deep vs kafka-python",
    "reindex": "reindex-time",
    "reindex-floor": "reindex-time's floor (header walk)",
    "reindex-floor-fresh": "the floor, fresh process",
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


def _demote(markdown: str) -> str:
    """Every heading one level down (outside code blocks): a notes file's ``# title`` is a section of the page."""
    out, code = [], False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            code = not code
        if not code and re.match(r"#+ ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def _notes(path: Path) -> tuple[str, str, bool]:
    """A notes file: its title, its body and whether the wall-time table is wanted."""
    text = path.read_text()
    first, _, body = text.partition("\n")
    if not first.startswith("# "):
        raise SystemExit(f"{path}: the first line of a results note is its title ('# ...')")
    wall = "<!-- report: --wall -->" in body
    body = body.replace("<!-- report: --wall -->", "").strip("\n")
    return first[2:].strip(), body, wall


def page(results: Path = RESULTS) -> str:
    """The performance page of the docs site, from the results directory alone (see the module docstring)."""
    runs, others = [], []
    for j in sorted(results.glob("*.json")):
        d = json.loads(j.read_text())
        if isinstance(d, dict) and d.get("schema") == 2 and j.with_suffix(".md").exists():
            runs.append((d["started"], j, d))
        else:
            others.append(j)
    notes = {p.name for p in results.glob("*.md")} - {j.with_suffix(".md").name for _, j, _ in runs}
    # Hand-written pages: the two known ones first, then any other measurement note (suite time, memory...).
    documents = [n for n in DOCUMENTS if n in notes] + sorted(notes - set(DOCUMENTS))
    out = ["<!-- generated by `python -m benchmarks report --page docs/performance.md` from benchmarks/results/; "
           "do not edit -->", "", "# Performance", "",
           "kafkatool's commands measured against Apache Kafka 3.9.1's own record code (kafka-clients through "
           "`kafka-ref`) and kafka-python's reader, on the same files in the same run, as throughput ratios; and the "
           "peak memory of every single-process command. The machines are shared and noisy: read the same-run "
           "ratios, not the absolute times. How to run the suite and what each row measures: `benchmarks/README.md`"
           "; every figure below comes from a results file in `benchmarks/results/`.", "",
           "## Results, newest first", ""]
    for _, j, d in sorted(runs, key=lambda r: r[0], reverse=True):
        title, body, wall = _notes(j.with_suffix(".md"))
        out += [render(d, title, wall).rstrip("\n"), "", f"Results file: `benchmarks/results/{j.name}`.", ""]
        if body:
            out += [_demote(_demote(body)), ""]
    for name in documents:
        out += [_demote((results / name).read_text().rstrip("\n")), ""]
    if others:
        out += ["## Other results files", "",
                "Runs and one-off measurements the sections above cite or summarise, kept as measured:", ""]
        for j in others:
            d = json.loads(j.read_text())
            command = d.get("command") if isinstance(d, dict) else None
            started = d.get("started") if isinstance(d, dict) else None
            what = f": `{command}`" if command else ""
            when = f" ({str(started)[:10]})" if started else ""
            out.append(f"* `{j.name}`{when}{what}")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks report", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="?", help="one results JSON: print its section")
    ap.add_argument("--title", help="section title, e.g. the release (default: kafkatool version at git describe)")
    ap.add_argument("--wall", action="store_true", help="add the table of wall-time ratios")
    ap.add_argument("--page", type=Path, metavar="docs/performance.md",
                    help="write the docs site's performance page from --results-dir")
    ap.add_argument("--results-dir", type=Path, default=RESULTS, help="default: benchmarks/results")
    ap.add_argument("--check", action="store_true", help="with --page: exit 1 if the page is stale, write nothing")
    a = ap.parse_args(argv)
    if a.page is not None:
        text = page(a.results_dir)
        if a.check:
            if not a.page.exists() or a.page.read_text() != text:
                print(f"{a.page} is stale: run `python -m benchmarks report --page {a.page}`", file=sys.stderr)
                return 1
            return 0
        a.page.write_text(text)
        return 0
    if a.results is None:
        ap.error("give a results JSON, or --page")
    d = json.loads(a.results.read_text())
    if d.get("schema") != 2:
        raise SystemExit(f"{a.results}: not a results file of this suite (schema 2)")
    sys.stdout.write(render(d, a.title, a.wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
