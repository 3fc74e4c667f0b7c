"""The collectives of allreduce.py where the peers are not reachable (across nodes, no peer
access, no CUDA IPC): the sum goes through NCCL (``torch.distributed`` on the group), and
kiln's own kernels do the rest:

    allreduce:          s = all_reduce(f32(x));            out = bf16(s) (+ residual)
    allreduce_rmsnorm:  s = all_reduce(f32(x));            out, norm_out = epilogue(s)
    finalize_push_norm: s = all_reduce(f32(finalize(...))); out, norm_out = epilogue(s)
    sp_reduce_scatter:  s = reduce_scatter(f32(x));        out = bf16(s) (+ residual)
    sp_all_gather:      out = all_gather(x)                (the bf16 bits, unchanged)

with the epilogue one launch of a kiln kernel: the fp32 sum rounded once to bf16, the
residual added in bf16 arithmetic (``bf16(f32(bf16(s)) + f32(residual))``), and for the row
form the RMSNorm of the first ``norm_rows`` rows exactly as ``allreduce_rows_kernel`` computes
it. The finalize's rank-local rows are computed by a kiln kernel as the push form does
(``_finalize_row``: fp32 in k order, ids < 0 dropped, rounded to bf16) and widened to fp32 for
the all-reduce.

Numerics: every rank sends fp32, so the sum is fp32 and rounded to bf16 once, as in the push
kernels; but the order of the fp32 additions is the backend's (NCCL's ring or tree, gloo's),
not rank order: the results are not bit-identical to the push kernels' (within one bf16 ulp
of the fp32 sum; identical where the fp32 sum is exact). The all-gather moves the bf16 bits
unchanged (the push form's one exception, a (-0.0, +0.0) word arriving as zeros, does not
apply).

A ``ProcessGroupWorkspace`` stands in for the ``SymmetricBuffer``: ``workspace(nbytes,
group)`` makes a SymmetricBuffer where every rank reaches every peer and a
ProcessGroupWorkspace otherwise, deciding it collectively (every rank gets the same kind).
The wrappers of allreduce.py dispatch here when ``workspace.peer_mapped`` is False; the
functions of this module take the same arguments and return the same values.

Specification: docs/kernels/collectives.md
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, List, Optional, Sequence

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L
from . import allreduce as A

#: A function that takes this rank's record (bytes) and returns every rank's, in rank order
#: (kiln.distributed.Exchange).
Exchange = Callable[[bytes], Sequence[bytes]]

#: The records of the factory's verdict exchange.
_REACHABLE = b"kiln allreduce workspace: peers mapped"
_UNREACHABLE = b"kiln allreduce workspace: fallback\n"


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------

@kiln.jit(num_warps=4)
def epilogue_kernel(sum_ptr, res_ptr, out_ptr, n, HAS_RES: kl.constexpr, BLOCK: kl.constexpr):
    """The flat epilogue over n elements: out = bf16(sum + 0.0), with HAS_RES
    out = bf16(f32(bf16(sum + 0.0)) + f32(residual)) (the sum fp32, the rest bf16). The
    + 0.0 makes a sum of -0.0 (every rank's element -0.0: NCCL's and gloo's sums start from
    the first rank's) +0.0, as the push kernels' sum from +0.0 gives."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    s = (kl.load(sum_ptr + offs, mask=mask, other=0.0) + 0.0).to(kl.bfloat16)
    if HAS_RES:
        r = kl.load(res_ptr + offs, mask=mask, other=0.0)
        s = (s.to(kl.float32) + r.to(kl.float32)).to(kl.bfloat16)
    kl.store(out_ptr + offs, s, mask=mask)


@kiln.jit(num_warps=8)
def epilogue_rows_kernel(sum_ptr, res_ptr, out_ptr, w_ptr, norm_ptr, norm_rows, eps,
                         HAS_RES: kl.constexpr, D: kl.constexpr, BLOCK: kl.constexpr):
    """The row epilogue, program ``row`` for row ``row`` of width D: out as the flat
    epilogue's, and for row < norm_rows norm_out = bf16(a * rsqrt(mean(a^2) + eps) * f32(w))
    with a = f32(out) (fp32 math, as allreduce_rows_kernel)."""
    row = kl.program_id(0)
    cols = kl.arange(0, BLOCK)
    cmask = cols < D
    offs = row * D + cols
    s = (kl.load(sum_ptr + offs, mask=cmask, other=0.0) + 0.0).to(kl.bfloat16)
    if HAS_RES:
        r = kl.load(res_ptr + offs, mask=cmask, other=0.0)
        s = (s.to(kl.float32) + r.to(kl.float32)).to(kl.bfloat16)
    kl.store(out_ptr + offs, s, mask=cmask)
    if row < norm_rows:
        a = s.to(kl.float32)
        w = kl.load(w_ptr + cols, mask=cmask, other=0.0).to(kl.float32)
        rstd = kl.rsqrt(kl.sum(a * a, axis=0) / D + eps)
        kl.store(norm_ptr + offs, (a * rstd * w).to(kl.bfloat16), mask=cmask)


@kiln.jit(num_warps=8)
def finalize_rows_kernel(g_ptr, idx_ptr, wt_ptr, acc_ptr, D: kl.constexpr, TOPK: kl.constexpr,
                         BLOCK: kl.constexpr):
    """Token ``row``'s MoE finalize (program ``row``), as allreduce's ``_finalize_row``:
    sum_k w[row, k] * f32(gemm2[idx[row, k]]) in fp32, k in order, an index < 0 dropped;
    rounded to bf16 and stored widened to fp32 (what the all-reduce sums)."""
    row = kl.program_id(0)
    cols = kl.arange(0, BLOCK)
    cmask = cols < D
    acc = kl.zeros([BLOCK], kl.float32)
    for k in kl.static_range(TOPK):
        e = kl.load(idx_ptr + row * TOPK + k)
        wk = kl.load(wt_ptr + row * TOPK + k)
        g = kl.load(g_ptr + e.to(kl.int64) * D + cols, mask=cmask & (e >= 0), other=0.0)
        acc += wk * g.to(kl.float32)
    kl.store(acc_ptr + row * D + cols, acc.to(kl.bfloat16).to(kl.float32), mask=cmask)


# --------------------------------------------------------------------------------------------
# the bundle
# --------------------------------------------------------------------------------------------

_SIG = {"sum_ptr": "*f32", "res_ptr": "*bf16", "out_ptr": "*bf16", "n": "i32"}
#: The vector path: 16-byte aligned tensors of a multiple of 16 elements; any other call
#: (the flat wrappers accept 4-byte aligned tensors) takes the generic kernel.
_VECTOR = {"sum_ptr": 16, "res_ptr": 16, "out_ptr": 16, "n": 16}

_ROWS_SIG = {"sum_ptr": "*f32", "res_ptr": "*bf16", "out_ptr": "*bf16", "w_ptr": "*bf16",
             "norm_ptr": "*bf16", "norm_rows": "i32", "eps": "f32"}
_FINALIZE_SIG = {"g_ptr": "*bf16", "idx_ptr": "*i32", "wt_ptr": "*f32", "acc_ptr": "*f32"}


def aot_name(kind: str) -> str:
    """The bundle name of a fallback kernel: kind ``epilogue``, ``rows`` or ``finalize``."""
    return f"allreduce_fallback_{kind}"


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _flat_constexprs(has_res: bool, block: int) -> dict:
    return {"HAS_RES": has_res, "BLOCK": block}


def _rows_constexprs(has_res: bool, dim: int) -> dict:
    return {"HAS_RES": has_res, "D": dim, "BLOCK": _next_pow2(dim)}


def _finalize_constexprs(dim: int) -> dict:
    return {"D": dim, "TOPK": A.TOPK, "BLOCK": _next_pow2(dim)}


AOT_SPECIALIZATIONS = [
    Spec(epilogue_kernel, name=aot_name("epilogue") + suffix, signature=_SIG,
         constexprs=_flat_constexprs(has_res, A.SETTINGS.block), divisibility=div,
         num_warps=A.SETTINGS.num_warps)
    for has_res in (False, True) for suffix, div in (("", _VECTOR), ("_generic", {}))
] + [
    # the row forms' tensors are 16-byte aligned (the wrappers check it; the fp32 sums are
    # torch's allocations)
    Spec(epilogue_rows_kernel, name=aot_name("rows"), signature=_ROWS_SIG,
         constexprs=_rows_constexprs(has_res, A.NORM_DIM),
         divisibility=("sum_ptr", "res_ptr", "out_ptr", "w_ptr", "norm_ptr"),
         num_warps=A.SETTINGS.rows_warps)
    for has_res in (False, True)
] + [
    Spec(finalize_rows_kernel, name=aot_name("finalize"), signature=_FINALIZE_SIG,
         constexprs=_finalize_constexprs(A.NORM_DIM), divisibility=tuple(_FINALIZE_SIG),
         num_warps=A.SETTINGS.rows_warps),
]


# --------------------------------------------------------------------------------------------
# the workspace
# --------------------------------------------------------------------------------------------

class ProcessGroupWorkspace:
    """The workspace of a group whose peers are not reachable: no memory, the group the
    collectives run on (``torch.distributed``; NCCL in production). ``peer_mapped`` is False
    (a SymmetricBuffer's is True): allreduce.py's wrappers dispatch on it. ``reason`` says why
    the symmetric workspace was not made (None when forced).

    ``rank`` and ``world`` default to the group's (the default group when ``group`` is
    None); ``exchange`` (as for SymmetricBuffer) replaces ``torch.distributed.barrier`` in
    ``barrier``."""

    peer_mapped = False

    def __init__(self, nbytes: int, group: Any = None, *, rank: Optional[int] = None,
                 world: Optional[int] = None, exchange: Optional[Exchange] = None,
                 reason: Optional[str] = None):
        if rank is None or world is None:
            dist = _dist()
            rank = dist.get_rank(group) if rank is None else rank
            world = dist.get_world_size(group) if world is None else world
        self.nbytes = operator.index(nbytes)
        self.group = group
        self.rank = operator.index(rank)
        self.world = operator.index(world)
        self.reason = reason
        self._exchange = exchange
        self._closed = False

    def barrier(self) -> None:
        """Collective: returns once every rank has called it. Host code only."""
        if self._exchange is not None:
            self._exchange(b"")
        else:
            _dist().barrier(group=self.group)

    def zero_(self, stream: Any = None) -> "ProcessGroupWorkspace":
        """Nothing to zero (no memory): for symmetry with SymmetricBuffer."""
        return self

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> "ProcessGroupWorkspace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return (f"<kiln ProcessGroupWorkspace rank {self.rank} of {self.world}, "
                f"torch.distributed{why}>")


