"""MLA output gate, bf16 (KERNELS.md §4.3):

    out = bf16( f32(x) * f32( bf16( sigmoid_f32(gate) ) ) )

the sigmoid computed in fp32 and rounded to bf16 before the multiply, which reproduces torch's
``x * torch.sigmoid(gate)`` on bf16 tensors bit for bit (double rounding). The sigmoid is
``1 / (1 + expf(-g))`` with libdevice's expf and an IEEE division (``precise=True``), as
torch's CUDA sigmoid computes it. x, gate and out are bf16 with N elements (any shape,
contiguous), N % 8 == 0; BLOCK elements per program in 16-byte vectors.
"""

from __future__ import annotations

from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L


@kiln.jit(num_warps=8)
def mla_output_gate_kernel(x_ptr, gate_ptr, out_ptr, N, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < N
    x = kl.load(x_ptr + offs, mask=mask, other=0.0).to(kl.float32)
    g = kl.load(gate_ptr + offs, mask=mask, other=0.0).to(kl.float32)
    s = kl.sigmoid(g, precise=True).to(kl.bfloat16).to(kl.float32)
    kl.store(out_ptr + offs, (x * s).to(kl.bfloat16), mask=mask)


#: 256 threads x 8 bf16 (one 16-byte vector each).
BLOCK, NUM_WARPS = 2048, 8

AOT_SPECIALIZATIONS = [
    Spec(mla_output_gate_kernel, name="mla_output_gate",
         signature={"x_ptr": "*bf16", "gate_ptr": "*bf16", "out_ptr": "*bf16", "N": "i32"},
         constexprs={"BLOCK": BLOCK}, divisibility={"x_ptr": 16, "gate_ptr": 16, "out_ptr": 16,
                                                    "N": 8},
         num_warps=NUM_WARPS),
]


def mla_output_gate(x: Any, gate: Any, out: Optional[Any] = None) -> Any:
    """``x * sigmoid(gate)`` bf16, bit-exact with torch; x and gate contiguous bf16 of one
    shape with numel % 8 == 0; ``out`` (allocated if None) may alias x. Checks raise before
    launch."""
    op = "mla_output_gate"
    L.check_dtype(op, "x", x, ("bfloat16",))
    L.check_dtype(op, "gate", gate, ("bfloat16",))
    shp = L.shape(x)
    L.check_shape(op, "gate", gate, shp)
    L.check_contiguous(op, "x", x)
    L.check_contiguous(op, "gate", gate)
    n = 1
    for s in shp:
        n *= s
    if n % 8:
        raise ValueError(f"{op}: the number of elements must be a multiple of 8 (16-byte "
                         f"vectors), got {n}")
    if out is None:
        import torch

        out = torch.empty(shp, dtype=torch.bfloat16, device=x.device)
    else:
        L.check_dtype(op, "out", out, ("bfloat16",))
        L.check_shape(op, "out", out, shp)
        L.check_contiguous(op, "out", out)
    L.check_same_device(op, ("x", x), ("gate", gate), ("out", out))
    L.check_int32_extent(op, "N", n + BLOCK)
    L.launch(mla_output_gate_kernel, "mla_output_gate", ((n + BLOCK - 1) // BLOCK,),
             (x, gate, out, n), {"BLOCK": BLOCK}, NUM_WARPS)
    return out
