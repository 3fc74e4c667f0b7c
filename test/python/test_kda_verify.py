"""The KDA verify chain and the ReplaySSM fold (docs/kernels/kda.md) on the CPU, their
launches redirected to the interpreter: the verify chain's outputs and per-step states equal
S sequential kda_fused_decode launches bit for bit, the committed states are untouched, its
records hold the post-conv k and v, the gate and beta the spec names (the raw rows for the
conv); the fold of the accepted steps leaves exactly the states (SSM and conv) that stepping
the fused decode through the same tokens leaves -- accept 0, partial, full, a padded request,
the track slot, several layers of a unified pool in one launch; the wrappers reject bad
arguments before any launch; every AOT specialization compiles for sm_90a, sm_100a and
sm_103a. The interpreter sums a tile in one order (test_interpreter.py), so its bits are a
model of the GPU's: test/gpu/test_kda_verify.py checks the same equalities there."""

import dataclasses
import functools
import re

import numpy as np
import pytest

from kernels_dsl import kimi_k3
from kernels_dsl.kimi_k3 import kda_decode
from kernels_dsl.kimi_k3 import kda_verify as mod
from kiln.testing import FakeCudaTensor

import test_kda_decode as dec
from test_kda_decode import BF16, BF16_POISON, F32_POISON, LB, H, K, V, W, aligned

via_interpreter = dec.via_interpreter  # the fixture: launches run in the interpreter


@pytest.fixture(autouse=True)
def host_workspace(monkeypatch):
    """The verify chain's workspace (torch.empty on the GPU): a host array for the
    interpreter's inputs, a stand-in for the argument checks' (no torch here)."""

    def empty(like, shape, dtype):
        assert dtype == "float32"
        if isinstance(like, (np.ndarray, dec.HostTensor)):
            return aligned(shape, np.float32)
        return FakeCudaTensor(shape, "float32", device=like.device)

    monkeypatch.setattr(mod, "_empty", empty)

ARCHS = ("sm_90a", "sm_100a", "sm_103a")


def bits(x):
    return x.view(np.uint16 if x.dtype == BF16 else np.uint32)


def poisoned(x):
    """Where x still holds the poison NaN test_kda_decode.aligned fills it with."""
    return bits(x) == (BF16_POISON if x.dtype == BF16 else F32_POISON)


def assert_bits(a, b, what):
    np.testing.assert_array_equal(bits(np.ascontiguousarray(a)), bits(np.ascontiguousarray(b)),
                                  err_msg=what)


# ---------------------------------------------------------------------------
# Inputs: S draft rows a request, records a slot
# ---------------------------------------------------------------------------

def chain_inputs(rng, n, s, hv, h, slots, norm):
    """(qkv, a, b, g_out, a_log, dt_bias, conv_state, conv_w, state, w_norm) for N requests
    of S drafts (kda_fused_decode's input builder, T = N S)."""
    return dec.fused_inputs(rng, n * s, n, hv, h, slots, norm)


def records(slots, hv, h, ring, dim, layers=None):
    """Poisoned ReplaySSM records and conv records, [slots, ...] (or [layers, slots, ...])."""
    lead = () if layers is None else (layers,)
    return (aligned(lead + (slots, h, ring, K), BF16), aligned(lead + (slots, hv, ring, V), BF16),
            aligned(lead + (slots, hv, ring, K), np.float32),
            aligned(lead + (slots, hv, ring), np.float32),
            aligned(lead + (slots, ring, dim), BF16))


def run_verify(inputs, idx, h, s, lower_bound, inter=None, recs=None):
    qkv, a, b, g_out, a_log, dt_bias, conv_state, conv_w, state, w_norm = inputs
    hv = b.shape[1]
    out = aligned((qkv.shape[0], hv, V), BF16)
    rk, rv, rg, rb, rc = recs if recs is not None else (None,) * 5
    res = mod.kda_verify_chain(
        H(qkv), H(a), H(b), H(a_log), H(dt_bias), H(conv_state), H(conv_w), H(state), H(idx),
        h, s, g_out=H(g_out), w_norm=H(w_norm), lower_bound=lower_bound,
        intermediate_states=H(inter), rawk=H(rk), rawv=H(rv), gk=H(rg), beta=H(rb),
        conv_records=H(rc), out=H(out))
    assert res.a is out
    return out


