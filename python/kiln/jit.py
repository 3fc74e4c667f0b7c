"""``@kiln.jit``: kernels compiled on first launch, specialized like Triton.

    @kiln.jit(num_warps=4)
    def add(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
        ...

    add[(kl.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n, BLOCK=1024)
    add.compile({"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"}, {"BLOCK": 1024},
                divisibility={"x_ptr", "y_ptr"}, arch="sm_90a")   # no GPU needed

``@kiln.jit(cluster=(2, 1, 1))`` compiles and launches the kernel in thread-block
clusters of that shape (``.reqnctapercluster``; at most 16 programs, more than 8 with the
non-portable opt-in the runtime makes); a launch or
``compile`` may override it with ``cluster=``, like ``num_warps``. The grid must be
a multiple of the cluster shape along every axis.

``@kiln.jit(maxnreg=N)`` caps the registers a thread may use (PTX ``.maxnreg``): more
programs fit an SM, at the price of spills if the kernel needs more; a launch or
``compile`` may override it with ``maxnreg=``.

A launch specializes on: constexpr values, argument types (a tensor's dtype
for pointers; a Python int is i32 if it fits, else i64; a float is f32; a bool
i1), divisibility by 16 of integers and of pointer addresses, and integers
equal to 1 (the body sees a constant; the parameter stays in the ABI) -- except
for the parameters in ``do_not_specialize``. Compiled kernels are cached in
memory and on disk (``kiln.cache``: ``$KILN_CACHE_DIR``, default
``~/.cache/kiln``; ``KILN_CACHE=0`` disables it; safe across processes) under a
content hash of the source (with inlined callees and the globals it reads), the
specialization, the kernel name, the arch and the compiler version.

``KILN_INTERPRET=1`` (read when the decorator runs) or ``@kiln.jit(interpret=True)``
runs launches on the CPU with numpy instead (``kiln.interpreter``).

Every check on the arguments and the grid happens before any CUDA call.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import os
import sys
import threading
import types
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .compiler.code_generator import FunctionSource
from .compiler.compiler import (
    CompiledKernel,
    Specialization,
    build_metadata,
    compile_kernel,
    normalize_cluster,
    normalize_maxnreg,
)
from . import cache as _cache
from .language import core as lc

# ---------------------------------------------------------------------------
# Argument classification
# ---------------------------------------------------------------------------

_TORCH_DTYPES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}
_TYPESTR = {"b1": "i1", "i1": "i8", "i2": "i16", "i4": "i32", "i8": "i64", "u1": "u8",
            "u2": "u16", "u4": "u32", "u8": "u64", "f2": "f16", "f4": "f32", "f8": "f64"}


def _tensor_dtype(obj: Any) -> Optional[str]:
    """kiln dtype of a tensor-like object, or None if it is not one."""
    dt = getattr(obj, "dtype", None)
    if dt is not None and (hasattr(obj, "data_ptr") or hasattr(obj, "__cuda_array_interface__")):
        name = str(dt).replace("torch.", "")
        if name in _TORCH_DTYPES:
            return _TORCH_DTYPES[name]
    cai = None if hasattr(obj, "data_ptr") else getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        typestr = str(cai.get("typestr", ""))
        if typestr[1:] in _TYPESTR:
            return _TYPESTR[typestr[1:]]
        raise TypeError(f"cannot tell the element type of a CUDA array with typestr "
                        f"{typestr!r} (give it a .dtype such as bfloat16)")
    if hasattr(obj, "data_ptr") and dt is not None:
        raise TypeError(f"unsupported tensor dtype {dt}")
    return None


def _tensor_address(obj: Any) -> int:
    # data_ptr first: torch has no __cuda_array_interface__ typestr for fp8 (KeyError)
    if hasattr(obj, "data_ptr"):
        return int(obj.data_ptr())
    return int(obj.__cuda_array_interface__["data"][0])


def _arg_type(value: Any, what: str) -> Tuple[str, Optional[int]]:
    """(type string, value for divisibility) of a runtime argument."""
    if isinstance(value, bool):
        return "i1", None
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "i32", value
        if -(2**63) <= value < 2**63:
            return "i64", value
        if 0 <= value < 2**64:
            return "u64", value
        raise ValueError(f"{what}: integer {value} does not fit in 64 bits")
    if isinstance(value, float):
        return "f32", None
    from .tensor_descriptor import TensorDescriptor  # noqa: PLC0415

    if isinstance(value, TensorDescriptor):
        return value.signature, None
    dt = _tensor_dtype(value)
    if dt is not None:
        return "*" + dt, _tensor_address(value)
    raise TypeError(f"{what}: expected a tensor (torch or __cuda_array_interface__), an int, "
                    f"a float or a bool, got {type(value).__name__}")


_TORCH: Any = False


def _torch_module() -> Any:
    """torch if it is already imported (kiln never imports it for the user), else None."""
    global _TORCH
    if _TORCH is False or _TORCH is None:
        _TORCH = sys.modules.get("torch")
    return _TORCH


def _is_torch(obj: Any) -> bool:
    mod = type(obj).__module__ or ""
    return mod == "torch" or mod.startswith("torch.")


def _normalize_grid(grid: Any, name: str) -> Tuple[int, int, int]:
    if isinstance(grid, int) or hasattr(grid, "__index__"):
        grid = (grid,)
    try:
        dims = tuple(int(g.__index__()) for g in grid)
    except (TypeError, AttributeError):
        raise TypeError(f"kernel '{name}': grid must be 1 to 3 ints, got {grid!r}") from None
    if not 1 <= len(dims) <= 3:
        raise TypeError(f"kernel '{name}': grid must have 1 to 3 dimensions, got {len(dims)}")
    for i, d in enumerate(dims):
        if not 0 <= d < 2**31:
            raise ValueError(f"kernel '{name}': grid dimension {i} = {d} is out of range")
    return dims + (1,) * (3 - len(dims))  # type: ignore[return-value]


def _check_cluster_grid(name: str, dims: Tuple[int, int, int],
                        cluster: Tuple[int, int, int]) -> None:
    """The runtime's check, before anything is compiled or launched."""
    if any(d % c for d, c in zip(dims, cluster)):
        raise ValueError(f"kernel '{name}': grid {tuple(dims)} is not a multiple of the "
                         f"cluster shape {tuple(cluster)}")


