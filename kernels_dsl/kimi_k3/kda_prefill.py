"""KDA (Kimi Delta Attention) chunked prefill: the recurrence of kda_decode over whole
sequences, 64 tokens (a chunk) at a time on tensor cores (the WY / UT transform).

Per sequence and value head hv (its q/k head h = hv // (HV / H)), with the state h [V, K]
(K contiguous, the decode pool's layout; h = S^T of the spec's S [K, V]) and a chunk of C =
64 tokens i (rows past the sequence's end are zeros: no decay, no key, no value), in fp32:

    G      = cumsum_i g_i                     the chunk-local log decay [C, K]
    A_kk   = [Σ_d k_i[d] k_j[d] exp(G_i[d] - G_j[d])]_{i > j}     strictly lower, [C, C]
    A_qk   = [Σ_d q_i[d] k_j[d] exp(G_i[d] - G_j[d])]_{i >= j}    lower, [C, C]
    T      = (I + Diag(beta) A_kk)^-1 Diag(beta)                   the UT transform
    W      = T (exp(G) * k),   U = T v
    V'     = U - W h^T                                             the pseudo-values [C, V]
    o      = (q * exp(G)) h^T + A_qk V'
    h     <- h * exp(G_last)[None, :] + V'^T (exp(G_last - G) * k)

with q = l2norm(q) * scale and k = l2norm(k) when asked (kda_decode's ``kda_l2norm``), the
gate g given (fp32 log decay) or computed from the raw ``a`` (kda_decode's ``kda_gate``: the
softplus or the lower-bound form) and beta given or sigmoid(logits). Every exp is of a
difference that is at most zero (never exp(G_i) exp(-G_j), which overflows: with the lower
bound -5, G reaches -320 inside a chunk): the off-diagonal 16-row blocks of A_kk and A_qk
are dots of factors taken against the first row r of the row block, ``exp(G_i - G_r)`` (i >=
r) and ``exp(G_r - G_j)`` (j < r), both at most 1; the four diagonal 16 x 16 blocks are
summed elementwise from the differences. The dots take fp32 operands split into two bf16
parts (hi + lo, three products), about 16 bits of each operand, with fp32 sums.

Specification: docs/kernels/kda.md ("Chunked prefill")
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .kda_decode import (
    HEAD_DIM,
    _check_float,
    _check_heads,
    _lower_bound_args,
    kda_gate,
    kda_l2norm,
)

#: Tokens a chunk; rows a diagonal block of the intra-chunk products.
CHUNK = 64
BLOCK = 16


# ---------------------------------------------------------------------------
# The chunk's pieces
# ---------------------------------------------------------------------------

@kiln.jit
def _split(x):
    """(hi, lo): x (fp32) as the sum of two bf16 tiles, hi = bf16(x), lo = bf16(x - hi)."""
    hi = x.to(kl.bfloat16)
    return hi, (x - hi.to(kl.float32)).to(kl.bfloat16)


@kiln.jit
def _dot(a, b, acc):
    """acc + a @ b for fp32 a [M, K] and b [K, N] on tensor cores: each operand split into
    two bf16 parts, the three products that matter (hi hi, hi lo, lo hi), fp32 sums."""
    ah, al = _split(a)
    bh, bl = _split(b)
    return kl.dot(al, bh, kl.dot(ah, bl, kl.dot(ah, bh, acc)))


@kiln.jit
def _dot_t(a, b, acc):
    """acc + a @ b^T for fp32 a [M, K] and b [N, K] (``_dot`` with b's rows)."""
    ah, al = _split(a)
    bh, bl = _split(b)
    return kl.dot(al, bh.T, kl.dot(ah, bl.T, kl.dot(ah, bh.T, acc)))


@kiln.jit
def _row(x, rows, i):
    """Row i of x [C, N] as an [N] tile."""
    return kl.sum(kl.where(rows[:, None] == i, x, 0.0), axis=0)


@kiln.jit
def _block_rows(x, j, C: kl.constexpr, N: kl.constexpr):
    """[C, N]: row i holds row BLOCK * (i // BLOCK) + j of x (the row j of i's block)."""
    NB: kl.constexpr = C // BLOCK
    x3 = kl.reshape(x, NB, BLOCK, N)
    sub = kl.arange(0, BLOCK)
    picked = kl.sum(kl.where(sub[None, :, None] == j, x3, 0.0), axis=1)  # [NB, N]
    return kl.reshape(picked[:, None, :] + kl.zeros((NB, BLOCK, N), kl.float32), C, N)


@kiln.jit
def _intra(q, k, G, C: kl.constexpr, K: kl.constexpr):
    """(A_kk, A_qk) of the chunk (module docstring): [C, C] fp32, A_kk strictly lower, A_qk
    lower with its diagonal."""
    rows = kl.arange(0, C)
    cols = kl.arange(0, C)
    blk = rows // BLOCK
    akk = kl.zeros((C, C), kl.float32)
    aqk = kl.zeros((C, C), kl.float32)
    # Off-diagonal blocks: the rows of block I against the rows before it, both factors
    # taken against G at the block's first row.
    for bi in range(1, C // BLOCK):
        gr = _row(G, rows, bi * BLOCK)
        mine = (blk == bi)[:, None]
        left = kl.exp(kl.where(mine, G - gr[None, :], 0.0))
        right = kl.where((rows < bi * BLOCK)[:, None],
                         k * kl.exp(kl.where((rows < bi * BLOCK)[:, None], gr[None, :] - G, 0.0)),
                         0.0)
        akk = _dot_t(kl.where(mine, k * left, 0.0), right, akk)
        aqk = _dot_t(kl.where(mine, q * left, 0.0), right, aqk)
    # Diagonal blocks, elementwise: column BLOCK * (i // BLOCK) + j of every row i.
    for j in range(0, BLOCK):
        kj = _block_rows(k, j, C, K)
        gj = _block_rows(G, j, C, K)
        e = kl.exp(kl.minimum(G - gj, 0.0)) * kj
        col = (blk * BLOCK + j)[:, None] == cols[None, :]
        sub = rows % BLOCK
        akk = kl.where(col & (sub > j)[:, None], kl.sum(k * e, axis=1)[:, None], akk)
        aqk = kl.where(col & (sub >= j)[:, None], kl.sum(q * e, axis=1)[:, None], aqk)
    return akk, aqk


@kiln.jit
def _unit_lower_inverse(lm, C: kl.constexpr):
    """(I + lm)^-1 for a strictly lower triangular lm [C, C] (fp32), blocked by BLOCK rows:
    the block-diagonal part D = I + lm_d by forward substitution, the rows r of every block
    at once (row i = e_i - Σ_{j < i} lm_d[i, j] row j: one dot of the rows already done),
    then with N = D^-1 lm_o (lm_o the blocks below the diagonal; N^(C / BLOCK) = 0 for four
    blocks) (I + lm)^-1 = (I + N)^-1 D^-1 = (I - N)(I + N^2) D^-1."""
    rows = kl.arange(0, C)
    cols = kl.arange(0, C)
    eye = kl.where(rows[:, None] == cols[None, :], 1.0, 0.0)
    same = (rows // BLOCK)[:, None] == (cols // BLOCK)[None, :]
    lm_d = kl.where(same, lm, 0.0)
    d_inv = eye
    for r in range(1, BLOCK):
        done = _dot(lm_d, d_inv, kl.zeros((C, C), kl.float32))
        d_inv = kl.where((rows % BLOCK == r)[:, None], eye - done, d_inv)
    n = _dot(d_inv, kl.where(same, 0.0, lm), kl.zeros((C, C), kl.float32))
    n2 = _dot(n, n, kl.zeros((C, C), kl.float32))
    return _dot(_dot(eye - n, eye + n2, kl.zeros((C, C), kl.float32)), d_inv,
                kl.zeros((C, C), kl.float32))


# ---------------------------------------------------------------------------
# kda_chunk_prefill
# ---------------------------------------------------------------------------

@kiln.jit(num_warps=8, do_not_specialize=["T", "H", "HV", "has_h0", "l2norm",
                                          "beta_sigmoid"])
def kda_chunk_prefill_kernel(q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, alog_ptr, dtb_ptr, h0_ptr,
                             ht_ptr, cu_ptr, o_ptr, T, H, HV, has_h0, l2norm, beta_sigmoid,
                             scale, lower_bound, K: kl.constexpr, V: kl.constexpr,
                             VB: kl.constexpr, GATE: kl.constexpr, VARLEN: kl.constexpr):
    """Program (value block, value head hv, sequence n): the VB value rows of the head's
    state through every chunk of the sequence (module docstring). q, k [*, H, K] bf16, v
    [*, HV, V] bf16, g [*, HV, K] (GATE 0: the fp32 log decay; 1: the raw bf16 ``a`` of the
    softplus gate, 2: of the lower-bound gate, with A_log [HV] and dt_bias [HV K]), beta
    [*, HV] bf16 (``beta_sigmoid``: the logits), all token-major and dense; h0 (``has_h0``)
    and ht [N, HV, V, K] fp32; o [*, HV, V] bf16. VARLEN: sequence n is the tokens cu[n] ..
    cu[n + 1] - 1, else n T .. n T + T - 1. ``l2norm``: q and k L2-normalized first."""
    C: kl.constexpr = CHUNK
    vb = kl.program_id(0)
    hv = kl.program_id(1)
    n = kl.program_id(2)
    h = hv // (HV // H)
    if VARLEN:
        bos = kl.load(cu_ptr + n)
        eos = kl.load(cu_ptr + n + 1)
    else:
        bos = n * T
        eos = bos + T
    rows = kl.arange(0, C)
    cols = kl.arange(0, K)
    vrows = vb * VB + kl.arange(0, VB)
    at = (n.to(kl.int64) * HV + hv) * (V * K) + (vrows * K)[:, None] + cols[None, :]
    state = kl.load(h0_ptr + at, mask=has_h0 != 0, other=0.0)
    if GATE > 0:
        a_log = kl.load(alog_ptr + hv)
        dt_bias = kl.load(dtb_ptr + hv * K + cols)
    for c0 in range(bos, eos, C):
        t = c0 + rows
        ok = t < eos
        t64 = t.to(kl.int64)
        qk_at = (t64 * H + h)[:, None] * K + cols[None, :]
        q = kl.load(q_ptr + qk_at, mask=ok[:, None], other=0.0).to(kl.float32)
        k = kl.load(k_ptr + qk_at, mask=ok[:, None], other=0.0).to(kl.float32)
        v = kl.load(v_ptr + (t64 * HV + hv)[:, None] * V + vrows[None, :], mask=ok[:, None],
                    other=0.0).to(kl.float32)
        g_at = (t64 * HV + hv)[:, None] * K + cols[None, :]
        if GATE > 0:
            a = kl.load(g_ptr + g_at, mask=ok[:, None], other=0.0).to(kl.float32)
            g = kl.where(ok[:, None], kda_gate(a, dt_bias[None, :], a_log, lower_bound, GATE == 2),
                         0.0)
        else:
            g = kl.load(g_ptr + g_at, mask=ok[:, None], other=0.0)
        beta = kl.load(beta_ptr + t64 * HV + hv, mask=ok, other=0.0).to(kl.float32)
        beta = kl.where(ok & (beta_sigmoid != 0), kl.sigmoid(beta), beta)
        q = kl.where(l2norm != 0, kda_l2norm(q), q) * scale
        k = kl.where(l2norm != 0, kda_l2norm(k), k)
        G = kl.cumsum(g, axis=0)
        g_last = _row(G, rows, C - 1)  # padded rows add nothing: the last valid row's
        akk, aqk = _intra(q, k, G, C, K)
        x = _unit_lower_inverse(akk * beta[:, None], C)
        tm = x * beta[None, :]
        eg = kl.exp(G)
        w = _dot(tm, k * eg, kl.zeros((C, K), kl.float32))
        u = _dot(tm, v, kl.zeros((C, VB), kl.float32))
        vp = u - _dot_t(w, state, kl.zeros((C, VB), kl.float32))
        o = _dot(aqk, vp, _dot_t(q * eg, state, kl.zeros((C, VB), kl.float32)))
        kl.store(o_ptr + (t64 * HV + hv)[:, None] * V + vrows[None, :], o, mask=ok[:, None])
        kd = k * kl.exp(g_last[None, :] - G)
        state = _dot(vp.T, kd, state * kl.exp(g_last)[None, :])
    kl.store(ht_ptr + at, state)


@dataclasses.dataclass(frozen=True)
class Settings:
    """kda_chunk_prefill's tuning (docs/kernels/kda.md, "Chunked prefill")."""
    value_block: int = 64  # value rows of the state a program ([64, 128] fp32) ...
    num_warps: int = 8  # ... on 8 warps (4: wgmma staged, 7 KiB of spill on sm_90a)


SETTINGS = Settings()

#: Gate modes: the fp32 log decay given, the raw ``a`` of the softplus gate, of the
#: lower-bound gate.
GATE_GIVEN, GATE_SOFTPLUS, GATE_LOWER_BOUND = 0, 1, 2


def launch_config(gate: int, varlen: bool, settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps) of the prefill kernel for a gate mode, with or
    without cu_seqlens."""
    name = "kda_chunk_prefill" + ("", "_gate", "_gate_lower_bound")[gate] + (
        "_varlen" if varlen else "")
    return (name, {"K": HEAD_DIM, "V": HEAD_DIM, "VB": settings.value_block, "GATE": gate,
                   "VARLEN": bool(varlen)}, settings.num_warps)


def signature(gate: int, varlen: bool) -> dict:
    """The AOT signature (without cu_seqlens the wrapper passes final_state for cu_ptr,
    never read)."""
    return {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16",
            "g_ptr": "*bf16" if gate else "*f32", "beta_ptr": "*bf16", "alog_ptr": "*f32",
            "dtb_ptr": "*f32", "h0_ptr": "*f32", "ht_ptr": "*f32",
            "cu_ptr": "*i32" if varlen else "*f32",
            "o_ptr": "*bf16", "T": "i32", "H": "i32", "HV": "i32", "has_h0": "i32",
            "l2norm": "i32", "beta_sigmoid": "i32", "scale": "f32", "lower_bound": "f32"}


#: The tensors the wrapper checks 16-byte aligned (the rows' vector accesses).
ALIGNED = ("q_ptr", "k_ptr", "v_ptr", "g_ptr", "dtb_ptr", "h0_ptr", "ht_ptr", "o_ptr")

AOT_SPECIALIZATIONS = [
    Spec(kda_chunk_prefill_kernel, name=cfg[0], signature=signature(gate, varlen),
         constexprs=cfg[1], divisibility=ALIGNED, num_warps=cfg[2])
    for gate in (GATE_GIVEN, GATE_SOFTPLUS, GATE_LOWER_BOUND) for varlen in (False, True)
    for cfg in (launch_config(gate, varlen),)
]


# ---------------------------------------------------------------------------
# Wrapper
# ---------------------------------------------------------------------------

def kda_chunk_prefill(q: Any, k: Any, v: Any, g: Any, beta: Any, scale: Optional[float] = None,
                      initial_state: Optional[Any] = None, cu_seqlens: Optional[Any] = None, *,
                      use_qk_l2norm_in_kernel: bool = False, use_gate_in_kernel: bool = False,
                      A_log: Optional[Any] = None, dt_bias: Optional[Any] = None,
                      lower_bound: Optional[float] = None,
                      use_beta_sigmoid_in_kernel: bool = False, out: Optional[Any] = None,
                      final_state: Optional[Any] = None,
                      settings: Settings = SETTINGS) -> tuple:
    """The chunked prefill of fla's ``chunk_kda`` contract (module docstring): q, k bf16
    [B, T, H, 128], v bf16 [B, T, HV, 128] (HV % H == 0), g [B, T, HV, 128] (the fp32 log
    decay; with ``use_gate_in_kernel`` the raw bf16 ``a``, A_log fp32 [HV], dt_bias fp32
    [HV 128] and ``lower_bound`` None for the softplus gate or a float, K3's -5.0), beta
    bf16 [B, T, HV] (with ``use_beta_sigmoid_in_kernel`` the logits), scale (default
    128^-0.5), initial_state fp32 [N, HV, 128, 128] ([V, K], K contiguous: the decode pool's
    layout; None: zeros), cu_seqlens int32 [N + 1] (varlen: B = 1, sequence n the tokens
    cu[n] .. cu[n + 1] - 1, non-decreasing from 0 to T) or None (N = B sequences of T).
    Every tensor dense (contiguous) and 16-byte aligned. Returns (o bf16 [B, T, HV, 128],
    final_state fp32 [N, HV, 128, 128]); ``out`` / ``final_state`` are written when given.
    Every check raises before any launch."""
    op = "kda_chunk_prefill"
    for what, t in (("q", q), ("k", k), ("v", v), ("beta", beta)):
        L.check_dtype(op, what, t, ("bfloat16",))
    gate = GATE_GIVEN
    if use_gate_in_kernel:
        L.check_dtype(op, "g", g, ("bfloat16",))
        gate = GATE_SOFTPLUS if lower_bound is None else GATE_LOWER_BOUND
    else:
        L.check_dtype(op, "g", g, ("float32",))
    _, lb = _lower_bound_args(op, lower_bound)
    bsz, t_len, h, _ = L.check_shape(op, "q", q, (None, None, None, HEAD_DIM))
    L.check_shape(op, "k", k, (bsz, t_len, h, HEAD_DIM))
    _, _, hv, _ = L.check_shape(op, "v", v, (bsz, t_len, None, HEAD_DIM))
    _check_heads(op, hv, h)
    L.check_shape(op, "g", g, (bsz, t_len, hv, HEAD_DIM))
    L.check_shape(op, "beta", beta, (bsz, t_len, hv))
    tensors = [("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)]
    if gate != GATE_GIVEN:
        if A_log is None or dt_bias is None:
            raise ValueError(f"{op}: use_gate_in_kernel needs A_log and dt_bias")
        L.check_dtype(op, "A_log", A_log, ("float32",))
        L.check_dtype(op, "dt_bias", dt_bias, ("float32",))
        L.check_shape(op, "A_log", A_log, (hv,))
        L.check_shape(op, "dt_bias", dt_bias, (hv * HEAD_DIM,))
        tensors += [("A_log", A_log), ("dt_bias", dt_bias)]
    if cu_seqlens is not None:
        L.check_dtype(op, "cu_seqlens", cu_seqlens, ("int32",))
        (n1,) = L.check_shape(op, "cu_seqlens", cu_seqlens, (None,))
        if bsz != 1:
            raise ValueError(f"{op}: cu_seqlens needs a batch of 1, got B = {bsz}")
        if n1 < 2:
            raise ValueError(f"{op}: cu_seqlens must hold at least 2 offsets, got {n1}")
        num_seqs = n1 - 1
        tensors.append(("cu_seqlens", cu_seqlens))
    else:
        num_seqs = bsz
    state_shape = (num_seqs, hv, HEAD_DIM, HEAD_DIM)
    if initial_state is not None:
        L.check_dtype(op, "initial_state", initial_state, ("float32",))
        L.check_shape(op, "initial_state", initial_state, state_shape)
        tensors.append(("initial_state", initial_state))
    scale = HEAD_DIM ** -0.5 if scale is None else _check_float(op, "scale", scale)
    if out is not None:
        L.check_dtype(op, "out", out, ("bfloat16",))
        L.check_shape(op, "out", out, (bsz, t_len, hv, HEAD_DIM))
        tensors.append(("out", out))
    if final_state is not None:
        L.check_dtype(op, "final_state", final_state, ("float32",))
        L.check_shape(op, "final_state", final_state, state_shape)
        tensors.append(("final_state", final_state))
    for what, t in tensors:
        L.check_contiguous(op, what, t)
        if what not in ("A_log", "beta", "cu_seqlens"):
            L.check_aligned(op, what, t)
    L.check_same_device(op, *tensors)
    L.check_int32_extent(op, "the tokens B * T * HV * 128", bsz * t_len * hv * HEAD_DIM)
    if out is None:
        out = L.empty(q, (bsz, t_len, hv, HEAD_DIM), "bfloat16")
    if final_state is None:
        final_state = L.empty(q, state_shape, "float32")
    name, constexprs, num_warps = launch_config(gate, cu_seqlens is not None, settings)
    L.launch(kda_chunk_prefill_kernel, name, (HEAD_DIM // constexprs["VB"], hv, num_seqs),
             (q, k, v, g, beta, A_log if A_log is not None else final_state,
              dt_bias if dt_bias is not None else final_state,
              initial_state if initial_state is not None else final_state, final_state,
              cu_seqlens if cu_seqlens is not None else final_state, out, t_len, h, hv,
              int(initial_state is not None), int(bool(use_qk_l2norm_in_kernel)),
              int(bool(use_beta_sigmoid_in_kernel)), float(scale), lb), constexprs, num_warps)
    return out, final_state
