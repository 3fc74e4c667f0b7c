"""KDA chunked prefill on the GPU (docs/kernels/kda.md, "Chunked prefill") against the
token-by-token fp32 recurrence written from the spec in torch (and the naive chunk form,
which must agree with it first), fresh random inputs: bf16 outputs within 1e-2 absolute of
the recurrence on unit-scale inputs, final states within 1e-3 relative (the issue's bars);
T not a multiple of 64 and below 64; the lower bound -5 over long chunks; the gate and beta
in the kernel; varlen with 1, 7 and 64 ragged sequences including one-token ones; initial
state given and absent; HV = 12 and 3; the final state continued by kda_packed_decode.
Each test taking ``launch_mode`` runs JIT-compiled and through the shipped bundle with JIT
forbidden (test/gpu/conftest.py)."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import kda_decode  # noqa: E402
from kernels_dsl.kimi_k3 import kda_prefill as mod  # noqa: E402

from test_kda_decode import gate_ref, l2norm  # noqa: E402

K = V = 128
C = 64
LB = -5.0
SCALE = K ** -0.5
BF16 = torch.bfloat16


def recurrent_ref(q, k, v, g, beta, h0):
    """One sequence, all heads at once: q, k [T, HV, K], v [T, HV, V], g [T, HV, K], beta
    [T, HV], h0 [HV, V, K] (fp32) -> (o [T, HV, V], h)."""
    h = h0.clone()
    o = torch.empty(q.shape[0], q.shape[1], V, device=q.device)
    for t in range(q.shape[0]):
        h = h * torch.exp(g[t])[:, None, :]
        v_new = (v[t] - (h * k[t][:, None, :]).sum(-1)) * beta[t][:, None]
        h = h + v_new[:, :, None] * k[t][:, None, :]
        o[t] = (h * q[t][:, None, :]).sum(-1)
    return o, h


def chunked_ref(q, k, v, g, beta, h0):
    """The naive chunk form of the spec (exp of differences only), heads batched."""
    h = h0.clone()
    o = torch.empty(q.shape[0], q.shape[1], V, device=q.device)
    for c0 in range(0, q.shape[0], C):
        sl = slice(c0, c0 + C)
        qc, kc, vc, bc = (x[sl].transpose(0, 1) for x in (q, k, v, beta))  # [HV, n, .]
        G = torch.cumsum(g[sl], 0).transpose(0, 1)
        n = qc.shape[1]
        decay = torch.exp(torch.clamp(G[:, :, None, :] - G[:, None, :, :], max=0))
        lower = torch.ones(n, n, device=q.device).tril()
        akk = torch.einsum("hid,hjd,hijd->hij", kc, kc, decay) * (lower - torch.eye(
            n, device=q.device))
        aqk = torch.einsum("hid,hjd,hijd->hij", qc, kc, decay) * lower
        eye = torch.eye(n, device=q.device)
        tm = torch.linalg.inv(eye + bc[:, :, None] * akk) * bc[:, None, :]
        w = tm @ (kc * torch.exp(G))
        vp = tm @ vc - w @ h.transpose(1, 2)
        o[sl] = ((qc * torch.exp(G)) @ h.transpose(1, 2) + aqk @ vp).transpose(0, 1)
        gl = G[:, -1]
        h = h * torch.exp(gl)[:, None, :] + vp.transpose(1, 2) @ (kc * torch.exp(
            gl[:, None, :] - G))
    return o, h


def make(lengths, h, hv, gate_mode, varlen, with_h0, seed, strong, similar=False):
    """Inputs of the wrapper (varlen: one row of all tokens, else a batch of equal
    lengths) and the raw per-token tensors for the reference. Weak decays (about -0.01 to
    -0.05 a token: the state crosses chunks, the off-diagonal blocks count) unless
    ``strong`` (the lower bound's range, near -5 a token; a number: the given g's, down
    to it); ``similar``: keys of one direction plus 1 % noise, beta 0.9."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    total = sum(lengths)

    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=gen)

    q, k = randn(total, h, K).to(BF16), randn(total, h, K)
    k = (randn(1, h, K) + 0.01 * k if similar else k).to(BF16)
    v = randn(total, hv, V).to(BF16)
    rand = torch.rand(hv, device="cuda", generator=gen)
    a_log = torch.log(rand * 15 + 1 if strong else rand * 0.08 + 0.02)
    dt_bias = (torch.rand(hv * K, device="cuda", generator=gen) - 0.5)
    if gate_mode == mod.GATE_LOWER_BOUND and not strong:  # sigmoid(x - 6): g near -0.01
        a_log, dt_bias = torch.zeros_like(a_log), dt_bias - 6.0
    if gate_mode == mod.GATE_GIVEN:
        top = -0.1 if not strong else LB if strong is True else strong
        g = top * torch.sigmoid(randn(total, hv, K) + (2 if strong is True else 0))
    else:
        g = randn(total, hv, K).to(BF16)
    beta = (torch.full((total, hv), 0.9, device="cuda") if similar else randn(total, hv)).to(BF16)
    n = len(lengths)
    h0 = randn(n, hv, V, K) * 0.5 if with_h0 else None
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32,
                      device="cuda")
    if varlen:
        shape = lambda x: x[None]  # noqa: E731
    else:
        shape = lambda x: x.reshape(n, lengths[0], *x.shape[1:])  # noqa: E731
    return (q, k, v, g, beta, a_log, dt_bias, h0, cu), [shape(x) for x in (q, k, v, g, beta)]


