"""KDA (Kimi Delta Attention) decode: the recurrent step of one token a request (packed,
post-conv inputs) and the fused decode (conv update + gate + recurrence + gated RMSNorm).

Per request (value head hv, its q/k head h = hv // (HV / H)), all math in fp32:

    q = l2norm(q_raw) * scale,  k = l2norm(k_raw)         l2norm(x) = x / sqrt(sum(x^2) + 1e-6)
    g = -exp(A_log[hv]) * softplus(a + dt_bias[hv])       softplus form (threshold 20), or
    g = lower_bound * sigmoid(exp(A_log[hv]) * (a + dt_bias[hv]))    the lower-bound form (K3: -5)
    beta = sigmoid(b)
    h      <- h * exp(g)[None, :]                 h = state[slot, hv], [V, K], K contiguous
    t_v    =  sum_k h[v, k] * k[k]
    v_new  =  (v - t_v) * beta
    h      <- h + v_new[:, None] * k[None, :]
    o[v]   =  sum_k h[v, k] * q[k]

``kda_packed_decode`` takes the post-conv ``mixed_qkv`` = q | k | v (bf16 [B, 2 H K + HV V]);
``kda_fused_decode`` the pre-conv projection rows and runs the causal depthwise conv first
(width 4, the conv state holding the last 3 inputs, updated in place):

    y = ((w[c, 0] x[t-3] + w[c, 1] x[t-2]) + w[c, 2] x[t-1]) + w[c, 3] x[t]     fp32
    u = bf16(y * sigmoid(y))         (IEEE sigmoid: libdevice expf and a division, torch's)

(u, the post-conv value, rounded to bf16 as the unfused pipeline stores it), then the step
above on every token of the sequence, and optionally the gated RMSNorm
``o * rsqrt(sum(o^2) / V + eps) * w_norm * sigmoid(g_out)``.

**One formulation.** Both kernels (and the verify chain and the ReplaySSM fold that must
reproduce their states bit for bit) compute the step through the same ``@kiln.jit`` helpers:
``kda_token_prologue`` (the q/k norms, the gate, beta on [K] or [T, K] tiles) and
``kda_recurrent_step`` (the rows of the state as an [R, K] tile; its state part
``kda_state_update`` is the fold's step, kda_verify.py); the fused decode and the verify
chain take a few tokens' q/k conv and prologue at once (``kda_token_rows``), then each
token's step and ``kda_gated_norm``. kiln gives every tile one blocked layout (runs of 8
elements here, the bf16 16-byte vector); a row of K = 128 spans 16 runs, so every row sum
-- over 8 registers, then a butterfly over 16 lanes -- and every [K] norm is summed in the
same order whatever R and the warps of the program: the packed kernel's [8, K] tiles on one
warp and the [16, K] chunks of the fused kernel, the verify chain and the fold on 2 give
the same bits (test/python/test_kda_decode.py checks it in the interpreter, test/gpu on
the GPU). ``exp``, ``sigmoid`` and ``log`` of the gate and beta are the fast hardware
forms, ``sqrt`` is ``sqrt.approx.f32`` (what ``kl.sqrt`` lowers to); the divisions are
IEEE; no fma contraction.

**Padded requests.** indices[b] < 0 (or >= the pool's slots) is a padded CUDA-graph slot:
its output rows are zeros, the SSM and conv states are neither read nor written.

**Layout.** The state pool is [slots, HV, V, K] fp32, each slot dense, the slot pitch
``state.stride(0)`` in 64-bit arithmetic (the unified pool pitches a slot across all layers).
The packed kernel loads its rows of the state as 16-byte vectors at once, updates them in
registers and stores them; the fused kernel streams a head's state through a shared-memory
ring of bulk copies (``kl.bulk_load`` in a pipelined loop), a chunk of rows at a time.

Specification: docs/kernels/kda.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

#: K = V = 128 (the kernels' only head size); the short conv's width.
HEAD_DIM = 128
CONV_WIDTH = 4
#: L2 norm epsilon (inside the square root).
L2_EPS = 1e-6
#: softplus returns x above this (torch's and fla's threshold).
SOFTPLUS_THRESHOLD = 20.0
#: GVA ratios HV / H the bundle holds (the fused kernel's cluster sizes).
GROUPS = (1, 2, 4)


# ---------------------------------------------------------------------------
# The shared formulation (decode, verify, fold)
# ---------------------------------------------------------------------------

@kiln.jit
def kda_l2norm(x):
    """``x / sqrt(sum(x^2) + 1e-6)`` along the last axis of an fp32 [K] or [T, K] tile (a
    division, not a reciprocal; a row of [T, K] is summed in the order of a [K] tile)."""
    if len(x.shape) == 1:
        return x / kl.sqrt(kl.sum(x * x, axis=0) + L2_EPS)
    return x / kl.sqrt(kl.sum(x * x, axis=1) + L2_EPS)[:, None]


@kiln.jit
def kda_gate(a, dt_bias, a_log, lower_bound, LOWER_BOUND: kl.constexpr):
    """The per-channel log decay g [K] (fp32) of the forget-gate input ``a`` [K]."""
    x = a + dt_bias
    if LOWER_BOUND:
        g = lower_bound * kl.sigmoid(kl.exp(a_log) * x)
    else:
        g = -kl.exp(a_log) * kl.where(x > SOFTPLUS_THRESHOLD, x, kl.log(1.0 + kl.exp(x)))
    return g


@kiln.jit
def kda_token_prologue(q_raw, k_raw, a, dt_bias, a_log, b, scale, lower_bound,
                       LOWER_BOUND: kl.constexpr):
    """(q, k, g, beta) of one token and value head: q, k the L2-normalized fp32 [K] tiles (q
    times scale), g the log decay [K], beta = sigmoid(b) (a scalar); or of T tokens at once
    ([T, K] tiles, b and beta [T], dt_bias [1, K])."""
    q = kda_l2norm(q_raw) * scale
    k = kda_l2norm(k_raw)
    g = kda_gate(a, dt_bias, a_log, lower_bound, LOWER_BOUND)
    return q, k, g, kl.sigmoid(b)


@kiln.jit
def kda_state_update(h, k, decay, beta, v):
    """The state part of one token on the rows ``h`` [R, K] (fp32) of a head's state with
    their values ``v`` [R]: decay, t_v, v_new, the rank-1 update. ``decay`` is exp(g) [K],
    computed by the caller once a token (a kernel that steps a head's state a chunk of rows
    at a time reuses it for every chunk). Returns h' (the ReplaySSM fold's whole step)."""
    h = h * decay[None, :]
    t_v = kl.sum(h * k[None, :], axis=1)
    v_new = (v - t_v) * beta
    return h + v_new[:, None] * k[None, :]


@kiln.jit
def kda_recurrent_step(h, q, k, decay, beta, v):
    """One token on the rows ``h`` [R, K] (fp32) of a head's state with their values ``v``
    [R]: ``kda_state_update``, then o. Returns (h', o [R])."""
    h = kda_state_update(h, k, decay, beta, v)
    return h, kl.sum(h * q[None, :], axis=1)


@kiln.jit
def kda_conv_silu(x, w):
    """The post-conv bf16 values [C] of the windows x [C, 4] (bf16, tap 0 the oldest input,
    tap 3 the token) with the taps' weights w [C, 4] (bf16): ``y = ((w0 x0 + w1 x1) + w2 x2)
    + w3 x3`` in fp32 (the products of bf16 values are exact; the four taps of a window are
    one thread's registers, summed in order), then ``bf16(y * sigmoid(y))`` with the IEEE
    sigmoid. Windows [T, C, 4] with weights [1, C, 4] give [T, C]."""
    y = kl.sum(w.to(kl.float32) * x.to(kl.float32), axis=len(x.shape) - 1)
    return (y * kl.sigmoid(y, precise=True)).to(kl.bfloat16)


@kiln.jit
def kda_gated_norm(o, w, gate, eps, V: kl.constexpr):
    """The gated RMSNorm of a head's output o [V] (fp32): ``o * rsqrt(sum(o^2) / V + eps) *
    w * gate``, w = w_norm [V] and gate = sigmoid(g_out) [V] in fp32; or of T tokens' o
    [T, V] (w [1, V], gate [T, V]), each row summed in the order of a [V] tile."""
    if len(o.shape) == 1:
        return o * kl.rsqrt(kl.sum(o * o, axis=0) * (1.0 / V) + eps) * w * gate
    return o * kl.rsqrt(kl.sum(o * o, axis=1) * (1.0 / V) + eps)[:, None] * w * gate


# ---------------------------------------------------------------------------
# kda_packed_decode
# ---------------------------------------------------------------------------

@kiln.jit(num_warps=4, do_not_specialize=["HV", "H", "num_slots", "qkv_s0_u", "a_s0_u", "b_s0",
                                          "slot_u"])
def kda_packed_decode_kernel(qkv_ptr, a_ptr, b_ptr, alog_ptr, dtb_ptr, state_ptr, idx_ptr,
                             out_ptr, HV, H, num_slots, qkv_s0_u, a_s0_u, b_s0, slot_u, scale,
                             lower_bound, K: kl.constexpr, V: kl.constexpr, ROWS: kl.constexpr,
                             LOWER_BOUND: kl.constexpr, STATE_EVICT: kl.constexpr,
                             STATE_STORE: kl.constexpr, PROGRAMS: kl.constexpr):
    """Program (request, value head, slice): ROWS rows of the head's state as one [ROWS, K]
    tile. The row strides come in 16-byte units (``qkv_s0_u``, ``a_s0_u``: 8 bf16,
    ``slot_u``: 4 fp32), so that every row's offset is visibly a multiple of 16 bytes (16-byte
    vectors whatever the launch specialized). STATE_EVICT, STATE_STORE: the state loads'
    eviction policy and the stores' cache modifier (the state is read once a step); the
    hinted accesses are predicated by the padded-slot mask instead of branched around.
    PROGRAMS > 0: compiled for PROGRAMS programs an SM."""
    if PROGRAMS > 0:
        kl.min_programs_per_sm(PROGRAMS)
    NS: kl.constexpr = V // ROWS
    pid = kl.program_id(0)
    part = pid % NS
    head = pid // NS
    hv = head % HV
    req = (head // HV).to(kl.int64)
    h = hv // (HV // H)
    cols = kl.arange(0, K)
    rows = part * ROWS + kl.arange(0, ROWS)
    kl.pdl_wait()  # every input may come from the previous kernels in the stream
    slot = kl.load(idx_ptr + req)
    valid = (slot >= 0) & (slot < num_slots)
    # int64 slot offsets: the pool spans more than 2^31 elements
    base = kl.where(valid, slot, 0).to(kl.int64) * slot_u.to(kl.int64) * 4 + hv * (V * K)
    sp = state_ptr + base + (rows * K)[:, None] + cols[None, :]
    hs = kl.load(sp, mask=valid, other=0.0, eviction_policy=STATE_EVICT)
    x = qkv_ptr + req * (qkv_s0_u * 8)
    q_raw = kl.load(x + h * K + cols).to(kl.float32)
    k_raw = kl.load(x + (H + h) * K + cols).to(kl.float32)
    v = kl.load(x + 2 * H * K + hv * V + rows).to(kl.float32)
    a = kl.load(a_ptr + req * (a_s0_u * 8) + hv * K + cols).to(kl.float32)
    b = kl.load(b_ptr + req * b_s0 + hv).to(kl.float32)
    a_log = kl.load(alog_ptr + hv)
    dt_bias = kl.load(dtb_ptr + hv * K + cols)
    kl.pdl_launch_dependents()
    q, k, g, beta = kda_token_prologue(q_raw, k_raw, a, dt_bias, a_log, b, scale, lower_bound,
                                       LOWER_BOUND)
    hs, o = kda_recurrent_step(hs, q, k, kl.exp(g), beta, v)
    kl.store(sp, hs, mask=valid, cache_modifier=STATE_STORE)
    kl.store(out_ptr + (req * HV + hv) * V + rows, kl.where(valid, o, 0.0))


# ---------------------------------------------------------------------------
# kda_fused_decode
# ---------------------------------------------------------------------------

@kiln.jit
def _conv_tap(qkv_ptr, qkv_s0, conv_ptr, conv_row, c, p, bos, valid):
    """The raw input at position p (of the sequence starting at bos) of the channels c: the
    projection row p where p >= bos, else the conv state's row p - bos + 3 (masked to zero
    for a padded slot). One select of two 16-byte aligned row pointers, one vector load."""
    in_state = p < bos
    row = kl.where(in_state, conv_ptr + (p - bos + 3) * conv_row,
                   qkv_ptr + p.to(kl.int64) * qkv_s0)
    return kl.load(row + c, mask=valid | (p >= bos), other=0.0, eviction_policy="evict_normal")


@kiln.jit
def _conv_part(qkv_ptr, qkv_s0, conv_ptr, conv_row, convw_ptr, c, t, bos, valid):
    """The post-conv bf16 values of token t at the channels c [C]: the window as one [C, 4]
    tile (tap j = position t - 3 + j, from the projection rows where it is >= bos, else the
    conv state's row t - bos + j), the taps' weights as one [C, 4] tile (a 16-byte vector of
    two channels' taps a thread), summed along the taps in order."""
    j = kl.arange(0, CONV_WIDTH)
    p = t - (CONV_WIDTH - 1) + j
    in_state = (p < bos)[None, :]
    # two loads with complementary masks (hinted: predicated, not branched around), each
    # element read once
    x_state = kl.load(conv_ptr + ((p - bos + (CONV_WIDTH - 1)) * conv_row)[None, :]
                      + c[:, None], mask=in_state & valid, other=0.0,
                      eviction_policy="evict_normal")
    x_rows = kl.load(qkv_ptr + (p.to(kl.int64) * qkv_s0)[None, :] + c[:, None],
                     mask=~in_state, other=0.0, eviction_policy="evict_normal")
    x = kl.where(in_state, x_state, x_rows)
    w = kl.load(convw_ptr + (c * CONV_WIDTH)[:, None] + j[None, :])
    return kda_conv_silu(x, w)


@kiln.jit
def kda_conv_rows(qkv_ptr, qkv_s0, conv_ptr, conv_row, convw_ptr, c, t, bos, ok, valid):
    """_conv_part of several tokens: the post-conv bf16 values [T, C] of the tokens t [T]
    (``ok`` [T] marks the real ones; the others read nothing) at the channels c [C], their
    windows as one [T, C, 4] tile."""
    j = kl.arange(0, CONV_WIDTH)
    p = t[:, None] - (CONV_WIDTH - 1) + j[None, :]  # [T, 4]
    in_state = (p < bos)[:, None, :]
    live = ok[:, None, None]
    x_state = kl.load(conv_ptr + ((p - bos + (CONV_WIDTH - 1)) * conv_row)[:, None, :]
                      + c[None, :, None], mask=in_state & live & valid, other=0.0,
                      eviction_policy="evict_normal")
    x_rows = kl.load(qkv_ptr + (p.to(kl.int64) * qkv_s0)[:, None, :] + c[None, :, None],
                     mask=~in_state & live, other=0.0, eviction_policy="evict_normal")
    x = kl.where(in_state, x_state, x_rows)
    w = kl.load(convw_ptr + (c * CONV_WIDTH)[:, None] + j[None, :])
    return kda_conv_silu(x, w[None, :, :])


@kiln.jit
def _conv_state_update(qkv_ptr, qkv_s0, conv_ptr, conv_row, c, bos, eos, valid):
    """Loads the last three raw inputs of the sequence at the channels c (positions eos - 3
    .. eos - 1, from the rows or the old conv state) and returns them with their stores
    still to do: the caller stores them after every program sharing the channels has read
    the old state."""
    y0 = _conv_tap(qkv_ptr, qkv_s0, conv_ptr, conv_row, c, eos - 3, bos, valid)
    y1 = _conv_tap(qkv_ptr, qkv_s0, conv_ptr, conv_row, c, eos - 2, bos, valid)
    y2 = _conv_tap(qkv_ptr, qkv_s0, conv_ptr, conv_row, c, eos - 1, bos, valid)
    return y0, y1, y2


@kiln.jit
def _store_conv_rows(conv_ptr, conv_row, c, y0, y1, y2, write):
    kl.store(conv_ptr + c, y0, mask=write)
    kl.store(conv_ptr + conv_row + c, y1, mask=write)
    kl.store(conv_ptr + 2 * conv_row + c, y2, mask=write)


@kiln.jit
def _step_of(x, jj, j):
    """Row j of the [T, N] tile x (or element j of the [T] tile), exactly: the other rows
    replaced by -0.0 and summed away (x + -0.0 is x, a -0.0 included); T == 1: x itself."""
    if x.shape[0] == 1:
        if len(x.shape) == 1:
            return kl.sum(x, axis=0)
        return kl.reshape(x, x.shape[1])
    if len(x.shape) == 1:
        return kl.sum(kl.where(jj == j, x, -0.0), axis=0)
    return kl.sum(kl.where((jj == j)[:, None], x, -0.0), axis=0)


@kiln.jit
def kda_token_rows(qkv_ptr, qkv_s0, conv_ptr, conv_row, convw_ptr, a_ptr, a_s0, b_ptr, b_s0,
                   qc, kc, t, bos, ok, valid, hv, dt_bias, a_log, scale, lower_bound,
                   K: kl.constexpr, LOWER_BOUND: kl.constexpr):
    """The q/k conv and the prologue of the tokens t [T] (``ok`` marks the real ones) of the
    sequence starting at bos: (k_raw, the post-conv bf16 k [T, K]; q, k, g [T, K] fp32;
    beta [T])."""
    cols = kl.arange(0, K)
    tok = t.to(kl.int64)
    q_raw = kda_conv_rows(qkv_ptr, qkv_s0, conv_ptr, conv_row, convw_ptr, qc, t, bos, ok, valid)
    k_raw = kda_conv_rows(qkv_ptr, qkv_s0, conv_ptr, conv_row, convw_ptr, kc, t, bos, ok, valid)
    a = kl.load(a_ptr + (tok * a_s0)[:, None] + (hv * K + cols)[None, :], mask=ok[:, None],
                other=0.0).to(kl.float32)
    b = kl.load(b_ptr + tok * b_s0 + hv, mask=ok, other=0.0).to(kl.float32)
    q, k, g, beta = kda_token_prologue(q_raw.to(kl.float32), k_raw.to(kl.float32), a,
                                       dt_bias[None, :], a_log, b, scale, lower_bound,
                                       LOWER_BOUND)
    return k_raw, q, k, g, beta


@kiln.jit
def kda_token_tuples(q, k, g, beta, T: kl.constexpr):
    """The rows of the [T, K] prologue tiles as T-tuples of [K] tiles (and beta's scalars),
    g as its decay exp(g): extracted once, so that every chunk of state rows steps on them
    in registers."""
    jj = kl.arange(0, T)
    decay = kl.exp(g)
    qs = ()
    ks = ()
    ds = ()
    bs = ()
    for i in kl.static_range(T):
        qs = qs + (_step_of(q, jj, i),)
        ks = ks + (_step_of(k, jj, i),)
        ds = ds + (_step_of(decay, jj, i),)
        bs = bs + (_step_of(beta, jj, i),)
    return qs, ks, ds, bs


@kiln.jit
def kda_put_rows(o_all, o, i, j):
    """o_all [T, NS, R] with o [R] (token i's outputs on chunk j of the state rows) put in
    place: a select, no data movement (o's runs are the runs of o_all's threads)."""
    jj = kl.arange(0, o_all.shape[0])
    cc = kl.arange(0, o_all.shape[1])
    return kl.where(((jj == i)[:, None] & (cc == j)[None, :])[:, :, None], o[None, None, :],
                    o_all)


@kiln.jit
def kda_out_rows(gout_ptr, g_s0, wnorm_ptr, out_ptr, o_all, t, ok, valid, hv, HV, eps,
                 V: kl.constexpr, NORM: kl.constexpr):
    """The output rows of the tokens t [T] from their o [T, NS, R] (fp32): the gated norm
    (NORM), zeros for a padded slot, stored where ``ok``."""
    vrows = kl.arange(0, V)
    tok = t.to(kl.int64)
    o = kl.reshape(o_all, o_all.shape[0], V)
    if NORM:
        go = kl.load(gout_ptr + (tok * g_s0)[:, None] + (hv * V + vrows)[None, :],
                     mask=ok[:, None], other=0.0).to(kl.float32)
        w = kl.load(wnorm_ptr + vrows).to(kl.float32)
        o = kda_gated_norm(o, w[None, :], kl.sigmoid(go), eps, V)
    kl.store(out_ptr + ((tok * HV + hv) * V)[:, None] + vrows[None, :], kl.where(valid, o, 0.0),
             mask=ok[:, None])


@kiln.jit
def _chunk_token(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, vc, hs, o_all, q, k, decay, beta,
                 t, bos, valid, i, j):
    """Token t (the i-th of its pass) on a chunk of state rows hs (the v channels vc, chunk
    j): its v conv, the step, its outputs put in o_all. Returns (hs', o_all')."""
    v = _conv_part(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, vc, t, bos, valid)
    hs, o = kda_recurrent_step(hs, q, k, decay, beta, v.to(kl.float32))
    return hs, kda_put_rows(o_all, o, i, j)


@kiln.jit
def _fused_pass(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, a_ptr, a_s0, b_ptr, b_s0, gout_ptr,
                g_s0, wnorm_ptr, out_ptr, head, qc, kc, t0, bos, eos, valid, hv, H, HV,
                dt_bias, a_log, scale, lower_bound, eps, K: kl.constexpr, V: kl.constexpr,
                TOKENS: kl.constexpr, ROWS: kl.constexpr, STAGES: kl.constexpr,
                LOWER_BOUND: kl.constexpr, NORM: kl.constexpr, STATE_STORE: kl.constexpr):
    """kda_fused_decode's pass over a head's state (``head``) for the tokens t0 .. t0 +
    TOKENS - 1 below eos of the sequence starting at bos: their q/k conv and prologue, the
    ring of chunks stepped through them and stored back, their output rows. TOKENS == 1:
    t0 is a token (no bound check: the branch would split the chunk's block)."""
    cols = kl.arange(0, K)
    rr = kl.arange(0, ROWS)
    t = t0 + kl.arange(0, TOKENS)
    ok = t < eos
    _, q, k, g, beta = kda_token_rows(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, a_ptr, a_s0,
                                      b_ptr, b_s0, qc, kc, t, bos, ok, valid, hv, dt_bias, a_log,
                                      scale, lower_bound, K, LOWER_BOUND)
    qs, ks, ds, bs = kda_token_tuples(q, k, g, beta, TOKENS)
    o_all = kl.zeros((TOKENS, V // ROWS, ROWS), kl.float32)
    for j in kl.range(0, V // ROWS, num_stages=STAGES):
        hs = kl.reshape(kl.bulk_load(head + j * (ROWS * K), ROWS * K), ROWS, K)
        rows = j * ROWS + rr
        vc = 2 * H * K + hv * V + rows
        for i in kl.static_range(TOKENS):
            if TOKENS == 1:
                hs, o_all = _chunk_token(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, vc, hs,
                                         o_all, qs[i], ks[i], ds[i], bs[i], t0 + i, bos, valid,
                                         i, j)
            else:
                if t0 + i < eos:
                    hs, o_all = _chunk_token(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, vc, hs,
                                             o_all, qs[i], ks[i], ds[i], bs[i], t0 + i, bos,
                                             valid, i, j)
        kl.store(head + (rows * K)[:, None] + cols[None, :], hs, mask=valid,
                 cache_modifier=STATE_STORE)
    kda_out_rows(gout_ptr, g_s0, wnorm_ptr, out_ptr, o_all, t, ok, valid, hv, HV, eps, V, NORM)


@kiln.jit(num_warps=4, do_not_specialize=["T", "HV", "H", "num_slots", "varlen", "qkv_s0_u",
                                          "a_s0_u", "b_s0", "g_s0_u", "conv_slot_u",
                                          "conv_row_u", "slot_u"])
def kda_fused_decode_kernel(qkv_ptr, a_ptr, b_ptr, gout_ptr, alog_ptr, dtb_ptr, convw_ptr,
                            conv_ptr, state_ptr, idx_ptr, cu_ptr, wnorm_ptr, out_ptr, T, HV, H,
                            num_slots, varlen, qkv_s0_u, a_s0_u, b_s0, g_s0_u, conv_slot_u,
                            conv_row_u, slot_u, scale, lower_bound, eps, K: kl.constexpr,
                            V: kl.constexpr, GROUP: kl.constexpr, LOWER_BOUND: kl.constexpr,
                            NORM: kl.constexpr, TOKENS: kl.constexpr, ROWS: kl.constexpr,
                            STAGES: kl.constexpr, STATE_STORE: kl.constexpr,
                            PROGRAMS: kl.constexpr):
    """Program n * HV + hv (sequence n, value head hv). The sequence's tokens go TOKENS at a
    time: their q/k conv and prologue as [TOKENS, K] tiles, then the head's state streams
    through shared memory as V / ROWS chunks of ROWS rows (``kl.bulk_load`` into a ring of
    STAGES slots: the next chunks' copies in flight while one is updated in registers),
    each chunk stepped through the tokens and stored back, the outputs [TOKENS, V] kept for
    the gated norm. A later group of tokens reads the rows the previous one stored (a proxy
    fence and a barrier between). The GROUP = HV / H value heads of one q/k head run as one
    thread-block cluster: they all read the q/k channels' conv state, and the first of them
    writes its update only after a cluster barrier. varlen != 0: the tokens of sequence n
    are the rows cu[n] .. cu[n + 1] - 1 (clamped to [0, T)); else row n alone. Strides in
    16-byte units as in the packed kernel. A padded request reads slot 0's rows (the bulk
    copies take no mask; a count would cost a select a value read) and stores nothing."""
    if PROGRAMS > 0:
        kl.min_programs_per_sm(PROGRAMS)
    pid = kl.program_id(0)
    hv = pid % HV
    n = pid // HV
    h = hv // GROUP
    cols = kl.arange(0, K)
    kl.pdl_wait()  # every input may come from the previous kernels in the stream
    slot = kl.load(idx_ptr + n)
    valid = (slot >= 0) & (slot < num_slots)
    bos = n
    eos = n + 1
    if varlen != 0:
        bos = kl.load(cu_ptr + n)
        eos = kl.load(cu_ptr + n + 1)
    bos = kl.minimum(kl.maximum(bos, 0), T)
    eos = kl.minimum(kl.maximum(eos, bos), T)
    slot64 = kl.where(valid, slot, 0).to(kl.int64)
    head = state_ptr + (slot64 * slot_u.to(kl.int64) * 4 + hv * (V * K))
    conv = conv_ptr + slot64 * conv_slot_u.to(kl.int64) * 8
    conv_row = conv_row_u * 8
    qkv_s0 = qkv_s0_u * 8
    qc = h * K + cols
    kc = (H + h) * K + cols
    a_log = kl.load(alog_ptr + hv)
    dt_bias = kl.load(dtb_ptr + hv * K + cols)
    kl.pdl_launch_dependents()
    if TOKENS == 1:  # the static layout: token n alone
        _fused_pass(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, a_ptr, a_s0_u * 8, b_ptr, b_s0,
                    gout_ptr, g_s0_u * 8, wnorm_ptr, out_ptr, head, qc, kc, bos, bos, eos,
                    valid, hv, H, HV, dt_bias, a_log, scale, lower_bound, eps, K, V, TOKENS,
                    ROWS, STAGES, LOWER_BOUND, NORM, STATE_STORE)
    else:
        for t0 in range(bos, eos, TOKENS):
            if t0 > bos:  # the rows the previous pass stored, visible to the bulk copies
                kl.fence_proxy_async("global")
                kl.barrier()
            _fused_pass(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, a_ptr, a_s0_u * 8, b_ptr,
                        b_s0, gout_ptr, g_s0_u * 8, wnorm_ptr, out_ptr, head, qc, kc, t0,
                        bos, eos, valid, hv, H, HV, dt_bias, a_log, scale, lower_bound, eps, K,
                        V, TOKENS, ROWS, STAGES, LOWER_BOUND, NORM, STATE_STORE)
    # the conv state: the last three inputs, read before the cluster barrier, stored after
    vc = 2 * H * K + hv * V + kl.arange(0, V)
    yq0, yq1, yq2 = _conv_state_update(qkv_ptr, qkv_s0, conv, conv_row, qc, bos, eos, valid)
    yk0, yk1, yk2 = _conv_state_update(qkv_ptr, qkv_s0, conv, conv_row, kc, bos, eos, valid)
    yv0, yv1, yv2 = _conv_state_update(qkv_ptr, qkv_s0, conv, conv_row, vc, bos, eos, valid)
    if GROUP > 1:
        kl.cluster_barrier()
    first = valid & (hv % GROUP == 0)
    _store_conv_rows(conv, conv_row, qc, yq0, yq1, yq2, first)
    _store_conv_rows(conv, conv_row, kc, yk0, yk1, yk2, first)
    _store_conv_rows(conv, conv_row, vc, yv0, yv1, yv2, valid)


# ---------------------------------------------------------------------------
# Settings, launch configurations, AOT specializations
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Settings:
    """The KDA decode kernels' tuning (bench/kda/run.py times them; the reasoning is in
    docs/kernels/kda.md, "Implementation")."""
    packed_rows: int = 8  # state rows a packed program: [8, 128] fp32, 4 KiB ...
    packed_warps: int = 1  # ... on one warp (32 fp32 a thread; B = 1 spreads over 192
    # programs; on the H200 91 % of copy bandwidth at B = 512 against 76 % for [32, 128] on
    # 4 warps, bench/results/kda)
    packed_min_programs: int = 0  # ptxas's choice
    fused_rows: int = 16  # the fused decode streams a head's state in chunks of [16, 128]
    fused_stages: int = 4  # through a ring of 4 slots, on 2 warps: 163 registers, no spill,
    fused_warps: int = 2  # 6 programs an SM. On the H100 44.8 / 313.4 us at B = 64 / 512
    fused_min_programs: int = 6  # against 54.9 / 367.6 for [32, 128] on 4 warps, 2 slots,
    # 3 programs an SM (2 slots: 46.0 / 314.7; capped at 8 programs: 51.8 / 343.4;
    # bench/results/kda/h100-fused-ring-32.md)
    varlen_tokens: int = 2  # tokens a pass over the state with cu_seqlens (1 without) ...
    varlen_min_programs: int = 0  # ... 248 registers (4 tokens spill) ...
    varlen_stages: int = 4  # ... a ring of 4 slots (2 spill a few bytes there)
    state_evict: str = "evict_first"  # the state is read once a step (and the hinted loads
    state_store: str = ".cs"  # and stores are predicated, not branched around)


SETTINGS = Settings()


def packed_launch_config(lower_bound: bool, settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps) of the packed kernel."""
    s = settings
    return ("kda_packed_decode" + ("_lower_bound" if lower_bound else ""),
            {"K": HEAD_DIM, "V": HEAD_DIM, "ROWS": s.packed_rows, "LOWER_BOUND": bool(lower_bound),
             "STATE_EVICT": s.state_evict, "STATE_STORE": s.state_store,
             "PROGRAMS": s.packed_min_programs}, s.packed_warps)


def fused_launch_config(group: int, lower_bound: bool, norm: bool, varlen: bool = False,
                        settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps, cluster) of the fused kernel for GVA ratio
    ``group`` = HV / H (the cluster size; None for 1), with or without cu_seqlens."""
    s = settings
    name = (f"kda_fused_decode_g{group}" + ("_lower_bound" if lower_bound else "")
            + ("_norm" if norm else "") + ("_varlen" if varlen else ""))
    return (name, {"K": HEAD_DIM, "V": HEAD_DIM, "GROUP": group, "LOWER_BOUND": bool(lower_bound),
                   "NORM": bool(norm), "TOKENS": s.varlen_tokens if varlen else 1,
                   "ROWS": s.fused_rows,
                   "STAGES": s.varlen_stages if varlen else s.fused_stages,
                   "STATE_STORE": s.state_store,
                   "PROGRAMS": s.varlen_min_programs if varlen else s.fused_min_programs},
            s.fused_warps, (group, 1, 1) if group > 1 else None)


PACKED_SIGNATURE = {"qkv_ptr": "*bf16", "a_ptr": "*bf16", "b_ptr": "*bf16", "alog_ptr": "*f32",
                    "dtb_ptr": "*f32", "state_ptr": "*f32", "idx_ptr": "*i32",
                    "out_ptr": "*bf16", "HV": "i32", "H": "i32", "num_slots": "i32",
                    "qkv_s0_u": "i32", "a_s0_u": "i32", "b_s0": "i32", "slot_u": "i32",
                    "scale": "f32", "lower_bound": "f32"}
FUSED_SIGNATURE = {"qkv_ptr": "*bf16", "a_ptr": "*bf16", "b_ptr": "*bf16", "gout_ptr": "*bf16",
                   "alog_ptr": "*f32", "dtb_ptr": "*f32", "convw_ptr": "*bf16",
                   "conv_ptr": "*bf16", "state_ptr": "*f32", "idx_ptr": "*i32", "cu_ptr": "*i32",
                   "wnorm_ptr": "*bf16", "out_ptr": "*bf16", "T": "i32", "HV": "i32", "H": "i32",
                   "num_slots": "i32", "varlen": "i32", "qkv_s0_u": "i32", "a_s0_u": "i32",
                   "b_s0": "i32", "g_s0_u": "i32", "conv_slot_u": "i32", "conv_row_u": "i32",
                   "slot_u": "i32", "scale": "f32", "lower_bound": "f32", "eps": "f32"}
#: The pointers the wrappers check 16-byte aligned (the vector accesses); b, A_log, the
#: indices and cu_seqlens are read one element at a time and may have any address.
PACKED_ALIGNED = ("qkv_ptr", "a_ptr", "dtb_ptr", "state_ptr", "out_ptr")
FUSED_ALIGNED = ("qkv_ptr", "a_ptr", "gout_ptr", "dtb_ptr", "convw_ptr", "conv_ptr",
                 "state_ptr", "wnorm_ptr", "out_ptr")

AOT_SPECIALIZATIONS = [
    Spec(kda_packed_decode_kernel, name=packed_launch_config(lb)[0], signature=PACKED_SIGNATURE,
         constexprs=packed_launch_config(lb)[1], divisibility=PACKED_ALIGNED,
         num_warps=packed_launch_config(lb)[2])
    for lb in (False, True)
] + [
    Spec(kda_fused_decode_kernel, name=cfg[0], signature=FUSED_SIGNATURE, constexprs=cfg[1],
         divisibility=FUSED_ALIGNED, num_warps=cfg[2], cluster=cfg[3])
    for cfg in (fused_launch_config(g, lb, norm, vl) for g in GROUPS for lb in (False, True)
                for norm in (False, True) for vl in (False, True))
]


# ---------------------------------------------------------------------------
# Wrappers
# ---------------------------------------------------------------------------

def _check_float(op: str, what: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{op}: {what} must be a float, got {type(v).__name__}")
    return float(v)


def _check_heads(op: str, hv: int, num_q_heads: Any) -> int:
    if isinstance(num_q_heads, bool) or not isinstance(num_q_heads, int) or num_q_heads < 1:
        raise ValueError(f"{op}: num_q_heads must be a positive int, got {num_q_heads!r}")
    if hv % num_q_heads:
        raise ValueError(f"{op}: the value heads HV = {hv} must be a multiple of num_q_heads "
                         f"= {num_q_heads}")
    return num_q_heads


def _check_state(op: str, state: Any) -> tuple:
    """(slots, HV, slot pitch in 16-byte units) of the pool [slots, HV, 128, 128] fp32."""
    L.check_dtype(op, "state", state, ("float32",))
    slots, hv, _, _ = L.check_shape(op, "state", state, (None, None, HEAD_DIM, HEAD_DIM))
    if hv < 1:
        raise ValueError(f"{op}: state must have at least one head, got shape "
                         f"{list(L.shape(state))}")
    st = L.strides(state)
    head = HEAD_DIM * HEAD_DIM
    if st[3] != 1 or st[2] != HEAD_DIM or (hv > 1 and st[1] != head):
        raise ValueError(f"{op}: each slot of state must be dense ([HV, V, K] contiguous, "
                         f"strides (*, {head}, {HEAD_DIM}, 1)), got strides {st}")
    pitch = st[0] if slots > 1 else hv * head
    if pitch % 4 or pitch < hv * head:
        raise ValueError(f"{op}: the slot pitch state.stride(0) = {pitch} must be a multiple "
                         f"of 4 elements (16 bytes) and at least HV * V * K = {hv * head}")
    L.check_int32_extent(op, "the slot pitch in 16-byte units", pitch // 4)
    L.check_int32_extent(op, "HV * V * K", hv * head)
    L.check_int32_extent(op, "the state's slots", slots)
    return slots, hv, pitch // 4


def _row_stride(op: str, what: str, t: Any, rows: int, unit: int = 8) -> int:
    """The row stride of t in ``unit``-element (16-byte) units (0 for one row)."""
    s = L.strides(t)[0] if rows > 1 else 0
    if s % unit:
        raise ValueError(f"{op}: the row stride of {what} ({s}) must be a multiple of {unit} "
                         f"elements (16 bytes)")
    L.check_int32_extent(op, f"the row stride of {what}", s)
    return s // unit


def _check_out(op: str, out: Any, shape: tuple, like: Any) -> Any:
    if out is None:
        return L.empty(like, shape, "bfloat16")
    L.check_dtype(op, "out", out, ("bfloat16",))
    L.check_shape(op, "out", out, shape)
    L.check_contiguous(op, "out", out)
    return out


def _lower_bound_args(op: str, lower_bound: Optional[float]) -> tuple:
    if lower_bound is None:
        return False, 0.0
    return True, _check_float(op, "lower_bound", lower_bound)


def kda_packed_decode(mixed_qkv: Any, a: Any, b: Any, A_log: Any, dt_bias: Any, state: Any,
                      indices: Any, num_q_heads: int, scale: Optional[float] = None,
                      lower_bound: Optional[float] = None, out: Optional[Any] = None, *,
                      settings: Settings = SETTINGS) -> Any:
    """One decode step of every request (module docstring): mixed_qkv bf16 [B, 2 H K + HV V]
    (post-conv q | k | v), a bf16 [B, HV K], b bf16 [B, HV] (row-strided, last dims
    contiguous), A_log fp32 [HV], dt_bias fp32 [HV K], state fp32 [slots, HV, 128, 128]
    (updated in place at slot indices[b]; each slot dense, the pitch a multiple of 16
    bytes), indices int32 [B] (< 0 or >= slots: padded, output zeros, the pool untouched),
    num_q_heads H (HV % H == 0), scale (default K^-0.5), lower_bound None (the softplus gate)
    or a float (the lower-bound gate; K3: -5.0). Returns out bf16 [B, HV, 128] (allocated
    when None; contiguous). Every check raises before any launch; B = 0 launches nothing."""
    op = "kda_packed_decode"
    for what, t, dt in (("mixed_qkv", mixed_qkv, "bfloat16"), ("a", a, "bfloat16"),
                        ("b", b, "bfloat16"), ("A_log", A_log, "float32"),
                        ("dt_bias", dt_bias, "float32"), ("indices", indices, "int32")):
        L.check_dtype(op, what, t, (dt,))
    slots, hv, slot_u = _check_state(op, state)
    h = _check_heads(op, hv, num_q_heads)
    k = v = HEAD_DIM
    bsz, _ = L.check_shape(op, "mixed_qkv", mixed_qkv, (None, 2 * h * k + hv * v))
    L.check_shape(op, "a", a, (bsz, hv * k))
    L.check_shape(op, "b", b, (bsz, hv))
    L.check_shape(op, "A_log", A_log, (hv,))
    L.check_shape(op, "dt_bias", dt_bias, (hv * k,))
    L.check_shape(op, "indices", indices, (bsz,))
    for what, t in (("mixed_qkv", mixed_qkv), ("a", a), ("b", b)):
        L.check_inner_contiguous(op, what, t)
    for what, t in (("A_log", A_log), ("dt_bias", dt_bias), ("indices", indices)):
        L.check_contiguous(op, what, t)
    qkv_s0 = _row_stride(op, "mixed_qkv", mixed_qkv, bsz)
    a_s0 = _row_stride(op, "a", a, bsz)
    b_s0 = _row_stride(op, "b", b, bsz, unit=1)
    scale = HEAD_DIM ** -0.5 if scale is None else _check_float(op, "scale", scale)
    use_lb, lb = _lower_bound_args(op, lower_bound)
    if out is not None:
        _check_out(op, out, (bsz, hv, v), mixed_qkv)
    tensors = [("mixed_qkv", mixed_qkv), ("a", a), ("b", b), ("A_log", A_log),
               ("dt_bias", dt_bias), ("state", state), ("indices", indices)]
    if out is not None:
        tensors.append(("out", out))
    for what, t in tensors:
        if what in ("mixed_qkv", "a", "dt_bias", "state", "out"):
            L.check_aligned(op, what, t)
    L.check_same_device(op, *tensors)
    name, constexprs, num_warps = packed_launch_config(use_lb, settings)
    programs = bsz * hv * (v // constexprs["ROWS"])
    L.check_int32_extent(op, "the programs B * HV * V / ROWS", programs)
    out = _check_out(op, out, (bsz, hv, v), mixed_qkv)
    if bsz == 0:
        return out
    L.launch(kda_packed_decode_kernel, name, (programs,),
             (mixed_qkv, a, b, A_log, dt_bias, state, indices, out, hv, h, slots, qkv_s0, a_s0,
              b_s0, slot_u, float(scale), lb), constexprs, num_warps)
    return out


class PreConvArgs(NamedTuple):
    """What ``check_pre_conv`` found: the pool's slots, HV, H, the slot pitch (16-byte units),
    N, T, the norm, the row strides (16-byte units; b's in elements), the conv state's
    strides (16-byte units), scale, eps, the gate, and the checked tensors by name."""

    slots: int
    hv: int
    h: int
    slot_u: int
    n: int
    t_rows: int
    norm: bool
    qkv_s0: int
    a_s0: int
    b_s0: int
    g_s0: int
    conv_slot_u: int
    conv_row_u: int
    scale: float
    eps: float
    use_lb: bool
    lb: float
    tensors: list


def check_pre_conv(op: str, mixed_qkv: Any, a: Any, b: Any, A_log: Any, dt_bias: Any,
                   conv_state: Any, conv_weight: Any, state: Any, indices: Any,
                   num_q_heads: Any, g_out: Any, w_norm: Any, eps: Any, scale: Any,
                   lower_bound: Any, out: Any, steps: Optional[int] = None) -> PreConvArgs:
    """The checks of the pre-conv kernels' common arguments (kda_fused_decode and
    kda_verify_chain; their tensors' placement by ``check_placement``): T = N ``steps``
    rows, or any T where None."""
    for what, t, dt in (("mixed_qkv", mixed_qkv, "bfloat16"), ("a", a, "bfloat16"),
                        ("b", b, "bfloat16"), ("A_log", A_log, "float32"),
                        ("dt_bias", dt_bias, "float32"), ("conv_state", conv_state, "bfloat16"),
                        ("conv_weight", conv_weight, "bfloat16"),
                        ("ssm_state_indices", indices, "int32")):
        L.check_dtype(op, what, t, (dt,))
    slots, hv, slot_u = _check_state(op, state)
    h = _check_heads(op, hv, num_q_heads)
    k = v = HEAD_DIM
    dim = 2 * h * k + hv * v
    (n,) = L.check_shape(op, "ssm_state_indices", indices, (None,))
    t_rows, _ = L.check_shape(op, "mixed_qkv", mixed_qkv,
                              (None if steps is None else n * steps, dim))
    L.check_shape(op, "a", a, (t_rows, hv * k))
    L.check_shape(op, "b", b, (t_rows, hv))
    L.check_shape(op, "A_log", A_log, (hv,))
    L.check_shape(op, "dt_bias", dt_bias, (hv * k,))
    L.check_shape(op, "conv_state", conv_state, (slots, CONV_WIDTH - 1, dim))
    L.check_shape(op, "conv_weight", conv_weight, (dim, CONV_WIDTH))
    if (g_out is None) != (w_norm is None):
        raise ValueError(f"{op}: the gated RMSNorm needs both g_out and w_norm (or neither)")
    norm = g_out is not None
    if norm:
        L.check_dtype(op, "g_out", g_out, ("bfloat16",))
        L.check_dtype(op, "w_norm", w_norm, ("bfloat16",))
        L.check_shape(op, "g_out", g_out, (t_rows, hv * v))
        L.check_shape(op, "w_norm", w_norm, (v,))
        L.check_inner_contiguous(op, "g_out", g_out)
        L.check_contiguous(op, "w_norm", w_norm)
    for what, t in (("mixed_qkv", mixed_qkv), ("a", a), ("b", b), ("conv_state", conv_state)):
        L.check_inner_contiguous(op, what, t)
    for what, t in (("A_log", A_log), ("dt_bias", dt_bias), ("conv_weight", conv_weight),
                    ("ssm_state_indices", indices)):
        L.check_contiguous(op, what, t)
    qkv_s0 = _row_stride(op, "mixed_qkv", mixed_qkv, t_rows)
    a_s0 = _row_stride(op, "a", a, t_rows)
    b_s0 = _row_stride(op, "b", b, t_rows, unit=1)
    g_s0 = _row_stride(op, "g_out", g_out, t_rows) if norm else 0
    cst = L.strides(conv_state)
    conv_row, conv_slot = cst[1], (cst[0] if slots > 1 else 0)
    for what, st in (("row", conv_row), ("slot", conv_slot)):
        if st % 8:
            raise ValueError(f"{op}: the {what} stride of conv_state ({st}) must be a "
                             f"multiple of 8 elements (16 bytes)")
        L.check_int32_extent(op, f"the {what} stride of conv_state", st)
    scale = HEAD_DIM ** -0.5 if scale is None else _check_float(op, "scale", scale)
    eps = _check_float(op, "eps", eps)
    use_lb, lb = _lower_bound_args(op, lower_bound)
    if out is not None:
        _check_out(op, out, (t_rows, hv, v), mixed_qkv)
    tensors = [("mixed_qkv", mixed_qkv), ("a", a), ("b", b), ("A_log", A_log),
               ("dt_bias", dt_bias), ("conv_state", conv_state), ("conv_weight", conv_weight),
               ("state", state), ("ssm_state_indices", indices), ("g_out", g_out),
               ("w_norm", w_norm), ("out", out)]
    return PreConvArgs(slots, hv, h, slot_u, n, t_rows, norm, qkv_s0, a_s0, b_s0, g_s0,
                       conv_slot // 8, conv_row // 8, scale, eps, use_lb, lb, tensors)


#: The pre-conv kernels' tensors that their vector accesses need 16-byte aligned.
PRE_CONV_ALIGNED = ("mixed_qkv", "a", "g_out", "dt_bias", "conv_weight", "conv_state", "state",
                    "w_norm", "out")


def check_placement(op: str, tensors: list, aligned: tuple) -> None:
    """The given (name, tensor or None) on one device, those named in PRE_CONV_ALIGNED or
    ``aligned`` 16-byte aligned."""
    tensors = [(w, t) for w, t in tensors if t is not None]
    for what, t in tensors:
        if what in PRE_CONV_ALIGNED or what in aligned:
            L.check_aligned(op, what, t)
    L.check_same_device(op, *tensors)


def kda_fused_decode(mixed_qkv: Any, a: Any, b: Any, A_log: Any, dt_bias: Any,
                     conv_state: Any, conv_weight: Any, state: Any, ssm_state_indices: Any,
                     num_q_heads: int, cu_seqlens: Optional[Any] = None,
                     g_out: Optional[Any] = None, w_norm: Optional[Any] = None,
                     eps: float = 1e-5, scale: Optional[float] = None,
                     lower_bound: Optional[float] = None, out: Optional[Any] = None, *,
                     settings: Settings = SETTINGS) -> Any:
    """Conv update + gate + recurrence (+ gated RMSNorm) of every sequence's tokens (module
    docstring): mixed_qkv bf16 [T, 2 H K + HV V] (the pre-conv q | k | v), a bf16 [T, HV K],
    b bf16 [T, HV], g_out bf16 [T, HV V] (row-strided slices of the projection output, last
    dims contiguous), A_log fp32 [HV], dt_bias fp32 [HV K], conv_state bf16 [slots, 3,
    2 H K + HV V] (the last three inputs, oldest first; updated in place), conv_weight bf16
    [2 H K + HV V, 4] (contiguous; tap 3 multiplies the token), state fp32 [slots, HV, 128,
    128] (as kda_packed_decode), ssm_state_indices int32 [N] (the slot of both states; < 0
    or >= slots: padded), cu_seqlens int32 [N + 1] (sequence n is the rows cu[n] ..
    cu[n + 1] - 1) or None (T == N, one token a sequence: the static layout of CUDA graphs),
    num_q_heads H with HV / H in {1, 2, 4}; with g_out and w_norm bf16 [128] the output is
    normalized, ``o * rsqrt(mean(o^2) + eps) * w_norm * sigmoid(g_out)``. Returns out bf16
    [T, HV, 128] (allocated when None; contiguous; rows of no sequence are not written).
    Every check raises before any launch; N = 0 or T = 0 launches nothing."""
    op = "kda_fused_decode"
    c = check_pre_conv(op, mixed_qkv, a, b, A_log, dt_bias, conv_state, conv_weight, state,
                       ssm_state_indices, num_q_heads, g_out, w_norm, eps, scale, lower_bound,
                       out)
    hv, h, n, t_rows, v = c.hv, c.h, c.n, c.t_rows, HEAD_DIM
    group = hv // h
    if group not in GROUPS:
        raise ValueError(f"{op}: HV / num_q_heads = {group} must be one of {GROUPS} (the "
                         f"value heads of one q/k head run as one thread-block cluster)")
    if cu_seqlens is None:
        if t_rows != n:
            raise ValueError(f"{op}: without cu_seqlens every sequence has one token: T = "
                             f"{t_rows} rows for N = {n} sequences")
    else:
        L.check_dtype(op, "cu_seqlens", cu_seqlens, ("int32",))
        L.check_shape(op, "cu_seqlens", cu_seqlens, (n + 1,))
        L.check_contiguous(op, "cu_seqlens", cu_seqlens)
    check_placement(op, c.tensors + [("cu_seqlens", cu_seqlens)], ())
    L.check_int32_extent(op, "the programs N * HV", n * hv)
    L.check_int32_extent(op, "the output rows T * HV", t_rows * hv)
    norm = c.norm
    name, constexprs, num_warps, cluster = fused_launch_config(group, c.use_lb, norm,
                                                               cu_seqlens is not None, settings)
    out = _check_out(op, out, (t_rows, hv, v), mixed_qkv)
    if n == 0 or t_rows == 0:
        return out
    if c.slots == 0:  # a padded request's program reads slot 0 (never writes it)
        raise ValueError(f"{op}: state must have at least one slot, got shape "
                         f"{list(L.shape(state))}")
    # unused pointers (no norm, no cu_seqlens) take a tensor of their type: never read
    L.launch(kda_fused_decode_kernel, name, (n * hv,),
             (mixed_qkv, a, b, g_out if norm else mixed_qkv, A_log, dt_bias, conv_weight,
              conv_state, state, ssm_state_indices,
              ssm_state_indices if cu_seqlens is None else cu_seqlens,
              w_norm if norm else mixed_qkv, out, t_rows, hv, h, c.slots,
              0 if cu_seqlens is None else 1, c.qkv_s0, c.a_s0, c.b_s0, c.g_s0, c.conv_slot_u,
              c.conv_row_u, c.slot_u, float(c.scale), c.lb, c.eps), constexprs, num_warps,
             cluster=cluster)
    return out
