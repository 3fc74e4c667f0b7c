"""attn_res on the GPU (docs/kernels/attn_res.md): the K3 shape (H = 7168), nvb 1..8 (and 0),
T in {1, 7, 4096}, against a float64 reference of the spec's formula, within one bf16 ulp of
the exact value; write_prefix copies the prefix row bit for bit; bad arguments raise before
any launch. T <= 66 on the H200 runs the small-T cluster kernel (T in {1, 2, 7, 32}, its own
tests below, and every cluster size at T up to 100), T <= 132 with nvb <= 4 the token kernel
(its own tests too). The persistent tests run the row ring (the ``ring`` fixture: the token
kernel off) by default and at several depths and programs per SM. The same kernels run in
the interpreter against a numpy reference in test/python/test_attn_res.py."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import attn_res as mod  # noqa: E402

H = 7168
EPS = 1e-6


def reference(prefix, bank, cw, ow, nvb, eps=EPS):
    """rows_r = [bank[:, 0..nvb-1], prefix]; score_r = <rows_r, cw> * rsqrt(mean(rows_r^2) +
    eps); p = softmax(score); mix = sum_r p_r rows_r; RMSNorm(mix) * ow; float64, unrounded."""
    rows = torch.cat([bank[:, :nvb].double(), prefix.double()[:, None]], dim=1)
    score = (rows * cw.double()).sum(-1) * torch.rsqrt(rows.pow(2).mean(-1) + eps)
    p = torch.softmax(score, dim=-1)
    mix = (p[:, :, None] * rows).sum(1)
    return mix * torch.rsqrt(mix.pow(2).mean(-1, keepdim=True) + eps) * ow.double()


def bf16_ulp(x):
    e = torch.floor(torch.log2(x.abs().clamp(min=2.0**-126)))
    return torch.exp2(e - 7)


def assert_close_bf16(out, ref):
    """One bf16 ulp of the exact value (rounding is half of it) plus 2^-16 of the row's RMS
    for elements that cancel to about zero; every element finite."""
    got = out.double()
    scale = ref.pow(2).mean(-1, keepdim=True).sqrt()
    tol = bf16_ulp(ref) + scale * 2.0**-16
    err = (got - ref).abs()
    bad = ~(err <= tol)
    n = int(bad.sum())
    if n:
        i = int(torch.argmax(torch.where(bad, err / tol, torch.zeros_like(err))))
        raise AssertionError(f"{n} of {ref.numel()} differ by more than 1 bf16 ulp; worst: got "
                             f"{got.flatten()[i].item()}, expected {ref.flatten()[i].item()}")


def inputs(t, nb, h=H, seed=0):
    """K3-like magnitudes: each snapshot its own scale (the residual stream grows with
    depth); cw spreads the scores over a few units."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    prefix = (torch.randn(t, h, device="cuda", generator=g) * 3).bfloat16()
    row_scale = torch.exp(torch.rand(t, nb, 1, device="cuda", generator=g) * 3 - 1)
    bank = (torch.randn(t, nb, h, device="cuda", generator=g) * row_scale).bfloat16()
    cw = (torch.randn(h, device="cuda", generator=g) * 4 / h ** 0.5).bfloat16()
    ow = (torch.rand(h, device="cuda", generator=g) + 0.5).bfloat16()
    return prefix, bank, cw, ow


def bits(x):
    return x.view(torch.int16)


def settings(**changes):
    return dataclasses.replace(mod.SETTINGS, **changes)


@pytest.fixture
def ring():
    """The settings of the row ring (attn_res_ring_kernel) wherever the cluster kernel does
    not run: the token kernel off."""
    return settings(token_max_waves=0)


@pytest.mark.parametrize("write_prefix", [False, True])
@pytest.mark.parametrize("t", [1, 7, 4096])
@pytest.mark.parametrize("nvb", range(0, 9))
def test_k3_shapes(ring, nvb, t, write_prefix):
    nb = 9  # K3's bank: up to 8 snapshots read, the 9th written at the last block boundary
    prefix, bank, cw, ow = inputs(t, nb, seed=nvb * 100 + t + write_prefix)
    before = bank.clone()
    want = reference(prefix, before, cw, ow, nvb)
    out = torch.full((t, H), float("nan"), device="cuda", dtype=torch.bfloat16)
    res = mod.attn_res(prefix, bank, cw, ow, out, nvb=nvb, eps=EPS, write_prefix=write_prefix,
                       settings=ring)
    torch.cuda.synchronize()
    assert res is out
    assert_close_bf16(out, want)
    expected = before.clone()
    if write_prefix:
        expected[:, nvb] = prefix
    assert torch.equal(bits(bank), bits(expected))  # the bank: the snapshot and nothing else


