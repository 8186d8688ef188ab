"""``python -m benchmarks.beforeafter BEFORE.json AFTER.json``: two runs of the same rows (a ``--tree`` run of an
older tree and this checkout's, made one after the other) side by side, as a Markdown table on stdout.

For each (scenario, row): our CPU milliseconds per segment with start-up excluded (``net_cpu_ms``) and for the
whole process over one segment (``one_cpu_ms``), before and after, the change, and the ratio to Kafka (or the
peer) in each run; then the peak RSS rows. A row is marked when its net CPU is more than 5% worse and more than
twice its runs' own spread (the ``~`` of the ratio tables: work within the noise is not a regression)."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any


def _load(path: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(path).read_text())
    return data


def _spread(m: dict[str, Any]) -> float:
    cpus = [r["cpu_s"] * 1e3 for r in m.get("runs", []) if not r.get("warmup") and r.get("rc") == 0]
    copies = max(1, int(m.get("copies") or 1))
    return (max(cpus) - min(cpus)) / copies if len(cpus) > 1 else 0.0


def _f(x: Any, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def table(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = ["| scenario | row | net CPU ms before | after | change | whole process ms before | after | "
           "ratio before | after | |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    rows_before = {(r["scenario"], r["row"]): r for r in before["rows"]}
    worse = 0
    for r in after["rows"]:
        b = rows_before.get((r["scenario"], r["row"]))
        mb, ma = before["measurements"].get(b["ours"]) if b else None, after["measurements"].get(r["ours"])
        if b is None or mb is None or ma is None or mb.get("net_cpu_ms") is None or ma.get("net_cpu_ms") is None:
            continue
        nb, na = mb["net_cpu_ms"], ma["net_cpu_ms"]
        change = na / nb - 1 if nb > 0 else 0.0
        noise = 2 * max(_spread(mb), _spread(ma))
        flag = "worse" if change > 0.05 and na - nb > noise else ("~" if abs(na - nb) <= noise else "")
        worse += flag == "worse"
        out.append(f"| {r['scenario']} | {r['row']} | {nb:.1f} | {na:.1f} | {change:+.0%} | "
                   f"{_f(mb.get('one_cpu_ms'), '.0f')} | {_f(ma.get('one_cpu_ms'), '.0f')} | "
                   f"{_f(b.get('ratio_cpu'), '.2f')} | {_f(r.get('ratio_cpu'), '.2f')} | {flag} |")
    out.append("")
    out.append(f"{worse} row(s) more than 5% worse beyond the noise.")
    rss_before = {(x.get("command"), x.get("input")): x for x in before.get("rss", [])}
    rss_rows = []
    for x in after.get("rss", []):
        y = rss_before.get((x.get("command"), x.get("input")))
        if y is not None and y.get("peak_rss_mb") and x.get("peak_rss_mb"):
            rss_rows.append(f"| {x.get('command')} | {x.get('input')} | {y['peak_rss_mb']:.1f} | "
                            f"{x['peak_rss_mb']:.1f} | {x['peak_rss_mb'] / y['peak_rss_mb'] - 1:+.0%} |")
    if rss_rows:
        out += ["", "| peak RSS | input | before MB | after MB | change |", "|---|---|---:|---:|---:|", *rss_rows]
        changes = [float(r.split("|")[5].strip().rstrip("%")) for r in rss_rows]
        out.append(f"\nMedian peak-RSS change {statistics.median(changes):+.0f}%.")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(table(_load(args[0]), _load(args[1]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
