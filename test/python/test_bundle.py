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
    # Several match: a family that picks one per call from the arguments.
    assert isinstance(b.kernel("situ_and_mul"), runtime.KernelFamily)
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
    with pytest.raises(KilnError,
                       match=r"argument 'n' \(param 1\): value 2147483648 is out of range"):
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


# --- manifest: per-arch targets ----------------------------------------------


def targets_meta(block=1024, **over):
    m = situ_meta(block)
    m["features"] = ["pdl", "vector16"]
    m["compiler_version"] = "kiln-test/1"
    m["targets"] = {
        "sm_90a": {"features": ["pdl", "vector16"], "registers": 39, "stack_bytes": 0,
                   "spill_store_bytes": 0, "spill_load_bytes": 0, "shared_static_bytes": 0,
                   "ptx_isa": "8.8", "assembler": "nvJitLink", "assembler_version": "13.0.88"},
        "sm_100a": {"features": ["vector16"], "registers": 40, "ptx_isa": "8.8"},
    }
    m.update(over)
    return m


def targets_bundle(tmp_path, name="t.kbundle", **over):
    w = runtime.BundleWriter("kiln-test")
    w.add_kernel(targets_meta(**over), [("sm_90a", "cubin", fake_cubin(1, 3000)),
                                        ("sm_100a", "cubin", fake_cubin(2, 2500))])
    path = tmp_path / name
    w.write(str(path))
    return path


def test_targets_round_trip_and_inspect(tmp_path):
    path = targets_bundle(tmp_path)
    k = Bundle(path).kernels()[0]
    assert k["targets"]["sm_90a"]["registers"] == 39
    assert k["compiler_version"] == "kiln-test/1"
    out = run_cli("bundle", "inspect", str(path)).stdout
    assert "39 registers, spills 0 B stored/0 B loaded, 0 B stack, 0 B static shared, " \
           "PTX ISA 8.8, nvJitLink 13.0.88, features: pdl vector16" in out
    assert "40 registers" in out


@pytest.mark.parametrize("targets,error", [
    ({"sm_90a": {"registers": 300}}, "field 'registers': value 300 is larger than 255"),
    ({"sm_90a": {"registers": -1}}, "field 'registers': expected a non-negative integer"),
    ({"sm_90a": {"features": ["tma"]}}, "feature \"tma\" is missing from the kernel's 'features'"),
    ({"sm_90a": {"ptx_isa": "8"}}, "field 'ptx_isa': expected \"<major>.<minor>\""),
    ({"sm_80": {}}, "facts for sm_80, which has no image"),
    ({"bogus": {}}, "invalid arch \"bogus\""),
    ([], "field 'targets': expected an object"),
])
def test_targets_validated(tmp_path, targets, error):
    with pytest.raises(KilnError, match=None) as e:
        targets_bundle(tmp_path, targets=targets)
    assert error in str(e.value)


def test_targetinfo_features_and_logs():
    from kiln.compiler.targetinfo import merge_arch_metadata, parse_assembler_log, ptx_features

    ptx = """
    .version 8.8
    // wgmma.mma_async in a comment does not count
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [a], [b, {c, d}], [e];
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [m], 0;
    elect.sync %r1|%p1, -1;
    griddepcontrol.wait;
    atom.relaxed.sys.global.add.u32 %r1, [%rd1], 1;
    ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];
    tcgen05.mma.cta_group::1.kind::f16 [a], b, c, d, p;
    """  # noqa: E501 - one PTX instruction a line, as in a real module
    assert ptx_features(ptx) == ["elect", "mbarrier", "pdl", "sys_atomics", "tcgen05", "tma",
                                 "vector16"]
    assert ptx_features("ld.global.v2.b32 {%r1, %r2}, [%rd1];\natom.global.add.u32 %r1, [a], 1;") \
        == []
    log = ("ptxas info    : Function properties for k\nptxas         .     8 bytes stack frame, "
           "12 bytes spill stores, 16 bytes spill loads\nptxas info    : Used 255 registers")
    assert parse_assembler_log(log) == {"registers": 255, "stack_bytes": 8,
                                        "spill_store_bytes": 12, "spill_load_bytes": 16}
    merged = merge_arch_metadata([{"features": ["vector16"], "targets": {"sm_90a": {"a": 1}},
                                   "shared_bytes": 18432},
                                  {"features": ["tcgen05"], "targets": {"sm_100a": {"a": 2}},
                                   "shared_bytes": 26624}])
    assert merged["features"] == ["tcgen05", "vector16"]
    assert list(merged["targets"]) == ["sm_100a", "sm_90a"]
    # one launch size for every image: the largest arch's dynamic shared memory
    assert merged["shared_bytes"] == 26624


