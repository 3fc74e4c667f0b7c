"""kl.cumsum / kl.cumprod / kl.associative_scan (tile.scan): PTX and cubins per arch, the
CPU interpreter against numpy, and the user errors at their line. No GPU and no torch
needed (test/gpu/test_scan.py runs the same kernels on the device)."""

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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
from scan_kernels import cumsum_rows, scan_1d, scan_2d  # noqa: E402

NP = {"f32": np.float32, "i32": np.int32, "bf16": ml_dtypes.bfloat16, "f16": np.float16,
      "i8": np.int8}


def out_type(dt, op):
    """The result dtype: sums of narrow floats are f32, of narrow ints i32 (as kl.sum)."""
    if op == "sum":
        return {"bf16": "f32", "f16": "f32", "i8": "i32"}.get(dt, dt)
    return dt


# ---------------------------------------------------------------------------
# (a) Compilation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "fill"])
def test_scan_1d_compiles_to_shfl_up(op, arch):
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    ck = scan_1d.compile(sig, {"N": 1024, "OP": op}, list(sig), num_warps=4, arch=arch,
                         upto="cubin")
    assert f".target {arch}" in ck.ptx
    # 1024 f32 over 4 warps, 4 per run: two chunks, 5 Kogge-Stone steps + 1 exclusive
    # shfl.up + 1 shfl.idx (the warp total) per chunk, warp totals through shared memory
    assert ck.ptx.count("shfl.sync.up.b32") == 2 * 6
    assert ck.ptx.count("shfl.sync.idx.b32") == 2
    assert "shfl.sync.bfly" not in ck.ptx
    assert ck.ptx.count("bar.sync") == 2
    assert "__kiln_scan_smem" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n,axis", [(64, 64, 0), (64, 64, 1), (2, 1024, 1), (1024, 2, 0),
                                      (4, 8, 0)])
def test_scan_2d_compiles(m, n, axis, arch):
    sig = {"x_ptr": "*bf16", "y_ptr": "*f32"}
    ck = scan_2d.compile(sig, {"M": m, "N": n, "AXIS": axis, "OP": "sum"}, list(sig),
                         num_warps=8, arch=arch, upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"


def test_scan_ir():
    sig = {"x_ptr": "*bf16", "y_ptr": "*f32"}
    ir = scan_2d.compile(sig, {"M": 16, "N": 32, "AXIS": 0, "OP": "sum"}, list(sig),
                         num_warps=4, upto="tile").tile_ir
    # bf16 sums accumulate in f32
    assert "tile.scan %" in ir and "{axis = 0 : i32} : tensor<16x32xf32>" in ir
    assert "tile.scan.return" in ir and "arith.addf" in ir
    ir = scan_1d.compile({"x_ptr": "*i32", "y_ptr": "*i32"}, {"N": 64, "OP": "fill"},
                         num_warps=4, upto="tile").tile_ir
    # the combine function is inlined in the region
    assert "arith.cmpi ne" in ir and "arith.select" in ir


def test_single_warp_axis_needs_no_shared_memory():
    # [32, 32] f32 over 1 warp, 4 per run: a row is 8 lanes (3 steps), no barrier
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    ptx = scan_2d.compile(sig, {"M": 32, "N": 32, "AXIS": 1, "OP": "sum"}, list(sig),
                          num_warps=1, arch="sm_90a", upto="ptx").ptx
    assert "bar.sync" not in ptx and "__kiln_scan_smem" not in ptx
    assert ptx.count("shfl.sync.up.b32") == 8 * 4  # 8 row groups a thread, 3 + 1 each


def test_max_scan_inlines_the_combine_fn():
    sig = {"x_ptr": "*i32", "y_ptr": "*i32"}
    ir = scan_1d.compile(sig, {"N": 64, "OP": "max"}, num_warps=1, upto="tile").tile_ir
    assert "arith.maxsi" in ir and "tile.scan.return" in ir


# ---------------------------------------------------------------------------
# (b) Interpreter against numpy
# ---------------------------------------------------------------------------


def _inputs(rng, dt, shape, op):
    if op == "prod":
        # exact products: signs and powers of two (any grouping gives the same result)
        x = rng.choice([1.0, -1.0, 2.0, 0.5], size=shape, p=[0.4, 0.4, 0.1, 0.1])
        return x.astype(NP[dt])
    if op == "fill":
        x = rng.integers(-3, 4, size=shape) * (rng.random(shape) < 0.3)
        return x.astype(NP[dt])
    if dt in ("i32", "i8"):
        return rng.integers(-100, 100, size=shape).astype(NP[dt])
    return rng.standard_normal(shape).astype(NP[dt])


def _reference(x, axis, op, dt):
    res = NP[out_type(dt, op)]
    if op == "sum":
        return np.add.accumulate(x.astype(res), axis=axis, dtype=res)
    if op == "prod":
        return np.multiply.accumulate(x, axis=axis, dtype=x.dtype)
    if op == "max":
        return np.maximum.accumulate(x, axis=axis)
    out = np.moveaxis(x.copy(), axis, 0)
    for i in range(1, out.shape[0]):
        out[i] = np.where(out[i] != 0, out[i], out[i - 1])
    return np.moveaxis(out, 0, axis)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "fill"])
@pytest.mark.parametrize("dt", ["f32", "i32", "bf16"])
@pytest.mark.parametrize("n", [32, 256, 4096])
def test_scan_1d_interpreter(op, dt, n):
    rng = np.random.default_rng(n)
    x = _inputs(rng, dt, (n,), op)
    y = np.zeros(n, NP[out_type(dt, op)])
    interpret(scan_1d, (1,), x, y, N=n, OP=op)
    np.testing.assert_array_equal(y, _reference(x, 0, op, dt))