# ---------------------------------------------------------------------------
# Disk cache (kiln.cache) and the source fingerprint
# ---------------------------------------------------------------------------


def cache_dir() -> Optional[str]:
    return _cache.cache_dir()


def _fingerprint(value: Any, seen: set) -> Optional[str]:
    """What a global value a kernel reads contributes to its hash (None: nothing)."""
    if isinstance(value, JITFunction):
        return None if id(value) in seen else "jit:" + value._compute_hash(seen)
    if value is None or isinstance(value, (bool, int, float, str, lc.dtype)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, lc.constexpr):
        return _fingerprint(value.value, seen)
    if isinstance(value, tuple):
        return "(" + ",".join(str(_fingerprint(v, seen)) for v in value) + ")"
    if isinstance(value, types.ModuleType):
        return "module:" + value.__name__
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    return f"{getattr(value, '__module__', '')}.{name}"


def _attribute_chain(node: ast.AST) -> Optional[List[str]]:
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


# ---------------------------------------------------------------------------
# JITFunction
# ---------------------------------------------------------------------------


class JITFunction:
    """A kernel: launch with ``kernel[grid](*args, **constexprs)``, compile without a
    GPU with ``kernel.compile(...)``, call from other kernels to inline it."""

    def __init__(self, fn: Callable, num_warps: int = 4,
                 do_not_specialize: Iterable[Union[str, int]] = (),
                 interpret: Optional[bool] = None, cluster: Any = None,
                 fp_fusion: bool = False, maxnreg: Optional[int] = None):
        if num_warps < 1 or num_warps > 32 or num_warps & (num_warps - 1):
            raise ValueError(f"num_warps must be a power of two in [1, 32], got {num_warps}")
        self.fn = fn
        self.num_warps = num_warps
        #: Thread-block cluster shape of every launch (a launch may override it).
        self.cluster = normalize_cluster(cluster, f"kernel '{fn.__name__}': cluster")
        if not isinstance(fp_fusion, bool):
            raise TypeError(f"kernel '{fn.__name__}': fp_fusion must be a bool, got "
                            f"{fp_fusion!r}")
        #: Float add/sub/mul may contract into fma (one rounding instead of two), as
        #: Triton's default; off by default here, so that results are reproducible
        #: operation by operation (bit-exact references stay bit-exact).
        self.fp_fusion = fp_fusion
        #: The register cap of every compile (``.maxnreg``; None: ptxas decides).
        self.maxnreg = normalize_maxnreg(maxnreg, f"kernel '{fn.__name__}': maxnreg")
        if interpret is None:
            interpret = os.environ.get("KILN_INTERPRET", "0") not in ("", "0")
        #: Launches run on the CPU with numpy (kiln.interpreter).
        self.interpret = bool(interpret)
        self._source: Optional[FunctionSource] = None
        self._source_hash: Optional[str] = None
        self._dns_raw = list(do_not_specialize)
        self._kernels: Dict[Tuple[str, str], Any] = {}
        self._signature: Optional[inspect.Signature] = None
        self._previews: Dict[str, Dict[str, Any]] = {}
        self._runtime_names: Optional[List[str]] = None
        self._dns_names: set = set()
        self._fast: Dict[Any, Tuple[Any, Tuple[int, ...], Tuple[int, ...]]] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    # -- source ---------------------------------------------------------------
    @property
    def source(self) -> FunctionSource:
        if self._source is None:
            self._source = FunctionSource(self.fn)
        return self._source

    @property
    def do_not_specialize(self) -> set:
        names = self.source.param_names
        out = set()
        for d in self._dns_raw:
            if isinstance(d, int):
                out.add(names[d])
            elif d in names:
                out.add(d)
            else:
                raise ValueError(f"do_not_specialize names '{d}', which is not a parameter of "
                                 f"{self.__name__}")
        return out

    @property
    def source_hash(self) -> str:
        """Hash of this function's source, of the @kiln.jit functions it calls
        and of the simple global values it reads."""
        if self._source_hash is None:
            self._source_hash = self._compute_hash(set())
        return self._source_hash

    def _compute_hash(self, seen: set) -> str:
        """Source text, plus every global the body reads: names and module
        attribute chains (``cfg.BLOCK``, ``helpers.fn``) resolve to simple values
        (numbers, strings, dtypes, tuples), ``@kiln.jit`` callees (hashed
        recursively) or the qualified names of builtins and modules."""
        seen.add(id(self))
        src = self.source
        h = hashlib.sha256(src.src.encode())
        params = set(src.param_names)
        env = dict(src.globals)
        env.update(src.closure)
        chains = set()
        for node in ast.walk(src.tree):
            if isinstance(node, (ast.Name, ast.Attribute)):
                chain = _attribute_chain(node)
                if chain and chain[0] not in params and chain[0] in env:
                    chains.add(tuple(chain))
        for chain in sorted(chains):
            value: Any = env[chain[0]]
            for attr in chain[1:]:
                if not isinstance(value, types.ModuleType):
                    break
                value = getattr(value, attr, None)
            fp = _fingerprint(value, seen)
            if fp is not None:
                h.update(f"{'.'.join(chain)}={fp}\0".encode())
        return h.hexdigest()

    # -- compile ---------------------------------------------------------------
    def compile(self, signature: Mapping[str, str], constexprs: Optional[Mapping[str, Any]] = None,
                divisibility: Union[Mapping[str, int], Iterable[str], None] = None,
                num_warps: Optional[int] = None, arch: Optional[str] = None,
                upto: str = "cubin", name: Optional[str] = None,
                equal_to_1: Iterable[str] = (), cache: bool = False,
                cluster: Any = None, maxnreg: Optional[int] = None) -> CompiledKernel:
        """Compiles one specialization without a GPU.

        ``signature``: runtime parameter -> type (``"*bf16"``, ``"i32"``);
        ``divisibility``: names (meaning 16) or {name: power of two};
        ``equal_to_1``: integer parameters specialized to the value 1;
        ``upto``: last stage (``tile``, ``llvm_dialect``, ``llvm_ir``, ``ptx``, ``cubin``);
        ``arch``: needed past the tile stage; ``name``: the kernel's name in
        metadata (and its symbol), default the function's name;
        ``cache``: go through the on-disk cache (``upto="cubin"`` only): the
        result then holds the metadata and the cubin, and ``cubin_tool`` is
        ``"cache"`` when it was read from the cache;
        ``cluster``: thread-block cluster shape (default: the decorator's);
        ``maxnreg``: register cap (default: the decorator's).
        """
        spec = Specialization.make(signature, divisibility, constexprs,
                                   num_warps or self.num_warps, equal_to_1=equal_to_1,
                                   cluster=self._cluster(cluster), fp_fusion=self.fp_fusion,
                                   maxnreg=self._maxnreg(maxnreg))
        if cache:
            if upto != "cubin" or not arch:
                raise ValueError("compile(cache=True) needs upto='cubin' and an arch")
            return self._binary(spec, arch, name)
        return compile_kernel(self.source, self.source_hash, spec, arch, name=name, upto=upto)

    def cache_key(self, spec: Specialization, arch: str, name: Optional[str] = None) -> str:
        """The on-disk cache key of one specialization (see kiln.cache)."""
        return _cache.kernel_key(self.source_hash, spec.key(), arch, name or self.__name__,
                                 _cache.compiler_fingerprint())

    def _binary(self, spec: Specialization, arch: str, name: Optional[str] = None
                ) -> CompiledKernel:
        """Metadata and cubin of ``spec`` for ``arch``, from the disk cache or
        compiled (once across processes) and published to it."""
        name = name or self.__name__
        built: List[CompiledKernel] = []

        def build() -> Tuple[Dict[str, Any], bytes]:
            ck = compile_kernel(self.source, self.source_hash, spec, arch, name=name,
                                upto="cubin")
            built.append(ck)
            return ck.meta, ck.cubin

        store = _cache.Cache.default()
        if store is None:
            return build() and built[0]
        entry = store.get_or_build(self.cache_key(spec, arch, name), arch, build, what=name)
        if built:
            return built[0]
        return CompiledKernel(name, entry.meta.get("symbol", name), arch, spec, entry.meta,
                              cubin=entry.cubin, cubin_tool="cache")

    # -- launch ----------------------------------------------------------------
    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return functools.partial(self.run, grid)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"kernel '{self.__name__}' is launched with {self.__name__}[grid](...) "
                        f"(and can be called directly only from another @kiln.jit function)")

    def _cluster(self, cluster: Any) -> Tuple[int, int, int]:
        """The cluster shape of a launch or compile: ``cluster`` if given, else the
        decorator's."""
        if cluster is None:
            return self.cluster
        return normalize_cluster(cluster, f"kernel '{self.__name__}': cluster")

    def _maxnreg(self, maxnreg: Optional[int]) -> Optional[int]:
        """The register cap of a launch or compile: ``maxnreg`` if given, else the
        decorator's."""
        if maxnreg is None:
            return self.maxnreg
        return normalize_maxnreg(maxnreg, f"kernel '{self.__name__}': maxnreg")

    def specialize(self, args: Sequence[Any], kwargs: Mapping[str, Any],
                   num_warps: Optional[int] = None, cluster: Any = None,
                   maxnreg: Optional[int] = None
                   ) -> Tuple[Specialization, List[Any], Dict[str, Any]]:
        """(specialization, runtime args in parameter order, all args by name)."""
        src = self.source
        if self._signature is None:
            self._signature = inspect.Signature(src.params)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"kernel '{self.__name__}': {e}") from None
        bound.apply_defaults()
        dns = self.do_not_specialize
        signature: Dict[str, str] = {}
        div: Dict[str, int] = {}
        constexprs: Dict[str, Any] = {}
        ones: List[str] = []
        runtime: List[Any] = []
        for p in src.params:
            if p.name not in bound.arguments:
                continue
            value = bound.arguments[p.name]
            what = f"kernel '{self.__name__}': argument '{p.name}'"
            if p.name in src.constexpr_params:
                if isinstance(value, lc.constexpr):
                    value = value.value
                if not isinstance(value, (bool, int, float, str, type(None), lc.dtype)):
                    raise TypeError(f"{what} is a constexpr and must be a bool, int, float, "
                                    f"str, None or dtype, got {type(value).__name__}")
                constexprs[p.name] = value
                continue
            ty, divisible = _arg_type(value, what)
            signature[p.name] = ty
            if divisible is not None and p.name not in dns:
                if divisible % 16 == 0:
                    div[p.name] = 16
                elif divisible == 1 and not ty.startswith("*"):
                    ones.append(p.name)
            runtime.append(value)
        spec = Specialization.make(signature, div, constexprs, num_warps or self.num_warps,
                                   equal_to_1=ones, cluster=self._cluster(cluster),
                                   fp_fusion=self.fp_fusion, maxnreg=self._maxnreg(maxnreg))
        return spec, runtime, dict(bound.arguments)

    def _fast_key(self, args: Sequence[Any], kwargs: Mapping[str, Any],
                  num_warps: Optional[int], cluster: Optional[Tuple[int, int, int]] = None,
                  maxnreg: Optional[int] = None) -> Optional[tuple]:
        """A cheap key that determines the specialization, for launches whose runtime
        arguments are all positional torch CUDA tensors, ints, floats or bools and
        whose constexprs are keywords; None when the full path must run. Everything
        the full path checks (dtype, alignment, i32 range, device) is in the key."""
        names = self._runtime_names
        if names is None or len(args) != len(names):
            return None
        torch = _torch_module()
        key: List[Any] = [num_warps, cluster or self.cluster, maxnreg, len(args)]
        device = None
        for name, a in zip(names, args):
            t = type(a)
            if t is int:
                key.append(("i", None if name in self._dns_names else
                            (a % 16 == 0, a == 1), -(2**31) <= a < 2**31))
            elif t is float:
                key.append("f")
            elif t is bool:
                key.append("b")
            elif torch is not None and isinstance(a, torch.Tensor):
                device = a.device
                key.append((a.dtype, device, None if name in self._dns_names
                            else a.data_ptr() % 16 == 0))
            else:
                return None
        try:
            constexprs = tuple(sorted(kwargs.items()))
            hash(constexprs)
        except TypeError:
            return None
        if device is not None:
            key.append(torch.cuda.current_device())
        return (tuple(key), constexprs)

    def run(self, grid: Any, *args: Any, stream: Any = None, num_warps: Optional[int] = None,
            cluster: Any = None, maxnreg: Optional[int] = None, **kwargs: Any) -> None:
        if self.interpret:
            from . import interpreter  # noqa: PLC0415

            return interpreter.run(self, grid, args, kwargs, cluster=cluster)
        cluster = self._cluster(cluster)
        maxnreg = self._maxnreg(maxnreg)
        # Fast path: a launch like an earlier one (same types, alignment, constexprs).
        fast_key = (self._fast_key(args, kwargs, num_warps, cluster, maxnreg)
                    if self._runtime_names else None)
        entry = self._fast.get(fast_key) if fast_key is not None else None
        if entry is not None and isinstance(grid, tuple) and not callable(grid):
            kernel, tensor_slots, bool_slots = entry
            values = list(args)
            for i in tensor_slots:
                values[i] = args[i].data_ptr()
            for i in bool_slots:
                values[i] = int(args[i])
            dims = _normalize_grid(grid, self.__name__)
            if 0 in dims:
                return
            if cluster != (1, 1, 1):
                _check_cluster_grid(self.__name__, dims, cluster)
            if stream is None:
                stream = (_torch_module()._C._cuda_getCurrentRawStream(
                    args[tensor_slots[0]].device.index) if tensor_slots else 0)
            elif not isinstance(stream, int):
                from . import runtime as rt  # noqa: PLC0415

                stream = rt.resolve_stream(stream, args)
            kernel.launch(dims, values, stream)
            return

        from . import runtime as rt  # noqa: PLC0415 - needs kiln._runtime

        if self._runtime_names is None:
            src = self.source
            self._runtime_names = [p.name for p in src.params
                                   if p.name not in src.constexpr_params]
            self._dns_names = self.do_not_specialize
            fast_key = self._fast_key(args, kwargs, num_warps, cluster, maxnreg)
        spec, runtime_args, named = self.specialize(args, kwargs, num_warps, cluster, maxnreg)
        # Checks first: nothing below touches CUDA until they all passed.
        preview = self._previews.get(spec.key())
        if preview is None:
            preview = build_metadata(self.__name__, self.__name__, self.source,
                                     self.source_hash, spec, spec.num_warps * 32)
            self._previews[spec.key()] = preview
        values = rt.marshal_args(preview, runtime_args)
        if callable(grid):
            grid = grid(named)
        dims = _normalize_grid(grid, self.__name__)
        if 0 in dims:
            return
        _check_cluster_grid(self.__name__, dims, spec.cluster)
        arch = rt.device_arch()
        kernel = self._kernel_for(spec, arch)
        kernel.launch(dims, values, rt.resolve_stream(stream, runtime_args))
        if fast_key is not None and len(runtime_args) == len(args):
            torch = _torch_module()
            slots = tuple(i for i, a in enumerate(args)
                          if torch is not None and isinstance(a, torch.Tensor))
            bools = tuple(i for i, a in enumerate(args) if type(a) is bool)
            self._fast[fast_key] = (kernel, slots, bools)

    def _kernel_for(self, spec: Specialization, arch: str) -> Any:
        from . import _runtime  # noqa: PLC0415

        mkey = (spec.key(), arch)
        kernel = self._kernels.get(mkey)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self._kernels.get(mkey)
            if kernel is not None:
                return kernel
            ck = self._binary(spec, arch)
            meta, cubin = ck.meta, ck.cubin
            kernel = _runtime.Kernel.from_images(meta, {arch: cubin})
            self._kernels[mkey] = kernel
            return kernel

    def __repr__(self) -> str:
        return f"<kiln.jit {self.__module__}.{self.__qualname__}>"


def jit(fn: Optional[Callable] = None, *, num_warps: int = 4,
        do_not_specialize: Iterable[Union[str, int]] = (),
        interpret: Optional[bool] = None, cluster: Any = None,
        fp_fusion: bool = False, maxnreg: Optional[int] = None) -> Any:
    """Decorator: ``@kiln.jit`` or ``@kiln.jit(num_warps=8, do_not_specialize=["n"])``;
    ``interpret=True`` runs launches on the CPU (default: ``KILN_INTERPRET=1``);
    ``cluster=(x, y, z)`` launches thread-block clusters of that shape (at most 8
    programs; default no clusters); ``fp_fusion=True`` lets float multiplies and
    adds contract into fma (``x * y + z`` and the products summed by ``kl.sum(x * y)``
    round once; default off: every operation rounds, as written); ``maxnreg=N`` caps the
    registers a thread may use (``.maxnreg``, 24 to 255; default: ptxas decides)."""

    def wrap(f: Callable) -> JITFunction:
        return JITFunction(f, num_warps=num_warps, do_not_specialize=do_not_specialize,
                           interpret=interpret, cluster=cluster, fp_fusion=fp_fusion,
                           maxnreg=maxnreg)

    if fn is not None:
        return wrap(fn)
    return wrap
