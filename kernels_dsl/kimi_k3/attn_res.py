"""Attention residuals, K3's depth attention over block snapshots (KERNELS.md §4.4), bf16.

Per token t, with rows r = 0..nvb (bank[t, 0..nvb-1, :], then prefix_sum[t, :]), all math in
fp32:

    score_r = sum_h rows_r[h] * cw[h] * rsqrt(mean_h(rows_r^2) + eps)
    p       = softmax_r(score)
    mix     = sum_r p_r * rows_r
    out[t]  = bf16( mix * rsqrt(mean_h(mix^2) + eps) * ow )          (the same eps)

nvb = 0 (K3's layer 0) gives ``out = RMSNorm(prefix_sum) * ow``. With ``write_prefix`` the
prefix row is also copied bit for bit into ``bank[t, nvb, :]`` (the next block snapshot).

This is the plain-load path (no TMA). A program holds a whole row of H (<= BLOCK) elements in
registers as one masked power-of-two tile (H = 7168 -> BLOCK = 8192, 16 warps, 16 elements a
thread) and reads each row once, folding it into the running mix with an online softmax:
running max m, running sum l = sum_r exp(s_r - m), accumulator acc = sum_r exp(s_r - m) * row_r,
rescaled by exp(m_old - m_new) when the max grows. The output norm uses mix = acc / l:

    scale = (1 / l) * rsqrt(sum(acc^2) * (1 / l)^2 / H + eps).

Programs are persistent (grid = min(T, PROGRAMS_PER_SM x SMs); one program per token where the
SM count is unknown): program p handles tokens p, p + grid, ... as ONE sequence of rows
(token by token, bank rows 0..nvb-1 then the prefix row), so its loads run ahead across token
boundaries. The loop is unrolled over PREFETCH row slots: slot k holds rows k, k + PREFETCH,
...; a slot is refilled as soon as its row is folded, so PREFETCH - 1 row loads are in flight
while a row is reduced (at ~125 registers a 16-warp program fills an SM: the slots are the
memory parallelism). A token's first row restarts the softmax state; its last (the prefix)
writes the output. Rows are loaded and folded in sequence order, so each side keeps a
(token, row) cursor advanced by a compare (no integer division by the runtime nvb per row:
the H200 SASS showed ~25 instructions per division, two per row, on every thread), and
mean(x^2) multiplies by 1/H computed once.

Where the time goes (H200, T = 16384, nvb = 8; 36 % of copy bandwidth before the cursors):
the loads are 16-byte vectors. Per row every thread ran ~300 SASS instructions: the bf16
unpacking of the row and of cw, x * x and x * cw as FMUL + FADD, two block reductions (5
shuffles, a shared-memory round trip with two barriers, 16 partials summed by every thread
each), the softmax fold (acc * alpha + x * p, a select for a token's first row), the cursors.
Since then (43.9 % -> 48.2 %): ``fp_fusion`` (the products fold into the sums as fma: 2088 ->
1896 SASS instructions for the loop), the rescale only when the row maximum grows (a uniform
branch: one fma per element on the other rows), both sums in ONE ``kl.reduce`` (one
shared-memory round trip a row instead of two) and PREFETCH 4 (which now fits). Each of
these moved the time by a few percent only, as did folding rows in [2, BLOCK] or [4, BLOCK]
chunks (one reduction per chunk; 47.5-48.7 %, not kept): the kernel is neither bound by the
barriers nor by issue alone. ncu (H200): 25 % occupancy (one 16-warp program of 128 registers a
SM), 7.2 warp cycles per issued instruction (~2.2 of 4 IPC), DRAM 33 %: latency-bound, every
warp in the same phase between barriers, and no second program to fill the gaps (that needs
<= 64 registers a thread). The next step is the spec's design: 1-D bulk copies of whole rows
into a shared-memory ring (many rows in flight per SM, fewer registers) and warp-specialized
producers.
``_row_score``, ``_softmax_fold`` and ``_normalize_out`` are the math such a variant reuses.

Row ring (``attn_res_ring_kernel``, the module knob RING, the default since the H200 sweep:
T = 16384, nvb = 8: 636 us, 86.5 % of copy bandwidth, with 4-warp programs, 3 an SM, 3
stages, against 1145 us for the register slots; the numbers of the other shapes are at
RING_THREAD_ELEMS): the same
persistent programs and row sequence, but row j (row j % (nvb + 1) of token pid + (j // (nvb +
1)) * grid; the bank row or the prefix row through one select of two 16-byte aligned
pointers) is ONE ``kl.bulk_load(row, BLOCK, count=H)`` in ``kl.range(0, n_rows,
num_stages=RING_STAGES)``: the compiler makes it a ring of RING_STAGES 16 KB slots in shared
memory with an mbarrier each, the copies of rows j + 1 .. j + RING_STAGES - 1 in flight (one
elected thread issues each; ``count`` zero-fills the lanes past H) while row j is read from
its slot and folded. The in-flight rows cost shared memory, not registers, so the depth is a
knob (3 to 8 rows) instead of 4 unrolled register slots, and the loop is not unrolled (no
padding rows: every program folds exactly its rows). The (token, row) of j is a division by
the runtime nvb + 1 (the ring recomputes it for the row it issues ahead, which a carried
cursor would not allow): two divisions a row, one of them only in the issuing thread.
Registers (sm_90a, 16 warps): left alone ptxas takes 95-108 (one program an SM: the fp32
accumulator, the row in fp32 kept for the fold across the two-value block reduction whose 32
partials every thread loads at once, cw, the hoisted per-thread addresses and lane masks);
with ``kl.min_programs_per_sm(2)`` (PTX ``.minnctapersm 2``) it fits 64 without a spill, so
two 16-warp programs share an SM with at most 6 stages (shared memory: 2 x (6 x 16 KB + 1
KB)). Smaller programs did better still: 4 warps (64 row elements a thread, 168 registers),
3 an SM, 3 stages; each row's block reduction spans 4 warps instead of 16, and 3 programs
fold 3 rows at once. With WRITE_PREFIX the prefix row's bit copy is stored as soon as it
arrives, before the fold: kept to the token's end it spilled at 4 warps.

Small T (``attn_res_cluster_kernel``): one token per thread-block cluster of S programs
(``_cluster_config``: 4 of 4 warps up to T = 33 on the H200, 2 of 8 warps up to T = 66; the
measurements below were made at S = 8). At T = 1 the persistent kernel is one program
folding nvb + 1 rows one after another (a block reduction each): 10.2 us on the H200 at nvb =
8 against 0.88 us for an empty launch.
In the cluster kernel, program (rank) c of token t owns the columns [c * H/S, (c + 1) * H/S)
(896 at K3 and S = 8, a masked 1024-wide tile) of ALL rows at once: the bank rows as one [RP, SLICE]
tile (RP = the next power of two of nvb, a constexpr; rows past nvb masked) and the prefix
row as a [SLICE] tile of its own (so nvb = 8 takes 8 rows, not 16): every load (ow too) is
issued up front, then the partial sums of squares and dots with cw of the bank rows in one
two-way ``kl.reduce`` over the columns and of the prefix row in another (SPLIT_PREFIX; as
row 0 of one four-way reduction its rows past 0 added zeros: 1444 instructions a thread
instead of ~2000, H200 T = 1 4.32 -> 4.03 us; products folded into the sums by fp_fusion), the
bank rows' two [RP] tiles and the prefix row's [2] summed over the cluster by ONE
``kl.cluster_sum`` (every thread holds them whole, reads them from every program and adds
them in registers; CLUSTER_SUM = False: as the rows of a [4, RP] tile gathered by
``kl.cluster_gather`` and summed over the ranks in a second four-way reduction), the same
scores and softmax in every program (p normalized first: mix = sum_r p_r rows_r, a sum
within the thread: with 2 or 4 warps a thread holds every row of its columns), the slice
of mix, a second ``cluster_sum`` of its partial sum of squares for the output RMSNorm, and
the program's H/S outputs (and, with write_prefix, its slice of the snapshot, stored from
the prefix row as loaded). Four cluster barriers in all; an earlier form (three joins, a
gathered [RP, 2, 2] tile, three splits: 18 block barriers against 4) measured 4.3-4.4 / 3.9
us at 4 warps (nvb 8 / nvb 4 with write_prefix) against 4.1 / 3.4 now. What the 4.1 us
are (bench/results/h200-bench_kimi_k3_attn_res_small_t.md): an empty kernel of 8 programs
0.66 us, 0.86 as a cluster; each cluster barrier ~0.2, each exchange ~0.65; the loads one
DRAM latency; the rest the threads' arithmetic on 64 row elements each. Each exchange's
trailing cluster barrier now waits only before the next exchange or the exit (the compiler
defers it): T = 1 4.03 -> 3.98 us, 3.36 -> 3.21 with write_prefix.
The wrapper picks it when T * S <= CLUSTER_MAX_WAVES x SMs, nvb <= CLUSTER_MAX_ROWS (and H / S
is a multiple of 8).

Few tokens (``attn_res_token_kernel``): past the cluster kernel's T and up to one program an
SM, the same arithmetic with one program holding a token's rows whole (16 warps, the bank
rows as one [RP, 8192] tile; REMAT: the mix converts them from bf16 again, so that 8 rows
fit 128 registers as packed bf16), no exchange: every sum is a block reduction. Where the
persistent kernel folds a program's nvb + 1 rows one after another (a block reduction each),
this one loads them at once; but one SM then runs a token's whole arithmetic (2053
instructions a thread at RP = 8), so it wins at up to 4 bank rows (H200, nvb 4 with
write_prefix: T = 64 7.53 -> 5.64 us, T = 128 8.33 -> 7.35) and the wrapper keeps it there.

Offsets are int64 (token x bank stride passes 2^31 at T ~ 37k with NB = 8, H = 7168). PDL:
the kernel waits for the previous grid before its first load (the spec's CUDA kernel reads the
bank rows before the wait; that is safe only while no kernel in flight writes the bank, which
a library cannot check) and lets the next grid launch when its loop is done.
"""

