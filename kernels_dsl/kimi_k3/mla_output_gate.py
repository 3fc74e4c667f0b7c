"""MLA output gate, bf16 (KERNELS.md §4.3):

    out = bf16( f32(x) * f32( bf16( sigmoid_f32(gate) ) ) )

the sigmoid computed in fp32 and rounded to bf16 before the multiply, which reproduces torch's
``x * torch.sigmoid(gate)`` on bf16 tensors bit for bit (double rounding). The sigmoid is
``1 / (1 + expf(-g))`` with libdevice's expf and an IEEE division (``precise=True``), as
torch's CUDA sigmoid computes it. x, gate and out are bf16 with N elements (any shape,
contiguous), N % 8 == 0; BLOCK elements per program in 16-byte vectors.

FP8 variant (``mla_output_gate_fp8``, the PTPC o_proj path): x, gate bf16 [T, H] (rows may be
strided, last dimension contiguous), H % 8 == 0; one program per token computes the same gated
row y (bf16-rounded, bit-exact with torch; with ``FP8_NEWTON`` the sigmoid's reciprocal
without a division, same bits), then a per-token scale over the whole row and the
quantized row (both IEEE divisions, or with ``FP8_RECIP`` quant.py's division-free form with
the same bits; the e4m3 conversion rounds to nearest even and saturates):

    s[t] = max(absmax(y[t, :]), 1e-10) / 448            out_s fp32 [T]
    q[t] = sat_e4m3(f32(y[t, :]) / s[t])                out_q fp8 e4m3 [T, H]
"""

from __future__ import annotations

from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .quant import (EPS, FP8_MAX, INV_FP8_MAX, div_by_recip, fp8_group_scale,
                    fp8_quant_groups_recip)


@kiln.jit(num_warps=8)
def mla_output_gate_kernel(x_ptr, gate_ptr, out_ptr, N, BLOCK: kl.constexpr,
                           PDL: kl.constexpr = False):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < N
    if PDL:
        kl.pdl_wait()  # x and gate may come from the previous kernels in the stream
    x = kl.load(x_ptr + offs, mask=mask, other=0.0).to(kl.float32)
    g = kl.load(gate_ptr + offs, mask=mask, other=0.0).to(kl.float32)
    s = kl.sigmoid(g, precise=True).to(kl.bfloat16).to(kl.float32)
    kl.store(out_ptr + offs, (x * s).to(kl.bfloat16), mask=mask)
    if PDL:
        kl.pdl_launch_dependents()


@kiln.jit
def _gated_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs, H):
    """y = bf16(x * bf16(sigmoid(g))) as fp32 at columns ``offs`` of row t (0 past H)."""
    x, g = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs, H)
    return _gate(x, g)


@kiln.jit
def _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs, H):
    """(x, gate) bf16 at columns ``offs`` of row t (0 past H)."""
    mask = offs < H
    x = kl.load(x_ptr + t * x_s0 + offs, mask=mask, other=0.0)
    g = kl.load(gate_ptr + t * g_s0 + offs, mask=mask, other=0.0)
    return x, g


@kiln.jit
def _gate(x, g):
    """bf16(x * bf16(sigmoid(g))) as fp32 of bf16 x and g."""
    sg = kl.sigmoid(g.to(kl.float32), precise=True).to(kl.bfloat16).to(kl.float32)
    return (x.to(kl.float32) * sg).to(kl.bfloat16).to(kl.float32)  # 0 where x, g are 0


@kiln.jit
def recip_bf16_newton(d):
    """``bf16(RN(1 / d))`` for 1 <= d < 2^126 without a division or a branch:
    r0 = RN(rsqrt.approx(d)^2), then one Markstein step ``r0 + r0 * RN(1 - d * r0)`` (two
    FMAs, the residual exact). The step gives RN(1 / d) or, where 1 / d lies within about
    2^-43 of an fp32 midpoint, a neighbour of it that rounds to the same bf16 value: checked
    exhaustively for every fp32 mantissa of d and every r0 within +-12 ulps of 1 / d
    (rsqrt.approx is within 2 ulps, r0 within 9) in test/python/test_quant_variants.py.
    The IEEE ``1.0 / d`` is ptxas's rcp.rn: rcp.approx and one such step behind a test of
    the exponent and a branch to the slow path, for every value."""
    r = kl.rsqrt(d)
    r = r * r
    return kl.fma(r, kl.fma(-d, r, 1.0), r).to(kl.bfloat16)


