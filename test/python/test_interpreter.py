"""The CPU interpreter (kiln.interpreter): the language's operations against numpy,
kernels_dsl kernels against references written from docs/kernels/, and the same
errors as the compiler. Needs neither the compiler extension nor a GPU."""

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.testing import assert_bf16_close, interpret, source_line

BF16 = ml_dtypes.bfloat16
HERE = os.path.abspath(__file__)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


# ---------------------------------------------------------------------------
# kernels_dsl: situ_and_mul (docs/kernels/situ.md)
# ---------------------------------------------------------------------------


def situ_reference(x, beta=4.0, linear_beta=25.0):
    """docs/kernels/situ.md, in fp32 (float64 here): gate = beta*tanh(g/beta)*sigmoid(g),
    up = linear_beta*tanh(u/linear_beta) (or u), out = gate*up."""
    d = x.shape[1] // 2
    g = x[:, :d].astype(np.float64)
    u = x[:, d:].astype(np.float64)
    with np.errstate(over="ignore"):
        gate = beta * np.tanh(g / beta) * (1.0 / (1.0 + np.exp(-g)))
    up = linear_beta * np.tanh(u / linear_beta) if linear_beta is not None else u
    return gate * up


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("linear_beta", [25.0, None])
@pytest.mark.parametrize("n,d,row_pad", [(3, 1032, 0), (2, 64, 16), (1, 4096, 8)])
def test_situ_and_mul_matches_reference(dtype, linear_beta, n, d, row_pad):
    from kernels_dsl.kimi_k3.situ import launch_config, situ_and_mul_kernel

    rng = np.random.default_rng(n * d)
    np_dtype = BF16 if dtype == "bf16" else np.float32
    # A row-strided input (a slice of a wider buffer), as from a fused GEMM.
    full = (rng.standard_normal((n, 2 * d + row_pad)) * 5).astype(np_dtype)
    x = full[:, :2 * d]
    out = np.zeros((n, d), dtype=BF16)
    block, num_warps = launch_config(dtype)
    lin = linear_beta if linear_beta is not None else 1.0
    interpret(situ_and_mul_kernel, (n, kiln.cdiv(d, block)), x, out, d, x.strides[0] //
              x.itemsize, out.strides[0] // out.itemsize, 4.0, 1 / 4.0, lin, 1 / lin,
              BLOCK=block, HAS_LINEAR_BETA=linear_beta is not None)
    assert_bf16_close(out, situ_reference(x, 4.0, linear_beta), ulps=1.0)
    assert not np.any(full[:, 2 * d:] != full[:, 2 * d:])  # padding untouched (no NaN)


def test_situ_bound():
    """|out| <= beta * linear_beta = 100 (docs/kernels/situ.md) for extreme inputs."""
    from kernels_dsl.kimi_k3.situ import situ_and_mul_kernel

    x = np.array([[1e4, -1e4, 50.0, -3.0, 1e4, -1e4, 1e4, 0.5] * 2], dtype=np.float32)
    out = np.zeros((1, 8), dtype=BF16)
    interpret(situ_and_mul_kernel, (1, 1), x, out, 8, 16, 8, 4.0, 0.25, 25.0, 0.04,
              BLOCK=1024, HAS_LINEAR_BETA=True)
    assert np.all(np.abs(out.astype(np.float32)) <= 100.5)
    assert_bf16_close(out, situ_reference(x))


# ---------------------------------------------------------------------------
# The language on numpy
# ---------------------------------------------------------------------------


@kiln.jit
def _add_one(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=0.0)
    kl.store(y_ptr + offs, x + 1, mask=mask)


def test_masks_and_grid():
    x = np.arange(100, dtype=np.float32)
    y = np.full(128, -7.0, dtype=np.float32)
    interpret(_add_one, (kiln.cdiv(100, 32),), x, y, 100, BLOCK=32)
    np.testing.assert_array_equal(y[:100], x + 1)
    assert np.all(y[100:] == -7.0)  # masked lanes are not written


def test_grid_callable_and_env_flag(monkeypatch):
    monkeypatch.setenv("KILN_INTERPRET", "1")
    k = kiln.jit(_add_one.fn)  # reads KILN_INTERPRET when decorated
    assert k.interpret
    x = np.arange(50, dtype=np.float32)
    y = np.zeros_like(x)
    k[lambda meta: (kiln.cdiv(meta["n"], meta["BLOCK"]),)](x, y, 50, BLOCK=16)
    np.testing.assert_array_equal(y, x + 1)
    k2 = kiln.jit(interpret=True)(_add_one.fn)
    k2[(4,)](x, y, 50, BLOCK=16)
    assert not kiln.jit(interpret=False)(_add_one.fn).interpret


