"""One rank of the fused GEMM collectives' test (test_gemm_collectives.py starts ``world`` of
them on one GPU): ``python gemm_collectives_worker.py RANK WORLD INIT_FILE``. Every rank
derives every rank's inputs from seeds and checks the whole result against references written
from the math:

    gemm_allreduce   out[:M] = bf16( sum_r f32( bf16( f32(x_r) @ f32(W_r)^T ) ) )   (rank order)
                     out[M:cell] = 0
    gemm_allgather   out = bf16( bf16( bf16(f32(x) @ f32(W)^T) + b ) (+ c) )

bit for bit where the inputs are small integers (every product and partial sum is exact in
fp32, so the order of the tensor cores' sums does not matter) and within a bf16 rounding for
normal inputs. torch.distributed (gloo) exchanges the workspace handles and keeps the ranks in
step between cases. Exit status 0 when every case passed; a failure prints its traceback."""

import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))

from allreduce_worker import warm  # noqa: E402

from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402
from kernels_dsl.kimi_k3 import gemm_collectives as G  # noqa: E402
from kiln.distributed import SymmetricBuffer  # noqa: E402

N = 7168
#: o_proj's K at TP 8 (96 / 8 heads x 128), and the all-gather's (K3's latent).
K_AR = 1536
K_AG = 3584
#: The all-reduces interleaved below move up to this many bf16.
FLAT_MAX = 1 << 16


