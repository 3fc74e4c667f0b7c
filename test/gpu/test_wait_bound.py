"""The debug wait bound (KILN_DEBUG_WAITS, kiln-convert-tile-to-nvvm's wait-bound) on the GPU:
a kernel whose mbarrier wait can never pass (a ring slot nobody fills, waited for with the
parity of its first fill) prints the kernel, the op's source line, the barrier and the parity,
and traps, instead of hanging; the same kernel waiting for a phase that has passed (parity 1
on a fresh barrier) returns normally. Each launch runs in its own process (a trap ends the
CUDA context), compiled through kiln._C from tile IR and launched with CuPy."""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cupy")

from kiln.compiler import compiler_available  # noqa: E402

pytestmark = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")

HANG = """
!R = !tile.ring<2, tensor<64x64xbf16>>
func.func @hang(%slot: i32, %phase: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ra = tile.ring_alloc : !R
  %a = tile.ring_wait_load %ra[%slot], %phase : !R -> tensor<64x64xbf16>
  return
}
"""

SCRIPT = """
import sys
import cupy
import numpy as np
import kiln
import kiln._C as C
arch = kiln.device_arch()
module = C.parse_module(C.Context(), sys.argv[1])
C.run_tile_to_llvm(module, 4, arch, int(sys.argv[3]))
cubin = C.compile_ptx(C.translate_to_ptx(module, arch), arch)[0]
mod = cupy.cuda.function.Module()
mod.load(bytes(cubin))
fn = mod.get_function("hang")
fn((1, 1, 1), (128, 1, 1), (np.int32(0), np.int32(int(sys.argv[2]))))
cupy.cuda.runtime.deviceSynchronize()
print("returned")
"""


def launch(phase, bound):
    return subprocess.run([sys.executable, "-c", SCRIPT, HANG, str(phase), str(bound)],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


def test_a_wait_that_cannot_pass_reports_and_traps():
    r = launch(phase=0, bound=1 << 16)
    out = r.stdout + r.stderr
    assert "returned" not in out, out
    assert r.returncode != 0, out
    assert "kiln: kernel 'hang'" in out and "mbarrier wait gave up" in out, out
    assert "parity 0" in out, out


def test_a_wait_that_passes_returns_with_the_bound_on():
    r = launch(phase=1, bound=1 << 16)
    assert r.returncode == 0 and "returned" in r.stdout, r.stdout + r.stderr
    assert "gave up" not in r.stdout