def test_output_allocated_and_tiny_nb():
    prefix, bank, cw, ow = inputs(5, 2, seed=1)
    out = mod.attn_res(prefix, bank, cw, ow, nvb=1, write_prefix=True)
    assert out.shape == (5, H) and out.dtype == torch.bfloat16
    assert_close_bf16(out, reference(prefix, bank, cw, ow, 1))
    assert torch.equal(bits(bank[:, 1]), bits(prefix))


def test_write_prefix_is_a_bit_copy(ring):
    """Every bf16 bit pattern (NaN payloads, infinities, -0, subnormals) survives the snapshot."""
    t, nb, nvb = 64, 4, 2
    prefix = torch.randint(-(1 << 15), 1 << 15, (t, H), device="cuda", dtype=torch.int32)
    prefix = prefix.to(torch.int16).view(torch.bfloat16)
    _, bank, cw, ow = inputs(t, nb, seed=2)
    before = bank.clone()
    mod.attn_res(prefix, bank, cw, ow, nvb=nvb, write_prefix=True, settings=ring)
    torch.cuda.synchronize()
    expected = before.clone()
    expected[:, nvb] = prefix
    assert torch.equal(bits(bank), bits(expected))


def test_strided_views(ring):
    """prefix_sum and out as row-strided views, the bank a slice of a wider buffer."""
    t, nb, nvb = 300, 6, 4
    p, b, cw, ow = inputs(t, nb, seed=3)
    pbuf = torch.zeros(t, H + 64, device="cuda", dtype=torch.bfloat16)
    pbuf[:, :H] = p
    bbuf = torch.zeros(t, nb + 2, H, device="cuda", dtype=torch.bfloat16)
    bbuf[:, 1:nb + 1] = b
    obuf = torch.full((t, H + 128), 7.0, device="cuda", dtype=torch.bfloat16)
    bank = bbuf[:, 1:nb + 1]
    mod.attn_res(pbuf[:, :H], bank, cw, ow, obuf[:, :H], nvb=nvb, write_prefix=True,
                 settings=ring)
    torch.cuda.synchronize()
    assert_close_bf16(obuf[:, :H], reference(p, b, cw, ow, nvb))
    assert torch.all(obuf[:, H:] == 7.0)
    assert torch.equal(bits(bbuf[:, nvb + 1]), bits(p))
    assert torch.all(bbuf[:, 0] == 0) and torch.all(bbuf[:, nb + 1] == 0)


def test_one_program_per_token_matches_persistent():
    """The ring with one program per token (programs_per_sm = 0: grid = T) and the
    persistent default are different launches (grid and PROGRAMS) that give the same bits,
    both the reference's."""
    t, nb, nvb = 2000, 9, 5
    one = settings(ring_programs_per_sm=0, ring_few_programs_per_sm=0)
    sms = _num_sms()
    persistent = mod.select_launch(t, H, nvb, False, sms)
    per_token = mod.select_launch(t, H, nvb, False, sms, one)
    assert persistent[0] is per_token[0] is mod.attn_res_ring_kernel
    assert per_token[2] == (t,) and persistent[2][0] < t, (persistent[2], per_token[2])
    prefix, bank, cw, ow = inputs(t, nb, seed=4)
    a = mod.attn_res(prefix, bank, cw, ow, nvb=nvb)
    b = mod.attn_res(prefix, bank, cw, ow, nvb=nvb, settings=one)
    torch.cuda.synchronize()
    assert torch.equal(bits(a), bits(b))
    assert_close_bf16(a, reference(prefix, bank, cw, ow, nvb))


