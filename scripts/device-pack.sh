#!/usr/bin/env bash
# Builds dist/device.tar.xz: a self-contained kiln for the GPU machine (the kiln wheel for CPython
# 3.12 — MLIR/LLVM linked statically into kiln._C, the runtime, the Python package — and the
# kiln-runtime wheel, in wheels/; the Kimi K3 bundle, libdevice, the GPU tests and the
# benchmarks). run.sh installs the wheels there and tests what they install. On that machine:
#   tar xJf dist/device.tar.xz -C /tmp && /tmp/kiln-device/run.sh [pytest args]
# Needs `make bundle` first (the bundle is carried). Python 3.12 headers: $KILN_DEVICE_PYTHON or
# pyenv's 3.12.
set -euo pipefail
cd "$(dirname "$0")/.."

PY312="${KILN_DEVICE_PYTHON:-}"
if [ -z "$PY312" ]; then
  for cand in "$(pyenv root 2>/dev/null)"/versions/3.12.*/bin/python3.12 python3.12; do
    if command -v "$cand" >/dev/null 2>&1; then PY312="$cand"; break; fi
  done
fi
[ -n "$PY312" ] || { echo "kiln: device-pack needs CPython 3.12 (set KILN_DEVICE_PYTHON)" >&2; exit 1; }

# The torch op library (kiln/_torch_ops.so) builds against a torch 2.11 package: $KILN_TORCH_DIR,
# else the torch the build's Python imports (`pip download torch==2.11.0 --no-deps` and unzip
# gives one; only its headers and libraries are used).
TORCH_DIR="${KILN_TORCH_DIR:-$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null || true)}"
[ -n "$TORCH_DIR" ] && [ -f "$TORCH_DIR/include/torch/library.h" ] || {
  echo "kiln: device-pack needs torch 2.11's headers and libraries (set KILN_TORCH_DIR to a torch package)" >&2
  exit 1
}

# The kiln and kiln-runtime wheels for CPython 3.12 (scripts/wheel.sh), each with the torch op
# library against TORCH_DIR: the pack carries both in wheels/ (`pip install --no-deps`) and runs
# the kiln wheel unpacked: what the GPU machine tests is what users install.
WHEEL=$(KILN_TORCH_DIR="$TORCH_DIR" scripts/wheel.sh "$PY312" dist/wheels)
RUNTIME_WHEEL=$(KILN_TORCH_DIR="$TORCH_DIR" scripts/wheel.sh "$PY312" dist/wheels --runtime)
BUILD="${KILN_WHEEL_BUILD_DIR:-build/wheel}/$(basename "$WHEEL" .whl | cut -d- -f3-)"

OUT_DIR=dist/kiln-device
rm -rf "$OUT_DIR" && mkdir -p "$OUT_DIR/wheels"
cp "$WHEEL" "$RUNTIME_WHEEL" "$OUT_DIR/wheels/"
# The extension must import with nothing but CPython 3.12 and glibc.
unpacked=$(mktemp -d)
"$PY312" -m zipfile -e "$WHEEL" "$unpacked"
PYTHONPATH="$unpacked" "$PY312" -s -c \
  "import kiln._C as c, kiln._runtime as r; print('kiln._C', c.version())"
rm -rf "$unpacked"
mkdir -p "$OUT_DIR/test"
cp -r test/gpu "$OUT_DIR/test/gpu"
cp -r bench "$OUT_DIR/bench" 2>/dev/null || true
# The documented examples the GPU tier runs (test/gpu/test_allreduce.py).
mkdir -p "$OUT_DIR/docs" && cp -r docs/examples "$OUT_DIR/docs/examples"
# The C++ launch benchmark (runtime only, libcuda opened at run time).
g++ -O2 -std=c++17 bench/runtime/launch_bench.cpp -Iruntime/include \
  -I"${CUDA_HOME:-/usr/local/cuda}/include" "$BUILD/runtime/libkiln_runtime.a" -ldl -lpthread \
  -o "$OUT_DIR/bench/runtime/launch_bench"
cp "${CUDA_HOME:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc" "$OUT_DIR/"
if [ -f build/kimi_k3.kbundle ]; then cp build/kimi_k3.kbundle "$OUT_DIR/"; fi
cp scripts/device-run.sh "$OUT_DIR/run.sh"
tar -C dist -cJf dist/device.tar.xz kiln-device
ls -la dist/device.tar.xz
