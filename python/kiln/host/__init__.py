"""kiln.host: the host-side model of a kernel argument, owned in one place.

Every launch path -- the JIT's ``kernel[grid](...)``, a bundle's ``LaunchableKernel``, the CPU
interpreter, ``kiln.autotune`` -- and the compiler's ``Specialization`` check user arguments
with these rules, before anything compiles or launches:

- ``kiln.host.tensors``: dtype names (torch, numpy, CUDA array typestrs, DLPack) and tensor
  detection (element type, address, device);
- ``kiln.host.tensor_descriptor``: ``TensorDescriptor``, the host side of a TMA descriptor;
- ``kiln.host.args``: scalar typing (a Python int is i32 / i64 / u64 by value), the
  divisibility-16 and value-1 specialization rule, constexpr values, and the launch check of
  arguments against a compiled kernel's parameters (``marshal_args``);
- ``kiln.host.launch``: the grid, the thread-block cluster, ``num_warps``, ``maxnreg`` and the
  stream, with CUDA's limits (which ``kiln::Kernel::launch``, the C++ runtime's last check,
  shares).

This package sits on the bottom floor beside ``kiln.language`` (which it reads for the dtype
list): it imports neither the compiler nor the runtime, and needs no extension (the runtime's
``kiln._runtime`` is loaded only to encode a tensor map).
"""

from .args import (
    CONSTEXPR_TYPES,
    DIVISIBILITY,
    arg_type,
    check_constexpr,
    marshal_args,
    param_desc,
    pointer_args,
    scalar_type,
    specialization,
)
from .launch import (
    MAX_CLUSTER_SIZE,
    MAX_GRID,
    MAX_MAXNREG,
    MAX_NUM_WARPS,
    MIN_MAXNREG,
    PORTABLE_CLUSTER_SIZE,
    check_cluster_grid,
    grid_dim_error,
    launch_grid,
    normalize_cluster,
    normalize_grid,
    normalize_maxnreg,
    normalize_num_warps,
    resolve_stream,
)
from .tensor_descriptor import TensorDescriptor
from .tensors import (
    DTYPES,
    FRAMEWORK_DTYPES,
    ITEMSIZE,
    PointerInfo,
    is_array_like,
    is_torch_tensor,
    kiln_dtype_name,
    pointer_info,
    tensor_address,
    tensor_dtype,
    typestr_dtypes,
)

__all__ = [
    "CONSTEXPR_TYPES", "DIVISIBILITY", "DTYPES", "FRAMEWORK_DTYPES", "ITEMSIZE",
    "MAX_CLUSTER_SIZE", "MAX_GRID", "MAX_MAXNREG", "MAX_NUM_WARPS", "MIN_MAXNREG",
    "PORTABLE_CLUSTER_SIZE", "PointerInfo", "TensorDescriptor", "arg_type", "check_cluster_grid",
    "check_constexpr", "grid_dim_error", "is_array_like", "is_torch_tensor", "kiln_dtype_name",
    "launch_grid", "marshal_args", "normalize_cluster", "normalize_grid", "normalize_maxnreg",
    "normalize_num_warps", "param_desc", "pointer_args", "pointer_info", "resolve_stream",
    "scalar_type",
    "specialization", "tensor_address", "tensor_dtype", "typestr_dtypes",
]
