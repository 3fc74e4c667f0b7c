"""MLA latent KV cache scatter, BF16 layout.

For every token t with 0 <= loc[t] < num_slots:

    cache[loc[t], :512]    = kv_c[t, :]      (the compressed latent, 512)
    cache[loc[t], 512:576] = k_pe[t, :]      (the rope part, 64)

an exact bf16 copy (the concatenation happens on the way). ``loc`` is int64 [T]; loc < 0 (a
padded slot) skips the token, and so does loc >= num_slots (the kernel never writes outside the
cache). ``cache`` is [num_slots, 576] or paged [pages, page_size, 576]; loc indexes its rows in
order, row loc at

    (loc // page_size) * page_stride + (loc % page_size) * row_stride

so the pages may be strided apart (one layer's view ``pool[:, l]`` of a [pages, layers,
page_size, 576] pool); a cache whose rows are uniformly strided is one page. kv_c and k_pe may
be row-strided (slices of a projection output). Each program moves ROWS tokens as [ROWS, 512]
and [ROWS, 64] tiles; the cache offsets are 64-bit, of any size.

FP8 layout (``mla_kv_scatter_fp8``): ``cache`` uint8 [num_slots, 656] (or paged [pages,
page_size, 656], addressed as above); per token, at byte offsets of its row:

    [0, 512)     q[k]  = sat_e4m3(f32(kv_c[t, k]) / s[k // 128])    512 e4m3 latent values
    [512, 528)   s[j]  = max(absmax(kv_c[t, 128j:128(j+1)]), 1e-10) / 448      4 fp32 scales
    [528, 656)   k_pe[t, :]                                          64 bf16 rope values (copy)

(the IEEE divisions' bits, from quant.py's division-free form; the e4m3 conversion rounds to
nearest even and saturates). The absmax is floored at 1e-10 as in per-token-group quant, so an
all-zero group stores zeros and a tiny finite scale instead of 0/0 = NaN. The kernel receives
the cache three times, as float8e4m3, fp32 and bf16 pointers to the same bytes (656 is a
multiple of 16), and writes each part through the pointer of its type. loc < 0 or >= num_slots
skips the token. Its cache offsets are 32-bit where every byte of the cache is within 2^31 - 1
of its start, 64-bit beyond (two specializations). The bundle's kernels assume 16-byte
aligned tensors and strides; ``mla_kv_scatter_bf16_generic`` and ``mla_kv_scatter_fp8_generic``
take every other input the wrappers accept.

Specification: docs/kernels/mla_cache.md
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .quant import fp8_quant_groups_recip

KV_LORA, ROPE = 512, 64
#: FP8 row: 512 e4m3 + 4 fp32 scales + 64 bf16.
FP8_GROUP, FP8_ROW_BYTES = 128, KV_LORA + 4 * (KV_LORA // 128) + 2 * ROPE


@kiln.jit
def cache_row(loc, page_size, page_stride, row_stride, PAGED: kl.constexpr,
              INDEX64: kl.constexpr):
    """The offset of cache row ``loc`` in units of the strides: ``loc * row_stride`` (a
    cache of one page), or with PAGED ``(loc // page_size) * page_stride + (loc % page_size)
    * row_stride``, for loc in [0, num_slots) (num_slots < 2^31: the page split is an
    unsigned 32-bit division, the cheaper one). int64 with INDEX64, else int32 (the wrappers
    pick INDEX64 where an offset into the cache could pass 2^31 - 1)."""
    if PAGED:
        page = (loc.to(kl.uint32) // page_size).to(kl.int32)
        within = loc.to(kl.int32) - page * page_size
        if INDEX64:
            return page.to(kl.int64) * page_stride + within.to(kl.int64) * row_stride
        return page * page_stride + within * row_stride
    if INDEX64:
        return loc.to(kl.int64) * row_stride
    return loc.to(kl.int32) * row_stride


@kiln.jit(num_warps=4)
def mla_kv_scatter_bf16_kernel(kv_ptr, pe_ptr, loc_ptr, cache_ptr, T, num_slots, kv_s0, pe_s0,
                               cache_s0, page_size, page_s0, ROWS: kl.constexpr,
                               KV_DIM: kl.constexpr, PE_DIM: kl.constexpr,
                               LOAD_EVICT: kl.constexpr = "", STORE_CACHE: kl.constexpr = "",
                               PROGRAMS: kl.constexpr = 0, PAGED: kl.constexpr = False):
    """The rows are loaded for every token t < T, in parallel with loc (a skipped token's
    row is read and not written), not after loc and masked by it. The cache offsets are
    64-bit (loc is int64); cache_s0 is the row stride, and with PAGED the rows are pages of
    page_size rows page_s0 apart (``cache_row``). LOAD_EVICT: the loads' eviction policy
    ("evict_first": kv_c, k_pe and loc are read once). STORE_CACHE: the cache stores' cache
    modifier (".cs", streaming). PROGRAMS > 0: compiled for PROGRAMS programs an SM
    (``.minnctapersm``: registers capped to fit)."""
    if PROGRAMS > 0:
        kl.min_programs_per_sm(PROGRAMS)
    r = kl.program_id(0) * ROWS + kl.arange(0, ROWS)
    ck = kl.arange(0, KV_DIM)[None, :]
    cp = kl.arange(0, PE_DIM)[None, :]
    kl.pdl_wait()  # kv_c, k_pe and loc may come from the previous kernels in the stream
    rm = (r < T)[:, None]
    kv = kl.load(kv_ptr + (r * kv_s0)[:, None] + ck, mask=rm, other=0.0,
                 eviction_policy=LOAD_EVICT)
    pe = kl.load(pe_ptr + (r * pe_s0)[:, None] + cp, mask=rm, other=0.0,
                 eviction_policy=LOAD_EVICT)
    loc = kl.load(loc_ptr + r, mask=r < T, other=-1, eviction_policy=LOAD_EVICT)
    valid = (loc >= 0) & (loc < num_slots)
    if PAGED:
        loc = kl.where(valid, loc, 0)  # the page split takes loc in [0, num_slots)
    kl.pdl_launch_dependents()
    dst = cache_ptr + cache_row(loc, page_size, page_s0, cache_s0, PAGED, True)[:, None]
    kl.store(dst + ck, kv, mask=valid[:, None], cache_modifier=STORE_CACHE)
    kl.store(dst + KV_DIM + cp, pe, mask=valid[:, None], cache_modifier=STORE_CACHE)


@kiln.jit(num_warps=4)
def mla_kv_scatter_fp8_kernel(kv_ptr, pe_ptr, loc_ptr, cache_q, cache_f32, cache_bf16, T,
                              num_slots, kv_s0, pe_s0, row16, page_size, page16,
                              ROWS: kl.constexpr, KV_DIM: kl.constexpr, PE_DIM: kl.constexpr,
                              GROUP: kl.constexpr, STORE_CACHE: kl.constexpr = "",
                              PAGED: kl.constexpr = False, INDEX64: kl.constexpr = False):
    """Every load first: the latent and rope rows of every token t < T and their loc (a
    skipped token's row is read and quantized, not written), so each program waits for one
    DRAM round trip before its stores. The latent is quantized by quant.py's
    ``fp8_quant_groups_recip`` (no division per element; kv_c is bf16, the case
    test/python/test_quant_variants.py checks exhaustively: same bits), the codes stored
    through the float8e4m3 view ``cache_q`` as they are (no byte repacking), the 4 scales a
    token from the [4 x ROWS, 128] group tile by the thread holding column 0 (no layout
    conversion through shared memory). The stores address the cache by ``cache_row`` with
    the row stride row16 and, with PAGED, pages of page_size rows page16 apart (both in
    16-byte units): in 32 bits, or with INDEX64 in 64 bits (the wrapper picks INDEX64 where
    the offset of the cache's last byte passes 2^31 - 1). STORE_CACHE: the stores' cache
    modifier (".cs", streaming)."""
    NG: kl.constexpr = KV_DIM // GROUP
    # latent: ROWS tokens x NG groups as a [ROWS * NG, GROUP] tile
    j = kl.arange(0, ROWS * NG)
    r = kl.program_id(0) * ROWS + j // NG
    k = j % NG
    col = kl.arange(0, GROUP)[None, :]
    # rope: [ROWS, PE_DIM] bf16 copied behind the scales
    rr = kl.program_id(0) * ROWS + kl.arange(0, ROWS)
    cp = kl.arange(0, PE_DIM)[None, :]
    kl.pdl_wait()  # kv_c, k_pe and loc may come from the previous kernels in the stream
    kv = kl.load(kv_ptr + (r * kv_s0 + k * GROUP)[:, None] + col, mask=(r < T)[:, None],
                 other=0.0)
    loc = kl.load(loc_ptr + r, mask=r < T, other=-1)
    ok = (loc >= 0) & (loc < num_slots)
    lr = kl.load(loc_ptr + rr, mask=rr < T, other=-1)
    okr = ((lr >= 0) & (lr < num_slots))[:, None]
    pe = kl.load(pe_ptr + (rr * pe_s0)[:, None] + cp, mask=(rr < T)[:, None], other=0.0)
    q, s = fp8_quant_groups_recip(kv.to(kl.float32), False)
    # row offsets in 16-byte units, so that every part's offset is visibly a multiple of 16
    # bytes (16-byte vector stores)
    row = cache_row(kl.where(ok, loc, 0), page_size, page16, row16, PAGED, INDEX64)
    kl.store(cache_q + (row * 16 + k * GROUP)[:, None] + col, q, mask=ok[:, None],
             cache_modifier=STORE_CACHE)
    kl.store(cache_f32 + (row * 4 + KV_DIM // 4 + k)[:, None] + col * 0,
             s[:, None] + kl.zeros([ROWS * NG, GROUP], kl.float32),
             mask=ok[:, None] & (col == 0), cache_modifier=STORE_CACHE)
    kl.pdl_launch_dependents()
    lrow = cache_row(kl.where(okr, lr[:, None], 0), page_size, page16, row16, PAGED, INDEX64)
    kl.store(cache_bf16 + (lrow * 8 + (KV_DIM + 4 * NG) // 2) + cp, pe, mask=okr,
             cache_modifier=STORE_CACHE)


@dataclasses.dataclass(frozen=True)
class Settings:
    """mla_kv_scatter's and mla_kv_scatter_fp8's tuning; measured in
    bench/results/kimi_k3/mla_cache.md."""
    rows: int = 16  # bf16: tokens a program, [16, 512] + [16, 64] ...
    num_warps: int = 4  # ... on 4 warps
    min_programs: int = 8  # bf16 programs an SM (62 registers, no spill): T = 16384 in one wave
    load_evict: str = "evict_first"  # bf16 loads: kv_c, k_pe and loc are read once
    store_cache: str = ".cs"  # bf16 stores streaming, predicated (no branch around a row)
    fp8_rows: int = 8  # FP8: tokens a program, [32, 128] latent + [8, 64] rope ...
    fp8_warps: int = 4  # ... on 4 warps
    fp8_store_cache: str = ".cs"  # FP8 stores streaming
    fp8_maxnreg: Optional[int] = None  # ptxas's choice (a cap gained nothing)


SETTINGS = Settings()


def launch_config(paged: bool = False, settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps) of the bf16 scatter into a cache of one page (``_cache_pages``)
    or, ``paged``, of several."""
    return ({"ROWS": settings.rows, "KV_DIM": KV_LORA, "PE_DIM": ROPE,
             "LOAD_EVICT": settings.load_evict, "STORE_CACHE": settings.store_cache,
             "PROGRAMS": settings.min_programs, "PAGED": paged}, settings.num_warps)


def fp8_launch_config(paged: bool = False, index64: bool = False,
                      settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps, maxnreg) of the FP8 scatter into a cache of one page or,
    ``paged``, of several; ``index64``: 64-bit cache offsets (``_fp8_index64``)."""
    return ({"ROWS": settings.fp8_rows, "KV_DIM": KV_LORA, "PE_DIM": ROPE, "GROUP": FP8_GROUP,
             "STORE_CACHE": settings.fp8_store_cache, "PAGED": paged, "INDEX64": index64},
            settings.fp8_warps, settings.fp8_maxnreg)


#: the bundle's bf16 scatter for tensors at any address and any strides (the fast one
#: assumes 16-byte aligned tensors and strides multiples of 16 elements)
GENERIC = "mla_kv_scatter_bf16_generic"
#: the bundle's FP8 scatter for loc at any address and kv_c / k_pe row strides that are
#: multiples of 8 elements (16 bytes, the wrapper's check), not of 16 as the fast one assumes
FP8_GENERIC = "mla_kv_scatter_fp8_generic"
_BF16_FAST = ["kv_ptr", "pe_ptr", "loc_ptr", "cache_ptr", "kv_s0", "pe_s0", "cache_s0",
              "page_s0"]
_FP8_FAST = ["kv_ptr", "pe_ptr", "loc_ptr", "cache_q", "cache_f32", "cache_bf16", "kv_s0",
             "pe_s0"]
#: what mla_kv_scatter_fp8 checks: kv_c, k_pe and the cache 16-byte aligned, the row strides
#: multiples of 8 elements
_FP8_CHECKED = {"kv_ptr": 16, "pe_ptr": 16, "cache_q": 16, "cache_f32": 16, "cache_bf16": 16,
                "kv_s0": 8, "pe_s0": 8}


def generic_constexprs(constexprs: dict) -> dict:
    """The generic bf16 scatter's constexprs from the fast one's: without the programs-an-SM
    register cap (its scalar accesses need about 100 registers; under the cap it spilled)."""
    return dict(constexprs, PROGRAMS=0)


def _bf16_spec(paged: bool, generic: bool = False) -> Spec:
    constexprs, num_warps = launch_config(paged)
    return Spec(mla_kv_scatter_bf16_kernel, name=GENERIC if generic else "mla_kv_scatter_bf16",
                signature={"kv_ptr": "*bf16", "pe_ptr": "*bf16", "loc_ptr": "*i64",
                           "cache_ptr": "*bf16", "T": "i32", "num_slots": "i32", "kv_s0": "i32",
                           "pe_s0": "i32", "cache_s0": "i32", "page_size": "i32",
                           "page_s0": "i32"},
                constexprs=generic_constexprs(constexprs) if generic else constexprs,
                divisibility=() if generic else _BF16_FAST, num_warps=num_warps)


def _fp8_spec(paged: bool, index64: bool, generic: bool = False) -> Spec:
    constexprs, num_warps, maxnreg = fp8_launch_config(paged, index64)
    return Spec(mla_kv_scatter_fp8_kernel, name=FP8_GENERIC if generic else "mla_kv_scatter_fp8",
                signature={"kv_ptr": "*bf16", "pe_ptr": "*bf16", "loc_ptr": "*i64",
                           "cache_q": "*f8e4m3", "cache_f32": "*f32", "cache_bf16": "*bf16",
                           "T": "i32", "num_slots": "i32", "kv_s0": "i32", "pe_s0": "i32",
                           "row16": "i32", "page_size": "i32", "page16": "i32"},
                constexprs=constexprs, divisibility=_FP8_CHECKED if generic else _FP8_FAST,
                num_warps=num_warps, maxnreg=maxnreg)


AOT_SPECIALIZATIONS = [
    _bf16_spec(paged, generic) for generic in (False, True) for paged in (False, True)
] + [
    _fp8_spec(paged, index64, generic) for generic in (False, True)
    for paged in (False, True) for index64 in (False, True)]


def _cache_pages(op: str, cache: Any, width: int = KV_LORA + ROPE) -> tuple:
    """(num_slots, page_size, page_stride, row_stride) of a [..., width] cache (strides in
    elements), its leading dimensions merged where uniformly strided: into one, rows
    row_stride apart (one page of num_slots rows, page_stride 0), or two, pages of page_size
    rows page_stride apart (e.g. one layer's view ``pool[:, l]`` of a [pages, layers,
    page_size, width] pool). loc indexes the rows in the order of the leading dimensions."""
    shp, st = L.shape(cache), L.strides(cache)
    if len(shp) < 2 or shp[-1] != width:
        raise ValueError(f"{op}: cache must be [num_slots, {width}] or [pages, "
                         f"page_size, {width}], got shape {list(shp)}")
    L.check_inner_contiguous(op, "cache", cache)
    rows = math.prod(shp[:-1])
    levels = []  # (rows, stride), the innermost first
    for n, s in zip(reversed(shp[:-1]), reversed(st[:-1])):
        if n == 1:
            continue
        if levels and s == levels[-1][0] * levels[-1][1]:
            levels[-1] = (levels[-1][0] * n, levels[-1][1])
        else:
            levels.append((n, s))
    if rows <= 1:  # no row or one: any stride
        return rows, rows, 0, width
    if len(levels) == 1:
        return rows, rows, 0, levels[0][1]
    if len(levels) > 2:
        raise ValueError(f"{op}: the cache must be rows or pages of rows, uniformly strided "
                         f"within each (loc addresses (loc // page_size) * page stride + "
                         f"(loc % page_size) * row stride), got shape {list(shp)} and strides "
                         f"{st}")
    (page_size, row_stride), (pages, page_stride) = levels
    return rows, page_size, page_stride, row_stride


def _check_pages(op: str, slots: int, page_stride: int, row_stride: int) -> None:
    """The kernels' 32-bit arguments: num_slots (loc is compared with it and split into
    pages in 32 bits) and the strides."""
    L.check_int32_extent(op, "num_slots", slots)
    L.check_int32_extent(op, "the cache's page stride", page_stride)
    L.check_int32_extent(op, "the cache's row stride", row_stride)


def _fp8_index64(slots: int, page_size: int, page_bytes: int, row_bytes: int) -> bool:
    """Whether the FP8 scatter into this cache needs 64-bit offsets: the offset of the
    cache's last byte, an upper bound of every offset the 32-bit kernel computes (the last
    row's codes end 144 bytes before it), passes 2^31 - 1."""
    last = ((slots // page_size - 1) * page_bytes + (page_size - 1) * row_bytes
            + FP8_ROW_BYTES - 1)
    return last > L.INT32_MAX


def _check_rows(op: str, kv_c: Any, k_pe: Any, loc: Any) -> int:
    """Checks the new rows of both layouts (bf16 kv_c [T, 512], k_pe [T, 64] or [T, 1, 64]
    with contiguous last dims, int64 loc [T]); returns T."""
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
    return t


def mla_kv_scatter(kv_c: Any, k_pe: Any, loc: Any, cache: Any, *,
                   settings: Settings = SETTINGS) -> Any:
    """Writes ``cat(kv_c[t], k_pe[t])`` into ``cache[loc[t]]`` (bf16 layout); kv_c [T, 512],
    k_pe [T, 64] or [T, 1, 64] (bf16, last dim contiguous), loc int64 [T], cache [num_slots,
    576] or pages [pages, page_size, 576] (``_cache_pages``); returns cache. Checks raise
    before launch."""
    op = "mla_kv_scatter"
    L.check_dtype(op, "cache", cache, ("bfloat16",))
    t = _check_rows(op, kv_c, k_pe, loc)
    slots, page_size, page_s0, row_s0 = _cache_pages(op, cache)
    _check_pages(op, slots, page_s0, row_s0)
    L.check_same_device(op, ("kv_c", kv_c), ("k_pe", k_pe), ("loc", loc), ("cache", cache))
    kv_s0, pe_s0 = L.strides(kv_c)[0], L.strides(k_pe)[0]
    constexprs, num_warps = launch_config(page_size < slots, settings)
    rows = constexprs["ROWS"]
    L.check_int32_extent(op, "T * row stride", t * max(kv_s0, pe_s0, 1) + rows)
    if slots == 0:
        return cache
    launch = L.Launch(mla_kv_scatter_bf16_kernel, "mla_kv_scatter_bf16",
                      ((t + rows - 1) // rows,),
                      (kv_c, k_pe, loc, cache, t, slots, kv_s0, pe_s0, row_s0, page_size,
                       page_s0), constexprs, num_warps)
    L.launch(*launch, generic=launch._replace(name=GENERIC,
                                              constexprs=generic_constexprs(constexprs)))
    return cache


def mla_kv_scatter_fp8(kv_c: Any, k_pe: Any, loc: Any, cache: Any, *,
                       settings: Settings = SETTINGS) -> Any:
    """Quantizes ``kv_c[t]`` per 128-group to e4m3 and writes it, its 4 fp32 scales and
    ``k_pe[t]`` into the 656-byte row ``cache[loc[t]]`` (FP8 layout, module docstring); kv_c
    [T, 512], k_pe [T, 64] or [T, 1, 64] (bf16, last dim contiguous, 16-byte row strides),
    loc int64 [T], cache uint8 [num_slots, 656] or pages [pages, page_size, 656]
    (``_cache_pages``; row and page strides multiples of 16 bytes); returns cache. Checks
    raise before launch."""
    op = "mla_kv_scatter_fp8"
    L.check_dtype(op, "cache", cache, ("uint8",))
    t = _check_rows(op, kv_c, k_pe, loc)
    slots, page_size, page_bytes, row_bytes = _cache_pages(op, cache, FP8_ROW_BYTES)
    for what, v in (("row", row_bytes), ("page", page_bytes)):
        if v % 16:
            raise ValueError(f"{op}: the cache's {what} stride ({v} bytes) must be a multiple "
                             f"of 16")
    _check_pages(op, slots, page_bytes, row_bytes)
    kv_s0 = L.strides(kv_c)[0] if t > 1 else 0
    pe_s0 = L.strides(k_pe)[0] if t > 1 else 0
    for what, v in (("kv_c", kv_s0), ("k_pe", pe_s0)):
        if v % 8:
            raise ValueError(f"{op}: the row stride of {what} ({v}) must be a multiple of 8 "
                             f"elements (16 bytes)")
    for what, v in (("kv_c", kv_c), ("k_pe", k_pe), ("cache", cache)):
        L.check_aligned(op, what, v)
    L.check_same_device(op, ("kv_c", kv_c), ("k_pe", k_pe), ("loc", loc), ("cache", cache))
    L.check_int32_extent(op, "T * row stride",
                         t * max(kv_s0, pe_s0, 1) + KV_LORA + settings.fp8_rows)
    if slots == 0 or t == 0:
        return cache
    constexprs, num_warps, maxnreg = fp8_launch_config(
        page_size < slots, _fp8_index64(slots, page_size, page_bytes, row_bytes), settings)
    rows = constexprs["ROWS"]
    import torch

    launch = L.Launch(mla_kv_scatter_fp8_kernel, "mla_kv_scatter_fp8", ((t + rows - 1) // rows,),
                      (kv_c, k_pe, loc, cache.view(torch.float8_e4m3fn),
                       cache.view(torch.float32), cache.view(torch.bfloat16), t, slots, kv_s0,
                       pe_s0, row_bytes // 16, page_size, page_bytes // 16), constexprs,
                      num_warps, maxnreg)
    L.launch(*launch, generic=launch._replace(name=FP8_GENERIC))
    return cache
