"""Benchmark: a TMA 2-D tile copy written in the DSL (kernels_dsl/common/tma.py: one
cp.async.bulk.tensor load into shared memory per box, registers, one TMA store) against the
measured copy bandwidth (torch's device copy of 2 GiB), torch's copy_ of the same tensor, and
kiln's plain-load copy of the same tiles, in one run. Bytes counted: read + write.
GPU time from CUDA-graph replay; tensors larger than L2.

    python bench/tma/run.py [--out DIR]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from bench.common import copy_bandwidth_gbs, graph_time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.common import tma  # noqa: E402


@kiln.jit(num_warps=4)
def plain_copy_kernel(x_ptr, y_ptr, n_cols, BM: kl.constexpr, BN: kl.constexpr):
    rows = kl.program_id(0) * BM + kl.arange(0, BM)
    cols = kl.program_id(1) * BN + kl.arange(0, BN)
    offs = rows[:, None] * n_cols + cols[None, :]
    kl.store(y_ptr + offs, kl.load(x_ptr + offs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    copy_gbs = copy_bandwidth_gbs()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for m, n in [(16384, 7168), (32768, 4096)]:
        n_sets = max(1, (512 << 20) // (m * n * 2))
        xs = [torch.randn(m, n, device="cuda").bfloat16() for _ in range(n_sets)]
        outs = [torch.empty_like(x) for x in xs]
        idx = {id(x): i for i, x in enumerate(xs)}
        nbytes = 2 * m * n * 2
        variants = {}
        for bm, bn, warps, grid, stages in [
                (64, 128, 4, None, 1), (32, 256, 4, None, 1), (64, 128, 8, None, 1),
                (64, 128, 4, sms * 8, 1), (32, 128, 4, sms * 4, 2), (32, 128, 4, sms * 4, 3),
                (32, 128, 4, sms * 2, 4), (64, 128, 4, sms * 2, 2), (32, 256, 4, sms * 4, 2)]:
            label = f"kiln TMA box {bm}x{bn}, {warps} warps" + (
                f", persistent grid {grid}" if grid else "") + (
                f", {stages}-stage ring" if stages > 1 else "")
            variants[label] = (lambda bm, bn, warps, grid, stages: lambda x: tma.tma_copy(
                x, outs[idx[id(x)]], block=(bm, bn), grid=grid, num_warps=warps,
                num_stages=stages))(bm, bn, warps, grid, stages)
        variants["kiln plain ld/st 64x128"] = lambda x: plain_copy_kernel[(m // 64, n // 128)](
            x, outs[idx[id(x)]], n, BM=64, BN=128)
        variants["torch copy_"] = lambda x: outs[idx[id(x)]].copy_(x)
        for label, fn in variants.items():
            fn(xs[0])
            torch.cuda.synchronize()
            ok = torch.equal(outs[0], xs[0])
            outs[0].zero_()
            us = graph_time_ms(fn, xs) * 1e3
            gbs = nbytes / us / 1e3
            rows.append({"shape": [m, n], "variant": label, "us": us, "gbs": gbs,
                         "pct_copy": 100 * gbs / copy_gbs, "correct": ok})
            print(f"[{m}, {n}] {label:55s} {us:9.1f} us {gbs:7.0f} GB/s "
                  f"{100 * gbs / copy_gbs:5.1f}% {'ok' if ok else 'WRONG'}", flush=True)
    name = torch.cuda.get_device_name()
    lines = [f"# TMA 2-D copy (bf16) on {name}", "",
             f"Measured copy bandwidth (torch, 2 GiB device copy): {copy_gbs:.0f} GB/s. "
             "Command: `python bench/tma/run.py --out DIR` (GPU time, CUDA-graph replay).", "",
             "| shape | variant | us | GB/s | % of copy BW | correct |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['variant']} | {r['us']:.1f} | {r['gbs']:.0f} | "
                     f"{r['pct_copy']:.1f} | {r['correct']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        write_results(args.out, "bench_tma", text,
                      {"device": name, "copy_gbs": copy_gbs, "rows": rows})


if __name__ == "__main__":
    main()
