"""The Kimi K3 FP8/FP4 quantization kernels on the GPU against torch references written from
docs/kernels: per_token_group_quant_fp8 and quant_mxfp4 (quant.md), SiTU masked post-quant
(situ.md), MLA output gate FP8 (mla_output_gate.md), MLA FP8 KV scatter (mla_cache.md). Fresh
random inputs with a zero row, a row of one repeated value and large magnitudes; T = 0, 1, odd
and K3 sizes; strided inputs; poison in everything a kernel must not write."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import mla_kv, mla_output_gate, quant, situ_quant  # noqa: E402

F8 = torch.float8_e4m3fn
HIDDEN, MOE_INTER, H_LOCAL = 7168, 3072, 12 * 128


# ---------------------------------------------------------------------------
# References (docs/kernels)
# ---------------------------------------------------------------------------

def true_div(a, b):
    """IEEE a / b. Not ``a / 448``: torch's CUDA division by a Python scalar multiplies by
    the reciprocal (aten div_true_kernel_cuda, ``is_cpu_scalar``), which is off by one ulp
    for about half of all bf16 absmax values."""
    return a / torch.full_like(a, b) if isinstance(b, (int, float)) else a / b


def ref_scale(absmax, ue8m0=False):
    s = true_div(absmax.float().clamp(min=1e-10), 448.0)
    if ue8m0:  # 2 ** ceil(log2(s)) exactly: s = m * 2^e, m in [0.5, 1); m = 0.5: s = 2^(e-1)
        m, e = torch.frexp(s)
        e = torch.where(m == 0.5, e - 1, e).to(torch.int32)  # s >= 1e-10/448: normal
        s = ((e + 127) << 23).view(torch.float32)  # 2^e
    return s


def ref_group_quant(x, group, ue8m0=False):
    """x [..., D] -> (q e4m3 [..., D], s fp32 [..., D/group]); IEEE x / s, clamp, RNE."""
    xf = x.float()
    xg = xf.reshape(*xf.shape[:-1], xf.shape[-1] // group, group)
    s = ref_scale(xg.abs().amax(-1), ue8m0)
    q = (xg / s[..., None]).clamp(-448, 448).to(F8)
    return q.reshape(xf.shape), s


def ref_situ(x, n, interleaved=False, beta=4.0, lin=25.0):
    xf = x.float()
    if interleaved:
        c = xf.reshape(*xf.shape[:-1], -1, 2, 8)
        g = c[..., 0, :].reshape(*xf.shape[:-1], n)
        u = c[..., 1, :].reshape(*xf.shape[:-1], n)
    else:
        g, u = xf[..., :n], xf[..., n:]
    return beta * torch.tanh(g / beta) * torch.sigmoid(g) * (lin * torch.tanh(u / lin))


def fp8_step(v):
    """The spacing of e4m3 numbers at |v| (subnormal spacing 2^-9 below 2^-6)."""
    a = v.abs().float().clamp(min=2.0**-6)
    return torch.exp2(torch.floor(torch.log2(a)) - 3)


def assert_scales_equal(s, ref, what="s"):
    """Bit equality, naming the first differing entries (kernel vs reference)."""
    bad = s.view(torch.int32) != ref.view(torch.int32)
    n = int(bad.sum())
    if n:
        idx = bad.nonzero()[:4].tolist()
        pairs = [(i, float(s[tuple(i)]), float(ref[tuple(i)])) for i in idx]
        raise AssertionError(f"{what}: {n} of {s.numel()} differ; first (index, kernel, "
                             f"reference): {pairs}")


def assert_bytes_equal(a, b, what):
    a8, b8 = a.view(torch.uint8), b.view(torch.uint8)
    bad = a8 != b8
    n = int(bad.sum())
    assert n == 0, f"{what}: {n} of {a8.numel()} bytes differ"


def assert_dequant_within_one_step(q, s_expanded, x_ref, slack=None):
    """|q * s - x| <= one fp8 step at x/s (times s), plus an optional slack tensor."""
    deq = q.float() * s_expanded
    tol = fp8_step(x_ref / s_expanded) * s_expanded
    if slack is not None:
        tol = tol + slack
    err = (deq - x_ref).abs()
    assert bool((err <= tol).all()), f"dequant error {float((err - tol).max()):.3g} over"


def rows(t, d, scale=3.0, dtype=torch.bfloat16):
    """Random rows with the edge rows: zeros, one repeated value, large magnitudes."""
    x = torch.randn(t, d, device="cuda") * scale
    if t > 1:
        x[1] = 0
    if t > 2:
        x[2] = -5.25
    if t > 3:
        x[3] *= 1e30
    if t > 4:
        x[4, ::7] = 3e38
    return x.to(dtype)


# ---------------------------------------------------------------------------
# per_token_group_quant_fp8
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("t", [1, 7, 129, 4096])
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("column_major", [False, True])
def test_group_quant_exact(t, ue8m0, column_major):
    x = rows(t, HIDDEN)
    q, s = quant.per_token_group_quant_fp8(x, 128, ue8m0=ue8m0, column_major_scales=column_major)
    torch.cuda.synchronize()
    rq, rs = ref_group_quant(x, 128, ue8m0)
    assert q.shape == (t, HIDDEN) and s.shape == (t, HIDDEN // 128)
    if column_major:
        assert s.t().is_contiguous()
    assert_scales_equal(s, rs)
    assert_bytes_equal(q, rq, "q")
    assert_dequant_within_one_step(q, s.repeat_interleave(128, -1), x.float())
    if ue8m0:
        m, _ = torch.frexp(s)
        assert bool((m == 0.5).all())


@pytest.mark.parametrize("group", [32, 64, 128, 256])
def test_group_quant_strided_rows_and_groups(group):
    base = rows(33, HIDDEN + 256)
    x = base[:, 128:128 + HIDDEN]  # a row-strided slice, 256-byte offset
    q, s = quant.per_token_group_quant_fp8(x, group)
    rq, rs = ref_group_quant(x, group)
    assert_scales_equal(s, rs)
    assert_bytes_equal(q, rq, "q")


@pytest.mark.parametrize("group", quant.GROUPS)
@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("t", [1, 7, 129])
def test_group_quant_every_group_and_8_element_strides(launch_mode, group, ue8m0, t):
    """Inputs the bundle serves with its generic kernel (issue 22 item 6): group sizes other
    than 128, rows strided by a multiple of 8 elements that is not one of 16."""
    d = 1024
    x = rows(t, d + 8)[:, :d]
    q = torch.full((t, d), 0x5A, device="cuda", dtype=torch.uint8).view(F8)
    s = torch.full((t, d // group), float("nan"), device="cuda")
    quant.per_token_group_quant_fp8(x, group, ue8m0, q=q, s=s)
    torch.cuda.synchronize()
    rq, rs = ref_group_quant(x, group, ue8m0)
    assert_scales_equal(s, rs)
    assert_bytes_equal(q, rq, "q")


def test_group_quant_into_given_outputs_and_empty():
    x = rows(9, 1024)
    q = torch.full((9, 1024), 0.5, device="cuda").to(F8)
    s = torch.empty(8, 9, device="cuda").t()
    q2, s2 = quant.per_token_group_quant_fp8(x, 128, column_major_scales=True, q=q, s=s)
    assert q2 is q and s2 is s
    rq, rs = ref_group_quant(x, 128)
    assert_scales_equal(s, rs)
    assert_bytes_equal(q, rq, "q")
    e = torch.empty(0, HIDDEN, device="cuda", dtype=torch.bfloat16)
    q0, s0 = quant.per_token_group_quant_fp8(e)
    assert q0.shape == (0, HIDDEN) and s0.shape == (0, HIDDEN // 128)


def test_group_quant_bad_arguments_raise_before_launch():
    x = rows(4, 1024)
    bad = [
        lambda: quant.per_token_group_quant_fp8(x.float()),
        lambda: quant.per_token_group_quant_fp8(x[:, :1000]),
        lambda: quant.per_token_group_quant_fp8(x, 96),
        lambda: quant.per_token_group_quant_fp8(x[:, ::2]),
        lambda: quant.per_token_group_quant_fp8(x.view(-1)[1:1025].view(1, 1024)),
        lambda: quant.per_token_group_quant_fp8(x, q=torch.empty(4, 1024, device="cuda")),
        lambda: quant.per_token_group_quant_fp8(x, s=torch.empty(4, 8, device="cuda"),
                                                column_major_scales=True),
    ]
    for f in bad:
        with pytest.raises((TypeError, ValueError)):
            f()
    torch.cuda.synchronize()


# ---------------------------------------------------------------------------
# SiTU masked post-quant
# ---------------------------------------------------------------------------

#: The kernel's SiTU uses tanh.approx.f32 (2^-10.7 relative) and the fast sigmoid, as situ.py;
#: the reference is torch's precise fp32 math. Relative error allowed on the activation.
SITU_RTOL = 2.0**-8


def situ_inputs(e, t_pad, n, masked):
    x = torch.randn(e, t_pad, 2 * n, device="cuda") * 4
    x[0, 0] = 0  # a zero row
    if t_pad > 1:
        x[0, 1] = 3.0  # one repeated value
    if t_pad > 2:
        x[0, 2] *= 1e6  # large magnitudes: saturated softcaps
    return x.to(torch.bfloat16), torch.tensor(masked, device="cuda", dtype=torch.int32)


def check_situ(x, masked_m, q, s, ue8m0, interleaved, q_poison, s_poison):
    e, t_pad, two_n = x.shape
    n = two_n // 2
    g = n // 128
    a = ref_situ(x, n, interleaved)
    _, rs = ref_group_quant(a, 128)
    for ei in range(e):
        m = min(int(masked_m[ei]), t_pad)
        assert_bytes_equal(q[ei, m:], q_poison[ei, m:], f"masked rows of expert {ei}")
        if ue8m0:
            ex = s[ei].view(torch.uint8).reshape(g // 4, t_pad, 4).permute(1, 0, 2).reshape(
                t_pad, g)
            pex = s_poison[ei].view(torch.uint8).reshape(g // 4, t_pad, 4).permute(
                1, 0, 2).reshape(t_pad, g)
            assert torch.equal(ex[m:], pex[m:]), f"scales of masked rows, expert {ei}"
            scale = torch.exp2(ex[:m].float() - 127)
            want = ref_scale(a[ei, :m].reshape(m, g, 128).abs().amax(-1), True)
            # a power of two between the kernel's (approximate) scale and the reference's
            # moves the rounded exponent by one; allow that only where the reference is that
            # close to the power of two
            r = rs[ei, :m]
            ok = ((scale == want)
                  | ((scale == 2 * want) & (r * (1 + SITU_RTOL) >= want))
                  | ((scale == want / 2) & (r * (1 - SITU_RTOL) <= want / 2)))
            assert bool(ok.all()), f"UE8M0 exponents of expert {ei}"
        else:
            scale = s[ei, :m]
            assert torch.equal(s[ei, m:].view(torch.int32), s_poison[ei, m:].view(torch.int32))
            torch.testing.assert_close(scale, rs[ei, :m], rtol=SITU_RTOL, atol=1e-12)
        se = scale.repeat_interleave(128, -1)
        ar = a[ei, :m]
        assert_dequant_within_one_step(q[ei, :m], se, ar, slack=SITU_RTOL * ar.abs() + 1e-6)


@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("e,t_pad,masked", [
    (1, 1, [1]), (4, 7, [7, 0, 3, 100]), (8, 128, [128, 1, 0, 77, 5, 128, 64, 13]),
])
def test_situ_masked_post_quant(ue8m0, interleaved, e, t_pad, masked):
    n = MOE_INTER
    x, masked_m = situ_inputs(e, t_pad, n, masked)
    q = torch.full((e, t_pad, n), 0x5A, device="cuda", dtype=torch.uint8).view(F8)
    if ue8m0:
        s = torch.full((e, n // 512, t_pad), 0x7E7E7E7E, device="cuda", dtype=torch.int32)
    else:
        s = torch.full((e, t_pad, n // 128), float("nan"), device="cuda")
    q_poison, s_poison = q.clone(), s.clone()
    out = situ_quant.situ_and_mul_masked_post_quant(x, masked_m, q, s, scale_ue8m0=ue8m0,
                                                    interleaved=interleaved)
    torch.cuda.synchronize()
    assert out[0] is q and out[1] is s
    check_situ(x, masked_m, q, s, ue8m0, interleaved, q_poison, s_poison)


def test_situ_masked_post_quant_allocates_and_skips_empty():
    x, masked_m = situ_inputs(2, 16, 1024, [16, 9])
    q, s = situ_quant.situ_and_mul_masked_post_quant(x, masked_m)
    assert q.shape == (2, 16, 1024) and q.dtype == F8 and s.shape == (2, 16, 8)
    q, s = situ_quant.situ_and_mul_masked_post_quant(x, masked_m, scale_ue8m0=True)
    assert s.shape == (2, 2, 16) and s.dtype == torch.int32
    e = torch.empty(0, 16, 2048, device="cuda", dtype=torch.bfloat16)
    situ_quant.situ_and_mul_masked_post_quant(e, torch.empty(0, device="cuda",
                                                             dtype=torch.int32))
    torch.cuda.synchronize()


def test_situ_masked_post_quant_bad_arguments():
    x, masked_m = situ_inputs(2, 4, 512, [4, 4])
    bad = [
        lambda: situ_quant.situ_and_mul_masked_post_quant(x.float(), masked_m),
        lambda: situ_quant.situ_and_mul_masked_post_quant(x, masked_m.long()),
        lambda: situ_quant.situ_and_mul_masked_post_quant(x, masked_m[:1]),
        lambda: situ_quant.situ_and_mul_masked_post_quant(x[..., :640], masked_m),  # N 320
        lambda: situ_quant.situ_and_mul_masked_post_quant(x[..., :512], masked_m,
                                                          scale_ue8m0=True),
        lambda: situ_quant.situ_and_mul_masked_post_quant(
            x, masked_m, output_scale=torch.empty(2, 4, 4, device="cuda"), scale_ue8m0=True),
    ]
    for f in bad:
        with pytest.raises((TypeError, ValueError)):
            f()
    torch.cuda.synchronize()


# ---------------------------------------------------------------------------
# MLA output gate, FP8 variant
# ---------------------------------------------------------------------------

def ref_gate_fp8(x, g):
    y = (x * torch.sigmoid(g)).float()  # bf16 math as torch does it, then fp32
    s = ref_scale(y.abs().amax(-1))
    return true_div(y, s[:, None]).clamp(-448, 448).to(F8), s


GATE_SETTINGS = {  # mla_output_gate.Settings fields
    "default": {},
    "chunks-every-t": dict(fp8_chunks_min_t=0),
    "one-tile": dict(fp8_chunks_min_t=1 << 31),
    "chunks-cap-92": dict(fp8_maxnreg=92, fp8_chunks_min_t=0),
}


def gate_settings(name):
    return dataclasses.replace(mla_output_gate.SETTINGS, **GATE_SETTINGS[name])


def gate_cases():
    """(t, h, knob set) of each distinct FP8 gate launch (``fp8_launch_config``) the knob
    sets give at these shapes, once: most knob sets launch the same kernel at most shapes,
    and a duplicate checks nothing new."""
    cases, seen = [], set()
    for t in (1, 7, 64, 4097):
        for h in (H_LOCAL, 512, 8):
            for name in GATE_SETTINGS:
                key = (t, h, repr(mla_output_gate.fp8_launch_config(h, t, gate_settings(name))))
                if key not in seen:
                    seen.add(key)
                    cases.append((t, h, name))
    return cases


def test_gate_cases_run_every_form_of_the_kernel():
    """The cases launch the row in one tile and in three chunks, at the default register cap
    and at 92."""
    forms = {(c["CHUNKS"], maxnreg) for t, h, name in gate_cases()
             for c, _, maxnreg in [mla_output_gate.fp8_launch_config(h, t, gate_settings(name))]}
    cap = mla_output_gate.SETTINGS.fp8_maxnreg
    assert forms == {(1, cap), (3, cap), (1, 92), (3, 92)}, forms


@pytest.mark.parametrize("t,h,settings", gate_cases())
def test_mla_output_gate_fp8_exact(t, h, settings):
    x = rows(t, h)
    g = (torch.randn(t, h, device="cuda") * 4).to(torch.bfloat16)
    q, s = mla_output_gate.mla_output_gate_fp8(x, g, settings=gate_settings(settings))
    torch.cuda.synchronize()
    rq, rs = ref_gate_fp8(x, g)
    assert_scales_equal(s, rs)
    assert_bytes_equal(q, rq, "q")


@pytest.mark.parametrize("t", [1, 7, 64])
@pytest.mark.parametrize("h", [8, 24, 512, 1544, 3000, 16384])
def test_mla_output_gate_fp8_any_h_stride_and_scale_address(launch_mode, t, h):
    """Inputs the bundle serves with its generic kernel (issue 22 item 6): H other than
    1536 (one tile of the generic kernel, several, partial ones), rows strided by h + 8
    elements, out_s 4 bytes past a 16-byte boundary; gates below -87 in row 0."""
    x = rows(t, h + 8)[:, :h]
    g = (torch.randn(t, h + 8, device="cuda") * 4).to(torch.bfloat16)[:, :h]
    g[0, :4] = torch.tensor([-100.0, -88.5, 90.0, -0.0], device="cuda").to(torch.bfloat16)
    q = torch.full((t, h), 0x5A, device="cuda", dtype=torch.uint8).view(F8)
    s = torch.full((t + 1,), float("nan"), device="cuda")[1:]
    mla_output_gate.mla_output_gate_fp8(x, g, q, s)
    torch.cuda.synchronize()
    rq, rs = ref_gate_fp8(x, g)
    assert_scales_equal(s, rs)
    assert_bytes_equal(q, rq, "q")


@pytest.mark.parametrize("settings", ["default", "chunks-every-t", "one-tile"])
def test_mla_output_gate_fp8_every_bf16_gate(settings):
    """Every bf16 gate pattern (NaN aside: outside the contract), each against 96 random x
    (x * 4^k, k in -20..20), so that the division-free sigmoid is checked for every input it
    can get: the gates >= -87 fill rows of their own (its path), the others the rows before
    them (the IEEE path)."""
    g = torch.arange(-(1 << 15), 1 << 15, device="cuda", dtype=torch.int32).to(torch.int16)
    g = g.view(torch.bfloat16).float()
    g = g[~torch.isnan(g)]
    rows = []
    for part in (g[g < -87], g[g >= -87]):
        pad = -part.numel() % H_LOCAL
        rows.append(torch.cat([part, part.new_zeros(pad)]).view(-1, H_LOCAL))
    gate = torch.cat(rows).to(torch.bfloat16).repeat(96, 1)
    t = gate.shape[0]
    x = (torch.randn(t, H_LOCAL, device="cuda") * torch.pow(
        4.0, torch.randint(-20, 21, (t, 1), device="cuda").float())).to(torch.bfloat16)
    q, s = mla_output_gate.mla_output_gate_fp8(x, gate, settings=gate_settings(settings))
    torch.cuda.synchronize()
    rq, rs = ref_gate_fp8(x, gate)
    assert_scales_equal(s, rs)
    assert_bytes_equal(q, rq, "q")


@pytest.mark.parametrize("settings", ["default", "chunks-every-t", "chunks-cap-92"])
def test_mla_output_gate_fp8_strided_and_empty(settings):
    settings = gate_settings(settings)
    xb = rows(65, 2 * H_LOCAL)
    gb = (torch.randn(65, 2 * H_LOCAL, device="cuda") * 4).to(torch.bfloat16)
    x, g = xb[:, H_LOCAL:], gb[:, :H_LOCAL]
    q = torch.full((65, H_LOCAL), 0x5A, device="cuda", dtype=torch.uint8).view(F8)
    s = torch.full((65,), float("nan"), device="cuda")
    mla_output_gate.mla_output_gate_fp8(x, g, q, s, settings=settings)
    rq, rs = ref_gate_fp8(x, g)
    assert_scales_equal(s, rs)
    assert_bytes_equal(q, rq, "q")
    e = torch.empty(0, H_LOCAL, device="cuda", dtype=torch.bfloat16)
    q0, s0 = mla_output_gate.mla_output_gate_fp8(e, e, settings=settings)
    assert q0.shape == (0, H_LOCAL) and s0.shape == (0,)
    for bad in [(x.float(), g), (x[:, :1532], g[:, :1532]), (x, g[:5]), (x[:, ::2], g[:, ::2])]:
        with pytest.raises((TypeError, ValueError)):
            mla_output_gate.mla_output_gate_fp8(*bad, settings=settings)
    torch.cuda.synchronize()


# ---------------------------------------------------------------------------
# MLA FP8 KV scatter
# ---------------------------------------------------------------------------

def ref_kv_fp8(kv_c, k_pe, loc, cache):
    ref = cache.clone()
    flat = ref.view(-1, 656)
    q, s = ref_group_quant(kv_c, 128)
    row = torch.cat([q.view(torch.uint8), s.contiguous().view(torch.uint8),
                     k_pe.reshape(-1, 64).contiguous().view(torch.uint8)], dim=-1)
    keep = loc >= 0
    flat[loc[keep]] = row[keep]
    return ref


@pytest.mark.parametrize("t", [0, 1, 7, 64, 4097])
@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("store_cache", ["", ".cs"])  # Settings.fp8_store_cache
def test_kv_scatter_fp8_exact(t, strided, store_cache):
    settings = dataclasses.replace(mla_kv.SETTINGS, fp8_store_cache=store_cache)
    slots = max(2 * t, 16)
    if strided:
        proj = rows(t, 576 + 64)
        kv_c, k_pe = proj[:, :512], proj[:, 512:576].unsqueeze(1)
    else:
        kv_c, k_pe = rows(t, 512), torch.randn(t, 64, device="cuda").to(torch.bfloat16)
    loc = torch.randperm(slots, device="cuda")[:t].to(torch.int64)
    if t:
        loc[torch.rand(t, device="cuda") < 0.25] = -1
    cache = torch.randint(0, 256, (slots, 656), device="cuda", dtype=torch.uint8)
    ref = ref_kv_fp8(kv_c, k_pe, loc, cache)
    assert mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, loc, cache, settings=settings) is cache
    torch.cuda.synchronize()
    assert torch.equal(cache, ref)
    # dequantize what was written: within one fp8 step of kv_c
    keep = loc >= 0
    if int(keep.sum()):
        r = cache[loc[keep]]
        deq_s = r[:, 512:528].contiguous().view(torch.float32).repeat_interleave(128, -1)
        assert_dequant_within_one_step(r[:, :512].contiguous().view(F8), deq_s,
                                       kv_c[keep].float())


def test_kv_scatter_fp8_paged_and_all_padded():
    pages, page_size, t = 40, 64, 1000
    cache = torch.randint(0, 256, (pages, page_size, 656), device="cuda", dtype=torch.uint8)
    kv_c, k_pe = rows(t, 512), torch.randn(t, 1, 64, device="cuda").to(torch.bfloat16)
    loc = torch.randperm(pages * page_size, device="cuda")[:t].to(torch.int64)
    ref = ref_kv_fp8(kv_c, k_pe, loc, cache)
    mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, loc, cache)
    assert torch.equal(cache, ref)
    before = cache.clone()
    mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, torch.full_like(loc, -1), cache)
    torch.cuda.synchronize()
    assert torch.equal(cache, before)


@pytest.mark.parametrize("t", [1, 7, 300])
@pytest.mark.parametrize("paged", [False, True])
def test_kv_scatter_fp8_8_element_strides_and_any_loc_address(launch_mode, t, paged):
    """Inputs the bundle serves with its generic kernel (issue 22 item 6): kv_c and k_pe
    rows strided by 520 and 72 elements (multiples of 8, not 16), loc 8 bytes past a
    16-byte boundary."""
    slots = 640
    kv_c = rows(t, 520)[:, :512]
    k_pe = torch.randn(t, 72, device="cuda").to(torch.bfloat16)[:, :64]
    loc = torch.empty(t + 1, device="cuda", dtype=torch.int64)[1:]
    loc.copy_(torch.randperm(slots, device="cuda")[:t])
    if t > 1:
        loc[torch.rand(t, device="cuda") < 0.25] = -1
    shape = (slots // 64, 64, 656) if paged else (slots, 656)
    cache = torch.randint(0, 256, shape, device="cuda", dtype=torch.uint8)
    ref = ref_kv_fp8(kv_c, k_pe, loc, cache)
    mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, loc, cache)
    torch.cuda.synchronize()
    assert torch.equal(cache, ref)


def test_kv_scatter_fp8_bad_arguments():
    kv_c, k_pe = rows(8, 512), torch.randn(8, 64, device="cuda").to(torch.bfloat16)
    loc = torch.arange(8, device="cuda")
    cache = torch.zeros(64, 656, device="cuda", dtype=torch.uint8)
    for args in [(kv_c, k_pe, loc.int(), cache), (kv_c, k_pe, loc, cache.view(torch.bfloat16)),
                 (kv_c[:, :256], k_pe, loc, cache), (kv_c, k_pe, loc, cache[:, :576]),
                 (kv_c, k_pe, loc, torch.zeros(64, 1312, device="cuda",
                                               dtype=torch.uint8)[:, 1:657])]:
        with pytest.raises((TypeError, ValueError)):
            mla_kv.mla_kv_scatter_fp8(*args)
    torch.cuda.synchronize()


# ---------------------------------------------------------------------------
# MXFP4
# ---------------------------------------------------------------------------

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def ref_mxfp4(x):
    """OCP MX from the formula: E8M0 = floor(log2(amax)) - 2 + 127 (clamped to [0, 254], 0 for
    amax = 0); each value / 2^(E8M0 - 127) to the nearest E2M1 (ties to the even code),
    saturating at 6, sign kept; two codes per byte, even element in the low nibble."""
    r, d = x.shape
    xb = x.double().reshape(r, d // 32, 32)
    amax = xb.abs().amax(-1)
    _, ex = torch.frexp(amax)
    byte = torch.where(amax > 0, (ex - 1 - 2 + 127).clamp(0, 254), 0)
    v = xb / torch.exp2(byte.double() - 127)[..., None]
    grid = torch.tensor(E2M1, device=x.device, dtype=torch.float64)
    dist = (v.abs().clamp(max=6)[..., None] - grid).abs()
    dist = dist + 1e-9 * (torch.arange(8, device=x.device) % 2)  # ties: the even code
    code = dist.argmin(-1) | torch.where(v < 0, 8, 0)
    code = code.reshape(r, d)
    return (code[:, 0::2] | (code[:, 1::2] << 4)).to(torch.uint8), byte.to(torch.uint8)


@pytest.mark.parametrize("r", [1, 7, 4096])
def test_quant_mxfp4_exact(r):
    base = rows(r, HIDDEN + 64)
    x = base[:, :HIDDEN]  # row-strided
    if r > 5:
        ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0] * 4, device="cuda")
        x[5, :32] = (ties * torch.tensor([1.0, -1.0] * 16, device="cuda")).to(torch.bfloat16)
    packed, scale = quant.quant_mxfp4(x)
    torch.cuda.synchronize()
    rp, rs = ref_mxfp4(x)
    assert torch.equal(scale, rs)
    assert torch.equal(packed, rp)
    # dequantized: within one E2M1 step (0.5 below 2, 1 below 4, 2 above) times the scale
    grid = torch.tensor(E2M1, device="cuda")
    codes = torch.stack([packed & 15, packed >> 4], -1).reshape(r, HIDDEN).long()
    val = grid[codes & 7] * torch.where(codes >= 8, -1.0, 1.0)
    sc = torch.exp2(scale.float() - 127).repeat_interleave(32, -1)
    a = (x.float() / sc).abs()
    step = torch.where(a < 2, 0.5, torch.where(a < 4, 1.0, 2.0))
    assert bool(((val * sc - x.float()).abs() <= step * sc).all())


MX_SETTINGS = {  # quant.Settings fields
    "default": {},
    "one-block-programs": dict(mx_chunks=0),
    "chunks": dict(mx_chunks_min_t=1),
    "chunks-1-warp": dict(mx_chunks_min_t=1, mx_lookahead=2, mx_rows=32, mx_warps=1),
    "chunks-loads-first": dict(mx_chunks_min_t=1, mx_lookahead=7, mx_rows=128, mx_warps=4),
    "chunks-3": dict(mx_chunks=3, mx_chunks_min_t=1, mx_lookahead=2, mx_maxnreg=80),
    "no-out-cache": dict(mx_out_cache=""),
    "chunks-no-out-cache": dict(mx_chunks_min_t=1, mx_out_cache=""),
}


@pytest.mark.parametrize("r", [1, 7, 4097])
@pytest.mark.parametrize("d", [HIDDEN, 32 * 67])
@pytest.mark.parametrize("settings", list(MX_SETTINGS))
def test_quant_mxfp4_settings_exact(r, d, settings):
    """Every configuration gives the default's bits (D = 32 x 67: partial chunks, R = 4097: a
    partial program of rows)."""
    x = rows(r, d + 64)[:, :d]
    want = quant.quant_mxfp4(x)
    got = quant.quant_mxfp4(x, settings=dataclasses.replace(quant.SETTINGS,
                                                            **MX_SETTINGS[settings]))
    torch.cuda.synchronize()
    assert torch.equal(got[1], want[1])
    assert torch.equal(got[0], want[0])
    rp, rs = ref_mxfp4(x)
    assert torch.equal(got[1], rs) and torch.equal(got[0], rp)


@pytest.mark.parametrize("r", [1, 7, 4097])
def test_quant_mxfp4_8_element_strides(launch_mode, r):
    """Rows strided by a multiple of 8 elements that is not one of 32, which the bundle
    serves with its generic kernel (issue 22 item 6)."""
    x = rows(r, HIDDEN + 8)[:, :HIDDEN]
    packed, scale = quant.quant_mxfp4(x)
    torch.cuda.synchronize()
    rp, rs = ref_mxfp4(x)
    assert torch.equal(scale, rs)
    assert torch.equal(packed, rp)


def test_quant_mxfp4_bad_arguments_and_empty():
    x = rows(4, 256)
    for bad in [lambda: quant.quant_mxfp4(x.float()), lambda: quant.quant_mxfp4(x[:, :240]),
                lambda: quant.quant_mxfp4(x[:, ::2])]:
        with pytest.raises((TypeError, ValueError)):
            bad()
    p, s = quant.quant_mxfp4(torch.empty(0, 256, device="cuda", dtype=torch.bfloat16))
    assert p.shape == (0, 128) and s.shape == (0, 8)
    torch.cuda.synchronize()
