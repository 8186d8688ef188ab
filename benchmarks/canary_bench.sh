#!/usr/bin/env bash
# kafkatool canary: wall time and peak RSS of each step on one legacy partition, against Kafka's own reader
# (kafka-ref dump --deep over the same segments, which reads every record as verify does).
#
#   benchmarks/canary_bench.sh [RECORDS]     (default 300000: a ~59 MiB v0/v1/v2 partition, every codec)
#
# Data under bench-data/canary (not in git; $BENCH_DATA). kafka-ref: located or built by tests/support/kafkaref.py.
# Python: $PYTHON, else python3 (kafkatool's dependencies installed).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-python3}"
DATA="${BENCH_DATA:-$ROOT/bench-data/canary}"
RECORDS="${1:-300000}"
export PYTHONPATH="$ROOT" NO_COLOR=1
REF="$(cd "$ROOT" && "$PY" -m benchmarks.data kafka-ref)"
K=("$PY" -m kafkatool)

rm -rf "$DATA/logs" "$DATA/w"
mkdir -p "$DATA"
"${K[@]}" sample "$DATA/logs" --topics legacy --magic mix --codec mix --records "$RECORDS" --value-bytes 200 \
  --segment-bytes 16MiB --format json >/dev/null 2>&1
BYTES=$(du -sb "$DATA/logs/legacy-0" | cut -f1)

measure() {  # label, command...: prints "label wall_s max_rss_MB" (GNU time's line is the last on stderr)
  local label=$1; shift
  local out
  /usr/bin/time -f '%e %M' "$@" >/dev/null 2>"$DATA/stderr.txt" || true
  out=$(tail -1 "$DATA/stderr.txt")
  printf '%-28s %8s s %8.1f MB\n' "$label" "${out% *}" "$(echo "${out#* } / 1024" | bc -l)"
}

echo "partition: $((BYTES / 1048576)) MiB, $RECORDS records"
measure "canary plan" "${K[@]}" canary plan "$DATA/logs" --format json
measure "canary run" "${K[@]}" canary run "$DATA/logs" -p legacy-0 -w "$DATA/w" --format json
measure "canary verify" "${K[@]}" canary verify "$DATA/w" --format json
measure "canary apply" "${K[@]}" canary apply "$DATA/w" --format json
measure "canary rollback" "${K[@]}" canary rollback "$DATA/w" --format json
SEGS=("$DATA"/logs/legacy-0/*.log)
export KAFKA_REF_JAVA_OPTS="-Xmx2g -XX:+UseParallelGC"
measure "kafka-ref dump --deep (orig)" bash -c "for s in ${SEGS[*]}; do '$REF' dump --in \$s --deep --payload crc32 >/dev/null; done"
CAN=("$DATA"/w/canary/legacy-0/*.log)
measure "kafka-ref dump --deep (can.)" bash -c "for s in ${CAN[*]}; do '$REF' dump --in \$s --deep --payload crc32 >/dev/null; done"
