"""MLA output gate, bf16:

    out = bf16( f32(x) * f32( bf16( sigmoid_f32(gate) ) ) )

the sigmoid computed in fp32 and rounded to bf16 before the multiply, which reproduces torch's
``x * torch.sigmoid(gate)`` on bf16 tensors bit for bit (double rounding). The sigmoid is
``1 / (1 + expf(-g))`` with libdevice's expf and an IEEE division (``precise=True``), as
torch's CUDA sigmoid computes it. x, gate and out are bf16 with N elements (any shape,
contiguous), N % 8 == 0; BLOCK elements per program in 16-byte vectors.

FP8 variant (``mla_output_gate_fp8``, the PTPC o_proj path): x, gate bf16 [T, H] (rows may be
strided, last dimension contiguous), H % 8 == 0; one program per token computes the same gated
row y (bf16-rounded, bit-exact with torch), then a per-token scale over the whole row and the
quantized row (the e4m3 conversion rounds to nearest even and saturates):

    s[t] = max(absmax(y[t, :]), 1e-10) / 448            out_s fp32 [T]       (IEEE division)
    q[t] = sat_e4m3(f32(y[t, :]) / s[t])                out_q fp8 e4m3 [T, H] (IEEE division)

The kernel computes both without a division and the sigmoid's reciprocal without one where
the row's gates allow it, with the same bits (``recip_bf16_newton``, quant.py's
``div_by_recip``). The bundle holds H = 1536 and, for every other H (at run time), row
stride and ``out_s`` address, ``mla_output_gate_fp8_generic``; the bf16 gate for tensors at
any address as ``mla_output_gate_generic``.

Specification: docs/kernels/mla_output_gate.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .quant import EPS, FP8_MAX, INV_FP8_MAX, div_by_recip


@kiln.jit(num_warps=8)
def mla_output_gate_kernel(x_ptr, gate_ptr, out_ptr, N, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < N
    kl.pdl_wait()  # x and gate may come from the previous kernels in the stream
    x = kl.load(x_ptr + offs, mask=mask, other=0.0).to(kl.float32)
    g = kl.load(gate_ptr + offs, mask=mask, other=0.0).to(kl.float32)
    s = kl.sigmoid(g, precise=True).to(kl.bfloat16).to(kl.float32)
    kl.store(out_ptr + offs, (x * s).to(kl.bfloat16), mask=mask)
    kl.pdl_launch_dependents()


@kiln.jit
def _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs, H):
    """(x, gate) bf16 at columns ``offs`` of row t (0 past H)."""
    mask = offs < H
    x = kl.load(x_ptr + t * x_s0 + offs, mask=mask, other=0.0)
    g = kl.load(gate_ptr + t * g_s0 + offs, mask=mask, other=0.0)
    return x, g


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
    """bf16(x * bf16(sigmoid(g))) as fp32 of bf16 x and g (0 where x, g are 0), the IEEE
    sigmoid, with the final bf16 -> fp32 widening on the bits (the same value; the two arms
    of the FP8 kernel then end differently, see there)."""
    sg = kl.sigmoid(g.to(kl.float32), precise=True).to(kl.bfloat16).to(kl.float32)
    y = (x.to(kl.float32) * sg).to(kl.bfloat16).to(kl.int16, bitcast=True)
    return (y.to(kl.int32) << 16).to(kl.float32, bitcast=True)


@kiln.jit
def _quant_row_chunk(q_ptr, t, q_s0, offs, H, y, s, r):
    kl.store(q_ptr + t * q_s0 + offs, div_by_recip(y, s, r).to(kl.float8e4m3), mask=offs < H)


@kiln.jit(num_warps=8)
def mla_output_gate_fp8_kernel(x_ptr, gate_ptr, q_ptr, s_ptr, H, x_s0, g_s0, q_s0,
                               BLOCK: kl.constexpr, CHUNKS: kl.constexpr):
    """The row as CHUNKS (1 to 3) tiles of BLOCK columns held at once (K3's H = 1536 at many
    rows: three of 512 on one warp, where one power-of-two tile of 2048 leaves a quarter of
    the threads with masked lanes only), every chunk's x and gate loaded before the first is
    gated, their absolute values combined elementwise before the one reduction to a scalar.

    The bf16 sigmoid comes from ``recip_bf16_newton`` (no division, no branch per value;
    same bits) where every gate value of the row is >= NEWTON_MIN_GATE (one min reduction, a
    branch uniform over the program), else through ``_gate_bits``, the IEEE sigmoid. The
    row is quantized by quant.py's ``div_by_recip`` (no division per element; y is
    bf16-valued, the case test/python/test_quant_variants.py checks exhaustively: same
    bits)."""
    kl.static_assert(1 <= CHUNKS and CHUNKS <= 3, "mla_output_gate_fp8_kernel: 1 to 3 chunks")
    t = kl.program_id(0)
    offs = kl.arange(0, BLOCK)
    kl.pdl_wait()  # x and gate may come from the previous kernels in the stream
    x0, g0 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs, H)
    gm = g0.to(kl.float32)
    if CHUNKS > 1:
        x1, g1 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs + BLOCK, H)
        gm = kl.minimum(gm, g1.to(kl.float32))
    if CHUNKS > 2:
        x2, g2 = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, offs + 2 * BLOCK, H)
        gm = kl.minimum(gm, g2.to(kl.float32))
    # the rows with a gate below the bound (none in practice) the IEEE way. The arms start
    # and end differently (pdl_launch_dependents first, the widening of y): with a common
    # start LLVM hoisted the expf above the branch (and ptxas issued x's loads after it),
    # with a common end it sank the bf16 multiplies below it (one HMUL2 a value instead of a
    # pair)
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
    s = div_by_recip(kl.maximum(kl.max(m, axis=0), EPS), FP8_MAX, INV_FP8_MAX)
    r = 1.0 / s
    _quant_row_chunk(q_ptr, t, q_s0, offs, H, y0, s, r)
    if CHUNKS > 1:
        _quant_row_chunk(q_ptr, t, q_s0, offs + BLOCK, H, y1, s, r)
    if CHUNKS > 2:
        _quant_row_chunk(q_ptr, t, q_s0, offs + 2 * BLOCK, H, y2, s, r)
    kl.store(s_ptr + t + kl.arange(0, 1), s + kl.zeros([1], kl.float32))


@kiln.jit(num_warps=4)
def mla_output_gate_fp8_generic_kernel(x_ptr, gate_ptr, q_ptr, s_ptr, H, x_s0, g_s0, q_s0,
                                       BLOCK: kl.constexpr):
    """``mla_output_gate_fp8_kernel`` for any H (a runtime value): the row in tiles of BLOCK
    columns, twice: the gated values' absmax, then each tile gated again (the same bits)
    and quantized. The bf16 sigmoid the IEEE way (``_gate_bits``), the fast kernel's bits
    for every gate value."""
    t = kl.program_id(0)
    offs = kl.arange(0, BLOCK)
    kl.pdl_wait()  # x and gate may come from the previous kernels in the stream
    m = kl.zeros([BLOCK], kl.float32)
    for c0 in range(0, H, BLOCK):
        x, g = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, c0 + offs, H)
        m = kl.maximum(m, kl.abs(_gate_bits(x, g)))
    kl.pdl_launch_dependents()
    s = div_by_recip(kl.maximum(kl.max(m, axis=0), EPS), FP8_MAX, INV_FP8_MAX)
    r = 1.0 / s
    for c0 in range(0, H, BLOCK):
        x, g = _load_row_chunk(x_ptr, gate_ptr, t, x_s0, g_s0, c0 + offs, H)
        _quant_row_chunk(q_ptr, t, q_s0, c0 + offs, H, _gate_bits(x, g), s, r)
    kl.store(s_ptr + t + kl.arange(0, 1), s + kl.zeros([1], kl.float32))


@dataclasses.dataclass(frozen=True)
class Settings:
    """mla_output_gate's and mla_output_gate_fp8's tuning; measured in
    bench/results/kimi_k3/mla_output_gate.md."""
    block: int = 2048  # bf16 gate: one 16-byte vector (8 bf16) a thread ...
    num_warps: int = 8  # ... on 8 warps
    fp8_thread_elems: int = 16  # FP8: bf16 values a thread (the e4m3 store's run of 16)
    fp8_chunks_min_t: int = 4096  # three chunks on one warp from this many rows on
    fp8_maxnreg: Optional[int] = 96  # 21 warps an SM with no spill or stack


SETTINGS = Settings()


def launch_config(settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps) of the bf16 gate."""
    return {"BLOCK": settings.block}, settings.num_warps


