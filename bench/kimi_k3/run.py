"""Benchmark: every Kimi K3 kernel of kernels_dsl/kimi_k3/ (and the row RMSNorm of
kernels_dsl/common/norm.py at hidden 7168) on the GPU against the hardware and the peers, at
K3 shapes (hidden 7168, 896 experts top-16, 96 heads / TP8 = 12 heads x 128, kv_lora 512 +
rope 64, moe_intermediate 3072, T in {1, 64, 4096, 16384}; moe_align_single_token only at
T = 1, its one use; image_preprocess at three image batches). The runner: the cases are
bench/kimi_k3/cases.py, the configurations of ``--sweep`` bench/kimi_k3/sweeps.py.

For each case, in one run, every implementation (kiln, torch eager, torch.compile of the
reference compiled for the case's static shapes) is timed two ways:

- **isolated** (the headline, and every ratio): one call at a time, the L2 flushed before it
  (a 256 MiB write), CUDA events around the call alone, median of 31 calls
  (``bench.common.isolated_time_ms``): no launch overlaps another, inputs come from memory;
- **chain**: CUDA-graph replay of back-to-back calls rotating through every input set of the
  case (kiln's launches chained by PDL, overlapping their neighbours' prologues and tails;
  the peers' not). The table says whether the sets rotated through exceed 2x the L2 (``yes``)
  or stay partly cache-resident (the case's bytes times its sets).

The bytes the kernel must move over the isolated time are compared with the measured
device-to-device copy bandwidth (the ceiling), and with the fastest plain copy of the same
bytes timed the same isolated way (``same-size copy``: the ceiling at that size, launch and
tail included). Each kiln result is checked against the reference first. An empty kiln kernel
and an empty torch op (a 1-element ``add_``) are timed isolated too, and for T <= 64 the
table gives kiln's time minus the empty kiln launch.

    python bench/kimi_k3/run.py [--out DIR] [--budget SECONDS] [--only per_token,kv_indices]
        [--compile-mode max-autotune-no-cudagraphs]
    python bench/kimi_k3/run.py --sweep [--out DIR] [--only quant_mxfp4]

``--only`` keeps the cases (or sweeps) whose kernel name starts with one of the given
prefixes. ``--budget`` bounds the seconds spent before torch.compile peers are skipped (each
case compiles its own, for its shapes). ``--sweep`` times, instead of the cases, every
configuration of ``sweeps.SWEEPS`` (each passed to the wrapper as ``settings=``; isolated
calls) and writes ``bench_kimi_k3_sweep.{md,json}``, each configuration against the default
of the same case; ``bench/plot.py`` turns ``bench_kimi_k3.json`` into the PNG.
"""

import argparse
import dataclasses
import functools
import importlib
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from bench.common import L2_FLUSH_BYTES  # noqa: E402
from bench.common import graph_time_ms as common_graph_time_ms  # noqa: E402
from bench.common import isolated_time_ms as common_isolated_time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402

import cases as C  # noqa: E402
import sweeps as S  # noqa: E402
from cases import check, n_sets  # noqa: E402


@kiln.jit(num_warps=1)
def _empty_kernel(x_ptr, n):
    offs = kl.program_id(0) + kl.arange(0, 1)
    kl.store(x_ptr + offs, 0, mask=offs < n)


def graph_time_ms(fn, sets, reps=15):
    """Median GPU time per call of ``fn(*args)`` chained back to back, from CUDA-graph replay
    timed with CUDA events (bench.common): every argument tuple of ``sets`` once a replay (at
    least 20 calls)."""
    batch = max(20, len(sets))
    return common_graph_time_ms(lambda args: fn(*args), sets, batch, reps)


def isolated_time_ms(fn, sets):
    """Median GPU time of one call of ``fn(*args)`` alone, the L2 flushed before it
    (bench.common)."""
    return common_isolated_time_ms(lambda args: fn(*args), sets)


#: The H200's L2 (torch reports 60 MB); a chain leaves it when its sets exceed twice this.
L2_CACHE_BYTES = 60 << 20


def leaves_l2(nbytes, sets):
    """Whether a replay's input sets exceed twice the L2 (``bytes x sets``)."""
    return nbytes * len(sets) > 2 * L2_CACHE_BYTES


