"""The semantic layer: the meaning of every kiln operation.

This is the only caller of the IR builder (``kiln._C.Builder``). It owns type
checking, promotion, broadcasting and the user-facing messages; the code
generator turns AST nodes into calls here and attaches source locations to the
``SemanticError`` raised here.

Typing rules (Triton's, kept simple):

* Python literals are *weak*: an int adopts the type of the integer (or
  pointer-offset) operand it meets, a float the type of the float operand it
  meets; alone, an int is ``int32`` (``int64`` if it does not fit) and a float
  ``float32``. A bool literal is ``int1``.
* Two typed operands promote to a common type: any float wins over ints; of
  two floats the wider wins, ``float16`` with ``bfloat16`` gives ``float32``,
  and fp8 operands compute in ``float32``; of two ints the wider wins, with
  equal widths and mixed signedness giving the unsigned type; ``int1`` yields
  to any other int.
* ``/`` is true division (ints compute in ``float32``); ``//`` and ``%`` on
  ints truncate toward zero like C (as in Triton); ``//`` on floats is
  ``floor(a / b)``, ``%`` on floats is C ``fmod``.
* Comparisons give ``int1``; ``& | ^ ~ << >>`` need ints (``>>`` is
  arithmetic on signed, logical on unsigned types).
* pointer ``+``/``-`` int advances by elements (``tile.addptr``).
* Transcendental math (exp, tanh, ...) takes floats; ``float16``/``bfloat16``/
  fp8 inputs are computed in ``float32`` and rounded back to the input type.
* Shapes broadcast like Triton/numpy: scalars splat; tiles of lower rank gain
  leading unit dimensions; each dimension must match or be 1.
* ``store`` converts the value to the pointee type (like Triton); ``load``'s
  ``other`` is converted the same way.
"""

from __future__ import annotations

import builtins
from typing import Any, List, Optional, Sequence, Tuple

from .. import language as kl
from ..language.core import (
    KernelFunction,
    block_type,
    constexpr,
    dtype,
    pointer_type,
    tensor,
    tensor_descriptor_type,
)
from ..language.errors import SemanticError


def _value(x: Any) -> Any:
    return x.value if isinstance(x, constexpr) else x


