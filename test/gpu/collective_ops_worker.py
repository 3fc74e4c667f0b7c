"""One rank of the collective torch ops' test (test_collective_ops.py starts ``world`` of them
on one GPU): ``python collective_ops_worker.py RANK WORLD INIT_FILE``. Each op of
``kernels_dsl.kimi_k3.torch_ops`` (allreduce, sp_reduce_scatter, sp_all_gather,
allreduce_rmsnorm, finalize_push_norm, gemm_allreduce, gemm_allgather) against
allreduce_worker.py's references (bit-exact sums; the norm within a bf16 rounding; the GEMMs
on integer inputs, exact): called eagerly, under ``torch.compile(fullgraph=True)``
(inductor), and captured in a CUDA graph replayed several times (the phases flip on every
replay; fresh inputs copied into the captured inputs before each, the result checked after
each). Each mode starts with a ``compile_only`` warm-up (it launches nothing: the workspace's
phase counters do not move) and a barrier. Exit status 0 when every case passed."""

import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))

import allreduce_worker as R  # noqa: E402  (data, seed, references)

import kernels_dsl.kimi_k3.torch_ops as kops  # noqa: E402
from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402
from kiln.distributed import SymmetricBuffer  # noqa: E402

ROWS, TOKENS, EXPERTS, HIDDEN, FLAT = 37, 5, 80, 7168, 65536
REPLAYS = 5


