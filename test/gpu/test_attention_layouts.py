"""Attention's softmax in the wgmma accumulator layout and the register-A p·v dot, on the
GPU against torch in f32 (sm_90a: wgmma; the other archs run the same kernels on
mma.sync).

``softmax_rows``: one [BM, BN] tile of s = q kᵀ, its row max, exp2 and row sum (the
reductions and the broadcast back in the mma layout, the row vectors in its slice).
``attention_rows``: the online-softmax loop with p (bf16) as the register A of p·v, the
accumulator and the running max and sum carried in registers. BM, BN 64 and 128, head
dim 64 and 128, one and two warpgroups (BM = 64 on two: the warpgroups split each dot's
columns, kiln-tile-accelerate-dot's split-n). Outputs are poisoned with NaN before each
launch.
"""

import math

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.sm90

from attention_layout_kernels import attention_rows, softmax_rows  # noqa: E402

LOG2E = 1.0 / math.log(2.0)
SHAPES = [(bm, bn, d, w) for bm, w in [(64, 4), (128, 4), (128, 8), (64, 8)] for bn in (64, 128)
          for d in (64, 128)
          # the f32 tiles s and acc in registers: at most 192 a thread
          if bm * (bn + d) <= 192 * 32 * w]


def _inputs(bm, n, d, seed):
    torch.manual_seed(seed)
    q = torch.randn(bm, d, device="cuda").to(torch.bfloat16)
    k = torch.randn(n, d, device="cuda").to(torch.bfloat16)
    v = torch.randn(n, d, device="cuda").to(torch.bfloat16)
    return q, k, v


@pytest.mark.parametrize("bm,bn,d,num_warps", SHAPES)
def test_softmax_rows(bm, bn, d, num_warps):
    q, k, _ = _inputs(bm, bn, d, bm + bn + d)
    scale = LOG2E / math.sqrt(d)
    p = torch.full((bm, bn), float("nan"), device="cuda")
    m = torch.full((bm,), float("nan"), device="cuda")
    l_row = torch.full((bm,), float("nan"), device="cuda")
    softmax_rows[(1,)](q, k, p, m, l_row, scale, BM=bm, BN=bn, D=d, num_warps=num_warps)
    torch.cuda.synchronize()
    s = q.double() @ k.double().T
    m_ref = s.max(dim=1).values * scale
    p_ref = torch.exp2(s * scale - m_ref[:, None])
    # s: exact products, an f32 sum (|error| <= D 2^-24 sum |q k| < 1e-3 here); times
    # the scale (< 0.2) in m and in p's exponent: relative 2e-4 at most in p and l
    torch.testing.assert_close(m.double(), m_ref, rtol=0, atol=5e-4)
    torch.testing.assert_close(p.double(), p_ref, rtol=5e-4, atol=1e-6)
    torch.testing.assert_close(l_row.double(), p_ref.sum(dim=1), rtol=5e-4, atol=0)


@pytest.mark.parametrize("bm,bn,d,num_warps", SHAPES)
@pytest.mark.parametrize("blocks", [1, 3])
def test_attention_rows(bm, bn, d, num_warps, blocks):
    n = blocks * bn
    q, k, v = _inputs(2 * bm, n, d, bm * blocks + bn + d)
    o = torch.full((2 * bm, d), float("nan"), device="cuda")
    attention_rows[(2,)](q, k, v, o, n, LOG2E / math.sqrt(d), BM=bm, BN=bn, D=d,
                         num_warps=num_warps)
    torch.cuda.synchronize()
    weights = torch.softmax((q.double() @ k.double().T) / math.sqrt(d), dim=1)
    ref = weights @ v.double()
    assert not torch.isnan(o).any()
    # p is rounded to bf16 for p·v (relative 2^-9 a weight, the weights sum to 1); the
    # normalizer is the f32 sum of the unrounded p
    bound = 2.0**-8 * v.double().abs().max() + 1e-4
    err = (o.double() - ref).abs().max().item()
    assert err <= bound, f"max error {err:.3g} > {bound:.3g}"
