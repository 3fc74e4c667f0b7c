"""The kernel the wheel smoke test (wheel_smoke.py) compiles and AOT-builds into a bundle:
``out = exp(x) * scale`` with libdevice's expf (``precise=True``), so that a compile also
proves libdevice is found at run time."""

import kiln
import kiln.language as kl
from kiln.aot import Spec


@kiln.jit(num_warps=4)
def exp_scale(x_ptr, out_ptr, n, scale, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=0.0)
    kl.store(out_ptr + offs, kl.exp(x, precise=True) * scale, mask=mask)


SIGNATURE = {"x_ptr": "*f32", "out_ptr": "*f32", "n": "i32", "scale": "f32"}
CONSTEXPRS = {"BLOCK": 512}

AOT_SPECIALIZATIONS = [Spec(exp_scale, signature=SIGNATURE, constexprs=CONSTEXPRS)]
