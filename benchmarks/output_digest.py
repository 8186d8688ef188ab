"""Before/after check of a refactoring: the same commands over the same ``kafkatool sample`` output must
write byte-identical results.

``python -m benchmarks.output_digest run --tree SRC --work DIR --out digest.json`` runs the kafkatool of
source tree SRC (``python -m kafkatool`` with SRC first on PYTHONPATH; its C extension built in place, or
``KAFKATOOL_PURE=1`` for both trees) over a sample log dir it writes into DIR, and records the SHA-256 of
every output: stdout of ``dump --deep --format json``, the files ``reindex-time --output`` and
``downconvert --to-magic 1``/``0 --zstd-to lz4`` write, ``fetch-sim --raw`` files at several offsets and
limits, stdout of ``spark-scan --format json`` with ``--engine local-processes`` and (``--spark``) with
embedded Spark.

``python -m benchmarks.output_digest compare A.json B.json`` prints every difference; exit 1 if any.

Commands run with their working directory inside DIR and relative paths, so two runs in two work dirs
print the same bytes (absolute paths in the output have the work dir replaced). Figures that measure the
run itself (elapsed times, throughput, peak RSS) are not outputs: the JSON keys listed in ``VOLATILE`` are
dropped before hashing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

VOLATILE = {"elapsed_s", "peak_rss_bytes", "elapsed_ms", "seconds", "mb_per_s", "throughput", "wall_s", "cpu_s",
            "duration_s"}


def _strip(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _json_digest(text: str, work: Path) -> str:
    """The digest of JSON lines, with the run's own figures dropped and the work dir's path replaced."""
    h = hashlib.sha256()
    for line in text.replace(str(work), "<work>").splitlines():
        try:
            obj = _strip(json.loads(line))
        except ValueError:
            h.update(line.encode())
        else:
            h.update(json.dumps(obj, sort_keys=True).encode())
        h.update(b"\n")
    return h.hexdigest()


def _tree_digest(root: Path, work: Path) -> dict[str, str]:
    """The digest of every file under root, the work dir's path replaced (a converted dir's
    ``.kafkatool-convert.json`` names its source)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes().replace(str(work).encode(), b"<work>")
            out[str(p.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def run(tree: Path, work: Path, spark: bool) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()), NO_COLOR="1", COLUMNS="200")

    def kt(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([sys.executable, "-m", "kafkatool", *args], cwd=work, env=env, capture_output=True,
                           text=True)
        if p.returncode not in ok:
            raise SystemExit(f"kafkatool {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
        return p

    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    digest: dict[str, object] = {}
    kt("sample", "logs", "-q")
    digest["sample"] = _tree_digest(work / "logs", work)
    p = kt("dump", "logs", "--deep", "--format", "json", "-q", ok=(0, 1))
    digest["dump --deep --format json"] = {"rc": p.returncode, "stdout": _json_digest(p.stdout, work)}
    p = kt("reindex-time", "logs", "--output", "reindexed", "--format", "json", "-q", ok=(0, 1))
    digest["reindex-time --output"] = {"rc": p.returncode, "stdout": _json_digest(p.stdout, work),
                                       "files": _tree_digest(work / "reindexed", work)}
    for magic in ("1", "0"):
        dst = f"down{magic}"
        p = kt("downconvert", "logs", dst, "--to-magic", magic, "--zstd-to", "lz4", "--format", "json", "-q",
               ok=(0, 1))
        digest[f"downconvert --to-magic {magic}"] = {"rc": p.returncode, "stdout": _json_digest(p.stdout, work),
                                                     "files": _tree_digest(work / dst, work)}
    fetches = {}
    for part in ("orders-0", "payments-1", "legacy-events-0", "clickstream-0", "audit-log-0"):
        for version, offset, limit in (("3", None, "1MiB"), ("1", "700", "64KiB"), ("2", "1500", "300000")):
            name = f"fetch-{part}-v{version}-{offset}-{limit}.bin"
            args = ["fetch-sim", f"logs/{part}", "--fetch-version", version, "--partition-max-bytes", limit,
                    "--out", name, "--raw", "--format", "json", "-q"]
            if offset is not None:
                args += ["--fetch-offset", offset]
            p = kt(*args, ok=(0, 1))
            fetches[name] = {"rc": p.returncode, "stdout": _json_digest(p.stdout, work),
                             "file": hashlib.sha256((work / name).read_bytes()).hexdigest()
                             if (work / name).exists() else None}
    digest["fetch-sim --raw"] = fetches
    p = kt("spark-scan", "logs", "--engine", "local-processes", "--format", "json", "-q", ok=(0, 1))
    digest["spark-scan --engine local-processes --format json"] = {"rc": p.returncode,
                                                                  "stdout": _json_digest(p.stdout, work)}
    if spark:
        p = kt("spark-scan", "logs", "--format", "json", "-q", ok=(0, 1))
        digest["spark-scan --format json"] = {"rc": p.returncode, "stdout": _json_digest(p.stdout, work)}
    return digest


def compare(a: object, b: object, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}/{k}: only in {'B' if k not in a else 'A'}")
            else:
                out += compare(a[k], b[k], f"{where}/{k}")
        return out
    return [] if a == b else [f"{where}: {a} != {b}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.output_digest", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--spark", action="store_true", help="also spark-scan with embedded Spark (needs Java)")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        digest = run(args.tree, args.work.resolve(), args.spark)
        args.out.write_text(json.dumps(digest, indent=1, sort_keys=True) + "\n")
        return 0
    diffs = compare(json.loads(args.a.read_text()), json.loads(args.b.read_text()))
    for d in diffs:
        print(d)
    print(f"{len(diffs)} difference(s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
