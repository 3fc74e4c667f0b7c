"""The rules of a launch's own arguments: the grid, the thread-block cluster, ``num_warps``,
``maxnreg`` and the stream.

Every launch path (``kernel[grid](...)`` of the JIT, a bundle's ``LaunchableKernel``, the
interpreter, ``kiln.autotune``) checks them here, before anything compiles or launches. The
limits are CUDA's, and the C++ runtime (``kiln::Kernel::launch``, the last check before the
driver) enforces the same ones with the same messages:

- grid: 1 to 3 ints; ``x`` in [0, 2**31 - 1], ``y`` and ``z`` in [0, 65535]; a zero
  dimension launches nothing;
- cluster: 1 to 3 positive ints, at most 16 programs (more than 8, the portable size, take
  the non-portable opt-in the runtime makes); every grid dimension a multiple of it;
- ``num_warps``: a power of two in [1, 32] (at most 1024 threads a program);
- ``maxnreg``: None or an int in [24, 255] (registers a thread).
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence, Tuple

from .tensor_descriptor import TensorDescriptor
from .tensors import is_torch_tensor

#: The largest grid dimension along x, y and z (CUDA's ``maxGridSize``).
MAX_GRID = (2**31 - 1, 65535, 65535)

#: Programs per thread-block cluster that every supported arch launches: 8 is the portable
#: cluster size; sm_90 and sm_100 launch 16 with the non-portable opt-in, which the runtime
#: makes for kernels whose cluster is larger than PORTABLE_CLUSTER_SIZE.
MAX_CLUSTER_SIZE = 16
PORTABLE_CLUSTER_SIZE = 8

#: The register caps ``maxnreg`` accepts (ptxas allocates at least 24 registers a thread;
#: a thread addresses at most 255); the dialect verifies the same range.
MIN_MAXNREG, MAX_MAXNREG = 24, 255

#: ``num_warps`` accepts the powers of two up to this (1024 threads a program).
MAX_NUM_WARPS = 32


def grid_dim_error(name: str, dim: int, value: Any) -> str:
    """The message of a grid dimension out of range (the runtime's too)."""
    return (f"kernel '{name}': grid dimension {dim} = {value} is out of range "
            f"[0, {MAX_GRID[dim] if 0 <= dim < 3 else MAX_GRID[0]}]")


def normalize_grid(grid: Any, name: str) -> Tuple[int, int, int]:
    """A grid of 1 to 3 ints (or one int) as 3 ints within ``MAX_GRID``; TypeError or
    ValueError naming the kernel."""
    if isinstance(grid, int) or hasattr(grid, "__index__"):
        grid = (grid,)
    try:
        dims = tuple(int(g.__index__()) for g in grid)
    except (TypeError, AttributeError):
        raise TypeError(f"kernel '{name}': grid must be 1 to 3 ints, got {grid!r}") from None
    if not 1 <= len(dims) <= 3:
        raise TypeError(f"kernel '{name}': grid must have 1 to 3 dimensions, got {len(dims)}")
    for i, d in enumerate(dims):
        if not 0 <= d <= MAX_GRID[i]:
            raise ValueError(grid_dim_error(name, i, d))
    return dims + (1,) * (3 - len(dims))  # type: ignore[return-value]


def check_cluster_grid(name: str, dims: Tuple[int, int, int],
                       cluster: Tuple[int, int, int]) -> None:
    """Every grid dimension is a multiple of the cluster's."""
    if any(d % c for d, c in zip(dims, cluster)):
        raise ValueError(f"kernel '{name}': grid {tuple(dims)} is not a multiple of the "
                         f"cluster shape {tuple(cluster)}")


def launch_grid(grid: Any, name: str, cluster: Tuple[int, int, int] = (1, 1, 1)
                ) -> Tuple[int, int, int]:
    """The grid of a launch, checked: ``normalize_grid``, then (for a non-empty grid) the
    cluster rule."""
    dims = normalize_grid(grid, name)
    if cluster != (1, 1, 1) and 0 not in dims:
        check_cluster_grid(name, dims, cluster)
    return dims


def normalize_cluster(cluster: Any, what: str = "cluster") -> Tuple[int, int, int]:
    """A thread-block cluster shape as 3 positive ints: ``None`` is (1, 1, 1), an int
    ``n`` is (n, 1, 1), 1 to 3 ints are padded with 1s; at most ``MAX_CLUSTER_SIZE``
    programs in all."""
    if cluster is None:
        return (1, 1, 1)
    dims = (cluster,) if isinstance(cluster, int) else cluster
    try:
        dims = tuple(dims)
    except TypeError:
        raise TypeError(f"{what} must be 1 to 3 positive ints, got {cluster!r}") from None
    if not 1 <= len(dims) <= 3 or any(isinstance(d, bool) or not isinstance(d, int)
                                      for d in dims):
        raise TypeError(f"{what} must be 1 to 3 positive ints, got {cluster!r}")
    if any(d < 1 for d in dims):
        raise ValueError(f"{what} must be positive, got {cluster!r}")
    dims = dims + (1,) * (3 - len(dims))
    size = dims[0] * dims[1] * dims[2]
    if size > MAX_CLUSTER_SIZE:
        raise ValueError(f"{what} {dims} has {size} programs; at most {MAX_CLUSTER_SIZE} (the "
                         f"non-portable cluster size) are supported")
    return dims  # type: ignore[return-value]


def normalize_maxnreg(maxnreg: Any, what: str = "maxnreg") -> Optional[int]:
    """None, or the register cap as an int in [MIN_MAXNREG, MAX_MAXNREG]."""
    if maxnreg is None:
        return None
    if isinstance(maxnreg, bool) or not isinstance(maxnreg, int):
        raise TypeError(f"{what} must be an int or None, got {maxnreg!r}")
    if not MIN_MAXNREG <= maxnreg <= MAX_MAXNREG:
        raise ValueError(f"{what} must be in [{MIN_MAXNREG}, {MAX_MAXNREG}] (registers a "
                         f"thread), got {maxnreg}")
    return maxnreg


def normalize_num_warps(num_warps: Any, what: str = "num_warps") -> int:
    """``num_warps`` as an int: a power of two in [1, MAX_NUM_WARPS]."""
    if isinstance(num_warps, bool) or not hasattr(num_warps, "__index__"):
        raise ValueError(f"{what} must be a power of two in [1, {MAX_NUM_WARPS}], got "
                         f"{num_warps!r}")
    n = num_warps.__index__()
    if n < 1 or n > MAX_NUM_WARPS or n & (n - 1):
        raise ValueError(f"{what} must be a power of two in [1, {MAX_NUM_WARPS}], got {n}")
    return n


def resolve_stream(stream: Any, args: Sequence[Any] = ()) -> int:
    """The CUstream handle as an int: `stream` itself (int, torch.cuda.Stream or
    an object with ``__cuda_stream__``), or for None torch's current stream when
    a torch CUDA tensor is among `args`, else 0 (the legacy default stream)."""
    if stream is None:
        for a in args:
            a = a.base if isinstance(a, TensorDescriptor) else a  # the described tensor
            if is_torch_tensor(a) and getattr(a, "is_cuda", False):
                torch = sys.modules["torch"]  # loaded: we were given a torch tensor
                return int(torch.cuda.current_stream(a.device).cuda_stream)
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    raise TypeError(f"stream must be an int handle or a CUDA stream object, got "
                    f"{type(stream).__name__}")


#: The launch observer, None unless ``kiln.torch_library`` is recording a torch op's wrapper.
#: While it is set, every launch path calls ``observer(kernel, grid, values, pointers)`` just
#: before ``kernel.launch(grid, values, stream)`` (``kernel`` the runtime binding's kernel,
#: ``values`` the marshalled arguments, ``pointers`` the (index in ``values``, argument)
#: pairs of the pointer params; ``kiln.host.args.pointer_args``) and takes the checked path,
#: whose launches it sees, instead of the C++ hot path.
observer = None

