"""kiln.autotune on the CPU: selection with a fake timer, the in-memory and on-disk
caches of the choice, the interpreter fallback, and autotune records in bundles.
(Timing with CUDA events is exercised on the GPU machine.)"""

import json
import os

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln.autotune import Autotuner, Config, select


@kiln.jit
def _scale(x_ptr, y_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(y_ptr + offs, kl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


CONFIGS = [Config({"BLOCK": 256}, num_warps=2), Config({"BLOCK": 1024}, num_warps=4),
           Config({"BLOCK": 4096}, num_warps=8)]


class FakeTimer:
    """Pretends BLOCK=1024 is fastest for n < 10000 and BLOCK=4096 above; records calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, fn):
        launch_args = fn.args  # functools.partial(_launch, config, grid, args, kwargs)
        config, args = launch_args[0], launch_args[2]
        n = args[2]
        self.calls.append((config.kwargs["BLOCK"], n))
        best = 1024 if n < 10000 else 4096
        return 1.0 if config.kwargs["BLOCK"] == best else 2.0 + config.kwargs["BLOCK"] / 1e4


class RecordingJIT:
    """Stands in for JITFunction.run: records launches instead of touching CUDA."""

    def __init__(self, monkeypatch, kernel):
        self.launches = []
        monkeypatch.setattr(kernel, "run", self.run)

    def run(self, grid, *args, stream=None, num_warps=None, **kwargs):
        if callable(grid):
            grid = grid(dict(kwargs, n=args[2]))
        self.launches.append((grid, num_warps, kwargs))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    return tmp_path


def make_tuner(timer, kernel=None):
    return Autotuner(kernel or kiln.jit(_scale.fn), CONFIGS, key=["n"], timer=timer,
                     arch="sm_90a")


def test_picks_the_fastest_and_remembers(cache, monkeypatch):
    timer = FakeTimer()
    tuner = make_tuner(timer)
    rec = RecordingJIT(monkeypatch, tuner.fn)
    x = np.zeros(4096, np.float32)
    grid = lambda meta: (kiln.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    tuner[grid](x, x, 4096)
    assert [c[0] for c in timer.calls] == [256, 1024, 4096]  # each config benchmarked once
    assert rec.launches[-1] == ((4,), 4, {"BLOCK": 1024})  # the grid sees the config
    tuner[grid](x, x, 4096)
    assert len(timer.calls) == 3  # remembered in memory
    tuner[grid](x, x, 20000)
    assert len(timer.calls) == 6 and rec.launches[-1] == ((5,), 8, {"BLOCK": 4096})
    # On disk: a new tuner (another process) does not tune again.
    timer2 = FakeTimer()
    tuner2 = make_tuner(timer2)
    rec2 = RecordingJIT(monkeypatch, tuner2.fn)
    tuner2[grid](x, x, 4096)
    assert timer2.calls == [] and rec2.launches[-1][2] == {"BLOCK": 1024}
    files = sorted(os.listdir(cache / "autotune"))
    assert len([f for f in files if f.endswith(".json")]) == 2
    doc = json.loads((cache / "autotune" / [f for f in files if f.endswith(".json")][0])
                     .read_text())
    assert doc["key"] == ["n"] and doc["arch"] == "sm_90a" and "timings_ms" in doc
    assert tuner2.tuned_configs("sm_90a") == {(4096,): CONFIGS[1], (20000,): CONFIGS[2]}
    assert tuner2.tuned_configs("sm_100a") == {}


def test_key_changes_with_configs_and_arch(cache):
    tuner = make_tuner(FakeTimer())
    k = tuner.disk_key((4096,), "sm_90a")
    assert k != tuner.disk_key((4096,), "sm_100a")
    assert k != tuner.disk_key((4097,), "sm_90a")
    other = Autotuner(tuner.fn, CONFIGS[:2], key=["n"], arch="sm_90a")
    assert k != other.disk_key((4096,), "sm_90a")


def test_corrupt_record_is_retuned(cache, monkeypatch):
    timer = FakeTimer()
    tuner = make_tuner(timer)
    RecordingJIT(monkeypatch, tuner.fn)
    x = np.zeros(16, np.float32)
    tuner[(1,)](x, x, 16)
    path = cache / "autotune" / (tuner.disk_key((16,), "sm_90a") + ".json")
    path.write_text("{not json")
    tuner2 = make_tuner(timer)
    RecordingJIT(monkeypatch, tuner2.fn)
    tuner2[(1,)](x, x, 16)
    assert len(timer.calls) == 6
    assert json.loads(path.read_text())["config"]["kwargs"] == {"BLOCK": 1024}


def test_failing_configs_lose(cache, monkeypatch):
    def timer(fn):
        if fn.args[0].kwargs["BLOCK"] != 4096:
            raise RuntimeError("too many resources requested")
        return 3.0

    tuner = make_tuner(timer)
    rec = RecordingJIT(monkeypatch, tuner.fn)
    x = np.zeros(16, np.float32)
    tuner[(1,)](x, x, 16)
    assert rec.launches[-1][2] == {"BLOCK": 4096}


def test_interpreter_runs_the_first_config_without_timing(cache):
    tuner = Autotuner(kiln.jit(interpret=True)(_scale.fn), CONFIGS, key=["n"])
    x = np.arange(3000, dtype=np.float32)
    y = np.zeros_like(x)
    tuner[lambda meta: (kiln.cdiv(meta["n"], meta["BLOCK"]),)](x, y, 3000)
    np.testing.assert_array_equal(y, x * 2)
    assert tuner.benchmarks == 0 and not (cache / "autotune").exists()


def test_decorator_and_errors():
    tuned = kiln.autotune(configs=CONFIGS, key=["n"])(kiln.jit(_scale.fn))
    assert isinstance(tuned, Autotuner) and tuned.key == ["n"]
    assert kiln.autotune.select is select and kiln.Config is Config
    with pytest.raises(TypeError, match="@kiln.jit"):
        kiln.autotune(configs=CONFIGS, key=["n"])(_scale.fn)
    with pytest.raises(ValueError, match="not constexpr parameters"):
        Autotuner(_scale, [Config({"n": 3})], key=["n"])
    with pytest.raises(ValueError, match="not parameters"):
        Autotuner(_scale, CONFIGS, key=["m"])
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="chosen by autotuning"):
        Autotuner(_scale, CONFIGS[:1], key=["n"])._launch(CONFIGS[0], (1,), (x, x, 4),
                                                           {"BLOCK": 4})


class FakeBundle:
    def __init__(self, metas):
        self.metas = metas
        self.asked = None

    def kernels(self):
        return self.metas

    def kernel(self, name, **constexprs):
        self.asked = (name, constexprs)
        return "launchable"


def test_select_from_bundle_records():
    metas = [{"name": "scale", "constexprs": {"BLOCK": 1024},
              "autotune": {"key": ["n"], "values": [[4096], [8192]],
                           "config": CONFIGS[1].to_dict()}},
             {"name": "scale", "constexprs": {"BLOCK": 4096},
              "autotune": {"key": ["n"], "values": [[1 << 20]], "config": CONFIGS[2].to_dict()}}]
    b = FakeBundle(metas)
    assert select(b, "scale", n=8192) == "launchable"
    assert b.asked == ("scale", {"BLOCK": 1024})
    select(b, "scale", n=1 << 20)
    assert b.asked == ("scale", {"BLOCK": 4096})
    with pytest.raises(KeyError, match="not tuned for"):
        select(b, "scale", n=5)
    with pytest.raises(TypeError, match="pass n"):
        select(b, "scale")
    with pytest.raises(KeyError, match="no autotune records"):
        select(b, "other", n=5)


def test_aot_spec_expands_tuned_configs():
    from kiln.aot import Spec

    tuner = Autotuner(kiln.jit(_scale.fn), CONFIGS, key=["n"])
    spec = Spec(tuner, name="scale", signature={"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"},
                divisibility=["x_ptr", "y_ptr"],
                tuned={(4096,): CONFIGS[1], (8192,): CONFIGS[1], (1 << 20,): CONFIGS[2]})
    specs = spec.expand()
    assert [(s.constexprs, s.num_warps) for s in specs] == [({"BLOCK": 1024}, 4),
                                                            ({"BLOCK": 4096}, 8)]
    assert specs[0].autotune == {"key": ["n"], "values": [[4096], [8192]],
                                 "config": {"kwargs": {"BLOCK": 1024}, "num_warps": 4}}
    assert all(s.kernel is tuner.fn for s in specs)
    with pytest.raises(ValueError, match="tuned="):
        Spec(tuner, signature={}).expand()
    with pytest.raises(ValueError, match="needs an @kiln.autotune"):
        Spec(_scale, signature={}, tuned={(1,): CONFIGS[0]}).expand()


def test_bundle_records_autotune(tmp_path):
    pytest.importorskip("kiln._C")
    pytest.importorskip("kiln._runtime")
    from kiln.aot import Spec, build
    from kiln.runtime import Bundle

    tuner = Autotuner(kiln.jit(_scale.fn), CONFIGS, key=["n"])
    spec = Spec(tuner, name="scale", signature={"x_ptr": "*f32", "y_ptr": "*f32", "n": "i32"},
                tuned={(4096,): CONFIGS[1], (1 << 20,): CONFIGS[2]})
    out = tmp_path / "tuned.kbundle"
    build([spec], ["sm_90a"], str(out), log=lambda s: None)
    b = Bundle(str(out))
    recs = [k["autotune"] for k in b.kernels()]
    assert {tuple(map(tuple, r["values"])) for r in recs} == {((4096,),), ((1 << 20,),)}
    k = select(b, "scale", n=1 << 20)
    assert k is not None