def copy_bandwidth_gbs():
    """Device-to-device copy of 2 GiB each way, timed on the stream (as bench/situ): inside a
    CUDA graph torch's copy_ becomes a memcpy node run by the copy engines, which measured
    only ~2.77 TB/s on the H200 (the SM copy kernels reach ~4.2 TB/s). Warmed up for ~1 s so
    that the clocks have ramped up."""
    src = torch.randn(1 << 30, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t0 = time.time()
    while time.time() - t0 < 1.0:
        dst.copy_(src)
        torch.cuda.synchronize()
    times = []
    for _ in range(10):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 5)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * (1 << 30) * 2 / statistics.median(times) / 1e6


def sweep(copy_gbs, only=None):
    """Times every configuration of ``sweeps.SWEEPS`` (``only``: kernel-name prefixes): each
    is ``dataclasses.replace(module.SETTINGS, **config)`` passed to the case's kiln call as
    ``settings=``, checked against the reference, then timed (isolated calls); the default
    first."""
    rows = []
    for sw in S.SWEEPS:
        mod = importlib.import_module("kernels_dsl." + sw.module)
        default = mod.SETTINGS
        configs = sorted(sw.configs, key=lambda c: dataclasses.replace(default, **c) != default)
        case = getattr(C, sw.case)(*sw.args)
        if only and not case.name.startswith(only):
            continue
        for cfg in configs:
            kiln_fn = functools.partial(case.kiln, settings=dataclasses.replace(default, **cfg))
            try:
                check(case.name, kiln_fn, case.ref, case.sets[0])
                us = isolated_time_ms(kiln_fn, case.sets) * 1e3
                err = None
            except Exception as e:  # a configuration that fails is reported, not hidden
                err = f"{type(e).__name__}: {str(e)[:300]}"
                print(f"  sweep {case.name} {cfg}: {err}")
                us = float("nan")
            rows.append({"kernel": case.name, "shape": case.shape, "config": cfg, "us": us,
                         "of copy BW": case.nbytes / us / 1e3 / copy_gbs, "error": err})
            print(json.dumps(rows[-1]), flush=True)
        del case
        torch.cuda.empty_cache()
    return rows


