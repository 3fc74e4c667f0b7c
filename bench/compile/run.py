"""Compile-time benchmark (CPU only): cold compile of each Kimi K3 specialization per arch,
stage by stage, and the whole library for the three archs.

Cold = a fresh process-level compile with no cache (the JIT disk cache is bypassed: this calls
the compile stages directly). Run on the 2-core dev machine:

    PYTHONPATH=build/python:. .venv/bin/python bench/compile/run.py [--out DIR]
"""

import argparse
import importlib
import json
import os
import statistics
import time

import kiln
from kiln.aot import Spec  # noqa: F401  (the specializations are kiln.aot.Spec objects)

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    all_specs = list(specs())
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

    lines = [f"# kiln compile times ({os.cpu_count()} cores; kiln {kiln.__version__ if hasattr(kiln, '__version__') else ''})",
             f"first compile in a fresh process (includes one-time init): {first:.3f} s",
             f"whole library ({len(all_specs)} specializations x {len(ARCHS)} archs, serial): "
             f"{library_s:.2f} s", "", "| kernel | constexprs | arch | median (s) | max (s) |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['constexprs']} | {r['arch']} | {r['median_s']:.3f} | "
                     f"{r['max_s']:.3f} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bench_compile.json"), "w") as f:
            json.dump({"first_s": first, "library_s": library_s, "rows": rows}, f, indent=1)
        with open(os.path.join(args.out, "bench_compile.md"), "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
