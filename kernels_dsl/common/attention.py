"""Softmax attention on plain ``kl.dot``: the causal flash-attention forward (varlen, GQA,
and the dense [B, H, T, D] form SDPA takes) and split-KV flash decoding with its merge.
The specification (shapes, masks, the merge formula) is docs/kernels/attention.md.

    out, lse = flash_attn_varlen(q, k, v, cu_seqlens, max_seqlen, return_lse=True)
    out = flash_attn(q, k, v)                  # q [B, Hq, T, D], k/v [B, Hkv, T, D]
    out = flash_decode(q, k_cache, v_cache, lengths)

Every dot is a ``kl.dot`` of register tiles. On sm_90a the compiler runs each on wgmma
(``kiln-tile-accelerate-dot``: q kᵀ with q staged in shared memory once and k read where
TMA put it in the key loop's ring, p·v with p, the softmax of the q kᵀ accumulator, read
from registers as wgmma's A), and keeps s, p, the output accumulator and the running max
and sum in the wgmma registers across the key loop.
On sm_100a/sm_103a the same source runs on tcgen05.mma (q staged in shared memory once, k
and v read in their ring slots, p stored; the scores and the accumulator read back from
Tensor Memory each block).

The online softmax works in base 2: ``qk_scale = sm_scale * log2(e)`` is folded into one
multiply of s, so p = exp2(s * qk_scale - m) with m the running row max of s * qk_scale.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import kiln
import kiln.language as kl

LOG2E = 1.0 / math.log(2.0)
LN2 = math.log(2.0)
HEAD_DIMS = (64, 128)


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

@kiln.jit
def _mask_scores(s, limit, CAUSAL: kl.constexpr):
    """s with -inf where key c of row r (of the block) is hidden: c - r > limit (CAUSAL) or
    c > limit. On sm_90a the compiler builds the mask in the registers s lives in (the
    wgmma accumulator's) from the coordinates each thread holds, so s stays there."""
    r = kl.arange(0, s.shape[0])
    c = kl.arange(0, s.shape[1])
    if CAUSAL:
        visible = c[None, :] - r[:, None] <= limit
    else:
        visible = c[None, :] <= limit
    return kl.where(visible, s, float("-inf"))


@kiln.jit
def _softmax_step(s, v, acc, m_i, l_i, qk_scale):
    """One key block of the online softmax, its scores s = q kᵀ given: the running max m_i
    and sum l_i (both of s * qk_scale, base 2) and the accumulator rescaled, then acc += p v
    for the [BN, D] tile v. The rows of v under a -inf score must be finite."""
    m_new = kl.maximum(m_i, kl.max(s, axis=1) * qk_scale)
    alpha = kl.exp2(m_i - m_new)
    p = kl.exp2(s * qk_scale - m_new[:, None])
    l_i = l_i * alpha + kl.sum(p, axis=1)
    acc = kl.dot(p.to(kl.bfloat16), v, acc * alpha[:, None])
    return acc, m_new, l_i


@kiln.jit(fp_fusion=True)
def flash_fwd_kernel(q_ptr, k_desc, v_desc, o_ptr, lse_ptr, cu_seqlens_ptr, seqlen, qk_scale,
                     group, stride_qb, stride_qt, stride_qh, stride_ob, stride_ot, stride_oh,
                     stride_lb, stride_lh, D: kl.constexpr, BM: kl.constexpr,
                     BN: kl.constexpr, CAUSAL: kl.constexpr, VARLEN: kl.constexpr,
                     STORE_LSE: kl.constexpr, STAGES: kl.constexpr,
                     WARP_SPECIALIZE: kl.constexpr):
    """o = softmax(q kᵀ · sm_scale, causal) v for one [BM] block of queries of one head of
    one sequence; grid (cdiv(max_seqlen, BM), Hq, B), the query blocks taken last to first
    (the longest causal rows start first).

    Sequence b's token t is at q_ptr + b * stride_qb + (start + t) * stride_qt + h *
    stride_qh (d contiguous), with start = cu_seqlens[b] and length cu_seqlens[b + 1] -
    start under VARLEN (the packed [T, H, D] form, stride_qb = 0), else start = 0 and length
    ``seqlen`` (the dense [B, H, T, D] form); k, v, o likewise. Query head h reads KV head
    h // group. lse (f32, natural log) of token t at lse_ptr + b * stride_lb + h * stride_lh
    + start + t.

    The key loop takes k and v through k_desc and v_desc (under VARLEN k and v seen as [1,
    T, Hkv, D], the box [1, BN, 1, D]; else [B, Hkv, T, D], the box [1, 1, BN, D]) into a
    ring of STAGES slots (kiln-tile-pipeline-loads: the next STAGES - 1 blocks in flight
    while one is computed). The blocks wholly visible to every row of the block (causal:
    the keys before the block's first query; otherwise the full BN blocks of the
    sequence) are unmasked, the rest masked (causal: the diagonal, up to the block's last
    query; otherwise the partial last block, whose keys past the sequence a box reads as
    zero, or, under VARLEN, as the next sequence's keys: finite). Queries past the
    sequence are loaded as zero and never stored."""
    kl.static_assert(BM % BN == 0, "BM must be a multiple of BN")
    m_block = kl.num_programs(0) - 1 - kl.program_id(0)
    h = kl.program_id(1)
    b = kl.program_id(2)
    if VARLEN:
        start = kl.load(cu_seqlens_ptr + b)
        length = kl.load(cu_seqlens_ptr + b + 1) - start
    else:
        start = b * 0
        length = seqlen
    m_start = m_block * BM
    kvh = h // group
    rows = m_start + kl.arange(0, BM)
    rd = kl.arange(0, D)
    row_ok = rows < length
    b64 = b.to(kl.int64)
    tok64 = start.to(kl.int64)
    q_base = q_ptr + b64 * stride_qb + tok64 * stride_qt + h.to(kl.int64) * stride_qh
    q = kl.load(q_base + rows[:, None] * stride_qt + rd[None, :], mask=row_ok[:, None],
                other=0.0)

    m_i = kl.full((BM,), float("-inf"), kl.float32)
    l_i = kl.zeros((BM,), kl.float32)
    acc = kl.zeros((BM, D), kl.float32)
    if CAUSAL:
        full_end = kl.minimum(m_start, length)
        end = kl.minimum(m_start + BM, length)
    else:
        full_end = length // BN * BN
        end = length
    full_end = kl.where(m_start < length, full_end, 0)
    end = kl.where(m_start < length, end, 0)
    for n in kl.range(0, end, BN, num_stages=STAGES, warp_specialize=WARP_SPECIALIZE):
        if VARLEN:
            k = k_desc.load([0, start + n, kvh, 0]).reshape(BN, D)
            v = v_desc.load([0, start + n, kvh, 0]).reshape(BN, D)
        else:
            k = k_desc.load([b, kvh, n, 0]).reshape(BN, D)
            v = v_desc.load([b, kvh, n, 0]).reshape(BN, D)
        s = kl.dot(q, k.T)
        if n >= full_end:
            # causal: key n + c visible to query m_start + r iff c - r <= m_start - n (keys
            # past the sequence then lie past the row too); otherwise iff n + c < length
            if CAUSAL:
                s = _mask_scores(s, m_start - n, CAUSAL=True)
            else:
                s = _mask_scores(s, length - 1 - n, CAUSAL=False)
        acc, m_i, l_i = _softmax_step(s, v, acc, m_i, l_i, qk_scale)
    # a row that saw no key (a query block past its sequence) has l_i = 0: never stored
    l_safe = kl.where(l_i > 0.0, l_i, 1.0)
    o_base = o_ptr + b64 * stride_ob + tok64 * stride_ot + h.to(kl.int64) * stride_oh
    kl.store(o_base + rows[:, None] * stride_ot + rd[None, :], acc / l_safe[:, None],
             mask=row_ok[:, None])
    if STORE_LSE:
        lse_base = lse_ptr + b64 * stride_lb + h.to(kl.int64) * stride_lh + tok64
        kl.store(lse_base + rows, (m_i + kl.log2(l_safe)) * LN2, mask=row_ok)


@kiln.jit(fp_fusion=True)
def flash_decode_kernel(q_ptr, k_desc, v_desc, k_ptr, v_ptr, o_part_ptr, lse_part_ptr,
                        lengths_ptr, chunk, qk_scale, group, stride_qb, stride_qh, stride_kb,
                        stride_kt, stride_kh, stride_vb, stride_vt, stride_vh,
                        D: kl.constexpr, BLOCK_H: kl.constexpr, BN: kl.constexpr,
                        STAGES: kl.constexpr, WARP_SPECIALIZE: kl.constexpr):
    """Split ``split`` of the KV range of request b, for the ``group`` query heads of KV
    head kvh at once; grid (n_splits, Hkv, B). The query heads are the M dimension of both
    dots, padded with zero rows to BLOCK_H (64, wgmma's M a warpgroup, on sm_90a): q is
    [BLOCK_H, D] and s [BLOCK_H, BN]. The split covers the keys [split * chunk, min((split +
    1) * chunk, lengths[b])) (chunk a multiple of BN): the full blocks unmasked, their k and
    v through k_desc and v_desc (the caches [B, L, Hkv, D], boxes [1, BN, 1, D]) into a ring
    of STAGES slots, then the request's partial last block masked, loaded from k_ptr /
    v_ptr with the keys past the length read as zero. Writes the split's normalized partial
    output (f32) to o_part [B, Hq, n_splits, D] and its log-sum-exp (natural log; -inf for
    an empty split) to lse_part [B, Hq, n_splits], both contiguous."""
    split = kl.program_id(0)
    kvh = kl.program_id(1)
    b = kl.program_id(2)
    n_splits = kl.num_programs(0)
    hq = kl.num_programs(1) * group
    length = kl.load(lengths_ptr + b)
    lo = split * chunk
    hi = kl.minimum(lo + chunk, length)
    full_end = kl.where(hi > lo, lo + (hi - lo) // BN * BN, lo)
    hi = kl.maximum(hi, lo)

    rows = kl.arange(0, BLOCK_H)
    cols = kl.arange(0, BN)
    rd = kl.arange(0, D)
    row_ok = rows < group
    heads = kvh * group + rows
    b64 = b.to(kl.int64)
    q = kl.load(q_ptr + b64 * stride_qb + heads[:, None] * stride_qh + rd[None, :],
                mask=row_ok[:, None], other=0.0)
    k_ptrs = (k_ptr + b64 * stride_kb + kvh.to(kl.int64) * stride_kh
              + cols[:, None] * stride_kt + rd[None, :])
    v_ptrs = (v_ptr + b64 * stride_vb + kvh.to(kl.int64) * stride_vh
              + cols[:, None] * stride_vt + rd[None, :])

    m_i = kl.full((BLOCK_H,), float("-inf"), kl.float32)
    l_i = kl.zeros((BLOCK_H,), kl.float32)
    acc = kl.zeros((BLOCK_H, D), kl.float32)
    for n in kl.range(lo, full_end, BN, num_stages=STAGES, warp_specialize=WARP_SPECIALIZE):
        k = k_desc.load([b, n, kvh, 0]).reshape(BN, D)
        v = v_desc.load([b, n, kvh, 0]).reshape(BN, D)
        acc, m_i, l_i = _softmax_step(kl.dot(q, k.T), v, acc, m_i, l_i, qk_scale)
    for n in range(full_end, hi, BN):  # the request's partial last block
        kv_ok = (n + cols < length)[:, None]  # the cache past the length may hold anything
        k = kl.load(k_ptrs + n * stride_kt, mask=kv_ok, other=0.0)
        v = kl.load(v_ptrs + n * stride_vt, mask=kv_ok, other=0.0)
        s = _mask_scores(kl.dot(q, k.T), length - 1 - n, CAUSAL=False)
        acc, m_i, l_i = _softmax_step(s, v, acc, m_i, l_i, qk_scale)
    l_safe = kl.where(l_i > 0.0, l_i, 1.0)
    lse = kl.where(l_i > 0.0, (m_i + kl.log2(l_safe)) * LN2, float("-inf"))
    part = (b64 * hq + heads) * n_splits + split  # [BLOCK_H] rows of [B, Hq, n_splits]
    kl.store(o_part_ptr + part[:, None] * D + rd[None, :], acc / l_safe[:, None],
             mask=row_ok[:, None])
    kl.store(lse_part_ptr + part, lse, mask=row_ok)


@kiln.jit
def flash_decode_merge_kernel(o_part_ptr, lse_part_ptr, out_ptr, n_splits, stride_ob,
                              stride_oh, D: kl.constexpr, BLOCK_S: kl.constexpr):
    """out[b, h] = bf16( Σ_i exp(lse_i - M) o_i / Σ_i exp(lse_i - M) ), M = max_i lse_i,
    over the n_splits partials of (b, h); grid (Hq, B). A request with no key (every lse_i
    = -inf) gets zeros."""
    h = kl.program_id(0)
    b = kl.program_id(1)
    row = b.to(kl.int64) * kl.num_programs(0) + h
    sp = kl.arange(0, BLOCK_S)
    rd = kl.arange(0, D)
    ok = sp < n_splits
    lse = kl.load(lse_part_ptr + row * n_splits + sp, mask=ok, other=float("-inf"))
    o = kl.load(o_part_ptr + (row * n_splits + sp)[:, None] * D + rd[None, :],
                mask=ok[:, None], other=0.0)
    m = kl.max(lse, axis=0)
    m = kl.where(m == float("-inf"), 0.0, m)
    w = kl.exp2((lse - m) * LOG2E)
    total = kl.sum(w, axis=0)
    total = kl.where(total > 0.0, total, 1.0)
    out = kl.sum(o * w[:, None], axis=0) / total
    kl.store(out_ptr + b.to(kl.int64) * stride_ob + h * stride_oh + rd, out)


# ---------------------------------------------------------------------------
# Settings and launch plans
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Settings:
    """The attention kernels' tuning (bench/attention/run.py times them; the reasoning is in
    docs/kernels/attention.md, "Implementation"). sm_90a runs the dots on wgmma, whose M is
    64 rows a warpgroup; sm_100a/sm_103a on tcgen05.mma, whose M is Tensor Memory's 128
    lanes."""
    fwd_block_m: int = 128  # sm_90a: queries a program, two warpgroups of 64 rows ...
    fwd_warps: int = 8  # ... on 8 warps
    fwd_block_n_d64: int = 128  # keys an iteration at head dim 64 (no spill)
    fwd_block_n_d128: int = 128  # and 128 (8 bytes of spill; 8-10 % faster than 64 keys
    # on the H200, bench/results/attention)
    fwd_stages: int = 2  # ring slots of k and v (32 KiB each at BN = D = 128)
    fwd_warp_specialize: bool = True  # sm_90a: a producer warpgroup fills the ring, the
    # dots read its 128-byte swizzled slots in place
    fwd_tcgen05_block_m: int = 128  # sm_100a/sm_103a: tcgen05's M (Tensor Memory's lanes)
    fwd_tcgen05_block_n: int = 64
    fwd_tcgen05_warps: int = 8  # each thread half a row of s and of the accumulator
    decode_block_h: int = 64  # sm_90a: the GQA group padded to wgmma's M a warpgroup
    decode_tcgen05_block_h: int = 128  # sm_100a/sm_103a: padded to tcgen05's M
    decode_tcgen05_warps: int = 8
    decode_block_n: int = 64  # keys an iteration (128 spills 1.1 KB on 4 warps)
    decode_warps: int = 4  # one warpgroup
    decode_warp_specialize: bool = False  # a producer warpgroup measured no faster ...
    decode_stages: int = 2  # ... than a 2-slot ring of k and v (16 KiB a slot at BN = 64)
    decode_programs_per_sm: int = 2  # 255 registers x 128 threads, 82 KiB: two an SM
    decode_min_split: int = 256  # keys: no split shorter
    merge_warps: int = 4


SETTINGS = Settings()
ARCHS = ("sm_90a", "sm_100a", "sm_103a")


def fwd_blocks(d: int, arch: str, settings: Settings = SETTINGS) -> tuple:
    """(BM, BN, num_warps) of the forward kernel at head dim ``d`` on ``arch``."""
    if arch == "sm_90a":
        bn = settings.fwd_block_n_d64 if d == 64 else settings.fwd_block_n_d128
        return settings.fwd_block_m, bn, settings.fwd_warps
    return settings.fwd_tcgen05_block_m, settings.fwd_tcgen05_block_n, settings.fwd_tcgen05_warps


def _ring(arch: str, warp_specialize: bool) -> tuple:
    """(swizzle, warp_specialize) of a k and v ring on ``arch``: 128-byte swizzled boxes,
    which wgmma and tcgen05 read in place; on sm_90a filled by a producer warpgroup if
    asked (tcgen05 runs a warp-specialized loop's dot only as a pipelined GEMM's)."""
    return 128, warp_specialize if arch == "sm_90a" else False


def fwd_ring(arch: str, settings: Settings = SETTINGS) -> tuple:
    """(swizzle, warp_specialize) of the forward kernel's k and v ring on ``arch``."""
    return _ring(arch, settings.fwd_warp_specialize)


def decode_ring(arch: str, settings: Settings = SETTINGS) -> tuple:
    """(swizzle, warp_specialize) of the decode kernel's k and v ring on ``arch``."""
    return _ring(arch, settings.decode_warp_specialize)


def decode_block_h(arch: str, settings: Settings = SETTINGS) -> int:
    return settings.decode_block_h if arch == "sm_90a" else settings.decode_tcgen05_block_h


def decode_warps(arch: str, settings: Settings = SETTINGS) -> int:
    return settings.decode_warps if arch == "sm_90a" else settings.decode_tcgen05_warps


def fwd_grid(max_seqlen: int, num_q_heads: int, batch: int, block_m: int) -> tuple:
    return (kiln.cdiv(max_seqlen, block_m), num_q_heads, batch)


def decode_splits(batch: int, num_kv_heads: int, max_len: int, num_sms: int,
                  settings: Settings = SETTINGS) -> tuple:
    """(n_splits, chunk): the KV range is cut into n_splits chunks of ``chunk`` keys (a
    multiple of the key block). n_splits is the smallest count whose programs (batch x
    num_kv_heads x n_splits) fill the last wave of ``num_sms`` x decode_programs_per_sm
    slots to within 90% of the best count's efficiency (flash-attention's rule), with no
    chunk shorter than decode_min_split keys."""
    bn = settings.decode_block_n
    blocks = max(1, kiln.cdiv(max_len, bn))
    base = max(1, batch * num_kv_heads)
    slots = max(1, num_sms * settings.decode_programs_per_sm)
    max_splits = max(1, min(blocks, kiln.cdiv(max_len, settings.decode_min_split), 64))

    def efficiency(s: int) -> float:
        waves = base * s / slots
        return waves / math.ceil(waves)

    best = max(efficiency(s) for s in range(1, max_splits + 1))
    n_splits = next(s for s in range(1, max_splits + 1) if efficiency(s) >= 0.9 * best)
    chunk = kiln.cdiv(blocks, n_splits) * bn
    return kiln.cdiv(max(max_len, 1), chunk), chunk


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


# ---------------------------------------------------------------------------
# Wrappers
# ---------------------------------------------------------------------------

def _dtype(t: Any) -> str:
    return str(getattr(t, "dtype", "")).replace("torch.", "")


def _shape(t: Any) -> tuple:
    return tuple(int(s) for s in t.shape)


def _strides(t: Any) -> tuple:
    return tuple(int(s) for s in t.stride())


def _check_tensor(op: str, what: str, t: Any, dtype: str, rank: int) -> tuple:
    if not hasattr(t, "shape") or not hasattr(t, "stride"):
        raise TypeError(f"{op}: {what} must be a tensor, got {type(t).__name__}")
    if _dtype(t) != dtype:
        raise TypeError(f"{op}: {what} must be {dtype}, got {_dtype(t) or type(t).__name__}")
    shape = _shape(t)
    if len(shape) != rank:
        raise ValueError(f"{op}: {what} must have {rank} dimensions, got shape {list(shape)}")
    if "cuda" not in str(getattr(t, "device", "cuda")):
        raise ValueError(f"{op}: {what} must be on a CUDA device, got {t.device}")
    return shape


def _check_inner(op: str, what: str, t: Any) -> None:
    """Head dim contiguous, the other strides multiples of 8 elements and the address
    16-byte aligned (the 16-byte vector loads of a row)."""
    st = _strides(t)
    if st[-1] != 1:
        raise ValueError(f"{op}: {what} must be contiguous along its last dimension, got "
                         f"strides {st}")
    if any(s % 8 for s in st[:-1]):
        raise ValueError(f"{op}: the strides of {what} must be multiples of 8 elements (16 "
                         f"bytes), got {st}")
    ptr = int(t.data_ptr())
    if ptr % 16:
        raise ValueError(f"{op}: {what} must be 16-byte aligned, got address {ptr:#x}")


def _check_contiguous(op: str, what: str, t: Any) -> None:
    expected, acc = [], 1
    for n in reversed(_shape(t)):
        expected.append(acc)
        acc *= n
    expected.reverse()
    if any(n > 1 and s != e for n, s, e in zip(_shape(t), _strides(t), expected)):
        raise ValueError(f"{op}: {what} must be contiguous, got strides {_strides(t)}")


def _check_devices(op: str, **named: Any) -> None:
    devices = {w: str(t.device) for w, t in named.items() if hasattr(t, "device")}
    if len(set(devices.values())) > 1:
        desc = ", ".join(f"{w} on {d}" for w, d in sorted(devices.items()))
        raise ValueError(f"{op}: tensors must be on one device, got {desc}")


def _check_heads(op: str, d: int, hq: int, hkv: int) -> None:
    if d not in HEAD_DIMS:
        raise ValueError(f"{op}: head dim must be one of {HEAD_DIMS}, got {d}")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"{op}: the query heads ({hq}) must be a multiple of the KV heads "
                         f"({hkv})")


def _check_scale(op: str, scale: Optional[float], d: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(d)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"{op}: scale must be a float, got {type(scale).__name__}")
    if not scale > 0 or math.isinf(scale):
        raise ValueError(f"{op}: scale must be positive and finite, got {scale}")
    return float(scale)


def _empty(shape: tuple, dtype: str, like: Any) -> Any:
    import torch

    return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)


