"""Content hash of a GPU tensor: ``gpu_tensor_hash(t) -> int``.

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
so the fixed tree "words -> per-program partials -> total" gives the same value for every tile
size and grid. Pass 1 (``tensor_hash_partials_kernel``) writes one 64-bit partial per program;
pass 2 (``tensor_hash_finish_kernel``, one program) sums the partials in chunks, adds the length
term and applies fmix. Pass 1 reads the tensor as int32 words in 16-byte vectors when its byte
length is a multiple of 4 and its address 16-byte aligned (``WORDS``: block-word blocks dealt
out cyclically to a grid of a few programs an SM), else as bytes (``*u8``, tile words a
program), so any dtype and any byte length work without a padded copy; ``nbytes`` is not
specialized (``do_not_specialize``). ``launch_hash`` picks the path and launches both passes, or
for a single program pass 1 alone with ``FINISH`` (one launch: the T = 1 latency). Both passes
are programmatic dependent launches.

Specification: docs/kernels/tensor_hash.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

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


@kiln.jit
def _word_mix(widx, word):
    """fmix(SEED ^ (i << 32) ^ w) of the word indices ``widx`` (int32) and words (32 bits)."""
    return _fmix64((widx.to(kl.uint64) << 32) ^ word.to(kl.uint32, bitcast=True).to(kl.uint64)
                   ^ SEED)


@kiln.jit
def _word_mix_index30(widx, word):
    """``_word_mix`` for word indices 0 <= i < 2**30 (every int32 byte length), same bits.
    x = (i << 32) | (w ^ SEED); its first xorshift ``x ^= x >> 30`` leaves the high half i
    unchanged (i >> 30 == 0) and, SEED being below 2**30, XORs the low half with
    (w >> 30) | (i << 2) (a funnel shift of (i, w)). So that step is two 32-bit operations
    instead of a 64-bit shift and xor, and the rest of fmix is ``_fmix64`` after its first
    step."""
    i = widx.to(kl.uint32, bitcast=True)
    w = word.to(kl.uint32, bitcast=True)
    lo = w ^ SEED ^ ((w >> 30) | (i << 2))
    x = (i.to(kl.uint64) << 32) | lo.to(kl.uint64)
    x = x * M1
    x = x ^ (x >> 27)
    x = x * M2
    return x ^ (x >> 31)


@kiln.jit(num_warps=4, do_not_specialize=["nbytes"])
def tensor_hash_partials_kernel(x_ptr, partials_ptr, nbytes, TILE: kl.constexpr,
                                BLOCK: kl.constexpr, WORDS: kl.constexpr = False,
                                FINISH: kl.constexpr = False):
    """One partial per program. WORDS: x_ptr is the data as int32 words (nbytes % 4 == 0),
    read as [BLOCK / 4, 4] tiles of 16-byte vectors, the blocks b = program, program + grid,
    ... (the full ones unmasked; the last program adds the partial last block and the last
    0-3 words). Without WORDS x_ptr is *u8, TILE words a program, BLOCK at a time, each word
    assembled from four byte loads (any nbytes). FINISH (one program): the partial is the
    sum, so the program writes the hash itself to partials_ptr (the output) and pass 2 is not
    launched. Programmatic dependent launch: the tensor may come from the previous kernel;
    pass 2 may launch at once and waits for this grid."""
    pid = kl.program_id(0)
    kl.pdl_wait()
    kl.pdl_launch_dependents()
    if WORDS:
        # BLOCK-word blocks dealt out cyclically (block b to program b % grid), the full ones
        # unmasked; the last program adds the partial last block and the 0-3 words after the
        # last full vector. Two blocks per iteration, each block's loads issued while the
        # other block is mixed (ptxas reloads a block into the registers it was just mixed
        # from: no copies)
        VROWS: kl.constexpr = BLOCK // 4
        nprog = kl.num_programs(0)
        nvec = nbytes >> 4  # full 16-byte vectors
        nfull = nvec // VROWS  # full blocks
        vrow = kl.arange(0, VROWS)
        lane = kl.arange(0, 4)[None, :]
        acc = kl.zeros((VROWS, 4), kl.uint64)
        toff = (vrow * 4)[:, None] + lane  # the thread's word offsets in a block
        # the rest, for the last program: with FINISH (the only program: T = 1) loaded before
        # the blocks, so that it waits for one DRAM round trip, not two (elsewhere after them:
        # holding it through the loop costs 22 registers, 6 -> 5 programs per SM)
        if FINISH:
            ridx = ((nfull * VROWS + vrow) * 4)[:, None] + lane
            rok = ridx < nvec * 4
            tw = nvec * 4 + kl.arange(0, 4)  # the words after the last full vector
            tm = tw < (nbytes >> 2)
            wr = kl.load(x_ptr + ridx, mask=rok, other=0)
            wt = kl.load(x_ptr + tw, mask=tm, other=0)
        cnt = (nfull - pid + nprog - 1) // nprog  # this program's full blocks (<= 0: none)
        if cnt > 0:
            # prefetches past this program's last block re-read that block (unmasked)
            last = pid + (cnt - 1) * nprog
            wa = kl.load(x_ptr + pid * BLOCK + toff)
            wb = kl.load(x_ptr + kl.minimum(pid + nprog, last) * BLOCK + toff)
            end = pid + (cnt // 2) * 2 * nprog
            for b in range(pid, end, 2 * nprog):
                ha = _word_mix_index30(b * BLOCK + toff, wa)
                wa = kl.load(x_ptr + kl.minimum(b + 2 * nprog, last) * BLOCK + toff)
                acc = acc + ha
                hb = _word_mix_index30((b + nprog) * BLOCK + toff, wb)
                wb = kl.load(x_ptr + kl.minimum(b + 3 * nprog, last) * BLOCK + toff)
                acc = acc + hb
            if cnt % 2 == 1:  # the last block, in wa
                acc = acc + _word_mix_index30(end * BLOCK + toff, wa)
        total = kl.sum(acc)
        if pid == nprog - 1:
            if not FINISH:
                ridx = ((nfull * VROWS + vrow) * 4)[:, None] + lane
                rok = ridx < nvec * 4
                tw = nvec * 4 + kl.arange(0, 4)
                tm = tw < (nbytes >> 2)
                wr = kl.load(x_ptr + ridx, mask=rok, other=0)
                wt = kl.load(x_ptr + tw, mask=tm, other=0)
            rest = kl.where(rok, _word_mix_index30(ridx, wr), kl.zeros((VROWS, 4), kl.uint64))
            total = total + kl.sum(rest) + kl.sum(
                kl.where(tm, _word_mix_index30(tw, wt), kl.zeros((4,), kl.uint64)))
    else:
        acc = kl.zeros((BLOCK,), kl.uint64)
        for t in range(0, TILE, BLOCK):  # a runtime loop: unrolling 8 blocks of 64-bit
            # mixing made the compile take seconds
            widx = pid * TILE + t + kl.arange(0, BLOCK)
            boff = widx * 4
            word = kl.zeros((BLOCK,), kl.uint32)
            for j in kl.static_range(0, 4):
                b = kl.load(x_ptr + boff + j, mask=boff + j < nbytes, other=0)
                word = word | (b.to(kl.uint32) << (8 * j))
            h = _word_mix(widx, word)
            acc = acc + kl.where(boff < nbytes, h, kl.zeros((BLOCK,), kl.uint64))
        total = kl.sum(acc)
    if FINISH:
        total = _fmix64(total + nbytes.to(kl.uint64) * GOLDEN)
    kl.store(partials_ptr + pid, total.to(kl.int64, bitcast=True))


@kiln.jit(num_warps=4, do_not_specialize=["num_partials", "nbytes"])
def tensor_hash_finish_kernel(partials_ptr, out_ptr, num_partials, nbytes, CHUNK: kl.constexpr):
    kl.pdl_wait()  # the partials of pass 1
    acc = kl.zeros((CHUNK,), kl.uint64)
    for start in range(0, num_partials, CHUNK):
        offs = start + kl.arange(0, CHUNK)
        p = kl.load(partials_ptr + offs, mask=offs < num_partials, other=0)
        acc = acc + p.to(kl.uint64, bitcast=True)
    s = kl.sum(acc) + nbytes.to(kl.uint64) * GOLDEN
    h = _fmix64(s)
    kl.store(out_ptr, h.to(kl.int64, bitcast=True))


@dataclasses.dataclass(frozen=True)
class Settings:
    """gpu_tensor_hash's tuning; measured in bench/results/kimi_k3/tensor_hash.md."""

    tile: int = 8192  # words a program on the byte path; up to one tile: one program, one launch
    block: int = 1024  # words a block (1 KiB of loads a warp in flight); 512 and 2048 slower
    chunk: int = 1024  # partials pass 2 sums at a time (at most 6 x SMs partials)
    num_warps: int = 4  # both passes; 8 warps no faster
    programs_per_sm: int = 6  # the word path's grid cap: what fits at 80 registers (2, 4, 8 slower)
    grid_words: int = 1024  # past one program, one program per this many words (8192: slower)


