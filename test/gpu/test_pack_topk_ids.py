"""pack_topk_ids on the GPU against the reference of docs/kernels/moe_routing.md (bit-exact):

    out = (ids.int() << 16) | (w.bfloat16().view(torch.int16).int() & 0xFFFF)
"""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import pack_topk_ids as mod  # noqa: E402


def reference(ids, w):
    return (ids.int() << 16) | (w.bfloat16().view(torch.int16).int() & 0xFFFF)


def random_routing(t, k, experts=896):
    ids = torch.randint(0, experts, (t, k), device="cuda", dtype=torch.int32)
    w = torch.randn(t, k, device="cuda", dtype=torch.float32)  # negative weights included
    return ids, w


def run(ids, w):
    out = torch.full(ids.shape, -7, device="cuda", dtype=torch.int32)  # poisoned
    mod.pack_topk_ids(ids, w, out)
    torch.cuda.synchronize()
    return out


@pytest.mark.parametrize("t", [1, 7, 1024, 4097, 16384])
@pytest.mark.parametrize("k", [16, 8, 3])
def test_bit_exact(launch_mode, t, k):
    ids, w = random_routing(t, k)
    assert torch.equal(run(ids, w), reference(ids, w))


@pytest.mark.parametrize("t,k", [(7, 3), (1024, 16)])
def test_rows_of_a_larger_table(launch_mode, t, k):
    """Row 1.. of each tensor (one row of K int32 past a 16-byte boundary for K = 3, not for
    K = 16): the bundle's generic kernel where no 16-byte alignment holds; row 0 of the
    output untouched."""
    ids, w = random_routing(t + 1, k)
    out = torch.full((t + 1, k), -7, device="cuda", dtype=torch.int32)
    mod.pack_topk_ids(ids[1:], w[1:], out[1:])
    torch.cuda.synchronize()
    assert torch.equal(out[1:], reference(ids[1:], w[1:]))
    assert bool((out[0] == -7).all())


def test_rounding_edges_and_specials():
    # Values that sit exactly between two bf16 numbers (ties to even), just around them,
    # the largest id, +-0, +-inf, NaN, subnormals and the largest finite floats.
    base = torch.arange(0, 1 << 16, device="cuda", dtype=torch.int32) << 16
    ties = (base | 0x8000).view(torch.float32)
    above = (base | 0x8001).view(torch.float32)
    below = (base | 0x7FFF).view(torch.float32)
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40,
                             -1e-40, 3.4028235e38, -3.4028235e38, 1.0, 0.5, 2.0**-126],
                            device="cuda", dtype=torch.float32)
    w = torch.cat([ties, above, below, specials])
    w = torch.cat([w, w[: (16 - w.numel() % 16) % 16]]).view(-1, 16)
    ids = torch.randint(0, 32768, w.shape, device="cuda", dtype=torch.int32)
    ids[0, 0] = 32767
    ids[0, 1] = 0
    out = run(ids, w)
    ref = reference(ids, w)
    nan_rows = torch.isnan(w)
    # NaN: any NaN pattern is acceptable only if torch's own is a NaN too; compare bits exactly.
    assert torch.equal(out[~nan_rows], ref[~nan_rows])
    got_low = (out[nan_rows] & 0xFFFF).to(torch.int32)
    assert bool(((got_low & 0x7F80) == 0x7F80).all() and ((got_low & 0x7F) != 0).all())


def test_t_zero_launches_nothing():
    ids = torch.empty(0, 16, device="cuda", dtype=torch.int32)
    w = torch.empty(0, 16, device="cuda", dtype=torch.float32)
    out = mod.pack_topk_ids(ids, w)
    assert out.shape == (0, 16)


def test_new_t_does_not_recompile():
    kernel = mod.pack_topk_ids_kernel
    ids, w = random_routing(33, 16)
    run(ids, w)
    before = len(kernel._kernels)
    for t in (17, 64, 513, 1000, 4096 + 5):
        ids, w = random_routing(t, 16)
        assert torch.equal(run(ids, w), reference(ids, w))
    assert len(kernel._kernels) == before


@pytest.mark.parametrize("bad", [
    lambda: (torch.zeros(4, 16, device="cuda", dtype=torch.int64),
             torch.zeros(4, 16, device="cuda")),
    lambda: (torch.zeros(4, 16, device="cuda", dtype=torch.int32),
             torch.zeros(4, 16, device="cuda", dtype=torch.bfloat16)),
    lambda: (torch.zeros(4, 16, device="cuda", dtype=torch.int32),
             torch.zeros(4, 8, device="cuda")),
    lambda: (torch.zeros(16, 4, device="cuda", dtype=torch.int32).t(),
             torch.zeros(4, 16, device="cuda")),
    lambda: (torch.zeros(4, 16, device="cuda", dtype=torch.int32),
             torch.zeros(4, 32, device="cuda")[:, :16]),
])
def test_bad_arguments_raise_before_launch(bad):
    with pytest.raises((TypeError, ValueError)):
        mod.pack_topk_ids(*bad())
    torch.cuda.synchronize()
