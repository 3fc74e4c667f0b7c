"""kernels_dsl/common/attention.py on the CPU: the flash-attention forward (varlen with unequal
lengths and an empty sequence, the dense [B, H, T, D] form, GQA, causal diagonals, partial
last blocks) and split-KV flash decoding with its merge, run by the interpreter through the
wrappers (numpy arrays behind a tensor-like shim) against a reference written from the
math (fp32 softmax); the PTX per arch (sm_90a: every dot on wgmma, p·v with p from
registers, no mma.sync); the wrappers' argument checks. No GPU and no torch needed
(test/gpu/test_attention.py runs the same kernels against torch's SDPA)."""

import dataclasses
import functools
import math
import os
import sys

import numpy as np
import pytest

import kiln
from kiln.testing import FakeCudaTensor, interpret

ml_dtypes = pytest.importorskip("ml_dtypes")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from kernels_dsl.common import attention as attn  # noqa: E402

BF16 = ml_dtypes.bfloat16
#: Small blocks, so that a few dozen tokens make several blocks and diagonals (BN < BM:
#: two masked blocks on each diagonal).
SMALL = dataclasses.replace(attn.SETTINGS, fwd_block_m=32, fwd_block_n_d64=16,
                            fwd_block_n_d128=32, decode_block_h=16, decode_block_n=16,
                            decode_min_split=16)


