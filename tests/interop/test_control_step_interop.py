"""Kafka's own verdict on each malformed transaction marker of ``tests/support/control_batches.py``.

``control_step/ControlStep.java`` runs, with kafka-clients 3.9.1, what recovery's producer-state update does
with a control batch (``ProducerAppendInfo.append``: ``batch.iterator()``, ``next()``,
``EndTransactionMarker.deserialize``) and prints the exception class it throws. kafkatool's
``check_control_batch`` must name the same class, and its outcome (``invalid`` for InvalidRecordException,
the one ``LogSegment.recover`` catches; ``unhandled`` for anything else) follows from it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafkatool.log.recovery.control import check_control_batch
from tests.support.control_batches import CASES
from tests.support.kafkaref import KafkaRef

STEP = Path(__file__).parent / "control_step" / "ControlStep.java"


def test_markers_fail_as_kafka_fails_them(kafka_ref: KafkaRef, tmp_path: Path) -> None:
    files = []
    for c in CASES:
        f = tmp_path / f"{c.name}.log"
        f.write_bytes(c.batch)
        files.append(f)
    classpath = (kafka_ref.launcher.parent / "classpath.txt").read_text().strip()
    p = subprocess.run(["java", "-Xmx256m", "-cp", classpath, str(STEP), *map(str, files)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    kafka = {Path(line.split("\t")[0]).stem: line.split("\t")[1] for line in p.stdout.splitlines()}
    assert set(kafka) == {c.name for c in CASES}
    for c in CASES:
        ours = check_control_batch(c.batch, 0)
        assert (ours.exception if ours else "ok") == kafka[c.name], c.name
        assert (None if ours is None else (ours.outcome, ours.exception)) == c.expected, c.name
        if ours is not None:
            assert ours.outcome == ("invalid" if kafka[c.name] == "InvalidRecordException" else "unhandled")