def test_chained_launches_see_the_previous_kernels_writes(ring):
    """PDL: each launch waits for the previous grid before its first load. The prefix comes
    from a torch add right before; a second attn_res reads the snapshot the first one wrote."""
    t, nb = 4096, 9
    x, bank, cw, ow = inputs(t, nb, seed=5)
    y = torch.randn_like(x)
    for _ in range(3):
        prefix = x + y                                  # written by the previous kernel
        out1 = mod.attn_res(prefix, bank, cw, ow, nvb=3, write_prefix=True, settings=ring)
        out2 = mod.attn_res(out1, bank, cw, ow, nvb=4, settings=ring)  # reads bank[:, 3]
        torch.cuda.synchronize()
        assert torch.equal(bits(bank[:, 3]), bits(prefix))
        assert_close_bf16(out2, reference(out1, bank, cw, ow, 4))


def _num_sms():
    return torch.cuda.get_device_properties(0).multi_processor_count


@pytest.mark.parametrize("stages", [2, 3, 4, 6, 8])
@pytest.mark.parametrize("per_sm", [1, 2])
@pytest.mark.parametrize("nvb", [0, 3, 8])
def test_ring_depths_and_programs_per_sm(stages, per_sm, nvb):
    """The row ring at 2 to 8 slots (8 x 16 KB: one program an SM fits), 1 or 2 programs
    per SM, many tokens a program (T = 5000: each slot's barrier passes many phases)."""
    t, nb = 5000, 9
    prefix, bank, cw, ow = inputs(t, nb, seed=stages * 10 + per_sm + nvb * 100)
    before = bank.clone()
    out = mod.attn_res(prefix, bank, cw, ow, nvb=nvb, write_prefix=True,
                       settings=settings(ring_stages=stages, ring_programs_per_sm=per_sm))
    torch.cuda.synchronize()
    assert_close_bf16(out, reference(prefix, before, cw, ow, nvb))
    expected = before.clone()
    expected[:, nvb] = prefix
    assert torch.equal(bits(bank), bits(expected))


@pytest.mark.parametrize("write_prefix", [False, True])
@pytest.mark.parametrize("nvb", [0, 1, 3, 7])
@pytest.mark.parametrize("t", [1, 2, 7, 32])
def test_cluster_kernel_small_t(t, nvb, write_prefix):
    """Small T runs the cluster kernel (a token per cluster of 4 or 2 programs, H / S columns
    each): fresh random inputs against the float64 reference; the snapshot bit for bit."""
    if not mod.use_cluster_kernel(t, H, nvb, _num_sms()):  # T * S <= SMs (H200: T <= 66)
        pytest.skip(f"T = {t} runs the persistent kernel on {_num_sms()} SMs")
    _check_fresh(t, nvb, write_prefix, seed=1000 + nvb * 100 + t + write_prefix)


@pytest.mark.parametrize("size,warps", [(16, 2), (16, 4), (4, 8), (2, 8)])
@pytest.mark.parametrize("nvb", [1, 4, 8])
@pytest.mark.parametrize("t", [1, 33, 100])
def test_cluster_sizes(size, warps, nvb, t):
    """The cluster kernel with S programs a token (16: the non-portable cluster size) on W
    warps, at any T: fresh inputs against the reference, the snapshot bit for bit."""
    s = settings(cluster_max_waves=1000, cluster_size=size, cluster_many_size=size,
                 cluster_warps=warps, cluster_many_warps=warps)
    assert mod.use_cluster_kernel(t, H, nvb, _num_sms(), s)
    _check_fresh(t, nvb, True, seed=5000 + size * 100 + nvb * 10 + t, settings=s)


def _check_fresh(t, nvb, write_prefix, seed, settings=mod.SETTINGS):
    """Fresh random inputs (K3's bank of 9 rows) against the float64 reference, into a NaN
    filled output; the snapshot bit for bit and the other bank rows untouched."""
    prefix, bank, cw, ow = inputs(t, 9, seed=seed)
    before = bank.clone()
    want = reference(prefix, before, cw, ow, nvb)
    out = torch.full((t, H), float("nan"), device="cuda", dtype=torch.bfloat16)
    mod.attn_res(prefix, bank, cw, ow, out, nvb=nvb, eps=EPS, write_prefix=write_prefix,
                 settings=settings)
    torch.cuda.synchronize()
    assert_close_bf16(out, want)
    expected = before.clone()
    if write_prefix:
        expected[:, nvb] = prefix
    assert torch.equal(bits(bank), bits(expected))


