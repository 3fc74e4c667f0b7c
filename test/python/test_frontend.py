"""The kiln frontend on the CPU: IR generated for kernels, user errors reported
at file:line, launch-time checks before any CUDA call, PTX/cubins per arch,
AOT bundles, caches. No GPU and no torch needed."""

import os
import subprocess
import sys

import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.compiler.semantic import Semantic
from kiln.testing import source_line

_C = pytest.importorskip("kiln._C")

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
HERE = os.path.abspath(__file__)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def situ_spec(dtype="bf16", linear=True):
    from kernels_dsl.kimi_k3 import situ

    for s in situ.AOT_SPECIALIZATIONS:
        if s.signature["x_ptr"] == f"*{dtype}" and s.constexprs["HAS_LINEAR_BETA"] == linear:
            return s
    raise AssertionError("no such spec")


def compile_spec(spec, **kw):
    return spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                               num_warps=spec.num_warps, name=spec.kernel_name, **kw)


# ---------------------------------------------------------------------------
# IR for situ_and_mul
# ---------------------------------------------------------------------------


def test_situ_tile_ir():
    ck = compile_spec(situ_spec("bf16", True), upto="tile")
    ir = ck.tile_ir
    assert "func.func @situ_and_mul(" in ir
    assert "tile.kernel" in ir and "tile.num_warps = 8 : i32" in ir
    assert ir.count("tile.divisibility = 16 : i32") == 5  # x, out, D, both strides
    assert ir.count("tile.load") == 2 and ir.count("tile.store") == 1
    assert ir.count("math.tanh") == 2 and "math.exp" in ir
    assert "tile.make_range {end = 2048 : i32, start = 0 : i32} : tensor<2048xi32>" in ir
    assert "arith.extf" in ir and "arith.truncf" in ir  # bf16 -> f32 math -> bf16


def test_situ_without_linear_beta_and_f32_input():
    ir = compile_spec(situ_spec("f32", False), upto="tile").tile_ir
    assert ir.count("math.tanh") == 1
    assert "!tile.ptr<f32>" in ir and "tensor<1024xf32>" in ir
    assert "tile.num_warps = 4 : i32" in ir


def test_situ_metadata_shape():
    meta = compile_spec(situ_spec("bf16", True), upto="tile").meta
    assert set(meta) >= {"name", "symbol", "params", "constexprs", "threads_per_block",
                         "shared_bytes", "pdl", "cluster", "features", "source_hash",
                         "specialization"}
    assert meta["name"] == meta["symbol"] == "situ_and_mul"
    assert meta["params"][0] == {"name": "x_ptr", "kind": "ptr", "dtype": "bf16",
                                 "divisibility": 16}
    assert meta["params"][2] == {"name": "D", "kind": "scalar", "dtype": "i32",
                                 "divisibility": 16}
    assert meta["params"][5]["dtype"] == "f32" and meta["params"][5]["divisibility"] == 1
    assert meta["constexprs"] == {"BLOCK": 2048, "HAS_LINEAR_BETA": True}
    assert meta["threads_per_block"] == 256 and meta["cluster"] == [1, 1, 1]
    assert "BLOCK" not in [p["name"] for p in meta["params"]]


def test_metadata_lists_the_parameters_in_the_kernels_order():
    """The ABI is the kernel's parameter order, whatever the signature's: the metadata (what
    a launch checks its arguments against) lists the parameters in it."""
    spec = situ_spec("bf16", True)
    reordered = dict(reversed(list(spec.signature.items())))
    meta = spec.kernel.compile(reordered, spec.constexprs, spec.divisibility,
                               num_warps=spec.num_warps, upto="tile").meta
    assert [p["name"] for p in meta["params"]] == list(spec.signature)
    assert meta["specialization"] == compile_spec(spec, upto="tile").meta["specialization"]


# ---------------------------------------------------------------------------
# Language features
# ---------------------------------------------------------------------------


@kiln.jit
def _scale(x, factor: kl.constexpr):
    return x * factor


@kiln.jit
def _two_d(x_ptr, out_ptr, stride, M: kl.constexpr, N: kl.constexpr, USE_HELPER: kl.constexpr):
    rows = kl.arange(0, M)
    cols = kl.arange(0, N)
    offs = rows[:, None] * stride + cols[None, :]
    x = kl.load(x_ptr + offs, mask=cols[None, :] < stride, other=0)
    if USE_HELPER:
        y = _scale(x, 2)
    else:
        y = x + 1
    y = kl.where(y > 0, y, -y)
    kl.store(out_ptr + offs, kl.maximum(y, 0.5).to(kl.float16))


