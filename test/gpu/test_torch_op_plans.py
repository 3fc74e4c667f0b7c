"""Launch plans of the torch ops (``kiln.torch_library``) on the GPU.

A torch op runs its wrapper the first time it sees a launch key and replays the recorded
launches afterwards. For every op case of test_torch_ops.py: the first call (recorded),
then replays on fresh random values of the same shapes, each bit for bit equal to the
wrapper on the same values; the plan exists (the op was planned, not run in full); a call
that changes only a tensor's alignment or a scalar argument gets a plan of its own; and a
wrapper check still raises on a replayed key's neighbour (a wrong dtype is a new key).
Where the package has the C++ kernel (kiln/_torch_ops.so), it serves the ops and replays
without calling the recorder again; the Python replay (KILN_OP_PLANS=python) is checked in a
process of its own.
"""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from kiln import torch_library  # noqa: E402

import test_torch_ops as ops  # noqa: E402  (test/gpu is on sys.path under pytest)

#: Cases whose op is not planned, with the reason.
NOT_PLANNED = {}


@pytest.mark.parametrize("name", list(ops.CASES))
def test_replayed_op_equals_wrapper(name):
    qualname = f"kiln::{ops.make(name, 'cpu', 0).op}"
    for seed in (11, 12, 13):
        case = ops.make(name, "cuda", seed)
        got = ops.run_op(case)
        want = ops.run_wrapper(case)
        torch.cuda.synchronize()
        ops.assert_same(case, got, want, f"{name} (seed {seed}): the op vs the wrapper")
    if name in NOT_PLANNED:
        return
    table = torch_library.plans.get(qualname, {})
    assert table and not any(isinstance(p, torch_library.Unplanned) for p in table.values()), (
        f"{name}: torch.ops.{qualname.replace('::', '.')} runs its wrapper on every call: "
        f"{table}")
    cpp = torch_library.cpp_plans(qualname)
    assert cpp is None or cpp >= 1, f"{name}: the C++ kernel holds no plan of {qualname}"


_CPP_LIBRARY = os.path.join(os.path.dirname(torch_library.__file__), "_torch_ops.so")
_PYTHON_REPLAY = os.environ.get("KILN_OP_PLANS") == "python"


@pytest.mark.skipif(not os.path.exists(_CPP_LIBRARY) or _PYTHON_REPLAY,
                    reason="the package has no kiln/_torch_ops.so (built without torch) or "
                           "KILN_OP_PLANS=python")
def test_the_cpp_kernel_serves_the_ops():
    assert torch_library._native() is not None
    dump = torch._C._dispatch_dump("kiln::situ_and_mul")
    cuda = [line for line in dump.splitlines() if line.startswith("CUDA:")]
    assert cuda and "kiln/_torch_ops.so" in cuda[0], dump


@pytest.mark.skipif(torch_library.cpp_plans("kiln::situ_and_mul") is None,
                    reason="the ops replay in Python")
def test_a_cpp_replay_does_not_record_again(monkeypatch):
    made = []
    real = torch_library._make_plan
    monkeypatch.setattr(torch_library, "_make_plan",
                        lambda *a: made.append(1) or real(*a))
    qualname = "kiln::situ_and_mul"
    x = torch.randn((13, 2 * 200), device="cuda").to(torch.bfloat16)   # a key no other test uses
    before = torch_library.cpp_plans(qualname)
    torch.ops.kiln.situ_and_mul(x)                  # a new key: recorded once
    assert made == [1] and torch_library.cpp_plans(qualname) == before + 1
    for _ in range(3):
        y = torch.randn_like(x, dtype=torch.float32).to(torch.bfloat16)
        got = torch.ops.kiln.situ_and_mul(y)
        torch.cuda.synchronize()
        assert torch.equal(ops.bits(got), ops.bits(ops.situ.situ_and_mul(y)))
    assert made == [1] and torch_library.cpp_plans(qualname) == before + 1


@pytest.mark.skipif(_PYTHON_REPLAY, reason="this is the Python replay's run")
def test_the_python_replay_in_a_process_of_its_own():
    env = dict(os.environ, KILN_OP_PLANS="python")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
         "-k", "not python_replay"], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout, done.stdout[-2000:]


def test_a_misaligned_tensor_gets_its_own_plan():
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.randn((4, 2 * 256 + 8), generator=g, device="cuda") * 3).to(torch.bfloat16)
    aligned = x[:, :512]
    shifted = x[:, 8:520]           # 16 bytes further: aligned as well
    odd = x[:, 1:513]               # 2 bytes off: not 16-byte aligned
    for inp in (aligned, shifted, odd):
        got = torch.ops.kiln.situ_and_mul(inp)
        want = ops.situ.situ_and_mul(inp)
        torch.cuda.synchronize()
        assert torch.equal(ops.bits(got), ops.bits(want))


def test_a_scalar_argument_is_part_of_the_key():
    g = torch.Generator(device="cuda").manual_seed(6)
    x = (torch.randn((3, 512), generator=g, device="cuda") * 3).to(torch.bfloat16)
    for beta in (4.0, 2.0, 4.0, 2.0):
        got = torch.ops.kiln.situ_and_mul(x, beta)
        want = ops.situ.situ_and_mul(x, None, beta)
        torch.cuda.synchronize()
        assert torch.equal(ops.bits(got), ops.bits(want)), beta


def test_a_replayed_key_does_not_hide_the_checks():
    x = torch.randn((3, 512), device="cuda").to(torch.bfloat16)
    torch.ops.kiln.situ_and_mul(x)
    torch.ops.kiln.situ_and_mul(x)          # replayed
    for bad in (x.to(torch.float16), x[:, :3]):   # a wrong dtype; an odd width
        with pytest.raises(Exception) as wrapper:
            ops.situ.situ_and_mul(bad)
        # The op raises what the wrapper raises, through the C++ kernel as well.
        with pytest.raises(wrapper.type, match="situ_and_mul"):
            torch.ops.kiln.situ_and_mul(bad)


def test_cuda_graph_capture_of_a_planned_op():
    x = torch.randn((5, 512), device="cuda").to(torch.bfloat16)
    torch.ops.kiln.situ_and_mul(x)          # the plan exists before the capture
    static = x.clone()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.ops.kiln.situ_and_mul(static)  # warm-up on the side stream
        with torch.cuda.graph(graph, stream=stream):
            out = torch.ops.kiln.situ_and_mul(static)
    fresh = torch.randn((5, 512), device="cuda").to(torch.bfloat16)
    static.copy_(fresh)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(ops.bits(out), ops.bits(ops.situ.situ_and_mul(fresh)))
