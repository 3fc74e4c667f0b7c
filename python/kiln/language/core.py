"""Types and values of the kiln language.

A kernel manipulates three kinds of values while it is being compiled:

* ``constexpr``: a Python value known at compile time (ints, floats, bools,
  dtypes, None, strings). Arithmetic between constexprs folds in Python.
* ``tensor``: an IR value with a kiln type -- a scalar (``dtype``), a pointer
  (``pointer_type``) or a tile (``block_type`` of either, power-of-two shape).
* Python objects the kernel names (modules, functions), which only make sense
  at compile time.

Everything here is data; what operations *mean* (promotion, broadcasting,
checks) lives in ``kiln.compiler.semantic``. Builtins (``kiln.language``
functions) are thin: each forwards to the semantic layer passed to it as
``_semantic``.
"""

from __future__ import annotations

import functools
from typing import Any, List, Sequence, Tuple

from .errors import SemanticError


class dtype:
    """A scalar element type. ``name`` is the kiln language name (``bfloat16``),
    ``short`` the metadata name (``bf16``)."""

    SINT_TYPES = ("int1", "int8", "int16", "int32", "int64")
    UINT_TYPES = ("uint8", "uint16", "uint32", "uint64")
    FP_TYPES = ("float8e4m3", "float8e5m2", "float16", "bfloat16", "float32", "float64")

    _SHORT = {
        "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
        "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
        "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
        "float8e4m3": "f8e4m3", "float8e5m2": "f8e5m2",
    }
    _BITS = {
        "int1": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
        "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
        "float8e4m3": 8, "float8e5m2": 8, "float16": 16, "bfloat16": 16, "float32": 32,
        "float64": 64,
    }

    def __init__(self, name: str):
        if name not in self._SHORT:
            raise ValueError(f"unknown dtype {name!r}")
        self.name = name
        self.short = self._SHORT[name]
        self.primitive_bitwidth = self._BITS[name]

    # -- queries ------------------------------------------------------------
    def is_int(self) -> bool:
        return self.name in self.SINT_TYPES or self.name in self.UINT_TYPES

    def is_int_signed(self) -> bool:
        return self.name in self.SINT_TYPES and self.name != "int1"

    def is_int_unsigned(self) -> bool:
        return self.name in self.UINT_TYPES

    def is_bool(self) -> bool:
        return self.name == "int1"

    def is_floating(self) -> bool:
        return self.name in self.FP_TYPES

    def is_fp8(self) -> bool:
        return self.name.startswith("float8")

    def is_ptr(self) -> bool:
        return False

    def is_tensordesc(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    @property
    def scalar(self) -> "dtype":
        return self

    @property
    def itemsize(self) -> int:
        return max(1, self.primitive_bitwidth // 8)

    def __eq__(self, other: Any) -> bool:
        return type(other) is dtype and other.name == self.name

    def __hash__(self) -> int:
        return hash(("dtype", self.name))

    def __repr__(self) -> str:
        return f"kl.{self.name}"

    def __str__(self) -> str:
        return self.short


class pointer_type(dtype):
    """Pointer to global memory holding ``element_ty`` values."""

    def __init__(self, element_ty: dtype):
        if not isinstance(element_ty, dtype) or element_ty.is_ptr():
            raise TypeError(f"pointer element type must be a scalar dtype, got {element_ty!r}")
        self.element_ty = element_ty
        self.name = f"pointer<{element_ty.name}>"
        self.short = f"*{element_ty.short}"
        self.primitive_bitwidth = 64

    def is_ptr(self) -> bool:
        return True

    def is_int(self) -> bool:
        return False

    def is_int_signed(self) -> bool:
        return False

    def is_int_unsigned(self) -> bool:
        return False

    def is_bool(self) -> bool:
        return False

    def is_floating(self) -> bool:
        return False

    def is_fp8(self) -> bool:
        return False

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty.name))

    def __repr__(self) -> str:
        return f"kl.pointer_type({self.element_ty!r})"


