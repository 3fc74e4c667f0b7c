"""Specialization like Triton's (value 1, divisibility by 16, do_not_specialize) and one
test per class of user error: unsupported construct, type mismatch, non-constexpr
shape, bad broadcast, wrong argument at launch -- each a Python exception at the
user's file:line (compile errors) or naming the argument (launch errors)."""

import os

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.testing import source_line

HERE = os.path.abspath(__file__)


class FakeCudaArray:
    def __init__(self, n, dtype="float32", address=0x7F0000000000):
        self.shape = (n,)
        self.dtype = dtype
        typestr = {"float32": "<f4", "bfloat16": "<V2", "int32": "<i4"}[dtype]
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr,
                                         "shape": self.shape, "version": 3}


@kiln.jit
def _strided(x_ptr, y_ptr, n, stride, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(y_ptr + offs * stride, kl.load(x_ptr + offs * stride, mask=offs < n), mask=offs < n)


# ---------------------------------------------------------------------------
# Specialization
# ---------------------------------------------------------------------------


def test_value_one_specialization():
    x, y = FakeCudaArray(64), FakeCudaArray(64)
    spec, runtime, _ = _strided.specialize((x, y, 64, 1), {"BLOCK": 64})
    assert spec.equal_to_1 == ("stride",)
    assert dict(spec.divisibility) == {"x_ptr": 16, "y_ptr": 16, "n": 16, "stride": 1}
    assert len(runtime) == 4  # the argument is still passed (ABI unchanged)
    assert "equal_to_1=stride" in spec.key()
    spec2, _, _ = _strided.specialize((x, y, 64, 2), {"BLOCK": 64})
    assert spec2.equal_to_1 == () and spec2.key() != spec.key()
    # Booleans and floats are not value-1 specialized.
    spec3, _, _ = kiln.jit(lambda_free_kernel.fn).specialize((x, True, 1.0), {})
    assert spec3.equal_to_1 == ()


@kiln.jit
def lambda_free_kernel(x_ptr, flag, scale):
    kl.store(x_ptr, scale)


def test_do_not_specialize_by_name_and_index():
    x, y = FakeCudaArray(64), FakeCudaArray(64, address=0x7F0000000004)
    for dns in (["stride", "n", "x_ptr"], [3, 2, 0]):
        k = kiln.jit(do_not_specialize=dns)(_strided.fn)
        spec, _, _ = k.specialize((x, y, 64, 1), {"BLOCK": 64})
        assert spec.equal_to_1 == ()
        assert dict(spec.divisibility) == {"x_ptr": 1, "y_ptr": 1, "n": 1, "stride": 1}
        # One specialization serves every value of the unspecialized arguments.
        spec2, _, _ = k.specialize((x, y, 17, 5), {"BLOCK": 64})
        assert spec2.key() == spec.key()
    with pytest.raises(ValueError, match="not a parameter"):
        kiln.jit(do_not_specialize=["nope"])(_strided.fn).specialize((x, y, 1, 1),
                                                                     {"BLOCK": 64})


def test_fast_path_key_separates_value_one():
    k = kiln.jit(_strided.fn)
    k._runtime_names = ["x_ptr", "y_ptr", "n", "stride"]
    k._dns_names = set()
    a = k._fast_key((1, 2, 64, 1), {"BLOCK": 64}, None)
    b = k._fast_key((1, 2, 64, 3), {"BLOCK": 64}, None)
    assert a != b
    k._dns_names = {"stride"}
    assert k._fast_key((1, 2, 64, 1), {"BLOCK": 64}, None) == \
        k._fast_key((1, 2, 64, 3), {"BLOCK": 64}, None)


def test_value_one_compiles_to_a_constant():
    pytest.importorskip("kiln._C")
    sig = {"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32", "stride": "i32"}
    general = _strided.compile(sig, {"BLOCK": 64}, upto="ptx", arch="sm_90a")
    one = _strided.compile(sig, {"BLOCK": 64}, equal_to_1=["stride"], upto="ptx",
                           arch="sm_90a")
    assert "arith.constant 1 : i32" in one.tile_ir
    # The multiplications by the stride fold away.
    assert one.llvm_dialect.count("llvm.mul") < general.llvm_dialect.count("llvm.mul")
    assert one.ptx.count("mul") < general.ptx.count("mul")
    assert [p["name"] for p in one.meta["params"]] == ["x_ptr", "y_ptr", "n", "stride"]
    assert "equal_to_1=stride" in one.meta["specialization"]
    with pytest.raises(ValueError, match="not an integer parameter"):
        _strided.compile(sig, {"BLOCK": 64}, equal_to_1=["x_ptr"], upto="tile")


# ---------------------------------------------------------------------------
# Errors: wrong argument at launch (raised before any CUDA call)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("args,kwargs,exc,message", [
    ((FakeCudaArray(4), FakeCudaArray(4), 4), {"BLOCK": 4}, TypeError,
     "missing a required argument: 'stride'"),
    ((FakeCudaArray(4), FakeCudaArray(4), 4, 1, 5), {"BLOCK": 4}, TypeError,
     "multiple values for argument 'BLOCK'"),
    ((FakeCudaArray(4), FakeCudaArray(4), 4, 1, 4, 5), {}, TypeError,
     "too many positional arguments"),
    ((FakeCudaArray(4), FakeCudaArray(4), 4, 1), {"BLOCK": 4, "BLOK": 2}, TypeError,
     "unexpected keyword argument 'BLOK'"),
    ((FakeCudaArray(4), [1, 2], 4, 1), {"BLOCK": 4}, TypeError,
     "argument 'y_ptr': expected a tensor"),
    ((FakeCudaArray(4), FakeCudaArray(4), 2**70, 1), {"BLOCK": 4}, ValueError,
     "argument 'n': integer 1180591620717411303424 does not fit in 64 bits"),
    ((FakeCudaArray(4), FakeCudaArray(4), 4, 1), {"BLOCK": [4]}, TypeError,
     "argument 'BLOCK' is a constexpr"),
])
def test_wrong_argument_at_launch(args, kwargs, exc, message):
    with pytest.raises(exc) as info:
        _strided.specialize(args, kwargs)
    assert message in str(info.value)
    assert "kernel '_strided'" in str(info.value)


