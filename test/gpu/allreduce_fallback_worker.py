"""One rank of the collectives' NCCL-fallback test (test_allreduce_fallback.py starts
``world`` of them on ONE GPU, over gloo, which takes several ranks on one device where NCCL
does not): ``python allreduce_fallback_worker.py RANK WORLD INIT_FILE VIA``. The workspace is
``allreduce_fallback.workspace(..., force_fallback=True)``; VIA ``fallback`` calls
allreduce_fallback's functions, ``allreduce`` allreduce.py's wrappers (their dispatch on
``workspace.peer_mapped``).

Every rank derives every rank's inputs from seeds and checks the whole result against the
push kernels' reference (the fp32 sum in rank order rounded to bf16, + the residual in bf16
arithmetic; the RMSNorm in fp32; the MoE finalize in fp32 in k order): the backend sums in
its own order, so a result may differ from it by the rounding of the sum (1 bf16 ulp of the
sum); with 2 ranks (one addition, commutative) it is bit for bit. Every rank's result must
be the same bits. The all-gather is bit for bit, the marker word (-0.0, +0.0) included.
Through the wrappers, also gemm_allreduce (the partials by torch.matmul, summed; pad rows
zero) and gemm_allgather (bit for bit against the slices' products, + b, + c).
Exit status 0 when every case passed; a failure prints its traceback."""

import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))

from allreduce_worker import (  # noqa: E402  (the inputs and references)
    EPS,
    SP_CASES,
    close,
    data,
    finalize_inputs,
    finalize_local,
    reduce_scatter_case,
    rmsnorm,
    seed,
)

from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402
from kernels_dsl.kimi_k3 import allreduce_fallback as F  # noqa: E402
from kernels_dsl.kimi_k3 import gemm_collectives as G  # noqa: E402

D = A.NORM_DIM


def ulp(t: torch.Tensor) -> torch.Tensor:
    """The spacing of bf16 at |t| (8 significant bits), at least the smallest normal's."""
    a = t.float().abs().clamp(min=2.0**-126)
    return torch.exp2(torch.floor(torch.log2(a)) - 7)


def fp32_sum(call: int, n: int, world: int) -> torch.Tensor:
    acc = torch.zeros(n, device="cuda", dtype=torch.float32)
    for r in range(world):
        acc += data(seed(call, r), n).float()
    return acc


def expect(got: torch.Tensor, s: torch.Tensor, res, world: int, what: str) -> None:
    """``got`` is the push kernels' result for the fp32 sum ``s`` (rank order) and ``res``:
    bit for bit with 2 ranks; otherwise within the sum's rounding (1 bf16 ulp of the sum,
    plus the residual add's own rounding)."""
    want = s.bfloat16()
    if res is not None:
        want = (want.float() + res.float()).bfloat16()
    got, want = got.flatten(), want.flatten()
    if world == 2:
        bad = got.view(torch.int16) != want.view(torch.int16)
    else:
        tol = ulp(s.flatten()) + (ulp(want) if res is not None else 0)
        bad = (got.float() - want.float()).abs() > tol
    if bool(bad.any()):
        idx = bad.nonzero()[:4].flatten().tolist()
        raise AssertionError(f"{what}: {int(bad.sum())} elements off, at {idx}: got "
                             f"{got[idx].tolist()}, want {want[idx].tolist()}")


def same_on_every_rank(t: torch.Tensor, what: str) -> None:
    """Every rank's ``t`` has the same bits (gathered as bytes over gloo)."""
    mine = t.contiguous().flatten().view(torch.uint8).cpu()
    every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    if not all(torch.equal(e, mine) for e in every):
        raise AssertionError(f"{what}: the ranks' results differ")










