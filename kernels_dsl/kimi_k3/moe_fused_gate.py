"""MoE router epilogue ``moe_fused_gate``, sigmoid scoring (Kimi K3; KERNELS.md §3.3, §2.2).

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
``rcp.approx.f32``; §2.2 ``sigmoid_match``), which agrees with the Triton/CUDA routers bit for
bit but differs from torch by a few ulp, so near-ties (b within ~1e-7) may rank differently from
a torch reference.

**Selection: radix select** over the order-preserving key of §2.2 (``biased_to_key``: -0.0 is
canonicalized to +0.0, here implied as b is never -0.0; key = ~bits for a negative float,
bits | 0x80000000 otherwise; larger float <=> larger key; padded lanes get key 0, below every
float's key). One program per row:

1. the row is a [R, C] tile (C = 32 lanes per tile row, expert e = r * C + c);
2. a threshold T with count(key >= T) >= K is built bit by bit, most significant first:
   T |= bit if ``count(key >= T | bit) >= K`` (one count reduction per bit). The rounds stop
   (a uniform branch) as soon as count(key >= T) == K; otherwise, after 32 rounds, T is
   exactly the K-th largest key (ties at the K-th key). ``SELECT_BITS = 2`` (E < 1024):
   two bits a round, T |= d << (30 - 2i) for the largest d in {1, 2, 3} with
   ``count(key >= T | d << (30 - 2i)) >= K``, the three counts summed in one reduction as
   10-bit fields of an int32 (each count <= E <= 1023): the same two decisions as two
   one-bit rounds, in up to 16 rounds. When the one-bit rounds would stop after the first
   bit of a pair, the second may still raise T past keys that are not there: the keys
   >= T, hence the winners, are the same. ``SELECT_BITS = 4`` (E < 1024): four bits a
   round, T |= d << (28 - 4i) for the largest d in 1..15 with
   ``count(key >= T | d << (28 - 4i)) >= K``, in up to 8 rounds: a key adds 1 to the counts
   of d = 1 .. g, g = min((max(key, T) - T) >> (28 - 4i), 15), as nibbles of one uint64,
   summed over runs of 8 keys (at most 8 a nibble) and then, widened to 16-bit fields of
   eight int32, over the row in one eight-operand reduction (the same stop rule; any E);
3. the winners are the A = count(key > T) experts above T plus the first K - A experts equal
   to T in id order (all of them when count(key >= T) == K). Per tile row, 32-bit masks of
   the "above" and "equal" lanes and an inclusive prefix of their popcounts locate, for each
   output slot j, its expert: slot j < A takes the j-th "above" expert, slot j >= A the
   (j - A)-th "equal" one (tile row from the prefix counts, column by a 5-step binary search
   for the n-th set bit of the row's mask).
   ``MERGED_REDUCTIONS``: the same, with the R "above" tile rows followed by the R "equal"
   ones as one sequence of 2R rows (slot j takes its j-th set bit, A needs no count of its
   own), the inclusive prefix counts by ``kl.cumsum`` over the [R] counts, and every pair
   or triple of reductions over one tile in one multi-operand ``kl.reduce``;
4. the K winners' keys are recomputed from their scores (same instructions, same bits) and
   ranked by (key descending, id ascending) in a [K, K] tile, which sorts them.

The kernel uses PDL (``pdl_wait`` before the first load): it may start while the router GEMM
that writes ``scores`` is finishing.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

#: biased_to_key(-1e30): the key of a NaN score (§2.2 ``nan_floor``).
NAN_KEY = int(~np.array([-1e30], np.float32).view(np.uint32)[0] & np.uint32(0xFFFFFFFF))
MAX_TOPK = 32
MAX_EXPERTS = 4096


def _p2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(n)))


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
    # §2.2 canonicalizes -0.0 to +0.0 first; here it is implied: a is +0.0 or above (or NaN),
    # never -0.0, and a sum is -0.0 only when both terms are
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
def kth_key(key, K: kl.constexpr, BITS: kl.constexpr, R: kl.constexpr, C: kl.constexpr):
    """Step 2 of the module docstring: the threshold thr (uint32) of the radix select over
    the [R, C] keys, count(key >= thr) >= K, the keys >= thr exactly the K winners unless
    ties at the K-th key (then thr is that key)."""
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
    elif BITS == 2:
        # two bits a round: the counts of the candidates thr | d << (30 - 2i), d = 1, 2, 3,
        # in 10-bit fields of one sum; the largest d whose count is >= K is taken (the same
        # two decisions the one-bit rounds make, n1 >= n2 >= n3)
        for i in range(16):
            if n_ge != K:
                sh = (30 - 2 * i).to(kl.uint32)
                c1 = thr | (kl.cast(1, kl.uint32) << sh)
                c2 = thr | (kl.cast(2, kl.uint32) << sh)
                c3 = thr | (kl.cast(3, kl.uint32) << sh)
                packed = kl.sum(kl.where(key >= c2, kl.where(key >= c3, 0x100401, 0x401),
                                         kl.where(key >= c1, 1, 0)))
                n1 = packed & 1023
                n2 = (packed >> 10) & 1023
                n3 = packed >> 20
                thr = kl.where(n3 >= K, c3, kl.where(n2 >= K, c2, kl.where(n1 >= K, c1, thr)))
                n_ge = kl.where(n3 >= K, n3, kl.where(n2 >= K, n2, kl.where(n1 >= K, n1, n_ge)))
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
def store_shared_slots(w_ptr, ids_ptr, out, shared_w, n_shared, K: kl.constexpr,
                       E: kl.constexpr):
    """The n_shared fused shared experts E, E + 1, ... after the K routed slots."""
    for j in range(n_shared):
        kl.store(w_ptr + out + K + j, shared_w)
        kl.store(ids_ptr + out + K + j, E + j)


@kiln.jit
def merged_slot_experts(j, ok, ainc, einc, acnt, ecnt, amask, emask, R: kl.constexpr,
                        C: kl.constexpr):
    """MERGED step 3: the expert of each slot j (0 where not ``ok``), the R "above" tile
    rows then the R "equal" ones as one sequence: slot j takes its sequence's j-th set bit.
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
def row_keys(scores_ptr, bias_ptr, row, stride_s, E: kl.constexpr, R: kl.constexpr,
             C: kl.constexpr, FAST_SIGMOID: kl.constexpr):
    """Step 1 of both latency kernels: row ``row``'s keys as an [R, C] tile (expert e = r * C
    + c; padded lanes key 0, below every float's key) and the tile's (rr, cc, lane, valid).
    Waits for the previous kernel (PDL) before its loads and lets the next one launch."""
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


