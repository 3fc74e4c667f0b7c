#!/usr/bin/env bash
# Runs on the GPU machine from the unpacked device pack: the GPU tests, then the benchmarks.
# Logs go to $OUT when set (the device tool brings that folder back), else to ./out.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
export PYTHONPATH="$HERE:${PYTHONPATH:-}"
export KILN_LIBDEVICE="$HERE/libdevice.10.bc"
[ -f "$HERE/kimi_k3.kbundle" ] && export KILN_BUNDLE="$HERE/kimi_k3.kbundle"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
export PYTHONUNBUFFERED=1
LOGS="${OUT:-$HERE/out}"
mkdir -p "$LOGS"
cd "$HERE"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$LOGS/gpu.txt"
status=0
# The GPU tier as `make test` runs it (test/gpu/gpu_tier.py); here a missing GPU is a failure.
python3 test/gpu/gpu_tier.py "$@" 2>&1 | tee "$LOGS/gpu-tests.log"
status=${PIPESTATUS[0]}
if [ "${KILN_SKIP_BENCH:-0}" != 1 ] && [ -d bench ]; then
  for b in bench/*/run.py; do
    [ -f "$b" ] || continue
    timeout "${KILN_BENCH_TIMEOUT:-240}" python3 "$b" --out "$LOGS" 2>&1 | tee -a "$LOGS/bench.log"
  done
fi
exit $status
