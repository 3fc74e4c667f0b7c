"""KDA chunked prefill (docs/kernels/kda.md, "Chunked prefill") on the CPU: the two float64
references written from the spec (the token-by-token recurrence and the naive chunked WY /
UT form, exp of differences only) agree with each other; the kernel, run in the interpreter
through its wrapper, against the recurrence: T not a multiple of 64 and below 64, the
lower-bound gate's long decays, the softplus gate, the gate and beta computed in the
kernel, L2 norms in the kernel, GVA, varlen with empty and one-token sequences, initial
state given and absent; its final state continues in kda_packed_decode as the recurrence
does; the AOT specializations compile for the three archs; bad arguments raise before any
launch. No GPU, no torch."""

import functools

import ml_dtypes
import numpy as np
import pytest

from kernels_dsl.kimi_k3 import kda_decode
from kernels_dsl.kimi_k3 import kda_prefill as mod
from kiln.testing import FakeCudaTensor, bf16_ulp, interpret

from test_kda_decode import (
    HostTensor,
    aligned,
    gate_ref,
    l2norm,
    packed_ref,
)

BF16 = ml_dtypes.bfloat16
K = V = 128
C = 64
LB = -5.0
SCALE = K ** -0.5


# ---------------------------------------------------------------------------
# References (float64)
# ---------------------------------------------------------------------------

def recurrent_ref(q, k, v, g, beta, h0):
    """q, k [T, K] (normalized, q scaled), v [T, V], g [T, K], beta [T], h0 [V, K]: the
    spec's recurrence token by token -> (o [T, V], h [V, K])."""
    h = h0.copy()
    o = np.zeros((len(q), V))
    for t in range(len(q)):
        h = h * np.exp(g[t])[None, :]
        v_new = (v[t] - h @ k[t]) * beta[t]
        h = h + v_new[:, None] * k[t][None, :]
        o[t] = h @ q[t]
    return o, h


def chunked_ref(q, k, v, g, beta, h0):
    """The same through the chunk form of the spec (chunks of 64, the last partial)."""
    h = h0.copy()
    o = np.zeros((len(q), V))
    for c0 in range(0, len(q), C):
        sl = slice(c0, c0 + C)
        qc, kc, vc, bc = q[sl], k[sl], v[sl], beta[sl]
        n = len(qc)
        G = np.cumsum(g[sl], axis=0)
        decay = np.exp(np.minimum(G[:, None, :] - G[None, :, :], 0.0))  # [i, j, d]
        i, j = np.indices((n, n))
        akk = np.where(i > j, np.einsum("id,jd,ijd->ij", kc, kc, decay), 0.0)
        aqk = np.where(i >= j, np.einsum("id,jd,ijd->ij", qc, kc, decay), 0.0)
        tm = np.linalg.inv(np.eye(n) + bc[:, None] * akk) * bc[None, :]
        w = tm @ (kc * np.exp(G))
        vp = tm @ vc - w @ h.T
        o[sl] = (qc * np.exp(G)) @ h.T + aqk @ vp
        h = h * np.exp(G[-1])[None, :] + vp.T @ (kc * np.exp(G[-1][None, :] - G))
    return o, h


