"""fp8 conversions (saturating, round-to-nearest-even) and PDL, on the CPU: the PTX each arch
gets, the metadata flag, and the interpreter's numerics against ml_dtypes."""

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.language as kl
import kiln.testing
from kiln.compiler.compiler import compiler_available

pytestmark = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


@kiln.jit
def to_fp8(x_ptr, y_ptr, z_ptr, BLOCK: kl.constexpr, E5M2: kl.constexpr):
    o = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + o)
    if E5M2:
        q = x.to(kl.float8e5m2)
    else:
        q = x.to(kl.float8e4m3)
    kl.store(y_ptr + o, q)
    kl.store(z_ptr + o, q.to(kl.float32))


@kiln.jit
def pdl_copy(x_ptr, y_ptr, BLOCK: kl.constexpr):
    o = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.pdl_wait()
    v = kl.load(x_ptr + o)
    kl.pdl_launch_dependents()
    kl.store(y_ptr + o, v)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
@pytest.mark.parametrize("e5m2,ptx_type", [(False, "e4m3x2"), (True, "e5m2x2")])
def test_fp8_conversions_in_ptx(arch, e5m2, ptx_type):
    ck = to_fp8.compile({"x_ptr": "*f32", "y_ptr": "*f8e5m2" if e5m2 else "*f8e4m3",
                         "z_ptr": "*f32"}, {"BLOCK": 256, "E5M2": e5m2},
                        divisibility=["x_ptr", "y_ptr", "z_ptr"], arch=arch)
    assert f"cvt.rn.satfinite.{ptx_type}.f32" in ck.ptx
    assert f"cvt.rn.f16x2.{ptx_type}" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("e5m2", [False, True])
def test_fp8_interpreter_saturates_and_rounds(e5m2):
    dt = ml_dtypes.float8_e5m2 if e5m2 else ml_dtypes.float8_e4m3fn
    limit = float(ml_dtypes.finfo(dt).max)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(240).astype(np.float32) * 100,
                        np.array([1e6, -1e6, limit, -limit, 0.0, -0.0, 1e-12, 3.0] * 2,
                                 dtype=np.float32)])
    y = np.zeros(256, dtype=dt)
    z = np.zeros(256, dtype=np.float32)
    kiln.testing.interpret(to_fp8, (1,), x, y, z, BLOCK=256, E5M2=e5m2)
    expect = np.clip(x, -limit, limit).astype(dt)
    assert np.array_equal(y.view(np.uint8), expect.view(np.uint8))
    assert np.array_equal(z, expect.astype(np.float32))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_pdl_emits_griddepcontrol_and_marks_the_kernel(arch):
    ck = pdl_copy.compile({"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 512},
                          divisibility=["x_ptr", "y_ptr"], arch=arch)
    assert "griddepcontrol.wait;" in ck.ptx and "griddepcontrol.launch_dependents;" in ck.ptx
    assert ck.ptx.index("griddepcontrol.wait") < ck.ptx.index("ld.global")
    assert ck.meta["pdl"] is True and "pdl" in ck.meta["features"]


def test_kernels_without_pdl_are_not_marked():
    ck = to_fp8.compile({"x_ptr": "*f32", "y_ptr": "*f8e4m3", "z_ptr": "*f32"},
                        {"BLOCK": 256, "E5M2": False}, upto="tile")
    assert ck.meta["pdl"] is False