from __future__ import annotations

from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

#: K3: hidden 7168, at most 8 block snapshots (attn_res_block_size 12 over 61 layers x 2).
HIDDEN = 7168
MAX_NVB = 8


@kiln.jit
def _add_pairs(ss0, dot0, ss1, dot1):
    return ss0 + ss1, dot0 + dot1


@kiln.jit
def _add_quads(a0, b0, c0, d0, a1, b1, c1, d1):
    return a0 + a1, b0 + b1, c0 + c1, d0 + d1


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


@kiln.jit
def _next_row(tok, r, nvb, grid):
    """The cursor (token, row) after (tok, r) in a program's row sequence: rows 0..nvb of a
    token, then the next token (tok + grid). No integer division (nvb is a runtime value)."""
    wrap = r >= nvb
    return kl.where(wrap, tok + grid, tok), kl.where(wrap, 0, r + 1)


@kiln.jit
def _load_row(prefix_ptr, bank_ptr, tok, r, live_row, nvb, p_s0, b_s0, b_s1, cols, mask):
    """Row r of token tok (bank rows 0..nvb-1, then the prefix row), all lanes masked off
    unless live_row (padding rows of the unrolled loop). Each branch loads from its own
    argument pointer, so the 16-byte alignment the specialization proves survives (a pointer
    selected at run time would lose it)."""
    live = mask & live_row
    if r < nvb:
        x = kl.load(bank_ptr + tok * b_s0 + r * b_s1 + cols, mask=live, other=0.0)
    else:
        x = kl.load(prefix_ptr + tok * p_s0 + cols, mask=live, other=0.0)
    return x


@kiln.jit
def _consume_row(x_bf16, tok, r, live_row, m, l, acc, nvb, cw_ptr, bank_ptr, ow_ptr, out_ptr,
                 b_s0, b_s1, o_s0, inv_h, eps, cols, mask, WRITE_PREFIX: kl.constexpr):
    """Folds row r of token tok into (m, l, acc); the token's last row (the prefix) also
    writes its output (and, with WRITE_PREFIX, its bank snapshot). Rows that are not live
    (padding of the unrolled loop, all zero) are folded into a dead state and store
    nothing."""
    x = x_bf16.to(kl.float32)
    cw = kl.load(cw_ptr + cols, mask=mask, other=0.0).to(kl.float32)  # L1-resident, 16 regs saved
    s = _row_score(x, cw, inv_h, eps)
    m, l, acc = _softmax_fold(m, l, acc, x, s, r == 0)
    if (r == nvb) & live_row:  # the prefix row: the token is complete
        if WRITE_PREFIX:  # bit-exact: the bf16 row as loaded
            kl.store(bank_ptr + tok * b_s0 + nvb * b_s1 + cols, x_bf16, mask=mask)
        ow = kl.load(ow_ptr + cols, mask=mask, other=0.0).to(kl.float32)
        kl.store(out_ptr + tok * o_s0 + cols, _normalize_out(acc, l, ow, inv_h, eps), mask=mask)
    return m, l, acc


