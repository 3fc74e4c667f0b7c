"""GEMMs fused with the one-shot push of allreduce.py, bf16 in and out, fp32 accumulation on
the tensor cores:

    gemm_allreduce   out[M, N] = bf16( sum_r f32( bf16( x_r[M, K] @ W_r[N, K]^T ) ) )
                     (o_proj, TP row-parallel: each rank's partial rounded to bf16 before the
                     fp32 sum in rank order; M rounded up to a cell, the pad rows zero)
    gemm_allgather   out[M, N] = bf16( bf16( AllGather_cols( bf16(x @ W^T) ) ) + b ) (+ c)
                     (the weight replicated; rank r computes columns [r N/world, (r+1) N/world))

A program owns a tile of BM rows and BN columns and computes it as two [BM, BN/2]
accumulators, the tile's first and second halves of columns (two blocks of W rows, one
``kl.dot`` each); ``_pack(acc_lo, acc_hi)`` is the [BM, BN/2] tile of 32-bit words (column j
with column j + BN/2) that it pushes into slot ``rank`` of every peer's workspace (through the
Lamport marker), at ``pid * BM * BN/2`` plus the row-major index in the tile. Then it polls
the same words of the world slots of its own workspace: the all-reduce sums them (fp32, rank
order), the all-gather writes each rank's tile into that rank's columns (+ b, + c). The
protocol -- header, phase counters, descriptors, re-arming, the bumper, the status word -- is
allreduce.py's, so these calls and the all-reduces share a workspace and may follow each
other in any order.

Specification: docs/kernels/collectives.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Tuple

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .allreduce import (
    MAX_PROGRAMS,
    NONZERO_MARKER,
    _check_tensor,
    _enter,
    _fallback,
    _finish,
    _hi,
    _lo,
    _pack,
    _slot_units,
    _take,
)

#: Programs an SM holds at once (see allreduce.PROGRAMS_PER_SM: a program waits for the same
#: program of every peer, so those must be able to start while it waits).
PROGRAMS_PER_SM = 2
#: gemm_allreduce's cells: M is rounded up to the first that holds it.
CELLS = (8, 16, 32, 64, 128, 256, 512)
MAX_M = CELLS[-1]


@kiln.jit
def _k_tiles(x_ptr, w_ptr, rows, row_ok, w_lo, w_hi, col_ok_lo, col_ok_hi, K, k, k_stop,
             BK: kl.constexpr):
    """The x tile [BM, BK] and the two W tiles [HALF, BK] of K step k (0 past ``k_stop``)."""
    ka = k + kl.arange(0, BK)
    k_ok = (ka < k_stop)[None, :]
    a = kl.load(x_ptr + rows[:, None] * K + ka[None, :], mask=row_ok[:, None] & k_ok,
                other=0.0)
    b_lo = kl.load(w_ptr + w_lo[:, None] * K + ka[None, :], mask=col_ok_lo[:, None] & k_ok,
                   other=0.0)
    b_hi = kl.load(w_ptr + w_hi[:, None] * K + ka[None, :], mask=col_ok_hi[:, None] & k_ok,
                   other=0.0)
    return a, b_lo, b_hi


@kiln.jit
def _gemm_halves(x_ptr, w_ptr, rows, row_ok, w_lo, w_hi, col_ok_lo, col_ok_hi, K, k_stop,
                 BM: kl.constexpr, HALF: kl.constexpr, BK: kl.constexpr):
    """(x[rows] @ W[w_lo]^T, x[rows] @ W[w_hi]^T): two [BM, HALF] fp32 accumulators over K
    in steps of BK, x rows past ``row_ok``, W rows past ``col_ok_*`` and K past ``k_stop``
    (K, or 0 for a tile of no live row: zeros) read as 0. The tiles of step k + BK are
    loaded before the dots of step k (in flight while they run)."""
    acc_lo = kl.zeros((BM, HALF), kl.float32)
    acc_hi = kl.zeros((BM, HALF), kl.float32)
    a, b_lo, b_hi = _k_tiles(x_ptr, w_ptr, rows, row_ok, w_lo, w_hi, col_ok_lo, col_ok_hi, K,
                             0, k_stop, BK)
    for k in range(0, k_stop, BK):
        a_next, lo_next, hi_next = _k_tiles(x_ptr, w_ptr, rows, row_ok, w_lo, w_hi, col_ok_lo,
                                            col_ok_hi, K, k + BK, k_stop, BK)
        acc_lo = kl.dot(a, b_lo.T, acc_lo)
        acc_hi = kl.dot(a, b_hi.T, acc_hi)
        a, b_lo, b_hi = a_next, lo_next, hi_next
    return acc_lo, acc_hi


@kiln.jit
def _push(peers, rank, half, slot_words, pid, tile, words, live, desc, WORLD: kl.constexpr):
    """The program's words (zero words as the marker) into slot ``rank`` of every peer, then
    its descriptor."""
    w = kl.nonzero_marker(words)
    for r in range(WORLD):
        slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
        kl.store(slot + MAX_PROGRAMS + tile, w, mask=live)
        kl.store(slot + pid, desc, sem="relaxed", scope="sys")


@kiln.jit
def _tile_of(pid, rows_total, M, N, BM: kl.constexpr, BN: kl.constexpr):
    """Program pid's tile of a [rows_total, N] output in [BM, BN] tiles, pid_m fastest (the
    programs reading one block of W run together): its rows, the columns of its two halves,
    rows < M, the halves' columns < N, and its words' index in a slot (the [BM, BN / 2]
    words of ``_pack``, row-major, at pid * BM * BN / 2)."""
    HALF: kl.constexpr = BN // 2
    blocks_m = kl.cdiv(rows_total, BM)
    rows = (pid % blocks_m) * BM + kl.arange(0, BM)
    cols = kl.arange(0, HALF)
    n_lo = (pid // blocks_m) * BN + cols
    n_hi = n_lo + HALF
    tile = pid * (BM * HALF) + kl.arange(0, BM)[:, None] * HALF + cols[None, :]
    return rows, n_lo, n_hi, rows < M, n_lo < N, n_hi < N, tile


@kiln.jit
def _descriptor(M, N):
    """Never zero, and different for calls of another M or N (M < 1024, N < 2^20)."""
    return (N * 1024 + M) * 2 + 1


# The rank is not specialized (every rank runs the same kernel; allreduce.py's push_kernel).
@kiln.jit(num_warps=4, do_not_specialize=["rank"])
def gemm_allreduce_kernel(x_ptr, w_ptr, out_ptr, peers, rank, M, N, K, cell, slot_units,
                          WORLD: kl.constexpr, BM: kl.constexpr, BN: kl.constexpr,
                          BK: kl.constexpr):
    """Program (pid_m, pid_n) (pid_m fastest, so that the programs reading one block of W run
    together) computes rows pid_m * BM + [0, BM) and columns pid_n * BN + [0, BN) of this
    rank's partial, pushes its rows < M, sums the world's in fp32 in rank order and writes
    rows < cell of out (rows >= M are zeros: nothing is pushed or polled there)."""
    kl.min_programs_per_sm(PROGRAMS_PER_SM)
    HALF: kl.constexpr = BN // 2
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    rows, n_lo, n_hi, row_ok, lo_ok, hi_ok, tile = _tile_of(pid, cell, M, N, BM, BN)
    live = row_ok[:, None] & lo_ok[None, :]  # a word is live where its low column is
    desc = _descriptor(M, N)
    local, slot_words, phase, half = _enter(peers, rank, pid, slot_units, WORLD)
    k_stop = kl.where(kl.min(rows, axis=0) < M, K, 0)  # the cell's pad blocks: no W read
    acc_lo, acc_hi = _gemm_halves(x_ptr, w_ptr, rows, row_ok, n_lo, n_hi, lo_ok, hi_ok, K,
                                  k_stop, BM, HALF, BK)
    _push(peers, rank, half, slot_words, pid, tile, _pack(acc_lo, acc_hi), live, desc, WORLD)
    lo = kl.zeros((BM, HALF), kl.float32)
    hi = kl.zeros((BM, HALF), kl.float32)
    status = 0
    for r in range(WORLD):  # a loop: the peers' registers are not live at once
        v, status = _take(local + half + r * slot_words, pid, tile, live, desc, status)
        lo += _lo(v)
        hi += _hi(v)
    in_cell = (rows < cell)[:, None]
    out = out_ptr + rows[:, None] * N
    kl.store(out + n_lo[None, :], lo.to(kl.bfloat16), mask=in_cell & lo_ok[None, :])
    kl.store(out + n_hi[None, :], hi.to(kl.bfloat16), mask=in_cell & hi_ok[None, :])
    _finish(local, pid, grid, phase, status)


@kiln.jit(num_warps=4, do_not_specialize=["rank"])
def gemm_allgather_kernel(x_ptr, w_ptr, b_ptr, c_ptr, out_ptr, peers, rank, M, N, slice_n, K,
                          slot_units, WORLD: kl.constexpr, HAS_C: kl.constexpr,
                          BM: kl.constexpr, BN: kl.constexpr, BK: kl.constexpr):
    """Program (pid_m, pid_n) computes rows pid_m * BM + [0, BM) and columns pid_n * BN +
    [0, BN) of this rank's column slice (columns rank * slice_n + ..., slice_n = N / world),
    pushes them to every rank, then writes the same tile of every rank's slice into out,
    + b (+ c) in bf16 arithmetic."""
    kl.min_programs_per_sm(PROGRAMS_PER_SM)
    HALF: kl.constexpr = BN // 2
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    # n_lo, n_hi: columns within a slice
    rows, n_lo, n_hi, row_ok, lo_ok, hi_ok, tile = _tile_of(pid, M, M, slice_n, BM, BN)
    live = row_ok[:, None] & lo_ok[None, :]
    desc = _descriptor(M, N)
    local, slot_words, phase, half = _enter(peers, rank, pid, slot_units, WORLD)
    mine = rank * slice_n
    acc_lo, acc_hi = _gemm_halves(x_ptr, w_ptr, rows, row_ok, mine + n_lo, mine + n_hi, lo_ok,
                                  hi_ok, K, K, BM, HALF, BK)
    _push(peers, rank, half, slot_words, pid, tile, _pack(acc_lo, acc_hi), live, desc, WORLD)
    status = 0
    mask_lo = live
    mask_hi = row_ok[:, None] & hi_ok[None, :]
    for s in range(WORLD):
        v, status = _take(local + half + s * slot_words, pid, tile, live, desc, status)
        v = kl.where(v == NONZERO_MARKER, 0, v)  # the marker back to the +0.0 pair
        c_lo = s * slice_n + n_lo
        c_hi = s * slice_n + n_hi
        lo = (_lo(v) + kl.load(b_ptr + c_lo, mask=lo_ok, other=0.0).to(kl.float32)[None, :])
        hi = (_hi(v) + kl.load(b_ptr + c_hi, mask=hi_ok, other=0.0).to(kl.float32)[None, :])
        o_lo = rows[:, None] * N + c_lo[None, :]
        o_hi = rows[:, None] * N + c_hi[None, :]
        if HAS_C:
            lo = (lo.to(kl.bfloat16).to(kl.float32)
                  + kl.load(c_ptr + o_lo, mask=mask_lo, other=0.0).to(kl.float32))
            hi = (hi.to(kl.bfloat16).to(kl.float32)
                  + kl.load(c_ptr + o_hi, mask=mask_hi, other=0.0).to(kl.float32))
        kl.store(out_ptr + o_lo, lo.to(kl.bfloat16), mask=mask_lo)
        kl.store(out_ptr + o_hi, hi.to(kl.bfloat16), mask=mask_hi)
    _finish(local, pid, grid, phase, status)


@dataclasses.dataclass(frozen=True)
class Tile:
    """A program's output tile: BM rows by BN columns (two halves of BN / 2), K in steps of
    BK, on num_warps."""
    bm: int
    bn: int
    bk: int = 128
    num_warps: int = 4


@dataclasses.dataclass(frozen=True)
class Settings:
    """The fused GEMMs' tuning: (largest M, tile) pairs, the first that holds M is taken (for
    gemm_allreduce, M rounded up to its cell). The small tiles step K by 128 (faster than 64
    at decode M: bench/results/collectives/h100-bench_collectives_27.md); the 64 x 128 tiles
    by 64 (at 128 they take every register and spill)."""
    allreduce_tiles: Tuple[Tuple[int, Tile], ...] = (
        (16, Tile(16, 64)), (32, Tile(32, 64)), (512, Tile(64, 128, 64)))
    allgather_tiles: Tuple[Tuple[int, Tile], ...] = (
        (16, Tile(16, 32)), (32, Tile(32, 64)), (512, Tile(64, 128, 64)))


SETTINGS = Settings()

#: See allreduce.compile_only: warm every rank up with it and meet before a first call.
compile_only = L.compile_only

#: World sizes the bundle holds.
AOT_WORLDS = (2, 4, 8)

_AR_SIG = {"x_ptr": "*bf16", "w_ptr": "*bf16", "out_ptr": "*bf16", "peers": "*i64",
           "rank": "i32", "M": "i32", "N": "i32", "K": "i32", "cell": "i32",
           "slot_units": "i32"}
_AG_SIG = {"x_ptr": "*bf16", "w_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16",
           "out_ptr": "*bf16", "peers": "*i64", "rank": "i32", "M": "i32", "N": "i32",
           "slice_n": "i32", "K": "i32", "slot_units": "i32"}
#: The wrappers take only 16-byte aligned tensors and K % 8 == 0 (rows of 16-byte vectors).
#: The fast form also has the columns (N; the all-gather's slice N / world) a multiple of 16
#: (K3's 7,168 and its slices): the column masks then hold for whole 16-byte vectors, so the
#: pushes, the polls and the stores of out are vectors; any other N takes the generic form.
_AR_BASE = {"x_ptr": 16, "w_ptr": 16, "out_ptr": 16, "peers": 16, "K": 8}
_AG_BASE = {"x_ptr": 16, "w_ptr": 16, "b_ptr": 16, "c_ptr": 16, "out_ptr": 16, "peers": 16,
            "K": 8}
_FORMS = (("", {"N": 16}, {"N": 16, "slice_n": 16}), ("_generic", {}, {}))


def _tile(op: str, tiles: Tuple[Tuple[int, Tile], ...], m: int) -> Tuple[int, Tile]:
    """The first (largest M, tile) of ``tiles`` that holds ``m`` rows."""
    for max_m, tile in tiles:
        if m <= max_m:
            return max_m, tile
    raise ValueError(f"{op}: no tile setting for M = {m} (settings cover up to "
                     f"{tiles[-1][0]})")


def allreduce_aot_name(world: int, max_m: int) -> str:
    return f"gemm_allreduce_w{world}_m{max_m}"


def allgather_aot_name(world: int, max_m: int, has_c: bool) -> str:
    return f"gemm_allgather_w{world}_m{max_m}{'_c' if has_c else ''}"


def _constexprs(world: int, tile: Tile, **extra: Any) -> dict:
    return {"WORLD": world, **extra, "BM": tile.bm, "BN": tile.bn, "BK": tile.bk}


AOT_SPECIALIZATIONS = [
    Spec(gemm_allreduce_kernel, name=allreduce_aot_name(world, max_m) + suffix,
         signature=_AR_SIG, constexprs=_constexprs(world, tile),
         divisibility={**_AR_BASE, **ar_div}, num_warps=tile.num_warps)
    for world in AOT_WORLDS for max_m, tile in SETTINGS.allreduce_tiles
    for suffix, ar_div, _ in _FORMS
] + [
    Spec(gemm_allgather_kernel, name=allgather_aot_name(world, max_m, has_c) + suffix,
         signature=_AG_SIG, constexprs=_constexprs(world, tile, HAS_C=has_c),
         divisibility={**_AG_BASE, **ag_div}, num_warps=tile.num_warps)
    for world in AOT_WORLDS for max_m, tile in SETTINGS.allgather_tiles
    for has_c in (False, True) for suffix, _, ag_div in _FORMS
]


def _launch(kernel: Any, name: str, grid: int, args: tuple, constexprs: dict,
            tile: Tile) -> None:
    """Launches the fast form, or where the arguments do not meet it (bundle), the generic."""
    launch = L.Launch(kernel, name, (grid,), args, constexprs, tile.num_warps)
    L.launch(*launch, generic=launch._replace(name=name + "_generic"))


def cell_rows(m: int) -> int:
    """gemm_allreduce's cell for M in [1, 512]: the first of CELLS that holds it."""
    return next(c for c in CELLS if m <= c)


