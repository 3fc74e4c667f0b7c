"""``kiln.aot.Spec(archs=...)``: a specialization limited to some archs is compiled for the
archs it shares with the build, its bundle entry holds images of those only, and one that
shares none is left out (python/kiln/aot)."""

import pytest

import kiln
import kiln.language as kl
from kiln import aot


@kiln.jit
def copy(x_ptr, y_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(y_ptr + offs, kl.load(x_ptr + offs))


@kiln.jit
def copy_n(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(y_ptr + offs, kl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def spec(block, archs=None):
    return aot.Spec(copy, signature={"x_ptr": "*f32", "y_ptr": "*f32"},
                    constexprs={"BLOCK": block}, archs=archs)


def test_archs_in():
    assert spec(128).archs_in(["sm_90a", "sm_100a", "sm_90a"]) == ["sm_100a", "sm_90a"]
    assert spec(128, ("sm_90a",)).archs_in(["sm_100a", "sm_90a"]) == ["sm_90a"]
    assert spec(128, ["sm_100a", "sm_103a"]).archs == ("sm_100a", "sm_103a")
    assert spec(128, ("sm_100a",)).archs_in(["sm_90a"]) == []


@pytest.mark.parametrize("archs", ["sm_90a", ()])
def test_archs_must_be_a_non_empty_tuple(archs):
    with pytest.raises(ValueError, match="archs must be a non-empty tuple"):
        spec(128, archs)


def test_autotune_expansion_keeps_the_archs():
    tuner = kiln.autotune([kiln.Config({"BLOCK": 128}), kiln.Config({"BLOCK": 256})],
                          key=["n"])(copy_n)
    s = aot.Spec(tuner, signature={"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"},
                 archs=("sm_90a",),
                 tuned={(1,): kiln.Config({"BLOCK": 256})})
    assert [x.archs for x in s.expand()] == [("sm_90a",)]


def test_build_compiles_each_spec_for_its_archs(tmp_path):
    pytest.importorskip("kiln._C")
    pytest.importorskip("kiln._runtime")
    specs = [spec(128), spec(256, ("sm_90a",)), spec(512, ("sm_100a", "sm_103a")),
             spec(1024, ("sm_103a",))]
    path = str(tmp_path / "archs.kbundle")
    logs = []
    images = aot.build(specs, ["sm_100a", "sm_90a"], path, jobs=2, log=logs.append)
    assert sorted((img.meta["constexprs"]["BLOCK"], img.arch) for img in images) == [
        (128, "sm_100a"), (128, "sm_90a"), (256, "sm_90a"), (512, "sm_100a")]
    assert any("[4/4]" in line for line in logs)
    assert any("left out: 1 specializations for other archs only (copy (sm_103a))" in line
               for line in logs)
    bundle = kiln.Bundle(path)
    held = {k["constexprs"]["BLOCK"]: sorted(im["arch"] for im in k["images"])
            for k in bundle.kernels()}
    assert held == {128: ["sm_100a", "sm_90a"], 256: ["sm_90a"], 512: ["sm_100a"]}
