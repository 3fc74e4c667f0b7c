"""Content hash of a GPU tensor (KERNELS.md §3.7 / §8.6): ``gpu_tensor_hash(t) -> int``.

kiln's own function (the original's per-word mixing is not public), all arithmetic mod 2**64:

    B      = the tensor's bytes (contiguous, native order), n = len(B)
    w[i]   = uint32 little-endian word i of B zero-padded to a multiple of 4 bytes,
             i = 0 .. ceil(n / 4) - 1
    SEED   = 0x243F6A88
    fmix(x): x ^= x >> 30; x *= 0xBF58476D1CE4E5B9; x ^= x >> 27; x *= 0x94D049BB133111EB;
             x ^= x >> 31                                    (the splitmix64 finalizer)
    S      = sum_i fmix(SEED ^ (i << 32) ^ w[i])               (wrap-around sum)
    hash   = fmix(S + n * 0x9E3779B97F4A7C15)                  for n > 0
    hash   = 0                                                 for n == 0

The per-word mixes are combined by a wrap-around SUM, which is associative and commutative,
so the fixed tree "words -> per-tile partials -> total" gives the same value for every tile
size and grid. Pass 1 (``tensor_hash_partials_kernel``, TILE words per program, BLOCK at a
time) writes one 64-bit partial per tile; pass 2 (``tensor_hash_finish_kernel``, one
program) sums the partials in chunks of CHUNK, adds the length term and applies fmix.
The kernels read the tensor as bytes (``*u8``), so any dtype and any byte length work
without a padded copy; ``nbytes`` is not specialized (``do_not_specialize``).
"""

from __future__ import annotations

from typing import Any

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

SEED = 0x243F6A88
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB
GOLDEN = 0x9E3779B97F4A7C15


@kiln.jit
def _fmix64(x):
    x = x ^ (x >> 30)
    x = x * M1
    x = x ^ (x >> 27)
    x = x * M2
    x = x ^ (x >> 31)
    return x


@kiln.jit(num_warps=4, do_not_specialize=["nbytes"])
def tensor_hash_partials_kernel(x_ptr, partials_ptr, nbytes, TILE: kl.constexpr,
                                BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    acc = kl.zeros((BLOCK,), kl.uint64)
    for t in range(0, TILE, BLOCK):  # a runtime loop: unrolling 8 blocks of 64-bit mixing
        # made the compile take seconds
        widx = pid * TILE + t + kl.arange(0, BLOCK)
        boff = widx * 4
        word = kl.zeros((BLOCK,), kl.uint32)
        for j in kl.static_range(0, 4):
            b = kl.load(x_ptr + boff + j, mask=boff + j < nbytes, other=0)
            word = word | (b.to(kl.uint32) << (8 * j))
        h = (widx.to(kl.uint64) << 32) ^ word.to(kl.uint64) ^ SEED
        h = _fmix64(h)
        acc = acc + kl.where(boff < nbytes, h, kl.zeros((BLOCK,), kl.uint64))
    total = kl.sum(acc)
    kl.store(partials_ptr + pid, total.to(kl.int64, bitcast=True))


@kiln.jit(num_warps=4, do_not_specialize=["num_partials", "nbytes"])
def tensor_hash_finish_kernel(partials_ptr, out_ptr, num_partials, nbytes, CHUNK: kl.constexpr):
    acc = kl.zeros((CHUNK,), kl.uint64)
    for start in range(0, num_partials, CHUNK):
        offs = start + kl.arange(0, CHUNK)
        p = kl.load(partials_ptr + offs, mask=offs < num_partials, other=0)
        acc = acc + p.to(kl.uint64, bitcast=True)
    s = kl.sum(acc) + nbytes.to(kl.uint64) * GOLDEN
    h = _fmix64(s)
    kl.store(out_ptr, h.to(kl.int64, bitcast=True))


TILE, BLOCK, CHUNK, NUM_WARPS = 8192, 1024, 1024, 4

AOT_SPECIALIZATIONS = [
    Spec(tensor_hash_partials_kernel, name="tensor_hash_partials",
         signature={"x_ptr": "*u8", "partials_ptr": "*i64", "nbytes": "i32"},
         constexprs={"TILE": TILE, "BLOCK": BLOCK}, divisibility=["partials_ptr"],
         num_warps=NUM_WARPS),
    Spec(tensor_hash_finish_kernel, name="tensor_hash_finish",
         signature={"partials_ptr": "*i64", "out_ptr": "*i64", "num_partials": "i32",
                    "nbytes": "i32"},
         constexprs={"CHUNK": CHUNK}, divisibility=["partials_ptr", "out_ptr"],
         num_warps=NUM_WARPS),
]


def reference_hash(data: bytes) -> int:
    """Pure-Python form of the documented function (for tests and host fallbacks)."""
    mask = (1 << 64) - 1

    def fmix(x: int) -> int:
        x ^= x >> 30
        x = (x * M1) & mask
        x ^= x >> 27
        x = (x * M2) & mask
        return x ^ (x >> 31)

    n = len(data)
    if n == 0:
        return 0
    padded = bytes(data) + b"\0" * (-n % 4)
    s = 0
    for i in range(len(padded) // 4):
        w = int.from_bytes(padded[4 * i:4 * i + 4], "little")
        s += fmix(SEED ^ (i << 32) ^ w)
    return fmix((s + n * GOLDEN) & mask)


def gpu_tensor_hash(t: Any) -> int:
    """The 64-bit hash (a Python int in [0, 2**64)) of the contiguous tensor ``t``'s bytes,
    computed on its device. Every check raises before any launch; empty -> 0."""
    op = "gpu_tensor_hash"
    if not hasattr(t, "element_size") or not hasattr(t, "data_ptr"):
        raise TypeError(f"{op}: t must be a torch tensor, got {type(t).__name__}")
    L.check_contiguous(op, "t", t)
    if getattr(getattr(t, "device", None), "type", None) != "cuda":
        raise ValueError(f"{op}: t must be a CUDA tensor, got device {getattr(t, 'device', None)}")
    nbytes = int(t.numel()) * int(t.element_size())
    if nbytes == 0:
        return 0
    L.check_int32_extent(op, "nbytes", nbytes + 4 * TILE)
    import torch

    x = t.reshape(-1).view(torch.uint8)
    nwords = (nbytes + 3) // 4
    num_partials = (nwords + TILE - 1) // TILE
    partials = torch.empty(num_partials, dtype=torch.int64, device=t.device)
    out = torch.empty(1, dtype=torch.int64, device=t.device)
    L.launch(tensor_hash_partials_kernel, "tensor_hash_partials", (num_partials,),
             (x, partials, nbytes), {"TILE": TILE, "BLOCK": BLOCK}, NUM_WARPS)
    L.launch(tensor_hash_finish_kernel, "tensor_hash_finish", (1,),
             (partials, out, num_partials, nbytes), {"CHUNK": CHUNK}, NUM_WARPS)
    return int(out.item()) & ((1 << 64) - 1)
