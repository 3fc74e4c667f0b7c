"""Benchmark: a bf16 GEMM written in the DSL (one [BM, BN] f32 block per program, a K loop of
``acc = kl.dot(a, b, acc)`` on masked [BM, BK] x [BK, BN] loads) against torch.matmul
(cuBLAS) in one run, M = N = K in {4096, 8192}. FLOPs counted: 2 M N K. GPU time from
CUDA-graph replay; two input sets, each larger than L2. Every variant is checked against
torch.matmul of the f32-widened inputs first.

The kl.dot of this phase stages a, b and the accumulator through shared memory on every
K step (tile.dot -> ldmatrix + mma.sync, TileToNVVM/DotOps.cpp): the numbers measure
that lowering, the baseline for keeping the accumulator in the mma layout and for wgmma.

    python bench/gemm/run.py [--out DIR] [--sizes 4096,8192]
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
from bench.common import graph_time_ms  # noqa: E402
from kernels_dsl.common.gemm import gemm_kernel  # noqa: E402


CONFIGS = [(128, 128, 32, 8), (128, 128, 64, 8), (128, 64, 32, 4), (64, 128, 32, 4),
           (64, 64, 32, 4)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--sizes", default="4096,8192")
    args = parser.parse_args()
    name = torch.cuda.get_device_name()
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        m = n = k = size
        flops = 2 * m * n * k
        inputs = [(torch.randn(m, k, device="cuda").bfloat16(),
                   torch.randn(k, n, device="cuda").bfloat16()) for _ in range(2)]
        out = torch.empty(m, n, device="cuda")
        ref = torch.matmul(inputs[0][0].float(), inputs[0][1].float())
        variants = {}
        for bm, bn, bk, warps in CONFIGS:
            variants[f"kiln kl.dot {bm}x{bn}x{bk}, {warps} warps"] = (
                lambda bm, bn, bk, warps: lambda ab: gemm_kernel[
                    (kiln.cdiv(m, bm), kiln.cdiv(n, bn))](
                        ab[0], ab[1], out, m, n, k, k, n, n, BM=bm, BN=bn, BK=bk,
                        num_warps=warps))(bm, bn, bk, warps)
        variants["torch.matmul bf16 -> bf16 (cuBLAS)"] = lambda ab: torch.matmul(ab[0], ab[1])
        torch_ms = None
        for label, fn in variants.items():
            try:
                result = fn(inputs[0])
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported, not fatal
                print(f"[{size}] {label}: failed: {e}", flush=True)
                continue
            got = out if result is None else result
            err = (got.float() - ref).abs().max().item()
            # f32 accumulation error, or the bf16 rounding of torch's bf16 output
            ok = err <= max(1e-2 * k**0.5, 2.0**-8 * ref.abs().max().item())
            ms = graph_time_ms(fn, inputs, batch=5, reps=10)
            tflops = flops / ms / 1e9
            if label.startswith("torch.matmul bf16 -> bf16"):
                torch_ms = ms
            rows.append({"size": size, "variant": label, "ms": ms, "tflops": tflops,
                         "max_abs_err": err, "correct": ok})
            print(f"[{size}] {label:45s} {ms:8.3f} ms {tflops:7.1f} TFLOP/s "
                  f"err {err:.2e} {'ok' if ok else 'WRONG'}", flush=True)
        for r in rows:
            if r["size"] == size and torch_ms:
                r["vs_torch"] = torch_ms / r["ms"]
    lines = [f"# bf16 GEMM (M = N = K) on {name}", "",
             "Command: `python bench/gemm/run.py --out DIR` (GPU time, CUDA-graph replay; "
             "`vs torch` = torch.matmul bf16 time / this time).", "",
             "| size | variant | ms | TFLOP/s | vs torch | max abs err | correct |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['size']} | {r['variant']} | {r['ms']:.3f} | {r['tflops']:.1f} | "
                     f"{r.get('vs_torch', float('nan')):.3f} | {r['max_abs_err']:.2e} | "
                     f"{r['correct']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bench_gemm.md"), "w") as f:
            f.write(text)
        with open(os.path.join(args.out, "bench_gemm.json"), "w") as f:
            json.dump({"device": name, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
