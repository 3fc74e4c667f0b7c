"""MLA attention over the paged latent cache, absorbed form: decode (``mla_decode``) and the
speculative target-verify (``verify_splitkv``), split over the KV range (flash-decoding)
and merged in a second pass.

Request b's KV sequence is its cached rows 0 .. total_b - 1, row n at page
``block_table[b, n // page_size]``, offset ``n % page_size``; each row is
``[kv_c (512) | k_pe (64)]``, bf16 (576 values) or FP8 (656 bytes: 512 e4m3 codes, 4 fp32
scales, one a 128-group, 64 bf16 rope values; mla_kv.py writes both). Query row (b, s, h),
s < S, sees the rows n <= total_b - S + s (causal over the S newest rows, the drafts):

    score[n] = (q[b, s, h, :512] . lat_n + q[b, s, h, 512:] . rope_n) * scale
    out[b, s, h, :] = bf16( sum_n softmax(score)[n] * lat_n ),   lse = log sum_n exp(score[n])

lat_n the row's 512 latent values (FP8: code * its group's scale). verify_splitkv's
``lengths`` are the prefixes (total = lengths + S); mla_decode's ``cache_seqlens`` are the
totals (FlashMLA's convention, the new token's row included). A request with lengths < 0
is a padded batch entry: nothing of it is read or written. A query row that sees no row
(decode with cache_seqlens 0) writes zeros and lse = -inf.

**Head dim 576.** No tile is padded to a power of two: the score is five dots, the four
128-groups of the latent and the 64 rope columns (all powers of two, nothing masked, no
lane of padding reaching a sum); the value dots take the same four groups. For the FP8
cache the e4m3 codes enter the dots as they are (exact in bf16): a group's partial scores
are scaled by the keys' scales of the group in fp32, and its value dot takes ``p * scale``
as the weights (rounded to bf16, as p is for the bf16 cache).

**Split KV.** Program (split, head block [and value part], request): the request's rows are
cut into ``n_splits`` chunks of ``cdiv(cdiv(total, n_splits), BLOCK_N) * BLOCK_N`` rows (the
chunk from the request's own length, so that one long request fills the GPU as well as
many short ones); each program runs the online softmax (base 2, the scale folded into
``qk_scale = scale * log2(e)``) over its chunk for BLOCK_M = S_PAD * BLOCK_H query rows (S
drafts of BLOCK_H heads: row r is draft r // BLOCK_H, head r % BLOCK_H of its block) and
writes its partial output (normalized) and lse in fp32; ``mla_merge_kernel`` combines
them. With one split the partial kernel writes the bf16 output (and lse) itself.

**Two kernels.** ``mla_attention_kernel`` (above) reads the cache through pointers: any
page size, both caches, every dot on mma.sync. ``mla_attention_tma_kernel`` takes the bf16
cache whose page size is a multiple of 64 (pages one after the other, as the TMA view
needs): the cache seen as one 2-D tensor [pages * page_size, 576] through two TMA
descriptors, 128-byte swizzled, the latent as [BN, LAT_W] boxes and the rope as [BN, 64]
boxes at column 512, in a ``tma_stages``-deep ring, a key block of BN rows one box at row
``block_table[b, n // page_size] * page_size + n % page_size`` (BN divides the page, so a
block never crosses one); 64 query rows in the dots' M (the rows past S_PAD * BLOCK_H are
padding, zero queries never stored) and all 512 value columns in one program of 8 warps,
whose two warpgroups split every dot's columns, each holding [64, 256] of the output.
Each latent box is read in place by its score dot (as kᵀ) and its value dot; no box is
loaded twice, no score computed twice. On sm_90a (LAT_W 256) the three score dots and the
two value dots run on wgmma, B read in place from the ring, p staged once for both. Same
math, split rule, workspace and merge as the pointer kernel (its ``_store_rows`` and
``mla_merge_kernel``); the results agree within the tolerance, not bit for bit (other
split counts and dot orders).

The boxes cover whole key blocks only. A request whose total is not a multiple of BN ends
in a partial block, which the TMA kernel reads through pointers with the rows past the
total masked to zero (its dots from registers, on mma.sync): no row past a request's
length reaches a dot, whatever it holds (its weight is 0, but 0 * NaN is NaN), so the
cache's unused rows need not be finite, as with the pointer kernel.

``_use_tma`` picks the kernel: the TMA kernel where ``Settings.tma`` (the default) and its
layout hold, from ``Settings.tma_min_rows`` query rows a program (below, S = 1 with at most
16 heads, the pointer kernel's one 16-row tile is faster), on sm_90a (sm_100a/sm_103a: with
``Settings.tma_blackwell``, unmeasured there), by JIT or from the bundle; else the pointer
kernel. The bundle holds both kernels:
the TMA kernel's latent box differs per arch (LAT_W 256 does not fit sm_100a's static
shared memory), so its specializations are limited to their archs (``Spec(archs=...)``,
``TMA_BUNDLE_WIDTHS``): LAT_W 256 on sm_90a, 128 on sm_100a/sm_103a, every tile shape
(``TMA_SHAPES``), the default block, stages and swizzle. With ``KILN_NO_JIT=1`` a call
launches the same TMA kernel as by JIT; other TMA settings (block, stages, sm_90a's width
128) find no specialization (sm_90a's width 128: an entry with no image for sm_90a).

Specification: docs/kernels/mla_attention.md
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

KV_LORA, ROPE, GROUP = 512, 64, 128
#: Row widths: bf16 values, FP8 bytes.
BF16_ROW, FP8_ROW_BYTES = KV_LORA + ROPE, KV_LORA + 4 * (KV_LORA // GROUP) + 2 * ROPE
LOG2E = 1.0 / math.log(2.0)
LN2 = math.log(2.0)
#: The most draft rows a request (S_PAD <= 8: 8 drafts of 8 heads are one 64-row tile).
MAX_S = 8
#: The most KV splits a request (the merge's loop; the workspace is [B S H, n_splits, 513]).
MAX_SPLITS = 256


@kiln.jit
def _latent(cache_lat, cache_f32, row, g, good, FP8: kl.constexpr):
    """The latent's 128-group g of the block's rows (``row``: their offsets in 16-byte units)
    as a [BLOCK_N, 128] bf16 tile (FP8: the e4m3 codes, exact in bf16) and the rows' scales
    of the group (FP8; else 1). The score and the value dot load the group with the same
    pointers and mask, so kiln-tile-pipeline-loads gives both one gather ring: the value
    dot reads the slot again."""
    cols = kl.arange(0, GROUP)[None, :]
    if FP8:
        k = kl.load(cache_lat + (row * 16 + g * GROUP)[:, None] + cols, mask=good[:, None],
                    other=0.0)
        scale = kl.load(cache_f32 + row * 4 + KV_LORA // 4 + g, mask=good, other=0.0)
        return k.to(kl.bfloat16), scale
    return kl.load(cache_lat + (row * 8 + g * GROUP)[:, None] + cols, mask=good[:, None],
                   other=0.0), 1.0


@kiln.jit
def _group_scores(s, q_g, cache_lat, cache_f32, row, g, good, FP8: kl.constexpr):
    """s + the partial scores of the latent's group g, ``q_g . k_g^T`` (FP8: ``(q_g .
    codes^T) * scale``, exact products in fp32); the group loaded where it is used, so that
    one group's tile is live at a time."""
    k, scale = _latent(cache_lat, cache_f32, row, g, good, FP8)
    if FP8:
        return s + kl.dot(q_g, k.T) * scale[None, :]
    return kl.dot(q_g, k.T, s)


