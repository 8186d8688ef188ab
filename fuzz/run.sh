#!/usr/bin/env bash
# Run fuzz targets for SECONDS each (default 600), one after the other, each with a persistent corpus
# (fuzz/corpus/<target>, seeded from the hostile-input corpus and the golden vectors by seed_corpus.py).
# Crashes land in fuzz/artifacts/<target>/, full libFuzzer logs in fuzz/logs/<target>.log, and one
# summary line per target (executions, coverage, features, corpus, peak RSS) in fuzz/logs/summary.tsv.
#   usage: [PYTHON=python] [RSS_LIMIT_MB=512] fuzz/run.sh [SECONDS] [TARGET...]
# Without TARGETs every fuzz/fuzz_*.py runs. Needs atheris: pip install -e '.[fuzz]'.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
RSS_LIMIT_MB="${RSS_LIMIT_MB:-512}"
SECONDS_EACH="${1:-600}"; shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    for f in "$HERE"/fuzz_*.py; do TARGETS+=("$(basename "$f" .py)"); done
fi
"$PY" "$HERE/seed_corpus.py"
mkdir -p "$HERE/logs"
[ -f "$HERE/logs/summary.tsv" ] || printf 'target\tseconds\texecs\texecs_per_s\tcov\tft\tcorpus_units\tcorpus_bytes\tpeak_rss_mb\tcrashes\tended\n' \
    > "$HERE/logs/summary.tsv"
status=0
for t in "${TARGETS[@]}"; do
    mkdir -p "$HERE/corpus/$t" "$HERE/artifacts/$t"
    log="$HERE/logs/$t.log"
    echo "== $t for ${SECONDS_EACH}s (log: $log)" >&2
    start=$(date +%s)
    # -rss_limit_mb: inputs are at most 64 KiB and the targets' decompression limit is 1 MiB, so a process
    # growing past this limit allocated from an untrusted size field. -timeout: a hang is a finding.
    rc=0
    "$PY" "$HERE/$t.py" "$HERE/corpus/$t" -max_total_time="$SECONDS_EACH" -timeout=10 \
        -rss_limit_mb="$RSS_LIMIT_MB" -max_len=65536 -artifact_prefix="$HERE/artifacts/$t/" \
        -print_final_stats=1 >"$log" 2>&1 || rc=$?
    end=$(date +%s)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
    execs=$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+)/\1/p' "$log")
    eps=$(sed -nE 's/^stat::average_exec_per_sec: +([0-9]+)/\1/p' "$log")
    rss=$(sed -nE 's/^stat::peak_rss_mb: +([0-9]+)/\1/p' "$log")
    units=$(find "$HERE/corpus/$t" -type f | wc -l)
    bytes=$(du -sb "$HERE/corpus/$t" | cut -f1)
    crashes=$(find "$HERE/artifacts/$t" -type f | wc -l)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$((end - start))" "${execs:-?}" "${eps:-?}" \
        "${cov:-?}" "${ft:-?}" "$units" "$bytes" "${rss:-?}" "$crashes" "$(date -u +%FT%TZ)" >> "$HERE/logs/summary.tsv"
    tail -n 12 "$log" >&2
    [ "$rc" -eq 0 ] || { echo "!! $t exited $rc: see $log and $HERE/artifacts/$t/" >&2; status=1; }
done
exit "$status"