def step_decode(inputs, idx, s, h, lower_bound, state, conv_state, upto=None):
    """Steps kda_fused_decode one token a launch (the static layout) through the chains'
    tokens: request i's first upto[i] (default all S) drafts. Returns the outputs [N S, HV,
    V] (NaN-poisoned where not stepped) and the states after each step ([S] of copies)."""
    qkv, a, b, g_out, a_log, dt_bias, _, conv_w, _, w_norm = inputs
    n, hv = len(idx), b.shape[1]
    upto = [s] * n if upto is None else upto
    out = aligned((n * s, hv, V), BF16)
    after = []
    for j in range(s):
        live = [i for i in range(n) if j < upto[i]]
        tok = [i * s + j for i in live]
        pick = lambda x: None if x is None else np.ascontiguousarray(x[tok])  # noqa: E731
        if live:
            out[tok] = dec.run_fused(pick(qkv), pick(a), pick(b), pick(g_out), a_log, dt_bias,
                                     conv_state, conv_w, state, w_norm,
                                     aligned((len(live),), np.int32, idx[live]), None, h,
                                     lower_bound)
        after.append((state.copy(), conv_state.copy()))
    return out, after


# ---------------------------------------------------------------------------
# kda_verify_chain
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("hv,h,lower_bound,norm", [(6, 3, LB, True), (12, 3, None, False),
                                                   (4, 4, LB, False)])
def test_verify_chain_equals_sequential_decode(via_interpreter, hv, h, lower_bound, norm):
    """Outputs and every step's state: S sequential fused decodes, bit for bit; the
    committed states untouched; the records and the raw rows of every step; a padded
    request (zero outputs, nothing written at any slot)."""
    rng = np.random.default_rng(hv * 7 + h + norm)
    n, s, slots, ring = 3, 4, 5, 6
    inputs = chain_inputs(rng, n, s, hv, h, slots, norm)
    qkv, a, b, g_out, a_log, dt_bias, conv_state, conv_w, state, w_norm = inputs
    dim = qkv.shape[1]
    idx = aligned((n,), np.int32, [3, -1, 0])
    state0, conv0 = state.copy(), conv_state.copy()
    inter = aligned((slots, s, hv, V, K), np.float32)
    recs = records(slots, hv, h, ring, dim)
    out = run_verify(inputs, idx, h, s, lower_bound, inter, recs)
    name, grid, constexprs, warps, _ = via_interpreter[-1]
    assert grid == (n * hv,) and constexprs["ROWS"] == mod.SETTINGS.verify_rows
    assert name == "kda_verify_chain" + ("_lower_bound" if lower_bound else "") + (
        "_norm" if norm else "")
    assert_bits(state, state0, "the committed SSM state changed")
    assert_bits(conv_state, conv0, "the committed conv state changed")
    ref_out, after = step_decode(inputs, idx, s, h, lower_bound, state0.copy(), conv0.copy())
    ok = [0, 2]
    for i in ok:
        assert_bits(out[i * s:(i + 1) * s], ref_out[i * s:(i + 1) * s], f"out of request {i}")
    assert not out[s:2 * s].astype(np.float32).any(), "a padded request's output is not zero"
    for j in range(s):
        for i in ok:
            assert_bits(inter[idx[i], j], after[j][0][idx[i]], f"state after step {j}")
    # records: the post-conv k, v (the spec's conv, bits), the gate and beta (float64 ref)
    rk, rv, rg, rb, rc = recs
    for i in ok:
        sl = int(idx[i])
        win = np.concatenate([conv0[sl], qkv[i * s:(i + 1) * s]])
        post = np.stack([dec.conv_silu_ref(win[j:j + W], conv_w) for j in range(s)])
        qk = post[:, :2 * h * K]
        assert_bits(rk[sl, :, :s], qk[:, h * K:].reshape(s, h, K).transpose(1, 0, 2), "rawk")
        assert_bits(rv[sl, :, :s], post[:, 2 * h * K:].reshape(s, hv, V).transpose(1, 0, 2),
                    "rawv")
        assert_bits(rc[sl, :s], qkv[i * s:(i + 1) * s], "conv_records")
        f = np.float64
        for j in range(s):
            t = i * s + j
            g = dec.gate_ref(f(a[t]).reshape(hv, K), f(dt_bias).reshape(hv, K),
                             f(a_log)[:, None], lower_bound)
            np.testing.assert_allclose(rg[sl, :, j], g, rtol=1e-5, atol=1e-7)  # fp32 math
            np.testing.assert_allclose(rb[sl, :, j], 1 / (1 + np.exp(-f(b[t]))), rtol=1e-6)
    # nothing beyond step S - 1, nothing at slots no valid request names
    for x in (rk, rv, rg):
        assert poisoned(x[:, :, s:]).all()
    assert poisoned(rb[:, :, s:]).all() and poisoned(rc[:, s:]).all()
    others = [sl for sl in range(slots) if sl not in (3, 0)]
    assert poisoned(inter[others]).all()
    for x in recs:
        assert poisoned(x[others]).all()


