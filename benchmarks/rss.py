"""The peak-RSS set: every single-process command once, at default settings, over a 1 GiB segment.

Part of ``python -m benchmarks`` (``--sets rss``; ``--rss-size``, ``--rss-codecs``, ``--rss-commands``). Inputs
are written by the command under test itself, ``kafkatool sample`` (its own row), as a broker log dir:

* ``v2-<codec>`` for each ``--rss-codecs`` (default lz4 and none): ``sample DIR --profile bench --codec C
  --partition-bytes SIZE --segment-bytes SIZE``: one partition ``bench-0`` whose first segment fills
  ``SIZE`` (1 KiB values, 16 records a batch) plus the small active segment after the roll;
* ``v1``: ``sample DIR --topics legacy --magic 1 --codec none,lz4 --value-bytes 1024 --partition-bytes SIZE
  --segment-bytes SIZE``: one legacy partition ``legacy-0`` (uncompressed messages and lz4 wrappers
  drawn per batch), the input of ``upconvert`` and ``canary``.

Each row is one ``python -m kafkatool ...`` process with no ``--memory`` and no ``KAFKATOOL_MEMORY``; its
peak is ``ru_maxrss`` from ``wait4`` (interpreter, imports, every resident mapped page of the input and
every buffer included). Target: under 150 MB (issue 10; downconvert's own issue allowed 200 MB).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks import procs
from benchmarks.data import ROOT, py_env

TARGET_MB = 150.0
INT32_MAX = "2147483647"

# name -> (input, argv template); {part} {logdir} {out} {work} are filled in.
RSS_ROWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sample": ("v2/v1", ("sample", "{logdir}", "...", "--partition-bytes", "SIZE", "--segment-bytes", "SIZE")),
    "dump": ("v2", ("dump", "--summary-only", "-f", "json", "{part}")),
    "dump-deep": ("v2", ("dump", "--deep", "--verify", "--summary-only", "-f", "json", "{part}")),
    "reindex": ("v2", ("reindex-time", "-f", "json", "{part}")),
    "downconvert-v1": ("v2", ("downconvert", "--to-magic", "1", "-f", "json", "{part}", "{out}")),
    "downconvert-v0": ("v2", ("downconvert", "--to-magic", "0", "-f", "json", "{part}", "{out}")),
    "fetch-sim": ("v2", ("fetch-sim", "{part}", "--to-magic", "1", "--partition-max-bytes", INT32_MAX,
                         "--fetch-max-bytes", INT32_MAX, "--broker-fetch-max-bytes", INT32_MAX, "-f", "json")),
    "spark-scan-local": ("v2", ("spark-scan", "{logdir}", "--engine", "local-processes", "-j", "1", "-f", "json")),
    "dump-deep-legacy": ("v1", ("dump", "--deep", "--verify", "--summary-only", "-f", "json", "{part}")),
    "reindex-legacy": ("v1", ("reindex-time", "-f", "json", "{part}")),
    "upconvert": ("v1", ("upconvert", "-f", "json", "{part}", "{out}")),
    "canary-plan": ("v1", ("canary", "plan", "-f", "json", "{logdir}")),
    "canary-run": ("v1", ("canary", "run", "{logdir}", "-p", "legacy-0", "-w", "{work}", "-f", "json")),
    "canary-verify": ("v1", ("canary", "verify", "{work}", "-f", "json")),
}


def _sample_argv(kind: str, logdir: Path, size: str) -> list[str]:
    shape = (["--topics", "legacy", "--magic", "1", "--codec", "none,lz4", "--value-bytes", "1024"] if kind == "v1"
             else ["--profile", "bench", "--codec", kind.split("-", 1)[1]])
    return ["sample", str(logdir), *shape, "--partition-bytes", size, "--segment-bytes", size, "-f", "json"]


def _kafkatool(argv: list[str]) -> procs.Proc:
    return procs.run([sys.executable, "-m", "kafkatool", *argv], env=py_env(), cwd=ROOT)


def _result(name: str, kind: str, logdir: Path, p: procs.Proc) -> dict[str, Any]:
    logs = sorted(logdir.glob("*/*.log"))
    peak = p.peak_rss_mb
    rec = {"command": name, "input": kind, "argv": ["kafkatool", *p.argv[3:]], "rc": p.rc,
           "peak_rss_mb": round(peak, 1), "cpu_s": round(p.cpu_s, 2), "wall_s": round(p.wall_s, 2),
           "input_bytes": sum(f.stat().st_size for f in logs),
           "largest_segment_bytes": max((f.stat().st_size for f in logs), default=0),
           "target_mb": TARGET_MB, "ok": p.rc in (0, 1) and peak < TARGET_MB,
           "error": None if p.rc in (0, 1) else (p.stderr or p.stdout).strip()[-500:]}
    line = (f"rss {name:<18} {kind:<8} {rec['largest_segment_bytes'] / 2**20:>7.0f} MiB segment  "
            f"peak {peak:>6.1f} MB  {'ok' if rec['ok'] else 'OVER' if p.rc in (0, 1) else 'ERROR'}  "
            f"cpu {p.cpu_s:>6.1f} s  wall {p.wall_s:>6.1f} s")
    print(line + (f"  {rec['error'].splitlines()[-1][:160]}" if rec["error"] else ""), flush=True)
    return rec


def run_rss(a: argparse.Namespace) -> list[dict[str, Any]]:
    wanted = [w.strip() for w in (a.rss_commands or ",".join(RSS_ROWS)).split(",") if w.strip()]
    unknown = set(wanted) - set(RSS_ROWS)
    if unknown:
        raise SystemExit(f"unknown --rss-commands {', '.join(sorted(unknown))}; known: {', '.join(RSS_ROWS)}")
    base = a.data_dir / f"rss-{a.rss_size}"
    base.mkdir(parents=True, exist_ok=True)
    kinds = [f"v2-{c.strip()}" for c in a.rss_codecs.split(",") if c.strip()]
    if any(RSS_ROWS[w][0] == "v1" for w in wanted):
        kinds.append("v1")
    results: list[dict[str, Any]] = []
    for kind in kinds:
        logdir = base / kind
        if "sample" in wanted or not (logdir / "meta.properties").is_file():
            # The input is written by the command under test: the sample row (regenerated for every run).
            shutil.rmtree(logdir, ignore_errors=True)
            p = _kafkatool(_sample_argv(kind, logdir, a.rss_size))
            if "sample" in wanted:
                results.append(_result("sample", kind, logdir, p))
            if p.rc != 0:
                raise SystemExit(f"kafkatool sample failed for {logdir}: {p.stderr[-2000:]}")
        part = next(d for d in sorted(logdir.iterdir()) if d.is_dir())
        work = base / f"canary-work-{kind}"
        out = base / f"out-{kind}"
        for name in wanted:
            need, template = RSS_ROWS[name]
            if name == "sample" or need != kind.split("-")[0]:
                continue
            shutil.rmtree(out, ignore_errors=True)
            if name == "canary-run" or (name == "canary-verify" and not (work / "manifest.json").is_file()):
                shutil.rmtree(work, ignore_errors=True)
            if name == "canary-verify" and not (work / "manifest.json").is_file():
                _kafkatool(["canary", "run", str(logdir), "-p", part.name, "-w", str(work), "-q"])  # not measured
            subst = {"{part}": str(part), "{logdir}": str(logdir), "{out}": str(out), "{work}": str(work)}
            p = _kafkatool([subst.get(x, x) for x in template])
            results.append(_result(name, kind, logdir, p))
            shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return results
