"""moe_fused_gate (docs/kernels/moe_routing.md) on the GPU through its wrapper, against a torch
reference written from the spec: ``a = torch.sigmoid(s)``, ``b = a + bias`` (NaN -> -1e30), ids
= the first K of ``argsort(-b, stable=True)`` (ties to the lowest id), weights = a[ids], then
shared slots, renormalization and scaling. The default (precise) sigmoid is torch's
arithmetic, so ids must match exactly and the unnormalized weights bit for bit; the fast sigmoid
(the original's ``__fdividef(1, 1 + __expf(-x))``) must match exactly wherever the reference
has no near-tie (|b_i - b_j| <= 1e-6 among the first K + 1) and be a valid top-K within 1e-6
elsewhere."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import _launch as L  # noqa: E402
from kernels_dsl.kimi_k3 import moe_fused_gate as mod  # noqa: E402

E, K = 896, 16
EPS = 1e-6


def ref_biased(scores, bias):
    a = torch.sigmoid(scores)
    b = a + bias[None, :]
    return a, torch.where(torch.isnan(b), torch.full_like(b, -1e30), b)


def ref_finish(a, ids, topk, renormalize, rsf, apply_rsf, n_shared):
    """Weights for the chosen ids: a[ids], shared slots, renormalize, scale."""
    m, e = a.shape
    w = torch.gather(a, 1, ids.long())
    routed_sum = w.sum(dim=1)
    w = torch.cat([w, (routed_sum / rsf)[:, None].expand(m, n_shared)], dim=1)
    ids = torch.cat([ids.int(), (e + torch.arange(n_shared, device=a.device, dtype=torch.int32))
                     [None, :].expand(m, n_shared)], dim=1)
    if renormalize:
        pos = routed_sum > 0
        w = torch.where(pos[:, None], w / torch.where(pos, routed_sum, 1.0)[:, None], w)
    if apply_rsf:
        w = w * rsf
    return w, ids


def reference(scores, bias, topk, renormalize=True, rsf=1.0, apply_rsf=False, n_shared=0):
    a, b = ref_biased(scores, bias)
    ids = torch.argsort(-b, dim=1, stable=True)[:, :topk]
    return ref_finish(a, ids, topk, renormalize, rsf, apply_rsf, n_shared)


def gate(scores, bias, topk, **kw):
    m = scores.shape[0]
    kout = topk + kw.get("num_fused_shared_experts", 0)
    w = torch.full((m, kout), 12345.0, device="cuda")  # poisoned
    ids = torch.full((m, kout), -7, device="cuda", dtype=torch.int32)
    rw, rids = mod.moe_fused_gate(scores, bias, topk, out_weights=w, out_ids=ids, **kw)
    assert rw is w and rids is ids
    torch.cuda.synchronize()
    return w, ids


def ref_kwargs(kw):
    return {"renormalize": kw.get("renormalize", True),
            "rsf": kw.get("routed_scaling_factor", 1.0),
            "apply_rsf": kw.get("apply_routed_scaling_factor_on_output", False),
            "n_shared": kw.get("num_fused_shared_experts", 0)}


def assert_weights(w, ew):
    torch.testing.assert_close(w, ew, rtol=EPS, atol=1e-7, equal_nan=True)


def check_exact(scores, bias, topk, **kw):
    w, ids = gate(scores, bias, topk, **kw)
    ew, eids = reference(scores, bias, topk, **ref_kwargs(kw))
    bad = (ids != eids).any(dim=1)
    assert not bad.any(), (f"{int(bad.sum())} rows differ; first {int(bad.nonzero()[0])}: "
                           f"{ids[bad][0].tolist()} vs {eids[bad][0].tolist()}")
    assert_weights(w, ew)
    return w, ids


def near_tie_rows(b, topk):
    """Rows whose K + 1 largest b (reference) hold two values within EPS of each other."""
    top = torch.sort(b, dim=1, descending=True).values[:, :topk + 1]
    return ((top[:, :-1] - top[:, 1:]) <= EPS).any(dim=1)


def check_fast(scores, bias, topk, **kw):
    """Exact where the reference has no near-tie; a valid top-K (within EPS) elsewhere."""
    w, ids = gate(scores, bias, topk, fast_sigmoid=True, **kw)
    a, b = ref_biased(scores, bias)
    eids = torch.argsort(-b, dim=1, stable=True)[:, :topk]
    routed = ids[:, :topk].long()
    near = near_tie_rows(b, topk)
    exact_ok = (routed == eids).all(dim=1)
    assert bool(exact_ok[~near].all()), "ids differ on a row without a near-tie"
    # near-tie rows: distinct ids, descending within EPS, no better expert left out
    assert bool(((routed >= 0) & (routed < scores.shape[1])).all())
    srt = torch.sort(routed, dim=1).values
    assert bool((srt[:, 1:] != srt[:, :-1]).all())
    bsel = torch.gather(b, 1, routed)
    assert bool((bsel[:, 1:] <= bsel[:, :-1] + EPS).all())
    left_out = b.scatter(1, routed, float("-inf")).max(dim=1).values
    assert bool((left_out <= bsel.min(dim=1).values + EPS).all())
    ew, eids_full = ref_finish(a, routed, topk, **ref_kwargs(kw))
    assert torch.equal(ids, eids_full)
    torch.testing.assert_close(w, ew, rtol=1e-5, atol=1e-6, equal_nan=True)
    return w, ids


def random_inputs(m, e=E, seed=0, scale=2.0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    scores = torch.randn(m, e, device="cuda", generator=g) * scale
    bias = torch.randn(e, device="cuda", generator=g) * 0.05
    return scores, bias


OPTIONS = [
    {},
    {"renormalize": False},
    {"routed_scaling_factor": 2.827, "apply_routed_scaling_factor_on_output": True},
    {"num_fused_shared_experts": 1, "routed_scaling_factor": 2.827},
    {"num_fused_shared_experts": 2, "routed_scaling_factor": 2.5, "renormalize": False,
     "apply_routed_scaling_factor_on_output": True},
]


@pytest.mark.parametrize("m", [1, 7, 512, 4096])
@pytest.mark.parametrize("opt", range(len(OPTIONS)))
def test_k3_random_exact(launch_mode, m, opt):
    scores, bias = random_inputs(m, seed=m + 1000 * opt)
    check_exact(scores, bias, K, **OPTIONS[opt])


@pytest.mark.parametrize("m", [1, 7, 512, 4096])
@pytest.mark.parametrize("opt", [0, 3])
def test_k3_random_fast_sigmoid(m, opt):
    scores, bias = random_inputs(m, seed=7 * m + opt)
    check_fast(scores, bias, K, **OPTIONS[opt])


def test_precise_weights_are_torch_sigmoid_bits():
    """renormalize off: each weight is torch.sigmoid of its score, bit for bit."""
    scores, bias = random_inputs(4096, seed=5, scale=6.0)
    w, ids = gate(scores, bias, K, renormalize=False)
    expect = torch.gather(torch.sigmoid(scores), 1, ids.long())
    assert torch.equal(w.view(torch.int32), expect.view(torch.int32))


@pytest.mark.parametrize("e,k", [(64, 1), (64, 8), (128, 16), (256, 8), (256, 16), (40, 5),
                                 (2048, 16)])
def test_other_expert_counts(launch_mode, e, k):
    scores, bias = random_inputs(300, e=e, seed=e + k)
    check_exact(scores, bias, k, num_fused_shared_experts=1, routed_scaling_factor=1.5)


@pytest.mark.parametrize("m", [1, 33, 600])
@pytest.mark.parametrize("e,k,pad", [(896, 16, 1), (896, 8, 0), (1, 1, 0), (257, 32, 3),
                                     (1000, 16, 0), (4096, 32, 0)])
def test_every_accepted_shape(launch_mode, m, e, k, pad):
    """E, topk and score strides other than K3's (896 experts, top-16, a row stride that is
    a multiple of 16: the bundle's fast specializations; the others its generic kernel, the
    radix select with E and topk at run time) against the reference, exact, with tie and
    special rows where E = 896; the fast sigmoid too."""
    scores = random_inputs(m, e=e + pad, seed=m + e + k)[0][:, :e]  # row stride E + pad
    if e == E and m > 17:
        scores[:17] = torch.cat([tie_rows(7, seed=m), special_rows(seed=m)])
    bias = random_inputs(1, e=e, seed=e)[1]
    check_exact(scores, bias, k, num_fused_shared_experts=1, routed_scaling_factor=2.5,
                apply_routed_scaling_factor_on_output=True)
    check_fast(scores, bias, k, renormalize=False)


def tie_rows(m, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    s = torch.randn(m, E, device="cuda", generator=g)
    s[0] = 0.0                                              # every score equal
    s[1] = 3.0
    s[2] = torch.randint(-2, 3, (E,), device="cuda", generator=g).float()  # 5 values
    s[3] = (s[3] * 4).round() / 4                           # many duplicates
    s[4, [800, 500, 100, 3]] = 9.0                          # ties in reverse id order
    order = torch.argsort(-s[5], stable=True)
    s[5, order[10:30]] = s[5, order[10]].item()             # a tie group across slot K
    s[6:] = (s[6:] * 2).round() / 2                         # coarse rows: ties everywhere
    return s


@pytest.mark.parametrize("fast", [False, True])
def test_ties_lowest_id_first(fast):
    scores = tie_rows(512, seed=3)
    bias = torch.zeros(E, device="cuda")
    # identical inputs give identical b under either sigmoid, so both are exact here
    if fast:
        w, ids = gate(scores, bias, K, fast_sigmoid=True)
        assert torch.equal(ids, reference(scores, bias, K)[1])
    else:
        w, ids = check_exact(scores, bias, K)
    assert ids[0].tolist() == list(range(K)) and ids[1].tolist() == list(range(K))
    assert ids[4, :4].tolist() == [3, 100, 500, 800]


def special_rows(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    nan, inf = float("nan"), float("inf")
    rows = torch.randn(10, E, device="cuda", generator=g)
    rows[0] = nan                                            # all NaN -> ids 0..K-1, w NaN
    rows[1, torch.randperm(E, device="cuda", generator=g)[:300]] = nan
    rows[2, [7, 70, 700, 701]] = inf                         # a == 1
    rows[3] = -inf                                           # a == 0, routed sum 0
    rows[4, ::3] = -inf
    rows[4, 1::7] = inf
    rows[4, 2::11] = nan
    rows[5] = rows[5].abs() * 50 + 40                        # saturated at 1: ties at 1 + bias
    rows[6] = -(rows[6].abs() * 50 + 120)                    # saturated at 0
    rows[7] = -(rows[7].abs() * 5 + 88)                      # sigmoid in the denormal range
    rows[8] = inf
    return rows


@pytest.mark.parametrize("opt", range(len(OPTIONS)))
def test_nan_inf_and_saturated_rows(opt):
    scores = special_rows(seed=opt)
    g = torch.Generator(device="cuda").manual_seed(99)
    for bias in (torch.zeros(E, device="cuda"),
                 (torch.randint(0, 4, (E,), device="cuda", generator=g) * 0.125).float()):
        w, ids = check_exact(scores, bias, K, **OPTIONS[opt])
        assert ids[0, :K].tolist() == list(range(K)) and bool(torch.isnan(w[0]).all())
        assert bool((w[3, :K] == 0).all())


def test_nan_inf_and_saturated_rows_fast():
    scores = special_rows(seed=1)
    bias = torch.zeros(E, device="cuda")
    w, ids = check_fast(scores, bias, K)
    # NaN, +-inf and saturated rows give identical a (0, 1 or NaN) under both sigmoids
    rows = [0, 3, 5, 6, 8]
    ew, eids = reference(scores, bias, K)
    assert torch.equal(ids[rows], eids[rows])
    torch.testing.assert_close(w[rows], ew[rows], rtol=0, atol=0, equal_nan=True)


def test_nan_and_inf_in_bias():
    scores, _ = random_inputs(64, seed=8)
    bias = torch.zeros(E, device="cuda")
    bias[[1, 2, 3]] = float("nan")
    bias[[10, 20]] = float("inf")
    bias[[30, 0]] = float("-inf")
    w, ids = check_exact(scores, bias, K)
    assert bool((ids[:, :2] == torch.tensor([10, 20], device="cuda")).all())


def test_strided_scores_and_m_zero(launch_mode):
    scores, bias = random_inputs(33, e=1024, seed=4)
    view = scores[:, :E]  # row stride 1024
    check_exact(view, bias[:E].contiguous(), K, num_fused_shared_experts=1)
    w, ids = mod.moe_fused_gate(scores[:0, :E], bias[:E].contiguous(), K)
    assert w.shape == (0, K) and ids.shape == (0, K) and ids.dtype == torch.int32


def test_allocates_outputs_and_is_reproducible():
    scores, bias = random_inputs(4096, seed=6)
    w1, i1 = mod.moe_fused_gate(scores, bias, K, num_fused_shared_experts=1)
    w2, i2 = mod.moe_fused_gate(scores, bias, K, num_fused_shared_experts=1)
    torch.cuda.synchronize()
    assert w1.shape == (4096, K + 1) and w1.dtype == torch.float32 and i1.dtype == torch.int32
    assert torch.equal(i1, i2) and torch.equal(w1.view(torch.int32), w2.view(torch.int32))


#: the radix (batch) kernel at every row count, one bit a round: the reference formulation
RADIX = dataclasses.replace(mod.SETTINGS, batch_m=1)


@pytest.mark.parametrize("settings", [mod.SETTINGS,
                                      dataclasses.replace(mod.SETTINGS, rank_select_bits=1),
                                      dataclasses.replace(RADIX, batch_select_bits=4),
                                      dataclasses.replace(RADIX, batch_warps=4,
                                                          batch_maxnreg=None)],
                         ids=["default", "rank-bits1", "radix-bits4", "radix-4warps"])
@pytest.mark.parametrize("m", [17, 4096])
def test_select_variants_bit_identical(settings, m):
    """The default launches (the rank kernel at m = 17, the batch kernel at m = 4096) and
    other settings match the reference exactly (random, tie and special rows) and give the
    bits of the radix kernel on one bit a round."""
    rows = [tie_rows(7, seed=m), special_rows(seed=m)]  # 17 rows
    if m > 17:
        rows.insert(0, random_inputs(m - 17, seed=m)[0])
    scores = torch.cat(rows)
    bias = random_inputs(1, seed=m + 1)[1]
    kw = {"num_fused_shared_experts": 1, "routed_scaling_factor": 2.5,
          "apply_routed_scaling_factor_on_output": True}
    for k in (1, 16, 32):
        w, ids = check_exact(scores, bias, k, settings=settings, **kw)
        w0, ids0 = check_exact(scores, bias, k, settings=RADIX, **kw)
        assert torch.equal(ids, ids0) and torch.equal(w.view(torch.int32), w0.view(torch.int32))


@pytest.mark.parametrize("groups,cap,warps", [(64, 32, 4), (32, 64, 4), (128, 32, 8)])
@pytest.mark.parametrize("m", [1, 64, 300])
def test_rank_latency_kernel(groups, cap, warps, m):
    """The rank kernel (a threshold from the group maxima, the survivors ranked exactly; the
    radix rounds past rank_cap survivors) at other groups, caps and warps: exact against the
    reference on random rows (the fast path), tie and special rows (the fallback), with
    shared slots and options, and the bits of the radix kernel (4 bits a round)."""
    rows = [random_inputs(m, seed=m + groups)[0]]
    if m > 1:
        rows += [tie_rows(7, seed=m), special_rows(seed=m)]
    scores = torch.cat(rows)
    bias = random_inputs(1, seed=m + 1)[1]
    rank = dataclasses.replace(mod.SETTINGS, rank_groups=groups, rank_cap=cap,
                               rank_warps=warps)
    radix = dataclasses.replace(RADIX, batch_select_bits=4, batch_warps=4, batch_maxnreg=None)
    for k in (1, 16, 32):
        for opt in OPTIONS:
            w, ids = check_exact(scores, bias, k, settings=rank, **opt)
            w0, ids0 = check_exact(scores, bias, k, settings=radix, **opt)
            assert torch.equal(ids, ids0)
            assert torch.equal(w.view(torch.int32), w0.view(torch.int32))


def test_new_m_does_not_recompile():
    """A new row count reuses the compiled kernel: the row counts below span both kernels
    (rank below batch_m rows, batch from there), each compiled once by the warm-up, and no
    new specialization appears (M is a run-time value, never specialized)."""
    if not L.jit_allowed():
        pytest.skip("JIT is forbidden (KILN_NO_JIT=1) or the compiler is absent")
    kernels = (mod.moe_fused_gate_rank_kernel, mod.moe_fused_gate_kernel)
    ms = (1, 16, 17, 33, mod.SETTINGS.batch_m - 1, mod.SETTINGS.batch_m, 4099)
    picked = {mod.select_launch(m, E, K, False)[0] for m in ms}
    assert picked == set(kernels), picked
    gate(*random_inputs(33, seed=1), K)  # the rank kernel (below batch_m rows)
    gate(*random_inputs(mod.SETTINGS.batch_m, seed=2), K)  # and the batch one
    before = [len(k._kernels) for k in kernels]
    assert all(n >= 1 for n in before), f"a kernel was not JIT-compiled: {before}"
    for m in ms:
        scores, bias = random_inputs(m, seed=m)
        check_exact(scores, bias, K)
    assert [len(k._kernels) for k in kernels] == before


def test_cuda_graph_replay():
    scores, bias = random_inputs(512, seed=10)
    w = torch.empty(512, K, device="cuda")
    ids = torch.empty(512, K, device="cuda", dtype=torch.int32)
    mod.moe_fused_gate(scores, bias, K, out_weights=w, out_ids=ids)  # compile outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        with torch.cuda.graph(graph, stream=s):
            mod.moe_fused_gate(scores, bias, K, out_weights=w, out_ids=ids)
    torch.cuda.synchronize()
    for seed in (11, 12):
        new_s, new_b = random_inputs(512, seed=seed)
        scores.copy_(new_s)
        bias.copy_(new_b)
        ids.fill_(-7)
        graph.replay()
        torch.cuda.synchronize()
        ew, eids = reference(scores, bias, K)
        assert torch.equal(ids, eids)
        assert_weights(w, ew)


def test_bad_arguments_raise_before_launch():
    scores, bias = random_inputs(4, seed=0)
    for args, kw in [((scores.half(), bias, K), {}), ((scores, bias.double(), K), {}),
                     ((scores, bias[:-1], K), {}), ((scores, bias, 0), {}),
                     ((scores, bias, 33), {}), ((scores[:, ::2], bias[::2], K), {}),
                     ((scores, bias, K), {"routed_scaling_factor": 0.0}),
                     ((scores, bias, K), {"num_fused_shared_experts": -1}),
                     ((scores, bias, K), {"renormalize": 1}),
                     ((scores, bias, K), {"out_ids": torch.empty(4, K, device="cuda")})]:
        with pytest.raises((TypeError, ValueError)):
            mod.moe_fused_gate(*args, **kw)
    torch.cuda.synchronize()
