"""kv_indices (docs/kernels/mla_cache.md) and moe_align_single_token (docs/kernels/moe_routing.md)
on the GPU through their wrappers, against torch references written from those pages, JIT-compiled
and through the bundle (launch_mode: K3's page size, multipliers, top-16 and blocks take the
fast specializations, the rest the generic kernels); bad arguments raise before launch."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import kv_indices as kvi  # noqa: E402
from kernels_dsl.kimi_k3 import moe_align  # noqa: E402

POISON = 0x7EADBEEF


def ref_kv_indices(r2t, req, lens, out, start, v2p, page, mult):
    out = out.clone()
    bs, max_blocks = out.shape
    max_ctx = r2t.shape[1]
    pages = torch.clamp((lens.long().clamp(min=0) + page - 1) // page, max=max_blocks)
    p = torch.arange(max_blocks, device=out.device)
    s = torch.zeros_like(lens).long() if start is None else start.long()
    off = s[:, None] + p[None, :] * page
    in_row = (off >= 0) & (off < max_ctx)
    tok = r2t[req.long()[:, None], off.clamp(0, max_ctx - 1)].long()
    tok = torch.where(in_row, tok, -1)
    ok = tok >= 0
    vpage = torch.div(tok.clamp(min=0), page, rounding_mode="floor")
    if v2p is not None:
        ok &= vpage < v2p.numel()
        ppage = v2p[vpage.clamp(max=v2p.numel() - 1)]
        ok &= ppage >= 0
    else:
        ppage = vpage
    val = torch.where(ok, ppage * mult, -1).int()
    write = p[None, :] < pages[:, None]
    return torch.where(write, val, out)


@pytest.mark.parametrize("page,mult", [(64, 1), (64, 24), (16, 3), (1, 1), (128, 24)])
@pytest.mark.parametrize("use_v2p", [False, True])
@pytest.mark.parametrize("use_start", [False, True])
@pytest.mark.parametrize("req_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("bs", [33, 300])
def test_kv_indices(launch_mode, page, mult, use_v2p, use_start, req_dtype, bs):
    """bs = 33 takes the few-requests BLOCK (one program an SM), 300 the many-requests one."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert (kvi.block_config(bs, sms) == kvi.block_config(1, 1)) == (bs <= sms)
    g = torch.Generator(device="cuda").manual_seed(mult + 2 * use_v2p + 4 * use_start + bs)
    max_reqs, max_ctx, num_pages = bs + 7, 64 * 600, 50000
    pg = torch.randint(0, num_pages, (max_reqs, max_ctx // page), device="cuda", generator=g)
    r2t = (pg[:, :, None] * page + torch.arange(page, device="cuda")).reshape(max_reqs, -1).int()
    r2t[3, 64 * 5:] = -1
    lens = torch.randint(0, 500 * 64, (bs,), device="cuda", generator=g).int()
    lens[:6] = torch.tensor([0, 1, 64, 65, 300 * 64, 599 * 64], dtype=torch.int32)
    req = torch.randperm(max_reqs, device="cuda", generator=g)[:bs].to(req_dtype)
    req[2] = 3
    start = (torch.randint(0, 64 * 80, (bs,), device="cuda", generator=g).int()
             if use_start else None)
    v2p = None
    if use_v2p:
        v2p = torch.randperm(num_pages + 1, device="cuda", generator=g).long()
        v2p[torch.randint(0, num_pages + 1, (100,), device="cuda", generator=g)] = -1
    out_buf = torch.full((bs, 520), POISON, dtype=torch.int32, device="cuda")
    out = out_buf[:, :512]
    expected = ref_kv_indices(r2t, req, lens, out, start, v2p, page, mult)
    assert kvi.kv_indices(r2t, req, lens, out, kv_start_idx=start, v2p=v2p, page_size=page,
                          page_mult=mult) is out
    torch.cuda.synchronize()
    assert torch.equal(out, expected)
    assert torch.all(out_buf[:, 512:] == POISON)


def test_kv_indices_bad_arguments_raise_before_launch():
    r2t = torch.zeros(4, 256, dtype=torch.int32, device="cuda")
    req = torch.zeros(2, dtype=torch.int64, device="cuda")
    lens = torch.ones(2, dtype=torch.int32, device="cuda")
    out = torch.zeros(2, 4, dtype=torch.int32, device="cuda")
    for args, kw in [((r2t.long(), req, lens, out), {}), ((r2t, req.float(), lens, out), {}),
                     ((r2t, req, lens[:1], out), {}), ((r2t, req, lens, out[:1]), {}),
                     ((r2t, req, lens, out.long()), {}), ((r2t[:, ::2], req, lens, out), {}),
                     ((r2t, req, lens, out), {"v2p": torch.zeros(8, dtype=torch.int32,
                                                                  device="cuda")}),
                     ((r2t, req, lens, out), {"kv_start_idx": lens[:1]}),
                     ((r2t, req, lens, out), {"page_size": 48}),
                     ((r2t, req, lens, out), {"page_mult": 0})]:
        with pytest.raises((TypeError, ValueError)):
            kvi.kv_indices(*args, **kw)
    torch.cuda.synchronize()


def ref_align(ids, block):
    topk = ids.shape[1]
    row = ids[0].long()
    key = torch.where(row >= 0, row, 2**31 - 1)
    order = torch.argsort(key, stable=True)
    n = int((row >= 0).sum())
    sorted_ids = torch.full((topk * block,), topk, dtype=torch.int32, device=ids.device)
    expert_ids = torch.full((topk,), -1, dtype=torch.int32, device=ids.device)
    expert_ids[:n] = row[order[:n]].int()
    sorted_ids[torch.arange(n, device=ids.device) * block] = order[:n].int()
    return sorted_ids, expert_ids, torch.tensor([n * block], dtype=torch.int32,
                                                device=ids.device)


@pytest.mark.parametrize("block", [1, 16, 64, 256])
@pytest.mark.parametrize("topk", [1, 3, 8, 16, 17, 32])
@pytest.mark.parametrize("n_invalid", [0, 2, 99])
def test_moe_align_single_token(launch_mode, topk, block, n_invalid):
    g = torch.Generator(device="cuda").manual_seed(topk * 100 + block + n_invalid)
    ids = torch.randperm(384, device="cuda", generator=g)[:topk].int()[None, :].contiguous()
    k = min(n_invalid, topk)
    ids[0, torch.randperm(topk, device="cuda", generator=g)[:k]] = -1
    got = moe_align.moe_align_single_token(ids, block)
    torch.cuda.synchronize()
    for a, b in zip(got, ref_align(ids, block)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("topk", [3, 16])
def test_moe_align_row_of_a_larger_table(launch_mode, topk):
    """topk_ids as row 1 of a [2, topk] table (for topk = 3 not 16-byte aligned: the bundle's
    generic kernel) and the outputs as views one element into larger buffers."""
    table = torch.randperm(384, device="cuda")[:2 * topk].int().view(2, topk)
    table[1, 0] = -1
    ids = table[1:]
    s = torch.full((topk * 16 + 1,), POISON, dtype=torch.int32, device="cuda")
    e = torch.full((topk + 1,), POISON, dtype=torch.int32, device="cuda")
    p = torch.full((2,), POISON, dtype=torch.int32, device="cuda")
    moe_align.moe_align_single_token(ids, 16, s[1:], e[1:], p[1:])
    torch.cuda.synchronize()
    for a, b in zip((s[1:], e[1:], p[1:]), ref_align(ids, 16)):
        assert torch.equal(a, b)
    assert s[0] == POISON and e[0] == POISON and p[0] == POISON


def test_moe_align_preallocated_outputs_and_bad_arguments():
    ids = torch.tensor([[5, -1, 2, 9]], dtype=torch.int32, device="cuda")
    s = torch.full((64,), POISON, dtype=torch.int32, device="cuda")
    e = torch.full((4,), POISON, dtype=torch.int32, device="cuda")
    p = torch.zeros(1, dtype=torch.int32, device="cuda")
    moe_align.moe_align_single_token(ids, 16, s, e, p)
    torch.cuda.synchronize()
    assert e.tolist() == [2, 5, 9, -1] and p.tolist() == [48]
    assert s.view(4, 16)[:, 0].tolist() == [2, 0, 3, 4]
    for args in [(ids.long(), 16), (ids[0], 16), (torch.zeros(1, 33, dtype=torch.int32,
                                                              device="cuda"), 16),
                 (ids, 24), (ids, 0), (ids, 16, s[:32]), (ids, 16, None, e.long())]:
        with pytest.raises((TypeError, ValueError)):
            moe_align.moe_align_single_token(*args)
    torch.cuda.synchronize()
