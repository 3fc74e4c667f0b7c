"""Autotuning: pick the fastest of several configurations of a kernel, once per
key, and remember the choice on disk and in bundles.

    @kiln.autotune(configs=[kiln.Config({"BLOCK": 1024}, num_warps=4),
                            kiln.Config({"BLOCK": 2048}, num_warps=8)],
                   key=["n"])
    @kiln.jit
    def add(x_ptr, y_ptr, n, BLOCK: kl.constexpr): ...

    add[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, y, n)

On the first launch for a value of the key arguments (ints and floats by value,
tensors by dtype) each config is benchmarked with CUDA events (warm-up, then
the median of ``rep`` runs) on the call's own arguments, and the fastest is
used from then on. The choice is stored in the kernel cache directory
(``<KILN_CACHE_DIR>/autotune/<hash>.json``, hash of the kernel's source hash,
the compiler version, the arch, the key names and values and the config list),
so later processes do not tune again; a per-key file lock makes concurrent
processes tune a key once.

Bundles: ``kiln.aot.Spec(add, signature=..., tuned={(4096,): cfg, ...})`` (or
``tuned=add.tuned_configs("sm_90a")``) compiles each chosen config and records
an ``"autotune"`` entry (key names, the key values it was chosen for, the
config) in the kernel's manifest record; ``kiln.autotune.select(bundle, "add",
n=4096)`` returns the tuned kernel without tuning.

In interpreter mode (``KILN_INTERPRET=1``) nothing is timed: the first config
runs, unless the autotuner was given a ``timer``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import statistics
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from . import cache as _cache
from . import runtime as _rt
from .jit import JITFunction

__all__ = ["Autotuner", "Config", "autotune", "select"]


class Config:
    """Constexpr values (``kwargs``) and launch options (``num_warps``) to try."""

    def __init__(self, kwargs: Mapping[str, Any], num_warps: Optional[int] = None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps

    def to_dict(self) -> Dict[str, Any]:
        return {"kwargs": dict(sorted(self.kwargs.items())), "num_warps": self.num_warps}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Config":
        return cls(d["kwargs"], d.get("num_warps"))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Config) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in sorted(self.kwargs.items())]
        if self.num_warps is not None:
            parts.append(f"num_warps={self.num_warps}")
        return f"Config({', '.join(parts)})"


def _key_value(v: Any) -> Any:
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    dt = getattr(v, "dtype", None)
    if dt is not None:
        return str(dt).replace("torch.", "")
    return type(v).__name__


def cuda_event_timer(fn: Callable[[], None], warmup: int = 10, rep: int = 50) -> float:
    """Median time of ``fn()`` in milliseconds, with CUDA events (needs torch and a GPU)."""
    import torch  # noqa: PLC0415

    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
    torch.cuda.synchronize()
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


class Autotuner:
    """A ``@kiln.jit`` kernel launched with the best of ``configs`` per key."""

    def __init__(self, fn: Any, configs: Sequence[Config], key: Sequence[str],
                 timer: Optional[Callable[[Callable[[], None]], float]] = None,
                 arch: Optional[str] = None):
        if not isinstance(fn, JITFunction):
            raise TypeError("kiln.autotune decorates a @kiln.jit kernel (put @kiln.autotune "
                            "above @kiln.jit)")
        if not configs:
            raise ValueError("kiln.autotune needs at least one Config")
        for c in configs:
            if not isinstance(c, Config):
                raise TypeError(f"configs must be kiln.Config objects, got {c!r}")
            unknown = set(c.kwargs) - set(fn.source.constexpr_params)
            if unknown:
                raise ValueError(f"{c!r} sets {sorted(unknown)}, which are not constexpr "
                                 f"parameters of {fn.__name__}")
        missing = [k for k in key if k not in fn.source.param_names]
        if missing:
            raise ValueError(f"autotune key names {missing}, which are not parameters of "
                             f"{fn.__name__}")
        self.fn = fn
        self.configs = list(configs)
        self.key = list(key)
        self.timer = timer
        self.arch = arch  # None: the current device's (or "cpu" when interpreting)
        #: key values -> chosen config, for this process.
        self.best: Dict[Tuple[Any, ...], Config] = {}
        #: Number of configs benchmarked by this object (tests).
        self.benchmarks = 0
        functools.update_wrapper(self, fn, updated=())

    # -- keys ------------------------------------------------------------------------
    def key_values(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Tuple[Any, ...]:
        params = self.fn.source.params
        tuned = set(self.configs[0].kwargs)
        sig = inspect.Signature([p.replace(default=None) if p.name in tuned else p
                                 for p in params])
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"kernel '{self.fn.__name__}': {e}") from None
        bound.apply_defaults()
        return tuple(_key_value(bound.arguments[k]) for k in self.key)

    def _arch(self) -> str:
        if self.arch:
            return self.arch
        if self.fn.interpret:
            return "cpu"
        return _rt.device_arch()

    def disk_key(self, values: Tuple[Any, ...], arch: str) -> str:
        doc = json.dumps({"kernel": self.fn.source_hash,
                          "compiler": _cache.compiler_fingerprint(),
                          "arch": arch, "key": self.key, "values": list(values),
                          "configs": [c.to_dict() for c in self.configs]},
                         sort_keys=True, default=repr)
        return hashlib.sha256(("kiln-autotune/1\0" + doc).encode()).hexdigest()

    @staticmethod
    def _dir() -> Optional[str]:
        d = _cache.cache_dir()
        return os.path.join(d, "autotune") if d else None

    def _load(self, key: str) -> Optional[Config]:
        d = self._dir()
        if d is None:
            return None
        try:
            with open(os.path.join(d, key + ".json")) as f:
                doc = json.load(f)
            config = Config.from_dict(doc["config"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or corrupt: tune again
        return config if config in self.configs else None

    # -- tuning ----------------------------------------------------------------------
    def _launch(self, config: Config, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                stream: Any = None) -> None:
        clash = set(config.kwargs) & set(kwargs)
        if clash:
            raise TypeError(f"kernel '{self.fn.__name__}': {sorted(clash)} are chosen by "
                            f"autotuning and must not be passed")
        self.fn.run(grid, *args, stream=stream, num_warps=config.num_warps,
                    **kwargs, **config.kwargs)

    def benchmark(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
                  ) -> List[float]:
        """Time of each config in milliseconds (``inf`` for configs that fail to
        compile or launch)."""
        timer = self.timer or cuda_event_timer
        times = []
        for config in self.configs:
            self.benchmarks += 1
            try:
                times.append(float(timer(functools.partial(self._launch, config, grid, args,
                                                           kwargs))))
            except Exception:  # noqa: BLE001 - a config that does not work loses
                times.append(float("inf"))
        return times

    def choose(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Config:
        """The config for these arguments: remembered, read from disk, or tuned now."""
        values = self.key_values(args, kwargs)
        config = self.best.get(values)
        if config is not None:
            return config
        if self.fn.interpret and self.timer is None:
            config = self.configs[0]
        elif len(self.configs) == 1:
            config = self.configs[0]
        else:
            arch = self._arch()
            key = self.disk_key(values, arch)
            config = self._load(key)
            if config is None:
                d = self._dir()
                if d is None:
                    config = self._tune(grid, args, kwargs, values, arch, None)
                else:
                    with _cache.FileLock(os.path.join(d, key + ".lock")):
                        config = self._load(key) or self._tune(grid, args, kwargs, values,
                                                               arch, key)
        self.best[values] = config
        return config

    def _tune(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
              values: Tuple[Any, ...], arch: str, key: Optional[str]) -> Config:
        times = self.benchmark(grid, args, kwargs)
        best = min(range(len(times)), key=lambda i: times[i])
        if times[best] == float("inf"):
            raise RuntimeError(f"kiln.autotune: every config of '{self.fn.__name__}' failed "
                               f"for {dict(zip(self.key, values))}")
        config = self.configs[best]
        d = self._dir()
        if key is not None and d is not None:
            doc = {"kernel": self.fn.__name__, "source_hash": self.fn.source_hash,
                   "arch": arch, "key": self.key, "values": list(values),
                   "config": config.to_dict(),
                   "timings_ms": {repr(c): t for c, t in zip(self.configs, times)}}
            try:
                _cache.atomic_write(os.path.join(d, key + ".json"),
                                    json.dumps(doc, sort_keys=True, indent=1).encode())
            except OSError:
                pass
        return config

    def tuned_configs(self, arch: str) -> Dict[Tuple[Any, ...], Config]:
        """Every choice known for ``arch`` (this process's and the disk cache's),
        for ``kiln.aot.Spec(..., tuned=...)``."""
        out: Dict[Tuple[Any, ...], Config] = {}
        d = self._dir()
        if d is not None and os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                if not name.endswith(".json"):
                    continue
                try:
                    with open(os.path.join(d, name)) as f:
                        doc = json.load(f)
                except (OSError, ValueError):
                    continue
                if doc.get("source_hash") == self.fn.source_hash and doc.get("arch") == arch \
                        and doc.get("key") == self.key and \
                        name[:-5] == self.disk_key(tuple(doc["values"]), arch):
                    out[tuple(doc["values"])] = Config.from_dict(doc["config"])
        if self.arch in (None, arch):
            out.update(self.best)
        return out

    # -- launch ----------------------------------------------------------------------
    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return functools.partial(self.run, grid)

    def run(self, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
        config = self.choose(grid, args, kwargs)
        if callable(grid):
            outer = grid
            grid = lambda meta: outer({**meta, **config.kwargs})  # noqa: E731
        self._launch(config, grid, args, kwargs, stream)

    def __repr__(self) -> str:
        return f"<kiln.autotune {self.fn.__name__} key={self.key} configs={len(self.configs)}>"


def autotune(configs: Sequence[Config], key: Sequence[str],
             timer: Optional[Callable[[Callable[[], None]], float]] = None) -> Callable:
    """Decorator over ``@kiln.jit``: ``@kiln.autotune(configs=[...], key=["n"])``.
    ``timer(fn) -> ms`` replaces the CUDA-event timer (tests, custom benchmarks)."""

    def wrap(fn: Any) -> Autotuner:
        return Autotuner(fn, configs, key, timer=timer)

    return wrap


def select(bundle: Any, name: str, **key_values: Any) -> Any:
    """The kernel a bundle's autotune records chose for ``key_values`` (a
    ``LaunchableKernel``); no tuning happens."""
    choices = []
    for meta in bundle.kernels():
        rec = meta.get("autotune")
        if meta.get("name") != name or not rec:
            continue
        missing = set(rec["key"]) - set(key_values)
        if missing:
            raise TypeError(f"kernel '{name}' is tuned on {rec['key']}; pass "
                            f"{', '.join(sorted(missing))}")
        wanted = [_key_value(key_values[k]) for k in rec["key"]]
        choices.append(rec["values"])
        if wanted in rec["values"]:
            return bundle.kernel(name, **meta.get("constexprs", {}))
    if not choices:
        raise KeyError(f"the bundle has no autotune records for kernel '{name}'")
    raise KeyError(f"kernel '{name}' was not tuned for {key_values}; tuned for "
                   f"{sorted(v for c in choices for v in c)}")


def expand_tuned(kernel: Any, tuned: Mapping[Any, Config], key: Iterable[str]
                 ) -> List[Tuple[Config, List[List[Any]]]]:
    """(config, key values it was chosen for) pairs, in a deterministic order."""
    groups: Dict[str, Tuple[Config, List[List[Any]]]] = {}
    for values, config in tuned.items():
        vals = list(values) if isinstance(values, tuple) else [values]
        k = json.dumps(config.to_dict(), sort_keys=True)
        groups.setdefault(k, (config, []))[1].append(vals)
    return [(c, sorted(v, key=repr)) for _, (c, v) in sorted(groups.items())]


# ``kiln.autotune`` is the decorator (``import kiln.autotune as m`` gives it too):
# let it carry the module's API so ``kiln.autotune.select(...)`` works either way.
autotune.Autotuner = Autotuner  # type: ignore[attr-defined]
autotune.Config = Config  # type: ignore[attr-defined]
autotune.select = select  # type: ignore[attr-defined]
autotune.cuda_event_timer = cuda_event_timer  # type: ignore[attr-defined]
