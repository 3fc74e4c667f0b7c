"""Kernels exercising kl.reduce (tile.reduce of N tiles with a user combine function),
shared by the CPU tests (test/python/test_reduce_multi.py: interpreter, PTX per arch) and
the GPU tests (test_reduce_multi.py beside this file, which travels to the GPU machine)."""

import kiln
import kiln.language as kl


@kiln.jit
def add_pair(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@kiln.jit
def add_triple(a0, b0, c0, a1, b1, c1):
    return a0 + a1, b0 + b1, c0 + c1


@kiln.jit
def max_index(v0, i0, v1, i1):
    """(max, argmax) of (value, index) pairs; on ties the lower index wins, so the result
    does not depend on the order of the combinations."""
    take = (v1 > v0) | ((v1 == v0) & (i1 < i0))
    return kl.where(take, v1, v0), kl.where(take, i1, i0)


@kiln.jit
def max_one(a, b):
    return kl.maximum(a, b)


@kiln.jit
def sum_pair_1d(x_ptr, w_ptr, out_ptr, N: kl.constexpr):
    """out = [sum(x * x), sum(x * w)] of one tile of N f32 elements, in one reduction."""
    offs = kl.arange(0, N)
    x = kl.load(x_ptr + offs)
    w = kl.load(w_ptr + offs)
    ss, sw = kl.reduce((x * x, x * w), 0, add_pair)
    kl.store(out_ptr, ss)
    kl.store(out_ptr + 1, sw)


@kiln.jit
def two_sums_1d(x_ptr, w_ptr, out_ptr, N: kl.constexpr):
    """The same as two kl.sum (two reductions: the baseline sum_pair_1d improves on)."""
    offs = kl.arange(0, N)
    x = kl.load(x_ptr + offs)
    w = kl.load(w_ptr + offs)
    kl.store(out_ptr, kl.sum(x * x))
    kl.store(out_ptr + 1, kl.sum(x * w))


@kiln.jit
def sum_pair_2d(x_ptr, w_ptr, s_ptr, t_ptr, M: kl.constexpr, N: kl.constexpr,
                AXIS: kl.constexpr):
    """s = sum(x * x, AXIS), t = sum(x * w, AXIS) of one row-major [M, N] f32 tile."""
    rows = kl.arange(0, M)
    cols = kl.arange(0, N)
    offs = rows[:, None] * N + cols[None, :]
    x = kl.load(x_ptr + offs)
    w = kl.load(w_ptr + offs)
    s, t = kl.reduce((x * x, x * w), AXIS, add_pair)
    if AXIS == 0:
        kl.store(s_ptr + cols, s)
        kl.store(t_ptr + cols, t)
    else:
        kl.store(s_ptr + rows, s)
        kl.store(t_ptr + rows, t)


@kiln.jit
def max_argmax_2d(x_ptr, v_ptr, i_ptr, M: kl.constexpr, N: kl.constexpr,
                  AXIS: kl.constexpr):
    """(max, argmax) of one row-major [M, N] tile along AXIS (ties: the lowest index),
    as one reduction of a (value, int32 index) pair."""
    rows = kl.arange(0, M)
    cols = kl.arange(0, N)
    offs = rows[:, None] * N + cols[None, :]
    x = kl.load(x_ptr + offs)
    if AXIS == 0:
        idx = rows[:, None] + cols[None, :] * 0
    else:
        idx = rows[:, None] * 0 + cols[None, :]
    v, i = kl.reduce((x, idx), AXIS, max_index)
    if AXIS == 0:
        kl.store(v_ptr + cols, v)
        kl.store(i_ptr + cols, i)
    else:
        kl.store(v_ptr + rows, v)
        kl.store(i_ptr + rows, i)


@kiln.jit
def sum_count_rows(x_ptr, s_ptr, c_ptr, M: kl.constexpr, N: kl.constexpr):
    """A mixed-dtype pair along axis 1: s = sum of the positive x of each row (f32), c =
    their count (int32)."""
    rows = kl.arange(0, M)
    offs = rows[:, None] * N + kl.arange(0, N)[None, :]
    x = kl.load(x_ptr + offs)
    pos = x > 0
    s, c = kl.reduce((kl.where(pos, x, 0.0), pos.to(kl.int32)), 1, add_pair)
    kl.store(s_ptr + rows, s)
    kl.store(c_ptr + rows, c)


@kiln.jit
def triple_all(x_ptr, w_ptr, out_ptr, cnt_ptr, M: kl.constexpr, N: kl.constexpr):
    """N = 3 over all axes (axis=None): out = [sum(x), sum(x * w)], cnt = #(x > 0)."""
    offs = kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :]
    x = kl.load(x_ptr + offs)
    w = kl.load(w_ptr + offs)
    s, sw, c = kl.reduce((x, x * w, (x > 0).to(kl.int32)), None, add_triple)
    kl.store(out_ptr, s)
    kl.store(out_ptr + 1, sw)
    kl.store(cnt_ptr, c)


@kiln.jit
def max_rows_single(x_ptr, y_ptr, M: kl.constexpr, N: kl.constexpr):
    """N = 1: kl.reduce of one tile returns one tile (the row maxima)."""
    rows = kl.arange(0, M)
    offs = rows[:, None] * N + kl.arange(0, N)[None, :]
    kl.store(y_ptr + rows, kl.reduce(kl.load(x_ptr + offs), 1, max_one))
