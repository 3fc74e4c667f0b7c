"""MoE router epilogue ``moe_fused_gate``, sigmoid scoring (Kimi K3).

For each row m of ``scores`` fp32 [M, E] with ``bias`` fp32 [E] (e_score_correction_bias):

    a[e] = sigmoid(s[m, e])                      the routing weight candidate (bias-free)
    b[e] = a[e] + bias[e];  NaN -> -1e30         the ranking score
    ids  = the K experts with the largest b, ties to the lowest expert id
    w    = a[ids]
    routed_sum = sum(w)                          (fp32)
    shared slots j < n_shared:  ids = E + j,  w = routed_sum / rsf
    if renormalize and routed_sum > 0:  every weight (shared slots too) /= routed_sum
    if apply_routed_scaling_factor_on_output:  every weight *= rsf

Output: weights fp32 [M, K + n_shared], ids int32 [M, K + n_shared]. **Order**: the K routed
experts come first, sorted by b descending, ties by ascending expert id (exactly the order of a
stable descending sort of b, ``argsort(-b, stable=True)[:K]``), then the n_shared fused shared
experts E, E + 1, ... (their weight: the SGLang kernel's ``output_sum / routed_scaling_factor``,
renormalized and scaled with the routed ones, so with both options on it is exactly 1).
``topk`` counts the routed experts only (SGLang's ``topk`` includes the shared slots).

**Sigmoid.** ``FAST_SIGMOID=False`` (the wrapper's default): ``1 / (1 + expf(-x))`` with
libdevice's expf and an IEEE reciprocal, the arithmetic of torch's CUDA sigmoid, so the ids equal
a torch reference (``torch.sigmoid``) exactly. ``FAST_SIGMOID=True``: the original router's
``__fdividef(1, 1 + __expf(-x))`` (``mul.rn`` by -log2(e), ``ex2.approx.f32``, ``add``,
``rcp.approx.f32``), which agrees with the Triton/CUDA routers bit for bit but differs from
torch by a few ulp, so near-ties (b within ~1e-7) may rank differently from a torch reference.

**Keys.** Experts are ranked by the order-preserving key of b (``sigmoid_and_key``: key = ~bits
for a negative float, bits | 0x80000000 otherwise; larger float <=> larger key; -0.0 cannot
occur; padded lanes get key 0, below every float's key). One program per row, the row as an
[R, C] tile (C = 32 lanes per tile row, expert e = r * C + c). Two kernels, by row count
(``select_launch``):

- ``moe_fused_gate_rank_kernel`` (below ``Settings.batch_m`` rows, on 4 warps): the K-th
  largest of 64 group maxima is a threshold that keeps every winner; the keys above it (at
  most ``rank_cap``, else the radix select below decides) are compacted and ranked exactly as
  (key, ~id) 64-bit keys; no rounds.
- ``moe_fused_gate_kernel`` (from ``batch_m`` rows, on one warp): the radix select. A
  threshold T with count(key >= T) >= K is built most significant bits first, ``SELECT_BITS``
  (1 or 4) a round, stopping as soon as count(key >= T) == K; the winners are the keys above T
  plus the first K - count(key > T) equal to T in id order, located per output slot from 32-bit
  lane masks and prefix popcounts, then re-keyed from their scores and sorted in a [K, K] tile.

Both wait for the previous kernel (PDL) before their first load: they may start while the
router GEMM that writes ``scores`` is finishing. The bundle holds them for K3's router (E =
896, top-16) and, for every other E, topk, score stride and address,
``moe_fused_gate_generic_kernel``: the radix select with E and topk at run time (the wrapper's
generic launch; same ids and weight bits).

Specification: docs/kernels/moe_routing.md
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import numpy as np

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

#: the key of -1e30: the key of a NaN score
NAN_KEY = int(~np.array([-1e30], np.float32).view(np.uint32)[0] & np.uint32(0xFFFFFFFF))
MAX_TOPK = 32
MAX_EXPERTS = 4096


@kiln.jit
def popcount32(x):
    """Number of set bits of each uint32 element (SWAR; int32 result)."""
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F
    return ((x * 0x01010101) >> 24).to(kl.int32)


@kiln.jit
def nth_set_bit(m, n, C: kl.constexpr, OPAQUE_START: kl.constexpr = False):
    """Position (int32) of the n-th (0-based) set bit of each uint32 mask m < 2**C; n must be
    below popcount(m). The largest p with popcount(m & (2**p - 1)) <= n, by binary search.
    OPAQUE_START: the search starts from min(n, 0) (0: n >= 0) instead of 0, which LLVM
    cannot fold: with the first step's mask a constant 0xFFFF, InstCombine narrows the SWAR
    constants and the popcount is no longer recognized as one POPC (sm_90a: 9 more
    instructions a mask)."""
    pos = kl.minimum(n, 0) if OPAQUE_START else n * 0
    for k in kl.static_range(int(math.log2(C))):
        step: kl.constexpr = C // (2 << k)
        cand = pos + step
        low = popcount32(m & ((kl.cast(1, kl.uint32) << cand.to(kl.uint32)) - 1))
        pos = kl.where(low <= n, cand, pos)
    return pos


@kiln.jit
def sigmoid_and_key(s, bias, FAST_SIGMOID: kl.constexpr):
    """(a, key): a = sigmoid(s), key = biased_to_key(nan_floor(a + bias)) (uint32)."""
    a = kl.sigmoid(s, precise=not FAST_SIGMOID)
    # the key is defined on b with -0.0 canonicalized to +0.0; here that is implied: a is +0.0
    # or above (or NaN), never -0.0, and a sum is -0.0 only when both terms are
    b = a + bias
    bits = b.to(kl.int32, bitcast=True)
    # ~bits for a negative b (sign set), bits | 0x80000000 otherwise: one xor with the
    # sign-extended sign bit, or'ed with the top bit
    key = (bits ^ ((bits >> 31) | -0x80000000)).to(kl.uint32, bitcast=True)
    key = kl.where(b != b, NAN_KEY, key)  # NaN -> key(-1e30)
    return a, key


@kiln.jit
def _add2(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@kiln.jit
def _add3(a0, b0, c0, a1, b1, c1):
    return a0 + a1, b0 + b1, c0 + c1


@kiln.jit
def _add8(a0, b0, c0, d0, e0, f0, g0, h0, a1, b1, c1, d1, e1, f1, g1, h1):
    return a0 + a1, b0 + b1, c0 + c1, d0 + d1, e0 + e1, f0 + f1, g0 + g1, h0 + h1


@kiln.jit
def _ge_bits(q, K: kl.constexpr):
    """Bit 0 of each 16-bit field of the uint32 q (both below 0x8000): field >= K."""
    return ((q + (0x8000 - K) * 0x10001) >> 15) & 0x10001


@kiln.jit
def _count_ge(q0, q1, q2, q3, q4, q5, q6, q7, K: kl.constexpr):
    """How many of the 16-bit fields of the uint32 q0 .. q7 (each below 0x8000) are >= K
    (uint32): bit 15 of each field plus (0x8000 - K), summed as 16-bit fields, the two
    fields then added by a multiply."""
    m = (_ge_bits(q0, K) + _ge_bits(q1, K)) + (_ge_bits(q2, K) + _ge_bits(q3, K)) + \
        ((_ge_bits(q4, K) + _ge_bits(q5, K)) + (_ge_bits(q6, K) + _ge_bits(q7, K)))
    return (m * 0x10001) >> 16


@kiln.jit
def kth_key(key, K, BITS: kl.constexpr, R: kl.constexpr, C: kl.constexpr):
    """The radix select's threshold thr (uint32) over the [R, C] keys, BITS (1 or 4) bits a
    round: count(key >= thr) >= K, the keys >= thr exactly the K winners unless ties at the
    K-th key (then thr is that key). K: a constexpr, or with BITS = 1 a runtime value."""
    # Invariant: n_ge = count(key >= thr) >= K. Once n_ge == K the K winners are exactly the
    # keys >= thr and the remaining rounds are skipped (a uniform branch); with ties at the
    # K-th key all 32 rounds run and thr ends as that key.
    top = kl.cast(0x80000000, kl.uint32)
    thr = kl.cast(0, kl.uint32)
    n_ge = R * C
    if BITS == 4:
        # four bits a round: the counts of the 15 candidates thr | d << (28 - 4i), d = 1..15,
        # n_d = count(key >= thr | d << sh), non-increasing in d; the largest d with
        # n_d >= K is the number of d with n_d >= K. A key's digit against thr is
        # g = min((max(key, thr) - thr) >> sh, 15) (thr's bits below sh + 4 are zero: a key
        # below thr gives 0, one of a larger prefix 15), key >= thr | d << sh <=> g >= d, so
        # key adds 1 to n_1 .. n_g: the nibbles 0 .. g - 1 of one uint64 (0x0111...1 >> (60 -
        # 4g)). The row, as [R * C / 8, 8] (a reshape, no data moved: 8 neighbouring keys of
        # one or two lanes), sums its nibbles over each run of 8 (<= 8 a nibble, no carry),
        # then each run's 16 nibbles are widened into 16-bit fields of eight int32 (2 each;
        # every n_d <= E < 0x8000) summed in ONE eight-operand reduction
        JR: kl.constexpr = min(8, R * C)
        key8 = key.reshape(R * C // JR, JR)
        ones = kl.cast(0x0111111111111111, kl.uint64)
        done = n_ge == K
        for i in range(8):
            if not done:
                sh = (28 - 4 * i).to(kl.uint32)
                g = kl.minimum((kl.maximum(key8, thr) - thr) >> sh, 15)
                therm = ones >> (60 - 4 * g).to(kl.uint64)
                nib = kl.sum(therm, axis=1)  # [R * C / 8] uint64: 15 nibbles <= 8
                # nibble 8h + 4j + k -> field j (16 bits) of word 4h + k, int32 words (the
                # order of the 15 counts, and of the 16th, always 0, does not matter below)
                lo = nib.to(kl.uint32)
                hi = (nib >> 32).to(kl.uint32)
                q0, q1, q2, q3, q4, q5, q6, q7 = kl.reduce(
                    (lo & 0xF000F, (lo >> 4) & 0xF000F, (lo >> 8) & 0xF000F,
                     (lo >> 12) & 0xF000F, hi & 0xF000F, (hi >> 4) & 0xF000F,
                     (hi >> 8) & 0xF000F, (hi >> 12) & 0xF000F), 0, _add8)
                # n_d >= K <=> bit 15 of n_d + 0x8000 - K (n_d <= E < 0x8000, no carry out
                # of the field); the largest d with n_d >= K is the number of such fields,
                # and n_d == K for some d <=> fewer fields are >= K + 1
                nd = _count_ge(q0, q1, q2, q3, q4, q5, q6, q7, K)
                thr = thr | (nd << sh)
                done = done | (_count_ge(q0, q1, q2, q3, q4, q5, q6, q7, K + 1) < nd)
    else:
        for i in range(32):
            if n_ge != K:
                cand = thr | (top >> i.to(kl.uint32))
                cnt = kl.sum((key >= cand).to(kl.int32))
                take = cnt >= K
                thr = kl.where(take, cand, thr)
                n_ge = kl.where(take, cnt, n_ge)
    return thr


@kiln.jit
def renorm_and_scale(w, slot_ok, rsf, renorm, apply_rsf):
    """Step 5's terms: (routed_sum, denom, scale) of the routed weights ``w`` in slot order
    (the sum over the valid slots, in that order)."""
    routed_sum = kl.sum(kl.where(slot_ok, w, 0.0))
    denom = kl.where((renorm != 0) & (routed_sum > 0.0), routed_sum, 1.0)
    return routed_sum, denom, kl.where(apply_rsf != 0, rsf, 1.0)


@kiln.jit
def store_shared_slots(w_ptr, ids_ptr, out, shared_w, n_shared, K, E):
    """The n_shared fused shared experts E, E + 1, ... after the K routed slots."""
    for j in range(n_shared):
        kl.store(w_ptr + out + K + j, shared_w)
        kl.store(ids_ptr + out + K + j, E + j)


@kiln.jit
def slot_experts(j, ok, ainc, einc, acnt, ecnt, amask, emask, R: kl.constexpr,
                 C: kl.constexpr):
    """The expert of each slot j (0 where not ``ok``), the R "above" tile rows then the R
    "equal" ones as one sequence: slot j takes its sequence's j-th set bit.
    ``acnt`` / ``ecnt`` are the rows' popcounts, ``ainc`` / ``einc`` their inclusive prefix
    sums over the sequence, ``amask`` / ``emask`` the rows' lane masks ([R] each)."""
    jb = j[:, None]
    a_inc, e_inc = ainc[None, :], einc[None, :]  # [len(j), R]
    a_cnt, e_cnt = acnt[None, :], ecnt[None, :]
    a_done = a_inc <= jb  # the row's set bits all come before slot j
    e_done = e_inc <= jb
    a_hit = (a_inc - a_cnt <= jb) & (jb < a_inc)  # slot j's bit is in the row
    e_hit = (e_inc - e_cnt <= jb) & (jb < e_inc)
    seq_row, before, m = kl.reduce(
        (a_done.to(kl.int32) + e_done.to(kl.int32),
         kl.where(a_done, a_cnt, 0) + kl.where(e_done, e_cnt, 0),
         kl.where(a_hit, amask[None, :], 0) + kl.where(e_hit, emask[None, :], 0)), 1, _add3)
    col = nth_set_bit(m, j - before, C)
    return kl.where(ok, (seq_row & (R - 1)) * C + col, 0)


