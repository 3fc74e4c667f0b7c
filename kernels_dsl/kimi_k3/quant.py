"""Per-token-group FP8 quantization, MXFP4 quantization (``quant_mxfp4``, contract in its
docstring) and the group-quant helpers the other FP8 kernels of the family inline (SiTU masked
post-quant, MLA output gate FP8, MLA FP8 KV scatter).

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

Each program quantizes ROWS groups of one token, viewed as a [ROWS, group] tile: one absmax per
tile row (a reduction along axis 1). T = 0 launches nothing. Non-finite inputs are outside the
contract (an inf makes its group's scale inf).

The quotients and scales are computed without a division (``fp8_quant_groups_recip``), with
the IEEE divisions' bits: the argument and the exhaustive checks are in
docs/kernels/quant.md and test/python/test_quant_variants.py.

The bundle holds group 128 and MXFP4 for row strides that are multiples of 16 (32) elements
and, for every other group size and row stride, ``per_token_group_quant_fp8_generic`` and
``quant_mxfp4_generic``.

Specification: docs/kernels/quant.md
"""

from __future__ import annotations

import dataclasses
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
    """Quantizes the fp32 tile ``v`` [R, G] row by row: (q e4m3 [R, G], s fp32 [R]), with
    ``s = max(absmax, 1e-10) / 448`` (with UE8M0 rounded up to a power of two on the fp32
    bits: exact ``2 ** ceil(log2(s))`` for the positive normal s) and ``q = sat_e4m3(v / s)``,
    without a division per element: the scale from ``div_by_recip`` with the constant
    RN(1/448), one reciprocal per group, and the quotients by ``div_by_recip`` (with UE8M0 the
    reciprocal of the power of two is exact, so ``v * r`` is the quotient itself). The IEEE
    divisions' bits for bf16-valued v (test/python/test_quant_variants.py) and for SiTU's
    fp32 activations (situ_quant.py)."""
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
                                     UE8M0: kl.constexpr):
    """A grid of (T, cdiv(groups_per_row, ROWS)) programs, the token a scalar (no integer
    division); ``num_groups`` (T * groups_per_row) is not read. The scales are stored from
    the [ROWS, GROUP] tile by the thread holding column 0 of each group (no layout
    conversion through shared memory)."""
    t = kl.program_id(0)
    g = kl.program_id(1) * ROWS + kl.arange(0, ROWS)
    valid = g < groups_per_row
    col = kl.arange(0, GROUP)[None, :]
    kl.pdl_wait()  # x may come from the previous kernel in the stream
    x = kl.load(x_ptr + (t * x_s0 + g * GROUP)[:, None] + col, mask=valid[:, None], other=0.0)
    kl.pdl_launch_dependents()
    q, s = fp8_quant_groups_recip(x.to(kl.float32), UE8M0)
    kl.store(q_ptr + (t * q_s0 + g * GROUP)[:, None] + col, q, mask=valid[:, None])
    kl.store(s_ptr + (t * s_st + g * s_sg)[:, None] + col * 0,
             s[:, None] + kl.zeros([ROWS, GROUP], kl.float32),
             mask=valid[:, None] & (col == 0))


@kiln.jit
def _mx_quant_store(lo, hi, dst, sdst, valid, ROWS: kl.constexpr, OUT_CACHE: kl.constexpr):
    """Quantizes the [ROWS, 16] fp32 tiles ``lo`` / ``hi`` (the even / odd values of ROWS
    blocks, ``valid``) and stores their 16 packed bytes at ``dst`` (with the cache modifier
    OUT_CACHE) and E8M0 byte at ``sdst`` ([ROWS] pointers). A byte's two magnitude codes are
    combined by one multiply-add (lo + (hi << 4), both at most 7) and its two signs ORed in
    (8, 128); the scale bytes are stored from the [ROWS, 16] tile by the thread holding the
    block (no layout conversion through shared memory)."""
    pair = kl.arange(0, 16)[None, :]
    amax = kl.maximum(kl.max(kl.abs(lo), axis=1), kl.max(kl.abs(hi), axis=1))
    # floor(log2(amax)) from the exponent field; amax = 0 (or subnormal) gives the lowest
    # scale, 2^-127 (E8M0 byte 0)
    e8m0 = kl.minimum(kl.maximum(((amax.to(kl.int32, bitcast=True) >> 23) & 0xFF) - 2, 0), 254)
    inv = ((254 - e8m0) << 23).to(kl.float32, bitcast=True)  # 2^-(e8m0 - 127), exact
    tl = lo * inv[:, None]
    th = hi * inv[:, None]
    code = e2m1_magnitude(tl) + (e2m1_magnitude(th) << 4)
    code = kl.where(tl < 0, code | 8, code)
    code = kl.where(th < 0, code | 128, code)
    kl.store(dst[:, None] + pair, code.to(kl.uint8), mask=valid[:, None],
             cache_modifier=OUT_CACHE)
    kl.store(sdst[:, None] + pair * 0,
             e8m0.to(kl.uint8)[:, None] + kl.zeros([ROWS, 16], kl.uint8),
             mask=valid[:, None] & (pair == 0))


