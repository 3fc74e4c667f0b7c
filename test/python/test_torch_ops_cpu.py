"""``kernels_dsl.kimi_k3.torch_ops`` on the CPU, with the kernels in interpreter mode (torch CPU
tensors): the registered schemas (what each op mutates), the fake implementations under
FakeTensorMode against the shapes the wrappers document, and the GPU test's cases
(test/gpu/test_torch_ops.py) through eager calls, ``torch.library.opcheck`` and
``torch.compile(fullgraph=True, backend="aot_eager")``. Skipped without torch (CI has none;
the GPU tier runs the same cases on the device)."""

import os
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
import kiln.compiler  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
with warnings.catch_warnings():  # its sm90 marker is registered by test/gpu/conftest.py
    warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
    import test_torch_ops as cases  # noqa: E402  (the GPU test's device-agnostic cases)

import kernels_dsl.kimi_k3.torch_ops as kops  # noqa: E402
from kernels_dsl import kimi_k3  # noqa: E402

F8 = torch.float8_e4m3fn
BF16 = torch.bfloat16


@pytest.fixture(autouse=True)
def interpreted(monkeypatch):
    """Every Kimi K3 kernel runs in the CPU interpreter for the test."""
    import importlib

    for name in kimi_k3.MODULES:
        mod = importlib.import_module(f"kernels_dsl.kimi_k3.{name}")
        for value in vars(mod).values():
            if isinstance(value, kiln.JITFunction):
                monkeypatch.setattr(value, "interpret", True)
    # the wrappers launch through the JIT path (the interpreter) only when they see a compiler
    monkeypatch.setattr(kiln.compiler, "compiler_available", lambda: True)


def test_schemas_declare_what_the_ops_write():
    mutated = {}
    for name in kops.OPS:
        schema = getattr(torch.ops.kiln, name).default._schema
        mutated[name] = {a.name for a in schema.arguments
                         if a.alias_info is not None and a.alias_info.is_write}
        if name in ("attn_res_write_prefix", "kda_packed_decode", "kda_fused_decode",
                    "kda_verify_chain"):
            assert len(schema.returns) == 1, name  # write their states, return out
        elif mutated[name]:
            assert not schema.returns, f"{name}: an in-place op returns nothing"
        else:
            assert schema.returns, f"{name}: a functional op returns its outputs"
    assert {n: m for n, m in mutated.items() if m} == {
        "concat_mla_k": {"k"}, "mla_kv_scatter": {"cache"}, "mla_kv_scatter_fp8": {"cache"},
        "kv_indices": {"kv_indices"}, "attn_res_write_prefix": {"bank"},
        "kda_packed_decode": {"state"}, "kda_fused_decode": {"state", "conv_state"},
        "kda_verify_chain": {"intermediate_states", "rawk", "rawv", "gk", "beta",
                             "conv_records"},
        "kda_replayssm_fold": {"h0", "conv_state"}}
    assert set(kops.OPS) == set(cases.WRAPPERS)


def test_register_reuses_an_existing_op():
    again = kops.register("pack_topk_ids", lambda *a: None)(lambda *a: None)
    assert again is kops.OPS["pack_topk_ids"]


