"""Kernels that are not specific to one model: normalization and softmax over rows."""

MODULES = ["norm"]