@kiln.jit(num_warps=16, do_not_specialize=["T", "nvb"], fp_fusion=True)
def attn_res_kernel(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, T, H, nvb, p_s0, b_s0, b_s1,
                    o_s0, eps, BLOCK: kl.constexpr, WRITE_PREFIX: kl.constexpr,
                    PREFETCH: kl.constexpr):
    kl.static_assert(PREFETCH >= 1 and PREFETCH <= 4, "PREFETCH: 1 to 4 row slots")
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    # tokens pid, pid + grid, ... as one sequence of (nvb + 1) rows each
    n_rows = (T - pid + grid - 1) // grid * (nvb + 1)
    cols = kl.arange(0, BLOCK)
    mask = cols < H
    inv_h = 1.0 / H.to(kl.float32)
    kl.pdl_wait()  # prefix_sum (and the bank) may come from the previous kernels
    # PREFETCH row slots, unrolled: slot k holds rows k, k + PREFETCH, ...; a slot is refilled
    # right after its row is folded (no register copies between slots), so while one row is
    # reduced the other PREFETCH - 1 slots' loads are in flight. Rows are loaded and folded
    # in sequence order, each through its own (token, row) cursor.
    ltok = pid.to(kl.int64)  # the load cursor
    lr = 0
    n1 = _load_row(prefix_ptr, bank_ptr, ltok, lr, 0 < n_rows, nvb, p_s0, b_s0, b_s1, cols,
                   mask)
    ltok, lr = _next_row(ltok, lr, nvb, grid)
    if PREFETCH >= 2:
        n2 = _load_row(prefix_ptr, bank_ptr, ltok, lr, 1 < n_rows, nvb, p_s0, b_s0, b_s1, cols,
                       mask)
        ltok, lr = _next_row(ltok, lr, nvb, grid)
    if PREFETCH >= 3:
        n3 = _load_row(prefix_ptr, bank_ptr, ltok, lr, 2 < n_rows, nvb, p_s0, b_s0, b_s1, cols,
                       mask)
        ltok, lr = _next_row(ltok, lr, nvb, grid)
    if PREFETCH >= 4:
        n4 = _load_row(prefix_ptr, bank_ptr, ltok, lr, 3 < n_rows, nvb, p_s0, b_s0, b_s1, cols,
                       mask)
        ltok, lr = _next_row(ltok, lr, nvb, grid)
    ctok = pid.to(kl.int64)  # the fold cursor
    cr = 0
    m = 0.0
    l = 1.0
    acc = kl.zeros((BLOCK,), kl.float32)
    for j in range(0, n_rows, PREFETCH):
        m, l, acc = _consume_row(n1, ctok, cr, j < n_rows, m, l, acc, nvb, cw_ptr, bank_ptr,
                                 ow_ptr, out_ptr, b_s0, b_s1, o_s0, inv_h, eps, cols, mask,
                                 WRITE_PREFIX)
        ctok, cr = _next_row(ctok, cr, nvb, grid)
        n1 = _load_row(prefix_ptr, bank_ptr, ltok, lr, j + PREFETCH < n_rows, nvb, p_s0, b_s0,
                       b_s1, cols, mask)
        ltok, lr = _next_row(ltok, lr, nvb, grid)
        if PREFETCH >= 2:
            m, l, acc = _consume_row(n2, ctok, cr, j + 1 < n_rows, m, l, acc, nvb, cw_ptr,
                                     bank_ptr, ow_ptr, out_ptr, b_s0, b_s1, o_s0, inv_h, eps,
                                     cols, mask, WRITE_PREFIX)
            ctok, cr = _next_row(ctok, cr, nvb, grid)
            n2 = _load_row(prefix_ptr, bank_ptr, ltok, lr, j + 1 + PREFETCH < n_rows, nvb, p_s0,
                           b_s0, b_s1, cols, mask)
            ltok, lr = _next_row(ltok, lr, nvb, grid)
        if PREFETCH >= 3:
            m, l, acc = _consume_row(n3, ctok, cr, j + 2 < n_rows, m, l, acc, nvb, cw_ptr,
                                     bank_ptr, ow_ptr, out_ptr, b_s0, b_s1, o_s0, inv_h, eps,
                                     cols, mask, WRITE_PREFIX)
            ctok, cr = _next_row(ctok, cr, nvb, grid)
            n3 = _load_row(prefix_ptr, bank_ptr, ltok, lr, j + 2 + PREFETCH < n_rows, nvb, p_s0,
                           b_s0, b_s1, cols, mask)
            ltok, lr = _next_row(ltok, lr, nvb, grid)
        if PREFETCH >= 4:
            m, l, acc = _consume_row(n4, ctok, cr, j + 3 < n_rows, m, l, acc, nvb, cw_ptr,
                                     bank_ptr, ow_ptr, out_ptr, b_s0, b_s1, o_s0, inv_h, eps,
                                     cols, mask, WRITE_PREFIX)
            ctok, cr = _next_row(ctok, cr, nvb, grid)
            n4 = _load_row(prefix_ptr, bank_ptr, ltok, lr, j + 3 + PREFETCH < n_rows, nvb, p_s0,
                           b_s0, b_s1, cols, mask)
            ltok, lr = _next_row(ltok, lr, nvb, grid)
    kl.pdl_launch_dependents()


@kiln.jit(num_warps=16, do_not_specialize=["T", "nvb"], fp_fusion=True)
def attn_res_ring_kernel(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, T, H, nvb, p_s0, b_s0,
                         b_s1, o_s0, eps, BLOCK: kl.constexpr, WRITE_PREFIX: kl.constexpr,
                         STAGES: kl.constexpr, PROGRAMS: kl.constexpr):
    """The persistent kernel with its rows in a shared-memory ring (module docstring, "Row
    ring"): row j of the program's sequence is row r = j % (nvb + 1) of token pid + (j //
    (nvb + 1)) * grid, one ``kl.bulk_load`` of H elements into a BLOCK tile in a
    ``kl.range(..., num_stages=STAGES)`` loop, so STAGES - 1 rows are in flight in shared
    memory (not in registers) while row j is folded. PROGRAMS programs fit an SM (registers
    capped by ``kl.min_programs_per_sm``)."""
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


