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
from kiln.testing import interpret, source_line

_C = pytest.importorskip("kiln._C")
ml_dtypes = pytest.importorskip("ml_dtypes")

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
HERE = os.path.abspath(__file__)
DTYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
from dot_kernels import dot_chain, dot_tile, gemm  # noqa: E402


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
    # 16 rows a warp (warpsN = 1), its 8 n-tiles of 16x8 over 2 K steps; B's fragments two
    # n-tiles an ldmatrix.x4.trans (row-major [K, N]), A's one x4
    assert ck.ptx.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{dt}.{dt}.f32") == 16
    assert ck.ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 2
    assert ck.ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 8
    assert "__kiln_dot_acc_smem" not in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m", [1, 8])
def test_small_m_dot_runs_on_16_row_mma_tiles(arch, m):
    # M below 16 runs on the m16n8k16 tiles of M = 16 (the rows past M wrap onto the
    # tile's): N / 8 = 8 tiles over 4 warps (warpsN = 4), K / 16 = 4 steps each, 8 mma.sync
    # a warp
    sig = _tile_sig("bf16")
    ck = dot_tile.compile(sig, {"M": m, "N": 64, "K": 64, "HAS_ACC": True}, _pointers(sig),
                          num_warps=4, arch=arch, upto="cubin")
    assert ck.ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == 8
    assert ck.cubin[:4] == b"\x7fELF"
    assert ck.meta["targets"][arch]["dots"][0]["unit"] == "mma.sync"


@pytest.mark.parametrize("arch", ARCHS)
def test_gemm_loop_compiles(arch):
    ck = gemm.compile(_GEMM_SIG, {"BM": 128, "BN": 128, "BK": 64}, _pointers(_GEMM_SIG),
                      num_warps=8, arch=arch, upto="cubin")
    if arch == "sm_90a":
        # The plain-load operands staged in shared memory for wgmma, a 64-row slab a
        # warpgroup, 4 k16 steps an iteration; the accumulator in the wgmma registers.
        assert ck.ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 4
        assert "fence.proxy.async.shared::cta" in ck.ptx
        assert "mma.sync" not in ck.ptx and "ldmatrix" not in ck.ptx
    else:
        # The operands staged in shared memory for tcgen05 (B MN-major), 4 K steps an
        # iteration into Tensor Memory, read back and added to the accumulator in registers.
        assert ck.ptx.count("tcgen05.mma.cta_group::1.kind::f16") == 4
        assert "mma.sync" not in ck.ptx and "ldmatrix" not in ck.ptx
        assert [d["unit"] for d in ck.meta["targets"][arch]["dots"]] == ["tcgen05 staged"]
    assert ck.cubin[:4] == b"\x7fELF"
    ir = gemm.compile(_GEMM_SIG, {"BM": 128, "BN": 128, "BK": 64}, _pointers(_GEMM_SIG),
                      num_warps=8, upto="tile").tile_ir
    # the accumulator is carried by the K loop
    assert "scf.for" in ir and "-> (tensor<128x128xf32>)" in ir
    assert "tile.dot" in ir and "tensor<128x64xbf16> * tensor<64x128xbf16>" in ir


def test_accumulator_stays_in_registers():
    # The accumulator lives in the mma.sync fragments (no accumulator buffer): a zero one is
    # registers holding 0.0 (the dot's two barriers and the result's conversion to the
    # blocked layout for the store, two more); a loaded one is converted in (two more).
    sig = _tile_sig("bf16")
    ptx = {acc: dot_tile.compile(sig, {"M": 32, "N": 32, "K": 16, "HAS_ACC": acc},
                                 _pointers(sig), num_warps=4, arch="sm_90a", upto="ptx").ptx
           for acc in (False, True)}
    for text in ptx.values():
        assert "__kiln_dot_acc_smem" not in text
        assert text.count("mma.sync.aligned.m16n8k16") == 2
    assert ptx[False].count("bar.sync") == 4
    assert ptx[True].count("bar.sync") == 6


