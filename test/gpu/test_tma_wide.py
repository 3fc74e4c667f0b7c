"""Wide TMA boxes on the GPU: 128-byte swizzled boxes whose rows span several 128-byte
chunks (bf16 [64, 128]: 256-byte rows, [128, 256]: 512-byte rows), copied one TMA copy a
chunk into the chunked shared-memory layout, against torch on fresh random inputs. Each
direction is checked against plain pointer accesses, so a wrong chunk offset or swizzle
in the register reads (or writes) shows as misplaced elements: a box loaded through the
wide descriptor and stored through pointers, a tile loaded through pointers and stored
through the wide descriptor, a descriptor round trip with ragged edges, and the same load
from a TMA ring (kl.range num_stages) reading the chunked slots. The wgmma GEMM with wide
B boxes is test_gemm_tma_kn.py (BN = 128, 256). TMA exists on every arch kiln targets."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))

import kiln  # noqa: E402

from tma_wide_kernels import (  # noqa: E402
    ptr_to_wide_store,
    wide_affine,
    wide_load_to_ptr,
    wide_ring_to_ptr,
)

BLOCKS = [(64, 128), (128, 256)]


def _rand(shape):
    return torch.randn(shape, device="cuda").to(torch.bfloat16)


@pytest.mark.parametrize("block", BLOCKS)
def test_wide_load_reads_the_chunked_layout(block):
    bm, bn = block
    m, n = 4 * bm, 3 * bn
    x = _rand((m, n))
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    desc = kiln.TensorDescriptor.from_tensor(x, list(block), swizzle=128)
    wide_load_to_ptr[(m // bm, n // bn)](desc, out, n, BM=bm, BN=bn)
    torch.cuda.synchronize()
    assert torch.equal(out, x)


@pytest.mark.parametrize("block", BLOCKS)
def test_wide_store_writes_the_chunked_layout(block):
    bm, bn = block
    m, n = 2 * bm, 2 * bn
    x = _rand((m, n))
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    desc = kiln.TensorDescriptor.from_tensor(out, list(block), swizzle=128)
    ptr_to_wide_store[(m // bm, n // bn)](x, desc, n, BM=bm, BN=bn)
    torch.cuda.synchronize()
    assert torch.equal(out, x)


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("shape", [(300, 520), (64, 136)])
def test_wide_round_trip_edges(block, shape):
    # TMA zero-fills each chunk past the tensor's edge and clips each chunk's store: the
    # padding columns of the strided output stay untouched.
    bm, bn = block
    m, n = shape
    x = _rand((m, n + 8))[:, :n]
    full = torch.full((m, n + 8), 7, device="cuda", dtype=torch.bfloat16)
    out = full[:, :n]
    src = kiln.TensorDescriptor.from_tensor(x, list(block), swizzle=128)
    dst = kiln.TensorDescriptor.from_tensor(out, list(block), swizzle=128)
    wide_affine[(kiln.cdiv(m, bm), kiln.cdiv(n, bn))](src, dst, BM=bm, BN=bn)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2 + 1)
    assert (full[:, n:] == 7).all()


@pytest.mark.parametrize("block,stages", [((64, 128), 3), ((128, 256), 2)])
def test_wide_ring_reads_the_chunked_slots(block, stages):
    # More row blocks than programs: every slot is refilled several times.
    bm, bn = block
    m, n = 16 * bm, 2 * bn
    x = _rand((m, n))
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    desc = kiln.TensorDescriptor.from_tensor(x, list(block), swizzle=128)
    wide_ring_to_ptr[(3, n // bn)](desc, out, m, n, BM=bm, BN=bn, STAGES=stages)
    torch.cuda.synchronize()
    assert torch.equal(out, x)
