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
time, or on the word path BLOCK-word blocks dealt out cyclically to a grid of a few programs
per SM) writes one 64-bit partial per program; pass 2 (``tensor_hash_finish_kernel``, one
program) sums the partials in chunks of CHUNK, adds the length term and applies fmix.
Pass 1 reads the tensor as int32 words in 16-byte vectors when its byte length is a
multiple of 4 and its address 16-byte aligned (``WORDS``), else as bytes (``*u8``), so any
dtype and any byte length work without a padded copy; ``nbytes`` is not specialized
(``do_not_specialize``). ``launch_hash`` picks the path and launches both passes, or for a
single program (up to TILE words) pass 1 alone with ``FINISH`` (one launch: the T = 1
latency).
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
                                FINISH: kl.constexpr = False, CYCLIC: kl.constexpr = False,
                                PREFETCH: kl.constexpr = True, PDL: kl.constexpr = False):
    """One partial per program: of TILE words, BLOCK words at a time, or with CYCLIC of the
    blocks b = program, program + grid, ... WORDS: x_ptr is the data as int32 words
    (nbytes % 4 == 0), read as [BLOCK / 4, 4] tiles of 16-byte vectors (rows past the last
    full vector masked whole); the last 0-3 words are added by program 0 (with CYCLIC: the
    last program, which also adds the partial last block; PREFETCH: two blocks per
    iteration, one in flight while the other is mixed). Without WORDS x_ptr is *u8 and each
    word is assembled from four byte loads (any nbytes). FINISH (one program): the partial
    is the sum, so the program writes the hash itself to partials_ptr (the output) and pass
    2 is not launched. PDL: programmatic dependent launch (the tensor may come from the
    previous kernel; pass 2 may launch at once and waits for this grid)."""
    pid = kl.program_id(0)
    if PDL:
        kl.pdl_wait()
        kl.pdl_launch_dependents()
    if WORDS and CYCLIC:
        # BLOCK-word blocks dealt out cyclically (block b to program b % grid), the full ones
        # unmasked; the last program adds the partial last block and the 0-3 words after the
        # last full vector. PREFETCH: two blocks per iteration, each block's loads issued
        # while the other block is mixed (ptxas reloads a block into the registers it was
        # just mixed from: no copies)
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
        if PREFETCH:
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
        else:
            for b in range(pid, nfull, nprog):
                acc = acc + _word_mix_index30(b * BLOCK + toff, kl.load(x_ptr + b * BLOCK + toff))
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
    elif WORDS:
        VROWS: kl.constexpr = BLOCK // 4
        nvec = nbytes >> 4  # full 16-byte vectors
        acc = kl.zeros((VROWS, 4), kl.uint64)
        lane = kl.arange(0, 4)[None, :]
        for t in range(0, TILE, BLOCK):  # a runtime loop (see below)
            v = (pid * TILE + t) // 4 + kl.arange(0, VROWS)
            ok = (v < nvec)[:, None]
            widx = (v * 4)[:, None] + lane
            w = kl.load(x_ptr + widx, mask=ok, other=0)
            acc = acc + kl.where(ok, _word_mix(widx, w), kl.zeros((VROWS, 4), kl.uint64))
        total = kl.sum(acc)
        tw = nvec * 4 + kl.arange(0, 4)  # the words after the last full vector
        tm = (tw < (nbytes >> 2)) & (pid == 0)
        wt = kl.load(x_ptr + tw, mask=tm, other=0)
        total = total + kl.sum(kl.where(tm, _word_mix(tw, wt), kl.zeros((4,), kl.uint64)))
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
def tensor_hash_finish_kernel(partials_ptr, out_ptr, num_partials, nbytes, CHUNK: kl.constexpr,
                              PDL: kl.constexpr = False):
    if PDL:
        kl.pdl_wait()  # the partials of pass 1
    acc = kl.zeros((CHUNK,), kl.uint64)
    for start in range(0, num_partials, CHUNK):
        offs = start + kl.arange(0, CHUNK)
        p = kl.load(partials_ptr + offs, mask=offs < num_partials, other=0)
        acc = acc + p.to(kl.uint64, bitcast=True)
    s = kl.sum(acc) + nbytes.to(kl.uint64) * GOLDEN
    h = _fmix64(s)
    kl.store(out_ptr, h.to(kl.int64, bitcast=True))