def _check_gemm_inputs(op: str, x: Any, weight: Any) -> Tuple[int, int, int]:
    """x bf16 [M, K] with M in [1, 512], weight bf16 [N, K], K % 8 == 0, both contiguous and
    16-byte aligned; returns (M, N, K)."""
    m, k = _check_tensor(op, "x", x, (None, None), 16)
    n, _ = _check_tensor(op, "weight", weight, (None, k), 16)
    if not 1 <= m <= MAX_M:
        raise ValueError(f"{op}: M (x's rows) must be in [1, {MAX_M}], got {m}")
    if k % 8 or k == 0:
        raise ValueError(f"{op}: K must be a positive multiple of 8 (rows of 16-byte "
                         f"vectors), got {k}")
    if n == 0:
        raise ValueError(f"{op}: weight must have at least one row, got {list(L.shape(weight))}")
    L.check_int32_extent(op, "N * K (weight's elements)", n * k)
    L.check_int32_extent(op, "M * K (x's elements)", m * k)
    return m, n, k


def _grid(op: str, m: int, n: int, tile: Tile) -> int:
    grid = -(-m // tile.bm) * -(-n // tile.bn)
    if grid > MAX_PROGRAMS:
        raise ValueError(f"{op}: {grid} programs of {tile.bm}x{tile.bn} tiles for {m} rows and "
                         f"{n} columns, at most {MAX_PROGRAMS} (the workspace's counters)")
    return grid


def gemm_allreduce(x: Any, weight: Any, workspace: Any, out: Optional[Any] = None, *,
                   settings: Settings = SETTINGS) -> Any:
    """o_proj, TP row-parallel: every rank calls it with its ``x`` (bf16 [M, K], M in
    [1, 512]) and ``weight`` (bf16 [N, K]; K3: N = 7,168), all with the same M, N, K:

        out[:M] = bf16( sum_r f32( bf16( x_r @ weight_r^T ) ) )     (fp32 in rank order)

    ``out`` bf16 [cell, N] (allocated when None), cell the first of 8, 16, ..., 512 that holds
    M; its rows [M, cell) are written with zeros. Every tensor contiguous and 16-byte
    aligned, K a multiple of 8. ``workspace``: a ``kiln.distributed.SymmetricBuffer`` of at
    least ``allreduce.workspace_bytes(world, workspace_elements(M, N))`` bytes (shared with
    the all-reduces). Protocol errors show in ``allreduce.check(workspace)``. Checks raise
    before launch. Returns out."""
    op = "gemm_allreduce"
    m, n, k = _check_gemm_inputs(op, x, weight)
    cell = cell_rows(m)
    named = [("x", x), ("weight", weight)]
    if out is not None:
        _check_tensor(op, "out", out, (cell, n), 16)
        named.append(("out", out))
    L.check_same_device(op, *named)
    L.check_int32_extent(op, "cell * N (out's elements)", cell * n)
    fallback = _fallback(workspace)
    if fallback is not None:  # the GEMM (bf16 out: the partial rounded), then NCCL's sum
        import torch

        if out is None:
            out = torch.empty((cell, n), dtype=torch.bfloat16, device=x.device)
        out[m:].zero_()
        fallback.allreduce(torch.matmul(x, weight.t()), workspace, out=out[:m])
        return out
    max_m, tile = _tile(op, settings.allreduce_tiles, cell)
    grid = _grid(op, cell, n, tile)
    slot_units = _slot_units(op, workspace, grid * tile.bm * tile.bn)
    if out is None:
        import torch

        out = torch.empty((cell, n), dtype=torch.bfloat16, device=x.device)
    world = workspace.world
    _launch(gemm_allreduce_kernel, allreduce_aot_name(world, max_m), grid,
            (x, weight, out, workspace.peer_table, workspace.rank, m, n, k, cell, slot_units),
            _constexprs(world, tile), tile)
    return out


def gemm_allgather(x: Any, weight: Any, bias: Any, workspace: Any, c: Optional[Any] = None,
                   out: Optional[Any] = None, *, settings: Settings = SETTINGS) -> Any:
    """The column-parallel GEMM + all-gather: ``x`` bf16 [M, K] (M in [1, 512]) and the
    replicated ``weight`` bf16 [N, K] (K3: K = 3,584, N = 7,168; N a multiple of 2 * world)
    the same on every rank; rank r computes columns [r * N/world, (r + 1) * N/world), pushes
    them to every rank, and every rank writes

        out = bf16( bf16( x @ weight^T ) + bias )          (f32 add, rounded)
        out = bf16( f32(out) + f32(c) )                    with c

    into ``out`` bf16 [M, N] (allocated when None). ``bias`` bf16 [N], ``c`` bf16 [M, N];
    every tensor contiguous and 16-byte aligned, K a multiple of 8. ``workspace`` as for
    ``gemm_allreduce`` (``workspace_elements``). Returns out."""
    op = "gemm_allgather"
    m, n, k = _check_gemm_inputs(op, x, weight)
    _check_tensor(op, "bias", bias, (n,), 16)
    named = [("x", x), ("weight", weight), ("bias", bias)]
    if c is not None:
        _check_tensor(op, "c", c, (m, n), 16)
        named.append(("c", c))
    if out is not None:
        _check_tensor(op, "out", out, (m, n), 16)
        named.append(("out", out))
    L.check_same_device(op, *named)
    L.check_int32_extent(op, "M * N (out's elements)", m * n)
    world = workspace.world
    if n % (2 * world):
        raise ValueError(f"{op}: N must split into {world} even column slices (N % "
                         f"{2 * world} == 0), got N = {n}")
    fallback = _fallback(workspace)
    if fallback is not None:  # this rank's slice, the all-gather, then + b (+ c) by torch
        import torch

        part = n // world
        mine = torch.matmul(x, weight[workspace.rank * part:(workspace.rank + 1) * part].t())
        cols = fallback.sp_all_gather(mine.contiguous(), workspace)  # [world * M, part]
        full = cols.view(world, m, part).permute(1, 0, 2).reshape(m, n)
        full = (full.float() + bias.float()).bfloat16()
        if c is not None:
            full = (full.float() + c.float()).bfloat16()
        if out is None:
            return full
        return out.copy_(full)
    max_m, tile = _tile(op, settings.allgather_tiles, m)
    grid = _grid(op, m, n // world, tile)
    slot_units = _slot_units(op, workspace, grid * tile.bm * tile.bn)
    if out is None:
        import torch

        out = torch.empty((m, n), dtype=torch.bfloat16, device=x.device)
    _launch(gemm_allgather_kernel, allgather_aot_name(world, max_m, c is not None), grid,
            (x, weight, bias, c if c is not None else out, out, workspace.peer_table,
             workspace.rank, m, n, n // world, k, slot_units),
            _constexprs(world, tile, HAS_C=c is not None), tile)
    return out


def workspace_elements(m: int, n: int, world: int, settings: Settings = SETTINGS) -> int:
    """The bf16 elements a slot must hold for a call of M rows and N columns of either
    kernel (the tiles padded): size the workspace with ``allreduce.workspace_bytes(world,
    that)``."""
    cell = cell_rows(m)
    _, t = _tile("gemm_allreduce", settings.allreduce_tiles, cell)
    ar = -(-cell // t.bm) * t.bm * (-(-n // t.bn) * t.bn)
    _, t = _tile("gemm_allgather", settings.allgather_tiles, m)
    ag = -(-m // t.bm) * t.bm * (-(-(n // world) // t.bn) * t.bn)
    return max(ar, ag)
