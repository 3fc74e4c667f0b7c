"""FlashMLA block table from ``req_to_token`` with a virtual-to-physical page map (the
``create_flashmla_kv_indices_triton`` variant with ``v2p`` / ``PAGE_MULT``).

One program per request b, looping over its pages in tiles of BLOCK:

    req   = req_pool_indices[b]
    start = kv_start_idx[b]          (0 when kv_start_idx is None)
    for p < min(ceil(page_kernel_lens[b] / PAGE), max_blocks):
        tok   = req_to_token[req, start + p * PAGE]
        vpage = tok // PAGE
        ppage = v2p[vpage] if v2p is given else vpage
        kv_indices[b, p] = ppage * PAGE_MULT

Entries past ceil(len / PAGE) (and every entry of a request with len <= 0) are not written.
Padded entries pass through as -1: a token id < 0 (a padded ``req_to_token`` slot), a token
offset past the row (start + p * PAGE >= max_ctx) or a v2p entry < 0 (an unmapped page) gives
kv_indices[b, p] = -1 (the kernel never reads outside req_to_token or v2p for such a page).
``PAGE_MULT`` is the number of MLA layers of the page-major unified pool (1 = the static pool).
The bundle holds K3's page size and multipliers without ``kv_start_idx``; for every other
input ``kv_indices_generic_kernel`` (the page size, the multiplier and the start flag at run
time).

Specification: docs/kernels/mla_cache.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

PAGE = 64


@kiln.jit
def _block_table_row(r2t_ptr, req_ptr, lens_ptr, start_ptr, v2p_ptr, out_ptr, r2t_s0, max_ctx,
                     out_s0, max_blocks, num_vpages, page, page_mult, has_start,
                     HAS_V2P: kl.constexpr, BLOCK: kl.constexpr):
    """Request program_id(0)'s row of the table, BLOCK pages a loop iteration. ``page``,
    ``page_mult`` and ``has_start``: constexprs (the fast kernel) or runtime values (the
    generic one)."""
    b = kl.program_id(0)
    kl.pdl_wait()  # the indices and lengths may come from the previous kernels
    req = kl.load(req_ptr + b).to(kl.int64)
    n = kl.load(lens_ptr + b)
    if has_start:
        start = kl.load(start_ptr + b)
    else:
        start = 0
    pages = kl.minimum(kl.cdiv(kl.maximum(n, 0), page), max_blocks)
    row = r2t_ptr + req * r2t_s0
    dst = out_ptr + b.to(kl.int64) * out_s0
    for p0 in range(0, pages, BLOCK):
        p = p0 + kl.arange(0, BLOCK)
        m = p < pages
        off = start + p * page
        tok = kl.load(row + off, mask=m & (off >= 0) & (off < max_ctx), other=-1)
        ok = tok >= 0
        vpage = tok // page
        if HAS_V2P:
            ok = ok & (vpage < num_vpages)
            ppage = kl.load(v2p_ptr + vpage, mask=m & ok, other=-1)
            ok = ok & (ppage >= 0)
        else:
            ppage = vpage
        kl.store(dst + p, kl.where(ok, ppage * page_mult, -1).to(kl.int32), mask=m)
    kl.pdl_launch_dependents()


@kiln.jit(num_warps=4)
def kv_indices_kernel(r2t_ptr, req_ptr, lens_ptr, start_ptr, v2p_ptr, out_ptr, r2t_s0, max_ctx,
                      out_s0, max_blocks, num_vpages, PAGE: kl.constexpr,
                      PAGE_MULT: kl.constexpr, HAS_START: kl.constexpr, HAS_V2P: kl.constexpr,
                      BLOCK: kl.constexpr):
    """One program per request, BLOCK pages a loop iteration; a programmatic dependent
    launch (``pdl_wait`` before the first load, the next grid launched when the stores are
    issued)."""
    _block_table_row(r2t_ptr, req_ptr, lens_ptr, start_ptr, v2p_ptr, out_ptr, r2t_s0, max_ctx,
                     out_s0, max_blocks, num_vpages, PAGE, PAGE_MULT, HAS_START, HAS_V2P, BLOCK)


@kiln.jit(num_warps=2, do_not_specialize=["page_size", "page_mult", "has_start"])
def kv_indices_generic_kernel(r2t_ptr, req_ptr, lens_ptr, start_ptr, v2p_ptr, out_ptr, r2t_s0,
                              max_ctx, out_s0, max_blocks, num_vpages, page_size, page_mult,
                              has_start, HAS_V2P: kl.constexpr, BLOCK: kl.constexpr):
    """``kv_indices_kernel`` with the page size, the multiplier and whether kv_start_idx is
    given as runtime values (int32; has_start 0 or 1): any page_size, page_mult and
    kv_start_idx."""
    _block_table_row(r2t_ptr, req_ptr, lens_ptr, start_ptr, v2p_ptr, out_ptr, r2t_s0, max_ctx,
                     out_s0, max_blocks, num_vpages, page_size, page_mult, has_start != 0,
                     HAS_V2P, BLOCK)


@dataclasses.dataclass(frozen=True)
class Settings:
    """kv_indices's tuning; measured in bench/results/kimi_k3/mla_cache.md."""
    block: int = 64  # pages a loop iteration, one program a request ...
    num_warps: int = 2  # ... on 2 warps: many small programs for large batches
    few_block: int = 256  # where bs <= SMs: K3's 8192-token contexts (128 pages) in one ...
    few_num_warps: int = 4  # ... iteration on 4 warps: the latency of one program


