"""Acquire loads, release stores and fences on the GPU: a producer program publishes data
with a release store of a flag; a consumer program spins on an acquire load of the flag and
then reads the data; values and flags at every scope and width round-trip."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402


@kiln.jit(num_warps=1)
def message(data_ptr, flag_ptr, out_ptr, n, SPINS: kl.constexpr, SCOPE: kl.constexpr):
    """Program 1 writes data then releases the flag; program 0 acquires it, then reads."""
    if kl.program_id(0) == 1:
        offs = kl.arange(0, 32)
        kl.store(data_ptr + offs, offs * 3 + n, mask=offs < n)
        kl.fence("release", SCOPE)
        kl.store(flag_ptr, 1, sem="release", scope=SCOPE)
    else:
        got = 0
        seen = 0
        for _ in range(0, SPINS):
            if seen == 0:
                f = kl.load(flag_ptr, sem="acquire", scope=SCOPE)
                if f == 1:
                    offs = kl.arange(0, 32)
                    got = kl.sum(kl.load(data_ptr + offs, mask=offs < n, other=0), axis=0)
                    seen = 1
        kl.store(out_ptr, got)
        kl.store(out_ptr + 1, seen)


@kiln.jit
def ordered_copy(x_ptr, y_ptr, n, BLOCK: kl.constexpr, SEM_LD: kl.constexpr,
                 SEM_ST: kl.constexpr, SCOPE: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    m = offs < n
    v = kl.load(x_ptr + offs, mask=m, other=0, sem=SEM_LD, scope=SCOPE)
    kl.store(y_ptr + offs, v, mask=m, sem=SEM_ST, scope=SCOPE)


@pytest.mark.parametrize("scope", ["gpu", "sys"])
def test_release_acquire_message(scope):
    n = 29
    data = torch.zeros(32, device="cuda", dtype=torch.int32)
    flag = torch.zeros(1, device="cuda", dtype=torch.int32)
    out = torch.full((2,), -1, device="cuda", dtype=torch.int32)
    message[(2,)](data, flag, out, n, SPINS=1 << 20, SCOPE=scope)
    torch.cuda.synchronize()
    assert out[1].item() == 1, "the consumer never saw the flag"
    assert out[0].item() == sum(3 * i + n for i in range(n))


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.int64, torch.float16,
                                   torch.bfloat16])
@pytest.mark.parametrize("sems", [("acquire", "release"), ("relaxed", "relaxed")])
@pytest.mark.parametrize("scope", ["cta", "gpu", "sys"])
def test_ordered_accesses_round_trip(dtype, sems, scope):
    n = 1000
    x = (torch.randn(n, device="cuda") * 100).to(dtype)
    y = torch.zeros_like(x)
    ordered_copy[(kiln.cdiv(n, 256),)](x, y, n, BLOCK=256, SEM_LD=sems[0], SEM_ST=sems[1],
                                       SCOPE=scope)
    assert torch.equal(x, y)
