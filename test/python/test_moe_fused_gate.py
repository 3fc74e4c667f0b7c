"""moe_fused_gate (docs/kernels/moe_routing.md) on the CPU: the AOT specializations compile for
sm_90a, sm_100a and sm_103a with the sigmoid each promises and are the wrapper's default
launches, both kernels run in the interpreter (through the wrapper, whose launch is redirected
to the interpreter) against a numpy reference written from the spec (stable descending sort of
b, ties to the lowest id) and give the same bits, and the wrapper rejects bad arguments before
any CUDA call. No GPU, no torch."""

import dataclasses
import math

import numpy as np
import pytest

from kernels_dsl import kimi_k3
from kernels_dsl.kimi_k3 import moe_fused_gate as mod
from kiln.testing import interpret

from launch_choices import record_launch_choices  # noqa: E402

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
F32 = np.float32


# ---------------------------------------------------------------------------
# Reference (docs/kernels/moe_routing.md), float32 arithmetic as torch's sigmoid does it
# ---------------------------------------------------------------------------

def ref_gate(scores, bias, topk, renormalize=True, rsf=1.0, apply_rsf=False, n_shared=0):
    m, e = scores.shape
    with np.errstate(over="ignore", invalid="ignore"):
        a = F32(1) / (F32(1) + np.exp(-scores.astype(F32)))
        b = a + bias.astype(F32)[None, :]
    b = np.where(np.isnan(b), F32(-1e30), b)
    ids = np.argsort(-b, axis=1, kind="stable")[:, :topk]
    w = np.take_along_axis(a, ids, axis=1)
    routed_sum = np.zeros(m, F32)
    for k in range(topk):  # fp32 sum
        routed_sum = routed_sum + w[:, k]
    shared = np.repeat((routed_sum / F32(rsf))[:, None], n_shared, axis=1)
    w = np.concatenate([w, shared], axis=1)
    ids = np.concatenate([ids, np.broadcast_to(e + np.arange(n_shared), (m, n_shared))], axis=1)
    if renormalize:
        with np.errstate(invalid="ignore"):
            pos = routed_sum > 0
        w = np.where(pos[:, None], w / np.where(pos, routed_sum, F32(1))[:, None], w)
    if apply_rsf:
        w = w * F32(rsf)
    return w.astype(F32), ids.astype(np.int32)


