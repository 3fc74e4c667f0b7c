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
NVLink. Messages from 8 KB to 1 MB (a decode step's all-reduce): a step's programs must all
be resident at once, since each rank's programs wait for the others' (world x programs <= the
GPU's resident programs). Usage: ``python bench/collectives/run.py [--out DIR]``.
"""

import argparse
import os
import sys
import types

import torch

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]

from bench.common import isolated_time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402

WORLDS = (2, 4, 8)
MESSAGE_BYTES = (8 << 10, 64 << 10, 256 << 10, 1 << 20)


def emulated_world(world, n):
    """(workspaces as the wrapper sees them, the inputs, the expected sums)."""
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


def step_fn(spaces, xs, outs):
    streams = [torch.cuda.Stream() for _ in spaces]

    def step(_):
        main = torch.cuda.current_stream()
        for s, ws, x, out in zip(streams, spaces, xs, outs):
            s.wait_stream(main)
            with torch.cuda.stream(s):
                A.allreduce(x, ws, out=out)
        for s in streams:
            main.wait_stream(s)
    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows, report = [], []
    for world in WORLDS:
        for msg in MESSAGE_BYTES:
            n = msg // 2
            spaces, xs, want = emulated_world(world, n)
            outs = [torch.empty_like(x) for x in xs]
            step = step_fn(spaces, xs, outs)
            step(None)
            torch.cuda.synchronize()
            for r, out in enumerate(outs):
                if not torch.equal(out.view(torch.int16), want.view(torch.int16)):
                    raise SystemExit(f"world {world}, {msg} B: rank {r}'s sum is wrong")
                status = int(spaces[r].buffer.view(torch.int32)[A.STATUS_WORD])
                if status:
                    raise SystemExit(f"world {world}, {msg} B: rank {r}'s status is {status}")
            us = 1e3 * isolated_time_ms(step, [None])
            moved = world * world * msg
            src = torch.empty(moved // 2, device="cuda", dtype=torch.bfloat16)
            dst = torch.empty_like(src)
            copy_us = 1e3 * isolated_time_ms(lambda _: dst.copy_(src), [None])
            stacked = torch.stack(xs)
            sum_us = 1e3 * isolated_time_ms(lambda _: stacked.sum(0, dtype=torch.float32),
                                            [None])
            rows.append(f"| {world} | {msg >> 10} KB | {us:.1f} | {copy_us:.1f} | "
                        f"{us / copy_us:.1f}x | {sum_us:.1f} |")
            report.append({"world": world, "message_bytes": msg, "step_us": us,
                           "copy_us": copy_us, "sum_us": sum_us})
            print(rows[-1], flush=True)
    text = "\n".join([
        f"# One-shot all-reduce, world emulated on one {torch.cuda.get_device_name()}",
        "",
        "Command: `python bench/collectives/run.py`. A step: every rank's call at once, each on",
        "its own stream; isolated (L2 flushed), median of 31.",
        "",
        "| world | message | step (us) | local copy of world^2 x message (us) | step / copy | "
        "torch.sum of the world inputs (us) |",
        "|---|---|---|---|---|---|",
        *rows, ""])
    print(text)
    if args.out:
        write_results(args.out, "bench_collectives", text, report)


if __name__ == "__main__":
    main()
