"""The rules of a kernel's own arguments: what type a value gives a parameter, what it
specializes, and how a launch passes it.

- ``arg_type(value, what)``: the signature type of a runtime argument. A tensor is a pointer
  to its dtype (``"*bf16"``); a ``TensorDescriptor`` its ``tensordesc<...>`` type; a Python
  int is ``i32`` if it fits, else ``i64``, else ``u64``; a float is ``f32``; a bool ``i1``.
- ``specialization(ty, value)``: Triton's rule -- an integer or a pointer address that is a
  multiple of ``DIVISIBILITY`` (16) is specialized as such; an integer equal to 1 becomes the
  constant 1 in the body (it stays in the ABI); parameters named in ``do_not_specialize``
  are exempt (the caller's choice).
- ``check_constexpr(value, what)``: a constexpr is a bool, int, float, str, None or dtype.
- ``marshal_args(meta, args)``: the launch check of user arguments against a compiled
  kernel's parameters (dtype, device, alignment, range), giving the ints and floats
  ``kiln._runtime.Kernel.launch`` takes.
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from ..language.core import constexpr, dtype
from .tensor_descriptor import TensorDescriptor
from .tensors import is_array_like, is_torch_tensor, pointer_info, tensor_address, tensor_dtype

#: The divisibility a launch specializes integers and pointer addresses on.
DIVISIBILITY = 16

#: The Python types a constexpr may have.
CONSTEXPR_TYPES = (bool, int, float, str, type(None), dtype)


def check_constexpr(value: Any, what: str) -> Any:
    """The value of a constexpr argument (unwrapped from ``kl.constexpr``); TypeError naming
    ``what`` when it is not a bool, int, float, str, None or dtype."""
    if isinstance(value, constexpr):
        value = value.value
    if not isinstance(value, CONSTEXPR_TYPES):
        raise TypeError(f"{what} must be a bool, int, float, str, None or dtype, got "
                        f"{type(value).__name__}")
    return value


def scalar_type(value: Any, what: str) -> Optional[str]:
    """``i1``/``i32``/``i64``/``u64``/``f32`` of a Python bool, int or float (an int by its
    value); None for anything else; ValueError for an int beyond 64 bits."""
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "i32"
        if -(2**63) <= value < 2**63:
            return "i64"
        if 0 <= value < 2**64:
            return "u64"
        raise ValueError(f"{what}: integer {value} does not fit in 64 bits")
    if isinstance(value, float):
        return "f32"
    return None


def arg_type(value: Any, what: str) -> Tuple[str, Optional[int]]:
    """(signature type, value the divisibility rule looks at) of a runtime argument: the int
    itself, a tensor's address, None for floats, bools and descriptors."""
    ty = scalar_type(value, what)
    if ty is not None:
        return ty, (value if ty[0] in "iu" and ty != "i1" else None)
    if isinstance(value, TensorDescriptor):
        return value.signature, None
    dt = tensor_dtype(value)
    if dt is not None:
        return "*" + dt, tensor_address(value)
    raise TypeError(f"{what}: expected a tensor (torch or __cuda_array_interface__), an int, "
                    f"a float or a bool, got {type(value).__name__}")


def specialization(ty: str, value: Optional[int]) -> Tuple[int, bool]:
    """(divisibility, equal to 1) that a specialized parameter of type ``ty`` gets from
    ``value`` (``arg_type``'s second result)."""
    if value is None:
        return 1, False
    if value % DIVISIBILITY == 0:
        return DIVISIBILITY, False
    return 1, value == 1 and not ty.startswith("*")


# ---------------------------------------------------------------------------
# The launch check against a compiled kernel's parameters
# ---------------------------------------------------------------------------

_INT_RANGES = {
    "i1": (0, 1), "i8": (-(2**7), 2**7 - 1), "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1),
    "u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1),
    # fp8 scalars are passed as their raw bits.
    "f8e4m3": (0, 255), "f8e5m2": (0, 255),
}
_FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38,
              "f64": sys.float_info.max}


def param_desc(p: Mapping[str, Any]) -> str:
    """``x: ptr<bf16> (div 16)``: a parameter of a kernel's metadata, for messages."""
    if p["kind"] == "tensormap":
        sw = f", swizzle {p['swizzle']}" if p.get("swizzle") else ""
        return f"{p['name']}: tensordesc<{p['dtype']}, {'x'.join(map(str, p['box']))}{sw}>"
    if p["kind"] == "ptr":
        div = p.get("divisibility", 1)
        return f"{p['name']}: ptr<{p['dtype']}>" + (f" (div {div})" if div > 1 else "")
    return f"{p['name']}: {p['dtype']}"


