"""The KDA verify chain and the ReplaySSM fold on the GPU (docs/kernels/kda.md), fresh random
inputs: the verify chain's outputs and per-step states equal S sequential kda_fused_decode
launches bit for bit and the fp32 torch reference of test_kda_decode.py (written from the
spec) within its tolerances (state 1e-5 of each head's largest element, outputs one bf16
ulp); the committed SSM and conv pools keep their bytes; the records hold the post-conv k
and v, the gate and beta, the raw draft rows; the fold of the accepted steps leaves exactly
(torch.equal) the SSM and conv states that stepping kda_fused_decode through the same
tokens leaves -- accept 0, partial, full, over the ring, padded requests, the track slot,
several layers of a slot-major unified pool in one launch. JIT and bundle
(``launch_mode``)."""

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import kda_verify as mod  # noqa: E402

import test_kda_decode as dec  # noqa: E402

pytestmark = pytest.mark.sm90

K = V = 128
W = 4
LB = -5.0
BF16 = torch.bfloat16


def records(g, slots, hv, h, ring, dim, layers=()):
    """Random (poison) ReplaySSM records and raw-row records: (rawk, rawv, gk, beta, conv)."""
    lead = tuple(layers)
    return (dec.randn(g, lead + (slots, h, ring, K)), dec.randn(g, lead + (slots, hv, ring, V)),
            dec.randn(g, lead + (slots, hv, ring, K), torch.float32),
            dec.randn(g, lead + (slots, hv, ring), torch.float32),
            dec.randn(g, lead + (slots, ring, dim)))


def run_verify(inputs, h, s, lower_bound, inter=None, recs=None):
    qkv, a, b, a_log, dt_bias, conv_state, conv_w, state, idx, g_out, w_norm = inputs
    rk, rv, rg, rb, rc = recs if recs is not None else (None,) * 5
    out = torch.full((qkv.shape[0], b.shape[1], V), float("nan"), dtype=BF16, device="cuda")
    res = mod.kda_verify_chain(qkv, a, b, a_log, dt_bias, conv_state, conv_w, state, idx, h, s,
                               g_out=g_out, w_norm=w_norm, lower_bound=lower_bound,
                               intermediate_states=inter, rawk=rk, rawv=rv, gk=rg, beta=rb,
                               conv_records=rc, out=out)
    assert res is out
    return out


def step_decode(inputs, h, s, lower_bound, state, conv_state, upto=None):
    """kda_fused_decode one token a launch through the chains (request i's first upto[i]
    drafts, default S) on ``state`` / ``conv_state``: (outputs [N S, HV, V], the SSM state
    after each step)."""
    qkv, a, b, a_log, dt_bias, _, conv_w, _, idx, g_out, w_norm = inputs
    n = idx.shape[0]
    upto = [s] * n if upto is None else upto
    out = torch.full((n * s, b.shape[1], V), float("nan"), dtype=BF16, device="cuda")
    after = []
    for j in range(s):
        live = [i for i in range(n) if j < upto[i]]
        if live:
            tok = torch.tensor([i * s + j for i in live], device="cuda")
            out[tok] = dec.run_fused((qkv[tok], a[tok], b[tok], a_log, dt_bias, conv_state,
                                      conv_w, state, idx[torch.tensor(live, device="cuda")],
                                      None if g_out is None else g_out[tok], w_norm), h,
                                     lower_bound)
        after.append(state.clone())
    return out, after


def named(idx, slots):
    return idx[dec.valid_of(idx, slots)].long()


