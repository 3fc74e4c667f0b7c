"""Image preprocessing for the K3 vision tower (kiln's contract).

``image_preprocess(images uint8 [N, H, W, 3] (HWC), out_h, out_w, mean, std, patch=14)``
    -> bf16 [N, (out_h / 14) * (out_w / 14), 3 * 14 * 14]

1. bilinear resize to (out_h, out_w), half-pixel centres, no antialias — torch's
   ``interpolate(mode="bilinear", align_corners=False)`` on float32 NCHW:
       src = max((dst + 0.5) * (in / out) - 0.5, 0);  i0 = floor(src);  i1 = min(i0 + 1, in - 1)
       l = src - i0;  v = (1-ly) * ((1-lx) * p00 + lx * p01) + ly * ((1-lx) * p10 + lx * p11)
2. scale by 1/255, normalize ``(v - mean[c]) / std[c]`` (CLIP defaults);
3. patchify: patches row-major over the (out_h/14, out_w/14) grid, each flattened in
   (channel, row, col) order; stored as bf16.

One kernel, ``image_preprocess_columns_kernel``: the grid is (XBLOCK-column blocks, patch row
or a part of it, image) and the lanes of a warp take consecutive output columns, so a
warp-wide gather of source pixels reads neighbouring bytes. The images may be strided in any
dimension. out_h and out_w must be multiples of the patch size. The bundle holds it for
16-byte aligned images and outputs and, as ``image_preprocess_columns_generic``, for any
address.

Specification: docs/kernels/image.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
INV_255 = 1.0 / 255.0
#: the K3 vision tower's patch size (the contract: the only one the wrapper accepts)
PATCH = 14


@kiln.jit
def _source(d, scale):
    """The first source index and the weight of the second of output index d (int32 tile):
    half-pixel centres, ``src = max((d + 0.5) * scale - 0.5, 0)``, floor and fraction."""
    src = kl.maximum((d.to(kl.float32) + 0.5) * scale - 0.5, 0.0)
    i0 = src.to(kl.int32)
    return i0, src - i0.to(kl.float32)


@kiln.jit(num_warps=1)
def image_preprocess_columns_kernel(img_ptr, out_ptr, H, W, out_w, s_n, s_h, s_w, s_c,
                                    per_image4, row4, scale_h, scale_w, mean0, mean1, mean2,
                                    rstd0, rstd1, rstd2, PATCH: kl.constexpr,
                                    XBLOCK: kl.constexpr, ROWS: kl.constexpr):
    # The lanes of a warp take consecutive output columns x, so each of its byte loads reads
    # neighbouring source pixels of one or two source rows (a few 128-byte lines a warp-wide
    # load). A thread holds runs of 16 elements (the layout's run: the uint8 loads and the
    # 2-byte stores are gathers): 16 / ROWS columns x ROWS rows, the three channels one after
    # another. A patch row is 16 rows (14 stored) in 16 / ROWS programs along axis 1. A
    # thread's column math is done once a column and its row math once a row (every register
    # of the run with that column or row computes the same values); the stores are 2-byte
    # gathers at fixed offsets from one address a column.
    GROUPS = 16 // ROWS
    COLS = 16 // ROWS
    i = kl.arange(0, XBLOCK // COLS * 16)
    j = i % ROWS
    x = kl.program_id(0) * XBLOCK + (i // 16) * COLS + (i % 16) // (16 // COLS)
    pr = kl.program_id(1) // GROUPS
    r = (kl.program_id(1) % GROUPS) * ROWS + j
    mask = (x < out_w) & (r < PATCH)
    y = pr * PATCH + r
    y0, ly = _source(y, scale_h)
    x0, lx = _source(x, scale_w)
    # The loads are not masked: the rows past the patch row's 14 and the columns past
    # out_w (whose stores are masked) read clamped, in-bounds pixels (a no-op elsewhere: y0
    # <= H - 1 and x0 <= W - 1 for every output pixel), so the loads need no predicates or
    # branches.
    y0 = kl.minimum(y0, H - 1)
    x0 = kl.minimum(x0, W - 1)
    y1 = kl.where(y0 < H - 1, y0 + 1, y0)
    x1 = kl.where(x0 < W - 1, x0 + 1, x0)
    hx = 1.0 - lx
    hy = 1.0 - ly
    base = img_ptr + kl.program_id(2) * s_n
    r0 = base + y0 * s_h
    r1 = base + y1 * s_h
    c0 = x0 * s_w
    c1 = x1 * s_w
    out = (out_ptr + kl.program_id(2) * (per_image4 * 4) + pr * (row4 * 4)
           + (x // PATCH) * (3 * PATCH * PATCH) + r * PATCH + x % PATCH)
    for c in kl.static_range(3):
        p00 = kl.load(r0 + c0 + c * s_c).to(kl.float32)
        p01 = kl.load(r0 + c1 + c * s_c).to(kl.float32)
        p10 = kl.load(r1 + c0 + c * s_c).to(kl.float32)
        p11 = kl.load(r1 + c1 + c * s_c).to(kl.float32)
        v = hy * (hx * p00 + lx * p01) + ly * (hx * p10 + lx * p11)
        if c == 0:
            mean, rstd = mean0, rstd0
        elif c == 1:
            mean, rstd = mean1, rstd1
        else:
            mean, rstd = mean2, rstd2
        kl.store(out + c * (PATCH * PATCH), ((v * INV_255 - mean) * rstd).to(kl.bfloat16),
                 mask=mask)


@dataclasses.dataclass(frozen=True)
class Settings:
    """image_preprocess's tuning; measured in bench/results/kimi_k3/image.md."""

    xblock: int = 32  # output columns a program: one column a lane of one warp
    rows: int = 16  # rows a thread (16: a whole patch row; 8 and 4, two or four programs, slower)
    num_warps: int = 1  # wider programs (64 columns on 2 warps, 128 on 4) no faster
    maxnreg: Optional[int] = None  # ptxas's 208 registers; caps of 168, 152, 128 slower