class HostTensor:
    """A numpy array dressed as a tensor for the wrapper (shape, dtype name, stride() in
    elements); the interpreter reads it through ``__array_interface__``."""

    def __init__(self, a):
        self.a = a
        self.shape = a.shape
        self.dtype = str(a.dtype)
        self.__array_interface__ = a.__array_interface__

    def stride(self, dim=None):
        if self.a.size == 0:  # numpy 2 gives empty arrays zero strides; torch keeps them
            s = tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        else:
            s = tuple(x // self.a.itemsize for x in self.a.strides)
        return s if dim is None else s[dim]


#: The settings every interpreter test runs: the default (the rank kernel below batch_m
#: rows, its fallback rounds 4 bits), the rank kernel's fallback on 1 bit, the radix (batch)
#: kernel at every row count on 1 and on 4 bits a round, and (the default settings) the
#: wrapper's generic launch, the bundle's kernel for shapes and strides the others miss.
VARIANTS = {
    "rank": mod.SETTINGS,
    "rank-bits1": dataclasses.replace(mod.SETTINGS, rank_select_bits=1),
    "radix-bits1": dataclasses.replace(mod.SETTINGS, batch_m=1),
    "radix-bits4": dataclasses.replace(mod.SETTINGS, batch_m=1, batch_select_bits=4),
    "generic": mod.SETTINGS,
}
#: the radix kernel on 1 bit a round at every row count: the reference formulation
RADIX = dataclasses.replace(mod.SETTINGS, batch_m=1)


class Current:
    """The settings of the running interpreter test (set by ``via_interpreter``)."""

    settings = mod.SETTINGS


def expected_constexprs(m, fast=False):
    """The K3 constexprs of an m-row launch with the current settings."""
    s = Current.settings
    if m < s.batch_m:
        return {"E": 896, "K": 16, "FAST_SIGMOID": fast, "SELECT_BITS": s.rank_select_bits,
                "GROUPS": s.rank_groups, "CAP": s.rank_cap}
    return {"E": 896, "K": 16, "FAST_SIGMOID": fast, "SELECT_BITS": s.batch_select_bits}


def launch_name(m):
    """The bundle name of an m-row launch with the current settings."""
    return "moe_fused_gate_rank" if m < Current.settings.batch_m else "moe_fused_gate_batch"


def interpreter_launch(launches=None, use_generic=False):
    """The wrapper's launch in the interpreter (recorded in ``launches``): its kernel, or with
    ``use_generic`` its generic launch."""
    def launch(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, generic=None):
        if launches is not None:
            launches.append((name, tuple(grid), dict(constexprs)))
        if use_generic:
            kernel, _, grid, args, constexprs = generic[:5]
        if any(int(g) == 0 for g in grid) or not isinstance(args[0], HostTensor):
            return  # nothing to run, or FakeTensors (argument checks only)
        args = [x.a if isinstance(x, HostTensor) else x for x in args]
        interpret(kernel, tuple(grid), *args, **constexprs)
    return launch


@pytest.fixture(params=list(VARIANTS))
def via_interpreter(request, monkeypatch):
    """The wrapper's launch runs the kernel in the interpreter (numpy in, numpy out), with
    one of VARIANTS as the settings of ``gate``."""
    monkeypatch.setattr(Current, "settings", VARIANTS[request.param])
    launches = []
    monkeypatch.setattr(mod.L, "launch",
                        interpreter_launch(launches, use_generic=request.param == "generic"))
    return launches


def gate(scores, bias, topk, row_pad=0, settings=None, **kw):
    """Runs the wrapper on numpy inputs with poisoned preallocated outputs (the current
    settings unless given)."""
    m, e = scores.shape
    if row_pad:
        buf = np.full((m, e + row_pad), np.nan, F32)
        buf[:, :e] = scores
        scores = buf[:, :e]
    kout = topk + kw.get("num_fused_shared_experts", 0)
    w = np.full((m, kout), 12345.0, F32)
    ids = np.full((m, kout), -7, np.int32)
    rw, rids = mod.moe_fused_gate(HostTensor(scores), HostTensor(bias), topk,
                                  out_weights=HostTensor(w), out_ids=HostTensor(ids),
                                  settings=settings or Current.settings, **kw)
    assert rw.a is w and rids.a is ids
    return w, ids


def check(scores, bias, topk, row_pad=0, settings=None, **kw):
    w, ids = gate(scores, bias, topk, row_pad=row_pad, settings=settings, **kw)
    ref_kw = {"renormalize": kw.get("renormalize", True),
              "rsf": kw.get("routed_scaling_factor", 1.0),
              "apply_rsf": kw.get("apply_routed_scaling_factor_on_output", False),
              "n_shared": kw.get("num_fused_shared_experts", 0)}
    ew, eids = ref_gate(scores, bias, topk, **ref_kw)
    np.testing.assert_array_equal(ids, eids)
    np.testing.assert_allclose(w, ew, rtol=1e-6, atol=1e-7, equal_nan=True)
    return w, ids


# ---------------------------------------------------------------------------
# The reference itself (hand-computed cases, independent of the kernel)
# ---------------------------------------------------------------------------

def test_reference_hand_computed():
    s = np.array([[0.0, 0.0, 2.0, -1.0, np.nan]], F32)
    bias = np.array([0.0, 0.0, -1.0, 0.0, 0.0], F32)
    # a = .5 .5 .881 .269 nan; b = .5 .5 -.119 .269 -1e30 -> ids 0, 1 (tie: lowest first), 3
    w, ids = ref_gate(s, bias, 3, renormalize=False)
    assert ids.tolist() == [[0, 1, 3]]
    np.testing.assert_allclose(w[0], [0.5, 0.5, 1 / (1 + math.e)], rtol=1e-6)
    w, ids = ref_gate(s, bias, 3, rsf=2.0, apply_rsf=True, n_shared=1)
    tot = 1 + 1 / (1 + math.e)
    # routed: a / sum * rsf; shared: (sum / rsf) / sum * rsf == 1
    np.testing.assert_allclose(w[0], [1 / tot, 1 / tot, 2 / (1 + math.e) / tot, 1.0],
                               rtol=1e-6)
    assert ids.tolist() == [[0, 1, 3, 5]]


# ---------------------------------------------------------------------------
# Interpreter vs reference
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("m", [1, 5])
@pytest.mark.parametrize("renormalize,apply_rsf,n_shared", [
    (True, False, 0), (False, False, 0), (True, True, 1), (False, True, 2), (True, False, 1)])
def test_k3_shape_random(m, renormalize, apply_rsf, n_shared, via_interpreter):
    rng = np.random.default_rng(100 * m + 10 * renormalize + 3 * apply_rsf + n_shared)
    scores = rng.standard_normal((m, 896)).astype(F32) * 3
    bias = (rng.standard_normal(896) * 0.05).astype(F32)
    check(scores, bias, 16, renormalize=renormalize, routed_scaling_factor=2.827,
          apply_routed_scaling_factor_on_output=apply_rsf, num_fused_shared_experts=n_shared)
    assert via_interpreter == [(launch_name(m), (m,), expected_constexprs(m))]


@pytest.mark.parametrize("e,k", [(64, 1), (64, 8), (128, 16), (256, 16), (256, 7), (40, 5),
                                 (33, 32), (16, 16), (1, 1), (2048, 12)])
def test_small_and_odd_shapes(e, k, via_interpreter):
    rng = np.random.default_rng(e * 31 + k)
    scores = rng.standard_normal((3, e)).astype(F32)
    bias = (rng.standard_normal(e) * 0.2).astype(F32)
    check(scores, bias, k, row_pad=5, routed_scaling_factor=1.5,
          apply_routed_scaling_factor_on_output=True, num_fused_shared_experts=1)


def test_ties_lowest_id_first(via_interpreter):
    rng = np.random.default_rng(7)
    e = 896
    rows = []
    rows.append(np.zeros(e, F32))                        # every score equal
    rows.append(np.full(e, 3.0, F32))                     # all equal, nonzero
    q = rng.integers(-2, 3, size=e).astype(F32)           # five distinct values only
    rows.append(q)
    t = rng.standard_normal(e).astype(F32)                # a tie group straddling slot K
    order = np.argsort(-t, kind="stable")
    t[order[10:30]] = t[order[10]]
    rows.append(t)
    r = rng.standard_normal(e).astype(F32)                # ties in reverse id order
    r[[800, 500, 100, 3]] = 9.0
    rows.append(r)
    scores = np.stack(rows)
    bias = np.zeros(e, F32)
    w, ids = check(scores, bias, 16)
    assert ids[0].tolist() == list(range(16))
    assert ids[4, :4].tolist() == [3, 100, 500, 800]
    # ties produced by the bias: equal b from different a
    bias2 = np.zeros(e, F32)
    s2 = np.zeros((1, e), F32)
    s2[0, 5], bias2[5] = 0.0, 0.25      # b = 0.75
    s2[0, 2] = np.log(3.0)              # a = 0.75, b = 0.75
    check(s2, bias2, 16)


def test_nan_and_inf_rows(via_interpreter):
    rng = np.random.default_rng(11)
    e = 896
    nan_row = np.full(e, np.nan, F32)                     # every b -> -1e30: ids 0..15, w NaN
    part = rng.standard_normal(e).astype(F32)
    part[rng.choice(e, 300, replace=False)] = np.nan
    pinf = rng.standard_normal(e).astype(F32)
    pinf[[7, 70, 700, 701]] = np.inf                     # a = 1 exactly
    ninf = np.full(e, -np.inf, F32)                      # a = 0: sum 0, no renormalization
    mixed = rng.standard_normal(e).astype(F32)
    mixed[::3] = -np.inf
    mixed[1::7] = np.inf
    mixed[2::11] = np.nan
    scores = np.stack([nan_row, part, pinf, ninf, mixed])
    bias = (rng.standard_normal(e) * 0.1).astype(F32)
    for kw in ({}, {"renormalize": False}, {"num_fused_shared_experts": 1,
                                            "routed_scaling_factor": 2.5,
                                            "apply_routed_scaling_factor_on_output": True}):
        w, ids = check(scores, bias, 16, **kw)
        assert ids[0, :16].tolist() == list(range(16))
        assert np.all(np.isnan(w[0]))
        assert np.all(w[3, :16] == 0)
    # NaN / inf in the bias
    bias = np.zeros(e, F32)
    bias[[1, 2, 3]] = np.nan
    bias[[10, 20]] = np.inf
    bias[[30, 0]] = -np.inf
    w, ids = check(rng.standard_normal((2, e)).astype(F32), bias, 16)
    assert ids[:, :2].tolist() == [[10, 20], [10, 20]]


def test_saturated_rows(via_interpreter):
    """Scores so large or small that the sigmoid saturates at 1 or 0: b ties at 1 + bias."""
    rng = np.random.default_rng(5)
    e = 896
    hi = (rng.random((2, e)) * 50 + 40).astype(F32)        # a == 1.0 for every expert
    lo = -(rng.random((2, e)) * 50 + 120).astype(F32)     # a == 0 (or denormal)
    scores = np.concatenate([hi, lo])
    for bias in (np.zeros(e, F32), (rng.integers(0, 4, e) * 0.125).astype(F32)):
        check(scores, bias, 16)
        check(scores, bias, 16, renormalize=False, num_fused_shared_experts=2,
              routed_scaling_factor=2.0)


def test_key_order_of_special_values(via_interpreter):
    """With a = 0 (s = -inf) b is the bias itself: the radix key must order signed zeros,
    denormals, +-FLT_MAX and infinities as floats do (and put NaN at -1e30)."""
    vals = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 3.4e38, -3.4e38, np.inf, -np.inf,
                     np.nan, -1e30, -2e30, 1.0, -1.0, 0.5], F32)
    rng = np.random.default_rng(3)
    e = 64
    bias = np.full(e, -np.inf, F32)
    pos = rng.choice(e, len(vals), replace=False)
    bias[pos] = vals
    scores = np.full((1, e), -np.inf, F32)
    for k in (1, 5, 12, 16, 32):
        check(scores, bias, k, renormalize=False)