def _device_arch(t: Any) -> str:
    """The kiln arch of the tensor's device (sm_90a on anything but Blackwell)."""
    import torch

    major, minor = torch.cuda.get_device_capability(t.device)
    return {(10, 0): "sm_100a", (10, 3): "sm_103a"}.get((major, minor), "sm_90a")


def _launch(kernel: Any, grid: tuple, args: tuple, constexprs: dict, num_warps: int) -> None:
    if all(int(g) > 0 for g in grid):
        kernel[grid](*args, num_warps=num_warps, **constexprs)


def _check_out(op: str, what: str, t: Any, shape: tuple, dtype: str) -> None:
    got = _check_tensor(op, what, t, dtype, len(shape))
    if got != shape:
        raise ValueError(f"{op}: {what} must have shape {list(shape)}, got {list(got)}")


def flash_attn_varlen(q: Any, k: Any, v: Any, cu_seqlens: Any, max_seqlen: int,
                      scale: Optional[float] = None, causal: bool = True,
                      return_lse: bool = False, out: Optional[Any] = None,
                      lse: Optional[Any] = None, *, settings: Settings = SETTINGS) -> Any:
    """Attention over packed sequences: q bf16 [T, Hq, D], k and v bf16 [T, Hkv, D] (Hq a
    multiple of Hkv; D 64 or 128; any token and head strides, D contiguous), sequence i the
    tokens cu_seqlens[i] .. cu_seqlens[i + 1] - 1 (int32 [N + 1], non-decreasing, from 0;
    ``max_seqlen`` at least the longest). Returns out bf16 [T, Hq, D] (and with
    ``return_lse`` the log-sum-exp f32 [Hq, T], natural log). ``scale`` defaults to
    1/sqrt(D); ``causal``: query t sees the keys 0..t of its own sequence."""
    op = "flash_attn_varlen"
    t, hq, d = _check_tensor(op, "q", q, "bfloat16", 3)
    tk, hkv, dk = _check_tensor(op, "k", k, "bfloat16", 3)
    if (tk, dk) != (t, d) or _shape(v) != (tk, hkv, dk):
        raise ValueError(f"{op}: k and v must have shape [{t}, Hkv, {d}], got "
                         f"{list(_shape(k))} and {list(_shape(v))}")
    _check_tensor(op, "v", v, "bfloat16", 3)
    (n1,) = _check_tensor(op, "cu_seqlens", cu_seqlens, "int32", 1)
    if n1 < 2:
        raise ValueError(f"{op}: cu_seqlens must hold at least 2 offsets, got {n1}")
    _check_heads(op, d, hq, hkv)
    for what, x in (("q", q), ("k", k), ("v", v)):
        _check_inner(op, what, x)
    _check_contiguous(op, "cu_seqlens", cu_seqlens)
    if isinstance(max_seqlen, bool) or not isinstance(max_seqlen, int) or max_seqlen < 0:
        raise ValueError(f"{op}: max_seqlen must be a non-negative int, got {max_seqlen!r}")
    sm_scale = _check_scale(op, scale, d)
    if out is not None:
        _check_out(op, "out", out, (t, hq, d), "bfloat16")
        _check_inner(op, "out", out)
    if lse is not None:
        _check_out(op, "lse", lse, (hq, t), "float32")
        _check_contiguous(op, "lse", lse)
    _check_devices(op, q=q, k=k, v=v, cu_seqlens=cu_seqlens, out=out, lse=lse)
    if out is None:
        out = _empty((t, hq, d), "bfloat16", q)
    if return_lse and lse is None:
        lse = _empty((hq, t), "float32", q)
    store_lse = lse is not None
    arch = _device_arch(q)
    bm, bn, warps = fwd_blocks(d, arch, settings)
    swizzle, specialize = fwd_ring(arch, settings)
    sq, sk, sv, so = _strides(q), _strides(k), _strides(v), _strides(out)
    k_desc, v_desc = (kiln.TensorDescriptor(x, [1, bn, 1, d], shape=(1, t, hkv, d),
                                            strides=(t * st[0], st[0], st[1], 1),
                                            swizzle=swizzle)
                      for x, st in ((k, sk), (v, sv)))
    args = (q, k_desc, v_desc, out, lse if store_lse else out, cu_seqlens, 0,
            sm_scale * LOG2E, hq // hkv, 0, sq[0], sq[1], 0, so[0], so[1], 0, t)
    _launch(flash_fwd_kernel, fwd_grid(max_seqlen, hq, n1 - 1, bm), args,
            {"D": d, "BM": bm, "BN": bn, "CAUSAL": bool(causal), "VARLEN": True,
             "STORE_LSE": store_lse, "STAGES": settings.fwd_stages,
             "WARP_SPECIALIZE": specialize}, warps)
    return (out, lse) if return_lse else out


def flash_attn(q: Any, k: Any, v: Any, scale: Optional[float] = None, causal: bool = True,
               return_lse: bool = False, out: Optional[Any] = None, *,
               settings: Settings = SETTINGS) -> Any:
    """The dense form ``torch.nn.functional.scaled_dot_product_attention`` takes: q bf16
    [B, Hq, T, D], k and v bf16 [B, Hkv, T, D] (GQA: Hq a multiple of Hkv, as SDPA's
    ``enable_gqa``), any strides with D contiguous. Returns out bf16 [B, Hq, T, D] (and with
    ``return_lse`` the log-sum-exp f32 [B, Hq, T]). ``causal`` masks as ``is_causal``."""
    op = "flash_attn"
    b, hq, t, d = _check_tensor(op, "q", q, "bfloat16", 4)
    bk, hkv, tk, dk = _check_tensor(op, "k", k, "bfloat16", 4)
    if (bk, tk, dk) != (b, t, d) or _shape(v) != (bk, hkv, tk, dk):
        raise ValueError(f"{op}: k and v must have shape [{b}, Hkv, {t}, {d}], got "
                         f"{list(_shape(k))} and {list(_shape(v))}")
    _check_tensor(op, "v", v, "bfloat16", 4)
    _check_heads(op, d, hq, hkv)
    for what, x in (("q", q), ("k", k), ("v", v)):
        _check_inner(op, what, x)
    sm_scale = _check_scale(op, scale, d)
    if out is not None:
        _check_out(op, "out", out, (b, hq, t, d), "bfloat16")
        _check_inner(op, "out", out)
    _check_devices(op, q=q, k=k, v=v, out=out)
    if out is None:
        out = _empty((b, hq, t, d), "bfloat16", q)
    lse = _empty((b, hq, t), "float32", q) if return_lse else None
    arch = _device_arch(q)
    bm, bn, warps = fwd_blocks(d, arch, settings)
    swizzle, specialize = fwd_ring(arch, settings)
    sq, so = _strides(q), _strides(out)
    k_desc, v_desc = (kiln.TensorDescriptor(x, [1, 1, bn, d], swizzle=swizzle) for x in (k, v))
    args = (q, k_desc, v_desc, out, lse if return_lse else out, q, t, sm_scale * LOG2E,
            hq // hkv, sq[0], sq[2], sq[1], so[0], so[2], so[1], hq * t, t)
    _launch(flash_fwd_kernel, fwd_grid(t, hq, b, bm), args,
            {"D": d, "BM": bm, "BN": bn, "CAUSAL": bool(causal), "VARLEN": False,
             "STORE_LSE": bool(return_lse), "STAGES": settings.fwd_stages,
             "WARP_SPECIALIZE": specialize}, warps)
    return (out, lse) if return_lse else out


def flash_decode(q: Any, k_cache: Any, v_cache: Any, lengths: Any,
                 scale: Optional[float] = None, out: Optional[Any] = None,
                 n_splits: Optional[int] = None, num_sms: Optional[int] = None, *,
                 settings: Settings = SETTINGS) -> Any:
    """One query token a request against its KV cache: q bf16 [B, Hq, D], k_cache and
    v_cache bf16 [B, L, Hkv, D] (request b's keys 0 .. lengths[b] - 1; D contiguous),
    lengths int32 [B] (each in [0, L]; the kernel trusts them). Returns out bf16 [B, Hq,
    D] (zeros for a request of length 0). The KV range is split into ``n_splits`` parts
    (None: decode_splits from B, Hkv, L and ``num_sms``, by default the device's SM count)
    whose f32 partials are merged by a second kernel."""
    op = "flash_decode"
    b, hq, d = _check_tensor(op, "q", q, "bfloat16", 3)
    bk, seq, hkv, dk = _check_tensor(op, "k_cache", k_cache, "bfloat16", 4)
    if (bk, dk) != (b, d) or _shape(v_cache) != (bk, seq, hkv, dk):
        raise ValueError(f"{op}: k_cache and v_cache must have shape [{b}, L, Hkv, {d}], got "
                         f"{list(_shape(k_cache))} and {list(_shape(v_cache))}")
    _check_tensor(op, "v_cache", v_cache, "bfloat16", 4)
    (bl,) = _check_tensor(op, "lengths", lengths, "int32", 1)
    if bl != b:
        raise ValueError(f"{op}: lengths must have shape [{b}], got [{bl}]")
    _check_heads(op, d, hq, hkv)
    if hq // hkv > 64:
        raise ValueError(f"{op}: at most 64 query heads a KV head (one program's rows), got "
                         f"{hq // hkv}")
    for what, x in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        _check_inner(op, what, x)
    _check_contiguous(op, "lengths", lengths)
    sm_scale = _check_scale(op, scale, d)
    if out is not None:
        _check_out(op, "out", out, (b, hq, d), "bfloat16")
        _check_inner(op, "out", out)
    _check_devices(op, q=q, k_cache=k_cache, v_cache=v_cache, lengths=lengths, out=out)
    bn = settings.decode_block_n
    if n_splits is None:
        if num_sms is None:
            import torch

            num_sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        n_splits, chunk = decode_splits(b, hkv, seq, num_sms, settings)
    else:
        if isinstance(n_splits, bool) or not isinstance(n_splits, int) or n_splits < 1:
            raise ValueError(f"{op}: n_splits must be a positive int, got {n_splits!r}")
        chunk = kiln.cdiv(kiln.cdiv(max(seq, 1), n_splits), bn) * bn
    arch = _device_arch(q)
    block_h = decode_block_h(arch, settings)
    swizzle, specialize = decode_ring(arch, settings)
    k_desc, v_desc = (kiln.TensorDescriptor(x, [1, bn, 1, d], swizzle=swizzle)
                      for x in (k_cache, v_cache))
    if out is None:
        out = _empty((b, hq, d), "bfloat16", q)
    o_part = _empty((b, hq, n_splits, d), "float32", q)
    lse_part = _empty((b, hq, n_splits), "float32", q)
    sq, sk, sv, so = _strides(q), _strides(k_cache), _strides(v_cache), _strides(out)
    _launch(flash_decode_kernel, (n_splits, hkv, b),
            (q, k_desc, v_desc, k_cache, v_cache, o_part, lse_part, lengths, chunk,
             sm_scale * LOG2E, hq // hkv, sq[0], sq[1], sk[0], sk[1], sk[2], sv[0], sv[1],
             sv[2]),
            {"D": d, "BLOCK_H": max(block_h, _next_pow2(hq // hkv)), "BN": bn,
             "STAGES": settings.decode_stages, "WARP_SPECIALIZE": specialize},
            decode_warps(arch, settings))
    _launch(flash_decode_merge_kernel, (hq, b),
            (o_part, lse_part, out, n_splits, so[0], so[1]),
            {"D": d, "BLOCK_S": _next_pow2(n_splits)}, settings.merge_warps)
    return out