def test_too_much_shared_memory_is_an_error():
    sig = _tile_sig("bf16")
    # mma.sync (sm_100a here, where tcgen05 takes M = 128 only) stages a and b in shared
    # memory: 52 KiB for 64x128x128, past the 48 KiB of static shared memory, becomes
    # dynamic shared memory.
    ck = dot_tile.compile(sig, {"M": 64, "N": 128, "K": 128, "HAS_ACC": False}, _pointers(sig),
                          num_warps=4, arch="sm_100a", upto="ptx")
    plan = {b["buffer"]: b["bytes"] for b in ck.meta["targets"]["sm_100a"]["shared_plan"]}
    assert plan["__kiln_dot_a_smem_0"] == 64 * 136 * 2
    assert plan["__kiln_dot_b_smem_0"] == 128 * 136 * 2
    # Past the 227 KiB a block may use: an error at the dot's line listing the buffers live
    # at the top (here the accumulator's way out alone).
    with pytest.raises(CompilationError, match=r"(?s)dot_kernels.py:28:.*needs 263168 bytes of "
                       r"shared memory, more than the 232448.*__kiln_convert_smem_0: 263168 bytes"):
        dot_tile.compile(sig, {"M": 64, "N": 1024, "K": 64, "HAS_ACC": False}, _pointers(sig),
                         num_warps=4, arch="sm_100a", upto="ptx")
    # sm_90a's staged wgmma holds a and b only (64 KiB), the accumulator in registers.
    ck = dot_tile.compile(sig, {"M": 128, "N": 128, "K": 128, "HAS_ACC": False}, _pointers(sig),
                          num_warps=4, arch="sm_90a", upto="ptx")
    assert ck.ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 16


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


def test_dot_chain_interpreter():
    # a @ w.T, its row max, exp2 into the next dot's A (bf16), against numpy
    rng = np.random.default_rng(1)
    m, n, k, d = 16, 32, 64, 16
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((n, d)).astype(ml_dtypes.bfloat16)
    mx = np.full(m, np.nan, dtype=np.float32)
    o = np.full((m, d), np.nan, dtype=np.float32)
    interpret(dot_chain, (1,), a, w, v, mx, o, M=m, N=n, K=k, D=d)
    s = _reference(a, w.T)
    np.testing.assert_allclose(mx, s.max(axis=1), rtol=1e-5, atol=1e-4)
    p = np.exp2(s - mx[:, None].astype(np.float64))
    np.testing.assert_allclose(o, p @ v.astype(np.float64), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,warps_n", [(64, 1), (16, 4)])
def test_dot_chain_compiles(arch, m, warps_n):
    # The transpose folded into the first dot (B's fragments from w's rows: no .trans for
    # it), both on mma.sync with the reason recorded; at 16 rows a warp (M = 64, 4 warps:
    # warpsN = 1) the row max runs on the accumulator's registers (shuffles, no conversion
    # of s) and p is the second dot's A from registers (one A ldmatrix a k16 step, the
    # first dot's); at M = 16 the warps split s's columns (warpsN = 4) and s is converted.
    sig = {"a_ptr": "*bf16", "w_ptr": "*bf16", "v_ptr": "*bf16", "m_ptr": "*f32",
           "o_ptr": "*f32"}
    ck = dot_chain.compile(sig, {"M": m, "N": 32, "K": 32, "D": 16}, list(sig), num_warps=4,
                           arch=arch, upto="ptx")
    dots = ck.meta["targets"][arch]["dots"]
    assert [d["unit"] for d in dots] == ["mma.sync", "mma.sync"] and all(d["reason"]
                                                                         for d in dots)
    x4 = ck.ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16")
    x4_trans = ck.ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
    if warps_n == 1:
        # first dot: A one x4 a k16 step, w's 4 n-tiles two x4 a step (2 steps); second
        # dot: p from registers, v one x4.trans a step; barriers: the two dots' and the
        # conversions of m and o for their stores, none for s
        assert (x4, x4_trans) == (6, 2)
        assert ck.ptx.count("bar.sync") == 8
    else:
        # s converted to the blocked layout for the max, p staged: an A x4 a step in both
        assert x4 == 4 and ck.ptx.count("ldmatrix.sync.aligned.m8n8.x2.shared.b16") == 2
        assert ck.ptx.count("bar.sync") > 8


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
        c = kl.dot(a, kl.load(b_ptr + r16[:, None] * 4 + kl.arange(0, 4)[None, :]))  # err-small
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
    ("small", "dot: N = 4 is below the tensor-core minimum 8"),
    ("rank", r"dot: a must be a 2-D tile, got \[16\]"),
    ("acc_shape", r"dot: acc must be a float32 tile of shape \[16, 16\], got \[16, 8\] f32"),
    ("acc_dtype", r"dot: acc must be a float32 tile of shape \[16, 16\], got \[16, 16\] bf16"),
])
def test_dot_errors_at_their_line(case, message):
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*f32"}
    with pytest.raises(CompilationError, match=message) as info:
        bad_dot.compile(sig, {"CASE": case}, num_warps=4, upto="tile")
    assert f"{HERE}:{source_line(HERE, 'err-' + case)}:" in str(info.value)


sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from kernels_dsl.common.gemm import gemm_tma_kernel  # noqa: E402