@kiln.jit
def _group_values(acc, p, alpha, cache_lat, cache_f32, row, g, good, FP8: kl.constexpr):
    """The running output of the value columns of group g, rescaled by alpha, plus ``p .
    v_g``, the weights rounded to bf16 (FP8: ``(p * scale) . codes``, the weights times the
    rows' scales rounded to bf16). The group is loaded again (the score's ring slot, read
    again) rather than kept live across the softmax."""
    v, scale = _latent(cache_lat, cache_f32, row, g, good, FP8)
    if FP8:
        p = p * scale[None, :]
    return kl.dot(p.to(kl.bfloat16), v, acc * alpha[:, None])


@kiln.jit
def _store_rows(o_part_ptr, out_ptr, acc, l_safe, part, out_row, cols, ok, final):
    """One 128-group of a program's output: the partial (normalized, fp32) at workspace row
    ``part``, or with ``final`` the bf16 output row ``out_row``."""
    o = kl.fdiv(acc, l_safe[:, None])  # no subroutine: ptxas would serialize the wgmmas
    kl.store(o_part_ptr + (part * KV_LORA)[:, None] + cols[None, :], o,
             mask=(ok & (final == 0))[:, None])
    kl.store(out_ptr + out_row[:, None] + cols[None, :], o.to(kl.bfloat16),
             mask=(ok & (final != 0))[:, None])


@kiln.jit
def _online_softmax(s, m_i, l_i, qk_scale):
    """One key block of the online softmax in base 2: the scores s [M, N] (masked ones -inf)
    against the running maximum m_i and sum l_i [M] -> (p, the rescale alpha of the earlier
    blocks, m_i, l_i); a row with no key yet keeps m = -inf, alpha = 1, p = 0."""
    m_new = kl.maximum(m_i, kl.max(s, axis=1) * qk_scale)
    m_use = kl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = kl.exp2(m_i - m_use)
    p = kl.exp2(s * qk_scale - m_use[:, None])
    return p, alpha, m_new, l_i * alpha + kl.sum(p, axis=1)


@kiln.jit
def _split_rows(len_ptr, b, extra, max_rows, n_splits, split, BLOCK: kl.constexpr):
    """(lengths[b], the request's total rows, this split's rows [lo, hi)): a padded entry
    (length < 0) has none, the total is lengths[b] + extra cut to the block table's
    max_rows, and the splits take chunks of whole BLOCKs."""
    length = kl.load(len_ptr + b)
    total = kl.where(length < 0, 0, kl.minimum(length + extra, max_rows))
    per = (total + n_splits - 1) // n_splits
    chunk = (per + BLOCK - 1) // BLOCK * BLOCK
    lo = kl.minimum(split * chunk, total)
    return length, total, lo, kl.minimum(lo + chunk, total)


@kiln.jit(num_warps=4, do_not_specialize=[
    "H", "S", "extra", "n_splits", "page_size", "page_u", "row_u", "num_pages", "max_rows",
    "bt_s0", "q_sb_u", "q_ss_u", "q_sh_u", "o_sb_u", "o_ss_u", "o_sh_u", "final",
    "write_lse"])
