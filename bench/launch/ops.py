"""Host time of every Kimi K3 op called eagerly through ``torch.ops.kiln.*``.

For each op and T (tokens) in {64, 16384}: 200 back-to-back eager calls on fixed inputs,
no synchronization between them, host wall time divided by 200; the median of 15 such
rounds (each round after a synchronize). The GPU work is not timed: this is what an eager
caller (prefill without CUDA graphs) pays on the CPU per call. In the same run: torch's own
elementwise op (``torch.mul`` of two bf16 tensors into a new one, ``x.add_(1)``), and each
op's floor, what any op that allocates and launches as it does pays: torch's dispatch to a
Python-bodied op (a ``torch.library`` op doing nothing), its allocations (one
``torch.empty_strided`` each) and its own launches through the runtime binding (its launch
plan's kernels, grids and arguments, into live buffers).

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

import kernels_dsl.kimi_k3.torch_ops  # noqa: E402,F401  (registers torch.ops.kiln.*)
from kiln import torch_library  # noqa: E402

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


def _plan_of(qualname, args):
    """The launch plan the op made for ``args`` (None where it runs its wrapper in full)."""
    plan = torch_library.plans.get(qualname, {}).get(torch_library._launch_key(args))
    return plan if isinstance(plan, torch_library.Plan) else None


def _live_launches(plan, args):
    """The plan's launches with their pointers into ``args`` and into outputs and scratch
    allocated here and kept alive: (kernel, grid, values), launched as they are."""
    outs = [torch.empty_strided(shape, stride, dtype=dtype, device=DEV)
            for shape, stride, dtype in plan.outputs]
    scratch = [torch.empty(nbytes, dtype=torch.uint8, device=DEV) for nbytes in plan.scratch]
    tensors = (args, outs, scratch)
    launches = []
    for kernel, grid, values, slots in plan.launches:
        values = list(values)
        for slot, kind, index, offset in slots:
            values[slot] = tensors[kind][index].data_ptr() + offset
        launches.append((kernel, grid, values))
    return launches, outs + scratch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    n, r = args.calls, args.rounds
    x, y = _bf16(64, 7168), _bf16(64, 7168)
    peers = {"torch.mul(x, y) (bf16 [64, 7168], new output)": lambda: torch.mul(x, y),
             "x.add_(1) (in place)": lambda: x.add_(1)}
    rows = [{"op": name, "T": 64, "us": host_us(fn, n, r)} for name, fn in peers.items()]
    # The floor's three parts, measured here: a torch op whose Python body does nothing, an
    # allocation, and the runtime binding's launch of one planned kernel (pack_topk_ids).
    lib = torch.library.Library("kiln_bench", "DEF")
    lib.define("noop(Tensor x) -> ()")
    lib.impl("noop", lambda t: None, "CUDA")
    parts = {"dispatch": host_us(lambda: torch.ops.kiln_bench.noop(x), n, r),
             "alloc": host_us(lambda: torch.empty_strided((64, 16), (16, 1), dtype=torch.int32,
                                                          device=DEV), n, r)}
    ids, w = _int(0, 896, 64, 16), torch.rand(64, 16, device=DEV)
    K.pack_topk_ids(ids, w)
    plan = _plan_of("kiln::pack_topk_ids", (ids, w))
    if plan is not None:
        live, keep = _live_launches(plan, (ids, w))
        (kernel, grid, values), = live
        stream = torch.cuda.current_stream().cuda_stream
        parts["launch"] = host_us(lambda: kernel.launch(grid, values, stream), n, r)
    rows += [{"op": "a torch op doing nothing (torch.library, Python body)", "T": 64,
              "us": parts["dispatch"]},
             {"op": "torch.empty_strided (one allocation)", "T": 64, "us": parts["alloc"]}]
    if "launch" in parts:
        rows.append({"op": "kiln _runtime.Kernel.launch (pack_topk_ids, ints)", "T": 64,
                     "us": parts["launch"]})
    for row in rows:
        print(json.dumps(row), flush=True)
    for t in (64, 16384):
        for name, (op, a) in cases(t).items():
            row = {"op": f"torch.ops.kiln.{name}", "T": t}
            try:
                row["us"] = host_us(lambda: op(*a), n, r)
            except Exception as e:  # reported, not hidden
                row["us"], row["error"] = float("nan"), f"{type(e).__name__}: {str(e)[:200]}"
            plan = _plan_of(f"kiln::{name}", a)
            if plan is not None:
                allocs, launches = len(plan.outputs) + len(plan.scratch), len(plan.launches)
                # the op's own launches (PDL and cluster launches cost the driver more)
                live, keep = _live_launches(plan, a)
                stream = torch.cuda.current_stream().cuda_stream

                def launch_all():
                    for kernel, grid, values in live:
                        kernel.launch(grid, values, stream)

                own = host_us(launch_all, n, r)
                del keep
                row["floor"] = parts["dispatch"] + allocs * parts["alloc"] + own
                row["allocs"], row["launches"], row["launch_us"] = allocs, launches, own
            rows.append(row)
            print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    lines = [f"# Host time per eager call, {torch.cuda.get_device_name()}",
             "", f"`python bench/launch/ops.py` ({n} calls a round, median of {r} rounds, no "
             f"synchronization inside a round). floor = the torch op doing nothing + "
             f"allocations x one allocation (both measured above in the same run) + the op's "
             f"own launches through the runtime binding (launch us).", "",
             "| op | T | us per call | allocations | launches | launch us | floor us | "
             "over the floor us |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if row.get("error"):
            lines.append(f"| {row['op']} | {row['T']} | {row['error']} | | | | | |")
        elif "floor" in row:
            lines.append(f"| {row['op']} | {row['T']} | {row['us']:.2f} | {row['allocs']} | "
                         f"{row['launches']} | {row['launch_us']:.2f} | {row['floor']:.2f} | "
                         f"{row['us'] - row['floor']:.2f} |")
        else:
            lines.append(f"| {row['op']} | {row['T']} | {row['us']:.2f} | | | | | |")
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
