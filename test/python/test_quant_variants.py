"""The division-free and bit-level arithmetic of the quantization kernels
(kernels_dsl/kimi_k3/quant.py: per_token_group_quant_fp8's quotients and scales, quant_mxfp4's
E2M1 rounding on the fp32 bits, its row chunks and lookahead; mla_output_gate.py's sigmoid
reciprocal) gives the same bits as the IEEE formulas of docs/kernels/quant.md: the arithmetic
checked exhaustively in numpy (fused multiply-adds emulated exactly, rounded once), the kernels
run in the CPU interpreter at several tile sizes against the numpy references of
test_fp8_quant_kernels.py, and compiled for sm_90a. No GPU, no torch."""

import numpy as np
import pytest

import kiln.testing
from kernels_dsl.kimi_k3 import quant

from test_fp8_quant_kernels import (
    BF16,
    F8,
    F32,
    add_rn32,
    bits,
    k3_like_rows,
    ref_group_quant,
    ref_mxfp4,
)

#: every finite non-negative bf16 value
ALL_BF16 = np.arange(0, 0x7F80, dtype=np.uint16).view(BF16).astype(F32)


def fma32(a, b, c):
    """fp32 fma(a, b, c) for the operands used here: a * b is exact in float64 (24 + 24 bits)
    and the sum is exact there too when |a * b| and |c| are within 2^29 of each other (the
    residual x - p * d of a quotient p); one rounding to fp32."""
    return (a.astype(np.float64) * np.float64(b) + c.astype(np.float64)).astype(F32)


def div_by_recip(x, d, r):
    """quant.div_by_recip: ``fma(fma(p, d, -x), -r, p)`` with p = RN(x * r), both FMAs
    rounded once (the second one's sum through add_rn32: no float64 double rounding)."""
    p = (x * r).astype(F32)
    e = fma32(p, d, -x)
    return add_rn32(p, e.astype(np.float64) * -np.float64(r))


def test_scale_without_division_is_ieee_for_every_bf16_absmax():
    a = np.maximum(ALL_BF16[1:], F32(1e-10))
    inv = F32(quant.INV_FP8_MAX)
    assert inv == F32(1) / F32(448)
    assert np.array_equal(div_by_recip(a, F32(448), inv), a / F32(448))


def test_scale_is_the_quotient_not_the_reciprocal_product():
    """The scale is RN(absmax / 448), the fp32 quotient correctly rounded (here the float64
    quotient rounded to fp32: exact, 53 >= 2 * 24 + 2 bits). RN(absmax * RN(1/448)), which
    torch's CUDA ``tensor / 448`` computes (a Python-scalar divisor is multiplied by its
    reciprocal), is one ulp off for 71 of the 128 bf16 mantissas: e.g. absmax 2.859375,
    whose 2.859375 / 448 = 0.00638253348214... rounds to 0.006382533349 (0x3BD12492), where
    the product gives 0.006382533814 (0x3BD12493). The kernel's scales are the quotient's
    (per_token_group_quant_fp8 in the interpreter, its division-free form)."""
    mant = ALL_BF16[(ALL_BF16 >= 1) & (ALL_BF16 < 2)]
    quotient = (mant.astype(np.float64) / 448).astype(F32)
    product = mant * F32(quant.INV_FP8_MAX)
    assert int((quotient != product).sum()) == 71
    a = F32(2.859375)
    assert (np.float64(a) / 448).astype(F32).view(np.uint32) == 0x3BD12492
    assert (a * F32(quant.INV_FP8_MAX)).view(np.uint32) == 0x3BD12493
    x = np.zeros((1, 128 * 128), F32)
    x[0, ::128] = mant  # one group a mantissa, its absmax the first value
    x[0, 1::128] = -mant / 2
    q = np.zeros(x.shape, F8)
    s = np.zeros((1, 128), F32)
    kiln.testing.interpret(quant.per_token_group_quant_fp8_kernel, (1, 4), x.astype(BF16), q, s,
                           128, 128, x.shape[1], x.shape[1], 128, 1, GROUP=128, ROWS=32,
                           UE8M0=False)
    assert np.array_equal(s[0], quotient)


