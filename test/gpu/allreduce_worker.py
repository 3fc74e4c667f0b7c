"""One rank of the all-reduce protocol test (test_allreduce.py starts ``world`` of them on
one GPU): ``python allreduce_worker.py RANK WORLD INIT_FILE``. Every rank derives every
rank's inputs from seeds, so each checks the whole result against its own reference (the
sum over ranks in fp32, in rank order, rounded to bf16, plus the residual in bf16
arithmetic); torch.distributed (gloo) exchanges the workspace handles and keeps the ranks in
step between cases. Exit status 0 when every case passed; a failure prints its traceback."""

import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402
from kiln.distributed import CollectiveError, SymmetricBuffer  # noqa: E402

MAX_ELEMENTS = 1 << 20


def data(seed: int, n: int) -> torch.Tensor:
    """bf16 [n] from ``seed``: normal values, every 7th pair both +0.0 (pushed as the
    marker), every 11th element -0.0."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(n, generator=g, device="cuda").bfloat16()
    x.view(torch.int32)[::7] = 0
    x[5::11] = -0.0
    return x


def seed(call: int, rank: int) -> int:
    return call * 1009 + rank + 17


def reference(call: int, n: int, world: int, res) -> torch.Tensor:
    acc = torch.zeros(n, device="cuda", dtype=torch.float32)
    for r in range(world):
        acc += data(seed(call, r), n).float()
    s = acc.bfloat16()
    return s if res is None else (s.float() + res.float()).bfloat16()


def same_bits(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    if not torch.equal(got.view(torch.int16), want.view(torch.int16)):
        bad = (got.view(torch.int16) != want.view(torch.int16)).nonzero()[:4].flatten().tolist()
        raise AssertionError(f"{what}: differs at {bad}: got {got[bad].tolist()}, "
                             f"want {want[bad].tolist()}")


def main(rank: int, world: int, init: str) -> None:
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    buf = SymmetricBuffer(A.workspace_bytes(world, MAX_ELEMENTS))
    assert (buf.rank, buf.world) == (rank, world)
    call = 0

    # Sizes over grids of 1 to 1024 programs, in place and into out, with and without the
    # residual.
    for n, with_res, in_place in [(2, False, True), (6, True, True), (2048, False, False),
                                  (2050, True, True), (65536, True, False),
                                  (MAX_ELEMENTS, False, True), (MAX_ELEMENTS, True, False)]:
        x = data(seed(call, rank), n)
        res = data(seed(call, -1), n) if with_res else None
        out = None if in_place else torch.empty_like(x)
        got = A.allreduce(x, buf, residual=res, out=out)
        assert (got is x) == in_place
        torch.cuda.synchronize()
        A.check(buf)
        same_bits(got, reference(call, n, world, res), f"n={n} residual={with_res}")
        call += 1

    # 1,000 back-to-back calls, the grid changing from call to call (phase flips, the bumper),
    # checked at the end.
    sizes = [2 * (1 + (k * 7919) % 60000) for k in range(1000)]
    outs = []
    for k, n in enumerate(sizes):
        res = data(seed(call + k, -1), n) if k % 3 == 0 else None
        outs.append((A.allreduce(data(seed(call + k, rank), n), buf, residual=res), res))
    torch.cuda.synchronize()
    A.check(buf)
    for k, (n, (got, res)) in enumerate(zip(sizes, outs)):
        same_bits(got, reference(call + k, n, world, res), f"back-to-back call {k} (n={n})")
    call += len(sizes)

    # One rank late by milliseconds.
    dist.barrier()
    if rank == world - 1:
        time.sleep(0.05)
    got = A.allreduce(data(seed(call, rank), 4096), buf)
    torch.cuda.synchronize()
    A.check(buf)
    same_bits(got, reference(call, 4096, world, None), "late rank")
    call += 1

    # A rank with a wrong size: every rank's check raises (no hang), and after a reset the
    # workspace works again.
    dist.barrier()
    n = 8192 if rank != world - 1 else 4096
    A.allreduce(data(seed(call, rank), n), buf)
    torch.cuda.synchronize()
    try:
        A.check(buf)
    except CollectiveError as e:
        assert "size" in str(e) or "timed out" in str(e), str(e)
    else:
        raise AssertionError("a rank passed a wrong size and check() raised nothing")
    A.reset(buf)
    call += 1
    got = A.allreduce(data(seed(call, rank), 4096), buf)
    torch.cuda.synchronize()
    A.check(buf)
    same_bits(got, reference(call, 4096, world, None), "after the reset")

    dist.barrier()
    buf.close()
    dist.destroy_process_group()
    print(f"rank {rank}: OK", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
