"""Pack MoE routing into the FlashInfer / TRT-LLM-gen int32 routing ABI (KERNELS.md §3.1).

    out[t, k] = (topk_ids[t, k] << 16) | (bits(bf16_rne(topk_weights[t, k])) & 0xFFFF)

The weight is rounded to bfloat16 (round to nearest even, as ``torch.Tensor.bfloat16``) and its
16-bit pattern fills the low half; the expert id (0 <= id < 32768) the high half. Bit-exact with
``(ids.int() << 16) | (w.bfloat16().view(torch.int16).int() & 0xFFFF)``.

The kernel is 1-D over the T*K elements (BLOCK per program); ``numel`` is not specialized
(``do_not_specialize``), so a new T never recompiles; numel == 0 launches nothing. Two
variants: VEC = 4 (numel % 4 == 0, 16-byte accesses) and VEC = 1 (any numel); with ``PDL``
(the default) the kernel is a programmatic dependent launch.
"""

from __future__ import annotations

from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L


@kiln.jit(num_warps=4, do_not_specialize=["numel"])
def pack_topk_ids_kernel(ids_ptr, weights_ptr, out_ptr, numel, BLOCK: kl.constexpr,
                         VEC: kl.constexpr, PDL: kl.constexpr = False):
    """PDL: launched as a programmatic dependent (``pdl_wait`` before the loads, dependents
    released after them), so that its launch overlaps the previous kernel's tail."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    # VEC = 4 promises numel % 4 == 0 (the wrapper checks): writing the bound as a multiple
    # of 4 lets the masked accesses be 16-byte vectors without specializing on numel.
    bound = (numel // VEC) * VEC if VEC > 1 else numel
    mask = offs < bound
    if PDL:
        kl.pdl_wait()  # the ids and weights come from the router's previous kernel
    ids = kl.load(ids_ptr + offs, mask=mask, other=0)
    w = kl.load(weights_ptr + offs, mask=mask, other=0.0)
    if PDL:
        kl.pdl_launch_dependents()
    low = w.to(kl.bfloat16).to(kl.uint16, bitcast=True).to(kl.int32)
    kl.store(out_ptr + offs, (ids << 16) | low, mask=mask)


#: BLOCK elements per program on NUM_WARPS warps (1024 on 4: two 16-byte vectors per array
#: and thread, 256 programs at T = 16384 x 16, all resident at once): 2.88 us on the H200 vs
#: 2.30 us for torch.compile (bench/results/h200-bench_kimi_k3.md). PDL: the kernel's launch
#: overlaps the previous kernel's tail (``pdl_wait`` before its loads): H200 sweep of
#: back-to-back calls 2.78 -> 2.09 us (every BLOCK x NUM_WARPS within 2.09-2.26 us).
#: ``bench/kimi_k3/run.py --sweep --only pack_topk_ids`` times BLOCK x NUM_WARPS x PDL.
BLOCK, NUM_WARPS = 1024, 4
PDL = True

AOT_SPECIALIZATIONS = [
    Spec(pack_topk_ids_kernel, name="pack_topk_ids",
         signature={"ids_ptr": "*i32", "weights_ptr": "*f32", "out_ptr": "*i32", "numel": "i32"},
         constexprs={"BLOCK": BLOCK, "VEC": vec, "PDL": PDL},
         divisibility=["ids_ptr", "weights_ptr", "out_ptr"], num_warps=NUM_WARPS)
    for vec in (4, 1)
]


def pack_topk_ids(topk_ids: Any, topk_weights: Any, out: Optional[Any] = None) -> Any:
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
    L.check_int32_extent(op, "T * K", numel + BLOCK)
    grid = ((numel + BLOCK - 1) // BLOCK,)
    L.launch(pack_topk_ids_kernel, "pack_topk_ids", grid, (topk_ids, topk_weights, out, numel),
             {"BLOCK": BLOCK, "VEC": 4 if numel % 4 == 0 else 1, "PDL": PDL}, NUM_WARPS)
    return out
