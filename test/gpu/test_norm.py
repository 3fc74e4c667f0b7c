"""RMSNorm and softmax over rows, written in the DSL, against torch references in fp32."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.common import norm  # noqa: E402


def ref_rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + eps) * w.float()).bfloat16()


def ref_softmax(x):
    return torch.softmax(x.float(), dim=1).bfloat16()


def close(out, ref):
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out.float(), ref.float(), rtol=2.0**-7, atol=1e-5)


@pytest.mark.parametrize("variant", [{}, {"rmsnorm_x_evict": ""},
                                     {"rmsnorm_x_evict": "evict_first", "rmsnorm_warps": 8}],
                         ids=lambda v: ",".join(f"{k}={v[k]}" for k in v) or "default")
@pytest.mark.parametrize("t,d", [(1, 7168), (37, 7168), (256, 3584), (5, 100), (3, 8192),
                                 (64, 1), (1000, 7168)])
def test_rmsnorm(t, d, variant):
    """The default and other settings (cache policies change no result)."""
    x = torch.randn(t, d, device="cuda").bfloat16()
    w = (torch.rand(d, device="cuda") + 0.5).bfloat16()
    out = torch.full_like(x, float("nan"))
    norm.rmsnorm(x, w, 1e-6, out, settings=dataclasses.replace(norm.SETTINGS, **variant))
    close(out, ref_rmsnorm(x, w, 1e-6))


@pytest.mark.parametrize("t,d", [(1, 7168), (37, 7168), (256, 1000), (5, 100), (3, 8192),
                                 (64, 1)])
def test_softmax(t, d):
    x = (torch.randn(t, d, device="cuda") * 5).bfloat16()
    out = torch.full_like(x, float("nan"))
    norm.softmax(x, out)
    close(out, ref_softmax(x))


def test_strided_rows():
    big = torch.randn(64, 8192, device="cuda").bfloat16()
    x = big[:, :7168]
    w = torch.ones(7168, device="cuda").bfloat16()
    close(norm.rmsnorm(x, w, 1e-5), ref_rmsnorm(x, w, 1e-5))
    close(norm.softmax(x), ref_softmax(x))


def test_bad_arguments():
    with pytest.raises(TypeError):
        norm.softmax(torch.randn(4, 16, device="cuda"))
    with pytest.raises(ValueError):
        norm.rmsnorm(torch.randn(4, 16, device="cuda").bfloat16(),
                     torch.ones(8, device="cuda").bfloat16())
