"""``@kiln.jit(fp_fusion=True)``: float multiplies and adds may contract into fma.

On the CPU: the option's validation, the specialization key (a fused and a plain build
never share a cache entry or a bundle entry), the PTX of every arch (fma with the option,
``mul.rn`` / ``add.rn`` without it, also for the products a reduction sums) and the
interpreter, which computes every operation with its own rounding either way."""

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln.aot import Spec
from kiln.compiler.compiler import Specialization, compiler_available
from kiln.testing import interpret

ARCHS = ["sm_90a", "sm_100a", "sm_103a"]
SIG = {"x_ptr": "*f32", "y_ptr": "*f32", "w_ptr": "*f32", "out_ptr": "*f32", "n": "i32"}
DIV = {"x_ptr": 16, "y_ptr": 16, "w_ptr": 16, "out_ptr": 16}

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


def _mul_add(x_ptr, y_ptr, w_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    m = offs < n
    x = kl.load(x_ptr + offs, mask=m)
    y = kl.load(y_ptr + offs, mask=m)
    w = kl.load(w_ptr + offs, mask=m)
    kl.store(out_ptr + offs, x * y + w, mask=m)


def _dot(x_ptr, y_ptr, w_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    m = offs < n
    x = kl.load(x_ptr + offs, mask=m, other=0.0)
    y = kl.load(y_ptr + offs, mask=m, other=0.0)
    kl.store(out_ptr, kl.sum(x * y, axis=0))


fused_mul_add = kiln.jit(num_warps=1, fp_fusion=True)(_mul_add)
plain_mul_add = kiln.jit(num_warps=1)(_mul_add)
fused_dot = kiln.jit(num_warps=1, fp_fusion=True)(_dot)
plain_dot = kiln.jit(num_warps=1)(_dot)


def test_option_is_validated():
    with pytest.raises(TypeError, match="fp_fusion must be a bool"):
        kiln.jit(fp_fusion="yes")(_mul_add)
    with pytest.raises(TypeError, match="fp_fusion must be a bool"):
        kiln.jit(fp_fusion=1)(_mul_add)
    assert kiln.jit(_mul_add).fp_fusion is False
    assert fused_mul_add.fp_fusion is True


def test_specialization_key_names_the_option():
    plain = Specialization.make(SIG, DIV, {"BLOCK": 128})
    fused = Specialization.make(SIG, DIV, {"BLOCK": 128}, fp_fusion=True)
    assert plain.key() != fused.key()
    assert fused.key().endswith("|fp_fusion") and "fp_fusion" not in plain.key()
    # AOT specs (and launches, through the same Specialization.make) take the option
    # from the decorator
    a = Spec(fused_mul_add, signature=SIG, constexprs={"BLOCK": 128}, divisibility=DIV)
    b = Spec(plain_mul_add, signature=SIG, constexprs={"BLOCK": 128}, divisibility=DIV)
    assert a.sort_key()[1] == fused.key().replace("num_warps=4", "num_warps=1")
    assert a.sort_key() != b.sort_key()


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
def test_ptx_fuses_only_with_the_option(arch):
    fused = fused_mul_add.compile(SIG, {"BLOCK": 128}, DIV, arch=arch, upto="ptx").ptx
    plain = plain_mul_add.compile(SIG, {"BLOCK": 128}, DIV, arch=arch, upto="ptx").ptx
    assert fused.count("fma.rn.f32") == 4  # 4 elements a thread
    assert "mul.rn.f32" not in fused and "add.rn.f32" not in fused
    assert plain.count("mul.rn.f32") == 4 and plain.count("add.rn.f32") == 4
    assert "fma" not in plain


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
def test_ptx_fuses_the_products_of_a_sum(arch):
    fused = fused_dot.compile(SIG, {"BLOCK": 128}, DIV, arch=arch, upto="ptx").ptx
    plain = plain_dot.compile(SIG, {"BLOCK": 128}, DIV, arch=arch, upto="ptx").ptx
    # one product, then three fused into the thread's running sum
    assert fused.count("fma.rn.f32") == 3 and "mul.rn.f32" not in fused
    assert "fma" not in plain and plain.count("mul.rn.f32") == 4


def test_interpreter_rounds_every_operation():
    rng = np.random.default_rng(7)
    n = 300
    x, y, w = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    for kernel in (fused_mul_add, plain_mul_add):
        out = np.zeros(n, np.float32)
        interpret(kernel, (3,), x, y, w, out, n, BLOCK=128)
        np.testing.assert_array_equal(out, x * y + w)