def test_broadcasting_inlining_constexpr_if():
    ck = _two_d.compile({"x_ptr": "*f32", "out_ptr": "*f16", "stride": "i32"},
                        {"M": 16, "N": 64, "USE_HELPER": True}, upto="tile")
    ir = ck.tile_ir
    assert "tile.expand_dims" in ir and "tile.broadcast" in ir
    assert "tensor<16x64x!tile.ptr<f32>>" in ir
    assert "arith.select" in ir and "arith.maxnumf" in ir
    assert "arith.truncf" in ir and "tensor<16x64xf16>" in ir
    assert "arith.addf" not in ir  # USE_HELPER: the `else` branch is not emitted
    ir2 = _two_d.compile({"x_ptr": "*f32", "out_ptr": "*f16", "stride": "i32"},
                         {"M": 16, "N": 64, "USE_HELPER": False}, upto="tile").tile_ir
    assert "arith.addf" in ir2


def test_promotion_rules():
    p = Semantic.promote
    assert p(kl.bfloat16, kl.float32) == kl.float32
    assert p(kl.float16, kl.bfloat16) == kl.float32
    assert p(kl.int32, kl.float16) == kl.float16
    assert p(kl.int8, kl.int32) == kl.int32
    assert p(kl.int32, kl.uint32) == kl.uint32
    assert p(kl.int1, kl.int16) == kl.int16
    assert p(kl.float8e4m3, kl.float8e4m3) == kl.float32


