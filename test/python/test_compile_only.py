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
