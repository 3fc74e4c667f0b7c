#!/usr/bin/env bash
# Builds a kiln wheel for one CPython into OUT_DIR and prints its path:
#   scripts/wheel.sh PYTHON OUT_DIR            the kiln wheel (pyproject.toml: the compiler with
#                                              MLIR/LLVM linked statically, runtime, package)
#   scripts/wheel.sh PYTHON OUT_DIR --runtime  the kiln-runtime wheel (python/kiln-runtime)
# `pip wheel` with scikit-build-core, without build isolation, from a build venv of PYTHON with
# the build requirements pyproject.toml pins. Both are kept in $KILN_WHEEL_BUILD_DIR (default
# build/wheel, where `pip wheel .` builds too): the venv as venv-<version> (no download and no
# reconfigure next time), the CMake build trees as <wheel tag> and runtime-<wheel tag> (a
# rebuild compiles only what changed). Parallel jobs: $CMAKE_BUILD_PARALLEL_LEVEL (default: all cores). KILN_TORCH_DIR, when
# set, names the torch package kiln/_torch_ops.so builds against.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 PYTHON OUT_DIR [--runtime]" >&2; exit 2; }
PY="$1"
OUT_DIR="$2"
SRC=. kind=kiln
[ "${3:-}" = "--runtime" ] && SRC=python/kiln-runtime kind=kiln-runtime

TREES="$(mkdir -p "${KILN_WHEEL_BUILD_DIR:-build/wheel}" && cd "${KILN_WHEEL_BUILD_DIR:-build/wheel}" && pwd)"
ver=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
VENV="$TREES/venv-$ver"
requires=$(sed -n 's/^requires = \[\(.*\)\]$/\1/p' pyproject.toml | tr -d '",')
if ! [ -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.requires" 2>/dev/null)" != "$requires" ]; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  # shellcheck disable=SC2086 # the requirements, one word each
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check $requires
  echo "$requires" > "$VENV/.requires"
fi

tree="$TREES/{wheel_tag}"
[ "$kind" = kiln ] || tree="$TREES/runtime-{wheel_tag}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
mkdir -p "$OUT_DIR"
log="$OUT_DIR/.$kind-wheel-build.log"
start=$(date +%s)
if ! "$VENV/bin/python" -m pip wheel "$SRC" --no-build-isolation --no-deps \
    --disable-pip-version-check -w "$OUT_DIR" -v "--config-settings=build-dir=$tree" >"$log" 2>&1; then
  tail -n 60 "$log" >&2
  echo "kiln: the wheel build failed (the whole log: $log)" >&2
  exit 1
fi
wheel="$(cd "$OUT_DIR" && pwd)/$(sed -n 's/.*Created wheel for .*: filename=\([^ ]*\.whl\) .*/\1/p' "$log" | tail -n 1)"
[ -f "$wheel" ] || { echo "kiln: pip names no wheel it built (log: $log)" >&2; exit 1; }
echo "kiln: built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $(( $(date +%s) - start )) s" >&2
echo "$wheel"
