"""Image preprocessing for the K3 vision tower (KERNELS.md §8.1, kiln's contract).

``image_preprocess(images uint8 [N, H, W, 3] (HWC), out_h, out_w, mean, std, patch=14)``
    -> bf16 [N, (out_h / 14) * (out_w / 14), 3 * 14 * 14]

1. bilinear resize to (out_h, out_w), half-pixel centres, no antialias — torch's
   ``interpolate(mode="bilinear", align_corners=False)`` on float32 NCHW:
       src = max((dst + 0.5) * (in / out) - 0.5, 0);  i0 = floor(src);  i1 = min(i0 + 1, in - 1)
       l = src - i0;  v = (1-ly) * ((1-lx) * p00 + lx * p01) + ly * ((1-lx) * p10 + lx * p11)
2. scale by 1/255, normalize ``(v - mean[c]) / std[c]`` (CLIP defaults);
3. patchify: patches row-major over the (out_h/14, out_w/14) grid, each flattened in
   (channel, row, col) order; stored as bf16.

The grid is (BLOCK-element blocks of a patch row, patch row, image): a program's stores are
contiguous and every index division is by a constant; each element gathers its four source
pixels (uint8 loads through tiles of pointers). The images may be
strided in any dimension. out_h and out_w must be multiples of the patch size.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
INV_255 = 1.0 / 255.0


@kiln.jit(num_warps=4)
def image_preprocess_kernel(img_ptr, out_ptr, H, W, s_n, s_h, s_w, s_c, per_image4, row4,
                            scale_h, scale_w, mean0, mean1, mean2, rstd0, rstd1, rstd2,
                            PATCH: kl.constexpr, BLOCK: kl.constexpr):
    # Grid (blocks of a patch row, patch row, image): every division is by a constant. The
    # sizes come in units of 4 elements (3 * 14 * 14 = 4 * 147): 8-byte stores whatever the
    # image width.
    row_elems = row4 * 4
    e = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = e < row_elems
    px = e // (3 * PATCH * PATCH)
    o = e % (3 * PATCH * PATCH)
    c = o // (PATCH * PATCH)
    q = o % (PATCH * PATCH)
    y = kl.program_id(1) * PATCH + q // PATCH
    x = px * PATCH + q % PATCH
    sy = kl.maximum((y.to(kl.float32) + 0.5) * scale_h - 0.5, 0.0)
    sx = kl.maximum((x.to(kl.float32) + 0.5) * scale_w - 0.5, 0.0)
    y0 = sy.to(kl.int32)
    x0 = sx.to(kl.int32)
    ly = sy - y0.to(kl.float32)
    lx = sx - x0.to(kl.float32)
    y1 = kl.where(y0 < H - 1, y0 + 1, y0)
    x1 = kl.where(x0 < W - 1, x0 + 1, x0)
    base = img_ptr + kl.program_id(2) * s_n + c * s_c
    r0 = base + y0 * s_h
    r1 = base + y1 * s_h
    c0 = x0 * s_w
    c1 = x1 * s_w
    p00 = kl.load(r0 + c0, mask=mask, other=0).to(kl.float32)
    p01 = kl.load(r0 + c1, mask=mask, other=0).to(kl.float32)
    p10 = kl.load(r1 + c0, mask=mask, other=0).to(kl.float32)
    p11 = kl.load(r1 + c1, mask=mask, other=0).to(kl.float32)
    hx = 1.0 - lx
    v = (1.0 - ly) * (hx * p00 + lx * p01) + ly * (hx * p10 + lx * p11)
    mean = kl.where(c == 0, mean0, kl.where(c == 1, mean1, mean2))
    rstd = kl.where(c == 0, rstd0, kl.where(c == 1, rstd1, rstd2))
    out = out_ptr + kl.program_id(2) * (per_image4 * 4) + kl.program_id(1) * row_elems
    kl.store(out + e, ((v * INV_255 - mean) * rstd).to(kl.bfloat16), mask=mask)


#: BLOCK output elements a program on NUM_WARPS warps, at most MAXNREG registers a thread. The
#: uint8 pixels are gathered (no vectors), so the layout's runs are 8 elements (the bf16
#: stores); at 8 elements a thread ptxas takes 117 registers (sm_90a) and the cap of 80 lets
#: more programs in flight (a few spilled bytes). H200 sweep (bench/kimi_k3/run.py --sweep
#: --only image): 256 / 1 warp / 80 registers 9.65, 21.7 and 40.8 us for the three benchmark
#: shapes (1x1080x1920, 8x512x512, 64x224x224) against 11.5, 34.8 and 67.7 us for the former
#: 512 / 1 warp with 16-element runs (228 registers); 1024 / 4 warps uncapped 8.92, 27.9, 55.9.
BLOCK, NUM_WARPS, PATCH = 256, 1, 14
MAXNREG = 80

_SIG = {"img_ptr": "*u8", "out_ptr": "*bf16", "H": "i32", "W": "i32",
        "s_n": "i32", "s_h": "i32", "s_w": "i32", "s_c": "i32", "per_image4": "i32",
        "row4": "i32",
        "scale_h": "f32", "scale_w": "f32", "mean0": "f32", "mean1": "f32", "mean2": "f32",
        "rstd0": "f32", "rstd1": "f32", "rstd2": "f32"}

AOT_SPECIALIZATIONS = [
    # Contiguous HWC images (s_w = 3, s_c = 1: no divisibility on those).
    Spec(image_preprocess_kernel, name="image_preprocess", signature=_SIG,
         constexprs={"PATCH": PATCH, "BLOCK": BLOCK},
         divisibility=["img_ptr", "out_ptr"], num_warps=NUM_WARPS, maxnreg=MAXNREG),
]


def image_preprocess(images: Any, out_h: int, out_w: int,
                     mean: Sequence[float] = CLIP_MEAN, std: Sequence[float] = CLIP_STD,
                     patch: int = PATCH, out: Optional[Any] = None) -> Any:
    """uint8 [N, H, W, 3] -> bf16 [N, (out_h/patch)*(out_w/patch), 3*patch*patch] (resize,
    /255, normalize, patchify; see the module docstring). Checks raise before launch."""
    op = "image_preprocess"
    L.check_dtype(op, "images", images, ("uint8",))
    n, h, w, _ = L.check_shape(op, "images", images, (None, None, None, 3))
    out_h, out_w, patch = int(out_h), int(out_w), int(patch)
    if patch != PATCH:
        raise ValueError(f"{op}: patch must be {PATCH} (the K3 vision tower), got {patch}")
    if out_h <= 0 or out_w <= 0 or out_h % patch or out_w % patch:
        raise ValueError(f"{op}: out_h and out_w must be positive multiples of the patch size "
                         f"{patch}, got out_h = {out_h}, out_w = {out_w}")
    if n > 0 and (h == 0 or w == 0):
        raise ValueError(f"{op}: the images must not be empty, got H = {h}, W = {w}")
    if len(mean) != 3 or len(std) != 3:
        raise ValueError(f"{op}: mean and std need 3 values (one per channel), got "
                         f"{len(mean)} and {len(std)}")
    if any(float(s) == 0.0 for s in std):
        raise ValueError(f"{op}: std must be nonzero, got {list(std)}")
    ph, pw = out_h // patch, out_w // patch
    per_image = ph * pw * 3 * patch * patch
    if out is None:
        import torch

        out = torch.empty((n, ph * pw, 3 * patch * patch), dtype=torch.bfloat16,
                          device=images.device)
    else:
        L.check_dtype(op, "out", out, ("bfloat16",))
        L.check_shape(op, "out", out, (n, ph * pw, 3 * patch * patch))
        L.check_contiguous(op, "out", out)
    L.check_same_device(op, ("images", images), ("out", out))
    total = n * per_image
    L.check_int32_extent(op, "the number of output elements", total + BLOCK)
    st = L.strides(images)
    if any(s < 0 for s in st):
        raise ValueError(f"{op}: negative strides are not supported, got {st}")
    if n > 0:
        L.check_int32_extent(op, "the largest image offset",
                             sum((d - 1) * s for d, s in zip(L.shape(images), st)) + 1)
    if n > 65535:
        raise ValueError(f"{op}: at most 65535 images per launch (the grid's z), got {n}")
    row_elems = pw * 3 * patch * patch
    args = (images, out, h, w, st[0], st[1], st[2], st[3], per_image // 4, row_elems // 4,
            float(h) / float(out_h), float(w) / float(out_w),
            float(mean[0]), float(mean[1]), float(mean[2]),
            1.0 / float(std[0]), 1.0 / float(std[1]), 1.0 / float(std[2]))
    L.launch(image_preprocess_kernel, "image_preprocess",
             ((row_elems + BLOCK - 1) // BLOCK, ph, n), args, {"PATCH": patch, "BLOCK": BLOCK},
             NUM_WARPS, MAXNREG)
    return out
