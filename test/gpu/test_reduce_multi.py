"""kl.reduce of N tiles with a user combine function (tile.reduce with N sources) on the
GPU against torch.

Two sums of one tile (sum(x * x) and sum(x * w)) along axis 0 and 1 of 2-D tiles of
several shapes and over a whole 1-D tile, a (max, argmax) pair of f32/bf16/i32 values with
many ties (the lower index wins), a mixed f32/i32 pair and N = 3 over all axes, on 1, 4
and 16 warps (lines within a thread, within a warp and across warps: the one
shared-memory round trip). Fresh random inputs per case; outputs poisoned before each
launch; float sums checked against float64 with a bound of a few ulps of the sum of |x|.
"""

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402, F401

from reduce_multi_kernels import (  # noqa: E402
    max_argmax_2d,
    max_rows_single,
    sum_count_rows,
    sum_pair_1d,
    sum_pair_2d,
    triple_all,
)

WARPS = [1, 4, 16]
SHAPES_2D = [(64, 64), (16, 256), (256, 16), (2, 1024), (1024, 2), (4, 8), (32, 128),
             (128, 32), (1, 512)]
DTYPES = {"i32": torch.int32, "f32": torch.float32, "bf16": torch.bfloat16}


def _seed(*params):
    torch.manual_seed(hash(params) & 0xFFFFFFFF)


def check_sum(out, terms, dim):
    """``out`` against the float64 sum of ``terms`` along ``dim`` (None: all)."""
    t = terms.double()
    ref = t.sum() if dim is None else t.sum(dim)
    mag = t.abs().sum() if dim is None else t.abs().sum(dim)
    tol = 2.0**-16 * mag + 1e-30
    assert not torch.isnan(out).any()
    err = (out.double() - ref).abs()
    assert (err <= tol).all(), f"max error {err.max().item():.3g}, worst ratio " \
        f"{(err / tol).max().item():.3g}"


@pytest.mark.parametrize("n", [32, 256, 1024, 4096])
@pytest.mark.parametrize("num_warps", WARPS)
def test_sum_pair_1d(n, num_warps):
    _seed(n, num_warps)
    x = torch.randn(n, device="cuda")
    w = torch.randn(n, device="cuda")
    out = torch.full((2,), float("nan"), device="cuda")
    sum_pair_1d[(1,)](x, w, out, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    check_sum(out[0:1], (x * x)[None], 1)
    check_sum(out[1:2], (x.double() * w.double())[None], 1)


@pytest.mark.parametrize("m,n", SHAPES_2D)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("num_warps", WARPS)
def test_sum_pair_2d(m, n, axis, num_warps):
    _seed(m, n, axis, num_warps)
    x = torch.randn(m, n, device="cuda")
    w = torch.randn(m, n, device="cuda")
    k = n if axis == 0 else m
    s = torch.full((k,), float("nan"), device="cuda")
    t = torch.full((k,), float("nan"), device="cuda")
    sum_pair_2d[(1,)](x, w, s, t, M=m, N=n, AXIS=axis, num_warps=num_warps)
    torch.cuda.synchronize()
    check_sum(s, x.double() * x.double(), axis)
    check_sum(t, x.double() * w.double(), axis)
    torch.testing.assert_close(s, (x * x).sum(axis), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(t, (x * w).sum(axis), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n", SHAPES_2D)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dt", ["f32", "bf16", "i32"])
@pytest.mark.parametrize("num_warps", WARPS)
def test_max_argmax_ties_go_to_the_lowest_index(m, n, axis, dt, num_warps):
    _seed(m, n, axis, dt, num_warps)
    # few distinct values: most lines hold their maximum several times
    x = torch.randint(-3, 4, (m, n), device="cuda").to(DTYPES[dt])
    k = n if axis == 0 else m
    v = torch.full((k,), -99, device="cuda", dtype=DTYPES[dt])
    i = torch.full((k,), -1, device="cuda", dtype=torch.int32)
    max_argmax_2d[(1,)](x, v, i, M=m, N=n, AXIS=axis, num_warps=num_warps)
    torch.cuda.synchronize()
    ref_v = x.float().amax(axis).to(DTYPES[dt])
    # the lowest index of the maximum (torch.argmax does not promise which on ties)
    hit = x.float() == x.float().amax(axis, keepdim=True)
    pos = torch.arange(x.shape[axis], device="cuda")
    pos = pos[:, None] if axis == 0 else pos[None, :]
    ref_i = torch.where(hit, pos, x.shape[axis]).amin(axis).to(torch.int32)
    assert torch.equal(v, ref_v)
    assert torch.equal(i, ref_i), f"{(i != ref_i).sum().item()} of {k} indices differ"


@pytest.mark.parametrize("m,n", [(16, 64), (64, 16), (2, 1024), (32, 128)])
@pytest.mark.parametrize("num_warps", WARPS)
def test_mixed_dtype_pair(m, n, num_warps):
    _seed(m, n, num_warps)
    x = torch.randn(m, n, device="cuda")
    s = torch.full((m,), float("nan"), device="cuda")
    c = torch.full((m,), -1, device="cuda", dtype=torch.int32)
    sum_count_rows[(1,)](x, s, c, M=m, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    check_sum(s, torch.where(x > 0, x, 0.0).double(), 1)
    assert torch.equal(c, (x > 0).sum(1).to(torch.int32))


@pytest.mark.parametrize("m,n", [(8, 32), (64, 64), (1, 4096), (32, 128)])
@pytest.mark.parametrize("num_warps", WARPS)
def test_triple_over_all_axes(m, n, num_warps):
    _seed(m, n, num_warps)
    x = torch.randn(m, n, device="cuda")
    w = torch.randn(m, n, device="cuda")
    out = torch.full((2,), float("nan"), device="cuda")
    cnt = torch.full((1,), -1, device="cuda", dtype=torch.int32)
    triple_all[(1,)](x, w, out, cnt, M=m, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    check_sum(out[0:1], x.double().reshape(1, -1), 1)
    check_sum(out[1:2], (x.double() * w.double()).reshape(1, -1), 1)
    assert cnt.item() == (x > 0).sum().item()


@pytest.mark.parametrize("m,n", [(16, 32), (4, 1024)])
@pytest.mark.parametrize("num_warps", WARPS)
def test_single_tile(m, n, num_warps):
    _seed(m, n, num_warps)
    x = torch.randn(m, n, device="cuda")
    y = torch.full((m,), float("nan"), device="cuda")
    max_rows_single[(1,)](x, y, M=m, N=n, num_warps=num_warps)
    torch.cuda.synchronize()
    assert torch.equal(y, x.amax(1))
