"""The Kimi K3 FP8/FP4 quantization kernels in the CPU interpreter against numpy references
written from docs/kernels (quant.md: per-token-group quant and MXFP4; situ.md: SiTU masked
post-quant; mla_output_gate.md: the FP8 output gate; mla_cache.md: the FP8 KV scatter), with
ml_dtypes' float8_e4m3fn after clamping to +-448 (the kernels saturate) and float4_e2m1fn. The
interpreter computes precisely, so everything here is exact; the GPU tests
(test/gpu/test_fp8_quant.py) cover the approximate SiTU math. No GPU, no torch."""

import os

import ml_dtypes
import numpy as np
import pytest

import kiln.testing
from kernels_dsl.kimi_k3 import mla_kv, mla_output_gate, quant, situ_quant

BF16, F8 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn
F32 = np.float32


# ---------------------------------------------------------------------------
# References (docs/kernels)
# ---------------------------------------------------------------------------

def ref_scale(absmax, ue8m0=False):
    """max(absmax, 1e-10) / 448 in fp32 (IEEE division); UE8M0: 2 ** ceil(log2(s)) exactly,
    from s = m * 2^e with m in [0.5, 1) (m = 0.5: s is 2^(e-1) already)."""
    s = np.maximum(absmax.astype(F32), F32(1e-10)) / F32(448)
    if ue8m0:
        m, e = np.frexp(s)
        s = np.ldexp(F32(1), np.where(m == 0.5, e - 1, e)).astype(F32)
    return s


def ref_fp8(v):
    return np.clip(v.astype(F32), -448, 448).astype(F8)


def ref_group_quant(x, group, ue8m0=False):
    """x f32 [..., D] -> (q e4m3 [..., D], s f32 [..., D/group])."""
    xg = x.reshape(*x.shape[:-1], -1, group)
    s = ref_scale(np.abs(xg).max(-1), ue8m0)
    return ref_fp8(xg / s[..., None]).reshape(x.shape), s


def ref_situ(x, n, interleaved=False, beta=4.0, lin=25.0):
    if interleaved:
        c = x.reshape(*x.shape[:-1], -1, 2, 8)
        g, u = c[..., 0, :].reshape(*x.shape[:-1], n), c[..., 1, :].reshape(*x.shape[:-1], n)
    else:
        g, u = x[..., :n], x[..., n:]
    g, u = g.astype(F32), u.astype(F32)
    sig = F32(1) / (F32(1) + np.exp(-g))
    gate = F32(beta) * np.tanh(g * F32(1 / beta)) * sig
    return gate * (F32(lin) * np.tanh(u * F32(1 / lin)))


def bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def k3_like_rows(rng, t, d, scale=3.0):
    """Random rows plus a zero row, a row of one repeated value and a large-magnitude row."""
    x = (rng.standard_normal((t, d)) * scale).astype(F32)
    if t > 1:
        x[1] = 0
    if t > 2:
        x[2] = -5.25
    if t > 3:
        x[3] *= 1e30
    if t > 4:
        x[4, ::7] = 3e38  # near bf16's max: scales near 7e35
    return x.astype(BF16)


# ---------------------------------------------------------------------------
# per_token_group_quant_fp8
# ---------------------------------------------------------------------------