@pytest.mark.parametrize("exp", [-126, -40, -3, 0, 7, 40, 119])
def test_quotient_without_division_gives_the_ieee_e4m3_codes(exp):
    """Every bf16 absmax mantissa at the binade 2^exp, every bf16 |x| <= absmax."""
    def e4m3(v):
        return np.clip(v, -448, 448).astype(F8).view(np.uint8)

    mant = ALL_BF16[(ALL_BF16 >= 1) & (ALL_BF16 < 2)]
    for m in mant:
        a = F32(m * F32(2.0**exp))
        s = np.maximum(a, F32(1e-10)) / F32(448)
        x = ALL_BF16[ALL_BF16 <= a]
        r = F32(1) / s
        assert np.array_equal(e4m3(div_by_recip(x, s, r)), e4m3(x / s)), a


def test_quotient_without_division_keeps_the_sign_of_zero():
    """-0 / s is -0 (e4m3 0x80) and +0 / s is +0, as the IEEE quotient; every negative bf16
    value gives the negated code of its magnitude (the arithmetic is sign-symmetric)."""
    def e4m3(v):
        return np.clip(v, -448, 448).astype(F8).view(np.uint8)

    for s in (F32(1e-10) / F32(448), F32(3.0) / F32(448), F32(448) / F32(448)):
        r = F32(1) / s
        x = np.array([0.0, -0.0], dtype=F32)
        got = div_by_recip(x, s, r)
        assert np.array_equal(np.signbit(got), [False, True])
        assert np.array_equal(e4m3(got), e4m3(x / s)), s
        neg = -ALL_BF16[ALL_BF16 <= s * F32(448)]
        assert np.array_equal(e4m3(div_by_recip(neg, s, r)), e4m3(neg / s)), s


def test_quotient_without_division_below_the_absmax_floor():
    s = F32(1e-10) / F32(448)
    x = ALL_BF16[ALL_BF16 < 1e-10]
    r = F32(1) / s
    got = np.clip(div_by_recip(x, s, r), -448, 448).astype(F8).view(np.uint8)
    assert np.array_equal(got, np.clip(x / s, -448, 448).astype(F8).view(np.uint8))


