"""What a host value that stands for memory is, to kiln: its element type and its address.

One table names kiln's dtypes in the frameworks' words (torch and numpy/ml_dtypes spell them
alike); ``__cuda_array_interface__`` typestrs and DLPack type codes map onto the same names.
Every path that meets a tensor -- the JIT's specialization, the runtime's argument check, the
interpreter, ``TensorDescriptor`` -- asks here:

- ``is_torch_tensor(obj)``: a torch tensor (torch is never imported for the user);
- ``tensor_dtype(obj)``: the kiln dtype a pointer parameter specializes on (``"bf16"``), or
  None for a value that is not tensor-like;
- ``tensor_address(obj)``: its device address;
- ``pointer_info(obj, what)``: everything the launch check needs of a pointer argument (torch
  CUDA tensors, CUDA arrays, DLPack CUDA arrays, raw int addresses), with the dtypes it may
  hold;
- ``kiln_dtype_name(dtype)``: a framework dtype (``torch.bfloat16``, ``numpy.float32``) as a
  kiln dtype name, or None.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ..language.core import ALL_DTYPES

#: The kiln dtypes (``"i1"`` ... ``"f8e5m2"``), as the metadata and signatures name them.
DTYPES: Tuple[str, ...] = tuple(d.short for d in ALL_DTYPES)

#: Bytes of one element of each kiln dtype (``i1`` takes a byte).
ITEMSIZE: Dict[str, int] = {d.short: d.itemsize for d in ALL_DTYPES}

#: torch and numpy (with ml_dtypes) dtype names -> kiln dtype. ``str(torch.bfloat16)`` is
#: ``"torch.bfloat16"``; numpy's ``dtype.name`` is ``"bfloat16"``.
FRAMEWORK_DTYPES: Dict[str, str] = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}

#: DLPack type codes -> kiln dtype prefix (code 4 is bfloat, 10/12 are fp8).
_DLPACK_CODES = {0: "i", 1: "u", 2: "f", 4: "bf", 6: "i1", 10: "f8e4m3", 12: "f8e5m2"}

_BY_DTYPE_OBJECT: Dict[Any, Optional[str]] = {}


def kiln_dtype_name(dt: Any) -> Optional[str]:
    """The kiln dtype of a framework dtype object (``torch.bfloat16``, a numpy dtype or its
    name), or None when kiln has no such dtype. Remembered per dtype object, so the hot
    path does no string work."""
    try:
        return _BY_DTYPE_OBJECT[dt]
    except KeyError:
        pass
    except TypeError:  # unhashable
        return FRAMEWORK_DTYPES.get(_dtype_text(dt))
    name = FRAMEWORK_DTYPES.get(_dtype_text(dt))
    _BY_DTYPE_OBJECT[dt] = name
    return name


def _dtype_text(dt: Any) -> str:
    text = str(dt)
    return text[6:] if text.startswith("torch.") else text


_TORCH_TYPES: Dict[type, bool] = {}


def is_torch_tensor(obj: Any) -> bool:
    """A torch tensor (a type from a ``torch`` module with ``data_ptr``), decided per type."""
    t = type(obj)
    try:
        return _TORCH_TYPES[t]
    except KeyError:
        mod = t.__module__ or ""
        yes = (mod == "torch" or mod.startswith("torch.")) and hasattr(t, "data_ptr")
        _TORCH_TYPES[t] = yes
        return yes


def typestr_dtypes(typestr: str) -> Tuple[str, ...]:
    """kiln dtypes an ``__array_interface__`` typestr may denote: ``"<f4"`` -> ``("f32",)``;
    ``"<V2"`` (bf16 and fp8 have no standard typestr) -> ``("bf16", "f16")``; () if none."""
    if len(typestr) < 3:
        return ()
    kind, size = typestr[1], typestr[2:]
    if not size.isdigit():
        return ()
    bits = int(size) * 8
    if kind == "b" and bits == 8:
        return ("i1",)
    if kind in "iuf":
        name = kind + str(bits)
        return (name,) if name in ITEMSIZE else ()
    if kind == "V":
        return {16: ("bf16", "f16"), 8: ("f8e4m3", "f8e5m2")}.get(bits, ())
    return ()


def dlpack_dtype(code: int, bits: int, lanes: int) -> Optional[str]:
    """The kiln dtype of a DLPack ``(code, bits, lanes)``, or None."""
    if lanes != 1:
        return None
    prefix = _DLPACK_CODES.get(code)
    if prefix is None:
        return None
    if prefix in ("i1", "f8e4m3", "f8e5m2"):
        return prefix
    name = f"{prefix}{bits}"
    return name if name in ITEMSIZE else None


def tensor_dtype(obj: Any) -> Optional[str]:
    """The kiln dtype of a tensor-like object (a torch tensor, or an object with ``dtype`` and
    ``__cuda_array_interface__``, or a CUDA array whose typestr names one dtype), or None if
    ``obj`` is not tensor-like. TypeError for a tensor whose dtype kiln has no name for."""
    dt = getattr(obj, "dtype", None)
    has_ptr = hasattr(obj, "data_ptr")
    if dt is not None and (has_ptr or hasattr(obj, "__cuda_array_interface__")):
        name = kiln_dtype_name(dt)
        if name is not None:
            return name
    cai = None if has_ptr else getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        typestr = str(cai.get("typestr", ""))
        found = typestr_dtypes(typestr)
        if len(found) == 1:
            return found[0]
        raise TypeError(f"cannot tell the element type of a CUDA array with typestr "
                        f"{typestr!r} (give it a .dtype such as bfloat16)")
    if has_ptr and dt is not None:
        raise TypeError(f"unsupported tensor dtype {dt}")
    return None


def tensor_address(obj: Any) -> int:
    """The address of a tensor-like object's first element."""
    # data_ptr first: torch has no __cuda_array_interface__ typestr for fp8 (KeyError)
    if hasattr(obj, "data_ptr"):
        return int(obj.data_ptr())
    return int(obj.__cuda_array_interface__["data"][0])


