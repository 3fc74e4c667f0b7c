"""Kernels exercising kl.trans / kl.permute / x.T (tile.trans), shared by the CPU tests
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
