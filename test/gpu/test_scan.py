"""kl.cumsum / kl.cumprod / kl.associative_scan (tile.scan) on the GPU against torch.

1-D tiles of 32..4096 elements and 2-D tiles scanned along axis 1 and axis 0 (lines
within a thread, a warp, across warps and across the run numbers of every thread), int32,
float32 and bfloat16 inputs, 1, 4 and 8 warps, each against torch.cumsum / cumprod /
cummax and a forward fill (a non-commutative combine: the later value unless it is
zero). Products use inputs in {1, -1, 2, 0.5} (every grouping is exact), int32 sums and
max/fill are exact, float sums are checked against float64 with a bound of a few ulps of
the running sum of |x| (the grouping differs from torch's). Outputs are poisoned with NaN
(or a sentinel) before each launch.
"""

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402

from scan_kernels import cumsum_rows, scan_1d, scan_2d  # noqa: E402

DTYPES = {"i32": torch.int32, "f32": torch.float32, "bf16": torch.bfloat16}
OPS = ["sum", "prod", "max", "fill"]


def _seed(*params):
    torch.manual_seed(hash(params) & 0xFFFFFFFF)


def _inputs(dt, shape, op):
    if op == "prod":
        vals = torch.tensor([1.0, -1.0, 2.0, 0.5] if dt != "i32" else [1.0, -1.0, 2.0, 1.0],
                            device="cuda")
        pick = torch.multinomial(torch.tensor([0.4, 0.4, 0.1, 0.1], device="cuda"),
                                 int(torch.tensor(shape).prod()), replacement=True)
        return vals[pick].reshape(shape).to(DTYPES[dt])
    if op == "fill":
        x = torch.randint(-3, 4, shape, device="cuda")
        return (x * (torch.rand(shape, device="cuda") < 0.3)).to(DTYPES[dt])
    if dt == "i32":
        return torch.randint(-1000, 1000, shape, device="cuda", dtype=torch.int32)
    return torch.randn(shape, device="cuda").to(DTYPES[dt])


def _out(x, op):
    dtype = torch.float32 if (op == "sum" and x.dtype == torch.bfloat16) else x.dtype
    if dtype.is_floating_point:
        return torch.full(x.shape, float("nan"), device="cuda", dtype=dtype)
    return torch.full(x.shape, -12345, device="cuda", dtype=dtype)


def check(out, x, dim, op):
    if op == "sum" and x.dtype.is_floating_point:
        ref = torch.cumsum(x.double(), dim)
        # f32 sums in some grouping: a few ulps of the running sum of |x|
        tol = 2.0**-16 * torch.cumsum(x.double().abs(), dim) + 1e-30
        assert not torch.isnan(out).any()
        err = (out.double() - ref).abs()
        assert (err <= tol).all(), f"max error {err.max().item():.3g}, worst ratio " \
            f"{(err / tol).max().item():.3g}"
        torch.testing.assert_close(out, torch.cumsum(x.float(), dim), rtol=1e-4,
                                   atol=1e-4 * x.shape[dim] ** 0.5)
        return
    if op == "sum":
        ref = torch.cumsum(x, dim, dtype=torch.int32)
    elif op == "prod":
        if x.dtype.is_floating_point:  # powers of two: exact in any grouping
            ref = torch.cumprod(x.double(), dim).to(x.dtype)
        else:  # the low 32 bits of the int64 product (the GPU's i32 multiply wraps)
            ref = torch.cumprod(x.long(), dim).bitwise_and(0xFFFFFFFF)
            ref = torch.where(ref >= 2**31, ref - 2**32, ref).to(torch.int32)
    elif op == "max":
        ref = torch.cummax(x.float() if x.dtype == torch.bfloat16 else x, dim).values
        ref = ref.to(x.dtype)
    else:  # forward fill: x at the last nonzero position so far (position 0 if none)
        shape = [1] * x.dim()
        shape[dim] = x.shape[dim]
        pos = torch.arange(x.shape[dim], device="cuda").reshape(shape).expand(x.shape)
        last = torch.cummax(torch.where(x != 0, pos, torch.zeros_like(pos)), dim).values
        ref = torch.gather(x, dim, last)
    assert torch.equal(out, ref), f"{(out != ref).sum().item()} of {out.numel()} differ; " \
        f"first at {(out != ref).nonzero()[0].tolist()}"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", ["i32", "f32", "bf16"])
@pytest.mark.parametrize("n", [32, 64, 256, 1024, 4096])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_scan_1d(op, dt, n, num_warps):
    _seed(op, dt, n, num_warps)
    x = _inputs(dt, (n,), op)
    out = _out(x, op)
    scan_1d[(1,)](x, out, N=n, OP=op, num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, x, 0, op)


SHAPES_2D = [(64, 64), (16, 256), (256, 16), (2, 1024), (1024, 2), (4, 8), (32, 128),
             (128, 32)]


@pytest.mark.parametrize("m,n", SHAPES_2D)
@pytest.mark.parametrize("axis", [1, 0])
@pytest.mark.parametrize("dt,op", [("i32", "sum"), ("f32", "sum"), ("bf16", "sum"),
                                   ("i32", "max"), ("bf16", "max"), ("f32", "prod"),
                                   ("i32", "prod"), ("f32", "fill"), ("bf16", "fill")])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_scan_2d(m, n, axis, dt, op, num_warps):
    _seed(m, n, axis, dt, op, num_warps)
    x = _inputs(dt, (m, n), op)
    out = _out(x, op)
    scan_2d[(1,)](x, out, M=m, N=n, AXIS=axis, OP=op, num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, x, axis, op)


@pytest.mark.parametrize("n_rows,n_cols,bm,bn,num_warps", [(1000, 200, 16, 256, 4),
                                                           (77, 50, 32, 64, 8),
                                                           (4096, 8, 128, 8, 4)])
def test_cumsum_rows_strided_masked(n_rows, n_cols, bm, bn, num_warps):
    _seed(n_rows, n_cols, bm, bn)
    x = torch.randn(n_rows, n_cols + 8, device="cuda")[:, :n_cols]
    out = torch.full((n_rows, n_cols + 8), float("nan"), device="cuda")
    cumsum_rows[(kiln.cdiv(n_rows, bm),)](x, out, n_rows, n_cols, x.stride(0), BM=bm, BN=bn,
                                          num_warps=num_warps)
    torch.cuda.synchronize()
    check(out[:, :n_cols], x, 1, "sum")
    assert torch.isnan(out[:, n_cols:]).all()  # nothing written past the row
