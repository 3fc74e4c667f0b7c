"""The Kimi K3 kernels on the CPU: every AOT specialization compiles to PTX and a cubin for
sm_90a, sm_100a and sm_103a with 16-byte vector accesses where the kernel promises them, and
every Python wrapper rejects bad arguments before anything reaches CUDA. No GPU, no torch:
tensors are stand-ins exposing ``__cuda_array_interface__``."""

import re

import pytest

import kiln.aot
from kiln.testing import FakeCudaTensor

pytest.importorskip("kiln._C")

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
K3_MODULES = ("pack_topk_ids", "concat_mla", "mla_output_gate", "mla_kv", "image", "quant",
              "situ_quant", "kda_decode", "kda_verify")

#: kernel -> whether its loads, its stores are 16-byte vectors in the PTX.
VECTOR = {
    "concat_mla_k": (True, True),
    "concat_mla_absorb_q": (True, True),
    "mla_output_gate": (True, True),
    "mla_kv_scatter_bf16": (True, True),
    # the generic kernels for any address and stride: scalar accesses
    "concat_mla_k_generic": (False, False),
    "concat_mla_absorb_q_generic": (False, False),
    "mla_output_gate_generic": (False, False),
    "mla_kv_scatter_bf16_generic": (False, False),
    # the generic kernels for strides of 8 elements: still 16-byte loads; the output gate's
    # e4m3 rows (H % 8 == 0) are 8-byte aligned only
    "per_token_group_quant_fp8_generic": (True, True),
    "quant_mxfp4_generic": (True, True),
    "mla_output_gate_fp8_generic": (True, False),
    "mla_kv_scatter_fp8_generic": (True, True),
    "image_preprocess_columns": (False, False),  # byte gathers, 2-byte scattered stores
    "image_preprocess_columns_generic": (False, False),
    "pack_topk_ids": (True, True),      # VEC = 4; VEC = 1 is scalar (checked below)
    "pack_topk_ids_generic": (False, False),  # VEC = 1 at any address
    "per_token_group_quant_fp8": (True, True),
    "situ_and_mul_masked_post_quant": (True, True),  # INTERLEAVED: gathers (checked below)
    # strides of 8 elements: still 16 bytes
    "situ_and_mul_masked_post_quant_generic": (True, True),
    "mla_output_gate_fp8": (True, True),
    "mla_kv_scatter_fp8": (True, True),
    "quant_mxfp4": (True, True),  # 16-byte loads of (even, odd) words
    "quant_mxfp4_few_rows": (True, True),  # the same, one block a thread (below mx_chunks_min_t)
    # KDA decode: the state rows, 16-byte vectors (test_kda_decode.py checks them and spills;
    # the fused decode copies its rows by bulk copies and stores them as vectors)
    **{name: (True, True) for name in
       ["kda_packed_decode", "kda_packed_decode_lower_bound"]
       + [f"kda_fused_decode_g{g}{lb}{norm}{vl}" for g in (1, 2, 4)
          for lb in ("", "_lower_bound") for norm in ("", "_norm") for vl in ("", "_varlen")]
       # the verify chain (the committed rows; the per-step states) and the fold
       + [f"kda_verify_chain{lb}{norm}" for lb in ("", "_lower_bound") for norm in ("", "_norm")]
       + ["kda_replayssm_fold"]},
}

#: kernel -> whether it is a programmatic dependent launch (concat_mla_k: its PDL constexpr).
PDL = {name: not name.startswith("image_preprocess") for name in VECTOR}


def k3_specs():
    specs = [s for s in kiln.aot.collect("kernels_dsl.kimi_k3")
             if s.kernel.__module__.rsplit(".", 1)[-1] in K3_MODULES]
    assert {s.kernel_name for s in specs} == set(VECTOR)
    return specs


