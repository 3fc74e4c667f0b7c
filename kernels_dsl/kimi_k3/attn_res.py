"""Attention residuals, K3's depth attention over block snapshots, bf16.

Per token t, with rows r = 0..nvb (bank[t, 0..nvb-1, :], then prefix_sum[t, :]), all math in
fp32:

    score_r = sum_h rows_r[h] * cw[h] * rsqrt(mean_h(rows_r^2) + eps)
    p       = softmax_r(score)
    mix     = sum_r p_r * rows_r
    out[t]  = bf16( mix * rsqrt(mean_h(mix^2) + eps) * ow )          (the same eps)

nvb = 0 (K3's layer 0) gives ``out = RMSNorm(prefix_sum) * ow``. With ``write_prefix`` the
prefix row is also copied bit for bit into ``bank[t, nvb, :]`` (the next block snapshot).

Three kernels, by token count (``select_launch``, on a CUDA device; without an SM count the
row ring):

- ``attn_res_cluster_kernel`` (few tokens: T x S programs fit one an SM): one token per
  thread-block cluster of S programs, each owning H / S columns of all the token's rows; the
  partial sums are added over the cluster by ``kl.cluster_sum``.
- ``attn_res_token_kernel`` (past that, up to one program an SM, nvb <= 4): one program holds
  a token's rows whole; every sum is a block reduction.
- ``attn_res_ring_kernel`` (the rest): persistent programs fold their tokens' rows one after
  another with an online softmax, each row one bulk copy into a shared-memory ring.

The bundle holds them at K3's H (tiles for 4096 < H <= 8192) and, for every other H, the row
ring at the longest row (``attn_res_generic``, ``generic_launch``).

Every kernel waits for the previous grid (PDL) before its first load and lets the next one
launch when it is done. Offsets are int64 (token x bank stride passes 2^31 at T ~ 37k).

Specification: docs/kernels/attn_res.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

#: K3: hidden 7168, at most 8 block snapshots (attn_res_block_size 12 over 61 layers x 2).
HIDDEN = 7168
MAX_NVB = 8
#: the longest row: one program's tile
MAX_H = 16384


@dataclasses.dataclass(frozen=True)
class Settings:
    """attn_res's tuning; measured in bench/results/kimi_k3/attn_res.md."""

    # the row ring where the tokens fill its grid (T > SMs)
    ring_thread_elems: int = 64  # row elements a thread: 4 warps at H = 7168
    ring_stages: int = 3  # ring slots (2 rows of 16 KB in flight while one is folded)
    ring_programs_per_sm: int = 3  # compiled in (.minnctapersm): 168 registers, no spills
    # ... and where every program owns one token (T <= SMs, past the few-token kernels)
    ring_few_thread_elems: int = 32  # 8 warps: a token's rows are its whole latency
    ring_few_stages: int = 3
    ring_few_programs_per_sm: int = 2
    # the cluster kernel: S programs a token where T x S fit one an SM, else the "many" pair
    cluster_size: int = 4  # programs a token (8 and 16 slower at T = 1)
    cluster_warps: int = 4  # a thread holds every bank row of its columns
    cluster_many_size: int = 2  # T x 4 past the SMs: 2 programs a token (T <= 66 on the H200)
    cluster_many_warps: int = 8
    cluster_max_waves: int = 1  # T x S <= this x SMs (0: never); more waves lose to the others
    cluster_max_rows: int = 8  # bank rows it takes (one specialization per power of two)
    # the token kernel, where the cluster kernel does not run
    token_max_waves: int = 1  # T <= this x SMs (0: never); two waves lose to the ring
    token_max_rows: int = 4  # past 4 bank rows one SM's arithmetic loses to the ring
    token_max_h: int = 8192  # the row in one 16-warp program
    token_warps: int = 16  # 16 row elements a thread at H = 7168


SETTINGS = Settings()


@kiln.jit
def _add_pairs(ss0, dot0, ss1, dot1):
    return ss0 + ss1, dot0 + dot1


@kiln.jit
def _row_score(x, cw, inv_h, eps):
    """The row's depth-attention logit: <x, cw> * rsqrt(mean(x^2) + eps) (x, cw fp32 tiles,
    zero in the masked lanes); both sums in one reduction (one shared-memory round trip)."""
    ss, dot = kl.reduce((x * x, x * cw), 0, _add_pairs)
    return dot * kl.rsqrt(ss * inv_h + eps)