def _fake(*specs):
    """Fake tensors from (shape, dtype) pairs."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    return mode, [mode.from_tensor(torch.empty(s, dtype=d)) if isinstance(s, tuple) else s
                  for s, d in specs]


def _meta(outs):
    outs = outs if isinstance(outs, tuple) else (outs,)
    return [(tuple(o.shape), o.dtype) for o in outs]


#: op, inputs (shape, dtype) or (scalar, None), kwargs, the outputs' (shape, dtype) as the
#: wrappers' docstrings state them (K3 sizes; nothing runs).
FAKE_CASES = [
    ("situ_and_mul", [((4096, 6144), BF16)], {}, [((4096, 3072), BF16)]),
    ("situ_and_mul", [((7, 256), torch.float32)], {"linear_beta": None}, [((7, 128), BF16)]),
    ("situ_and_mul_masked_post_quant", [((24, 256, 6144), BF16), ((24,), torch.int32)], {},
     [((24, 256, 3072), F8), ((24, 256, 24), torch.float32)]),
    ("situ_and_mul_masked_post_quant", [((24, 256, 6144), BF16), ((24,), torch.int32)],
     {"scale_ue8m0": True}, [((24, 256, 3072), F8), ((24, 6, 256), torch.int32)]),
    ("mla_output_gate", [((64, 12, 128), BF16), ((64, 12, 128), BF16)], {},
     [((64, 12, 128), BF16)]),
    ("mla_output_gate_fp8", [((64, 1536), BF16), ((64, 1536), BF16)], {},
     [((64, 1536), F8), ((64,), torch.float32)]),
    ("concat_mla_absorb_q", [((64, 12, 512), BF16), ((64, 12, 64), BF16)], {},
     [((64, 12, 576), BF16)]),
    ("pack_topk_ids", [((64, 16), torch.int32), ((64, 16), torch.float32)], {},
     [((64, 16), torch.int32)]),
    ("moe_align_single_token", [((1, 16), torch.int32), (64, None)], {},
     [((1024,), torch.int32), ((16,), torch.int32), ((1,), torch.int32)]),
    ("per_token_group_quant_fp8", [((64, 7168), BF16)], {},
     [((64, 7168), F8), ((64, 56), torch.float32)]),
    ("per_token_group_quant_fp8", [((64, 7168), BF16)], {"group": 64},
     [((64, 7168), F8), ((64, 112), torch.float32)]),
    ("quant_mxfp4", [((64, 7168), BF16)], {}, [((64, 3584), torch.uint8),
                                               ((64, 224), torch.uint8)]),
    ("gpu_tensor_hash", [((3, 5), torch.float16)], {}, [((1,), torch.int64)]),
    ("moe_fused_gate", [((64, 896), torch.float32), ((896,), torch.float32), (16, None)], {},
     [((64, 16), torch.float32), ((64, 16), torch.int32)]),
    ("moe_fused_gate", [((64, 896), torch.float32), ((896,), torch.float32), (16, None)],
     {"num_fused_shared_experts": 1}, [((64, 17), torch.float32), ((64, 17), torch.int32)]),
    ("attn_res", [((64, 7168), BF16), ((64, 9, 7168), BF16), ((7168,), BF16), ((7168,), BF16)],
     {"nvb": 8}, [((64, 7168), BF16)]),
    ("image_preprocess", [((2, 480, 640, 3), torch.uint8), (448, None), (448, None)], {},
     [((2, 1024, 588), BF16)]),
    ("mla_decode", [((64, 12, 576), BF16), ((100, 64, 656), torch.uint8),
                    ((64, 9), torch.int32), ((64,), torch.int32)], {},
     [((64, 12, 512), BF16), ((64, 12), torch.float32)]),
    ("verify_splitkv", [((64, 4, 12, 576), BF16), ((100, 64, 576), BF16),
                        ((64, 9), torch.int32), ((64,), torch.int32)], {},
     [((64, 4, 12, 512), BF16), ((64, 4, 12), torch.float32)]),
    ("kda_packed_decode", [((64, 4608), BF16), ((64, 1536), BF16), ((64, 12), BF16),
                           ((12,), torch.float32), ((1536,), torch.float32),
                           ((80, 12, 128, 128), torch.float32), ((64,), torch.int32),
                           (12, None)], {"lower_bound": -5.0}, [((64, 12, 128), BF16)]),
    ("kda_fused_decode", [((70, 4608), BF16), ((70, 1536), BF16), ((70, 12), BF16),
                          ((12,), torch.float32), ((1536,), torch.float32),
                          ((80, 3, 4608), BF16), ((4608, 4), BF16),
                          ((80, 12, 128, 128), torch.float32), ((64,), torch.int32),
                          (12, None), ((65,), torch.int32)], {}, [((70, 12, 128), BF16)]),
    ("kda_verify_chain", [((256, 4608), BF16), ((256, 1536), BF16), ((256, 12), BF16),
                          ((12,), torch.float32), ((1536,), torch.float32),
                          ((80, 3, 4608), BF16), ((4608, 4), BF16),
                          ((80, 12, 128, 128), torch.float32), ((64,), torch.int32),
                          (12, None), (4, None)], {"lower_bound": -5.0},
     [((256, 12, 128), BF16)]),
]


@pytest.mark.parametrize("op,inputs,kwargs,expected", FAKE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(FAKE_CASES)])
def test_fake_outputs_have_the_documented_shapes(op, inputs, kwargs, expected):
    mode, args = _fake(*inputs)
    with mode:
        outs = getattr(torch.ops.kiln, op)(*args, **kwargs)
    assert _meta(outs) == expected


def test_fake_column_major_scales_have_the_wrappers_strides():
    mode, (x,) = _fake(((64, 1024), BF16))
    with mode:
        _, s = torch.ops.kiln.per_token_group_quant_fp8(x, column_major_scales=True)
    assert tuple(s.shape) == (64, 8) and tuple(s.stride()) == (1, 64)


def test_fake_in_place_ops_return_nothing():
    mode, (k, nope, rope) = _fake(((4, 2, 192), BF16), ((4, 2, 128), BF16), ((4, 1, 64), BF16))
    with mode:
        assert torch.ops.kiln.concat_mla_k(k, nope, rope) is None
    mode, args = _fake(((2, 8, 12, 128, 128), torch.float32), ((2, 8, 12, 4, 128), BF16),
                       ((2, 8, 12, 4, 128), BF16), ((2, 8, 12, 4, 128), torch.float32),
                       ((2, 8, 12, 4), torch.float32), ((5,), torch.int32), ((5,), torch.int32))
    with mode:
        assert torch.ops.kiln.kda_replayssm_fold(*args) is None


@pytest.mark.parametrize("name", list(cases.CASES))
def test_eager_op_equals_wrapper_interpreted(name):
    case = cases.make(name, "cpu", 1)
    cases.assert_same(case, cases.run_op(case), cases.run_wrapper(case),
                      f"{name}: torch.ops.kiln.{case.op} vs the wrapper")


def test_in_place_op_writes_its_argument():
    """concat_mla_k's result (a torch.cat written from docs/kernels/mla_cache.md) lands in k."""
    case = cases.make("concat_mla_k", "cpu", 2)
    k, nope, rope = case.args
    torch.ops.kiln.concat_mla_k(k, nope, rope)
    want = torch.cat([nope, rope.expand(-1, k.shape[1], -1)], dim=-1)
    assert torch.equal(k.view(torch.int16), want.view(torch.int16))


