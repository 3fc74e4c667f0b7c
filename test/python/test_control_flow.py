"""Reductions (kl.sum/max/min/argmax/argmin), runtime `for` loops with carried
tiles and scalars, runtime `if` merging values, kl.static_range: PTX per arch,
results in the CPU interpreter against numpy, and errors at the right line.
No GPU and no torch needed (test/gpu/test_control_flow.py runs the same
kernels on the device)."""

import os
import sys

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.testing import interpret, source_line

_C = pytest.importorskip("kiln._C")

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
HERE = os.path.abspath(__file__)


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


# The kernels live beside the GPU tests so that both tiers run the same code.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
from control_flow_kernels import (  # noqa: E402
    branch_merge,
    loop_accumulate,
    loop_rowmax,
    reduce_1d,
    reduce_2d,
    static_unroll,
)

_SPECS = {
    "reduce_1d": (reduce_1d, {"x_ptr": "*f32", "f_ptr": "*f32", "i_ptr": "*i32", "n": "i32"},
                  {"BLOCK": 1024}, 4),
    "reduce_2d_axis1": (reduce_2d, {"x_ptr": "*f32", "sum_ptr": "*f32", "max_ptr": "*f32",
                                    "min_ptr": "*f32", "amax_ptr": "*i32", "amin_ptr": "*i32",
                                    "total_ptr": "*f32", "M": "i32", "N": "i32",
                                    "stride": "i32"},
                        {"BM": 32, "BN": 64, "AXIS": 1}, 4),
    "reduce_2d_axis0": (reduce_2d, {"x_ptr": "*f32", "sum_ptr": "*f32", "max_ptr": "*f32",
                                    "min_ptr": "*f32", "amax_ptr": "*i32", "amin_ptr": "*i32",
                                    "total_ptr": "*f32", "M": "i32", "N": "i32",
                                    "stride": "i32"},
                        {"BM": 64, "BN": 16, "AXIS": 0}, 8),
    "loop_accumulate": (loop_accumulate, {"x_ptr": "*f32", "acc_ptr": "*f32", "s_ptr": "*f32",
                                          "cnt_ptr": "*i32", "lo": "i32", "hi": "i32",
                                          "step": "i32", "stride": "i32"},
                        {"BLOCK": 256}, 2),
    "loop_rowmax": (loop_rowmax, {"x_ptr": "*f32", "out_ptr": "*f32", "n_rows": "i32",
                                  "stride": "i32"}, {"BLOCK": 128}, 1),
    "branch_merge": (branch_merge, {"x_ptr": "*f32", "out_ptr": "*f32", "m_ptr": "*f32",
                                    "flag": "i32"}, {"BLOCK": 256}, 2),
    "static_unroll": (static_unroll, {"x_ptr": "*f32", "out_ptr": "*f32"},
                      {"BLOCK": 128, "N": 4}, 1),
}


def _compile(name, upto="ptx", arch="sm_90a"):
    kernel, sig, constexprs, warps = _SPECS[name]
    pointers = [k for k, v in sig.items() if v.startswith("*")]
    return kernel.compile(sig, constexprs, pointers, num_warps=warps, arch=arch, upto=upto)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["reduce_1d", "reduce_2d_axis1", "reduce_2d_axis0"])
def test_reductions_compile_to_ptx(name, arch):
    ptx = _compile(name, arch=arch).ptx
    assert f".target {arch}" in ptx
    assert "shfl.sync.bfly.b32" in ptx
    assert "bar.sync \t0;" in ptx
    assert "st.shared" in ptx and "ld.shared" in ptx
    assert "__kiln_reduce_smem_" in ptx


