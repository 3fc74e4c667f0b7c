"""The CPU interpreter: runs ``@kiln.jit`` kernels with numpy, program instance by
program instance.

    KILN_INTERPRET=1 python my_script.py          # every @kiln.jit launch
    @kiln.jit(interpret=True)                      # one kernel
    kiln.testing.interpret(kernel, grid, *args, **constexprs)   # in tests

Pointer arguments are numpy arrays, objects exposing ``__array_interface__`` or
torch CPU tensors; the kernel reads and writes their memory. bf16 and fp8 arrays
use ``ml_dtypes`` (``ml_dtypes.bfloat16``, ``float8_e4m3fn``, ``float8_e5m2``).
Scalars are Python ints (int32, or int64 when they do not fit), floats
(float32) and bools.

The kernel goes through the compiler's own code generator and semantic layer
with an eager numpy builder (``kiln.interpreter.builder.NumpyBuilder``), so it
accepts and rejects exactly what the compiler does (and reports it as the same
``CompilationError`` at the same line). What differs from the GPU:

* math is numpy's (``kl.exp``/``kl.tanh`` are the precise functions, not the
  GPU's approximate ones, whatever ``precise`` says);
* masked-off lanes of a load without ``other`` read 0 (undefined on the GPU);
* an out-of-bounds access on an unmasked lane is an error at its line (on the
  GPU it is a fault or silent corruption);
* programs run one after another (x fastest, then y, then z), so a kernel that
  relies on programs running concurrently does not work -- except the programs of
  one thread-block cluster (``cluster=(x, y, z)``), which run concurrently as
  threads so that ``kl.cluster_barrier`` and ``kl.cluster_load`` work as on the GPU
  (clusters themselves run one after another).
"""

from __future__ import annotations

import inspect
import math
import os
import threading
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..compiler.code_generator import CodeGenerator, FunctionSource
from ..compiler.semantic import Semantic
from ..host import (
    TensorDescriptor,
    check_constexpr,
    is_torch_tensor,
    kiln_dtype_name,
    launch_grid,
    scalar_type,
)
from ..language import core as lc
from ..language.core import constexpr, tensor
from ..language.errors import CompilationError
from .builder import ClusterSync, Desc, InterpreterError, NumpyBuilder, Ptr, numpy_dtype

__all__ = ["InterpreterError", "enabled", "run", "pointer_arg"]


def enabled() -> bool:
    """Whether ``KILN_INTERPRET=1`` is set."""
    return os.environ.get("KILN_INTERPRET", "0") not in ("", "0")


def _as_numpy(obj: Any, what: str) -> np.ndarray:
    if isinstance(obj, np.ndarray):
        return obj
    if is_torch_tensor(obj):
        import torch  # noqa: PLC0415 - only when the user passes a torch tensor

        if obj.device.type != "cpu":
            raise TypeError(f"{what}: the interpreter needs CPU tensors, got one on "
                            f"{obj.device}")
        import ml_dtypes  # noqa: PLC0415

        special = {torch.bfloat16: (torch.int16, ml_dtypes.bfloat16)}
        for name, np_name in (("float8_e4m3fn", "float8_e4m3fn"),
                              ("float8_e5m2", "float8_e5m2")):
            if hasattr(torch, name):
                special[getattr(torch, name)] = (torch.uint8, getattr(ml_dtypes, np_name))
        if obj.dtype in special:
            via, np_dt = special[obj.dtype]
            return obj.detach().view(via).numpy().view(np_dt)
        return obj.detach().numpy()
    if hasattr(obj, "__array_interface__"):
        return np.asarray(obj)
    raise TypeError(f"{what}: expected a numpy array, an object with __array_interface__, a "
                    f"torch CPU tensor, an int, a float or a bool, got {type(obj).__name__}")


