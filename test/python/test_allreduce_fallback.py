"""The NCCL fallback of the collectives (kernels_dsl/kimi_k3/allreduce_fallback.py,
docs/kernels/collectives.md) on the CPU, no GPU and no torch: its kernels in the interpreter
against numpy references written from the math (the fp32 sum rounded once to bf16, the
residual added in bf16 arithmetic, the RMSNorm in fp32; the MoE finalize fp32 in k order, ids
< 0 dropped, rounded to bf16); the wrappers' checks, which raise before anything is sent
(stand-in tensors); the workspace factory's collective decision over a fake exchange (ranks
as threads); the bundle's specializations compile for every arch."""

import threading

import ml_dtypes
import numpy as np
import pytest

from kernels_dsl.kimi_k3 import allreduce as A
from kernels_dsl.kimi_k3 import allreduce_fallback as F
from kiln.runtime import KilnError
from kiln.testing import FakeCudaTensor, assert_bf16_close, interpret

BF16 = ml_dtypes.bfloat16
F32 = np.float32
EPS = 1e-6
SENTINEL = np.uint16(0x7FC1)  # a bf16 NaN no kernel here writes


def bf16(a):
    """fp32 -> bf16, round to nearest even (what the kernels' cvt.rn does)."""
    return np.asarray(a, dtype=F32).astype(BF16)


def poisoned(n):
    return np.full(n, SENTINEL, dtype=np.uint16).view(BF16)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint16)


def fp32_sum(rng, world, n):
    """What the all-reduce hands the epilogue: the fp32 sum of world bf16 inputs (with zeros,
    -0.0 and values whose sum is not a bf16)."""
    xs = [bf16(rng.standard_normal(n) * 3) for _ in range(world)]
    for x in xs:
        x[::7] = 0
        x[5::11] = -0.0
    return np.sum([x.astype(F32) for x in xs], axis=0, dtype=F32)


def ref_out(s, res):
    """out = bf16(s), with a residual bf16(f32(bf16(s)) + f32(res)); a sum of -0.0 is +0.0
    (the push kernels' sum starts from +0.0)."""
    out = bf16(s + F32(0.0))
    if res is not None:
        out = bf16(out.astype(F32) + res.astype(F32))
    return out


def ref_norm(out, w):
    """f32(out) * rsqrt(mean(f32(out)^2) + eps) * f32(w), unrounded (fp64 reduction)."""
    a = out.astype(np.float64)
    rstd = 1.0 / np.sqrt(np.mean(a * a, axis=-1, keepdims=True) + EPS)
    return (a * rstd * w.astype(np.float64)).astype(F32)


# --- the flat epilogue -------------------------------------------------------------------------

@pytest.mark.parametrize("n,with_res", [(2, False), (6, True), (1024, False), (2050, True),
                                        (5000, True)])
