"""Compiling without launching, on the CPU: ``JITFunction.warmup`` does a launch's checks and
compile and no launch, and the Kimi K3 wrappers' ``compile_only`` (kernels_dsl/kimi_k3/
_launch.py) turns their launches into warm-ups (JIT) or module loads (bundle). Collectives
use it so that no rank compiles inside a call its peers wait on."""

import types

import pytest

import kiln
import kiln.language as kl
from kernels_dsl.kimi_k3 import _launch as L

from test_launch_paths import FakeCudaArray


@kiln.jit
def _store(x_ptr, n, B: kl.constexpr):
    kl.store(x_ptr + kl.arange(0, B), n)


class _Unlaunchable:
    """A compiled kernel whose launch fails the test."""

    def __init__(self):
        self._kernel = types.SimpleNamespace(launch=self._launch)

    @staticmethod
    def _launch(*_):
        raise AssertionError("warmup launched the kernel")


def test_warmup_compiles_and_launches_nothing(monkeypatch):
    built = []
    monkeypatch.setattr(kiln.runtime, "device_arch", lambda: "sm_90a")
    monkeypatch.setattr(_store, "_kernel_for",
                        lambda spec, arch: built.append((spec.constexprs, arch)) or
                        _Unlaunchable())
    _store.warmup((1,), FakeCudaArray(), 5, B=64)
    assert built == [((("B", 64),), "sm_90a")]
    with pytest.raises(Exception, match="argument 'n'"):  # the launch's checks still apply
        _store.warmup((1,), FakeCudaArray(), "five", B=64)


class _JitKernel:
    def __init__(self):
        self.calls = []

    def warmup(self, grid, *args, **kwargs):
        self.calls.append(("warmup", grid, args))

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append(("launch", grid, args))


def test_compile_only_turns_wrapper_launches_into_warmups(monkeypatch):
    monkeypatch.setattr(L, "jit_allowed", lambda: True)
    k = _JitKernel()
    with L.compile_only():
        L.launch(k, "k", (3,), (1, 2), {}, 4)
    L.launch(k, "k", (3,), (1, 2), {}, 4)
    assert k.calls == [("warmup", (3,), (1, 2)), ("launch", (3,), (1, 2))]


def test_compile_only_loads_the_bundles_kernel(monkeypatch):
    events = []
    chosen = types.SimpleNamespace(load=lambda: events.append("load"),
                                   __getitem__=None)
    family = types.SimpleNamespace(find=lambda args: chosen)
    monkeypatch.setattr(L, "jit_allowed", lambda: False)
    monkeypatch.setattr(L, "_bundle_family", lambda name, constexprs: family)
    with L.compile_only():
        L.launch(object(), "k", (3,), (1, 2), {}, 4)
    assert events == ["load"]


class _SlowJitKernel(_JitKernel):
    """A kernel whose warm-up (its compile) waits at a barrier the other kernels' warm-ups
    must also reach: only compiles that run side by side get past it."""

    def __init__(self, barrier, thread_ids):
        super().__init__()
        self.barrier, self.thread_ids = barrier, thread_ids

    def warmup(self, grid, *args, **kwargs):
        import threading

        self.thread_ids.add(threading.get_ident())
        self.barrier.wait(timeout=10)
        super().warmup(grid, *args, **kwargs)


def test_launch_all_compiles_side_by_side_once_then_launches_in_order(monkeypatch):
    import threading

    monkeypatch.setattr(L, "jit_allowed", lambda: True)
    monkeypatch.setattr(L, "_compiled_together", set())
    threads = set()
    barrier = threading.Barrier(2)
    a, b, empty = (_SlowJitKernel(barrier, threads), _SlowJitKernel(barrier, threads),
                   _JitKernel())
    group = [L.Launch(a, "a", (2,), (1,), {"X": 1}, 4), L.Launch(empty, "e", (0, 3), (2,), {}, 4),
             L.Launch(b, "b", (5, 1), (3,), {}, 8)]
    L.launch_all(group)
    assert len(threads) == 2  # two warm-ups, two threads (and the barrier let both through)
    assert a.calls == [("warmup", (2,), (1,)), ("launch", (2,), (1,))]
    assert b.calls == [("warmup", (5, 1), (3,)), ("launch", (5, 1), (3,))]
    assert empty.calls == []  # an empty grid: neither compiled nor launched
    L.launch_all(group)  # the group is known: no second warm-up
    assert [c[0] for c in a.calls + b.calls] == ["warmup", "launch", "launch"] * 2


def test_compile_together_raises_a_compile_error_and_is_off_without_jit(monkeypatch):
    class Broken(_JitKernel):
        def warmup(self, grid, *args, **kwargs):
            raise kiln.CompilationError("k.py", 3, 5, "bad kernel")

    monkeypatch.setattr(L, "_compiled_together", set())
    group = [L.Launch(Broken(), "x", (1,), (), {}, 4), L.Launch(_JitKernel(), "y", (1,), (), {}, 4)]
    monkeypatch.setattr(L, "jit_allowed", lambda: False)
    L.compile_together(group)  # the bundle's kernels: nothing to compile
    monkeypatch.setattr(L, "jit_allowed", lambda: True)
    with pytest.raises(kiln.CompilationError, match="bad kernel"):
        L.compile_together(group)
