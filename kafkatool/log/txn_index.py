"""The ``.txnindex`` aborted-transaction index (``TransactionIndex``, ``AbortedTxn``). Spec §4.3.

Entry (34 bytes)::  version int16 | producerId int64 | firstOffset int64 | lastOffset int64 |
                    lastStableOffset int64

Not preallocated, append-only, created only when a segment holds an aborted transaction. Kafka's
``AbortedTxn.version()`` reads a single *byte* at offset 0 (the high byte of the int16): we keep that.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from kafkatool.errors import CorruptDataError, InputError
from kafkatool.log.layout import offset_from_filename
from kafkatool.util.printable import shown
from kafkatool.util.regular import open_regular

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
CURRENT_VERSION = 0
MAX_TXN_INDEX_READ = 1 << 30


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION


def read_txn_index(path: str | os.PathLike[str], *, strict: bool = True) -> list[AbortedTxn]:
    """All entries. A trailing partial entry is ``CorruptDataError`` with ``strict`` (Kafka: "Unexpected
    partial transaction index entry"), else ignored."""
    p = Path(path)
    try:
        with open_regular(p) as f:
            if f.size > MAX_TXN_INDEX_READ:
                raise InputError("transaction index is implausibly large", path=p)
            data = f.read_all()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=p) from None
    out = []
    n = len(data) // ENTRY_SIZE
    for i in range(n):
        _, pid, first, last, lso = ENTRY.unpack_from(data, i * ENTRY_SIZE)
        version = data[i * ENTRY_SIZE]  # AbortedTxn.version(): buffer.get(0)
        if version > CURRENT_VERSION:
            raise CorruptDataError(f"Unexpected aborted transaction version {version}, current version is "
                                   f"{CURRENT_VERSION}", path=p, position=i * ENTRY_SIZE)
        out.append(AbortedTxn(pid, first, last, lso, version))
    if strict and len(data) % ENTRY_SIZE:
        raise CorruptDataError(f"Unexpected partial transaction index entry ({len(data) % ENTRY_SIZE} trailing "
                               "bytes)", path=p, position=n * ENTRY_SIZE)
    return out


def encode_txn_index(entries: list[AbortedTxn]) -> bytes:
    return b"".join(ENTRY.pack(e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
                    for e in entries)


def txn_index_sanity_check(path: str | os.PathLike[str], base_offset: int | None = None) -> None:
    """``TransactionIndex.sanityCheck``: no entry may end before the segment's base offset."""
    p = Path(path)
    base = offset_from_filename(p.name) if base_offset is None else base_offset
    for i, e in enumerate(read_txn_index(p)):
        if e.last_offset < base:
            raise CorruptDataError(f"Last offset of aborted transaction {e} in index {shown(p.name)} is less than "
                                   f"start offset {base}", path=p, position=i * ENTRY_SIZE)
