#!/usr/bin/env bash
# Builds dist/device.tar.xz: a self-contained kiln for the GPU machine (CPython 3.12, MLIR/LLVM
# linked statically into kiln._C, the runtime, the Python package, the Kimi K3 bundle, libdevice,
# the GPU tests and the benchmarks). On that machine:
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

if [ ! -x .venv-device/bin/python ]; then
  "$PY312" -m venv .venv-device
fi
.venv-device/bin/python -m pip install -q --disable-pip-version-check "$(grep '^pybind11==' requirements.txt)"

# The torch op library (kiln/_torch_ops.so) builds against a torch 2.11 package: $KILN_TORCH_DIR,
# else the torch the build's Python imports (`pip download torch==2.11.0 --no-deps` and unzip
# gives one; only its headers and libraries are used).
TORCH_DIR="${KILN_TORCH_DIR:-$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null || true)}"
[ -n "$TORCH_DIR" ] && [ -f "$TORCH_DIR/include/torch/library.h" ] || {
  echo "kiln: device-pack needs torch 2.11's headers and libraries (set KILN_TORCH_DIR to a torch package)" >&2
  exit 1
}

BUILD=build-device
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_STATIC_LLVM=ON \
  -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_PYTHON=ON -DPython3_EXECUTABLE="$PWD/.venv-device/bin/python" \
  -DKILN_TORCH_DIR="$TORCH_DIR" \
  -DCMAKE_MODULE_LINKER_FLAGS="-Wl,--gc-sections -Wl,--as-needed" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target kiln_compiler_ext kiln_runtime_ext kiln_torch_ops \
  kiln-python-sources

# The extension must import with nothing but CPython 3.12 and glibc.
PYTHONPATH="$BUILD/python" .venv-device/bin/python -c \
  "import kiln._C as c, kiln._runtime as r; print('kiln._C', c.version() if hasattr(c, 'version') else '')"

OUT_DIR=dist/kiln-device
rm -rf "$OUT_DIR" && mkdir -p "$OUT_DIR"
cp -r "$BUILD/python/kiln" "$OUT_DIR/kiln"
find "$OUT_DIR" -name __pycache__ -prune -exec rm -rf {} +
find "$OUT_DIR/kiln" -type d -empty -delete  # packages a build tree kept after they moved
strip --strip-unneeded "$OUT_DIR"/kiln/*.so
cp -r kernels_dsl "$OUT_DIR/kernels_dsl"
mkdir -p "$OUT_DIR/test"
cp -r test/gpu "$OUT_DIR/test/gpu"
cp -r bench "$OUT_DIR/bench" 2>/dev/null || true
# The C++ launch benchmark (runtime only, libcuda opened at run time).
g++ -O2 -std=c++17 bench/runtime/launch_bench.cpp -Iruntime/include \
  -I"${CUDA_HOME:-/usr/local/cuda}/include" "$BUILD/runtime/libkiln_runtime.a" -ldl -lpthread \
  -o "$OUT_DIR/bench/runtime/launch_bench"
cp "${CUDA_HOME:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc" "$OUT_DIR/"
if [ -f build/kimi_k3.kbundle ]; then cp build/kimi_k3.kbundle "$OUT_DIR/"; fi
cp scripts/device-run.sh "$OUT_DIR/run.sh"
tar -C dist -cJf dist/device.tar.xz kiln-device
ls -la dist/device.tar.xz
