"""kl.trans / kl.permute / x.T (tile.trans), kl.reshape, kl.join and kl.split on the GPU
against torch.

2-D transposes of int32, float32 and bfloat16 tiles (16x64, 64x32, 128x128: 64 KiB of
f32 moves in four 16 KiB slabs; small replicated tiles; a unit dimension) with 4 and 8
warps, in each spelling; every 3-D permutation; a masked transpose of strided matrices
block by block (the mask transposed as a tile of booleans); a transpose in a runtime
loop (the shared buffer reused); a transposed tile of pointers; and a transpose feeding
kl.dot (a @ b^T). A transpose moves bits, so every comparison is exact. Reshapes (a
copy, and grouped sums through a reshape and kl.sum), joins (interleaved columns),
splits (even and odd columns) and a split-compute-join round trip (complex scaling) of
i32/f32/bf16 tiles up to 64 KiB. Inputs are fresh random values, outputs are poisoned
(NaN or a sentinel) before each launch.
"""

import itertools

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402

from shape_kernels import (  # noqa: E402
    complex_scale,
    deinterleave,
    dot_trans_b,
    group_sums,
    interleave,
    load_through_transposed_pointers,
    permute_3d,
    reshape_2d,
    trans_2d,
    trans_loop,
    transpose_matrix,
)

DTYPES = {"i32": torch.int32, "f32": torch.float32, "bf16": torch.bfloat16}


def _seed(*params):
    torch.manual_seed(hash(params) & 0xFFFFFFFF)


def _inputs(dt, shape):
    if dt == "i32":
        return torch.randint(-2**31, 2**31 - 1, shape, device="cuda", dtype=torch.int32)
    return torch.randn(shape, device="cuda").to(DTYPES[dt])


def _poisoned(shape, dtype):
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), device="cuda", dtype=dtype)
    return torch.full(shape, -12345, device="cuda", dtype=dtype)


def check_untouched(out):
    if out.dtype.is_floating_point:
        assert torch.isnan(out).all(), f"{(~torch.isnan(out)).sum().item()} written"
    else:
        assert (out == -12345).all(), f"{(out != -12345).sum().item()} written"


def check(out, ref):
    assert torch.equal(out, ref), f"{(out != ref).sum().item()} of {out.numel()} differ; " \
        f"first at {(out != ref).nonzero()[0].tolist()}"


SHAPES_2D = [(16, 64), (64, 32), (128, 128), (32, 32), (4, 8), (1, 64), (2, 1024)]


@pytest.mark.parametrize("m,n", SHAPES_2D)
@pytest.mark.parametrize("dt", ["i32", "f32", "bf16"])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_trans_2d(m, n, dt, num_warps):
    _seed(m, n, dt, num_warps)
    x = _inputs(dt, (m, n))
    out = _poisoned((n, m), x.dtype)
    trans_2d[(1,)](x, out, M=m, N=n, HOW="trans", num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, x.t().contiguous())


@pytest.mark.parametrize("how", ["T", "permute", "method"])
@pytest.mark.parametrize("m,n,num_warps", [(64, 32, 4), (128, 128, 8)])
def test_trans_spellings(how, m, n, num_warps):
    _seed(how, m, n, num_warps)
    x = _inputs("f32", (m, n))
    out = _poisoned((n, m), x.dtype)
    trans_2d[(1,)](x, out, M=m, N=n, HOW=how, num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, x.t().contiguous())


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("shape", [(2, 4, 8), (4, 16, 32), (8, 32, 64)])
@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_permute_3d(order, shape, dt):
    _seed(order, shape, dt)
    x = _inputs(dt, shape)
    ref = x.permute(*order).contiguous()
    out = _poisoned(ref.shape, x.dtype)
    permute_3d[(1,)](x, out, A=shape[0], B=shape[1], C=shape[2], D0=order[0], D1=order[1],
                     D2=order[2], num_warps=4)
    torch.cuda.synchronize()
    check(out, ref)


@pytest.mark.parametrize("n_rows,n_cols,bm,bn,num_warps,dt", [
    (1000, 300, 64, 32, 4, "f32"),
    (77, 50, 32, 64, 8, "bf16"),
    (4096, 8, 128, 8, 4, "i32"),
    (129, 513, 128, 128, 8, "f32"),
])
def test_transpose_matrix_strided_masked(n_rows, n_cols, bm, bn, num_warps, dt):
    _seed(n_rows, n_cols, bm, bn, dt)
    x = _inputs(dt, (n_rows, n_cols + 8))[:, :n_cols]
    out = _poisoned((n_cols, n_rows + 8), x.dtype)
    grid = (kiln.cdiv(n_rows, bm), kiln.cdiv(n_cols, bn))
    transpose_matrix[grid](x, out, n_rows, n_cols, x.stride(0), out.stride(0), BM=bm, BN=bn,
                           num_warps=num_warps)
    torch.cuda.synchronize()
    check(out[:, :n_rows], x.t())
    check_untouched(out[:, n_rows:])  # nothing written past a row


