"""attn_res (docs/kernels/attn_res.md, attention residuals) on the CPU: the AOT
specializations compile for sm_90a, sm_100a and sm_103a (16-byte accesses, no spills, PDL) and
are the wrapper's default launches, the kernels run in the interpreter through the wrapper
(whose launch is redirected to the interpreter) against a numpy reference written from the
spec, and the wrapper rejects bad arguments before any CUDA call. Outputs are poisoned first,
so every element the kernel must write is checked and everything it must not touch is checked
unchanged. No GPU, no torch."""

import dataclasses
import math

import ml_dtypes
import numpy as np
import pytest

from kernels_dsl import kimi_k3
from kernels_dsl.kimi_k3 import attn_res as mod
from kiln.testing import bf16_ulp, interpret

from launch_choices import record_launch_choices  # noqa: E402

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
BF16 = ml_dtypes.bfloat16
EPS = 1e-6
POISON = np.uint16(0x7F81)  # a NaN bit pattern a correct kernel never writes here


# ---------------------------------------------------------------------------
# Reference (docs/kernels/attn_res.md), float64 so that the kernel's fp32 error is the only error
# ---------------------------------------------------------------------------

def ref_attn_res(prefix, bank, cw, ow, nvb, eps=EPS):
    """rows_r = [bank[:, 0..nvb-1, :], prefix_sum]; score_r = <rows_r, cw> *
    rsqrt(mean(rows_r^2) + eps); p = softmax(score); mix = sum_r p_r rows_r;
    out = mix * rsqrt(mean(mix^2) + eps) * ow (not rounded)."""
    rows = np.concatenate([bank[:, :nvb, :].astype(np.float64),
                           prefix.astype(np.float64)[:, None, :]], axis=1)  # [T, nvb+1, H]
    cw, ow = cw.astype(np.float64), ow.astype(np.float64)
    score = (rows * cw).sum(-1) / np.sqrt((rows * rows).mean(-1) + eps)   # [T, nvb+1]
    p = np.exp(score - score.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    mix = (p[:, :, None] * rows).sum(1)
    return mix / np.sqrt((mix * mix).mean(-1, keepdims=True) + eps) * ow


def assert_close_bf16(out, ref):
    """Within one bf16 ulp of the exact value (the rounding is half of it), plus 2^-16 of the
    row's scale for elements that cancel to about zero (fp32 error of the weighted sum)."""
    got = out.astype(np.float64)
    scale = np.sqrt((ref * ref).mean(-1, keepdims=True))
    tol = bf16_ulp(ref).astype(np.float64) + scale * 2.0**-16
    err = np.abs(got - ref)
    bad = ~(err <= tol)
    if bad.any():
        i = np.unravel_index(int(np.argmax(np.where(bad, err / tol, 0))), ref.shape)
        raise AssertionError(f"{int(bad.sum())} of {ref.size} differ by more than 1 bf16 ulp; "
                             f"worst at {i}: got {got[i]}, expected {ref[i]}, tol {tol[i]:.3g}")


def test_reference_hand_computed():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 16))
    w = rng.standard_normal(16)
    rms = x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * w
    # nvb = 0 (layer 0): RMSNorm(prefix) * ow
    np.testing.assert_allclose(ref_attn_res(x, np.zeros((3, 0, 16)), w, w, 0), rms, rtol=1e-12)
    # equal rows: any softmax gives mix = the row
    bank = np.repeat(x[:, None, :], 4, axis=1)
    np.testing.assert_allclose(ref_attn_res(x, bank, rng.standard_normal(16), w, 4), rms,
                               rtol=1e-12)
    # two rows, hand-made scores: row a = (1, 0), b = (0, 2); cw = (3, 1), eps = 0:
    # score_a = 3 / sqrt(1/2), score_b = 2 / sqrt(2); mix = p_a a + p_b b
    a, b = np.array([[1.0, 0.0]]), np.array([[0.0, 2.0]])
    sa, sb = 3 / math.sqrt(0.5), 2 / math.sqrt(2.0)
    pa = 1 / (1 + math.exp(sb - sa))
    mix = np.array([pa, 2 * (1 - pa)])
    want = mix / math.sqrt((mix * mix).mean())
    got = ref_attn_res(b, a[:, None, :], np.array([3.0, 1.0]), np.ones(2), 1, eps=0.0)
    np.testing.assert_allclose(got[0], want, rtol=1e-12)


# ---------------------------------------------------------------------------
# The wrapper on numpy arrays, its launch redirected to the interpreter
# ---------------------------------------------------------------------------

