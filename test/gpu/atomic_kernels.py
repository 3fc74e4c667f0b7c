"""Kernels of the atomics tests shared by the CPU tests (their PTX, the interpreter) and the
GPU tests (test/gpu/test_atomics.py): no torch here."""

import kiln
import kiln.language as kl


@kiln.jit
def last_arriver_sum(x_ptr, part_ptr, count_ptr, out_ptr, BLOCK: kl.constexpr):
    """Each program writes its partial row sums; the last to arrive (fence, barrier, one
    atomic) adds every program's partials in program order and resets the counter."""
    pid = kl.program_id(0)
    n = kl.num_programs(0)
    o = kl.arange(0, BLOCK)
    kl.store(part_ptr + pid * BLOCK + o, kl.load(x_ptr + pid * BLOCK + o) * 2)
    kl.fence("release", "gpu")
    kl.barrier()
    if kl.atomic_add(count_ptr, 1) == n - 1:
        kl.fence("acquire", "gpu")
        acc = kl.zeros((BLOCK,), kl.int32)
        for p in range(0, n):
            acc += kl.load(part_ptr + p * BLOCK + o)
        kl.store(out_ptr + o, acc)
        kl.store(count_ptr + kl.arange(0, 1), kl.zeros((1,), kl.int32))

