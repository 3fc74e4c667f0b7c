"""Atomics on the CPU: the PTX each kind/type/ordering/scope becomes (the ordering and the
scope must survive: LLVM's NVPTX backend would drop them from atomicrmw), the scalar form,
the interpreter's results, and the errors."""

import os
import re
import sys

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.compiler.compiler import compiler_available
from kiln.testing import interpret

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
from atomic_kernels import last_arriver_sum  # noqa: E402

pytestmark = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


@kiln.jit
def _rmw(p_ptr, v_ptr, out_ptr, n, OP: kl.constexpr, SEM: kl.constexpr,
         SCOPE: kl.constexpr, BLOCK: kl.constexpr):
    o = kl.arange(0, BLOCK)
    m = o < n
    v = kl.load(v_ptr + o, mask=m)
    if OP == "add":
        old = kl.atomic_add(p_ptr + o, v, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "max":
        old = kl.atomic_max(p_ptr + o, v, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "min":
        old = kl.atomic_min(p_ptr + o, v, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "and":
        old = kl.atomic_and(p_ptr + o, v, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "or":
        old = kl.atomic_or(p_ptr + o, v, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "xor":
        old = kl.atomic_xor(p_ptr + o, v, mask=m, sem=SEM, scope=SCOPE)
    else:
        old = kl.atomic_xchg(p_ptr + o, v, mask=m, sem=SEM, scope=SCOPE)
    kl.store(out_ptr + o, old, mask=m)


@kiln.jit
def _cas_counter(flag_ptr, winners_ptr):
    old = kl.atomic_cas(flag_ptr, 0, 1, sem="acq_rel", scope="sys")
    if old == 0:
        kl.atomic_add(winners_ptr, 1, sem="relaxed")


def _ptx(op, ty, sem="acq_rel", scope="gpu", arch="sm_90a"):
    sig = {"p_ptr": f"*{ty}", "v_ptr": f"*{ty}", "out_ptr": f"*{ty}", "n": "i32"}
    return _rmw.compile(sig, {"OP": op, "SEM": sem, "SCOPE": scope, "BLOCK": 128},
                        divisibility=["p_ptr", "v_ptr", "out_ptr"], arch=arch).ptx


@pytest.mark.parametrize("op,ty,ptx_op", [
    ("add", "i32", "add.u32"), ("add", "i64", "add.u64"), ("add", "f32", "add.f32"),
    ("add", "bf16", "add.noftz.bf16"), ("add", "f16", "add.noftz.f16"),
    ("add", "f64", "add.f64"), ("max", "i32", "max.s32"), ("max", "u32", "max.u32"),
    ("min", "i64", "min.s64"), ("min", "u64", "min.u64"), ("and", "i32", "and.b32"),
    ("or", "i64", "or.b64"), ("xor", "u32", "xor.b32"), ("xchg", "i32", "exch.b32"),
    ("xchg", "f32", "exch.b32"),
])
def test_kind_and_type(op, ty, ptx_op):
    assert f"atom.acq_rel.gpu.global.{ptx_op}" in _ptx(op, ty)


@pytest.mark.parametrize("sem", ["relaxed", "acquire", "release", "acq_rel"])
@pytest.mark.parametrize("scope", ["cta", "gpu", "sys"])
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_ordering_and_scope_survive(sem, scope, arch):
    assert f"atom.{sem}.{scope}.global.add.u32" in _ptx("add", "i32", sem, scope, arch)


def test_scalar_cas_runs_once_and_shares_its_result():
    ck = _cas_counter.compile({"flag_ptr": "*i32", "winners_ptr": "*i32"}, arch="sm_90a")
    assert "atom.acq_rel.sys.global.cas.b32" in ck.ptx
    assert "atom.relaxed.gpu.global.add.u32" in ck.ptx
    assert "st.shared" in ck.ptx and "bar.sync" in ck.ptx  # thread 0's old value shared


def test_interpreter_applies_each_element_once():
    rng = np.random.default_rng(1)
    n = 100
    p = rng.integers(-50, 50, 128).astype(np.int32)
    v = rng.integers(-50, 50, 128).astype(np.int32)
    for op, fn in [("add", np.add), ("max", np.maximum), ("min", np.minimum),
                   ("xor", np.bitwise_xor), ("xchg", lambda a, b: b)]:
        buf, out = p.copy(), np.zeros(128, np.int32)
        interpret(_rmw, (1,), buf, v, out, n, OP=op, SEM="acq_rel", SCOPE="gpu", BLOCK=128)
        assert np.array_equal(out[:n], p[:n]) and np.array_equal(buf[:n], fn(p[:n], v[:n]))
        assert np.array_equal(buf[n:], p[n:])  # masked off: untouched


def test_interpreter_cas_has_one_winner():
    flag, winners = np.zeros(1, np.int32), np.zeros(1, np.int32)
    interpret(_cas_counter, (37,), flag, winners)
    assert flag[0] == 1 and winners[0] == 1


@pytest.mark.parametrize("sem,scope,message", [
    ("seq_cst", "gpu", "sem must be one of"), ("acq_rel", "device", "scope must be one of")])
def test_bad_sem_or_scope(sem, scope, message):
    sig = {"p_ptr": "*i32", "v_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}
    with pytest.raises(CompilationError, match=message):
        _rmw.compile(sig, {"OP": "add", "SEM": sem, "SCOPE": scope, "BLOCK": 128}, upto="tile")


def test_float_max_is_an_error():
    sig = {"p_ptr": "*f32", "v_ptr": "*f32", "out_ptr": "*f32", "n": "i32"}
    with pytest.raises(CompilationError, match="not supported on fp32|not supported on f"):
        _rmw.compile(sig, {"OP": "max", "SEM": "acq_rel", "SCOPE": "gpu", "BLOCK": 128},
                     upto="tile")


def test_barrier_publishes_before_the_scalar_atomic():
    """kl.barrier() is ``bar.sync 0``: in the last-arriver kernel (test/gpu/test_atomics.py)
    every thread's stores, then its gpu-scope fence, then the barrier come before the one
    thread's atomic; in the interpreter (programs whole, one at a time) the last program sums
    every partial and resets the counter."""
    ck = last_arriver_sum.compile({"x_ptr": "*i32", "part_ptr": "*i32", "count_ptr": "*i32",
                                   "out_ptr": "*i32"}, {"BLOCK": 1024}, num_warps=8,
                                  arch="sm_90a")
    ptx = ck.ptx
    store, fence = ptx.index("st.global"), ptx.index("fence.acq_rel.gpu")
    bar, atom = re.search(r"bar\.sync\s+0;", ptx).start(), ptx.index("atom.acq_rel.gpu")
    assert store < fence < bar < atom
    x = np.arange(7 * 1024, dtype=np.int32).reshape(7, 1024) - 3000
    part, count, out = np.empty_like(x), np.zeros(1, np.int32), np.zeros(1024, np.int32)
    interpret(last_arriver_sum, (7,), x, part, count, out, BLOCK=1024)
    np.testing.assert_array_equal(out, x.sum(0) * 2)
    assert count[0] == 0