def test_verify_chain_without_optional_outputs(via_interpreter):
    """No intermediate states, no records: the same outputs; S = 1 is one decode step."""
    rng = np.random.default_rng(50)
    for s in (1, 3):
        inputs = chain_inputs(rng, 2, s, 6, 6, 3, False)
        state, conv_state = inputs[8], inputs[6]
        idx = aligned((2,), np.int32, [2, 1])
        out = run_verify(inputs, idx, 6, s, LB)
        ref, _ = step_decode(inputs, idx, s, 6, LB, state.copy(), conv_state.copy())
        assert_bits(out, ref, f"S = {s}")


# ---------------------------------------------------------------------------
# kda_replayssm_fold
# ---------------------------------------------------------------------------

def unified(rng, layers, slots, hv, dim):
    """A slot-major unified pool: per slot, per layer, the HV heads' SSM state then the conv
    state; the [layers, slots, ...] views of both (layer pitch < slot pitch)."""
    ssm, conv = hv * V * K, (W - 1) * dim
    layer = ssm + conv // 2  # in fp32 elements (the conv state is bf16)
    buf = aligned((slots * layers * layer,), np.float32,
                  rng.standard_normal(slots * layers * layer) * 0.5)
    st = np.lib.stride_tricks.as_strided(buf, (layers, slots, hv, V, K),
                                         (layer * 4, layers * layer * 4, V * K * 4, K * 4, 4))
    cbuf = buf.view(BF16)
    cbuf.view(np.uint16)[...] = (rng.standard_normal(cbuf.size).astype(BF16)).view(np.uint16)
    buf.reshape(slots * layers, layer)[:, :ssm] = rng.standard_normal((slots * layers, ssm)) * 0.5
    cv = np.lib.stride_tricks.as_strided(cbuf[2 * ssm:], (layers, slots, W - 1, dim),
                                         (layer * 4, layers * layer * 4, dim * 2, 2))
    return st, cv


def run_fold(h0, recs, idx, acc, track=None, steps=None, conv_state=None):
    rk, rv, rg, rb, rc = recs
    mod.kda_replayssm_fold(H(h0), H(rk), H(rv), H(rg), H(rb), H(aligned(idx.shape, np.int32,
                                                                         idx)),
                           H(aligned(acc.shape, np.int32, acc)), H(track), H(steps),
                           H(conv_state), H(None if conv_state is None else rc))


