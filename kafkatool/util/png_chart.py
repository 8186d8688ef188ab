"""A small bar-chart PNG writer (zlib + struct only, no plotting library).

Used by ``fetch-sim``'s sweep chart: one panel per series, one bar per category, value labels, a 5x7 bitmap
font (upper case, digits and a few signs). The PNG is 8-bit RGB, filter 0 per row, one IDAT chunk.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

# 5x7 glyphs, one int per row, bit 4 = leftmost pixel.
_FONT: dict[str, tuple[int, ...]] = {
    " ": (0, 0, 0, 0, 0, 0, 0),
    "0": (14, 17, 19, 21, 25, 17, 14), "1": (4, 12, 4, 4, 4, 4, 14), "2": (14, 17, 1, 2, 4, 8, 31),
    "3": (31, 2, 4, 2, 1, 17, 14), "4": (2, 6, 10, 18, 31, 2, 2), "5": (31, 16, 30, 1, 1, 17, 14),
    "6": (6, 8, 16, 30, 17, 17, 14), "7": (31, 1, 2, 4, 8, 8, 8), "8": (14, 17, 17, 14, 17, 17, 14),
    "9": (14, 17, 17, 15, 1, 2, 12),
    "A": (14, 17, 17, 31, 17, 17, 17), "B": (30, 17, 17, 30, 17, 17, 30), "C": (14, 17, 16, 16, 16, 17, 14),
    "D": (28, 18, 17, 17, 17, 18, 28), "E": (31, 16, 16, 30, 16, 16, 31), "F": (31, 16, 16, 30, 16, 16, 16),
    "G": (14, 17, 16, 23, 17, 17, 15), "H": (17, 17, 17, 31, 17, 17, 17), "I": (14, 4, 4, 4, 4, 4, 14),
    "J": (7, 2, 2, 2, 2, 18, 12), "K": (17, 18, 20, 24, 20, 18, 17), "L": (16, 16, 16, 16, 16, 16, 31),
    "M": (17, 27, 21, 21, 17, 17, 17), "N": (17, 17, 25, 21, 19, 17, 17), "O": (14, 17, 17, 17, 17, 17, 14),
    "P": (30, 17, 17, 30, 16, 16, 16), "Q": (14, 17, 17, 17, 21, 18, 13), "R": (30, 17, 17, 30, 20, 18, 17),
    "S": (15, 16, 16, 14, 1, 1, 30), "T": (31, 4, 4, 4, 4, 4, 4), "U": (17, 17, 17, 17, 17, 17, 14),
    "V": (17, 17, 17, 17, 17, 10, 4), "W": (17, 17, 17, 21, 21, 21, 10), "X": (17, 17, 10, 4, 10, 17, 17),
    "Y": (17, 17, 17, 10, 4, 4, 4), "Z": (31, 1, 2, 4, 8, 16, 31),
    ".": (0, 0, 0, 0, 0, 12, 12), ",": (0, 0, 0, 0, 12, 4, 8), "-": (0, 0, 0, 31, 0, 0, 0),
    "/": (0, 1, 2, 4, 8, 16, 0), ":": (0, 12, 12, 0, 12, 12, 0), "(": (2, 4, 8, 8, 8, 4, 2),
    ")": (8, 4, 2, 2, 2, 4, 8), "%": (24, 25, 2, 4, 8, 19, 3), "=": (0, 0, 31, 0, 31, 0, 0),
    "+": (0, 4, 4, 31, 4, 4, 0), "_": (0, 0, 0, 0, 0, 0, 31),
}

WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
GREY = (200, 200, 200)
PALETTE = ((52, 101, 164), (204, 102, 0), (78, 154, 6), (117, 80, 123))


@dataclass(frozen=True, slots=True)
class Series:
    title: str
    values: Sequence[float]
    unit: str = ""


class Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.px = bytearray(WHITE * (width * height))

    def rect(self, x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]) -> None:
        x0, x1 = max(0, min(x0, x1)), min(self.width, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.height, max(y0, y1))
        row = bytes(colour) * (x1 - x0)
        for y in range(y0, y1):
            start = (y * self.width + x0) * 3
            self.px[start:start + len(row)] = row

    def text(self, x: int, y: int, s: str, colour: tuple[int, int, int] = BLACK, scale: int = 2) -> None:
        for ch in s.upper():
            glyph = _FONT.get(ch, _FONT[" "])
            for r, bits in enumerate(glyph):
                for c in range(5):
                    if bits & (16 >> c):
                        self.rect(x + c * scale, y + r * scale, x + (c + 1) * scale, y + (r + 1) * scale, colour)
            x += 6 * scale

    @staticmethod
    def text_width(s: str, scale: int = 2) -> int:
        return len(s) * 6 * scale - scale

    def png(self) -> bytes:
        raw = bytearray()
        stride = self.width * 3
        for y in range(self.height):
            raw.append(0)
            raw += self.px[y * stride:(y + 1) * stride]
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(bytes(raw), 9)) \
            + _chunk(b"IEND", b"")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _label(v: float) -> str:
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def bar_chart(title: str, categories: Sequence[str], series: Sequence[Series], *, width: int = 1000,
              panel_height: int = 260) -> bytes:
    """One panel per series (own scale), bars per category, the value printed above each bar."""
    top = 40
    height = top + len(series) * (panel_height + 20) + 10
    c = Canvas(width, height)
    c.text((width - c.text_width(title)) // 2, 12, title)
    left, right = 70, width - 20
    for i, s in enumerate(series):
        y0 = top + i * (panel_height + 20)
        c.text(left, y0, f"{s.title}" + (f" ({s.unit})" if s.unit else ""), PALETTE[i % len(PALETTE)])
        plot_top, plot_bottom = y0 + 30, y0 + panel_height - 30
        c.rect(left, plot_bottom, right, plot_bottom + 2, BLACK)
        c.rect(left, plot_top, left + 2, plot_bottom, BLACK)
        vmax = max((v for v in s.values), default=0.0) or 1.0
        for frac in (0.25, 0.5, 0.75, 1.0):
            y = plot_bottom - int((plot_bottom - plot_top) * frac)
            c.rect(left + 3, y, right, y + 1, GREY)
            lab = _label(vmax * frac)
            c.text(left - 6 - c.text_width(lab, 1), y - 3, lab, BLACK, 1)
        n = max(1, len(categories))
        slot = (right - left - 10) // n
        bar = max(4, int(slot * 0.6))
        for j, (cat, v) in enumerate(zip(categories, s.values, strict=True)):
            x = left + 10 + j * slot + (slot - bar) // 2
            h = int((plot_bottom - plot_top) * (v / vmax)) if vmax else 0
            c.rect(x, plot_bottom - h, x + bar, plot_bottom, PALETTE[i % len(PALETTE)])
            lab = _label(v)
            c.text(x + (bar - c.text_width(lab, 1)) // 2, plot_bottom - h - 10, lab, BLACK, 1)
            c.text(x + (bar - c.text_width(cat, 1)) // 2, plot_bottom + 8, cat, BLACK, 1)
    return c.png()
