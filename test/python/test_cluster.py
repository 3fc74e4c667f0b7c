"""Thread-block clusters on the CPU: the ``cluster`` option (validation, specialization
key, metadata, AOT specs, the grid check before any launch), the front end's errors for
the cluster builtins, the PTX every arch gets, and the interpreter, which runs the
programs of a cluster concurrently so that cluster barriers and ``cluster_load`` work."""

import os

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.compiler.compiler import Specialization, compiler_available, normalize_cluster
from kiln.testing import interpret, source_line

HERE = os.path.abspath(__file__)
ARCHS = ["sm_90a", "sm_100a", "sm_103a"]
SHAPES = [(2, 1, 1), (4, 1, 1), (2, 2, 1), (1, 2, 2), (8, 1, 1)]

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


@kiln.jit(num_warps=1, cluster=(2, 1, 1))
def cluster_ids(out_ptr):
    """out[program, :] = cluster id (3), number of clusters (3), index in the cluster (3),
    rank, size."""
    pid = (kl.program_id(2) * kl.num_programs(1) + kl.program_id(1)) * kl.num_programs(0) \
        + kl.program_id(0)
    base = out_ptr + pid * 11
    kl.store(base + 0, kl.cluster_id(0))
    kl.store(base + 1, kl.cluster_id(1))
    kl.store(base + 2, kl.cluster_id(2))
    kl.store(base + 3, kl.num_clusters(0))
    kl.store(base + 4, kl.num_clusters(1))
    kl.store(base + 5, kl.num_clusters(2))
    kl.store(base + 6, kl.cluster_cta_id(0))
    kl.store(base + 7, kl.cluster_cta_id(1))
    kl.store(base + 8, kl.cluster_cta_id(2))
    kl.store(base + 9, kl.cluster_cta_rank())
    kl.store(base + 10, kl.cluster_size())


@kiln.jit(cluster=(4, 1, 1))
def cluster_sum(x_ptr, y_ptr, BLOCK: kl.constexpr):
    """y[block p] = the sum over the programs q of p's cluster of x[block q]."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    partial = kl.load(x_ptr + offs)
    total = kl.cluster_load(partial, 0)
    for r in range(1, kl.cluster_size()):
        total += kl.cluster_load(partial, r)
    kl.store(y_ptr + offs, total)


@kiln.jit(cluster=(2, 1, 1))
def cluster_rotate(x_ptr, m_ptr, y_ptr, n_ptr, BLOCK: kl.constexpr):
    """Each program gets the tile (and a boolean tile) of the next rank of its cluster."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    nxt = (kl.cluster_cta_rank() + 1) % kl.cluster_size()
    kl.store(y_ptr + offs, kl.cluster_load(kl.load(x_ptr + offs), nxt))
    kl.store(n_ptr + offs, kl.cluster_load(kl.load(m_ptr + offs) != 0, nxt).to(kl.int8))


@kiln.jit(cluster=(2, 1, 1))
def cluster_flag(x_ptr, y_ptr):
    """Program rank 0 writes x[0]; after a cluster barrier rank 1 reads it."""
    if kl.cluster_cta_rank() == 0:
        kl.store(x_ptr + kl.cluster_id(0), kl.cluster_id(0) + 100)
    kl.cluster_barrier()
    if kl.cluster_cta_rank() == 1:
        kl.store(y_ptr + kl.cluster_id(0), kl.load(x_ptr + kl.cluster_id(0)))


class FakeCudaArray:
    def __init__(self, n):
        self.shape = (n,)
        self.dtype = "float32"
        self.__cuda_array_interface__ = {"data": (0x7F0000000000, False), "typestr": "<f4",
                                         "shape": self.shape, "version": 3}


