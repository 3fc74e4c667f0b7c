"""The all-reduces' protocol cost on ONE GPU, world emulated in one process.

Every rank's workspace is a buffer of this process and one peer table lists them all; a step
launches every rank's call on its own stream at once, as ``world`` GPUs would run them, and
is timed as one isolated launch (L2 flushed, CUDA events, median: ``bench.common``). The
result of each step is checked against the fp32 sum first. Against it, in the same run:

- a local copy of the bytes a step writes into the workspaces (world^2 x the message) by
  ``torch.Tensor.copy_`` (the protocol's data movement with no protocol: its ceiling);
- ``torch.sum`` over the world inputs stacked (the reduction alone, one kernel).

The emulation shares one GPU's memory system among the ranks (a real world has one each), so
the step measures the protocol's overhead -- polls, markers, re-arming, counters -- not
NVLink. Messages from 8 KB to 4 MB (a decode step's all-reduce) by the one-shot and the
two-shot form, and the + RMSNorm row form at 1 to 64 rows of 3,584: a step's programs must
all be resident at once, since each rank's programs wait for the others' (world x programs
<= the GPU's resident programs; larger cases are listed as skipped). Then the fused GEMMs
(gemm_allreduce, gemm_allgather at K3's TP shapes) against the unfused GEMM + collective and
the GEMM alone.
Usage: ``python bench/collectives/run.py [--out DIR]``.
"""

import argparse
import os
import sys
import types

import torch

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]

from bench.common import graph_time_ms, isolated_time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402
from kernels_dsl.kimi_k3 import gemm_collectives as G  # noqa: E402

WORLDS = (2, 4, 8)
MESSAGE_BYTES = (8 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20)
#: The flat forms: name -> the settings that force it.
FLAT_FORMS = {"one-shot": A.Settings(two_shot_bytes=1 << 62),
              "two-shot": A.Settings(two_shot_bytes=0)}
#: Rows of the + RMSNorm form (K3's latent width; 1 row is one decode token's latent).
NORM_ROWS = (1, 8, 64)


def emulated_world(world, n):
    """(workspaces as the wrappers see them, the inputs, the expected sums)."""
    nbytes = A.workspace_bytes(world, n)
    buffers = [torch.zeros(nbytes, device="cuda", dtype=torch.uint8) for _ in range(world)]
    table = torch.tensor([b.data_ptr() for b in buffers], device="cuda", dtype=torch.int64)
    spaces = [types.SimpleNamespace(rank=r, world=world, nbytes=nbytes, peer_table=table,
                                    buffer=buffers[r]) for r in range(world)]
    xs = [torch.randn(n, device="cuda").bfloat16() for _ in range(world)]
    acc = torch.zeros(n, device="cuda")
    for x in xs:
        acc += x.float()
    return spaces, xs, acc.bfloat16()


def step_fn(spaces, call):
    """One step: ``call(rank)`` of every rank at once, each on its own stream."""
    streams = [torch.cuda.Stream() for _ in spaces]

    def step(_):
        main = torch.cuda.current_stream()
        for r, s in enumerate(streams):
            s.wait_stream(main)
            with torch.cuda.stream(s):
                call(r)
        for s in streams:
            main.wait_stream(s)
    return step


def resident(programs_per_sm):
    return torch.cuda.get_device_properties(0).multi_processor_count * programs_per_sm