#: programs per token in the small-T kernel (a thread-block cluster; 8 is the portable
#: maximum, 16 needs the non-portable cluster size the compiler allows) where the T x
#: CLUSTER_SIZE programs fit one an SM, else CLUSTER_MANY_SIZE (``_cluster_config``)
CLUSTER_SIZE, CLUSTER_MANY_SIZE = 4, 2


@kiln.jit
def _bf16_bits_to_f32(x):
    """x (bf16) as f32 by its bits (x << 16): the value of ``x.to(kl.float32)`` by other
    instructions, so that a second conversion of the same tile is not merged with the first
    (the f32 tile is not kept live between them: the packed bf16 registers are)."""
    return (x.to(kl.int16, bitcast=True).to(kl.int32) << 16).to(kl.float32, bitcast=True)


@kiln.jit
def _attn_res_token(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, tok, cols, cmask, H, nvb,
                    p_s0, b_s0, b_s1, o_s0, eps, RP: kl.constexpr, WRITE_PREFIX: kl.constexpr,
                    EXCHANGE: kl.constexpr, REMAT: kl.constexpr, SPLIT_PREFIX: kl.constexpr,
                    CS: kl.constexpr = 1):
    """Token ``tok`` at the columns ``cols`` (lanes ``cmask``) of its nvb bank rows, as one
    [RP, len(cols)] tile, and of its prefix row (module docstring, "Small T"). EXCHANGE: 0 =
    the columns are the whole row (``attn_res_token_kernel``); 1 = a cluster's slice, its
    sums added over the cluster by ``kl.cluster_sum``; 2 = by ``kl.cluster_gather``. REMAT:
    the mix converts the bank rows from bf16 again (``_bf16_bits_to_f32``) instead of keeping
    their f32 values live across the reductions. CS: the cluster's programs (EXCHANGE 2)."""
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
    if SPLIT_PREFIX:
        # The partial sums of squares and dots with cw of every bank row in one two-way
        # reduction and of the prefix row in another (the products fold into the sums as
        # fma with fp_fusion); the prefix's as row 0 of [RP] tiles (zero elsewhere).
        ss_b, dot_b = kl.reduce((xb * xb, xb * cw[None, :]), 1, _add_pairs)
        ss_p1, dot_p1 = kl.reduce((xp * xp, xp * cw), 0, _add_pairs)
        ss_p = kl.where(rows == 0, ss_p1, 0.0)
        dot_p = kl.where(rows == 0, dot_p1, 0.0)
    else:
        # ... and of the prefix row (on row 0 of the [RP] results, zero elsewhere), in ONE
        # four-way reduction (its rows past 0 add zeros).
        first = r2 == 0
        ss_b, dot_b, ss_p, dot_p = kl.reduce(
            (xb * xb, xb * cw[None, :], kl.where(first, (xp * xp)[None, :], 0.0),
             kl.where(first, (xp * cw)[None, :], 0.0)), 1, _add_quads)
    if EXCHANGE == 1:
        # ... summed over the cluster where every thread holds them: the [RP] tiles and the
        # prefix row's two sums (row 0, as a [2] tile) are whole in every thread, and
        # kl.cluster_sum reads each from every rank and adds them in registers
        two = kl.arange(0, 2)
        pre = kl.where(two == 0, kl.sum(ss_p, axis=0), kl.sum(dot_p, axis=0))
        ss_b, dot_b, pre = kl.cluster_sum((ss_b, dot_b, pre))
        ss_p = kl.where(two == 0, pre, 0.0)
        dot_p = kl.where(two == 1, pre, 0.0)
    if EXCHANGE == 2:
        # ... as the rows of one [4, RP] tile (selects of broadcasts: no data moves between
        # threads), gathered over the cluster as [S * 4, RP] and summed over the ranks per
        # row of the four in one more four-way reduction (the ranks then lie on lanes).
        q = kl.arange(0, 4)[:, None]
        part = kl.where(q == 0, ss_b[None, :], kl.where(q == 1, dot_b[None, :], kl.where(
            q == 2, ss_p[None, :], dot_p[None, :])))
        g = kl.reshape(kl.cluster_gather(part), (CS * 4, RP))
        k = kl.arange(0, CS * 4)[:, None] % 4
        ss_b, dot_b, ss_p, dot_p = kl.reduce(
            (kl.where(k == 0, g, 0.0), kl.where(k == 1, g, 0.0), kl.where(k == 2, g, 0.0),
             kl.where(k == 3, g, 0.0)), 0, _add_quads)
    ss_p = kl.sum(ss_p, axis=0)  # the one nonzero element: the prefix row's sums
    dot_p = kl.sum(dot_p, axis=0)
    s_b = kl.where(rows < nvb, dot_b * kl.rsqrt(ss_b * inv_h + eps), -float("inf"))
    s_p = dot_p * kl.rsqrt(ss_p * inv_h + eps)
    m = kl.maximum(kl.max(s_b, axis=0), s_p)
    p_b = kl.exp(s_b - m)  # the padding rows: exp(-inf) = 0
    p_p = kl.exp(s_p - m)
    inv = 1.0 / (kl.sum(p_b, axis=0) + p_p)  # one division
    if REMAT:
        xb = _bf16_bits_to_f32(bank)
    mix = kl.sum(xb * (p_b * inv)[:, None], axis=0) + xp * (p_p * inv)  # zero when masked
    ssm = kl.full((1,), 0.0, kl.float32) + kl.sum(mix * mix, axis=0)
    if EXCHANGE == 1:
        ssm = kl.cluster_sum(ssm)
    if EXCHANGE == 2:
        ssm = kl.reshape(kl.cluster_gather(ssm), (CS,))
    ssm = kl.sum(ssm, axis=0)
    kl.store(out_ptr + tok * o_s0 + cols, mix * kl.rsqrt(ssm * inv_h + eps) * ow, mask=cmask)
    if WRITE_PREFIX:  # bit-exact: the bf16 row as loaded
        kl.store(bank_ptr + tok * b_s0 + nvb * b_s1 + cols, prefix, mask=cmask)
    kl.pdl_launch_dependents()


@kiln.jit(num_warps=4, cluster=(CLUSTER_SIZE, 1, 1), do_not_specialize=["T", "nvb"],
          fp_fusion=True)
