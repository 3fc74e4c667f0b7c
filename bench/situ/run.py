"""Benchmark: situ_and_mul (docs/kernels/situ.md) on the GPU against the hardware and the peers.

For each shape: the bytes the kernel must move (read [N, 2D], write [N, D] bf16) over the
median kernel time, against the measured device-to-device copy bandwidth (the ceiling), torch
eager and torch.compile of the same formula, all in one run. CUDA events, warm-up, median of
many runs; the large shape is far larger than L2, the decode shape rotates through enough
input sets to leave L2 too.

    python bench/situ/run.py [--out DIR]
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from bench.common import copy_bandwidth_gbs, graph_time_ms, time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.kimi_k3 import situ  # noqa: E402

BETA, LINEAR_BETA = 4.0, 25.0


def formula(x):
    d = x.shape[1] // 2
    g = x[:, :d].float()
    u = x[:, d:].float()
    gate = BETA * torch.tanh(g / BETA) * torch.sigmoid(g)
    up = LINEAR_BETA * torch.tanh(u / LINEAR_BETA)
    return (gate * up).to(torch.bfloat16)


def bench_shape(n, d, copy_gbs):
    n_sets = max(1, (256 << 20) // (n * 2 * d * 2))  # rotate so that inputs exceed L2
    inputs = [torch.randn(n, 2 * d, device="cuda", dtype=torch.bfloat16) * 4 for _ in
              range(n_sets)]
    outs = [torch.empty(n, d, device="cuda", dtype=torch.bfloat16) for _ in range(n_sets)]
    idx = {id(x): i for i, x in enumerate(inputs)}
    bytes_moved = n * 2 * d * 2 + n * d * 2

    # correctness of the timed configuration, against the formula
    ref = formula(inputs[0])
    situ.situ_and_mul(inputs[0], outs[0], beta=BETA, linear_beta=LINEAR_BETA)
    torch.testing.assert_close(outs[0].float(), ref.float(), rtol=2.0**-7, atol=1e-6)

    compiled = torch.compile(formula)
    results = {}
    t0 = time.perf_counter()
    compiled(inputs[0])
    torch.cuda.synchronize()
    results["torch.compile first call (s)"] = time.perf_counter() - t0
    rows = {
        "kiln": lambda x: situ.situ_and_mul(x, outs[idx[id(x)]], beta=BETA,
                                            linear_beta=LINEAR_BETA),
        "torch eager": formula,
        "torch.compile": compiled,
    }
    table = []
    for name, fn in rows.items():
        ms = time_ms(fn, inputs)
        try:
            gms = graph_time_ms(fn, inputs)
        except Exception as e:  # a peer that cannot be captured is reported, not hidden
            print(f"  {name}: CUDA graph capture failed: {type(e).__name__}: {e}")
            gms = float("nan")
        gbs = bytes_moved / gms / 1e6
        table.append({"impl": name, "ms": ms, "graph ms": gms, "GB/s": gbs,
                      "of copy BW": gbs / copy_gbs})
    kiln = table[0]
    for row in table:
        row["kiln speedup"] = row["graph ms"] / kiln["graph ms"]
        row["kiln speedup (stream)"] = row["ms"] / kiln["ms"]
    return {"shape": [n, 2 * d], "bytes": bytes_moved, "rows": table, **results}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    copy_gbs = copy_bandwidth_gbs()
    report = {"device": props.name, "copy GB/s (read+write)": copy_gbs, "shapes": []}
    for n, d in [(16384, 7168), (4096, 7168), (64, 7168)]:
        report["shapes"].append(bench_shape(n, d, copy_gbs))

    lines = [f"# situ_and_mul on {props.name}; measured copy bandwidth {copy_gbs:.0f} GB/s",
             "GPU time from CUDA-graph replay; 'stream' = back-to-back calls from Python "
             "(host cost included where it dominates)", "",
             "| shape | impl | GPU time (us) | GB/s | of copy BW | kiln speedup | stream time (us)"
             " | kiln speedup (stream) |",
             "|---|---|---|---|---|---|---|---|"]
    for s in report["shapes"]:
        for r in s["rows"]:
            lines.append(f"| {s['shape'][0]}x{s['shape'][1]} | {r['impl']} | "
                         f"{r['graph ms']*1e3:.1f} | {r['GB/s']:.0f} | {r['of copy BW']:.1%} | "
                         f"{r['kiln speedup']:.2f}x | {r['ms']*1e3:.1f} | "
                         f"{r['kiln speedup (stream)']:.2f}x |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_results(args.out, "bench_situ", text, report)


if __name__ == "__main__":
    main()