def inputs(rng, t, h, hv, gate_mode, l2, strong=False, similar=False):
    """Raw inputs of one batch row: q, k [T, H, K] bf16 (unit rows unless ``l2``: the
    kernel normalizes them), v [T, HV, V] bf16, g (fp32 log decay, or the bf16 ``a``), beta
    bf16 [T, HV], and A_log, dt_bias. The decays are weak (g about -0.01 to -0.05 a token),
    so that the state carries across chunks and the off-diagonal blocks of a chunk count
    (with decays near -5 both vanish below fp32 and a test would not see them); ``strong``:
    the lower bound's range, down to -5 a token (a number: the given g's, down to it).
    ``similar``: every key one direction plus 1 % noise, beta 0.9 (the UT inverse's
    powers grow like binomials: a form that cancels them loses every digit)."""
    q, k = (rng.standard_normal((t, h, K)) for _ in range(2))
    if similar:
        k = rng.standard_normal((1, h, K)) + 0.01 * k
    if not l2:
        q, k = l2norm(q), l2norm(k)
    q, k = q.astype(BF16), k.astype(BF16)
    v = rng.standard_normal((t, hv, V)).astype(BF16)
    a_log = np.log(rng.uniform(1, 16, hv) if strong else rng.uniform(0.02, 0.1, hv))
    dt_bias = rng.uniform(-1, 1, hv * K) * 0.5
    if gate_mode == mod.GATE_LOWER_BOUND and not strong:  # sigmoid(x - 6): g near -0.01
        a_log, dt_bias = np.zeros(hv), dt_bias - 6.0
    a_log, dt_bias = a_log.astype(np.float32), dt_bias.astype(np.float32)
    if gate_mode == mod.GATE_GIVEN:
        top = -0.1 if not strong else LB if strong is True else strong
        g = (top / (1 + np.exp(-rng.standard_normal((t, hv, K))))).astype(np.float32)
    else:
        g = rng.standard_normal((t, hv, K)).astype(BF16)
    beta = (np.full((t, hv), 0.9) if similar else rng.standard_normal((t, hv))).astype(BF16)
    return q, k, v, g, beta, a_log, dt_bias


