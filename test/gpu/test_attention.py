"""kernels_dsl/common/attention.py on the GPU against torch's
``scaled_dot_product_attention`` in fp32 (the math backend on fp32 copies of the bf16
inputs): the causal forward in the dense SDPA form and packed varlen (unequal lengths, an
empty sequence, lengths around the block sizes), GQA, head dims 64 and 128, the LSE;
split-KV decoding with lengths that are not multiples of the key block, split or not.

Tolerance (bf16 attention): p is rounded to bf16 for p·v (a relative 2^-9 a weight, the
weights summing to 1) and the output to bf16 (half an ulp, 2^-9 relative), so
|out - ref| <= 2^-8 max|v| + 2^-8 |ref| elementwise; the LSE (f32, exp2/log2 approximate)
within 1e-3 absolute. Outputs are poisoned with NaN before each launch.
"""

import math

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.common import attention as attn  # noqa: E402

F = torch.nn.functional


def _close(out, ref, v):
    assert not torch.isnan(out).any()
    err = (out.float() - ref).abs()
    bound = 2.0**-8 * v.float().abs().max() + 2.0**-8 * ref.abs()
    assert (err <= bound).all(), f"max error {err.max().item():.3g}"


def _ref(q, k, v, causal, scale=None):
    """SDPA in fp32 over [B, H, T, D] (GQA expanded), with the LSE (natural log)."""
    group = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(group, dim=1)
    v = v.float().repeat_interleave(group, dim=1)
    out = F.scaled_dot_product_attention(q.float(), k, v, is_causal=causal, scale=scale)
    s = q.float() @ k.transpose(-1, -2) * (scale or 1 / math.sqrt(q.shape[-1]))
    if causal:
        t = q.shape[2]
        s = s.masked_fill(~torch.ones(t, t, dtype=torch.bool, device=q.device).tril(), -math.inf)
    return out, torch.logsumexp(s, dim=-1)


def _rand(*shape):
    return torch.randn(*shape, device="cuda").to(torch.bfloat16)


@pytest.mark.parametrize("b,hq,hkv,t,d", [(1, 2, 2, 128, 64), (2, 4, 4, 300, 128),
                                          (1, 8, 2, 1000, 64), (2, 4, 1, 257, 128),
                                          (1, 32, 8, 2048, 128)])
@pytest.mark.parametrize("causal", [True, False])
def test_dense(b, hq, hkv, t, d, causal):
    torch.manual_seed(t + d)
    q, k, v = _rand(b, hq, t, d), _rand(b, hkv, t, d), _rand(b, hkv, t, d)
    out = torch.full_like(q, float("nan"))
    _, lse = attn.flash_attn(q, k, v, causal=causal, return_lse=True, out=out)
    torch.cuda.synchronize()
    ref, ref_lse = _ref(q, k, v, causal)
    _close(out, ref, v)
    torch.testing.assert_close(lse, ref_lse, rtol=0, atol=1e-3)


def test_dense_strided_views():
    """q, k, v as [B, H, T, D] views of [B, T, H, D] projections (what a model hands SDPA
    after .transpose(1, 2)), a given scale."""
    torch.manual_seed(1)
    q = _rand(2, 200, 8, 128).transpose(1, 2)
    k, v = _rand(2, 200, 2, 128).transpose(1, 2), _rand(2, 200, 2, 128).transpose(1, 2)
    out = attn.flash_attn(q, k, v, scale=0.05)
    ref, _ = _ref(q, k, v, True, scale=0.05)
    _close(out, ref, v)


@pytest.mark.parametrize("d", [64, 128])
def test_varlen(d):
    torch.manual_seed(d)
    lens = [1, 127, 128, 129, 500, 0, 1000, 64]
    hq, hkv = 8, 2
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32,
                      device="cuda")
    t = int(cu[-1])
    q, k, v = _rand(t, hq, d), _rand(t, hkv, d), _rand(t, hkv, d)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((hq, t), float("nan"), device="cuda")
    attn.flash_attn_varlen(q, k, v, cu, max(lens), out=out, lse=lse)
    torch.cuda.synchronize()
    for i, n in enumerate(lens):
        if n == 0:
            continue
        a, e = int(cu[i]), int(cu[i + 1])
        seq = [x[a:e].transpose(0, 1)[None] for x in (q, k, v)]
        ref, ref_lse = _ref(*seq, True)
        _close(out[a:e].transpose(0, 1)[None], ref, seq[2])
        torch.testing.assert_close(lse[:, a:e], ref_lse[0], rtol=0, atol=1e-3)


@pytest.mark.parametrize("hq,hkv,d", [(16, 2, 128), (64, 8, 128), (8, 8, 64)])
@pytest.mark.parametrize("n_splits", [None, 1, 7])
def test_decode(hq, hkv, d, n_splits):
    torch.manual_seed(hq + d)
    b, seq = 6, 1000
    lengths = torch.tensor([1000, 999, 63, 1, 0, 513], dtype=torch.int32, device="cuda")
    q = _rand(b, hq, d)
    kc, vc = _rand(b, seq, hkv, d), _rand(b, seq, hkv, d)
    for i, n in enumerate(lengths.tolist()):  # past a request's length the cache holds
        kc[i, n:], vc[i, n:] = float("nan"), float("inf")  # anything: never read into out
    out = torch.full_like(q, float("nan"))
    attn.flash_decode(q, kc, vc, lengths, out=out, n_splits=n_splits)
    torch.cuda.synchronize()
    for i in range(b):
        n = int(lengths[i])
        if n == 0:
            assert (out[i] == 0).all()
            continue
        ref, _ = _ref(q[i][None, :, None], kc[i, :n].transpose(0, 1)[None],
                      vc[i, :n].transpose(0, 1)[None], False)
        _close(out[i][None, :, None], ref, vc[i, :n])


def test_decode_benchmark_shape():
    """The benchmark's decode (B = 64, Hq = 64, Hkv = 8, D = 128) at L = 2048, the split
    the wrapper chooses."""
    torch.manual_seed(3)
    b, hq, hkv, seq, d = 64, 64, 8, 2048, 128
    lengths = torch.full((b,), seq, dtype=torch.int32, device="cuda")
    q, kc, vc = _rand(b, hq, d), _rand(b, seq, hkv, d), _rand(b, seq, hkv, d)
    out = attn.flash_decode(q, kc, vc, lengths)
    ref, _ = _ref(q[:, :, None], kc.transpose(1, 2), vc.transpose(1, 2), False)
    _close(out[:, :, None], ref, vc)
