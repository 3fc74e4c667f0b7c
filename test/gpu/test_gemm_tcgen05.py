"""The TMA GEMM (kernels_dsl/common/gemm.py: gemm_tma) on Blackwell, where kiln-tile-accelerate-dot
runs its K loop on tcgen05.mma with the accumulator in Tensor Memory (BM = 128), against
torch.matmul in fp32: one tile, ragged edges in M, N and K, long K loops whose ring slots and
commit barriers go through many phases, N from 64 to 256, one or two warpgroups (the
warpgroups split the TMEM columns), bf16 and f16. Skipped, with the reason, on other GPUs."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))

from kernels_dsl.common.gemm import gemm_tma_kernel  # noqa: E402

from test_gemm_tma import run_and_check, run_large_and_strided  # noqa: E402  (Hopper's checks)

pytestmark = pytest.mark.blackwell

CONFIGS = [  # (BM, BN, BK), stages, warps
    ((128, 256, 64), 3, 8), ((128, 128, 64), 4, 4), ((128, 64, 64), 4, 4), ((128, 128, 64), 2, 8)]


def _arch():
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}a"


@pytest.mark.parametrize("block,stages,warps", CONFIGS)
def test_gemm_tma_compiles_to_tcgen05(block, stages, warps):
    bm, bn, bk = block
    sig = {"a_desc": f"tensordesc<bf16,{bm}x{bk},sw128>",
           "b_desc": f"tensordesc<bf16,{bn}x{bk},sw128>",
           "c_desc": f"tensordesc<bf16,{bm}x{bn}>",
           "bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    ck = gemm_tma_kernel.compile(sig, dict(BM=bm, BN=bn, BK=bk, GROUP_M=8, STAGES=stages),
                                 num_warps=warps, arch=_arch(), upto="ptx")
    assert "tcgen05.mma.cta_group::1.kind::f16" in ck.asm["ptx"]


@pytest.mark.parametrize("block,stages,warps", CONFIGS)
@pytest.mark.parametrize("m,n,k", [(128, 256, 64), (300, 520, 200), (512, 512, 2048)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gemm_tma_tcgen05(dtype, m, n, k, block, stages, warps):
    run_and_check(dtype, m, n, k, block, stages, warps)


def test_gemm_tma_tcgen05_large():
    run_large_and_strided()
