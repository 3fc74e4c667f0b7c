"""situ_and_mul on the GPU against a torch reference written from docs/kernels/situ.md:

    gate = beta * tanh(g / beta) * sigmoid(g)
    up   = linear_beta * tanh(u / linear_beta)   (or u when linear_beta is None)
    out  = bf16(gate * up), all math in fp32.

Fresh random inputs every test; the output is poisoned with NaN before the launch so that an
unwritten element fails; tolerance: one bf16 ulp of the reference.
"""

import os

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import situ, situ_quant  # noqa: E402

import test_fp8_quant as fp8  # noqa: E402  (the SiTU masked quant reference and checks)


def reference(x, beta, linear_beta):
    d = x.shape[1] // 2
    g = x[:, :d].float()
    u = x[:, d:].float()
    gate = beta * torch.tanh(g / beta) * (1.0 / (1.0 + torch.exp(-g)))
    up = u if linear_beta is None else linear_beta * torch.tanh(u / linear_beta)
    return (gate * up).to(torch.bfloat16)


def assert_bf16_close(out, ref):
    assert not torch.isnan(out).any(), "unwritten (NaN-poisoned) or NaN elements in the output"
    # One bf16 ulp: relative 2^-7 (7 stored mantissa bits), plus the subnormal floor.
    torch.testing.assert_close(out.float(), ref.float(), rtol=2.0**-7, atol=1e-6)


def random_input(n, d, dtype, pad=0, scale=4.0):
    """[n, 2d] (a view of [n, 2d + pad] when pad > 0: row-strided like a fused GEMM output)."""
    full = torch.randn(n, 2 * d + pad, device="cuda", dtype=torch.float32) * scale
    full = full.to(dtype)
    return full[:, : 2 * d] if pad else full