def _dist() -> Any:
    import torch.distributed as dist  # noqa: PLC0415 - only where a collective runs

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("kernels_dsl.kimi_k3.allreduce_fallback: needs torch.distributed "
                           "initialized: call torch.distributed.init_process_group(...) on "
                           "every rank first")
    return dist


def _symmetric_buffer(nbytes: int, group: Any, exchange: Optional[Exchange],
                      rank: Optional[int], world: Optional[int]) -> Any:
    """A kiln.distributed.SymmetricBuffer (the tests replace it)."""
    from kiln.distributed import SymmetricBuffer

    return SymmetricBuffer(nbytes, group, exchange=exchange, rank=rank, world=world)


def _all_gather_exchange(group: Any, world: int) -> Exchange:
    dist = _dist()

    def exchange(record: bytes) -> List[bytes]:
        records: List[Any] = [None] * world
        dist.all_gather_object(records, record, group=group)
        return records

    return exchange


def workspace(nbytes: int, group: Any = None, *, force_fallback: bool = False,
              exchange: Optional[Exchange] = None, rank: Optional[int] = None,
              world: Optional[int] = None) -> Any:
    """The collectives' workspace for ``group`` (the default group when None): a
    ``kiln.distributed.SymmetricBuffer`` of ``nbytes`` (``allreduce.workspace_bytes``) where
    every rank maps every peer's, else a ``ProcessGroupWorkspace`` (the NCCL fallback).

    Collective, and every rank gets the same kind: each rank tries the SymmetricBuffer (a
    KilnError -- a peer without peer access, CUDA IPC impossible, an allocation that failed --
    is this rank's verdict "unreachable"), then the ranks exchange their verdicts, and unless
    every rank made its buffer each closes its own and returns a ProcessGroupWorkspace
    (``reason`` naming the ranks that could not). ``force_fallback`` (the same on every rank)
    skips the attempt. ``exchange``, ``rank``, ``world``: as for SymmetricBuffer (another
    transport than ``all_gather_object`` over the group)."""
    nbytes = operator.index(nbytes)
    if nbytes <= 0:
        raise ValueError(f"allreduce_fallback.workspace: the size must be positive, got "
                         f"{nbytes} bytes")

    def fallback(reason: Optional[str]) -> ProcessGroupWorkspace:
        return ProcessGroupWorkspace(nbytes, group, rank=rank, world=world, exchange=exchange,
                                     reason=reason)

    if force_fallback:
        return fallback(None)
    from kiln.runtime import KilnError  # kiln.distributed's (SymmetricBuffer raises it)

    if rank is None or world is None or exchange is None:
        dist = _dist()
        rank = dist.get_rank(group) if rank is None else rank
        world = dist.get_world_size(group) if world is None else world
        if exchange is None:
            exchange = _all_gather_exchange(group, world)
    buf, error = None, None
    try:
        buf = _symmetric_buffer(nbytes, group, exchange, rank, world)
    except Exception as e:  # published first: no rank waits for this one's verdict
        error = e
    verdicts = [bytes(v) for v in exchange(
        _REACHABLE if error is None else _UNREACHABLE + str(error).encode())]
    if error is not None and not isinstance(error, KilnError):
        raise error  # not a reachability verdict (the others fall back)
    failed = [(r, v[len(_UNREACHABLE):].decode(errors="replace"))
              for r, v in enumerate(verdicts) if v != _REACHABLE]
    if not failed:
        return buf
    if buf is not None:
        buf.close()
    return fallback("; ".join(f"rank {r}: {why}" for r, why in failed))


