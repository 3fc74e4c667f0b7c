"""The runtime on the GPU with the AOT bundle (KILN_BUNDLE, e.g. build/kimi_k3.kbundle):
specialization selection from the arguments, CUDA-graph capture and replay, the error on a
bundle without this device's arch, KILN_NO_JIT, and a runtime-only package (no kiln._C)
launching situ_and_mul against the torch reference of docs/kernels/situ.md."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

try:
    import torch
except ImportError:
    torch = None

BUNDLE = os.environ.get("KILN_BUNDLE")
pytestmark = pytest.mark.skipif(not BUNDLE, reason="KILN_BUNDLE names no bundle")


def reference(x, beta=4.0, linear_beta=25.0):
    d = x.shape[1] // 2
    g, u = x[:, :d].float(), x[:, d:].float()
    gate = beta * torch.tanh(g / beta) * torch.sigmoid(g)
    up = linear_beta * torch.tanh(u / linear_beta) if linear_beta is not None else u
    return (gate * up).to(torch.bfloat16)


def assert_close(out, ref):
    # tanh.approx / ex2.approx: a few bf16 ulps.
    torch.testing.assert_close(out.float(), ref.float(), rtol=2.0**-6, atol=1e-3)


def situ_args(x, out, linear_beta=25.0):
    n, two_d = x.shape
    d = two_d // 2
    lin = linear_beta if linear_beta is not None else 1.0
    return (x, out, d, x.stride(0), out.stride(0), 4.0, 0.25, lin, 1.0 / lin)


@pytest.fixture(scope="module")
def bundle():
    from kiln.runtime import Bundle

    return Bundle(BUNDLE)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("linear_beta", [25.0, None])
def test_family_selects_by_arguments(bundle, dtype, linear_beta):
    x = torch.randn(37, 2 * 4096, device="cuda", dtype=getattr(torch, dtype)) * 4
    out = torch.empty(37, 4096, device="cuda", dtype=torch.bfloat16)
    family = bundle.family("situ_and_mul")
    k = family.select(situ_args(x, out, linear_beta), {"HAS_LINEAR_BETA": linear_beta is not None})
    assert k.meta["params"][0]["dtype"] == ("bf16" if dtype == "bfloat16" else "f32")
    block = k.meta["constexprs"]["BLOCK"]
    family[(37, (4096 + block - 1) // block)](*situ_args(x, out, linear_beta),
                                              HAS_LINEAR_BETA=linear_beta is not None)
    torch.cuda.synchronize()
    assert_close(out, reference(x, linear_beta=linear_beta))


def test_cuda_graph_capture_and_replay(bundle):
    k = bundle.kernel("situ_and_mul", BLOCK=2048, HAS_LINEAR_BETA=True)
    x = torch.randn(64, 2 * 2048, device="cuda", dtype=torch.bfloat16)
    out = torch.zeros(64, 2048, device="cuda", dtype=torch.bfloat16)
    k[(64, 1)](*situ_args(x, out))  # load the module before capture
    torch.cuda.synchronize()
    out.zero_()
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        with torch.cuda.graph(graph, stream=s):
            for _ in range(3):
                k[(64, 1)](*situ_args(x, out))
    torch.cuda.synchronize()
    assert torch.count_nonzero(out) == 0, "capture must not run the kernel"
    for _ in range(2):
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, reference(x))


def test_foreign_arch_bundle_fails_naming_archs(bundle, tmp_path):
    from kiln.runtime import Bundle, BundleWriter, KilnError

    w = BundleWriter(bundle.compiler_version)
    for ki, meta in enumerate(bundle.kernels()):
        images = [(im["arch"], im["kind"], bundle.image_bytes(ki, ii))
                  for ii, im in enumerate(meta["images"]) if im["arch"] != "sm_90a"]
        meta = {k: v for k, v in meta.items() if k != "images"}
        meta["targets"] = {a: t for a, t in meta.get("targets", {}).items() if a != "sm_90a"}
        if images:  # a specialization built for sm_90a alone (Spec(archs=...)) drops out
            w.add_kernel(meta, images)
    path = tmp_path / "blackwell_only.kbundle"
    w.write(str(path))
    k = Bundle(path).kernel("situ_and_mul", BLOCK=2048, HAS_LINEAR_BETA=True)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(1, 2048, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(KilnError) as e:
        k[(1, 1)](*situ_args(x, out))
    msg = str(e.value)
    assert "has no image for this device (sm_90a" in msg, msg
    assert "the bundle holds: sm_100a, sm_103a" in msg, msg


def test_no_jit_missing_specialization_fails_fast(bundle, monkeypatch):
    from kiln.runtime import KilnError

    monkeypatch.setenv("KILN_NO_JIT", "1")
    family = bundle.family("situ_and_mul", jit=lambda *a: pytest.fail("must not compile"))
    x = torch.randn(4, 2 * 256, device="cuda", dtype=torch.float16)
    out = torch.empty(4, 256, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(KilnError) as e:
        family[(4, 1)](*situ_args(x, out), HAS_LINEAR_BETA=True)
    msg = str(e.value)
    assert "no specialization of 'situ_and_mul' for (ptr<f16>" in msg
    assert "KILN_NO_JIT=1" in msg
    assert "wants ptr<bf16>, got ptr<f16>" in msg and "wants ptr<f32>, got ptr<f16>" in msg


def test_runtime_only_package(tmp_path):
    import kiln

    src = os.path.dirname(kiln.__file__)
    dst = tmp_path / "kiln"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("_C.*", "__pycache__"))
    assert not list(dst.glob("_C.*"))
    script = textwrap.dedent(f"""
        import torch, kiln
        from kiln.runtime import Bundle
        from kiln.compiler import compiler_available
        assert not compiler_available()
        b = Bundle({BUNDLE!r})
        x = torch.randn(33, 2 * 3072, device="cuda", dtype=torch.bfloat16) * 4
        out = torch.empty(33, 3072, device="cuda", dtype=torch.bfloat16)
        b.family("situ_and_mul")[(33, 2)](x, out, 3072, x.stride(0), out.stride(0), 4.0, 0.25,
                                          25.0, 0.04, HAS_LINEAR_BETA=True)
        torch.cuda.synchronize()
        g, u = x[:, :3072].float(), x[:, 3072:].float()
        ref = (4.0 * torch.tanh(g / 4.0) * torch.sigmoid(g) * 25.0 * torch.tanh(u / 25.0))
        torch.testing.assert_close(out.float(), ref.to(torch.bfloat16).float(), rtol=2.0**-6,
                                   atol=1e-3)
        print("runtime-only ok")
    """)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    # cwd: `python -c` puts the working directory first on sys.path, where the full
    # package (with _C) may be.
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       timeout=120, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "runtime-only ok" in r.stdout


def test_launch_path_checks_still_explain(bundle):
    from kiln.runtime import KilnError  # noqa: F401

    k = bundle.kernel("situ_and_mul", BLOCK=2048, HAS_LINEAR_BETA=True)
    x = torch.randn(2, 4096, device="cuda", dtype=torch.float32)  # wrong dtype for this entry
    out = torch.empty(2, 2048, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="argument 'x_ptr' \\(param 0\\) expects a bf16 tensor"):
        k[(2, 1)](*situ_args(x, out))
    xb = torch.randn(2, 4097, device="cuda", dtype=torch.bfloat16)[:, 1:]  # misaligned
    with pytest.raises(ValueError, match="is not 16-byte aligned"):
        k[(2, 1)](*situ_args(xb, out))
