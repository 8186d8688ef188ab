"""Kafka's limits and topic/broker defaults that kafkatool follows, each defined once (Kafka 3.9 values).

Sizes of the wire formats' headers are not here: they are derived from the layouts in ``kafkatool.record``
(``LOG_OVERHEAD``, ``RECORD_BATCH_OVERHEAD``, ``RECORD_OVERHEAD_V0`` ...).
"""

from __future__ import annotations

INT32_MAX = 0x7FFFFFFF  # Integer.MAX_VALUE: relative offsets and positions in an index are int32
INT64_MAX = 0x7FFFFFFFFFFFFFFF  # Long.MAX_VALUE: offsets are int64, and the log end offset is the last offset + 1

# max.message.bytes / message.max.bytes (TopicConfig, ServerLogConfigs): 1 MiB + Records.LOG_OVERHEAD (12 bytes:
# the offset and size fields in front of every batch). tests/record/test_layouts.py holds it to the layout.
DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 + 12
DEFAULT_SEGMENT_BYTES = 1 << 30  # segment.bytes / log.segment.bytes: 1 GiB
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes / log.index.size.max.bytes: 10 MiB
DEFAULT_INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes / log.index.interval.bytes

# LazyDownConversionRecordsSend.MAX_READ_SIZE (KIP-283): source bytes down-converted per chunk, and the size of an
# overflow buffer.
DOWN_CONVERSION_READ_SIZE = 128 * 1024
