"""kiln: a Triton-style Python DSL compiled by an MLIR code generator to PTX/cubins.

    import kiln
    import kiln.language as kl

    @kiln.jit
    def kernel(x_ptr, n, BLOCK: kl.constexpr): ...

``import kiln`` needs neither the compiler extension (``kiln._C``) nor torch:
the compiler is imported when a kernel is first compiled, and ``Bundle`` /
``KilnError`` come lazily from ``kiln.runtime``.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

from . import language  # noqa: E402
from .compiler.errors import CompilationError  # noqa: E402
from .jit import JITFunction, jit  # noqa: E402
from .autotune import Autotuner, Config, autotune  # noqa: E402  (kiln.autotune: the decorator)
from .language.core import constexpr  # noqa: E402
from .tensor_descriptor import TensorDescriptor  # noqa: E402

_LAZY_RUNTIME = ("Bundle", "KilnError", "BundleWriter", "device_arch")


def __getattr__(name: str) -> Any:
    if name in _LAZY_RUNTIME:
        from . import runtime

        return getattr(runtime, name)
    if name in ("aot", "testing", "interpreter", "cache"):
        import importlib

        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'kiln' has no attribute '{name}'")


def cdiv(x: int, div: int) -> int:
    """ceil(x / div) on the host (for grids): ``kiln.cdiv(n, BLOCK)``."""
    return -(-x // div)


__all__ = ["Autotuner", "Bundle", "CompilationError", "Config", "JITFunction", "KilnError",
           "TensorDescriptor", "autotune", "cdiv", "constexpr", "jit", "language", "__version__"]
