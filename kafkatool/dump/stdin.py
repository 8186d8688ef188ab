"""``dump -``: one file read from standard input, in bounded memory, its kind given or sniffed from its bytes.

A regular file on stdin (``< 00000000000000000000.log``) is read in place, through a link to the descriptor; a
pipe is copied to a temporary file a megabyte at a time (the walk maps files, and a segment can be larger than
memory). The file is then named as its kind (``00000000000000000000.<suffix>``: base offset 0, as nothing
else says otherwise) and dumped like any other, shown as ``-``.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from kafkatool.dump.events import FileKind
from kafkatool.errors import InputError
from kafkatool.record.file_records import FileRecords
from kafkatool.record.sniff import MAX_SNIFF, looks_like

SPOOL_CHUNK = 1 << 20
STDIN_NAME = "-"

# dump's ``kind`` values -> the file kind, and a name dump's planning reads as that kind.
KINDS: dict[str, tuple[FileKind, str]] = {
    "log": (FileKind.LOG, "00000000000000000000.log"),
    "index": (FileKind.INDEX, "00000000000000000000.index"),
    "timeindex": (FileKind.TIME_INDEX, "00000000000000000000.timeindex"),
    "txnindex": (FileKind.TXN_INDEX, "00000000000000000000.txnindex"),
    "snapshot": (FileKind.PRODUCER_SNAPSHOT, "00000000000000000000.snapshot"),
    "checkpoint": (FileKind.OFFSET_CHECKPOINT, "recovery-point-offset-checkpoint"),
    "leader-epoch-checkpoint": (FileKind.LEADER_EPOCH_CHECKPOINT, "leader-epoch-checkpoint"),
}


def sniff_kind(path: Path) -> str | None:
    """The ``kind`` the bytes of ``path`` look like: a log when a valid batch starts at byte 0, else one of
    Kafka's other partition files by their exact structure (``record.sniff``); None when none of them."""
    from kafkatool.dump.resync import valid_batch_at

    fr = FileRecords(path)
    try:
        if fr.size and valid_batch_at(fr.buf, 0, fr.size, fr):
            return "log"
        what = looks_like(fr.buf, fr.file_size) or ""
    finally:
        fr.close()
    for words, kind in (("an offset index", "index"), ("a time index", "timeindex"),
                        ("a transaction index", "txnindex"), ("a producer state snapshot", "snapshot")):
        if what.startswith(words):
            return kind
    if what.startswith("a text file"):
        with open(path, "rb") as f:
            lines = f.read(MAX_SNIFF).decode("ascii", "replace").splitlines()
        if len(lines) >= 3 and lines[0].strip() == "0" and lines[1].strip().isdigit():
            return "leader-epoch-checkpoint" if len(lines[2].split()) == 2 else "checkpoint"
    return None


@contextmanager
def stdin_file(stream: BinaryIO, kind: str | None) -> Iterator[tuple[Path, FileKind]]:
    """``stream`` as a file of ``kind`` (None: sniffed) while the context lasts."""
    with tempfile.TemporaryDirectory(prefix="kafkatool-stdin-") as d:
        spool = Path(d) / "stdin"
        try:
            fd: int | None = stream.fileno()
        except (OSError, ValueError, AttributeError):
            fd = None
        if fd is not None and stat.S_ISREG(os.fstat(fd).st_mode) and os.path.exists(f"/proc/self/fd/{fd}"):
            os.symlink(f"/proc/self/fd/{fd}", spool)
        else:
            try:
                with open(spool, "wb") as out:
                    shutil.copyfileobj(stream, out, SPOOL_CHUNK)
            except OSError as e:
                raise InputError(f"cannot read stdin: {e.strerror or e}", path=STDIN_NAME) from None
        name = kind or sniff_kind(spool) or "log"  # unrecognized: walked as a log, which says what it holds
        file_kind, file_name = KINDS[name]
        named = Path(d) / file_name
        os.rename(spool, named)
        yield named, file_kind
