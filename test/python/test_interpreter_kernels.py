"""Every remaining kernels_dsl kernel in the CPU interpreter against a numpy reference written
from the specification in docs/kernels/ (not from the kernel): pack_topk_ids
(moe_routing.md), concat_mla_k / concat_mla_absorb_q (mla_cache.md), the bf16 MLA output gate
(mla_output_gate.md), the bf16 MLA KV scatter (mla_cache.md), image_preprocess (image.md) and
the row-wise rmsnorm / softmax of kernels_dsl/common/norm.py. Each kernel is launched as its
wrapper launches it (grid, argument order, constexprs); outputs are poisoned first (NaN /
sentinels) so that every element the kernel must write is checked, and memory it must not
touch (strided gaps, skipped cache rows, tails past numel) is checked unchanged. No GPU, no
torch."""

import ml_dtypes
import numpy as np
import pytest

import kiln
from kernels_dsl.common import norm
from kernels_dsl.kimi_k3 import concat_mla, image, mla_kv, mla_output_gate, pack_topk_ids
from kiln.testing import assert_bf16_close, interpret

BF16 = ml_dtypes.bfloat16
F32 = np.float32
BF16_NAN = np.uint16(0x7FC1)  # a NaN pattern no kernel here produces


def bits16(a):
    return np.ascontiguousarray(a).view(np.uint16)


def nan_bf16(shape):
    return np.full(shape, BF16_NAN, dtype=np.uint16).view(BF16)


def rand_bf16(rng, shape, scale=2.0):
    return (rng.standard_normal(shape) * scale).astype(F32).astype(BF16)


