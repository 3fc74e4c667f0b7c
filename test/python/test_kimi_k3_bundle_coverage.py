"""The shipped bundle serves every input the Kimi K3 wrappers accept (docs/kernels/README.md,
"JIT and bundle"), checked on the CPU: a bundle with the manifest entries of every
``AOT_SPECIALIZATIONS`` (each compiled to the tile stage for its metadata; the images are
stand-ins) takes every launch, the compiler disabled (``_launch.jit_allowed`` False, as with
``KILN_NO_JIT=1``). Each wrapper runs over a grid of accepted inputs: K3's shapes, other shapes
(topk, E, page sizes, H, D), strides and addresses that the fast specializations do not assume;
each launch must find a specialization (the runtime's own selection, ``Bundle::select``) whose
parameters take the wrapper's arguments (``kiln.host.marshal_args``: count, dtypes, int vs
float, range, alignment), and the grid must pass the launch checks. K3's inputs must take the
fast specializations, the others the wrapper's generic launch, and every generic kernel must be
reached. No GPU, no torch: tensors are stand-ins with ``__cuda_array_interface__``, and a stand-in
``torch`` module allocates them."""

import itertools
import math
import sys
import types

import pytest

pytest.importorskip("kiln._C")

import kiln.aot  # noqa: E402
from kernels_dsl.kimi_k3 import (  # noqa: E402
    _launch,
    allreduce,
    allreduce_fallback,
    attn_res,
    concat_mla,
    gemm_collectives,
    image,
    kda_decode,
    kda_verify,
    kv_indices,
    mla_attention,
    mla_kv,
    mla_output_gate,
    moe_align,
    moe_fused_gate,
    pack_topk_ids,
    quant,
    situ,
    situ_quant,
    tensor_hash,
)
from kiln import _runtime, host  # noqa: E402
from kiln.runtime import Bundle, BundleWriter, KilnError  # noqa: E402

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
FAKE_CUBIN = b"\x7fELF" + bytes(60)
MODULES = (allreduce, allreduce_fallback, attn_res, concat_mla, gemm_collectives, image,
           kv_indices, mla_kv, mla_output_gate, moe_align, moe_fused_gate, pack_topk_ids, quant,
           situ, situ_quant, tensor_hash)
SMS = 132  # an H200

_TYPESTR = {"bfloat16": "<V2", "float32": "<f4", "int32": "<i4", "int64": "<i8",
            "uint8": "|u1", "float8_e4m3fn": "|V1"}
_ITEMSIZE = {"bfloat16": 2, "float32": 4, "int32": 4, "int64": 8, "uint8": 1,
             "float8_e4m3fn": 1}


class Device:
    type, index = "cuda", 0

    def __str__(self):
        return "cuda:0"


class FakeTensor:
    """A stand-in CUDA tensor: shape, strides, dtype (torch's name), the address of its first
    element (``offset`` elements past a 256-byte aligned base), the views the wrappers take."""

    _next = [0x7F0000000000]

    def __init__(self, shape, dtype, strides=None, offset=0, address=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._strides = tuple(strides) if strides else tuple(
            math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        self._offset = offset
        if address is None:
            address = FakeTensor._next[0]
            FakeTensor._next[0] += 1 << 24
        self._address = address
        self.device = Device()

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.data_ptr(), False), "typestr": _TYPESTR[self.dtype],
                "shape": self.shape, "version": 3}

    def data_ptr(self):
        return self._address + self._offset * _ITEMSIZE[self.dtype]

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def storage_offset(self):
        return self._offset

    def numel(self):
        return math.prod(self.shape)

    def element_size(self):
        return _ITEMSIZE[self.dtype]

    def reshape(self, *shape):
        assert shape == (-1,)
        return FakeTensor((self.numel(),), self.dtype, offset=self._offset,
                          address=self._address)

    def view(self, dtype):
        """The same bytes as ``dtype`` (a contiguous last dimension)."""
        ratio = _ITEMSIZE[self.dtype] / _ITEMSIZE[dtype]
        return FakeTensor(self.shape[:-1] + (int(self.shape[-1] * ratio),), dtype,
                          [int(s * ratio) for s in self._strides[:-1]] + [1],
                          int(self._offset * ratio), self._address)

    def t(self):
        """The transpose of a 2-D tensor."""
        return FakeTensor(self.shape[::-1], self.dtype, self._strides[::-1], self._offset,
                          self._address)

    def item(self):
        return 0


def T(shape, dtype="bfloat16", strides=None, offset=0):
    return FakeTensor(shape, dtype, strides, offset)


def _empty(shape, dtype, device=None):
    return FakeTensor(shape if isinstance(shape, tuple) else (shape,), dtype)


#: what the wrappers use of torch: dtypes (by name) and empty()
FAKE_TORCH = types.SimpleNamespace(empty=_empty, **{d: d for d in _TYPESTR})


@pytest.fixture(scope="module")
def shipped():
    """A bundle of every AOT specialization's manifest entry, the images stand-ins."""
    w = BundleWriter("coverage")
    for s in kiln.aot.collect("kernels_dsl.kimi_k3"):
        meta = s.kernel.compile(s.signature, s.constexprs, s.divisibility,
                                num_warps=s.num_warps, name=s.kernel_name, cluster=s.cluster,
                                maxnreg=s.maxnreg, upto="tile").meta
        w.add_kernel(meta, [(a, "cubin", FAKE_CUBIN) for a in s.archs_in(ARCHS)])
    return Bundle.from_bytes(w.serialize(), "coverage")


class Launches:
    """The bundle kernels a wrapper call launched (their manifest names), and the SM count
    the wrappers see."""

    def __init__(self):
        self.names = []
        self.sms = None

    def take(self):
        names, self.names = self.names, []
        return names


