"""Per-token-group FP8 quantization (KERNELS.md §8.2(a)), MXFP4 quantization (§8.2(b),
``quant_mxfp4``, contract in its docstring) and the group-quant helpers the other FP8 kernels
of the family inline (SiTU masked post-quant §4.2, MLA output gate FP8 §4.3, MLA FP8 KV
scatter §8.5).

``per_token_group_quant_fp8(x, group=128, ue8m0=False, column_major_scales=False)``: x bf16
[T, D] (last dimension contiguous, rows may be strided), D % group == 0. For every token t
and group g of ``group`` consecutive values:

    s[t, g] = max(absmax(x[t, g*group:(g+1)*group]), 1e-10) / 448      (fp32, IEEE division)
    s[t, g] = 2 ** ceil(log2(s[t, g]))                                  if ue8m0 (exact, below)
    q[t, j] = sat_e4m3(f32(x[t, j]) / s[t, j // group])                 (IEEE division, RNE)

``sat_e4m3`` rounds to nearest even and saturates to +-448 (``cvt.rn.satfinite``), so q equals
torch's ``(x.float() / s).clamp(-448, 448).to(torch.float8_e4m3fn)``. The UE8M0 rounding is done
on the fp32 bits: a positive normal ``s`` is already a power of two iff its mantissa bits are
zero; otherwise the exponent field is incremented and the mantissa cleared. ``s`` is at least
1e-10 / 448 (a normal number), so this is exactly ``2 ** ceil(log2(s))``.

Scales: fp32 [T, D/group] row-major, or with ``column_major_scales`` a [T, D/group] view whose
storage is [D/group, T] (strides (1, T): ``s.t()`` is contiguous), the layout DeepGEMM-style
GEMMs read. Returns (q fp8 e4m3 [T, D] contiguous, s).

Each program quantizes ROWS groups, viewed as a [ROWS, group] tile over the flattened
(token, group) index: one absmax per tile row (a reduction along axis 1). T = 0 launches nothing.
Non-finite inputs are outside the contract (an inf makes its group's scale inf).
"""

from __future__ import annotations

import struct
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

FP8_MAX = 448.0
#: RN(1 / 448) in fp32 (the float32 nearest to 1/448).
INV_FP8_MAX = struct.unpack("<f", struct.pack("<f", 1.0 / 448.0))[0]
#: The absmax floor: an all-zero group gets a tiny finite scale and quantizes to zeros.
EPS = 1e-10


@kiln.jit
def fp8_group_scale(absmax, UE8M0: kl.constexpr):
    """``max(absmax, 1e-10) / 448`` (fp32, IEEE division); with UE8M0 rounded up to a power
    of two on the fp32 bits (exact ``2 ** ceil(log2(s))`` for the positive normal s)."""
    s = kl.maximum(absmax, EPS) / FP8_MAX
    if UE8M0:
        bits = s.to(kl.int32, bitcast=True)
        exp = bits >> 23
        exp = kl.where((bits & 0x7FFFFF) != 0, exp + 1, exp)
        s = (exp << 23).to(kl.float32, bitcast=True)
    return s


@kiln.jit
def fp8_quant_groups(v, UE8M0: kl.constexpr):
    """Quantizes the fp32 tile ``v`` [R, G] row by row: (q e4m3 [R, G], s fp32 [R])."""
    s = fp8_group_scale(kl.max(kl.abs(v), axis=1), UE8M0)
    q = (v / s[:, None]).to(kl.float8e4m3)
    return q, s


@kiln.jit
def div_by_recip(x, d, r):
    """``x / d`` from ``r = RN(1 / d)`` without a division: ``p = RN(x * r)`` and one
    Markstein correction ``RN(p + RN(x - p * d) * r)`` (two FMAs). The residual is taken
    negated, ``RN(p * d - x)``, and added times ``-r``: the same value (RN is symmetric),
    but a zero x keeps its sign (``-0 / d`` is -0; ``RN(x - p * d)`` would be +0 and turn
    it into +0). Used where it is checked exhaustively to give the IEEE quotient's result
    (the scale ``absmax / 448`` for every bf16 absmax and the floor, and the e4m3 codes of
    ``x / s`` for bf16 x: test/python/test_quant_variants.py; for fp32 x see
    situ_quant.py)."""
    p = x * r
    return kl.fma(kl.fma(p, d, -x), -r, p)


