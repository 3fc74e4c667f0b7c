"""kiln's fused all-reduce between two processes (docs/kernels/collectives.md).

    python -m torch.distributed.run --standalone --nproc-per-node 2 \
        docs/examples/allreduce_two_process.py

Each process is a rank; they may share one GPU (CUDA IPC maps each one's workspace into the
other) or use one each. torch.distributed (any backend; gloo here) only exchanges the
workspaces' handles; the all-reduce itself is one kernel a call, pushing over peer memory.
Run it from the repository root with kiln installed (or its build on PYTHONPATH)."""

import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.getcwd())

from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402
from kiln.distributed import SymmetricBuffer  # noqa: E402

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(rank % torch.cuda.device_count())

# One workspace for every call of up to 3 x 64 rows of K3's latent (collective: every rank).
ws = SymmetricBuffer(A.workspace_bytes(world, 3 * 64 * A.NORM_DIM))

x = torch.full((3 * 64, A.NORM_DIM), float(rank + 1), device="cuda", dtype=torch.bfloat16)
weight = torch.ones(A.NORM_DIM, device="cuda", dtype=torch.bfloat16)

# Compile (JIT) or load (bundle) on every rank before the first call, then meet: a peer that
# compiles while the others wait would make them time out.
with A.compile_only():
    A.allreduce(x, ws)
    A.allreduce_rmsnorm(x, ws, weight, norm_rows=64)
dist.barrier()

A.allreduce(x, ws)                                             # in place: sum over ranks
out, normed = A.allreduce_rmsnorm(x, ws, weight, norm_rows=64)  # again, + RMSNorm of 64 rows
A.check(ws)                                                     # raises if a peer failed

total = world * (world + 1) // 2
assert torch.all(out == world * total), out
assert torch.allclose(normed.float(), torch.ones_like(normed, dtype=torch.float32), atol=1e-2)
print(f"rank {rank} of {world}: all-reduce and all-reduce + RMSNorm OK", flush=True)

ws.close()
dist.destroy_process_group()
