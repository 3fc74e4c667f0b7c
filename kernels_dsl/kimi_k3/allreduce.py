"""One-shot push all-reduce of bf16 over a symmetric workspace, fused with a residual add:

    out = bf16( sum_{r = 0 .. world-1} f32(x_r) )          (fp32 sum in rank order)
    out = bf16( f32(out) + f32(residual) )                 (with a residual)

written in place into ``x`` (or into ``out``). Each rank pushes its x into its slot of every
peer's workspace (unicast stores over CUDA IPC mappings; no NVLink multicast), then polls the
world slots of its own workspace, sums, and zeroes them again. The protocol is the one of
docs/kernels/collectives.md: Lamport empty markers (a slot of zeros is empty; a zero bf16x2
word is pushed as 0x8000, a -0.0 in its low element, which the sum does not see),
per-program phase counters choosing one of two halves of the workspace (flipped at the end of
each call), the last program flipping the counters past the grid (the bumper) so
that calls with different grids stay in step, and a descriptor word a program that carries
the call's size, so that ranks that disagree on it fail instead of reading each other's
garbage. A wait that times out, or a size mismatch, sets the workspace's status word, which
``check`` reports (and ``reset`` clears, with the rest of the workspace).

The kernel works on 32-bit words (bf16 pairs): x, residual and out are viewed as int32.

Specification: docs/kernels/collectives.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

#: Programs a call may have (its phase counters and descriptor words).
MAX_PROGRAMS = 1024
#: Header words of a workspace: the counters, the status word, padding to 256 bytes.
HEADER_WORDS = MAX_PROGRAMS + 64
STATUS_WORD = MAX_PROGRAMS
#: A slot's pitch is a multiple of this many words (64 bytes).
SLOT_ALIGN_WORDS = 16
#: Status bits.
STATUS_TIMEOUT = 1
STATUS_SIZE_MISMATCH = 2
#: The word kl.nonzero_marker stores for a zero word (bf16 -0.0, +0.0).
NONZERO_MARKER = 0x8000
#: Programs of each kernel an SM holds at once (the registers are capped to fit): a call's
#: programs wait for each other's peers, so the resident ones must not wait on ones that
#: cannot start (the world emulated on one GPU runs world calls side by side).
PROGRAMS_PER_SM = 4
ROWS_PROGRAMS_PER_SM = 2
#: How long a program waits for a peer before it gives up (nanoseconds): longer than ranks
#: drift apart in a healthy run (a JIT compile included), short enough that a test of a
#: missing peer is quick.
TIMEOUT_NS = 5_000_000_000


@kiln.jit
def _lo(w):
    """The low bf16 of each word as fp32."""
    return (w << 16).to(kl.float32, bitcast=True)


@kiln.jit
def _hi(w):
    """The high bf16 of each word as fp32."""
    return (w & -65536).to(kl.float32, bitcast=True)


@kiln.jit
def _pack(lo, hi):
    """fp32 pairs rounded to bf16 (to nearest even) as words."""
    lo_bits = lo.to(kl.bfloat16).to(kl.int16, bitcast=True).to(kl.int32) & 65535
    hi_bits = hi.to(kl.bfloat16).to(kl.int16, bitcast=True).to(kl.int32)
    return lo_bits | (hi_bits << 16)


@kiln.jit
def _take(slot, pid, offs, live, desc, status):
    """A peer's words ``offs`` of this program from its ``slot`` of this workspace: polls
    the descriptor, then the words where ``live`` and the descriptor agrees (zero elsewhere,
    and where a wait timed out: ``status`` says which), and re-arms both behind them. A
    barrier orders every thread's polls before the re-arming: the status reduction does not
    where the warps hold copies of one small tile (it is then a warp's own), and the
    descriptor's re-arm is one thread's store."""
    d = kl.poll_nonzero(slot + pid, timeout_ns=TIMEOUT_NS)
    ok = d == desc
    if d == 0:
        status = status | STATUS_TIMEOUT
    elif d != desc:
        status = status | STATUS_SIZE_MISMATCH
    v = kl.poll_nonzero(slot + MAX_PROGRAMS + offs, mask=live & ok, timeout_ns=TIMEOUT_NS)
    if kl.max(((v == 0) & live & ok).to(kl.int32)) > 0:
        status = status | STATUS_TIMEOUT
    kl.barrier()
    kl.store(slot + MAX_PROGRAMS + offs, 0, mask=live)  # re-arm
    kl.store(slot + pid, 0)
    return v, status


@kiln.jit
def _enter(peers, rank, pid, slot_units, WORLD: kl.constexpr):
    """The start of a call, after the PDL wait (the previous call on this stream has flipped
    the counters): (this rank's workspace, the slot pitch in words, the program's phase, the
    phase's half of the workspace)."""
    kl.pdl_wait()
    local = kl.peer_pointer(peers, rank, kl.int32)
    slot_words = slot_units * SLOT_ALIGN_WORDS
    phase = kl.load(local + pid)
    return local, slot_words, phase, HEADER_WORDS + phase * (WORLD * slot_words)


@kiln.jit
def _finish(local, pid, grid, phase, status):
    """The end of a call: report ``status`` in the workspace's status word, flip the program's
    phase counter, and from the last program the counters past the grid (the bumper, so that
    calls with different grids stay in step)."""
    if status != 0:
        kl.atomic_or(local + STATUS_WORD, status, sem="relaxed", scope="sys")
    kl.barrier()  # every thread has read the phase
    kl.store(local + pid, 1 - phase)
    if pid == grid - 1:
        c = kl.arange(0, MAX_PROGRAMS)
        past = c >= grid
        kl.store(local + c, 1 - kl.load(local + c, mask=past, other=0), mask=past)
    kl.pdl_launch_dependents()


# The rank is not specialized: every rank runs the same kernel (no rank compiles, and falls
# behind, where another does not); the sizes are the same on every rank. The slot pitch is a
# multiple of 16 words, so every slot is 64-byte aligned and the accesses are 16-byte vectors
# where x and n_words allow.
@kiln.jit(num_warps=4, do_not_specialize=["rank"])
def push_kernel(x_ptr, res_ptr, out_ptr, peers, rank, n_words, slot_units,
                WORLD: kl.constexpr, SCATTER: kl.constexpr, GATHER: kl.constexpr,
                HAS_RES: kl.constexpr, BLOCK: kl.constexpr):
    """The flat one-shot push over chunks of n_words words. The all-reduce: x (one chunk) to
    every rank, which sums the world chunks (fp32, rank order; + the residual) into out. With
    SCATTER (the reduce-scatter) x holds world chunks and chunk r goes to rank r only. With
    GATHER (the all-gather) rank r's chunk is copied into chunk r of out instead of summed."""
    kl.min_programs_per_sm(PROGRAMS_PER_SM)
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n_words
    desc = n_words * 2 + 1  # never zero
    local, slot_words, phase, half = _enter(peers, rank, pid, slot_units, WORLD)
    if not SCATTER:
        w = kl.nonzero_marker(kl.load(x_ptr + offs, mask=mask, other=0))
    for r in kl.static_range(WORLD):
        if SCATTER:
            w = kl.nonzero_marker(kl.load(x_ptr + r * n_words + offs, mask=mask, other=0))
        slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
        kl.store(slot + MAX_PROGRAMS + offs, w, mask=mask)
        kl.store(slot + pid, desc, sem="relaxed", scope="sys")
    lo = kl.zeros([BLOCK], kl.float32)
    hi = kl.zeros([BLOCK], kl.float32)
    status = 0
    for r in kl.static_range(WORLD):
        v, status = _take(local + half + r * slot_words, pid, offs, mask, desc, status)
        if GATHER:  # the marker back to the zero word it stood for
            kl.store(out_ptr + r * n_words + offs, kl.where(v == NONZERO_MARKER, 0, v),
                     mask=mask)
        else:
            lo += _lo(v)
            hi += _hi(v)
    if not GATHER:
        if HAS_RES:
            res = kl.load(res_ptr + offs, mask=mask, other=0)
            s = _pack(lo, hi)
            lo = _lo(s) + _lo(res)
            hi = _hi(s) + _hi(res)
        kl.store(out_ptr + offs, _pack(lo, hi), mask=mask)
    _finish(local, pid, grid, phase, status)


@kiln.jit(num_warps=4, do_not_specialize=["rank"])
def two_shot_kernel(x_ptr, res_ptr, out_ptr, peers, rank, n_words, shard_words, slot_units,
                    WORLD: kl.constexpr, HAS_RES: kl.constexpr, BLOCK: kl.constexpr):
    """The two-shot all-reduce of n_words words in world shards of shard_words (the last
    one short): a reduce-scatter (shard r of x to rank r, which sums the world shards, fp32 in
    rank order, + the residual's shard) then an all-gather (rank r's sum to every rank,
    itself included, into shard r of out). Program b owns words [b * BLOCK, (b + 1) * BLOCK)
    of every shard; the reduce-scatter uses the first shard_words data words of a slot and a
    descriptor a program, the all-gather the next shard_words, its data its own flag."""
    kl.min_programs_per_sm(PROGRAMS_PER_SM)
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    in_shard = offs < shard_words
    desc = n_words * 2 + 1  # never zero
    local, slot_words, phase, half = _enter(peers, rank, pid, slot_units, WORLD)
    for r in kl.static_range(WORLD):  # the reduce-scatter: shard r to rank r
        idx = r * shard_words + offs
        m = in_shard & (idx < n_words)
        w = kl.nonzero_marker(kl.load(x_ptr + idx, mask=m, other=0))
        slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
        kl.store(slot + MAX_PROGRAMS + offs, w, mask=m)
        kl.store(slot + pid, desc, sem="relaxed", scope="sys")
    mine = rank * shard_words + offs
    mask = in_shard & (mine < n_words)
    lo = kl.zeros([BLOCK], kl.float32)
    hi = kl.zeros([BLOCK], kl.float32)
    status = 0
    for r in kl.static_range(WORLD):
        v, status = _take(local + half + r * slot_words, pid, offs, mask, desc, status)
        lo += _lo(v)
        hi += _hi(v)
    s = _pack(lo, hi)
    if HAS_RES:
        res = kl.load(res_ptr + mine, mask=mask, other=0)
        s = _pack(_lo(s) + _lo(res), _hi(s) + _hi(res))
    s = kl.nonzero_marker(s)
    ok = status == 0  # else nothing more is waited for
    gather = MAX_PROGRAMS + shard_words
    for r in kl.static_range(WORLD):  # the all-gather: the sum to every rank
        slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
        kl.store(slot + gather + offs, s, mask=mask)
    for r in kl.static_range(WORLD):
        idx = r * shard_words + offs
        m = in_shard & (idx < n_words)
        slot = local + half + r * slot_words
        v = kl.poll_nonzero(slot + gather + offs, mask=m & ok, timeout_ns=TIMEOUT_NS)
        if kl.max(((v == 0) & m & ok).to(kl.int32), axis=0) > 0:
            status = status | STATUS_TIMEOUT
        kl.store(out_ptr + idx, kl.where(v == NONZERO_MARKER, 0, v), mask=m)
        kl.store(slot + gather + offs, 0, mask=m)  # re-arm
    _finish(local, pid, grid, phase, status)


@kiln.jit(num_warps=4, do_not_specialize=["rank"])
def all_gather_direct_kernel(x_ptr, out_peers, out_words, peers, rank, n_words, slot_units,
                             WORLD: kl.constexpr, BLOCK: kl.constexpr):
    """The all-gather straight into every rank's symmetric output (no slot, no copy): rank
    r's n_words words of x go to words [out_words + r * n_words, ...) of every rank's output
    buffer (out_peers: its peer table). Two barriers a program, on flags in the workspace
    (its current phase's half): "ready" (the descriptor words; a rank's output is free once
    its previous work is done, its PDL wait) before any rank writes, "done" (the first data
    word a program of each slot, released after the writes) before the program ends."""
    kl.min_programs_per_sm(PROGRAMS_PER_SM)
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n_words
    desc = (n_words + out_words * 7919) * 2 + 1  # odd: never zero; the offset must agree too
    local, slot_words, phase, half = _enter(peers, rank, pid, slot_units, WORLD)
    w = kl.load(x_ptr + offs, mask=mask, other=0)
    for r in kl.static_range(WORLD):  # ready
        slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
        kl.store(slot + pid, desc, sem="relaxed", scope="sys")
    status = 0
    for r in kl.static_range(WORLD):
        slot = local + half + r * slot_words
        d = kl.poll_nonzero(slot + pid, timeout_ns=TIMEOUT_NS)
        if d == 0:
            status = status | STATUS_TIMEOUT
        elif d != desc:
            status = status | STATUS_SIZE_MISMATCH
    # Every thread polls a scalar flag itself: all must have seen them before one re-arms them
    # (the other kernels' reductions between their polls and their re-arming order them so).
    kl.barrier()
    for r in kl.static_range(WORLD):
        kl.store(local + half + r * slot_words + pid, 0)  # re-arm
    ok = status == 0
    for r in kl.static_range(WORLD):
        dst = kl.peer_pointer(out_peers, r, kl.int32) + out_words + rank * n_words
        kl.store(dst + offs, w, mask=mask & ok)
    kl.fence("release", "sys")
    kl.barrier()
    for r in kl.static_range(WORLD):  # done (also after a failed start: no peer waits long)
        slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
        kl.atomic_xchg(slot + MAX_PROGRAMS + pid, 1, sem="release", scope="sys")
    done = local + half + MAX_PROGRAMS + pid
    if ok:
        for r in kl.static_range(WORLD):
            if kl.poll_nonzero(done + r * slot_words, timeout_ns=TIMEOUT_NS) == 0:
                status = status | STATUS_TIMEOUT
    kl.barrier()  # as above
    for r in kl.static_range(WORLD):
        kl.store(done + r * slot_words, 0)  # re-arm
    kl.fence("acquire", "sys")
    _finish(local, pid, grid, phase, status)


@kiln.jit
def _finalize_row(row, cols, cmask, g_ptr, idx_ptr, wt_ptr, D_WORDS: kl.constexpr,
                  TOPK: kl.constexpr, BLOCK: kl.constexpr):
    """Token ``row``'s MoE finalize as words: sum_k w[row, k] * gemm2[idx[row * TOPK + k]] in
    fp32 (k in order; an index < 0 is dropped), rounded to bf16."""
    lo = kl.zeros([BLOCK], kl.float32)
    hi = kl.zeros([BLOCK], kl.float32)
    for k in kl.static_range(TOPK):
        e = kl.load(idx_ptr + row * TOPK + k)
        wk = kl.load(wt_ptr + row * TOPK + k).to(kl.float32, bitcast=True)
        g = kl.load(g_ptr + e.to(kl.int64) * D_WORDS + cols, mask=cmask & (e >= 0), other=0)
        lo += wk * _lo(g)
        hi += wk * _hi(g)
    return _pack(lo, hi)


@kiln.jit(num_warps=8, do_not_specialize=["rank"])
def allreduce_rows_kernel(x_ptr, g_ptr, idx_ptr, wt_ptr, res_ptr, out_ptr, w_ptr, norm_ptr, peers,
                          rank, n_rows, norm_rows, rows_per, slot_units, eps,
                          WORLD: kl.constexpr, HAS_RES: kl.constexpr, FINALIZE: kl.constexpr,
                          TOPK: kl.constexpr, D_WORDS: kl.constexpr, BLOCK: kl.constexpr):
    """The row form of the one-shot push: program b owns rows [b * rows_per, (b + 1) *
    rows_per) of width D_WORDS words, pushes them all, then sums each over the ranks (+ the
    residual) into out and writes the RMSNorm of rows < norm_rows (fp32, with the bf16 weight)
    into norm_out. With FINALIZE a row's pushed words are the MoE finalize of token ``row``
    (``_finalize_row``; the weights fp32 as words) instead of x's."""
    kl.min_programs_per_sm(ROWS_PROGRAMS_PER_SM)
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    cols = kl.arange(0, BLOCK)
    cmask = cols < D_WORDS
    desc = n_rows * (2 * D_WORDS) + 1  # never zero
    first = pid * rows_per
    last = kl.minimum(first + rows_per, n_rows)
    local, slot_words, phase, half = _enter(peers, rank, pid, slot_units, WORLD)
    for row in range(first, last):
        offs = row * D_WORDS + cols
        if FINALIZE:
            w = _finalize_row(row, cols, cmask, g_ptr, idx_ptr, wt_ptr, D_WORDS, TOPK, BLOCK)
        else:
            w = kl.load(x_ptr + offs, mask=cmask, other=0)
        w = kl.nonzero_marker(w)
        for r in kl.static_range(WORLD):
            slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
            kl.store(slot + MAX_PROGRAMS + offs, w, mask=cmask)
    for r in kl.static_range(WORLD):
        slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
        kl.store(slot + pid, desc, sem="relaxed", scope="sys")
    status = 0
    for r in kl.static_range(WORLD):
        d = kl.poll_nonzero(local + half + r * slot_words + pid, timeout_ns=TIMEOUT_NS)
        if d == 0:
            status = status | STATUS_TIMEOUT
        elif d != desc:
            status = status | STATUS_SIZE_MISMATCH
    ok = status == 0  # else nothing more is waited for
    wts = kl.load(w_ptr + cols, mask=cmask, other=0)
    for row in range(first, last):
        offs = row * D_WORDS + cols
        lo = kl.zeros([BLOCK], kl.float32)
        hi = kl.zeros([BLOCK], kl.float32)
        for r in kl.static_range(WORLD):
            data = local + half + r * slot_words + MAX_PROGRAMS
            v = kl.poll_nonzero(data + offs, mask=cmask & ok, timeout_ns=TIMEOUT_NS)
            if kl.max(((v == 0) & cmask & ok).to(kl.int32), axis=0) > 0:
                status = status | STATUS_TIMEOUT
            lo += _lo(v)
            hi += _hi(v)
            kl.store(data + offs, 0, mask=cmask)  # re-arm
        s = _pack(lo, hi)
        if HAS_RES:
            res = kl.load(res_ptr + offs, mask=cmask, other=0)
            s = _pack(_lo(s) + _lo(res), _hi(s) + _hi(res))
        kl.store(out_ptr + offs, s, mask=cmask)
        if row < norm_rows:
            a = _lo(s)
            b = _hi(s)
            rstd = kl.rsqrt(kl.sum(a * a + b * b, axis=0) / (2 * D_WORDS) + eps)
            kl.store(norm_ptr + offs, _pack(a * rstd * _lo(wts), b * rstd * _hi(wts)), mask=cmask)
    for r in kl.static_range(WORLD):
        kl.store(local + half + r * slot_words + pid, 0)  # re-arm the descriptors
    _finish(local, pid, grid, phase, status)


@dataclasses.dataclass(frozen=True)
class Settings:
    """The all-reduces' tuning."""
    block: int = 1024  # words (bf16 pairs) a program: 8 a thread on 4 warps
    num_warps: int = 4
    rows_warps: int = 8  # the row form: a row of 3,584 bf16 is 7 words a thread
    #: allreduce takes the two-shot form from this many bytes of x (and beyond the one-shot
    #: form's 1,024 programs)
    two_shot_bytes: int = 1 << 20


SETTINGS = Settings()

#: The row form's width in the bundle (K3's latent; any even width JIT-compiles).
NORM_DIM = 3584
#: Experts a token of the MoE finalize sums (K3's top-k).
TOPK = 16


#: ``with compile_only(): allreduce(...)`` compiles (JIT) or loads (bundle) the call's kernel
#: and launches nothing: in JIT mode, warm every rank up this way and meet before the first
#: call of a shape, so that no rank compiles while its peers wait (a wait longer than
#: TIMEOUT_NS fails the call).
compile_only = L.compile_only

#: World sizes the bundle holds (the world is a constexpr: the push and poll loops unroll).
AOT_WORLDS = (2, 4, 8)

_SIG = {"x_ptr": "*i32", "res_ptr": "*i32", "out_ptr": "*i32", "peers": "*i64", "rank": "i32",
        "n_words": "i32", "slot_units": "i32"}
#: The vector path: 16-byte aligned tensors of a multiple of 16 words (32 bf16); any other
#: call (4-byte aligned, an even element count) takes the scalar specialization.
_VECTOR = {"x_ptr": 16, "res_ptr": 16, "out_ptr": 16, "peers": 16, "n_words": 16}


#: The flat collectives: name -> (SCATTER, GATHER) of push_kernel.
FLAT_OPS = {"allreduce": (False, False), "sp_reduce_scatter": (True, False),
            "sp_all_gather": (False, True)}


def aot_name(world: int, op: str = "allreduce") -> str:
    return f"{'allreduce_push' if op == 'allreduce' else op}_w{world}"


def _flat_constexprs(world: int, op: str, has_res: bool, block: int) -> dict:
    scatter, gather = FLAT_OPS[op]
    return {"WORLD": world, "SCATTER": scatter, "GATHER": gather, "HAS_RES": has_res,
            "BLOCK": block}


AOT_SPECIALIZATIONS = [
    # the peer table is the runtime's allocation (16-byte aligned); the generic (scalar) form
    # takes any tensor address and size the wrappers accept (4-byte aligned, even)
    Spec(push_kernel, name=aot_name(world, op) + suffix, signature=_SIG,
         constexprs=_flat_constexprs(world, op, has_res, SETTINGS.block),
         divisibility=div, num_warps=SETTINGS.num_warps)
    for world in AOT_WORLDS for op in FLAT_OPS
    for has_res in ((False,) if FLAT_OPS[op][1] else (False, True))
    for suffix, div in (("", _VECTOR), ("_generic", {"peers": 16}))
]


_TWO_SHOT_SIG = {**_SIG, "shard_words": "i32"}


def two_shot_aot_name(world: int) -> str:
    return f"allreduce_two_shot_w{world}"


AOT_SPECIALIZATIONS += [
    # shards are multiples of 16 words (the wrapper rounds them), so only the tensors'
    # alignment and size choose between the vector and the generic form
    Spec(two_shot_kernel, name=two_shot_aot_name(world) + suffix, signature=_TWO_SHOT_SIG,
         constexprs={"WORLD": world, "HAS_RES": has_res, "BLOCK": SETTINGS.block},
         divisibility={**div, "shard_words": 16}, num_warps=SETTINGS.num_warps)
    for world in AOT_WORLDS for has_res in (False, True)
    for suffix, div in (("", _VECTOR), ("_generic", {"peers": 16}))
]


_DIRECT_SIG = {"x_ptr": "*i32", "out_peers": "*i64", "out_words": "i32", "peers": "*i64",
               "rank": "i32", "n_words": "i32", "slot_units": "i32"}
DIRECT_NAME = "sp_all_gather_direct"

AOT_SPECIALIZATIONS += [
    Spec(all_gather_direct_kernel, name=f"{DIRECT_NAME}_w{world}{suffix}",
         signature=_DIRECT_SIG, constexprs={"WORLD": world, "BLOCK": SETTINGS.block},
         divisibility=div, num_warps=SETTINGS.num_warps)
    for world in AOT_WORLDS
    for suffix, div in (("", {"x_ptr": 16, "out_peers": 16, "out_words": 4, "peers": 16,
                              "n_words": 16}),
                        ("_generic", {"out_peers": 16, "peers": 16}))
]


_ROWS_SIG = {"x_ptr": "*i32", "g_ptr": "*i32", "idx_ptr": "*i32", "wt_ptr": "*i32",
             "res_ptr": "*i32", "out_ptr": "*i32", "w_ptr": "*i32", "norm_ptr": "*i32",
             "peers": "*i64", "rank": "i32", "n_rows": "i32", "norm_rows": "i32",
             "rows_per": "i32", "slot_units": "i32", "eps": "f32"}
_ROWS_ALIGNED = ("x_ptr", "g_ptr", "res_ptr", "out_ptr", "w_ptr", "norm_ptr", "peers")


def rows_aot_name(world: int, finalize: bool) -> str:
    return f"{'finalize_push_norm' if finalize else 'allreduce_rmsnorm'}_w{world}"


def _rows_constexprs(world: int, has_res: bool, finalize: bool, dim: int) -> dict:
    words = dim // 2
    return {"WORLD": world, "HAS_RES": has_res, "FINALIZE": finalize, "TOPK": TOPK,
            "D_WORDS": words, "BLOCK": 1 << (words - 1).bit_length()}


AOT_SPECIALIZATIONS += [
    # every tensor 16-byte aligned (the wrappers check it): rows of 3,584 bf16 move as
    # 16-byte vectors
    Spec(allreduce_rows_kernel, name=rows_aot_name(world, finalize), signature=_ROWS_SIG,
         constexprs=_rows_constexprs(world, has_res, finalize, NORM_DIM),
         divisibility=_ROWS_ALIGNED, num_warps=SETTINGS.rows_warps)
    for world in AOT_WORLDS for has_res in (False, True) for finalize in (False, True)
]


def workspace_bytes(world: int, max_elements: int, settings: Settings = SETTINGS) -> int:
    """The size of a symmetric workspace for all-reduces of up to ``max_elements`` bf16 over
    ``world`` ranks: the header, then two phases of ``world`` slots, each a descriptor word a
    program and the pushed words (two alignment units more: the two-shot form's two shards
    of ``(max_elements / 2) / world`` words, each rounded up to 16, fit)."""
    words = _round_up((max_elements + 1) // 2, SLOT_ALIGN_WORDS) + 2 * SLOT_ALIGN_WORDS
    slot = MAX_PROGRAMS + words
    return 4 * (HEADER_WORDS + 2 * world * slot)


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def _slot_units(op: str, workspace: Any, elements: int) -> int:
    """The slot pitch of ``workspace`` in units of SLOT_ALIGN_WORDS, after checking that it
    holds calls of ``elements`` bf16."""
    need = workspace_bytes(workspace.world, elements)
    if workspace.nbytes < need:
        raise ValueError(f"{op}: the workspace holds {workspace.nbytes} bytes, {elements} "
                         f"elements over {workspace.world} ranks need {need} "
                         f"(kernels_dsl.kimi_k3.allreduce.workspace_bytes)")
    return (workspace.nbytes // 4 - HEADER_WORDS) // (2 * workspace.world) // SLOT_ALIGN_WORDS


def _fallback(workspace: Any) -> Any:
    """allreduce_fallback where ``workspace`` is not peer-mapped (its ProcessGroupWorkspace:
    NCCL through torch.distributed, then kiln's epilogue kernels), else None."""
    if getattr(workspace, "peer_mapped", True):
        return None
    from . import allreduce_fallback  # it imports this module

    return allreduce_fallback


def check(workspace: Any) -> None:
    """Raises ``kiln.distributed.CollectiveError`` if a call on ``workspace`` since the last
    ``reset`` timed out waiting for a peer or met a peer that disagreed on the size (the
    workspace's status word; reading it synchronizes with the current stream)."""
    fallback = _fallback(workspace)
    if fallback is not None:
        return fallback.check(workspace)
    import torch

    from kiln.distributed import CollectiveError

    status = int(workspace.local(torch.int32, (1,), 4 * STATUS_WORD).item())
    if status == 0:
        return
    problems = []
    if status & STATUS_SIZE_MISMATCH:
        problems.append("ranks called it with different sizes")
    if status & STATUS_TIMEOUT:
        problems.append(f"a peer's data never came (timed out after {TIMEOUT_NS / 1e9:g} s)")
    raise CollectiveError(f"allreduce on rank {workspace.rank} of {workspace.world}: "
                          f"{' and '.join(problems)}; the workspace is out of step until every "
                          f"rank calls kernels_dsl.kimi_k3.allreduce.reset")


def reset(workspace: Any) -> None:
    """Collective: after a failed call, every rank waits for its work, zeroes its workspace
    (counters, slots, status) and meets the others (``workspace.barrier``)."""
    fallback = _fallback(workspace)
    if fallback is not None:
        return fallback.reset(workspace)
    import torch

    torch.cuda.synchronize()
    workspace.zero_()
    torch.cuda.synchronize()
    workspace.barrier()


def allreduce(x: Any, workspace: Any, residual: Optional[Any] = None, out: Optional[Any] = None,
              *, settings: Settings = SETTINGS) -> Any:
    """All-reduce of the contiguous bf16 ``x`` over ``workspace``'s ranks (a
    ``kiln.distributed.SymmetricBuffer`` of at least ``workspace_bytes(world, x.numel())``),
    plus ``residual`` (bf16, x's shape; the same on every rank) if given, into ``out`` (x
    itself when None: in place). Every rank calls it with the same shape; errors of the
    protocol (a peer that never came, ranks that disagree on the size) show in
    ``workspace.check()``. Checks raise before launch.

    From ``settings.two_shot_bytes`` of x (and past the one-shot form's 2,097,152 elements,
    up to world times that) the call takes the two-shot form, a reduce-scatter then an
    all-gather: each rank pushes 2 x bytes instead of world x bytes, the same sum (the
    owner of a shard sums it in rank order). A result word of (-0.0, +0.0), which only a
    sum below bf16's smallest subnormal can give, then arrives as (+0.0, +0.0)."""
    fallback = _fallback(workspace)
    if fallback is not None:
        return fallback.allreduce(x, workspace, residual, out, settings=settings)
    op = "allreduce"
    shp = _check_flat(op, "x", x, None)
    if residual is not None:
        _check_flat(op, "residual", residual, shp)
    if out is None:
        out = x
    else:
        _check_flat(op, "out", out, shp)
    n, world = x.numel(), workspace.world
    one_shot_max = MAX_PROGRAMS * settings.block * 2
    if n > world * one_shot_max:
        raise ValueError(f"{op}: at most {world * one_shot_max} elements over {world} ranks "
                         f"(the two-shot form's shards of up to {one_shot_max // world} "
                         f"elements a rank), got {n}")
    if n * 2 >= settings.two_shot_bytes or n > one_shot_max:
        shard = _round_up((n // 2 + world - 1) // world, SLOT_ALIGN_WORDS)
        if n % 2 == 0 and shard <= MAX_PROGRAMS * settings.block:
            return _two_shot_launch(op, workspace, x, residual, out, shard, settings)
    return _flat_launch(op, workspace, x, residual, out, n, settings)


def _two_shot_launch(op: str, workspace: Any, x: Any, residual: Optional[Any], out: Any,
                     shard: int, settings: Settings) -> Any:
    """Launches two_shot_kernel over shards of ``shard`` words (the tensors checked) and
    returns ``out``."""
    import torch

    named = [("x", x), ("out", out)] + ([("residual", residual)] if residual is not None else [])
    L.check_same_device(op, *named)
    world, rank = workspace.world, workspace.rank
    slot_units = _slot_units(op, workspace, x.numel())
    if slot_units * SLOT_ALIGN_WORDS - MAX_PROGRAMS < 2 * shard:
        raise ValueError(f"{op}: the workspace holds {workspace.nbytes} bytes, the two-shot "
                         f"form of {x.numel()} elements over {world} ranks needs "
                         f"{workspace_bytes(world, x.numel())} "
                         f"(kernels_dsl.kimi_k3.allreduce.workspace_bytes)")
    xw = x.view(torch.int32)
    rw = residual.view(torch.int32) if residual is not None else xw
    launch = L.Launch(two_shot_kernel, two_shot_aot_name(world),
                      ((shard + settings.block - 1) // settings.block,),
                      (xw, rw, out.view(torch.int32), workspace.peer_table, rank, x.numel() // 2,
                       shard, slot_units),
                      {"WORLD": world, "HAS_RES": residual is not None, "BLOCK": settings.block},
                      settings.num_warps)
    L.launch(*launch, generic=launch._replace(name=two_shot_aot_name(world) + "_generic"))
    return out


def sp_reduce_scatter(x: Any, workspace: Any, residual: Optional[Any] = None,
                      out: Optional[Any] = None, *, settings: Settings = SETTINGS) -> Any:
    """The sequence-parallel reduce-scatter: ``x`` bf16 [world * rows, ...] (contiguous) on
    every rank; rank r receives chunk r (rows [r * rows, (r + 1) * rows)) of every rank and
    writes their sum (fp32 in rank order, rounded to bf16), plus ``residual`` if given, into
    ``out`` [rows, ...] (allocated when None):

        out = bf16( bf16(sum_q f32(x_q[chunk r])) + residual )

    ``residual``: this rank's rows ([rows, ...]) or the whole [world * rows, ...] (its chunk r
    is used). Each chunk goes only to its owner. Workspace: ``workspace_bytes(world, chunk
    elements)``."""
    fallback = _fallback(workspace)
    if fallback is not None:
        return fallback.sp_reduce_scatter(x, workspace, residual, out, settings=settings)
    op = "sp_reduce_scatter"
    residual, out = reduce_scatter_args(op, x, workspace, residual, out)
    return _flat_launch(op, workspace, x, residual, out, x.numel() // workspace.world, settings)


def reduce_scatter_args(op: str, x: Any, workspace: Any, residual: Optional[Any],
                        out: Optional[Any]) -> tuple:
    """sp_reduce_scatter's checks (x [world * rows, ...], this rank's residual rows taken
    from a whole one); returns (residual, out), out allocated when None."""
    shp = _check_flat(op, "x", x, None)
    world = workspace.world
    if not shp or shp[0] % world:
        raise ValueError(f"{op}: x's first dimension must be a multiple of the world size "
                         f"{world}, got shape {list(shp)}")
    part = (shp[0] // world,) + tuple(shp[1:])
    if residual is not None:
        if L.shape(residual) == tuple(shp):
            residual = residual[workspace.rank * part[0]:(workspace.rank + 1) * part[0]]
        _check_flat(op, "residual", residual, part)
    if out is None:
        import torch

        out = torch.empty(part, dtype=x.dtype, device=x.device)
    else:
        _check_flat(op, "out", out, part)
    return residual, out


def sp_all_gather(x: Any, workspace: Any, out: Optional[Any] = None, *,
                  settings: Settings = SETTINGS) -> Any:
    """The sequence-parallel all-gather: ``x`` bf16 [rows, ...] (contiguous) on every rank;
    ``out`` [world * rows, ...] (allocated when None) gets rank r's x in rows
    [r * rows, (r + 1) * rows), every rank's pushed to every rank. A word of two +0.0 travels
    as the Lamport marker and arrives as the zero word; only a word that was the marker
    itself, (-0.0, +0.0), arrives as (+0.0, +0.0). Workspace: ``workspace_bytes(world,
    x.numel())``."""
    fallback = _fallback(workspace)
    if fallback is not None:
        return fallback.sp_all_gather(x, workspace, out, settings=settings)
    op = "sp_all_gather"
    out = all_gather_args(op, x, workspace, out)
    return _flat_launch(op, workspace, x, None, out, x.numel(), settings)


def all_gather_args(op: str, x: Any, workspace: Any, out: Optional[Any]) -> Any:
    """sp_all_gather's checks (x [rows, ...], out [world * rows, ...]); returns out, allocated
    when None."""
    shp = _check_flat(op, "x", x, None)
    if not shp:
        raise ValueError(f"{op}: x must have at least one dimension")
    full = (shp[0] * workspace.world,) + tuple(shp[1:])
    if out is None:
        import torch

        out = torch.empty(full, dtype=x.dtype, device=x.device)
    else:
        _check_flat(op, "out", out, full)
    return out


def sp_all_gather_direct(x: Any, workspace: Any, out_buffer: Any, offset: int = 0, *,
                         settings: Settings = SETTINGS) -> Any:
    """The sequence-parallel all-gather written straight into every rank's output: ``x`` bf16
    [rows, ...] (contiguous) on every rank; rank r's x lands in rows [r * rows, (r + 1) *
    rows) of the bf16 [world * rows, ...] tensor at byte ``offset`` (the same on every rank;
    a multiple of 4) of every rank's ``out_buffer``, a second ``kiln.distributed.
    SymmetricBuffer`` over the same ranks. Returns this rank's view of it
    (``out_buffer.local``). Every word travels as it is (no marker; the output is not a
    slot), at the cost of two flag barriers a program in ``workspace`` (any size from
    ``workspace_bytes(world, 2 * MAX_PROGRAMS)``): no rank writes into a peer's output
    before that peer's previous work on this stream is done, and none returns before its
    output is whole. The output of the call before is overwritten: read it first."""
    import torch

    op = DIRECT_NAME
    if _fallback(workspace) is not None:
        raise ValueError(f"{op}: writes into the peers' memory, and {workspace!r} has no peer "
                         f"mappings; where the peers are not reachable use sp_all_gather")
    shp = _check_flat(op, "x", x, None)
    if not shp:
        raise ValueError(f"{op}: x must have at least one dimension")
    world, rank = workspace.world, workspace.rank
    if (out_buffer.world, out_buffer.rank) != (world, rank):
        raise ValueError(f"{op}: out_buffer is rank {out_buffer.rank} of {out_buffer.world}, "
                         f"the workspace rank {rank} of {world}: both must span the same ranks")
    if offset % 4:
        raise ValueError(f"{op}: offset must be a multiple of 4 bytes, got {offset}")
    out = out_buffer.local(torch.bfloat16, (shp[0] * world,) + tuple(shp[1:]), offset)
    L.check_same_device(op, ("x", x), ("out_buffer", out))
    n = x.numel()
    if n % 2:
        raise ValueError(f"{op}: the number of elements of x must be even (bf16 pairs), got {n}")
    words = n // 2
    grid = (words + settings.block - 1) // settings.block
    if grid > MAX_PROGRAMS:
        raise ValueError(f"{op}: at most {MAX_PROGRAMS * settings.block * 2} elements, got {n}")
    if grid:
        launch = L.Launch(all_gather_direct_kernel, f"{DIRECT_NAME}_w{world}", (grid,),
                          (x.view(torch.int32), out_buffer.peer_table, offset // 4,
                           workspace.peer_table, rank, words,
                           _slot_units(op, workspace, 2 * MAX_PROGRAMS)),
                          {"WORLD": world, "BLOCK": settings.block}, settings.num_warps)
        L.launch(*launch, generic=launch._replace(name=f"{DIRECT_NAME}_w{world}_generic"))
    return out


def _check_flat(op: str, what: str, t: Any, shape: Optional[Sequence[int]]) -> tuple:
    """A flat form's tensor: bf16, contiguous, 4-byte aligned, of ``shape`` (any if None)."""
    return _check_tensor(op, what, t, shape, 4)


def _check_tensor(op: str, what: str, t: Any, shape: Optional[Sequence[Optional[int]]],
                  align: int, dtypes: Sequence[str] = ("bfloat16",)) -> tuple:
    """``t``'s dtype among ``dtypes``, its shape ``shape`` (any if None; None entries any
    size), contiguous and ``align``-byte aligned; returns the shape."""
    L.check_dtype(op, what, t, dtypes)
    shp = L.shape(t) if shape is None else L.check_shape(op, what, t, shape)
    L.check_contiguous(op, what, t)
    L.check_aligned(op, what, t, align)
    return shp


def _flat_launch(op: str, workspace: Any, x: Any, residual: Optional[Any], out: Any,
                 chunk: int, settings: Settings) -> Any:
    """Launches push_kernel for ``op`` over chunks of ``chunk`` elements (the tensors checked)
    and returns ``out``."""
    named = [("x", x), ("out", out)] + ([("residual", residual)] if residual is not None else [])
    L.check_same_device(op, *named)
    if chunk % 2:
        raise ValueError(f"{op}: the number of elements a rank's chunk holds must be even "
                         f"(bf16 pairs), got {chunk}")
    world, rank = workspace.world, workspace.rank
    words = chunk // 2
    grid = (words + settings.block - 1) // settings.block
    if grid > MAX_PROGRAMS:
        raise ValueError(f"{op}: at most {MAX_PROGRAMS * settings.block * 2} elements a chunk, "
                         f"got {chunk}")
    slot_units = _slot_units(op, workspace, chunk)
    import torch

    xw = x.view(torch.int32)
    rw = residual.view(torch.int32) if residual is not None else xw
    ow = out.view(torch.int32)
    launch = L.Launch(push_kernel, aot_name(world, op), (grid,),
                      (xw, rw, ow, workspace.peer_table, rank, words, slot_units),
                      _flat_constexprs(world, op, residual is not None, settings.block),
                      settings.num_warps)
    L.launch(*launch, generic=launch._replace(name=aot_name(world, op) + "_generic"))
    return out


def _check_rows_tensor(op: str, what: str, t: Any, shape: Sequence[Optional[int]],
                       dtypes: Sequence[str] = ("bfloat16",)) -> tuple:
    """A row form's tensor: as ``_check_flat``'s but 16-byte aligned (every access a vector)."""
    return _check_tensor(op, what, t, shape, 16, dtypes)


def _rows_launch(op: str, workspace: Any, n_rows: int, dim: int, norm_rows: int,
                 tensors: dict, residual: Optional[Any], finalize: bool, eps: float,
                 settings: Settings) -> None:
    """Launches the row form over ``n_rows`` rows of ``dim`` (tensors: x or the finalize's
    gemm2 / ids / weights, out, weight, norm_out; all checked)."""
    import torch

    if dim % 2:
        raise ValueError(f"{op}: the row width must be even (bf16 pairs), got {dim}")
    L.check_same_device(op, *[(k, v) for k, v in tensors.items()],
                        *([("residual", residual)] if residual is not None else []))
    world, rank = workspace.world, workspace.rank
    slot_units = _slot_units(op, workspace, n_rows * dim)
    grid = min(n_rows, MAX_PROGRAMS)
    rows_per = (n_rows + grid - 1) // grid
    grid = (n_rows + rows_per - 1) // rows_per

    def words(t: Any) -> Any:
        return t.view(torch.int32)

    out = words(tensors["out"])
    x = words(tensors["x"]) if not finalize else out
    g, idx, wt = ((words(tensors["gemm2"]), tensors["topk_ids"], words(tensors["topk_weights"]))
                  if finalize else (x, x, x))
    res = words(residual) if residual is not None else out
    norm = words(tensors["norm_out"]) if norm_rows else out
    L.launch(allreduce_rows_kernel, rows_aot_name(world, finalize), (grid,),
             (x, g, idx, wt, res, out, words(tensors["weight"]), norm, workspace.peer_table,
              rank, n_rows, norm_rows, rows_per, slot_units, float(eps)),
             _rows_constexprs(world, residual is not None, finalize, dim), settings.rows_warps)


def allreduce_rmsnorm(x: Any, workspace: Any, weight: Any, eps: float = 1e-6, *,
                      residual: Optional[Any] = None, norm_rows: Optional[int] = None,
                      out: Optional[Any] = None, norm_out: Optional[Any] = None,
                      settings: Settings = SETTINGS) -> tuple:
    """All-reduce of the rows of ``x`` (bf16 [rows, D], contiguous, D even; K3: D = 3,584),
    plus ``residual`` (bf16 [rows, D], the same on every rank) if given, into ``out`` (x itself
    when None), and the RMSNorm of its first ``norm_rows`` rows (all when None; K3's
    ``[N latent | 2N shared]`` buffer norms the first N) with ``weight`` (bf16 [D]) and ``eps``
    into ``norm_out`` (bf16 [norm_rows, D], allocated when None):

        out[t]      = bf16( bf16(sum_r f32(x_r[t])) + residual[t] )
        norm_out[t] = bf16( f32(out[t]) * rsqrt(mean(f32(out[t])^2) + eps) * f32(weight) )

    Every tensor 16-byte aligned; ``workspace`` as for ``allreduce`` (at least
    ``workspace_bytes(world, x.numel())``). Returns (out, norm_out)."""
    fallback = _fallback(workspace)
    if fallback is not None:
        return fallback.allreduce_rmsnorm(x, workspace, weight, eps, residual=residual,
                                          norm_rows=norm_rows, out=out, norm_out=norm_out,
                                          settings=settings)
    op = "allreduce_rmsnorm"
    rows, dim = _check_rows_tensor(op, "x", x, (None, None))
    return _rows_call(op, workspace, rows, dim, {"x": x}, weight, eps, residual, norm_rows, out,
                      norm_out, settings)


def finalize_push_norm(gemm2: Any, topk_ids: Any, topk_weights: Any, workspace: Any,
                       weight: Any, eps: float = 1e-6, *, residual: Optional[Any] = None,
                       out: Optional[Any] = None, norm_out: Optional[Any] = None,
                       settings: Settings = SETTINGS) -> tuple:
    """The deferred MoE finalize fused into the all-reduce and the RMSNorm: for T tokens,

        local[t]    = bf16( sum_{k < 16} topk_weights[t, k] * f32(gemm2[topk_ids[t, k]]) )
                      (fp32 in k order; an id < 0 is dropped)

    computed while pushing (the rank-local rows are never written), then ``out`` (bf16 [T, D],
    allocated when None) and ``norm_out`` as ``allreduce_rmsnorm`` gives them for x = local
    (every row normed). ``gemm2`` bf16 [R, D] (the expert outputs, rows indexed by the ids),
    ``topk_ids`` int32 [T, 16], ``topk_weights`` fp32 [T, 16]. Returns (out, norm_out)."""
    fallback = _fallback(workspace)
    if fallback is not None:
        return fallback.finalize_push_norm(gemm2, topk_ids, topk_weights, workspace, weight, eps,
                                           residual=residual, out=out, norm_out=norm_out,
                                           settings=settings)
    op = "finalize_push_norm"
    _, dim = _check_rows_tensor(op, "gemm2", gemm2, (None, None))
    tokens, _ = _check_rows_tensor(op, "topk_ids", topk_ids, (None, TOPK), ("int32",))
    _check_rows_tensor(op, "topk_weights", topk_weights, (tokens, TOPK), ("float32",))
    if out is None:
        import torch

        out = torch.empty((tokens, dim), dtype=gemm2.dtype, device=gemm2.device)
    tensors = {"gemm2": gemm2, "topk_ids": topk_ids, "topk_weights": topk_weights}
    return _rows_call(op, workspace, tokens, dim, tensors, weight, eps, residual, None, out,
                      norm_out, settings)


def _rows_call(op: str, workspace: Any, rows: int, dim: int, tensors: dict, weight: Any,
               eps: float, residual: Optional[Any], norm_rows: Optional[int], out: Optional[Any],
               norm_out: Optional[Any], settings: Settings) -> tuple:
    """The checks and the launch that ``allreduce_rmsnorm`` and ``finalize_push_norm`` share."""
    import torch

    finalize = "x" not in tensors
    norm_rows = rows if norm_rows is None else int(norm_rows)
    if not 0 <= norm_rows <= rows:
        raise ValueError(f"{op}: norm_rows must be in [0, {rows}], got {norm_rows}")
    _check_rows_tensor(op, "weight", weight, (dim,))
    if residual is not None:
        _check_rows_tensor(op, "residual", residual, (rows, dim))
    if out is None:
        out = tensors["x"]
    else:
        _check_rows_tensor(op, "out", out, (rows, dim))
    if norm_out is None:
        norm_out = torch.empty((norm_rows, dim), dtype=torch.bfloat16, device=weight.device)
    else:
        _check_rows_tensor(op, "norm_out", norm_out, (norm_rows, dim))
    if rows:
        _rows_launch(op, workspace, rows, dim, norm_rows,
                     {**tensors, "out": out, "weight": weight, "norm_out": norm_out}, residual,
                     finalize, eps, settings)
    return out, norm_out
