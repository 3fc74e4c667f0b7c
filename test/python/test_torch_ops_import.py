"""The torch ops without torch (as on CI): ``import kernels_dsl.kimi_k3`` and its kernel modules
work, ``import kernels_dsl.kimi_k3.torch_ops`` raises an ImportError that names torch, and
neither ``import kiln`` nor the kernel modules pull torch or the ops in. Each case runs in a
fresh interpreter in which ``import torch`` fails."""

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


def test_kernel_modules_import_without_torch():
    r = run("import importlib, kiln, kernels_dsl.kimi_k3 as k3\n"
            "for m in k3.MODULES:\n"
            "    importlib.import_module('kernels_dsl.kimi_k3.' + m)\n"
            "assert 'kernels_dsl.kimi_k3.torch_ops' not in sys.modules\nprint('ok')")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_kimi_k3_ops_need_torch_and_say_so():
    r = run("try:\n"
            "    import kernels_dsl.kimi_k3.torch_ops\n"
            "except ImportError as e:\n"
            "    print(type(e).__name__, e)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ImportError kernels_dsl.kimi_k3.torch_ops"), r.stdout
    assert "needs torch" in r.stdout
