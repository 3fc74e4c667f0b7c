"""Kernels exercising kl.trans / kl.permute / x.T (tile.trans), kl.reshape (tile.reshape),
kl.join and kl.split (tile.join, tile.split), shared by the CPU tests
(test/python/test_shape_ops.py: interpreter, PTX per arch) and the GPU tests
(test_shape_ops.py beside this file, which travels to the GPU machine)."""

import kiln
import kiln.language as kl


@kiln.jit
def trans_2d(x_ptr, y_ptr, M: kl.constexpr, N: kl.constexpr, HOW: kl.constexpr):
    """y[N, M] = x[M, N] transposed, one row-major tile, spelled as HOW: "trans"
    (kl.trans(x)), "T" (x.T), "permute" (kl.permute(x, (1, 0))) or "method" (x.trans())."""
    x = kl.load(x_ptr + kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :])
    if HOW == "trans":
        y = kl.trans(x)
    elif HOW == "T":
        y = x.T
    elif HOW == "permute":
        y = kl.permute(x, (1, 0))
    else:
        y = x.trans()
    kl.store(y_ptr + kl.arange(0, N)[:, None] * M + kl.arange(0, M)[None, :], y)


@kiln.jit
def permute_3d(x_ptr, y_ptr, A: kl.constexpr, B: kl.constexpr, C: kl.constexpr,
               D0: kl.constexpr, D1: kl.constexpr, D2: kl.constexpr):
    """y = x.permute(D0, D1, D2) for one row-major [A, B, C] tile (y row-major too)."""
    offs = (kl.arange(0, A)[:, None, None] * (B * C) + kl.arange(0, B)[None, :, None] * C
            + kl.arange(0, C)[None, None, :])
    x = kl.load(x_ptr + offs)
    y = kl.permute(x, D0, D1, D2)
    S0: kl.constexpr = y.shape[0]
    S1: kl.constexpr = y.shape[1]
    S2: kl.constexpr = y.shape[2]
    out = (kl.arange(0, S0)[:, None, None] * (S1 * S2) + kl.arange(0, S1)[None, :, None] * S2
           + kl.arange(0, S2)[None, None, :])
    kl.store(y_ptr + out, y)


@kiln.jit
def transpose_matrix(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BM: kl.constexpr,
                     BN: kl.constexpr):
    """y[n_cols, n_rows] = x[n_rows, n_cols]^T for strided matrices: one [BM, BN] block
    per program, edges masked (the mask is transposed with the data: a tile of booleans)."""
    rows = kl.program_id(0) * BM + kl.arange(0, BM)
    cols = kl.program_id(1) * BN + kl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = kl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0)
    kl.store(y_ptr + cols[:, None] * stride_y + rows[None, :], kl.trans(x), mask=kl.trans(mask))


@kiln.jit
def trans_loop(x_ptr, y_ptr, iters, N: kl.constexpr):
    """x <- x^T + 1, ``iters`` times (a runtime loop: the shared buffer is reused)."""
    offs = kl.arange(0, N)[:, None] * N + kl.arange(0, N)[None, :]
    x = kl.load(x_ptr + offs)
    for _ in range(iters):
        x = kl.trans(x) + 1
    kl.store(y_ptr + offs, x)


@kiln.jit
def dot_trans_b(a_ptr, b_ptr, c_ptr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr):
    """c[M, N] = a[M, K] @ b[N, K]^T in float32 (bf16 inputs): the transpose feeds kl.dot."""
    a = kl.load(a_ptr + kl.arange(0, M)[:, None] * K + kl.arange(0, K)[None, :])
    b = kl.load(b_ptr + kl.arange(0, N)[:, None] * K + kl.arange(0, K)[None, :])
    c = kl.dot(a, b.T)
    kl.store(c_ptr + kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :], c)


@kiln.jit
def reshape_2d(x_ptr, y_ptr, M: kl.constexpr, N: kl.constexpr, P: kl.constexpr,
               Q: kl.constexpr, METHOD: kl.constexpr):
    """y[P, Q] = x[M, N] reshaped (the same row-major order: y is a copy of x), as
    kl.reshape(x, (P, Q)) or x.reshape(P, Q)."""
    x = kl.load(x_ptr + kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :])
    y = x.reshape(P, Q) if METHOD else kl.reshape(x, (P, Q))
    kl.store(y_ptr + kl.arange(0, P)[:, None] * Q + kl.arange(0, Q)[None, :], y)


@kiln.jit
def group_sums(x_ptr, y_ptr, M: kl.constexpr, N: kl.constexpr, G: kl.constexpr):
    """y[M, N // G] = the sums of the groups of G consecutive elements of each row of
    x[M, N] (a reshape to [M, N // G, G] and a reduction over the last axis)."""
    x = kl.load(x_ptr + kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :])
    y = kl.sum(kl.reshape(x, M, N // G, G), axis=2)
    kl.store(y_ptr + kl.arange(0, M)[:, None] * (N // G) + kl.arange(0, N // G)[None, :], y)


@kiln.jit
def interleave(a_ptr, b_ptr, y_ptr, M: kl.constexpr, N: kl.constexpr):
    """y[M, 2N] interleaves the columns of a[M, N] and b[M, N]: kl.join(a, b) ([M, N, 2])
    reshaped to [M, 2N]."""
    offs = kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :]
    y = kl.reshape(kl.join(kl.load(a_ptr + offs), kl.load(b_ptr + offs)), M, 2 * N)
    kl.store(y_ptr + kl.arange(0, M)[:, None] * (2 * N) + kl.arange(0, 2 * N)[None, :], y)


@kiln.jit
def deinterleave(x_ptr, a_ptr, b_ptr, M: kl.constexpr, N: kl.constexpr):
    """a[M, N], b[M, N] = the even and odd columns of x[M, 2N]: kl.split of x reshaped to
    [M, N, 2]."""
    x = kl.load(x_ptr + kl.arange(0, M)[:, None] * (2 * N) + kl.arange(0, 2 * N)[None, :])
    a, b = kl.split(kl.reshape(x, M, N, 2))
    offs = kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :]
    kl.store(a_ptr + offs, a)
    kl.store(b_ptr + offs, b)


@kiln.jit
def complex_scale(x_ptr, y_ptr, re, im, N: kl.constexpr):
    """y = x * (re + i im) for N complex numbers stored as (real, imaginary) pairs:
    x.split() into the parts, kl.join of the products."""
    offs = kl.arange(0, N)[:, None] * 2 + kl.arange(0, 2)[None, :]
    xr, xi = kl.load(x_ptr + offs).split()
    kl.store(y_ptr + offs, kl.join(xr * re - xi * im, xr * im + xi * re))
