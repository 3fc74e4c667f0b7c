"""bench/mla/run.py without a GPU or torch: it imports with torch stubbed, its cases are the
issue's (decode B 64 / 128, H 12 / 128, contexts 4K and 32K; verify S = 4, H = 128), and the
useful FLOPs it reports count each draft's visible rows."""

import os
import subprocess
import sys

import kiln

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CODE = """
import sys
from unittest import mock
sys.modules["torch"] = mock.MagicMock(name="torch")
sys.path[:0] = [{bench!r}, {repo!r}]
import run
assert sorted({{(b, h) for b, h, _ in run.DECODE}}) == [(64, 12), (64, 128), (128, 12), (128, 128)]
assert {{c for _, _, c in run.DECODE}} == {{4096, 32768}}
assert all((h, s) == (128, 4) for _, h, s, _ in run.VERIFY)
assert run.flops(1, 1, 1, 10) == 10 * 1088 * 2
assert run.flops(2, 4, 3, 10) == 2 * 3 * (7 + 8 + 9 + 10) * 1088 * 2
print("ok")
"""


def test_runner_imports_without_torch():
    code = CODE.format(bench=os.path.join(REPO, "bench", "mla"), repo=REPO)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(kiln.__file__)), REPO]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