SETTINGS = Settings()


def _name(req_i64: bool, block: int, settings: Settings = SETTINGS) -> str:
    return ("kv_indices" if req_i64 else "kv_indices_req32") + (
        "" if block == settings.block else f"_b{block}")


def block_config(bs: int, num_sms: Optional[int], settings: Settings = SETTINGS) -> tuple:
    """(BLOCK, num_warps) of a launch for bs requests: the few_* settings where they fit one
    program an SM (with an SM count; every program then runs at once and the kernel takes
    one program's latency), else block and num_warps."""
    if num_sms and bs <= num_sms:
        return settings.few_block, settings.few_num_warps
    return settings.block, settings.num_warps


def _signature(req_i64: bool) -> dict:
    return {"r2t_ptr": "*i32", "req_ptr": "*i64" if req_i64 else "*i32", "lens_ptr": "*i32",
            "start_ptr": "*i32", "v2p_ptr": "*i64", "out_ptr": "*i32", "r2t_s0": "i32",
            "max_ctx": "i32", "out_s0": "i32", "max_blocks": "i32", "num_vpages": "i32"}


def _generic_name(req_i64: bool) -> str:
    """The bundle's kernel for every page_size, page_mult, kv_start_idx and address."""
    return _name(req_i64, SETTINGS.block) + "_generic"


#: K3: PAGE 64; PAGE_MULT 1 (static pool) and 24 (unified pool, one block per MLA layer);
#: v2p absent or given; req_pool_indices int64 or int32; no kv_start_idx. The generic kernel
#: (the many-requests BLOCK) for the rest.
AOT_SPECIALIZATIONS = [
    Spec(kv_indices_kernel, name=_name(req_i64, block), signature=_signature(req_i64),
         constexprs={"PAGE": PAGE, "PAGE_MULT": mult, "HAS_START": False, "HAS_V2P": v2p,
                     "BLOCK": block},
         divisibility=["r2t_ptr", "req_ptr", "lens_ptr", "out_ptr"], num_warps=warps)
    for block, warps in dict.fromkeys((block_config(1 << 30, None), block_config(1, 1)))
    for req_i64 in (True, False) for mult in (1, 24) for v2p in (False, True)
] + [
    Spec(kv_indices_generic_kernel, name=_generic_name(req_i64),
         signature=dict(_signature(req_i64), page_size="i32", page_mult="i32", has_start="i32"),
         constexprs={"HAS_V2P": v2p, "BLOCK": SETTINGS.block}, num_warps=SETTINGS.num_warps)
    for req_i64 in (True, False) for v2p in (False, True)
]


