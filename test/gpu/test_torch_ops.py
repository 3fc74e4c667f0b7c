"""The torch custom ops of ``kernels_dsl.kimi_k3.torch_ops`` on the GPU (issue #5, "Torch
integration"), for every op:

1. eager ``torch.ops.kiln.<name>`` equals the kernel's wrapper bit for bit on fresh random
   inputs (in-place ops: the tensor they write);
2. ``torch.library.opcheck`` (schema, fake vs real, autograd registration, AOT dispatch
   with dynamic shapes);
3. ``torch.compile(fullgraph=True)`` of the op alone and of a function chaining several ops
   (with torch ops between them) gives eager's result;
4. CUDA graph capture and replay: new input values copied into the static inputs before the
   replay give eager's result on the new values.

The kernels' math is checked against references from docs/kernels/ in the other GPU tests;
here each op is compared with its wrapper, and the wrapper with itself is never the
reference for anything but the plumbing. The case builders below are device-agnostic: the
CPU tests (test/python/test_torch_ops_cpu.py) run the same cases with the kernels in
interpreter mode.
"""

import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple

import pytest

torch = pytest.importorskip("torch")

import kernels_dsl.kimi_k3.torch_ops as kops  # noqa: E402
from kernels_dsl.kimi_k3 import attn_res as attn_res_mod  # noqa: E402
from kernels_dsl.kimi_k3 import (  # noqa: E402
    concat_mla,
    image,
    kda_decode,
    kda_prefill,
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
    tensor_hash,
)
from kernels_dsl.kimi_k3 import moe_fused_gate as gate_router  # noqa: E402

U64_MASK = (1 << 64) - 1


# ---------------------------------------------------------------------------
# Cases: inputs, the wrapper call, what to compare
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """One call of op ``op`` on ``args`` (+ ``kwargs``). ``wrapper(*args, **kwargs)`` returns
    the wrapper's outputs as a tuple of tensors (none for in-place ops); ``mutated``: the
    positions of the args the op writes; ``valid(outputs, args)`` maps all outputs (the op's
    results, then the mutated args) to the tensors that hold defined values; ``defined``:
    every output element is written (opcheck compares two runs)."""
    op: str
    args: Tuple[Any, ...]
    kwargs: Dict[str, Any]
    wrapper: Callable[..., Tuple[Any, ...]]
    mutated: Tuple[int, ...] = ()
    valid: Optional[Callable[[Tuple[Any, ...], Tuple[Any, ...]], Tuple[Any, ...]]] = None
    defined: bool = True


def _randn(g, shape, dtype=torch.bfloat16, scale=1.0):
    return (torch.randn(shape, generator=g, device=g.device) * scale).to(dtype)


def _randint(g, lo, hi, shape, dtype):
    return torch.randint(lo, hi, shape, generator=g, device=g.device, dtype=dtype)


def _perm(g, n, k, dtype):
    return torch.randperm(n, generator=g, device=g.device)[:k].to(dtype)


def _tuple(x):
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _inplace(wrapper):
    """An in-place wrapper's outputs: none besides the tensor it writes."""

    def call(*args, **kwargs):
        wrapper(*args, **kwargs)
        return ()

    return call


def _situ_quant_valid(ue8m0):
    """Rows t < masked_m[e] of output and of the scales (the others are never written)."""

    def valid(outs, args):
        q, s = outs
        mm = [min(int(m), q.shape[1]) for m in args[1].tolist()]
        qs = [q[e, :m] for e, m in enumerate(mm)]
        ss = [s[e, :, :m] if ue8m0 else s[e, :m] for e, m in enumerate(mm)]
        return tuple(qs) + tuple(ss)

    return valid


def _situ_quant_case(g, ue8m0, interleaved, full):
    e, t_pad, n = 3, 8, 512
    x = _randn(g, (e, t_pad, 2 * n), scale=3.0)
    mm = (torch.full((e,), t_pad, dtype=torch.int32, device=g.device) if full else
          _randint(g, 0, t_pad + 1, (e,), torch.int32))
    kw = {"scale_ue8m0": ue8m0, "interleaved": interleaved}
    return Case("situ_and_mul_masked_post_quant", (x, mm), kw,
                lambda x, mm, **kw: situ_quant.situ_and_mul_masked_post_quant(x, mm, **kw),
                valid=None if full else _situ_quant_valid(ue8m0), defined=full)


