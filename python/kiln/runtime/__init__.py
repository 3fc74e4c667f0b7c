"""kiln.runtime: load kernel bundles and launch their kernels.

This layer needs only the runtime extension ``kiln._runtime`` (no compiler, no
torch). Arguments are checked here, before anything reaches the GPU:
``marshal_args`` turns user arguments (torch tensors, objects with
``__cuda_array_interface__`` or DLPack, Python numbers) into the plain ints and
floats that ``_runtime.Kernel.launch`` takes, and raises TypeError/ValueError
naming the kernel, the parameter, what was expected and what was given.

Example::

    from kiln.runtime import Bundle
    bundle = Bundle("build/kimi_k3.kbundle")
    situ = bundle.kernel("situ_and_mul", BLOCK=1024)
    situ[(triton.cdiv(n, 1024),)](x, out, n)
"""

from __future__ import annotations

import ctypes
import json
import math
import operator
import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .. import _runtime
from ..tensor_descriptor import TensorDescriptor

KilnError = _runtime.KilnError
FORMAT_VERSION = _runtime.FORMAT_VERSION
BundleWriter = _runtime.BundleWriter
device_arch = _runtime.device_arch
driver_available = _runtime.driver_available

__all__ = [
    "Bundle",
    "BundleWriter",
    "KernelFamily",
    "KilnError",
    "LaunchableKernel",
    "device_arch",
    "driver_available",
    "marshal_args",
    "resolve_grid",
    "resolve_stream",
]

# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------

DTYPES = (
    "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2",
)

#: torch dtype names (``str(t.dtype)`` without "torch.") -> kiln dtype.
_TORCH_DTYPES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}

#: DLPack type codes -> kiln dtype prefix (code 4 is bfloat, 10/12 are fp8).
_DLPACK_CODES = {0: "i", 1: "u", 2: "f", 4: "bf", 6: "i1", 10: "f8e4m3", 12: "f8e5m2"}

_INT_RANGES = {
    "i1": (0, 1), "i8": (-(2**7), 2**7 - 1), "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1),
    "u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1),
    # fp8 scalars are passed as their raw bits.
    "f8e4m3": (0, 255), "f8e5m2": (0, 255),
}
_FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38,
              "f64": sys.float_info.max}


def _typestr_dtypes(typestr: str) -> Tuple[str, ...]:
    """kiln dtypes an ``__array_interface__`` typestr may denote ("<f4" -> ("f32",))."""
    if len(typestr) < 3:
        return ()
    kind, size = typestr[1], typestr[2:]
    if not size.isdigit():
        return ()
    bits = int(size) * 8
    if kind == "b" and bits == 8:
        return ("i1",)
    if kind in "iuf":
        name = {"i": "i", "u": "u", "f": "f"}[kind] + str(bits)
        return (name,) if name in DTYPES else ()
    if kind == "V":  # opaque: bf16 and fp8 have no standard typestr
        return {16: ("bf16", "f16"), 8: ("f8e4m3", "f8e5m2")}.get(bits, ())
    return ()


def _dlpack_dtype(code: int, bits: int, lanes: int) -> Optional[str]:
    if lanes != 1:
        return None
    prefix = _DLPACK_CODES.get(code)
    if prefix is None:
        return None
    if prefix in ("i1", "f8e4m3", "f8e5m2"):
        return prefix
    name = f"{prefix}{bits}"
    return name if name in DTYPES else None


# ---------------------------------------------------------------------------
# Pointer arguments
# ---------------------------------------------------------------------------


class _PointerInfo:
    __slots__ = ("address", "dtypes", "where", "torch_device")

    def __init__(self, address: int, dtypes: Tuple[str, ...], where: str, torch_device=None):
        self.address = address
        self.dtypes = dtypes  # candidate kiln dtypes; () = unknown
        self.where = where  # what it is, for messages
        self.torch_device = torch_device


