"""The index check (``verify_index``): each segment's ``.index`` and ``.timeindex`` judged against a rebuild from its
``.log`` by the broker's recovery rules, CRCs checked as the recovery checks them (the verdict of
``reindex-time``'s verifying check). It runs in the task that walks the segment's first range, on the bytes that
walk read (a remote segment's mirror), so the check adds no read from storage."""

from __future__ import annotations

import os
from typing import Any

from kafkatool.scan.source import filesystem_for, is_url

INDEX_SUFFIXES = (".index", ".timeindex")


def index_check_row(topic: str, partition: int, base_offset: int, path: str, active: bool,
                    index_interval_bytes: int, local_log: str | None = None) -> dict[str, Any]:
    """One segment's index verdict as an ``INDEX_CHECK_SCHEMA`` row. ``local_log``: the segment's bytes here (a
    remote segment's mirror; its index files are fetched beside it, small)."""
    from kafkatool.reindex import verify_segment

    log = local_log or path
    if is_url(path):
        assert local_log is not None, "a remote segment is checked on its mirror"
        stem = path[:-len(".log")]
        local_stem = local_log[:-len(".log")]
        for suffix in INDEX_SUFFIXES:
            fs, inner = filesystem_for(stem + suffix)
            try:
                with fs.open_input_file(inner) as f:
                    data = f.read()
            except Exception:
                continue  # a missing index is part of the verdict
            with open(local_stem + suffix, "wb") as out:
                out.write(data)
    verdict = verify_segment(log, base_offset, active=active, index_interval_bytes=index_interval_bytes, verify=True)
    if local_log is not None and local_log != path:
        for suffix in INDEX_SUFFIXES:
            try:
                os.unlink(local_log[:-len(".log")] + suffix)
            except FileNotFoundError:
                pass
    return {"topic": topic, "partition": partition, "base_offset": base_offset, "path": path,
            "classification": verdict.classification, "severity": verdict.severity, "detail": verdict.detail,
            "offset_entries_on_disk": verdict.offset_entries_on_disk,
            "offset_entries_rebuilt": verdict.offset_entries_rebuilt,
            "time_entries_on_disk": verdict.time_entries_on_disk,
            "time_entries_rebuilt": verdict.time_entries_rebuilt}
