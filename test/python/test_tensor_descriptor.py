"""Tensor descriptors without a GPU: the interpreter's TMA semantics (zero fill, clipped
stores) against numpy, the kernel signature and metadata, the PTX per arch, and the host-side
checks of kiln.TensorDescriptor."""

import warnings

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.testing import interpret


@kiln.jit
def affine(src, dst, BM: kl.constexpr, BN: kl.constexpr):
    i = kl.program_id(0) * BM
    j = kl.program_id(1) * BN
    dst.store([i, j], src.load([i, j]) * 2 + 1)


@kiln.jit
def shifted(src, dst, BM: kl.constexpr, BN: kl.constexpr):
    # Boxes that start before the tensor: the outside reads as zero.
    i = kl.program_id(0) * BM - 3
    dst.store((kl.program_id(0) * BM, 0), src.load((i, -5)))


@kiln.jit
def bad_offsets(src, dst, BM: kl.constexpr, BN: kl.constexpr):
    dst.store([0, 0], src.load([0]))


@kiln.jit
def bad_method(x_ptr, BM: kl.constexpr, BN: kl.constexpr):
    x_ptr.load([0, 0])


def test_interpreter_edges():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 50)).astype(np.float32)
    y = np.full((37, 50), 7, np.float32)
    interpret(affine, (3, 4), kiln.TensorDescriptor.from_tensor(x, [16, 16]),
              kiln.TensorDescriptor.from_tensor(y, [16, 16]), BM=16, BN=16)
    np.testing.assert_array_equal(y, x * 2 + 1)


def test_interpreter_zero_fill():
    x = np.arange(1, 8 * 32 + 1, dtype=np.float32).reshape(8, 32)
    y = np.full((8, 32), -1, np.float32)
    interpret(shifted, (1,), kiln.TensorDescriptor.from_tensor(x, [8, 16]),
              kiln.TensorDescriptor.from_tensor(y, [8, 16]), BM=8, BN=16)
    expected = np.full((8, 32), -1, np.float32)
    box = np.zeros((8, 16), np.float32)
    box[3:, 5:] = x[:5, :11]
    expected[:, :16] = box
    np.testing.assert_array_equal(y, expected)


def test_signature_and_metadata():
    x = np.zeros((64, 128), np.float16)
    d = kiln.TensorDescriptor.from_tensor(x, [32, 64])
    assert d.signature == "tensordesc<f16,32x64>"
    ck = affine.compile({"src": d.signature, "dst": d.signature},
                        constexprs={"BM": 32, "BN": 64}, arch="sm_90a", upto="ptx")
    params = ck.meta["params"]
    assert params[0] == {"name": "src", "kind": "tensormap", "dtype": "f16", "box": [32, 64],
                         "swizzle": 0, "divisibility": 1}
    assert {"tma", "mbarrier", "elect"} <= set(ck.meta["features"])


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_ptx_per_arch(arch):
    sig = "tensordesc<bf16,64x128>"
    ck = affine.compile({"src": sig, "dst": sig}, constexprs={"BM": 64, "BN": 128}, arch=arch)
    ptx = ck.ptx
    assert f".target {arch}" in ptx
    assert ".param .align 64 .b8 affine_param_0[128]" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "elect.sync" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in ptx
    assert "fence.proxy.async.shared::cta" in ptx
    assert ck.cubin[:4] == b"\x7fELF"


@kiln.jit
def pipelined_sums(src, out_ptr, n_rows, BM: kl.constexpr, STAGES: kl.constexpr):
    for r in kl.range(kl.program_id(0) * BM, n_rows, kl.num_programs(0) * BM,
                      num_stages=STAGES):
        rows = r + kl.arange(0, BM)
        kl.store(out_ptr + rows, kl.sum(src.load([r, 0]), axis=1), mask=rows < n_rows)