# ---------------------------------------------------------------------------
# Errors in the kernel body: one per class, at file:line
# ---------------------------------------------------------------------------


@kiln.jit
def _e_with(x_ptr):
    with open("f"):  # E-with
        pass


@kiln.jit
def _e_listcomp(x_ptr):
    v = [i for i in (1, 2)]  # E-listcomp
    kl.store(x_ptr, v[0])


@kiln.jit
def _e_nested_def(x_ptr):
    def inner():  # E-def
        return 1
    kl.store(x_ptr, inner())


@kiln.jit
def _e_chained(x_ptr, n):
    kl.store(x_ptr, 0 < n < 4)  # E-chained


@kiln.jit
def _e_runtime_and(x_ptr, n):
    kl.store(x_ptr, (n > 1) and (n < 4))  # E-and


@kiln.jit
def _e_element_index(x_ptr):
    r = kl.arange(0, 16)
    kl.store(x_ptr, r[3])  # E-index


@kiln.jit
def _e_python_call(x_ptr):
    kl.store(x_ptr, np.sum(1))  # E-call


@kiln.jit
def _e_pointer_mul(x_ptr):
    kl.store(x_ptr * 2, 1.0)  # E-ptrmul


@kiln.jit
def _e_float_offset(x_ptr):
    kl.store(x_ptr + 1.5, 1.0)  # E-floatoff


@kiln.jit
def _e_math_int(x_ptr):
    kl.store(x_ptr, kl.exp(kl.arange(0, 16)))  # E-mathint


@kiln.jit
def _e_zeros_runtime(x_ptr, n):
    z = kl.zeros((n,), kl.float32)  # E-zeros
    kl.store(x_ptr, z)


@kiln.jit
def _e_full_not_pow2(x_ptr):
    z = kl.full((48,), 1.0, kl.float32)  # E-full
    kl.store(x_ptr, z)


