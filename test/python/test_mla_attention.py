"""MLA attention (docs/kernels/mla_attention.md: mla_decode, verify_splitkv) on the CPU: the
kernels run in the interpreter through their wrappers against a float64 numpy reference
written from the spec (the request's rows gathered from its pages, the FP8 rows dequantized
from the same bytes, softmax over the visible rows, the latent as the value): bf16 and FP8
caches, page sizes 1, 64 and others, S = 1..8 drafts, H from 1 to 128, ragged lengths
including 0 and non-multiples of the page, one and several splits (empty ones included);
padded requests leave their output rows untouched; the wrappers reject bad arguments before
any launch; every AOT specialization compiles for sm_90a, sm_100a and sm_103a. No GPU, no
torch."""

import functools

import ml_dtypes
import numpy as np
import pytest

import kiln
from kernels_dsl.kimi_k3 import mla_attention as mod
from kiln.testing import FakeCudaTensor, bf16_ulp, interpret

from test_kda_decode import HostTensor, aligned

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn
POISON = np.uint16(0x7F81)


# ---------------------------------------------------------------------------
# Reference (docs/kernels/mla_attention.md), float64
# ---------------------------------------------------------------------------

def cache_rows(cache, fp8):
    """The cache's rows [pages, page_size, 576] as float64 (FP8: codes times their group's
    scale, the rope values as stored)."""
    if not fp8:
        return cache.astype(np.float64)
    codes = cache[..., :512].copy().view(E4M3).astype(np.float64)
    scales = cache[..., 512:528].copy().view(np.float32).astype(np.float64)
    lat = (codes.reshape(codes.shape[:-1] + (4, 128)) * scales[..., None]).reshape(codes.shape)
    rope = cache[..., 528:].copy().view(BF16).astype(np.float64)
    return np.concatenate([lat, rope], -1)