def attn_res_cluster_kernel(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, T, H, nvb, p_s0,
                            b_s0, b_s1, o_s0, eps, SLICE: kl.constexpr, RP: kl.constexpr,
                            WRITE_PREFIX: kl.constexpr, CLUSTER_SUM: kl.constexpr = True,
                            SPLIT_PREFIX: kl.constexpr = True, CS: kl.constexpr = CLUSTER_SIZE):
    """Token cluster_id(0); this program's columns [rank * H/S, (rank + 1) * H/S) of its nvb
    bank rows as one [RP, SLICE] tile and of its prefix row (module docstring). T is unused
    (grid = T * S). CS: the cluster size S it is compiled for (the launch's cluster shape)."""
    tok = kl.cluster_id(0).to(kl.int64)
    # the slice width H / S, written as a multiple of 8 (H % 8S == 0, the wrapper checks) so
    # that every program's first column keeps the 16-byte alignment of the rows
    sw = H // (8 * kl.cluster_size()) * 8
    lane = kl.arange(0, SLICE)
    _attn_res_token(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, tok,
                    kl.cluster_cta_rank() * sw + lane, lane < sw, H, nvb, p_s0, b_s0, b_s1,
                    o_s0, eps, RP, WRITE_PREFIX, 1 if CLUSTER_SUM else 2, False, SPLIT_PREFIX, CS)


@kiln.jit(num_warps=16, do_not_specialize=["T", "nvb"], fp_fusion=True)
def attn_res_token_kernel(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr, T, H, nvb, p_s0, b_s0,
                          b_s1, o_s0, eps, BLOCK: kl.constexpr, RP: kl.constexpr,
                          WRITE_PREFIX: kl.constexpr, REMAT: kl.constexpr = True,
                          SPLIT_PREFIX: kl.constexpr = True):
    """Token program_id(0) whole in one program: its nvb bank rows as one [RP, BLOCK] tile
    and its prefix row (module docstring, "Few tokens"). T is unused (grid = T)."""
    cols = kl.arange(0, BLOCK)
    _attn_res_token(prefix_ptr, bank_ptr, cw_ptr, ow_ptr, out_ptr,
                    kl.program_id(0).to(kl.int64), cols, cols < H, H, nvb, p_s0, b_s0, b_s1,
                    o_s0, eps, RP, WRITE_PREFIX, 0, REMAT, SPLIT_PREFIX)


#: row elements a thread holds (16: two 16-byte vectors, 16 warps at H = 7168; 32: 8 warps,
#: half the per-row scalar work and reductions per element, ~1.5x the registers a thread).
#: bench/kimi_k3/run.py --sweep times 16 and 32.
THREAD_ELEMS = 16