@pytest.mark.parametrize("rows", [16, 8, 4])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("column_major", [False, True])
def test_group_quant_rows_match_numpy(rows, ue8m0, column_major):
    rng = np.random.default_rng(rows)
    t, d = 9, 640  # 5 groups of 128 per token: partial programs for rows 4 and 8
    x = k3_like_rows(rng, t, d)
    ng = d // 128
    q = np.zeros((t, d), dtype=F8)
    s_store = np.full((ng, t) if column_major else (t, ng), np.nan, dtype=F32)
    st, sg = (1, t) if column_major else (ng, 1)
    kiln.testing.interpret(quant.per_token_group_quant_fp8_kernel, (t, -(-ng // rows)), x, q,
                           s_store, t * ng, ng, d, d, st, sg, GROUP=128, ROWS=rows, UE8M0=ue8m0)
    s = s_store.T if column_major else s_store
    rq, rs = ref_group_quant(x.astype(F32), 128, ue8m0)
    assert np.array_equal(s, rs)
    assert np.array_equal(bits(q), bits(rq))


def every_e2m1_input():
    """Blocks holding every bf16 magnitude in [0, 8) (both signs; not -0.0, whose code the
    kernels give as +0) with a block maximum of 7.97 (scale 2^0: the values are quantized
    as they are)."""
    mags = np.arange(0, 0x4100, dtype=np.uint16).view(BF16).astype(F32)
    vals = np.concatenate([mags, -mags[1:]])
    nblk = -(-vals.size // 31)
    vals = np.concatenate([vals, np.zeros(nblk * 31 - vals.size, F32)]).reshape(nblk, 31)
    blocks = np.concatenate([vals, np.full((nblk, 1), 7.96875, F32)], axis=1)
    rows = -(-nblk // 8)
    x = np.zeros((rows * 8, 32), F32)
    x[:nblk] = blocks
    return x.reshape(rows, 256).astype(BF16)


def every_scaled_e2m1_input():
    """Every bf16 magnitude in [0, 8) as above, in blocks whose maximum sets the scales
    2^-127 (the lowest: a block maximum below 2^-125), 2^-100, 2^40 and 2^125 (the largest
    bf16 values), so the codes come from a scaled value (and from subnormal bf16 inputs)."""
    x = every_e2m1_input().astype(F32).reshape(-1, 32)
    out = np.concatenate([x * F32(2.0**k) for k in (-127, -100, 40, 125)]).astype(BF16)
    out[out == 0] = 0  # values that underflowed to -0.0 (see every_e2m1_input)
    return out.reshape(-1, 256)


@pytest.mark.parametrize("rows", [16, 64])
@pytest.mark.parametrize("data", ["every_e2m1", "every_scaled_e2m1", "k3_like"])
def test_mxfp4_match_numpy(rows, data):
    x = {"every_e2m1": every_e2m1_input, "every_scaled_e2m1": every_scaled_e2m1_input,
         "k3_like": lambda: k3_like_rows(np.random.default_rng(3), 6, 256)}[data]()
    packed, scale = run_mxfp4(x, ROWS=rows)
    rp, rs = ref_mxfp4(x.astype(F32))
    assert np.array_equal(scale, rs)
    assert np.array_equal(packed, rp)


@pytest.mark.parametrize("rows", [16, 8, 4])
def test_group_quant_compiles(rows):
    pytest.importorskip("kiln._C")
    ck = quant.per_token_group_quant_fp8_kernel.compile(
        quant._SIG, {"GROUP": 128, "ROWS": rows, "UE8M0": False},
        ["x_ptr", "q_ptr", "s_ptr", "x_s0", "q_s0"], num_warps=max(1, rows // 4),
        arch="sm_90a", upto="ptx")
    assert "ld.global.v4.b32" in ck.ptx
    assert "div.rn.f32" not in ck.ptx  # no per-element (or per-group) division
    assert "div.s32" not in ck.ptx  # the token grid: no integer division
    # one scale store a thread, no shared-memory conversion of the scales
    assert "bar.sync" not in ck.ptx
    assert ck.ptx.count("st.global.b32") == 1


def test_mxfp4_compiles():
    pytest.importorskip("kiln._C")
    ck = quant.quant_mxfp4_kernel.compile(
        quant._MX_SIG, {"ROWS": 64}, ["x_ptr", "p_ptr", "s_ptr", "x_s0", "p_s0"], num_warps=2,
        arch="sm_90a", upto="ptx")
    assert "ld.global.v4.b32" in ck.ptx  # 16-byte loads of (even, odd) words
    assert "div.s32" not in ck.ptx  # the token grid: no integer division
    # one scale byte a thread from the blocks' layout, no shared memory
    assert "bar.sync" not in ck.ptx
    assert ck.ptx.count("st.global.b8") == 1


#: (CHUNKS, LOOKAHEAD, ROWS); CHUNKS = 0: one block a thread
MX_CHUNK_VARIANTS = [(0, 1, 16), (1, 1, 32), (2, 1, 64), (3, 2, 64), (3, 3, 32), (7, 1, 64)]


def mxfp4_edge_rows():
    """Rows of 69 blocks (two chunks of 32 and a partial one) of K3-like values, with blocks
    of every E2M1 tie and the saturation, -0.0 (code 0, as +0), a subnormal block, and
    blocks whose scale is so large (2^25 to 2^126) that small negative values underflow to
    -0 when scaled (code 0) or stay tiny negatives (code 8): the sign cases."""
    x = k3_like_rows(np.random.default_rng(7), 5, 32 * 69)
    ties = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0] * 4, dtype=F32)
    x[0, :32] = ties * np.array([1, -1] * 16, dtype=F32)
    x[0, 32:64] = np.float32(2.0**-130)
    x[0, 64:96] = x[0, 64:96] * np.where(np.arange(32) % 3 == 0, F32(0), F32(1))
    x[0, 64:96:6] = -0.0
    tiny = -np.exp2(np.arange(-133, -101, dtype=np.float64)).astype(F32)  # bf16-exact
    for i, e in enumerate((25, 40, 127, 126)):
        blk = slice(96 + 32 * i, 128 + 32 * i)
        x[1, blk] = tiny
        x[1, 96 + 32 * i] = np.float32(1.5 * 2.0**e)
        x[2, blk] = np.float32(-2.0**-133) * np.arange(32, dtype=F32)
        x[2, 97 + 32 * i] = np.float32(-1.75 * 2.0**e)
    return x.astype(BF16)


def run_mxfp4(x, **constexprs):
    """quant_mxfp4_kernel in the interpreter on the bf16 rows x (as int32 words), grid as the
    wrapper's."""
    r, d = x.shape
    nb = d // 32
    rows, chunks = constexprs["ROWS"], constexprs.get("CHUNKS", 0)
    packed = np.zeros((r, d // 2), np.uint8)
    scale = np.zeros((r, nb), np.uint8)
    grid = ((-(-r // (rows // 32)), -(-nb // (32 * chunks))) if chunks else
            (r, -(-nb // rows)))
    kiln.testing.interpret(quant.quant_mxfp4_kernel, grid, x.view(np.int32), packed, scale,
                           r * nb, nb, d // 2, d // 2, nb, **constexprs)
    return packed, scale


@pytest.mark.parametrize("chunks,lookahead,rows", MX_CHUNK_VARIANTS)
@pytest.mark.parametrize("data", ["every_e2m1", "every_scaled_e2m1", "edge"])
def test_mxfp4_chunks_match(chunks, lookahead, rows, data):
    """The CHUNKS programs give the one-block-a-thread kernel's bits (every E2M1 input,
    scaled ones, the sign edge cases) and the numpy reference's where it is defined (it
    turns -0.0 and underflowing negative values into -0, the kernels into +0)."""
    x = {"every_e2m1": every_e2m1_input, "every_scaled_e2m1": every_scaled_e2m1_input,
         "edge": mxfp4_edge_rows}[data]()
    got = run_mxfp4(x, ROWS=rows, CHUNKS=chunks, LOOKAHEAD=lookahead)
    want = run_mxfp4(x, ROWS=16)
    assert np.array_equal(got[1], want[1])
    assert np.array_equal(got[0], want[0])
    if data != "edge":
        rp, rs = ref_mxfp4(x.astype(F32))
        assert np.array_equal(got[1], rs)
        assert np.array_equal(got[0], rp)


def test_mxfp4_edge_rows_have_the_sign_cases():
    """mxfp4_edge_rows holds negative values of magnitude code 0 on both sides of the
    underflow (codes 8 and 0), and -0.0 (code 0)."""
    x = mxfp4_edge_rows()
    packed, _ = run_mxfp4(x, ROWS=16)
    codes = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(x.shape)
    xf = x.astype(F32)
    neg = (xf < 0) & ((codes & 7) == 0)
    assert (codes[neg] == 8).sum() > 10 and (codes[neg] == 0).sum() > 10
    negzero = (xf == 0) & np.signbit(xf)
    assert negzero.any() and (codes[negzero] == 0).all()


@pytest.mark.parametrize("chunks,lookahead,rows", MX_CHUNK_VARIANTS)
def test_mxfp4_chunks_compile(chunks, lookahead, rows):
    pytest.importorskip("kiln._C")
    ck = quant.quant_mxfp4_kernel.compile(
        quant._MX_SIG, {"ROWS": rows, "CHUNKS": chunks, "LOOKAHEAD": lookahead},
        ["x_ptr", "p_ptr", "s_ptr", "x_s0", "p_s0"], num_warps=rows // 32 or 1,
        arch="sm_90a", upto="ptx")
    n = max(chunks, 1)
    # four 16-byte loads, one 16-byte store and one scale byte a chunk; no division, no
    # shared memory
    assert ck.ptx.count("ld.global.v4.b32") == 4 * n
    assert ck.ptx.count("st.global.b8") == n
    assert "div.s32" not in ck.ptx and "bar.sync" not in ck.ptx


def test_mxfp4_cache_hints_compile():
    """OUT_CACHE reaches every packed store of the chunk program (one scale byte store a
    chunk still)."""
    pytest.importorskip("kiln._C")
    ck = quant.quant_mxfp4_kernel.compile(
        quant._MX_SIG, {"ROWS": 64, "CHUNKS": 3, "LOOKAHEAD": 1, "OUT_CACHE": ".cs"},
        ["x_ptr", "p_ptr", "s_ptr", "x_s0", "p_s0"], num_warps=2, arch="sm_90a", upto="ptx")
    assert ck.ptx.count("st.global.cs.v4.b32") == 3 and ck.ptx.count("st.global.b8") == 3


# ---------------------------------------------------------------------------
# mla_output_gate.recip_bf16_newton: the sigmoid's reciprocal without a division
# ---------------------------------------------------------------------------

def _markstein_step(d, r):
    """RN(r + r * RN(1 - d * r)) for d = D 2^-23 in (1, 2) and r = R 2^-24 in (1/2, 1),
    D, R int64 arrays, in exact integer arithmetic: 1 - d r = N 2^-47 (exact, |N| < 2^28)
    is rounded to 24 significant bits, then R + R * N' 2^-47 to an integer (ties to even).
    Returns R' (r' = R' 2^-24)."""
    n = (np.int64(1) << 47) - d * r
    a = np.abs(n)
    bits = np.frexp(a.astype(np.float64))[1].astype(np.int64)  # exact below 2^53
    s = np.maximum(bits - 24, 0)
    q, rem = a >> s, a & ((np.int64(1) << s) - 1)
    half = (np.int64(1) << s) >> 1
    q = q + ((s > 0) & ((rem > half) | ((rem == half) & (q & 1 == 1))))
    p = r * (np.sign(n) * (q << s))
    base = r + (p >> 47)
    rem = p & ((np.int64(1) << 47) - 1)
    h = np.int64(1) << 46
    return base + ((rem > h) | ((rem == h) & (base & 1 == 1)))


def _bf16_of(r):
    """bf16 rounding (nearest even) of r = R 2^-24 in [1/2, 1), as R >> 16 rounded."""
    q, rem = r >> 16, r & 0xFFFF
    return q + ((rem > 0x8000) | ((rem == 0x8000) & (q & 1 == 1)))


def test_recip_bf16_newton_for_every_mantissa():
    """One Markstein step from any r0 within +-12 ulps of 1 / d (rsqrt.approx squared is
    within 9) gives a value whose bf16 rounding is that of RN(1 / d), for every fp32
    mantissa of d (the scale of d only shifts the exponent: 1 <= d < 2^126 keeps 1 / d
    normal). The 32 mantissas at either end of [1, 2), where r0 may cross 1 or 1/2 (a
    change of ulp), are checked with exact rationals."""
    from fractions import Fraction

    def binade(v):  # e with 2^e <= v < 2^(e + 1), v > 0
        e = v.numerator.bit_length() - v.denominator.bit_length()
        return e + (Fraction(2) ** (e + 1) <= v) - (Fraction(2) ** e > v)

    def rn(v, bits=24):
        ulp = Fraction(2) ** (binade(v) - bits + 1)
        q, rem = divmod(v, ulp)
        return (int(q) + (rem * 2 > ulp or (rem * 2 == ulp and int(q) % 2 == 1))) * ulp

    def neighbours(v, k):  # v and the k fp32 values on either side of it
        out, lo, hi = [v], v, v
        for _ in range(k):
            hi += Fraction(2) ** (binade(hi) - 23)
            lo -= Fraction(2) ** (binade(lo) - 23 - (lo == Fraction(2) ** binade(lo)))
            out += [lo, hi]
        return out

    k, edge = 12, 32
    for dm in list(range(2**23, 2**23 + edge)) + list(range(2**24 - edge, 2**24)):
        d = Fraction(dm, 2**23)
        want = rn(1 / d, 8)
        for r0 in neighbours(rn(1 / d), k):
            assert rn(rn(r0 + r0 * rn(1 - d * r0)), 8) == want, (dm, r0)
    for start in range(2**23 + edge, 2**24 - edge, 1 << 20):
        d = np.arange(start, min(start + (1 << 20), 2**24 - edge), dtype=np.int64)
        q = (np.int64(1) << 47) // d
        rem = (np.int64(1) << 47) - q * d
        want = q + ((2 * rem > d) | ((2 * rem == d) & (q & 1 == 1)))  # RN(1 / d) 2^24
        for off in range(-k, k + 1):
            r1 = _markstein_step(d, want + off)
            assert ((r1 >= 2**23) & (r1 < 2**24)).all()
            assert np.array_equal(_bf16_of(r1), _bf16_of(want)), off
