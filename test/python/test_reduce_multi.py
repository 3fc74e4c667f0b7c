"""kl.reduce (tile.reduce of N tiles with a user combine function): PTX per arch (one
shared-memory round trip for N sums), the CPU interpreter against numpy, and the user
errors at their line. No GPU and no torch needed (test/gpu/test_reduce_multi.py runs the
same kernels on the device)."""

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
from reduce_multi_kernels import (  # noqa: E402
    max_argmax_2d,
    max_rows_single,
    sum_count_rows,
    sum_pair_1d,
    sum_pair_2d,
    triple_all,
    two_sums_1d,
)

NP = {"f32": np.float32, "i32": np.int32, "bf16": ml_dtypes.bfloat16}


# ---------------------------------------------------------------------------
# (a) Compilation
# ---------------------------------------------------------------------------

SIG_1D = {"x_ptr": "*f32", "w_ptr": "*f32", "out_ptr": "*f32"}


@pytest.mark.parametrize("arch", ARCHS)
def test_sum_pair_is_one_shared_memory_round_trip(arch):
    # 4096 f32 over 16 warps: 5 butterfly rounds of 2 shuffles, then ONE buffer for both
    # partial arrays between ONE pair of barriers
    ck = sum_pair_1d.compile(SIG_1D, {"N": 4096}, list(SIG_1D), num_warps=16, arch=arch,
                             upto="cubin")
    assert f".target {arch}" in ck.ptx
    assert ck.ptx.count("shfl.sync.bfly.b32") == 10
    assert ck.ptx.count("bar.sync") == 2
    assert ck.ptx.count(".shared .align 16 .b8 __kiln_reduce_smem") == 1
    assert ck.ptx.count("st.global.b32") == 2
    assert ck.cubin[:4] == b"\x7fELF"
    # two kl.sum pay two round trips
    base = two_sums_1d.compile(SIG_1D, {"N": 4096}, list(SIG_1D), num_warps=16, arch=arch,
                               upto="ptx").ptx
    assert base.count("shfl.sync.bfly.b32") == 10
    assert base.count("bar.sync") == 4


def test_reduce_ir_has_one_op_with_two_results():
    ir = sum_pair_1d.compile(SIG_1D, {"N": 256}, list(SIG_1D), num_warps=4,
                             upto="tile").tile_ir
    assert ir.count("tile.reduce %") == 1
    assert ":2 = tile.reduce" in ir
    assert "-> f32, f32" in ir
    assert "tile.reduce.return %" in ir and ": f32, f32" in ir


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("num_warps", [1, 16])
@pytest.mark.parametrize("m,n,axis", [(64, 64, 0), (64, 64, 1), (2, 1024, 1), (1024, 2, 0),
                                      (4, 8, 0), (1, 512, 0)])
