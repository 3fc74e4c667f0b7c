"""The one-shot all-reduces' protocol on ONE GPU (docs/kernels/collectives.md): world sizes 2,
4 and 8 as separate processes (CUDA IPC maps each process's workspace into the others), JIT
and bundle (``launch_mode``). Each rank (allreduce_worker.py) checks, bit for bit against the
sum over ranks in fp32 then bf16 (+ the residual): sizes over 1 to 1,024 programs, in place
and into ``out``, 1,000 back-to-back calls with changing grids; the + RMSNorm row form (1 to
1,536 rows of 3,584; the norm within a bf16 rounding) and the MoE finalize fused into the push
(bit for bit), 200 calls alternating the flat and the row form; one rank late by 50 ms; a
rank with a wrong size (every rank's check raises, none hangs; a reset recovers); the
sequence-parallel reduce-scatter and all-gather."""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from ranks import run_ranks  # noqa: E402

#: Beyond this the ranks are taken to hang (the kernel's own waits give up after 5 s).
DEADLINE_S = 600


@pytest.mark.parametrize("world", [2, 4, 8])
def test_allreduce_protocol(launch_mode, world, tmp_path):
    run_ranks("allreduce_worker.py", world, tmp_path, deadline_s=DEADLINE_S)


def test_docs_example(launch_mode, tmp_path):
    """docs/examples/allreduce_two_process.py runs as its docstring says (two processes, one
    GPU) and every rank reports success."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    script = os.path.join("docs", "examples", "allreduce_two_process.py")
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc-per-node", "2", script], cwd=root, capture_output=True,
                         text=True, timeout=DEADLINE_S)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    assert all(f"rank {r} of 2: all-reduce and all-reduce + RMSNorm OK" in log for r in (0, 1))
