"""Host time per launch (no GPU timing): kiln's JIT path, its bundle path, the raw runtime
binding, against a torch eager op and a Triton kernel launch, in one run.

Each launches a tiny kernel N times back to back and divides the host wall time by N (the GPU
work is a few microseconds, so the host is the bottleneck being measured).

    python bench/launch/run.py [--out DIR]
"""

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from kernels_dsl.kimi_k3 import situ  # noqa: E402

N = 5000


def per_launch_us(fn, n=N):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - t
    torch.cuda.synchronize()
    return elapsed / n * 1e6


@kiln.jit(num_warps=4)
def add_one(x_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(x_ptr + offs, kl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    x = torch.zeros(1024, device="cuda", dtype=torch.float32)
    rows = {}
    rows["kiln JIT kernel[grid](...)"] = per_launch_us(
        lambda: add_one[(1,)](x, 1024, BLOCK=1024))
    torch.cuda.synchronize()
    assert float(x[0]) > 0, "the kiln kernel did not run"

    xs = torch.randn(1, 2 * 64, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(1, 64, device="cuda", dtype=torch.bfloat16)
    rows["kiln situ_and_mul wrapper (T=1)"] = per_launch_us(
        lambda: situ.situ_and_mul(xs, out))

    compiled = add_one.compile({"x_ptr": "*f32", "n": "i32"}, {"BLOCK": 1024},
                               divisibility=["x_ptr", "n"], arch=kiln._runtime.device_arch())
    from kiln.runtime import LaunchableKernel

    lk = LaunchableKernel.from_images(compiled.meta, {kiln._runtime.device_arch(): compiled.cubin})
    rows["kiln precompiled LaunchableKernel[grid](...)"] = per_launch_us(lambda: lk[(1,)](x, 1024))
    raw = kiln._runtime.Kernel.from_images(compiled.meta,
                                            {kiln._runtime.device_arch(): compiled.cubin})
    ptr = x.data_ptr()
    stream = torch.cuda.current_stream().cuda_stream
    rows["kiln raw _runtime.Kernel.launch (ints)"] = per_launch_us(
        lambda: raw.launch((1, 1, 1), [ptr, 1024], stream))
    rows["torch eager x.add_(1)"] = per_launch_us(lambda: x.add_(1))
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def tri_add_one(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

        rows["triton kernel[grid](...)"] = per_launch_us(
            lambda: tri_add_one[(1,)](x, 1024, BLOCK=1024))
    except Exception as e:  # noqa: BLE001 - report, do not hide
        print(f"triton unavailable: {type(e).__name__}: {e}")

    lines = [f"# host time per launch on {torch.cuda.get_device_name()} ({N} launches each)", "",
             "| path | us per launch |", "|---|---|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in rows.items()]
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        situ.situ_and_mul(xs, out)
    prof.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(15)
    text = "\n".join(lines)
    print(text)
    print(s.getvalue()[:4000])
    if args.out:
        with open(os.path.join(args.out, "bench_launch.md"), "w") as f:
            f.write(text + "\n\n```\n" + s.getvalue() + "\n```\n")


if __name__ == "__main__":
    main()