def test_2d_pairs_compile(m, n, axis, num_warps, arch):
    # at most one pair of barriers for both results, whatever the shape and warps
    sig = {"x_ptr": "*f32", "w_ptr": "*f32", "s_ptr": "*f32", "t_ptr": "*f32"}
    ck = sum_pair_2d.compile(sig, {"M": m, "N": n, "AXIS": axis}, list(sig),
                             num_warps=num_warps, arch=arch, upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"
    assert ck.ptx.count("bar.sync") <= 2
    sig = {"x_ptr": "*bf16", "v_ptr": "*bf16", "i_ptr": "*i32"}
    ck = max_argmax_2d.compile(sig, {"M": m, "N": n, "AXIS": axis}, list(sig),
                               num_warps=num_warps, arch=arch, upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"
    assert ck.ptx.count("bar.sync") <= 2


def test_mixed_pair_shuffles_both_values():
    # [32, 32] over 1 warp, 4 per run: a thread's 32 registers form 8 row groups; a row
    # spans 8 lanes (3 rounds), each round shuffles the f32 and the i32 partial; one
    # round trip puts both results in their layout
    sig = {"x_ptr": "*f32", "s_ptr": "*f32", "c_ptr": "*i32"}
    ck = sum_count_rows.compile(sig, {"M": 32, "N": 32}, list(sig), num_warps=1,
                                arch="sm_90a", upto="ptx")
    assert ck.ptx.count("shfl.sync.bfly.b32") == 8 * 3 * 2
    assert ck.ptx.count("bar.sync") == 2
    ir = sum_count_rows.compile(sig, {"M": 32, "N": 32}, list(sig), num_warps=1,
                                upto="tile").tile_ir
    assert "tensor<32x32xf32>, tensor<32x32xi32> -> tensor<32xf32>, tensor<32xi32>" in ir


@kiln.jit
def add_pair_fn(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@kiln.jit
def scaled_rows(x_ptr, w_ptr, y_ptr, n_rows, M: kl.constexpr, N: kl.constexpr):
    """y = x * sum(x * w) / sum(x * x) per row, over a pipelined loop of row blocks: the
    pair broadcast back along its axis (kiln-tile-rematerialize-broadcasts leaves a
    reduction of two sources as it is) and reduced in a loop."""
    cols = kl.arange(0, N)
    for start in kl.range(0, n_rows, M, num_stages=2):
        rows = start + kl.arange(0, M)
        offs = rows[:, None] * N + cols[None, :]
        x = kl.load(x_ptr + offs)
        w = kl.load(w_ptr + offs)
        ss, sw = kl.reduce((x * x, x * w), 1, add_pair_fn)
        kl.store(y_ptr + offs, x * (sw / ss)[:, None])


@pytest.mark.parametrize("arch", ARCHS)
def test_pair_broadcast_back_in_a_loop_compiles(arch):
    sig = {"x_ptr": "*f32", "w_ptr": "*f32", "y_ptr": "*f32", "n_rows": "i32"}
    ck = scaled_rows.compile(sig, {"M": 16, "N": 128}, list(sig), num_warps=4, arch=arch,
                             upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"
    assert ck.tile_ir.count(":2 = tile.reduce") == 1
    # the pair stays one reduction through the passes: one buffer for both sums
    assert ck.ptx.count(".b8 __kiln_reduce_smem") == 1


def test_pair_broadcast_back_interpreter():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    w = rng.standard_normal((64, 128)).astype(np.float32)
    y = np.full_like(x, np.nan)
    interpret(scaled_rows, (1,), x, w, y, 64, M=16, N=128)
    x64 = x.astype(np.float64)
    ref = x64 * (np.sum(x64 * w, axis=1) / np.sum(x64 * x64, axis=1))[:, None]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------
# (b) Interpreter against numpy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [32, 256, 4096])
def test_sum_pair_1d_interpreter(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    out = np.full(2, np.nan, np.float32)
    interpret(sum_pair_1d, (1,), x, w, out, N=n)
    ref = [np.sum(x.astype(np.float64) ** 2), np.sum(x.astype(np.float64) * w)]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m,n", [(16, 32), (64, 8), (1, 64)])
@pytest.mark.parametrize("axis", [0, 1])
def test_sum_pair_2d_interpreter(m, n, axis):
    rng = np.random.default_rng(m * n + axis)
    x = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal((m, n)).astype(np.float32)
    k = n if axis == 0 else m
    s = np.full(k, np.nan, np.float32)
    t = np.full(k, np.nan, np.float32)
    interpret(sum_pair_2d, (1,), x, w, s, t, M=m, N=n, AXIS=axis)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(s, np.sum(x64 * x64, axis=axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(t, np.sum(x64 * w, axis=axis), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", ["f32", "bf16", "i32"])
@pytest.mark.parametrize("m,n", [(16, 32), (64, 8)])
@pytest.mark.parametrize("axis", [0, 1])
def test_max_argmax_interpreter_ties_go_to_the_lowest_index(dt, m, n, axis):
    rng = np.random.default_rng(m + n + axis)
    # few distinct values: most lines hold their maximum more than once
    x = rng.integers(-3, 4, size=(m, n)).astype(NP[dt])
    k = n if axis == 0 else m
    v = np.zeros(k, NP[dt])
    i = np.full(k, -1, np.int32)
    interpret(max_argmax_2d, (1,), x, v, i, M=m, N=n, AXIS=axis)
    np.testing.assert_array_equal(v, np.max(x, axis=axis))
    np.testing.assert_array_equal(i, np.argmax(x, axis=axis))  # numpy: the first maximum
    assert (np.sum(x == np.max(x, axis=axis, keepdims=True), axis=axis) > 1).any()


def test_mixed_dtype_pair_interpreter():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    s = np.full(16, np.nan, np.float32)
    c = np.full(16, -1, np.int32)
    interpret(sum_count_rows, (1,), x, s, c, M=16, N=64)
    np.testing.assert_allclose(s, np.sum(np.where(x > 0, x, 0).astype(np.float64), axis=1),
                               rtol=1e-5)
    np.testing.assert_array_equal(c, np.sum(x > 0, axis=1))


def test_triple_over_all_axes_interpreter():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    w = rng.standard_normal((8, 32)).astype(np.float32)
    out = np.full(2, np.nan, np.float32)
    cnt = np.full(1, -1, np.int32)
    interpret(triple_all, (1,), x, w, out, cnt, M=8, N=32)
    np.testing.assert_allclose(out, [np.sum(x, dtype=np.float64),
                                     np.sum(x.astype(np.float64) * w)], rtol=1e-5, atol=1e-5)
    assert cnt[0] == np.sum(x > 0)


def test_single_tile_returns_a_tile_interpreter():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    y = np.zeros(16, np.float32)
    interpret(max_rows_single, (1,), x, y, M=16, N=32)
    np.testing.assert_array_equal(y, np.max(x, axis=1))


# ---------------------------------------------------------------------------
# (c) User errors
# ---------------------------------------------------------------------------


@kiln.jit
def add_pair(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@kiln.jit
def add_one(a, b):
    return a + b


@kiln.jit
def first_only(a0, b0, a1, b1):
    return a0 + a1


@kiln.jit
def widening_pair(a0, b0, a1, b1):
    return a0 + a1, (b0 + b1).to(kl.float32)


@kiln.jit
def tile_pair(a0, b0, a1, b1):
    return a0 + a1, kl.zeros((4,), kl.int32)


def not_jit(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@kiln.jit
def bad_reduce(x_ptr, y_ptr, n, CASE: kl.constexpr):
    offs = kl.arange(0, 64)
    x = kl.load(x_ptr + offs)
    i = offs
    r = x
    if CASE == "shapes":
        r, _ = kl.reduce((x, kl.arange(0, 32)), 0, add_pair)  # err-shapes
    elif CASE == "scalar":
        r, _ = kl.reduce((x, n), 0, add_pair)  # err-scalar
    elif CASE == "pointers":
        r, _ = kl.reduce((x, x_ptr + offs), 0, add_pair)  # err-pointers
    elif CASE == "axis":
        r, _ = kl.reduce((x, i), 1, add_pair)  # err-axis
    elif CASE == "not_jit":
        r, _ = kl.reduce((x, i), 0, not_jit)  # err-not_jit
    elif CASE == "arity":
        r, _ = kl.reduce((x, i), 0, add_one)  # err-arity
    elif CASE == "count":
        r, _ = kl.reduce((x, i), 0, first_only)  # err-count
    elif CASE == "dtype":
        r, _ = kl.reduce((x, i), 0, widening_pair)  # err-dtype
    elif CASE == "tile":
        r, _ = kl.reduce((x, i), 0, tile_pair)  # err-tile
    else:
        r = kl.reduce((), 0, add_pair)  # err-empty
    kl.store(y_ptr, r)


@pytest.mark.parametrize("case,message", [
    ("shapes", r"reduce: the tiles must have one shape, got \[64\] \(input #0\) and \[32\] "
               r"\(input #1\)"),
    ("scalar", "reduce: input #1 needs a tile, got a scalar i32"),
    ("pointers", "reduce: input #1: reducing pointers is not supported"),
    ("axis", "reduce: axis 1 is out of range for a tile of rank 1"),
    ("not_jit", "reduce: combine_fn must be a @kiln.jit function, got function"),
    ("arity", "call to add_one: too many positional arguments"),
    ("count", r"reduce: combine_fn must return 2 scalars \(f32, i32\), got one value"),
    ("dtype", r"reduce: value #1 of combine_fn must be i32, got f32 \(cast it with "
              r".to\(i32\)\)"),
    ("tile", r"reduce: combine_fn must return scalars, got a tile .* as value #1"),
    ("empty", "reduce needs at least one tile, got an empty tuple"),
])
def test_reduce_errors_at_their_line(case, message):
    sig = {"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"}
    with pytest.raises(CompilationError, match=message) as info:
        bad_reduce.compile(sig, {"CASE": case}, num_warps=4, upto="tile")
    assert f"{HERE}:{source_line(HERE, 'err-' + case)}:" in str(info.value)


def test_reduce_errors_in_the_interpreter_too():
    x = np.zeros(64, np.float32)
    with pytest.raises(CompilationError, match="reduce: combine_fn must return 2 scalars"):
        interpret(bad_reduce, (1,), x, x.copy(), 0, CASE="count")
