"""kv_indices (docs/kernels/mla_cache.md) and moe_align_single_token (docs/kernels/moe_routing.md)
on the CPU: every AOT specialization compiles to PTX and a cubin for sm_90a, sm_100a and
sm_103a, and the kernels run in the interpreter (launched as their wrappers launch them, the
fast and the generic kernel) against numpy references written from those pages. Outputs are
poisoned first so that every element the kernel must write is checked and everything it must
not touch is checked unchanged. No GPU, no torch."""

import numpy as np
import pytest

from kernels_dsl import kimi_k3
from kernels_dsl.kimi_k3 import kv_indices as kvi
from kernels_dsl.kimi_k3 import moe_align
from kiln.testing import interpret

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
POISON = 0x7EADBEEF


def specs():
    return list(kvi.AOT_SPECIALIZATIONS) + list(moe_align.AOT_SPECIALIZATIONS)


def test_modules_listed():
    assert "kv_indices" in kimi_k3.MODULES and "moe_align" in kimi_k3.MODULES


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("spec", specs(), ids=lambda s: f"{s.kernel_name}-"
                         + "-".join(f"{k}{v}" for k, v in s.constexprs.items()))
def test_compiles_to_ptx_and_cubin(spec, arch):
    pytest.importorskip("kiln._C")
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name)
    assert f".target {arch}" in ck.ptx
    assert f".visible .entry {spec.kernel_name}(" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------
# kv_indices
# ---------------------------------------------------------------------------