def measure(world, form, size):
    """(step us isolated, step us back to back in a CUDA graph, bytes of one rank's message)
    of one case, after checking its result; None where the world's programs do not all fit
    the GPU at once (the emulation needs them resident together)."""
    if form in FLAT_FORMS:
        n = size // 2
        words = n // 2 if form == "one-shot" else -(-n // (2 * world) // 16) * 16
        programs, per_sm = -(-words // A.SETTINGS.block), A.PROGRAMS_PER_SM
    else:
        n = size * A.NORM_DIM
        programs, per_sm = min(size, A.MAX_PROGRAMS), A.ROWS_PROGRAMS_PER_SM
    if world * programs > resident(per_sm):
        return None
    spaces, xs, want = emulated_world(world, n)
    outs = [torch.empty_like(x) for x in xs]
    if form in FLAT_FORMS:
        def call(r):
            A.allreduce(xs[r], spaces[r], out=outs[r], settings=FLAT_FORMS[form])
    else:
        w = torch.randn(A.NORM_DIM, device="cuda").bfloat16()
        normed = [torch.empty(size, A.NORM_DIM, device="cuda", dtype=torch.bfloat16)
                  for _ in xs]

        def call(r):
            A.allreduce_rmsnorm(xs[r].view(size, A.NORM_DIM), spaces[r], w,
                                out=outs[r].view(size, A.NORM_DIM), norm_out=normed[r])
    step = step_fn(spaces, call)
    step(None)
    torch.cuda.synchronize()
    for r, out in enumerate(outs):
        status = int(spaces[r].buffer.view(torch.int32)[A.STATUS_WORD])
        if status:
            raise SystemExit(f"world {world}, {form} {size}: rank {r}'s status is {status}")
        if not torch.equal(out.view(torch.int16), want.view(torch.int16)):
            raise SystemExit(f"world {world}, {form} {size}: rank {r}'s sum is wrong")
    return (1e3 * isolated_time_ms(step, [None]), 1e3 * graph_time_ms(step, [None]), 2 * n)


#: The fused GEMMs at K3's TP shapes: o_proj (K = 1,536 at TP8, N = 7,168) + all-reduce, and
#: the GEMM + all-gather (K = 3,584, N = 7,168), over decode's M.
GEMM_CASES = [("gemm_allreduce", m, 1536) for m in (1, 16, 64, 256)] + \
    [("gemm_allgather", m, 3584) for m in (1, 16, 64)]
GEMM_N = 7168


def measure_gemm(world, op, m, k, settings=G.SETTINGS):
    """(fused step us, unfused step us, GEMM-alone step us), each isolated, of one case of
    the fused GEMMs after checking the fused result (within a bf16 rounding of the torch
    reference: the partials' fp32 accumulation order differs); None where the programs do not
    all fit the GPU at once. Unfused: torch.matmul (cuBLAS), then kiln's push all-reduce, or
    the all-gather and the bias add by torch; alone: the ranks' torch.matmul only."""
    n = GEMM_N
    if op == "gemm_allreduce":
        rows = G.cell_rows(m)
        _, tile = G._tile(op, settings.allreduce_tiles, rows)
        programs = -(-rows // tile.bm) * -(-n // tile.bn)
    else:
        _, tile = G._tile(op, settings.allgather_tiles, m)
        programs = -(-m // tile.bm) * -(-(n // world) // tile.bn)
    if world * programs > resident(G.PROGRAMS_PER_SM):
        return None
    spaces, _, _ = emulated_world(world, max(G.workspace_elements(m, n, world, settings),
                                             2 * m * n))
    xs = [(0.1 * torch.randn(m, k, device="cuda")).bfloat16() for _ in range(world)]
    if op == "gemm_allreduce":
        ws = [(0.1 * torch.randn(n, k, device="cuda")).bfloat16() for _ in range(world)]
        outs = [torch.empty(G.cell_rows(m), n, device="cuda", dtype=torch.bfloat16)
                for _ in xs]
        parts = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in xs]
        want = sum(torch.matmul(x, w.t()).float() for x, w in zip(xs, ws)).bfloat16()

        def fused(r):
            G.gemm_allreduce(xs[r], ws[r], spaces[r], out=outs[r], settings=settings)

        def unfused(r):
            torch.matmul(xs[r], ws[r].t(), out=parts[r])
            A.allreduce(parts[r], spaces[r])

        def alone(r):
            torch.matmul(xs[r], ws[r].t(), out=parts[r])
    else:
        xs = [xs[0]] * world
        w = (0.1 * torch.randn(n, k, device="cuda")).bfloat16()
        b = torch.randn(n, device="cuda").bfloat16()
        outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in xs]
        part = n // world
        parts = [torch.empty(m, part, device="cuda", dtype=torch.bfloat16) for _ in xs]
        want = ((xs[0].float() @ w.float().t()).bfloat16().float() + b.float()).bfloat16()

        def fused(r):
            G.gemm_allgather(xs[r], w, b, spaces[r], out=outs[r], settings=settings)

        def unfused(r):
            torch.matmul(xs[r], w[r * part:(r + 1) * part].t(), out=parts[r])
            gathered = A.sp_all_gather(parts[r], spaces[r])
            torch.add(gathered.view(world, m, part).permute(1, 0, 2).reshape(m, n), b,
                      out=outs[r])

        def alone(r):
            torch.matmul(xs[r], w[r * part:(r + 1) * part].t(), out=parts[r])
    step = step_fn(spaces, fused)
    step(None)
    torch.cuda.synchronize()
    for r, out in enumerate(outs):
        status = int(spaces[r].buffer.view(torch.int32)[A.STATUS_WORD])
        if status:
            raise SystemExit(f"world {world}, {op} M={m}: rank {r}'s status is {status}")
        torch.testing.assert_close(out[:m].float(), want.float(), rtol=2e-2, atol=2e-2)
    return tuple(1e3 * isolated_time_ms(step_fn(spaces, f), [None])
                 for f in (fused, unfused, alone))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows, report = [], []
    cases = [(f, m) for m in MESSAGE_BYTES for f in FLAT_FORMS] + \
        [("rmsnorm", r) for r in NORM_ROWS]
    for world in WORLDS:
        for form, size in cases:
            what = f"{size >> 10} KB" if form in FLAT_FORMS else f"{size} x {A.NORM_DIM}"
            got = measure(world, form, size)
            if got is None:
                rows.append(f"| {world} | {form} | {what} | (programs exceed the resident "
                            f"ones) | | | | |")
                print(rows[-1], flush=True)
                continue
            us, graph_us, msg = got
            moved = world * world * msg
            src = torch.empty(moved // 2, device="cuda", dtype=torch.bfloat16)
            dst = torch.empty_like(src)
            copy_us = 1e3 * isolated_time_ms(lambda _: dst.copy_(src), [None])
            stacked = torch.randn(world, msg // 2, device="cuda").bfloat16()
            sum_us = 1e3 * isolated_time_ms(lambda _: stacked.sum(0, dtype=torch.float32),
                                            [None])
            rows.append(f"| {world} | {form} | {what} | {us:.1f} | {graph_us:.1f} | "
                        f"{copy_us:.1f} | {us / copy_us:.1f}x | {sum_us:.1f} |")
            report.append({"world": world, "form": form, "size": size, "message_bytes": msg,
                           "step_us": us, "graph_step_us": graph_us, "copy_us": copy_us,
                           "sum_us": sum_us})
            print(rows[-1], flush=True)
    gemm_rows = []
    for world in WORLDS:
        for op, m, k in GEMM_CASES:
            got = measure_gemm(world, op, m, k)
            what = f"| {world} | {op} | {m} x {k} -> {GEMM_N} |"
            if got is None:
                gemm_rows.append(f"{what} (programs exceed the resident ones) | | | |")
            else:
                fused_us, unfused_us, alone_us = got
                gemm_rows.append(f"{what} {fused_us:.1f} | {unfused_us:.1f} | {alone_us:.1f} | "
                                 f"{unfused_us / fused_us:.2f}x |")
                report.append({"world": world, "form": op, "m": m, "k": k, "n": GEMM_N,
                               "fused_us": fused_us, "unfused_us": unfused_us,
                               "gemm_alone_us": alone_us})
            print(gemm_rows[-1], flush=True)
    text = "\n".join([
        f"# All-reduces, world emulated on one {torch.cuda.get_device_name()}",
        "",
        "Command: `python bench/collectives/run.py`. A step: every rank's call at once, each on",
        "its own stream; isolated (L2 flushed, median of 31), and back to back (20 steps in a",
        "CUDA graph, median of 15 replays). rmsnorm: `allreduce_rmsnorm` of rows x 3584 (every",
        "row normed).",
        "",
        "| world | form | message | step (us) | step, graph (us) | local copy of world^2 x "
        "message (us) | step / copy | torch.sum of the world inputs (us) |",
        "|---|---|---|---|---|---|---|---|",
        *rows, "",
        "GEMM + collective (isolated steps). Unfused: torch.matmul (cuBLAS), then kiln's push",
        "all-reduce (gemm_allreduce) or all-gather + torch's bias add (gemm_allgather); GEMM",
        "alone: the ranks' torch.matmul only.",
        "",
        "| world | op | M x K -> N | fused step (us) | unfused step (us) | GEMM alone (us) | "
        "unfused / fused |",
        "|---|---|---|---|---|---|---|",
        *gemm_rows, ""])
    print(text)
    if args.out:
        write_results(args.out, "bench_collectives", text, report)


if __name__ == "__main__":
    main()
