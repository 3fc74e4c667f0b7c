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


@kiln.jit(num_warps=8)
def fp8_gemm_f32(a_desc, b_desc, c_ptr, M, N, K, stride_cm, BM: kl.constexpr, BN: kl.constexpr,
                 BK: kl.constexpr, STAGES: kl.constexpr, MAX_IMPRECISE_ACC: kl.constexpr = None):
    """c[M, N] = a[M, K] @ b[N, K]^T in f32 (FP8 in, f32 out through pointers, so no output
    rounding hides the accumulation error): one [BM, BN] block per program (grid = cdiv(M, BM)
    x cdiv(N, BN)), a pipelined K loop of TMA boxes (wgmma on sm_90a), each dot bounded by
    ``max_num_imprecise_acc=MAX_IMPRECISE_ACC``."""
    pid_m = kl.program_id(0)
    pid_n = kl.program_id(1)
    acc = kl.zeros((BM, BN), kl.float32)
    for k in kl.range(0, K, BK, num_stages=STAGES):
        a = a_desc.load([pid_m * BM, k])
        b = b_desc.load([pid_n * BN, k])
        acc = kl.dot(a, b.T, acc, max_num_imprecise_acc=MAX_IMPRECISE_ACC)
    rm = pid_m * BM + kl.arange(0, BM)
    rn = pid_n * BN + kl.arange(0, BN)
    kl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@kiln.jit
def fp8_dot_tile(a_ptr, b_ptr, c_ptr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr,
                 MAX_IMPRECISE_ACC: kl.constexpr = None):
    """c = a @ b for one FP8 [M, K] x [K, N] tile (row major), the dot bounded by
    ``max_num_imprecise_acc=MAX_IMPRECISE_ACC``."""
    rm = kl.arange(0, M)
    rn = kl.arange(0, N)
    rk = kl.arange(0, K)
    a = kl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = kl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = kl.dot(a, b, max_num_imprecise_acc=MAX_IMPRECISE_ACC)
    kl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@kiln.jit
def fp8_slot_scores(q_ptr, k_ptr, scale_ptr, out_ptr, n_blocks, BM: kl.constexpr,
                    BN: kl.constexpr, D: kl.constexpr, SCALED: kl.constexpr):
    """out[b] = q · k_bᵀ for the n_blocks key blocks k_b [BN, D] (e4m3, widened to bf16 in
    the dot, as MLA's FP8 keys), q [BM, D] bf16; the key blocks through a pipelined gather.
    SCALED: times a factor a key, scale_b[None, :], gathered with the keys (MLA's FP8
    scales; on mma.sync read from its ring slot as the accumulator's columns)."""
    rm = kl.arange(0, BM)
    rn = kl.arange(0, BN)
    rd = kl.arange(0, D)
    q = kl.load(q_ptr + rm[:, None] * D + rd[None, :])
    for b in kl.range(0, n_blocks, num_stages=2):
        k = kl.load(k_ptr + (b * BN + rn)[:, None] * D + rd[None, :])
        s = kl.dot(q, k.to(kl.bfloat16).T)
        if SCALED:
            s = s * kl.load(scale_ptr + b * BN + rn)[None, :]
        kl.store(out_ptr + b * BM * BN + rm[:, None] * BN + rn[None, :], s)


@kiln.jit
def dot_chain(a_ptr, w_ptr, v_ptr, m_ptr, o_ptr, M: kl.constexpr, N: kl.constexpr,
              K: kl.constexpr, D: kl.constexpr):
    """Attention's chain on one tile: s = a @ w.T ([M, K] x [N, K]ᵀ), m = rowmax(s),
    p = exp2(s - m) in bf16, o = p @ v ([N, D]); stores m and o (row major)."""
    rm = kl.arange(0, M)
    rn = kl.arange(0, N)
    rk = kl.arange(0, K)
    rd = kl.arange(0, D)
    a = kl.load(a_ptr + rm[:, None] * K + rk[None, :])
    w = kl.load(w_ptr + rn[:, None] * K + rk[None, :])
    s = kl.dot(a, w.T)
    m = kl.max(s, axis=1)
    p = kl.exp2(s - m[:, None]).to(kl.bfloat16)
    v = kl.load(v_ptr + rn[:, None] * D + rd[None, :])
    o = kl.dot(p, v)
    kl.store(m_ptr + rm, m)
    kl.store(o_ptr + rm[:, None] * D + rd[None, :], o)