#: The byte path (``WORDS=False``) was 961 us for 235 MB on the H200 (5.7 % of copy
#: bandwidth): 64 one-byte loads per thread per block, each a predicated load of its own, each
#: warp instruction touching 32 sectors for 32 useful bytes. ``HASH_WORDS`` (the default
#: where the tensor allows it: nbytes % 4 == 0 and a 16-byte aligned address) reads int32
#: words as 16-byte vectors; ``bench/kimi_k3/run.py --sweep`` times it with TILE, BLOCK and
#: NUM_WARPS. Same hash (test/python/test_tensor_hash.py).
TILE, BLOCK, CHUNK, NUM_WARPS = 8192, 1024, 1024, 4
HASH_WORDS = True
#: The word path as one program per TILE words (``HASH_PROGRAMS_PER_SM = 0``; 83.5 us for
#: [16384, 7168] bf16 on the H200, 66 % of copy bandwidth) is, by its SASS (not profiled),
#: bound by its integer pipe rather than by memory: its sm_90a loop spends 27.75 SASS
#: instructions per 4-byte word (``cuobjdump -sass``; 222 for 8 words), 17.5 of them on the
#: half-rate integer ALU pipe (LOP3, SHF, SEL, IADD3, ISETP, VIADD, CS2R): ~35 cycles per
#: warp and word on that pipe alone, ~62 us for the 58.7M words on 132 SMs at 1.98 GHz, above
#: the 55 us of copy bandwidth (83.5 us is ~47 cycles per warp and word). The CYCLIC path (``HASH_PROGRAMS_PER_SM > 0``): grid = min(tiles,
#: HASH_PROGRAMS_PER_SM x SMs) programs, each taking every grid-th BLOCK-word block (no
#: partial last wave), full blocks unmasked (no SEL per word, no predicated loads), fmix's
#: first xorshift on the low half only (``_word_mix_index30``: a funnel shift and an xor),
#: and with ``HASH_PREFETCH`` two blocks per iteration so that one block's loads are in
#: flight while the other is mixed: 21.2 instructions per word (339 for 16), 12.1 of them
#: ALU (~24 cycles per warp and word, ~43 us), 80 registers: 6 programs of 4 warps fit an
#: SM (a grid past what fits at once would run a second, full-length wave); each of the 24
#: warps issues a block's loads (1 KiB) two block-mixes before it needs them, so about 24-48
#: KiB are in flight per SM (bandwidth x DRAM latency: ~25 KiB per SM at ~750 ns). Without
#: HASH_PREFETCH: 51 registers, 10 programs fit. Same bits (the sum is order-free). H200
#: (``bench/kimi_k3/run.py --sweep --only gpu_tensor_hash``): 63.9 us (86.5 % of copy
#: bandwidth) against 83.5 us for the former path; 2 / 4 / 8 programs per SM 82.0 / 65.0 /
#: 67.6 us; without HASH_PREFETCH 66.1-122.8 us.
HASH_PROGRAMS_PER_SM, HASH_PREFETCH = 6, True
#: Past one TILE the CYCLIC grid is min(ceil(words / HASH_GRID_WORDS), HASH_PROGRAMS_PER_SM x
#: SMs) programs: TILE (the former grid: 28 programs for [64, 7168] bf16, each mixing 8
#: blocks one after another) or BLOCK (224: one block each, the whole GPU). HASH_PDL: both
#: passes as programmatic dependent launches (pass 2 launches while pass 1 runs and waits
#: for it; pass 1 waits for the kernel before it). H200 (``bench/kimi_k3/run.py --sweep --only
#: gpu_tensor_hash``, us; TILE units without PDL -> BLOCK units with PDL): [64, 7168] 4.76 ->
#: 3.02 (TILE units with PDL 4.01, BLOCK units without 3.70); [4096, 7168] 19.61 -> 18.62;
#: [16384, 7168] 62.95 -> 62.72.
HASH_GRID_WORDS, HASH_PDL = BLOCK, True

