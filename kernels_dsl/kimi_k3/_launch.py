"""Shared wrapper plumbing for the Kimi K3 kernels: argument checks that raise before any
launch, and one launch path that JIT-compiles with the kiln compiler when it is present and
JIT is allowed, and otherwise takes the precompiled kernel from the bundle named by
``KILN_BUNDLE``. ``KILN_NO_JIT=1`` forbids JIT (a serving deployment): every launch is then
the bundle's, compiler or not.

The bundle serves every input a wrapper accepts: a launch takes the most specialized of the
bundle's specializations of its kernel whose assumptions (alignment, divisibility) the
arguments meet, and where none does (or the bundle holds none with its constexprs: a shape
the fast path compiles in), the wrapper's ``generic`` launch, a kernel the bundle holds
without those assumptions (``<name>_generic``, docs/kernels/README.md)."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, Mapping, NamedTuple, Optional, Sequence

import kiln

INT32_MAX = 2**31 - 1

_bundle = None  # the kiln.runtime.Bundle of KILN_BUNDLE, opened at the first launch
_families: dict = {}  # (name, constexprs) -> its KernelFamily in _bundle
_compiled_together: set = set()  # the groups compile_together has compiled


def dtype_name(t: Any) -> str:
    """``bfloat16``, ``int32``, ... for torch tensors and CUDA-array-like objects."""
    return str(getattr(t, "dtype", "")).replace("torch.", "")


def check_dtype(op: str, what: str, t: Any, allowed: Sequence[str]) -> str:
    name = dtype_name(t)
    if name not in allowed:
        want = " or ".join(allowed)
        raise TypeError(f"{op}: {what} must be {want}, got {name or type(t).__name__}")
    return name


def shape(t: Any) -> tuple:
    return tuple(int(s) for s in t.shape)


def strides(t: Any) -> tuple:
    return tuple(int(s) for s in t.stride())


def check_shape(op: str, what: str, t: Any, expected: Sequence[Optional[int]]) -> tuple:
    """``expected``: one entry per dimension, None for any size."""
    got = shape(t)
    if len(got) != len(expected) or any(e is not None and e != g for e, g in zip(expected, got)):
        want = "[" + ", ".join("*" if e is None else str(e) for e in expected) + "]"
        raise ValueError(f"{op}: {what} must have shape {want}, got {list(got)}")
    return got


def check_inner_contiguous(op: str, what: str, t: Any) -> None:
    s = strides(t)
    if s and shape(t)[-1] > 1 and s[-1] != 1:
        raise ValueError(f"{op}: {what} must be contiguous along its last dimension "
                         f"(stride(-1) == 1), got strides {s}")


def check_contiguous(op: str, what: str, t: Any) -> None:
    expected, acc = [], 1
    for n in reversed(shape(t)):
        expected.append(acc)
        acc *= n
    expected.reverse()
    got = strides(t)
    if any(n > 1 and g != e for n, g, e in zip(shape(t), got, expected)):
        raise ValueError(f"{op}: {what} must be contiguous, got shape {list(shape(t))} and "
                         f"strides {got}")


def check_same_device(op: str, *named: Any) -> None:
    devices = {(w, str(t.device)) for w, t in named if hasattr(t, "device")}
    if len({d for _, d in devices}) > 1:
        desc = ", ".join(f"{w} on {d}" for w, d in sorted(devices))
        raise ValueError(f"{op}: tensors must be on one device, got {desc}")


def check_int32_extent(op: str, what: str, extent: int) -> None:
    if extent > INT32_MAX:
        raise ValueError(f"{op}: {what} = {extent} needs 64-bit indexing; these kernels index "
                         f"with 32-bit integers")


def _bundle_family(name: str, constexprs: Mapping[str, Any]) -> Any:
    """The bundle's specializations of kernel ``name`` with ``constexprs`` (a
    ``kiln.runtime.KernelFamily``, one per name and constexprs)."""
    global _bundle
    from kiln.runtime import Bundle, KernelFamily

    key = (name, tuple(sorted(constexprs.items())))
    family = _families.get(key)
    if family is None:
        if _bundle is None:
            path = os.environ.get("KILN_BUNDLE")
            if not path:
                raise RuntimeError(f"{name}: the kiln compiler is unavailable (or KILN_NO_JIT=1) "
                                   f"and KILN_BUNDLE does not name a bundle "
                                   f"(build/kimi_k3.kbundle)")
            _bundle = Bundle(path)
        family = _families[key] = KernelFamily(_bundle, name, constexprs)
    return family


_sm_counts: dict = {}


def num_sms(t: Any) -> Optional[int]:
    """The SM count of a torch CUDA tensor's device (cached), None for anything else."""
    dev = getattr(t, "device", None)
    if getattr(dev, "type", None) != "cuda":
        return None
    if dev.index not in _sm_counts:
        import torch

        _sm_counts[dev.index] = torch.cuda.get_device_properties(dev).multi_processor_count
    return _sm_counts[dev.index]


def jit_allowed() -> bool:
    """Whether launches JIT-compile: the compiler is importable and ``KILN_NO_JIT`` is not 1."""
    return os.environ.get("KILN_NO_JIT") != "1" and kiln.compiler.compiler_available()