@kiln.jit
def _mx_words(src, valid):
    """The [ROWS, 16] int32 words (one (even, odd) bf16 pair each) of the blocks at ``src``
    ([ROWS] pointers)."""
    return kl.load(src[:, None] + kl.arange(0, 16)[None, :], mask=valid[:, None], other=0)


@kiln.jit(num_warps=4)
def quant_mxfp4_kernel(x_ptr, p_ptr, s_ptr, num_blocks, blocks_per_row, x_s0, p_s0, s_s0,
                       ROWS: kl.constexpr, CHUNKS: kl.constexpr = 0,
                       LOOKAHEAD: kl.constexpr = 1, OUT_CACHE: kl.constexpr = ""):
    """Blocks of 32 values, each read as its 16 (even, odd) bf16 pairs: x_ptr is the bf16
    data viewed as int32 words (x_s0 in words), so the loads are contiguous 16-byte vectors
    and bf16 -> f32 is a shift; the pairs are the two nibbles of the block's 16 output bytes.

    CHUNKS = 0: a grid of (R, cdiv(blocks_per_row, ROWS)) programs, ROWS blocks of one row (a
    scalar: no integer division) a program, one block a thread; ``num_blocks`` is not read.

    CHUNKS > 0: a program is ROWS / 32 rows times CHUNKS chunks of 32 consecutive blocks
    (grid (cdiv(R, ROWS / 32), cdiv(blocks_per_row, 32 * CHUNKS))), one warp a row and one
    block a thread in every chunk, the chunks one after the other (unrolled). K3's 224
    blocks a row are 7 chunks of 32: no idle lane and no division. The loads of the next
    LOOKAHEAD chunks (1 to CHUNKS) are issued before a chunk is quantized, so a warp keeps
    reads in flight while it computes."""
    if CHUNKS > 0:
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
                                         row_ok & (b0 + 32 * c < blocks_per_row)),)
        kl.pdl_launch_dependents()
        for c in kl.static_range(CHUNKS):
            w = ring[0]
            ring = ring[1:]
            if c + LOOKAHEAD < CHUNKS:
                n = c + LOOKAHEAD
                ring = ring + (_mx_words(src + 512 * n,
                                         row_ok & (b0 + 32 * n < blocks_per_row)),)
            _mx_quant_store((w << 16).to(kl.float32, bitcast=True),
                            (w & -65536).to(kl.float32, bitcast=True), dst + 512 * c,
                            sdst + 32 * c, row_ok & (b0 + 32 * c < blocks_per_row), ROWS,
                            OUT_CACHE)
        return
    r = kl.program_id(0)
    b = kl.program_id(1) * ROWS + kl.arange(0, ROWS)
    valid = b < blocks_per_row
    kl.pdl_wait()
    w = _mx_words(x_ptr + (r * x_s0 + b * 16), valid)
    lo = (w << 16).to(kl.float32, bitcast=True)
    hi = (w & -65536).to(kl.float32, bitcast=True)
    kl.pdl_launch_dependents()
    _mx_quant_store(lo, hi, p_ptr + r * p_s0 + b * 16, s_ptr + r * s_s0 + b, valid, ROWS,
                    OUT_CACHE)


