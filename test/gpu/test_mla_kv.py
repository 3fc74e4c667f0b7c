"""MLA BF16 KV cache scatter on the GPU (docs/kernels/mla_cache.md): cache[loc[t]] =
cat(kv_c[t], k_pe[t]) exactly; loc < 0 (padded slots) skips the token and every row not
named by loc keeps its old contents."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import mla_kv as mod  # noqa: E402


def reference(kv_c, k_pe, loc, cache):
    ref = cache.clone()
    flat = ref.view(-1, 576)
    k_pe = k_pe.reshape(k_pe.shape[0], 64)
    keep = loc >= 0
    flat[loc[keep]] = torch.cat([kv_c[keep], k_pe[keep]], dim=-1)
    return ref


def inputs(t, slots, strided, pad_frac=0.25):
    if strided:
        proj = torch.randn(t, 576 + 64, device="cuda", dtype=torch.bfloat16)
        kv_c, k_pe = proj[:, :512], proj[:, 512:576].unsqueeze(1)  # [T, 1, 64] view
    else:
        kv_c = torch.randn(t, 512, device="cuda", dtype=torch.bfloat16)
        k_pe = torch.randn(t, 64, device="cuda", dtype=torch.bfloat16)
    loc = torch.randperm(slots, device="cuda")[:t].to(torch.int64)  # distinct rows
    if t:
        pad = torch.rand(t, device="cuda") < pad_frac
        loc[pad] = -1
    return kv_c, k_pe, loc


@pytest.mark.parametrize("t", [0, 1, 7, 64, 4096])
@pytest.mark.parametrize("strided", [False, True])
def test_scatter_bit_exact(t, strided):
    slots = max(2 * t, 16)
    kv_c, k_pe, loc = inputs(t, slots, strided)
    cache = torch.randn(slots, 576, device="cuda", dtype=torch.bfloat16)
    ref = reference(kv_c, k_pe, loc, cache)
    assert mod.mla_kv_scatter(kv_c, k_pe, loc, cache) is cache
    torch.cuda.synchronize()
    assert torch.equal(cache.view(torch.int16), ref.view(torch.int16))


@pytest.mark.parametrize("rows,warps,programs", [(8, 4, 0), (4, 2, 32), (16, 4, 8)])
@pytest.mark.parametrize("evict,cache_mod", [("evict_first", ".cs"), ("", ".cs"),
                                             ("evict_first", "")])
def test_scatter_hints_and_one_wave_bit_exact(rows, warps, programs, evict, cache_mod):
    """Settings.load_evict, store_cache and min_programs: the same bits."""
    settings = dataclasses.replace(mod.SETTINGS, rows=rows, num_warps=warps,
                                   min_programs=programs, load_evict=evict,
                                   store_cache=cache_mod)
    t = 4099
    slots = 2 * t
    kv_c, k_pe, loc = inputs(t, slots, True)
    cache = torch.randn(slots, 576, device="cuda", dtype=torch.bfloat16)
    ref = reference(kv_c, k_pe, loc, cache)
    assert mod.mla_kv_scatter(kv_c, k_pe, loc, cache, settings=settings) is cache
    torch.cuda.synchronize()
    assert torch.equal(cache.view(torch.int16), ref.view(torch.int16))


def test_paged_cache_and_all_padded():
    pages, page_size, t = 40, 64, 1000
    cache = torch.randn(pages, page_size, 576, device="cuda", dtype=torch.bfloat16)
    kv_c, k_pe, loc = inputs(t, pages * page_size, True)
    ref = reference(kv_c, k_pe, loc, cache)
    mod.mla_kv_scatter(kv_c, k_pe, loc, cache)
    assert torch.equal(cache.view(torch.int16), ref.view(torch.int16))
    before = cache.clone()
    mod.mla_kv_scatter(kv_c, k_pe, torch.full_like(loc, -1), cache)
    torch.cuda.synchronize()
    assert torch.equal(cache.view(torch.int16), before.view(torch.int16))


@pytest.mark.parametrize("t", [1, 7, 300])
@pytest.mark.parametrize("layout", ["rows", "padded", "pages"])
def test_scatter_any_stride_and_address(launch_mode, t, layout):
    """kv_c and k_pe at odd element offsets and strides (613: a slice of a wider
    projection), loc 8 bytes past a 16-byte boundary, cache rows 584 elements apart or
    pages: inputs the bundle serves with its generic kernel (issue 22 item 6)."""
    slots = 1024
    proj = torch.randn(t, 613, device="cuda", dtype=torch.bfloat16)
    kv_c, k_pe = proj[:, 1:513], proj[:, 513:577]
    loc = torch.empty(t + 1, device="cuda", dtype=torch.int64)[1:]
    loc.copy_(torch.randperm(slots, device="cuda")[:t])
    if t > 1:
        loc[torch.rand(t, device="cuda") < 0.25] = -1
    if layout == "pages":
        base = torch.randn(slots // 64, 64, 576, device="cuda", dtype=torch.bfloat16)
        cache = base
    else:
        base = torch.randn(slots, 584 if layout == "padded" else 576, device="cuda",
                           dtype=torch.bfloat16)
        cache = base[:, :576]
    before = base.clone()
    mod.mla_kv_scatter(kv_c, k_pe, loc, cache)
    torch.cuda.synchronize()
    want = before.reshape(slots, -1).clone()
    keep = loc >= 0
    want[loc[keep], :576] = torch.cat([kv_c[keep], k_pe[keep]], dim=-1)
    # every row not named by loc, and the rows' padding, unchanged
    assert torch.equal(base.reshape(slots, -1).view(torch.int16), want.view(torch.int16))


def test_bad_arguments_raise_before_launch():
    kv_c, k_pe, loc = inputs(8, 64, False)
    cache = torch.zeros(64, 576, device="cuda", dtype=torch.bfloat16)
    for args in [(kv_c, k_pe, loc.int(), cache), (kv_c.float(), k_pe, loc, cache),
                 (kv_c[:, :256], k_pe, loc, cache), (kv_c, k_pe, loc[:4], cache),
                 (kv_c, k_pe, loc, torch.zeros(64, 512, device="cuda", dtype=torch.bfloat16)),
                 (kv_c, k_pe, loc, torch.zeros(64, 1152, device="cuda",
                                               dtype=torch.bfloat16)[:, ::2])]:
        # (a [pages, page_size, 576] view with a wider page stride is a cache now:
        # test_mla_kv_pages.py)
        with pytest.raises((TypeError, ValueError)):
            mod.mla_kv_scatter(*args)
    torch.cuda.synchronize()