@kiln.jit
def paged_sums(src, table, out_ptr, n_rows, BM: kl.constexpr, PAGE: kl.constexpr,
               STAGES: kl.constexpr):
    # A paged row: the block table maps the page of r to a page of src.
    for r in kl.range(kl.program_id(0) * BM, n_rows, kl.num_programs(0) * BM,
                      num_stages=STAGES):
        row = kl.load(table + r // PAGE) * PAGE + r % PAGE
        rows = r + kl.arange(0, BM)
        kl.store(out_ptr + rows, kl.sum(src.load([row, 0]), axis=1), mask=rows < n_rows)


@kiln.jit
def paged_sums_rewritten(src, table, out_ptr, n_rows, BM: kl.constexpr, PAGE: kl.constexpr,
                         STAGES: kl.constexpr):
    for r in kl.range(kl.program_id(0) * BM, n_rows, kl.num_programs(0) * BM,
                      num_stages=STAGES):
        row = kl.load(table + r // PAGE) * PAGE + r % PAGE
        rows = r + kl.arange(0, BM)
        block = src.load([row, 0])  # not pipelined: the kernel writes the table
        kl.store(out_ptr + rows, kl.sum(block, axis=1), mask=rows < n_rows)
    kl.store(table, 0)  # blocks the pipelining


@kiln.jit
def bad_stages(src, BM: kl.constexpr):
    for r in kl.range(0, 4, num_stages=0):
        src.load([r, 0])


def test_pipelined_loop_interpreter_and_ptx():
    x = np.random.default_rng(1).standard_normal((45, 32)).astype(np.float32)
    out = np.zeros(45, np.float32)
    interpret(pipelined_sums, (3,), kiln.TensorDescriptor.from_tensor(x, [8, 32]), out, 45,
              BM=8, STAGES=3)
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    sig = {"src": "tensordesc<f32,8x32>", "out_ptr": "*f32", "n_rows": "i32"}
    tile = pipelined_sums.compile(sig, constexprs={"BM": 8, "STAGES": 3}, upto="tile").tile_ir
    assert "tile.num_stages = 3" in str(tile)
    ptx = pipelined_sums.compile(sig, constexprs={"BM": 8, "STAGES": 3}, arch="sm_90a").ptx
    assert ptx.count("mbarrier.init.shared.b64") == 3
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cta.global") == 3  # 2 ahead + 1 in loop


def test_paged_loop_interpreter_and_ptx():
    # The block-table read of a coordinate is repeated for the iterations issued ahead
    # (kiln-tile-pipeline-loads), under the same bound check as their TMA copies.
    x = np.random.default_rng(2).standard_normal((64, 32)).astype(np.float32)
    table = np.array([3, 0, 2, 1], np.int32)  # 4 pages of 16 rows; rows 0 .. 47 used
    out = np.zeros(48, np.float32)
    interpret(paged_sums, (2,), kiln.TensorDescriptor.from_tensor(x, [8, 32]), table, out, 48,
              BM=8, PAGE=16, STAGES=3)
    rows = table[np.arange(48) // 16] * 16 + np.arange(48) % 16
    np.testing.assert_allclose(out, x[rows].sum(axis=1), rtol=1e-5, atol=1e-5)
    sig = {"src": "tensordesc<f32,8x32>", "table": "*i32", "out_ptr": "*f32", "n_rows": "i32"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", kiln.CompilationWarning)  # pipelined: no warning
        ptx = paged_sums.compile(sig, constexprs={"BM": 8, "PAGE": 16, "STAGES": 3},
                                 arch="sm_90a").ptx
    assert ptx.count("mbarrier.init.shared.b64") == 3
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cta.global") == 3  # 2 ahead + 1 in loop
    assert ptx.count("ld.global.b32") == 3  # the table entries of those iterations


def _line_of(text):
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def test_unpipelined_load_warns_at_its_line():
    # A load of a num_stages loop that stays synchronous warns once at the user's line,
    # with the line that blocks it as a note; the kernel still compiles.
    sig = {"src": "tensordesc<f32,8x32>", "table": "*i32", "out_ptr": "*f32", "n_rows": "i32"}
    with pytest.warns(kiln.CompilationWarning) as record:
        paged_sums_rewritten.compile(sig, constexprs={"BM": 8, "PAGE": 16, "STAGES": 3},
                                     arch="sm_90a")
    assert len(record) == 1
    message = str(record[0].message)
    load, store = _line_of("# not pipelined"), _line_of("# blocks the pipelining")
    assert message.startswith(f"{__file__}:{load}:")
    assert "warning: 'tile.desc_load' is not pipelined (tile.num_stages = 3): its " \
           "coordinates depend on 'tile.load' of memory that 'tile.store' writes" in message
    assert f"note: {__file__}:{store}: here" in message
    # A warning followed by an error (its box alone overflows shared memory): both arrive.
    sig["src"] = "tensordesc<f32,256x256>"
    with pytest.warns(kiln.CompilationWarning, match=f":{load}:.* is not pipelined"):
        with pytest.raises(CompilationError, match=f":{load}:.* bytes of shared memory"):
            paged_sums_rewritten.compile(sig, constexprs={"BM": 256, "PAGE": 256, "STAGES": 3},
                                         arch="sm_90a")


def test_frontend_errors():
    sig = "tensordesc<f32,16x16>"
    with pytest.raises(CompilationError, match="rank 2, got 1 offsets"):
        bad_offsets.compile({"src": sig, "dst": sig}, constexprs={"BM": 16, "BN": 16},
                            upto="tile")
    with pytest.raises(CompilationError, match="num_stages must be a positive constexpr int"):
        bad_stages.compile({"src": sig}, constexprs={"BM": 16}, upto="tile")
    with pytest.raises(CompilationError, match="method of tensor descriptors"):
        bad_method.compile({"x_ptr": "*f32"}, constexprs={"BM": 16, "BN": 16}, upto="tile")


def test_host_checks():
    x = np.zeros((64, 128), np.float32)
    with pytest.raises(ValueError, match="powers of two"):
        kiln.TensorDescriptor.from_tensor(x, [48, 16])
    with pytest.raises(ValueError, match="multiple of 16"):
        kiln.TensorDescriptor.from_tensor(x, [16, 2])
    with pytest.raises(ValueError, match="contiguous"):
        kiln.TensorDescriptor.from_tensor(x.T, [16, 16])
    with pytest.raises(ValueError, match="swizzle span"):
        kiln.TensorDescriptor.from_tensor(x, [16, 64], swizzle=64)
    with pytest.raises(ValueError, match="same rank"):
        kiln.TensorDescriptor(x, [16])


# ---------------------------------------------------------------------------
# Wide boxes: 128-byte swizzled rows of several 128-byte spans
# ---------------------------------------------------------------------------


def test_wide_box_host(monkeypatch):
    # The kernel's type keeps the whole box; the map holds one 128-byte column chunk of
    # it (the kernel issues a copy a chunk), which the runtime's span rule accepts.
    from kiln import _runtime

    x = np.zeros((256, 512), np.float16)
    d = kiln.TensorDescriptor.from_tensor(x, [64, 256], swizzle=128)
    assert d.signature == "tensordesc<f16,64x256,sw128>"
    assert d.key() == ("f16", (64, 256), 128)
    assert d.encoded_box == (64, 64)
    assert kiln.TensorDescriptor.from_tensor(x, [64, 64], swizzle=128).encoded_box == (64, 64)
    assert kiln.TensorDescriptor.from_tensor(x, [8, 256]).encoded_box == (8, 256)
    geometry = (1 << 20, "f16", [512, 256], [1024])
    assert _runtime.validate_tensor_map(*geometry, [64, 64], 128) == ""
    assert "swizzle span" in _runtime.validate_tensor_map(*geometry, [256, 64], 128)
    seen = []
    monkeypatch.setattr(kiln.TensorDescriptor, "address", property(lambda self: 1 << 20))
    monkeypatch.setattr(_runtime, "encode_tensor_map",
                        lambda *args: seen.append(args) or bytes(128))
    assert d.encode() == bytes(128)
    assert seen == [(1 << 20, "f16", [512, 256], [1024], [64, 64], 128)]


def test_wide_box_host_checks():
    x = np.zeros((64, 512), np.float32)
    with pytest.raises(ValueError, match="multiple of 8 rows, got 4"):
        kiln.TensorDescriptor.from_tensor(x, [4, 64], swizzle=128)
    with pytest.raises(ValueError, match="64-byte swizzle span"):
        kiln.TensorDescriptor.from_tensor(x, [8, 32], swizzle=64)
    # rows are the product of the outer dimensions
    y = np.zeros((4, 8, 256), np.float16)
    assert kiln.TensorDescriptor.from_tensor(y, [2, 4, 128], swizzle=128).encoded_box == \
        (2, 4, 64)


def test_wide_box_interpreter_roundtrip():
    # The interpreter copies boxes element by element: a wide box reads and writes the
    # same elements as any box, edges included.
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 200)).astype(np.float16)
    y = np.full((40, 200), 7, np.float16)
    interpret(affine, (3, 2), kiln.TensorDescriptor.from_tensor(x, [16, 128], swizzle=128),
              kiln.TensorDescriptor.from_tensor(y, [16, 128], swizzle=128), BM=16, BN=128)
    np.testing.assert_array_equal(y, x * np.float16(2) + np.float16(1))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
@pytest.mark.parametrize("box", [(64, 128), (128, 256)])
def test_wide_box_ptx_per_arch(arch, box):
    # One TMA copy a 128-byte chunk each way (two for 256-byte rows, four for 512), the
    # load's one expect_tx of the whole box; assembled for every arch.
    sig = f"tensordesc<bf16,{box[0]}x{box[1]},sw128>"
    ck = affine.compile({"src": sig, "dst": sig}, constexprs={"BM": box[0], "BN": box[1]},
                        arch=arch)
    ptx = ck.ptx
    chunks = box[1] * 2 // 128
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cta.global.tile") == chunks
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") == chunks
    assert ptx.count("mbarrier.arrive.expect_tx") == 1
    assert f", {box[0] * box[1] * 2};" in ptx  # the expect_tx bytes
    assert ck.cubin[:4] == b"\x7fELF"
    assert ck.meta["params"][0]["box"] == list(box)


@kiln.jit
def acquire_release(x_ptr, y_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    v = kl.load(x_ptr + offs, sem="acquire", scope="gpu")
    kl.fence("acq_rel", "sys")
    kl.store(y_ptr + offs, v + 1, sem="release", scope="cta")


@kiln.jit
def bad_ordering(x_ptr, BLOCK: kl.constexpr):
    kl.store(x_ptr, 1, sem="acquire", scope="gpu")


def test_ordered_accesses_interpreter_and_ptx():
    x = np.arange(64, dtype=np.int32)
    y = np.zeros(64, np.int32)
    interpret(acquire_release, (1,), x, y, BLOCK=64)
    np.testing.assert_array_equal(y, x + 1)
    for arch in ("sm_90a", "sm_100a", "sm_103a"):
        ck = acquire_release.compile({"x_ptr": "*i32", "y_ptr": "*i32"},
                                     constexprs={"BLOCK": 64}, arch=arch)
        assert "ld.acquire.gpu.global.b32" in ck.ptx
        assert "fence.acq_rel.sys;" in ck.ptx
        assert "st.release.cta.global.b32" in ck.ptx
        assert "ld.global.v" not in ck.ptx and "st.global.v" not in ck.ptx
    with pytest.raises(CompilationError, match="sem must be one of relaxed, release"):
        bad_ordering.compile({"x_ptr": "*i32"}, constexprs={"BLOCK": 1}, upto="tile")
