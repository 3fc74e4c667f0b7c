"""GEMM epilogues after the TMA + wgmma/tcgen05 K loop, against torch in fp32 on fresh random
inputs: y = acc + 1, SiLU (acc * sigmoid(acc)), + bias (a row vector), bias then SiLU, and
+ residual (a [M, N] tile), at 128x128 and 128x256 tiles with ragged edges. The accumulator
stays in the MMA layout through the elementwise epilogue (kiln-tile-accelerate-dot), on sm_90a
with the bias row broadcast into that layout; a residual (and on sm_100a/sm_103a a bias)
meets the accumulator in the blocked layout, whose 130 KiB conversion buffer at 128x256 takes
the bytes of the rings, released after the loop (kiln-allocate-shared-memory)."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from kernels_dsl.common.gemm import _grouped_block, gemm_tma  # noqa: E402

PLUS_ONE, SILU, BIAS, BIAS_SILU, RESIDUAL = range(5)


@kiln.jit(num_warps=8)
def gemm_epilogue_kernel(a_desc, b_desc, c_desc, bias_ptr, res_ptr, M, N, K, stride_r,
                         BM: kl.constexpr, BN: kl.constexpr, BK: kl.constexpr,
                         GROUP_M: kl.constexpr, STAGES: kl.constexpr, EPILOGUE: kl.constexpr):
    pid_m, pid_n = _grouped_block(M, N, BM, BN, GROUP_M)
    acc = kl.zeros((BM, BN), kl.float32)
    for k in kl.range(0, K, BK, num_stages=STAGES):
        a = a_desc.load([pid_m * BM, k])
        b = b_desc.load([pid_n * BN, k])
        acc = kl.dot(a, b.T, acc)
    rm = pid_m * BM + kl.arange(0, BM)
    rn = pid_n * BN + kl.arange(0, BN)
    if EPILOGUE == 0:
        acc = acc + 1.0
    elif EPILOGUE == 1:
        acc = acc * kl.sigmoid(acc)
    elif EPILOGUE == 2 or EPILOGUE == 3:
        bias = kl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(kl.float32)
        acc = acc + bias[None, :]
        if EPILOGUE == 3:
            acc = acc * kl.sigmoid(acc)
    else:
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        res = kl.load(res_ptr + rm[:, None] * stride_r + rn[None, :], mask=mask, other=0.0)
        acc = acc + res.to(kl.float32)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(kl.bfloat16))


def _reference(epilogue, acc, bias, res):
    if epilogue == PLUS_ONE:
        return acc + 1.0
    if epilogue == SILU:
        return acc * torch.sigmoid(acc)
    if epilogue in (BIAS, BIAS_SILU):
        acc = acc + bias.float()[None, :]
        return acc * torch.sigmoid(acc) if epilogue == BIAS_SILU else acc
    return acc + res.float()


CASES = [(bm, bn, e) for bm, bn in ((128, 128), (128, 256))
         for e in (PLUS_ONE, SILU, BIAS, BIAS_SILU, RESIDUAL)]


@pytest.mark.parametrize("bm,bn,epilogue", CASES)
@pytest.mark.parametrize("m,n,k", [(128, 256, 64), (300, 520, 200), (512, 512, 1024)])
def test_gemm_epilogue(m, n, k, bm, bn, epilogue):
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k + epilogue)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b_t = torch.randn(n, k, device="cuda", generator=g).to(torch.bfloat16)
    bias = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    res = (torch.randn(m, n, device="cuda", generator=g) * 4).to(torch.bfloat16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    bk = 64
    a_desc = kiln.TensorDescriptor.from_tensor(a, [bm, bk], swizzle=128)
    b_desc = kiln.TensorDescriptor.from_tensor(b_t, [bn, bk], swizzle=128)
    c_desc = kiln.TensorDescriptor.from_tensor(out, [bm, bn])
    grid = (kiln.cdiv(m, bm) * kiln.cdiv(n, bn),)
    gemm_epilogue_kernel[grid](a_desc, b_desc, c_desc, bias, res, m, n, k, res.stride(0),
                               BM=bm, BN=bn, BK=bk, GROUP_M=8, STAGES=3, EPILOGUE=epilogue)
    torch.cuda.synchronize()
    want = _reference(epilogue, torch.matmul(a.float(), b_t.float().T), bias, res)
    # bf16 rounding of the output plus f32 accumulation-order differences (through the
    # epilogue: SiLU's slope is at most 1.1)
    torch.testing.assert_close(out.float(), want, rtol=2**-7, atol=2e-3 * k**0.5)


@pytest.mark.parametrize("bias_dtype", [None, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("activation", [None, "silu"])
@pytest.mark.parametrize("m,n,k", [(300, 520, 200), (1024, 1024, 512)])
def test_gemm_tma_bias_and_activation(m, n, k, bias_dtype, activation):
    # The library's gemm_tma with its fused epilogue (the default 128x256 block on sm_90a),
    # against torch in fp32: act(a @ b_t.T + bias).
    g = torch.Generator(device="cuda").manual_seed(m + n + k + (activation is None))
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b_t = torch.randn(n, k, device="cuda", generator=g).to(torch.bfloat16)
    bias = None if bias_dtype is None else (
        torch.randn(n, device="cuda", generator=g) * 8).to(bias_dtype)
    out = gemm_tma(a, b_t, bias=bias, activation=activation)
    torch.cuda.synchronize()
    want = torch.matmul(a.float(), b_t.float().T)
    if bias is not None:
        want = want + bias.float()[None, :]
    if activation == "silu":
        want = want * torch.sigmoid(want)
    torch.testing.assert_close(out.float(), want, rtol=2**-7, atol=2e-3 * k**0.5)


def test_gemm_tma_rejects_a_bad_epilogue():
    a = torch.zeros(64, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="activation must be one of"):
        gemm_tma(a, a, activation="gelu")
    with pytest.raises(ValueError, match="bias must be a contiguous"):
        gemm_tma(a, a, bias=torch.zeros(65, device="cuda"))
    with pytest.raises(ValueError, match="bias must be a contiguous"):
        gemm_tma(a, a, bias=torch.zeros(64, 2, device="cuda")[:, 0])