@kiln.jit
def e2m1_magnitude(v):
    """The E2M1 magnitude code (0 to 7) of |v| < 8, rounded to nearest even and saturating at
    6 (grid 0, .5, 1, 1.5, 2, 3, 4, 6; ties go to the even code), with no special case below
    1: ``a = |v| * 2^-126`` is exact for |v| >= 2^-16 (v has bf16's 8 significant bits;
    smaller |v| give code 0 whatever the rounding) and puts E2M1 on fp32's bits: below 1, a
    is subnormal with mantissa field ``|v| * 2^23``, so the field's top bit counts halves
    (codes 0, 1, 2 for 0, 0.5, 1); from 1 up, exponent field e = 1, 2, 3 and the mantissa's
    top bit are the code's two exponent bits and its mantissa bit. Rounding the bits to
    nearest even at bit 22 (add 0x1FFFFF plus the kept bit) and shifting gives the code,
    clamped to 7 (6.0). Needs subnormal arithmetic (kiln compiles without FTZ)."""
    a = kl.abs(v) * 1.1754943508222875e-38  # 2^-126
    bits = a.to(kl.int32, bitcast=True)
    return kl.minimum((bits + 0x1FFFFF + ((bits >> 22) & 1)) >> 22, 7)


#: The group sizes of the contract.
GROUPS = (32, 64, 128, 256)


@dataclasses.dataclass(frozen=True)
class Settings:
    """per_token_group_quant_fp8's and quant_mxfp4's tuning; measured in
    bench/results/kimi_k3/quant.md."""
    group_elems: int = 4096  # group quant: values a program ([32, 128] at group 128) ...
    group_warps: int = 2  # ... on 2 warps: eight 16-byte loads a thread in flight
    mx_rows: int = 256  # MXFP4: blocks of 32 a program, one a thread (32 a warp) ...
    mx_warps: int = 8  # ... on 8 warps
    mx_chunks: int = 7  # row chunks of 32 blocks a program (K3's 224 blocks a row); 0: none
    mx_lookahead: int = 1  # chunks loaded ahead of the one quantized (64 registers hold one)
    mx_maxnreg: Optional[int] = 64  # the chunk programs' register cap: 32 warps an SM, no spill
    mx_out_cache: str = ".cs"  # streaming stores of the packed bytes (written once)
    mx_chunks_min_t: int = 4096  # chunk programs from this many rows on (latency below)


SETTINGS = Settings()


def mx_launch_config(rows: Optional[int], settings: Settings = SETTINGS) -> tuple:
    """(kernel name, constexprs, num_warps, maxnreg) of quant_mxfp4 on R = ``rows`` rows
    (None: the bundle's many-row specialization): the chunk programs from mx_chunks_min_t
    rows on, the one-block-a-thread programs (uncapped registers) below."""
    chunked = bool(settings.mx_chunks) and (rows is None or rows >= settings.mx_chunks_min_t)
    constexprs = {"ROWS": settings.mx_rows, "CHUNKS": settings.mx_chunks if chunked else 0,
                  "LOOKAHEAD": settings.mx_lookahead, "OUT_CACHE": settings.mx_out_cache}
    return ("quant_mxfp4" if chunked else "quant_mxfp4_few_rows", constexprs,
            settings.mx_warps, settings.mx_maxnreg if chunked else None)


