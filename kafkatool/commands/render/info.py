"""``info``'s output: per log dir a line about its own files, then a row per partition (or JSON lines), and the
total on stderr."""

from __future__ import annotations

from kafkatool.commands.options import Output, OutputFormat
from kafkatool.info.run import InfoListener, InfoOutcome, LogDirInfo, PartitionInfo
from kafkatool.util.units import format_size

COLUMNS = (("PARTITION", 22, False), ("SEGS", 4, True), ("SIZE", 9, True), ("FORMATS", 8, False),
           ("CODECS", 20, False), ("OFFSETS", 13, False), ("LOG-START", 9, True), ("HW", 7, True),
           ("EPOCH", 5, True))


def _row(cells: list[str]) -> str:
    parts = [c.rjust(w) if right else c.ljust(w) for (_, w, right), c in zip(COLUMNS, cells, strict=True)]
    return "  ".join(parts).rstrip()


class InfoRenderer(InfoListener):
    def __init__(self, out: Output, form: OutputFormat) -> None:
        self.out, self.form = out, form
        self.header = False

    def warning(self, text: str) -> None:
        self.out.warning(text)

    def log_dir(self, d: LogDirInfo) -> None:
        if self.form == OutputFormat.json:
            self.out.json({"type": "log_dir", **d.as_dict()})
            return
        mode = {True: "KRaft", False: "ZooKeeper", None: "no meta.properties"}[d.kraft]
        ids = ", ".join(f"{k} {v}" for k, v in (("cluster", d.cluster_id), ("node", d.node_id)) if v)
        shutdown = "clean shutdown" if d.clean_shutdown else "no clean-shutdown marker (recovery at next start)"
        lock = {"held": "locked by a live broker", "free": ".lock not held", "none": "no .lock"}[d.lock]
        self.out.line(f"log dir {d.path}: {mode}" + (f" ({ids})" if ids else "") + f"; {shutdown}; {lock}")
        self.header = False

    def partition(self, p: PartitionInfo) -> None:
        if self.form == OutputFormat.json:
            self.out.json({"type": "partition", **p.as_dict()})
            return
        if not self.header:
            self.out.line(_row([c for c, _, _ in COLUMNS]))
            self.header = True
        offsets = "-" if p.first_offset is None or p.log_end_offset is None or p.log_end_offset <= p.first_offset \
            else f"{p.first_offset}..{p.log_end_offset - 1}"
        self.out.line(_row([
            p.name, str(p.segments), format_size(p.bytes), "/".join(f"v{m}" for m in p.formats) or "-",
            ",".join(p.codecs) or "-", offsets, _n(p.log_start_offset), _n(p.high_watermark), _n(p.leader_epoch)]))
        for note in p.notes:
            self.out.line(f"  {p.name}: {note}")

    def summary(self, o: InfoOutcome) -> None:
        topics = {p.topic for p in o.partitions if p.topic is not None}
        segments = sum(p.segments for p in o.partitions)
        size = sum(p.bytes for p in o.partitions)
        if self.form == OutputFormat.json:
            self.out.json({"type": "summary", "log_dirs": len(o.log_dirs), "topics": len(topics),
                           "partitions": len(o.partitions), "segments": segments, "bytes": size,
                           "problems": o.problems})
            return
        self.out.note(f"{len(topics)} topics, {len(o.partitions)} partitions, {segments} segments, "
                      f"{format_size(size)} of segments" + (f"; {o.problems} unreadable files" if o.problems else ""))


def _n(v: int | None) -> str:
    return "-" if v is None else str(v)
