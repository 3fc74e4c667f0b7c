"""SiTU ("SoftCap-GLU") activation and multiply, Kimi K3.

    gate = beta * tanh(g / beta) * sigmoid(g)              beta = 4.0
    up   = linear_beta * tanh(u / linear_beta)   if linear_beta is not None (25.0)
         = u                                     otherwise
    out  = gate * up                                       (fp32 math, stored as bf16)

with ``g = input[:, :D]`` and ``u = input[:, D:]``. One program handles BLOCK
columns of one row; grid = (N, cdiv(D, BLOCK)). The bundle holds the kernel assuming D, the
row strides and the addresses multiples of 16 (elements, bytes) and, as
``situ_and_mul_generic``, assuming none of them.

Specification: docs/kernels/situ.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L


@kiln.jit(num_warps=8)
def situ_and_mul_kernel(x_ptr, out_ptr, D, x_stride, out_stride, beta, inv_beta, linear_beta,
                        inv_linear_beta, BLOCK: kl.constexpr, HAS_LINEAR_BETA: kl.constexpr):
    row = kl.program_id(0)
    col = kl.program_id(1) * BLOCK + kl.arange(0, BLOCK)
    mask = col < D
    x_row = x_ptr + row * x_stride
    kl.pdl_wait()  # the input may come from the previous kernel in the stream
    g = kl.load(x_row + col, mask=mask, other=0.0).to(kl.float32)
    u = kl.load(x_row + D + col, mask=mask, other=0.0).to(kl.float32)
    kl.pdl_launch_dependents()
    gate = beta * kl.tanh(g * inv_beta) * kl.sigmoid(g)
    if HAS_LINEAR_BETA:
        up = linear_beta * kl.tanh(u * inv_linear_beta)
    else:
        up = u
    out = gate * up
    kl.store(out_ptr + row * out_stride + col, out.to(out_ptr.dtype.element_ty), mask=mask)


@dataclasses.dataclass(frozen=True)
class Settings:
    """situ_and_mul's tuning; measured in bench/results/kimi_k3/situ.md."""
    bf16_block: int = 2048  # bf16 input: one 16-byte vector (8 values) a thread on 8 warps
    bf16_warps: int = 8
    f32_block: int = 1024  # fp32 input: 8 values a thread (one 16-byte bf16 store) on 4 warps
    f32_warps: int = 4


SETTINGS = Settings()


def launch_config(dtype: str, settings: Settings = SETTINGS) -> tuple:
    """(BLOCK, num_warps) of a launch on ``dtype`` ("bf16" or "f32") input."""
    if dtype == "bf16":
        return settings.bf16_block, settings.bf16_warps
    return settings.f32_block, settings.f32_warps


_DIVISIBLE = ("x_ptr", "out_ptr", "D", "x_stride", "out_stride")
#: the bundle's kernel for any D, row strides and addresses the wrapper accepts
GENERIC = "situ_and_mul_generic"


def _signature(dtype: str) -> dict:
    return {"x_ptr": f"*{dtype}", "out_ptr": "*bf16", "D": "i32", "x_stride": "i32",
            "out_stride": "i32", "beta": "f32", "inv_beta": "f32", "linear_beta": "f32",
            "inv_linear_beta": "f32"}


AOT_SPECIALIZATIONS = [
    Spec(situ_and_mul_kernel, name=name, signature=_signature(dtype),
         constexprs={"BLOCK": launch_config(dtype)[0], "HAS_LINEAR_BETA": has_linear_beta},
         divisibility=div, num_warps=launch_config(dtype)[1])
    for name, div in (("situ_and_mul", _DIVISIBLE), (GENERIC, ()))
    for dtype in ("bf16", "f32")
    for has_linear_beta in (True, False)
]


def situ_and_mul(input: Any, out: Optional[Any] = None, beta: float = 4.0,
                 linear_beta: Optional[float] = 25.0, *, settings: Settings = SETTINGS) -> Any:
    """SiTU-and-multiply of ``input`` [N, 2D] (bf16 or fp32, ``stride(1) == 1``) into
    ``out`` [N, D] bf16 (allocated if None). Every check raises before any launch."""
    name = L.dtype_name(input)
    if name not in ("bfloat16", "float32"):
        raise TypeError(f"situ_and_mul: input must be bfloat16 or float32, got {name or input!r}")
    if len(input.shape) != 2:
        raise ValueError(f"situ_and_mul: input must be 2-D [N, 2D], got shape "
                         f"{tuple(input.shape)}")
    n, two_d = int(input.shape[0]), int(input.shape[1])
    if two_d % 2:
        raise ValueError(f"situ_and_mul: the last dimension must be even (2D), got {two_d}")
    d = two_d // 2
    dtype = "bf16" if name == "bfloat16" else "f32"
    vec = 16 // (2 if dtype == "bf16" else 4)
    if d > 0 and input.stride(1) != 1:
        raise ValueError(f"situ_and_mul: input must be contiguous along its last dimension "
                         f"(stride(1) == 1), got strides {tuple(input.stride())}")
    if d % vec:
        raise ValueError(f"situ_and_mul: D = {d} must be divisible by {vec} (16 bytes of "
                         f"{name})")
    if input.stride(0) % vec:
        raise ValueError(f"situ_and_mul: the row stride {input.stride(0)} must be a multiple "
                         f"of {vec} elements (16 bytes)")
    if beta is None or float(beta) == 0.0:
        raise ValueError("situ_and_mul: beta must be nonzero")
    if linear_beta is not None and float(linear_beta) == 0.0:
        raise ValueError("situ_and_mul: linear_beta must be nonzero or None")
    if out is None:
        import torch

        out = torch.empty((n, d), dtype=torch.bfloat16, device=input.device)
    else:
        if L.dtype_name(out) != "bfloat16":
            raise TypeError(f"situ_and_mul: out must be bfloat16, got {L.dtype_name(out)}")
        if tuple(out.shape) != (n, d):
            raise ValueError(f"situ_and_mul: out must have shape {(n, d)}, got "
                             f"{tuple(out.shape)}")
        if d > 0 and out.stride(1) != 1:
            raise ValueError("situ_and_mul: out must be contiguous along its last dimension")
        if out.stride(0) % 8:
            raise ValueError(f"situ_and_mul: the row stride of out ({out.stride(0)}) must be a "
                             f"multiple of 8 elements (16 bytes)")
    if n == 0 or d == 0:
        return out
    if n * input.stride(0) >= 2**31 or n * out.stride(0) >= 2**31:
        raise ValueError("situ_and_mul: the tensors are too large for 32-bit indexing "
                         f"(N * row stride = {n * max(input.stride(0), out.stride(0))})")
    block, num_warps = launch_config(dtype, settings)
    has_linear_beta = linear_beta is not None
    lin = float(linear_beta) if has_linear_beta else 1.0
    args = (input, out, d, input.stride(0), out.stride(0), float(beta), 1.0 / float(beta), lin,
            1.0 / lin)
    launch = L.Launch(situ_and_mul_kernel, "situ_and_mul", (n, (d + block - 1) // block), args,
                      {"BLOCK": block, "HAS_LINEAR_BETA": has_linear_beta}, num_warps)
    L.launch(*launch, generic=launch._replace(name=GENERIC))
    return out