def _scalar(value: Any, dtype: str, what: str) -> Union[int, float]:
    if dtype in _INT_RANGES:
        if isinstance(value, float) or not hasattr(value, "__index__"):
            kind = "raw bits as an int" if dtype.startswith("f8") else "an int"
            raise TypeError(f"{what} expects {dtype} ({kind}), got {type(value).__name__}"
                            f" {value!r}")
        v = operator.index(value)
        lo, hi = _INT_RANGES[dtype]
        if not lo <= v <= hi:
            raise ValueError(f"{what}: value {v} is out of range for {dtype} [{lo}, {hi}]")
        return int(v)
    # f16 / bf16 / f32 / f64
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(
            value, "__float__"):
        raise TypeError(f"{what} expects {dtype} (a float), got {type(value).__name__}")
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(f"{what}: cannot convert {value!r} to {dtype} ({e})") from None
    if math.isfinite(v) and abs(v) > _FLOAT_MAX[dtype]:
        raise ValueError(f"{what}: value {v!r} is out of range for {dtype} "
                         f"(largest finite magnitude {_FLOAT_MAX[dtype]!r})")
    return v


def _tensor_map_arg(p: Mapping[str, Any], desc: Any, what: str) -> tuple:
    """(CUtensorMap bytes, dtype, box, swizzle) for a ``tensormap`` param: the
    descriptor must have the element type, box and swizzle the kernel was
    compiled for (a different box would make the copy wait for bytes that
    never come)."""
    expected = param_desc(p).split(": ", 1)[1]
    if not isinstance(desc, TensorDescriptor):
        raise TypeError(f"{what} expects {expected} (a kiln.TensorDescriptor), got "
                        f"{type(desc).__name__}")
    box = [int(b) for b in p["box"]]
    swizzle = int(p.get("swizzle", 0))
    if (desc.dtype, list(desc.block_shape), desc.swizzle) != (p["dtype"], box, swizzle):
        raise TypeError(f"{what} expects {expected}, got a descriptor of {desc.dtype} with box "
                        f"{list(desc.block_shape)} and swizzle {desc.swizzle}")
    if is_torch_tensor(desc.base) and not getattr(desc.base, "is_cuda", True):
        raise ValueError(f"{what}: the descriptor's tensor is on {desc.base.device}, not a "
                         f"CUDA device")
    from .. import _runtime  # noqa: PLC0415 - the runtime extension encodes the map

    try:
        encoded = desc.encode()
    except _runtime.KilnError as e:
        raise ValueError(f"{what}: {e}") from None
    return (encoded, desc.dtype, box, swizzle)


def pointer_args(meta: Mapping[str, Any], args: Sequence[Any]) -> List[Tuple[int, Any]]:
    """The (position, argument) pairs of the pointer params of ``meta`` among ``args``."""
    return [(i, a) for i, (p, a) in enumerate(zip(meta.get("params", []), args))
            if p["kind"] == "ptr"]


def marshal_args(meta: Mapping[str, Any], args: Sequence[Any]) -> List[Any]:
    """Turns user arguments into the ints/floats ``_runtime.Kernel.launch`` takes.

    ``meta`` is a kernel's metadata (``Kernel.meta``: name and params). Pointer
    params accept torch tensors, objects exposing ``__cuda_array_interface__``,
    DLPack-capable CUDA arrays, or a raw int address; the element dtype must be
    the param's dtype, the memory must be on a CUDA device and the address a
    multiple of the param's divisibility. Scalar params accept ints (range
    checked) and, for float params, floats. ``tensormap`` params take a
    kiln.TensorDescriptor of the compiled element type, box and swizzle (passed
    as its encoded CUtensorMap). Raises TypeError (wrong count or
    type) or ValueError (wrong device, alignment or range) naming the kernel and
    the parameter.
    """
    name = meta.get("name", "?")
    params = meta.get("params", [])
    if len(args) != len(params):
        expected = ", ".join(param_desc(p) for p in params) or "no arguments"
        raise TypeError(f"kernel '{name}' expects {len(params)} argument"
                        f"{'' if len(params) == 1 else 's'} ({expected}), got {len(args)}")
    out: List[Union[int, float]] = []
    torch_current = None
    for i, (p, a) in enumerate(zip(params, args)):
        what = f"kernel '{name}': argument '{p['name']}' (param {i})"
        if p["kind"] == "tensormap":
            out.append(_tensor_map_arg(p, a, what))
            continue
        if p["kind"] == "ptr":
            info = pointer_info(a, what)
            if info.dtypes and p["dtype"] not in info.dtypes:
                raise TypeError(f"{what} expects a {p['dtype']} tensor, got {info.where}")
            if info.address < 0 or info.address >= 2**64:
                raise ValueError(f"{what}: address {info.address} is not a 64-bit pointer")
            div = int(p.get("divisibility", 1))
            if div > 1 and info.address % div != 0:
                raise ValueError(f"{what}: pointer {info.address:#x} is not {div}-byte aligned "
                                 f"(divisibility {div})")
            if info.torch_device is not None and info.torch_device.index is not None:
                if torch_current is None:
                    torch = sys.modules["torch"]  # loaded: we were given a torch tensor
                    torch_current = torch.cuda.current_device()
                if info.torch_device.index != torch_current:
                    raise ValueError(f"{what} is on {info.torch_device} but the current device "
                                     f"is cuda:{torch_current}")
            out.append(info.address)
        else:
            if is_array_like(a):
                raise TypeError(f"{what} expects a scalar {p['dtype']}, got {type(a).__name__}")
            out.append(_scalar(a, p["dtype"], what))
    return out
