"""Kernels exercising reductions, runtime loops and branches, and static_range, shared by the
CPU tests (test/python/test_control_flow.py: PTX per arch, interpreter) and the GPU tests
(test_control_flow.py beside this file, which travels to the GPU machine)."""

import kiln
import kiln.language as kl


@kiln.jit
def reduce_1d(x_ptr, f_ptr, i_ptr, n, BLOCK: kl.constexpr):
    """f = [sum, max, min], i = [argmax, argmin] of x[:n] (BLOCK >= n)."""
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
    """Reductions of x[:M, :N] along AXIS; total = the sum of everything."""
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
def loop_accumulate(x_ptr, acc_ptr, s_ptr, cnt_ptr, lo, hi, step, stride,
                    BLOCK: kl.constexpr):
    """For i in range(lo, hi, step): acc += x[i]; total += sum(x[i]); count += 1.
    `acc` and `total` start as compile-time 0.0, `count` as 0."""
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
    """Running max over rows of a tile carried from an explicit tile, plus a
    nested runtime `if` inside the loop (every other row counts twice)."""
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
    """if flag > 0: y = 2x, scale = 3.0, m = max(x) else: y = x - 1, m = 0.0
    (scale keeps its compile-time 1.0 on the else path)."""
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
    """out = sum_k (k + 1) * x[k] over k in static_range(N), plus 100 * the odd k."""
    offs = kl.arange(0, BLOCK)
    acc = kl.zeros((BLOCK,), kl.float32)
    odd = 0
    for k in kl.static_range(N):
        acc += kl.load(x_ptr + k * BLOCK + offs) * (k + 1)
        if k % 2 == 1:
            odd += k
    kl.store(out_ptr + offs, acc + odd * 100)


# ---------------------------------------------------------------------------
# (a) PTX per arch
# ---------------------------------------------------------------------------


@kiln.jit
def row_sum_bf16(x_ptr, out_ptr, M, N, stride, BM: kl.constexpr, BN: kl.constexpr):
    """f32 sums of bf16 rows (8 elements per run: a different layout than f32)."""
    rows = kl.program_id(0) * BM + kl.arange(0, BM)
    cols = kl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = kl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    kl.store(out_ptr + rows, kl.sum(x, axis=1), mask=rows < M)
