"""The kiln frontend compiler: AST walker, semantic layer and named stages."""

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
)
from .errors import CompilationError

__all__ = [
    "STAGES", "CompilationError", "CompiledKernel", "Specialization", "compile_kernel",
    "compiler_available", "compiler_version", "lower_to_llvm_dialect", "make_cubin",
    "make_llvm_ir", "make_ptx", "make_tile_ir",
]
