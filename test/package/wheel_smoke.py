"""Smoke test of an installed kiln wheel, run by scripts/wheel-smoke.sh from a directory
outside the checkout with the fresh venv's Python:

    python wheel_smoke.py full     the kiln wheel: the package comes from the venv, not the
                                   checkout; kiln.ops.kimi_k3 is kernels_dsl.kimi_k3; a kernel
                                   compiles for sm_90a, sm_100a and sm_103a (libdevice found,
                                   a clear error where it is not); `kiln aot` writes a bundle
                                   and `kiln bundle verify|inspect` read it; `kiln version`
    python wheel_smoke.py runtime  the kiln-runtime wheel: no kiln._C; the bundle of the full
                                   run opens; `kiln version` says there is no compiler; `kiln
                                   aot` fails with a clear message

Needs the checkout's root in KILN_SOURCE_DIR (to check the package is not imported from it)
and, beside it in the working directory, smoke_kernels.py (copied by the script)."""

import json
import os
import subprocess
import sys

import kernels_dsl.kimi_k3
import kiln
import kiln.ops.kimi_k3

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
BUNDLE = "smoke.kbundle"
KILN = os.path.join(os.path.dirname(sys.executable), "kiln")  # the console script


def check(cond, what):
    if not cond:
        sys.exit(f"wheel smoke: FAILED: {what}")
    print(f"ok: {what}")


def kiln_cli(*args, status=0):
    r = subprocess.run([KILN, *args], capture_output=True, text=True, timeout=600)
    if r.returncode != status:
        sys.exit(f"wheel smoke: FAILED: `kiln {' '.join(args)}` exits {r.returncode}, not "
                 f"{status}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    print(f"ok: `kiln {' '.join(args)}` exits {status}")
    return r


def common():
    package = os.path.realpath(os.path.dirname(kiln.__file__))
    source = os.path.realpath(os.environ["KILN_SOURCE_DIR"])
    # the venv may live in the checkout's build folder; the sources are python/kiln
    check(package.startswith(os.path.realpath(sys.prefix) + os.sep)
          and not package.startswith(os.path.join(source, "python") + os.sep),
          f"kiln imported from the venv ({package})")
    check(kiln.ops.kimi_k3 is kernels_dsl.kimi_k3 and "situ" in kiln.ops.kimi_k3.MODULES,
          "kiln.ops.kimi_k3 is the Kimi K3 library")


def full():
    import smoke_kernels

    version = json.loads(kiln_cli("version", "--json").stdout)
    check(version["compiler"] and version["llvm"].startswith("22.")
          and version["ptx_isa"] == "8.8" and version["kiln"] == kiln.__version__,
          f"kiln version: LLVM {version['llvm']}, PTX ISA {version['ptx_isa']}, nvJitLink "
          f"{version['nvjitlink']}, libdevice {version['libdevice']}")
    print(kiln_cli("version").stdout, end="")
    for arch in ARCHS:
        ck = smoke_kernels.exp_scale.compile(smoke_kernels.SIGNATURE, smoke_kernels.CONSTEXPRS,
                                             arch=arch)
        check(f".target {arch}" in ck.ptx and ck.cubin[:4] == b"\x7fELF",
              f"exp_scale compiles for {arch} ({ck.cubin_tool}, {len(ck.cubin)} B cubin)")
    os.environ["KILN_LIBDEVICE"] = os.path.abspath("no-such-libdevice.bc")
    try:
        smoke_kernels.exp_scale.compile(smoke_kernels.SIGNATURE, {"BLOCK": 256}, arch="sm_90a")
        check(False, "a compile without libdevice fails")
    except Exception as e:  # noqa: BLE001 - kiln._C.MLIRError; the message is what counts
        check("cannot read libdevice" in str(e) and "KILN_LIBDEVICE" in str(e),
              f"a compile without libdevice fails clearly: {str(e).splitlines()[0][:160]}")
    del os.environ["KILN_LIBDEVICE"]
    kiln_cli("aot", "smoke_kernels", "--arch", ",".join(ARCHS), "-o", BUNDLE)
    kiln_cli("bundle", "verify", BUNDLE)
    manifest = json.loads(kiln_cli("bundle", "inspect", "--json", BUNDLE).stdout)
    archs = sorted(im["arch"] for k in manifest["kernels"] for im in k["images"])
    check([k["name"] for k in manifest["kernels"]] == ["exp_scale"]
          and archs == sorted(ARCHS), f"the bundle holds exp_scale for {', '.join(archs)}")


def runtime():
    package = os.path.dirname(kiln.__file__)
    check(not [f for f in os.listdir(package) if f.startswith("_C.")]
          and not kiln.compiler.compiler_available(), "no compiler extension")
    version = json.loads(kiln_cli("version", "--json").stdout)
    check(not version["compiler"] and version["llvm"] is None, "kiln version: no compiler")
    bundle = kiln.Bundle(BUNDLE)
    check(bundle.names() == ["exp_scale"], "the full wheel's bundle opens")
    family = bundle.kernel("exp_scale", BLOCK=512)
    family[(0,)](0, 0, 0, 1.0)  # an empty grid launches nothing (no GPU needed)
    kiln_cli("bundle", "inspect", BUNDLE)
    r = kiln_cli("aot", "smoke_kernels", "-o", "never.kbundle", status=2)
    check("kiln-runtime" in r.stderr, "kiln aot says the runtime package has no compiler")


if __name__ == "__main__":
    common()
    {"full": full, "runtime": runtime}[sys.argv[1]]()
    print(f"wheel smoke ({sys.argv[1]}): passed")
