"""The MLA KV scatters on the GPU into large and paged caches (docs/kernels/mla_cache.md):
FP8 caches past 2^31 and 2^32 bytes and bf16 caches past 2^31 and 2^32 elements, written at
their first and last rows, and one layer's view ``pool[:, l]`` of a [pages, layers,
page_size, W] pool (pages strided apart), small and past 2^31 bytes / elements. The caches
are filled with one byte value first; then every row loc names must hold its reference bytes
and every other byte of the cache (the pool's other layers included) must still hold the
fill, checked a chunk of rows at a time. Each test runs JIT-compiled and through the bundle
(``launch_mode``), so the 64-bit and paged specializations of the bundle run too. Largest
test: a bf16 cache of 8.6 GB, freed after."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import mla_kv  # noqa: E402

from test_fp8_quant import ref_group_quant  # noqa: E402  (the group rule, IEEE division)

FILL = 0xA5
#: rows of a cache checked at once (a bool temporary of this many rows' bytes)
CHUNK = 1 << 18


def new_rows(t, seed):
    """kv_c [T, 512] and k_pe [T, 64]: slices of one bf16 projection, an all-zero latent
    group in token 0."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    kv_a = (torch.randn(t, 576, device="cuda", generator=g) * 3).to(torch.bfloat16)
    kv_a[0, :128] = 0
    return kv_a[:, :512], kv_a[:, 512:]


def reference_rows(kv_c, k_pe, fp8):
    """The bytes of each token's cache row: cat(kv_c, k_pe) (bf16, 1152 bytes) or the FP8
    layout's codes, scales and rope (656 bytes)."""
    if not fp8:
        return torch.cat([kv_c, k_pe], -1).view(torch.uint8)
    q, s = ref_group_quant(kv_c, 128)
    return torch.cat([q.view(torch.uint8), s.contiguous().view(torch.uint8),
                      k_pe.contiguous().view(torch.uint8)], -1)


def filled(rows, width, fp8):
    """A contiguous cache of rows x width filled with FILL bytes: uint8 (FP8) or bf16."""
    raw = torch.full((rows, width * (1 if fp8 else 2)), FILL, device="cuda", dtype=torch.uint8)
    return raw if fp8 else raw.view(torch.bfloat16)


def scatter(fp8, kv_c, k_pe, loc, cache):
    f = mla_kv.mla_kv_scatter_fp8 if fp8 else mla_kv.mla_kv_scatter
    assert f(kv_c, k_pe, loc, cache) is cache
    torch.cuda.synchronize()


def assert_rows(base, flat_loc, want):
    """base [N, W] (the whole allocation, contiguous): row flat_loc[i] holds want[i] (as
    bytes) where flat_loc[i] >= 0, every other row only FILL bytes."""
    b = base.view(torch.uint8).view(base.shape[0], -1)
    keep = flat_loc >= 0
    assert torch.equal(b[flat_loc[keep]], want[keep])
    changed = []
    for start in range(0, b.shape[0], CHUNK):
        blk = b[start:start + CHUNK]
        changed += ((blk != FILL).any(-1).nonzero().flatten() + start).tolist()
    assert set(changed) <= set(flat_loc[keep].tolist()), "rows loc does not name changed"


def tokens_at(rows, extra, seed):
    """Distinct int64 loc: the last row, the first, -1 (padded), ``extra`` and up to four
    random rows."""
    g = torch.Generator().manual_seed(seed)
    picks = [rows - 1, 0] + extra
    for r in torch.randint(1, rows - 1, (4,), generator=g).tolist():
        if r not in picks:
            picks.append(r)
    return torch.tensor(picks[:2] + [-1] + picks[2:], device="cuda")


@pytest.mark.parametrize("fp8,rows", [
    (True, 3_273_604),  # the issue's: (rows - 1) * 656 = 2^31 - 80; the last row faulted
    (True, 6_600_000),  # past 2^32 bytes
    (False, 3_728_272),  # past 2^31 elements, (rows - 1) * 576 too (refused before)
    (False, 7_456_541),  # past 2^32 elements (8.6 GB)
])
def test_scatter_into_a_cache_past_2_31_up_to_its_last_row(launch_mode, fp8, rows):
    width = mla_kv.FP8_ROW_BYTES if fp8 else 576
    cache = filled(rows, width, fp8)
    loc = tokens_at(rows, [rows - 2], rows)
    kv_c, k_pe = new_rows(len(loc), rows)
    scatter(fp8, kv_c, k_pe, loc, cache)
    assert_rows(cache, loc, reference_rows(kv_c, k_pe, fp8))
    del cache
    torch.cuda.empty_cache()


@pytest.mark.parametrize("fp8", [True, False])
@pytest.mark.parametrize("pages,layers,layer", [
    (12, 3, 1),  # small: 32-bit offsets
    (2430, 24, 23),  # the last layer's last row past 2^31 bytes (FP8) / elements (bf16)
])
def test_scatter_into_one_layer_of_a_pool(launch_mode, fp8, pages, layers, layer):
    """pool [pages, layers, 64, W], written through ``pool[:, layer]`` (a page every
    layers x 64 rows); the other layers keep their bytes."""
    page_size = 64
    width = mla_kv.FP8_ROW_BYTES if fp8 else 576
    pool = filled(pages * layers * page_size, width, fp8)
    view = pool.view(pages, layers, page_size, width)[:, layer]
    slots = pages * page_size
    loc = tokens_at(slots, [page_size - 1, page_size, slots - page_size], pages)
    kv_c, k_pe = new_rows(len(loc), pages)
    scatter(fp8, kv_c, k_pe, loc, view)
    flat = torch.where(loc >= 0, (loc // page_size * layers + layer) * page_size
                       + loc % page_size, -1)
    assert_rows(pool, flat, reference_rows(kv_c, k_pe, fp8))
    del pool, view
    torch.cuda.empty_cache()