@pytest.fixture
def bundle_only(monkeypatch, shipped):
    """Every launch through ``shipped`` with JIT disallowed; a launch is checked (arguments
    and grid) and recorded, nothing reaches a device."""
    launched = Launches()
    monkeypatch.setattr(_launch, "jit_allowed", lambda: False)
    monkeypatch.setattr(_launch, "_bundle", shipped)
    monkeypatch.setattr(_launch, "_families", {})
    monkeypatch.setattr(host.launch, "observer",
                        lambda kernel, grid, values, pointers:
                        launched.names.append(kernel.meta["name"]))
    monkeypatch.setattr(_runtime.Kernel, "launch", lambda self, grid, values, stream: None)
    monkeypatch.setitem(sys.modules, "torch", FAKE_TORCH)
    sms = lambda t: launched.sms  # noqa: E731
    for mod in (_launch, attn_res, tensor_hash):
        monkeypatch.setattr(mod, "num_sms" if mod is _launch else "_num_sms", sms)
    return launched


def run_grid(launched, cases):
    """Runs each (label, call, fast) of ``cases``; each must launch, the fast ones only
    kernels without the ``_generic`` suffix, the others at least one with it. Returns the
    kernels launched."""
    seen = set()
    for label, call, fast in cases:
        try:
            call()
        except (KilnError, TypeError, ValueError) as e:
            pytest.fail(f"{label}: {type(e).__name__}: {e}")
        names = launched.take()
        assert names, f"{label}: nothing launched"
        generic = [n for n in names if n.endswith("_generic")]
        if fast:
            assert not generic, f"{label}: K3's input took the generic kernel {generic}"
        else:
            assert generic, f"{label}: expected the generic kernel, launched {names}"
        seen.update(names)
    return seen


def generic_names(*mods):
    return {s.kernel_name for m in mods for s in m.AOT_SPECIALIZATIONS
            if s.kernel_name.endswith("_generic")}