def test_package_lists_the_modules():
    from kernels_dsl import kimi_k3

    for m in K3_MODULES:
        assert m in kimi_k3.MODULES


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("spec", k3_specs(), ids=lambda s: s.kernel_name)
def test_compiles_to_ptx_and_cubin(spec, arch):
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name,
                             cluster=spec.cluster)
    assert f".target {arch}" in ck.ptx
    assert f".visible .entry {spec.kernel_name}(" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"
    vec_load, vec_store = VECTOR[spec.kernel_name]
    if spec.constexprs.get("VEC") == 1:
        vec_load = vec_store = False
    if spec.constexprs.get("INTERLEAVED"):
        vec_load = False
    assert has_16_byte_access(ck.ptx, "ld") == vec_load, spec.kernel_name
    assert has_16_byte_access(ck.ptx, "st") == vec_store, spec.kernel_name
    # programmatic dependent launches wait for the previous grid before their first load
    assert ck.meta["pdl"] is spec.constexprs.get("PDL", PDL[spec.kernel_name]), spec.kernel_name
    if ck.meta["pdl"]:
        assert "griddepcontrol.launch_dependents;" in ck.ptx
        assert ck.ptx.index("griddepcontrol.wait;") < ck.ptx.index("ld.global")


def has_16_byte_access(ptx, op):
    """A 16-byte global access (v4.b32 on sm_90a; LLVM may pick v2.b64 on Blackwell)."""
    return re.search(rf"\b{op}\.global(\.[\w:]+)*\.(v4\.(b|u|s|f)32|v2\.(b|u|s|f)64)\b",
                     ptx) is not None


def test_concat_mla_k_is_a_pdl_launch_for_small_grids_only():
    """PDL where the grid is at most k_pdl_programs_per_sm x SMs programs (measured 1.8x
    slower with 49152 programs), never without an SM count; the bundle holds both."""
    from kernels_dsl.kimi_k3 import concat_mla

    full = concat_mla.SETTINGS.k_pdl_programs_per_sm * 132
    assert concat_mla.k_pdl(1, 132) and concat_mla.k_pdl(full, 132)
    assert not concat_mla.k_pdl(full + 1, 132) and not concat_mla.k_pdl(1, None)
    specs = [s for s in k3_specs() if s.kernel_name == "concat_mla_k"]
    assert sorted(s.constexprs["PDL"] for s in specs) == [False, True]


def test_pack_topk_ids_rounds_to_bf16_and_does_not_specialize_numel():
    from kernels_dsl.kimi_k3 import pack_topk_ids as mod

    assert mod.pack_topk_ids_kernel.do_not_specialize == {"numel"}
    assert [(s.kernel_name, s.constexprs["VEC"]) for s in mod.AOT_SPECIALIZATIONS] == [
        ("pack_topk_ids", 4), ("pack_topk_ids", 1), (mod.GENERIC, 1)]
    spec = mod.AOT_SPECIALIZATIONS[0]
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch="sm_90a", name=spec.kernel_name)
    assert "cvt.rn.bf16.f32" in ck.ptx  # round to nearest even
    assert re.search(r"shl\.b32\s+%r\d+, %r\d+, 16;", ck.ptx)


def test_mla_output_gate_uses_accurate_sigmoid():
    from kernels_dsl.kimi_k3 import mla_output_gate as mod

    spec = mod.AOT_SPECIALIZATIONS[0]
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch="sm_90a", name=spec.kernel_name)
    # libdevice expf (range reduction around ex2.approx) and a correctly rounded 1/x;
    # no rcp.approx / div.approx / fast ex2 of the raw input.
    assert "rcp.rn.f32" in ck.ptx or "div.rn.f32" in ck.ptx
    assert "rcp.approx" not in ck.ptx and "div.approx" not in ck.ptx
    assert "fma.rm.f32" in ck.ptx
    assert "cvt.rn.bf16.f32" in ck.ptx  # the sigmoid is rounded to bf16 before the multiply


# ---------------------------------------------------------------------------
# Wrappers: checks before any CUDA call
# ---------------------------------------------------------------------------

T = FakeCudaTensor


@pytest.fixture
def no_cuda(monkeypatch):
    """Fails the test if anything asks the device for its arch (the first CUDA call)."""
    runtime = pytest.importorskip("kiln.runtime")

    def boom(*a, **k):
        raise AssertionError("a CUDA call happened before the argument checks finished")

    monkeypatch.setattr(runtime, "device_arch", boom)
    return runtime


