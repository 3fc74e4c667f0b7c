"""Kernels exercising kl.dot (tile.dot on mma.sync), shared by the CPU tests
(test/python/test_dot.py: interpreter, PTX per arch) and the GPU tests (test_dot.py beside
this file, which travels to the GPU machine)."""

import os
import sys

import kiln
import kiln.language as kl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from kernels_dsl.common.gemm import gemm_kernel as gemm  # noqa: E402,F401  (the library GEMM)


@kiln.jit
def dot_tile(a_ptr, b_ptr, acc_ptr, c_ptr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr,
             HAS_ACC: kl.constexpr):
    """c = a @ b (+ acc if HAS_ACC) for one [M, K] x [K, N] tile, all row major."""
    rm = kl.arange(0, M)
    rn = kl.arange(0, N)
    rk = kl.arange(0, K)
    a = kl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = kl.load(b_ptr + rk[:, None] * N + rn[None, :])
    mn = rm[:, None] * N + rn[None, :]
    if HAS_ACC:
        c = kl.dot(a, b, kl.load(acc_ptr + mn))
    else:
        c = kl.dot(a, b)
    kl.store(c_ptr + mn, c)
