"""kiln.distributed: symmetric workspaces for multi-GPU kernels, over CUDA IPC.

A symmetric workspace is a device allocation of the same size on every rank (one process a
rank; ranks may share one GPU, since CUDA IPC maps another process's allocation on the same
device) whose peers' allocations are mapped into every process. A multi-GPU kernel takes the
peer table -- ``world`` 64-bit addresses, entry r rank r's workspace as mapped in this process
-- as a pointer argument and indexes it by rank; the all-zero state is the collectives'
"empty" (docs/kernels/collectives.md). Peers are reached by unicast CUDA IPC / P2P mappings
only; NVLink multicast is never used. The C++ side is ``kiln::SymmetricWorkspace``
(runtime/include/kiln/Runtime/Distributed.h).

Example (one process a rank, any torch.distributed backend: only small records travel)::

    import torch, torch.distributed as dist
    from kiln.distributed import SymmetricBuffer

    dist.init_process_group("gloo")
    torch.cuda.set_device(0)           # N ranks may share one GPU
    buf = SymmetricBuffer(1 << 20)     # collective: every rank, the same size
    allreduce[grid](x, buf.peer_table, buf.rank, buf.world)
    flags = buf.local(torch.int32, (64,))   # a view of this rank's workspace

Creating a buffer is collective over the group, and no rank is left waiting when another
fails: every rank takes part in the exchange of records, even one whose allocation failed
(it publishes its error instead), and every rank checks every record, so a rank with another
size, say, makes every rank raise. Without torch (or with another transport) pass ``rank``,
``world`` and ``exchange``: a function that takes this rank's record (bytes) and returns every
rank's, in rank order.

torch is imported only when a buffer is made over torch.distributed or a tensor view is
asked for; importing this module needs neither torch nor a GPU.
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from . import _runtime
from .host import resolve_stream

KilnError = _runtime.KilnError

#: The most ranks a symmetric workspace spans.
MAX_WORLD: int = _runtime.MAX_WORKSPACE_WORLD

#: What a rank publishes in place of its record when its allocation failed (the error follows;
#: the C++ runtime's SymmetricWorkspace::create publishes the same).
_FAILED = _runtime.FAILED_WORKSPACE_RECORD

Exchange = Callable[[bytes], Sequence[bytes]]

__all__ = ["CollectiveError", "Exchange", "KilnError", "MAX_WORLD", "SymmetricBuffer"]


class CollectiveError(KilnError):
    """A collective kernel's call failed on this rank (a peer's data never came, ranks that
    disagreed on a size): raised by the collectives' checks, after which the workspace is out
    of step until every rank resets it."""


def _torch() -> Any:
    try:
        import torch  # noqa: PLC0415 - optional: loaded only for a torch view or exchange
    except ImportError as e:
        raise RuntimeError("kiln.distributed: tensor views of a SymmetricBuffer need torch, "
                           "which is not installed") from e
    return torch


def _torch_distributed() -> Any:
    try:
        import torch.distributed as dist  # noqa: PLC0415 - optional, as above
    except ImportError as e:
        raise RuntimeError(
            "kiln.distributed: SymmetricBuffer exchanges its records over torch.distributed, "
            "and torch is not installed; pass rank=, world= and exchange= to use another "
            "transport") from e
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            "kiln.distributed: SymmetricBuffer needs torch.distributed initialized: call "
            "torch.distributed.init_process_group(...) on every rank first (any backend, gloo "
            "included), or pass rank=, world= and exchange= to use another transport")
    return dist


class _DeviceMemory:
    """``__cuda_array_interface__`` over device memory, for ``torch.as_tensor``. It holds the
    workspace, and the tensor made from it holds this object: the memory outlives every view."""

    def __init__(self, owner: Any, address: int, typestr: str, shape: Tuple[int, ...]):
        self._owner = owner
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (address, False), "strides": None,
            "version": 3,
        }


class SymmetricBuffer:
    """This rank's symmetric workspace of ``nbytes`` bytes, zero-filled, with every peer's
    mapped (see the module's documentation).

    ``SymmetricBuffer(nbytes, group=None)`` is collective over the torch.distributed process
    group ``group`` (the default group when None): every rank of it must make one with the
    same ``nbytes``. ``rank`` and ``world`` default to the group's; ``exchange`` (a function
    ``record -> every rank's record, in rank order``) replaces ``all_gather_object`` over the
    group. Raises KilnError on every rank when a rank's allocation or the records' check
    fails (sizes that differ, a peer GPU without peer access, ...), RuntimeError when
    torch.distributed is needed and not initialized.

    The memory stays allocated until ``close()`` (or the end of a ``with`` block) and the last
    tensor view are gone. Close only once no peer's kernel uses the workspace any more (a
    barrier between the ranks first).
    """

    #: Peers reach this workspace by loads and stores (a stand-in over a process group, where
    #: they do not, says False).
    peer_mapped = True

    def __init__(self, nbytes: int, group: Any = None, *, exchange: Optional[Exchange] = None,
                 rank: Optional[int] = None, world: Optional[int] = None):
        if rank is None or world is None or exchange is None:
            dist = _torch_distributed()
            rank = dist.get_rank(group) if rank is None else rank
            world = dist.get_world_size(group) if world is None else world
            if exchange is None:
                exchange = _all_gather_exchange(dist, world, group)
        workspace, error = None, None
        try:
            nbytes = operator.index(nbytes)
            if nbytes <= 0:
                raise KilnError(f"kiln: symmetric workspace: the size must be positive, got "
                                f"{nbytes} bytes")
            workspace = _runtime.SymmetricWorkspace.allocate(nbytes, rank, world)
            record = workspace.exchange_record()
        except Exception as e:  # published, so that no peer waits for this rank's record
            error = e
            record = _FAILED + str(e).encode()
        records = [bytes(r) for r in exchange(record)]
        if error is not None:
            raise error
        for r, rec in enumerate(records):
            if rec.startswith(_FAILED):
                raise KilnError(f"kiln: symmetric workspace: rank {r} failed to allocate its "
                                f"workspace: {rec[len(_FAILED):].decode(errors='replace')}")
        workspace.open(records)
        self._workspace: Optional[Any] = workspace
        self._exchange = exchange

    # -- what it is ------------------------------------------------------------------------

    def _open(self) -> Any:
        if self._workspace is None:
            raise ValueError("SymmetricBuffer is closed")
        return self._workspace

    @property
    def rank(self) -> int:
        return self._open().rank

    @property
    def world(self) -> int:
        return self._open().world

    @property
    def nbytes(self) -> int:
        """The size every rank asked for (the allocation is rounded up to 256 bytes)."""
        return self._open().bytes

    @property
    def device(self) -> int:
        """The CUDA device ordinal of the workspace."""
        return self._open().device

    def barrier(self) -> None:
        """Collective: returns once every rank has called it (an exchange of empty records
        over the buffer's transport). It orders host code only, not GPU work."""
        self._open()
        self._exchange(b"")

    def peer_address(self, rank: int) -> int:
        """Rank ``rank``'s workspace as mapped in this process (this rank's: ``local``)."""
        return self._open().peer(rank)

    # -- tensor views ----------------------------------------------------------------------

    @property
    def peer_table(self) -> Any:
        """The peer table as a torch int64 CUDA tensor of ``world`` addresses (a view of the
        device array the kernels read)."""
        ws = self._open()
        torch = _torch()
        memory = _DeviceMemory(ws, ws.peer_table, "<i8", (ws.world,))
        return torch.as_tensor(memory, device=f"cuda:{ws.device}")

    def local(self, dtype: Any = None, shape: Union[None, int, Sequence[int]] = None,
              offset: int = 0) -> Any:
        """A torch tensor viewing this rank's workspace from byte ``offset`` on: ``shape``
        elements of ``dtype`` (default torch.uint8), or as many as fit when ``shape`` is
        None. Raises ValueError if the view does not fit in ``nbytes`` or ``offset`` is not
        a multiple of the element size."""
        ws = self._open()
        torch = _torch()
        dtype = torch.uint8 if dtype is None else dtype
        itemsize = dtype.itemsize
        nbytes = ws.bytes
        offset = operator.index(offset)
        if not 0 <= offset <= nbytes:
            raise ValueError(f"SymmetricBuffer.local: offset {offset} is outside the "
                             f"workspace's {nbytes} bytes")
        if offset % itemsize:
            raise ValueError(f"SymmetricBuffer.local: offset {offset} is not a multiple of "
                             f"{itemsize} (the size of {dtype})")
        if shape is None:
            dims: Tuple[int, ...] = ((nbytes - offset) // itemsize,)
        elif isinstance(shape, int):
            dims = (shape,)
        else:
            dims = tuple(operator.index(d) for d in shape)
        if any(d < 0 for d in dims):
            raise ValueError(f"SymmetricBuffer.local: negative dimension in shape {dims}")
        size = math.prod(dims) * itemsize
        if offset + size > nbytes:
            raise ValueError(f"SymmetricBuffer.local: {dims} of {dtype} at offset {offset} "
                             f"needs bytes [{offset}, {offset + size}), beyond the "
                             f"workspace's {nbytes}")
        memory = _DeviceMemory(ws, ws.local + offset, "|u1", (size,))
        raw = torch.as_tensor(memory, device=f"cuda:{ws.device}")
        return raw.view(dtype).view(dims)

    # -- state -----------------------------------------------------------------------------

    def zero_(self, stream: Any = None) -> "SymmetricBuffer":
        """Resets this rank's workspace to zeros (the protocol's "empty") on ``stream``
        (default: torch's current stream when torch is loaded, else the legacy default
        stream). No peer may be using it meanwhile."""
        ws = self._open()
        if stream is None and "torch" in sys.modules:
            stream = sys.modules["torch"].cuda.current_stream(ws.device)
        ws.zero(resolve_stream(stream))
        return self

    def close(self) -> None:
        """Releases this buffer's hold on the workspace (idempotent); the memory is freed
        once no tensor view of it remains."""
        self._workspace = None

    def __enter__(self) -> "SymmetricBuffer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._workspace is None:
            return "<kiln SymmetricBuffer (closed)>"
        ws = self._workspace
        return (f"<kiln SymmetricBuffer rank {ws.rank} of {ws.world}, {ws.bytes} bytes on "
                f"cuda:{ws.device}>")


def _all_gather_exchange(dist: Any, world: int, group: Any) -> Exchange:
    """Every rank's record by ``all_gather_object`` over ``group`` (any backend)."""

    def exchange(record: bytes) -> List[bytes]:
        records: List[Any] = [None] * world
        dist.all_gather_object(records, record, group=group)
        return records

    return exchange
