"""Launches at CUDA's grid limits, through every launch path, on the GPU: x = 2**31 - 1,
y = 65535, z = 65535 programs of a kernel that returns at once (only the last program of the
grid writes its coordinates, so the test sees that the whole grid ran). One past the limit is
refused before anything reaches the GPU, with one message, by each path: the JIT's
``kernel[grid]`` (the checked path of the first launch and the C++ hot path of the next), a
bundle's ``LaunchableKernel`` and ``KernelFamily``, and the runtime binding
``_runtime.Kernel.launch``. The CPU twin is test/python/test_launch_paths.py (the rules,
with empty grids)."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from kiln import aot  # noqa: E402
from kiln.runtime import Bundle, KilnError  # noqa: E402

MAX_GRID = kiln.host.MAX_GRID
LIMITS = [(MAX_GRID[0], 1, 1), (1, MAX_GRID[1], 1), (1, 1, MAX_GRID[2])]


@kiln.jit(num_warps=1)
def last_program(flag_ptr):
    """Returns at once, except the last program of the grid, which writes the grid's extent
    as it counted it (program id + 1 along each axis)."""
    x = kl.program_id(0)
    y = kl.program_id(1)
    z = kl.program_id(2)
    if x == kl.num_programs(0) - 1:
        if y == kl.num_programs(1) - 1:
            if z == kl.num_programs(2) - 1:
                kl.store(flag_ptr, x + 1)
                kl.store(flag_ptr + 1, y + 1)
                kl.store(flag_ptr + 2, z + 1)


def past(grid):
    dim = next(i for i, g in enumerate(grid) if g > 1)
    out = list(grid)
    out[dim] += 1
    return tuple(out), dim


def message(name, dim):
    return (f"kernel '{name}': grid dimension {dim} = {MAX_GRID[dim] + 1} is out of range "
            f"[0, {MAX_GRID[dim]}]")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("limits") / "limits.kbundle")
    aot.build([aot.Spec(last_program, name="last_program", signature={"flag_ptr": "*i32"},
                        divisibility=["flag_ptr"])],
              [kiln.device_arch()], path, jobs=1, log=lambda s: None)
    return Bundle(path)


def _check_ran(flags, grid):
    torch.cuda.synchronize()
    assert flags.tolist() == list(grid)


@pytest.mark.parametrize("grid", LIMITS)
def test_jit_at_the_limit(grid):
    k = kiln.jit(num_warps=1)(last_program.fn)
    flags = torch.zeros(3, dtype=torch.int32, device="cuda")
    k[grid](flags)  # the checked path: compiles, launches, caches the hot path
    _check_ran(flags, grid)
    assert len(k._dispatch) == 1
    flags.zero_()
    k[grid](flags)  # the hot path (C++)
    _check_ran(flags, grid)
    bad, dim = past(grid)
    flags.zero_()
    with pytest.raises(ValueError) as info:
        k[bad](flags)
    assert str(info.value) == message(k.__name__, dim)
    torch.cuda.synchronize()
    assert flags.tolist() == [0, 0, 0]


@pytest.mark.parametrize("grid", LIMITS)
def test_bundle_kernel_and_family_at_the_limit(bundle, grid):
    flags = torch.zeros(3, dtype=torch.int32, device="cuda")
    for k in (bundle.kernel("last_program"), bundle.family("last_program")):
        flags.zero_()
        k[grid](flags)
        _check_ran(flags, grid)
        bad, dim = past(grid)
        flags.zero_()
        with pytest.raises(ValueError) as info:
            k[bad](flags)
        assert str(info.value) == message("last_program", dim)
        torch.cuda.synchronize()
        assert flags.tolist() == [0, 0, 0]


@pytest.mark.parametrize("grid", LIMITS)
def test_runtime_binding_at_the_limit(bundle, grid):
    native = bundle.kernel("last_program")._kernel
    flags = torch.zeros(3, dtype=torch.int32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    native.launch(grid, [flags.data_ptr()], stream)
    _check_ran(flags, grid)
    bad, dim = past(grid)
    flags.zero_()
    with pytest.raises(KilnError) as info:
        native.launch(bad, [flags.data_ptr()], stream)
    assert str(info.value) == "kiln: " + message("last_program", dim)
    assert native.try_launch(bad, (flags,)) is False
    torch.cuda.synchronize()
    assert flags.tolist() == [0, 0, 0]