def reference(raw, h, hv, gate_mode, beta_sigmoid):
    q, k, v, g, beta, a_log, dt_bias, h0, cu = raw
    grp = hv // h
    qf = (l2norm(q.float()) * SCALE).repeat_interleave(grp, 1)
    kf = l2norm(k.float()).repeat_interleave(grp, 1)
    gf = g.float()
    if gate_mode != mod.GATE_GIVEN:
        gf = gate_ref(gf, dt_bias, a_log, LB if gate_mode == mod.GATE_LOWER_BOUND else None)
    bf = torch.sigmoid(beta.float()) if beta_sigmoid else beta.float()
    outs, states = [], []
    for s in range(len(cu) - 1):
        sl = slice(int(cu[s]), int(cu[s + 1]))
        start = h0[s] if h0 is not None else torch.zeros(hv, V, K, device="cuda")
        args = (qf[sl], kf[sl], v[sl].float(), gf[sl], bf[sl], start)
        o, st = recurrent_ref(*args)
        if sl.stop > sl.start:
            oc, hc = chunked_ref(*args)
            torch.testing.assert_close(oc, o, atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(hc, st, atol=1e-4, rtol=1e-4)
        outs.append(o)
        states.append(st)
    return torch.cat(outs), torch.stack(states)


def check(lengths, h, hv, gate_mode=mod.GATE_GIVEN, varlen=False, with_h0=True,
          beta_sigmoid=False, seed=0, strong=False, similar=False):
    raw, args = make(lengths, h, hv, gate_mode, varlen, with_h0, seed, strong, similar)
    gate_in = gate_mode != mod.GATE_GIVEN
    o, ht = mod.kda_chunk_prefill(
        *args, initial_state=raw[7], cu_seqlens=raw[8] if varlen else None,
        use_qk_l2norm_in_kernel=True, use_gate_in_kernel=gate_in,
        A_log=raw[5] if gate_in else None, dt_bias=raw[6] if gate_in else None,
        lower_bound=LB if gate_mode == mod.GATE_LOWER_BOUND else None,
        use_beta_sigmoid_in_kernel=beta_sigmoid)
    ref_o, ref_h = reference(raw, h, hv, gate_mode, beta_sigmoid)
    got = o.reshape(-1, hv, V).float()
    assert (got - ref_o).abs().max().item() <= 1e-2
    for s in range(len(lengths)):
        err = (ht[s] - ref_h[s]).abs().amax(dim=(1, 2))
        assert (err <= 1e-3 * ref_h[s].abs().amax(dim=(1, 2)).clamp(min=1e-30)).all(), (s, err)
    return raw, ht


@pytest.mark.parametrize("t, strong", [(1, False), (37, False), (64, False), (200, False),
                                       (1000, False), (1000, True)])
def test_lengths(launch_mode, t, strong):
    check([t], h=12, hv=12, seed=t, strong=strong)


def test_similar_keys(launch_mode):
    """Keys of one direction, beta 0.9 (the UT inverse's blocks merged, never powers)."""
    check([500], h=4, hv=4, seed=11, similar=True)


def test_huge_decays(launch_mode):
    """Given decays down to -60 a token: 8-row blocks and the capped decay (docs)."""
    check([333], h=4, hv=4, seed=9, strong=-60.0)


@pytest.mark.parametrize("gate_mode", [mod.GATE_SOFTPLUS, mod.GATE_LOWER_BOUND])
@pytest.mark.parametrize("strong", [False, True])
def test_gate_in_kernel(launch_mode, gate_mode, strong):
    check([300, 300], h=3, hv=12, gate_mode=gate_mode, beta_sigmoid=True, with_h0=False,
          strong=strong)


@pytest.mark.parametrize("lengths", [[777], [1, 130, 64, 5, 999, 1, 0],
                                     [(37 * i * i + 11) % 299 + 1 for i in range(64)]],
                         ids=["1", "7", "64"])
def test_varlen(launch_mode, lengths):
    check(lengths, h=3, hv=3, varlen=True, seed=len(lengths))


def test_continues_in_decode(launch_mode):
    """The final state is the decode pool's layout: kda_packed_decode continues it."""
    raw, ht = check([100], h=12, hv=12, gate_mode=mod.GATE_LOWER_BOUND, beta_sigmoid=True)
    gen = torch.Generator(device="cuda").manual_seed(5)
    qkv = torch.randn(1, 3 * 12 * K, device="cuda", generator=gen).to(BF16)
    a = torch.randn(1, 12 * K, device="cuda", generator=gen).to(BF16)
    b = torch.randn(1, 12, device="cuda", generator=gen).to(BF16)
    pool = ht.clone()
    idx = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = kda_decode.kda_packed_decode(qkv, a, b, raw[5], raw[6], pool, idx, 12, SCALE, LB)
    # the reference: the prefill's tokens and the decode token through the recurrence
    tok = (qkv[:, :12 * K].reshape(1, 12, K), qkv[:, 12 * K:24 * K].reshape(1, 12, K),
           qkv[:, 24 * K:].reshape(1, 12, V), a.reshape(1, 12, K), b)
    full = [torch.cat([x, y]) for x, y in zip(raw[:5], tok)]
    cu = torch.tensor([0, 101], dtype=torch.int32, device="cuda")
    ref_o, ref_h = reference((*full, raw[5], raw[6], raw[7], cu), 12, 12,
                             mod.GATE_LOWER_BOUND, True)
    assert (out.float() - ref_o[-1:]).abs().max().item() <= 1e-2
    assert (pool[0] - ref_h[0]).abs().max() <= 1e-3 * ref_h[0].abs().max()