def mla_attention_kernel(q_ptr, cache_lat, cache_f32, cache_bf16, bt_ptr, len_ptr, o_part_ptr,
                         lse_part_ptr, out_ptr, lse_ptr, H, S, extra, n_splits, page_size,
                         page_u, row_u, num_pages, max_rows, bt_s0, q_sb_u, q_ss_u, q_sh_u, o_sb_u,
                         o_ss_u, o_sh_u, final, write_lse, qk_scale, S_PAD: kl.constexpr,
                         BLOCK_H: kl.constexpr, BLOCK_N: kl.constexpr, VPARTS: kl.constexpr,
                         FP8: kl.constexpr, STAGES: kl.constexpr):
    """Program (split, head block * VPARTS + value part, request b). The cache comes as three
    views of its bytes: ``cache_lat`` the latent (bf16, or the e4m3 codes), ``cache_f32`` the
    FP8 scales, ``cache_bf16`` the rope values (for the bf16 cache all three are the cache);
    its page stride ``page_u`` and row stride ``row_u`` in 16-byte units, the offsets 64-bit.
    The q and out strides come in 8-element units. A value part holds 4 / VPARTS of the
    latent's 128-groups (VPARTS = 2: the first or the last two; every part computes the
    whole score). Block table entries outside [0, num_pages) read as zero rows, and a total
    past the block table's ``max_rows`` (its pages times the page size) is cut to it: a bad
    table or length never reads outside the cache or the table. ``extra``: added to
    lengths[b] for the request's total rows (verify: S, decode: 0)."""
    NGV: kl.constexpr = 4 // VPARTS
    BLOCK_M: kl.constexpr = S_PAD * BLOCK_H
    split = kl.program_id(0)
    hv = kl.program_id(1)
    b = kl.program_id(2)
    hb = hv // VPARTS
    vpart = hv % VPARTS
    b64 = b.to(kl.int64)
    kl.pdl_wait()  # q, the cache and the tables may come from the previous kernels
    length, total, lo, hi = _split_rows(len_ptr, b, extra, max_rows, n_splits, split, BLOCK_N)

    r = kl.arange(0, BLOCK_M)
    s_of = r // BLOCK_H
    h = hb * BLOCK_H + r % BLOCK_H
    row_ok = (s_of < S) & (h < H)
    last = total - S + s_of  # the last row query row r sees
    c128 = kl.arange(0, GROUP)
    c64 = kl.arange(0, ROPE)
    q_row = q_ptr + (b64 * q_sb_u + s_of * q_ss_u + h * q_sh_u) * 8
    qm = row_ok[:, None]
    # The score sums the latent's groups in the order g0 .. g3: the value part's own groups
    # first, so that its value dots (groups v0 ..) load them with the score dots' pointers
    # (one gather ring a group). FP8 with two value parts: in the groups' order in both
    # parts, the value groups gathered again into rings of their own (4 KiB an FP8 group):
    # its weights p * scale are rounded to bf16, where another order of the score's sum
    # moves an output by a rounding step of its own.
    v0 = vpart * NGV
    g0 = v0
    if FP8 and VPARTS > 1:
        g0 = 0
    g1 = (g0 + 1) % 4
    g2 = (g0 + 2) % 4
    g3 = (g0 + 3) % 4
    v1 = g1
    v2 = g2
    v3 = g3
    if FP8 and VPARTS > 1:
        v1 = v0 + 1
    q0 = kl.load(q_row[:, None] + g0 * GROUP + c128[None, :], mask=qm, other=0.0)
    q1 = kl.load(q_row[:, None] + g1 * GROUP + c128[None, :], mask=qm, other=0.0)
    q2 = kl.load(q_row[:, None] + g2 * GROUP + c128[None, :], mask=qm, other=0.0)
    q3 = kl.load(q_row[:, None] + g3 * GROUP + c128[None, :], mask=qm, other=0.0)
    qr = kl.load(q_row[:, None] + KV_LORA + c64[None, :], mask=qm, other=0.0)
    kl.pdl_launch_dependents()

    cols = kl.arange(0, BLOCK_N)
    bt_row = bt_ptr + b64 * bt_s0
    m_i = kl.full((BLOCK_M,), float("-inf"), kl.float32)
    l_i = kl.zeros((BLOCK_M,), kl.float32)
    acc0 = kl.zeros((BLOCK_M, GROUP), kl.float32)
    acc1 = kl.zeros((BLOCK_M, GROUP), kl.float32)
    if VPARTS == 1:
        acc2 = kl.zeros((BLOCK_M, GROUP), kl.float32)
        acc3 = kl.zeros((BLOCK_M, GROUP), kl.float32)
    for n in kl.range(lo, hi, BLOCK_N, num_stages=STAGES):
        key = n + cols
        kv_ok = key < hi
        page = kl.load(bt_row + key // page_size, mask=kv_ok, other=-1)
        good = kv_ok & (page >= 0) & (page < num_pages)
        row = (kl.where(good, page, 0).to(kl.int64) * page_u
               + (key % page_size).to(kl.int64) * row_u)  # 16-byte units
        if FP8:
            rope_at = row * 8 + (KV_LORA + 16) // 2
        else:
            rope_at = row * 8 + KV_LORA
        rope = kl.load(cache_bf16 + rope_at[:, None] + c64[None, :], mask=good[:, None],
                       other=0.0)
        s = kl.dot(qr, rope.T)
        s = _group_scores(s, q0, cache_lat, cache_f32, row, g0, good, FP8)
        s = _group_scores(s, q1, cache_lat, cache_f32, row, g1, good, FP8)
        s = _group_scores(s, q2, cache_lat, cache_f32, row, g2, good, FP8)
        s = _group_scores(s, q3, cache_lat, cache_f32, row, g3, good, FP8)
        s = kl.where(key[None, :] <= kl.minimum(last, hi - 1)[:, None], s, float("-inf"))
        p, alpha, m_i, l_i = _online_softmax(s, m_i, l_i, qk_scale)
        acc0 = _group_values(acc0, p, alpha, cache_lat, cache_f32, row, v0, good, FP8)
        acc1 = _group_values(acc1, p, alpha, cache_lat, cache_f32, row, v1, good, FP8)
        if VPARTS == 1:
            acc2 = _group_values(acc2, p, alpha, cache_lat, cache_f32, row, v2, good, FP8)
            acc3 = _group_values(acc3, p, alpha, cache_lat, cache_f32, row, v3, good, FP8)

    l_safe = kl.where(l_i > 0.0, l_i, 1.0)
    lse = kl.where(l_i > 0.0, (m_i + kl.log2(l_safe)) * LN2, float("-inf"))
    ok = row_ok & (length >= 0)
    qrow = (b64 * S + s_of) * H + h  # the query row's index in [B, S, H]
    part = qrow * n_splits + split
    out_row = (b64 * o_sb_u + s_of * o_ss_u + h * o_sh_u) * 8
    c0 = vpart * (NGV * GROUP) + c128
    _store_rows(o_part_ptr, out_ptr, acc0, l_safe, part, out_row, c0, ok, final)
    _store_rows(o_part_ptr, out_ptr, acc1, l_safe, part, out_row, c0 + GROUP, ok, final)
    if VPARTS == 1:
        _store_rows(o_part_ptr, out_ptr, acc2, l_safe, part, out_row, c0 + 2 * GROUP, ok,
                    final)
        _store_rows(o_part_ptr, out_ptr, acc3, l_safe, part, out_row, c0 + 3 * GROUP, ok,
                    final)
    lse_ok = ok & (vpart == 0)
    kl.store(lse_part_ptr + part, lse, mask=lse_ok & (final == 0))
    kl.store(lse_ptr + qrow, lse, mask=lse_ok & (final != 0) & (write_lse != 0))


@kiln.jit(num_warps=4, do_not_specialize=["H", "S", "n_splits", "o_sb_u", "o_ss_u", "o_sh_u",
                                          "write_lse"])
def mla_merge_kernel(o_part_ptr, lse_part_ptr, len_ptr, out_ptr, lse_ptr, H, S, n_splits,
                     o_sb_u, o_ss_u, o_sh_u, write_lse, BLOCK_S: kl.constexpr):
    """Program (head, draft, request): the request's n_splits partials of one query row,
    BLOCK_S at a time in split order, combined by their lse (an online rescale, fp32), the
    output rounded to bf16 once. A padded request (lengths < 0) writes nothing."""
    h = kl.program_id(0)
    s = kl.program_id(1)
    b = kl.program_id(2)
    kl.pdl_wait()  # the partials come from the previous kernel
    valid = kl.load(len_ptr + b) >= 0
    qrow = (b.to(kl.int64) * S + s) * H + h
    sp = kl.arange(0, BLOCK_S)
    cols = kl.arange(0, KV_LORA)
    m = kl.full((1,), float("-inf"), kl.float32)
    total = kl.zeros((1,), kl.float32)
    acc = kl.zeros((KV_LORA,), kl.float32)
    for s0 in range(0, n_splits, BLOCK_S):
        i = s0 + sp
        live = (i < n_splits) & valid
        lse = kl.load(lse_part_ptr + qrow * n_splits + i, mask=live, other=float("-inf"))
        o = kl.load(o_part_ptr + ((qrow * n_splits + i) * KV_LORA)[:, None] + cols[None, :],
                    mask=live[:, None], other=0.0)
        m_new = kl.maximum(m, kl.max(lse, axis=0))
        m_use = kl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = kl.exp2((m - m_use) * LOG2E)
        w = kl.exp2((lse - m_use) * LOG2E)
        total = total * alpha + kl.sum(w, axis=0)
        acc = acc * alpha + kl.sum(o * w[:, None], axis=0)
        m = m_new
    kl.pdl_launch_dependents()
    t_safe = kl.where(total > 0.0, total, 1.0)
    out = acc / t_safe
    kl.store(out_ptr + (b.to(kl.int64) * o_sb_u + s * o_ss_u + h * o_sh_u) * 8 + cols,
             out.to(kl.bfloat16), mask=valid)
    lse = kl.where(total > 0.0, m + kl.log2(t_safe) * LN2, float("-inf"))
    kl.store(lse_ptr + qrow + kl.arange(0, 1), lse, mask=valid & (write_lse != 0))


@kiln.jit(num_warps=8, do_not_specialize=[
    "H", "S", "extra", "n_splits", "page_size", "num_pages", "max_rows", "row_u", "bt_s0",
    "q_sb_u", "q_ss_u", "q_sh_u", "o_sb_u", "o_ss_u", "o_sh_u", "final", "write_lse"])
def mla_attention_tma_kernel(q_ptr, lat_desc, rope_desc, cache_ptr, bt_ptr, len_ptr,
                             o_part_ptr, lse_part_ptr, out_ptr, lse_ptr, H, S, extra, n_splits,
                             page_size, num_pages, max_rows, row_u, bt_s0, q_sb_u, q_ss_u,
                             q_sh_u, o_sb_u,
                             o_ss_u, o_sh_u, final, write_lse, qk_scale, S_PAD: kl.constexpr,
                             BLOCK_H: kl.constexpr, BN: kl.constexpr, STAGES: kl.constexpr,
                             LAT_W: kl.constexpr):
    """The bf16 cache through TMA (module docstring, "Two kernels"). Program (split, head
    block, request b), 64 query rows (S_PAD drafts of BLOCK_H heads, the rest padding) and
    all 512 value columns on 8 warps: every dot's warpgroups split its columns (the score's
    BN keys, the values' LAT_W), each holding [64, 256] of the output. ``lat_desc``
    ``tensordesc<bf16,BNxLAT_W,sw128>`` and ``rope_desc`` ``tensordesc<bf16,BNx64,sw128>``
    over the cache's rows [num_pages * page_size, 576]; the other arguments as
    ``mla_attention_kernel``'s. ``LAT_W``: the latent box's width, 256 (sm_90a: three score
    dots and two value dots, all wgmma on the ring, each latent slot read in place by its
    score dot as kᵀ and its value dot; p staged once for both) or 128 (sm_100a and sm_103a,
    where the dots fall to mma.sync, whose staging buffers stay small so: five score dots
    and four value dots of 128 columns; tcgen05 would want M = 128). A block table entry
    outside [0, num_pages) becomes row -1's page, out of the descriptor's bounds: TMA fills
    it with zeros, as the pointer kernel's masks do. The boxes cover whole blocks only: a
    request's last rows, when its total is not a multiple of BN, are one block read through
    ``cache_ptr`` (row stride ``row_u`` in 16-byte units) with the rows past the total
    masked to zero, so that no row past a request's length reaches a dot (its weight is 0,
    but 0 * NaN is NaN)."""
    split = kl.program_id(0)
    hb = kl.program_id(1)
    b = kl.program_id(2)
    b64 = b.to(kl.int64)
    kl.pdl_wait()  # q, the cache and the tables may come from the previous kernels
    length, total, lo, hi = _split_rows(len_ptr, b, extra, max_rows, n_splits, split, BN)

    r = kl.arange(0, 64)
    s_of = r // BLOCK_H
    h = hb * BLOCK_H + r % BLOCK_H
    row_ok = (s_of < S) & (h < H)
    seen = kl.minimum(total - S + s_of, hi - 1)  # the last key row r sees in this split
    q_row = q_ptr + (b64 * q_sb_u + s_of * q_ss_u + h * q_sh_u) * 8
    qm = row_ok[:, None]
    cw = kl.arange(0, LAT_W)
    # the latent in boxes of LAT_W columns, each a score dot's kᵀ and a value dot's B
    q0 = kl.load(q_row[:, None] + cw[None, :], mask=qm, other=0.0)
    q1 = kl.load(q_row[:, None] + LAT_W + cw[None, :], mask=qm, other=0.0)
    if LAT_W == 128:
        q2 = kl.load(q_row[:, None] + 256 + cw[None, :], mask=qm, other=0.0)
        q3 = kl.load(q_row[:, None] + 384 + cw[None, :], mask=qm, other=0.0)
    qr = kl.load(q_row[:, None] + KV_LORA + kl.arange(0, ROPE)[None, :], mask=qm, other=0.0)
    kl.pdl_launch_dependents()

    keys = kl.arange(0, BN)
    bt_row = bt_ptr + b64 * bt_s0
    m_i = kl.full((64,), float("-inf"), kl.float32)
    l_i = kl.zeros((64,), kl.float32)
    acc0 = kl.zeros((64, LAT_W), kl.float32)
    acc1 = kl.zeros((64, LAT_W), kl.float32)
    if LAT_W == 128:
        acc2 = kl.zeros((64, LAT_W), kl.float32)
        acc3 = kl.zeros((64, LAT_W), kl.float32)
    # [lo, full) in whole blocks (lo is a multiple of BN; an empty split, lo = hi = total,
    # has no last block)
    full = kl.maximum(lo, hi // BN * BN)
    for n in kl.range(lo, full, BN, num_stages=STAGES):
        page = kl.load(bt_row + n // page_size)
        page = kl.where((page >= 0) & (page < num_pages), page, -1)
        row = page * page_size + n % page_size
        k0 = lat_desc.load([row, 0])
        k1 = lat_desc.load([row, LAT_W])
        kr = rope_desc.load([row, KV_LORA])
        s = kl.dot(q0, k0.T)
        s = kl.dot(q1, k1.T, s)
        if LAT_W == 128:
            k2 = lat_desc.load([row, 256])
            k3 = lat_desc.load([row, 384])
            s = kl.dot(q2, k2.T, s)
            s = kl.dot(q3, k3.T, s)
        s = kl.dot(qr, kr.T, s)
        s = kl.where((n + keys)[None, :] <= seen[:, None], s, float("-inf"))
        p, alpha, m_i, l_i = _online_softmax(s, m_i, l_i, qk_scale)
        pb = p.to(kl.bfloat16)
        acc0 = kl.dot(pb, k0, acc0 * alpha[:, None])
        acc1 = kl.dot(pb, k1, acc1 * alpha[:, None])
        if LAT_W == 128:
            acc2 = kl.dot(pb, k2, acc2 * alpha[:, None])
            acc3 = kl.dot(pb, k3, acc3 * alpha[:, None])
    if full < hi:  # the request's last rows: one block through pointers, masked past hi,
        # by the pointer kernel's group helpers (128-column dots, as on sm_100a)
        key = full + keys
        page = kl.load(bt_row + full // page_size)
        good = (key < hi) & (page >= 0) & (page < num_pages)
        at = (kl.where(good, page * page_size + key % page_size, 0).to(kl.int64)
              * row_u.to(kl.int64))  # the rows, in 16-byte units
        kr = kl.load(cache_ptr + (at * 8 + KV_LORA)[:, None] + kl.arange(0, ROPE)[None, :],
                     mask=good[:, None], other=0.0)
        s = kl.dot(qr, kr.T)
        for g in kl.static_range(KV_LORA // GROUP):
            qg = kl.load(q_row[:, None] + g * GROUP + kl.arange(0, GROUP)[None, :], mask=qm,
                         other=0.0)
            s = _group_scores(s, qg, cache_ptr, cache_ptr, at, g, good, False)
        s = kl.where(key[None, :] <= seen[:, None], s, float("-inf"))
        p, alpha, m_i, l_i = _online_softmax(s, m_i, l_i, qk_scale)
        if LAT_W == 128:
            acc0 = _group_values(acc0, p, alpha, cache_ptr, cache_ptr, at, 0, good, False)
            acc1 = _group_values(acc1, p, alpha, cache_ptr, cache_ptr, at, 1, good, False)
            acc2 = _group_values(acc2, p, alpha, cache_ptr, cache_ptr, at, 2, good, False)
            acc3 = _group_values(acc3, p, alpha, cache_ptr, cache_ptr, at, 3, good, False)
        else:  # each [64, 256] accumulator as two [64, 128] halves for the group dots
            acc0 = _two_groups(acc0, p, alpha, cache_ptr, at, 0, good)
            acc1 = _two_groups(acc1, p, alpha, cache_ptr, at, 2, good)

    l_safe = kl.where(l_i > 0.0, l_i, 1.0)
    lse = kl.where(l_i > 0.0, (m_i + kl.log2(l_safe)) * LN2, float("-inf"))
    ok = row_ok & (length >= 0)
    qrow = (b64 * S + s_of) * H + h  # the query row's index in [B, S, H]
    part = qrow * n_splits + split
    out_row = (b64 * o_sb_u + s_of * o_ss_u + h * o_sh_u) * 8
    _store_rows(o_part_ptr, out_ptr, acc0, l_safe, part, out_row, cw, ok, final)
    _store_rows(o_part_ptr, out_ptr, acc1, l_safe, part, out_row, cw + LAT_W, ok, final)
    if LAT_W == 128:
        _store_rows(o_part_ptr, out_ptr, acc2, l_safe, part, out_row, cw + 256, ok, final)
        _store_rows(o_part_ptr, out_ptr, acc3, l_safe, part, out_row, cw + 384, ok, final)
    kl.store(lse_part_ptr + part, lse, mask=ok & (final == 0))
    kl.store(lse_ptr + qrow, lse, mask=ok & (final != 0) & (write_lse != 0))


@kiln.jit
def _two_groups(acc, p, alpha, cache_ptr, at, g, good):
    """``_group_values`` of a [64, 256] accumulator: groups g and g + 1 of the bf16 cache
    into its two [64, 128] halves."""
    a0, a1 = kl.split(kl.permute(kl.reshape(acc, 64, 2, GROUP), 0, 2, 1))
    a0 = _group_values(a0, p, alpha, cache_ptr, cache_ptr, at, g, good, False)
    a1 = _group_values(a1, p, alpha, cache_ptr, cache_ptr, at, g + 1, good, False)
    return kl.reshape(kl.permute(kl.join(a0, a1), 0, 2, 1), 64, 2 * GROUP)


# ---------------------------------------------------------------------------
# Settings, launch configurations, AOT specializations
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Settings:
    """MLA attention's tuning (docs/kernels/mla_attention.md, "Implementation")."""
    block_n: int = 32  # KV rows an iteration (bf16: no spill at any tile shape; FP8 spills
    # 500-800 bytes: its partial scores are scaled before they are summed)
    stages: int = 2  # the pointer kernel's gather rings (cp.async): key blocks in flight
    num_warps: int = 4  # 16- and 32-row tiles
    wide_warps: int = 8  # 64-row tiles: mma.sync on 8 warps. On 4 warps they run on wgmma
    # (staged operands, BLOCK_N 64), 260-1,050 bytes of spill, and ptxas 13.0 then emits a
    # different cubin on every run of the same PTX: not a reproducible bundle
    merge_block: int = 16  # splits the merge reads at a time ([16, 512] fp32)
    splits_per_sm: int = 2  # the programs the split count aims for, per SM
    min_chunk: int = 256  # rows below which a request is not split further
    # The TMA kernel (bf16, page_size % 64 == 0; the bundle holds the defaults'):
    tma: bool = True  # take it where it applies (on the H100 1.7-2x the pointer kernel from
    # 32 query rows a program, bench/results/mla/h100-in-place-36.md)
    tma_min_rows: int = 32  # ... and where a program's query rows (S_PAD * BLOCK_H of
    # tile_shape) reach this: below, the pointer kernel's one 16-row tile (S = 1, H <= 16;
    # H100: 1.46-1.52x the TMA kernel's 64-row tile)
    tma_block_n: int = 64  # key rows a step, a divisor of 64 (H100: 1.45-1.6x 32 rows,
    # each step's barriers and waits paid half as often; 16 rows: 0.6x)
    tma_stages: int = 2  # the ring's depth (a stage: the latent and rope boxes; 3
    # of 64 rows do not fit a block's 227 KiB; of 32 rows, 3 or 4 measured no faster)
    tma_latent_width: int = 256  # the latent box's width on sm_90a (256: three score dots
    # and one value dot; 128: five and two). sm_100a/sm_103a always take 128: 256 does not
    # fit their mma.sync staging
    tma_blackwell: bool = False  # take the TMA kernel on sm_100a/sm_103a too. Off: there its
    # dots run on mma.sync with 1,072-1,136 bytes of spill, and it is not measured yet


SETTINGS = Settings()


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def tile_shape(h: int, s: int) -> tuple:
    """(S_PAD, BLOCK_H, VPARTS) for H heads and S drafts: S padded to a power of two, the
    heads a program so that BLOCK_M = S_PAD * BLOCK_H is 16 rows (mma.sync's tile; K3's 12
    heads a rank at S = 1) or 64 (on 8 warps, ``Settings.wide_warps``) where more rows are
    needed;
    the 512 value columns in two parts from 32 rows on (the accumulator's registers: a
    [32, 512] fp32 accumulator on 4 warps spilled)."""
    s_pad = _pow2(s)
    block_h = 16 if h <= 16 and s_pad <= 4 else 64 // s_pad
    return s_pad, block_h, 2 if s_pad * block_h >= 32 else 1


def launch_config(h: int, s: int, fp8: bool, settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps) of the partial kernel."""
    shape = tile_shape(h, s)
    return ("mla_attention" + ("_fp8" if fp8 else ""), _constexprs(shape, fp8, settings),
            _warps(shape, settings))


def _warps(shape: tuple, settings: Settings = SETTINGS) -> int:
    return settings.wide_warps if shape[0] * shape[1] >= 64 else settings.num_warps


def _constexprs(shape: tuple, fp8: bool, settings: Settings = SETTINGS) -> dict:
    s_pad, block_h, vparts = shape
    return {"S_PAD": s_pad, "BLOCK_H": block_h, "BLOCK_N": settings.block_n, "VPARTS": vparts,
            "FP8": bool(fp8), "STAGES": settings.stages}


#: Page sizes the TMA kernel takes: multiples of 64 (its key blocks never cross a page).
TMA_PAGE_ALIGN = 64
#: The TMA kernel's warps: two warpgroups splitting each dot's columns (wgmma's M is 64 rows
#: a warpgroup).
TMA_WARPS = 8


def tma_launch_config(h: int, s: int, lat_w: int, settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps) of the TMA kernel: ``tile_shape``'s drafts and
    heads a program, in a 64-row tile, the value columns always in two programs."""
    return ("mla_attention_tma", _tma_constexprs(tile_shape(h, s), lat_w, settings),
            TMA_WARPS)


def _tma_constexprs(shape: tuple, lat_w: int, settings: Settings = SETTINGS) -> dict:
    s_pad, block_h = shape[:2]
    return {"S_PAD": s_pad, "BLOCK_H": block_h, "BN": settings.tma_block_n,
            "STAGES": settings.tma_stages, "LAT_W": lat_w}


def tma_latent_width(arch: str, settings: Settings = SETTINGS) -> Optional[int]:
    """The TMA kernel's latent box width on ``arch``: ``tma_latent_width`` on sm_90a, 128 on
    sm_100a/sm_103a with ``tma_blackwell`` (256 does not fit their shared memory), else None
    (the pointer kernel takes the call there)."""
    if arch.startswith("sm_90"):
        return settings.tma_latent_width
    return 128 if settings.tma_blackwell else None


def merge_config(settings: Settings = SETTINGS) -> tuple:
    return "mla_merge", {"BLOCK_S": settings.merge_block}, settings.num_warps


def num_splits_for(bsz: int, h: int, s: int, max_rows: int, sms: Optional[int],
                   settings: Settings = SETTINGS, tma: bool = False) -> int:
    """The split count: at most enough programs for ``splits_per_sm`` an SM (132 SMs when
    unknown) in one wave, no chunk below ``min_chunk`` rows of the longest possible request
    (``max_rows``: the block table's pages times the page size), at most MAX_SPLITS; of
    those, the largest whose last wave is at least 90 % full (else the fullest): 5 splits
    of 64 requests are 320 programs for 264 slots, 1.21 waves, where 4 fill one (H100,
    H = 12: 124 against 166 us, bench/results/mla/h100-splits-38.md). ``tma``: the TMA
    kernel's programs (always two value parts a head block)."""
    _, block_h, vparts = tile_shape(h, s)
    programs = max(1, bsz * -(-h // block_h) * (1 if tma else vparts))
    slots = settings.splits_per_sm * (sms or 132)
    cap = max(1, min(-(-slots // programs), -(-max_rows // settings.min_chunk), MAX_SPLITS))

    def fill(n: int) -> float:
        return programs * n / (-(-programs * n // slots) * slots)

    full = [n for n in range(1, cap + 1) if fill(n) >= 0.9]
    return max(full) if full else max(range(1, cap + 1), key=lambda n: (fill(n), n))


def _signature(fp8: bool) -> dict:
    ints = ("H", "S", "extra", "n_splits", "page_size", "page_u", "row_u", "num_pages",
            "max_rows", "bt_s0", "q_sb_u", "q_ss_u", "q_sh_u", "o_sb_u", "o_ss_u", "o_sh_u",
            "final", "write_lse")
    return {"q_ptr": "*bf16", "cache_lat": "*f8e4m3" if fp8 else "*bf16",
            "cache_f32": "*f32" if fp8 else "*bf16", "cache_bf16": "*bf16", "bt_ptr": "*i32",
            "len_ptr": "*i32", "o_part_ptr": "*f32", "lse_part_ptr": "*f32", "out_ptr": "*bf16",
            "lse_ptr": "*f32", **{i: "i32" for i in ints}, "qk_scale": "f32"}


def tma_signature(lat_w: int, settings: Settings = SETTINGS) -> dict:
    """The TMA kernel's parameter types (its latent boxes ``lat_w`` wide)."""
    ints = ("H", "S", "extra", "n_splits", "page_size", "num_pages", "max_rows", "row_u",
            "bt_s0", "q_sb_u", "q_ss_u", "q_sh_u", "o_sb_u", "o_ss_u", "o_sh_u", "final",
            "write_lse")
    bn = settings.tma_block_n
    return {"q_ptr": "*bf16", "lat_desc": f"tensordesc<bf16,{bn}x{lat_w},sw128>",
            "rope_desc": f"tensordesc<bf16,{bn}x{ROPE},sw128>", "cache_ptr": "*bf16",
            "bt_ptr": "*i32",
            "len_ptr": "*i32", "o_part_ptr": "*f32", "lse_part_ptr": "*f32",
            "out_ptr": "*bf16", "lse_ptr": "*f32", **{i: "i32" for i in ints},
            "qk_scale": "f32"}


#: The TMA kernel's vector accesses: q, the cache's last rows, the workspace and out.
TMA_ALIGNED = ("q_ptr", "cache_ptr", "o_part_ptr", "out_ptr")

MERGE_SIGNATURE = {"o_part_ptr": "*f32", "lse_part_ptr": "*f32", "len_ptr": "*i32",
                   "out_ptr": "*bf16", "lse_ptr": "*f32", "H": "i32", "S": "i32",
                   "n_splits": "i32", "o_sb_u": "i32", "o_ss_u": "i32", "o_sh_u": "i32",
                   "write_lse": "i32"}
#: The partial kernel's vector accesses: q, the cache views, the workspace and out.
ALIGNED = ("q_ptr", "cache_lat", "cache_f32", "cache_bf16", "o_part_ptr", "out_ptr")
#: The bundle's tile shapes: every one ``tile_shape`` picks for S <= MAX_S (H <= 16 or not).
SHAPES = sorted({tile_shape(h, s) for h in (16, 17) for s in range(1, MAX_S + 1)})

#: The TMA kernel's archs in the bundle and its latent box width there (``tma_latent_width``
#: with ``Settings(tma=True)``, and ``tma_blackwell`` on sm_100a/sm_103a): a box 256 wide
#: does not fit sm_100a/sm_103a's shared memory, 128 is not sm_90a's default, so each width
#: is a Spec of its archs only.
TMA_BUNDLE_WIDTHS = ((("sm_90a",), tma_latent_width("sm_90a")),
                     (("sm_100a", "sm_103a"),
                      tma_latent_width("sm_100a", Settings(tma_blackwell=True))))
#: The TMA kernel's tile shapes (S_PAD, BLOCK_H): every one ``tile_shape`` picks, any H.
#: The tile shapes the default settings send to the TMA kernel (from ``tma_min_rows`` rows).
TMA_SHAPES = sorted({shape[:2] for shape in SHAPES
                     if shape[0] * shape[1] >= SETTINGS.tma_min_rows})

AOT_SPECIALIZATIONS = [
    Spec(mla_attention_kernel, name="mla_attention" + ("_fp8" if fp8 else ""),
         signature=_signature(fp8),
         constexprs=_constexprs(shape, fp8), divisibility=ALIGNED, num_warps=_warps(shape))
    for fp8 in (False, True) for shape in SHAPES
] + [
    Spec(mla_attention_tma_kernel, name="mla_attention_tma", signature=tma_signature(lat_w),
         constexprs=_tma_constexprs(shape, lat_w), divisibility=TMA_ALIGNED,
         num_warps=TMA_WARPS, archs=archs)
    for archs, lat_w in TMA_BUNDLE_WIDTHS for shape in TMA_SHAPES
] + [
    Spec(mla_merge_kernel, name="mla_merge", signature=MERGE_SIGNATURE,
         constexprs=merge_config()[1], divisibility=("o_part_ptr", "out_ptr"),
         num_warps=merge_config()[2]),
]


# ---------------------------------------------------------------------------
# Wrappers
# ---------------------------------------------------------------------------

def _cache_layout(op: str, cache: Any) -> tuple:
    """(fp8, pages, page_size, page stride, row stride) of a bf16 [pages, page_size, 576] or
    uint8 [pages, page_size, 656] cache, the strides in 16-byte units."""
    name = L.check_dtype(op, "cache", cache, ("bfloat16", "uint8"))
    fp8 = name == "uint8"
    width, item = (FP8_ROW_BYTES, 1) if fp8 else (BF16_ROW, 2)
    pages, page_size, _ = L.check_shape(op, "cache", cache, (None, None, width))
    if page_size < 1:
        raise ValueError(f"{op}: cache pages must hold at least one row, got shape "
                         f"{list(L.shape(cache))}")
    L.check_inner_contiguous(op, "cache", cache)
    st = L.strides(cache)
    page_b = st[0] * item if pages > 1 else page_size * width * item
    row_b = st[1] * item if page_size > 1 else width * item
    for what, v in (("page", page_b), ("row", row_b)):
        if v % 16 or v <= 0:
            raise ValueError(f"{op}: the cache's {what} stride ({v} bytes) must be a positive "
                             f"multiple of 16 bytes")
        L.check_int32_extent(op, f"the cache's {what} stride in 16-byte units", v // 16)
    L.check_int32_extent(op, "the cache's pages", pages)
    return fp8, pages, page_size, page_b // 16, row_b // 16


def _units(op: str, what: str, t: Any, dims: tuple) -> list:
    """The strides of t's dimensions ``dims`` (None: a dimension t lacks, stride 0) in
    8-element (16-byte) units."""
    st, sh = L.strides(t), L.shape(t)
    out = []
    for i in dims:
        v = st[i] if i is not None and sh[i] > 1 else 0
        if v % 8:
            raise ValueError(f"{op}: the stride of {what}'s dimension {i} ({v}) must be a "
                             f"multiple of 8 elements (16 bytes)")
        L.check_int32_extent(op, f"the stride of {what}'s dimension {i}", v // 8)
        out.append(v // 8)
    return out


#: The output, lse and the workspace (a module name: the interpreter tests give host arrays).
_empty = L.empty


def _cache_views(cache: Any, fp8: bool) -> tuple:
    """The cache as the kernel's three pointers: the latent (bf16 or e4m3), the FP8
    scales (fp32), the rope values (bf16)."""
    if not fp8:
        return cache, cache, cache
    import torch

    return (cache.view(torch.float8_e4m3fn), cache.view(torch.float32),
            cache.view(torch.bfloat16))


def _tma_row_stride(cache: Any, pages: int, page_size: int,
                    settings: Settings) -> Optional[int]:
    """The bf16 cache's row stride (elements) where the TMA kernel can read the cache as one
    2-D tensor of rows [pages * page_size, 576]: the page size a multiple of 64 and of
    ``tma_block_n``, the pages one after the other (page stride = page_size row strides),
    rows at least 576 elements apart and a multiple of 16 bytes, the rows within int32
    (TMA's coordinates); else None (the pointer kernel reads it)."""
    if page_size % TMA_PAGE_ALIGN or page_size % settings.tma_block_n:
        return None
    st = L.strides(cache)
    row = st[1]
    if row < BF16_ROW or row % 8 or (pages > 1 and st[0] != page_size * row):
        return None
    if pages * page_size > L.INT32_MAX:
        return None
    return row


def _device_arch(t: Any) -> str:
    """The kiln arch of t's device: a torch CUDA tensor's compute capability, the current
    device for other CUDA arrays, sm_90a for host arrays (the interpreter runs either
    form)."""
    dev = getattr(t, "device", None)
    if getattr(dev, "type", None) == "cuda":
        import torch

        major, minor = torch.cuda.get_device_capability(dev)
        return {(10, 0): "sm_100a", (10, 3): "sm_103a"}.get((major, minor), "sm_90a")
    if hasattr(t, "__cuda_array_interface__"):
        from kiln.runtime import device_arch

        return device_arch()
    return "sm_90a"


def _use_tma(q: Any, cache: Any, fp8: bool, pages: int, page_size: int, h: int, s: int,
             settings: Settings) -> Optional[tuple]:
    """(row stride, latent box width) where the TMA kernel takes this call, else None: a
    bf16 cache in its layout (``_tma_row_stride``), at least ``tma_min_rows`` query rows a
    program, on sm_90a (on sm_100a/sm_103a only with ``tma_blackwell``: the width 128
    there; ``tma_latent_width``), by JIT or from the bundle (its ``TMA_BUNDLE_WIDTHS``)."""
    if not settings.tma or fp8 or not tma_rows(h, s, settings):
        return None
    row = _tma_row_stride(cache, pages, page_size, settings)
    if row is None:
        return None
    lat_w = tma_latent_width(_device_arch(q), settings)
    return None if lat_w is None else (row, lat_w)


def tma_rows(h: int, s: int, settings: Settings = SETTINGS) -> bool:
    """Whether a program's query rows (S_PAD * BLOCK_H of ``tile_shape``) reach
    ``tma_min_rows``, where the TMA kernel takes a call it applies to."""
    s_pad, block_h, _ = tile_shape(h, s)
    return s_pad * block_h >= settings.tma_min_rows


def _tma_descriptors(cache: Any, pages: int, page_size: int, row: int, lat_w: int,
                     settings: Settings) -> tuple:
    """The latent ([BN, lat_w] boxes) and rope ([BN, 64]) TMA descriptors, 128-byte
    swizzled, over the cache's rows as one 2-D tensor [pages * page_size, 576] (row stride
    ``row`` elements)."""
    shape, strides, bn = [pages * page_size, BF16_ROW], [row, 1], settings.tma_block_n
    return (kiln.TensorDescriptor(cache, [bn, lat_w], shape=shape, strides=strides,
                                  swizzle=128),
            kiln.TensorDescriptor(cache, [bn, ROPE], shape=shape, strides=strides,
                                  swizzle=128))


def _attention(op: str, q: Any, cache: Any, block_table: Any, lengths: Any, decode: bool,
               scale: Optional[float], num_splits: Optional[int], out: Optional[Any],
               return_lse: bool, settings: Settings) -> Any:
    """Both ops: q [B, S, H, 576] (decode: [B, H, 576], S = 1) -> out [B, S, H, 512] (decode:
    [B, H, 512]) and, with return_lse, lse [B, S, H] ([B, H])."""
    L.check_dtype(op, "q", q, ("bfloat16",))
    if decode:
        bsz, h, _ = L.check_shape(op, "q", q, (None, None, BF16_ROW))
        s, dims, extra = 1, (0, None, 1), 0
    else:
        bsz, s, h, _ = L.check_shape(op, "q", q, (None, None, None, BF16_ROW))
        dims, extra = (0, 1, 2), s
        if not 1 <= s <= MAX_S:
            raise ValueError(f"{op}: S (the draft rows a request) must be in [1, {MAX_S}], "
                             f"got {s}")
    if h < 1:
        raise ValueError(f"{op}: q must have at least one head, got shape {list(L.shape(q))}")
    L.check_inner_contiguous(op, "q", q)
    q_u = _units(op, "q", q, dims)
    fp8, pages, page_size, page_u, row_u = _cache_layout(op, cache)
    what = "cache_seqlens" if decode else "lengths"
    L.check_dtype(op, "block_table", block_table, ("int32",))
    L.check_dtype(op, what, lengths, ("int32",))
    _, max_pages = L.check_shape(op, "block_table", block_table, (bsz, None))
    L.check_shape(op, what, lengths, (bsz,))
    L.check_inner_contiguous(op, "block_table", block_table)
    L.check_contiguous(op, what, lengths)
    bt_s0 = L.strides(block_table)[0] if bsz > 1 else 0
    L.check_int32_extent(op, "the block table's row stride", bt_s0)
    max_rows = max_pages * page_size
    L.check_int32_extent(op, "the rows a request (max_pages * page_size + S)", max_rows + extra)
    if scale is None:
        scale = BF16_ROW ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (
            math.isfinite(scale) and scale > 0):
        raise ValueError(f"{op}: scale must be a finite positive float, got {scale!r}")
    if num_splits is not None:
        if (isinstance(num_splits, bool) or not isinstance(num_splits, int)
                or not 1 <= num_splits <= MAX_SPLITS):
            raise ValueError(f"{op}: num_splits must be an int in [1, {MAX_SPLITS}], got "
                             f"{num_splits!r}")
        L.check_int32_extent(op, "the query rows B * S * H * num_splits",
                             bsz * s * h * num_splits)
    shape = (bsz, h) if decode else (bsz, s, h)
    if out is None:
        out = _empty(q, shape + (KV_LORA,), "bfloat16")
    else:
        L.check_dtype(op, "out", out, ("bfloat16",))
        L.check_shape(op, "out", out, shape + (KV_LORA,))
        L.check_inner_contiguous(op, "out", out)
    o_u = _units(op, "out", out, dims)
    for name, t in (("q", q), ("cache", cache), ("out", out)):
        L.check_aligned(op, name, t)
    L.check_same_device(op, ("q", q), ("cache", cache), ("block_table", block_table),
                        (what, lengths), ("out", out))
    lse = _empty(q, shape, "float32") if return_lse else None
    if bsz == 0:
        return (out, lse) if return_lse else out
    tma = _use_tma(q, cache, fp8, pages, page_size, h, s, settings)
    if num_splits is None:
        num_splits = num_splits_for(bsz, h, s, max_rows, L.num_sms(q), settings,
                                    tma is not None)
        L.check_int32_extent(op, "the query rows B * S * H * num_splits",
                             bsz * s * h * num_splits)
    final = num_splits == 1
    rows = bsz * s * h
    o_part = _empty(q, (rows if not final else 1, num_splits, KV_LORA), "float32")
    lse_part = _empty(q, (rows if not final else 1, num_splits), "float32")
    lse_arg = lse if return_lse else lse_part
    tail = (bt_s0, *q_u, *o_u, int(final), int(return_lse), float(scale) * LOG2E)
    if tma is not None:
        row, lat_w = tma
        name, constexprs, num_warps = tma_launch_config(h, s, lat_w, settings)
        L.launch(mla_attention_tma_kernel, name,
                 (num_splits, -(-h // constexprs["BLOCK_H"]), bsz),
                 (q, *_tma_descriptors(cache, pages, page_size, row, lat_w, settings),
                  cache, block_table, lengths, o_part, lse_part, out, lse_arg, h, s, extra,
                  num_splits, page_size, pages, max_rows, row // 8, *tail), constexprs,
                 num_warps)
    else:
        name, constexprs, num_warps = launch_config(h, s, fp8, settings)
        heads = -(-h // constexprs["BLOCK_H"]) * constexprs["VPARTS"]
        L.launch(mla_attention_kernel, name, (num_splits, heads, bsz),
                 (q, *_cache_views(cache, fp8), block_table, lengths, o_part, lse_part, out,
                  lse_arg, h, s, extra, num_splits, page_size, page_u, row_u, pages,
                  max_rows, *tail), constexprs, num_warps)
    if not final:
        mname, mconst, mwarps = merge_config(settings)
        L.launch(mla_merge_kernel, mname, (h, s, bsz),
                 (o_part, lse_part, lengths, out, lse_arg, h, s, num_splits, *o_u,
                  int(return_lse)), mconst, mwarps)
    return (out, lse) if return_lse else out


def verify_splitkv(q: Any, cache: Any, block_table: Any, lengths: Any,
                   scale: Optional[float] = None, *, num_splits: Optional[int] = None,
                   out: Optional[Any] = None, return_lse: bool = False,
                   settings: Settings = SETTINGS) -> Any:
    """Speculative target-verify attention (module docstring): q bf16 [B, S, H, 576] (S <= 8
    draft tokens; strides multiples of 8 elements, the last dim contiguous), cache bf16
    [pages, page_size, 576] or uint8 [pages, page_size, 656] (the FP8 layout; row and page
    strides multiples of 16 bytes), block_table int32 [B, max_pages], lengths int32 [B] (the
    prefix before the drafts, which are each request's last S rows; < 0: a padded entry,
    its output rows untouched), scale (default 576^-0.5), num_splits (default: from B, H,
    S, the block table's capacity and the SM count), out bf16 [B, S, H, 512]. Returns out,
    or (out, lse fp32 [B, S, H]) with return_lse. Every check raises before any launch.

    A bf16 cache whose page size is a multiple of 64 (pages one after the other) is read
    through TMA (module docstring, "Two kernels"); rows past a request's length are never
    read into a result, whatever they hold."""
    return _attention("verify_splitkv", q, cache, block_table, lengths, False, scale,
                      num_splits, out, return_lse, settings)


def mla_decode(q: Any, cache: Any, block_table: Any, cache_seqlens: Any,
               scale: Optional[float] = None, *, num_splits: Optional[int] = None,
               out: Optional[Any] = None, return_lse: bool = False,
               settings: Settings = SETTINGS) -> Any:
    """Decode attention, one query a request (module docstring): q bf16 [B, H, 576],
    cache_seqlens int32 [B] the rows each request sees, the new token's included (0: out
    zeros, lse -inf; < 0: a padded entry, untouched); the rest as verify_splitkv. Returns
    out bf16 [B, H, 512], or (out, lse fp32 [B, H])."""
    return _attention("mla_decode", q, cache, block_table, cache_seqlens, True, scale,
                      num_splits, out, return_lse, settings)
