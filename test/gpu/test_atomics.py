"""Atomics on the GPU: a histogram (many programs hitting the same bins), max/min, a float
sum of integer values (exact in any order), a compare-and-swap election with one winner, and
the last program to arrive (a fence, ``kl.barrier``, one atomic) seeing every partial."""

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402

from atomic_kernels import last_arriver_sum  # noqa: E402


@kiln.jit
def histogram(x_ptr, bins_ptr, stats_ptr, fsum_ptr, n, BLOCK: kl.constexpr):
    o = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    m = o < n
    v = kl.load(x_ptr + o, mask=m, other=0)
    kl.atomic_add(bins_ptr + v, 1, mask=m, sem="relaxed")
    kl.atomic_max(stats_ptr, kl.max(kl.where(m, v, -1), axis=0))
    kl.atomic_min(stats_ptr + 1, kl.min(kl.where(m, v, 1 << 30), axis=0))
    kl.atomic_add(fsum_ptr + (v & 7), (v & 15).to(kl.float32), mask=m, scope="gpu")


@kiln.jit
def elect(flag_ptr, winners_ptr, order_ptr):
    old = kl.atomic_cas(flag_ptr, 0, 1, sem="acq_rel", scope="sys")
    if old == 0:
        kl.atomic_add(winners_ptr, 1, sem="relaxed")
    # every program takes a unique ticket
    kl.atomic_add(order_ptr, 1, sem="acq_rel", scope="gpu")


@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_histogram_and_extremes(n):
    x = torch.randint(0, 256, (n,), device="cuda", dtype=torch.int32)
    bins = torch.zeros(256, device="cuda", dtype=torch.int32)
    stats = torch.tensor([-1, 1 << 30], device="cuda", dtype=torch.int32)
    fsum = torch.zeros(8, device="cuda", dtype=torch.float32)
    histogram[((n + 1023) // 1024,)](x, bins, stats, fsum, n, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(bins, torch.bincount(x, minlength=256).int())
    assert stats.tolist() == [int(x.max()), int(x.min())]
    expect = torch.zeros(8, device="cuda", dtype=torch.float64).index_add_(
        0, (x & 7).long(), (x & 15).double())
    # integer sums below 2^24 (at most 15 * 2^20): exact in any order
    assert torch.equal(fsum.double(), expect)


def test_cas_elects_exactly_one_program():
    flag = torch.zeros(1, device="cuda", dtype=torch.int32)
    winners = torch.zeros(1, device="cuda", dtype=torch.int32)
    order = torch.zeros(1, device="cuda", dtype=torch.int32)
    elect[(4096,)](flag, winners, order)
    torch.cuda.synchronize()
    assert flag.item() == 1 and winners.item() == 1 and order.item() == 4096


@pytest.mark.parametrize("programs", [1, 7, 2000])
def test_last_arriver_sees_every_partial(programs):
    """kl.barrier after a gpu-scope fence: the scalar atomic of the last program publishes
    every thread's partials (256 threads a program, 1,024 values each); run twice, the
    counter reset by the last program."""
    x = torch.randint(-1000, 1000, (programs, 1024), device="cuda", dtype=torch.int32)
    part = torch.empty_like(x)
    count = torch.zeros(1, device="cuda", dtype=torch.int32)
    for _ in range(2):
        out = torch.zeros(1024, device="cuda", dtype=torch.int32)
        last_arriver_sum[(programs,)](x, part, count, out, BLOCK=1024, num_warps=8)
        torch.cuda.synchronize()
        assert torch.equal(out, x.sum(0, dtype=torch.int32) * 2) and count.item() == 0