def elem_strides(a):
    return [s // a.itemsize for s in a.strides]


# ---------------------------------------------------------------------------
# pack_topk_ids (docs/kernels/moe_routing.md): out = (id << 16) | (bits(bf16_rne(w)) & 0xFFFF)
# ---------------------------------------------------------------------------

def ref_bf16_rne_bits(w):
    """Round-to-nearest-even fp32 -> bf16 on the bit pattern (finite inputs)."""
    u = np.ascontiguousarray(w, dtype=F32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) & 0xFFFF


def ref_pack(ids, w):
    return ((ids.astype(np.uint32) << 16) | ref_bf16_rne_bits(w)).view(np.int32)


@pytest.mark.parametrize("t,k", [(7, 16), (97, 16), (103, 10), (1, 3)])
def test_pack_topk_ids(t, k):
    rng = np.random.default_rng(1000 * t + k)
    numel = t * k
    ids = rng.integers(0, 32768, size=(t, k), dtype=np.int32)
    ids.flat[:2] = [0, 32767]
    w = (rng.standard_normal((t, k)) * rng.choice([1e-3, 1.0, 1e3], size=(t, k))).astype(F32)
    # rounding ties (low half exactly 0x8000, even and odd bf16), negatives, zeros, tiny
    # subnormals, the largest finite fp32 (rounds to bf16 inf) and infinities
    specials = np.array([0x3F808000, 0x3F818000, 0xBF808000, 0x00008000, 0x00018000,
                         0x80000000, 0x00000001, 0x7F7FFFFF, 0x7F800000, 0xFF800000],
                        dtype=np.uint32).view(F32)
    n_sp = min(numel, specials.size)
    w.flat[numel - n_sp:] = specials[:n_sp]
    pad = 37
    out = np.full(numel + pad, 0x7EADBEEF, dtype=np.int32)  # the tail must stay untouched
    cx, _ = pack_topk_ids.launch_config(numel)
    interpret(pack_topk_ids.pack_topk_ids_kernel, (kiln.cdiv(numel, cx["BLOCK"]),), ids, w, out,
              numel, **cx)
    expected = ref_pack(ids, w).reshape(-1)
    np.testing.assert_array_equal(out[:numel], expected)
    assert np.all(out[numel:] == 0x7EADBEEF)
    # the special weights, spelled out: ties to even, inf for fp32 max
    if numel >= specials.size:
        low = (out[numel - specials.size:numel].view(np.uint32) & 0xFFFF).tolist()
        assert low == [0x3F80, 0x3F82, 0xBF80, 0x0000, 0x0002, 0x8000, 0x0000, 0x7F80,
                       0x7F80, 0xFF80]


# ---------------------------------------------------------------------------
# concat_mla_k / concat_mla_absorb_q (docs/kernels/mla_cache.md): torch.cat, bit-exact
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("t,h", [(5, 3), (9, 4)])
def test_concat_mla_k(t, h):
    rng = np.random.default_rng(10 * t + h)
    nope_dim, rope_dim = concat_mla.NOPE, concat_mla.ROPE
    # k_nope: a slice of a [T, H, 128 + 128] projection; k_rope: [T, 1, 64] slice of a wider
    # row; k: a [T, H, 192] view into a [T, H + 1, 200] buffer (every stride non-trivial)
    proj = rand_bf16(rng, (t, h, 256))
    k_nope = proj[:, :, :nope_dim]
    rope_buf = rand_bf16(rng, (t, 1, 96))
    k_rope = rope_buf[:, :, 16:16 + rope_dim]
    k_buf = nan_bf16((t, h + 1, 200))
    k = k_buf[:, :h, :nope_dim + rope_dim]
    ks, ns, rs = elem_strides(k), elem_strides(k_nope), elem_strides(k_rope)
    rows = t * h
    cx, _ = concat_mla.k_launch_config(1, 1)  # the PDL launch
    interpret(concat_mla.concat_mla_k_kernel, (kiln.cdiv(rows, cx["ROWS"]),), k, k_nope, k_rope,
              rows, h, ks[0], ks[1], ns[0], ns[1], rs[0], **cx)
    expected = np.concatenate([k_nope, np.broadcast_to(k_rope, (t, h, rope_dim))], axis=-1)
    np.testing.assert_array_equal(bits16(k), bits16(expected))
    # nothing outside the view was written
    assert np.all(bits16(k_buf[:, h, :]) == BF16_NAN)
    assert np.all(bits16(k_buf[:, :, nope_dim + rope_dim:]) == BF16_NAN)


@pytest.mark.parametrize("d0,d1,na,nb", [(3, 5, 512, 64), (4, 3, 100, 20)])
def test_concat_mla_absorb_q(d0, d1, na, nb):
    rng = np.random.default_rng(d0 * d1 + na + nb)
    # a strided in both leading dims (a slice of [d0, d1 + 2, na + 24]); b a plain array;
    # out a view with a padded row
    a = rand_bf16(rng, (d0, d1 + 2, na + 24))[:, 1:1 + d1, 8:8 + na]
    b = rand_bf16(rng, (d0, d1, nb))
    out_buf = nan_bf16((d0, d1, na + nb + 8))
    out = out_buf[:, :, :na + nb]
    sa, sb, so = elem_strides(a), elem_strides(b), elem_strides(out)
    cx, _ = concat_mla.q_launch_config(na, nb)  # the wrapper's configuration
    rows = d0 * d1
    interpret(concat_mla.concat_mla_absorb_q_kernel, (kiln.cdiv(rows, cx["ROWS"]),), a, b, out,
              rows, d1, sa[0], sa[1], sb[0], sb[1], so[0], so[1], **cx)
    np.testing.assert_array_equal(bits16(out), bits16(np.concatenate([a, b], axis=-1)))
    assert np.all(bits16(out_buf[:, :, na + nb:]) == BF16_NAN)


@pytest.mark.parametrize("d0,d1,na,nb", [(3, 5, 1, 300), (7, 5, 512, 64), (2, 3, 100, 20),
                                         (1, 1, 129, 1)])
def test_concat_mla_absorb_q_generic_launch(monkeypatch, d0, d1, na, nb):
    """The wrapper's generic launch (``concat_mla_absorb_q_generic_kernel``, the bundle's for
    every width: A and B at run time, each part in tiles of BLOCK columns, partial ones past
    128; 15 and 35 rows: partial programs) on the strides of test_concat_mla_absorb_q."""
    from test_attn_res import HostTensor

    def launch(kernel, name, grid, args, constexprs, num_warps, generic=None):
        kernel, name, grid, args, constexprs = generic[:5]
        assert name == concat_mla.Q_GENERIC
        interpret(kernel, tuple(grid), *[x.a if isinstance(x, HostTensor) else x for x in args],
                  **constexprs)

    monkeypatch.setattr(concat_mla.L, "launch", launch)
    rng = np.random.default_rng(d0 * d1 + na + nb)
    a = rand_bf16(rng, (d0, d1 + 2, na + 24))[:, 1:1 + d1, 8:8 + na]
    b = rand_bf16(rng, (d0, d1, nb))
    out_buf = nan_bf16((d0, d1, na + nb + 8))
    out = out_buf[:, :, :na + nb]
    concat_mla.concat_mla_absorb_q(HostTensor(a), HostTensor(b), HostTensor(out))
    np.testing.assert_array_equal(bits16(out), bits16(np.concatenate([a, b], axis=-1)))
    assert np.all(bits16(out_buf[:, :, na + nb:]) == BF16_NAN)


# ---------------------------------------------------------------------------
# MLA output gate, bf16 (docs/kernels/mla_output_gate.md): bf16(f32(x) * f32(bf16(sig(g))))
# ---------------------------------------------------------------------------

def test_mla_output_gate_bf16():
    rng = np.random.default_rng(43)
    n = 3000  # % 8 == 0; two programs of BLOCK = 2048, the second masked
    x = rand_bf16(rng, n, 3.0)
    g = rand_bf16(rng, n, 4.0)
    g[:8] = np.array([0.0, -0.0, 30.0, -30.0, 100.0, -100.0, np.inf, -np.inf]).astype(BF16)
    x[8:12] = np.array([0.0, -1.0, 3e38, -3e38]).astype(BF16)
    out_buf = nan_bf16(n + 16)
    cx, _ = mla_output_gate.launch_config()
    interpret(mla_output_gate.mla_output_gate_kernel, (kiln.cdiv(n, cx["BLOCK"]),), x, g,
              out_buf, n, **cx)
    out = out_buf[:n]
    # sigmoid_f32 = 1 / (1 + expf(-g)) in fp32 (IEEE division), rounded to bf16
    g32 = g.astype(F32)
    with np.errstate(over="ignore"):
        sig = (F32(1) / (F32(1) + np.exp(-g32))).astype(BF16).astype(F32)
    expected = (x.astype(F32) * sig).astype(BF16)
    # the interpreter computes expf and the division exactly as the formula: bit-exact
    np.testing.assert_array_equal(bits16(out), bits16(expected))
    assert np.all(bits16(out_buf[n:]) == BF16_NAN)
    # sanity check on the formula: within 2 bf16 ulp of a float64 x * sigmoid(g) (the double
    # rounding of the gate's formula costs up to ~1.5 ulp against the exact product)
    sig64 = 1.0 / (1.0 + np.exp(-g32.astype(np.float64)))
    fin = np.abs(x.astype(F32)) < 1e38
    assert_bf16_close(out[fin], x.astype(np.float64)[fin] * sig64[fin], ulps=2.0)


# ---------------------------------------------------------------------------
# MLA KV scatter, bf16 layout (docs/kernels/mla_cache.md): cache[loc[t]] = cat(kv_c, k_pe)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("evict,cache_mod,programs", [
    ("", "", 0), ("evict_first", ".cs", 32), ("evict_first", ".cs", 0)])