def make_inputs(name, call, rank, world, w):
    """(the op's tensor arguments before the workspace, after it (+ kwargs), the reference)
    for ``call``: every rank derives every rank's inputs from the seeds."""
    if name == "allreduce":
        x = R.data(R.seed(call, rank), FLAT)
        res = R.data(R.seed(call, -1), FLAT)
        return (x,), (res,), (R.reference(call, FLAT, world, res),)
    if name == "sp_reduce_scatter":
        x = R.data(R.seed(call, rank), world * 3 * HIDDEN).view(world * 3, HIDDEN)
        res = R.data(R.seed(call, -1), 3 * HIDDEN).view(3, HIDDEN)
        acc = torch.zeros(3, HIDDEN, device="cuda")
        for r in range(world):
            xr = R.data(R.seed(call, r), world * 3 * HIDDEN).view(world * 3, HIDDEN)
            acc += xr[rank * 3:(rank + 1) * 3].float()
        return (x,), (res,), (((acc.bfloat16().float() + res.float()).bfloat16()),)
    if name == "sp_all_gather":
        x = R.data(R.seed(call, rank), 3 * HIDDEN).view(3, HIDDEN)
        want = torch.cat([R.data(R.seed(call, r), 3 * HIDDEN).view(3, HIDDEN)
                          for r in range(world)])
        words = want.view(torch.int32)
        words[words == A.NONZERO_MARKER] = 0
        return (x,), (), (want,)
    if name == "allreduce_rmsnorm":
        n = ROWS * A.NORM_DIM
        x = R.data(R.seed(call, rank), n).view(ROWS, A.NORM_DIM)
        res = R.data(R.seed(call, -1), n).view(ROWS, A.NORM_DIM)
        out, normed = R.rows_reference(call, ROWS, world, res, w, ROWS // 3)
        return (x,), (w, R.EPS, res, ROWS // 3), (out, normed)
    if name in ("gemm_allreduce", "gemm_allgather"):
        # integers in [-2, 2]: every product and sum exact in fp32, so the partials and their
        # bf16 rounding are the math's
        def ints(seed, *shape):
            g = torch.Generator(device="cuda").manual_seed(seed)
            return torch.randint(-2, 3, shape, generator=g, device="cuda").bfloat16()
        m, k, n = 9, 256, 1024
        if name == "gemm_allreduce":
            x, wt = ints(R.seed(call, rank), m, k), ints(R.seed(call, rank) + 1, n, k)
            acc = torch.zeros(16, n, device="cuda")  # cell 16: rows [9, 16) zero
            for r in range(world):
                acc[:m] += (ints(R.seed(call, r), m, k).float()
                            @ ints(R.seed(call, r) + 1, n, k).float().t()).bfloat16().float()
            return (x, wt), (), (acc.bfloat16(),)
        x, wt = ints(R.seed(call, -1), m, k), ints(R.seed(call, -2), n, k)
        b, c = R.data(R.seed(call, -3), n), R.data(R.seed(call, -4), m * n).view(m, n)
        want = ((x.float() @ wt.float().t()).bfloat16().float() + b.float()).bfloat16()
        return (x, wt, b), (c,), (((want.float() + c.float()).bfloat16()),)
    gemm2, ids, wts = R.finalize_inputs(call, rank, TOKENS, EXPERTS)
    res = R.data(R.seed(call, -1), TOKENS * A.NORM_DIM).view(TOKENS, A.NORM_DIM)
    acc = torch.zeros(TOKENS, A.NORM_DIM, device="cuda")
    for r in range(world):
        acc += R.finalize_local(*R.finalize_inputs(call, r, TOKENS, EXPERTS)).float()
    want = (acc.bfloat16().float() + res.float()).bfloat16()
    return (gemm2, ids, wts), (w, R.EPS, res), (want, R.rmsnorm(want, w))


def check(name, got, want, inputs, what):
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want), what
    for t in got:  # fresh tensors: never an input
        assert all(t.data_ptr() != i.data_ptr() for i in inputs if i.numel()), what
    R.same_bits(got[0].flatten(), want[0].flatten(), what)
    if len(want) == 2:
        R.close(got[1], want[1], what + " (norm)")


def counters(ws):
    return ws.workspace.view(torch.int32)[:A.MAX_PROGRAMS].clone()


def main(rank: int, world: int, init: str) -> None:
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    buf = SymmetricBuffer(A.workspace_bytes(world, max(R.MAX_ELEMENTS, FLAT * world)))
    ws = kops.symmetric_workspace(buf)
    w = R.data(R.seed(0, -2), A.NORM_DIM)
    call = 0
    for name in kops.COLLECTIVE_OPS:
        op = getattr(torch.ops.kiln, name)

        def run(pre, post, op=op):
            return op(*pre, *ws, *post)

        compiled = torch.compile(run, fullgraph=True)
        for mode in ("eager", "compiled", "graph"):
            call += 1
            pre, post, want = make_inputs(name, call, rank, world, w)
            fn = compiled if mode == "compiled" else run
            # the warm-up: compiles (JIT; torch.compile too) and launches nothing
            before = counters(ws)
            with A.compile_only():
                fn(pre, post)
            torch.cuda.synchronize()
            assert torch.equal(counters(ws), before), f"{name} {mode}: compile_only launched"
            dist.barrier()
            got = fn(pre, post)
            torch.cuda.synchronize()
            A.check(buf)
            check(name, got, want, pre + post[:1], f"{name} {mode} (first call)")
            if mode != "graph":
                call += 1
                pre2, post2, want = make_inputs(name, call, rank, world, w)
                got = fn(pre2, post2)  # a replayed plan / the compiled graph again
                torch.cuda.synchronize()
                A.check(buf)
                check(name, got, want, pre2 + post2[:1], f"{name} {mode} (second call)")
                continue
            # the CUDA graph: captured once (the eager call above recorded the op's plan),
            # replayed with fresh inputs copied into the captured ones
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static = fn(pre, post)
            for k in range(REPLAYS):
                call += 1
                pre2, post2, want = make_inputs(name, call, rank, world, w)
                for dst, src in zip(pre + post, pre2 + post2):
                    if isinstance(dst, torch.Tensor):
                        dst.copy_(src)
                dist.barrier()
                graph.replay()
                torch.cuda.synchronize()
                A.check(buf)
                check(name, static, want, pre + post[:1], f"{name} graph replay {k}")
            del graph
    dist.barrier()
    buf.close()
    dist.destroy_process_group()
    print(f"rank {rank}: OK", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
