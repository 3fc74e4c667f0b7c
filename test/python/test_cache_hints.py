"""Cache hints on the CPU: kl.load / kl.store ``cache_modifier`` and ``eviction_policy``
(Triton's spellings). The interpreter accepts and ignores them (values as without
hints); the front end rejects bad strings and hints on ordered accesses, the same way
compiled and interpreted; compiled, they reach the tile IR and the PTX (one predicated
inline ld/st per vector access, an L2 policy for evict_first/evict_last)."""

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.compiler.compiler import compiler_available
from kiln.testing import interpret

ARCHS = ("sm_90a", "sm_100a", "sm_103a")
needs_compiler = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")


@kiln.jit
def hinted_copy(x_ptr, y_ptr, n, LOAD_CACHE: kl.constexpr, LOAD_EVICT: kl.constexpr,
                STORE_CACHE: kl.constexpr, STORE_EVICT: kl.constexpr, MASKED: kl.constexpr,
                BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    if MASKED:
        m = offs < n
        x = kl.load(x_ptr + offs, mask=m, other=7, cache_modifier=LOAD_CACHE,
                    eviction_policy=LOAD_EVICT)
        kl.store(y_ptr + offs, x + 1, mask=m, cache_modifier=STORE_CACHE,
                 eviction_policy=STORE_EVICT)
    else:
        x = kl.load(x_ptr + offs, cache_modifier=LOAD_CACHE, eviction_policy=LOAD_EVICT)
        kl.store(y_ptr + offs, x + 1, cache_modifier=STORE_CACHE, eviction_policy=STORE_EVICT)


@kiln.jit
def hinted_other(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    """Masked-off lanes of a hinted load still give ``other``."""
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs, mask=offs < n, other=-3.0, eviction_policy="evict_first")
    kl.store(y_ptr + offs, x, cache_modifier=".cs")


@kiln.jit
def bad_load(x_ptr, CACHE: kl.constexpr, EVICT: kl.constexpr, SEM: kl.constexpr,
             SCOPE: kl.constexpr):
    kl.load(x_ptr, cache_modifier=CACHE, eviction_policy=EVICT, sem=SEM, scope=SCOPE)


@kiln.jit
def bad_store(x_ptr, CACHE: kl.constexpr, EVICT: kl.constexpr, SEM: kl.constexpr,
              SCOPE: kl.constexpr):
    kl.store(x_ptr, 1, cache_modifier=CACHE, eviction_policy=EVICT, sem=SEM, scope=SCOPE)


def _bad(cache, evict, sem):
    return {"CACHE": cache, "EVICT": evict, "SEM": sem, "SCOPE": None if sem is None else "gpu"}


HINTS = [
    ("", "", "", ""),
    (".ca", "evict_first", ".wb", "evict_first"),
    (".cg", "evict_last", ".cg", "evict_last"),
    (".cv", "evict_normal", ".cs", "evict_normal"),
    ("", "evict_first", ".wt", ""),
    (".cg", "", "", "evict_last"),
]


# ---------------------------------------------------------------------------
# The interpreter: hints change no value
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8,
                                   np.int32, np.int64, np.float64])
@pytest.mark.parametrize("hints", HINTS, ids=lambda h: "-".join(s or "none" for s in h))
@pytest.mark.parametrize("masked", [False, True])
def test_interpreter_ignores_hints(dtype, hints, masked):
    rng = np.random.default_rng(0)
    block, n = 64, 100 if masked else 128
    x = rng.integers(-50, 50, 128).astype(dtype)
    y = np.full(128, 99, dtype)
    interpret(hinted_copy, (2,), x, y, n, MASKED=masked, BLOCK=block,
              **dict(zip(("LOAD_CACHE", "LOAD_EVICT", "STORE_CACHE", "STORE_EVICT"), hints)))
    expect = (x.astype(np.float64) + 1).astype(dtype)
    np.testing.assert_array_equal(y[:n], expect[:n])
    np.testing.assert_array_equal(y[n:], np.full(128 - n, 99, dtype))


def test_interpreter_hinted_masked_load_gives_other():
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    interpret(hinted_other, (1,), x, y, 20, BLOCK=32)
    np.testing.assert_array_equal(y, np.where(np.arange(32) < 20, x, -3.0))


# ---------------------------------------------------------------------------
# Front-end errors (the same compiled and interpreted)
# ---------------------------------------------------------------------------


BAD_LOADS = [
    (".wb", "", None, r"load: cache_modifier must be one of '', '\.ca', '\.cg', '\.cv', "
                      r"got '\.wb'"),
    (".cs", "", None, r"cache_modifier must be one of .* got '\.cs'"),
    ("cg", "", None, r"cache_modifier must be one of .* got 'cg'"),
    ("", "evict_sometimes", None, r"load: eviction_policy must be one of '', 'evict_normal', "
                                  r"'evict_first', 'evict_last', got 'evict_sometimes'"),
    ("", 3, None, r"eviction_policy must be one of .* got 3"),
    (".cg", "", "acquire", r"load: cache_modifier='\.cg' cannot be combined with "
                           r"sem='acquire'"),
    ("", "evict_last", "relaxed", r"load: eviction_policy='evict_last' cannot be combined "
                                  r"with sem='relaxed'"),
]
BAD_STORES = [
    (".ca", "", None, r"store: cache_modifier must be one of '', '\.wb', '\.cg', '\.cs', "
                      r"'\.wt', got '\.ca'"),
    (".cv", "", None, r"store: cache_modifier must be one of .* got '\.cv'"),
    ("", "evict", None, r"store: eviction_policy must be one of .* got 'evict'"),
    (".wt", "", "release", r"store: cache_modifier='\.wt' cannot be combined with "
                           r"sem='release'"),
    ("", "evict_first", "relaxed", r"store: eviction_policy='evict_first' cannot be "
                                   r"combined with sem='relaxed'"),
]


