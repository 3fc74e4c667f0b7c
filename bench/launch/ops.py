"""Host time of every Kimi K3 op called eagerly through ``torch.ops.kiln.*``.

For each op and T (tokens) in {64, 16384}: 200 back-to-back eager calls on fixed inputs,
no synchronization between them, host wall time divided by 200; the median of 15 such
rounds (each round after a synchronize). The GPU work is not timed: this is what an eager
caller (prefill without CUDA graphs) pays on the CPU per call. Each op as shipped (its C++
kernel replaying the launch plan, where the package has kiln/_torch_ops.so) and, in a
second process of the same run, replayed in Python (``KILN_OP_PLANS=python``). In the same
run: torch's own elementwise op (``torch.mul`` of two bf16 tensors into a new one,
``x.add_(1)``), a torch op with two outputs (``torch.aminmax``), one allocation, and kiln ops
that launch nothing (the replay's own cost per call and per output).

    python bench/launch/ops.py [--out DIR] [--calls 200] [--rounds 15]

Writes ``launch_ops.json`` and ``launch_ops.md`` under ``--out`` (default: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Tuple

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


def _probes():
    """kiln ops (``torch.ops.kiln_bench.*``) that launch nothing: the replay's own cost, with
    no output and with one and three outputs to allocate."""

    def alloc(t):
        return torch.empty_strided((64, 16), (16, 1), dtype=torch.int32, device=t.device)

    @torch_library.op("kiln_bench", "nothing", lambda t: None)
    def nothing(t: torch.Tensor) -> None:
        return None

    @torch_library.op("kiln_bench", "one_output", lambda t: torch.empty_like(t))
    def one_output(t: torch.Tensor) -> torch.Tensor:
        return alloc(t)

    @torch_library.op("kiln_bench", "three_outputs",
                      lambda t: (torch.empty_like(t),) * 3)
    def three_outputs(t: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return alloc(t), alloc(t), alloc(t)

    B = torch.ops.kiln_bench
    return {"a kiln op launching nothing": (B.nothing, 0),
            "a kiln op allocating one output (no launch)": (B.one_output, 1),
            "a kiln op allocating three outputs (no launch)": (B.three_outputs, 3)}


def op_rows(n, r):
    """Host us per call of every op at both T, in this process's replay mode."""
    x = _bf16(64, 16)
    rows = [{"op": name, "T": 64, "us": host_us(lambda: op(x), n, r), "allocs": allocs,
             "launches": 0} for name, (op, allocs) in _probes().items()]
    for t in (64, 16384):
        for name, (op, a) in cases(t).items():
            row = {"op": f"torch.ops.kiln.{name}", "T": t}
            try:
                row["us"] = host_us(lambda: op(*a), n, r)
            except Exception as e:  # reported, not hidden
                row["us"], row["error"] = float("nan"), f"{type(e).__name__}: {str(e)[:200]}"
            plan = _plan_of(f"kiln::{name}", a)
            if plan is not None:
                row["allocs"] = len(plan.outputs) + len(plan.scratch)
                row["launches"] = len(plan.launches)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--ops-only", action="store_true",
                        help="print the op rows as JSON (the Python replay's process)")
    args = parser.parse_args()
    n, r = args.calls, args.rounds
    if args.ops_only:
        print(json.dumps(op_rows(n, r)))
        return
    x, y = _bf16(64, 7168), _bf16(64, 7168)
    peers = {"torch.mul(x, y) (bf16 [64, 7168], new output)": lambda: torch.mul(x, y),
             "x.add_(1) (in place)": lambda: x.add_(1),
             "torch.aminmax(x, dim=-1) (two new outputs, one launch)":
                 lambda: torch.aminmax(x, dim=-1),
             "torch.empty_strided (one allocation)":
                 lambda: torch.empty_strided((64, 16), (16, 1), dtype=torch.int32, device=DEV)}
    rows = [{"op": name, "T": 64, "us": host_us(fn, n, r)} for name, fn in peers.items()]
    cpp = torch_library.cpp_plans("kiln::situ_and_mul") is not None
    mine = op_rows(n, r)
    # The same ops replayed in Python (KILN_OP_PLANS=python), in a process of its own.
    child = subprocess.run([sys.executable, __file__, "--ops-only", "--calls", str(n),
                            "--rounds", str(r)], capture_output=True, text=True,
                           env=dict(os.environ, KILN_OP_PLANS="python"), check=True)
    python = {(row["op"], row["T"]): row["us"] for row in json.loads(child.stdout)}
    for row in mine:
        row["python_us"] = python.get((row["op"], row["T"]), float("nan"))
    rows += mine
    mul = rows[0]["us"]
    how = "the C++ kernel (kiln/_torch_ops.so)" if cpp else "Python (no kiln/_torch_ops.so)"
    lines = [f"# Host time per eager call, {torch.cuda.get_device_name()}",
             "", f"`python bench/launch/ops.py` ({n} calls a round, median of {r} rounds, no "
             f"synchronization inside a round). us per call: the ops as shipped, replayed by "
             f"{how}; Python replay: the same with `KILN_OP_PLANS=python`, another process "
             f"of the same run. The bar: torch.mul's {mul:.2f} us and 8 us.", "",
             "| op | T | us per call | Python replay us | allocations | launches |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        if row.get("error"):
            lines.append(f"| {row['op']} | {row['T']} | {row['error']} | | | |")
        elif "python_us" in row:
            lines.append(f"| {row['op']} | {row['T']} | {row['us']:.2f} | "
                         f"{row['python_us']:.2f} | {row.get('allocs', '')} | "
                         f"{row.get('launches', '')} |")
        else:
            lines.append(f"| {row['op']} | {row['T']} | {row['us']:.2f} | | | |")
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