def reference(q, rows, bt, totals, scale):
    """(out [B, S, H, 512], lse [B, S, H], bound [B, S, H, 512]) in float64; query s of a
    request with T rows sees rows n <= T - S + s; no visible row: zeros and -inf. q [B, S,
    H, 576]. ``bound`` = sum_n p[n] |v[n]|: the kernel rounds each weight p[n] (FP8:
    p[n] * scale) to bf16 for the tensor cores, an error of at most 2^-9 of it."""
    bsz, s_q, h, _ = q.shape
    ps = rows.shape[1]
    out = np.zeros((bsz, s_q, h, 512))
    bound = np.zeros((bsz, s_q, h, 512))
    lse = np.full((bsz, s_q, h), -np.inf)
    for b in range(bsz):
        t = int(totals[b])
        if t <= 0:
            continue
        kv = np.stack([rows[bt[b, n // ps], n % ps] for n in range(t)])
        for s in range(s_q):
            vis = t - s_q + s + 1
            if vis <= 0:
                continue
            sc = q[b, s].astype(np.float64) @ kv[:vis].T * scale
            m = sc.max(1, keepdims=True)
            p = np.exp(sc - m)
            lse[b, s] = m[:, 0] + np.log(p.sum(1))
            out[b, s] = p @ kv[:vis, :512] / p.sum(1, keepdims=True)
            bound[b, s] = p @ np.abs(kv[:vis, :512]) / p.sum(1, keepdims=True)
    return out, lse, bound


# ---------------------------------------------------------------------------
# The wrappers on numpy arrays, their launches redirected to the interpreter
# ---------------------------------------------------------------------------

@pytest.fixture
def via_interpreter(monkeypatch):
    launches = []

    def unwrap(x):
        if isinstance(x, HostTensor):
            return x.a
        if isinstance(x, kiln.TensorDescriptor) and isinstance(x.base, HostTensor):
            x.base = x.base.a  # a descriptor over the array the interpreter reads
        return x

    def launch(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, cluster=None):
        launches.append((name, tuple(grid), dict(constexprs), num_warps))
        interpret(kernel, tuple(grid), *[unwrap(x) for x in args], **constexprs)

    def empty(like, shape, dtype):
        return HostTensor(aligned(shape, BF16 if dtype == "bfloat16" else np.float32))

    def views(cache, fp8):
        if not fp8:
            return cache, cache, cache
        a = cache.a
        return HostTensor(a.view(E4M3)), HostTensor(a.view(np.float32)), HostTensor(a.view(BF16))

    monkeypatch.setattr(mod.L, "launch", launch)
    monkeypatch.setattr(mod.L, "jit_allowed", lambda: True)  # the TMA kernel is JIT's
    monkeypatch.setattr(mod, "_empty", empty)
    monkeypatch.setattr(mod, "_cache_views", views)
    return launches


def make_cache(rng, pages, ps, fp8, pad=0):
    """A random cache of ``pages`` pages of ``ps`` rows (each row ``pad`` 16-byte units
    wider than the layout's: strided rows), unit-scale values."""
    if fp8:
        buf = aligned((pages, ps, 656 + 16 * pad), np.uint8, 0)
        cache = buf[..., :656]
        codes = rng.standard_normal((pages, ps, 512)).astype(E4M3)
        cache[..., :512] = codes.view(np.uint8)
        cache[..., 512:528] = rng.uniform(0.25, 1.0, (pages, ps, 4)).astype(np.float32).view(
            np.uint8)
        cache[..., 528:] = rng.standard_normal((pages, ps, 64)).astype(BF16).view(np.uint8)
        return cache
    buf = aligned((pages, ps, 576 + 8 * pad), BF16, rng.standard_normal((pages, ps, 576 + 8 * pad)))
    return buf[..., :576]


def tables(rng, lengths, extra, ps, pages):
    """A block table of the requests' pages in random order (-1 past each request's last)."""
    need = [max(0, -(-(int(n) + extra) // ps)) if n >= 0 else 0 for n in lengths]
    width = max(need + [1]) + 1
    perm = rng.permutation(pages)
    assert sum(need) <= pages
    bt = aligned((len(lengths), width), np.int32, -1)
    at = 0
    for b, k in enumerate(need):
        bt[b, :k] = perm[at:at + k]
        at += k
    return bt


def run(rng, *, bsz, s, h, ps, fp8, lengths, num_splits, decode=False, pad=0, lse=True,
        settings=mod.SETTINGS, bad_pages=()):
    """One call against the reference. ``bad_pages``: (request, table entry) pairs of block
    table entries outside [0, pages), whose rows read as zeros."""
    pages = sum(max(0, -(-(int(n) + (0 if decode else s)) // ps)) for n in lengths) + 3
    cache = make_cache(rng, pages, ps, fp8, pad)
    lengths = aligned((bsz,), np.int32, lengths)
    bt = tables(rng, lengths, 0 if decode else s, ps, pages)
    for b, entry in bad_pages:
        bt[b, 0] = entry
    q = aligned((bsz, s, h, 576), BF16, rng.standard_normal((bsz, s, h, 576)))
    out = aligned((bsz, s, h, 512), BF16)
    out.view(np.uint16)[...] = POISON
    scale = 576 ** -0.5
    qa, oa = (q[:, 0], out[:, 0]) if decode else (q, out)
    fn = mod.mla_decode if decode else mod.verify_splitkv
    res = fn(HostTensor(qa), HostTensor(cache), HostTensor(bt), HostTensor(lengths), scale,
             num_splits=num_splits, out=HostTensor(oa), return_lse=lse, settings=settings)
    totals = np.where(lengths < 0, -1, lengths + (0 if decode else s))
    rows = np.concatenate([cache_rows(cache, fp8), np.zeros((1, ps, 576))])  # + a zero page
    ref_bt = np.where((bt >= 0) & (bt < pages), bt, pages)
    want, want_lse, bound = reference(q, rows, ref_bt, totals, scale)
    got_lse = None
    if lse:
        got_lse = res[1].a if decode else res[1].a
        got_lse = got_lse[:, None] if decode else got_lse
    return out, got_lse, (want, bound), want_lse, lengths


def check(out, got_lse, want, want_lse, lengths, fp8):
    """Rows of real requests within the reference's bf16 rounding (one ulp, and one for the
    fp32 sums) plus the weights' bf16 rounding (2^-9 of sum p |v|, doubled), lse within
    1e-5; padded requests' rows untouched."""
    want, bound = want
    real = lengths >= 0
    got = out[real].astype(np.float64)
    ref = want[real]
    tol = 2 * bf16_ulp(ref.astype(np.float32)) + 2.0 ** -8 * bound[real]
    assert np.all(np.abs(got - ref) <= tol), np.abs(got - ref).max()
    assert np.all(out.view(np.uint16)[~real] == POISON)
    if got_lse is not None:
        np.testing.assert_allclose(got_lse[real], want_lse[real], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("ps", [1, 64, 16])
def test_verify_against_reference(via_interpreter, ps, fp8):
    """K3's 12 heads a rank, S = 4 drafts, ragged prefixes (0, 1, not multiples of the page),
    a padded entry; one split and several (the short requests' later ones empty)."""
    rng = np.random.default_rng(ps + 100 * fp8)
    lengths = [0, 1, 70, -1, 129]
    for num_splits in (1, 5):
        check(*run(rng, bsz=5, s=4, h=12, ps=ps, fp8=fp8, lengths=lengths,
                   num_splits=num_splits), fp8)
    # bf16 pages of 64 rows: the TMA kernel (the default); else the pointer kernel
    name = "mla_attention_fp8" if fp8 else "mla_attention_tma" if ps == 64 else "mla_attention"
    assert [x[0] for x in via_interpreter] == [name, name, "mla_merge"]


@pytest.mark.parametrize("fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("h", [1, 12, 16, 128])
def test_decode_against_reference(via_interpreter, h, fp8):
    """Decode (S = 1, FlashMLA's cache_seqlens: the rows each request sees): a request of 0
    rows writes zeros and lse -inf, one of 1 row its row's latent."""
    rng = np.random.default_rng(h + fp8)
    out, got_lse, want, want_lse, lengths = run(
        rng, bsz=4, s=1, h=h, ps=64, fp8=fp8, lengths=[0, 1, 200, 65], num_splits=3,
        decode=True)
    check(out, got_lse, want, want_lse, lengths, fp8)
    assert np.all(out[0].astype(np.float32) == 0) and np.all(got_lse[0] == -np.inf)


@pytest.mark.parametrize("s", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("h", [12, 128])
def test_verify_draft_counts(via_interpreter, s, h):
    """Every S the ops take (padded to a power of two), with few and many heads: the tile
    shapes of the bundle (the pointer kernel: pages of 16 rows)."""
    if h == 128 and s > 2:
        pytest.skip("covered by the 12-head rows (same code path, the interpreter's time)")
    rng = np.random.default_rng(10 * s + h)
    check(*run(rng, bsz=2, s=s, h=h, ps=16, fp8=False, lengths=[3, 90], num_splits=2), False)
    _, _, constexprs, _ = via_interpreter[0]
    assert (constexprs["S_PAD"], constexprs["BLOCK_H"], constexprs["VPARTS"]) == \
        mod.tile_shape(h, s)


def test_strided_rows_and_no_lse(via_interpreter):
    """Cache rows strided apart (a row a wider buffer's prefix), no lse asked."""
    rng = np.random.default_rng(7)
    out, got_lse, want, want_lse, lengths = run(
        rng, bsz=3, s=2, h=12, ps=16, fp8=True, lengths=[5, 33, 0], num_splits=4, pad=2,
        lse=False)
    check(out, None, want, want_lse, lengths, True)
    assert got_lse is None


def test_split_counts(via_interpreter):
    """One request of 300 rows over 1, 2, 7 and MAX_SPLITS splits (then 10 chunks of 32 rows
    and 246 empty splits, lse -inf, that the merge skips): each within the reference's
    bounds (the split count changes only roundings: each split rounds its weights to bf16
    against its own running maximum). The pointer kernel (pages of 32 rows)."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, mod.MAX_SPLITS):
        check(*run(rng, bsz=1, s=1, h=12, ps=32, fp8=False, lengths=[300], num_splits=n),
              False)
    assert [x[1] for x in via_interpreter[-2:]] == [(mod.MAX_SPLITS, 1, 1), (12, 1, 1)]


def test_num_splits_choice():
    """Enough programs for the GPU when few requests, whole waves, no split below
    min_chunk rows."""
    assert mod.num_splits_for(1, 12, 1, 32768, 132) == 128  # 1 request x 1 head block
    assert mod.num_splits_for(128, 12, 1, 32768, 132) == 2  # 256 programs: one wave
    assert mod.num_splits_for(64, 12, 1, 32768, 132) == 4  # not 5: 1.21 waves
    assert mod.num_splits_for(1, 12, 1, 64, 132) == 1  # a short block table: one split
    assert mod.num_splits_for(1, 128, 1, 1 << 20, 132) == 66  # 2 head blocks x 2 value parts
    assert mod.num_splits_for(1, 1, 1, 1 << 30, 10 ** 4) == mod.MAX_SPLITS
    assert mod.num_splits_for(1, 12, 1, 32768, 132, tma=True) == 128  # 1 program a block
    assert mod.num_splits_for(64, 12, 1, 32768, 132, tma=True) == 4
    assert mod.num_splits_for(64, 128, 1, 32768, 132, tma=True) == 2  # one full wave
    assert mod.num_splits_for(512, 12, 1, 32768, 132) == 1


def test_tile_shapes():
    """16-row tiles (mma.sync) for K3's 12 heads a rank at S = 1; 64-row tiles (a warpgroup's
    8 warps) with two value parts where the rows are more; every shape in the bundle."""
    assert mod.tile_shape(12, 1) == (1, 16, 1)
    assert mod.tile_shape(12, 4) == (4, 16, 2)
    assert mod.tile_shape(128, 1) == (1, 64, 2)
    assert mod.tile_shape(128, 2) == (2, 32, 2)
    assert mod.tile_shape(1, 1) == (1, 16, 1)
    assert mod.tile_shape(1, 8) == (8, 8, 2)
    shapes = {(s.constexprs["S_PAD"], s.constexprs["BLOCK_H"], s.constexprs["VPARTS"])
              for s in mod.AOT_SPECIALIZATIONS if s.kernel is mod.mla_attention_kernel}
    for h in range(1, 200):
        for s in range(1, mod.MAX_S + 1):
            assert mod.tile_shape(h, s) in shapes


# ---------------------------------------------------------------------------
# The TMA kernel (bf16, pages of a multiple of 64 rows): which kernel takes a call, and the
# TMA kernel against the reference
# ---------------------------------------------------------------------------

# The TMA kernel at any query rows (the default leaves 16-row calls to the pointer kernel).
TMA = mod.Settings(tma=True, tma_min_rows=0)
# sm_100a/sm_103a's form; on sm_90a its five rings fit one stage beside q on 8 warps
WIDE = mod.Settings(tma=True, tma_min_rows=0, tma_latent_width=128, tma_stages=1)
BLACKWELL = mod.Settings(tma=True, tma_min_rows=0, tma_blackwell=True)


@pytest.fixture
def recorded(monkeypatch):
    """The wrappers' launches recorded (name), nothing run."""
    names = []
    monkeypatch.setattr(mod.L, "launch", lambda kernel, name, *a, **k: names.append(name))
    monkeypatch.setattr(mod, "_empty", lambda like, shape, dtype: HostTensor(
        aligned(shape, BF16 if dtype == "bfloat16" else np.float32)))
    monkeypatch.setattr(mod.L, "jit_allowed", lambda: True)
    monkeypatch.setattr(mod, "_cache_views", lambda cache, fp8: (cache,) * 3)
    return names


def dispatch(cache, s=1, settings=TMA):
    q = HostTensor(aligned((2, s, 12, 576), BF16, 0))
    bt = HostTensor(aligned((2, 3), np.int32, 0))
    lens = HostTensor(aligned((2,), np.int32, 5))
    mod.verify_splitkv(q, HostTensor(cache), bt, lens, num_splits=1, settings=settings)


@pytest.mark.parametrize("shape, dtype, pad, kernel", [
    ((4, 64, 576), BF16, 0, "mla_attention_tma"),     # K3's pages
    ((4, 128, 576), BF16, 0, "mla_attention_tma"),
    ((1, 64, 576), BF16, 0, "mla_attention_tma"),      # one page (no page stride)
    ((4, 64, 576), BF16, 8, "mla_attention_tma"),      # strided rows, pages contiguous
    ((4, 1, 576), BF16, 0, "mla_attention"),           # page sizes not multiples of 64
    ((4, 16, 576), BF16, 0, "mla_attention"),
    ((4, 96, 576), BF16, 0, "mla_attention"),
    ((4, 64, 656), np.uint8, 0, "mla_attention_fp8"),  # the FP8 cache
])
def test_which_kernel_takes_the_cache(recorded, shape, dtype, pad, kernel):
    width = shape[2] + pad
    cache = aligned(shape[:2] + (width,), dtype, 0)[..., :shape[2]]
    dispatch(cache)
    assert recorded == [kernel]


def test_the_tma_kernel_is_the_default(recorded):
    """Settings.tma on (the default): the TMA kernel where it applies from 32 query rows a
    program (S = 2, 12 heads: 32 rows), the pointer kernel's 16-row tile below (S = 1, 12
    heads); off, the pointer kernel reads every cache."""
    dispatch(aligned((4, 64, 576), BF16, 0), s=2, settings=mod.SETTINGS)
    dispatch(aligned((4, 64, 576), BF16, 0), s=1, settings=mod.SETTINGS)
    dispatch(aligned((4, 64, 576), BF16, 0), s=2, settings=mod.Settings(tma=False))
    assert recorded == ["mla_attention_tma", "mla_attention", "mla_attention"]


def test_pages_apart_take_the_pointer_kernel(recorded):
    """Pages not one after the other (a page stride past page_size rows): no 2-D view of
    rows for TMA, the pointer kernel reads them."""
    dispatch(aligned((4, 65, 576), BF16, 0)[:, :64])
    assert recorded == ["mla_attention"]


def test_the_bundle_takes_the_tma_kernel_too(recorded, monkeypatch):
    """Without JIT (the bundle) the choice is the same: the bundle holds the TMA kernel
    (per arch: ``TMA_BUNDLE_WIDTHS``) and the pointer kernel."""
    monkeypatch.setattr(mod.L, "jit_allowed", lambda: False)
    dispatch(aligned((4, 64, 576), BF16, 0), s=2, settings=mod.SETTINGS)
    dispatch(aligned((4, 64, 576), BF16, 0), s=1, settings=mod.SETTINGS)
    dispatch(aligned((4, 64, 576), BF16, 0), settings=mod.Settings(tma=False))
    assert recorded == ["mla_attention_tma", "mla_attention", "mla_attention"]


@pytest.mark.parametrize("arch, settings, lat_w", [
    ("sm_90a", TMA, 256), ("sm_90a", WIDE, 128), ("sm_100a", TMA, None),
    ("sm_100a", BLACKWELL, 128), ("sm_103a", BLACKWELL, 128)])
def test_the_latent_width_per_arch(monkeypatch, arch, settings, lat_w):
    """sm_90a: ``tma_latent_width``; sm_100a/sm_103a: 128 with ``tma_blackwell``, else the
    pointer kernel. The bundle's TMA specializations: each arch's default width, limited to
    its archs, at every tile shape the defaults send to the TMA kernel."""
    monkeypatch.setattr(mod, "_device_arch", lambda t: arch)
    cache = HostTensor(aligned((4, 64, 576), BF16, 0))
    got = mod._use_tma(HostTensor(aligned((1, 12, 576), BF16, 0)), cache, False, 4, 64, 12, 1,
                       settings)
    assert got == (None if lat_w is None else (576, lat_w))
    specs = [s for s in mod.AOT_SPECIALIZATIONS if s.kernel is mod.mla_attention_tma_kernel]
    assert {(s.archs, s.constexprs["LAT_W"]) for s in specs} == {
        (("sm_90a",), 256), (("sm_100a", "sm_103a"), 128)}
    assert len(specs) == 2 * len(mod.TMA_SHAPES)
    for h in range(1, 200):
        for s in range(1, mod.MAX_S + 1):
            if not mod.tma_rows(h, s):
                continue  # one 16-row tile: the pointer kernel's
            for archs, w in mod.TMA_BUNDLE_WIDTHS:
                name, cx, warps = mod.tma_launch_config(h, s, w)
                assert any(sp.constexprs == cx and sp.archs == archs and sp.num_warps == warps
                           for sp in specs), (h, s, archs)


@pytest.mark.parametrize("settings", [TMA, WIDE], ids=["lat256", "lat128"])
@pytest.mark.parametrize("n_splits", [1, 3])
@pytest.mark.parametrize("h", [12, 16])
def test_tma_decode(via_interpreter, h, n_splits, settings):
    """Decode, ragged lengths 0, 1, 70, 129 (non-multiples of the page and of the key
    block) and a padded entry; one split (the kernel writes the output) and three (the
    merge); both latent box widths."""
    rng = np.random.default_rng(h + 7 * n_splits + settings.tma_latent_width)
    for lengths in ([70, 0], [129, -1, 1]):
        out, got_lse, want, want_lse, lens = run(
            rng, bsz=len(lengths), s=1, h=h, ps=64, fp8=False, lengths=lengths,
            num_splits=n_splits, decode=True, settings=settings)
        check(out, got_lse, want, want_lse, lens, False)
        for b in np.flatnonzero(lens.astype(np.int64) == 0):
            assert np.all(out[b].astype(np.float32) == 0) and np.all(got_lse[b] == -np.inf)
    names = [x[0] for x in via_interpreter]
    assert set(names) <= {"mla_attention_tma", "mla_merge"}
    assert names.count("mla_merge") == (2 if n_splits > 1 else 0)
    assert via_interpreter[0][2]["LAT_W"] == settings.tma_latent_width


@pytest.mark.parametrize("s", [2, 4, 8])
def test_tma_verify_drafts(via_interpreter, s):
    """S drafts, the causal rule over them (draft j sees the rows n <= lengths + j), prefixes
    0 and not multiples of the page; S = 8: drafts of 8 heads."""
    rng = np.random.default_rng(s)
    check(*run(rng, bsz=2, s=s, h=12, ps=64, fp8=False, lengths=[0, 97], num_splits=2,
               settings=TMA),
          False)
    check(*run(rng, bsz=2, s=s, h=12, ps=64, fp8=False, lengths=[64 - s, 33], num_splits=1,
               settings=TMA),
          False)
    s_pad, block_h, _ = mod.tile_shape(12, s)
    assert {k: via_interpreter[0][2][k] for k in ("S_PAD", "BLOCK_H")} == {
        "S_PAD": s_pad, "BLOCK_H": block_h}


def test_tma_two_head_blocks_and_long_pages(via_interpreter):
    """H = 128 (two head blocks of 64 rows, a program each); pages of 128 rows."""
    rng = np.random.default_rng(5)
    check(*run(rng, bsz=2, s=1, h=128, ps=64, fp8=False, lengths=[40, 100], num_splits=2,
               settings=TMA),
          False)
    assert via_interpreter[0][1] == (2, 2, 2)
    check(*run(rng, bsz=2, s=2, h=12, ps=128, fp8=False, lengths=[130, 5], num_splits=2,
               settings=TMA),
          False)


def test_tma_bad_table_entries_read_zero_rows(via_interpreter):
    """A block table entry past the cache's pages (or one whose row would overflow 32 bits)
    reads zero rows (TMA's out-of-bounds fill), as the pointer kernel's masks do."""
    rng = np.random.default_rng(11)
    check(*run(rng, bsz=3, s=1, h=12, ps=64, fp8=False, lengths=[90, 70, 3], num_splits=1,
               decode=True, bad_pages=[(0, 1000), (1, 1 << 30)], settings=TMA), False)
    assert via_interpreter[0][0] == "mla_attention_tma"


@pytest.mark.parametrize("length", [10, 32, 50, 64])
def test_tma_never_reads_past_the_length(via_interpreter, length):
    """NaN in every row of a request's pages past its length: the TMA kernel reads its
    whole blocks through TMA and the last partial one through masked pointer loads, so no
    NaN reaches a dot and the output is the mean of the rows before (all 0.5), in one
    split and in several."""
    q = aligned((1, 1, 12, 576), BF16, 1.0)
    bt = aligned((1, 2), np.int32, [1, 0])
    lens = aligned((1,), np.int32, length)
    cache = aligned((2, 64, 576), BF16, 0.5)
    cache[1, min(length, 64):] = np.nan
    cache[0, max(0, length - 64):] = np.nan
    for splits in (1, 3):
        out = aligned((1, 1, 12, 512), BF16, 0)
        mod.mla_decode(HostTensor(q[:, 0]), HostTensor(cache), HostTensor(bt),
                       HostTensor(lens), num_splits=splits, out=HostTensor(out[:, 0]),
                       settings=TMA)
        assert via_interpreter[-1 if splits == 1 else -2][0] == "mla_attention_tma"
        assert np.all(out.astype(np.float32) == 0.5), (length, splits)


@pytest.mark.parametrize("arch, lat_w", [("sm_90a", 256), ("sm_90a", 128), ("sm_100a", 128),
                                         ("sm_103a", 128)])
@pytest.mark.parametrize("h, s", [(12, 1), (128, 1), (12, 4)])
def test_tma_kernel_compiles(arch, lat_w, h, s):
    """The TMA kernel's JIT shapes compile and assemble, its dots as ``check_tma_dots``
    says; the registers of its two warpgroups within the SM's file. (Spills: 1.6-2.2 KiB on
    sm_90a, 2.6-2.7 KiB on sm_100a/sm_103a; the GPU session measures them.)"""
    pytest.importorskip("kiln._C")
    name, constexprs, warps = mod.tma_launch_config(h, s, lat_w,
                                                    WIDE if arch == "sm_90a" and lat_w == 128
                                                    else mod.SETTINGS)
    ck = mod.mla_attention_tma_kernel.compile(mod.tma_signature(lat_w), constexprs,
                                              mod.TMA_ALIGNED, num_warps=warps, arch=arch,
                                              name=name)
    assert ck.cubin[:4] == b"\x7fELF"
    target = ck.meta["targets"][arch]
    assert ck.meta["pdl"] and "tma" in ck.meta["features"]
    assert target["registers"] * 32 * warps <= 65536
    if (arch, lat_w) == ("sm_90a", 128):  # one stage: no ring, its dots staged or mma.sync
        assert all(d["unit"] != "mma.sync" or d["reason"] for d in target["dots"])
    else:
        check_tma_dots(target["dots"], arch, lat_w)


def check_tma_dots(dots, arch, lat_w):
    """The ring loop's dots (5 at LAT_W 256, 9 at 128: the score's latent boxes and rope,
    a value dot a latent box): on sm_90a wgmma (B in place from the ring, each warpgroup
    its columns); then the last partial block's 9 dots from registers (the rope, four
    128-column latent pieces, four value quarters): on sm_90a the five [64, 64] score dots
    on mma.sync (two warpgroups would take 32 columns each, below the staged form's 64),
    the value dots wgmma with staged operands; on sm_100a/sm_103a all on mma.sync with its
    reason."""
    ring = 5 if lat_w == 256 else 9
    assert len(dots) == ring + 9, dots
    for i, d in enumerate(dots):
        if arch == "sm_90a" and i < ring:
            assert d["unit"] == "wgmma", d
        elif arch == "sm_90a" and i >= ring + 5:
            assert d["unit"] == "wgmma staged", d
        else:
            assert d["unit"] == "mma.sync" and d["reason"], d


# ---------------------------------------------------------------------------
# Bad input: rejected before any launch
# ---------------------------------------------------------------------------

F = functools.partial(FakeCudaTensor, device="cuda:0")


@pytest.fixture
def no_launch(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the wrapper launched before rejecting")

    monkeypatch.setattr(mod.L, "launch", boom)
    monkeypatch.setattr(mod, "_empty", lambda like, shape, dtype: F(shape, dtype))


def args(**changes):
    a = dict(q=F((4, 2, 12, 576)), cache=F((10, 64, 576)), block_table=F((4, 3), "int32"),
             lengths=F((4,), "int32"))
    a.update(changes)
    return a


@pytest.mark.parametrize("change, error, match", [
    (dict(q=F((4, 2, 12, 576), "float32")), TypeError, "q must be bfloat16"),
    (dict(q=F((4, 2, 12, 512))), ValueError, r"q must have shape \[\*, \*, \*, 576\]"),
    (dict(q=F((4, 9, 12, 576))), ValueError, r"S .* must be in \[1, 8\]"),
    (dict(q=F((4, 2, 12, 576), strides=(13824, 6912, 580, 1))), ValueError,
     "multiple of 8 elements"),
    (dict(cache=F((10, 64, 576), "float32")), TypeError, "cache must be bfloat16 or uint8"),
    (dict(cache=F((10, 64, 656))), ValueError, r"cache must have shape \[\*, \*, 576\]"),
    (dict(cache=F((10, 64, 576), "uint8")), ValueError, r"cache must have shape \[\*, \*, 656\]"),
    (dict(cache=F((10, 64, 656), "uint8", strides=(64 * 660, 660, 1))), ValueError,
     "row stride .* multiple of 16 bytes"),
    (dict(block_table=F((4, 3), "int64")), TypeError, "block_table must be int32"),
    (dict(block_table=F((3, 3), "int32")), ValueError, r"block_table must have shape \[4, \*\]"),
    (dict(lengths=F((5,), "int32")), ValueError, r"lengths must have shape \[4\]"),
    (dict(lengths=F((4,), "int32", strides=(2,))), ValueError, "lengths must be contiguous"),
    (dict(scale=0.0), ValueError, "scale must be a finite positive float"),
    (dict(scale=float("nan")), ValueError, "scale must be a finite positive float"),
    (dict(num_splits=0), ValueError, r"num_splits must be an int in \[1, 256\]"),
    (dict(num_splits=300), ValueError, r"num_splits must be an int in \[1, 256\]"),
    (dict(out=F((4, 2, 12, 576))), ValueError, r"out must have shape \[4, 2, 12, 512\]"),
    (dict(out=F((4, 2, 12, 512), address=0x7F0000000008)), ValueError,
     "out must be 16-byte aligned"),
    (dict(q=F((4, 2, 12, 576), device="cuda:1")), ValueError, "one device"),
])
def test_verify_argument_checks(no_launch, change, error, match):
    with pytest.raises(error, match=match):
        mod.verify_splitkv(**args(**change))


def test_decode_argument_checks(no_launch):
    base = dict(q=F((4, 12, 576)), cache=F((10, 64, 576)), block_table=F((4, 3), "int32"),
                cache_seqlens=F((4,), "int32"))
    with pytest.raises(ValueError, match=r"q must have shape \[\*, \*, 576\]"):
        mod.mla_decode(**dict(base, q=F((4, 1, 12, 576))))
    with pytest.raises(TypeError, match="cache_seqlens must be int32"):
        mod.mla_decode(**dict(base, cache_seqlens=F((4,), "int64")))


def test_empty_batch_launches_nothing(no_launch):
    out = mod.verify_splitkv(**args(q=F((0, 2, 12, 576)), block_table=F((0, 3), "int32"),
                                    lengths=F((0,), "int32")))
    assert out.shape == (0, 2, 12, 512)


# ---------------------------------------------------------------------------
# Compilation: every specialization, three archs
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("spec, arch", [(s, a) for s in mod.AOT_SPECIALIZATIONS
                                         for a in s.archs_in(ARCHS)],
                         ids=lambda x: x if isinstance(x, str) else
                         f"{x.kernel_name}-{sorted(x.constexprs.items())}")
def test_compiles(spec, arch):
    """A cubin for each arch of the spec (the TMA kernel's: LAT_W 256 on sm_90a only, 128
    on sm_100a/sm_103a only), PDL's wait before the first global load, the registers of
    the program's warps within the SM's file; the pointer kernel's score and value dots on
    the tensor cores (mma.sync, each with its reason: wgmma takes 64 rows a warpgroup,
    tcgen05 128), the TMA kernel's as ``test_tma_kernel_compiles`` says."""
    pytest.importorskip("kiln._C")
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name)
    assert ck.cubin[:4] == b"\x7fELF"
    target = ck.meta["targets"][arch]
    assert ck.meta["pdl"] and ck.ptx.index("griddepcontrol.wait;") < ck.ptx.index("ld.global")
    assert target["registers"] * 32 * spec.num_warps <= 65536
    if spec.kernel is mod.mla_attention_kernel:
        dots = target["dots"]
        assert len(dots) == 5 + 4 // spec.constexprs["VPARTS"]  # 5 score dots, the values'
        for d in dots:
            assert d["unit"] == "mma.sync" and d["reason"], d
    if spec.kernel is mod.mla_attention_tma_kernel:
        assert (arch == "sm_90a") == (spec.constexprs["LAT_W"] == 256)
        check_tma_dots(target["dots"], arch, spec.constexprs["LAT_W"])
