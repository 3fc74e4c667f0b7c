"""The kernels of test/gpu/test_tma_wide.py (wide TMA boxes: 128-byte swizzled rows of
several 128-byte chunks) compiled without a GPU: one TMA copy a chunk in each direction,
one expect_tx of the whole box a load, assembled for every arch."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
from tma_wide_kernels import (  # noqa: E402
    ptr_to_wide_store,
    wide_affine,
    wide_load_to_ptr,
    wide_ring_to_ptr,
)

ARCHS = ["sm_90a", "sm_100a", "sm_103a"]
LOAD = "cp.async.bulk.tensor.2d.shared::cta.global.tile"
STORE = "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"


def _desc(block):
    return f"tensordesc<bf16,{block[0]}x{block[1]},sw128>"


def _compile(kernel, sig, block, arch, **constexprs):
    ck = kernel.compile(sig, dict(BM=block[0], BN=block[1], **constexprs), arch=arch)
    assert ck.cubin[:4] == b"\x7fELF"
    return ck.ptx


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("block", [(64, 128), (128, 256)])
def test_plain_copies(arch, block):
    chunks = block[1] * 2 // 128
    ptx = _compile(wide_load_to_ptr, {"src": _desc(block), "out_ptr": "*bf16", "stride": "i32"},
                   block, arch)
    assert ptx.count(LOAD) == chunks and STORE not in ptx
    assert ptx.count("mbarrier.arrive.expect_tx") == 1
    ptx = _compile(ptr_to_wide_store, {"x_ptr": "*bf16", "dst": _desc(block), "stride": "i32"},
                   block, arch)
    assert ptx.count(STORE) == chunks and LOAD not in ptx
    ptx = _compile(wide_affine, {"src": _desc(block), "dst": _desc(block)}, block, arch)
    assert ptx.count(LOAD) == chunks and ptx.count(STORE) == chunks


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("block,stages", [((64, 128), 3), ((128, 256), 2)])
def test_ring_copies(arch, block, stages):
    # STAGES - 1 fills ahead of the loop and one in it, each one copy a chunk under one
    # expect_tx.
    chunks = block[1] * 2 // 128
    sig = {"src": _desc(block), "out_ptr": "*bf16", "n_rows": "i32", "stride": "i32"}
    ptx = _compile(wide_ring_to_ptr, sig, block, arch, STAGES=stages)
    assert ptx.count(LOAD) == stages * chunks
    assert ptx.count("mbarrier.arrive.expect_tx") == stages