# ---------------------------------------------------------------------------
# kda_verify_chain
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("norm", [True, False], ids=["norm", "plain"])
@pytest.mark.parametrize("lower_bound", [None, LB], ids=["softplus", "lower_bound"])
@pytest.mark.parametrize("hv,h", [(12, 12), (12, 3), (6, 3), (3, 3)])
@pytest.mark.parametrize("n,s", [(3, 4), (5, 2), (4, 1), (2, 3), (2, 7)])
def test_verify_chain_equals_sequential_decode(launch_mode, n, s, hv, h, lower_bound, norm):
    g = dec.gen(7000 + n * 10 + s + hv * 100 + h + 2 * norm + (lower_bound is None))
    inputs = dec.fused_inputs(g, n * s, n, hv, h, norm)
    qkv, a, b, a_log, dt_bias, conv_state, conv_w, state, idx, g_out, w_norm = inputs
    slots, dim, ring = state.shape[0], qkv.shape[1], s + 2
    state0, conv0 = state.clone(), conv_state.clone()
    inter = dec.randn(g, (slots, s, hv, V, K), torch.float32)
    recs = records(g, slots, hv, h, ring, dim)
    inter0, recs0 = inter.clone(), [r.clone() for r in recs]
    out = run_verify(inputs, h, s, lower_bound, inter, recs)
    torch.cuda.synchronize()
    dec.assert_bits(state, state0, "verify wrote the committed SSM pool")
    dec.assert_bits(conv_state, conv0, "verify wrote the committed conv pool")
    ref_out, after = step_decode(inputs, h, s, lower_bound, state0.clone(), conv0.clone())
    ok = dec.valid_of(idx, slots)
    rows = ok.repeat_interleave(s)
    dec.assert_bits(out[rows], ref_out[rows], "out: verify vs sequential decodes")
    assert not out[~rows].float().any(), "a padded request's output is not zero"
    used = named(idx, slots)
    for j in range(s):
        dec.assert_bits(inter[used, j], after[j][used], f"the state after step {j}")
    # the records: post-conv k, v (the fused kernel's conv, bits), the raw rows (bits), the
    # gate and beta (the spec's formulas, fp32)
    rk, rv, rg, rb, rc = recs
    reqs = torch.nonzero(ok).flatten().tolist()
    tok = torch.tensor([i * s + j for i in reqs for j in range(s)], device="cuda")
    wins = []
    for i in reqs:  # draft j's window: rows j .. j + 3 of (the conv rows | the drafts)
        rows_i = torch.cat([conv0[int(idx[i])], qkv[i * s:(i + 1) * s]])
        wins += [rows_i[j:j + W] for j in range(s)]
    post = dec.post_conv(torch.stack(wins), conv_w).view(len(reqs), s, dim)
    dec.assert_bits(rk[used, :, :s], post[:, :, h * K:2 * h * K].reshape(-1, s, h, K)
                    .transpose(1, 2), "rawk")
    dec.assert_bits(rv[used, :, :s], post[:, :, 2 * h * K:].reshape(-1, s, hv, V)
                    .transpose(1, 2), "rawv")
    dec.assert_bits(rc[used, :s], qkv[tok].view(-1, s, dim), "conv_records")
    # (the kernels' exp, log and sigmoid are the fast hardware forms: within 1e-5 of the
    # largest |g|, as the state's tolerance)
    gate = dec.gate_ref(a[tok].float().view(-1, hv, K), dt_bias, a_log, lower_bound)
    torch.testing.assert_close(rg[used, :, :s], gate.view(-1, s, hv, K).transpose(1, 2),
                               rtol=1e-5, atol=1e-5 * float(gate.abs().max()))
    torch.testing.assert_close(rb[used, :, :s], torch.sigmoid(b[tok].float())
                               .view(-1, s, hv).transpose(1, 2), rtol=1e-5, atol=1e-6)
    # nothing past step S - 1, nothing at the slots no valid request names
    keep = torch.ones(slots, dtype=torch.bool, device="cuda")
    keep[used] = False
    dec.assert_bits(inter[keep], inter0[keep], "intermediate states of unnamed slots")
    for r, r0 in zip(recs, recs0):
        dec.assert_bits(r[keep], r0[keep], "records of unnamed slots")
    for r, r0 in zip(recs[:4], recs0[:4]):
        dec.assert_bits(r[:, :, s:], r0[:, :, s:], "records past step S - 1")
    dec.assert_bits(rc[:, s:], recs0[4][:, s:], "raw rows past step S - 1")


