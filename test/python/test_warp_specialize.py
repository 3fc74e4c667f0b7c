"""kl.range(..., warp_specialize=True): the TMA GEMM's K loop filled by a producer warpgroup on
sm_90a (setmaxnreg, named consumer barriers, num_warps * 32 + 128 threads in the metadata and
the launch) and on sm_100a/sm_103a (the tcgen05 dot releasing each slot with its commit;
assembled by ptxas for both), the compile errors at the user's loop, the register pool
check, and the interpreter, which runs the loop as written."""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.compiler.compiler import compiler_available
from kiln.testing import interpret, source_line

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from kernels_dsl.common.gemm import gemm_tma_kernel  # noqa: E402

HERE = os.path.abspath(__file__)
needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


def _gemm(arch, bm=128, bn=256, stages=3, warps=8, dt="bf16", warp_specialize=True,
          upto="cubin"):
    bk = 128 if dt.startswith("f8") else 64
    sig = {"a_desc": f"tensordesc<{dt},{bm}x{bk},sw128>",
           "b_desc": f"tensordesc<{dt},{bn}x{bk},sw128>",
           "c_desc": f"tensordesc<bf16,{bm}x{bn}>",
           "bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    return gemm_tma_kernel.compile(sig, dict(BM=bm, BN=bn, BK=bk, GROUP_M=8, STAGES=stages,
                                             WARP_SPECIALIZE=warp_specialize),
                                   num_warps=warps, arch=arch, upto=upto)


def _setmaxnreg(ptx, action):
    counts = re.findall(rf"setmaxnreg\.{action}\.sync\.aligned\.u32\s+(\d+);", ptx)
    assert len(counts) == 1, counts
    return int(counts[0])


@needs_compiler
@pytest.mark.parametrize("dt,mma", [("bf16", "m64n256k16.f32.bf16.bf16"),
                                    ("f8e4m3", "m64n256k32.f32.e4m3.e4m3")])
def test_gemm_producer_and_consumers_on_sm90a(dt, mma):
    # 8 consumer warps (the layouts of num_warps = 8) and one producer warpgroup: 384
    # threads in the metadata (the launch's block) and in .reqntid; the consumers take 232
    # registers, the producer keeps 40; the ring's slots are read in place by wgmma; the
    # epilogue's barriers are the consumers' named barrier 1 of 256 threads.
    ck = _gemm("sm_90a", dt=dt)
    ptx = ck.asm["ptx"]
    assert ck.meta["threads_per_block"] == 384
    assert ".reqntid 384, 1, 1" in ptx and ".minnctapersm 1" in ptx
    inc, dec = _setmaxnreg(ptx, "inc"), _setmaxnreg(ptx, "dec")
    assert (inc, dec) == (232, 40)
    assert 256 * inc + 128 * dec <= 65536
    assert ptx.count(f"wgmma.mma_async.sync.aligned.{mma}") == 4
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    assert "mma.sync" not in ptx
    assert ptx.count("mbarrier.init.shared.b64") == 9  # 2 rings x 3 FULL, 3 EMPTY
    # the EMPTY barriers expect one arrival per consumer warp: lane 0 after a warp barrier
    assert len(re.findall(r"mbarrier\.init\.shared\.b64 \[%r\d+\], 8;", ptx)) == 3
    assert "mbarrier.arrive.shared.b64" in ptx and "bar.warp.sync" in ptx and "%laneid" in ptx
    assert "elect.sync" in ptx and ptx.count("cp.async.bulk.tensor.2d.shared::cta.global") == 2
    # bar.sync 0 only where every thread initializes the barriers, before the split.
    assert ptx.count("bar.sync \t0;") == 3
    assert ptx.count("bar.sync \t1, 256;") == 2
    target = ck.meta["targets"]["sm_90a"]
    assert {"setmaxnreg", "wgmma", "tma"} <= set(target["features"])
    assert target["spill_store_bytes"] == 0
    # The kernel starts with the registers 384 threads allow: the pool the consumers'
    # setmaxnreg.inc draws from holds what they ask for.
    assert target["registers"] * 384 >= 256 * inc + 128 * dec, target


@needs_compiler
@pytest.mark.parametrize("bm,bn", [(128, 128), (64, 128)])
def test_four_consumer_warps(bm, bn):
    # One consumer warpgroup: 256 threads, 240 registers (the most setmaxnreg.inc gives
    # here) beside the producer's 40. The 64x128 block needs few registers outside the
    # split: without .minnctapersm 1 ptxas started it with 90 a thread, a pool too small for
    # the consumers' request (their setmaxnreg.inc would have waited forever).
    ck = _gemm("sm_90a", bm=bm, bn=bn, stages=4, warps=4)
    ptx = ck.asm["ptx"]
    assert ck.meta["threads_per_block"] == 256
    assert ".minnctapersm 1" in ptx
    inc, dec = _setmaxnreg(ptx, "inc"), _setmaxnreg(ptx, "dec")
    assert (inc, dec) == (240, 40)
    assert "bar.sync \t1, 128;" in ptx
    target = ck.meta["targets"]["sm_90a"]
    assert target["spill_store_bytes"] == 0
    assert (target["registers"] + 7) // 8 * 8 * 256 >= 128 * inc + 128 * dec, target


