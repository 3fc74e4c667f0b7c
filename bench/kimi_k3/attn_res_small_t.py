"""Benchmark: attn_res at few tokens (docs/kernels/attn_res.md), where its time is latency,
not bandwidth.

Tables, in one run, GPU time per call from CUDA-graph replay (bench/kimi_k3/run.py); every
configuration is an ``attn_res.Settings`` passed to the wrapper:

1. What a cluster kernel's steps cost: an empty 8-warp kernel (grid 8) without and with a
   cluster of 8, then 0..8 cluster barriers and 1..4 ``kl.cluster_gather`` of 4 floats.
2. The cluster kernel (cluster_size programs a token) at T in {1, 8, 33, 48} for 2, 4 and 8
   warps a program, nvb 8 and nvb 4 with write_prefix (checked against the fp32 reference
   first).
3. At T in {33 .. 395} the cluster kernel (2 warps) against the row ring's configurations
   (thread elements x stages x programs an SM).
4. At T in {1 .. 4096} the kernel the wrapper picks by default against the token kernel
   (one program per token, its rows whole, 16 warps).
5. At T in {1 .. 200} the default against the cluster kernel of 2 to 16 programs a token.

    python bench/kimi_k3/attn_res_small_t.py [--out DIR] [--tables steps,warps,ring,token,sizes]

writes ``attn_res_small_t.{md,json}`` to DIR (default: the current directory); the curated
results are in bench/results/kimi_k3/attn_res.md.
"""

import argparse
import dataclasses
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from kernels_dsl.kimi_k3 import attn_res as A  # noqa: E402

import cases as C  # noqa: E402
import run as R  # noqa: E402


@kiln.jit(num_warps=8)
def _empty(x_ptr, n):
    kl.pdl_wait()
    offs = kl.program_id(0) + kl.arange(0, 1)
    kl.store(x_ptr + offs, 0.0, mask=offs < n)
    kl.pdl_launch_dependents()


@kiln.jit(num_warps=8, cluster=(8, 1, 1))
def _barriers(x_ptr, n, NB: kl.constexpr):
    kl.pdl_wait()
    for _ in kl.static_range(NB):
        kl.cluster_barrier()
    offs = kl.program_id(0) + kl.arange(0, 1)
    kl.store(x_ptr + offs, 0.0, mask=offs < n)
    kl.pdl_launch_dependents()


@kiln.jit(num_warps=8, cluster=(8, 1, 1))
def _gathers(x_ptr, n, NG: kl.constexpr):
    kl.pdl_wait()
    v = kl.full((4,), 1.0, kl.float32) + kl.cluster_cta_rank().to(kl.float32)
    for _ in kl.static_range(NG):
        v = kl.sum(kl.reshape(kl.cluster_gather(v), (8, 4)), axis=0)
    offs = kl.program_id(0) * 4 + kl.arange(0, 4)
    kl.store(x_ptr + offs, v, mask=offs < n)
    kl.pdl_launch_dependents()


def us(fn, sets):
    return R.graph_time_ms(fn, sets) * 1e3


def check(case):
    name, _, _, sets, fn, ref = case
    C.check(name, fn, ref, sets[0])


def steps():
    x = [(torch.zeros(64, device="cuda"),) for _ in range(4)]
    rows = [("empty, grid 8", us(lambda a: _empty[(8,)](a, 0), x)),
            ("empty, grid 8, cluster 8", us(lambda a: _empty[(8,)](a, 0, cluster=(8, 1, 1)), x))]
    rows += [(f"{nb} cluster barriers", us(lambda a, nb=nb: _barriers[(8,)](a, 0, NB=nb), x))
             for nb in (0, 1, 2, 4, 8)]
    rows += [(f"{ng} cluster_gather", us(lambda a, ng=ng: _gathers[(8,)](a, 0, NG=ng), x))
             for ng in (1, 2, 4)]
    return rows


def settings(**changes):
    """attn_res's default settings with ``changes``."""
    return dataclasses.replace(A.SETTINGS, **changes)


def with_settings(case, nvb, write_prefix, s):
    """run.py's attn_res case (``C._case_attn_res(t, nvb, write_prefix)``) launching the
    wrapper with the settings ``s``."""
    name, shape, nbytes, sets, _, ref = case
    cw, ow = C._attn_res_weights()

    def kiln_fn(prefix, bank, out):
        o = A.attn_res(prefix, bank, cw, ow, out, nvb=nvb, eps=C.ATTN_RES_EPS,
                       write_prefix=write_prefix, settings=s)
        return (o, bank[:, nvb]) if write_prefix else o

    return name, shape, nbytes, sets, kiln_fn, ref


def _cluster_warps(w, **changes):
    """The cluster kernel on ``w`` warps, cluster_size programs a token at any T."""
    return settings(cluster_many_size=A.SETTINGS.cluster_size, cluster_warps=w,
                    cluster_many_warps=w, **changes)


