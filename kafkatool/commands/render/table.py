"""``kafkatool dump --format table`` (the default on a terminal): fixed-width columns, coloured on a terminal.

Rows are formatted directly rather than through ``rich.table.Table``, whose layout pass costs about a
millisecond per row: a deep dump of a segment has hundreds of thousands of rows.
"""

from __future__ import annotations

from dataclasses import asdict

from rich.color import ColorSystem
from rich.console import Console
from rich.markup import escape
from rich.style import Style

from kafkatool.commands.terminal import err_is_terminal, err_line
from kafkatool.dump.control import describe_control
from kafkatool.dump.events import (
    BatchEvent,
    Event,
    FileEnd,
    FileStart,
    Finding,
    IndexEntryEvent,
    Notice,
    NoticeKind,
    RecordsEvent,
    Severity,
)
from kafkatool.dump.render import codec_label, decoded_parts, text_bytes
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.util.printable import shown
from kafkatool.util.units import TimestampFormatter, format_size

_TS_SHORT = {"CreateTime": "create", "LogAppendTime": "append", "NoTimestampType": "none"}
# (header, width, right-aligned); the last column takes what is left of the terminal width.
BATCH_COLUMNS = [("Position", 10, True), ("Offsets", 21, False), ("Count", 5, True), ("Format", 16, False),
                 ("Size", 8, True), ("Timestamp", 24, False), ("CRC", 3, False), ("Data", 0, False)]


class TableWriter:
    def __init__(self, console: Console, *, print_data: bool, encoding: str) -> None:
        self.console = console
        self.out = console.file
        self.print_data = print_data
        self.encoding = encoding
        colour = console.is_terminal and not console.no_color
        self.styles = {name: (Style.parse(name).render("\0", color_system=ColorSystem.STANDARD).split("\0")
                              if colour else ["", ""]) for name in ("dim", "bold", "red")}
        self.columns: list[tuple[str, int, bool]] = []
        self.ts = TimestampFormatter()

    def _line(self, cells: list[str], style: str | None = None) -> None:
        parts = []
        for (_, width, right), cell in zip(self.columns[:-1], cells, strict=False):
            if len(cell) > width:
                cell = cell[:width - 1] + "…"
            parts.append(cell.rjust(width) if right else cell.ljust(width))
        room = max(8, self.console.width - sum(w + 2 for _, w, _ in self.columns[:-1]) - 1)
        last = cells[-1] if len(cells) == len(self.columns) else ""
        if len(last) > room:
            last = last[:room - 1] + "…"
        parts.append(last)
        line = "  ".join(parts).rstrip()
        if style:
            pre, post = self.styles[style]
            line = pre + line + post
        self.out.write(line + "\n")

    def _header(self, columns: list[tuple[str, int, bool]]) -> None:
        if self.columns != columns:
            self.columns = columns
            self._line([name for name, _, _ in columns], "bold")

    def handle(self, ev: Event) -> None:
        if isinstance(ev, BatchEvent):
            self._batch(ev)
        elif isinstance(ev, RecordsEvent):
            self._records(ev)
        elif isinstance(ev, IndexEntryEvent):
            fields = asdict(ev.entry)
            self._header([(k.replace("_", " ").capitalize(), 20, False) for k in fields] + [("", 0, False)])
            self._line([str(v) for v in fields.values()] + [""])
        elif isinstance(ev, FileStart):
            self.columns = []
            extra = "" if ev.base_offset is None else f" · base offset {ev.base_offset}"
            path = escape(shown(ev.path))  # the user's file name, escaped (brackets are not markup, nor ESC)
            self.console.rule(f"[bold]{path}[/] · {ev.kind.value} · {format_size(ev.size)}{extra}", align="left")
        elif isinstance(ev, FileEnd):
            if ev.kind.is_records:
                recs = "?" if ev.records is None else str(ev.records)
                bad = f" · {ev.invalid_bytes} invalid bytes" if ev.invalid_bytes else ""
                self._plain(f"{ev.batches} batches · {recs} records · {format_size(ev.valid_bytes)}{bad}",
                            "red" if ev.invalid_bytes else "dim")
        elif isinstance(ev, Finding):
            style = {Severity.ERROR: "bold red", Severity.WARNING: "yellow"}.get(ev.severity, "dim")
            err_line(f"kafkatool dump: {ev}", style if err_is_terminal() else None)
        elif isinstance(ev, Notice):
            if ev.kind == NoticeKind.UNKNOWN_FILE:
                err_line(f"Ignoring unknown file {shown(ev.path)}")
            else:
                self._plain("(no entries)" if ev.kind == NoticeKind.INDEX_EMPTY else "passed sanity check", "dim")

    def _plain(self, text: str, style: str) -> None:
        pre, post = self.styles[style]
        self.out.write(pre + text + post + "\n")

    def _batch(self, ev: BatchEvent) -> None:
        self._header(BATCH_COLUMNS)
        b = ev.batch
        info = []
        if type(b) is DefaultRecordBatch:
            offsets = f"{b.base_offset}..{b.last_offset}"
            n = str(b.records_count)
            if b.producer_id >= 0:
                info.append(f"producer {b.producer_id}/{b.producer_epoch} seq {b.base_sequence}")
            if b.partition_leader_epoch >= 0:
                info.append(f"leader epoch {b.partition_leader_epoch}")
        else:
            base = ev.base_offset
            offsets = f"{base}..{b.last_offset}" if base is not None and base != b.last_offset else str(b.last_offset)
            n = "1" if not b.codec_id else ""
        if b.is_transactional:
            info.append("transactional")
        if b.is_control:
            info.append("control")
        fmt = f"v{b.magic} {codec_label(b.codec_id)} {_TS_SHORT[b.timestamp_type.label]}"
        self._line([str(b.position), offsets, n, fmt, str(b.size), self.ts(b.max_timestamp),
                    "ok" if ev.crc_valid else "BAD", ", ".join(info)], None if ev.crc_valid else "red")
        self._records(ev)

    def _records(self, ev: BatchEvent | RecordsEvent) -> None:
        b = ev.batch
        enc = self.encoding
        decoded = ev.decoded
        for i, r in enumerate(ev.records or ()):
            key, value = r[2], r[3]
            if decoded is not None:
                data = decoded_parts(key, value, decoded[i], sep="=")
            elif b.is_control:
                c = describe_control(key, value)
                data = c.name + (f" coordinatorEpoch {c.coordinator_epoch}" if c.coordinator_epoch is not None else "")
            elif self.print_data:
                data = (f"key={'null' if key is None else text_bytes(key, enc)} "
                        f"value={'null' if value is None else text_bytes(value, enc)}")
            else:
                data = (f"key {'null' if key is None else f'{len(key)}B'} "
                        f"value {'null' if value is None else f'{len(value)}B'}")
            if r[4]:
                data += " headers " + ",".join(h[0] for h in r[4])
            self._line(["", str(r[0]), "", "", str(r[6]), self.ts(r[1]), "", data], "dim")

    def close(self) -> None:
        self.out.flush()