SETTINGS = Settings()

#: the SM count of a tensor's CUDA device (None otherwise); a module global, so that tests can
#: stand in for a device
_num_sms = L.num_sms


def _partials_constexprs(words: bool, finish: bool, settings: Settings) -> dict:
    return {"TILE": settings.tile, "BLOCK": settings.block, "WORDS": words, "FINISH": finish}


def _partials_spec(words: bool, finish: bool) -> Spec:
    return Spec(tensor_hash_partials_kernel, name="tensor_hash_partials",
                signature={"x_ptr": "*i32" if words else "*u8", "partials_ptr": "*i64",
                           "nbytes": "i32"},
                constexprs=_partials_constexprs(words, finish, SETTINGS),
                divisibility=["x_ptr", "partials_ptr"] if words else ["partials_ptr"],
                num_warps=SETTINGS.num_warps)


AOT_SPECIALIZATIONS = [_partials_spec(words, finish) for words in (False, True)
                       for finish in (False, True)] + [
    Spec(tensor_hash_finish_kernel, name="tensor_hash_finish",
         signature={"partials_ptr": "*i64", "out_ptr": "*i64", "num_partials": "i32",
                    "nbytes": "i32"},
         constexprs={"CHUNK": SETTINGS.chunk}, divisibility=["partials_ptr", "out_ptr"],
         num_warps=SETTINGS.num_warps),
]