def test_pack_topk_ids_checks(no_cuda):
    from kernels_dsl.kimi_k3.pack_topk_ids import pack_topk_ids as f

    ids, w, out = T((4, 16), "int32"), T((4, 16), "float32"), T((4, 16), "int32")
    with pytest.raises(TypeError, match="topk_ids must be int32"):
        f(T((4, 16), "int64"), w, out)
    with pytest.raises(TypeError, match="topk_weights must be float32"):
        f(ids, T((4, 16), "bfloat16"), out)
    with pytest.raises(ValueError, match="shape"):
        f(ids, T((4, 8), "float32"), out)
    with pytest.raises(ValueError, match="contiguous"):
        f(ids, T((4, 16), "float32", strides=(32, 1)), out)
    with pytest.raises(ValueError, match="contiguous"):
        f(T((4, 16), "int32", strides=(1, 4)), w, out)
    with pytest.raises(TypeError, match="out must be int32"):
        f(ids, w, T((4, 16), "float32"))
    with pytest.raises(ValueError, match="out must have shape"):
        f(ids, w, T((4, 15), "int32"))
    empty = T((0, 16), "int32")
    assert f(T((0, 16), "int32"), T((0, 16), "float32"), empty) is empty  # no launch


def test_concat_mla_checks(no_cuda):
    from kernels_dsl.kimi_k3.concat_mla import concat_mla_absorb_q, concat_mla_k

    k, nope, rope = T((4, 12, 192)), T((4, 12, 128)), T((4, 1, 64))
    with pytest.raises(TypeError, match="k_nope must be bfloat16"):
        concat_mla_k(k, T((4, 12, 128), "float32"), rope)
    with pytest.raises(ValueError, match="k must have shape"):
        concat_mla_k(T((4, 12, 128)), nope, rope)
    with pytest.raises(ValueError, match="k_rope must have shape"):
        concat_mla_k(k, nope, T((4, 12, 64)))
    with pytest.raises(ValueError, match="last dimension"):
        concat_mla_k(k, T((4, 12, 128), strides=(3072, 256, 2)), rope)
    with pytest.raises(ValueError, match="32-bit"):
        concat_mla_k(T((2**17, 128, 192)), T((2**17, 128, 128)), T((2**17, 1, 64)))
    empty = T((0, 12, 192))
    assert concat_mla_k(empty, T((0, 12, 128)), T((0, 1, 64))) is empty

    a, b, out = T((4, 12, 512)), T((4, 12, 64)), T((4, 12, 576))
    with pytest.raises(TypeError, match="b must be bfloat16"):
        concat_mla_absorb_q(a, T((4, 12, 64), "float16"), out)
    with pytest.raises(ValueError, match="b must have shape"):
        concat_mla_absorb_q(a, T((4, 11, 64)), out)
    with pytest.raises(ValueError, match="out must have shape"):
        concat_mla_absorb_q(a, b, T((4, 12, 512)))
    with pytest.raises(ValueError, match="last dimension"):
        concat_mla_absorb_q(T((4, 12, 512), strides=(12288, 1024, 2)), b, out)
    empty = T((0, 12, 576))
    assert concat_mla_absorb_q(T((0, 12, 512)), T((0, 12, 64)), empty) is empty


def test_mla_output_gate_checks(no_cuda):
    from kernels_dsl.kimi_k3.mla_output_gate import mla_output_gate as f

    x = T((4, 1536))
    with pytest.raises(TypeError, match="gate must be bfloat16"):
        f(x, T((4, 1536), "float32"), T((4, 1536)))
    with pytest.raises(ValueError, match="gate must have shape"):
        f(x, T((4, 1535)), T((4, 1536)))
    with pytest.raises(ValueError, match="multiple of 8"):
        f(T((3, 4)), T((3, 4)), T((3, 4)))
    with pytest.raises(ValueError, match="contiguous"):
        f(T((4, 1536), strides=(2048, 1)), x, T((4, 1536)))
    with pytest.raises(ValueError, match="out must have shape"):
        f(x, x, T((4, 768)))
    empty = T((0, 1536))
    assert f(T((0, 1536)), T((0, 1536)), empty) is empty