def test_threshold_equal_to_a_winner(via_interpreter):
    """The bit rounds stop once exactly K keys are >= the threshold; here the K-th b is 1.0
    (a key with trailing zero bits, equal to the threshold) and the rest are far below."""
    e, k = 256, 16
    rng = np.random.default_rng(17)
    scores = np.full((2, e), -np.inf, F32)
    bias = (rng.random(e) * 1.75 - 1.0).astype(F32)       # b in [-1, 0.75) for a = 0
    win = rng.choice(e, k, replace=False)
    scores[:, win] = np.inf                                # a = 1
    bias[win[:-1]] = np.arange(1, k, dtype=F32)            # b = 2 .. 16
    bias[win[-1]] = 0.0                                    # b = 1.0 exactly: the K-th
    scores[1, rng.choice(np.setdiff1d(np.arange(e), win), 3, replace=False)] = 0.0  # b + .5
    w, ids = check(scores, bias, k, renormalize=False)
    assert ids[0, -1] == win[-1] and set(ids[0].tolist()) == set(win.tolist())


def test_many_rows_and_strided_scores(via_interpreter):
    rng = np.random.default_rng(21)
    scores = (rng.standard_normal((24, 896)) * 2).astype(F32)
    scores[3] = scores[3].round(1)  # ties
    bias = (rng.standard_normal(896) * 0.01).astype(F32)
    check(scores, bias, 16, row_pad=12, num_fused_shared_experts=1,
          routed_scaling_factor=2.827, apply_routed_scaling_factor_on_output=True)


