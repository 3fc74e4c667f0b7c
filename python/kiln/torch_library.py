"""kiln-launched Python functions as torch operators, replayed from launch plans.

``op(namespace, name, fake, mutates_args)(fn)`` defines ``torch.ops.<namespace>.<name>``
with ``torch.library.Library`` (the schema inferred from ``fn``'s annotations, as
``torch.library.custom_op`` does), registers ``fn`` for CUDA and CPU tensors and ``fake``
as its fake (meta) implementation, so the op traces under ``torch.compile`` and is captured
by CUDA graphs.

Host time. ``fn`` is a kernel wrapper: it checks its arguments, allocates its outputs and
launches kiln kernels. A call of it costs tens of microseconds of Python; the op costs what
a torch operator costs, because a call does not run ``fn`` again when an earlier call had
the same *launch key*: the dtype, shape, strides, device and 16-byte alignment of every
tensor argument and the value of every other argument. Everything a wrapper decides (its
checks, its kernels, their grids and scalar arguments) is a function of that key (a wrapper
may look at addresses only through their alignment), so the
first call for a key runs ``fn`` under a recorder and keeps its *launch plan*: the outputs
it allocated (shape, strides, dtype), the scratch memory it allocated, and each launch
(the loaded kernel, grid, argument values, and for each pointer argument the tensor it
points into and the byte offset). A later call with the key allocates the outputs and
scratch again and launches the same kernels with the new addresses, on the current stream.

Where the package has ``kiln/_torch_ops.so`` (built when torch is found at build time), the
ops' CUDA kernel is C++: the launch key, the plan lookup, the allocations and the launches
(through the runtime's C API) run without Python, so a replayed call costs about what a torch
operator does. A key without a plan goes to the op's recording twin
``<namespace>_record::<name>``, whose CUDA kernel is the Python recorder; it installs the plan
it makes in the C++ kernel. Without the library (or with ``KILN_OP_PLANS=python``) the plan is
replayed by a Python function generated for it.

A call is recorded only when the wrapper's effect is entirely its kiln launches: while it
runs, a torch function mode refuses anything but allocation, views and metadata queries
(a wrapper that computes with torch, reads tensor values or launches through another path
is never planned: ``plans[qualname][key]`` is an ``Unplanned`` with the reason, and the call
runs in full every time). Planning is off in interpreter mode (CPU tensors) and with
``KILN_OP_PLANS=0``.

Warm-ups. Within ``no_plans()`` the ops run their wrappers in full, on this thread: no plan
is replayed and none is recorded. A wrapper that only compiles or loads its kernels there
(``kernels_dsl.kimi_k3``'s ``compile_only`` enters it) launches nothing, so a plan recorded
from it would replay nothing, and replaying an earlier plan would launch. ``torch.compile``
compiles a function called within it (the op calls of its compiled code run the wrappers).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import threading
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from . import _runtime
from .host import launch as _launch_rules

__all__ = ["Plan", "Unplanned", "cpp_plans", "no_plans", "op", "plans"]


# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------

#: What a planned wrapper may call while it is recorded: allocation, views, metadata.
_ALLOWED = frozenset(f for f in (
    torch.empty, torch.empty_strided, torch.empty_like,
    torch.Tensor.new_empty, torch.Tensor.new_empty_strided,
    torch.Tensor.view, torch.Tensor.reshape, torch.Tensor.flatten, torch.Tensor.t,
    torch.Tensor.transpose, torch.Tensor.permute, torch.Tensor.unsqueeze,
    torch.Tensor.squeeze, torch.Tensor.as_strided, torch.Tensor.__getitem__,
    torch.Tensor.expand, torch.Tensor.narrow, torch.Tensor.select, torch.Tensor.unflatten,
    torch.Tensor.size, torch.Tensor.stride, torch.Tensor.dim, torch.Tensor.numel,
    torch.Tensor.element_size, torch.Tensor.data_ptr, torch.Tensor.storage_offset,
    torch.Tensor.is_contiguous, torch.Tensor.untyped_storage, torch.Tensor.__len__,
    torch.Tensor.nelement, torch.Tensor.ndimension, torch.Tensor.__hash__,
    torch.Tensor.get_device, torch.Tensor.is_floating_point, torch.Tensor.is_complex,
    torch.Tensor.view_as, torch.Tensor.expand_as, torch.Tensor.split, torch.Tensor.chunk,
    torch.Tensor.unbind, torch.Tensor.movedim, torch.Tensor.swapaxes,
) if f is not None)
_ALLOWED_GETTERS = frozenset(("shape", "dtype", "device", "is_cuda", "ndim", "T", "mT",
                              "layout", "requires_grad", "data", "names", "itemsize",
                              "nbytes", "is_sparse", "is_quantized", "is_meta", "grad_fn"))


def _basic_index(index: Any) -> bool:
    """Indexing that makes a view (ints, slices, None, ...), not a gather."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in items)


