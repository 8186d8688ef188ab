#!/usr/bin/env bash
# Generation throughput of `kafkatool sample --profile bench` against `kafka-ref gen` (kafka-clients 3.9.1's
# MemoryRecordsBuilder + FileRecords.append) for the same shape, in the same run: MB of .log per second of
# wall time (process start, fsync and, for kafkatool, index/snapshot/checkpoint files included) and per CPU
# second (user + sys).
# usage: benchmarks/sample_throughput.sh [DATA_DIR] [MIB]   (defaults bench-data/sample, 50 MiB per case)
# Python: $PYTHON, else python3 (kafkatool's dependencies installed).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${1:-$ROOT/bench-data/sample}
MIB=${2:-50}
PY=${PYTHON:-python3}
KREF=$(cd "$ROOT" && PYTHONPATH="$ROOT" "$PY" -m benchmarks.data kafka-ref)  # located or built by tests/support/kafkaref.py
mkdir -p "$DATA"
run() {  # label, output size file, command...
  local label=$1 out=$2; shift 2
  /usr/bin/time -f '%e %U %S' -o "$DATA/time.txt" "$@" >/dev/null 2>"$DATA/err.txt" || { cat "$DATA/err.txt"; exit 1; }
  read -r wall user sys <"$DATA/time.txt"
  local bytes; bytes=$(du -cb $out | tail -1 | cut -f1)
  awk -v l="$label" -v b="$bytes" -v w="$wall" -v u="$user" -v s="$sys" \
    'BEGIN { printf "%-44s %7.1f MB  wall %6.2f s %7.1f MB/s   cpu %6.2f s %7.1f MB/s\n", l, b/1e6, w, b/1e6/w, u+s, b/1e6/(u+s) }'
}
# magic codec value-bytes batch-records
for c in "2 none 1024 16" "2 none 100 256" "2 none 100 16" "1 none 100 16" "0 none 100 16" "0 none 1024 16" \
         "2 lz4 1024 16" "2 zstd 1024 16" "2 snappy 100 256" "2 gzip 1024 16"; do
  set -- $c
  magic=$1 codec=$2 vb=$3 br=$4
  rm -rf "$DATA/ours"
  run "kafkatool sample v$magic $codec ${vb}B x$br" "$DATA/ours/bench-0/*.log" env PYTHONPATH="$ROOT" "$PY" -m kafkatool \
    sample "$DATA/ours" --profile bench --magic "$magic" --codec "$codec" --value-bytes "$vb" --batch-records "$br" \
    --partition-bytes "${MIB}MiB"
  # the same number of records for kafka-ref (its file is then about as large for uncompressed data)
  records=$(PYTHONPATH="$ROOT" "$PY" - "$DATA/ours/bench-0" <<'EOF'
import sys
from pathlib import Path
from kafkatool.record.file_records import FileRecords
n = 0
for log in sorted(Path(sys.argv[1]).glob("*.log")):
    with FileRecords(log) as fr:
        last = None
        for b in fr.batches():
            last = b.last_offset
        n = max(n, (last or -1) + 1)
print(n)
EOF
)
  rm -f "$DATA/ref.log"
  run "kafka-ref gen    v$magic $codec ${vb}B x$br" "$DATA/ref.log" env KAFKA_REF_JAVA_OPTS="-Xmx1g" "$KREF" gen \
    --out "$DATA/ref.log" --magic "$magic" --codec "$codec" --value-bytes "$vb" --batch-records "$br" \
    --records "$records" --key-cardinality 10000
done
rm -rf "$DATA/ours" "$DATA/ref.log"
