"""Reductions, runtime for/if and kl.static_range on the GPU against torch.

The kernels are those of test/python/test_control_flow.py (repeated here so that
this file stands alone), launched over several num_warps so that tile.reduce
runs with butterflies only, with warps along the reduced axis, and with
replicated result tiles. Integer-valued inputs make sums exact whatever the
order of combination; outputs are poisoned (NaN / -1) before each launch.
"""

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402

from control_flow_kernels import (  # noqa: E402
    branch_merge,
    loop_accumulate,
    loop_rowmax,
    reduce_1d,
    reduce_2d,
    row_sum_bf16,
    static_unroll,
)


def small_ints(*shape, lo=-4, hi=5, dtype=torch.float32):
    """Integer-valued floats: exact sums in any order, many ties."""
    return torch.randint(lo, hi, shape, device="cuda").to(dtype)


def nan(*shape):
    return torch.full(shape, float("nan"), device="cuda")


def minus_one(*shape):
    return torch.full(shape, -1, device="cuda", dtype=torch.int32)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("n", [1, 100, 1000, 1024])
def test_reduce_1d(n, num_warps):
    x = small_ints(n, lo=-50, hi=50)
    f, i = nan(3), minus_one(2)
    reduce_1d[(1,)](x, f, i, n, BLOCK=1024, num_warps=num_warps)
    torch.cuda.synchronize()
    assert f.tolist() == [x.sum().item(), x.max().item(), x.min().item()]
    # ties: the lowest index (torch.argmax does not promise which on CUDA)
    first = lambda hit: int(torch.nonzero(hit)[0])  # noqa: E731
    assert i.tolist() == [first(x == x.max()), first(x == x.min())]


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("m,n", [(32, 64), (20, 50), (1, 64), (32, 1)])
def test_reduce_2d(axis, m, n, num_warps):
    stride = n + 3
    x = torch.full((m, stride), 1e30, device="cuda")  # padding that must not leak
    x[:, :n] = small_ints(m, n)
    valid = x[:, :n]
    outs = [nan(64) for _ in range(3)] + [minus_one(64) for _ in range(2)]
    total = nan(1)
    reduce_2d[(1,)](x, *outs, total, m, n, stride, BM=32, BN=64, AXIS=axis,
                    num_warps=num_warps)
    torch.cuda.synchronize()
    r = m if axis == 1 else n
    torch.testing.assert_close(outs[0][:r], valid.sum(dim=axis), rtol=0, atol=0)
    torch.testing.assert_close(outs[1][:r], valid.amax(dim=axis), rtol=0, atol=0)
    torch.testing.assert_close(outs[2][:r], valid.amin(dim=axis), rtol=0, atol=0)
    # first index of the max/min along the axis
    k = valid.shape[axis]
    idx = torch.arange(k, device="cuda", dtype=torch.int32)
    idx = idx[None, :] if axis == 1 else idx[:, None]
    big = torch.full_like(valid, k, dtype=torch.int32)
    amax = torch.where(valid == valid.amax(dim=axis, keepdim=True), idx, big).amin(dim=axis)
    amin = torch.where(valid == valid.amin(dim=axis, keepdim=True), idx, big).amin(dim=axis)
    assert torch.equal(outs[3][:r], amax) and torch.equal(outs[4][:r], amin)
    assert total.item() == valid.sum().item()


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("m,n", [(64, 64), (100, 200), (3, 8)])
def test_row_sum_bf16(m, n, num_warps):
    x = small_ints(m, n, dtype=torch.bfloat16)
    out = nan(m)
    row_sum_bf16[(kiln.cdiv(m, 16),)](x, out, m, n, n, BM=16, BN=256, num_warps=num_warps)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x.float().sum(dim=1), rtol=0, atol=0)


@pytest.mark.parametrize("lo,hi,step", [(0, 0, 1), (5, 2, 1), (0, 1, 1), (0, 7, 1),
                                        (1, 8, 3)])
def test_runtime_loop(lo, hi, step):
    rows, block = 10, 256
    x = small_ints(rows, block)
    acc, s, cnt = nan(block), nan(1), minus_one(1)
    loop_accumulate[(1,)](x, acc, s, cnt, lo, hi, step, block, BLOCK=block, num_warps=2)
    torch.cuda.synchronize()
    idx = list(range(lo, hi, step))
    ref = x[idx].sum(dim=0) if idx else torch.zeros(block, device="cuda")
    torch.testing.assert_close(acc, ref, rtol=0, atol=0)
    assert s.item() == (x[idx].sum().item() if idx else 0.0)
    assert cnt.item() == len(idx)


@pytest.mark.parametrize("n_rows", [0, 1, 6])
def test_loop_with_nested_if(n_rows):
    x = small_ints(max(n_rows, 1), 128)
    out = nan(256)
    loop_rowmax[(1,)](x, out, n_rows, 128, BLOCK=128, num_warps=1)
    torch.cuda.synchronize()
    v = x[:n_rows]
    best = v.amax(dim=0) if n_rows else torch.full((128,), float("-inf"), device="cuda")
    w = torch.where(torch.arange(n_rows, device="cuda") % 2 == 0, 2.0, 1.0)
    weighted = (v * w[:, None]).sum(dim=0) if n_rows else torch.zeros(128, device="cuda")
    torch.testing.assert_close(out[:128], best, rtol=0, atol=0)
    torch.testing.assert_close(out[128:], weighted, rtol=0, atol=0)


@pytest.mark.parametrize("flag", [1, 0])
def test_runtime_if(flag):
    x = torch.randn(256, device="cuda")
    out, m = nan(256), nan(1)
    branch_merge[(1,)](x, out, m, flag, BLOCK=256, num_warps=2)
    torch.cuda.synchronize()
    if flag:
        torch.testing.assert_close(out, x * 2.0 * 3.0)
        assert m.item() == x.max().item()
    else:
        torch.testing.assert_close(out, x - 1.0)
        assert m.item() == 0.0


@pytest.mark.parametrize("n", [1, 4])
def test_static_range(n):
    x = small_ints(n, 128)
    out = nan(128)
    static_unroll[(1,)](x, out, BLOCK=128, N=n, num_warps=1)
    torch.cuda.synchronize()
    ref = sum((k + 1) * x[k] for k in range(n)) + 100 * sum(k for k in range(n) if k % 2)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
