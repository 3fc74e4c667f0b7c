"""The kiln frontend compiler: AST walker, semantic layer and named stages.

The middle floor of the package: it reads ``kiln.language`` and ``kiln.host`` and never the
runtime (``kiln.runtime``) or the JIT; what a compiled image uses and costs, recorded in its
metadata, is read in ``kiln.compiler.targetinfo``.
"""

from ..language.errors import CompilationError
from .compiler import (
    STAGES,
    CompiledKernel,
    Specialization,
    compile_kernel,
    compiler_available,
    compiler_version,
    lower_to_llvm_dialect,
    make_cubin,
    make_llvm_ir,
    make_ptx,
    make_tile_ir,
    toolchain,
)

__all__ = [
    "STAGES", "CompilationError", "CompiledKernel", "Specialization", "compile_kernel",
    "compiler_available", "compiler_version", "lower_to_llvm_dialect", "make_cubin",
    "make_llvm_ir", "make_ptx", "make_tile_ir", "toolchain",
]
