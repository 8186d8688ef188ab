"""Before/after: the same library passes on two checkouts, interleaved in one run.

``python -m benchmarks.compare OLD_TREE FILE... [--passes deep,recover,downconvert]`` runs each pass
with ``PYTHONPATH=OLD_TREE`` and with this checkout, alternating, and prints the CPU-time speed-up
(old CPU / new CPU, medians). OLD_TREE is a directory holding an older ``kafkatool/`` package, e.g.
``git archive <commit> kafkatool | tar -x -C /tmp/old``. ``verify`` is timed as ``verify-batches``
on trees without ``verify_segment``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from benchmarks import procs
from benchmarks.data import ROOT


def _time(tree: Path, name: str, path: str, iterations: int) -> tuple[float, dict[str, object]]:
    env = dict(os.environ)
    # benchmarks/ always comes from this checkout; kafkatool from ``tree``.
    env["PYTHONPATH"] = f"{tree}{os.pathsep}{ROOT}"
    extra = ["--to-magic", "1"] if name == "downconvert" else []
    if name == "verify" and not (tree / "kafkatool" / "file_records.py").read_text().count("def verify_segment"):
        name = "verify-batches"
    code = ("import sys; sys.path.insert(0, sys.argv.pop(1)); from benchmarks.passes import main; "
            "sys.exit(main(sys.argv[1:]))")
    p = procs.run([sys.executable, "-c", code, str(tree), name, path, "--iterations", str(iterations),
                   "--warmup", "1", *extra], env=env)
    if p.rc != 0:
        raise SystemExit(f"{name} {path} under {tree} failed: {p.stderr.strip()[-400:]}")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    return statistics.median(d["cpu_ms"]), d["result"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compare")
    ap.add_argument("old", type=Path)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--passes", default="verify,deep,recover,downconvert")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2, help="old/new alternations per pass (best of)")
    a = ap.parse_args(argv)
    print(f"{'file':<28} {'pass':<12} {'old cpu ms':>10} {'new cpu ms':>10} {'speed-up':>8}")
    for f in a.files:
        for name in a.passes.split(","):
            # The suite's inputs live in DATA/<scenario>-<size>/bench-0/: the scenario names the format.
            scenario = next((part for part in Path(f).parts if part[:3] in ("v0-", "v1-", "v2-")), "")
            if name == "downconvert" and ("-zstd-" in scenario or not scenario.startswith("v2-")):
                continue
            old: list[float] = []
            new: list[float] = []
            for _ in range(a.rounds):
                o, ro = _time(a.old, name, f, a.iterations)
                n, rn = _time(ROOT, name, f, a.iterations)
                old.append(o)
                new.append(n)
                for k in ("batches", "records", "payload_bytes", "records_converted", "out_bytes"):
                    if k in ro and k in rn and ro[k] != rn[k] and not (k == "out_bytes" and "-gzip-" in f):
                        raise SystemExit(f"{name} {f}: {k} differs: old {ro[k]} new {rn[k]}")
            o, n = min(old), min(new)
            print(f"{scenario or Path(f).name:<28} {name:<12} {o:>10.1f} {n:>10.1f} {o / n:>7.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