class _Recorder(TorchFunctionMode):
    """Collects the launches of one wrapper call and notes anything it must not do."""

    def __init__(self) -> None:
        super().__init__()
        self.launches: List[Tuple[Any, Tuple[int, int, int], List[Any], List[Tuple[int, Any]]]] = []
        self.refused: Optional[str] = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__getitem__ and not _basic_index(args[1]):
            self.refused = self.refused or "Tensor.__getitem__ with a tensor index"
        elif func not in _ALLOWED:
            getter = getattr(func, "__name__", "")
            owner = getattr(func, "__self__", None)
            if not (getter == "__get__" and getattr(owner, "__name__", "") in _ALLOWED_GETTERS):
                self.refused = self.refused or getattr(func, "__qualname__", repr(func))
        return func(*args, **(kwargs or {}))


#: thread id -> the recorder of the call that thread is recording.
_recording: Dict[int, _Recorder] = {}
_recording_lock = threading.Lock()


def _observe(kernel: Any, grid: Tuple[int, int, int], values: Sequence[Any],
             pointers: Sequence[Tuple[int, Any]]) -> None:
    rec = _recording.get(threading.get_ident())
    if rec is not None:
        rec.launches.append((kernel, tuple(grid), list(values), list(pointers)))


class _Recording:
    """``with _Recording(rec):`` kiln launches of this thread go to ``rec``."""

    def __init__(self, rec: _Recorder) -> None:
        self.rec = rec

    def __enter__(self) -> None:
        with _recording_lock:
            self.outer = _recording.get(threading.get_ident())
            _recording[threading.get_ident()] = self.rec
            _launch_rules.observer = _observe
        self.rec.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.rec.__exit__(*exc)
        with _recording_lock:
            if self.outer is None:
                del _recording[threading.get_ident()]
            else:
                _recording[threading.get_ident()] = self.outer
            if not _recording:
                _launch_rules.observer = None


# ---------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------

_IN, _OUT, _SCRATCH = 0, 1, 2