def test_mla_kv_scatter_checks(no_cuda):
    from kernels_dsl.kimi_k3.mla_kv import mla_kv_scatter as f

    kv, pe, loc, cache = T((8, 512)), T((8, 64)), T((8,), "int64"), T((64, 576))
    with pytest.raises(TypeError, match="loc must be int64"):
        f(kv, pe, T((8,), "int32"), cache)
    with pytest.raises(TypeError, match="cache must be bfloat16"):
        f(kv, pe, loc, T((64, 576), "float32"))
    with pytest.raises(ValueError, match="kv_c must have shape"):
        f(T((8, 256)), pe, loc, cache)
    with pytest.raises(ValueError, match="k_pe must have shape"):
        f(kv, T((8, 2, 64)), loc, cache)
    with pytest.raises(ValueError, match="loc must have shape"):
        f(kv, pe, T((4,), "int64"), cache)
    with pytest.raises(ValueError, match="cache must be"):
        f(kv, pe, loc, T((64, 512)))
    with pytest.raises(ValueError, match="rows or pages of rows"):  # three strides
        f(kv, pe, loc, T((4, 2, 8, 576), strides=(64 * 576, 24 * 576, 576, 1)))
    with pytest.raises(ValueError, match="num_slots"):
        f(kv, pe, loc, T((2**31, 576)))
    with pytest.raises(ValueError, match="loc must be contiguous"):
        f(kv, pe, T((8,), "int64", strides=(2,)), cache)
    f(T((0, 512)), T((0, 1, 64)), T((0,), "int64"), cache)  # T = 0: no launch


def test_image_preprocess_checks(no_cuda):
    from kernels_dsl.kimi_k3.image import image_preprocess as f

    img, out = T((2, 32, 32, 3), "uint8"), T((2, 4, 588))
    with pytest.raises(ValueError, match="multiples of the patch size 14"):
        f(img, 30, 28, out=out)
    with pytest.raises(ValueError, match="multiples of the patch size 14"):
        f(img, 28, 0, out=out)
    with pytest.raises(TypeError, match="images must be uint8"):
        f(T((2, 32, 32, 3), "float32"), 28, 28, out=out)
    with pytest.raises(ValueError, match="images must have shape"):
        f(T((2, 3, 32, 32), "uint8"), 28, 28, out=out)
    with pytest.raises(ValueError, match="patch must be 14"):
        f(img, 32, 32, patch=16, out=T((2, 4, 768)))
    with pytest.raises(ValueError, match="std must be nonzero"):
        f(img, 28, 28, std=(1.0, 0.0, 1.0), out=out)
    with pytest.raises(ValueError, match="out must have shape"):
        f(img, 28, 28, out=T((2, 16, 588)))
    with pytest.raises(ValueError, match="32-bit"):
        f(T((4096, 32, 32, 3), "uint8"), 1400, 1400, out=T((4096, 10000, 588)))
    empty = T((0, 4, 588))
    assert f(T((0, 32, 32, 3), "uint8"), 28, 28, out=empty) is empty