def _is_torch_tensor(obj: Any) -> bool:
    mod = type(obj).__module__ or ""
    return (mod == "torch" or mod.startswith("torch.")) and hasattr(obj, "data_ptr")


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
_DL_DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 13: "cuda_managed", 10: "rocm"}


def _dlpack_tensor(obj: Any) -> _DLTensor:
    capsule = obj.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = get(capsule, b"dltensor")
    # Copy the struct out; the capsule (and its deleter) goes away with `capsule`,
    # while the memory stays owned by `obj`.
    if not ptr:
        raise TypeError("__dlpack__() did not return a 'dltensor' capsule")
    return _DLTensor.from_buffer_copy(_DLTensor.from_address(ptr))


def _pointer_info(obj: Any, what: str) -> _PointerInfo:
    if _is_torch_tensor(obj):
        if not getattr(obj, "is_cuda", False):
            raise ValueError(f"{what} must be a CUDA tensor, got a tensor on {obj.device}")
        name = str(obj.dtype).replace("torch.", "")
        dt = _TORCH_DTYPES.get(name)
        return _PointerInfo(int(obj.data_ptr()), (dt,) if dt else (f"torch.{name}",),
                            f"a torch.{name} tensor", obj.device)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        try:
            address = int(cai["data"][0])
            typestr = str(cai["typestr"])
        except (KeyError, TypeError, IndexError, ValueError) as e:
            raise TypeError(f"{what}: malformed __cuda_array_interface__ ({e})") from None
        return _PointerInfo(address, _typestr_dtypes(typestr) or (typestr,),
                            f"a CUDA array of typestr {typestr!r}")
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        dev_type, dev_id = obj.__dlpack_device__()
        dev_type = int(dev_type)
        if dev_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
            name = _DL_DEVICE_NAMES.get(dev_type, f"type {dev_type}")
            raise ValueError(f"{what} must be on a CUDA device, got an array on {name} "
                             f"(DLPack device {dev_type}:{dev_id})")
        t = _dlpack_tensor(obj)
        dt = _dlpack_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        desc = dt or f"dlpack(code={t.dtype.code}, bits={t.dtype.bits}, lanes={t.dtype.lanes})"
        return _PointerInfo(int(t.data or 0) + int(t.byte_offset), (desc,),
                            f"a DLPack array of {desc}")
    if isinstance(obj, int) and not isinstance(obj, bool):
        return _PointerInfo(obj, (), "a raw address")
    raise TypeError(f"{what} expects a CUDA tensor (torch, __cuda_array_interface__ or DLPack) "
                    f"or an int address, got {type(obj).__name__}")


# ---------------------------------------------------------------------------
# marshal_args
# ---------------------------------------------------------------------------


def _param_desc(p: Mapping[str, Any]) -> str:
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
    expected = _param_desc(p).split(": ", 1)[1]
    if not isinstance(desc, TensorDescriptor):
        raise TypeError(f"{what} expects {expected} (a kiln.TensorDescriptor), got "
                        f"{type(desc).__name__}")
    box = [int(b) for b in p["box"]]
    swizzle = int(p.get("swizzle", 0))
    if (desc.dtype, list(desc.block_shape), desc.swizzle) != (p["dtype"], box, swizzle):
        raise TypeError(f"{what} expects {expected}, got a descriptor of {desc.dtype} with box "
                        f"{list(desc.block_shape)} and swizzle {desc.swizzle}")
    if _is_torch_tensor(desc.base) and not getattr(desc.base, "is_cuda", True):
        raise ValueError(f"{what}: the descriptor's tensor is on {desc.base.device}, not a "
                         f"CUDA device")
    try:
        encoded = desc.encode()
    except _runtime.KilnError as e:
        raise ValueError(f"{what}: {e}") from None
    return (encoded, desc.dtype, box, swizzle)


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
        expected = ", ".join(_param_desc(p) for p in params) or "no arguments"
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
            info = _pointer_info(a, what)
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
                    import torch  # present: we were given a torch tensor

                    torch_current = torch.cuda.current_device()
                if info.torch_device.index != torch_current:
                    raise ValueError(f"{what} is on {info.torch_device} but the current device "
                                     f"is cuda:{torch_current}")
            out.append(info.address)
        else:
            if _is_torch_tensor(a) or hasattr(a, "__cuda_array_interface__") or hasattr(
                    a, "__dlpack__"):
                raise TypeError(f"{what} expects a scalar {p['dtype']}, got {type(a).__name__}")
            out.append(_scalar(a, p["dtype"], what))
    return out


