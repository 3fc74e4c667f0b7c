"""TMA tensor descriptors on the GPU: tile loads and stores through cp.async.bulk.tensor
against torch on fresh random inputs (edges zero-filled on load and clipped on store, ranks
1-3, dtypes of 1-4 bytes, strided tensors, persistent loops that reuse a barrier many
times, two descriptors loaded in one program) and the checks that run before a launch."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from kernels_dsl.common import tma  # noqa: E402


@kiln.jit
def affine_2d(src, dst, BM: kl.constexpr, BN: kl.constexpr):
    i = kl.program_id(0) * BM
    j = kl.program_id(1) * BN
    x = src.load([i, j])
    dst.store([i, j], x * 2 + 1)


@kiln.jit
def add_two(a, b, out, BM: kl.constexpr, BN: kl.constexpr):
    i = kl.program_id(0) * BM
    out.store([i, 0], a.load([i, 0]) + b.load([i, 0]))


@kiln.jit
def copy_1d(src, dst, B: kl.constexpr):
    i = kl.program_id(0) * B
    dst.store([i], src.load([i]))


@kiln.jit
def copy_3d(src, dst, B0: kl.constexpr, B1: kl.constexpr, B2: kl.constexpr):
    dst.store([kl.program_id(0) * B0, kl.program_id(1) * B1, kl.program_id(2) * B2],
              src.load([kl.program_id(0) * B0, kl.program_id(1) * B1, kl.program_id(2) * B2]))


@kiln.jit
def row_sums(src, out_ptr, n_rows, BM: kl.constexpr, BN: kl.constexpr):
    """Each program loops over row blocks: the barrier's phase flips every iteration."""
    for r in range(kl.program_id(0) * BM, n_rows, kl.num_programs(0) * BM):
        x = src.load([r, 0]).to(kl.float32)
        rows = r + kl.arange(0, BM)
        kl.store(out_ptr + rows, kl.sum(x, axis=1), mask=rows < n_rows)


@kiln.jit
def row_sums_pipelined(src, out_ptr, n_rows, BM: kl.constexpr, BN: kl.constexpr,
                       STAGES: kl.constexpr):
    """row_sums with the loads STAGES - 1 iterations ahead (a TMA ring)."""
    for r in kl.range(kl.program_id(0) * BM, n_rows, kl.num_programs(0) * BM,
                      num_stages=STAGES):
        x = src.load([r, 0]).to(kl.float32)
        rows = r + kl.arange(0, BM)
        kl.store(out_ptr + rows, kl.sum(x, axis=1), mask=rows < n_rows)


def _rand(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape, device="cuda").to(dtype)
    return torch.randint(-100, 100, shape, device="cuda", dtype=dtype)


@pytest.mark.parametrize("dtype,block", [(torch.bfloat16, (64, 128)), (torch.float16, (32, 64)),
                                         (torch.float32, (16, 32)), (torch.int32, (8, 16))])
@pytest.mark.parametrize("shape", [(256, 512), (100, 200), (1, 24), (300, 8)])
def test_affine_edges(dtype, block, shape):
    m, n = shape
    itemsize = torch.empty((), dtype=dtype).element_size()
    n_alloc = -(-n * itemsize // 16) * 16 // itemsize  # rows 16-byte aligned
    x = _rand((m, n_alloc), dtype)[:, :n]
    out_full = torch.full((m, n_alloc), 7, device="cuda", dtype=dtype)
    out = out_full[:, :n]
    sd = kiln.TensorDescriptor.from_tensor(x, list(block))
    dd = kiln.TensorDescriptor.from_tensor(out, list(block))
    affine_2d[(kiln.cdiv(m, block[0]), kiln.cdiv(n, block[1]))](sd, dd, BM=block[0],
                                                                 BN=block[1])
    torch.testing.assert_close(out, x * 2 + 1, rtol=0, atol=0)
    # Columns past the tensor's shape (inside the row pitch) are not written.
    assert torch.all(out_full[:, n:] == 7)


@pytest.mark.parametrize("dtype,block,swizzle", [
    (torch.bfloat16, (64, 64), 128), (torch.float32, (32, 32), 128), (torch.float16, (16, 32), 64),
    (torch.int8, (64, 32), 32), (torch.bfloat16, (128, 16), 32)])
def test_swizzled_boxes_through_registers(dtype, block, swizzle):
    # TMA writes the box with 16-byte chunks permuted by the row (chunk ^ (offset / 128) mod
    # swizzle / 16); registers read and write through the same permutation.
    m, n = 300, 208  # rows of 208 elements: 16-byte multiples for every dtype
    x = _rand((m, n), dtype)
    out = torch.zeros_like(x)
    sd = kiln.TensorDescriptor.from_tensor(x, list(block), swizzle=swizzle)
    dd = kiln.TensorDescriptor.from_tensor(out, list(block), swizzle=swizzle)
    affine_2d[(kiln.cdiv(m, block[0]), kiln.cdiv(n, block[1]))](sd, dd, BM=block[0],
                                                                 BN=block[1])
    torch.testing.assert_close(out, x * 2 + 1, rtol=0, atol=0)


@pytest.mark.parametrize("stages", [2, 4])
def test_swizzled_ring(stages):
    rows, n = 16 * 100 + 3, 64
    x = _rand((rows, n), torch.bfloat16)
    out = torch.full((rows,), -1.0, device="cuda")
    row_sums_pipelined[(9,)](kiln.TensorDescriptor.from_tensor(x, [16, 64], swizzle=128), out,
                             rows, BM=16, BN=64, STAGES=stages)
    torch.testing.assert_close(out, x.float().sum(dim=1), rtol=1e-5, atol=1e-3)


def test_two_descriptors_and_zero_fill():
    m, n = 200, 64
    a, b = _rand((m, n), torch.float32), _rand((m, n), torch.float32)
    out = torch.empty_like(a)
    da, db, do = (kiln.TensorDescriptor.from_tensor(t, [64, 64]) for t in (a, b, out))
    add_two[(kiln.cdiv(m, 64),)](da, db, do, BM=64, BN=64)
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)


