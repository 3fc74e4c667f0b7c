#!/usr/bin/env bash
# The wheels as a user gets them (ctest `wheel-smoke`, part of `make test`): builds the kiln and
# kiln-runtime wheels for PYTHON (scripts/wheel.sh), installs each into a fresh venv with
# nothing but the wheel (no index, no dependencies) and runs test/package/wheel_smoke.py there
# from WORK/run, outside the checkout, with no PYTHONPATH.
# Usage: scripts/wheel-smoke.sh PYTHON WORK
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -eq 2 ] || { echo "usage: $0 PYTHON WORK" >&2; exit 2; }
PY="$("$1" -c 'import sys; print(sys.executable)')"
WORK="$(mkdir -p "$2" && cd "$2" && pwd)"

full=$("$ROOT/scripts/wheel.sh" "$PY" "$WORK/dist")
runtime=$("$ROOT/scripts/wheel.sh" "$PY" "$WORK/dist" --runtime)

rm -rf "$WORK/venv-full" "$WORK/venv-runtime" "$WORK/run" "$WORK/cache"
mkdir -p "$WORK/run"
cp "$ROOT/test/package/wheel_smoke.py" "$ROOT/test/package/smoke_kernels.py" "$WORK/run/"
cd "$WORK/run"
for mode in full runtime; do
  wheel=$full
  [ "$mode" = runtime ] && wheel=$runtime
  "$PY" -m venv "$WORK/venv-$mode"
  "$WORK/venv-$mode/bin/python" -m pip install -q --disable-pip-version-check --no-index \
    --no-deps "$wheel"
  env -u PYTHONPATH KILN_SOURCE_DIR="$ROOT" KILN_CACHE_DIR="$WORK/cache" \
    "$WORK/venv-$mode/bin/python" wheel_smoke.py "$mode"
done