@kiln.jit(num_warps=4, do_not_specialize=["M", "stride_o", "n_shared", "renorm", "apply_rsf"])
def moe_fused_gate_kernel(scores_ptr, bias_ptr, w_ptr, ids_ptr, M, stride_s, stride_o, n_shared,
                          rsf, renorm, apply_rsf, E: kl.constexpr, K: kl.constexpr,
                          FAST_SIGMOID: kl.constexpr, SELECT_BITS: kl.constexpr = 1,
                          MERGED: kl.constexpr = False):
    # 2 bits a round packs three counts (each <= E) into one int32: 10-bit fields, E < 1024
    BITS: kl.constexpr = SELECT_BITS if E < 1024 or SELECT_BITS == 4 else 1
    kl.static_assert(BITS == 1 or BITS == 2 or BITS == 4, "SELECT_BITS must be 1, 2 or 4")
    C: kl.constexpr = min(32, 1 << math.ceil(math.log2(E)))
    R: kl.constexpr = 1 << math.ceil(math.log2((E + C - 1) // C))
    KP: kl.constexpr = 1 << math.ceil(math.log2(K))
    kl.static_assert(K <= E, "topk must not exceed the number of experts")
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
    if MERGED:
        # one sequence of 2R tile rows, the R "above" rows then the R "equal" ones: slot j
        # takes its j-th set bit (the first A slots the "above" experts, the rest the first
        # "equal" ones), three multi-operand reductions in all
        amask, emask = kl.reduce((kl.where(above, cbit[None, :], 0),
                                  kl.where(equal, cbit[None, :], 0)), 1, _add2)  # [R] uint32
        acnt = popcount32(amask)
        ecnt = popcount32(emask)
        # inclusive prefix counts over the sequence (an "equal" row also counts every "above"
        # one): scans of the [R] counts, no [R, R] tile
        ainc = kl.cumsum(acnt, 0)
        einc = kl.cumsum(ecnt, 0) + kl.sum(acnt)
        expert = merged_slot_experts(jj, slot_ok, ainc, einc, acnt, ecnt, amask, emask, R, C)
    else:
        n_above = kl.sum(above.to(kl.int32))
        amask = kl.sum(kl.where(above, cbit[None, :], 0), axis=1)  # [R] uint32
        emask = kl.sum(kl.where(equal, cbit[None, :], 0), axis=1)
        acnt = popcount32(amask)
        ecnt = popcount32(emask)
        upto = rr[None, :] <= rr[:, None]  # [R, R]: column tile row <= row
        ainc = kl.sum(kl.where(upto, acnt[None, :], 0), axis=1)  # inclusive prefix counts
        einc = kl.sum(kl.where(upto, ecnt[None, :], 0), axis=1)
        from_above = jj < n_above
        n = kl.where(from_above, jj, jj - n_above)  # rank within its class, in id order
        inc = kl.where(from_above[:, None], ainc[None, :], einc[None, :])  # [KP, R]
        cnt_r = kl.where(from_above[:, None], acnt[None, :], ecnt[None, :])
        mask_r = kl.where(from_above[:, None], amask[None, :], emask[None, :])
        trow = kl.sum((inc <= n[:, None]).to(kl.int32), axis=1)  # the tile row holding it
        hit = rr[None, :] == trow[:, None]
        before = kl.sum(kl.where(hit, inc - cnt_r, 0), axis=1)
        m = kl.sum(kl.where(hit, mask_r, 0), axis=1)
        col = nth_set_bit(m, n - before, C)
        expert = kl.where(slot_ok, trow * C + col, 0)

    # -- 4. recompute the winners' keys and sort them ---------------------------------------
    s_k = kl.load(scores_ptr + row * stride_s + expert, mask=slot_ok, other=0.0)
    b_k = kl.load(bias_ptr + expert, mask=slot_ok, other=0.0)
    a_k, key_k = sigmoid_and_key(s_k, b_k, FAST_SIGMOID)
    if MERGED:
        # (key descending, id ascending) as one 64-bit key: key above, ~id below
        sk = (key_k.to(kl.uint64) << 32) | (~expert.to(kl.uint32)).to(kl.uint64)
        first = slot_ok[:, None] & (sk[:, None] > sk[None, :])
    else:
        ki, kj = key_k[:, None], key_k[None, :]
        ei, ej = expert[:, None], expert[None, :]
        first = slot_ok[:, None] & ((ki > kj) | ((ki == kj) & (ei < ej)))
    rank = kl.sum(first.to(kl.int32), axis=0)  # [KP]: winners ahead of winner j
    place = (rank[None, :] == jj[:, None]) & slot_ok[None, :]  # [slot, winner]
    if MERGED:
        ids, w = kl.reduce((kl.where(place, expert[None, :], 0),
                            kl.where(place, a_k[None, :], 0.0)), 1, _add2)
    else:
        ids = kl.sum(kl.where(place, expert[None, :], 0), axis=1)
        w = kl.sum(kl.where(place, a_k[None, :], 0.0), axis=1)

    # -- 5. shared slots, renormalize, scale -------------------------------------------------
    routed_sum, denom, scale = renorm_and_scale(w, slot_ok, rsf, renorm, apply_rsf)
    w = w / denom * scale
    out = row * stride_o
    kl.store(w_ptr + out + jj, w, mask=slot_ok)
    kl.store(ids_ptr + out + jj, ids, mask=slot_ok)
    store_shared_slots(w_ptr, ids_ptr, out, routed_sum / rsf / denom * scale, n_shared, K, E)


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
    """``RANK_FORM = 2``: steps 2-4 of ``moe_fused_gate_rank_kernel`` (the same candidates,
    winners, ids and weight bits) with 6 shared-memory exchanges instead of 8 on a row
    without fallback: every count and compaction result is kept on the tile it is used on
    (a reduction broadcast back along its axis is warp shuffles only, no shared memory).
    Stores the K winners' ids (ids_row_ptr[slot]); returns (w, a, slot, first): the winners'
    weights in slot order ([KP], zero past K, for the sum in the radix kernel's order), and
    on [CP, CP] tiles each candidate's weight, slot and where a winner's weight goes (first:
    the winners' column 0).

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
                               CAP: kl.constexpr = 32, FORM: kl.constexpr = 1):
    """``LATENCY_KERNEL = "rank"``: the radix kernel's results (same ids, same weight bits)
    with the radix rounds replaced, on every row with at most CAP candidates, by a
    pre-filter that provably keeps every winner and an exact ranking of what it keeps.

    The [R, C] keys as GROUPS groups of consecutive experts; t0 = the K-th largest group
    maximum (rank of each maximum by a [GROUPS, GROUPS] compare, no rounds). At least K
    groups have their maximum >= t0, so count(key >= t0) >= K, and every winner is >= t0:
    the candidates are the keys >= t0 (17 on average on the benchmark's rows, at most 27 in
    4000 numpy rows with GROUPS = 64). Up to CAP of them are compacted into CAP slots
    (step 3 of the radix kernel with one class) and ranked by (key descending, id
    ascending) as 64-bit keys in a [CAP, CAP] tile; rank < K is the output slot. A row with
    more than CAP candidates (ties, saturated or NaN rows) takes the radix rounds instead
    (a uniform branch; SELECT_BITS as the radix kernel) and then the same steps with the
    "above" and "equal" classes, its K winners the K valid slots. FORM = 2: steps 2-4 by
    ``_rank_select_rows`` (the same results, fewer exchanges through shared memory)."""
    C: kl.constexpr = min(32, 1 << math.ceil(math.log2(E)))
    R: kl.constexpr = 1 << math.ceil(math.log2((E + C - 1) // C))
    KP: kl.constexpr = 1 << math.ceil(math.log2(K))
    G: kl.constexpr = min(GROUPS, R * C)
    CP: kl.constexpr = max(CAP, KP)
    kl.static_assert(K <= E, "topk must not exceed the number of experts")
    kl.static_assert(G >= K, "the pre-filter needs at least K groups")
    row = kl.program_id(0)
    rr, cc, lane, valid, key = row_keys(scores_ptr, bias_ptr, row, stride_s, E, R, C,
                                        FAST_SIGMOID)

    jj = kl.arange(0, KP)
    slot_ok = jj < K
    out = row * stride_o
    if FORM == 2:
        w, a_k, slot, first = _rank_select_rows(key, scores_ptr + row * stride_s, bias_ptr,
                                                ids_ptr + out, K, FAST_SIGMOID, SELECT_BITS,
                                                G, CAP, R, C)
    else:
        # -- 2. the pre-filter: t0 = the K-th largest group maximum ------------------------------
        # t0 is the largest maximum m with #{groups: max >= m} >= K (ties counted). Padded keys
        # are 0, below every float's key; at least K groups hold a real key (G >= K, and at most
        # half the groups are padding), so t0 > 0 and no padded lane is a candidate
        mg = kl.max(key.reshape(G, R * C // G), axis=1)  # [G]
        cnt = kl.sum((mg[None, :] >= mg[:, None]).to(kl.int32), axis=1)  # [G]: maxima >= mine
        t0 = kl.max(kl.where(cnt >= K, mg, 0))
        cbit = kl.cast(1, kl.uint32) << cc.to(kl.uint32)
        amask = kl.sum(kl.where(key >= t0, cbit[None, :], 0), axis=1)  # [R] uint32: candidates
        emask = kl.zeros((R,), kl.uint32)
        n_cand = kl.sum(popcount32(amask))
        n_valid = n_cand
        if n_cand > CAP:
            # more than CAP candidates: the radix select's threshold, the keys above it and the
            # first K equal to it in id order
            thr = kth_key(key, K, SELECT_BITS, R, C)
            amask, emask = kl.reduce((kl.where(key > thr, cbit[None, :], 0),
                                      kl.where(key == thr, cbit[None, :], 0)), 1, _add2)
            n_valid = n_cand * 0 + K

        # -- 3. compact the valid candidates into CP slots (the radix kernel's MERGED step 3) ---
        acnt = popcount32(amask)
        ecnt = popcount32(emask)
        ainc = kl.cumsum(acnt, 0)
        einc = kl.cumsum(ecnt, 0) + kl.sum(acnt)
        jc = kl.arange(0, CP)
        cand_ok = jc < n_valid
        expert = merged_slot_experts(jc, cand_ok, ainc, einc, acnt, ecnt, amask, emask, R, C)

        # -- 4. the candidates' keys again, ranked: rank < K is the output slot ------------------
        s_k = kl.load(scores_ptr + row * stride_s + expert, mask=cand_ok, other=0.0)
        b_k = kl.load(bias_ptr + expert, mask=cand_ok, other=0.0)
        a_k, key_k = sigmoid_and_key(s_k, b_k, FAST_SIGMOID)
        sk = (key_k.to(kl.uint64) << 32) | (~expert.to(kl.uint32)).to(kl.uint64)
        first = cand_ok[:, None] & (sk[:, None] > sk[None, :])
        rank = kl.sum(first.to(kl.int32), axis=0)  # [CP]: candidates ahead of candidate j
        place = (rank[None, :] == jj[:, None]) & cand_ok[None, :]  # [slot, candidate]
        ids, w = kl.reduce((kl.where(place, expert[None, :], 0),
                            kl.where(place, a_k[None, :], 0.0)), 1, _add2)

    # -- 5. shared slots, renormalize, scale (as the radix kernel) --------------------------
    routed_sum, denom, scale = renorm_and_scale(w, slot_ok, rsf, renorm, apply_rsf)
    if FORM == 2:  # from each winner's row (the ids are stored)
        kl.store(w_ptr + out + slot, a_k / denom * scale, mask=first)
    else:
        w = w / denom * scale
        kl.store(w_ptr + out + jj, w, mask=slot_ok)
        kl.store(ids_ptr + out + jj, ids, mask=slot_ok)
    store_shared_slots(w_ptr, ids_ptr, out, routed_sum / rsf / denom * scale, n_shared, K, E)


#: Warps per row: NUM_WARPS below BATCH_M rows (latency: the radix select's counts over 4
#: warps), BATCH_WARPS from BATCH_M on (throughput: on one warp every count is shuffles, no
#: shared memory or barrier). H200 sweep (bench/kimi_k3/run.py --sweep; SELECT_BITS = 1,
#: MERGED_REDUCTIONS = False): T = 1 6.7 us on 4 warps vs 9.6 on 1; T = 16384 121.7 us on 1
#: warp vs 175.0 on 4 (8 warps: 340). BATCH_M: 4 one-warp rows per SM of the H200.
NUM_WARPS, BATCH_WARPS, BATCH_M = 4, 1, 512
#: Register cap of the one-warp (batch) kernel: uncapped it takes 112 registers (sm_90a), so
#: 18 one-warp programs fit an SM; at 80 (no spills) 25 do. None: ptxas decides. H200 sweep at
#: T = 16384 (SELECT_BITS = 1, MERGED_REDUCTIONS = False): 113.2 us uncapped, 104.0 at 96,
#: 99.1 at 80, 97.9 at 72 (48 bytes spilled). With the two-bit select and the merged steps
#: 3-4: 108 registers uncapped, none spilled at 80, 56 bytes at 72; H200 with the one-bit
#: select and the merged steps: 94.6 us uncapped, 86.9 at 96, 82.4-83.2 at 80, 81.6 at 72.
BATCH_MAXNREG = 80
#: Bits of the threshold decided per count reduction of the radix select (step 2): 1, the
#: measured kernel (up to 32 rounds); 2, three candidates' counts packed in 10-bit fields of
#: one int32 sum (up to 16 rounds; E < 1024, else 1). SASS (sm_90a, E = 896), instructions a
#: round: 61 with 1 bit vs 96 with 2 at 4 warps (8 keys a lane), 111 vs 196 at one warp (32
#: keys a lane). On the benchmark's rows (randn scores, bias randn * 0.1; numpy simulation of
#: the early exit) a row takes 16.1 one-bit rounds on average, 8.3 two-bit ones: half the
#: shuffle + shared-memory + barrier round trips of the latency chain at T = 1, and about
#: 1630 instead of 1790 dynamic loop instructions a row at one warp. H200 sweep (MERGED on):
#: T = 1 on 4 warps 4.67 us with 2 bits vs 6.18 with 1 (the former kernel: 6.41); T = 16384 on
#: one warp capped at 80 registers 94.0 us with 2 bits vs 82.4 with 1: per round a lane
#: compares each of its 32 keys with three candidates, more issue than the halved round
#: trips save when rows fill the SMs. So 2 bits for the latency kernel, 1 for the batch one.
#: 4: fifteen candidates a round (up to 8 rounds; any E): thermometer nibbles of a uint64 a
#: key, summed over runs of 8 keys (a reshape of the row: in-thread and one shuffle),
#: widened to eight int32 of 16-bit fields, one eight-operand reduction; the decision by
#: SWAR (bit 15 of field + 0x8000 - K), no per-field compare chain. On the benchmark's rows
#: 4.35 rounds a row instead of 8.2 (numpy simulation of the early exit). SASS (sm_90a,
#: E = 896, 4 warps, MERGED): 313 instructions a round instead of 95 (the per-run sums go
#: through shared memory to a layout that every warp holds whole, so the widening runs on
#: 4 runs a lane and the reduction is shuffles only; still 2 bar.sync a round), 1792
#: instructions and 56 registers instead of 1568 and 48, 12 barriers either way: about 1360
#: instead of 780 dynamic loop instructions a row for 4 fewer shuffle + shared-memory +
#: barrier round trips. One warp (batch, capped at 80): 3440 instructions instead of 2928,
#: 10 barriers instead of 8 (the per-run layout change), no spills. Variants of the same
#: idea that SASS ruled out: five int32 of 10-bit fields (361 a round: the widening and a
#: serial compare chain), the thermometer straight into 10-bit fields a key (370), 16-bit
#: fields in uint64 (337: 64-bit adds in the shuffle tree). H200 sweep (``bench/kimi_k3/run.py
#: --sweep --only moe_fused_gate``, one run): T = 1 on 4 warps 4.30 us with 4 bits vs 4.60
#: with 2 (8 warps 4.99 / 4.91, 2 warps 5.02 / 5.41); T = 64 4.94 vs 5.25; the batch kernel
#: at T = 16384 (one warp, 80 registers) 102.3 us with 4 bits vs 82.3 with 1. So 4 bits for
#: the latency kernel, 1 for the batch one. With the 32-lane integer sums as redux.sync
#: (ReduceOps.cpp; the latency kernel 1792 -> 1728 sm_90a instructions): T = 1 4.37 -> 4.03
#: us, T = 64 5.03 -> 4.70, T = 16384 83.07 -> 77.99 (bench/results/h200-bench_kimi_k3.md).
SELECT_BITS, BATCH_SELECT_BITS = 4, 1
#: Steps 3-4 with fewer reductions and layout conversions (one sequence of "above" then
#: "equal" tile rows, no separate count of the "above" keys, the prefix counts by ``cumsum``
#: instead of an [R, R] tile, the (key, id) order as one 64-bit key, ids and weights in one
#: multi-operand reduction), the same results. SASS (sm_90a, E = 896, SELECT_BITS = 2): 12
#: barriers in the 4-warp kernel instead of 28 (10 after the radix loop instead of 26), 1568
#: instructions instead of 1640; at one warp 8 barriers instead of 22, 3016 instructions
#: instead of 3456. H200: T = 1 5.00 -> 4.67 us (2 bits), T = 16384 94.7 -> 82.4 us (1 bit).
MERGED_REDUCTIONS = True
#: The latency kernel (below BATCH_M rows): "radix", ``moe_fused_gate_kernel`` (the radix
#: select, SELECT_BITS a round, on NUM_WARPS); "rank", ``moe_fused_gate_rank_kernel`` on
#: RANK_WARPS (same ids and weight bits): the K-th largest of RANK_GROUPS group maxima as a
#: threshold that keeps every winner, the candidates above it (at most RANK_CAP, else the
#: radix rounds) compacted and ranked exactly, no rounds. SASS (sm_90a, E = 896, 4 warps,
#: 4-bit fallback rounds): 2600 instructions, 60 registers, 20 bar.sync (the radix kernel:
#: 1728, 48, 12). A row that needs no fallback runs straight through 1648 of them with 16
#: bar.sync: pre-filter 376 instructions and 8 bar.sync, compaction into 32 slots 432 and 2,
#: reload 177, [32, 32] rank and store 249 and 6. The radix kernel on the benchmark's rows
#: (4.35 rounds of 250 instructions and 2 bar.sync): about 2325 instructions and 19 bar.sync
#: (470 before the rounds, step 3 416 with 4 bar.sync, reload 156, sort and store 196 with 6).
#: Candidates on randn rows (numpy, 4000 rows, GROUPS = 64): 18.5 on average, 27 at most
#: (GROUPS = 32: 22.8, 1 % above 32; 128: 17.0). H200 (bench/kimi_k3/run.py --sweep --only
#: moe_fused_gate; T = 1 / T = 64, us): radix 4.09 / 4.58; rank 4 warps, 64 groups, cap 32
#: 3.31 / 3.50; 32 groups, cap 64 3.61 / 3.77; 128 groups 3.55 / 3.57; 2 warps 4.18 / 4.45; 8
#: warps 4.42 / 4.53 (bench/results/h200-bench_kimi_k3_sweep_moe_rank.md).
LATENCY_KERNEL = "rank"
RANK_WARPS, RANK_GROUPS, RANK_CAP = 4, 64, 32
#: Formulation of the rank kernel's steps 2-4 (same candidates, ids and weight bits): 1, the
#: measured kernel; 2, ``_rank_select_rows``: every count and compaction result stays on the
#: tile that uses it (reductions broadcast back along their axis: shuffles, no shared
#: memory), the group counts as 16-bit pairs in one redux.sync a row, t0 by redux.sync.max,
#: one class in the compaction (the fallback merges its "equal" keys into the mask), slot i
#: as row i of [32, 32] tiles where its expert is reloaded, one transpose of the 64-bit sort
#: keys for the columns, ids and weights stored from the winners' rows (a one-operand
#: reduction by slot only for the sum). SASS (sm_90a, E = 896, 4 warps, 64 groups, cap 32),
#: the path of a row without fallback (n_shared = 0, the reciprocals' slow paths not taken):
#: 1403 -> 990 instructions, 16 -> 12 bar.sync; by step: load and keys 192 -> 190,
#: pre-filter 377 -> 319 (8 bar.sync either way; with the compaction's prefix counts, whose
#: shuffles overlap the candidate count's), compaction 421 and 2 bar.sync -> 162 and none,
#: reload 125 -> 78 (two distinct slots a thread instead of four), rank 131 and 4 -> 75 and
#: 2 (the transpose), placement, sum and stores 157 and 2 -> 166 and 2. Whole kernel: 2600
#: -> 2176 instructions, 60 -> 54 registers, 20 -> 16 bar.sync, 4480 -> 11656 bytes of
#: shared memory. H200 (bench/results/h200-bench_kimi_k3_sweep_moe_rank2.md; T = 1 / T = 64,
#: us): form 1 3.29 / 3.41, form 2 2.83 / 2.96 (4 warps, 64 groups, cap 32); form 2 on 8
#: warps 3.06 / 3.17, on 2 3.70 / 3.83, 128 groups 3.27 / 3.40, 32 groups cap 64 4.62 / 4.80.
RANK_FORM = 2
K3_EXPERTS, K3_TOPK = 896, 16

_SIGNATURE = {"scores_ptr": "*f32", "bias_ptr": "*f32", "w_ptr": "*f32", "ids_ptr": "*i32",
              "M": "i32", "stride_s": "i32", "stride_o": "i32", "n_shared": "i32",
              "rsf": "f32", "renorm": "i32", "apply_rsf": "i32"}
_DIVISIBILITY = ["scores_ptr", "bias_ptr", "w_ptr", "ids_ptr", "stride_s"]

AOT_SPECIALIZATIONS = [
    Spec(moe_fused_gate_kernel, name=name, signature=_SIGNATURE,
         constexprs={"E": K3_EXPERTS, "K": K3_TOPK, "FAST_SIGMOID": fast, "SELECT_BITS": bits,
                     "MERGED": MERGED_REDUCTIONS},
         divisibility=_DIVISIBILITY, num_warps=warps, maxnreg=maxnreg)
    for name, warps, maxnreg, bits in (
        ("moe_fused_gate", NUM_WARPS, None, SELECT_BITS),
        ("moe_fused_gate_batch", BATCH_WARPS, BATCH_MAXNREG, BATCH_SELECT_BITS))
    for fast in (False, True)
] + [
    Spec(moe_fused_gate_rank_kernel, name="moe_fused_gate_rank", signature=_SIGNATURE,
         constexprs={"E": K3_EXPERTS, "K": K3_TOPK, "FAST_SIGMOID": fast,
                     "SELECT_BITS": SELECT_BITS, "GROUPS": RANK_GROUPS, "CAP": RANK_CAP,
                     "FORM": RANK_FORM},
         divisibility=_DIVISIBILITY, num_warps=RANK_WARPS)
    for fast in (False, True)
]


def moe_fused_gate(scores: Any, bias: Any, topk: int, renormalize: bool = True,
                   routed_scaling_factor: float = 1.0,
                   apply_routed_scaling_factor_on_output: bool = False,
                   num_fused_shared_experts: int = 0, fast_sigmoid: bool = False,
                   out_weights: Optional[Any] = None, out_ids: Optional[Any] = None) -> tuple:
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
    batch = m >= BATCH_M
    args = (scores, bias, out_weights, out_ids, m, stride_s, kout, num_fused_shared_experts,
            rsf, int(renormalize), int(apply_routed_scaling_factor_on_output))
    if not batch and LATENCY_KERNEL == "rank":
        L.launch(moe_fused_gate_rank_kernel, "moe_fused_gate_rank", (m,), args,
                 {"E": e, "K": topk, "FAST_SIGMOID": fast_sigmoid, "SELECT_BITS": SELECT_BITS,
                  "GROUPS": RANK_GROUPS, "CAP": RANK_CAP, "FORM": RANK_FORM}, RANK_WARPS, None)
        return out_weights, out_ids
    if LATENCY_KERNEL not in ("radix", "rank"):
        raise ValueError(f"{op}: LATENCY_KERNEL must be 'radix' or 'rank', got "
                         f"{LATENCY_KERNEL!r}")
    L.launch(moe_fused_gate_kernel, "moe_fused_gate_batch" if batch else "moe_fused_gate", (m,),
             args,
             {"E": e, "K": topk, "FAST_SIGMOID": fast_sigmoid,
              "SELECT_BITS": BATCH_SELECT_BITS if batch else SELECT_BITS,
              "MERGED": MERGED_REDUCTIONS},
             BATCH_WARPS if batch else NUM_WARPS, BATCH_MAXNREG if batch else None)
    return out_weights, out_ids