def test_reduction_ir_per_axis():
    ir = _compile("reduce_2d_axis1", upto="tile").tile_ir
    # sum/max/min along axis 1, argmax/argmin (a max/min, then a min of indices),
    # and the total (one reduction of the tile reshaped to 1-D)
    assert ir.count("tile.reduce") - ir.count("tile.reduce.return") == 3 + 2 * 2 + 1
    assert "-> tensor<2048xf32>" in ir and "tensor<2048xf32> -> f32" in ir
    assert "{axis = 1 : i32} : tensor<32x64xf32> -> tensor<32xf32>" in ir
    assert "arith.maxnumf" in ir and "arith.minnumf" in ir and "arith.minsi" in ir
    ir0 = _compile("reduce_2d_axis0", upto="tile").tile_ir
    assert "{axis = 0 : i32} : tensor<64x16xf32> -> tensor<16xf32>" in ir0


@pytest.mark.parametrize("arch", ARCHS)
def test_loops_compile_to_ptx(arch):
    for name in ("loop_accumulate", "loop_rowmax"):
        ck = _compile(name, arch=arch)
        assert ".target " + arch in ck.ptx
        assert "bra" in ck.ptx  # the back edge
    acc_ir = _compile("loop_accumulate", upto="tile").tile_ir
    # acc (a tile: 0.0 became a 256 x f32 zero tile), total (f32), count (i32)
    assert "iter_args(" in acc_ir
    assert "-> (tensor<256xf32>, i32, f32)" in acc_ir
    rowmax_ir = _compile("loop_rowmax", upto="tile").tile_ir
    assert "scf.for" in rowmax_ir and "scf.if" in rowmax_ir
    assert "shfl.sync.bfly.b32" in _compile("loop_accumulate", arch=arch).ptx


@pytest.mark.parametrize("arch", ARCHS)
def test_branch_and_static_range_compile_to_ptx(arch):
    ck = _compile("branch_merge", arch=arch)
    assert ".target " + arch in ck.ptx and "shfl.sync.bfly.b32" in ck.ptx
    ir = _compile("branch_merge", upto="tile").tile_ir
    # y (tile), m (scalar f32: 0.0 on the else path), scale (3.0 vs 1.0)
    assert "scf.if" in ir and "-> (f32, f32, tensor<256xf32>)" in ir
    static = _compile("static_unroll", arch=arch)
    assert static.ptx.count("ld.global.v4.b32") == 4  # 4 unrolled loads
    sir = _compile("static_unroll", upto="tile").tile_ir
    assert "scf.for" not in sir and sir.count("tile.load") == 4


