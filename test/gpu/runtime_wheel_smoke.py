"""The kiln-runtime wheel on a GPU machine: no compiler, JIT forbidden, kernels from a bundle.

Run in a venv that has torch and the kiln-runtime wheel installed (``pip install --no-deps
kiln_runtime-*.whl``), from a directory outside the checkout::

    KILN_NO_JIT=1 KILN_BUNDLE=/path/kimi_k3.kbundle python runtime_wheel_smoke.py

Checks that the compiler extension is absent, then launches the Kimi K3 SiTU kernel through
``kiln.ops.kimi_k3`` (the library's wrapper: the bundle's kernel, JIT forbidden) and through
``kiln.Bundle`` directly, against a torch reference written from the math
(docs/kernels/situ.md), on fresh random inputs. Exits non-zero naming the first failure."""

import os
import sys

import torch

import kiln
import kiln.ops.kimi_k3.situ as situ


def reference(x, beta, linear_beta):
    """gate = beta tanh(g / beta) sigmoid(g), up = linear_beta tanh(u / linear_beta), in fp32,
    stored as bf16."""
    d = x.shape[1] // 2
    g, u = x[:, :d].float(), x[:, d:].float()
    gate = beta * torch.tanh(g / beta) * (1.0 / (1.0 + torch.exp(-g)))
    up = linear_beta * torch.tanh(u / linear_beta)
    return (gate * up).to(torch.bfloat16)


def check_close(out, ref, what):
    assert not torch.isnan(out).any(), f"{what}: NaN in the output"
    # One bf16 ulp (relative 2^-7) plus the subnormal floor: the kernel's tanh is tanh.approx.
    torch.testing.assert_close(out.float(), ref.float(), rtol=2.0**-7, atol=1e-6)
    print(f"ok: {what}")


def main():
    assert os.environ.get("KILN_NO_JIT") == "1", "run with KILN_NO_JIT=1 (JIT forbidden)"
    assert os.environ.get("KILN_BUNDLE"), "run with KILN_BUNDLE naming kimi_k3.kbundle"
    package = os.path.dirname(kiln.__file__)
    assert not [f for f in os.listdir(package) if f.startswith("_C.")], \
        f"the compiler extension is installed in {package}: this is not the kiln-runtime wheel"
    assert not kiln.compiler.compiler_available(), "kiln._C imports"
    print(f"ok: kiln {kiln.__version__} from {package}, no compiler, on "
          f"{torch.cuda.get_device_name()} ({kiln.runtime.device_arch()})")

    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    n, d = 96, 4096
    x = torch.randn(n, 2 * d, device="cuda", dtype=torch.bfloat16) * 4
    ref = reference(x, 4.0, 25.0)

    out = situ.situ_and_mul(x, beta=4.0, linear_beta=25.0)
    torch.cuda.synchronize()
    check_close(out, ref, "situ_and_mul through kiln.ops.kimi_k3 (the bundle's kernel)")

    block, num_warps = situ.launch_config("bf16")
    bundle = kiln.Bundle(os.environ["KILN_BUNDLE"])
    family = bundle.kernel(situ.GENERIC, BLOCK=block, HAS_LINEAR_BETA=True)
    direct = torch.full((n, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    family[(n, kiln.cdiv(d, block))](x, direct, d, x.stride(0), direct.stride(0), 4.0, 0.25,
                                     25.0, 1.0 / 25.0)
    torch.cuda.synchronize()
    check_close(direct, ref, f"{situ.GENERIC} launched from kiln.Bundle")
    print("runtime wheel smoke: passed")


if __name__ == "__main__":
    sys.exit(main())
