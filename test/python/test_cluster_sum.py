"""kl.cluster_sum on the CPU: elementwise sums over the cluster's programs in rank order
through the interpreter (floats bit for bit against numpy's rank-order sum, wrapping int32,
a tuple of tiles in one call, a cluster of one, 16 programs), the PTX every arch gets (one
publish, two cluster barriers, the thread's own elements read from every rank and added:
no shuffle, no block barrier) and the front end's errors at the user's line."""

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
def sum_two(x_ptr, n_ptr, y_ptr, m_ptr, BLOCK: kl.constexpr, R: kl.constexpr,
            C: kl.constexpr):
    """y[block p] = the sum over p's cluster of x[block q] (f32, [BLOCK]); m[p] the same of
    the [R, C] int32 blocks of n, both in one cluster_sum."""
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    rc = pid * R * C + kl.arange(0, R)[:, None] * C + kl.arange(0, C)[None, :]
    s, t = kl.cluster_sum((kl.load(x_ptr + offs), kl.load(n_ptr + rc)))
    kl.store(y_ptr + offs, s)
    kl.store(m_ptr + rc, t)


@kiln.jit(cluster=(2, 1, 1))
def sum_one(x_ptr, y_ptr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(y_ptr + offs, kl.cluster_sum(kl.load(x_ptr + offs)))


def rank_order_sum(parts):
    """parts [clusters, size, ...]: the lowering's order, rank 0 first."""
    acc = parts[:, 0].copy()
    for r in range(1, parts.shape[1]):
        acc = acc + parts[:, r]
    return acc


@pytest.mark.parametrize("size", [1, 2, 4, 8, 16])
def test_interpreter_cluster_sum_in_rank_order(size):
    block, r, c, clusters = 8, 4, 32, 3
    programs = size * clusters
    rng = np.random.default_rng(size)
    x = (rng.standard_normal(programs * block) * 1e3).astype(np.float32)
    n = rng.integers(-2**31, 2**31, programs * r * c, dtype=np.int64).astype(np.int32)
    y, m = np.zeros_like(x), np.zeros_like(n)
    interpret(sum_two, (programs,), x, n, y, m, BLOCK=block, R=r, C=c, cluster=(size, 1, 1))
    want = rank_order_sum(x.reshape(clusters, size, block))
    np.testing.assert_array_equal(y.reshape(clusters, size, block),
                                  np.repeat(want[:, None], size, axis=1))
    with np.errstate(over="ignore"):
        want_n = rank_order_sum(n.reshape(clusters, size, r * c))  # wraps as int32
    np.testing.assert_array_equal(m.reshape(clusters, size, r * c),
                                  np.repeat(want_n[:, None], size, axis=1))


def test_interpreter_cluster_sum_of_one_tile():
    x = np.arange(64, dtype=np.float32)
    y = np.zeros_like(x)
    interpret(sum_one, (4,), x, y, BLOCK=16)
    parts = x.reshape(2, 2, 16)
    np.testing.assert_array_equal(y.reshape(2, 2, 16),
                                  np.repeat((parts[:, 0] + parts[:, 1])[:, None], 2, axis=1))


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
def test_cluster_sum_ptx(arch):
    ck = sum_two.compile({"x_ptr": "*f32", "n_ptr": "*i32", "y_ptr": "*f32", "m_ptr": "*i32"},
                         {"BLOCK": 8, "R": 4, "C": 32},
                         divisibility=["x_ptr", "n_ptr", "y_ptr", "m_ptr"], arch=arch)
    assert "tile.cluster_sum" in ck.tile_ir
    ptx = ck.ptx
    assert ptx.count("barrier.cluster.arrive.aligned") == 2
    assert ptx.count("barrier.cluster.wait.aligned") == 2
    # every rank's buffers mapped (ranks 0..3 are constants) and read; nothing else moves
    for rank in range(4):
        assert any(line.strip().endswith(f", {rank};") for line in ptx.splitlines()
                   if "mapa.shared::cluster" in line), rank
    assert "ld.shared::cluster" in ptx
    assert "shfl.sync" not in ptx and "bar.sync" not in ptx
    assert ck.cubin[:4] == b"\x7fELF"


@kiln.jit(cluster=(2, 1, 1))
def _e_sum_bf16(x_ptr):
    o = kl.arange(0, 16)
    kl.store(x_ptr + o, kl.cluster_sum(kl.load(x_ptr + o)))  # E-cs-bf16


@kiln.jit(cluster=(2, 1, 1))
def _e_sum_scalar(x_ptr):
    kl.store(x_ptr, kl.cluster_sum(kl.load(x_ptr)))  # E-cs-scalar


@kiln.jit(cluster=(2, 1, 1))
def _e_sum_empty(x_ptr):
    kl.cluster_sum(())  # E-cs-empty


ERRORS = [
    (_e_sum_bf16, "*bf16", "E-cs-bf16",
     "cluster_sum adds 32- or 64-bit numbers, got a tile of bf16"),
    (_e_sum_scalar, "*f32", "E-cs-scalar", "cluster_sum needs a tile, got a scalar f32"),
    (_e_sum_empty, "*f32", "E-cs-empty", "cluster_sum needs a tile or a tuple of tiles"),
]


@needs_compiler
@pytest.mark.parametrize("kernel,ptr,marker,message", ERRORS)
def test_cluster_sum_errors_at_the_line(kernel, ptr, marker, message):
    with pytest.raises(CompilationError) as info:
        kernel.compile({"x_ptr": ptr}, upto="tile")
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)
