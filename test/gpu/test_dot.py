"""kl.dot (tile.warp_dot on ldmatrix + mma.sync, or wgmma where it takes the dot) on the
GPU against torch.

One-tile dots (with and without an accumulator, bf16 and f16, 1/4/8 warps, shapes from
the 16x8x16 minimum to 128x128x64), attention's chain (a @ w.T, its row max, exp2 into
the next dot's A) and a K-loop GEMM ``acc = kl.dot(a, b, acc)`` over masked [BM, BK] x
[BK, BN] blocks of strided matrices with edges in every dimension. The reference is the
float64 product of the same (rounded) inputs; the kernel's products are exact and its sums f32, so
the error bound is a few f32 ulps of the sum of |a_ik * b_kj| per element. Outputs are
poisoned with NaN before each launch.
"""

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402

from dot_kernels import dot_chain, dot_tile, fp8_slot_scores, gemm  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def check(out, a, b, acc=None):
    a64, b64 = a.double(), b.double()
    ref = a64 @ b64 + (acc.double() if acc is not None else 0)
    # f32 accumulation: |error| <= K * 2^-23 * sum_k |a_ik b_kj| (+ |acc|), generously
    bound = (a64.abs() @ b64.abs() + (acc.double().abs() if acc is not None else 0))
    tol = 4 * a.shape[1] * 2.0**-24 * bound + 1e-30
    assert not torch.isnan(out).any()
    err = (out.double() - ref).abs()
    assert (err <= tol).all(), f"max error {err.max().item():.3g}, worst ratio " \
        f"{(err / tol).max().item():.3g}"


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("m,n,k", [(16, 8, 16), (16, 16, 16), (64, 64, 64), (32, 64, 128),
                                   (128, 128, 64), (16, 256, 32),
                                   # sm_90a's staged wgmma: several 64-column chunks of K,
                                   # N = 256, several slabs a warpgroup
                                   (256, 64, 256), (128, 256, 128), (256, 128, 64)])
@pytest.mark.parametrize("has_acc", [False, True])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_dot_tile(dt, m, n, k, has_acc, num_warps):
    if num_warps == 1 and m * n > 64 * 64:
        pytest.skip("a 1-warp program would hold the whole f32 tile in registers")
    if m * n > 128 * 32 * num_warps:
        pytest.skip("the f32 tile alone would take more than half of a thread's registers")
    torch.manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda").to(DTYPES[dt])
    b = torch.randn(k, n, device="cuda").to(DTYPES[dt])
    acc = torch.randn(m, n, device="cuda")
    out = torch.full((m, n), float("nan"), device="cuda")
    dot_tile[(1,)](a, b, acc, out, M=m, N=n, K=k, HAS_ACC=has_acc, num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, a, b, acc if has_acc else None)


@pytest.mark.parametrize("m,n,k", [(1, 64, 64), (2, 8, 16), (4, 32, 32), (8, 128, 64)])
@pytest.mark.parametrize("has_acc", [False, True])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_dot_tile_small_m(m, n, k, has_acc, num_warps):
    # M below 16 (GQA decode's few query heads a KV head) on mma.sync's 16-row tiles: the
    # rows past M are the compiler's, never read from or written to global memory (the
    # output's guard rows after it stay NaN)
    torch.manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
    acc = torch.randn(m, n, device="cuda")
    guarded = torch.full((m + 16, n), float("nan"), device="cuda")
    out = guarded[:m]
    dot_tile[(1,)](a, b, acc, out, M=m, N=n, K=k, HAS_ACC=has_acc, num_warps=num_warps)
    torch.cuda.synchronize()
    check(out, a, b, acc if has_acc else None)
    assert torch.isnan(guarded[m:]).all()


def test_dot_tile_exact_small_integers():
    # integer-valued inputs: every partial sum is exact in f32, so the result is too
    a = torch.randint(-3, 4, (64, 64), device="cuda").to(torch.bfloat16)
    b = torch.randint(-3, 4, (64, 64), device="cuda").to(torch.bfloat16)
    acc = torch.randint(-100, 100, (64, 64), device="cuda").float()
    out = torch.full((64, 64), float("nan"), device="cuda")
    dot_tile[(1,)](a, b, acc, out, M=64, N=64, K=64, HAS_ACC=True, num_warps=4)
    torch.cuda.synchronize()
    assert torch.equal(out, a.float() @ b.float() + acc)



@pytest.mark.parametrize("scaled", [False, True], ids=["plain", "scaled"])
@pytest.mark.parametrize("bm,bn,d,num_warps", [(16, 32, 128, 4), (16, 64, 128, 4),
                                               (16, 32, 128, 1), (32, 64, 64, 4)])
