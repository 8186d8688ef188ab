"""``kafkatool.canary.api``, the library entry points of ``kafkatool canary``'s subcommands: driven from Python
they plan, convert, verify, apply and roll back as the commands do, with the same results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kafkatool.canary.api import (
    CanaryListener,
    PlanRequest,
    RunRequest,
    SwapRequest,
    VerifyRequest,
    canary_run,
    canary_swap,
    canary_verify,
    plan_upgrade,
)
from kafkatool.canary.plan import plan_json_lines
from kafkatool.commands.render.canary import command_line
from kafkatool.errors import UsageError
from tests.support.canary_dirs import small_dir, tree
from tests.support.cli import run_cli


class Notes(CanaryListener):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)


def _json(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in stdout.splitlines()]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_dir(tmp_path_factory.mktemp("canary-api") / "logs")


def test_plan_is_the_commands_plan(logs: Path) -> None:
    r = run_cli("canary", "plan", logs, "--compacted", "v0", "--max-message-bytes", "2000,lat=900", "--format", "json")
    outcome = plan_upgrade(PlanRequest(logs, compacted=["v0"], max_message_bytes={None: 2000, "lat": 900}))
    assert [{**x, "schema": 1} for x in plan_json_lines(outcome.plan, command_line)] == _json(r.stdout)
    assert int(outcome.exit_code) == r.returncode
    (run,) = [s for p in outcome.plan.phases for s in p.steps if s.command == ("canary", "run")]
    assert dict(run.options)["workdir"] and command_line(run).startswith(f"kafkatool canary run {logs} --partitions ")
    assert any("v0" in p.name and any("operator" in e for e in p.compaction_evidence)
               for p in outcome.plan.inventory.partitions)


def test_run_verify_apply_rollback_from_python_equal_the_commands(logs: Path, tmp_path: Path) -> None:
    cli_logs, lib_logs = tmp_path / "cli-logs", tmp_path / "lib-logs"
    shutil.copytree(logs, cli_logs)
    shutil.copytree(logs, lib_logs)
    original = tree(lib_logs)
    cli_w, lib_w = tmp_path / "cli-w", tmp_path / "lib-w"
    r = run_cli("canary", "run", cli_logs, "--partitions", "old-0,v0-*", "--workdir", cli_w, "--format", "json")
    assert r.returncode == 0, r.stderr
    notes = Notes()
    run = canary_run(RunRequest(lib_logs, ["old-0,v0-*"], lib_w), notes)
    assert [p.name for p in run.manifest.partitions] == [x["partition"] for x in _json(r.stdout)[:-1]]
    assert notes.notes  # progress, partition by partition
    canary = {k: v[0] for k, v in tree(lib_w / "canary").items()}
    assert canary == {k: v[0] for k, v in tree(cli_w / "canary").items()} and canary

    r = run_cli("canary", "verify", cli_w, "--format", "json")
    verify = canary_verify(VerifyRequest(lib_w))
    assert int(verify.exit_code) == r.returncode == 0
    lib_parts = [v.as_dict() for v in verify.result.partitions]
    cli_parts = [x for x in _json(r.stdout) if x["type"] == "partition"]
    assert [(p["partition"], p["ok"], p["batches"]) for p in lib_parts] == \
        [(p["partition"], p["ok"], p["batches"]) for p in cli_parts]

    applied = canary_swap(SwapRequest(lib_w, "apply"))
    assert {o.partition: o.after for o in applied.result.outcomes} == {"old-0": "canary", "v0-0": "canary"}
    assert tree(lib_logs) != original
    canary_swap(SwapRequest(lib_w, "rollback"))
    assert tree(lib_logs) == original


@pytest.mark.parametrize("make, field", [
    (lambda d, w: RunRequest(d, ["nope-*"], w), "partitions"),
    (lambda d, w: RunRequest(d, [], w), "partitions"),
    (lambda d, w: RunRequest(d, ["old-0"], w, target_format=1), "target_format"),
    (lambda d, w: RunRequest(d, ["old-0"], w, batch_bytes=-1), "batch_bytes"),
    (lambda d, w: RunRequest(d, ["old-0"], w, index_interval_bytes=0), "index_interval_bytes"),
    (lambda d, w: PlanRequest(d, target_format=3), "target_format"),
    (lambda d, w: SwapRequest(w, "undo"), "op"),
])
def test_bad_values_are_usage_errors_about_their_field(logs: Path, tmp_path: Path, make: Any, field: str) -> None:
    request = make(logs, tmp_path / "w")
    entry = {RunRequest: canary_run, PlanRequest: plan_upgrade, SwapRequest: canary_swap}[type(request)]
    with pytest.raises(UsageError) as e:
        entry(request)
    assert e.value.field == field and "--" not in e.value.message
    assert not (tmp_path / "w").exists()
