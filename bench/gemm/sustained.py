"""The 8192^3 bf16 GEMM under the H200's power cap: each variant replayed back to back (a CUDA
graph of 20 calls) for 1.5 s before it is timed, the variants interleaved over three rounds,
the SM clock, the board power and the active throttle reasons sampled by nvidia-smi before
and after each timing. At this size every GEMM runs at the 700 W cap (throttle reason 0x4,
SW power cap) and the clock settles at 1.4-1.5 GHz, so a short timing from a cool start
(bench/gemm/run.py) favours whichever variant runs first; this one compares the variants at
the same, steady clock.

    python bench/gemm/sustained.py [NAME_PART ...]   # only the variants whose name has one
"""

import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from bench.common import capture_graph, replay_ms  # noqa: E402
from kernels_dsl.common.gemm import gemm_tma  # noqa: E402

S = 8192


def smi():
    return subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active",
         "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout.strip()


def main():
    torch.manual_seed(0)
    ins = []
    for _ in range(2):
        a = torch.randn(S, S, device="cuda").bfloat16()
        b = torch.randn(S, S, device="cuda").bfloat16()
        ins.append((a, b, b.T.contiguous(), torch.randn(S, device="cuda").bfloat16()))
    outs = [torch.empty(S, S, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    variants = {
        "kiln 128x256 3 stages": lambda i: gemm_tma(ins[i][0], ins[i][2], outs[i]),
        "kiln 128x256 4 stages": lambda i: gemm_tma(ins[i][0], ins[i][2], outs[i], stages=4),
        "kiln 128x256 4 stages, warp-specialized":
            lambda i: gemm_tma(ins[i][0], ins[i][2], outs[i], stages=4, warp_specialize=True),
        "kiln 128x128 4 stages, 4 warps":
            lambda i: gemm_tma(ins[i][0], ins[i][2], outs[i], block=(128, 128, None), stages=4,
                               num_warps=4),
        "kiln 128x256 + bias":
            lambda i: gemm_tma(ins[i][0], ins[i][2], outs[i], bias=ins[i][3]),
        "kiln 128x256 + SiLU":
            lambda i: gemm_tma(ins[i][0], ins[i][2], outs[i], activation="silu"),
        "kiln 128x256 + bias + SiLU":
            lambda i: gemm_tma(ins[i][0], ins[i][2], outs[i], bias=ins[i][3], activation="silu"),
        "torch.matmul(a, b) (cuBLAS)": lambda i: torch.matmul(ins[i][0], ins[i][1], out=outs[i]),
        "torch.matmul(a, b_t.T) (cuBLAS)":
            lambda i: torch.matmul(ins[i][0], ins[i][2].T, out=outs[i]),
    }
    parts = sys.argv[1:]
    graphs = {name: capture_graph(fn, [0, 1]) for name, fn in variants.items()
              if not parts or any(part in name for part in parts)}
    for rnd in range(3):
        for name, graph in graphs.items():
            end = time.time() + 1.5
            while time.time() < end:
                graph.replay()
                torch.cuda.synchronize()
            graph.replay()
            before = smi()
            torch.cuda.synchronize()
            ms = replay_ms(graph, reps=10)
            graph.replay()
            after = smi()
            torch.cuda.synchronize()
            print(f"round {rnd} | {name} | {ms:.3f} ms | {2 * S ** 3 / ms / 1e9:.0f} TFLOP/s | "
                  f"MHz, W, throttle: {before} / {after}", flush=True)


if __name__ == "__main__":
    main()