def expected_ids(grid, cluster):
    rows = []
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                pid = (x, y, z)
                cid = [p // c for p, c in zip(pid, cluster)]
                ncl = [g // c for g, c in zip(grid, cluster)]
                idx = [p % c for p, c in zip(pid, cluster)]
                rank = idx[0] + idx[1] * cluster[0] + idx[2] * cluster[0] * cluster[1]
                rows.append(cid + ncl + idx + [rank, cluster[0] * cluster[1] * cluster[2]])
    return np.array(rows, dtype=np.int32)


# ---------------------------------------------------------------------------
# The cluster option
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("value,expected", [
    (None, (1, 1, 1)), (2, (2, 1, 1)), ((4,), (4, 1, 1)), ((2, 2), (2, 2, 1)),
    ([2, 2, 2], (2, 2, 2)), ((8, 1, 1), (8, 1, 1)), ((3, 1, 1), (3, 1, 1)),
    (16, (16, 1, 1)), ((4, 4), (4, 4, 1)), ((2, 2, 4), (2, 2, 4)),  # non-portable sizes
])
def test_cluster_shapes_are_normalized(value, expected):
    assert normalize_cluster(value) == expected


@pytest.mark.parametrize("value,exc,message", [
    ((0, 1, 1), ValueError, "must be positive"),
    ((-2,), ValueError, "must be positive"),
    ((4, 4, 2), ValueError, "(4, 4, 2) has 32 programs; at most 16"),
    ((17,), ValueError, "has 17 programs; at most 16 (the non-portable cluster size)"),
    ((1, 1, 1, 1), TypeError, "1 to 3 positive ints"),
    ((), TypeError, "1 to 3 positive ints"),
    ("2", TypeError, "1 to 3 positive ints"),
    ((2.0, 1, 1), TypeError, "1 to 3 positive ints"),
    (True, TypeError, "1 to 3 positive ints"),
])
def test_bad_cluster_shapes_raise(value, exc, message):
    with pytest.raises(exc) as info:
        kiln.jit(cluster=value)(cluster_sum.fn)
    assert message in str(info.value)
    assert "kernel 'cluster_sum': cluster" in str(info.value)
    with pytest.raises(exc):
        Specialization.make({"x": "*f32"}, cluster=value)


def test_cluster_is_part_of_the_specialization_key():
    plain = Specialization.make({"x": "*f32"}, constexprs={"BLOCK": 4})
    one = Specialization.make({"x": "*f32"}, constexprs={"BLOCK": 4}, cluster=(1, 1, 1))
    two = Specialization.make({"x": "*f32"}, constexprs={"BLOCK": 4}, cluster=2)
    twod = Specialization.make({"x": "*f32"}, constexprs={"BLOCK": 4}, cluster=(1, 2, 1))
    assert plain.key() == one.key() and "cluster" not in plain.key()  # old keys unchanged
    assert two.key().endswith("|cluster=2x1x1") and twod.key().endswith("|cluster=1x2x1")
    assert len({plain.key(), two.key(), twod.key()}) == 3
    assert cluster_sum.cache_key(two, "sm_90a") != cluster_sum.cache_key(plain, "sm_90a")


def test_launch_override_specializes():
    args = (FakeCudaArray(4), FakeCudaArray(4))
    spec, _, _ = cluster_sum.specialize(args, {"BLOCK": 4})
    assert spec.cluster == (4, 1, 1)
    spec, _, _ = cluster_sum.specialize(args, {"BLOCK": 4}, cluster=(2, 2))
    assert spec.cluster == (2, 2, 1)
    with pytest.raises(ValueError, match="kernel 'cluster_sum': cluster .* at most 16"):
        cluster_sum.specialize(args, {"BLOCK": 4}, cluster=(3, 3, 2))


@pytest.mark.parametrize("grid,cluster,message", [
    ((3,), None, "grid (3, 1, 1) is not a multiple of the cluster shape (4, 1, 1)"),
    ((4, 3), (2, 2, 1), "grid (4, 3, 1) is not a multiple of the cluster shape (2, 2, 1)"),
])
def test_grid_not_a_multiple_of_the_cluster_raises_before_launch(grid, cluster, message):
    """Raised before anything is compiled or any CUDA call (no GPU here)."""
    pytest.importorskip("kiln._runtime")
    with pytest.raises(ValueError) as info:
        cluster_sum.run(grid, FakeCudaArray(64), FakeCudaArray(64), BLOCK=4, cluster=cluster)
    assert message in str(info.value) and "kernel 'cluster_sum'" in str(info.value)
    x = np.zeros(64, np.float32)
    with pytest.raises(ValueError) as info:
        interpret(cluster_sum, grid, x, x.copy(), BLOCK=4, cluster=cluster)
    assert message in str(info.value)


# ---------------------------------------------------------------------------
# Compiled: metadata, PTX, AOT
# ---------------------------------------------------------------------------


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
def test_cluster_kernel_ptx_and_metadata(arch):
    ck = cluster_sum.compile({"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 512},
                             divisibility=["x_ptr", "y_ptr"], arch=arch)
    assert ck.meta["cluster"] == [4, 1, 1]
    assert "|cluster=4x1x1" in ck.meta["specialization"]
    assert "tile.cluster_dims = array<i32: 4, 1, 1>" in ck.tile_ir
    ptx = ck.ptx
    assert ".explicitcluster" in ptx and ".reqnctapercluster 4, 1, 1" in ptx
    assert "%cluster_nctarank" not in ptx  # folded: the cluster shape is known
    assert "st.shared.v4.b32" in ptx or "st.shared.v2.b64" in ptx  # 16 bytes per thread
    assert "mapa.shared::cluster.u64" in ptx
    assert "ld.shared::cluster.v4.b32" in ptx
    # two cluster barriers per cluster_load
    assert ptx.count("barrier.cluster.arrive.aligned") >= 4
    assert ptx.count("barrier.cluster.wait.aligned") >= 4
    assert ck.cubin[:4] == b"\x7fELF"


@needs_compiler
def test_cluster_ids_ptx_and_override():
    ck = cluster_ids.compile({"out_ptr": "*i32"}, arch="sm_90a", upto="ptx", cluster=(2, 2, 1))
    assert ck.meta["cluster"] == [2, 2, 1]
    assert ".reqnctapercluster 2, 2, 1" in ck.ptx
    for reg in ("%clusterid.x", "%clusterid.y", "%clusterid.z", "%nclusterid.x",
                "%nclusterid.y", "%nclusterid.z", "%cluster_ctaid.x", "%cluster_ctaid.y",
                "%cluster_ctarank"):
        assert reg in ck.ptx, reg
    assert "%cluster_ctaid.z" not in ck.ptx  # a unit cluster axis folds to 0
    plain = cluster_ids.compile({"out_ptr": "*i32"}, arch="sm_90a", upto="ptx",
                                cluster=(1, 1, 1))
    assert plain.meta["cluster"] == [1, 1, 1]
    assert ".reqnctapercluster" not in plain.ptx and ".explicitcluster" not in plain.ptx
    assert "%cluster_nctarank" in plain.ptx and "%cluster_ctarank" in plain.ptx


@needs_compiler
def test_cluster_barrier_ptx():
    ck = cluster_flag.compile({"x_ptr": "*i32", "y_ptr": "*i32"}, arch="sm_100a")
    assert "barrier.cluster.arrive.aligned;" in ck.ptx
    assert "barrier.cluster.wait.aligned;" in ck.ptx
    assert "mapa" not in ck.ptx


@needs_compiler
def test_aot_spec_cluster(tmp_path):
    pytest.importorskip("kiln._runtime")
    from kiln import aot

    specs = [aot.Spec(cluster_sum, signature={"x_ptr": "*f32", "y_ptr": "*f32"},
                      constexprs={"BLOCK": 256}),
             aot.Spec(cluster_sum, name="cluster_sum_2x2",
                      signature={"x_ptr": "*f32", "y_ptr": "*f32"},
                      constexprs={"BLOCK": 256}, cluster=(2, 2, 1))]
    assert specs[0].sort_key()[1].endswith("|cluster=4x1x1")
    assert specs[1].sort_key()[1].endswith("|cluster=2x2x1")
    path = str(tmp_path / "cluster.kbundle")
    images = aot.build(specs, ["sm_90a"], path, jobs=1, log=lambda s: None)
    assert [img.meta["cluster"] for img in images] == [[4, 1, 1], [2, 2, 1]]
    bundle = kiln.Bundle(path)
    assert sorted(k["cluster"] for k in bundle.kernels()) == [[2, 2, 1], [4, 1, 1]]
    assert "cluster 2x2x1" in bundle.describe() and "cluster 4x1x1" in bundle.describe()


# ---------------------------------------------------------------------------
# Front-end errors
# ---------------------------------------------------------------------------


@kiln.jit(cluster=(2, 1, 1))
def _e_cluster_axis(x_ptr):
    kl.store(x_ptr, kl.cluster_id(3))  # E-cluster-axis


@kiln.jit(cluster=(2, 1, 1))
def _e_cluster_cta_axis(x_ptr, n):
    kl.store(x_ptr, kl.cluster_cta_id(n))  # E-cluster-cta-axis


@kiln.jit(cluster=(2, 1, 1))
def _e_cluster_load_scalar(x_ptr):
    kl.store(x_ptr, kl.cluster_load(kl.load(x_ptr), 0))  # E-cl-scalar


@kiln.jit(cluster=(2, 1, 1))
def _e_cluster_load_rank(x_ptr):
    o = kl.arange(0, 16)
    kl.store(x_ptr + o, kl.cluster_load(kl.load(x_ptr + o), 2))  # E-cl-rank


@kiln.jit(cluster=(2, 1, 1))
def _e_cluster_load_ptrs(x_ptr):
    o = kl.arange(0, 16)
    p = kl.cluster_load(x_ptr + o, 1)  # E-cl-ptrs
    kl.store(p, 1.0)


@kiln.jit(cluster=(2, 1, 1))
def _e_cluster_load_tile_rank(x_ptr):
    o = kl.arange(0, 16)
    kl.store(x_ptr + o, kl.cluster_load(kl.load(x_ptr + o), o))  # E-cl-tile-rank


@kiln.jit(cluster=(2, 1, 1))
def _e_cluster_load_float_rank(x_ptr):
    o = kl.arange(0, 16)
    kl.store(x_ptr + o, kl.cluster_load(kl.load(x_ptr + o), 1.0))  # E-cl-float-rank


ERRORS = [
    (_e_cluster_axis, "E-cluster-axis", "the cluster axis must be 0, 1 or 2, got 3"),
    (_e_cluster_cta_axis, "E-cluster-cta-axis", "the cluster axis must be a constexpr"),
    (_e_cluster_load_scalar, "E-cl-scalar", "cluster_load needs a tile, got a scalar f32"),
    (_e_cluster_load_rank, "E-cl-rank",
     "cluster_load: the rank must be in [0, 2) for a cluster of 2x1x1, got 2"),
    (_e_cluster_load_ptrs, "E-cl-ptrs", "cluster_load moves numbers, not pointers"),
    (_e_cluster_load_tile_rank, "E-cl-tile-rank", "cluster_load: the rank must be a scalar"),
    (_e_cluster_load_float_rank, "E-cl-float-rank",
     "cluster_load: the rank must be an integer, got 1.0"),
]


@needs_compiler
@pytest.mark.parametrize("kernel,marker,message", ERRORS)
def test_cluster_errors_at_the_line(kernel, marker, message):
    sig = {n: ("*f32" if n == "x_ptr" else "i32") for n in kernel.source.param_names}
    with pytest.raises(CompilationError) as info:
        kernel.compile(sig, upto="tile")
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)


@pytest.mark.parametrize("kernel,marker,message", ERRORS)
def test_interpreter_reports_the_same_cluster_errors(kernel, marker, message):
    args = [np.zeros(16, np.float32)] + [0] * (len(kernel.source.param_names) - 1)
    with pytest.raises(CompilationError) as info:
        interpret(kernel, (2,), *args)
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)


# ---------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cluster", SHAPES)
def test_interpreter_cluster_ids(cluster):
    grid = tuple(c * n for c, n in zip(cluster, (2, 3, 2)))
    out = np.full((int(np.prod(grid)), 11), -1, dtype=np.int32)
    interpret(cluster_ids, grid, out, cluster=cluster)
    np.testing.assert_array_equal(out, expected_ids(grid, cluster))


def test_interpreter_without_clusters():
    """Without a cluster shape each program is its own cluster of one."""
    grid = (3, 2, 1)
    out = np.full((6, 11), -1, dtype=np.int32)
    interpret(cluster_ids, grid, out, cluster=(1, 1, 1))
    np.testing.assert_array_equal(out, expected_ids(grid, (1, 1, 1)))


@pytest.mark.parametrize("cluster", [(2, 1, 1), (4, 1, 1), (8, 1, 1)])
def test_interpreter_cluster_sum(cluster):
    block, clusters = 64, 3
    n = block * cluster[0] * clusters
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    interpret(cluster_sum, (n // block,), x, y, BLOCK=block, cluster=cluster)
    parts = x.reshape(clusters, cluster[0], block)
    expect = np.repeat(parts.sum(axis=1, dtype=np.float32)[:, None, :], cluster[0], axis=1)
    np.testing.assert_allclose(y.reshape(clusters, cluster[0], block), expect, rtol=1e-6,
                               atol=1e-6)


def test_interpreter_cluster_load_of_another_rank():
    block, n = 32, 32 * 6
    x = np.arange(n, dtype=np.int32)
    m = (np.arange(n) % 3 == 0).astype(np.int8)
    y, nn = np.zeros_like(x), np.zeros_like(m)
    interpret(cluster_rotate, (n // block,), x, m, y, nn, BLOCK=block)
    src = np.arange(n // block) ^ 1  # the other program of each pair
    np.testing.assert_array_equal(y.reshape(-1, block), x.reshape(-1, block)[src])
    np.testing.assert_array_equal(nn.reshape(-1, block), m.reshape(-1, block)[src])


def test_interpreter_cluster_barrier_orders_memory():
    x = np.zeros(4, np.int32)
    y = np.zeros(4, np.int32)
    interpret(cluster_flag, (8,), x, y)
    np.testing.assert_array_equal(y, [100, 101, 102, 103])


@kiln.jit(cluster=(2, 1, 1))
def _exits_early(x_ptr):
    o = kl.arange(0, 16)
    if kl.cluster_cta_rank() == 0:
        kl.store(x_ptr + o, kl.cluster_load(kl.load(x_ptr + o), 1))  # E-exited


@kiln.jit(cluster=(2, 1, 1))
def _faults_while_the_other_waits(x_ptr, n):
    o = kl.arange(0, 16)
    if kl.cluster_cta_rank() == 1:
        kl.store(x_ptr + o + n, 1.0)  # E-fault
    kl.cluster_barrier()


@kiln.jit(cluster=(2, 1, 1))
def _rank_at_runtime(x_ptr, r):
    o = kl.arange(0, 16)
    kl.store(x_ptr + o, kl.cluster_load(kl.load(x_ptr + o), r))  # E-runtime-rank


def test_interpreter_reads_from_an_exited_program_is_an_error():
    """On the GPU the read would be undefined (the other block left the cluster)."""
    with pytest.raises(CompilationError) as info:
        interpret(_exits_early, (2,), np.zeros(16, np.float32))
    assert "the program of rank 1 in the cluster did not publish a tile" in info.value.message
    assert info.value.lineno == source_line(HERE, "E-exited")
    assert "(program (0, 0, 0))" in info.value.message


def test_interpreter_fault_in_a_cluster_does_not_hang():
    with pytest.raises(CompilationError) as info:
        interpret(_faults_while_the_other_waits, (2,), np.zeros(16, np.float32), 1000)
    assert info.value.lineno == source_line(HERE, "E-fault")
    assert "(program (1, 0, 0))" in info.value.message


def test_interpreter_runtime_rank_outside_the_cluster():
    with pytest.raises(CompilationError) as info:
        interpret(_rank_at_runtime, (2,), np.zeros(16, np.float32), 5)
    assert "cluster_load: rank 5 is outside the cluster of 2 programs" in info.value.message
    assert info.value.lineno == source_line(HERE, "E-runtime-rank")
