"""``kafkatool spark-scan`` through the real entry point, with the process-pool engine (no JVM) and the
error paths that must stay one clear line (no pyspark, no Java, bad options)."""

from __future__ import annotations

import json
import os
import re

import pyarrow.parquet as pq

from kafkatool.scan.engine import run_local
from kafkatool.scan.plan import discover, make_plan
from tests.support.cli import run_cli
from tests.support.paths import ROOT

LOCAL = ("--engine", "local-processes", "-j", "2", "--split-size", "4KiB")


def test_stats_table_findings_and_exit_code(mixed_dir):
    r = run_cli("spark-scan", mixed_dir.path, *LOCAL)
    assert r.returncode == 1, r.stderr  # damaged-0: a CRC failure and a torn tail
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["TOPIC", "PARTITION", "SEGMENTS", "BATCHES"]
    assert any(line.split()[:2] == ["orders", "2"] for line in lines)
    assert re.search(r"kafkatool spark-scan: error: crc: \S*damaged-0/00000000000000000000.log at byte 1709: ",
                     r.stderr), r.stderr
    assert re.search(r"error: size-past-end: \S* at byte 5075: ", r.stderr), r.stderr
    assert "plan: " in r.stderr and "Traceback" not in r.stderr
    clean = run_cli("spark-scan", mixed_dir.path, *LOCAL, "--topic", "orders", "--level", "segment")
    assert clean.returncode == 0 and "damaged" not in clean.stdout


def test_json_lines_and_parquet_carry_the_same_figures(mixed_dir, tmp_path):
    out = tmp_path / "stats"
    r = run_cli("spark-scan", mixed_dir.path, *LOCAL, "--format", "json", "--output", out)
    assert r.returncode == 1
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert all(o["schema"] == 1 for o in objs)
    (total,) = [o for o in objs if o["type"] == "total"]
    want = run_local(make_plan(discover([str(mixed_dir.path)]).segments))
    assert (total["records"], total["bytes"], total["batches"]) == (want.total.records, want.total.bytes,
                                                                    want.total.batches)
    assert total["findings"] == 2
    segs = pq.read_table(out / "segments.parquet").to_pylist()
    assert len(segs) == len([o for o in objs if o["type"] == "segment"]) == len(want.segments)
    assert sum(s["records"] for s in segs) == total["records"]
    failures = pq.read_table(out / "failures.parquet").to_pylist()
    assert {(f["kind"], f["position"]) for f in failures} == {("crc", 1709), ("size-past-end", 5075)}
    assert {"partitions.parquet", "topics.parquet", "formats.parquet"} <= set(os.listdir(out))


def test_key_sharing_export_and_verify_index_in_one_run(mixed_dir, tmp_path):
    exp = tmp_path / "records"
    r = run_cli("spark-scan", mixed_dir.path, *LOCAL, "--format", "json", "--topic", "orders", "--key-sharing", "5",
                "--export-records", exp, "--verify-index", "--index-interval-bytes", "1024")
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    (ks,) = [o for o in objs if o["type"] == "keyshare"]
    assert ks["assignment"] == ["tp1: M1,M4", "tp2: M2,M5", "tp3: M3"]
    parts = [o for o in objs if o["type"] == "keyshare_partition"]
    assert [p["murmur2_match"] for p in parts] == [1.0, 1.0, 1.0]
    assert {o["type"] for o in objs} >= {"keyshare_consumer", "hot_key", "index_check", "export"}
    assert not [o for o in objs if o["type"] == "total"]  # stats only on request when another analysis runs
    assert all(o["classification"] == "ok" for o in objs if o["type"] == "index_check")
    (e,) = [o for o in objs if o["type"] == "export"]
    assert e["records"] == sum(o["records"] for o in objs if o["type"] == "keyshare_consumer")
    assert (exp / "_SUCCESS").exists() and (exp / "topic=orders" / "partition=2").is_dir()


def test_usage_errors_are_one_line(mixed_dir, tmp_path):
    for args, text in [
        (("spark-scan", tmp_path / "nope"), "no such file or directory"),
        (("spark-scan", "wasb://logs@account/kafka", *LOCAL), "cannot open filesystem with pyarrow.fs: "
         "Unrecognized filesystem type in URI: wasb://logs@account/kafka (spark-scan reads URLs with pyarrow.fs, "
         "not Spark's Hadoop FileSystem"),
        (("spark-scan", mixed_dir.path, "--from-time", "0"), "--from-time/--to-time filter --export-records"),
        (("spark-scan", mixed_dir.path, "--conf", "novalue"), "--conf takes KEY=VALUE"),
        (("spark-scan", mixed_dir.path, "--memory", "300MiB", "--master", "local[4]"), "too small for 4 task"),
        (("spark-scan", mixed_dir.path, "--key-sharing", "3", "--partitions", "nosuch=4", *LOCAL),
         "--partitions: names topics not scanned: nosuch"),
    ]:
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert text in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_missing_pyspark_and_missing_java_say_what_to_do(mixed_dir, tmp_path):
    fake = tmp_path / "fake"
    (fake / "pyspark").mkdir(parents=True)
    (fake / "pyspark" / "__init__.py").write_text("raise ImportError('No module named pyspark')\n")
    r = run_cli("spark-scan", mixed_dir.path, env={"PYTHONPATH": f"{ROOT}{os.pathsep}{fake}"})
    assert r.returncode == 2
    assert "--engine: spark needs pyspark: pip install 'kafkatool[spark]'" in r.stderr
    empty = tmp_path / "bin"
    empty.mkdir()
    r = run_cli("spark-scan", mixed_dir.path, env={"PATH": str(empty), "JAVA_HOME": str(tmp_path / "nojava")})
    assert r.returncode == 2 and "--engine: spark needs Java 17 or 21" in r.stderr
