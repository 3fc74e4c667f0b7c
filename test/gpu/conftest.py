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


def pytest_configure(config):
    config.addinivalue_line("markers", "sm90: needs an sm_90 (Hopper) GPU")
    config.addinivalue_line("markers", "blackwell: needs an sm_100a/sm_103a GPU")


def pytest_collection_modifyitems(config, items):
    reason = _gpu_reason()
    major = None
    if reason is None:
        major = torch.cuda.get_device_capability()[0]
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