def pointer_arg(obj: Any, what: str = "argument", param: str = "?") -> Tuple[str, Ptr]:
    """(kiln pointer type string, Ptr at the array's first element) for an array.
    The Ptr's buffer covers every element the array's strides reach."""
    arr = _as_numpy(obj, what)
    name = kiln_dtype_name(arr.dtype)
    if name is None:
        raise TypeError(f"{what}: unsupported array dtype {arr.dtype}")
    elem = lc.dtype_from_str(name)
    item = arr.dtype.itemsize
    if any(s < 0 or s % item for s in arr.strides):
        raise TypeError(f"{what}: the interpreter needs non-negative strides that are "
                        f"multiples of the element size, got {arr.strides}")
    if arr.size == 0:
        span = 0
    else:
        span = 1 + sum((n - 1) * s // item for n, s in zip(arr.shape, arr.strides))
    # as_strided goes through __array_interface__, which cannot tell the ml_dtypes
    # (fp8, bf16) apart: stride a same-width unsigned view and view it back.
    raw = arr.view(np.dtype(f"u{item}")) if arr.ndim else arr.reshape(1).view(f"u{item}")
    flat = np.lib.stride_tricks.as_strided(raw, shape=(span,), strides=(item,),
                                           writeable=arr.flags.writeable).view(arr.dtype)
    storage = numpy_dtype(elem)
    if flat.dtype != storage:  # unsigned ints are stored as their signed twins
        flat = flat.view(storage)
    return "*" + elem.short, Ptr(flat, 0, param)


_SCALAR_STORAGE = {"i1": np.bool_, "i32": np.int32, "i64": np.int64, "u64": np.int64,
                   "f32": np.float32}


def _scalar_arg(value: Any, what: str) -> Tuple[str, np.ndarray]:
    """A scalar argument typed by the launch rule (``kiln.host.scalar_type``), as the 0-d
    array the builder computes with; ("", None) for a value that is not a scalar. numpy
    scalars count as the Python numbers they hold."""
    if isinstance(value, np.generic) and isinstance(value, (np.bool_, np.integer, np.floating)):
        value = value.item()
    ty = scalar_type(value, what)
    if ty is None:
        return "", None  # type: ignore[return-value]
    v = value - 2**64 if ty == "u64" else value  # unsigned ints share the signed storage
    return ty, np.array(v, dtype=_SCALAR_STORAGE[ty])


def _bind(source: FunctionSource, name: str, args: Sequence[Any], kwargs: Mapping[str, Any],
          semantic: Semantic) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(scope for the kernel body, all arguments by name): the same parameter
    rules as the compiler's (``make_tile_ir``) and the JIT's checks."""
    try:
        bound = inspect.Signature(source.params).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"kernel '{name}': {e}") from None
    bound.apply_defaults()
    scope: Dict[str, Any] = {}
    filename, lineno, col, line = source.location(source.tree)
    for p in source.params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise CompilationError(filename, lineno, col, f"kernel '{name}': *args/**kwargs "
                                   f"parameters are not supported", line)
        what = f"kernel '{name}': argument '{p.name}'"
        value = bound.arguments[p.name]
        if p.name in source.constexpr_params:
            scope[p.name] = constexpr(check_constexpr(value, f"{what} is a constexpr and"))
            continue
        ty, handle = _scalar_arg(value, what)
        if not ty and isinstance(value, TensorDescriptor):
            _, ptr = pointer_arg(value.base, what, p.name)
            ty, handle = value.signature, Desc(ptr, value.shape, value.strides,
                                               value.block_shape)
        if not ty:
            ty, handle = pointer_arg(value, what, p.name)
        scope[p.name] = tensor(handle, lc.dtype_from_str(ty))
    return scope, dict(bound.arguments)


def _run_program(source: FunctionSource, name: str, scope: Dict[str, Any],
                 builder: NumpyBuilder, semantic: Semantic) -> None:
    """Runs the program at ``builder.pid``."""
    pid = builder.pid
    try:
        gen = CodeGenerator(source, semantic, scope)
        gen.run_body(source.tree.body)
    except CompilationError as e:
        if builder.fault:
            raise CompilationError(e.filename, e.lineno, e.col, f"{e.message} (program {pid})",
                                   e.source_line, e.notes) from None
        raise
    if gen.return_value is not None:
        filename, lineno, col, line = source.location(source.tree)
        raise CompilationError(filename, lineno, col, f"kernel '{name}' must not return a value",
                               line)


def _run_cluster(source: FunctionSource, name: str, scope: Dict[str, Any],
                 dims: Tuple[int, int, int], cluster: Tuple[int, int, int],
                 first: Tuple[int, int, int]) -> None:
    """Runs the programs of the cluster whose first program is ``first``, one thread
    each, sharing a ClusterSync; re-raises the first program error."""
    sync = ClusterSync(math.prod(cluster))
    errors: list = []
    lock = threading.Lock()

    def program(pid: Tuple[int, int, int]) -> None:
        builder = NumpyBuilder()
        builder.grid, builder.cluster, builder.cluster_sync, builder.pid = \
            dims, cluster, sync, pid
        semantic = Semantic(builder)
        semantic.cluster = cluster
        try:
            with np.errstate(all="ignore"):
                _run_program(source, name, scope, builder, semantic)
        except BaseException as e:  # noqa: BLE001 - handed to the launching thread
            with lock:
                if not sync.aborted:  # not the echo of another program's failure
                    errors.append(e)
                    sync.abort()
        finally:
            sync.exit()

    threads = [threading.Thread(target=program, args=((first[0] + x, first[1] + y,
                                                       first[2] + z),),
                                name=f"kiln-interpret-{name}-{first[0] + x},{first[1] + y},"
                                     f"{first[2] + z}")
               for z in range(cluster[2]) for y in range(cluster[1]) for x in range(cluster[0])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def run(kernel: Any, grid: Any, args: Sequence[Any] = (),
        kwargs: Optional[Mapping[str, Any]] = None, cluster: Any = None) -> None:
    """Runs ``kernel`` (a ``JITFunction``) over ``grid`` on the CPU; ``cluster``
    overrides the kernel's thread-block cluster shape."""
    kwargs = dict(kwargs or {})
    kwargs.pop("stream", None)
    kwargs.pop("num_warps", None)  # does not change the result
    if cluster is None:
        cluster = kwargs.pop("cluster", None)
    cluster = kernel._cluster(cluster)
    source = kernel.source
    name = kernel.__name__
    builder = NumpyBuilder()
    semantic = Semantic(builder)
    semantic.cluster = cluster
    scope, named = _bind(source, name, args, kwargs, semantic)
    if callable(grid):
        grid = grid(named)
    dims = launch_grid(grid, name, cluster)
    builder.grid = dims
    builder.cluster = cluster
    if cluster != (1, 1, 1):
        for z in range(0, dims[2], cluster[2]):
            for y in range(0, dims[1], cluster[1]):
                for x in range(0, dims[0], cluster[0]):
                    _run_cluster(source, name, scope, dims, cluster, (x, y, z))
        return
    with np.errstate(all="ignore"):
        for z in range(dims[2]):
            for y in range(dims[1]):
                for x in range(dims[0]):
                    builder.pid = (x, y, z)
                    _run_program(source, name, scope, builder, semantic)