@kiln.jit
def _ops(x_ptr, i_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    m = offs < n
    x = kl.load(x_ptr + offs, mask=m, other=0.0)
    i = kl.load(i_ptr + offs, mask=m, other=0)
    y = x / 3 + i // 2 + (i % 5) + (i << 1) + (i >> 1) + (i & 7) + (i | 1) + (i ^ ~i)
    y = y + kl.exp2(x) + kl.log(x) + kl.sqrt(x) + kl.rsqrt(x) + kl.abs(x) + kl.sigmoid(x)
    y = kl.fma(y, x, 1.0) + kl.minimum(x, y) + kl.where(m, x, 0.0) - (-x)
    z = kl.zeros((BLOCK,), kl.float32) + kl.full((BLOCK,), 2, kl.float32)
    kl.store(out_ptr + offs, y + z + kl.cdiv(n, BLOCK) + kl.num_programs(0), mask=m)


def test_many_ops_verify():
    ir = _ops.compile({"x_ptr": "*bf16", "i_ptr": "*i32", "out_ptr": "*f32", "n": "i32"},
                      {"BLOCK": 128}, upto="tile").tile_ir
    for op in ("arith.divsi", "arith.remsi", "arith.shli", "arith.shrsi", "arith.andi",
               "arith.ori", "arith.xori", "math.exp2", "math.log", "math.sqrt", "math.rsqrt",
               "math.absf", "math.fma", "arith.sitofp", "tile.num_programs"):
        assert op in ir, op


# ---------------------------------------------------------------------------
# User errors -> CompilationError at file:line
# ---------------------------------------------------------------------------


@kiln.jit
def _err_while(x_ptr):
    while True:  # ERR-while
        pass


@kiln.jit
def _err_lambda(x_ptr):
    f = lambda v: v  # ERR-lambda  # noqa: E731
    kl.store(x_ptr, f(1))


@kiln.jit
def _err_try(x_ptr):
    try:  # ERR-try
        pass
    finally:
        pass


@kiln.jit
def _err_undefined(x_ptr):
    kl.store(x_ptr, undefined_thing)  # ERR-undefined  # noqa: F821


@kiln.jit
def _err_runtime_arange(x_ptr, n):
    r = kl.arange(0, n)  # ERR-arange-runtime
    kl.store(x_ptr + r, 1.0)


@kiln.jit
def _err_pow2(x_ptr):
    r = kl.arange(0, 100)  # ERR-pow2
    kl.store(x_ptr + r, 1.0)


@kiln.jit
def _err_broadcast(x_ptr):
    a = kl.arange(0, 16)
    b = kl.arange(0, 32)
    kl.store(x_ptr + a, (a + b).to(kl.float32))  # ERR-broadcast


@kiln.jit
def _err_type(x_ptr):
    v = kl.load(x_ptr)
    kl.store(x_ptr, v & 1)  # ERR-type


@kiln.jit
def _err_runtime_if(x_ptr, n):
    if kl.arange(0, 16) > n:  # ERR-if
        kl.store(x_ptr, 1.0)


@kiln.jit
def _err_bad_mask(x_ptr):
    r = kl.arange(0, 16)
    kl.store(x_ptr + r, 1.0, mask=r)  # ERR-mask


@kiln.jit
def _callee_bad(p):
    return kl.load(p) ^ 1.5  # ERR-callee


@kiln.jit
def _err_in_callee(x_ptr):
    kl.store(x_ptr, _callee_bad(x_ptr))  # ERR-caller


@pytest.mark.parametrize("kernel,marker,signature,message", [
    (_err_while, "ERR-while", {"x_ptr": "*f32"}, "`while` loops are not supported"),
    (_err_lambda, "ERR-lambda", {"x_ptr": "*f32"}, "lambda is not supported"),
    (_err_try, "ERR-try", {"x_ptr": "*f32"}, "`try` is not supported"),
    (_err_undefined, "ERR-undefined", {"x_ptr": "*f32"}, "name 'undefined_thing' is not defined"),
    (_err_runtime_arange, "ERR-arange-runtime", {"x_ptr": "*f32", "n": "i32"},
     "must be a constexpr"),
    (_err_pow2, "ERR-pow2", {"x_ptr": "*f32"}, "power of two"),
    (_err_broadcast, "ERR-broadcast", {"x_ptr": "*f32"}, "incompatible shapes"),
    (_err_type, "ERR-type", {"x_ptr": "*f32"}, "needs integer operands"),
    (_err_runtime_if, "ERR-if", {"x_ptr": "*f32", "n": "i32"}, "must be a scalar"),
    (_err_bad_mask, "ERR-mask", {"x_ptr": "*f32"}, "mask must be a boolean"),
])
def test_errors_point_at_the_source(kernel, marker, signature, message):
    with pytest.raises(CompilationError) as info:
        kernel.compile(signature, upto="tile")
    e = info.value
    assert e.filename == HERE
    assert e.lineno == source_line(HERE, marker), str(e)
    assert message in e.message, str(e)
    assert f"# {marker}" in str(e)  # the offending line is shown
    assert f"{HERE}:{e.lineno}:" in str(e)


def test_error_in_inlined_callee_names_the_call_site():
    with pytest.raises(CompilationError) as info:
        _err_in_callee.compile({"x_ptr": "*f32"}, upto="tile")
    e = info.value
    assert e.lineno == source_line(HERE, "ERR-callee")
    assert f"{HERE}:{source_line(HERE, 'ERR-caller')}:" in str(e) and "called from here" in str(e)


def test_missing_constexpr_and_bad_signature():
    with pytest.raises(CompilationError, match="constexpr parameter 'M' has no value"):
        _two_d.compile({"x_ptr": "*f32", "out_ptr": "*f16", "stride": "i32"},
                       {"N": 64, "USE_HELPER": 1}, upto="tile")
    with pytest.raises(CompilationError, match="missing from the signature"):
        _two_d.compile({"x_ptr": "*f32"}, {"M": 16, "N": 64, "USE_HELPER": 1}, upto="tile")
    with pytest.raises(ValueError, match="unknown dtype"):
        _two_d.compile({"x_ptr": "*f33", "out_ptr": "*f16", "stride": "i32"}, upto="tile")


# ---------------------------------------------------------------------------
# Launch-time checks before any CUDA call
# ---------------------------------------------------------------------------


class FakeCudaArray:
    """Just enough of a CUDA array: __cuda_array_interface__, shape, stride(), dtype."""

    def __init__(self, shape, dtype="bfloat16", address=0x7F0000000000, strides=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._strides = strides or tuple(
            int(__import__("math").prod(self.shape[i + 1:])) for i in range(len(self.shape)))
        typestr = {"bfloat16": "<V2", "float32": "<f4", "float16": "<f2", "int32": "<i4"}[dtype]
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr,
                                         "shape": self.shape, "version": 3}

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def data_ptr(self):
        return self.__cuda_array_interface__["data"][0]


@pytest.fixture
def no_cuda(monkeypatch):
    """Fails the test if anything asks the device for its arch (the first CUDA call)."""
    runtime = pytest.importorskip("kiln.runtime")

    def boom(*a, **k):
        raise AssertionError("a CUDA call happened before the argument checks finished")

    monkeypatch.setattr(runtime, "device_arch", boom)
    return runtime


@kiln.jit
def _copy(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(y_ptr + offs, kl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_launch_checks_before_cuda(no_cuda):
    x = FakeCudaArray((64,), "float32")
    y = FakeCudaArray((64,), "float32")
    with pytest.raises(TypeError, match="missing a required argument"):
        _copy[(1,)](x, y, BLOCK=64)
    with pytest.raises(TypeError, match="expected a tensor"):
        _copy[(1,)](x, "y", 64, BLOCK=64)
    with pytest.raises(TypeError, match="constexpr"):
        _copy[(1,)](x, y, 64, BLOCK=x)
    with pytest.raises(TypeError, match="grid"):
        _copy[("a",)](x, y, 64, BLOCK=64)
    with pytest.raises(ValueError, match="out of range"):
        _copy[(-1,)](x, y, 64, BLOCK=64)
    with pytest.raises(TypeError, match="launched with"):
        _copy(x, y, 64, BLOCK=64)
    # An empty grid launches nothing (and so needs no device).
    _copy[lambda meta: (0,)](x, y, 64, BLOCK=64)


def test_specialization():
    x = FakeCudaArray((64,), "bfloat16", address=0x1000)
    y = FakeCudaArray((64,), "float32", address=0x1004)
    spec, runtime_args, _ = _copy.specialize((x, y, 32), {"BLOCK": 64})
    assert dict(spec.signature) == {"x_ptr": "*bf16", "y_ptr": "*f32", "n": "i32"}
    assert dict(spec.divisibility) == {"x_ptr": 16, "y_ptr": 1, "n": 16}
    assert dict(spec.constexprs) == {"BLOCK": 64}
    spec2, _, _ = _copy.specialize((x, y, 2**40), {"BLOCK": 64})
    assert dict(spec2.signature)["n"] == "i64"
    dns = kiln.jit(do_not_specialize=["n"])(_copy.fn)
    spec3, _, _ = dns.specialize((x, y, 32), {"BLOCK": 64})
    assert dict(spec3.divisibility)["n"] == 1


def test_situ_wrapper_checks_before_launch(no_cuda):
    from kernels_dsl.kimi_k3.situ import situ_and_mul

    out = FakeCudaArray((4, 64), "bfloat16")
    with pytest.raises(TypeError, match="bfloat16 or float32"):
        situ_and_mul(FakeCudaArray((4, 128), "float16"), out)
    with pytest.raises(ValueError, match="even"):
        situ_and_mul(FakeCudaArray((4, 129), "bfloat16"), out)
    with pytest.raises(ValueError, match="divisible by 8"):
        situ_and_mul(FakeCudaArray((4, 12), "bfloat16"), FakeCudaArray((4, 6)))
    with pytest.raises(ValueError, match="stride"):
        situ_and_mul(FakeCudaArray((4, 128), "bfloat16", strides=(128, 2)), out)
    with pytest.raises(ValueError, match="row stride"):
        situ_and_mul(FakeCudaArray((4, 128), "bfloat16", strides=(130, 1)), out)
    with pytest.raises(TypeError, match="out must be bfloat16"):
        situ_and_mul(FakeCudaArray((4, 128), "bfloat16"), FakeCudaArray((4, 64), "float32"))
    with pytest.raises(ValueError, match="shape"):
        situ_and_mul(FakeCudaArray((4, 128), "bfloat16"), FakeCudaArray((4, 32)))
    with pytest.raises(ValueError, match="32-bit"):
        situ_and_mul(FakeCudaArray((2**20, 4096), "bfloat16"), FakeCudaArray((2**20, 2048)))
    empty_out = FakeCudaArray((0, 64))
    assert situ_and_mul(FakeCudaArray((0, 128), "bfloat16"), empty_out) is empty_out


# ---------------------------------------------------------------------------
# PTX and cubins per arch (needs the lowering, ptxas/nvJitLink)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_situ_ptx_and_cubin(arch):
    ck = compile_spec(situ_spec("bf16", True), arch=arch)
    assert f".target {arch}" in ck.ptx
    assert ".visible .entry situ_and_mul(" in ck.ptx
    assert "ld.global.v4" in ck.ptx  # 16-byte vector loads
    assert ck.cubin[:4] == b"\x7fELF"
    assert ck.cubin_tool in ("nvJitLink", "ptxas")
    assert "define" in ck.llvm_ir and "llvm.func" in ck.llvm_dialect


def test_dump_ir(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_DUMP_IR", str(tmp_path))
    compile_spec(situ_spec("f32", False), arch="sm_90a")
    names = sorted(os.listdir(tmp_path))
    for ext in (".tile.mlir", ".llvm.mlir", ".ll", ".ptx"):
        assert any(n.endswith(ext) for n in names), names


def test_disk_cache_roundtrip(tmp_path, monkeypatch):
    from kiln import cache

    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    ck = compile_spec(situ_spec("f32", False), arch="sm_90a", cache=True)
    c = cache.Cache.default()
    key = situ_spec("f32", False).kernel.cache_key(ck.spec, "sm_90a", "situ_and_mul")
    assert c.load(key).cubin == ck.cubin
    with open(c.entry_path(key), "r+b") as f:
        f.truncate(100)
    assert c.load(key) is None  # a torn entry is recompiled
    again = compile_spec(situ_spec("f32", False), arch="sm_90a", cache=True)
    assert again.cubin == ck.cubin and again.cubin_tool != "cache"


# ---------------------------------------------------------------------------
# AOT
# ---------------------------------------------------------------------------


def test_aot_cli_builds_a_bundle(tmp_path):
    pytest.importorskip("kiln._runtime")
    out = tmp_path / "kimi_k3.kbundle"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(kiln.__file__)), REPO]))
    r = subprocess.run([sys.executable, "-m", "kiln.aot", "kernels_dsl.kimi_k3", "--arch",
                        "sm_90a,sm_100a", "-o", str(out)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr + r.stdout
    specs = kiln.aot.collect("kernels_dsl.kimi_k3")
    n_specs = len(specs)
    n_images = sum(len(s.archs_in(("sm_90a", "sm_100a"))) for s in specs)  # Spec.archs
    assert n_images < 2 * n_specs  # mla_attention_tma: one width an arch
    assert f"[{n_images}/{n_images}]" in r.stdout and "sm_100a:" in r.stdout
    assert "total compile time" in r.stdout
    from kiln.runtime import Bundle

    b = Bundle(str(out))
    kernels = b.kernels()
    assert len(kernels) == n_specs
    assert len([k for k in kernels if k["name"] == "situ_and_mul"]) == 4
    k = b.kernel("situ_and_mul", BLOCK=2048, HAS_LINEAR_BETA=False)
    assert sorted(k.archs) == ["sm_100a", "sm_90a"]
    data1 = out.read_bytes()
    r2 = subprocess.run([sys.executable, "-m", "kiln.aot", "kernels_dsl.kimi_k3", "--arch",
                         "sm_100a,sm_90a", "-o", str(tmp_path / "again.kbundle")], cwd=REPO,
                        env=env, capture_output=True, text=True, timeout=900)
    assert r2.returncode == 0, r2.stderr
    assert (tmp_path / "again.kbundle").read_bytes() == data1  # deterministic


def test_import_without_compiler_or_torch():
    code = ("import sys; sys.modules['kiln._C'] = None; sys.modules['torch'] = None\n"
            "import kiln, kiln.language as kl\n"
            "assert not kiln.compiler.compiler_available()\n"
            "@kiln.jit\n"
            "def k(x, B: kl.constexpr):\n"
            "    pass\n"
            "print('ok', kl.bfloat16, kiln.CompilationError.__name__)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(kiln.__file__)), REPO]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok")


# ---------------------------------------------------------------------------
# A tile too large for a thread
# ---------------------------------------------------------------------------

@kiln.jit
def copy_rows(src, dst, ROWS: kl.constexpr, COLS: kl.constexpr):
    offs = (kl.program_id(0) * ROWS + kl.arange(0, ROWS))[:, None] * COLS + \
        kl.arange(0, COLS)[None, :]
    x = kl.load(src + offs)  # E-tile-too-large
    kl.store(dst + offs, x)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_tile_too_large_for_a_thread_is_a_compilation_error_at_its_line(arch):
    # [64, 4096] bf16 on 4 warps: 2048 elements a thread. Refused before the lowering, which
    # would otherwise take minutes (one value an element); [8, 4096] (256) compiles.
    sig = {"src": "*bf16", "dst": "*bf16"}
    with pytest.raises(CompilationError, match=r"makes a tile of 2048 elements a thread \(.* on "
                       r"128 threads\), more than the 1024 a tile may hold") as e:
        copy_rows.compile(sig, {"ROWS": 64, "COLS": 4096}, [], num_warps=4, arch=arch,
                          upto="ptx")
    assert e.value.lineno == source_line(HERE, "E-tile-too-large")
    ck = copy_rows.compile(sig, {"ROWS": 8, "COLS": 4096}, [], num_warps=4, arch=arch,
                           upto="ptx")
    assert ".entry copy_rows" in ck.ptx