def test_situ_and_mul(bundle_only):
    def cases():
        for dtype, n, lb, pad, off, out_pad in itertools.product(
                ("bfloat16", "float32"), (1, 300), (25.0, None), (0, 1), (0, 1), (0, 1)):
            vec = 8 if dtype == "bfloat16" else 4
            for d in (vec, 2048, 2048 + vec, 7168):
                x = T((n, 2 * d), dtype, (2 * d + pad * vec, 1), off)
                # padded rows (a multiple of 8 elements, as the wrapper wants, not of 16)
                out = T((n, d), "bfloat16", (-(-d // 8) * 8 + 8, 1)) if out_pad else None
                fast = d % 16 == 0 and not pad and not off and not out_pad
                yield (f"{dtype} n={n} D={d} pad={pad} off={off} out_pad={out_pad}",
                       lambda: situ.situ_and_mul(x, out, linear_beta=lb), fast)

    seen = run_grid(bundle_only, cases())
    assert generic_names(situ) <= seen


def test_situ_and_mul_masked_post_quant(bundle_only):
    def cases():
        for e, t_pad, n, ue8m0, inter, pad in itertools.product(
                (1, 8), (1, 64), (512, 3072), (False, True), (False, True), (0, 1)):
            x_st = 2 * n + 8 * pad
            x = T((e, t_pad, 2 * n), strides=(t_pad * x_st, x_st, 1))
            yield (f"E={e} T_pad={t_pad} N={n} ue8m0={ue8m0} interleaved={inter} pad={pad}",
                   lambda: situ_quant.situ_and_mul_masked_post_quant(
                       x, T((e,), "int32"), scale_ue8m0=ue8m0, interleaved=inter),
                   not pad)

    seen = run_grid(bundle_only, cases())
    assert generic_names(situ_quant) <= seen


def test_image_preprocess(bundle_only):
    def cases():
        for n, (h, w), (out_h, out_w), crop, out_off in itertools.product(
                (1, 3), ((1, 1), (480, 640), (1080, 1920)), ((14, 14), (448, 602)),
                (False, True), (0, 1)):
            if crop:  # rows 1.. and columns 1.. of a larger image
                img = T((n, h, w, 3), "uint8", ((h + 1) * (w + 1) * 3, (w + 1) * 3, 3, 1),
                        (w + 1) * 3 + 3)
            else:
                img = T((n, h, w, 3), "uint8")
            out = T((n, (out_h // 14) * (out_w // 14), 588), offset=out_off)
            yield (f"N={n} {h}x{w} -> {out_h}x{out_w} crop={crop} out_off={out_off}",
                   lambda: image.image_preprocess(img, out_h, out_w, out=out),
                   not crop and not out_off)

    seen = run_grid(bundle_only, cases())
    assert generic_names(image) <= seen


def test_pack_topk_ids(bundle_only):
    def cases():
        for t, k, off in itertools.product((1, 7, 4097), (16, 8, 3), (0, 1)):
            yield (f"T={t} K={k} off={off}",
                   lambda: pack_topk_ids.pack_topk_ids(T((t, k), "int32", offset=off),
                                                       T((t, k), "float32")),
                   not off)

    seen = run_grid(bundle_only, cases())
    assert generic_names(pack_topk_ids) <= seen


def test_moe_align_single_token(bundle_only):
    def cases():
        for topk, log_block, off in itertools.product(range(1, 33), range(9), (0, 1)):
            block = 1 << log_block
            yield (f"topk={topk} block={block} off={off}",
                   lambda: moe_align.moe_align_single_token(
                       T((1, topk), "int32", offset=off), block),
                   topk == 16 and block in (16, 64) and not off)

    seen = run_grid(bundle_only, cases())
    assert generic_names(moe_align) <= seen


def test_moe_fused_gate(bundle_only):
    def cases():
        for e, m, fast_sigmoid, shared, pad, off in itertools.product(
                (1, 8, 64, 256, 257, 896, 1024, 4096), (1, 7, 512, 1000), (False, True),
                (0, 2), (0, 1, 16), (0, 1)):
            for topk in sorted({1, min(8, e), min(16, e), min(32, e)}):
                stride = e + pad
                scores = T((m, e), "float32", (stride, 1), off)
                # (one row has no stride: the wrapper passes E)
                fast = (e, topk) == (896, 16) and (m == 1 or pad % 16 == 0) and not off
                yield (f"E={e} topk={topk} M={m} fast={fast_sigmoid} shared={shared} "
                       f"stride={stride} off={off}",
                       lambda: moe_fused_gate.moe_fused_gate(
                           scores, T((e,), "float32"), topk, fast_sigmoid=fast_sigmoid,
                           num_fused_shared_experts=shared), fast)

    seen = run_grid(bundle_only, cases())
    assert generic_names(moe_fused_gate) <= seen


def test_collectives(bundle_only):
    """The flat collectives over worlds 2, 4, 8 (the all-reduce's two-shot form from 1 MiB, the
    all-gather straight into a symmetric output): 16-byte aligned tensors of a multiple of 32
    bf16 take the vector kernels, other sizes and 4-byte offsets the generic ones; the row
    forms (16-byte aligned, rows of 3,584) their one kernel."""
    def ws(world, elements):
        return types.SimpleNamespace(rank=world - 1, world=world, peer_table=T((world,), "int64"),
                                     nbytes=allreduce.workspace_bytes(world, elements))

    def out_buffer(world):
        base = T((1 << 20,), "uint8")
        return types.SimpleNamespace(
            rank=world - 1, world=world, peer_table=T((world,), "int64"),
            local=lambda dtype, shape, offset: FakeTensor(shape, dtype,
                                                          address=base.data_ptr() + offset))

    def cases():
        for world, n, off in itertools.product((2, 4, 8), (2, 1000, 7168, 65536), (0, 2)):
            fast = n % 32 == 0 and not off
            what = f"world={world} n={n} off={off}"
            yield (f"allreduce {what}", lambda: allreduce.allreduce(
                T((n,), offset=off), ws(world, n), residual=T((n,))), fast)
            yield (f"sp_reduce_scatter {what}", lambda: allreduce.sp_reduce_scatter(
                T((world * n,), offset=off), ws(world, n), residual=T((n,))), fast)
            yield (f"sp_all_gather {what}", lambda: allreduce.sp_all_gather(
                T((n,), offset=off), ws(world, n)), fast)
            yield (f"sp_all_gather_direct {what}", lambda: allreduce.sp_all_gather_direct(
                T((n,)), ws(world, 2 * allreduce.MAX_PROGRAMS), out_buffer(world),
                offset=2 * off), fast)
        for world, n, off in itertools.product((2, 4, 8), (1 << 20, (1 << 20) + 2), (0, 2)):
            fast = n % 32 == 0 and not off
            yield (f"allreduce (two-shot) world={world} n={n} off={off}",
                   lambda: allreduce.allreduce(T((n,), offset=off), ws(world, n),
                                               residual=T((n,))), fast)
        d = allreduce.NORM_DIM
        for world, rows in itertools.product((2, 4, 8), (1, 3, 1536)):
            yield (f"allreduce_rmsnorm world={world} rows={rows}",
                   lambda: allreduce.allreduce_rmsnorm(T((rows, d)), ws(world, rows * d),
                                                       T((d,)), norm_rows=rows // 3,
                                                       residual=T((rows, d))), True)
            yield (f"finalize_push_norm world={world} tokens={rows}",
                   lambda: allreduce.finalize_push_norm(
                       T((64, d)), T((rows, allreduce.TOPK), "int32"),
                       T((rows, allreduce.TOPK), "float32"), ws(world, rows * d), T((d,))),
                   True)

    seen = run_grid(bundle_only, cases())
    assert seen >= generic_names(allreduce)


def test_gemm_collectives(bundle_only):
    """The fused GEMMs over worlds 2, 4, 8 and every tile setting: K3's N = 7,168 (and its
    slices) takes the fast kernels, an N that is not a multiple of 16 (or whose slice is not)
    the generic ones; K any multiple of 8; out given or allocated."""
    def ws(world, m, n):
        return types.SimpleNamespace(
            rank=world - 1, world=world, peer_table=T((world,), "int64"),
            nbytes=allreduce.workspace_bytes(world, gemm_collectives.workspace_elements(m, n,
                                                                                       world)))

    def cases():
        for world, m, n, k, given in itertools.product(
                (2, 4, 8), (1, 8, 9, 17, 33, 100, 129, 512), (7168, 7176, 2064), (3584, 8),
                (False, True)):
            cell = gemm_collectives.cell_rows(m)
            out = T((cell, n)) if given else None
            yield (f"gemm_allreduce world={world} M={m} N={n} K={k} out={given}",
                   lambda: gemm_collectives.gemm_allreduce(T((m, k)), T((n, k)), ws(world, m, n),
                                                           out=out), n % 16 == 0)
            if n % (2 * world):
                continue
            for with_c in (False, True):
                c = T((m, n)) if with_c else None
                yield (f"gemm_allgather world={world} M={m} N={n} K={k} c={with_c}",
                       lambda: gemm_collectives.gemm_allgather(
                           T((m, k)), T((n, k)), T((n,)), ws(world, m, n), c=c,
                           out=T((m, n)) if given else None), n // world % 16 == 0)

    seen = run_grid(bundle_only, cases())
    assert seen == {s.kernel_name for s in gemm_collectives.AOT_SPECIALIZATIONS}


def test_kv_indices(bundle_only):
    def cases():
        for bs, sms, page, mult, start, v2p, req, off in itertools.product(
                (1, 200), (None, SMS), (1, 16, 64, 128), (1, 3, 24), (False, True),
                (False, True), ("int32", "int64"), (0, 1)):
            r2t = T((64, 4096), "int32", offset=off)
            args = (r2t, T((bs,), req), T((bs,), "int32"), T((bs, 128), "int32"))
            kw = {"kv_start_idx": T((bs,), "int32") if start else None,
                  "v2p": T((1025,), "int64") if v2p else None}

            def call(args=args, kw=kw, sms=sms, page=page, mult=mult):
                bundle_only.sms = sms
                kv_indices.kv_indices(*args, page_size=page, page_mult=mult, **kw)

            yield (f"bs={bs} sms={sms} page={page} mult={mult} start={start} v2p={v2p} "
                   f"req={req} off={off}", call,
                   page == 64 and mult in (1, 24) and not start and not off)

    seen = run_grid(bundle_only, cases())
    assert generic_names(kv_indices) <= seen


def test_attn_res(bundle_only):
    def cases():
        for t, h, nvb, wp, sms in itertools.product(
                (1, 4, 64, 133, 300), (8, 1024, 4096, 4104, 7168, 8192, 16384), (0, 1, 3, 5, 8),
                (False, True), (None, SMS)):
            nb = nvb + 1

            def call(t=t, h=h, nvb=nvb, wp=wp, sms=sms, nb=nb):
                bundle_only.sms = sms
                attn_res.attn_res(T((t, h)), T((t, nb, h)), T((h,)), T((h,)), nvb=nvb,
                                  write_prefix=wp)

            # the bundle's tiles are K3's H = 7168 rounded up to a power of two
            yield f"T={t} H={h} nvb={nvb} write_prefix={wp} sms={sms}", call, 4096 < h <= 8192

    seen = run_grid(bundle_only, cases())
    assert generic_names(attn_res) <= seen


def test_gpu_tensor_hash(bundle_only):
    """Every dtype, length and alignment the wrapper takes (the word and the byte path)."""
    def cases():
        for dtype, n, off, sms in itertools.product(
                ("uint8", "bfloat16", "float32", "int64"), (1, 3, 1024, 4099, 1 << 20),
                (0, 1), (None, SMS)):
            x = T((n,), dtype, offset=off)

            def call(x=x, sms=sms):
                bundle_only.sms = sms
                tensor_hash.gpu_tensor_hash(x)

            yield f"{dtype}[{n}] off={off} sms={sms}", call, True

    run_grid(bundle_only, cases())


def test_per_token_group_quant_fp8(bundle_only):
    def cases():
        for group, ue8m0, cm, t, d, pad, off, q_pad in itertools.product(
                quant.GROUPS, (False, True), (False, True), (1, 7, 300), (256, 768, 7168),
                (0, 8, 16), (0, 8), (0, 16)):
            # rows padded by a multiple of 8 elements (16 bytes, what the wrapper wants),
            # addresses 16-byte aligned, q's rows padded by 16 elements
            x = T((t, d), strides=(d + pad, 1), offset=off)
            q = T((t, d), "float8_e4m3fn", (d + q_pad, 1)) if q_pad else None
            yield (f"group={group} ue8m0={ue8m0} column_major={cm} T={t} D={d} pad={pad} "
                   f"off={off} q_pad={q_pad}",
                   lambda: quant.per_token_group_quant_fp8(x, group, ue8m0, cm, q=q),
                   group == 128 and (t == 1 or pad % 16 == 0))
        for group in quant.GROUPS:  # D = one group
            yield (f"group={group} D={group}",
                   lambda: quant.per_token_group_quant_fp8(T((3, group)), group),
                   group == 128)

    seen = run_grid(bundle_only, cases())
    assert quant.GENERIC in seen


def test_quant_mxfp4(bundle_only):
    def cases():
        for r, d, pad, off in itertools.product((1, 7, 4096), (32, 32 * 67, 7168),
                                                (0, 8, 16, 32), (0, 8)):
            x = T((r, d), strides=(d + pad, 1), offset=off)
            yield (f"R={r} D={d} pad={pad} off={off}", lambda: quant.quant_mxfp4(x),
                   r == 1 or (d + pad) % 32 == 0)

    seen = run_grid(bundle_only, cases())
    assert quant.MX_GENERIC in seen


def test_mla_output_gate(bundle_only):
    def cases():
        for shp, x_off, g_off, out_off in itertools.product(
                ((1, 8), (3, 8), (1, 2056), (64, 1536), (7, 1544)), (0, 1, 8), (0, 1), (0, 3)):
            yield (f"{shp} x_off={x_off} gate_off={g_off} out_off={out_off}",
                   lambda: mla_output_gate.mla_output_gate(
                       T(shp, offset=x_off), T(shp, offset=g_off), T(shp, offset=out_off)),
                   not (x_off % 8 or g_off % 8 or out_off % 8))

    seen = run_grid(bundle_only, cases())
    assert mla_output_gate.GENERIC in seen


def test_mla_output_gate_fp8(bundle_only):
    def cases():
        for t, h, pad, off, s_off in itertools.product(
                (1, 7, 4097), (8, 24, 512, 1536, 1544, 3000, 16384), (0, 8, 16), (0, 8),
                (0, 1)):
            x = T((t, h), strides=(h + pad, 1), offset=off)
            g = T((t, h), strides=(h + 16, 1))
            s = T((t,), "float32", offset=s_off)
            yield (f"T={t} H={h} pad={pad} off={off} s_off={s_off}",
                   lambda: mla_output_gate.mla_output_gate_fp8(x, g, out_s=s),
                   h == 1536 and (t == 1 or pad % 16 == 0) and not s_off)

    seen = run_grid(bundle_only, cases())
    assert mla_output_gate.FP8_GENERIC in seen


def _cache(layout, width, dtype, rows):
    """A cache of ``rows`` rows: "rows" [rows, width], "padded" rows 16 bytes apart more
    than width, "pages" [rows / 64, 64, width], "layer" one layer of a [pages, 3, 64, width]
    pool."""
    if layout == "rows":
        return T((rows, width), dtype)
    if layout == "padded":
        return T((rows, width), dtype, (width + 16 // _ITEMSIZE[dtype], 1))
    pages = rows // 64
    if layout == "pages":
        return T((pages, 64, width), dtype)
    return T((pages, 64, width), dtype, (3 * 64 * width, width, 1), offset=64 * width)


def test_mla_kv_scatter(bundle_only):
    def cases():
        for t, kv_pad, pe_pad, pe3, off, loc_off, layout in itertools.product(
                (1, 7, 300), (0, 1, 8, 64), (0, 1, 576), (False, True), (0, 1), (0, 1),
                ("rows", "padded", "pages", "layer")):
            kv = T((t, 512), strides=(512 + kv_pad, 1), offset=off)
            pe_shape = (t, 1, 64) if pe3 else (t, 64)
            pe = T(pe_shape, strides=(64 + pe_pad,) + (64, 1)[-len(pe_shape) + 1:])
            cache = _cache(layout, 576, "bfloat16", 1 << 14)
            loc = T((t,), "int64", offset=loc_off)
            # (the row strides are passed for T = 1 too)
            fast = kv_pad % 16 == 0 and pe_pad % 16 == 0 and not off and not loc_off \
                and layout != "padded"
            yield (f"T={t} kv_pad={kv_pad} pe_pad={pe_pad} pe3={pe3} off={off} "
                   f"loc_off={loc_off} {layout}",
                   lambda: mla_kv.mla_kv_scatter(kv, pe, loc, cache), fast)

    seen = run_grid(bundle_only, cases())
    assert mla_kv.GENERIC in seen


def test_mla_kv_scatter_fp8(bundle_only):
    def cases():
        for t, kv_pad, pe_pad, loc_off, layout, rows in itertools.product(
                (1, 7, 300), (0, 8, 16, 64), (0, 8, 576), (0, 1),
                ("rows", "padded", "pages", "layer"), (1 << 14, 3273664)):
            kv = T((t, 512), strides=(512 + kv_pad, 1))
            pe = T((t, 64), strides=(64 + pe_pad, 1))
            cache = _cache(layout, 656, "uint8", rows)
            loc = T((t,), "int64", offset=loc_off)
            fast = (t == 1 or (kv_pad % 16 == 0 and pe_pad % 16 == 0)) and not loc_off
            yield (f"T={t} kv_pad={kv_pad} pe_pad={pe_pad} loc_off={loc_off} {layout} "
                   f"rows={rows}", lambda: mla_kv.mla_kv_scatter_fp8(kv, pe, loc, cache), fast)

    seen = run_grid(bundle_only, cases())
    assert mla_kv.FP8_GENERIC in seen


def test_concat_mla_k(bundle_only):
    def cases():
        for t, h, nope_w, rope_w, k_w, k_off, sms in itertools.product(
                (1, 7, 300), (1, 5, 12, 128), (128, 136, 256), (64, 72, 576), (192, 200),
                (0, 1), (None, SMS)):
            nope = T((t, h, 128), strides=(h * nope_w, nope_w, 1))
            rope = T((t, 1, 64), strides=(rope_w, rope_w, 1), offset=rope_w - 64)
            k = T((t, h, 192), strides=(h * k_w, k_w, 1), offset=k_off)

            def call(k=k, nope=nope, rope=rope, sms=sms):
                bundle_only.sms = sms
                concat_mla.concat_mla_k(k, nope, rope)

            fast = nope_w % 16 == 0 and rope_w % 16 == 0 and k_w % 16 == 0 and not k_off
            yield (f"T={t} H={h} nope_w={nope_w} rope_w={rope_w} k_w={k_w} k_off={k_off} "
                   f"sms={sms}", call, fast)

    seen = run_grid(bundle_only, cases())
    assert concat_mla.K_GENERIC in seen


def test_concat_mla_absorb_q(bundle_only):
    def cases():
        for (na, nb), (d0, d1), a_pad, b_off, out in itertools.product(
                ((512, 64), (128, 64), (100, 28), (8, 8), (1, 4096), (4096, 1), (4096, 4096),
                 (1, 1)), ((1, 1), (64, 128), (7, 12)), (0, 16, 3), (0, 1), (False, True)):
            a = T((d0, d1, na), strides=(d1 * (na + a_pad), na + a_pad, 1))
            b = T((d0, d1, nb), offset=b_off)
            o = T((d0, d1, na + nb), strides=(d1 * (na + nb + 8), na + nb + 8, 1)) \
                if out else None
            fast = (na, nb) == (512, 64) and a_pad % 16 == 0 and not b_off and not out
            yield (f"A={na} B={nb} {d0}x{d1} a_pad={a_pad} b_off={b_off} out={out}",
                   lambda: concat_mla.concat_mla_absorb_q(a, b, o), fast)

    seen = run_grid(bundle_only, cases())
    assert concat_mla.Q_GENERIC in seen


def test_kda_decode(bundle_only):
    """kda_packed_decode and kda_fused_decode need no generic kernel: HV, H, the batch and
    every stride are runtime arguments of their fast kernels, so each accepted input (other
    head counts and GVA ratios, padded row strides, slot pitches that are multiples of 4
    but not 16 elements, b / A_log / indices / cu_seqlens at any address) takes them."""
    k = kda_decode.HEAD_DIM

    def packed(bsz, hv, h, pad, pitch_pad, off, lb):
        width = 2 * h * k + hv * k
        mod = kda_decode
        return lambda: mod.kda_packed_decode(
            T((bsz, width), strides=(width + pad, 1)), T((bsz, hv * k), strides=(hv * k + pad, 1)),
            T((bsz, hv), strides=(hv + pad + 1, 1), offset=off), T((hv,), "float32", offset=off),
            T((hv * k,), "float32"),
            T((7, hv, k, k), "float32", strides=(hv * k * k + pitch_pad, k * k, k, 1)),
            T((bsz,), "int32", offset=off), h, lower_bound=lb)

    def fused(n, hv, h, varlen, norm, pad, off, lb):
        dim = 2 * h * k + hv * k
        t = 2 * n + 1 if varlen else n
        return lambda: kda_decode.kda_fused_decode(
            T((t, dim), strides=(dim + pad, 1)), T((t, hv * k), strides=(hv * k + pad, 1)),
            T((t, hv), strides=(hv + 3, 1), offset=off), T((hv,), "float32", offset=off),
            T((hv * k,), "float32"), T((9, 3, dim), strides=(3 * dim + pad, dim + pad, 1)),
            T((dim, 4)), T((9, hv, k, k), "float32", strides=(hv * k * k + 4, k * k, k, 1)),
            T((n,), "int32", offset=off), h,
            cu_seqlens=T((n + 1,), "int32", offset=off) if varlen else None,
            g_out=T((t, hv * k), strides=(hv * k + pad, 1)) if norm else None,
            w_norm=T((k,)) if norm else None, lower_bound=lb)

    def cases():
        for bsz, (hv, h), pad, pitch_pad, off, lb in itertools.product(
                (1, 3, 64), ((12, 12), (12, 3), (6, 3), (3, 3), (10, 2), (5, 1)), (0, 8),
                (0, 4, 16), (0, 1), (None, -5.0)):
            yield (f"packed B={bsz} HV={hv} H={h} pad={pad} pitch+{pitch_pad} off={off} "
                   f"lb={lb}", packed(bsz, hv, h, pad, pitch_pad, off, lb), True)
        for n, (hv, h), varlen, norm, pad, off, lb in itertools.product(
                (1, 5), ((12, 12), (12, 6), (12, 3), (6, 3), (3, 3), (4, 4)), (False, True),
                (False, True), (0, 8), (0, 1), (None, -5.0)):
            yield (f"fused N={n} HV={hv} H={h} varlen={varlen} norm={norm} pad={pad} "
                   f"off={off} lb={lb}", fused(n, hv, h, varlen, norm, pad, off, lb), True)

    seen = run_grid(bundle_only, cases())
    assert seen == {s.kernel_name for s in kda_decode.AOT_SPECIALIZATIONS}


def test_kda_verify(bundle_only):
    """kda_verify_chain and kda_replayssm_fold need no generic kernel either: head counts,
    S, L, layers and every pitch are runtime arguments, the optional outputs runtime flags."""
    k = kda_decode.HEAD_DIM

    def verify(n, s, hv, h, pad, outs, norm, lb):
        dim, t, slots, ring = 2 * h * k + hv * k, n * s, 9, s + 1
        opt = {}
        if outs:
            opt = dict(intermediate_states=T((slots, s, hv, k, k), "float32"),
                       rawk=T((slots, h, ring, k), strides=(h * ring * k + pad, ring * k, k, 1)),
                       rawv=T((slots, hv, ring, k)), gk=T((slots, hv, ring, k), "float32"),
                       beta=T((slots, hv, ring), "float32", offset=1),
                       conv_records=T((slots, ring, dim)))
        return lambda: kda_verify.kda_verify_chain(
            T((t, dim), strides=(dim + pad, 1)), T((t, hv * k)), T((t, hv), offset=1),
            T((hv,), "float32", offset=1), T((hv * k,), "float32"), T((slots, 3, dim)),
            T((dim, 4)), T((slots, hv, k, k), "float32", strides=(hv * k * k + 4, k * k, k, 1)),
            T((n,), "int32", offset=1), h, s, g_out=T((t, hv * k)) if norm else None,
            w_norm=T((k,)) if norm else None, lower_bound=lb, **opt)

    def fold(bsz, layers, hv, h, track, conv):
        dim, slots, ring = 2 * h * k + hv * k, 7, 4
        opt = {}
        if track:
            opt.update(track_indices=T((bsz,), "int32", offset=1),
                       steps_to_track=T((bsz,), "int32"))
        if conv:
            opt.update(conv_state=T((layers, slots, 3, dim)),
                       conv_records=T((layers, slots, ring, dim)))
        lay = hv * k * k + 4
        return lambda: kda_verify.kda_replayssm_fold(
            T((layers, slots, hv, k, k), "float32", strides=(lay, layers * lay, k * k, k, 1)),
            T((layers, slots, h, ring, k)), T((layers, slots, hv, ring, k)),
            T((layers, slots, hv, ring, k), "float32"), T((layers, slots, hv, ring), "float32"),
            T((bsz,), "int32", offset=1), T((bsz,), "int32"), **opt)

    def cases():
        for n, s, (hv, h), pad, outs, norm, lb in itertools.product(
                (1, 64), (1, 4), ((12, 12), (12, 3), (6, 3), (5, 1)), (0, 8), (False, True),
                (False, True), (None, -5.0)):
            yield (f"verify N={n} S={s} HV={hv} H={h} pad={pad} outs={outs} norm={norm} "
                   f"lb={lb}", verify(n, s, hv, h, pad, outs, norm, lb), True)
        for bsz, layers, (hv, h), track, conv in itertools.product(
                (1, 64), (1, 69), ((12, 12), (12, 3), (3, 3)), (False, True), (False, True)):
            yield (f"fold B={bsz} layers={layers} HV={hv} H={h} track={track} conv={conv}",
                   fold(bsz, layers, hv, h, track, conv), True)

    seen = run_grid(bundle_only, cases())
    assert seen == {s.kernel_name for s in kda_verify.AOT_SPECIALIZATIONS}


def test_mla_attention(bundle_only):
    """mla_decode and verify_splitkv need no generic kernel: every tile shape tile_shape
    picks is in the bundle, the page size, strides and split count are runtime arguments;
    one split launches the partial kernel alone, more the merge too."""

    def call(decode, bsz, s, h, fp8, ps, pad, splits):
        width, dtype = (656, "uint8") if fp8 else (576, "bfloat16")
        row = width + (16 if fp8 else 8) * pad
        cache = T((40, ps, width), dtype, strides=(ps * row, row, 1))
        bt, lens = T((bsz, 9), "int32", strides=(9 + pad, 1)), T((bsz,), "int32", offset=1)
        kw = dict(num_splits=splits, settings=mla_attention.Settings(tma=False))
        if decode:
            q = T((bsz, h, 576), strides=(h * 576 + 8 * pad, 576, 1))
            return lambda: mla_attention.mla_decode(q, cache, bt, lens, **kw)
        q = T((bsz, s, h, 576), strides=(s * h * 576 + 8 * pad, h * 576, 576, 1))
        return lambda: mla_attention.verify_splitkv(q, cache, bt, lens, return_lse=True, **kw)

    def cases():
        for decode, s, h, fp8, ps, pad, splits in itertools.product(
                (True, False), range(1, mla_attention.MAX_S + 1), (1, 12, 16, 24, 128),
                (False, True), (1, 64), (0, 1), (None, 1)):
            if decode and s > 1:
                continue
            yield (f"decode={decode} S={s} H={h} fp8={fp8} ps={ps} pad={pad} splits={splits}",
                   call(decode, 3, s, h, fp8, ps, pad, splits), True)

    bundle_only.sms = 132
    seen = run_grid(bundle_only, cases())
    assert seen == {s.kernel_name for s in mla_attention.AOT_SPECIALIZATIONS} - {
        "mla_attention_tma"}  # the pointer kernel's grid (Settings(tma=False)); the next test


def _mla_tma_specs(arch):
    return {tuple(sorted(s.constexprs.items())) for s in mla_attention.AOT_SPECIALIZATIONS
            if s.kernel is mla_attention.mla_attention_tma_kernel and arch in s.archs_in(ARCHS)}


@pytest.mark.parametrize("arch, settings", [
    ("sm_90a", mla_attention.Settings()),
    ("sm_100a", mla_attention.Settings(tma_blackwell=True)),
    ("sm_103a", mla_attention.Settings(tma_blackwell=True)),
])
def test_mla_attention_tma(bundle_only, monkeypatch, arch, settings):
    """The default settings without JIT: a bf16 cache of pages of a multiple of 64 rows
    takes the bundle's TMA kernel of the device's arch (LAT_W 256 on sm_90a, 128 on
    sm_100a/sm_103a with ``tma_blackwell``) at every head and draft count from 32 query rows
    a program (``tma_min_rows``); one 16-row tile (S = 1, H <= 16), the FP8 cache and other
    page sizes the pointer kernel. The TMA constexprs launched are exactly the arch's
    specializations (``Spec.archs``), and an entry holds an image for the arch exactly when
    it is one of them."""
    monkeypatch.setattr(mla_attention, "_device_arch", lambda t: arch)
    # no driver to encode the CUtensorMap: the descriptors' dtype, box and swizzle are
    # still checked against the params (host.marshal_args)
    monkeypatch.setattr(kiln.TensorDescriptor, "encode", lambda self: bytes(128))
    tma_launches = set()
    real = _launch.launch

    def record(kernel, name, grid, args, constexprs, *a, **k):
        if name == "mla_attention_tma":
            tma_launches.add(tuple(sorted(constexprs.items())))
        return real(kernel, name, grid, args, constexprs, *a, **k)

    monkeypatch.setattr(mla_attention.L, "launch", record)

    def call(decode, bsz, s, h, fp8, ps, splits):
        width, dtype = (656, "uint8") if fp8 else (576, "bfloat16")
        cache = T((40, ps, width), dtype)
        bt, lens = T((bsz, 9), "int32"), T((bsz,), "int32")
        kw = dict(num_splits=splits, settings=settings)
        if decode:
            return lambda: mla_attention.mla_decode(T((bsz, h, 576)), cache, bt, lens, **kw)
        return lambda: mla_attention.verify_splitkv(T((bsz, s, h, 576)), cache, bt, lens,
                                                    return_lse=True, **kw)

    bundle_only.sms = 132
    for decode, s, h, fp8, ps, splits in itertools.product(
            (True, False), range(1, mla_attention.MAX_S + 1), (1, 12, 24, 48, 96, 128),
            (False, True), (16, 64, 128), (None, 1)):
        if decode and s > 1:
            continue
        s_pad, block_h, _ = mla_attention.tile_shape(h, s)
        tma = ps % 64 == 0 and s_pad * block_h >= settings.tma_min_rows
        want = "mla_attention_fp8" if fp8 else ("mla_attention_tma" if tma else "mla_attention")
        call(decode, 3, s, h, fp8, ps, splits)()
        names = bundle_only.take()
        assert names and names[0] == want, (
            f"{arch} decode={decode} S={s} H={h} fp8={fp8} ps={ps} splits={splits}: "
            f"launched {names}")
    assert tma_launches == _mla_tma_specs(arch)
    entries = {tuple(sorted(k["constexprs"].items())): {im["arch"] for im in k["images"]}
               for k in _launch._bundle.kernels() if k["name"] == "mla_attention_tma"}
    for cx, archs in entries.items():  # the arch's images: exactly its launches'
        assert (arch in archs) == (cx in tma_launches), (cx, archs)


def test_mla_attention_tma_is_selectable_from_a_bundle():
    """A bundle holding the TMA kernel of mla_decode / verify_splitkv (bf16, pages of a
    multiple of 64 rows; here LAT_W 256, its metadata compiled to the tile stage) serves a
    launch with its ``TensorDescriptor`` arguments: ``KernelFamily.select`` matches each
    descriptor's dtype, box and swizzle against the kernel's ``tensordesc`` params (the
    runtime's tensor-map ``ArgSpec``), and descriptors of another box (LAT_W 128) fit no
    specialization (``find`` gives None, ``select`` names the descriptor's param). The
    bundle's own TMA specializations, arch by arch: ``test_mla_attention_tma``."""
    from kiln.runtime import KernelFamily

    lat_w = 256
    name, constexprs, warps = mla_attention.tma_launch_config(12, 1, lat_w)
    meta = mla_attention.mla_attention_tma_kernel.compile(
        mla_attention.tma_signature(lat_w), constexprs, mla_attention.TMA_ALIGNED,
        num_warps=warps, name=name, upto="tile").meta
    w = BundleWriter("tma")
    w.add_kernel(meta, [(a, "cubin", FAKE_CUBIN) for a in ARCHS])
    family = KernelFamily(Bundle.from_bytes(w.serialize(), "tma"), name, constexprs)
    cache = T((4, 64, 576))
    descs = mla_attention._tma_descriptors(cache, 4, 64, 576, lat_w, mla_attention.SETTINGS)
    args = (T((2, 1, 12, 576)), *descs, cache, T((2, 3), "int32"), T((2,), "int32"),
            T((24, 2, 512), "float32"), T((24, 2), "float32"), T((2, 1, 12, 512)),
            T((2, 1, 12), "float32")) + (1,) * 17 + (0.5,)
    assert family.select(args).name == name
    narrow = mla_attention._tma_descriptors(cache, 4, 64, 576, 128, mla_attention.SETTINGS)
    narrow_args = args[:1] + narrow + args[3:]
    assert family.find(narrow_args) is None
    bn = mla_attention.SETTINGS.tma_block_n
    with pytest.raises(KilnError, match=rf"argument 'lat_desc' \(param 1\) wants "
                                        rf"tensordesc<bf16, {bn}x256, swizzle 128>, got "
                                        rf"tensordesc<bf16, {bn}x128, swizzle 128>"):
        family.select(narrow_args)


def test_the_generic_kernels_are_the_wrappers_fallbacks(shipped):
    """Each ``*_generic`` kernel of the bundle is a module's ``GENERIC`` (or kv_indices'
    generic names), and every module of the grid above is one of the bundle's."""
    from kernels_dsl import kimi_k3

    assert {m.__name__.rsplit(".", 1)[-1] for m in MODULES} <= set(kimi_k3.MODULES)
    names = {k["name"] for k in shipped.kernels() if k["name"].endswith("_generic")}
    assert names == generic_names(*MODULES)
    assert names >= {m.GENERIC for m in MODULES if hasattr(m, "GENERIC")}


# --- the launch path's choice, on a bundle of two specializations ----------------------------


META = {"name": "scale", "symbol": "scale", "threads_per_block": 128, "cluster": [1, 1, 1],
        "params": [{"name": "x_ptr", "kind": "ptr", "dtype": "f32", "divisibility": 16},
                   {"name": "n", "kind": "scalar", "dtype": "i32", "divisibility": 16}],
        "constexprs": {"B": 4}}
GENERIC_META = dict(META, name="scale_generic",
                    params=[{"name": "x_ptr", "kind": "ptr", "dtype": "f32"},
                            {"name": "n", "kind": "scalar", "dtype": "i32"}])


@pytest.fixture
def two_kernels(bundle_only, monkeypatch):
    w = BundleWriter("two")
    for meta in (META, GENERIC_META):
        w.add_kernel(meta, [("sm_90a", "cubin", FAKE_CUBIN)])
    monkeypatch.setattr(_launch, "_bundle", Bundle.from_bytes(w.serialize(), "two"))
    return bundle_only


def launch(x, n, generic=True):
    _launch.launch(None, "scale", (1,), (x, n), {"B": 4}, 4,
                   generic=_launch.Launch(None, "scale_generic", (1,), (x, n), {"B": 4}, 4)
                   if generic else None)


def test_launch_takes_the_fast_specialization_where_the_arguments_meet_it(two_kernels):
    launch(T((64,), "float32"), 64)
    assert two_kernels.take() == ["scale"]


@pytest.mark.parametrize("offset,n", [(1, 64), (0, 63)])
def test_launch_falls_back_to_the_generic_kernel(two_kernels, offset, n):
    launch(T((64,), "float32", offset=offset), n)
    assert two_kernels.take() == ["scale_generic"]


def test_launch_without_a_generic_names_what_the_bundle_holds(two_kernels):
    with pytest.raises(KilnError, match=r"(?s)has no specialization of 'scale'.*wants a "
                                        r"multiple of 16, got 63"):
        launch(T((64,), "float32"), 63, generic=False)
    with pytest.raises(KilnError, match="has no specialization of 'scale_generic'"):
        _launch.launch(None, "scale", (1,), (T((64,), "float32"), 63), {"B": 4}, 4,
                       generic=_launch.Launch(None, "scale_generic", (1,),
                                              (T((64,), "float32"), 63), {"B": 8}, 4))
