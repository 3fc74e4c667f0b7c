"""KILN_DEBUG_WAITS: the debug bound on mbarrier waits reaches the lowering from the
environment (the PTX of a bulk load gets the counted try_wait loop, vprintf and trap), is
part of the cache key (a bounded build never serves an unbounded one), and a value that is
not a number of tries is an error naming the variable."""

import pytest

import kiln
import kiln.language as kl
from kiln.compiler import compiler_available
from kiln.compiler.compiler import Specialization, wait_bound

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


@kiln.jit
def _bulk_copy(x_ptr, y_ptr, BLOCK: kl.constexpr):
    t = kl.bulk_load(x_ptr, BLOCK)
    kl.store(y_ptr + kl.arange(0, BLOCK), t)


SIG = {"x_ptr": "*f32", "y_ptr": "*f32"}


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_the_bound_reaches_the_wait(monkeypatch, arch):
    plain = _bulk_copy.compile(SIG, {"BLOCK": 256}, divisibility=["x_ptr"], arch=arch,
                               upto="ptx").ptx
    monkeypatch.setenv("KILN_DEBUG_WAITS", "5000")
    bounded = _bulk_copy.compile(SIG, {"BLOCK": 256}, divisibility=["x_ptr"], arch=arch,
                                 upto="ptx").ptx
    assert "vprintf" not in plain and "trap;" not in plain
    assert "call.uni (retval0), vprintf" in bounded and "trap;" in bounded
    assert "5000;" in bounded  # the compare against the bound
    assert "kiln: kernel '_bulk_copy'" in bytes(
        int(b) for b in bounded.split("__kiln_hang_")[1].split("{")[1].split("}")[0].split(",")
    ).decode()


@needs_compiler
def test_the_bound_is_part_of_the_cache_key(monkeypatch):
    spec = Specialization.make(SIG, ["x_ptr"], {"BLOCK": 256})
    plain = _bulk_copy.cache_key(spec, "sm_90a")
    monkeypatch.setenv("KILN_DEBUG_WAITS", "5000")
    assert _bulk_copy.cache_key(spec, "sm_90a") != plain


@needs_compiler
def test_split_n_is_part_of_the_cache_key(monkeypatch):
    """KILN_SPLIT_N, set either way, keys its own builds (the default's key is unset's)."""
    spec = Specialization.make(SIG, ["x_ptr"], {"BLOCK": 256})
    keys = {_bulk_copy.cache_key(spec, "sm_90a")}
    for text in ("0", "1"):
        monkeypatch.setenv("KILN_SPLIT_N", text)
        keys.add(_bulk_copy.cache_key(spec, "sm_90a"))
    assert len(keys) == 3


@pytest.mark.parametrize("text,ok", [("", 0), ("0", 0), ("123", 123), ("many", None),
                                     ("-1", None), (str(2**31), None)])
def test_the_variable_is_a_number_of_tries(monkeypatch, text, ok):
    monkeypatch.setenv("KILN_DEBUG_WAITS", text)
    if ok is None:
        with pytest.raises(ValueError, match="KILN_DEBUG_WAITS must be"):
            wait_bound()
    else:
        assert wait_bound() == ok