def run_group_quant(x, group, ue8m0, column_major, x_stride=None):
    t, d = x.shape
    ng = d // group
    q = np.zeros((t, d), dtype=F8)
    s_store = np.full((ng, t) if column_major else (t, ng), np.nan, dtype=F32)
    st, sg = (1, t) if column_major else (ng, 1)
    cx, _ = quant.group_launch_config(group, ue8m0)
    kiln.testing.interpret(quant.per_token_group_quant_fp8_kernel, (t, -(-ng // cx["ROWS"])),
                           x, q, s_store, t * ng, ng, x_stride or d, d, st, sg, **cx)
    return q, (s_store.T if column_major else s_store)


@pytest.mark.parametrize("t", [1, 5, 9])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("column_major", [False, True])
def test_per_token_group_quant_matches_numpy(t, ue8m0, column_major):
    rng = np.random.default_rng(t)
    x = k3_like_rows(rng, t, 384)
    q, s = run_group_quant(x, 128, ue8m0, column_major)
    rq, rs = ref_group_quant(x.astype(F32), 128, ue8m0)
    assert np.array_equal(s, rs)
    assert np.array_equal(bits(q), bits(rq))
    if ue8m0:
        m, _ = np.frexp(s)
        assert np.all(m == 0.5)  # powers of two


@pytest.mark.parametrize("group", [32, 64, 256])
def test_per_token_group_quant_other_groups_and_strided_rows(group):
    rng = np.random.default_rng(group)
    t, d = 7, 512
    base = k3_like_rows(rng, t, d + 64)
    x = base[:, :d]  # row stride d + 64
    q, s = run_group_quant(x, group, False, False, x_stride=d + 64)
    rq, rs = ref_group_quant(x.astype(F32), group)
    assert np.array_equal(s, rs) and np.array_equal(bits(q), bits(rq))


def test_ue8m0_rounds_up_exactly_at_powers_of_two():
    # absmax = 448 * 2^k gives s = 2^k exactly (kept); one ulp above rounds up to 2^(k+1)
    t, d = 4, 128
    x = np.zeros((t, d), dtype=F32)
    x[0, 0] = 448.0        # s = 1
    x[1, 0] = 448.0 * 2.0**-20
    x[2, 5] = np.nextafter(F32(448.0), F32(1e9))  # not representable in bf16: rounds to 448
    x[3, 9] = 450.0        # the next bf16 above 448: s just above 1 rounds up to 2
    x = x.astype(BF16)
    _, s = run_group_quant(x, 128, True, False)
    assert s[:, 0].tolist() == [1.0, 2.0**-20, 1.0, 2.0]


def generic_launches(monkeypatch):
    """The wrappers' launches run their generic launch (the bundle's kernel for the inputs
    the fast specializations do not assume) in the interpreter, arrays given as
    test_attn_res's HostTensor; returns the kernel names launched."""
    from test_attn_res import HostTensor

    names = []

    def launch(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, cluster=None,
               generic=None):
        kernel, name, grid, args, constexprs = generic[:5]
        names.append(name)
        kiln.testing.interpret(kernel, tuple(grid), *[a.a if isinstance(a, HostTensor) else a
                                                      for a in args], **constexprs)

    monkeypatch.setattr(quant.L, "launch", launch)
    return HostTensor, names


@pytest.mark.parametrize("group", quant.GROUPS)
@pytest.mark.parametrize("ue8m0", [False, True])
def test_per_token_group_quant_generic_launch(monkeypatch, group, ue8m0):
    """The wrapper's generic launch (every group size; here x's row stride d + 8, a
    multiple of 8 elements and not of 16) against the reference."""
    host, names = generic_launches(monkeypatch)
    rng = np.random.default_rng(group + ue8m0)
    t, d = 5, 512
    x = k3_like_rows(rng, t, d + 8)[:, :d]
    q = np.zeros((t, d), dtype=F8)
    s = np.full((t, d // group), np.nan, dtype=F32)
    quant.per_token_group_quant_fp8(host(x), group, ue8m0, q=host(q), s=host(s))
    assert names == [quant.GENERIC]
    rq, rs = ref_group_quant(x.astype(F32), group, ue8m0)
    assert np.array_equal(s, rs) and np.array_equal(bits(q), bits(rq))


# ---------------------------------------------------------------------------
# SiTU masked post-quant
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [8, 4, 16])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("interleaved", [False, True])
def test_situ_masked_post_quant_matches_numpy(ue8m0, interleaved, rows):
    """ROWS groups a program (a partial program at 4 groups a token for 8 and 16); the
    division-free fp32 quotients at the e4m3 boundaries:
    test_situ_recip_quotients_at_e4m3_boundaries."""
    rng = np.random.default_rng(7)
    e, t_pad, n = 3, 5, 512
    g = n // 128
    x = (rng.standard_normal((e, t_pad, 2 * n)) * 4).astype(BF16)
    x[1, 0] = 0  # a zero row
    x[0, 1, :64] = -0.0  # gates of -0: activations of -0 and +0 (e4m3 0x80 and 0x00)
    masked_m = np.array([5, 0, 2], dtype=np.int32)
    poison_q = np.full((e, t_pad, n), 0x5A, dtype=np.uint8).view(F8)
    q = poison_q.copy()
    if ue8m0:
        s = np.full((e, g // 4, t_pad), 0x7E7E7E7E, dtype=np.int32)
        s_arg, s_se, s_st = s.view(np.uint8), g * t_pad, 0
    else:
        s = np.full((e, t_pad, g), -1.0, dtype=F32)
        s_arg, s_se, s_st = s, t_pad * g, g
    kiln.testing.interpret(situ_quant.situ_and_mul_masked_post_quant_kernel,
                           (t_pad, -(-g // rows), e), x, masked_m, q, s_arg, t_pad, n, g,
                           t_pad * 2 * n, 2 * n, t_pad * n, n, s_se, s_st, 4.0, 0.25, 25.0,
                           1 / 25.0, GROUP=128, ROWS=rows, UE8M0=ue8m0, INTERLEAVED=interleaved)
    a = ref_situ(x, n, interleaved)
    rq, rs = ref_group_quant(a, 128, ue8m0)
    for ei in range(e):
        m = masked_m[ei]
        assert np.array_equal(bits(q[ei, :m]), bits(rq[ei, :m]))
        assert np.array_equal(bits(q[ei, m:]), bits(poison_q[ei, m:]))  # untouched
        if ue8m0:
            exps = s[ei].view(np.uint8).reshape(g // 4, t_pad, 4)  # [k//4, t, k%4]
            got = exps.transpose(1, 0, 2).reshape(t_pad, g)
            want = (rs[ei].view(np.int32) >> 23).astype(np.uint8)
            assert np.array_equal(got[:m], want[:m])
            assert np.all(got[m:] == 0x7E)
        else:
            assert np.array_equal(s[ei, :m], rs[ei, :m])
            assert np.all(s[ei, m:] == -1.0)


# ---------------------------------------------------------------------------
# MLA output gate, FP8 variant
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("chunks,h", [(3, 1536), (3, 1400), (1, 1536), (1, 1400), (1, 8)])
def test_mla_output_gate_fp8_matches_numpy(chunks, h):
    """One tile (CHUNKS 1) or three (K3's 1536 = 3 x 512; 1400: the third one partial); the
    sigmoid's reciprocal without a division where the row's gates are >= -87 (rows 1 to 3
    here; row 0 has gates down to -100 and goes the IEEE way; row 1 holds 2^-23, whose
    1 + expf(-g) = 2 - 2^-23 is the mantissa one Markstein step can misround)."""
    rng = np.random.default_rng(3)
    t = 4
    x = k3_like_rows(rng, t, h)
    gate = (rng.standard_normal((t, h)) * 4).astype(BF16)
    gate[0, :5] = [-100.0, -88.5, -87.5, 90.0, -0.0]  # sigmoid 0, subnormal, 1, 0.5
    x[0, :6] = [-2.0, 3.0, -3.0, 1.0, -1.0, -0.0]  # y = -0 (underflow and -0 * 0.5)
    gate[1, :4] = [-87.0, 2.0**-23, np.inf, 60.0]
    q = np.zeros((t, h), dtype=F8)
    s = np.zeros(t, dtype=F32)
    block = 1 << (h - 1).bit_length() if chunks < 3 else 1 << (-(-h // 3) - 1).bit_length()
    kiln.testing.interpret(mla_output_gate.mla_output_gate_fp8_kernel, (t,), x, gate, q, s, h, h,
                           h, h, BLOCK=block, CHUNKS=chunks)
    rq, rs = ref_gate_fp8(x, gate)
    assert np.array_equal(s, rs)
    assert np.array_equal(bits(q), bits(rq))


@pytest.mark.parametrize("h", [8, 24, 1400, 2056, 3000])
def test_mla_output_gate_fp8_generic_launch(monkeypatch, h):
    """The wrapper's generic launch (``mla_output_gate_fp8_generic_kernel``: H at run time,
    the row in tiles of FP8_GENERIC_BLOCK, the last one partial past 1024) on rows strided
    by h + 8, gates below -87 in row 0 (where the fast kernel goes the IEEE way too)."""
    host, names = generic_launches(monkeypatch)
    rng = np.random.default_rng(h)
    t = 4
    x = k3_like_rows(rng, t, h + 8)[:, :h]
    gate = (rng.standard_normal((t, h + 8)) * 4).astype(BF16)[:, :h]
    gate[0, :5] = [-100.0, -88.5, -87.5, 90.0, -0.0]
    x[0, :6] = [-2.0, 3.0, -3.0, 1.0, -1.0, -0.0]
    gate[1, :4] = [-87.0, 2.0**-23, np.inf, 60.0]
    q = np.zeros((t, h), dtype=F8)
    s = np.full(t, np.nan, dtype=F32)
    mla_output_gate.mla_output_gate_fp8(host(x), host(gate), host(q), host(s))
    assert names == [mla_output_gate.FP8_GENERIC]
    rq, rs = ref_gate_fp8(x, gate)
    assert np.array_equal(s, rs)
    assert np.array_equal(bits(q), bits(rq))


def ref_gate_fp8(x, gate):
    """(q, s) of the FP8 output gate: y = bf16(x * bf16(sigmoid_f32(gate)))."""
    with np.errstate(over="ignore"):  # exp(100) = inf: sigmoid 0, as the kernel's
        sig = (F32(1) / (F32(1) + np.exp(-gate.astype(F32)))).astype(BF16).astype(F32)
    y = (x.astype(F32) * sig).astype(BF16).astype(F32)
    rs = ref_scale(np.abs(y).max(-1))
    return ref_fp8(y / rs[:, None]), rs


@pytest.mark.parametrize("chunks", [3, 1])
def test_mla_output_gate_fp8_newton_every_bf16_gate(chunks):
    """The division-free sigmoid against the IEEE reference for every bf16 gate value but
    NaN, the values
    >= -87 in rows of their own (the division-free path), the others (-inf included) in
    the rows before them (the IEEE path), each against random x."""
    h = 1536
    g = np.arange(0, 0x10000, dtype=np.uint32).astype(np.uint16).view(BF16).astype(F32)
    g = g[~np.isnan(g)]
    rows = [np.concatenate([v, np.zeros(-v.size % h, F32)]).reshape(-1, h)
            for v in (g[g < -87], g[g >= -87])]
    gate = np.concatenate(rows).astype(BF16)
    t = gate.shape[0]
    rng = np.random.default_rng(11)
    x = k3_like_rows(rng, t, h)
    q = np.zeros((t, h), dtype=F8)
    s = np.zeros(t, dtype=F32)
    block = 512 if chunks == 3 else 2048
    kiln.testing.interpret(mla_output_gate.mla_output_gate_fp8_kernel, (t,), x, gate, q, s, h, h,
                           h, h, BLOCK=block, CHUNKS=chunks)
    rq, rs = ref_gate_fp8(x, gate)
    assert np.array_equal(s, rs)
    assert np.array_equal(bits(q), bits(rq))


# ---------------------------------------------------------------------------
# MLA FP8 KV scatter
# ---------------------------------------------------------------------------

def run_kv_scatter_fp8(kv_a, loc, cache, page_size, page_bytes, row_bytes, rows=None,
                       **constexprs):
    """mla_kv_scatter_fp8_kernel in the interpreter as the wrapper launches it: kv_c and
    k_pe the [:, :512] and [:, 512:] slices of kv_a, ``cache`` a uint8 [..., 656] array (or
    view) of pages of page_size rows page_bytes apart, rows row_bytes apart."""
    t = kv_a.shape[0]
    slots = int(np.prod(cache.shape[:-1]))
    cx, _, _ = mla_kv.fp8_launch_config()
    cx.update(constexprs, **({"ROWS": rows} if rows else {}))
    kiln.testing.interpret(mla_kv.mla_kv_scatter_fp8_kernel, (-(-t // cx["ROWS"]),), kv_a,
                           kv_a[:, 512:], loc, cache.view(F8), cache.view(F32),
                           cache.view(BF16), t, slots, kv_a.shape[1], kv_a.shape[1],
                           row_bytes // 16, page_size, page_bytes // 16, **cx)


def ref_kv_fp8_row(kv_c, k_pe):
    """The 656-byte FP8 rows (mla_cache.md) of the tokens: codes, scales, rope."""
    rq, rs = ref_group_quant(kv_c.astype(F32), 128)
    return np.concatenate([bits(rq).reshape(len(kv_c), -1), bits(rs).reshape(len(kv_c), -1),
                           bits(k_pe).reshape(len(kv_c), -1)], axis=1)


def kv_scatter_inputs(rng, t, slots):
    """kv_c and k_pe as slices of one [T, 576] projection (row stride 576), distinct loc
    with two padded tokens and one past num_slots (skipped too)."""
    kv_a = k3_like_rows(rng, t, 576)
    loc = rng.permutation(slots)[:t].astype(np.int64)
    loc[[3, 8]] = -1
    loc[5] = slots + 2
    return kv_a, loc


def check_kv_rows(after, before, want, loc):
    """[slots, W] rows after and before a scatter: row loc[i] is want[i] for every token
    with 0 <= loc[i] < slots, every other row unchanged."""
    slots = after.shape[0]
    keep = (loc >= 0) & (loc < slots)
    expected = before.copy()
    expected[loc[keep]] = want[keep]
    assert np.array_equal(after, expected)


@pytest.mark.parametrize("rows", [mla_kv.SETTINGS.fp8_rows, 4, 16, 1, 2])
@pytest.mark.parametrize("cache_mod", ["", ".cs"])
def test_mla_kv_scatter_fp8_matches_numpy(rows, cache_mod):
    """ROWS tokens a program; STORE_CACHE: a cache hint (the same bits)."""
    rng = np.random.default_rng(5)
    t, slots = 11, 24
    kv_a, loc = kv_scatter_inputs(rng, t, slots)
    cache = np.full((slots, 656), 0xA5, dtype=np.uint8)
    before = cache.copy()
    run_kv_scatter_fp8(kv_a, loc, cache, slots, 0, 656, rows=rows, STORE_CACHE=cache_mod)
    check_kv_rows(cache, before, ref_kv_fp8_row(kv_a[:, :512], kv_a[:, 512:]), loc)


@pytest.mark.parametrize("layout", ["pages", "layer"])
@pytest.mark.parametrize("index64", [False, True])
def test_mla_kv_scatter_fp8_pages_match_numpy(layout, index64):
    """PAGED: pages of 8 rows, contiguous ([5, 8, 656]) or one layer of a [5, 3, 8, 656]
    pool (pool[:, 1]: pages 3 x 8 x 656 bytes apart; the other layers unchanged); both
    with 32- and 64-bit offsets."""
    rng = np.random.default_rng(6)
    pages, page_size, t = 5, 8, 11
    if layout == "pages":
        pool = rng.integers(0, 256, (pages, page_size, 656), dtype=np.uint8)
        cache = pool
    else:
        pool = rng.integers(0, 256, (pages, 3, page_size, 656), dtype=np.uint8)
        cache = pool[:, 1]
    before = pool.copy()
    kv_a, loc = kv_scatter_inputs(rng, t, pages * page_size)
    run_kv_scatter_fp8(kv_a, loc, cache, page_size, cache.strides[0], 656, PAGED=True,
                       INDEX64=index64)
    check_kv_rows(cache.reshape(-1, 656), (before if layout == "pages" else before[:, 1])
                  .reshape(-1, 656), ref_kv_fp8_row(kv_a[:, :512], kv_a[:, 512:]), loc)
    if layout == "layer":
        assert np.array_equal(pool[:, 0], before[:, 0]) and np.array_equal(pool[:, 2],
                                                                           before[:, 2])


# ---------------------------------------------------------------------------
# MXFP4
# ---------------------------------------------------------------------------

def ref_mxfp4(x):
    """OCP MX: E8M0 = floor(log2(amax)) - 2 + 127 (clamped to [0, 254]; amax 0 -> 0),
    E2M1 of x / 2^(E8M0 - 127), round to nearest even, saturate at 6; even element low."""
    r, d = x.shape
    xb = x.astype(np.float64).reshape(r, d // 32, 32)
    amax = np.abs(xb).max(-1)
    _, ex = np.frexp(amax)  # amax = m * 2^ex, m in [0.5, 1): floor(log2) = ex - 1
    byte = np.where(amax > 0, np.clip(ex - 1 - 2 + 127, 0, 254), 0).astype(np.uint8)
    v = xb / np.exp2(byte.astype(np.float64) - 127)[..., None]
    codes = np.clip(v, -6, 6).astype(F32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    codes = codes.reshape(r, d)
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8), byte


@pytest.mark.parametrize("r", [1, 6])
@pytest.mark.parametrize("pad", [32, 8])
def test_quant_mxfp4_matches_numpy(r, pad):
    """The one-block-a-thread program (the bundle's few-rows and generic kernels) on rows
    strided by d + pad (8: a multiple of 8 elements, not of 32, the generic kernel's)."""
    rng = np.random.default_rng(r)
    d = 256
    base = k3_like_rows(rng, r, d + pad)
    x = base[:, :d]  # row-strided
    x[0, :32] = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0] * 4, dtype=F32) * \
        np.array([1, -1] * 16, dtype=F32)  # every tie and the saturation, amax 7 -> 2^0
    x[0, 32:64] = np.float32(2.0**-130)  # a subnormal block: the lowest scale
    packed = np.zeros((r, d // 2), dtype=np.uint8)
    scale = np.zeros((r, d // 32), dtype=np.uint8)
    nb = d // 32
    name, cx, _, _ = quant.mx_launch_config(r)
    assert name == "quant_mxfp4_few_rows"
    kiln.testing.interpret(quant.quant_mxfp4_kernel, (r, -(-nb // cx["ROWS"])),
                           base.view(np.int32), packed, scale, r * nb, nb, (d + pad) // 2, d // 2,
                           nb, **cx)
    rp, rs = ref_mxfp4(x.astype(F32))
    assert np.array_equal(scale, rs)
    assert np.array_equal(packed, rp)


# ---------------------------------------------------------------------------
# SiTU's division-free quantization (fp32 activations, not bf16): the scale for every fp32
# absmax mantissa, the quotients at every e4m3 rounding boundary (a correctly rounded or
# faithful fp32 quotient can change the e4m3 code only there)
# ---------------------------------------------------------------------------

def test_situ_recip_scale_is_ieee_for_every_fp32_mantissa():
    from test_quant_variants import div_by_recip

    mant = (np.arange(1 << 23, dtype=np.uint32) | np.uint32(127 << 23)).view(F32)  # [1, 2)
    inv = F32(quant.INV_FP8_MAX)
    for k in (-40, 0, 1, 60, 127):
        a = np.maximum(mant * F32(2.0**k), F32(1e-10))
        assert np.array_equal(div_by_recip(a, F32(448), inv), a / F32(448)), k


def test_situ_recip_quotients_at_every_e4m3_boundary():
    """For 4096 random scales and every e4m3 midpoint M (and the saturation 448), the fp32
    activations within 3 ulps of M * s: e4m3(div_by_recip) == e4m3(IEEE quotient)."""
    from test_quant_variants import div_by_recip

    rng = np.random.default_rng(11)
    codes = np.arange(0, 0x7F, dtype=np.uint8).view(F8).astype(F32)  # 0 .. 448
    mids = np.concatenate([(codes[:-1] + codes[1:]) / F32(2), [F32(448)]]).astype(F32)
    s = (rng.uniform(1, 2, 4096) * np.exp2(rng.integers(-30, 30, 4096))).astype(F32)
    s = np.maximum(s, F32(1e-10)) / F32(448)
    r = F32(1) / s
    base = (mids[None, :] * s[:, None]).astype(F32)
    bb = base.view(np.int32)
    for d in range(-3, 4):
        x = (bb + d).view(F32)
        for sign in (1, -1):
            xs = (x * F32(sign)).astype(F32)
            want = np.clip(xs / s[:, None], -448, 448).astype(F8).view(np.uint8)
            got = np.clip(div_by_recip(xs, s[:, None], r[:, None]), -448, 448)
            assert np.array_equal(got.astype(F8).view(np.uint8), want), d


def fma_rn32(a, b, c):
    """fp32 fma(a, b, c) rounded once, for f32 arrays whose exact a * b + c fits float64's
    53 bits (a residual x - p * d: a * b has 48 bits and c cancels its top)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(F32)


def add_rn32(p, t):
    """RN_f32(p + t) for f32 p and float64 t (exact), without float64's double rounding:
    TwoSum's remainder breaks a float64 result that lands on an f32 midpoint."""
    p = p.astype(np.float64)
    s = p + t
    bv = s - p
    err = (p - (s - bv)) + (t - bv)  # s + err == p + t exactly
    q = s.astype(F32)
    lo = np.where(q.astype(np.float64) > s, np.nextafter(q, F32(-np.inf)), q)
    hi = np.nextafter(lo, F32(np.inf))
    mid = (lo.astype(np.float64) + hi.astype(np.float64)) / 2
    up = (s > mid) | ((s == mid) & (err > 0))
    down = (s < mid) | ((s == mid) & (err < 0))
    even_hi = (hi.view(np.int32) & 1) == 0
    return np.where(up, hi, np.where(down, lo, np.where(even_hi, hi, lo)))


def recip_boundary_mismatches(mant):
    """For scales s = the given fp32 mantissas in [1, 2) and every e4m3 rounding boundary
    class (k * 2^j, k odd in 1..31: the midpoints and, at k = 27, the last one below the
    saturation), the fp32 x within 6 steps of RN(k * s) (a quotient within 1 ulp of k means
    x within 2.5 ulps of k * s, up to 5 steps where a binade boundary halves them): how
    many give quant.div_by_recip(x, s, RN(1/s)) and the
    IEEE x / s on different sides of k (or different values at k). Scaling x or s by powers
    of two scales every step exactly (all normal), so this covers every binade; the
    arithmetic is sign-symmetric."""
    s = mant.astype(F32)
    r = F32(1) / s
    bad = 0
    for k in range(1, 32, 2):
        base = (F32(k) * s).astype(F32).view(np.int32)
        for off in range(-6, 7):
            x = (base + off).view(F32)
            p = (x * r).astype(F32)
            e = fma_rn32(p, s, -x)
            q = add_rn32(p, e.astype(np.float64) * -r.astype(np.float64))
            ieee = x / s
            side_q, side_i = np.sign(q - F32(k)), np.sign(ieee - F32(k))
            bad += int(((side_q != side_i) | ((side_q == 0) & (q != ieee))).sum())
    return bad


def test_situ_recip_quotients_at_e4m3_boundaries():
    """Every 128th fp32 scale mantissa (all 2^23 with KILN_EXHAUSTIVE=1, about two minutes):
    the argument of situ_quant's kernel docstring."""
    step = 1 if os.environ.get("KILN_EXHAUSTIVE") else 128
    for start in range(0, 1 << 23, 1 << 18):
        m = np.arange(start, start + (1 << 18), step, dtype=np.uint32) | np.uint32(127 << 23)
        assert recip_boundary_mismatches(m.view(F32)) == 0, start


def test_quant_mxfp4_chunks_from_min_t_only():
    """The chunk programs from mx_chunks_min_t rows on, the one-block programs below (each a
    specialization of its own in the bundle: chunks with the register cap, uncapped below)."""
    st = quant.SETTINGS
    assert st.mx_chunks > 0

    def chunked(rows):
        return quant.mx_launch_config(rows)[0] == "quant_mxfp4"

    assert not chunked(1) and not chunked(st.mx_chunks_min_t - 1)
    assert chunked(st.mx_chunks_min_t) and chunked(None)
    specs = {s.kernel_name: s for s in quant.AOT_SPECIALIZATIONS
             if s.kernel is quant.quant_mxfp4_kernel}
    assert set(specs) == {"quant_mxfp4", "quant_mxfp4_few_rows", quant.MX_GENERIC}
    assert specs[quant.MX_GENERIC].constexprs == specs["quant_mxfp4_few_rows"].constexprs
    assert specs["quant_mxfp4"].constexprs["CHUNKS"] == st.mx_chunks
    assert specs["quant_mxfp4"].maxnreg == st.mx_maxnreg
    assert specs["quant_mxfp4_few_rows"].constexprs["CHUNKS"] == 0
    assert specs["quant_mxfp4_few_rows"].maxnreg is None
