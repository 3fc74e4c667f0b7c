"""kl.cluster_gather on the CPU: the [cluster size, *shape] tile in rank order through the
interpreter (sums over the cluster, exact copies of 2-D, integer and boolean tiles), the
PTX every arch gets (one publish, two cluster barriers in all, one mapa +
ld.shared::cluster per run of the result) and the front end's errors at the user's line."""

import os

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.compiler.compiler import compiler_available
from kiln.testing import interpret, source_line

HERE = os.path.abspath(__file__)
ARCHS = ["sm_90a", "sm_100a", "sm_103a"]

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


@kiln.jit(cluster=(4, 1, 1))
def gather_sum(x_ptr, y_ptr, BLOCK: kl.constexpr):
    """y[block p] = the sum over the programs q of p's cluster of x[block q]."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(y_ptr + offs, kl.sum(kl.cluster_gather(kl.load(x_ptr + offs)), axis=0))


@kiln.jit(cluster=(2, 1, 1))
def gather_copy(x_ptr, m_ptr, y_ptr, n_ptr, S: kl.constexpr, R: kl.constexpr,
                C: kl.constexpr):
    """y[p] = the [S, R, C] tile of x's [R, C] blocks of p's cluster of S (and a boolean
    tile)."""
    pid = kl.program_id(0)
    rows = kl.arange(0, R)[:, None]
    cols = kl.arange(0, C)[None, :]
    offs = pid * R * C + rows * C + cols
    g = kl.cluster_gather(kl.load(x_ptr + offs))
    b = kl.cluster_gather(kl.load(m_ptr + offs) != 0)
    ranks = kl.arange(0, S)[:, None, None]
    out = pid * S * R * C + ranks * (R * C) + (rows * C + cols)[None, :, :]
    kl.store(y_ptr + out, g)
    kl.store(n_ptr + out, b.to(kl.int8))


@kiln.jit
def gather_alone(x_ptr, y_ptr, BLOCK: kl.constexpr):
    """Without a cluster: a [1, BLOCK] tile of the program's own x."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    g = kl.cluster_gather(kl.load(x_ptr + offs))
    kl.store(y_ptr + offs[None, :], g)


# ---------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [2, 4, 8])
def test_interpreter_cluster_gather_sum(size):
    block, clusters = 64, 3
    n = block * size * clusters
    x = np.random.default_rng(size).standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    interpret(gather_sum, (n // block,), x, y, BLOCK=block, cluster=(size, 1, 1))
    parts = x.reshape(clusters, size, block)
    expect = np.repeat(parts.sum(axis=1, dtype=np.float32)[:, None, :], size, axis=1)
    np.testing.assert_allclose(y.reshape(clusters, size, block), expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [2, 4, 8])
def test_interpreter_cluster_gather_copies_in_rank_order(size):
    r, c = 4, 8
    programs = 2 * size
    x = np.arange(programs * r * c, dtype=np.int32)
    m = (x % 3 == 0).astype(np.int8)
    y = np.zeros(programs * size * r * c, np.int32)
    n = np.zeros_like(y, dtype=np.int8)
    interpret(gather_copy, (programs,), x, m, y, n, S=size, R=r, C=c, cluster=(size, 1, 1))
    blocks = x.reshape(programs // size, size, r * c)
    expect = np.repeat(blocks[:, None], size, axis=1).reshape(-1)
    np.testing.assert_array_equal(y, expect)
    np.testing.assert_array_equal(n, (expect % 3 == 0).astype(np.int8))


def test_interpreter_cluster_gather_without_a_cluster():
    x = np.arange(64, dtype=np.float32)
    y = np.zeros_like(x)
    interpret(gather_alone, (4,), x, y, BLOCK=16)
    np.testing.assert_array_equal(y, x)


# ---------------------------------------------------------------------------
# Compiled
# ---------------------------------------------------------------------------


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
def test_cluster_gather_ptx(arch):
    ck = gather_sum.compile({"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 512},
                            divisibility=["x_ptr", "y_ptr"], arch=arch)
    assert ck.meta["cluster"] == [4, 1, 1]
    assert "tile.cluster_gather" in ck.tile_ir and "-> tensor<4x512xf32>" in ck.tile_ir
    ptx = ck.ptx
    # one publish, ONE barrier before the reads and one after, whatever the cluster size
    assert ptx.count("barrier.cluster.arrive.aligned") == 2
    assert ptx.count("barrier.cluster.wait.aligned") == 2
    assert "mapa.shared::cluster" in ptx and "ld.shared::cluster" in ptx
    assert ck.cubin[:4] == b"\x7fELF"


@needs_compiler
@pytest.mark.parametrize("size", [1, 2, 8])
def test_cluster_gather_compiles_for_every_size(size):
    ck = gather_sum.compile({"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 256},
                            divisibility=["x_ptr", "y_ptr"], arch="sm_90a",
                            cluster=(size, 1, 1))
    assert f"-> tensor<{size}x256xf32>" in ck.tile_ir
    assert ck.ptx.count("barrier.cluster.arrive.aligned") == 2


@needs_compiler
def test_cluster_gather_2d_and_bool_ptx():
    ck = gather_copy.compile({"x_ptr": "*i32", "m_ptr": "*i8", "y_ptr": "*i32", "n_ptr": "*i8"},
                             {"S": 2, "R": 4, "C": 8}, arch="sm_100a", upto="ptx")
    assert "-> tensor<2x4x8xi32>" in ck.tile_ir and "-> tensor<2x4x8xi1>" in ck.tile_ir
    assert ck.ptx.count("barrier.cluster.arrive.aligned") == 4


# ---------------------------------------------------------------------------
# Front-end errors
# ---------------------------------------------------------------------------


@kiln.jit(cluster=(2, 1, 1))
def _e_gather_scalar(x_ptr):
    kl.store(x_ptr, kl.sum(kl.cluster_gather(kl.load(x_ptr)), axis=0))  # E-cg-scalar


@kiln.jit(cluster=(2, 1, 1))
def _e_gather_ptrs(x_ptr):
    o = kl.arange(0, 16)
    p = kl.cluster_gather(x_ptr + o)  # E-cg-ptrs
    kl.store(p, 1.0)


@kiln.jit(cluster=(3, 1, 1))
def _e_gather_size(x_ptr):
    o = kl.arange(0, 16)
    kl.store(x_ptr + o, kl.sum(kl.cluster_gather(kl.load(x_ptr + o)), axis=0))  # E-cg-size


ERRORS = [
    (_e_gather_scalar, "E-cg-scalar", "cluster_gather needs a tile, got a scalar f32"),
    (_e_gather_ptrs, "E-cg-ptrs", "cluster_gather moves numbers, not pointers"),
    (_e_gather_size, "E-cg-size",
     "which must be a power of two; the cluster 3x1x1 has 3 programs"),
]


@needs_compiler
@pytest.mark.parametrize("kernel,marker,message", ERRORS)
def test_cluster_gather_errors_at_the_line(kernel, marker, message):
    with pytest.raises(CompilationError) as info:
        kernel.compile({"x_ptr": "*f32"}, upto="tile")
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)


@pytest.mark.parametrize("kernel,marker,message", ERRORS)
def test_interpreter_reports_the_same_cluster_gather_errors(kernel, marker, message):
    with pytest.raises(CompilationError) as info:
        interpret(kernel, (kernel.cluster[0],), np.zeros(16, np.float32))
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)