@pytest.mark.parametrize("hv,h,lower_bound", [(6, 3, LB), (4, 1, None)])
def test_fold_equals_decode_over_accepted_tokens(via_interpreter, hv, h, lower_bound):
    """Two layers of a unified pool: verify each layer (records), fold both in one launch
    with accept lengths 0, partial, full (with its bonus token), a padded request, one
    over the ring (replays L steps): the SSM and conv states are bit for bit what stepping
    kda_fused_decode through the accepted tokens leaves; the track slot holds the state
    after its step; slots no request names keep their bytes."""
    rng = np.random.default_rng(60 + hv + h)
    layers, n, s, slots = 2, 6, 4, 9
    dim = 2 * h * K + hv * V
    h0, conv = unified(rng, layers, slots, hv, dim)
    idx = np.array([4, 0, -1, 7, 2, 5], np.int32)
    acc = np.array([2, 4, 3, 0, 1, 9], np.int32)  # 9 > L = S: replays S
    track = aligned((n,), np.int32, [6, -1, 3, 8, 1, 3])
    steps = aligned((n,), np.int32, [0, 1, 0, 0, 0, 3])
    recs = records(slots, hv, h, s, dim, layers)
    layer_inputs = []
    h0_before, conv_before = h0.copy(), conv.copy()
    for ly in range(layers):
        inputs = chain_inputs(rng, n, s, hv, h, slots, False)
        inputs = inputs[:6] + (conv[ly], inputs[7], h0[ly], inputs[9])
        layer_inputs.append(inputs)
        run_verify(inputs, aligned((n,), np.int32, idx), h, s, lower_bound,
                   recs=tuple(r[ly] for r in recs))
    assert_bits(h0, h0_before, "verify changed the checkpoint")
    run_fold(h0, recs, idx, acc, track, steps, conv)
    name, grid, _, _, _ = via_interpreter[-1]
    assert name == "kda_replayssm_fold" and grid == (n, layers * hv)
    upto = [int(min(max(x, 0), s)) for x in acc]
    for ly in range(layers):
        st, cs = h0_before[ly].copy(), conv_before[ly].copy()
        _, after = step_decode(layer_inputs[ly], idx, s, h, lower_bound, st, cs, upto)
        live = [i for i in range(n) if 0 <= idx[i] < slots and upto[i] > 0]
        for i in live:
            sl = idx[i]
            assert_bits(h0[ly, sl], st[sl], f"layer {ly} request {i}: the folded state")
            assert_bits(conv[ly, sl], cs[sl], f"layer {ly} request {i}: the rolled conv state")
        # the track slots: request 0 -> slot 6 after step 0, request 4 -> slot 1 after
        # step 0 (its only one), request 5 -> slot 3 after step 3; request 3 (accept 0)
        # and request 2 (padded) name slots 8 and 3 and write nothing
        assert_bits(h0[ly, 6], after[0][0][4], "track slot 6")
        assert_bits(h0[ly, 1], after[0][0][2], "track slot 1")
        assert_bits(h0[ly, 3], after[3][0][5], "track slot 3")
        named = {int(idx[i]) for i in live} | {6, 1, 3}
        assert named == set(range(slots)) - {7, 8}
        for sl in set(range(slots)) - named:
            assert_bits(h0[ly, sl], h0_before[ly, sl], f"layer {ly} slot {sl} changed")
            assert_bits(conv[ly, sl], conv_before[ly, sl], f"layer {ly} conv slot {sl}")


def test_fold_without_track_and_conv(via_interpreter):
    """The SSM fold alone (one layer as x[None]): the same state as with the options."""
    rng = np.random.default_rng(70)
    n, s, slots, hv, h = 2, 3, 3, 6, 6
    dim = 2 * h * K + hv * V
    inputs = chain_inputs(rng, n, s, hv, h, slots, False)
    idx = np.array([1, 2], np.int32)
    recs = records(slots, hv, h, s, dim)
    run_verify(inputs, aligned((n,), np.int32, idx), h, s, LB, recs=recs)
    state = inputs[8]
    st = state.copy()
    step_decode(inputs, idx, s, h, LB, st, inputs[6].copy(), [3, 2])
    before = state.copy()
    run_fold(state[None], tuple(r[None] for r in recs), idx, np.array([3, 2], np.int32))
    for sl in (1, 2):
        assert_bits(state[sl], st[sl], f"slot {sl}")
    assert_bits(state[0], before[0], "slot 0")


# ---------------------------------------------------------------------------
# Argument checks: all before any CUDA call
# ---------------------------------------------------------------------------

F = functools.partial(FakeCudaTensor, device="cuda:0")