def cluster_warps():
    return _time_configs((1, 8, 33, 48), [(f"{w} warps", _cluster_warps(w)) for w in (2, 4, 8)])


def cluster_or_ring():
    """The cluster kernel (2 warps) at every T, or the ring in one configuration at every T
    (the few-token kernels off)."""
    configs = [("cluster, 2 warps", _cluster_warps(2, cluster_max_waves=1000))]
    configs += [(f"ring {e}x{st}x{p}",
                 settings(cluster_max_waves=0, token_max_waves=0, ring_thread_elems=e,
                          ring_stages=st, ring_programs_per_sm=p, ring_few_thread_elems=e,
                          ring_few_stages=st, ring_few_programs_per_sm=p))
                for e, st, p in ((16, 4, 2), (32, 3, 2), (32, 4, 1), (64, 3, 3))]
    return _time_configs((33, 48, 64, 128, 200, 395), configs)


def _time_configs(ts, configs):
    """Rows (T, nvb, write_prefix, label, us): each (label, settings) of ``configs`` at each
    T, nvb 8 and nvb 4 with write_prefix (checked against the reference first)."""
    rows = []
    for t in ts:
        for nvb, wp in ((8, False), (4, True)):
            base = C._case_attn_res(t, nvb, wp)
            for label, s in configs:
                case = with_settings(base, nvb, wp, s)
                check(case)
                rows.append((t, nvb, wp, label, us(case[4], case[3])))
    return rows


def token_kernel():
    """The wrapper's default at every T, or the token kernel (the cluster kernel off) at
    every T."""
    configs = [("default", A.SETTINGS),
               ("token 16 warps", settings(cluster_max_waves=0, token_max_waves=1000,
                                           token_max_rows=8, token_warps=16))]
    return _time_configs((1, 8, 33, 64, 128, 200, 395, 1024, 4096), configs)


def _by_t(title, rows):
    """A table of rows (T, nvb, write_prefix, label, us): one column per label."""
    labels = list(dict.fromkeys(r[3] for r in rows))
    md = ["", f"## {title}", "", "| T | nvb | write_prefix | " + " | ".join(labels) + " |",
          "|---|---|---|" + "---|" * len(labels)]
    for i in range(0, len(rows), len(labels)):
        t, nvb, wp = rows[i][:3]
        md.append(f"| {t} | {nvb} | {wp} | " + " | ".join(
            f"{r[4]:.2f}" for r in rows[i:i + len(labels)]) + " |")
    return md


def cluster_sizes():
    """The wrapper's default at every T, or the cluster kernel at every T with S programs a
    token on W warps each."""
    configs = [("default", A.SETTINGS)]
    configs += [(f"cluster {size} x {warps} warps",
                 settings(cluster_max_waves=1000, cluster_size=size, cluster_many_size=size,
                          cluster_warps=warps, cluster_many_warps=warps))
                for size, warps in ((16, 2), (16, 4), (8, 2), (4, 4), (4, 8), (2, 8))]
    return _time_configs((1, 8, 33, 64, 128, 200), configs)


TABLES = {"steps": steps, "warps": cluster_warps, "ring": cluster_or_ring,
          "token": token_kernel, "sizes": cluster_sizes}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--tables", default=",".join(TABLES),
                        help="comma-separated subset of " + ",".join(TABLES))
    args = parser.parse_args()
    tables = args.tables.split(",")
    unknown = set(tables) - set(TABLES)
    if unknown:
        parser.error(f"unknown tables {sorted(unknown)}; choose from {list(TABLES)}")
    empty = us(lambda a: R._empty_kernel[(1,)](a, 0), [(torch.zeros(1, device="cuda"),)] * 4)
    res = {"device": torch.cuda.get_device_name(), "empty kiln kernel us": empty}
    res.update({name: TABLES[name]() for name in tables})
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "attn_res_small_t.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = [f"# attn_res at few tokens on {res['device']}",
          f"GPU time per call (CUDA-graph replay); empty kiln kernel (1 warp) {empty:.2f} us; "
          f"`python bench/kimi_k3/attn_res_small_t.py --tables {args.tables}`"]
    if "steps" in res:
        md += ["", "## Steps of a cluster kernel", "", "| kernel | us |", "|---|---|"]
        md += [f"| {k} | {v:.2f} |" for k, v in res["steps"]]
    if "warps" in res:
        md += _by_t("Cluster kernel warps (us)", res["warps"])
    if "ring" in res:
        md += _by_t("Cluster kernel or row ring (us; ring: thread elements x stages x "
                    "programs an SM)", res["ring"])
    if "token" in res:
        md += _by_t("Default kernel or token kernel (us)", res["token"])
    if "sizes" in res:
        md += _by_t("Default kernel or cluster kernel of S programs x W warps (us)",
                    res["sizes"])
    with open(os.path.join(args.out, "attn_res_small_t.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
