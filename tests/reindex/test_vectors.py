"""Rebuilt indexes of committed Kafka-written segments against entries worked out by hand.

The segments are in ``tests/vectors/reindex`` (written by kafka-clients 3.9.1 through ``kafka-ref gen`` and by
``kafkatool sample``; the commands are in its README). The batch table above each case is Kafka's own
reading of the file (``kafka-ref dump``: position, size, magic, codec, last offset, maxTimestamp), and the
expected entries were derived from it by hand with the 3.9 ``LogSegment.recover`` rules (KAFKA-FORMATS §4.2):

* the walk keeps ``lastIndexEntry`` (0 at the start); a batch at position ``P`` is an index point when
  ``P - lastIndexEntry > index.interval.bytes`` (strictly), which then becomes ``P``;
* before that test the running maximum is updated: ``batch.maxTimestamp > maxSoFar`` (strictly) makes it
  ``(batch.maxTimestamp, batch.lastOffset)``; v0 batches have no timestamp (-1);
* an index point appends ``(lastOffset - base, P)`` to the ``.index`` and offers the running maximum to
  ``TimeIndex.maybeAppend``, which appends ``(maxSoFar, itsOffset - base)`` only if the timestamp is above
  the last appended one (the empty index's last entry is (-1, base));
* at the end ``maybeAppend`` is offered the segment's maximum once more (the roll entry).

Nothing here is computed by kafkatool: the expected bytes are the literal tuples below, packed as
``.index`` (int32 relative offset, int32 position) and ``.timeindex`` (int64 timestamp, int32 relative offset).
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from kafkatool.log.recovery import recover_segment
from tests.support.cli import run_cli
from tests.support.paths import VECTORS

REINDEX_VECTORS = VECTORS / "reindex"
T = 1_700_000_000_000  # kafka-ref gen's default --start-ts


def offset_index(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries)


def time_index(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">qi", ts, rel) for ts, rel in entries)


# mixed-0, base 5000 (ts = T + n; v0 has none):
#  i   pos size  magic codec   last  maxTimestamp
#  0     0  233  v0 none       5000  -1
#  1   233  233  v0 none       5001  -1
#  2   466  233  v0 none       5002  -1
#  3   699  636  v1 gzip       5005  T+5
#  4  1335  670  v2 lz4        5008  T+8
#  5  2005  737  v0 snappy     5011  -1
#  6  2742  241  v1 none       5012  T+12
#  7  2983  241  v1 none       5013  T+13
#  8  3224  241  v1 none       5014  T+14
#  9  3465  643  v2 gzip       5017  T+17
# 10  4108  682  v0 lz4        5020  -1
# 11  4790  738  v1 snappy     5023  T+23
# 12  5528  709  v2 none       5026  T+26
# 13  6237  668  v0 gzip       5029  -1
# 14  6905  683  v1 lz4        5032  T+32
# 15  7588  734  v2 snappy     5035  T+35
# 16  8322  233  v0 none       5036  -1
# 17  8555  233  v0 none       5037  -1
# 18  8788  233  v0 none       5038  -1
# 19  9021  278  v1 gzip       5039  T+39
MIXED_4096 = (
    # > 0 + 4096: batch 10 at 4108 (batch 9 at 3465 is not); > 4108 + 4096 = 8204: batch 16 at 8322.
    offset_index((20, 4108), (36, 8322)),
    # At batch 10 the max is T+17 from batch 9 (5017; batch 10 is v0, -1); at batch 16, T+35 from batch 15
    # (5035); the roll entry is the segment's max T+39 (batch 19, 5039), above T+35 so appended.
    time_index((T + 17, 17), (T + 35, 35), (T + 39, 39)),
)
MIXED_1000 = (
    # > 1000: batch 4 (1335); > 2335: batch 6 (2742); > 3742: batch 10 (4108); > 5108: batch 12 (5528);
    # > 6528: batch 14 (6905); > 7905: batch 16 (8322); > 9322: none (the last batch starts at 9021).
    offset_index((8, 1335), (12, 2742), (20, 4108), (26, 5528), (32, 6905), (36, 8322)),
    # The running max at each point: T+8 (5008), T+12 (5012), T+17 (5017, batch 10 is v0), T+26 (5026),
    # T+32 (5032), T+35 (5035, batch 16 is v0): each above the last, so each appended; then the roll T+39.
    time_index((T + 8, 8), (T + 12, 12), (T + 17, 17), (T + 26, 26), (T + 32, 32), (T + 35, 35), (T + 39, 39)),
)

# lat-0, base 0, LogAppendTime (v1 messages of one builder batch share the append time):
#  i   pos  size  magic codec  last  maxTimestamp
#  0     0   341  v1 none      0     T+3      (batches 0-3: T+3)
#  4  1363  1275  v2 gzip      7     T+7
#  5  2638   341  v1 none      8     T+11     (batches 5-8 at 2638, 2979, 3320, 3661: offsets 8-11, T+11)
#  9  4001  1315  v2 gzip      15    T+15
# 10  5316   341  v1 none      16    T+19     (batches 10-13 at 5316, 5657, 5998, 6339: offsets 16-19)
# 14  6680  1279  v2 gzip      23    T+23
# 15  7959   341  v1 none      24    T+27     (batches 15-18 at 7959, 8300, 8641, 8982: offsets 24-27)
# 19  9323  1285  v2 gzip      31    T+31
# 20 10608   341  v1 none      32    T+35     (batches 20-23 at 10608, 10949, 11290, 11631: offsets 32-35)
LAT_4096 = (
    # > 4096: batch 9 at 4001 is not (4001 <= 4096), batch 10 at 5316 is; > 5316 + 4096 = 9412: batch 20 at
    # 10608; > 14704: none (the file ends at 11972).
    offset_index((16, 5316), (32, 10608)),
    # At batch 10 the max is T+19, first reached by batch 10 itself (offset 16); at batch 20, T+35 first
    # reached by batch 20 (offset 32; batches 21-23 equal it, not above). The roll entry would be (T+35, 32)
    # again: not above the last entry's timestamp, so not appended: two entries.
    time_index((T + 19, 16), (T + 35, 32)),
)

# txn-0, base 100 (C = COMMIT/ABORT marker, 78 bytes, stamped like the data before it):
#  i   pos  size  codec  last  maxTimestamp
#  0     0  1124  none   103   T+3
#  1  1124  1072  zstd   107   T+7
#  2  2196    78  C      108   T+7
#  3  2274  1124  none   112   T+11
#  4  3398  1008  zstd   116   T+15
#  5  4406    78  C      117   T+15
#  6  4484  1125  none   121   T+19
#  7  5609  1061  zstd   125   T+23
#  8  6670    78  C      126   T+23
#  9  6748  1125  none   130   T+27
# 10  7873  1041  zstd   134   T+31
# 11  8914    78  C      135   T+31
# 12  8992  1125  none   139   T+35
# 13 10117  1035  zstd   143   T+39
# 14 11152    78  C      144   T+39
TXN_4096 = (
    # > 4096: batch 5 (a marker) at 4406: its last offset 117 -> relative 17; > 4406 + 4096 = 8502: batch 11
    # (a marker) at 8914 -> 35; > 13010: none.
    offset_index((17, 4406), (35, 8914)),
    # At batch 5 the max is T+15, reached first by batch 4 (116 -> 16): the marker's equal T+15 does not
    # move it. At batch 11: T+31 from batch 10 (134 -> 34). Roll: T+39 from batch 13 (143 -> 43), not the
    # marker 144.
    time_index((T + 15, 16), (T + 31, 34), (T + 39, 43)),
)

# big-0, base 0 (three ~5 KB batches whose timestamps step back, then small ones stepping up by 5):
#  i   pos  size  codec  last  maxTimestamp
#  0     0  5051  none   11    T
#  1  5051  5053  none   23    T-24
#  2 10104  5053  none   35    T-48
#  3 15157   377  none   36    T+100
#  4 15534   390  lz4    37    T+105    (then one batch per offset 38..51, T+110 .. T+175, at
#  ...                                   15924 16301 16691 17067 17459 17836 18203 18580 18965
# 14 19342   392  lz4    47    T+155     19342 19734 20109 20501 20878; file ends at 21270)
# 18 20878   392  lz4    51    T+175
BIG_4096 = (
    # Each big batch is itself more than the interval past the last point: 5051 > 4096, 10104 - 5051 = 5053,
    # 15157 - 10104 = 5053 (batch 3, the first small one); then > 15157 + 4096 = 19253: batch 14 at 19342.
    offset_index((23, 5051), (35, 10104), (36, 15157), (47, 19342)),
    # At batch 1 the max is T from batch 0 (offset 11): appended. At batch 2 still (T, 11): not above, no
    # entry. At batch 3 its own T+100 (36) is folded in before the point: appended. At batch 14: T+155 (47).
    # Roll: T+175 (51).
    time_index((T, 11), (T + 100, 36), (T + 155, 47), (T + 175, 51)),
)

# orders-0 (kafkatool sample), base 0, S = 1717401600000 (the sample's start time, 2024-06-03T08:00:00Z):
#  i   pos  size  magic codec  last  maxTimestamp
#  0     0   819  v0 gzip      2     -1       (batches 1-8, v0, at 819 1371 2946 3243 3427 3787 4107 4295:
#  7  4107   188  v0 none      18    -1        last offsets 5 13 14 15 16 17 18 19)
#  9  4569  2237  v1 gzip      27    S+8947
# 10  6806   107  v1 none      28    S+9128
# 11  6913   203  v1 none      29    S+9129
# 12  7116   103  v1 none      30    S+9446
# 13  7219   428  v1 none      31    S+9447
# 14  7647   436  v1 none      32    S+9448
# 15  8083   177  v1 none      33    S+9449
# 16  8260   426  v1 none      34    S+9450
#      (17-23: v1 none at 8686 9053 9273 9541 9872 10182 10334, offsets 35-41, S+9451 .. S+9577)
# 24 10693  1025  v2 gzip      48    S+9836   (transactional)
# 25 11718    78  v2 marker    49    S+10480
# 26 11796  1494  v2 lz4       56    S+10471
# 27 13290  1044  v2 gzip      60    S+10898
# 28 14334    78  v2 marker    61    S+10848
# 29 14412    78  v2 marker    62    S+10953  (file ends at 14490)
S = 1_717_401_600_000
ORDERS_4096 = (
    # > 4096: batch 7 at 4107; > 8203: batch 16 at 8260; > 12356: batch 27 at 13290; > 17386: none.
    offset_index((18, 4107), (34, 8260), (60, 13290)),
    # At batch 7 every batch so far is v0: the max is still -1, not above the empty index's -1: no entry.
    # At batch 16: S+9450, first reached by batch 16 itself (34). At batch 27: the marker 25 raised the max
    # to S+10480 (49), batch 26's S+10471 did not, batch 27's S+10898 (60) did. Roll: batch 28's S+10848 is
    # lower, batch 29's S+10953 (62) is the segment's max.
    time_index((S + 9450, 34), (S + 10898, 60), (S + 10953, 62)),
)

CASES = [
    pytest.param("mixed-0", 5000, 4096, MIXED_4096, id="mixed-v0-v1-v2"),
    pytest.param("mixed-0", 5000, 1000, MIXED_1000, id="mixed-v0-v1-v2-interval-1000"),
    pytest.param("lat-0", 0, 4096, LAT_4096, id="log-append-time"),
    pytest.param("txn-0", 100, 4096, TXN_4096, id="transactional-markers"),
    pytest.param("big-0", 0, 4096, BIG_4096, id="larger-and-smaller-than-interval"),
    pytest.param("orders-0", 0, 4096, ORDERS_4096, id="kafkatool-sample"),
]


def segment(name: str, base: int) -> Path:
    return REINDEX_VECTORS / name / f"{base:020d}.log"


@pytest.mark.parametrize("method", ["fast", "reference"])
@pytest.mark.parametrize("verify", [False, True], ids=["headers", "verify"])
@pytest.mark.parametrize(("name", "base", "interval", "expected"), CASES)
def test_rebuild_equals_the_hand_worked_entries(name, base, interval, expected, method, verify):
    log = segment(name, base)
    r = recover_segment(log, base, index_interval_bytes=interval, verify=verify, method=method)
    assert r.encode_offset_index() == expected[0]
    assert r.encode_time_index() == expected[1]
    # Kafka wrote every byte: recovery keeps the whole file.
    assert (r.valid_bytes, r.error, r.fatal) == (log.stat().st_size, None, None)


def test_the_sample_wrote_the_same_indexes_the_broker_would_rebuild():
    # kafkatool sample writes its own indexes; they must be the 3.9 recover result worked out above.
    part = REINDEX_VECTORS / "orders-0"
    assert (part / "00000000000000000000.index").read_bytes() == ORDERS_4096[0]
    assert (part / "00000000000000000000.timeindex").read_bytes() == ORDERS_4096[1]


def test_cli_output_writes_the_hand_worked_files(tmp_path):
    logs = tmp_path / "logs"
    for name in ("mixed-0", "lat-0", "txn-0", "big-0", "orders-0"):
        shutil.copytree(REINDEX_VECTORS / name, logs / name)
    out = tmp_path / "out"
    r = run_cli("reindex-time", logs, "--output", out, "--verify", "-q")
    assert r.returncode == 0, r.stderr
    for name, base, expected in (("mixed-0", 5000, MIXED_4096), ("lat-0", 0, LAT_4096), ("txn-0", 100, TXN_4096),
                                 ("big-0", 0, BIG_4096), ("orders-0", 0, ORDERS_4096)):
        mirror = next(out.rglob(name))
        assert (mirror / f"{base:020d}.index").read_bytes() == expected[0], name
        assert (mirror / f"{base:020d}.timeindex").read_bytes() == expected[1], name