class HostTensor:
    """A numpy array dressed as a tensor for the wrapper (shape, dtype name, stride() in
    elements, data_ptr); the interpreter reads it through ``__array_interface__``."""

    def __init__(self, a):
        self.a = a
        self.shape = a.shape
        self.dtype = str(a.dtype)
        self.__array_interface__ = a.__array_interface__

    def stride(self, dim=None):
        if self.a.size == 0:  # numpy gives empty arrays zero strides; torch keeps them
            s = tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        else:
            s = tuple(x // self.a.itemsize for x in self.a.strides)
        return s if dim is None else s[dim]

    def data_ptr(self):
        return self.a.__array_interface__["data"][0]


def aligned(shape, fill=POISON):
    """A bf16 array whose address is a multiple of 64 bytes (numpy only promises 16)."""
    n = math.prod(shape)
    raw = np.full(n + 32, fill, np.uint16)
    off = (-raw.__array_interface__["data"][0] % 64) // 2
    return raw[off:off + n].view(BF16).reshape(shape)


class Current:
    """The settings ``run`` passes to the wrapper (set by the fixtures below)."""

    settings = mod.SETTINGS


S = mod.SETTINGS


def use(monkeypatch, **changes):
    """``run`` passes the default settings with ``changes`` for the rest of the test."""
    monkeypatch.setattr(Current, "settings", dataclasses.replace(mod.SETTINGS, **changes))


def interpreter_launch(monkeypatch, use_generic):
    """The wrapper's launch runs its kernel (or with ``use_generic`` its generic launch, the
    bundle's kernel for the shapes the others miss) in the interpreter (numpy in, numpy out);
    the wrapper's launches recorded."""
    launches = []

    def launch(kernel, name, grid, args, constexprs, num_warps, maxnreg=None, cluster=None,
               generic=None):
        launches.append((name, tuple(grid), dict(constexprs), num_warps))
        if use_generic:
            kernel, _, grid, args, constexprs, _, _, cluster = generic
        if any(int(g) == 0 for g in grid) or not isinstance(args[0], HostTensor):
            return
        args = [x.a if isinstance(x, HostTensor) else x for x in args]
        interpret(kernel, tuple(grid), *args, **constexprs,
                  **({"cluster": cluster} if cluster else {}))

    monkeypatch.setattr(mod.L, "launch", launch)
    return launches


@pytest.fixture
def via_interpreter(monkeypatch):
    return interpreter_launch(monkeypatch, False)


@pytest.fixture
def via_generic(monkeypatch):
    return interpreter_launch(monkeypatch, True)


def make_inputs(rng, t, nb, h, scale=1.0):
    """bf16 inputs at K3-like magnitudes: the residual stream grows with depth, so each bank
    row has its own scale; cw spreads the scores over a few units."""
    prefix = aligned((t, h))
    prefix[...] = (rng.standard_normal((t, h)) * 3 * scale).astype(BF16)
    bank = aligned((t, nb, h))
    row_scale = np.exp(rng.uniform(-1, 2, (t, nb, 1)))
    bank[...] = (rng.standard_normal((t, nb, h)) * row_scale * scale).astype(BF16)
    cw = aligned((h,))
    cw[...] = (rng.standard_normal(h) * 4 / math.sqrt(h)).astype(BF16)
    ow = aligned((h,))
    ow[...] = (rng.uniform(0.5, 1.5, h)).astype(BF16)
    return prefix, bank, cw, ow


def run(prefix, bank, cw, ow, nvb, write_prefix=False, out=None, eps=EPS):
    t, h = prefix.shape
    if out is None:
        out = aligned((t, h))
    res = mod.attn_res(HostTensor(prefix), HostTensor(bank), HostTensor(cw), HostTensor(ow),
                       HostTensor(out), nvb, eps, write_prefix, settings=Current.settings)
    assert res.a is out
    return out


def check(prefix, bank, cw, ow, nvb, write_prefix=False, out=None):
    bank_before = bank.copy()
    want = ref_attn_res(prefix, bank_before, cw, ow, nvb)
    out = run(prefix, bank, cw, ow, nvb, write_prefix, out)
    assert_close_bf16(out, want)
    expected_bank = bank_before.view(np.uint16).copy()
    if write_prefix:
        expected_bank[:, nvb, :] = prefix.view(np.uint16)
    np.testing.assert_array_equal(bank.view(np.uint16), expected_bank)  # bit for bit
    return out


@pytest.fixture
def ring(monkeypatch):
    """The row ring (attn_res_ring_kernel) wherever the cluster kernel does not run (the
    token kernel off)."""
    use(monkeypatch, token_max_waves=0)


@pytest.mark.parametrize("write_prefix", [False, True])
@pytest.mark.parametrize("nvb", range(0, 9))
def test_ring_every_nvb(via_interpreter, ring, nvb, write_prefix):
    rng = np.random.default_rng(200 + nvb + 16 * write_prefix)
    t, h = 5, 256
    nb = nvb + 1 if write_prefix else max(nvb, 1)
    check(*make_inputs(rng, t, nb, h), nvb, write_prefix)
    name, grid, constexprs, _ = via_interpreter[-1]
    assert grid == (t,)
    # no SM count: the many-token configuration
    warps = mod._config(h, S.ring_thread_elems)[1]
    assert name == "attn_res_ring" + ("_write_prefix" if write_prefix else "") + (
        f"_s{S.ring_stages}_p{S.ring_programs_per_sm}_w{warps}")
    assert constexprs == {"BLOCK": 256, "WRITE_PREFIX": write_prefix,
                          "STAGES": S.ring_stages, "PROGRAMS": S.ring_programs_per_sm}


def test_ring_config_by_token_count():
    """The few-token ring configuration where T <= SMs (with an SM count), the many-token
    one above and without an SM count."""
    many = (S.ring_thread_elems, S.ring_stages, S.ring_programs_per_sm)
    few = (S.ring_few_thread_elems, S.ring_few_stages, S.ring_few_programs_per_sm)
    assert few != many
    assert mod.ring_config(133, 132) == many and mod.ring_config(16384, 132) == many
    assert mod.ring_config(132, 132) == few and mod.ring_config(64, 132) == few
    assert mod.ring_config(64, None) == many


@pytest.mark.parametrize("stages", [1, 2, 3, 8])
@pytest.mark.parametrize("sms", [1, 2, 3, 7])
def test_ring_persistent_grids_and_stages(via_interpreter, ring, monkeypatch, sms, stages):
    """Programs that own several tokens: the ring's rows run across token boundaries (the
    (token, row) of each row recomputed from its index); more stages than rows."""
    monkeypatch.setattr(mod, "_num_sms", lambda x: sms)
    # whichever configuration the token count picks
    use(monkeypatch, token_max_waves=0, ring_stages=stages, ring_few_stages=stages,
        ring_programs_per_sm=2, ring_few_programs_per_sm=2)
    rng = np.random.default_rng(300 + sms * 8 + stages)
    t, nvb, h = 7, 2, 128
    check(*make_inputs(rng, t, nvb + 1, h), nvb, True)
    assert via_interpreter[-1][1] == (min(t, 2 * sms),)
    assert via_interpreter[-1][2]["STAGES"] == stages


@pytest.mark.parametrize("sms", [1, 3])
@pytest.mark.parametrize("nvb", [0, 1, 8])
def test_ring_nvb_boundaries(via_interpreter, ring, monkeypatch, nvb, sms):
    monkeypatch.setattr(mod, "_num_sms", lambda x: sms)
    rng = np.random.default_rng(400 + nvb + sms)
    check(*make_inputs(rng, 5, max(nvb, 1) + 1, 64), nvb, True)


@pytest.mark.parametrize("h", [8, 1000, 1024])
def test_ring_hidden_sizes(via_interpreter, ring, h):
    """H not a power of two: the bulk copy's count leaves the lanes past H zero."""
    rng = np.random.default_rng(500 + h)
    check(*make_inputs(rng, 3, 4, h), 3, True)


def test_ring_k3_hidden(via_interpreter, ring, monkeypatch):
    """H = 7168 in the 8192 tile (1024 zero lanes), two tokens in one program."""
    monkeypatch.setattr(mod, "_num_sms", lambda x: 1)
    rng = np.random.default_rng(7169)
    check(*make_inputs(rng, 2, 9, mod.HIDDEN), 8, True)
    assert via_interpreter[-1][2]["BLOCK"] == 8192
    assert via_interpreter[-1][3] == mod._config(mod.HIDDEN, S.ring_thread_elems)[1]


@pytest.mark.parametrize("h", [8, 1000, 1024])
@pytest.mark.parametrize("t", [1, 5])
def test_hidden_sizes(via_interpreter, t, h):
    """H a multiple of 8 but not of the tile (masked lanes must not enter the sums)."""
    rng = np.random.default_rng(t * 10000 + h)
    check(*make_inputs(rng, t, 4, h), 3, True)
    assert via_interpreter[-1][2]["BLOCK"] == max(8, 1 << (h - 1).bit_length())


def test_k3_hidden_one_token(via_interpreter):
    """H = 7168 (K3), the AOT tile: BLOCK 8192 on the ring's 4 warps (no SM count: the
    many-token configuration)."""
    rng = np.random.default_rng(7168)
    check(*make_inputs(rng, 1, 9, mod.HIDDEN), 8, True)
    assert via_interpreter[-1][2]["BLOCK"] == 8192 and via_interpreter[-1][3] == 4


def test_strided_views_and_untouched_memory(via_interpreter):
    """prefix_sum and out as row-strided views; the bank has more rows than are read and a
    padded token stride: only bank[:, nvb] and out's [T, H] window change."""
    rng = np.random.default_rng(5)
    t, h, nb, nvb = 6, 256, 7, 3
    prefix_buf = aligned((t, h + 64))
    bank_buf = aligned((t, nb * h + 128))
    out_buf = aligned((t, h + 32))
    p, b, cw, ow = make_inputs(rng, t, nb, h)
    prefix_buf[:, :h] = p
    bank_buf[:, :nb * h] = b.reshape(t, nb * h)
    prefix = prefix_buf[:, :h]
    bank = bank_buf[:, :nb * h].reshape(t, nb, h)
    assert bank.strides[0] == (nb * h + 128) * 2
    before = bank_buf.view(np.uint16).copy()
    check(prefix, bank, cw, ow, nvb, True, out=out_buf[:, :h])
    after = bank_buf.view(np.uint16)
    np.testing.assert_array_equal(after[:, nb * h:], before[:, nb * h:])
    assert np.all(out_buf[:, h:].view(np.uint16) == POISON)
    assert np.all(prefix_buf[:, h:].view(np.uint16) == POISON)


def test_write_prefix_is_a_bit_copy(via_interpreter):
    """Every bf16 bit pattern survives the snapshot (-0, subnormals, inf, NaN payloads): the
    row is stored as loaded, never through fp32."""
    t, h, nb, nvb = 4, 256, 3, 1
    pats = np.arange(t * h, dtype=np.uint32) * 65 % 65536
    prefix = aligned((t, h))
    prefix.view(np.uint16)[...] = pats.reshape(t, h).astype(np.uint16)
    prefix.view(np.uint16)[0, :4] = [0x8000, 0x0001, 0x7F80, 0xFFC1]
    rng = np.random.default_rng(9)
    _, bank, cw, ow = make_inputs(rng, t, nb, h)
    before = bank.view(np.uint16).copy()
    run(prefix, bank, cw, ow, nvb, write_prefix=True)
    expected = before.copy()
    expected[:, nvb, :] = prefix.view(np.uint16)
    np.testing.assert_array_equal(bank.view(np.uint16), expected)


@pytest.mark.parametrize("order", ["rising", "falling", "one_dominates"])
def test_online_softmax_rescaling(via_interpreter, order):
    """Scores tens of units apart, rising (the running max moves at every row), falling (it
    never moves) and one row dominating: exp without the running max would overflow."""
    rng = np.random.default_rng(["rising", "falling", "one_dominates"].index(order))
    t, h, nvb = 3, 128, 6
    prefix, bank, cw, ow = make_inputs(rng, t, nvb, h)
    # rows aligned with cw get score ~ k * sqrt(H) * |cw| / rms: scale by the row index
    direction = cw.astype(np.float64) / np.sqrt((cw.astype(np.float64) ** 2).mean())
    ks = {"rising": np.linspace(-40, 40, nvb + 1), "falling": np.linspace(40, -40, nvb + 1),
          "one_dominates": np.where(np.arange(nvb + 1) == 3, 60.0, 0.0)}[order]
    for r in range(nvb + 1):
        row = direction * np.sign(ks[r] + 1e-9) + rng.standard_normal(h) * (
            1 - min(abs(ks[r]), 40) / 41)
        row = (row * rng.uniform(0.5, 4)).astype(BF16)
        if r < nvb:
            bank[:, r, :] = row
        else:
            prefix[...] = row
    # make the scores large: cw itself scaled up
    cw[...] = (cw.astype(np.float32) * 8).astype(BF16)
    want = ref_attn_res(prefix, bank, cw, ow, nvb)
    assert np.all(np.isfinite(want))
    assert_close_bf16(run(prefix, bank, cw, ow, nvb), want)


def test_eps_is_used_twice(via_interpreter):
    """A large eps changes both the scores and the output norm; the reference uses one eps."""
    rng = np.random.default_rng(11)
    prefix, bank, cw, ow = make_inputs(rng, 3, 4, 128, scale=0.01)
    want = ref_attn_res(prefix, bank, cw, ow, 4, eps=1e-3)
    assert_close_bf16(run(prefix, bank, cw, ow, 4, eps=1e-3), want)


def test_zero_tokens_launch_nothing(via_interpreter):
    h = 256
    out = aligned((0, h))
    res = mod.attn_res(HostTensor(aligned((0, h))), HostTensor(aligned((0, 3, h))),
                       HostTensor(aligned((h,))), HostTensor(aligned((h,))), HostTensor(out), 2)
    assert res.a is out and via_interpreter == []


@pytest.mark.parametrize("t,h,nvb,write_prefix,sms", [
    (1, 8, 0, False, None), (3, 1000, 3, True, 2), (2, mod.HIDDEN, 2, False, 1),
    (2, mod.MAX_H, 1, True, 132)])
def test_generic_kernel(via_generic, monkeypatch, t, h, nvb, write_prefix, sms):
    """The generic launch (the bundle's ring for every H, nvb and token count; its 16384
    tile makes the interpreter slow, so few rows) against the reference: H from 8 to the
    longest row, persistent programs owning several tokens."""
    monkeypatch.setattr(mod, "_num_sms", lambda x: sms)
    rng = np.random.default_rng(t * 1000 + h + nvb + 17 * write_prefix)
    nb = nvb + 1 if write_prefix else max(nvb, 1)
    check(*make_inputs(rng, t, nb, h), nvb, write_prefix)


# ---------------------------------------------------------------------------
# Argument checks: all before any CUDA call
# ---------------------------------------------------------------------------

_TYPESTR = {"bfloat16": "<V2", "float32": "<f4", "float16": "<f2"}


class FakeTensor:
    """Just enough of a CUDA tensor: __cuda_array_interface__, shape, stride(), dtype."""

    def __init__(self, shape, dtype="bfloat16", strides=None, address=0x7F0000000000):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._strides = tuple(strides) if strides else tuple(
            math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": _TYPESTR[dtype],
                                         "shape": self.shape, "version": 3}

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def data_ptr(self):
        return self.__cuda_array_interface__["data"][0]


F = FakeTensor
H = 7168


def good(t=4, nb=9):
    return F((t, H)), F((t, nb, H)), F((H,)), F((H,)), F((t, H))


@pytest.fixture
def no_launch(monkeypatch):
    """Fails the test if the wrapper gets as far as a launch or a device query."""
    def boom(*a, **k):
        raise AssertionError("the wrapper launched (or asked the device) before rejecting")

    monkeypatch.setattr(mod.L, "launch", boom)
    monkeypatch.setattr(mod, "_num_sms", boom)


@pytest.mark.parametrize("nvb", [-1, 9, 100, 2.0, True, None])
def test_nvb_out_of_range(no_launch, nvb):
    with pytest.raises(ValueError, match="nvb must be an int in"):
        mod.attn_res(*good(), nvb=nvb)


def test_bank_too_small(no_launch):
    p, b, cw, ow, out = good(nb=3)
    with pytest.raises(ValueError, match="needs NB > nvb"):
        mod.attn_res(p, b, cw, ow, out, nvb=3, write_prefix=True)
    with pytest.raises(ValueError, match="bank has NB = 3"):
        mod.attn_res(p, b, cw, ow, out, nvb=4)


@pytest.mark.parametrize("which", range(5))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_wrong_dtypes(no_launch, which, dtype):
    args = list(good())
    args[which] = F(args[which].shape, dtype)
    with pytest.raises(TypeError, match="must be bfloat16"):
        mod.attn_res(*args, nvb=2)


@pytest.mark.parametrize("which,shape", [
    (0, (4, H, 1)), (1, (4, H)), (1, (3, 9, H)), (1, (4, 9, H - 8)), (2, (H - 8,)),
    (3, (H, 1)), (4, (4, H - 8)), (4, (5, H))])
def test_wrong_shapes(no_launch, which, shape):
    args = list(good())
    args[which] = F(shape)
    with pytest.raises(ValueError, match="must have shape"):
        mod.attn_res(*args, nvb=2)


def test_layout_checks(no_launch):
    p, b, cw, ow, out = good()
    with pytest.raises(ValueError, match="last dimension"):
        mod.attn_res(F((4, H), strides=(2 * H, 2)), b, cw, ow, out, nvb=2)
    with pytest.raises(ValueError, match="multiple of 8"):
        mod.attn_res(p, F((4, 9, H), strides=(9 * H + 4, H, 1)), cw, ow, out, nvb=2)
    with pytest.raises(ValueError, match="16-byte aligned"):
        mod.attn_res(p, b, F((H,), address=0x7F0000000002), ow, out, nvb=2)
    with pytest.raises(ValueError, match="contiguous"):
        mod.attn_res(p, b, cw, F((H,), strides=(2,)), out, nvb=2)
    with pytest.raises(ValueError, match="multiple of 8"):
        mod.attn_res(F((4, 100)), F((4, 9, 100)), F((100,)), F((100,)), F((4, 100)), nvb=2)
    with pytest.raises(ValueError, match="16384"):
        mod.attn_res(F((4, 16392)), F((4, 9, 16392)), F((16392,)), F((16392,)),
                     F((4, 16392)), nvb=2)


# ---------------------------------------------------------------------------
# Compilation for every arch
# ---------------------------------------------------------------------------

def test_module_listed():
    assert "attn_res" in kimi_k3.MODULES


RING_SPECS = [s for s in mod.AOT_SPECIALIZATIONS
              if s.kernel is mod.attn_res_ring_kernel and s.kernel_name != mod.GENERIC]
GENERIC_SPECS = [s for s in mod.AOT_SPECIALIZATIONS if s.kernel_name == mod.GENERIC]


def test_aot_specializations():
    # the bundle holds the ring's two configurations the wrapper launches
    assert [s.kernel_name for s in RING_SPECS] == [
        f"attn_res_ring{wp}_s{st}_p{p}_w{mod._config(mod.HIDDEN, e)[1]}"
        for e, st, p in ((S.ring_thread_elems, S.ring_stages, S.ring_programs_per_sm),
                         (S.ring_few_thread_elems, S.ring_few_stages,
                          S.ring_few_programs_per_sm))
        for wp in ("", "_write_prefix")]
    assert [s.num_warps for s in RING_SPECS] == [4, 4, 8, 8]
    for s in RING_SPECS:
        assert s.constexprs["BLOCK"] == 8192
    assert {s.kernel for s in mod.AOT_SPECIALIZATIONS} == {
        mod.attn_res_ring_kernel, mod.attn_res_cluster_kernel, mod.attn_res_token_kernel}
    assert mod.attn_res_ring_kernel.do_not_specialize == {"T", "nvb"}
    # ... and the generic ring at the longest row, one 16-warp program an SM
    assert [(s.kernel, s.constexprs, s.num_warps) for s in GENERIC_SPECS] == [
        (mod.attn_res_ring_kernel, {"BLOCK": mod.MAX_H, "WRITE_PREFIX": wp, "STAGES": 3,
                                    "PROGRAMS": 1}, 16) for wp in (False, True)]


class FakeDevice:
    """A stand-in CUDA tensor for the wrapper: shape, dtype, strides and an address."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.dtype = "bfloat16"
        self._strides = tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        self.__cuda_array_interface__ = {"data": (0x7F0000000000, False), "typestr": "<V2",
                                         "shape": self.shape, "version": 3}

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def data_ptr(self):
        return self.__cuda_array_interface__["data"][0]


def test_every_shipped_kernel_is_a_default_launch(monkeypatch):
    """Each AOT specialization is what some wrapper call with the default settings selects
    (``select_launch``, instrumented) on a 132-SM device at K3's H: every nvb, write_prefix
    or not, T from 1 to 16384."""
    selected = record_launch_choices(monkeypatch, mod)
    monkeypatch.setattr(mod, "_num_sms", lambda x: 132)
    h, nb = mod.HIDDEN, 9
    for t in (1, 33, 34, 66, 67, 132, 133, 16384):
        for nvb in range(0, 9):
            for wp in (False, True):
                mod.attn_res(FakeDevice((t, h)), FakeDevice((t, nb, h)), FakeDevice((h,)),
                             FakeDevice((h,)), FakeDevice((t, h)), nvb, write_prefix=wp)
    launched = [(k, name, cx, warps, regs, cluster)
                for k, name, _, cx, warps, regs, cluster in selected]
    for s in mod.AOT_SPECIALIZATIONS:
        if s.kernel_name != mod.GENERIC:
            assert (s.kernel, s.kernel_name, dict(s.constexprs), s.num_warps, s.maxnreg,
                    s.cluster) in launched, s.kernel_name
    for wp in (False, True):  # the generic launch of every call
        assert mod._spec(mod.generic_launch(1, wp, 132)).__dict__ == next(
            s for s in GENERIC_SPECS if s.constexprs["WRITE_PREFIX"] == wp).__dict__


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("spec", RING_SPECS + GENERIC_SPECS,
                         ids=lambda s: f"{s.kernel_name}-{s.constexprs['WRITE_PREFIX']}")
def test_compiles_to_ptx_and_cubin(spec, arch):
    pytest.importorskip("kiln._C")
    from kiln.compiler.targetinfo import target_info

    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name)
    assert f".target {arch}" in ck.ptx
    assert f".visible .entry {spec.kernel_name}(" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"
    # every row access is a 16-byte vector (v4.b32, or v2.b64 on Blackwell); no 2-byte ones
    assert "ld.global.v4.b32" in ck.ptx or "ld.global.v2.b64" in ck.ptx
    assert "st.global.v4.b32" in ck.ptx or "st.global.v2.b64" in ck.ptx
    assert "ld.global.b16" not in ck.ptx and "st.global.b16" not in ck.ptx
    assert "griddepcontrol.wait" in ck.ptx and "griddepcontrol.launch_dependents" in ck.ptx
    info = target_info(arch, ck.ptx, ck.cubin, ck.cubin_log, ck.cubin_tool, ck.symbol)
    assert info.get("spill_store_bytes", 0) == 0 and info.get("spill_load_bytes", 0) == 0
    # the programs an SM it is built for fit
    assert info["registers"] <= 65536 // (32 * spec.num_warps * spec.constexprs.get("PROGRAMS", 1))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("stages,programs,elems", [(3, 2, 16), (4, 2, 16), (6, 2, 16),
                                                   (8, 1, 16), (3, 3, 64), (4, 3, 64)])
def test_ring_kernel_compiles_within_its_registers(stages, programs, elems, arch):
    """The row ring at K3's shape: one ring of `stages` 16 KB slots (mbarrier each, the row
    bulk-copied, no per-element global row loads), no spills, and with n programs an SM
    (.minnctapersm n) at most 65536 / (n x threads) registers a thread (16 warps x 2: 64;
    4 warps x 3: 170)."""
    pytest.importorskip("kiln._C")
    block, warps = mod._config(mod.HIDDEN, elems)
    ck = mod.attn_res_ring_kernel.compile(
        mod._SIGNATURE, {"BLOCK": block, "WRITE_PREFIX": True, "STAGES": stages,
                         "PROGRAMS": programs},
        mod._DIVISIBILITY, num_warps=warps, arch=arch)
    ptx = ck.ptx
    assert ptx.count("mbarrier.init.shared.b64") == stages
    assert "cp.async.bulk.shared::cluster.global" in ptx
    assert ck.meta["shared_bytes"] >= stages * (16384 + 8)
    assert f".minnctapersm {programs}" in ptx
    target = ck.meta["targets"][arch]
    assert target["spill_store_bytes"] == 0 and target["spill_load_bytes"] == 0
    assert target["registers"] <= 65536 // (programs * 32 * warps)


def test_ring_kernel_compiles_for_an_unspecialized_hidden_size():
    """A JIT launch specializes H only when it is a multiple of 16 (H = 1000 is not): the
    bulk copy's count must still be proved whole 16-byte units (H // 8 * 8)."""
    pytest.importorskip("kiln._C")
    div = {k: v for k, v in mod._DIVISIBILITY.items() if k != "H"}
    ck = mod.attn_res_ring_kernel.compile(
        mod._SIGNATURE, {"BLOCK": 1024, "WRITE_PREFIX": False, "STAGES": 4, "PROGRAMS": 2},
        div, num_warps=2, arch="sm_90a")
    assert ck.cubin[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------
# The small-T cluster kernel (one token per cluster of programs, a column slice each)
# ---------------------------------------------------------------------------

@pytest.fixture
def many_sms(monkeypatch):
    """An SM count for host arrays, large enough that the wrapper picks the cluster kernel."""
    monkeypatch.setattr(mod, "_num_sms", lambda x: 1000)


@pytest.fixture(params=["cluster", "token"])
def few_tokens(request, many_sms, monkeypatch):
    """The few-token kernels: the cluster kernel, or (the cluster kernel off) the token
    kernel; the value is the kernel name's middle word."""
    if request.param == "token":
        use(monkeypatch, cluster_max_waves=0, token_max_waves=1, token_max_rows=8)
    return request.param


@pytest.mark.parametrize("write_prefix", [False, True])
@pytest.mark.parametrize("nvb", range(0, 9))
def test_cluster_every_nvb(via_interpreter, many_sms, nvb, write_prefix):
    rng = np.random.default_rng(200 + nvb + 16 * write_prefix)
    t, h = 3, 256
    nb = nvb + 1 if write_prefix else max(nvb, 1)
    check(*make_inputs(rng, t, nb, h), nvb, write_prefix)
    name, grid, constexprs, warps = via_interpreter[-1]
    rp = 1 << (max(nvb, 1) - 1).bit_length()  # the bank rows' next power of two (at least 1)
    assert warps == S.cluster_warps  # 3 x 4 programs fit one an SM of 1000
    assert name == (f"attn_res_cluster_rp{rp}_w{warps}_c{S.cluster_size}"
                    + ("_write_prefix" if write_prefix else ""))
    assert grid == (t * S.cluster_size,)
    assert constexprs == {"SLICE": 256 // S.cluster_size, "RP": rp,
                          "WRITE_PREFIX": write_prefix}


@pytest.mark.parametrize("size,warps", [(2, 4), (4, 8), (16, 2), (16, 4)])
@pytest.mark.parametrize("nvb", [1, 5, 8])
def test_cluster_sizes(via_interpreter, many_sms, monkeypatch, size, warps, nvb):
    """Clusters of 2, 4 and 16 programs a token (cluster_size, a launch's cluster shape;
    H / S columns a program)."""
    use(monkeypatch, cluster_size=size, cluster_warps=warps)
    rng = np.random.default_rng(500 + size + nvb)
    t, h = 2, 512
    check(*make_inputs(rng, t, nvb + 1, h), nvb, True)
    name, grid, constexprs, w = via_interpreter[-1]
    assert name == f"attn_res_cluster_rp{1 << (nvb - 1).bit_length()}_w{warps}" + (
        "" if size == 8 else f"_c{size}") + "_write_prefix"
    assert grid == (t * size,) and w == warps
    assert constexprs["SLICE"] == h // size


@pytest.mark.parametrize("write_prefix", [False, True])
@pytest.mark.parametrize("nvb", range(0, 9))
def test_token_every_nvb(via_interpreter, many_sms, monkeypatch, nvb, write_prefix):
    """The token kernel: one program per token, its rows whole in a [RP, BLOCK] tile (up to
    8 bank rows, past the default token_max_rows)."""
    use(monkeypatch, cluster_max_waves=0, token_max_waves=1, token_max_rows=8)
    rng = np.random.default_rng(300 + nvb + 16 * write_prefix)
    t, h = 3, 200  # a row that fills no power of two: lanes 200..255 masked
    nb = nvb + 1 if write_prefix else max(nvb, 1)
    check(*make_inputs(rng, t, nb, h), nvb, write_prefix)
    name, grid, constexprs, warps = via_interpreter[-1]
    rp = 1 << (max(nvb, 1) - 1).bit_length()
    assert warps == S.token_warps and grid == (t,)
    assert name == (f"attn_res_token_rp{rp}_w{warps}"
                    + ("_write_prefix" if write_prefix else ""))
    assert constexprs == {"BLOCK": 256, "RP": rp, "WRITE_PREFIX": write_prefix}


@pytest.mark.parametrize("t,h,nvb,sms,waves,token", [
    (1, 256, 3, 132, 1, True), (132, 256, 3, 132, 1, True),  # one program an SM
    (133, 256, 3, 132, 1, False), (264, 256, 3, 132, 2, True),
    (1, 256, 3, 132, 0, False),                               # token_max_waves = 0: never
    (1, 256, 3, None, 1, False),                              # no SM count
    (1, 16384, 3, 132, 1, False),                             # H > token_max_h
    (1, 256, 4, 132, 1, True), (1, 256, 5, 132, 1, False),    # nvb <= token_max_rows (4)
])
def test_token_kernel_choice(via_interpreter, monkeypatch, t, h, nvb, sms, waves, token):
    monkeypatch.setattr(mod, "_num_sms", lambda x: sms)
    use(monkeypatch, cluster_max_waves=0, token_max_waves=waves)
    assert mod.use_token_kernel(t, h, nvb, sms, Current.settings) is token
    if h <= 256:
        rng = np.random.default_rng(t + h)
        check(*make_inputs(rng, t, nvb + 1, h), nvb, True)
        assert via_interpreter[-1][0].startswith("attn_res_token_") is token


@pytest.mark.parametrize("t", [1, 2, 7])
@pytest.mark.parametrize("nvb", [1, 3, 7])
def test_few_tokens_k3_hidden(via_interpreter, few_tokens, t, nvb):
    """H = 7168: 1792 columns a program in a masked 2048-wide slice (cluster of 4), or the
    whole row in a masked 8192-wide tile (token)."""
    rng = np.random.default_rng(7168 + 10 * t + nvb)
    check(*make_inputs(rng, t, 9, mod.HIDDEN), nvb, True)
    name, grid, constexprs, _ = via_interpreter[-1]
    assert name.startswith(f"attn_res_{few_tokens}_")
    if few_tokens == "cluster":
        assert grid == (4 * t,) and constexprs["SLICE"] == 2048
    else:
        assert grid == (t,) and constexprs["BLOCK"] == 8192


def test_few_tokens_strided_views_and_untouched_memory(via_interpreter, few_tokens,
                                                       monkeypatch):
    test_strided_views_and_untouched_memory(via_interpreter)
    assert via_interpreter[-1][0].startswith(f"attn_res_{few_tokens}_")


def test_few_tokens_write_prefix_is_a_bit_copy(via_interpreter, few_tokens, monkeypatch):
    test_write_prefix_is_a_bit_copy(via_interpreter)
    assert via_interpreter[-1][0] == {  # nvb = 1
        "cluster": "attn_res_cluster_rp1_w4_c4_write_prefix",
        "token": f"attn_res_token_rp1_w{S.token_warps}_write_prefix"}[few_tokens]


@pytest.mark.parametrize("order", ["rising", "falling", "one_dominates"])
def test_few_tokens_softmax_extremes(via_interpreter, few_tokens, monkeypatch, order):
    test_online_softmax_rescaling(via_interpreter, order)
    assert via_interpreter[-1][0].startswith(f"attn_res_{few_tokens}_")


def test_few_tokens_eps_is_used_twice(via_interpreter, few_tokens, monkeypatch):
    test_eps_is_used_twice(via_interpreter)
    assert via_interpreter[-1][0].startswith(f"attn_res_{few_tokens}_")


@pytest.mark.parametrize("t,h,nvb,sms,cluster", [
    (1, 256, 3, 4, True), (2, 256, 3, 4, True),          # 4 or 2 programs a token,
    (3, 256, 3, 4, False),                               # T * S <= SMs
    (66, 256, 3, 132, True), (67, 256, 3, 132, False),   # H200: up to 66 tokens
    (1, 1000, 3, 132, False), (1, 16, 3, 132, False),    # H / S not a multiple of 8
    (40, 16, 3, 132, True),                              # ... it is at S = 2
    (1, 256, 3, None, False),                            # no SM count: the persistent kernel
    (1, 256, 8, 132, True), (1, 256, 0, 132, True),      # nvb <= cluster_max_rows (8)
])
def test_cluster_kernel_choice(via_interpreter, monkeypatch, t, h, nvb, sms, cluster):
    monkeypatch.setattr(mod, "_num_sms", lambda x: sms)
    rng = np.random.default_rng(t + h)
    check(*make_inputs(rng, t, nvb + 1, h), nvb, True)
    assert via_interpreter[-1][0].startswith("attn_res_cluster_") is cluster
    assert mod.use_cluster_kernel(t, h, nvb, sms) is cluster


def test_cluster_kernel_off(via_interpreter, many_sms, monkeypatch):
    use(monkeypatch, cluster_max_waves=0, token_max_waves=0)
    rng = np.random.default_rng(3)
    check(*make_inputs(rng, 1, 4, 256), 3, True)
    assert via_interpreter[-1][0].startswith("attn_res_ring_write_prefix_")


def test_cluster_aot_specializations():
    """One specialization per padded row count, cluster shape (4 programs of 4 warps, 2 of
    8) and write_prefix; a program's H / S columns in its power-of-two slice."""
    specs = [s for s in mod.AOT_SPECIALIZATIONS if s.kernel is mod.attn_res_cluster_kernel]
    assert sorted(s.kernel_name for s in specs) == sorted(
        f"attn_res_cluster_rp{rp}_w{w}_c{c}" + wp for rp in (1, 2, 4, 8)
        for c, w in ((4, 4), (2, 8)) for wp in ("", "_write_prefix"))
    for s in specs:
        size = s.cluster[0]
        assert s.cluster == (size, 1, 1) and s.constexprs["SLICE"] == {4: 2048, 2: 4096}[size]
    assert mod.attn_res_cluster_kernel.do_not_specialize == {"T", "nvb"}


def test_cluster_warps_by_token_count():
    """4 programs of 4 warps a token where the T clusters fit one program an SM (and without
    an SM count), 2 of 8 warps above."""
    assert mod._cluster_config(7168, 8) == (4, 2048, 8, 4)
    assert mod._cluster_config(7168, 5, 33, 132) == (4, 2048, 8, 4)
    assert mod._cluster_config(7168, 3, 34, 132) == (2, 4096, 4, 8)
    assert mod._cluster_config(7168, 0, 66, 132) == (2, 4096, 1, 8)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("spec", [s for s in mod.AOT_SPECIALIZATIONS
                                  if s.kernel is mod.attn_res_cluster_kernel],
                         ids=lambda s: s.kernel_name)
def test_cluster_compiles_to_ptx_and_cubin(spec, arch):
    """16-byte accesses, PDL, four cluster barriers (two cluster_sum exchanges), no
    spills."""
    pytest.importorskip("kiln._C")
    from kiln.compiler.targetinfo import target_info

    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name,
                             cluster=spec.cluster)
    size = spec.cluster[0]
    assert ck.meta["cluster"] == [size, 1, 1]
    assert f".reqnctapercluster {size}, 1, 1" in ck.ptx
    assert "ld.global.v4.b32" in ck.ptx or "ld.global.v2.b64" in ck.ptx
    assert "st.global.v4.b32" in ck.ptx or "st.global.v2.b64" in ck.ptx
    assert "ld.global.b16" not in ck.ptx and "st.global.b16" not in ck.ptx
    assert "griddepcontrol.wait" in ck.ptx and "griddepcontrol.launch_dependents" in ck.ptx
    assert ck.ptx.count("barrier.cluster.arrive.aligned") == 4
    info = target_info(arch, ck.ptx, ck.cubin, ck.cubin_log, ck.cubin_tool, ck.symbol)
    assert info.get("spill_store_bytes", 0) == 0 and info.get("spill_load_bytes", 0) == 0
    assert info["registers"] * 32 * spec.num_warps <= 65536
