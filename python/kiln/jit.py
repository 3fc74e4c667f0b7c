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
for pointers; a Python int is i32 if it fits, else i64, else u64; a float is f32; a
bool i1), divisibility by 16 of integers and of pointer addresses, and integers
equal to 1 (the body sees a constant; the parameter stays in the ABI) -- except
for the parameters in ``do_not_specialize``. Compiled kernels are cached in
memory and on disk (``kiln.cache``: ``$KILN_CACHE_DIR``, default
``~/.cache/kiln``; ``KILN_CACHE=0`` disables it; safe across processes) under a
content hash of the source (with inlined callees and the globals it reads), the
specialization, the kernel name, the arch and the compiler version.

``KILN_INTERPRET=1`` (read when the decorator runs) or ``@kiln.jit(interpret=True)``
runs launches on the CPU with numpy instead (``kiln.interpreter``).

Every check on the arguments and the grid happens before any CUDA call, by the rules of
``kiln.host`` (the ones every launch path uses; docs/architecture.md).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import os
import threading
import types
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _runtime
from . import cache as _cache
from . import runtime as _rt
from .compiler.code_generator import FunctionSource
from .compiler.compiler import (
    CompiledKernel,
    Specialization,
    build_metadata,
    compile_kernel,
    split_n,
    wait_bound,
)
from .host import (
    arg_type,
    check_constexpr,
    launch_grid,
    marshal_args,
    normalize_cluster,
    normalize_maxnreg,
    normalize_num_warps,
    pointer_args,
    resolve_stream,
    specialization,
)
from .host import launch as _launch_rules
from .language import core as lc
from .language.core import KernelFunction

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


