"""Fuzz the readers of the other partition-dir files: .index, .timeindex, .txnindex, producer
.snapshot, leader-epoch-checkpoint, offset checkpoints, partition.metadata, and the index rebuild
(LogSegment.recover rules) over arbitrary .log bytes."""

from __future__ import annotations

import os
import sys
import tempfile

import _common  # noqa: F401
import atheris

with atheris.instrument_imports():
    from kafkatool.errors import KafkaToolError
    from kafkatool.log import checkpoints, index, snapshot, txn_index
    from kafkatool.log import recovery as recover

TMP = tempfile.mkdtemp(prefix="kafkatool-fuzz-")
NAMES = ["00000000000000000100.index", "00000000000000000100.timeindex", "00000000000000000100.txnindex",
         "00000000000000000100.snapshot", "leader-epoch-checkpoint", "recovery-point-offset-checkpoint",
         "partition.metadata", "00000000000000000100.log"]


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    name = NAMES[data[0] % len(NAMES)]
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data[1:])
    try:
        if name.endswith(".index"):
            index.read_offset_index(path)
            index.offset_index_sanity_check(path)
        elif name.endswith(".timeindex"):
            index.read_time_index(path)
            index.time_index_sanity_check(path)
        elif name.endswith(".txnindex"):
            txn_index.read_txn_index(path)
            txn_index.txn_index_sanity_check(path)
        elif name.endswith(".snapshot"):
            snapshot.read_snapshot(path)
        elif name == "leader-epoch-checkpoint":
            checkpoints.read_leader_epoch_checkpoint(path)
        elif name == "recovery-point-offset-checkpoint":
            checkpoints.read_offset_checkpoint(path)
        elif name == "partition.metadata":
            checkpoints.read_partition_metadata(path)
        else:
            recover.recover_segment(path, 100, index_interval_bytes=data[0], verify=bool(data[0] & 2))
    except KafkaToolError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