def num_partials(nbytes: int, settings: Settings = SETTINGS) -> int:
    """The most pass-1 programs (and partials) for ``nbytes`` bytes: one per tile words (per
    grid_words where fewer: the word path, bounded by the SM count, see ``launch_hash``)."""
    unit = min(settings.tile, settings.grid_words)
    return ((nbytes + 3) // 4 + unit - 1) // unit


def select_launches(nbytes: int, words: bool, num_sms: Optional[int],
                    settings: Settings = SETTINGS) -> list:
    """The launches of ``launch_hash`` for ``nbytes`` bytes (``words``: the word path;
    ``num_sms``: the device's SM count, None if unknown): pass 1 on its grid, and unless that
    is one program (FINISH) pass 2; each (kernel, bundle name, grid, constexprs, num_warps,
    maxnreg, cluster). The word path runs min(ceil(words / grid_words), programs_per_sm x SMs)
    programs past one tile (with an SM count), else one program per tile words."""
    np_ = ((nbytes + 3) // 4 + settings.tile - 1) // settings.tile  # one program per tile words
    if words and num_sms and np_ > 1:
        grid_words = min(settings.tile, settings.grid_words)
        np_ = min((nbytes // 4 + grid_words - 1) // grid_words,
                  settings.programs_per_sm * num_sms)
    finish = np_ == 1  # one program (up to tile words): one launch writes the hash
    out = [(tensor_hash_partials_kernel, "tensor_hash_partials", (np_,),
            _partials_constexprs(words, finish, settings), settings.num_warps, None, None)]
    if not finish:
        out.append((tensor_hash_finish_kernel, "tensor_hash_finish", (1,),
                    {"CHUNK": settings.chunk}, settings.num_warps, None, None))
    return out


def launch_hash(x: Any, nbytes: int, partials: Any, out: Any, *,
                settings: Settings = SETTINGS) -> Any:
    """Both passes on ``x``, the tensor's bytes as a flat uint8 tensor (nbytes > 0, checked by
    the caller), into ``out`` int64 [1]; ``partials`` int64 with at least
    ``num_partials(nbytes, settings)`` entries. The word path when nbytes % 4 == 0 and the
    address is 16-byte aligned, the byte path otherwise (``select_launches``). No host
    synchronization."""
    words = (nbytes % 4 == 0 and int(x.data_ptr()) % 16 == 0
             and int(x.storage_offset()) % 4 == 0)
    sms = None
    if words:
        import torch

        x = x.view(torch.int32)
        sms = _num_sms(x)
    launches = select_launches(nbytes, words, sms, settings)
    finish = len(launches) == 1
    kernel, name, grid, constexprs, num_warps, _, _ = launches[0]
    L.launch(kernel, name, grid, (x, out if finish else partials, nbytes), constexprs,
             num_warps)
    if not finish:
        kernel, name, grid2, constexprs, num_warps, _, _ = launches[1]
        L.launch(kernel, name, grid2, (partials, out, grid[0], nbytes), constexprs, num_warps)
    return out


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


def gpu_tensor_hash(t: Any, *, settings: Settings = SETTINGS) -> int:
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
    L.check_int32_extent(op, "nbytes", nbytes + 4 * settings.tile)
    import torch

    x = t.reshape(-1).view(torch.uint8)
    partials = torch.empty(num_partials(nbytes, settings), dtype=torch.int64, device=t.device)
    out = torch.empty(1, dtype=torch.int64, device=t.device)
    launch_hash(x, nbytes, partials, out, settings=settings)
    return int(out.item()) & ((1 << 64) - 1)
