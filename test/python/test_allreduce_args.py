"""The all-reduce wrappers' checks on the CPU (docs/kernels/collectives.md, bad input): each
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
    (lambda: A.allreduce(x(1 << 23), workspace(elements=1 << 23)),
     "at most 4194304 elements over 2 ranks"),
])
def test_bad_input_raises_before_launch(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


D = A.NORM_DIM


def rows(n=4, d=D, dtype=torch.bfloat16):
    return torch.zeros(n, d, dtype=dtype)


def weight(d=D, dtype=torch.bfloat16):
    return torch.ones(d, dtype=dtype)


def ws_rows(n=4):
    return workspace(elements=n * D)


def ids(t=4, k=A.TOPK, dtype=torch.int32):
    return torch.zeros(t, k, dtype=dtype)


def wts(t=4, k=A.TOPK, dtype=torch.float32):
    return torch.zeros(t, k, dtype=dtype)


@pytest.mark.parametrize("call,message", [
    (lambda: A.allreduce_rmsnorm(rows(dtype=torch.float16), ws_rows(), weight()),
     "x must be bfloat16"),
    (lambda: A.allreduce_rmsnorm(torch.zeros(D * 4, dtype=torch.bfloat16), ws_rows(), weight()),
     r"x must have shape \[\*, \*\]"),
    (lambda: A.allreduce_rmsnorm(rows(d=D - 1), ws_rows(), weight(D - 1)), "must be even"),
    (lambda: A.allreduce_rmsnorm(rows(8)[::2], ws_rows(), weight()), "x must be contiguous"),
    (lambda: A.allreduce_rmsnorm(rows(), ws_rows(), weight(D // 2)),
     r"weight must have shape \[3584\]"),
    (lambda: A.allreduce_rmsnorm(rows(), ws_rows(), weight(dtype=torch.float32)),
     "weight must be bfloat16"),
    (lambda: A.allreduce_rmsnorm(rows(), ws_rows(), weight(), norm_rows=5), r"norm_rows must be"),
    (lambda: A.allreduce_rmsnorm(rows(), ws_rows(), weight(), residual=rows(3)),
     r"residual must have shape \[4, 3584\]"),
    (lambda: A.allreduce_rmsnorm(rows(), ws_rows(), weight(), norm_rows=2, norm_out=rows(4)),
     r"norm_out must have shape \[2, 3584\]"),
    (lambda: A.allreduce_rmsnorm(rows(), ws_rows(), weight(),
                                 out=torch.zeros(4 * D + 4, dtype=torch.bfloat16)[4:].view(4, D)),
     "out must be 16-byte aligned"),
    (lambda: A.allreduce_rmsnorm(rows(8), ws_rows(4), weight()), "workspace holds .* bytes"),
    (lambda: A.finalize_push_norm(rows(), ids(dtype=torch.int64), wts(), ws_rows(), weight()),
     "topk_ids must be int32"),
    (lambda: A.finalize_push_norm(rows(), ids(k=8), wts(), ws_rows(), weight()),
     r"topk_ids must have shape \[\*, 16\]"),
    (lambda: A.finalize_push_norm(rows(), ids(), wts(t=3), ws_rows(), weight()),
     r"topk_weights must have shape \[4, 16\]"),
    (lambda: A.finalize_push_norm(rows(), ids(), wts(dtype=torch.bfloat16), ws_rows(), weight()),
     "topk_weights must be float32"),
])
def test_row_form_bad_input_raises_before_launch(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


@pytest.mark.parametrize("call,message", [
    (lambda: A.sp_reduce_scatter(rows(3, 8), workspace()), "multiple of the world size 2"),
    (lambda: A.sp_reduce_scatter(rows(4, 8), workspace(), residual=rows(3, 8)),
     r"residual must have shape \[2, 8\]"),
    (lambda: A.sp_reduce_scatter(rows(4, 8), workspace(), out=rows(4, 8)),
     r"out must have shape \[2, 8\]"),
    (lambda: A.sp_reduce_scatter(rows(2, 3), workspace()), "chunk holds must be even"),
    (lambda: A.sp_reduce_scatter(rows(4, 8, torch.float16), workspace()), "x must be bfloat16"),
    (lambda: A.sp_all_gather(rows(4, 8), workspace(), out=rows(4, 8)),
     r"out must have shape \[8, 8\]"),
    (lambda: A.sp_all_gather(rows(8, 8)[:, :4], workspace()), "x must be contiguous"),
    (lambda: A.sp_all_gather(rows(4096, 8), workspace()), "workspace holds .* bytes"),
])
def test_sequence_parallel_bad_input_raises_before_launch(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


def test_workspace_bytes():
    """The header, then two phases of world slots of a descriptor word a program and the
    words, rounded to 64 bytes, and 128 bytes for the two-shot form's rounded shards."""
    assert A.workspace_bytes(2, 8) == 4 * (A.HEADER_WORDS + 2 * 2 * (A.MAX_PROGRAMS + 48))
    assert A.workspace_bytes(8, 1 << 20) == 4 * (A.HEADER_WORDS + 2 * 8 * (A.MAX_PROGRAMS
                                                                            + (1 << 19) + 32))
    assert A.workspace_bytes(4, 10) == A.workspace_bytes(4, 32) < A.workspace_bytes(4, 34)


def out_buffer(world=2, rank=0):
    """A symmetric output buffer as sp_all_gather_direct sees it (CPU views)."""
    return types.SimpleNamespace(world=world, rank=rank, peer_table=None,
                                 local=lambda dtype, shape, offset: torch.zeros(shape,
                                                                                dtype=dtype))


@pytest.mark.parametrize("call,message", [
    (lambda: A.sp_all_gather_direct(rows(4, 8, torch.float16), workspace(), out_buffer()),
     "x must be bfloat16"),
    (lambda: A.sp_all_gather_direct(rows(8, 8)[:, :4], workspace(), out_buffer()),
     "x must be contiguous"),
    (lambda: A.sp_all_gather_direct(rows(4, 8), workspace(), out_buffer(world=4)),
     "both must span the same ranks"),
    (lambda: A.sp_all_gather_direct(rows(4, 8), workspace(), out_buffer(), offset=6),
     "multiple of 4 bytes"),
    (lambda: A.sp_all_gather_direct(rows(1, 3), workspace(), out_buffer()), "must be even"),
    (lambda: A.sp_all_gather_direct(rows(1 << 12, 1 << 10), workspace(), out_buffer()),
     "at most 2097152 elements"),
])
def test_direct_all_gather_bad_input_raises_before_launch(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()
