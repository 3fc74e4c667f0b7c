"""kl.trans / kl.permute / x.T (tile.trans): PTX and cubins per arch, the CPU interpreter
against numpy, and the user errors at their line. No GPU and no torch needed
(test/gpu/test_shape_ops.py runs the same kernels on the device)."""

import itertools
import os
import re
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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
from shape_kernels import (dot_trans_b, permute_3d, trans_2d, trans_loop,  # noqa: E402
                           transpose_matrix)

NP = {"f32": np.float32, "i32": np.int32, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
      "f16": np.float16}
POINTERS = ["x_ptr", "y_ptr"]


def line_of(marker):
    """Line number of the source line carrying the comment ``# <marker>``."""
    with open(HERE) as f:
        for i, line in enumerate(f, 1):
            if f"# {marker}" in line and "marker" not in line:
                return i
    raise AssertionError(f"marker {marker} not found")


def _random(rng, dt, shape):
    if dt in ("i32", "i8"):
        return rng.integers(-100, 100, size=shape).astype(NP[dt])
    return rng.standard_normal(shape).astype(NP[dt])


def _shared_bytes(ptx):
    return sum(int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", ptx))


# ---------------------------------------------------------------------------
# (a) Compilation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["f32", "bf16", "i32", "i8"])
@pytest.mark.parametrize("m,n,num_warps", [(16, 64, 4), (64, 32, 8), (128, 128, 4),
                                           (128, 128, 8), (4, 8, 4)])
def test_trans_compiles(m, n, num_warps, dt, arch):
    sig = {"x_ptr": f"*{dt}", "y_ptr": f"*{dt}"}
    ck = trans_2d.compile(sig, {"M": m, "N": n, "HOW": "trans"}, POINTERS, num_warps=num_warps,
                          arch=arch, upto="cubin")
    assert f".target {arch}" in ck.ptx
    assert "__kiln_trans_smem_0" in ck.ptx
    # one buffer of at most 16 KiB of elements (plus the row padding), two barriers per slab
    itemsize = np.dtype(NP[dt]).itemsize
    slabs = max(1, m * n * itemsize // (16 * 1024))
    assert ck.ptx.count("bar.sync") == 2 * slabs
    assert _shared_bytes(ck.ptx) <= min(m * n * itemsize, 16 * 1024) * 17 // 16
    assert ck.cubin[:4] == b"\x7fELF"


def test_trans_ir():
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    for how in ("trans", "T", "permute", "method"):
        ir = trans_2d.compile(sig, {"M": 16, "N": 64, "HOW": how}, POINTERS, num_warps=4,
                              upto="tile").tile_ir
        assert "{order = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>" in ir
    sig = {"x_ptr": "*bf16", "y_ptr": "*bf16"}
    ir = permute_3d.compile(sig, {"A": 2, "B": 4, "C": 8, "D0": 2, "D1": 0, "D2": 1}, POINTERS,
                            num_warps=4, upto="tile").tile_ir
    assert "{order = array<i64: 2, 0, 1>} : tensor<2x4x8xbf16> -> tensor<8x2x4xbf16>" in ir


def test_identity_permutation_is_no_op():
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    ir = permute_3d.compile(sig, {"A": 2, "B": 4, "C": 8, "D0": 0, "D1": 1, "D2": 2}, POINTERS,
                            num_warps=4, upto="tile").tile_ir
    assert "tile.trans" not in ir


def test_moving_unit_dims_needs_no_shared_memory():
    # [1, 64] -> [64, 1] keeps the row-major order: the registers are the result
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    ptx = trans_2d.compile(sig, {"M": 1, "N": 64, "HOW": "T"}, POINTERS, num_warps=4,
                           arch="sm_90a", upto="ptx").ptx
    assert "bar.sync" not in ptx and "__kiln_trans_smem" not in ptx


def _shared_elements(ptx, op):
    """Elements moved by the ``op`` (st/ld) shared-memory instructions of ``ptx``."""
    return sum(int(v or 1) for v in re.findall(rf"{op}\.shared(?:\.v(\d))?\.b32", ptx))


def test_large_tile_moves_in_warp_uniform_slabs():
    # 128x128 f32 over 4 warps: 64 KiB in 4 slabs of 16 KiB. The slab is picked by bits
    # that the warp decides on the stores (one branch per slab around a warp's stores)
    # and a register on the loads (each register loaded once, unpredicated).
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    ptx = trans_2d.compile(sig, {"M": 128, "N": 128, "HOW": "trans"}, POINTERS, num_warps=4,
                           arch="sm_90a", upto="ptx").ptx
    assert ptx.count("bar.sync") == 8
    assert len(re.findall(r"\bbra(?:\.uni)? ", ptx)) == 4
    assert _shared_elements(ptx, "st") == 4 * 128
    assert _shared_elements(ptx, "ld") == 128


@pytest.mark.parametrize("arch", ARCHS)
def test_other_kernels_compile(arch):
    sig = {"x_ptr": "*bf16", "y_ptr": "*bf16", "n_rows": "i32", "n_cols": "i32",
           "stride_x": "i32", "stride_y": "i32"}
    ck = transpose_matrix.compile(sig, {"BM": 64, "BN": 32}, POINTERS, num_warps=4, arch=arch,
                                  upto="cubin")
    assert ck.ptx.count("__kiln_trans_smem_1") >= 1  # data and mask: one buffer each
    ck = trans_loop.compile({"x_ptr": "*f32", "y_ptr": "*f32", "iters": "i32"}, {"N": 64},
                            POINTERS, num_warps=8, arch=arch, upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"
    ck = dot_trans_b.compile({"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*f32"},
                             {"M": 64, "N": 64, "K": 32}, ["a_ptr", "b_ptr", "c_ptr"],
                             num_warps=4, arch=arch, upto="cubin")
    assert "mma.sync" in ck.ptx and "__kiln_trans_smem_0" in ck.ptx


# ---------------------------------------------------------------------------
# (b) Interpreter against numpy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["trans", "T", "permute", "method"])
@pytest.mark.parametrize("dt", ["f32", "i32", "bf16", "i8"])
@pytest.mark.parametrize("m,n", [(16, 64), (64, 32), (128, 128), (1, 8)])
def test_trans_interpreter(how, dt, m, n):
    rng = np.random.default_rng(m * n)
    x = _random(rng, dt, (m, n))
    y = np.zeros((n, m), NP[dt])
    interpret(trans_2d, (1,), x, y, M=m, N=n, HOW=how)
    np.testing.assert_array_equal(y, x.T)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("shape", [(2, 4, 8), (8, 1, 16)])
def test_permute_3d_interpreter(order, shape):
    rng = np.random.default_rng(sum(shape))
    x = _random(rng, "f32", shape)
    y = np.zeros([shape[d] for d in order], np.float32)
    interpret(permute_3d, (1,), x, y, A=shape[0], B=shape[1], C=shape[2], D0=order[0],
              D1=order[1], D2=order[2])
    np.testing.assert_array_equal(y, np.transpose(x, order))


def test_transpose_matrix_interpreter_masked():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 53)).astype(np.float32)
    y = np.full((50, 42), np.nan, np.float32)
    interpret(transpose_matrix, (kiln.cdiv(37, 16), kiln.cdiv(50, 32)), x, y, 37, 50, 53, 42,
              BM=16, BN=32)
    np.testing.assert_array_equal(y[:, :37], x[:, :50].T)
    assert np.isnan(y[:, 37:]).all()


def test_trans_loop_interpreter():
    x = np.arange(32 * 32, dtype=np.int32).reshape(32, 32)
    y = np.zeros_like(x)
    interpret(trans_loop, (1,), x, y, 3, N=32)
    np.testing.assert_array_equal(y, x.T + 3)


def test_dot_trans_b_interpreter():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((16, 32)).astype(ml_dtypes.bfloat16)
    c = np.zeros((64, 16), np.float32)
    interpret(dot_trans_b, (1,), a, b, c, M=64, N=16, K=32)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-5,
                               atol=1e-5)


