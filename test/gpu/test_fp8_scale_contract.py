"""The FP8 scales and codes of per_token_group_quant_fp8, mla_output_gate_fp8 and
mla_kv_scatter_fp8 on the GPU, bit for bit against the contract of docs/kernels/quant.md:

    s = max(absmax, 1e-10) / 448          fp32, the quotient correctly rounded
    q = sat_e4m3(x / s)                   the fp32 quotient correctly rounded, then RNE

The reference is written from the math on the CPU: the float64 quotient of the fp32 operands
rounded to fp32 is the correctly rounded fp32 quotient (53 >= 2 * 24 + 2 bits), divided by a
tensor (torch divides by a Python scalar through its reciprocal; on CUDA in fp32, which is
RN(absmax * RN(1/448)), one ulp off for about half of the absmax values: the tests show the
inputs hit such values). Inputs: groups (rows for the output gate) of magnitudes 2^-140 to
2^120, one group per bf16 absmax mantissa, all-zero groups. Each test runs JIT-compiled and
through the bundle (``launch_mode``)."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import mla_kv, mla_output_gate, quant  # noqa: E402

F8 = torch.float8_e4m3fn


def contract_scale(absmax):
    """max(absmax, 1e-10) / 448 (fp32 absmax, any device) correctly rounded, on the CPU."""
    a = absmax.float().cpu().clamp(min=1e-10).double()
    return (a / torch.full_like(a, 448.0)).float()


def contract_codes(x, s):
    """sat_e4m3(x / s) of fp32 x and s (broadcast), on the CPU: the correctly rounded fp32
    quotient, clamped to +-448, to e4m3 (round to nearest even)."""
    q = x.float().cpu().double() / s.cpu().double()
    return q.float().clamp(-448, 448).to(F8)


def groups(t, n, group, seed):
    """bf16 [t, n]: each group of ``group`` values random with its own magnitude 2^e (e in
    -140..120: bf16 subnormals up to near bf16's max), every 7th group zero, and groups 1,
    8, 15, ... led by each bf16 mantissa 1 + k/128 (its absmax) times 2^e."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    ng = t * n // group
    e = torch.randint(-140, 121, (ng, 1), device="cuda", generator=g).float()
    x = torch.randn(ng, group, device="cuda", generator=g).clamp(-1.9, 1.9) * torch.exp2(e)
    mant = 1 + torch.arange(ng, device="cuda") % 128 / 128.0
    lead = (torch.arange(ng, device="cuda") % 7) == 1
    x[:, 0] = torch.where(lead, mant * torch.exp2(e[:, 0]) * 2, x[:, 0])
    x[torch.arange(ng, device="cuda") % 7 == 0] = 0
    return x.view(t, n).to(torch.bfloat16)


def assert_bits(got, want, what):
    got, want = got.cpu().contiguous(), want.cpu().contiguous()
    if got.dtype == torch.float32:
        bad = got.view(torch.int32) != want.view(torch.int32)
    else:
        bad = got.view(torch.uint8) != want.view(torch.uint8)
    n = int(bad.sum())
    if n:
        i = bad.flatten().nonzero()[:4].flatten()
        raise AssertionError(f"{what}: {n} of {bad.numel()} differ; first (kernel, contract): "
                             f"{list(zip(got.flatten()[i].tolist(), want.flatten()[i].tolist()))}")


def assert_hits_the_reciprocal_product(absmax, s):
    """Where the scale differs from torch's CUDA ``absmax / 448`` (the reciprocal product):
    the contract's values are exercised (about half of them)."""
    product = (absmax.float().clamp(min=1e-10).cuda() / 448.0).cpu()
    assert float((product.view(torch.int32) != s.view(torch.int32)).float().mean()) > 0.1


@pytest.mark.parametrize("ue8m0", [False, True])
def test_per_token_group_quant_fp8(launch_mode, ue8m0):
    x = groups(96, 7168, 128, 1)
    q, s = quant.per_token_group_quant_fp8(x, 128, ue8m0=ue8m0)
    torch.cuda.synchronize()
    absmax = x.float().view(96, 56, 128).abs().amax(-1)
    want_s = contract_scale(absmax)
    if ue8m0:  # 2^ceil(log2(s)): s = m 2^e with m in [0.5, 1) is 2^e unless m = 0.5
        m, e = torch.frexp(want_s)
        want_s = torch.where(m == 0.5, want_s, torch.ldexp(torch.ones_like(want_s), e))
    else:
        assert_hits_the_reciprocal_product(absmax, want_s)
    assert_bits(s, want_s, "s")
    assert_bits(q, contract_codes(x.view(96, 56, 128), want_s[..., None]).view(96, 7168), "q")


@pytest.mark.parametrize("t", [64, 4096])  # the bundle's few-row and many-row kernels
def test_mla_output_gate_fp8(launch_mode, t):
    """One scale a row (1536 values): rows of one magnitude each, from groups(); gates
    random; y = bf16(x * bf16(sigmoid(gate))) as torch computes it (bit-exact with the
    kernel: test_fp8_quant.py)."""
    x = groups(t, 1536, 1536, 2)
    gate = (torch.randn(t, 1536, device="cuda") * 4).to(torch.bfloat16)
    q, s = mla_output_gate.mla_output_gate_fp8(x, gate)
    torch.cuda.synchronize()
    y = (x * torch.sigmoid(gate)).float()
    absmax = y.abs().amax(-1)
    want_s = contract_scale(absmax)
    assert_hits_the_reciprocal_product(absmax, want_s)
    assert_bits(s, want_s, "s")
    assert_bits(q, contract_codes(y, want_s[:, None]), "q")


def test_mla_kv_scatter_fp8(launch_mode):
    """The 4 scales and 512 codes of each written row (656-byte rows at distinct loc)."""
    t, slots = 2048, 4096
    kv_c = groups(t, 512, 128, 3)
    k_pe = torch.randn(t, 64, device="cuda").to(torch.bfloat16)
    loc = torch.randperm(slots, device="cuda")[:t]
    cache = torch.zeros(slots, 656, device="cuda", dtype=torch.uint8)
    mla_kv.mla_kv_scatter_fp8(kv_c, k_pe, loc, cache)
    torch.cuda.synchronize()
    rows = cache[loc]
    s = rows[:, 512:528].contiguous().view(torch.float32)
    absmax = kv_c.float().view(t, 4, 128).abs().amax(-1)
    want_s = contract_scale(absmax)
    assert_hits_the_reciprocal_product(absmax, want_s)
    assert_bits(s, want_s, "s")
    want_q = contract_codes(kv_c.view(t, 4, 128), want_s[..., None]).view(t, 512)
    assert_bits(rows[:, :512].contiguous().view(F8), want_q, "q")
