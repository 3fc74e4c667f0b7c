"""The floor under the packed decode at small B: its grid of [8, 128] one-warp programs
reading and writing their state rows in place with no computation, the slot read from
``indices`` first (as every kernel of the contract must) or taken from the program id (a
plain copy), beside the packed decode and torch's copy of the same bytes, timed as
``run.py`` times (graph replay over rotating slot sets). The B = 32 bar of issue 25 against
it: bench/results/kda/limits.md. Usage: ``python bench/kda/index_floor.py``."""

import os
import sys

import torch

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402

import run as R  # noqa: E402


@kiln.jit(num_warps=1)
def rows_rw(state_ptr, idx_ptr, slot_u, HV, INDEXED: kl.constexpr, ROWS: kl.constexpr):
    NS: kl.constexpr = 128 // ROWS
    pid = kl.program_id(0)
    part = pid % NS
    head = pid // NS
    hv = head % HV
    req = head // HV
    if INDEXED:
        slot = kl.load(idx_ptr + req)
    else:
        slot = req
    rows = part * ROWS + kl.arange(0, ROWS)
    base = slot.to(kl.int64) * slot_u.to(kl.int64) * 4 + hv * (128 * 128)
    sp = state_ptr + base + (rows * 128)[:, None] + kl.arange(0, 128)[None, :]
    hs = kl.load(sp, eviction_policy="evict_first")
    kl.store(sp, hs * 1.0001, cache_modifier=".cs")


def case(bsz, copy, empty):
    """One line: B, the bar, and the four times (us)."""
    pool, w, sets = R.packed_sets(bsz)
    grid = (bsz * R.HV * 16,)
    slot_u = pool.stride(0) // 4

    def rows(indexed):
        def call(s):
            state = pool if indexed else pool[s * bsz:]  # direct: set s's slots in order
            rows_rw[grid](state, sets[s][3], slot_u, R.HV, INDEXED=indexed, ROWS=8)
        return call

    res = {"indexed": R.time_us(rows(True), list(range(len(sets)))),
           "direct": R.time_us(rows(False), list(range(len(sets)))),
           "packed": R.time_us(R.kiln_packed(pool, w), sets)}
    pool = sets = None
    torch.cuda.empty_cache()
    res["torch copy"] = R.copy_case(bsz)["copy us"]
    ceiling = 2 * bsz * R.HV * R.HEAD_BYTES / copy / 1e3
    return (f"B {bsz}: bytes at copy BW {ceiling:.2f} us, bar {empty + ceiling + 1.5:.2f} | "
            + " | ".join(f"{k} {v:.2f} us" for k, v in res.items()))


def main():
    print(torch.cuda.get_device_name(), flush=True)
    copy = R.copy_bandwidth_gbs()
    x = torch.empty(1, device="cuda")
    empty = R.time_us(lambda _: R._empty_kernel[(1,)](x, 1), [None] * 20)
    print(f"copy {copy:.0f} GB/s, empty kernel {empty:.2f} us")
    for bsz in (1, 32, 64):
        print(case(bsz, copy, empty), flush=True)


if __name__ == "__main__":
    main()