def main(rank: int, world: int, init: str, via: str) -> None:
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    ops = A if via == "allreduce" else F
    ws = F.workspace(A.workspace_bytes(world, 1 << 20), force_fallback=True)
    assert isinstance(ws, F.ProcessGroupWorkspace) and not ws.peer_mapped
    assert (ws.rank, ws.world) == (rank, world)

    def warm(fn, *args, **kwargs):
        """Compile (JIT) or load (bundle) first: no collective runs inside compile_only."""
        with A.compile_only():
            fn(*args, **kwargs)
        dist.barrier()
        return fn(*args, **kwargs)

    call = 0
    # The flat all-reduce: sizes over one to many epilogue programs, odd multiples of the
    # vector width (the generic kernel in the bundle), in place and into out, +- residual.
    for n, with_res, in_place in [(2, False, True), (6, True, True), (2048, False, False),
                                  (2050, True, True), (65536, True, False),
                                  (1 << 21, False, True), (3 << 21, True, False)]:
        x = data(seed(call, rank), n)
        res = data(seed(call, -1), n) if with_res else None
        out = None if in_place else torch.empty_like(x)
        got = warm(ops.allreduce, x, ws, residual=res, out=out)
        assert (got is x) == in_place
        torch.cuda.synchronize()
        ops.check(ws)
        what = f"allreduce n={n} residual={with_res}"
        expect(got, fp32_sum(call, n, world), res, world, what)
        same_on_every_rank(got, what)
        call += 1

    # Back-to-back calls of changing sizes, checked at the end.
    sizes = [2 * (1 + (k * 7919) % 60000) for k in range(100)]
    outs = []
    for k, n in enumerate(sizes):
        res = data(seed(call + k, -1), n) if k % 3 == 0 else None
        outs.append((warm(ops.allreduce, data(seed(call + k, rank), n), ws, residual=res), res))
    torch.cuda.synchronize()
    for k, (n, (got, res)) in enumerate(zip(sizes, outs)):
        expect(got, fp32_sum(call + k, n, world), res, world, f"back-to-back {k} (n={n})")
    call += len(sizes)

    # The row form: all-reduce + RMSNorm of rows of 3,584 (norm_rows below the rows), and a
    # width the bundle does not hold (JIT only).
    w = data(seed(0, -2), D)
    for rows, norm_rows, with_res in [(1, 1, False), (3, 1, True), (37, 37, False),
                                      (1025, 300, True)]:
        n = rows * D
        x = data(seed(call, rank), n).view(rows, D)
        res = data(seed(call, -1), n).view(rows, D) if with_res else None
        out, normed = warm(ops.allreduce_rmsnorm, x, ws, w, EPS, residual=res,
                           norm_rows=norm_rows)
        assert out is x and normed.shape == (norm_rows, D)
        torch.cuda.synchronize()
        what = f"allreduce_rmsnorm rows={rows} norm_rows={norm_rows} residual={with_res}"
        expect(out, fp32_sum(call, n, world), None if res is None else res.flatten(), world,
               what)
        close(normed, rmsnorm(out[:norm_rows], w), what)  # the norm of the rows it wrote
        same_on_every_rank(torch.cat([out.flatten(), normed.flatten()]), what)
        call += 1

    # The MoE finalize, then the all-reduce and the norm of every row.
    for tokens, experts, with_res in [(1, 16, False), (5, 80, True), (512, 1024, False)]:
        gemm2, ids, wts = finalize_inputs(call, rank, tokens, experts)
        res = data(seed(call, -1), tokens * D).view(tokens, D) if with_res else None
        out, normed = warm(ops.finalize_push_norm, gemm2, ids, wts, ws, w, EPS, residual=res)
        torch.cuda.synchronize()
        acc = torch.zeros(tokens, D, device="cuda")
        for r in range(world):
            acc += finalize_local(*finalize_inputs(call, r, tokens, experts)).float()
        what = f"finalize_push_norm tokens={tokens} residual={with_res}"
        expect(out, acc.flatten(), None if res is None else res.flatten(), world, what)
        close(normed, rmsnorm(out, w), what)
        same_on_every_rank(out, what)
        call += 1

    # The sequence-parallel reduce-scatter (residual local or global) and all-gather (the
    # marker word (-0.0, +0.0) arrives unchanged).
    for rows, width, res_kind in SP_CASES:
        call += 1
        x, res, acc, mine = reduce_scatter_case(call, rank, world, rows, width, res_kind)
        got = warm(ops.sp_reduce_scatter, x, ws, residual=res)
        torch.cuda.synchronize()
        expect(got, acc.flatten(), None if mine is None else mine.flatten(), world,
               f"sp_reduce_scatter rows={rows} width={width} residual={res_kind}")

        call += 1
        x = data(seed(call, rank), rows * width).view(rows, width)
        x.view(torch.int32)[0, 0] = A.NONZERO_MARKER
        got = warm(ops.sp_all_gather, x, ws)
        torch.cuda.synchronize()
        want = torch.cat([data(seed(call, r), rows * width).view(rows, width)
                          for r in range(world)])
        want.view(torch.int32)[::rows, 0] = A.NONZERO_MARKER
        if not torch.equal(got.view(torch.int16), want.view(torch.int16)):
            raise AssertionError(f"sp_all_gather rows={rows} width={width}: differs")

    # The GEMM collectives through their wrappers (gemm_collectives.py): the GEMM by torch
    # (bf16 out: the partial rounded), then the fallback's all-reduce / all-gather.
    if via == "allreduce":
        for m, k, n in [(3, 256, 1024), (64, 512, 7168)]:
            call += 1
            g = torch.Generator(device="cuda").manual_seed(seed(call, rank))
            x = torch.randn(m, k, generator=g, device="cuda").bfloat16()
            wr = torch.randn(n, k, generator=g, device="cuda").bfloat16()
            out = torch.full((G.cell_rows(m), n), float("nan"), device="cuda",
                             dtype=torch.bfloat16)
            warm(G.gemm_allreduce, x, wr, ws, out=out)
            torch.cuda.synchronize()
            acc = torch.zeros(m, n, device="cuda")
            for r in range(world):
                g = torch.Generator(device="cuda").manual_seed(seed(call, r))
                xr = torch.randn(m, k, generator=g, device="cuda").bfloat16()
                acc += torch.matmul(xr, torch.randn(n, k, generator=g, device="cuda")
                                    .bfloat16().t()).float()
            what = f"gemm_allreduce m={m} k={k} n={n}"
            expect(out[:m], acc.flatten(), None, world, what)
            assert bool((out[m:] == 0).all()), f"{what}: pad rows not zero"

            b = data(seed(call, -1), n)
            c = data(seed(call, -2), m * n).view(m, n)
            common = torch.Generator(device="cuda").manual_seed(seed(call, -3))
            xs = torch.randn(m, k, generator=common, device="cuda").bfloat16()
            w_all = torch.randn(n, k, generator=common, device="cuda").bfloat16()
            got = warm(G.gemm_allgather, xs, w_all, b, ws, c=c)
            torch.cuda.synchronize()
            part = n // world
            want = torch.cat([torch.matmul(xs, w_all[r * part:(r + 1) * part].t())
                              for r in range(world)], dim=1)
            want = ((want.float() + b.float()).bfloat16().float() + c.float()).bfloat16()
            if not torch.equal(got.view(torch.int16), want.view(torch.int16)):
                raise AssertionError(f"gemm_allgather m={m} k={k} n={n}: differs")

    # check and reset have their natural meaning (nothing latched; meet), and the workspace
    # keeps working.
    ops.check(ws)
    ops.reset(ws)
    got = ops.allreduce(data(seed(call, rank), 4096), ws)
    torch.cuda.synchronize()
    expect(got, fp32_sum(call, 4096, world), None, world, "after the reset")

    dist.barrier()
    ws.close()
    dist.destroy_process_group()
    print(f"rank {rank}: OK", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