@kiln.jit
def _softmax_fold(m, l, acc, x, s, first):
    """Online-softmax step: folds row x with logit s into (running max m, running sum l,
    accumulator acc); ``first`` restarts them (a token's first row). The rescale by
    exp(m_old - m_new) runs only when the maximum grows: s is the same in every thread, so
    the branch is uniform, and the other rows cost one fma per element."""
    if first | (s > m):
        alpha = kl.exp(m - s)
        acc = kl.where(first, 0.0, acc * alpha)
        l = kl.where(first, 0.0, l * alpha)
        m = s
    p = kl.exp(s - m)
    return m, l + p, acc + x * p


@kiln.jit
def _normalize_out(acc, l, ow, inv_h, eps):
    """RMSNorm(acc / l) * ow in fp32 (masked lanes of acc are zero)."""
    inv_l = 1.0 / l
    ss = kl.sum(acc * acc, axis=0) * (inv_l * inv_l)
    scale = inv_l * kl.rsqrt(ss * inv_h + eps)
    return acc * scale * ow


@kiln.jit(num_warps=16, do_not_specialize=["T", "nvb"], fp_fusion=True)
def attn_res_ring_kernel(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, T, H, nvb, p_s0, b_s0,
                         b_s1, o_s0, eps, BLOCK: kl.constexpr, WRITE_PREFIX: kl.constexpr,
                         STAGES: kl.constexpr, PROGRAMS: kl.constexpr):
    """The persistent kernel, its rows in a shared-memory ring. Program pid folds tokens pid,
    pid + grid, ... as one sequence of rows (each token's bank rows, then its prefix row)
    with an online softmax: row j is row r = j % (nvb + 1) of token pid + (j // (nvb + 1)) *
    grid, one ``kl.bulk_load`` of H elements into a BLOCK tile in a ``kl.range(...,
    num_stages=STAGES)`` loop, so STAGES - 1 rows are in flight in shared memory (not in
    registers) while row j is folded. A token's first row restarts the softmax state, its
    prefix row writes the output. PROGRAMS programs fit an SM (registers capped by
    ``kl.min_programs_per_sm``)."""
    kl.min_programs_per_sm(PROGRAMS)
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    per_tok = nvb + 1
    n_rows = (T - pid + grid - 1) // grid * per_tok
    cols = kl.arange(0, BLOCK)
    mask = cols < H
    inv_h = 1.0 / H.to(kl.float32)
    # H itself (a multiple of 8, the wrapper checks), written so that the compiler sees
    # whole 16-byte units for the bulk copy even where the launch did not specialize H
    # (JIT launches specialize multiples of 16 only)
    count = H // 8 * 8
    # the strides likewise (multiples of 8, the wrapper checks): 16-byte aligned rows
    p_s0 = p_s0 // 8 * 8
    b_s0 = b_s0 // 8 * 8
    b_s1 = b_s1 // 8 * 8
    tok0 = pid.to(kl.int64)
    kl.pdl_wait()  # prefix_sum (and the bank) may come from the previous kernels
    m = 0.0
    l = 1.0
    acc = kl.zeros((BLOCK,), kl.float32)
    for j in kl.range(0, n_rows, num_stages=STAGES):
        # (token, row) of j: a pure function of j, which the ring recomputes for the row it
        # issues STAGES - 1 iterations ahead (a cursor carried by the loop would not be)
        q = j // per_tok
        r = j - q * per_tok
        tok = tok0 + q.to(kl.int64) * grid
        # one bulk copy from either row; a select of two 16-byte aligned pointers stays
        # 16-byte aligned (AxisInfo), which cp.async.bulk needs
        row = kl.where(r < nvb, bank_ptr + tok * b_s0 + r * b_s1, prefix_ptr + tok * p_s0)
        x_bf16 = kl.bulk_load(row, BLOCK, count=count)  # lanes >= H read as zero
        if WRITE_PREFIX:  # bit-exact: the bf16 row as copied, stored before the fold so
            # that it is not live across it (4-warp programs spilled)
            if r == nvb:
                kl.store(bank_ptr + tok * b_s0 + nvb * b_s1 + cols, x_bf16, mask=mask)
        x = x_bf16.to(kl.float32)
        cw = kl.load(cw_ptr + cols, mask=mask, other=0.0).to(kl.float32)  # L1-resident
        s = _row_score(x, cw, inv_h, eps)
        m, l, acc = _softmax_fold(m, l, acc, x, s, r == 0)
        if r == nvb:  # the prefix row: the token is complete
            ow = kl.load(ow_ptr + cols, mask=mask, other=0.0).to(kl.float32)
            kl.store(out_ptr + tok * o_s0 + cols, _normalize_out(acc, l, ow, inv_h, eps),
                     mask=mask)
    kl.pdl_launch_dependents()


