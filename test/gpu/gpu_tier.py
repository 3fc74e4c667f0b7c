"""The GPU tier's one decision, and its launcher (ctest's ``pytest-gpu``, ``make test-gpu``, the
device pack's ``run.sh``).

- No NVIDIA GPU on this machine: the tier is skipped, with the reason (exit 77, which ctest
  reports as "Skipped", never "Passed").
- A GPU, but the tier cannot run (no torch for this Python, a torch without CUDA, a driver that
  does not answer): it fails, naming the reason.
- Otherwise it runs ``pytest test/gpu`` with this Python; a run in which no test passed (every
  test skipped, or none collected) fails too: a tier that ran nothing did not pass.

``python test/gpu/gpu_tier.py --probe`` prints the GPU it finds and exits 0, or exits 1 (what
``scripts/setup.sh`` asks). Only the standard library is needed to decide.
"""

import ctypes
import os
import pathlib
import shutil
import subprocess
import sys

SKIP = 77  # ctest's SKIP_RETURN_CODE for pytest-gpu (test/CMakeLists.txt)
HERE = pathlib.Path(__file__).resolve().parent
NO_GPU = ("no NVIDIA GPU on this machine (nvidia-smi lists none, no /dev/nvidia0, libcuda "
          "finds no device)")


def find_gpu():
    """A line naming the NVIDIA GPU this machine has, or None: ``nvidia-smi -L``, else a device
    node, else the driver library's device count."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        gpus = [line for line in out.splitlines() if line.startswith("GPU ")]
        if gpus:
            return f"nvidia-smi: {gpus[0]}" + (f" (+{len(gpus) - 1} more)" if len(gpus) > 1 else "")
    if os.path.exists("/dev/nvidia0"):
        return "/dev/nvidia0"
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    count = ctypes.c_int(0)
    if cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value:
        return f"libcuda: {count.value} device(s)"
    return None


def cannot_run_reason(gpu):
    """With a GPU present: why this Python cannot run the tier on it, or None."""
    try:
        import torch
    except ImportError as e:
        return (f"{gpu} is present but {sys.executable} cannot import torch ({e}); install "
                "torch where this Python sees it (scripts/setup.sh gives .venv the system's "
                "site packages on a GPU machine) or configure with -DKILN_GPU_PYTHON=<a python "
                "with torch>")
    if not torch.cuda.is_available():
        return (f"{gpu} is present but torch {torch.__version__} (CUDA "
                f"{torch.version.cuda or 'none: a CPU-only build'}) sees no CUDA device")
    return None


def main(argv):
    if argv[:1] == ["--probe"]:
        gpu = find_gpu()
        if gpu:
            print(gpu)
        return 0 if gpu else 1
    gpu = find_gpu()
    if gpu is None:
        print(f"pytest-gpu skipped: {NO_GPU}")
        return SKIP
    reason = cannot_run_reason(gpu)
    if reason is not None:
        print(f"pytest-gpu FAILED: {reason}", file=sys.stderr)
        return 1
    print(f"pytest-gpu: {gpu}; {sys.executable}", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                            str(HERE), *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