def ref_kv_indices(r2t, req, lens, out, start, v2p, page, mult):
    """docs/kernels/mla_cache.md; padded entries (token < 0, offset past the row, v2p < 0)
    give -1."""
    out = out.copy()
    max_ctx = r2t.shape[1]
    for b in range(len(req)):
        n = int(lens[b])
        s = 0 if start is None else int(start[b])
        pages = min(-(-max(n, 0) // page), out.shape[1])
        for p in range(pages):
            off = s + p * page
            tok = int(r2t[int(req[b]), off]) if 0 <= off < max_ctx else -1
            if tok < 0:
                out[b, p] = -1
                continue
            vpage = tok // page
            if v2p is None:
                ppage = vpage
            else:
                ppage = int(v2p[vpage]) if vpage < len(v2p) else -1
            out[b, p] = -1 if ppage < 0 else ppage * mult
    return out


def run_kv_indices(r2t, req, lens, out, start, v2p, page, mult, block=kvi.SETTINGS.block,
                   generic=False):
    """As the wrapper launches it (dummy pointers for the absent optional arguments); with
    ``generic`` the bundle's generic kernel (the page size, multiplier and kv_start_idx flag
    as runtime values)."""
    args = (r2t, req, lens, start if start is not None else lens,
            v2p if v2p is not None else np.zeros(1, np.int64), out, r2t.strides[0] // 4,
            r2t.shape[1], out.strides[0] // 4, out.shape[1], 0 if v2p is None else len(v2p))
    if generic:
        interpret(kvi.kv_indices_generic_kernel, (len(req),), *args, page, mult,
                  int(start is not None), HAS_V2P=v2p is not None, BLOCK=block)
    else:
        interpret(kvi.kv_indices_kernel, (len(req),), *args, PAGE=page, PAGE_MULT=mult,
                  HAS_START=start is not None, HAS_V2P=v2p is not None, BLOCK=block)


#: (BLOCK, page size, the generic kernel): the fast kernel's two BLOCKs at K3's page; the
#: generic kernel (the many-requests BLOCK) at K3's page and others
KERNELS = [(kvi.SETTINGS.block, 64, False), (kvi.SETTINGS.few_block, 64, False),
           (kvi.SETTINGS.block, 64, True), (kvi.SETTINGS.block, 1, True),
           (kvi.SETTINGS.block, 16, True), (kvi.SETTINGS.block, 128, True)]


@pytest.mark.parametrize("block,page,generic", KERNELS)
@pytest.mark.parametrize("mult", [1, 3, 24])
@pytest.mark.parametrize("use_v2p", [False, True])
@pytest.mark.parametrize("use_start", [False, True])
@pytest.mark.parametrize("req_dtype", [np.int32, np.int64])
def test_kv_indices(mult, use_v2p, use_start, req_dtype, block, page, generic):
    rng = np.random.default_rng(mult + 2 * use_v2p + 4 * use_start + 8 * (req_dtype == np.int64))
    max_reqs, max_ctx = 9, 64 * 300
    num_pages = max(2000, max_ctx // page)
    # req_to_token: each request's tokens are contiguous runs within random pages
    r2t = np.full((max_reqs, max_ctx), -1, np.int32)
    for r in range(max_reqs):
        n_pg = max_ctx // page
        pg = rng.choice(num_pages, size=n_pg, replace=False)
        r2t[r] = (pg[:, None] * page + np.arange(page)[None, :]).reshape(-1)
    r2t[3, 5 * page:] = -1  # padded slots of request 3 pass through as -1
    # ragged lengths: 0, 1, exactly a page, page+1, > BLOCK pages (the loop), len past the row
    lens = np.array([0, 1, page, page + 1, 200 * page + 7, 130 * page, 3, 257 * page - 1],
                    np.int32)
    bs = len(lens)
    req = rng.permutation(max_reqs)[:bs].astype(req_dtype)
    req[4] = 3
    start = rng.integers(0, 40 * page, size=bs).astype(np.int32) if use_start else None
    v2p = None
    if use_v2p:
        v2p = rng.permutation(num_pages + 1).astype(np.int64)
        v2p[rng.choice(num_pages + 1, 20, replace=False)] = -1  # unmapped pages
    max_blocks = 260
    out_buf = np.full((bs, max_blocks + 5), POISON, np.int32)
    out = out_buf[:, :max_blocks]
    expected = ref_kv_indices(r2t, req, lens, out, start, v2p, page, mult)
    run_kv_indices(r2t, req, lens, out, start, v2p, page, mult, block, generic)
    np.testing.assert_array_equal(out, expected)
    assert np.all(out_buf[:, max_blocks:] == POISON)
    # entries past ceil(len / PAGE) untouched
    for b in range(bs):
        assert np.all(out[b, -(-int(lens[b]) // page):] == POISON)


def test_kv_indices_block_by_batch():
    """few_block pages a loop iteration where the requests fit one program an SM (with an SM
    count), block above and without one; one AOT specialization of each."""
    st = kvi.SETTINGS
    assert st.few_block > st.block
    assert kvi.block_config(1, 132) == kvi.block_config(132, 132) == (st.few_block,
                                                                       st.few_num_warps)
    assert kvi.block_config(133, 132) == kvi.block_config(1, None) == (st.block, st.num_warps)
    specs = [s for s in kvi.AOT_SPECIALIZATIONS if s.kernel is kvi.kv_indices_kernel]
    assert len(specs) == 16 and {s.kernel_name for s in specs} == {
        "kv_indices", "kv_indices_req32", f"kv_indices_b{st.few_block}",
        f"kv_indices_req32_b{st.few_block}"}
    for s in specs:
        few = s.kernel_name.endswith(f"_b{st.few_block}")
        assert s.constexprs["BLOCK"] == (st.few_block if few else st.block)
        assert s.num_warps == (st.few_num_warps if few else st.num_warps)


def test_kv_indices_defaults_reproduce_static_pool():
    # v2p None, PAGE_MULT 1: kv_indices[b, p] = req_to_token[req, p * 64] // 64
    r2t = (np.arange(3 * 512, dtype=np.int32).reshape(3, 512) + 64 * 7)
    req = np.array([1, 2], np.int64)
    lens = np.array([512, 100], np.int32)
    out = np.full((2, 8), POISON, np.int32)
    run_kv_indices(r2t, req, lens, out, None, None, 64, 1)
    assert out[0].tolist() == [(512 + 64 * 7 + 64 * p) // 64 for p in range(8)]
    assert out[1].tolist() == [(1024 + 448) // 64, (1024 + 448 + 64) // 64] + [POISON] * 6
    # a length past the row: the pages beyond max_ctx pass through as -1, nothing is read
    # outside req_to_token, and max_blocks caps the pages written
    out = np.full((2, 10), POISON, np.int32)
    lens = np.array([64 * 12, 0], np.int32)
    run_kv_indices(r2t, req, lens, out, np.array([64, 0], np.int32), None, 64, 24)
    assert out[0].tolist() == [(512 + 448 + 64 * (p + 1)) // 64 * 24 for p in range(7)] + [-1] * 3
    assert np.all(out[1] == POISON)


# ---------------------------------------------------------------------------
# moe_align_single_token
# ---------------------------------------------------------------------------

def ref_align(ids, block):
    """docs/kernels/moe_routing.md, written as moe_align_block_size for M == 1: each valid
    expert gets one padded block holding its one pair index, experts ascending, invalid ids
    dropped."""
    topk = ids.shape[1]
    lanes = [i for i in range(topk) if ids[0, i] >= 0]
    lanes.sort(key=lambda i: (int(ids[0, i]), i))
    sorted_ids = np.full(topk * block, topk, np.int32)
    expert_ids = np.full(topk, -1, np.int32)
    for r, i in enumerate(lanes):
        expert_ids[r] = ids[0, i]
        sorted_ids[r * block] = i
    return sorted_ids, expert_ids, np.array([len(lanes) * block], np.int32)


def run_align(ids, block, generic=False):
    """The fast kernel, or with ``generic`` the bundle's generic one (topk and block_size as
    runtime values)."""
    topk = ids.shape[1]
    pad = 9
    s = np.full(topk * block + pad, POISON, np.int32)
    e = np.full(topk + pad, POISON, np.int32)
    p = np.full(1 + pad, POISON, np.int32)
    if generic:
        interpret(moe_align.moe_align_single_token_generic_kernel, (1,), ids, s, e, p, topk,
                  block, COLS=moe_align.GENERIC_COLS)
    else:
        interpret(moe_align.moe_align_single_token_kernel, (1,), ids, s, e, p, TOPK=topk,
                  BLOCK=block)
    for a in (s, e, p):
        assert np.all(a[-pad:] == POISON)
    return s[:-pad], e[:-pad], p[:-pad]


@pytest.mark.parametrize("block,generic", [(16, False), (64, False), (1, True), (16, True),
                                           (64, True), (256, True)])
@pytest.mark.parametrize("topk", [1, 2, 3, 5, 8, 13, 16, 17, 31, 32])
@pytest.mark.parametrize("n_invalid", [0, 1, "all"])
def test_moe_align_single_token(topk, block, n_invalid, generic):
    rng = np.random.default_rng(topk * 100 + block + (7 if n_invalid == "all" else n_invalid))
    ids = rng.choice(384, size=topk, replace=False).astype(np.int32)[None, :]
    k = topk if n_invalid == "all" else min(n_invalid, topk)
    ids[0, rng.choice(topk, size=k, replace=False)] = -1
    got = run_align(ids, block, generic)
    for g, w in zip(got, ref_align(ids, block)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("generic", [False, True])
def test_moe_align_ties_and_extremes(generic):
    # duplicate ids (not expected, but ordered by lane index), id 0, a large id, -1 and
    # another negative
    ids = np.array([[7, 0, -1, 7, 2147483646, -5, 3]], np.int32)
    s, e, p = run_align(ids, 16, generic)
    assert e.tolist() == [0, 3, 7, 7, 2147483646, -1, -1]
    assert s.reshape(7, 16)[:, 0].tolist() == [1, 6, 0, 3, 4, 7, 7]
    assert np.all(s.reshape(7, 16)[:, 1:] == 7)
    assert p.tolist() == [5 * 16]