# ---------------------------------------------------------------------------
# Pointer arguments of a launch
# ---------------------------------------------------------------------------


class PointerInfo:
    """A pointer argument as the launch check sees it."""

    __slots__ = ("address", "dtypes", "where", "torch_device")

    def __init__(self, address: int, dtypes: Tuple[str, ...], where: str, torch_device=None):
        self.address = address
        self.dtypes = dtypes  # candidate kiln dtypes; () = unknown
        self.where = where  # what it is, for messages
        self.torch_device = torch_device


_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
_DL_DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 13: "cuda_managed", 10: "rocm"}
_DL_TENSOR = None


def _dlpack_tensor(obj: Any) -> Any:
    """The DLTensor struct (copied out) of ``obj.__dlpack__()``."""
    import ctypes  # noqa: PLC0415 - stdlib, loaded only for DLPack arrays

    global _DL_TENSOR
    if _DL_TENSOR is None:
        class DLDevice(ctypes.Structure):
            _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]

        class DLDataType(ctypes.Structure):
            _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                        ("lanes", ctypes.c_uint16)]

        class DLTensor(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                        ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                        ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", ctypes.POINTER(ctypes.c_int64)),
                        ("byte_offset", ctypes.c_uint64)]

        _DL_TENSOR = DLTensor
    capsule = obj.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = get(capsule, b"dltensor")
    # Copy the struct out; the capsule (and its deleter) goes away with `capsule`,
    # while the memory stays owned by `obj`.
    if not ptr:
        raise TypeError("__dlpack__() did not return a 'dltensor' capsule")
    return _DL_TENSOR.from_buffer_copy(_DL_TENSOR.from_address(ptr))


def pointer_info(obj: Any, what: str) -> PointerInfo:
    """A pointer argument: a torch CUDA tensor, an object with ``__cuda_array_interface__``,
    a DLPack array on a CUDA device, or an int address. TypeError/ValueError naming ``what``
    for anything else."""
    if is_torch_tensor(obj):
        if not getattr(obj, "is_cuda", False):
            raise ValueError(f"{what} must be a CUDA tensor, got a tensor on {obj.device}")
        name = _dtype_text(obj.dtype)
        dt = kiln_dtype_name(obj.dtype)
        return PointerInfo(int(obj.data_ptr()), (dt,) if dt else (f"torch.{name}",),
                           f"a torch.{name} tensor", obj.device)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        try:
            address = int(cai["data"][0])
            typestr = str(cai["typestr"])
        except (KeyError, TypeError, IndexError, ValueError) as e:
            raise TypeError(f"{what}: malformed __cuda_array_interface__ ({e})") from None
        return PointerInfo(address, typestr_dtypes(typestr) or (typestr,),
                           f"a CUDA array of typestr {typestr!r}")
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        dev_type, dev_id = obj.__dlpack_device__()
        dev_type = int(dev_type)
        if dev_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
            name = _DL_DEVICE_NAMES.get(dev_type, f"type {dev_type}")
            raise ValueError(f"{what} must be on a CUDA device, got an array on {name} "
                             f"(DLPack device {dev_type}:{dev_id})")
        t = _dlpack_tensor(obj)
        dt = dlpack_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        desc = dt or f"dlpack(code={t.dtype.code}, bits={t.dtype.bits}, lanes={t.dtype.lanes})"
        return PointerInfo(int(t.data or 0) + int(t.byte_offset), (desc,),
                           f"a DLPack array of {desc}")
    if isinstance(obj, int) and not isinstance(obj, bool):
        return PointerInfo(obj, (), "a raw address")
    raise TypeError(f"{what} expects a CUDA tensor (torch, __cuda_array_interface__ or DLPack) "
                    f"or an int address, got {type(obj).__name__}")


def is_array_like(obj: Any) -> bool:
    """A tensor or array (torch, CUDA array or DLPack): not a scalar argument."""
    return (is_torch_tensor(obj) or hasattr(obj, "__cuda_array_interface__")
            or hasattr(obj, "__dlpack__"))
