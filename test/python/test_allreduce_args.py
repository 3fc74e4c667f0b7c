"""The all-reduce wrapper's checks on the CPU (docs/kernels/collectives.md, bad input): each
raises before anything is launched, naming the argument; and the workspace size formula."""

import types

import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402


def workspace(world=2, elements=4096):
    return types.SimpleNamespace(rank=0, world=world,
                                 nbytes=A.workspace_bytes(world, elements), peer_table=None)


def x(n=4096, dtype=torch.bfloat16):
    return torch.zeros(n, dtype=dtype)


@pytest.mark.parametrize("call,message", [
    (lambda: A.allreduce(x(dtype=torch.float16), workspace()), "x must be bfloat16"),
    (lambda: A.allreduce(x(4095), workspace()), "must be even"),
    (lambda: A.allreduce(x(8192)[::2], workspace()), "x must be contiguous"),
    (lambda: A.allreduce(x(4098)[1:4097], workspace()), "4-byte aligned"),
    (lambda: A.allreduce(x(), workspace(), residual=x(2048)), r"residual must have shape \[4096\]"),
    (lambda: A.allreduce(x(), workspace(), out=x(dtype=torch.float32)), "out must be bfloat16"),
    (lambda: A.allreduce(x(8192), workspace()), "workspace holds .* bytes, 8192 elements over 2 "
                                                "ranks need"),
    (lambda: A.allreduce(x(1 << 22), workspace(elements=1 << 22)), "at most 2097152 elements"),
])
def test_bad_input_raises_before_launch(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


def test_workspace_bytes():
    """The header, then two phases of world slots of a descriptor word a program and the
    words, rounded to 16 bytes."""
    assert A.workspace_bytes(2, 8) == 4 * (A.HEADER_WORDS + 2 * 2 * (A.MAX_PROGRAMS + 4))
    assert A.workspace_bytes(8, 1 << 20) == 4 * (A.HEADER_WORDS + 2 * 8 * (A.MAX_PROGRAMS
                                                                            + (1 << 19)))
    assert A.workspace_bytes(4, 10) == A.workspace_bytes(4, 16)
