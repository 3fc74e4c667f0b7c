"""A K-loop GEMM on kl.dot: the GEMM benchmark's kernel (bench/gemm/run.py) and the GPU tests'
(test/gpu/test_dot.py)."""

import kiln
import kiln.language as kl


@kiln.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
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