def test_fp8_quant_kernels_divide_exactly_and_saturate():
    """The bits of the IEEE quotients without a division (no div.*.f32, no approximate
    reciprocal), cvt.rn.satfinite to e4m3; the UE8M0 rounding works on the bits (no
    lg2/ex2). The scale RN(absmax / 448) of the group quant, the output gate and the KV
    scatter is quant.div_by_recip's RN(a * RN(1/448)) and its Markstein correction
    (test_quant_variants.py: the IEEE quotient for every bf16 absmax), each operation
    rounded (.rn: ptxas neither contracts nor reorders them)."""
    specs = [s for s in kiln.aot.collect("kernels_dsl.kimi_k3")
             if s.kernel_name.removesuffix("_generic") in (
                 "per_token_group_quant_fp8", "situ_and_mul_masked_post_quant",
                 "mla_output_gate_fp8", "mla_kv_scatter_fp8")]
    # 2 + 8 group quant (fast; generic: every group size), 4 + 4 SiTU (fast, generic), 2 + 1
    # output gate (few / many rows; generic), 4 + 4 KV (one page or several, 32- or 64-bit
    # offsets; fast and generic)
    assert len(specs) == 29
    for spec in specs:
        ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                                 num_warps=spec.num_warps, arch="sm_90a", name=spec.kernel_name)
        # quotients from RN(1/448) and rcp.rn (exhaustively checked in
        # test_quant_variants.py): no division, no approximate reciprocal but SiTU's fast
        # sigmoid (one rcp.approx per ex2.approx)
        sigmoids = ck.ptx.count("ex2.approx") if spec.kernel_name.startswith("situ") else 0
        assert not re.search(r"\bdiv(\.\w+)*\.f32\b", ck.ptx), spec.kernel_name
        # integer division only for the page split of a paged KV cache
        assert ("div.u32" in ck.ptx) == bool(spec.constexprs.get("PAGED")), spec.kernel_name
        assert ck.ptx.count("rcp.approx") == sigmoids, spec.kernel_name
        assert "div.full" not in ck.ptx, spec.kernel_name
        assert "cvt.rn.satfinite.e4m3x2.f32" in ck.ptx, spec.kernel_name
        if spec.kernel_name.startswith("situ"):
            continue  # SiTU's scale: situ_quant.py
        for scale_op in (r"mul\.rn\.f32\s+%r\d+, %r\d+, 0f3B124925;",  # RN(1/448)
                         r"fma\.rn\.f32\s+%r\d+, %r\d+, 0f43E00000, %r\d+;",  # 448
                         r"fma\.rn\.f32\s+%r\d+, %r\d+, 0fBB124925, %r\d+;"):
            assert re.search(scale_op, ck.ptx), (spec.kernel_name, scale_op)
        if not spec.constexprs.get("UE8M0"):  # the codes' r = RN(1 / s), correctly rounded
            assert "rcp.rn.f32" in ck.ptx, spec.kernel_name
        if spec.kernel_name.startswith("per_token_group"):  # no transcendental at all
            assert "lg2" not in ck.ptx and "ex2" not in ck.ptx


def test_quant_mxfp4_checks(no_cuda):
    from kernels_dsl.kimi_k3.quant import quant_mxfp4 as f

    x, p, s = T((4, 256)), T((4, 128), "uint8"), T((4, 8), "uint8")
    with pytest.raises(TypeError, match="x must be bfloat16"):
        f(T((4, 256), "float16"), p, s)
    with pytest.raises(ValueError, match="block size 32"):
        f(T((4, 240)), T((4, 120), "uint8"), s)
    with pytest.raises(ValueError, match="packed must have shape"):
        f(x, T((4, 256), "uint8"), s)
    with pytest.raises(TypeError, match="scale must be uint8"):
        f(x, p, T((4, 8), "int32"))
    with pytest.raises(ValueError, match="row stride of x"):
        f(T((4, 256), strides=(260, 1)), p, s)
    p0, s0 = T((0, 128), "uint8"), T((0, 8), "uint8")
    assert f(T((0, 256)), p0, s0) == (p0, s0)


def test_per_token_group_quant_fp8_checks(no_cuda):
    from kernels_dsl.kimi_k3.quant import per_token_group_quant_fp8 as f

    x, q, s = T((4, 1024)), T((4, 1024), "float8_e4m3fn"), T((4, 8), "float32")
    with pytest.raises(TypeError, match="x must be bfloat16"):
        f(T((4, 1024), "float32"), q=q, s=s)
    with pytest.raises(ValueError, match="group must be one of"):
        f(x, 96, q=q, s=s)
    with pytest.raises(ValueError, match="divisible by the group size"):
        f(T((4, 1000)), q=q, s=s)
    with pytest.raises(ValueError, match="contiguous along its last dimension"):
        f(T((4, 1024), strides=(2048, 2)), q=q, s=s)
    with pytest.raises(ValueError, match="row stride of x"):
        f(T((4, 1024), strides=(1028, 1)), q=q, s=s)
    with pytest.raises(ValueError, match="x must be 16-byte aligned"):
        f(T((4, 1024), address=0x7F0000000002), q=q, s=s)
    with pytest.raises(TypeError, match="q must be float8_e4m3fn"):
        f(x, q=T((4, 1024), "uint8"), s=s)
    with pytest.raises(ValueError, match="s must have shape"):
        f(x, q=q, s=T((4, 16), "float32"))
    with pytest.raises(ValueError, match="s must be column-major"):
        f(x, column_major_scales=True, q=q, s=s)
    with pytest.raises(TypeError, match="bools"):
        f(x, ue8m0=1, q=q, s=s)
    q0, s0 = T((0, 1024), "float8_e4m3fn"), T((0, 8), "float32")
    assert f(T((0, 1024)), q=q0, s=s0) == (q0, s0)  # T = 0: no launch