@pytest.mark.parametrize("cache,evict,sem,message", BAD_LOADS)
def test_bad_load_hints_interpreter(cache, evict, sem, message):
    with pytest.raises(CompilationError, match=message):
        interpret(bad_load, (1,), np.zeros(1, np.int32), **_bad(cache, evict, sem))


@pytest.mark.parametrize("cache,evict,sem,message", BAD_STORES)
def test_bad_store_hints_interpreter(cache, evict, sem, message):
    with pytest.raises(CompilationError, match=message):
        interpret(bad_store, (1,), np.zeros(1, np.int32), **_bad(cache, evict, sem))


@needs_compiler
@pytest.mark.parametrize("cache,evict,sem,message", BAD_LOADS)
def test_bad_load_hints_compiled(cache, evict, sem, message):
    with pytest.raises(CompilationError, match=message):
        bad_load.compile({"x_ptr": "*i32"}, _bad(cache, evict, sem), upto="tile")


@needs_compiler
@pytest.mark.parametrize("cache,evict,sem,message", BAD_STORES)
def test_bad_store_hints_compiled(cache, evict, sem, message):
    with pytest.raises(CompilationError, match=message):
        bad_store.compile({"x_ptr": "*i32"}, _bad(cache, evict, sem), upto="tile")


# ---------------------------------------------------------------------------
# Compiled: tile IR and PTX
# ---------------------------------------------------------------------------


def _compile(hints, masked=True, arch=None, upto="ptx", dtype="f32"):
    sig = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "n": "i32"}
    consts = dict(zip(("LOAD_CACHE", "LOAD_EVICT", "STORE_CACHE", "STORE_EVICT"), hints),
                  MASKED=masked, BLOCK=512)
    return hinted_copy.compile(sig, consts, divisibility=["x_ptr", "y_ptr", "n"], arch=arch,
                               upto=upto)


@needs_compiler
def test_tile_ir_carries_the_hints():
    ir = _compile((".cg", "evict_first", ".cs", "evict_last"), upto="tile").tile_ir
    assert "cache cg evict evict_first" in ir
    assert "cache cs evict evict_last" in ir
    ir = _compile(("", "evict_normal", ".wt", ""), upto="tile").tile_ir
    assert "tile.load" in ir and " evict evict_normal" in ir and "cache wt" in ir
    plain = _compile(("", "", "", ""), upto="tile").tile_ir
    assert " cache " not in plain and " evict " not in plain


@needs_compiler
@pytest.mark.parametrize("arch", ARCHS)
def test_ptx_masked_hinted_copy(arch):
    ptx = _compile(("", "evict_first", ".cs", "evict_first"), arch=arch).ptx
    assert ptx.count("createpolicy.fractional.L2::evict_first.b64") == 1
    assert "@%p ld.global.L1::evict_first.L2::cache_hint.v4.b32" in ptx
    assert "@%p st.global.cs.L2::cache_hint.v4.b32" in ptx
    assert "setp.ne.b32 %p," in ptx
    assert "bra" not in ptx  # the masks are predicates, not branches


@needs_compiler
@pytest.mark.parametrize("hints,load,store", [
    ((".cg", "", ".wt", ""), "ld.global.cg.v4.b32", "st.global.wt.v4.b32"),
    ((".cv", "evict_last", ".cg", "evict_first"), "ld.global.cv.L2::cache_hint.v4.b32",
     "st.global.cg.L2::cache_hint.v4.b32"),
    (("", "evict_normal", "", "evict_last"), "ld.global.L1::evict_normal.v4.b32",
     "st.global.L1::evict_last.L2::cache_hint.v4.b32"),
])
def test_ptx_qualifiers(hints, load, store):
    ptx = _compile(hints, masked=False, arch="sm_90a").ptx
    assert load in ptx and store in ptx
    assert "@%p " not in ptx and "setp.ne.b32 %p," not in ptx  # unmasked: no predicate


@needs_compiler
@pytest.mark.parametrize("dtype,width", [("f16", "v4.b32"), ("bf16", "v4.b32"),
                                         ("i8", "v4.b32"), ("f64", "v4.b32"),
                                         ("i64", "v4.b32")])
def test_ptx_vectorized_hinted_accesses(dtype, width):
    ptx = _compile((".cg", "", ".cs", ""), arch="sm_90a", dtype=dtype).ptx
    assert f"@%p ld.global.cg.{width}" in ptx and f"@%p st.global.cs.{width}" in ptx


@needs_compiler
def test_unhinted_accesses_are_unchanged():
    ptx = _compile(("", "", "", ""), arch="sm_90a").ptx
    assert "createpolicy" not in ptx and "cache_hint" not in ptx
    assert "@%p " not in ptx and "@%p1 bra" in ptx  # the masked access is a branch
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
