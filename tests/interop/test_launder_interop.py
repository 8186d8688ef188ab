"""What Kafka 3.9.1's own reader says of the inputs issue 23 (items 5-7) is about, next to what kafkatool says.

``kafka-ref dump --deep`` runs ``FileRecords.batches()``, ``ensureValid``, ``streamingIterator`` and each record's
``ensureValid``: the reader every consumer and the broker's recovery build on. Where Kafka throws, kafkatool's
reader throws at the same batch (tests/interop/test_damage_interop.py proves that in general); where Kafka reads on
without an error, kafkatool reads the same records with the same offsets and *also* reports a finding, because the
data is still wrong (and the converters refuse to rewrite it):

* an inner message whose CRC-32 fails: Kafka's ``Record.ensureValid`` throws (CorruptRecordException);
* an inner set cut inside a message: Kafka drops the cut message silently (``DataLogInputStream`` returns null on
  an EOFException) and numbers the rest from the wrapper offset. The issue says Kafka's reader throws: 3.9.1's does
  not (the spec, §1.3, is right). kafkatool shows Kafka's offsets and reports inner-set-truncated;
* inner offsets 4, 3, 2, 1, 0 in a v1 wrapper: Kafka reads 8, 7, 6, 5, 4 without an error;
* lastOffsetDelta -7: Kafka reports lastOffset 3 for base offset 10, without an error;
* a COMMIT marker whose value is one byte: the deep read passes; the producer-state step of recovery throws
  (tests/interop/test_control_step_interop.py);
* offset 2^63-1: read without an error (the log end offset, last + 1, overflows; Kafka never assigns it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import iter_batches
from kafkatool.record.validate import check_batch
from tests.support import damaged_batches as d
from tests.support.kafkaref import CORRUPT, OK, KafkaRef

pytestmark = pytest.mark.interop

INT64_MAX = (1 << 63) - 1

# name -> (segment bytes, Kafka's exit, Kafka's record offsets (deep, up to an exception), kafkatool's finding kinds)
CASES = {
    "v1-inner-crc": (d.inner_crc_flip(1, Codec.GZIP, flip=2), CORRUPT, [0, 1], ["record-crc-mismatch"]),
    "v0-inner-crc": (d.inner_crc_flip(0, Codec.GZIP, flip=2), CORRUPT, [0, 1], ["record-crc-mismatch"]),
    "v1-inner-cut": (d.inner_cut(1, n=3), OK, [1, 2], ["inner-set-truncated"]),
    "v0-inner-cut": (d.inner_cut(0, n=3), OK, [0, 1], ["inner-set-truncated"]),
    "v1-decreasing-inner": (d.decreasing_inner(), OK, [8, 7, 6, 5, 4], ["offset-order", "offset-range"]),
    "negative-delta": (d.batch(0) + d.negative_delta(10, -7), OK, [0, 1, 2, 10], ["offset-range"]),
    "bad-control": (d.batch(0) + d.bad_control(b"\x00"), OK, [0, 1, 2, 3], ["invalid-control-record"]),
    "offset-int64": (d.offset_max(), OK, [INT64_MAX], ["offset-int64"]),
}


@pytest.fixture(scope="module")
def kafka_verdicts(kafka_ref: KafkaRef, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, list[int],
                                                                                                       str | None]]:
    root = tmp_path_factory.mktemp("launder")
    paths = {}
    for name, (data, *_rest) in CASES.items():
        paths[name] = root / f"{name}.log"
        paths[name].write_bytes(data)
    runs = kafka_ref.run_batches([[KafkaRef.dump_args(p, payload="none")] for p in paths.values()])
    out = {}
    for name, (run,) in zip(paths, runs, strict=True):
        lines = run.lines
        offsets = [j["offset"] for j in lines if j.get("type") == "record"]
        error = next((j for j in lines if j.get("type") == "error"), None)
        out[name] = (run.returncode, offsets, error["exception"] if error else None)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_kafka_reads_what_kafkatool_reads_and_kafkatool_still_reports_it(name: str, kafka_verdicts) -> None:
    data, kafka_exit, kafka_offsets, kinds = CASES[name]
    rc, offsets, exception = kafka_verdicts[name]
    assert (rc, offsets) == (kafka_exit, kafka_offsets), (name, exception)
    if kafka_exit == CORRUPT:
        assert exception == "org.apache.kafka.common.errors.CorruptRecordException"
    found: list[str] = []
    ours: list[int] = []
    for b in iter_batches(data):
        c = check_batch(b)
        found += [p.kind for p in c.problems]
        ours += [r.offset for r in c.records or []]
    assert found == kinds
    if kafka_exit == OK:
        assert ours == offsets  # the same records with the same offsets as Kafka's reader
    else:
        assert ours[:len(offsets)] == offsets


def test_kafka_ref_reads_a_cut_inner_set_without_an_error(kafka_ref: KafkaRef, tmp_path: Path) -> None:
    # The issue says Kafka's reader throws here; 3.9.1's does not (and the spec says so): pinned on its own.
    p = tmp_path / "cut.log"
    p.write_bytes(d.inner_cut(1, n=3))
    dump = kafka_ref.dump(p, payload="none")
    assert dump.returncode == OK and dump.error is None and [r["offset"] for r in dump.records()] == [1, 2]
