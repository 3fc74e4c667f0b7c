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

__all__ = ["assert_bf16_close", "bf16_ulp", "interpret", "source_line"]


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
