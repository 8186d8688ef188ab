"""reindex-time on a crashed broker's log dir with a follower's segment, a 3.6 leader's time index, a log cut
under its indexes and a deleted .timeindex (tests/support/reindex_demo.py builds it, byte for byte): every line
``--check``, ``--recovery-report`` and ``--verify`` print for it is one of ``demo_output.txt`` (what the README
showed before the docs moved to sample data; the summary lines and JSON ``seconds`` carry timings and are left
out)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.reindex_demo import build_demo


def _untimed(line: str) -> str:
    return re.sub(r',"seconds":[0-9.e-]+', "", line)


def _stdout(cwd: Path, *args: str) -> tuple[int, list[str]]:
    p = run_cli("reindex-time", *args, cwd=cwd)
    assert "Traceback" not in p.stderr, p.stderr
    # What a terminal shows: findings go to stderr (as in every command), written files and JSON to stdout; the
    # "checked N segments ... in T s" summary carries timings.
    err = [line for line in p.stderr.splitlines() if not line.startswith("checked ")]
    return p.returncode, p.stdout.splitlines() + err


def test_the_demo_dir_prints_the_known_findings(tmp_path: Path) -> None:
    expected = (Path(__file__).with_name("demo_output.txt")).read_text()
    lines = {_untimed(line) for line in expected.splitlines() if not line.startswith("# ")}
    build_demo(tmp_path / "kafka-logs")
    runs = [("kafka-logs",), ("kafka-logs", "--recovery-report"),
            ("kafka-logs/payments-0", "--recovery-report", "--format", "json"),
            ("kafka-logs/payments-0/00000000000000003000.log", "--format", "json")]
    seen = []
    for args in runs:
        rc, out = _stdout(tmp_path, *args)
        assert rc == 1, args
        for line in out:
            if line.startswith(("log dir ", '{"type":"log-dir"', '{"type":"summary"')):
                continue  # the log dir's absolute path; timings
            seen.append(line)
            assert _untimed(line) in lines, (args, line)
    log = tmp_path / "kafka-logs/payments-0/00000000000000000000.log"
    with open(log, "r+b") as f:  # one byte of a batch's records overwritten
        f.seek(527100)
        f.write(b"X")
    rc, out = _stdout(tmp_path, "kafka-logs/payments-0", "--verify")
    assert rc == 1
    for line in out:
        assert _untimed(line) in lines, line
    assert any("past-invalid-batch" in line for line in out) and len(seen) > 15
