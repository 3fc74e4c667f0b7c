"""MLA attention on the GPU (docs/kernels/mla_attention.md): mla_decode and verify_splitkv
against an fp32 torch reference per request written from the spec (the rows gathered from
the pages, the FP8 rows dequantized from the bytes mla_kv_scatter_fp8 wrote), JIT and
bundle (``launch_mode``): H in {12, 16, 128}, S in {1, 2, 4}, ragged lengths from 0 to
32,768, page sizes 1 and 64, bf16 and FP8 caches, padded entries untouched; outputs within
2e-2 of the reference on unit-scale inputs, lse within 1e-3; the torch ops under a CUDA
graph."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import mla_attention as mod  # noqa: E402
from kernels_dsl.kimi_k3 import mla_kv  # noqa: E402


def build_cache(rows, ps, fp8):
    """A cache of pages of ``ps`` rows holding ``rows`` random unit-scale rows (written by the
    library's scatter), and its rows as the reference sees them (fp32 [pages * ps, 576])."""
    pages = -(-rows // ps) + 2
    kv_c = torch.randn(pages * ps, 512, device="cuda", dtype=torch.bfloat16)
    k_pe = torch.randn(pages * ps, 64, device="cuda", dtype=torch.bfloat16)
    loc = torch.arange(pages * ps, device="cuda", dtype=torch.int64)
    if fp8:
        cache = torch.zeros(pages, ps, 656, device="cuda", dtype=torch.uint8)
        mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, loc, cache)
        flat = cache.view(-1, 656)
        codes = flat[:, :512].contiguous().view(torch.float8_e4m3fn).float()
        scales = flat[:, 512:528].contiguous().view(torch.float32)
        lat = (codes.view(-1, 4, 128) * scales[:, :, None]).view(-1, 512)
        rope = flat[:, 528:].contiguous().view(torch.bfloat16).float()
        ref_rows = torch.cat([lat, rope], -1)
    else:
        cache = torch.empty(pages, ps, 576, device="cuda", dtype=torch.bfloat16)
        mla_kv.mla_kv_scatter(kv_c, k_pe, loc, cache)
        ref_rows = cache.view(-1, 576).float()
    return cache, ref_rows, pages


def block_tables(totals, ps, pages):
    """The requests' pages in random order (-1 past each request's last page)."""
    need = [max(0, -(-t // ps)) for t in totals]
    width = max(need + [1])
    perm = torch.randperm(pages, device="cuda").to(torch.int32)
    bt = torch.full((len(totals), width), -1, device="cuda", dtype=torch.int32)
    at = 0
    for b, k in enumerate(need):
        bt[b, :k] = perm[at:at + k]
        at += k
    return bt


def reference(q, rows, bt, totals, ps, scale):
    """fp32 (out [B, S, H, 512], lse [B, S, H]); query s sees rows n <= T - S + s."""
    bsz, s_q, h, _ = q.shape
    out = torch.zeros(bsz, s_q, h, 512, device="cuda")
    lse = torch.full((bsz, s_q, h), float("-inf"), device="cuda")
    for b in range(bsz):
        t = int(totals[b])
        if t <= 0:
            continue
        n = torch.arange(t, device="cuda")
        kv = rows[bt[b, n // ps].long() * ps + n % ps]
        sc = torch.einsum("shd,nd->shn", q[b].float(), kv) * scale
        sees = n[None, :] <= (t - s_q + torch.arange(s_q, device="cuda"))[:, None]
        sc = sc.masked_fill(~sees[:, None, :], float("-inf"))
        lse[b] = torch.logsumexp(sc, -1)
        out[b] = torch.einsum("shn,nd->shd", torch.softmax(sc, -1), kv[:, :512])
    return out, lse


def lengths_for(bsz, long_len, rng):
    """Ragged lengths: 0, 1, a non-multiple of 64, the long one, random others."""
    base = [0, 1, 4095, long_len]
    return (base + torch.randint(1, long_len, (max(0, bsz - 4),), generator=rng).tolist())[:bsz]


@pytest.mark.parametrize("fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("ps", [64, 1])
@pytest.mark.parametrize("h,s", [(12, 1), (12, 4), (16, 2), (128, 1), (128, 4)])
def test_verify_against_fp32_reference(launch_mode, h, s, ps, fp8):
    rng = torch.Generator().manual_seed(h * 10 + s + ps + fp8)
    prefixes = lengths_for(6, 32768 - s if h <= 16 else 8192, rng)
    prefixes[2] = -1  # a padded entry
    totals = [p + s if p >= 0 else 0 for p in prefixes]
    cache, rows, pages = build_cache(sum(-(-t // ps) * ps for t in totals) + ps, ps, fp8)
    bt = block_tables(totals, ps, pages)
    q = torch.randn(len(prefixes), s, h, 576, device="cuda", dtype=torch.bfloat16)
    lengths = torch.tensor(prefixes, device="cuda", dtype=torch.int32)
    out = torch.full((len(prefixes), s, h, 512), 7.0, device="cuda", dtype=torch.bfloat16)
    scale = 576 ** -0.5
    _, lse = mod.verify_splitkv(q, cache, bt, lengths, scale, out=out, return_lse=True)
    want, want_lse = reference(q, rows, bt, [t if p >= 0 else -1 for p, t in
                                             zip(prefixes, totals)], ps, scale)
    real = lengths >= 0
    torch.testing.assert_close(out[real].float(), want[real], atol=2e-2, rtol=0)
    torch.testing.assert_close(lse[real], want_lse[real], atol=1e-3, rtol=0)
    assert torch.all(out[~real] == 7.0)


@pytest.mark.parametrize("fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("h", [12, 128])
@pytest.mark.parametrize("num_splits", [None, 1, 256])
def test_decode_against_fp32_reference(launch_mode, h, fp8, num_splits):
    """Decode (cache_seqlens: the rows each query sees, its own included): 0 rows writes
    zeros and lse -inf; B = 1 at 32K over the default split count fills the GPU."""
    rng = torch.Generator().manual_seed(h + fp8)
    seqlens = lengths_for(5, 32768, rng)
    cache, rows, pages = build_cache(sum(-(-t // 64) * 64 for t in seqlens) + 64, 64, fp8)
    bt = block_tables(seqlens, 64, pages)
    q = torch.randn(len(seqlens), h, 576, device="cuda", dtype=torch.bfloat16)
    lens = torch.tensor(seqlens, device="cuda", dtype=torch.int32)
    out, lse = mod.mla_decode(q, cache, bt, lens, num_splits=num_splits, return_lse=True)
    want, want_lse = reference(q[:, None], rows, bt, seqlens, 64, 576 ** -0.5)
    torch.testing.assert_close(out.float(), want[:, 0], atol=2e-2, rtol=0)
    torch.testing.assert_close(lse, want_lse[:, 0], atol=1e-3, rtol=0)
    assert torch.all(out[0] == 0) and torch.all(lse[0] == float("-inf"))


def test_torch_ops_in_a_cuda_graph():
    """torch.ops.kiln.mla_decode captured and replayed: the replay's output equals the eager
    call's for new values in the same tensors."""
    import kernels_dsl.kimi_k3.torch_ops  # noqa: F401

    seqlens = [300, 1, 4097, 64]
    cache, rows, pages = build_cache(sum(-(-t // 64) * 64 for t in seqlens) + 64, 64, False)
    bt = block_tables(seqlens, 64, pages)
    q = torch.randn(4, 12, 576, device="cuda", dtype=torch.bfloat16)
    lens = torch.tensor(seqlens, device="cuda", dtype=torch.int32)
    torch.ops.kiln.mla_decode(q, cache, bt, lens)  # warm-up (plans the launches)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = torch.ops.kiln.mla_decode(q, cache, bt, lens)
    q.copy_(torch.randn_like(q))
    graph.replay()
    want, want_lse = torch.ops.kiln.mla_decode(q, cache, bt, lens)
    torch.cuda.synchronize()
    assert torch.equal(out, want) and torch.equal(lse, want_lse)