def test_flat_epilogue_rounds_the_fp32_sum_once(n, with_res):
    rng = np.random.default_rng(n)
    s = fp32_sum(rng, 4, n)
    res = bf16(rng.standard_normal(n)) if with_res else None
    pad = 37
    out = poisoned(n + pad)  # the tail past n stays untouched
    block = A.SETTINGS.block
    interpret(F.epilogue_kernel, ((n + block - 1) // block,), s,
              res if with_res else out, out, n, HAS_RES=with_res, BLOCK=block)
    np.testing.assert_array_equal(bits(out[:n]), bits(ref_out(s, res)))
    assert np.all(bits(out[n:]) == SENTINEL)


def test_flat_epilogue_zeros_and_ties():
    """An fp32 sum of -0.0 (every rank's element -0.0, summed from the first rank's) becomes
    +0.0, as the push kernels' sum from +0.0 gives; halfway cases round to even; the
    residual add rounds the bf16 sum again (not the fp32 sum)."""
    s = np.array([-0.0, 0.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-9, -(1 + 2**-8)], dtype=F32)
    out = poisoned(6)
    interpret(F.epilogue_kernel, (1,), s, out, out, 6, HAS_RES=False, BLOCK=8)
    np.testing.assert_array_equal(bits(out), bits(np.array(
        [0.0, 0.0, 1.0, 1 + 2**-6, 1.0, -1.0], dtype=F32).astype(BF16)))
    # 1 + 2^-9 rounds to 1; + 2^-8 then gives 1 + 2^-8, a tie, to even: 1 (the fp32 sum plus
    # the residual, rounded once, would be 1 + 2^-7)
    res = bf16(np.full(6, 2**-8))
    interpret(F.epilogue_kernel, (1,), s, res, out, 6, HAS_RES=True, BLOCK=8)
    np.testing.assert_array_equal(bits(out), bits(ref_out(s, res)))
    assert float(out[4]) == 1.0


# --- the row epilogue -----------------------------------------------------------------------

@pytest.mark.parametrize("rows,dim,norm_rows,with_res", [
    (1, A.NORM_DIM, 1, False), (3, A.NORM_DIM, 1, True), (5, 10, 5, False), (4, 6, 0, True),
    (7, 130, 3, True)])
def test_rows_epilogue(rows, dim, norm_rows, with_res):
    rng = np.random.default_rng(rows * 1000 + dim)
    s = fp32_sum(rng, 2, rows * dim).reshape(rows, dim)
    res = bf16(rng.standard_normal((rows, dim))) if with_res else None
    w = bf16(rng.standard_normal(dim))
    out = poisoned(rows * dim).reshape(rows, dim)
    norm = poisoned(max(norm_rows, 1) * dim).reshape(-1, dim)
    cx = F._rows_constexprs(with_res, dim)
    interpret(F.epilogue_rows_kernel, (rows,), s, res if with_res else out, out, w,
              norm if norm_rows else out, norm_rows, EPS, **cx)
    want = ref_out(s, res)
    np.testing.assert_array_equal(bits(out), bits(want))
    if norm_rows:
        assert_bf16_close(norm[:norm_rows], ref_norm(want[:norm_rows], w))
    else:
        assert np.all(bits(norm) == SENTINEL)


# --- the MoE finalize ------------------------------------------------------------------------

def ref_finalize(gemm2, ids, wts):
    """sum_k w[t, k] * f32(gemm2[ids[t, k]]) in fp32, k in order (each product and sum
    rounded to fp32), ids < 0 dropped; rounded to bf16, widened."""
    acc = np.zeros((ids.shape[0], gemm2.shape[1]), dtype=F32)
    for t in range(ids.shape[0]):
        for k in range(ids.shape[1]):
            if ids[t, k] >= 0:
                acc[t] = acc[t] + wts[t, k] * gemm2[ids[t, k]].astype(F32)
    return bf16(acc).astype(F32)


@pytest.mark.parametrize("tokens,experts,dim", [(1, 16, 8), (5, 40, 30), (3, 20, A.NORM_DIM)])
def test_finalize_rows(tokens, experts, dim):
    rng = np.random.default_rng(tokens * 100 + experts)
    gemm2 = bf16(rng.standard_normal((experts, dim)))
    ids = rng.integers(-experts // 7, experts, (tokens, A.TOPK)).clip(min=-1).astype(np.int32)
    if tokens > 1:
        ids[0] = -1  # a token with every id dropped
    wts = rng.random((tokens, A.TOPK), dtype=F32)
    acc = np.full((tokens, dim), np.nan, dtype=F32)
    interpret(F.finalize_rows_kernel, (tokens,), gemm2, ids, wts, acc,
              **F._finalize_constexprs(dim))
    np.testing.assert_array_equal(acc.view(np.uint32), ref_finalize(gemm2, ids, wts).view(
        np.uint32))


# --- the wrappers' checks ------------------------------------------------------------------------

def fb_ws(world=2, rank=0):
    return F.ProcessGroupWorkspace(1 << 20, rank=rank, world=world, exchange=lambda r: [r])


def t(shape, dtype="bfloat16", **kw):
    return FakeCudaTensor(shape, dtype, **kw)


D = A.NORM_DIM


@pytest.mark.parametrize("call,error,message", [
    (lambda: F.allreduce(t([8]), A.SETTINGS), TypeError, "takes a ProcessGroupWorkspace"),
    (lambda: F.allreduce(t([8], "float16"), fb_ws()), TypeError, "x must be bfloat16"),
    (lambda: F.allreduce(t([7]), fb_ws()), ValueError, "must be even"),
    (lambda: F.allreduce(t([8], strides=[2]), fb_ws()), ValueError, "x must be contiguous"),
    (lambda: F.allreduce(t([8], address=0x7F0000000002), fb_ws()), ValueError,
     "4-byte aligned"),
    (lambda: F.allreduce(t([8]), fb_ws(), residual=t([4])), ValueError,
     r"residual must have shape \[8\]"),
    (lambda: F.allreduce(t([8]), fb_ws(), out=t([8], "float32")), TypeError,
     "out must be bfloat16"),
    (lambda: F.sp_reduce_scatter(t([3, 8]), fb_ws()), ValueError, "multiple of the world size"),
    (lambda: F.sp_reduce_scatter(t([4, 8]), fb_ws(), out=t([4, 8])), ValueError,
     r"out must have shape \[2, 8\]"),
    (lambda: F.sp_reduce_scatter(t([2, 3]), fb_ws(), out=t([1, 3])), ValueError,
     "chunk holds must be even"),
    (lambda: F.sp_all_gather(t([4, 8]), fb_ws(), out=t([4, 8])), ValueError,
     r"out must have shape \[8, 8\]"),
    (lambda: F.sp_all_gather(t([4, 8]), A.SETTINGS), TypeError, "ProcessGroupWorkspace"),
    (lambda: F.allreduce_rmsnorm(t([4, D]), fb_ws(), t([D // 2])), ValueError,
     r"weight must have shape \[3584\]"),
    (lambda: F.allreduce_rmsnorm(t([4, D]), fb_ws(), t([D]), norm_rows=5), ValueError,
     "norm_rows must be"),
    (lambda: F.allreduce_rmsnorm(t([4, 9]), fb_ws(), t([9])), ValueError, "must be even"),
    (lambda: F.allreduce_rmsnorm(t([4, D], address=0x7F0000000008), fb_ws(), t([D])),
     ValueError, "x must be 16-byte aligned"),
    (lambda: F.allreduce_rmsnorm(t([4, D]), fb_ws(), t([D]), norm_rows=2, norm_out=t([4, D])),
     ValueError, r"norm_out must have shape \[2, 3584\]"),
    (lambda: F.finalize_push_norm(t([4, D]), t([4, 16], "int64"), t([4, 16], "float32"),
                                  fb_ws(), t([D]), out=t([4, D])), TypeError,
     "topk_ids must be int32"),
    (lambda: F.finalize_push_norm(t([4, D]), t([4, 16], "int32"), t([3, 16], "float32"),
                                  fb_ws(), t([D]), out=t([4, D])), ValueError,
     r"topk_weights must have shape \[4, 16\]"),
    (lambda: F.finalize_push_norm(t([4, D]), t([4, 16], "int32"), t([4, 16], "float32"),
                                  fb_ws(), t([D]), residual=t([3, D]), out=t([4, D])),
     ValueError, r"residual must have shape \[4, 3584\]"),
])
def test_bad_input_raises_before_anything_is_sent(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_check_is_a_no_op_for_the_fallback_and_refuses_a_symmetric_buffer():
    F.check(fb_ws())
    with pytest.raises(TypeError, match="ProcessGroupWorkspace"):
        F.check(A.SETTINGS)


def test_process_group_workspace():
    met = []
    ws = F.ProcessGroupWorkspace(4096, rank=1, world=4, exchange=lambda r: met.append(r) or [r])
    assert (ws.rank, ws.world, ws.nbytes, ws.peer_mapped, ws.reason) == (1, 4, 4096, False, None)
    assert ws.zero_() is ws
    ws.barrier()
    assert met == [b""]
    assert "rank 1 of 4" in repr(ws)


# --- the factory's collective decision ----------------------------------------------------------

class Ranks:
    """``world`` ranks as threads, exchanging records through shared slots (an all-gather)."""

    def __init__(self, world):
        self.world = world
        self.meet = threading.Barrier(world, timeout=20)
        self.slots = [None] * world

    def exchange(self, rank):
        def exchange(record):
            self.slots[rank] = bytes(record)
            self.meet.wait()
            records = list(self.slots)
            self.meet.wait()
            return records

        return exchange

    def run(self, fn):
        results = [None] * self.world

        def body(r):
            try:
                results[r] = fn(r, self.exchange(r))
            except Exception as e:  # noqa: BLE001 - the rank's outcome
                results[r] = e

        threads = [threading.Thread(target=body, args=(r,)) for r in range(self.world)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert not any(th.is_alive() for th in threads), "a rank hangs"
        return results


class FakeBuffer:
    peer_mapped = True

    def __init__(self, rank):
        self.rank, self.closed = rank, False

    def close(self):
        self.closed = True


def fake_symmetric(fails, made):
    """A SymmetricBuffer stand-in that exchanges records (as the real one does, also where it
    fails) and raises ``fails[rank]`` after the exchange, if any."""

    def make(nbytes, group, exchange, rank, world):
        exchange(b"record")
        if rank in fails:
            raise fails[rank]
        buf = FakeBuffer(rank)
        made.append(buf)
        return buf

    return make


@pytest.mark.parametrize("world", [2, 4])
def test_factory_makes_the_symmetric_buffer_where_every_rank_can(monkeypatch, world):
    made = []
    monkeypatch.setattr(F, "_symmetric_buffer", fake_symmetric({}, made))
    ranks = Ranks(world)
    got = ranks.run(lambda r, ex: F.workspace(4096, rank=r, world=world, exchange=ex))
    assert all(isinstance(g, FakeBuffer) and g.rank == r and not g.closed
               for r, g in enumerate(got))


@pytest.mark.parametrize("world,failing", [(2, {1}), (4, {0}), (4, {1, 3})])
def test_factory_falls_back_on_every_rank_when_one_cannot(monkeypatch, world, failing):
    made = []
    fails = {r: KilnError(f"no peer access from rank {r}") for r in failing}
    monkeypatch.setattr(F, "_symmetric_buffer", fake_symmetric(fails, made))
    ranks = Ranks(world)
    got = ranks.run(lambda r, ex: F.workspace(4096, rank=r, world=world, exchange=ex))
    for r, g in enumerate(got):
        assert isinstance(g, F.ProcessGroupWorkspace), g
        assert (g.rank, g.world, g.nbytes, g.peer_mapped) == (r, world, 4096, False)
        for bad in failing:
            assert f"rank {bad}: no peer access from rank {bad}" in g.reason
    assert made and all(b.closed for b in made)  # the ranks that could closed theirs


def test_factory_raises_other_errors_without_leaving_a_rank_waiting(monkeypatch):
    made = []
    monkeypatch.setattr(F, "_symmetric_buffer", fake_symmetric({0: MemoryError("boom")}, made))
    ranks = Ranks(2)
    got = ranks.run(lambda r, ex: F.workspace(4096, rank=r, world=2, exchange=ex))
    assert isinstance(got[0], MemoryError)
    assert isinstance(got[1], F.ProcessGroupWorkspace) and "boom" in got[1].reason


def test_factory_force_fallback_tries_nothing(monkeypatch):
    def never(*args):
        raise AssertionError("force_fallback made a SymmetricBuffer")

    monkeypatch.setattr(F, "_symmetric_buffer", never)
    ws = F.workspace(4096, force_fallback=True, rank=0, world=2, exchange=lambda r: [r, r])
    assert isinstance(ws, F.ProcessGroupWorkspace) and ws.reason is None
    with pytest.raises(ValueError, match="must be positive"):
        F.workspace(0, force_fallback=True, rank=0, world=2)


# --- the bundle -----------------------------------------------------------------------------

def test_module_is_in_the_bundle_and_names_are_unique():
    from kernels_dsl import kimi_k3

    assert "allreduce_fallback" in kimi_k3.MODULES
    keys = [(s.name, tuple(sorted(s.constexprs.items()))) for s in F.AOT_SPECIALIZATIONS]
    assert len(keys) == len(set(keys))
    names = {s.name for s in F.AOT_SPECIALIZATIONS}
    assert not names & {s.name for s in A.AOT_SPECIALIZATIONS}
    assert {s.constexprs["D"] for s in F.AOT_SPECIALIZATIONS if "D" in s.constexprs} \
        == {A.NORM_DIM}


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
@pytest.mark.parametrize("spec", F.AOT_SPECIALIZATIONS, ids=lambda s: s.kernel_name)
def test_compiles(spec, arch):
    pytest.importorskip("kiln._C")
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, upto="ptx")
    assert f".target {arch}" in ck.ptx
    # the aligned forms move 16-byte vectors; the generic one takes any 4-byte address
    vector = not spec.name.endswith("_generic")
    assert (("st.global.v4" in ck.ptx) or ("st.global.v2.b64" in ck.ptx)) == vector, spec.name
