"""``@kiln.jit(maxnreg=N)``: a cap on the registers a thread may use (PTX ``.maxnreg``).

On the CPU: validation (decorator, compile and launch overrides), the specialization key
(a capped and an uncapped build never share a cache or bundle entry), the PTX of every arch,
and ptxas honouring the cap (the cubin's register count; spills where the kernel needs more).
The cap runs on the H200 through the kernels that use it (image_preprocess's sweep)."""

import pytest

import kiln
import kiln.language as kl
from kiln.aot import Spec
from kiln.compiler.compiler import Specialization, compiler_available

ARCHS = ["sm_90a", "sm_100a", "sm_103a"]
SIG = {"x_ptr": "*f32", "out_ptr": "*f32"}
DIV = {"x_ptr": 16, "out_ptr": 16}

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


def _poly(x_ptr, out_ptr, BLOCK: kl.constexpr):
    """Every thread holds BLOCK / 32 values and their running products: register pressure
    that grows with BLOCK."""
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    acc = x
    for _ in kl.static_range(8):
        acc = acc * x + kl.sum(acc, axis=0)
    kl.store(out_ptr + offs, acc)


uncapped = kiln.jit(num_warps=1)(_poly)
capped = kiln.jit(num_warps=1, maxnreg=32)(_poly)


def test_option_is_validated():
    with pytest.raises(ValueError, match=r"maxnreg must be in \[24, 255\]"):
        kiln.jit(maxnreg=16)(_poly)
    with pytest.raises(ValueError, match=r"maxnreg must be in \[24, 255\]"):
        kiln.jit(maxnreg=256)(_poly)
    with pytest.raises(TypeError, match="maxnreg must be an int or None"):
        kiln.jit(maxnreg=64.0)(_poly)
    with pytest.raises(TypeError, match="maxnreg must be an int or None"):
        kiln.jit(maxnreg=True)(_poly)
    with pytest.raises(ValueError, match=r"maxnreg must be in \[24, 255\]"):
        Specialization.make(SIG, DIV, {"BLOCK": 128}, maxnreg=8)
    with pytest.raises(ValueError, match=r"maxnreg must be in \[24, 255\]"):
        capped.compile(SIG, {"BLOCK": 128}, DIV, upto="tile", maxnreg=300)
    assert uncapped.maxnreg is None and capped.maxnreg == 32


def test_specialization_key_names_the_cap():
    plain = Specialization.make(SIG, DIV, {"BLOCK": 128})
    cap = Specialization.make(SIG, DIV, {"BLOCK": 128}, maxnreg=64)
    assert cap.key().endswith("|maxnreg=64") and "maxnreg" not in plain.key()
    assert cap.key() != Specialization.make(SIG, DIV, {"BLOCK": 128}, maxnreg=32).key()
    # AOT specs take the decorator's cap unless they name their own
    a = Spec(capped, signature=SIG, constexprs={"BLOCK": 128}, divisibility=DIV)
    b = Spec(capped, signature=SIG, constexprs={"BLOCK": 128}, divisibility=DIV, maxnreg=64)
    c = Spec(uncapped, signature=SIG, constexprs={"BLOCK": 128}, divisibility=DIV)
    assert a.sort_key()[1].endswith("|maxnreg=32")
    assert b.sort_key()[1].endswith("|maxnreg=64")
    assert "maxnreg" not in c.sort_key()[1]


@needs_compiler
def test_tile_ir_carries_the_cap():
    tile = capped.compile(SIG, {"BLOCK": 128}, DIV, upto="tile").tile_ir
    assert "tile.maxnreg = 32 : i32" in tile
    assert "tile.maxnreg" not in uncapped.compile(SIG, {"BLOCK": 128}, DIV, upto="tile").tile_ir
    # a compile override wins over the decorator
    tile = capped.compile(SIG, {"BLOCK": 128}, DIV, upto="tile", maxnreg=48).tile_ir
    assert "tile.maxnreg = 48 : i32" in tile


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
def test_ptx_and_cubin_honour_the_cap(arch):
    ck = capped.compile(SIG, {"BLOCK": 2048}, DIV, arch=arch)
    assert ".maxnreg 32" in ck.ptx
    free = uncapped.compile(SIG, {"BLOCK": 2048}, DIV, arch=arch)
    assert ".maxnreg" not in free.ptx
    regs, free_regs = (k.meta["targets"][arch]["registers"] for k in (ck, free))
    # 64 values a thread: without the cap ptxas keeps them all in registers; with it, it
    # stays within 32 and spills the rest
    assert free_regs > 32 and free.meta["targets"][arch]["spill_store_bytes"] == 0
    assert regs <= 32 and ck.meta["targets"][arch]["spill_store_bytes"] > 0