# ---------------------------------------------------------------------------
# (b) The interpreter against numpy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5, 100, 1000, 1024])
def test_reduce_1d_matches_numpy(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    f = np.zeros(3, dtype=np.float32)
    i = np.zeros(2, dtype=np.int32)
    interpret(reduce_1d, (1,), x, f, i, n, BLOCK=1024)
    np.testing.assert_allclose(f[0], x.sum(dtype=np.float64), rtol=1e-5, atol=1e-4)
    assert f[1] == x.max() and f[2] == x.min()
    assert i[0] == np.argmax(x) and i[1] == np.argmin(x)


def test_argmax_ties_go_to_the_lowest_index():
    x = np.array([1, 5, 3, 5, 5, 0, 5, -2], dtype=np.float32)
    f = np.zeros(3, dtype=np.float32)
    i = np.zeros(2, dtype=np.int32)
    interpret(reduce_1d, (1,), x, f, i, len(x), BLOCK=16)
    assert tuple(i) == (1, 7)
    # many ties everywhere: small integers
    rng = np.random.default_rng(7)
    x = rng.integers(0, 3, size=300).astype(np.float32)
    interpret(reduce_1d, (1,), x, f, i, len(x), BLOCK=512)
    assert i[0] == np.argmax(x) and i[1] == np.argmin(x)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("m,n", [(32, 64), (20, 50), (1, 64), (32, 1), (7, 3)])
def test_reduce_2d_matches_numpy(axis, m, n):
    rng = np.random.default_rng(m * 100 + n)
    stride = n + 3
    x = np.full((m, stride), 1e30, dtype=np.float32)  # padding that must not leak
    x[:, :n] = rng.integers(-4, 5, size=(m, n)).astype(np.float32)  # exact sums, ties
    valid = x[:, :n]
    k = n if axis == 1 else m
    outs = [np.zeros(64, dtype=np.float32) for _ in range(3)] + \
        [np.zeros(64, dtype=np.int32) for _ in range(2)]
    total = np.zeros(1, dtype=np.float32)
    interpret(reduce_2d, (1,), x.reshape(-1), *outs, total, m, n, stride, BM=32, BN=64,
              AXIS=axis)
    r = m if axis == 1 else n
    np.testing.assert_array_equal(outs[0][:r], valid.sum(axis=axis))
    np.testing.assert_array_equal(outs[1][:r], valid.max(axis=axis))
    np.testing.assert_array_equal(outs[2][:r], valid.min(axis=axis))
    np.testing.assert_array_equal(outs[3][:r], valid.argmax(axis=axis))
    np.testing.assert_array_equal(outs[4][:r], valid.argmin(axis=axis))
    assert total[0] == valid.sum() and k >= 1


@pytest.mark.parametrize("lo,hi,step", [(0, 0, 1), (3, 3, 1), (5, 2, 1), (0, 1, 1),
                                        (0, 7, 1), (1, 8, 3), (2, 9, 2)])
def test_runtime_loop_matches_numpy(lo, hi, step):
    rng = np.random.default_rng(hi * 10 + lo)
    rows, block = 10, 256
    x = rng.standard_normal((rows, block)).astype(np.float32)
    acc = np.full(block, np.nan, dtype=np.float32)
    s = np.full(1, np.nan, dtype=np.float32)
    cnt = np.full(1, -1, dtype=np.int32)
    interpret(loop_accumulate, (1,), x.reshape(-1), acc, s, cnt, lo, hi, step, block,
              BLOCK=block)
    idx = list(range(lo, hi, step))
    ref = x[idx].sum(axis=0) if idx else np.zeros(block, dtype=np.float32)
    np.testing.assert_allclose(acc, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s[0], float(x[idx].sum()) if idx else 0.0, rtol=1e-4,
                               atol=1e-3)
    assert cnt[0] == len(idx)


@pytest.mark.parametrize("n_rows", [0, 1, 6])
def test_loop_with_nested_if_matches_numpy(n_rows):
    rng = np.random.default_rng(n_rows)
    x = rng.standard_normal((max(n_rows, 1), 128)).astype(np.float32)
    out = np.zeros(256, dtype=np.float32)
    interpret(loop_rowmax, (1,), x.reshape(-1), out, n_rows, 128, BLOCK=128)
    v = x[:n_rows]
    np.testing.assert_array_equal(out[:128], v.max(axis=0) if n_rows else
                                  np.full(128, -np.inf, dtype=np.float32))
    w = np.where(np.arange(n_rows) % 2 == 0, 2.0, 1.0).astype(np.float32)
    np.testing.assert_allclose(out[128:], (v * w[:, None]).sum(axis=0) if n_rows else 0.0,
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("flag", [1, 0, -3])
def test_runtime_if_merges_values(flag):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(256).astype(np.float32)
    out = np.zeros(256, dtype=np.float32)
    m = np.full(1, np.nan, dtype=np.float32)
    interpret(branch_merge, (1,), x, out, m, flag, BLOCK=256)
    if flag > 0:
        np.testing.assert_array_equal(out, x * 2 * 3)
        assert m[0] == x.max()
    else:
        np.testing.assert_array_equal(out, x - 1)
        assert m[0] == 0.0


@pytest.mark.parametrize("n", [1, 3, 4])
def test_static_range_unrolls(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 128)).astype(np.float32)
    out = np.zeros(128, dtype=np.float32)
    interpret(static_unroll, (1,), x.reshape(-1), out, BLOCK=128, N=n)
    ref = sum((k + 1) * x[k] for k in range(n)) + 100 * sum(k for k in range(n) if k % 2)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-5)


# ---------------------------------------------------------------------------
# (c) Errors at the right line
# ---------------------------------------------------------------------------


@kiln.jit
def _err_return_in_loop(x_ptr, n):
    for i in range(n):
        kl.store(x_ptr + i, 1.0)
        return  # ERR-return-loop