@pytest.mark.parametrize("n,num_warps,iters", [(32, 4, 5), (64, 8, 4), (128, 4, 3)])
def test_trans_in_a_loop(n, num_warps, iters):
    _seed(n, num_warps, iters)
    x = torch.randint(-1000, 1000, (n, n), device="cuda", dtype=torch.int32)
    out = _poisoned((n, n), x.dtype)
    trans_loop[(1,)](x, out, iters, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    ref = x
    for _ in range(iters):
        ref = ref.t() + 1
    check(out, ref.contiguous())


@pytest.mark.parametrize("m,n,num_warps", [(32, 64, 4), (128, 16, 8)])
def test_load_through_transposed_pointers(m, n, num_warps):
    _seed(m, n, num_warps)
    x = torch.randn(m, n, device="cuda")
    out = _poisoned((n, m), x.dtype)
    load_through_transposed_pointers[(1,)](x, out, M=m, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, x.t().contiguous())


@pytest.mark.parametrize("m,n,k,num_warps", [(64, 64, 32, 4), (128, 64, 32, 8)])
def test_dot_with_transposed_b(m, n, k, num_warps):
    _seed(m, n, k, num_warps)
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    out = _poisoned((m, n), torch.float32)
    dot_trans_b[(1,)](a, b, out, M=m, N=n, K=k, num_warps=num_warps)
    torch.cuda.synchronize()
    # exact products, f32 sums in an unspecified order
    torch.testing.assert_close(out, a.float() @ b.float().t(), rtol=1e-4, atol=1e-3 * k**0.5)


@pytest.mark.parametrize("m,n,p,q", [(16, 64, 4, 256), (128, 128, 1024, 16), (8, 8, 64, 1)])
@pytest.mark.parametrize("dt", ["i32", "f32", "bf16"])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_reshape(m, n, p, q, dt, num_warps):
    _seed(m, n, p, q, dt, num_warps)
    x = _inputs(dt, (m, n))
    out = _poisoned((p, q), x.dtype)
    reshape_2d[(1,)](x, out, M=m, N=n, P=p, Q=q, METHOD=num_warps == 8, num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, x.reshape(p, q))


@pytest.mark.parametrize("m,n,g,num_warps", [(16, 128, 32, 4), (64, 256, 16, 8)])
def test_group_sums_through_reshape(m, n, g, num_warps):
    _seed(m, n, g, num_warps)
    x = torch.randn(m, n, device="cuda")
    out = _poisoned((m, n // g), torch.float32)
    group_sums[(1,)](x, out, M=m, N=n, G=g, num_warps=num_warps)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x.reshape(m, n // g, g).sum(dim=2), rtol=1e-5,
                               atol=1e-5 * g**0.5)


@pytest.mark.parametrize("m,n", [(16, 64), (4, 8), (128, 64), (1, 2)])
@pytest.mark.parametrize("dt", ["i32", "f32", "bf16"])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_join_interleaves(m, n, dt, num_warps):
    _seed(m, n, dt, num_warps)
    a, b = _inputs(dt, (m, n)), _inputs(dt, (m, n))
    out = _poisoned((m, 2 * n), a.dtype)
    interleave[(1,)](a, b, out, M=m, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, torch.stack([a, b], dim=-1).reshape(m, 2 * n))


@pytest.mark.parametrize("m,n", [(16, 64), (4, 8), (128, 64), (1, 2)])
@pytest.mark.parametrize("dt", ["i32", "f32", "bf16"])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_split_deinterleaves(m, n, dt, num_warps):
    _seed(m, n, dt, num_warps)
    x = _inputs(dt, (m, 2 * n))
    lo, hi = _poisoned((m, n), x.dtype), _poisoned((m, n), x.dtype)
    deinterleave[(1,)](x, lo, hi, M=m, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    check(lo, x[:, 0::2].contiguous())
    check(hi, x[:, 1::2].contiguous())


@pytest.mark.parametrize("n,num_warps", [(64, 4), (1024, 8), (4096, 4)])
def test_complex_scale_split_join(n, num_warps):
    _seed(n, num_warps)
    x = torch.randn(n, 2, device="cuda")
    out = _poisoned((n, 2), torch.float32)
    complex_scale[(1,)](x, out, 0.5, -2.0, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    ref = torch.view_as_real(torch.view_as_complex(x) * complex(0.5, -2.0))
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)  # FMA contraction may differ
