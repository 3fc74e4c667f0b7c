"""Benchmark: every Kimi K3 kernel of kernels_dsl/kimi_k3/ (and the row RMSNorm of
kernels_dsl/common/norm.py at hidden 7168) on the GPU against the hardware and the peers, at
K3 shapes (hidden 7168, 896 experts top-16, 96 heads / TP8 = 12 heads x 128, kv_lora 512 +
rope 64, moe_intermediate 3072, T in {1, 64, 4096, 16384}; moe_align_single_token only at
T = 1, its one use; image_preprocess at three image batches).

For each case, in one run: the bytes the kernel must move over the median GPU time (CUDA-graph
replay of back-to-back calls, rotating through enough input sets to leave L2), against the
measured device-to-device copy bandwidth (the ceiling), torch eager and torch.compile of the
reference (KERNELS.md). Each kiln result is checked against the reference first. An empty kiln
kernel and an empty torch op (a 1-element ``add_``) are timed the same way, and for T <= 64
the table gives kiln's time minus the empty kiln launch (target at T = 1: within 2 us). Each
case also times the fastest plain copy of its bytes (``same_size_copy_us``): the ceiling at that
size, launch and tail included, next to the asymptotic one of the 2 GiB copy.

    python bench/kimi_k3/run.py [--out DIR] [--budget SECONDS] [--only per_token,kv_indices]
    python bench/kimi_k3/run.py --sweep [--out DIR] [--only quant_mxfp4]

``--only`` keeps the cases (or sweeps) whose kernel name starts with one of the given
prefixes. ``--sweep`` times, instead of the cases, every configuration and formulation of the
kernels below target at T = 16384 (``SWEEPS``) and writes ``bench_kimi_k3_sweep.{md,json}``;
``bench/plot.py`` turns ``bench_kimi_k3.json`` into the PNG.
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from bench.common import graph_time_ms as common_graph_time_ms  # noqa: E402
from bench.report import write_results  # noqa: E402
from kernels_dsl.common import norm  # noqa: E402
from kernels_dsl.kimi_k3 import (  # noqa: E402
    _launch, attn_res, concat_mla, image, kv_indices, mla_kv, mla_output_gate, moe_align,
    moe_fused_gate, pack_topk_ids, quant, situ_quant, tensor_hash)

H_LOCAL, HEAD_DIM, TOPK, EXPERTS = 12, 128, 16, 896
TS = (1, 64, 4096, 16384)
L2_BYTES = 256 << 20  # rotate through at least this much input per case (H200 L2: 50 MB)


@kiln.jit(num_warps=1)
def _empty_kernel(x_ptr, n):
    offs = kl.program_id(0) + kl.arange(0, 1)
    kl.store(x_ptr + offs, 0, mask=offs < n)


def graph_time_ms(fn, sets, batch=20, reps=15):
    """Median GPU time per call of ``fn(*args)``, rotating through the argument tuples
    ``sets``, from CUDA-graph replay (bench.common)."""
    return common_graph_time_ms(lambda args: fn(*args), sets, batch, reps)


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


def _grid(**axes):
    """Every combination of the given {attribute: values} as a list of dicts."""
    cfgs = [{}]
    for k, values in axes.items():
        cfgs = [dict(c, **{k: v}) for c in cfgs for v in values]
    return cfgs


def _pairs(names, values):
    return [dict(zip(names, v)) for v in values]


#: (module, case factory, factory argument, [{module attribute: value}]): the kernels below
#: target, swept at T = 16384 (the largest image batch for image_preprocess; [32768, 7168] for
#: RMSNorm, the shape of bench/norm). Each configuration is checked against the reference
#: before it is timed; the one equal to the module's current values (the default) is timed
#: first, whatever its place in the list, and is the "vs default" baseline.
SWEEPS = [
    (norm, "case_rmsnorm", 32768,
     _grid(RMSNORM_WARPS=(4, 8), RMSNORM_W_FIRST=(False,),
           RMSNORM_X_EVICT=("evict_last", "", "evict_first"), RMSNORM_Y_CACHE=("", ".cs"))
     + _grid(RMSNORM_WARPS=(2, 4), RMSNORM_W_FIRST=(True,), RMSNORM_X_EVICT=("evict_last",),
             RMSNORM_Y_CACHE=("",))),
    # attn_res: RING, the row-ring kernel (rows bulk-copied into RING_STAGES shared-memory
    # slots, RING_PROGRAMS_PER_SM programs an SM of RING_THREAD_ELEMS row elements a thread,
    # registers capped to fit them), else the register slots (PREFETCH rows, PROGRAMS_PER_SM,
    # THREAD_ELEMS)
    (attn_res, "case_attn_res", 16384,
     _grid(RING=(True,))
     + _grid(RING=(False,), PREFETCH=(4, 3), PROGRAMS_PER_SM=(1,), THREAD_ELEMS=(16,))
     + _pairs(("RING", "RING_THREAD_ELEMS", "RING_STAGES", "RING_PROGRAMS_PER_SM"),
              ((True, 64, 4, 3), (True, 64, 2, 3), (True, 32, 4, 2), (True, 32, 5, 2),
               (True, 16, 4, 2), (True, 128, 3, 4)))),
    # mla_kv_scatter: ROWS tokens per program on NUM_WARPS warps; EARLY_LOADS: the rows
    # loaded in parallel with loc (else after it, masked by it); BF16_PDL: programmatic
    # dependent launch; BF16_LOAD_EVICT / BF16_STORE_CACHE: the loads' eviction policy and the
    # stores' cache modifier; BF16_MIN_PROGRAMS: programs an SM (registers capped), the
    # one-wave grids at T = 16384 (4 / 2 at 32, 16 / 4 at 8, 32 / 8 at 4; 8 / 4 at 12: 1.29
    # waves)
    (mla_kv, "case_mla_kv_scatter", 16384,
     [dict(c, EARLY_LOADS=e, BF16_PDL=p) for e, p in ((True, True), (False, False),
                                                      (True, False), (False, True))
      for c in _pairs(("ROWS", "NUM_WARPS"), ((4, 4), (2, 2), (4, 2), (8, 4), (16, 8)))]
     + [dict(c, EARLY_LOADS=True, BF16_PDL=True) for c in _pairs(
         ("ROWS", "NUM_WARPS"), ((1, 1), (1, 2), (2, 1), (8, 8), (16, 4), (32, 8), (32, 16)))]
     + [dict(c, EARLY_LOADS=True, BF16_PDL=True, BF16_LOAD_EVICT=e, BF16_STORE_CACHE=sc,
             BF16_MIN_PROGRAMS=0) for c in _pairs(("ROWS", "NUM_WARPS"), ((8, 4), (4, 2)))
        for e, sc in (("evict_first", ""), ("", ".cs"), ("evict_first", ".cs"))]
     + [dict(ROWS=r, NUM_WARPS=w, EARLY_LOADS=True, BF16_PDL=True, BF16_LOAD_EVICT=e,
             BF16_STORE_CACHE=sc, BF16_MIN_PROGRAMS=p)
        for r, w, p in ((4, 2, 32), (16, 4, 8), (32, 8, 4), (8, 4, 12))
        for e, sc in (("", ""), ("", ".cs"), ("evict_first", ".cs"))]),
    (concat_mla, "case_concat_mla_k", 16384,
     _pairs(("K_ROWS", "K_WARPS"), ((16, 4), (4, 1), (8, 1), (8, 2), (16, 2), (32, 4), (32, 8),
                                    (64, 8), (64, 16)))),
    # kv_indices: BLOCK pages at a time on NUM_WARPS, one program per request (FEW_BLOCK and
    # FEW_NUM_WARPS where bs <= SMs); PDL: programmatic dependent launch
    (kv_indices, "case_kv_indices", 16384,
     _pairs(("BLOCK", "NUM_WARPS"), ((64, 2), (128, 4), (128, 2), (64, 1), (256, 4)))
     + _grid(PDL=(False,))),
] + [
    (kv_indices, "case_kv_indices", t,
     _pairs(("FEW_BLOCK", "FEW_NUM_WARPS", "PDL"),
            ((128, 4, True), (64, 2, True), (64, 2, False), (128, 4, False), (128, 2, True),
             (256, 4, True), (256, 8, True))))
    for t in (1, 64)
] + [
    # gpu_tensor_hash at the sizes between one program and the whole GPU: the CYCLIC grid
    # counted in TILE- or BLOCK-word units (HASH_GRID_WORDS), both passes as PDL launches
    (tensor_hash, "case_gpu_tensor_hash", t,
     _grid(HASH_GRID_WORDS=(8192, 1024), HASH_PDL=(False, True)))
    for t in (64, 4096, 16384)
] + [
    # concat_mla_k / concat_mla_absorb_q: PDL, programmatic dependent launch
    (concat_mla, case, t, _grid(PDL=(True, False)))
    for case in ("case_concat_mla_k", "case_concat_mla_absorb_q") for t in (1, 64, 16384)
] + [
    # mla_output_gate (bf16): PDL, programmatic dependent launch, at every token count
    (mla_output_gate, "case_mla_output_gate", t, _grid(PDL=(True, False)))
    for t in (1, 64, 16384)
] + [
    # pack_topk_ids: BLOCK elements per program on NUM_WARPS warps; PDL: programmatic
    # dependent launch (the launch overlaps the previous kernel's tail)
    (pack_topk_ids, "case_pack_topk_ids", 16384,
     [dict(c, PDL=p) for p in (True, False) for c in _pairs(
         ("BLOCK", "NUM_WARPS"), ((1024, 4), (256, 1), (512, 1), (512, 2), (1024, 2),
                                  (1024, 8), (2048, 4), (2048, 8), (4096, 8), (4096, 16)))]),
] + [
    # moe_fused_gate: warps per row (1: every count of the radix select is warp shuffles, no
    # shared memory or barrier), at the latency end (NUM_WARPS) and the throughput end
    # (BATCH_WARPS, from BATCH_M rows); bits of the radix select per count reduction (1: the
    # former kernel, 2: three counts packed in one sum) and MERGED_REDUCTIONS (steps 3-4 in
    # multi-operand reductions; False: the former kernel)
    (moe_fused_gate, "case_moe_fused_gate", t,
     _grid(**{knob: (4, 1, 2, 8), bits: (2, 1), "MERGED_REDUCTIONS": (True, False)}))
    for t, knob, bits in ((1, "NUM_WARPS", "SELECT_BITS"),
                          (16384, "BATCH_WARPS", "BATCH_SELECT_BITS"))
] + [
    # moe_fused_gate at the latency end (T = 1, and T = 64 where it must not lose): four bits
    # a round (4.35 rounds a row instead of 8.2, 313 instead of 95 instructions a round) vs
    # two, on 4 warps (the default), 8 and 2
    (moe_fused_gate, "case_moe_fused_gate", t,
     _grid(SELECT_BITS=(2, 4), NUM_WARPS=(4, 8, 2)))
    for t in (1, 64)
] + [
    # moe_fused_gate's latency kernel: "rank" (the K-th largest of RANK_GROUPS group maxima as
    # a threshold that keeps every winner, at most RANK_CAP candidates compacted and ranked
    # exactly, no radix rounds) on RANK_WARPS vs "radix" (the default, 4 warps, 4 bits)
    (moe_fused_gate, "case_moe_fused_gate", t,
     [dict(LATENCY_KERNEL="radix")]
     + [dict(LATENCY_KERNEL="rank", RANK_WARPS=w, RANK_GROUPS=g, RANK_CAP=c)
        for w, g, c in ((4, 64, 32), (8, 64, 32), (2, 64, 32), (4, 32, 64), (4, 128, 32),
                        (8, 128, 32))])
    for t in (1, 64)
] + [
    # the rank kernel's steps 2-4 as RANK_FORM = 2 (_rank_select_rows: 12 bar.sync instead of
    # 16 on a row without fallback, 990 instead of 1403 sm_90a instructions on that path;
    # same ids and weight bits) vs 1 (the default), at the default warps, groups and cap and
    # at the 32-group 64-slot, 8-warp, 2-warp and 128-group variants
    (moe_fused_gate, "case_moe_fused_gate", t,
     [dict(LATENCY_KERNEL="rank", RANK_FORM=f, RANK_WARPS=w, RANK_GROUPS=g, RANK_CAP=c)
      for w, g, c in ((4, 64, 32), (4, 32, 64), (8, 64, 32), (2, 64, 32), (4, 128, 32))
      for f in (1, 2)])
    for t in (1, 64)
] + [
    # the one-warp batch kernel with four bits a round (no spills at 80 registers, but 2
    # bar.sync a round for the per-run layout change) vs one
    (moe_fused_gate, "case_moe_fused_gate", 16384,
     _grid(BATCH_SELECT_BITS=(1, 4), BATCH_MAXNREG=(80,)))
] + [
    # the one-warp batch kernel's register cap (None: 112 registers; 80: no spills) with
    # either bit count
    (moe_fused_gate, "case_moe_fused_gate", 16384,
     _grid(BATCH_MAXNREG=(80, None, 96, 72), BATCH_SELECT_BITS=(1, 2)))
] + [
    # every image shape of the benchmark (one large image, a small batch, a large batch):
    # the element-order kernel (BLOCK elements on NUM_WARPS, MAXNREG), then COLUMNS, the
    # lanes along the output columns (COL_XBLOCK columns on COL_WARPS, COL_ROWS rows a
    # thread, COL_CHANNEL_RUN: the channels in the thread's run, COL_MAXNREG)
    (image, "case_image", shape,
     [dict(c, COLUMNS=False) for c in _pairs(
         ("BLOCK", "NUM_WARPS", "MAXNREG"),
         ((256, 1, 80), (512, 1, None), (256, 1, None), (512, 2, None), (1024, 4, None),
          (256, 1, 64), (256, 1, 96), (512, 2, 80), (1024, 4, 80)))]
     + [dict(c, COLUMNS=True) for c in _pairs(
         ("COL_ROWS", "COL_CHANNEL_RUN", "COL_XBLOCK", "COL_WARPS", "COL_MAXNREG"),
         ((16, False, 32, 1, None), (16, False, 64, 2, None), (16, False, 128, 4, None),
          (16, False, 32, 1, 168), (16, False, 32, 1, 152), (16, False, 32, 1, 128),
          (8, False, 64, 1, None),
          (4, False, 128, 1, None), (4, True, 32, 1, None), (4, True, 64, 1, None),
          (4, True, 64, 2, None), (4, True, 128, 4, None), (4, True, 64, 1, 96)))])
    for shape in ((1, 1080, 1920, 448, 798), (8, 512, 512, 448, 448), (64, 224, 224, 224, 224))
] + [
    # per_token_group_quant_fp8: GROUP_ELEMS / 128 groups per program; RECIP: no division per
    # element; TOKEN_GRID: the token a scalar of a 2-D grid (no integer division per group);
    # SCALE_TILE: the scales stored from the group tile (new default, first row; the old
    # default is the second)
    (quant, "case_group_quant_fp8", 16384,
     [dict(c, GQ_RECIP=True, GQ_TOKEN_GRID=True, GQ_SCALE_TILE=True)
      for c in _pairs(("GROUP_ELEMS", "NUM_WARPS"), ((2048, 1), (1024, 1), (2048, 2),
                                                     (4096, 2), (512, 1)))]
     + [dict(c, GQ_RECIP=r, GQ_TOKEN_GRID=g, GQ_SCALE_TILE=False) for r in (True, False)
        for g in (True, False)
        for c in _pairs(("GROUP_ELEMS", "NUM_WARPS"), ((2048, 1), (2048, 4), (1024, 1)))]),
    # mla_kv_scatter_fp8: FP8_ROWS tokens per program ([4 * FP8_ROWS, 128] latent tile);
    # FP8_RECIP: quant.py's division-free group quantization (same bits); EARLY_LOADS: the
    # rows loaded in parallel with loc; FP8_Q_F8: the codes stored through a float8 view (no
    # byte repacking); FP8_ROPE_FIRST: the rope loaded with the latent (not after its
    # stores); FP8_SCALE_TILE: the scales stored from the group tile; FP8_MAXNREG: register
    # cap. First row: the new default; then the old default (the three new knobs off), each
    # new knob alone, and the shapes with all three
    (mla_kv, "case_mla_kv_scatter_fp8", 16384,
     [dict(FP8_ROWS=2, FP8_WARPS=1, FP8_RECIP=True, EARLY_LOADS=True, FP8_Q_F8=q,
           FP8_ROPE_FIRST=rf, FP8_SCALE_TILE=st, FP8_MAXNREG=None)
      for q, rf, st in ((True, True, True), (False, False, False), (True, False, False),
                        (False, True, False), (False, False, True), (True, False, True))]
     + [dict(c, FP8_RECIP=True, EARLY_LOADS=e, FP8_Q_F8=True, FP8_ROPE_FIRST=True,
             FP8_SCALE_TILE=True, FP8_MAXNREG=m)
        for c, e, m in [(c, True, None) for c in _pairs(
            ("FP8_ROWS", "FP8_WARPS"), ((1, 1), (4, 1), (4, 2), (8, 2), (8, 4), (16, 4)))]
        + [(dict(FP8_ROWS=2, FP8_WARPS=1), True, 64), (dict(FP8_ROWS=4, FP8_WARPS=2), True, 72),
           (dict(FP8_ROWS=2, FP8_WARPS=1), False, None)]]
     + [dict(c, FP8_RECIP=True, EARLY_LOADS=e, FP8_Q_F8=False, FP8_ROPE_FIRST=False,
             FP8_SCALE_TILE=False, FP8_MAXNREG=None) for e in (True, False) for c in _pairs(
         ("FP8_ROWS", "FP8_WARPS"), ((8, 1), (4, 1), (4, 2), (8, 2), (16, 4)))]
     + [dict(FP8_ROWS=8, FP8_WARPS=4, FP8_RECIP=False, EARLY_LOADS=True, FP8_Q_F8=False,
             FP8_ROPE_FIRST=False, FP8_SCALE_TILE=False, FP8_MAXNREG=None)]
     # FP8_LOAD_EVICT / FP8_STORE_CACHE: the loads' eviction policy and the stores' cache
     # modifier, at the two fastest shapes
     + [dict(c, FP8_RECIP=True, EARLY_LOADS=True, FP8_Q_F8=True, FP8_ROPE_FIRST=True,
             FP8_SCALE_TILE=True, FP8_MAXNREG=None, FP8_LOAD_EVICT=e, FP8_STORE_CACHE=sc)
        for c in _pairs(("FP8_ROWS", "FP8_WARPS"), ((8, 4), (4, 2)))
        for e, sc in (("evict_first", ""), ("", ".cs"), ("evict_first", ".cs"))]),
    # mla_output_gate_fp8: bf16 elements per thread (8: 8 warps at H = 1536, 16: 4, 32: 2);
    # FP8_RECIP as above; FP8_CHUNKS: the row as three 512 tiles on one warp (with RECIP and
    # 16 elements a thread); FP8_LOADS_FIRST: the three chunks loaded before the first is
    # gated; FP8_ONE_REDUCTION: the one 2048 tile through the chunk path (one reduction);
    # FP8_MAXNREG: register cap. First row: the new default; second: the old default
    (mla_output_gate, "case_mla_output_gate_fp8", 16384,
     [dict(FP8_CHUNKS=True, FP8_LOADS_FIRST=True, FP8_ONE_REDUCTION=True, FP8_RECIP=True,
           FP8_THREAD_ELEMS=16, FP8_MAXNREG=None),
      dict(FP8_CHUNKS=False, FP8_LOADS_FIRST=False, FP8_ONE_REDUCTION=False, FP8_RECIP=True,
           FP8_THREAD_ELEMS=16, FP8_MAXNREG=None),
      dict(FP8_CHUNKS=True, FP8_LOADS_FIRST=False, FP8_ONE_REDUCTION=True, FP8_RECIP=True,
           FP8_THREAD_ELEMS=16, FP8_MAXNREG=None)]
     + [dict(FP8_CHUNKS=True, FP8_LOADS_FIRST=True, FP8_ONE_REDUCTION=True, FP8_RECIP=True,
             FP8_THREAD_ELEMS=16, FP8_MAXNREG=m) for m in (96, 92)]
     + [dict(FP8_CHUNKS=False, FP8_LOADS_FIRST=True, FP8_ONE_REDUCTION=True, FP8_RECIP=True,
             FP8_THREAD_ELEMS=te, FP8_MAXNREG=None) for te in (16, 32)]
     + [dict(c, FP8_CHUNKS=False, FP8_LOADS_FIRST=False, FP8_ONE_REDUCTION=False,
             FP8_MAXNREG=None)
        for c in _grid(FP8_RECIP=(True, False), FP8_THREAD_ELEMS=(8, 32))]
     + [dict(FP8_CHUNKS=False, FP8_LOADS_FIRST=False, FP8_ONE_REDUCTION=False, FP8_RECIP=False,
             FP8_THREAD_ELEMS=16, FP8_MAXNREG=None)]
     # FP8_NEWTON: the sigmoid's reciprocal without a division (same bits), on the default
     # (chunks, loads first, 92 registers), at other caps, and on the one 2048 tile
     + [dict(FP8_CHUNKS=True, FP8_LOADS_FIRST=True, FP8_ONE_REDUCTION=True, FP8_RECIP=True,
             FP8_THREAD_ELEMS=16, FP8_MAXNREG=m, FP8_NEWTON=True) for m in (92, 96, 88, 104)]
     + [dict(FP8_CHUNKS=False, FP8_LOADS_FIRST=True, FP8_ONE_REDUCTION=True, FP8_RECIP=True,
             FP8_THREAD_ELEMS=16, FP8_MAXNREG=None, FP8_NEWTON=True)]),
    # situ_and_mul_masked_post_quant: ROWS (token, group) pairs per program; TOKEN_GRID: the
    # token a scalar of a 3-D grid (K3: 24 groups a token); RECIP: division-free quantization;
    # SCALE_TILE: the scales stored from the group tile (no shared-memory conversion). The
    # first four rows at 8 / 2 warps: old default (neither), each alone, both (new default)
    (situ_quant, "case_situ_quant_fp8", 16384,
     [dict(ROWS=8, NUM_WARPS=2, TOKEN_GRID=True, RECIP=r, SCALE_TILE=st)
      for r, st in ((False, False), (True, False), (False, True), (True, True))]
     + [dict(c, TOKEN_GRID=True, RECIP=True, SCALE_TILE=True) for c in _pairs(
         ("ROWS", "NUM_WARPS"), ((8, 1), (8, 4), (4, 1), (16, 2), (16, 4), (32, 4)))]
     + [dict(c, TOKEN_GRID=False, RECIP=True, SCALE_TILE=st) for st in (False, True)
        for c in _pairs(("ROWS", "NUM_WARPS"), ((16, 2), (8, 1)))]),
    # gpu_tensor_hash: HASH_WORDS: int32 words in 16-byte vectors (else four byte loads a
    # word); HASH_PROGRAMS_PER_SM = 0: the former word path, TILE words per program, BLOCK at
    # a time; > 0: the CYCLIC path, min(tiles, that x SMs) programs taking every grid-th
    # BLOCK-word block, HASH_PREFETCH: two blocks per iteration (one in flight)
    (tensor_hash, "case_gpu_tensor_hash", 16384,
     [dict(c, HASH_WORDS=True, HASH_PROGRAMS_PER_SM=p, HASH_PREFETCH=f)
      for p, f in ((6, True), (2, True), (4, True), (8, True), (4, False), (10, False))
      for c in _pairs(("TILE", "BLOCK", "NUM_WARPS"),
                      ((8192, 1024, 4), (8192, 1024, 8), (8192, 512, 4), (8192, 2048, 4)))]
     + [dict(c, HASH_WORDS=True, HASH_PROGRAMS_PER_SM=0) for c in _pairs(
         ("TILE", "BLOCK", "NUM_WARPS"), ((8192, 1024, 4), (16384, 2048, 4), (4096, 1024, 2)))]
     + [dict(HASH_WORDS=False, TILE=8192, BLOCK=1024, NUM_WARPS=4)]),
    # quant_mxfp4: MX_ROWS blocks per program (one thread per block at MX_ROWS = 32 * warps);
    # WORDS: 16-byte loads of (even, odd) pairs; E2M1_BITS: rounding on the fp32 bits;
    # E2M1_SUB: the same with no case below 1 (subnormal fp32); SCALE_TILE: the scale bytes
    # stored from the blocks' layout. The first four rows at 32 / 1 warp: the old default
    # (neither of the last two), each alone, both (new default)
    (quant, "case_quant_mxfp4", 16384,
     [dict(MX_ROWS=32, MX_WARPS=1, MX_WORDS=True, MX_TOKEN_GRID=True, MX_E2M1_BITS=True,
           MX_E2M1_SUB=sub, MX_SCALE_TILE=st)
      for sub, st in ((False, False), (True, False), (False, True), (True, True))]
     + [dict(c, MX_WORDS=True, MX_TOKEN_GRID=True, MX_E2M1_BITS=True, MX_E2M1_SUB=True,
             MX_SCALE_TILE=True)
        for c in _pairs(("MX_ROWS", "MX_WARPS"), ((256, 8), (64, 2), (64, 1), (128, 4),
                                                  (128, 2), (16, 1), (512, 16), (256, 4),
                                                  (512, 8)))]
     + [dict(c, MX_WORDS=w, MX_TOKEN_GRID=g, MX_E2M1_BITS=e, MX_E2M1_SUB=False,
             MX_SCALE_TILE=False) for w in (False, True) for g in (False, True)
        for e in (False, True)
        for c in _pairs(("MX_ROWS", "MX_WARPS"), ((64, 4), (32, 1)))]
     # BYTE_SIGNS: the signs ORed into the byte after one multiply-add of the magnitudes
     # (16 fewer instructions a block), alone on the default; CHUNKS = 7: programs of
     # MX_ROWS / 32 rows x 7 chunks of 32 blocks (no masked warp), LOOKAHEAD chunks loaded
     # ahead, MAXNREG the cap that holds them with no spill (64 / 80 / 96) or none (83 /
     # 96 / 102 / 142 registers); two rows without BYTE_SIGNS
     + [dict(MX_ROWS=256, MX_WARPS=8, MX_WORDS=True, MX_TOKEN_GRID=True, MX_E2M1_BITS=True,
             MX_E2M1_SUB=True, MX_SCALE_TILE=True, MX_BYTE_SIGNS=True)]
     + [dict(c, MX_ROWS=rows, MX_WARPS=warps, MX_WORDS=True, MX_TOKEN_GRID=True,
             MX_E2M1_BITS=True, MX_E2M1_SUB=True, MX_SCALE_TILE=True, MX_CHUNKS=7,
             MX_BYTE_SIGNS=True)
        for rows, warps in ((256, 8), (128, 4), (64, 2), (32, 1))
        for c in _pairs(("MX_LOOKAHEAD", "MX_MAXNREG"), ((1, 64), (1, None), (2, 80),
                                                         (2, None), (3, 96), (7, None)))]
     + [dict(c, MX_WORDS=True, MX_TOKEN_GRID=True, MX_E2M1_BITS=True, MX_E2M1_SUB=True,
             MX_SCALE_TILE=True, MX_CHUNKS=7, MX_LOOKAHEAD=1, MX_MAXNREG=64,
             MX_BYTE_SIGNS=False)
        for c in _pairs(("MX_ROWS", "MX_WARPS"), ((256, 8), (128, 4)))]
     # MX_X_EVICT / MX_OUT_CACHE: the loads' L2 eviction policy and the stores' cache
     # modifier, on the default and on two chunk configurations
     + [dict(MX_ROWS=256, MX_WARPS=8, MX_WORDS=True, MX_TOKEN_GRID=True, MX_E2M1_BITS=True,
             MX_E2M1_SUB=True, MX_SCALE_TILE=True, MX_X_EVICT=ev)
        for ev in ("evict_last", "evict_first")]
     + [dict(c, MX_WORDS=True, MX_TOKEN_GRID=True, MX_E2M1_BITS=True, MX_E2M1_SUB=True,
             MX_SCALE_TILE=True, MX_CHUNKS=7, MX_BYTE_SIGNS=True, MX_X_EVICT=ev,
             MX_OUT_CACHE=oc)
        for c in _pairs(("MX_ROWS", "MX_WARPS", "MX_LOOKAHEAD", "MX_MAXNREG"),
                        ((256, 8, 1, 64), (128, 4, 2, 80)))
        for ev, oc in (("evict_last", ""), ("evict_first", ""), ("", ".cs"))]),
]


def sweep(copy_gbs, only=None):
    rows = []
    for mod, factory, arg, configs in SWEEPS:
        saved = {k: getattr(mod, k) for cfg in configs for k in cfg}
        configs = sorted(configs, key=lambda c: any(saved[k] != v for k, v in c.items()))
        case = globals()[factory](*(arg if isinstance(arg, tuple) else (arg,)))
        name, shape, nbytes, sets, kiln_fn, ref_fn = case[:6]
        if only and not name.startswith(only):
            continue
        for cfg in configs:
            for k, v in saved.items():
                setattr(mod, k, v)
            for k, v in cfg.items():
                setattr(mod, k, v)
            try:
                check(name, kiln_fn, ref_fn, sets[0])
                us = graph_time_ms(kiln_fn, sets) * 1e3
                err = None
            except Exception as e:  # a configuration that fails is reported, not hidden
                err = f"{type(e).__name__}: {str(e)[:300]}"
                print(f"  sweep {name} {cfg}: {err}")
                us = float("nan")
            rows.append({"kernel": name, "shape": shape, "config": cfg, "us": us,
                         "of copy BW": nbytes / us / 1e3 / copy_gbs, "error": err})
            print(json.dumps(rows[-1]), flush=True)
        for k, v in saved.items():
            setattr(mod, k, v)
        del case, sets
        torch.cuda.empty_cache()
    return rows


def n_sets(bytes_per_set):
    return max(1, min(64, L2_BYTES // max(bytes_per_set, 1)))


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
    int32 words), timed like the kernels (CUDA-graph replay over rotating buffers): torch's
    elementwise kernel (``torch.neg(src, out=dst)``; ``copy_`` in a graph is a copy-engine
    memcpy) and a Triton copy of 4096 words a program. The ceiling of a kernel of this size,
    launch, ramp-up and the last wave's tail included, where the measured copy bandwidth is
    that of a 2 GiB copy."""
    words = max(nbytes // 8, 1)
    sets = [(torch.zeros(words, device="cuda", dtype=torch.int32),
             torch.empty(words, device="cuda", dtype=torch.int32))
            for _ in range(n_sets(nbytes))]
    fns = [lambda s, d: torch.neg(s, out=d)]
    if triton is not None:
        fns.append(lambda s, d: _triton_copy[(triton.cdiv(words, 4096),)](
            s, d, words, BLOCK=4096, num_warps=4))
    best = min(graph_time_ms(fn, sets) for fn in fns) * 1e3
    del sets
    return best


# ---------------------------------------------------------------------------
# Cases: (name, shape, bytes moved, input sets, kiln fn, reference fn, check)
# ---------------------------------------------------------------------------

def _bits(a):
    if a.dtype == torch.bfloat16:
        return a.view(torch.int16)
    if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return a.view(torch.uint8)
    return a


def bits_equal(a, b):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(bits_equal(x, y) for x, y in zip(a, b))
    return torch.equal(_bits(a), _bits(b))


def case_pack_topk_ids(t):
    nbytes = t * TOPK * 12
    sets = [(torch.randint(0, EXPERTS, (t, TOPK), device="cuda", dtype=torch.int32),
             torch.rand(t, TOPK, device="cuda"),
             torch.empty(t, TOPK, device="cuda", dtype=torch.int32))
            for _ in range(n_sets(nbytes))]

    def ref(ids, w, out):
        return (ids << 16) | (w.bfloat16().view(torch.int16).int() & 0xFFFF)

    return ("pack_topk_ids", f"[{t}, {TOPK}]", nbytes, sets,
            lambda ids, w, out: pack_topk_ids.pack_topk_ids(ids, w, out), ref)


def case_concat_mla_k(t):
    h = H_LOCAL
    nbytes = t * h * (128 + 192) * 2 + t * 64 * 2
    sets = []
    for _ in range(n_sets(nbytes)):
        kv_b = torch.randn(t, h, 256, device="cuda", dtype=torch.bfloat16)  # nope | v
        kv_a = torch.randn(t, 576, device="cuda", dtype=torch.bfloat16)     # latent | rope
        sets.append((torch.empty(t, h, 192, device="cuda", dtype=torch.bfloat16),
                     kv_b[:, :, :128], kv_a[:, 512:].unsqueeze(1)))

    def ref(k, k_nope, k_rope):
        k[..., :128] = k_nope
        k[..., 128:] = k_rope
        return k

    return ("concat_mla_k", f"[{t}, {h}, 192] (strided k_nope)", nbytes, sets,
            concat_mla.concat_mla_k, ref)


def case_concat_mla_absorb_q(t):
    h = H_LOCAL
    nbytes = t * h * (512 + 64) * 2 * 2
    sets = [(torch.randn(t, h, 512, device="cuda", dtype=torch.bfloat16),
             torch.randn(t, h, 64, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, h, 576, device="cuda", dtype=torch.bfloat16))
            for _ in range(n_sets(nbytes))]
    return ("concat_mla_absorb_q", f"[{t}, {h}, 512+64]", nbytes, sets,
            concat_mla.concat_mla_absorb_q, lambda a, b, out: torch.cat([a, b], dim=-1))


def case_mla_output_gate(t):
    n = t * H_LOCAL * HEAD_DIM
    nbytes = 3 * n * 2
    sets = [(torch.randn(t, H_LOCAL * HEAD_DIM, device="cuda", dtype=torch.bfloat16),
             torch.randn(t, H_LOCAL * HEAD_DIM, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, H_LOCAL * HEAD_DIM, device="cuda", dtype=torch.bfloat16))
            for _ in range(n_sets(nbytes))]
    return ("mla_output_gate", f"[{t}, {H_LOCAL * HEAD_DIM}]", nbytes, sets,
            mla_output_gate.mla_output_gate, lambda x, g, out: x * torch.sigmoid(g))


def case_mla_kv_scatter(t):
    nbytes = t * 576 * 2 * 2 + t * 8
    slots = 4 * t + 64
    sets = []
    for _ in range(n_sets(nbytes)):
        kv_a = torch.randn(t, 576, device="cuda", dtype=torch.bfloat16)
        sets.append((kv_a[:, :512], kv_a[:, 512:],
                     torch.randperm(slots, device="cuda")[:t].to(torch.int64),
                     torch.zeros(slots, 576, device="cuda", dtype=torch.bfloat16)))

    def ref(kv_c, k_pe, loc, cache):
        cache[loc] = torch.cat([kv_c, k_pe], dim=-1)
        return cache

    return ("mla_kv_scatter (bf16)", f"T={t} -> [{slots}, 576]", nbytes, sets,
            mla_kv.mla_kv_scatter, ref)


# FP8 family (KERNELS.md §8.2, §4.2, §4.3, §8.5): the torch references are the formulas.
F8 = torch.float8_e4m3fn
HIDDEN, MOE_INTER, SITU_EXPERTS = 7168, 3072, 8


def fp8_scale(absmax):
    """max(absmax, 1e-10) / 448 as an IEEE division: torch divides by a Python scalar by
    multiplying with its reciprocal (one ulp off for about half the values)."""
    a = absmax.clamp(min=1e-10)
    return a / torch.full_like(a, 448.0)


def ref_group_quant(x, group=128):
    xg = x.float().unflatten(-1, (-1, group))
    s = fp8_scale(xg.abs().amax(-1))
    return (xg / s[..., None]).clamp(-448, 448).to(F8).flatten(-2), s


def case_group_quant_fp8(t):
    nbytes = t * HIDDEN * (2 + 1) + t * (HIDDEN // 128) * 4
    sets = [(torch.randn(t, HIDDEN, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, HIDDEN, device="cuda", dtype=F8),
             torch.empty(t, HIDDEN // 128, device="cuda"))
            for _ in range(n_sets(nbytes))]
    return ("per_token_group_quant_fp8", f"[{t}, {HIDDEN}] g128", nbytes, sets,
            lambda x, q, s: quant.per_token_group_quant_fp8(x, q=q, s=s),
            lambda x, q, s: ref_group_quant(x))


E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def ref_mxfp4(x):
    """OCP MXFP4 from the formula (float32: x / 2^k is exact)."""
    r, d = x.shape
    xb = x.float().reshape(r, d // 32, 32)
    amax = xb.abs().amax(-1)
    _, ex = torch.frexp(amax)
    byte = torch.where(amax > 0, (ex + 124).clamp(0, 254), 0)
    v = xb * torch.exp2(127 - byte.float())[..., None]
    a = v.abs()
    m = ((a > 0.25).int() + (a >= 0.75).int() + (a > 1.25).int() + (a >= 1.75).int()
         + (a > 2.5).int() + (a >= 3.5).int() + (a > 5.0).int())
    code = (m | torch.where(v < 0, 8, 0)).reshape(r, d)
    return (code[:, 0::2] | (code[:, 1::2] << 4)).to(torch.uint8), byte.to(torch.uint8)


def case_quant_mxfp4(t):
    nbytes = t * HIDDEN * 2 + t * HIDDEN // 2 + t * HIDDEN // 32
    sets = [(torch.randn(t, HIDDEN, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, HIDDEN // 2, device="cuda", dtype=torch.uint8),
             torch.empty(t, HIDDEN // 32, device="cuda", dtype=torch.uint8))
            for _ in range(n_sets(nbytes))]
    return ("quant_mxfp4", f"[{t}, {HIDDEN}]", nbytes, sets, quant.quant_mxfp4,
            lambda x, p, s: ref_mxfp4(x))


def case_situ_quant_fp8(t):
    """DeepEP low-latency layout: 8 local experts, T_pad = T / 8 tokens each, all valid."""
    e, t_pad, n = SITU_EXPERTS, max(1, t // SITU_EXPERTS), MOE_INTER
    nbytes = e * t_pad * (2 * n * 2 + n + (n // 128) * 4)
    sets = [(torch.randn(e, t_pad, 2 * n, device="cuda", dtype=torch.bfloat16),
             torch.full((e,), t_pad, device="cuda", dtype=torch.int32),
             torch.empty(e, t_pad, n, device="cuda", dtype=F8),
             torch.empty(e, t_pad, n // 128, device="cuda"))
            for _ in range(n_sets(nbytes))]

    def ref(x, masked_m, q, s):
        g, u = x[..., :n].float(), x[..., n:].float()
        a = 4.0 * torch.tanh(g / 4.0) * torch.sigmoid(g) * (25.0 * torch.tanh(u / 25.0))
        return ref_group_quant(a)  # every row valid here

    return ("situ_and_mul_masked_post_quant", f"[{e}, {t_pad}, {2 * n}]", nbytes, sets,
            lambda x, m, q, s: situ_quant.situ_and_mul_masked_post_quant(x, m, q, s), ref)


def case_mla_output_gate_fp8(t):
    h = H_LOCAL * HEAD_DIM
    nbytes = t * h * (2 + 2 + 1) + t * 4
    sets = [(torch.randn(t, h, device="cuda", dtype=torch.bfloat16),
             torch.randn(t, h, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, h, device="cuda", dtype=F8), torch.empty(t, device="cuda"))
            for _ in range(n_sets(nbytes))]

    def ref(x, g, q, s):
        y = (x * torch.sigmoid(g)).float()
        sc = fp8_scale(y.abs().amax(-1))
        return (y / sc[:, None]).clamp(-448, 448).to(F8), sc

    return ("mla_output_gate_fp8", f"[{t}, {h}]", nbytes, sets,
            mla_output_gate.mla_output_gate_fp8, ref)


def case_mla_kv_scatter_fp8(t):
    nbytes = t * (576 * 2 + 656 + 8)
    slots = 4 * t + 64
    sets = []
    for _ in range(n_sets(nbytes)):
        kv_a = torch.randn(t, 576, device="cuda", dtype=torch.bfloat16)
        sets.append((kv_a[:, :512], kv_a[:, 512:],
                     torch.randperm(slots, device="cuda")[:t].to(torch.int64),
                     torch.zeros(slots, 656, device="cuda", dtype=torch.uint8)))

    def ref(kv_c, k_pe, loc, cache):
        q, s = ref_group_quant(kv_c)
        cache[loc] = torch.cat([q.view(torch.uint8), s.view(torch.uint8),
                                k_pe.contiguous().view(torch.uint8)], dim=-1)
        return cache

    return ("mla_kv_scatter_fp8", f"T={t} -> [{slots}, 656]", nbytes, sets,
            mla_kv.mla_kv_scatter_fp8, ref)


MEAN = torch.tensor(image.CLIP_MEAN).view(1, 3, 1, 1)
STD = torch.tensor(image.CLIP_STD).view(1, 3, 1, 1)


def case_image(n, h, w, oh, ow):
    nbytes = n * h * w * 3 + n * oh * ow * 3 * 2
    mean, std = MEAN.cuda(), STD.cuda()
    sets = [(torch.randint(0, 256, (n, h, w, 3), device="cuda", dtype=torch.uint8),)
            for _ in range(n_sets(nbytes))]

    def ref(img):
        x = img.permute(0, 3, 1, 2).float()
        x = F.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=False)
        x = (x / 255.0 - mean) / std
        x = x.reshape(n, 3, oh // 14, 14, ow // 14, 14).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(n, (oh // 14) * (ow // 14), 588).to(torch.bfloat16)

    return ("image_preprocess", f"{n}x{h}x{w} -> {oh}x{ow}", nbytes, sets,
            lambda img: image.image_preprocess(img, oh, ow), ref)


_RMS_W = []


def _rms_weight():
    """One RMSNorm weight for every T (the compiled reference closes over it)."""
    if not _RMS_W:
        _RMS_W.append((torch.rand(HIDDEN, device="cuda") + 0.5).bfloat16())
    return _RMS_W[0]


def case_rmsnorm(t):
    """Row RMSNorm at hidden 7168 (common/norm.py; eps 1e-6): read x and w, write y."""
    d = HIDDEN
    nbytes = 2 * t * d * 2 + d * 2
    w = _rms_weight()
    sets = [(torch.randn(t, d, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, d, device="cuda", dtype=torch.bfloat16))
            for _ in range(n_sets(nbytes))]

    def ref(x, out):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + 1e-6)
                * w.float()).bfloat16()

    return ("rmsnorm", f"[{t}, {d}]", nbytes, sets,
            lambda x, out: norm.rmsnorm(x, w, 1e-6, out), ref)


ATTN_RES_EPS = 1e-6
_ATTN_RES_W = []


def _attn_res_weights():
    """cw and ow for every T (the compiled reference closes over them)."""
    if not _ATTN_RES_W:
        g = torch.Generator(device="cuda").manual_seed(0)
        _ATTN_RES_W.append(((torch.randn(HIDDEN, device="cuda", generator=g) * 4
                             / HIDDEN ** 0.5).bfloat16(),
                            (torch.rand(HIDDEN, device="cuda", generator=g) + 0.5).bfloat16()))
    return _ATTN_RES_W[0]


def _case_attn_res(t, nvb, write_prefix):
    """Attention residuals (KERNELS.md §4.4) at H = 7168, bank [T, 9, H]: read nvb bank rows
    and the prefix row, write the output (and the snapshot bank[:, nvb] with write_prefix);
    cw and ow once. The reference is the spec's formula in fp32 (torch)."""
    h, nb = HIDDEN, 9
    nbytes = t * h * 2 * (nvb + 2 + int(write_prefix)) + 2 * h * 2
    cw, ow = _attn_res_weights()
    sets = []
    for _ in range(n_sets(nbytes)):
        prefix = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
        scale = torch.exp(torch.rand(t, nb, 1, device="cuda") * 3 - 1)
        bank = (torch.randn(t, nb, h, device="cuda") * scale).bfloat16()
        sets.append((prefix, bank, torch.empty(t, h, device="cuda", dtype=torch.bfloat16)))

    def kiln_fn(prefix, bank, out):
        o = attn_res.attn_res(prefix, bank, cw, ow, out, nvb=nvb, eps=ATTN_RES_EPS,
                              write_prefix=write_prefix)
        return (o, bank[:, nvb]) if write_prefix else o

    def ref(prefix, bank, out):
        rows = torch.cat([bank[:, :nvb], prefix[:, None]], dim=1).float()
        score = (rows * cw.float()).sum(-1) * torch.rsqrt(rows.pow(2).mean(-1) + ATTN_RES_EPS)
        p = torch.softmax(score, dim=-1)
        mix = (p[:, :, None] * rows).sum(1)
        o = (mix * torch.rsqrt(mix.pow(2).mean(-1, keepdim=True) + ATTN_RES_EPS)
             * ow.float()).bfloat16()
        if write_prefix:
            bank[:, nvb] = prefix
            return o, bank[:, nvb]
        return o

    name = "attn_res_write_prefix" if write_prefix else "attn_res"
    return (name, f"[{t}, {h}] nvb={nvb}, bank [{t}, {nb}, {h}]", nbytes, sets, kiln_fn, ref)


def case_attn_res(t):
    """The most rows K3 reads (nvb = 8), no snapshot."""
    return _case_attn_res(t, 8, False)


def case_attn_res_write_prefix(t):
    """A block boundary: nvb = 4 rows read and the new snapshot written."""
    return _case_attn_res(t, 4, True)


KV_PAGE, KV_MULT, KV_CTX = 64, 24, 8192


def case_kv_indices(t):
    """FlashMLA block table for a decode batch of bs = T requests with contexts up to 8192
    tokens (128 pages of 64), the K3 unified pool (v2p given, PAGE_MULT = 24 MLA layers):
    bytes = the token ids and v2p entries read, the block-table entries written."""
    bs, max_blocks = t, KV_CTX // KV_PAGE
    num_pages = max(bs * max_blocks // 2, 1)
    lens = torch.randint(1, KV_CTX + 1, (bs,), device="cuda", dtype=torch.int32)
    pages = int(((lens.long() + KV_PAGE - 1) // KV_PAGE).sum())
    nbytes = pages * (4 + 8 + 4) + bs * (8 + 4)
    max_reqs = bs + 8
    sets = []
    for _ in range(max(1, min(8, n_sets(max_reqs * KV_CTX * 4)))):
        pg = torch.randint(0, num_pages, (max_reqs, max_blocks), device="cuda")
        r2t = (pg[:, :, None] * KV_PAGE
               + torch.arange(KV_PAGE, device="cuda")).reshape(max_reqs, -1).int()
        req = torch.randperm(max_reqs, device="cuda")[:bs].long()
        v2p = torch.randperm(num_pages + 1, device="cuda").long()
        sets.append((r2t, req, lens, v2p,
                     torch.full((bs, max_blocks), -7, device="cuda", dtype=torch.int32)))

    def ref(r2t, req, lens, v2p, out):
        p = torch.arange(max_blocks, device="cuda")
        tok = r2t[req[:, None], (p * KV_PAGE)[None, :]].long()
        vpage = torch.div(tok, KV_PAGE, rounding_mode="floor")
        val = (v2p[vpage] * KV_MULT).int()
        write = p[None, :] < ((lens.long() + KV_PAGE - 1) // KV_PAGE)[:, None]
        return torch.where(write, val, out)

    return ("kv_indices", f"bs={bs}, ctx<={KV_CTX}, v2p, PAGE_MULT={KV_MULT}", nbytes, sets,
            lambda r2t, req, lens, v2p, out: kv_indices.kv_indices(
                r2t, req, lens, out, v2p=v2p, page_size=KV_PAGE, page_mult=KV_MULT), ref)


ALIGN_BLOCK = 16


def case_moe_align_single_token(t):
    """One decode token's 16 expert ids (M == 1, its only use; T > 1 is not a case)."""
    if t != 1:
        return None
    topk, b = TOPK, ALIGN_BLOCK
    sets = []
    for _ in range(16):
        ids = torch.randperm(EXPERTS, device="cuda")[:topk].int()[None, :]
        sets.append((ids, torch.empty(topk * b, device="cuda", dtype=torch.int32),
                     torch.empty(topk, device="cuda", dtype=torch.int32),
                     torch.empty(1, device="cuda", dtype=torch.int32)))
    nbytes = topk * 4 + topk * b * 4 + topk * 4 + 4

    def ref(ids, sorted_ids, expert_ids, post):
        row = ids[0].long()
        valid = row >= 0
        key = torch.where(valid, row, 2**31 - 1)
        order = torch.argsort(key, stable=True)
        n = valid.sum()
        rank = torch.arange(topk, device="cuda")
        used = rank < n
        e = torch.where(used, row[order], -1).int()
        s = torch.full((topk, b), topk, dtype=torch.int32, device="cuda")
        s[:, 0] = torch.where(used, order, topk).int()
        return s.reshape(-1), e, (n * b).int().reshape(1)

    return ("moe_align_single_token", f"[1, {topk}], block {b}", nbytes, sets,
            lambda ids, s, e, p: moe_align.moe_align_single_token(ids, b, s, e, p), ref)


_U64 = (1 << 64) - 1


def _s64(v):
    """The uint64 constant v as the int64 with the same bits (torch has no uint64 math)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _fmix64_torch(x):
    """tensor_hash's splitmix64 finalizer on int64 tensors holding uint64 bits: logical
    shifts as arithmetic shifts masked, multiplications wrapping mod 2^64."""
    x = x ^ ((x >> 30) & ((1 << 34) - 1))
    x = x * _s64(tensor_hash.M1)
    x = x ^ ((x >> 27) & ((1 << 37) - 1))
    x = x * _s64(tensor_hash.M2)
    return x ^ ((x >> 31) & ((1 << 33) - 1))


def case_gpu_tensor_hash(t):
    """The hash of a [T, 7168] bf16 tensor (kernels_dsl/kimi_k3/tensor_hash.py), both passes
    (``launch_hash``: the word or byte path per HASH_WORDS), without the wrapper's
    device-to-host copy of the result (so that it can be graph-timed)."""
    n = t * HIDDEN * 2
    num_partials = (n // 4 + 1023) // 1024  # room for every swept TILE (>= 1024)
    nbytes = n + tensor_hash.num_partials(n) * 8 * 2 + 8
    sets = [(torch.randn(t, HIDDEN, device="cuda", dtype=torch.bfloat16),
             torch.empty(num_partials, device="cuda", dtype=torch.int64),
             torch.empty(1, device="cuda", dtype=torch.int64))
            for _ in range(n_sets(n))]

    def kiln_hash(x, partials, out):
        return tensor_hash.launch_hash(x.reshape(-1).view(torch.uint8), n, partials, out)

    def ref(x, partials, out):
        w = x.reshape(-1).view(torch.int32).long() & 0xFFFFFFFF  # n % 4 == 0: no padding
        i = torch.arange(w.numel(), device="cuda", dtype=torch.int64)
        s = _fmix64_torch((i << 32) ^ w ^ tensor_hash.SEED).sum()
        # the length term mod 2^64 as an int64 (n * GOLDEN as a Python int overflows int64,
        # and torch rejects it: OverflowError: can't convert negative int to unsigned)
        return _fmix64_torch(s + _s64(w.numel() * 4 * tensor_hash.GOLDEN & _U64)).reshape(1)

    return ("gpu_tensor_hash", f"[{t}, {HIDDEN}] bf16", nbytes, sets, kiln_hash, ref)


def case_moe_fused_gate(t):
    """moe_fused_gate (KERNELS.md §3.3; kernels_dsl/kimi_k3/moe_fused_gate.py, another
    helper's kernel): scores fp32 [T, 896] + bias [896] -> top-16 weights fp32 and ids int32,
    sigmoid scoring, renormalized. Skipped (None) while the module has no wrapper; the wrapper
    call below assumes ``moe_fused_gate(scores, bias, topk) -> (weights, ids)``: adjust it
    when the kernel lands if its signature differs."""
    try:
        from kernels_dsl.kimi_k3 import moe_fused_gate as mfg
    except ImportError:
        return None
    if not hasattr(mfg, "moe_fused_gate"):
        return None
    nbytes = t * EXPERTS * 4 + EXPERTS * 4 + t * TOPK * 8
    bias = torch.randn(EXPERTS, device="cuda") * 0.1
    sets = [(torch.randn(t, EXPERTS, device="cuda"),) for _ in range(n_sets(nbytes))]

    def ref(scores):
        a = torch.sigmoid(scores)
        b = torch.nan_to_num(a + bias, nan=-1e30)
        ids = torch.argsort(-b, dim=1, stable=True)[:, :TOPK]
        w = a.gather(1, ids)
        w = w / w.sum(1, keepdim=True)
        return w, ids.int()

    return ("moe_fused_gate", f"[{t}, {EXPERTS}] top-{TOPK}", nbytes, sets,
            lambda scores: mfg.moe_fused_gate(scores, bias, TOPK), ref)


def check(name, kiln_fn, ref_fn, args):
    if name.startswith("situ_and_mul_masked"):  # approximate tanh/sigmoid: dequantized values
        cloned = [a.clone() for a in args]
        (q, s), (rq, rs) = kiln_fn(*args), ref_fn(*cloned)
        got = q.float().unflatten(-1, (-1, 128)) * s[..., None]
        want = rq.float().unflatten(-1, (-1, 128)) * rs[..., None]
        torch.testing.assert_close(got, want, rtol=0.13, atol=1e-3)  # one fp8 step apart
        return
    if name.startswith("image"):
        got, want = kiln_fn(*args), ref_fn(*args)
        torch.testing.assert_close(got.float(), want.float(), rtol=2.0**-7, atol=2e-2)
        return
    if name.startswith("rmsnorm"):  # rsqrt and the sum order: bf16 rounding apart
        got, want = kiln_fn(*args), ref_fn(*args)
        torch.testing.assert_close(got.float(), want.float(), rtol=2.0**-7, atol=1e-5)
        return
    if name.startswith("attn_res"):  # fp32 sums in another order: a bf16 ulp apart; the
        # snapshot bit for bit
        got, want = kiln_fn(*args), ref_fn(*[a.clone() for a in args])
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        torch.testing.assert_close(got[0].float(), want[0].float(), rtol=2.0**-7, atol=1e-5)
        if len(got) > 1 and not bits_equal(got[1], want[1]):
            raise AssertionError(f"{name}: the snapshot bank[:, nvb] is not the prefix row")
        return
    if name.startswith("moe_fused_gate"):  # ids exact; weights from the fast sigmoid
        (w, ids), (rw, rids) = kiln_fn(*args), ref_fn(*args)
        if not torch.equal(ids.int(), rids):
            raise AssertionError(f"{name}: expert ids differ from the reference")
        torch.testing.assert_close(w, rw, rtol=1e-5, atol=1e-6)
        return
    cloned = [a.clone() for a in args]
    got = kiln_fn(*args)
    want = ref_fn(*cloned)
    if not bits_equal(got, want):
        raise AssertionError(f"{name}: kiln differs from the reference")


def run_case(case, t, copy_gbs, compiled, deadline, empty):
    name, shape, nbytes, sets, kiln_fn, ref_fn = case
    check(name, kiln_fn, ref_fn, sets[0])
    rows = [("kiln", kiln_fn), ("torch eager", ref_fn)]
    if compiled is not None and time.time() < deadline:
        rows.append(("torch.compile", compiled))
    out = []
    for impl, fn in rows:
        try:
            ms = graph_time_ms(fn, sets)
        except Exception as e:  # a peer that fails is reported, not hidden
            print(f"  {name} {shape} {impl}: {type(e).__name__}: {str(e)[:200]}")
            ms = float("nan")
        out.append({"impl": impl, "us": ms * 1e3, "GB/s": nbytes / ms / 1e6,
                    "of copy BW": nbytes / ms / 1e6 / copy_gbs})
    for r in out:
        r["kiln speedup"] = r["us"] / out[0]["us"]
    res = {"kernel": name, "T": t, "shape": shape, "bytes": nbytes, "rows": out}
    res["same-size copy (us)"] = same_size_copy_us(nbytes)
    if t is not None and t <= 64:
        res["kiln - empty kiln launch (us)"] = out[0]["us"] - empty["kiln"]
    return res


#: (case factory, [argument tuples]): every kernel of kernels_dsl/kimi_k3 (+ RMSNorm).
def cases():
    ts = [(t,) for t in TS]
    return [
        (case_rmsnorm, ts),
        (case_attn_res, ts),
        (case_attn_res_write_prefix, ts),
        (case_pack_topk_ids, ts),
        (case_moe_fused_gate, ts),  # the router epilogue (another helper's kernel; see above)
        (case_moe_align_single_token, [(1,)]),
        (case_kv_indices, ts),
        (case_concat_mla_k, ts),
        (case_concat_mla_absorb_q, ts),
        (case_mla_output_gate, ts),
        (case_mla_kv_scatter, ts),
        (case_group_quant_fp8, ts),
        (case_quant_mxfp4, ts),
        (case_situ_quant_fp8, ts),
        (case_mla_output_gate_fp8, ts),
        (case_mla_kv_scatter_fp8, ts),
        (case_gpu_tensor_hash, ts),
        (case_image, [(1, 1080, 1920, 448, 798), (8, 512, 512, 448, 448),
                      (64, 224, 224, 224, 224)]),
    ]


def empty_launches():
    """GPU time of an empty kiln kernel and of an empty torch op (``add_(0)`` on one
    element), timed like the cases (CUDA-graph replay)."""
    x = torch.zeros(16, device="cuda", dtype=torch.int32)
    y = torch.zeros(1, device="cuda")
    return {"kiln": graph_time_ms(lambda: _empty_kernel[(1,)](x, 1), [()]) * 1e3,
            "torch": graph_time_ms(lambda: y.add_(0), [()]) * 1e3}


def _fmt(v, spec):
    return "" if v is None or v != v else format(v, spec)


def case_table(report):
    lines = ["| kernel | T | shape | bytes | kiln us | GB/s | of copy BW | torch eager us | "
             "torch.compile us | vs eager | vs compile | kiln - empty launch us | "
             "same-size copy us | of same-size copy |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in report["cases"]:
        if "error" in c:
            lines.append(f"| {c['kernel']} | {c.get('T', '')} | {c.get('shape', '')} | | "
                         f"failed: {c['error'][:120]} | | | | | | | | | |")
            continue
        by = {r["impl"]: r for r in c["rows"]}
        k, e, tc = by["kiln"], by.get("torch eager"), by.get("torch.compile")
        lines.append(
            f"| {c['kernel']} | {'' if c['T'] is None else c['T']} | {c['shape']} | "
            f"{c['bytes']} | {k['us']:.2f} | {k['GB/s']:.0f} | {k['of copy BW']:.1%} | "
            f"{_fmt(e and e['us'], '.2f')} | {_fmt(tc and tc['us'], '.2f')} | "
            f"{_fmt(e and e['kiln speedup'], '.2f')}x | {_fmt(tc and tc['kiln speedup'], '.2f')}x"
            f" | {_fmt(c.get('kiln - empty kiln launch (us)'), '+.2f')} | "
            f"{_fmt(c.get('same-size copy (us)'), '.2f')} | "
            f"{_fmt(c.get('same-size copy (us)', float('nan')) / k['us'], '.1%')} |")
    return lines


def sweep_table(rows):
    lines = ["| kernel | shape | config | GPU time (us) | of copy BW | vs default |",
             "|---|---|---|---|---|---|"]
    base = {}
    for r in rows:
        base.setdefault(r["kernel"], r["us"])
        cfg = ", ".join(f"{k}={v}" for k, v in r["config"].items())
        note = f" ({r['error'][:80]})" if r.get("error") else ""
        lines.append(f"| {r['kernel']} | {r['shape']} | {cfg}{note} | {r['us']:.2f} | "
                     f"{r['of copy BW']:.1%} | {base[r['kernel']] / r['us']:.2f}x |")
    best = {}
    for r in rows:
        if r["us"] == r["us"] and (r["kernel"] not in best or r["us"] < best[r["kernel"]]["us"]):
            best[r["kernel"]] = r
    lines += ["", "Fastest configuration per kernel:", ""]
    for k, r in best.items():
        cfg = ", ".join(f"{n}={v}" for n, v in r["config"].items())
        lines.append(f"- {k}: {cfg}: {r['us']:.2f} us, {r['of copy BW']:.1%} of copy BW, "
                     f"{base[k] / r['us']:.2f}x the default")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--budget", type=float, default=240.0,
                        help="seconds after which torch.compile peers are skipped")
    parser.add_argument("--only", default=None,
                        help="comma-separated kernel-name prefixes to run")
    parser.add_argument("--sweep", action="store_true",
                        help="time the configurations of SWEEPS at T = 16384 instead")
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
    head = [f"measured copy bandwidth {copy_gbs:.0f} GB/s (read + write); empty kiln kernel "
            f"{empty['kiln']:.2f} us, empty torch op {empty['torch']:.2f} us; GPU time per call "
            f"from CUDA-graph replay of back-to-back calls over rotating inputs", ""]

    if args.sweep:
        report["sweep"] = sweep(copy_gbs, only)
        report["copy GB/s (end)"] = copy_bandwidth_gbs()
        report["seconds"] = time.time() - t_start
        lines = [f"# Kimi K3 configuration sweeps on {props.name}"] + head + \
            sweep_table(report["sweep"])
        stem = "bench_kimi_k3_sweep"
    else:
        report["cases"] = []
        for factory, arg_list in cases():
            compiled = None
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
                        # one compiled reference per kernel (dynamic shapes; the references
                        # take their sizes from their arguments), per shape for the images
                        if factory is case_image:
                            compiled = None
                        if compiled is None and time.time() < deadline:
                            compiled = torch.compile(case[5], dynamic=factory is not case_image)
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