def test_ops_match_references_written_from_the_spec():
    """Not only op == wrapper: a few ops against the math of docs/kernels (so that two equal
    buffers of uninitialized memory cannot pass)."""
    g = torch.Generator().manual_seed(11)
    ids = torch.randint(0, 896, (7, 16), generator=g, dtype=torch.int32)
    w = torch.rand((7, 16), generator=g)
    want = (ids << 16) | (w.to(BF16).view(torch.int16).to(torch.int32) & 0xFFFF)  # §3.1
    assert torch.equal(torch.ops.kiln.pack_topk_ids(ids, w), want)

    x = (torch.randn((6, 512), generator=g) * 5).to(BF16)  # §8.2(a)
    q, s = torch.ops.kiln.per_token_group_quant_fp8(x)
    xg = x.float().reshape(6, 4, 128)
    s_ref = xg.abs().amax(-1).clamp(min=1e-10) / torch.full((6, 4), 448.0)
    q_ref = (xg / s_ref[..., None]).clamp(-448, 448).to(F8).reshape(6, 512)
    assert torch.equal(s, s_ref) and torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8))

    x = (torch.randn((5, 512), generator=g) * 3).to(BF16)  # §4.1, 1 bf16 ulp (rounding)
    gt, up = x[:, :256].float(), x[:, 256:].float()
    ref = 4.0 * torch.tanh(gt / 4.0) * torch.sigmoid(gt) * (25.0 * torch.tanh(up / 25.0))
    torch.testing.assert_close(torch.ops.kiln.situ_and_mul(x).float(), ref, rtol=2**-7,
                               atol=1e-6)

    kv_c, k_pe, loc = cases._scatter_inputs(g, 20, 64, False)  # §3.8: an exact copy
    cache = torch.randn((64, 576), generator=g).to(BF16)
    ref = cache.clone()
    keep = loc >= 0
    ref[loc[keep]] = torch.cat([kv_c[keep], k_pe[keep]], dim=-1)
    torch.ops.kiln.mla_kv_scatter(kv_c, k_pe, loc, cache)
    assert torch.equal(cache.view(torch.int16), ref.view(torch.int16))