def check(workspace: Any) -> None:
    """Nothing is latched on a ProcessGroupWorkspace: an error of the fallback raises from
    ``torch.distributed`` at the call (or NCCL's watchdog aborts the group). Checks the kind."""
    _check_workspace("check", workspace)


def reset(workspace: Any) -> None:
    """Collective: every rank waits for its GPU work and meets the others (there is no state
    to clear)."""
    import torch

    _check_workspace("reset", workspace)
    torch.cuda.synchronize()
    workspace.barrier()


def _check_workspace(op: str, workspace: Any) -> None:
    if getattr(workspace, "peer_mapped", True) is not False:
        raise TypeError(f"{op}: allreduce_fallback takes a ProcessGroupWorkspace "
                        f"(peer_mapped False), got {type(workspace).__name__}")


# --------------------------------------------------------------------------------------------
# the collectives (allreduce.py's signatures and checks; no workspace size, no size cap)
# --------------------------------------------------------------------------------------------

def _warming() -> bool:
    """Inside ``allreduce.compile_only()``: compile or load the kernels, run no collective."""
    return bool(getattr(L._compile_only, "on", False))


def _is_nccl(group: Any) -> bool:
    return "nccl" in str(_dist().get_backend(group)).lower()


def _all_reduce(s: Any, workspace: Any) -> None:
    """The fp32 sum of ``s`` over the ranks, in place."""
    if _warming() or s.numel() == 0:
        return
    import torch.distributed as dist

    _dist()
    dist.all_reduce(s, op=dist.ReduceOp.SUM, group=workspace.group)