def kv_indices(req_to_token: Any, req_pool_indices: Any, page_kernel_lens: Any,
               kv_indices: Any, kv_start_idx: Optional[Any] = None, v2p: Optional[Any] = None,
               page_size: int = PAGE, page_mult: int = 1, *,
               settings: Settings = SETTINGS) -> Any:
    """Fills ``kv_indices`` int32 [bs, max_blocks] (row stride free, last dim contiguous) from
    ``req_to_token`` int32 [max_reqs, max_ctx] (last dim contiguous), ``req_pool_indices``
    int32/int64 [bs], ``page_kernel_lens`` int32 [bs], optional ``kv_start_idx`` int32 [bs] and
    optional ``v2p`` int64 [num_pages + 1]; returns kv_indices. Checks raise before launch."""
    op = "kv_indices"
    L.check_dtype(op, "req_to_token", req_to_token, ("int32",))
    req_dt = L.check_dtype(op, "req_pool_indices", req_pool_indices, ("int32", "int64"))
    L.check_dtype(op, "page_kernel_lens", page_kernel_lens, ("int32",))
    L.check_dtype(op, "kv_indices", kv_indices, ("int32",))
    _, max_ctx = L.check_shape(op, "req_to_token", req_to_token, (None, None))
    (bs,) = L.check_shape(op, "req_pool_indices", req_pool_indices, (None,))
    L.check_shape(op, "page_kernel_lens", page_kernel_lens, (bs,))
    _, max_blocks = L.check_shape(op, "kv_indices", kv_indices, (bs, None))
    L.check_inner_contiguous(op, "req_to_token", req_to_token)
    L.check_inner_contiguous(op, "kv_indices", kv_indices)
    L.check_contiguous(op, "req_pool_indices", req_pool_indices)
    L.check_contiguous(op, "page_kernel_lens", page_kernel_lens)
    named = [("req_to_token", req_to_token), ("req_pool_indices", req_pool_indices),
             ("page_kernel_lens", page_kernel_lens), ("kv_indices", kv_indices)]
    if kv_start_idx is not None:
        L.check_dtype(op, "kv_start_idx", kv_start_idx, ("int32",))
        L.check_shape(op, "kv_start_idx", kv_start_idx, (bs,))
        L.check_contiguous(op, "kv_start_idx", kv_start_idx)
        named.append(("kv_start_idx", kv_start_idx))
    num_vpages = 0
    if v2p is not None:
        L.check_dtype(op, "v2p", v2p, ("int64",))
        (num_vpages,) = L.check_shape(op, "v2p", v2p, (None,))
        L.check_contiguous(op, "v2p", v2p)
        named.append(("v2p", v2p))
    for what, v in (("page_size", page_size), ("page_mult", page_mult)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{op}: {what} must be a positive int, got {v!r}")
    if page_size & (page_size - 1):
        raise ValueError(f"{op}: page_size must be a power of two, got {page_size}")
    L.check_same_device(op, *named)
    r2t_s0 = L.strides(req_to_token)[0]
    out_s0 = L.strides(kv_indices)[0]
    L.check_int32_extent(op, "req_to_token row stride", r2t_s0)
    block, num_warps = block_config(bs, L.num_sms(kv_indices), settings)
    L.check_int32_extent(op, "max_ctx + page_size * BLOCK", max_ctx + page_size * block)
    L.check_int32_extent(op, "kv_indices row stride", out_s0)
    L.check_int32_extent(op, "max_blocks + BLOCK", max_blocks + block)
    L.check_int32_extent(op, "num_pages + 1", num_vpages)
    if bs == 0 or max_blocks == 0:
        return kv_indices
    # absent optional pointers: the kernel never reads them (HAS_START / HAS_V2P = False), but
    # the ABI wants a pointer of the declared type
    start_arg = kv_start_idx if kv_start_idx is not None else page_kernel_lens
    if v2p is not None:
        v2p_arg = v2p
    elif req_dt == "int64":
        v2p_arg = req_pool_indices
    else:
        import torch

        v2p_arg = torch.empty(1, dtype=torch.int64, device=kv_indices.device)
    args = (req_to_token, req_pool_indices, page_kernel_lens, start_arg, v2p_arg, kv_indices,
            r2t_s0, max_ctx, out_s0, max_blocks, num_vpages)
    has_start, has_v2p = kv_start_idx is not None, v2p is not None
    L.launch(kv_indices_kernel, _name(req_dt == "int64", block, settings), (bs,), args,
             {"PAGE": page_size, "PAGE_MULT": page_mult, "HAS_START": has_start,
              "HAS_V2P": has_v2p, "BLOCK": block}, num_warps,
             generic=L.Launch(kv_indices_generic_kernel, _generic_name(req_dt == "int64"), (bs,),
                              args + (page_size, page_mult, int(has_start)),
                              {"HAS_V2P": has_v2p, "BLOCK": SETTINGS.block},
                              SETTINGS.num_warps))
    return kv_indices
