"""bench/attention/run.py without a GPU or torch: it imports and parses its arguments, the
settings it sweeps are fields of attention.Settings, and its FLOP and byte counts are the
issue's (causal: 2 * 2 * B * H * T^2 * D / 2; decode: K and V once)."""

import dataclasses
import importlib.util
import os
import subprocess
import sys

from kernels_dsl.common import attention

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(REPO, "bench", "attention", "run.py")


def _load():
    spec = importlib.util.spec_from_file_location("bench_attention_run", RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_and_parses_without_torch():
    run = _load()
    args = run.parse_args(["--out", "results", "--only", "fwd"])
    assert (args.out, args.only) == ("results", "fwd")
    assert run.parse_args([]).out is None
    assert run.FWD_SHAPES == [(8, 32, 4096, 128), (1, 32, 16384, 128)]
    assert run.DECODE_SHAPE == (64, 64, 8, 8192, 128)
    assert run.causal_flops(8, 32, 4096, 128) == 2 * 8 * 32 * 4096**2 * 128
    assert run.kv_bytes(64, 8, 8192, 128) == 2 * 64 * 8192 * 8 * 128 * 2
    for bn, stages in run.FWD_SWEEP:
        dataclasses.replace(attention.SETTINGS, fwd_block_n_d128=bn, fwd_stages=stages)
    dataclasses.replace(attention.SETTINGS, decode_block_h=16)


def test_help_from_the_repository_root():
    res = subprocess.run([sys.executable, "bench/attention/run.py", "--help"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "--out" in res.stdout