@pytest.mark.parametrize("name", [n for n in cases.CASES if cases.make(n, "cpu", 0).defined])
def test_opcheck_interpreted(name):
    case = cases.make(name, "cpu", 2)
    torch.library.opcheck(getattr(torch.ops.kiln, case.op).default, case.args, case.kwargs)


@pytest.mark.parametrize("name", list(cases.CASES))
def test_compiled_op_equals_eager_interpreted(name):
    torch._dynamo.reset()
    case = cases.make(name, "cpu", 3)
    op = getattr(torch.ops.kiln, case.op)

    def fn(*args, **kwargs):
        return op(*args, **kwargs)

    got = cases.run_op(case, fn=torch.compile(fn, fullgraph=True, backend="aot_eager"))
    cases.assert_same(case, got, cases.run_op(case), f"{name}: compiled vs eager")


def test_compiled_pipeline_equals_eager_interpreted():
    torch._dynamo.reset()
    compiled = torch.compile(cases.pipeline, fullgraph=True, backend="aot_eager")
    for seed in (4, 5):
        inputs = cases.pipeline_inputs("cpu", seed)
        got = cases.run_pipeline(compiled, inputs)
        want = cases.run_pipeline(cases.pipeline, inputs)
        for i, (a, b) in enumerate(zip(got, want)):
            assert a.dtype == b.dtype and a.shape == b.shape, f"output {i}"
            assert torch.equal(cases.bits(a), cases.bits(b)), f"seed {seed}: output {i}"


def test_wrapper_errors_pass_through(monkeypatch):
    with pytest.raises(TypeError, match="situ_and_mul: input must be bfloat16 or float32"):
        torch.ops.kiln.situ_and_mul(torch.zeros(4, 16, dtype=torch.float16))
    k = torch.zeros(2, 3, 192, dtype=BF16)
    with pytest.raises(ValueError, match="k_nope must have shape"):
        torch.ops.kiln.concat_mla_k(k, k[..., :100], k[:, :1, :64])
    from kernels_dsl.kimi_k3 import tensor_hash

    monkeypatch.setattr(tensor_hash.tensor_hash_partials_kernel, "interpret", False)
    with pytest.raises(ValueError, match="gpu_tensor_hash: t must be a CUDA tensor"):
        torch.ops.kiln.gpu_tensor_hash(torch.zeros(4))


# ---------------------------------------------------------------------------
# Collectives: they need peers (no interpreter run); schemas, fakes, checks, the planner
# ---------------------------------------------------------------------------

from kernels_dsl.kimi_k3 import _launch as L  # noqa: E402
from kernels_dsl.kimi_k3 import allreduce as A  # noqa: E402
from kiln import torch_library  # noqa: E402