@kiln.jit
def row_keys(scores_ptr, bias_ptr, row, stride_s, E, R: kl.constexpr, C: kl.constexpr,
             FAST_SIGMOID: kl.constexpr):
    """Step 1 of the kernels: row ``row``'s keys as an [R, C] tile of its E experts (expert
    e = r * C + c; padded lanes key 0, below every float's key) and the tile's (rr, cc, lane,
    valid). Waits for the previous kernel (PDL) before its loads and lets the next one
    launch."""
    rr = kl.arange(0, R)
    cc = kl.arange(0, C)
    lane = rr[:, None] * C + cc[None, :]
    valid = lane < E
    kl.pdl_wait()  # scores come from the router GEMM
    s = kl.load(scores_ptr + row * stride_s + lane, mask=valid, other=0.0)
    bias = kl.load(bias_ptr + lane, mask=valid, other=0.0)
    kl.pdl_launch_dependents()
    _, key = sigmoid_and_key(s, bias, FAST_SIGMOID)
    return rr, cc, lane, valid, kl.where(valid, key, 0)


@kiln.jit
def _radix_select_row(scores_ptr, bias_ptr, w_ptr, ids_ptr, stride_s, stride_o, n_shared, rsf,
                      renorm, apply_rsf, E, K, FAST_SIGMOID: kl.constexpr, BITS: kl.constexpr,
                      R: kl.constexpr, C: kl.constexpr, KP: kl.constexpr):
    """The radix select (module docstring) of row program_id(0): its E experts as an [R, C]
    tile, its K winners in [KP] tiles. E and K: constexprs (``moe_fused_gate_kernel``), or
    runtime values that the tiles bound (``moe_fused_gate_generic_kernel``, BITS = 1)."""
    row = kl.program_id(0)
    rr, cc, lane, valid, key = row_keys(scores_ptr, bias_ptr, row, stride_s, E, R, C,
                                        FAST_SIGMOID)

    # -- 2. the K-th largest key, bit by bit ------------------------------------------------
    thr = kth_key(key, K, BITS, R, C)

    # -- 3. locate each output slot's expert ------------------------------------------------
    above = key > thr
    equal = key == thr
    cbit = kl.cast(1, kl.uint32) << cc.to(kl.uint32)
    jj = kl.arange(0, KP)
    slot_ok = jj < K
    # one sequence of 2R tile rows, the R "above" rows then the R "equal" ones: slot j takes
    # its j-th set bit (the first A slots the "above" experts, the rest the first "equal"
    # ones), three multi-operand reductions in all
    amask, emask = kl.reduce((kl.where(above, cbit[None, :], 0),
                              kl.where(equal, cbit[None, :], 0)), 1, _add2)  # [R] uint32
    acnt = popcount32(amask)
    ecnt = popcount32(emask)
    # inclusive prefix counts over the sequence (an "equal" row also counts every "above"
    # one): scans of the [R] counts, no [R, R] tile
    ainc = kl.cumsum(acnt, 0)
    einc = kl.cumsum(ecnt, 0) + kl.sum(acnt)
    expert = slot_experts(jj, slot_ok, ainc, einc, acnt, ecnt, amask, emask, R, C)

    # -- 4. recompute the winners' keys and sort them ---------------------------------------
    s_k = kl.load(scores_ptr + row * stride_s + expert, mask=slot_ok, other=0.0)
    b_k = kl.load(bias_ptr + expert, mask=slot_ok, other=0.0)
    a_k, key_k = sigmoid_and_key(s_k, b_k, FAST_SIGMOID)
    # (key descending, id ascending) as one 64-bit key: key above, ~id below
    sk = (key_k.to(kl.uint64) << 32) | (~expert.to(kl.uint32)).to(kl.uint64)
    first = slot_ok[:, None] & (sk[:, None] > sk[None, :])
    rank = kl.sum(first.to(kl.int32), axis=0)  # [KP]: winners ahead of winner j
    place = (rank[None, :] == jj[:, None]) & slot_ok[None, :]  # [slot, winner]
    ids, w = kl.reduce((kl.where(place, expert[None, :], 0),
                        kl.where(place, a_k[None, :], 0.0)), 1, _add2)

    # -- 5. shared slots, renormalize, scale -------------------------------------------------
    routed_sum, denom, scale = renorm_and_scale(w, slot_ok, rsf, renorm, apply_rsf)
    w = w / denom * scale
    out = row * stride_o
    kl.store(w_ptr + out + jj, w, mask=slot_ok)
    kl.store(ids_ptr + out + jj, ids, mask=slot_ok)
    store_shared_slots(w_ptr, ids_ptr, out, routed_sum / rsf / denom * scale, n_shared, K, E)


