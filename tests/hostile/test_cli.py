"""The hostile-input corpus through the command line: ``kafkatool dump --deep --verify FILE`` on every file of
tests/hostile/MANIFEST.json exits with the manifest's ``dump_exit`` and reports the manifest's
``dump_finding`` at ``dump_position``, in one line, never with a traceback, and never changes the file."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.support.cli import run_cli
from tests.support.paths import HOSTILE

MANIFEST = json.loads((HOSTILE / "MANIFEST.json").read_text())

# What issue 9 asks the corpus to hold, and the files that hold it: every kind must be there.
KINDS = {
    "negative batch length": ["negative-batch-length.log"],
    "huge batch length": ["huge-batch-length.log"],
    "length smaller than the header": ["length-below-v2-header.log"],
    "record count larger than the bytes": ["record-count-exceeds-bytes.log"],
    "varint over 5 bytes": ["varint-int-6-bytes.log"],
    "varlong over 10 bytes": ["varlong-11-bytes.log"],
    "negative lengths other than -1": ["negative-key-length.log", "negative-value-length.log",
                                       "negative-header-key-length.log", "negative-header-value-length.log"],
    "huge header count": ["huge-header-count.log"],
    "CRC mismatch": ["crc-mismatch.log", "crc-mismatch-v1.log", "snapshot-bad-crc.snapshot"],
    "magic 3 and up": ["magic-3.log", "magic-127.log"],
    "zero-filled tail": ["zero-filled-tail.log"],
    "truncated last batch": ["truncated-last-batch.log"],
    "torn header": ["torn-header.log"],
    "garbage in the middle, valid batches after": ["garbage-in-the-middle.log"],
    "trailing garbage": ["trailing-garbage.log"],
    "decompression bomb per codec": ["bomb-gzip.log", "bomb-snappy.log", "bomb-lz4.log", "bomb-zstd.log"],
    "snappy and lz4 bad framing": ["snappy-bad-framing.log", "lz4-bad-header-checksum.log", "lz4-linked-blocks.log"],
    "index full of padding": ["index-padding/00000000000000000000.index"],
    "index pointing past the end": ["index-past-end/00000000000000000000.index"],
    "offset overflowing the relative index": ["offset-overflow/00000000000000000000.log"],
    "wrong file type": ["wrong-type-index-as.log", "wrong-type-timeindex-as.log"],
}


def test_every_kind_is_in_the_corpus_with_an_expectation():
    for kind, names in KINDS.items():
        for name in names:
            assert name in MANIFEST, (kind, name)
            assert (HOSTILE / name).is_file(), name
    listed = {n for names in KINDS.values() for n in names}
    assert set(MANIFEST) == listed, "a corpus file no kind names (or the other way round)"
    for name, m in MANIFEST.items():
        assert m["dump_exit"] in (0, 1), name
        assert (m["dump_finding"] is None) == (m["dump_position"] is None), name
        assert m["dump_exit"] == 0 or m["dump_finding"] is not None, name


def _findings(stdout: str) -> list[dict[str, object]]:
    return [o for o in map(json.loads, stdout.splitlines()) if o["type"] == "finding"]


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_dump_reports_the_manifest_finding_and_exit_code(name):
    m = MANIFEST[name]
    path = HOSTILE / name
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    r = run_cli("dump", "--deep", "--verify", "--format", "json", path)
    assert "Traceback" not in r.stderr
    assert r.returncode == m["dump_exit"], (r.returncode, r.stderr, _findings(r.stdout))
    findings = _findings(r.stdout)
    serious = [f for f in findings if f["severity"] != "info"]
    if m["dump_exit"] == 0:
        assert serious == []
        expected = [(m["dump_finding"], m["dump_position"])] if m["dump_finding"] else []
        assert [(f["kind"], f["position"]) for f in findings] == expected
    else:
        assert (serious[0]["kind"], serious[0]["position"]) == (m["dump_finding"], m["dump_position"]), findings
    if "dump_batches" in m:
        batches = [o for o in map(json.loads, r.stdout.splitlines()) if o["type"] == "batch"]
        assert len(batches) == m["dump_batches"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_text_format_gives_one_stderr_line_per_finding_with_file_and_position():
    paths = [HOSTILE / n for n in sorted(MANIFEST)]
    r = run_cli("dump", "--deep", "--verify", *paths)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    for name, m in MANIFEST.items():
        if m["dump_finding"] is not None:
            head = f"kafkatool dump: {'info' if m['dump_exit'] == 0 else ''}"
            want = f": {m['dump_finding']}: {HOSTILE / name} at byte {m['dump_position']}: "
            assert any(x.startswith(head) and want in x for x in lines), (name, want)


def test_garbage_in_the_middle_resumes_where_the_next_valid_batch_starts():
    r = run_cli("dump", "--format", "json", HOSTILE / "garbage-in-the-middle.log")
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    (region,) = [o for o in objs if o["type"] == "finding"]
    assert region["kind"] == "corrupt-region" and region["bytes"] == 512
    after = [o["base_offset"] for o in objs if o["type"] == "batch" and o["position"] >= region["resume"]]
    assert region["resume"] == region["position"] + 512 and after == [3, 6]
    # --strict stops at the garbage, as the broker's recovery would.
    r = run_cli("dump", "--strict", "--format", "json", HOSTILE / "garbage-in-the-middle.log")
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o["base_offset"] for o in objs if o["type"] == "batch"] == [0] and r.returncode == 1