def test_fp8_keys_from_the_gather_slot(bm, bn, d, num_warps, scaled):
    # q . k_b^T with the key blocks e4m3 through a pipelined gather, widened to bf16 in the
    # dot (the codes read in place from the ring slot on sm_90a): the products of a bf16
    # and an e4m3 value are exact, the sums f32. Scaled: times a factor a key gathered
    # beside the keys (on mma.sync read from its slot as the accumulator's columns), one
    # rounding after the sums. Five blocks: the rings wrap.
    torch.manual_seed(bm + bn + d + num_warps)
    blocks = 5
    q = torch.randn(bm, d, device="cuda").to(torch.bfloat16)
    k = (4 * torch.randn(blocks * bn, d, device="cuda")).to(torch.float8_e4m3fn)
    scale = torch.rand(blocks * bn, device="cuda") + 0.5
    out = torch.full((blocks, bm, bn), float("nan"), device="cuda")
    fp8_slot_scores[(1,)](q, k, scale, out, blocks, BM=bm, BN=bn, D=d, SCALED=scaled,
                          num_warps=num_warps)
    torch.cuda.synchronize()
    kf = k.float().to(torch.bfloat16).view(blocks, bn, d).double()
    sc = (scale if scaled else torch.ones_like(scale)).view(blocks, bn).double()
    for b in range(blocks):
        check(out[b], q, kf[b].T * sc[b][None, :])


@pytest.mark.parametrize("m,n,k,d,num_warps", [(64, 64, 32, 32, 4), (16, 32, 128, 64, 4),
                                               (8, 64, 64, 16, 4), (32, 16, 64, 32, 1),
                                               (128, 32, 16, 64, 8)])
def test_dot_chain(m, n, k, d, num_warps):
    # s = a @ w.T (a transposed B read K-major), its row max, p = exp2(s - max) in bf16 as
    # the next dot's A (from the accumulator's registers where each warp holds whole rows)
    torch.manual_seed(m + n + k + d)
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    w = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    v = torch.randn(n, d, device="cuda").to(torch.bfloat16)
    mx = torch.full((m,), float("nan"), device="cuda")
    o = torch.full((m, d), float("nan"), device="cuda")
    dot_chain[(1,)](a, w, v, mx, o, M=m, N=n, K=k, D=d, num_warps=num_warps)
    torch.cuda.synchronize()
    s = a.double() @ w.double().T
    s_bound = a.double().abs() @ w.double().abs().T
    s_tol = 4 * k * 2.0**-24 * s_bound.amax(dim=1) + 1e-30
    assert ((mx.double() - s.amax(dim=1)).abs() <= s_tol).all()
    # p from the kernel's own max (its f32 s differs from the float64 one by s_tol): each
    # p within exp2's and bf16's rounding (2^-8 relative) plus the shift by s's error
    p = torch.exp2(s - mx.double()[:, None])
    p_err = p * (2.0**-8 + 2 * (s_tol[:, None] + s_tol.max()))
    ref = p @ v.double()
    tol = p_err @ v.double().abs() + 4 * n * 2.0**-24 * (p @ v.double().abs()) + 1e-30
    err = (o.double() - ref).abs()
    assert (err <= tol).all(), f"max error {err.max().item():.3g}, worst ratio " \
        f"{(err / tol).max().item():.3g}"


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("bm,bn,bk,num_warps", [(16, 16, 16, 4), (64, 64, 32, 4),
                                                (128, 128, 64, 8), (128, 64, 32, 4),
                                                (128, 128, 128, 8), (64, 256, 64, 4)])
@pytest.mark.parametrize("m,n,k", [(300, 200, 1000), (128, 128, 64)])
def test_gemm(dt, bm, bn, bk, num_warps, m, n, k):
    torch.manual_seed(0)
    # strided rows (padding that must not leak) and edges in every dimension
    a = torch.randn(m, k + 8, device="cuda").to(DTYPES[dt])[:, :k]
    b = torch.randn(k, n + 8, device="cuda").to(DTYPES[dt])[:, :n]
    c = torch.full((m, n + 4), float("nan"), device="cuda")
    grid = (kiln.cdiv(m, bm), kiln.cdiv(n, bn))
    gemm[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
               BM=bm, BN=bn, BK=bk, num_warps=num_warps)
    torch.cuda.synchronize()
    check(c[:, :n], a, b)
    assert torch.isnan(c[:, n:]).all()  # nothing written past N
    # against torch.matmul in fp32 (cuBLAS), with a tolerance for bf16/f16 inputs
    torch.testing.assert_close(c[:, :n], torch.matmul(a.float(), b.float()),
                               rtol=1e-4, atol=1e-3 * k**0.5)
