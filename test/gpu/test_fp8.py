"""fp8 conversions on the GPU against torch's float8 types (after clamping: kiln saturates)."""

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402


@kiln.jit
def round_trip(x_ptr, y_ptr, z_ptr, n, BLOCK: kl.constexpr, E5M2: kl.constexpr):
    o = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    m = o < n
    x = kl.load(x_ptr + o, mask=m, other=0.0)
    if E5M2:
        q = x.to(kl.float8e5m2)
    else:
        q = x.to(kl.float8e4m3)
    kl.store(y_ptr + o, q, mask=m)
    kl.store(z_ptr + o, q.to(kl.float32), mask=m)


@pytest.mark.parametrize("e5m2", [False, True])
def test_fp8_matches_torch(e5m2):
    dt = torch.float8_e5m2 if e5m2 else torch.float8_e4m3fn
    limit = torch.finfo(dt).max
    n = 1 << 20
    x = torch.randn(n, device="cuda") * 300
    x[:4] = torch.tensor([1e6, -1e6, 0.0, 1e-9])
    y = torch.empty(n, device="cuda", dtype=dt)
    z = torch.empty(n, device="cuda")
    round_trip[(n // 1024,)](x, y, z, n, BLOCK=1024, E5M2=e5m2)
    expect = x.clamp(-limit, limit).to(dt)
    assert torch.equal(y.view(torch.uint8), expect.view(torch.uint8))
    assert torch.equal(z, expect.float())
