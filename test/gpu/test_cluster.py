"""Thread-block clusters on the GPU: the cluster ids and ranks every program reads against
the values computed from the grid, a cluster-wide sum through distributed shared memory
(kl.cluster_load, and kl.cluster_gather for clusters of 2, 4 and 8) against torch, a
rotation between the ranks (exact), a cluster barrier ordering global memory, the same
kernels from an AOT bundle, and a grid that is not a multiple of the cluster rejected
before the launch. Cluster shapes (2,1,1), (4,1,1), (2,2,1) and more."""

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402

SHAPES = [(2, 1, 1), (4, 1, 1), (2, 2, 1), (1, 2, 2), (8, 1, 1)]
#: more than 8 blocks: the non-portable sizes (the runtime opts in when it loads the kernel)
NON_PORTABLE = [(16, 1, 1), (4, 4, 1), (2, 2, 4)]


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


@kiln.jit(num_warps=4, cluster=(4, 1, 1))
def cluster_sum(x_ptr, y_ptr, BLOCK: kl.constexpr):
    """y[block of program p] = sum over the programs q of p's cluster of x[block of q]
    (programs numbered x fastest, then y, then z)."""
    pid = (kl.program_id(2) * kl.num_programs(1) + kl.program_id(1)) * kl.num_programs(0) \
        + kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    partial = kl.load(x_ptr + offs)
    total = kl.cluster_load(partial, 0)
    for r in range(1, kl.cluster_size()):
        total += kl.cluster_load(partial, r)
    kl.store(y_ptr + offs, total)


@kiln.jit(num_warps=4, cluster=(4, 1, 1))
def cluster_gather_sum(x_ptr, y_ptr, g_ptr, S: kl.constexpr, BLOCK: kl.constexpr):
    """g[program p] = the [S, BLOCK] tile of the x blocks of p's cluster in rank order
    (kl.cluster_gather: one publish, two cluster barriers); y[p] = its sum over axis 0."""
    pid = kl.program_id(0)
    offs = kl.arange(0, BLOCK)
    g = kl.cluster_gather(kl.load(x_ptr + pid * BLOCK + offs))
    kl.store(g_ptr + pid * S * BLOCK + kl.arange(0, S)[:, None] * BLOCK + offs[None, :], g)
    kl.store(y_ptr + pid * BLOCK + offs, kl.sum(g, axis=0))


@kiln.jit(num_warps=4, cluster=(2, 1, 1))
def cluster_gather_2d(x_ptr, m_ptr, y_ptr, n_ptr, S: kl.constexpr, R: kl.constexpr,
                      C: kl.constexpr):
    """y[p] = the [S, R, C] tile of the [R, C] x blocks of p's cluster (and a boolean tile)."""
    pid = kl.program_id(0)
    rows = kl.arange(0, R)[:, None]
    cols = kl.arange(0, C)[None, :]
    offs = pid * R * C + rows * C + cols
    g = kl.cluster_gather(kl.load(x_ptr + offs))
    b = kl.cluster_gather(kl.load(m_ptr + offs) != 0)
    out = pid * S * R * C + kl.arange(0, S)[:, None, None] * (R * C) + (rows * C + cols)[None, :, :]
    kl.store(y_ptr + out, g)
    kl.store(n_ptr + out, b.to(kl.int8))


@kiln.jit(num_warps=4, cluster=(2, 1, 1))
def cluster_rotate(x_ptr, m_ptr, y_ptr, n_ptr, ROWS: kl.constexpr, COLS: kl.constexpr):
    """Each program gets the [ROWS, COLS] tile (and a boolean tile) of the next rank."""
    pid = (kl.program_id(2) * kl.num_programs(1) + kl.program_id(1)) * kl.num_programs(0) \
        + kl.program_id(0)
    r = kl.arange(0, ROWS)[:, None]
    c = kl.arange(0, COLS)[None, :]
    offs = pid * ROWS * COLS + r * COLS + c
    nxt = (kl.cluster_cta_rank() + 1) % kl.cluster_size()
    kl.store(y_ptr + offs, kl.cluster_load(kl.load(x_ptr + offs), nxt))
    kl.store(n_ptr + offs, kl.cluster_load(kl.load(m_ptr + offs) != 0, nxt).to(kl.int8))


