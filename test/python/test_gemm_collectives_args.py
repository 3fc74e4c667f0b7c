"""The fused GEMM collectives' wrappers on the CPU (docs/kernels/collectives.md): bad input
raises before anything is launched, naming the argument; a good call launches the kernel the
cell (or M) picks over the grid of its tiles; and one specialization of each kernel compiles
to PTX that ptxas takes on every arch, its dots on the tensor cores and its waits the
``ld.relaxed.sys`` polls. No torch: tensors are stand-ins (shape, strides, dtype name, address,
device), the workspace a namespace."""

import math
import re
import types

import pytest

from kernels_dsl.kimi_k3 import _launch
from kernels_dsl.kimi_k3 import allreduce as A
from kernels_dsl.kimi_k3 import gemm_collectives as G

_ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}


class Fake:
    """A stand-in tensor: ``offset`` elements past a 256-byte aligned address."""

    _next = [0x7F0000000000]

    def __init__(self, shape, dtype="bfloat16", strides=None, offset=0, device="cuda:0"):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._strides = tuple(strides) if strides else tuple(
            math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        self._address = Fake._next[0] + offset * _ITEMSIZE[dtype]
        Fake._next[0] += 1 << 24
        self.device = device

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def data_ptr(self):
        return self._address


M, N, K = 5, 7168, 1536


def ws(world=2, m=512, n=N):
    return types.SimpleNamespace(rank=world - 1, world=world, peer_table=Fake((world,)),
                                 nbytes=A.workspace_bytes(world, G.workspace_elements(m, n,
                                                                                      world)))


def x(m=M, k=K, **kw):
    return Fake((m, k), **kw)


def w(n=N, k=K, **kw):
    return Fake((n, k), **kw)


def out(rows=8, n=N, **kw):
    return Fake((rows, n), **kw)


def bias(n=N, **kw):
    return Fake((n,), **kw)


@pytest.fixture
def launched(monkeypatch):
    """Launches are recorded, not run: (name, grid, args, constexprs, num_warps, generic)."""
    calls = []
    monkeypatch.setattr(_launch, "launch", lambda *a, generic=None: calls.append(a + (generic,)))
    return calls


@pytest.mark.parametrize("call,message", [
    (lambda: G.gemm_allreduce(x(dtype="float16"), w(), ws()), "x must be bfloat16"),
    (lambda: G.gemm_allreduce(x(), w(dtype="float32"), ws()), "weight must be bfloat16"),
    (lambda: G.gemm_allreduce(Fake((M * K,)), w(), ws()), r"x must have shape \[\*, \*\]"),
    (lambda: G.gemm_allreduce(x(), w(k=K + 8), ws()), r"weight must have shape \[\*, 1536\]"),
    (lambda: G.gemm_allreduce(x(k=12), w(k=12), ws()), "K must be a positive multiple of 8"),
    (lambda: G.gemm_allreduce(x(m=0), w(), ws()), r"M \(x's rows\) must be in \[1, 512\]"),
    (lambda: G.gemm_allreduce(x(m=513), w(), ws()), r"M \(x's rows\) must be in \[1, 512\]"),
    (lambda: G.gemm_allreduce(x(), w(), ws(), out=out(rows=M)), r"out must have shape "
                                                                r"\[8, 7168\]"),
    (lambda: G.gemm_allreduce(x(m=100), w(), ws(), out=out(rows=100)),
     r"out must have shape \[128, 7168\]"),
    (lambda: G.gemm_allreduce(x(), w(), ws(), out=out(dtype="float32")), "out must be bfloat16"),
    (lambda: G.gemm_allreduce(x(strides=(K + 8, 1)), w(), ws()), "x must be contiguous"),
    (lambda: G.gemm_allreduce(x(offset=4), w(), ws()), "x must be 16-byte aligned"),
    (lambda: G.gemm_allreduce(x(), w(offset=1), ws()), "weight must be 16-byte aligned"),
    (lambda: G.gemm_allreduce(x(), w(), ws(), out=out(offset=2)), "out must be 16-byte aligned"),
    (lambda: G.gemm_allreduce(x(), w(), ws(), out=out(device="cuda:1")),
     "tensors must be on one device"),
    (lambda: G.gemm_allreduce(x(m=512), w(), ws(m=256)), "workspace holds .* bytes"),
    (lambda: G.gemm_allreduce(x(m=512, k=8), w(n=1 << 16, k=8), ws(n=1 << 16)),
     "at most 1024"),
])
def test_gemm_allreduce_bad_input_raises_before_launch(launched, call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()
    assert not launched


@pytest.mark.parametrize("call,message", [
    (lambda: G.gemm_allgather(x(dtype="float16"), w(), bias(), ws()), "x must be bfloat16"),
    (lambda: G.gemm_allgather(x(), w(), bias(dtype="float32"), ws()), "bias must be bfloat16"),
    (lambda: G.gemm_allgather(x(), w(), bias(N - 8), ws()), r"bias must have shape \[7168\]"),
    (lambda: G.gemm_allgather(x(), w(), bias(), ws(), c=out(rows=M + 1)),
     r"c must have shape \[5, 7168\]"),
    (lambda: G.gemm_allgather(x(), w(), bias(), ws(), out=out(rows=8)),
     r"out must have shape \[5, 7168\]"),
    (lambda: G.gemm_allgather(x(k=20), w(k=20), bias(), ws()), "multiple of 8"),
    (lambda: G.gemm_allgather(x(m=513), w(), bias(), ws()), r"must be in \[1, 512\]"),
    (lambda: G.gemm_allgather(x(), w(n=7160), bias(7160), ws(world=8)),
     r"8 even column slices \(N % 16 == 0\), got N = 7160"),
    (lambda: G.gemm_allgather(x(), w(n=6), bias(6), ws(world=4)), r"N % 8 == 0"),
    (lambda: G.gemm_allgather(x(), w(), bias(offset=4), ws()), "bias must be 16-byte aligned"),
    (lambda: G.gemm_allgather(x(), w(), bias(), ws(), c=out(rows=M, offset=4)),
     "c must be 16-byte aligned"),
    (lambda: G.gemm_allgather(x(), w(), bias(device="cuda:1"), ws()),
     "tensors must be on one device"),
    (lambda: G.gemm_allgather(x(m=512), w(), bias(), ws(m=8)), "workspace holds .* bytes"),
])
def test_gemm_allgather_bad_input_raises_before_launch(launched, call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()
    assert not launched


@pytest.mark.parametrize("m,cell", [(1, 8), (8, 8), (9, 16), (17, 32), (33, 64), (100, 128),
                                    (129, 256), (512, 512)])
def test_gemm_allreduce_launches_the_cells_tile(launched, m, cell):
    """M is rounded up to its cell; the grid covers cell x N in the cell's tiles, the slot pitch
    comes from the workspace, the bundle name from the world and the tile setting."""
    assert G.cell_rows(m) == cell
    o = out(rows=cell)
    assert G.gemm_allreduce(x(m=m), w(), ws(world=8), out=o) is o
    (kernel, name, grid, args, ce, warps, _, _, generic), = launched
    max_m, tile = next(t for t in G.SETTINGS.allreduce_tiles if cell <= t[0])
    assert kernel is G.gemm_allreduce_kernel and name == f"gemm_allreduce_w8_m{max_m}"
    assert generic.name == name + "_generic" and generic.args == args
    assert grid == (-(-cell // tile.bm) * (N // tile.bn),) and grid[0] <= A.MAX_PROGRAMS
    assert args[5:9] == (m, N, K, cell) and args[4] == 7
    assert ce == {"WORLD": 8, "BM": tile.bm, "BN": tile.bn, "BK": tile.bk}
    assert warps == tile.num_warps


@pytest.mark.parametrize("m,has_c", [(1, False), (7, True), (100, False), (512, True)])
def test_gemm_allgather_launches_the_slice_grid(launched, m, has_c):
    c = out(rows=m) if has_c else None
    o = out(rows=m)
    assert G.gemm_allgather(x(m=m, k=3584), w(k=3584), bias(), ws(world=4), c=c, out=o) is o
    (kernel, name, grid, args, ce, warps, _, _, generic), = launched
    max_m, tile = next(t for t in G.SETTINGS.allgather_tiles if m <= t[0])
    assert name == f"gemm_allgather_w4_m{max_m}{'_c' if has_c else ''}"
    assert grid == (-(-m // tile.bm) * -(-(N // 4) // tile.bn),)
    assert args[3] is (c if has_c else o) and args[4] is o
    assert args[7:10] == (m, N, N // 4) and ce["HAS_C"] is has_c


def test_aot_names_are_unique_and_cover_the_worlds():
    names = [s.kernel_name for s in G.AOT_SPECIALIZATIONS]
    assert len(names) == len(set(names))
    tiles = len(G.SETTINGS.allreduce_tiles) + 2 * len(G.SETTINGS.allgather_tiles)
    assert len(names) == 2 * len(G.AOT_WORLDS) * tiles
    assert {s.constexprs["WORLD"] for s in G.AOT_SPECIALIZATIONS} == {2, 4, 8}


def test_workspace_elements_cover_both_kernels():
    """Every call of up to 512 rows of K3's 7,168 columns fits a workspace of
    ``workspace_elements(512, 7168, world)``."""
    for world in G.AOT_WORLDS:
        big = A.workspace_bytes(world, G.workspace_elements(512, N, world))
        for m in range(1, 513, 37):
            assert A.workspace_bytes(world, G.workspace_elements(m, N, world)) <= big


compiler = pytest.importorskip("kiln.compiler.compiler")
needs_compiler = pytest.mark.skipif(not compiler.compiler_available(),
                                    reason="kiln._C is not built")


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
@pytest.mark.parametrize("name", ["gemm_allreduce_w8_m512", "gemm_allgather_w4_m16_c"])
def test_one_specialization_compiles(arch, name):
    """The dots on tensor cores (wgmma for 64-row tiles on sm_90a, else mma.sync), the pushes
    and re-arms as stores, the waits as ``ld.relaxed.sys`` poll loops over 16-byte vectors,
    no spills (KILN_USE_PTXAS=1: ptxas assembles it)."""
    s = next(s for s in G.AOT_SPECIALIZATIONS if s.kernel_name == name)
    c = s.kernel.compile(s.signature, s.constexprs, divisibility=s.divisibility,
                         num_warps=s.num_warps, name=s.kernel_name, arch=arch)
    ptx, target = c.ptx, c.meta["targets"][arch]
    units = [d["unit"] for d in target["dots"]]
    assert len(units) == 2
    if arch == "sm_90a" and s.constexprs["BM"] == 64:
        assert units == ["wgmma staged"] * 2 and "wgmma.mma_async" in ptx
    else:
        assert units == ["mma.sync"] * 2 and "mma.sync" in ptx
    assert "kiln_poll" in ptx and "ld.relaxed.sys.global.v4.b32" in ptx
    assert "st.relaxed.sys.global" in ptx  # the descriptors
    assert re.search(r"nanosleep", ptx) and "griddepcontrol.wait" in ptx
    assert target.get("spill_store_bytes", 0) == 0


@needs_compiler
@pytest.mark.parametrize("name", ["gemm_allgather_w2_m16", "gemm_allreduce_w2_m16"])
def test_every_warp_polls_before_the_slot_is_rearmed(name):
    """Between a rank's last poll of a slot and the first re-arming store (zero words, one
    thread's descriptor store) a bar.sync: the 16 x 32 all-gather tile is [16, 16] words,
    which every warp holds a copy of, so its status reduction stays within a warp and
    cannot order the other warps' polls (without the barrier they polled a re-armed slot
    until the timeout)."""
    s = next(s for s in G.AOT_SPECIALIZATIONS if s.kernel_name == name)
    ptx = s.kernel.compile(s.signature, s.constexprs, divisibility=s.divisibility,
                           num_warps=s.num_warps, name=name, arch="sm_90a").ptx
    lines = ptx.splitlines()
    rearms = [i for i, line in enumerate(lines)
              if re.search(r"st\.global(\.v4)?\.b32\s+\[%rd\d+\], (0|\{0, 0, 0, 0\});", line)]
    assert rearms
    for i in rearms:
        last_poll = max(j for j in range(i) if lines[j].startswith("kiln_poll_done"))
        assert any("bar.sync" in line for line in lines[last_poll:i]), (name, i)
