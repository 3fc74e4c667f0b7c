"""KDA decode (docs/kernels/kda.md: kda_packed_decode, kda_fused_decode) on the CPU: the
kernels run in the interpreter through their wrappers (the launch redirected to the
interpreter) against a numpy reference written from the spec's recurrence, not from the
kernels (float64 recurrence; the conv and SiLU in the spec's fp32 op order, because their
result is rounded to bf16); padded slots leave the pools' bytes unchanged and zero their
output rows; a varlen fused decode equals stepping one token at a time bit for bit; the
packed and the fused kernels give the same bits for the same post-conv inputs; every AOT
specialization compiles for sm_90a, sm_100a and sm_103a without spills and is a default
launch; the wrappers reject bad arguments before any CUDA call. No GPU, no torch."""

import dataclasses
import functools
import itertools
import math
import re

import ml_dtypes
import numpy as np
import pytest

from kernels_dsl import kimi_k3
from kernels_dsl.kimi_k3 import kda_decode as mod
from kiln.testing import FakeCudaTensor, bf16_ulp, interpret

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
BF16 = ml_dtypes.bfloat16
K = V = 128
W = 4
LB = -5.0
F32_POISON = np.uint32(0x7FC01234)  # a NaN pattern the kernels never write
BF16_POISON = np.uint16(0x7F81)


# ---------------------------------------------------------------------------
# Reference (docs/kernels/kda.md, "The recurrent form"), float64 unless stated
# ---------------------------------------------------------------------------

def l2norm(x):
    return x / np.sqrt((x * x).sum(-1, keepdims=True) + 1e-6)


def gate_ref(a, dt_bias, a_log, lower_bound):
    """g = -exp(A_log) softplus(a + dt_bias) (threshold 20), or lb sigmoid(exp(A_log) (a +
    dt_bias))."""
    x = a + dt_bias
    if lower_bound is None:
        return -np.exp(a_log) * np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))
    return lower_bound / (1 + np.exp(-np.exp(a_log) * x))


def step_ref(S, q, k, v, g, beta):
    """One token on S [V, K] (K contiguous): decay, t_v, v_new, rank-1 update, o."""
    S = S * np.exp(g)[None, :]
    t = S @ k
    v_new = (v - t) * beta
    S = S + v_new[:, None] * k[None, :]
    return S, S @ q


def token_ref(S, q_raw, k_raw, v, a, b, a_log, dt_bias, scale, lower_bound):
    q = l2norm(q_raw) * scale
    k = l2norm(k_raw)
    g = gate_ref(a, dt_bias, a_log, lower_bound)
    return step_ref(S, q, k, v, g, 1 / (1 + np.exp(-b)))


def split_qkv(x, h, hv):
    """q [H, K], k [H, K], v [HV, V] of one post-conv row."""
    return (x[:h * K].reshape(h, K), x[h * K:2 * h * K].reshape(h, K),
            x[2 * h * K:].reshape(hv, V))


