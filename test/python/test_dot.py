"""kl.dot (tile.dot): PTX and cubins per arch, the CPU interpreter against numpy, and
the user errors at their line. No GPU and no torch needed (test/gpu/test_dot.py runs
the same kernels on the device)."""

import os
import sys

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.testing import interpret

_C = pytest.importorskip("kiln._C")
ml_dtypes = pytest.importorskip("ml_dtypes")

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
HERE = os.path.abspath(__file__)
DTYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
from dot_kernels import dot_tile, gemm  # noqa: E402


def line_of(marker):
    """Line number of the source line carrying the comment ``# <marker>``."""
    with open(HERE) as f:
        for i, line in enumerate(f, 1):
            if f"# {marker}" in line and "marker" not in line:
                return i
    raise AssertionError(f"marker {marker} not found")


def _tile_sig(dt):
    return {"a_ptr": f"*{dt}", "b_ptr": f"*{dt}", "acc_ptr": "*f32", "c_ptr": "*f32"}


_GEMM_SIG = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*f32", "M": "i32", "N": "i32",
             "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}


def _pointers(sig):
    return [k for k, v in sig.items() if v.startswith("*")]


# ---------------------------------------------------------------------------
# (a) Compilation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_dot_tile_compiles_to_mma_sync(dt, arch):
    sig = _tile_sig(dt)
    ck = dot_tile.compile(sig, {"M": 64, "N": 64, "K": 32, "HAS_ACC": True}, _pointers(sig),
                          num_warps=4, arch=arch, upto="cubin")
    assert f".target {arch}" in ck.ptx
    # 32 tiles of 16x8 over 4 warps, 2 K steps each
    assert ck.ptx.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{dt}.{dt}.f32") == 16
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ck.ptx
    assert "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ARCHS)
def test_gemm_loop_compiles(arch):
    ck = gemm.compile(_GEMM_SIG, {"BM": 128, "BN": 128, "BK": 64}, _pointers(_GEMM_SIG),
                      num_warps=8, arch=arch, upto="cubin")
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"
    ir = gemm.compile(_GEMM_SIG, {"BM": 128, "BN": 128, "BK": 64}, _pointers(_GEMM_SIG),
                      num_warps=8, upto="tile").tile_ir
    # the accumulator is carried by the K loop
    assert "scf.for" in ir and "-> (tensor<128x128xf32>)" in ir
    assert "tile.dot" in ir and "tensor<128x64xbf16> * tensor<64x128xbf16>" in ir


def test_zero_accumulator_is_not_read():
    sig = _tile_sig("bf16")
    ptx = {acc: dot_tile.compile(sig, {"M": 32, "N": 32, "K": 16, "HAS_ACC": acc},
                                 _pointers(sig), num_warps=4, arch="sm_90a", upto="ptx").ptx
           for acc in (False, True)}
    assert "ld.shared.v2.b32" not in ptx[False]  # no accumulator fragments read
    assert "ld.shared.v2.b32" in ptx[True]


def test_too_much_shared_memory_is_an_error():
    sig = _tile_sig("bf16")
    # The lowering knows the layout, hence the buffers: its error names the dot's line.
    with pytest.raises(_C.MLIRError, match=r"dot_kernels.py\":28:.*'tile.dot' op needs 78336 "
                       r"bytes of shared memory .* more than the 49152 of static shared memory"):
        dot_tile.compile(sig, {"M": 128, "N": 128, "K": 128, "HAS_ACC": False}, _pointers(sig),
                         num_warps=4, arch="sm_90a", upto="ptx")


# ---------------------------------------------------------------------------
# (b) The interpreter against numpy
# ---------------------------------------------------------------------------


def _reference(a, b, acc=None):
    """f32 accumulation of the (exactly widened) inputs, in float64."""
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return ref if acc is None else ref + acc


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("m,n,k", [(16, 8, 16), (16, 16, 16), (64, 32, 128)])
@pytest.mark.parametrize("has_acc", [False, True])
def test_dot_tile_interpreter(dt, m, n, k, has_acc):
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(DTYPES[dt])
    b = rng.standard_normal((k, n)).astype(DTYPES[dt])
    acc = rng.standard_normal((m, n)).astype(np.float32)
    c = np.full((m, n), np.nan, dtype=np.float32)
    interpret(dot_tile, (1,), a, b, acc, c, M=m, N=n, K=k, HAS_ACC=has_acc)
    np.testing.assert_allclose(c, _reference(a, b, acc if has_acc else None),
                               rtol=1e-5, atol=1e-5 * k)


