"""``offsets-for-times``' output: one line (or JSON line) per partition and time."""

from __future__ import annotations

from kafkatool.commands.options import Output, OutputFormat
from kafkatool.listoffsets.run import OffsetAnswer, OffsetsListener
from kafkatool.util.units import format_time_ms


class OffsetsRenderer(OffsetsListener):
    def __init__(self, out: Output, form: OutputFormat) -> None:
        self.out, self.form = out, form
        self.header = False

    def warning(self, text: str) -> None:
        self.out.warning(text)

    def answer(self, a: OffsetAnswer) -> None:
        if self.form == OutputFormat.json:
            self.out.json({"type": "offset", "topic": a.topic, "partition": a.partition, "time": a.query,
                           "offset": a.offset, "timestamp": a.timestamp, "leader_epoch": a.leader_epoch,
                           "log_start_offset": a.log_start_offset, "high_watermark": a.high_watermark,
                           "log_end_offset": a.log_end_offset, "high_watermark_source": a.high_watermark_source})
            return
        if not self.header:
            self.out.line(f"{'PARTITION':<22} {'TIME':<24} {'OFFSET':>8} {'TIMESTAMP':<24} EPOCH")
            self.header = True
        ts = "-" if a.timestamp < 0 else format_time_ms(a.timestamp)
        epoch = "-" if a.leader_epoch is None else str(a.leader_epoch)
        query = a.query if not a.query.lstrip("-").isdigit() else format_time_ms(int(a.query))
        self.out.line(f"{f'{a.topic}-{a.partition}':<22} {query:<24} {a.offset:>8} {ts:<24} {epoch}")
