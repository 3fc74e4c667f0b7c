"""Launch plans of the torch ops (``kiln.torch_library``) on the GPU.

A torch op runs its wrapper the first time it sees a launch key and replays the recorded
launches afterwards. For every op case of test_torch_ops.py: the first call (recorded),
then replays on fresh random values of the same shapes, each bit for bit equal to the
wrapper on the same values; the plan exists (the op was planned, not run in full); a call
that changes only a tensor's alignment or a scalar argument gets a plan of its own; and a
wrapper check still raises on a replayed key's neighbour (a wrong dtype is a new key).
"""

import pytest

torch = pytest.importorskip("torch")

from kiln import torch_library  # noqa: E402

import test_torch_ops as ops  # noqa: E402  (test/gpu is on sys.path under pytest)

pytestmark = pytest.mark.sm90

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
    with pytest.raises(Exception, match="situ_and_mul"):
        torch.ops.kiln.situ_and_mul(x.to(torch.float16))
    with pytest.raises(Exception, match="situ_and_mul"):
        torch.ops.kiln.situ_and_mul(x[:, :3])   # an odd width: the wrapper refuses it


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