class Launch(NamedTuple):
    """One launch of a wrapper, ``launch``'s arguments: the kernel, its name in the bundle, the
    grid, the runtime arguments, the constexprs, the warps, the register cap and the cluster
    shape (None: the kernel's)."""

    kernel: Any
    name: str
    grid: Sequence[int]
    args: Sequence[Any]
    constexprs: Mapping[str, Any]
    num_warps: int
    maxnreg: Optional[int] = None
    cluster: Optional[Sequence[int]] = None


_compile_only = threading.local()


@contextlib.contextmanager
def compile_only() -> Iterator[None]:
    """Within it, the wrappers check, compile (JIT) or load (bundle) their kernels and launch
    nothing. Collectives use it to keep a JIT compile out of a call that peers wait on: every
    rank runs the call once inside it, the ranks meet, then every rank calls it for real.

    The torch ops (``torch_ops``) called inside it run their wrappers in full, neither
    replaying a launch plan (it would launch) nor recording one (it would replay nothing):
    ``kiln.torch_library.no_plans``. A ``torch.compile``d function called inside it is
    compiled, and its op calls launch nothing."""
    before = getattr(_compile_only, "on", False)
    _compile_only.on = True
    try:
        with _no_plans():
            yield
    finally:
        _compile_only.on = before


def _no_plans() -> Any:
    """``kiln.torch_library.no_plans()`` where the planner is loaded (only then can an op have
    a plan), else nothing: it is not imported here, the kernels work without torch."""
    planner = sys.modules.get("kiln.torch_library")
    return planner.no_plans() if planner is not None else contextlib.nullcontext()


def launch(kernel: Any, name: str, grid: Sequence[int], args: Sequence[Any],
           constexprs: Mapping[str, Any], num_warps: int, maxnreg: Optional[int] = None,
           cluster: Optional[Sequence[int]] = None, generic: Optional[Launch] = None) -> None:
    """Launches ``kernel`` (JIT, with ``maxnreg`` and the ``cluster`` shape if given) or, where
    JIT is not allowed (``jit_allowed``), the bundle's kernel ``name`` with ``constexprs``
    (compiled with its shape): the most specialized of its specializations that fits the
    arguments, else ``generic`` (the same computation by a kernel without the fast path's
    assumptions, which the bundle holds for every input the wrapper accepts). A miss of both
    raises ``kiln.runtime.KilnError`` naming what the bundle holds."""
    if any(int(g) == 0 for g in grid):
        return
    warm = getattr(_compile_only, "on", False)
    if jit_allowed():
        run = functools.partial(kernel.warmup, tuple(grid)) if warm else kernel[tuple(grid)]
        run(*args, num_warps=num_warps, maxnreg=maxnreg, cluster=cluster, **constexprs)
        return
    family = _bundle_family(name, constexprs)
    k = family.find(args)
    if k is None and generic is not None:
        family, grid, args = (_bundle_family(generic.name, generic.constexprs), generic.grid,
                              generic.args)
        k = family.find(args)
    if k is None:
        k = family.select(args)  # raises: the bundle's specializations, and why none fits
    if warm:
        k.load()
        return
    k[tuple(grid)](*args)


def compile_together(launches: Sequence[Launch]) -> None:
    """By JIT, the compiles (or disk-cache loads) of ``launches`` side by side, a thread each
    (the compiler releases the GIL, so two cores compile two kernels at once), the first
    time a process meets the group (kernels, constexprs, warps): a wrapper of several
    kernels then waits for its slowest compile, not for their sum. Launches nothing; a
    compile error raises here as it would at the launch."""
    cold = [x for x in launches if all(int(g) for g in x.grid)]
    group = tuple((x.name, tuple(sorted(x.constexprs.items())), x.num_warps, x.maxnreg,
                   None if x.cluster is None else tuple(x.cluster)) for x in cold)
    if len(cold) < 2 or group in _compiled_together or not jit_allowed():
        return

    def warm(x: Launch) -> None:
        x.kernel.warmup(tuple(x.grid), *x.args, num_warps=x.num_warps, maxnreg=x.maxnreg,
                        cluster=x.cluster, **x.constexprs)

    with ThreadPoolExecutor(len(cold)) as pool:
        list(pool.map(warm, cold))
    _compiled_together.add(group)


def launch_all(launches: Sequence[Launch]) -> None:
    """``launch`` of each of ``launches`` in order, their kernels compiled together first
    (``compile_together``)."""
    compile_together(launches)
    for x in launches:
        launch(x.kernel, x.name, x.grid, x.args, x.constexprs, x.num_warps, maxnreg=x.maxnreg,
               cluster=x.cluster)


def empty(like: Any, shape: tuple, dtype: str) -> Any:
    """An uninitialized torch tensor of ``shape`` and ``dtype`` (torch's name) on like's
    device: a wrapper's output or workspace (torch imported here, not by the kernels)."""
    import torch

    return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)


def check_aligned(op: str, what: str, t: Any, align: int = 16) -> None:
    """The tensor's address is a multiple of ``align`` bytes (the kernels' vector accesses and
    the bundle's pointer specializations assume 16)."""
    ptr = int(t.data_ptr()) if hasattr(t, "data_ptr") else int(
        t.__cuda_array_interface__["data"][0])
    if ptr % align:
        raise ValueError(f"{op}: {what} must be {align}-byte aligned, got address {ptr:#x}")