@pytest.mark.parametrize("e", [1023, 1024, 995])
def test_packed_count_limits(e, via_interpreter):
    """Rows around 1024 experts (the four-bit rounds count in 16-bit fields; E = 1023 every
    count full in the first round: all keys >= the third candidate, b >= 2): rows of ties
    everywhere, of a tie group straddling slot K, of random keys, of NaN."""
    rng = np.random.default_rng(e)
    bias = np.ones(e, F32)
    rows = [np.full(e, np.inf, F32),                       # b = 2.0 for every expert
            np.full(e, np.nan, F32),
            rng.standard_normal(e).astype(F32)]
    t = rng.standard_normal(e).astype(F32)
    order = np.argsort(-t, kind="stable")
    t[order[20:40]] = t[order[20]]
    rows.append(t)
    for k in (1, 16, 21, 32):
        w, ids = check(np.stack(rows), bias, k)
        assert ids[0].tolist() == list(range(k))


def test_variants_bit_identical(via_interpreter):
    """Every variant gives the same ids and the same weight bits as the radix kernel on one
    bit a round."""
    rng = np.random.default_rng(33)
    e = 896
    scores = (rng.standard_normal((8, e)) * 2).astype(F32)
    scores[1] = scores[1].round(0)                        # coarse: ties at the K-th key
    scores[2, ::5] = np.nan
    scores[3] = np.inf
    scores[4, [1, 50, 600]] = -np.inf
    bias = (rng.standard_normal(e) * 0.05).astype(F32)
    for k in (1, 7, 16, 32):
        kw = {"num_fused_shared_experts": 1, "routed_scaling_factor": 2.5,
              "apply_routed_scaling_factor_on_output": True}
        w, ids = gate(scores, bias, k, **kw)
        w0, ids0 = gate(scores, bias, k, settings=RADIX, **kw)
        np.testing.assert_array_equal(ids, ids0)
        np.testing.assert_array_equal(w.view(np.int32), w0.view(np.int32))


def test_four_bit_rounds_largest_rows(monkeypatch):
    """Four bits a round at E = 4096 (the largest row: counts up to 4096 in its 16-bit
    fields, every field full in the first round of the all-equal rows) gives the ids and
    weight bits of the one-bit rounds."""
    monkeypatch.setattr(mod.L, "launch", interpreter_launch())
    rng = np.random.default_rng(41)
    e = 4096
    t = rng.standard_normal(e).astype(F32)
    order = np.argsort(-t, kind="stable")
    t[order[5:40]] = t[order[5]]
    scores = np.stack([np.full(e, np.inf, F32), rng.standard_normal(e).astype(F32), t])
    for bias in ((rng.standard_normal(e) * 0.1).astype(F32), np.zeros(e, F32)):
        for k in (1, 16, 32):
            out = {bits: gate(scores, bias, k, settings=dataclasses.replace(
                RADIX, batch_select_bits=bits)) for bits in (4, 1)}
            np.testing.assert_array_equal(out[4][1], out[1][1])
            np.testing.assert_array_equal(out[4][0].view(np.int32), out[1][0].view(np.int32))
        if not bias.any():  # the all-inf row: every key equal, ids 0 .. k - 1
            assert out[4][1][0].tolist() == list(range(k))
        check(scores, bias, 16)


def _candidates(scores, bias, groups):
    """Keys >= the K-th largest of ``groups`` group maxima (K = 16; the rank kernel's
    pre-filter, in numpy): above its CAP a row takes the radix rounds."""
    with np.errstate(over="ignore", invalid="ignore"):
        b = F32(1) / (F32(1) + np.exp(-scores)) + bias
    bits = np.where(np.isnan(b), F32(-1e30), b).view(np.int32).astype(np.int64)
    key = np.where(bits < 0, ~bits & 0xFFFFFFFF, bits | 0x80000000)
    n = 1 << math.ceil(math.log2(key.shape[1]))
    key = np.pad(key, ((0, 0), (0, n - key.shape[1])))
    t0 = np.sort(key.reshape(len(key), groups, -1).max(2), axis=1)[:, ::-1][:, 15]
    return (key >= t0[:, None]).sum(1)


