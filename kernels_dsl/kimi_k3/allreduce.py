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
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

#: Programs a call may have (its phase counters and descriptor words).
MAX_PROGRAMS = 1024
#: Header words of a workspace: the counters, the status word, padding to 256 bytes.
HEADER_WORDS = MAX_PROGRAMS + 64
STATUS_WORD = MAX_PROGRAMS
#: Status bits.
STATUS_TIMEOUT = 1
STATUS_SIZE_MISMATCH = 2
#: How long a program waits for a peer before it gives up (nanoseconds): longer than ranks
#: drift apart in a healthy run (a JIT compile included), short enough that a test of a
#: missing peer is quick.
TIMEOUT_NS = 5_000_000_000


@kiln.jit
def _push_marker(w):
    """``w`` with a zero word (two +0.0 bf16) replaced by 0x8000 (-0.0, +0.0): the pushed
    value is never the empty state and sums the same."""
    return kl.where(w == 0, 0x8000, w)


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


# The rank and the sizes are not specialized: every rank runs the same kernel for any size,
# so no rank compiles (and falls behind) where another does not.
@kiln.jit(num_warps=4, do_not_specialize=["rank", "n_words", "slot_words"])
def allreduce_push_kernel(x_ptr, res_ptr, out_ptr, peers, rank, n_words, slot_words,
                          WORLD: kl.constexpr, HAS_RES: kl.constexpr, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    grid = kl.num_programs(0)
    local = kl.peer_pointer(peers, rank, kl.int32)
    phase = kl.load(local + pid)
    half = HEADER_WORDS + phase * (WORLD * slot_words)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n_words
    desc = n_words * 2 + 1  # never zero
    kl.pdl_wait()
    w = _push_marker(kl.load(x_ptr + offs, mask=mask, other=0))
    for r in kl.static_range(WORLD):
        slot = kl.peer_pointer(peers, r, kl.int32) + half + rank * slot_words
        kl.store(slot + MAX_PROGRAMS + offs, w, mask=mask)
        kl.store(slot + pid, desc, sem="relaxed", scope="sys")
    lo = kl.zeros([BLOCK], kl.float32)
    hi = kl.zeros([BLOCK], kl.float32)
    status = 0
    for r in kl.static_range(WORLD):
        slot = local + half + r * slot_words
        d = kl.poll_nonzero(slot + pid, timeout_ns=TIMEOUT_NS)
        ok = d == desc
        if d == 0:
            status = status | STATUS_TIMEOUT
        elif d != desc:
            status = status | STATUS_SIZE_MISMATCH
        v = kl.poll_nonzero(slot + MAX_PROGRAMS + offs, mask=mask & ok, timeout_ns=TIMEOUT_NS)
        if kl.max(((v == 0) & mask & ok).to(kl.int32), axis=0) > 0:
            status = status | STATUS_TIMEOUT
        lo += _lo(v)
        hi += _hi(v)
        kl.store(slot + MAX_PROGRAMS + offs, 0, mask=mask)  # re-arm
        kl.store(slot + pid, 0)
    if HAS_RES:
        res = kl.load(res_ptr + offs, mask=mask, other=0)
        s = _pack(lo, hi)
        lo = _lo(s) + _lo(res)
        hi = _hi(s) + _hi(res)
    kl.store(out_ptr + offs, _pack(lo, hi), mask=mask)
    if status != 0:
        kl.atomic_or(local + STATUS_WORD, status, sem="relaxed", scope="sys")
    kl.barrier()  # every thread has read the phase
    kl.store(local + pid, 1 - phase)
    if pid == grid - 1:  # the bumper: the counters past the grid flip as well
        c = kl.arange(0, MAX_PROGRAMS)
        past = c >= grid
        kl.store(local + c, 1 - kl.load(local + c, mask=past, other=0), mask=past)
    kl.pdl_launch_dependents()


@dataclasses.dataclass(frozen=True)
class Settings:
    """allreduce's tuning."""
    block: int = 1024  # words (bf16 pairs) a program: 8 a thread on 4 warps
    num_warps: int = 4


SETTINGS = Settings()


#: World sizes the bundle holds (the world is a constexpr: the push and poll loops unroll).
AOT_WORLDS = (2, 4, 8)

_SIG = {"x_ptr": "*i32", "res_ptr": "*i32", "out_ptr": "*i32", "peers": "*i64", "rank": "i32",
        "n_words": "i32", "slot_words": "i32"}


def aot_name(world: int) -> str:
    return f"allreduce_push_w{world}"


AOT_SPECIALIZATIONS = [
    # any tensor address the wrapper accepts (4-byte aligned); the peer table is the
    # runtime's allocation
    Spec(allreduce_push_kernel, name=aot_name(world), signature=_SIG,
         constexprs={"WORLD": world, "HAS_RES": has_res, "BLOCK": SETTINGS.block},
         divisibility={"peers": 16}, num_warps=SETTINGS.num_warps)
    for world in AOT_WORLDS for has_res in (False, True)
]


def workspace_bytes(world: int, max_elements: int, settings: Settings = SETTINGS) -> int:
    """The size of a symmetric workspace for all-reduces of up to ``max_elements`` bf16 over
    ``world`` ranks: the header, then two phases of ``world`` slots, each a descriptor word a
    program and the pushed words."""
    slot = MAX_PROGRAMS + _round_up((max_elements + 1) // 2, 4)
    return 4 * (HEADER_WORDS + 2 * world * slot)


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def check(workspace: Any) -> None:
    """Raises ``kiln.distributed.CollectiveError`` if a call on ``workspace`` since the last
    ``reset`` timed out waiting for a peer or met a peer that disagreed on the size (the
    workspace's status word; reading it synchronizes with the current stream)."""
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
    ``workspace.check()``. Checks raise before launch."""
    op = "allreduce"
    L.check_dtype(op, "x", x, ("bfloat16",))
    shp = L.shape(x)
    L.check_contiguous(op, "x", x)
    named = [("x", x)]
    if residual is not None:
        L.check_dtype(op, "residual", residual, ("bfloat16",))
        L.check_shape(op, "residual", residual, shp)
        L.check_contiguous(op, "residual", residual)
        named.append(("residual", residual))
    if out is None:
        out = x
    else:
        L.check_dtype(op, "out", out, ("bfloat16",))
        L.check_shape(op, "out", out, shp)
        L.check_contiguous(op, "out", out)
        named.append(("out", out))
    L.check_same_device(op, *named)
    for what, t in named:
        L.check_aligned(op, what, t, 4)
    n = x.numel()
    if n % 2:
        raise ValueError(f"{op}: the number of elements must be even (bf16 pairs), got {n}")
    world, rank = workspace.world, workspace.rank
    need = workspace_bytes(world, n, settings)
    if workspace.nbytes < need:
        raise ValueError(f"{op}: the workspace holds {workspace.nbytes} bytes, {n} elements "
                         f"over {world} ranks need {need} "
                         f"(kernels_dsl.kimi_k3.allreduce.workspace_bytes)")
    words = n // 2
    grid = (words + settings.block - 1) // settings.block
    if grid > MAX_PROGRAMS:
        raise ValueError(f"{op}: at most {MAX_PROGRAMS * settings.block * 2} elements a call, "
                         f"got {n}")
    slot_words = (workspace.nbytes // 4 - HEADER_WORDS) // (2 * world)
    slot_words -= slot_words % 4
    import torch

    xw = x.view(torch.int32)
    rw = residual.view(torch.int32) if residual is not None else xw
    ow = out.view(torch.int32)
    L.launch(allreduce_push_kernel, aot_name(world), (grid,),
             (xw, rw, ow, workspace.peer_table, rank, words, slot_words),
             {"WORLD": world, "HAS_RES": residual is not None, "BLOCK": settings.block},
             settings.num_warps)
    return out