@pytest.mark.parametrize("op", ["sum", "prod", "max", "fill"])
@pytest.mark.parametrize("dt", ["f32", "i32", "bf16", "i8"])
@pytest.mark.parametrize("m,n", [(16, 32), (64, 8)])
@pytest.mark.parametrize("axis", [0, 1])
def test_scan_2d_interpreter(op, dt, m, n, axis):
    rng = np.random.default_rng(m * n + axis)
    x = _inputs(rng, dt, (m, n), op)
    y = np.zeros((m, n), NP[out_type(dt, op)])
    interpret(scan_2d, (1,), x, y, M=m, N=n, AXIS=axis, OP=op)
    np.testing.assert_array_equal(y, _reference(x, axis, op, dt))


def test_scan_sum_is_in_result_dtype():
    # int8 sums promote to int32 (no wrap at 127); int32 sums wrap like the GPU's add
    x = np.full(64, 100, np.int8)
    y = np.zeros(64, np.int32)
    interpret(scan_1d, (1,), x, y, N=64, OP="sum")
    assert y[-1] == 6400
    x = np.full(64, 2**30, np.int32)
    y = np.zeros(64, np.int32)
    interpret(scan_1d, (1,), x, y, N=64, OP="sum")
    np.testing.assert_array_equal(y, (np.arange(1, 65, dtype=np.int64) * 2**30)
                                  .astype(np.uint32).view(np.int32))


def test_cumsum_rows_interpreter_masked():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 56)).astype(np.float32)
    y = np.full((37, 56), np.nan, np.float32)
    interpret(cumsum_rows, (kiln.cdiv(37, 16),), x, y, 37, 50, 56, BM=16, BN=64)
    np.testing.assert_array_equal(y[:, :50], np.cumsum(x[:, :50], axis=1, dtype=np.float32))
    assert np.isnan(y[:, 50:]).all()


# ---------------------------------------------------------------------------
# (c) User errors
# ---------------------------------------------------------------------------


@kiln.jit
def add_combine(a, b):
    return a + b


@kiln.jit
def widening_combine(a, b):
    return a.to(kl.float32) + b


@kiln.jit
def tile_combine(a, b):
    return kl.zeros((4,), kl.float32)


@kiln.jit
def bad_body_combine(a, b):
    return a & b  # err-body


def not_jit(a, b):
    return a + b


@kiln.jit
def bad_scan(x_ptr, y_ptr, n, CASE: kl.constexpr):
    offs = kl.arange(0, 64)
    x = kl.load(x_ptr + offs)
    y = x
    if CASE == "axis":
        y = kl.cumsum(x, axis=1)  # err-axis
    elif CASE == "runtime_axis":
        y = kl.cumprod(x, axis=n)  # err-runtime_axis
    elif CASE == "scalar":
        kl.store(y_ptr, kl.cumsum(n))  # err-scalar
    elif CASE == "pointers":
        kl.store(y_ptr + offs, kl.cumsum(x_ptr + offs))  # err-pointers
    elif CASE == "not_jit":
        y = kl.associative_scan(x, 0, not_jit)  # err-not_jit
    elif CASE == "dtype":
        y = kl.associative_scan(x.to(kl.bfloat16), 0, widening_combine)  # err-dtype
    elif CASE == "tile":
        y = kl.associative_scan(x, 0, tile_combine)  # err-tile
    elif CASE == "body":
        y = kl.associative_scan(x, 0, bad_body_combine)  # err-call
    else:
        y = kl.associative_scan(x, 0, add_combine, 1)  # err-arity
    kl.store(y_ptr + offs, y)


@pytest.mark.parametrize("case,message", [
    ("axis", "cumsum: axis 1 is out of range for a tile of rank 1"),
    ("runtime_axis", "cumprod: the axis must be a constexpr"),
    ("scalar", "cumsum needs a tile, got a scalar i32"),
    ("pointers", "cumsum of pointers is not supported"),
    ("not_jit", "associative_scan: combine_fn must be a @kiln.jit function, got function"),
    ("dtype", r"associative_scan: combine_fn must return one bf16 scalar, got f32 "
              r"\(cast it with .to\(bf16\)\)"),
    ("tile", r"associative_scan: combine_fn must return one f32 scalar, got a tile"),
    ("arity", "associative_scan: .*argument"),
])
def test_scan_errors_at_their_line(case, message):
    sig = {"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"}
    with pytest.raises(CompilationError, match=message) as info:
        bad_scan.compile(sig, {"CASE": case}, num_warps=4, upto="tile")
    assert f"{HERE}:{source_line(HERE, 'err-' + case)}:" in str(info.value)


def test_error_in_combine_fn_points_into_it():
    sig = {"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"}
    with pytest.raises(CompilationError) as info:
        bad_scan.compile(sig, {"CASE": "body"}, num_warps=4, upto="tile")
    text = str(info.value)
    assert f"{HERE}:{source_line(HERE, 'err-body')}:" in text
    assert f"{HERE}:{source_line(HERE, 'err-call')}:" in text  # "called from here"


def test_errors_in_the_interpreter_too():
    x = np.zeros(64, np.float32)
    with pytest.raises(CompilationError, match="cumsum: axis 1 is out of range"):
        interpret(bad_scan, (1,), x, x.copy(), 0, CASE="axis")