class JITFunction(KernelFunction):
    """A kernel: launch with ``kernel[grid](*args, **constexprs)``, compile without a
    GPU with ``kernel.compile(...)``, call from other kernels to inline it.

    A launch takes one of two paths, both ending in the runtime's calls:

    - the hot path: a launch like an earlier one (the same constexprs and launch options;
      runtime arguments positional, of the kinds ``_runtime.Dispatcher`` caches) goes
      straight to C++, which reads the arguments' specialization facts, finds the compiled
      kernel and launches it through the same packing as a bundle's
      ``LaunchableKernel[grid](...)`` (``Kernel.try_launch``);
    - the checked path (``_launch_checked``): every argument typed and checked by the rules
      of ``kiln.host`` before anything compiles or touches CUDA, then the kernel compiled
      (or read from the cache) and launched with ``_runtime.Kernel.launch``; a launch the
      hot path can take next time is cached for it.
    """

    def __init__(self, fn: Callable, num_warps: int = 4,
                 do_not_specialize: Iterable[Union[str, int]] = (),
                 interpret: Optional[bool] = None, cluster: Any = None,
                 fp_fusion: bool = False, maxnreg: Optional[int] = None):
        self.fn = fn
        self.num_warps = normalize_num_warps(num_warps)
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
        #: (specialization key, arch) -> the compiled kernel, ready to launch.
        self._kernels: Dict[Tuple[str, str], _rt.LaunchableKernel] = {}
        self._signature: Optional[inspect.Signature] = None
        self._previews: Dict[str, Dict[str, Any]] = {}
        #: The hot path's caches: (num_warps, cluster, maxnreg, *constexpr items) as given
        #: at the launch -> the C++ cache of the kernels compiled for them.
        self._dispatch: Dict[tuple, Any] = {}
        self._runtime_names: Optional[List[str]] = None
        self._dns_names: set = set()
        self._positional = False  # the runtime parameters come first (the hot path's case)
        self._defaults: Dict[str, Any] = {}
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

        ``signature``: runtime parameter -> type (``"*bf16"``, ``"i32"``), in any order: the
        kernel's parameter order is the ABI, and the metadata lists the parameters in it;
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
        order = {n: i for i, n in enumerate(self.source.param_names)}
        signature = dict(sorted(signature.items(), key=lambda kv: order.get(kv[0], len(order))))
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
        options: Dict[str, Any] = {}
        bound, split = wait_bound(), split_n()
        if bound:
            options["wait_bound"] = bound
        if split is not None:
            options["split_n"] = split
        return _cache.kernel_key(self.source_hash, spec.key(), arch, name or self.__name__,
                                 _cache.compiler_fingerprint(), options or None)

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
                constexprs[p.name] = check_constexpr(value, f"{what} is a constexpr and")
                continue
            ty, divisible = arg_type(value, what)
            signature[p.name] = ty
            if p.name not in dns:
                d, one = specialization(ty, divisible)
                if d > 1:
                    div[p.name] = d
                elif one:
                    ones.append(p.name)
            runtime.append(value)
        spec = Specialization.make(signature, div, constexprs, num_warps or self.num_warps,
                                   equal_to_1=ones, cluster=self._cluster(cluster),
                                   fp_fusion=self.fp_fusion, maxnreg=self._maxnreg(maxnreg))
        return spec, runtime, dict(bound.arguments)

    def _fast_key(self, args: Sequence[Any], kwargs: Mapping[str, Any],
                  num_warps: Optional[int], cluster: Any = None,
                  maxnreg: Optional[int] = None) -> Optional[tuple]:
        """The hot path's key of a launch: (the key of its ``_dispatch`` cache, the
        ``_runtime.Dispatcher`` key of the runtime arguments), or None when the hot path
        cannot take it. The arguments' part is computed in C++ by the rules of
        ``kiln.host.args`` (type by value, divisibility by 16, value 1, except for
        ``do_not_specialize``)."""
        names = self._runtime_names
        if names is None or len(args) != len(names):
            return None
        options = self._options_key(num_warps, cluster, maxnreg, kwargs)
        facts = _runtime.Dispatcher([n not in self._dns_names for n in names]).key(tuple(args))
        return None if options is None or facts is None else (options, facts)

    @staticmethod
    def _options_key(num_warps: Optional[int], cluster: Any, maxnreg: Optional[int],
                     kwargs: Mapping[str, Any]) -> Optional[tuple]:
        """The ``_dispatch`` key of a launch's options and constexprs (as given, a cluster
        list as a tuple), or None when one is unhashable."""
        if isinstance(cluster, list):
            cluster = tuple(cluster)
        key = (num_warps, cluster, maxnreg, *kwargs.items())
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def _named(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Dict[str, Any]:
        """Every argument by name (defaults included), for a callable grid: the hot path's
        launches bind the runtime parameters positionally, the constexprs by keyword."""
        named = dict(self._defaults)
        named.update(zip(self._runtime_names or (), args))
        named.update(kwargs)
        return named

    def run(self, grid: Any, *args: Any, stream: Any = None, num_warps: Optional[int] = None,
            cluster: Any = None, maxnreg: Optional[int] = None, **kwargs: Any) -> None:
        if self.interpret:
            from . import interpreter  # noqa: PLC0415 - numpy loads only to interpret

            return interpreter.run(self, grid, args, kwargs, cluster=cluster)
        # The hot path: a launch like an earlier one, straight to C++.
        try:
            dispatcher = self._dispatch.get((num_warps, cluster, maxnreg, *kwargs.items()))
        except TypeError:  # a cluster list, or an unhashable constexpr (the checked path)
            options = self._options_key(num_warps, cluster, maxnreg, kwargs)
            dispatcher = None if options is None else self._dispatch.get(options)
        if dispatcher is not None and _launch_rules.observer is None:
            if callable(grid):
                grid = grid(self._named(args, kwargs))
            if dispatcher.launch(grid, args, stream):
                return
        self._launch_checked(grid, args, kwargs, stream, num_warps, cluster, maxnreg)

    def warmup(self, grid: Any, *args: Any, stream: Any = None, num_warps: Optional[int] = None,
               cluster: Any = None, maxnreg: Optional[int] = None, **kwargs: Any) -> None:
        """Everything a launch with these arguments does but the launch: the checks, the
        compile (or the cache's copy) and the module load. For kernels whose launches must
        not be delayed by a compile, e.g. a collective whose peers wait on this process: warm
        every rank up, meet, then launch."""
        if self.interpret:
            return
        self._launch_checked(grid, args, kwargs, stream, num_warps, cluster, maxnreg,
                             launch=False)

    def _launch_checked(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                        stream: Any, num_warps: Optional[int], cluster: Any,
                        maxnreg: Optional[int], launch: bool = True) -> None:
        """Checks every argument by the host rules, then compiles (or finds) the kernel and
        launches it (unless ``launch`` is false); caches it for the hot path when the hot path
        can take such launches. Nothing here touches CUDA until every check has passed."""
        if self._runtime_names is None:
            src = self.source
            self._runtime_names = [p.name for p in src.params
                                   if p.name not in src.constexpr_params]
            self._dns_names = self.do_not_specialize
            self._positional = src.param_names[:len(self._runtime_names)] == self._runtime_names
            self._defaults = {p.name: p.default for p in src.params if p.default is not p.empty}
        spec, runtime_args, named = self.specialize(args, kwargs, num_warps, cluster, maxnreg)
        preview = self._previews.get(spec.key())
        if preview is None:
            preview = build_metadata(self.__name__, self.__name__, self.source,
                                     self.source_hash, spec, spec.num_warps * 32)
            self._previews[spec.key()] = preview
        values = marshal_args(preview, runtime_args)
        if callable(grid):
            grid = grid(named)
        dims = launch_grid(grid, self.__name__, spec.cluster)
        if 0 in dims:
            return
        stream = resolve_stream(stream, runtime_args)
        kernel = self._kernel_for(spec, _rt.device_arch())
        if not launch:
            return
        if self._positional and len(args) == len(self._runtime_names):
            options = self._options_key(num_warps, cluster, maxnreg, kwargs)
            if options is not None:
                dispatcher = self._dispatch.get(options)
                if dispatcher is None:
                    dispatcher = _runtime.Dispatcher([n not in self._dns_names
                                                      for n in self._runtime_names])
                    self._dispatch[options] = dispatcher
                dispatcher.add(args, kernel._kernel)
        if _launch_rules.observer is not None:
            _launch_rules.observer(kernel._kernel, dims, values,
                                   pointer_args(preview, runtime_args))
        kernel._kernel.launch(dims, values, stream)

    def _kernel_for(self, spec: Specialization, arch: str) -> _rt.LaunchableKernel:
        mkey = (spec.key(), arch)
        kernel = self._kernels.get(mkey)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self._kernels.get(mkey)
            if kernel is not None:
                return kernel
            ck = self._binary(spec, arch)
            kernel = _rt.LaunchableKernel.from_images(ck.meta, {arch: ck.cubin})
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