@kiln.jit
def _err_return_in_static_loop(x_ptr):
    for i in kl.static_range(4):
        if i == 2:
            return  # ERR-return-static
        kl.store(x_ptr + i, 1.0)


@kiln.jit
def _err_return_in_if(x_ptr, n):
    if n > 0:
        kl.store(x_ptr, 1.0)
        return  # ERR-return-if
    kl.store(x_ptr, 2.0)


@kiln.jit
def _err_loop_over_tuple(x_ptr):
    for v in (1, 2, 3):  # ERR-iter-tuple
        kl.store(x_ptr, v)


@kiln.jit
def _err_loop_over_arange(x_ptr):
    for v in kl.arange(0, 4):  # ERR-iter-arange
        kl.store(x_ptr, v)


@kiln.jit
def _err_if_on_tile(x_ptr, n):
    v = kl.load(x_ptr + kl.arange(0, 16))
    if v > 0:  # ERR-if-tile
        n = n + 1
    kl.store(x_ptr, n)


@kiln.jit
def _err_loop_type_change(x_ptr, n):
    acc = kl.zeros((16,), kl.float32)
    for i in range(n):
        acc = kl.arange(0, 16)  # ERR-loop-type
    kl.store(x_ptr + kl.arange(0, 16), acc)


@kiln.jit
def _err_if_type_change(x_ptr, n):
    if n > 0:
        y = kl.zeros((16,), kl.float32)
    else:
        y = kl.arange(0, 16)  # ERR-if-type
    kl.store(x_ptr + kl.arange(0, 16), y)


@kiln.jit
def _err_static_range_runtime(x_ptr, n):
    for i in kl.static_range(n):  # ERR-static-bounds
        kl.store(x_ptr + i, 1.0)


@kiln.jit
def _err_break(x_ptr, n):
    for i in range(n):
        break  # ERR-break


@pytest.mark.parametrize("kernel,marker,message", [
    (_err_return_in_loop, "ERR-return-loop", "`return` inside a loop"),
    (_err_return_in_static_loop, "ERR-return-static", "`return` inside a loop"),
    (_err_return_in_if, "ERR-return-if", "`return` inside a runtime `if`"),
    (_err_loop_over_tuple, "ERR-iter-tuple", "range(...) or kl.static_range(...)"),
    (_err_loop_over_arange, "ERR-iter-arange", "range(...) or kl.static_range(...)"),
    (_err_if_on_tile, "ERR-if-tile", "must be a scalar"),
    (_err_loop_type_change, "ERR-loop-type", "'acc' changes type"),
    (_err_if_type_change, "ERR-if-type", "'y' changes type"),
    (_err_static_range_runtime, "ERR-static-bounds", "constexpr bounds"),
    (_err_break, "ERR-break", "Break"),
])
def test_control_flow_errors_point_at_the_source(kernel, marker, message):
    signature = {"x_ptr": "*f32"}
    if kernel not in (_err_return_in_static_loop, _err_loop_over_tuple, _err_loop_over_arange):
        signature["n"] = "i32"
    with pytest.raises(CompilationError) as info:
        kernel.compile(signature, upto="tile")
    e = info.value
    assert e.filename == HERE
    assert e.lineno == source_line(HERE, marker), str(e)
    assert message in e.message, str(e)
    assert f"# {marker}" in str(e)


@kiln.jit
def _if_constants_promote(x_ptr, n):
    if n > 0:
        v = 1
    else:
        v = 2.5
    kl.store(x_ptr, v)


@pytest.mark.parametrize("n,expect", [(1, 1.0), (-1, 2.5)])
def test_if_merges_different_constants_in_their_promoted_type(n, expect):
    """An int in one branch and a float in the other merge as f32, not truncated."""
    ir = _if_constants_promote.compile({"x_ptr": "*f32", "n": "i32"}, upto="tile").tile_ir
    assert "scf.if" in ir and "-> (f32)" in ir
    x = np.zeros(1, np.float32)
    interpret(_if_constants_promote, (1,), x, n)
    assert x[0] == expect
