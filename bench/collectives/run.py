"""The one-shot all-reduce's protocol cost on ONE GPU, world emulated in one process.

Every rank's workspace is a buffer of this process and one peer table lists them all; a step
launches every rank's call on its own stream at once, as ``world`` GPUs would run them, and
is timed as one isolated launch (L2 flushed, CUDA events, median: ``bench.common``). The
result of each step is checked against the fp32 sum first. Against it, in the same run:

- a local copy of the bytes a step writes into the workspaces (world^2 x the message) by
  ``torch.Tensor.copy_`` (the protocol's data movement with no protocol: its ceiling);
- ``torch.sum`` over the world inputs stacked (the reduction alone, one kernel).

The emulation shares one GPU's memory system among the ranks (a real world has one each), so
the step measures the protocol's overhead -- polls, markers, re-arming, counters -- not
NVLink. Messages from 8 KB to 1 MB (a decode step's all-reduce), and the + RMSNorm row form
at 1 to 64 rows of 3,584: a step's programs must all be resident at once, since each rank's
programs wait for the others' (world x programs <= the GPU's resident programs; larger cases
are listed as skipped). Usage: ``python bench/collectives/run.py [--out DIR]``.
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

WORLDS = (2, 4, 8)
MESSAGE_BYTES = (8 << 10, 64 << 10, 256 << 10, 1 << 20)
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
    if form == "flat":
        n = size // 2
        programs, per_sm = -(-n // (2 * A.SETTINGS.block)), A.PROGRAMS_PER_SM
    else:
        n = size * A.NORM_DIM
        programs, per_sm = min(size, A.MAX_PROGRAMS), A.ROWS_PROGRAMS_PER_SM
    if world * programs > resident(per_sm):
        return None
    spaces, xs, want = emulated_world(world, n)
    outs = [torch.empty_like(x) for x in xs]
    if form == "flat":
        def call(r):
            A.allreduce(xs[r], spaces[r], out=outs[r])
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows, report = [], []
    cases = [("flat", m) for m in MESSAGE_BYTES] + [("rmsnorm", r) for r in NORM_ROWS]
    for world in WORLDS:
        for form, size in cases:
            what = f"{size >> 10} KB" if form == "flat" else f"{size} x {A.NORM_DIM}"
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
    text = "\n".join([
        f"# One-shot all-reduce, world emulated on one {torch.cuda.get_device_name()}",
        "",
        "Command: `python bench/collectives/run.py`. A step: every rank's call at once, each on",
        "its own stream; isolated (L2 flushed, median of 31), and back to back (20 steps in a",
        "CUDA graph, median of 15 replays). rmsnorm: `allreduce_rmsnorm` of rows x 3584 (every",
        "row normed).",
        "",
        "| world | form | message | step (us) | step, graph (us) | local copy of world^2 x "
        "message (us) | step / copy | torch.sum of the world inputs (us) |",
        "|---|---|---|---|---|---|---|---|",
        *rows, ""])
    print(text)
    if args.out:
        write_results(args.out, "bench_collectives", text, report)


if __name__ == "__main__":
    main()