# --- bundle diff ---------------------------------------------------------------


def test_cli_diff_identical_is_clean(tmp_path):
    a = targets_bundle(tmp_path, "a.kbundle")
    r = run_cli("bundle", "diff", str(a), str(a))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no differences" in r.stdout


def test_cli_diff_detects_lossy_port(tmp_path):
    a = targets_bundle(tmp_path, "a.kbundle")
    meta = targets_meta(pdl=False, features=["vector16"])
    meta["params"][0]["divisibility"] = 1
    meta["targets"]["sm_90a"] = {"features": ["vector16"], "registers": 64,
                                 "spill_store_bytes": 8, "spill_load_bytes": 8}
    del meta["targets"]["sm_100a"]
    w = runtime.BundleWriter("kiln-test-2")
    w.add_kernel(meta, [("sm_90a", "cubin", fake_cubin(1, 3000))])
    w.add_kernel(minimal_meta("extra"), [("sm_90a", "cubin", fake_cubin(5, 100))])
    b = tmp_path / "b.kbundle"
    w.write(str(b))
    r = run_cli("bundle", "diff", str(a), str(b))
    assert r.returncode == 1, r.stdout + r.stderr
    for text in ("LOST     situ_and_mul[BLOCK=1024, HAS_LINEAR_BETA=true] ptrs(bf16,bf16): "
                 "PDL launch attribute dropped",
                 "feature dropped: pdl",
                 "alignment assumption dropped: x divisibility 16 -> 1",
                 "cubin image for sm_100a removed",
                 "sm_90a: registers 39 -> 64 (+25)",
                 "LOST     situ_and_mul[BLOCK=1024, HAS_LINEAR_BETA=true] ptrs(bf16,bf16): "
                 "sm_90a: spill stores (B) 0 -> 8 (+8)",
                 "added    extra: kernel added"):
        assert text in r.stdout, r.stdout
    # The reverse direction loses the extra kernel.
    r = run_cli("bundle", "diff", str(b), str(a), "--json")
    assert r.returncode == 1
    import json as _json
    changes = _json.loads(r.stdout)["changes"]
    assert {"severity": "lost", "kernel": "extra", "change": "kernel removed"} in changes
    r = run_cli("bundle", "diff", str(a), str(tmp_path / "missing.kbundle"))
    assert r.returncode == 2


def minimal_meta(name):
    return {"name": name, "symbol": name, "threads_per_block": 32,
            "params": [{"name": "p", "kind": "ptr", "dtype": "f32"}]}


# --- specialization selection --------------------------------------------------


def family_bundle(tmp_path):
    w = runtime.BundleWriter("kiln-test")
    for dtype, block in (("bf16", 2048), ("f32", 1024)):
        for hlb in (True, False):
            m = situ_meta(block)
            m["params"][0]["dtype"] = dtype
            m["params"][2]["divisibility"] = 16
            m["constexprs"] = {"BLOCK": block, "HAS_LINEAR_BETA": hlb}
            m["symbol"] = f"situ_{dtype}_{hlb}"
            w.add_kernel(m, [("sm_90a", "cubin", fake_cubin(block + hlb, 500))])
    # A generic (unaligned) fallback for bf16.
    m = situ_meta(2048)
    m["params"][0]["divisibility"] = 1
    m["params"][1]["divisibility"] = 1
    m["constexprs"] = {"BLOCK": 256, "HAS_LINEAR_BETA": True}
    w.add_kernel(m, [("sm_90a", "cubin", fake_cubin(9, 500))])
    path = tmp_path / "family.kbundle"
    w.write(str(path))
    return Bundle(path)


def test_select_by_pointer_dtype_alignment_and_constexprs(tmp_path):
    b = family_bundle(tmp_path)
    fam = b.kernel("situ_and_mul")
    assert isinstance(fam, runtime.KernelFamily)
    bf16, f32 = (0x1000, "bf16"), (0x2000, "f32")
    k = fam.select([("ptr",) + bf16, ("ptr", 0x3000, "bf16"), 4096, 1.0],
                   {"HAS_LINEAR_BETA": False})
    assert k.meta["constexprs"] == {"BLOCK": 2048, "HAS_LINEAR_BETA": False}
    k = fam.select([("ptr",) + f32, ("ptr", 0x3000, "bf16"), 4096, 1.0], {"HAS_LINEAR_BETA": True})
    assert k.meta["params"][0]["dtype"] == "f32"
    # Unaligned pointers: only the generic entry fits.
    k = fam.select([("ptr", 0x1002, "bf16"), ("ptr", 0x3002, "bf16"), 4096, 1.0])
    assert k.meta["constexprs"]["BLOCK"] == 256
    # Aligned bf16 with HAS_LINEAR_BETA=True: the specialized entry beats the generic one.
    k = fam.select([("ptr",) + bf16, ("ptr", 0x3000, "bf16"), 4096, 1.0], {"HAS_LINEAR_BETA": True})
    assert k.meta["constexprs"]["BLOCK"] == 2048
    # Ambiguous without the constexpr.
    with pytest.raises(KilnError, match="ambiguous"):
        fam.select([("ptr",) + f32, ("ptr", 0x3000, "bf16"), 4096, 1.0])


