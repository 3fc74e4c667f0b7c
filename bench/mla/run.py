"""MLA attention on the GPU against the hardware ceilings and a peer, in one run.

- ``mla_decode`` (S = 1) at B = 64 and 128, H = 12 (K3 at TP8) and 128, contexts of 4K and
  32K rows a request, bf16 and FP8 caches (page size 64): time a call, the KV bytes read
  (B x context x row bytes) against the measured copy bandwidth (issue 18: >= 85 %), and
  the useful tensor FLOP/s;
- ``verify_splitkv`` with S = 4 drafts, H = 128 (compute-bound): FLOP/s against the dense
  bf16 peak measured by ``torch.matmul`` at 8192^3 in the same run (issue 18: >= 60 %);
- the pointer kernel (``mla_attention.Settings(tma=False)``; the default takes the TMA
  kernel where it applies from ``tma_min_rows`` query rows a program, so at S = 1 with 12
  heads the default is the pointer kernel too) on the bf16 cases, checked against the
  default's output;
- the peer in the same run: FlashInfer's MLA decode (``flashinfer-python``) where it imports
  and runs, else the Triton kernel of ``triton_mla.py`` (SGLang's form of a Triton MLA
  decode, written for this benchmark from the math); the table says which. Each peer call
  is checked against kiln's output first.

GPU time per call: CUDA-graph replay of back-to-back calls, CUDA events, median; every case
reads more KV bytes than twice the L2 (a call streams its whole cache from memory).
Usage: ``python bench/mla/run.py [--out DIR] [--quick]``.
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]

from bench.common import copy_bandwidth_gbs, graph_time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.kimi_k3 import mla_attention  # noqa: E402

PAGE = 64
DECODE = [(b, h, ctx) for b in (64, 128) for h in (12, 128) for ctx in (4096, 32768)]
VERIFY = [(64, 128, 4, ctx) for ctx in (4096, 32768)]
SCALE = 576 ** -0.5
#: The pointer kernel, timed beside the default (the TMA kernel on bf16 caches of 64-row pages
#: from 32 query rows a program).
POINTER = mla_attention.Settings(tma=False)


def flops(bsz, s, h, ctx):
    """Useful tensor FLOPs of a call: each (draft, head) row scores its visible rows (576)
    and sums their latents (512), two FLOPs a multiply-add."""
    rows = sum(ctx - s + 1 + j for j in range(s))
    return bsz * h * rows * (576 + 512) * 2


def matmul_peak_tflops():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    ms = graph_time_ms(lambda _: torch.matmul(a, b), [()], batch=10, reps=10)
    return 2 * 8192 ** 3 / ms / 1e9


def make_inputs(bsz, s, h, ctx, fp8):
    """(q, cache, block_table, lengths as the op takes them, totals): every request ctx rows
    (its S drafts included), pages in random order."""
    pages_each = -(-ctx // PAGE)
    pages = bsz * pages_each
    bt = torch.randperm(pages, device="cuda", dtype=torch.int32).view(bsz, pages_each)
    if fp8:
        cache = torch.randint(0, 0x7E, (pages, PAGE, 656), device="cuda", dtype=torch.uint8)
        cache.view(-1, 656)[:, 512:528].view(torch.float32)[:] = 0.01
        cache.view(-1, 656)[:, 528:].view(torch.bfloat16).normal_()
    else:
        cache = torch.randn(pages, PAGE, 576, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(bsz, s, h, 576, device="cuda", dtype=torch.bfloat16)
    totals = torch.full((bsz,), ctx, device="cuda", dtype=torch.int32)
    return q, cache, bt, totals


def load_peer():
    """('flashinfer', module) or ('triton', module, why FlashInfer is not the peer)."""
    try:
        import flashinfer.mla  # noqa: F401

        return "flashinfer", flashinfer, None
    except Exception as e:  # noqa: BLE001 - any failure leaves the Triton peer
        import triton_mla

        return "triton", triton_mla, f"flashinfer not importable ({type(e).__name__}: {e})"


def flashinfer_call(fi, q, cache, bt, totals):
    """FlashInfer's MLA paged decode over the same bf16 cache, planned once (S = 1)."""
    bsz, _, h, _ = q.shape
    ws = torch.empty(128 << 20, device="cuda", dtype=torch.int8)
    w = fi.mla.BatchMLAPagedAttentionWrapper(ws, backend="auto")
    pages_each = bt.shape[1]
    qo_indptr = torch.arange(bsz + 1, device="cuda", dtype=torch.int32)
    kv_indptr = torch.arange(bsz + 1, device="cuda", dtype=torch.int32) * pages_each
    w.plan(qo_indptr, kv_indptr, bt.flatten(), totals, h, 512, 64, PAGE, False, SCALE,
           torch.bfloat16, torch.bfloat16)
    ckv, kpe = cache[..., :512], cache[..., 512:]
    q_nope, q_pe = q[:, 0, :, :512], q[:, 0, :, 512:]
    return lambda _: w.run(q_nope, q_pe, ckv, kpe)


