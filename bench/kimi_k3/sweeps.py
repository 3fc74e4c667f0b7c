"""The configurations ``bench/kimi_k3/run.py --sweep`` times: for each swept kernel, a case of
``cases.py`` at one shape and a list of configurations, each a dict of fields of its module's
``Settings``. The runner passes ``dataclasses.replace(module.SETTINGS, **config)`` to the
wrapper as ``settings=`` (nothing sets a module attribute), checks the result against the
reference, then times it; the configuration equal to ``SETTINGS`` (the default) is timed first
and is the "vs default" baseline. The shapes: T = 16384 (the large end) unless a sweep names
the latency end (T = 1, 64), the largest image batch, [32768, 7168] for RMSNorm (bench/norm's).

Importable without torch or the kernels: ``test/python/test_bench_kimi_k3.py`` checks every
field name against the modules' ``Settings``."""

from typing import Any, Dict, List, NamedTuple, Sequence, Tuple


class Sweep(NamedTuple):
    module: str  # the kernel module (under kernels_dsl) whose Settings the configurations replace
    case: str  # the case factory of cases.py
    args: Tuple[Any, ...]  # its arguments (the shape)
    configs: List[Dict[str, Any]]  # Settings fields to replace, one dict a configuration


def grid(**axes: Sequence[Any]) -> List[Dict[str, Any]]:
    """Every combination of the given {field: values}."""
    cfgs: List[Dict[str, Any]] = [{}]
    for k, values in axes.items():
        cfgs = [dict(c, **{k: v}) for c in cfgs for v in values]
    return cfgs


def pairs(names: Sequence[str], values: Sequence[Sequence[Any]]) -> List[Dict[str, Any]]:
    """One configuration per tuple of ``values`` (fields ``names``)."""
    return [dict(zip(names, v)) for v in values]


K3 = "kimi_k3."
IMAGE_LARGE = (64, 224, 224, 224, 224)