def test_gemm_interpreter_with_masks():
    rng = np.random.default_rng(0)
    m, n, k = 50, 40, 70  # edges in every dimension
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    c = np.full((m, n), np.nan, dtype=np.float32)
    interpret(gemm, (kiln.cdiv(m, 32), kiln.cdiv(n, 16)), a, b, c, m, n, k, k, n, n,
              BM=32, BN=16, BK=16)
    np.testing.assert_allclose(c, _reference(a, b), rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------
# (c) User errors
# ---------------------------------------------------------------------------


@kiln.jit
def bad_dot(a_ptr, b_ptr, c_ptr, CASE: kl.constexpr):
    r16 = kl.arange(0, 16)
    a = kl.load(a_ptr + r16[:, None] * 16 + r16[None, :])
    b = kl.load(b_ptr + r16[:, None] * 16 + r16[None, :])
    if CASE == "f32":
        c = kl.dot(a.to(kl.float32), b)  # err-f32
    elif CASE == "mixed":
        c = kl.dot(a, b.to(kl.float16))  # err-mixed
    elif CASE == "k":
        c = kl.dot(a, kl.load(b_ptr + kl.arange(0, 32)[:, None] * 16 + r16[None, :]))  # err-k
    elif CASE == "small":
        c = kl.dot(kl.load(a_ptr + kl.arange(0, 8)[:, None] * 16 + r16[None, :]), b)  # err-small
    elif CASE == "rank":
        c = kl.dot(kl.load(a_ptr + r16), b)  # err-rank
    elif CASE == "acc_shape":
        c = kl.dot(a, b, kl.zeros((16, 8), kl.float32))  # err-acc_shape
    else:
        c = kl.dot(a, b, kl.zeros((16, 16), kl.bfloat16))  # err-acc_dtype
    kl.store(c_ptr + r16[:, None] * 16 + r16[None, :], c)


@pytest.mark.parametrize("case,message", [
    ("f32", "dot: a must be float16, bfloat16 or FP8 \\(float8e4m3, float8e5m2\\), got f32"),
    ("mixed", "dot: a and b must have one dtype, got bf16 and f16"),
    ("k", "dot: a is 16x16 and b is 32x16: the columns of a must equal the rows of b"),
    ("small", "dot: M = 8 is below the tensor-core minimum 16"),
    ("rank", r"dot: a must be a 2-D tile, got \[16\]"),
    ("acc_shape", r"dot: acc must be a float32 tile of shape \[16, 16\], got \[16, 8\] f32"),
    ("acc_dtype", r"dot: acc must be a float32 tile of shape \[16, 16\], got \[16, 16\] bf16"),
])
def test_dot_errors_at_their_line(case, message):
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*f32"}
    with pytest.raises(CompilationError, match=message) as info:
        bad_dot.compile(sig, {"CASE": case}, num_warps=4, upto="tile")
    assert f"{HERE}:{line_of('err-' + case)}:" in str(info.value)


sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from kernels_dsl.common.gemm import gemm_tma_kernel  # noqa: E402


def _gemm_tma(arch, bm, bn, stages, warps, dt="bf16"):
    bk = 128 if dt.startswith("f8") else 64
    sig = {"a_desc": f"tensordesc<{dt},{bm}x{bk},sw128>",
           "b_desc": f"tensordesc<{dt},{bn}x{bk},sw128>",
           "c_desc": f"tensordesc<bf16,{bm}x{bn}>", "M": "i32", "N": "i32", "K": "i32"}
    return gemm_tma_kernel.compile(sig, dict(BM=bm, BN=bn, BK=bk, GROUP_M=8, STAGES=stages),
                                   num_warps=warps, arch=arch, upto="cubin")


@pytest.mark.parametrize("dt,ptx_type", [("f8e4m3", "e4m3.e4m3"), ("f8e5m2", "e5m2.e5m2")])
def test_fp8_gemm_tma_on_wgmma_and_widened_elsewhere(dt, ptx_type):
    # sm_90a: 128-element FP8 boxes, four k32 wgmma steps; sm_100a: the operands widened to
    # bf16 (exact) for mma.sync.
    ck = _gemm_tma("sm_90a", 128, 256, 3, 8, dt)
    assert ck.asm["ptx"].count(f"wgmma.mma_async.sync.aligned.m64n256k32.f32.{ptx_type}") == 4
    assert ck.meta["targets"]["sm_90a"]["spill_store_bytes"] == 0
    ck = _gemm_tma("sm_100a", 64, 64, 2, 4, dt)
    assert ck.cubin and "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ck.asm["ptx"]


@pytest.mark.parametrize("bm,bn,stages,warps", [(128, 256, 3, 8), (256, 128, 3, 8),
                                                (128, 128, 4, 4), (64, 128, 4, 4)])
def test_gemm_tma_runs_on_wgmma_on_sm90a(bm, bn, stages, warps):
    # kiln-tile-accelerate-dot: operands read from the ring slots by wgmma (4 k16 steps
    # of a 64-wide K box per 64-row slab of a warpgroup), the accumulator in registers
    # (no spills), one wgmma group in flight in the loop, dynamic shared memory for the
    # rings and the output box.
    ck = _gemm_tma("sm_90a", bm, bn, stages, warps)
    ptx = ck.asm["ptx"]
    slabs = bm // 64 // (warps // 4)
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.bf16.bf16") == 4 * slabs
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    assert "wgmma.wait_group.sync.aligned 0;" in ptx
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert ".extern .shared .align 1024 .b8 __kiln_dynamic_smem[];" in ptx
    box_bytes = (bm + bn) * 64 * 2
    assert ck.meta["shared_bytes"] >= stages * box_bytes + bm * bn * 2
    target = ck.meta["targets"]["sm_90a"]
    assert target["spill_store_bytes"] == 0 and "wgmma" in target["features"]


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_gemm_tma_assembles_without_wgmma(arch):
    # wgmma is sm_90a only, and tcgen05 takes BM = 128 only: a 64x64 block keeps tile.dot
    # (mma.sync) on Blackwell and reads the swizzled boxes into registers.
    ck = _gemm_tma(arch, 64, 64, 2, 4)
    ptx = ck.asm["ptx"]
    assert ck.cubin and "wgmma" not in ptx and "tcgen05" not in ptx
    assert "mma.sync.aligned.m16n8k16" in ptx


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
@pytest.mark.parametrize("bn,stages,warps", [(256, 3, 8), (128, 4, 4), (64, 4, 4)])
def test_gemm_tma_runs_on_tcgen05_on_blackwell(arch, bn, stages, warps):
    # kiln-tile-accelerate-dot on sm_100a/sm_103a: the accumulator in Tensor Memory
    # (BN columns, at least 32), one elected thread issuing four k16 tcgen05.mma per
    # K step from the ring slots and committing them to an mbarrier, the result read
    # with tcgen05.ld (32x32b: a row per thread, the warpgroups splitting the columns)
    # before TMEM is freed; assembled into a cubin.
    ck = _gemm_tma(arch, 128, bn, stages, warps)
    ptx = ck.asm["ptx"]
    assert ck.cubin and "mma.sync" not in ptx and "ldmatrix" not in ptx and "wgmma" not in ptx
    assert ptx.count("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32") == 1
    assert ptx.count("tcgen05.mma.cta_group::1.kind::f16") == 4
    assert ptx.count("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64") == 1
    columns = bn // (warps // 4)
    assert ptx.count("tcgen05.ld.sync.aligned.32x32b.") == max(1, columns // 32)
    assert "tcgen05.wait::ld.sync.aligned;" in ptx
    assert "tcgen05.dealloc.cta_group::1.sync.aligned.b32" in ptx
    assert "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" in ptx
    target = ck.meta["targets"][arch]
    assert target["spill_store_bytes"] == 0 and "tcgen05" in target["features"]
