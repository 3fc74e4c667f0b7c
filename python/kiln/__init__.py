"""kiln: a Triton-style Python DSL compiled by an MLIR code generator to PTX/cubins.

    import kiln
    import kiln.language as kl

    @kiln.jit
    def kernel(x_ptr, n, BLOCK: kl.constexpr): ...

``import kiln`` needs neither the compiler extension (``kiln._C``, loaded when a
kernel is first compiled) nor torch.

This module is the package's front: it imports from every floor and nothing imports
it (docs/architecture.md draws the floors).
"""

from __future__ import annotations

from typing import Any

from . import language, runtime
from ._version import __version__
from .autotune import Autotuner, Config, autotune  # kiln.autotune: the decorator
from .host import TensorDescriptor
from .jit import JITFunction, jit
from .language.core import constexpr
from .language.errors import CompilationError, CompilationWarning
from .runtime import Bundle, BundleWriter, KilnError, device_arch

#: Submodules of the top floor that ``import kiln`` does not load (numpy, argparse...).
_LAZY_SUBMODULES = ("aot", "testing", "interpreter", "cache")


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        import importlib  # noqa: PLC0415

        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'kiln' has no attribute '{name}'")


def cdiv(x: int, div: int) -> int:
    """ceil(x / div) on the host (for grids): ``kiln.cdiv(n, BLOCK)``."""
    return -(-x // div)


__all__ = ["Autotuner", "Bundle", "CompilationError", "CompilationWarning", "Config",
           "JITFunction", "KilnError", "TensorDescriptor", "autotune", "cdiv", "constexpr", "jit",
           "language", "__version__"]
