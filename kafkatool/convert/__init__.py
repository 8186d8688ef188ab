"""``kafkatool downconvert``/``upconvert``'s engine: partitions and log dirs rewritten between message
formats, segment by segment, in bounded memory.
"""

from kafkatool.convert.checks import Skipped, SourceChecker
from kafkatool.convert.engine import (
    MAX_SEGMENT_BYTES,
    ConvertObserver,
    ConvertOptions,
    convert_log,
    convert_partition,
)
from kafkatool.convert.files import resolve_sources, source_batches

__all__ = ["MAX_SEGMENT_BYTES", "ConvertObserver", "ConvertOptions", "Skipped", "SourceChecker", "convert_log",
           "convert_partition", "resolve_sources", "source_batches"]
