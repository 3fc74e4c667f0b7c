"""image_preprocess on the GPU against docs/kernels/image.md: torch interpolate (bilinear,
align_corners=False, no antialias) on float32 NCHW, /255, (x - mean) / std, patchify
[N, (H/14)*(W/14), 3*14*14] in (channel, row, col) order; tolerance: the bf16 rounding of the
fp32 result (one bf16 ulp, plus a small absolute floor for values that cancel to ~0)."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

from kernels_dsl.kimi_k3 import image as mod  # noqa: E402

MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)


def reference(images, out_h, out_w, mean=MEAN, std=STD, patch=14):
    n = images.shape[0]
    x = images.permute(0, 3, 1, 2).float().contiguous()
    x = F.interpolate(x, size=(out_h, out_w), mode="bilinear", align_corners=False,
                      antialias=False)
    x = x / 255.0
    m = torch.tensor(mean, device=x.device).view(1, 3, 1, 1)
    s = torch.tensor(std, device=x.device).view(1, 3, 1, 1)
    x = (x - m) / s
    ph, pw = out_h // patch, out_w // patch
    x = x.reshape(n, 3, ph, patch, pw, patch).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(n, ph * pw, 3 * patch * patch)


def check(out, ref, in_size=1, std=STD):
    """bf16 rounding of the fp32 result (rtol), plus, near zero, what one fp32 ulp of the
    source coordinate moves the result: the coordinate (up to `in_size` pixels) may round
    differently than torch's (fused multiply-add or not), and one pixel steps the
    normalized value by at most 1 / min(std)."""
    assert out.dtype == torch.bfloat16 and out.shape == ref.shape
    assert not torch.isnan(out).any(), "unwritten (NaN-poisoned) elements"
    coord_ulp = 2.0**-23 * max(in_size, 1)
    torch.testing.assert_close(out.float(), ref, rtol=2.0**-7,
                               atol=2e-5 + coord_ulp / min(std))


def random_images(n, h, w):
    return torch.randint(0, 256, (n, h, w, 3), device="cuda", dtype=torch.uint8)


def run(images, out_h, out_w, **kw):
    ph, pw = out_h // 14, out_w // 14
    out = torch.full((images.shape[0], ph * pw, 588), float("nan"), device="cuda",
                     dtype=torch.bfloat16)
    mod.image_preprocess(images, out_h, out_w, out=out, **kw)
    torch.cuda.synchronize()
    return out


@pytest.mark.parametrize("n,h,w,out_h,out_w", [
    (1, 448, 448, 448, 448),    # identity resize
    (2, 480, 640, 448, 602),    # downscale, non-square
    (1, 100, 77, 224, 336),     # upscale
    (3, 1080, 1920, 392, 700),  # large downscale
    (1, 1, 1, 14, 14),          # single pixel
    (1, 14, 28, 28, 14),        # mixed up/down
])
def test_matches_reference(launch_mode, n, h, w, out_h, out_w):
    """JIT-compiled and through the bundle (its kernel's parameters in the kernel's order:
    the bundle once refused every call, 'out_w expects i32, got float')."""
    images = random_images(n, h, w)
    check(run(images, out_h, out_w), reference(images, out_h, out_w), max(h, w))


@pytest.mark.parametrize("rows,xblock,warps", [(4, 32, 1), (4, 64, 1), (16, 64, 2),
                                              (8, 64, 1)])
@pytest.mark.parametrize("n,h,w,out_h,out_w,crop", [(2, 480, 640, 448, 602, False),
                                                    (1, 100, 77, 224, 336, False),
                                                    (3, 1080, 1920, 392, 700, False),
                                                    (2, 240, 400, 224, 224, True)])
def test_tiles_same_bits(n, h, w, out_h, out_w, crop, rows, xblock, warps):
    """Other tiles (rows a thread, columns a program, warps) give the shipped tile's bits."""
    images = random_images(n, h + 20, w + 30)[:, 10:10 + h, 5:5 + w] if crop else \
        random_images(n, h, w)
    expected = run(images, out_h, out_w)
    out = run(images, out_h, out_w, settings=dataclasses.replace(
        mod.SETTINGS, rows=rows, xblock=xblock, num_warps=warps))
    assert torch.equal(out.view(torch.int16), expected.view(torch.int16))
    check(out, reference(images, out_h, out_w), max(h, w))


def test_strided_images_and_custom_normalization(launch_mode):
    full = random_images(2, 300, 500)
    images = full[:, 10:250, 20:420]  # a crop: strided rows and images
    mean, std = (0.5, 0.25, 0.125), (0.5, 2.0, 0.3)
    out = run(images, 224, 224, mean=mean, std=std)
    check(out, reference(images, 224, 224, mean=mean, std=std), 400, std)


@pytest.mark.parametrize("out_offset", [0, 1])
def test_unaligned_crops_and_outputs(launch_mode, out_offset):
    """A crop starting at a byte offset that is not a multiple of 16 and (out_offset 1) an
    output one element into a larger buffer: the bundle's generic kernel (no alignment
    assumed); the buffer around the output untouched."""
    full = random_images(2, 301, 503)
    images = full[:, 7:257, 3:403]
    assert images.data_ptr() % 16
    out_h, out_w = 224, 336
    size = 2 * (out_h // 14) * (out_w // 14) * 588
    buf = torch.full((size + 8,), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = buf[out_offset:out_offset + size].view(2, -1, 588)
    assert mod.image_preprocess(images, out_h, out_w, out=out) is out
    torch.cuda.synchronize()
    check(out, reference(images, out_h, out_w), 400)
    assert bool(torch.isnan(buf[:out_offset]).all())
    assert bool(torch.isnan(buf[out_offset + size:]).all())


def test_extreme_pixels():
    images = torch.zeros(1, 64, 64, 3, device="cuda", dtype=torch.uint8)
    images[:, ::2] = 255
    check(run(images, 28, 98), reference(images, 28, 98))


def test_empty_batch():
    images = torch.empty(0, 32, 32, 3, device="cuda", dtype=torch.uint8)
    assert mod.image_preprocess(images, 28, 28).shape == (0, 4, 588)


@pytest.mark.parametrize("out_h,out_w", [(15, 14), (14, 20), (0, 14)])
def test_sizes_not_multiple_of_14_raise(out_h, out_w):
    with pytest.raises(ValueError, match="multiples of the patch size 14"):
        mod.image_preprocess(random_images(1, 32, 32), out_h, out_w)


def test_bad_images_raise():
    with pytest.raises(TypeError):
        mod.image_preprocess(random_images(1, 32, 32).float(), 28, 28)
    with pytest.raises(ValueError):
        mod.image_preprocess(torch.zeros(1, 32, 32, 4, device="cuda", dtype=torch.uint8),
                             28, 28)
    with pytest.raises(ValueError):
        mod.image_preprocess(random_images(1, 32, 32), 28, 28, std=(1.0, 0.0, 1.0))
    torch.cuda.synchronize()
