"""Kimi K3 kernels in the kiln DSL, one module per family (docs/kernels/ holds their
specification). ``MODULES`` lists the modules whose ``AOT_SPECIALIZATIONS`` the AOT build
(``python -m kiln.aot kernels_dsl.kimi_k3``) compiles into the bundle; each with tuning has one
``Settings`` and wrappers that take ``settings=``. ``torch_ops`` registers the wrappers as torch
custom ops (it needs torch; importing this package does not import it)."""

MODULES = ["situ", "pack_topk_ids", "concat_mla", "mla_output_gate", "mla_kv", "image", "quant",
           "situ_quant", "kv_indices", "moe_align", "tensor_hash", "moe_fused_gate", "attn_res",
           "kda_decode", "kda_verify", "kda_prefill", "mla_attention", "allreduce",
           "allreduce_fallback", "gemm_collectives"]
