"""Cache hints on the GPU: kl.load / kl.store with ``cache_modifier`` and
``eviction_policy`` (predicated inline ld.global / st.global, an L2 policy for
evict_first / evict_last) against torch, on fresh random inputs.

Every dtype moves through the hinted path at every width the compiler picks: aligned
pointers and an ``n`` divisible by 16 give 16-byte vectors (v4.b32) even under the mask,
an ``n`` that is not gives one element per access under the mask, and pointers one
element off 16-byte alignment give one element per access everywhere (.b8 / .b16 / .b32
/ .b64). Masked loads must fill ``other`` where the mask is off (the destinations take
it inside the asm), masked stores must leave those elements alone, and a hinted load
feeding a plain store (and the reverse) checks the order of the elements in a vector.
Outputs are compared bit for bit.
"""

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402

BLOCK = 1024
SENTINEL = 5  # what masked-off stores must leave in place
OTHER = 1  # what masked-off loads give (True for bool)


@kiln.jit
def hinted_copy(x_ptr, out_ptr, n, LOAD_CACHE: kl.constexpr, LOAD_EVICT: kl.constexpr,
                STORE_CACHE: kl.constexpr, STORE_EVICT: kl.constexpr,
                MASK_LOAD: kl.constexpr, MASK_STORE: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    m = offs < n
    if MASK_LOAD:
        x = kl.load(x_ptr + offs, mask=m, other=1, cache_modifier=LOAD_CACHE,
                    eviction_policy=LOAD_EVICT)
    else:
        x = kl.load(x_ptr + offs, cache_modifier=LOAD_CACHE, eviction_policy=LOAD_EVICT)
    if MASK_STORE:
        kl.store(out_ptr + offs, x, mask=m, cache_modifier=STORE_CACHE,
                 eviction_policy=STORE_EVICT)
    else:
        kl.store(out_ptr + offs, x, cache_modifier=STORE_CACHE, eviction_policy=STORE_EVICT)


@kiln.jit
def hinted_axpy(x_ptr, y_ptr, out_ptr, n, a, BLOCK: kl.constexpr):
    """Streaming a*x + y with the hints a streaming kernel uses; y plain, so the
    hinted x must line up element for element with it."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    m = offs < n
    x = kl.load(x_ptr + offs, mask=m, other=0.0, eviction_policy="evict_first")
    y = kl.load(y_ptr + offs, mask=m, other=0.0)
    kl.store(out_ptr + offs, a * x + y, mask=m, cache_modifier=".cs",
             eviction_policy="evict_first")


@kiln.jit
def hinted_scalars(x_ptr, out_ptr, i):
    """Scalar accesses: one hinted load per thread, one hinted store by thread 0."""
    s = kl.load(x_ptr + i, cache_modifier=".cg", eviction_policy="evict_last")
    t = kl.load(x_ptr + i + 1, mask=i >= 0, other=0, cache_modifier=".cv")
    kl.store(out_ptr, s * 2 + t, eviction_policy="evict_first")
    kl.store(out_ptr + 1, s, mask=i >= 0, cache_modifier=".wt")


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
          torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool,
          torch.float8_e4m3fn]

# (load cache, load evict, store cache, store evict); "" is no hint.
HINTS = [
    ("", "evict_first", "", "evict_first"),
    (".cg", "evict_last", ".cs", "evict_first"),
    (".ca", "", ".wb", "evict_last"),
    (".cv", "evict_normal", ".wt", ""),
    ("", "evict_normal", ".cg", "evict_normal"),
    # one side hinted, the other plain: the vector's elements must line up
    ("", "evict_first", "", ""),
    ("", "", ".cs", "evict_first"),
]


def _hint_id(h):
    return "-".join(s.lstrip(".") or "none" for s in h)


def random(dtype, n):
    if dtype == torch.bool:
        return torch.rand(n, device="cuda") < 0.5
    if dtype == torch.float8_e4m3fn:
        return (torch.randn(n, device="cuda") * 8).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(n, device="cuda", dtype=dtype) * 100
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, (n,), device="cuda", dtype=dtype)


def full(n, value, dtype):
    return torch.full((n,), value, device="cuda", dtype=torch.float32).to(dtype)


def bits(t):
    """The elements' bits, for exact comparison (NaN-safe, fp8 too)."""
    if t.dtype == torch.bool:
        return t
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
        t.element_size()])


