"""concat_mla_k and concat_mla_absorb_q on the GPU against torch.cat (docs/kernels/mla_cache.md),
bit-exact, with strided inputs (slices of a larger projection output) and T = 0."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import concat_mla as mod  # noqa: E402


def bf16(*shape):
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


def k_inputs(t, h, strided):
    if strided:
        # k_nope: the first 128 of [T, H, 128 + 128] (kv_b output: nope | v);
        # k_rope: the last 64 of [T, 576] (kv_a output: latent | rope), viewed [T, 1, 64].
        k_nope = bf16(t, h, 256)[:, :, :128]
        k_rope = bf16(t, 576)[:, 512:].unsqueeze(1)
    else:
        k_nope, k_rope = bf16(t, h, 128), bf16(t, 1, 64)
    return k_nope, k_rope


@pytest.mark.parametrize("t", [0, 1, 7, 64, 4096])
@pytest.mark.parametrize("h", [12, 128, 1, 5])
@pytest.mark.parametrize("strided", [False, True])
def test_concat_mla_k(t, h, strided):
    k_nope, k_rope = k_inputs(t, h, strided)
    k = torch.full((t, h, 192), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert mod.concat_mla_k(k, k_nope, k_rope) is k
    ref = torch.cat([k_nope, k_rope.expand(t, h, 64)], dim=-1)
    torch.cuda.synchronize()
    assert torch.equal(k.view(torch.int16), ref.view(torch.int16))


def test_concat_mla_k_strided_destination():
    t, h = 33, 12
    k_nope, k_rope = k_inputs(t, h, True)
    big = torch.full((t, h, 256), float("nan"), device="cuda", dtype=torch.bfloat16)
    k = big[:, :, 32:224]
    mod.concat_mla_k(k, k_nope, k_rope)
    ref = torch.cat([k_nope, k_rope.expand(t, h, 64)], dim=-1)
    assert torch.equal(k.view(torch.int16), ref.view(torch.int16))
    assert torch.isnan(big[:, :, :32]).all() and torch.isnan(big[:, :, 224:]).all()


@pytest.mark.parametrize("t", [0, 1, 64, 4096])
@pytest.mark.parametrize("h", [12, 16])
@pytest.mark.parametrize("strided", [False, True])
def test_concat_mla_absorb_q(t, h, strided):
    if strided:
        a = bf16(t, h, 640)[:, :, 64:576]   # row and head strides not the tight ones
        b = bf16(h, t, 64).transpose(0, 1)  # head-major storage
    else:
        a, b = bf16(t, h, 512), bf16(t, h, 64)
    out = mod.concat_mla_absorb_q(a, b)
    ref = torch.cat([a, b], dim=-1)
    torch.cuda.synchronize()
    assert out.shape == (t, h, 576)
    assert torch.equal(out.view(torch.int16), ref.view(torch.int16))


@pytest.mark.parametrize("na,nb", [(512, 64), (128, 64), (100, 28), (8, 8)])
def test_concat_mla_absorb_q_other_widths(launch_mode, na, nb):
    a, b = bf16(9, 3, na), bf16(9, 3, nb)
    out = torch.full((9, 3, na + nb), float("nan"), device="cuda", dtype=torch.bfloat16)
    mod.concat_mla_absorb_q(a, b, out)
    assert torch.equal(out.view(torch.int16), torch.cat([a, b], -1).view(torch.int16))


@pytest.mark.parametrize("na,nb", [(1, 4096), (4096, 1)])
def test_concat_mla_absorb_q_wide_and_narrow(launch_mode, na, nb):
    # Issue 22's hang: a [64, 4096] tile a program compiled for minutes; the rows a program
    # now follow the wider part. Through the bundle: its generic kernel (item 6).
    a, b = bf16(64, 128, na), bf16(64, 128, nb)
    out = mod.concat_mla_absorb_q(a, b)
    torch.cuda.synchronize()
    assert torch.equal(out.view(torch.int16), torch.cat([a, b], -1).view(torch.int16))


@pytest.mark.parametrize("na,nb", [(512, 64), (100, 28), (300, 1)])
def test_concat_mla_absorb_q_any_stride_and_address(launch_mode, na, nb):
    """a strided by odd amounts, b 2 bytes past a 16-byte boundary, out with padded rows:
    inputs the bundle serves with its generic kernel (issue 22 item 6)."""
    t, h = 33, 12
    a = bf16(t, h + 1, na + 3)[:, 1:, 3:]
    b = bf16(t * h * nb + 1)[1:].view(t, h, nb)
    big = torch.full((t, h, na + nb + 5), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = big[:, :, 5:]
    mod.concat_mla_absorb_q(a, b, out)
    torch.cuda.synchronize()
    assert torch.equal(out.view(torch.int16), torch.cat([a, b], -1).view(torch.int16))
    assert torch.isnan(big[:, :, :5]).all()


def test_concat_mla_k_any_stride_and_address(launch_mode):
    """k_nope rows 136 elements apart, k_rope and k at odd element offsets: inputs the bundle
    serves with its generic kernel (issue 22 item 6)."""
    t, h = 33, 12
    k_nope = bf16(t, h, 136)[:, :, 8:]
    k_rope = bf16(t, 73)[:, 9:].unsqueeze(1)
    big = torch.full((t, h, 201), float("nan"), device="cuda", dtype=torch.bfloat16)
    k = big[:, :, 1:193]
    mod.concat_mla_k(k, k_nope, k_rope)
    torch.cuda.synchronize()
    ref = torch.cat([k_nope, k_rope.expand(t, h, 64)], dim=-1)
    assert torch.equal(k.view(torch.int16), ref.view(torch.int16))
    assert torch.isnan(big[:, :, 0]).all() and torch.isnan(big[:, :, 193:]).all()


def test_bad_arguments_raise_before_launch():
    k_nope, k_rope = k_inputs(4, 12, False)
    k = torch.empty(4, 12, 192, device="cuda", dtype=torch.bfloat16)
    for args in [(k.float(), k_nope, k_rope), (k, k_nope[:, :6], k_rope),
                 (k, k_nope, k_rope.expand(4, 12, 64)),
                 (k, bf16(4, 12, 256)[:, :, ::2], k_rope),
                 (torch.empty(4, 12, 128, device="cuda", dtype=torch.bfloat16), k_nope, k_rope)]:
        with pytest.raises((TypeError, ValueError)):
            mod.concat_mla_k(*args)
    a, b = bf16(4, 12, 512), bf16(4, 12, 64)
    for args in [(a, b.float()), (a, bf16(4, 11, 64)), (a[:, :, ::2], b),
                 (a, b, torch.empty(4, 12, 512, device="cuda", dtype=torch.bfloat16))]:
        with pytest.raises((TypeError, ValueError)):
            mod.concat_mla_absorb_q(*args)
    torch.cuda.synchronize()
