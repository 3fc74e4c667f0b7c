"""Kernels exercising kl.dot (tile.dot on mma.sync), shared by the CPU tests
(test/python/test_dot.py: interpreter, PTX per arch) and the GPU tests (test_dot.py beside
this file, which travels to the GPU machine)."""

import kiln
import kiln.language as kl


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


@kiln.jit
def gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
         BM: kl.constexpr, BN: kl.constexpr, BK: kl.constexpr):
    """c[M, N] = a[M, K] @ b[K, N] (unit inner strides) in f32: one [BM, BN] block per
    program (grid = cdiv(M, BM) x cdiv(N, BN)), K in steps of BK, edges masked with 0."""
    rm = kl.program_id(0) * BM + kl.arange(0, BM)
    rn = kl.program_id(1) * BN + kl.arange(0, BN)
    rk = kl.arange(0, BK)
    acc = kl.zeros((BM, BN), kl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = kl.load(a_ptr + rm[:, None] * stride_am + ka[None, :],
                    mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = kl.load(b_ptr + ka[:, None] * stride_bk + rn[None, :],
                    mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = kl.dot(a, b, acc)
    kl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