class Unplanned:
    """A launch key whose calls run the wrapper in full, and why."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unplanned({self.reason!r})"


class Plan:
    """A wrapper call to replay: outputs to allocate, launches with their pointer slots.

    ``run(args)`` is a function written for this plan alone (its shapes, kernels and scalar
    values are constants of its code): the replay is the allocations, one ``data_ptr()``
    per pointer argument and the launches, with no loop or table lookup in between."""

    __slots__ = ("outputs", "single", "scratch", "launches", "device", "source", "run")

    def __init__(self, outputs, single, scratch, launches, device):
        self.outputs = outputs      # [(shape, stride, dtype)]
        self.single = single        # fn returned one tensor (not a tuple)
        self.scratch = scratch      # [nbytes]
        self.launches = launches    # [(kernel, grid, values, ((slot, kind, index, offset),))]
        self.device = device        # torch.device of the launches
        self.run = self._compile()

    def _compile(self) -> Callable[[Sequence[Any]], Any]:
        env: Dict[str, Any] = {"empty_strided": torch.empty_strided, "empty": torch.empty,
                               "u8": torch.uint8, "dev": self.device,
                               "stream": torch._C._cuda_getCurrentRawStream}
        lines = ["def run(args):"]
        for j, (shape, stride, dtype) in enumerate(self.outputs):
            env[f"d{j}"] = dtype
            lines.append(f"    o{j} = empty_strided({shape!r}, {stride!r}, dtype=d{j}, "
                         f"device=dev)")
        for j, nbytes in enumerate(self.scratch):
            lines.append(f"    s{j} = empty(({nbytes},), dtype=u8, device=dev)")
        lines.append(f"    st = stream({self.device.index})")
        names = {_IN: "args[{}]", _OUT: "o{}", _SCRATCH: "s{}"}
        for i, (kernel, grid, values, slots) in enumerate(self.launches):
            env[f"k{i}"] = kernel
            items = []
            for n, v in enumerate(values):
                if type(v) is int or (type(v) is float and v == v and abs(v) != float("inf")):
                    items.append(repr(v))
                else:                   # a NaN or infinite float: a constant by name
                    env[f"v{i}_{n}"] = v
                    items.append(f"v{i}_{n}")
            for slot, kind, index, offset in slots:
                ptr = names[kind].format(index) + ".data_ptr()"
                items[slot] = f"{ptr} + {offset}" if offset else ptr
            lines.append(f"    k{i}.launch({tuple(grid)!r}, [{', '.join(items)}], st)")
        outs = [f"o{j}" for j in range(len(self.outputs))]
        returned = outs[0] if self.single else "(" + ", ".join(outs) + ",)" if outs else None
        lines.append(f"    return {returned}")
        self.source = "\n".join(lines)
        exec(compile(self.source, "<kiln launch plan>", "exec"), env)  # noqa: S102
        return env["run"]


def _flat_outputs(result: Any) -> Optional[Tuple[List[Any], bool]]:
    if result is None:
        return [], False
    if isinstance(result, torch.Tensor):
        return [result], True
    if isinstance(result, tuple) and all(isinstance(r, torch.Tensor) for r in result):
        return list(result), False
    return None


def _extent(t: torch.Tensor) -> int:
    """Bytes from the tensor's first element to one past its last."""
    if t.numel() == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()


def _owner(t: torch.Tensor, ptr: int, sharing: List[Tuple[int, int, torch.Tensor]]
           ) -> Optional[Tuple[int, int, torch.Tensor]]:
    """Which of the argument/output tensors that share ``t``'s allocation ``ptr`` (an
    address inside ``t``) is relative to: ``t`` itself; else the one tensor that starts at
    ``ptr``; else the one tensor whose elements span ``ptr``. None where that is ambiguous:
    then the address's relation to the arguments is not fixed by the launch key."""
    if len(sharing) == 1:
        return sharing[0]
    for owner in sharing:
        if owner[2] is t:
            return owner
    for pick in (lambda o: o[2].data_ptr() == ptr,
                 lambda o: o[2].data_ptr() <= ptr < o[2].data_ptr() + _extent(o[2])):
        found = [o for o in sharing if pick(o)]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def _make_plan(args: Sequence[Any], result: Any, rec: _Recorder) -> Any:
    """The plan of a recorded call, or an ``Unplanned`` with the reason it cannot be
    replayed faithfully."""
    if rec.refused is not None:
        return Unplanned(f"the wrapper called {rec.refused}")
    flat = _flat_outputs(result)
    if flat is None:
        return Unplanned(f"the wrapper returned {type(result).__name__}, not tensors")
    outs, single = flat
    outputs = []
    bases = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor)}
    for o in outs:
        base, nbytes = o.untyped_storage().data_ptr(), o.untyped_storage().nbytes()
        # empty_strided allocates exactly the extent from offset 0: an output that views
        # a larger allocation (or another output's) is not replayable this way.
        if base and base in bases:     # (an empty tensor has no memory to share)
            return Unplanned("an output is (or views) an argument or another output")
        if o.storage_offset() != 0 or nbytes != _extent(o):
            return Unplanned("an output views a larger allocation")
        outputs.append((tuple(o.shape), tuple(o.stride()), o.dtype))
        bases.add(base)
    by_storage: Dict[int, List[Tuple[int, int, Any]]] = {}
    for kind, tensors in ((_IN, args), (_OUT, outs)):
        for i, a in enumerate(tensors):
            if isinstance(a, torch.Tensor):
                by_storage.setdefault(a.untyped_storage().data_ptr(), []).append((kind, i, a))
    scratch: List[int] = []
    device = None
    launches = []
    for kernel, grid, values, pointers in rec.launches:
        if any(isinstance(v, tuple) for v in values):  # a tensor map: its bytes hold the address
            return Unplanned("a launch takes a tensor descriptor")
        slots = []
        for slot, t in pointers:
            if not isinstance(t, torch.Tensor) or not t.is_cuda:
                return Unplanned(f"a pointer argument is a {type(t).__name__}")
            device = device or t.device
            if t.device != device:
                return Unplanned("the launches span devices")
            storage = t.untyped_storage()
            ptr = int(values[slot])
            sharing = by_storage.get(storage.data_ptr())
            if sharing is None:           # memory the wrapper allocated for itself
                scratch.append(storage.nbytes())
                slots.append((slot, _SCRATCH, len(scratch) - 1, ptr - storage.data_ptr()))
                by_storage[storage.data_ptr()] = [(_SCRATCH, len(scratch) - 1, None)]
                continue
            if sharing[0][0] == _SCRATCH:
                slots.append((slot, _SCRATCH, sharing[0][1], ptr - storage.data_ptr()))
                continue
            owner = _owner(t, ptr, sharing)
            if owner is None:
                return Unplanned("a pointer into memory that several arguments view")
            slots.append((slot, owner[0], owner[1], ptr - owner[2].data_ptr()))
        launches.append((kernel, grid, tuple(values), tuple(slots)))
    if device is None:
        tensors = [a for a in args if isinstance(a, torch.Tensor)] + outs
        if not tensors or not tensors[0].is_cuda:
            return Unplanned("no CUDA tensor")
        device = tensors[0].device
    return Plan(outputs, single, scratch, launches, device)


