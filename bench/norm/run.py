"""Benchmark: row RMSNorm and softmax written in the DSL ([32768, 7168] and [4096, 7168] bf16)
against the measured copy bandwidth, torch eager and torch.compile of the same math, in one run.
Bytes counted: read x (and w once), write y. GPU time from CUDA-graph replay. Also timed: the
rows' DRAM traffic alone (x read, y written, x copied to y) and kiln's and torch.compile's
RMSNorm alternately several times (their difference against the run-to-run spread).

    python bench/norm/run.py [--out DIR]
"""

import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from bench.common import copy_bandwidth_gbs, graph_time_ms, time_ms  # noqa: E402
from kernels_dsl.common import norm  # noqa: E402

try:
    from bench.norm import triton_peer  # noqa: E402
except ImportError:  # no triton: the Triton rows are left out
    triton_peer = None

EPS = 1e-6
REPEATS = 5


def rmsnorm_ref(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + EPS) * w.float()).bfloat16()


def softmax_ref(x):
    return torch.softmax(x.float(), dim=1).bfloat16()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    copy_gbs = copy_bandwidth_gbs()
    name = torch.cuda.get_device_name()
    rows, ceilings, repeats = [], [], []
    for t, d in [(32768, 7168), (4096, 7168)]:
        n_sets = max(1, (256 << 20) // (t * d * 2))
        xs = [torch.randn(t, d, device="cuda").bfloat16() for _ in range(n_sets)]
        outs = [torch.empty_like(x) for x in xs]
        w = (torch.rand(d, device="cuda") + 0.5).bfloat16()
        idx = {id(x): i for i, x in enumerate(xs)}
        nbytes = 2 * t * d * 2
        torch.testing.assert_close(norm.rmsnorm(xs[0], w, EPS).float(),
                                   rmsnorm_ref(xs[0], w).float(), rtol=2.0**-7, atol=1e-5)
        torch.testing.assert_close(norm.softmax(xs[0]).float(), softmax_ref(xs[0]).float(),
                                   rtol=2.0**-7, atol=1e-5)

        def eager_rms(x):
            return torch.nn.functional.rms_norm(x, (d,), w, EPS)

        cases = {
            "rmsnorm": {
                "kiln": lambda x: norm.rmsnorm(x, w, EPS, outs[idx[id(x)]]),
                "torch eager (F.rms_norm)": eager_rms,
                "torch.compile": torch.compile(lambda x: rmsnorm_ref(x, w)),
            },
            "softmax": {
                "kiln": lambda x: norm.softmax(x, outs[idx[id(x)]]),
                "torch eager (softmax)": lambda x: torch.softmax(x, dim=1),
                "torch.compile": torch.compile(softmax_ref),
            },
        }
        if triton_peer is not None:
            torch.testing.assert_close(
                triton_peer.rmsnorm(xs[0], w, EPS, torch.empty_like(xs[0])).float(),
                rmsnorm_ref(xs[0], w).float(), rtol=2.0**-7, atol=1e-5)
            # The same one-row-per-program code in Triton: as written, and with the row's
            # load marked evict_last (what torch.compile's generated kernel does).
            cases["rmsnorm"]["triton (8 warps)"] = (
                lambda x: triton_peer.rmsnorm(x, w, EPS, outs[idx[id(x)]], num_warps=8))
            cases["rmsnorm"]["triton (8 warps, x evict_last)"] = (
                lambda x: triton_peer.rmsnorm(x, w, EPS, outs[idx[id(x)]], num_warps=8,
                                              x_policy="evict_last"))
            cases["softmax"]["triton (8 warps)"] = (
                lambda x: triton_peer.softmax(x, outs[idx[id(x)]], num_warps=8))
        # The DRAM traffic of the rows by itself, timed the same way: x read alone (a row
        # sum), y written alone (a fill), and x copied to y (torch's elementwise kernel; in
        # a graph ``copy_`` is a copy-engine memcpy). read + write alone bounds what a
        # kernel that reads x once and writes y once can reach if the two share the DRAM.
        traffic = {
            "read x (torch.sum of rows)": lambda x: torch.sum(x, dim=1, dtype=torch.float32),
            "write y (fill_)": lambda x: outs[idx[id(x)]].fill_(1.0),
            "copy x -> y (torch.neg)": lambda x: torch.neg(x, out=outs[idx[id(x)]]),
        }
        for impl, fn in traffic.items():
            gms = graph_time_ms(fn, xs)
            ceilings.append({"shape": [t, d], "traffic": impl, "graph ms": gms,
                             "GB/s": t * d * 2 * (2 if "copy" in impl else 1) / gms / 1e6})
        # kiln and torch.compile's RMSNorm timed alternately, several times: their difference
        # against the run-to-run spread
        for rep in range(REPEATS):
            for impl in ("kiln", "torch.compile"):
                repeats.append({"shape": [t, d], "impl": impl, "rep": rep,
                                "graph ms": graph_time_ms(cases["rmsnorm"][impl], xs)})
        for op, impls in cases.items():
            kiln_ms = None
            for impl, fn in impls.items():
                gms = graph_time_ms(fn, xs)
                sms = time_ms(fn, xs)
                kiln_ms = kiln_ms or gms
                gbs = nbytes / gms / 1e6
                rows.append({"op": op, "shape": [t, d], "impl": impl, "graph ms": gms,
                             "stream ms": sms, "GB/s": gbs, "of copy BW": gbs / copy_gbs,
                             "kiln speedup": gms / kiln_ms})
    # Warps per program: the wrappers' defaults against the alternatives, large shape.
    sweep = []
    t, d = 32768, 7168
    xs = [torch.randn(t, d, device="cuda").bfloat16()]
    out = torch.empty_like(xs[0])
    w = torch.ones(d, device="cuda").bfloat16()
    for warps in (4, 8, 16):
        for op, launch in (
                ("rmsnorm", lambda x, nw=warps: norm.rmsnorm_kernel[(t,)](
                    x, w, out, d, d, d, EPS, BLOCK=8192,
                    X_EVICT=norm.SETTINGS.rmsnorm_x_evict, num_warps=nw)),
                ("softmax", lambda x, nw=warps: norm.softmax_kernel[(t,)](
                    x, out, d, d, d, BLOCK=8192, num_warps=nw))):
            gms = graph_time_ms(launch, xs)
            sweep.append((op, warps, gms, 2 * t * d * 2 / gms / 1e6 / copy_gbs))

    lines = [f"# RMSNorm / softmax rows on {name}; measured copy bandwidth {copy_gbs:.0f} GB/s",
             "", "| op | shape | impl | GPU time (us) | GB/s | of copy BW | kiln speedup |"
             " stream time (us) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['shape'][0]}x{r['shape'][1]} | {r['impl']} | "
                     f"{r['graph ms']*1e3:.1f} | {r['GB/s']:.0f} | {r['of copy BW']:.1%} | "
                     f"{r['kiln speedup']:.2f}x | {r['stream ms']*1e3:.1f} |")
    lines += ["", "The rows' DRAM traffic alone (GPU time):", "",
              "| shape | traffic | GPU time (us) | GB/s |", "|---|---|---|---|"]
    for c in ceilings:
        lines.append(f"| {c['shape'][0]}x{c['shape'][1]} | {c['traffic']} | "
                     f"{c['graph ms']*1e3:.1f} | {c['GB/s']:.0f} |")
    for t, d in sorted({tuple(c["shape"]) for c in ceilings}, reverse=True):
        rd, wr = (next(c["graph ms"] for c in ceilings
                       if c["shape"] == [t, d] and c["traffic"].startswith(k))
                  for k in ("read", "write"))
        lines.append(f"| {t}x{d} | read alone + write alone | {(rd + wr)*1e3:.1f} | "
                     f"{2 * t * d * 2 / (rd + wr) / 1e6:.0f} |")
    lines += ["", f"RMSNorm, kiln and torch.compile timed alternately {REPEATS} times (GPU "
              "time, us):", "", "| shape | impl | runs | median | min | max |",
              "|---|---|---|---|---|---|"]
    for t, d in sorted({tuple(r["shape"]) for r in repeats}, reverse=True):
        for impl in ("kiln", "torch.compile"):
            us = [r["graph ms"] * 1e3 for r in repeats
                  if r["shape"] == [t, d] and r["impl"] == impl]
            lines.append(f"| {t}x{d} | {impl} | {' '.join(f'{u:.1f}' for u in us)} | "
                         f"{statistics.median(us):.1f} | {min(us):.1f} | {max(us):.1f} |")
    lines += ["", "num_warps sweep at 32768x7168 (kiln kernels, GPU time):", "",
              "| op | num_warps | GPU time (us) | of copy BW |", "|---|---|---|---|"]
    lines += [f"| {op} | {nw} | {ms*1e3:.1f} | {frac:.1%} |" for op, nw, ms, frac in sweep]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(os.path.join(args.out, "bench_norm.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, "bench_norm.json"), "w") as f:
            json.dump({"copy GB/s": copy_gbs, "rows": rows, "traffic alone": ceilings,
                       "repeats": repeats}, f, indent=1)


if __name__ == "__main__":
    main()
