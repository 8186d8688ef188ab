"""``sample``'s output: one line (or JSON line) per partition as it is written, then the summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkatool.commands.options import Output
from kafkatool.sample.run import SampleListener, SampleOutcome
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size

if TYPE_CHECKING:  # the generator imports numpy: only when the command runs, not when the CLI starts
    from kafkatool.sample.generate import SampleResult
    from kafkatool.sample.partition import PartitionSummary


class SampleRenderer(SampleListener):
    def __init__(self, out: Output, json: bool) -> None:
        self.out, self.json = out, json
        self.header = not json  # printed with the first partition: a refused run prints no data

    def partition(self, p: PartitionSummary) -> None:
        if self.json:
            self.out.json(_partition_json(p))
            return
        if self.header:
            self.out.line(_HEADER)
            self.header = False
        self.out.line(_partition_line(p))

    def summary(self, outcome: SampleOutcome) -> None:
        if self.json:
            self.out.json(_summary_json(outcome.result))
        self.out.note(_summary_text(outcome.result))


_HEADER = f"{'PARTITION':<22} {'FORMATS':<9} {'CODECS':<22} {'SEGS':>4} {'RECORDS':>8} {'OFFSETS':<15} " \
          f"{'SIZE':>9}  NOTES"


def _partition_line(p: PartitionSummary) -> str:
    notes = []
    if p.commits or p.aborts:
        notes.append(f"txns {p.commits} committed/{p.aborts} aborted")
    if p.compacted:
        notes.append(f"compacted (cleaned to {p.cleaner_checkpoint})" if p.cleaner_checkpoint is not None
                     else "compacted")
    if p.log_start_offset > p.first_segment_base:
        notes.append(f"DeleteRecords to {p.log_start_offset}")
    elif p.log_start_offset > 0:
        notes.append(f"retention deleted offsets < {p.log_start_offset}")
    if p.epochs:
        notes.append("leader epochs " + ",".join(str(e.epoch) for e in p.epochs))
    formats = "/".join(f"v{m}" for m in p.magics) or "-"
    codecs = ",".join(p.codecs) or "-"
    # The offsets the records counted beside them span: from the first segment's base (DeleteRecords and retention
    # move the log start offset, said in the notes, without deleting the records of the first segment below it).
    first = min(p.first_segment_base, p.log_start_offset)
    offsets = f"{first}..{p.log_end_offset - 1}" if p.log_end_offset > first else "empty"
    return (f"{p.topic}-{p.partition:<{max(1, 21 - len(p.topic))}} {formats:<9} {codecs:<22} {len(p.segments):>4} "
            f"{p.records:>8} {offsets:<15} {format_size(p.bytes):>9}  {'; '.join(notes)}")


def _partition_json(p: PartitionSummary) -> dict[str, Any]:
    return {
        "type": "partition", "topic": p.topic, "partition": p.partition, "topic_id": p.topic_id,
        "log_start_offset": p.log_start_offset, "log_end_offset": p.log_end_offset,
        "high_watermark": p.high_watermark, "recovery_point": p.recovery_point,
        "magics": list(p.magics), "codecs": list(p.codecs), "records": p.records, "markers": p.markers,
        "committed_txns": p.commits, "aborted_txns": p.aborts, "bytes": p.bytes,
        "uncompressed_bytes": p.uncompressed_bytes, "compacted": p.compacted,
        "cleaner_checkpoint": p.cleaner_checkpoint,
        "leader_epochs": [[e.epoch, e.start_offset] for e in p.epochs], "snapshots": list(p.snapshots),
        "segments": [{"base_offset": s.base_offset, "size": s.size, "next_offset": s.next_offset,
                      "records": s.records, "batches": s.physical_batches, "index_entries": s.offset_index_entries,
                      "time_index_entries": s.time_index_entries, "aborted_txns": s.aborted_txns}
                     for s in p.segments],
    }


def _summary_json(r: SampleResult) -> dict[str, Any]:
    return {"type": "summary", "path": str(r.path), "profile": r.spec.profile, "seed": r.spec.seed,
            "clean_shutdown": r.spec.clean_shutdown, "cluster_id": r.cluster_id, "directory_id": r.directory_id,
            "broker_epoch": r.broker_epoch, "topics": len(r.spec.topics), "partitions": len(r.partitions),
            "records": sum(p.records for p in r.partitions), "bytes": r.bytes,
            "elapsed_s": round(r.elapsed_s, 3)}


def _summary_text(r: SampleResult) -> str:
    rate = format_size(int(r.bytes / r.elapsed_s)) if r.elapsed_s > 0 else "0B"
    return (f"wrote {len(r.partitions)} partitions of {len(r.spec.topics)} topics, "
            f"{sum(p.records for p in r.partitions)} records, {format_size(r.bytes)} of segments to {shown(r.path)} "
            f"in {r.elapsed_s:.2f} s ({rate}/s; profile {r.spec.profile}, seed {r.spec.seed})")