@pytest.mark.parametrize("groups,cap", [(64, 32), (32, 64), (128, 32)])
def test_rank_kernel_bit_identical(groups, cap, monkeypatch):
    """The rank kernel gives the ids and weight bits of the radix kernel (4 bits a round),
    on rows that stay under the candidate cap (random, ties below slot K, NaN or inf in a
    few lanes) and rows that take its fallback rounds (every score equal, a tie group
    straddling slot K, NaN rows), for E = 896 and E = 995 (not a multiple of 32), with
    shared slots; both paths are exercised."""
    monkeypatch.setattr(mod.L, "launch", interpreter_launch())
    rank = dataclasses.replace(mod.SETTINGS, rank_groups=groups, rank_cap=cap)
    radix = dataclasses.replace(RADIX, batch_select_bits=4)
    for e in (896, 995):
        rng = np.random.default_rng(e + groups + cap)
        rows = [rng.standard_normal(e).astype(F32) for _ in range(3)]
        r = rng.standard_normal(e).astype(F32)
        order = np.argsort(-r, kind="stable")
        r[order[20:25]] = r[order[20]]                    # ties below slot K
        r[order[3]] = r[order[2]]                         # a tie among the winners
        rows.append(r)
        r = rng.standard_normal(e).astype(F32)
        r[[5, 600]], r[[9, 700]], r[order[0]] = np.inf, np.nan, -np.inf
        rows.append(r)
        rows.append(np.zeros(e, F32))                     # fallback: every key equal
        t = rng.standard_normal(e).astype(F32)
        t[order[10:60]] = t[order[10]]                    # fallback: 50 tied at slot K
        rows.append(t)
        rows.append(np.full(e, np.nan, F32))              # fallback: NaN row
        scores = np.stack(rows)
        bias = (rng.standard_normal(e) * 0.05).astype(F32)
        n = _candidates(scores, bias, min(groups, 1024))
        assert (n[:5] <= cap).any() and (n > cap).any()  # both paths
        kw = {"num_fused_shared_experts": 2, "routed_scaling_factor": 2.5,
              "apply_routed_scaling_factor_on_output": True}
        for k in (16, 1, 7):
            out = {name: gate(scores, bias, k, settings=s, **kw)
                   for name, s in (("rank", rank), ("radix", radix))}
            np.testing.assert_array_equal(out["rank"][1], out["radix"][1])
            np.testing.assert_array_equal(out["rank"][0].view(np.int32),
                                          out["radix"][0].view(np.int32))
        check(scores, bias, 16, settings=rank, **kw)


def test_rank_launch(monkeypatch):
    """Below batch_m rows the wrapper launches the rank specialization (its warps), from
    batch_m on the batch kernel (its warps and register cap); settings= reaches both."""
    launches = []
    monkeypatch.setattr(mod.L, "launch", lambda kernel, name, grid, args, cx, warps, regs,
                        generic: launches.append((name, tuple(grid), warps, regs, cx.get("CAP"))))
    T = FakeTensor
    s = mod.SETTINGS
    for m in (1, 64, s.batch_m):
        mod.moe_fused_gate(T((m, 896)), T((896,)), 16, out_weights=T((m, 16)),
                           out_ids=T((m, 16), "int32"))
    assert launches == [("moe_fused_gate_rank", (1,), s.rank_warps, None, s.rank_cap),
                        ("moe_fused_gate_rank", (64,), s.rank_warps, None, s.rank_cap),
                        ("moe_fused_gate_batch", (s.batch_m,), s.batch_warps,
                         s.batch_maxnreg, None)]
    launches.clear()
    other = dataclasses.replace(s, batch_m=64, rank_warps=8, rank_cap=64, batch_warps=2,
                                batch_maxnreg=None)
    for m in (63, 64):
        mod.moe_fused_gate(T((m, 896)), T((896,)), 16, out_weights=T((m, 16)),
                           out_ids=T((m, 16), "int32"), settings=other)
    assert launches == [("moe_fused_gate_rank", (63,), 8, None, 64),
                        ("moe_fused_gate_batch", (64,), 2, None, None)]


def test_rank_kernel_barriers():
    """The rank kernel keeps its counts and compaction results on the tiles that use them:
    at the K3 shape 16 bar.sync in the whole kernel (its former form: 20) and at most 54
    registers (the former form: 60) on sm_90a."""
    pytest.importorskip("kiln._C")
    spec = next(s for s in mod.AOT_SPECIALIZATIONS if s.kernel_name == "moe_fused_gate_rank")
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=4, arch="sm_90a")
    assert ck.ptx.count("bar.sync") == 16
    assert ck.meta["targets"]["sm_90a"]["registers"] <= 54


