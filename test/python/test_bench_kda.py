"""bench/kda/run.py without a GPU or torch: it imports with torch stubbed, its sweep's
configurations are fields of kda_decode.Settings (dataclasses.replace accepts them), and the
issue's targets it reports are computed from a row as stated."""

import dataclasses
import os
import subprocess
import sys

import kiln
from kernels_dsl.kimi_k3 import kda_decode

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STUB_TORCH = """
import sys
from unittest import mock
sys.modules["torch"] = mock.MagicMock(name="torch")
sys.path[:0] = [{bench!r}, {repo!r}]
"""


def run_stubbed(code):
    """Runs ``code`` (STUB_TORCH first) in a fresh interpreter; it must print ok."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(kiln.__file__)), REPO]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def test_runner_imports_without_torch_and_its_sweep_is_settings():
    code = (STUB_TORCH.format(bench=os.path.join(REPO, "bench", "kda"), repo=REPO)
            + "import dataclasses, run\n"
            "from kernels_dsl.kimi_k3 import kda_decode\n"
            "for cfg in run.SWEEP + run.FUSED_SWEEP:\n"
            "    dataclasses.replace(kda_decode.SETTINGS, **cfg)\n"
            "from kernels_dsl.kimi_k3 import kda_verify\n"
            "for cfg in run.VERIFY_SWEEP + run.FOLD_SWEEP:\n"
            "    dataclasses.replace(kda_verify.SETTINGS, **cfg)\n"
            "assert run.PACKED_B == (1, 32, 64, 512) and run.FUSED_B == (64, 512)\n"
            "assert run.VERIFY_B == (64, 512) and run.FOLD_B == (64,)\n"
            "assert (run.GAMMA, run.LAYERS, run.ACCEPT) == (3, 69, 2)\n"
            "row = {'kernel': run.VERIFY_NAME, 'B': 64, 'all of copy BW': 0.86}\n"
            "assert run.bars(row)[1] is True\n"
            "row.update(kernel=run.FOLD_NAME, **{'all of copy BW': 0.8})\n"
            "assert run.bars(row)[1] is False\n"
            "state, every = run.fold_bytes(64)\n"
            "assert state == 2 * 64 * 69 * 12 * 65536 and every > state\n"
            "state, every = run.verify_bytes(512)\n"
            "assert state == 512 * 12 * 65536 and every > state\n"
            "row = {'kernel': 'kda_packed_decode', 'B': 512, 'state of copy BW': 0.91,\n"
            "       'kiln speedup': 1.4, 'kiln us': 200.0, 'ceiling us': 190.0}\n"
            "assert run.bars(row)[1] is True\n"
            "row['kiln speedup'] = 1.2\n"
            "assert run.bars(row)[1] is False\n"
            "row.update(B=1, **{'kiln us': 3.0, 'ceiling us': 1.6})\n"
            "assert run.bars(row)[1] is True\n"
            "print('ok')")
    run_stubbed(code)


def test_settings_fields_exist():
    fields = {f.name for f in dataclasses.fields(kda_decode.Settings)}
    assert {"packed_rows", "packed_min_programs", "state_evict", "state_store"} <= fields


def test_prefill_runner_imports_without_torch_and_holds_the_issue_cases():
    """bench/kda/prefill.py: the cases of issue 26 (65,536 tokens at 12 heads; 8,192 at 96
    fixed, FlashKDA's varlen and 8 x 1,024; 64 x 1,024 at 12) and its 3x bar."""
    code = (STUB_TORCH.format(bench=os.path.join(REPO, "bench", "kda"), repo=REPO)
            + "import prefill\n"
            "cases = {(tuple(c[1]), c[2], c[3]) for c in prefill.CASES}\n"
            "assert ((65536,), 12, False) in cases and ((8192,), 96, False) in cases\n"
            "assert ((1300, 547, 2048, 963, 271, 3063), 96, True) in cases\n"
            "assert ((1024,) * 8, 96, True) in cases and ((1024,) * 64, 12, True) in cases\n"
            "assert prefill.TARGET == 3.0 and all(c in prefill.CASES for c in prefill.QUICK)\n"
            "print('ok')")
    run_stubbed(code)
