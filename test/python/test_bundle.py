"""Bundles from Python on the CPU: writer -> reader round trip, the CLI,
corruption errors, and argument marshalling (no GPU, no torch needed)."""

import os
import subprocess
import sys

import pytest

_runtime = pytest.importorskip("kiln._runtime")
from kiln import runtime  # noqa: E402
from kiln.runtime import Bundle, KilnError, LaunchableKernel, marshal_args  # noqa: E402

PYTHON_PATH = os.path.dirname(os.path.dirname(_runtime.__file__))


def situ_meta(block=1024):
    return {
        "name": "situ_and_mul",
        "symbol": f"situ_and_mul_{block}",
        "params": [
            {"name": "x", "kind": "ptr", "dtype": "bf16", "divisibility": 16},
            {"name": "out", "kind": "ptr", "dtype": "bf16", "divisibility": 16},
            {"name": "n", "kind": "scalar", "dtype": "i32", "divisibility": 1},
            {"name": "beta", "kind": "scalar", "dtype": "f32"},
        ],
        "constexprs": {"BLOCK": block, "HAS_LINEAR_BETA": True},
        "threads_per_block": 256,
        "shared_bytes": 0,
        "pdl": True,
        "cluster": [1, 1, 1],
        "features": ["vector16"],
        "source_hash": "0a1b2c",
        "specialization": f"BLOCK={block}",
    }


def fake_cubin(seed, size):
    body = bytes((seed * 31 + i * 7) & 0xFF for i in range(size - 4))
    return b"\x7fELF" + body


def make_writer():
    w = runtime.BundleWriter("kiln-test")
    w.add_kernel(situ_meta(1024), [("sm_90a", "cubin", fake_cubin(1, 3000)),
                                   ("sm_100a", "cubin", fake_cubin(2, 2500)),
                                   ("sm_103a", "cubin", fake_cubin(3, 2600))])
    w.add_kernel(situ_meta(2048), [("sm_90a", "cubin", fake_cubin(4, 1200)),
                                   ("sm_90a", "ptx", b".version 8.8\n.target sm_90a\n")])
    return w


@pytest.fixture
def bundle_path(tmp_path):
    path = tmp_path / "test.kbundle"
    make_writer().write(str(path))
    return path


def run_cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_PATH + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kiln", *args], capture_output=True, text=True,
                          env=env, timeout=60)


# --- round trip --------------------------------------------------------------


def test_round_trip(bundle_path):
    b = Bundle(bundle_path)
    assert b.compiler_version == "kiln-test"
    assert b.names() == ["situ_and_mul"]
    kernels = b.kernels()
    assert len(kernels) == 2
    k0 = kernels[0]
    expected = situ_meta(1024)
    expected["params"][3]["divisibility"] = 1  # the writer fills in defaults
    for key, value in expected.items():
        assert k0[key] == value, key
    assert [(im["arch"], im["kind"], im["size"]) for im in k0["images"]] == [
        ("sm_90a", "cubin", 3000), ("sm_100a", "cubin", 2500), ("sm_103a", "cubin", 2600)]
    assert all(im["offset"] % 256 == 0 for k in kernels for im in k["images"])
    assert b.image_bytes(0, 1) == fake_cubin(2, 2500)
    assert b.image_bytes(1, 1) == b".version 8.8\n.target sm_90a\n"
    assert b.file_size == os.path.getsize(bundle_path)


def test_serialize_is_deterministic(bundle_path):
    data = make_writer().serialize()
    assert data == make_writer().serialize()
    assert data == bundle_path.read_bytes()
    assert Bundle.from_bytes(data).kernels() == Bundle(bundle_path).kernels()


def test_kernel_lookup_by_constexprs(bundle_path):
    b = Bundle(bundle_path)
    k = b.kernel("situ_and_mul", BLOCK=2048)
    assert isinstance(k, LaunchableKernel)
    assert k.meta["symbol"] == "situ_and_mul_2048"
    assert k.archs == ["sm_90a", "sm_90a (ptx)"]
    assert b.kernel("situ_and_mul", BLOCK=2048) is k  # cached
    with pytest.raises(KilnError, match="ambiguous"):
        b.kernel("situ_and_mul")
    with pytest.raises(KilnError, match=r"no specialization of 'situ_and_mul' with constexprs"):
        b.kernel("situ_and_mul", BLOCK=7)
    with pytest.raises(KilnError, match=r"has no kernel 'nope'; it holds: 'situ_and_mul'"):
        b.kernel("nope")


def test_writer_rejects_bad_metadata():
    w = runtime.BundleWriter()
    meta = situ_meta()
    del meta["symbol"]
    with pytest.raises(KilnError, match="field 'symbol' missing"):
        w.add_kernel(meta, [("sm_90a", "cubin", b"x")])
    meta = situ_meta()
    meta["params"][0]["dtype"] = "bf17"
    with pytest.raises(KilnError, match='unknown dtype "bf17"'):
        w.add_kernel(meta, [("sm_90a", "cubin", b"x")])
    with pytest.raises(KilnError, match="invalid arch"):
        w.add_kernel(situ_meta(), [("gfx942", "cubin", b"x")])
    assert issubclass(KilnError, RuntimeError)