SETTINGS = Settings()

_SIG = {"img_ptr": "*u8", "out_ptr": "*bf16", "H": "i32", "W": "i32", "out_w": "i32",
        "s_n": "i32", "s_h": "i32", "s_w": "i32", "s_c": "i32", "per_image4": "i32",
        "row4": "i32", "scale_h": "f32", "scale_w": "f32", "mean0": "f32", "mean1": "f32",
        "mean2": "f32", "rstd0": "f32", "rstd1": "f32", "rstd2": "f32"}


def _constexprs(settings: Settings) -> dict:
    return {"PATCH": PATCH, "XBLOCK": settings.xblock, "ROWS": settings.rows}


def select_launch(n: int, ph: int, out_w: int, settings: Settings) -> tuple:
    """The launch of ``image_preprocess`` for n images of ph patch rows and out_w columns:
    (kernel, bundle name, grid, constexprs, num_warps, maxnreg, cluster)."""
    grid = ((out_w + settings.xblock - 1) // settings.xblock, ph * (16 // settings.rows), n)
    return (image_preprocess_columns_kernel, "image_preprocess_columns", grid,
            _constexprs(settings), settings.num_warps, settings.maxnreg, None)


#: the bundle's kernel for images and outputs at any address (a crop of a larger image)
GENERIC = "image_preprocess_columns_generic"

AOT_SPECIALIZATIONS = [
    # Contiguous HWC images (s_w = 3, s_c = 1: no divisibility on those), 16-byte aligned
    # images and outputs; the generic one at any address.
    Spec(image_preprocess_columns_kernel, name=name, signature=_SIG,
         constexprs=_constexprs(SETTINGS), divisibility=div, num_warps=SETTINGS.num_warps,
         maxnreg=SETTINGS.maxnreg)
    for name, div in (("image_preprocess_columns", ["img_ptr", "out_ptr"]), (GENERIC, []))
]


def image_preprocess(images: Any, out_h: int, out_w: int,
                     mean: Sequence[float] = CLIP_MEAN, std: Sequence[float] = CLIP_STD,
                     patch: int = PATCH, out: Optional[Any] = None, *,
                     settings: Settings = SETTINGS) -> Any:
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
    # (256 elements of slack past the last output: the masked lanes' offsets are formed,
    # never dereferenced)
    L.check_int32_extent(op, "the number of output elements", total + 256)
    st = L.strides(images)
    if any(s < 0 for s in st):
        raise ValueError(f"{op}: negative strides are not supported, got {st}")
    if n > 0:
        L.check_int32_extent(op, "the largest image offset",
                             sum((d - 1) * s for d, s in zip(L.shape(images), st)) + 1)
    if n > 65535:
        raise ValueError(f"{op}: at most 65535 images per launch (the grid's z), got {n}")
    row_elems = pw * 3 * patch * patch
    coords = (float(h) / float(out_h), float(w) / float(out_w),
              float(mean[0]), float(mean[1]), float(mean[2]),
              1.0 / float(std[0]), 1.0 / float(std[1]), 1.0 / float(std[2]))
    kernel, name, grid, constexprs, num_warps, maxnreg, _ = select_launch(n, ph, out_w, settings)
    launch = L.Launch(kernel, name, grid,
                      (images, out, h, w, out_w, st[0], st[1], st[2], st[3], per_image // 4,
                       row_elems // 4) + coords, constexprs, num_warps, maxnreg)
    L.launch(*launch, generic=launch._replace(name=GENERIC))
    return out
