"""Benchmark: the KDA decode kernels (docs/kernels/kda.md) on the GPU against the memory
ceiling and fla's Triton kernels, at Kimi K3's TP8 shape (HV = H = 12 heads of K = V = 128,
the lower-bound gate, -5), in one run:

- ``kda_packed_decode`` at B = 1, 32, 64, 512 against fla's ``fused_recurrent_kda`` in its
  serving form (``fused_recurrent_kda_fwd`` on the same [slots, HV, V, K] pool:
  ``ssm_state_indices``, the state updated in place, ``state_v_first``, the gate, beta's
  sigmoid and the q/k norms in the kernel);
- ``kda_fused_decode`` with the gated RMSNorm at B = 64, 512 against the same decode step
  done with fla's kernels: ``causal_conv1d_update`` of q, k and v (fla's
  ``ShortConvolution.step``, SiLU), ``fused_recurrent_kda_fwd``, ``rms_norm_gated``
  (sigmoid gate);
- a device copy (``Tensor.copy_``) of the packed decode's state bytes at each of its B,
  timed the same way: what moving those bytes costs at that size;
- ``kda_verify_chain`` (gamma = 3: S = 4 drafts, the gated norm, the ReplaySSM and raw-row
  records) at B = 64, 512 and ``kda_replayssm_fold`` (2 of 4 drafts accepted, 69 layers in
  one launch, with the conv rollback) at B = 64, against the copy bandwidth on their traffic
  (the issue's target, >= 85 %; fla has neither kernel).

GPU time per call: CUDA-graph replay of back-to-back calls timed with CUDA events, the
median over repetitions (bench/common.py), every call of a graph on its own slots of one
pool: each rotation moves at least 3 x 64 MB of state, more than twice the H200's L2. The
bytes: the state's read + write (B x HV x 64 KiB each way; the issue's figure of merit) and,
separately, everything the kernel moves. The ceilings, measured in the same run: the SM copy
bandwidth (2 GiB each way, at the start and the end) and an empty kiln kernel; "ceiling us"
is the empty kernel plus the state bytes at copy bandwidth. Every kiln result is checked
against fla's before it is timed (where fla is installed; without it the fla columns are
empty and the report says why).

    python bench/kda/run.py [--out DIR] [--sweep]

``--sweep`` also times kda_packed_decode's Settings variants (rows a program, the state's
cache hints) at B = 1, 32 and 512, kda_fused_decode's (its ring: rows a chunk, slots, programs
an SM) and kda_verify_chain's (warps of the norm form, drafts a prologue chunk) at B = 64
and 512, and kda_replayssm_fold's (state rows and warps a program) at B = 64. Writes
``bench_kda.{md,json}`` into ``--out``. fla: ``pip install fla-core==0.6.0 einops``
(fla-core needs triton and einops, no other package).
"""

import argparse
import dataclasses
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from bench.common import copy_bandwidth_gbs as _copy_bandwidth_gbs  # noqa: E402
from bench.common import graph_time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.kimi_k3 import kda_decode, kda_verify  # noqa: E402

HV = H = 12
K = V = 128
LB = -5.0
EPS = 1e-5
HEAD_BYTES = V * K * 4
#: each rotation of a case's input sets moves at least this much state (> 2x the 50-60 MB L2)
ROTATION_BYTES = 3 * (64 << 20)
PACKED_B = (1, 32, 64, 512)
FUSED_B = (64, 512)
VERIFY_B = (64, 512)
FOLD_B = (64,)
GAMMA = 3
LAYERS = 69
ACCEPT = 2
VERIFY_NAME = f"kda_verify_chain (gamma {GAMMA}, norm, records)"
FOLD_NAME = f"kda_replayssm_fold ({ACCEPT} of {GAMMA + 1}, {LAYERS} layers, conv)"


@kiln.jit(num_warps=1)
def _empty_kernel(x_ptr, n):
    offs = kl.program_id(0) + kl.arange(0, 1)
    kl.store(x_ptr + offs, 0, mask=offs < n)


