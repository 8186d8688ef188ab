#!/usr/bin/env bash
# Run every fuzz target for SECONDS each (default 600), with a persistent corpus per target seeded from
# the hostile-input corpus and the golden vectors. Crashes land in fuzz/artifacts/<target>/.
#   usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
SECONDS_EACH="${1:-600}"; shift || true
TARGETS=("$@"); [ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_records fuzz_codecs fuzz_files fuzz_dump fuzz_decoders)
"$PY" "$HERE/seed_corpus.py"
for t in "${TARGETS[@]}"; do
    mkdir -p "$HERE/corpus/$t" "$HERE/artifacts/$t"
    echo "== $t for ${SECONDS_EACH}s" >&2
    "$PY" "$HERE/$t.py" "$HERE/corpus/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=1024 \
        -max_len=65536 -artifact_prefix="$HERE/artifacts/$t/" -print_final_stats=1 2>&1 | tail -n 25
done
