#!/usr/bin/env bash
# Runs on the GPU machine from the unpacked device pack. What it tests is what users install: the
# kiln wheel in wheels/ goes into a fresh venv (`pip install --no-deps`; the venv sees the
# system's torch), and the GPU tier, the sanitizers and the benchmarks run from that venv; the
# pack's own folder supplies only test/, bench/, the bundle and libdevice.
#   run.sh [pytest args]       the GPU tier (test/gpu/gpu_tier.py; a missing GPU fails here)
# Steps, $KILN_STEPS (unset: "tests runtime bench"; set and empty: none, the venv alone, for
# one's own scripts run with its ${TMPDIR:-/tmp}/kiln-venv/bin/python):
#   tests     the GPU tier, with the pytest args given
#   runtime   the kiln-runtime wheel alone in another venv: JIT forbidden, kernels from the bundle
#             (test/gpu/runtime_wheel_smoke.py)
#   sanitize  compute-sanitizer (test/gpu/sanitize.py; $KILN_SANITIZE_ARGS)
#   bench     bench/<name>/run.py for each name in $KILN_BENCH (default: every benchmark)
# Logs go to $OUT when set (the device tool brings that folder back), else to ./out.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
LOGS="${OUT:-$HERE/out}"
mkdir -p "$LOGS"
cd "$HERE"
export KILN_LIBDEVICE="$HERE/libdevice.10.bc"
[ -f "$HERE/kimi_k3.kbundle" ] && export KILN_BUNDLE="$HERE/kimi_k3.kbundle"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$LOGS/gpu.txt"

# venv NAME WHEEL: a venv under /tmp that sees the packages of the machine's python3 (torch;
# a .pth names its site folders, since python3 may itself be a venv, whose packages
# --system-site-packages would not reach), with WHEEL installed without dependencies and
# without an index; prints its python.
venv() {
  local dir="${TMPDIR:-/tmp}/kiln-$1"
  rm -rf "$dir" && python3 -m venv "$dir" &&
    python3 -c 'import site, sys; print("\n".join(p for p in sys.path if p.endswith("-packages")))' \
      >"$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/machine.pth" &&
    "$dir/bin/python" -m pip install -q --no-index --no-deps --disable-pip-version-check "$2" \
      >&2 && echo "$dir/bin/python"
}
PY=$(venv venv "$(ls wheels/kiln-[0-9]*.whl)") || { echo "run.sh: the kiln wheel did not install" >&2; exit 1; }
# bench/ and test/ import each other as packages from here; kiln comes from the venv.
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c 'import kiln, sys; print("kiln", kiln.__file__); sys.exit(kiln.__file__.startswith("'"$HERE"'"))' |
  tee "$LOGS/kiln-import.txt" || { echo "run.sh: kiln did not import from the installed wheel" >&2; exit 1; }

status=0
for step in ${KILN_STEPS-tests runtime bench}; do
  case "$step" in
  tests)
    "$PY" test/gpu/gpu_tier.py "$@" 2>&1 | tee "$LOGS/gpu-tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
  runtime)
    RPY=$(venv runtime-venv "$(ls wheels/kiln_runtime-*.whl)") &&
      (cd /tmp && PYTHONPATH= KILN_NO_JIT=1 "$RPY" "$HERE/test/gpu/runtime_wheel_smoke.py") 2>&1 |
      tee "$LOGS/runtime-wheel.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
  sanitize)
    # shellcheck disable=SC2086 # the arguments, one word each
    "$PY" test/gpu/sanitize.py --out "$LOGS" ${KILN_SANITIZE_ARGS:-} 2>&1 | tee "$LOGS/sanitize.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
  bench)
    for b in ${KILN_BENCH:-$(ls bench/*/run.py | cut -d/ -f2)}; do
      timeout "${KILN_BENCH_TIMEOUT:-240}" "$PY" "bench/$b/run.py" --out "$LOGS" 2>&1 |
        tee -a "$LOGS/bench.log"
    done ;;
  *) echo "run.sh: unknown step '$step' (tests, runtime, sanitize, bench)" >&2; status=1 ;;
  esac
done
exit $status
