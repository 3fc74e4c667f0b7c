"""The on-disk kernel cache (kiln.cache): entry verification, corruption detected and
rebuilt, keys that cover what changes a binary, and 16 processes compiling
overlapping kernels at once (each key compiled exactly once, identical bytes)."""

import hashlib
import multiprocessing
import os
import struct
import sys
import time

import pytest

import kiln
import kiln.language as kl
from kiln import cache as kcache

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def fake_cubin(sm=90, abi=8, size=256):
    """A minimal 64-bit little-endian ELF header for EM_CUDA with the SM in e_flags."""
    head = bytearray(64)
    head[:4] = b"\x7fELF"
    head[4], head[5], head[6], head[8] = 2, 1, 1, abi
    struct.pack_into("<H", head, 18, kcache.EM_CUDA)
    struct.pack_into("<I", head, 48, (sm << 8) if abi >= 8 else sm)
    return bytes(head) + bytes(range(256))[: size - 64]


# ---------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------


def test_cubin_arch_check():
    assert kcache.cubin_sm(fake_cubin(90)) == 90
    assert kcache.cubin_sm(fake_cubin(103)) == 103
    assert kcache.cubin_sm(fake_cubin(90, abi=7)) == 90
    kcache.verify_cubin(fake_cubin(100), "sm_100a")
    with pytest.raises(kcache.CacheCorruption, match="for sm_90, expected sm_100a"):
        kcache.verify_cubin(fake_cubin(90), "sm_100a")
    with pytest.raises(kcache.CacheCorruption, match="not an ELF"):
        kcache.verify_cubin(b"\x00" * 100, "sm_90a")
    bad = bytearray(fake_cubin())
    struct.pack_into("<H", bad, 18, 62)  # x86-64
    with pytest.raises(kcache.CacheCorruption, match="not CUDA"):
        kcache.verify_cubin(bytes(bad), "sm_90a")


def test_store_load_and_every_kind_of_damage(tmp_path):
    c = kcache.Cache(str(tmp_path))
    key = "ab" * 32
    meta = {"name": "k", "params": [{"name": "x", "kind": "ptr"}]}
    cubin = fake_cubin(90)
    c.store(key, "sm_90a", meta, cubin)
    e = c.load(key)
    assert (e.meta, e.cubin, e.arch, e.hit) == (meta, cubin, "sm_90a", True)
    path = c.entry_path(key)
    good = open(path, "rb").read()
    damaged = {
        "truncated": good[:-10],
        "empty": b"",
        "header only": good[:20],
        "flipped cubin byte": good[:-1] + bytes([good[-1] ^ 1]),
        "flipped json byte": good[:30] + bytes([good[30] ^ 0x20]) + good[31:],
        "bad magic": b"X" + good[1:],
        "appended": good + b"\0",
    }
    for what, data in damaged.items():
        with open(path, "wb") as f:
            f.write(data)
        assert c.load(key) is None, what
    # An entry stored under another key (a renamed file) is not accepted either.
    c.store("cd" * 32, "sm_90a", meta, cubin)
    os.replace(c.entry_path("cd" * 32), path)
    assert c.load(key) is None
    # Nothing is published that would not load back.
    with pytest.raises(kcache.CacheCorruption):
        c.store(key, "sm_100a", meta, cubin)  # wrong arch
    with pytest.raises(kcache.CacheCorruption):
        c.store(key, "sm_90a", {"x": float("nan")}, cubin)  # NaN != NaN after a round trip


def test_corrupt_entry_is_rebuilt(tmp_path):
    c = kcache.Cache(str(tmp_path))
    key = "ef" * 32
    builds = []

    def build():
        builds.append(1)
        return {"n": len(builds)}, fake_cubin(90)

    assert c.get_or_build(key, "sm_90a", build).hit is False
    assert c.get_or_build(key, "sm_90a", build).hit is True
    with open(c.entry_path(key), "r+b") as f:
        f.truncate(50)
    e = c.get_or_build(key, "sm_90a", build)
    assert e.hit is False and e.meta == {"n": 2} and len(builds) == 2
    assert c.load(key).meta == {"n": 2}  # replaced on disk
    assert not [n for n in os.listdir(os.path.dirname(c.entry_path(key)))
                if n.startswith(".tmp-")]  # no temp files left behind


def test_cache_off_and_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    assert kcache.cache_dir() == str(tmp_path)
    assert kcache.Cache.default().root == str(tmp_path)
    monkeypatch.setenv("KILN_CACHE", "0")
    assert kcache.cache_dir() is None and kcache.Cache.default() is None


# ---------------------------------------------------------------------------
# What the key covers
# ---------------------------------------------------------------------------

SCALE = 2
HELPER_SWITCH = (1, 2)


@kiln.jit
def _helper(x):
    return x * SCALE