def _reduce_scatter(s: Any, workspace: Any) -> Any:
    """Chunk ``rank`` (of ``world`` along dim 0) of the fp32 sum of ``s`` over the ranks.
    NCCL: ``reduce_scatter_tensor``; other backends (gloo, the tests: its reduce-scatter of
    CUDA tensors is not relied on) sum all of ``s`` (``all_reduce``) and take the chunk,
    world times the traffic."""
    rows = s.shape[0] // workspace.world
    mine = slice(workspace.rank * rows, (workspace.rank + 1) * rows)
    if _warming() or s.numel() == 0:
        return s[mine]
    import torch
    import torch.distributed as dist

    if _is_nccl(workspace.group):
        part = torch.empty((rows,) + tuple(s.shape[1:]), dtype=s.dtype, device=s.device)
        dist.reduce_scatter_tensor(part, s, op=dist.ReduceOp.SUM, group=workspace.group)
        return part
    dist.all_reduce(s, op=dist.ReduceOp.SUM, group=workspace.group)
    return s[mine]


def _epilogue(op: str, s: Any, residual: Optional[Any], out: Any, settings: A.Settings) -> None:
    n = s.numel()
    L.check_int32_extent(op, "the number of elements", n)
    grid = ((n + settings.block - 1) // settings.block,)
    res = residual if residual is not None else out
    cx = _flat_constexprs(residual is not None, settings.block)
    launch = L.Launch(epilogue_kernel, aot_name("epilogue"), grid, (s, res, out, n), cx,
                      settings.num_warps)
    L.launch(*launch, generic=launch._replace(name=aot_name("epilogue") + "_generic"))


def _rows_epilogue(op: str, s: Any, residual: Optional[Any], out: Any, weight: Any,
                   norm_out: Any, norm_rows: int, eps: float, settings: A.Settings) -> None:
    rows, dim = L.shape(s)
    res = residual if residual is not None else out
    norm = norm_out if norm_rows else out
    L.launch(epilogue_rows_kernel, aot_name("rows"), (rows,),
             (s, res, out, weight, norm, norm_rows, float(eps)),
             _rows_constexprs(residual is not None, dim), settings.rows_warps)


def allreduce(x: Any, workspace: Any, residual: Optional[Any] = None, out: Optional[Any] = None,
              *, settings: A.Settings = A.SETTINGS) -> Any:
    """``allreduce.allreduce`` over a ProcessGroupWorkspace: ``all_reduce`` of f32(x), then
    out = bf16(sum) (+ residual in bf16 arithmetic); into ``out`` (x when None), returned."""
    op = "allreduce"
    shp = A._check_flat(op, "x", x, None)
    if residual is not None:
        A._check_flat(op, "residual", residual, shp)
    if out is None:
        out = x
    else:
        A._check_flat(op, "out", out, shp)
    _check_common(op, workspace, math.prod(shp),
                  [("x", x), ("out", out), ("residual", residual)])
    s = x.float()
    _all_reduce(s, workspace)
    _epilogue(op, s, residual, out, settings)
    return out


def sp_reduce_scatter(x: Any, workspace: Any, residual: Optional[Any] = None,
                      out: Optional[Any] = None, *, settings: A.Settings = A.SETTINGS) -> Any:
    """``allreduce.sp_reduce_scatter`` over a ProcessGroupWorkspace: the reduce-scatter of
    f32(x) (see ``_reduce_scatter``), then the flat epilogue into ``out`` [rows, ...]."""
    op = "sp_reduce_scatter"
    _check_workspace(op, workspace)
    residual, out = A.reduce_scatter_args(op, x, workspace, residual, out)
    world = workspace.world
    _check_common(op, workspace, math.prod(L.shape(x)) // world,
                  [("x", x), ("out", out), ("residual", residual)])
    s = _reduce_scatter(x.float(), workspace)
    _epilogue(op, s, residual, out, settings)
    return out


def sp_all_gather(x: Any, workspace: Any, out: Optional[Any] = None, *,
                  settings: A.Settings = A.SETTINGS) -> Any:
    """``allreduce.sp_all_gather`` over a ProcessGroupWorkspace: the bf16 bits of every
    rank's x (moved as bytes: exact, every bit pattern included) into rows
    [r * rows, (r + 1) * rows) of ``out`` [world * rows, ...]. No kernel."""
    op = "sp_all_gather"
    _check_workspace(op, workspace)
    out = A.all_gather_args(op, x, workspace, out)
    n = math.prod(L.shape(x))
    _check_common(op, workspace, n, [("x", x), ("out", out)])
    if _warming() or not n:
        return out
    import torch
    import torch.distributed as dist

    xb = x.reshape(-1).view(torch.uint8)
    ob = out.view(-1).view(torch.uint8)
    if _is_nccl(workspace.group):
        dist.all_gather_into_tensor(ob, xb, group=workspace.group)
    else:  # gloo: the list form into views of out
        dist.all_gather(list(ob.chunk(workspace.world)), xb, group=workspace.group)
    return out


def allreduce_rmsnorm(x: Any, workspace: Any, weight: Any, eps: float = 1e-6, *,
                      residual: Optional[Any] = None, norm_rows: Optional[int] = None,
                      out: Optional[Any] = None, norm_out: Optional[Any] = None,
                      settings: A.Settings = A.SETTINGS) -> tuple:
    """``allreduce.allreduce_rmsnorm`` over a ProcessGroupWorkspace: ``all_reduce`` of f32(x),
    then the row epilogue (one launch). Returns (out, norm_out)."""
    op = "allreduce_rmsnorm"
    rows, dim = A._check_rows_tensor(op, "x", x, (None, None))
    return _rows_call(op, workspace, rows, dim, {"x": x}, weight, eps, residual, norm_rows, out,
                      norm_out, settings)


def finalize_push_norm(gemm2: Any, topk_ids: Any, topk_weights: Any, workspace: Any,
                       weight: Any, eps: float = 1e-6, *, residual: Optional[Any] = None,
                       out: Optional[Any] = None, norm_out: Optional[Any] = None,
                       settings: A.Settings = A.SETTINGS) -> tuple:
    """``allreduce.finalize_push_norm`` over a ProcessGroupWorkspace: the finalize rows
    (``finalize_rows_kernel``, fp32 rounded to bf16, widened), their ``all_reduce``, then the
    row epilogue over every row. Returns (out, norm_out)."""
    op = "finalize_push_norm"
    _, dim = A._check_rows_tensor(op, "gemm2", gemm2, (None, None))
    tokens, _ = A._check_rows_tensor(op, "topk_ids", topk_ids, (None, A.TOPK), ("int32",))
    A._check_rows_tensor(op, "topk_weights", topk_weights, (tokens, A.TOPK), ("float32",))
    if out is None:
        import torch

        out = torch.empty((tokens, dim), dtype=gemm2.dtype, device=gemm2.device)
    tensors = {"gemm2": gemm2, "topk_ids": topk_ids, "topk_weights": topk_weights}
    return _rows_call(op, workspace, tokens, dim, tensors, weight, eps, residual, None, out,
                      norm_out, settings)


def _check_common(op: str, workspace: Any, chunk: int, named: list) -> None:
    """The checks every flat form shares after its tensors': the workspace's kind, one device,
    an even chunk (allreduce.py's contract, kept so that a call is valid on both paths)."""
    _check_workspace(op, workspace)
    L.check_same_device(op, *[(w, t) for w, t in named if t is not None])
    if chunk % 2:
        raise ValueError(f"{op}: the number of elements a rank's chunk holds must be even "
                         f"(bf16 pairs), got {chunk}")


def _rows_call(op: str, workspace: Any, rows: int, dim: int, tensors: dict, weight: Any,
               eps: float, residual: Optional[Any], norm_rows: Optional[int], out: Optional[Any],
               norm_out: Optional[Any], settings: A.Settings) -> tuple:
    """allreduce._rows_call's checks, then the sum and the epilogue."""
    _check_workspace(op, workspace)
    finalize = "x" not in tensors
    norm_rows = rows if norm_rows is None else int(norm_rows)
    if not 0 <= norm_rows <= rows:
        raise ValueError(f"{op}: norm_rows must be in [0, {rows}], got {norm_rows}")
    A._check_rows_tensor(op, "weight", weight, (dim,))
    if residual is not None:
        A._check_rows_tensor(op, "residual", residual, (rows, dim))
    if out is None:
        out = tensors["x"]
    else:
        A._check_rows_tensor(op, "out", out, (rows, dim))
    if dim % 2:
        raise ValueError(f"{op}: the row width must be even (bf16 pairs), got {dim}")
    L.check_int32_extent(op, "rows * width", rows * dim)
    if norm_out is not None:
        A._check_rows_tensor(op, "norm_out", norm_out, (norm_rows, dim))
    import torch

    if norm_out is None:
        norm_out = torch.empty((norm_rows, dim), dtype=torch.bfloat16, device=weight.device)
    L.check_same_device(op, *tensors.items(), ("out", out), ("weight", weight),
                        ("norm_out", norm_out),
                        *([("residual", residual)] if residual is not None else []))
    if not rows:
        return out, norm_out
    if finalize:
        s = torch.empty((rows, dim), dtype=torch.float32, device=out.device)
        L.launch(finalize_rows_kernel, aot_name("finalize"), (rows,),
                 (tensors["gemm2"], tensors["topk_ids"], tensors["topk_weights"], s),
                 _finalize_constexprs(dim), settings.rows_warps)
    else:
        s = tensors["x"].float()
    _all_reduce(s, workspace)
    _rows_epilogue(op, s, residual, out, weight, norm_out, norm_rows, eps, settings)
    return out, norm_out