def test_first_set_bits():
    """first_set_bits (the fallback's first equal keys in id order): the lowest n set bits
    of a mask, all of them from popcount on."""
    import kiln
    import kiln.language as kl

    @kiln.jit
    def first(m_ptr, n_ptr, out_ptr):
        o = kl.arange(0, 64)
        kl.store(out_ptr + o, mod.first_set_bits(kl.load(m_ptr + o), kl.load(n_ptr + o), 32))

    rng = np.random.default_rng(2)
    m = rng.integers(0, 2**32, size=64, dtype=np.uint64).astype(np.uint32)
    m[:4] = [0, 1, 0xFFFFFFFF, 0x80000000]
    n = rng.integers(0, 34, size=64).astype(np.int32)
    n[:4] = [0, 5, 31, 0]
    out = np.zeros(64, np.uint32)
    interpret(first, (1,), m, n, out)
    expect = []
    for x, k in zip(m.tolist(), n.tolist()):
        bits = [b for b in range(32) if x >> b & 1][:k]
        expect.append(sum(1 << b for b in bits))
    assert out.tolist() == expect


@pytest.mark.parametrize("e,k", [(64, 4), (40, 5), (256, 16), (1023, 32), (2048, 16)])
def test_rank_kernel_other_shapes_compile(e, k):
    pytest.importorskip("kiln._C")
    spec = next(s for s in mod.AOT_SPECIALIZATIONS if s.kernel_name == "moe_fused_gate_rank")
    for warps in (4, 8):
        ck = spec.kernel.compile(spec.signature, dict(spec.constexprs, E=e, K=k),
                                 spec.divisibility, num_warps=warps, arch="sm_90a")
        assert ck.cubin[:4] == b"\x7fELF"
        assert ".local" not in ck.ptx


def test_m_zero_launches_nothing(via_interpreter):
    w, ids = gate(np.zeros((0, 896), F32), np.zeros(896, F32), 16)
    assert w.shape == (0, 16) and ids.shape == (0, 16)
    assert via_interpreter == []


def test_fast_sigmoid_variant_runs(via_interpreter):
    # the interpreter computes the sigmoid exactly, so both variants match the reference here;
    # the GPU test checks the approximate one against torch
    rng = np.random.default_rng(9)
    scores = rng.standard_normal((2, 896)).astype(F32)
    bias = np.zeros(896, F32)
    check(scores, bias, 16, fast_sigmoid=True)
    assert via_interpreter[-1][2]["FAST_SIGMOID"] is True


def test_radix_helpers():
    """popcount32 and nth_set_bit on their own (the compaction of step 3)."""
    import kiln
    import kiln.language as kl

    @kiln.jit
    def helpers(m_ptr, n_ptr, pc_ptr, nth_ptr, C: kl.constexpr):
        o = kl.arange(0, 64)
        m = kl.load(m_ptr + o)
        kl.store(pc_ptr + o, mod.popcount32(m))
        kl.store(nth_ptr + o, mod.nth_set_bit(m, kl.load(n_ptr + o), C))

    rng = np.random.default_rng(1)
    m = rng.integers(1, 2**32, size=64, dtype=np.uint64).astype(np.uint32)
    m[:4] = [1, 0x80000000, 0xFFFFFFFF, 0x80000001]
    pc = np.array([bin(int(x)).count("1") for x in m])
    n = np.array([rng.integers(0, c) for c in pc], np.int32)
    n[2], n[3] = 31, 1
    out_pc, out_nth = np.zeros(64, np.int32), np.zeros(64, np.int32)
    interpret(helpers, (1,), m, n, out_pc, out_nth, C=32)
    np.testing.assert_array_equal(out_pc, pc)
    expect = [[b for b in range(32) if x >> b & 1][i] for x, i in zip(m.tolist(), n)]
    assert out_nth.tolist() == expect
    assert out_nth[:4].tolist() == [0, 31, 31, 31]


# ---------------------------------------------------------------------------
# Compilation (AOT specializations, every arch)
# ---------------------------------------------------------------------------

#: the fast specializations (K3's router) and the generic ones
FAST = [sp for sp in mod.AOT_SPECIALIZATIONS if sp.kernel_name != mod.GENERIC]
GENERIC = [sp for sp in mod.AOT_SPECIALIZATIONS if sp.kernel_name == mod.GENERIC]