def test_rank_1_and_3():
    x = _rand((1000,), torch.bfloat16)
    y = torch.zeros_like(x)
    copy_1d[(kiln.cdiv(1000, 256),)](kiln.TensorDescriptor.from_tensor(x, [256]),
                                     kiln.TensorDescriptor.from_tensor(y, [256]), B=256)
    assert torch.equal(x, y)
    x3 = _rand((6, 40, 72), torch.float16)
    y3 = torch.zeros_like(x3)
    copy_3d[(3, 2, 2)](kiln.TensorDescriptor.from_tensor(x3, [2, 32, 64]),
                       kiln.TensorDescriptor.from_tensor(y3, [2, 32, 64]), B0=2, B1=32, B2=64)
    assert torch.equal(x3, y3)


def test_persistent_loop_flips_the_phase():
    rows, n = 4096 + 24, 128
    x = _rand((rows, n), torch.bfloat16)
    out = torch.empty(rows, device="cuda", dtype=torch.float32)
    # 13 programs: each waits on its barrier ~20 times, odd and even phases.
    row_sums[(13,)](kiln.TensorDescriptor.from_tensor(x, [16, 128]), out, rows, BM=16, BN=128)
    torch.testing.assert_close(out, x.float().sum(dim=1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("grid", [1, 7, 132])
def test_pipelined_ring_matches(stages, grid):
    # Programs with 0, 1, fewer than `stages` and many iterations; every slot's parity
    # flips many times on the long ones.
    rows, n = 16 * 200 + 5, 128
    x = _rand((rows, n), torch.float16)
    out = torch.full((rows,), -1.0, device="cuda")
    row_sums_pipelined[(grid,)](kiln.TensorDescriptor.from_tensor(x, [16, 128]), out, rows,
                                BM=16, BN=128, STAGES=stages)
    torch.testing.assert_close(out, x.float().sum(dim=1), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("grid,stages", [(None, 1), (132 * 4, 1), (132 * 4, 2), (264, 3)])
def test_tma_copy_library_kernel(grid, stages):
    x = _rand((1000, 7168), torch.bfloat16)
    out = tma.tma_copy(x, grid=grid, num_stages=stages, block=(32, 128))
    assert torch.equal(out, x)


def test_strided_source():
    big = _rand((512, 1024), torch.bfloat16)
    x = big[::2, 256:768]  # row stride 2048 elements, 512 columns
    out = tma.tma_copy(x)
    assert torch.equal(out, x)


def test_errors_before_launch():
    x = _rand((128, 128), torch.bfloat16)
    out = torch.empty_like(x)
    good = kiln.TensorDescriptor.from_tensor(x, [64, 128])
    other_box = kiln.TensorDescriptor.from_tensor(out, [32, 128])
    # The JIT specializes on the descriptors: storing a 64x128 tile through a 32x128 box
    # is a compile error at the store.
    with pytest.raises(kiln.CompilationError, match=r"not the descriptor's box \[32, 128\]"):
        affine_2d[(2, 1)](good, other_box, BM=64, BN=128)
    # A precompiled kernel (bundle, AOT) checks each descriptor against its metadata.
    from kiln.runtime import LaunchableKernel, device_arch

    arch = device_arch()
    sig = {"src": good.signature, "dst": good.signature}
    ck = affine_2d.compile(sig, constexprs={"BM": 64, "BN": 128}, arch=arch)
    k = LaunchableKernel.from_images(ck.meta, {arch: ck.cubin})
    with pytest.raises(TypeError, match=r"expects tensordesc<bf16, 64x128>.*box \[32, 128\]"):
        k[(2, 1)](good, other_box)
    with pytest.raises(TypeError, match="kiln.TensorDescriptor"):
        k[(2, 1)](good, out)
    k[(2, 1)](good, kiln.TensorDescriptor.from_tensor(out, [64, 128]))
    torch.testing.assert_close(out, x * 2 + 1, rtol=0, atol=0)
    # A row pitch that is not a multiple of 16 bytes: the driver's rule, named before launch.
    odd = _rand((64, 100), torch.bfloat16)
    with pytest.raises(ValueError, match="16"):
        affine_2d[(1, 1)](kiln.TensorDescriptor.from_tensor(odd, [64, 64]),
                          kiln.TensorDescriptor.from_tensor(odd, [64, 64]), BM=64, BN=64)
    with pytest.raises(ValueError, match="contiguous"):
        kiln.TensorDescriptor.from_tensor(x.t(), [64, 128])
    with pytest.raises(ValueError, match="powers of two"):
        kiln.TensorDescriptor.from_tensor(x, [48, 128])
    torch.cuda.synchronize()
