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
pixels (uint8 loads through tiles of pointers). With COLUMNS the grid is (COL_XBLOCK-column
blocks, patch row (or a part of it), image) and the lanes of a warp take consecutive output
columns, so a warp-wide gather reads neighbouring bytes (same bits). The images may be
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


@kiln.jit
def _source(d, scale):
    """The first source index and the weight of the second of output index d (int32 tile):
    half-pixel centres, ``src = max((d + 0.5) * scale - 0.5, 0)``, floor and fraction."""
    src = kl.maximum((d.to(kl.float32) + 0.5) * scale - 0.5, 0.0)
    i0 = src.to(kl.int32)
    return i0, src - i0.to(kl.float32)


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
    y0, ly = _source(y, scale_h)
    x0, lx = _source(x, scale_w)
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


@kiln.jit(num_warps=1)
def image_preprocess_columns_kernel(img_ptr, out_ptr, H, W, out_w, s_n, s_h, s_w, s_c,
                                    per_image4, row4, scale_h, scale_w, mean0, mean1, mean2,
                                    rstd0, rstd1, rstd2, PATCH: kl.constexpr,
                                    XBLOCK: kl.constexpr, ROWS: kl.constexpr,
                                    CHANNEL_RUN: kl.constexpr):
    # COLUMNS: the lanes of a warp take consecutive output columns x (or runs of them), so
    # each of its byte loads reads neighbouring source pixels of one or two source rows (a
    # few 128-byte lines a warp-wide load, where the element-order kernel above reads about
    # one line a lane). A thread holds runs of 16 elements (the layout's run: the uint8 loads
    # and the 2-byte stores are gathers): CHANNEL_RUN, one column x 4 rows x 4 channels (3
    # used); else 16 / ROWS columns x ROWS rows, the three channels one after another. A
    # patch row is 16 rows (14 stored) in 16 / ROWS programs along axis 1. A thread's column
    # math is done once a column and its row math once a row (every register of the run
    # with that column or row computes the same values); the stores are 2-byte gathers at
    # fixed offsets from one address a column. The same float operations in the same order
    # as above: the same bits.
    kl.static_assert(ROWS == 4 or not CHANNEL_RUN, "CHANNEL_RUN runs are 4 rows x 4 channels")
    GROUPS = 16 // ROWS
    COLS = 1 if CHANNEL_RUN else 16 // ROWS
    i = kl.arange(0, XBLOCK // COLS * 16)
    if CHANNEL_RUN:
        j = (i % 16) // 4
    else:
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
    if CHANNEL_RUN:
        c = i % 4
        # c < 3 is known per register: no predicate (the loads of channel 3 are dropped)
        p00 = kl.load(r0 + c0 + c * s_c, mask=c < 3, other=0).to(kl.float32)
        p01 = kl.load(r0 + c1 + c * s_c, mask=c < 3, other=0).to(kl.float32)
        p10 = kl.load(r1 + c0 + c * s_c, mask=c < 3, other=0).to(kl.float32)
        p11 = kl.load(r1 + c1 + c * s_c, mask=c < 3, other=0).to(kl.float32)
        v = hy * (hx * p00 + lx * p01) + ly * (hx * p10 + lx * p11)
        mean = kl.where(c == 0, mean0, kl.where(c == 1, mean1, mean2))
        rstd = kl.where(c == 0, rstd0, kl.where(c == 1, rstd1, rstd2))
        kl.store(out + c * (PATCH * PATCH), ((v * INV_255 - mean) * rstd).to(kl.bfloat16),
                 mask=mask & (c < 3))
    else:
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


#: BLOCK output elements a program on NUM_WARPS warps, at most MAXNREG registers a thread. The
#: uint8 pixels are gathered (no vectors), so the layout's runs are 8 elements (the bf16
#: stores); at 8 elements a thread ptxas takes 117 registers (sm_90a) and the cap of 80 lets
#: more programs in flight (a few spilled bytes). H200 sweep (bench/kimi_k3/run.py --sweep
#: --only image): 256 / 1 warp / 80 registers 9.65, 21.7 and 40.8 us for the three benchmark
#: shapes (1x1080x1920, 8x512x512, 64x224x224) against 11.5, 34.8 and 67.7 us for the former
#: 512 / 1 warp with 16-element runs (228 registers); 1024 / 4 warps uncapped 8.92, 27.9, 55.9.
BLOCK, NUM_WARPS, PATCH = 256, 1, 14
MAXNREG = 80

#: COLUMNS: image_preprocess_columns_kernel (lanes along the output columns: coalesced byte
#: gathers, the coordinate math once a column and once a row) instead of the element-order
#: kernel above; COL_XBLOCK output columns a program on COL_WARPS warps, COL_ROWS rows a
#: thread (16: the whole patch row; 8 or 4: a part, with 16 / COL_ROWS columns a thread),
#: the channels one after another, or with COL_CHANNEL_RUN (COL_ROWS = 4) in the thread's
#: run; at most COL_MAXNREG registers. sm_90a SASS, s_c = 1 (the JIT's specialization):
#: the element-order kernel takes 936 instructions for 8 elements a thread (117 an element;
#: 80 registers, 16 bytes of stack), 32 byte loads each reading about one 128-byte line a
#: lane; COL_ROWS = 16 takes 1384 for 42 (33 an element), 208 registers (168 and 152 fit
#: without spills; 128 spills 256 bytes); COL_ROWS = 4 with COL_CHANNEL_RUN 504 for 12
#: (42), 72 registers; COL_ROWS = 8 and 4 without it 1664 and 1784 for 42 and about 248
#: registers. A warp-wide byte gather then spans 32 x in/out x 3 bytes of one or two source
#: rows (230 bytes at 1080p -> 448x798, 2-3 lines). H200 sweep (``bench/kimi_k3/run.py
#: --sweep --only image``; 1x1080x1920, 8x512x512, 64x224x224): the element-order kernel
#: 9.65, 21.7, 41.0 us; COLUMNS with 16 rows a thread, 32 columns on one warp, uncapped
#: 5.37, 11.48, 19.85 us (1.8-2.1x); 4 rows with CHANNEL_RUN 5.24, 12.34, ~21.5; wider
#: programs (64 / 2 warps, 128 / 4) and register caps (168, 152) no better.
COLUMNS = True
COL_XBLOCK, COL_WARPS, COL_ROWS, COL_CHANNEL_RUN = 32, 1, 16, False
COL_MAXNREG = None

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
    Spec(image_preprocess_columns_kernel, name="image_preprocess_columns",
         signature=dict(_SIG, out_w="i32"),
         constexprs={"PATCH": PATCH, "XBLOCK": COL_XBLOCK, "ROWS": COL_ROWS,
                     "CHANNEL_RUN": COL_CHANNEL_RUN},
         divisibility=["img_ptr", "out_ptr"], num_warps=COL_WARPS, maxnreg=COL_MAXNREG),
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
    coords = (float(h) / float(out_h), float(w) / float(out_w),
              float(mean[0]), float(mean[1]), float(mean[2]),
              1.0 / float(std[0]), 1.0 / float(std[1]), 1.0 / float(std[2]))
    if COLUMNS:
        L.launch(image_preprocess_columns_kernel, "image_preprocess_columns",
                 ((out_w + COL_XBLOCK - 1) // COL_XBLOCK, ph * (16 // COL_ROWS), n),
                 (images, out, h, w, out_w, st[0], st[1], st[2], st[3], per_image // 4,
                  row_elems // 4) + coords,
                 {"PATCH": patch, "XBLOCK": COL_XBLOCK, "ROWS": COL_ROWS,
                  "CHANNEL_RUN": COL_CHANNEL_RUN}, COL_WARPS, COL_MAXNREG)
        return out
    args = (images, out, h, w, st[0], st[1], st[2], st[3], per_image // 4,
            row_elems // 4) + coords
    L.launch(image_preprocess_kernel, "image_preprocess",
             ((row_elems + BLOCK - 1) // BLOCK, ph, n), args, {"PATCH": patch, "BLOCK": BLOCK},
             NUM_WARPS, MAXNREG)
    return out
