"""Peer memory in the language, on the CPU: ``kl.peer_pointer`` (a rank's symmetric workspace
from the peer table), ``kl.poll_nonzero`` (the Lamport consumer's wait) and
``kl.nonzero_marker`` (its producer's word): the PTX they become on every arch, the errors at
the user's line, and the interpreter's answers."""

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import CompilationError
from kiln.compiler.compiler import compiler_available
from kiln.testing import interpret

pytestmark = pytest.mark.skipif(not compiler_available(), reason="kiln._C is not built")

_SIG = {"peers": "*i64", "rank": "i32", "out_ptr": "*i32", "n": "i32"}


@kiln.jit(num_warps=1)
def _pull(peers, rank, out_ptr, n, BLOCK: kl.constexpr, TIMEOUT: kl.constexpr):
    """out = the rank's words, polled until non-zero, plus rank 0's, read plainly."""
    o = kl.arange(0, BLOCK)
    theirs = kl.peer_pointer(peers, rank, kl.int32)
    first = kl.peer_pointer(peers, 0, kl.int32)
    v = kl.poll_nonzero(theirs + o, mask=o < n, timeout_ns=TIMEOUT)
    kl.store(out_ptr + o, v + kl.load(first + o))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_peer_pointer_and_poll_ptx(arch):
    """Each element of the poll is its own loop of ld.relaxed.sys reads (BLOCK of them for one
    warp of 32 threads: 4 an thread), its deadline the constexpr; the peer's base is 16-byte
    aligned, so the plain load through it is a vector."""
    ptx = _pull.compile(_SIG, {"BLOCK": 128, "TIMEOUT": 123456},
                        divisibility=["peers", "out_ptr"], arch=arch).ptx
    assert ptx.count("kiln_poll:") == 4
    assert ptx.count("ld.relaxed.sys.global.b32") == 4
    assert "123456" in ptx
    assert "%globaltimer" in ptx and "nanosleep.u32" in ptx
    assert "ld.global.v4.b32" in ptx or "ld.global.v2.b64" in ptx


@kiln.jit
def _bad_table(peers_ptr):
    p = kl.peer_pointer(peers_ptr, 0, kl.int32)  # bad-table
    kl.store(p, 1)


@kiln.jit
def _bad_timeout(p_ptr, t):
    v = kl.poll_nonzero(p_ptr, timeout_ns=t)  # bad-timeout
    kl.store(p_ptr, v)


@kiln.jit
def _bad_width(p_ptr):
    v = kl.poll_nonzero(p_ptr)  # bad-width
    kl.store(p_ptr, v)


def test_errors_at_the_users_line():
    with pytest.raises(CompilationError, match="the peer table must be a scalar pointer to "
                                               "int64 addresses") as e:
        _bad_table.compile({"peers_ptr": "*i32"}, upto="tile")
    assert "bad-table" in str(e.value)
    with pytest.raises(CompilationError, match="timeout_ns must be a positive constexpr int"):
        _bad_timeout.compile({"p_ptr": "*i32", "t": "i64"}, upto="tile")
    with pytest.raises(CompilationError, match="ordered accesses move 16-, 32- or 64-bit"):
        _bad_width.compile({"p_ptr": "*i8"}, upto="tile")


@kiln.jit
def _poll_local(p_ptr, out_ptr, BLOCK: kl.constexpr):
    o = kl.arange(0, BLOCK)
    kl.store(out_ptr + o, kl.poll_nonzero(p_ptr + o, mask=o < 6))


def test_interpreter():
    """The interpreter reads a poll once (nothing runs beside a program: a zero is the
    timeout's answer, masked lanes read zero) and has no peers."""
    src = np.array([5, 0, 7, 1, 0, 2, 9, 9], dtype=np.int32)
    out = np.full(8, -1, dtype=np.int32)
    interpret(_poll_local, (1,), src, out, BLOCK=8)
    np.testing.assert_array_equal(out, [5, 0, 7, 1, 0, 2, 0, 0])
    peers = np.zeros(2, dtype=np.int64)
    with pytest.raises(Exception, match="has no peers"):
        interpret(_pull, (1,), peers, 1, np.zeros(8, dtype=np.int32), 8, BLOCK=8, TIMEOUT=10)


@kiln.jit
def _mark(x_ptr, out_ptr, BLOCK: kl.constexpr):
    o = kl.arange(0, BLOCK)
    kl.store(out_ptr + o, kl.nonzero_marker(kl.load(x_ptr + o)))


@kiln.jit
def _bad_marker(x_ptr):
    kl.store(x_ptr, kl.nonzero_marker(kl.load(x_ptr)))  # bad-marker


def test_nonzero_marker():
    """Zero words become 0x8000 (bf16 -0.0 in the low half), every other word is kept; in the
    PTX a compare and a select; only 32-bit words are accepted, at the user's line."""
    x = np.array([0, 1, -1, 0x8000, 0, 0x10000, 7, 0], dtype=np.int32)
    out = np.zeros(8, dtype=np.int32)
    interpret(_mark, (1,), x, out, BLOCK=8)
    np.testing.assert_array_equal(out, [0x8000, 1, -1, 0x8000, 0x8000, 0x10000, 7, 0x8000])
    ptx = _mark.compile({"x_ptr": "*i32", "out_ptr": "*i32"}, {"BLOCK": 128},
                        arch="sm_90a").ptx
    assert "setp.eq.b32" in ptx and "selp.b32" in ptx and "32768" in ptx
    with pytest.raises(CompilationError, match="nonzero_marker: expected 32-bit integer "
                                               "words") as e:
        _bad_marker.compile({"x_ptr": "*bf16"}, upto="tile")
    assert "bad-marker" in str(e.value)


@kiln.jit
def _acquire_then_fence(flag_ptr, out_ptr):
    f = kl.load(flag_ptr, sem="acquire", scope="sys")
    kl.fence_proxy_async()
    kl.fence_proxy_async("shared_cta")
    kl.store(out_ptr, f)


@kiln.jit
def _bad_space(p_ptr):
    kl.fence_proxy_async("local")  # bad-space


def test_fence_proxy_async():
    """The proxy fence of each space in the PTX after the acquire; an unknown space at the
    user's line; nothing to order in the interpreter."""
    ptx = _acquire_then_fence.compile({"flag_ptr": "*i32", "out_ptr": "*i32"}, arch="sm_90a").ptx
    assert ptx.index("ld.acquire.sys.global.b32") < ptx.index("fence.proxy.async.global;") \
        < ptx.index("fence.proxy.async.shared::cta;")
    with pytest.raises(CompilationError, match="space must be one of global, shared_cta, "
                                               "all") as e:
        _bad_space.compile({"p_ptr": "*i32"}, upto="tile")
    assert "bad-space" in str(e.value)
    out = np.zeros(1, dtype=np.int32)
    interpret(_acquire_then_fence, (1,), np.array([3], dtype=np.int32), out)
    assert out[0] == 3
