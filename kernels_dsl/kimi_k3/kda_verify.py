"""KDA speculative decoding: the MTP verify chain (S = gamma + 1 draft tokens a request in
one launch, the committed states untouched) and the ReplaySSM fold that commits the
accepted drafts into the checkpoint in place.

``kda_verify_chain``: per request n with slot s, its S draft tokens are the rows
n S .. n S + S - 1 of the pre-conv projection (as kda_fused_decode's). Token j's conv
window is positions j - 3 .. j over the committed conv state (rows 0..2 = positions -3..-1)
and the drafts; then the fused decode's step (kda_decode's ``kda_conv_rows`` on
``kda_conv_silu``, ``kda_token_rows``, ``kda_recurrent_step``, ``kda_gated_norm``) from
the committed SSM state, token by token (the conv and prologue of a few drafts at once),
and optionally the gated RMSNorm. Every step's output is written; the SSM and conv states
are only read. Optionally, at slot s:

- ``intermediate_states`` [slots, S, HV, V, K] fp32: the state after every step j;
- the ReplaySSM records, position j of rings of length L >= S: ``rawk`` [slots, H, L, K]
  bf16 (the post-conv k before its L2 norm), ``rawv`` [slots, HV, L, V] bf16 (the post-conv
  v), ``gk`` [slots, HV, L, K] fp32 (the log decay g, gate applied), ``beta`` [slots, HV, L]
  fp32 (sigmoid(b));
- ``conv_records`` [slots, L, 2 H K + HV V] bf16: the raw (pre-conv) draft rows, for the
  conv state's rollback.

``kda_replayssm_fold``: per request with slot s and accept_len n (the bonus token included;
n <= 0 or a padded slot: nothing), per layer and value head, the state h0[layer, s, hv] is
replayed through the recorded steps 0 .. min(n, L) - 1 in place:

    k = l2norm(rawk[j])        (kda_decode's kda_l2norm, the decode's division form)
    h = kda_state_update(h, k, exp(gk[j]), beta[j], rawv[j])

-- the decode's own step on the decode's own values (the records hold the exact bf16
post-conv k and v and the exact fp32 g and beta the verify computed), so the folded state
is bit for bit the state the fused decode leaves after the same n tokens. With a track slot
t_s = track_indices[b] (valid) and step t = steps_to_track[b] < n, the state after step t
is also stored into h0[layer, t_s, hv]. With ``conv_state`` and ``conv_records``, the conv
state rolls to what the fused decode leaves after n tokens: its rows r = 0..2 become the
raw inputs at positions n - 3 + r of (the old conv state's rows | the recorded drafts),
``old[n + r]`` where n + r < 3, else ``conv_records[n - 3 + r]``.

Bit equality needs the shared helpers (one op order) AND the same row-sum order: kiln's
blocked layout puts a row of K = 128 in 16 runs of 8 elements (the runs' length from the
narrowest vectorized access, bf16 here: every kernel of the family loads bf16 rows), so a
row's sums are the same 8 in-thread adds and 4 butterfly rounds whatever rows a program
holds (kda_decode's docstring). The fold loads the bf16 rawk and rawv rows, so it runs the
same layout.

Specification: docs/kernels/kda.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from .kda_decode import (
    CONV_WIDTH,
    HEAD_DIM,
    _check_heads,
    _check_out,
    _conv_state_update,
    _store_conv_rows,
    check_placement,
    check_pre_conv,
    kda_conv_rows,
    kda_gated_norm,
    kda_l2norm,
    kda_recurrent_step,
    kda_state_update,
    kda_token_rows,
)

# ---------------------------------------------------------------------------
# kda_verify_chain
# ---------------------------------------------------------------------------

#: The verify chain's workspace rows a draft (fp32 [128] each): q, k, the decay exp(g), v,
#: o, beta (its first element).
WS_ROWS = 6


@kiln.jit(num_warps=2, do_not_specialize=[
    "HV", "H", "num_slots", "S", "L", "qkv_s0_u", "a_s0_u", "b_s0", "g_s0_u", "conv_slot_u",
    "conv_row_u", "slot_u", "inter_slot_u", "rk_slot_u", "rv_slot_u", "rg_slot_u", "rb_slot",
    "rc_slot_u", "inter_on", "rec_on", "conv_rec_on"])
def kda_verify_chain_kernel(qkv_ptr, a_ptr, b_ptr, gout_ptr, alog_ptr, dtb_ptr, convw_ptr,
                            conv_ptr, state_ptr, idx_ptr, wnorm_ptr, out_ptr, inter_ptr, rk_ptr,
                            rv_ptr, rg_ptr, rb_ptr, rc_ptr, ws_ptr, HV, H, num_slots, S, L,
                            qkv_s0_u, a_s0_u, b_s0, g_s0_u, conv_slot_u, conv_row_u, slot_u,
                            inter_slot_u, rk_slot_u, rv_slot_u, rg_slot_u, rb_slot, rc_slot_u,
                            inter_on, rec_on, conv_rec_on, scale, lower_bound, eps,
                            K: kl.constexpr, V: kl.constexpr, ROWS: kl.constexpr,
                            CHUNK: kl.constexpr, STAGES: kl.constexpr,
                            LOWER_BOUND: kl.constexpr, NORM: kl.constexpr,
                            PROGRAMS: kl.constexpr):
    """Program n * HV + hv (request n, value head hv), in three phases.

    1. The drafts' conv and prologue, CHUNK drafts at a time as [CHUNK, K] / [CHUNK, V]
       tiles (kda_decode's helpers on several tokens: the same bits as one token at a time),
       their records and raw rows stored, and their q, k, g and v rows put in the program's
       workspace ``ws_ptr`` [N, HV, S, WS_ROWS, 128] fp32 (rows q, k, the decay exp(g), v,
       o, beta).
    2. After a barrier (the workspace's rows visible to every thread), the head's committed
       state streams through shared memory as V / ROWS chunks of ROWS rows (``kl.bulk_load``
       into a ring of STAGES slots), never stored back; each chunk steps through the S
       drafts (``kda_recurrent_step``; q, k, the decay, beta and the chunk's v rows read back
       from the workspace, L1 hits after the first chunk), storing every
       step's state (``inter_on``) and the chunk's outputs: into the workspace's o rows with
       NORM, else straight out as bf16.
    3. NORM: after a barrier, the outputs CHUNK drafts at a time as [CHUNK, V] tiles,
       gated-normed (the rows of ``kda_gated_norm``'s [T, V] form sum as its [V] form does)
       and stored.

    The optional outputs are runtime flags (their stores predicated): ``inter_on`` the
    states after each step, ``rec_on`` the ReplaySSM records (rawk by the first value head
    of a q/k head's group), ``conv_rec_on`` the raw draft rows (the q/k channels by the
    group's first value head). A padded request runs the same phases on slot 0's state and
    writes zeros to its output rows only. Strides in 16-byte units as in kda_decode
    (``rb_slot`` in elements: beta is read one value at a time)."""
    if PROGRAMS > 0:
        kl.min_programs_per_sm(PROGRAMS)
    WS: kl.constexpr = WS_ROWS * K  # a draft's workspace
    pid = kl.program_id(0)
    hv = pid % HV
    n = pid // HV
    grp = HV // H
    h = hv // grp
    cols = kl.arange(0, K)
    vrows = kl.arange(0, V)
    rr = kl.arange(0, ROWS)
    jj = kl.arange(0, CHUNK)
    kl.pdl_wait()  # every input may come from the previous kernels in the stream
    slot = kl.load(idx_ptr + n)
    valid = (slot >= 0) & (slot < num_slots)
    slot64 = kl.where(valid, slot, 0).to(kl.int64)
    head = state_ptr + (slot64 * slot_u.to(kl.int64) * 4 + hv * (V * K))
    kl.pdl_launch_dependents()
    conv = conv_ptr + slot64 * conv_slot_u.to(kl.int64) * 8
    conv_row = conv_row_u * 8
    qkv_s0 = qkv_s0_u * 8
    dim = 2 * H * K + HV * V
    qc = h * K + cols
    kc = (H + h) * K + cols
    vc = 2 * H * K + hv * V + vrows
    a_log = kl.load(alog_ptr + hv)
    dt_bias = kl.load(dtb_ptr + hv * K + cols)
    owner = hv % grp == 0  # writes the q/k head's records
    rec = valid & (rec_on != 0)
    crec = valid & (conv_rec_on != 0)
    inter = inter_ptr + slot64 * inter_slot_u.to(kl.int64) * 4 + hv * (V * K)
    rk = rk_ptr + slot64 * rk_slot_u.to(kl.int64) * 8 + h * (L * K)
    rv = rv_ptr + slot64 * rv_slot_u.to(kl.int64) * 8 + hv * (L * V)
    rg = rg_ptr + slot64 * rg_slot_u.to(kl.int64) * 4 + hv * (L * K)
    rb = rb_ptr + slot64 * rb_slot.to(kl.int64) + hv * L
    rc = rc_ptr + slot64 * rc_slot_u.to(kl.int64) * 8
    ws = ws_ptr + pid.to(kl.int64) * S * WS
    bos = n * S
    for c0 in range(0, S, CHUNK):
        j = c0 + jj  # the drafts of this chunk, [CHUNK]
        ok = j < S
        t = bos + j
        k_raw, q, k, g, beta = kda_token_rows(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, a_ptr,
                                              a_s0_u * 8, b_ptr, b_s0, qc, kc, t, bos, ok,
                                              valid, hv, dt_bias, a_log, scale, lower_bound, K,
                                              LOWER_BOUND)
        v = kda_conv_rows(qkv_ptr, qkv_s0, conv, conv_row, convw_ptr, vc, t, bos, ok, valid)
        # the chunk's records and raw rows
        kl.store(rk + (j * K)[:, None] + cols[None, :], k_raw, mask=(ok & rec & owner)[:, None])
        kl.store(rv + (j * V)[:, None] + vrows[None, :], v, mask=(ok & rec)[:, None])
        kl.store(rg + (j * K)[:, None] + cols[None, :], g, mask=(ok & rec)[:, None])
        kl.store(rb + j, beta, mask=ok & rec)
        x = qkv_ptr + (t.to(kl.int64) * qkv_s0)[:, None]
        crow = rc + (j * dim)[:, None]
        qk_rec = (ok & crec & owner)[:, None]
        v_rec = (ok & crec)[:, None]
        kl.store(crow + qc[None, :], kl.load(x + qc[None, :], mask=qk_rec, other=0.0),
                 mask=qk_rec)
        kl.store(crow + kc[None, :], kl.load(x + kc[None, :], mask=qk_rec, other=0.0),
                 mask=qk_rec)
        kl.store(crow + vc[None, :], kl.load(x + vc[None, :], mask=v_rec, other=0.0),
                 mask=v_rec)
        # the steps' inputs, for every chunk of state rows
        wrow = ws + (j * WS)[:, None]
        kl.store(wrow + cols[None, :], q, mask=ok[:, None])
        kl.store(wrow + K + cols[None, :], k, mask=ok[:, None])
        kl.store(wrow + 2 * K + cols[None, :], kl.exp(g), mask=ok[:, None])
        kl.store(wrow + 3 * K + vrows[None, :], v.to(kl.float32), mask=ok[:, None])
        kl.store(ws + j * WS + 5 * K, beta, mask=ok)
    kl.barrier()
    for jc in kl.range(0, V // ROWS, num_stages=STAGES):
        hs = kl.reshape(kl.bulk_load(head + jc * (ROWS * K), ROWS * K), ROWS, K)
        rows = jc * ROWS + rr
        at = (rows * K)[:, None] + cols[None, :]
        for i in range(0, S):
            wi = ws + i * WS
            hs, o = kda_recurrent_step(hs, kl.load(wi + cols), kl.load(wi + K + cols),
                                       kl.load(wi + 2 * K + cols), kl.load(wi + 5 * K),
                                       kl.load(wi + 3 * K + rows))
            kl.store(inter + i * (HV * V * K) + at, hs, mask=valid & (inter_on != 0))
            if NORM:
                kl.store(wi + 4 * K + rows, o)
            else:
                kl.store(out_ptr + ((bos + i).to(kl.int64) * HV + hv) * V + rows,
                         kl.where(valid, o, 0.0))
    if NORM:
        kl.barrier()
        w_norm = kl.load(wnorm_ptr + vrows).to(kl.float32)
        for c0 in range(0, S, CHUNK):
            j = c0 + jj
            ok = j < S
            tok = (bos + j).to(kl.int64)
            o = kl.load(ws + (j * WS + 4 * K)[:, None] + vrows[None, :], mask=ok[:, None],
                        other=0.0)
            go = kl.load(gout_ptr + (tok * (g_s0_u * 8))[:, None] + (hv * V + vrows)[None, :],
                         mask=ok[:, None], other=0.0).to(kl.float32)
            o = kda_gated_norm(o, w_norm[None, :], kl.sigmoid(go), eps, V)
            kl.store(out_ptr + ((tok * HV + hv) * V)[:, None] + vrows[None, :],
                     kl.where(valid, o, 0.0), mask=ok[:, None])


# ---------------------------------------------------------------------------
# kda_replayssm_fold
# ---------------------------------------------------------------------------

@kiln.jit
def _fold_steps(hs, rk, rg, rb, rv, t0, t1, K: kl.constexpr, V: kl.constexpr):
    """The recorded steps t0 .. t1 - 1 on the rows hs [R, K] of a head's state (``rv``: the
    rows' values in the records of step 0): the decode's own step on the decode's own
    values (module docstring)."""
    cols = kl.arange(0, K)
    for t in range(t0, t1):
        k = kda_l2norm(kl.load(rk + t * K + cols).to(kl.float32))
        g = kl.load(rg + t * K + cols)
        beta = kl.load(rb + t)
        v = kl.load(rv + t * V).to(kl.float32)
        hs = kda_state_update(hs, k, kl.exp(g), beta, v)
    return hs


@kiln.jit(num_warps=4, do_not_specialize=[
    "HV", "H", "num_slots", "L", "h0_layer_u", "h0_slot_u", "rk_layer_u", "rk_slot_u",
    "rv_layer_u", "rv_slot_u", "rg_layer_u", "rg_slot_u", "rb_layer", "rb_slot",
    "conv_layer_u", "conv_slot_u", "conv_row_u", "rc_layer_u", "rc_slot_u", "rc_row_u",
    "track_on", "conv_on"])
def kda_replayssm_fold_kernel(h0_ptr, rk_ptr, rv_ptr, rg_ptr, rb_ptr, idx_ptr, acc_ptr,
                              trk_ptr, trk_step_ptr, conv_ptr, rc_ptr, HV, H, num_slots, L,
                              h0_layer_u, h0_slot_u, rk_layer_u, rk_slot_u, rv_layer_u,
                              rv_slot_u, rg_layer_u, rg_slot_u, rb_layer, rb_slot, conv_layer_u,
                              conv_slot_u, conv_row_u, rc_layer_u, rc_slot_u, rc_row_u,
                              track_on, conv_on, K: kl.constexpr, V: kl.constexpr,
                              ROWS: kl.constexpr, STAGES: kl.constexpr,
                              STATE_STORE: kl.constexpr, PROGRAMS: kl.constexpr):
    """Program (request, layer * HV + hv): the head h0[layer, slot, hv] streams through
    shared memory as V / ROWS chunks of ROWS rows (``kl.bulk_load`` into a ring of STAGES
    slots: the next chunks' copies in flight while one is stepped in registers), each chunk
    carried through the accepted steps and stored back (the track snapshot a predicated
    store between the steps up to it and those after). A request with nothing to fold
    issues no copy. Layer and slot
    offsets are 64-bit; pitches in 16-byte units (``rb_layer``, ``rb_slot`` in elements).
    ``conv_on``: the program also rolls its head's v channels of conv_state[layer, slot]
    (and the group's first value head the q/k head's channels), after the ring: loaded
    before it, they would be held across it, in registers that cost programs an SM."""
    if PROGRAMS > 0:
        kl.min_programs_per_sm(PROGRAMS)
    req = kl.program_id(0)
    lh = kl.program_id(1)
    layer = (lh // HV).to(kl.int64)
    hv = lh % HV
    grp = HV // H
    h = hv // grp
    cols = kl.arange(0, K)
    rr = kl.arange(0, ROWS)
    kl.pdl_wait()  # the records and the accept lengths come from the previous kernels
    slot = kl.load(idx_ptr + req)
    n = kl.load(acc_ptr + req)
    valid = (slot >= 0) & (slot < num_slots) & (n > 0)
    steps = kl.where(valid, kl.minimum(n, L), 0)
    slot64 = kl.where(valid, slot, 0).to(kl.int64)
    h0_layer = h0_ptr + layer * h0_layer_u.to(kl.int64) * 4
    head = h0_layer + slot64 * h0_slot_u.to(kl.int64) * 4 + hv * (V * K)
    tslot = kl.load(trk_ptr + req)
    tstep = kl.load(trk_step_ptr + req)
    tvalid = valid & (track_on != 0) & (tslot >= 0) & (tslot < num_slots)
    thead = (h0_layer + kl.where(tvalid, tslot, 0).to(kl.int64) * h0_slot_u.to(kl.int64) * 4
             + hv * (V * K))
    # the snapshot after step tstep, stored between the steps before it and those after
    tsnap = tvalid & (tstep >= 0) & (tstep < steps)
    tsplit = kl.where(tsnap, tstep + 1, steps)
    kl.pdl_launch_dependents()
    rk = rk_ptr + layer * rk_layer_u.to(kl.int64) * 8 + slot64 * rk_slot_u.to(kl.int64) * 8
    rv = rv_ptr + layer * rv_layer_u.to(kl.int64) * 8 + slot64 * rv_slot_u.to(kl.int64) * 8
    rg = rg_ptr + layer * rg_layer_u.to(kl.int64) * 4 + slot64 * rg_slot_u.to(kl.int64) * 4
    rb = rb_ptr + layer * rb_layer.to(kl.int64) + slot64 * rb_slot.to(kl.int64)
    rk = rk + h * (L * K)
    rv = rv + hv * (L * V)
    rg = rg + hv * (L * K)
    rb = rb + hv * L
    for j in kl.range(0, kl.where(valid, V // ROWS, 0), num_stages=STAGES):
        hs = kl.reshape(kl.bulk_load(head + j * (ROWS * K), ROWS * K), ROWS, K)
        at = ((j * ROWS + rr) * K)[:, None] + cols[None, :]
        vj = rv + j * ROWS + rr
        hs = _fold_steps(hs, rk, rg, rb, vj, 0, tsplit, K, V)
        kl.store(thead + at, hs, mask=tsnap)
        hs = _fold_steps(hs, rk, rg, rb, vj, tsplit, steps, K, V)
        kl.store(head + at, hs, cache_modifier=STATE_STORE)
    # the conv state's rows: positions steps - 3 .. steps - 1 of (old rows | recorded drafts)
    cvalid = valid & (conv_on != 0)
    csteps = kl.where(cvalid, steps, 0)
    conv = (conv_ptr + layer * conv_layer_u.to(kl.int64) * 8
            + slot64 * conv_slot_u.to(kl.int64) * 8)
    rc = rc_ptr + layer * rc_layer_u.to(kl.int64) * 8 + slot64 * rc_slot_u.to(kl.int64) * 8
    conv_row = conv_row_u * 8
    rc_row = rc_row_u * 8
    vc = 2 * H * K + hv * V + kl.arange(0, V)
    qc = h * K + cols
    kc = qc + H * K
    owner = cvalid & (hv % grp == 0)
    ownsteps = kl.where(owner, csteps, 0)
    yv0, yv1, yv2 = _conv_state_update(rc, rc_row, conv, conv_row, vc, 0, csteps, cvalid)
    yq0, yq1, yq2 = _conv_state_update(rc, rc_row, conv, conv_row, qc, 0, ownsteps, owner)
    yk0, yk1, yk2 = _conv_state_update(rc, rc_row, conv, conv_row, kc, 0, ownsteps, owner)
    _store_conv_rows(conv, conv_row, vc, yv0, yv1, yv2, cvalid)
    _store_conv_rows(conv, conv_row, qc, yq0, yq1, yq2, owner)
    _store_conv_rows(conv, conv_row, kc, yk0, yk1, yk2, owner)


# ---------------------------------------------------------------------------
# Settings, launch configurations, AOT specializations
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Settings:
    """The verify chain's and the fold's tuning (bench/kda/run.py times them; the reasoning
    is in docs/kernels/kda.md, "Implementation")."""
    verify_rows: int = 16  # the verify chain streams a head's state in chunks of [16, 128]
    verify_stages: int = 2  # on 2 warps through a ring of 2 slots, capped at 160 registers
    verify_warps: int = 2  # (6 programs an SM; the drafts' prologue, 4 drafts a tile, wants
    verify_chunk: int = 4  # 240 and spills a little). H100, B = 64 / 512: 50.4 / 347.8 us
    verify_min_programs: int = 0  # (144: 51.6 / 354.3; 128: 63.0 / 354.6; uncapped: 76.4 /
    verify_max_registers: Optional[int] = 160  # 450.0 with 2 drafts a tile; [32, 128] on 4
    # warps: 69.1 / 396.2; the register form before: 85.8 / 624.8)
    fold_rows: int = 16  # the fold streams a head's state in chunks of [16, 128] on 2 warps
    fold_stages: int = 2  # through a ring of 2 slots, capped at 96 registers (no spill):
    fold_warps: int = 2  # 10 programs an SM. On the H100, 2 of 4 accepted: 2551 us
    fold_min_programs: int = 0  # against 2538 for 3 slots at 128 registers, 2550 for 4 slots
    fold_max_registers: Optional[int] = 96  # uncapped (6 programs); 4 accepted: 2865 against
    # 2980 and 3399 (bench/results/kda)
    state_store: str = ".cs"  # the fold's state stores: the state is written once


SETTINGS = Settings()


def verify_launch_config(lower_bound: bool, norm: bool, settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps, maxnreg) of the verify chain."""
    s = settings
    name = "kda_verify_chain" + ("_lower_bound" if lower_bound else "") + ("_norm" if norm else "")
    return (name, {"K": HEAD_DIM, "V": HEAD_DIM, "ROWS": s.verify_rows, "CHUNK": s.verify_chunk,
                   "STAGES": s.verify_stages, "LOWER_BOUND": bool(lower_bound),
                   "NORM": bool(norm), "PROGRAMS": s.verify_min_programs},
            s.verify_warps, s.verify_max_registers)


def fold_launch_config(settings: Settings = SETTINGS) -> tuple:
    """(bundle name, constexprs, num_warps, maxnreg) of the fold."""
    s = settings
    return ("kda_replayssm_fold", {"K": HEAD_DIM, "V": HEAD_DIM, "ROWS": s.fold_rows,
                                   "STAGES": s.fold_stages, "STATE_STORE": s.state_store,
                                   "PROGRAMS": s.fold_min_programs}, s.fold_warps,
            s.fold_max_registers)


_VERIFY_INTS = ("HV", "H", "num_slots", "S", "L", "qkv_s0_u", "a_s0_u", "b_s0", "g_s0_u",
                "conv_slot_u", "conv_row_u", "slot_u", "inter_slot_u", "rk_slot_u", "rv_slot_u",
                "rg_slot_u", "rb_slot", "rc_slot_u", "inter_on", "rec_on", "conv_rec_on")
VERIFY_SIGNATURE = {
    "qkv_ptr": "*bf16", "a_ptr": "*bf16", "b_ptr": "*bf16", "gout_ptr": "*bf16",
    "alog_ptr": "*f32", "dtb_ptr": "*f32", "convw_ptr": "*bf16", "conv_ptr": "*bf16",
    "state_ptr": "*f32", "idx_ptr": "*i32", "wnorm_ptr": "*bf16", "out_ptr": "*bf16",
    "inter_ptr": "*f32", "rk_ptr": "*bf16", "rv_ptr": "*bf16", "rg_ptr": "*f32",
    "rb_ptr": "*f32", "rc_ptr": "*bf16", "ws_ptr": "*f32", **{i: "i32" for i in _VERIFY_INTS},
    "scale": "f32", "lower_bound": "f32", "eps": "f32"}
_FOLD_INTS = ("HV", "H", "num_slots", "L", "h0_layer_u", "h0_slot_u", "rk_layer_u",
              "rk_slot_u", "rv_layer_u", "rv_slot_u", "rg_layer_u", "rg_slot_u", "rb_layer",
              "rb_slot", "conv_layer_u", "conv_slot_u", "conv_row_u", "rc_layer_u", "rc_slot_u",
              "rc_row_u", "track_on", "conv_on")
FOLD_SIGNATURE = {
    "h0_ptr": "*f32", "rk_ptr": "*bf16", "rv_ptr": "*bf16", "rg_ptr": "*f32", "rb_ptr": "*f32",
    "idx_ptr": "*i32", "acc_ptr": "*i32", "trk_ptr": "*i32", "trk_step_ptr": "*i32",
    "conv_ptr": "*bf16", "rc_ptr": "*bf16", **{i: "i32" for i in _FOLD_INTS}}
#: The pointers the wrappers check 16-byte aligned (the vector accesses); b, A_log, beta,
#: the indices, accept lengths and track arguments are read one element at a time.
VERIFY_ALIGNED = ("qkv_ptr", "a_ptr", "gout_ptr", "dtb_ptr", "convw_ptr", "conv_ptr",
                  "state_ptr", "wnorm_ptr", "out_ptr", "inter_ptr", "rk_ptr", "rv_ptr",
                  "rg_ptr", "rc_ptr", "ws_ptr")
FOLD_ALIGNED = ("h0_ptr", "rk_ptr", "rv_ptr", "rg_ptr", "conv_ptr", "rc_ptr")

AOT_SPECIALIZATIONS = [
    Spec(kda_verify_chain_kernel, name=cfg[0], signature=VERIFY_SIGNATURE, constexprs=cfg[1],
         divisibility=VERIFY_ALIGNED, num_warps=cfg[2], maxnreg=cfg[3])
    for cfg in (verify_launch_config(lb, norm) for lb in (False, True) for norm in (False, True))
] + [
    Spec(kda_replayssm_fold_kernel, name=fold_launch_config()[0], signature=FOLD_SIGNATURE,
         constexprs=fold_launch_config()[1], divisibility=FOLD_ALIGNED,
         num_warps=fold_launch_config()[2], maxnreg=fold_launch_config()[3]),
]


# ---------------------------------------------------------------------------
# Wrappers
# ---------------------------------------------------------------------------

def _check_slotted(op: str, what: str, t: Any, dtype: str, lead: tuple, inner: tuple,
                   unit: int) -> tuple:
    """(shape, pitches) of t: its ``len(lead)`` leading dimensions (sizes ``lead``, None for
    any) have pitches in ``unit``-element (16-byte) units, each a multiple of ``unit`` and
    at least one block of the remaining dimensions (sizes ``inner``, None for any), which
    are dense; a dimension of size 1 has pitch 0."""
    L.check_dtype(op, what, t, (dtype,))
    shape = L.check_shape(op, what, t, lead + inner)
    st = L.strides(t)
    nl = len(lead)
    block = 1
    for d in reversed(range(nl, len(shape))):
        if shape[d] > 1 and st[d] != block:
            raise ValueError(f"{op}: {what} must be dense past its first {nl} dimension(s) "
                             f"(shape {list(shape)}, strides {st})")
        block *= shape[d]
    L.check_int32_extent(op, f"one slot of {what}", block)
    pitches = []
    for d in range(nl):
        p = st[d] if shape[d] > 1 else 0
        if p % unit or (shape[d] > 1 and p < block):
            raise ValueError(f"{op}: the pitch of dimension {d} of {what} ({p}) must be a "
                             f"multiple of {unit} elements (16 bytes) and at least {block}")
        L.check_int32_extent(op, f"the pitch of dimension {d} of {what} in 16-byte units",
                             p // unit)
        pitches.append(p // unit)
    return shape, tuple(pitches)


#: The workspace (a module name: the interpreter tests give host arrays).
_empty = L.empty


def kda_verify_chain(mixed_qkv: Any, a: Any, b: Any, A_log: Any, dt_bias: Any,
                     conv_state: Any, conv_weight: Any, state: Any, ssm_state_indices: Any,
                     num_q_heads: int, num_steps: int, g_out: Optional[Any] = None,
                     w_norm: Optional[Any] = None, eps: float = 1e-5,
                     scale: Optional[float] = None, lower_bound: Optional[float] = None,
                     intermediate_states: Optional[Any] = None, rawk: Optional[Any] = None,
                     rawv: Optional[Any] = None, gk: Optional[Any] = None,
                     beta: Optional[Any] = None, conv_records: Optional[Any] = None,
                     out: Optional[Any] = None, *, settings: Settings = SETTINGS) -> Any:
    """The MTP verify chain (module docstring): mixed_qkv bf16 [N S, 2 H K + HV V] (the
    pre-conv rows; request n's S = ``num_steps`` drafts are the rows n S .. n S + S - 1), a
    bf16 [N S, HV K], b bf16 [N S, HV], g_out bf16 [N S, HV V] (row-strided slices, last dims
    contiguous), A_log, dt_bias, conv_state, conv_weight, state, ssm_state_indices [N], eps,
    scale, lower_bound as kda_fused_decode (any HV % H == 0) -- but conv_state and state
    are only read. Optional outputs at each request's slot: intermediate_states fp32
    [slots, S, HV, 128, 128]; the ReplaySSM records rawk bf16 [slots, H, L, 128], rawv bf16
    [slots, HV, L, 128], gk fp32 [slots, HV, L, 128], beta fp32 [slots, HV, L] (all four or
    none; L >= S); conv_records bf16 [slots, L, 2 H K + HV V] (each slot dense, the slot
    pitch a multiple of 16 bytes). Returns out bf16 [N S, HV, 128] (allocated when None;
    contiguous). Padded requests (index < 0 or >= slots): zero output rows, nothing else
    written. Every check raises before any launch; N = 0 launches nothing."""
    op = "kda_verify_chain"
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
        raise ValueError(f"{op}: num_steps must be a positive int, got {num_steps!r}")
    s_steps = num_steps
    c = check_pre_conv(op, mixed_qkv, a, b, A_log, dt_bias, conv_state, conv_weight, state,
                       ssm_state_indices, num_q_heads, g_out, w_norm, eps, scale, lower_bound,
                       out, steps=s_steps)
    slots, hv, h, n, t_rows = c.slots, c.hv, c.h, c.n, c.t_rows
    k = v = HEAD_DIM
    dim = 2 * h * k + hv * v
    inter_u = 0
    if intermediate_states is not None:
        _, (inter_u,) = _check_slotted(op, "intermediate_states", intermediate_states,
                                       "float32", (slots,), (s_steps, hv, v, k), 4)
    records = (rawk, rawv, gk, beta)
    if any(r is not None for r in records) and any(r is None for r in records):
        raise ValueError(f"{op}: the ReplaySSM records are rawk, rawv, gk and beta together "
                         f"(or none)")
    rec_u = (0, 0, 0, 0)
    ring = s_steps
    if rawk is not None:
        shp, (rk_u,) = _check_slotted(op, "rawk", rawk, "bfloat16", (slots,), (h, None, k), 8)
        ring = shp[2]
        if ring < s_steps:
            raise ValueError(f"{op}: the records' length L = {ring} must be at least "
                             f"num_steps = {s_steps}")
        _, (rv_u,) = _check_slotted(op, "rawv", rawv, "bfloat16", (slots,), (hv, ring, v), 8)
        _, (rg_u,) = _check_slotted(op, "gk", gk, "float32", (slots,), (hv, ring, k), 4)
        _, (rb_s,) = _check_slotted(op, "beta", beta, "float32", (slots,), (hv, ring), 1)
        rec_u = (rk_u, rv_u, rg_u, rb_s)
    rc_u = 0
    if conv_records is not None:
        shp, (rc_u,) = _check_slotted(op, "conv_records", conv_records, "bfloat16", (slots,),
                                      (None, dim), 8)
        if shp[1] < s_steps:
            raise ValueError(f"{op}: conv_records' length L = {shp[1]} must be at least "
                             f"num_steps = {s_steps}")
        if rawk is not None and shp[1] != ring:
            raise ValueError(f"{op}: conv_records' length {shp[1]} differs from the "
                             f"records' L = {ring}")
        ring = shp[1]
    check_placement(op, c.tensors + [
        ("intermediate_states", intermediate_states), ("rawk", rawk), ("rawv", rawv),
        ("gk", gk), ("beta", beta), ("conv_records", conv_records)],
        ("intermediate_states", "rawk", "rawv", "gk", "conv_records"))
    name, constexprs, num_warps, maxnreg = verify_launch_config(c.use_lb, c.norm, settings)
    programs = n * hv
    L.check_int32_extent(op, "the programs N * HV", programs)
    L.check_int32_extent(op, "the output rows N * S * HV", t_rows * hv)
    out = _check_out(op, out, (t_rows, hv, v), mixed_qkv)
    if n == 0:
        return out
    ws = _empty(mixed_qkv, (n, hv, s_steps, WS_ROWS, k), "float32")
    # absent optional tensors: a tensor of the pointer's type, never accessed (flags 0)
    bf, f32 = mixed_qkv, state
    L.launch(kda_verify_chain_kernel, name, (programs,),
             (mixed_qkv, a, b, g_out if c.norm else bf, A_log, dt_bias, conv_weight,
              conv_state, state, ssm_state_indices, w_norm if c.norm else bf, out,
              f32 if intermediate_states is None else intermediate_states,
              bf if rawk is None else rawk, bf if rawv is None else rawv,
              f32 if gk is None else gk, f32 if beta is None else beta,
              bf if conv_records is None else conv_records, ws, hv, h, slots, s_steps, ring,
              c.qkv_s0, c.a_s0, c.b_s0, c.g_s0, c.conv_slot_u, c.conv_row_u, c.slot_u, inter_u,
              *rec_u, rc_u, int(intermediate_states is not None), int(rawk is not None),
              int(conv_records is not None), float(c.scale), c.lb, c.eps), constexprs,
             num_warps, maxnreg=maxnreg)
    return out


def kda_replayssm_fold(h0: Any, rawk: Any, rawv: Any, gk: Any, beta: Any, indices: Any,
                       accept_len: Any, track_indices: Optional[Any] = None,
                       steps_to_track: Optional[Any] = None, conv_state: Optional[Any] = None,
                       conv_records: Optional[Any] = None, *,
                       settings: Settings = SETTINGS) -> None:
    """The ReplaySSM commit of every layer in one launch (module docstring), in place:
    h0 fp32 [layers, slots, HV, 128, 128], the records rawk bf16 [layers, slots, H, L, 128],
    rawv bf16 [layers, slots, HV, L, 128], gk fp32 [layers, slots, HV, L, 128], beta fp32
    [layers, slots, HV, L] (as kda_verify_chain wrote them; one layer: ``x[None]``), indices
    int32 [B] (the slot of each request; < 0 or >= slots: nothing), accept_len int32 [B]
    (n <= 0: nothing; n > L replays L steps); track_indices and steps_to_track int32 [B]
    (together or neither): the state after step steps_to_track[b] also lands in slot
    track_indices[b] (a slot < 0 or >= slots: no snapshot); conv_state bf16 [layers, slots,
    3, 2 H K + HV V] and conv_records bf16 [layers, slots, L, 2 H K + HV V] (together or
    neither): the conv state rolled back to the accepted tokens. Each slot of every tensor
    dense but the conv state's rows; every pitch a multiple of 16 bytes (beta's any).
    Every check raises before any launch; B = 0 launches nothing."""
    op = "kda_replayssm_fold"
    k = v = HEAD_DIM
    hshape, (h0_l, h0_s) = _check_slotted(op, "h0", h0, "float32", (None, None),
                                          (None, v, k), 4)
    layers, slots, hv = hshape[:3]
    if hv < 1:
        raise ValueError(f"{op}: h0 must have at least one head, got shape {list(hshape)}")
    kshape, (rk_l, rk_s) = _check_slotted(op, "rawk", rawk, "bfloat16", (layers, slots),
                                          (None, None, k), 8)
    h, ring = kshape[2], kshape[3]
    _check_heads(op, hv, h)
    if ring < 1:
        raise ValueError(f"{op}: the records' length L must be at least 1, got {ring}")
    _, (rv_l, rv_s) = _check_slotted(op, "rawv", rawv, "bfloat16", (layers, slots),
                                     (hv, ring, v), 8)
    _, (rg_l, rg_s) = _check_slotted(op, "gk", gk, "float32", (layers, slots), (hv, ring, k), 4)
    _, (rb_l, rb_s) = _check_slotted(op, "beta", beta, "float32", (layers, slots), (hv, ring),
                                     1)
    for what, t in (("indices", indices), ("accept_len", accept_len)):
        L.check_dtype(op, what, t, ("int32",))
        L.check_contiguous(op, what, t)
    (bsz,) = L.check_shape(op, "indices", indices, (None,))
    L.check_shape(op, "accept_len", accept_len, (bsz,))
    if (track_indices is None) != (steps_to_track is None):
        raise ValueError(f"{op}: the track slot needs both track_indices and steps_to_track "
                         f"(or neither)")
    if track_indices is not None:
        for what, t in (("track_indices", track_indices), ("steps_to_track", steps_to_track)):
            L.check_dtype(op, what, t, ("int32",))
            L.check_shape(op, what, t, (bsz,))
            L.check_contiguous(op, what, t)
    if (conv_state is None) != (conv_records is None):
        raise ValueError(f"{op}: the conv rollback needs both conv_state and conv_records "
                         f"(or neither)")
    dim = 2 * h * k + hv * v
    conv_u = rc_u = (0, 0, 0)
    if conv_state is not None:
        L.check_dtype(op, "conv_state", conv_state, ("bfloat16",))
        L.check_shape(op, "conv_state", conv_state, (layers, slots, CONV_WIDTH - 1, dim))
        L.check_inner_contiguous(op, "conv_state", conv_state)
        cst = L.strides(conv_state)
        conv_u = (cst[0] if layers > 1 else 0, cst[1] if slots > 1 else 0, cst[2])
        for what, st in zip(("layer", "slot", "row"), conv_u):
            if st % 8:
                raise ValueError(f"{op}: the {what} stride of conv_state ({st}) must be a "
                                 f"multiple of 8 elements (16 bytes)")
            L.check_int32_extent(op, f"the {what} stride of conv_state", st)
        conv_u = tuple(st // 8 for st in conv_u)
        _, (rc_l, rc_s) = _check_slotted(op, "conv_records", conv_records, "bfloat16",
                                           (layers, slots), (ring, dim), 8)
        rc_u = (rc_l, rc_s, dim // 8)
    check_placement(op, [("h0", h0), ("rawk", rawk), ("rawv", rawv), ("gk", gk),
                         ("beta", beta), ("indices", indices), ("accept_len", accept_len),
                         ("track_indices", track_indices), ("steps_to_track", steps_to_track),
                         ("conv_state", conv_state), ("conv_records", conv_records)],
                    ("h0", "rawk", "rawv", "gk", "conv_records"))
    L.check_int32_extent(op, "HV * V * K", hv * v * k)
    name, constexprs, num_warps, maxnreg = fold_launch_config(settings)
    grid = (bsz, layers * hv)
    if layers * hv > 65535:
        raise ValueError(f"{op}: layers * HV = {layers * hv} must be at most 65535 (the "
                         f"grid's y)")
    if bsz == 0:
        return
    track = track_indices is not None
    L.launch(kda_replayssm_fold_kernel, name, grid,
             (h0, rawk, rawv, gk, beta, indices, accept_len,
              track_indices if track else indices, steps_to_track if track else indices,
              conv_state if conv_state is not None else rawk,
              conv_records if conv_records is not None else rawk, hv, h, slots, ring, h0_l,
              h0_s, rk_l, rk_s, rv_l, rv_s, rg_l, rg_s, rb_l, rb_s, *conv_u,
              *rc_u, int(track), int(conv_state is not None)), constexprs, num_warps,
             maxnreg=maxnreg)
