"""kl.bulk_load on the GPU: 1-D contiguous tiles through cp.async.bulk into shared memory
against torch, bit for bit, on fresh random inputs: dtypes of 1-8 bytes, tiles of 16 bytes
to 128 KiB (two copies on one barrier), persistent loops that wait on each barrier's phase
many times (two loads per iteration: two barriers), a running sum over a loop, the
alignment that the specialization must prove before a launch, and bulk loads of a runtime
element count (the lanes past it zero) pipelined through an N-slot shared-memory ring
(``kl.range(..., num_stages=N)``): many ragged rows per program, so every slot's barrier
completes many phases and every slot is refilled while the other slots' copies are in
flight."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402

# cp.async.bulk is sm_90 and later: Hopper and Blackwell both run these.
pytestmark = pytest.mark.skipif(
    torch.cuda.is_available() and torch.cuda.get_device_capability()[0] < 9,
    reason="cp.async.bulk needs sm_90 or later")


@kiln.jit
def bulk_copy(x_ptr, y_ptr, BLOCK: kl.constexpr):
    start = kl.program_id(0) * BLOCK
    t = kl.bulk_load(x_ptr + start, BLOCK)
    kl.store(y_ptr + start + kl.arange(0, BLOCK), t)


@kiln.jit
def bulk_copy_loop(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    """Each program copies every num_programs-th block of both halves: two barriers, each
    completing one phase per iteration."""
    for i in range(kl.program_id(0) * BLOCK, n, kl.num_programs(0) * BLOCK):
        a = kl.bulk_load(x_ptr + i, BLOCK)
        b = kl.bulk_load(x_ptr + n + i, BLOCK)
        offs = i + kl.arange(0, BLOCK)
        kl.store(y_ptr + offs, a)
        kl.store(y_ptr + n + offs, b)


@kiln.jit
def bulk_sum_loop(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    """Program p: y[p, j] = sum over the blocks k of row p of x[p, k * BLOCK + j], in k
    order, in f32."""
    row = x_ptr + kl.program_id(0) * n
    acc = kl.zeros((BLOCK,), kl.float32)
    for i in range(0, n, BLOCK):
        acc += kl.bulk_load(row + i, BLOCK).to(kl.float32)
    kl.store(y_ptr + kl.program_id(0) * BLOCK + kl.arange(0, BLOCK), acc)


@kiln.jit
def bulk_ragged_rows(x_ptr, y_ptr, n_rows, H, stride, BLOCK: kl.constexpr,
                     STAGES: kl.constexpr, RAGGED: kl.constexpr):
    """Program p copies rows p, p + grid, ... of H (RAGGED: H - 8 * (j % 4)) elements of
    stride `stride` into rows of BLOCK (zero past the count), through a STAGES-slot ring."""
    for j in kl.range(kl.program_id(0), n_rows, kl.num_programs(0), num_stages=STAGES):
        n = H - 8 * (j % 4) if RAGGED else H
        row = kl.bulk_load(x_ptr + j * stride, BLOCK, count=n)
        kl.store(y_ptr + j * BLOCK + kl.arange(0, BLOCK), row)


@kiln.jit
def bulk_rows_sum(x_ptr, y_ptr, n_rows, H, STAGES: kl.constexpr, BLOCK: kl.constexpr):
    """Program p: y[p] = the f32 sum, in row order, of its n_rows rows of H elements through
    a STAGES-slot ring, the row pointer a select of two halves of x (odd rows from the
    second)."""
    base = x_ptr + kl.program_id(0) * (2 * n_rows * H)
    half = n_rows * H
    acc = kl.zeros((BLOCK,), kl.float32)
    for j in kl.range(0, n_rows, num_stages=STAGES):
        p = kl.where(j % 2 == 1, base + half + j * H, base + j * H)
        acc += kl.bulk_load(p, BLOCK, count=H).to(kl.float32)
    kl.store(y_ptr + kl.program_id(0) * BLOCK + kl.arange(0, BLOCK), acc)


def _rand(n, dtype):
    if dtype.is_floating_point:
        return torch.randn(n, device="cuda").to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, (n,), device="cuda", dtype=dtype)


def _bits(t):
    """The tensor's bytes, to compare bit for bit (NaN payloads, -0.0, FP8 included)."""
    return t.contiguous().view(torch.uint8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8,
                                   torch.int64, torch.float8_e4m3fn])
@pytest.mark.parametrize("block", [16, 128, 1024, 4096])
def test_bulk_copy(dtype, block):
    programs = 37
    x = _rand(programs * block, dtype)
    y = torch.zeros_like(x)
    bulk_copy[(programs,)](x, y, BLOCK=block)
    assert torch.equal(_bits(y), _bits(x))


@pytest.mark.parametrize("dtype,block", [(torch.float32, 32768), (torch.float64, 16384),
                                         (torch.int8, 131072)])
def test_bulk_copy_of_128_kib_is_two_copies(dtype, block):
    programs = 5
    x = _rand(programs * block, dtype)
    y = torch.zeros_like(x)
    bulk_copy[(programs,)](x, y, BLOCK=block, num_warps=8)
    assert torch.equal(_bits(y), _bits(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int8])