COLLECTIVES = ["allreduce", "sp_reduce_scatter", "sp_all_gather", "allreduce_rmsnorm",
               "finalize_push_norm", "gemm_allreduce", "gemm_allgather"]


def test_collective_ops_are_listed_apart():
    assert list(kops.COLLECTIVE_OPS) == COLLECTIVES
    assert not set(kops.COLLECTIVE_OPS) & set(kops.OPS)


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collective_schema_mutates_only_the_workspace(name):
    schema = getattr(torch.ops.kiln, name).default._schema
    args = [a.name for a in schema.arguments]
    i = args.index("workspace")
    assert args[i:i + 3] == ["workspace", "peers", "rank"]
    assert {a.name for a in schema.arguments
            if a.alias_info is not None and a.alias_info.is_write} == {"workspace"}
    assert len(schema.returns) == (2 if name in ("allreduce_rmsnorm", "finalize_push_norm")
                                   else 1)
    assert all(r.alias_info is None for r in schema.returns)


def _ws_specs(world, nbytes=1 << 16):
    return [((nbytes,), torch.uint8), ((world,), torch.int64), (1, None)]


COLLECTIVE_FAKE_CASES = [
    ("allreduce", [((4096,), BF16)] + _ws_specs(4), {}, [((4096,), BF16)]),
    ("allreduce", [((3, 7168), BF16)] + _ws_specs(2), {"residual": None}, [((3, 7168), BF16)]),
    ("sp_reduce_scatter", [((8, 7168), BF16)] + _ws_specs(4), {}, [((2, 7168), BF16)]),
    ("sp_all_gather", [((2, 7168), BF16)] + _ws_specs(4), {}, [((8, 7168), BF16)]),
    ("allreduce_rmsnorm", [((5, 3584), BF16)] + _ws_specs(2) + [((3584,), BF16)], {},
     [((5, 3584), BF16), ((5, 3584), BF16)]),
    ("allreduce_rmsnorm", [((6, 3584), BF16)] + _ws_specs(8) + [((3584,), BF16)],
     {"norm_rows": 2}, [((6, 3584), BF16), ((2, 3584), BF16)]),
    ("finalize_push_norm", [((80, 3584), BF16), ((5, 16), torch.int32),
                            ((5, 16), torch.float32)] + _ws_specs(2) + [((3584,), BF16)], {},
     [((5, 3584), BF16), ((5, 3584), BF16)]),
    ("gemm_allreduce", [((9, 256), BF16), ((7168, 256), BF16)] + _ws_specs(8), {},
     [((16, 7168), BF16)]),
    ("gemm_allgather", [((3, 3584), BF16), ((7168, 3584), BF16), ((7168,), BF16)]
     + _ws_specs(8), {}, [((3, 7168), BF16)]),
]


@pytest.mark.parametrize("op,inputs,kwargs,expected", COLLECTIVE_FAKE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(COLLECTIVE_FAKE_CASES)])
def test_collective_fakes_have_the_documented_shapes(op, inputs, kwargs, expected):
    mode, args = _fake(*inputs)
    with mode:
        outs = getattr(torch.ops.kiln, op)(*args, **kwargs)
    assert _meta(outs) == expected


@pytest.mark.parametrize("op,inputs,message", [
    ("sp_reduce_scatter", [((6, 16), BF16)] + _ws_specs(4), "multiple of the world size 4"),
    ("allreduce_rmsnorm", [((16,), BF16)] + _ws_specs(2) + [((16,), BF16)], "must be 2-D"),
])
def test_collective_fakes_raise_on_bad_shapes(op, inputs, message):
    mode, args = _fake(*inputs)
    with mode, pytest.raises(ValueError, match=message):
        getattr(torch.ops.kiln, op)(*args)