def _gemm_tma(arch, bm, bn, stages, warps, dt="bf16", bk=None, c_swizzle=""):
    bk = bk or (128 if dt.startswith("f8") else 64)
    sig = {"a_desc": f"tensordesc<{dt},{bm}x{bk},sw128>",
           "b_desc": f"tensordesc<{dt},{bn}x{bk},sw128>",
           "c_desc": f"tensordesc<bf16,{bm}x{bn}{c_swizzle}>",
           "bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    return gemm_tma_kernel.compile(sig, dict(BM=bm, BN=bn, BK=bk, GROUP_M=8, STAGES=stages),
                                   num_warps=warps, arch=arch, upto="cubin")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_gemm_tma_wide_k_reads_chunks_in_place(arch):
    # BK = 128 bf16: [128, 128] and [128, 128] boxes of two 128-byte chunks of K each, read
    # in place (wgmma on sm_90a, tcgen05 on sm_100a/sm_103a); the k16 step at k = 64 moves
    # the descriptors into the second chunk, 128 * 128 bytes on: +1024 in the address field
    # (the K-major constants plus 1024).
    ck = _gemm_tma(arch, 128, 128, 3, 8, bk=128)
    ptx = ck.asm["ptx"]
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    if arch == "sm_90a":
        assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 8
        assert "4611686293305361408" in ptx
    else:
        assert ptx.count("tcgen05.mma.cta_group::1.kind::f16") == 8
        assert "4611756662049539072" in ptx
    # two chunk copies a box, A and B, in every fill
    copies = ptx.count("cp.async.bulk.tensor.2d.shared::cta.global.tile")
    assert copies and copies % 4 == 0
    assert ck.meta["targets"][arch]["spill_store_bytes"] == 0


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_gemm_tma_stores_a_swizzled_c_box_in_chunks(arch):
    # gemm_tma passes a 128-byte swizzled [128, 256] C box (its accumulator's stores into the
    # staging buffer then miss each other's banks): written with the swizzle and stored by
    # one TMA copy a 64-column chunk.
    ck = _gemm_tma(arch, 128, 256, 3, 8, c_swizzle=",sw128")
    ptx = ck.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") == 4
    assert ck.meta["targets"][arch]["spill_store_bytes"] == 0


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
    # the rings (their slots and mbarriers); the store's box takes their bytes once they
    # are released after the loop
    box_bytes = (bm + bn) * 64 * 2
    assert stages * box_bytes <= ck.meta["shared_bytes"] <= stages * box_bytes + 2 * 1024
    target = ck.meta["targets"]["sm_90a"]
    assert target["spill_store_bytes"] == 0 and "wgmma" in target["features"]


@kiln.jit(num_warps=8)
def _gemm_bias(a_desc, b_desc, c_desc, bias_ptr, K, BN: kl.constexpr, STAGES: kl.constexpr):
    acc = kl.zeros((128, BN), kl.float32)
    for k in kl.range(0, K, 64, num_stages=STAGES):  # gemm-loop
        a = a_desc.load([0, k])
        b = b_desc.load([0, k])
        acc = kl.dot(a, b.T, acc)  # gemm-dot
    bias = kl.load(bias_ptr + kl.arange(0, BN)).to(kl.float32)
    c_desc.store([0, 0], (acc + bias[None, :]).to(kl.bfloat16))


_BIAS_SIG = {"a_desc": "tensordesc<bf16,128x64,sw128>",
             "b_desc": "tensordesc<bf16,256x64,sw128>", "c_desc": "tensordesc<bf16,128x256>",
             "bias_ptr": "*bf16", "K": "i32"}


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_a_bias_epilogue_takes_the_drained_rings_bytes(arch):
    # A bias epilogue after the 128x256 loop. On sm_90a the bias row crosses into the wgmma
    # accumulator's layout through a 1 KiB buffer (the accumulator stays in its registers);
    # on sm_100a/sm_103a, whose Tensor Memory load gives a thread a whole row, the
    # accumulator meets the bias in the blocked layout through a 130 KiB conversion buffer.
    # Either comes after the loop, whose rings are released once drained, so it takes their
    # bytes (offset 0, like the larger ring), and so does the store's box: the kernel needs
    # the rings' 146 KiB, not all its buffers side by side (348 KiB with the conversion).
    # The plan in the metadata says so, largest buffer first, with the lines each is live
    # over.
    ck = _gemm_bias.compile(_BIAS_SIG, {"BN": 256, "STAGES": 3}, ["bias_ptr"], arch=arch)
    assert ck.cubin[:4] == b"\x7fELF"
    plan = ck.meta["targets"][arch]["shared_plan"]
    by_name = {p["buffer"]: p for p in plan}
    moved, size = (("__kiln_broadcast_smem_0", 256 * 4) if arch == "sm_90a" else
                   ("__kiln_convert_smem_0", 128 * (256 + 4) * 4))
    assert (by_name[moved]["bytes"], by_name[moved]["offset"]) == (size, 0)
    assert sum(p["buffer"].startswith(("__kiln_convert", "__kiln_broadcast")) for p in plan) == 1
    assert by_name["__kiln_tma_box_0"]["offset"] == 0
    rings = [p for p in plan if p["buffer"].startswith("__kiln_tma_ring")]
    assert sorted(p["bytes"] for p in rings) == [49176, 98328]
    assert ck.meta["shared_bytes"] < 150 * 1024
    assert [p["bytes"] for p in plan] == sorted((p["bytes"] for p in plan), reverse=True)
    loop = source_line(HERE, "gemm-loop")
    assert all(p["lines"][0] >= loop - 2 for p in plan), plan