def _is_pow2(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _int_range(d: dtype) -> Tuple[int, int]:
    bits = d.primitive_bitwidth
    if d.is_bool():
        return 0, 1
    if d.is_int_unsigned():
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


class Semantic:
    def __init__(self, builder: Any):
        self.builder = builder
        #: Inlines a ``@kiln.jit`` function on tensors, ``(fn, args) -> value``; set by the
        #: code generator around each builtin call (``associative_scan``'s combine_fn).
        self.call_jit: Any = None
        #: The kernel's thread-block cluster shape (the specialization's ``cluster``).
        self.cluster: Tuple[int, int, int] = (1, 1, 1)

    # ------------------------------------------------------------------
    # Types and constants
    # ------------------------------------------------------------------
    def ir_type(self, ty: Any) -> Any:
        b = self.builder
        if isinstance(ty, block_type):
            return b.tensor_type(list(ty.shape), self.ir_type(ty.element_ty))
        if isinstance(ty, pointer_type):
            return b.ptr_type(self.ir_type(ty.element_ty))
        if isinstance(ty, tensor_descriptor_type):
            return b.tensordesc_type(self.ir_type(ty.block), ty.swizzle)
        if ty.is_int():
            return b.int_type(ty.primitive_bitwidth)
        return b.float_type(ty.short)

    def constant(self, value: Any, ty: dtype) -> tensor:
        """A scalar constant of dtype ``ty``."""
        if ty.is_floating():
            handle = self.builder.float_constant(self.ir_type(ty), float(value))
        elif ty.is_int():
            v = int(value)
            lo, hi = _int_range(ty)
            if not lo <= v <= hi:
                raise SemanticError(f"constant {v} does not fit in {ty.name}")
            if ty.is_int_unsigned() and v > _I64_MAX:
                v -= 2**64
            handle = self.builder.int_constant(self.ir_type(ty), v)
        else:
            raise SemanticError(f"cannot make a constant of type {ty}")
        return tensor(handle, ty)

    @staticmethod
    def literal_type(value: Any) -> dtype:
        if isinstance(value, bool):
            return kl.int1
        if isinstance(value, int):
            if _I32_MIN <= value <= _I32_MAX:
                return kl.int32
            if _I64_MIN <= value <= _I64_MAX:
                return kl.int64
            if 0 <= value < 2**64:
                return kl.uint64
            raise SemanticError(f"integer {value} does not fit in 64 bits")
        if isinstance(value, float):
            return kl.float32
        raise SemanticError(f"expected a number, got {type(value).__name__} {value!r}")

    def to_tensor(self, x: Any, ty: Optional[dtype] = None) -> tensor:
        """``x`` as a tensor; Python values become constants of ``ty`` (or of
        their literal type)."""
        if isinstance(x, tensor):
            return x
        v = x.value if isinstance(x, constexpr) else x
        if isinstance(v, tensor):
            return v
        if not isinstance(v, (bool, int, float)):
            raise SemanticError(f"expected a kiln value or a number, got {type(v).__name__} "
                                f"{v!r}")
        return self.constant(v, ty or self.literal_type(v))

    @staticmethod
    def is_literal(x: Any) -> bool:
        v = x.value if isinstance(x, constexpr) else x
        return isinstance(v, (bool, int, float))

    # ------------------------------------------------------------------
    # Promotion and broadcasting
    # ------------------------------------------------------------------
    @staticmethod
    def promote(a: dtype, b: dtype) -> dtype:
        if a == b:
            return kl.float32 if a.is_fp8() else a
        if a.is_floating() or b.is_floating():
            if not (a.is_floating() and b.is_floating()):
                f = a if a.is_floating() else b
                return kl.float32 if f.is_fp8() else f
            if a.is_fp8() or b.is_fp8():
                return kl.float64 if kl.float64 in (a, b) else kl.float32
            if a.primitive_bitwidth != b.primitive_bitwidth:
                return a if a.primitive_bitwidth > b.primitive_bitwidth else b
            return kl.float32  # float16 with bfloat16
        if a.is_bool():
            return b
        if b.is_bool():
            return a
        if a.primitive_bitwidth != b.primitive_bitwidth:
            return a if a.primitive_bitwidth > b.primitive_bitwidth else b
        return a if a.is_int_unsigned() else b

    def _weak_type(self, literal: Any, other: dtype) -> dtype:
        """Type a Python literal takes next to a typed operand of dtype ``other``."""
        v = literal.value if isinstance(literal, constexpr) else literal
        if isinstance(v, bool):
            return kl.int1 if other.is_bool() else (other if other.is_int() else kl.int1)
        if isinstance(v, int):
            if other.is_floating():
                return other
            if other.is_int() and not other.is_bool():
                lo, hi = _int_range(other)
                if lo <= v <= hi:
                    return other
            return self.literal_type(v)
        return other if other.is_floating() else kl.float32

    def operand_types(self, a: Any, b: Any) -> Tuple[tensor, tensor]:
        """Tensors for two operands, typing literals weakly against each other."""
        if self.is_literal(a) and self.is_literal(b):
            return self.to_tensor(a), self.to_tensor(b)
        if self.is_literal(a):
            tb = self.to_tensor(b)
            other = tb.dtype.element_ty if tb.dtype.is_ptr() else tb.dtype
            if tb.dtype.is_ptr():
                other = kl.int32
            return self.to_tensor(a, self._weak_type(a, other)), tb
        if self.is_literal(b):
            ta = self.to_tensor(a)
            other = kl.int32 if ta.dtype.is_ptr() else ta.dtype
            return ta, self.to_tensor(b, self._weak_type(b, other))
        return self.to_tensor(a), self.to_tensor(b)

    @staticmethod
    def broadcast_shapes(s1: Sequence[int], s2: Sequence[int]) -> Tuple[int, ...]:
        if not s1:
            return tuple(s2)
        if not s2:
            return tuple(s1)
        r = max(len(s1), len(s2))
        a = (1,) * (r - len(s1)) + tuple(s1)
        b = (1,) * (r - len(s2)) + tuple(s2)
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            if x == y or y == 1:
                out.append(x)
            elif x == 1:
                out.append(y)
            else:
                raise SemanticError(f"incompatible shapes for broadcasting: {list(s1)} and "
                                    f"{list(s2)} (dimension {i}: {x} vs {y})")
        return tuple(out)

    def broadcast_to(self, x: tensor, shape: Sequence[int]) -> tensor:
        shape = tuple(shape)
        if x.shape == shape:
            return x
        if not shape:
            raise SemanticError(f"cannot broadcast a tile of shape {list(x.shape)} to a scalar")
        if not x.type.is_block():
            ty = block_type(x.dtype, shape)
            return tensor(self.builder.splat(x.handle, list(shape)), ty)
        if len(x.shape) > len(shape):
            raise SemanticError(f"cannot broadcast shape {list(x.shape)} to {list(shape)}")
        while len(x.shape) < len(shape):
            x = self.expand_dims(x, 0)
        for d, (have, want) in enumerate(zip(x.shape, shape)):
            if have != want and have != 1:
                raise SemanticError(f"cannot broadcast shape {list(x.shape)} to {list(shape)} "
                                    f"(dimension {d}: {have} vs {want})")
        if x.shape == shape:
            return x
        ty = block_type(x.dtype, shape)
        return tensor(self.builder.broadcast(x.handle, list(shape)), ty)

    def broadcast_pair(self, a: tensor, b: tensor) -> Tuple[tensor, tensor]:
        shape = self.broadcast_shapes(a.shape, b.shape)
        return self.broadcast_to(a, shape), self.broadcast_to(b, shape)

    def expand_dims(self, x: Any, axis: int) -> tensor:
        x = self.to_tensor(x)
        if not x.type.is_block():
            x = self.broadcast_to(x, (1,))
            if axis == 0:
                return x
        rank = len(x.shape)
        if axis < 0:
            axis += rank + 1
        if not 0 <= axis <= rank:
            raise SemanticError(f"expand_dims axis {axis} out of range for rank {rank}")
        shape = list(x.shape)
        shape.insert(axis, 1)
        return tensor(self.builder.expand_dims(x.handle, axis), block_type(x.dtype, shape))

    def subscript(self, x: Any, index: Any) -> tensor:
        """``x[:, None]`` style indexing: ``None`` inserts a unit dimension,
        ``:`` keeps one."""
        x = self.to_tensor(x)
        items = index if isinstance(index, tuple) else (index,)
        kept = builtins.sum(1 for i in items if isinstance(i, slice))
        if kept != len(x.shape):
            raise SemanticError(f"indexing a tile of rank {len(x.shape)} needs {len(x.shape)} "
                                f"':' entries (plus None for new axes), got {kept}")
        axis = 0
        for i in items:
            if i is None:
                x = self.expand_dims(x, axis)
                axis += 1
            elif isinstance(i, slice):
                if i.start is not None or i.stop is not None or i.step is not None:
                    raise SemanticError("only ':' slices are supported when indexing tiles")
                axis += 1
            else:
                raise SemanticError("tiles can only be indexed with ':' and None "
                                    "(element indexing is not supported)")
        return x

    # ------------------------------------------------------------------
    # Permuting dimensions
    # ------------------------------------------------------------------
    @staticmethod
    def _tile(what: str, x: Any) -> tensor:
        if not isinstance(x, tensor) or not x.type.is_block():
            got = f"a scalar {x.dtype}" if isinstance(x, tensor) else \
                f"{type(_value(x)).__name__} {_value(x)!r}"
            raise SemanticError(f"{what} needs a tile, got {got}")
        return x

    @staticmethod
    def _permutation(what: str, x: tensor, dims: Any) -> List[int]:
        """``dims`` (ints, or one tuple of them) checked as a permutation of the
        dimensions of ``x``; negative entries count from the end."""
        dims = _value(dims)
        if not isinstance(dims, (tuple, list)):
            dims = (dims,)
        if len(dims) == 1 and isinstance(_value(dims[0]), (tuple, list)):
            dims = _value(dims[0])
        order = []
        for d in dims:
            d = _value(d)
            if isinstance(d, tensor):
                raise SemanticError(f"{what}: dims must be constexpr ints, got a runtime value")
            if not isinstance(d, int) or isinstance(d, bool):
                raise SemanticError(f"{what}: dims must be ints, got {d!r}")
            order.append(d)
        rank = len(x.shape)
        if len(order) != rank:
            raise SemanticError(f"{what}: a tile of rank {rank} needs {rank} dims, got "
                                f"{len(order)} {tuple(order)}")
        normalized = [d + rank if d < 0 else d for d in order]
        if sorted(normalized) != list(range(rank)):
            raise SemanticError(f"{what}: dims {tuple(order)} are not a permutation of "
                                f"{tuple(range(rank))}")
        return normalized

    def permute(self, x: Any, dims: Any, what: str = "permute") -> tensor:
        """Dimension ``k`` of the result is dimension ``dims[k]`` of ``x`` (``tile.trans``;
        the identity permutation is ``x`` itself)."""
        x = self._tile(what, self.to_tensor(x) if self.is_literal(x) else x)
        order = self._permutation(what, x, dims)
        if order == list(range(len(order))):
            return x
        shape = [x.shape[d] for d in order]
        return tensor(self.builder.trans(x.handle, order), block_type(x.dtype, shape))

    def trans(self, x: Any, dims: Any = (), what: str = "trans") -> tensor:
        """``permute``; without dims, the transpose of a 2-D tile (as Triton's ``tl.trans``)."""
        x = self._tile(what, self.to_tensor(x) if self.is_literal(x) else x)
        dims = _value(dims)
        if isinstance(dims, (tuple, list)) and len(dims) == 0:
            rank = len(x.shape)
            if rank != 2:
                example = ", ".join(str(d) for d in reversed(range(rank)))
                raise SemanticError(f"{what} without dims transposes a 2-D tile, got rank {rank} "
                                    f"(pass the new order of the dimensions, e.g. "
                                    f"kl.trans(x, {example}))")
            dims = (1, 0)
        return self.permute(x, dims, what)

    def transpose_attr(self, x: tensor) -> tensor:
        """``x.T``: the transpose of a 2-D tile."""
        x = self._tile("x.T", x)
        if len(x.shape) != 2:
            raise SemanticError(f"x.T transposes a 2-D tile, got rank {len(x.shape)} (use "
                                f"kl.permute(x, dims) for other ranks)")
        return self.permute(x, (1, 0), "x.T")

    # ------------------------------------------------------------------
    # Reshaping, joining and splitting
    # ------------------------------------------------------------------
    def reshape(self, x: Any, shape: Sequence[int], what: str = "reshape") -> tensor:
        """The elements of ``x`` in row-major order, in ``shape`` (``tile.reshape``)."""
        shape = list(shape)
        if not builtins.all(_is_pow2(d) for d in shape):
            raise SemanticError(f"{what}: tile dimensions must be powers of two, got {shape}")
        x = self.to_tensor(x)
        numel = 1
        for d in shape:
            numel *= d
        if not x.type.is_block():
            if numel != 1:
                raise SemanticError(f"{what}: cannot reshape a scalar to {shape} ({numel} "
                                    f"elements)")
            return self.broadcast_to(x, tuple(shape)) if shape else x
        if not shape:
            raise SemanticError(f"{what}: cannot reshape a tile of shape {list(x.shape)} to a "
                                f"scalar")
        if numel != x.numel:
            raise SemanticError(f"{what}: cannot reshape a tile of shape {list(x.shape)} "
                                f"({x.numel} elements) to {shape} ({numel} elements)")
        if tuple(shape) == x.shape:
            return x
        return tensor(self.builder.reshape(x.handle, shape), block_type(x.dtype, shape))

    def join(self, a: Any, b: Any) -> tensor:
        """``result[..., 0] = a``, ``result[..., 1] = b`` (``tile.join``): ``a`` and ``b``
        broadcast to one shape and have one dtype; two scalars give a tile of 2."""
        a, b = self.operand_types(a, b)
        if a.dtype != b.dtype:
            raise SemanticError(f"join: a and b must have one dtype, got {a.dtype} and "
                                f"{b.dtype} (convert one with .to())")
        shape = self.broadcast_shapes(a.shape, b.shape)
        if not shape:
            joined = self.join(self.broadcast_to(a, (1,)), self.broadcast_to(b, (1,)))
            return self.reshape(joined, [2], "join")
        a, b = self.broadcast_to(a, shape), self.broadcast_to(b, shape)
        return tensor(self.builder.join(a.handle, b.handle),
                      block_type(a.dtype, tuple(shape) + (2,)))

    def split(self, x: Any) -> Tuple[tensor, tensor]:
        """``(x[..., 0], x[..., 1])`` of a tile whose last dimension is 2 (``tile.split``)."""
        x = self._tile("split", self.to_tensor(x) if self.is_literal(x) else x)
        if x.shape[-1] != 2:
            raise SemanticError(f"split: the last dimension must be 2, got shape {list(x.shape)}")
        if len(x.shape) == 1:
            raise SemanticError("split of a 1-D tile would give two scalars, which is not "
                                "supported (reshape it to [1, 2] first)")
        lhs, rhs = self.builder.split(x.handle)
        ty = block_type(x.dtype, x.shape[:-1])
        return tensor(lhs, ty), tensor(rhs, ty)

    # ------------------------------------------------------------------
    # Casts
    # ------------------------------------------------------------------
    def _with_shape(self, like: tensor, d: Any) -> Any:
        return block_type(d, like.shape) if like.type.is_block() else d

    def cast(self, x: Any, to: Any, bitcast: bool = False) -> tensor:
        if isinstance(to, str):
            to = kl.dtype_from_str(to)
        if not isinstance(to, dtype):
            raise SemanticError(f"expected a dtype, got {to!r}")
        x = self.to_tensor(x, to if self.is_literal(x) else None)
        src = x.dtype
        if src == to:
            return x
        if src.is_ptr() or to.is_ptr():
            raise SemanticError(f"cannot cast {src} to {to}: pointer casts are not supported")
        b = self.builder
        dst_ir = self.ir_type(self._with_shape(x, to))
        out_ty = self._with_shape(x, to)
        if bitcast:
            if src.primitive_bitwidth != to.primitive_bitwidth:
                raise SemanticError(f"bitcast needs equal widths, got {src} "
                                    f"({src.primitive_bitwidth} bits) and {to} "
                                    f"({to.primitive_bitwidth} bits)")
            if src.is_int() and to.is_int():  # signedness only
                return tensor(x.handle, out_ty)
            return tensor(b.cast("bitcast", x.handle, dst_ir), out_ty)
        if src.is_floating() and to.is_floating():
            sw, tw = src.primitive_bitwidth, to.primitive_bitwidth
            if sw == tw:  # float16 <-> bfloat16, fp8 <-> fp8: through float32
                return self.cast(self.cast(x, kl.float32), to)
            kind = "extf" if tw > sw else "truncf"
            return tensor(b.cast(kind, x.handle, dst_ir), out_ty)
        if src.is_int() and to.is_floating():
            kind = "uitofp" if (src.is_int_unsigned() or src.is_bool()) else "sitofp"
            return tensor(b.cast(kind, x.handle, dst_ir), out_ty)
        if src.is_floating() and to.is_int():
            if to.is_bool():
                return self.binary("ne", x, 0.0)
            kind = "fptoui" if to.is_int_unsigned() else "fptosi"
            return tensor(b.cast(kind, x.handle, dst_ir), out_ty)
        # int -> int
        if to.is_bool():
            return self.binary("ne", x, 0)
        sw, tw = src.primitive_bitwidth, to.primitive_bitwidth
        if sw == tw:
            return tensor(x.handle, out_ty)
        if tw > sw:
            kind = "extsi" if src.is_int_signed() else "extui"
        else:
            kind = "trunci"
        return tensor(b.cast(kind, x.handle, dst_ir), out_ty)

    # ------------------------------------------------------------------
    # Arithmetic
    # ------------------------------------------------------------------
    _CMP = {"lt": ("slt", "ult", "olt"), "le": ("sle", "ule", "ole"),
            "gt": ("sgt", "ugt", "ogt"), "ge": ("sge", "uge", "oge"),
            "eq": ("eq", "eq", "oeq"), "ne": ("ne", "ne", "une")}
    _SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//",
               "mod": "%", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
               "ne": "!=", "and": "&", "or": "|", "xor": "^", "lshift": "<<",
               "rshift": ">>"}

    def binary(self, op: str, a: Any, b: Any, approx: bool = False) -> tensor:
        """``approx``: a float division may use the hardware reciprocal
        approximation (``rcp.approx``/``div.approx``, 2 ulp)."""
        a, b = self.operand_types(a, b)
        sym = self._SYMBOL.get(op, op)
        if a.dtype.is_ptr() or b.dtype.is_ptr():
            return self._pointer_arith(op, sym, a, b)
        ty = self.promote(a.dtype, b.dtype)
        if op == "truediv" and ty.is_int():
            ty = kl.float32
        if op in ("and", "or", "xor", "lshift", "rshift") and not ty.is_int():
            raise SemanticError(f"operator {sym} needs integer operands, got {a.dtype} and "
                                f"{b.dtype}")
        a, b = self.cast(a, ty), self.cast(b, ty)
        a, b = self.broadcast_pair(a, b)
        bld = self.builder
        if op in self._CMP:
            s, u, f = self._CMP[op]
            if ty.is_floating():
                h = bld.cmpf(f, a.handle, b.handle)
            else:
                h = bld.cmpi(u if (ty.is_int_unsigned() or ty.is_bool()) else s, a.handle,
                             b.handle)
            return tensor(h, self._with_shape(a, kl.int1))
        out_ty = a.type
        if ty.is_floating():
            if op == "floordiv":
                q = tensor(bld.binary("divf", a.handle, b.handle), out_ty)
                return self._math(q, "floor")
            name = {"add": "addf", "sub": "subf", "mul": "mulf", "truediv": "divf",
                    "mod": "remf"}[op]
            return tensor(bld.binary(name, a.handle, b.handle, approx=approx and op == "truediv"),
                          out_ty)
        unsigned = ty.is_int_unsigned() or ty.is_bool()
        name = {"add": "addi", "sub": "subi", "mul": "muli",
                "floordiv": "divui" if unsigned else "divsi",
                "mod": "remui" if unsigned else "remsi",
                "and": "andi", "or": "ori", "xor": "xori", "lshift": "shli",
                "rshift": "shrui" if unsigned else "shrsi"}[op]
        return tensor(bld.binary(name, a.handle, b.handle), out_ty)

    def _pointer_arith(self, op: str, sym: str, a: tensor, b: tensor) -> tensor:
        if a.dtype.is_ptr() and b.dtype.is_ptr():
            raise SemanticError(f"operator {sym} between two pointers is not supported")
        if op == "add":
            ptr, off = (a, b) if a.dtype.is_ptr() else (b, a)
        elif op == "sub" and a.dtype.is_ptr():
            ptr, off = a, self.unary("neg", b)
        else:
            raise SemanticError(f"operator {sym} is not defined between {a.dtype.short} and "
                                f"{b.dtype.short} (pointers support + and - with integers)")
        if not off.dtype.is_int() or off.dtype.is_bool():
            raise SemanticError(f"pointer offsets must be integers, got {off.dtype}")
        ptr, off = self.broadcast_pair(ptr, off)
        return tensor(self.builder.addptr(ptr.handle, off.handle), ptr.type)

    def unary(self, op: str, x: Any) -> tensor:
        x = self.to_tensor(x)
        if x.dtype.is_ptr():
            raise SemanticError(f"unary operator on a pointer ({x.dtype}) is not supported")
        if op == "pos":
            return x
        if op == "neg":
            if x.dtype.is_floating():
                return tensor(self.builder.unary("negf", x.handle), x.type)
            return self.binary("sub", self._zero_like(x), x)
        if op == "invert":
            if not x.dtype.is_int():
                raise SemanticError(f"operator ~ needs an integer operand, got {x.dtype}")
            if x.dtype.is_bool():
                all_ones = 1
            elif x.dtype.is_int_unsigned():
                all_ones = 2**x.dtype.primitive_bitwidth - 1
            else:
                all_ones = -1
            return self.binary("xor", x, self.constant(all_ones, x.dtype))
        if op == "not":
            return self.binary("eq", x, self._zero_like(x))
        raise SemanticError(f"unsupported unary operator {op}")

    def _zero_like(self, x: tensor) -> tensor:
        return self.constant(0, x.dtype)

    # ------------------------------------------------------------------
    # Math
    # ------------------------------------------------------------------
    #: Functions that use the GPU's approximate hardware paths unless ``precise=True``
    #: (as CUDA's fast intrinsics and Triton's ``tl.exp``): ex2/lg2/sin/cos/tanh.approx.f32.
    APPROXIMATE = frozenset({"exp", "exp2", "log", "log2", "sin", "cos", "tanh"})

    def _math(self, x: tensor, name: str, approx: bool = False) -> tensor:
        return tensor(self.builder.unary(name, x.handle, approx=approx), x.type)

    def _float_operand(self, what: str, x: Any) -> Tuple[tensor, dtype]:
        x = self.to_tensor(x, kl.float32 if self.is_literal(x) else None)
        if not x.dtype.is_floating():
            raise SemanticError(f"{what} expects a floating-point operand, got {x.dtype} "
                                f"(convert with .to(kl.float32))")
        compute = x.dtype if x.dtype in (kl.float32, kl.float64) else kl.float32
        return self.cast(x, compute), x.dtype

    def math_unary(self, name: str, x: Any, precise: bool = False) -> tensor:
        xc, orig = self._float_operand(name, x)
        approx = name in self.APPROXIMATE and not precise
        return self.cast(self._math(xc, name, approx), orig)

    def sigmoid(self, x: Any, precise: bool = False) -> tensor:
        """``1 / (1 + exp(-x))``; fast exp and reciprocal unless ``precise``."""
        xc, orig = self._float_operand("sigmoid", x)
        e = self._math(self.unary("neg", xc), "exp", approx=not precise)
        return self.cast(self.binary("truediv", 1.0, self.binary("add", 1.0, e),
                                     approx=not precise), orig)

    def fdiv(self, x: Any, y: Any, ieee_rounding: bool) -> tensor:
        """``x / y`` of floats; the hardware's fast division unless ``ieee_rounding``."""
        a, b = self.operand_types(x, y)
        if not (a.dtype.is_floating() and b.dtype.is_floating()):
            raise SemanticError(f"fdiv takes floats, got {a.dtype} and {b.dtype}")
        return self.binary("truediv", a, b, approx=not ieee_rounding)

    def abs(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        if x.dtype.is_floating():
            return self._math(x, "absf")
        if x.dtype.is_int_signed():
            return self._math(x, "absi")
        if x.dtype.is_int():
            return x
        raise SemanticError(f"abs of {x.dtype} is not supported")

    def minmax(self, which: str, x: Any, y: Any) -> tensor:
        a, b = self.operand_types(x, y)
        if a.dtype.is_ptr() or b.dtype.is_ptr():
            raise SemanticError(f"{which}imum of pointers is not supported")
        ty = self.promote(a.dtype, b.dtype)
        a, b = self.broadcast_pair(self.cast(a, ty), self.cast(b, ty))
        if ty.is_floating():
            name = which + "numf"
        else:
            name = which + ("ui" if ty.is_int_unsigned() or ty.is_bool() else "si")
        return tensor(self.builder.binary(name, a.handle, b.handle), a.type)

    def fma(self, x: Any, y: Any, z: Any) -> tensor:
        ts = [self.to_tensor(v, kl.float32 if self.is_literal(v) else None) for v in (x, y, z)]
        ty = ts[0].dtype
        for t in ts[1:]:
            ty = self.promote(ty, t.dtype)
        if not ty.is_floating():
            raise SemanticError(f"fma expects floating-point operands, got "
                                f"{', '.join(str(t.dtype) for t in ts)}")
        shape: Tuple[int, ...] = ()
        for t in ts:
            shape = self.broadcast_shapes(shape, t.shape)
        a, b, c = (self.broadcast_to(self.cast(t, ty), shape) for t in ts)
        return tensor(self.builder.fma(a.handle, b.handle, c.handle), a.type)

    def dot(self, a: Any, b: Any, acc: Any = None, max_num_imprecise_acc: Any = None) -> tensor:
        """``acc + a @ b`` in float32 (``tile.dot``); ``max_num_imprecise_acc`` becomes
        its ``maxNumImpreciseAcc`` attribute."""
        a, b = self.to_tensor(a), self.to_tensor(b)
        for name, t in (("a", a), ("b", b)):
            if not t.type.is_block() or len(t.shape) != 2:
                raise SemanticError(f"dot: {name} must be a 2-D tile, got "
                                    f"{list(t.shape) if t.type.is_block() else t.dtype}")
            if t.dtype not in (kl.float16, kl.bfloat16, kl.float8e4m3, kl.float8e5m2):
                raise SemanticError(f"dot: {name} must be float16, bfloat16 or FP8 (float8e4m3, "
                                    f"float8e5m2), got {t.dtype} (convert with "
                                    f".to(kl.bfloat16))")
        if a.dtype != b.dtype:
            raise SemanticError(f"dot: a and b must have one dtype, got {a.dtype} and {b.dtype}")
        (m, k), (kb, n) = a.shape, b.shape
        if k != kb:
            raise SemanticError(f"dot: a is {m}x{k} and b is {kb}x{n}: the columns of a must "
                                f"equal the rows of b")
        k_least = 32 if a.dtype.is_fp8() else 16
        # M below 16 is padded onto the MMA's 16 rows by the compiler
        for name, size, least in (("N", n, 8), ("K", k, k_least)):
            if size < least:
                raise SemanticError(f"dot: {name} = {size} is below the tensor-core minimum "
                                    f"{least} (N >= 8, K >= {k_least})")
        ty = block_type(kl.float32, (m, n))
        if acc is None:
            c = self.full([m, n], 0.0, kl.float32)
        else:
            c = self.to_tensor(acc)
            if not c.type.is_block() or c.dtype != kl.float32 or tuple(c.shape) != (m, n):
                got = f"{list(c.shape)} {c.dtype}" if c.type.is_block() else str(c.dtype)
                raise SemanticError(f"dot: acc must be a float32 tile of shape {[m, n]}, "
                                    f"got {got}")
        n_imprecise = self._max_num_imprecise_acc(max_num_imprecise_acc, a.dtype, k)
        return tensor(self.builder.dot(a.handle, b.handle, c.handle, n_imprecise), ty)

    @staticmethod
    def _max_num_imprecise_acc(value: Any, dtype: Any, k: int) -> Optional[int]:
        """``dot``'s bound on imprecise accumulation: None, or a power of two from 32
        (the K of one FP8 MMA instruction) to K, for FP8 operands only."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise SemanticError(f"dot: max_num_imprecise_acc must be a constexpr int, got "
                                f"{value!r}")
        if not dtype.is_fp8():
            raise SemanticError(f"dot: max_num_imprecise_acc applies to FP8 operands "
                                f"(float8e4m3, float8e5m2) only, got {dtype}")
        if value < 32 or value & (value - 1):
            raise SemanticError(f"dot: max_num_imprecise_acc must be a power of two >= 32 "
                                f"(a multiple of the K of one FP8 MMA), got {value}")
        if value > k:
            raise SemanticError(f"dot: max_num_imprecise_acc = {value} exceeds K = {k} (the "
                                f"bound applies within one dot)")
        return value

    def cdiv(self, x: Any, div: Any) -> Any:
        if self.is_literal(x) and self.is_literal(div):
            xv = x.value if isinstance(x, constexpr) else x
            dv = div.value if isinstance(div, constexpr) else div
            if not isinstance(xv, int) or not isinstance(dv, int):
                raise SemanticError("cdiv takes integers")
            if dv == 0:
                raise SemanticError("cdiv by zero")
            return constexpr(-(-xv // dv))
        return self.binary("floordiv", self.binary("sub", self.binary("add", x, div), 1), div)

    def where(self, cond: Any, x: Any, y: Any) -> tensor:
        c = self.to_tensor(cond)
        if not c.dtype.is_bool():
            c = self.cast(c, kl.int1)
        a, b = self.operand_types(x, y)
        if a.dtype.is_ptr() or b.dtype.is_ptr():
            if a.dtype != b.dtype:
                raise SemanticError(f"where: pointer operands of different types {a.dtype} and "
                                    f"{b.dtype}")
            ty = a.dtype
        else:
            ty = self.promote(a.dtype, b.dtype)
            a, b = self.cast(a, ty), self.cast(b, ty)
        shape = self.broadcast_shapes(self.broadcast_shapes(c.shape, a.shape), b.shape)
        c, a, b = (self.broadcast_to(t, shape) for t in (c, a, b))
        return tensor(self.builder.select(c.handle, a.handle, b.handle), a.type)

    # ------------------------------------------------------------------
    # Atomics
    # ------------------------------------------------------------------
    _SEMS = ("relaxed", "acquire", "release", "acq_rel")
    _SCOPES = ("cta", "gpu", "sys")

    def _atomic_operands(self, what: str, ptr: Any, values: Sequence[Any], sem: Any,
                         scope: Any) -> Tuple[tensor, List[tensor], str, str]:
        for name, v, allowed in (("sem", sem, self._SEMS), ("scope", scope, self._SCOPES)):
            if not isinstance(v, str) or v not in allowed:
                raise SemanticError(f"{what}: {name} must be one of {', '.join(allowed)}, "
                                    f"got {v!r}")
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise SemanticError(f"{what} needs a pointer (tile), got {ptr.dtype}")
        elem = ptr.dtype.element_ty
        shape = ptr.shape if ptr.type.is_block() else ()
        out = []
        for v in values:
            v = self.cast(self.to_tensor(v, elem if self.is_literal(v) else None), elem)
            if v.type.is_block() and tuple(v.shape) != tuple(shape):
                raise SemanticError(f"{what}: value of shape {list(v.shape)} does not match "
                                    f"the pointers' shape {list(shape)}")
            out.append(self.broadcast_to(v, shape) if shape else v)
        return ptr, out, sem, scope

    def atomic_rmw(self, op: str, ptr: Any, val: Any, mask: Any, sem: Any, scope: Any) -> tensor:
        what = f"atomic_{op}"
        ptr, (val,), sem, scope = self._atomic_operands(what, ptr, [val], sem, scope)
        elem = ptr.dtype.element_ty
        if elem.is_floating():
            if op not in ("add", "xchg"):
                raise SemanticError(f"{what} is not supported on {elem} (floats: atomic_add, "
                                    f"atomic_xchg)")
            kind = "fadd" if op == "add" else "xchg"
        else:
            if elem.primitive_bitwidth not in (32, 64):
                raise SemanticError(f"{what} needs 32- or 64-bit elements, got {elem}")
            unsigned = elem.is_int_unsigned()
            kind = {"add": "add", "max": "umax" if unsigned else "max",
                    "min": "umin" if unsigned else "min", "and": "and", "or": "or",
                    "xor": "xor", "xchg": "xchg"}[op]
        m = None
        if mask is not None:
            m = self.to_tensor(mask)
            if not m.dtype.is_bool():
                raise SemanticError(f"{what}: the mask must be boolean, got {m.dtype}")
            if ptr.type.is_block():
                m = self.broadcast_to(m, ptr.shape)
            m = m.handle
        ty = self._with_shape(ptr, elem)
        return tensor(self.builder.atomic_rmw(kind, sem, scope, ptr.handle, val.handle, m), ty)

    def atomic_cas(self, ptr: Any, cmp: Any, val: Any, sem: Any, scope: Any) -> tensor:
        ptr, (cmp, val), sem, scope = self._atomic_operands("atomic_cas", ptr, [cmp, val], sem,
                                                            scope)
        elem = ptr.dtype.element_ty
        if not elem.is_int() or elem.primitive_bitwidth not in (32, 64):
            raise SemanticError(f"atomic_cas needs i32/i64 elements, got {elem}")
        return tensor(self.builder.atomic_cas(sem, scope, ptr.handle, cmp.handle, val.handle),
                      self._with_shape(ptr, elem))

    # ------------------------------------------------------------------
    # Programmatic dependent launch
    # ------------------------------------------------------------------
    def pdl_wait(self) -> None:
        self.builder.pdl_wait()

    def pdl_launch_dependents(self) -> None:
        self.builder.pdl_launch_dependents()

    # ------------------------------------------------------------------
    # Thread-block clusters
    # ------------------------------------------------------------------
    def cluster_id(self, axis: Any) -> tensor:
        return tensor(self.builder.cluster_id(self._axis(axis, "cluster")), kl.int32)

    def num_clusters(self, axis: Any) -> tensor:
        return tensor(self.builder.num_clusters(self._axis(axis, "cluster")), kl.int32)

    def cluster_cta_id(self, axis: Any) -> tensor:
        return tensor(self.builder.cluster_cta_id(self._axis(axis, "cluster")), kl.int32)

    def cluster_cta_rank(self) -> tensor:
        return tensor(self.builder.cluster_cta_rank(), kl.int32)

    def cluster_size(self) -> tensor:
        return tensor(self.builder.cluster_size(), kl.int32)

    def barrier(self) -> None:
        self.builder.barrier()

    def cluster_barrier(self) -> None:
        self.builder.cluster_barrier()

    def _cluster_tile(self, x: Any, op: str, verb: str) -> tensor:
        """``x`` as a tile of numbers that ``op`` (cluster_load / cluster_gather) moves."""
        x = self.to_tensor(x)
        if not x.type.is_block():
            raise SemanticError(f"{op} needs a tile, got a scalar {x.dtype} ({verb} a "
                                f"1-element tile, e.g. kl.full((1,), value, dtype))")
        if x.dtype.is_ptr():
            raise SemanticError(f"{op} moves numbers, not pointers (got a tile of "
                                f"{x.dtype})")
        return x

    def cluster_load(self, x: Any, rank: Any) -> tensor:
        x = self._cluster_tile(x, "cluster_load", "load")
        if self.is_literal(rank):
            r = _value(rank)
            if isinstance(r, bool) or not isinstance(r, int):
                raise SemanticError(f"cluster_load: the rank must be an integer, got {r!r}")
            cx, cy, cz = self.cluster
            if not 0 <= r < cx * cy * cz:
                raise SemanticError(f"cluster_load: the rank must be in [0, {cx * cy * cz}) "
                                    f"for a cluster of {cx}x{cy}x{cz}, got {r}")
        rank = self.to_tensor(rank, kl.int32 if self.is_literal(rank) else None)
        rank = self._int32_scalar(rank, "cluster_load", "rank")
        return tensor(self.builder.cluster_load(x.handle, rank.handle), x.type)

    def _int32_scalar(self, v: tensor, op: str, what: str) -> tensor:
        """``v`` as an i32 scalar; a tile or a non-integer is an error naming ``op``."""
        if v.type.is_block():
            raise SemanticError(f"{op}: the {what} must be a scalar, got a tile {v.type}")
        if not v.dtype.is_int() or v.dtype.is_bool():
            raise SemanticError(f"{op}: the {what} must be an integer, got {v.dtype}")
        return self.cast(v, kl.int32) if v.dtype != kl.int32 else v

    def cluster_gather(self, x: Any) -> tensor:
        x = self._cluster_tile(x, "cluster_gather", "gather")
        cx, cy, cz = self.cluster
        size = cx * cy * cz
        if size & (size - 1):
            raise SemanticError(f"cluster_gather stacks the tiles of the cluster's programs "
                                f"along a new first dimension, which must be a power of two; "
                                f"the cluster {cx}x{cy}x{cz} has {size} programs")
        return tensor(self.builder.cluster_gather(x.handle, size),
                      block_type(x.dtype, [size] + list(x.shape)))

    def cluster_sum(self, x: Any) -> Any:
        """The tile ``x`` (or each tile of a tuple, in one exchange) summed over the
        cluster's programs."""
        tiles = list(x) if isinstance(x, (tuple, list)) else [x]
        if not tiles:
            raise SemanticError("cluster_sum needs a tile or a tuple of tiles, got ()")
        tiles = [self._cluster_tile(t, "cluster_sum", "sum") for t in tiles]
        for t in tiles:
            if t.dtype not in (kl.float32, kl.float64, kl.int32, kl.int64):
                raise SemanticError(
                    f"cluster_sum adds 32- or 64-bit numbers, got a tile of {t.dtype} (a "
                    f"narrower float would round at every add: convert it first, e.g. "
                    f"x.to(kl.float32))")
        handles = self.builder.cluster_sum([t.handle for t in tiles])
        out = [tensor(h, t.type) for h, t in zip(handles, tiles)]
        return tuple(out) if isinstance(x, (tuple, list)) else out[0]

    # ------------------------------------------------------------------
    # Reductions
    # ------------------------------------------------------------------
    def _reduce_axes(self, x: tensor, axis: Any, what: str) -> List[int]:
        if isinstance(axis, tensor):
            raise SemanticError(f"{what}: the axis must be a constexpr")
        if not x.type.is_block():
            raise SemanticError(f"{what} needs a tile, got a scalar {x.dtype}")
        rank = len(x.shape)
        if axis is None:
            return list(range(rank - 1, -1, -1))
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise SemanticError(f"{what}: the axis must be an int or None, got {axis!r}")
        a = axis + rank if axis < 0 else axis
        if not 0 <= a < rank:
            raise SemanticError(f"{what}: axis {axis} is out of range for a tile of rank {rank}")
        return [a]

    def _sum_accumulator(self, x: tensor) -> tensor:
        """``x`` in the type sums accumulate in: narrower floats in f32, narrower ints in i32
        (u32 if unsigned); wider types as they are."""
        if x.dtype.is_floating() and x.dtype.primitive_bitwidth < 32:
            return self.cast(x, kl.float32)
        if x.dtype.is_int() and x.dtype.primitive_bitwidth < 32:
            return self.cast(x, kl.uint32 if x.dtype.is_int_unsigned() else kl.int32)
        return x

    def reduce(self, x: Any, axis: Any, kind: str) -> tensor:
        """``sum``/``max``/``min`` along ``axis`` (all axes for None: a scalar). Sums of
        narrower floats accumulate in f32 and of narrower ints in i32 (the result has that
        type); max/min keep the type. Float max/min ignore NaN (maxnum/minnum)."""
        x = self.to_tensor(x)
        if x.dtype.is_ptr():
            raise SemanticError(f"{kind} of pointers is not supported")
        axes = self._reduce_axes(x, axis, kind)
        if axis is None and len(axes) > 1:
            # One reduction of the row-major elements (a free reshape in the blocked layout),
            # not one per axis with a tile in between.
            x, axes = self.reshape(x, [x.numel]), [0]
        if kind == "sum":
            x = self._sum_accumulator(x)
        if x.dtype.is_floating():
            combine = {"sum": "addf", "max": "maxnumf", "min": "minnumf"}[kind]
        else:
            unsigned = x.dtype.is_int_unsigned() or x.dtype.is_bool()
            combine = {"sum": "addi", "max": "maxui" if unsigned else "maxsi",
                       "min": "minui" if unsigned else "minsi"}[kind]
        for a in axes:
            shape = list(x.shape)
            del shape[a]
            ty = block_type(x.dtype, shape) if shape else x.dtype
            x = tensor(self.builder.reduce(x.handle, a, combine), ty)
        return x

    def argreduce(self, x: Any, axis: Any, kind: str) -> tensor:
        """Index (int32) of the max/min along ``axis``; ties go to the lowest index."""
        x = self.to_tensor(x)
        axes = self._reduce_axes(x, axis, f"arg{kind}")
        if axis is None and len(x.shape) != 1:
            raise SemanticError(f"arg{kind} needs an axis for tiles of rank > 1")
        a = axes[0]
        best = self.reduce(x, a, kind)
        best = self.expand_dims(best, a) if best.type.is_block() else best
        index = self.arange(0, x.shape[a])
        for d in range(len(x.shape)):
            if d != a:
                index = self.expand_dims(index, d)
        hit = self.binary("eq", x, best)
        big = self.constant(x.shape[a], kl.int32)
        candidates = self.where(hit, index, big)
        return self.reduce(candidates, a, "min")

    def _inline_combine(self, what: str, combine_fn: Any, args: Any, elems: Any) -> Any:
        """Inlines ``combine_fn`` (a ``@kiln.jit`` function) into a reduce or scan combine
        region: ``args`` are the region's 2N block arguments (the N accumulated values,
        then the N new ones) of the dtypes ``elems``; returns the handles of its N scalar
        results, each checked against its dtype."""
        n = len(elems)
        out = self.call_jit(combine_fn, [tensor(h, elems[i % n]) for i, h in enumerate(args)])
        value = out.value if isinstance(out, constexpr) else out
        values = list(value) if isinstance(value, tuple) else [value]
        one = f"one {elems[0]} scalar"
        if value is None or len(values) != n or (n == 1 and isinstance(value, tuple)):
            got = "nothing" if value is None else (
                f"{len(values)} values" if isinstance(value, tuple) else "one value")
            want = one if n == 1 else (f"{n} scalars (" + ", ".join(str(e) for e in elems)
                                       + ")")
            raise SemanticError(f"{what}: combine_fn must return {want}, got {got}")
        handles = []
        for i, (v, elem) in enumerate(zip(values, elems)):
            v = v.value if isinstance(v, constexpr) else v
            if isinstance(v, tensor) and v.type.is_block():
                if n == 1:
                    raise SemanticError(f"{what}: combine_fn must return {one}, got a tile "
                                        f"{v.type}")
                raise SemanticError(f"{what}: combine_fn must return scalars, got a tile "
                                    f"{v.type} as value #{i}")
            t = self.to_tensor(v, elem)  # a number takes the input's dtype
            if t.dtype != elem:
                head = (f"combine_fn must return {one}, got" if n == 1 else
                        f"value #{i} of combine_fn must be {elem}, got")
                raise SemanticError(f"{what}: {head} {t.dtype} (cast it with .to({elem}))")
            handles.append(t.handle)
        return handles

    def reduce_combine(self, input: Any, axis: Any, combine_fn: Any) -> Any:
        """Reduction of one tile, or of a tuple of N tiles of one shape together, along
        ``axis`` (all axes for None) with ``combine_fn``: a ``@kiln.jit`` function of 2N
        scalars (the N accumulated values, then the N new ones) returning N (a tuple; one
        value for N = 1). Returns a tile (scalar) for one tile, a tuple for a tuple."""
        single = not isinstance(input, (tuple, list))
        items = [input] if single else list(input)
        if not items:
            raise SemanticError("reduce needs at least one tile, got an empty tuple")
        xs = [self.to_tensor(x) for x in items]
        for i, x in enumerate(xs):
            what = "reduce" if single else f"reduce: input #{i}"
            if not x.type.is_block():
                raise SemanticError(f"{what} needs a tile, got a scalar {x.dtype}")
            if x.dtype.is_ptr():
                raise SemanticError(f"{what}: reducing pointers is not supported")
            if list(x.shape) != list(xs[0].shape):
                raise SemanticError(f"reduce: the tiles must have one shape, got "
                                    f"{list(xs[0].shape)} (input #0) and {list(x.shape)} "
                                    f"(input #{i})")
        axes = self._reduce_axes(xs[0], axis, "reduce")
        if not isinstance(combine_fn, KernelFunction):
            raise SemanticError(f"reduce: combine_fn must be a @kiln.jit function, "
                                f"got {type(combine_fn).__name__}")
        if self.call_jit is None:  # pragma: no cover - set by the code generator
            raise SemanticError("reduce can only be called in a kernel")
        if len(axes) > 1:
            # One reduction of the row-major elements, as sum(x) over all axes.
            xs, axes = [self.reshape(x, [x.numel]) for x in xs], [0]
        elems = [x.dtype for x in xs]

        def region(args: Any) -> Any:
            return self._inline_combine("reduce", combine_fn, args, elems)

        shape = list(xs[0].shape)
        del shape[axes[0]]
        handles = self.builder.reduce_combine([x.handle for x in xs], axes[0], region)
        outs = tuple(tensor(h, block_type(e, shape) if shape else e)
                     for h, e in zip(handles, elems))
        return outs[0] if single else outs

    # ------------------------------------------------------------------
    # Scans
    # ------------------------------------------------------------------
    def _scan_axis(self, x: tensor, axis: Any, what: str) -> int:
        if isinstance(axis, tensor):
            raise SemanticError(f"{what}: the axis must be a constexpr")
        if not x.type.is_block():
            raise SemanticError(f"{what} needs a tile, got a scalar {x.dtype}")
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise SemanticError(f"{what}: the axis must be an int, got {axis!r}")
        rank = len(x.shape)
        a = axis + rank if axis < 0 else axis
        if not 0 <= a < rank:
            raise SemanticError(f"{what}: axis {axis} is out of range for a tile of rank {rank}")
        return a

    def scan(self, x: Any, axis: Any, kind: str) -> tensor:
        """Inclusive ``cumsum``/``cumprod`` along ``axis``. Sums promote as ``reduce``'s:
        narrower floats accumulate (and return) f32, narrower ints i32 (u32 if unsigned);
        products keep the type."""
        what = f"cum{kind}"
        x = self.to_tensor(x)
        if x.dtype.is_ptr():
            raise SemanticError(f"{what} of pointers is not supported")
        a = self._scan_axis(x, axis, what)
        if kind == "sum":
            x = self._sum_accumulator(x)
        if x.dtype.is_fp8():
            raise SemanticError(f"{what} of {x.dtype} is not supported (convert it first)")
        op = {"sum": "add", "prod": "mul"}[kind] + ("f" if x.dtype.is_floating() else "i")
        return tensor(self.builder.scan(x.handle, a, op), x.type)

    def associative_scan(self, x: Any, axis: Any, combine_fn: Any) -> tensor:
        """Inclusive scan along ``axis`` with ``combine_fn(earlier, later)``, a
        ``@kiln.jit`` function of two scalars of the tile's dtype returning one."""
        x = self.to_tensor(x)
        if x.dtype.is_ptr():
            raise SemanticError("associative_scan of pointers is not supported")
        a = self._scan_axis(x, axis, "associative_scan")
        if not isinstance(combine_fn, KernelFunction):
            raise SemanticError(f"associative_scan: combine_fn must be a @kiln.jit function, "
                                f"got {type(combine_fn).__name__}")
        if self.call_jit is None:  # pragma: no cover - set by the code generator
            raise SemanticError("associative_scan can only be called in a kernel")
        def region(lhs: Any, rhs: Any) -> Any:
            return self._inline_combine("associative_scan", combine_fn, [lhs, rhs],
                                        [x.dtype])[0]

        return tensor(self.builder.scan(x.handle, a, region), x.type)

    # ------------------------------------------------------------------
    # Program structure, ranges and memory
    # ------------------------------------------------------------------
    @staticmethod
    def _axis(axis: Any, what: str = "program") -> int:
        if isinstance(axis, tensor):
            raise SemanticError(f"the {what} axis must be a constexpr 0, 1 or 2")
        if not isinstance(axis, int) or isinstance(axis, bool) or axis not in (0, 1, 2):
            raise SemanticError(f"the {what} axis must be 0, 1 or 2, got {axis!r}")
        return axis

    def program_id(self, axis: Any) -> tensor:
        return tensor(self.builder.program_id(self._axis(axis)), kl.int32)

    def num_programs(self, axis: Any) -> tensor:
        return tensor(self.builder.num_programs(self._axis(axis)), kl.int32)

    def arange(self, start: Any, end: Any) -> tensor:
        vals = []
        for what, v in (("start", start), ("end", end)):
            if isinstance(v, tensor):
                raise SemanticError(f"arange {what} must be a constexpr (a compile-time int), "
                                    f"got a runtime value")
            v = v.value if isinstance(v, constexpr) else v
            if not isinstance(v, int) or isinstance(v, bool):
                raise SemanticError(f"arange {what} must be an int, got {v!r}")
            if not _I32_MIN <= v <= _I32_MAX:
                raise SemanticError(f"arange {what} {v} does not fit in int32")
            vals.append(v)
        s, e = vals
        n = e - s
        if not _is_pow2(n):
            raise SemanticError(f"arange size (end - start = {e} - {s} = {n}) must be a "
                                f"positive power of two")
        return tensor(self.builder.make_range(s, e), block_type(kl.int32, (n,)))

    def full(self, shape: List[int], value: Any, ty: Any) -> tensor:
        if isinstance(ty, str):
            ty = kl.dtype_from_str(ty)
        if not isinstance(ty, dtype) or ty.is_ptr():
            raise SemanticError(f"full/zeros expects a scalar dtype, got {ty!r}")
        for s in shape:
            if not _is_pow2(s):
                raise SemanticError(f"tile dimensions must be powers of two, got {list(shape)}")
        v = self.cast(self.to_tensor(value, ty if self.is_literal(value) else None), ty)
        if v.type.is_block():
            raise SemanticError("full expects a scalar value")
        return self.broadcast_to(v, shape)

    def _mask(self, mask: Any) -> tensor:
        m = self.to_tensor(mask)
        if not m.dtype.is_bool():
            raise SemanticError(f"mask must be a boolean (int1) value, got {m.dtype}")
        return m

    def _pointer(self, what: str, ptr: Any) -> tensor:
        if not isinstance(ptr, tensor) or not ptr.dtype.is_ptr():
            got = ptr.dtype if isinstance(ptr, tensor) else type(
                ptr.value if isinstance(ptr, constexpr) else ptr).__name__
            raise SemanticError(f"{what} expects a pointer (or a tile of pointers), got {got}")
        return ptr

    def _ordering(self, what: str, sem: Any, scope: Any, allowed: Tuple[str, ...],
                  elem: dtype) -> Tuple[str, str]:
        """("", "") for a plain access, else the checked (sem, scope) of an ordered one."""
        if sem is None and scope is None:
            return "", ""
        if sem not in allowed:
            raise SemanticError(f"{what}: sem must be one of {', '.join(allowed)}, got {sem!r}")
        if scope not in self._SCOPES:
            raise SemanticError(f"{what}: an ordered access needs scope= one of "
                                f"{', '.join(self._SCOPES)}, got {scope!r}")
        if elem.primitive_bitwidth not in (16, 32, 64):
            raise SemanticError(f"{what}: ordered accesses move 16-, 32- or 64-bit elements, "
                                f"got {elem.name}")
        return sem, scope

    # Triton's spellings: cache operators with their dot, eviction priorities
    # without; "" (or None) is no hint.
    _LOAD_CACHE_MODIFIERS = ("", ".ca", ".cg", ".cv")
    _STORE_CACHE_MODIFIERS = ("", ".wb", ".cg", ".cs", ".wt")
    _EVICTION_POLICIES = ("", "evict_normal", "evict_first", "evict_last")

    def _cache_hints(self, what: str, cache_modifier: Any, eviction_policy: Any,
                     allowed: Tuple[str, ...], sem: str) -> Tuple[str, str]:
        """The checked hints as the builder names them ("cg", "evict_first"; "" for none)."""
        cache = "" if cache_modifier is None else cache_modifier
        evict = "" if eviction_policy is None else eviction_policy
        if not isinstance(cache, str) or cache not in allowed:
            raise SemanticError(f"{what}: cache_modifier must be one of "
                                f"{', '.join(repr(c) for c in allowed)}, got {cache!r}")
        if not isinstance(evict, str) or evict not in self._EVICTION_POLICIES:
            raise SemanticError(f"{what}: eviction_policy must be one of "
                                f"{', '.join(repr(e) for e in self._EVICTION_POLICIES)}, "
                                f"got {evict!r}")
        if sem and (cache or evict):
            hint = f"cache_modifier={cache!r}" if cache else f"eviction_policy={evict!r}"
            raise SemanticError(f"{what}: {hint} cannot be combined with sem={sem!r} "
                                f"(cache hints apply to plain accesses, not ordered ones)")
        return cache.lstrip("."), evict

    def fence(self, sem: Any, scope: Any) -> None:
        if sem not in ("acquire", "release", "acq_rel"):
            raise SemanticError(f"fence: sem must be acquire, release or acq_rel, got {sem!r}")
        if scope not in self._SCOPES:
            raise SemanticError(f"fence: scope must be one of {', '.join(self._SCOPES)}, "
                                f"got {scope!r}")
        self.builder.fence(sem, scope)

    _PROXY_SPACES = ("global", "shared_cta", "all")

    def fence_proxy_async(self, space: Any) -> None:
        if space not in self._PROXY_SPACES:
            raise SemanticError(f"fence_proxy_async: space must be one of "
                                f"{', '.join(self._PROXY_SPACES)}, got {space!r}")
        self.builder.fence_proxy_async(space)

    def load(self, ptr: Any, mask: Any = None, other: Any = None, sem: Any = None,
             scope: Any = None, cache_modifier: Any = "", eviction_policy: Any = "") -> tensor:
        ptr = self._pointer("load", ptr)
        elem = ptr.dtype.element_ty
        m = None if mask is None or (isinstance(mask, constexpr) and mask.value is None) \
            else self._mask(mask)
        o = None if other is None or (isinstance(other, constexpr) and other.value is None) \
            else other
        if o is not None and m is None:
            raise SemanticError("load: 'other' needs a 'mask'")
        if m is not None:
            ptr, m = self.broadcast_pair(ptr, m)
        if o is not None:
            o = self.broadcast_to(self.cast(self.to_tensor(o, elem if self.is_literal(o)
                                                           else None), elem), ptr.shape)
        sem, scope = self._ordering("load", sem, scope, ("relaxed", "acquire"), elem)
        cache, evict = self._cache_hints("load", cache_modifier, eviction_policy,
                                         self._LOAD_CACHE_MODIFIERS, sem)
        handle = self.builder.load(ptr.handle, m.handle if m is not None else None,
                                   o.handle if o is not None else None, sem, scope, cache, evict)
        return tensor(handle, self._with_shape(ptr, elem))

    #: The byte alignment kiln.distributed gives every symmetric workspace base.
    PEER_BASE_ALIGNMENT = 16

    def peer_pointer(self, peer_table: Any, rank: Any, elem: Any) -> tensor:
        """``peer_table[rank]`` (an int64 address) as a scalar pointer to ``elem``."""
        table = self._pointer("peer_pointer", peer_table)
        if table.type.is_block() or table.dtype.element_ty not in (kl.int64, kl.uint64):
            raise SemanticError(f"peer_pointer: the peer table must be a scalar pointer to "
                                f"int64 addresses, got {table.type}")
        if isinstance(elem, str):
            elem = kl.dtype_from_str(elem)
        if not isinstance(elem, dtype) or elem.is_ptr():
            raise SemanticError(f"peer_pointer: expected the element dtype, got {elem!r}")
        rank = self.to_tensor(rank)
        if rank.type.is_block() or not rank.dtype.is_int() or rank.dtype.is_bool():
            raise SemanticError(f"peer_pointer: the rank must be a scalar integer, got "
                                f"{rank.type}")
        address = self.cast(self.load(self.binary("add", table, rank)), kl.int64, bitcast=True)
        ptr_ty = kl.pointer_type(elem)
        return tensor(self.builder.int_to_ptr(address.handle, self.ir_type(ptr_ty),
                                              self.PEER_BASE_ALIGNMENT), ptr_ty)

    def poll_nonzero(self, ptr: Any, mask: Any, scope: Any, timeout_ns: Any) -> tensor:
        """A relaxed load of each element, repeated until it is non-zero (or the timeout)."""
        ptr = self._pointer("poll_nonzero", ptr)
        if isinstance(timeout_ns, tensor) or isinstance(timeout_ns, bool) or \
                not isinstance(timeout_ns, int) or timeout_ns <= 0:
            raise SemanticError(f"poll_nonzero: timeout_ns must be a positive constexpr int, "
                                f"got {timeout_ns!r}")
        elem = ptr.dtype.element_ty
        _, scope = self._ordering("poll_nonzero", "relaxed", scope, ("relaxed",), elem)
        m = None if mask is None or (isinstance(mask, constexpr) and mask.value is None) \
            else self._mask(mask)
        if m is not None:
            ptr, m = self.broadcast_pair(ptr, m)
        handle = self.builder.load(ptr.handle, m.handle if m is not None else None, None,
                                   "relaxed", scope, "", "", poll_ns=timeout_ns)
        return tensor(handle, self._with_shape(ptr, elem))

    #: The word a Lamport producer stores for a zero word: bf16 (-0.0, +0.0).
    NONZERO_MARKER = 0x8000

    def nonzero_marker(self, x: Any) -> tensor:
        """``x`` (32-bit integer words) with zero words replaced by ``NONZERO_MARKER``."""
        x = self.to_tensor(x)
        if x.dtype not in (kl.int32, kl.uint32):
            raise SemanticError(f"nonzero_marker: expected 32-bit integer words (bf16 pairs "
                                f"viewed as int32), got {x.type}")
        return self.where(self.binary("eq", x, 0), self.NONZERO_MARKER, x)

    def store(self, ptr: Any, value: Any, mask: Any = None, sem: Any = None,
              scope: Any = None, cache_modifier: Any = "", eviction_policy: Any = "") -> None:
        ptr = self._pointer("store", ptr)
        elem = ptr.dtype.element_ty
        sem, scope = self._ordering("store", sem, scope, ("relaxed", "release"), elem)
        cache, evict = self._cache_hints("store", cache_modifier, eviction_policy,
                                         self._STORE_CACHE_MODIFIERS, sem)
        v = self.cast(self.to_tensor(value, elem if self.is_literal(value) else None), elem)
        m = None if mask is None or (isinstance(mask, constexpr) and mask.value is None) \
            else self._mask(mask)
        shape = self.broadcast_shapes(ptr.shape, v.shape)
        if m is not None:
            shape = self.broadcast_shapes(shape, m.shape)
            m = self.broadcast_to(m, shape)
        ptr, v = self.broadcast_to(ptr, shape), self.broadcast_to(v, shape)
        self.builder.store(ptr.handle, v.handle, m.handle if m is not None else None, sem,
                           scope, cache, evict)

    # -- occupancy ------------------------------------------------------------
    def min_programs_per_sm(self, programs: Any) -> None:
        """Compile so that ``programs`` programs fit on an SM (``.minnctapersm``)."""
        if isinstance(programs, tensor):
            raise SemanticError("min_programs_per_sm: the count must be a constexpr (a "
                                "compile-time int), got a runtime value")
        n = _value(programs)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 32:
            raise SemanticError(f"min_programs_per_sm: the count must be an int in [1, 32], "
                                f"got {n!r}")
        self.builder.set_min_programs_per_sm(n)

    # -- bulk copies (cp.async.bulk) -----------------------------------------
    #: Bytes one mbarrier phase counts (the tx-count is below 2^20).
    _BULK_MAX_BYTES = 1 << 20

    def bulk_load(self, ptr: Any, size: Any, count: Any = None) -> tensor:
        """The ``size`` elements from the scalar pointer ``ptr`` as a 1-D tile, copied by
        ``cp.async.bulk``: ``size`` a constexpr power of two spanning a multiple of 16
        bytes; ``ptr`` must be 16-byte aligned, which the compiler proves from the
        specialization (or reports). With ``count`` (an int in [0, size] or a runtime
        integer scalar) only the first ``count`` elements are copied and the rest read as
        zero; ``count`` elements must span whole 16-byte units (checked here for an int,
        proved by the compiler from the specialization for a runtime value)."""
        if not isinstance(ptr, tensor) or not ptr.dtype.is_ptr():
            got = ptr.dtype if isinstance(ptr, tensor) else type(_value(ptr)).__name__
            raise SemanticError(f"bulk_load expects a scalar pointer, got {got}")
        if ptr.type.is_block():
            raise SemanticError(f"bulk_load copies a contiguous range from one scalar pointer, "
                                f"got a tile of pointers {ptr.type} (use kl.load to gather)")
        if isinstance(size, tensor):
            raise SemanticError("bulk_load: the size must be a constexpr (a compile-time int), "
                                "got a runtime value")
        n = _value(size)
        if not isinstance(n, int) or isinstance(n, bool):
            raise SemanticError(f"bulk_load: the size must be an int, got {n!r}")
        if not _is_pow2(n):
            raise SemanticError(f"bulk_load: the size is a tile dimension and must be a "
                                f"positive power of two, got {n}")
        elem = ptr.dtype.element_ty
        if elem.is_bool():
            raise SemanticError("bulk_load of int1 is not supported (load the bytes as uint8 "
                                "and compare with 0)")
        nbytes = n * elem.itemsize
        if nbytes % 16:
            raise SemanticError(f"bulk_load: {n} x {elem.name} is {nbytes} bytes; "
                                f"cp.async.bulk copies a multiple of 16 bytes (at least "
                                f"{16 // elem.itemsize} {elem.name} elements)")
        if nbytes >= self._BULK_MAX_BYTES:
            raise SemanticError(f"bulk_load: {n} x {elem.name} is {nbytes} bytes; one bulk "
                                f"load moves fewer than {self._BULK_MAX_BYTES} (2^20) bytes")
        if count is None:
            return tensor(self.builder.bulk_load(ptr.handle, n), block_type(elem, (n,)))
        if self.is_literal(count):
            c = _value(count)
            if isinstance(c, bool) or not isinstance(c, int):
                raise SemanticError(f"bulk_load: the count must be an integer, got {c!r}")
            if not 0 <= c <= n:
                raise SemanticError(f"bulk_load: the count must be in [0, {n}] (the size), "
                                    f"got {c}")
            if (c * elem.itemsize) % 16:
                raise SemanticError(f"bulk_load: a count of {c} x {elem.name} is "
                                    f"{c * elem.itemsize} bytes; cp.async.bulk copies whole "
                                    f"16-byte units (a multiple of {16 // elem.itemsize} "
                                    f"{elem.name} elements)")
            count = self.to_tensor(c, kl.int32)
        if not isinstance(count, tensor):
            raise SemanticError(f"bulk_load: the count must be an integer, got "
                                f"{type(_value(count)).__name__}")
        count = self._int32_scalar(count, "bulk_load", "count")
        return tensor(self.builder.bulk_load(ptr.handle, n, count.handle),
                      block_type(elem, (n,)))

    # -- tensor descriptors (TMA) -------------------------------------------
    def _descriptor(self, what: str, desc: Any) -> tensor_descriptor_type:
        if not isinstance(desc, tensor) or not desc.type.is_tensordesc():
            got = desc.type if isinstance(desc, tensor) else type(desc).__name__
            raise SemanticError(f"{what} is a method of tensor descriptors (kernel parameters "
                                f"given a kiln.TensorDescriptor), not of {got}")
        return desc.type

    def _box_offsets(self, what: str, ty: tensor_descriptor_type, offsets: Any) -> List[Any]:
        offsets = offsets.value if isinstance(offsets, constexpr) else offsets
        if not isinstance(offsets, (list, tuple)):
            offsets = [offsets]
        rank = len(ty.block.shape)
        if len(offsets) != rank:
            raise SemanticError(f"{what}: the descriptor has rank {rank}, got {len(offsets)} "
                                f"offsets")
        handles = []
        for i, o in enumerate(offsets):
            t = self.to_tensor(o)
            if t.type.is_block() or not t.dtype.is_int():
                raise SemanticError(f"{what}: offset {i} must be a scalar integer, got {t.type}")
            handles.append(self.cast(t, kl.int32).handle)
        return handles

    def desc_load(self, desc: Any, offsets: Any) -> tensor:
        ty = self._descriptor("load", desc)
        idx = self._box_offsets("load", ty, offsets)
        return tensor(self.builder.desc_load(desc.handle, idx), ty.block)

    def desc_store(self, desc: Any, offsets: Any, value: Any) -> None:
        ty = self._descriptor("store", desc)
        idx = self._box_offsets("store", ty, offsets)
        elem = ty.block.element_ty
        v = self.cast(self.to_tensor(value, elem if self.is_literal(value) else None), elem)
        if v.shape != ty.block.shape:
            if v.type.is_block():
                raise SemanticError(f"store: the value's shape {list(v.shape)} is not the "
                                    f"descriptor's box {list(ty.block.shape)}")
            v = self.broadcast_to(v, ty.block.shape)
        self.builder.desc_store(desc.handle, idx, v.handle)

    def static_assert(self, cond: Any, msg: Any) -> None:
        if isinstance(cond, tensor):
            raise SemanticError("static_assert needs a constexpr condition")
        c = cond.value if isinstance(cond, constexpr) else cond
        m = msg.value if isinstance(msg, constexpr) else msg
        if not c:
            raise SemanticError(f"static_assert failed: {m}" if m else "static_assert failed")