def sequence_ref(q, k, v, g, beta, a_log, dt_bias, h0, gate_mode, l2, beta_sigmoid):
    """(o [T, HV, V], h [HV, V, K]) of one sequence by the recurrence (and the chunk form,
    which must agree with it)."""
    f = lambda x: np.asarray(x, np.float64)  # noqa: E731
    t, hv = beta.shape
    grp = hv // q.shape[1]
    o = np.zeros((t, hv, V))
    hs = np.zeros((hv, V, K))
    for j in range(hv):
        qj, kj = f(q[:, j // grp]), f(k[:, j // grp])
        if l2:
            qj, kj = l2norm(qj), l2norm(kj)
        gj = f(g[:, j])
        if gate_mode != mod.GATE_GIVEN:
            lb = LB if gate_mode == mod.GATE_LOWER_BOUND else None
            gj = gate_ref(gj, f(dt_bias[j * K:(j + 1) * K]), f(a_log[j]), lb)
        bj = f(beta[:, j])
        if beta_sigmoid:
            bj = 1 / (1 + np.exp(-bj))
        args = (qj * SCALE, kj, f(v[:, j]), gj, bj, f(h0[j]))
        o[:, j], hs[j] = recurrent_ref(*args)
        if t:
            oc, hc = chunked_ref(*args)
            np.testing.assert_allclose(oc, o[:, j], atol=1e-9)
            np.testing.assert_allclose(hc, hs[j], atol=1e-9)
    return o, hs


def test_references_agree():
    """The chunk form equals the recurrence (float64) across partial chunks, with the lower
    bound's decays (G down to -320 inside a chunk) and with weak ones (the state crosses
    chunks)."""
    rng = np.random.default_rng(0)
    for t, top in ((1, LB), (37, LB), (64, LB), (150, LB), (150, -0.1)):
        q = l2norm(rng.standard_normal((t, K))) * SCALE
        k = l2norm(rng.standard_normal((t, K)))
        v = rng.standard_normal((t, V))
        g = top / (1 + np.exp(-rng.standard_normal((t, K)) - 4))  # close to top
        beta = 1 / (1 + np.exp(-rng.standard_normal(t)))
        h0 = rng.standard_normal((V, K))
        o1, h1 = recurrent_ref(q, k, v, g, beta, h0)
        o2, h2 = chunked_ref(q, k, v, g, beta, h0)
        np.testing.assert_allclose(o2, o1, atol=1e-12)
        np.testing.assert_allclose(h2, h1, atol=1e-12)


# ---------------------------------------------------------------------------
# The kernel in the interpreter through its wrapper
# ---------------------------------------------------------------------------

@pytest.fixture
def via_interpreter(monkeypatch):
    launches = []

    def launch(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, cluster=None):
        launches.append((name, tuple(grid), dict(constexprs), num_warps))
        args = [x.a if isinstance(x, HostTensor) else x for x in args]
        interpret(kernel, tuple(grid), *args, **constexprs)

    def empty(like, shape, dtype):
        return HostTensor(aligned(shape, {"bfloat16": BF16, "float32": np.float32}[dtype]))

    monkeypatch.setattr(mod.L, "launch", launch)
    monkeypatch.setattr(mod.L, "compile_together", lambda launches: None)
    monkeypatch.setattr(mod.L, "empty", empty)
    return launches


def H(x):
    return None if x is None else HostTensor(x)


def copy_aligned(x):
    a = aligned(x.shape, x.dtype)
    a[...] = x
    return a


def run(rng, lengths, h, hv, gate_mode=mod.GATE_GIVEN, l2=True, beta_sigmoid=False,
        with_h0=True, varlen=False, strong=False, similar=False):
    """Runs the wrapper on fresh inputs (sequences of ``lengths``; fixed length: a batch)
    and checks it against the recurrence; returns (inputs, outputs) for further checks."""
    total = sum(lengths)
    q, k, v, g, beta, a_log, dt_bias = inputs(rng, total, h, hv, gate_mode, l2, strong,
                                              similar)
    n = len(lengths)
    h0 = (rng.standard_normal((n, hv, V, K)) * 0.5).astype(np.float32) if with_h0 else None
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    if varlen:
        shape = lambda x: x[None]  # noqa: E731
    else:
        assert len(set(lengths)) == 1
        shape = lambda x: x.reshape(n, lengths[0], *x.shape[1:])  # noqa: E731
    args = [copy_aligned(shape(x)) for x in (q, k, v, g, beta)]
    out = aligned(args[2].shape, BF16)
    ht = aligned((n, hv, V, K), np.float32)
    gate_in = gate_mode != mod.GATE_GIVEN
    res = mod.kda_chunk_prefill(
        *map(H, args), initial_state=H(copy_aligned(h0) if with_h0 else None),
        cu_seqlens=H(copy_aligned(cu)) if varlen else None, use_qk_l2norm_in_kernel=l2,
        use_gate_in_kernel=gate_in, A_log=H(copy_aligned(a_log)) if gate_in else None,
        dt_bias=H(copy_aligned(dt_bias)) if gate_in else None,
        lower_bound=LB if gate_mode == mod.GATE_LOWER_BOUND else None,
        use_beta_sigmoid_in_kernel=beta_sigmoid, out=H(out), final_state=H(ht))
    assert res[0].a is out and res[1].a is ht
    out_flat = out.reshape(total, hv, V)
    for s in range(n):
        sl = slice(cu[s], cu[s + 1])
        zero = np.zeros((hv, V, K))
        ro, rh = sequence_ref(q[sl], k[sl], v[sl], g[sl], beta[sl], a_log, dt_bias,
                              h0[s] if with_h0 else zero, gate_mode, l2, beta_sigmoid)
        assert_prefill_close(out_flat[sl], ro, ht[s], rh)
    return (q, k, v, g, beta, a_log, dt_bias, h0, cu), (out, ht)


def assert_prefill_close(out, ref_out, state, ref_state):
    """bf16 outputs within one bf16 ulp of the reference plus 2e-3 (the output's dots take
    one bf16 part of qg, A_qk and V': a fifth of the issue's 1e-2 on unit-scale inputs), the
    final state within 1e-4 of the head's largest element (the state's dots take two parts;
    issue bar: 1e-3)."""
    if len(out):
        err = np.abs(out.astype(np.float64) - ref_out)
        tol = bf16_ulp(ref_out).astype(np.float64) + 2e-3
        assert (err <= tol).all(), f"out: worst {np.max(err / tol):.2f} of the tolerance"
    for j in range(len(state)):
        err = np.abs(state[j].astype(np.float64) - ref_state[j]).max()
        assert err <= 1e-4 * np.abs(ref_state[j]).max(), (j, err)


@pytest.mark.parametrize("t, strong", [(1, False), (37, False), (64, False), (200, False),
                                       (130, True)])
def test_lengths(via_interpreter, t, strong):
    """One sequence of T tokens (below, at, past the chunk; weak decays: the state crosses
    chunks), or the lower bound's strong decays over long chunks (G down to -320 inside a
    chunk); L2 norms in the kernel, an initial state; two launches (the chunk factors a
    program a chunk and head, the chain a program a value block, head and sequence)."""
    run(np.random.default_rng(t), [t], h=1, hv=1, strong=strong)
    chunks = -(-t // C)
    chunk, ut = mod.chunk_launch_config(0, False), mod.ut_launch_config(False)
    chain = mod.chain_launch_config(False)
    assert via_interpreter == [
        (chunk[0], (chunks, 1), chunk[1], chunk[2]), (ut[0], (chunks, 1), ut[1], ut[2]),
        (chain[0], (K // chain[1]["VB"], 1, 1), chain[1], chain[2])]


def test_narrow_chain(via_interpreter, monkeypatch):
    """Few sequences and heads for the SMs: the chain's narrow form (16 value rows a
    program, the next chunk's factors in flight)."""
    monkeypatch.setattr(mod.L, "num_sms", lambda t: 132)
    run(np.random.default_rng(7), [150], h=1, hv=2)
    chain = mod.chain_launch_config(False, wide=False)
    assert chain[1]["VB"] == 16 and via_interpreter[2] == (chain[0], (8, 2, 1), chain[1],
                                                            chain[2])


def test_huge_decays(via_interpreter):
    """Given decays down to -60 a token (no gate bounds them): the chunks whose 16-row
    blocks decay by more than the dots' factors can take run 8-row blocks, and the pairs
    across a token past the cap (-20) are below exp(-20) in both."""
    run(np.random.default_rng(5), [150], h=1, hv=1, strong=-60.0)


def test_similar_keys(via_interpreter):
    """Keys of one direction, beta 0.9: the UT inverse stays exact (module docstring of
    the kernel: blocks merged, never powers of A)."""
    run(np.random.default_rng(6), [128], h=1, hv=1, similar=True)


def test_batch_gva_no_initial_state(via_interpreter):
    """Two sequences of one length as a batch, HV = 4 on H = 2, zeros for the state."""
    run(np.random.default_rng(1), [70, 70], h=2, hv=4, with_h0=False, l2=False)


@pytest.mark.parametrize("gate_mode", [mod.GATE_SOFTPLUS, mod.GATE_LOWER_BOUND])
@pytest.mark.parametrize("strong", [False, True])
def test_gate_and_beta_in_kernel(via_interpreter, gate_mode, strong):
    """The raw gate input and beta logits: the kernel applies kda_decode's gate and the
    sigmoid."""
    run(np.random.default_rng(2 + gate_mode), [80], h=1, hv=2, gate_mode=gate_mode,
        beta_sigmoid=True, strong=strong)
    assert via_interpreter[0][0] == ("kda_prefill_chunk_gate" if gate_mode == 1 else
                                     "kda_prefill_chunk_gate_lower_bound")


def test_varlen(via_interpreter):
    """cu_seqlens with a one-token, an empty (its initial state passes through) and a
    ragged sequence; chunks never cross a sequence boundary."""
    (_, _, _, _, _, _, _, h0, _), (_, ht) = run(np.random.default_rng(3), [1, 0, 71, 9],
                                                h=1, hv=1, varlen=True)
    np.testing.assert_array_equal(ht[1], h0[1])
    # slots: cdiv(81, 64) + 4 sequences (the search's bound), the chain a program a
    # (value block, head, sequence)
    assert [x[:2] for x in via_interpreter] == [("kda_prefill_chunk_varlen", (6, 1)),
                                                ("kda_prefill_ut_varlen", (6, 1)),
                                                ("kda_prefill_chain_varlen", (1, 1, 4))]


def test_final_state_continues_in_decode(via_interpreter, monkeypatch):
    """The prefill's final state is the decode pool's layout: one kda_packed_decode step
    from it matches the reference's next token."""
    rng = np.random.default_rng(4)
    (q, k, v, g, beta, a_log, dt_bias, h0, _), (_, ht) = run(rng, [40], h=1, hv=1,
                                                             gate_mode=mod.GATE_LOWER_BOUND,
                                                             beta_sigmoid=True)
    launches = []

    def launch(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, cluster=None):
        launches.append(name)
        interpret(kernel, tuple(grid), *[x.a if isinstance(x, HostTensor) else x for x in args],
                  **constexprs)

    monkeypatch.setattr(kda_decode.L, "launch", launch)
    qkv = aligned((1, 3 * K), BF16, rng.standard_normal((1, 3 * K)).astype(BF16))
    a = aligned((1, K), BF16, rng.standard_normal((1, K)).astype(BF16))
    b = aligned((1, 1), BF16, rng.standard_normal((1, 1)).astype(BF16))
    pool = copy_aligned(ht)
    idx = aligned((1,), np.int32, np.zeros(1, np.int32))
    out = aligned((1, 1, V), BF16)
    kda_decode.kda_packed_decode(H(qkv), H(a), H(b), H(copy_aligned(a_log)),
                                 H(copy_aligned(dt_bias)), H(pool), H(idx), 1, SCALE, LB, H(out))
    # the reference: the prefill's tokens, then the decode token, all by the recurrence
    _, ref_h = sequence_ref(q, k, v, g, beta, a_log, dt_bias, h0[0],
                            mod.GATE_LOWER_BOUND, True, True)
    ref_out, ref_state = packed_ref(qkv, a, b, a_log, dt_bias, ref_h[None], idx, 1, SCALE, LB)
    assert launches == ["kda_packed_decode_lower_bound"]
    np.testing.assert_allclose(out.astype(np.float64), ref_out, rtol=2.0**-7, atol=1e-3)
    assert np.abs(pool[0, 0] - ref_state[0, 0]).max() <= 1e-4 * np.abs(ref_state).max()


# ---------------------------------------------------------------------------
# Bad input, the bundle's specializations
# ---------------------------------------------------------------------------

F = functools.partial(FakeCudaTensor, device="cuda:0")


def good(bsz=1, h=1, **over):
    t, hv = 70, 2
    args = dict(q=F((bsz, t, h, K), "bfloat16"), k=F((bsz, t, h, K), "bfloat16"),
                v=F((bsz, t, hv, V), "bfloat16"), g=F((bsz, t, hv, K), "float32"),
                beta=F((bsz, t, hv), "bfloat16"))
    kw = dict(out=F((bsz, t, hv, V), "bfloat16"), final_state=F((bsz, hv, V, K), "float32"))
    args.update({a: b for a, b in over.items() if a in args})
    kw.update({a: b for a, b in over.items() if a not in args})
    return args, kw


@pytest.mark.parametrize("over, error, match", [
    (dict(q=F((1, 70, 1, K), "float16")), TypeError, "q must be bfloat16"),
    (dict(g=F((1, 70, 2, K), "bfloat16")), TypeError, "g must be float32"),
    (dict(h=4), ValueError, "multiple of num_q_heads"),
    (dict(q=F((1, 70, 1, 64), "bfloat16")), ValueError, "q must have shape"),
    (dict(beta=F((1, 70, 1), "bfloat16")), ValueError, "beta must have shape"),
    (dict(cu_seqlens=F((3,), "int32"), bsz=2), ValueError, "needs a batch of 1"),
    (dict(cu_seqlens=F((1,), "int32")), ValueError, "at least 2 offsets"),
    (dict(initial_state=F((2, 2, V, K), "float32")), ValueError, "initial_state must have"),
    (dict(use_gate_in_kernel=True, g=F((1, 70, 2, K), "bfloat16")), ValueError,
     "needs A_log and dt_bias"),
    (dict(scale="x"), TypeError, "scale must be a float"),
    (dict(out=F((1, 70, 2, V), "float32")), TypeError, "out must be bfloat16"),
])
def test_bad_arguments(via_interpreter, over, error, match):
    args, kw = good(**over)
    with pytest.raises(error, match=match):
        mod.kda_chunk_prefill(**args, **kw)
    assert via_interpreter == []


def test_specialization_compiles():
    """A bundle specialization compiles for sm_90a and the Blackwell archs, every dot on
    tensor cores (the bundle build compiles the others)."""
    spec = mod.AOT_SPECIALIZATIONS[0]
    for arch in ("sm_90a", "sm_100a", "sm_103a"):
        ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                                 num_warps=spec.num_warps, arch=arch, name=spec.kernel_name)
        dots = ck.meta["targets"][arch]["dots"]
        assert dots and all(d["unit"] in ("mma.sync", "wgmma staged", "tcgen05 staged")
                            for d in dots)
