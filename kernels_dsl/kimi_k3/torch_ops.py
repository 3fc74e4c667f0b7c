"""The Kimi K3 kernels (``kernels_dsl/kimi_k3``) as torch operators.

``import kernels_dsl.kimi_k3.torch_ops`` registers one op per wrapper in the namespace
``kiln`` with ``kiln.torch_library.op`` (``torch.library`` underneath), each with a fake
(meta) implementation, so the ops trace under ``torch.compile(fullgraph=True)`` and can be
captured in CUDA graphs::

    import kernels_dsl.kimi_k3.torch_ops  # noqa: F401
    out = torch.ops.kiln.situ_and_mul(x)                      # bf16 [N, D]
    torch.ops.kiln.mla_kv_scatter(kv_c, k_pe, loc, cache)     # writes cache in place

Each op calls the wrapper of the same name (every check of the wrapper applies, raised
before any launch) the first time it sees a launch key (the dtypes, shapes, strides, devices
and alignment of its tensors, the values of its other arguments); later calls with that key
replay the wrapper's recorded launches (``kiln.torch_library``: its host time is torch's own
operator cost, the allocations and the launches). Ops whose wrapper takes optional ``out``
tensors allocate their outputs (an op's result must not alias its inputs); ops that write
into a given tensor (``concat_mla_k``, ``mla_kv_scatter``, ``mla_kv_scatter_fp8``,
``kv_indices``, ``attn_res_write_prefix``'s bank, the KDA decodes' SSM and conv states,
the KDA verify chain's optional per-step states and records, the ReplaySSM fold's checkpoint
and conv state) declare it in ``mutates_args``. ``mla_decode`` and ``verify_splitkv`` return
(out, lse).
``gpu_tensor_hash`` returns the hash as an int64 [1] tensor (the wrapper's ``.item()`` would
synchronize, which a CUDA graph cannot capture). Output shapes depend only on input shapes
and arguments, never on data.

The ops run wherever the kernels run: on CUDA tensors, and on CPU tensors when the kernels
are in interpreter mode (``KILN_INTERPRET=1``).

The collectives (``allreduce``, ``sp_reduce_scatter``, ``sp_all_gather``,
``allreduce_rmsnorm``, ``finalize_push_norm``; docs/kernels/collectives.md) take the
symmetric workspace as three arguments, ``symmetric_workspace(buf)`` of a
``kiln.distributed.SymmetricBuffer``: its uint8 [nbytes] view ``workspace``, which they
declare mutated (every call reads and writes it, so ``torch.compile`` keeps them in order and
never merges two), the peer table ``peers`` (int64 [world]) and ``rank``::

    ws = torch_ops.symmetric_workspace(buf)                  # once per buffer
    out = torch.ops.kiln.allreduce(x, *ws)                   # out of place, + residual=
    out, normed = torch.ops.kiln.allreduce_rmsnorm(x, *ws, weight, eps)

Their results are fresh tensors: ``allreduce`` and ``allreduce_rmsnorm`` never write x (the
wrappers' in-place default). ``COLLECTIVE_OPS`` lists them (``OPS`` the others). Under
``torch.compile`` use a backend that re-inplaces the workspace's mutation (inductor, the
default); the ops refuse a copy of the workspace. In JIT mode warm them up as the wrappers:
``with allreduce.compile_only(): torch.ops.kiln.allreduce(x, *ws)`` on every rank, meet,
then call (inside it the ops run their wrappers, which launch nothing, and no launch plan is
recorded or replayed; a ``torch.compile``d function called inside it is compiled).

Adding a kernel: write its op and fake with ``@register(name, fake, mutates_args)``
(below), as done for the others; ``OPS`` lists what is registered. A collective:
``@register_collective(name, fake)`` with ``workspace, peers, rank`` in its signature, its
body passing ``symmetric_view(name, workspace, peers, rank)`` to the wrapper.
"""

import math
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple

try:
    import torch
except ImportError as e:  # pragma: no cover - exercised by the CPU tests without torch
    raise ImportError("kernels_dsl.kimi_k3.torch_ops registers torch custom ops and needs "
                      "torch (`pip install torch`); the kernels and kiln work without it") from e

from kiln import torch_library

from . import _launch as L
from . import allreduce as allreduce_mod
from . import attn_res as attn_res_mod
from . import (
    concat_mla,
    image,
    kda_decode,
    kda_prefill,
    kda_verify,
    mla_attention,
    mla_kv,
    moe_align,
    quant,
    situ,
    situ_quant,
    tensor_hash,
)
from . import gemm_collectives as gemm_mod
from . import kv_indices as kv_indices_mod
from . import mla_output_gate as gate_mod
from . import moe_fused_gate as gate_router
from . import pack_topk_ids as pack_mod

NAMESPACE = "kiln"

#: name -> the registered op (its ``torch._ops.OpOverload``), in registration order.
OPS: Dict[str, Any] = {}


