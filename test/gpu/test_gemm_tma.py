"""The TMA + wgmma GEMM (kernels_dsl/common/gemm.py: gemm_tma) against torch.matmul in fp32 on
fresh random inputs: one tile, ragged edges in M, N and K (TMA zero-fills the loads and clips
the store), long K loops whose ring slots are refilled many times, several block shapes and
warp counts (one or two warpgroups, one or two 64-row slabs per warpgroup), wide boxes of
BK = 128 (two 128-byte chunks of K a row), bf16 and f16."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from kernels_dsl.common.gemm import gemm_tma  # noqa: E402

CONFIGS = [  # (BM, BN, BK), stages, warps
    ((128, 256, 64), 3, 8), ((128, 128, 64), 4, 4), ((64, 128, 64), 4, 4),
    ((256, 128, 64), 3, 8), ((128, 64, 64), 2, 8),
    # BK = 128: wide boxes of two 128-byte chunks of K, read in place by wgmma / tcgen05
    ((128, 128, 128), 3, 8)]


def _check(out, a, b_t):
    ref = torch.matmul(a.float(), b_t.float().T)
    k = a.shape[1]
    # bf16 rounding of the output (2^-8 relative) plus f32 accumulation-order differences
    torch.testing.assert_close(out.float(), ref, rtol=2**-7, atol=1e-3 * k**0.5)


@pytest.mark.parametrize("block,stages,warps", CONFIGS)
@pytest.mark.parametrize("m,n,k", [(128, 256, 64), (300, 520, 200), (512, 512, 2048)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gemm_tma(dtype, m, n, k, block, stages, warps):
    run_and_check(dtype, m, n, k, block, stages, warps)


def run_and_check(dtype, m, n, k, block, stages, warps):
    """gemm_tma on fresh inputs into a row-padded output view, against torch.matmul."""
    a = torch.randn(m, k, device="cuda").to(dtype)
    b_t = torch.randn(n, k, device="cuda").to(dtype)
    # the output is a view whose rows are padded: the store must clip at N
    full = torch.full((m, n + 8), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = full[:, :n]
    gemm_tma(a, b_t, out, block=block, stages=stages, num_warps=warps)
    torch.cuda.synchronize()
    _check(out, a, b_t)
    assert torch.isnan(full[:, n:]).all()


@pytest.mark.parametrize("m,n,k", [(128, 256, 128), (300, 520, 400), (512, 512, 4096)])
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("block,stages,warps", [((128, 256, None), 3, 8),
                                                ((128, 128, None), 4, 4)])
def test_gemm_tma_fp8(dtype, m, n, k, block, stages, warps):
    # FP8 boxes of 128 columns on wgmma k32 steps. Hopper's FP8 wgmma accumulates with
    # fewer than f32's mantissa bits (cuBLAS's "fast accumulation"), so long K loops drift
    # from the f32 reference by more than the bf16 rounding of the output: the check is
    # normwise (and a bound on the largest error) rather than elementwise.
    dt = getattr(torch, dtype)
    a = torch.randn(m, k, device="cuda").to(dt)
    b_t = torch.randn(n, k, device="cuda").to(dt)
    out = gemm_tma(a, b_t, block=block, stages=stages, num_warps=warps)
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b_t.float().T)
    err = out.float() - ref
    assert not torch.isnan(out).any()
    assert err.norm() <= 2**-8 * ref.norm(), (err.norm() / ref.norm()).item()
    assert err.abs().max() <= 2**-6 * ref.abs().max(), err.abs().max().item()


def test_gemm_tma_large_and_strided_inputs():
    run_large_and_strided()


def run_large_and_strided():
    """A [M, K] view with a row pitch larger than K; 4096-sized problem, grouped ordering."""
    m, n, k = 4096, 4096, 1024
    a = torch.randn(m, k + 64, device="cuda").bfloat16()[:, :k]
    b_t = torch.randn(n, k, device="cuda").bfloat16()
    out = gemm_tma(a, b_t)
    torch.cuda.synchronize()
    _check(out, a, b_t)
