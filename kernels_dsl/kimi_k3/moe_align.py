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
between threads matters. The bundle holds K3's top-16 with blocks of 16 and 64 and, for every
other topk, block size and address, ``moe_align_single_token_generic_kernel`` (topk and
block_size at run time).

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


@kiln.jit
def _ranks(ids_ptr, topk, TP2: kl.constexpr):
    """The lanes of the [TP2] tile (``in_range``: below topk) and, for rank r = lane, the lane
    ``src_lane`` and the id ``src_id`` of rank r, ``used`` (r < n_valid) and n_valid."""
    lane = kl.arange(0, TP2)
    in_range = lane < topk
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
    return lane, in_range, src_lane, src_id, lane < n_valid, n_valid


@kiln.jit(num_warps=1)
def moe_align_single_token_kernel(ids_ptr, sorted_ptr, expert_ptr, post_ptr,
                                  TOPK: kl.constexpr, BLOCK: kl.constexpr):
    TP2: kl.constexpr = 2 ** math.ceil(math.log2(TOPK))
    lane, in_range, src_lane, src_id, used, n_valid = _ranks(ids_ptr, TOPK, TP2)
    kl.store(expert_ptr + lane, kl.where(used, src_id, -1), mask=in_range)
    col = kl.arange(0, BLOCK)[None, :]
    slot = lane[:, None] * BLOCK + col
    val = kl.where((col == 0) & used[:, None], src_lane[:, None], TOPK)
    kl.store(sorted_ptr + slot, val, mask=in_range[:, None])
    kl.store(post_ptr, n_valid * BLOCK)


@kiln.jit(num_warps=1, do_not_specialize=["topk", "block"])
def moe_align_single_token_generic_kernel(ids_ptr, sorted_ptr, expert_ptr, post_ptr, topk,
                                          block, COLS: kl.constexpr):
    """``moe_align_single_token_kernel`` for any topk <= 32 and block (runtime values): the
    [32] tile of lanes masked to topk, each lane's slots stored COLS at a time."""
    lane, in_range, src_lane, src_id, used, n_valid = _ranks(ids_ptr, topk, MAX_TOPK)
    kl.store(expert_ptr + lane, kl.where(used, src_id, -1), mask=in_range)
    for c0 in range(0, block, COLS):
        col = c0 + kl.arange(0, COLS)[None, :]
        val = kl.where((col == 0) & used[:, None], src_lane[:, None], topk)
        kl.store(sorted_ptr + lane[:, None] * block + col, val,
                 mask=in_range[:, None] & (col < block))
    kl.store(post_ptr, n_valid * block)


def launch_config(topk: int, block_size: int) -> tuple:
    """(constexprs, num_warps) of a launch: one warp (topk <= 32 lanes), nothing to tune."""
    return {"TOPK": topk, "BLOCK": block_size}, 1


#: the bundle's kernel for every topk and block_size (and any address)
GENERIC = "moe_align_single_token_generic"
#: the slots of each lane the generic kernel stores at a time (a [32, COLS] tile)
GENERIC_COLS = 32
_POINTERS = {"ids_ptr": "*i32", "sorted_ptr": "*i32", "expert_ptr": "*i32", "post_ptr": "*i32"}

#: K3: top-16, the MoE GEMMs' blocks of 16 and 64 rows; the generic kernel for the rest.
AOT_SPECIALIZATIONS = [
    Spec(moe_align_single_token_kernel, name="moe_align_single_token", signature=_POINTERS,
         constexprs=launch_config(16, block)[0], divisibility=list(_POINTERS),
         num_warps=launch_config(16, block)[1])
    for block in (16, 64)
] + [Spec(moe_align_single_token_generic_kernel, name=GENERIC,
          signature=dict(_POINTERS, topk="i32", block="i32"), constexprs={"COLS": GENERIC_COLS},
          num_warps=1)]


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
    ptrs = (topk_ids, sorted_ids, expert_ids, num_tokens_post_padded)
    L.launch(moe_align_single_token_kernel, "moe_align_single_token", (1,), ptrs, constexprs,
             num_warps, generic=L.Launch(moe_align_single_token_generic_kernel, GENERIC, (1,),
                                         ptrs + (topk, block_size), {"COLS": GENERIC_COLS}, 1))
    return sorted_ids, expert_ids, num_tokens_post_padded