def _config(h: int, thread_elems: Optional[int] = None) -> tuple:
    """(BLOCK, num_warps): the row in one tile, thread_elems (default THREAD_ELEMS) elements
    a thread, 1 to 16 warps."""
    block = 1 << max(3, (h - 1).bit_length())
    return block, min(16, max(1, block // (32 * (thread_elems or THREAD_ELEMS))))


BLOCK, NUM_WARPS = _config(HIDDEN)
#: row slots of the unrolled loop (PREFETCH - 1 rows of 16 KB in flight while one is reduced);
#: with fp_fusion and one reduction a row, 4 slots fit both variants at 16 warps without
#: spills (sm_90a: 116 / 128 registers at 3 / 4 slots). bench/kimi_k3/run.py --sweep re-times
#: 2 to 4 (H200, T = 16384, nvb = 8: 4 -> 48.2 % of copy bandwidth, 3 -> 45.9 %, 2 -> 43.9 %;
#: bench/results/h200-bench_kimi_k3_sweep.md).
PREFETCH = 4
#: ... and where every program owns one token (T at most the grid: few tokens), the row
#: count is nvb + 1 and the unrolled loop pads it to a multiple of the slots: nvb = 8 takes
#: 12 row steps for 9 rows at 4 slots, 9 at 3 (H200 T = 1: 12.1 us at 4, 10.2 at 3). Such
#: launches use whichever of PREFETCH and ONE_TOKEN_PREFETCH pads less (ties: PREFETCH).
ONE_TOKEN_PREFETCH = 3
#: persistent programs per SM (one 16-warp program of ~125 registers fits an SM); 0: one
#: program per token.
PROGRAMS_PER_SM = 1
#: the row-ring variant (``attn_res_ring_kernel``: rows bulk-copied into a shared-memory ring
#: of RING_STAGES slots, module docstring "Row ring") instead of the register slots of
#: ``attn_res_kernel``; bench/kimi_k3/run.py --sweep times both. The bundle holds the kernels
#: the wrapper launches (AOT_SPECIALIZATIONS below).
RING = True
#: The ring's programs where the tokens fill its grid (T >= RING_PROGRAMS_PER_SM x SMs):
#: RING_THREAD_ELEMS row elements a thread (64: 4 warps at H = 7168), RING_STAGES slots
#: (RING_STAGES - 1 rows of 16 KB in flight while one is folded), RING_PROGRAMS_PER_SM
#: programs an SM, also compiled in (``kl.min_programs_per_sm``; it caps the registers: 16
#: warps x 2 -> 64, 4 warps x 3 -> 166, no spills) and needing that many x (RING_STAGES x 16
#: KB + 1 KB) of shared memory. H200 sweep (T = 16384, nvb = 8; register slots: 1145 us,
#: 48.0 % of copy bandwidth): 16 warps x 2 an SM 956-980 us at 3 to 6 stages (one an SM:
#: 1166-1175, whatever the stages); 8 warps x 2 720-734 us at 3 to 6 stages, x 3 755-796 at 3
#: to 4 (more do not fit in shared memory); 4 warps x 3 636 us at 3 stages (86.5 %), 641 at 4;
#: 4 warps x 4 (registers capped to 128: spills) 1471-1666. Smaller programs make each row's
#: block reduction cheaper and let more rows be folded at once. 0 programs: one per token.
RING_THREAD_ELEMS, RING_STAGES, RING_PROGRAMS_PER_SM = 64, 3, 3
#: ... and where T <= SMs (above the cluster kernel's few tokens: every program owns one
#: token, whose nvb + 1 rows are its whole latency): 8-warp programs (32 elements a thread),
#: 3 stages, 2 an SM. H200 (nvb 8 / nvb 4 with write_prefix, us): T = 34: 10.3 / 7.1 (16
#: warps x 4 stages x 2, the former choice: 11.6 / 8.1; 4 warps x 3 x 3: 11.3 / 8.0); T = 64:
#: 10.6 / 7.2 (11.9 / 8.6); T = 128: 11.3 / 8.2 (12.8 / 9.4; 4 warps: 12.1 / 9.1). From T = 200
#: the RING_* programs are as fast or faster (T = 200: 14.7 against 15.4; T = 395: 20.3
#: against 27.5), bench/results/h200-bench_kimi_k3_attn_res_small_t.md.
RING_FEW_THREAD_ELEMS, RING_FEW_STAGES, RING_FEW_PROGRAMS_PER_SM = 32, 3, 2


def ring_config(t: int, num_sms: Optional[int]) -> tuple:
    """(thread elements, stages, programs an SM) of the ring kernel for T tokens: the
    RING_FEW_* programs where T <= SMs (with an SM count), else the RING_* ones."""
    if num_sms and t <= num_sms:
        return RING_FEW_THREAD_ELEMS, RING_FEW_STAGES, RING_FEW_PROGRAMS_PER_SM
    return RING_THREAD_ELEMS, RING_STAGES, RING_PROGRAMS_PER_SM

_SIGNATURE = {"prefix_ptr": "*bf16", "bank_ptr": "*bf16", "cw_ptr": "*bf16", "ow_ptr": "*bf16",
              "out_ptr": "*bf16", "T": "i32", "H": "i32", "nvb": "i32", "p_s0": "i32",
              "b_s0": "i32", "b_s1": "i32", "o_s0": "i32", "eps": "f32"}
#: 16-byte pointers; H and the strides multiples of 8 elements (16 bytes), as the wrapper checks
_DIVISIBILITY = {"prefix_ptr": 16, "bank_ptr": 16, "cw_ptr": 16, "ow_ptr": 16, "out_ptr": 16,
                 "H": 8, "p_s0": 8, "b_s0": 8, "b_s1": 8, "o_s0": 8}


def _ring_kernel_name(write_prefix: bool, stages: int, programs: int, warps: int) -> str:
    return ("attn_res_ring" + ("_write_prefix" if write_prefix else "")
            + f"_s{stages}_p{programs}_w{warps}")


def _kernel_name(write_prefix: bool, prefetch: int = PREFETCH) -> str:
    name = "attn_res_write_prefix" if write_prefix else "attn_res"
    return name if prefetch == PREFETCH else f"{name}_prefetch{prefetch}"


def prefetch_for(t: int, grid: int, nvb: int) -> int:
    """The row slots of a launch: PREFETCH, or where every program owns one token
    (t <= grid) the one of PREFETCH and ONE_TOKEN_PREFETCH that pads nvb + 1 rows less."""
    if t > grid:
        return PREFETCH
    return min((PREFETCH, ONE_TOKEN_PREFETCH), key=lambda p: -(nvb + 1) % p)


def persistent_specs(ring: bool) -> list:
    """The AOT specializations of the persistent kernel the wrapper launches: the ring (its
    two configurations, ``ring_config``) or the register slots (at PREFETCH and
    ONE_TOKEN_PREFETCH)."""
    if ring:
        configs = dict.fromkeys([
            (RING_THREAD_ELEMS, RING_STAGES, max(1, RING_PROGRAMS_PER_SM)),
            (RING_FEW_THREAD_ELEMS, RING_FEW_STAGES, max(1, RING_FEW_PROGRAMS_PER_SM))])
        return [Spec(attn_res_ring_kernel,
                     name=_ring_kernel_name(wp, stages, programs, _config(HIDDEN, elems)[1]),
                     signature=_SIGNATURE,
                     constexprs={"BLOCK": BLOCK, "WRITE_PREFIX": wp, "STAGES": stages,
                                 "PROGRAMS": programs},
                     divisibility=_DIVISIBILITY, num_warps=_config(HIDDEN, elems)[1])
                for elems, stages, programs in configs for wp in (False, True)]
    return [Spec(attn_res_kernel, name=_kernel_name(wp, prefetch), signature=_SIGNATURE,
                 constexprs={"BLOCK": BLOCK, "WRITE_PREFIX": wp, "PREFETCH": prefetch},
                 divisibility=_DIVISIBILITY, num_warps=NUM_WARPS)
            for prefetch in (PREFETCH, ONE_TOKEN_PREFETCH) for wp in (False, True)]


AOT_SPECIALIZATIONS = persistent_specs(RING)

#: The small-T cluster kernel runs when T x S <= CLUSTER_MAX_WAVES x SMs (S programs a token,
#: ``_cluster_config``; H200: T <= 66): its T clusters of small programs then run at once,
#: where the persistent kernel's T programs are each one latency-bound chain of nvb + 1 row
#: folds (10.4 us at T = 1). H200, nvb 8 / nvb 4 with write_prefix, with 8 programs a token
#: (2 warps): T = 33: 7.16 / 5.52 us (ring: 10.0 / 7.1); T = 48: 8.06 / 5.98 (10.2 / 7.0);
#: T = 64: 12.2 / 8.7 (10.4 / 7.5); with 2 programs of 8 warps T = 64 7.33 / 5.65 (default
#: then: ring 10.59, token kernel 5.71), T = 128 13.46 / 10.23 (ring 11.26 / token 7.11):
#: one wave. 0: never. Without an SM count (not a CUDA tensor) the persistent kernel runs.
CLUSTER_MAX_WAVES = 1
#: ... and when the nvb bank rows fit CLUSTER_MAX_ROWS. The prefix row is a tile of its own, so
#: nvb = 8 takes 8 bank rows, not 16 padded ones: H200 T = 1, nvb = 8: 6.19 us (the persistent
#: kernel: 9.83; with the prefix as row nvb of 16: 12.6), nvb = 4: 5.70 -> 5.39 us
#: (bench/results/h200-bench_kimi_k3_sweep_attn_res_t1.md).
CLUSTER_MAX_ROWS = 8
#: warps of a cluster kernel program: CLUSTER_WARPS where the T x CLUSTER_SIZE programs fit
#: one an SM, else CLUSTER_MANY_WARPS (with CLUSTER_MANY_SIZE programs a token). H200
#: (bench/results/h200-bench_kimi_k3_attn_res_small_t_sizes.md; nvb 8 / nvb 4 with
#: write_prefix, us): T = 1: 4 programs x 4 warps 3.85 / 3.12, 8 x 4 3.93 / 3.20, 8 x 2 3.97
#: / 3.14, 16 x 2 4.28 / 3.37, 16 x 4 5.15 / 4.27, 4 x 8 4.46 / 3.52, 2 x 8 4.92 / 3.77; T =
#: 8: 4 x 4 3.89 / 3.21, 8 x 4 4.03 / 3.26; T = 33: 4 x 4 6.24 / 4.87, 2 x 8 6.39 / 4.98, 8 x
#: 2 6.17 / 5.34; T = 64: 2 x 8 7.33 / 5.65, 4 x 4 10.73 / 6.06, 8 x 2 10.70 / 8.16 (larger
#: clusters of many tokens do not all fit at once). Earlier, 8 programs a token: fewer warps
#: are faster: each thread then holds every
#: bank row of its columns (the row sums of the mix stay in the thread) and the block
#: reductions span fewer warps. H200 T = 1, nvb 8 / nvb 4 with write_prefix (with
#: CLUSTER_SUM; bench/results/h200-bench_kimi_k3_attn_res_small_t.md): 2 warps 4.95 / 3.36
#: us, 4 warps 4.11 / 3.40, 8 warps 5.86 / 4.80; T = 33: 2 warps 7.19 / 5.54, 4 warps 11.28 /
#: 6.05 (234 registers a thread leave room for 2 programs an SM, not 3). With the gather
#: exchange, 16 warps measured 11.8 / 10.4 at T = 1.
CLUSTER_WARPS, CLUSTER_MANY_WARPS = 4, 8
#: the cluster exchanges by ``kl.cluster_sum`` of the partial sums (each thread reads its
#: own values from every program and adds them in registers) instead of ``kl.cluster_gather``
#: + a reduction over the ranks (spread over lanes: 160 more shuffles at RP = 8). H200, nvb 8
#: / nvb 4 with write_prefix: T = 1 4.09 / 3.38 us against 4.29 / 3.55; T = 33 (2 warps)
#: 7.19 / 5.57 against 7.43 / 5.60 (there ptxas spills a word at RP = 8: 128 row elements a
#: thread and the 8 ranks' partials in flight). sm_90a registers at RP = 8: 234 (4 warps),
#: 255 (2 warps).
CLUSTER_SUM = True
#: the few-token kernels (cluster, token) reduce the prefix row's sums by a reduction of
#: their own instead of as row 0 of four [RP, SLICE] operands whose other rows add zeros
#: (sm_90a, RP = 8, the instructions up to the exit: cluster kernel 4 warps 1444 against
#: ~2000; token kernel 16 warps 2053 against 2867)
SPLIT_PREFIX = True


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _cluster_config(h: int, nvb: int, t: int = 1, num_sms: Optional[int] = None) -> tuple:
    """(S, SLICE, RP, num_warps) of the cluster kernel: CLUSTER_SIZE programs a token on
    CLUSTER_WARPS or, where T clusters of them do not fit one program an SM,
    CLUSTER_MANY_SIZE on CLUSTER_MANY_WARPS; a program's H / S columns in a power-of-two
    tile, the nvb bank rows padded to a power of two (at least one)."""
    few = not num_sms or t * CLUSTER_SIZE <= num_sms
    size, warps = ((CLUSTER_SIZE, CLUSTER_WARPS) if few
                   else (CLUSTER_MANY_SIZE, CLUSTER_MANY_WARPS))
    return size, _pow2(h // size), _pow2(max(nvb, 1)), warps


def use_cluster_kernel(t: int, h: int, nvb: int, num_sms: Optional[int]) -> bool:
    """Whether T tokens of H (nvb bank rows) go to the cluster kernel: few tokens on a known
    device (T x S <= CLUSTER_MAX_WAVES x SMs), at most CLUSTER_MAX_ROWS bank rows, and an H
    that splits into S slices of 16-byte vectors."""
    size = _cluster_config(h, nvb, t, num_sms)[0]
    return (bool(num_sms) and CLUSTER_MAX_WAVES > 0
            and t * size <= CLUSTER_MAX_WAVES * num_sms
            and nvb <= CLUSTER_MAX_ROWS and h % (8 * size) == 0)


def _cluster_kernel_name(write_prefix: bool, rp: int, warps: int, size: int = 8) -> str:
    return (f"attn_res_cluster_rp{rp}_w{warps}" + ("" if size == 8 else f"_c{size}")
            + ("_write_prefix" if write_prefix else ""))


#: one specialization per padded bank row count (nvb 0..1 -> 1 row, 2 -> 2, 3..4 -> 4, 5..8 -> 8)
_CLUSTER_ROWS = tuple(1 << i for i in range(CLUSTER_MAX_ROWS.bit_length()))

AOT_SPECIALIZATIONS += [
    Spec(attn_res_cluster_kernel, name=_cluster_kernel_name(wp, rp, warps, size),
         signature=_SIGNATURE,
         constexprs={"SLICE": _pow2(HIDDEN // size), "RP": rp, "WRITE_PREFIX": wp,
                     "CLUSTER_SUM": CLUSTER_SUM, "SPLIT_PREFIX": SPLIT_PREFIX, "CS": size},
         divisibility=_DIVISIBILITY, num_warps=warps, cluster=(size, 1, 1))
    for rp in _CLUSTER_ROWS
    for size, warps in dict.fromkeys(((CLUSTER_SIZE, CLUSTER_WARPS),
                                      (CLUSTER_MANY_SIZE, CLUSTER_MANY_WARPS)))
    for wp in (False, True)
]

#: The token kernel (``attn_res_token_kernel``, module docstring "Few tokens") runs where the
#: cluster kernel does not and T <= TOKEN_MAX_WAVES x SMs (one program an SM: TOKEN_MAX_WAVES
#: waves), nvb <= TOKEN_MAX_ROWS and H <= TOKEN_MAX_H; 0 waves: never. H200 (us; the kernel
#: the wrapper picked before / the token kernel, 16 warps, REMAT off; nvb 4 with write_prefix):
#: T = 33 5.44 / 5.22, T = 64 7.53 / 5.64, T = 128 8.33 / 7.35, T = 200 11.31 / 12.36 (two
#: waves); at nvb 8 (REMAT on) T = 64 10.59 / 9.53 but T = 33 6.57 / 8.89 and T = 128 11.29 /
#: 11.83: one SM folds 9 rows of 8192 lanes (2053 instructions a thread up to the exit, 16
#: warps), so it keeps to 4 bank rows
#: (bench/results/h200-bench_kimi_k3_attn_res_small_t_token.md).
TOKEN_MAX_WAVES, TOKEN_MAX_ROWS, TOKEN_MAX_H = 1, 4, 8192
#: its warps (16: 16 elements of each row a thread at H = 7168) and whether the mix converts
#: the bank rows from bf16 again (REMAT: at 8 rows, 128 row elements as 64 packed bf16
#: registers; 4 rows fit as f32: H200 T = 64, nvb 4: 5.64 us without, 5.93 with)
TOKEN_WARPS, TOKEN_REMAT = 16, False


def use_token_kernel(t: int, h: int, nvb: int, num_sms: Optional[int]) -> bool:
    """Whether T tokens of H (nvb bank rows) go to the token kernel (when not to the cluster
    kernel): at most TOKEN_MAX_WAVES waves of one program an SM on a known device, at most
    TOKEN_MAX_ROWS bank rows, H at most TOKEN_MAX_H."""
    return (bool(num_sms) and t <= TOKEN_MAX_WAVES * num_sms and nvb <= TOKEN_MAX_ROWS
            and h <= TOKEN_MAX_H)


def _token_kernel_name(write_prefix: bool, rp: int, warps: int, remat: bool) -> str:
    return (f"attn_res_token_rp{rp}_w{warps}" + ("_remat" if remat else "")
            + ("_write_prefix" if write_prefix else ""))


AOT_SPECIALIZATIONS += [
    Spec(attn_res_token_kernel, name=_token_kernel_name(wp, rp, TOKEN_WARPS, TOKEN_REMAT),
         signature=_SIGNATURE,
         constexprs={"BLOCK": BLOCK, "RP": rp, "WRITE_PREFIX": wp, "REMAT": TOKEN_REMAT,
                     "SPLIT_PREFIX": SPLIT_PREFIX},
         divisibility=_DIVISIBILITY, num_warps=TOKEN_WARPS)
    for rp in _CLUSTER_ROWS if rp <= _pow2(max(TOKEN_MAX_ROWS, 1)) for wp in (False, True)
]

#: the SM count of a tensor's CUDA device (None otherwise); a module global, so that tests can
#: stand in for a device
_num_sms = L.num_sms


def grid_size(t: int, num_sms: Optional[int], per_sm: Optional[int] = None) -> int:
    """Persistent programs for T tokens: min(T, per_sm x SMs) (per_sm: PROGRAMS_PER_SM by
    default), or T (one program per token) without an SM count or with per_sm = 0."""
    per_sm = PROGRAMS_PER_SM if per_sm is None else per_sm
    if not num_sms or per_sm <= 0:
        return t
    return min(t, per_sm * num_sms)


def attn_res(prefix_sum: Any, bank: Any, cw: Any, ow: Any, out: Optional[Any] = None,
             nvb: int = 1, eps: float = 1e-6, write_prefix: bool = False) -> Any:
    """Depth attention over ``nvb`` bank rows and the prefix row, then RMSNorm with ``ow``
    (module docstring). prefix_sum bf16 [T, H], bank bf16 [T, NB, H], cw and ow bf16 [H]
    (contiguous), out bf16 [T, H] (allocated when None); last dimensions contiguous, row
    strides and H multiples of 8 (16-byte vectors), 16-byte aligned, H <= 16384 (K3: 7168);
    0 <= nvb <= 8; ``write_prefix`` needs NB > nvb. Returns out. Every check raises before any
    launch; T = 0 launches nothing. Few tokens on a CUDA device (``use_cluster_kernel``: H200
    T <= 66 at K3's H) run ``attn_res_cluster_kernel``, one token per cluster of 4 or 2
    programs; up to one program an SM with nvb <= 4 ``attn_res_token_kernel``; the others
    the persistent kernel (``attn_res_ring_kernel`` with RING)."""
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
    if h > 16384:
        raise ValueError(f"{op}: H = {h} is larger than one program's row (16384)")
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
    L.check_int32_extent(op, "T * (nvb + 1) rows",
                         t * (nvb + 1) + max(2 * PREFETCH, RING_STAGES))
    if out is None:
        import torch

        out = torch.empty((t, h), dtype=torch.bfloat16, device=prefix_sum.device)
    if t == 0:
        return out
    num_sms = _num_sms(prefix_sum)
    args = (prefix_sum, bank, cw, ow, out, t, h, nvb, p_s0, b_s0, b_s1, o_s0, float(eps))
    if use_cluster_kernel(t, h, nvb, num_sms):
        size, slice_, rp, num_warps = _cluster_config(h, nvb, t, num_sms)
        L.launch(attn_res_cluster_kernel,
                 _cluster_kernel_name(bool(write_prefix), rp, num_warps, size), (t * size,), args,
                 {"SLICE": slice_, "RP": rp, "WRITE_PREFIX": bool(write_prefix),
                  "CLUSTER_SUM": CLUSTER_SUM, "SPLIT_PREFIX": SPLIT_PREFIX, "CS": size},
                 num_warps, cluster=(size, 1, 1))
        return out
    if use_token_kernel(t, h, nvb, num_sms):
        rp = _pow2(max(nvb, 1))
        L.launch(attn_res_token_kernel,
                 _token_kernel_name(bool(write_prefix), rp, TOKEN_WARPS, TOKEN_REMAT), (t,), args,
                 {"BLOCK": _pow2(h), "RP": rp, "WRITE_PREFIX": bool(write_prefix),
                  "REMAT": TOKEN_REMAT, "SPLIT_PREFIX": SPLIT_PREFIX}, TOKEN_WARPS)
        return out
    if RING:
        elems, stages, per_sm = ring_config(t, num_sms)
        block, num_warps = _config(h, elems)
        grid = grid_size(t, num_sms, per_sm)
        programs = max(1, per_sm)
        L.launch(attn_res_ring_kernel,
                 _ring_kernel_name(bool(write_prefix), stages, programs, num_warps), (grid,),
                 args, {"BLOCK": block, "WRITE_PREFIX": bool(write_prefix), "STAGES": stages,
                        "PROGRAMS": programs}, num_warps)
        return out
    block, num_warps = _config(h)
    grid = grid_size(t, num_sms)
    prefetch = prefetch_for(t, grid, nvb)
    L.launch(attn_res_kernel, _kernel_name(bool(write_prefix), prefetch), (grid,), args,
             {"BLOCK": block, "WRITE_PREFIX": bool(write_prefix), "PREFETCH": prefetch},
             num_warps)
    return out