def _buffer(world=2, rank=0, elements=4096):
    """A stand-in SymmetricBuffer on the CPU (what symmetric_workspace reads of one)."""
    import types

    nbytes = A.workspace_bytes(world, elements)
    mem = torch.zeros(nbytes, dtype=torch.uint8)
    peers = torch.zeros(world, dtype=torch.int64)
    return types.SimpleNamespace(world=world, rank=rank, nbytes=nbytes, peer_table=peers,
                                 local=lambda dtype=None: mem.view(dtype or torch.uint8))


def test_symmetric_workspace_gives_the_ops_arguments():
    buf = _buffer(world=4, rank=3)
    ws = kops.symmetric_workspace(buf)
    assert ws.workspace.dtype == torch.uint8 and ws.workspace.numel() == buf.nbytes
    assert ws.peers is buf.peer_table and ws.rank == 3
    view = kops.symmetric_view("t", *ws)
    assert (view.world, view.rank, view.nbytes) == (4, 3, buf.nbytes)
    status = view.local(torch.int32, (1,), 4 * A.STATUS_WORD)
    status.fill_(7)
    assert ws.workspace.view(torch.int32)[A.STATUS_WORD] == 7


def _x(n=4096):
    return torch.zeros(n, dtype=BF16)


@pytest.mark.parametrize("call,exc,message", [
    (lambda ws: torch.ops.kiln.allreduce(_x(), ws.workspace.clone(), ws.peers, ws.rank),
     ValueError, "workspace is not a symmetric workspace"),
    (lambda ws: torch.ops.kiln.allreduce(_x(), ws.workspace, ws.peers.clone(), ws.rank),
     ValueError, "not those of one SymmetricBuffer"),
    (lambda ws: torch.ops.kiln.allreduce(_x(), ws.workspace, ws.peers, 2),
     ValueError, r"rank must be in \[0, 2\)"),
    (lambda ws: torch.ops.kiln.allreduce(_x(), ws.workspace.view(torch.int32), ws.peers, 0),
     ValueError, "workspace must be a contiguous uint8"),
    (lambda ws: torch.ops.kiln.allreduce(_x(), ws.workspace, ws.peers.int(), 0),
     ValueError, "peers must be the int64"),
    (lambda ws: torch.ops.kiln.allreduce(_x().half(), *ws), TypeError, "x must be bfloat16"),
    (lambda ws: torch.ops.kiln.allreduce(_x(8192), *ws), ValueError, "workspace holds"),
    (lambda ws: torch.ops.kiln.allreduce(_x(), *ws, _x(2048)), ValueError,
     r"residual must have shape \[4096\]"),
    (lambda ws: torch.ops.kiln.sp_reduce_scatter(_x(4095), *ws), ValueError,
     "multiple of the world size"),
    (lambda ws: torch.ops.kiln.sp_all_gather(_x(4097), *ws), ValueError, "must be even"),
    (lambda ws: torch.ops.kiln.allreduce_rmsnorm(_x(3584).view(1, 3584), *ws,
                                                 torch.ones(100, dtype=BF16)),
     ValueError, r"weight must have shape \[3584\]"),
    (lambda ws: torch.ops.kiln.finalize_push_norm(
        torch.zeros(4, 3584, dtype=BF16), torch.zeros(1, 16, dtype=torch.int64),
        torch.zeros(1, 16), *ws, torch.ones(3584, dtype=BF16)),
     TypeError, "topk_ids must be int32"),
])
def test_collective_ops_raise_on_bad_input_before_any_launch(call, exc, message):
    ws = kops.symmetric_workspace(_buffer())
    with pytest.raises(exc, match=message):
        call(ws)


class _Kernel:
    """A JIT kernel stand-in: counts warm-ups and launches."""

    def __init__(self):
        self.calls = []

    def warmup(self, grid, *args, **kwargs):
        self.calls.append("warmup")

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append("launch")


#: The planner test op's library and current wrapper.
_PLANNER_TEST = {}