@kiln.jit
def _two_d(x_ptr, out_ptr, M, N, stride, BM: kl.constexpr, BN: kl.constexpr,
           FLIP: kl.constexpr):
    rows = kl.program_id(0) * BM + kl.arange(0, BM)
    cols = kl.program_id(1) * BN + kl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = kl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=-1.0)
    if FLIP:
        y = kl.where(x > 0, -x, x * 2)
    else:
        y = kl.maximum(x, 0.5) + kl.minimum(x, -0.5)
    kl.store(out_ptr + rows[:, None] * N + cols[None, :], y, mask=mask)


@pytest.mark.parametrize("flip", [True, False])
def test_two_d_broadcast_where(flip):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 70)).astype(np.float32)
    out = np.zeros((37, 50), dtype=np.float32)
    interpret(_two_d, (kiln.cdiv(37, 16), kiln.cdiv(50, 32)), x, out, 37, 50, x.shape[1],
              BM=16, BN=32, FLIP=flip)
    v = x[:, :50]
    ref = np.where(v > 0, -v, v * 2) if flip else np.fmax(v, 0.5) + np.fmin(v, -0.5)
    np.testing.assert_array_equal(out, ref)


@kiln.jit
def _int_ops(a_ptr, b_ptr, out_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    a = kl.load(a_ptr + offs)
    b = kl.load(b_ptr + offs)
    kl.store(out_ptr + offs * 8 + 0, a // b)
    kl.store(out_ptr + offs * 8 + 1, a % b)
    kl.store(out_ptr + offs * 8 + 2, (a << 2) ^ b)
    kl.store(out_ptr + offs * 8 + 3, a >> 1)
    kl.store(out_ptr + offs * 8 + 4, (a & b) | 1)
    kl.store(out_ptr + offs * 8 + 5, ~a)
    kl.store(out_ptr + offs * 8 + 6, kl.abs(a) + kl.maximum(a, b))
    kl.store(out_ptr + offs * 8 + 7, (a < b).to(kl.int32) + (a == 3).to(kl.int32) * 10)


def test_integer_ops_are_c_like():
    a = np.array([7, -7, 7, -7, 3, 0, 100, -100], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 5, 3, -7, 9], dtype=np.int32)
    out = np.zeros(64, dtype=np.int32)
    interpret(_int_ops, (1,), a, b, out, BLOCK=8)
    o = out.reshape(8, 8)
    q = np.trunc(a / b).astype(np.int32)
    np.testing.assert_array_equal(o[:, 0], q)  # truncation toward zero, like C
    np.testing.assert_array_equal(o[:, 1], a - q * b)
    np.testing.assert_array_equal(o[:, 2], (a << 2) ^ b)
    np.testing.assert_array_equal(o[:, 3], a >> 1)
    np.testing.assert_array_equal(o[:, 4], (a & b) | 1)
    np.testing.assert_array_equal(o[:, 5], ~a)
    np.testing.assert_array_equal(o[:, 6], np.abs(a) + np.maximum(a, b))
    np.testing.assert_array_equal(o[:, 7], (a < b) + (a == 3) * 10)


@kiln.jit
def _unsigned(a_ptr, out_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    a = kl.load(a_ptr + offs)
    kl.store(out_ptr + offs, (a >> 28) + (a // 3) * 0 + (a > 5).to(kl.uint32))


def test_unsigned_semantics():
    a = np.array([0xF0000000, 1, 6, 0xFFFFFFFF], dtype=np.uint32)
    out = np.zeros(4, dtype=np.uint32)
    interpret(_unsigned, (1,), a, out, BLOCK=4)
    np.testing.assert_array_equal(out, (a >> 28) + (a > 5))


@kiln.jit
def _casts(x_ptr, bf_ptr, f8_ptr, i_ptr, f_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    kl.store(bf_ptr + offs, x)  # store converts to the pointee type (bf16)
    kl.store(f8_ptr + offs, x.to(kl.float8e4m3))
    kl.store(i_ptr + offs, x.to(kl.int32))
    kl.store(f_ptr + offs, kl.load(bf_ptr + offs).to(kl.float32) * 2)


def test_casts_bf16_fp8_int():
    x = np.array([1.0, -2.5, 3.14159, 300.7, -0.001, 17.2, 448.0, -1e-3], dtype=np.float32)
    bf = np.zeros(8, dtype=BF16)
    f8 = np.zeros(8, dtype=ml_dtypes.float8_e4m3fn)
    i = np.zeros(8, dtype=np.int32)
    f = np.zeros(8, dtype=np.float32)
    interpret(_casts, (1,), x, bf, f8, i, f, BLOCK=8)
    np.testing.assert_array_equal(bf, x.astype(BF16))
    np.testing.assert_array_equal(f8, x.astype(ml_dtypes.float8_e4m3fn))
    np.testing.assert_array_equal(i, np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(f, x.astype(BF16).astype(np.float32) * 2)


@kiln.jit
def _math(x_ptr, out_ptr, BLOCK: kl.constexpr, PRECISE: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    y = kl.exp(x, precise=PRECISE) + kl.log(x) + kl.sqrt(x) + kl.rsqrt(x) + kl.tanh(x)
    y = y + kl.sigmoid(x) + kl.sin(x) + kl.cos(x) + kl.exp2(x) + kl.log2(x) + kl.erf(x)
    y = y + kl.floor(x * 3) + kl.ceil(x * 3) + kl.fma(x, x, 1.0) + kl.cdiv(BLOCK, 3)
    kl.store(out_ptr + offs, y)


def test_math_functions():
    import math

    x = np.linspace(0.1, 3.0, 16).astype(np.float32)
    out = np.zeros(16, dtype=np.float32)
    interpret(_math, (1,), x, out, BLOCK=16, PRECISE=False)
    erf = np.array([math.erf(v) for v in x.astype(np.float64)])
    ref = (np.exp(x) + np.log(x) + np.sqrt(x) + 1 / np.sqrt(x) + np.tanh(x)
           + 1 / (1 + np.exp(-x)) + np.sin(x) + np.cos(x) + np.exp2(x) + np.log2(x) + erf
           + np.floor(x * 3) + np.ceil(x * 3) + x * x + 1 + 6)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


@kiln.jit
def _scalar_args(out_ptr, a, b, c, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, a * offs + b + c.to(kl.float32))


def test_scalar_arguments_and_num_programs():
    out = np.zeros(8, dtype=np.float32)
    interpret(_scalar_args, (1,), out, 3, 0.5, True, BLOCK=8)
    np.testing.assert_array_equal(out, 3 * np.arange(8) + 1.5)


class ArrayInterfaceOnly:
    def __init__(self, arr):
        self._arr = arr
        self.__array_interface__ = arr.__array_interface__


def test_array_interface_objects():
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, dtype=np.float32)
    interpret(_add_one, (1,), ArrayInterfaceOnly(x), ArrayInterfaceOnly(y), 16, BLOCK=16)
    np.testing.assert_array_equal(y, x + 1)


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    x = torch.arange(16, dtype=torch.bfloat16)
    y = torch.zeros(16, dtype=torch.bfloat16)
    interpret(_add_one, (1,), x, y, 16, BLOCK=16)
    assert torch.equal(y, x + 1)


# ---------------------------------------------------------------------------
# Faults and the compiler's errors
# ---------------------------------------------------------------------------


@kiln.jit
def _oob(x_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(x_ptr + offs, 1.0)  # OOB-store


def test_out_of_bounds_is_an_error_at_the_line():
    x = np.zeros(10, dtype=np.float32)
    with pytest.raises(CompilationError) as info:
        interpret(_oob, (1,), x, BLOCK=16)
    assert info.value.lineno == source_line(HERE, "OOB-store")
    assert "out-of-bounds store through 'x_ptr'" in info.value.message
    assert "program (0, 0, 0)" in info.value.message


@kiln.jit
def _err_tile_if(x_ptr, n):
    if kl.arange(0, 16) > n:  # IERR-if
        kl.store(x_ptr, 1.0)


@kiln.jit
def _err_broadcast(x_ptr):
    a = kl.arange(0, 16)
    b = kl.arange(0, 32)
    kl.store(x_ptr + a, a + b)  # IERR-broadcast


@kiln.jit
def _err_shape(x_ptr, n):
    kl.store(x_ptr + kl.arange(0, n), 1.0)  # IERR-shape


@pytest.mark.parametrize("kernel,args,marker,message", [
    (_err_tile_if, (3,), "IERR-if", "must be a"),  # a constexpr (or, with runtime ifs, a scalar)
    (_err_broadcast, (), "IERR-broadcast", "incompatible shapes"),
    (_err_shape, (16,), "IERR-shape", "must be a constexpr"),
])
def test_same_errors_as_the_compiler(kernel, args, marker, message):
    x = np.zeros(64, dtype=np.float32)
    with pytest.raises(CompilationError) as info:
        interpret(kernel, (1,), x, *args)
    assert info.value.lineno == source_line(HERE, marker)
    assert message in info.value.message


def test_launch_errors():
    x = np.zeros(4, dtype=np.float32)
    with pytest.raises(TypeError, match="missing a required argument"):
        interpret(_add_one, (1,), x, x, BLOCK=4)
    with pytest.raises(TypeError, match="expected a numpy array"):
        interpret(_add_one, (1,), x, "y", 4, BLOCK=4)
    with pytest.raises(TypeError, match="constexpr"):
        interpret(_add_one, (1,), x, x, 4, BLOCK=x)
    with pytest.raises(TypeError, match="grid"):
        interpret(_add_one, ("a",), x, x, 4, BLOCK=4)


def test_interpreter_needs_no_compiler(tmp_path):
    code = ("import sys; sys.modules['kiln._C'] = None\n"
            "import numpy as np, kiln, kiln.language as kl\n"
            "@kiln.jit(interpret=True)\n"
            "def k(x_ptr, B: kl.constexpr):\n"
            "    kl.store(x_ptr + kl.arange(0, B), kl.load(x_ptr + kl.arange(0, B)) * 2)\n"
            "x = np.ones(8, np.float32)\n"
            "k[(1,)](x, B=8)\n"
            "print(x.sum())\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(kiln.__file__)), REPO]))
    script = tmp_path / "script.py"  # a file: kernels need their source
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "16.0"


# ---------------------------------------------------------------------------
# Control flow and reductions (when the language has them)
# ---------------------------------------------------------------------------

needs_loops = pytest.mark.skipif(not hasattr(kl, "static_range"),
                                 reason="the language has no loops yet")
needs_reductions = pytest.mark.skipif(not hasattr(kl, "argmax"),
                                      reason="the language has no reductions yet")


@needs_loops
def test_runtime_if_for_and_static_range():
    @kiln.jit
    def k(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        acc = kl.zeros((BLOCK,), kl.float32)
        for i in range(0, n):
            acc += kl.load(x_ptr + i * BLOCK + offs)
        for j in kl.static_range(2):
            acc = acc * 2
        pid = kl.program_id(0)
        if pid == 1:
            acc = acc + 100.0
            kl.store(out_ptr + BLOCK * 2 + offs, acc)  # only program 1 writes here
        else:
            acc = acc - 1.0
        kl.store(out_ptr + pid * BLOCK + offs, acc)

    x = np.arange(24, dtype=np.float32)
    out = np.zeros(24, dtype=np.float32)
    interpret(k, (2,), x, out, 3, BLOCK=8)
    s = x.reshape(3, 8).sum(0) * 4
    np.testing.assert_array_equal(out[:8], s - 1)
    np.testing.assert_array_equal(out[8:16], s + 100)
    np.testing.assert_array_equal(out[16:], s + 100)


@needs_reductions
def test_reductions():
    @kiln.jit
    def k(x_ptr, out_ptr, M: kl.constexpr, N: kl.constexpr):
        rows = kl.arange(0, M)
        cols = kl.arange(0, N)
        x = kl.load(x_ptr + rows[:, None] * N + cols[None, :])
        kl.store(out_ptr + rows, kl.sum(x, axis=1))
        kl.store(out_ptr + M + rows, kl.max(x, axis=1))
        kl.store(out_ptr + 2 * M + rows, kl.min(x, axis=1))
        kl.store(out_ptr + 3 * M + rows, kl.argmax(x, axis=1).to(kl.float32))
        kl.store(out_ptr + 4 * M, kl.sum(x))

    rng = np.random.default_rng(3)
    x = rng.integers(-5, 5, (4, 16)).astype(np.float32)
    out = np.zeros(4 * 4 + 1, dtype=np.float32)
    interpret(k, (1,), x, out, M=4, N=16)
    np.testing.assert_array_equal(out[:4], x.sum(1))
    np.testing.assert_array_equal(out[4:8], x.max(1))
    np.testing.assert_array_equal(out[8:12], x.min(1))
    np.testing.assert_array_equal(out[12:16], x.argmax(1))
    assert out[16] == x.sum()


@needs_reductions
def test_sum_order_does_not_depend_on_memory_layout():
    """The same [M, N] values loaded from row-major and from column-major memory (numpy
    arrays of different memory orders inside the interpreter) sum to the same bits: a kernel
    that keeps a tile in registers and one that reloads it agree (the KDA fold and decode)."""
    @kiln.jit
    def k(x_ptr, xt_ptr, out_ptr, M: kl.constexpr, N: kl.constexpr):
        rows = kl.arange(0, M)
        cols = kl.arange(0, N)
        x = kl.load(x_ptr + rows[:, None] * N + cols[None, :])
        xt = kl.load(xt_ptr + cols[None, :] * M + rows[:, None])
        kl.store(out_ptr + rows, kl.sum(x * 3.0, axis=1))
        kl.store(out_ptr + M + rows, kl.sum(xt * 3.0, axis=1))

    rng = np.random.default_rng(4)
    x = (rng.standard_normal((8, 128)) * np.exp(rng.uniform(-8, 8, (8, 128)))).astype(np.float32)
    out = np.zeros(16, dtype=np.float32)
    interpret(k, (1,), x, np.ascontiguousarray(x.T), out, M=8, N=128)
    np.testing.assert_array_equal(out[:8].view(np.uint32), out[8:].view(np.uint32))
    np.testing.assert_array_equal(out[:8].view(np.uint32), (x * 3).sum(1).view(np.uint32))
