"""kl.trans / kl.permute / x.T (tile.trans), kl.reshape, kl.join and kl.split: PTX and
cubins per arch, the CPU interpreter against numpy, and the user errors at their line.
No GPU and no torch needed (test/gpu/test_shape_ops.py runs the same kernels on the
device)."""

import itertools
import os
import re
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
from shape_kernels import (  # noqa: E402
    complex_scale,
    deinterleave,
    dot_trans_b,
    group_sums,
    interleave,
    load_through_transposed_pointers,
    permute_3d,
    reshape_2d,
    trans_2d,
    trans_loop,
    transpose_matrix,
)

NP = {"f32": np.float32, "i32": np.int32, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
      "f16": np.float16}
POINTERS = ["x_ptr", "y_ptr"]


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
    assert "__kiln_shape_smem" in ck.ptx
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
    assert "bar.sync" not in ptx and "__kiln_shape_smem" not in ptx


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
    # data and mask take turns in one buffer: 64x32 bf16 (plus padding)
    assert re.findall(r"\.shared .*", ck.ptx) == [".shared .align 16 .b8 __kiln_shape_smem[4158];"]
    assert ck.ptx.count("bar.sync") == 4
    ck = trans_loop.compile({"x_ptr": "*f32", "y_ptr": "*f32", "iters": "i32"}, {"N": 64},
                            POINTERS, num_warps=8, arch=arch, upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"
    ck = dot_trans_b.compile({"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*f32"},
                             {"M": 64, "N": 64, "K": 32}, ["a_ptr", "b_ptr", "c_ptr"],
                             num_warps=4, arch=arch, upto="cubin")
    # b.T folded into the mma.sync dot (B's fragments read from b's rows, ldmatrix without
    # .trans): no transpose through shared memory
    assert "mma.sync" in ck.ptx and "__kiln_shape_smem" not in ck.ptx
    assert ".trans" not in ck.ptx


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


@pytest.mark.parametrize("arch", ARCHS)
def test_trans_of_pointers_compiles(arch):
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    ck = load_through_transposed_pointers.compile(sig, {"M": 32, "N": 64}, POINTERS,
                                                  num_warps=4, arch=arch, upto="cubin")
    assert "st.shared.b64" in ck.ptx or "st.shared.u64" in ck.ptx  # 64-bit addresses
    assert ck.cubin[:4] == b"\x7fELF"


def test_trans_of_pointers_interpreter():
    x = np.random.default_rng(4).standard_normal((32, 64)).astype(np.float32)
    y = np.zeros((64, 32), np.float32)
    interpret(load_through_transposed_pointers, (1,), x, y, M=32, N=64)
    np.testing.assert_array_equal(y, x.T)


@kiln.jit
def transposes(x_ptr, y_ptr, N: kl.constexpr, ROW: kl.constexpr):
    offs = kl.arange(0, N)[:, None] * N + kl.arange(0, N)[None, :]
    x = kl.load(x_ptr + offs)
    kl.store(y_ptr + offs, -kl.trans(-kl.trans(-kl.trans(x))))
    if ROW:  # a 32 KiB column broadcast to two columns through its own buffer (a row
        # broadcast to two rows stays in registers: the row is a register bit)
        col = kl.load(x_ptr + kl.arange(0, 8192))
        cols = kl.arange(0, 8192)[:, None] * 2 + kl.arange(0, 2)[None, :]
        kl.store(y_ptr + cols, col[:, None] + kl.zeros((8192, 2), kl.float32))


def test_transposes_share_one_buffer_and_it_counts():
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    # the three transposes use the one exchange buffer in turn: a padded 16 KiB slab
    ptx = transposes.compile(sig, {"N": 128, "ROW": False}, POINTERS, num_warps=4,
                             arch="sm_90a", upto="ptx").ptx
    assert re.findall(r"\.shared .*", ptx) == [".shared .align 16 .b8 __kiln_shape_smem[16892];"]
    assert ptx.count("bar.sync") == 3 * 8
    transposes.compile(sig, {"N": 32, "ROW": True}, POINTERS, num_warps=4, arch="sm_90a",
                       upto="ptx")
    # with the broadcast's 32 KiB it exceeds the 48 KiB of static shared memory: the
    # buffers move to dynamic shared memory (kiln-allocate-shared-memory), recorded for
    # the launch
    ck = transposes.compile(sig, {"N": 128, "ROW": True}, POINTERS, num_warps=4,
                            arch="sm_90a", upto="ptx")
    assert ".extern .shared .align 1024 .b8 __kiln_dynamic_smem[];" in ck.ptx
    assert ck.meta["shared_bytes"] >= 32768


def test_dynamic_shared_memory_reuses_the_bytes_of_finished_buffers():
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    # the transposes' exchange buffer (16892 bytes) is done (its last bar.sync) before
    # the broadcast writes its 32 KiB: side by side 49660 bytes, past 48 KiB, but the
    # broadcast reuses the transposes' bytes and the kernel needs only its 32 KiB
    ck = transposes.compile(sig, {"N": 128, "ROW": True}, POINTERS, num_warps=4,
                            arch="sm_90a", upto="cubin")
    assert re.findall(r"^.*\.shared .*;$", ck.ptx, re.M) == [
        ".extern .shared .align 1024 .b8 __kiln_dynamic_smem[];"]
    assert ck.meta["shared_bytes"] == 32768 < 32768 + 16892
    assert ck.cubin[:4] == b"\x7fELF"


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
    assert f"{HERE}:{source_line(HERE, 'err-' + case)}:" in str(info.value)


def test_errors_in_the_interpreter_too():
    x = np.zeros((8, 16), np.float32)
    with pytest.raises(CompilationError, match="are not a permutation"):
        interpret(bad_trans, (1,), x, x.copy(), 0, CASE="not_perm")


# ---------------------------------------------------------------------------
# kl.reshape, kl.join, kl.split
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_reshape_join_split_compile(arch):
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    ck = reshape_2d.compile(sig, {"M": 16, "N": 64, "P": 4, "Q": 256, "METHOD": False},
                            POINTERS, num_warps=4, arch=arch, upto="cubin")
    # the registers hold the same row-major indices in any shape: a copy
    assert "bar.sync" not in ck.ptx and ".shared" not in ck.ptx
    wide = r"\.global\.v(?:4\.b32|2\.b64)"  # 16 bytes (as 2 x b64 on Blackwell)
    assert len(re.findall("ld" + wide, ck.ptx)) == len(re.findall("st" + wide, ck.ptx)) == 2
    sig3 = {"a_ptr": "*bf16", "b_ptr": "*bf16", "y_ptr": "*bf16"}
    ck = interleave.compile(sig3, {"M": 32, "N": 64}, list(sig3), num_warps=4, arch=arch,
                            upto="cubin")
    assert "__kiln_shape_smem" in ck.ptx and ck.ptx.count("bar.sync") == 2
    sig3 = {"x_ptr": "*f32", "a_ptr": "*f32", "b_ptr": "*f32"}
    ck = deinterleave.compile(sig3, {"M": 64, "N": 64}, list(sig3), num_warps=8, arch=arch,
                              upto="cubin")
    assert "__kiln_shape_smem" in ck.ptx and ck.ptx.count("bar.sync") == 4  # 32 KiB: 2 slabs
    ck = complex_scale.compile({"x_ptr": "*f32", "y_ptr": "*f32", "re": "f32", "im": "f32"},
                               {"N": 256}, POINTERS, num_warps=4, arch=arch, upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"
    ck = group_sums.compile(sig, {"M": 16, "N": 128, "G": 32}, POINTERS, num_warps=4,
                            arch=arch, upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"


def test_reshape_join_split_ir():
    sig = {"x_ptr": "*f32", "y_ptr": "*f32"}
    ir = reshape_2d.compile(sig, {"M": 16, "N": 64, "P": 4, "Q": 256, "METHOD": True},
                            POINTERS, num_warps=4, upto="tile").tile_ir
    assert "tile.reshape %" in ir and ": tensor<16x64xf32> -> tensor<4x256xf32>" in ir
    ir = reshape_2d.compile(sig, {"M": 16, "N": 64, "P": 16, "Q": 64, "METHOD": True},
                            POINTERS, num_warps=4, upto="tile").tile_ir
    assert "tile.reshape" not in ir  # to its own shape: nothing
    sig3 = {"a_ptr": "*f32", "b_ptr": "*f32", "y_ptr": "*f32"}
    ir = interleave.compile(sig3, {"M": 4, "N": 8}, num_warps=1, upto="tile").tile_ir
    assert ": tensor<4x8xf32> -> tensor<4x8x2xf32>" in ir
    sig3 = {"x_ptr": "*f32", "a_ptr": "*f32", "b_ptr": "*f32"}
    ir = deinterleave.compile(sig3, {"M": 4, "N": 8}, num_warps=1, upto="tile").tile_ir
    assert "tile.split %" in ir and ": tensor<4x8x2xf32> -> tensor<4x8xf32>" in ir


@pytest.mark.parametrize("dt", ["f32", "bf16", "i8"])
@pytest.mark.parametrize("m,n,p,q", [(16, 64, 4, 256), (8, 8, 64, 1), (2, 128, 16, 16)])
@pytest.mark.parametrize("method", [False, True])
def test_reshape_interpreter(dt, m, n, p, q, method):
    x = _random(np.random.default_rng(m + n), dt, (m, n))
    y = np.zeros((p, q), NP[dt])
    interpret(reshape_2d, (1,), x, y, M=m, N=n, P=p, Q=q, METHOD=method)
    np.testing.assert_array_equal(y, x.reshape(p, q))


def test_group_sums_interpreter():
    x = np.random.default_rng(2).standard_normal((16, 128)).astype(np.float32)
    y = np.zeros((16, 4), np.float32)
    interpret(group_sums, (1,), x, y, M=16, N=128, G=32)
    np.testing.assert_allclose(y, x.reshape(16, 4, 32).sum(axis=2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", ["f32", "bf16", "i32"])
@pytest.mark.parametrize("m,n", [(16, 64), (4, 8), (1, 2)])
def test_join_split_interpreter(dt, m, n):
    rng = np.random.default_rng(m * n)
    a, b = _random(rng, dt, (m, n)), _random(rng, dt, (m, n))
    y = np.zeros((m, 2 * n), NP[dt])
    interpret(interleave, (1,), a, b, y, M=m, N=n)
    np.testing.assert_array_equal(y[:, 0::2], a)
    np.testing.assert_array_equal(y[:, 1::2], b)
    lo, hi = np.zeros_like(a), np.zeros_like(b)
    interpret(deinterleave, (1,), y, lo, hi, M=m, N=n)
    np.testing.assert_array_equal(lo, a)
    np.testing.assert_array_equal(hi, b)


def test_complex_scale_interpreter():
    x = np.random.default_rng(3).standard_normal((64, 2)).astype(np.float32)
    y = np.zeros_like(x)
    interpret(complex_scale, (1,), x, y, 0.5, -2.0, N=64)
    z = (x[:, 0] + 1j * x[:, 1]) * (0.5 - 2j)
    np.testing.assert_allclose(y[:, 0], z.real, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y[:, 1], z.imag, rtol=1e-5, atol=1e-5)


@kiln.jit
def join_scalars(y_ptr, a, b):
    kl.store(y_ptr + kl.arange(0, 2), kl.join(a, b))


def test_join_of_scalars_is_a_pair():
    y = np.zeros(2, np.float32)
    interpret(join_scalars, (1,), y, 1.5, -2.5)
    np.testing.assert_array_equal(y, [1.5, -2.5])
    ir = join_scalars.compile({"y_ptr": "*f32", "a": "f32", "b": "f32"}, num_warps=1,
                              upto="tile").tile_ir
    assert ": tensor<1xf32> -> tensor<1x2xf32>" in ir
    assert ": tensor<1x2xf32> -> tensor<2xf32>" in ir


@kiln.jit
def bad_shapes(x_ptr, y_ptr, n, CASE: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, 8)[:, None] * 16 + kl.arange(0, 16)[None, :])
    y = x
    if CASE == "numel":
        y = kl.reshape(x, 4, 16)  # err-numel
    elif CASE == "pow2":
        y = kl.reshape(x, (3, 32))  # err-pow2
    elif CASE == "runtime_shape":
        y = kl.reshape(x, n, 16)  # err-runtime_shape
    elif CASE == "join_dtype":
        y = kl.join(x, x.to(kl.bfloat16))  # err-join_dtype
    elif CASE == "join_shape":
        y = kl.join(x, kl.arange(0, 8).to(kl.float32))  # err-join_shape
    elif CASE == "split_last":
        y, z = kl.split(x)  # err-split_last
    elif CASE == "split_1d":
        y, z = kl.split(kl.arange(0, 2))  # err-split_1d
    kl.store(y_ptr + kl.arange(0, 8)[:, None] * 16 + kl.arange(0, 16)[None, :], y)


@pytest.mark.parametrize("case,message", [
    ("numel", r"reshape: cannot reshape a tile of shape \[8, 16\] \(128 elements\) to "
              r"\[4, 16\] \(64 elements\)"),
    ("pow2", r"reshape: tile dimensions must be powers of two, got \[3, 32\]"),
    ("runtime_shape", "tile shapes must be constexpr ints, got a runtime value"),
    ("join_dtype", r"join: a and b must have one dtype, got f32 and bf16"),
    ("join_shape", r"incompatible shapes for broadcasting: \[8, 16\] and \[8\]"),
    ("split_last", r"split: the last dimension must be 2, got shape \[8, 16\]"),
    ("split_1d", "split of a 1-D tile would give two scalars"),
])
def test_shape_errors_at_their_line(case, message):
    sig = {"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"}
    with pytest.raises(CompilationError, match=message) as info:
        bad_shapes.compile(sig, {"CASE": case}, num_warps=4, upto="tile")
    assert f"{HERE}:{source_line(HERE, 'err-' + case)}:" in str(info.value)
