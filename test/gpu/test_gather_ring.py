"""Gathers pipelined through shared-memory rings (kiln-tile-pipeline-loads on the
``kl.load`` of a tile of pointers in a ``kl.range(..., num_stages=N)`` loop of dots) on the
GPU, against torch on fresh random inputs: a paged key block per iteration, its pages from a
block table (the table entries loaded in the loop, recomputed for the iteration ahead), the
rows past a ragged count masked to zero, the block read by two dots (the second load of the
same pointers reads the slot again), the block's per-row fp32 scales gathered beside it (a
tile smaller than the threads: its duplicates copy nothing), pages 16-byte aligned (16-byte
cp.async.cg) or at a page stride of 1, 2 or 4 elements past it (what the specialization
proves of the stride decides the access: narrower cp.async, or 2-byte loads and shared
stores), 2-4 stages and more iterations than slots, so every slot is refilled many times."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available() and torch.cuda.get_device_capability()[0] < 9,
    reason="the rings' mbarriers need sm_90 or later")


@kiln.jit(num_warps=4)
def paged_attend(q_ptr, k_ptr, sc_ptr, bt_ptr, cnt_ptr, out_ptr, n_blocks, page_stride,
                 BN: kl.constexpr, D: kl.constexpr, STAGES: kl.constexpr):
    """Program b: acc = sum over the blocks j of bf16((q k_j^T) * sc_j) k_j, block j the BN
    rows of page bt[b, j] and sc_j their fp32 scales (sc[page, :BN]; a [BN] tile, held
    replicated over the threads), the rows at or past cnt[b, j] zero, q [16, D]."""
    b = kl.program_id(0)
    r = kl.arange(0, 16)
    c = kl.arange(0, D)
    q = kl.load(q_ptr + (b * 16 + r)[:, None] * D + c[None, :])
    acc = kl.zeros((16, D), kl.float32)
    rows = kl.arange(0, BN)
    for j in kl.range(0, n_blocks, num_stages=STAGES):
        page = kl.load(bt_ptr + b * n_blocks + j + rows * 0)  # a block of table entries
        ptrs = k_ptr + (page.to(kl.int64) * page_stride + rows * D)[:, None] + c[None, :]
        live = rows < kl.load(cnt_ptr + b * n_blocks + j)
        ok = live[:, None]
        sc = kl.load(sc_ptr + page * BN + rows, mask=live, other=0.0)
        s = kl.dot(q, kl.load(ptrs, mask=ok, other=0.0).T) * sc[None, :]
        acc = kl.dot(s.to(kl.bfloat16), kl.load(ptrs, mask=ok, other=0.0), acc)
    kl.store(out_ptr + (b * 16 + r)[:, None] * D + c[None, :], acc)


def reference(q, pages, scales, bt, cnt, bn):
    out = []
    for b in range(q.shape[0]):
        acc = torch.zeros(16, q.shape[2], dtype=torch.float32, device=q.device)
        for j in range(bt.shape[1]):
            k = pages[bt[b, j]].clone()
            k[int(cnt[b, j]):] = 0
            sc = scales[bt[b, j]].clone()
            sc[int(cnt[b, j]):] = 0
            s = ((q[b].float() @ k.float().T) * sc[None, :]).to(torch.bfloat16)
            acc = acc + s.float() @ k.float()
        out.append(acc)
    return torch.stack(out)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("d,pad", [(64, 0), (16, 0), (64, 1), (64, 2), (64, 4)])
def test_paged_gather_ring(stages, d, pad):
    """The page stride bn * d + pad elements."""
    torch.manual_seed(stages * 100 + d + pad)
    bn, n_pages, batch, n_blocks = 32, 40, 6, 11
    stride = bn * d + pad
    pool = torch.randn(n_pages * stride, device="cuda").to(torch.bfloat16)
    pages = torch.stack([pool[p * stride:p * stride + bn * d].view(bn, d)
                         for p in range(n_pages)])
    q = torch.randn(batch, 16, d, device="cuda").to(torch.bfloat16)
    scales = torch.rand(n_pages, bn, device="cuda") + 0.5
    bt = torch.randint(0, n_pages, (batch, n_blocks), device="cuda", dtype=torch.int32)
    cnt = torch.randint(0, bn + 1, (batch, n_blocks), device="cuda", dtype=torch.int32)
    out = torch.empty(batch, 16, d, device="cuda", dtype=torch.float32)
    paged_attend[(batch,)](q, pool, scales, bt, cnt, out, n_blocks, stride, BN=bn, D=d,
                           STAGES=stages)
    ref = reference(q, pages, scales, bt.cpu(), cnt.cpu(), bn)
    # The dots' sums run in another order than torch's: fp32 rounding, and s rounded to
    # bf16 from two differently ordered sums may differ in its last bit.
    torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2 * d ** 0.5)