def test_module_listed():
    assert "moe_fused_gate" in kimi_k3.MODULES
    s = mod.SETTINGS
    assert {(sp.kernel_name, sp.constexprs["E"], sp.constexprs["K"],
             sp.constexprs["FAST_SIGMOID"]) for sp in FAST} == {
        (name, 896, 16, fast) for name in ("moe_fused_gate_batch", "moe_fused_gate_rank")
        for fast in (False, True)}
    assert {(sp.kernel_name, sp.num_warps, sp.maxnreg) for sp in FAST} == {
        ("moe_fused_gate_batch", s.batch_warps, s.batch_maxnreg),
        ("moe_fused_gate_rank", s.rank_warps, None)}
    assert {(sp.kernel, sp.constexprs["E_TILE"], sp.constexprs["FAST_SIGMOID"], sp.num_warps,
             sp.divisibility) for sp in GENERIC} == {
        (mod.moe_fused_gate_generic_kernel, tile, fast, max(1, tile // 256), None)
        for tile in mod.GENERIC_E_TILES for fast in (False, True)}
    assert {(sp.kernel_name, sp.constexprs["SELECT_BITS"]) for sp in mod.AOT_SPECIALIZATIONS
            if sp.kernel is mod.moe_fused_gate_kernel} == {
        ("moe_fused_gate_batch", s.batch_select_bits)}
    assert {(sp.kernel_name, sp.constexprs["SELECT_BITS"], sp.constexprs["GROUPS"],
             sp.constexprs["CAP"]) for sp in mod.AOT_SPECIALIZATIONS
            if sp.kernel is mod.moe_fused_gate_rank_kernel} == {
        ("moe_fused_gate_rank", s.rank_select_bits, s.rank_groups, s.rank_cap)}


def test_every_shipped_kernel_is_a_default_launch(monkeypatch):
    """Each fast AOT specialization is what some wrapper call with the default settings
    selects (``select_launch``, instrumented): one row and batch_m rows of K3's router, both
    sigmoids; each generic one is the generic launch of some call (E up to each tile)."""
    selected = record_launch_choices(monkeypatch, mod)
    generics = []
    monkeypatch.setattr(mod.L, "launch",
                        lambda *args, generic=None, **kw: generics.append(generic))
    T = FakeTensor
    for m in (1, 64, mod.SETTINGS.batch_m, 16384):
        for fast in (False, True):
            mod.moe_fused_gate(T((m, 896)), T((896,)), 16, out_weights=T((m, 16)),
                               out_ids=T((m, 16), "int32"), fast_sigmoid=fast)
    for e in mod.GENERIC_E_TILES:
        for fast in (False, True):
            mod.moe_fused_gate(T((3, e)), T((e,)), 8, out_weights=T((3, 8)),
                               out_ids=T((3, 8), "int32"), fast_sigmoid=fast)
    launched = [(k, name, cx, warps, regs, cluster)
                for k, name, _, cx, warps, regs, cluster in selected]
    for s in FAST:
        assert (s.kernel, s.kernel_name, dict(s.constexprs), s.num_warps, s.maxnreg,
                s.cluster) in launched, s.kernel_name
    launched = [(g.kernel, g.name, dict(g.constexprs), g.num_warps) for g in generics]
    for s in GENERIC:
        assert (s.kernel, s.kernel_name, dict(s.constexprs), s.num_warps) in launched


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("spec", mod.AOT_SPECIALIZATIONS,
                         ids=lambda s: f"{s.kernel_name}-fast{int(s.constexprs['FAST_SIGMOID'])}")
def test_compiles_to_ptx_and_cubin(spec, arch):
    pytest.importorskip("kiln._C")
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name)
    ptx = ck.ptx
    assert f".target {arch}" in ptx
    assert f".visible .entry {spec.kernel_name}(" in ptx
    assert ck.cubin[:4] == b"\x7fELF"
    assert "griddepcontrol.wait" in ptx
    assert ".local" not in ptx
    if spec.constexprs["FAST_SIGMOID"]:
        # __fdividef(1, 1 + __expf(-x)): x * -log2(e), ex2.approx (no ftz), rcp.approx
        assert "ex2.approx.f32" in ptx and "rcp.approx.f32" in ptx
        assert "mul.rn.f32" in ptx and "0fBFB8AA3B" in ptx
        assert "rcp.rn.f32" not in ptx
    else:
        # libdevice expf (range reduction, fma.rm) and an IEEE reciprocal, as torch.sigmoid
        assert "fma.rm.f32" in ptx and "rcp.rn.f32" in ptx
        assert "rcp.approx" not in ptx and "div.approx" not in ptx
    assert "div.full" not in ptx and "div.approx" not in ptx  # renormalization is IEEE


@pytest.mark.parametrize("bits", [1, 4])
@pytest.mark.parametrize("e,k", [(64, 4), (256, 8), (1023, 32), (2048, 16)])
def test_other_shapes_compile(e, k, bits):
    pytest.importorskip("kiln._C")
    spec = next(s for s in FAST if s.kernel_name == "moe_fused_gate_batch")
    ck = spec.kernel.compile(spec.signature, {"E": e, "K": k, "FAST_SIGMOID": False,
                                              "SELECT_BITS": bits},
                             spec.divisibility, num_warps=4, arch="sm_90a")
    assert ck.cubin[:4] == b"\x7fELF"
    assert ".local" not in ck.ptx


def test_batch_kernel_bits_compile_within_the_cap():
    """The one-warp batch kernel with one and four bits a round compiles within its register
    cap without spilling."""
    pytest.importorskip("kiln._C")
    for spec in mod.AOT_SPECIALIZATIONS:
        if spec.kernel_name != "moe_fused_gate_batch":
            continue
        for bits in (1, 4):
            cx = dict(spec.constexprs, SELECT_BITS=bits)
            ck = spec.kernel.compile(spec.signature, cx, spec.divisibility,
                                     num_warps=spec.num_warps, arch="sm_90a",
                                     maxnreg=spec.maxnreg)
            assert ck.meta["targets"]["sm_90a"]["spill_store_bytes"] == 0


# ---------------------------------------------------------------------------
# Wrapper checks: raise before any launch
# ---------------------------------------------------------------------------

_TYPESTR = {"float32": "<f4", "int32": "<i4", "bfloat16": "<V2", "int64": "<i8"}


class FakeTensor:
    """Just enough of a CUDA tensor: __cuda_array_interface__, shape, stride(), dtype."""

    def __init__(self, shape, dtype="float32", strides=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._strides = tuple(strides) if strides else tuple(
            math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        self.__cuda_array_interface__ = {"data": (0x7F0000000000, False),
                                         "typestr": _TYPESTR[dtype], "shape": self.shape,
                                         "version": 3}

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]


def test_batch_launch(monkeypatch):
    """From batch_m rows on the wrapper launches the batch specialization (its warps and
    register cap), below it the rank one."""
    launches = []
    monkeypatch.setattr(mod.L, "launch", lambda kernel, name, grid, args, cx, warps, regs,
                        generic: launches.append((name, tuple(grid), warps, regs)))
    T = FakeTensor
    s = mod.SETTINGS
    for m in (1, s.batch_m - 1, s.batch_m, 4 * s.batch_m):
        mod.moe_fused_gate(T((m, 896)), T((896,)), 16, out_weights=T((m, 16)),
                           out_ids=T((m, 16), "int32"))
    assert launches == [("moe_fused_gate_rank", (1,), s.rank_warps, None),
                        ("moe_fused_gate_rank", (s.batch_m - 1,), s.rank_warps, None),
                        ("moe_fused_gate_batch", (s.batch_m,), s.batch_warps, 80),
                        ("moe_fused_gate_batch", (4 * s.batch_m,), s.batch_warps, 80)]


def test_wrapper_checks(via_interpreter):
    T = FakeTensor
    f = mod.moe_fused_gate
    s, b = T((4, 896)), T((896,))
    w, i = T((4, 16)), T((4, 16), "int32")
    ok = {"out_weights": w, "out_ids": i}
    cases = [
        (TypeError, "scores must be float32", (T((4, 896), "bfloat16"), b, 16), ok),
        (TypeError, "bias must be float32", (s, T((896,), "bfloat16"), 16), ok),
        (ValueError, "bias must have shape", (s, T((895,)), 16), ok),
        (ValueError, "scores must have shape", (T((896,)), b, 16), ok),
        (ValueError, "topk must be in", (s, b, 0), ok),
        (ValueError, "topk must be in", (s, b, 33), ok),
        (ValueError, "topk must be in", (T((4, 8)), T((8,)), 9),
         {"out_weights": T((4, 9)), "out_ids": T((4, 9), "int32")}),
        (TypeError, "topk must be an int", (s, b, 16.0), ok),
        (TypeError, "renormalize must be a bool", (s, b, 16), {**ok, "renormalize": 1}),
        (TypeError, "fast_sigmoid must be a bool", (s, b, 16), {**ok, "fast_sigmoid": None}),
        (ValueError, "num_fused_shared_experts must be >= 0", (s, b, 16),
         {**ok, "num_fused_shared_experts": -1}),
        (ValueError, "routed_scaling_factor must be finite and nonzero", (s, b, 16),
         {**ok, "routed_scaling_factor": 0.0}),
        (ValueError, "routed_scaling_factor must be finite and nonzero", (s, b, 16),
         {**ok, "routed_scaling_factor": float("nan")}),
        (ValueError, "number of experts", (T((4, 8192)), T((8192,)), 16), ok),
        (ValueError, "last dimension", (T((4, 896), strides=(1792, 2)), b, 16), ok),
        (ValueError, "bias must be contiguous", (s, T((896,), strides=(2,)), 16), ok),
        (TypeError, "out_ids must be int32", (s, b, 16), {**ok, "out_ids": T((4, 16))}),
        (ValueError, "out_weights must have shape", (s, b, 16),
         {**ok, "out_weights": T((4, 17))}),
        (ValueError, "out_weights must have shape", (s, b, 16),
         {**ok, "num_fused_shared_experts": 1}),
        (ValueError, "out_ids must be contiguous", (s, b, 16),
         {**ok, "out_ids": T((4, 16), "int32", strides=(32, 1))}),
        (ValueError, "32-bit", (T((2**22, 896)), b, 16),
         {"out_weights": T((2**22, 16)), "out_ids": T((2**22, 16), "int32")}),
    ]
    for exc, msg, args, kw in cases:
        with pytest.raises(exc, match=msg):
            f(*args, **kw)
    assert via_interpreter == []
    # well-formed arguments reach the launch with the K3 constexprs
    f(T((4, 896), strides=(1024, 1)), b, 16, out_weights=T((4, 17)),
      out_ids=T((4, 17), "int32"), num_fused_shared_experts=1, fast_sigmoid=True,
      settings=Current.settings)
    assert via_interpreter == [(launch_name(4), (4,), expected_constexprs(4, fast=True))]
