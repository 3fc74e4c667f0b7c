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
import kiln.language as kl  # noqa: E402

pytestmark = pytest.mark.sm90


@kiln.jit
def reduce_1d(x_ptr, f_ptr, i_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    x0 = kl.load(x_ptr + offs, mask=mask, other=0.0)
    xlo = kl.load(x_ptr + offs, mask=mask, other=float("-inf"))
    xhi = kl.load(x_ptr + offs, mask=mask, other=float("inf"))
    kl.store(f_ptr, kl.sum(x0))
    kl.store(f_ptr + 1, kl.max(xlo))
    kl.store(f_ptr + 2, kl.min(xhi, axis=0))
    kl.store(i_ptr, kl.argmax(xlo))
    kl.store(i_ptr + 1, kl.argmin(xhi, axis=0))


@kiln.jit
def reduce_2d(x_ptr, sum_ptr, max_ptr, min_ptr, amax_ptr, amin_ptr, total_ptr, M, N, stride,
              BM: kl.constexpr, BN: kl.constexpr, AXIS: kl.constexpr):
    rows = kl.arange(0, BM)
    cols = kl.arange(0, BN)
    offs = rows[:, None] * stride + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x0 = kl.load(x_ptr + offs, mask=mask, other=0.0)
    xlo = kl.load(x_ptr + offs, mask=mask, other=float("-inf"))
    xhi = kl.load(x_ptr + offs, mask=mask, other=float("inf"))
    if AXIS == 1:
        o = rows
        om = rows < M
    else:
        o = cols
        om = cols < N
    kl.store(sum_ptr + o, kl.sum(x0, axis=AXIS), mask=om)
    kl.store(max_ptr + o, kl.max(xlo, axis=AXIS), mask=om)
    kl.store(min_ptr + o, kl.min(xhi, axis=AXIS), mask=om)
    kl.store(amax_ptr + o, kl.argmax(xlo, axis=AXIS), mask=om)
    kl.store(amin_ptr + o, kl.argmin(xhi, axis=AXIS), mask=om)
    kl.store(total_ptr, kl.sum(x0))


@kiln.jit
def row_sum_bf16(x_ptr, out_ptr, M, N, stride, BM: kl.constexpr, BN: kl.constexpr):
    """f32 sums of bf16 rows (8 elements per run: a different layout than f32)."""
    rows = kl.program_id(0) * BM + kl.arange(0, BM)
    cols = kl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = kl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    kl.store(out_ptr + rows, kl.sum(x, axis=1), mask=rows < M)


@kiln.jit
def loop_accumulate(x_ptr, acc_ptr, s_ptr, cnt_ptr, lo, hi, step, stride,
                    BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    acc = 0.0
    total = 0.0
    count = 0
    for i in range(lo, hi, step):
        v = kl.load(x_ptr + i * stride + offs)
        acc += v
        total += kl.sum(v)
        count += 1
    kl.store(acc_ptr + offs, acc)
    kl.store(s_ptr, total)
    kl.store(cnt_ptr, count)


@kiln.jit
def loop_rowmax(x_ptr, out_ptr, n_rows, stride, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    best = kl.full((BLOCK,), float("-inf"), kl.float32)
    weighted = kl.zeros((BLOCK,), kl.float32)
    for r in range(n_rows):
        v = kl.load(x_ptr + r * stride + offs)
        best = kl.maximum(best, v)
        if r % 2 == 0:
            w = 2.0
        else:
            w = 1.0
        weighted += v * w
    kl.store(out_ptr + offs, best)
    kl.store(out_ptr + BLOCK + offs, weighted)


@kiln.jit
def branch_merge(x_ptr, out_ptr, m_ptr, flag, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    v = kl.load(x_ptr + offs)
    scale = 1.0
    if flag > 0:
        y = v * 2.0
        scale = 3.0
        m = kl.max(v)
    else:
        y = v - 1.0
        m = 0.0
    kl.store(out_ptr + offs, y * scale)
    kl.store(m_ptr, m)


@kiln.jit
def static_unroll(x_ptr, out_ptr, BLOCK: kl.constexpr, N: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    acc = kl.zeros((BLOCK,), kl.float32)
    odd = 0
    for k in kl.static_range(N):
        acc += kl.load(x_ptr + k * BLOCK + offs) * (k + 1)
        if k % 2 == 1:
            odd += k
    kl.store(out_ptr + offs, acc + odd * 100)


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
