"""The fused GEMM collectives on ONE GPU (docs/kernels/collectives.md): world sizes 2, 4 and 8
as separate processes (CUDA IPC maps each process's workspace into the others), JIT and
bundle (``launch_mode``). Each rank (gemm_collectives_worker.py) checks gemm_allreduce (M in
every cell, the pad rows zero) and gemm_allgather (with and without c) bit for bit against the
math on small-integer inputs and within a bf16 rounding on normal ones, then 100 back-to-back
calls of both with changing M interleaved with the flat all-reduce on the same workspace.
Then a world of 2 emulated in this process (each rank on its own stream): no call may wait
out the poll timeout."""


import pytest

torch = pytest.importorskip("torch")

from ranks import run_ranks  # noqa: E402


@pytest.mark.parametrize("world", [2, 4, 8])
def test_gemm_collectives(launch_mode, world, tmp_path):
    run_ranks("gemm_collectives_worker.py", world, tmp_path)


def test_emulated_world_calls_keep_pace(launch_mode):
    """Both ranks of a world of 2 in this process, each on its own stream (the emulation of
    bench/collectives): 40 calls each of gemm_allgather at M = 1 (the 16 x 32 tile, [16, 16]
    words of which every warp holds a copy) and of gemm_allreduce, every call far under the
    5 s poll timeout, the status words clean, the last outputs right. (Without the barrier
    between `_take`'s polls and its re-arming, a warp polled a slot another warp had re-armed
    and waited out the timeout, unreported: 13 of 40 such calls took 5 s.)"""
    import time
    import types

    from kernels_dsl.kimi_k3 import allreduce as A
    from kernels_dsl.kimi_k3 import gemm_collectives as G

    world, m, n = 2, 1, 7168
    nbytes = A.workspace_bytes(world, G.workspace_elements(m, n, world))
    buffers = [torch.zeros(nbytes, device="cuda", dtype=torch.uint8) for _ in range(world)]
    table = torch.tensor([b.data_ptr() for b in buffers], device="cuda", dtype=torch.int64)
    spaces = [types.SimpleNamespace(rank=r, world=world, nbytes=nbytes, peer_table=table)
              for r in range(world)]
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (0.1 * torch.randn(m, 3584, generator=g, device="cuda")).bfloat16()
    w = (0.1 * torch.randn(n, 3584, generator=g, device="cuda")).bfloat16()
    b = torch.randn(n, generator=g, device="cuda").bfloat16()
    xs = [(0.1 * torch.randn(m, 1536, generator=g, device="cuda")).bfloat16() for _ in spaces]
    ws = [(0.1 * torch.randn(n, 1536, generator=g, device="cuda")).bfloat16() for _ in spaces]
    gathered = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in spaces]
    reduced = [torch.empty(G.cell_rows(m), n, device="cuda", dtype=torch.bfloat16)
               for _ in spaces]
    calls = {
        "gemm_allgather": lambda r: G.gemm_allgather(x, w, b, spaces[r], out=gathered[r]),
        "gemm_allreduce": lambda r: G.gemm_allreduce(xs[r], ws[r], spaces[r], out=reduced[r]),
    }
    streams = [torch.cuda.Stream() for _ in spaces]
    for op, call in calls.items():
        with G.compile_only():
            call(0)
        seconds = []
        for _ in range(40):
            t0 = time.perf_counter()
            for r, s in enumerate(streams):
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    call(r)
            torch.cuda.synchronize()
            seconds.append(time.perf_counter() - t0)
        status = [int(bf.view(torch.int32)[A.STATUS_WORD]) for bf in buffers]
        assert status == [0, 0], (op, status)
        assert max(seconds) < 1.0, (op, [round(t, 3) for t in seconds])
    want = ((x.float() @ w.float().t()).bfloat16().float() + b.float()).bfloat16()
    for out in gathered:
        torch.testing.assert_close(out.float(), want.float(), atol=2e-2, rtol=2e-2)
    want = sum((xr.float() @ wr.float().t()).bfloat16().float() for xr, wr in zip(xs, ws))
    for out in reduced:
        torch.testing.assert_close(out[:m].float(), want.bfloat16().float(), atol=2e-2,
                                   rtol=2e-2)
        assert torch.all(out[m:] == 0)