# ---------------------------------------------------------------------------
# Grid and stream
# ---------------------------------------------------------------------------

GridSpec = Union[int, Sequence[int], Callable[[Dict[str, Any]], Any]]


def resolve_grid(grid: GridSpec, meta: Mapping[str, Any], args: Sequence[Any] = ()
                 ) -> Tuple[int, int, int]:
    """A grid of 1-3 ints, or a callable taking a dict of the constexprs and the
    arguments by parameter name (Triton-style), as a 3-tuple."""
    name = meta.get("name", "?")
    if callable(grid):
        named = dict(meta.get("constexprs", {}))
        named.update({p["name"]: a for p, a in zip(meta.get("params", []), args)})
        grid = grid(named)
    if isinstance(grid, int) or hasattr(grid, "__index__"):
        grid = (grid,)
    try:
        dims = tuple(operator.index(g) for g in grid)
    except TypeError:
        raise TypeError(f"kernel '{name}': grid must be 1 to 3 ints, got {grid!r}") from None
    if not 1 <= len(dims) <= 3:
        raise TypeError(f"kernel '{name}': grid must have 1 to 3 dimensions, got {len(dims)}")
    for i, d in enumerate(dims):
        if not 0 <= d < 2**32:
            raise ValueError(f"kernel '{name}': grid dimension {i} = {d} is out of range")
    return dims + (1,) * (3 - len(dims))


def resolve_stream(stream: Any, args: Sequence[Any] = ()) -> int:
    """The CUstream handle as an int: `stream` itself (int, torch.cuda.Stream or
    an object with ``__cuda_stream__``), or for None torch's current stream when
    a torch CUDA tensor is among `args`, else 0 (the legacy default stream)."""
    if stream is None:
        for a in args:
            a = a.base if isinstance(a, TensorDescriptor) else a  # the described tensor
            if _is_torch_tensor(a) and getattr(a, "is_cuda", False):
                import torch

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


# ---------------------------------------------------------------------------
# Kernels and bundles
# ---------------------------------------------------------------------------


class _Launcher:
    """``kernel[grid]``: call it with the arguments. The direct path (torch CUDA tensors,
    int addresses, Python numbers) runs in C++; anything else goes through marshal_args."""

    __slots__ = ("_kernel", "_grid")

    def __init__(self, kernel: "LaunchableKernel", grid: GridSpec):
        self._kernel = kernel
        self._grid = grid

    def __call__(self, *args: Any, stream: Any = None, **constexprs: Any) -> None:
        k = self._kernel
        if constexprs:
            k._check_constexprs(constexprs)
        elif k._try_launch(self._grid, args, stream):
            return
        k.run(self._grid, *args, stream=stream)