@pytest.mark.parametrize("hv,h,lower_bound", [(12, 12, LB), (12, 3, None), (6, 3, LB)])
@pytest.mark.parametrize("n", [3, 64])
def test_verify_chain_against_fp32_reference(launch_mode, n, hv, h, lower_bound):
    """gamma = 3: the outputs and the last step's state against the fp32 torch reference
    (the post-conv rows of the fused kernel's conv, which test_kda_decode checks against
    torch bit for bit)."""
    s = 4
    g = dec.gen(8000 + n + hv + h)
    inputs = dec.fused_inputs(g, n * s, n, hv, h, True)
    qkv, a, b, a_log, dt_bias, conv_state, conv_w, state, idx, g_out, w_norm = inputs
    slots = state.shape[0]
    ref_out, ref_state, _ = dec.fused_ref(qkv, a, b, a_log, dt_bias, conv_state, conv_w,
                                          state, idx, [s] * n, h, K ** -0.5, lower_bound,
                                          g_out, w_norm, conv=dec.post_conv)
    inter = torch.empty((slots, s, hv, V, K), device="cuda")
    out = run_verify(inputs, h, s, lower_bound, inter)
    torch.cuda.synchronize()
    dec.assert_out_close(out, ref_out, "out")
    used = named(idx, slots)
    final = state.clone()
    final[used] = inter[used, s - 1]
    dec.assert_state_close(final, ref_state, used, "the state after the last draft")


def test_verify_chain_all_padded_and_empty(launch_mode):
    g = dec.gen(8100)
    inputs = dec.fused_inputs(g, 6, 3, 6, 3, False)
    inputs[8][:] = -1
    state0 = inputs[7].clone()
    out = run_verify(inputs, 3, 2, LB)
    torch.cuda.synchronize()
    assert not out.float().any()
    dec.assert_bits(inputs[7], state0, "the pool changed")
    qkv, a, b = inputs[:3]
    empty = mod.kda_verify_chain(qkv[:0], a[:0], b[:0], *inputs[3:8], inputs[8][:0], 3, 2)
    assert empty.shape == (0, 6, V)


# ---------------------------------------------------------------------------
# kda_replayssm_fold
# ---------------------------------------------------------------------------

def unified(g, layers, slots, hv, dim):
    """A slot-major unified pool (per slot, per layer: the SSM heads, then the conv rows):
    the [layers, slots, ...] views of the SSM and the conv state."""
    ssm = hv * V * K
    layer = ssm + (W - 1) * dim // 2  # fp32 elements
    buf = dec.randn(g, (slots * layers * layer,), torch.float32, 0.5)
    h0 = buf.as_strided((layers, slots, hv, V, K), (layer, layers * layer, V * K, K, 1))
    conv = buf.view(BF16).as_strided((layers, slots, W - 1, dim),
                                     (2 * layer, 2 * layers * layer, dim, 1), 2 * ssm)
    conv.copy_(dec.randn(g, conv.shape))
    return h0, conv