@pytest.fixture
def no_launch(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the wrapper launched before rejecting")

    monkeypatch.setattr(mod.L, "launch", boom)


def verify_args(n=4, s=4, hv=12, h=12, slots=8, ring=6, norm=True, recs=True):
    dim = 2 * h * K + hv * V
    t = n * s
    args = dict(mixed_qkv=F((t, dim)), a=F((t, hv * K)), b=F((t, hv)),
                A_log=F((hv,), "float32"), dt_bias=F((hv * K,), "float32"),
                conv_state=F((slots, W - 1, dim)), conv_weight=F((dim, W)),
                state=F((slots, hv, V, K), "float32"), ssm_state_indices=F((n,), "int32"),
                num_q_heads=h, num_steps=s, out=F((t, hv, V)),
                intermediate_states=F((slots, s, hv, V, K), "float32"))
    if norm:
        args.update(g_out=F((t, hv * V)), w_norm=F((V,)))
    if recs:
        args.update(rawk=F((slots, h, ring, K)), rawv=F((slots, hv, ring, V)),
                    gk=F((slots, hv, ring, K), "float32"), beta=F((slots, hv, ring), "float32"),
                    conv_records=F((slots, ring, dim)))
    return args


def fold_args(bsz=4, layers=3, slots=8, hv=12, h=12, ring=4, track=True, conv=True):
    dim = 2 * h * K + hv * V
    args = dict(h0=F((layers, slots, hv, V, K), "float32"),
                rawk=F((layers, slots, h, ring, K)), rawv=F((layers, slots, hv, ring, V)),
                gk=F((layers, slots, hv, ring, K), "float32"),
                beta=F((layers, slots, hv, ring), "float32"), indices=F((bsz,), "int32"),
                accept_len=F((bsz,), "int32"))
    if track:
        args.update(track_indices=F((bsz,), "int32"), steps_to_track=F((bsz,), "int32"))
    if conv:
        args.update(conv_state=F((layers, slots, W - 1, dim)),
                    conv_records=F((layers, slots, ring, dim)))
    return args


def test_verify_argument_checks(no_launch):
    def call(**changes):
        args = verify_args()
        args.update(changes)
        return mod.kda_verify_chain(**args)

    with pytest.raises(TypeError, match="conv_state must be bfloat16"):
        call(conv_state=F((8, 3, 4608), "float32"))
    with pytest.raises(TypeError, match="rawk must be bfloat16"):
        call(rawk=F((8, 12, 6, K), "float32"))
    with pytest.raises(TypeError, match="gk must be float32"):
        call(gk=F((8, 12, 6, K)))
    with pytest.raises(TypeError, match="intermediate_states must be float32"):
        call(intermediate_states=F((8, 4, 12, V, K)))
    for bad in (0, -1, True, 2.0, None):
        with pytest.raises(ValueError, match="num_steps must be a positive int"):
            call(num_steps=bad)
    with pytest.raises(ValueError, match="mixed_qkv must have shape"):
        call(num_steps=3)  # N S rows
    with pytest.raises(ValueError, match="intermediate_states must have shape"):
        call(intermediate_states=F((8, 3, 12, V, K), "float32"))
    with pytest.raises(ValueError, match="intermediate_states must have shape"):
        call(intermediate_states=F((7, 4, 12, V, K), "float32"))
    with pytest.raises(ValueError, match="at least num_steps"):
        call(**{k: v for k, v in verify_args(ring=3).items() if k != "conv_records"},
             conv_records=None)
    with pytest.raises(ValueError, match="at least num_steps"):
        call(rawk=None, rawv=None, gk=None, beta=None, conv_records=F((8, 2, 4608)))
    with pytest.raises(ValueError, match="differs from the records"):
        call(conv_records=F((8, 5, 4608)))
    with pytest.raises(ValueError, match="records are rawk, rawv, gk and beta together"):
        call(beta=None)
    with pytest.raises(ValueError, match="rawv must have shape"):
        call(rawv=F((8, 12, 5, V)))
    with pytest.raises(ValueError, match="rawk must have shape"):
        call(rawk=F((8, 6, 6, K)))
    with pytest.raises(ValueError, match="dense past its first"):
        call(gk=F((8, 12, 6, K), "float32", strides=(12 * 6 * K, 6 * K, 1, 6)))
    with pytest.raises(ValueError, match="pitch of dimension 0 of rawv"):
        call(rawv=F((8, 12, 6, V), strides=(12 * 6 * V + 4, 6 * V, V, 1)))
    with pytest.raises(ValueError, match="pitch of dimension 0 of intermediate_states"):
        call(intermediate_states=F((8, 4, 12, V, K), "float32",
                                   strides=(4 * 12 * V * K - 4, 12 * V * K, V * K, K, 1)))
    with pytest.raises(ValueError, match="both g_out and w_norm"):
        call(w_norm=None)
    with pytest.raises(ValueError, match="rawk must be 16-byte aligned"):
        call(rawk=F((8, 12, 6, K), address=0x7F0000000008))
    with pytest.raises(ValueError, match="one device"):
        call(beta=F((8, 12, 6), "float32", device="cuda:1"))
    with pytest.raises(ValueError, match="row stride of conv_state"):
        call(conv_state=F((8, 3, 4608), strides=(3 * 4616, 4612, 1)))
    # any GVA ratio (no cluster); beta at any address and slot pitch; no optional outputs;
    # a unified pool's layer views (pitches past a slot)
    for ok in (verify_args(hv=12, h=1),
               dict(beta=F((8, 12, 6), "float32", strides=(12 * 6 + 1, 6, 1),
                           address=0x7F0000000004)),
               dict(intermediate_states=None, rawk=None, rawv=None, gk=None, beta=None,
                    conv_records=None, g_out=None, w_norm=None),
               dict(rawv=F((8, 12, 6, V), strides=(69 * 12 * 6 * V + 8, 6 * V, V, 1)))):
        with pytest.raises(AssertionError, match="launched"):
            call(**ok)


def test_fold_argument_checks(no_launch):
    def call(**changes):
        args = fold_args()
        args.update(changes)
        return mod.kda_replayssm_fold(**args)

    with pytest.raises(TypeError, match="h0 must be float32"):
        call(h0=F((3, 8, 12, V, K)))
    with pytest.raises(TypeError, match="accept_len must be int32"):
        call(accept_len=F((4,), "int64"))
    with pytest.raises(TypeError, match="steps_to_track must be int32"):
        call(steps_to_track=F((4,), "int64"))
    with pytest.raises(ValueError, match="h0 must have shape"):
        call(h0=F((8, 12, V, K), "float32"))  # one layer: h0[None]
    with pytest.raises(ValueError, match="rawk must have shape"):
        call(rawk=F((2, 8, 12, 4, K)))
    with pytest.raises(ValueError, match="multiple of num_q_heads"):
        call(rawk=F((3, 8, 5, 4, K)))
    with pytest.raises(ValueError, match="gk must have shape"):
        call(gk=F((3, 8, 12, 5, K), "float32"))
    with pytest.raises(ValueError, match="accept_len must have shape"):
        call(accept_len=F((5,), "int32"))
    with pytest.raises(ValueError, match="both track_indices and steps_to_track"):
        call(steps_to_track=None)
    with pytest.raises(ValueError, match="both conv_state and conv_records"):
        call(conv_records=None)
    with pytest.raises(ValueError, match="conv_state must have shape"):
        call(conv_state=F((3, 8, 4, 4608)))
    with pytest.raises(ValueError, match="slot stride of conv_state"):
        call(conv_state=F((3, 8, 3, 4608), strides=(8 * 3 * 4608, 3 * 4608 + 4, 4608, 1)))
    with pytest.raises(ValueError, match="pitch of dimension 1 of h0"):
        call(h0=F((3, 8, 12, V, K), "float32",
                  strides=(8 * 12 * V * K, 12 * V * K + 2, V * K, K, 1)))
    with pytest.raises(ValueError, match="dense past its first 2"):
        call(rawv=F((3, 8, 12, 4, V), strides=(8 * 12 * 4 * V, 12 * 4 * V, 4 * V, 1, 4)))
    with pytest.raises(ValueError, match="h0 must be 16-byte aligned"):
        call(h0=F((3, 8, 12, V, K), "float32", address=0x7F0000000004))
    with pytest.raises(ValueError, match="indices must be contiguous"):
        call(indices=F((4,), "int32", strides=(2,)))
    with pytest.raises(ValueError, match="one device"):
        call(accept_len=F((4,), "int32", device="cuda:1"))
    # a slot-major unified pool: layer pitch below the slot pitch; no options
    lay = 12 * V * K + 3 * 4608 // 2
    with pytest.raises(AssertionError, match="launched"):
        call(h0=F((3, 8, 12, V, K), "float32", strides=(lay, 3 * lay, V * K, K, 1)))
    with pytest.raises(AssertionError, match="launched"):
        mod.kda_replayssm_fold(**fold_args(track=False, conv=False))


def test_empty_batches_launch_nothing(monkeypatch):
    launched = []
    monkeypatch.setattr(mod.L, "launch", lambda *a, **k: launched.append(a[1]))
    assert mod.kda_verify_chain(**verify_args(n=0)).shape == (0, 12, V)
    mod.kda_replayssm_fold(**fold_args(bsz=0))
    assert launched == []


# ---------------------------------------------------------------------------
# The bundle: specializations, default launches, compilation for every arch
# ---------------------------------------------------------------------------

def test_module_listed():
    assert "kda_verify" in kimi_k3.MODULES


def test_one_formulation():
    """The verify chain runs kda_fused_decode's conv (kda_conv_rows, on kda_conv_silu),
    prologue, step and gated norm, the fold its state update and k norm: kda_decode's
    helpers, no copy of the step."""
    for helper in ("kda_conv_rows", "kda_token_rows", "kda_recurrent_step", "kda_gated_norm"):
        assert getattr(mod, helper) is getattr(kda_decode, helper), helper
    assert mod.kda_state_update is kda_decode.kda_state_update
    assert mod.kda_l2norm is kda_decode.kda_l2norm


def test_aot_specializations():
    names = [s.kernel_name for s in mod.AOT_SPECIALIZATIONS]
    assert names == ["kda_verify_chain", "kda_verify_chain_norm", "kda_verify_chain_lower_bound",
                     "kda_verify_chain_lower_bound_norm", "kda_replayssm_fold"]
    for s in mod.AOT_SPECIALIZATIONS:
        ints = {p for p, t in s.signature.items() if t == "i32"}
        assert ints <= s.kernel.do_not_specialize
    assert dataclasses.is_dataclass(mod.Settings) and mod.SETTINGS == mod.Settings()


def test_every_shipped_kernel_is_a_default_launch(monkeypatch):
    launched = []

    def record(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, cluster=None):
        launched.append((kernel, name, dict(constexprs), num_warps, maxnreg, cluster))

    monkeypatch.setattr(mod.L, "launch", record)
    for lb in (None, LB):
        for norm in (False, True):
            mod.kda_verify_chain(**verify_args(norm=norm), lower_bound=lb)
    mod.kda_replayssm_fold(**fold_args())
    for s in mod.AOT_SPECIALIZATIONS:
        assert (s.kernel, s.kernel_name, dict(s.constexprs), s.num_warps, s.maxnreg,
                s.cluster) in launched, s.kernel_name


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("spec", mod.AOT_SPECIALIZATIONS, ids=lambda s: s.kernel_name)
def test_compiles_without_spills(spec, arch):
    """Every specialization: a cubin, no local memory, the state through a ring of bulk
    copies (the fold's stores .cs, 16-byte vectors), PDL before the first load."""
    pytest.importorskip("kiln._C")
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name,
                             cluster=spec.cluster, maxnreg=spec.maxnreg)
    assert ck.cubin[:4] == b"\x7fELF"
    target = ck.meta["targets"][arch]
    ptx = ck.ptx
    if spec.kernel is mod.kda_verify_chain_kernel:
        # capped at 160 registers: the drafts' prologue (4 drafts a tile) spills a few
        # bytes, measured faster than uncapped (kda_verify.Settings)
        assert target["spill_store_bytes"] <= 64 and target["spill_load_bytes"] <= 64
    else:
        assert target["spill_store_bytes"] == 0 and target["spill_load_bytes"] == 0
        assert "ld.local" not in ptx and "st.local" not in ptx
    # the state through the ring: bulk copies in, no plain load of it
    assert ptx.count("cp.async.bulk.shared::cluster.global") == spec.constexprs["STAGES"]
    vec = r"\.(v4\.b32|v2\.b64)"
    rows = spec.constexprs["ROWS"] * K // (32 * spec.num_warps * 4)
    if spec.kernel is mod.kda_replayssm_fold_kernel:
        # the final store .cs, the track snapshot a plain one
        assert len(re.findall(rf"st\.global\.cs{vec}", ptx)) == rows
    else:
        assert "st.global.cs" not in ptx  # the committed state is never written
    assert ck.meta["pdl"] and ptx.index("griddepcontrol.wait;") < ptx.index("ld.global")
    assert target["registers"] * 32 * spec.num_warps <= 65536
