"""Attention's softmax in the wgmma accumulator layout and the register-A p·v dot: the
CPU interpreter against numpy, and the PTX per arch (sm_90a: the reductions in registers,
p as the register A of wgmma, no layout conversion in the loop). No GPU and no torch
needed (test/gpu/test_attention_layouts.py runs the same kernels on the device)."""

import math
import os
import sys

import numpy as np
import pytest

from kiln.testing import interpret

_C = pytest.importorskip("kiln._C")
ml_dtypes = pytest.importorskip("ml_dtypes")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
from attention_layout_kernels import attention_rows, softmax_rows  # noqa: E402

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
LOG2E = 1.0 / math.log(2.0)
_ATTN_SIG = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "o_ptr": "*f32",
             "n_keys": "i32", "qk_scale": "fp32"}
_SOFTMAX_SIG = {"q_ptr": "*bf16", "k_ptr": "*bf16", "p_ptr": "*f32", "m_ptr": "*f32",
                "l_ptr": "*f32", "qk_scale": "fp32"}


def _pointers(sig):
    return [k for k, v in sig.items() if v.startswith("*")]


def _bf16(rng, *shape):
    return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)


def test_softmax_rows_interpreter():
    rng = np.random.default_rng(0)
    bm, bn, d = 64, 64, 64
    q, k = _bf16(rng, bm, d), _bf16(rng, bn, d)
    p = np.full((bm, bn), np.nan, np.float32)
    m = np.full(bm, np.nan, np.float32)
    l_row = np.full(bm, np.nan, np.float32)
    scale = LOG2E / math.sqrt(d)
    interpret(softmax_rows, (1,), q, k, p, m, l_row, np.float32(scale), BM=bm, BN=bn, D=d)
    s = q.astype(np.float64) @ k.astype(np.float64).T
    m_ref = s.max(axis=1) * scale
    p_ref = np.exp2(s * scale - m_ref[:, None])
    np.testing.assert_allclose(m, m_ref, rtol=0, atol=1e-4)
    np.testing.assert_allclose(p, p_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(l_row, p_ref.sum(axis=1), rtol=1e-4)


def test_attention_rows_interpreter():
    rng = np.random.default_rng(1)
    bm, bn, d, n = 64, 64, 64, 192
    q, k, v = _bf16(rng, 2 * bm, d), _bf16(rng, n, d), _bf16(rng, n, d)
    o = np.full((2 * bm, d), np.nan, np.float32)
    interpret(attention_rows, (2,), q, k, v, o, n, np.float32(LOG2E / math.sqrt(d)), BM=bm,
              BN=bn, D=d)
    s = q.astype(np.float64) @ k.astype(np.float64).T / math.sqrt(d)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    ref = (w / w.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(o, ref, rtol=0, atol=2.0**-8 * np.abs(v.astype(np.float64)).max())


@pytest.mark.parametrize("bm,num_warps", [(64, 4), (128, 8)])
def test_attention_loop_stays_in_registers_on_sm90(bm, num_warps):
    """The loop keeps s, p and the accumulator in the wgmma layout, m and l in its slice:
    the tile IR after kiln-tile-accelerate-dot has no conversion in the loop; the PTX
    reads nothing back from shared memory between the q kᵀ wgmmas and the p·v wgmmas,
    which take p from registers (BN / 16 k16 steps a 64-row slab)."""
    bn = d = 64
    ck = attention_rows.compile(_ATTN_SIG, {"BM": bm, "BN": bn, "D": d}, _pointers(_ATTN_SIG),
                                num_warps=num_warps, arch="sm_90a", upto="cubin")
    ptx = ck.ptx
    register_a = [line for line in ptx.splitlines()
                  if "wgmma.mma_async" in line and "}, {%r" in line]
    assert len(register_a) == bn // 16 * (bm // 64 // (num_warps // 4))
    first = ptx.index("wgmma.mma_async")
    last = ptx.index(register_a[-1])
    between = ptx[first:last]
    assert "ld.shared" not in between
    assert "shfl.sync.bfly.b32" in between
    assert ck.cubin[:4] == b"\x7fELF"


def test_attention_64_rows_on_8_warps_split_n(monkeypatch):
    """BM = 64 on 8 warps: wgmma's 64 rows a warpgroup leave the second warpgroup no rows, so
    the two split each dot's columns (kiln-tile-accelerate-dot's split-n,
    test/Dialect/Tile/accelerate-dot-split-n.mlir): m64n64k16 each, both dots staged. With
    KILN_SPLIT_N=0 both stay on mma.sync, each saying why."""
    ck = attention_rows.compile(_ATTN_SIG, {"BM": 64, "BN": 128, "D": 128},
                                _pointers(_ATTN_SIG), num_warps=8, arch="sm_90a", upto="cubin")
    assert [d["unit"] for d in ck.meta["targets"]["sm_90a"]["dots"]] == ["wgmma staged"] * 2
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in ck.ptx
    assert "mma.sync" not in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"
    monkeypatch.setenv("KILN_SPLIT_N", "0")
    ck = attention_rows.compile(_ATTN_SIG, {"BM": 64, "BN": 128, "D": 128},
                                _pointers(_ATTN_SIG), num_warps=8, arch="sm_90a", upto="cubin")
    dots = ck.meta["targets"]["sm_90a"]["dots"]
    assert [d["unit"] for d in dots] == ["mma.sync"] * 2
    assert all("not a multiple of 64 rows a warpgroup (2 warpgroups)" in d["reason"]
               for d in dots)
    assert "wgmma" not in ck.ptx
    monkeypatch.setenv("KILN_SPLIT_N", "yes")
    with pytest.raises(ValueError, match="KILN_SPLIT_N must be 0 or 1"):
        attention_rows.compile(_ATTN_SIG, {"BM": 64, "BN": 128, "D": 128},
                               _pointers(_ATTN_SIG), num_warps=8, arch="sm_90a", upto="cubin")


@pytest.mark.parametrize("arch", ARCHS[1:])
def test_attention_compiles_on_blackwell(arch):
    """sm_100a/sm_103a: at BM = 64 (below tcgen05's M = 128) both dots stay on mma.sync, each
    saying why; at BM = 128 both run on tcgen05 (staged), the accumulators in Tensor
    Memory read back with tcgen05.ld."""
    ck = attention_rows.compile(_ATTN_SIG, {"BM": 64, "BN": 64, "D": 64},
                                _pointers(_ATTN_SIG), num_warps=4, arch=arch, upto="cubin")
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ck.ptx
    assert "wgmma" not in ck.ptx
    assert all(d["unit"] == "mma.sync" and "M = 128" in d["reason"]
               for d in ck.meta["targets"][arch]["dots"])
    assert ck.cubin[:4] == b"\x7fELF"
    ck = attention_rows.compile(_ATTN_SIG, {"BM": 128, "BN": 64, "D": 64},
                                _pointers(_ATTN_SIG), num_warps=4, arch=arch, upto="cubin")
    assert [d["unit"] for d in ck.meta["targets"][arch]["dots"]] == ["tcgen05 staged"] * 2
    assert "mma.sync" not in ck.ptx and "tcgen05.ld.sync.aligned.32x32b" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ARCHS)
def test_softmax_rows_compiles(arch):
    ck = softmax_rows.compile(_SOFTMAX_SIG, {"BM": 128, "BN": 128, "D": 64},
                              _pointers(_SOFTMAX_SIG), num_warps=8, arch=arch, upto="cubin")
    if arch == "sm_90a":
        assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ck.ptx
        assert "shfl.sync.bfly.b32" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"