@kiln.jit
def _sigmoid_denominator(g):
    """``1 + expf(-g)`` (libdevice expf, as ``kl.sigmoid(precise=True)``) of bf16 g."""
    return 1.0 + kl.exp(-g.to(kl.float32), precise=True)


@kiln.jit
def _gate_bf16_sigmoid(x, sg):
    """bf16(x * sg) as fp32 of bf16 x and sg."""
    return (x.to(kl.float32) * sg.to(kl.float32)).to(kl.bfloat16).to(kl.float32)


#: ``recip_bf16_newton`` applies when every gate value of the row is at least this:
#: 1 + expf(87) = 6.1e37 < 2^126 = 8.5e37 (the next bf16 value down, -87.5, gives 1.0e38)
NEWTON_MIN_GATE = -87.0


@kiln.jit
def _gate_bits(x, g):
    """``_gate`` with the final bf16 -> fp32 widening on the bits (the same value; NEWTON's
    two arms then end differently, see there)."""
    sg = kl.sigmoid(g.to(kl.float32), precise=True).to(kl.bfloat16).to(kl.float32)
    y = (x.to(kl.float32) * sg).to(kl.bfloat16).to(kl.int16, bitcast=True)
    return (y.to(kl.int32) << 16).to(kl.float32, bitcast=True)


@kiln.jit
def _quant_row_chunk(q_ptr, t, q_s0, offs, H, y, s, r):
    kl.store(q_ptr + t * q_s0 + offs, div_by_recip(y, s, r).to(kl.float8e4m3), mask=offs < H)