def test_situ_and_mul_masked_post_quant_checks(no_cuda):
    from kernels_dsl.kimi_k3.situ_quant import situ_and_mul_masked_post_quant as f

    x, m = T((4, 8, 6144)), T((4,), "int32")
    q, s = T((4, 8, 3072), "float8_e4m3fn"), T((4, 8, 24), "float32")
    with pytest.raises(TypeError, match="masked_m must be int32"):
        f(x, T((4,), "int64"), q, s)
    with pytest.raises(ValueError, match="masked_m must have shape"):
        f(x, T((3,), "int32"), q, s)
    with pytest.raises(ValueError, match="divisible by the group size"):
        f(T((4, 8, 6000)), m, q, s)
    with pytest.raises(ValueError, match="N % 512"):
        f(T((4, 8, 2 * 640)), m, T((4, 8, 640), "float8_e4m3fn"), T((4, 1, 8), "int32"),
          scale_ue8m0=True)
    with pytest.raises(ValueError, match="output_scale must have shape"):
        f(x, m, q, T((4, 24, 8), "float32"))
    with pytest.raises(TypeError, match="output_scale must be int32"):
        f(x, m, q, s, scale_ue8m0=True)
    with pytest.raises(ValueError, match="multiples of 8"):
        f(T((4, 8, 6144), strides=(8 * 6148, 6148, 1)), m, q, s)
    with pytest.raises(ValueError, match="at most 256 experts"):
        f(T((257, 1, 1024)), T((257,), "int32"), T((257, 1, 512), "float8_e4m3fn"),
          T((257, 1, 4), "float32"))
    with pytest.raises(ValueError, match="linear_beta must be nonzero"):
        f(x, m, q, s, linear_beta=0.0)
    q0 = T((0, 8, 3072), "float8_e4m3fn")
    assert f(T((0, 8, 6144)), T((0,), "int32"), q0, T((0, 8, 24), "float32"))[0] is q0


def test_mla_output_gate_fp8_checks(no_cuda):
    from kernels_dsl.kimi_k3.mla_output_gate import mla_output_gate_fp8 as f

    x, q, s = T((4, 1536)), T((4, 1536), "float8_e4m3fn"), T((4,), "float32")
    with pytest.raises(TypeError, match="gate must be bfloat16"):
        f(x, T((4, 1536), "float32"), q, s)
    with pytest.raises(ValueError, match="multiple of 8"):
        f(T((4, 1532)), T((4, 1532)), T((4, 1532), "float8_e4m3fn"), s)
    with pytest.raises(ValueError, match="row stride of gate"):
        f(x, T((4, 1536), strides=(1540, 1)), q, s)
    with pytest.raises(ValueError, match="out_s must have shape"):
        f(x, x, q, T((5,), "float32"))
    with pytest.raises(ValueError, match="larger than one tile"):
        f(T((1, 16392)), T((1, 16392)), T((1, 16392), "float8_e4m3fn"), T((1,), "float32"))
    q0 = T((0, 1536), "float8_e4m3fn")
    assert f(T((0, 1536)), T((0, 1536)), q0, T((0,), "float32"))[0] is q0