@pytest.mark.parametrize("t,slots,row_pad", [(21, 40, 0), (6, 9, 64)])
def test_mla_kv_scatter_bf16(t, slots, row_pad, evict, cache_mod, programs):
    """LOAD_EVICT, STORE_CACHE and PROGRAMS (cache hints, programs an SM): the same bits."""
    rng = np.random.default_rng(t * slots + row_pad)
    kv_dim, pe_dim = mla_kv.KV_LORA, mla_kv.ROPE
    # kv_c and k_pe: slices of one [T, 576 + 32] projection row (row stride 608)
    proj = rand_bf16(rng, (t, kv_dim + pe_dim + 32))
    kv_c, k_pe = proj[:, :kv_dim], proj[:, kv_dim:kv_dim + pe_dim]
    loc = rng.permutation(slots)[:t].astype(np.int64)
    loc[[0, t - 1]] = -1           # padded slots
    loc[t // 2] = -5
    loc[1] = slots + 3             # out of range: also skipped (the kernel never writes there)
    cache_buf = nan_bf16((slots, kv_dim + pe_dim + row_pad))
    cache = cache_buf[:, :kv_dim + pe_dim]
    rows = mla_kv.SETTINGS.rows
    interpret(mla_kv.mla_kv_scatter_bf16_kernel, (kiln.cdiv(t, rows),), kv_c, k_pe, loc, cache,
              t, slots, proj.shape[1], proj.shape[1], cache_buf.shape[1], slots, 0, ROWS=rows,
              KV_DIM=kv_dim, PE_DIM=pe_dim, LOAD_EVICT=evict, STORE_CACHE=cache_mod,
              PROGRAMS=programs)
    expected = bits16(nan_bf16(cache_buf.shape))
    for i in range(t):
        if 0 <= loc[i] < slots:
            expected[loc[i], :kv_dim + pe_dim] = bits16(np.concatenate([kv_c[i], k_pe[i]]))
    assert int(((loc >= 0) & (loc < slots)).sum()) == t - 4
    np.testing.assert_array_equal(bits16(cache_buf), expected)


# ---------------------------------------------------------------------------
# image_preprocess (docs/kernels/image.md): bilinear (half-pixel, no antialias) -> /255 ->
# patchify (patches row-major, each in (c, row, col) order) -> bf16
# ---------------------------------------------------------------------------

def ref_bilinear(img, out_h, out_w):
    """img float64 [N, H, W, C] -> [N, out_h, out_w, C], torch's align_corners=False formula
    on float32 images: the scale in / out is an fp32 number (as torch's
    area_pixel_compute_scale computes it for float32), the rest in float64."""
    _, h, w, _ = img.shape

    def axis(n_in, n_out):
        scale = float(F32(n_in) / F32(n_out))
        src = np.maximum((np.arange(n_out) + 0.5) * scale - 0.5, 0.0)
        i0 = np.floor(src).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    y0, y1, ly = axis(h, out_h)
    x0, x1, lx = axis(w, out_w)
    ly, lx = ly[None, :, None, None], lx[None, None, :, None]
    p00, p01 = img[:, y0][:, :, x0], img[:, y0][:, :, x1]
    p10, p11 = img[:, y1][:, :, x0], img[:, y1][:, :, x1]
    return (1 - ly) * ((1 - lx) * p00 + lx * p01) + ly * ((1 - lx) * p10 + lx * p11)


def ref_image_preprocess(images, out_h, out_w, mean, std, patch=14):
    v = ref_bilinear(images.astype(np.float64), out_h, out_w) / 255.0
    v = (v - np.asarray(mean, np.float64)) / np.asarray(std, np.float64)
    n, ph, pw = images.shape[0], out_h // patch, out_w // patch
    v = v.reshape(n, ph, patch, pw, patch, 3)          # n, py, r, px, c', ch
    v = v.transpose(0, 1, 3, 5, 2, 4)                   # n, py, px, ch, r, c'
    return v.reshape(n, ph * pw, 3 * patch * patch)


@pytest.mark.parametrize("n,h,w,out_h,out_w,strided",
                         [(1, 28, 42, 28, 28, False), (2, 30, 17, 28, 42, True),
                          (1, 13, 20, 28, 56, True)])
def test_image_preprocess(n, h, w, out_h, out_w, strided):
    rng = np.random.default_rng(h * w + n)
    if strided:  # stored NCHW, passed as the [N, H, W, 3] transposed view
        images = rng.integers(0, 256, size=(n, 3, h, w), dtype=np.uint8).transpose(0, 2, 3, 1)
    else:
        images = rng.integers(0, 256, size=(n, h, w, 3), dtype=np.uint8)
    images[0, 0, :, :] = 255  # saturated and black edges
    images[0, -1, :, :] = 0
    patch = image.PATCH
    ph, pw = out_h // patch, out_w // patch
    per_image = ph * pw * 3 * patch * patch
    out = nan_bf16((n, ph * pw, 3 * patch * patch))
    mean, std = image.CLIP_MEAN, image.CLIP_STD
    st = elem_strides(images)
    # the wrapper's launch and arguments (fp32 scalars: in / out ratios and 1 / std)
    row_elems = pw * 3 * patch * patch
    kernel, _, grid, constexprs, _, _, _ = image.select_launch(n, ph, out_w, image.SETTINGS)
    interpret(kernel, grid, images, out, h, w, out_w, st[0], st[1], st[2], st[3],
              per_image // 4, row_elems // 4, float(h) / out_h, float(w) / out_w,
              *[float(m) for m in mean], *[1.0 / float(s) for s in std], **constexprs)
    expected = ref_image_preprocess(images, out_h, out_w, mean, std, patch)
    assert not np.any(np.isnan(out.astype(F32)))
    assert_bf16_close(out, expected, ulps=1.0)


def _image_inputs(n, h, w, strided):
    rng = np.random.default_rng(h * w + n)
    if strided:  # stored NCHW, passed as the [N, H, W, 3] transposed view
        images = rng.integers(0, 256, size=(n, 3, h, w), dtype=np.uint8).transpose(0, 2, 3, 1)
    else:
        images = rng.integers(0, 256, size=(n, h, w, 3), dtype=np.uint8)
    images[0, 0, :, :] = 255
    images[0, -1, :, :] = 0
    return images


@pytest.mark.parametrize("rows,xblock", [(8, 64), (4, 128), (4, 32), (16, 64)])
@pytest.mark.parametrize("n,h,w,out_h,out_w,strided",
                         [(1, 28, 42, 28, 28, False), (2, 30, 17, 28, 42, True),
                          (1, 13, 20, 28, 70, False), (1, 50, 90, 42, 28, False),
                          (1, 1, 1, 14, 14, False)])
def test_image_preprocess_tiles_same_bits(n, h, w, out_h, out_w, strided, rows, xblock):
    """Other tiles of the kernel (rows a thread, columns a program): the same bits as the
    shipped one, over ragged last column blocks (out_w not a multiple of XBLOCK), up- and
    downscales and strided images."""
    import dataclasses

    images = _image_inputs(n, h, w, strided)
    patch = image.PATCH
    ph, pw = out_h // patch, out_w // patch
    per_image = ph * pw * 3 * patch * patch
    row_elems = pw * 3 * patch * patch
    st = elem_strides(images)
    coords = (float(h) / out_h, float(w) / out_w, *[float(m) for m in image.CLIP_MEAN],
              *[1.0 / float(s) for s in image.CLIP_STD])
    outs = []
    for settings in (image.SETTINGS, dataclasses.replace(image.SETTINGS, rows=rows,
                                                          xblock=xblock)):
        kernel, _, grid, constexprs, _, _, _ = image.select_launch(n, ph, out_w, settings)
        out = nan_bf16((n, ph * pw, 3 * patch * patch))
        interpret(kernel, grid, images, out, h, w, out_w, st[0], st[1], st[2], st[3],
                  per_image // 4, row_elems // 4, *coords, **constexprs)
        outs.append(out)
    ref, out = outs
    assert not np.any(np.isnan(ref.astype(F32)))
    np.testing.assert_array_equal(bits16(out), bits16(ref))


# ---------------------------------------------------------------------------
# common/norm.py: rmsnorm y = x * rsqrt(mean(x^2) + eps) * w; softmax over the row
# ---------------------------------------------------------------------------

def _rows(rng, t, d, pad):
    buf = rand_bf16(rng, (t, d + pad), 2.0)
    return buf[:, :d]


@pytest.mark.parametrize("d", [100, 64])
def test_rmsnorm(d):
    rng = np.random.default_rng(d)
    t, eps = 5, 1e-6
    x = _rows(rng, t, d, 28)            # row stride d + 28
    x[1] = 0                            # an all-zero row: y = 0
    x[2] *= 1e15                       # large rows (sum of squares ~1e32, still fp32)
    w = rand_bf16(rng, d, 1.0)
    out_buf = nan_bf16((t, d + 4))      # row stride d + 4
    out = out_buf[:, :d]
    interpret(norm.rmsnorm_kernel, (t,), x, w, out, d, d + 28, d + 4, eps,
              BLOCK=norm._next_pow2(d), X_EVICT=norm.SETTINGS.rmsnorm_x_evict)
    x64 = x.astype(np.float64)
    expected = x64 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + eps) \
        * w.astype(np.float64)
    assert_bf16_close(out, expected, ulps=1.0)
    assert np.all(bits16(out_buf[:, d:]) == BF16_NAN)


@pytest.mark.parametrize("d", [100, 64])
def test_softmax(d):
    rng = np.random.default_rng(d + 1)
    t = 5
    x = _rows(rng, t, d, 12)
    x[1] = 0.5                          # uniform row: 1 / d
    x[2] += BF16(1000.0)                # large values: max subtraction needed
    x[3, ::3] = -np.inf                 # -inf entries give exact zeros
    out_buf = nan_bf16((t, d + 8))
    out = out_buf[:, :d]
    interpret(norm.softmax_kernel, (t,), x, out, d, d + 12, d + 8, BLOCK=norm._next_pow2(d))
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    assert_bf16_close(out, expected, ulps=1.0)
    assert np.all(out[3, ::3].astype(F32) == 0)
    assert np.all(bits16(out_buf[:, d:]) == BF16_NAN)
