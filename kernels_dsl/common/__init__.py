"""Kernels that are not specific to one model: normalization and softmax over rows, TMA
tile copies, a kl.dot GEMM, flash attention (causal varlen/GQA forward, split-KV decoding)."""

MODULES = ["norm", "tma", "gemm", "attention"]
