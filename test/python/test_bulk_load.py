"""kl.bulk_load on the CPU: 1-D contiguous tiles through the interpreter (several dtypes and
sizes, loops that load many times, the address and bounds checks), the PTX every arch gets
(elected cp.async.bulk + mbarrier.arrive.expect_tx + try_wait.parity, the parity flipping
in loops), and the errors at the user's line: the front end's, and the compiler's when the
pointer is not proved 16-byte aligned."""

import os

import ml_dtypes
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


@kiln.jit
def bulk_copy(x_ptr, y_ptr, BLOCK: kl.constexpr):
    """y[block p] = x[block p], loaded by one bulk copy per program."""
    start = kl.program_id(0) * BLOCK
    t = kl.bulk_load(x_ptr + start, BLOCK)  # bulk-load-copy
    kl.store(y_ptr + start + kl.arange(0, BLOCK), t)


@kiln.jit
def bulk_copy_loop(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    """Each program copies every num_programs-th block: the barrier's phase flips per
    iteration, and two loads per iteration (x and its next block) use two barriers."""
    for i in range(kl.program_id(0) * BLOCK, n, kl.num_programs(0) * BLOCK):
        a = kl.bulk_load(x_ptr + i, BLOCK)
        b = kl.bulk_load(x_ptr + n + i, BLOCK)
        offs = i + kl.arange(0, BLOCK)
        kl.store(y_ptr + offs, a)
        kl.store(y_ptr + n + offs, b)


@kiln.jit
def bulk_sum_loop(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    """y[j] = sum over the blocks k of x[k * BLOCK + j] (f32, in block order)."""
    acc = kl.zeros((BLOCK,), kl.float32)
    for i in range(0, n, BLOCK):
        acc += kl.bulk_load(x_ptr + i, BLOCK).to(kl.float32)
    kl.store(y_ptr + kl.arange(0, BLOCK), acc)


DTYPES = [
    (np.float32, "*f32"), (np.float16, "*f16"), (ml_dtypes.bfloat16, "*bf16"),
    (np.int8, "*i8"), (np.int64, "*i64"), (ml_dtypes.float8_e4m3fn, "*f8e4m3"),
]


def random_array(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return rng.standard_normal(n).astype(np.float32).astype(dtype)


# ---------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,_", DTYPES)
@pytest.mark.parametrize("block", [16, 64, 1024])
def test_interpreter_bulk_copy(dtype, _, block):
    x = random_array(dtype, 4 * block, block)
    y = np.zeros_like(x)
    interpret(bulk_copy, (4,), x, y, BLOCK=block)
    np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize("programs", [1, 3])
def test_interpreter_bulk_copy_loop(programs):
    block, n = 64, 64 * 7
    x = random_array(np.float16, 2 * n, programs)
    y = np.zeros_like(x)
    interpret(bulk_copy_loop, (programs,), x, y, n, BLOCK=block)
    np.testing.assert_array_equal(y.view(np.uint16), x.view(np.uint16))


def test_interpreter_bulk_sum_loop():
    block, n = 128, 128 * 9
    x = random_array(np.int8, n, 5)
    y = np.zeros(block, np.float32)
    interpret(bulk_sum_loop, (1,), x, y, n, BLOCK=block)
    expect = np.zeros(block, np.float32)
    for k in range(n // block):
        expect += x[k * block:(k + 1) * block].astype(np.float32)
    np.testing.assert_array_equal(y, expect)


def test_interpreter_rejects_a_misaligned_address():
    x = np.arange(65, dtype=np.float32)
    y = np.zeros(64, np.float32)
    if x.ctypes.data % 16:  # numpy allocates 16-byte aligned buffers on 64-bit hosts
        pytest.skip("numpy gave an unaligned buffer")
    with pytest.raises(CompilationError) as info:
        interpret(bulk_copy, (1,), x[1:], y, BLOCK=64)
    assert ("bulk_load through 'x_ptr': the address (element offset 0) is not 16-byte "
            "aligned (program (0, 0, 0))") in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, "bulk-load-copy")


def test_interpreter_rejects_out_of_bounds():
    x = np.arange(48, dtype=np.float32)
    y = np.zeros(64, np.float32)
    with pytest.raises(CompilationError) as info:
        interpret(bulk_copy, (1,), x, y, BLOCK=64)
    assert "out-of-bounds bulk_load through 'x_ptr': element offset 48 outside [0, 48)" \
        in info.value.message, str(info.value)


# ---------------------------------------------------------------------------
# Compiled
# ---------------------------------------------------------------------------


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
def test_bulk_load_ptx(arch):
    ck = bulk_copy.compile({"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 1024},
                           divisibility=["x_ptr", "y_ptr"], arch=arch)
    assert "tile.bulk_load" in ck.tile_ir and "-> tensor<1024xf32>" in ck.tile_ir
    ptx = ck.ptx
    assert ptx.count("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") == 1
    assert "mbarrier.arrive.expect_tx" in ptx and "elect.sync" in ptx
    assert "mbarrier.try_wait.parity" in ptx
    assert ck.cubin[:4] == b"\x7fELF"


@needs_compiler
@pytest.mark.parametrize("sig,block", [("*i8", 16), ("*bf16", 256), ("*i64", 2048),
                                       ("*f8e4m3", 4096)])
def test_bulk_load_compiles_for_dtypes_and_sizes(sig, block):
    ck = bulk_copy.compile({"x_ptr": sig, "y_ptr": sig}, {"BLOCK": block},
                           divisibility=["x_ptr", "y_ptr"], arch="sm_90a")
    assert ck.ptx.count("cp.async.bulk.shared::cluster.global") == 1
    assert ck.cubin[:4] == b"\x7fELF"


@needs_compiler
def test_bulk_load_in_a_loop_tracks_the_phase():
    ck = bulk_copy_loop.compile({"x_ptr": "*f16", "y_ptr": "*f16", "n": "i32"},
                                {"BLOCK": 512}, divisibility=["x_ptr", "y_ptr", "n"],
                                arch="sm_90a")
    ptx = ck.ptx
    # two loads, two barriers, each waited for with a parity register that flips
    assert ptx.count("cp.async.bulk.shared::cluster.global") == 2
    assert ptx.count("mbarrier.try_wait.parity") == 2
    assert ptx.count("mbarrier.init.shared.b64") == 2


@needs_compiler
def test_bulk_load_of_an_unaligned_pointer_is_a_compile_error():
    # Without the divisibility specialization nothing proves x_ptr 16-byte aligned.
    with pytest.raises(CompilationError,
                       match=r"test_bulk_load.py:" + str(source_line(HERE, "bulk-load-copy")) +
                       r":.*'tile.bulk_load' op needs a 16-byte aligned pointer for "
                       r"cp.async.bulk, but it is only known to be 1-byte aligned"):
        bulk_copy.compile({"x_ptr": "*f32", "y_ptr": "*f32"}, {"BLOCK": 64}, arch="sm_90a")


@kiln.jit
def _bulk_offset_by_one(x_ptr, y_ptr):
    t = kl.bulk_load(x_ptr + 1, 64)  # E-bulk-offset
    kl.store(y_ptr + kl.arange(0, 64), t)


@needs_compiler
def test_bulk_load_of_an_offset_pointer_is_a_compile_error():
    with pytest.raises(CompilationError,
                       match=r"test_bulk_load.py:" + str(source_line(HERE, "E-bulk-offset")) +
                       r":.*only known to be 2-byte aligned"):
        _bulk_offset_by_one.compile({"x_ptr": "*f16", "y_ptr": "*f16"},
                                    divisibility=["x_ptr", "y_ptr"], arch="sm_90a")


# ---------------------------------------------------------------------------
# Front-end errors
# ---------------------------------------------------------------------------


@kiln.jit
def _e_bulk_tile(x_ptr):
    t = kl.bulk_load(x_ptr + kl.arange(0, 16), 16)  # E-bulk-tile
    kl.store(x_ptr + kl.arange(0, 16), t)


@kiln.jit
def _e_bulk_bytes(x_ptr):
    t = kl.bulk_load(x_ptr, 2)  # E-bulk-bytes
    kl.store(x_ptr + kl.arange(0, 2), t)


@kiln.jit
def _e_bulk_pow2(x_ptr):
    t = kl.bulk_load(x_ptr, 12)  # E-bulk-pow2
    kl.store(x_ptr, kl.sum(t, axis=0))


@kiln.jit
def _e_bulk_runtime(x_ptr, n):
    t = kl.bulk_load(x_ptr, n)  # E-bulk-runtime
    kl.store(x_ptr, kl.sum(t, axis=0))


@kiln.jit
def _e_bulk_not_ptr(x_ptr):
    t = kl.bulk_load(kl.load(x_ptr), 16)  # E-bulk-not-ptr
    kl.store(x_ptr + kl.arange(0, 16), t)


@kiln.jit
def _e_bulk_huge(x_ptr):
    t = kl.bulk_load(x_ptr, 262144)  # E-bulk-huge
    kl.store(x_ptr, kl.sum(t, axis=0))


ERRORS = [
    (_e_bulk_tile, "E-bulk-tile", "bulk_load copies a contiguous range from one scalar "
                                  "pointer, got a tile of pointers"),
    (_e_bulk_bytes, "E-bulk-bytes", "bulk_load: 2 x float32 is 8 bytes; cp.async.bulk copies "
                                    "a multiple of 16 bytes (at least 4 float32 elements)"),
    (_e_bulk_pow2, "E-bulk-pow2", "bulk_load: the size is a tile dimension and must be a "
                                  "positive power of two, got 12"),
    (_e_bulk_runtime, "E-bulk-runtime", "bulk_load: the size must be a constexpr"),
    (_e_bulk_not_ptr, "E-bulk-not-ptr", "bulk_load expects a scalar pointer, got f32"),
    (_e_bulk_huge, "E-bulk-huge", "bulk_load: 262144 x float32 is 1048576 bytes; one bulk "
                                  "load moves fewer than 1048576 (2^20) bytes"),
]


@needs_compiler
@pytest.mark.parametrize("kernel,marker,message", ERRORS)
def test_bulk_load_errors_at_the_line(kernel, marker, message):
    sig = {"x_ptr": "*f32", "n": "i32"} if kernel is _e_bulk_runtime else {"x_ptr": "*f32"}
    with pytest.raises(CompilationError) as info:
        kernel.compile(sig, upto="tile")
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)


@pytest.mark.parametrize("kernel,marker,message", ERRORS)
def test_interpreter_reports_the_same_bulk_load_errors(kernel, marker, message):
    args = (np.zeros(64, np.float32),) + ((16,) if kernel is _e_bulk_runtime else ())
    with pytest.raises(CompilationError) as info:
        interpret(kernel, (1,), *args)
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)


# ---------------------------------------------------------------------------
# A runtime element count, and pipelined loops (kl.range(..., num_stages=N))
# ---------------------------------------------------------------------------


@kiln.jit
def bulk_ragged_rows(x_ptr, y_ptr, n_rows, H, stride, BLOCK: kl.constexpr,
                     STAGES: kl.constexpr, RAGGED: kl.constexpr):
    """Program p copies rows p, p + grid, ... of H (RAGGED: H - 8 * (j % 4)) elements of
    stride `stride` into rows of BLOCK (the lanes past the count are zero), through a
    STAGES-slot ring."""
    for j in kl.range(kl.program_id(0), n_rows, kl.num_programs(0), num_stages=STAGES):
        n = H - 8 * (j % 4) if RAGGED else H
        row = kl.bulk_load(x_ptr + j * stride, BLOCK, count=n)  # bulk-load-count
        kl.store(y_ptr + j * BLOCK + kl.arange(0, BLOCK), row)


@kiln.jit
def bulk_rows_sum(x_ptr, y_ptr, n_rows, H, STAGES: kl.constexpr, BLOCK: kl.constexpr):
    """y = the f32 sum of the rows of H elements (in row order) through a STAGES-slot ring,
    with the row pointer a select of two tensors (odd rows from the second half)."""
    acc = kl.zeros((BLOCK,), kl.float32)
    half = n_rows * H
    for j in kl.range(0, n_rows, num_stages=STAGES):
        p = kl.where(j % 2 == 1, x_ptr + half + j * H, x_ptr + j * H)
        acc += kl.bulk_load(p, BLOCK, count=H).to(kl.float32)
    kl.store(y_ptr + kl.arange(0, BLOCK), acc)


def ragged_reference(x, n_rows, h, stride, block, ragged):
    y = np.zeros((n_rows, block), x.dtype)
    for j in range(n_rows):
        n = h - 8 * (j % 4) if ragged else h
        y[j, :n] = x[j * stride:j * stride + n]
    return y


@pytest.mark.parametrize("stages", [1, 2, 4])
@pytest.mark.parametrize("ragged", [False, True])
@pytest.mark.parametrize("programs", [1, 3])
def test_interpreter_bulk_load_count(stages, ragged, programs):
    n_rows, h, stride, block = 11, 56, 64, 64
    x = random_array(ml_dtypes.bfloat16, n_rows * stride, stages)
    y = np.full((n_rows, block), 7, ml_dtypes.bfloat16)
    interpret(bulk_ragged_rows, (programs,), x, y, n_rows, h, stride, BLOCK=block,
              STAGES=stages, RAGGED=ragged)
    expect = ragged_reference(x, n_rows, h, stride, block, ragged)
    np.testing.assert_array_equal(y.view(np.uint16), expect.view(np.uint16))


def test_interpreter_bulk_rows_sum_of_a_selected_pointer():
    n_rows, h, block = 9, 24, 32
    x = random_array(np.float16, 2 * n_rows * h, 3)
    y = np.zeros(block, np.float32)
    interpret(bulk_rows_sum, (1,), x, y, n_rows, h, STAGES=3, BLOCK=block)
    expect = np.zeros(block, np.float32)
    for j in range(n_rows):
        base = n_rows * h if j % 2 else 0
        expect[:h] += x[base + j * h:base + (j + 1) * h].astype(np.float32)
    np.testing.assert_array_equal(y, expect)


def test_interpreter_rejects_a_count_of_partial_16_byte_units():
    x = np.zeros(128, ml_dtypes.bfloat16)
    y = np.zeros((1, 64), ml_dtypes.bfloat16)
    with pytest.raises(CompilationError) as info:
        interpret(bulk_ragged_rows, (1,), x, y, 1, 60, 64, BLOCK=64, STAGES=1, RAGGED=False)
    assert ("bulk_load through 'x_ptr': a count of 60 elements is 120 bytes, not a multiple "
            "of 16") in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, "bulk-load-count")


def test_interpreter_rejects_a_count_past_the_size():
    x = np.zeros(128, ml_dtypes.bfloat16)
    y = np.zeros((1, 64), ml_dtypes.bfloat16)
    with pytest.raises(CompilationError) as info:
        interpret(bulk_ragged_rows, (1,), x, y, 1, 72, 64, BLOCK=64, STAGES=1, RAGGED=False)
    assert "bulk_load through 'x_ptr': the count 72 is outside [0, 64]" in info.value.message


def test_interpreter_checks_only_the_counted_elements_in_bounds():
    # the last row's 56 elements end exactly at the end of x: the 8 lanes past the count
    # are not read
    n_rows, h, stride, block = 3, 56, 64, 64
    x = random_array(ml_dtypes.bfloat16, (n_rows - 1) * stride + h, 1)
    y = np.zeros((n_rows, block), ml_dtypes.bfloat16)
    interpret(bulk_ragged_rows, (1,), x, y, n_rows, h, stride, BLOCK=block, STAGES=2,
              RAGGED=False)
    expect = ragged_reference(x, n_rows, h, stride, block, False)
    np.testing.assert_array_equal(y.view(np.uint16), expect.view(np.uint16))


RAGGED_SIG = {"x_ptr": "*bf16", "y_ptr": "*bf16", "n_rows": "i32", "H": "i32", "stride": "i32"}


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("stages", [3, 4])
def test_pipelined_bulk_load_ptx(arch, stages):
    ck = bulk_ragged_rows.compile(RAGGED_SIG, {"BLOCK": 8192, "STAGES": stages, "RAGGED": True},
                                  divisibility=["x_ptr", "y_ptr", "H", "stride"], arch=arch,
                                  num_warps=16)
    ptx = ck.ptx
    # one ring of `stages` 16 KiB slots then their 8-byte barriers (dynamic shared
    # memory), each barrier initialized once; stages - 1 prologue issues and the one in the
    # loop
    assert ck.meta["shared_bytes"] == stages * 16384 + 8 * stages
    assert ptx.count("mbarrier.init.shared.b64") == stages
    assert ptx.count("cp.async.bulk.shared::cluster.global") == stages
    assert ptx.count("mbarrier.try_wait.parity") == 1
    assert "__kiln_bulk_buffer" not in ptx
    assert "min.u32" in ptx and "selp" in ptx
    assert ck.cubin[:4] == b"\x7fELF"


@needs_compiler
def test_a_one_stage_bulk_load_is_not_pipelined():
    ck = bulk_ragged_rows.compile(RAGGED_SIG, {"BLOCK": 1024, "STAGES": 1, "RAGGED": False},
                                  divisibility=["x_ptr", "y_ptr", "H", "stride"], arch="sm_90a")
    assert "__kiln_tma_ring" not in ck.ptx and "__kiln_bulk_buffer" in ck.ptx


@needs_compiler
def test_pipelined_bulk_load_of_a_selected_pointer_compiles():
    ck = bulk_rows_sum.compile({"x_ptr": "*f16", "y_ptr": "*f32", "n_rows": "i32", "H": "i32"},
                               {"STAGES": 4, "BLOCK": 8192},
                               divisibility=["x_ptr", "y_ptr", "H"], arch="sm_90a",
                               num_warps=16)
    assert ck.ptx.count("mbarrier.init.shared.b64") == 4
    assert ck.cubin[:4] == b"\x7fELF"


@needs_compiler
def test_bulk_load_of_an_unproved_count_is_a_compile_error():
    # H is not specialized divisible: nothing proves whole 16-byte units
    with pytest.raises(CompilationError,
                       match=r"test_bulk_load.py:" + str(source_line(HERE, "bulk-load-count")) +
                       r":.*'tile.ring_issue' op needs a count of whole 16-byte units for "
                       r"cp.async.bulk \(a multiple of 8 'bf16' elements\), but it is only "
                       r"known to be a multiple of 1"):
        bulk_ragged_rows.compile(RAGGED_SIG, {"BLOCK": 1024, "STAGES": 2, "RAGGED": False},
                                 divisibility=["x_ptr", "y_ptr", "stride"], arch="sm_90a")


@kiln.jit
def _e_count_range(x_ptr):
    t = kl.bulk_load(x_ptr, 64, count=72)  # E-count-range
    kl.store(x_ptr + kl.arange(0, 64), t)


@kiln.jit
def _e_count_units(x_ptr):
    t = kl.bulk_load(x_ptr, 64, count=6)  # E-count-units
    kl.store(x_ptr + kl.arange(0, 64), t)


@kiln.jit
def _e_count_float(x_ptr):
    t = kl.bulk_load(x_ptr, 64, count=kl.load(x_ptr))  # E-count-float
    kl.store(x_ptr + kl.arange(0, 64), t)


@kiln.jit
def _e_count_tile(x_ptr):
    t = kl.bulk_load(x_ptr, 64, count=kl.arange(0, 64))  # E-count-tile
    kl.store(x_ptr + kl.arange(0, 64), t)


COUNT_ERRORS = [
    (_e_count_range, "E-count-range", "bulk_load: the count must be in [0, 64] (the size), "
                                      "got 72"),
    (_e_count_units, "E-count-units", "bulk_load: a count of 6 x float32 is 24 bytes; "
                                      "cp.async.bulk copies whole 16-byte units (a multiple "
                                      "of 4 float32 elements)"),
    (_e_count_float, "E-count-float", "bulk_load: the count must be an integer, got f32"),
    (_e_count_tile, "E-count-tile", "bulk_load: the count must be a scalar, got a tile"),
]


@needs_compiler
@pytest.mark.parametrize("kernel,marker,message", COUNT_ERRORS)
def test_bulk_load_count_errors_at_the_line(kernel, marker, message):
    with pytest.raises(CompilationError) as info:
        kernel.compile({"x_ptr": "*f32"}, upto="tile")
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)


@pytest.mark.parametrize("kernel,marker,message", COUNT_ERRORS)
def test_interpreter_reports_the_same_bulk_load_count_errors(kernel, marker, message):
    with pytest.raises(CompilationError) as info:
        interpret(kernel, (1,), np.zeros(64, np.float32))
    assert message in info.value.message, str(info.value)
    assert info.value.lineno == source_line(HERE, marker)
