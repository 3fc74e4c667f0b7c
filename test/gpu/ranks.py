"""Runs one test's ranks: ``world`` processes of a worker script on this machine's GPU, which
meet through a torch.distributed file store in ``tmp_path``; each must exit 0 and print
``rank R: OK``."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def run_ranks(worker: str, world: int, tmp_path, *args: str, deadline_s: int = 900) -> None:
    """Starts ``python test/gpu/<worker> RANK WORLD INIT_FILE *args`` for every rank and
    fails the test with the failing ranks' logs, or when they are not done within
    ``deadline_s`` (the ranks are then taken to hang: the kernels' own waits give up after
    5 s)."""
    init = tmp_path / "init"
    ranks = [subprocess.Popen([sys.executable, os.path.join(HERE, worker), str(r), str(world),
                               str(init), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    logs = []
    try:
        for p in ranks:
            logs.append(p.communicate(timeout=deadline_s)[0])
    except subprocess.TimeoutExpired:
        for p in ranks:
            p.kill()
        pytest.fail(f"world {world}: the ranks did not finish within {deadline_s} s")
    failed = [(r, p.returncode, log) for r, (p, log) in enumerate(zip(ranks, logs))
              if p.returncode != 0]
    assert not failed, "\n".join(f"rank {r} exited {rc}:\n{log[-4000:]}" for r, rc, log in failed)
    assert all(f"rank {r}: OK" in log for r, log in enumerate(logs))
