"""Kernels that are not specific to one model: normalization and softmax over rows, TMA
tile copies, a kl.dot GEMM."""

MODULES = ["norm", "tma", "gemm"]