@kiln.jit
def _uses_helper(x_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(x_ptr + offs, _helper(kl.load(x_ptr + offs)) + HELPER_SWITCH[0])


def _fresh(kernel):
    return kiln.jit(kernel.fn)


def test_source_hash_covers_globals_and_callees(monkeypatch):
    base = _fresh(_uses_helper).source_hash
    assert _fresh(_uses_helper).source_hash == base  # deterministic
    monkeypatch.setitem(globals(), "HELPER_SWITCH", (5, 2))
    assert _fresh(_uses_helper).source_hash != base  # a global tuple it reads
    monkeypatch.setitem(globals(), "HELPER_SWITCH", (1, 2))
    monkeypatch.setitem(globals(), "SCALE", 3)  # read by the inlined callee
    assert _fresh(_uses_helper).source_hash != base
    monkeypatch.setitem(globals(), "SCALE", 2)
    assert _fresh(_uses_helper).source_hash == base


def test_source_hash_covers_module_attributes(monkeypatch):
    import types

    cfg = types.ModuleType("cfg")
    cfg.BLOCK = 64

    def body(x_ptr):
        kl.store(x_ptr + kl.arange(0, cfg.BLOCK), 1.0)

    body.__globals__["cfg"] = cfg
    try:
        h1 = kiln.jit(body).source_hash
        cfg.BLOCK = 128
        assert kiln.jit(body).source_hash != h1
    finally:
        del body.__globals__["cfg"]


def test_cache_key_covers_spec_arch_name_and_compiler():
    from kiln.compiler.compiler import Specialization

    spec = Specialization.make({"x_ptr": "*f32"}, ["x_ptr"], {"BLOCK": 64})
    k = kcache.kernel_key("h", spec.key(), "sm_90a", "k", "v1")
    assert len(k) == 64 and k == kcache.kernel_key("h", spec.key(), "sm_90a", "k", "v1")
    others = [
        kcache.kernel_key("h2", spec.key(), "sm_90a", "k", "v1"),
        kcache.kernel_key("h", Specialization.make({"x_ptr": "*f32"}, None, {"BLOCK": 64})
                          .key(), "sm_90a", "k", "v1"),
        kcache.kernel_key("h", Specialization.make({"x_ptr": "*f32"}, ["x_ptr"], {"BLOCK": 128})
                          .key(), "sm_90a", "k", "v1"),
        kcache.kernel_key("h", Specialization.make({"x_ptr": "*f32"}, ["x_ptr"], {"BLOCK": 64},
                                                   num_warps=8).key(), "sm_90a", "k", "v1"),
        kcache.kernel_key("h", spec.key(), "sm_100a", "k", "v1"),
        kcache.kernel_key("h", spec.key(), "sm_90a", "k2", "v1"),
        kcache.kernel_key("h", spec.key(), "sm_90a", "k", "v2"),
        kcache.kernel_key("h", spec.key(), "sm_90a", "k", "v1", {"opt": 1}),
    ]
    assert len(set(others + [k])) == len(others) + 1


# ---------------------------------------------------------------------------
# Through the compiler
# ---------------------------------------------------------------------------


def situ_specs():
    from kernels_dsl.kimi_k3 import situ

    return [s for s in situ.AOT_SPECIALIZATIONS if s.kernel_name == "situ_and_mul"]  # 4 keys


def compile_cached(spec, arch):
    return spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                               num_warps=spec.num_warps, arch=arch, name=spec.kernel_name,
                               cache=True)


def test_compile_through_the_cache(tmp_path, monkeypatch):
    pytest.importorskip("kiln._C")
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    spec = situ_specs()[0]
    cold = compile_cached(spec, "sm_90a")
    assert cold.cubin_tool in ("nvJitLink", "ptxas") and cold.ptx
    warm = compile_cached(spec, "sm_90a")
    assert warm.cubin_tool == "cache" and warm.cubin == cold.cubin and warm.meta == cold.meta
    assert kcache.cubin_sm(cold.cubin) == 90
    for arch in ("sm_100a", "sm_103a"):
        assert kcache.cubin_sm(compile_cached(spec, arch).cubin) == int(arch[3:6])


def _worker(barrier, queue, cache_dir, log, worker):
    """One of the 16 processes: compiles its share of the keys, reports hashes."""
    os.environ["KILN_CACHE_DIR"] = cache_dir
    os.environ["KILN_CACHE_LOG"] = log
    try:
        sys.path.insert(0, REPO)
        specs = situ_specs()
        work = [(s, a) for s in specs for a in ("sm_90a", "sm_100a")]
        # Overlapping: each process takes 5 of the 8 keys, starting at a different one.
        mine = [work[(worker + i) % len(work)] for i in range(5)]
        barrier.wait(timeout=120)
        out = {}
        for spec, arch in mine:
            ck = compile_cached(spec, arch)
            key = spec.kernel.cache_key(
                __import__("kiln.compiler.compiler", fromlist=["x"]).Specialization.make(
                    spec.signature, spec.divisibility, spec.constexprs, spec.num_warps),
                arch, spec.kernel_name)
            out[key] = hashlib.sha256(ck.cubin).hexdigest()
        queue.put((worker, out, None))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        import traceback

        queue.put((worker, {}, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def test_sixteen_processes_compile_each_key_once(tmp_path):
    pytest.importorskip("kiln._C")
    ctx = multiprocessing.get_context("spawn")
    n = 16
    barrier = ctx.Barrier(n)
    queue = ctx.Queue()
    log = str(tmp_path / "compilations.log")
    cache_dir = str(tmp_path / "cache")
    t0 = time.perf_counter()
    procs = [ctx.Process(target=_worker, args=(barrier, queue, cache_dir, log, w))
             for w in range(n)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
    elapsed = time.perf_counter() - t0
    errors = [err for _, _, err in results if err]
    assert not errors, errors[0]
    assert all(p.exitcode == 0 for p in procs)
    by_key = {}
    for _, out, _ in results:
        for key, digest in out.items():
            by_key.setdefault(key, set()).add(digest)
    assert len(by_key) == 8
    assert all(len(d) == 1 for d in by_key.values()), "processes got different cubins"
    compiled = [line.split()[1] for line in open(log).read().splitlines()]
    assert sorted(compiled) == sorted(by_key), "each key must be compiled exactly once"
    entries = [f for d in os.listdir(cache_dir) if not d.startswith(".")
               for f in os.listdir(os.path.join(cache_dir, d)) if f.endswith(".kentry")]
    assert len(entries) == 8
    assert elapsed < 120