class LaunchableKernel:
    """A kernel ready to launch: ``k[grid](*args, stream=None)``. Constexprs may be
    given as keywords (they must equal the kernel's)."""

    def __init__(self, kernel: "_runtime.Kernel"):
        self._kernel = kernel
        self._try_launch = kernel.try_launch
        self.meta: Dict[str, Any] = kernel.meta
        self.name: str = self.meta["name"]

    @classmethod
    def from_images(cls, meta: Mapping[str, Any], images: Mapping[str, bytes]
                    ) -> "LaunchableKernel":
        """A kernel from metadata and {arch: cubin bytes}, without a bundle (JIT)."""
        return cls(_runtime.Kernel.from_images(dict(meta), dict(images)))

    @property
    def archs(self) -> List[str]:
        return list(self._kernel.archs)

    @property
    def constexprs(self) -> Dict[str, Any]:
        return dict(self.meta.get("constexprs", {}))

    def _check_constexprs(self, given: Mapping[str, Any]) -> None:
        mine = self.meta.get("constexprs", {})
        for k, v in given.items():
            if k not in mine or mine[k] != v or isinstance(mine[k], bool) != isinstance(v, bool):
                have = ", ".join(f"{n}={x!r}" for n, x in mine.items()) or "none"
                raise TypeError(f"kernel '{self.name}' was compiled with constexprs {have}; "
                                f"got {k}={v!r}")

    def __getitem__(self, grid: GridSpec) -> _Launcher:
        return _Launcher(self, grid)

    def load(self) -> None:
        """Loads the module in the current CUDA context now (else the first launch does)."""
        self._kernel.load()

    def run(self, grid: GridSpec, *args: Any, stream: Any = None) -> None:
        values = marshal_args(self.meta, args)
        dims = resolve_grid(grid, self.meta, args)
        if 0 in dims:
            return
        self._kernel.launch(dims, values, resolve_stream(stream, args))

    def __repr__(self) -> str:
        consts = ", ".join(f"{k}={v!r}" for k, v in self.meta.get("constexprs", {}).items())
        return f"<kiln kernel {self.name} [{consts}] archs={self.archs}>"


def _align_class(v: int) -> int:
    """The largest power of two (up to 256) dividing ``v``: what divisibility sees."""
    return 256 if v == 0 else min(v & -v, 256)


_UNCACHED = object()


def _arg_key(a: Any) -> Any:
    t = type(a)
    if t is int:
        return _align_class(a)
    if t is float or t is bool:
        return t
    if _is_torch_tensor(a):
        return (a.dtype, _align_class(a.data_ptr()))
    return _UNCACHED  # unusual argument: choose anew each call


class _FamilyLauncher:
    __slots__ = ("_family", "_grid")

    def __init__(self, family: "KernelFamily", grid: GridSpec):
        self._family = family
        self._grid = grid

    def __call__(self, *args: Any, stream: Any = None, **constexprs: Any) -> None:
        k = self._family.select(args, constexprs)
        if not k._try_launch(self._grid, args, stream):
            k.run(self._grid, *args, stream=stream)


class KernelFamily:
    """Every specialization of one kernel in a bundle; ``family[grid](*args, **constexprs)``
    picks the one that fits the arguments (pointer dtypes, 16-byte alignment, integer
    divisibility) and the constexprs given, the most specialized first.

    A missing specialization raises KilnError naming the kernel and the wanted
    specialization and listing those the bundle holds. ``jit`` (optional) compiles a
    missing one: called as ``jit(args, constexprs)``, it returns a LaunchableKernel;
    ``KILN_NO_JIT=1`` disables it (fail fast)."""

    def __init__(self, bundle: "Bundle", name: str, constexprs: Optional[Mapping[str, Any]] = None,
                 jit: Optional[Callable[[Sequence[Any], Dict[str, Any]], LaunchableKernel]] = None):
        self._bundle = bundle
        self.name = name
        self._fixed = dict(constexprs or {})
        self._jit = jit
        self._chosen: Dict[Any, LaunchableKernel] = {}

    def select(self, args: Sequence[Any], constexprs: Optional[Mapping[str, Any]] = None
               ) -> LaunchableKernel:
        """The specialization for these arguments and constexprs (cached by their types,
        alignments and the constexpr values)."""
        key = (tuple(map(_arg_key, args)), tuple(sorted(constexprs.items())) if constexprs else ())
        k = self._chosen.get(key)
        if k is None:
            want = dict(self._fixed)
            want.update(constexprs or {})
            try:
                k = self._bundle._launchable(self._bundle._bundle.select(self.name, list(args),
                                                                         want or None))
            except KilnError:
                if self._jit is None or os.environ.get("KILN_NO_JIT") == "1":
                    raise
                k = self._jit(args, want)
            if _UNCACHED not in key[0]:
                self._chosen[key] = k
        return k

    def __getitem__(self, grid: GridSpec) -> _FamilyLauncher:
        return _FamilyLauncher(self, grid)

    def specializations(self) -> List[Dict[str, Any]]:
        return [m for m in self._bundle.kernels() if m["name"] == self.name]

    def __repr__(self) -> str:
        return f"<kiln kernel family {self.name}: {len(self.specializations())} specializations>"