@kiln.jit
def fp8_quant_groups_recip(v, UE8M0: kl.constexpr):
    """``fp8_quant_groups`` for bf16-valued v with no per-element division: the scale from
    ``div_by_recip`` with the constant RN(1/448), one reciprocal per group, and the
    quotients by ``div_by_recip`` (with UE8M0 the reciprocal of the power of two is exact,
    so ``v * r`` is the quotient itself). Same q and s bits as ``fp8_quant_groups``."""
    a = kl.maximum(kl.max(kl.abs(v), axis=1), EPS)
    s = div_by_recip(a, FP8_MAX, INV_FP8_MAX)
    if UE8M0:
        bits = s.to(kl.int32, bitcast=True)
        exp = bits >> 23
        exp = kl.where((bits & 0x7FFFFF) != 0, exp + 1, exp)
        s = (exp << 23).to(kl.float32, bitcast=True)
        q = (v * ((254 - exp) << 23).to(kl.float32, bitcast=True)[:, None]).to(kl.float8e4m3)
    else:
        r = 1.0 / s
        q = div_by_recip(v, s[:, None], r[:, None]).to(kl.float8e4m3)
    return q, s


@kiln.jit(num_warps=4)
def per_token_group_quant_fp8_kernel(x_ptr, q_ptr, s_ptr, num_groups, groups_per_row, x_s0,
                                     q_s0, s_st, s_sg, GROUP: kl.constexpr, ROWS: kl.constexpr,
                                     UE8M0: kl.constexpr, RECIP: kl.constexpr = False,
                                     TOKEN_GRID: kl.constexpr = False,
                                     SCALE_TILE: kl.constexpr = False):
    """RECIP: ``fp8_quant_groups_recip`` (no per-element division). TOKEN_GRID: a grid of
    (T, cdiv(groups_per_row, ROWS)) programs, the token a scalar (no integer division).
    SCALE_TILE: the scales stored from the [ROWS, GROUP] tile by the thread holding column
    0 of each group, not as a [ROWS] vector, whose layout conversion went through shared
    memory and had every thread compute and store every group's scale (same bits)."""
    if TOKEN_GRID:
        t = kl.program_id(0)
        g = kl.program_id(1) * ROWS + kl.arange(0, ROWS)
        valid = g < groups_per_row
    else:
        i = kl.program_id(0) * ROWS + kl.arange(0, ROWS)  # flattened (token, group) ids
        valid = i < num_groups
        t = i // groups_per_row
        g = i - t * groups_per_row
    col = kl.arange(0, GROUP)[None, :]
    kl.pdl_wait()  # x may come from the previous kernel in the stream
    x = kl.load(x_ptr + (t * x_s0 + g * GROUP)[:, None] + col, mask=valid[:, None], other=0.0)
    kl.pdl_launch_dependents()
    if RECIP:
        q, s = fp8_quant_groups_recip(x.to(kl.float32), UE8M0)
    else:
        q, s = fp8_quant_groups(x.to(kl.float32), UE8M0)
    kl.store(q_ptr + (t * q_s0 + g * GROUP)[:, None] + col, q, mask=valid[:, None])
    if SCALE_TILE:
        kl.store(s_ptr + (t * s_st + g * s_sg)[:, None] + col * 0,
                 s[:, None] + kl.zeros([ROWS, GROUP], kl.float32),
                 mask=valid[:, None] & (col == 0))
    else:
        kl.store(s_ptr + t * s_st + g * s_sg, s, mask=valid)


