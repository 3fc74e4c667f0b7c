"""MLA latent KV cache scatter, BF16 layout (KERNELS.md §3.8 / §8.5).

For every token t with 0 <= loc[t] < num_slots:

    cache[loc[t], :512]    = kv_c[t, :]      (the compressed latent, 512)
    cache[loc[t], 512:576] = k_pe[t, :]      (the rope part, 64)

an exact bf16 copy (the concatenation happens on the way). ``loc`` is int64 [T]; loc < 0 (a
padded slot) skips the token, and so does loc >= num_slots (the kernel never writes outside the
cache). ``cache`` is [num_slots, 576] or paged [pages, page_size, 576] (rows uniformly strided:
loc indexes the flattened rows). kv_c and k_pe may be row-strided (slices of a projection
output). Each program moves ROWS tokens as [ROWS, 512] and [ROWS, 64] tiles.

The FP8 layout of §8.5 (512 e4m3 + 4 fp32 scales + 64 bf16 = 656 bytes) needs a per-128 absmax
(a reduction), which the language does not have yet; it is not implemented here.
"""

from __future__ import annotations

from typing import Any

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

KV_LORA, ROPE = 512, 64


@kiln.jit(num_warps=4)
def mla_kv_scatter_bf16_kernel(kv_ptr, pe_ptr, loc_ptr, cache_ptr, T, num_slots, kv_s0, pe_s0,
                               cache_s0, ROWS: kl.constexpr, KV_DIM: kl.constexpr,
                               PE_DIM: kl.constexpr):
    r = kl.program_id(0) * ROWS + kl.arange(0, ROWS)
    loc = kl.load(loc_ptr + r, mask=r < T, other=-1)
    valid = ((loc >= 0) & (loc < num_slots))[:, None]
    ck = kl.arange(0, KV_DIM)[None, :]
    cp = kl.arange(0, PE_DIM)[None, :]
    kv = kl.load(kv_ptr + (r * kv_s0)[:, None] + ck, mask=valid, other=0.0)
    pe = kl.load(pe_ptr + (r * pe_s0)[:, None] + cp, mask=valid, other=0.0)
    dst = cache_ptr + (loc * cache_s0)[:, None]
    kl.store(dst + ck, kv, mask=valid)
    kl.store(dst + KV_DIM + cp, pe, mask=valid)


#: [16, 512] + [16, 64] per program on 256 threads (the H200 sweep in bench/kimi_k3/run.py).
ROWS, NUM_WARPS = 16, 8

AOT_SPECIALIZATIONS = [
    Spec(mla_kv_scatter_bf16_kernel, name="mla_kv_scatter_bf16",
         signature={"kv_ptr": "*bf16", "pe_ptr": "*bf16", "loc_ptr": "*i64", "cache_ptr": "*bf16",
                    "T": "i32", "num_slots": "i32", "kv_s0": "i32", "pe_s0": "i32",
                    "cache_s0": "i32"},
         constexprs={"ROWS": ROWS, "KV_DIM": KV_LORA, "PE_DIM": ROPE},
         divisibility=["kv_ptr", "pe_ptr", "loc_ptr", "cache_ptr", "kv_s0", "pe_s0", "cache_s0"],
         num_warps=NUM_WARPS),
]


def _cache_rows(op: str, cache: Any) -> tuple:
    """(num_slots, row stride) of a [..., 576] cache whose rows are uniformly strided."""
    shp, st = L.shape(cache), L.strides(cache)
    if len(shp) < 2 or shp[-1] != KV_LORA + ROPE:
        raise ValueError(f"{op}: cache must be [num_slots, {KV_LORA + ROPE}] or [pages, "
                         f"page_size, {KV_LORA + ROPE}], got shape {list(shp)}")
    L.check_inner_contiguous(op, "cache", cache)
    rows = 1
    for n in shp[:-1]:
        rows *= n
    row_stride = st[-2]
    for i in range(len(shp) - 3, -1, -1):
        if shp[i] > 1 and st[i] != st[i + 1] * shp[i + 1]:
            raise ValueError(f"{op}: the cache's rows must be uniformly strided (loc indexes "
                             f"the flattened rows), got shape {list(shp)} and strides {st}")
    if rows > 0:
        L.check_int32_extent(op, "the cache's last row offset", (rows - 1) * row_stride)
    return rows, row_stride


def mla_kv_scatter(kv_c: Any, k_pe: Any, loc: Any, cache: Any) -> Any:
    """Writes ``cat(kv_c[t], k_pe[t])`` into ``cache[loc[t]]`` (bf16 layout); kv_c [T, 512],
    k_pe [T, 64] or [T, 1, 64] (bf16, last dim contiguous), loc int64 [T]; returns cache.
    Checks raise before launch."""
    op = "mla_kv_scatter"
    L.check_dtype(op, "cache", cache, ("bfloat16",))
    L.check_dtype(op, "kv_c", kv_c, ("bfloat16",))
    L.check_dtype(op, "k_pe", k_pe, ("bfloat16",))
    L.check_dtype(op, "loc", loc, ("int64",))
    t, _ = L.check_shape(op, "kv_c", kv_c, (None, KV_LORA))
    if len(L.shape(k_pe)) == 3:
        L.check_shape(op, "k_pe", k_pe, (t, 1, ROPE))
    else:
        L.check_shape(op, "k_pe", k_pe, (t, ROPE))
    L.check_shape(op, "loc", loc, (t,))
    L.check_inner_contiguous(op, "kv_c", kv_c)
    L.check_inner_contiguous(op, "k_pe", k_pe)
    if t > 1 and L.strides(loc)[0] != 1:
        raise ValueError(f"{op}: loc must be contiguous, got stride {L.strides(loc)[0]}")
    slots, row_stride = _cache_rows(op, cache)
    L.check_same_device(op, ("kv_c", kv_c), ("k_pe", k_pe), ("loc", loc), ("cache", cache))
    kv_s0, pe_s0 = L.strides(kv_c)[0], L.strides(k_pe)[0]
    L.check_int32_extent(op, "T * row stride", t * max(kv_s0, pe_s0, 1) + ROWS)
    L.check_int32_extent(op, "num_slots", slots)
    if slots == 0:
        return cache
    L.launch(mla_kv_scatter_bf16_kernel, "mla_kv_scatter_bf16", ((t + ROWS - 1) // ROWS,),
             (kv_c, k_pe, loc, cache, t, slots, kv_s0, pe_s0, row_stride),
             {"ROWS": ROWS, "KV_DIM": KV_LORA, "PE_DIM": ROPE}, NUM_WARPS)
    return cache
