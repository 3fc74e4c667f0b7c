"""The Triton peer of bench/norm: row RMSNorm and softmax written in Triton from the same math
(one program per row, the row a BLOCK = next_power_of_2(D) tile under a mask), with the knobs a
Triton user would turn: num_warps and the eviction policy of the row's load and store.
Imported by bench/norm/run.py when triton is installed."""

import triton
import triton.language as tl


@triton.jit
def rmsnorm_row(x_ptr, w_ptr, out_ptr, D, x_stride, out_stride, eps, BLOCK: tl.constexpr,
                X_POLICY: tl.constexpr, W_POLICY: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < D
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0,
                eviction_policy=X_POLICY).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / D + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy=W_POLICY).to(tl.float32)
    tl.store(out_ptr + row * out_stride + cols, (x * rstd * w).to(tl.bfloat16), mask=mask)


@triton.jit
def softmax_row(x_ptr, out_ptr, D, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < D
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + cols, (e / tl.sum(e, axis=0)).to(tl.bfloat16),
             mask=mask)


def rmsnorm(x, w, eps, out, num_warps=8, x_policy="", w_policy=""):
    t, d = x.shape
    rmsnorm_row[(t,)](x, w, out, d, x.stride(0), out.stride(0), eps,
                      BLOCK=triton.next_power_of_2(d), X_POLICY=x_policy, W_POLICY=w_policy,
                      num_warps=num_warps)
    return out


def softmax(x, out, num_warps=8):
    t, d = x.shape
    softmax_row[(t,)](x, out, d, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(d),
                      num_warps=num_warps)
    return out
