"""MLA attention on the GPU (docs/kernels/mla_attention.md): mla_decode and verify_splitkv
against an fp32 torch reference per request written from the spec (the rows gathered from
the pages, the FP8 rows dequantized from the bytes mla_kv_scatter_fp8 wrote), JIT and
bundle (``launch_mode``): H in {12, 16, 128}, S in {1, 2, 4}, ragged lengths from 0 to
32,768, page sizes 1 and 64, bf16 and FP8 caches, padded entries untouched; outputs within
2e-2 of the reference on unit-scale inputs, lse within 1e-3; the torch ops under a CUDA
graph and over two caches of one launch key. Each case checks which kernel ran: the TMA
kernel for the bf16 cache of 64-row pages on Hopper with ``Settings.tma`` (JIT or bundle)
from ``tma_min_rows`` query rows a program, the pointer kernel otherwise (S = 1 with at most
16 heads, page size 1, FP8)."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import mla_attention as mod  # noqa: E402
from kernels_dsl.kimi_k3 import mla_kv  # noqa: E402

#: Outputs within 2e-2 of the fp32 reference (the issue's bar for unit-scale inputs) plus
#: the output's own bf16 rounding, half an ulp (2^-9 relative): unit-scale rows give
#: outputs past 4 where a query sees one or two rows (a request of length 0 or 1), and
#: there that rounding alone is up to 0.0156.
OUT_RTOL = 2.0 ** -9


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


@pytest.fixture
def kernels(monkeypatch):
    """The names of the partial kernels the wrappers launch (the launches still run; the
    spy sees every kimi_k3 launch, the cache's scatter too)."""
    names = []
    launch = mod.L.launch

    def spy(kernel, name, *args, **kwargs):
        if name.startswith("mla_attention"):
            names.append(name)
        return launch(kernel, name, *args, **kwargs)

    monkeypatch.setattr(mod.L, "launch", spy)
    return names


def expected_kernel(launch_mode, ps, fp8, h, s, settings=mod.SETTINGS):
    """The partial kernel ``mla_attention._use_tma`` picks for this device and mode (the
    TMA kernel from ``tma_min_rows`` query rows a program)."""
    if fp8:
        return "mla_attention_fp8"
    hopper = torch.cuda.get_device_capability()[0] == 9
    s_pad, block_h, _ = mod.tile_shape(h, s)
    tma = (settings.tma and ps % 64 == 0 and (hopper or settings.tma_blackwell)  # either mode
           and s_pad * block_h >= settings.tma_min_rows)
    return "mla_attention_tma" if tma else "mla_attention"


def lengths_for(bsz, long_len, rng):
    """Ragged lengths: 0, 1, a non-multiple of 64, the long one, random others."""
    base = [0, 1, 4095, long_len]
    return (base + torch.randint(1, long_len, (max(0, bsz - 4),), generator=rng).tolist())[:bsz]


@pytest.mark.parametrize("fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("ps", [64, 1])
@pytest.mark.parametrize("h,s", [(12, 1), (12, 4), (16, 2), (128, 1), (128, 4)])
def test_verify_against_fp32_reference(launch_mode, kernels, h, s, ps, fp8):
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
    torch.testing.assert_close(out[real].float(), want[real], atol=2e-2, rtol=OUT_RTOL)
    torch.testing.assert_close(lse[real], want_lse[real], atol=1e-3, rtol=0)
    assert torch.all(out[~real] == 7.0)
    assert set(kernels) == {expected_kernel(launch_mode, ps, fp8, h, s)}


@pytest.mark.parametrize("fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("h", [12, 128])
@pytest.mark.parametrize("num_splits", [None, 1, 256])
def test_decode_against_fp32_reference(launch_mode, kernels, h, fp8, num_splits):
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
    torch.testing.assert_close(out.float(), want[:, 0], atol=2e-2, rtol=OUT_RTOL)
    torch.testing.assert_close(lse, want_lse[:, 0], atol=1e-3, rtol=0)
    assert torch.all(out[0] == 0) and torch.all(lse[0] == float("-inf"))
    assert set(kernels) == {expected_kernel(launch_mode, 64, fp8, h, 1)}


# The TMA kernel at any query rows (the default leaves 16-row calls to the pointer kernel).
TMA = mod.Settings(tma=True, tma_min_rows=0)


@pytest.mark.parametrize("ps,settings", [
    (64, TMA),                                                 # K3's pages
    (128, TMA),                                                # pages of 128 rows
    (64, mod.Settings(tma=True, tma_min_rows=0, tma_latent_width=128,    # Blackwell's width
                      tma_stages=1)),  # (its five rings beside q: one stage on sm_90a)
    (64, mod.Settings(tma=True, tma_min_rows=0, tma_blackwell=True)),    # sm_100a/sm_103a too
    (64, mod.SETTINGS),                                        # the default's choice
], ids=["page64", "page128", "lat128", "blackwell", "default"])
@pytest.mark.parametrize("h,s", [(12, 1), (128, 2)])
def test_tma_variants_against_fp32_reference(kernels, ps, settings, h, s):
    """The TMA kernel (``Settings.tma``), its other settings and page sizes (JIT: the bundle
    holds the default settings' TMA kernels only)."""
    rng = torch.Generator().manual_seed(ps + h + s)
    prefixes = lengths_for(5, 32768 - s if h <= 16 else 8192, rng)
    totals = [p + s for p in prefixes]
    cache, rows, pages = build_cache(sum(-(-t // ps) * ps for t in totals) + ps, ps, False)
    bt = block_tables(totals, ps, pages)
    q = torch.randn(len(prefixes), s, h, 576, device="cuda", dtype=torch.bfloat16)
    lengths = torch.tensor(prefixes, device="cuda", dtype=torch.int32)
    out, lse = mod.verify_splitkv(q, cache, bt, lengths, return_lse=True, settings=settings)
    want, want_lse = reference(q, rows, bt, totals, ps, 576 ** -0.5)
    torch.testing.assert_close(out.float(), want, atol=2e-2, rtol=OUT_RTOL)
    torch.testing.assert_close(lse, want_lse, atol=1e-3, rtol=0)
    assert set(kernels) == {expected_kernel("jit", ps, False, h, s, settings)}


@pytest.mark.parametrize("length", [10, 32, 33, 64, 100])
@pytest.mark.parametrize("s", [1, 4])
def test_tma_kernel_never_reads_past_the_length(kernels, length, s):
    """NaN in every cache row past a request's total (its last page's tail, and the pages
    the table names past it): the TMA kernel's output is the reference of the rows before
    it (its last partial block goes through masked pointer loads), at lengths inside a
    block, on a block's edge and on a page's edge."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the TMA kernel is taken on Hopper (Settings.tma_blackwell)")
    total = length + s
    pages = -(-total // 64) + 1
    q = torch.randn(2, s, 12, 576, device="cuda", dtype=torch.bfloat16)
    bt = torch.arange(2 * pages, device="cuda", dtype=torch.int32).view(2, pages)
    lens = torch.tensor([length, length], device="cuda", dtype=torch.int32)
    cache = torch.randn(2 * pages, 64, 576, device="cuda", dtype=torch.bfloat16)
    ref_rows = cache.view(-1, 576).float().clone()
    for b in range(2):
        cache.view(2, pages * 64, 576)[b, total:] = float("nan")
    out = mod.verify_splitkv(q, cache, bt, lens, settings=TMA)
    assert set(kernels) == {"mla_attention_tma"}
    want, _ = reference(q, ref_rows, bt, [total, total], 64, 576 ** -0.5)
    torch.testing.assert_close(out.float(), want, atol=2e-2, rtol=OUT_RTOL)


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


def test_torch_op_over_two_caches_of_one_launch_key():
    """Two caches of the same shape, strides and alignment (two layers' caches) give the op
    one launch key: the second call, a replayed launch plan, must read the second cache.
    (A kernel of TensorDescriptors, as the TMA kernel, is never planned: a replayed
    descriptor would hold the first cache's address.)"""
    import kernels_dsl.kimi_k3.torch_ops  # noqa: F401

    seqlens = [300, 1, 4097, 64]
    cache, rows, pages = build_cache(sum(-(-t // 64) * 64 for t in seqlens) + 64, 64, False)
    other = torch.randn_like(cache)
    bt = block_tables(seqlens, 64, pages)
    q = torch.randn(4, 12, 576, device="cuda", dtype=torch.bfloat16)
    lens = torch.tensor(seqlens, device="cuda", dtype=torch.int32)
    torch.ops.kiln.mla_decode(q, cache, bt, lens)
    out, lse = torch.ops.kiln.mla_decode(q, other, bt, lens)
    want, want_lse = reference(q[:, None], other.view(-1, 576).float(), bt, seqlens, 64,
                               576 ** -0.5)
    torch.testing.assert_close(out.float(), want[:, 0], atol=2e-2, rtol=OUT_RTOL)
    torch.testing.assert_close(lse, want_lse[:, 0], atol=1e-3, rtol=0)