def buffer(n, dtype, aligned, fill=None):
    """n elements of ``dtype`` (random, or ``fill``), 16-byte aligned or one element off."""
    base = random(dtype, n + 1) if fill is None else full(n + 1, fill, dtype)
    return base[:n] if aligned else base[1:]


def assert_bits_equal(got, expect):
    assert got.dtype == expect.dtype
    same = bits(got) == bits(expect)
    if not bool(same.all()):
        i = int((~same).nonzero()[0])
        raise AssertionError(f"{int((~same).sum())} of {got.numel()} elements differ; "
                             f"first at {i}: got {got[i].item()}, expected {expect[i].item()}")


def run_copy(dtype, hints, mask_load, mask_store, n, aligned):
    grid = kiln.cdiv(n, BLOCK)
    padded = grid * BLOCK
    # A masked load reads exactly n elements (the buffer ends there); an unmasked one
    # reads the whole grid's.
    x = buffer(n if mask_load else padded, dtype, aligned)
    out = buffer(padded, dtype, aligned, fill=SENTINEL)
    hinted_copy[(grid,)](x, out, n, LOAD_CACHE=hints[0], LOAD_EVICT=hints[1],
                         STORE_CACHE=hints[2], STORE_EVICT=hints[3], MASK_LOAD=mask_load,
                         MASK_STORE=mask_store, BLOCK=BLOCK)
    torch.cuda.synchronize()
    expect = full(padded, SENTINEL, dtype)
    expect[:n] = x[:n]
    if not mask_store:  # every element is stored: past n, `other` (or the data)
        expect[n:] = full(padded - n, OTHER, dtype) if mask_load else x[n:]
    assert_bits_equal(out, expect)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("hints", HINTS, ids=_hint_id)
@pytest.mark.parametrize("masks", [(True, True), (True, False), (False, True)],
                         ids=["masked", "masked-load", "masked-store"])
@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_masked_copy(dtype, hints, masks, aligned):
    # n divisible by 16: the masks are constant along 16 elements, so aligned
    # accesses stay 16-byte vectors under the mask
    run_copy(dtype, hints, *masks, n=(1 << 16) + 48, aligned=aligned)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("hints", HINTS[:4], ids=_hint_id)
def test_masked_copy_odd_n(dtype, hints):
    # an n with no power-of-two factor: one element per masked access
    run_copy(dtype, hints, True, True, n=(1 << 16) + 37, aligned=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("hints", HINTS[:4], ids=_hint_id)
@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_unmasked_copy(dtype, hints, aligned):
    run_copy(dtype, hints, False, False, n=1 << 16, aligned=aligned)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_streaming_axpy_larger_than_l2(dtype):
    n = (1 << 26) + 16  # 256 MiB of f32 per operand: far beyond the H200's 50 MiB L2
    # small random integers: 0.5 * x + y is exact in bf16 too, whatever the precision
    # and the contraction the kernel computes it in
    x = torch.randint(-64, 64, (n,), device="cuda").to(dtype)
    y = torch.randint(-64, 64, (n,), device="cuda").to(dtype)
    out = full(n, float("nan"), dtype)
    hinted_axpy[(kiln.cdiv(n, BLOCK),)](x, y, out, n, 0.5, BLOCK=BLOCK)
    torch.cuda.synchronize()
    expect = (0.5 * x.double() + y.double()).to(dtype)
    assert_bits_equal(out, expect)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.int64])
def test_hinted_scalars(dtype):
    x = random(dtype, 64)
    if dtype.is_floating_point:
        x = x.round()  # integer values: s * 2 + t is exact
    else:
        x = x // 4  # no overflow in s * 2 + t
    out = full(2, SENTINEL, dtype)
    hinted_scalars[(1,)](x, out, 10)
    torch.cuda.synchronize()
    expect = torch.stack([x[10] * 2 + x[11], x[10]])
    assert_bits_equal(out, expect)