# ---------------------------------------------------------------------------
# (c) User errors
# ---------------------------------------------------------------------------


@kiln.jit
def bad_trans(x_ptr, y_ptr, n, CASE: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, 8)[:, None] * 16 + kl.arange(0, 16)[None, :])
    x3 = x[:, :, None]
    y = x
    if CASE == "rank3":
        y = kl.trans(x3)  # err-rank3
    elif CASE == "T_rank3":
        y = x3.T  # err-T_rank3
    elif CASE == "not_perm":
        y = kl.permute(x, (0, 0))  # err-not_perm
    elif CASE == "length":
        y = kl.permute(x, 1, 0, 2)  # err-length
    elif CASE == "runtime":
        y = kl.trans(x, n, 0)  # err-runtime
    elif CASE == "float":
        y = kl.permute(x, (1.0, 0))  # err-float
    elif CASE == "scalar":
        y = kl.trans(n)  # err-scalar
    elif CASE == "method":
        y = x.permute(2, 0)  # err-method
    kl.store(y_ptr + kl.arange(0, 8)[:, None] * 16 + kl.arange(0, 16)[None, :], y)


@pytest.mark.parametrize("case,message", [
    ("rank3", r"trans without dims transposes a 2-D tile, got rank 3 \(pass the new order of "
              r"the dimensions, e.g. kl.trans\(x, 2, 1, 0\)\)"),
    ("T_rank3", r"x.T transposes a 2-D tile, got rank 3 \(use kl.permute\(x, dims\)"),
    ("not_perm", r"permute: dims \(0, 0\) are not a permutation of \(0, 1\)"),
    ("length", r"permute: a tile of rank 2 needs 2 dims, got 3 \(1, 0, 2\)"),
    ("runtime", "trans: dims must be constexpr ints, got a runtime value"),
    ("float", "permute: dims must be ints, got 1.0"),
    ("scalar", "trans needs a tile, got a scalar i32"),
    ("method", r"permute: dims \(2, 0\) are not a permutation of \(0, 1\)"),
])
def test_trans_errors_at_their_line(case, message):
    sig = {"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"}
    with pytest.raises(CompilationError, match=message) as info:
        bad_trans.compile(sig, {"CASE": case}, num_warps=4, upto="tile")
    assert f"{HERE}:{line_of('err-' + case)}:" in str(info.value)


def test_errors_in_the_interpreter_too():
    x = np.zeros((8, 16), np.float32)
    with pytest.raises(CompilationError, match="are not a permutation"):
        interpret(bad_trans, (1,), x, x.copy(), 0, CASE="not_perm")
