"""Host time of every Kimi K3 op called eagerly through ``torch.ops.kiln.*``.

For each op and T (tokens) in {64, 16384}: 200 back-to-back eager calls on fixed inputs,
no synchronization between them, host wall time divided by 200; the median of 15 such
rounds (each round after a synchronize). The GPU work is not timed: this is what an eager
caller (prefill without CUDA graphs) pays on the CPU per call. In the same run: torch's own
elementwise op (``torch.mul`` of two bf16 tensors into a new one, and ``x.add_(1)``) and
kiln's raw runtime launch (``_runtime.Kernel.launch`` with ints), the floor and the peer.

    python bench/launch/ops.py [--out DIR] [--calls 200] [--rounds 15]

Writes ``launch_ops.json`` and ``launch_ops.md`` under ``--out`` (default: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

try:  # registers torch.ops.kiln.*
    import kernels_dsl.kimi_k3.torch_ops  # noqa: E402,F401
except ImportError:
    import kiln.ops.kimi_k3  # noqa: E402,F401
try:
    from kiln import torch_library  # noqa: E402
except ImportError:  # a kiln without launch plans
    torch_library = None

K = torch.ops.kiln
DEV = "cuda"


def _bf16(*shape, scale=1.0):
    return (torch.randn(shape, device=DEV) * scale).to(torch.bfloat16)


def _int(lo, hi, *shape, dtype=torch.int32):
    return torch.randint(lo, hi, shape, device=DEV, dtype=dtype)


def cases(t):
    """name -> (op, args): Kimi K3 shapes at ``t`` tokens."""
    slots = 2 * t
    proj = _bf16(t, 512 + 64 + 64)
    loc = torch.randperm(slots, device=DEV)[:t].to(torch.int64)
    e = 8
    bs = min(t, 256)
    r2t = _int(0, 1 << 20, 512, 4096)
    req = torch.randperm(512, device=DEV)[:bs].to(torch.int64)
    lens = _int(1, 4096, bs)
    return {
        "situ_and_mul": (K.situ_and_mul, (_bf16(t, 2 * 1024, scale=3.0),)),
        "situ_and_mul_masked_post_quant": (
            K.situ_and_mul_masked_post_quant,
            (_bf16(e, max(t // e, 1), 2 * 512, scale=3.0),
             torch.full((e,), max(t // e, 1), dtype=torch.int32, device=DEV))),
        "mla_output_gate": (K.mla_output_gate, (_bf16(t, 64 * 128), _bf16(t, 64 * 128))),
        "mla_output_gate_fp8": (K.mla_output_gate_fp8, (_bf16(t, 4096), _bf16(t, 4096))),
        "concat_mla_k": (K.concat_mla_k, (_bf16(t, 64, 192), _bf16(t, 64, 128),
                                          _bf16(t, 1, 64))),
        "concat_mla_absorb_q": (K.concat_mla_absorb_q, (_bf16(t, 64, 512), _bf16(t, 64, 64))),
        "mla_kv_scatter": (K.mla_kv_scatter, (proj[:, :512], proj[:, 512:576], loc,
                                              _bf16(slots // 64, 64, 576))),
        "mla_kv_scatter_fp8": (K.mla_kv_scatter_fp8,
                               (proj[:, :512], proj[:, 512:576].unsqueeze(1), loc,
                                _int(0, 256, slots, 656, dtype=torch.uint8))),
        "pack_topk_ids": (K.pack_topk_ids, (_int(0, 896, t, 16),
                                            torch.rand(t, 16, device=DEV))),
        "moe_align_single_token": (K.moe_align_single_token,
                                   (torch.randperm(896, device=DEV)[:16].to(torch.int32)
                                    .reshape(1, 16), 16)),
        "per_token_group_quant_fp8": (K.per_token_group_quant_fp8, (_bf16(t, 7168),)),
        "quant_mxfp4": (K.quant_mxfp4, (_bf16(t, 7168),)),
        "kv_indices": (K.kv_indices, (r2t, req, lens, _int(0, 1, bs, 4096 // 64))),
        "gpu_tensor_hash": (K.gpu_tensor_hash, (_bf16(t, 7168),)),
        "image_preprocess": (K.image_preprocess,
                             (_int(0, 256, 1, 448, 448, 3, dtype=torch.uint8), 448, 448)),
        "moe_fused_gate": (K.moe_fused_gate, (torch.randn(t, 896, device=DEV),
                                              torch.randn(896, device=DEV), 16)),
        "attn_res": (K.attn_res, (_bf16(t, 7168), _bf16(t, 9, 7168), _bf16(7168),
                                  _bf16(7168), 8)),
        "attn_res_write_prefix": (K.attn_res_write_prefix,
                                  (_bf16(t, 7168), _bf16(t, 9, 7168), _bf16(7168),
                                   _bf16(7168), 8)),
    }


def host_us(fn, calls, rounds):
    for _ in range(20):   # compile, load, record the launch plan
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    rows = []
    x, y = _bf16(64, 7168), _bf16(64, 7168)
    peers = {"torch.mul(x, y) (bf16 [64, 7168], new output)": lambda: torch.mul(x, y),
             "x.add_(1) (in place)": lambda: x.add_(1)}
    for name, fn in peers.items():
        rows.append({"op": name, "T": 64, "us": host_us(fn, args.calls, args.rounds)})
        print(json.dumps(rows[-1]), flush=True)
    # The floor: the runtime binding's launch of one planned kernel (pack_topk_ids), ints.
    ids, w = _int(0, 896, 64, 16), torch.rand(64, 16, device=DEV)
    K.pack_topk_ids(ids, w)
    K.pack_topk_ids(ids, w)
    table = torch_library.plans.get("kiln::pack_topk_ids", {}) if torch_library else {}
    plan = next((p for p in table.values() if p), None)
    if plan is not None:
        kernel, grid, values, _ = plan.launches[0]
        stream = torch.cuda.current_stream().cuda_stream
        rows.append({"op": "kiln _runtime.Kernel.launch (pack_topk_ids, ints)", "T": 64,
                     "us": host_us(lambda: kernel.launch(grid, list(values), stream),
                                   args.calls, args.rounds)})
        print(json.dumps(rows[-1]), flush=True)
    for t in (64, 16384):
        for name, (op, a) in cases(t).items():
            try:
                us = host_us(lambda: op(*a), args.calls, args.rounds)
                err = None
            except Exception as e:  # reported, not hidden
                us, err = float("nan"), f"{type(e).__name__}: {str(e)[:200]}"
            rows.append({"op": f"torch.ops.kiln.{name}", "T": t, "us": us, "error": err})
            print(json.dumps(rows[-1]), flush=True)
        torch.cuda.empty_cache()
    lines = [f"# Host time per eager call, {torch.cuda.get_device_name()}",
             "", f"`python bench/launch/ops.py` ({args.calls} calls a round, median of "
             f"{args.rounds} rounds, no synchronization inside a round)", "",
             "| op | T | us per call |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['T']} | {r['us']:.2f} |" if not r.get("error") else
                     f"| {r['op']} | {r['T']} | {r['error']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "launch_ops.json"), "w") as f:
            json.dump(rows, f, indent=1)
        with open(os.path.join(args.out, "launch_ops.md"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