def copy_bandwidth_gbs():
    """bench.common's device-to-device copy (2 GiB each way, the SM copy kernel), after ~1 s
    of copies so that the clocks have ramped up."""
    src = torch.empty(1 << 28, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    t0 = time.time()
    while time.time() - t0 < 1.0:
        dst.copy_(src)
        torch.cuda.synchronize()
    del src, dst
    gbs = _copy_bandwidth_gbs()
    torch.cuda.empty_cache()
    return gbs


def time_us(fn, sets):
    """Median GPU time a call (us): one graph of a call on every set (at least 20)."""
    return graph_time_ms(fn, sets, batch=max(20, len(sets)), reps=15) * 1e3


def n_sets(bsz):
    return max(1, -(-ROTATION_BYTES // (bsz * HV * HEAD_BYTES)))


def load_fla():
    """fla's entry points, or (None, reason)."""
    try:
        import fla
        from fla.modules.causal_conv1d import causal_conv1d_update
        from fla.modules.norm.fused_norm_gate import rms_norm_gated
        from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd
    except Exception as e:  # noqa: BLE001 - any import failure leaves the peer out
        return None, f"fla not importable ({type(e).__name__}: {e}); pip install fla-core==0.6.0"
    return {"version": getattr(fla, "__version__", "?"), "recurrent": fused_recurrent_kda_fwd,
            "conv": causal_conv1d_update, "norm": rms_norm_gated}, None


# ---------------------------------------------------------------------------
# Inputs: one pool, every set its own slots
# ---------------------------------------------------------------------------

def randn(shape, dtype=torch.bfloat16, scale=1.0):
    return (torch.randn(shape, device="cuda") * scale).to(dtype)


def weights():
    a_log = torch.log(1 + 15 * torch.rand(HV, device="cuda"))
    return a_log, randn((HV * K,), torch.float32, 0.5)


def packed_sets(bsz):
    """(pool, weights, [per set: qkv, a, b, indices, and fla's contiguous q, k, v, g, beta])."""
    ns = n_sets(bsz)
    pool = randn((bsz * ns, HV, V, K), torch.float32, 0.5)
    a_log, dt_bias = weights()
    slots = torch.randperm(bsz * ns, device="cuda").to(torch.int32)
    sets = []
    for i in range(ns):
        qkv = randn((bsz, 2 * H * K + HV * V))
        a, b = randn((bsz, HV * K)), randn((bsz, HV), scale=2.0)
        fla_in = (qkv[:, :H * K].reshape(bsz, 1, H, K).contiguous(),
                  qkv[:, H * K:2 * H * K].reshape(bsz, 1, H, K).contiguous(),
                  qkv[:, 2 * H * K:].reshape(bsz, 1, HV, V).contiguous(),
                  a.reshape(bsz, 1, HV, K).contiguous(), b.reshape(bsz, 1, HV).contiguous(),
                  torch.empty((bsz, 1, HV, V), device="cuda", dtype=torch.bfloat16))
        out = torch.empty((bsz, HV, V), device="cuda", dtype=torch.bfloat16)
        sets.append((qkv, a, b, slots[i * bsz:(i + 1) * bsz].contiguous(), out, fla_in))
    return pool, (a_log, dt_bias), sets


def kiln_packed(pool, w, settings=kda_decode.SETTINGS):
    a_log, dt_bias = w

    def call(s):
        qkv, a, b, idx, out, _ = s
        kda_decode.kda_packed_decode(qkv, a, b, a_log, dt_bias, pool, idx, H, lower_bound=LB,
                                     out=out, settings=settings)
        return out

    return call


def fla_packed(fla, pool, w):
    a_log, dt_bias = w

    def call(s):
        _, _, _, idx, _, (q, k, v, g, beta, out) = s
        fla["recurrent"](q, k, v, g, beta, A_log=a_log, dt_bias=dt_bias, initial_state=pool,
                         scale=K ** -0.5, inplace_final_state=True, state_v_first=True,
                         ssm_state_indices=idx, use_qk_l2norm_in_kernel=True,
                         use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                         lower_bound=LB, out=out)
        return out.view(out.shape[0], HV, V)

    return call


def fused_sets(bsz):
    """(pool, weights, [per set: kiln's projection slices, conv state, indices, out; fla's
    q, k, v rows, their conv caches [N, D, 4], a, b, g_out])."""
    ns = n_sets(bsz)
    dim = 2 * H * K + HV * V
    pool = randn((bsz * ns, HV, V, K), torch.float32, 0.5)
    conv_pool = randn((bsz * ns, 3, dim))
    a_log, dt_bias = weights()
    conv_w = randn((dim, 4), scale=0.5)
    w_norm = (0.5 + torch.rand(V, device="cuda")).to(torch.bfloat16)
    slots = torch.randperm(bsz * ns, device="cuda").to(torch.int32)
    sets = []
    for i in range(ns):
        width = dim + HV * K + HV * V + HV
        proj = randn((bsz, width + (-width) % 8))  # q | k | v | a | g_out | b, one GEMM
        qkv, a = proj[:, :dim], proj[:, dim:dim + HV * K]
        g_out = proj[:, dim + HV * K:dim + HV * K + HV * V]
        b = proj[:, dim + HV * K + HV * V:width]
        idx = slots[i * bsz:(i + 1) * bsz].contiguous()
        out = torch.empty((bsz, HV, V), device="cuda", dtype=torch.bfloat16)
        # fla: separate contiguous q, k, v projections and conv caches holding the window
        # with the token ([N, D, 4], its layout), a, b, g_out contiguous
        win = conv_pool[idx.long()]  # [N, 3, dim]
        parts = ((0, H * K), (H * K, 2 * H * K), (2 * H * K, dim))
        fla_x = [qkv[:, lo:hi].reshape(bsz, 1, hi - lo).contiguous() for lo, hi in parts]
        fla_cache = [torch.cat([torch.zeros_like(win[:, :1, lo:hi]), win[:, :, lo:hi]], 1)
                     .transpose(1, 2).contiguous() for lo, hi in parts]
        fla_w = [conv_w[lo:hi].contiguous() for lo, hi in parts]
        fla_in = (fla_x, fla_cache, fla_w, a.reshape(bsz, 1, HV, K).contiguous(),
                  b.reshape(bsz, 1, HV).contiguous(), g_out.contiguous(),
                  torch.empty((bsz, 1, HV, V), device="cuda", dtype=torch.bfloat16))
        sets.append((qkv, a, b, g_out, idx, out, fla_in))
    return pool, conv_pool, (a_log, dt_bias, conv_w, w_norm), sets


def kiln_fused(pool, conv_pool, w, settings=kda_decode.SETTINGS):
    a_log, dt_bias, conv_w, w_norm = w

    def call(s):
        qkv, a, b, g_out, idx, out, _ = s
        kda_decode.kda_fused_decode(qkv, a, b, a_log, dt_bias, conv_pool, conv_w, pool, idx, H,
                                    g_out=g_out, w_norm=w_norm, eps=EPS, lower_bound=LB,
                                    out=out, settings=settings)
        return out

    return call


def fla_fused(fla, pool, w):
    a_log, dt_bias, _, w_norm = w

    def call(s):
        _, _, _, _, idx, _, (xs, caches, ws, a, b, g_out, o) = s
        n = a.shape[0]
        q, k, v = (fla["conv"](x=x, cache=c, weight=wt, activation="silu")[0]
                   for x, c, wt in zip(xs, caches, ws))
        fla["recurrent"](q.view(n, 1, H, K), k.view(n, 1, H, K), v.view(n, 1, HV, V), a, b,
                         A_log=a_log, dt_bias=dt_bias, initial_state=pool, scale=K ** -0.5,
                         inplace_final_state=True, state_v_first=True, ssm_state_indices=idx,
                         use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                         use_beta_sigmoid_in_kernel=True, lower_bound=LB, out=o)
        y = fla["norm"](o.view(-1, V), g_out.view(-1, V), w_norm, None, activation="sigmoid",
                        eps=EPS)
        return y.view(n, HV, V)

    return call


def verify_sets(bsz):
    """(pool, conv pool, weights, records, [per set: qkv, a, b, g_out, indices, out]):
    S = GAMMA + 1 draft rows a request, records of length S at every slot."""
    s = GAMMA + 1
    ns = n_sets(bsz)
    slots = bsz * ns
    dim = 2 * H * K + HV * V
    pool = randn((slots, HV, V, K), torch.float32, 0.5)
    conv_pool = randn((slots, 3, dim))
    a_log, dt_bias = weights()
    w = (a_log, dt_bias, randn((dim, 4), scale=0.5),
         (0.5 + torch.rand(V, device="cuda")).to(torch.bfloat16))
    recs = (randn((slots, H, s, K)), randn((slots, HV, s, V)),
            randn((slots, HV, s, K), torch.float32), randn((slots, HV, s), torch.float32),
            randn((slots, s, dim)))
    perm = torch.randperm(slots, device="cuda").to(torch.int32)
    sets = []
    for i in range(ns):
        width = dim + HV * K + HV * V + HV
        proj = randn((bsz * s, width + (-width) % 8))  # q | k | v | a | g_out | b, one GEMM
        qkv, a = proj[:, :dim], proj[:, dim:dim + HV * K]
        g_out = proj[:, dim + HV * K:dim + HV * K + HV * V]
        b = proj[:, dim + HV * K + HV * V:width]
        out = torch.empty((bsz * s, HV, V), device="cuda", dtype=torch.bfloat16)
        sets.append((qkv, a, b, g_out, perm[i * bsz:(i + 1) * bsz].contiguous(), out))
    return pool, conv_pool, w, recs, sets


def kiln_verify(pool, conv_pool, w, recs, settings=kda_verify.SETTINGS):
    a_log, dt_bias, conv_w, w_norm = w
    rk, rv, rg, rb, rc = recs

    def call(st):
        qkv, a, b, g_out, idx, out = st
        kda_verify.kda_verify_chain(qkv, a, b, a_log, dt_bias, conv_pool, conv_w, pool, idx, H,
                                    GAMMA + 1, g_out=g_out, w_norm=w_norm, eps=EPS,
                                    lower_bound=LB, rawk=rk, rawv=rv, gk=rg, beta=rb,
                                    conv_records=rc, out=out, settings=settings)
        return out

    return call


def verify_bytes(bsz):
    """(state bytes read, all bytes moved) of one verify chain call."""
    s, dim = GAMMA + 1, 2 * H * K + HV * V
    state = bsz * HV * HEAD_BYTES
    inputs = bsz * s * (dim * 2 + HV * K * 2 + HV * V * 2 + HV * 2) + bsz * 4
    weights_b = dim * 8 + HV * (K + 1) * 4 + V * 2
    conv = bsz * 3 * dim * 2
    records_b = bsz * s * (H * K * 2 + HV * V * 2 + HV * K * 4 + HV * 4 + dim * 2)
    out = bsz * s * HV * V * 2
    return state, state + inputs + weights_b + conv + records_b + out


def fold_sets(bsz):
    """(h0, records, conv state, conv records, [(indices, accept_len)]): LAYERS layers of
    bsz slots (one set: a call moves several GB, far past the L2)."""
    s, dim = GAMMA + 1, 2 * H * K + HV * V
    h0 = randn((LAYERS, bsz, HV, V, K), torch.float32, 0.5)
    rk = randn((LAYERS, bsz, H, s, K))
    rv = randn((LAYERS, bsz, HV, s, V))
    rg = -5 * torch.rand((LAYERS, bsz, HV, s, K), device="cuda")
    rb = torch.rand((LAYERS, bsz, HV, s), device="cuda")
    conv = randn((LAYERS, bsz, 3, dim))
    rc = randn((LAYERS, bsz, s, dim))
    idx = torch.randperm(bsz, device="cuda").to(torch.int32)
    acc = torch.full((bsz,), ACCEPT, device="cuda", dtype=torch.int32)
    return h0, (rk, rv, rg, rb), conv, rc, [(idx, acc)]


def kiln_fold(h0, recs, conv, rc, settings=kda_verify.SETTINGS):
    def call(st):
        idx, acc = st
        kda_verify.kda_replayssm_fold(h0, *recs, idx, acc, conv_state=conv, conv_records=rc,
                                      settings=settings)
        return h0

    return call


def fold_bytes(bsz):
    """(state bytes read + written, all bytes moved) of one fold call (ACCEPT steps)."""
    dim = 2 * H * K + HV * V
    state = 2 * bsz * LAYERS * HV * HEAD_BYTES
    records_b = bsz * LAYERS * ACCEPT * (H * K * 2 + HV * V * 2 + HV * K * 4 + HV * 4)
    # the conv rollback: the kept old rows and the accepted raw rows read, 3 rows written
    conv = bsz * LAYERS * (3 + 3) * dim * 2
    return state, state + records_b + conv + bsz * 8


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def check(kiln_call, fla_call, sets, pools, state_tol):
    """kiln and fla on the first set from the same states: outputs within 2 % of their
    largest (fla rounds o to bf16 before its norm), states within ``state_tol`` of each
    head's largest element (the fused forms' post-conv bf16 roundings may differ: fla's conv
    sums in another order)."""
    before = [p.clone() for p in pools]
    got = kiln_call(sets[0]).float().clone()
    after_kiln = pools[0].clone()
    for p, b in zip(pools, before):
        p.copy_(b)
    want = fla_call(sets[0]).float()
    torch.cuda.synchronize()
    err = (got - want).abs().max().item()
    scale = want.abs().max().item()
    assert err <= 2e-2 * scale, f"kiln vs fla outputs: max |diff| {err:.3g} of {scale:.3g}"
    d = (after_kiln - pools[0]).abs().amax((-1, -2))
    assert (d <= state_tol * pools[0].abs().amax((-1, -2)) + 1e-6).all(), "kiln vs fla states"
    for p, b in zip(pools, before):
        p.copy_(b)


def run_case(name, bsz, kiln_call, fla_call, sets, pools, state_bytes, all_bytes, copy_gbs,
             empty_us, fla_note, state_tol):
    row = {"kernel": name, "B": bsz, "HV": HV, "state bytes": state_bytes,
           "all bytes": all_bytes, "sets": len(sets)}
    if fla_call is not None:
        check(kiln_call, fla_call, sets, pools, state_tol)
    row["kiln us"] = time_us(kiln_call, sets)
    row["fla us"] = time_us(fla_call, sets) if fla_call is not None else None
    row["fla"] = fla_note
    row["state of copy BW"] = state_bytes / row["kiln us"] / 1e3 / copy_gbs
    row["all of copy BW"] = all_bytes / row["kiln us"] / 1e3 / copy_gbs
    row["ceiling us"] = empty_us + state_bytes / copy_gbs / 1e3
    if row["fla us"]:
        row["fla state of copy BW"] = state_bytes / row["fla us"] / 1e3 / copy_gbs
        row["kiln speedup"] = row["fla us"] / row["kiln us"]
    return row


def packed_case(bsz, fla, copy_gbs, empty_us, fla_note, settings=kda_decode.SETTINGS):
    pool, w, sets = packed_sets(bsz)
    state = 2 * bsz * HV * HEAD_BYTES
    inputs = bsz * ((2 * H * K + HV * V) * 2 + HV * K * 2 + HV * 2 + 4) + HV * (K + 1) * 4
    res = run_case("kda_packed_decode", bsz, kiln_packed(pool, w, settings),
                   fla_packed(fla, pool, w) if fla else None, sets, [pool], state,
                   state + inputs + bsz * HV * V * 2, copy_gbs, empty_us, fla_note, 1e-4)
    del pool, sets
    torch.cuda.empty_cache()
    return res


def copy_case(bsz):
    """A device copy of the packed decode's state bytes at B (B x HV heads read and
    written), timed as the kernels are (graph replay over rotating buffers of more than
    192 MB): what moving those bytes costs at that size, ramp-up and tail included, beside
    the 2 GiB copy bandwidth the ceilings use."""
    n = bsz * HV * V * K
    src = torch.empty((n_sets(bsz), n), device="cuda")
    bufs = (src, torch.empty_like(src))
    us = time_us(lambda i: bufs[1][i].copy_(bufs[0][i]), list(range(src.shape[0])))
    src = bufs = None
    torch.cuda.empty_cache()
    return {"B": bsz, "state bytes": 2 * n * 4, "copy us": us}


def fused_case(bsz, fla, copy_gbs, empty_us, fla_note, settings=kda_decode.SETTINGS):
    pool, conv_pool, w, sets = fused_sets(bsz)
    dim = 2 * H * K + HV * V
    state = 2 * bsz * HV * HEAD_BYTES
    inputs = bsz * (dim * 2 + HV * K * 2 + HV * V * 2 + HV * 2 + 4) + dim * 8 + HV * (K + 1) * 4
    conv = 2 * bsz * 3 * dim * 2
    res = run_case("kda_fused_decode (norm)", bsz, kiln_fused(pool, conv_pool, w, settings),
                   fla_fused(fla, pool, w) if fla else None, sets, [pool, conv_pool], state,
                   state + conv + inputs + bsz * HV * V * 2, copy_gbs, empty_us, fla_note, 5e-3)
    del pool, conv_pool, sets
    torch.cuda.empty_cache()
    return res


def verify_case(bsz, copy_gbs, empty_us, settings=kda_verify.SETTINGS):
    pool, conv_pool, w, recs, sets = verify_sets(bsz)
    state, every = verify_bytes(bsz)
    res = run_case(VERIFY_NAME, bsz, kiln_verify(pool, conv_pool, w, recs, settings), None, sets,
                   [pool, conv_pool], state, every, copy_gbs, empty_us, "no fla kernel", 0.0)
    del pool, conv_pool, recs, sets
    torch.cuda.empty_cache()
    return res


def fold_case(bsz, copy_gbs, empty_us, settings=kda_verify.SETTINGS):
    h0, recs, conv, rc, sets = fold_sets(bsz)
    state, every = fold_bytes(bsz)
    res = run_case(FOLD_NAME, bsz, kiln_fold(h0, recs, conv, rc, settings), None, sets, [h0],
                   state, every, copy_gbs, empty_us, "no fla kernel", 0.0)
    del h0, recs, conv, rc, sets
    torch.cuda.empty_cache()
    return res


def bars(row):
    """The issue's targets for this row (text, met?)."""
    name, b = row["kernel"], row["B"]
    if name in (VERIFY_NAME, FOLD_NAME):
        return ">= 85 % of copy BW on all its bytes", row["all of copy BW"] >= 0.85
    if name == "kda_packed_decode" and b == 512:
        ok = row["state of copy BW"] >= 0.9 and (row.get("kiln speedup") or 0) >= 1.35
        return ">= 90 % of copy BW on the state, >= 1.35x fla", ok
    if name == "kda_packed_decode" and b in (1, 32):
        return "<= empty kernel + state at copy BW + 1.5 us", row["kiln us"] <= row[
            "ceiling us"] + 1.5
    if name.startswith("kda_fused_decode") and b in (64, 512):
        want = 2.0 if b == 64 else 1.35
        return f">= {want}x fla's conv + recurrent + norm", (row.get("kiln speedup") or 0) >= want
    return "", None


def _fmt(v, spec):
    return "" if v is None else format(v, spec)


def table(rows):
    lines = ["| kernel | B | state bytes | kiln us | state of copy BW | all bytes of copy BW | "
             "ceiling us | fla us | fla state of copy BW | kiln speedup | target | met |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        target, ok = bars(r)
        lines.append(
            f"| {r['kernel']} | {r['B']} | {r['state bytes']} | {r['kiln us']:.2f} | "
            f"{r['state of copy BW']:.1%} | {r['all of copy BW']:.1%} | {r['ceiling us']:.2f} | "
            f"{_fmt(r['fla us'], '.2f')} | {_fmt(r.get('fla state of copy BW'), '.1%')} | "
            f"{_fmt(r.get('kiln speedup'), '.2f')}{'x' if r.get('kiln speedup') else ''} | "
            f"{target} | {'' if ok is None else ('yes' if ok else 'NO')} |")
    return lines


SWEEP = [dict(packed_rows=8, packed_warps=1), dict(packed_rows=8, packed_warps=2),
         dict(packed_rows=16, packed_warps=2), dict(packed_rows=32, packed_warps=4),
         dict(packed_rows=8, packed_warps=1, state_evict="", state_store=""),
         dict(packed_rows=4, packed_warps=1)]
#: the fused decode's ring: rows a chunk, warps, slots, and the programs an SM it is
#: compiled for (shipped: 16, 2, 4, 6)
FUSED_SWEEP = [dict(fused_rows=r, fused_warps=w, fused_stages=s, fused_min_programs=p)
               for r, w, s, p in ((16, 2, 4, 6), (16, 2, 2, 6), (16, 2, 3, 6), (16, 2, 2, 8),
                                  (32, 4, 2, 3), (8, 1, 4, 12))]
#: the verify chain's ring: rows a chunk, warps, slots, register cap, drafts a prologue tile
#: (shipped: 16, 2, 2, 160, 4)
VERIFY_SWEEP = [dict(verify_rows=r, verify_warps=w, verify_stages=s, verify_max_registers=m,
                     verify_chunk=c)
                for r, w, s, m, c in ((16, 2, 2, 160, 4), (16, 2, 2, 144, 4), (16, 2, 2, 128, 4),
                                      (16, 2, 2, 160, 2), (16, 2, 3, 160, 4),
                                      (32, 4, 2, 160, 4), (8, 1, 2, 160, 4))]
#: the fold's ring: rows a chunk, warps, slots and register cap (shipped: 16, 2, 2, 96)
FOLD_SWEEP = [dict(fold_rows=r, fold_warps=w, fold_stages=s, fold_max_registers=m)
              for r, w, s, m in ((16, 2, 2, 96), (16, 2, 3, 128), (16, 2, 4, None),
                                 (8, 1, 3, 128), (8, 1, 2, 96), (32, 4, 2, 96))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--sweep", action="store_true",
                        help="also time the Settings variants of the packed decode, the "
                             "verify chain and the fold")
    args = parser.parse_args()
    torch.manual_seed(0)
    t0 = time.time()
    props = torch.cuda.get_device_properties(0)
    fla, why = load_fla()
    fla_note = f"fla-core {fla['version']}" if fla else why
    copy_gbs = copy_bandwidth_gbs()
    x = torch.zeros(16, device="cuda", dtype=torch.int32)
    empty_us = time_us(lambda _: _empty_kernel[(1,)](x, 1), [()])
    report = {"device": props.name, "copy GB/s (read+write)": copy_gbs,
              "empty kiln kernel (us)": empty_us, "fla": fla_note,
              "command": " ".join(["python", "bench/kda/run.py"] + sys.argv[1:]), "cases": []}
    with torch.inference_mode():
        for bsz in PACKED_B:
            report["cases"].append(packed_case(bsz, fla, copy_gbs, empty_us, fla_note))
            print(json.dumps(report["cases"][-1]), flush=True)
        report["copies"] = [copy_case(bsz) for bsz in PACKED_B]
        for bsz in FUSED_B:
            report["cases"].append(fused_case(bsz, fla, copy_gbs, empty_us, fla_note))
            print(json.dumps(report["cases"][-1]), flush=True)
        for bsz in VERIFY_B:
            report["cases"].append(verify_case(bsz, copy_gbs, empty_us))
            print(json.dumps(report["cases"][-1]), flush=True)
        for bsz in FOLD_B:
            report["cases"].append(fold_case(bsz, copy_gbs, empty_us))
            print(json.dumps(report["cases"][-1]), flush=True)
        if args.sweep:
            report["sweep"] = []
            for cfg in SWEEP:
                st = dataclasses.replace(kda_decode.SETTINGS, **cfg)
                for bsz in (1, 32, 512):
                    row = packed_case(bsz, None, copy_gbs, empty_us, "", settings=st)
                    row["config"] = cfg
                    report["sweep"].append(row)
                    print(json.dumps(row), flush=True)
            for cfg in FUSED_SWEEP:
                st = dataclasses.replace(kda_decode.SETTINGS, **cfg)
                for bsz in FUSED_B:
                    row = fused_case(bsz, None, copy_gbs, empty_us, "", settings=st)
                    row["config"] = cfg
                    report["sweep"].append(row)
                    print(json.dumps(row), flush=True)
            for cfg in VERIFY_SWEEP:
                st = dataclasses.replace(kda_verify.SETTINGS, **cfg)
                for bsz in VERIFY_B:
                    row = verify_case(bsz, copy_gbs, empty_us, settings=st)
                    row["config"] = cfg
                    report["sweep"].append(row)
                    print(json.dumps(row), flush=True)
            for cfg in FOLD_SWEEP:
                row = fold_case(FOLD_B[0], copy_gbs, empty_us,
                                settings=dataclasses.replace(kda_verify.SETTINGS, **cfg))
                row["config"] = cfg
                report["sweep"].append(row)
                print(json.dumps(row), flush=True)
    report["copy GB/s (end)"] = copy_bandwidth_gbs()
    report["seconds"] = time.time() - t0
    lines = [f"# KDA decode on {props.name}",
             f"measured copy bandwidth {copy_gbs:.0f} GB/s (read + write; "
             f"{report['copy GB/s (end)']:.0f} at the end); empty kiln kernel {empty_us:.2f} us; "
             f"peer: {fla_note}; HV = {HV}, K = V = {K}, lower-bound gate {LB}; GPU time per "
             f"call from CUDA-graph replay of back-to-back calls over slots rotating through "
             f"more than {ROTATION_BYTES >> 20} MB of state", ""] + table(report["cases"])
    packed = {r["B"]: r for r in report["cases"] if r["kernel"] == "kda_packed_decode"}
    lines += ["", "The packed decode against a device copy of its state bytes at the same size "
              "(`copy_case`):", "",
              "| B | state bytes | device copy us | copy of copy BW | kiln us | kiln / copy |",
              "|---|---|---|---|---|---|"]
    for c in report["copies"]:
        k = packed[c["B"]]["kiln us"]
        lines.append(f"| {c['B']} | {c['state bytes']} | {c['copy us']:.2f} | "
                     f"{c['state bytes'] / c['copy us'] / 1e3 / copy_gbs:.1%} | {k:.2f} | "
                     f"{k / c['copy us']:.2f} |")
    if args.sweep:
        lines += ["", "kda_packed_decode, kda_fused_decode, kda_verify_chain and "
                  "kda_replayssm_fold Settings sweep:",
                  "",
                  "| kernel | config | B | kiln us | state of copy BW | all bytes of copy BW |",
                  "|---|---|---|---|---|---|"]
        for r in report["sweep"]:
            cfg = ", ".join(f"{k}={v!r}" for k, v in r["config"].items())
            lines.append(f"| {r['kernel']} | {cfg} | {r['B']} | {r['kiln us']:.2f} | "
                         f"{r['state of copy BW']:.1%} | {r['all of copy BW']:.1%} |")
    lines += ["", f"{report['seconds']:.0f} s in all"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_results(args.out, "bench_kda", text, report)


if __name__ == "__main__":
    main()