def _scatter_inputs(g, t, slots, fp8):
    proj = _randn(g, (t, 512 + 64 + 64))
    kv_c = proj[:, :512]  # a strided slice of a projection output, as in the model
    k_pe = proj[:, 512:576].unsqueeze(1) if fp8 else proj[:, 512:576]
    loc = _perm(g, slots, t, torch.int64)
    loc[_randint(g, 0, 4, (t,), torch.int32) == 0] = -1  # padded tokens
    return kv_c, k_pe, loc


def _hash_wrapper(t):
    if t.device.type == "cuda":
        h = tensor_hash.gpu_tensor_hash(t)
    else:  # the wrapper wants CUDA; on the CPU (interpreter) the documented function
        h = tensor_hash.reference_hash(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    h = h - (1 << 64) if h >= 1 << 63 else h  # the same 64 bits as int64
    return (torch.tensor([h], dtype=torch.int64, device=t.device),)


def _kv_indices_case(g, req_i64, with_v2p):
    max_reqs, max_ctx, bs, max_blocks, vpages = 5, 1024, 3, 20, 40
    r2t = _randint(g, 0, vpages * kv_indices.PAGE, (max_reqs, max_ctx), torch.int32)
    r2t[_randint(g, 0, 8, (max_reqs, max_ctx), torch.int32) == 0] = -1
    req = _perm(g, max_reqs, bs, torch.int64 if req_i64 else torch.int32)
    lens = _randint(g, -10, max_ctx + 300, (bs,), torch.int32)
    out = _randint(g, -100, 100, (bs, max_blocks), torch.int32)  # kept past each request
    kw = {}
    if with_v2p:
        v2p = _perm(g, 4 * vpages, vpages, torch.int64)
        v2p[_randint(g, 0, 5, (vpages,), torch.int32) == 0] = -1  # unmapped pages
        kw = {"v2p": v2p, "page_mult": 24}
    return Case("kv_indices", (r2t, req, lens, out), kw,
                _inplace(kv_indices.kv_indices), mutated=(3,))


def _align_ids(g, topk, invalid):
    ids = _perm(g, 896, topk, torch.int32).reshape(1, topk)
    if invalid:
        ids[0, _perm(g, topk, 3, torch.int64)] = -1  # EP-dropped experts
    return ids


def _kda_weights(g, hv):
    a_log = torch.rand((hv,), generator=g, device=g.device) * 2.0
    return a_log, _randn(g, (hv * 128,), torch.float32, 0.5)


def _kda_packed_case(g, lower_bound):
    bsz, hv, h, slots, k = 3, 4, 2, 5, 128
    qkv = _randn(g, (bsz, 2 * h * k + hv * k + 64))[:, :2 * h * k + hv * k]  # a strided slice
    a, b = _randn(g, (bsz, hv * k)), _randn(g, (bsz, hv), scale=2.0)
    state = _randn(g, (slots, hv, k, k), torch.float32, 0.5)
    indices = torch.tensor([3, -1, 0], dtype=torch.int32, device=g.device)  # one padded
    kw = {} if lower_bound is None else {"lower_bound": lower_bound}
    return Case("kda_packed_decode", (qkv, a, b) + _kda_weights(g, hv) + (state, indices, h),
                kw, lambda *args, **kw: (kda_decode.kda_packed_decode(*args, **kw),),
                mutated=(5,))


def _kda_fused_case(g, varlen):
    """varlen: 2 sequences of 2 and 1 tokens with the gated norm and the lower-bound gate;
    else the static layout (one token a sequence, one padded), no norm."""
    hv, h, slots, k = 4, 2, 4, 128
    dim = 2 * h * k + hv * k
    t = 3 if varlen else 2
    proj = _randn(g, (t, dim + 2 * hv * k + hv + 4))  # q | k | v | a | g_out | b, one GEMM
    qkv, a = proj[:, :dim], proj[:, dim:dim + hv * k]
    g_out, b = proj[:, dim + hv * k:dim + 2 * hv * k], proj[:, dim + 2 * hv * k:][:, :hv]
    conv_state = _randn(g, (slots, 3, dim))
    conv_weight = _randn(g, (dim, 4), scale=0.5)
    state = _randn(g, (slots, hv, k, k), torch.float32, 0.5)
    idx = torch.tensor([2, 0] if varlen else [1, -1], dtype=torch.int32, device=g.device)
    kw = {}
    if varlen:
        kw = {"cu_seqlens": torch.tensor([0, 2, 3], dtype=torch.int32, device=g.device),
              "g_out": g_out, "w_norm": _randn(g, (k,)), "lower_bound": -5.0}
    return Case("kda_fused_decode", (qkv, a, b) + _kda_weights(g, hv)
                + (conv_state, conv_weight, state, idx, h), kw,
                lambda *args, **kw: (kda_decode.kda_fused_decode(*args, **kw),),
                mutated=(5, 7))


def _kda_verify_case(g):
    """2 requests of 3 drafts (one padded), the gated norm, every optional output (records
    of length 4), GVA ratio 2."""
    n, s, hv, h, slots, ring, k = 2, 3, 4, 2, 4, 4, 128
    dim = 2 * h * k + hv * k
    t = n * s
    proj = _randn(g, (t, dim + 2 * hv * k + hv + 4))  # q | k | v | a | g_out | b, one GEMM
    qkv, a = proj[:, :dim], proj[:, dim:dim + hv * k]
    g_out, b = proj[:, dim + hv * k:dim + 2 * hv * k], proj[:, dim + 2 * hv * k:][:, :hv]
    idx = torch.tensor([2, -1], dtype=torch.int32, device=g.device)
    outs = (_randn(g, (slots, s, hv, k, k), torch.float32), _randn(g, (slots, h, ring, k)),
            _randn(g, (slots, hv, ring, k)), _randn(g, (slots, hv, ring, k), torch.float32),
            _randn(g, (slots, hv, ring), torch.float32), _randn(g, (slots, ring, dim)))
    args = ((qkv, a, b) + _kda_weights(g, hv)
            + (_randn(g, (slots, 3, dim)), _randn(g, (dim, 4), scale=0.5),
               _randn(g, (slots, hv, k, k), torch.float32, 0.5), idx, h, s, g_out,
               _randn(g, (k,)), 1e-5, None, -5.0) + outs)
    return Case("kda_verify_chain", args, {},
                lambda *args: (kda_verify.kda_verify_chain(*args),),
                mutated=tuple(range(16, 22)))


def _kda_prefill_case(g, varlen):
    """Varlen (a 5-token and a 70-token sequence: a partial chunk and a chunk boundary) with
    K3's gate, beta logits and the L2 norms in the kernel; or 2 sequences of 37 tokens with
    the log decay given. Initial states, GVA ratio 2."""
    h, hv, k = 2, 4, 128
    bsz, t = (1, 75) if varlen else (2, 37)
    q, kk = _randn(g, (bsz, t, h, k)), _randn(g, (bsz, t, h, k))
    v = _randn(g, (bsz, t, hv, k))
    if varlen:
        gate = _randn(g, (bsz, t, hv, k))
        beta = _randn(g, (bsz, t, hv), scale=2.0)
        cu = torch.tensor([0, 5, 75], dtype=torch.int32, device=g.device)
        a_log, dt_bias = _kda_weights(g, hv)
        flags = (True, True, a_log, dt_bias, -5.0, True)
    else:
        gate = -torch.rand((bsz, t, hv, k), generator=g, device=g.device) * 0.3
        beta = torch.rand((bsz, t, hv), generator=g, device=g.device).to(torch.bfloat16)
        cu = None
        flags = (False, False, None, None, None, False)
    h0 = _randn(g, (2, hv, k, k), torch.float32, 0.1)
    args = (q, kk, v, gate, beta, None, h0, cu) + flags

    def wrapper(q, k, v, g, beta, scale, h0, cu, l2norm, gate_in, a_log, dt_bias, lb, bsig):
        return kda_prefill.kda_chunk_prefill(
            q, k, v, g, beta, scale, h0, cu, use_qk_l2norm_in_kernel=l2norm,
            use_gate_in_kernel=gate_in, A_log=a_log, dt_bias=dt_bias, lower_bound=lb,
            use_beta_sigmoid_in_kernel=bsig)
    return Case("kda_chunk_prefill", args, {}, wrapper)


def _kda_fold_case(g):
    """2 layers, 3 requests (accept 2, a padded one, accept 0), a track slot, the conv
    rollback; records of length 4."""
    layers, slots, hv, h, ring, k = 2, 5, 4, 2, 4, 128
    dim = 2 * h * k + hv * k
    h0 = _randn(g, (layers, slots, hv, k, k), torch.float32, 0.5)
    rawk, rawv = _randn(g, (layers, slots, h, ring, k)), _randn(g, (layers, slots, hv, ring, k))
    gk = -torch.rand((layers, slots, hv, ring, k), generator=g, device=g.device) * 5
    beta = torch.rand((layers, slots, hv, ring), generator=g, device=g.device)
    idx = torch.tensor([3, -1, 0], dtype=torch.int32, device=g.device)
    acc = torch.tensor([2, 3, 0], dtype=torch.int32, device=g.device)
    track = torch.tensor([1, -1, 4], dtype=torch.int32, device=g.device)
    steps = torch.tensor([0, 0, 0], dtype=torch.int32, device=g.device)
    args = (h0, rawk, rawv, gk, beta, idx, acc, track, steps,
            _randn(g, (layers, slots, 3, dim)), _randn(g, (layers, slots, ring, dim)))
    return Case("kda_replayssm_fold", args, {}, _inplace(kda_verify.kda_replayssm_fold),
                mutated=(0, 9))


def _mla_case(g, decode, fp8):
    """3 requests over a cache of 12 pages of 16 rows in random order (12 heads; verify: 3
    drafts), both outputs (out, lse); the FP8 cache's scales and rope values finite."""
    bsz, s, h, ps, pages = 3, 1 if decode else 3, 12, 16, 12
    if fp8:
        cache = _randint(g, 0, 0x7E, (pages, ps, 656), torch.uint8)  # no NaN code
        cache[..., 512:528] = (torch.rand((pages, ps, 4), generator=g, device=g.device)
                               + 0.5).view(torch.uint8)
        cache[..., 528:] = _randn(g, (pages, ps, 64)).view(torch.uint8)
    else:
        cache = _randn(g, (pages, ps, 576))
    bt = _perm(g, pages, pages, torch.int32).view(bsz, 4)
    lengths = torch.tensor([5, 17, 60], dtype=torch.int32, device=g.device)
    if decode:
        q = _randn(g, (bsz, h, 576))
        return Case("mla_decode", (q, cache, bt, lengths), {},
                    lambda *a: mla_attention.mla_decode(*a, return_lse=True))
    q = _randn(g, (bsz, s, h, 576))
    return Case("verify_splitkv", (q, cache, bt, lengths), {"num_splits": 2},
                lambda *a, **kw: mla_attention.verify_splitkv(*a, return_lse=True, **kw))


#: name -> builder(generator) -> Case. The shapes depend only on the name, the values on the
#: generator (the CUDA graph test copies a second draw into the first's tensors).
CASES: Dict[str, Callable[[Any], Case]] = {
    "situ_and_mul": lambda g: Case(
        "situ_and_mul", (_randn(g, (5, 2 * 256), scale=3.0),), {},
        lambda x: (situ.situ_and_mul(x),)),
    "situ_and_mul_f32_no_linear_beta": lambda g: Case(
        "situ_and_mul", (_randn(g, (3, 2 * 128), torch.float32, 3.0),),
        {"linear_beta": None}, lambda x, **kw: (situ.situ_and_mul(x, **kw),)),
    "situ_and_mul_masked_post_quant": lambda g: _situ_quant_case(g, False, False, True),
    "situ_and_mul_masked_post_quant_ue8m0_interleaved": lambda g: _situ_quant_case(
        g, True, True, True),
    "situ_and_mul_masked_post_quant_masked": lambda g: _situ_quant_case(g, False, True, False),
    "mla_output_gate": lambda g: Case(
        "mla_output_gate", (_randn(g, (4, 3, 64)), _randn(g, (4, 3, 64), scale=4.0)), {},
        lambda x, gt: (mla_output_gate.mla_output_gate(x, gt),)),
    "mla_output_gate_fp8": lambda g: Case(
        "mla_output_gate_fp8", (_randn(g, (5, 512))[:, :256], _randn(g, (5, 256), scale=4.0)),
        {}, lambda x, gt: mla_output_gate.mla_output_gate_fp8(x, gt)),
    "concat_mla_k": lambda g: Case(
        "concat_mla_k", (_randn(g, (6, 4, 192)), _randn(g, (6, 4, 256))[..., :128],
                         _randn(g, (6, 1, 64))), {},
        _inplace(concat_mla.concat_mla_k), mutated=(0,)),
    "concat_mla_absorb_q": lambda g: Case(
        "concat_mla_absorb_q", (_randn(g, (6, 4, 576))[..., :512], _randn(g, (6, 4, 64))), {},
        lambda a, b: (concat_mla.concat_mla_absorb_q(a, b),)),
    "mla_kv_scatter": lambda g: Case(
        "mla_kv_scatter", _scatter_inputs(g, 20, 64, False) + (_randn(g, (4, 16, 576)),), {},
        _inplace(mla_kv.mla_kv_scatter), mutated=(3,)),
    "mla_kv_scatter_fp8": lambda g: Case(
        "mla_kv_scatter_fp8",
        _scatter_inputs(g, 20, 64, True) + (_randint(g, 0, 256, (64, 656), torch.uint8),), {},
        _inplace(mla_kv.mla_kv_scatter_fp8), mutated=(3,)),
    "pack_topk_ids": lambda g: Case(
        "pack_topk_ids", (_randint(g, 0, 896, (7, 16), torch.int32),
                          torch.rand((7, 16), generator=g, device=g.device)), {},
        lambda i, w: (pack_topk_ids.pack_topk_ids(i, w),)),
    "pack_topk_ids_odd": lambda g: Case(
        "pack_topk_ids", (_randint(g, 0, 896, (5, 3), torch.int32),
                          torch.randn((5, 3), generator=g, device=g.device)), {},
        lambda i, w: (pack_topk_ids.pack_topk_ids(i, w),)),
    "moe_align_single_token": lambda g: Case(
        "moe_align_single_token", (_align_ids(g, 16, False), 16), {},
        lambda i, b: moe_align.moe_align_single_token(i, b)),
    "moe_align_single_token_invalid": lambda g: Case(
        "moe_align_single_token", (_align_ids(g, 10, True), 64), {},
        lambda i, b: moe_align.moe_align_single_token(i, b)),
    "per_token_group_quant_fp8": lambda g: Case(
        "per_token_group_quant_fp8", (_randn(g, (6, 1024), scale=5.0)[:, :512],), {},
        lambda x: quant.per_token_group_quant_fp8(x)),
    "per_token_group_quant_fp8_ue8m0_colmajor": lambda g: Case(
        "per_token_group_quant_fp8", (_randn(g, (6, 512), scale=5.0),),
        {"ue8m0": True, "column_major_scales": True},
        lambda x, **kw: quant.per_token_group_quant_fp8(x, **kw)),
    "per_token_group_quant_fp8_group64": lambda g: Case(
        "per_token_group_quant_fp8", (_randn(g, (3, 256)),), {"group": 64},
        lambda x, **kw: quant.per_token_group_quant_fp8(x, **kw)),
    "quant_mxfp4": lambda g: Case(
        "quant_mxfp4", (_randn(g, (5, 256), scale=8.0),), {},
        lambda x: quant.quant_mxfp4(x)),
    "kv_indices": lambda g: _kv_indices_case(g, True, False),
    "kv_indices_v2p_req32": lambda g: _kv_indices_case(g, False, True),
    "gpu_tensor_hash": lambda g: Case(
        "gpu_tensor_hash", (_randn(g, (37, 129)),), {}, _hash_wrapper),
    "gpu_tensor_hash_bytes": lambda g: Case(
        "gpu_tensor_hash", (_randint(g, 0, 256, (1001,), torch.uint8),), {}, _hash_wrapper),
    "image_preprocess": lambda g: Case(
        "image_preprocess", (_randint(g, 0, 256, (2, 40, 50, 3), torch.uint8), 28, 42), {},
        lambda im, h, w: (image.image_preprocess(im, h, w),)),
    "moe_fused_gate": lambda g: Case(
        "moe_fused_gate", (_randn(g, (9, 896), torch.float32), _randn(g, (896,), torch.float32),
                           16), {},
        lambda s, b, k: gate_router.moe_fused_gate(s, b, k)),
    "moe_fused_gate_shared_rsf": lambda g: Case(
        "moe_fused_gate", (_randn(g, (3, 256), torch.float32), _randn(g, (256,), torch.float32),
                           8), {"routed_scaling_factor": 2.5, "num_fused_shared_experts": 1,
                                "apply_routed_scaling_factor_on_output": True},
        lambda s, b, k, **kw: gate_router.moe_fused_gate(s, b, k, **kw)),
    "attn_res": lambda g: Case(
        "attn_res", (_randn(g, (5, 1024)), _randn(g, (5, 4, 1024)), _randn(g, (1024,)),
                     _randn(g, (1024,))), {"nvb": 3},
        lambda p, bk, cw, ow, **kw: (attn_res_mod.attn_res(p, bk, cw, ow, **kw),)),
    "attn_res_write_prefix": lambda g: Case(
        "attn_res_write_prefix", (_randn(g, (5, 1024)), _randn(g, (5, 4, 1024)),
                                  _randn(g, (1024,)), _randn(g, (1024,))), {"nvb": 2},
        lambda p, bk, cw, ow, **kw: (attn_res_mod.attn_res(p, bk, cw, ow, write_prefix=True,
                                                           **kw),), mutated=(1,)),
    "kda_packed_decode": lambda g: _kda_packed_case(g, None),
    "kda_packed_decode_lower_bound": lambda g: _kda_packed_case(g, -5.0),
    "kda_fused_decode": lambda g: _kda_fused_case(g, False),
    "kda_fused_decode_varlen_norm": lambda g: _kda_fused_case(g, True),
    "kda_verify_chain": _kda_verify_case,
    "kda_replayssm_fold": _kda_fold_case,
    "kda_chunk_prefill_varlen": lambda g: _kda_prefill_case(g, True),
    "kda_chunk_prefill": lambda g: _kda_prefill_case(g, False),
    "mla_decode": lambda g: _mla_case(g, True, False),
    "mla_decode_fp8": lambda g: _mla_case(g, True, True),
    "verify_splitkv": lambda g: _mla_case(g, False, False),
    "image_preprocess_mean_std": lambda g: Case(
        "image_preprocess", (_randint(g, 0, 256, (1, 30, 20, 3), torch.uint8), 14, 28),
        {"mean": [0.5, 0.25, 0.125], "std": [0.5, 2.0, 0.75]},
        lambda im, h, w, **kw: (image.image_preprocess(im, h, w, **kw),)),
}


def make(name, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    return CASES[name](g)


def clone_args(case):
    """The args with every mutated tensor cloned (strides kept), so two runs start alike."""
    return tuple(a.clone() if i in case.mutated else a for i, a in enumerate(case.args))


def run_op(case, args=None, fn=None):
    """Outputs of the op (or of ``fn(*args)``, the same call compiled or wrapped): its
    results, then the mutated args."""
    args = clone_args(case) if args is None else args
    fn = fn or getattr(torch.ops.kiln, case.op)
    return _tuple(fn(*args, **case.kwargs)) + tuple(args[i] for i in case.mutated)


def run_wrapper(case):
    args = clone_args(case)
    return _tuple(case.wrapper(*args, **case.kwargs)) + tuple(args[i] for i in case.mutated)


def bits(t):
    """The tensor's raw bits as integers (NaN == NaN, -0 != +0)."""
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.view(ints[t.element_size()]) if t.dtype.is_floating_point else t


def assert_same(case, got, want, what):
    if case.valid is not None:
        got, want = case.valid(got, case.args), case.valid(want, case.args)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, expected {len(want)}"
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and a.shape == b.shape, (
            f"{what}: output {i} is {a.dtype} {list(a.shape)}, expected {b.dtype} "
            f"{list(b.shape)}")
        assert a.device == b.device, f"{what}: output {i} on {a.device}, expected {b.device}"
        assert torch.equal(bits(a), bits(b)), f"{what}: output {i} differs"


def pipeline(x, gate, k, k_nope, k_rope, kv_c, k_pe, loc, cache, ids, w):
    """Several ops chained, with torch ops (exact ones) between them."""
    h = torch.ops.kiln.situ_and_mul(x)                          # bf16 [N, D]
    q, s = torch.ops.kiln.per_token_group_quant_fp8(h)          # from the op's output
    g = torch.ops.kiln.mla_output_gate(h, gate)
    gq, gs = torch.ops.kiln.mla_output_gate_fp8(g, gate.neg())
    torch.ops.kiln.concat_mla_k(k, k_nope, k_rope * 2)          # a torch op's output in
    torch.ops.kiln.mla_kv_scatter(kv_c, k_pe, loc, cache)
    packed = torch.ops.kiln.pack_topk_ids(ids, w * 0.5)
    digest = torch.ops.kiln.gpu_tensor_hash(q.view(torch.uint8))
    return h, q, s, g, gq, gs, packed, digest, k[:, :, 100:140].clone()


def pipeline_inputs(device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    kv_c, k_pe, loc = _scatter_inputs(g, 12, 40, False)
    return (_randn(g, (8, 2 * 256), scale=3.0), _randn(g, (8, 256), scale=4.0),
            _randn(g, (5, 4, 192)), _randn(g, (5, 4, 256))[..., :128], _randn(g, (5, 1, 64)),
            kv_c, k_pe, loc, _randn(g, (40, 576)),
            _randint(g, 0, 896, (4, 16), torch.int32),
            torch.rand((4, 16), generator=g, device=device))


PIPELINE_MUTATED = (2, 8)  # k, cache


def run_pipeline(fn, inputs):
    args = tuple(a.clone() if i in PIPELINE_MUTATED else a for i, a in enumerate(inputs))
    return tuple(fn(*args)) + tuple(args[i] for i in PIPELINE_MUTATED)


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

#: The wrappers of kernels_dsl/kimi_k3 that are ops, by op name.
WRAPPERS = {
    "situ_and_mul": situ.situ_and_mul,
    "situ_and_mul_masked_post_quant": situ_quant.situ_and_mul_masked_post_quant,
    "mla_output_gate": mla_output_gate.mla_output_gate,
    "mla_output_gate_fp8": mla_output_gate.mla_output_gate_fp8,
    "concat_mla_k": concat_mla.concat_mla_k,
    "concat_mla_absorb_q": concat_mla.concat_mla_absorb_q,
    "mla_kv_scatter": mla_kv.mla_kv_scatter,
    "mla_kv_scatter_fp8": mla_kv.mla_kv_scatter_fp8,
    "pack_topk_ids": pack_topk_ids.pack_topk_ids,
    "moe_align_single_token": moe_align.moe_align_single_token,
    "per_token_group_quant_fp8": quant.per_token_group_quant_fp8,
    "quant_mxfp4": quant.quant_mxfp4,
    "kv_indices": kv_indices.kv_indices,
    "gpu_tensor_hash": tensor_hash.gpu_tensor_hash,
    "image_preprocess": image.image_preprocess,
    "moe_fused_gate": gate_router.moe_fused_gate,
    "attn_res": attn_res_mod.attn_res,
    "attn_res_write_prefix": attn_res_mod.attn_res,
    "kda_packed_decode": kda_decode.kda_packed_decode,
    "kda_fused_decode": kda_decode.kda_fused_decode,
    "kda_verify_chain": kda_verify.kda_verify_chain,
    "kda_replayssm_fold": kda_verify.kda_replayssm_fold,
    "kda_chunk_prefill": kda_prefill.kda_chunk_prefill,
    "mla_decode": mla_attention.mla_decode,
    "verify_splitkv": mla_attention.verify_splitkv,
}


def test_every_wrapper_has_an_op_and_a_case():
    assert set(kops.OPS) == set(WRAPPERS)
    assert {make(n, "cpu", 0).op for n in CASES} == set(WRAPPERS)
    for name in WRAPPERS:
        assert getattr(torch.ops.kiln, name).default is not None


@pytest.mark.parametrize("name", list(CASES))
def test_eager_op_equals_wrapper(name):
    case = make(name, "cuda", 1)
    got = run_op(case)
    want = run_wrapper(case)
    torch.cuda.synchronize()
    assert_same(case, got, want, f"{name}: torch.ops.kiln.{case.op} vs the wrapper")


@pytest.mark.parametrize("name", [n for n in CASES if make(n, "cpu", 0).defined])
def test_opcheck(name):
    case = make(name, "cuda", 2)
    torch.library.opcheck(getattr(torch.ops.kiln, case.op).default, case.args, case.kwargs)


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_op_equals_eager(name):
    torch._dynamo.reset()
    case = make(name, "cuda", 3)
    op = getattr(torch.ops.kiln, case.op)

    def fn(*args, **kwargs):
        return op(*args, **kwargs)

    got = run_op(case, fn=torch.compile(fn, fullgraph=True))
    want = run_op(case)
    torch.cuda.synchronize()
    assert_same(case, got, want, f"{name}: torch.compile(fullgraph=True) vs eager")


def test_compiled_pipeline_equals_eager():
    torch._dynamo.reset()
    compiled = torch.compile(pipeline, fullgraph=True)
    for seed in (4, 5):  # the second call reuses the compiled graph on new values
        inputs = pipeline_inputs("cuda", seed)
        got = run_pipeline(compiled, inputs)
        want = run_pipeline(pipeline, inputs)
        torch.cuda.synchronize()
        assert len(got) == len(want)
        for i, (a, b) in enumerate(zip(got, want)):
            assert a.dtype == b.dtype and a.shape == b.shape, f"output {i}"
            assert torch.equal(bits(a), bits(b)), f"seed {seed}: output {i} differs"


def _capture(fn):
    """Warm up ``fn`` (JIT compile, module load) on a side stream, then capture it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = fn()
    return graph, outs


def _copy_into(static, fresh):
    for s, f in zip(static, fresh):
        if isinstance(s, torch.Tensor):
            s.copy_(f)
        else:
            assert s == f  # scalars are part of the captured call


@pytest.mark.parametrize("name", list(CASES))
def test_cuda_graph_replay_with_new_inputs(name):
    case = make(name, "cuda", 6)
    static = case.args
    op = getattr(torch.ops.kiln, case.op)
    graph, outs = _capture(lambda: _tuple(op(*static, **case.kwargs)))
    fresh = make(name, "cuda", 7)
    want = run_op(fresh)  # eager on the new values (mutated args cloned)
    _copy_into(static, fresh.args)
    _copy_into([case.kwargs[k] for k in sorted(case.kwargs)],
               [fresh.kwargs[k] for k in sorted(fresh.kwargs)])  # v2p is a keyword
    graph.replay()
    torch.cuda.synchronize()
    got = tuple(outs) + tuple(static[i] for i in case.mutated)
    assert_same(fresh, got, want, f"{name}: CUDA graph replay on new inputs vs eager")


def test_cuda_graph_pipeline_replay_with_new_inputs():
    static = pipeline_inputs("cuda", 8)
    graph, outs = _capture(lambda: pipeline(*static))
    for seed in (9, 10):
        fresh = pipeline_inputs("cuda", seed)
        want = run_pipeline(pipeline, fresh)
        _copy_into(static, fresh)
        graph.replay()
        torch.cuda.synchronize()
        got = tuple(outs) + tuple(static[i] for i in PIPELINE_MUTATED)
        for i, (a, b) in enumerate(zip(got, want)):
            assert torch.equal(bits(a), bits(b)), f"seed {seed}: output {i} differs"


def test_wrapper_errors_pass_through():
    x = torch.zeros(4, 10, dtype=torch.float16, device="cuda")
    with pytest.raises(TypeError, match="situ_and_mul: input must be bfloat16 or float32"):
        torch.ops.kiln.situ_and_mul(x)
    k = torch.zeros(2, 3, 192, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match="k_nope must have shape"):
        torch.ops.kiln.concat_mla_k(k, k[..., :100], k[:, :1, :64])