@pytest.mark.parametrize("write_prefix", [False, True])
@pytest.mark.parametrize("t", [1, 7, 133, 300])
@pytest.mark.parametrize("h,nvb", [(8, 0), (1000, 3), (4104, 8), (H, 5), (16384, 1)])
def test_every_accepted_shape(launch_mode, t, h, nvb, write_prefix):
    """Hidden sizes other than K3's, JIT-compiled and through the bundle (whose cluster,
    token and ring specializations are built for H = 7168's tiles: the others take its
    generic ring, the row in a 16384 tile), every kernel the token counts select (the
    cluster and token kernels below the SM count): fresh inputs (K3's bank of 9 rows)
    against the float64 reference; the snapshot bit for bit, the other bank rows
    untouched."""
    prefix, bank, cw, ow = inputs(t, 9, h=h, seed=h + 10 * t + nvb + write_prefix)
    before = bank.clone()
    want = reference(prefix, before, cw, ow, nvb)
    out = torch.full((t, h), float("nan"), device="cuda", dtype=torch.bfloat16)
    mod.attn_res(prefix, bank, cw, ow, out, nvb=nvb, eps=EPS, write_prefix=write_prefix)
    torch.cuda.synchronize()
    assert_close_bf16(out, want)
    expected = before.clone()
    if write_prefix:
        expected[:, nvb] = prefix
    assert torch.equal(bits(bank), bits(expected))


@pytest.mark.parametrize("write_prefix", [False, True])
@pytest.mark.parametrize("nvb", [0, 1, 3, 4, 8])
@pytest.mark.parametrize("t", [1, 7, 64, 133, 300])
def test_token_kernel(t, nvb, write_prefix):
    """The token kernel (one program per token, its rows whole; the cluster kernel off and
    every T and nvb in its range): fresh random inputs against the float64 reference; the
    snapshot bit for bit; T = 133 and 300 take two and three waves of one program an SM."""
    s = settings(cluster_max_waves=0, token_max_waves=4, token_max_rows=8)
    assert mod.use_token_kernel(t, H, nvb, _num_sms(), s)
    _check_fresh(t, nvb, write_prefix, seed=3000 + nvb * 100 + t + write_prefix, settings=s)


@pytest.fixture(params=["cluster", "token"])
def few_tokens(request):
    """The settings of a few-token kernel: the cluster kernel (the default), or (the cluster
    kernel off) the token kernel."""
    if request.param == "token":
        return settings(cluster_max_waves=0, token_max_waves=1, token_max_rows=8)
    return mod.SETTINGS


@pytest.mark.parametrize("nvb", [1, 5, 8])
def test_cluster_kernel_matches_persistent(nvb):
    """The two kernels on the same inputs: both within the reference's tolerance, and close
    to each other (their fp32 sums are ordered differently)."""
    prefix, bank, cw, ow = inputs(16, 9, seed=77 + nvb)
    a = mod.attn_res(prefix, bank, cw, ow, nvb=nvb)
    b = mod.attn_res(prefix, bank, cw, ow, nvb=nvb,
                     settings=settings(cluster_max_waves=0, token_max_waves=0))
    torch.cuda.synchronize()
    want = reference(prefix, bank, cw, ow, nvb)
    assert_close_bf16(a, want)
    assert_close_bf16(b, want)


