"""``kafkatool dump``'s engine: files in dump order, the batch walk with its findings, the other files of
a partition dir, and the renderers (Kafka's DumpLogSegments text, kafkatool's text and JSON lines).

The names below are what other engines use: ``spark-scan`` walks byte ranges of segments with this engine
(``DumpEngine.dump_file`` with ``start``/``stop``) and sees the batches through a ``BatchObserver``, so its
findings are dump's own.
"""

from kafkatool.dump.engine import DumpEngine
from kafkatool.dump.events import (
    DEFAULT_RESYNC_LIMIT,
    BatchObserver,
    DumpOptions,
    FileEnd,
    FileKind,
    Finding,
    Severity,
)

__all__ = ["DEFAULT_RESYNC_LIMIT", "BatchObserver", "DumpEngine", "DumpOptions", "FileEnd", "FileKind", "Finding",
           "Severity"]
