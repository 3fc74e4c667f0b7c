"""Compile-time benchmark (CPU only): cold compile of each Kimi K3 specialization per arch,
the whole library for the three archs, and warm disk-cache hits.

Cold = a compile with no cache (the JIT disk cache is bypassed: this calls the compile stages
directly), in a process that has compiled once already (the one-time init is reported apart).
Warm hit = in a fresh process, with the cache populated: the time from the launch-time lookup
(specialization, source hash, cache key, reading and verifying the entry) to having the cubin,
i.e. what ``kernel[grid](...)`` spends before creating the CUDA function; the first lookup of
the process (which also hashes the kernel's source) and the median of the next ones.
Run on the 2-core dev machine:

    PYTHONPATH=build/python:. .venv/bin/python bench/compile/run.py [--out DIR] [--kernels NAME]
"""

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import kiln
from kiln.aot import Spec  # noqa: F401  (the specializations are kiln.aot.Spec objects)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from bench.report import write_results  # noqa: E402

ARCHS = ("sm_90a", "sm_100a", "sm_103a")


def specs():
    package = importlib.import_module("kernels_dsl.kimi_k3")
    for module_name in package.MODULES:
        module = importlib.import_module(f"kernels_dsl.kimi_k3.{module_name}")
        yield from module.AOT_SPECIALIZATIONS


def compile_once(spec, arch):
    start = time.perf_counter()
    spec.kernel.compile(spec.signature, spec.constexprs, divisibility=spec.divisibility,
                        num_warps=spec.num_warps, arch=arch, upto="cubin", name=spec.kernel_name)
    return time.perf_counter() - start


_WARM_CHILD = r"""
import importlib, json, statistics, sys, time
sys.path.insert(0, {repo!r})
package = importlib.import_module("kernels_dsl.kimi_k3")
specs = [s for m in package.MODULES
         for s in importlib.import_module("kernels_dsl.kimi_k3." + m).AOT_SPECIALIZATIONS]
specs = [x for s in specs for x in s.expand() if {only!r} is None or {only!r} in x.kernel_name]
arch = {arch!r}

def lookup(spec):
    t0 = time.perf_counter()
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name,
                             cache=True)
    dt = time.perf_counter() - t0
    assert ck.cubin_tool == "cache", "not a cache hit"
    return dt

first = lookup(specs[0])
rest = [lookup(s) for s in specs[1:] for _ in range(5)] or [lookup(specs[0])]
print(json.dumps({{"first_ms": first * 1e3, "median_ms": statistics.median(rest) * 1e3,
                  "max_ms": max(rest) * 1e3, "imported_C": "kiln._C" in sys.modules}}))
"""


def warm_hits(all_specs, archs, only=None):
    """Populates a fresh cache, then measures hits in a fresh process per arch."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KILN_CACHE_DIR=cache)
        os.environ["KILN_CACHE_DIR"] = cache
        try:
            for spec in all_specs:
                for arch in archs:
                    spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                                        num_warps=spec.num_warps, arch=arch,
                                        name=spec.kernel_name, cache=True)
        finally:
            del os.environ["KILN_CACHE_DIR"]
        for arch in archs:
            child = _WARM_CHILD.format(repo=repo, arch=arch, only=only)
            r = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True,
                               text=True, check=True)
            out[arch] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kernels", default=None,
                        help="only the specializations whose name contains this")
    args = parser.parse_args()
    all_specs = [x for s in specs() for x in s.expand()
                 if args.kernels is None or args.kernels in x.kernel_name]
    # Warm the process (MLIR context, LLVM target init, libdevice read) once, as any compile
    # would; report it separately.
    first = compile_once(all_specs[0], ARCHS[0])
    rows = []
    for spec in all_specs:
        for arch in ARCHS:
            times = [compile_once(spec, arch) for _ in range(args.repeat)]
            rows.append({"kernel": spec.kernel_name, "constexprs": spec.constexprs, "arch": arch,
                         "median_s": statistics.median(times), "max_s": max(times)})
    start = time.perf_counter()
    for spec in all_specs:
        for arch in ARCHS:
            compile_once(spec, arch)
    library_s = time.perf_counter() - start
    warm = warm_hits(all_specs, ARCHS, args.kernels)

    lines = [f"# kiln compile times ({os.cpu_count()} cores; kiln {kiln.__version__})",
             f"first compile in a fresh process (includes one-time init): {first:.3f} s",
             f"whole library ({len(all_specs)} specializations x {len(ARCHS)} archs, serial): "
             f"{library_s:.2f} s", "",
             "warm disk-cache hit, fresh process (lookup -> cubin):", "",
             "| arch | first hit (ms) | next hits, median (ms) | max (ms) | imports kiln._C |",
             "|---|---|---|---|---|"]
    for arch, w in warm.items():
        lines.append(f"| {arch} | {w['first_ms']:.2f} | {w['median_ms']:.2f} | "
                     f"{w['max_ms']:.2f} | {w['imported_C']} |")
    lines += ["", "cold compile per kernel and arch (no cache):", "",
              "| kernel | constexprs | arch | median (s) | max (s) |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['constexprs']} | {r['arch']} | {r['median_s']:.3f} | "
                     f"{r['max_s']:.3f} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_results(args.out, "bench_compile", text,
                      {"first_s": first, "library_s": library_s, "warm": warm, "rows": rows})


if __name__ == "__main__":
    main()