def triton_call(tm, q, cache, bt, totals, n_splits):
    bsz, s, h, _ = q.shape
    o_part = torch.empty(bsz * s * h, n_splits, 512, device="cuda")
    lse_part = torch.empty(bsz * s * h, n_splits, device="cuda")
    out = torch.empty(bsz, s, h, 512, device="cuda", dtype=torch.bfloat16)
    return lambda _: tm.mla_attention(q, cache, bt, totals, SCALE, n_splits, o_part, lse_part,
                                      out)


def case(kind, bsz, s, h, ctx, fp8, peer, copy_gbs, peak):
    q, cache, bt, totals = make_inputs(bsz, s, h, ctx, fp8)
    lengths = totals - s if kind == "verify_splitkv" else totals
    out = torch.empty(bsz, s, h, 512, device="cuda", dtype=torch.bfloat16)
    if kind == "mla_decode":
        o1 = out[:, 0]
        call = lambda _: mla_attention.mla_decode(q[:, 0], cache, bt, lengths, SCALE, out=o1)  # noqa: E731
    else:
        call = lambda _: mla_attention.verify_splitkv(q, cache, bt, lengths, SCALE, out=out)  # noqa: E731
    call(None)
    row_bytes = 656 if fp8 else 1152
    kv_bytes = bsz * ctx * row_bytes
    row = {"kernel": kind, "B": bsz, "S": s, "H": h, "context": ctx,
           "cache": "fp8" if fp8 else "bf16", "KV bytes": kv_bytes,
           "splits": mla_attention.num_splits_for(bsz, h, s, bt.shape[1] * PAGE,
                                                  torch.cuda.get_device_properties(0)
                                                  .multi_processor_count,
                                                  tma=not fp8 and mla_attention.SETTINGS.tma
                                                  and mla_attention.tma_rows(h, s))}
    row["kiln us"] = graph_time_ms(call, [None], batch=10, reps=10) * 1e3
    row["KV of copy BW"] = kv_bytes / row["kiln us"] / 1e3 / copy_gbs
    row["TFLOP/s"] = flops(bsz, s, h, ctx) / row["kiln us"] / 1e6
    row["of matmul peak"] = row["TFLOP/s"] / peak
    if not fp8:  # the pointer kernel (Settings(tma=False)), checked against the default's
        out_ptr = torch.empty_like(out)
        if kind == "mla_decode":
            tcall = lambda _: mla_attention.mla_decode(q[:, 0], cache, bt, lengths, SCALE,  # noqa: E731
                                                       out=out_ptr[:, 0], settings=POINTER)
        else:
            tcall = lambda _: mla_attention.verify_splitkv(q, cache, bt, lengths, SCALE,  # noqa: E731
                                                           out=out_ptr, settings=POINTER)
        tcall(None)
        torch.cuda.synchronize()
        err = (out_ptr.float() - out.float()).abs().max().item()
        assert err < 3e-2, f"the pointer kernel vs the default: max |diff| {err}"
        row["pointer us"] = graph_time_ms(tcall, [None], batch=10, reps=10) * 1e3
        row["pointer KV of copy BW"] = kv_bytes / row["pointer us"] / 1e3 / copy_gbs
    if not fp8:
        name, mod, _ = peer
        try:
            if name == "flashinfer" and s == 1:
                pcall = flashinfer_call(mod, q, cache, bt, totals)
            else:
                name = "triton"
                if mod.__name__ != "triton_mla":
                    import triton_mla as mod
                pcall = triton_call(mod, q, cache, bt, totals, row["splits"])
            got = pcall(None)
            got = got if got.dim() == 4 else got[:, None]
            torch.cuda.synchronize()
            err = (got.float() - out.float()).abs().max().item()
            assert err < 3e-2, f"{name} vs kiln: max |diff| {err}"
            row["peer"] = name
            row["peer us"] = graph_time_ms(pcall, [None], batch=10, reps=10) * 1e3
            row["kiln speedup"] = row["peer us"] / row["kiln us"]
        except Exception as e:  # noqa: BLE001 - the table says why a peer is missing
            row["peer"] = f"{name} failed: {type(e).__name__}: {e}"[:160]
    return row