def fp8_launch_config(h: int, t: Optional[int] = None, settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps, maxnreg) of the FP8 gate on T = ``t`` rows of H = ``h``
    (t None: the bundle's many-row specialization): the row in one tile (CHUNKS = 1), or
    from fp8_chunks_min_t rows on in three tiles of BLOCK where they waste fewer lanes and
    fill a warp; fp8_thread_elems bf16 a thread, 1 to 8 warps."""
    te = settings.fp8_thread_elems
    block, chunks = 1 << max(3, (h - 1).bit_length()), 1
    third = 1 << max(3, (-(-h // 3) - 1).bit_length())
    if (3 * third < block and third >= 32 * te
            and (t is None or t >= settings.fp8_chunks_min_t)):
        block, chunks = third, 3
    return ({"BLOCK": block, "CHUNKS": chunks}, min(8, max(1, block // (32 * te))),
            settings.fp8_maxnreg)


def _fp8_spec(t: Optional[int]) -> Spec:
    constexprs, num_warps, maxnreg = fp8_launch_config(1536, t)
    return Spec(mla_output_gate_fp8_kernel, name="mla_output_gate_fp8",
                signature={"x_ptr": "*bf16", "gate_ptr": "*bf16", "q_ptr": "*f8e4m3",
                           "s_ptr": "*f32", "H": "i32", "x_s0": "i32", "g_s0": "i32",
                           "q_s0": "i32"},
                constexprs=constexprs,
                divisibility=["x_ptr", "gate_ptr", "q_ptr", "s_ptr", "H", "x_s0", "g_s0",
                              "q_s0"],
                num_warps=num_warps, maxnreg=maxnreg)


#: the bundle's bf16 gate for tensors at any address (the fast one assumes 16-byte aligned)
GENERIC = "mla_output_gate_generic"
#: the bundle's FP8 gate for every H, row stride and out_s address the wrapper accepts
FP8_GENERIC = "mla_output_gate_fp8_generic"
#: the generic FP8 kernel's columns a tile: 8 bf16 (16 bytes) a thread on 4 warps
FP8_GENERIC_BLOCK = 1024
_SIG = {"x_ptr": "*bf16", "gate_ptr": "*bf16", "out_ptr": "*bf16", "N": "i32"}

AOT_SPECIALIZATIONS = [
    Spec(mla_output_gate_kernel, name="mla_output_gate", signature=_SIG,
         constexprs=launch_config()[0],
         divisibility={"x_ptr": 16, "gate_ptr": 16, "out_ptr": 16, "N": 8},
         num_warps=launch_config()[1]),
    Spec(mla_output_gate_kernel, name=GENERIC, signature=_SIG, constexprs=launch_config()[0],
         divisibility={"N": 8}, num_warps=launch_config()[1]),
] + [
    # K3: 12 local heads x 128 = 1536; few rows (t = 1) and many (t = None)
    _fp8_spec(t) for t in (1, None)
    if t is None or fp8_launch_config(1536, t) != fp8_launch_config(1536)
] + [
    # what the wrapper checks: x, gate and out_q 16-byte aligned, H and the row strides
    # multiples of 8
    Spec(mla_output_gate_fp8_generic_kernel, name=FP8_GENERIC, signature=_fp8_spec(1).signature,
         constexprs={"BLOCK": FP8_GENERIC_BLOCK},
         divisibility={"x_ptr": 16, "gate_ptr": 16, "q_ptr": 16, "H": 8, "x_s0": 8, "g_s0": 8,
                       "q_s0": 8}, num_warps=mla_output_gate_fp8_generic_kernel.num_warps),
]


def mla_output_gate(x: Any, gate: Any, out: Optional[Any] = None, *,
                    settings: Settings = SETTINGS) -> Any:
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
    constexprs, num_warps = launch_config(settings)
    block = constexprs["BLOCK"]
    L.check_int32_extent(op, "N", n + block)
    launch = L.Launch(mla_output_gate_kernel, "mla_output_gate", ((n + block - 1) // block,),
                      (x, gate, out, n), constexprs, num_warps)
    L.launch(*launch, generic=launch._replace(name=GENERIC))
    return out


def mla_output_gate_fp8(x: Any, gate: Any, out_q: Optional[Any] = None,
                        out_s: Optional[Any] = None, *, settings: Settings = SETTINGS) -> tuple:
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
    constexprs, num_warps, maxnreg = fp8_launch_config(h, t, settings)
    args = (x, gate, out_q, out_s, h, strides[0], strides[1], h)
    L.launch(mla_output_gate_fp8_kernel, op, (t,), args, constexprs, num_warps, maxnreg,
             generic=L.Launch(mla_output_gate_fp8_generic_kernel, FP8_GENERIC, (t,), args,
                              {"BLOCK": FP8_GENERIC_BLOCK},
                              mla_output_gate_fp8_generic_kernel.num_warps))
    return out_q, out_s
