"""The kernel library written in the kiln DSL (one package per model family)."""
