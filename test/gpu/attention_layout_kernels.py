"""Kernels for the softmax of a dot in the mma layout and the register-A p·v dot (sm_90a
wgmma), shared by the CPU tests (test/python/test_attention_layouts.py: interpreter, PTX)
and the GPU tests (test_attention_layouts.py beside this file)."""

import kiln
import kiln.language as kl


@kiln.jit
def softmax_rows(q_ptr, k_ptr, p_ptr, m_ptr, l_ptr, qk_scale, BM: kl.constexpr,
                 BN: kl.constexpr, D: kl.constexpr):
    """One tile of attention's softmax: s = q kᵀ ([BM, D] x [D, BN], q and k row major
    [BM, D] and [BN, D]), m = rowmax(s) * qk_scale, p = exp2(s * qk_scale - m[:, None]),
    l = rowsum(p); p [BM, BN], m and l [BM] stored in f32."""
    rm = kl.arange(0, BM)
    rn = kl.arange(0, BN)
    rd = kl.arange(0, D)
    q = kl.load(q_ptr + rm[:, None] * D + rd[None, :])
    kt = kl.load(k_ptr + rn[None, :] * D + rd[:, None])
    s = kl.dot(q, kt)
    m = kl.max(s, axis=1) * qk_scale
    p = kl.exp2(s * qk_scale - m[:, None])
    l_row = kl.sum(p, axis=1)
    kl.store(p_ptr + rm[:, None] * BN + rn[None, :], p)
    kl.store(m_ptr + rm, m)
    kl.store(l_ptr + rm, l_row)


@kiln.jit
def attention_rows(q_ptr, k_ptr, v_ptr, o_ptr, n_keys, qk_scale, BM: kl.constexpr,
                   BN: kl.constexpr, D: kl.constexpr):
    """softmax(q kᵀ * qk_scale / log2(e)) v for one head (q [M, D], k and v [n_keys, D],
    o [M, D] f32, row major; n_keys a multiple of BN): a program per BM query rows, the
    online softmax over BN keys an iteration (exp2, qk_scale in log2 units), p narrowed to
    bf16 for p·v."""
    rm = kl.program_id(0) * BM + kl.arange(0, BM)
    rn = kl.arange(0, BN)
    rd = kl.arange(0, D)
    q = kl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = kl.full((BM,), float("-inf"), kl.float32)
    l_i = kl.zeros((BM,), kl.float32)
    acc = kl.zeros((BM, D), kl.float32)
    for start in range(0, n_keys, BN):
        kt = kl.load(k_ptr + (start + rn)[None, :] * D + rd[:, None])
        v = kl.load(v_ptr + (start + rn)[:, None] * D + rd[None, :])
        s = kl.dot(q, kt)
        m_new = kl.maximum(m_i, kl.max(s, axis=1) * qk_scale)
        alpha = kl.exp2(m_i - m_new)
        p = kl.exp2(s * qk_scale - m_new[:, None])
        l_i = l_i * alpha + kl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        acc = kl.dot(p.to(kl.bfloat16), v, acc)
        m_i = m_new
    kl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])
