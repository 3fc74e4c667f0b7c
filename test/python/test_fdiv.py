"""kl.fdiv: the fast f32 division (div.approx.f32) and the correctly rounded one, in PTX and
the interpreter; and the CompilationWarning of a kernel whose wgmma instructions ptxas
serializes (C7509), which a correctly rounded division (a ptxas subroutine call) causes."""

import warnings

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln.compiler import compiler_available, targetinfo
from kiln.language.errors import CompilationError, CompilationWarning
from kiln.testing import interpret

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


@kiln.jit
def _divide(x_ptr, y_ptr, out_ptr, BLOCK: kl.constexpr, FAST: kl.constexpr,
            IEEE: kl.constexpr):
    i = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + i)
    y = kl.load(y_ptr + i)
    if FAST:
        q = kl.fdiv(x, y, ieee_rounding=IEEE)
    else:
        q = x / y
    kl.store(out_ptr + i, q)


SIG = {"x_ptr": "*f32", "y_ptr": "*f32", "out_ptr": "*f32"}


@needs_compiler
@pytest.mark.parametrize("fast,ieee,want", [(True, False, "div.approx.f32"),
                                            (True, True, "div.rn.f32"),
                                            (False, False, "div.rn.f32")])
def test_fdiv_ptx(fast, ieee, want):
    ptx = _divide.compile(SIG, {"BLOCK": 128, "FAST": fast, "IEEE": ieee}, arch="sm_90a",
                          upto="ptx").ptx
    assert want in ptx
    other = "div.rn.f32" if want == "div.approx.f32" else "div.approx.f32"
    assert other not in ptx


def test_fdiv_interpreted():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(64).astype(np.float32)
    y = (rng.random(64) + 0.5).astype(np.float32)
    out = np.empty_like(x)
    interpret(_divide, (1,), x, y, out, BLOCK=64, FAST=True, IEEE=False)
    np.testing.assert_allclose(out, x / y, rtol=1e-6)


@kiln.jit
def _int_fdiv(x_ptr, BLOCK: kl.constexpr):
    i = kl.arange(0, BLOCK)
    kl.store(x_ptr + i, kl.fdiv(i, 3))


@needs_compiler
def test_fdiv_of_integers_is_an_error():
    with pytest.raises(CompilationError, match="fdiv takes floats"):
        _int_fdiv.compile({"x_ptr": "*i32"}, {"BLOCK": 64}, arch="sm_90a", upto="tile")


@kiln.jit
def _dot_then_divide(a_ptr, b_ptr, d_ptr, out_ptr, FAST: kl.constexpr):
    """A [64, 64] dot on wgmma (staged operands), each row divided by d."""
    r = kl.arange(0, 64)
    a = kl.load(a_ptr + r[:, None] * 64 + r[None, :])
    b = kl.load(b_ptr + r[:, None] * 64 + r[None, :])
    acc = kl.dot(a, b)
    d = kl.load(d_ptr + r)
    if FAST:
        o = kl.fdiv(acc, d[:, None])
    else:
        o = acc / d[:, None]
    kl.store(out_ptr + r[:, None] * 64 + r[None, :], o)


@needs_compiler
@pytest.mark.parametrize("fast", [False, True])
def test_serialized_wgmma_warns(fast):
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "d_ptr": "*f32", "out_ptr": "*f32"}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ck = _dot_then_divide.compile(sig, {"FAST": fast}, arch="sm_90a", upto="cubin")
    assert [d["unit"] for d in ck.meta["targets"]["sm_90a"]["dots"]] == ["wgmma staged"]
    serial = [w for w in seen if issubclass(w.category, CompilationWarning)
              and "serializes this kernel's wgmma" in str(w.message)]
    if fast:
        assert not serial and "div.rn.f32" not in ck.ptx
    else:
        assert len(serial) == 1
        assert "the presence of Extern calls" in str(serial[0].message)
        assert "kl.fdiv" in str(serial[0].message)
        assert serial[0].lineno == _dot_then_divide.source.first_line


def test_the_log_says_why():
    log = ("ptxas info    : (C7509) Potential Performance Loss: wgmma.mma_async instructions "
           "are serialized due to insufficient register resources for the wgmma pipeline in "
           "the function 'k'\nptxas info    : Used 168 registers\n")
    assert targetinfo.wgmma_serialization(log) == (
        "insufficient register resources for the wgmma pipeline")
    assert targetinfo.wgmma_serialization("ptxas info    : Used 168 registers") is None
    assert targetinfo.wgmma_serialization(None) is None
