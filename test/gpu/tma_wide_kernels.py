"""Kernels of wide TMA boxes (128-byte swizzled rows of several 128-byte chunks), shared
by the CPU tests (test/python/test_tma_wide.py: compiled and assembled per arch, the
chunked copies in the PTX) and the GPU tests (test_tma_wide.py beside this file, which
travels to the GPU machine)."""

import kiln
import kiln.language as kl


@kiln.jit(num_warps=8)
def wide_load_to_ptr(src, out_ptr, stride, BM: kl.constexpr, BN: kl.constexpr):
    i = kl.program_id(0) * BM
    j = kl.program_id(1) * BN
    x = src.load([i, j])
    rows = i + kl.arange(0, BM)
    cols = j + kl.arange(0, BN)
    kl.store(out_ptr + rows[:, None] * stride + cols[None, :], x)


@kiln.jit(num_warps=8)
def ptr_to_wide_store(x_ptr, dst, stride, BM: kl.constexpr, BN: kl.constexpr):
    i = kl.program_id(0) * BM
    j = kl.program_id(1) * BN
    rows = i + kl.arange(0, BM)
    cols = j + kl.arange(0, BN)
    dst.store([i, j], kl.load(x_ptr + rows[:, None] * stride + cols[None, :]))


@kiln.jit(num_warps=8)
def wide_affine(src, dst, BM: kl.constexpr, BN: kl.constexpr):
    i = kl.program_id(0) * BM
    j = kl.program_id(1) * BN
    dst.store([i, j], src.load([i, j]) * 2 + 1)


@kiln.jit(num_warps=8)
def wide_ring_to_ptr(src, out_ptr, n_rows, stride, BM: kl.constexpr, BN: kl.constexpr,
                     STAGES: kl.constexpr):
    """Each program walks row blocks of one column block through a TMA ring."""
    j = kl.program_id(1) * BN
    cols = j + kl.arange(0, BN)
    for r in kl.range(kl.program_id(0) * BM, n_rows, kl.num_programs(0) * BM,
                      num_stages=STAGES):
        x = src.load([r, j])
        rows = r + kl.arange(0, BM)
        kl.store(out_ptr + rows[:, None] * stride + cols[None, :], x)