def register(name: str, fake: Callable[..., Any],
             mutates_args: Sequence[str] = ()) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: registers ``fn`` as ``torch.ops.kiln.<name>`` (kiln.torch_library.op)
    and records it in ``OPS``."""

    def wrap(fn: Callable[..., Any]) -> Any:
        op = torch_library.op(NAMESPACE, name, fake, mutates_args)(fn)
        OPS[name] = op
        return op

    return wrap


def _check(cond: bool, exc: type, msg: str) -> None:
    if not cond:
        raise exc(msg)


def _rank(op: str, what: str, t: torch.Tensor, ndim: int) -> None:
    _check(t.dim() == ndim, ValueError, f"{op}: {what} must be {ndim}-D, got shape "
                                        f"{list(t.shape)}")


# ---------------------------------------------------------------------------
# SiTU and SiTU masked FP8 post-quant (docs/kernels/situ.md)
# ---------------------------------------------------------------------------

def _situ_and_mul_fake(input: torch.Tensor, beta: float = 4.0,
                       linear_beta: Optional[float] = 25.0) -> torch.Tensor:
    _rank("situ_and_mul", "input", input, 2)
    return input.new_empty((input.shape[0], input.shape[1] // 2), dtype=torch.bfloat16)


@register("situ_and_mul", _situ_and_mul_fake)
def situ_and_mul(input: torch.Tensor, beta: float = 4.0,
                 linear_beta: Optional[float] = 25.0) -> torch.Tensor:
    """SiTU(g) * softcap(u) of input bf16/fp32 [N, 2D] -> bf16 [N, D] (situ.situ_and_mul)."""
    return situ.situ_and_mul(input, None, beta, linear_beta)


def _situ_quant_fake(input: torch.Tensor, masked_m: torch.Tensor, scale_ue8m0: bool = False,
                     interleaved: bool = False, beta: float = 4.0, linear_beta: float = 25.0
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("situ_and_mul_masked_post_quant", "input", input, 3)
    e, t_pad, n = input.shape[0], input.shape[1], input.shape[2] // 2
    s_shape = situ_quant._scale_shape(e, t_pad, n, scale_ue8m0)
    return (input.new_empty((e, t_pad, n), dtype=torch.float8_e4m3fn),
            input.new_empty(s_shape, dtype=torch.int32 if scale_ue8m0 else torch.float32))


@register("situ_and_mul_masked_post_quant", _situ_quant_fake)
def situ_and_mul_masked_post_quant(input: torch.Tensor, masked_m: torch.Tensor,
                                   scale_ue8m0: bool = False, interleaved: bool = False,
                                   beta: float = 4.0, linear_beta: float = 25.0
                                   ) -> Tuple[torch.Tensor, torch.Tensor]:
    """(output fp8 e4m3 [E, T_pad, N], output_scale) of input bf16 [E, T_pad, 2N]; rows
    t >= masked_m[e] are left unwritten (their values are unspecified)."""
    q, s = situ_quant.situ_and_mul_masked_post_quant(input, masked_m, None, None, scale_ue8m0,
                                                     interleaved, beta, linear_beta)
    return q, s


# ---------------------------------------------------------------------------
# MLA output gate, bf16 and FP8 (docs/kernels/mla_output_gate.md)
# ---------------------------------------------------------------------------

def _gate_fake(x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape, dtype=torch.bfloat16)


@register("mla_output_gate", _gate_fake)
def mla_output_gate(x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """``x * sigmoid(gate)`` (bf16, bit-exact with torch), a new contiguous tensor."""
    return gate_mod.mla_output_gate(x, gate)


def _gate_fp8_fake(x: torch.Tensor, gate: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("mla_output_gate_fp8", "x", x, 2)
    t, h = x.shape
    return (x.new_empty((t, h), dtype=torch.float8_e4m3fn),
            x.new_empty((t,), dtype=torch.float32))


@register("mla_output_gate_fp8", _gate_fp8_fake)
def mla_output_gate_fp8(x: torch.Tensor, gate: torch.Tensor
                        ) -> Tuple[torch.Tensor, torch.Tensor]:
    """(q fp8 e4m3 [T, H], s fp32 [T]): the gated row quantized per token."""
    q, s = gate_mod.mla_output_gate_fp8(x, gate)
    return q, s


# ---------------------------------------------------------------------------
# MLA concatenations (docs/kernels/mla_cache.md)
# ---------------------------------------------------------------------------

def _concat_k_fake(k: torch.Tensor, k_nope: torch.Tensor, k_rope: torch.Tensor) -> None:
    return None


@register("concat_mla_k", _concat_k_fake, mutates_args=("k",))
def concat_mla_k(k: torch.Tensor, k_nope: torch.Tensor, k_rope: torch.Tensor) -> None:
    """In place: k [T, H, 192] = cat(k_nope [T, H, 128], k_rope [T, 1, 64] over heads)."""
    concat_mla.concat_mla_k(k, k_nope, k_rope)


def _absorb_q_fake(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _rank("concat_mla_absorb_q", "a", a, 3)
    _rank("concat_mla_absorb_q", "b", b, 3)
    return a.new_empty((a.shape[0], a.shape[1], a.shape[2] + b.shape[2]),
                       dtype=torch.bfloat16)


@register("concat_mla_absorb_q", _absorb_q_fake)
def concat_mla_absorb_q(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``cat(a, b, dim=-1)`` of bf16 [d0, d1, A] and [d0, d1, B], a new contiguous tensor."""
    return concat_mla.concat_mla_absorb_q(a, b)


# ---------------------------------------------------------------------------
# MLA latent KV cache scatter, BF16 and FP8 layouts (docs/kernels/mla_cache.md)
# ---------------------------------------------------------------------------

def _scatter_fake(kv_c: torch.Tensor, k_pe: torch.Tensor, loc: torch.Tensor,
                  cache: torch.Tensor) -> None:
    return None


@register("mla_kv_scatter", _scatter_fake, mutates_args=("cache",))
def mla_kv_scatter(kv_c: torch.Tensor, k_pe: torch.Tensor, loc: torch.Tensor,
                   cache: torch.Tensor) -> None:
    """In place: cache[loc[t]] = cat(kv_c[t], k_pe[t]) (bf16 layout; loc < 0 skips)."""
    mla_kv.mla_kv_scatter(kv_c, k_pe, loc, cache)


@register("mla_kv_scatter_fp8", _scatter_fake, mutates_args=("cache",))
def mla_kv_scatter_fp8(kv_c: torch.Tensor, k_pe: torch.Tensor, loc: torch.Tensor,
                       cache: torch.Tensor) -> None:
    """In place: the 656-byte FP8 row cache[loc[t]] (e4m3 latent, 4 scales, bf16 rope)."""
    mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, loc, cache)


# ---------------------------------------------------------------------------
# MoE routing helpers (docs/kernels/moe_routing.md)
# ---------------------------------------------------------------------------

