"""Runs GPU tests under compute-sanitizer: memcheck, racecheck, synccheck and initcheck, each over
the Kimi K3 and compiler tests it applies to, at the small shapes the sanitizer can finish
(``-k`` selections; the instrumented kernels run 10-1000x slower). Every selection must report
``ERROR SUMMARY: 0 errors`` and its tests must pass.

    python test/gpu/sanitize.py [--tools memcheck,racecheck] [--out DIR] [--timeout S] [--jobs N]

Run from the repository (or the device pack) root on a GPU machine with compute-sanitizer on
the PATH (or under $CUDA_HOME/bin). Writes ``sanitizer-<tool>.log`` per tool and
``sanitizer.md`` (the table) into ``--out``; exits 1 on any error, failure or timeout.
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time

#: test selections per tool: (file, -k expression or "") or a node id. memcheck: every Kimi
#: K3 module and the compiler features with their own memory paths (TMA, bulk copies,
#: clusters, dots); racecheck: the kernels that share memory between threads or blocks (rings,
#: clusters, dots, reductions); synccheck: barriers, clusters and warp-specialized loops;
#: initcheck: outputs that must be fully written.
K3 = ["test_situ.py", "test_fp8_quant.py", "test_fp8_scale_contract.py",
      "test_mla_output_gate.py", "test_mla_kv.py", "test_concat_mla.py", "test_attn_res.py",
      "test_moe_fused_gate.py", "test_pack_topk_ids.py", "test_kernels_batch2.py",
      "test_tensor_hash.py", "test_image_preprocess.py", "test_kda_decode.py",
      "test_kda_verify.py"]
SMALL = "not 4096 and not 4097 and not 16384 and not 5000 and not 8192"
SELECTIONS = {
    "memcheck": [(f, SMALL + " and not bundle") for f in K3] + [
        ("test_tma.py", SMALL), ("test_bulk_load.py", SMALL), ("test_cluster.py", SMALL),
        ("test_dot.py", SMALL), ("test_gemm_tma.py", "128 and not 4096")],
    # racecheck and synccheck instrument every shared-memory access and barrier (1000x and
    # more): one small test each, by its node id
    "racecheck": ["test_attn_res.py::test_cluster_kernel_small_t[1-1-False]",
                  "test_moe_fused_gate.py::test_k3_random_exact[jit-0-1]",
                  "test_kda_decode.py::test_packed_decode[jit-1-12-12-softplus]",
                  "test_reduce_multi.py::test_sum_pair_1d[1-256]",
                  "test_bulk_load.py::test_pipelined_bulk_load_with_fewer_rows_than_stages",
                  "test_tma.py::test_affine_edges[shape0-dtype0-block0]",
                  "test_dot.py::test_dot_tile[1-False-64-64-64-bf16]",
                  "test_gemm_tma.py::test_gemm_tma[dtype0-128-256-64-block1-4-4]",
                  "test_warp_specialize.py::test_warp_specialized_gemm[dtype0-256-block1-4-4]"],
    "synccheck": ["test_cluster.py::test_cluster_ids_and_ranks[cluster0]",
                  "test_cluster.py::test_cluster_sum_through_distributed_shared_memory"
                  "[dtype0-1024-cluster1]",
                  "test_attn_res.py::test_cluster_kernel_small_t[1-1-False]",
                  "test_gemm_tma.py::test_gemm_tma[dtype0-128-256-64-block1-4-4]",
                  "test_warp_specialize.py::test_warp_specialized_gemm[dtype0-256-block1-4-4]"],
    "initcheck": [(f, SMALL + " and not bundle") for f in
                  ("test_situ.py", "test_fp8_quant.py", "test_mla_kv.py", "test_concat_mla.py",
                   "test_pack_topk_ids.py", "test_kernels_batch2.py")],
}


def sanitizer():
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    cand = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                        "compute-sanitizer")
    return cand if os.path.exists(cand) else None


def run(tool, path, expr, timeout):
    cmd = [sanitizer(), "--tool", tool, "--target-processes", "all", "--print-limit", "20",
           sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
           os.path.join("test", "gpu", path)]
    if expr:
        cmd += ["-k", expr]
    if tool == "racecheck":
        cmd[3:3] = ["--racecheck-report", "hazard"]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out, rc = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                      for x in (e.stdout, e.stderr))
        rc = None
    # memcheck, synccheck, initcheck: "ERROR SUMMARY: n errors"; racecheck: "RACECHECK
    # SUMMARY: h hazards displayed (n errors, w warnings)"
    errors = [int(n) for n in re.findall(r"ERROR SUMMARY: (\d+) error", out)]
    race = r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error"
    errors += [int(n) for n in re.findall(race, out)]
    passed = re.search(r"(\d+) passed", out)
    failed = re.search(r"(\d+) failed", out)
    print(f"{tool} {path} -k {expr!r}: rc {rc}, errors {errors}, "
          f"{passed[0] if passed else '0 passed'}, {failed[0] if failed else '0 failed'}, "
          f"{time.time() - t0:.0f} s", flush=True)
    return {"tool": tool, "file": path, "k": expr, "seconds": time.time() - t0,
            "errors": sum(errors) if errors else None, "passed": int(passed[1]) if passed else 0,
            "failed": int(failed[1]) if failed else 0, "timeout": rc is None, "rc": rc,
            "log": f"\n### {tool} {path} -k {expr!r}\n{' '.join(cmd)}\n{out}\n"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", default="memcheck,racecheck,synccheck,initcheck")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a selection may take")
    parser.add_argument("--jobs", type=int, default=1,
                        help="selections run at once (each is its own process on the GPU)")
    args = parser.parse_args()
    if sanitizer() is None:
        print("sanitize: compute-sanitizer not found (PATH, $CUDA_HOME/bin)")
        sys.exit(1)
    os.makedirs(args.out, exist_ok=True)
    tools = args.tools.split(",")
    work = [(tool, *((sel, "") if isinstance(sel, str) else sel))
            for tool in tools for sel in SELECTIONS[tool]]
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda w: run(*w, args.timeout), work))
    for tool in tools:
        with open(os.path.join(args.out, f"sanitizer-{tool}.log"), "w") as log:
            log.writelines(r.pop("log") for r in rows if r["tool"] == tool)
    lines = ["| tool | tests | -k | passed | failed | sanitizer errors | seconds |",
             "|---|---|---|---|---|---|---|"]
    ok = True
    for r in rows:
        good = r["errors"] == 0 and r["failed"] == 0 and not r["timeout"] and r["passed"] > 0
        ok &= good
        errs = "timeout" if r["timeout"] else ("none reported" if r["errors"] is None
                                               else r["errors"])
        lines.append(f"| {r['tool']} | {r['file']} | {r['k']} | {r['passed']} | {r['failed']} "
                     f"| {errs} | {r['seconds']:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(args.out, "sanitizer.md"), "w") as f:
        f.write(text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