@kiln.jit(num_warps=8)
def mla_output_gate_fp8_kernel(x_ptr, gate_ptr, q_ptr, s_ptr, H, x_s0, g_s0, q_s0,
                               BLOCK: kl.constexpr, RECIP: kl.constexpr = False,
                               CHUNKS: kl.constexpr = 0, LOADS_FIRST: kl.constexpr = False,
                               NEWTON: kl.constexpr = False):
    """RECIP: the row quantized by quant.py's ``fp8_quant_groups_recip`` as a [1, BLOCK] tile
    (no division per element; y is bf16-valued, the case test/python/test_quant_variants.py
    checks exhaustively: same bits).

    CHUNKS (1 to 3; 0: off): the row as CHUNKS tiles of BLOCK columns held at once (K3's
    H = 1536: three of 512, where one power-of-two tile of 2048 leaves a quarter of the
    threads with masked lanes only, computing nothing useful), their absolute values
    combined elementwise before the one reduction, quantized as RECIP does (same bits).

    LOADS_FIRST (with CHUNKS): every chunk's x and gate loaded before the first is gated.
    Otherwise chunk c + 1's loads came after chunk c's divisions in the sm_90a SASS (ptxas
    did not move them above the divisions' slow-path branches and calls): one DRAM round
    trip per chunk, one after the other.

    NEWTON (with CHUNKS; loads as LOADS_FIRST): the bf16 sigmoid from ``recip_bf16_newton``
    (no division, no branch per value; same bits) where every gate value of the row is >=
    NEWTON_MIN_GATE (one min reduction, a branch uniform over the program), else through
    ``_gate`` as before."""
    t = kl.program_id(0)
    offs = kl.arange(0, BLOCK)
    kl.pdl_wait()  # x and gate may come from the previous kernels in the stream
    if CHUNKS > 0 and NEWTON:
        x0, g0 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs, H)
        gm = g0.to(kl.float32)
        if CHUNKS > 1:
            x1, g1 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs + BLOCK, H)
            gm = kl.minimum(gm, g1.to(kl.float32))
        if CHUNKS > 2:
            x2, g2 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs + 2 * BLOCK, H)
            gm = kl.minimum(gm, g2.to(kl.float32))
        # the rows with a gate below the bound (none in practice) as before. The arms start
        # and end differently (pdl_launch_dependents first, the widening of y): with a
        # common start LLVM hoisted the expf above the branch (and ptxas issued x's loads
        # after it), with a common end it sank the bf16 multiplies below it (one HMUL2 a
        # value instead of a pair)
        if kl.min(gm, axis=0) < NEWTON_MIN_GATE:  # NaN is ignored: NaN both ways
            y0 = _gate_bits(x0, g0)
            if CHUNKS > 1:
                y1 = _gate_bits(x1, g1)
            if CHUNKS > 2:
                y2 = _gate_bits(x2, g2)
            kl.pdl_launch_dependents()
        else:
            kl.pdl_launch_dependents()
            y0 = _gate_bf16_sigmoid(x0, recip_bf16_newton(_sigmoid_denominator(g0)))
            if CHUNKS > 1:
                y1 = _gate_bf16_sigmoid(x1, recip_bf16_newton(_sigmoid_denominator(g1)))
            if CHUNKS > 2:
                y2 = _gate_bf16_sigmoid(x2, recip_bf16_newton(_sigmoid_denominator(g2)))
        m = kl.abs(y0)
        if CHUNKS > 1:
            m = kl.maximum(m, kl.abs(y1))
        if CHUNKS > 2:
            m = kl.maximum(m, kl.abs(y2))
    elif CHUNKS > 0 and LOADS_FIRST:
        x0, g0 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs, H)
        if CHUNKS > 1:
            x1, g1 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs + BLOCK, H)
        if CHUNKS > 2:
            x2, g2 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs + 2 * BLOCK, H)
        y0 = _gate(x0, g0)
        m = kl.abs(y0)
        if CHUNKS > 1:
            y1 = _gate(x1, g1)
            m = kl.maximum(m, kl.abs(y1))
        if CHUNKS > 2:
            y2 = _gate(x2, g2)
            m = kl.maximum(m, kl.abs(y2))
    elif CHUNKS > 0:
        y0 = _gated_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs, H)
        m = kl.abs(y0)
        if CHUNKS > 1:
            y1 = _gated_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs + BLOCK, H)
            m = kl.maximum(m, kl.abs(y1))
        if CHUNKS > 2:
            y2 = _gated_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs + 2 * BLOCK, H)
            m = kl.maximum(m, kl.abs(y2))
    if CHUNKS > 0:
        if not NEWTON:  # NEWTON: in its arms
            kl.pdl_launch_dependents()
        s = div_by_recip(kl.maximum(kl.max(m, axis=0), EPS), FP8_MAX, INV_FP8_MAX)
        r = 1.0 / s
        _quant_row_chunk(q_ptr, t, q_s0, offs, H, y0, s, r)
        if CHUNKS > 1:
            _quant_row_chunk(q_ptr, t, q_s0, offs + BLOCK, H, y1, s, r)
        if CHUNKS > 2:
            _quant_row_chunk(q_ptr, t, q_s0, offs + 2 * BLOCK, H, y2, s, r)
        kl.store(s_ptr + t + kl.arange(0, 1), s + kl.zeros([1], kl.float32))
        return
    mask = offs < H
    x = kl.load(x_ptr + t * x_s0 + offs, mask=mask, other=0.0).to(kl.float32)
    g = kl.load(gate_ptr + t * g_s0 + offs, mask=mask, other=0.0).to(kl.float32)
    kl.pdl_launch_dependents()
    sg = kl.sigmoid(g, precise=True).to(kl.bfloat16).to(kl.float32)
    y = (x * sg).to(kl.bfloat16).to(kl.float32)  # masked lanes are 0: they do not move absmax
    if RECIP:
        q2, s1 = fp8_quant_groups_recip(y[None, :], False)
        kl.store(q_ptr + t * q_s0 + offs[None, :], q2, mask=mask[None, :])
        kl.store(s_ptr + t + kl.arange(0, 1), s1)
    else:
        s = fp8_group_scale(kl.max(kl.abs(y), axis=0), False)
        kl.store(q_ptr + t * q_s0 + offs, (y / s).to(kl.float8e4m3), mask=mask)
        kl.store(s_ptr + t, s)


