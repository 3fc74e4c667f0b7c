"""kl.min_programs_per_sm: the occupancy hint reaches the PTX as .minnctapersm and ptxas keeps
the registers within 65536 / (programs x threads); the front end's errors at the user's line;
the interpreter ignores it."""

import os

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.compiler.compiler import compiler_available
from kiln.testing import interpret, source_line

HERE = os.path.abspath(__file__)
needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


@kiln.jit
def scale_rows(x_ptr, y_ptr, n, PROGRAMS: kl.constexpr, BLOCK: kl.constexpr):
    """y = x * sum(x) per row of BLOCK: a reduction and a row held in registers."""
    if PROGRAMS > 0:
        kl.min_programs_per_sm(PROGRAMS)
    for row in range(kl.program_id(0), n, kl.num_programs(0)):
        x = kl.load(x_ptr + row * BLOCK + kl.arange(0, BLOCK))
        kl.store(y_ptr + row * BLOCK + kl.arange(0, BLOCK), x * kl.sum(x * x, axis=0))


SIG = {"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"}


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_min_programs_per_sm_reaches_the_ptx(arch):
    ck = scale_rows.compile(SIG, {"PROGRAMS": 2, "BLOCK": 8192}, divisibility=["x_ptr", "y_ptr"],
                            num_warps=16, arch=arch)
    assert ".minnctapersm 2" in ck.ptx
    assert "tile.min_programs_per_sm = 2 : i32" in ck.tile_ir
    assert ck.meta["targets"][arch]["registers"] <= 64
    plain = scale_rows.compile(SIG, {"PROGRAMS": 0, "BLOCK": 8192},
                               divisibility=["x_ptr", "y_ptr"], num_warps=16, arch=arch)
    assert ".minnctapersm" not in plain.ptx


def test_the_interpreter_ignores_it():
    x = np.arange(3 * 64, dtype=np.float32) / 64
    y = np.zeros_like(x)
    interpret(scale_rows, (2,), x, y, 3, PROGRAMS=2, BLOCK=64)
    rows = x.reshape(3, 64)
    np.testing.assert_allclose(y.reshape(3, 64), rows * (rows * rows).sum(1, keepdims=True),
                               rtol=1e-6)


@kiln.jit
def _e_zero(x_ptr):
    kl.min_programs_per_sm(0)  # E-zero
    kl.store(x_ptr, 1.0)


@kiln.jit
def _e_runtime(x_ptr, n):
    kl.min_programs_per_sm(n)  # E-runtime
    kl.store(x_ptr, 1.0)


ERRORS = [
    (_e_zero, "E-zero", "min_programs_per_sm: the count must be an int in [1, 32], got 0"),
    (_e_runtime, "E-runtime", "min_programs_per_sm: the count must be a constexpr"),
]


@needs_compiler
@pytest.mark.parametrize("kernel,marker,message", ERRORS)
def test_errors_at_the_line(kernel, marker, message):
    sig = {"x_ptr": "*f32", "n": "i32"} if kernel is _e_runtime else {"x_ptr": "*f32"}
    with pytest.raises(CompilationError) as info:
        kernel.compile(sig, upto="tile")
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)