@pytest.mark.parametrize("hv,h,lower_bound", [(12, 12, LB), (12, 3, None), (6, 3, LB)])
@pytest.mark.parametrize("n", [8, 64])
def test_fold_equals_decode_over_accepted_tokens(launch_mode, n, hv, h, lower_bound):
    """3 layers; per layer a verify writes the records, then one fold of every layer: the
    SSM and conv states are torch.equal to stepping kda_fused_decode through the accepted
    tokens; the track slots hold the state after their step; every other slot keeps its
    bytes."""
    layers, s = 3, 4
    slots = 2 * n + 4
    dim = 2 * h * K + hv * V
    g = dec.gen(9000 + n + hv + h)
    h0, conv = unified(g, layers, slots, hv, dim)
    perm = torch.randperm(slots, generator=g, device="cuda").to(torch.int32)
    idx, track = perm[:n].clone(), perm[n:2 * n].clone()
    idx[3::7] = -1  # padded
    acc = torch.randint(0, s + 1, (n,), generator=g, device="cuda").to(torch.int32)
    acc[:4] = torch.tensor([0, 2, s, s + 3], dtype=torch.int32)  # none, partial, full, > L
    steps = torch.randint(0, s, (n,), generator=g, device="cuda").to(torch.int32)
    track[1::3] = -1
    recs = records(g, slots, hv, h, s, dim, (layers,))
    h0_before, conv_before = h0.clone(), conv.clone()
    layer_inputs = []
    for ly in range(layers):
        inputs = dec.fused_inputs(g, n * s, n, hv, h, False, slots=slots)
        inputs = inputs[:5] + (conv[ly], inputs[6], h0[ly], idx) + inputs[9:]
        layer_inputs.append(inputs)
        run_verify(inputs, h, s, lower_bound, recs=tuple(r[ly] for r in recs))
    torch.cuda.synchronize()
    dec.assert_bits(h0, h0_before, "verify changed the checkpoint")
    mod.kda_replayssm_fold(h0, *recs[:4], idx, acc, track, steps, conv, recs[4])
    torch.cuda.synchronize()
    upto = acc.clamp(0, s).tolist()
    valid = (dec.valid_of(idx, slots) & (acc > 0)).tolist()
    for ly in range(layers):
        st, cs = h0_before[ly].clone(), conv_before[ly].clone()
        _, after = step_decode(layer_inputs[ly], h, s, lower_bound, st, cs, upto)
        touched = set()
        for i in range(n):
            if not valid[i]:
                continue
            sl = int(idx[i])
            touched.add(sl)
            assert torch.equal(h0[ly, sl], st[sl]), f"layer {ly} request {i}: SSM state"
            assert torch.equal(conv[ly, sl], cs[sl]), f"layer {ly} request {i}: conv state"
            ts, tt = int(track[i]), int(steps[i])
            if ts >= 0 and tt < upto[i]:
                touched.add(ts)
                assert torch.equal(h0[ly, ts], after[tt][sl]), f"layer {ly} track slot {ts}"
        keep = torch.ones(slots, dtype=torch.bool, device="cuda")
        keep[list(touched)] = False
        dec.assert_bits(h0[ly][keep], h0_before[ly][keep], f"layer {ly}: an unnamed slot")
        dec.assert_bits(conv[ly][keep], conv_before[ly][keep], f"layer {ly}: an unnamed conv")


def test_fold_b64_69_layers_one_launch(launch_mode):
    """K3's shape (the bench's case): B = 64, 69 layers, HV = 12, accept 2 of 4. One launch
    for all layers (the grid's layer axis, 64-bit layer offsets past 2^31 bytes) equals
    one launch a layer, bit for bit; the named slots changed, the others did not."""
    layers, n, s, hv, h = 69, 64, 4, 12, 12
    slots = n + 2
    g = dec.gen(9500)
    h0 = dec.randn(g, (layers, slots, hv, V, K), torch.float32, 0.5)
    rawk = dec.randn(g, (layers, slots, h, s, K))
    rawv = dec.randn(g, (layers, slots, hv, s, V))
    gk = -torch.rand((layers, slots, hv, s, K), generator=g, device="cuda") * 5
    beta = torch.rand((layers, slots, hv, s), generator=g, device="cuda")
    idx = torch.randperm(slots, generator=g, device="cuda")[:n].to(torch.int32)
    acc = torch.full((n,), 2, dtype=torch.int32, device="cuda")
    before = h0.clone()
    one = h0.clone()
    mod.kda_replayssm_fold(h0, rawk, rawv, gk, beta, idx, acc)
    for ly in range(layers):
        mod.kda_replayssm_fold(one[ly:ly + 1], rawk[ly:ly + 1], rawv[ly:ly + 1],
                               gk[ly:ly + 1], beta[ly:ly + 1], idx, acc)
    torch.cuda.synchronize()
    assert torch.equal(h0, one)
    keep = torch.ones(slots, dtype=torch.bool, device="cuda")
    keep[idx.long()] = False
    dec.assert_bits(h0[:, keep], before[:, keep], "an unnamed slot changed")
    assert (h0[:, idx.long()] != before[:, idx.long()]).flatten(2).any(-1).all()
