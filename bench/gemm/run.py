"""Benchmark: bf16 GEMMs written in the DSL against torch.matmul (cuBLAS) in one run,
M = N = K in {4096, 8192}. FLOPs counted: 2 M N K. GPU time from CUDA-graph replay; two input
sets, each larger than L2. Every variant is checked against torch.matmul of the f32-widened
inputs first.

- ``kiln TMA+wgmma``: gemm_tma (kernels_dsl/common/gemm.py): c = a @ b_t.T with b_t = b.T
  stored [N, K] (the nn.Linear weight layout), TMA descriptors with the 128-byte swizzle,
  ``kl.range(..., num_stages=S)`` and ``kl.dot(a, b.T, acc)``, which kiln-tile-accelerate-dot
  runs on wgmma from the ring slots with the accumulator in registers; bf16 output. Its
  cuBLAS peer is torch.matmul(a, b_t.T) (the same math and layouts) and torch.matmul(a, b).
- ``kiln TMA+wgmma warp-specialized``: the same gemm_tma with ``warp_specialize=True``
  (``kl.range(..., warp_specialize=True)``): the kernel's warps only wait for full ring slots,
  run the wgmmas and release the slots, while an added producer warpgroup (setmaxnreg 40; the
  consumers take 232 registers with 8 warps) issues the TMA copies; bf16 and FP8 e4m3.
- ``kiln TMA+wgmma row-major b``: gemm_tma_kn: c = a @ b with b [K, N] as torch.matmul takes
  it (``kl.dot(a, b, acc)``, no transpose), [64, 64] B boxes read by wgmma as an MN-major
  operand (BN = 64: one 128-byte swizzled row of N per K). Its peer is torch.matmul(a, b).
- ``kiln TMA+wgmma + bias + SiLU``: gemm_tma with its fused epilogue, silu(a @ b_t.T + bias)
  in f32 before the bf16 store (bias bf16 [N]), 128x256 blocks: the bias meets the
  accumulator in the blocked layout, its conversion buffer taking the bytes of the rings,
  released after the K loop. Peers: torch's silu(addmm(bias, a, b_t.T)) (cuBLAS, then an
  elementwise kernel) and the bare GEMM (cuBLAS) the issue compares it with.
- ``kiln kl.dot``: the pointer-based K loop (gemm_kernel: plain loads, no pipelining), f32
  output. On sm_90a the compiler stages both operands in shared memory each step for wgmma,
  the accumulator in the wgmma registers across the loop (tile.warpgroup_dot_staged); on
  other archs mma.sync (operands and accumulator staged through shared memory each step).
- FP8 rows with ``max_num_imprecise_acc N``: the same TMA+wgmma GEMM whose dot promotes the
  wgmma accumulator to f32 every N elements of K (kl.dot's ``max_num_imprecise_acc``; a wait
  and f32 adds per chunk, a second register set: 128x128 blocks on 8 warps do not spill,
  128x256 ones do), next to the unpromoted 128x128 block for a like-for-like time.

    python bench/gemm/run.py [--out DIR] [--sizes 4096,8192]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
from bench.common import graph_time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.common.gemm import gemm_kernel, gemm_tma, gemm_tma_kn  # noqa: E402

CONFIGS = [(128, 128, 64, 8), (128, 256, 64, 8), (128, 128, 64, 4)]
# (BM, BN, BK), stages, warps, GROUP_M
TMA_CONFIGS = [((128, 256, 64), 3, 8, 8), ((128, 256, 64), 4, 8, 8), ((256, 128, 64), 3, 8, 8),
               ((128, 128, 64), 4, 4, 8), ((128, 256, 64), 3, 8, 16)]
# the same with a producer warpgroup (warp_specialize=True): (BM, BN, BK), stages, warps, GROUP_M
TMA_WS_CONFIGS = [((128, 256, 64), 3, 8, 8), ((128, 256, 64), 3, 8, 16),
                  ((128, 128, 64), 4, 4, 8), ((128, 128, 64), 5, 8, 8)]
# row-major b (MN-major wgmma B): (BM, BN, BK = 64), stages, warps, GROUP_M
TMA_KN_CONFIGS = [((128, 64, 64), 4, 8, 8), ((256, 64, 64), 4, 8, 8), ((128, 128, 64), 4, 8, 8),
                  ((128, 256, 64), 3, 8, 8)]
# FP8: (BM, BN, BK = 128), stages, warps, max_num_imprecise_acc (None: unpromoted)
FP8_CONFIGS = [((128, 256, None), 3, 8, None), ((128, 256, None), 4, 8, None),
               ((128, 128, None), 4, 8, None), ((128, 128, None), 4, 8, 128),
               ((128, 128, None), 4, 8, 64), ((128, 256, None), 3, 8, 128)]
# FP8 with a producer warpgroup: (BM, BN, BK = 128), stages, warps
FP8_WS_CONFIGS = [((128, 256, None), 3, 8), ((128, 128, None), 4, 8)]


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
        inputs = []
        for _ in range(2):
            a, b = torch.randn(m, k, device="cuda").bfloat16(), torch.randn(k, n, device="cuda")
            b = b.bfloat16()
            inputs.append((a, b, b.T.contiguous()))
        out = torch.empty(m, n, device="cuda")
        out_bf16 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ref = torch.matmul(inputs[0][0].float(), inputs[0][1].float())
        variants = {}
        for bm, bn, bk, warps in CONFIGS:
            variants[f"kiln kl.dot {bm}x{bn}x{bk}, {warps} warps"] = (
                lambda bm, bn, bk, warps: lambda ab: gemm_kernel[
                    (kiln.cdiv(m, bm), kiln.cdiv(n, bn))](
                        ab[0], ab[1], out, m, n, k, k, n, n, BM=bm, BN=bn, BK=bk,
                        num_warps=warps))(bm, bn, bk, warps)
        for block, stages, warps, group in TMA_CONFIGS:
            label = (f"kiln TMA+wgmma {block[0]}x{block[1]}x{block[2]}, {stages} stages, "
                     f"{warps} warps, group {group}")
            variants[label] = (lambda block, stages, warps, group: lambda ab: gemm_tma(
                ab[0], ab[2], out_bf16, block=block, stages=stages, num_warps=warps,
                group_m=group))(block, stages, warps, group)
        for block, stages, warps, group in TMA_WS_CONFIGS:
            label = (f"kiln TMA+wgmma warp-specialized {block[0]}x{block[1]}x{block[2]}, "
                     f"{stages} stages, {warps}+4 warps, group {group}")
            variants[label] = (lambda block, stages, warps, group: lambda ab: gemm_tma(
                ab[0], ab[2], out_bf16, block=block, stages=stages, num_warps=warps,
                group_m=group, warp_specialize=True))(block, stages, warps, group)
        for block, stages, warps, group in TMA_KN_CONFIGS:
            label = (f"kiln TMA+wgmma row-major b {block[0]}x{block[1]}x{block[2]}, "
                     f"{stages} stages, {warps} warps, group {group}")
            variants[label] = (lambda block, stages, warps, group: lambda ab: gemm_tma_kn(
                ab[0], ab[1], out_bf16, block=block, stages=stages, num_warps=warps,
                group_m=group))(block, stages, warps, group)
        bias = torch.randn(n, device="cuda").bfloat16()
        ref_bias_silu = torch.nn.functional.silu(ref + bias.float()[None, :])
        variants["kiln TMA+wgmma + bias + SiLU 128x256x64, 3 stages, 8 warps, group 8"] = (
            lambda ab: gemm_tma(ab[0], ab[2], out_bf16, block=(128, 256, 64), stages=3,
                                bias=bias, activation="silu"))
        variants["torch silu(addmm(bias, a, b_t.T)) bf16 (cuBLAS + eager)"] = (
            lambda ab: torch.nn.functional.silu(torch.addmm(bias, ab[0], ab[2].T)))
        fp8 = [(a.to(torch.float8_e4m3fn), b_t.to(torch.float8_e4m3fn)) for a, _, b_t in inputs]
        fp8_of = {id(ab[0]): f for ab, f in zip(inputs, fp8)}
        one = torch.ones((), device="cuda")
        for block, stages, warps, bound in FP8_CONFIGS:
            label = f"kiln TMA+wgmma FP8 e4m3 {block[0]}x{block[1]}x128, {stages} stages"
            if bound is not None:
                label += f", max_num_imprecise_acc {bound}"
            variants[label] = (lambda block, stages, warps, bound: lambda ab: gemm_tma(
                *fp8_of[id(ab[0])], out_bf16, block=block, stages=stages, num_warps=warps,
                max_num_imprecise_acc=bound))(block, stages, warps, bound)
        for block, stages, warps in FP8_WS_CONFIGS:
            label = (f"kiln TMA+wgmma warp-specialized FP8 e4m3 {block[0]}x{block[1]}x128, "
                     f"{stages} stages, {warps}+4 warps")
            variants[label] = (lambda block, stages, warps: lambda ab: gemm_tma(
                *fp8_of[id(ab[0])], out_bf16, block=block, stages=stages, num_warps=warps,
                warp_specialize=True))(block, stages, warps)
        ref_fp8 = torch.matmul(fp8[0][0].float(), fp8[0][1].float().T)
        variants["torch._scaled_mm FP8 e4m3 -> bf16 (cuBLAS)"] = lambda ab: torch._scaled_mm(
            fp8_of[id(ab[0])][0], fp8_of[id(ab[0])][1].T, one, one, out_dtype=torch.bfloat16)
        variants["torch._scaled_mm FP8 e4m3 -> bf16, use_fast_accum (cuBLAS)"] = (
            lambda ab: torch._scaled_mm(fp8_of[id(ab[0])][0], fp8_of[id(ab[0])][1].T, one, one,
                                        out_dtype=torch.bfloat16, use_fast_accum=True))
        variants["torch.matmul bf16 -> bf16 (cuBLAS)"] = lambda ab: torch.matmul(ab[0], ab[1])
        variants["torch.matmul(a, b_t.T) bf16 (cuBLAS, kiln's layouts)"] = (
            lambda ab: torch.matmul(ab[0], ab[2].T))
        torch_ms = scaled_ms = None
        for label, fn in variants.items():
            try:
                result = fn(inputs[0])
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported, not fatal
                print(f"[{size}] {label}: failed: {e}", flush=True)
                continue
            got = out if result is None else result
            # FP8: the product of the FP8 inputs
            want = ref_fp8 if "FP8" in label else ref_bias_silu if "silu" in label.lower() \
                else ref
            err = (got.float() - want).abs().max().item()
            if "FP8" in label:
                # FP8 tensor cores may accumulate with fewer bits than f32 (fast
                # accumulation): normwise, as test/gpu/test_gemm_tma.py checks
                ok = bool((got.float() - want).norm() <= 2**-8 * want.norm()) and \
                    err <= 2**-6 * want.abs().max().item()
            else:
                # f32 accumulation error, or the bf16 rounding of torch's bf16 output
                ok = err <= max(1e-2 * k**0.5, 2.0**-8 * want.abs().max().item())
            ms = graph_time_ms(fn, inputs, batch=5, reps=10)
            tflops = flops / ms / 1e9
            if label.startswith("torch.matmul bf16 -> bf16"):
                torch_ms = ms
            if label == "torch._scaled_mm FP8 e4m3 -> bf16 (cuBLAS)":
                scaled_ms = ms
            rows.append({"size": size, "variant": label, "ms": ms, "tflops": tflops,
                         "max_abs_err": err, "correct": ok})
            print(f"[{size}] {label:45s} {ms:8.3f} ms {tflops:7.1f} TFLOP/s "
                  f"err {err:.2e} {'ok' if ok else 'WRONG'}", flush=True)
        for r in rows:
            # FP8 rows against cuBLAS FP8 (torch._scaled_mm), the others against bf16 cuBLAS
            peer = scaled_ms if "FP8" in r["variant"] else torch_ms
            if r["size"] == size and peer:
                r["vs_torch"] = peer / r["ms"]
    lines = [f"# bf16 and FP8 GEMM (M = N = K) on {name}", "",
             "Command: `python bench/gemm/run.py --out DIR` (GPU time, CUDA-graph replay; "
             "`vs torch` = torch.matmul bf16 time / this time; FP8 rows: torch._scaled_mm FP8 "
             "time / this time).", "",
             "| size | variant | ms | TFLOP/s | vs torch | max abs err | correct |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['size']} | {r['variant']} | {r['ms']:.3f} | {r['tflops']:.1f} | "
                     f"{r.get('vs_torch', float('nan')):.3f} | {r['max_abs_err']:.2e} | "
                     f"{r['correct']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        write_results(args.out, "bench_gemm", text, {"device": name, "rows": rows})


if __name__ == "__main__":
    main()
