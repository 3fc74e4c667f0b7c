"""The fused GEMM collectives on ONE GPU (docs/kernels/collectives.md): world sizes 2, 4 and 8
as separate processes (CUDA IPC maps each process's workspace into the others), JIT and
bundle (``launch_mode``). Each rank (gemm_collectives_worker.py) checks gemm_allreduce (M in
every cell, the pad rows zero) and gemm_allgather (with and without c) bit for bit against the
math on small-integer inputs and within a bf16 rounding on normal ones, then 100 back-to-back
calls of both with changing M interleaved with the flat all-reduce on the same workspace."""


import pytest

torch = pytest.importorskip("torch")

from ranks import run_ranks  # noqa: E402


@pytest.mark.parametrize("world", [2, 4, 8])
def test_gemm_collectives(launch_mode, world, tmp_path):
    run_ranks("gemm_collectives_worker.py", world, tmp_path)
