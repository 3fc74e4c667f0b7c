"""MoE align for one decode token: ``moe_align_block_size`` semantics for
M == 1 without a sort primitive, in one single-warp program.

Every lane i of ``topk_ids[0, :]`` gets the key ``id_i`` (``INT_MAX`` for an invalid id < 0, an
EP-dropped expert, so it sorts last) and the rank ``r_i`` = the number of lanes j whose
(key_j, j) is smaller than (key_i, i): a [TOPK_P2, TOPK_P2] compare tile summed along an axis
(ties by lane index). For a valid lane i with rank r:

    expert_ids[r]            = id_i
    sorted_ids[r * BLOCK]    = i        (the flat pair index)

every other slot of ``sorted_ids`` [topk * BLOCK] holds ``topk`` (the numel sentinel), the unused
tail of ``expert_ids`` [topk] holds -1, and ``num_tokens_post_padded[0] = n_valid * BLOCK``.
topk (<= 32) is padded to the power of two TOPK_P2 inside the kernel (masked lanes are
invalid). Each output element is computed, not filled and then overwritten, so no store order
between threads matters.

Specification: docs/kernels/moe_routing.md
"""

from __future__ import annotations

import math
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

INT32_MAX = 2**31 - 1
MAX_TOPK = 32


@kiln.jit(num_warps=1)
def moe_align_single_token_kernel(ids_ptr, sorted_ptr, expert_ptr, post_ptr,
                                  TOPK: kl.constexpr, BLOCK: kl.constexpr):
    TP2: kl.constexpr = 2 ** math.ceil(math.log2(TOPK))
    lane = kl.arange(0, TP2)
    in_range = lane < TOPK
    ids = kl.load(ids_ptr + lane, mask=in_range, other=-1)
    valid = (ids >= 0) & in_range
    key = kl.where(valid, ids, INT32_MAX)
    # rank[i] = #{j : (key_j, j) < (key_i, i)}
    ki, kj = key[:, None], key[None, :]
    li, lj = lane[:, None], lane[None, :]
    smaller = (kj < ki) | ((kj == ki) & (lj < li))
    rank = kl.sum(smaller.to(kl.int32), axis=1)
    n_valid = kl.sum(valid.to(kl.int32), axis=0)
    # the inverse permutation: for rank r (rows), the lane holding it (columns)
    hit = rank[None, :] == lane[:, None]
    src_lane = kl.sum(kl.where(hit, lj, 0), axis=1)
    src_id = kl.sum(kl.where(hit, ids[None, :], 0), axis=1)
    used = lane < n_valid
    kl.store(expert_ptr + lane, kl.where(used, src_id, -1), mask=in_range)
    col = kl.arange(0, BLOCK)[None, :]
    slot = li * BLOCK + col
    val = kl.where((col == 0) & used[:, None], src_lane[:, None], TOPK)
    kl.store(sorted_ptr + slot, val, mask=in_range[:, None])
    kl.store(post_ptr, n_valid * BLOCK)


def launch_config(topk: int, block_size: int) -> tuple:
    """(constexprs, num_warps) of a launch: one warp (topk <= 32 lanes), nothing to tune."""
    return {"TOPK": topk, "BLOCK": block_size}, 1


#: K3: top-16, the MoE GEMMs' blocks of 16 and 64 rows.
AOT_SPECIALIZATIONS = [
    Spec(moe_align_single_token_kernel, name="moe_align_single_token",
         signature={"ids_ptr": "*i32", "sorted_ptr": "*i32", "expert_ptr": "*i32",
                    "post_ptr": "*i32"},
         constexprs=launch_config(16, block)[0],
         divisibility=["ids_ptr", "sorted_ptr", "expert_ptr", "post_ptr"],
         num_warps=launch_config(16, block)[1])
    for block in (16, 64)
]


def moe_align_single_token(topk_ids: Any, block_size: int, sorted_ids: Optional[Any] = None,
                           expert_ids: Optional[Any] = None,
                           num_tokens_post_padded: Optional[Any] = None) -> tuple:
    """``topk_ids`` int32 [1, topk] (contiguous, topk <= 32), ``block_size`` a power of two
    <= 256;
    returns (sorted_ids int32 [topk * block_size], expert_ids int32 [topk],
    num_tokens_post_padded int32 [1]), allocated when None. Checks raise before launch."""
    op = "moe_align_single_token"
    L.check_dtype(op, "topk_ids", topk_ids, ("int32",))
    _, topk = L.check_shape(op, "topk_ids", topk_ids, (1, None))
    if not 1 <= topk <= MAX_TOPK:
        raise ValueError(f"{op}: topk must be in [1, {MAX_TOPK}], got {topk}")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1 \
            or block_size & (block_size - 1) or block_size > 256:
        raise ValueError(f"{op}: block_size must be a power of two in [1, 256], got "
                         f"{block_size!r}")
    L.check_contiguous(op, "topk_ids", topk_ids)
    outs = {"sorted_ids": (sorted_ids, topk * block_size), "expert_ids": (expert_ids, topk),
            "num_tokens_post_padded": (num_tokens_post_padded, 1)}
    for what, (t, n) in outs.items():
        if t is not None:
            L.check_dtype(op, what, t, ("int32",))
            L.check_shape(op, what, t, (n,))
            L.check_contiguous(op, what, t)
    L.check_same_device(op, ("topk_ids", topk_ids),
                        *[(w, t) for w, (t, _) in outs.items() if t is not None])
    if any(t is None for t, _ in outs.values()):
        import torch

        dev = topk_ids.device
        sorted_ids = sorted_ids if sorted_ids is not None else torch.empty(
            topk * block_size, dtype=torch.int32, device=dev)
        expert_ids = expert_ids if expert_ids is not None else torch.empty(
            topk, dtype=torch.int32, device=dev)
        if num_tokens_post_padded is None:
            num_tokens_post_padded = torch.empty(1, dtype=torch.int32, device=dev)
    constexprs, num_warps = launch_config(topk, block_size)
    L.launch(moe_align_single_token_kernel, "moe_align_single_token", (1,),
             (topk_ids, sorted_ids, expert_ids, num_tokens_post_padded), constexprs, num_warps)
    return sorted_ids, expert_ids, num_tokens_post_padded
