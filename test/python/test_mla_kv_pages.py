"""The MLA KV scatters' cache addressing (docs/kernels/mla_cache.md) on the CPU: caches of
pages strided apart (one layer's view of a [pages, layers, page_size, W] pool), row
``loc`` at ``(loc // page_size) * page_stride + (loc % page_size) * row_stride``; caches
past 2^31 bytes (FP8) and 2^31 elements (bf16) written up to their last row, the FP8 one
with the 64-bit specialization the wrapper picks (``_fp8_index64``); the wrapper's layout
rules. The kernels run in the interpreter, which bounds-checks every store: a 32-bit
offset that wraps is an error there. The big caches are numpy or torch allocations
that are never filled (only the rows written are touched). Through the wrappers with torch
CPU tensors where torch is installed."""

import ml_dtypes
import numpy as np
import pytest

import kiln
from kernels_dsl.kimi_k3 import mla_kv

from test_fp8_quant_kernels import check_kv_rows, k3_like_rows, ref_kv_fp8_row, run_kv_scatter_fp8

BF16 = ml_dtypes.bfloat16
#: The FP8 cache of the issue: (rows - 1) * 656 = 2^31 - 80, its last row's bytes past 2^31.
FP8_ROWS_PAST_2_31 = 3_273_604
#: The smallest bf16 cache past 2^31 elements whose last row's offset passes 2^31 - 1 too.
BF16_ROWS_PAST_2_31 = 3_728_272


