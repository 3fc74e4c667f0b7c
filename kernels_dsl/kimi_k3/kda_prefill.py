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

with q = l2norm(q) * scale and k = l2norm(k) when asked (kda_decode's ``kda_l2norm``'s norm,
times the reciprocal where the decode divides), the gate g given (fp32 log decay) or
computed from the raw ``a`` (kda_decode's ``kda_gate``: the softplus or the lower-bound
form) and beta given or sigmoid(logits). Exps are of differences, never exp(G_i)
exp(-G_j), which overflows (with the lower bound -5, G reaches -320 inside a chunk): A_kk
and A_qk are dots of factors taken against a row block's middle row (``_intra``), the UT
inverse merges diagonal blocks (``_unit_lower_inverse``). Dots whose result reaches the
state take fp32 operands split into two bf16 parts (hi + lo, three products, about 16 bits
of each operand, fp32 sums); the output's own take one.

Three launches: ``kda_prefill_chunk_kernel`` writes every chunk's state-free factors to a
workspace, all chunks at once, but W and U; ``kda_prefill_ut_kernel`` the UT inverse and W
and U from them (a launch of its own on one warpgroup: wgmma, two programs an SM);
``kda_prefill_chain_kernel`` walks each sequence's chunks with the state in registers.

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
    L2_EPS,
    _check_float,
    _check_heads,
    _lower_bound_args,
    kda_gate,
)

#: Tokens a chunk; rows a diagonal block of the intra-chunk products.
CHUNK = 64
LOG2_CHUNK = 6
BLOCK = 16
#: The largest decay (nats, in any channel) of a row block that ``_intra``'s factors take:
#: exp(80) and exp(-80) are normal fp32 and bf16 numbers.
SAFE_SPAN = 80.0
#: The per-token decay (nats) ``_intra`` caps g at: exp(-20) = 2.1e-9 of |k_i| |k_j|, below
#: the fp32 rounding of A's entries.
DECAY_CAP = 20.0
#: Sequences a step of the varlen slot search reads.
SEARCH = 1024


# ---------------------------------------------------------------------------
# The chunk's pieces
# ---------------------------------------------------------------------------

@kiln.jit
def _split(x):
    """(hi, lo): x (fp32) as the sum of two bf16 tiles, hi = bf16(x), lo = bf16(x - hi)."""
    hi = x.to(kl.bfloat16)
    return hi, (x - hi.to(kl.float32)).to(kl.bfloat16)


@kiln.jit
def _dot_parts(ah, al, bh, bl, acc):
    """acc + a @ b from the two-part splits of a and b (``_split``): the three products that
    matter (hi hi, hi lo, lo hi), fp32 sums."""
    return kl.dot(al, bh, kl.dot(ah, bl, kl.dot(ah, bh, acc)))


@kiln.jit
def _dot(a, b, acc):
    """acc + a @ b for fp32 a [M, K] and b [K, N] on tensor cores, each operand split into
    two bf16 parts (``_dot_parts``)."""
    ah, al = _split(a)
    bh, bl = _split(b)
    return _dot_parts(ah, al, bh, bl, acc)


@kiln.jit
def _dot_t(a, b, acc):
    """acc + a @ b^T for fp32 a [M, K] and b [N, K] (``_dot`` with b's rows)."""
    ah, al = _split(a)
    bh, bl = _split(b)
    return kl.dot(al, bh.T, kl.dot(ah, bl.T, kl.dot(ah, bh.T, acc)))


@kiln.jit
def _inv_norm(x):
    """1 / sqrt(sum(x^2) + eps) of each row of x [C, K] (``kda_l2norm``'s eps; a multiply
    by it where the decode divides, one rounding more)."""
    return 1.0 / kl.sqrt(kl.sum(x * x, axis=1) + L2_EPS)


@kiln.jit
def _row(x, rows, i):
    """Row i of x [C, N] as an [N] tile."""
    return kl.sum(kl.where(rows[:, None] == i, x, 0.0), axis=0)