@kiln.jit(num_warps=1, do_not_specialize=["M", "stride_o", "n_shared", "renorm", "apply_rsf"])
def moe_fused_gate_kernel(scores_ptr, bias_ptr, w_ptr, ids_ptr, M, stride_s, stride_o, n_shared,
                          rsf, renorm, apply_rsf, E: kl.constexpr, K: kl.constexpr,
                          FAST_SIGMOID: kl.constexpr, SELECT_BITS: kl.constexpr = 1):
    """The radix select (module docstring), SELECT_BITS (1 or 4) bits of the threshold a
    round."""
    BITS: kl.constexpr = SELECT_BITS
    kl.static_assert(BITS == 1 or BITS == 4, "SELECT_BITS must be 1 or 4")
    C: kl.constexpr = min(32, 1 << math.ceil(math.log2(E)))
    R: kl.constexpr = 1 << math.ceil(math.log2((E + C - 1) // C))
    KP: kl.constexpr = 1 << math.ceil(math.log2(K))
    kl.static_assert(K <= E, "topk must not exceed the number of experts")
    _radix_select_row(scores_ptr, bias_ptr, w_ptr, ids_ptr, stride_s, stride_o, n_shared, rsf,
                      renorm, apply_rsf, E, K, FAST_SIGMOID, BITS, R, C, KP)


@kiln.jit(num_warps=1, do_not_specialize=["M", "stride_o", "n_shared", "renorm", "apply_rsf",
                                          "n_experts", "topk"])
def moe_fused_gate_generic_kernel(scores_ptr, bias_ptr, w_ptr, ids_ptr, M, stride_s, stride_o,
                                  n_shared, rsf, renorm, apply_rsf, n_experts, topk,
                                  E_TILE: kl.constexpr, FAST_SIGMOID: kl.constexpr):
    """``moe_fused_gate_kernel`` (one bit a round) for any n_experts <= E_TILE (a power of two)
    and topk <= 32, runtime values: the row as an [E_TILE / 32, 32] tile (masked to
    n_experts), the winners in [32] tiles (masked to topk)."""
    C: kl.constexpr = min(32, E_TILE)
    _radix_select_row(scores_ptr, bias_ptr, w_ptr, ids_ptr, stride_s, stride_o, n_shared, rsf,
                      renorm, apply_rsf, n_experts, topk, FAST_SIGMOID, 1, E_TILE // C, C,
                      MAX_TOPK)


@kiln.jit
def first_set_bits(m, n, C: kl.constexpr):
    """The lowest n set bits of each uint32 mask m < 2**C (int32 n >= 0; all of m when n
    >= popcount(m)): the bits below its n-th set bit."""
    pc = popcount32(m)
    pos = nth_set_bit(m, kl.minimum(n, kl.maximum(pc - 1, 0)), C, True)
    low = m & ((kl.cast(1, kl.uint32) << pos.to(kl.uint32)) - 1)
    return kl.where(n >= pc, m, low)


@kiln.jit
def _rank_select_rows(key, srow_ptr, bias_ptr, ids_row_ptr, K: kl.constexpr,
                      FAST_SIGMOID: kl.constexpr, SELECT_BITS: kl.constexpr, G: kl.constexpr,
                      CAP: kl.constexpr, R: kl.constexpr, C: kl.constexpr):
    """Steps 2-4 of ``moe_fused_gate_rank_kernel``: every count and compaction result is
    kept on the tile it is used on (a reduction broadcast back along its axis is warp
    shuffles only, no shared memory). Stores the K winners' ids (ids_row_ptr[slot]); returns
    (w, a, slot, first): the winners' weights in slot order ([KP], zero past K, for the sum
    in the radix kernel's order), and on [CP, CP] tiles each candidate's weight, slot and
    where a winner's weight goes (first: the winners' column 0).

    Threshold: the [G, G] compare as a [G/2, 2G] tile whose row i holds the maxima of
    groups 2i and 2i + 1 (each against all G maxima): a row spans the 32 lanes of one warp
    at G = 64, so the two counts, as 16-bit fields of one int32, are one redux.sync; t0 is
    one all-reduce max (redux.sync and one exchange) of the maxima whose count is >= K.

    Compaction with one class: a row past CAP candidates takes the radix rounds and keeps
    the keys above the threshold plus the first ones equal to it (their number per tile row
    from the prefix of the equal counts, in the [R] layout), so the fast path compacts
    only the candidates ("above" and no "equal" rows). The [CP, R] slot x tile-row tile
    keeps its results (tile row and earlier candidates, packed; the row's mask) broadcast
    along the rows: slot i is row i of a [CP, CP] tile, where the expert is found and its
    score reloaded, and candidate j is column j after one transpose of the 64-bit (key, ~id)
    sort keys. The rank (broadcast along the row again) is the candidate's slot: its id
    and weight are stored from there, and one reduction over the candidates (axis 0) gives
    the weights by slot for the sum."""
    KP: kl.constexpr = 1 << math.ceil(math.log2(K))
    CP: kl.constexpr = max(CAP, KP)
    P: kl.constexpr = 2 if G >= 2 else 1
    cc = kl.arange(0, C)
    # -- 2. t0 = the K-th largest group maximum --------------------------------------------
    mg = kl.max(key.reshape(G, R * C // G), axis=1)  # [G]
    # mi[i, b, j] = max of group P i + b (one broadcast through shared memory), mj = max of
    # group j (the [G] layout's registers)
    mi = mg.reshape(G // P, P)[:, :, None] + kl.zeros((G // P, P, G), kl.uint32)
    mj = mg[None, None, :]
    sh = (kl.arange(0, P) * 16).to(kl.uint32)[None, :, None]
    ge = kl.where(mj >= mi, kl.cast(1, kl.uint32) << sh, 0)  # bit 16 b: max j >= max P i + b
    packed = kl.sum(ge.reshape(G // P, P * G), axis=1)  # [G / P]: counts <= G < 0x10000
    cnt = ((packed[:, None] + kl.zeros((G // P, P * G), kl.uint32)).reshape(G // P, P, G)
           >> sh) & 0xFFFF  # the count of group P i + b, broadcast along the row
    t0 = kl.max(kl.where(cnt >= K, mi, 0))
    cbit = kl.cast(1, kl.uint32) << cc.to(kl.uint32)
    amask = kl.sum(kl.where(key >= t0, cbit[None, :], 0), axis=1)  # [R] uint32: candidates
    # the compaction's prefix counts before the branch: their shuffles overlap the count's
    acnt = popcount32(amask)
    ainc = kl.cumsum(acnt, 0)
    n_valid = kl.sum(acnt)
    if n_valid > CAP:
        # the radix select's threshold thr, the keys above it and, in id order, the first
        # K - count(key > thr) equal to it: one mask, K valid candidates
        thr = kth_key(key, K, SELECT_BITS, R, C)
        amask, emask = kl.reduce((kl.where(key > thr, cbit[None, :], 0),
                                  kl.where(key == thr, cbit[None, :], 0)), 1, _add2)
        ecnt = popcount32(emask)
        take = K - kl.sum(popcount32(amask)) - (kl.cumsum(ecnt, 0) - ecnt)
        amask = amask | first_set_bits(emask, kl.maximum(take, 0), C)
        acnt = popcount32(amask)
        ainc = kl.cumsum(acnt, 0)
        n_valid = n_valid * 0 + K

    # -- 3. compact: slot i of CP is row i of [CP, R] tiles ---------------------------------
    ii = kl.arange(0, CP)[:, None]
    zi = kl.zeros((CP, R), kl.int32)
    a_inc, a_cnt = ainc[None, :], acnt[None, :]
    # tile rows entirely before slot i: their number (the row of slot i) << 8 | their count
    rb = kl.sum(kl.where(a_inc <= ii, 256 + a_cnt, 0), axis=1)[:, None] + zi
    m = kl.sum(kl.where((a_inc - a_cnt <= ii) & (ii < a_inc), amask[None, :], 0),
               axis=1)[:, None] + zi.to(kl.uint32)
    ok = (ii < n_valid) & (zi == 0)
    expert = kl.where(ok, (rb >> 8) * C + nth_set_bit(m, ii - (rb & 255), C, True), 0)
    if R != CP:  # as rows of [CP, CP] tiles (through shared memory; R == CP at E = 896)
        zc = kl.zeros((CP, CP), kl.int32)
        expert = kl.sum(kl.where(kl.arange(0, R)[None, :] == 0, expert, 0), axis=1)[:, None] + zc
        ok = (ii < n_valid) & (zc == 0)

    # -- 4. the candidates' keys again (row i), ranked against every candidate (column j) ----
    # unmasked: expert is a real expert (0 past n_valid); the same address along a row
    a_k, key_k = sigmoid_and_key(kl.load(srow_ptr + expert), kl.load(bias_ptr + expert),
                                 FAST_SIGMOID)
    sk = (key_k.to(kl.uint64) << 32) | (~expert.to(kl.uint32)).to(kl.uint64)
    jj = kl.arange(0, CP)[None, :]
    ahead = (kl.trans(sk) > sk) & (jj < n_valid)  # candidate j before candidate i
    rank = kl.sum(ahead.to(kl.int32), axis=1)[:, None] + kl.zeros((CP, CP), kl.int32)
    first = ok & (rank < K) & (jj == 0)  # a winner, once
    kl.store(ids_row_ptr + rank, expert, mask=first)
    # [candidate, slot high, slot low] as one axis of candidates and high slots (zero past K)
    place = ok & (rank == jj) & (rank < K)
    w = kl.sum(kl.where(place, a_k, 0.0).reshape(CP * CP // KP, KP), axis=0)
    return w, a_k, rank, first


@kiln.jit(num_warps=4, do_not_specialize=["M", "stride_o", "n_shared", "renorm", "apply_rsf"])
def moe_fused_gate_rank_kernel(scores_ptr, bias_ptr, w_ptr, ids_ptr, M, stride_s, stride_o,
                               n_shared, rsf, renorm, apply_rsf, E: kl.constexpr,
                               K: kl.constexpr, FAST_SIGMOID: kl.constexpr,
                               SELECT_BITS: kl.constexpr = 4, GROUPS: kl.constexpr = 64,
                               CAP: kl.constexpr = 32):
    """The radix kernel's results (same ids, same weight bits) with the radix rounds
    replaced, on every row with at most CAP candidates, by a pre-filter that provably keeps
    every winner and an exact ranking of what it keeps.

    The [R, C] keys as GROUPS groups of consecutive experts; t0 = the K-th largest group
    maximum. At least K groups have their maximum >= t0, so count(key >= t0) >= K, and every
    winner is >= t0: the candidates are the keys >= t0. Up to CAP of them are compacted into
    CAP slots and ranked by (key descending, id ascending) as 64-bit keys; rank < K is the
    output slot. A row with more than CAP candidates (ties, saturated or NaN rows) takes the
    radix rounds instead (a uniform branch; SELECT_BITS as the radix kernel) and keeps the
    keys above the threshold plus the first ones equal to it, its K winners the K valid
    slots (``_rank_select_rows``)."""
    C: kl.constexpr = min(32, 1 << math.ceil(math.log2(E)))
    R: kl.constexpr = 1 << math.ceil(math.log2((E + C - 1) // C))
    KP: kl.constexpr = 1 << math.ceil(math.log2(K))
    G: kl.constexpr = min(GROUPS, R * C)
    kl.static_assert(K <= E, "topk must not exceed the number of experts")
    kl.static_assert(G >= K, "the pre-filter needs at least K groups")
    row = kl.program_id(0)
    rr, cc, lane, valid, key = row_keys(scores_ptr, bias_ptr, row, stride_s, E, R, C,
                                        FAST_SIGMOID)

    jj = kl.arange(0, KP)
    slot_ok = jj < K
    out = row * stride_o
    w, a_k, slot, first = _rank_select_rows(key, scores_ptr + row * stride_s, bias_ptr,
                                            ids_ptr + out, K, FAST_SIGMOID, SELECT_BITS,
                                            G, CAP, R, C)

    # -- 5. shared slots, renormalize, scale (as the radix kernel), each winner's weight
    # stored from its row (the ids are stored) ---------------------------------------------
    routed_sum, denom, scale = renorm_and_scale(w, slot_ok, rsf, renorm, apply_rsf)
    kl.store(w_ptr + out + slot, a_k / denom * scale, mask=first)
    store_shared_slots(w_ptr, ids_ptr, out, routed_sum / rsf / denom * scale, n_shared, K, E)


@dataclasses.dataclass(frozen=True)
class Settings:
    """moe_fused_gate's tuning; measured in bench/results/kimi_k3/moe_routing.md."""

    batch_m: int = 512  # rows from which the batch kernel runs (4 one-warp rows an SM)
    rank_warps: int = 4  # the rank kernel's warps (2 and 8 slower)
    rank_groups: int = 64  # group maxima for its threshold: 18.5 candidates a row, 27 at most
    rank_cap: int = 32  # candidates it ranks; more (ties, NaN rows): the radix rounds
    rank_select_bits: int = 4  # bits a radix round on those rows (8 rounds at most)
    batch_warps: int = 1  # the batch kernel's warps: every count in warp shuffles
    batch_maxnreg: Optional[int] = 80  # 25 one-warp programs an SM instead of 18, no spills
    batch_select_bits: int = 1  # bits a round in the batch kernel (4: more issue, slower)


SETTINGS = Settings()

K3_EXPERTS, K3_TOPK = 896, 16

_SIGNATURE = {"scores_ptr": "*f32", "bias_ptr": "*f32", "w_ptr": "*f32", "ids_ptr": "*i32",
              "M": "i32", "stride_s": "i32", "stride_o": "i32", "n_shared": "i32",
              "rsf": "f32", "renorm": "i32", "apply_rsf": "i32"}
_DIVISIBILITY = ["scores_ptr", "bias_ptr", "w_ptr", "ids_ptr", "stride_s"]


def select_launch(m: int, e: int, topk: int, fast_sigmoid: bool,
                  settings: Settings = SETTINGS) -> tuple:
    """The launch for m rows of e experts, top-k (one program a row): the rank kernel below
    ``settings.batch_m`` rows, the radix (batch) kernel from there; (kernel, bundle name,
    grid, constexprs, num_warps, maxnreg, cluster)."""
    if m < settings.batch_m:
        return (moe_fused_gate_rank_kernel, "moe_fused_gate_rank", (m,),
                {"E": e, "K": topk, "FAST_SIGMOID": fast_sigmoid,
                 "SELECT_BITS": settings.rank_select_bits, "GROUPS": settings.rank_groups,
                 "CAP": settings.rank_cap}, settings.rank_warps, None, None)
    return (moe_fused_gate_kernel, "moe_fused_gate_batch", (m,),
            {"E": e, "K": topk, "FAST_SIGMOID": fast_sigmoid,
             "SELECT_BITS": settings.batch_select_bits}, settings.batch_warps,
            settings.batch_maxnreg, None)


def _spec(m: int, fast: bool) -> Spec:
    kernel, name, _, constexprs, warps, maxnreg, _ = select_launch(m, K3_EXPERTS, K3_TOPK, fast)
    return Spec(kernel, name=name, signature=_SIGNATURE, constexprs=constexprs,
                divisibility=_DIVISIBILITY, num_warps=warps, maxnreg=maxnreg)


#: the generic kernel's row tiles: the smallest that holds E experts serves them
GENERIC_E_TILES = (256, 1024, MAX_EXPERTS)
#: the bundle's kernel for every E, topk, score stride and address the wrapper accepts
GENERIC = "moe_fused_gate_generic"


def generic_config(e: int, fast_sigmoid: bool) -> tuple:
    """(constexprs, num_warps) of the generic kernel's launch for e experts: the smallest tile
    of GENERIC_E_TILES that holds them, 8 keys a thread (E_TILE / 256 warps)."""
    tile = min(t for t in GENERIC_E_TILES if t >= e)
    return {"E_TILE": tile, "FAST_SIGMOID": fast_sigmoid}, max(1, tile // 256)


#: K3's router (896 experts, top-16), both sigmoids, at one row and at batch_m rows; the
#: generic kernel at every tile, both sigmoids
AOT_SPECIALIZATIONS = [_spec(m, fast) for m in (1, SETTINGS.batch_m) for fast in (False, True)] + [
    Spec(moe_fused_gate_generic_kernel, name=GENERIC,
         signature=dict(_SIGNATURE, n_experts="i32", topk="i32"),
         constexprs=generic_config(tile, fast)[0], num_warps=generic_config(tile, fast)[1])
    for tile in GENERIC_E_TILES for fast in (False, True)]


def moe_fused_gate(scores: Any, bias: Any, topk: int, renormalize: bool = True,
                   routed_scaling_factor: float = 1.0,
                   apply_routed_scaling_factor_on_output: bool = False,
                   num_fused_shared_experts: int = 0, fast_sigmoid: bool = False,
                   out_weights: Optional[Any] = None, out_ids: Optional[Any] = None, *,
                   settings: Settings = SETTINGS) -> tuple:
    """Router epilogue (sigmoid scoring) of the module docstring: ``scores`` fp32 [M, E] (last
    dimension contiguous), ``bias`` fp32 [E] (contiguous), ``topk`` routed experts (1..32,
    <= E). Returns (weights fp32 [M, K'], ids int32 [M, K']), K' = topk +
    num_fused_shared_experts, contiguous, allocated when None: the routed experts sorted by
    biased score descending (ties: lowest id first), then the shared slots. Every check raises
    before any launch; M == 0 launches nothing."""
    op = "moe_fused_gate"
    L.check_dtype(op, "scores", scores, ("float32",))
    L.check_dtype(op, "bias", bias, ("float32",))
    m, e = L.check_shape(op, "scores", scores, (None, None))
    L.check_shape(op, "bias", bias, (e,))
    for what, v in (("renormalize", renormalize), ("fast_sigmoid", fast_sigmoid),
                    ("apply_routed_scaling_factor_on_output",
                     apply_routed_scaling_factor_on_output)):
        if not isinstance(v, bool):
            raise TypeError(f"{op}: {what} must be a bool, got {v!r}")
    for what, v in (("topk", topk), ("num_fused_shared_experts", num_fused_shared_experts)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{op}: {what} must be an int, got {v!r}")
    if not 1 <= e <= MAX_EXPERTS:
        raise ValueError(f"{op}: the number of experts must be in [1, {MAX_EXPERTS}], got {e}")
    if not 1 <= topk <= min(MAX_TOPK, e):
        raise ValueError(f"{op}: topk must be in [1, min({MAX_TOPK}, E = {e})], got {topk}")
    if num_fused_shared_experts < 0:
        raise ValueError(f"{op}: num_fused_shared_experts must be >= 0, got "
                         f"{num_fused_shared_experts}")
    rsf = float(routed_scaling_factor)
    if not math.isfinite(rsf) or rsf == 0.0:
        raise ValueError(f"{op}: routed_scaling_factor must be finite and nonzero, got "
                         f"{routed_scaling_factor!r}")
    L.check_inner_contiguous(op, "scores", scores)
    L.check_contiguous(op, "bias", bias)
    kout = topk + num_fused_shared_experts
    L.check_same_device(op, ("scores", scores), ("bias", bias))
    stride_s = L.strides(scores)[0] if m > 1 else e
    L.check_int32_extent(op, "the last row's offset in scores", (m - 1) * stride_s + e)
    L.check_int32_extent(op, "M * K'", m * kout)
    outs = {"out_weights": (out_weights, "float32"), "out_ids": (out_ids, "int32")}
    for what, (t, dt) in outs.items():
        if t is not None:
            L.check_dtype(op, what, t, (dt,))
            L.check_shape(op, what, t, (m, kout))
            L.check_contiguous(op, what, t)
            L.check_same_device(op, ("scores", scores), (what, t))
    if out_weights is None or out_ids is None:
        import torch

        dev = scores.device
        if out_weights is None:
            out_weights = torch.empty((m, kout), dtype=torch.float32, device=dev)
        if out_ids is None:
            out_ids = torch.empty((m, kout), dtype=torch.int32, device=dev)
    if m == 0:
        return out_weights, out_ids
    args = (scores, bias, out_weights, out_ids, m, stride_s, kout, num_fused_shared_experts,
            rsf, int(renormalize), int(apply_routed_scaling_factor_on_output))
    kernel, name, grid, constexprs, num_warps, maxnreg, _ = select_launch(
        m, e, topk, fast_sigmoid, settings)
    L.launch(kernel, name, grid, args, constexprs, num_warps, maxnreg,
             generic=L.Launch(moe_fused_gate_generic_kernel, GENERIC, grid, args + (e, topk),
                              *generic_config(e, fast_sigmoid)))
    return out_weights, out_ids