@needs_compiler
def test_without_warp_specialize_the_kernel_is_as_before():
    ck = _gemm("sm_90a", warp_specialize=False, upto="ptx")
    assert ck.meta["threads_per_block"] == 256
    assert "setmaxnreg" not in ck.asm["ptx"] and "bar.sync \t1," not in ck.asm["ptx"]


def _ptxas(ptx, arch, tmp_path):
    """Assembles ``ptx`` for ``arch`` with the CUDA toolkit's ptxas; returns its -v log."""
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not os.path.exists(ptxas):
        pytest.skip("ptxas is not installed")
    src = tmp_path / f"k.{arch}.ptx"
    src.write_text(ptx)
    done = subprocess.run([ptxas, f"-arch={arch}", "-v", str(src), "-o",
                           str(tmp_path / f"k.{arch}.cubin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stderr


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
@pytest.mark.parametrize("bn,stages,warps", [(256, 3, 8), (128, 4, 4)])
def test_gemm_producer_and_consumers_on_blackwell(arch, bn, stages, warps, tmp_path):
    # The same split on tcgen05: the consumers' warp 0 waits for the FULL slots and its
    # elected lane issues the tcgen05.mma of each K step from the slots into Tensor Memory,
    # then tcgen05.commit to the slot's EMPTY barrier (one arrival: mbarrier.init ..., 1 for
    # all 9 barriers; no per-warp arrivals). After the loop the consumers' named barrier,
    # the wait for the last commit, the tcgen05.ld of the accumulator. The producer issues
    # the TMA copies as on sm_90a. ptxas assembles it for the arch.
    ck = _gemm(arch, bn=bn, stages=stages, warps=warps, upto="ptx")
    ptx = ck.asm["ptx"]
    consumers = warps * 32
    assert ck.meta["threads_per_block"] == consumers + 128
    assert f".reqntid {consumers + 128}, 1, 1" in ptx and ".minnctapersm 1" in ptx
    assert _setmaxnreg(ptx, "dec") == 40
    inc = _setmaxnreg(ptx, "inc")
    assert inc == (232 if warps == 8 else 240) and consumers * inc + 128 * 40 <= 65536
    assert "wgmma" not in ptx and "mma.sync" not in ptx
    assert ptx.count("tcgen05.mma.cta_group::1.kind::f16") == 4  # K = 64: 4 k16 steps
    assert ptx.count("tcgen05.commit.cta_group::1.mbarrier::arrive::one") == 1
    assert ptx.count("mbarrier.init.shared.b64") == 3 * stages
    assert len(re.findall(r"mbarrier\.init\.shared\.b64 \[%r\d+\], 1;", ptx)) == 3 * stages
    assert "mbarrier.arrive.shared.b64" not in ptx and "bar.warp.sync" not in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cta.global") == 2
    assert ptx.count(f"bar.sync \t1, {consumers};") == 5  # alloc, after the loop, the
    # dealloc, the TMA store's two
    assert "tcgen05.ld.sync.aligned.32x32b" in ptx and "tcgen05.dealloc" in ptx
    log = _ptxas(ptx, arch, tmp_path)
    assert "0 bytes spill stores" in log, log


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_blackwell_dot_left_on_mma_sync_keeps_the_warp_releases(arch, tmp_path):
    # A 64-row block has no tcgen05 form (M = 128 only): the dot stays on mma.sync and the
    # consumer warps release the slots as on sm_90a's unaccelerated path, one arrival per
    # warp after reading the slot into registers.
    ck = _gemm(arch, bm=64, bn=128, stages=4, warps=4, upto="ptx")
    ptx = ck.asm["ptx"]
    assert "tcgen05" not in ptx and "mma.sync" in ptx
    assert len(re.findall(r"mbarrier\.init\.shared\.b64 \[%r\d+\], 4;", ptx)) == 4
    assert "mbarrier.arrive.shared.b64" in ptx and "bar.warp.sync" in ptx
    _ptxas(ptx, arch, tmp_path)


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_blackwell_errors_stay_at_the_loop(arch):
    with pytest.raises(kiln.CompilationError) as info:
        _pointer_loop.compile({"x_ptr": "*f32", "n": "i32"}, arch=arch, upto="llvm_dialect")
    message = str(info.value)
    assert "expected a descriptor load (desc.load) in the warp-specialized loop" in message
    assert f'test_warp_specialize.py:{source_line(HERE, "E-pointer")}:' in message


@kiln.jit
def _pointer_loop(x_ptr, n):
    for i in kl.range(0, n, 1, num_stages=2, warp_specialize=True):  # E-pointer
        x = kl.load(x_ptr + i * 128 + kl.arange(0, 128))
        kl.store(x_ptr + i * 128 + kl.arange(0, 128), x + 1.0)


@needs_compiler
def test_a_loop_without_descriptor_loads_is_an_error_at_the_loop():
    with pytest.raises(kiln.CompilationError) as info:
        _pointer_loop.compile({"x_ptr": "*f32", "n": "i32"}, arch="sm_90a",
                              upto="llvm_dialect")
    message = str(info.value)
    assert "expected a descriptor load (desc.load) in the warp-specialized loop" in message
    assert f'test_warp_specialize.py:{source_line(HERE, "E-pointer")}:' in message


@kiln.jit
def _e_no_stages(x_ptr, n):
    for i in kl.range(0, n, warp_specialize=True):  # E-stages
        kl.store(x_ptr + i, 1.0)


@kiln.jit
def _e_not_bool(x_ptr, n):
    for i in kl.range(0, n, num_stages=2, warp_specialize=1):  # E-bool
        kl.store(x_ptr + i, 1.0)


@needs_compiler
@pytest.mark.parametrize("kernel,marker,message", [
    (_e_no_stages, "E-stages", "warp_specialize=True needs num_stages >= 2"),
    (_e_not_bool, "E-bool", "warp_specialize must be a constexpr bool, got 1"),
])
def test_front_end_errors_at_the_line(kernel, marker, message):
    with pytest.raises(CompilationError) as info:
        kernel.compile({"x_ptr": "*f32", "n": "i32"}, upto="tile")
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)


def test_the_register_pool_check(monkeypatch):
    # A cubin that starts the kernel with fewer registers than the consumers ask for
    # (nvJitLink's 154 for the GEMM: 384 x 160 < 256 x 232 + 128 x 40) would hang in
    # setmaxnreg.inc: a compile error instead.
    from kiln.compiler import compiler, targetinfo

    # The lowered kernel's tile.register_split: 256 consumer threads of 232 registers
    # (setmaxnreg.inc), the producers' 40 (.dec).
    split = [256, 232, 40]
    for registers, fits in ((154, False), (168, True)):
        monkeypatch.setattr(targetinfo, "target_info",
                            lambda *a, r=registers, **k: {"registers": r})
        if fits:
            compiler._check_register_pool("k", split, b"", "", "ptxas", "sm_90a", 384)
            continue
        with pytest.raises(RuntimeError, match="setmaxnreg.inc would wait forever"):
            compiler._check_register_pool("k", split, b"", "", "nvJitLink", "sm_90a", 384)


@kiln.jit
def _rows(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    for i in kl.range(0, n, 1, num_stages=2, warp_specialize=True):
        x = kl.load(x_ptr + i * BLOCK + kl.arange(0, BLOCK))
        kl.store(y_ptr + i * BLOCK + kl.arange(0, BLOCK), x * 2.0)


def test_the_interpreter_runs_the_loop_as_written():
    x = np.arange(4 * 32, dtype=np.float32)
    y = np.zeros_like(x)
    interpret(_rows, (1,), x, y, 4, BLOCK=32)
    np.testing.assert_array_equal(y, 2 * x)


def test_the_interpreter_gives_the_gemm_the_same_bits():
    # warp_specialize changes who issues the loads and when a slot is reused, never the
    # math: the interpreter's warp-specialized TMA GEMM (ragged M, N, K: zero-filled boxes,
    # clipped stores) is bit for bit the plain one, and close to the f32 product.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(0)
    m, n, k = 200, 136, 320
    a = rng.standard_normal((m, k)).astype(np.float16)
    b_t = rng.standard_normal((n, k)).astype(np.float16)
    outs = []
    for ws in (False, True):
        c = np.zeros((m, n), ml_dtypes.bfloat16)
        desc = kiln.TensorDescriptor.from_tensor
        interpret(gemm_tma_kernel, (4,), desc(a, [128, 64], swizzle=128),
                  desc(b_t, [128, 64], swizzle=128), desc(c, [128, 128]), c, m, n, k, BM=128,
                  BN=128, BK=64, GROUP_M=8, STAGES=3, WARP_SPECIALIZE=ws)
        outs.append(c.view(np.uint16))
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = a.astype(np.float32) @ b_t.astype(np.float32).T
    np.testing.assert_allclose(outs[1].view(ml_dtypes.bfloat16).astype(np.float32), ref,
                               rtol=2**-7, atol=1e-3 * k**0.5)