@kiln.jit
def _intra(q, k, G, rb, C: kl.constexpr):
    """(A_kk, A_qk) of the chunk from the capped log decay G (``kda_prefill_chunk_kernel``),
    the rows in blocks of rb (a runtime value; 8 for the chunks whose 16-row blocks decay
    too much for ``_intra_cols``) whose decay from the block's first row to its last is at
    most SAFE_SPAN in every channel: block b's rows i against every
    row j up to the block's end in one dot, both factors taken against the block's middle
    row m, ``exp(G_i - G_m)`` and ``exp(G_m - G_j)``, each within exp(+-SAFE_SPAN) (rows j
    of earlier blocks only get smaller); their product is exp(G_i - G_j). A_kk's dots on
    two-part operands, A_qk's on one bf16 part (it reaches the output only)."""
    rows = kl.arange(0, C)
    cols = kl.arange(0, C)
    akk = kl.zeros((C, C), kl.float32)
    aqk = kl.zeros((C, C), kl.float32)
    for b in range(0, C // rb):
        gm = _row(G, rows, b * rb + rb // 2)
        mine = (rows // rb == b)[:, None]
        upto = (rows < (b + 1) * rb)[:, None]
        left = kl.exp(kl.where(mine, G - gm[None, :], 0.0))
        right = kl.where(upto, k * kl.exp(kl.where(upto, gm[None, :] - G, 0.0)), 0.0)
        akk = _dot_t(kl.where(mine, k * left, 0.0), right, akk)
        aqk = kl.dot(kl.where(mine, q * left, 0.0).to(kl.bfloat16),
                     right.to(kl.bfloat16).T, aqk)
    lower = rows[:, None] > cols[None, :]
    return kl.where(lower, akk, 0.0), kl.where(lower | (rows[:, None] == cols[None, :]), aqk,
                                               0.0)


@kiln.jit
def _block(x, c, C: kl.constexpr):
    """Rows c BLOCK .. c BLOCK + BLOCK - 1 of x [C, N] as a [BLOCK, N] tile: x seen as [C /
    BLOCK, BLOCK N] (a reshape) and summed over the blocks with the others masked; in the
    blocked layout a thread holds the same place of every block, so nothing leaves it."""
    x3 = kl.reshape(x, C // BLOCK, BLOCK * x.shape[1])
    mine = (kl.arange(0, C // BLOCK) == c)[:, None]
    return kl.reshape(kl.sum(kl.where(mine, x3, 0.0), axis=0), BLOCK, x.shape[1])


@kiln.jit
def _intra_cols(q, k, G, C: kl.constexpr):
    """``_intra`` for blocks of BLOCK rows, by column blocks: the columns j of block c
    against every row i from the block's start in one dot, both factors taken against the
    block's middle row m, ``exp(G_i - G_m)`` (rows of later blocks only get smaller) and
    ``exp(G_m - G_j)`` (j in the block); the key factor is the block's BLOCK rows alone, so
    each dot is [C, K] x [K, BLOCK]."""
    nb: kl.constexpr = C // BLOCK
    rows = kl.arange(0, C)
    akk = kl.zeros((C, nb, BLOCK), kl.float32)
    aqk = kl.zeros((C, nb, BLOCK), kl.float32)
    for c in range(0, nb):
        gm = _row(G, rows, c * BLOCK + BLOCK // 2)
        right = _block(k, c, C) * kl.exp(gm[None, :] - _block(G, c, C))
        below = (rows >= c * BLOCK)[:, None]
        left = kl.exp(kl.where(below, G - gm[None, :], 0.0))
        a_kk = _dot_t(kl.where(below, k * left, 0.0), right,
                      kl.zeros((C, BLOCK), kl.float32))
        a_qk = kl.dot(kl.where(below, q * left, 0.0).to(kl.bfloat16),
                      right.to(kl.bfloat16).T, kl.zeros((C, BLOCK), kl.float32))
        put = (kl.arange(0, nb) == c)[None, :, None]
        akk = kl.where(put, a_kk[:, None, :], akk)
        aqk = kl.where(put, a_qk[:, None, :], aqk)
    cols = kl.arange(0, C)
    lower = rows[:, None] > cols[None, :]
    return kl.where(lower, kl.reshape(akk, C, C), 0.0), kl.where(
        lower | (rows[:, None] == cols[None, :]), kl.reshape(aqk, C, C), 0.0)


@kiln.jit
def _unit_lower_inverse(lm, C: kl.constexpr):
    """(I + lm)^-1 for a strictly lower triangular lm [C, C] (fp32) by merging diagonal
    blocks: with X the inverse's diagonal blocks of s rows, the blocks of 2 s rows are X -
    X lm_s X, lm_s the parts of lm below the diagonal of each 2 s block and left of its
    middle ([[A, 0], [C, B]]^-1 = [[A^-1, 0], [-B^-1 C A^-1, B^-1]] for every block at
    once); s = 1 needs no dot. Every intermediate is a block of the inverse or one times
    lm, so nothing cancels (doubling, (I - lm)(I + lm^2)(I + lm^4)..., does: lm^16 reaches
    1e9 for similar keys). Two two-part dots a level."""
    rows = kl.arange(0, C)[:, None]
    cols = kl.arange(0, C)[None, :]
    zero = kl.zeros((C, C), kl.float32)
    x = kl.where(rows == cols, 1.0, 0.0) - kl.where((rows >> 1) == (cols >> 1), lm, 0.0)
    for level in range(1, LOG2_CHUNK):
        part = ((rows >> (level + 1)) == (cols >> (level + 1))) & (
            (rows >> level) != (cols >> level))
        x = _dot(-_dot(x, kl.where(part, lm, 0.0), zero), x, x)
    return x


@kiln.jit
def _chunk_of(cu_ptr, p, T, N, VARLEN: kl.constexpr):
    """(sequence, first token, end of the sequence) of chunk slot p: fixed length, slot
    n * cdiv(T, C) + j is chunk j of sequence n; varlen (``_slot``), the sequence n whose
    slots start at or before p."""
    if VARLEN:
        n = p * 0
        for n0 in range(0, N, SEARCH):
            idx = n0 + kl.arange(0, SEARCH)
            c = kl.load(cu_ptr + idx, mask=idx < N, other=0)
            n += kl.sum(((idx < N) & (c // CHUNK + idx <= p)).to(kl.int32), axis=0)
        n = n - 1
        bos = kl.load(cu_ptr + n)
        eos = kl.load(cu_ptr + n + 1)
    else:
        n = p // ((T + CHUNK - 1) // CHUNK)
        bos = n * T
        eos = bos + T
    start = bos + (p - _slot(n, bos, T, VARLEN)) * CHUNK
    return n, start, eos


@kiln.jit
def _slot(n, bos, T, VARLEN: kl.constexpr):
    """The slot of sequence n's first chunk: varlen ``bos // C + n`` (distinct for every
    chunk of every sequence: at most cdiv(T, C) + N slots), else ``n cdiv(T, C)``."""
    if VARLEN:
        return bos // CHUNK + n
    return n * ((T + CHUNK - 1) // CHUNK)


@kiln.jit
def _beta(beta_ptr, at, ok, beta_sigmoid):
    """beta of the rows at ``at`` (bf16 values or, with ``beta_sigmoid``, logits; fp32, 0
    where not ok)."""
    beta = kl.load(beta_ptr + at, mask=ok, other=0.0).to(kl.float32)
    return kl.where(ok & (beta_sigmoid != 0), kl.sigmoid(beta), beta)


# ---------------------------------------------------------------------------
# kda_chunk_prefill: the chunk factors (every chunk at once), then the state chain
# ---------------------------------------------------------------------------

@kiln.jit(num_warps=8, do_not_specialize=["T", "H", "HV", "N", "l2norm", "beta_sigmoid"])
def kda_prefill_chunk_kernel(q_ptr, k_ptr, g_ptr, beta_ptr, alog_ptr, dtb_ptr, cu_ptr,
                             wq_ptr, ww_ptr, wkd_ptr, wa_ptr, wd_ptr, wl_ptr, T, H, HV, N,
                             l2norm, beta_sigmoid, scale, lower_bound, K: kl.constexpr,
                             GATE: kl.constexpr, VARLEN: kl.constexpr):
    """Program (chunk slot p, value head hv): the chunk's factors that need neither the
    state nor the UT inverse, into the workspace at slot p (module docstring): qg = q exp(G)
    (bf16 [C, K]), kd = k exp(G_last - G) (fp32, transposed: [K, C]), A_qk (bf16 [C, C]),
    exp(G_last) (fp32 [K]), and for ``kda_prefill_ut_kernel`` ke = k exp(G) (fp32 [C, K], in
    W's place) and lm = Diag(beta) A_kk (fp32 [C, C]), each [P, HV, ...]. Inputs as the
    wrapper's docstring says (``kda_chunk_prefill``); a slot past its sequence's chunks does
    nothing."""
    C: kl.constexpr = CHUNK
    p = kl.program_id(0)
    hv = kl.program_id(1)
    h = hv // (HV // H)
    n, start, eos = _chunk_of(cu_ptr, p, T, N, VARLEN)
    if start < eos:
        rows = kl.arange(0, C)
        cols = kl.arange(0, K)
        t = start + rows
        ok = t < eos
        t64 = t.to(kl.int64)
        qk_at = (t64 * H + h)[:, None] * K + cols[None, :]
        q = kl.load(q_ptr + qk_at, mask=ok[:, None], other=0.0).to(kl.float32)
        k = kl.load(k_ptr + qk_at, mask=ok[:, None], other=0.0).to(kl.float32)
        g_at = (t64 * HV + hv)[:, None] * K + cols[None, :]
        if GATE > 0:
            a_log = kl.load(alog_ptr + hv)
            dt_bias = kl.load(dtb_ptr + hv * K + cols)
            a = kl.load(g_ptr + g_at, mask=ok[:, None], other=0.0).to(kl.float32)
            g = kl.where(ok[:, None], kda_gate(a, dt_bias[None, :], a_log, lower_bound,
                                               GATE == 2), 0.0)
        else:
            g = kl.load(g_ptr + g_at, mask=ok[:, None], other=0.0)
        q = q * kl.where(l2norm != 0, _inv_norm(q), 1.0)[:, None] * scale
        k = k * kl.where(l2norm != 0, _inv_norm(k), 1.0)[:, None]
        G = kl.cumsum(g, axis=0)
        g_last = _row(G, rows, C - 1)  # padded rows add nothing: the last valid row's
        slot = p.to(kl.int64) * HV + hv
        ck = slot * (C * K) + (rows * K)[:, None] + cols[None, :]
        kl.store(wq_ptr + ck, (q * kl.exp(G)).to(kl.bfloat16))
        kl.store(wkd_ptr + slot * (C * K) + rows[:, None] + (cols * C)[None, :],
                 k * kl.exp(g_last[None, :] - G))  # transposed: [K, C]
        kl.store(wd_ptr + slot * K + cols, kl.exp(g_last))
        kl.store(ww_ptr + ck, k * kl.exp(G))
        # A_kk, A_qk from the decay capped at DECAY_CAP a token (a pair across a token that
        # decays more is below exp(-DECAY_CAP) either way): 16-row blocks where no token
        # decays by more than SAFE_SPAN / 15 (a block's span is then at most SAFE_SPAN),
        # else 8-row blocks (4 DECAY_CAP = SAFE_SPAN).
        if kl.min(kl.min(g, axis=1), axis=0) >= -SAFE_SPAN / (BLOCK - 1):
            akk, aqk = _intra_cols(q, k, G, C)
        else:
            akk, aqk = _intra(q, k, kl.cumsum(kl.maximum(g, -DECAY_CAP), axis=0), BLOCK // 2, C)
        cc = slot * (C * C) + (rows * C)[:, None] + kl.arange(0, C)[None, :]
        kl.store(wa_ptr + cc, aqk.to(kl.bfloat16))
        kl.store(wl_ptr + cc, akk * _beta(beta_ptr, t64 * HV + hv, ok, beta_sigmoid)[:, None])


@kiln.jit(num_warps=4, do_not_specialize=["T", "HV", "N", "beta_sigmoid"])
def kda_prefill_ut_kernel(v_ptr, beta_ptr, cu_ptr, ww_ptr, wu_ptr, wl_ptr, T, HV, N,
                          beta_sigmoid, K: kl.constexpr, V: kl.constexpr,
                          VARLEN: kl.constexpr):
    """Program (chunk slot p, value head hv): the UT transform T = (I + lm)^-1 Diag(beta) of
    the chunk's lm (``kda_prefill_chunk_kernel``), then W = T ke (fp32 [C, K], over ke in
    place) and U = T v (fp32, transposed: [V, C]). A program of its own: on one warpgroup
    its dots run on wgmma (sm_90a), and its registers leave room for a second program an
    SM."""
    C: kl.constexpr = CHUNK
    p = kl.program_id(0)
    hv = kl.program_id(1)
    n, start, eos = _chunk_of(cu_ptr, p, T, N, VARLEN)
    if start < eos:
        rows = kl.arange(0, C)
        cols = kl.arange(0, K)
        vcols = kl.arange(0, V)
        ok = start + rows < eos
        at = (start + rows).to(kl.int64) * HV + hv  # the chunk's tokens of head hv
        slot = p.to(kl.int64) * HV + hv
        lm = kl.load(wl_ptr + slot * (C * C) + (rows * C)[:, None] + rows[None, :])
        beta = _beta(beta_ptr, at, ok, beta_sigmoid)
        tm_hi, tm_lo = _split(_unit_lower_inverse(lm, C) * beta[None, :])
        ck = slot * (C * K) + (rows * K)[:, None] + cols[None, :]
        ke_hi, ke_lo = _split(kl.load(ww_ptr + ck))
        kl.store(ww_ptr + ck, _dot_parts(tm_hi, tm_lo, ke_hi, ke_lo, kl.zeros((C, K), kl.float32)))
        v = kl.load(v_ptr + at[:, None] * V + vcols[None, :], mask=ok[:, None], other=0.0)
        kl.store(wu_ptr + slot * (C * V) + rows[:, None] + (vcols * C)[None, :],
                 kl.dot(tm_lo, v, kl.dot(tm_hi, v, kl.zeros((C, V), kl.float32))))  # [V, C]


@kiln.jit(num_warps=8, do_not_specialize=["T", "HV", "has_h0"])
def kda_prefill_chain_kernel(wq_ptr, ww_ptr, wkd_ptr, wu_ptr, wa_ptr, wd_ptr, h0_ptr, ht_ptr,
                             cu_ptr, o_ptr, T, HV, has_h0, K: kl.constexpr, V: kl.constexpr,
                             VB: kl.constexpr, VARLEN: kl.constexpr,
                             STAGES: kl.constexpr):
    """Program (value block, value head hv, sequence n): the VB value rows of the head's
    state, kept transposed ([K, VB] fp32), through the sequence's chunks from their factors
    (``kda_prefill_chunk_kernel``): V' = U - W h^T, o = qg h^T + A_qk V', h <- h exp(G_last)
    + V'^T kd. h0 (``has_h0``) and ht [N, HV, V, K] fp32; o [*, HV, V] bf16."""
    C: kl.constexpr = CHUNK
    vb = kl.program_id(0)
    hv = kl.program_id(1)
    n = kl.program_id(2)
    if VARLEN:
        bos = kl.load(cu_ptr + n)
        eos = kl.load(cu_ptr + n + 1)
    else:
        bos = n * T
        eos = bos + T
    first = _slot(n, bos, T, VARLEN)
    rows = kl.arange(0, C)
    kk = kl.arange(0, K)
    vcols = vb * VB + kl.arange(0, VB)
    at = (n.to(kl.int64) * HV + hv) * (V * K) + (vcols * K)[None, :] + kk[:, None]
    state = kl.load(h0_ptr + at, mask=has_h0 != 0, other=0.0)  # h^T [K, VB]
    for c0 in kl.range(bos, eos, C, num_stages=STAGES):
        slot = (first + (c0 - bos) // C).to(kl.int64) * HV + hv
        w = kl.reshape(kl.bulk_load(ww_ptr + slot * (C * K), C * K), C, K)
        qg = kl.reshape(kl.bulk_load(wq_ptr + slot * (C * K), C * K), C, K)
        kd_t = kl.reshape(kl.bulk_load(wkd_ptr + slot * (C * K), C * K), K, C)
        u = kl.trans(kl.reshape(kl.bulk_load(wu_ptr + (slot * V + vb * VB) * C, VB * C), VB,
                                C))
        aqk = kl.reshape(kl.bulk_load(wa_ptr + slot * (C * C), C * C), C, C)
        decay = kl.bulk_load(wd_ptr + slot * K, K)
        h_hi, h_lo = _split(state)
        w_hi, w_lo = _split(w)
        zero = kl.zeros((C, VB), kl.float32)
        vp = u - _dot_parts(w_hi, w_lo, h_hi, h_lo, zero)
        o = kl.dot(aqk, vp.to(kl.bfloat16), kl.dot(qg, h_lo, kl.dot(qg, h_hi, zero)))
        t = c0 + rows
        kl.store(o_ptr + (t.to(kl.int64) * HV + hv)[:, None] * V + vcols[None, :], o,
                 mask=(t < eos)[:, None])
        state = _dot(kd_t, vp, state * decay[:, None])
    kl.store(ht_ptr + at, state)


@dataclasses.dataclass(frozen=True)
class Settings:
    """kda_chunk_prefill's tuning (docs/kernels/kda.md, "Chunked prefill")."""
    chunk_warps: int = 8  # the chunk factors: [64, 128] fp32 tiles
    ut_warps: int = 4  # the UT inverse, W and U: one warpgroup (wgmma on sm_90a)
    #: The chain's (value rows a program, chunks in flight): wide where its programs fill
    #: most of the GPU (each reads a chunk's factors once for the head's 128 rows; two
    #: stages do not fit in shared memory), narrow where they would not (few sequences and
    #: heads: 16 rows, more programs, the next chunk's factors in flight).
    #: bench/results/kda/h100-prefill-39.md, h100-prefill-split-41.md
    chain_wide: tuple = (128, 1)
    chain_narrow: tuple = (16, 2)
    chain_warps: int = 8

SETTINGS = Settings()

#: Gate modes: the fp32 log decay given, the raw ``a`` of the softplus gate, of the
#: lower-bound gate.
GATE_GIVEN, GATE_SOFTPLUS, GATE_LOWER_BOUND = 0, 1, 2


def _suffix(varlen: bool) -> str:
    return "_varlen" if varlen else ""


def chunk_launch_config(gate: int, varlen: bool, settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps) of the chunk-factor kernel for a gate mode, with
    or without cu_seqlens."""
    name = "kda_prefill_chunk" + ("", "_gate", "_gate_lower_bound")[gate] + _suffix(varlen)
    return (name, {"K": HEAD_DIM, "GATE": gate, "VARLEN": bool(varlen)},
            settings.chunk_warps)


def ut_launch_config(varlen: bool, settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps) of the UT-transform kernel."""
    return ("kda_prefill_ut" + _suffix(varlen),
            {"K": HEAD_DIM, "V": HEAD_DIM, "VARLEN": bool(varlen)}, settings.ut_warps)


def chain_launch_config(varlen: bool, wide: bool = True, settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps) of the state-chain kernel, wide or narrow
    (``Settings``)."""
    vb, stages = settings.chain_wide if wide else settings.chain_narrow
    return ("kda_prefill_chain" + _suffix(varlen),
            {"K": HEAD_DIM, "V": HEAD_DIM, "VB": vb, "VARLEN": bool(varlen), "STAGES": stages},
            settings.chain_warps)


def chain_is_wide(num_seqs: int, hv: int, num_sms: Optional[int],
                  settings: Settings = SETTINGS) -> bool:
    """Whether the wide chain's programs (value blocks x heads x sequences) fill at least
    half the SMs."""
    return num_sms is None or 2 * num_seqs * hv * (HEAD_DIM // settings.chain_wide[0]) >= num_sms


#: The workspace: the chain's factors (``_CHAIN``), and lm [P, HV, C, C] fp32 between the
#: chunk kernel and the UT kernel.
_CHAIN = {"wq_ptr": "*bf16", "ww_ptr": "*f32", "wkd_ptr": "*f32", "wu_ptr": "*f32",
          "wa_ptr": "*bf16", "wd_ptr": "*f32"}


def _cu(varlen: bool) -> str:
    # Without cu_seqlens the wrapper passes the decay workspace for cu_ptr, never read.
    return "*i32" if varlen else "*f32"


def chunk_signature(gate: int, varlen: bool) -> dict:
    """The chunk-factor kernel's AOT signature."""
    return {"q_ptr": "*bf16", "k_ptr": "*bf16", "g_ptr": "*bf16" if gate else "*f32",
            "beta_ptr": "*bf16", "alog_ptr": "*f32", "dtb_ptr": "*f32", "cu_ptr": _cu(varlen),
            "wq_ptr": "*bf16", "ww_ptr": "*f32", "wkd_ptr": "*f32", "wa_ptr": "*bf16",
            "wd_ptr": "*f32", "wl_ptr": "*f32", "T": "i32", "H": "i32", "HV": "i32", "N": "i32",
            "l2norm": "i32", "beta_sigmoid": "i32", "scale": "f32", "lower_bound": "f32"}


def ut_signature(varlen: bool) -> dict:
    """The UT-transform kernel's AOT signature."""
    return {"v_ptr": "*bf16", "beta_ptr": "*bf16", "cu_ptr": _cu(varlen), "ww_ptr": "*f32",
            "wu_ptr": "*f32", "wl_ptr": "*f32", "T": "i32", "HV": "i32", "N": "i32",
            "beta_sigmoid": "i32"}


def chain_signature(varlen: bool) -> dict:
    """The state-chain kernel's AOT signature."""
    return {**_CHAIN, "h0_ptr": "*f32", "ht_ptr": "*f32", "cu_ptr": _cu(varlen),
            "o_ptr": "*bf16", "T": "i32", "HV": "i32", "has_h0": "i32"}


#: The tensors the wrapper checks (or makes) 16-byte aligned (the rows' vector accesses).
CHUNK_ALIGNED = ("q_ptr", "k_ptr", "g_ptr", "dtb_ptr", "wq_ptr", "ww_ptr", "wkd_ptr", "wa_ptr",
                 "wd_ptr", "wl_ptr")
UT_ALIGNED = ("v_ptr", "ww_ptr", "wu_ptr", "wl_ptr")
CHAIN_ALIGNED = (*_CHAIN, "h0_ptr", "ht_ptr", "o_ptr")

AOT_SPECIALIZATIONS = [
    Spec(kda_prefill_chunk_kernel, name=cfg[0], signature=chunk_signature(gate, varlen),
         constexprs=cfg[1], divisibility=CHUNK_ALIGNED, num_warps=cfg[2])
    for gate in (GATE_GIVEN, GATE_SOFTPLUS, GATE_LOWER_BOUND) for varlen in (False, True)
    for cfg in (chunk_launch_config(gate, varlen),)
] + [
    Spec(kda_prefill_ut_kernel, name=cfg[0], signature=ut_signature(varlen), constexprs=cfg[1],
         divisibility=UT_ALIGNED, num_warps=cfg[2])
    for varlen in (False, True) for cfg in (ut_launch_config(varlen),)
] + [
    Spec(kda_prefill_chain_kernel, name=cfg[0], signature=chain_signature(varlen),
         constexprs=cfg[1], divisibility=CHAIN_ALIGNED, num_warps=cfg[2])
    for varlen in (False, True) for wide in (True, False)
    for cfg in (chain_launch_config(varlen, wide),)
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
    varlen = cu_seqlens is not None
    chunks = -(-t_len // CHUNK)
    slots = chunks + num_seqs if varlen else bsz * chunks
    ws = {"wq": (CHUNK, HEAD_DIM, "bfloat16"), "ww": (CHUNK, HEAD_DIM, "float32"),
          "wkd": (CHUNK, HEAD_DIM, "float32"), "wu": (CHUNK, HEAD_DIM, "float32"),
          "wa": (CHUNK, CHUNK, "bfloat16"), "wd": (HEAD_DIM, "float32"),
          "wl": (CHUNK, CHUNK, "float32")}
    ws = {key: L.empty(q, (slots, hv, *shape[:-1]), shape[-1]) for key, shape in ws.items()}
    cu = cu_seqlens if varlen else ws["wd"]
    sig = int(bool(use_beta_sigmoid_in_kernel))
    name, constexprs, num_warps = chunk_launch_config(gate, varlen, settings)
    chunk = L.Launch(kda_prefill_chunk_kernel, name, (slots, hv),
                     (q, k, g, beta, A_log if A_log is not None else ws["wd"],
                      dt_bias if dt_bias is not None else ws["wd"], cu,
                      *(ws[key] for key in ("wq", "ww", "wkd", "wa", "wd", "wl")), t_len, h,
                      hv, num_seqs, int(bool(use_qk_l2norm_in_kernel)), sig, float(scale),
                      lb), constexprs, num_warps)
    name, constexprs, num_warps = ut_launch_config(varlen, settings)
    ut = L.Launch(kda_prefill_ut_kernel, name, (slots, hv),
                  (v, beta, cu, ws["ww"], ws["wu"], ws["wl"], t_len, hv, num_seqs, sig),
                  constexprs, num_warps)
    wide = chain_is_wide(num_seqs, hv, L.num_sms(q), settings)
    name, constexprs, num_warps = chain_launch_config(varlen, wide, settings)
    chain = L.Launch(kda_prefill_chain_kernel, name, (HEAD_DIM // constexprs["VB"], hv, num_seqs),
                     (*(ws[key] for key in ("wq", "ww", "wkd", "wu", "wa", "wd")),
                      initial_state if initial_state is not None else final_state, final_state,
                      cu, out, t_len, hv, int(initial_state is not None)), constexprs,
                     num_warps)
    L.launch_all((chunk, ut, chain))
    return out, final_state
