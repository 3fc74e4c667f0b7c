"""``@kiln.jit(maxnreg=N)`` on the GPU: a kernel held to fewer registers than it wants
(ptxas spills to local memory) computes the same bits as without the cap, and both match
a float64 reference of the math within float32 rounding. Fresh random inputs."""

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402


def _poly(x_ptr, out_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    acc = x
    for _ in kl.static_range(4):
        acc = acc * x + kl.sum(acc, axis=0) * (1.0 / BLOCK)
    kl.store(out_ptr + offs, acc)


uncapped = kiln.jit(num_warps=1)(_poly)
capped = kiln.jit(num_warps=1, maxnreg=32)(_poly)


@pytest.mark.parametrize("block", [256, 2048])
def test_capped_kernel_matches_uncapped_and_reference(block):
    x = torch.rand(block, device="cuda") * 0.5 + 0.25
    out_c, out_u, out_o = (torch.empty_like(x) for _ in range(3))
    capped[(1,)](x, out_c, BLOCK=block)
    uncapped[(1,)](x, out_u, BLOCK=block)
    capped[(1,)](x, out_o, BLOCK=block, maxnreg=64)  # a launch override
    torch.cuda.synchronize()
    assert torch.equal(out_c, out_u) and torch.equal(out_o, out_u)
    ref = x.double()
    acc = ref
    for _ in range(4):
        acc = acc * ref + acc.sum() / block
    torch.testing.assert_close(out_c.double(), acc, rtol=1e-5, atol=0)