@pytest.fixture
def planned_op(monkeypatch):
    """An op ``kiln_planner_test::warm_me`` whose CPU kernel is the planner (``_planned``,
    as the CUDA kernel is where the package has no C++ kernel), with a launch key for CPU
    tensors; its wrapper launches one stand-in kernel through the K3 launch path."""
    monkeypatch.setattr(L, "jit_allowed", lambda: True)
    monkeypatch.setattr(torch_library, "_launch_key", lambda args: ("key",))
    kernel = _Kernel()

    def warm_me(x: torch.Tensor) -> torch.Tensor:
        L.launch(kernel, "k", (1,), (x,), {}, 4)
        return torch.empty_like(x)

    qualname = "kiln_planner_test::warm_me"
    if qualname not in torch_library._wrappers:
        lib = torch.library.Library("kiln_planner_test", "FRAGMENT")
        lib.define("warm_me(Tensor x) -> Tensor")
        torch_library._wrappers[qualname] = lambda *a: _PLANNER_TEST["fn"](*a)
        lib.impl("warm_me", torch_library._planned(qualname,
                                                   lambda *a: _PLANNER_TEST["fn"](*a)), "CPU")
        torch.library.register_fake(qualname, torch.empty_like, lib=lib)
        _PLANNER_TEST["lib"] = lib
    _PLANNER_TEST["fn"] = warm_me
    torch_library.plans[qualname].clear()
    yield kernel, torch_library.plans[qualname]
    torch_library.plans[qualname].clear()


def test_compile_only_records_no_plan(planned_op):
    kernel, table = planned_op
    x = torch.zeros(4)
    with L.compile_only():
        torch.ops.kiln_planner_test.warm_me(x)
    assert kernel.calls == ["warmup"] and table == {}     # no empty plan left behind
    torch.ops.kiln_planner_test.warm_me(x)
    assert kernel.calls == ["warmup", "launch"] and list(table) == [("key",)]


def test_compile_only_does_not_replay_a_plan(planned_op, monkeypatch):
    kernel, table = planned_op
    replayed = []
    plan = object.__new__(torch_library.Plan)
    plan.run = lambda args: replayed.append(1)
    table[("key",)] = plan
    x = torch.zeros(4)
    torch.ops.kiln_planner_test.warm_me(x)
    assert replayed == [1] and kernel.calls == []
    with L.compile_only():
        torch.ops.kiln_planner_test.warm_me(x)
    assert replayed == [1] and kernel.calls == ["warmup"]


def test_compile_only_reaches_collective_ops(monkeypatch):
    """Inside compile_only a collective op runs its wrapper, whose launch warms up (the
    stand-in kernel counts it) and launches nothing."""
    kernel = _Kernel()
    monkeypatch.setattr(L, "jit_allowed", lambda: True)
    monkeypatch.setattr(A, "push_kernel", kernel)
    ws = kops.symmetric_workspace(_buffer())
    x = torch.ones(4096, dtype=BF16)
    with L.compile_only():
        out = torch.ops.kiln.allreduce(x, *ws)
    assert kernel.calls == ["warmup"] and out.shape == x.shape and out is not x


def test_compiled_function_is_compiled_inside_compile_only(planned_op):
    """torch.compile compiles a function called within compile_only (its op calls warm up),
    and the compiled code launches afterwards without compiling again."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    kernel, _ = planned_op
    compiled = torch.compile(lambda x: torch.ops.kiln_planner_test.warm_me(x) + 1,
                             fullgraph=True, backend="aot_eager")
    x = torch.zeros(4)
    with L.compile_only():
        compiled(x)
    graphs = counters["stats"]["unique_graphs"]
    assert graphs >= 1 and kernel.calls == ["warmup"]
    compiled(x)
    assert counters["stats"]["unique_graphs"] == graphs and kernel.calls[-1] == "launch"
