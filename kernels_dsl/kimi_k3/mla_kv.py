"""MLA latent KV cache scatter, BF16 layout (KERNELS.md §3.8 / §8.5).

For every token t with 0 <= loc[t] < num_slots:

    cache[loc[t], :512]    = kv_c[t, :]      (the compressed latent, 512)
    cache[loc[t], 512:576] = k_pe[t, :]      (the rope part, 64)

an exact bf16 copy (the concatenation happens on the way). ``loc`` is int64 [T]; loc < 0 (a
padded slot) skips the token, and so does loc >= num_slots (the kernel never writes outside the
cache). ``cache`` is [num_slots, 576] or paged [pages, page_size, 576] (rows uniformly strided:
loc indexes the flattened rows). kv_c and k_pe may be row-strided (slices of a projection
output). Each program moves ROWS tokens as [ROWS, 512] and [ROWS, 64] tiles.

FP8 layout (``mla_kv_scatter_fp8``, §8.5): ``cache`` uint8 [num_slots, 656] (or paged [pages,
page_size, 656]); per token, at byte offsets of its row:

    [0, 512)     q[k]  = sat_e4m3(f32(kv_c[t, k]) / s[k // 128])    512 e4m3 latent values
    [512, 528)   s[j]  = max(absmax(kv_c[t, 128j:128(j+1)]), 1e-10) / 448      4 fp32 scales
    [528, 656)   k_pe[t, :]                                          64 bf16 rope values (copy)

(IEEE divisions, or with ``FP8_RECIP`` quant.py's division-free form that gives the same
bits; the e4m3 conversion rounds to nearest even and saturates). §8.5 writes the scale
as ``absmax / 448``; kiln floors absmax at 1e-10 as §8.2 does, so an all-zero group stores zeros
and a tiny finite scale instead of 0/0 = NaN. The kernel receives the cache three times, as
uint8, fp32 and bf16 pointers to the same bytes (656 is a multiple of 16), and writes each part
through the pointer of its type (with ``FP8_Q_F8`` the codes through a float8e4m3 view).
loc < 0 or >= num_slots skips the token.
"""

from __future__ import annotations

from typing import Any

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .quant import fp8_quant_groups, fp8_quant_groups_recip

