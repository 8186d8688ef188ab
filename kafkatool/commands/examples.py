"""Every command's Examples section (its ``--help``, its man page): real runs on the log dir that
``kafkatool sample demo`` writes, as a terminal shows them (``$ `` command lines, then what they print; ``...``
elides lines). tests/commands/test_help.py runs each one and compares, as the docs' examples are compared;
``python -m tests.support.help_examples --fill`` writes the output of an example shown as ``@@``."""
# ruff: noqa: E501  (what the commands print, verbatim)

ROOT = """\
$ kafkatool sample demo -q
$ kafkatool info demo --topic payments
log dir demo: KRaft (cluster sxRD8Wz9TA2EHR-ZhItZzA, node 1); clean shutdown; no .lock
PARTITION               SEGS       SIZE  FORMATS   CODECS                OFFSETS        LOG-START       HW  EPOCH
payments-0                 5   302.5KiB  v2        none,snappy           0..2064                0     2065      5
payments-1                 5   302.5KiB  v2        none,snappy           0..2063                0     2064      5
kafkatool info: 1 topics, 2 partitions, 10 segments, 605.0KiB of segments
"""

INFO = """\
$ kafkatool info demo --topic orders
log dir demo: KRaft (cluster sxRD8Wz9TA2EHR-ZhItZzA, node 1); clean shutdown; no .lock
PARTITION               SEGS       SIZE  FORMATS   CODECS                OFFSETS        LOG-START       HW  EPOCH
orders-0                   3   282.3KiB  v2        lz4                   628..2499            628     2500      2
orders-1                   2   181.1KiB  v2        lz4                   1303..2499          1375     2500      2
orders-2                   3   282.9KiB  v2        lz4                   611..2499            611     2500      2
kafkatool info: 1 topics, 3 partitions, 8 segments, 746.2KiB of segments
"""

DUMP = """\
$ kafkatool dump demo/orders-1 --count
635 demo/orders-1/00000000000000001303.log
562 demo/orders-1/00000000000000001938.log
1197 total
$ kafkatool dump demo/payments-0/00000000000000000000.log --deep --control-type abort --to-offset 120 -q
== demo/payments-0/00000000000000000000.log (log, 63.8KiB, base offset 0)
@11204 offsets 73..73 count 1 v2 none 78B CreateTime 2024-06-03T08:01:53.436Z crc ok producer 136533 epoch 4 seq -1..-1 leaderEpoch 4 transactional control
  73 2024-06-03T08:01:53.436Z ABORT coordinatorEpoch 18
@16838 offsets 110..110 count 1 v2 none 78B CreateTime 2024-06-03T08:02:18.971Z crc ok producer 43529 epoch 5 seq -1..-1 leaderEpoch 4 transactional control
  110 2024-06-03T08:02:18.971Z ABORT coordinatorEpoch 1
-- 2 batches, 2 records, 20895 of 65308 bytes in batches, stopped at to-offset
$ kafkatool dump demo/orders-0 --verify --summary-only
15 files, 88 batches, 1872 records, 282.3KiB, offsets 628..2499, 107 entries; codecs: lz4 88; findings: 0 errors, 0 warnings, 0 info
"""

OFFSETS_FOR_TIMES = """\
$ kafkatool offsets-for-times demo --topic orders --partition 0 --time 2024-06-03T08:10:00Z --time latest
PARTITION              TIME                       OFFSET TIMESTAMP                EPOCH
orders-0               2024-06-03T08:10:00Z         1055 2024-06-03T08:10:05.692Z 1
orders-0               latest                       2500 -                        2
"""

# A KRaft node's metadata log (sample writes none): docs/metadata.md shows these runs on a real 3.9 node.
METADATA = """\
$ kafkatool metadata /var/lib/kafka/meta/__cluster_metadata-0
$ kafkatool metadata /var/lib/kafka/meta --at-time 2026-11-02T10:00:00Z -f json
$ kafkatool metadata /var/lib/kafka/meta --diff 34 75
"""

REINDEX_TIME = """\
$ kafkatool reindex-time demo
kafkatool reindex-time: checked 77 segments (4.2MiB) in 0.09 s, 45.5MiB/s: 0 errors, 0 warnings, 0 info
$ kafkatool reindex-time demo/orders-0 --output rebuilt
orders-0/00000000000000000628.index: wrote .../rebuilt/orders-0/00000000000000000628.index
orders-0/00000000000000000628.timeindex: wrote .../rebuilt/orders-0/00000000000000000628.timeindex
orders-0/00000000000000001260.index: wrote .../rebuilt/orders-0/00000000000000001260.index
orders-0/00000000000000001260.timeindex: wrote .../rebuilt/orders-0/00000000000000001260.timeindex
orders-0/00000000000000001895.index: wrote .../rebuilt/orders-0/00000000000000001895.index
orders-0/00000000000000001895.timeindex: wrote .../rebuilt/orders-0/00000000000000001895.timeindex
kafkatool reindex-time: rebuilt 3 segments (282.3KiB) in 0.15 s, 1.8MiB/s: 0 errors, 0 warnings, 0 info; 6 files written
"""