#: the SM count of a tensor's CUDA device (None otherwise); a module global, so that tests can
#: stand in for a device
_num_sms = L.num_sms


def _partials_constexprs(words: bool, finish: bool) -> dict:
    return {"TILE": TILE, "BLOCK": BLOCK, "WORDS": words, "FINISH": finish,
            "CYCLIC": words and HASH_PROGRAMS_PER_SM > 0, "PREFETCH": HASH_PREFETCH,
            "PDL": HASH_PDL}


def _partials_spec(words: bool, finish: bool) -> Spec:
    return Spec(tensor_hash_partials_kernel, name="tensor_hash_partials",
                signature={"x_ptr": "*i32" if words else "*u8", "partials_ptr": "*i64",
                           "nbytes": "i32"},
                constexprs=_partials_constexprs(words, finish),
                divisibility=["x_ptr", "partials_ptr"] if words else ["partials_ptr"],
                num_warps=NUM_WARPS)


AOT_SPECIALIZATIONS = [_partials_spec(words, finish) for words in (False, True)
                       for finish in (False, True)] + [
    Spec(tensor_hash_finish_kernel, name="tensor_hash_finish",
         signature={"partials_ptr": "*i64", "out_ptr": "*i64", "num_partials": "i32",
                    "nbytes": "i32"},
         constexprs={"CHUNK": CHUNK, "PDL": HASH_PDL}, divisibility=["partials_ptr", "out_ptr"],
         num_warps=NUM_WARPS),
]


def num_partials(nbytes: int) -> int:
    """The most pass-1 programs (and partials) for ``nbytes`` bytes: one per TILE words (per
    HASH_GRID_WORDS where fewer: the CYCLIC word path, bounded by the SM count, see
    ``launch_hash``)."""
    unit = min(TILE, HASH_GRID_WORDS)
    return ((nbytes + 3) // 4 + unit - 1) // unit


def launch_hash(x: Any, nbytes: int, partials: Any, out: Any) -> Any:
    """Both passes on ``x``, the tensor's bytes as a flat uint8 tensor (nbytes > 0, checked by
    the caller), into ``out`` int64 [1]; ``partials`` int64 with at least
    ``num_partials(nbytes)`` entries. Picks the word path (HASH_WORDS) when nbytes % 4 == 0 and
    the address is 16-byte aligned, the byte path otherwise; the word path runs
    min(num_partials, HASH_PROGRAMS_PER_SM x SMs) programs (CYCLIC) when
    HASH_PROGRAMS_PER_SM > 0 and x is a CUDA tensor. No host synchronization."""
    np_ = ((nbytes + 3) // 4 + TILE - 1) // TILE  # one program per TILE words
    words = (HASH_WORDS and nbytes % 4 == 0 and int(x.data_ptr()) % 16 == 0
             and int(x.storage_offset()) % 4 == 0)
    if words:
        import torch

        x = x.view(torch.int32)
        sms = _num_sms(x)
        if HASH_PROGRAMS_PER_SM > 0 and sms and np_ > 1:
            grid_words = min(TILE, HASH_GRID_WORDS)
            np_ = min((nbytes // 4 + grid_words - 1) // grid_words, HASH_PROGRAMS_PER_SM * sms)
    finish = np_ == 1  # one program (up to TILE words): one launch writes the hash
    L.launch(tensor_hash_partials_kernel, "tensor_hash_partials", (np_,),
             (x, out if finish else partials, nbytes), _partials_constexprs(words, finish),
             NUM_WARPS)
    if not finish:
        L.launch(tensor_hash_finish_kernel, "tensor_hash_finish", (1,),
                 (partials, out, np_, nbytes), {"CHUNK": CHUNK, "PDL": HASH_PDL}, NUM_WARPS)
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
    partials = torch.empty(num_partials(nbytes), dtype=torch.int64, device=t.device)
    out = torch.empty(1, dtype=torch.int64, device=t.device)
    launch_hash(x, nbytes, partials, out)
    return int(out.item()) & ((1 << 64) - 1)
