"""Autotuning on the GPU: CUDA-event timing of each config, the winner remembered in memory and
on disk, and results correct whichever config wins."""

import json
import os

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402


@kiln.autotune(configs=[kiln.Config({"BLOCK": 256}, num_warps=1),
                        kiln.Config({"BLOCK": 4096}, num_warps=8)], key=["n"])
@kiln.jit
def scale(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    o = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    m = o < n
    kl.store(y_ptr + o, kl.load(x_ptr + o, mask=m) * 3.0, mask=m)


def test_tunes_once_and_stays_correct(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    n = 1 << 24
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    grid = lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    scale[grid](x, y, n)
    torch.cuda.synchronize()
    assert torch.equal(y, x * 3.0)
    files = [f for _, _, fs in os.walk(tmp_path / "autotune") for f in fs if f.endswith(".json")]
    assert len(files) == 1, files  # the winner was written to disk
    y.zero_()
    scale[grid](x, y, n)  # chosen config, no new tuning
    torch.cuda.synchronize()
    assert torch.equal(y, x * 3.0)
    with open(next((tmp_path / "autotune").rglob("*.json"))) as f:
        record = json.load(f)
    assert "BLOCK" in json.dumps(record)