def _pack_fake(topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    _rank("pack_topk_ids", "topk_ids", topk_ids, 2)
    return topk_ids.new_empty(topk_ids.shape, dtype=torch.int32)


@register("pack_topk_ids", _pack_fake)
def pack_topk_ids(topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    """int32 [T, K]: (id << 16) | bf16 bits of the weight."""
    return pack_mod.pack_topk_ids(topk_ids, topk_weights)


def _align_fake(topk_ids: torch.Tensor, block_size: int
                ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _rank("moe_align_single_token", "topk_ids", topk_ids, 2)
    topk = topk_ids.shape[1]
    return (topk_ids.new_empty((topk * block_size,), dtype=torch.int32),
            topk_ids.new_empty((topk,), dtype=torch.int32),
            topk_ids.new_empty((1,), dtype=torch.int32))


@register("moe_align_single_token", _align_fake)
def moe_align_single_token(topk_ids: torch.Tensor, block_size: int
                           ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(sorted_ids [topk * block_size], expert_ids [topk], num_tokens_post_padded [1]),
    int32, for topk_ids int32 [1, topk]."""
    s, e, n = moe_align.moe_align_single_token(topk_ids, block_size)
    return s, e, n


# ---------------------------------------------------------------------------
# FP8 / FP4 quantization (docs/kernels/quant.md)
# ---------------------------------------------------------------------------

def _group_quant_fake(x: torch.Tensor, group: int = 128, ue8m0: bool = False,
                      column_major_scales: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("per_token_group_quant_fp8", "x", x, 2)
    t, d = x.shape
    ng = d // group
    q = x.new_empty((t, d), dtype=torch.float8_e4m3fn)
    if column_major_scales:  # as the wrapper allocates it: [ng, T] storage seen as [T, ng]
        return q, x.new_empty((ng, t), dtype=torch.float32).t()
    return q, x.new_empty((t, ng), dtype=torch.float32)


@register("per_token_group_quant_fp8", _group_quant_fake)
def per_token_group_quant_fp8(x: torch.Tensor, group: int = 128, ue8m0: bool = False,
                              column_major_scales: bool = False
                              ) -> Tuple[torch.Tensor, torch.Tensor]:
    """(q fp8 e4m3 [T, D], s fp32 [T, D/group]; column-major storage if asked)."""
    q, s = quant.per_token_group_quant_fp8(x, group, ue8m0, column_major_scales)
    return q, s


def _mxfp4_fake(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("quant_mxfp4", "x", x, 2)
    r, d = x.shape
    return (x.new_empty((r, d // 2), dtype=torch.uint8),
            x.new_empty((r, d // 32), dtype=torch.uint8))


@register("quant_mxfp4", _mxfp4_fake)
def quant_mxfp4(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(packed uint8 [R, D/2] E2M1 pairs, scale uint8 [R, D/32] E8M0) of x bf16 [R, D]."""
    p, s = quant.quant_mxfp4(x)
    return p, s


# ---------------------------------------------------------------------------
# FlashMLA block table (docs/kernels/mla_cache.md)
# ---------------------------------------------------------------------------

def _kv_indices_fake(req_to_token: torch.Tensor, req_pool_indices: torch.Tensor,
                     page_kernel_lens: torch.Tensor, kv_indices: torch.Tensor,
                     kv_start_idx: Optional[torch.Tensor] = None,
                     v2p: Optional[torch.Tensor] = None, page_size: int = kv_indices_mod.PAGE,
                     page_mult: int = 1) -> None:
    return None


@register("kv_indices", _kv_indices_fake, mutates_args=("kv_indices",))
def kv_indices(req_to_token: torch.Tensor, req_pool_indices: torch.Tensor,
               page_kernel_lens: torch.Tensor, kv_indices: torch.Tensor,
               kv_start_idx: Optional[torch.Tensor] = None, v2p: Optional[torch.Tensor] = None,
               page_size: int = kv_indices_mod.PAGE, page_mult: int = 1) -> None:
    """In place: kv_indices int32 [bs, max_blocks] (entries past a request's pages keep their
    values)."""
    kv_indices_mod.kv_indices(req_to_token, req_pool_indices, page_kernel_lens, kv_indices,
                              kv_start_idx, v2p, page_size, page_mult)


# ---------------------------------------------------------------------------
# Tensor content hash (docs/kernels/tensor_hash.md)
# ---------------------------------------------------------------------------

def _hash_fake(t: torch.Tensor) -> torch.Tensor:
    return t.new_empty((1,), dtype=torch.int64)


@register("gpu_tensor_hash", _hash_fake)
def gpu_tensor_hash(t: torch.Tensor) -> torch.Tensor:
    """The 64-bit hash of the contiguous tensor's bytes as int64 [1] (the bits of
    ``tensor_hash.gpu_tensor_hash(t)``: ``int(h) & (2**64 - 1)`` is that value); computed on
    the tensor's device without a host synchronization. The wrapper's checks and launches,
    minus its final ``.item()``."""
    op = "gpu_tensor_hash"
    L.check_contiguous(op, "t", t)
    interpreted = tensor_hash.tensor_hash_partials_kernel.interpret
    if t.device.type != "cuda" and not interpreted:
        raise ValueError(f"{op}: t must be a CUDA tensor, got device {t.device}")
    nbytes = int(t.numel()) * int(t.element_size())
    if nbytes == 0:
        return torch.zeros(1, dtype=torch.int64, device=t.device)  # the documented 0
    L.check_int32_extent(op, "nbytes", nbytes + 4 * tensor_hash.SETTINGS.tile)
    x = t.reshape(-1).view(torch.uint8)
    partials = torch.empty(tensor_hash.num_partials(nbytes), dtype=torch.int64, device=t.device)
    out = torch.empty(1, dtype=torch.int64, device=t.device)
    tensor_hash.launch_hash(x, nbytes, partials, out)
    return out


# ---------------------------------------------------------------------------
# Image preprocessing (docs/kernels/image.md)
# ---------------------------------------------------------------------------

def _image_fake(images: torch.Tensor, out_h: int, out_w: int,
                mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
                patch: int = image.PATCH) -> torch.Tensor:
    _rank("image_preprocess", "images", images, 4)
    _check(patch > 0 and out_h % patch == 0 and out_w % patch == 0, ValueError,
           f"image_preprocess: out_h and out_w must be positive multiples of the patch size "
           f"{patch}, got out_h = {out_h}, out_w = {out_w}")
    return images.new_empty((images.shape[0], (out_h // patch) * (out_w // patch),
                             3 * patch * patch), dtype=torch.bfloat16)


@register("image_preprocess", _image_fake)
def image_preprocess(images: torch.Tensor, out_h: int, out_w: int,
                     mean: Optional[Sequence[float]] = None,
                     std: Optional[Sequence[float]] = None,
                     patch: int = image.PATCH) -> torch.Tensor:
    """uint8 [N, H, W, 3] -> bf16 [N, (out_h/patch)*(out_w/patch), 3*patch*patch]; mean and
    std default (None) to CLIP's (a schema default cannot be a list)."""
    return image.image_preprocess(images, out_h, out_w,
                                  image.CLIP_MEAN if mean is None else mean,
                                  image.CLIP_STD if std is None else std, patch)


# ---------------------------------------------------------------------------
# MoE router epilogue and attention residuals (docs/kernels/moe_routing.md, attn_res.md)
# ---------------------------------------------------------------------------

def _moe_fused_gate_fake(scores: torch.Tensor, bias: torch.Tensor, topk: int,
                         renormalize: bool = True, routed_scaling_factor: float = 1.0,
                         apply_routed_scaling_factor_on_output: bool = False,
                         num_fused_shared_experts: int = 0, fast_sigmoid: bool = False
                         ) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("moe_fused_gate", "scores", scores, 2)
    k = topk + num_fused_shared_experts
    return (scores.new_empty((scores.shape[0], k), dtype=torch.float32),
            scores.new_empty((scores.shape[0], k), dtype=torch.int32))


@register("moe_fused_gate", _moe_fused_gate_fake)
def moe_fused_gate(scores: torch.Tensor, bias: torch.Tensor, topk: int,
                   renormalize: bool = True, routed_scaling_factor: float = 1.0,
                   apply_routed_scaling_factor_on_output: bool = False,
                   num_fused_shared_experts: int = 0, fast_sigmoid: bool = False
                   ) -> Tuple[torch.Tensor, torch.Tensor]:
    """(weights fp32 [M, K'], ids int32 [M, K']) of the sigmoid router
    (moe_fused_gate.moe_fused_gate)."""
    return gate_router.moe_fused_gate(scores, bias, topk, renormalize, routed_scaling_factor,
                                      apply_routed_scaling_factor_on_output,
                                      num_fused_shared_experts, fast_sigmoid)


def _attn_res_fake(prefix_sum: torch.Tensor, bank: torch.Tensor, cw: torch.Tensor,
                   ow: torch.Tensor, nvb: int = 1, eps: float = 1e-6) -> torch.Tensor:
    _rank("attn_res", "prefix_sum", prefix_sum, 2)
    return prefix_sum.new_empty(prefix_sum.shape, dtype=torch.bfloat16)


@register("attn_res", _attn_res_fake)
def attn_res(prefix_sum: torch.Tensor, bank: torch.Tensor, cw: torch.Tensor, ow: torch.Tensor,
             nvb: int = 1, eps: float = 1e-6) -> torch.Tensor:
    """bf16 [T, H]: depth attention over nvb bank rows and the prefix, then RMSNorm
    (attn_res.attn_res)."""
    return attn_res_mod.attn_res(prefix_sum, bank, cw, ow, None, nvb, eps)


@register("attn_res_write_prefix", _attn_res_fake, mutates_args=("bank",))
def attn_res_write_prefix(prefix_sum: torch.Tensor, bank: torch.Tensor, cw: torch.Tensor,
                          ow: torch.Tensor, nvb: int = 1, eps: float = 1e-6) -> torch.Tensor:
    """attn_res that also copies the prefix row into bank[:, nvb, :] (bit-exact)."""
    return attn_res_mod.attn_res(prefix_sum, bank, cw, ow, None, nvb, eps, write_prefix=True)


# ---------------------------------------------------------------------------
# KDA decode (docs/kernels/kda.md)
# ---------------------------------------------------------------------------

def _kda_packed_fake(mixed_qkv: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                     A_log: torch.Tensor, dt_bias: torch.Tensor, state: torch.Tensor,
                     indices: torch.Tensor, num_q_heads: int, scale: Optional[float] = None,
                     lower_bound: Optional[float] = None) -> torch.Tensor:
    _rank("kda_packed_decode", "b", b, 2)
    return mixed_qkv.new_empty((b.shape[0], b.shape[1], kda_decode.HEAD_DIM),
                               dtype=torch.bfloat16)


@register("kda_packed_decode", _kda_packed_fake, mutates_args=("state",))
def kda_packed_decode(mixed_qkv: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                      A_log: torch.Tensor, dt_bias: torch.Tensor, state: torch.Tensor,
                      indices: torch.Tensor, num_q_heads: int, scale: Optional[float] = None,
                      lower_bound: Optional[float] = None) -> torch.Tensor:
    """out bf16 [B, HV, 128] of one KDA decode step on post-conv inputs; state [slots, HV,
    128, 128] updated in place at the slots ``indices`` (< 0: padded, zeros, untouched);
    lower_bound None: the softplus gate (kda_decode.kda_packed_decode)."""
    return kda_decode.kda_packed_decode(mixed_qkv, a, b, A_log, dt_bias, state, indices,
                                        num_q_heads, scale, lower_bound)


def _kda_fused_fake(mixed_qkv: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                    A_log: torch.Tensor, dt_bias: torch.Tensor, conv_state: torch.Tensor,
                    conv_weight: torch.Tensor, state: torch.Tensor,
                    ssm_state_indices: torch.Tensor, num_q_heads: int,
                    cu_seqlens: Optional[torch.Tensor] = None,
                    g_out: Optional[torch.Tensor] = None, w_norm: Optional[torch.Tensor] = None,
                    eps: float = 1e-5, scale: Optional[float] = None,
                    lower_bound: Optional[float] = None) -> torch.Tensor:
    _rank("kda_fused_decode", "b", b, 2)
    return mixed_qkv.new_empty((b.shape[0], b.shape[1], kda_decode.HEAD_DIM),
                               dtype=torch.bfloat16)


@register("kda_fused_decode", _kda_fused_fake, mutates_args=("conv_state", "state"))
def kda_fused_decode(mixed_qkv: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                     A_log: torch.Tensor, dt_bias: torch.Tensor, conv_state: torch.Tensor,
                     conv_weight: torch.Tensor, state: torch.Tensor,
                     ssm_state_indices: torch.Tensor, num_q_heads: int,
                     cu_seqlens: Optional[torch.Tensor] = None,
                     g_out: Optional[torch.Tensor] = None, w_norm: Optional[torch.Tensor] = None,
                     eps: float = 1e-5, scale: Optional[float] = None,
                     lower_bound: Optional[float] = None) -> torch.Tensor:
    """out bf16 [T, HV, 128]: the conv update (conv_state in place) + gate + recurrence
    (state in place) + the gated RMSNorm with g_out and w_norm, over cu_seqlens or one token
    a sequence (kda_decode.kda_fused_decode); rows of no sequence are not written."""
    return kda_decode.kda_fused_decode(mixed_qkv, a, b, A_log, dt_bias, conv_state,
                                       conv_weight, state, ssm_state_indices, num_q_heads,
                                       cu_seqlens, g_out, w_norm, eps, scale, lower_bound)


# ---------------------------------------------------------------------------
# KDA verify chain and ReplaySSM fold (docs/kernels/kda.md)
# ---------------------------------------------------------------------------

def _kda_verify_fake(mixed_qkv: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                     A_log: torch.Tensor, dt_bias: torch.Tensor, conv_state: torch.Tensor,
                     conv_weight: torch.Tensor, state: torch.Tensor,
                     ssm_state_indices: torch.Tensor, num_q_heads: int, num_steps: int,
                     g_out: Optional[torch.Tensor] = None, w_norm: Optional[torch.Tensor] = None,
                     eps: float = 1e-5, scale: Optional[float] = None,
                     lower_bound: Optional[float] = None,
                     intermediate_states: Optional[torch.Tensor] = None,
                     rawk: Optional[torch.Tensor] = None, rawv: Optional[torch.Tensor] = None,
                     gk: Optional[torch.Tensor] = None, beta: Optional[torch.Tensor] = None,
                     conv_records: Optional[torch.Tensor] = None) -> torch.Tensor:
    _rank("kda_verify_chain", "b", b, 2)
    return mixed_qkv.new_empty((b.shape[0], b.shape[1], kda_decode.HEAD_DIM),
                               dtype=torch.bfloat16)


@register("kda_verify_chain", _kda_verify_fake,
          mutates_args=("intermediate_states", "rawk", "rawv", "gk", "beta", "conv_records"))
def kda_verify_chain(mixed_qkv: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                     A_log: torch.Tensor, dt_bias: torch.Tensor, conv_state: torch.Tensor,
                     conv_weight: torch.Tensor, state: torch.Tensor,
                     ssm_state_indices: torch.Tensor, num_q_heads: int, num_steps: int,
                     g_out: Optional[torch.Tensor] = None, w_norm: Optional[torch.Tensor] = None,
                     eps: float = 1e-5, scale: Optional[float] = None,
                     lower_bound: Optional[float] = None,
                     intermediate_states: Optional[torch.Tensor] = None,
                     rawk: Optional[torch.Tensor] = None, rawv: Optional[torch.Tensor] = None,
                     gk: Optional[torch.Tensor] = None, beta: Optional[torch.Tensor] = None,
                     conv_records: Optional[torch.Tensor] = None) -> torch.Tensor:
    """bf16 [N S, HV, 128]: the MTP verify chain of N requests of S = num_steps drafts; the
    committed states are read, the optional per-step states and records written
    (kda_verify.kda_verify_chain)."""
    return kda_verify.kda_verify_chain(mixed_qkv, a, b, A_log, dt_bias, conv_state,
                                       conv_weight, state, ssm_state_indices, num_q_heads,
                                       num_steps, g_out, w_norm, eps, scale, lower_bound,
                                       intermediate_states, rawk, rawv, gk, beta, conv_records)


def _kda_fold_fake(h0: torch.Tensor, rawk: torch.Tensor, rawv: torch.Tensor,
                   gk: torch.Tensor, beta: torch.Tensor, indices: torch.Tensor,
                   accept_len: torch.Tensor, track_indices: Optional[torch.Tensor] = None,
                   steps_to_track: Optional[torch.Tensor] = None,
                   conv_state: Optional[torch.Tensor] = None,
                   conv_records: Optional[torch.Tensor] = None) -> None:
    return None


@register("kda_replayssm_fold", _kda_fold_fake, mutates_args=("h0", "conv_state"))
def kda_replayssm_fold(h0: torch.Tensor, rawk: torch.Tensor, rawv: torch.Tensor,
                       gk: torch.Tensor, beta: torch.Tensor, indices: torch.Tensor,
                       accept_len: torch.Tensor, track_indices: Optional[torch.Tensor] = None,
                       steps_to_track: Optional[torch.Tensor] = None,
                       conv_state: Optional[torch.Tensor] = None,
                       conv_records: Optional[torch.Tensor] = None) -> None:
    """In place: the accepted steps replayed into the checkpoint h0 [layers, slots, HV, 128,
    128] of every layer (and the conv state rolled back) (kda_verify.kda_replayssm_fold)."""
    kda_verify.kda_replayssm_fold(h0, rawk, rawv, gk, beta, indices, accept_len,
                                  track_indices, steps_to_track, conv_state, conv_records)


def _kda_prefill_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                      beta: torch.Tensor, scale: Optional[float] = None,
                      initial_state: Optional[torch.Tensor] = None,
                      cu_seqlens: Optional[torch.Tensor] = None,
                      use_qk_l2norm_in_kernel: bool = False, use_gate_in_kernel: bool = False,
                      A_log: Optional[torch.Tensor] = None,
                      dt_bias: Optional[torch.Tensor] = None,
                      lower_bound: Optional[float] = None,
                      use_beta_sigmoid_in_kernel: bool = False
                      ) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("kda_chunk_prefill", "v", v, 4)
    n = v.shape[0] if cu_seqlens is None else cu_seqlens.shape[0] - 1
    head = kda_prefill.HEAD_DIM
    return (v.new_empty(v.shape, dtype=torch.bfloat16),
            v.new_empty((n, v.shape[2], head, head), dtype=torch.float32))


@register("kda_chunk_prefill", _kda_prefill_fake)
def kda_chunk_prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                      beta: torch.Tensor, scale: Optional[float] = None,
                      initial_state: Optional[torch.Tensor] = None,
                      cu_seqlens: Optional[torch.Tensor] = None,
                      use_qk_l2norm_in_kernel: bool = False, use_gate_in_kernel: bool = False,
                      A_log: Optional[torch.Tensor] = None,
                      dt_bias: Optional[torch.Tensor] = None,
                      lower_bound: Optional[float] = None,
                      use_beta_sigmoid_in_kernel: bool = False
                      ) -> Tuple[torch.Tensor, torch.Tensor]:
    """(o bf16 [B, T, HV, 128], final state fp32 [N, HV, 128, 128]) of the KDA chunked
    prefill, fla chunk_kda's contract in the decode pool's state layout
    (kda_prefill.kda_chunk_prefill)."""
    return kda_prefill.kda_chunk_prefill(
        q, k, v, g, beta, scale, initial_state, cu_seqlens,
        use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, use_gate_in_kernel=use_gate_in_kernel,
        A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
        use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel)


# ---------------------------------------------------------------------------
# MLA attention (docs/kernels/mla_attention.md)
# ---------------------------------------------------------------------------

def _mla_decode_fake(q: torch.Tensor, cache: torch.Tensor, block_table: torch.Tensor,
                     cache_seqlens: torch.Tensor, scale: Optional[float] = None,
                     num_splits: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("mla_decode", "q", q, 3)
    return (q.new_empty((q.shape[0], q.shape[1], mla_attention.KV_LORA)),
            q.new_empty((q.shape[0], q.shape[1]), dtype=torch.float32))


@register("mla_decode", _mla_decode_fake)
def mla_decode(q: torch.Tensor, cache: torch.Tensor, block_table: torch.Tensor,
               cache_seqlens: torch.Tensor, scale: Optional[float] = None,
               num_splits: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """(out bf16 [B, H, 512], lse fp32 [B, H]): MLA decode attention over the paged latent
    cache (bf16 or the FP8 layout); cache_seqlens the rows each request sees (< 0: padded,
    its rows unspecified) (mla_attention.mla_decode)."""
    return mla_attention.mla_decode(q, cache, block_table, cache_seqlens, scale,
                                    num_splits=num_splits, return_lse=True)


def _verify_splitkv_fake(q: torch.Tensor, cache: torch.Tensor, block_table: torch.Tensor,
                         lengths: torch.Tensor, scale: Optional[float] = None,
                         num_splits: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("verify_splitkv", "q", q, 4)
    return (q.new_empty(tuple(q.shape[:3]) + (mla_attention.KV_LORA,)),
            q.new_empty(tuple(q.shape[:3]), dtype=torch.float32))


@register("verify_splitkv", _verify_splitkv_fake)
def verify_splitkv(q: torch.Tensor, cache: torch.Tensor, block_table: torch.Tensor,
                   lengths: torch.Tensor, scale: Optional[float] = None,
                   num_splits: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """(out bf16 [B, S, H, 512], lse fp32 [B, S, H]): MLA target-verify attention of S
    drafts (the last S rows of each request) over the paged latent cache; lengths the
    prefixes (< 0: padded, its rows unspecified) (mla_attention.verify_splitkv)."""
    return mla_attention.verify_splitkv(q, cache, block_table, lengths, scale,
                                        num_splits=num_splits, return_lse=True)


# ---------------------------------------------------------------------------
# Collectives over a symmetric workspace (docs/kernels/collectives.md)
# ---------------------------------------------------------------------------

#: name -> the registered collective op, in registration order (not in ``OPS``: they need
#: peers, so the single-device tests and the interpreter do not run them).
COLLECTIVE_OPS: Dict[str, Any] = {}


class SymmetricWorkspace(NamedTuple):
    """A ``kiln.distributed.SymmetricBuffer`` as the collective ops take it, three arguments
    in this order (``torch.ops.kiln.allreduce(x, *ws)``): ``workspace``, this rank's
    workspace as uint8 [nbytes] (every call reads and writes it: the ops declare it mutated,
    which keeps them in program order and out of CSE under ``torch.compile``); ``peers``,
    the peer table (int64 [world] addresses; world = its numel); ``rank``."""
    workspace: torch.Tensor
    peers: torch.Tensor
    rank: int


#: address of a workspace view that symmetric_workspace made -> (peer table address, rank,
#: world, nbytes): the ops check that their workspace argument is one.
_SYMMETRIC: Dict[int, Tuple[int, int, int, int]] = {}


def symmetric_workspace(buf: Any) -> SymmetricWorkspace:
    """The collective ops' workspace arguments for the ``kiln.distributed.SymmetricBuffer``
    ``buf`` (make them once per buffer and reuse them: the tensors view its memory)."""
    ws = SymmetricWorkspace(buf.local(torch.uint8), buf.peer_table, int(buf.rank))
    _SYMMETRIC[ws.workspace.data_ptr()] = (ws.peers.data_ptr(), ws.rank, int(buf.world),
                                           int(buf.nbytes))
    return ws


class _Symmetric:
    """What the collectives' wrappers read of a SymmetricBuffer (``world``, ``rank``,
    ``nbytes``, ``peer_table``, ``local``), over an op's workspace arguments."""

    __slots__ = ("workspace", "peer_table", "rank", "world", "nbytes")

    def __init__(self, workspace: torch.Tensor, peers: torch.Tensor, rank: int) -> None:
        self.workspace, self.peer_table, self.rank = workspace, peers, rank
        self.world, self.nbytes = peers.numel(), workspace.numel()

    def local(self, dtype: Any = None, shape: Any = None, offset: int = 0) -> torch.Tensor:
        """As ``SymmetricBuffer.local``: a view of the workspace from byte ``offset``."""
        dtype = torch.uint8 if dtype is None else dtype
        raw = self.workspace[offset:]
        if shape is None:
            return raw[:raw.numel() // dtype.itemsize * dtype.itemsize].view(dtype)
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        return raw[:math.prod(dims) * dtype.itemsize].view(dtype).view(dims)


def symmetric_view(op: str, workspace: torch.Tensor, peers: torch.Tensor, rank: int) -> Any:
    """The object a collective wrapper takes as its ``workspace``, from a collective op's
    arguments, after checking them: ``workspace`` uint8 [nbytes] and ``peers`` int64
    [world] made by ``symmetric_workspace`` from one buffer, ``rank`` its rank. A copy of the
    workspace (a ``torch.compile`` backend that functionalizes the op without putting the
    mutation back in place, e.g. ``aot_eager``) is refused: the kernels would write the real
    workspace through the peer table, and the copy written back over it would undo the call.
    Checked when a launch key is first seen (later calls with the key replay its plan)."""
    _check(workspace.dtype == torch.uint8 and workspace.dim() == 1
           and workspace.is_contiguous(), ValueError,
           f"{op}: workspace must be a contiguous uint8 [nbytes] tensor "
           f"(symmetric_workspace(buf).workspace), got {workspace.dtype} of shape "
           f"{list(workspace.shape)}")
    _check(peers.dtype == torch.int64 and peers.dim() == 1 and peers.numel() >= 1,
           ValueError, f"{op}: peers must be the int64 [world] peer table "
                       f"(symmetric_workspace(buf).peers), got {peers.dtype} of shape "
                       f"{list(peers.shape)}")
    world = peers.numel()
    _check(0 <= rank < world, ValueError, f"{op}: rank must be in [0, {world}), got {rank}")
    known = _SYMMETRIC.get(workspace.data_ptr())
    _check(known is not None, ValueError,
           f"{op}: workspace is not a symmetric workspace: pass the tensors "
           f"symmetric_workspace(buf) makes of a kiln.distributed.SymmetricBuffer (under "
           f"torch.compile, a backend that does not re-inplace the op's mutation, such as "
           f"aot_eager, hands it a copy; the default inductor backend does not)")
    _check(known == (peers.data_ptr(), rank, world, workspace.numel()), ValueError,
           f"{op}: peers, rank and workspace are not those of one SymmetricBuffer "
           f"(symmetric_workspace(buf))")
    return _Symmetric(workspace, peers, rank)


def register_collective(name: str, fake: Callable[..., Any],
                        mutates_args: Sequence[str] = ()
                        ) -> Callable[[Callable[..., Any]], Any]:
    """``register`` for an op over a symmetric workspace: its signature holds ``workspace:
    torch.Tensor, peers: torch.Tensor, rank: int`` (``SymmetricWorkspace``'s fields, in that
    order; its body passes ``symmetric_view(name, workspace, peers, rank)`` to the wrapper),
    ``workspace`` is declared mutated, and the op is listed in ``COLLECTIVE_OPS``."""

    def wrap(fn: Callable[..., Any]) -> Any:
        op = torch_library.op(NAMESPACE, name, fake,
                              ("workspace",) + tuple(m for m in mutates_args
                                                     if m != "workspace"))(fn)
        COLLECTIVE_OPS[name] = op
        return op

    return wrap


def _world(peers: torch.Tensor) -> int:
    return peers.shape[0]


def _allreduce_fake(x: torch.Tensor, workspace: torch.Tensor, peers: torch.Tensor, rank: int,
                    residual: Optional[torch.Tensor] = None) -> torch.Tensor:
    return x.new_empty(x.shape)


@register_collective("allreduce", _allreduce_fake)
def allreduce(x: torch.Tensor, workspace: torch.Tensor, peers: torch.Tensor, rank: int,
              residual: Optional[torch.Tensor] = None) -> torch.Tensor:
    """A new tensor of x's shape: the sum of every rank's bf16 x (fp32 in rank order) + the
    residual (allreduce.allreduce into a fresh ``out``: the op never writes x)."""
    ws = symmetric_view("allreduce", workspace, peers, rank)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return allreduce_mod.allreduce(x, ws, residual, out)


def _reduce_scatter_fake(x: torch.Tensor, workspace: torch.Tensor, peers: torch.Tensor,
                         rank: int, residual: Optional[torch.Tensor] = None) -> torch.Tensor:
    world = _world(peers)
    _check(x.dim() >= 1 and x.shape[0] % world == 0, ValueError,
           f"sp_reduce_scatter: x's first dimension must be a multiple of the world size "
           f"{world}, got shape {list(x.shape)}")
    return x.new_empty((x.shape[0] // world,) + tuple(x.shape[1:]))


@register_collective("sp_reduce_scatter", _reduce_scatter_fake)
def sp_reduce_scatter(x: torch.Tensor, workspace: torch.Tensor, peers: torch.Tensor,
                      rank: int, residual: Optional[torch.Tensor] = None) -> torch.Tensor:
    """bf16 [rows, ...]: chunk ``rank`` of x [world * rows, ...] summed over the ranks, +
    the residual (this rank's rows, or the whole of which chunk ``rank`` is taken)
    (allreduce.sp_reduce_scatter)."""
    return allreduce_mod.sp_reduce_scatter(x, symmetric_view("sp_reduce_scatter", workspace,
                                                             peers, rank), residual)


def _all_gather_fake(x: torch.Tensor, workspace: torch.Tensor, peers: torch.Tensor,
                     rank: int) -> torch.Tensor:
    _check(x.dim() >= 1, ValueError, "sp_all_gather: x must have at least one dimension")
    return x.new_empty((x.shape[0] * _world(peers),) + tuple(x.shape[1:]))


@register_collective("sp_all_gather", _all_gather_fake)
def sp_all_gather(x: torch.Tensor, workspace: torch.Tensor, peers: torch.Tensor,
                  rank: int) -> torch.Tensor:
    """bf16 [world * rows, ...]: rank r's x [rows, ...] in rows [r * rows, (r + 1) * rows)
    (allreduce.sp_all_gather)."""
    return allreduce_mod.sp_all_gather(x, symmetric_view("sp_all_gather", workspace, peers,
                                                         rank))


def _allreduce_rmsnorm_fake(x: torch.Tensor, workspace: torch.Tensor, peers: torch.Tensor,
                            rank: int, weight: torch.Tensor, eps: float = 1e-6,
                            residual: Optional[torch.Tensor] = None,
                            norm_rows: Optional[int] = None
                            ) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("allreduce_rmsnorm", "x", x, 2)
    rows, dim = x.shape
    n = rows if norm_rows is None else norm_rows
    _check(0 <= n <= rows, ValueError,
           f"allreduce_rmsnorm: norm_rows must be in [0, {rows}], got {n}")
    return x.new_empty((rows, dim)), x.new_empty((n, dim), dtype=torch.bfloat16)


@register_collective("allreduce_rmsnorm", _allreduce_rmsnorm_fake)
def allreduce_rmsnorm(x: torch.Tensor, workspace: torch.Tensor, peers: torch.Tensor,
                      rank: int, weight: torch.Tensor, eps: float = 1e-6,
                      residual: Optional[torch.Tensor] = None,
                      norm_rows: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """(out bf16 [rows, D], norm_out bf16 [norm_rows, D]): the rows of x summed over the
    ranks + the residual, and the RMSNorm of the first norm_rows (all when None) with weight
    and eps (allreduce.allreduce_rmsnorm into a fresh ``out``: the op never writes x)."""
    ws = symmetric_view("allreduce_rmsnorm", workspace, peers, rank)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    o, n = allreduce_mod.allreduce_rmsnorm(x, ws, weight, eps, residual=residual,
                                           norm_rows=norm_rows, out=out)
    return o, n


def _finalize_fake(gemm2: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor,
                   workspace: torch.Tensor, peers: torch.Tensor, rank: int,
                   weight: torch.Tensor, eps: float = 1e-6,
                   residual: Optional[torch.Tensor] = None
                   ) -> Tuple[torch.Tensor, torch.Tensor]:
    _rank("finalize_push_norm", "gemm2", gemm2, 2)
    _rank("finalize_push_norm", "topk_ids", topk_ids, 2)
    shape = (topk_ids.shape[0], gemm2.shape[1])
    return gemm2.new_empty(shape), gemm2.new_empty(shape, dtype=torch.bfloat16)


@register_collective("finalize_push_norm", _finalize_fake)
def finalize_push_norm(gemm2: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor,
                       workspace: torch.Tensor, peers: torch.Tensor, rank: int,
                       weight: torch.Tensor, eps: float = 1e-6,
                       residual: Optional[torch.Tensor] = None
                       ) -> Tuple[torch.Tensor, torch.Tensor]:
    """(out bf16 [T, D], norm_out bf16 [T, D]): the MoE finalize of T tokens fused into the
    all-reduce (+ the residual) and the RMSNorm of every row (allreduce.finalize_push_norm)."""
    o, n = allreduce_mod.finalize_push_norm(gemm2, topk_ids, topk_weights,
                                            symmetric_view("finalize_push_norm", workspace,
                                                           peers, rank),
                                            weight, eps, residual=residual)
    return o, n


def _gemm_allreduce_fake(x: torch.Tensor, weight: torch.Tensor, workspace: torch.Tensor,
                         peers: torch.Tensor, rank: int) -> torch.Tensor:
    _rank("gemm_allreduce", "x", x, 2)
    _rank("gemm_allreduce", "weight", weight, 2)
    return x.new_empty((gemm_mod.cell_rows(x.shape[0]), weight.shape[0]))


@register_collective("gemm_allreduce", _gemm_allreduce_fake)
def gemm_allreduce(x: torch.Tensor, weight: torch.Tensor, workspace: torch.Tensor,
                   peers: torch.Tensor, rank: int) -> torch.Tensor:
    """bf16 [cell, N]: the sum over the ranks of bf16(x @ weight^T) (fp32 in rank order),
    rows [M, cell) zero (gemm_collectives.gemm_allreduce)."""
    return gemm_mod.gemm_allreduce(x, weight, symmetric_view("gemm_allreduce", workspace,
                                                             peers, rank))


def _gemm_allgather_fake(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                         workspace: torch.Tensor, peers: torch.Tensor, rank: int,
                         c: Optional[torch.Tensor] = None) -> torch.Tensor:
    _rank("gemm_allgather", "x", x, 2)
    _rank("gemm_allgather", "weight", weight, 2)
    return x.new_empty((x.shape[0], weight.shape[0]))


@register_collective("gemm_allgather", _gemm_allgather_fake)
def gemm_allgather(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                   workspace: torch.Tensor, peers: torch.Tensor, rank: int,
                   c: Optional[torch.Tensor] = None) -> torch.Tensor:
    """bf16 [M, N]: bf16(x @ weight^T) gathered by columns from the ranks, + bias (+ c), in
    bf16 arithmetic (gemm_collectives.gemm_allgather)."""
    return gemm_mod.gemm_allgather(x, weight, bias, symmetric_view("gemm_allgather", workspace,
                                                                   peers, rank), c)

