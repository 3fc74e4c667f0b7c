"""GPU tier: needs an NVIDIA GPU and torch with CUDA. Whether it runs is decided once, in
``gpu_tier.py`` (also its launcher): without a GPU every test skips with the reason; with a GPU
that the tier cannot use (no torch, a CPU-only torch) the run is an error naming the reason; a
run with a GPU in which no test passed fails.

Every test runs on each arch kiln compiles for; markers gate the tests of an arch-specific
feature: ``sm90`` (Hopper only), ``blackwell`` (sm_100a/sm_103a only).
Fixture ``launch_mode``: a Kimi K3 test taking it runs twice, JIT-compiled and through the
shipped bundle with JIT forbidden (``KILN_NO_JIT=1``, the bundle ``KILN_BUNDLE`` names).
"""

import os
import sys

import gpu_tier
import pytest

GPU = gpu_tier.find_gpu()
_passed = 0


#: The archs kiln compiles for (and its bundles hold images of), by compute capability.
KILN_ARCHS = {(9, 0): "sm_90a", (10, 0): "sm_100a", (10, 3): "sm_103a"}


def pytest_configure(config):
    config.addinivalue_line("markers", "sm90: tests a Hopper-only feature (each use says which)")
    config.addinivalue_line("markers",
                            "blackwell: tests a Blackwell-only feature (sm_100a/sm_103a)")


def pytest_collection_modifyitems(config, items):
    """Every test runs on each GPU kiln compiles for; only those marked ``sm90`` or
    ``blackwell`` (an arch-specific feature) are gated to that arch."""
    if GPU is None:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=gpu_tier.NO_GPU))
        return
    reason = gpu_tier.cannot_run_reason(GPU)
    if reason is not None:
        raise pytest.UsageError(f"the GPU tier cannot run: {reason}")
    import torch

    cap = torch.cuda.get_device_capability()
    major = cap[0]
    if cap not in KILN_ARCHS:
        skip = pytest.mark.skip(reason=f"kiln compiles for {', '.join(KILN_ARCHS.values())}; "
                                       f"this GPU is sm_{cap[0]}{cap[1]}")
        for item in items:
            item.add_marker(skip)
        return
    for item in items:
        if "blackwell" in item.keywords and major != 10:
            item.add_marker(pytest.mark.skip(
                reason=f"needs a Blackwell GPU (sm_100a/sm_103a); this is sm_{major}0"))
        elif "sm90" in item.keywords and major != 9:
            item.add_marker(pytest.mark.skip(reason=f"needs Hopper (sm_90); this is sm_{major}0"))


def pytest_runtest_logreport(report):
    global _passed
    if report.when == "call" and report.passed:
        _passed += 1


def pytest_sessionfinish(session, exitstatus):
    if GPU is not None and exitstatus == 0 and _passed == 0:
        tw = session.config.get_terminal_writer()
        tw.line()
        tw.line(f"GPU tier FAILED: {GPU} is present but no test passed (all skipped)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(params=["jit", "bundle"])
def launch_mode(request, monkeypatch):
    """"jit": the wrappers compile their kernels; "bundle": they launch the precompiled images
    of the bundle ``KILN_BUNDLE`` names, JIT forbidden (a serving deployment). The bundle run
    skips where no bundle is named (``make bundle``; the device pack names its own)."""
    if request.param == "bundle":
        if not os.environ.get("KILN_BUNDLE"):
            pytest.skip("KILN_BUNDLE names no bundle (make bundle builds build/kimi_k3.kbundle)")
        monkeypatch.setenv("KILN_NO_JIT", "1")
    return request.param


@pytest.fixture(autouse=True)
def _release_cached_gpu_memory():
    """Gives the CUDA caching allocator's unused blocks back after a test that left more than
    4 GiB reserved: under pytest-xdist several workers share the GPU, and a worker that once ran
    a multi-GiB test (the 2^31 caches) must not keep those bytes from the others."""
    yield
    if GPU is not None and "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_initialized() and torch.cuda.memory_reserved() > (4 << 30):
            torch.cuda.empty_cache()