@kiln.jit
def _attn_res_token(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, tok, cols, cmask, H, nvb,
                    p_s0, b_s0, b_s1, o_s0, eps, RP: kl.constexpr, WRITE_PREFIX: kl.constexpr,
                    IN_CLUSTER: kl.constexpr):
    """Token ``tok`` at the columns ``cols`` (lanes ``cmask``) of its nvb bank rows, as one
    [RP, len(cols)] tile, and of its prefix row. IN_CLUSTER: the columns are a cluster
    program's slice, its sums added over the cluster by ``kl.cluster_sum``; else the whole
    row (``attn_res_token_kernel``)."""
    rows = kl.arange(0, RP)
    r2 = rows[:, None]
    c2 = cols[None, :] + r2 * 0  # the same columns in every row
    inv_h = 1.0 / H.to(kl.float32)
    kl.pdl_wait()  # prefix_sum (and the bank) may come from the previous kernels
    # Every load up front: the bank rows, the prefix row and cw (L1).
    bank = kl.load(bank_ptr + tok * b_s0 + r2 * b_s1 + c2, mask=cmask[None, :] & (r2 < nvb),
                   other=0.0)
    prefix = kl.load(prefix_ptr + tok * p_s0 + cols, mask=cmask, other=0.0)
    cw = kl.load(cw_ptr + cols, mask=cmask, other=0.0).to(kl.float32)
    ow = kl.load(ow_ptr + cols, mask=cmask, other=0.0).to(kl.float32)
    xb = bank.to(kl.float32)  # zero in the masked lanes and rows
    xp = prefix.to(kl.float32)
    # The partial sums of squares and dots with cw of every bank row in one two-way
    # reduction and of the prefix row in another (the products fold into the sums as fma
    # with fp_fusion); the prefix's as row 0 of [RP] tiles (zero elsewhere).
    ss_b, dot_b = kl.reduce((xb * xb, xb * cw[None, :]), 1, _add_pairs)
    ss_p1, dot_p1 = kl.reduce((xp * xp, xp * cw), 0, _add_pairs)
    ss_p = kl.where(rows == 0, ss_p1, 0.0)
    dot_p = kl.where(rows == 0, dot_p1, 0.0)
    if IN_CLUSTER:
        # ... summed over the cluster where every thread holds them: the [RP] tiles and the
        # prefix row's two sums (row 0, as a [2] tile) are whole in every thread, and
        # kl.cluster_sum reads each from every rank and adds them in registers
        two = kl.arange(0, 2)
        pre = kl.where(two == 0, kl.sum(ss_p, axis=0), kl.sum(dot_p, axis=0))
        ss_b, dot_b, pre = kl.cluster_sum((ss_b, dot_b, pre))
        ss_p = kl.where(two == 0, pre, 0.0)
        dot_p = kl.where(two == 1, pre, 0.0)
    ss_p = kl.sum(ss_p, axis=0)  # the one nonzero element: the prefix row's sums
    dot_p = kl.sum(dot_p, axis=0)
    s_b = kl.where(rows < nvb, dot_b * kl.rsqrt(ss_b * inv_h + eps), -float("inf"))
    s_p = dot_p * kl.rsqrt(ss_p * inv_h + eps)
    m = kl.maximum(kl.max(s_b, axis=0), s_p)
    p_b = kl.exp(s_b - m)  # the padding rows: exp(-inf) = 0
    p_p = kl.exp(s_p - m)
    inv = 1.0 / (kl.sum(p_b, axis=0) + p_p)  # one division
    mix = kl.sum(xb * (p_b * inv)[:, None], axis=0) + xp * (p_p * inv)  # zero when masked
    ssm = kl.full((1,), 0.0, kl.float32) + kl.sum(mix * mix, axis=0)
    if IN_CLUSTER:
        ssm = kl.cluster_sum(ssm)
    ssm = kl.sum(ssm, axis=0)
    kl.store(out_ptr + tok * o_s0 + cols, mix * kl.rsqrt(ssm * inv_h + eps) * ow, mask=cmask)
    if WRITE_PREFIX:  # bit-exact: the bf16 row as loaded
        kl.store(bank_ptr + tok * b_s0 + nvb * b_s1 + cols, prefix, mask=cmask)
    kl.pdl_launch_dependents()


