"""gpu_tensor_hash (docs/kernels/tensor_hash.md) on the CPU: both kernels compile to PTX and a
cubin for sm_90a / sm_100a / sm_103a, and the interpreter's result equals a numpy reference
written from the function documented in kernels_dsl/kimi_k3/tensor_hash.py; it does not depend
on the tile size or grid, a one-bit change changes it, n % 4 != 0 and the empty input are
handled; the word path (blocks dealt out cyclically to a grid) gives the same hash for every
grid, including programs with no full block and odd and even block counts; every kernel the
bundle ships is a launch of the wrapper with the default settings."""

import dataclasses
import re
import sys
import types

import numpy as np
import pytest

import kiln
from kernels_dsl.kimi_k3 import tensor_hash as th
from kiln.testing import interpret

from launch_choices import record_launch_choices  # noqa: E402

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
U64 = np.uint64
MASK = (1 << 64) - 1
SEED, M1, M2, GOLDEN = 0x243F6A88, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0x9E3779B97F4A7C15


def np_fmix(x):
    x = x ^ (x >> U64(30))
    x = x * U64(M1)
    x = x ^ (x >> U64(27))
    x = x * U64(M2)
    return x ^ (x >> U64(31))


def py_fmix(x):
    x ^= x >> 30
    x = (x * M1) & MASK
    x ^= x >> 27
    x = (x * M2) & MASK
    return x ^ (x >> 31)


def ref_hash(data: bytes) -> int:
    """The documented function, vectorized with numpy (uint64 wraps mod 2**64)."""
    n = len(data)
    if n == 0:
        return 0
    buf = np.frombuffer(bytes(data) + b"\0" * (-n % 4), dtype="<u4").astype(U64)
    idx = np.arange(buf.size, dtype=U64)
    with np.errstate(over="ignore"):
        s = int(np_fmix(U64(SEED) ^ (idx << U64(32)) ^ buf).sum(dtype=U64))
    return py_fmix((s + n * GOLDEN) & MASK)


S = th.SETTINGS


def interp_hash(data: bytes, tile=S.tile, block=S.block, chunk=S.chunk,
                words=False, two_pass=False) -> int:
    """Runs the passes as the wrapper launches them without an SM count (empty -> 0, no
    launch; one tile: pass 1 alone with FINISH; else one program per tile words); ``words``:
    the WORDS path (int32 words, n % 4 == 0)."""
    n = len(data)
    if n == 0:
        return 0
    x = np.frombuffer(bytes(data), dtype=np.uint8).copy()
    if words:
        x = x.view(np.int32)
    num_partials = kiln.cdiv(kiln.cdiv(n, 4), tile)
    partials = np.full(num_partials, 0x5A5A5A5A, dtype=np.int64)  # poisoned
    out = np.full(1, -1, dtype=np.int64)
    if num_partials == 1 and not two_pass:
        interpret(th.tensor_hash_partials_kernel, (1,), x, out, n, TILE=tile, BLOCK=block,
                  WORDS=words, FINISH=True)
        return int(out[0]) & MASK
    interpret(th.tensor_hash_partials_kernel, (num_partials,), x, partials, n, TILE=tile,
              BLOCK=block, WORDS=words)
    interpret(th.tensor_hash_finish_kernel, (1,), partials, out, num_partials, n, CHUNK=chunk)
    return int(out[0]) & MASK


@pytest.mark.parametrize("words,n", [(False, 1), (False, 1000), (True, 28), (True, 4096)])
def test_single_tile_finish_equals_two_passes(words, n):
    """One tile: pass 1 with FINISH gives the two passes' hash (and the reference's)."""
    data = rand_bytes(n, 3 * n + words)
    one = interp_hash(data, words=words)
    assert one == interp_hash(data, words=words, two_pass=True) == ref_hash(data)


def rand_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


LENGTHS = [0, 1, 3, 4, 5, 1000, 65537]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("spec", th.AOT_SPECIALIZATIONS, ids=lambda s: s.kernel_name)
def test_compiles_to_ptx_and_cubin(spec, arch):
    pytest.importorskip("kiln._C")
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name)
    assert f".target {arch}" in ck.ptx
    assert f".visible .entry {spec.kernel_name}(" in ck.ptx
    assert ck.cubin[:4] == b"\x7fELF"
    # 64-bit unsigned mixing: logical shifts, both splitmix64 multipliers, 64-bit xor
    assert "shr.u64" in ck.ptx and "xor.b64" in ck.ptx
    assert str(M1 - (1 << 64)) in ck.ptx and str(M2 - (1 << 64)) in ck.ptx
    if spec.constexprs.get("WORDS"):  # 16-byte vectors of words, no byte loads
        # (v4.b32 on sm_90a; LLVM may pick v2.b64 on Blackwell)
        assert re.search(r"\bld\.global(\.\w+)*\.(v4\.b32|v2\.b64)\b", ck.ptx)
        assert "ld.global.b8" not in ck.ptx


