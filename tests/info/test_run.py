"""info: a log dir's summary from headers and checkpoints (kafkatool/info), and what it reports when a file
does not read."""

from __future__ import annotations

from pathlib import Path

from kafkatool.info.run import InfoRequest, info
from kafkatool.log.checkpoints import EpochEntry, encode_leader_epoch_checkpoint, encode_offset_checkpoint
from kafkatool.log.layout import TopicPartition
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import build_batch
from tests.support.segments import legacy, v2, write_segment

T0 = 1_700_000_000_000


def _log_dir(root: Path) -> Path:
    """A ZooKeeper-era log dir: a-0 (a v1 segment, then a v2 gzip one), b-3 (one v2 none segment)."""
    root.mkdir()
    (root / "meta.properties").write_text("version=0\nbroker.id=7\ncluster.id=abc\n")
    write_segment(root / "a-0", 0, [legacy(1, 0), legacy(1, 1)])
    write_segment(root / "a-0", 2, [v2(2, 3, codec=Codec.GZIP), v2(5, 2, codec=Codec.GZIP)])
    write_segment(root / "b-3", 40, [v2(40, 4)])
    (root / "a-0" / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint(
        [EpochEntry(0, 0), EpochEntry(2, 2)]))
    a, b = TopicPartition("a", 0), TopicPartition("b", 3)
    (root / "log-start-offset-checkpoint").write_bytes(encode_offset_checkpoint({a: 1, b: 0}))
    (root / "replication-offset-checkpoint").write_bytes(encode_offset_checkpoint({a: 6, b: 44}))
    (root / "recovery-point-offset-checkpoint").write_bytes(encode_offset_checkpoint({a: 2, b: 40}))
    (root / ".kafka_cleanshutdown").write_text("")
    return root


def test_a_log_dir_from_headers_and_checkpoints(tmp_path: Path) -> None:
    root = _log_dir(tmp_path / "logs")
    out = info(InfoRequest([root]))
    assert out.exit_code == 0 and len(out.log_dirs) == 1
    d = out.log_dirs[0]
    assert (d.kraft, d.cluster_id, d.node_id, d.clean_shutdown, d.lock) == (False, "abc", "7", True, "none")
    by = {p.name: p for p in out.partitions}
    a, b = by["a-0"], by["b-3"]
    assert (a.segments, a.formats, a.codecs, a.first_offset, a.log_end_offset) == (2, [1, 2], ["none", "gzip"], 0, 7)
    assert (a.log_start_offset, a.high_watermark, a.recovery_point, a.leader_epoch) == (1, 6, 2, 2)
    assert a.bytes == sum(f.stat().st_size for f in (root / "a-0").glob("*.log"))
    # b: the log start offset is at least the first segment's base offset, whatever the checkpoint says
    assert (b.segments, b.formats, b.codecs, b.first_offset, b.log_end_offset, b.log_start_offset,
            b.leader_epoch) == (1, [2], ["none"], 40, 44, 40, None)


def test_selections_and_a_partition_dir_alone(tmp_path: Path) -> None:
    root = _log_dir(tmp_path / "logs")
    assert [p.name for p in info(InfoRequest([root], topic=["b*"])).partitions] == ["b-3"]
    assert [p.name for p in info(InfoRequest([root], partition=[0])).partitions] == ["a-0"]
    alone = info(InfoRequest([root / "a-0"]))
    assert not alone.log_dirs and [(p.name, p.high_watermark) for p in alone.partitions] == [("a-0", 6)]


def test_an_unreadable_checkpoint_is_a_warning_and_exit_1(tmp_path: Path) -> None:
    root = _log_dir(tmp_path / "logs")
    (root / "replication-offset-checkpoint").write_text("0\n5\na 0 6\n")  # says 5 entries, holds 1
    heard: list[str] = []

    class Listener:
        def warning(self, text: str) -> None:
            heard.append(text)

        def log_dir(self, _: object) -> None: ...

        def partition(self, _: object) -> None: ...

    out = info(InfoRequest([root]), Listener())  # type: ignore[arg-type]
    assert out.exit_code == 1 and out.problems == 1
    assert len(heard) == 1 and "replication-offset-checkpoint" in heard[0]
    assert all(p.high_watermark is None for p in out.partitions)


def test_a_torn_tail_ends_the_log_where_the_valid_batches_end(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    full = build_batch([(i, T0, None, b"v", ()) for i in range(3)])
    write_segment(part, 0, [v2(0, 2), full[:-7]])
    out = info(InfoRequest([part]))
    assert [p.log_end_offset for p in out.partitions] == [2]