@kiln.jit
def _mx_quant_store(lo, hi, dst, sdst, valid, ROWS: kl.constexpr, E2M1_BITS: kl.constexpr,
                    E2M1_SUB: kl.constexpr, SCALE_TILE: kl.constexpr,
                    BYTE_SIGNS: kl.constexpr, OUT_CACHE: kl.constexpr):
    """Quantizes the [ROWS, 16] fp32 tiles ``lo`` / ``hi`` (the even / odd values of ROWS
    blocks, ``valid``) and stores their 16 packed bytes at ``dst`` and E8M0 byte at ``sdst``
    ([ROWS] pointers)."""
    pair = kl.arange(0, 16)[None, :]
    amax = kl.maximum(kl.max(kl.abs(lo), axis=1), kl.max(kl.abs(hi), axis=1))
    # floor(log2(amax)) from the exponent field; amax = 0 (or subnormal) gives the lowest
    # scale, 2^-127 (E8M0 byte 0)
    e8m0 = kl.minimum(kl.maximum(((amax.to(kl.int32, bitcast=True) >> 23) & 0xFF) - 2, 0), 254)
    inv = ((254 - e8m0) << 23).to(kl.float32, bitcast=True)  # 2^-(e8m0 - 127), exact
    if E2M1_SUB and BYTE_SIGNS:
        tl = lo * inv[:, None]
        th = hi * inv[:, None]
        code = e2m1_magnitude_subnormal(tl) + (e2m1_magnitude_subnormal(th) << 4)
        code = kl.where(tl < 0, code | 8, code)
        code = kl.where(th < 0, code | 128, code)
    elif E2M1_SUB:
        code = (e2m1_code_subnormal(lo * inv[:, None])
                | (e2m1_code_subnormal(hi * inv[:, None]) << 4))
    elif E2M1_BITS:
        code = e2m1_code_bits(lo * inv[:, None]) | (e2m1_code_bits(hi * inv[:, None]) << 4)
    else:
        code = e2m1_code(lo * inv[:, None]) | (e2m1_code(hi * inv[:, None]) << 4)
    kl.store(dst[:, None] + pair, code.to(kl.uint8), mask=valid[:, None],
             cache_modifier=OUT_CACHE)
    if SCALE_TILE:
        kl.store(sdst[:, None] + pair * 0,
                 e8m0.to(kl.uint8)[:, None] + kl.zeros([ROWS, 16], kl.uint8),
                 mask=valid[:, None] & (pair == 0))
    else:
        kl.store(sdst, e8m0.to(kl.uint8), mask=valid)


@kiln.jit
def _mx_words(src, valid, X_EVICT: kl.constexpr):
    """The [ROWS, 16] int32 words (one (even, odd) bf16 pair each) of the blocks at ``src``
    ([ROWS] pointers)."""
    return kl.load(src[:, None] + kl.arange(0, 16)[None, :], mask=valid[:, None], other=0,
                   eviction_policy=X_EVICT)


