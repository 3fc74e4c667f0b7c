"""One rule per launch argument, the same on every launch path (kiln.host; docs/architecture.md).

The grid limits are CUDA's -- x up to 2**31 - 1, y and z up to 65535 -- and every path checks
them before anything compiles or launches, with one message: the JIT's ``kernel[grid]``, a
bundle's ``LaunchableKernel`` and ``KernelFamily``, ``kiln.autotune``, the interpreter, and the
runtime binding ``_runtime.Kernel.launch`` (the C++ ``kiln::Kernel::launch``, the last check).
Each test launches at the limit with a zero in another dimension (so nothing runs and no GPU
is needed; the limits are checked before the empty grid returns) and one past it. The GPU twin
(test/gpu/test_launch_limits.py) launches at the limits for real.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import _runtime, host
from kiln.autotune import Autotuner, Config
from kiln.runtime import Bundle, BundleWriter, KilnError, LaunchableKernel
from kiln.testing import interpret, source_line

HERE = os.path.abspath(__file__)
MAX_GRID = host.MAX_GRID


class FakeCudaArray:
    def __init__(self, n=64, address=0x7F0000000000):
        self.shape = (n,)
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": "<f4",
                                         "shape": self.shape, "version": 3}


@kiln.jit
def noop(x_ptr, n, B: kl.constexpr):
    if kl.program_id(0) < 0:  # never: returns at once
        kl.store(x_ptr, n * B)


META = {"name": "noop", "symbol": "noop", "threads_per_block": 128,
        "params": [{"name": "x_ptr", "kind": "ptr", "dtype": "f32"},
                   {"name": "n", "kind": "scalar", "dtype": "i32"}],
        "constexprs": {"B": 1}}
FAKE_CUBIN = b"\x7fELF" + bytes(60)


def _bundle_kernel(cluster=(1, 1, 1)):
    return LaunchableKernel.from_images(dict(META, cluster=list(cluster)), {"sm_90a": FAKE_CUBIN})


def _family():
    w = BundleWriter("test")
    for b in (1, 2):
        w.add_kernel(dict(META, constexprs={"B": b}), [("sm_90a", "cubin", FAKE_CUBIN)])
    return Bundle.from_bytes(w.serialize()).family("noop")


def grids(dim):
    """(at the limit, one past) along ``dim``, with another dimension 0: nothing launches."""
    at = [1, 1, 1]
    at[dim] = MAX_GRID[dim]
    at[(dim + 1) % 3] = 0
    past = list(at)
    past[dim] += 1
    return tuple(at), tuple(past)


def expected(dim):
    return f"kernel 'noop': grid dimension {dim} = {MAX_GRID[dim] + 1} is out of range " \
           f"[0, {MAX_GRID[dim]}]"


def test_the_limits_are_cudas_and_the_runtimes():
    assert MAX_GRID == (2**31 - 1, 65535, 65535)
    assert tuple(_runtime.MAX_GRID) == MAX_GRID


def _jit(grid):
    noop[grid](FakeCudaArray(), 5, B=1)


def _autotune(grid):
    Autotuner(noop, [Config({"B": 1})], key=["n"])[grid](FakeCudaArray(), 5)


def _bundle(grid):
    _bundle_kernel()[grid](0x7F0000000000, 5)


def _bundle_checked(grid):
    _bundle_kernel()[grid](FakeCudaArray(), 5)  # a CUDA array: the checked path


def _family_launch(grid):
    _family()[grid](FakeCudaArray(), 5, B=2)


def _interpreter(grid):
    interpret(noop, grid, np.zeros(4, np.float32), 5, B=1)


PATHS = [_jit, _autotune, _bundle, _bundle_checked, _family_launch, _interpreter]


@pytest.fixture
def no_device(monkeypatch):
    """Nothing may reach the device: the checks come first, and an empty grid stops there."""
    def boom(*a, **k):
        raise AssertionError("the launch reached the device")

    monkeypatch.setattr(kiln.runtime, "device_arch", boom)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.__name__.strip("_"))
def test_grid_at_the_limit_passes_and_past_it_fails_alike(no_device, path, dim):
    at, past = grids(dim)
    path(at)
    with pytest.raises(ValueError) as info:
        path(past)
    assert str(info.value) == expected(dim)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_the_runtime_binding_checks_the_same_limits(dim):
    at, past = grids(dim)
    k = _bundle_kernel()._kernel
    k.launch(at, [0, 5], 0)  # within the limits and empty: launches nothing
    with pytest.raises(KilnError) as info:
        k.launch(past, [0, 5], 0)
    assert str(info.value) == "kiln: " + expected(dim)
    assert k.try_launch(past, (0, 5), 0) is False  # the direct path leaves it to the check


def test_the_runtime_binding_refuses_grids_beyond_its_integers():
    k = _bundle_kernel()._kernel
    with pytest.raises(KilnError, match=r"grid dimension 0 = 1099511627776 is out of range "
                                        r"\[0, 2147483647\]"):
        k.launch((2**40, 0, 1), [0, 5], 0)
    with pytest.raises(KilnError, match=r"grid dimension 1 = -1 is out of range \[0, 65535\]"):
        k.launch([1, -1], [0, 5], 0)
    with pytest.raises(ValueError, match=r"grid dimension 1 = -1 is out of range \[0, 65535\]"):
        _bundle_kernel()[(1, -1)](0, 5)


def test_cluster_rule_alike_in_the_bundle_and_the_runtime():
    message = "kernel 'noop': grid (3, 1, 1) is not a multiple of the cluster shape (2, 1, 1)"
    lk = _bundle_kernel(cluster=(2, 1, 1))
    with pytest.raises(ValueError) as info:
        lk[(3,)](0x7F0000000000, 5)
    assert str(info.value) == message
    with pytest.raises(KilnError) as info:
        lk._kernel.launch((3, 1, 1), [0, 5], 0)
    assert str(info.value) == "kiln: " + message
    assert lk._kernel.try_launch((3, 1, 1), (0, 5), 0) is False
    lk[(4, 0)](0x7F0000000000, 5)  # an empty grid needs no multiple
    lk._kernel.launch((3, 0, 1), [0, 5], 0)


def test_num_warps_one_rule(no_device):
    message = "num_warps must be a power of two in [1, 32], got 3"
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        kiln.jit(num_warps=3)(noop.fn)
    with pytest.raises(ValueError) as info:
        noop[(0,)](FakeCudaArray(), 5, B=1, num_warps=3)
    assert message in str(info.value)
    with pytest.raises(ValueError) as info:
        noop.compile({"x_ptr": "*f32", "n": "i32"}, {"B": 1}, num_warps=64, upto="tile")
    assert "num_warps must be a power of two in [1, 32], got 64" in str(info.value)


@kiln.jit
def deep_pipeline(x_ptr, n):
    acc = 0.0
    for i in kl.range(0, n, num_stages=17):  # num_stages=17
        acc += kl.load(x_ptr + i)
    kl.store(x_ptr, acc)


def test_num_stages_past_the_dialects_bound_is_a_compile_error_at_the_users_line():
    line = source_line(HERE, "num_stages=17")
    with pytest.raises(kiln.CompilationError) as info:
        interpret(deep_pipeline, (1,), np.zeros(4, np.float32), 4)
    assert f"{HERE}:{line}:" in str(info.value)
    assert "num_stages must be a positive constexpr int (at most 16), got 17" in str(info.value)
    if kiln.compiler.compiler_available():
        with pytest.raises(kiln.CompilationError) as info:
            deep_pipeline.compile({"x_ptr": "*f32", "n": "i32"}, upto="tile")
        assert f"{HERE}:{line}:" in str(info.value)


# ---------------------------------------------------------------------------
# The hot path: _runtime.Dispatcher keys launches by the host rules' facts
# ---------------------------------------------------------------------------


def test_dispatcher_keys_follow_the_specialization_rule():
    key5 = _runtime.Dispatcher([True] * 5).key
    assert key5((16, 1, 3, 1.5, True)) != key5((16, 2, 3, 1.5, True))  # value 1
    assert key5((16, 1, 3, 1.5, True)) != key5((17, 1, 3, 1.5, True))  # divisibility by 16
    assert key5((32, 1, 3, 1.5, True)) == key5((48, 1, 3, 2.5, False))
    assert key5((32, 1, 3)) is None  # another count of arguments
    key = _runtime.Dispatcher([True]).key
    assert key((2**31 - 1,)) != key((2**31,))  # i32 / i64 by value
    assert key((2**63 - 16,)) != key((2**63,))  # i64 / u64
    assert key((-16,)) == key((0,))
    assert key((2**64,)) is None and key((-(2**63) - 1,)) is None  # the checked path raises
    assert key((FakeCudaArray(),)) is None  # not cached: the checked path each time
    assert key((np.int32(4),)) is None
    unspecialized = _runtime.Dispatcher([False]).key
    assert unspecialized((16,)) == unspecialized((1,)) == unspecialized((3,))
    assert unspecialized((16,)) != unspecialized((2**31,))


def test_dispatcher_launches_what_it_cached_through_the_direct_path():
    k = _bundle_kernel()._kernel
    d = _runtime.Dispatcher([True, True])
    assert d.launch((0,), (0x7F0000000000, 5), 0) is False  # a miss
    assert d.add((0x7F0000000000, 5), k) and len(d) == 1
    assert d.launch((0, 1, 1), (0x7F0000000010, 7), 0) is True  # a hit; an empty grid
    assert d.launch(grids(0)[1], (0x7F0000000010, 7), 0) is False  # the check explains
    assert d.launch((0,), (0x7F0000000010, 7.0), 0) is False  # another key
    assert d.launch((0,), (0x7F0000000010, 7), "stream") is False


@kiln.jit
def ints_only(n, m, B: kl.constexpr):
    pass


def test_jit_second_launch_takes_the_hot_path(monkeypatch):
    if not kiln.compiler.compiler_available():
        pytest.skip("needs the compiler (kiln._C)")
    monkeypatch.setenv("KILN_CACHE", "0")
    monkeypatch.setattr(kiln.runtime, "device_arch", lambda *a: "sm_90a")
    k = kiln.jit(ints_only.fn)
    try:
        k[(1,)](5, 7, B=4)  # compiles; without a driver the launch itself fails
    except KilnError:
        pass
    assert len(k._dispatch) == 1 and len(next(iter(k._dispatch.values()))) == 1
    try:
        k[(1,)](5, 7, B=4, cluster=[1, 1])  # a cluster list: cached under its tuple
    except KilnError:
        pass
    assert len(k._dispatch) == 2

    def boom(*a, **kw):
        raise AssertionError("the hot path ran the checked path")

    monkeypatch.setattr(k, "_launch_checked", boom)
    k[(0,)](6, 9, B=4)  # same specialization: C++ alone (an empty grid launches nothing)
    k[(0,)](6, 9, B=4, cluster=[1, 1])
    with pytest.raises(AssertionError, match="checked path"):
        k[(0,)](16, 9, B=4)  # divisible by 16: another specialization
    with pytest.raises(AssertionError, match="checked path"):
        k[(0,)](6, 9, B=8)  # another constexpr
    with pytest.raises(AssertionError, match="checked path"):
        k[grids(0)[1]](6, 9, B=4)  # past the grid limit: the checked path explains


def test_jit_hot_path_with_torch_tensors():
    """The JIT's second launch goes straight to C++ (Dispatcher), with torch tensors read
    in C++: a fake torch (module, tensors, current device and stream) in a subprocess."""
    code = textwrap.dedent("""
        import sys, types
        import kiln, kiln.language as kl
        from kiln import _runtime

        torch = types.ModuleType("torch")
        torch_C = types.ModuleType("torch._C")
        calls = []
        current = [0]
        torch_C._cuda_getDevice = lambda: current[0]
        torch_C._cuda_getCurrentRawStream = lambda dev: calls.append(dev) or 0
        torch._C = torch_C
        sys.modules["torch"] = torch
        sys.modules["torch._C"] = torch_C

        class Dtype:
            def __str__(self):
                return "torch.float32"

        F32 = Dtype()

        class Device:
            type, index = "cuda", 0

        class Tensor:
            __module__ = "torch.fake"
            dtype = F32
            is_cuda = True
            device = Device()

            def __init__(self, address):
                self.address = address

            def data_ptr(self):
                return self.address

            def get_device(self):
                return 0

        meta = {"name": "k", "symbol": "k", "threads_per_block": 32,
                "params": [{"name": "x", "kind": "ptr", "dtype": "f32", "divisibility": 16},
                           {"name": "n", "kind": "scalar", "dtype": "i32"}]}
        k = _runtime.Kernel.from_images(meta, {"sm_90a": b"\\x7fELF" + bytes(60)})
        assert k.try_launch((0,), (Tensor(0x1000), 5)) is True
        assert calls == [0], calls  # torch's current stream of the tensor's device
        assert k.try_launch((0,), (Tensor(0x1004), 5)) is False  # misaligned: explain
        current[0] = 1
        assert k.try_launch((0,), (Tensor(0x1000), 5)) is False  # not the current device
        current[0] = 0

        d = _runtime.Dispatcher([True, True])
        assert d.add((Tensor(0x1000), 5), k)
        assert d.key((Tensor(0x2000), 5)) == d.key((Tensor(0x1000), 21))
        assert d.key((Tensor(0x2008), 5)) != d.key((Tensor(0x1000), 5))
        assert d.launch((0,), (Tensor(0x2000), 21)) is True
        assert d.launch((0,), (Tensor(0x2008), 21)) is False

        class Stream:
            cuda_stream = 0

        assert d.launch((0,), (Tensor(0x2000), 21), Stream()) is True
        print("ok")
    """)
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"
