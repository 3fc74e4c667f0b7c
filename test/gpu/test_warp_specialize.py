"""The warp-specialized TMA + wgmma GEMM (kernels_dsl/common/gemm.py: gemm_tma with
``warp_specialize=True``: kl.range(..., warp_specialize=True)) against torch.matmul on fresh
random inputs, M = N = K in {256, 1000 (ragged: TMA zero-fills the loads past K and the rows
past M, N; the store clips), 4096 (64 K steps: every ring slot filled and released many times,
both phase parities)}, bf16 and FP8 (e4m3, e5m2: the same ring). The kernel runs its num_warps
consumer warps plus one producer warpgroup (setmaxnreg); a wrong arrival count or parity
shows as a hang, so run this file under a timeout. The Hopper cases are marked sm90; the
Blackwell ones (marked blackwell: tcgen05.mma into Tensor Memory, each slot released by the
tcgen05.commit of the MMAs that read it) skip on Hopper with the reason."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from kernels_dsl.common.gemm import gemm_tma, gemm_tma_kernel  # noqa: E402

CONFIGS = [  # (BM, BN, BK), stages, warps: two consumer warpgroups or one, 3 or 4 stages
    ((128, 256, 64), 3, 8), ((128, 128, 64), 4, 4), ((128, 128, 64), 4, 8),
    ((64, 128, 64), 4, 4)]
SIZES = [256, 1000, 4096]


def _check(out, a, b_t):
    # The tolerance of test_gemm_tma.py: the bf16 rounding of the output (2^-8 relative)
    # plus f32 accumulation-order differences.
    ref = torch.matmul(a.float(), b_t.float().T)
    k = a.shape[1]
    torch.testing.assert_close(out.float(), ref, rtol=2**-7, atol=1e-3 * k**0.5)


@pytest.mark.sm90
@pytest.mark.parametrize("block,stages,warps", CONFIGS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_warp_specialized_gemm(dtype, size, block, stages, warps):
    _check_specialized_gemm(dtype, size, block, stages, warps)


def _check_specialized_gemm(dtype, size, block, stages, warps):
    """Correct against torch, clipped at N, and the same bits as the unspecialized kernel
    (the same wgmmas / tcgen05 MMAs in the same order)."""
    m = n = k = size
    a = torch.randn(m, k, device="cuda").to(dtype)
    b_t = torch.randn(n, k, device="cuda").to(dtype)
    # a row-padded output view: the store must clip at N
    full = torch.full((m, n + 8), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = full[:, :n]
    gemm_tma(a, b_t, out, block=block, stages=stages, num_warps=warps, warp_specialize=True)
    torch.cuda.synchronize()
    _check(out, a, b_t)
    assert torch.isnan(full[:, n:]).all()
    plain = gemm_tma(a, b_t, block=block, stages=stages, num_warps=warps)
    torch.cuda.synchronize()
    assert torch.equal(out, plain)


@pytest.mark.sm90
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("block,stages,warps", [((128, 256, None), 3, 8),
                                                ((128, 128, None), 4, 8)])
def test_warp_specialized_gemm_fp8(dtype, size, block, stages, warps):
    # FP8 rows must be whole 16-byte units for TMA: the ragged size is K = 1008 (M = N = 1000).
    # The normwise check of test_gemm_tma.py's FP8 test (Hopper's FP8 wgmma accumulates with
    # fewer bits than f32).
    m = n = size
    k = size + (-size) % 16
    dt = getattr(torch, dtype)
    a = torch.randn(m, k, device="cuda").to(dt)
    b_t = torch.randn(n, k, device="cuda").to(dt)
    out = gemm_tma(a, b_t, block=block, stages=stages, num_warps=warps, warp_specialize=True)
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b_t.float().T)
    err = out.float() - ref
    assert not torch.isnan(out).any()
    assert err.norm() <= 2**-8 * ref.norm(), (err.norm() / ref.norm()).item()
    assert err.abs().max() <= 2**-6 * ref.abs().max(), err.abs().max().item()
    plain = gemm_tma(a, b_t, block=block, stages=stages, num_warps=warps)
    torch.cuda.synchronize()
    assert torch.equal(out, plain)


@pytest.mark.sm90
def test_the_launch_has_the_producer_warpgroup():
    # What the runtime launches (the metadata's threads_per_block): 8 consumer warps + 4;
    # the cubin starts with the registers the consumers' setmaxnreg.inc draws on.
    sig = {"a_desc": "tensordesc<bf16,128x64,sw128>", "b_desc": "tensordesc<bf16,256x64,sw128>",
           "c_desc": "tensordesc<bf16,128x256>",
           "bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    ck = gemm_tma_kernel.compile(sig, dict(BM=128, BN=256, BK=64, GROUP_M=8, STAGES=3,
                                           WARP_SPECIALIZE=True), num_warps=8, arch="sm_90a")
    assert ck.meta["threads_per_block"] == 384
    target = ck.meta["targets"]["sm_90a"]
    assert target["spill_store_bytes"] == 0
    assert target["registers"] * 384 >= 256 * 232 + 128 * 40, target


# Blackwell (sm_100a/sm_103a): the tcgen05 form needs BM = 128; the 64-row block stays on
# mma.sync with the per-warp releases, as do the FP8 dots.
BLACKWELL_CONFIGS = [((128, 256, 64), 3, 8), ((128, 128, 64), 4, 4), ((128, 128, 64), 4, 8),
                     ((128, 64, 64), 2, 4), ((64, 128, 64), 4, 4)]


def _blackwell_arch():
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}a"


@pytest.mark.blackwell
@pytest.mark.parametrize("block,stages,warps", BLACKWELL_CONFIGS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_warp_specialized_gemm_blackwell(dtype, size, block, stages, warps):
    _check_specialized_gemm(dtype, size, block, stages, warps)


@pytest.mark.blackwell
@pytest.mark.parametrize("k", [64, 128, 192])
def test_warp_specialized_gemm_blackwell_short_k(k):
    # One to three K steps with 3 stages: the wait after the loop finds the last commit's
    # EMPTY barrier in its first phase (no slot filled twice).
    a = torch.randn(256, k, device="cuda").to(torch.bfloat16)
    b_t = torch.randn(256, k, device="cuda").to(torch.bfloat16)
    out = gemm_tma(a, b_t, block=(128, 256, 64), stages=3, num_warps=8, warp_specialize=True)
    torch.cuda.synchronize()
    _check(out, a, b_t)


@pytest.mark.blackwell
@pytest.mark.parametrize("block,stages,warps", [((128, 256, 64), 3, 8), ((128, 128, 64), 4, 4)])
def test_the_blackwell_kernel_is_on_tcgen05(block, stages, warps):
    bm, bn, bk = block
    sig = {"a_desc": f"tensordesc<bf16,{bm}x{bk},sw128>",
           "b_desc": f"tensordesc<bf16,{bn}x{bk},sw128>",
           "c_desc": f"tensordesc<bf16,{bm}x{bn}>",
           "bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    arch = _blackwell_arch()
    ck = gemm_tma_kernel.compile(sig, dict(BM=bm, BN=bn, BK=bk, GROUP_M=8, STAGES=stages,
                                           WARP_SPECIALIZE=True), num_warps=warps, arch=arch)
    ptx = ck.asm["ptx"]
    assert "tcgen05.mma.cta_group::1.kind::f16" in ptx
    assert "tcgen05.commit.cta_group::1.mbarrier::arrive::one" in ptx
    assert ck.meta["threads_per_block"] == warps * 32 + 128
    assert ck.meta["targets"][arch]["spill_store_bytes"] == 0