_Tensor = torch.Tensor
_current_device = torch._C._cuda_getDevice


def _launch_key(args: Sequence[Any]) -> Optional[tuple]:
    """What a wrapper's decisions depend on, or None (a tensor not on a CUDA device)."""
    key: List[Any] = [_current_device()]
    for a in args:
        if isinstance(a, _Tensor):
            d = a.get_device()
            if d < 0:
                return None
            key.append((a.dtype, a.shape, a.stride(), d, a.data_ptr() & 15))
        elif a.__class__ is list:
            key.append(tuple(a))
        else:
            key.append(a)
    return tuple(key)


#: qualified op name -> {launch key: Plan or Unplanned}
plans: Dict[str, Dict[tuple, Any]] = {}


def _enabled() -> bool:
    return os.environ.get("KILN_OP_PLANS", "1") != "0" and \
        os.environ.get("KILN_INTERPRET", "0") in ("", "0")


def _planned(qualname: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    table = plans.setdefault(qualname, {})
    enabled = _enabled()

    def impl(*args: Any, **kwargs: Any) -> Any:
        key = _launch_key(args) if enabled and not kwargs else None
        if key is None:
            return fn(*args, **kwargs)
        try:
            plan = table.get(key)
        except TypeError:           # an unhashable argument value
            return fn(*args)
        if plan is not None:
            if plan.__class__ is Plan:
                return plan.run(args)
            return fn(*args)
        rec = _Recorder()
        nested = threading.get_ident() in _recording
        with _Recording(rec):
            result = fn(*args)
        if not nested:
            table[key] = _make_plan(args, result, rec)
        return result

    impl.__name__ = getattr(fn, "__name__", "impl")
    impl.__doc__ = fn.__doc__
    return impl


# ---------------------------------------------------------------------------
# The C++ kernel (kiln/_torch_ops.so)
# ---------------------------------------------------------------------------

class _Native:
    """kiln/_torch_ops.so, the ops' CUDA kernel in C++: it computes the launch key and replays
    the plan installed for it; for a key without one it calls the op's recording twin
    (``<namespace>_record::<name>``), whose Python kernel records the wrapper's call and
    installs the plan (or ``None``: the key has none) under the key the C++ kernel computed."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        #: id(kernel) -> (kernel, its kiln_kernel* handle): plans hold the handles for good.
        self.handles: Dict[int, Tuple[Any, int]] = {}

    def check(self, status: int, what: str) -> None:
        if status < 0:
            raise RuntimeError(f"kiln: {what}: {self.lib.kiln_torch_last_error().decode()}")

    def register(self, qualname: str, recorder: str) -> None:
        self.check(self.lib.kiln_torch_register(qualname.encode(), recorder.encode()),
                   f"registering the C++ kernel of {qualname}")

    def num_plans(self, qualname: str) -> int:
        """How many launch keys of the op the C++ kernel replays."""
        n = self.lib.kiln_torch_plans(qualname.encode())
        self.check(n, f"counting the plans of {qualname}")
        return n

    def recording(self) -> bool:
        return bool(self.lib.kiln_torch_recording())

    def handle(self, kernel: Any) -> int:
        entry = self.handles.get(id(kernel))
        if entry is None:
            entry = self.handles[id(kernel)] = (kernel, kernel.c_handle())
        return entry[1]

    def plan_json(self, plan: Any) -> Optional[Dict[str, Any]]:
        """The plan as the C++ kernel reads it; None for an ``Unplanned`` or a plan with an
        argument the C API cannot pass (a tensor map)."""
        if plan.__class__ is not Plan:
            return None
        launches = []
        for kernel, grid, values, slots in plan.launches:
            args = kernel.c_args(values)
            if args is None:
                return None
            launches.append({"kernel": self.handle(kernel), "grid": list(grid), "args": args,
                             "pointers": [list(s) for s in slots]})
        return {"device": plan.device.index,
                "outputs": [{"sizes": list(shape), "strides": list(stride),
                             "dtype": str(dtype).replace("torch.", "")}
                            for shape, stride, dtype in plan.outputs],
                "scratch": list(plan.scratch), "launches": launches}

    def install(self, qualname: str, plan: Any) -> None:
        text = json.dumps({"op": qualname, "plan": self.plan_json(plan)})
        if self.lib.kiln_torch_install(text.encode()) < 0:   # the call's result stands
            warnings.warn(f"kiln: {qualname}: the launch plan was not installed "
                          f"({self.lib.kiln_torch_last_error().decode()}); the key records "
                          f"again on its next call", RuntimeWarning, stacklevel=2)


_native_lib: List[Optional[_Native]] = []


def _native() -> Optional[_Native]:
    """The loaded C++ kernel library, or None: planning off, ``KILN_OP_PLANS=python``, the
    library not built (torch was not found at build time) or built for another torch."""
    if _native_lib:
        return _native_lib[0]
    native = None
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_ops.so")
    if _enabled() and os.environ.get("KILN_OP_PLANS") != "python" and os.path.exists(path):
        try:
            lib = ctypes.PyDLL(path)
        except OSError as e:
            warnings.warn(f"kiln: the torch op library does not load ({e}); the ops replay "
                          f"their plans in Python", RuntimeWarning, stacklevel=3)
            lib = None
        if lib is not None:
            lib.kiln_torch_version.restype = ctypes.c_char_p
            lib.kiln_torch_last_error.restype = ctypes.c_char_p
            lib.kiln_torch_init.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3
            lib.kiln_torch_register.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
            lib.kiln_torch_install.argtypes = [ctypes.c_char_p]
            lib.kiln_torch_plans.argtypes = [ctypes.c_char_p]
            built = lib.kiln_torch_version().decode()
            if built != torch.__version__.split("+")[0]:
                warnings.warn(f"kiln: the torch op library was built for torch {built}, this "
                              f"is torch {torch.__version__}; the ops replay their plans in "
                              f"Python", RuntimeWarning, stacklevel=3)
            else:
                api = _runtime.c_api()
                native = _Native(lib)
                native.check(lib.kiln_torch_init(api["version"], api["kiln_kernel_launch"],
                                                 api["kiln_kernel_release"],
                                                 api["kiln_last_error"]),
                             "handing the runtime to the torch op library")
    _native_lib.append(native)
    return native


def cpp_plans(qualname: str) -> Optional[int]:
    """How many launch keys of op ``qualname`` ("ns::name") its C++ kernel replays; None
    where the ops replay in Python (no ``kiln/_torch_ops.so``, or ``KILN_OP_PLANS``)."""
    native = _native()
    return None if native is None else native.num_plans(qualname)


def _recorder_impl(qualname: str, fn: Callable[..., Any], native: _Native
                   ) -> Callable[..., Any]:
    """The CUDA kernel of an op's recording twin: the wrapper, recorded when the C++ kernel
    is waiting for a plan."""
    table = plans.setdefault(qualname, {})

    def impl(*args: Any, **kwargs: Any) -> Any:
        if not native.recording():
            return fn(*args, **kwargs)
        if kwargs:
            result = fn(*args, **kwargs)
            native.install(qualname, Unplanned("keyword arguments"))
            return result
        rec = _Recorder()
        nested = threading.get_ident() in _recording
        with _Recording(rec):
            result = fn(*args)
        if not nested:
            plan = _make_plan(args, result, rec)
            native.install(qualname, plan)
            key = _launch_key(args)
            if key is not None:
                try:
                    table[key] = plan
                except TypeError:       # an unhashable argument value
                    pass
        return result

    impl.__name__ = getattr(fn, "__name__", "impl")
    impl.__doc__ = fn.__doc__
    return impl


# ---------------------------------------------------------------------------
# Warm-ups: the wrappers in full
# ---------------------------------------------------------------------------

#: qualified op name -> the function ``op`` registered (the wrapper, never planned).
_wrappers: Dict[str, Callable[..., Any]] = {}


class _NoPlans(TorchDispatchMode):
    """Sends this thread's calls of the ops defined here to their wrappers, ahead of every
    dispatch key: the C++ kernel's replay and the Python planner alike."""

    @classmethod
    def is_infra_mode(cls) -> bool:
        # torch.compile runs a frame eagerly under a user's dispatch mode; under this one it
        # compiles, and the compiled code's op calls still come here
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.name() if isinstance(func, torch._ops.OpOverload) else None
        fn = _wrappers.get(name) if name is not None else None
        if fn is not None:
            return fn(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def no_plans() -> Any:
    """Within it, this thread's calls of the ops defined by ``op`` run their wrappers in full
    (see the module's documentation, "Warm-ups"). Nested uses are fine. A wrapper that
    itself calls such an op inside runs that inner op as usual."""
    with _NoPlans():
        yield


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------

_libraries: Dict[str, Any] = {}


def _tags() -> Tuple[Any, ...]:
    """The kernels check strides and alignment: ask torch.compile to hand the ops their
    inputs with the strides eager mode would give them."""
    for name in ("needs_exact_strides", "needs_fixed_stride_order"):
        tag = getattr(torch.Tag, name, None)
        if tag is not None:
            return (tag,)
    return ()


def _existing(namespace: str, name: str) -> Optional[Any]:
    try:
        return getattr(getattr(torch.ops, namespace), name).default
    except (AttributeError, RuntimeError):
        return None


def op(namespace: str, name: str, fake: Callable[..., Any],
       mutates_args: Sequence[str] = ()) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: defines ``torch.ops.<namespace>.<name>`` running ``fn`` (through its launch
    plans) with the fake implementation ``fake``; returns the op's ``OpOverload``. Defining
    a name a second time in one process (a reloaded module) returns the first op."""

    def wrap(fn: Callable[..., Any]) -> Any:
        existing = _existing(namespace, name)
        if existing is not None:
            return existing
        lib = _libraries.get(namespace)
        if lib is None:
            lib = _libraries[namespace] = torch.library.Library(namespace, "FRAGMENT")
        schema = torch.library.infer_schema(fn, mutates_args=tuple(mutates_args))
        lib.define(name + schema, tags=_tags())
        qualname = f"{namespace}::{name}"
        _wrappers[qualname] = fn
        native = _native()
        if native is not None:
            twin = namespace + "_record"
            rec_lib = _libraries.get(twin)
            if rec_lib is None:
                rec_lib = _libraries[twin] = torch.library.Library(twin, "FRAGMENT")
            rec_lib.define(name + schema)
            rec_lib.impl(name, _recorder_impl(qualname, fn, native), "CUDA")
            native.register(qualname, f"{twin}::{name}")
        else:
            lib.impl(name, _planned(qualname, fn), "CUDA")
        lib.impl(name, fn, "CPU")
        torch.library.register_fake(qualname, fake, lib=lib)
        return getattr(getattr(torch.ops, namespace), name).default

    return wrap