def run_kv_scatter_bf16(kv_a, loc, cache, page_size, page_stride, row_stride, paged):
    """mla_kv_scatter_bf16_kernel as the wrapper launches it, kv_c and k_pe the slices of
    kv_a [T, 576]; strides in elements."""
    t = kv_a.shape[0]
    cx, _ = mla_kv.launch_config(paged)
    kiln.testing.interpret(mla_kv.mla_kv_scatter_bf16_kernel, (-(-t // cx["ROWS"]),), kv_a,
                           kv_a[:, 512:], loc, cache, t, int(np.prod(cache.shape[:-1])),
                           kv_a.shape[1], kv_a.shape[1], row_stride, page_size, page_stride,
                           **cx)


def bf16_rows(a):
    return np.ascontiguousarray(a).view(np.uint16).reshape(-1, 576)


@pytest.mark.parametrize("layout", ["flat", "pages", "layer"])
def test_bf16_scatter_into_pages(layout):
    """A flat cache (one page), contiguous pages through the page arithmetic, and one layer
    of a [5, 3, 8, 576] pool (pages 3 x 8 rows apart; the other layers unchanged)."""
    rng = np.random.default_rng(1)
    pages, page_size, t = 5, 8, 11
    pool = k3_like_rows(rng, pages * 3 * page_size, 576).reshape(pages, 3, page_size, 576)
    before = pool.copy()
    cache = pool[:, 1] if layout == "layer" else pool.reshape(-1, 576)
    kv_a = k3_like_rows(rng, t, 576)
    loc = rng.permutation(pages * page_size)[:t].astype(np.int64)
    loc[[2, 7]] = -1
    loc[4] = pages * page_size  # past num_slots: skipped
    if layout == "flat":
        run_kv_scatter_bf16(kv_a, loc, cache, cache.shape[0], 0, 576, False)
    else:
        if layout == "pages":
            cache = cache.reshape(-1, page_size, 576)
        strides = [s // 2 for s in cache.strides]
        run_kv_scatter_bf16(kv_a, loc, cache, page_size, strides[0], strides[1], True)
    old = before[:, 1] if layout == "layer" else before
    check_kv_rows(bf16_rows(cache), bf16_rows(old), bf16_rows(kv_a), loc)
    if layout == "layer":
        for other in (0, 2):
            assert np.array_equal(bf16_rows(pool[:, other]), bf16_rows(before[:, other]))


def test_fp8_32_bit_offsets_up_to_the_last_byte():
    """INDEX64 from the offset of the cache's last byte: the issue's cache needs it, one row
    fewer does not (its last byte is at 2^31 - 81); page strides count."""
    assert mla_kv._fp8_index64(FP8_ROWS_PAST_2_31, FP8_ROWS_PAST_2_31, 0, 656)
    assert not mla_kv._fp8_index64(FP8_ROWS_PAST_2_31 - 1, FP8_ROWS_PAST_2_31 - 1, 0, 656)
    # 2 pages of 64 rows: the second page's last byte is 2^31 - 2^15 + 63 * 656 + 655 on
    assert mla_kv._fp8_index64(128, 64, 2**31 - 2**15, 656)
    assert not mla_kv._fp8_index64(128, 64, 2**31 - 2**16, 656)


@pytest.mark.parametrize("index64", [False, True])
def test_fp8_scatter_writes_the_last_row_past_2_31_bytes(index64):
    """The issue's cache: the last row's codes at byte 2^31 - 80 on. With 32-bit offsets
    (the old kernel) its stores wrap to negative offsets (an out-of-bounds store in the
    interpreter, an illegal address on the GPU); the wrapper picks INDEX64 for it, which
    writes the first and the last row exactly."""
    slots = FP8_ROWS_PAST_2_31
    assert mla_kv._fp8_index64(slots, slots, 0, 656)
    cache = np.zeros((slots, 656), np.uint8)  # never filled: the pages stay unmapped
    rng = np.random.default_rng(2)
    kv_a = k3_like_rows(rng, 4, 576)
    loc = np.array([slots - 1, 0, -1, slots // 2], np.int64)
    touched = [0, 1, slots // 2 - 1, slots // 2, slots // 2 + 1, slots - 2, slots - 1]
    cache[touched] = 0xA5
    if not index64:
        with pytest.raises(kiln.CompilationError, match="out-of-bounds store through 'cache_q'"):
            run_kv_scatter_fp8(kv_a, loc, cache, slots, 0, 656, INDEX64=False)
        return
    run_kv_scatter_fp8(kv_a, loc, cache, slots, 0, 656, INDEX64=True)
    want = ref_kv_fp8_row(kv_a[:, :512], kv_a[:, 512:])
    for r in touched:
        hit = np.nonzero(loc == r)[0]
        assert np.array_equal(cache[r], want[hit[0]] if hit.size else np.full(656, 0xA5))


def test_bf16_scatter_writes_the_last_row_past_2_31_elements():
    slots = BF16_ROWS_PAST_2_31
    assert (slots - 1) * 576 > 2**31 - 1
    cache = np.zeros((slots, 576), BF16)  # never filled
    rng = np.random.default_rng(3)
    kv_a = k3_like_rows(rng, 3, 576)
    loc = np.array([0, slots - 1, -1], np.int64)
    cache[[1, slots - 2]] = 7.0
    run_kv_scatter_bf16(kv_a, loc, cache, slots, 0, 576, False)
    assert np.array_equal(bf16_rows(cache[[0, slots - 1]]), bf16_rows(kv_a[:2]))
    assert np.all(cache[[1, slots - 2]].astype(np.float32) == 7.0)


# ---------------------------------------------------------------------------
# The wrappers' layout rules (_cache_pages)
# ---------------------------------------------------------------------------

class Strided:
    """shape and stride() of a tensor, as the wrappers read them."""

    def __init__(self, shape, strides):
        self.shape, self._strides = tuple(shape), tuple(strides)

    def stride(self):
        return self._strides


def contiguous(shape):
    return Strided(shape, [int(np.prod(shape[i + 1:])) for i in range(len(shape))])


def pages_of(shape, strides, width=576):
    return mla_kv._cache_pages("op", Strided(shape, strides), width)


def test_cache_pages_merges_uniform_dimensions():
    w = 576
    assert pages_of((100, w), (w, 1)) == (100, 100, 0, w)
    assert pages_of((100, w), (640, 1)) == (100, 100, 0, 640)  # padded rows: one page
    assert pages_of((4, 64, w), (64 * w, w, 1)) == (256, 256, 0, w)  # contiguous pages
    # the whole pool [pages, layers, page_size, W] is one page; a layer's view is paged
    pool = contiguous((10, 24, 64, w))
    assert mla_kv._cache_pages("op", pool, w) == (10 * 24 * 64,) * 2 + (0, w)
    assert pages_of((10, 64, w), (24 * 64 * w, w, 1)) == (640, 64, 24 * 64 * w, w)
    # size-1 dimensions have no stride to respect: one page of a pool, or pages of one row
    assert pages_of((1, 64, w), (24 * 64 * w, w, 1)) == (64, 64, 0, w)
    assert pages_of((10, 1, w), (24 * w, w, 1)) == (10, 10, 0, 24 * w)
    assert pages_of((1, w), (7, 1)) == (1, 1, 0, w) and pages_of((0, w), (w, 1))[0] == 0


def test_cache_pages_rejects_three_levels():
    w = 576
    # pages, page halves and rows all strided differently
    with pytest.raises(ValueError, match="rows or pages of rows"):
        pages_of((4, 2, 16, w), (10 * 64 * w, 40 * w, 2 * w, 1))


# ---------------------------------------------------------------------------
# Through the wrappers (torch CPU tensors, the kernels interpreted)
# ---------------------------------------------------------------------------

@pytest.fixture
def interpreted(monkeypatch):
    torch = pytest.importorskip("torch")
    for k in (mla_kv.mla_kv_scatter_bf16_kernel, mla_kv.mla_kv_scatter_fp8_kernel):
        monkeypatch.setattr(k, "interpret", True)
    launched = []
    launch = mla_kv.L.launch

    def record(kernel, name, grid, args, constexprs, *rest):
        launched.append(dict(constexprs))
        launch(kernel, name, grid, args, constexprs, *rest)

    monkeypatch.setattr(mla_kv.L, "launch", record)
    return torch, launched


def torch_rows(torch, t, seed):
    kv_a = torch.from_numpy(k3_like_rows(np.random.default_rng(seed), t, 576).view(np.int16))
    kv_a = kv_a.view(torch.bfloat16)
    return kv_a[:, :512], kv_a[:, 512:]


def test_wrappers_write_one_layer_of_a_pool(interpreted):
    torch, launched = interpreted
    torch.manual_seed(0)
    pages, layers, page_size = 6, 3, 16
    kv_c, k_pe = torch_rows(torch, 9, 4)
    loc = torch.randperm(pages * page_size)[:9]
    loc[3] = -1
    keep = loc >= 0
    page, row = loc[keep] // page_size, loc[keep] % page_size
    pool = torch.randn(pages, layers, page_size, 576).to(torch.bfloat16)
    ref = pool.clone()
    ref[page, 1, row] = torch.cat([kv_c, k_pe], -1)[keep]
    mla_kv.mla_kv_scatter(kv_c, k_pe, loc, pool[:, 1])
    assert torch.equal(pool.view(torch.int16), ref.view(torch.int16))
    pool8 = torch.randint(0, 256, (pages, layers, page_size, 656), dtype=torch.uint8)
    ref8 = pool8.clone()
    want = ref_kv_fp8_row(kv_c.view(torch.int16).numpy().view(BF16),
                          k_pe.view(torch.int16).numpy().view(BF16))
    ref8[page, 2, row] = torch.from_numpy(want)[keep]
    mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, loc, pool8[:, 2])
    assert torch.equal(pool8, ref8)
    assert [(c["PAGED"], c.get("INDEX64")) for c in launched] == [(True, None), (True, False)]


def test_wrappers_write_the_last_rows_of_caches_past_2_31(interpreted):
    """The FP8 cache of the issue (64-bit offsets) and a bf16 cache past 2^31 elements (its
    offsets are 64-bit anyway: the old wrapper refused it), first and last rows."""
    torch, launched = interpreted
    kv_c, k_pe = torch_rows(torch, 3, 5)
    slots = FP8_ROWS_PAST_2_31
    cache = torch.empty(slots, 656, dtype=torch.uint8)  # never filled
    loc = torch.tensor([slots - 1, -1, 0])
    mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, loc, cache)
    want = ref_kv_fp8_row(kv_c.view(torch.int16).numpy().view(BF16),
                          k_pe.view(torch.int16).numpy().view(BF16))
    assert np.array_equal(cache[[slots - 1, 0]].numpy(), want[[0, 2]])
    slots = BF16_ROWS_PAST_2_31
    cache = torch.empty(slots, 576, dtype=torch.bfloat16)
    loc = torch.tensor([0, -1, slots - 1])
    mla_kv.mla_kv_scatter(kv_c, k_pe, loc, cache)
    row = torch.cat([kv_c, k_pe], -1)
    assert torch.equal(cache[[0, slots - 1]].view(torch.int16), row[[0, 2]].view(torch.int16))
    assert [(c["PAGED"], c.get("INDEX64")) for c in launched] == [(False, True), (False, None)]


def test_wrappers_refuse_a_page_stride_not_of_16_bytes(interpreted):
    torch, launched = interpreted
    kv_c, k_pe = torch_rows(torch, 2, 6)
    pool = torch.zeros(4, 2 * 8 * 656 + 8, dtype=torch.uint8)[:, :2 * 8 * 656]
    with pytest.raises(ValueError, match="page stride .* multiple of 16"):
        mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, torch.tensor([0, 1]),
                                  pool.view(4, 2, 8, 656)[:, 0])
    assert not launched