class NpTensor:
    """A numpy array dressed as a CUDA tensor for the wrappers (dtype names as torch's,
    strides in elements, a device); ``_launch`` below hands the arrays to the interpreter."""

    def __init__(self, array):
        self.array = array
        self.shape = array.shape
        self.dtype = {np.dtype(BF16): "torch.bfloat16", np.dtype(np.float32): "torch.float32",
                      np.dtype(np.int32): "torch.int32"}[array.dtype]
        self.device = "cuda:0"

    def stride(self, dim=None):
        st = tuple(s // self.array.itemsize for s in self.array.strides)
        return st if dim is None else st[dim]

    def data_ptr(self):
        return self.array.ctypes.data


@pytest.fixture
def cpu_wrappers(monkeypatch):
    """The wrappers allocate numpy arrays and launch through the interpreter."""
    def unwrap(a):
        if isinstance(a, kiln.TensorDescriptor) and isinstance(a.base, NpTensor):
            return kiln.TensorDescriptor(a.base.array, a.block_shape, shape=a.shape,
                                         strides=a.strides, swizzle=a.swizzle)
        return a.array if isinstance(a, NpTensor) else a

    def launch(kernel, grid, args, constexprs, num_warps):
        if all(g > 0 for g in grid):
            interpret(kernel, grid, *[unwrap(a) for a in args], **constexprs)

    def empty(shape, dtype, like):
        return NpTensor(np.full(shape, np.nan, {"bfloat16": BF16, "float32": np.float32}[dtype]))

    monkeypatch.setattr(attn, "_launch", launch)
    monkeypatch.setattr(attn, "_empty", empty)
    monkeypatch.setattr(attn, "_device_arch", lambda t: "sm_90a")


def _bf16(rng, *shape):
    return rng.standard_normal(shape).astype(BF16)


def ref_attention(q, k, v, scale, causal):
    """softmax(q kᵀ · scale) v for one sequence and head (q [Tq, D], k and v [Tk, D]; query
    t sees keys 0..t when causal), the softmax in fp32; also the log-sum-exp (natural log)."""
    s = (q.astype(np.float32) @ k.astype(np.float32).T) * np.float32(scale)
    if causal:
        s = np.where(np.tril(np.ones(s.shape, bool)), s, np.float32(-np.inf))
    m = s.max(axis=1, keepdims=True)
    w = np.exp(s - m)
    den = w.sum(axis=1, keepdims=True)
    return (w / den) @ v.astype(np.float32), (m + np.log(den))[:, 0]


def assert_attention_close(out, ref, v):
    """p is rounded to bf16 for p·v (relative 2^-9 a weight; the weights sum to 1) and the
    output to bf16 (half an ulp)."""
    out = out.astype(np.float32)
    assert not np.isnan(out).any()
    bound = 2.0**-8 * np.abs(v.astype(np.float32)).max() + 2.0**-8 * np.abs(ref)
    bad = np.abs(out - ref) > bound
    assert not bad.any(), f"{bad.sum()} elements off, max error {np.abs(out - ref).max():.3g}"


# ---------------------------------------------------------------------------
# Forward
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("d,causal", [(64, True), (128, True), (64, False)])
def test_varlen(cpu_wrappers, d, causal):
    """Unequal lengths (an empty sequence, one token, exactly a block, partial blocks), GQA
    4:2, the LSE; with causal, the diagonal blocks."""
    rng = np.random.default_rng(d + causal)
    lens = [37, 1, 0, 64, 75]
    cu = np.array([0, *np.cumsum(lens)], np.int32)
    t, hq, hkv = int(cu[-1]), 4, 2
    q, k, v = _bf16(rng, t, hq, d), _bf16(rng, t, hkv, d), _bf16(rng, t, hkv, d)
    scale = 0.7 / math.sqrt(d)
    out, lse = attn.flash_attn_varlen(NpTensor(q), NpTensor(k), NpTensor(v), NpTensor(cu),
                                      max(lens), scale=scale, causal=causal,
                                      return_lse=True, settings=SMALL)
    for i, n in enumerate(lens):
        a, b = cu[i], cu[i + 1]
        for h in range(hq if n else 0):
            ref, ref_lse = ref_attention(q[a:b, h], k[a:b, h // 2], v[a:b, h // 2], scale,
                                         causal)
            assert_attention_close(out.array[a:b, h], ref, v[a:b, h // 2])
            np.testing.assert_allclose(lse.array[h, a:b], ref_lse, rtol=0, atol=1e-4)


def test_dense_strided(cpu_wrappers):
    """The SDPA form [B, H, T, D] as the transposed view of [B, T, H, D] projections (token
    stride H * D), GQA 4:1, T not a multiple of the block, causal, the LSE [B, H, T]."""
    rng = np.random.default_rng(5)
    b, t, hq, hkv, d = 2, 45, 4, 1, 64
    q = _bf16(rng, b, t, hq, d).transpose(0, 2, 1, 3)
    k = _bf16(rng, b, t, hkv, d).transpose(0, 2, 1, 3)
    v = _bf16(rng, b, t, hkv, d).transpose(0, 2, 1, 3)
    out, lse = attn.flash_attn(NpTensor(q), NpTensor(k), NpTensor(v), return_lse=True,
                               settings=SMALL)
    assert out.array.shape == (b, hq, t, d) and lse.array.shape == (b, hq, t)
    for i in range(b):
        for h in range(hq):
            ref, ref_lse = ref_attention(q[i, h], k[i, 0], v[i, 0], 1 / math.sqrt(d), True)
            assert_attention_close(out.array[i, h], ref, v[i, 0])
            np.testing.assert_allclose(lse.array[i, h], ref_lse, rtol=0, atol=1e-4)


def test_diagonal_block_only():
    """Queries of one block (BM = BN = 32) over exactly their diagonal: the kernel launched
    directly, the masked iteration alone (no unmasked block)."""
    rng = np.random.default_rng(6)
    t, d = 32, 64
    q, k, v = _bf16(rng, t, 1, d), _bf16(rng, t, 1, d), _bf16(rng, t, 1, d)
    o = np.full((t, 1, d), np.nan, BF16)
    cu = np.array([0, t], np.int32)
    descs = [kiln.TensorDescriptor(x[None], [1, 32, 1, d]) for x in (k, v)]
    interpret(attn.flash_fwd_kernel, (1, 1, 1), q, *descs, o, o, cu, 0,
              np.float32(attn.LOG2E / math.sqrt(d)), 1, 0, d, d, 0, d, d, 0, t, D=d, BM=32,
              BN=32, CAUSAL=True, VARLEN=True, STORE_LSE=False, STAGES=2,
              WARP_SPECIALIZE=False)
    ref, _ = ref_attention(q[:, 0], k[:, 0], v[:, 0], 1 / math.sqrt(d), True)
    assert_attention_close(o[:, 0], ref, v[:, 0])
    # row 0 sees key 0 alone
    np.testing.assert_array_equal(o[0, 0], v[0, 0])


# ---------------------------------------------------------------------------
# Decode
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("n_splits", [None, 1, 3])
def test_decode(cpu_wrappers, n_splits):
    """GQA 8:2, lengths not multiples of the key block (one empty, one a single key, one
    the whole cache), split or not, through the merge."""
    rng = np.random.default_rng(7 + (n_splits or 0))
    b, hq, hkv, seq, d = 4, 8, 2, 100, 64
    lengths = np.array([100, 37, 0, 1], np.int32)
    q = _bf16(rng, b, hq, d)
    kc, vc = _bf16(rng, b, seq, hkv, d), _bf16(rng, b, seq, hkv, d)
    out = attn.flash_decode(NpTensor(q), NpTensor(kc), NpTensor(vc), NpTensor(lengths),
                            n_splits=n_splits, num_sms=2, settings=SMALL).array
    for i in range(b):
        n = lengths[i]
        for h in range(hq):
            if n == 0:
                np.testing.assert_array_equal(out[i, h].astype(np.float32), 0.0)
                continue
            ref, _ = ref_attention(q[i, h][None], kc[i, :n, h // 4], vc[i, :n, h // 4],
                                   1 / math.sqrt(d), False)
            assert_attention_close(out[i, h][None], ref, vc[i, :n, h // 4])


def test_decode_splits():
    """The split rule: few programs split (each chunk a multiple of the key block, covering
    L), enough programs do not, short caches stay whole."""
    s = attn.SETTINGS
    n, chunk = attn.decode_splits(64, 8, 8192, 132)  # the benchmark: 512 programs
    assert (n, chunk) == (1, 8192)
    n, chunk = attn.decode_splits(1, 8, 8192, 132)  # 8 programs for 264 slots
    assert n > 8 and chunk % s.decode_block_n == 0 and n * chunk >= 8192
    assert (n - 1) * chunk < 8192
    assert attn.decode_splits(1, 8, 100, 132)[0] == 1  # below decode_min_split
    assert attn.decode_splits(2, 1, 0, 132) == (1, s.decode_block_n)


# ---------------------------------------------------------------------------
# PTX per arch
# ---------------------------------------------------------------------------

FWD_SIG = {"q_ptr": "*bf16", "o_ptr": "*bf16", "lse_ptr": "*f32", "cu_seqlens_ptr": "*i32",
           "seqlen": "i32", "qk_scale": "fp32", "group": "i32",
           **{f"stride_{t}{s}": "i32" for t in "qo" for s in "bth"},
           "stride_lb": "i32", "stride_lh": "i32"}
FWD_DIV = ["q_ptr", "o_ptr", "lse_ptr", *(f"stride_{t}{s}" for t in "qo" for s in "bth")]
DEC_SIG = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "o_part_ptr": "*f32",
           "lse_part_ptr": "*f32", "lengths_ptr": "*i32", "chunk": "i32", "qk_scale": "fp32",
           "group": "i32", "stride_qb": "i32", "stride_qh": "i32",
           **{f"stride_{t}{s}": "i32" for t in "kv" for s in "bth"}}
DEC_DIV = ["q_ptr", "k_ptr", "v_ptr", "o_part_ptr", "lse_part_ptr", "chunk", "stride_qb",
           "stride_qh", *(f"stride_{t}{s}" for t in "kv" for s in "bth")]
MERGE_SIG = {"o_part_ptr": "*f32", "lse_part_ptr": "*f32", "out_ptr": "*bf16",
             "n_splits": "i32", "stride_ob": "i32", "stride_oh": "i32"}


def with_kv_descs(sig, d, bn, varlen, arch="sm_90a"):
    """``sig`` with the k_desc / v_desc parameters: boxes of bf16, [1, bn, 1, d] (varlen:
    the [1, T, Hkv, D] view; the decode caches [B, L, Hkv, D]) or [1, 1, bn, d] (the dense
    [B, Hkv, T, D] form), with the swizzle of ``arch`` (attention.fwd_ring, the same as
    attention.decode_ring's)."""
    swizzle, _ = attn.fwd_ring(arch)
    sw = f",sw{swizzle}" if swizzle else ""
    box = f"1x{bn}x1x{d}" if varlen else f"1x1x{bn}x{d}"
    return {"k_desc": f"tensordesc<bf16,{box}{sw}>", "v_desc": f"tensordesc<bf16,{box}{sw}>",
            **sig}


def _register_a(ptx):
    return sum(1 for line in ptx.splitlines() if "wgmma.mma_async" in line and "}, {%r" in line)


@functools.lru_cache(maxsize=None)
def _compile_fwd(arch, d, causal, varlen):
    bm, bn, warps = attn.fwd_blocks(d, arch)
    return attn.flash_fwd_kernel.compile(
        with_kv_descs(FWD_SIG, d, bn, varlen, arch),
        {"D": d, "BM": bm, "BN": bn, "CAUSAL": causal, "VARLEN": varlen, "STORE_LSE": varlen,
         "STAGES": attn.SETTINGS.fwd_stages, "WARP_SPECIALIZE": attn.fwd_ring(arch)[1]},
        FWD_DIV, num_warps=warps, arch=arch,
        upto="cubin")


FWD_CASES = [("sm_90a", 64, True, True), ("sm_90a", 128, True, False),
             ("sm_90a", 128, False, True), ("sm_100a", 128, True, True),
             ("sm_103a", 64, True, False)]


@pytest.mark.parametrize("arch,d,causal,varlen", FWD_CASES)
def test_fwd_compiles(arch, d, causal, varlen):
    pytest.importorskip("kiln._C")
    ck = _compile_fwd(arch, d, causal, varlen)
    ptx = ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"
    # k and v through a ring of TMA boxes, on every arch
    assert ptx.count("cp.async.bulk.tensor.4d") >= 2
    # the metadata names the unit of each kl.dot (q kᵀ, p·v) and why, off the tensor-core
    # MMA of the arch, none runs there: no silent fallback
    dots = ck.meta["targets"][arch]["dots"]
    assert len(dots) == 2 and all(d["line"] > 0 for d in dots)
    if arch != "sm_90a":
        # both on tcgen05 with the operands staged in shared memory (q once), the
        # accumulators in Tensor Memory: q kᵀ (D / 16 K steps) and p·v (BN / 16) in each
        # of the two key loops
        _, bn, _ = attn.fwd_blocks(d, arch)
        assert [d["unit"] for d in dots] == ["tcgen05 staged", "tcgen05 staged"]
        assert ptx.count("tcgen05.mma.cta_group::1.kind::f16") == 2 * (d // 16 + bn // 16)
        assert "tcgen05.alloc" in ptx and "tcgen05.dealloc" in ptx
        assert "mma.sync" not in ptx and "wgmma" not in ptx
        # k and v read in their 128-byte swizzled ring slots: only q (once) and p are
        # stored for the MMAs
        plan = [b["buffer"] for b in ck.meta["targets"][arch]["shared_plan"]]
        assert sum(b.startswith("__kiln_staged") for b in plan) == 1
        assert not any(b.startswith("__kiln_tcgen05_b_smem") for b in plan)
        return
    assert [d["unit"] for d in dots] == ["wgmma", "wgmma"]
    bm, bn, warps = attn.fwd_blocks(d, arch)
    slabs = bm // 64 // (warps // 4)  # 64-row slabs a warpgroup
    # q kᵀ (D / 16 k16 steps) and p·v (BN / 16) in the key loop, which
    # kiln-tile-split-loops runs as two (the blocks every row sees whole, then the masked
    # ones); all wgmma, p·v's A from registers
    assert "mma.sync" not in ptx
    assert ptx.count("wgmma.mma_async") == 2 * slabs * (d // 16 + bn // 16)
    assert _register_a(ptx) == 2 * slabs * (bn // 16)
    # a producer warpgroup fills the ring; the dots read k and v in their slots and q
    # where it was staged once: no other operand is staged, and the mask is computed in
    # the accumulator's registers (no conversion but the epilogue's: the bf16 output and,
    # with varlen, the lse)
    assert "setmaxnreg.inc" in ptx
    plan = [b["buffer"] for b in ck.meta["targets"][arch]["shared_plan"]]
    assert sum(b.startswith("__kiln_staged") for b in plan) == 1
    assert not any(b.startswith(("__kiln_wgmma_b_smem", "__kiln_wgmma_a_smem")) for b in plan)
    assert sum(b.startswith("__kiln_convert_smem") for b in plan) == 1 + varlen


@pytest.mark.parametrize("arch", attn.ARCHS)
def test_decode_compiles(arch):
    pytest.importorskip("kiln._C")
    s = attn.SETTINGS
    bh, bn, d = attn.decode_block_h(arch), s.decode_block_n, 128
    ck = attn.flash_decode_kernel.compile(
        with_kv_descs(DEC_SIG, d, bn, True, arch),
        {"D": d, "BLOCK_H": bh, "BN": bn, "STAGES": s.decode_stages,
         "WARP_SPECIALIZE": attn.decode_ring(arch)[1]},
        DEC_DIV, num_warps=attn.decode_warps(arch), arch=arch, upto="cubin")
    assert ck.cubin[:4] == b"\x7fELF"
    # the unmasked loop's k and v through a ring of TMA boxes of the caches
    assert ck.ptx.count("cp.async.bulk.tensor.4d") >= 2
    # q kᵀ and p·v in the loop (read in the ring), then in the partial last block (staged)
    units = [d["unit"] for d in ck.meta["targets"][arch]["dots"]]
    assert units == (["wgmma", "wgmma", "wgmma staged", "wgmma staged"] if arch == "sm_90a"
                     else ["tcgen05 staged"] * 4)
    if arch == "sm_90a":
        assert "mma.sync" not in ck.ptx
        # q kᵀ and p·v in the loop and in the partial last block, all wgmma
        assert ck.ptx.count("wgmma.mma_async") == 2 * (d // 16 + bn // 16)
        assert _register_a(ck.ptx) == 2 * (bn // 16)
        # the loop's dots read k and v in their ring slots: only the partial last block's
        # two dots stage a B (its k and v loaded masked)
        assert ("setmaxnreg.inc" in ck.ptx) == attn.decode_ring(arch)[1]
        plan = [b["buffer"] for b in ck.meta["targets"][arch]["shared_plan"]]
        assert sum(b.startswith("__kiln_wgmma_b_smem") for b in plan) == 2
    else:
        # q kᵀ and p·v in the loop and in the partial last block, all tcgen05
        assert "wgmma" not in ck.ptx and "mma.sync" not in ck.ptx
        assert ck.ptx.count("tcgen05.mma.cta_group::1.kind::f16") == 2 * (d // 16 + bn // 16)
        # the loop's dots read k and v in their ring slots: only the partial last block's
        # two dots store a B
        plan = [b["buffer"] for b in ck.meta["targets"][arch]["shared_plan"]]
        assert sum(b.startswith("__kiln_tcgen05_b_smem") for b in plan) == 2
    merge = attn.flash_decode_merge_kernel.compile(
        MERGE_SIG, {"D": d, "BLOCK_S": 16}, ["o_part_ptr", "lse_part_ptr", "out_ptr"],
        num_warps=attn.SETTINGS.merge_warps, arch=arch, upto="cubin")
    assert merge.cubin[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------
# Wrapper checks: all before any launch
# ---------------------------------------------------------------------------

F = functools.partial(FakeCudaTensor, device="cuda:0")


@pytest.fixture
def no_launch(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the wrapper launched before rejecting")

    monkeypatch.setattr(attn, "_launch", boom)
    monkeypatch.setattr(attn, "_empty", lambda shape, dtype, like: F(shape, dtype))
    monkeypatch.setattr(attn, "_device_arch", lambda t: "sm_90a")


def varlen_args(t=100, hq=8, hkv=2, d=128):
    return dict(q=F((t, hq, d)), k=F((t, hkv, d)), v=F((t, hkv, d)),
                cu_seqlens=F((3,), "int32"), max_seqlen=60)


def test_varlen_checks(no_launch):
    def call(**changes):
        return attn.flash_attn_varlen(**{**varlen_args(), **changes})

    with pytest.raises(TypeError, match="q must be bfloat16"):
        call(q=F((100, 8, 128), "float16"))
    with pytest.raises(TypeError, match="cu_seqlens must be int32"):
        call(cu_seqlens=F((3,), "int64"))
    with pytest.raises(TypeError, match="k must be a tensor"):
        call(k=[1, 2])
    with pytest.raises(ValueError, match="q must have 3 dimensions"):
        call(q=F((100, 8 * 128)))
    with pytest.raises(ValueError, match="k and v must have shape"):
        call(v=F((100, 4, 128)))
    with pytest.raises(ValueError, match="head dim must be one of"):
        call(**varlen_args(d=96))
    with pytest.raises(ValueError, match="multiple of the KV heads"):
        call(**varlen_args(hq=6, hkv=4))
    with pytest.raises(ValueError, match="contiguous along its last dimension"):
        call(q=F((100, 8, 128), strides=(8 * 256, 256, 2)))
    with pytest.raises(ValueError, match="multiples of 8 elements"):
        call(k=F((100, 2, 128), strides=(260, 130, 1)))
    with pytest.raises(ValueError, match="16-byte aligned"):
        call(v=F((100, 2, 128), address=0x7F0000000002))
    with pytest.raises(ValueError, match="at least 2 offsets"):
        call(cu_seqlens=F((1,), "int32"))
    with pytest.raises(ValueError, match="max_seqlen must be"):
        call(max_seqlen=-1)
    with pytest.raises(TypeError, match="scale must be a float"):
        call(scale="0.1")
    with pytest.raises(ValueError, match="scale must be positive"):
        call(scale=-1.0)
    with pytest.raises(ValueError, match="out must have shape"):
        call(out=F((100, 8, 64)))
    with pytest.raises(ValueError, match="lse must have shape"):
        call(lse=F((100, 8), "float32"))
    with pytest.raises(ValueError, match="one device"):
        call(cu_seqlens=F((3,), "int32", device="cuda:1"))
    with pytest.raises(ValueError, match="on a CUDA device"):
        call(q=FakeCudaTensor((100, 8, 128), device="cpu"))
    with pytest.raises(AssertionError, match="launched"):  # a token-strided view: accepted
        call(q=F((100, 8, 128), strides=(3 * 8 * 128, 128, 1)))


def test_dense_and_decode_checks(no_launch):
    q, kv = F((2, 8, 64, 128)), F((2, 2, 64, 128))
    with pytest.raises(ValueError, match="k and v must have shape"):
        attn.flash_attn(q, F((2, 2, 32, 128)), kv)
    with pytest.raises(ValueError, match="multiple of the KV heads"):
        attn.flash_attn(q, F((2, 3, 64, 128)), F((2, 3, 64, 128)))
    with pytest.raises(AssertionError, match="launched"):
        attn.flash_attn(q, kv, kv)

    def dec(**changes):
        args = dict(q=F((4, 8, 128)), k_cache=F((4, 256, 2, 128)),
                    v_cache=F((4, 256, 2, 128)), lengths=F((4,), "int32"), num_sms=132)
        return attn.flash_decode(**{**args, **changes})

    with pytest.raises(TypeError, match="lengths must be int32"):
        dec(lengths=F((4,)))
    with pytest.raises(ValueError, match="lengths must have shape"):
        dec(lengths=F((3,), "int32"))
    with pytest.raises(ValueError, match="k_cache and v_cache must have shape"):
        dec(v_cache=F((4, 128, 2, 128)))
    with pytest.raises(ValueError, match="at most 64 query heads"):
        dec(q=F((4, 256, 128)), k_cache=F((4, 256, 2, 128)), v_cache=F((4, 256, 2, 128)))
    with pytest.raises(ValueError, match="n_splits must be a positive int"):
        dec(n_splits=0)
    with pytest.raises(ValueError, match="lengths must be contiguous"):
        dec(lengths=F((4,), "int32", strides=(2,)))
    with pytest.raises(AssertionError, match="launched"):
        dec()
