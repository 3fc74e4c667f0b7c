"""Pack MoE routing into the FlashInfer / TRT-LLM-gen int32 routing ABI.

    out[t, k] = (topk_ids[t, k] << 16) | (bits(bf16_rne(topk_weights[t, k])) & 0xFFFF)

The weight is rounded to bfloat16 (round to nearest even, as ``torch.Tensor.bfloat16``) and its
16-bit pattern fills the low half; the expert id (0 <= id < 32768) the high half. Bit-exact with
``(ids.int() << 16) | (w.bfloat16().view(torch.int16).int() & 0xFFFF)``.

The kernel is 1-D over the T*K elements (BLOCK per program); ``numel`` is not specialized
(``do_not_specialize``), so a new T never recompiles; numel == 0 launches nothing. Two
variants: VEC = 4 (numel % 4 == 0, 16-byte accesses) and VEC = 1 (any numel), both for
16-byte aligned tensors; the bundle's ``pack_topk_ids_generic`` is VEC = 1 at any address.
The kernel is a programmatic dependent launch (``pdl_wait`` before the loads, dependents
released after them), so that its launch overlaps the previous kernel's tail.

Specification: docs/kernels/moe_routing.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L


@kiln.jit(num_warps=4, do_not_specialize=["numel"])
def pack_topk_ids_kernel(ids_ptr, weights_ptr, out_ptr, numel, BLOCK: kl.constexpr,
                         VEC: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    # VEC = 4 promises numel % 4 == 0 (the wrapper checks): writing the bound as a multiple
    # of 4 lets the masked accesses be 16-byte vectors without specializing on numel.
    bound = (numel // VEC) * VEC if VEC > 1 else numel
    mask = offs < bound
    kl.pdl_wait()  # the ids and weights come from the router's previous kernel
    ids = kl.load(ids_ptr + offs, mask=mask, other=0)
    w = kl.load(weights_ptr + offs, mask=mask, other=0.0)
    kl.pdl_launch_dependents()
    low = w.to(kl.bfloat16).to(kl.uint16, bitcast=True).to(kl.int32)
    kl.store(out_ptr + offs, (ids << 16) | low, mask=mask)


@dataclasses.dataclass(frozen=True)
class Settings:
    """pack_topk_ids's tuning; measured in bench/results/kimi_k3/moe_align.md."""
    block: int = 1024  # elements a program: two 16-byte vectors an array and thread ...
    num_warps: int = 4  # ... on 4 warps: T = 16384 x 16 in 256 programs, all resident


SETTINGS = Settings()


def launch_config(numel: int, settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps) of a launch over ``numel`` elements."""
    return {"BLOCK": settings.block, "VEC": 4 if numel % 4 == 0 else 1}, settings.num_warps


#: the bundle's kernel (VEC = 1) for tensors at any address (views of a larger routing table)
GENERIC = "pack_topk_ids_generic"
_SIGNATURE = {"ids_ptr": "*i32", "weights_ptr": "*f32", "out_ptr": "*i32", "numel": "i32"}

AOT_SPECIALIZATIONS = [
    Spec(pack_topk_ids_kernel, name="pack_topk_ids", signature=_SIGNATURE,
         constexprs=launch_config(numel)[0],
         divisibility=["ids_ptr", "weights_ptr", "out_ptr"], num_warps=launch_config(numel)[1])
    for numel in (4, 1)  # VEC = 4 and 1
] + [Spec(pack_topk_ids_kernel, name=GENERIC, signature=_SIGNATURE,
          constexprs=launch_config(1)[0], num_warps=launch_config(1)[1])]


def pack_topk_ids(topk_ids: Any, topk_weights: Any, out: Optional[Any] = None, *,
                  settings: Settings = SETTINGS) -> Any:
    """Packs ``topk_ids`` int32 [T, K] and ``topk_weights`` fp32 [T, K] (both contiguous)
    into ``out`` int32 [T, K] (allocated if None). Ids must lie in [0, 32768) (not checked
    on the device). Every check raises before any launch."""
    op = "pack_topk_ids"
    L.check_dtype(op, "topk_ids", topk_ids, ("int32",))
    L.check_dtype(op, "topk_weights", topk_weights, ("float32",))
    t, k = L.check_shape(op, "topk_ids", topk_ids, (None, None))
    L.check_shape(op, "topk_weights", topk_weights, (t, k))
    L.check_contiguous(op, "topk_ids", topk_ids)
    L.check_contiguous(op, "topk_weights", topk_weights)
    L.check_same_device(op, ("topk_ids", topk_ids), ("topk_weights", topk_weights))
    if out is None:
        import torch

        out = torch.empty((t, k), dtype=torch.int32, device=topk_ids.device)
    else:
        L.check_dtype(op, "out", out, ("int32",))
        L.check_shape(op, "out", out, (t, k))
        L.check_contiguous(op, "out", out)
        L.check_same_device(op, ("topk_ids", topk_ids), ("out", out))
    numel = t * k
    constexprs, num_warps = launch_config(numel, settings)
    block = constexprs["BLOCK"]
    L.check_int32_extent(op, "T * K", numel + block)
    launch = L.Launch(pack_topk_ids_kernel, "pack_topk_ids", ((numel + block - 1) // block,),
                      (topk_ids, topk_weights, out, numel), constexprs, num_warps)
    L.launch(*launch, generic=launch._replace(name=GENERIC, constexprs=dict(constexprs, VEC=1)))
    return out