@kiln.jit
def _e_store_shape(x_ptr):
    offs = kl.arange(0, 16)
    kl.store(x_ptr + offs, kl.zeros((32,), kl.float32))  # E-store-shape


@kiln.jit
def _e_where_shape(x_ptr):
    a = kl.arange(0, 16)
    kl.store(x_ptr + a, kl.where(a > 3, kl.zeros((8,), kl.float32), 1.0))  # E-where-shape


@kiln.jit
def _e_mask_shape(x_ptr):
    a = kl.arange(0, 16)
    kl.store(x_ptr + a, 1.0, mask=kl.arange(0, 8) < 4)  # E-mask-shape


@kiln.jit
def _e_expand(x_ptr):
    a = kl.arange(0, 16)
    kl.store(x_ptr + a[:, :], 1.0)  # E-expand


@kiln.jit
def _e_return(x_ptr):
    return 1  # E-return


@kiln.jit
def _e_assign_constexpr(x_ptr, B: kl.constexpr):
    B = kl.load(x_ptr)  # E-assign-constexpr
    kl.store(x_ptr, B)


@pytest.mark.parametrize("kernel,marker,message", [
    # unsupported constructs
    (_e_with, "E-with", "`with` is not supported"),
    (_e_listcomp, "E-listcomp", "list comprehensions are not supported"),
    (_e_nested_def, "E-def", "nested function definitions are not supported"),
    (_e_chained, "E-chained", "chained comparisons are not supported"),
    (_e_runtime_and, "E-and", "`and` needs constexpr operands"),
    (_e_element_index, "E-index", "indexing a tile of rank 1 needs 1 ':' entries"),
    (_e_python_call, "E-call", "cannot call"),
    (_e_return, "E-return", "must not return a value"),
    (_e_assign_constexpr, "E-assign-constexpr", "cannot assign a runtime value to constexpr"),
    # type mismatches
    (_e_pointer_mul, "E-ptrmul", "pointers support + and - with integers"),
    (_e_float_offset, "E-floatoff", "pointer offsets must be integers"),
    (_e_math_int, "E-mathint", "expects a floating-point operand"),
    # non-constexpr / invalid shapes
    (_e_zeros_runtime, "E-zeros", "constexpr"),
    (_e_full_not_pow2, "E-full", "powers of two"),
    # bad broadcasts
    (_e_store_shape, "E-store-shape", "incompatible shapes for broadcasting: [16] and [32]"),
    (_e_where_shape, "E-where-shape", "incompatible shapes"),
    (_e_mask_shape, "E-mask-shape", "incompatible shapes"),
    (_e_expand, "E-expand", "needs 1 ':' entries"),
])
def test_error_class_at_the_line(kernel, marker, message):
    pytest.importorskip("kiln._C")
    sig = {n: ("*f32" if n == "x_ptr" else "i32") for n in kernel.source.param_names
           if n not in kernel.source.constexpr_params}
    const = {n: 16 for n in kernel.source.constexpr_params}
    with pytest.raises(CompilationError) as info:
        kernel.compile(sig, const, upto="tile")
    e = info.value
    assert message in e.message, str(e)
    if marker == "E-return":  # reported at the def (the kernel as a whole)
        assert e.lineno < source_line(HERE, marker)
    else:
        assert e.lineno == source_line(HERE, marker), str(e)
        assert f"# {marker}" in str(e)
    assert e.filename == HERE and "Traceback" not in str(e)


@pytest.mark.parametrize("kernel,marker,message", [
    (_e_store_shape, "E-store-shape", "incompatible shapes"),
    (_e_zeros_runtime, "E-zeros", "constexpr"),
    (_e_listcomp, "E-listcomp", "list comprehensions are not supported"),
])
def test_interpreter_reports_the_same_errors(kernel, marker, message):
    from kiln.testing import interpret

    args = [np.zeros(64, np.float32)] + [4] * (len(kernel.source.param_names) - 1)
    with pytest.raises(CompilationError) as info:
        interpret(kernel, (1,), *args)
    assert message in info.value.message and info.value.lineno == source_line(HERE, marker)