def inputs(seed: int, shape, exact: bool) -> torch.Tensor:
    """bf16 ``shape``: integers in [-2, 2] (``exact``) or normal values scaled so the sums
    stay O(1)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    if exact:
        return torch.randint(-2, 3, shape, generator=g, device="cuda").bfloat16()
    return (torch.randn(shape, generator=g, device="cuda") * 0.05).bfloat16()


def seed(call: int, rank: int, what: int) -> int:
    return call * 1009 + rank * 31 + what + 17


def partial(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (x.float() @ w.float().T).bfloat16()


def ar_inputs(call: int, rank: int, m: int, k: int, exact: bool):
    return inputs(seed(call, rank, 0), (m, k), exact), inputs(seed(call, rank, 1), (N, k), exact)


def ar_reference(call: int, world: int, m: int, k: int, exact: bool) -> torch.Tensor:
    acc = torch.zeros(m, N, device="cuda")
    for r in range(world):
        acc += partial(*ar_inputs(call, r, m, k, exact)).float()
    return acc.bfloat16()


def ag_inputs(call: int, m: int, exact: bool, with_c: bool):
    """x, W, b (and c): the same on every rank (seeded without the rank)."""
    x = inputs(seed(call, -1, 0), (m, K_AG), exact)
    w = inputs(seed(call, -1, 1), (N, K_AG), exact)
    b = inputs(seed(call, -1, 2), (N,), exact)
    c = inputs(seed(call, -1, 3), (m, N), exact) if with_c else None
    return x, w, b, c


def ag_reference(x, w, b, c) -> torch.Tensor:
    out = (partial(x, w).float() + b.float()).bfloat16()
    return out if c is None else (out.float() + c.float()).bfloat16()


def same_bits(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    if not torch.equal(got.view(torch.int16), want.view(torch.int16)):
        bad = (got.view(torch.int16) != want.view(torch.int16)).nonzero()[:4].tolist()
        raise AssertionError(f"{what}: differs at {bad}: got "
                             f"{[got[tuple(i)].item() for i in bad]}, want "
                             f"{[want[tuple(i)].item() for i in bad]}")


def close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """Within about a bf16 rounding of the partial (the tensor cores sum in another order, so
    a partial may round to the neighbouring bf16) and of the result."""
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2, msg=what)


def main(rank: int, world: int, init: str) -> None:
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    elements = max(G.workspace_elements(512, N, world), FLAT_MAX)
    buf = SymmetricBuffer(A.workspace_bytes(world, elements))
    assert (buf.rank, buf.world) == (rank, world)
    call = 0

    # gemm_allreduce over M in every cell (the pad rows zero: out starts as NaN), exact and
    # normal inputs, out given and allocated.
    for m, exact in [(1, True), (7, True), (8, False), (9, True), (100, False), (100, True),
                     (512, True), (512, False), (33, False)]:
        x, w = ar_inputs(call, rank, m, K_AR, exact)
        cell = G.cell_rows(m)
        out = torch.full((cell, N), float("nan"), dtype=torch.bfloat16, device="cuda")
        got = warm(G.gemm_allreduce, x, w, buf, out=out if m != 33 else None)
        assert got.shape == (cell, N) and (m == 33 or got is out)
        torch.cuda.synchronize()
        A.check(buf)
        want = ar_reference(call, world, m, K_AR, exact)
        what = f"gemm_allreduce M={m} exact={exact}"
        (same_bits if exact else close)(got[:m], want, what)
        same_bits(got[m:], torch.zeros(cell - m, N, dtype=torch.bfloat16, device="cuda"),
                  f"{what}: the pad rows")
        call += 1

    # gemm_allgather over M (no padding), with and without c.
    for m, exact, with_c in [(1, True, False), (7, True, True), (9, False, False),
                             (100, True, True), (512, True, False), (512, False, True)]:
        x, w, b, c = ag_inputs(call, m, exact, with_c)
        got = warm(G.gemm_allgather, x, w, b, buf, c=c)
        assert got.shape == (m, N)
        torch.cuda.synchronize()
        A.check(buf)
        what = f"gemm_allgather M={m} exact={exact} c={with_c}"
        (same_bits if exact else close)(got, ag_reference(x, w, b, c), what)
        call += 1

    # 100 back-to-back calls, M changing from call to call, interleaved with all-reduces and
    # all-gathers of the GEMMs on the same workspace (one protocol: phases and the bumper keep
    # every counter in step across grids and kernels), checked at the end. Warmed first so
    # that nothing compiles inside the run.
    plan = []
    for k in range(100):
        kind = ("ar", "flat", "ag")[k % 3]
        m = 1 + (k * 97) % 512
        n = 2 * (1 + (k * 7919) % (FLAT_MAX // 2))
        plan.append((kind, m, n))
    for k, (kind, m, n) in enumerate(plan):
        if kind == "ar":
            x, w = ar_inputs(0, rank, m, K_AR, True)
            with G.compile_only():
                G.gemm_allreduce(x, w, buf)
        elif kind == "ag":
            x, w, b, cc = ag_inputs(0, m, True, k % 2 == 0)
            with G.compile_only():
                G.gemm_allgather(x, w, b, buf, c=cc)
        else:
            with A.compile_only():
                A.allreduce(inputs(0, (n,), True), buf)
    dist.barrier()
    outs = []
    for k, (kind, m, n) in enumerate(plan):
        c = call + k
        if kind == "ar":
            outs.append(G.gemm_allreduce(*ar_inputs(c, rank, m, K_AR, True), buf))
        elif kind == "ag":
            x, w, b, cc = ag_inputs(c, m, True, k % 2 == 0)
            outs.append(G.gemm_allgather(x, w, b, buf, c=cc))
        else:
            outs.append(A.allreduce(inputs(seed(c, rank, 0), (n,), True), buf))
    torch.cuda.synchronize()
    A.check(buf)
    for k, ((kind, m, n), got) in enumerate(zip(plan, outs)):
        c = call + k
        what = f"back-to-back call {k} ({kind}, M={m}, n={n})"
        if kind == "ar":
            same_bits(got[:m], ar_reference(c, world, m, K_AR, True), what)
            same_bits(got[m:], torch.zeros_like(got[m:]), what + ": the pad rows")
        elif kind == "ag":
            same_bits(got, ag_reference(*ag_inputs(c, m, True, k % 2 == 0)), what)
        else:
            acc = torch.zeros(n, device="cuda")
            for r in range(world):
                acc += inputs(seed(c, r, 0), (n,), True).float()
            same_bits(got, acc.bfloat16(), what)
    call += len(plan)

    dist.barrier()
    buf.close()
    dist.destroy_process_group()
    print(f"rank {rank}: OK", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