@pytest.mark.parametrize("programs", [1, 7, 132])
def test_bulk_copy_loop_tracks_the_phase(dtype, programs):
    block, n = 512, 512 * 301  # up to 301 phases of each barrier per program
    x = _rand(2 * n, dtype)
    y = torch.zeros_like(x)
    bulk_copy_loop[(programs,)](x, y, n, BLOCK=block)
    assert torch.equal(_bits(y), _bits(x))


def test_bulk_copy_loop_repeated_launches():
    block, n = 256, 256 * 64
    for seed in range(5):
        torch.manual_seed(seed)
        x = _rand(2 * n, torch.bfloat16)
        y = torch.zeros_like(x)
        bulk_copy_loop[(16,)](x, y, n, BLOCK=block)
        assert torch.equal(_bits(y), _bits(x)), f"launch {seed}"


@pytest.mark.parametrize("dtype", [torch.int8, torch.bfloat16])
def test_bulk_sum_loop(dtype):
    block, rows, blocks = 256, 8, 50
    n = block * blocks
    x = _rand(rows * n, dtype)
    y = torch.zeros(rows * block, device="cuda", dtype=torch.float32)
    bulk_sum_loop[(rows,)](x, y, n, BLOCK=block)
    expect = torch.zeros(rows, block, device="cuda", dtype=torch.float32)
    parts = x.view(rows, blocks, block).float()
    for k in range(blocks):  # the kernel's order and precision: equal bit for bit
        expect += parts[:, k]
    assert torch.equal(y.view(rows, block), expect)


def test_bulk_load_of_an_unaligned_tensor_does_not_compile():
    """x[1:] is 4-byte aligned: the launch specializes it without divisibility, and the
    compiler refuses a bulk load it cannot prove aligned instead of faulting."""
    x = _rand(4097, torch.float32)
    y = torch.zeros(4096, device="cuda", dtype=torch.float32)
    with pytest.raises(kiln.CompilationError, match="needs a 16-byte aligned pointer"):
        bulk_copy[(4,)](x[1:], y, BLOCK=1024)


def _ragged_expect(x, n_rows, h, stride, block, ragged):
    y = torch.zeros(n_rows, block, device="cuda", dtype=x.dtype)
    for k in range(4):
        n = h - 8 * k if ragged else h
        rows = torch.arange(k, n_rows, 4, device="cuda")
        if len(rows):
            y[rows, :n] = x.view(n_rows, stride)[rows, :n]
    return y


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 6, 8])
@pytest.mark.parametrize("ragged", [False, True])
@pytest.mark.parametrize("programs", [1, 7, 132])
def test_pipelined_bulk_load_of_ragged_rows(stages, ragged, programs):
    """K3's rows: H = 7168 bf16 in an 8192 tile; 1000 rows over 1 to 132 programs (up to
    1000 rows a program: each slot's barrier passes many phases); the 1024 lanes past the
    count (and 8 to 24 more on ragged rows) must read as zero, whatever the slot held."""
    n_rows, h, stride, block = 1000, 7168, 7424, 8192
    x = _rand(n_rows * stride, torch.bfloat16)
    y = torch.full((n_rows, block), 3.0, device="cuda", dtype=torch.bfloat16)
    bulk_ragged_rows[(programs,)](x, y, n_rows, h, stride, BLOCK=block, STAGES=stages,
                                  RAGGED=ragged, num_warps=16)
    expect = _ragged_expect(x, n_rows, h, stride, block, ragged)
    assert torch.equal(_bits(y), _bits(expect))


@pytest.mark.parametrize("stages", [2, 4])
def test_pipelined_bulk_load_with_fewer_rows_than_stages(stages):
    """Programs with 0 or 1 rows: the prologue's issues past the end are skipped, and a
    later launch's barriers start from a clean phase."""
    n_rows, h, stride, block = 3, 1008, 1024, 1024
    for seed in range(3):
        torch.manual_seed(seed)
        x = _rand(n_rows * stride, torch.float16)
        y = torch.zeros(n_rows, block, device="cuda", dtype=torch.float16)
        bulk_ragged_rows[(5,)](x, y, n_rows, h, stride, BLOCK=block, STAGES=stages,
                               RAGGED=True, num_warps=4)
        assert torch.equal(_bits(y), _bits(_ragged_expect(x, n_rows, h, stride, block, True)))


@pytest.mark.parametrize("stages", [3, 6])
def test_pipelined_bulk_rows_sum_of_a_selected_pointer(stages):
    programs, n_rows, h, block = 64, 77, 7168, 8192
    x = _rand(programs * 2 * n_rows * h, torch.bfloat16)
    y = torch.zeros(programs, block, device="cuda", dtype=torch.float32)
    bulk_rows_sum[(programs,)](x, y, n_rows, h, STAGES=stages, BLOCK=block, num_warps=16)
    halves = x.view(programs, 2, n_rows, h).float()
    expect = torch.zeros(programs, block, device="cuda", dtype=torch.float32)
    for j in range(n_rows):  # the kernel's order and precision: equal bit for bit
        expect[:, :h] += halves[:, j % 2, j]
    assert torch.equal(y, expect)
