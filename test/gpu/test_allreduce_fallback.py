"""The collectives' NCCL fallback (kernels_dsl/kimi_k3/allreduce_fallback.py,
docs/kernels/collectives.md) on ONE GPU: world sizes 2 and 4 as separate processes over gloo
(NCCL refuses several ranks on one device), the workspace forced to the fallback, JIT and
bundle (``launch_mode``). Each rank (allreduce_fallback_worker.py) checks the flat all-reduce
(+ residual, in place and into out, 100 back-to-back calls), the + RMSNorm row form, the MoE
finalize, the sequence-parallel reduce-scatter and all-gather, against the push kernels'
references: bit for bit with 2 ranks, within the sum's rounding (the backend's order) with 4;
the same bits on every rank; check and reset. ``via``: the module's functions, and
allreduce.py's wrappers dispatching on ``workspace.peer_mapped`` (and gemm_collectives.py's)."""


import pytest

torch = pytest.importorskip("torch")

from ranks import run_ranks  # noqa: E402


@pytest.mark.parametrize("via", ["fallback", "allreduce"])
@pytest.mark.parametrize("world", [2, 4])
def test_allreduce_fallback(launch_mode, world, via, tmp_path):
    run_ranks("allreduce_fallback_worker.py", world, tmp_path, via)
