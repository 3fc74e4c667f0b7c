"""Every kernel the bundle ships (``AOT_SPECIALIZATIONS``) is what a wrapper launches on its
default path, or its generic launch (the bundle's kernel for the inputs the fast ones do not
serve; mla_attention's TMA kernel: the default on sm_90a, with ``tma_blackwell`` beyond), for
the Kimi K3 families situ, situ_quant, quant, mla_output_gate, mla_kv, kv_indices, concat_mla,
pack_topk_ids, moe_align, kda_decode, kda_verify and mla_attention:
the launch configurations come from the functions the wrappers choose their launches with,
over the inputs K3 gives them (T in {1, 64, 4096, 16384}, the dtypes and flags of the
contracts, an H200's 132 SMs). Also: each family's ``Settings`` is frozen and its AOT
specializations are built from ``SETTINGS``. No GPU, no torch."""

import dataclasses
import itertools

import pytest

from kernels_dsl.kimi_k3 import (
    concat_mla,
    kda_decode,
    kda_verify,
    kv_indices,
    mla_attention,
    mla_kv,
    mla_output_gate,
    moe_align,
    pack_topk_ids,
    quant,
    situ,
    situ_quant,
)

TS = (1, 64, 4096, 16384)
SMS = 132
H_LOCAL, HEADS = 1536, 12


def key(name, constexprs, num_warps, maxnreg=None):
    return (name, tuple(sorted(constexprs.items())), num_warps, maxnreg)


def shipped(mod):
    return {key(s.kernel_name, s.constexprs, s.num_warps, s.maxnreg)
            for s in mod.AOT_SPECIALIZATIONS}


def launched_situ():
    out = set()
    for dtype in ("bf16", "f32"):
        block, warps = situ.launch_config(dtype)
        for has_linear_beta in (True, False):
            for name in ("situ_and_mul", situ.GENERIC):  # the same launch, any alignment
                out.add(key(name, {"BLOCK": block, "HAS_LINEAR_BETA": has_linear_beta}, warps))
    return out


def launched_situ_quant():
    _, warps = situ_quant.launch_config()
    return {key(name, situ_quant._constexprs(ue8m0, inter), warps)
            for name in ("situ_and_mul_masked_post_quant", situ_quant.GENERIC)
            for ue8m0 in (False, True) for inter in (False, True)}


def launched_quant():
    out = {key(*quant.mx_launch_config(t)) for t in TS}
    _, cx, warps, _ = quant.mx_launch_config(1)  # the generic launch: the few-rows one
    out.add(key(quant.MX_GENERIC, cx, warps))
    for ue8m0 in (False, True):
        cx, warps = quant.group_launch_config(128, ue8m0)
        out.add(key("per_token_group_quant_fp8", cx, warps))
        for group in quant.GROUPS:  # the generic launch: the same, every group size
            out.add(key(quant.GENERIC, *quant.group_launch_config(group, ue8m0)))
    return out


def launched_mla_output_gate():
    cx, warps = mla_output_gate.launch_config()
    out = {key("mla_output_gate", cx, warps), key(mla_output_gate.GENERIC, cx, warps)}
    for t in TS:
        out.add(key("mla_output_gate_fp8", *mla_output_gate.fp8_launch_config(H_LOCAL, t)))
    out.add(key(mla_output_gate.FP8_GENERIC, {"BLOCK": mla_output_gate.FP8_GENERIC_BLOCK},
                mla_output_gate.mla_output_gate_fp8_generic_kernel.num_warps))
    return out


def launched_mla_kv():
    # caches of one page or several (a layer's view of a pool); FP8: 32- or 64-bit offsets
    # (past 2^31 bytes)
    # (and the generic launches: the same, any stride; bf16 without the register cap)
    out = set()
    for paged in (False, True):
        cx, warps = mla_kv.launch_config(paged)
        out |= {key("mla_kv_scatter_bf16", cx, warps),
                key(mla_kv.GENERIC, mla_kv.generic_constexprs(cx), warps)}
    return out | {key(name, *mla_kv.fp8_launch_config(paged, index64))
                  for paged in (False, True) for index64 in (False, True)
                  for name in ("mla_kv_scatter_fp8", mla_kv.FP8_GENERIC)}


def launched_kv_indices():
    out = set()
    for bs in TS:
        block, warps = kv_indices.block_config(bs, SMS)
        for req_i64 in (True, False):
            for mult in (1, 24):
                for v2p in (False, True):
                    out.add(key(kv_indices._name(req_i64, block),
                                {"PAGE": 64, "PAGE_MULT": mult, "HAS_START": False,
                                 "HAS_V2P": v2p, "BLOCK": block}, warps))
    st = kv_indices.SETTINGS
    for req_i64 in (True, False):  # the generic launch: runtime page size and multiplier
        for v2p in (False, True):
            out.add(key(kv_indices._generic_name(req_i64), {"HAS_V2P": v2p, "BLOCK": st.block},
                        st.num_warps))
    return out