#: 256 threads x 8 bf16 (one 16-byte vector each).
BLOCK, NUM_WARPS = 2048, 8
#: the bf16 gate as a programmatic dependent launch (``pdl_wait`` before the loads); swept by
#: ``bench/kimi_k3/run.py --sweep --only mla_output_gate`` at T = 1, 64 and 16384.
PDL = True
#: FP8 variant: bf16 elements per thread (8: one 16-byte vector, up to 8 warps; 16 or 32: half
#: or a quarter of the warps) and the kernel's RECIP (same bits). H200 sweep at T = 16384
#: (``bench/kimi_k3/run.py --sweep``): 16 elements + RECIP 45.7 us (64.5 % of copy
#: bandwidth), 8 + RECIP 89.6 us; 8 with IEEE division was 94.5 us. Why 8 was slow: a
#: kernel's layout gives each thread runs of 16 / (narrowest element stored) = 16 values
#: (AssignLayout; the e4m3 output), so with 8 a thread half the warps held copies.
FP8_THREAD_ELEMS, FP8_RECIP = 16, True
#: FP8_CHUNKS: where three power-of-two tiles cover H with fewer idle lanes than one (K3's
#: H = 1536: 3 x 512 on one warp, 48 values a thread; one 2048 tile on four warps left the
#: fourth warp all masked lanes, computing a third more than needed, and reduced across
#: warps through shared memory), the kernel's CHUNKS = 3 (needs RECIP). sm_90a SASS: 694
#: instructions a thread for 12 useful values on average -> 1778 for 48, no barrier. Measured
#: slower on the H200 (T = 16384: 47.1 us vs 43.6 us for the 2048 tile on 4 warps), without
#: FP8_LOADS_FIRST: the SASS loaded chunk c + 1 only after chunk c's divisions, three DRAM
#: round trips one after the other in every warp.
#: FP8_LOADS_FIRST: the kernel's LOADS_FIRST, all three chunks' x and gate loaded before the
#: first is gated (12 16-byte loads in flight a thread; 1775 instructions, 100 registers, no
#: spill); the 2048 tile runs four warps' worth of instructions for three warps of data.
#: H200 at T = 16384: 40.6 us (72.9 % of copy bandwidth) vs 43.8 for the former default
#: (FP8_CHUNKS = FP8_LOADS_FIRST = False) and 46.8 for the chunks without LOADS_FIRST.
FP8_CHUNKS, FP8_LOADS_FIRST = True, True
#: FP8_ONE_REDUCTION: without chunks (FP8_CHUNKS off or H not 3 x a power of two), the one
#: tile through the CHUNKS code path (CHUNKS = 1, needs RECIP): the absmax reduced once to a
#: scalar, where RECIP's [1, BLOCK] form reduced it twice (two shared-memory rounds, four
#: barriers). sm_90a at H = 1536, 4 warps: 694 -> 669 instructions, 56 -> 48 registers.
#: H200 (without chunks, LOADS_FIRST on): 40.2 us.
FP8_ONE_REDUCTION = True
#: FP8_MAXNREG: the FP8 kernel's register cap (None: ptxas's choice; with chunks 92 or 96
#: keeps 22 or 21 warps an SM with no spill, 88 spills). H200 with chunks: 40.6 us uncapped,
#: 37.1 at 96, 36.6 at 92 (80.9 % of copy bandwidth), 39.0 at 88 and 39.2 at 84 (spills).
#: With FP8_NEWTON (below) 96 (no stack).
FP8_MAXNREG = 96
#: ... from FP8_CHUNKS_MIN_T rows on: below, a row's latency is what counts, and one warp's
#: chain over 48 values a thread is longer than four warps' over 16 (H200: T = 1 3.51 us with
#: chunks vs 1.82 us for the one tile, T = 64 3.62 vs 1.99, T = 4096 12.69 vs 12.47).
FP8_CHUNKS_MIN_T = 4096
#: FP8_NEWTON (with FP8_CHUNKS or FP8_ONE_REDUCTION): the kernel's NEWTON, the sigmoid's
#: reciprocal as rsqrt.approx squared and one Markstein step (same bf16 bits) where the row's
#: gates are >= -87. sm_90a, K3's 16384-row config (3 x 512 on one warp, cap 92): the 48
#: rcp.rn sites (an exponent test and BSSY/BRA/BSYNC around rcp.approx and its step, 10
#: instructions run each, nothing interleaved across them) become straight-line code, but
#: rsqrt.approx in a kernel without FTZ brings 4 instructions of subnormal fix-up (FSETP,
#: FMUL, FSEL, FMUL) and the row's gate minimum one FMNMX a value, so about as many run:
#: 1459 a row before, 1458 now (202 up to the branch with all 12 loads, 959 in the fast
#: arm, ~300 after; static 1856 -> 2880 with the IEEE arm). What it may gain is the latency
#: of the unrolled chains. 92 registers (8 bytes of stack: two predicates), 96 none. H200
#: sweep (T = 16384, ``bench/kimi_k3/run.py --sweep --only mla_output_gate_fp8``, one run):
#: with NEWTON 32.73 us at 96 registers (90.1 % of copy bandwidth), 32.74 at 104, 33.56 at
#: 92, 34.21 at 88; without it 37.43 at 96, 37.66 at 92 (the former default). The chains
#: interleave: the same instruction count runs 13 % faster.
FP8_NEWTON = True
#: Tried and removed: a persistent ring form, one-warp programs over the rows with the next
#: rows bulk-copied into a shared-memory ring (``kl.bulk_load`` in ``kl.range(num_stages=)``)
#: so that every warp always has a row in flight (19 KB of shared memory a program, 11 an
#: SM at 2 stages; ~1580 instructions a row). H200 at T = 16384: 41.6-42.1 us at 8-11
#: programs an SM with NEWTON, 52-53 at 6, 51-76 without NEWTON, against 32.7 us for the
#: one-row programs (bench/results/h200-bench_kimi_k3_sweep_mxfp4_gate8.md).