@kiln.jit(num_warps=2, cluster=(2, 1, 1))
def cluster_flag(x_ptr, y_ptr, BLOCK: kl.constexpr):
    """Rank 0 writes a block of global memory; after a cluster barrier rank 1 reads it."""
    c = kl.cluster_id(0)
    offs = c * BLOCK + kl.arange(0, BLOCK)
    if kl.cluster_cta_rank() == 0:
        kl.store(x_ptr + offs, offs * 3 + 1)
    kl.cluster_barrier()
    if kl.cluster_cta_rank() == 1:
        kl.store(y_ptr + offs, kl.load(x_ptr + offs))


@kiln.jit(num_warps=4, cluster=(4, 1, 1))
def cluster_sum_two(x_ptr, n_ptr, y_ptr, m_ptr, BLOCK: kl.constexpr, R: kl.constexpr,
                    C: kl.constexpr):
    """kl.cluster_sum of a [BLOCK] f32 tile and an [R, C] int32 tile in one call."""
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    rc = pid * R * C + kl.arange(0, R)[:, None] * C + kl.arange(0, C)[None, :]
    s, t = kl.cluster_sum((kl.load(x_ptr + offs), kl.load(n_ptr + rc)))
    kl.store(y_ptr + offs, s)
    kl.store(m_ptr + rc, t)


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
    return torch.tensor(rows, dtype=torch.int32)


def cluster_members(grid, cluster):
    """For each program (linear index, x fastest), the linear indices of its cluster's
    programs in rank order."""
    members = []
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                first = [p - p % c for p, c in zip((x, y, z), cluster)]
                ranks = []
                for cz in range(cluster[2]):
                    for cy in range(cluster[1]):
                        for cx in range(cluster[0]):
                            px, py, pz = first[0] + cx, first[1] + cy, first[2] + cz
                            ranks.append((pz * grid[1] + py) * grid[0] + px)
                members.append(ranks)
    return torch.tensor(members, dtype=torch.long)


def grid_for(cluster, clusters=(3, 2, 2)):
    return tuple(c * n for c, n in zip(cluster, clusters))


@pytest.mark.parametrize("cluster", SHAPES + NON_PORTABLE)
def test_cluster_ids_and_ranks(cluster):
    grid = grid_for(cluster)
    n = grid[0] * grid[1] * grid[2]
    out = torch.full((n, 11), -1, device="cuda", dtype=torch.int32)
    cluster_ids[grid](out, cluster=cluster)
    torch.cuda.synchronize()
    assert torch.equal(out.cpu(), expected_ids(grid, cluster))


@pytest.mark.parametrize("cluster", SHAPES + NON_PORTABLE)
@pytest.mark.parametrize("dtype,block", [(torch.float32, 1024), (torch.float32, 64),
                                         (torch.bfloat16, 2048), (torch.int32, 512)])
def test_cluster_sum_through_distributed_shared_memory(cluster, dtype, block):
    grid = grid_for(cluster)
    n = grid[0] * grid[1] * grid[2]
    if dtype.is_floating_point:
        x = torch.randn(n, block, device="cuda").to(dtype)
    else:
        x = torch.randint(-1000, 1000, (n, block), device="cuda", dtype=dtype)
    y = torch.zeros_like(x)
    cluster_sum[grid](x, y, BLOCK=block, cluster=cluster)
    torch.cuda.synchronize()
    members = cluster_members(grid, cluster).cuda()
    # the kernel's order of summation: rank 0, then + rank 1, + rank 2, ...
    expect = x[members[:, 0]]
    for r in range(1, members.shape[1]):
        expect = expect + x[members[:, r]]
    if dtype == torch.bfloat16:
        torch.testing.assert_close(y.float(), expect.float(), rtol=1e-2, atol=1e-2)
    else:
        assert torch.equal(y, expect), (y - expect).abs().max()


