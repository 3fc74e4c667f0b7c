"""``NumpyBuilder``: the IR builder's interface (``kiln._C.Builder``), executed
eagerly on numpy arrays.

The interpreter runs a kernel through the same code generator and semantic
layer as the compiler; only the builder differs. Every builder call that would
create an op computes its value instead, so typing, promotion, broadcasting,
casts and every user-facing check are the compiler's own.

Values ("handles") are numpy arrays (0-d for scalars) whose dtype stands for
the IR type: ``intN`` for the signless ``iN`` (signed/unsigned behaviour comes
from the op, as in MLIR: ``divui`` views its operands as ``uintN``), ``bool``
for ``i1``, ``ml_dtypes.bfloat16``/``float8_*`` for those floats. Pointers are
``Ptr``: a flat element view of an argument's memory and int64 element offsets.

Adding an op to the language means adding one method here, named as in
``python/src/IRBuilder.cpp`` (``binary`` and ``unary`` dispatch on the op name
through ``_BINARY``/``_UNARY``).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from ..language.errors import SemanticError

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - pinned in requirements.txt
    ml_dtypes = None


class InterpreterError(SemanticError):
    """A fault the GPU would not report cleanly (an out-of-bounds access, a
    pointer into another tensor); reported like a compile error, at the kernel's
    source line (with the program id)."""


def _float_dtype(short: str) -> Any:
    if short in ("bf16", "f8e4m3", "f8e5m2"):
        if ml_dtypes is None:
            raise InterpreterError(f"the interpreter needs ml_dtypes for {short}")
        return {"bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn,
                "f8e5m2": ml_dtypes.float8_e5m2}[short]
    return {"f16": np.float16, "f32": np.float32, "f64": np.float64}[short]


_INT = {1: np.bool_, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def numpy_dtype(kiln_dtype: Any) -> Any:
    """numpy dtype holding values of a kiln scalar dtype (ints signed, as IR ints are
    signless; the unsigned types share the storage of their signed twins)."""
    if kiln_dtype.is_floating():
        return np.dtype(_float_dtype(kiln_dtype.short))
    return np.dtype(_INT[kiln_dtype.primitive_bitwidth])


class ClusterAborted(Exception):
    """Raised in the other programs of a cluster when one of them failed."""


class ClusterSync:
    """The programs of one thread-block cluster, run as threads: the cluster
    barrier (which, as ``barrier.cluster``, waits for the programs that have not
    exited) and the tiles that ``cluster_load`` publishes (each program's shared
    memory)."""

    def __init__(self, size: int):
        self._cond = threading.Condition()
        self._active = size
        self._arrived = 0
        self._generation = 0
        self._published: Dict[int, Tuple[int, np.ndarray]] = {}
        self.aborted = False

    def _release(self) -> None:
        self._arrived = 0
        self._generation += 1
        self._cond.notify_all()

    def barrier(self) -> None:
        with self._cond:
            if self.aborted:
                raise ClusterAborted()
            generation = self._generation
            self._arrived += 1
            if self._arrived >= self._active:
                self._release()
                return
            while generation == self._generation and not self.aborted:
                self._cond.wait()
            if self.aborted:
                raise ClusterAborted()

    def exit(self) -> None:
        """A program finished: later barriers no longer wait for it."""
        with self._cond:
            self._active -= 1
            if self._arrived and self._arrived >= self._active:
                self._release()

    def abort(self) -> None:
        with self._cond:
            self.aborted = True
            self._cond.notify_all()

    def exchange(self, rank: int, tile: np.ndarray, source: int) -> np.ndarray:
        """Publishes ``tile`` as program ``rank``'s; returns program ``source``'s."""
        return self._exchange("cluster_load", rank, tile, (source,))[0]

    def gather(self, rank: int, tile: np.ndarray, size: int) -> np.ndarray:
        """Publishes ``tile`` as program ``rank``'s; returns every program's, stacked in
        rank order (one publish, the same two barriers as ``exchange``)."""
        return np.stack(self._exchange("cluster_gather", rank, tile, tuple(range(size))))

    def _exchange(self, what: str, rank: int, tile: np.ndarray,
                  sources: Tuple[int, ...]) -> list:
        with self._cond:
            generation = self._generation
            self._published[rank] = (generation, np.array(tile, copy=True))
        self.barrier()
        with self._cond:
            got = [self._published.get(source) for source in sources]
        for source, g in zip(sources, got):
            if g is None or g[0] != generation:
                raise InterpreterError(f"{what}: the program of rank {source} in the cluster "
                                       f"did not publish a tile at this {what} (it exited or "
                                       f"is at another cluster barrier)")
            if g[1].shape != np.shape(tile) or g[1].dtype != np.asarray(tile).dtype:
                raise InterpreterError(f"{what}: the program of rank {source} published a "
                                       f"{g[1].dtype} tile of shape {list(g[1].shape)}, not "
                                       f"{np.asarray(tile).dtype} {list(np.shape(tile))}")
        self.barrier()
        return [g[1] for g in got]


class _IfOp:
    __slots__ = ("cond",)

    def __init__(self, cond: bool):
        self.cond = cond


class PtrType:
    def __init__(self, elem: Any):
        self.elem = elem


class Desc:
    """A tensor descriptor: ``ptr`` at the tensor's first element, its ``shape``
    and element ``strides`` (outermost first) and the ``box``."""

    __slots__ = ("ptr", "shape", "strides", "box")

    def __init__(self, ptr: "Ptr", shape: Sequence[int], strides: Sequence[int],
                 box: Sequence[int]):
        self.ptr, self.shape, self.strides, self.box = ptr, tuple(shape), tuple(strides), \
            tuple(box)

    def box_offsets(self, indices: Sequence[Any]) -> Tuple[np.ndarray, np.ndarray]:
        """(element offsets of the box, in-bounds mask), both of the box's shape."""
        grids = np.meshgrid(*[int(i) + np.arange(b) for i, b in zip(indices, self.box)],
                            indexing="ij")
        inside = np.ones(self.box, dtype=bool)
        off = np.zeros(self.box, dtype=np.int64)
        for g, n, s in zip(grids, self.shape, self.strides):
            inside &= (g >= 0) & (g < n)
            off += g.astype(np.int64) * s
        return np.where(inside, off, 0), inside


