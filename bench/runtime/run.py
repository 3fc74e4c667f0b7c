"""Runtime benchmarks on the GPU: host time per launch (C++, C API, Python paths) against a
torch eager op and a Triton kernel launch, and the time to open a bundle and load all of its
kernels. Each launch path runs a one-row situ_and_mul (the GPU work is ~2 us, so the host is
what is measured): N launches back to back, host wall time / N, median of 5 rounds.

    python bench/runtime/run.py [--bundle PATH] [--out DIR]

The C++ numbers come from bench/runtime/launch_bench (built by scripts/device-pack.sh).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))

import torch  # noqa: E402

from bench.report import write_results  # noqa: E402

N = 5000


def per_launch_us(fn, n=N, rounds=5):
    for _ in range(300):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", default=os.environ.get("KILN_BUNDLE", "build/kimi_k3.kbundle"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from kiln.runtime import Bundle

    rows = []
    # Open + load every kernel (the context exists already: torch made it).
    torch.zeros(1, device="cuda")
    t0 = time.perf_counter()
    bundle = Bundle(args.bundle)
    t1 = time.perf_counter()
    natives = [bundle._bundle.kernel(m["name"], m["constexprs"]) for m in bundle.kernels()]
    for k in natives:
        k.load()
    t2 = time.perf_counter()
    rows.append(("Python: Bundle(path) open + verify", (t1 - t0) * 1e3, "ms"))
    rows.append((f"Python: load all {len(natives)} kernels (cuModuleLoadData)", (t2 - t1) * 1e3,
                 "ms"))

    x = torch.randn(1, 128, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(1, 64, device="cuda", dtype=torch.bfloat16)
    situ = bundle.kernel("situ_and_mul", BLOCK=2048, HAS_LINEAR_BETA=True)
    call = (x, out, 64, 128, 64, 4.0, 0.25, 25.0, 0.04)
    stream = torch.cuda.current_stream().cuda_stream
    raw = situ._kernel
    ptrs = [x.data_ptr(), out.data_ptr(), 64, 128, 64, 4.0, 0.25, 25.0, 0.04]
    rows.append(("Python: raw _runtime.Kernel.launch (ints)",
                 per_launch_us(lambda: raw.launch((1, 1, 1), ptrs, stream)), "us"))
    rows.append(("Python: LaunchableKernel[grid](tensors, ...)",
                 per_launch_us(lambda: situ[(1, 1)](*call)), "us"))
    family = bundle.family("situ_and_mul")
    rows.append(("Python: KernelFamily[grid](tensors, ..., HAS_LINEAR_BETA=True) (selects)",
                 per_launch_us(lambda: family[(1, 1)](*call, HAS_LINEAR_BETA=True)), "us"))
    torch.cuda.synchronize()

    ref_in = x.float()
    g, u = ref_in[:, :64], ref_in[:, 64:]
    ref = (4.0 * torch.tanh(g / 4.0) * torch.sigmoid(g)) * (25.0 * torch.tanh(u / 25.0))
    torch.testing.assert_close(out.float(), ref.to(torch.bfloat16).float(), rtol=2e-2, atol=2e-2)

    y = torch.zeros(1024, device="cuda")
    rows.append(("torch eager y.add_(1)", per_launch_us(lambda: y.add_(1)), "us"))
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def add_one(p, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(p + offs, tl.load(p + offs, mask=m) + 1.0, mask=m)

        rows.append(("triton kernel[grid](...)",
                     per_launch_us(lambda: add_one[(1,)](y, 1024, BLOCK=1024)), "us"))
    except Exception as e:  # noqa: BLE001 - report, keep the other rows
        rows.append((f"triton unavailable ({type(e).__name__})", float("nan"), "us"))

    exe = os.path.join(HERE, "launch_bench")
    if os.path.exists(exe):
        r = subprocess.run([exe, args.bundle, "20000"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            rows.append((f"C++ launch_bench failed: {r.stderr.strip()[:200]}", float("nan"), ""))
        for line in r.stdout.splitlines():
            key, val = line.split()
            label = {"bundle_open_us": ("C++: Bundle::open + verify", 1e-3, "ms"),
                     "bundle_load_all_us": ("C++: load all kernels", 1e-3, "ms"),
                     "cpp_launch_us": ("C++: Kernel::launch", 1.0, "us"),
                     "c_api_launch_us": ("C: kiln_kernel_launch", 1.0, "us"),
                     "driver_cuLaunchKernel_us": ("driver floor: cuLaunchKernel (same cubin)",
                                                  1.0, "us"),
                     "driver_cuLaunchKernelEx_us": ("driver floor: cuLaunchKernelEx (same cubin)",
                                                    1.0, "us")}.get(key)
            if label:
                rows.append((label[0], float(val) * label[1], label[2]))
    else:
        rows.append(("C++ launch_bench not built", float("nan"), ""))

    name = torch.cuda.get_device_name()
    lines = [f"# kiln runtime on {name}", "",
             f"command: `python3 bench/runtime/run.py --bundle {os.path.basename(args.bundle)}`",
             f"(launches: {N} x 5 rounds, median; host wall time per launch)", "",
             "| measurement | value | unit |", "|---|---|---|"]
    lines += [f"| {k} | {v:.2f} | {u} |" for k, v, u in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        write_results(args.out, "bench_runtime", text)


if __name__ == "__main__":
    main()
