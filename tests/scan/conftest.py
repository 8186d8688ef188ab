"""Fixtures of the scan tests: one mixed-format log dir per test session (read-only: copy to modify)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafkatool.sample.generate import generate_sample
from kafkatool.sample.spec import SampleSpec, demo_topics
from tests.kafkaref import KafkaRef
from tests.scan.dump_totals import dump_totals
from tests.scan.mixed_logdir import build_mixed_logdir


@dataclass
class MixedDir:
    path: Path
    kafka_ref_gen: list[dict[str, object]]  # kafka-ref's own gen reports for ref-0


@pytest.fixture(scope="session")
def mixed_dir(tmp_path_factory: pytest.TempPathFactory, kafka_ref: KafkaRef) -> MixedDir:
    root = tmp_path_factory.mktemp("mixed") / "kafka-logs"
    gen = build_mixed_logdir(root, kafka_ref.launcher)
    return MixedDir(root, gen)


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``kafkatool sample``'s default log dir (v0/v1/v2, every codec, transactions, compaction, retention)."""
    root = tmp_path_factory.mktemp("sample") / "kafka-logs"
    generate_sample(root, SampleSpec(demo_topics()), fsync=False)
    return root


@pytest.fixture(scope="session")
def dumped(mixed_dir: MixedDir, sample_dir: Path) -> dict[str, dict[str, Any]]:
    """Per-partition totals of both dirs from ``kafkatool dump --deep --format json`` (tests/scan/dump_totals.py)."""
    return dump_totals([mixed_dir.path, sample_dir])