def group_launch_config(group: int, ue8m0: bool, settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps) of per_token_group_quant_fp8."""
    return ({"GROUP": group, "ROWS": settings.group_elems // group, "UE8M0": ue8m0},
            settings.group_warps)


_SIG = {"x_ptr": "*bf16", "q_ptr": "*f8e4m3", "s_ptr": "*f32", "num_groups": "i32",
        "groups_per_row": "i32", "x_s0": "i32", "q_s0": "i32", "s_st": "i32", "s_sg": "i32"}
_MX_SIG = {"x_ptr": "*i32", "p_ptr": "*u8", "s_ptr": "*u8", "num_blocks": "i32",
           "blocks_per_row": "i32", "x_s0": "i32", "p_s0": "i32", "s_s0": "i32"}


#: the bundle's group quant for every group size and for x's row strides that are multiples
#: of 8 elements (16 bytes, the wrapper's check), not of 16 as the fast one assumes
GENERIC = "per_token_group_quant_fp8_generic"
#: the bundle's MXFP4 kernel (one block a thread) for x's row strides that are multiples of 8
#: elements, not of 32 (16 words) as the fast ones assume
MX_GENERIC = "quant_mxfp4_generic"
#: what the wrappers check of every argument (16-byte aligned tensors, x's row stride a
#: multiple of 8 bf16 (4 words), q's of 16): the generic kernels' assumptions
_GROUP_CHECKED = {"x_ptr": 16, "q_ptr": 16, "s_ptr": 16, "x_s0": 8, "q_s0": 16}
_MX_CHECKED = {"x_ptr": 16, "p_ptr": 16, "s_ptr": 16, "x_s0": 4, "p_s0": 16}


def _mx_spec(rows: Optional[int], name: Optional[str] = None,
             divisibility: Any = ("x_ptr", "p_ptr", "s_ptr", "x_s0", "p_s0")) -> Spec:
    default_name, constexprs, num_warps, maxnreg = mx_launch_config(rows)
    return Spec(quant_mxfp4_kernel, name=name or default_name, signature=_MX_SIG,
                constexprs=constexprs, divisibility=divisibility, num_warps=num_warps,
                maxnreg=maxnreg)


#: K3: group 128 (fp32 and UE8M0 scales); MXFP4 for few and for many rows. The generic
#: kernels for the rest.
AOT_SPECIALIZATIONS = [_mx_spec(None), _mx_spec(1), _mx_spec(1, MX_GENERIC, _MX_CHECKED)] + [
    Spec(per_token_group_quant_fp8_kernel, name="per_token_group_quant_fp8", signature=_SIG,
         constexprs=group_launch_config(128, ue8m0)[0],
         divisibility=["x_ptr", "q_ptr", "s_ptr", "x_s0", "q_s0"],
         num_warps=group_launch_config(128, ue8m0)[1])
    for ue8m0 in (False, True)
] + [
    Spec(per_token_group_quant_fp8_kernel, name=GENERIC, signature=_SIG,
         constexprs=group_launch_config(group, ue8m0)[0], divisibility=_GROUP_CHECKED,
         num_warps=group_launch_config(group, ue8m0)[1])
    for group in GROUPS for ue8m0 in (False, True)
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
                              s: Optional[Any] = None, *, settings: Settings = SETTINGS) -> Any:
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
    constexprs, num_warps = group_launch_config(group, ue8m0, settings)
    rows = constexprs["ROWS"]
    launch = L.Launch(per_token_group_quant_fp8_kernel, "per_token_group_quant_fp8",
                      (t, (ng + rows - 1) // rows),
                      (x, q, s, t * ng, ng, x_s0, check_row_stride(op, "q", q, 16),
                       s_strides[0], s_strides[1]), constexprs, num_warps)
    L.launch(*launch, generic=launch._replace(name=GENERIC))
    return q, s


def quant_mxfp4(x: Any, packed: Optional[Any] = None, scale: Optional[Any] = None, *,
                settings: Settings = SETTINGS) -> tuple:
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
    name, constexprs, num_warps, maxnreg = mx_launch_config(r, settings)
    rows, chunks = constexprs["ROWS"], constexprs["CHUNKS"]
    if chunks:
        grid = ((r + rows // 32 - 1) // (rows // 32), (nb + 32 * chunks - 1) // (32 * chunks))
    else:
        grid = (r, (nb + rows - 1) // rows)
    import torch

    # the (even, odd) bf16 pairs as int32 words (D even, 16-byte row stride)
    args = (x.view(torch.int32), packed, scale, r * nb, nb, x_s0 // 2, d // 2, nb)
    _, few, few_warps, _ = mx_launch_config(1)
    L.launch(quant_mxfp4_kernel, name, grid, args, constexprs, num_warps, maxnreg,
             generic=L.Launch(quant_mxfp4_kernel, MX_GENERIC,
                              (r, (nb + few["ROWS"] - 1) // few["ROWS"]), args, few, few_warps))
    return packed, scale
