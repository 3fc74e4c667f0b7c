"""Cold compile of a ``kda_chunk_prefill`` call (CPU only): the kernels one call launches (the
chunk kernel of its gate mode, the UT kernel, the chain wide or narrow; with or without
cu_seqlens) compiled side by side, a thread each, as its first call does by JIT
(``_launch.compile_together``), per arch; issue 26's bar is 2 s per arch on the 2-core
machine. Cold = no cache, in a process that has compiled once already (the one-time init is
reported apart); each group's serial sum beside it.

    PYTHONPATH=build/python:. .venv/bin/python bench/kda/prefill_compile.py [--out DIR]
"""

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from bench.compile.run import ARCHS, compile_once  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.kimi_k3 import kda_prefill as mod  # noqa: E402


def groups():
    """(label, [spec, ...]) of every call's kernels."""
    by_name = {}
    for spec in mod.AOT_SPECIALIZATIONS:
        by_name[(spec.kernel_name, tuple(sorted(spec.constexprs.items())))] = spec

    def find(cfg):
        return by_name[(cfg[0], tuple(sorted(cfg[1].items())))]

    for gate in (mod.GATE_GIVEN, mod.GATE_SOFTPLUS, mod.GATE_LOWER_BOUND):
        for varlen in (False, True):
            for wide in (True, False):
                label = (f"gate {gate}, {'varlen' if varlen else 'fixed'}, "
                         f"{'wide' if wide else 'narrow'} chain")
                yield label, [find(mod.chunk_launch_config(gate, varlen)),
                              find(mod.ut_launch_config(varlen)),
                              find(mod.chain_launch_config(varlen, wide))]


def together(specs, arch):
    start = time.perf_counter()
    with ThreadPoolExecutor(len(specs)) as pool:
        list(pool.map(lambda s: compile_once(s, arch), specs))
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    first = compile_once(next(groups())[1][1], ARCHS[0])
    rows, worst = [], {}
    for label, specs in groups():
        for arch in ARCHS:
            serial = sum(compile_once(s, arch) for s in specs)
            wall = together(specs, arch)
            worst[arch] = max(worst.get(arch, 0.0), wall)
            rows.append(f"| {label} | {arch} | {wall:.3f} | {serial:.3f} |")
            print(rows[-1], flush=True)
    text = "\n".join(
        [f"# kda_chunk_prefill: cold compile of a call's kernels ({os.cpu_count()} cores)", "",
         f"first compile of the process (one-time init included): {first:.3f} s", "",
         "| call | arch | side by side (s) | serial sum (s) |", "|---|---|---|---|", *rows, "",
         "slowest call per arch, side by side: "
         + ", ".join(f"{a} {t:.3f} s" for a, t in worst.items()), "",
         "Command: `python bench/kda/prefill_compile.py`"])
    print(text)
    if args.out:
        write_results(args.out, "prefill_compile", text)


if __name__ == "__main__":
    main()
