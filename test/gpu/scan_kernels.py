"""Kernels exercising kl.cumsum / kl.cumprod / kl.associative_scan (tile.scan), shared by
the CPU tests (test/python/test_scan.py: interpreter, PTX per arch) and the GPU tests
(test_scan.py beside this file, which travels to the GPU machine)."""

import kiln
import kiln.language as kl


@kiln.jit
def max_combine(a, b):
    return kl.maximum(a, b)


@kiln.jit
def last_nonzero(a, b):
    """Associative, not commutative: the later value unless it is zero (forward fill)."""
    return kl.where(b != 0, b, a)


@kiln.jit
def _scan(x, AXIS: kl.constexpr, OP: kl.constexpr):
    if OP == "sum":
        y = kl.cumsum(x, axis=AXIS)
    elif OP == "prod":
        y = kl.cumprod(x, axis=AXIS)
    elif OP == "max":
        y = kl.associative_scan(x, AXIS, max_combine)
    else:
        y = kl.associative_scan(x, AXIS, last_nonzero)
    return y


@kiln.jit
def scan_1d(x_ptr, y_ptr, N: kl.constexpr, OP: kl.constexpr):
    """y = scan(x) for one tile of N elements (OP: sum, prod, max, fill)."""
    offs = kl.arange(0, N)
    kl.store(y_ptr + offs, _scan(kl.load(x_ptr + offs), 0, OP))


@kiln.jit
def scan_2d(x_ptr, y_ptr, M: kl.constexpr, N: kl.constexpr, AXIS: kl.constexpr,
            OP: kl.constexpr):
    """y = scan(x, AXIS) for one row-major [M, N] tile."""
    offs = kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :]
    kl.store(y_ptr + offs, _scan(kl.load(x_ptr + offs), AXIS, OP))


@kiln.jit
def cumsum_rows(x_ptr, y_ptr, n_rows, n_cols, stride, BM: kl.constexpr, BN: kl.constexpr):
    """Row-wise cumsum of a strided [n_rows, n_cols] matrix, n_cols <= BN: one [BM, BN]
    block of rows per program, edges masked (masked-off columns are past the row's end,
    so their zeros reach no stored element)."""
    rows = kl.program_id(0) * BM + kl.arange(0, BM)
    cols = kl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * stride + cols[None, :]
    x = kl.load(x_ptr + offs, mask=mask, other=0.0)
    kl.store(y_ptr + offs, kl.cumsum(x, axis=1), mask=mask)