# --- CLI -----------------------------------------------------------------------


def test_cli_inspect(bundle_path):
    r = run_cli("bundle", "inspect", str(bundle_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for s in ["2 kernels", "5 images", "kernel situ_and_mul [BLOCK=1024]", "situ_and_mul_2048",
              "x: ptr<bf16> (div 16)", "n: i32", "beta: f32", "BLOCK=1024",
              "HAS_LINEAR_BETA=true", "pdl=true", "sm_90a cubin 3000 B", "sm_100a cubin 2500 B",
              "sm_103a cubin 2600 B", "sm_90a ptx 28 B"]:
        assert s in out, f"{s!r} not in:\n{out}"


def test_cli_inspect_json(bundle_path):
    import json

    r = run_cli("bundle", "inspect", "--json", str(bundle_path))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["kernels"][0]["images"][2]["arch"] == "sm_103a"


def test_cli_verify(bundle_path, tmp_path):
    r = run_cli("bundle", "verify", str(bundle_path))
    assert r.returncode == 0, r.stderr
    assert "ok:" in r.stdout and "sm_100a" in r.stdout

    data = bytearray(bundle_path.read_bytes())
    b = Bundle(bundle_path)
    im = b.kernels()[0]["images"][1]
    data[im["offset"] + 100] ^= 0x40
    bad = tmp_path / "bad.kbundle"
    bad.write_bytes(bytes(data))
    r = run_cli("bundle", "verify", str(bad))
    assert r.returncode != 0
    assert "image 1 (situ_and_mul, sm_100a) checksum mismatch" in r.stderr
    r = run_cli("bundle", "inspect", str(bad))
    assert r.returncode != 0 and "checksum mismatch" in r.stderr

    r = run_cli("bundle", "verify", str(tmp_path / "missing.kbundle"))
    assert r.returncode != 0 and "cannot open bundle" in r.stderr


# --- corruption ----------------------------------------------------------------


def test_corruption_errors(bundle_path):
    data = bundle_path.read_bytes()
    with pytest.raises(KilnError, match=r"truncated: file is 100 bytes, header says \d+"):
        Bundle.from_bytes(data[:100], "x.kbundle")
    with pytest.raises(KilnError, match="bad magic"):
        Bundle.from_bytes(b"NOTABNDL" + data[8:])
    v7 = bytearray(data)
    v7[8] = 7
    with pytest.raises(KilnError,
                       match=r"unsupported format version 7 \(this runtime reads version 1\)"):
        Bundle.from_bytes(bytes(v7))
    man = bytearray(data)
    man[80] ^= 1
    with pytest.raises(KilnError, match="manifest checksum mismatch"):
        Bundle.from_bytes(bytes(man), "x.kbundle")
    # Every single-byte change anywhere is detected (sampled for speed).
    for i in range(0, len(data), 97):
        bad = bytearray(data)
        bad[i] ^= 0xFF
        with pytest.raises(KilnError):
            Bundle.from_bytes(bytes(bad))


# --- JIT path and launching without a GPU ----------------------------------------


def test_from_images_and_zero_grid():
    meta = {"name": "jit_k", "symbol": "jit_k_0",
            "params": [{"name": "n", "kind": "scalar", "dtype": "i32"}],
            "threads_per_block": 64}
    k = LaunchableKernel.from_images(meta, {"sm_90a": b"\x7fELF...."})
    assert k.meta["images"][0]["arch"] == "sm_90a"
    k[(0,)](5)  # launches nothing, needs no GPU
    k[lambda m: (0, 1)](5)
    with pytest.raises(TypeError, match="expects 1 argument"):
        k[(1,)](1, 2)
    if not runtime.driver_available():
        with pytest.raises(KilnError, match="cannot load the CUDA driver"):
            k[(1,)](5)
        with pytest.raises(KilnError, match="libcuda"):
            runtime.device_arch()


def test_native_launch_converts_by_dtype():
    meta = {"name": "k", "symbol": "k",
            "params": [{"name": "p", "kind": "ptr", "dtype": "f32"},
                       {"name": "n", "kind": "scalar", "dtype": "i32"}],
            "threads_per_block": 32}
    k = runtime._runtime.Kernel.from_images(meta, {"sm_90a": b"\x7fELF"})
    with pytest.raises(KilnError, match=r"argument 'n' \(param 1\): value 2147483648 is out of range"):
        k.launch((1,), [0, 2**31], 0)
    with pytest.raises(KilnError, match=r"argument 'p' \(param 0\) expects ptr<f32>"):
        k.launch((1,), [1.5, 1], 0)
    with pytest.raises(KilnError, match="expects 2 arguments"):
        k.launch((1,), [0], 0)
    k.launch((0, 4), [0, 1], 0)


# --- marshal_args ----------------------------------------------------------------


class FakeCudaArray:
    """A tensor-like object with __cuda_array_interface__ (as cupy/numba expose)."""

    def __init__(self, ptr, typestr="<V2", shape=(16,)):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr,
                                         "shape": shape, "version": 3}


META = situ_meta()


def test_marshal_args_accepts_matching_arguments():
    x, out = FakeCudaArray(0x10000), FakeCudaArray(0x20000)
    assert marshal_args(META, [x, out, 7, 0.5]) == [0x10000, 0x20000, 7, 0.5]
    assert marshal_args(META, [0x10000, 0x20000, True, 1]) == [0x10000, 0x20000, 1, 1.0]
    f32 = {"name": "k", "params": [{"name": "a", "kind": "ptr", "dtype": "f32"}]}
    assert marshal_args(f32, [FakeCudaArray(0x100, "<f4")]) == [0x100]


def test_marshal_args_wrong_count():
    with pytest.raises(TypeError, match=r"kernel 'situ_and_mul' expects 4 arguments "
                                        r"\(x: ptr<bf16> \(div 16\), out: ptr<bf16> \(div 16\), "
                                        r"n: i32, beta: f32\), got 2"):
        marshal_args(META, [FakeCudaArray(0x100), FakeCudaArray(0x200)])


def test_marshal_args_wrong_dtype():
    with pytest.raises(TypeError, match=r"kernel 'situ_and_mul': argument 'x' \(param 0\) expects "
                                        r"a bf16 tensor, got a CUDA array of typestr '<f4'"):
        marshal_args(META, [FakeCudaArray(0x100, "<f4"), FakeCudaArray(0x200), 1, 1.0])


def test_marshal_args_alignment():
    with pytest.raises(ValueError, match=r"argument 'out' \(param 1\): pointer 0x208 is not "
                                         r"16-byte aligned \(divisibility 16\)"):
        marshal_args(META, [FakeCudaArray(0x100), FakeCudaArray(0x208), 1, 1.0])


def test_marshal_args_scalars():
    x, out = FakeCudaArray(0x100), FakeCudaArray(0x200)
    with pytest.raises(ValueError, match=r"argument 'n' \(param 2\): value 2147483648 is out of "
                                         r"range for i32"):
        marshal_args(META, [x, out, 2**31, 1.0])
    with pytest.raises(TypeError, match=r"argument 'n' \(param 2\) expects i32 \(an int\), got "
                                        r"float"):
        marshal_args(META, [x, out, 1.5, 1.0])
    with pytest.raises(TypeError, match=r"argument 'beta' \(param 3\) expects f32 \(a float\), "
                                        r"got str"):
        marshal_args(META, [x, out, 1, "1.0"])
    with pytest.raises(ValueError, match="out of range for f32"):
        marshal_args(META, [x, out, 1, 1e300])
    with pytest.raises(TypeError, match=r"argument 'n' \(param 2\) expects a scalar i32"):
        marshal_args(META, [x, out, FakeCudaArray(0x300), 1.0])
    with pytest.raises(TypeError, match=r"argument 'x' \(param 0\) expects a CUDA tensor"):
        marshal_args(META, [None, out, 1, 1.0])


def test_marshal_args_rejects_host_memory():
    np = pytest.importorskip("numpy")
    host = np.zeros(16, dtype=np.float32)
    meta = {"name": "k", "params": [{"name": "a", "kind": "ptr", "dtype": "f32"}]}
    with pytest.raises(ValueError, match=r"argument 'a' \(param 0\) must be on a CUDA device, "
                                         r"got an array on cpu"):
        marshal_args(meta, [host])


def test_marshal_args_dlpack():
    np = pytest.importorskip("numpy")
    host = np.zeros(16, dtype=np.float32)

    class FakeDLPackCuda:
        """Pretends numpy's DLPack capsule describes CUDA memory."""

        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None):
            return host.__dlpack__()

    meta = {"name": "k", "params": [{"name": "a", "kind": "ptr", "dtype": "f32"}]}
    assert marshal_args(meta, [FakeDLPackCuda()]) == [host.ctypes.data]
    meta16 = {"name": "k", "params": [{"name": "a", "kind": "ptr", "dtype": "f16"}]}
    with pytest.raises(TypeError, match="expects a f16 tensor, got a DLPack array of f32"):
        marshal_args(meta16, [FakeDLPackCuda()])


def test_grid_and_stream_resolution():
    meta = situ_meta()
    assert runtime.resolve_grid(4, meta) == (4, 1, 1)
    assert runtime.resolve_grid((2, 3), meta) == (2, 3, 1)
    assert runtime.resolve_grid(lambda m: (m["n"] // m["BLOCK"],), meta,
                                [0, 0, 4096, 1.0]) == (4, 1, 1)
    with pytest.raises(TypeError, match="1 to 3 dimensions"):
        runtime.resolve_grid((1, 1, 1, 1), meta)
    with pytest.raises(ValueError, match="out of range"):
        runtime.resolve_grid((-1,), meta)
    assert runtime.resolve_stream(None, [FakeCudaArray(0)]) == 0
    assert runtime.resolve_stream(1234) == 1234

    class S:
        cuda_stream = 99

    assert runtime.resolve_stream(S()) == 99
