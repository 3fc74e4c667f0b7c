"""gpu_tensor_hash on the GPU against the function documented in
kernels_dsl/kimi_k3/tensor_hash.py (docs/kernels/tensor_hash.md), computed on the host with
numpy from the tensor's bytes: exact equality, empty -> 0, odd byte lengths, several dtypes, a
tensor spanning several tiles, determinism across launches, one-bit sensitivity, argument
checks; the word path on grids smaller than its tile count (blocks dealt out cyclically) gives
the reference's hash at other settings too."""

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from kernels_dsl.kimi_k3 import tensor_hash as mod  # noqa: E402

U64 = np.uint64
MASK = (1 << 64) - 1


def fmix(x):
    x = x ^ (x >> U64(30))
    x = x * U64(mod.M1)
    x = x ^ (x >> U64(27))
    x = x * U64(mod.M2)
    return x ^ (x >> U64(31))


def reference(t):
    data = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    n = len(data)
    if n == 0:
        return 0
    w = np.frombuffer(data + b"\0" * (-n % 4), dtype="<u4").astype(U64)
    i = np.arange(w.size, dtype=U64)
    with np.errstate(over="ignore"):
        s = int(fmix(U64(mod.SEED) ^ (i << U64(32)) ^ w).sum(dtype=U64))
        return int(fmix(np.array([(s + n * mod.GOLDEN) & MASK], dtype=U64))[0])


def cases():
    g = torch.Generator(device="cuda").manual_seed(0)
    yield torch.empty(0, device="cuda", dtype=torch.float32)
    yield torch.randint(0, 256, (1,), device="cuda", dtype=torch.uint8, generator=g)
    yield torch.randint(0, 256, (3,), device="cuda", dtype=torch.uint8, generator=g)
    yield torch.randint(0, 256, (65537,), device="cuda", dtype=torch.uint8, generator=g)
    yield torch.randn(7, device="cuda", dtype=torch.float32, generator=g).bfloat16()  # 14 bytes
    yield torch.randn(3, 333, device="cuda", dtype=torch.float32, generator=g).bfloat16()
    yield torch.randn(257, 129, device="cuda", dtype=torch.float32, generator=g)  # 4 tiles+
    yield torch.randint(-2**31, 2**31 - 1, (4096, 3), device="cuda", dtype=torch.int64,
                        generator=g)


@pytest.mark.parametrize("i", range(8))
def test_matches_reference(launch_mode, i):
    t = list(cases())[i]
    h = mod.gpu_tensor_hash(t)
    assert 0 <= h < 2**64
    assert h == reference(t)
    assert mod.gpu_tensor_hash(t) == h  # deterministic across launches
    if t.numel() == 0:
        assert h == 0


def test_unaligned_views(launch_mode):
    """64 KiB starting 1, 2 and 4 bytes past a 16-byte boundary (the byte path) and 16 bytes
    in (the word path), JIT-compiled and through the bundle."""
    base = torch.randint(0, 256, (70000,), device="cuda", dtype=torch.uint8)
    for start in (1, 2, 4, 16):
        t = base[start:start + 65536]
        assert mod.gpu_tensor_hash(t) == reference(t)


def test_one_bit_change_and_padding():
    t = torch.randint(0, 256, (1001,), device="cuda", dtype=torch.uint8)
    h = mod.gpu_tensor_hash(t)
    u = t.clone()
    u[777] ^= 16
    assert mod.gpu_tensor_hash(u) != h
    padded = torch.cat([t, torch.zeros(1, device="cuda", dtype=torch.uint8)])
    assert mod.gpu_tensor_hash(padded) != h


def test_checks_raise_before_launch():
    x = torch.randn(8, 8, device="cuda")
    with pytest.raises(ValueError, match="contiguous"):
        mod.gpu_tensor_hash(x.t())
    with pytest.raises(ValueError, match="CUDA"):
        mod.gpu_tensor_hash(torch.zeros(4))
    with pytest.raises(TypeError):
        mod.gpu_tensor_hash(np.zeros(4))


@pytest.mark.parametrize("cfg", [dict(), dict(programs_per_sm=1), dict(grid_words=8192),
                                 dict(programs_per_sm=2, grid_words=8192)])
def test_word_path_configurations(cfg):
    """24 MiB + 412 bytes: 769 tiles, a partial last block (25 vectors) and 3 words after the
    last full vector; many blocks per program at programs_per_sm = 1 (numpy reference)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    t = torch.randint(-2**31, 2**31 - 1, ((24 << 20) // 4 + 103,), device="cuda",
                      dtype=torch.int32, generator=g)
    assert mod.gpu_tensor_hash(t, settings=dataclasses.replace(mod.SETTINGS, **cfg)) == \
        reference(t)


@pytest.mark.parametrize("grid_words", [8192, 1024])
@pytest.mark.parametrize("words", [8193, 12000, 65536, 229376 + 3, 3 << 20])
def test_grid_units_and_pdl(grid_words, words):
    """The word path's grid in tile- or block-word units (one block a program up to the SM
    bound), from just past one program to many blocks a program; consecutive hashes of
    changing tensors (PDL: each pass waits for the one before)."""
    settings = dataclasses.replace(mod.SETTINGS, grid_words=grid_words)
    g = torch.Generator(device="cuda").manual_seed(words)
    t = torch.randint(-2**31, 2**31 - 1, (words,), device="cuda", dtype=torch.int32,
                      generator=g)
    for _ in range(3):
        t = t * 3 + 1  # written by the kernel just before the hash
        assert mod.gpu_tensor_hash(t, settings=settings) == reference(t)


@pytest.mark.parametrize("words", [1, 4, 259, 3584, 8192, 8195])
def test_word_path_single_program(words):
    """Word-path tensors of up to a tile (one program with FINISH; 3584 words: a [1, 7168]
    bf16 row, T = 1) and just past one (two programs), numpy reference."""
    g = torch.Generator(device="cuda").manual_seed(words)
    t = torch.randint(-2**31, 2**31 - 1, (words,), device="cuda", dtype=torch.int32,
                      generator=g)
    assert mod.gpu_tensor_hash(t) == reference(t)
