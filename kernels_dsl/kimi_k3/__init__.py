"""Kimi K3 kernels in the kiln DSL. ``MODULES`` lists the modules whose
``AOT_SPECIALIZATIONS`` the AOT build (``python -m kiln.aot kernels_dsl.kimi_k3``)
compiles into the bundle."""

MODULES = ["situ", "pack_topk_ids", "concat_mla", "mla_output_gate", "mla_kv", "image", "quant",
           "situ_quant", "kv_indices", "moe_align", "tensor_hash", "moe_fused_gate", "attn_res"]