def run(x, beta, linear_beta):
    out = torch.full((x.shape[0], x.shape[1] // 2), float("nan"), device="cuda",
                     dtype=torch.bfloat16)
    situ.situ_and_mul(x, out, beta=beta, linear_beta=linear_beta)
    torch.cuda.synchronize()
    return out


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("linear_beta", [25.0, None])
@pytest.mark.parametrize("n,d", [(1, 7168), (64, 7168), (333, 7168), (5, 8), (3, 1032),
                                 (17, 3000 - 3000 % 8), (4096, 256)])
def test_matches_reference(dtype, linear_beta, n, d):
    if dtype == torch.float32 and d % 4:
        pytest.skip("fp32 input needs D % 4 == 0")
    x = random_input(n, d, dtype)
    assert_bf16_close(run(x, 4.0, linear_beta), reference(x, 4.0, linear_beta))


@pytest.mark.parametrize("dtype,pad", [(torch.bfloat16, 8), (torch.bfloat16, 64),
                                       (torch.float32, 4)])
def test_row_strided_input(dtype, pad):
    x = random_input(129, 7168, dtype, pad=pad)
    assert x.stride(0) == 2 * 7168 + pad
    assert_bf16_close(run(x, 4.0, 25.0), reference(x, 4.0, 25.0))


def test_other_betas_and_extremes():
    x = random_input(64, 2048, torch.bfloat16, scale=60.0)  # saturates tanh and sigmoid
    x[0, :16] = 0.0
    assert_bf16_close(run(x, 2.5, 7.0), reference(x, 2.5, 7.0))


def test_n_zero_launches_nothing():
    x = torch.empty(0, 2 * 7168, device="cuda", dtype=torch.bfloat16)
    out = situ.situ_and_mul(x)
    assert out.shape == (0, 7168)


def test_repeatable():
    x = random_input(256, 7168, torch.bfloat16)
    a = run(x, 4.0, 25.0)
    b = run(x, 4.0, 25.0)
    assert torch.equal(a, b)


@pytest.mark.parametrize("bad,exc", [
    (lambda: torch.randn(4, 64, device="cuda", dtype=torch.float16), TypeError),
    (lambda: torch.randn(4, 63, device="cuda", dtype=torch.bfloat16), ValueError),
    (lambda: torch.randn(4, 2 * 12, device="cuda", dtype=torch.bfloat16), ValueError),
    (lambda: torch.randn(64, 4, device="cuda", dtype=torch.bfloat16).t(), ValueError),
    (lambda: torch.randn(4, 64, dtype=torch.bfloat16), (TypeError, ValueError)),
])
def test_bad_arguments_raise_before_launch(bad, exc):
    with pytest.raises(exc):
        situ.situ_and_mul(bad())
    torch.cuda.synchronize()  # nothing reached the GPU in a broken state


def test_bad_out_raises():
    x = random_input(4, 64, torch.bfloat16)
    with pytest.raises((TypeError, ValueError)):
        situ.situ_and_mul(x, torch.empty(4, 32, device="cuda", dtype=torch.bfloat16))
    with pytest.raises((TypeError, ValueError)):
        situ.situ_and_mul(x, torch.empty(4, 64, device="cuda", dtype=torch.float32))
    with pytest.raises((TypeError, ValueError)):
        situ.situ_and_mul(x, torch.empty(64, 4, device="cuda", dtype=torch.bfloat16).t())


@pytest.mark.skipif(not os.environ.get("KILN_BUNDLE"), reason="KILN_BUNDLE names no bundle")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("has_linear_beta", [True, False])
def test_precompiled_bundle(dtype, has_linear_beta):
    """The AOT bundle (make bundle) holds the same kernels; launch them without the compiler."""
    from kiln.runtime import Bundle

    bundle = Bundle(os.environ["KILN_BUNDLE"])
    key = "bf16" if dtype == torch.bfloat16 else "f32"
    block, _ = situ.launch_config(key)
    kernel = bundle.kernel("situ_and_mul", BLOCK=block, HAS_LINEAR_BETA=has_linear_beta)
    n, d = 300, 7168
    x = random_input(n, d, dtype)
    out = torch.full((n, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    lin = 25.0 if has_linear_beta else 1.0
    kernel[(n, (d + block - 1) // block)](x, out, d, x.stride(0), out.stride(0), 4.0, 0.25,
                                          lin, 1.0 / lin)
    torch.cuda.synchronize()
    assert_bf16_close(out, reference(x, 4.0, 25.0 if has_linear_beta else None))


def test_pdl_chain_reads_the_previous_kernels_output():
    """situ_and_mul launches with programmatic dependent launch and waits (griddepcontrol)
    before reading: a chain of launches, each reading the previous one's output, stays
    correct."""
    n, d = 512, 4096
    x = random_input(n, 2 * d, torch.bfloat16)  # [n, 4d]
    outs = []
    cur = x
    for _ in range(4):
        half = cur.shape[1] // 2
        out = torch.full((n, half), float("nan"), device="cuda", dtype=torch.bfloat16)
        situ.situ_and_mul(cur, out)
        outs.append(out)
        cur = out
    torch.cuda.synchronize()
    assert situ.situ_and_mul_kernel.compile(
        situ._signature("bf16"), {"BLOCK": 2048, "HAS_LINEAR_BETA": True}, upto="tile"
    ).meta["pdl"] is True
    # each step recomputed from the kernel's own previous output: exact chain semantics
    expect = x
    for out in outs:
        expect = reference(expect, 4.0, 25.0)
        assert_bf16_close(out, expect)
        expect = out


# ---------------------------------------------------------------------------
# Every accepted input, JIT-compiled and through the bundle (launch_mode): the bundle serves
# the ones its fast specializations do not assume (D or a row stride not a multiple of 16
# elements, an input or output not 16-byte aligned) with its generic kernels
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("linear_beta", [25.0, None])
@pytest.mark.parametrize("n,d,pad,offset", [
    (300, 7168, 0, 0),   # K3: the fast specialization
    (7, 2056, 0, 0),     # D = 2056: not a multiple of 16
    (64, 7168, 8, 0),    # a row stride of 2D + 24 elements: not a multiple of 16
    (5, 8, 0, 0),        # the smallest D
    (33, 1024, 0, 1),    # input and output one element past a 16-byte boundary
])
def test_every_accepted_input(launch_mode, dtype, linear_beta, n, d, pad, offset):
    """The wrapper's results against the reference in both modes; the output's neighbours
    (its padded rows, the element before it) untouched."""
    full = (torch.randn(n, 2 * d + pad + 16, device="cuda") * 4).to(dtype)
    x = full[:, offset:offset + 2 * d]
    out_full = torch.full((n, d + 16), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = out_full[:, offset:offset + d]
    assert x.stride(0) == 2 * d + pad + 16 and (x.data_ptr() % 16 == 0) == (offset == 0)
    situ.situ_and_mul(x, out, linear_beta=linear_beta)
    torch.cuda.synchronize()
    assert_bf16_close(out, reference(x, 4.0, linear_beta))
    rest = torch.ones_like(out_full, dtype=torch.bool)
    rest[:, offset:offset + d] = False
    assert bool(torch.isnan(out_full[rest]).all()), "wrote outside the output"


@pytest.mark.parametrize("ue8m0", [False, True])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("pad", [0, 8])
def test_masked_post_quant_every_accepted_input(launch_mode, ue8m0, interleaved, pad):
    """situ_and_mul_masked_post_quant in both modes against test_fp8_quant.py's reference
    and checks: contiguous rows (the fast specialization) and rows padded by 8 elements (row
    and expert strides multiples of 8 elements, not 16: the generic kernel)."""
    e, t_pad, n = 4, 7, fp8.MOE_INTER
    x, masked_m = fp8.situ_inputs(e, t_pad, n, [7, 0, 3, 100])
    if pad:
        x = torch.cat([x, torch.zeros(e, t_pad, pad, device="cuda", dtype=x.dtype)],
                      dim=-1)[..., :2 * n]
        assert x.stride(1) == 2 * n + pad
    q = torch.full((e, t_pad, n), 0x5A, device="cuda", dtype=torch.uint8).view(fp8.F8)
    if ue8m0:
        s = torch.full((e, n // 512, t_pad), 0x7E7E7E7E, device="cuda", dtype=torch.int32)
    else:
        s = torch.full((e, t_pad, n // 128), float("nan"), device="cuda")
    q_poison, s_poison = q.clone(), s.clone()
    out = situ_quant.situ_and_mul_masked_post_quant(x, masked_m, q, s, scale_ue8m0=ue8m0,
                                                    interleaved=interleaved)
    torch.cuda.synchronize()
    assert out[0] is q and out[1] is s
    fp8.check_situ(x, masked_m, q, s, ue8m0, interleaved, q_poison, s_poison)
