"""SiTU-and-multiply with masked per-128-group FP8 post-quantization, the DeepEP low-latency
MoE layout.

In: ``input`` bf16 [E, T_pad, 2N] (gate = ``[..., :N]``, up = ``[..., N:]``; with
``interleaved`` the row is gate/up interleaved in 8-element chunks ``[g0..7, u0..7, g8..15,
...]``), ``masked_m`` int32 [E] (valid tokens per expert). For every expert e and token
t < min(masked_m[e], T_pad):

    a       = beta * tanh(g / beta) * sigmoid(g) * linear_beta * tanh(u / linear_beta)   (fp32)
    s[e,t,k] = max(absmax(a[k*128:(k+1)*128]), 1e-10) / 448                 (IEEE division)
    q[e,t,j] = sat_e4m3(a[j] / s[e, t, j // 128])                           (IEEE division)

The SiTU math is situ.py's (always with the linear softcap, kHasLinearBeta = true; approximate
tanh and sigmoid: ``tanh.approx.f32`` and the fast exp/reciprocal); the activation is quantized
in fp32 (the original's kPrecise = true). The quantization is quant.py's helper, inlined.

Out: ``output`` fp8 e4m3 [E, T_pad, N]; ``output_scale`` either
- fp32 [E, T_pad, N/128] (``scale_ue8m0=False``), or
- UE8M0 (``scale_ue8m0=True``): s rounded up to a power of two (exact, on the fp32 bits) and its
  biased exponent byte stored in int32 [E, N/512, T_pad], four consecutive groups per int32:
  byte ``e*G*T_pad + (k//4)*T_pad*4 + t*4 + k%4`` (G = N/128; N % 512 == 0).
Rows t >= masked_m[e] (and their scales) are not written.

Work mapping: grid (T_pad, cdiv(G, ROWS), E); each program owns ROWS groups of one token of
one expert as a [ROWS, 128] tile and exits at once when the token lies past masked_m[e].
E = 0 or T_pad = 0 launches nothing. The bundle holds the kernel for input strides that are
multiples of 16 elements and, as ``situ_and_mul_masked_post_quant_generic``, of 8.

Specification: docs/kernels/situ.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .quant import fp8_quant_groups_recip

GROUP = 128


@kiln.jit(num_warps=4, fp_fusion=True)
def situ_and_mul_masked_post_quant_kernel(x_ptr, masked_m_ptr, q_ptr, s_ptr, T_pad, N,
                                          groups_per_row, x_se, x_st, q_se, q_st, s_se, s_st,
                                          beta, inv_beta, linear_beta, inv_linear_beta,
                                          GROUP: kl.constexpr, ROWS: kl.constexpr,
                                          UE8M0: kl.constexpr, INTERLEAVED: kl.constexpr):
    """A grid of (T_pad, cdiv(groups_per_row, ROWS), E) programs: ROWS groups of one token
    (a scalar: no integer division per group) as a [ROWS, GROUP] tile. The quantization is
    quant.py's division-free ``fp8_quant_groups_recip`` and the scales are stored from the
    tile by the thread holding column 0 of each row.

    Why the division-free quotient gives the IEEE ``a / s`` bits here, where the activation
    a is fp32 and not bf16 (with UE8M0 the quotient is ``a * 2^-k``, the exact reciprocal of
    the power-of-two scale, s in [2^-42, 2^-2]: normal, the exact quotient rounded once):

    - range: |tanh.approx| <= 1 and sigmoid <= 1, so |a| <= |beta * linear_beta| (100 for
      K3's betas, docs/kernels/situ.md); s = max(absmax, 1e-10) / 448 then lies in [2.2e-13,
      0.23] and 1/s in [4.4, 4.5e12]: all normal. kiln compiles without FTZ (subnormals are
      exact), and every step of ``div_by_recip`` scales exactly with powers of two while it
      stays normal, so checking the fp32 mantissas covers every binade;
    - the scale ``div_by_recip(max(absmax, 1e-10), 448, RN(1/448))`` is RN(absmax / 448)
      for every fp32 mantissa (test_situ_recip_scale_is_ieee_for_every_fp32_mantissa);
    - the quotient: r = RN(1/s) (rcp.rn), p = RN(a * r). Markstein's theorem (Handbook of
      Floating-Point Arithmetic, FMA-based division) gives RN(p + RN(a - p*s) * r) =
      RN(a / s) when p is within 1 ulp of a/s; p can be 1.5 ulp away (the relative error of
      r plus a rounding; about 0.7 % of random mantissa pairs make the residual inexact),
      so the theorem alone does not cover every case. In every case the corrected q' is
      within 1 ulp of a/s (the residual's rounding error is 2^-24 of a 1.5-ulp term), so the
      e4m3 code of q' differs from that of RN(a/s) only if an e4m3 rounding boundary (a
      midpoint k * 2^j, k odd <= 31; from 448 up both saturate) lies within 1 ulp of a/s.
      Those cases are checked for every fp32 scale mantissa, every odd k and every fp32 a
      within 6 steps of RN(k * s): no difference
      (test_situ_recip_quotients_at_e4m3_boundaries: every 128th mantissa in the suite,
      all 2^23 with KILN_EXHAUSTIVE=1, about 2 minutes);
    - small values: |a/s| < 2^-10 gives the code +-0 either way; the residual could round
      (subnormal) only for |a| < 2^-102, where |a/s| < 2^-60. A zero a keeps its sign
      (div_by_recip's negated residual): -0 gives 0x80 as -0 / s does;
    - NaN (a NaN input): the group's absmax ignores it (maxnum), q is the e4m3 NaN both
      ways; inf inputs give a finite a (tanh and sigmoid saturate)."""
    e = kl.program_id(2)
    e64 = e.to(kl.int64)
    kl.pdl_wait()  # the input and masked_m may come from the previous kernel in the stream
    m = kl.minimum(kl.load(masked_m_ptr + e), T_pad)
    go = kl.program_id(0) < m
    if go:
        t = kl.program_id(0)
        k = kl.program_id(1) * ROWS + kl.arange(0, ROWS)
        ok = k < groups_per_row
        valid = ok[:, None]
        col = kl.arange(0, GROUP)[None, :]
        if INTERLEAVED:
            # [g0..7, u0..7, g8..15, u8..15, ...]: group k spans 2*GROUP input values
            xo = (t * x_st + k * (2 * GROUP))[:, None] + ((col // 8) * 16 + col % 8)
            up_off = 8
        else:
            xo = (t * x_st + k * GROUP)[:, None] + col
            up_off = N
        xe = x_ptr + e64 * x_se
        g = kl.load(xe + xo, mask=valid, other=0.0).to(kl.float32)
        u = kl.load(xe + xo + up_off, mask=valid, other=0.0).to(kl.float32)
        kl.pdl_launch_dependents()
        gate = beta * kl.tanh(g * inv_beta) * kl.sigmoid(g)
        a = gate * (linear_beta * kl.tanh(u * inv_linear_beta))
        q, s = fp8_quant_groups_recip(a, UE8M0)
        kl.store(q_ptr + e64 * q_se + (t * q_st + k * GROUP)[:, None] + col, q, mask=valid)
        if UE8M0:
            # s_ptr is the int32 [E, G/4, T_pad] tensor seen as bytes
            s_off = (k // 4) * (T_pad * 4) + t * 4 + k % 4
            s_val = (s.to(kl.int32, bitcast=True) >> 23).to(kl.uint8)
        else:
            s_off = t * s_st + k
            s_val = s
        # from the [ROWS, GROUP] tile's own layout, by the thread holding column 0: no
        # layout conversion through shared memory, each scale computed once
        kl.store(s_ptr + e64 * s_se + s_off[:, None] + col * 0,
                 s_val[:, None] + kl.zeros([ROWS, GROUP], s_val.dtype),
                 mask=valid & (col == 0))


@dataclasses.dataclass(frozen=True)
class Settings:
    """situ_and_mul_masked_post_quant's tuning; measured in bench/results/kimi_k3/situ.md."""
    rows: int = 8  # groups of one token a program: K3's 24 groups a token in 3 programs
    num_warps: int = 2  # [8, 128] on 64 threads: 16 values a thread


SETTINGS = Settings()


def launch_config(settings: Settings = SETTINGS) -> tuple:
    """(ROWS, num_warps) of a launch."""
    return settings.rows, settings.num_warps


def _constexprs(ue8m0: bool, interleaved: bool, settings: Settings = SETTINGS) -> dict:
    return {"GROUP": GROUP, "ROWS": launch_config(settings)[0], "UE8M0": ue8m0,
            "INTERLEAVED": interleaved}

_DIV = {"x_ptr": 16, "q_ptr": 16, "s_ptr": 16, "N": 16, "x_se": 16, "x_st": 16, "q_se": 16,
        "q_st": 16}
#: the bundle's kernel for input strides that are multiples of 8 elements only (16 bytes: what
#: the wrapper checks)
GENERIC = "situ_and_mul_masked_post_quant_generic"


def _signature(ue8m0: bool) -> dict:
    return {"x_ptr": "*bf16", "masked_m_ptr": "*i32", "q_ptr": "*f8e4m3",
            "s_ptr": "*u8" if ue8m0 else "*f32", "T_pad": "i32", "N": "i32",
            "groups_per_row": "i32", "x_se": "i64", "x_st": "i32", "q_se": "i64", "q_st": "i32",
            "s_se": "i64", "s_st": "i32", "beta": "f32", "inv_beta": "f32",
            "linear_beta": "f32", "inv_linear_beta": "f32"}


AOT_SPECIALIZATIONS = [
    Spec(situ_and_mul_masked_post_quant_kernel, name=name, signature=_signature(ue8m0),
         constexprs=_constexprs(ue8m0, inter), divisibility=div, num_warps=launch_config()[1])
    for name, div in (("situ_and_mul_masked_post_quant", _DIV),
                      (GENERIC, dict(_DIV, x_se=8, x_st=8)))
    for ue8m0 in (False, True)
    for inter in (False, True)
]


def _scale_shape(e: int, t_pad: int, n: int, ue8m0: bool) -> tuple:
    g = n // GROUP
    return (e, g // 4, t_pad) if ue8m0 else (e, t_pad, g)


def situ_and_mul_masked_post_quant(input: Any, masked_m: Any, output: Optional[Any] = None,
                                   output_scale: Optional[Any] = None, scale_ue8m0: bool = False,
                                   interleaved: bool = False, beta: float = 4.0,
                                   linear_beta: float = 25.0, *,
                                   settings: Settings = SETTINGS) -> tuple:
    """SiTU(gate) * softcap(up) of ``input`` bf16 [E, T_pad, 2N] quantized per 128-group into
    ``output`` fp8 e4m3 [E, T_pad, N] and ``output_scale`` (fp32 [E, T_pad, N/128], or with
    ``scale_ue8m0`` int32 [E, N/512, T_pad] packed exponent bytes); both allocated when None
    and both contiguous. Only rows t < masked_m[e] are written. Returns (output,
    output_scale). Every check raises before any launch."""
    op = "situ_and_mul_masked_post_quant"
    L.check_dtype(op, "input", input, ("bfloat16",))
    L.check_dtype(op, "masked_m", masked_m, ("int32",))
    e, t_pad, two_n = L.check_shape(op, "input", input, (None, None, None))
    L.check_shape(op, "masked_m", masked_m, (e,))
    if not isinstance(scale_ue8m0, bool) or not isinstance(interleaved, bool):
        raise TypeError(f"{op}: scale_ue8m0 and interleaved must be bools")
    if two_n % 2:
        raise ValueError(f"{op}: the last dimension of input must be even (2N), got {two_n}")
    n = two_n // 2
    if n % GROUP:
        raise ValueError(f"{op}: N = {n} must be divisible by the group size {GROUP}")
    if scale_ue8m0 and n % (4 * GROUP):
        raise ValueError(f"{op}: the packed UE8M0 scale layout needs N % 512 == 0 (four "
                         f"groups per int32), got N = {n}")
    for name, v in (("beta", beta), ("linear_beta", linear_beta)):
        if v is None or float(v) == 0.0:
            raise ValueError(f"{op}: {name} must be nonzero")
    L.check_inner_contiguous(op, "input", input)
    x_se, x_st, _ = L.strides(input)
    if x_st % 8 or x_se % 8:
        raise ValueError(f"{op}: the strides of input must be multiples of 8 elements (16 "
                         f"bytes), got {L.strides(input)}")
    L.check_aligned(op, "input", input)
    if e > 1 and L.strides(masked_m)[0] != 1:
        raise ValueError(f"{op}: masked_m must be contiguous, got stride "
                         f"{L.strides(masked_m)[0]}")
    if e > 256:
        raise ValueError(f"{op}: at most 256 experts (local experts per rank), got {e}")
    s_shape = _scale_shape(e, t_pad, n, scale_ue8m0)
    s_dtype = "int32" if scale_ue8m0 else "float32"
    if output is not None:
        L.check_dtype(op, "output", output, ("float8_e4m3fn",))
        L.check_shape(op, "output", output, (e, t_pad, n))
        L.check_contiguous(op, "output", output)
        L.check_aligned(op, "output", output)
    if output_scale is not None:
        L.check_dtype(op, "output_scale", output_scale, (s_dtype,))
        L.check_shape(op, "output_scale", output_scale, s_shape)
        L.check_contiguous(op, "output_scale", output_scale)
        L.check_aligned(op, "output_scale", output_scale)
    named = [("input", input), ("masked_m", masked_m)] + [
        (w, v) for w, v in (("output", output), ("output_scale", output_scale)) if v is not None]
    L.check_same_device(op, *named)
    L.check_int32_extent(op, "T_pad * row stride", t_pad * max(x_st, two_n, 1) + two_n)
    if output is None or output_scale is None:
        import torch

        if output is None:
            output = torch.empty((e, t_pad, n), dtype=torch.float8_e4m3fn, device=input.device)
        if output_scale is None:
            output_scale = torch.empty(s_shape, dtype=getattr(torch, s_dtype),
                                       device=input.device)
    if e == 0 or t_pad == 0 or n == 0:
        return output, output_scale
    g = n // GROUP
    if scale_ue8m0:
        import torch

        s_arg, s_se, s_st = output_scale.view(torch.uint8), g * t_pad, 0
    else:
        s_arg, s_se, s_st = output_scale, t_pad * g, g
    args = (input, masked_m, output, s_arg, t_pad, n, g, x_se, x_st, t_pad * n, n, s_se, s_st,
            float(beta), 1.0 / float(beta), float(linear_beta), 1.0 / float(linear_beta))
    rows, num_warps = launch_config(settings)
    launch = L.Launch(situ_and_mul_masked_post_quant_kernel, op,
                      (t_pad, (g + rows - 1) // rows, e), args,
                      _constexprs(scale_ue8m0, interleaved, settings), num_warps)
    L.launch(*launch, generic=launch._replace(name=GENERIC))
    return output, output_scale