class block_type:
    """A tile: ``shape`` (powers of two) of ``element_ty`` (a dtype or pointer)."""

    def __init__(self, element_ty: dtype, shape: Sequence[int]):
        self.element_ty = element_ty
        self.shape = tuple(int(s) for s in shape)
        self.numel = functools.reduce(lambda a, b: a * b, self.shape, 1)

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    def is_block(self) -> bool:
        return True

    def is_tensordesc(self) -> bool:
        return False

    def is_ptr(self) -> bool:
        return self.element_ty.is_ptr()

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, block_type) and other.element_ty == self.element_ty
                and other.shape == self.shape)

    def __hash__(self) -> int:
        return hash(("block", self.element_ty, self.shape))

    def __repr__(self) -> str:
        return f"<{'x'.join(map(str, self.shape))}x{self.element_ty}>"

    __str__ = __repr__


int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float16 = dtype("float16")
bfloat16 = dtype("bfloat16")
float32 = dtype("float32")
float64 = dtype("float64")
float8e4m3 = dtype("float8e4m3")
float8e5m2 = dtype("float8e5m2")

ALL_DTYPES = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16,
              float32, float64, float8e4m3, float8e5m2)
_BY_SHORT = {d.short: d for d in ALL_DTYPES}
_BY_NAME = {d.name: d for d in ALL_DTYPES}


class tensor_descriptor_type(dtype):
    """A TMA tensor descriptor parameter (``kiln.TensorDescriptor`` on the host):
    the box ``block`` (a block_type, outermost dimension first) and the
    shared-memory ``swizzle`` in bytes (0 = none). ``short`` is the signature
    string, ``tensordesc<bf16,64x128>`` (``,sw128`` with a swizzle)."""

    def __init__(self, block: "block_type", swizzle: int = 0):
        self.block = block
        self.element_ty = block.element_ty
        self.swizzle = int(swizzle)
        dims = "x".join(str(d) for d in block.shape)
        sw = f",sw{self.swizzle}" if self.swizzle else ""
        self.name = f"tensordesc<{block.element_ty.name},{dims}{sw}>"
        self.short = f"tensordesc<{block.element_ty.short},{dims}{sw}>"
        self.primitive_bitwidth = 1024

    def is_tensordesc(self) -> bool:
        return True

    def is_fp8(self) -> bool:
        return False

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, tensor_descriptor_type) and other.block == self.block
                and other.swizzle == self.swizzle)

    def __hash__(self) -> int:
        return hash(("tensordesc", self.short))

    def __repr__(self) -> str:
        return f"kl.tensor_descriptor_type({self.block!r}, swizzle={self.swizzle})"


def _tensordesc_from_str(s: str) -> tensor_descriptor_type:
    body = s[len("tensordesc<"):-1]
    parts = [p.strip() for p in body.split(",")]
    try:
        swizzle = 0
        if len(parts) == 3 and parts[2].startswith("sw"):
            swizzle = int(parts[2][2:])
            parts = parts[:2]
        if len(parts) != 2:
            raise ValueError
        shape = [int(d) for d in parts[1].split("x")]
    except ValueError:
        raise ValueError(f"bad tensor descriptor type {s!r} (expected "
                         f"'tensordesc<bf16,64x128>' or 'tensordesc<bf16,64x64,sw128>')") from None
    return tensor_descriptor_type(block_type(dtype_from_str(parts[0]), shape), swizzle)


def dtype_from_str(s: str) -> dtype:
    """``"bf16"`` / ``"bfloat16"`` -> ``kl.bfloat16``; ``"*bf16"`` -> pointer to it."""
    s = s.strip()
    if s.startswith("*"):
        return pointer_type(dtype_from_str(s[1:]))
    if s.startswith("tensordesc<") and s.endswith(">"):
        return _tensordesc_from_str(s)
    if s in _BY_SHORT:
        return _BY_SHORT[s]
    if s in _BY_NAME:
        return _BY_NAME[s]
    aliases = {"fp16": float16, "fp32": float32, "fp64": float64, "bool": int1,
               "float8_e4m3fn": float8e4m3, "float8_e5m2": float8e5m2}
    if s in aliases:
        return aliases[s]
    raise ValueError(f"unknown dtype {s!r} (expected one of {', '.join(_BY_SHORT)})")


class constexpr:
    """A compile-time value; also the annotation marking a kernel parameter as
    compile-time (``BLOCK: kl.constexpr``)."""

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return self.value.__index__()

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __eq__(self, other: Any) -> bool:  # used by Python-level code only
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self) -> int:
        return hash(self.value)


def _unwrap(v: Any) -> Any:
    return v.value if isinstance(v, constexpr) else v


