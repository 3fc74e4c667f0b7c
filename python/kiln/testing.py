"""Helpers for testing kernels on the CPU.

    from kiln.testing import interpret

    x = np.random.rand(1000).astype(np.float32)
    y = np.empty_like(x)
    interpret(add_one, (kiln.cdiv(1000, 256),), x, y, 1000, BLOCK=256)
    np.testing.assert_allclose(y, x + 1)

``interpret`` runs any ``@kiln.jit`` kernel (or ``@kiln.autotune`` kernel, with
its first config unless constexprs are given) with the CPU interpreter
(``kiln.interpreter``), whatever ``KILN_INTERPRET`` says.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import interpreter
from .autotune import Autotuner

__all__ = ["FakeCudaTensor", "assert_bf16_close", "bf16_ulp", "interpret", "source_line"]


_TYPESTR = {"bfloat16": "<V2", "float32": "<f4", "float16": "<f2", "int32": "<i4",
            "int64": "<i8", "uint8": "|u1", "float8_e4m3fn": "|V1"}


class FakeCudaTensor:
    """Just enough of a CUDA tensor for a wrapper's checks, with no GPU and no torch:
    ``__cuda_array_interface__``, ``shape``, ``stride()``, ``dtype`` (torch's name),
    ``data_ptr()`` and, when given, ``device``."""

    def __init__(self, shape: Any, dtype: str = "bfloat16", strides: Any = None,
                 address: int = 0x7F0000000000, device: Any = None) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        if device is not None:
            self.device = device
        self._strides = tuple(strides) if strides else tuple(
            int(np.prod(self.shape[i + 1:])) for i in range(len(self.shape)))
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": _TYPESTR[dtype],
                                         "shape": self.shape, "version": 3}

    def stride(self, dim: Any = None) -> Any:
        return self._strides if dim is None else self._strides[dim]

    def data_ptr(self) -> int:
        return self.__cuda_array_interface__["data"][0]


def interpret(kernel: Any, grid: Any, *args: Any, **constexprs: Any) -> None:
    """Runs ``kernel[grid](*args, **constexprs)`` on the CPU with numpy."""
    if isinstance(kernel, Autotuner):
        config = kernel.configs[0]
        constexprs = {**config.kwargs, **constexprs}
        kernel = kernel.fn
    interpreter.run(kernel, grid, args, constexprs)


def source_line(path: str, marker: str) -> int:
    """The 1-based number of the line of ``path`` that carries the comment ``# marker``
    (for tests that expect a diagnostic at a kernel's line); lines naming "marker" are
    skipped, so that a helper's own call does not match."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if f"# {marker}" in line and "marker" not in line:
                return i
    raise AssertionError(f"no line marked '# {marker}' in {path}")


def bf16_ulp(x: Any) -> np.ndarray:
    """The spacing of bfloat16 numbers at |x| (8 significant bits)."""
    x = np.abs(np.asarray(x, dtype=np.float32))
    exp = np.floor(np.log2(np.maximum(x, np.float32(2.0**-126))))
    return np.exp2(exp - 7).astype(np.float32)


def assert_bf16_close(actual: Any, expected: Any, ulps: float = 1.0) -> None:
    """``actual`` (bf16) is within ``ulps`` bf16 ulps of ``expected`` (fp32 or wider)."""
    a = np.asarray(actual).astype(np.float32)
    e = np.asarray(expected).astype(np.float32)
    err = np.abs(a - e)
    tol = ulps * bf16_ulp(e)
    bad = err > tol
    if np.any(bad):
        i = np.unravel_index(int(np.argmax(np.where(bad, err / np.maximum(tol, 1e-30), 0))),
                             a.shape)
        raise AssertionError(f"{int(bad.sum())} of {a.size} elements differ by more than "
                             f"{ulps} bf16 ulp; worst at {tuple(int(v) for v in i)}: got "
                             f"{a[i]}, expected {e[i]} (|diff| {err[i]:.3g}, tol {tol[i]:.3g})")