try:
    import triton
    import triton.language as tl

    @triton.jit
    def _triton_copy(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
except ImportError:  # the same-size copy then has torch's kernel alone
    triton = None


def same_size_copy_us(nbytes):
    """GPU time of the fastest plain copy moving the case's bytes (half read, half written,
    int32 words), timed like the kernels' headline (isolated calls, the L2 flushed before
    each): torch's elementwise kernel (``torch.neg(src, out=dst)``) and a Triton copy of 4096
    words a program. The ceiling of a kernel of this size, launch, ramp-up and the last
    wave's tail included, where the measured copy bandwidth is that of a 2 GiB copy."""
    words = max(nbytes // 8, 1)
    sets = [(torch.zeros(words, device="cuda", dtype=torch.int32),
             torch.empty(words, device="cuda", dtype=torch.int32))
            for _ in range(min(4, n_sets(nbytes)))]
    fns = [lambda s, d: torch.neg(s, out=d)]
    if triton is not None:
        fns.append(lambda s, d: _triton_copy[(triton.cdiv(words, 4096),)](
            s, d, words, BLOCK=4096, num_warps=4))
    best = min(isolated_time_ms(fn, sets) for fn in fns) * 1e3
    del sets
    return best


def run_case(case, t, copy_gbs, compiled, deadline, empty):
    """Times ``case`` isolated and chained for kiln and its peers; ratios from the isolated
    times."""
    name, shape, nbytes, sets, kiln_fn, ref_fn = case
    check(name, kiln_fn, ref_fn, sets[0])
    rows = [("kiln", kiln_fn), ("torch eager", ref_fn)]
    if compiled is not None and time.time() < deadline:
        rows.append(("torch.compile", compiled))
    out = []
    for impl, fn in rows:
        try:
            ms = isolated_time_ms(fn, sets)
            chain_ms = graph_time_ms(fn, sets)
        except Exception as e:  # a peer that fails is reported, not hidden
            print(f"  {name} {shape} {impl}: {type(e).__name__}: {str(e)[:200]}")
            ms = chain_ms = float("nan")
        out.append({"impl": impl, "us": ms * 1e3, "chain us": chain_ms * 1e3,
                    "GB/s": nbytes / ms / 1e6, "of copy BW": nbytes / ms / 1e6 / copy_gbs})
    for r in out:
        r["kiln speedup"] = r["us"] / out[0]["us"]
        r["kiln chain speedup"] = r["chain us"] / out[0]["chain us"]
    res = {"kernel": name, "T": t, "shape": shape, "bytes": nbytes, "rows": out,
           "chain sets": len(sets), "chain leaves L2": leaves_l2(nbytes, sets)}
    res["same-size copy (us)"] = same_size_copy_us(nbytes)
    if t is not None and t <= 64:
        res["kiln - empty kiln launch (us)"] = out[0]["us"] - empty["kiln"]
    return res


def compile_peer(ref, mode):
    """torch.compile of a case's reference for its static shapes (``dynamic=False``: one
    compiled graph per case, as a user would get at a fixed shape)."""
    return torch.compile(ref, dynamic=False, mode=mode)


def empty_launches():
    """GPU time of an empty kiln kernel and of an empty torch op (``add_(0)`` on one
    element), timed like the cases' headline (isolated)."""
    x = torch.zeros(16, device="cuda", dtype=torch.int32)
    y = torch.zeros(1, device="cuda")
    return {"kiln": isolated_time_ms(lambda: _empty_kernel[(1,)](x, 1), [()]) * 1e3,
            "torch": isolated_time_ms(lambda: y.add_(0), [()]) * 1e3}


def _fmt(v, spec):
    return "" if v is None or v != v else format(v, spec)


def case_table(report):
    lines = ["| kernel | T | shape | bytes | kiln us | of copy BW | torch eager us | "
             "torch.compile us | vs eager | vs compile | kiln chain us | eager chain us | "
             "compile chain us | chain leaves L2 | kiln - empty launch us | "
             "same-size copy us | of same-size copy |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in report["cases"]:
        if "error" in c:
            lines.append(f"| {c['kernel']} | {c.get('T', '')} | {c.get('shape', '')} | | "
                         f"failed: {c['error'][:120]} |" + " |" * 12)
            continue
        by = {r["impl"]: r for r in c["rows"]}
        k, e, tc = by["kiln"], by.get("torch eager"), by.get("torch.compile")
        leaves = "yes" if c["chain leaves L2"] else f"no ({c['chain sets']} x {c['bytes']} B)"
        lines.append(
            f"| {c['kernel']} | {'' if c['T'] is None else c['T']} | {c['shape']} | "
            f"{c['bytes']} | {k['us']:.2f} | {k['of copy BW']:.1%} | "
            f"{_fmt(e and e['us'], '.2f')} | {_fmt(tc and tc['us'], '.2f')} | "
            f"{_fmt(e and e['kiln speedup'], '.2f')}x | {_fmt(tc and tc['kiln speedup'], '.2f')}x"
            f" | {k['chain us']:.2f} | {_fmt(e and e['chain us'], '.2f')} | "
            f"{_fmt(tc and tc['chain us'], '.2f')} | {leaves} | "
            f"{_fmt(c.get('kiln - empty kiln launch (us)'), '+.2f')} | "
            f"{_fmt(c.get('same-size copy (us)'), '.2f')} | "
            f"{_fmt(c.get('same-size copy (us)', float('nan')) / k['us'], '.1%')} |")
    return lines


def sweep_table(rows):
    """The sweep's rows, each against the default configuration of the same case (kernel and
    shape: the default is timed first for each)."""
    lines = ["| kernel | shape | config | GPU time (us) | of copy BW | vs default |",
             "|---|---|---|---|---|---|"]
    base = {}
    for r in rows:
        key = (r["kernel"], r["shape"])
        base.setdefault(key, r["us"])
        cfg = ", ".join(f"{k}={v}" for k, v in r["config"].items())
        note = f" ({r['error'][:80]})" if r.get("error") else ""
        lines.append(f"| {r['kernel']} | {r['shape']} | {cfg}{note} | {r['us']:.2f} | "
                     f"{r['of copy BW']:.1%} | {base[key] / r['us']:.2f}x |")
    best = {}
    for r in rows:
        key = (r["kernel"], r["shape"])
        if r["us"] == r["us"] and (key not in best or r["us"] < best[key]["us"]):
            best[key] = r
    lines += ["", "Fastest configuration per case:", ""]
    for (k, shape), r in best.items():
        cfg = ", ".join(f"{n}={v}" for n, v in r["config"].items())
        lines.append(f"- {k} {shape}: {cfg}: {r['us']:.2f} us, {r['of copy BW']:.1%} of copy "
                     f"BW, {base[(k, shape)] / r['us']:.2f}x the default")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--budget", type=float, default=420.0,
                        help="seconds after which torch.compile peers are skipped")
    parser.add_argument("--compile-mode", default=None,
                        help="torch.compile mode of the peers (e.g. max-autotune-no-cudagraphs)")
    parser.add_argument("--only", default=None,
                        help="comma-separated kernel-name prefixes to run")
    parser.add_argument("--sweep", action="store_true",
                        help="time the configurations of sweeps.SWEEPS instead")
    args = parser.parse_args()
    only = tuple(args.only.split(",")) if args.only else None
    t_start = time.time()
    deadline = t_start + args.budget
    props = torch.cuda.get_device_properties(0)
    copy_gbs = copy_bandwidth_gbs()
    empty = empty_launches()
    report = {"device": props.name, "copy GB/s (read+write)": copy_gbs,
              "empty kiln kernel (us)": empty["kiln"], "empty torch op (us)": empty["torch"],
              "command": " ".join(["python", "bench/kimi_k3/run.py"] + sys.argv[1:])}
    report["L2 flush bytes"] = L2_FLUSH_BYTES
    report["torch.compile"] = {"dynamic": False, "mode": args.compile_mode}
    head = [f"measured copy bandwidth {copy_gbs:.0f} GB/s (read + write); empty kiln kernel "
            f"{empty['kiln']:.2f} us, empty torch op {empty['torch']:.2f} us (isolated). "
            f"Headline times and ratios: isolated calls (L2 flushed before each, CUDA events "
            f"around the call, median of 31); chain: CUDA-graph replay of back-to-back calls "
            f"over every input set (kiln's PDL launches overlap there). torch.compile: "
            f"dynamic=False (compiled for each case's shapes), mode={args.compile_mode}.", ""]

    if args.sweep:
        report["sweep"] = sweep(copy_gbs, only)
        report["copy GB/s (end)"] = copy_bandwidth_gbs()
        report["seconds"] = time.time() - t_start
        lines = [f"# Kimi K3 configuration sweeps on {props.name}"] + head + \
            sweep_table(report["sweep"])
        stem = "bench_kimi_k3_sweep"
    else:
        report["cases"] = []
        for factory, arg_list in C.CASES:
            for fargs in arg_list:
                try:
                    case = factory(*fargs)
                except Exception as e:  # a broken case is reported, the run goes on
                    case = ("error", f"{factory.__name__}{fargs}: {type(e).__name__}: {e}")
                if case is None:
                    continue
                t = fargs[0] if len(fargs) == 1 else None
                name = case[0] if case[0] != "error" else factory.__name__[5:]
                if only and not name.startswith(only):
                    break
                if case[0] == "error":
                    res = {"kernel": name, "T": t, "error": case[1][:500]}
                else:
                    try:
                        compiled = None
                        if time.time() < deadline:
                            compiled = compile_peer(case.ref, args.compile_mode)
                        res = run_case(case, t, copy_gbs, compiled, deadline, empty)
                    except Exception as e:
                        res = {"kernel": name, "T": t, "shape": case[1],
                               "error": f"{type(e).__name__}: {str(e)[:500]}"}
                report["cases"].append(res)
                print(json.dumps(res), flush=True)
                del case
                torch.cuda.empty_cache()
        report["copy GB/s (end)"] = copy_bandwidth_gbs()
        report["seconds"] = time.time() - t_start
        lines = [f"# Kimi K3 kernels on {props.name}"] + head + case_table(report) + [
            "", f"copy bandwidth re-measured at the end: {report['copy GB/s (end)']:.0f} GB/s; "
            f"{report['seconds']:.0f} s in all"]
        stem = "bench_kimi_k3"
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_results(args.out, stem, text, report)


if __name__ == "__main__":
    main()
