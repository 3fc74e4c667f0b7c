"""GPU tier: needs torch with a CUDA device; everything here skips with the reason otherwise.

Markers: ``sm90`` (runs on Hopper), ``blackwell`` (needs sm_100a/sm_103a; skipped on Hopper).
Fixture ``launch_mode``: a Kimi K3 test taking it runs twice, JIT-compiled and through the
shipped bundle with JIT forbidden (``KILN_NO_JIT=1``, the bundle ``KILN_BUNDLE`` names).
"""

import os

import pytest

try:
    import torch
except ImportError:  # the CPU machines have no torch
    torch = None


def _gpu_reason():
    if torch is None:
        return "torch is not installed (the GPU tier runs on the GPU machine)"
    if not torch.cuda.is_available():
        return "no CUDA device"
    return None


#: The archs kiln compiles for (and its bundles hold images of), by compute capability.
KILN_ARCHS = {(9, 0): "sm_90a", (10, 0): "sm_100a", (10, 3): "sm_103a"}


def pytest_configure(config):
    config.addinivalue_line("markers", "sm90: tests a Hopper-only feature (each use says which)")
    config.addinivalue_line("markers",
                            "blackwell: tests a Blackwell-only feature (sm_100a/sm_103a)")


def pytest_collection_modifyitems(config, items):
    """Every test runs on each GPU kiln compiles for; only those marked ``sm90`` or
    ``blackwell`` (an arch-specific feature) are gated to that arch."""
    reason = _gpu_reason()
    major = None
    if reason is None:
        cap = torch.cuda.get_device_capability()
        major = cap[0]
        if cap not in KILN_ARCHS:
            reason = (f"kiln compiles for {', '.join(KILN_ARCHS.values())}; this GPU is "
                      f"sm_{cap[0]}{cap[1]}")
    for item in items:
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
        elif "blackwell" in item.keywords and major != 10:
            item.add_marker(pytest.mark.skip(
                reason=f"needs a Blackwell GPU (sm_100a/sm_103a); this is sm_{major}0"))
        elif "sm90" in item.keywords and major != 9:
            item.add_marker(pytest.mark.skip(reason=f"needs Hopper (sm_90); this is sm_{major}0"))


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