DOWNCONVERT = """\
$ kafkatool downconvert demo/payments-0 payments-v1 --to-magic 1
kafkatool downconvert: warning: payments-0: dropped batches at the end lowered the log end offset: empty segment 00000000000000002065.log keeps it at 2065
kafkatool downconvert: warning: payments-0: dropped 65 transaction markers (48 commits, 17 aborts), as Kafka's down-conversion does: formats v0/v1 have none; 324 records of 17 aborted transactions become visible to old consumers as if committed
payments-0: demo/payments-0 -> payments-v1/payments-0 (magic 1)
  segments   5 in, 6 out
  records    2000 in, 2000 out
  bytes      309729 in (302.5KiB), 198068 out (193.4KiB)
  batches    376 in, 311 written (311 built, 0 copied unchanged)
  ...
"""

UPCONVERT = """\
$ kafkatool upconvert demo/sensors-2016-0 sensors-v2
sensors-2016-0: demo/sensors-2016-0 -> sensors-v2/sensors-2016-0 (magic 2)
  segments   4 in, 4 out
  records    1200 in, 1200 out
  bytes      100358 in (98.0KiB), 94769 out (92.5KiB)
  batches    39 in, 39 written (39 built, 0 copied unchanged)
  ...
"""

FETCH_SIM = """\
$ kafkatool fetch-sim demo/orders-0 --fetch-version 2 --fetch-offset 1000
orders-0: fetch v2 (magic 1) from offset 1000: overflow
  read: 00000000000000000628.log @ 51900, slice 44582 bytes (max 1048576, min one message no, first batch last offset 1001, 5436 bytes)
  committed 44582 bytes; converted 30071 bytes in 2 chunk(s) of <= 128KiB; written 44582
  wire: 13 complete batch(es) (30071 bytes), 295 record(s); tail overflow 14511 bytes
  consumer: records, returns 260 record(s) (1000..1259), next fetch offset 1260; duplicates 0, below fetch offset 35
  padding 14511 bytes (1 overflow header(s)), cut 0 bytes, peak conversion memory 135.9KiB
response: FetchResponse v2, 1 partition(s), size prefix 44624 (+4), records 44582 bytes
"""

CANARY = """\
$ kafkatool canary plan demo | head -1
canary plan: demo (KRaft), target message format v2
$ kafkatool canary run demo --partitions 'sensors-*' --workdir c1 -q
$ kafkatool canary verify c1 -q | tail -3
────────────────────────────────────────
sensors-2016-0   original
sensors-2017-0   original
"""

CANARY_PLAN = """\
$ kafkatool canary plan demo | head -2
canary plan: demo (KRaft), target message format v2
15 partitions of 8 topics: 4.2MiB in 3844 batches, 31520 records
"""

CANARY_RUN = """\
$ kafkatool canary run demo --partitions sensors-2016-0 --workdir c1
kafkatool canary run: sensors-2016-0: copying the originals
kafkatool canary run: sensors-2016-0: converting to v2
canary run: 1 partition(s) of .../demo -> c1
PARTITION        SEGS        IN       OUT   DELTA    BATCHES   BUILT   COPIED   RECORDS
───────────────────────────────────────────────────────────────────────────────────────
sensors-2016-0      4   98.0KiB   92.5KiB   -5.6%   39 -> 39      39        0      1200
kafkatool canary run: next: kafkatool canary verify c1
"""

CANARY_VERIFY = """\
$ kafkatool canary run demo --partitions sensors-2016-0 --workdir c1 -q
$ kafkatool canary verify c1 -q
canary verify: c1
PARTITION        RESULT   ITEMS   ORIGINAL    CANARY   DELTA    BATCHES   COMPRESSION
─────────────────────────────────────────────────────────────────────────────────────────
sensors-2016-0   ok        1200    98.0KiB   92.5KiB   -5.6%   39 -> 39   gzip 1.01->1.06
(COMPRESSION: key+value bytes per stored byte, original -> canary)
  sensors-2016-0: expected: v0 records without a timestamp: timestamp -1, type CreateTime: 1200
  sensors-2016-0: expected: legacy per-message CRC-32 replaced by the v2 batch CRC-32C: 1200
  sensors-2016-0: expected: compressed legacy wrappers recompressed into v2 batches (same records, new bytes): 39
log dir .../demo
PARTITION        IN THE LOG DIR   DETAIL
────────────────────────────────────────
sensors-2016-0   original
"""