def launched_concat_mla():
    rows = concat_mla.SETTINGS.k_rows
    out = {key(name, *concat_mla.k_launch_config(-(-t * HEADS // rows), SMS))
           for t in TS for name in ("concat_mla_k", concat_mla.K_GENERIC)}
    out.add(key("concat_mla_absorb_q", *concat_mla.q_launch_config(512, 64)))
    out.add(key(concat_mla.Q_GENERIC, concat_mla.Q_GENERIC_CONSTEXPRS,
                concat_mla.concat_mla_absorb_q_generic_kernel.num_warps))
    return out


def launched_pack_topk_ids():
    # top-16 (numel % 4 == 0) and an odd top-k; the generic launch is the VEC = 1 one
    out = {key("pack_topk_ids", *pack_topk_ids.launch_config(t * k)) for t in TS
           for k in (16, 3)}
    out.add(key(pack_topk_ids.GENERIC, *pack_topk_ids.launch_config(3)))
    return out


def launched_moe_align():
    return {key("moe_align_single_token", *moe_align.launch_config(16, block))
            for block in (16, 64)} | {key(moe_align.GENERIC, {"COLS": moe_align.GENERIC_COLS}, 1)}


def launched_kda_decode():
    # both gates; the fused kernel at every GVA ratio (its cluster size), norm or not, the
    # static layout or cu_seqlens
    out = {key(*kda_decode.packed_launch_config(lb)) for lb in (False, True)}
    for g, lb, norm, varlen in itertools.product(kda_decode.GROUPS, (False, True),
                                                 (False, True), (False, True)):
        name, cx, warps, _ = kda_decode.fused_launch_config(g, lb, norm, varlen)
        out.add(key(name, cx, warps))
    return out


def launched_kda_verify():
    # the verify chain with both gates, norm or not; the fold
    out = {key(*kda_verify.verify_launch_config(lb, norm)) for lb in (False, True)
           for norm in (False, True)}
    return out | {key(*kda_verify.fold_launch_config())}


def launched_mla_attention():
    # every head count K3's tensor-parallel splits give (96 heads over TP 1..8) and the
    # draft counts the ops take, both caches; the merge
    out = {key(*mla_attention.launch_config(96 // tp, s, fp8)) for tp in (1, 2, 4, 8)
           for s in range(1, mla_attention.MAX_S + 1) for fp8 in (False, True)}
    # the TMA kernel (the default for bf16 pages of a multiple of 64 rows), launched with
    # the latent width of the device's arch (tma_latent_width: sm_90a's; sm_100a/sm_103a's
    # with tma_blackwell), each width a Spec of its archs
    for arch, st in (("sm_90a", mla_attention.Settings()),
                     ("sm_100a", mla_attention.Settings(tma_blackwell=True))):
        lat_w = mla_attention.tma_latent_width(arch, st)
        out |= {key(*mla_attention.tma_launch_config(96 // tp, s, lat_w, st))
                for tp in (1, 2, 4, 8) for s in range(1, mla_attention.MAX_S + 1)}
    return out | {key(*mla_attention.merge_config())}


FAMILIES = {situ: launched_situ, situ_quant: launched_situ_quant, quant: launched_quant,
            mla_output_gate: launched_mla_output_gate, mla_kv: launched_mla_kv,
            kv_indices: launched_kv_indices, concat_mla: launched_concat_mla,
            pack_topk_ids: launched_pack_topk_ids, moe_align: launched_moe_align,
            kda_decode: launched_kda_decode, kda_verify: launched_kda_verify,
            mla_attention: launched_mla_attention}


@pytest.mark.parametrize("mod", list(FAMILIES), ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_shipped_kernel_is_on_the_default_path(mod):
    missing = shipped(mod) - FAMILIES[mod]()
    assert not missing, f"shipped but never launched by the wrapper's default path: {missing}"


@pytest.mark.parametrize("mod", [m for m in FAMILIES if hasattr(m, "Settings")],
                         ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_settings_are_frozen_defaults(mod):
    assert dataclasses.is_dataclass(mod.Settings)
    assert mod.SETTINGS == mod.Settings()
    field = dataclasses.fields(mod.Settings)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(mod.SETTINGS, field, None)


def test_settings_change_the_launch():
    """A sweep's configuration reaches the launch through ``settings=`` (no module state)."""
    st = dataclasses.replace(quant.SETTINGS, mx_chunks_min_t=1, mx_rows=128, mx_warps=4)
    name, cx, warps, _ = quant.mx_launch_config(1, st)
    assert (name, cx["ROWS"], cx["CHUNKS"], warps) == ("quant_mxfp4", 128, 7, 4)
    assert quant.mx_launch_config(1)[0] == "quant_mxfp4_few_rows"
    st = dataclasses.replace(mla_output_gate.SETTINGS, fp8_chunks_min_t=1)
    assert mla_output_gate.fp8_launch_config(H_LOCAL, 1, st)[0]["CHUNKS"] == 3
    assert mla_output_gate.fp8_launch_config(H_LOCAL, 1)[0]["CHUNKS"] == 1
    st = dataclasses.replace(kv_indices.SETTINGS, few_block=128)
    assert kv_indices.block_config(1, SMS, st) == (128, 4)
    assert not concat_mla.k_pdl(2 * SMS, SMS, dataclasses.replace(concat_mla.SETTINGS,
                                                                  k_pdl_programs_per_sm=1))