SWEEPS = [
    # RMSNorm: warps a row, the row load's L2 policy
    Sweep("common.norm", "case_rmsnorm", (32768,),
          grid(rmsnorm_warps=(4, 8, 2), rmsnorm_x_evict=("evict_last", "", "evict_first"))),
    # pack_topk_ids: elements a program, warps
    Sweep(K3 + "pack_topk_ids", "case_pack_topk_ids", (16384,),
          pairs(("block", "num_warps"),
                ((1024, 4), (256, 1), (512, 1), (512, 2), (1024, 2), (1024, 8), (2048, 4),
                 (2048, 8), (4096, 8), (4096, 16)))),
    # mla_kv_scatter (bf16): tokens a program, warps, programs an SM it is compiled for (0:
    # ptxas's choice; one-wave grids at T = 16384: 4 / 2 at 32, 16 / 4 at 8, 32 / 8 at 4), the
    # loads' eviction policy and the stores' cache modifier
    Sweep(K3 + "mla_kv", "case_mla_kv_scatter", (16384,),
          [dict(c, min_programs=0) for c in pairs(
              ("rows", "num_warps"), ((4, 4), (2, 2), (4, 2), (8, 4), (16, 8), (1, 1), (2, 1),
                                      (8, 8), (16, 4), (32, 8), (32, 16)))]
          + [dict(rows=r, num_warps=w, min_programs=p, load_evict=e, store_cache=c)
             for r, w, p in ((16, 4, 8), (4, 2, 32), (32, 8, 4), (8, 4, 12), (8, 4, 0))
             for e, c in (("evict_first", ".cs"), ("", ""), ("", ".cs"), ("evict_first", ""))]),
    # mla_kv_scatter_fp8: tokens a program ([4 x rows, 128] latent tile), warps, register cap,
    # the stores' cache modifier
    Sweep(K3 + "mla_kv", "case_mla_kv_scatter_fp8", (16384,),
          pairs(("fp8_rows", "fp8_warps", "fp8_maxnreg"),
                ((8, 4, None), (1, 1, None), (2, 1, None), (4, 1, None), (4, 2, None),
                 (8, 2, None), (16, 4, None), (2, 1, 64), (4, 2, 72)))
          + [dict(fp8_rows=r, fp8_warps=w, fp8_store_cache="") for r, w in ((8, 4), (4, 2))]),
    # concat_mla_k: rows a program, warps
    Sweep(K3 + "concat_mla", "case_concat_mla_k", (16384,),
          pairs(("k_rows", "k_warps"),
                ((4, 1), (16, 4), (8, 1), (8, 2), (16, 2), (32, 4), (32, 8), (64, 8), (64, 16)))),
] + [
    # concat_mla_k as a PDL launch up to k_pdl_programs_per_sm programs an SM: the default,
    # never (0) and always
    Sweep(K3 + "concat_mla", "case_concat_mla_k", (t,),
          grid(k_pdl_programs_per_sm=(4, 0, 1 << 20)))
    for t in (1, 64, 16384)
] + [
    # concat_mla_absorb_q: rows of 512 a program, warps
    Sweep(K3 + "concat_mla", "case_concat_mla_absorb_q", (16384,),
          pairs(("q_rows", "q_warps"), ((4, 4), (2, 2), (4, 2), (8, 4), (8, 8)))),
    # kv_indices at bs = 16384: pages a loop iteration, warps (one program a request)
    Sweep(K3 + "kv_indices", "case_kv_indices", (16384,),
          pairs(("block", "num_warps"), ((64, 2), (128, 4), (128, 2), (64, 1), (256, 4)))),
] + [
    # kv_indices where the requests fit one program an SM (bs <= SMs)
    Sweep(K3 + "kv_indices", "case_kv_indices", (t,),
          pairs(("few_block", "few_num_warps"),
                ((256, 4), (128, 4), (64, 2), (128, 2), (256, 8))))
    for t in (1, 64)
] + [
    # mla_output_gate (bf16): elements a program, warps
    Sweep(K3 + "mla_output_gate", "case_mla_output_gate", (16384,),
          pairs(("block", "num_warps"), ((2048, 8), (1024, 4), (4096, 8), (2048, 4)))),
    # mla_output_gate_fp8: bf16 values a thread, register cap (the chunk programs at
    # T = 16384)
    Sweep(K3 + "mla_output_gate", "case_mla_output_gate_fp8", (16384,),
          grid(fp8_maxnreg=(96, 92, 88, 104, None)) + grid(fp8_thread_elems=(8, 32))),
] + [
    # mla_output_gate_fp8: the three chunks on one warp from fp8_chunks_min_t rows (the
    # default), at every T (0) and never
    Sweep(K3 + "mla_output_gate", "case_mla_output_gate_fp8", (t,),
          grid(fp8_chunks_min_t=(4096, 0, 1 << 31)))
    for t in (1, 64, 4096)
] + [
    # situ_and_mul_masked_post_quant: groups of one token a program, warps
    Sweep(K3 + "situ_quant", "case_situ_quant_fp8", (16384,),
          pairs(("rows", "num_warps"), ((8, 2), (8, 1), (8, 4), (4, 1), (16, 2), (16, 4),
                                        (32, 4)))),
    # per_token_group_quant_fp8: values a program, warps
    Sweep(K3 + "quant", "case_group_quant_fp8", (16384,),
          pairs(("group_elems", "group_warps"),
                ((4096, 2), (2048, 1), (1024, 1), (2048, 2), (512, 1), (2048, 4), (8192, 4)))),
    # quant_mxfp4 at T = 16384: the chunk programs (rows x 7 chunks of 32 blocks, lookahead
    # chunks loaded ahead, the register cap that holds them), the packed stores' cache
    # modifier, and the one-block-a-thread programs (mx_chunks = 0)
    Sweep(K3 + "quant", "case_quant_mxfp4", (16384,),
          [dict(c, mx_rows=r, mx_warps=w) for r, w in ((256, 8), (128, 4), (64, 2), (32, 1))
           for c in pairs(("mx_lookahead", "mx_maxnreg"),
                          ((1, 64), (1, None), (2, 80), (2, None), (3, 96), (7, None)))]
          + [dict(mx_out_cache="")]
          + [dict(mx_chunks=0, mx_rows=r, mx_warps=w)
             for r, w in ((256, 8), (128, 4), (64, 2), (512, 16))]),
] + [
    # quant_mxfp4: the chunk programs from mx_chunks_min_t rows (the default) or at every T
    Sweep(K3 + "quant", "case_quant_mxfp4", (t,), grid(mx_chunks_min_t=(4096, 1)))
    for t in (1, 64, 4096)
] + [
    # attn_res at T = 16384: the row ring's row elements a thread, slots, programs an SM
    Sweep(K3 + "attn_res", "case_attn_res", (16384,),
          pairs(("ring_thread_elems", "ring_stages", "ring_programs_per_sm"),
                ((64, 3, 3), (64, 4, 3), (64, 2, 3), (32, 4, 2), (32, 5, 2), (16, 4, 2),
                 (128, 3, 4)))),
    # attn_res at T = 1: the cluster kernel's programs a token and warps, the token kernel
    # (no cluster kernel) and the ring (neither)
    Sweep(K3 + "attn_res", "case_attn_res", (1,),
          pairs(("cluster_size", "cluster_warps"), ((4, 4), (2, 4), (8, 4), (16, 2), (4, 8)))
          + [dict(cluster_max_waves=0), dict(cluster_max_waves=0, token_max_waves=0)]),
    # attn_res at T = 64 (past one program an SM at 4 a token): the "many" cluster pair, the
    # token kernel, the ring
    Sweep(K3 + "attn_res", "case_attn_res", (64,),
          pairs(("cluster_many_size", "cluster_many_warps"), ((2, 8), (2, 4), (4, 4)))
          + [dict(cluster_max_waves=0), dict(cluster_max_waves=0, token_max_waves=0)]),
] + [
    # gpu_tensor_hash: past one program, a program per grid_words words (as many as fit,
    # programs_per_sm x SMs)
    Sweep(K3 + "tensor_hash", "case_gpu_tensor_hash", (t,), grid(grid_words=(1024, 8192)))
    for t in (64, 4096, 16384)
] + [
    # gpu_tensor_hash at T = 16384: words a block, warps, the grid cap
    Sweep(K3 + "tensor_hash", "case_gpu_tensor_hash", (16384,),
          [dict(c, programs_per_sm=p) for p in (6, 2, 4, 8)
           for c in pairs(("block", "num_warps"), ((1024, 4), (1024, 8), (512, 4), (2048, 4)))]),
] + [
    # image_preprocess, every image shape of the table: output columns a program, rows a
    # thread, warps, register cap
    Sweep(K3 + "image", "case_image", shape,
          pairs(("rows", "xblock", "num_warps", "maxnreg"),
                ((16, 32, 1, None), (16, 64, 2, None), (16, 128, 4, None), (16, 32, 1, 168),
                 (16, 32, 1, 152), (16, 32, 1, 128), (8, 64, 1, None), (4, 128, 1, None))))
    for shape in ((1, 1080, 1920, 448, 798), (8, 512, 512, 448, 448), IMAGE_LARGE)
] + [
    # moe_fused_gate at the latency end: the rank kernel's warps, group maxima and candidate
    # cap, and the bits a radix round on the rows past the cap
    Sweep(K3 + "moe_fused_gate", "case_moe_fused_gate", (t,),
          pairs(("rank_warps", "rank_groups", "rank_cap"),
                ((4, 64, 32), (8, 64, 32), (2, 64, 32), (4, 32, 64), (4, 128, 32),
                 (8, 128, 32)))
          + grid(rank_select_bits=(1,)))
    for t in (1, 64)
] + [
    # moe_fused_gate's batch kernel at T = 16384: warps a row, register cap, bits a round
    Sweep(K3 + "moe_fused_gate", "case_moe_fused_gate", (16384,),
          grid(batch_warps=(1, 2, 4))
          + grid(batch_maxnreg=(80, None, 96, 72), batch_select_bits=(1, 4))),
    # moe_fused_gate at T = 4096: the rank kernel against the batch kernel (batch_m)
    Sweep(K3 + "moe_fused_gate", "case_moe_fused_gate", (4096,),
          grid(batch_m=(512, 1 << 30))),
]