def _fp8_config(h: int, t: Optional[int] = None) -> tuple:
    """(BLOCK, CHUNKS, num_warps): the row in one tile (CHUNKS 0, or 1 with
    FP8_ONE_REDUCTION), or with FP8_CHUNKS, from FP8_CHUNKS_MIN_T rows on (t None: the
    chunked form where it applies), in three tiles of BLOCK where they waste fewer lanes and
    fill a warp; FP8_THREAD_ELEMS bf16 per thread, 1 to 8 warps."""
    block = 1 << max(3, (h - 1).bit_length())
    chunks = 1 if FP8_ONE_REDUCTION and FP8_RECIP else 0
    third = 1 << max(3, (-(-h // 3) - 1).bit_length())
    if (FP8_CHUNKS and FP8_RECIP and 3 * third < block and third >= 32 * FP8_THREAD_ELEMS
            and (t is None or t >= FP8_CHUNKS_MIN_T)):
        block, chunks = third, 3
    return block, chunks, min(8, max(1, block // (32 * FP8_THREAD_ELEMS)))


def _fp8_constexprs(h: int, t: Optional[int] = None) -> dict:
    block, chunks, _ = _fp8_config(h, t)
    return {"BLOCK": block, "RECIP": FP8_RECIP, "CHUNKS": chunks,
            "LOADS_FIRST": FP8_LOADS_FIRST, "NEWTON": FP8_NEWTON and chunks > 0}


AOT_SPECIALIZATIONS = [
    Spec(mla_output_gate_kernel, name="mla_output_gate",
         signature={"x_ptr": "*bf16", "gate_ptr": "*bf16", "out_ptr": "*bf16", "N": "i32"},
         constexprs={"BLOCK": BLOCK, "PDL": PDL},
         divisibility={"x_ptr": 16, "gate_ptr": 16, "out_ptr": 16, "N": 8},
         num_warps=NUM_WARPS),
] + [
    # K3: 12 local heads x 128 = 1536; few rows (t = 1) and many (t = None)
    Spec(mla_output_gate_fp8_kernel, name="mla_output_gate_fp8",
         signature={"x_ptr": "*bf16", "gate_ptr": "*bf16", "q_ptr": "*f8e4m3", "s_ptr": "*f32",
                    "H": "i32", "x_s0": "i32", "g_s0": "i32", "q_s0": "i32"},
         constexprs=_fp8_constexprs(1536, t),
         divisibility=["x_ptr", "gate_ptr", "q_ptr", "s_ptr", "H", "x_s0", "g_s0", "q_s0"],
         num_warps=_fp8_config(1536, t)[2], maxnreg=FP8_MAXNREG)
    for t in (1, None)
    if t is None or _fp8_config(1536, t) != _fp8_config(1536)
]


def mla_output_gate(x: Any, gate: Any, out: Optional[Any] = None) -> Any:
    """``x * sigmoid(gate)`` bf16, bit-exact with torch; x and gate contiguous bf16 of one
    shape with numel % 8 == 0; ``out`` (allocated if None) may alias x. Checks raise before
    launch."""
    op = "mla_output_gate"
    L.check_dtype(op, "x", x, ("bfloat16",))
    L.check_dtype(op, "gate", gate, ("bfloat16",))
    shp = L.shape(x)
    L.check_shape(op, "gate", gate, shp)
    L.check_contiguous(op, "x", x)
    L.check_contiguous(op, "gate", gate)
    n = 1
    for s in shp:
        n *= s
    if n % 8:
        raise ValueError(f"{op}: the number of elements must be a multiple of 8 (16-byte "
                         f"vectors), got {n}")
    if out is None:
        import torch

        out = torch.empty(shp, dtype=torch.bfloat16, device=x.device)
    else:
        L.check_dtype(op, "out", out, ("bfloat16",))
        L.check_shape(op, "out", out, shp)
        L.check_contiguous(op, "out", out)
    L.check_same_device(op, ("x", x), ("gate", gate), ("out", out))
    L.check_int32_extent(op, "N", n + BLOCK)
    L.launch(mla_output_gate_kernel, "mla_output_gate", ((n + BLOCK - 1) // BLOCK,),
             (x, gate, out, n), {"BLOCK": BLOCK, "PDL": PDL}, NUM_WARPS)
    return out


def mla_output_gate_fp8(x: Any, gate: Any, out_q: Optional[Any] = None,
                        out_s: Optional[Any] = None) -> tuple:
    """Gated row ``y = x * sigmoid(gate)`` (bf16, as torch) quantized per token: returns
    (out_q fp8 e4m3 [T, H], out_s fp32 [T]) per the module docstring; x, gate bf16 [T, H]
    (last dimension contiguous, 16-byte row strides), H % 8 == 0, H <= 16384; out_q and out_s
    allocated when None (given: contiguous). Every check raises before any launch."""
    op = "mla_output_gate_fp8"
    L.check_dtype(op, "x", x, ("bfloat16",))
    L.check_dtype(op, "gate", gate, ("bfloat16",))
    t, h = L.check_shape(op, "x", x, (None, None))
    L.check_shape(op, "gate", gate, (t, h))
    if h % 8:
        raise ValueError(f"{op}: H = {h} must be a multiple of 8 (16-byte vectors)")
    if h > 16384:
        raise ValueError(f"{op}: H = {h} is larger than one tile of 16384")
    strides = []
    for what, v in (("x", x), ("gate", gate)):
        L.check_inner_contiguous(op, what, v)
        s0 = L.strides(v)[0] if t > 1 else 0
        if s0 % 8:
            raise ValueError(f"{op}: the row stride of {what} ({s0}) must be a multiple of 8 "
                             f"elements (16 bytes)")
        L.check_aligned(op, what, v)
        strides.append(s0)
    if out_q is not None:
        L.check_dtype(op, "out_q", out_q, ("float8_e4m3fn",))
        L.check_shape(op, "out_q", out_q, (t, h))
        L.check_contiguous(op, "out_q", out_q)
        L.check_aligned(op, "out_q", out_q)
    if out_s is not None:
        L.check_dtype(op, "out_s", out_s, ("float32",))
        L.check_shape(op, "out_s", out_s, (t,))
        L.check_contiguous(op, "out_s", out_s)
    named = [("x", x), ("gate", gate)] + [
        (w, v) for w, v in (("out_q", out_q), ("out_s", out_s)) if v is not None]
    L.check_same_device(op, *named)
    L.check_int32_extent(op, "T * row stride", t * max(strides[0], strides[1], h) + h)
    if out_q is None or out_s is None:
        import torch

        if out_q is None:
            out_q = torch.empty((t, h), dtype=torch.float8_e4m3fn, device=x.device)
        if out_s is None:
            out_s = torch.empty((t,), dtype=torch.float32, device=x.device)
    if t == 0 or h == 0:
        return out_q, out_s
    L.launch(mla_output_gate_fp8_kernel, op, (t,),
             (x, gate, out_q, out_s, h, strides[0], strides[1], h), _fp8_constexprs(h, t),
             _fp8_config(h, t)[2], FP8_MAXNREG)
    return out_q, out_s
