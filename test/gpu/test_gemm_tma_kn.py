"""The TMA GEMM with a row-major B (kernels_dsl/common/gemm.py: gemm_tma_kn, ``kl.dot(a, b)``
with b [K, N], N contiguous) against torch.matmul in fp32 on fresh random inputs. On sm_90a
its [64, BN] B boxes (BN = 64, or 128 and 256: wide boxes copied in 128-byte column chunks)
are read in place by wgmma as an MN-major operand (transpose-B form);
ragged M, N and K (TMA zero-fills the loads past the edges and clips the store), long K loops
whose ring slots are refilled many times, one and two warpgroups, bf16 and f16."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from kernels_dsl.common.gemm import gemm_tma_kn  # noqa: E402

CONFIGS = [  # (BM, BN, BK), stages, warps
    ((128, 64, 64), 4, 8), ((128, 64, 64), 4, 4), ((64, 64, 64), 4, 4), ((256, 64, 64), 3, 8),
    # wide B boxes: [64, 128] and [64, 256], two and four 64-column chunks of N (the
    # MN-major descriptor's leading byte offset apart); a wide A box of BK = 128
    ((128, 128, 64), 4, 8), ((64, 128, 64), 4, 4),
    # sm90 (wgmma reading wide boxes in place): sm_100a/sm_103a run this form on mma.sync,
    # whose dot at BN = 256 or BK = 128 needs more than its 48 KiB of static shared memory
    # (a compile error)
    pytest.param((128, 128, 128), 3, 8, marks=pytest.mark.sm90),
    pytest.param((128, 256, 64), 3, 8, marks=pytest.mark.sm90)]


def _check(out, a, b):
    ref = torch.matmul(a.float(), b.float())
    k = a.shape[1]
    # bf16 rounding of the output (2^-8 relative) plus f32 accumulation-order differences
    torch.testing.assert_close(out.float(), ref, rtol=2**-7, atol=1e-3 * k**0.5)


@pytest.mark.parametrize("block,stages,warps", CONFIGS)
@pytest.mark.parametrize("m,n,k", [(128, 64, 64), (300, 520, 200), (512, 512, 2048),
                                   (64, 136, 72)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gemm_tma_kn(dtype, m, n, k, block, stages, warps):
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(k, n, device="cuda").to(dtype)
    # the output is a view whose rows are padded: the store must clip at N
    full = torch.full((m, n + 8), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = full[:, :n]
    gemm_tma_kn(a, b, out, block=block, stages=stages, num_warps=warps)
    torch.cuda.synchronize()
    _check(out, a, b)
    assert torch.isnan(full[:, n:]).all()


def test_gemm_tma_kn_large_and_strided():
    # a [K, N] view with a row pitch larger than N, a 4096-sized problem, grouped ordering,
    # the arch's default block (sm_90a: 128x256, four 64-column chunks a B box)
    m, n, k = 4096, 4096, 1024
    a = torch.randn(m, k, device="cuda").bfloat16()
    b = torch.randn(k, n + 64, device="cuda").bfloat16()[:, :n]
    out = gemm_tma_kn(a, b)
    torch.cuda.synchronize()
    _check(out, a, b)
