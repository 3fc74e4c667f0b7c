"""Row-wise RMSNorm and softmax over a [T, D] tile of rows, one program per row.

    rmsnorm(x, w, eps):  y = bf16( x * rsqrt(mean(x^2) + eps) * w )     (fp32 math)
    softmax(x):          y = bf16( exp(x - max(x)) / sum(exp(x - max(x))) )

D need not be a power of two: the row is loaded as a BLOCK = next_power_of_2(D) tile under a
mask (other = 0 for the sum of squares, -inf for the max). Rows may be strided; the last
dimension is contiguous.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl


@kiln.jit(num_warps=4)
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, D, x_stride, out_stride, eps, BLOCK: kl.constexpr,
                   X_EVICT: kl.constexpr = ""):
    """The weight is loaded before the row (its latency hidden under the row's and the
    reduction's); X_EVICT: the row load's L2 eviction policy."""
    row = kl.program_id(0)
    cols = kl.arange(0, BLOCK)
    mask = cols < D
    w = kl.load(w_ptr + cols, mask=mask, other=0.0)
    x = kl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0,
                eviction_policy=X_EVICT).to(kl.float32)
    rstd = kl.rsqrt(kl.sum(x * x, axis=0) / D + eps)
    kl.store(out_ptr + row * out_stride + cols, x * rstd * w.to(kl.float32), mask=mask)


@kiln.jit(num_warps=8)
def softmax_kernel(x_ptr, out_ptr, D, x_stride, out_stride, BLOCK: kl.constexpr):
    row = kl.program_id(0)
    cols = kl.arange(0, BLOCK)
    mask = cols < D
    x = kl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(kl.float32)
    e = kl.exp(x - kl.max(x, axis=0))
    kl.store(out_ptr + row * out_stride + cols, e * (1.0 / kl.sum(e, axis=0)), mask=mask)


@dataclasses.dataclass(frozen=True)
class Settings:
    """rmsnorm's tuning; measured in bench/results/common/norm.md."""
    rmsnorm_warps: int = 4  # a 7168 row: 56 values a thread
    rmsnorm_x_evict: str = "evict_last"  # the row load's L2 policy, as torch.compile's


SETTINGS = Settings()


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _check_rows(name: str, x: Any, out: Optional[Any]) -> Any:
    if str(getattr(x, "dtype", "")) != "torch.bfloat16":
        raise TypeError(f"{name}: x must be a bfloat16 tensor, got {getattr(x, 'dtype', x)!r}")
    if x.dim() != 2:
        raise ValueError(f"{name}: x must be 2-D [T, D], got shape {tuple(x.shape)}")
    if x.shape[1] > 0 and x.stride(1) != 1:
        raise ValueError(f"{name}: x must be contiguous along D, got strides {tuple(x.stride())}")
    if out is None:
        import torch

        out = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
    elif str(out.dtype) != "torch.bfloat16" or tuple(out.shape) != tuple(x.shape) or (
            out.shape[1] > 0 and out.stride(1) != 1):
        raise ValueError(f"{name}: out must be a bfloat16 {tuple(x.shape)} tensor contiguous "
                         f"along D")
    if x.shape[1] > 16384:
        raise ValueError(f"{name}: D = {x.shape[1]} is larger than one program's row (16384)")
    return out


def rmsnorm(x: Any, weight: Any, eps: float = 1e-6, out: Optional[Any] = None, *,
            settings: Settings = SETTINGS) -> Any:
    """RMSNorm of each row of ``x`` (bf16 [T, D]) with ``weight`` (bf16 [D])."""
    out = _check_rows("rmsnorm", x, out)
    if str(weight.dtype) != "torch.bfloat16" or tuple(weight.shape) != (x.shape[1],):
        raise ValueError(f"rmsnorm: weight must be bfloat16 [{x.shape[1]}], got "
                         f"{weight.dtype} {tuple(weight.shape)}")
    t, d = x.shape
    if t == 0 or d == 0:
        return out
    rmsnorm_kernel[(t,)](x, weight, out, d, x.stride(0), out.stride(0), float(eps),
                         BLOCK=_next_pow2(d), X_EVICT=settings.rmsnorm_x_evict,
                         num_warps=settings.rmsnorm_warps)
    return out


def softmax(x: Any, out: Optional[Any] = None) -> Any:
    """Softmax over the last dimension of ``x`` (bf16 [T, D])."""
    out = _check_rows("softmax", x, out)
    t, d = x.shape
    if t == 0 or d == 0:
        return out
    softmax_kernel[(t,)](x, out, d, x.stride(0), out.stride(0), BLOCK=_next_pow2(d))
    return out
