"""Layer 1: Kafka's record formats as kafka-clients' ``common.record`` has them: message formats v0, v1
(``legacy_records``) and v2 (``default_records``), varints, codecs, CRCs, the batch walk of a segment
file (``file_records``), sniffing, the KIP-126 estimator, and the batch-level conversions
(``RecordsUtil.downConvert``, the v2 rebuild of legacy batches).
"""
