"""``kafkatool.dump.run.dump``, the library entry point of ``kafkatool dump``: driven from Python it walks the
same events, and they render to the very lines the command prints."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kafkatool.dump.events import BatchEvent, DumpOptions, Event, FileStart, Finding, Summary
from kafkatool.dump.render import JsonWriter
from kafkatool.dump.run import DumpListener, DumpRequest, dump
from kafkatool.errors import InputError, UsageError
from tests.support.cli import run_cli


class Recorder(DumpListener):
    def __init__(self) -> None:
        self.options: DumpOptions | None = None
        self.events: list[Event] = []

    def start(self, options: DumpOptions) -> None:
        self.options = options

    def event(self, ev: Event) -> None:
        self.events.append(ev)


def _json_lines(rec: Recorder, **kw: bool) -> list[str]:
    """The recorded events through the writer ``dump --format json`` uses."""
    assert rec.options is not None
    buf = io.StringIO()
    w = JsonWriter(buf, encoding="utf8", decompress_limit=rec.options.decompress_limit, **kw)
    for ev in rec.events:
        w.handle(ev)
    w.close()
    return buf.getvalue().split("\n")  # not splitlines(): a value may hold U+2028


def test_deep_dump_events_are_the_commands_json_lines(sample_dir: Path) -> None:
    r = run_cli("dump", sample_dir, "--deep", "--format", "json")
    rec = Recorder()
    outcome = dump(DumpRequest([sample_dir], deep=True), rec)
    assert outcome.exit_code == r.returncode
    lines = _json_lines(rec)
    assert lines == r.stdout.split("\n")
    assert isinstance(rec.events[-1], Summary) and rec.events[-1] is outcome.summary
    batches = [ev for ev in rec.events if isinstance(ev, BatchEvent)]
    assert len(batches) > 1000 and all(ev.records is not None for ev in batches)
    total = json.loads(lines[-2])
    assert total["type"] == "summary"
    assert total["records"] == outcome.summary.records == sum(len(ev.records or ()) for ev in batches)


def test_filters_and_counts_match_the_command(sample_dir: Path) -> None:
    part = sample_dir / "payments-0"
    r = run_cli("dump", part, "--count", "--control-type", "commit", "--format", "json")
    rec = Recorder()
    outcome = dump(DumpRequest([part], count=True, control_type=["commit"]), rec)
    assert _json_lines(rec, summary_only=True, file_ends=True) == r.stdout.split("\n")
    assert not [ev for ev in rec.events if isinstance(ev, BatchEvent)]  # a count reports no batch
    assert 0 < (outcome.summary.records or 0) < 200
    summary = json.loads(r.stdout.split("\n")[-2])
    assert summary["type"] == "summary" and summary["records"] == outcome.summary.records


def test_findings_and_exit_code_of_a_damaged_segment(tmp_path: Path, sample_dir: Path) -> None:
    src = sorted((sample_dir / "orders-0").glob("*.log"))[0]
    data = bytearray(src.read_bytes())
    data[200] ^= 0xFF  # inside the first batch: a CRC failure
    bad = tmp_path / src.name
    bad.write_bytes(bytes(data))
    r = run_cli("dump", bad, "--format", "json")
    rec = Recorder()
    outcome = dump(DumpRequest([bad]), rec)
    assert int(outcome.exit_code) == r.returncode == 1
    assert _json_lines(rec) == r.stdout.split("\n")
    assert [f.kind for f in rec.events if isinstance(f, Finding)] and outcome.summary.errors > 0
    assert isinstance(rec.events[0], FileStart)


@pytest.mark.parametrize("kw, field", [
    ({"from_offset": 10, "to_offset": 5}, "from_offset"),
    ({"key_regex": "(unclosed"}, "key_regex"),
    ({"control_type": ["rollback"]}, "control_type"),
    ({"decoder": "offsets", "key_decoder": "hex"}, "decoder"),
    ({"value_decoder": "transactions"}, "value_decoder"),
    ({"memory": "1MiB"}, "memory"),
])
def test_bad_values_are_usage_errors_about_their_field(sample_dir: Path, kw: dict[str, object], field: str) -> None:
    with pytest.raises(UsageError) as e:
        dump(DumpRequest([sample_dir / "payments-0"], **kw))  # type: ignore[arg-type]
    assert e.value.field == field and "--" not in e.value.message


def test_a_missing_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        dump(DumpRequest([tmp_path / "nope"]))
