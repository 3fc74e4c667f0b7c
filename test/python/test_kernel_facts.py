"""What the lowering records on a kernel (tile.pdl, tile.features, tile.register_split) and
the compiler reads for the metadata, checked against what the PTX text shows (the regexes of
kiln.compiler.targetinfo.ptx_features, the setmaxnreg counts) for kernels that use each
feature: PDL, 16-byte vectors, system-scope atomics, TMA + wgmma, warp specialization,
tcgen05."""

import os
import re
import sys

import pytest

import kiln
import kiln.language as kl
from kiln.compiler import compiler as cc
from kiln.compiler.targetinfo import ptx_features

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from kernels_dsl.common.gemm import gemm_tma_kernel  # noqa: E402

pytestmark = pytest.mark.skipif(not cc.compiler_available(), reason="kiln._C is not built")


@kiln.jit
def pdl_copy(x_ptr, y_ptr, BLOCK: kl.constexpr):
    o = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.pdl_wait()
    v = kl.load(x_ptr + o)
    kl.pdl_launch_dependents()
    kl.store(y_ptr + o, v)


@kiln.jit
def counters(c_ptr, flag_ptr, BLOCK: kl.constexpr, SCOPE: kl.constexpr):
    o = kl.arange(0, BLOCK)
    kl.atomic_add(c_ptr + o, o, scope=SCOPE)
    kl.atomic_cas(flag_ptr, 0, 1, scope=SCOPE)


def _gemm(warp_specialize):
    sig = {"a_desc": "tensordesc<bf16,128x64,sw128>", "b_desc": "tensordesc<bf16,256x64,sw128>",
           "c_desc": "tensordesc<bf16,128x256>",
           "bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    return (gemm_tma_kernel, sig, dict(BM=128, BN=256, BK=64, GROUP_M=8, STAGES=3,
                                       WARP_SPECIALIZE=warp_specialize), 8)


CASES = {
    "pdl_vector16": (pdl_copy, {"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 512}, 4),
    "sys_atomics": (counters, {"c_ptr": "*i32", "flag_ptr": "*i32"},
                    {"BLOCK": 128, "SCOPE": "sys"}, 4),
    "gpu_atomics": (counters, {"c_ptr": "*i32", "flag_ptr": "*i32"},
                    {"BLOCK": 128, "SCOPE": "gpu"}, 4),
    "tma_wgmma": _gemm(False),
    "warp_specialized": _gemm(True),
}
EXPECTED = {
    ("pdl_vector16", "sm_90a"): ["pdl", "vector16"],
    ("sys_atomics", "sm_90a"): ["sys_atomics"],
    ("gpu_atomics", "sm_90a"): [],
    ("tma_wgmma", "sm_90a"): ["elect", "mbarrier", "tma", "wgmma"],
    ("tma_wgmma", "sm_100a"): ["elect", "mbarrier", "tcgen05", "tma", "vector16"],
    ("warp_specialized", "sm_90a"): ["elect", "mbarrier", "setmaxnreg", "tma", "wgmma"],
    ("warp_specialized", "sm_100a"): ["elect", "mbarrier", "setmaxnreg", "tcgen05", "tma",
                                      "vector16"],
}


def _compile(case, arch):
    kernel, sig, constexprs, warps = CASES[case]
    divisibility = [n for n, t in sig.items() if t.startswith("*")]
    return kernel.compile(sig, constexprs, divisibility, num_warps=warps, arch=arch,
                          upto="ptx")


def _lowered(case, arch):
    kernel, sig, constexprs, warps = CASES[case]
    divisibility = [n for n, t in sig.items() if t.startswith("*")]
    spec = cc.Specialization.make(sig, divisibility, constexprs, warps)
    module = cc.make_tile_ir(kernel.source, spec, kernel.__name__)
    return module, cc.lower_to_llvm_dialect(module, warps, arch)


@pytest.mark.parametrize("case,arch", sorted(EXPECTED))
def test_metadata_features_are_what_the_ptx_uses(case, arch):
    ck = _compile(case, arch)
    assert ck.meta["features"] == EXPECTED[(case, arch)]
    assert ck.meta["targets"][arch]["features"] == EXPECTED[(case, arch)]
    # The lowering's record and the PTX text agree (vector16 alone comes from the PTX).
    assert ck.meta["features"] == ptx_features(ck.ptx)
    assert ck.meta["pdl"] == ("griddepcontrol." in ck.ptx)


@pytest.mark.parametrize("case,arch", sorted(EXPECTED))
def test_lowered_kernel_records_its_facts(case, arch):
    tile, lowered = _lowered(case, arch)
    symbol = CASES[case][0].__name__
    features = lowered.get_string_array_attr(symbol, "tile.features") or []
    assert features == [f for f in EXPECTED[(case, arch)] if f != "vector16"]
    assert lowered.has_attr(symbol, "tile.pdl") == ("pdl" in features)
    # The frontend marks a PDL kernel before any lowering (tile-stage metadata).
    assert tile.has_attr(symbol, "tile.pdl") == ("pdl" in features)
    split = lowered.get_int_array_attr(symbol, "tile.register_split")
    ptx = _compile(case, arch).ptx
    counts = dict(re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+);", ptx))
    if case == "warp_specialized":
        # 8 consumer warps; on sm_90a the consumers take 232 registers, the producers 40.
        assert split == [256, int(counts["inc"]), int(counts["dec"])]
        assert lowered.get_int_attr(symbol, "nvvm.reqntid") == 256 + 128
    else:
        assert split is None and not counts


def test_pdl_at_the_tile_stage():
    # upto="tile" lowers nothing: the frontend's tile.pdl is the record.
    ck = pdl_copy.compile({"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 512}, upto="tile")
    assert ck.meta["pdl"] is True
    ck = counters.compile({"c_ptr": "*i32", "flag_ptr": "*i32"}, {"BLOCK": 128, "SCOPE": "sys"},
                          upto="tile")
    assert ck.meta["pdl"] is False


def test_getters_on_a_missing_symbol_or_attribute():
    _, lowered = _lowered("gpu_atomics", "sm_90a")
    assert lowered.get_string_array_attr("counters", "tile.features") is None
    assert lowered.get_string_array_attr("nope", "tile.features") is None
    assert lowered.get_int_array_attr("nope", "tile.register_split") is None
    assert lowered.get_int_array_attr("counters", "nvvm.reqntid") == [128, 1, 1]
    assert not lowered.has_attr("nope", "tile.pdl")
    assert lowered.has_attr("counters", "nvvm.kernel")