def test_reference_matches_module_docstring_form():
    for n in LENGTHS[:6]:
        data = rand_bytes(n, n)
        assert ref_hash(data) == th.reference_hash(data)


@pytest.mark.parametrize("n", LENGTHS)
def test_interpreter_matches_reference(n):
    data = rand_bytes(n, 17 + n)
    assert interp_hash(data) == ref_hash(data)


def test_empty_is_zero():
    assert ref_hash(b"") == 0 and th.reference_hash(b"") == 0 and interp_hash(b"") == 0


@pytest.mark.parametrize("n", [5, 1000, 65537])
def test_independent_of_tile_and_grid(n):
    data = rand_bytes(n, 3 * n)
    got = {interp_hash(data, tile, block, chunk)
           for tile, block, chunk in [(S.tile, S.block, S.chunk), (32, 32, 16), (256, 64, 4),
                                      (1024, 256, 1024), (64, 64, 2)]}
    assert got == {ref_hash(data)}
    assert interp_hash(data) == interp_hash(data)  # and across launches


def test_one_bit_change_changes_hash():
    data = bytearray(rand_bytes(1000, 5))
    base = interp_hash(bytes(data), 64, 32, 16)
    seen = {base}
    for byte, bit in [(0, 0), (3, 7), (4, 0), (511, 3), (999, 7)]:
        d = bytearray(data)
        d[byte] ^= 1 << bit
        h = interp_hash(bytes(d), 64, 32, 16)
        assert h == ref_hash(bytes(d))
        seen.add(h)
    assert len(seen) == 6


def test_padding_and_length():
    # zero padding must not make b"x" and b"x\0" (or b"x\0\0\0") collide: the length enters
    data = rand_bytes(7, 9)
    hashes = [interp_hash(data + b"\0" * k) for k in range(6)]
    assert len(set(hashes)) == 6
    assert hashes == [ref_hash(data + b"\0" * k) for k in range(6)]
    # swapping two words changes the hash (the word index enters each mix)
    a, b = rand_bytes(4, 1), rand_bytes(4, 2)
    assert interp_hash(a + b) != interp_hash(b + a)


#: word counts around the 16-byte vectors (0-3 tail words), a block, a tile and several tiles
WORD_LENGTHS = [4, 8, 12, 16, 20, 28, 1020, 4096, 4100, 65540, 3 * 4 * 8192 + 12]


@pytest.mark.parametrize("n", WORD_LENGTHS)
def test_words_path_matches_reference(n):
    data = rand_bytes(n, 29 + n)
    assert interp_hash(data, words=True) == ref_hash(data) == interp_hash(data)


@pytest.mark.parametrize("n", [28, 4100, 65540])
def test_words_path_independent_of_tile_and_grid(n):
    data = rand_bytes(n, 7 * n)
    got = {interp_hash(data, tile, block, chunk, words=True)
           for tile, block, chunk in [(S.tile, S.block, S.chunk), (32, 32, 16), (256, 64, 4),
                                      (2048, 2048, 1024), (64, 16, 2), (16384, 4096, 64)]}
    assert got == {ref_hash(data)}


def test_words_path_one_bit_change():
    data = bytearray(rand_bytes(1000, 11))
    seen = {interp_hash(bytes(data), 64, 32, 16, words=True)}
    for byte, bit in [(0, 0), (3, 7), (4, 0), (511, 3), (999, 7)]:
        d = bytearray(data)
        d[byte] ^= 1 << bit
        h = interp_hash(bytes(d), 64, 32, 16, words=True)
        assert h == ref_hash(bytes(d))
        seen.add(h)
    assert len(seen) == 6