class Bundle:
    """A verified kernel bundle (.kbundle). ``Bundle(path)`` or ``Bundle.from_bytes(b)``."""

    def __init__(self, path: Union[str, "os.PathLike[str]", None] = None, *, _native=None):
        if _native is None:
            if path is None:
                raise TypeError("Bundle() needs a path (or use Bundle.from_bytes)")
            _native = _runtime.Bundle.open(os.fspath(path))
        self._bundle = _native
        self._kernels: Dict[Tuple[str, str], Any] = {}
        self._by_native: Dict[int, LaunchableKernel] = {}
        self._kernel_list: Optional[List[Dict[str, Any]]] = None

    @classmethod
    def open(cls, path: Union[str, "os.PathLike[str]"]) -> "Bundle":
        return cls(path)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<memory>") -> "Bundle":
        return cls(_native=_runtime.Bundle.from_bytes(bytes(data), name))

    @property
    def name(self) -> str:
        return self._bundle.name

    @property
    def compiler_version(self) -> str:
        return self._bundle.compiler_version

    @property
    def file_size(self) -> int:
        return self._bundle.file_size

    def kernels(self) -> List[Dict[str, Any]]:
        """The manifest's kernel entries (metadata dicts, with their images)."""
        if self._kernel_list is None:
            self._kernel_list = self._bundle.kernels()
        return self._kernel_list

    def names(self) -> List[str]:
        seen: Dict[str, None] = {}
        for k in self.kernels():
            seen.setdefault(k["name"], None)
        return list(seen)

    def describe(self) -> str:
        return self._bundle.describe()

    def image_bytes(self, kernel_index: int, image_index: int) -> bytes:
        return self._bundle.image_bytes(kernel_index, image_index)

    def _launchable(self, native: "_runtime.Kernel") -> LaunchableKernel:
        k = self._by_native.get(id(native))
        if k is None or k._kernel is not native:
            k = LaunchableKernel(native)
            self._by_native[id(native)] = k
        return k

    def kernel(self, name: str, **constexprs: Any) -> Union[LaunchableKernel, "KernelFamily"]:
        """The specialization of `name` whose constexprs include `constexprs` when exactly one
        does; when several do, a KernelFamily that picks one per call from the arguments.
        Raises KilnError if none matches (listing what the bundle holds)."""
        key = (name, json.dumps(constexprs, sort_keys=True, default=str))
        k = self._kernels.get(key)
        if k is None:
            matching = [m for m in self.kernels() if m["name"] == name and all(
                n in m.get("constexprs", {}) and m["constexprs"][n] == v
                and isinstance(m["constexprs"][n], bool) == isinstance(v, bool)
                for n, v in constexprs.items())]
            if len(matching) > 1:
                k = KernelFamily(self, name, constexprs)
            else:  # one, or none: the native call explains
                k = self._launchable(self._bundle.kernel(name, constexprs or None))
            self._kernels[key] = k
        return k

    def family(self, name: str, jit: Optional[Callable[..., LaunchableKernel]] = None
               ) -> KernelFamily:
        """All specializations of `name`, chosen per call from the arguments."""
        if name not in self.names():
            self._bundle.kernel(name)  # raises: lists the kernels the bundle holds
        return KernelFamily(self, name, None, jit)

    def __repr__(self) -> str:
        return f"<kiln Bundle {self.name!r}: {len(self.kernels())} kernels>"
