"""FP8 accumulator promotion (``kl.dot(a, b, acc, max_num_imprecise_acc=N)``) on Hopper.

Hopper's FP8 wgmma keeps about 14 mantissa bits in its accumulator, so a long K loop that
accumulates on the tensor cores drifts from the exact sum (DeepSeek-V3 reports ~2% for K =
4096). With the bound, each dot's wgmma chain restarts from zero every N elements of K and
the partial sums are added in f32. The FP8 GEMM here writes f32 through pointers (no bf16
output rounding to hide the error) and is compared against a float64 reference of the
same FP8 inputs (the products are exact in both): promoted, the normwise error is small,
and it is never worse than without the bound."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.dirname(__file__))

import kiln  # noqa: E402

from dot_kernels import fp8_gemm_f32  # noqa: E402

# Hopper-only: FP8 wgmma accumulates with about 14 mantissa bits (the promotion exists for it);
# tcgen05 accumulates FP8 products in f32.
pytestmark = pytest.mark.sm90

BOUNDS = (None, 128, 64, 32)


def _gemm(a, b_t, bound, bm=128, bn=128, stages=3):
    m, k = a.shape
    n = b_t.shape[0]
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    a_desc = kiln.TensorDescriptor.from_tensor(a, [bm, 128], swizzle=128)
    b_desc = kiln.TensorDescriptor.from_tensor(b_t, [bn, 128], swizzle=128)
    fp8_gemm_f32[(kiln.cdiv(m, bm), kiln.cdiv(n, bn))](
        a_desc, b_desc, c, m, n, k, c.stride(0), BM=bm, BN=bn, BK=128, STAGES=stages,
        MAX_IMPRECISE_ACC=bound)
    torch.cuda.synchronize()
    return c


@pytest.mark.parametrize("m,n,k", [(256, 256, 4096), (256, 256, 8192), (300, 200, 4000)])
@pytest.mark.parametrize("dist", ["randn", "rand"])
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_promoted_fp8_gemm_over_long_k(dtype, dist, m, n, k):
    # randn: sums of mixed signs (|c| ~ sqrt(K)); rand: positive products, so the
    # accumulator grows like K / 4 and an imprecise one loses the most.
    gen = torch.Generator(device="cuda").manual_seed(k + m)
    draw = torch.randn if dist == "randn" else torch.rand
    dt = getattr(torch, dtype)
    a = draw(m, k, device="cuda", generator=gen).to(dt)
    b_t = draw(n, k, device="cuda", generator=gen).to(dt)
    ref = torch.matmul(a.double(), b_t.double().T)
    errors = {}
    for bound in BOUNDS:
        out = _gemm(a, b_t, bound)
        assert not torch.isnan(out).any(), bound
        err = out.double() - ref
        errors[bound] = ((err.norm() / ref.norm()).item(),
                         (err.abs().max() / ref.abs().max()).item())
    print(f"{dtype} {dist} {m}x{n}x{k}: normwise / max relative error per bound: {errors}")
    # Without the bound the error is what the hardware gives (reported, not bounded here:
    # test_gemm_tma.py checks the unpromoted GEMM on zero-mean inputs).
    unbounded = errors[None][0]
    for bound in BOUNDS[1:]:
        normwise, largest = errors[bound]
        # At most N products per tensor-core accumulation, then f32: partial sums of
        # N terms with ~14 bits each, summed in f32.
        assert normwise <= 2**-10, (bound, errors)
        assert largest <= 2**-8, (bound, errors)
        # Never worse than accumulating on the tensor cores throughout (up to f32
        # rounding noise, should the hardware accumulate exactly).
        assert normwise <= max(unbounded, 2**-20), (bound, errors)
