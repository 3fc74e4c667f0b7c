"""kiln.runtime: load kernel bundles and launch their kernels.

This layer needs only the runtime extension ``kiln._runtime`` (no compiler, no
torch); it is the middle floor beside ``kiln.compiler`` and never imports it.
Arguments are checked before anything reaches the GPU, by the rules of
``kiln.host``: ``marshal_args`` turns user arguments (torch tensors, objects with
``__cuda_array_interface__`` or DLPack, Python numbers) into the plain ints and
floats that ``_runtime.Kernel.launch`` takes, and raises TypeError/ValueError
naming the kernel, the parameter, what was expected and what was given.

A launch, ``kernel[grid](*args)``, first tries the direct path in C++
(``_runtime.Kernel.try_launch``: torch CUDA tensors, int addresses and Python numbers
packed without Python-side work); anything else, and every error, goes through
``marshal_args`` and ``_runtime.Kernel.launch``. The JIT's launches end in the same
two calls (``kiln.jit``).

Example::

    from kiln.runtime import Bundle
    bundle = Bundle("build/kimi_k3.kbundle")
    situ = bundle.kernel("situ_and_mul", BLOCK=1024)
    situ[(triton.cdiv(n, 1024),)](x, out, n)
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .. import _runtime
from ..host import is_torch_tensor, launch_grid, marshal_args, pointer_args, resolve_stream
from ..host import launch as _launch_rules

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
# Grid and stream
# ---------------------------------------------------------------------------

GridSpec = Union[int, Sequence[int], Callable[[Dict[str, Any]], Any]]


def resolve_grid(grid: GridSpec, meta: Mapping[str, Any], args: Sequence[Any] = ()
                 ) -> Tuple[int, int, int]:
    """A grid of 1-3 ints, or a callable taking a dict of the constexprs and the
    arguments by parameter name (Triton-style), as a 3-tuple checked by
    ``kiln.host.launch_grid`` (limits, and the kernel's cluster shape)."""
    if callable(grid):
        named = dict(meta.get("constexprs", {}))
        named.update({p["name"]: a for p, a in zip(meta.get("params", []), args)})
        grid = grid(named)
    cluster = tuple(meta.get("cluster", (1, 1, 1)))
    return launch_grid(grid, meta.get("name", "?"), cluster)  # type: ignore[arg-type]


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
        if _launch_rules.observer is not None or not k._try_launch(self._grid, args, stream):
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
        """The checked path: every argument through ``marshal_args``, the grid through
        ``resolve_grid``, then ``_runtime.Kernel.launch``."""
        values = marshal_args(self.meta, args)
        dims = resolve_grid(grid, self.meta, args)
        if 0 in dims:
            return
        if _launch_rules.observer is not None:
            _launch_rules.observer(self._kernel, dims, values, pointer_args(self.meta, args))
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
    if is_torch_tensor(a):
        return (a.dtype, _align_class(a.data_ptr()))
    return _UNCACHED  # unusual argument: choose anew each call


class _FamilyLauncher:
    __slots__ = ("_family", "_grid")

    def __init__(self, family: "KernelFamily", grid: GridSpec):
        self._family = family
        self._grid = grid

    def __call__(self, *args: Any, stream: Any = None, **constexprs: Any) -> None:
        k = self._family.select(args, constexprs)
        if _launch_rules.observer is not None or not k._try_launch(self._grid, args, stream):
            k.run(self._grid, *args, stream=stream)


class KernelFamily:
    """Every specialization of one kernel in a bundle; ``family[grid](*args, **constexprs)``
    picks the one that fits the arguments (pointer dtypes, 16-byte alignment, integer
    divisibility) and the constexprs given, the most specialized first.

    A missing specialization raises KilnError naming the kernel and the wanted
    specialization and listing those the bundle holds (``find`` returns None instead, for a
    caller with a fallback of its own). ``jit`` (optional) compiles a
    missing one: called as ``jit(args, constexprs)``, it returns a LaunchableKernel;
    ``KILN_NO_JIT=1`` disables it (fail fast)."""

    def __init__(self, bundle: "Bundle", name: str, constexprs: Optional[Mapping[str, Any]] = None,
                 jit: Optional[Callable[[Sequence[Any], Dict[str, Any]], LaunchableKernel]] = None):
        self._bundle = bundle
        self.name = name
        self._fixed = dict(constexprs or {})
        self._jit = jit
        self._chosen: Dict[Any, Optional[LaunchableKernel]] = {}

    def select(self, args: Sequence[Any], constexprs: Optional[Mapping[str, Any]] = None
               ) -> LaunchableKernel:
        """The specialization for these arguments and constexprs (cached by their types,
        alignments and the constexpr values)."""
        key = self._key(args, constexprs)
        k = self._chosen.get(key)
        if k is None:
            try:
                k = self._native_select(args, constexprs)
            except KilnError:
                if self._jit is None or os.environ.get("KILN_NO_JIT") == "1":
                    raise
                k = self._jit(args, dict(self._fixed, **(constexprs or {})))
            if _UNCACHED not in key[0]:
                self._chosen[key] = k
        return k

    def find(self, args: Sequence[Any], constexprs: Optional[Mapping[str, Any]] = None
             ) -> Optional[LaunchableKernel]:
        """``select``'s specialization, or None where none fits (never compiled; a miss is
        remembered like a fit, so a caller with a fallback pays the search once)."""
        key = self._key(args, constexprs)
        k = self._chosen.get(key, _UNCACHED)
        if k is _UNCACHED:
            try:
                k = self._native_select(args, constexprs)
            except KilnError:
                k = None
            if _UNCACHED not in key[0]:
                self._chosen[key] = k
        return k

    @staticmethod
    def _key(args: Sequence[Any], constexprs: Optional[Mapping[str, Any]]) -> Any:
        return (tuple(map(_arg_key, args)), tuple(constexprs.items()) if constexprs else ())

    def _native_select(self, args: Sequence[Any], constexprs: Optional[Mapping[str, Any]]
                       ) -> LaunchableKernel:
        want = dict(self._fixed)
        want.update(constexprs or {})
        return self._bundle._launchable(self._bundle._bundle.select(self.name, list(args),
                                                                    want or None))

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