def test_cli_coverage(tmp_path):
    """Per kernel, each specialization's constexprs, pointer dtypes and assumptions (the
    generic entry: none)."""
    import json

    family_bundle(tmp_path)
    path = os.fspath(tmp_path / "family.kbundle")
    r = run_cli("bundle", "coverage", path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"bundle '{path}': 5 specializations of 1 kernels")
    assert lines[2] == "situ_and_mul"
    assert "  [BLOCK=2048, HAS_LINEAR_BETA=true] ptrs(bf16,bf16): x 16-byte aligned, out " \
           "16-byte aligned, n % 16 == 0" in lines
    assert lines[-1] == "  [BLOCK=256, HAS_LINEAR_BETA=true] ptrs(bf16,bf16): any arguments"
    r = run_cli("bundle", "coverage", "--json", path)
    (kernel,) = json.loads(r.stdout)["kernels"]
    assert kernel["name"] == "situ_and_mul" and len(kernel["specializations"]) == 5
    assert kernel["specializations"][0]["assumes"] == [
        {"param": "x", "kind": "ptr", "divisibility": 16},
        {"param": "out", "kind": "ptr", "divisibility": 16},
        {"param": "n", "kind": "scalar", "divisibility": 16}]
    assert kernel["specializations"][-1] == {
        "constexprs": {"BLOCK": 256, "HAS_LINEAR_BETA": True}, "pointers": ["bf16", "bf16"],
        "assumes": []}


def test_family_find_remembers_a_miss():
    """find: the fitting specialization, or None where none fits (no JIT, no error), a miss
    remembered like a fit by the arguments' alignment classes; select explains it."""
    w = runtime.BundleWriter("kiln-test")
    w.add_kernel({"name": "n16", "symbol": "n16", "threads_per_block": 32,
                  "params": [{"name": "n", "kind": "scalar", "dtype": "i32",
                              "divisibility": 16}]}, [("sm_90a", "cubin", fake_cubin(1, 64))])
    fam = Bundle.from_bytes(w.serialize()).family("n16")
    assert fam.find([64]).meta["name"] == "n16"
    assert fam.find([63]) is None and fam.find([79]) is None  # one class: odd
    assert len(fam._chosen) == 2 and list(fam._chosen.values()).count(None) == 1
    with pytest.raises(KilnError, match="wants a multiple of 16, got 63"):
        fam.select([63])


def test_select_missing_specialization_names_itself(tmp_path, monkeypatch):
    b = family_bundle(tmp_path)
    monkeypatch.setenv("KILN_NO_JIT", "1")
    fam = b.family("situ_and_mul", jit=lambda args, c: pytest.fail("KILN_NO_JIT=1 must not JIT"))
    with pytest.raises(KilnError) as e:
        fam.select([("ptr", 0x1000, "f16"), ("ptr", 0x3000, "bf16"), 4096, 1.0])
    msg = str(e.value)
    assert "has no specialization of 'situ_and_mul' for (ptr<f16> 0x1000 (256+-byte aligned)" in msg
    assert "[KILN_NO_JIT=1: not compiling it]" in msg
    assert "situ_and_mul {BLOCK=2048, HAS_LINEAR_BETA=true} (x: ptr<bf16> (div 16), out: " \
           "ptr<bf16> (div 16), n: i32 (div 16), beta: f32): argument 'x' (param 0) wants " \
           "ptr<bf16>, got ptr<f16>" in msg
    # Integer divisibility is part of the choice.
    with pytest.raises(KilnError,
                       match="argument 'n' \\(param 2\\) wants a multiple of 16, got 4100"):
        fam.select([("ptr", 0x1000, "f32"), ("ptr", 0x3000, "bf16"), 4100, 1.0],
                   {"HAS_LINEAR_BETA": True})
    # Without KILN_NO_JIT the fallback compiles the missing one.
    monkeypatch.delenv("KILN_NO_JIT")
    sentinel = object()
    fam = b.family("situ_and_mul", jit=lambda args, c: sentinel)
    assert fam.select([("ptr", 0x1000, "f16"), ("ptr", 0x3000, "bf16"), 4096, 1.0]) is sentinel
