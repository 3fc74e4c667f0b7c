"""kiln.distributed and the runtime's symmetric workspace records, on the CPU: the records'
checks through the binding (every message), SymmetricBuffer's bootstrap (torch.distributed
missing or not initialized, a failed rank published to its peers instead of leaving them
waiting) over a stand-in workspace, and a clean KilnError where there is no GPU. The GPU path
(ranks mapping each other's workspaces) runs in the GPU tier."""

import sys
import types

import pytest

import kiln.distributed as distributed
from kiln import _runtime
from kiln.distributed import CollectiveError, KilnError, SymmetricBuffer

UUID = bytes(range(16))


def record(rank, world, nbytes, handle=0):
    return _runtime.encode_workspace_record(rank, world, nbytes, UUID, "0000:3b:00.0",
                                            bytes([handle]) * 64)


def records(world, nbytes):
    return [record(r, world, nbytes, r) for r in range(world)]


# -- records -----------------------------------------------------------------------------


def test_record_round_trip():
    rec = record(3, 8, 1 << 33, handle=7)
    assert len(rec) == 140
    assert _runtime.decode_workspace_record(rec) == {
        "rank": 3, "world": 8, "bytes": 1 << 33, "device_uuid": UUID,
        "pci_bus_id": "0000:3b:00.0", "ipc_handle": bytes([7]) * 64}
    _runtime.check_workspace_records(records(4, 8192), 1, 4)


def test_size_mismatch_names_the_ranks_and_sizes():
    recs = records(2, 8192)
    recs[1] = record(1, 2, 4096, 1)
    for rank in (0, 1):  # every rank sees the same records and raises the same error
        with pytest.raises(KilnError) as e:
            _runtime.check_workspace_records(recs, rank, 2)
        assert str(e.value) == ("kiln: symmetric workspace: rank 1 has 4096 bytes, rank 0 has "
                                "8192 (every rank must pass the same size)")


@pytest.mark.parametrize("recs, rank, world, message", [
    (records(2, 256), 0, 3, "got 2 records for a world of 3 (one per rank, in rank order)"),
    ([record(0, 2, 256), record(1, 4, 256)], 0, 2,
     "rank 1 has a world of 4, rank 0 has 2 (every rank must pass the same world)"),
    ([record(1, 2, 256), record(0, 2, 256)], 0, 2,
     "record 0 is rank 1's (the records must be in rank order)"),
    (records(2, 256), 2, 2, "rank 2 is out of range [0, 1] for a world of 2"),
    (records(65, 256), 0, 65, "world 65 is out of range [1, 64]"),
])
def test_inconsistent_records(recs, rank, world, message):
    with pytest.raises(KilnError) as e:
        _runtime.check_workspace_records(recs, rank, world)
    assert str(e.value) == "kiln: symmetric workspace: " + message


def test_corrupt_records_name_the_problem():
    good = record(1, 2, 256)
    cases = {
        b"XILN" + good[4:]: "rank 1's record is not a kiln workspace record (bad magic)",
        good[:64]: "rank 1's record is truncated (64 bytes, expected 140)",
        b"": "rank 1's record is truncated (0 bytes, expected 140)",
        good[:8] + b"\x02\0\0\0" + good[12:]:
            "rank 1's record has format version 2; this kiln reads version 1 (every rank must "
            "run the same kiln)",
    }
    for bad, message in cases.items():
        with pytest.raises(KilnError) as e:
            _runtime.check_workspace_records([record(0, 2, 256), bad], 0, 2)
        assert str(e.value) == "kiln: symmetric workspace: " + message
    with pytest.raises(KilnError, match="is truncated"):
        _runtime.decode_workspace_record(good[:-1])


# -- SymmetricBuffer's bootstrap -----------------------------------------------------------


def test_needs_torch_distributed(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    monkeypatch.setitem(sys.modules, "torch.distributed", None)
    with pytest.raises(RuntimeError, match="torch is not installed; pass rank=, world= and "
                                           "exchange= to use another transport"):
        SymmetricBuffer(4096)


def test_torch_distributed_not_initialized(monkeypatch):
    dist = types.ModuleType("torch.distributed")
    dist.is_available = lambda: True
    dist.is_initialized = lambda: False
    torch = types.ModuleType("torch")
    torch.distributed = dist
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)
    with pytest.raises(RuntimeError, match=r"needs torch.distributed initialized: call "
                                           r"torch.distributed.init_process_group\(...\)"):
        SymmetricBuffer(4096)
    # An exchange with no rank and world still asks torch.distributed for them.
    with pytest.raises(RuntimeError, match="not initialized|needs torch.distributed"):
        SymmetricBuffer(4096, exchange=lambda rec: [rec])


