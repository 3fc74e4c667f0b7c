"""The collectives' torch ops (``kernels_dsl.kimi_k3.torch_ops``: allreduce, sp_reduce_scatter,
sp_all_gather, allreduce_rmsnorm, finalize_push_norm) on ONE GPU, world 2 and 4 as separate
processes (collective_ops_worker.py; gloo + a kiln.distributed.SymmetricBuffer), JIT and
bundle (``launch_mode``): each op eagerly, under ``torch.compile(fullgraph=True)`` and
captured in a CUDA graph replayed 5 times with fresh inputs, bit-exact against
allreduce_worker.py's references (the norm within a bf16 rounding); ``compile_only`` first
launches nothing, and the real call after it is right."""


import pytest

torch = pytest.importorskip("torch")

from ranks import run_ranks  # noqa: E402


@pytest.mark.parametrize("world", [2, 4])
def test_collective_ops(launch_mode, world, tmp_path):
    run_ranks("collective_ops_worker.py", world, tmp_path)
