#!/usr/bin/env bash
# Peak RSS and wall time of one partition's fetch-sim, small vs large slice of the same log, against kafka-ref
# lazysend (kafka-clients 3.9.1) on the same input in the same run.
# usage: benchmarks/fetch_sim_memory.sh [DATA_DIR]   (default bench-data/fetchsim; Python: $PYTHON, else python3)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${1:-$ROOT/bench-data/fetchsim}
PY=${PYTHON:-python3}
KREF=$(cd "$ROOT" && PYTHONPATH="$ROOT" "$PY" -m benchmarks.data kafka-ref)  # located or built by tests/support/kafkaref.py
mkdir -p "$DATA"
LOG=$DATA/large.log
if [ ! -f "$LOG" ]; then  # ~100 MB: 1000 v2 batches of 100 records x 1000 B
  KAFKA_REF_JAVA_OPTS="-Xmx1g -XX:TieredStopAtLevel=1" "$KREF" gen --out "$LOG" --magic 2 --codec none \
    --records 100000 --batch-records 100 --value-bytes 1000 --seed 31 >/dev/null
fi
measure() {  # label, command...
  local label=$1; shift
  /usr/bin/time -v "$@" >/dev/null 2>"$DATA/time.txt" || true
  printf '%-40s rss_kb=%-8s wall=%s\n' "$label" \
    "$(awk -F': ' '/Maximum resident/{print $2}' "$DATA/time.txt")" \
    "$(awk -F': ' '/Elapsed \(wall/{print $2}' "$DATA/time.txt")"
}
for size in 1048576 10000000 100000000; do
  measure "fetch-sim to-magic 1 size $size" env PYTHONPATH="$ROOT" "$PY" -m kafkatool fetch-sim "$LOG" \
    --to-magic 1 --partition-max-bytes "$size" --fetch-max-bytes 1G --broker-fetch-max-bytes 1G \
    --out "$DATA/ours.bin" --raw
  measure "kafka-ref lazysend size $size" env KAFKA_REF_JAVA_OPTS="-Xmx2g" "$KREF" lazysend --in "$LOG" \
    --out "$DATA/ref.bin" --to-magic 1 --first-offset 0 --size "$size"
  cmp "$DATA/ours.bin" "$DATA/ref.bin" && echo "  identical output ($(stat -c %s "$DATA/ours.bin") bytes)"
done
measure "kafkatool fetch-sim --help (CLI baseline)" env PYTHONPATH="$ROOT" "$PY" -m kafkatool fetch-sim --help