def packed_ref(qkv, a, b, a_log, dt_bias, state, indices, h, scale, lower_bound):
    """(out [B, HV, V], new state) of kda_packed_decode; out of padded requests 0."""
    f = lambda x: np.asarray(x, np.float64)  # noqa: E731
    bsz, hv = b.shape
    grp = hv // h
    out = np.zeros((bsz, hv, V))
    new = f(state).copy()
    for i in range(bsz):
        s = int(indices[i])
        if not 0 <= s < state.shape[0]:
            continue
        q, k, v = split_qkv(f(qkv[i]), h, hv)
        for j in range(hv):
            new[s, j], out[i, j] = token_ref(new[s, j], q[j // grp], k[j // grp], v[j],
                                             f(a[i, j * K:(j + 1) * K]), f(b[i, j]),
                                             f(a_log[j]), f(dt_bias[j * K:(j + 1) * K]), scale,
                                             lower_bound)
    return out, new


def conv_silu_ref(window, w):
    """The post-conv bf16 values of window [4, C] (bf16, oldest first) and w [C, 4] (bf16):
    y = ((w0 x0 + w1 x1) + w2 x2) + w3 x3 in float32 (the products of bf16 values exact),
    then bf16(y * sigmoid(y)), sigmoid = 1 / (1 + exp(-y)) in float32."""
    x = window.astype(np.float32)
    wf = w.astype(np.float32)
    y = wf[:, 0] * x[0] + wf[:, 1] * x[1]
    y = y + wf[:, 2] * x[2]
    y = y + wf[:, 3] * x[3]
    one = np.float32(1)
    return (y * (one / (one + np.exp(-y)))).astype(BF16)


def fused_ref(qkv, a, b, a_log, dt_bias, conv_state, conv_w, state, indices, cu, h, scale,
              lower_bound, g_out=None, w_norm=None, eps=1e-5):
    """(out [T, HV, V], new state, new conv state, post-conv rows) of kda_fused_decode; the
    out rows of padded sequences 0, of no sequence NaN."""
    f = lambda x: np.asarray(x, np.float64)  # noqa: E731
    t_rows, hv = b.shape
    grp = hv // h
    out = np.full((t_rows, hv, V), np.nan)
    post = np.zeros(qkv.shape, BF16)
    new, conv = f(state).copy(), conv_state.copy()
    for n in range(len(indices)):
        bos, eos = (n, n + 1) if cu is None else (int(cu[n]), int(cu[n + 1]))
        s = int(indices[n])
        if not 0 <= s < state.shape[0]:
            out[bos:eos] = 0
            continue
        win = list(conv_state[s])  # the last 3 inputs, oldest first
        for t in range(bos, eos):
            win.append(qkv[t])
            post[t] = conv_silu_ref(np.stack(win[-W:]), conv_w)
            q, k, v = split_qkv(f(post[t]), h, hv)
            for j in range(hv):
                new[s, j], o = token_ref(new[s, j], q[j // grp], k[j // grp], v[j],
                                         f(a[t, j * K:(j + 1) * K]), f(b[t, j]), f(a_log[j]),
                                         f(dt_bias[j * K:(j + 1) * K]), scale, lower_bound)
                if g_out is not None:
                    o = (o / np.sqrt((o * o).mean() + eps) * f(w_norm)
                         / (1 + np.exp(-f(g_out[t, j * V:(j + 1) * V]))))
                out[t, j] = o
        conv[s] = np.stack(win[-(W - 1):])
    return out, new, conv, post


def test_reference_hand_computed():
    """The reference step against the spec's matrix form S_t = (I - beta k k^T) Diag(alpha)
    S_{t-1} + beta k v^T (S = h^T, [K, V]), o = S_t^T q; and a zero state by hand."""
    rng = np.random.default_rng(0)
    h = rng.standard_normal((V, K))
    q, k = l2norm(rng.standard_normal(K)), l2norm(rng.standard_normal(K))
    v, g, beta = rng.standard_normal(V), -rng.uniform(0, 5, K), 0.7
    h1, o = step_ref(h, q, k, v, g, beta)
    S = (np.eye(K) - beta * np.outer(k, k)) @ np.diag(np.exp(g)) @ h.T + beta * np.outer(k, v)
    np.testing.assert_allclose(h1, S.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(o, S.T @ q, rtol=1e-12, atol=1e-12)
    z, oz = step_ref(np.zeros((V, K)), q, k, v, g, beta)
    np.testing.assert_allclose(z, beta * np.outer(v, k), rtol=1e-15)
    np.testing.assert_allclose(oz, beta * v * (k @ q), rtol=1e-12)
    # the gates: softplus(0) = log 2; the lower bound's midpoint
    assert gate_ref(0.0, 0.0, 0.0, None) == pytest.approx(-math.log(2))
    assert gate_ref(25.0, 0.0, 0.0, None) == -25.0  # above the threshold: x
    assert gate_ref(0.0, 0.0, 1.0, LB) == pytest.approx(LB / 2)


# ---------------------------------------------------------------------------
# The wrappers on numpy arrays, their launches redirected to the interpreter
# ---------------------------------------------------------------------------

class HostTensor:
    """A numpy array dressed as a tensor for the wrapper (shape, dtype name, stride() in
    elements, data_ptr); the interpreter reads it through ``__array_interface__``."""

    def __init__(self, a):
        self.a = a
        self.shape = a.shape
        self.dtype = "bfloat16" if a.dtype == BF16 else str(a.dtype)
        self.__array_interface__ = a.__array_interface__

    def stride(self, dim=None):
        if self.a.size == 0:
            s = tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        else:
            s = tuple(x // self.a.itemsize for x in self.a.strides)
        return s if dim is None else s[dim]

    def data_ptr(self):
        return self.a.__array_interface__["data"][0]


def aligned(shape, dtype, fill=None):
    """An array of ``shape`` whose address is a multiple of 64 bytes, filled with ``fill``
    (the dtype's poison NaN by default)."""
    dtype = np.dtype(dtype)
    n = max(math.prod(shape), 1)
    raw = np.zeros(n * dtype.itemsize + 128, np.uint8)
    off = -raw.__array_interface__["data"][0] % 64
    a = raw[off:off + n * dtype.itemsize].view(dtype)[:math.prod(shape)].reshape(shape)
    if fill is None:
        if dtype == np.float32:
            a.view(np.uint32)[...] = F32_POISON
        elif dtype == BF16:
            a.view(np.uint16)[...] = BF16_POISON
    else:
        a[...] = fill
    return a


class Current:
    settings = mod.SETTINGS


@pytest.fixture
def via_interpreter(monkeypatch):
    """The wrappers' launches run the kernels in the interpreter (numpy in, numpy out)."""
    launches = []

    def launch(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, cluster=None):
        launches.append((name, tuple(grid), dict(constexprs), num_warps, cluster))
        args = [x.a if isinstance(x, HostTensor) else x for x in args]
        interpret(kernel, tuple(grid), *args, **constexprs,
                  **({"cluster": cluster} if cluster else {}))

    monkeypatch.setattr(mod.L, "launch", launch)
    return launches


def H(x):
    return None if x is None else HostTensor(x)


def weights(rng, hv):
    a_log = aligned((hv,), np.float32, np.log(rng.uniform(1, 16, hv)))
    dt_bias = aligned((hv * K,), np.float32, rng.uniform(-1, 1, hv * K) * 0.5)
    return a_log, dt_bias


def pool(rng, slots, hv, pitch_pad=0):
    """The fp32 pool [slots, HV, V, K] as a view of a larger buffer (slot pitch HV V K +
    pitch_pad), random values."""
    pitch = hv * V * K + pitch_pad
    buf = aligned((slots * pitch,), np.float32, rng.standard_normal(slots * pitch) * 0.5)
    return np.lib.stride_tricks.as_strided(buf, (slots, hv, V, K),
                                           (pitch * 4, V * K * 4, K * 4, 4))


def rows(rng, t, width, pad=0, scale=1.0):
    """bf16 [T, width] as a row-strided view (row stride width + pad)."""
    buf = aligned((max(t, 1), width + pad), BF16, (rng.standard_normal((max(t, 1), width + pad))
                                                   * scale).astype(BF16))
    return buf[:t, :width]


def packed_inputs(rng, bsz, hv, h, slots, pad=0, pitch_pad=0):
    qkv = rows(rng, bsz, 2 * h * K + hv * V, pad)
    a = rows(rng, bsz, hv * K, pad)
    b = rows(rng, bsz, hv, pad + 3, scale=2.0)
    a_log, dt_bias = weights(rng, hv)
    state = pool(rng, slots, hv, pitch_pad)
    return qkv, a, b, a_log, dt_bias, state


def run_packed(qkv, a, b, a_log, dt_bias, state, indices, h, lower_bound, scale=None):
    bsz, hv = b.shape
    out = aligned((bsz, hv, V), BF16)
    res = mod.kda_packed_decode(H(qkv), H(a), H(b), H(a_log), H(dt_bias), H(state), H(indices),
                                h, scale, lower_bound, H(out), settings=Current.settings)
    assert res.a is out
    return out


def assert_out_close(out, ref):
    """bf16 outputs within one bf16 ulp of the exact value (the rounding is half of it),
    plus 2^-16 of the row's scale where the value cancels to about zero (fp32 sums)."""
    got = out.astype(np.float64)
    scale = np.sqrt((ref * ref).mean(-1, keepdims=True))
    tol = bf16_ulp(ref).astype(np.float64) + scale * 2.0**-16
    err = np.abs(got - ref)
    bad = ~(err <= tol)
    if bad.any():
        i = np.unravel_index(int(np.argmax(np.where(bad, err / tol, 0))), ref.shape)
        raise AssertionError(f"{int(bad.sum())} of {ref.size} outputs differ by more than 1 "
                             f"bf16 ulp; worst at {i}: got {got[i]}, expected {ref[i]}")


def assert_state_close(got, ref, slots_used):
    """The updated slots within 1e-5 of the reference, relative to each head's largest
    element; every other slot bit for bit as it was (checked by the caller)."""
    for s in slots_used:
        for j in range(ref.shape[1]):
            err = np.abs(got[s, j].astype(np.float64) - ref[s, j]).max()
            assert err <= 1e-5 * np.abs(ref[s, j]).max(), (s, j, err)


def check_packed(rng, bsz, hv, h, lower_bound, slots=None, indices=None, pad=0, pitch_pad=0,
                 scale=None):
    slots = slots or 2 * bsz + 1
    qkv, a, b, a_log, dt_bias, state = packed_inputs(rng, bsz, hv, h, slots, pad, pitch_pad)
    if indices is None:
        indices = rng.permutation(slots)[:bsz].astype(np.int32)
    indices = aligned((bsz,), np.int32, indices)
    before = state.copy()
    ref_out, ref_state = packed_ref(qkv, a, b, a_log, dt_bias, before, indices, h,
                                    K ** -0.5 if scale is None else scale, lower_bound)
    out = run_packed(qkv, a, b, a_log, dt_bias, state, indices, h, lower_bound, scale)
    used = [int(s) for s in indices if 0 <= s < slots]
    assert_out_close(out, ref_out)
    assert_state_close(state, ref_state, used)
    untouched = [s for s in range(slots) if s not in used]
    np.testing.assert_array_equal(state[untouched].view(np.uint32),
                                  before[untouched].view(np.uint32))
    for i in range(bsz):  # padded requests: zeros
        if not 0 <= indices[i] < slots:
            assert not out[i].astype(np.float32).any()
    return out, state


@pytest.mark.parametrize("lower_bound", [None, LB], ids=["softplus", "lower_bound"])
@pytest.mark.parametrize("hv,h", [(12, 12), (6, 3), (12, 3), (3, 3)])
def test_packed_decode(via_interpreter, hv, h, lower_bound):
    rng = np.random.default_rng(hv * 10 + h + (lower_bound is None))
    check_packed(rng, 3, hv, h, lower_bound)
    name, grid, constexprs, warps, _ = via_interpreter[-1]
    assert grid == (3 * hv * V // mod.SETTINGS.packed_rows,)
    assert name == "kda_packed_decode" + ("" if lower_bound is None else "_lower_bound")


def test_packed_decode_padded_slots(via_interpreter):
    """indices < 0 and >= slots: output rows zero, the whole pool bit for bit unchanged."""
    rng = np.random.default_rng(7)
    check_packed(rng, 5, 6, 3, LB, slots=4, indices=[2, -1, 4, 0, 1000])
    # every request padded: nothing in the pool moves
    qkv, a, b, a_log, dt_bias, state = packed_inputs(rng, 3, 3, 3, 2)
    before = state.copy()
    out = run_packed(qkv, a, b, a_log, dt_bias, state,
                     aligned((3,), np.int32, [-1, -7, 2]), 3, None)
    np.testing.assert_array_equal(state.view(np.uint32), before.view(np.uint32))
    assert not out.astype(np.float32).any()


def test_packed_decode_strided_inputs_and_pool(via_interpreter):
    """Row-strided mixed_qkv, a, b (slices of wider rows) and a pool whose slot pitch is
    larger than a slot (a layer's view into a unified pool); a scale that is not K^-0.5."""
    rng = np.random.default_rng(8)
    check_packed(rng, 4, 12, 6, None, pad=24, pitch_pad=4 * 37, scale=0.3)


def test_packed_decode_one_request(via_interpreter):
    rng = np.random.default_rng(9)
    check_packed(rng, 1, 12, 12, LB, slots=1, indices=[0])


def test_packed_decode_empty_batch(via_interpreter):
    rng = np.random.default_rng(10)
    qkv, a, b, a_log, dt_bias, state = packed_inputs(rng, 0, 3, 3, 2)
    out = aligned((0, 3, V), BF16)
    res = mod.kda_packed_decode(H(qkv), H(a), H(b), H(a_log), H(dt_bias), H(state),
                                H(aligned((0,), np.int32)), 3, out=H(out))
    assert res.a is out and via_interpreter == []


# ---------------------------------------------------------------------------
# kda_fused_decode
# ---------------------------------------------------------------------------

def fused_inputs(rng, t_rows, n, hv, h, slots, norm, pad=0):
    dim = 2 * h * K + hv * V
    width = dim + hv * K + hv * (V if norm else 0)
    # q | k | v | a | g_out | b, one projection (its rows a multiple of 16 bytes)
    proj = rows(rng, t_rows, width + hv, pad + (-(width + hv)) % 8)
    qkv = proj[:, :dim]
    a = proj[:, dim:dim + hv * K]
    g_out = proj[:, dim + hv * K:dim + hv * K + hv * V] if norm else None
    b = proj[:, width:width + hv]
    a_log, dt_bias = weights(rng, hv)
    conv_state = aligned((slots, W - 1, dim + 8), BF16,
                         rng.standard_normal((slots, W - 1, dim + 8)).astype(BF16))[:, :, :dim]
    conv_w = aligned((dim, W), BF16, (rng.standard_normal((dim, W)) * 0.5).astype(BF16))
    state = pool(rng, slots, hv, pitch_pad=4 * 3)
    w_norm = aligned((V,), BF16, rng.uniform(0.5, 1.5, V).astype(BF16)) if norm else None
    return qkv, a, b, g_out, a_log, dt_bias, conv_state, conv_w, state, w_norm


def run_fused(qkv, a, b, g_out, a_log, dt_bias, conv_state, conv_w, state, w_norm, indices,
              cu, h, lower_bound, eps=1e-5):
    t_rows, hv = b.shape
    out = aligned((t_rows, hv, V), BF16)
    res = mod.kda_fused_decode(H(qkv), H(a), H(b), H(a_log), H(dt_bias), H(conv_state),
                               H(conv_w), H(state), H(indices), h, H(cu), H(g_out), H(w_norm),
                               eps, None, lower_bound, H(out), settings=Current.settings)
    assert res.a is out
    return out


def check_fused(rng, lens, hv, h, lower_bound, norm, indices=None, slots=None, varlen=True):
    """lens: tokens a sequence (varlen) or None (static: one token a sequence, len(indices)
    sequences)."""
    n = len(lens)
    slots = slots or 2 * n + 1
    t_rows = sum(lens)
    cu = aligned((n + 1,), np.int32, np.concatenate([[0], np.cumsum(lens)])) if varlen else None
    inputs = fused_inputs(rng, t_rows, n, hv, h, slots, norm)
    qkv, a, b, g_out, a_log, dt_bias, conv_state, conv_w, state, w_norm = inputs
    if indices is None:
        indices = rng.permutation(slots)[:n]
    indices = aligned((n,), np.int32, indices)
    state_before, conv_before = state.copy(), conv_state.copy()
    ref_out, ref_state, ref_conv, post = fused_ref(
        qkv, a, b, a_log, dt_bias, conv_before, conv_w, state_before, indices, cu, h, K ** -0.5,
        lower_bound, g_out, w_norm)
    out = run_fused(qkv, a, b, g_out, a_log, dt_bias, conv_state, conv_w, state, w_norm,
                    indices, cu, h, lower_bound)
    used = [int(s) for s in indices if 0 <= s < slots]
    assert_out_close(out, ref_out)
    assert_state_close(state, ref_state, used)
    np.testing.assert_array_equal(conv_state.view(np.uint16), ref_conv.view(np.uint16))
    untouched = [s for s in range(slots) if s not in used]
    np.testing.assert_array_equal(state[untouched].view(np.uint32),
                                  state_before[untouched].view(np.uint32))
    return out, state, conv_state, (state_before, conv_before), inputs, indices, cu


@pytest.mark.parametrize("norm", [False, True], ids=["plain", "norm"])
@pytest.mark.parametrize("lower_bound", [None, LB], ids=["softplus", "lower_bound"])
@pytest.mark.parametrize("hv,h", [(12, 12), (6, 3), (12, 3)])
def test_fused_decode_static_layout(via_interpreter, hv, h, lower_bound, norm):
    """One token a sequence, no cu_seqlens (the CUDA-graph layout), a padded sequence."""
    rng = np.random.default_rng(100 + hv + h + 2 * norm + (lower_bound is None))
    n = 3
    check_fused(rng, [1] * n, hv, h, lower_bound, norm, indices=[4, -1, 1], slots=5,
                varlen=False)
    name, grid, constexprs, warps, cluster = via_interpreter[-1]
    assert grid == (n * hv,) and constexprs["GROUP"] == hv // h
    assert cluster == (None if hv == h else (hv // h, 1, 1))


@pytest.mark.parametrize("hv,h", [(6, 6), (12, 3), (6, 3)])
def test_fused_decode_varlen_equals_token_steps(via_interpreter, hv, h):
    """1 to 4 tokens a sequence (and an empty one) in one launch: the reference, and the
    same outputs, conv states and SSM states (bit for bit) as one static launch a token."""
    rng = np.random.default_rng(200 + hv + h)
    lens = [1, 4, 0, 2, 3]
    out, state, conv, (state0, conv0), inputs, indices, cu = check_fused(rng, lens, hv, h, LB,
                                                                         True)
    qkv, a, b, g_out, a_log, dt_bias, _, conv_w, _, w_norm = inputs
    # replay from the initial states, one token of every sequence a launch
    st, cs = state0, conv0
    steps = np.full_like(out, BF16_POISON)
    for step in range(max(lens)):
        live = [n for n, ln in enumerate(lens) if step < ln]
        tok = [int(cu[n]) + step for n in live]
        pick = lambda x: np.ascontiguousarray(x[tok]) if x is not None else None  # noqa: E731
        o = run_fused(pick(qkv), pick(a), pick(b), pick(g_out), a_log, dt_bias, cs, conv_w, st,
                      w_norm, aligned((len(live),), np.int32, indices[live]), None, h, LB)
        steps[tok] = o
    np.testing.assert_array_equal(steps.view(np.uint16), out.view(np.uint16))
    np.testing.assert_array_equal(cs.view(np.uint16), conv.view(np.uint16))
    # the SSM state too: the interpreter sums a tile in one order whatever its memory
    # layout (a state carried through the token loop and one reloaded between launches)
    np.testing.assert_array_equal(st.view(np.uint32), state.view(np.uint32))


def test_fused_decode_padded_sequences(via_interpreter):
    """Padded sequences (-1, >= slots) of several tokens: zero output rows, both pools bit
    for bit unchanged at every slot they do not name."""
    rng = np.random.default_rng(300)
    check_fused(rng, [2, 3, 1], 6, 3, None, True, indices=[-1, 1, 9], slots=3)


def test_packed_and_fused_give_the_same_bits(via_interpreter):
    """The same post-conv inputs through kda_packed_decode and kda_fused_decode (no norm):
    the same output and state bits (one formulation of the step). The packed kernel gets
    the post-conv rows of the spec's conv (the reference's, in its fp32 op order): equal bits
    also say that the fused kernel's conv computes exactly those."""
    rng = np.random.default_rng(400)
    for hv, h, lb in ((12, 12, LB), (12, 3, None), (6, 3, LB)):
        n, slots = 3, 4
        qkv, a, b, _, a_log, dt_bias, conv_state, conv_w, state, _ = fused_inputs(
            rng, n, n, hv, h, slots, False)
        indices = aligned((n,), np.int32, [2, 0, -1])
        post = aligned(qkv.shape, BF16, np.stack([
            conv_silu_ref(np.concatenate([conv_state[max(int(s), 0)], qkv[i:i + 1]]), conv_w)
            for i, s in enumerate(indices)]))
        st_packed = state.copy()
        out_f = run_fused(qkv, a, b, None, a_log, dt_bias, conv_state, conv_w, state, None,
                          indices, None, h, lb)
        out_p = run_packed(post, a, b, a_log, dt_bias, st_packed, indices, h, lb)
        np.testing.assert_array_equal(out_p.view(np.uint16), out_f.view(np.uint16))
        np.testing.assert_array_equal(st_packed.view(np.uint32), state.view(np.uint32))


# ---------------------------------------------------------------------------
# Argument checks: all before any CUDA call
# ---------------------------------------------------------------------------

F = functools.partial(FakeCudaTensor, device="cuda:0")


@pytest.fixture
def no_launch(monkeypatch):
    """Fails the test if the wrapper gets as far as a launch."""
    def boom(*a, **k):
        raise AssertionError("the wrapper launched before rejecting")

    monkeypatch.setattr(mod.L, "launch", boom)


def packed_args(bsz=4, hv=12, h=12, slots=8):
    return dict(mixed_qkv=F((bsz, 2 * h * K + hv * V)), a=F((bsz, hv * K)), b=F((bsz, hv)),
                A_log=F((hv,), "float32"), dt_bias=F((hv * K,), "float32"),
                state=F((slots, hv, V, K), "float32"), indices=F((bsz,), "int32"),
                num_q_heads=h, out=F((bsz, hv, V)))


def fused_args(t=4, n=4, hv=12, h=12, slots=8, norm=True):
    dim = 2 * h * K + hv * V
    args = dict(mixed_qkv=F((t, dim)), a=F((t, hv * K)), b=F((t, hv)),
                A_log=F((hv,), "float32"), dt_bias=F((hv * K,), "float32"),
                conv_state=F((slots, W - 1, dim)), conv_weight=F((dim, W)),
                state=F((slots, hv, V, K), "float32"), ssm_state_indices=F((n,), "int32"),
                num_q_heads=h, out=F((t, hv, V)))
    if t != n:
        args["cu_seqlens"] = F((n + 1,), "int32")
    if norm:
        args.update(g_out=F((t, hv * V)), w_norm=F((V,)))
    return args


@pytest.mark.parametrize("which,dtype", [
    ("mixed_qkv", "float32"), ("a", "float16"), ("b", "float32"), ("A_log", "bfloat16"),
    ("dt_bias", "bfloat16"), ("state", "bfloat16"), ("indices", "int64"), ("out", "float32")])
def test_packed_wrong_dtypes(no_launch, which, dtype):
    args = packed_args()
    args[which] = F(args[which].shape, dtype)
    with pytest.raises(TypeError, match=f"{which} must be"):
        mod.kda_packed_decode(**args)


@pytest.mark.parametrize("which,shape,match", [
    ("mixed_qkv", (4, 3 * 12 * 128 - 128), "mixed_qkv must have shape"),
    ("a", (4, 12 * 64), "a must have shape"), ("b", (3, 12), "b must have shape"),
    ("A_log", (128,), "A_log must have shape"), ("dt_bias", (12,), "dt_bias must have shape"),
    ("state", (8, 12, 64, 128), "state must have shape"),
    ("state", (8, 12, 128, 128, 1), "state must have shape"),
    ("indices", (5,), "indices must have shape"), ("out", (4, 12 * 128), "out must have shape")])
def test_packed_wrong_shapes(no_launch, which, shape, match):
    args = packed_args()
    args[which] = F(shape, args[which].dtype)
    with pytest.raises(ValueError, match=match):
        mod.kda_packed_decode(**args)


def test_packed_layout_and_argument_checks(no_launch):
    def call(**changes):
        args = packed_args()
        args.update(changes)
        return mod.kda_packed_decode(**args)

    with pytest.raises(ValueError, match="multiple of num_q_heads"):
        call(**{k: v for k, v in packed_args(h=5).items() if k != "num_q_heads"},
             num_q_heads=5)
    for bad in (0, -1, True, 2.0, None):
        with pytest.raises(ValueError, match="num_q_heads must be a positive int"):
            call(num_q_heads=bad)
    with pytest.raises(ValueError, match="row stride of mixed_qkv"):
        call(mixed_qkv=F((4, 3 * 12 * 128), strides=(3 * 12 * 128 + 4, 1)))
    with pytest.raises(ValueError, match="row stride of a"):
        call(a=F((4, 12 * 128), strides=(12 * 128 + 2, 1)))
    with pytest.raises(ValueError, match="last dimension"):
        call(b=F((4, 12), strides=(24, 2)))
    with pytest.raises(ValueError, match="dt_bias must be contiguous"):
        call(dt_bias=F((12 * 128,), "float32", strides=(2,)))
    with pytest.raises(ValueError, match="each slot of state must be dense"):
        call(state=F((8, 12, V, K), "float32", strides=(12 * V * K, V * K, 1, V)))
    with pytest.raises(ValueError, match="slot pitch"):
        call(state=F((8, 12, V, K), "float32", strides=(12 * V * K + 2, V * K, K, 1)))
    with pytest.raises(ValueError, match="slot pitch"):
        call(state=F((8, 12, V, K), "float32", strides=(11 * V * K, V * K, K, 1)))
    with pytest.raises(ValueError, match="state must be 16-byte aligned"):
        call(state=F((8, 12, V, K), "float32", address=0x7F0000000004))
    with pytest.raises(ValueError, match="mixed_qkv must be 16-byte aligned"):
        call(mixed_qkv=F((4, 3 * 12 * 128), address=0x7F0000000002))
    with pytest.raises(ValueError, match="out must be contiguous"):
        call(out=F((4, 12, V), strides=(13 * V, V, 1)))
    with pytest.raises(ValueError, match="one device"):
        call(indices=F((4,), "int32", device="cuda:1"))
    with pytest.raises(TypeError, match="scale must be a float"):
        call(scale="0.1")
    with pytest.raises(TypeError, match="lower_bound must be a float"):
        call(lower_bound=True)
    # b, A_log and indices are read one element at a time: any address
    with pytest.raises(AssertionError, match="launched"):
        call(b=F((4, 12), address=0x7F0000000002), indices=F((4,), "int32",
                                                           address=0x7F0000000004))
    # the pitch may exceed a slot (a layer's view into the unified pool); one slot, any
    with pytest.raises(AssertionError, match="launched"):
        call(state=F((8, 12, V, K), "float32", strides=(69 * 12 * V * K, V * K, K, 1)))


def test_fused_argument_checks(no_launch):
    def call(**changes):
        args = fused_args()
        args.update(changes)
        return mod.kda_fused_decode(**args)

    dim = 3 * 12 * 128
    with pytest.raises(TypeError, match="conv_state must be bfloat16"):
        call(conv_state=F((8, 3, dim), "float32"))
    with pytest.raises(TypeError, match="conv_weight must be bfloat16"):
        call(conv_weight=F((dim, 4), "float32"))
    with pytest.raises(TypeError, match="ssm_state_indices must be int32"):
        call(ssm_state_indices=F((4,), "int64"))
    with pytest.raises(TypeError, match="cu_seqlens must be int32"):
        call(cu_seqlens=F((5,), "int64"))
    with pytest.raises(TypeError, match="g_out must be bfloat16"):
        call(g_out=F((4, 12 * 128), "float32"))
    with pytest.raises(ValueError, match="conv_state must have shape"):
        call(conv_state=F((8, 4, dim)))
    with pytest.raises(ValueError, match="conv_state must have shape"):
        call(conv_state=F((7, 3, dim)))
    with pytest.raises(ValueError, match="conv_weight must have shape"):
        call(conv_weight=F((dim, 1, 4)))
    with pytest.raises(ValueError, match="cu_seqlens must have shape"):
        call(cu_seqlens=F((4,), "int32"))
    with pytest.raises(ValueError, match="every sequence has one token"):
        mod.kda_fused_decode(**fused_args(t=6, n=4) | {"cu_seqlens": None})
    with pytest.raises(ValueError, match="both g_out and w_norm"):
        call(w_norm=None)
    with pytest.raises(ValueError, match="w_norm must have shape"):
        call(w_norm=F((64,)))
    with pytest.raises(ValueError, match="must be one of"):
        mod.kda_fused_decode(**fused_args(hv=12, h=1))
    with pytest.raises(ValueError, match="row stride of g_out"):
        call(g_out=F((4, 12 * 128), strides=(12 * 128 + 4, 1)))
    with pytest.raises(ValueError, match="row stride of conv_state"):
        call(conv_state=F((8, 3, dim), strides=(3 * dim + 8, dim + 4, 1)))
    with pytest.raises(ValueError, match="slot stride of conv_state"):
        call(conv_state=F((8, 3, dim), strides=(3 * dim + 4, dim, 1)))
    with pytest.raises(ValueError, match="conv_weight must be contiguous"):
        call(conv_weight=F((dim, 4), strides=(8, 1)))
    with pytest.raises(ValueError, match="conv_state must be 16-byte aligned"):
        call(conv_state=F((8, 3, dim), address=0x7F0000000008))
    with pytest.raises(ValueError, match="must be contiguous along its last"):
        call(mixed_qkv=F((4, dim), strides=(2 * dim, 2)))
    with pytest.raises(TypeError, match="eps must be a float"):
        call(eps=None)
    # a conv state of a layer inside a unified pool: any 16-byte slot pitch; varlen
    with pytest.raises(AssertionError, match="launched"):
        call(conv_state=F((8, 3, dim), strides=(69 * 3 * dim + 8, dim + 8, 1)))
    with pytest.raises(AssertionError, match="launched"):
        mod.kda_fused_decode(**fused_args(t=9, n=4, hv=6, h=3, norm=False))


def test_empty_inputs_launch_nothing(no_launch):
    assert mod.kda_packed_decode(**packed_args(bsz=0)).shape == (0, 12, V)
    assert mod.kda_fused_decode(**fused_args(t=0, n=0)).shape == (0, 12, V)
    assert mod.kda_fused_decode(**fused_args(t=0, n=3)).shape == (0, 12, V)  # empty seqs


def test_fused_needs_a_slot(no_launch):
    """A padded request's program copies slot 0's rows (the bulk copies take no mask): a
    pool of no slot is refused before any launch (the packed kernel masks its loads)."""
    with pytest.raises(ValueError, match="state must have at least one slot"):
        mod.kda_fused_decode(**fused_args(slots=0))
    with pytest.raises(AssertionError, match="launched"):
        mod.kda_packed_decode(**packed_args(slots=0))


# ---------------------------------------------------------------------------
# The bundle: specializations, default launches, compilation for every arch
# ---------------------------------------------------------------------------

def test_module_listed():
    assert "kda_decode" in kimi_k3.MODULES


def test_aot_specializations():
    """Packed: both gates; fused: GVA ratio 1, 2, 4 (cluster sizes) x both gates x norm or
    not x the static layout or cu_seqlens. HV, H and every stride are runtime arguments (one
    kernel for HV = 12, 6, 3)."""
    names = [s.kernel_name for s in mod.AOT_SPECIALIZATIONS]
    assert names[:2] == ["kda_packed_decode", "kda_packed_decode_lower_bound"]
    assert sorted(names[2:]) == sorted(
        f"kda_fused_decode_g{g}{lb}{nm}{vl}" for g in (1, 2, 4) for lb in ("", "_lower_bound")
        for nm in ("", "_norm") for vl in ("", "_varlen"))
    for s in mod.AOT_SPECIALIZATIONS:
        assert s.cluster == (None if s.constexprs.get("GROUP", 1) == 1
                             else (s.constexprs["GROUP"], 1, 1))
        # every runtime int is unspecialized: the JIT compiles what the bundle holds
        ints = {p for p, t in s.signature.items() if t == "i32"}
        assert ints <= s.kernel.do_not_specialize
    assert dataclasses.is_dataclass(mod.Settings) and mod.SETTINGS == mod.Settings()


def test_every_shipped_kernel_is_a_default_launch(monkeypatch):
    """Each AOT specialization is what a wrapper call with the default settings launches,
    over K3's TP 8/16/32 head counts, GVA ratios 1, 2, 4, both gates, norm or not."""
    launched = []

    def record(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, cluster=None):
        launched.append((kernel, name, dict(constexprs), num_warps, maxnreg, cluster))

    monkeypatch.setattr(mod.L, "launch", record)
    for hv, g, lb in itertools.product((12, 6, 3), (1, 2, 4), (None, LB)):
        if hv % g:
            continue
        mod.kda_packed_decode(**packed_args(bsz=2, hv=hv, h=hv // g), lower_bound=lb)
        for norm, t in itertools.product((False, True), (2, 3)):
            mod.kda_fused_decode(**fused_args(t=t, n=2, hv=hv, h=hv // g, norm=norm),
                                 lower_bound=lb)
    for s in mod.AOT_SPECIALIZATIONS:
        assert (s.kernel, s.kernel_name, dict(s.constexprs), s.num_warps, s.maxnreg,
                s.cluster) in launched, s.kernel_name


def _compile(spec, arch):
    return spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                               num_warps=spec.num_warps, arch=arch, name=spec.kernel_name,
                               cluster=spec.cluster)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("spec", mod.AOT_SPECIALIZATIONS, ids=lambda s: s.kernel_name)
def test_compiles_without_spills(spec, arch):
    """Every specialization: PTX and a cubin, no local memory, the state rows stored as
    16-byte vectors (predicated by the padded-slot mask), PDL before the first load, the
    cluster barrier where GROUP > 1. The packed kernel loads its rows as hinted 16-byte
    vectors; the fused kernel copies them into its ring by bulk copies, and fits the
    programs an SM it is compiled for (two where it says none) in registers and shared
    memory."""
    pytest.importorskip("kiln._C")
    ck = _compile(spec, arch)
    assert ck.cubin[:4] == b"\x7fELF"
    target = ck.meta["targets"][arch]
    assert target["spill_store_bytes"] == 0 and target["spill_load_bytes"] == 0
    ptx = ck.ptx
    assert "ld.local" not in ptx and "st.local" not in ptx
    # the state: every row access one 16-byte vector
    rows = spec.constexprs.get("ROWS", V) * K // (32 * spec.num_warps * 4)
    vec = r"\.(v4\.b32|v2\.b64)"
    loads = re.findall(rf"ld\.global\.L1::evict_first\.L2::cache_hint{vec}", ptx)
    stores = re.findall(rf"st\.global\.cs{vec}", ptx)
    assert len(stores) == rows, (len(stores), rows)
    fused = spec.kernel is mod.kda_fused_decode_kernel
    if fused:
        stages = spec.constexprs["STAGES"]
        assert not loads and ptx.count("cp.async.bulk.shared::cluster.global") == stages
    else:
        assert len(loads) == rows, (len(loads), rows)
    assert ck.meta["pdl"] and ptx.index("griddepcontrol.wait;") < ptx.index("ld.global")
    group = spec.constexprs.get("GROUP", 1)
    assert ("barrier.cluster" in ptx) == (group > 1)
    if fused:
        programs = spec.constexprs["PROGRAMS"] or 2
        shared = sum(b["bytes"] for b in target["shared_plan"])
        assert target["registers"] * 32 * spec.num_warps * programs <= 65536
        assert shared * programs <= 227 * 1024
