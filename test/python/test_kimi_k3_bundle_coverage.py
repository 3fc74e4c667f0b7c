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
    attn_res,
    image,
    kda_decode,
    kda_verify,
    kv_indices,
    moe_align,
    moe_fused_gate,
    pack_topk_ids,
    situ,
    situ_quant,
    tensor_hash,
)
from kiln import _runtime, host  # noqa: E402
from kiln.runtime import Bundle, BundleWriter, KilnError  # noqa: E402

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
FAKE_CUBIN = b"\x7fELF" + bytes(60)
MODULES = (attn_res, image, kv_indices, moe_align, moe_fused_gate, pack_topk_ids, situ,
           situ_quant, tensor_hash)
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
        w.add_kernel(meta, [(a, "cubin", FAKE_CUBIN) for a in ARCHS])
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