@kiln.jit(num_warps=4)
def quant_mxfp4_kernel(x_ptr, p_ptr, s_ptr, num_blocks, blocks_per_row, x_s0, p_s0, s_s0,
                       ROWS: kl.constexpr, WORDS: kl.constexpr = False,
                       TOKEN_GRID: kl.constexpr = False, E2M1_BITS: kl.constexpr = False,
                       E2M1_SUB: kl.constexpr = False, SCALE_TILE: kl.constexpr = False,
                       CHUNKS: kl.constexpr = 0, LOOKAHEAD: kl.constexpr = 1,
                       BYTE_SIGNS: kl.constexpr = False, X_EVICT: kl.constexpr = "",
                       OUT_CACHE: kl.constexpr = ""):
    """ROWS blocks of 32 values per program; each block read as its 16 even and 16 odd
    elements (the two nibbles of its 16 output bytes).

    Options (same bits): WORDS: x_ptr is the bf16 data viewed as int32 words (x_s0 in words),
    each word one (even, odd) pair, so the loads are contiguous 16-byte vectors and bf16 ->
    f32 is a shift; TOKEN_GRID: a grid of (R, cdiv(blocks_per_row, ROWS)) programs, the row a
    scalar (no integer division); E2M1_BITS: ``e2m1_code_bits``; E2M1_SUB (over E2M1_BITS):
    ``e2m1_code_subnormal``; SCALE_TILE: the E8M0 bytes stored from the [ROWS, 16] tile by
    the thread holding the block, not as a [ROWS] vector (whose store layout went through
    shared memory: two conversions, four barriers, and two threads storing 16 bytes each);
    BYTE_SIGNS (with E2M1_SUB): a byte's two magnitude codes (``e2m1_magnitude_subnormal``)
    combined by one multiply-add, then the two signs ORed in (the same ``v < 0`` tests).
    X_EVICT (with WORDS): the loads' L2 eviction policy; OUT_CACHE: the packed bytes' store
    cache modifier ("": none).

    CHUNKS (> 0, needs WORDS; TOKEN_GRID is then ignored): a program is ROWS / 32 rows times
    CHUNKS chunks of 32 consecutive blocks (grid (cdiv(R, ROWS / 32), cdiv(blocks_per_row,
    32 * CHUNKS))), one warp a row and one block a thread in every chunk, the chunks one after
    the other (unrolled). K3's 224 blocks a row are 7 chunks of 32: no idle lane, where the
    one-row tile of 256 left the eighth warp masked, and no division. LOOKAHEAD (1 to
    CHUNKS): the loads of the next LOOKAHEAD chunks are issued before a chunk is quantized
    (LOOKAHEAD = CHUNKS: every load first), so a warp keeps reads in flight while it
    computes."""
    if CHUNKS > 0:
        kl.static_assert(WORDS, "quant_mxfp4_kernel: CHUNKS needs WORDS")
        kl.static_assert(ROWS % 32 == 0, "quant_mxfp4_kernel: CHUNKS needs 32 | ROWS")
        kl.static_assert(LOOKAHEAD >= 1, "quant_mxfp4_kernel: LOOKAHEAD must be positive")
        j = kl.arange(0, ROWS)
        r = kl.program_id(0) * (ROWS // 32) + j // 32
        b0 = kl.program_id(1) * (32 * CHUNKS) + j % 32
        row_ok = r * blocks_per_row < num_blocks
        # chunk c's pointers are these plus constants (immediate offsets in the SASS)
        src = x_ptr + (r * x_s0 + b0 * 16)
        dst = p_ptr + (r * p_s0 + b0 * 16)
        sdst = s_ptr + (r * s_s0 + b0)
        kl.pdl_wait()
        ring = ()
        for c in kl.static_range(LOOKAHEAD):
            if c < CHUNKS:
                ring = ring + (_mx_words(src + 512 * c,
                                         row_ok & (b0 + 32 * c < blocks_per_row), X_EVICT),)
        kl.pdl_launch_dependents()
        for c in kl.static_range(CHUNKS):
            w = ring[0]
            ring = ring[1:]
            if c + LOOKAHEAD < CHUNKS:
                n = c + LOOKAHEAD
                ring = ring + (_mx_words(src + 512 * n,
                                         row_ok & (b0 + 32 * n < blocks_per_row), X_EVICT),)
            _mx_quant_store((w << 16).to(kl.float32, bitcast=True),
                            (w & -65536).to(kl.float32, bitcast=True), dst + 512 * c,
                            sdst + 32 * c, row_ok & (b0 + 32 * c < blocks_per_row), ROWS,
                            E2M1_BITS, E2M1_SUB, SCALE_TILE, BYTE_SIGNS, OUT_CACHE)
        return
    if TOKEN_GRID:
        r = kl.program_id(0)
        b = kl.program_id(1) * ROWS + kl.arange(0, ROWS)
        valid = b < blocks_per_row
    else:
        i = kl.program_id(0) * ROWS + kl.arange(0, ROWS)  # flattened (row, block) ids
        valid = i < num_blocks
        r = i // blocks_per_row
        b = i - r * blocks_per_row
    pair = kl.arange(0, 16)[None, :]
    kl.pdl_wait()
    if WORDS:
        w = _mx_words(x_ptr + (r * x_s0 + b * 16), valid, X_EVICT)
        lo = (w << 16).to(kl.float32, bitcast=True)
        hi = (w & -65536).to(kl.float32, bitcast=True)
    else:
        src = x_ptr + (r * x_s0 + b * 32)[:, None] + 2 * pair
        lo = kl.load(src, mask=valid[:, None], other=0.0).to(kl.float32)
        hi = kl.load(src + 1, mask=valid[:, None], other=0.0).to(kl.float32)
    kl.pdl_launch_dependents()
    _mx_quant_store(lo, hi, p_ptr + r * p_s0 + b * 16, s_ptr + r * s_s0 + b, valid, ROWS,
                    E2M1_BITS, E2M1_SUB, SCALE_TILE, BYTE_SIGNS, OUT_CACHE)


@kiln.jit
def e2m1_code(v):
    """The E2M1 code (sign << 3 | magnitude code) of v rounded to nearest even, saturating
    at 6: grid 0, .5, 1, 1.5, 2, 3, 4, 6; ties go to the even code."""
    a = kl.abs(v)
    m = ((a > 0.25).to(kl.int32) + (a >= 0.75).to(kl.int32) + (a > 1.25).to(kl.int32)
         + (a >= 1.75).to(kl.int32) + (a > 2.5).to(kl.int32) + (a >= 3.5).to(kl.int32)
         + (a > 5.0).to(kl.int32))
    return kl.where(v < 0, m | 8, m)


@kiln.jit
def e2m1_code_bits(v):
    """``e2m1_code`` for |v| < 8 on the fp32 bits: from 1 up, E2M1 is a float with a 1-bit
    mantissa, so rounding the fp32 mantissa to 1 bit (nearest even: add 0x1FFFFF plus the
    kept bit) and rebiasing the exponent (127 -> 1) gives the code, clamped to 7 (6.0);
    below 1 the codes are 0, 1 (0.5), 2 (1.0) by two compares."""
    a = kl.abs(v)
    bits = a.to(kl.int32, bitcast=True)
    normal = kl.minimum(((bits + 0x1FFFFF + ((bits >> 22) & 1)) >> 22) - 252, 7)
    small = (a > 0.25).to(kl.int32) + (a >= 0.75).to(kl.int32)
    m = kl.where(a < 1.0, small, normal)
    return kl.where(v < 0, m | 8, m)


@kiln.jit
def e2m1_magnitude_subnormal(v):
    """``e2m1_code_subnormal`` without the sign: the magnitude code 0 to 7 of |v| < 8."""
    a = kl.abs(v) * 1.1754943508222875e-38  # 2^-126
    bits = a.to(kl.int32, bitcast=True)
    return kl.minimum((bits + 0x1FFFFF + ((bits >> 22) & 1)) >> 22, 7)


@kiln.jit
def e2m1_code_subnormal(v):
    """``e2m1_code`` for |v| < 8 with no special case below 1: ``a = |v| * 2^-126`` is
    exact for |v| >= 2^-16 (v has bf16's 8 significant bits; smaller |v| give code 0 whatever
    the rounding) and puts E2M1 on fp32's bits: below 1, a is subnormal with mantissa field
    ``|v| * 2^23``, so the field's top bit counts halves (codes 0, 1, 2 for 0, 0.5, 1);
    from 1 up, exponent field e = 1, 2, 3 and the mantissa's top bit are the code's two
    exponent bits and its mantissa bit. Rounding the bits to nearest even at bit 22 (add
    0x1FFFFF plus the kept bit) and shifting gives the code, clamped to 7 (6.0). Needs
    subnormal arithmetic (kiln compiles without FTZ)."""
    m = e2m1_magnitude_subnormal(v)
    return kl.where(v < 0, m | 8, m)


#: groups per program: a [16, 128] bf16 tile on one warp (eight 16-byte vectors a thread).
#: The H200 sweep (bench/results/h200-bench_kimi_k3_sweep.md, [16384, 7168] g128): 2048 / 1
#: warp / RECIP / TOKEN_GRID 117 us, 71 % of copy bandwidth, 1.9x the first default
#: (2048 / 4 warps, neither option: 222 us, 37 %). With GQ_SCALE_TILE: 2048 / 1 warp 92.5 us
#: (90.5 %), 4096 / 2 warps 86.9 us (96.4 %), 1024 / 1 140 us.
GROUP_ELEMS, NUM_WARPS = 4096, 2
GROUPS = (32, 64, 128, 256)
#: per_token_group_quant_fp8 formulation (kernel docstring; same bits, checked exhaustively in
#: test/python/test_quant_variants.py); ``bench/kimi_k3/run.py --sweep`` times every
#: combination with GROUP_ELEMS and NUM_WARPS. GQ_SCALE_TILE: the sm_90a kernel body of the
#: default goes from 775 to 619 SASS instructions and 128 to 99 registers (UE8M0: 709 -> 442,
#: 103 -> 80), no barrier; H200 (2048 / 1 warp): 93.3 -> 92.5 us.
GQ_RECIP, GQ_TOKEN_GRID, GQ_SCALE_TILE = True, True, True

_SIG = {"x_ptr": "*bf16", "q_ptr": "*f8e4m3", "s_ptr": "*f32", "num_groups": "i32",
        "groups_per_row": "i32", "x_s0": "i32", "q_s0": "i32", "s_st": "i32", "s_sg": "i32"}

#: MXFP4: 32 blocks of 32 per program (1024 values) on one warp. A block's 16 packed bytes
#: are one thread's run (one 16-byte store), so ROWS = 32 * warps keeps every thread
#: busy. The H200 sweep ([16384, 7168]): 32 / 1 warp / WORDS / TOKEN_GRID / E2M1_BITS 140 us,
#: 49.7 % of copy bandwidth, 4.0x the first default (64 / 4 warps, no option: 562 us, 12 %).
#: That kernel was instruction-bound (sm_90a SASS: 874 instructions a thread for 32 values,
#: 109 registers): half of it the scale store's layout conversion (two shared-memory round
#: trips, four barriers, then two threads storing 16 bytes each behind branches) and the
#: E2M1 rounding's special case below 1. With E2M1_SUB and SCALE_TILE: 437 instructions, 48
#: registers, but at 32 / 1 warp still 140 us: the one-warp programs were too few in flight.
#: H200 sweep with both: 256 / 8 warps 86.3 us (81.1 %), 128 / 4 86.7 us, 64 / 2 96.6 us;
#: without TOKEN_GRID (no idle lanes past K3's 224 blocks a row, a division a block) 92.6-100.0.
MX_ROWS, MX_WARPS = 256, 8
#: quant_mxfp4 formulation (kernel docstring; same bits, test_quant_variants.py), swept like
#: GQ_*.
MX_WORDS, MX_TOKEN_GRID, MX_E2M1_BITS = True, True, True
MX_E2M1_SUB, MX_SCALE_TILE = True, True
#: MX_CHUNKS (0: off; needs MX_WORDS): the kernel's CHUNKS, programs of MX_ROWS / 32 rows
#: times MX_CHUNKS chunks of 32 blocks (K3: 7 x 32 = 224 blocks, every lane busy; the 256 /
#: 8-warp TOKEN_GRID program above leaves its eighth warp masked, an eighth of the SM's
#: warp slots and registers holding nothing), MX_LOOKAHEAD chunks' loads issued ahead of the
#: one quantized. sm_90a SASS, 8 warps: the default 448 instructions and 47 registers a
#: thread for one block; MX_CHUNKS = 7: 2976 (425 a block), 80 / 96 / 121 / 144 registers at
#: MX_LOOKAHEAD = 1 / 2 / 3 / 7 (7: every load first), with MX_BYTE_SIGNS 2864 and 83 / 96 /
#: 102 / 142, no spill. Each lookahead chunk needs 16 more registers: MX_MAXNREG 64 / 80 / 96
#: holds lookahead 1 / 2 / 3 with no spill (32 / 24 / 16 warps an SM with 8-warp programs,
#: 16 at ptxas's 83 registers; 1-warp programs: 32 / 25 / 21), 56 or 72 spill. H200 sweep
#: ([16384, 7168], ``bench/kimi_k3/run.py --sweep --only quant_mxfp4``, one run; the former
#: default 89.45 us, 77.8 % of copy bandwidth): 7 chunks at 256 / 8 warps, lookahead 1, 64
#: registers, MX_BYTE_SIGNS, MX_OUT_CACHE ".cs" 77.66 us (89.7 %); without .cs 80.76; 128
#: / 4 warps, lookahead 2, 80 registers, .cs 80.67; evict_last loads 80.98; lookahead 3 at
#: 96 registers 81.3; uncapped rows slower.
MX_CHUNKS, MX_LOOKAHEAD = 7, 1
#: MX_BYTE_SIGNS (with MX_E2M1_SUB): the two magnitude codes of a byte combined by one
#: multiply-add (lo + (hi << 4), both at most 7) and the signs ORed into the byte (8, 128),
#: where ``e2m1_code_subnormal``'s sign OR on the odd code came before its shift (a shift
#: and an OR a byte). sm_90a: 448 -> 432 instructions a block (7 chunks: 2976 -> 2864).
MX_BYTE_SIGNS = True
#: MX_MAXNREG: quant_mxfp4's register cap (None: ptxas's choice), for MX_CHUNKS above.
MX_MAXNREG = 64
#: MX_X_EVICT (with MX_WORDS): the x loads' L2 eviction policy ("", "evict_last",
#: "evict_first"); MX_OUT_CACHE: the packed bytes' store cache modifier ("", ".cs"; on the
#: scale byte it kept the 16 predicated byte stores of SCALE_TILE's tile, 15 instructions).
#: H200: .cs 77.66 us against 80.76 without (7 chunks, above); evict_last loads 80.98.
MX_X_EVICT, MX_OUT_CACHE = "", ".cs"


#: ... from MX_CHUNKS_MIN_T rows on: a chunk program is MX_ROWS / 32 rows, one warp a row
#: whose chunks follow one another, so few rows leave the SMs with a few warps each, every
#: one a chain of 7 DRAM round trips (H200: T = 1 5.20 us and T = 64 5.40 with chunks against
#: 1.65 and 1.78 for one block a thread; T = 4096 21.40 against 23.35). Below, the one-block
#: programs (MX_ROWS blocks of a row, uncapped registers).
MX_CHUNKS_MIN_T = 4096


def _mx_chunked(rows: Optional[int]) -> bool:
    """Whether R rows (None: the bundle's large-T specialization) run the chunk programs."""
    return bool(MX_CHUNKS) and (rows is None or rows >= MX_CHUNKS_MIN_T)


def _mx_name(chunked: bool) -> str:
    return "quant_mxfp4" if chunked or not MX_CHUNKS else "quant_mxfp4_few_rows"


def _mx_constexprs(chunked: bool = True) -> dict:
    return {"ROWS": MX_ROWS, "WORDS": MX_WORDS, "TOKEN_GRID": MX_TOKEN_GRID,
            "E2M1_BITS": MX_E2M1_BITS, "E2M1_SUB": MX_E2M1_SUB, "SCALE_TILE": MX_SCALE_TILE,
            "CHUNKS": MX_CHUNKS if chunked else 0, "LOOKAHEAD": MX_LOOKAHEAD,
            "BYTE_SIGNS": MX_BYTE_SIGNS, "X_EVICT": MX_X_EVICT, "OUT_CACHE": MX_OUT_CACHE}


def _gq_constexprs(group: int, ue8m0: bool) -> dict:
    return {"GROUP": group, "ROWS": GROUP_ELEMS // group, "UE8M0": ue8m0, "RECIP": GQ_RECIP,
            "TOKEN_GRID": GQ_TOKEN_GRID, "SCALE_TILE": GQ_SCALE_TILE}


AOT_SPECIALIZATIONS = [
    Spec(quant_mxfp4_kernel, name=_mx_name(chunked),
         signature={"x_ptr": "*i32" if MX_WORDS else "*bf16", "p_ptr": "*u8", "s_ptr": "*u8",
                    "num_blocks": "i32", "blocks_per_row": "i32", "x_s0": "i32", "p_s0": "i32",
                    "s_s0": "i32"},
         constexprs=_mx_constexprs(chunked),
         divisibility=["x_ptr", "p_ptr", "s_ptr", "x_s0", "p_s0"],
         num_warps=MX_WARPS, maxnreg=MX_MAXNREG if chunked else None)
    for chunked in dict.fromkeys((True, not MX_CHUNKS))
] + [
    Spec(per_token_group_quant_fp8_kernel, name="per_token_group_quant_fp8", signature=_SIG,
         constexprs=_gq_constexprs(128, ue8m0),
         divisibility=["x_ptr", "q_ptr", "s_ptr", "x_s0", "q_s0"], num_warps=NUM_WARPS)
    for ue8m0 in (False, True)
]


def check_group(op: str, group: Any, d: int, what: str = "D") -> int:
    if not isinstance(group, int) or isinstance(group, bool) or group not in GROUPS:
        raise ValueError(f"{op}: group must be one of {GROUPS}, got {group!r}")
    if d % group:
        raise ValueError(f"{op}: {what} = {d} must be divisible by the group size {group}")
    return group


def check_row_stride(op: str, what: str, t: Any, elems: int) -> int:
    """The row stride (dimension 0) of ``t``, a multiple of ``elems`` (16 bytes); 0 when ``t``
    has at most one row (the stride is then never used)."""
    if L.shape(t)[0] <= 1:
        return 0
    s0 = L.strides(t)[0]
    if s0 % elems:
        raise ValueError(f"{op}: the row stride of {what} ({s0}) must be a multiple of "
                         f"{elems} elements (16 bytes)")
    return s0


def per_token_group_quant_fp8(x: Any, group: int = 128, ue8m0: bool = False,
                              column_major_scales: bool = False, q: Optional[Any] = None,
                              s: Optional[Any] = None) -> Any:
    """(q fp8 e4m3 [T, D], s fp32 [T, D/group]) per the module docstring. ``q`` and ``s`` are
    allocated when None; given, q must be [T, D] (last dimension contiguous, 16-byte row
    stride) and s [T, D/group] with strides (D/group, 1), or (1, T) for column-major scales.
    Every check raises before any launch."""
    op = "per_token_group_quant_fp8"
    L.check_dtype(op, "x", x, ("bfloat16",))
    t, d = L.check_shape(op, "x", x, (None, None))
    group = check_group(op, group, d)
    if not isinstance(ue8m0, bool) or not isinstance(column_major_scales, bool):
        raise TypeError(f"{op}: ue8m0 and column_major_scales must be bools")
    L.check_inner_contiguous(op, "x", x)
    x_s0 = check_row_stride(op, "x", x, 8)
    L.check_aligned(op, "x", x)
    ng = d // group
    s_strides = (1, max(t, 1)) if column_major_scales else (ng, 1)
    if q is not None:
        L.check_dtype(op, "q", q, ("float8_e4m3fn",))
        L.check_shape(op, "q", q, (t, d))
        L.check_inner_contiguous(op, "q", q)
        check_row_stride(op, "q", q, 16)
        L.check_aligned(op, "q", q)
    if s is not None:
        L.check_dtype(op, "s", s, ("float32",))
        L.check_shape(op, "s", s, (t, ng))
        got = L.strides(s)
        if t * ng > 1 and any(n > 1 and a != b for n, a, b in zip((t, ng), got, s_strides)):
            layout = "column-major" if column_major_scales else "row-major"
            raise ValueError(f"{op}: s must be {layout} with strides {s_strides}, got {got}")
        L.check_aligned(op, "s", s)
    named = [("x", x)] + [(w, v) for w, v in (("q", q), ("s", s)) if v is not None]
    L.check_same_device(op, *named)
    L.check_int32_extent(op, "T * row stride", t * max(x_s0, d, 1) + d)
    if q is None or s is None:
        import torch

        if q is None:
            q = torch.empty((t, d), dtype=torch.float8_e4m3fn, device=x.device)
        if s is None:
            s = (torch.empty((ng, t), dtype=torch.float32, device=x.device).t()
                 if column_major_scales else
                 torch.empty((t, ng), dtype=torch.float32, device=x.device))
    if t == 0 or d == 0:
        return q, s
    rows = GROUP_ELEMS // group
    num_groups = t * ng
    grid = (t, (ng + rows - 1) // rows) if GQ_TOKEN_GRID else ((num_groups + rows - 1) // rows,)
    L.launch(per_token_group_quant_fp8_kernel, "per_token_group_quant_fp8", grid,
             (x, q, s, num_groups, ng, x_s0, check_row_stride(op, "q", q, 16), s_strides[0],
              s_strides[1]), _gq_constexprs(group, ue8m0), NUM_WARPS)
    return q, s


def quant_mxfp4(x: Any, packed: Optional[Any] = None, scale: Optional[Any] = None) -> tuple:
    """OCP MXFP4 of x bf16 [R, D] (D % 32 == 0, last dimension contiguous, 16-byte row
    stride): per block of 32 values the shared exponent ``floor(log2(amax)) - 2`` stored as
    E8M0 (biased by 127, clamped to [0, 254]; amax = 0 gives byte 0), the values divided by
    that power of two and rounded to nearest-even E2M1 (saturating at 6; the sign kept, so a
    small negative value becomes -0), two per byte with the even element in the low nibble.
    Returns (packed uint8 [R, D/2], scale uint8 [R, D/32]), allocated when None (given:
    contiguous). Every check raises before any launch."""
    op = "quant_mxfp4"
    L.check_dtype(op, "x", x, ("bfloat16",))
    r, d = L.check_shape(op, "x", x, (None, None))
    if d % 32:
        raise ValueError(f"{op}: D = {d} must be divisible by the block size 32")
    L.check_inner_contiguous(op, "x", x)
    x_s0 = check_row_stride(op, "x", x, 8)
    L.check_aligned(op, "x", x)
    for what, v, shp in (("packed", packed, (r, d // 2)), ("scale", scale, (r, d // 32))):
        if v is not None:
            L.check_dtype(op, what, v, ("uint8",))
            L.check_shape(op, what, v, shp)
            L.check_contiguous(op, what, v)
            L.check_aligned(op, what, v)
    L.check_same_device(op, ("x", x), *[(w, v) for w, v in (("packed", packed),
                                                            ("scale", scale)) if v is not None])
    L.check_int32_extent(op, "R * row stride", r * max(x_s0, d, 1) + d)
    if packed is None or scale is None:
        import torch

        if packed is None:
            packed = torch.empty((r, d // 2), dtype=torch.uint8, device=x.device)
        if scale is None:
            scale = torch.empty((r, d // 32), dtype=torch.uint8, device=x.device)
    if r == 0 or d == 0:
        return packed, scale
    nb = d // 32
    chunked = _mx_chunked(r)
    if chunked:
        rows = MX_ROWS // 32
        grid = ((r + rows - 1) // rows, (nb + 32 * MX_CHUNKS - 1) // (32 * MX_CHUNKS))
    elif MX_TOKEN_GRID:
        grid = (r, (nb + MX_ROWS - 1) // MX_ROWS)
    else:
        grid = ((r * nb + MX_ROWS - 1) // MX_ROWS,)
    if MX_WORDS:  # the (even, odd) bf16 pairs as int32 words (D even, 16-byte row stride)
        import torch

        x, x_s0 = x.view(torch.int32), x_s0 // 2
    L.launch(quant_mxfp4_kernel, _mx_name(chunked), grid,
             (x, packed, scale, r * nb, nb, x_s0, d // 2, nb), _mx_constexprs(chunked),
             MX_WARPS, MX_MAXNREG if chunked else None)
    return packed, scale
