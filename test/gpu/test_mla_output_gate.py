"""mla_output_gate on the GPU: bit-exact with torch's ``x * torch.sigmoid(gate)`` on bf16
tensors (docs/kernels/mla_output_gate.md), over large random inputs and every extreme."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import mla_output_gate as mod  # noqa: E402


def reference(x, gate):
    return x * torch.sigmoid(gate)  # bf16 in, bf16 out: torch rounds sigmoid to bf16 first


def run(x, gate):
    out = torch.full_like(x, float("nan"))
    mod.mla_output_gate(x, gate, out)
    torch.cuda.synchronize()
    return out


def assert_bits_equal(out, ref):
    a, b = out.view(torch.int16), ref.view(torch.int16)
    bad = (a != b) & ~(torch.isnan(out) & torch.isnan(ref))
    n = int(bad.sum())
    assert n == 0, (f"{n} of {out.numel()} differ; first: out={out.flatten()[bad.flatten()][:4]}"
                    f" ref={ref.flatten()[bad.flatten()][:4]}")


@pytest.mark.parametrize("t", [1, 64, 4096, 16384])
def test_bit_exact_k3_shapes(t):
    x = torch.randn(t, 12 * 128, device="cuda", dtype=torch.bfloat16)
    g = (torch.randn(t, 12 * 128, device="cuda") * 4).to(torch.bfloat16)
    assert_bits_equal(run(x, g), reference(x, g))


def test_bit_exact_every_bf16_gate():
    """All 65536 bf16 gate patterns (incl. +-inf, NaN, subnormals), each against 64 random x."""
    g = torch.arange(-(1 << 15), 1 << 15, device="cuda", dtype=torch.int32).to(torch.int16)
    g = g.view(torch.bfloat16).repeat(64)
    x = (torch.randn(g.numel(), device="cuda") * torch.exp(
        torch.randn(g.numel(), device="cuda") * 8)).to(torch.bfloat16)
    assert_bits_equal(run(x, g), reference(x, g))


def test_bit_exact_wide_random():
    n = 1 << 24
    x = torch.randint(-(1 << 15), 1 << 15, (n,), device="cuda", dtype=torch.int32)
    x = x.to(torch.int16).view(torch.bfloat16)  # every pattern, inf and NaN included
    g = (torch.randn(n, device="cuda") * 30).to(torch.bfloat16)
    assert_bits_equal(run(x, g), reference(x, g))


@pytest.mark.parametrize("n", [8, 24, 2056, 12 * 128 * 3 + 8])
def test_sizes_not_multiple_of_block(n):
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    assert_bits_equal(run(x, g), reference(x, g))


@pytest.mark.parametrize("n", [8, 2056, 64 * 1536])
def test_unaligned_tensors(launch_mode, n):
    """x, gate and out 2 bytes past a 16-byte boundary (the wrapper requires no alignment;
    the bundle serves them with its generic kernel, issue 22 item 6)."""
    x = torch.randn(n + 8, device="cuda", dtype=torch.bfloat16)[1:n + 1]
    g = (torch.randn(n + 8, device="cuda") * 4).to(torch.bfloat16)[3:n + 3]
    out = torch.full((n + 8,), float("nan"), device="cuda", dtype=torch.bfloat16)[5:n + 5]
    mod.mla_output_gate(x, g, out)
    torch.cuda.synchronize()
    assert_bits_equal(out, reference(x, g))


def test_in_place_and_empty():
    x = torch.randn(64, 1536, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(64, 1536, device="cuda", dtype=torch.bfloat16)
    ref = reference(x, g)
    mod.mla_output_gate(x, g, x)
    assert_bits_equal(x, ref)
    e = torch.empty(0, 1536, device="cuda", dtype=torch.bfloat16)
    assert mod.mla_output_gate(e, e).shape == (0, 1536)


@pytest.mark.parametrize("bad", [
    lambda: (torch.zeros(12, device="cuda", dtype=torch.bfloat16),) * 2,
    lambda: (torch.zeros(16, device="cuda", dtype=torch.float16),) * 2,
    lambda: (torch.zeros(16, device="cuda", dtype=torch.bfloat16),
             torch.zeros(32, device="cuda", dtype=torch.bfloat16)),
    lambda: (torch.zeros(32, device="cuda", dtype=torch.bfloat16)[::2],
             torch.zeros(16, device="cuda", dtype=torch.bfloat16)),
])
def test_bad_arguments_raise_before_launch(bad):
    with pytest.raises((TypeError, ValueError)):
        mod.mla_output_gate(*bad())
    torch.cuda.synchronize()