KV_LORA, ROPE = 512, 64
#: FP8 row: 512 e4m3 + 4 fp32 scales + 64 bf16.
FP8_GROUP, FP8_ROW_BYTES = 128, KV_LORA + 4 * (KV_LORA // 128) + 2 * ROPE


@kiln.jit(num_warps=4)
def mla_kv_scatter_bf16_kernel(kv_ptr, pe_ptr, loc_ptr, cache_ptr, T, num_slots, kv_s0, pe_s0,
                               cache_s0, ROWS: kl.constexpr, KV_DIM: kl.constexpr,
                               PE_DIM: kl.constexpr, EARLY: kl.constexpr = False,
                               PDL: kl.constexpr = False, LOAD_EVICT: kl.constexpr = "",
                               STORE_CACHE: kl.constexpr = "", PROGRAMS: kl.constexpr = 0):
    """EARLY: the rows are loaded for every token t < T, in parallel with loc (a skipped
    token's row is read and not written), instead of after loc, masked by it. PDL: a
    programmatic dependent launch (``pdl_wait`` before the first load). LOAD_EVICT: the
    loads' eviction policy ("" or "evict_first": kv_c, k_pe and loc are read once).
    STORE_CACHE: the cache stores' cache modifier ("" or ".cs", streaming). PROGRAMS > 0:
    compiled for PROGRAMS programs an SM (``.minnctapersm``: registers capped to fit)."""
    if PROGRAMS > 0:
        kl.min_programs_per_sm(PROGRAMS)
    r = kl.program_id(0) * ROWS + kl.arange(0, ROWS)
    ck = kl.arange(0, KV_DIM)[None, :]
    cp = kl.arange(0, PE_DIM)[None, :]
    if PDL:
        kl.pdl_wait()  # kv_c, k_pe and loc may come from the previous kernels in the stream
    if EARLY:
        rm = (r < T)[:, None]
        kv = kl.load(kv_ptr + (r * kv_s0)[:, None] + ck, mask=rm, other=0.0,
                     eviction_policy=LOAD_EVICT)
        pe = kl.load(pe_ptr + (r * pe_s0)[:, None] + cp, mask=rm, other=0.0,
                     eviction_policy=LOAD_EVICT)
    loc = kl.load(loc_ptr + r, mask=r < T, other=-1, eviction_policy=LOAD_EVICT)
    valid = ((loc >= 0) & (loc < num_slots))[:, None]
    if not EARLY:
        kv = kl.load(kv_ptr + (r * kv_s0)[:, None] + ck, mask=valid, other=0.0,
                     eviction_policy=LOAD_EVICT)
        pe = kl.load(pe_ptr + (r * pe_s0)[:, None] + cp, mask=valid, other=0.0,
                     eviction_policy=LOAD_EVICT)
    if PDL:
        kl.pdl_launch_dependents()
    dst = cache_ptr + (loc * cache_s0)[:, None]
    kl.store(dst + ck, kv, mask=valid, cache_modifier=STORE_CACHE)
    kl.store(dst + KV_DIM + cp, pe, mask=valid, cache_modifier=STORE_CACHE)


@kiln.jit(num_warps=4)
def mla_kv_scatter_fp8_kernel(kv_ptr, pe_ptr, loc_ptr, cache_q, cache_f32, cache_bf16, T,
                              num_slots, kv_s0, pe_s0, row16, ROWS: kl.constexpr,
                              KV_DIM: kl.constexpr, PE_DIM: kl.constexpr, GROUP: kl.constexpr,
                              RECIP: kl.constexpr = False, EARLY: kl.constexpr = False,
                              Q_F8: kl.constexpr = False, ROPE_FIRST: kl.constexpr = False,
                              SCALE_TILE: kl.constexpr = False, LOAD_EVICT: kl.constexpr = "",
                              STORE_CACHE: kl.constexpr = ""):
    """RECIP: quant.py's ``fp8_quant_groups_recip`` (no division per element; kv_c is bf16,
    the case test/python/test_quant_variants.py checks exhaustively: same bits). EARLY: the
    rows are loaded for every token t < T, in parallel with loc (a skipped token's row is
    read and quantized, not written), instead of after loc, masked by it; the stores then
    address the cache with 32-bit row offsets (loc is below num_slots where it is used).
    Q_F8: ``cache_q`` is the cache viewed as float8e4m3 and the codes are stored as they are;
    else it is the uint8 view and they are bitcast to uint8 first, which the lowering
    unpacks from each e4m3x2 conversion's two bytes and repacks byte by byte (sm_90a SASS of
    the kernel at 2 tokens on 1 warp: 608 -> 536 instructions, PRMT + LOP3 + SHF 105 -> 35).
    ROPE_FIRST: the rope row and its loc loaded before the quantization, with the latent,
    instead of after the latent's stores. SCALE_TILE: the scales stored from the group tile
    by the thread holding column 0 of each group (same bits). LOAD_EVICT and STORE_CACHE:
    as the bf16 kernel's (the loads' eviction policy, the stores' cache modifier)."""
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
    if EARLY:
        kv = kl.load(kv_ptr + (r * kv_s0 + k * GROUP)[:, None] + col, mask=(r < T)[:, None],
                     other=0.0, eviction_policy=LOAD_EVICT)
    loc = kl.load(loc_ptr + r, mask=r < T, other=-1, eviction_policy=LOAD_EVICT)
    ok = (loc >= 0) & (loc < num_slots)
    if ROPE_FIRST:
        lr = kl.load(loc_ptr + rr, mask=rr < T, other=-1, eviction_policy=LOAD_EVICT)
        okr = ((lr >= 0) & (lr < num_slots))[:, None]
        pe = kl.load(pe_ptr + (rr * pe_s0)[:, None] + cp,
                     mask=(rr < T)[:, None] if EARLY else okr, other=0.0,
                     eviction_policy=LOAD_EVICT)
    if not EARLY:
        kv = kl.load(kv_ptr + (r * kv_s0 + k * GROUP)[:, None] + col, mask=ok[:, None],
                     other=0.0, eviction_policy=LOAD_EVICT)
    if RECIP:
        q, s = fp8_quant_groups_recip(kv.to(kl.float32), False)
    else:
        q, s = fp8_quant_groups(kv.to(kl.float32), False)
    # row16: the cache's row stride in 16-byte units, so that every part's offset is visibly
    # a multiple of 16 bytes (16-byte vector stores)
    if EARLY:
        # loc is in [0, num_slots) where it is used: 32-bit row offsets (the wrapper checks
        # that the cache's last row offset fits in int32); 2091 -> 2025 SASS instructions
        row = kl.where(ok, loc, 0).to(kl.int32) * row16
    else:
        row = loc * row16  # int64
    if Q_F8:
        kl.store(cache_q + (row * 16 + k * GROUP)[:, None] + col, q, mask=ok[:, None],
                 cache_modifier=STORE_CACHE)
    else:
        kl.store(cache_q + (row * 16 + k * GROUP)[:, None] + col,
                 q.to(kl.uint8, bitcast=True), mask=ok[:, None], cache_modifier=STORE_CACHE)
    if SCALE_TILE:
        kl.store(cache_f32 + (row * 4 + KV_DIM // 4 + k)[:, None] + col * 0,
                 s[:, None] + kl.zeros([ROWS * NG, GROUP], kl.float32),
                 mask=ok[:, None] & (col == 0), cache_modifier=STORE_CACHE)
    else:
        kl.store(cache_f32 + (row * 4 + KV_DIM // 4) + k, s, mask=ok, cache_modifier=STORE_CACHE)
    if not ROPE_FIRST:
        lr = kl.load(loc_ptr + rr, mask=rr < T, other=-1, eviction_policy=LOAD_EVICT)
        okr = ((lr >= 0) & (lr < num_slots))[:, None]
        pe = kl.load(pe_ptr + (rr * pe_s0)[:, None] + cp,
                     mask=(rr < T)[:, None] if EARLY else okr, other=0.0,
                     eviction_policy=LOAD_EVICT)
    kl.pdl_launch_dependents()
    if EARLY:
        lrow = kl.where(okr, lr[:, None], 0).to(kl.int32) * row16
    else:
        lrow = lr[:, None] * row16
    kl.store(cache_bf16 + (lrow * 8 + (KV_DIM + 4 * NG) // 2) + cp, pe, mask=okr,
             cache_modifier=STORE_CACHE)


#: [8, 512] + [8, 64] per program on 128 threads: the H200 sweep (bench/kimi_k3/run.py
#: --sweep, T = 16384) with EARLY_LOADS and BF16_PDL 11.58 us (77.0 % of copy bandwidth), 4 /
#: 4 warps 12.48 us, 16 / 8 warps 11.58 us; without both 12.42-12.85 us. 16 tokens on 4
#: warps with BF16_MIN_PROGRAMS (below): one wave at T = 16384.
ROWS, NUM_WARPS = 16, 4
#: FP8: 8 tokens per program, [32, 128] latent + [8, 64] rope on one warp. FP8_RECIP: the
#: kernel's RECIP (same bits). H200 sweep at T = 16384 (``bench/kimi_k3/run.py --sweep``,
#: bench/results/h200-bench_kimi_k3_sweep.md): 1 warp 14.5 us (48.2 % of copy bandwidth),
#: 4 warps 18.8 us; IEEE division on 4 warps 20.2 us. With EARLY_LOADS: 2 tokens 13.2 us
#: (53.2 %), 8 14.3 us. With FP8_Q_F8, FP8_ROPE_FIRST and FP8_SCALE_TILE: 8 tokens on 4 warps
#: 10.23 us (68.4 %), 4 on 2 10.26, 2 on 1 12.28, 1 on 1 21.7.
FP8_ROWS, FP8_WARPS = 8, 4
FP8_RECIP = True
#: EARLY_LOADS (both layouts; the kernels' EARLY): the rows are loaded for every token in
#: parallel with loc instead of after it. Without it each program waits for two DRAM round
#: trips before its first store (loc, then the rows masked by loc); in the sm_90a SASS the
#: row loads are predicated on loc's comparison. A token with loc < 0 or >= num_slots now
#: costs its row's read (not its write). BF16_PDL: the bf16 kernel as a programmatic
#: dependent launch, as the FP8 one already is. Same bytes written. H200 (``bench/kimi_k3/run.py
#: --sweep --only mla_kv_scatter``, 4 / 4 warps): 12.42 us without both, 12.24 with EARLY_LOADS,
#: 11.88 with BF16_PDL, 12.48 with both (8 / 4 warps: 12.81 -> 11.58 us); FP8 14.84 -> 14.29.
EARLY_LOADS, BF16_PDL = True, True
#: BF16_LOAD_EVICT: the bf16 kernel's LOAD_EVICT, the loads' eviction policy ("evict_first":
#: kv_c, k_pe and loc are read once, so L2 drops them before the cache rows just written).
#: BF16_STORE_CACHE: its STORE_CACHE, the cache stores' modifier (".cs": streaming, evict
#: first; the predicated ``st.global.cs`` also replaces the branch around each row's store:
#: sm_90a SASS at 8 / 4 warps 171 -> 156 instructions, 46 registers). BF16_MIN_PROGRAMS: its
#: PROGRAMS, the programs an SM it is compiled for (0: ptxas's choice). At T = 16384 the
#: default 8 / 4 warps (46 registers: 10 programs an SM, 1320 on 132 SMs) runs 2048 programs
#: in 1.55 waves; 4 tokens on 2 warps at 32 programs an SM (32 registers, no spill: 4224 >=
#: 4096) and 16 on 4 warps at 8 (62 registers, no spill: 1056 >= 1024) are one wave, every
#: load issued at the start and no second wave's launch behind the first's stores. 16 an SM
#: at 8 / 4 warps spills (32 registers, 52 bytes); 12 an SM fits in 40 (1.29 waves). H200
#: sweep (``bench/kimi_k3/run.py --sweep --only mla_kv_scatter``, one run; 8 / 4 warps
#: without the three: 11.56-12.63 us): 16 / 4 warps at 8 an SM with evict_first and .cs
#: 10.97 us (81.2 % of copy bandwidth), .cs alone 11.11, neither 11.12; 32 / 8 at 4 11.09;
#: 4 / 2 at 32 11.16. Hence ROWS, NUM_WARPS = 16, 4 above.
BF16_LOAD_EVICT, BF16_STORE_CACHE, BF16_MIN_PROGRAMS = "evict_first", ".cs", 8
#: FP8_Q_F8: the FP8 kernel's Q_F8, the latent codes stored through a float8e4m3 view of
#: the cache instead of bitcast to uint8 (same bytes). H200 (2 tokens on 1 warp): 13.07 us with
#: the three options off, 12.91 with Q_F8 alone, 12.28 with all three.
FP8_Q_F8 = True
#: FP8_ROPE_FIRST: the FP8 kernel's ROPE_FIRST, the rope row (and its loc) loaded with the
#: latent instead of after the latent's stores, which the loads could not move above (they
#: may alias): each program waited for a second DRAM round trip before its last store.
#: FP8_SCALE_TILE: the kernel's SCALE_TILE, the 4 scales a token stored from the [4 x ROWS,
#: 128] group tile by the thread holding column 0, not as a [4 x ROWS] vector, whose layout
#: conversion went through shared memory (two barriers) and replicated the scale stores on
#: every thread, each behind its own branch. sm_90a SASS of the kernel at 2 tokens on 1 warp
#: (Q_F8: 536 instructions, 96 registers): SCALE_TILE 371 / 65, both 369 / 74 (all loads
#: issued before the first store); ROPE_FIRST alone 533 / 128. 1 token: 207 / 56. The old
#: default (all three off): 608 / 96. FP8_MAXNREG: the FP8 kernel's register cap (None:
#: ptxas's choice; 64 at 2 / 1 12.57 us, 72 at 4 / 2 10.23: no gain).
FP8_ROPE_FIRST, FP8_SCALE_TILE = True, True
FP8_MAXNREG = None
#: FP8_LOAD_EVICT, FP8_STORE_CACHE: the FP8 kernel's LOAD_EVICT and STORE_CACHE, as
#: BF16_LOAD_EVICT / BF16_STORE_CACHE (sm_90a SASS at 8 / 4 warps: 430 instructions, 73
#: registers; ".cs" 421 / 80, still 6 programs an SM; "evict_first" 436 / 73). The FP8
#: kernel cannot be one wave at T = 16384: 124 tokens an SM leave 528 registers a token
#: (65536 / 124), about one a latent value, which the quantization holds as f32; 8 tokens on
#: 2 warps at 16 programs an SM and 16 on 4 at 8 (64 registers) spill 234 bytes. H200
#: sweep at T = 16384 (8 / 4 warps): .cs 10.23 us, none 10.39, evict_first no better.
FP8_LOAD_EVICT, FP8_STORE_CACHE = "", ".cs"


def _bf16_constexprs() -> dict:
    return {"ROWS": ROWS, "KV_DIM": KV_LORA, "PE_DIM": ROPE, "EARLY": EARLY_LOADS,
            "PDL": BF16_PDL, "LOAD_EVICT": BF16_LOAD_EVICT, "STORE_CACHE": BF16_STORE_CACHE,
            "PROGRAMS": BF16_MIN_PROGRAMS}


def _fp8_constexprs() -> dict:
    return {"ROWS": FP8_ROWS, "KV_DIM": KV_LORA, "PE_DIM": ROPE, "GROUP": FP8_GROUP,
            "RECIP": FP8_RECIP, "EARLY": EARLY_LOADS, "Q_F8": FP8_Q_F8,
            "ROPE_FIRST": FP8_ROPE_FIRST, "SCALE_TILE": FP8_SCALE_TILE,
            "LOAD_EVICT": FP8_LOAD_EVICT, "STORE_CACHE": FP8_STORE_CACHE}


AOT_SPECIALIZATIONS = [
    Spec(mla_kv_scatter_bf16_kernel, name="mla_kv_scatter_bf16",
         signature={"kv_ptr": "*bf16", "pe_ptr": "*bf16", "loc_ptr": "*i64", "cache_ptr": "*bf16",
                    "T": "i32", "num_slots": "i32", "kv_s0": "i32", "pe_s0": "i32",
                    "cache_s0": "i32"},
         constexprs=_bf16_constexprs(),
         divisibility=["kv_ptr", "pe_ptr", "loc_ptr", "cache_ptr", "kv_s0", "pe_s0", "cache_s0"],
         num_warps=NUM_WARPS),
    Spec(mla_kv_scatter_fp8_kernel, name="mla_kv_scatter_fp8",
         signature={"kv_ptr": "*bf16", "pe_ptr": "*bf16", "loc_ptr": "*i64",
                    "cache_q": "*f8e4m3" if FP8_Q_F8 else "*u8",
                    "cache_f32": "*f32", "cache_bf16": "*bf16", "T": "i32", "num_slots": "i32",
                    "kv_s0": "i32", "pe_s0": "i32", "row16": "i32"},
         constexprs=_fp8_constexprs(),
         divisibility=["kv_ptr", "pe_ptr", "loc_ptr", "cache_q", "cache_f32", "cache_bf16",
                       "kv_s0", "pe_s0"],
         num_warps=FP8_WARPS, maxnreg=FP8_MAXNREG),
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


def mla_kv_scatter(kv_c: Any, k_pe: Any, loc: Any, cache: Any) -> Any:
    """Writes ``cat(kv_c[t], k_pe[t])`` into ``cache[loc[t]]`` (bf16 layout); kv_c [T, 512],
    k_pe [T, 64] or [T, 1, 64] (bf16, last dim contiguous), loc int64 [T]; returns cache.
    Checks raise before launch."""
    op = "mla_kv_scatter"
    L.check_dtype(op, "cache", cache, ("bfloat16",))
    t = _check_rows(op, kv_c, k_pe, loc)
    slots, row_stride = _cache_rows(op, cache)
    L.check_same_device(op, ("kv_c", kv_c), ("k_pe", k_pe), ("loc", loc), ("cache", cache))
    kv_s0, pe_s0 = L.strides(kv_c)[0], L.strides(k_pe)[0]
    L.check_int32_extent(op, "T * row stride", t * max(kv_s0, pe_s0, 1) + ROWS)
    L.check_int32_extent(op, "num_slots", slots)
    if slots == 0:
        return cache
    L.launch(mla_kv_scatter_bf16_kernel, "mla_kv_scatter_bf16", ((t + ROWS - 1) // ROWS,),
             (kv_c, k_pe, loc, cache, t, slots, kv_s0, pe_s0, row_stride),
             _bf16_constexprs(), NUM_WARPS)
    return cache


def mla_kv_scatter_fp8(kv_c: Any, k_pe: Any, loc: Any, cache: Any) -> Any:
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
    L.check_int32_extent(op, "T * row stride", t * max(kv_s0, pe_s0, 1) + KV_LORA + FP8_ROWS)
    L.check_int32_extent(op, "num_slots", slots)
    if slots == 0 or t == 0:
        return cache
    import torch

    row_bytes = row_bytes if slots > 1 else FP8_ROW_BYTES
    L.launch(mla_kv_scatter_fp8_kernel, "mla_kv_scatter_fp8", ((t + FP8_ROWS - 1) // FP8_ROWS,),
             (kv_c, k_pe, loc, cache.view(torch.float8_e4m3fn) if FP8_Q_F8 else cache,
              cache.view(torch.float32), cache.view(torch.bfloat16), t,
              slots, kv_s0, pe_s0, row_bytes // 16), _fp8_constexprs(), FP8_WARPS, FP8_MAXNREG)
    return cache