def table(rows):
    lines = ["| kernel | cache | B | S | H | context | splits | kiln us | KV of copy BW | "
             "TFLOP/s | of matmul peak | kiln pointer us | pointer KV of copy BW | peer | "
             "peer us | kiln speedup |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ptr = (f"{r['pointer us']:.1f} | {r['pointer KV of copy BW']:.1%}" if "pointer us" in r
               else " | ")
        lines.append(
            f"| {r['kernel']} | {r['cache']} | {r['B']} | {r['S']} | {r['H']} | {r['context']} | "
            f"{r['splits']} | {r['kiln us']:.1f} | {r['KV of copy BW']:.1%} | "
            f"{r['TFLOP/s']:.0f} | {r['of matmul peak']:.1%} | {ptr} | {r.get('peer', '')} | "
            f"{r.get('peer us', 0):.1f} | {r.get('kiln speedup', 0):.2f}x |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--quick", action="store_true", help="the 4K contexts only")
    args = parser.parse_args()
    torch.manual_seed(0)
    t0 = time.time()
    props = torch.cuda.get_device_properties(0)
    copy_gbs = copy_bandwidth_gbs()
    peak = matmul_peak_tflops()
    peer = load_peer()
    report = {"device": props.name, "copy GB/s (read+write)": copy_gbs,
              "matmul TFLOP/s (8192^3 bf16)": peak, "peer": peer[0], "peer note": peer[2],
              "command": " ".join(["python", "bench/mla/run.py"] + sys.argv[1:]), "cases": []}
    with torch.inference_mode():
        for bsz, h, ctx in DECODE:
            if args.quick and ctx > 4096:
                continue
            for fp8 in (False, True):
                report["cases"].append(case("mla_decode", bsz, 1, h, ctx, fp8, peer, copy_gbs,
                                            peak))
                print(json.dumps(report["cases"][-1]), flush=True)
                torch.cuda.empty_cache()
        for bsz, h, s, ctx in VERIFY:
            if args.quick and ctx > 4096:
                continue
            report["cases"].append(case("verify_splitkv", bsz, s, h, ctx, False, peer, copy_gbs,
                                        peak))
            print(json.dumps(report["cases"][-1]), flush=True)
    report["seconds"] = time.time() - t0
    lines = [f"# MLA attention on {props.name}",
             f"measured copy bandwidth {copy_gbs:.0f} GB/s (read + write); torch.matmul "
             f"8192^3 bf16 {peak:.0f} TFLOP/s; peer: {peer[0]}"
             + (f" ({peer[2]})" if peer[2] else "") + f"; page size {PAGE}; GPU time per call "
             f"from CUDA-graph replay of back-to-back calls", ""] + table(report["cases"])
    lines += ["", f"{report['seconds']:.0f} s in all"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_results(args.out, "bench_mla", text, report)


if __name__ == "__main__":
    main()
