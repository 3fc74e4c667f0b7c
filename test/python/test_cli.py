"""The `kiln` command's own subcommands (kiln.__main__): `kiln version` reports the toolchain
the compiler extension was built with and finds, and says plainly when there is no compiler
(the kiln-runtime package); `kiln aot` is `python -m kiln.aot`. The bundle subcommands are
tested in test_bundle.py; the installed console script in test/package/wheel_smoke.py."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import kiln
import kiln.language as kl
from kiln import aot
from kiln.__main__ import build_parser

PYTHON_PATH = os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__)))


def run_python(code, **env):
    full = dict(os.environ, **env)
    full["PYTHONPATH"] = PYTHON_PATH + os.pathsep + full.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full, timeout=120)


def test_version_reports_the_toolchain():
    pytest.importorskip("kiln._C")
    r = run_python("import sys; from kiln.__main__ import main; sys.exit(main(['version', "
                   "'--json']))", CUDA_HOME="/nonexistent-cuda", KILN_LIBDEVICE="")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["kiln"] == kiln.__version__ and v["compiler"] is True
    assert v["llvm"].startswith("22.") and v["ptx_isa"] == "8.8"
    # Everything is looked up where CUDA_HOME says: nothing there.
    assert v["cuda_home"] == "/nonexistent-cuda"
    assert v["libdevice"] == "/nonexistent-cuda/nvvm/libdevice/libdevice.10.bc"
    assert v["libdevice_found"] is False
    text = run_python("import sys; from kiln.__main__ import main; sys.exit(main(['version']))",
                      CUDA_HOME="/nonexistent-cuda", KILN_LIBDEVICE="")
    assert "LLVM 22." in text.stdout and "PTX ISA 8.8" in text.stdout
    assert "libdevice  /nonexistent-cuda/nvvm/libdevice/libdevice.10.bc MISSING" in text.stdout


def test_version_names_the_libdevice_kiln_reads():
    pytest.importorskip("kiln._C")
    r = run_python("import sys; from kiln.__main__ import main; sys.exit(main(['version', "
                   "'--json']))", KILN_LIBDEVICE=os.path.abspath(__file__))
    v = json.loads(r.stdout)
    assert v["libdevice"] == os.path.abspath(__file__) and v["libdevice_found"] is True


def test_version_without_the_compiler_extension():
    r = run_python("""
        import sys
        sys.modules["kiln._C"] = None  # the kiln-runtime package: no compiler extension
        from kiln.__main__ import main, versions
        v = versions()
        assert v["compiler"] is False and v["llvm"] is None and v["libdevice"] is None, v
        sys.exit(main(["version"]))
    """)
    assert r.returncode == 0, r.stderr
    assert "compiler   none: kiln._C is not installed" in r.stdout
    assert "bundle format" in r.stdout


def test_aot_command_is_kiln_aot():
    args = build_parser().parse_args(["aot", "kernels_dsl.kimi_k3", "-o", "out.kbundle", "-j",
                                      "3"])
    assert args.handler is aot.run
    assert (args.package, args.output, args.jobs) == ("kernels_dsl.kimi_k3", "out.kbundle", 3)
    assert args.arch == ",".join(aot.DEFAULT_ARCHS)


def test_aot_without_the_compiler_says_so():
    r = run_python("""
        import sys
        sys.modules["kiln._C"] = None
        from kiln.__main__ import main
        sys.exit(main(["aot", "kernels_dsl.kimi_k3", "-o", "never.kbundle"]))
    """)
    assert r.returncode == 2
    assert "kiln._C does not load" in r.stderr and "kiln-runtime" in r.stderr


@kiln.jit
def _precise_exp(x_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(x_ptr + offs, kl.exp(kl.load(x_ptr + offs, mask=mask), precise=True), mask=mask)


def test_a_missing_libdevice_is_named(monkeypatch):
    C = pytest.importorskip("kiln._C")
    monkeypatch.setenv("KILN_LIBDEVICE", "/nonexistent/libdevice.10.bc")
    with pytest.raises(C.MLIRError, match=r"cannot read libdevice.*'/nonexistent/libdevice"
                                          r"\.10\.bc'.*KILN_LIBDEVICE"):
        _precise_exp.compile({"x_ptr": "*f32", "n": "i32"}, {"BLOCK": 128}, arch="sm_90a")