class tensor:
    """An IR value during compilation: ``handle`` (a ``kiln._C.Value``) and its
    kiln ``type`` (dtype, pointer_type or block_type). Operators are rewritten
    by the code generator into semantic-layer calls; the methods here exist for
    attribute access (``x.dtype``, ``x.shape``, ``x.to(...)``)."""

    def __init__(self, handle: Any, type: Any):
        self.handle = handle
        self.type = type

    @property
    def dtype(self) -> dtype:
        """The scalar element type (for a pointer tile: the pointer type)."""
        return self.type.scalar

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.type.shape if self.type.is_block() else ()

    @property
    def numel(self) -> int:
        return self.type.numel if self.type.is_block() else 1

    def __repr__(self) -> str:
        return f"tensor({self.type})"

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a runtime kiln value is not known at compile time; "
                        "only constexpr conditions are supported in `if`")

    # Methods callable from kernels; the code generator passes _semantic.
    def to(self, dtype: Any, bitcast: bool = False, _semantic: Any = None) -> "tensor":
        return _semantic.cast(self, _unwrap(dtype), bitcast=bool(_unwrap(bitcast)))

    def load(self, offsets: Any, _semantic: Any = None) -> "tensor":
        """Tensor descriptors: the box at ``offsets`` (elements, one per dimension;
        out-of-bounds elements read as zero), through TMA."""
        return _semantic.desc_load(self, offsets)

    def store(self, offsets: Any, value: Any, _semantic: Any = None) -> None:
        """Tensor descriptors: writes ``value`` (a tile of the box's shape, or a
        scalar) to the box at ``offsets``; out-of-bounds elements are dropped."""
        return _semantic.desc_store(self, offsets, value)

    def trans(self, *dims: Any, _semantic: Any = None) -> "tensor":
        """``kl.trans(x, *dims)``: without dims the transpose of a 2-D tile."""
        return _semantic.trans(self, dims, "trans")

    def permute(self, *dims: Any, _semantic: Any = None) -> "tensor":
        """``kl.permute(x, dims)``."""
        return _semantic.permute(self, dims, "permute")

    def reshape(self, *shape: Any, can_reorder: Any = False, _semantic: Any = None) -> "tensor":
        """``kl.reshape(x, shape)``."""
        return _semantic.reshape(self, _shape_args("reshape", shape))

    def split(self, _semantic: Any = None) -> Tuple["tensor", "tensor"]:
        """``kl.split(x)``."""
        return _semantic.split(self)


# Methods of `tensor` that kernels may call (others are internal).
TENSOR_METHODS = frozenset({"to", "load", "store", "trans", "permute", "reshape", "split"})


class KernelFunction:
    """A function that kernels may call: the compiler inlines it at the call site, and
    ``kl.reduce`` / ``kl.associative_scan`` take one as their ``combine_fn``.

    ``@kiln.jit`` functions (``kiln.jit.JITFunction``) derive from it; the compiler
    recognises callees by this base, so it never imports the JIT. A subclass provides
    ``source`` (the function's ``kiln.compiler.code_generator.FunctionSource``) and
    ``__name__``."""

    __slots__ = ()


def builtin(fn):
    """Marks a function of ``kiln.language`` as callable from kernels; the code
    generator passes the semantic layer as ``_semantic``."""
    fn.__kiln_builtin__ = True
    return fn


def is_builtin(fn: Any) -> bool:
    return getattr(fn, "__kiln_builtin__", False)


def _shape_tuple(shape: Any) -> List[int]:
    shape = _unwrap(shape)
    if isinstance(shape, (int, tensor)):
        shape = [shape]
    dims = [_unwrap(s) for s in shape]
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            got = "a runtime value" if isinstance(d, tensor) else repr(d)
            raise SemanticError(f"tile shapes must be constexpr ints, got {got}")
    return dims


def _shape_args(what: str, shape: Tuple[Any, ...]) -> List[int]:
    """A shape given as separate ints or as one tuple (``reshape(x, 4, 8)``,
    ``reshape(x, (4, 8))``)."""
    if len(shape) == 1:
        return _shape_tuple(shape[0])
    if not shape:
        raise SemanticError(f"{what} needs a shape")
    return _shape_tuple(shape)


__all__ = [
    "ALL_DTYPES", "KernelFunction", "block_type", "builtin", "constexpr", "dtype", "dtype_from_str",
    "is_builtin", "pointer_type", "tensor", "TENSOR_METHODS",
] + [d.name for d in ALL_DTYPES]

