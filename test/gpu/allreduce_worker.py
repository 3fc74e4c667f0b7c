"""One rank of the all-reduce protocol test (test_allreduce.py starts ``world`` of them on
one GPU): ``python allreduce_worker.py RANK WORLD INIT_FILE``. Every rank derives every
rank's inputs from seeds, so each checks the whole result against its own reference (the
sum over ranks in fp32, in rank order, rounded to bf16, plus the residual in bf16
arithmetic, by the one-shot and the two-shot form; the RMSNorm in fp32 from that; the MoE
finalize in fp32 in expert order; the sequence-parallel reduce-scatter and all-gather, the
latter also straight into a symmetric output);
torch.distributed (gloo) exchanges the workspace handles and keeps the ranks in step between
cases. Exit status 0 when every case passed; a failure prints its traceback."""

import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402
from kiln.distributed import CollectiveError, SymmetricBuffer  # noqa: E402

#: K3's largest decode call of the row form: 3 x 512 rows of 3,584.
MAX_ELEMENTS = 3 * 512 * A.NORM_DIM
#: The flat cases' largest call (1,024 programs of 1,024 words).
FLAT_MAX = 1 << 21
EPS = 1e-6


def data(seed: int, n: int) -> torch.Tensor:
    """bf16 [n] from ``seed``: normal values, every 7th pair both +0.0 (pushed as the
    marker), every 11th element -0.0."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(n, generator=g, device="cuda").bfloat16()
    x.view(torch.int32)[::7] = 0
    x[5::11] = -0.0
    return x


def seed(call: int, rank: int) -> int:
    return call * 1009 + rank + 17


def reference(call: int, n: int, world: int, res) -> torch.Tensor:
    acc = torch.zeros(n, device="cuda", dtype=torch.float32)
    for r in range(world):
        acc += data(seed(call, r), n).float()
    s = acc.bfloat16()
    return s if res is None else (s.float() + res.float()).bfloat16()


def rmsnorm(s: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    f = s.float()
    return (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).bfloat16()


def rows_reference(call: int, rows: int, world: int, res, w, norm_rows: int):
    flat = None if res is None else res.flatten()
    out = reference(call, rows * A.NORM_DIM, world, flat).view(rows, A.NORM_DIM)
    return out, rmsnorm(out[:norm_rows], w)


def finalize_inputs(call: int, rank: int, tokens: int, experts: int):
    """A rank's gemm2 [experts, D], ids [tokens, 16] (about 1 in 8 dropped as -1) and fp32
    weights [tokens, 16]."""
    g = torch.Generator(device="cuda").manual_seed(seed(call, rank))
    gemm2 = torch.randn(experts, A.NORM_DIM, generator=g, device="cuda").bfloat16()
    ids = torch.randint(-experts // 7, experts, (tokens, A.TOPK), generator=g, device="cuda")
    ids = ids.clamp(min=-1).int()
    wts = torch.rand(tokens, A.TOPK, generator=g, device="cuda")
    return gemm2, ids, wts


def finalize_local(gemm2, ids, wts) -> torch.Tensor:
    acc = torch.zeros(ids.shape[0], gemm2.shape[1], device="cuda")
    for k in range(A.TOPK):
        e = ids[:, k].long()
        term = wts[:, k:k + 1] * gemm2[e.clamp(min=0)].float()
        acc = acc + torch.where((e >= 0)[:, None], term, torch.zeros_like(term))
    return acc.bfloat16()


#: The sequence-parallel cases (rows, width, residual): K3's hidden width (16-byte vectors)
#: and a width of 6 (3 words a row: one word at a time); the residual given as this rank's
#: rows ("local") or as the whole ("global").
HIDDEN = 7168
SP_CASES = [(1, HIDDEN, None), (3, HIDDEN, "local"), (5, 6, "global"), (64, HIDDEN, None)]


def reduce_scatter_case(call: int, rank: int, world: int, rows: int, width: int, res_kind):
    """(x, the residual or None, the fp32 sum over the ranks of their chunk ``rank``, this
    rank's residual rows or None) of a reduce-scatter call."""
    x = data(seed(call, rank), world * rows * width).view(world * rows, width)
    res = mine = None
    if res_kind:
        res = data(seed(call, -1), (world if res_kind == "global" else 1) * rows * width)
        res = res.view(-1, width)
        mine = res if res_kind == "local" else res[rank * rows:(rank + 1) * rows]
    acc = torch.zeros(rows, width, device="cuda")
    for r in range(world):
        xr = data(seed(call, r), world * rows * width).view(world * rows, width)
        acc += xr[rank * rows:(rank + 1) * rows].float()
    return x, res, acc, mine


def close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """Within a bf16 rounding (the norm's rsqrt and sum order differ from torch's)."""
    torch.testing.assert_close(got.float(), want.float(), rtol=1.6e-2, atol=1e-2, msg=what)


def same_bits(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    if not torch.equal(got.view(torch.int16), want.view(torch.int16)):
        bad = (got.view(torch.int16) != want.view(torch.int16)).nonzero()[:4].flatten().tolist()
        raise AssertionError(f"{what}: differs at {bad}: got {got[bad].tolist()}, "
                             f"want {want[bad].tolist()}")


def warm(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` after compiling (JIT) or loading (bundle) its kernel on every
    rank and meeting, so that no rank compiles inside a call its peers wait on."""
    with A.compile_only():
        fn(*args, **kwargs)
    dist.barrier()
    return fn(*args, **kwargs)


def main(rank: int, world: int, init: str) -> None:
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    buf = SymmetricBuffer(A.workspace_bytes(world, MAX_ELEMENTS))
    assert (buf.rank, buf.world) == (rank, world)
    call = 0

    # The one-shot form over grids of 1 to 1024 programs, in place and into out, with and
    # without the residual.
    one_shot = A.Settings(two_shot_bytes=1 << 62)
    for n, with_res, in_place in [(2, False, True), (6, True, True), (2048, False, False),
                                  (2050, True, True), (65536, True, False),
                                  (FLAT_MAX, False, True), (FLAT_MAX, True, False)]:
        x = data(seed(call, rank), n)
        res = data(seed(call, -1), n) if with_res else None
        out = None if in_place else torch.empty_like(x)
        got = warm(A.allreduce, x, buf, residual=res, out=out, settings=one_shot)
        assert (got is x) == in_place
        torch.cuda.synchronize()
        A.check(buf)
        same_bits(got, reference(call, n, world, res), f"n={n} residual={with_res}")
        call += 1

    # 1,000 back-to-back calls, the grid changing from call to call (phase flips, the bumper),
    # checked at the end.
    sizes = [2 * (1 + (k * 7919) % 60000) for k in range(1000)]
    outs = []
    for k, n in enumerate(sizes):
        res = data(seed(call + k, -1), n) if k % 3 == 0 else None
        outs.append((warm(A.allreduce, data(seed(call + k, rank), n), buf, residual=res), res))
    torch.cuda.synchronize()
    A.check(buf)
    for k, (n, (got, res)) in enumerate(zip(sizes, outs)):
        same_bits(got, reference(call + k, n, world, res), f"back-to-back call {k} (n={n})")
    call += len(sizes)

    # The two-shot form (a reduce-scatter then an all-gather), forced from 0 bytes and taken
    # by itself past the one-shot form's 2,097,152 elements: shards that do not divide evenly,
    # the residual; then 100 calls alternating it with the one-shot form, sizes changing.
    two_shot = A.Settings(two_shot_bytes=0)
    for n, with_res, settings in [(2, False, two_shot), (6, True, two_shot),
                                  (4098, False, two_shot), (3 * 65536 + 34, True, two_shot),
                                  (FLAT_MAX + 4096, False, A.SETTINGS),
                                  (2 * FLAT_MAX, True, A.SETTINGS)]:
        x = data(seed(call, rank), n)
        res = data(seed(call, -1), n) if with_res else None
        got = warm(A.allreduce, x, buf, residual=res, settings=settings)
        torch.cuda.synchronize()
        A.check(buf)
        same_bits(got, reference(call, n, world, res), f"two-shot n={n} residual={with_res}")
        call += 1
    outs = []
    for k in range(100):
        n = 2 * (1 + (k * 7919) % 400000)
        res = data(seed(call + k, -1), n) if k % 3 == 0 else None
        settings = two_shot if k % 2 else A.SETTINGS
        outs.append((warm(A.allreduce, data(seed(call + k, rank), n), buf, residual=res,
                          settings=settings), res))
    torch.cuda.synchronize()
    A.check(buf)
    for k, (got, res) in enumerate(outs):
        same_bits(got, reference(call + k, got.numel(), world, res),
                  f"one- and two-shot call {k} (n={got.numel()})")
    call += len(outs)

    # The row form: the all-reduce + RMSNorm of rows of 3,584 (a single row; K3's
    # [N latent | 2N shared] buffer with its first N rows normed; rows spread over programs
    # that own 1 to 2 rows each), with and without the residual.
    w = data(seed(0, -2), A.NORM_DIM)
    for rows, norm_rows, with_res in [(1, 1, False), (3, 1, True), (37, 37, False),
                                      (1025, 300, True), (1536, 512, False)]:
        n = rows * A.NORM_DIM
        x = data(seed(call, rank), n).view(rows, A.NORM_DIM)
        res = data(seed(call, -1), n).view(rows, A.NORM_DIM) if with_res else None
        out, normed = warm(A.allreduce_rmsnorm, x, buf, w, EPS, residual=res,
                           norm_rows=norm_rows)
        assert out is x and normed.shape == (norm_rows, A.NORM_DIM)
        torch.cuda.synchronize()
        A.check(buf)
        want_out, want_norm = rows_reference(call, rows, world, res, w, norm_rows)
        what = f"allreduce_rmsnorm rows={rows} norm_rows={norm_rows} residual={with_res}"
        same_bits(out.flatten(), want_out.flatten(), what)
        close(normed, want_norm, what)
        call += 1

    # The MoE finalize fused into the push: the rank-local rows from gemm2, the ids (some
    # dropped) and the weights, bit for bit (fp32 in expert order, then the sum over ranks).
    for tokens, experts, with_res in [(1, 16, False), (5, 80, True), (512, 1024, False)]:
        gemm2, ids, wts = finalize_inputs(call, rank, tokens, experts)
        res = data(seed(call, -1), tokens * A.NORM_DIM).view(tokens, A.NORM_DIM) \
            if with_res else None
        out, normed = warm(A.finalize_push_norm, gemm2, ids, wts, buf, w, EPS, residual=res)
        torch.cuda.synchronize()
        A.check(buf)
        acc = torch.zeros(tokens, A.NORM_DIM, device="cuda")
        for r in range(world):
            acc += finalize_local(*finalize_inputs(call, r, tokens, experts)).float()
        want = acc.bfloat16()
        if res is not None:
            want = (want.float() + res.float()).bfloat16()
        what = f"finalize_push_norm tokens={tokens} residual={with_res}"
        same_bits(out.flatten(), want.flatten(), what)
        close(normed, rmsnorm(want, w), what)
        call += 1

    # The flat and the row forms back to back on one workspace, grids changing (the bumper
    # keeps every counter in step across both kernels).
    outs = []
    for k in range(200):
        if k % 2:
            rows = 1 + (k * 37) % 700
            x = data(seed(call + k, rank), rows * A.NORM_DIM).view(rows, A.NORM_DIM)
            outs.append(("rows", rows, warm(A.allreduce_rmsnorm, x, buf, w, EPS,
                                            norm_rows=rows // 3)))
        else:
            n = 2 * (1 + (k * 7919) % 300000)
            outs.append(("flat", n, warm(A.allreduce, data(seed(call + k, rank), n), buf)))
    torch.cuda.synchronize()
    A.check(buf)
    for k, (kind, size, got) in enumerate(outs):
        if kind == "flat":
            same_bits(got, reference(call + k, size, world, None), f"mixed call {k} (n={size})")
        else:
            want_out, want_norm = rows_reference(call + k, size, world, None, w, size // 3)
            same_bits(got[0].flatten(), want_out.flatten(), f"mixed call {k} (rows={size})")
            close(got[1], want_norm, f"mixed call {k} (rows={size})")
    call += len(outs)

    # One rank late by milliseconds.
    dist.barrier()
    if rank == world - 1:
        time.sleep(0.05)
    got = A.allreduce(data(seed(call, rank), 4096), buf)  # compiled above
    torch.cuda.synchronize()
    A.check(buf)
    same_bits(got, reference(call, 4096, world, None), "late rank")
    call += 1

    # A rank with a wrong size: every rank's check raises (no hang), and after a reset the
    # workspace works again.
    dist.barrier()
    n = 8192 if rank != world - 1 else 4096
    warm(A.allreduce, data(seed(call, rank), n), buf)
    torch.cuda.synchronize()
    try:
        A.check(buf)
    except CollectiveError as e:
        assert "size" in str(e) or "timed out" in str(e), str(e)
    else:
        raise AssertionError("a rank passed a wrong size and check() raised nothing")
    A.reset(buf)
    call += 1
    got = A.allreduce(data(seed(call, rank), 4096), buf)
    torch.cuda.synchronize()
    A.check(buf)
    same_bits(got, reference(call, 4096, world, None), "after the reset")

    # The sequence-parallel reduce-scatter (chunk r of every rank to rank r, summed; the
    # residual given as this rank's rows or as the whole) and all-gather (every rank's x into
    # every rank's out; a marker word (-0.0, +0.0) arrives as the zero word), on K3's hidden
    # width (16-byte vectors) and on a width of 6 (3 words a row: one word at a time).
    out_buf = SymmetricBuffer(4 + 2 * world * 64 * HIDDEN)
    for rows, width, res_kind in SP_CASES:
        call += 1
        x, res, acc, mine = reduce_scatter_case(call, rank, world, rows, width, res_kind)
        got = warm(A.sp_reduce_scatter, x, buf, residual=res)
        torch.cuda.synchronize()
        A.check(buf)
        want = acc.bfloat16()
        if mine is not None:
            want = (want.float() + mine.float()).bfloat16()
        same_bits(got.flatten(), want.flatten(), f"sp_reduce_scatter rows={rows} "
                                                  f"width={width} residual={res_kind}")

        call += 1
        x = data(seed(call, rank), rows * width).view(rows, width)
        got = warm(A.sp_all_gather, x, buf)
        torch.cuda.synchronize()
        A.check(buf)
        want = torch.cat([data(seed(call, r), rows * width).view(rows, width)
                          for r in range(world)])
        words = want.view(torch.int32)
        words[words == A.NONZERO_MARKER] = 0
        same_bits(got.flatten(), want.flatten(), f"sp_all_gather rows={rows} width={width}")

        # The direct form into every rank's symmetric output, at a 16-byte and at a 4-byte
        # offset: every word exact (no marker), twice in a row on the same output.
        for offset in (0, 4):
            for again in range(2):
                call += 1
                x = data(seed(call, rank), rows * width).view(rows, width)
                got = warm(A.sp_all_gather_direct, x, buf, out_buf, offset)
                torch.cuda.synchronize()
                A.check(buf)
                want = torch.cat([data(seed(call, r), rows * width).view(rows, width)
                                  for r in range(world)])
                same_bits(got.flatten(), want.flatten(),
                          f"sp_all_gather_direct rows={rows} width={width} offset={offset}")

    dist.barrier()
    out_buf.close()
    buf.close()
    dist.destroy_process_group()
    print(f"rank {rank}: OK", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