@kiln.jit(num_warps=4, cluster=(SETTINGS.cluster_size, 1, 1), do_not_specialize=["T", "nvb"],
          fp_fusion=True)
def attn_res_cluster_kernel(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, T, H, nvb, p_s0,
                            b_s0, b_s1, o_s0, eps, SLICE: kl.constexpr, RP: kl.constexpr,
                            WRITE_PREFIX: kl.constexpr):
    """Token cluster_id(0); this program's columns [rank * H/S, (rank + 1) * H/S) of its nvb
    bank rows as one [RP, SLICE] tile and of its prefix row (S: the launch's cluster size).
    T is unused (grid = T * S)."""
    tok = kl.cluster_id(0).to(kl.int64)
    # the slice width H / S, written as a multiple of 8 (H % 8S == 0, the wrapper checks) so
    # that every program's first column keeps the 16-byte alignment of the rows
    sw = H // (8 * kl.cluster_size()) * 8
    lane = kl.arange(0, SLICE)
    _attn_res_token(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, tok,
                    kl.cluster_cta_rank() * sw + lane, lane < sw, H, nvb, p_s0, b_s0, b_s1,
                    o_s0, eps, RP, WRITE_PREFIX, True)


@kiln.jit(num_warps=16, do_not_specialize=["T", "nvb"], fp_fusion=True)
def attn_res_token_kernel(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, T, H, nvb, p_s0, b_s0,
                          b_s1, o_s0, eps, BLOCK: kl.constexpr, RP: kl.constexpr,
                          WRITE_PREFIX: kl.constexpr):
    """Token program_id(0) whole in one program: its nvb bank rows as one [RP, BLOCK] tile
    and its prefix row. T is unused (grid = T)."""
    cols = kl.arange(0, BLOCK)
    _attn_res_token(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr,
                    kl.program_id(0).to(kl.int64), cols, cols < H, H, nvb, p_s0, b_s0, b_s1,
                    o_s0, eps, RP, WRITE_PREFIX, False)


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _config(h: int, thread_elems: int) -> tuple:
    """(BLOCK, num_warps): the row in one tile, thread_elems elements a thread, 1 to 16
    warps."""
    block = 1 << max(3, (h - 1).bit_length())
    return block, min(16, max(1, block // (32 * thread_elems)))


def ring_config(t: int, num_sms: Optional[int], settings: Settings = SETTINGS) -> tuple:
    """(thread elements, stages, programs an SM) of the ring kernel for T tokens: the
    ring_few_* ones where T <= SMs (with an SM count), else the ring_* ones."""
    s = settings
    if num_sms and t <= num_sms:
        return s.ring_few_thread_elems, s.ring_few_stages, s.ring_few_programs_per_sm
    return s.ring_thread_elems, s.ring_stages, s.ring_programs_per_sm


def grid_size(t: int, num_sms: Optional[int], per_sm: int) -> int:
    """Persistent programs for T tokens: min(T, per_sm x SMs), or T (one program per token)
    without an SM count or with per_sm = 0."""
    if not num_sms or per_sm <= 0:
        return t
    return min(t, per_sm * num_sms)


def _cluster_config(h: int, nvb: int, t: int = 1, num_sms: Optional[int] = None,
                    settings: Settings = SETTINGS) -> tuple:
    """(S, SLICE, RP, num_warps) of the cluster kernel: cluster_size programs a token on
    cluster_warps or, where T clusters of them do not fit one program an SM,
    cluster_many_size on cluster_many_warps; a program's H / S columns in a power-of-two
    tile, the nvb bank rows padded to a power of two (at least one)."""
    s = settings
    few = not num_sms or t * s.cluster_size <= num_sms
    size, warps = ((s.cluster_size, s.cluster_warps) if few
                   else (s.cluster_many_size, s.cluster_many_warps))
    return size, _pow2(h // size), _pow2(max(nvb, 1)), warps


def use_cluster_kernel(t: int, h: int, nvb: int, num_sms: Optional[int],
                       settings: Settings = SETTINGS) -> bool:
    """Whether T tokens of H (nvb bank rows) go to the cluster kernel: few tokens on a known
    device (T x S <= cluster_max_waves x SMs), at most cluster_max_rows bank rows, and an H
    that splits into S slices of 16-byte vectors."""
    size = _cluster_config(h, nvb, t, num_sms, settings)[0]
    return (bool(num_sms) and settings.cluster_max_waves > 0
            and t * size <= settings.cluster_max_waves * num_sms
            and nvb <= settings.cluster_max_rows and h % (8 * size) == 0)


def use_token_kernel(t: int, h: int, nvb: int, num_sms: Optional[int],
                     settings: Settings = SETTINGS) -> bool:
    """Whether T tokens of H (nvb bank rows) go to the token kernel (when not to the cluster
    kernel): at most token_max_waves waves of one program an SM on a known device, at most
    token_max_rows bank rows, H at most token_max_h."""
    return (bool(num_sms) and t <= settings.token_max_waves * num_sms
            and nvb <= settings.token_max_rows and h <= settings.token_max_h)


def _ring_kernel_name(write_prefix: bool, stages: int, programs: int, warps: int) -> str:
    return ("attn_res_ring" + ("_write_prefix" if write_prefix else "")
            + f"_s{stages}_p{programs}_w{warps}")


def _cluster_kernel_name(write_prefix: bool, rp: int, warps: int, size: int = 8) -> str:
    return (f"attn_res_cluster_rp{rp}_w{warps}" + ("" if size == 8 else f"_c{size}")
            + ("_write_prefix" if write_prefix else ""))


def _token_kernel_name(write_prefix: bool, rp: int, warps: int) -> str:
    return f"attn_res_token_rp{rp}_w{warps}" + ("_write_prefix" if write_prefix else "")


def select_launch(t: int, h: int, nvb: int, write_prefix: bool, num_sms: Optional[int],
                  settings: Settings = SETTINGS) -> tuple:
    """The launch for T tokens of H with nvb bank rows on a device of num_sms SMs (None:
    unknown): the cluster kernel, else the token kernel, else the row ring; (kernel, bundle
    name, grid, constexprs, num_warps, maxnreg, cluster)."""
    wp = bool(write_prefix)
    if use_cluster_kernel(t, h, nvb, num_sms, settings):
        size, slice_, rp, num_warps = _cluster_config(h, nvb, t, num_sms, settings)
        return (attn_res_cluster_kernel, _cluster_kernel_name(wp, rp, num_warps, size),
                (t * size,), {"SLICE": slice_, "RP": rp, "WRITE_PREFIX": wp}, num_warps, None,
                (size, 1, 1))
    if use_token_kernel(t, h, nvb, num_sms, settings):
        rp = _pow2(max(nvb, 1))
        return (attn_res_token_kernel, _token_kernel_name(wp, rp, settings.token_warps), (t,),
                {"BLOCK": _pow2(h), "RP": rp, "WRITE_PREFIX": wp}, settings.token_warps, None,
                None)
    elems, stages, per_sm = ring_config(t, num_sms, settings)
    block, num_warps = _config(h, elems)
    programs = max(1, per_sm)
    return (attn_res_ring_kernel, _ring_kernel_name(wp, stages, programs, num_warps),
            (grid_size(t, num_sms, per_sm),),
            {"BLOCK": block, "WRITE_PREFIX": wp, "STAGES": stages, "PROGRAMS": programs},
            num_warps, None, None)


_SIGNATURE = {"prefix_ptr": "*bf16", "bank_ptr": "*bf16", "cw_ptr": "*bf16", "ow_ptr": "*bf16",
              "out_ptr": "*bf16", "T": "i32", "H": "i32", "nvb": "i32", "p_s0": "i32",
              "b_s0": "i32", "b_s1": "i32", "o_s0": "i32", "eps": "f32"}
#: 16-byte pointers; H and the strides multiples of 8 elements (16 bytes), as the wrapper checks
_DIVISIBILITY = {"prefix_ptr": 16, "bank_ptr": 16, "cw_ptr": 16, "ow_ptr": 16, "out_ptr": 16,
                 "H": 8, "p_s0": 8, "b_s0": 8, "b_s1": 8, "o_s0": 8}


def _spec(launch: tuple) -> Spec:
    kernel, name, _, constexprs, num_warps, _, cluster = launch
    return Spec(kernel, name=name, signature=_SIGNATURE, constexprs=constexprs,
                divisibility=_DIVISIBILITY, num_warps=num_warps, cluster=cluster)


def _ring_specs() -> list:
    """The ring's two configurations (ring_config) at K3's H, write_prefix or not."""
    s = SETTINGS
    configs = dict.fromkeys([
        (s.ring_thread_elems, s.ring_stages, max(1, s.ring_programs_per_sm)),
        (s.ring_few_thread_elems, s.ring_few_stages, max(1, s.ring_few_programs_per_sm))])
    out = []
    for elems, stages, programs in configs:
        warps = _config(HIDDEN, elems)[1]
        for wp in (False, True):
            out.append(_spec((attn_res_ring_kernel,
                              _ring_kernel_name(wp, stages, programs, warps), None,
                              {"BLOCK": _config(HIDDEN, elems)[0], "WRITE_PREFIX": wp,
                               "STAGES": stages, "PROGRAMS": programs}, warps, None, None)))
    return out


#: the bundle's kernel for every H, nvb and device: the row ring at the longest row, one
#: 16-warp program an SM (no spills); its (thread elements, stages, programs an SM)
GENERIC = "attn_res_generic"
GENERIC_RING = (32, 3, 1)


def generic_launch(t: int, write_prefix: bool, num_sms: Optional[int]) -> tuple:
    """The generic launch for T tokens (``select_launch``'s form)."""
    elems, stages, programs = GENERIC_RING
    block, num_warps = _config(MAX_H, elems)
    return (attn_res_ring_kernel, GENERIC, (grid_size(t, num_sms, programs),),
            {"BLOCK": block, "WRITE_PREFIX": bool(write_prefix), "STAGES": stages,
             "PROGRAMS": programs}, num_warps, None, None)


#: one specialization per padded bank row count (nvb 0..1 -> 1 row, 2 -> 2, 3..4 -> 4, 5..8 -> 8)
_CLUSTER_ROWS = tuple(1 << i for i in range(SETTINGS.cluster_max_rows.bit_length()))

AOT_SPECIALIZATIONS = _ring_specs() + [
    _spec((attn_res_cluster_kernel, _cluster_kernel_name(wp, rp, warps, size), None,
           {"SLICE": _pow2(HIDDEN // size), "RP": rp, "WRITE_PREFIX": wp}, warps, None,
           (size, 1, 1)))
    for rp in _CLUSTER_ROWS
    for size, warps in dict.fromkeys(((SETTINGS.cluster_size, SETTINGS.cluster_warps),
                                      (SETTINGS.cluster_many_size,
                                       SETTINGS.cluster_many_warps)))
    for wp in (False, True)
] + [
    _spec((attn_res_token_kernel, _token_kernel_name(wp, rp, SETTINGS.token_warps), None,
           {"BLOCK": _pow2(HIDDEN), "RP": rp, "WRITE_PREFIX": wp}, SETTINGS.token_warps, None,
           None))
    for rp in _CLUSTER_ROWS if rp <= _pow2(max(SETTINGS.token_max_rows, 1))
    for wp in (False, True)
] + [_spec(generic_launch(1, wp, None)) for wp in (False, True)]

#: the SM count of a tensor's CUDA device (None otherwise); a module global, so that tests can
#: stand in for a device
_num_sms = L.num_sms


def attn_res(prefix_sum: Any, bank: Any, cw: Any, ow: Any, out: Optional[Any] = None,
             nvb: int = 1, eps: float = 1e-6, write_prefix: bool = False, *,
             settings: Settings = SETTINGS) -> Any:
    """Depth attention over ``nvb`` bank rows and the prefix row, then RMSNorm with ``ow``
    (module docstring). prefix_sum bf16 [T, H], bank bf16 [T, NB, H], cw and ow bf16 [H]
    (contiguous), out bf16 [T, H] (allocated when None); last dimensions contiguous, row
    strides and H multiples of 8 (16-byte vectors), 16-byte aligned, H <= 16384 (K3: 7168);
    0 <= nvb <= 8; ``write_prefix`` needs NB > nvb. Returns out. Every check raises before any
    launch; T = 0 launches nothing. Few tokens on a CUDA device (``use_cluster_kernel``: H200
    T <= 66 at K3's H) run ``attn_res_cluster_kernel``, one token per cluster of 4 or 2
    programs; up to one program an SM with nvb <= 4 ``attn_res_token_kernel``; the others
    the persistent ``attn_res_ring_kernel`` (``select_launch``)."""
    op = "attn_res"
    for what, v in (("prefix_sum", prefix_sum), ("bank", bank), ("cw", cw), ("ow", ow)):
        L.check_dtype(op, what, v, ("bfloat16",))
    t, h = L.check_shape(op, "prefix_sum", prefix_sum, (None, None))
    _, nb, _ = L.check_shape(op, "bank", bank, (t, None, h))
    L.check_shape(op, "cw", cw, (h,))
    L.check_shape(op, "ow", ow, (h,))
    if isinstance(nvb, bool) or not isinstance(nvb, int) or not 0 <= nvb <= MAX_NVB:
        raise ValueError(f"{op}: nvb must be an int in [0, {MAX_NVB}], got {nvb!r}")
    if nvb > nb:
        raise ValueError(f"{op}: nvb = {nvb} bank rows are read but bank has NB = {nb}")
    if write_prefix and nb <= nvb:
        raise ValueError(f"{op}: write_prefix stores bank[:, nvb = {nvb}, :] and needs "
                         f"NB > nvb, got NB = {nb}")
    if h == 0 or h % 8:
        raise ValueError(f"{op}: H = {h} must be a positive multiple of 8 (16-byte vectors)")
    if h > MAX_H:
        raise ValueError(f"{op}: H = {h} is larger than one program's row ({MAX_H})")
    if out is not None:
        L.check_dtype(op, "out", out, ("bfloat16",))
        L.check_shape(op, "out", out, (t, h))
    L.check_contiguous(op, "cw", cw)
    L.check_contiguous(op, "ow", ow)
    tensors = [("prefix_sum", prefix_sum), ("bank", bank), ("cw", cw), ("ow", ow)]
    if out is not None:
        tensors.append(("out", out))
    for what, v in tensors:
        L.check_inner_contiguous(op, what, v)
        L.check_aligned(op, what, v)
    p_s0 = L.strides(prefix_sum)[0] if t > 1 else h
    b_s0 = L.strides(bank)[0] if t > 1 else nb * h
    b_s1 = L.strides(bank)[1] if nb > 1 else h
    o_s0 = (L.strides(out)[0] if t > 1 else h) if out is not None else h
    for what, s in (("prefix_sum row", p_s0), ("bank token", b_s0), ("bank row", b_s1),
                    ("out row", o_s0)):
        if s % 8 or s < 0:
            raise ValueError(f"{op}: the {what} stride ({s}) must be a non-negative multiple "
                             f"of 8 elements (16 bytes)")
    L.check_same_device(op, *tensors)
    for what, s in (("prefix_sum row", p_s0), ("bank token", b_s0), ("bank row", b_s1),
                    ("out row", o_s0)):  # token offsets are int64 in the kernel, strides i32
        L.check_int32_extent(op, f"the {what} stride", s + h)
    # the ring's row index runs up to its stages past the program's last row
    L.check_int32_extent(op, "T * (nvb + 1) rows",
                         t * (nvb + 1) + max(settings.ring_stages, settings.ring_few_stages))
    if out is None:
        import torch

        out = torch.empty((t, h), dtype=torch.bfloat16, device=prefix_sum.device)
    if t == 0:
        return out
    sms = _num_sms(prefix_sum)
    kernel, name, grid, constexprs, num_warps, _, cluster = select_launch(
        t, h, nvb, write_prefix, sms, settings)
    args = (prefix_sum, bank, cw, ow, out, t, h, nvb, p_s0, b_s0, b_s1, o_s0, float(eps))
    gkernel, gname, ggrid, gconstexprs, gwarps, _, _ = generic_launch(t, write_prefix, sms)
    L.launch(kernel, name, grid, args, constexprs, num_warps, cluster=cluster,
             generic=L.Launch(gkernel, gname, ggrid, args, gconstexprs, gwarps))
    return out