def test_mla_kv_scatter_fp8_checks(no_cuda):
    from kernels_dsl.kimi_k3.mla_kv import mla_kv_scatter_fp8 as f

    kv, pe, loc, cache = T((8, 512)), T((8, 64)), T((8,), "int64"), T((64, 656), "uint8")
    with pytest.raises(TypeError, match="cache must be uint8"):
        f(kv, pe, loc, T((64, 328)))
    with pytest.raises(ValueError, match="cache must be"):
        f(kv, pe, loc, T((64, 576), "uint8"))
    with pytest.raises(ValueError, match="row stride .660 bytes. must be a multiple of 16"):
        f(kv, pe, loc, T((64, 656), "uint8", strides=(660, 1)))
    with pytest.raises(ValueError, match="page stride .10504 bytes. must be a multiple of 16"):
        f(kv, pe, loc, T((4, 8, 656), "uint8", strides=(10504, 656, 1)))
    with pytest.raises(ValueError, match="row stride of kv_c"):
        f(T((8, 512), strides=(516, 1)), pe, loc, cache)
    with pytest.raises(ValueError, match="cache must be 16-byte aligned"):
        f(kv, pe, loc, T((64, 656), "uint8", address=0x7F0000000001))
    with pytest.raises(TypeError, match="loc must be int64"):
        f(kv, pe, T((8,), "int32"), cache)
    assert f(T((0, 512)), T((0, 64)), T((0,), "int64"), cache) is cache  # T = 0: no launch


@pytest.mark.parametrize("name", ["mla_kv_scatter_bf16", "concat_mla_k", "concat_mla_absorb_q"])
def test_index_broadcasts_need_no_barrier(name):
    """The [ROWS, 1] x [1, COLS] index arithmetic of the 2-D copies (and mla_kv's per-row
    ``loc`` gather) is recomputed per thread: no shared memory, no bar.sync, 16-byte accesses."""
    spec = next(s for s in k3_specs() if s.kernel_name == name)
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch="sm_90a", name=spec.kernel_name)
    assert "bar.sync" not in ck.ptx
    assert ".shared" not in ck.ptx
    assert has_16_byte_access(ck.ptx, "ld") and has_16_byte_access(ck.ptx, "st")


@pytest.mark.parametrize("rows,warps,programs", [(4, 2, 32), (16, 4, 8), (32, 8, 4)])
def test_mla_kv_scatter_bf16_one_wave_fits(rows, warps, programs):
    """The one-wave grids of BF16_MIN_PROGRAMS at T = 16384 (ROWS tokens on warps, programs
    an SM) fit their register caps without a spill, with the streaming stores (``.cs``, no
    branch around each row's store) and the loads' evict_first policy."""
    spec = next(s for s in k3_specs() if s.kernel_name == "mla_kv_scatter_bf16")
    cx = dict(spec.constexprs, ROWS=rows, PROGRAMS=programs, LOAD_EVICT="evict_first",
              STORE_CACHE=".cs")
    ck = spec.kernel.compile(spec.signature, cx, spec.divisibility, num_warps=warps,
                             arch="sm_90a", name=spec.kernel_name)
    target = ck.meta["targets"]["sm_90a"]
    assert target["registers"] <= 65536 // (programs * warps * 32)
    assert target["spill_store_bytes"] == 0 and target["spill_load_bytes"] == 0
    assert ".minnctapersm" in ck.ptx and "st.global.cs" in ck.ptx
    assert "L2::cache_hint" in ck.ptx


@pytest.mark.parametrize("na,nb", [(1, 4096), (4096, 1), (4096, 4096), (512, 64)])
def test_concat_mla_absorb_q_configs_fit_in_registers(na, nb):
    # The wrapper accepts widths up to 4096 each: its rows a program keep both tiles within a
    # thread's registers, so every accepted width compiles (a [64, 4096] tile would not).
    from kernels_dsl.kimi_k3 import concat_mla

    constexprs, num_warps = concat_mla.q_launch_config(na, nb)
    spec = next(s for s in k3_specs() if s.kernel_name == "concat_mla_absorb_q")
    ck = spec.kernel.compile(spec.signature, constexprs, spec.divisibility, num_warps=num_warps,
                             arch="sm_90a", upto="ptx")
    assert ".entry concat_mla_absorb_q_kernel" in ck.ptx
