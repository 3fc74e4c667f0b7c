"""bench/kimi_k3 without a GPU or torch: cases.py, run.py and attn_res_small_t.py (which imports
run.py) import with torch stubbed (every case factory the sweeps and the table name exists),
and every configuration of sweeps.py is a set of fields of its module's Settings
(dataclasses.replace accepts it), each sweep holding the module's default configuration (the
runner's baseline)."""

import dataclasses
import importlib
import os
import subprocess
import sys

import pytest

import kiln

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench", "kimi_k3")
sys.path.insert(0, BENCH)

import sweeps  # noqa: E402  (no torch, no kernels)

STUB_TORCH = """
import sys, types
from unittest import mock
for name in ("torch", "torch.nn", "torch.nn.functional"):
    sys.modules[name] = mock.MagicMock(name=name)
sys.modules["triton"] = None  # run.py's optional Triton peer: absent
sys.path[:0] = [{bench!r}, {repo!r}]
"""


def run(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(kiln.__file__)), REPO]))
    return subprocess.run([sys.executable, "-c", STUB_TORCH.format(bench=BENCH, repo=REPO) + code],
                          env=env, capture_output=True, text=True, timeout=300)


def test_cases_and_runner_import_without_torch():
    names = sorted({s.case for s in sweeps.SWEEPS})
    r = run("import cases, run\n"
            f"missing = [n for n in {names!r} if not callable(getattr(cases, n, None))]\n"
            "assert not missing, missing\n"
            "assert all(callable(f) and args for f, args in cases.CASES)\n"
            "assert run.check is cases.check and callable(run.sweep)\n"
            "import attn_res_small_t\n"  # it takes these from cases (C) and run (R)
            "assert all(hasattr(cases, n) for n in ('ATTN_RES_EPS', '_attn_res_weights',\n"
            "           '_case_attn_res', 'check'))\n"
            "assert all(hasattr(run, n) for n in ('_empty_kernel', 'graph_time_ms'))\n"
            "print('ok')")
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


@pytest.mark.parametrize("sw", sweeps.SWEEPS,
                         ids=lambda s: f"{s.module}-{s.case}-{'x'.join(map(str, s.args))}")
def test_sweeps_name_settings_fields(sw):
    mod = importlib.import_module("kernels_dsl." + sw.module)
    fields = {f.name for f in dataclasses.fields(mod.Settings)}
    assert sw.configs
    for cfg in sw.configs:
        assert set(cfg) <= fields, f"{sw.module}: not Settings fields: {set(cfg) - fields}"
        dataclasses.replace(mod.SETTINGS, **cfg)
    assert any(dataclasses.replace(mod.SETTINGS, **cfg) == mod.SETTINGS for cfg in sw.configs), \
        f"{sw.module} {sw.case}{sw.args}: no configuration is the default"
