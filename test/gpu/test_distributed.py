"""kiln.distributed on the GPU: N processes on ONE GPU (CUDA IPC maps another process's
allocation on the same device), bootstrapped through torch.distributed over gloo. Each rank
makes a SymmetricBuffer, checks it starts zeroed and that its peer table holds every rank's
mapping, writes its rank into its own workspace and reads every peer's through the mapping;
a rank asking for another size makes every rank raise (none hangs)."""

import multiprocessing as mp
import socket

import pytest

WORLD = 3
NBYTES = 4096 + 17  # not a multiple of 256: the view stops at the size asked for


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Words:
    """int32 words at a device address (a peer's workspace), for torch.as_tensor."""

    def __init__(self, address, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<i4",
                                         "data": (address, False), "version": 3}


def _rank_main(rank, port, sizes, results):
    import torch
    import torch.distributed as dist

    from kiln.distributed import SymmetricBuffer

    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=len(sizes))
    try:
        with SymmetricBuffer(sizes[rank]) as buf:
            local = buf.local()
            assert (buf.rank, buf.world, buf.nbytes) == (rank, len(sizes), sizes[rank])
            assert local.shape == (sizes[rank],) and local.device == torch.device("cuda:0")
            assert int(local.count_nonzero()) == 0, "a new workspace is all zeros"
            table = buf.peer_table.tolist()
            assert table[rank] == local.data_ptr()
            assert table == [buf.peer_address(r) for r in range(buf.world)]
            assert len(set(table)) == buf.world  # each peer mapped at its own address

            words = buf.local(torch.int32, (1024,))
            assert words.data_ptr() == local.data_ptr()
            words.fill_(rank + 1)
            torch.cuda.synchronize()
            dist.barrier()
            seen = [torch.as_tensor(_Words(a, 1024), device="cuda:0").unique().tolist()
                    for a in table]
            buf.barrier()  # every rank has read before any rank clears
            buf.zero_()
            torch.cuda.synchronize()
            assert int(local.count_nonzero()) == 0
            with pytest.raises(ValueError, match="beyond the workspace's"):
                buf.local(torch.int32, (1030,), offset=4)
            with pytest.raises(ValueError, match="not a multiple of 4"):
                buf.local(torch.int32, offset=2)
            dist.barrier()  # nobody frees while a peer may still read
        results.put((rank, "ok", seen))
    except Exception as e:  # reported to the test process
        results.put((rank, type(e).__name__, str(e)))
    finally:
        dist.destroy_process_group()


def _run(sizes):
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank_main, args=(r, port, sizes, results))
             for r in range(len(sizes))]
    for p in procs:
        p.start()
    try:
        out = {r: (kind, value) for r, kind, value in (results.get(timeout=180) for _ in procs)}
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0, f"a rank exited with {p.exitcode}"
    finally:
        for p in procs:  # a rank stuck in a collective after a peer failed
            if p.is_alive():
                p.kill()
    return out


def test_ranks_on_one_gpu_map_each_other():
    out = _run([NBYTES] * WORLD)
    expected = [[r + 1] for r in range(WORLD)]
    assert out == {r: ("ok", expected) for r in range(WORLD)}, out


def test_a_rank_with_another_size_fails_every_rank():
    out = _run([NBYTES, 2 * NBYTES, NBYTES])
    message = (f"kiln: symmetric workspace: rank 1 has {2 * NBYTES} bytes, rank 0 has {NBYTES} "
               f"(every rank must pass the same size)")
    assert out == {r: ("KilnError", message) for r in range(3)}, out