class FakeWorkspace:
    """_runtime.SymmetricWorkspace without a GPU: a real record; open() runs the real checks."""

    opened = []

    def __init__(self, nbytes, rank, world):
        self.bytes, self.rank, self.world, self.device = nbytes, rank, world, 0
        self.local, self.peer_table = 0x7f0000000000, 0x7f0000100000

    @classmethod
    def allocate(cls, nbytes, rank, world):
        if nbytes > 1 << 40:
            raise KilnError("kiln: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY")
        return cls(nbytes, rank, world)

    def exchange_record(self):
        return record(self.rank, self.world, self.bytes, self.rank)

    def open(self, recs):
        _runtime.check_workspace_records(recs, self.rank, self.world)
        FakeWorkspace.opened.append(recs)

    def peer(self, r):
        return self.local + r


@pytest.fixture
def fake_workspace(monkeypatch):
    monkeypatch.setattr(distributed._runtime, "SymmetricWorkspace", FakeWorkspace)
    FakeWorkspace.opened = []
    return FakeWorkspace


def test_exchange_opens_with_every_rank_record(fake_workspace):
    seen = []

    def exchange(rec):
        seen.append(rec)
        return [rec, record(1, 2, 4096, 1)] if rec else [b"", b""]

    with SymmetricBuffer(4096, rank=0, world=2, exchange=exchange) as buf:
        assert (buf.rank, buf.world, buf.nbytes, buf.device) == (0, 2, 4096, 0)
        assert buf.peer_address(1) == FakeWorkspace(0, 0, 0).local + 1
        assert fake_workspace.opened == [[seen[0], record(1, 2, 4096, 1)]]
        assert "rank 0 of 2, 4096 bytes" in repr(buf)
        buf.barrier()  # over the same transport
        assert seen[1:] == [b""]
    assert "closed" in repr(buf)
    with pytest.raises(ValueError, match="SymmetricBuffer is closed"):
        buf.rank
    with pytest.raises(ValueError, match="SymmetricBuffer is closed"):
        buf.barrier()


def test_collective_errors_are_kiln_errors():
    assert issubclass(CollectiveError, KilnError) and issubclass(KilnError, RuntimeError)


def test_size_mismatch_raises_through_the_buffer(fake_workspace):
    with pytest.raises(KilnError, match="rank 1 has 8192 bytes, rank 0 has 4096"):
        SymmetricBuffer(4096, rank=0, world=2, exchange=lambda rec: [rec, record(1, 2, 8192)])


def test_a_failed_rank_is_published_not_waited_for(fake_workspace):
    """A rank whose allocation fails still takes part in the exchange; its peers raise."""
    published = {}

    def exchange_of(rank):
        def exchange(rec):
            published[rank] = rec
            return [published.get(r, rec) for r in range(2)]
        return exchange

    with pytest.raises(KilnError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        SymmetricBuffer(1 << 41, rank=1, world=2, exchange=exchange_of(1))
    with pytest.raises(KilnError) as e:
        SymmetricBuffer(4096, rank=0, world=2, exchange=exchange_of(0))
    assert str(e.value) == ("kiln: symmetric workspace: rank 1 failed to allocate its "
                            "workspace: kiln: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY")
    assert fake_workspace.opened == []


@pytest.mark.parametrize("nbytes, error, message", [
    (0, KilnError, "the size must be positive, got 0 bytes"),
    (-1, KilnError, "the size must be positive, got -1 bytes"),
    (1.5, TypeError, "'float' object cannot be interpreted as an integer"),
])
def test_bad_sizes_are_published_too(fake_workspace, nbytes, error, message):
    published = []
    with pytest.raises(error, match=message):
        SymmetricBuffer(nbytes, rank=0, world=1, exchange=lambda rec: published.append(rec) or
                        [rec])
    assert len(published) == 1 and message.encode() in published[0]


# -- no GPU ------------------------------------------------------------------------------


def test_allocate_checks_its_arguments_first():
    with pytest.raises(KilnError, match="rank 3 is out of range"):
        _runtime.SymmetricWorkspace.allocate(4096, 3, 2)
    with pytest.raises(KilnError, match="world 0 is out of range"):
        _runtime.SymmetricWorkspace.allocate(4096, 0, 0)


@pytest.mark.skipif(_runtime.driver_available(), reason="a CUDA driver is present")
def test_without_a_gpu_allocate_raises_a_kiln_error():
    with pytest.raises(KilnError, match=r"cannot load the CUDA driver \(libcuda.so.1\)"):
        _runtime.SymmetricWorkspace.allocate(4096, 0, 1)
    with pytest.raises(KilnError, match="cannot load the CUDA driver"):
        SymmetricBuffer(4096, rank=0, world=1, exchange=lambda rec: [rec])