def test_few_tokens_strided_views_and_bit_copy(few_tokens):
    """Row-strided views, a bank inside a wider buffer, every bf16 bit pattern in the
    snapshot (NaN payloads, infinities, -0, subnormals)."""
    t, nb, nvb = 7, 6, 4
    p, b, cw, ow = inputs(t, nb, seed=8)
    pbuf = torch.zeros(t, H + 64, device="cuda", dtype=torch.bfloat16)
    pbuf[:, :H] = p
    bbuf = torch.zeros(t, nb + 2, H, device="cuda", dtype=torch.bfloat16)
    bbuf[:, 1:nb + 1] = b
    obuf = torch.full((t, H + 128), 7.0, device="cuda", dtype=torch.bfloat16)
    mod.attn_res(pbuf[:, :H], bbuf[:, 1:nb + 1], cw, ow, obuf[:, :H], nvb=nvb,
                 write_prefix=True, settings=few_tokens)
    torch.cuda.synchronize()
    assert_close_bf16(obuf[:, :H], reference(p, b, cw, ow, nvb))
    assert torch.all(obuf[:, H:] == 7.0)
    assert torch.equal(bits(bbuf[:, nvb + 1]), bits(p))
    assert torch.all(bbuf[:, 0] == 0) and torch.all(bbuf[:, nb + 1] == 0)
    raw = torch.randint(-(1 << 15), 1 << 15, (t, H), device="cuda", dtype=torch.int32)
    raw = raw.to(torch.int16).view(torch.bfloat16)
    bank = b.clone()
    mod.attn_res(raw, bank, cw, ow, nvb=2, write_prefix=True, settings=few_tokens)
    torch.cuda.synchronize()
    assert torch.equal(bits(bank[:, 2]), bits(raw))
    assert torch.equal(bits(bank[:, :2]), bits(b[:, :2]))
    assert torch.equal(bits(bank[:, 3:]), bits(b[:, 3:]))


def test_few_tokens_chained_launches(few_tokens):
    """PDL (with clusters): each launch waits for the previous grid before its first load."""
    t, nb = 4, 9
    x, bank, cw, ow = inputs(t, nb, seed=9)
    y = torch.randn_like(x)
    for _ in range(20):
        prefix = x + y
        out1 = mod.attn_res(prefix, bank, cw, ow, nvb=3, write_prefix=True, settings=few_tokens)
        out2 = mod.attn_res(out1, bank, cw, ow, nvb=4, settings=few_tokens)
        torch.cuda.synchronize()
        assert torch.equal(bits(bank[:, 3]), bits(prefix))
        assert_close_bf16(out2, reference(out1, bank, cw, ow, 4))



def test_zero_tokens():
    e = torch.empty(0, H, device="cuda", dtype=torch.bfloat16)
    out = mod.attn_res(e, torch.empty(0, 9, H, device="cuda", dtype=torch.bfloat16),
                       torch.ones(H, device="cuda", dtype=torch.bfloat16),
                       torch.ones(H, device="cuda", dtype=torch.bfloat16), nvb=3)
    assert out.shape == (0, H)


def _args(t=4, nb=9, h=H, dtype=torch.bfloat16):
    return [torch.zeros(t, h, device="cuda", dtype=dtype),
            torch.zeros(t, nb, h, device="cuda", dtype=dtype),
            torch.zeros(h, device="cuda", dtype=dtype),
            torch.zeros(h, device="cuda", dtype=dtype)]


def _replace(i, value):
    a = _args()
    a[i] = value
    return a


@pytest.mark.parametrize("bad,kw", [
    (lambda: _args(), {"nvb": 9}),
    (lambda: _args(), {"nvb": -1}),
    (lambda: _args(nb=4), {"nvb": 4, "write_prefix": True}),
    (lambda: _args(nb=4), {"nvb": 5}),
    (lambda: _replace(0, torch.zeros(4, H, device="cuda", dtype=torch.float16)), {"nvb": 2}),
    (lambda: _replace(1, torch.zeros(4, 9, H, device="cuda")), {"nvb": 2}),
    (lambda: _replace(2, torch.zeros(H, device="cuda")), {"nvb": 2}),
    (lambda: _replace(1, torch.zeros(3, 9, H, device="cuda", dtype=torch.bfloat16)), {"nvb": 2}),
    (lambda: _replace(2, torch.zeros(H - 8, device="cuda", dtype=torch.bfloat16)), {"nvb": 2}),
    (lambda: _replace(0, torch.zeros(4, 2 * H, device="cuda", dtype=torch.bfloat16)[:, ::2]),
     {"nvb": 2}),
    (lambda: _args(h=100), {"nvb": 2}),
])
def test_bad_arguments_raise_before_launch(bad, kw):
    args = bad()
    with pytest.raises((TypeError, ValueError)):
        mod.attn_res(*args, **kw)
    torch.cuda.synchronize()