CANARY_REHEARSE = """\
$ kafkatool canary rehearse /tmp/canary1 --kafka /opt/kafka_2.13-3.9.2 --clients clients.txt | head -8
canary rehearse: /tmp/canary1 on Kafka 3.9.2 (kraft), /usr/bin/java (Java 17): PASSED
the broker answers Fetch v0-v17, Produce v0-v11
Loaded (as after canary apply, then with recovery forced)
PARTITION         LOG END   LOADED        RECOVERED      BROKER LOG    READS    PRODUCED
────────────────────────────────────────────────────────────────────────────────────────
legacy-events-0      3000   13 segments   ends at 3035   17 expected   6/6 ok   4/4 ok
sensors-2016-0       1200   4 segments    ends at 1259   4 expected    6/6 ok   4/4 ok
sensors-2017-0       1200   4 segments    ends at 1256   5 expected    6/6 ok   4/4 ok
"""

CANARY_APPLY = """\
$ kafkatool canary run demo --partitions sensors-2016-0 --workdir c1 -q
$ kafkatool canary verify c1 -q > /dev/null
$ kafkatool canary apply c1
kafkatool canary apply: sensors-2016-0: original -> canary (16 change(s))
canary apply: .../demo
PARTITION        BEFORE     AFTER    CHANGES
────────────────────────────────────────────
sensors-2016-0   original   canary        16
"""

CANARY_ROLLBACK = """\
$ kafkatool canary run demo --partitions sensors-2016-0 --workdir c1 -q
$ kafkatool canary verify c1 -q > /dev/null
$ kafkatool canary apply c1 -q > /dev/null
$ kafkatool canary rollback c1
kafkatool canary rollback: sensors-2016-0: canary -> original (16 change(s))
canary rollback: .../demo
PARTITION        BEFORE   AFTER      CHANGES
────────────────────────────────────────────
sensors-2016-0   canary   original        16
"""

SPARK_SCAN = """\
$ kafkatool spark-scan demo --engine local-processes --level topic --topic 'orders' -q
TOPIC   PARTITIONS  SEGMENTS  BATCHES  RECORDS   BYTES  UNCOMPRESSED  RATIO  OFFSETS    FIRST-TIMESTAMP           LAST-TIMESTAMP            OOO-TS  CRC-FAIL  TXN  CTRL  MAX-BATCH  ~KEYS
orders           3         8      238     4958  764125       1917703   2.51  611..2499  2024-06-03T08:05:37.885Z  2024-06-03T08:30:52.104Z       2         0    0     0       5916    508

TOPIC   MAGIC  CODEC  BATCHES  RECORDS   BYTES  UNCOMPRESSED  RATIO
orders      2  lz4        238     4958  764125       1917703   2.51

total: 1 topics, 3 partitions, 8 segments, 238 batches, 4958 records, 764125 bytes (1917703 uncompressed, ratio 2.51), 0 batches over max.message.bytes (largest 5916), 0 CRC failures, 0 decode failures
"""

SAMPLE = """\
$ kafkatool sample txn --topics payments --partitions 2 --transactional --records 200
PARTITION              FORMATS   CODECS                 SEGS  RECORDS OFFSETS              SIZE  NOTES
payments-0             v2        none                      1      200 0..204            23.8KiB  txns 5 committed/0 aborted; leader epochs 0
payments-1             v2        none                      1      200 0..204            23.8KiB  txns 2 committed/3 aborted; leader epochs 0
kafkatool sample: wrote 2 partitions of 1 topics, 400 records, 47.6KiB of segments to txn in 0.12 s (401.8KiB/s; profile custom, seed 1)
"""

COMPLETION = """\
$ mkdir -p ~/.local/share/bash-completion/completions
$ kafkatool completion bash > ~/.local/share/bash-completion/completions/kafkatool
$ kafkatool completion zsh | head -1
#compdef kafkatool
"""

MAN = """\
$ kafkatool man dump | head -2
.TH "KAFKATOOL-DUMP" "1" "2026-11-22" "kafkatool 0.1.0" "kafkatool manual"
.SH NAME
$ kafkatool man --output ~/.local/share/man/man1
"""