def interp_hash_cyclic(data: bytes, grid: int, block: int = S.block,
                       chunk: int = S.chunk) -> int:
    """The word path as ``launch_hash`` runs it on ``grid`` programs (n % 4 == 0): one
    program with FINISH, else both passes."""
    n = len(data)
    x = np.frombuffer(bytes(data), dtype=np.uint8).copy().view(np.int32)
    partials = np.full(grid, 0x5A5A5A5A, dtype=np.int64)  # poisoned
    out = np.full(1, -1, dtype=np.int64)
    ce = dict(TILE=S.tile, BLOCK=block, WORDS=True)
    if grid == 1:
        interpret(th.tensor_hash_partials_kernel, (1,), x, out, n, FINISH=True, **ce)
        return int(out[0]) & MASK
    interpret(th.tensor_hash_partials_kernel, (grid,), x, partials, n, **ce)
    interpret(th.tensor_hash_finish_kernel, (1,), partials, out, grid, n, CHUNK=chunk)
    return int(out[0]) & MASK


#: byte lengths around the vectors and blocks of BLOCK = 16 / 64 words: no full block, one,
#: a partial last block, 0-3 words after the last full vector, many blocks per program
CYCLIC_LENGTHS = [4, 28, 64, 256, 1020, 4100, 65540]


@pytest.mark.parametrize("n", CYCLIC_LENGTHS)
def test_cyclic_words_path_matches_reference(n):
    data = rand_bytes(n, 13 * n + 1)
    want = ref_hash(data)
    got = {interp_hash_cyclic(data, grid, block)
           for grid, block in [(1, 16), (2, 16), (3, 64), (5, 16), (8, 64)]}
    assert got == {want}


def test_cyclic_pdl_same_hash():
    data = rand_bytes(65540, 31)
    assert interp_hash_cyclic(data, 3, 64) == ref_hash(data)


def test_grid_units(monkeypatch):
    """launch_hash's word-path grid: one program up to tile words (FINISH), past it
    ceil(words / grid_words) programs bounded by programs_per_sm x SMs; the partials buffer
    (num_partials) holds them."""
    launches = []
    monkeypatch.setattr(th.L, "launch", lambda k, name, grid, *a, **kw: launches.append(
        (name, grid)))
    monkeypatch.setattr(th, "_num_sms", lambda x: 132)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(int32="int32"))

    class Words:  # a stand-in CUDA tensor: 16-byte aligned, viewed as int32
        def data_ptr(self):
            return 1 << 20

        def storage_offset(self):
            return 0

        def view(self, dtype):
            return self

    for grid_words, words, grid in ((8192, 8192, 1), (8192, 229376, 28), (1024, 8192, 1),
                                    (1024, 229376, 224), (1024, 1 << 24, 6 * 132)):
        settings = dataclasses.replace(th.SETTINGS, grid_words=grid_words)
        launches.clear()
        th.launch_hash(Words(), 4 * words, None, None, settings=settings)
        assert launches[0] == ("tensor_hash_partials", (grid,))
        assert len(launches) == (1 if grid == 1 else 2)
        assert grid <= th.num_partials(4 * words, settings)


def test_cyclic_default_block_and_one_bit_change():
    data = bytearray(rand_bytes(3 * 4 * S.block + 4 * 8 + 12, 23))  # 3 blocks + 8 vec + 3 words
    base = interp_hash_cyclic(bytes(data), 2)
    assert base == ref_hash(bytes(data)) == interp_hash_cyclic(bytes(data), 1)
    for byte in (0, 4 * S.block + 5, len(data) - 1):
        d = bytearray(data)
        d[byte] ^= 0x10
        h = interp_hash_cyclic(bytes(d), 2)
        assert h == ref_hash(bytes(d)) and h != base


class StandIn:
    """A stand-in CUDA tensor for launch_hash: an address, viewed as int32."""

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address

    def storage_offset(self):
        return 0

    def view(self, dtype):
        return self


def test_every_shipped_kernel_is_a_default_launch(monkeypatch):
    """Each AOT specialization is what some launch_hash call with the default settings
    selects (select_launches, instrumented): the word and byte paths, one program (FINISH)
    and two passes."""
    selected = record_launch_choices(monkeypatch, th, "select_launches", many=True)
    monkeypatch.setattr(th, "_num_sms", lambda x: 132)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(int32="int32"))
    for address, nbytes in ((1 << 20, 14336), (1 << 20, 917504),      # words: [1 | 64, 7168] bf16
                            (1 << 20, 1001), (1 << 20 | 2, 917504)):  # bytes: odd, unaligned
        th.launch_hash(StandIn(address), nbytes, None, None)
    launched = [(k, name, cx, warps) for k, name, _, cx, warps, _, _ in selected]
    for s in th.AOT_SPECIALIZATIONS:
        assert (s.kernel, s.kernel_name, dict(s.constexprs), s.num_warps) in launched, s
        assert s.maxnreg is None and s.cluster is None
