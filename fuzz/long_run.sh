#!/usr/bin/env bash
# A long fuzzing run of the bundle reader over many cores: WORKERS libFuzzer processes (-jobs)
# sharing one corpus folder (each reloads what the others add), each stopping after RUNS
# executions or SECONDS seconds, whichever comes first. Prints one line a worker and the
# total; exits non-zero when a worker found a crash, a leak or a sanitizer report, or did not
# finish. The fuzzer is built by fuzz/CMakeLists.txt (clang); the run needs no GPU.
#   fuzz/long_run.sh FUZZER CORPUS WORKERS RUNS SECONDS [LOG_DIR]
set -uo pipefail
[ $# -ge 5 ] || { sed -n 2,7p "$0" >&2; exit 2; }
fuzzer=$(realpath "$1") corpus=$(realpath "$2") workers=$3 runs=$4 seconds=$5
logs=$(realpath -m "${6:-fuzz-logs}")
mkdir -p "$logs/artifacts"
cd "$logs" || exit 2
rm -f fuzz-*.log
start=$(date +%s)
"$fuzzer" "$corpus" -jobs="$workers" -workers="$workers" -runs="$runs" \
  -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -reload=1 \
  -print_final_stats=1 -artifact_prefix="$logs/artifacts/" >/dev/null 2>&1
status=$?
total=0 bad=0
for log in fuzz-*.log; do
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  if [ -z "$n" ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|==[0-9]+== ?ABORTING' "$log"; then
    bad=$((bad + 1))
    echo "$log: FAILED (no final stats, or a report)"; grep -m5 -E 'ERROR|runtime error|SUMMARY' "$log"
  else
    echo "$log: $n executions, $cov"
  fi
  total=$((total + ${n:-0}))
done
echo "total: $total executions by $workers workers in $(($(date +%s) - start)) s; corpus $(ls "$corpus" | wc -l) units; artifacts: $(ls artifacts | wc -l); libFuzzer exit $status"
[ "$bad" -eq 0 ] && [ -z "$(ls artifacts)" ]
