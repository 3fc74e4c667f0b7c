#!/usr/bin/env bash
# Installs what a fresh machine lacks to build and test kiln. Idempotent.
#  - Debian packages (LLVM/MLIR 22, GoogleTest, nlohmann-json, xxhash, ninja) through apt-get;
#  - a project virtual environment (.venv) with pinned Python packages;
#  - checks that CUDA 13 is at $CUDA_HOME (default /usr/local/cuda).
# Usage: scripts/setup.sh [--runtime-only]
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME_ONLY=0
[ "${1:-}" = "--runtime-only" ] && RUNTIME_ONLY=1

CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
missing_cuda=()
for f in include/cuda.h bin/ptxas bin/fatbinary; do
  [ -e "$CUDA_HOME/$f" ] || missing_cuda+=("$CUDA_HOME/$f")
done
if [ "$RUNTIME_ONLY" = 0 ]; then
  for f in lib64/libnvJitLink.so nvvm/libdevice/libdevice.10.bc; do
    [ -e "$CUDA_HOME/$f" ] || missing_cuda+=("$CUDA_HOME/$f")
  done
fi
if [ ${#missing_cuda[@]} -gt 0 ]; then
  echo "kiln: CUDA 13 toolkit not found (missing: ${missing_cuda[*]})." >&2
  echo "kiln: install CUDA 13.0 at /usr/local/cuda or set CUDA_HOME to its root." >&2
  exit 1
fi
cuda_ver=$("$CUDA_HOME/bin/ptxas" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
if [ "${cuda_ver:-0}" -lt 13 ]; then
  echo "kiln: CUDA at $CUDA_HOME is release ${cuda_ver:-unknown}; kiln needs 13 or newer (sm_103a)." >&2
  exit 1
fi

pkgs=(cmake ninja-build g++ libgtest-dev nlohmann-json3-dev libxxhash-dev)
if [ "$RUNTIME_ONLY" = 0 ]; then
  pkgs+=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools libzstd-dev clang-14 libclang-rt-14-dev)
fi
need=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "kiln: installing Debian packages: ${need[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

PY="${PYTHON:-python3}"
# On a machine with an NVIDIA GPU the venv also sees the system's site packages, so that the GPU
# tier of `make test` runs with the system's torch (a CUDA build that matches the driver, which
# the machine's owner installed; pip's torch is 2.5 GB and may not match). The pinned packages
# of requirements.txt, installed into the venv, still come first. Elsewhere the venv is isolated.
GPU="$("$PY" test/gpu/gpu_tier.py --probe || true)"
if [ ! -x .venv/bin/python ]; then
  echo "kiln: creating the virtual environment .venv with $($PY --version)"
  "$PY" -m venv ${GPU:+--system-site-packages} .venv
elif [ -n "$GPU" ] && grep -q '^include-system-site-packages = false' .venv/pyvenv.cfg; then
  echo "kiln: $GPU: letting .venv see the system's site packages (for torch)"
  sed -i 's/^include-system-site-packages = false/include-system-site-packages = true/' \
    .venv/pyvenv.cfg
fi
if ! cmp -s requirements.txt .venv/.requirements.stamp; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  cp requirements.txt .venv/.requirements.stamp
fi
if [ -n "$GPU" ] && ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  echo "kiln: $GPU, but .venv cannot import torch: the GPU tier of make test will fail until" \
    "torch (with CUDA) is installed for the system's python or into .venv" >&2
fi