@kiln.jit(num_warps=8)
def _staged_big_dot(a_ptr, b_ptr, c_ptr):
    r = kl.arange(0, 128)
    k = kl.arange(0, 512)
    n = kl.arange(0, 256)
    a = kl.load(a_ptr + r[:, None] * 512 + k[None, :])
    b = kl.load(b_ptr + k[:, None] * 256 + n[None, :])
    c = kl.dot(a, b)  # big-staged-dot
    kl.store(c_ptr + r[:, None] * 256 + n[None, :], c)


def test_a_shared_memory_overflow_is_a_compilation_error_at_the_largest_buffer():
    # A [128, 512] x [512, 256] dot of register tiles stages 384 KiB of operands for wgmma:
    # the error is at the statement of the largest buffer (the dot), lists the largest
    # buffers with their bytes, offsets and the lines they are live over, and carries no IR.
    with pytest.raises(CompilationError) as info:
        _staged_big_dot.compile({"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*f32"}, {},
                                arch="sm_90a", upto="ptx")
    text = str(info.value)
    line = source_line(HERE, "big-staged-dot")
    assert text.startswith(f"{HERE}:{line}:"), text
    assert "the kernel needs 393216 bytes of shared memory, more than the 232448" in text
    assert (f"__kiln_wgmma_b_smem_0: 262144 bytes at offset 0, live from line {line} to line "
            f"{line}") in text, text
    assert "__kiln_wgmma_a_smem_0: 131072 bytes" in text
    assert len(text) < 2000 and "llvm." not in text, text


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


from kernels_dsl.common.gemm import KN_DEFAULTS, KN_FALLBACK, gemm_tma_kn_kernel  # noqa: E402,I001


def _gemm_tma_kn(arch, bm, stages, warps, dt="bf16", bn=64, bk=64):
    sig = {"a_desc": f"tensordesc<{dt},{bm}x{bk},sw128>",
           "b_desc": f"tensordesc<{dt},{bk}x{bn},sw128>",
           "c_desc": f"tensordesc<bf16,{bm}x{bn}>", "M": "i32", "N": "i32", "K": "i32"}
    return gemm_tma_kn_kernel.compile(sig, dict(BM=bm, BN=bn, BK=bk, GROUP_M=8,
                                                STAGES=stages),
                                      num_warps=warps, arch=arch, upto="cubin")


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("bm,stages,warps", [(128, 4, 8), (128, 4, 4), (64, 4, 4),
                                             (256, 3, 8)])
