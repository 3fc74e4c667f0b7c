"""Tile copies through the Tensor Memory Accelerator: a box of rows is loaded with one
``cp.async.bulk.tensor`` into shared memory (completed on an mbarrier), read into registers,
and stored back with one TMA store. ``tma_copy`` is the TMA copy benchmark's kernel and the
smallest end-to-end use of tensor descriptors.

    tma_copy(x, out, block=(64, 128))   # any 2-D tensors of one dtype and shape
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import kiln
import kiln.language as kl


@kiln.jit(num_warps=4)
def tma_copy_kernel(src, dst, n_tiles, tiles_n, BM: kl.constexpr, BN: kl.constexpr,
                    NUM_STAGES: kl.constexpr = 1):
    """Programs stride over the [BM, BN] tiles of the tensor (persistent when the grid is
    smaller than the tile count); TMA zero-fills loads and clips stores at the edges. With
    NUM_STAGES > 1 the loads of the next tiles are in flight while one is stored."""
    for t in kl.range(kl.program_id(0), n_tiles, kl.num_programs(0), num_stages=NUM_STAGES):
        i = (t // tiles_n) * BM
        j = (t % tiles_n) * BN
        dst.store([i, j], src.load([i, j]))


def tma_copy(x: Any, out: Optional[Any] = None, block: Sequence[int] = (64, 128),
             grid: Optional[int] = None, num_warps: int = 4, num_stages: int = 1) -> Any:
    """Copies the 2-D tensor ``x`` into ``out`` (allocated like ``x`` if None) tile by tile."""
    if len(x.shape) != 2:
        raise ValueError(f"tma_copy: expected a 2-D tensor, got shape {list(x.shape)}")
    if out is None:
        out = x.new_empty(x.shape)
    if tuple(out.shape) != tuple(x.shape) or out.dtype != x.dtype:
        raise ValueError(f"tma_copy: out must be {x.dtype}{list(x.shape)}, got "
                         f"{out.dtype}{list(out.shape)}")
    bm, bn = (int(b) for b in block)
    m, n = (int(s) for s in x.shape)
    if m == 0 or n == 0:
        return out
    tiles_n = kiln.cdiv(n, bn)
    n_tiles = kiln.cdiv(m, bm) * tiles_n
    src = kiln.TensorDescriptor.from_tensor(x, [bm, bn])
    dst = kiln.TensorDescriptor.from_tensor(out, [bm, bn])
    tma_copy_kernel[(min(n_tiles, grid) if grid else n_tiles,)](
        src, dst, n_tiles, tiles_n, BM=bm, BN=bn, NUM_STAGES=num_stages, num_warps=num_warps)
    return out

