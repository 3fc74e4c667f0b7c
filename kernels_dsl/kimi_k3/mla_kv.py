"""MLA latent KV cache scatter, BF16 layout.

For every token t with 0 <= loc[t] < num_slots:

    cache[loc[t], :512]    = kv_c[t, :]      (the compressed latent, 512)
    cache[loc[t], 512:576] = k_pe[t, :]      (the rope part, 64)

an exact bf16 copy (the concatenation happens on the way). ``loc`` is int64 [T]; loc < 0 (a
padded slot) skips the token, and so does loc >= num_slots (the kernel never writes outside the
cache). ``cache`` is [num_slots, 576] or paged [pages, page_size, 576] (rows uniformly strided:
loc indexes the flattened rows). kv_c and k_pe may be row-strided (slices of a projection
output). Each program moves ROWS tokens as [ROWS, 512] and [ROWS, 64] tiles.

FP8 layout (``mla_kv_scatter_fp8``): ``cache`` uint8 [num_slots, 656] (or paged [pages,
page_size, 656]); per token, at byte offsets of its row:

    [0, 512)     q[k]  = sat_e4m3(f32(kv_c[t, k]) / s[k // 128])    512 e4m3 latent values
    [512, 528)   s[j]  = max(absmax(kv_c[t, 128j:128(j+1)]), 1e-10) / 448      4 fp32 scales
    [528, 656)   k_pe[t, :]                                          64 bf16 rope values (copy)

(the IEEE divisions' bits, from quant.py's division-free form; the e4m3 conversion rounds to
nearest even and saturates). The absmax is floored at 1e-10 as in per-token-group quant, so an
all-zero group stores zeros and a tiny finite scale instead of 0/0 = NaN. The kernel receives
the cache three times, as float8e4m3, fp32 and bf16 pointers to the same bytes (656 is a
multiple of 16), and writes each part through the pointer of its type. loc < 0 or >= num_slots
skips the token.

Specification: docs/kernels/mla_cache.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .quant import fp8_quant_groups_recip

KV_LORA, ROPE = 512, 64
#: FP8 row: 512 e4m3 + 4 fp32 scales + 64 bf16.
FP8_GROUP, FP8_ROW_BYTES = 128, KV_LORA + 4 * (KV_LORA // 128) + 2 * ROPE


@kiln.jit(num_warps=4)
def mla_kv_scatter_bf16_kernel(kv_ptr, pe_ptr, loc_ptr, cache_ptr, T, num_slots, kv_s0, pe_s0,
                               cache_s0, ROWS: kl.constexpr, KV_DIM: kl.constexpr,
                               PE_DIM: kl.constexpr, LOAD_EVICT: kl.constexpr = "",
                               STORE_CACHE: kl.constexpr = "", PROGRAMS: kl.constexpr = 0):
    """The rows are loaded for every token t < T, in parallel with loc (a skipped token's
    row is read and not written), not after loc and masked by it. LOAD_EVICT: the loads'
    eviction policy ("evict_first": kv_c, k_pe and loc are read once). STORE_CACHE: the
    cache stores' cache modifier (".cs", streaming). PROGRAMS > 0: compiled for PROGRAMS
    programs an SM (``.minnctapersm``: registers capped to fit)."""
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
    valid = ((loc >= 0) & (loc < num_slots))[:, None]
    kl.pdl_launch_dependents()
    dst = cache_ptr + (loc * cache_s0)[:, None]
    kl.store(dst + ck, kv, mask=valid, cache_modifier=STORE_CACHE)
    kl.store(dst + KV_DIM + cp, pe, mask=valid, cache_modifier=STORE_CACHE)


@kiln.jit(num_warps=4)
def mla_kv_scatter_fp8_kernel(kv_ptr, pe_ptr, loc_ptr, cache_q, cache_f32, cache_bf16, T,
                              num_slots, kv_s0, pe_s0, row16, ROWS: kl.constexpr,
                              KV_DIM: kl.constexpr, PE_DIM: kl.constexpr, GROUP: kl.constexpr,
                              STORE_CACHE: kl.constexpr = ""):
    """Every load first: the latent and rope rows of every token t < T and their loc (a
    skipped token's row is read and quantized, not written), so each program waits for one
    DRAM round trip before its stores. The latent is quantized by quant.py's
    ``fp8_quant_groups_recip`` (no division per element; kv_c is bf16, the case
    test/python/test_quant_variants.py checks exhaustively: same bits), the codes stored
    through the float8e4m3 view ``cache_q`` as they are (no byte repacking), the 4 scales a
    token from the [4 x ROWS, 128] group tile by the thread holding column 0 (no layout
    conversion through shared memory). The stores address the cache with 32-bit row offsets
    (loc is below num_slots where it is used; the wrapper checks that the cache's last row
    offset fits in int32). STORE_CACHE: the stores' cache modifier (".cs", streaming)."""
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
    # row16: the cache's row stride in 16-byte units, so that every part's offset is visibly
    # a multiple of 16 bytes (16-byte vector stores)
    row = kl.where(ok, loc, 0).to(kl.int32) * row16
    kl.store(cache_q + (row * 16 + k * GROUP)[:, None] + col, q, mask=ok[:, None],
             cache_modifier=STORE_CACHE)
    kl.store(cache_f32 + (row * 4 + KV_DIM // 4 + k)[:, None] + col * 0,
             s[:, None] + kl.zeros([ROWS * NG, GROUP], kl.float32),
             mask=ok[:, None] & (col == 0), cache_modifier=STORE_CACHE)
    kl.pdl_launch_dependents()
    lrow = kl.where(okr, lr[:, None], 0).to(kl.int32) * row16
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


def launch_config(settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps) of the bf16 scatter."""
    return ({"ROWS": settings.rows, "KV_DIM": KV_LORA, "PE_DIM": ROPE,
             "LOAD_EVICT": settings.load_evict, "STORE_CACHE": settings.store_cache,
             "PROGRAMS": settings.min_programs}, settings.num_warps)


def fp8_launch_config(settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps, maxnreg) of the FP8 scatter."""
    return ({"ROWS": settings.fp8_rows, "KV_DIM": KV_LORA, "PE_DIM": ROPE, "GROUP": FP8_GROUP,
             "STORE_CACHE": settings.fp8_store_cache}, settings.fp8_warps, settings.fp8_maxnreg)


AOT_SPECIALIZATIONS = [
    Spec(mla_kv_scatter_bf16_kernel, name="mla_kv_scatter_bf16",
         signature={"kv_ptr": "*bf16", "pe_ptr": "*bf16", "loc_ptr": "*i64", "cache_ptr": "*bf16",
                    "T": "i32", "num_slots": "i32", "kv_s0": "i32", "pe_s0": "i32",
                    "cache_s0": "i32"},
         constexprs=launch_config()[0],
         divisibility=["kv_ptr", "pe_ptr", "loc_ptr", "cache_ptr", "kv_s0", "pe_s0", "cache_s0"],
         num_warps=launch_config()[1]),
    Spec(mla_kv_scatter_fp8_kernel, name="mla_kv_scatter_fp8",
         signature={"kv_ptr": "*bf16", "pe_ptr": "*bf16", "loc_ptr": "*i64",
                    "cache_q": "*f8e4m3", "cache_f32": "*f32", "cache_bf16": "*bf16",
                    "T": "i32", "num_slots": "i32", "kv_s0": "i32", "pe_s0": "i32",
                    "row16": "i32"},
         constexprs=fp8_launch_config()[0],
         divisibility=["kv_ptr", "pe_ptr", "loc_ptr", "cache_q", "cache_f32", "cache_bf16",
                       "kv_s0", "pe_s0"],
         num_warps=fp8_launch_config()[1], maxnreg=fp8_launch_config()[2]),
]


def _cache_rows(op: str, cache: Any, width: int = KV_LORA + ROPE) -> tuple:
    """(num_slots, row stride) of a [..., width] cache whose rows are uniformly strided."""
    shp, st = L.shape(cache), L.strides(cache)
    if len(shp) < 2 or shp[-1] != width:
        raise ValueError(f"{op}: cache must be [num_slots, {width}] or [pages, "
                         f"page_size, {width}], got shape {list(shp)}")
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
    k_pe [T, 64] or [T, 1, 64] (bf16, last dim contiguous), loc int64 [T]; returns cache.
    Checks raise before launch."""
    op = "mla_kv_scatter"
    L.check_dtype(op, "cache", cache, ("bfloat16",))
    t = _check_rows(op, kv_c, k_pe, loc)
    slots, row_stride = _cache_rows(op, cache)
    L.check_same_device(op, ("kv_c", kv_c), ("k_pe", k_pe), ("loc", loc), ("cache", cache))
    kv_s0, pe_s0 = L.strides(kv_c)[0], L.strides(k_pe)[0]
    constexprs, num_warps = launch_config(settings)
    rows = constexprs["ROWS"]
    L.check_int32_extent(op, "T * row stride", t * max(kv_s0, pe_s0, 1) + rows)
    L.check_int32_extent(op, "num_slots", slots)
    if slots == 0:
        return cache
    L.launch(mla_kv_scatter_bf16_kernel, "mla_kv_scatter_bf16", ((t + rows - 1) // rows,),
             (kv_c, k_pe, loc, cache, t, slots, kv_s0, pe_s0, row_stride), constexprs,
             num_warps)
    return cache


def mla_kv_scatter_fp8(kv_c: Any, k_pe: Any, loc: Any, cache: Any, *,
                       settings: Settings = SETTINGS) -> Any:
    """Quantizes ``kv_c[t]`` per 128-group to e4m3 and writes it, its 4 fp32 scales and
    ``k_pe[t]`` into the 656-byte row ``cache[loc[t]]`` (FP8 layout, module docstring); kv_c
    [T, 512], k_pe [T, 64] or [T, 1, 64] (bf16, last dim contiguous, 16-byte row strides),
    loc int64 [T], cache uint8 [num_slots, 656] or [pages, page_size, 656] (row stride a
    multiple of 16 bytes); returns cache. Checks raise before launch."""
    op = "mla_kv_scatter_fp8"
    L.check_dtype(op, "cache", cache, ("uint8",))
    t = _check_rows(op, kv_c, k_pe, loc)
    slots, row_bytes = _cache_rows(op, cache, FP8_ROW_BYTES)
    if slots > 1 and row_bytes % 16:
        raise ValueError(f"{op}: the cache's row stride ({row_bytes} bytes) must be a multiple "
                         f"of 16")
    kv_s0 = L.strides(kv_c)[0] if t > 1 else 0
    pe_s0 = L.strides(k_pe)[0] if t > 1 else 0
    for what, v in (("kv_c", kv_s0), ("k_pe", pe_s0)):
        if v % 8:
            raise ValueError(f"{op}: the row stride of {what} ({v}) must be a multiple of 8 "
                             f"elements (16 bytes)")
    for what, v in (("kv_c", kv_c), ("k_pe", k_pe), ("cache", cache)):
        L.check_aligned(op, what, v)
    L.check_same_device(op, ("kv_c", kv_c), ("k_pe", k_pe), ("loc", loc), ("cache", cache))
    constexprs, num_warps, maxnreg = fp8_launch_config(settings)
    rows = constexprs["ROWS"]
    L.check_int32_extent(op, "T * row stride", t * max(kv_s0, pe_s0, 1) + KV_LORA + rows)
    L.check_int32_extent(op, "num_slots", slots)
    if slots == 0 or t == 0:
        return cache
    import torch

    row_bytes = row_bytes if slots > 1 else FP8_ROW_BYTES
    L.launch(mla_kv_scatter_fp8_kernel, "mla_kv_scatter_fp8", ((t + rows - 1) // rows,),
             (kv_c, k_pe, loc, cache.view(torch.float8_e4m3fn), cache.view(torch.float32),
              cache.view(torch.bfloat16), t, slots, kv_s0, pe_s0, row_bytes // 16), constexprs,
             num_warps, maxnreg)
    return cache