def test_gemm_tma_row_major_b_runs_on_wgmma_on_sm90a(bm, stages, warps, dt):
    # kl.dot(a, b) with b a [64, 64] box of a row-major [K, N] tensor (no transpose):
    # wgmma with an MN-major B (imm-trans-b = 1, the last immediate), its descriptor
    # stepping 16 rows (2048 bytes, +128 in the address field) per k16 step.
    ck = _gemm_tma_kn("sm_90a", bm, stages, warps, dt)
    ptx = ck.asm["ptx"]
    slabs = bm // 64 // (warps // 4)
    wgmmas = [line for line in ptx.splitlines()
              if f"wgmma.mma_async.sync.aligned.m64n64k16.f32.{dt}.{dt}" in line]
    assert len(wgmmas) == 4 * slabs
    assert all(" ".join(line.split()).endswith("p, 1, 1, 0, 1;") for line in wgmmas), wgmmas
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    target = ck.meta["targets"]["sm_90a"]
    assert target["spill_store_bytes"] == 0 and "wgmma" in target["features"]


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("bn,stages", [(128, 4), (256, 3)])
def test_gemm_tma_row_major_b_wide_box_runs_on_wgmma_on_sm90a(bn, stages, dt):
    # A [64, BN] B box of BN = 128 or 256 (256 or 512-byte rows: a wide box of 64-column
    # chunks, each K rows of 128 bytes) is read in place as an MN-major B: no mma.sync, no
    # staging; the ring issue copies it a chunk at a time (BN / 64 copies, one expect_tx).
    # B's descriptor carries the chunk stride K * 128 = 8192 in its leading byte offset
    # (512 in bits 16-29: the constant 0x4000004002000000).
    ck = _gemm_tma_kn("sm_90a", 128, stages, 8, dt, bn=bn)
    ptx = ck.asm["ptx"]
    wgmmas = [line for line in ptx.splitlines()
              if f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.{dt}.{dt}" in line]
    assert len(wgmmas) == 4
    assert all(" ".join(line.split()).endswith("p, 1, 1, 0, 1;") for line in wgmmas), wgmmas
    assert "4611686293338849280" in ptx
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert "__kiln_wgmma_b_smem" not in ptx and "__kiln_wgmma_a_smem" not in ptx
    # the loop's refill: one A copy and BN / 64 B copies under their two expect_tx
    copies = ptx.count("cp.async.bulk.tensor.2d.shared::cta.global.tile")
    assert copies == stages * (1 + bn // 64)
    assert ptx.count("mbarrier.arrive.expect_tx") == 2 * stages
    target = ck.meta["targets"]["sm_90a"]
    assert target["spill_store_bytes"] == 0 and "wgmma" in target["features"]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_gemm_tma_row_major_b_default_block_assembles(arch):
    # gemm_tma_kn's default block for each arch assembles without spills: 128x256x64 on 3
    # stages on sm_90a (wgmma, the B box read in place), 128x128x64 on 4 on sm_100a/sm_103a
    # (mma.sync for an MN-major B, reading the chunked slots from registers).
    (bm, bn, bk), stages = KN_DEFAULTS.get(arch, KN_FALLBACK)
    ck = _gemm_tma_kn(arch, bm, stages, 8, bn=bn, bk=bk)
    assert ck.cubin[:4] == b"\x7fELF"
    assert ck.meta["targets"][arch]["spill_store_bytes"] == 0
    ptx = ck.asm["ptx"]
    if arch == "sm_90a":
        assert (bm, bn) == (128, 256) and "wgmma.mma_async" in ptx and "mma.sync" not in ptx
    else:
        assert "mma.sync.aligned.m16n8k16" in ptx and "wgmma" not in ptx


@pytest.mark.parametrize("arch", ARCHS)
def test_gemm_tma_row_major_b_bn256_assembles(arch):
    # BN = 256 assembles on every arch: wgmma on sm_90a; on sm_100a/sm_103a the mma.sync
    # dot keeps its 128x256 accumulator in registers (8 warps, 2 x 4 of 64 x 64), its
    # operands staged beside the rings in dynamic shared memory, no spills.
    ck = _gemm_tma_kn(arch, 128, 3, 8, bn=256)
    assert ck.cubin[:4] == b"\x7fELF"
    assert ck.meta["targets"][arch]["spill_store_bytes"] == 0


def test_gemm_tma_wide_k_runs_on_wgmma_on_sm90a():
    # BK = 128: A [128, 128] and B [128, 128] are both wide (two chunks of K, two of N).
    # A's descriptor steps into its second chunk of K at k = 64: + 128 * 128 bytes
    # (+1024 in the address field: the constant plus 1024 = 4611686293305361408); B's
    # leading byte offset is K * 128 = 16384 (0x4000004004000000).
    ck = _gemm_tma_kn("sm_90a", 128, 3, 8, bn=128, bk=128)
    ptx = ck.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 8
    assert "4611686293305361408" in ptx and "4611686293372403712" in ptx
    assert "mma.sync" not in ptx
    assert ck.meta["targets"]["sm_90a"]["spill_store_bytes"] == 0


def test_gemm_tma_k_major_b_keeps_trans_b_clear():
    # The K-major form (b.T of an [N, K] box) keeps imm-trans-b = 0.
    ptx = _gemm_tma("sm_90a", 128, 128, 4, 4).asm["ptx"]
    wgmmas = [line for line in ptx.splitlines() if "wgmma.mma_async" in line]
    assert wgmmas and all(" ".join(line.split()).endswith("p, 1, 1, 0, 0;") for line in wgmmas)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_gemm_tma_row_major_b_on_blackwell_keeps_mma_sync(arch):
    # tcgen05 is matched for K-major B only: the row-major-B GEMM keeps mma.sync and
    # assembles.
    ck = _gemm_tma_kn(arch, 128, 3, 8)
    ptx = ck.asm["ptx"]
    assert ck.cubin and "wgmma" not in ptx and "tcgen05.mma" not in ptx
    assert "mma.sync.aligned.m16n8k16" in ptx


def test_gemm_tma_row_major_b_wide_box_keeps_mma_sync():
    # A [64, 32] box (64-byte rows) is not the MN-major 128-byte swizzle layout that the
    # descriptor describes: no wgmma (mma.sync instead), and it still assembles.
    ck = _gemm_tma_kn("sm_90a", 64, 2, 4, bn=32)
    ptx = ck.asm["ptx"]
    assert ck.cubin and "wgmma.mma_async" not in ptx and "mma.sync.aligned.m16n8k16" in ptx


# ---------------------------------------------------------------------------
# (d) FP8 accumulator promotion: kl.dot(..., max_num_imprecise_acc=N)
# ---------------------------------------------------------------------------

from dot_kernels import fp8_dot_tile, fp8_gemm_f32, fp8_slot_scores  # noqa: E402


def _fp8_gemm_f32(arch, bound, bm=128, bn=128, warps=8, dt="f8e4m3"):
    sig = {"a_desc": f"tensordesc<{dt},{bm}x128,sw128>",
           "b_desc": f"tensordesc<{dt},{bn}x128,sw128>", "c_ptr": "*f32",
           "M": "i32", "N": "i32", "K": "i32", "stride_cm": "i32"}
    return fp8_gemm_f32.compile(sig, dict(BM=bm, BN=bn, BK=128, STAGES=3,
                                          MAX_IMPRECISE_ACC=bound),
                                num_warps=warps, arch=arch, upto="cubin")


@pytest.mark.parametrize("dt,ptx_type", [("f8e4m3", "e4m3.e4m3"), ("f8e5m2", "e5m2.e5m2")])
@pytest.mark.parametrize("bound", [128, 64, 32])
def test_fp8_promoted_dot_on_wgmma(bound, dt, ptx_type):
    # sm_90a, a [128, 128] block on two warpgroups (one 64-row slab each, 64 accumulator
    # registers per thread): the 128-element K box in 128 / bound chunks, each a fence, its
    # k32 wgmmas from zero, a commit, wait_group 0 and 64 f32 adds; nothing stays in flight
    # across iterations (no wait_group 1); the second register set does not spill.
    ck = _fp8_gemm_f32("sm_90a", bound, dt=dt)
    ptx = ck.asm["ptx"]
    chunks = 128 // bound
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{ptx_type}") == 4
    assert ptx.count("wgmma.fence.sync.aligned;") == chunks
    assert ptx.count("wgmma.commit_group.sync.aligned;") == chunks
    # the chunks' waits, the {pending = 0} wait in the loop and the one after it
    assert ptx.count("wgmma.wait_group.sync.aligned 0;") == chunks + 2
    assert "wgmma.wait_group.sync.aligned 1;" not in ptx
    assert ptx.count("add.rn.f32") == 64 * chunks
    assert ck.meta["targets"]["sm_90a"]["spill_store_bytes"] == 0


def test_fp8_unbounded_dot_keeps_one_wgmma_group_in_flight():
    # The same kernel without the bound: one chain on the accumulator, no adds, the
    # previous iteration's group waited for with wait_group 1.
    ptx = _fp8_gemm_f32("sm_90a", None).asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3") == 4
    assert ptx.count("wgmma.fence.sync.aligned;") == 1
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    assert "add.rn.f32" not in ptx


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_fp8_promoted_dot_assembles_on_blackwell(arch):
    # No FP8 wgmma or tcgen05 here: the operands are widened to bf16 for mma.sync, which
    # accumulates every k16 step in f32, so the bound changes nothing; it assembles.
    ck = _fp8_gemm_f32(arch, 32, bm=64, bn=64, warps=4)
    ptx = ck.asm["ptx"]
    assert ck.cubin and "wgmma" not in ptx and "tcgen05" not in ptx
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx



@pytest.mark.parametrize("bn,warps", [(32, 4), (64, 4), (32, 1)])
def test_fp8_keys_read_in_place_from_the_gather_slot(bn, warps):
    # kl.dot(q, k.to(bf16).T) with k an e4m3 tile of a pipelined gather (MLA's FP8 keys), on
    # mma.sync: the codes read in place from the ring slot by ldmatrix and widened in the B
    # fragments' registers; q (staged) read as 8-byte words in the codes' k order, not by
    # ldmatrix.x4; no staging of the widened tile.
    sig = {"q_ptr": "*bf16", "k_ptr": "*f8e4m3", "scale_ptr": "*f32", "out_ptr": "*f32",
           "n_blocks": "i32"}
    ck = fp8_slot_scores.compile(sig, {"BM": 16, "BN": bn, "D": 128, "SCALED": False},
                                 ["q_ptr", "k_ptr", "out_ptr"], num_warps=warps,
                                 arch="sm_90a", upto="cubin")
    ptx = ck.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8" in ptx
    assert "cvt.rn.f16x2.e4m3x2" in ptx
    assert "ld.shared.v2.b32" in ptx
    assert ck.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("bn,warps", [(32, 4), (64, 4), (32, 1)])
def test_a_factor_a_key_is_read_from_its_slot_as_columns(arch, bn, warps):
    # (q . k.T) * scale[None, :] with the scales gathered beside the keys: the scale slot is
    # read in the slice of the mma.sync accumulator along dim 0 (each thread its columns),
    # so the broadcast over the rows copies registers: no shared buffer of its own (which
    # would come with two barriers an iteration; test/Conversion/TileToNVVM/mma-rows.mlir
    # pins the lowering).
    sig = {"q_ptr": "*bf16", "k_ptr": "*f8e4m3", "scale_ptr": "*f32", "out_ptr": "*f32",
           "n_blocks": "i32"}
    ck = fp8_slot_scores.compile(sig, {"BM": 16, "BN": bn, "D": 128, "SCALED": True},
                                 ["q_ptr", "k_ptr", "out_ptr", "scale_ptr"],
                                 num_warps=warps, arch=arch, upto="cubin")
    assert "mma.sync.aligned.m16n8k16" in ck.asm["ptx"]
    buffers = [b["buffer"] for b in ck.meta["targets"][arch]["shared_plan"]]
    assert not [b for b in buffers if b.startswith("__kiln_broadcast_smem")], buffers


@pytest.mark.parametrize("dt", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("bound", [None, 32, 64])
def test_fp8_dot_interpreter_ignores_the_bound(bound, dt):
    # The interpreter accumulates in f32 throughout: every bound gives the f32 result.
    rng = np.random.default_rng(1)
    m, n, k = 32, 16, 64
    fp8 = getattr(ml_dtypes, dt)
    a = rng.standard_normal((m, k)).astype(fp8)
    b = rng.standard_normal((k, n)).astype(fp8)
    c = np.full((m, n), np.nan, dtype=np.float32)
    interpret(fp8_dot_tile, (1,), a, b, c, M=m, N=n, K=k, MAX_IMPRECISE_ACC=bound)
    np.testing.assert_allclose(c, _reference(a, b), rtol=1e-6, atol=1e-5)


@kiln.jit
def bad_imprecise_acc(a_ptr, b_ptr, c_ptr, CASE: kl.constexpr):
    r = kl.arange(0, 64)
    a = kl.load(a_ptr + r[:, None] * 64 + r[None, :])
    b = kl.load(b_ptr + r[:, None] * 64 + r[None, :])
    if CASE == "bf16":
        c = kl.dot(a.to(kl.bfloat16), b.to(kl.bfloat16), max_num_imprecise_acc=32)  # imprecise-bf16
    elif CASE == "odd":
        c = kl.dot(a, b, max_num_imprecise_acc=48)  # imprecise-odd
    elif CASE == "small":
        c = kl.dot(a, b, max_num_imprecise_acc=16)  # imprecise-small
    elif CASE == "above_k":
        c = kl.dot(a, b, max_num_imprecise_acc=128)  # imprecise-above_k
    elif CASE == "float":
        c = kl.dot(a, b, max_num_imprecise_acc=64.0)  # imprecise-float
    else:
        c = kl.dot(a, b, max_num_imprecise_acc=True)  # imprecise-bool
    kl.store(c_ptr + r[:, None] * 64 + r[None, :], c)


@pytest.mark.parametrize("case,message", [
    ("bf16", r"dot: max_num_imprecise_acc applies to FP8 operands \(float8e4m3, float8e5m2\) "
             r"only, got bf16"),
    ("odd", r"dot: max_num_imprecise_acc must be a power of two >= 32 \(a multiple of the K of "
            r"one FP8 MMA\), got 48"),
    ("small", r"dot: max_num_imprecise_acc must be a power of two >= 32 .*, got 16"),
    ("above_k", r"dot: max_num_imprecise_acc = 128 exceeds K = 64 \(the bound applies within "
                r"one dot\)"),
    ("float", r"dot: max_num_imprecise_acc must be a constexpr int, got 64.0"),
    ("bool", r"dot: max_num_imprecise_acc must be a constexpr int, got True"),
])
def test_max_num_imprecise_acc_errors_at_their_line(case, message):
    sig = {"a_ptr": "*f8e4m3", "b_ptr": "*f8e4m3", "c_ptr": "*f32"}
    with pytest.raises(CompilationError, match=message) as info:
        bad_imprecise_acc.compile(sig, {"CASE": case}, num_warps=4, upto="tile")
    assert f"{HERE}:{source_line(HERE, 'imprecise-' + case)}:" in str(info.value)


def test_max_num_imprecise_acc_reaches_the_tile_dot():
    sig = {"a_ptr": "*f8e5m2", "b_ptr": "*f8e5m2", "c_ptr": "*f32"}
    ck = fp8_dot_tile.compile(sig, dict(M=64, N=32, K=128, MAX_IMPRECISE_ACC=64),
                              num_warps=4, upto="tile")
    assert "{maxNumImpreciseAcc = 64 : i32}" in ck.asm["tile"]


def test_gemm_tma_kernel_promotes_fp8_when_asked():
    # The benchmark's promoted variant (bench/gemm/run.py): gemm_tma_kernel with
    # MAX_IMPRECISE_ACC = 128 on a [128, 128] block of 8 warps, one chunk per K box.
    sig = {"a_desc": "tensordesc<f8e4m3,128x128,sw128>",
           "b_desc": "tensordesc<f8e4m3,128x128,sw128>", "c_desc": "tensordesc<bf16,128x128>",
           "bias_ptr": "*bf16",
           "M": "i32", "N": "i32", "K": "i32"}
    ck = gemm_tma_kernel.compile(sig, dict(BM=128, BN=128, BK=128, GROUP_M=8, STAGES=4,
                                           MAX_IMPRECISE_ACC=128),
                                 num_warps=8, arch="sm_90a", upto="cubin")
    ptx = ck.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3") == 4
    assert ptx.count("add.rn.f32") == 64 and "wgmma.wait_group.sync.aligned 1;" not in ptx
    assert ck.meta["targets"]["sm_90a"]["spill_store_bytes"] == 0


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_gemm_tma_fused_bias_silu_assembles_at_128x256(arch):
    # gemm_tma's fused epilogue (+ bias, SiLU) at its default 128x256 block: wgmma on sm_90a
    # and tcgen05 on sm_100a/sm_103a, no spill, what the bias moves (sm_90a: its row into the
    # accumulator's layout; sm_100a/sm_103a: the accumulator out of it) inside the rings'
    # bytes.
    sig = {"a_desc": "tensordesc<bf16,128x64,sw128>", "b_desc": "tensordesc<bf16,256x64,sw128>",
           "c_desc": "tensordesc<bf16,128x256>", "bias_ptr": "*bf16", "M": "i32", "N": "i32",
           "K": "i32"}
    ck = gemm_tma_kernel.compile(sig, dict(BM=128, BN=256, BK=64, GROUP_M=8, STAGES=3,
                                           BIAS=True, ACTIVATION="silu"),
                                 ["bias_ptr"], num_warps=8, arch=arch)
    target = ck.meta["targets"][arch]
    assert target["spill_store_bytes"] == 0
    assert ("wgmma" if arch == "sm_90a" else "tcgen05") in target["features"]
    assert [d["unit"] for d in target["dots"]] == ["wgmma" if arch == "sm_90a" else "tcgen05"]
    assert ck.meta["shared_bytes"] < 150 * 1024


@pytest.mark.parametrize("arch,reason", [
    ("sm_90a", "M = 16 is not a multiple of 64 rows a warpgroup (1 warpgroups)"),
    ("sm_100a", "M = 16, K = 64, N = 64: tcgen05 here takes M = 128 (Tensor Memory's lanes), "
                "K and N multiples of 64, N <= 256")])
def test_the_metadata_says_why_a_dot_is_off_the_tensor_core_mma(arch, reason):
    # No silent fallback: a dot left on mma.sync is listed with its line and the reason the
    # arch's tensor-core MMA (wgmma, tcgen05) does not take it.
    sig = _tile_sig("bf16")
    ck = dot_tile.compile(sig, {"M": 16, "N": 64, "K": 64, "HAS_ACC": False}, _pointers(sig),
                          num_warps=4, arch=arch, upto="ptx")
    (dot,) = ck.meta["targets"][arch]["dots"]
    assert dot["line"] > 0 and (dot["unit"], dot["reason"]) == ("mma.sync", reason)