def test_cluster_sum_loops_many_times():
    """Many clusters, many launches: the buffers are reused without races."""
    cluster, grid, block = (4, 1, 1), (4 * 132,), 256
    x = torch.randn(grid[0], block, device="cuda")
    y = torch.zeros_like(x)
    members = cluster_members((grid[0], 1, 1), cluster).cuda()
    expect = x[members[:, 0]] + x[members[:, 1]] + x[members[:, 2]] + x[members[:, 3]]
    for _ in range(20):
        y.zero_()
        cluster_sum[grid](x, y, BLOCK=block)
        torch.cuda.synchronize()
        assert torch.equal(y, expect)


@kiln.jit(num_warps=4, cluster=(4, 1, 1))
def cluster_sum_chain(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    """v = x[block of p]; n times v = (sum over p's cluster of (v ^ rank)) & 0xFFFF, every
    round one kl.cluster_sum of the same buffer (its trailing wait deferred to the loop
    body's end: a program that stored round k + 1 before another read round k would show)."""
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    v = kl.load(x_ptr + offs)
    rank = kl.cluster_cta_rank()
    for _ in range(n):
        if rank == 1:  # one member slower than the others each round (v >= 0: the same v)
            v = (v * 7 + 3) // 7
        v = kl.cluster_sum(v ^ rank) & 0xFFFF
    kl.store(y_ptr + offs, v)


def test_cluster_sum_chain_against_numpy():
    """60 dependent rounds of a cluster_sum in a loop (the deferred trailing wait of its
    exchange: no round's buffer is overwritten while another member still reads it)."""
    cluster, grid, block, n = 4, 4 * 264, 512, 60
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randint(0, 1 << 16, (grid, block), device="cuda", dtype=torch.int32, generator=g)
    y = torch.zeros_like(x)
    cluster_sum_chain[(grid,)](x, y, n, BLOCK=block)
    torch.cuda.synchronize()
    v = x.cpu().numpy().astype(np.int64).reshape(grid // cluster, cluster, block)
    rank = np.arange(cluster)[None, :, None]
    for _ in range(n):
        v = np.broadcast_to((v ^ rank).sum(axis=1, keepdims=True) & 0xFFFF, v.shape)
    assert np.array_equal(y.cpu().numpy().reshape(v.shape), v)


@pytest.mark.parametrize("cluster", [(2, 1, 1), (4, 1, 1), (2, 2, 1), (8, 1, 1)])
@pytest.mark.parametrize("rows,cols,dtype", [(16, 64, torch.float16), (8, 32, torch.int64),
                                             (4, 4, torch.float32), (64, 128, torch.int8)])
def test_cluster_load_from_the_next_rank(cluster, rows, cols, dtype):
    grid = grid_for(cluster, (2, 2, 1))
    n = grid[0] * grid[1] * grid[2]
    x = torch.randint(-100, 100, (n, rows, cols), device="cuda").to(dtype)
    m = (torch.rand(n, rows, cols, device="cuda") < 0.5).to(torch.int8)
    y, mm = torch.zeros_like(x), torch.zeros_like(m)
    cluster_rotate[grid](x, m, y, mm, ROWS=rows, COLS=cols, cluster=cluster)
    torch.cuda.synchronize()
    members = cluster_members(grid, cluster)
    size = members.shape[1]
    src = []
    for p in range(n):
        ranks = members[p].tolist()
        src.append(ranks[(ranks.index(p) + 1) % size])
    src = torch.tensor(src, device="cuda")
    assert torch.equal(y, x[src])
    assert torch.equal(mm, m[src])


@pytest.mark.parametrize("size", [2, 4, 8, 16])
@pytest.mark.parametrize("dtype,block", [(torch.float32, 1024), (torch.float32, 32),
                                         (torch.bfloat16, 256), (torch.int32, 512)])
def test_cluster_gather_against_torch(size, dtype, block):
    """Fresh random inputs; every program holds every rank's tile (exact) and their sum."""
    cluster, clusters = (size, 1, 1), 37
    n = size * clusters
    if dtype.is_floating_point:
        x = torch.randn(n, block, device="cuda").to(dtype)
    else:
        x = torch.randint(-1000, 1000, (n, block), device="cuda", dtype=dtype)
    y = torch.zeros_like(x)
    g = torch.zeros(n, size, block, device="cuda", dtype=dtype)
    for _ in range(3):  # repeated launches reuse the buffers
        y.zero_()
        g.zero_()
        cluster_gather_sum[(n,)](x, y, g, S=size, BLOCK=block, cluster=cluster)
        torch.cuda.synchronize()
        members = x.view(clusters, size, block)
        assert torch.equal(g.view(clusters, size, size, block),
                           members[:, None].expand(clusters, size, size, block))
        expect = members.float().sum(dim=1) if dtype.is_floating_point else members.sum(dim=1)
        expect = expect[:, None].expand(clusters, size, block).reshape(n, block)
        if dtype == torch.int32:
            assert torch.equal(y, expect)
        else:
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
            torch.testing.assert_close(y.float(), expect.float(), rtol=tol, atol=tol)


@pytest.mark.parametrize("size", [2, 4, 8, 16])
@pytest.mark.parametrize("rows,cols,dtype", [(16, 64, torch.float16), (8, 32, torch.int64),
                                             (4, 4, torch.float32), (64, 128, torch.int8)])
def test_cluster_gather_2d_tiles_exact(size, rows, cols, dtype):
    clusters = 5
    n = size * clusters
    x = torch.randint(-100, 100, (n, rows, cols), device="cuda").to(dtype)
    m = (torch.rand(n, rows, cols, device="cuda") < 0.5).to(torch.int8)
    y = torch.zeros(n, size, rows, cols, device="cuda", dtype=dtype)
    mm = torch.zeros(n, size, rows, cols, device="cuda", dtype=torch.int8)
    cluster_gather_2d[(n,)](x, m, y, mm, S=size, R=rows, C=cols, cluster=(size, 1, 1))
    torch.cuda.synchronize()
    want = x.view(clusters, 1, size, rows, cols).expand(clusters, size, size, rows, cols)
    assert torch.equal(y.view(clusters, size, size, rows, cols), want)
    want = m.view(clusters, 1, size, rows, cols).expand(clusters, size, size, rows, cols)
    assert torch.equal(mm.view(clusters, size, size, rows, cols), want)


def test_cluster_gather_ptx_has_two_cluster_barriers():
    ck = cluster_gather_sum.compile({"x_ptr": "*f32", "y_ptr": "*f32", "g_ptr": "*f32"},
                                    {"S": 8, "BLOCK": 256}, arch=kiln.device_arch(),
                                    cluster=(8, 1, 1), upto="ptx")
    assert ck.ptx.count("barrier.cluster.arrive.aligned") == 2


def test_cluster_barrier_orders_global_memory():
    clusters, block = 64, 256
    x = torch.zeros(clusters * block, device="cuda", dtype=torch.int32)
    y = torch.zeros_like(x)
    cluster_flag[(2 * clusters,)](x, y, BLOCK=block)
    torch.cuda.synchronize()
    expect = torch.arange(clusters * block, device="cuda", dtype=torch.int32) * 3 + 1
    assert torch.equal(y, expect)


def test_cluster_metadata_and_ptx():
    ck = cluster_sum.compile({"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 1024},
                             divisibility=["x_ptr", "y_ptr"], arch="sm_90a",
                             cluster=(2, 2, 1))
    assert ck.meta["cluster"] == [2, 2, 1]
    assert ".reqnctapercluster 2, 2, 1" in ck.ptx
    assert "mapa.shared::cluster" in ck.ptx and "ld.shared::cluster" in ck.ptx


@pytest.mark.parametrize("grid,cluster", [((3,), (2, 1, 1)), ((4, 3), (2, 2, 1)),
                                          ((6,), (4, 1, 1))])
def test_grid_not_a_multiple_of_the_cluster_raises_before_launch(grid, cluster):
    x = torch.zeros(16 * 64, device="cuda")
    y = torch.zeros_like(x)
    g3 = tuple(grid) + (1,) * (3 - len(grid))
    with pytest.raises(ValueError) as info:
        cluster_sum[grid](x, y, BLOCK=64, cluster=cluster)
    assert f"grid {g3} is not a multiple of the cluster shape {cluster}" in str(info.value)
    torch.cuda.synchronize()
    assert torch.count_nonzero(y) == 0


def test_grid_check_on_the_launch_fast_path():
    x = torch.ones(16 * 64, device="cuda")
    y = torch.zeros_like(x)
    cluster_sum[(4,)](x, y, BLOCK=64, cluster=(2, 1, 1))  # compiles; later launches are fast
    torch.cuda.synchronize()
    assert torch.equal(y[:4 * 64], torch.full_like(y[:4 * 64], 2.0))
    with pytest.raises(ValueError, match=r"grid \(5, 1, 1\) is not a multiple of the "
                                         r"cluster shape \(2, 1, 1\)"):
        cluster_sum[(5,)](x, y, BLOCK=64, cluster=(2, 1, 1))


@pytest.mark.parametrize("cluster,grid", [((2, 2, 1), (4, 2, 1)), ((4, 4, 1), (8, 12, 1))])
def test_cluster_kernel_from_an_aot_bundle(tmp_path, cluster, grid):
    """The runtime launches a bundle's clustered kernel with the cluster attribute (for 16
    blocks, 4x4, after the non-portable opt-in it makes when it loads the kernel)."""
    from kiln import aot
    from kiln.runtime import Bundle, KilnError

    name = f"cluster_sum_{cluster[0]}x{cluster[1]}"
    path = str(tmp_path / "cluster.kbundle")
    aot.build([aot.Spec(cluster_sum, name=name, signature={"x_ptr": "*f32", "y_ptr": "*f32"},
                        constexprs={"BLOCK": 256}, divisibility=["x_ptr", "y_ptr"],
                        cluster=cluster)],
              [kiln.device_arch()], path, jobs=1, log=lambda s: None)
    k = Bundle(path).kernel(name, BLOCK=256)
    x = torch.randn(grid[0] * grid[1], 256, device="cuda")
    y = torch.zeros_like(x)
    k[grid](x, y)
    torch.cuda.synchronize()
    members = cluster_members(grid, cluster).cuda()
    expect = x[members[:, 0]]
    for r in range(1, members.shape[1]):  # the kernel's order: rank 0, + rank 1, ...
        expect = expect + x[members[:, r]]
    assert torch.equal(y, expect)
    with pytest.raises((KilnError, ValueError), match="not a multiple of the cluster shape"):
        k[(grid[0] - 1, grid[1], 1)](x, y)


@pytest.mark.parametrize("size", [2, 4, 8, 16])
@pytest.mark.parametrize("block,rows,cols", [(8, 4, 32), (1024, 2, 8), (4, 16, 64)])
def test_cluster_sum_against_torch(size, block, rows, cols):
    """kl.cluster_sum: fresh random inputs; the f32 sums bit for bit equal to torch adding
    the cluster's tiles in rank order, the int32 ones exact (wrapping), in every program;
    tiles held whole by every thread (8 elements) and spread over the threads."""
    clusters = 37
    n = size * clusters
    x = torch.randn(n, block, device="cuda") * 100
    k = torch.randint(-2**31, 2**31 - 1, (n, rows, cols), device="cuda", dtype=torch.int32)
    y, m = torch.zeros_like(x), torch.zeros_like(k)
    for _ in range(2):  # a relaunch reuses the buffers
        y.zero_()
        m.zero_()
        cluster_sum_two[(n,)](x, k, y, m, BLOCK=block, R=rows, C=cols, cluster=(size, 1, 1))
        torch.cuda.synchronize()
        xs = x.view(clusters, size, block)
        want = xs[:, 0].clone()
        for r in range(1, size):
            want = want + xs[:, r]
        assert torch.equal(y.view(clusters, size, block), want[:, None].expand(-1, size, -1))
        want_k = k.view(clusters, size, rows, cols).long().sum(dim=1)
        want_k = ((want_k + 2**31) % 2**32 - 2**31).int()  # int32 wrap-around
        assert torch.equal(m.view(clusters, size, rows, cols),
                           want_k[:, None].expand(-1, size, -1, -1))
