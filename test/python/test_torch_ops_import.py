"""``kiln.ops`` without torch (as on CI): ``import kiln.ops`` works, ``import kiln.ops.kimi_k3``
raises an ImportError that names torch, and ``import kiln`` never pulls torch or the ops in.
Each case runs in a fresh interpreter in which ``import torch`` fails."""

import os
import subprocess
import sys

import kiln

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BLOCK_TORCH = """
import sys
sys.modules["torch"] = None  # `import torch` raises ImportError, as where it is absent
"""


def run(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(kiln.__file__)), REPO]))
    return subprocess.run([sys.executable, "-c", BLOCK_TORCH + code], env=env,
                          capture_output=True, text=True, timeout=120)


def test_kiln_ops_imports_without_torch():
    r = run("import kiln, kiln.ops\n"
            "assert 'kiln.ops.kimi_k3' not in sys.modules\nprint('ok')")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_kimi_k3_ops_need_torch_and_say_so():
    r = run("try:\n"
            "    import kiln.ops.kimi_k3\n"
            "except ImportError as e:\n"
            "    print(type(e).__name__, e)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ImportError kiln.ops.kimi_k3"), r.stdout
    assert "needs torch" in r.stdout
