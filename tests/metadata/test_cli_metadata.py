"""``kafkatool metadata`` as a command: a live broker's lock, formats, the exit codes of its usage errors."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from tests.metadata.fixtures import MetadataDirBuilder, partition, topic
from tests.support.cli import run_cli


def _log_dir(tmp_path: Path) -> Path:
    d = tmp_path / "meta"
    b = MetadataDirBuilder(d / "__cluster_metadata-0")
    b.append(topic("orders", 1), partition(1, 0, [1, 2], 2))
    b.write_log()
    (d / "meta.properties").write_text("node.id=1\nversion=1\ncluster.id=abc\n")
    return d


def test_a_held_lock_is_refused_unless_live(tmp_path: Path) -> None:
    d = _log_dir(tmp_path)
    fd = os.open(d / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX)  # what a live broker holds
    try:
        for target in (d, d / "__cluster_metadata-0"):
            r = run_cli("metadata", target)
            assert r.returncode == 3 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
        r = run_cli("metadata", d, "--live", "-f", "json")
        assert r.returncode == 0 and "lock" in r.stderr
        assert json.loads(r.stdout.splitlines()[0])["image"]["topics"][0]["name"] == "orders"
    finally:
        os.close(fd)


def test_text_table_and_usage_errors(tmp_path: Path) -> None:
    d = _log_dir(tmp_path)
    text = run_cli("metadata", d, "-f", "text")
    assert text.returncode == 0 and "orders-0   2       0" in text.stdout
    table = run_cli("metadata", d, "-f", "table")
    assert table.returncode == 0 and "orders-0" in table.stdout and "partitions" in table.stdout
    for args, words in ((["--at-offset", "1", "--at-time", "5"], "--at-offset and --at-time"),
                        (["--diff", "0", "1", "--at-offset", "1"], "--diff"),
                        (["--kafka-version", "2.8"], "--kafka-version: 2.8"),
                        (["--at-offset", "-1"], "--at-offset")):
        r = run_cli("metadata", d, *args)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    old = run_cli("metadata", d, "--kafka-version", "3.9", "-f", "json")
    assert old.returncode == 0