class Ptr:
    """A pointer (tile): ``buf`` is a 1-D view of one argument's memory in its
    element type; ``off`` the element offsets (int64, the tile's shape)."""

    __slots__ = ("buf", "off", "arg")

    def __init__(self, buf: np.ndarray, off: Any, arg: str):
        self.buf = buf
        self.off = np.asarray(off, dtype=np.int64)
        self.arg = arg

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.off.shape

    def with_off(self, off: Any) -> "Ptr":
        return Ptr(self.buf, off, self.arg)


def _unsigned(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x
    return x.view(_UINT[x.dtype.itemsize * 8])


def _signed_like(x: np.ndarray, like: np.dtype) -> np.ndarray:
    x = np.asarray(x)
    return x.view(like) if x.dtype != like and x.dtype.itemsize == like.itemsize else x


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    b = np.where(b == 0, 1, b)  # the GPU gives an unspecified value; do not trap
    r = np.fmod(a, b)
    return (a - r) // b


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


def _in_f32(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """Applies a ufunc to f32/f64 directly and to narrower floats through f32."""
    def apply(x: np.ndarray) -> np.ndarray:
        if x.dtype in (np.float32, np.float64):
            return fn(x)
        return fn(x.astype(np.float32)).astype(x.dtype)
    return apply


_UNARY: Dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "negf": np.negative,
    "exp": _in_f32(np.exp), "exp2": _in_f32(np.exp2), "log": _in_f32(np.log),
    "log2": _in_f32(np.log2), "tanh": _in_f32(np.tanh), "sqrt": _in_f32(np.sqrt),
    "rsqrt": _in_f32(lambda x: 1 / np.sqrt(x)), "sin": _in_f32(np.sin),
    "cos": _in_f32(np.cos), "absf": np.abs, "erf": _erf, "floor": _in_f32(np.floor),
    "ceil": _in_f32(np.ceil), "absi": np.abs,
}

_BINARY: Dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "addi": np.add, "subi": np.subtract, "muli": np.multiply,
    "divsi": _trunc_div,
    "divui": lambda a, b: _signed_like(_unsigned(a) // np.where(_unsigned(b) == 0, 1,
                                                                 _unsigned(b)), a.dtype),
    "floordivsi": lambda a, b: a // np.where(b == 0, 1, b),
    "ceildivsi": lambda a, b: -((-a) // np.where(b == 0, 1, b)),
    "ceildivui": lambda a, b: _signed_like(-((-_unsigned(a).astype(np.int64))
                                            // np.where(_unsigned(b) == 0, 1, _unsigned(b))),
                                           a.dtype),
    "remsi": lambda a, b: np.fmod(a, np.where(b == 0, 1, b)),
    "remui": lambda a, b: _signed_like(_unsigned(a) % np.where(_unsigned(b) == 0, 1,
                                                                _unsigned(b)), a.dtype),
    "andi": np.bitwise_and, "ori": np.bitwise_or, "xori": np.bitwise_xor,
    "shli": lambda a, b: np.left_shift(a, b.astype(a.dtype)),
    "shrsi": lambda a, b: np.right_shift(a, b.astype(a.dtype)),
    "shrui": lambda a, b: _signed_like(np.right_shift(_unsigned(a), _unsigned(b)), a.dtype),
    "minsi": np.minimum, "maxsi": np.maximum,
    "minui": lambda a, b: _signed_like(np.minimum(_unsigned(a), _unsigned(b)), a.dtype),
    "maxui": lambda a, b: _signed_like(np.maximum(_unsigned(a), _unsigned(b)), a.dtype),
    "addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
    "remf": np.fmod, "minimumf": np.minimum, "maximumf": np.maximum,
    "minnumf": np.fmin, "maxnumf": np.fmax, "powf": np.power, "atan2": np.arctan2,
}

_CMPI = {
    "eq": (np.equal, False), "ne": (np.not_equal, False),
    "slt": (np.less, False), "sle": (np.less_equal, False),
    "sgt": (np.greater, False), "sge": (np.greater_equal, False),
    "ult": (np.less, True), "ule": (np.less_equal, True),
    "ugt": (np.greater, True), "uge": (np.greater_equal, True),
}
_CMPF = {"oeq": np.equal, "une": np.not_equal, "olt": np.less, "ole": np.less_equal,
         "ogt": np.greater, "oge": np.greater_equal}


class NumpyBuilder:
    """Executes builder calls for one program instance at a time: set ``pid``
    and ``grid`` before running the kernel body."""

    #: Tells the code generator that ops run as they are built (so a runtime
    #: ``for`` loop must run its body once per iteration instead of once).
    eager = True

    def __init__(self) -> None:
        self.pid: Tuple[int, int, int] = (0, 0, 0)
        self.grid: Tuple[int, int, int] = (1, 1, 1)
        #: The thread-block cluster shape and, for clusters of more than one program,
        #: the cluster's ClusterSync.
        self.cluster: Tuple[int, int, int] = (1, 1, 1)
        self.cluster_sync: Optional[ClusterSync] = None
        self.fault = False  # set when an InterpreterError is raised
        #: Runtime `if`s being executed: [(IfOp, branch predicate)]. Both branches of
        #: a runtime `if` run (the code generator emits both); memory effects and
        #: faults happen only where the enclosing predicates hold, and `if_end`
        #: selects each merged value, as a GPU predicates a divergent branch.
        self._ifs: list = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"the CPU interpreter does not implement the builder op "
                                  f"'{name}' yet (add NumpyBuilder.{name} in "
                                  f"kiln/interpreter/builder.py)")

    # -- locations and structure (nothing to do) ----------------------------------------
    def set_loc(self, *args: Any) -> None:
        pass

    def set_unknown_loc(self) -> None:
        pass

    def ret(self) -> None:
        pass

    # -- types -------------------------------------------------------------------------
    def int_type(self, bits: int) -> np.dtype:
        return np.dtype(_INT[bits])

    def float_type(self, short: str) -> np.dtype:
        return np.dtype(_float_dtype(short))

    def ptr_type(self, elem: Any) -> PtrType:
        return PtrType(elem)

    def tensor_type(self, shape: Sequence[int], elem: Any) -> Any:
        return elem  # values carry their shapes

    def tensordesc_type(self, block: Any, swizzle: int) -> Any:
        return block

    # -- constants and program structure --------------------------------------------------
    def int_constant(self, ty: np.dtype, value: int) -> np.ndarray:
        if ty == np.bool_:
            return np.array(bool(value))
        return np.array(value, dtype=np.int64).astype(ty)

    def float_constant(self, ty: np.dtype, value: float) -> np.ndarray:
        return np.array(value, dtype=np.float64).astype(ty)

    def program_id(self, axis: int) -> np.ndarray:
        return np.array(self.pid[axis], dtype=np.int32)

    def num_programs(self, axis: int) -> np.ndarray:
        return np.array(self.grid[axis], dtype=np.int32)

    # -- thread-block clusters ---------------------------------------------------------
    def cluster_id(self, axis: int) -> np.ndarray:
        return np.array(self.pid[axis] // self.cluster[axis], dtype=np.int32)

    def num_clusters(self, axis: int) -> np.ndarray:
        return np.array(self.grid[axis] // self.cluster[axis], dtype=np.int32)

    def cluster_cta_id(self, axis: int) -> np.ndarray:
        return np.array(self.pid[axis] % self.cluster[axis], dtype=np.int32)

    def _cluster_rank(self) -> int:
        x, y, z = (p % c for p, c in zip(self.pid, self.cluster))
        cx, cy, _ = self.cluster
        return x + y * cx + z * cx * cy

    def cluster_cta_rank(self) -> np.ndarray:
        return np.array(self._cluster_rank(), dtype=np.int32)

    def cluster_size(self) -> np.ndarray:
        return np.array(math.prod(self.cluster), dtype=np.int32)

    def barrier(self) -> None:
        """Programs run one at a time, each as a whole tile: nothing to wait for."""

    def cluster_barrier(self) -> None:
        if self.active() and self.cluster_sync is not None:  # a branch not taken: no barrier
            self.cluster_sync.barrier()

    def cluster_load(self, x: Any, rank: Any) -> np.ndarray:
        if not self.active():
            return np.zeros_like(x)
        source, size = int(np.asarray(rank)), math.prod(self.cluster)
        if not 0 <= source < size:
            self.fault = True
            raise InterpreterError(f"cluster_load: rank {source} is outside the cluster of "
                                   f"{size} programs {self.cluster}")
        if self.cluster_sync is None:
            return np.array(x, copy=True)
        try:
            return self.cluster_sync.exchange(self._cluster_rank(), x, source)
        except InterpreterError:
            self.fault = True
            raise

    def cluster_gather(self, x: Any, size: int) -> np.ndarray:
        if not self.active():
            return np.zeros((size,) + np.shape(x), dtype=np.asarray(x).dtype)
        if self.cluster_sync is None:
            return np.array(x, copy=True)[None]
        try:
            return self.cluster_sync.gather(self._cluster_rank(), x, size)
        except InterpreterError:
            self.fault = True
            raise

    def cluster_sum(self, xs: Sequence[Any]) -> list:
        """Each tile of ``xs`` summed over the cluster's programs in rank order (the
        lowering's order: rank 0, + rank 1, ...; float adds round as on the GPU)."""
        size = math.prod(self.cluster)
        out = []
        for x in xs:
            g = self.cluster_gather(x, size)
            acc = np.array(g[0], copy=True)
            for r in range(1, size):
                with np.errstate(over="ignore"):
                    acc = acc + g[r]  # numpy wraps ints as the GPU does
            out.append(acc.astype(np.asarray(x).dtype, copy=False))
        return out

    def make_range(self, start: int, end: int) -> np.ndarray:
        return np.arange(start, end, dtype=np.int32)

    # -- shapes --------------------------------------------------------------------------
    def splat(self, x: Any, shape: Sequence[int]) -> Any:
        return self.broadcast(x, shape)

    def broadcast(self, x: Any, shape: Sequence[int]) -> Any:
        if isinstance(x, Ptr):
            return x.with_off(np.broadcast_to(x.off, tuple(shape)))
        return np.broadcast_to(x, tuple(shape))

    def expand_dims(self, x: Any, axis: int) -> Any:
        if isinstance(x, Ptr):
            return x.with_off(np.expand_dims(x.off, axis))
        return np.expand_dims(x, axis)

    def trans(self, x: Any, order: Sequence[int]) -> Any:
        if isinstance(x, Ptr):
            return x.with_off(np.transpose(x.off, tuple(order)))
        return np.transpose(x, tuple(order))

    def reshape(self, x: Any, shape: Sequence[int]) -> Any:
        if isinstance(x, Ptr):
            return x.with_off(np.reshape(x.off, tuple(shape)))
        return np.reshape(x, tuple(shape))

    def join(self, a: Any, b: Any) -> Any:
        if isinstance(a, Ptr):
            if a.buf is not b.buf:
                raise InterpreterError("join: the interpreter joins pointers into one tensor "
                                       "only")
            return a.with_off(np.stack([a.off, b.off], axis=-1))
        return np.stack([np.asarray(a), np.asarray(b)], axis=-1)

    def split(self, x: Any) -> Tuple[Any, Any]:
        if isinstance(x, Ptr):
            return x.with_off(x.off[..., 0]), x.with_off(x.off[..., 1])
        return x[..., 0], x[..., 1]

    # -- arithmetic ----------------------------------------------------------------------
    def binary(self, name: str, a: Any, b: Any, approx: bool = False) -> np.ndarray:
        return np.asarray(_BINARY[name](np.asarray(a), np.asarray(b))).astype(
            np.asarray(a).dtype, copy=False)

    def unary(self, name: str, x: Any, approx: bool = False) -> np.ndarray:
        x = np.asarray(x)
        return np.asarray(_UNARY[name](x)).astype(x.dtype, copy=False)

    def fma(self, a: Any, b: Any, c: Any) -> np.ndarray:
        a = np.asarray(a)
        wide = np.float64 if a.dtype != np.float64 else np.longdouble
        return (a.astype(wide) * np.asarray(b).astype(wide) + np.asarray(c).astype(wide)) \
            .astype(a.dtype)

    def dot(self, a: Any, b: Any, acc: Any,
            max_num_imprecise_acc: Any = None) -> np.ndarray:
        """``tile.dot``: the f16/bf16/FP8 inputs widened exactly to f32, products and
        sums in f32 (the tensor cores' order of additions differs). Every sum is
        already f32, so ``max_num_imprecise_acc`` changes nothing here."""
        f32 = np.float32
        return (np.asarray(acc, dtype=f32)
                + np.asarray(a).astype(f32) @ np.asarray(b).astype(f32)).astype(f32, copy=False)

    def cmpi(self, pred: str, a: Any, b: Any) -> np.ndarray:
        fn, unsigned = _CMPI[pred]
        a, b = np.asarray(a), np.asarray(b)
        if unsigned:
            a, b = _unsigned(a), _unsigned(b)
        return np.asarray(fn(a, b))

    def cmpf(self, pred: str, a: Any, b: Any) -> np.ndarray:
        return np.asarray(_CMPF[pred](np.asarray(a), np.asarray(b)))

    def select(self, c: Any, a: Any, b: Any) -> Any:
        if isinstance(a, Ptr) or isinstance(b, Ptr):
            cond = np.asarray(c)
            if a.buf is not b.buf and (cond.all() or not cond.any()):
                # one side everywhere (a scalar select, e.g. a bank row or the prefix row):
                # the pointer of that tensor, in the result's shape
                take = a if cond.all() else b
                shape = np.broadcast_shapes(cond.shape, a.off.shape, b.off.shape)
                return take.with_off(np.broadcast_to(take.off, shape).copy()
                                     if shape else take.off)
            if a.buf is not b.buf:
                self.fault = True
                raise InterpreterError(f"where() between pointers into different tensors "
                                       f"('{a.arg}' and '{b.arg}') is not supported by the "
                                       f"interpreter (unless the condition is the same "
                                       f"everywhere)")
            return a.with_off(np.where(c, a.off, b.off))
        return np.where(c, a, b)

    def cast(self, kind: str, x: Any, dst: np.dtype) -> np.ndarray:
        x = np.asarray(x)
        if kind == "truncf" and np.dtype(dst).itemsize == 1:
            # like the GPU's cvt.rn.satfinite: saturate to the finite range (NaN stays NaN)
            limit = float(ml_dtypes.finfo(dst).max)
            with np.errstate(invalid="ignore"):
                x = np.clip(x.astype(np.float32), -limit, limit)
            return x.astype(dst)
        if kind in ("extf", "truncf", "sitofp", "fptosi", "extsi", "trunci"):
            with np.errstate(invalid="ignore", over="ignore"):
                if kind == "fptosi" and dst != np.bool_:
                    return _float_to_int(x, dst, signed=True)
                return x.astype(dst)
        if kind == "uitofp":
            return _unsigned(x).astype(dst)
        if kind == "fptoui":
            return _float_to_int(x, dst, signed=False)
        if kind == "extui":
            return _unsigned(x).astype(_UINT.get(dst.itemsize * 8, dst)).view(dst) \
                if dst != np.bool_ else x.astype(dst)
        if kind == "bitcast":
            return x.view(dst)
        raise NotImplementedError(f"cast kind {kind!r}")

    # -- control flow ----------------------------------------------------------------------
    def active(self) -> bool:
        """Whether the current (runtime-`if`) path is taken."""
        return all(pred for _, pred in self._ifs)

    def if_begin(self, cond: Any) -> "_IfOp":
        op = _IfOp(bool(np.asarray(cond)))
        self._ifs.append((op, op.cond))
        return op

    def _branch(self, op: "_IfOp", pred: bool) -> None:
        for i, (o, _) in enumerate(self._ifs):
            if o is op:
                self._ifs[i] = (op, pred)
                return
        raise InterpreterError("internal error: unbalanced runtime `if`")

    def if_then(self, op: "_IfOp") -> None:
        self._branch(op, op.cond)

    def if_else(self, op: "_IfOp") -> None:
        self._branch(op, not op.cond)

    def if_end(self, op: "_IfOp", then_vals: Sequence[Any], else_vals: Sequence[Any]
               ) -> list:
        assert self._ifs and self._ifs[-1][0] is op, "unbalanced runtime `if`"
        self._ifs.pop()
        return [t if op.cond else e for t, e in zip(then_vals, else_vals)]

    def begin_scratch(self) -> None:  # only the compiler emits throw-away IR
        raise InterpreterError("internal error: scratch IR in eager mode")

    def for_begin(self, *args: Any) -> None:
        raise InterpreterError("internal error: the code generator must run runtime loops "
                               "itself when the builder is eager")

    # -- reductions ----------------------------------------------------------------------
    # -- atomics (programs and elements run one after another: plain updates) ----------
    def atomic_rmw(self, kind: str, sem: str, scope: str, p: Ptr, val: Any,
                   mask: Any = None) -> np.ndarray:
        val = np.broadcast_to(np.asarray(val), p.off.shape)
        on = np.ones(p.off.shape, bool) if mask is None else np.broadcast_to(
            np.asarray(mask), p.off.shape)
        if not self.active():
            on = np.zeros_like(on)
        self._check("atomic", p, None if mask is None else on)
        old = np.zeros(p.off.shape, p.buf.dtype)
        ops = {"add": np.add, "fadd": np.add, "max": np.maximum, "min": np.minimum,
               "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
        for idx in zip(*np.nonzero(on)) if p.off.ndim else ([()] if on else []):
            off = p.off[idx]
            old[idx] = p.buf[off]
            v = val[idx]
            if kind == "xchg":
                p.buf[off] = v
            elif kind in ("umax", "umin"):
                fn = np.maximum if kind == "umax" else np.minimum
                u = _unsigned(np.array([p.buf[off], v], p.buf.dtype))
                p.buf[off] = fn(u[0], u[1]).astype(u.dtype).view(p.buf.dtype)
            else:
                p.buf[off] = ops[kind](p.buf[off], v)
        return old

    def atomic_cas(self, sem: str, scope: str, p: Ptr, cmp: Any, val: Any) -> np.ndarray:
        cmp = np.broadcast_to(np.asarray(cmp), p.off.shape)
        val = np.broadcast_to(np.asarray(val), p.off.shape)
        old = np.zeros(p.off.shape, p.buf.dtype)
        if not self.active():
            return old
        self._check("atomic", p, None)
        for idx in np.ndindex(*p.off.shape):
            off = p.off[idx]
            old[idx] = p.buf[off]
            if p.buf[off] == cmp[idx]:
                p.buf[off] = val[idx]
        return old

    # Programs run one after another: there is no earlier grid to wait for.
    def pdl_wait(self) -> None:
        return None

    def pdl_launch_dependents(self) -> None:
        return None

    # An occupancy hint for ptxas: nothing to do on the CPU.
    def set_min_programs_per_sm(self, programs: int) -> None:
        return None

    def reduce(self, x: Any, axis: int, combine: str) -> np.ndarray:
        """``tile.reduce`` of ``x`` along ``axis`` with the binary op ``combine``."""
        x = np.asarray(x)
        if combine in ("maxui", "minui"):
            fn = np.maximum if combine == "maxui" else np.minimum
            return np.asarray(fn.reduce(_unsigned(x), axis=axis)).view(x.dtype) \
                if x.dtype != np.bool_ else np.asarray(fn.reduce(x, axis=axis))
        fn = _BINARY[combine]
        if not isinstance(fn, np.ufunc):
            raise NotImplementedError(f"reduce with {combine!r}")
        # numpy's order of additions follows the array's memory order (pairwise along a
        # contiguous axis, one element at a time along a strided one): the reduced axis is
        # made the contiguous one, so that a tile's sums do not depend on how numpy happened
        # to lay it out (a loaded tile and a computed one of the same values give the same bits)
        x = np.ascontiguousarray(np.moveaxis(x, axis, -1))
        return np.asarray(fn.reduce(x, axis=-1)).astype(x.dtype, copy=False)

    def reduce_combine(self, srcs: Sequence[Any], axis: int, combine: Any) -> list:
        """``tile.reduce`` of the N arrays ``srcs`` together along ``axis``: the callable
        ``combine([acc..., new...]) -> [combined...]`` applied sequentially down the axis,
        one slice of the other axes at a time (so the lowest index is the first partial)."""
        src = [np.moveaxis(np.asarray(x), axis, 0) for x in srcs]
        acc = [np.asarray(x[0]) for x in src]
        for i in range(1, src[0].shape[0]):
            out = combine(acc + [np.asarray(x[i]) for x in src])
            acc = [np.asarray(v).astype(a.dtype, copy=False) for v, a in zip(out, acc)]
        # The combined values of a constant (e.g. `return a, 0`) broadcast to the slice.
        return [np.array(np.broadcast_to(a, x.shape[1:])) for a, x in zip(acc, src)]

    def scan(self, x: Any, axis: int, combine: Any) -> np.ndarray:
        """``tile.scan`` of ``x`` along ``axis``: the binary op ``combine`` as a numpy
        ufunc's ``accumulate`` in the tile's dtype (``np.cumsum``/``np.cumprod`` without
        their promotion), or a callable ``(earlier, later) -> combined`` applied down the
        axis, one slice of the other axes at a time."""
        x = np.asarray(x)
        if isinstance(combine, str):
            fn = _BINARY[combine]
            if not isinstance(fn, np.ufunc):
                raise NotImplementedError(f"scan with {combine!r}")
            return np.asarray(fn.accumulate(x, axis=axis, dtype=x.dtype))
        out = np.empty_like(x)
        src, dst = np.moveaxis(x, axis, 0), np.moveaxis(out, axis, 0)
        acc = np.asarray(src[0])
        dst[0] = acc
        for i in range(1, src.shape[0]):
            acc = np.asarray(combine(acc, np.asarray(src[i])))
            dst[i] = acc
        return out

    # -- memory --------------------------------------------------------------------------
    def addptr(self, p: Ptr, off: Any) -> Ptr:
        return p.with_off(p.off + np.asarray(off).astype(np.int64))

    def _check(self, what: str, p: Ptr, mask: Optional[np.ndarray]) -> np.ndarray:
        off = p.off if mask is None else p.off[np.broadcast_to(mask, p.off.shape)]
        bad = (off < 0) | (off >= p.buf.shape[0])
        if np.any(bad):
            self.fault = True
            first = int(off[bad].flat[0])
            raise InterpreterError(f"out-of-bounds {what} through '{p.arg}': element offset "
                                   f"{first} outside [0, {p.buf.shape[0]})"
                                   + ("" if mask is None else " on an unmasked lane"))
        return off

    def bulk_load(self, p: Ptr, size: int, count: Any = None) -> np.ndarray:
        """``size`` consecutive elements from the scalar pointer ``p`` (cp.async.bulk), or
        only the first ``count`` with the rest zero. The compiler must prove the address
        16-byte aligned and the count a whole number of 16-byte units; here the actual
        values are checked, and every element copied must be in bounds (there is no
        mask)."""
        if not self.active():
            return np.zeros((size,), dtype=p.buf.dtype)
        n = size
        if count is not None:
            n = int(np.asarray(count))
            if not 0 <= n <= size:
                self.fault = True
                raise InterpreterError(f"bulk_load through '{p.arg}': the count {n} is outside "
                                       f"[0, {size}]")
            if (n * p.buf.dtype.itemsize) % 16:
                self.fault = True
                raise InterpreterError(f"bulk_load through '{p.arg}': a count of {n} elements "
                                       f"is {n * p.buf.dtype.itemsize} bytes, not a multiple "
                                       f"of 16")
        start = int(p.off)
        address = p.buf.ctypes.data + start * p.buf.dtype.itemsize
        if address % 16:
            self.fault = True
            raise InterpreterError(f"bulk_load through '{p.arg}': the address (element offset "
                                   f"{start}) is not 16-byte aligned")
        self._check("bulk_load", p.with_off(start + np.arange(n, dtype=np.int64)), None)
        out = np.zeros((size,), dtype=p.buf.dtype)
        out[:n] = p.buf[start:start + n]
        return out

    def desc_load(self, d: Desc, indices: Sequence[Any]) -> np.ndarray:
        """The box at ``indices``; elements outside the tensor read as zero (TMA)."""
        if not self.active():
            return np.zeros(d.box, dtype=d.ptr.buf.dtype)
        off, inside = d.box_offsets(indices)
        return self.load(d.ptr.with_off(off), inside)

    def desc_store(self, d: Desc, indices: Sequence[Any], value: Any) -> None:
        """Writes the box at ``indices``; elements outside the tensor are dropped."""
        off, inside = d.box_offsets(indices)
        self.store(d.ptr.with_off(off), value, inside)

    def fence(self, sem: str, scope: str) -> None:
        """Programs run one at a time: every access is already ordered."""

    def fence_proxy_async(self, space: str) -> None:
        """The interpreter has no async proxy: nothing to order."""

    def int_to_ptr(self, address: Any, ptr_type: Any, divisibility: int) -> None:
        raise InterpreterError("kl.peer_pointer: the interpreter runs one process and has no "
                               "peers (run kernels that reach other processes' memory on the "
                               "GPU)")

    def load(self, p: Ptr, mask: Any = None, other: Any = None, sem: str = "",
             scope: str = "", cache: str = "", evict: str = "", poll_ns: int = 0) -> np.ndarray:
        """Cache hints (``cache``, ``evict``) change no value: accepted and ignored. A poll
        (``poll_ns``) reads once: programs run one at a time, so nothing else could write
        the element while it waited, and a zero is the timeout's result."""
        if not self.active():  # a branch not taken: no access, no fault
            return np.zeros(p.off.shape, dtype=p.buf.dtype)
        if mask is None:
            self._check("load", p, None)
            return p.buf[p.off]
        mask = np.broadcast_to(np.asarray(mask), p.off.shape)
        self._check("load", p, mask)
        safe = np.where(mask, p.off, 0) if p.buf.shape[0] else p.off * 0
        if p.buf.shape[0]:
            vals = p.buf[safe]
        else:
            vals = np.zeros(p.off.shape, dtype=p.buf.dtype)
        fill = np.zeros((), dtype=p.buf.dtype) if other is None else np.asarray(other)
        return np.where(mask, vals, fill).astype(p.buf.dtype, copy=False)

    def store(self, p: Ptr, value: Any, mask: Any = None, sem: str = "",
              scope: str = "", cache: str = "", evict: str = "") -> None:
        """Cache hints are accepted and ignored, as for ``load``."""
        if not self.active():
            return
        value = np.broadcast_to(np.asarray(value), p.off.shape)
        if mask is None:
            self._check("store", p, None)
            p.buf[p.off] = value
            return
        mask = np.broadcast_to(np.asarray(mask), p.off.shape)
        self._check("store", p, mask)
        p.buf[p.off[mask]] = value[mask]


def _float_to_int(x: np.ndarray, dst: np.dtype, signed: bool) -> np.ndarray:
    """fptosi/fptoui: truncation toward zero, saturating like the GPU's cvt.rzi;
    NaN gives 0."""
    bits = dst.itemsize * 8
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    f = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
    f = np.clip(f, lo, hi)
    if signed:
        return f.astype(dst)
    return f.astype(_UINT[bits]).view(dst)
