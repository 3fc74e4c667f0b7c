"""Ahead-of-time compilation of kernel libraries into multi-arch bundles.

A kernel module declares what to precompile::

    AOT_SPECIALIZATIONS = [
        kiln.aot.Spec(kernel, name="situ_and_mul",
                      signature={"x_ptr": "*bf16", "D": "i32"},
                      constexprs={"BLOCK": 2048}, divisibility=["x_ptr", "D"], num_warps=8),
    ]

(``cluster=(x, y, z)`` overrides the kernel's thread-block cluster shape, as
``num_warps`` does its warps; ``archs=("sm_90a",)`` limits a specialization to those archs,
e.g. where its tile does not fit another arch's shared memory.)

and its package's ``__init__`` lists the modules in ``MODULES``. Then::

    python -m kiln.aot kernels_dsl.kimi_k3 --arch sm_90a,sm_100a,sm_103a -o out.kbundle

compiles every specialization for every arch of ``--arch`` it allows (``Spec.archs``) in
parallel threads (the C++ stages release the GIL) and writes the bundle in a deterministic
order. A specialization limited to archs outside ``--arch`` is left out; the runtime then
finds no image of an entry for a device of an arch it lacks ("has no image for this device").
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..autotune import Autotuner, expand_tuned
from ..compiler.compiler import Specialization, compiler_version
from ..compiler.targetinfo import merge_arch_metadata
from ..language.errors import CompilationError
from ..runtime import BundleWriter

DEFAULT_ARCHS = ("sm_90a", "sm_100a", "sm_103a")


@dataclass
class Spec:
    """One specialization of a ``@kiln.jit`` kernel to precompile."""

    kernel: Any
    name: Optional[str] = None
    signature: Mapping[str, str] = field(default_factory=dict)
    constexprs: Mapping[str, Any] = field(default_factory=dict)
    divisibility: Union[Mapping[str, int], Iterable[str], None] = None
    num_warps: Optional[int] = None
    #: Thread-block cluster shape (default: the kernel's ``@kiln.jit(cluster=...)``).
    cluster: Any = None
    #: Register cap a thread (default: the kernel's ``@kiln.jit(maxnreg=...)``).
    maxnreg: Optional[int] = None
    #: For an ``@kiln.autotune`` kernel: key values -> the Config chosen for them
    #: (e.g. ``{(4096,): kiln.Config({"BLOCK": 1024}, num_warps=4)}``, or
    #: ``kernel.tuned_configs("sm_90a")``). Each distinct config becomes one
    #: specialization whose manifest record carries an ``"autotune"`` entry.
    tuned: Optional[Mapping[Any, Any]] = None
    #: The ``"autotune"`` manifest record (set by ``expand``).
    autotune: Optional[Dict[str, Any]] = None
    #: The archs to compile it for (None: every arch of the build); a build compiles it for
    #: the archs it shares with these, and leaves it out where it shares none.
    archs: Optional[Tuple[str, ...]] = None

    def __post_init__(self) -> None:
        if self.archs is not None:
            if isinstance(self.archs, str) or not self.archs:
                raise ValueError(f"Spec '{self.kernel_name}': archs must be a non-empty tuple "
                                 f"of archs (e.g. ('sm_90a',)), got {self.archs!r}")
            self.archs = tuple(self.archs)

    @property
    def kernel_name(self) -> str:
        return self.name or self.kernel.__name__

    def expand(self) -> List["Spec"]:
        """This spec, or for an autotuned kernel one spec per tuned config."""
        if not isinstance(self.kernel, Autotuner):
            if self.tuned is not None:
                raise ValueError(f"Spec '{self.kernel_name}': tuned= needs an @kiln.autotune "
                                 f"kernel")
            return [self]
        if not self.tuned:
            raise ValueError(f"Spec '{self.kernel_name}' names an @kiln.autotune kernel: give "
                             f"tuned={{key values: Config}} (e.g. "
                             f"kernel.tuned_configs(arch)) so the bundle holds tuned configs")
        tuner = self.kernel
        out = []
        for config, values in expand_tuned(tuner, self.tuned, tuner.key):
            out.append(Spec(tuner.fn, name=self.name or tuner.fn.__name__,
                            signature=self.signature,
                            constexprs={**self.constexprs, **config.kwargs},
                            divisibility=self.divisibility,
                            num_warps=config.num_warps or self.num_warps,
                            cluster=self.cluster, maxnreg=self.maxnreg, archs=self.archs,
                            autotune={"key": list(tuner.key), "values": values,
                                      "config": config.to_dict()}))
        return out

    def archs_in(self, archs: Iterable[str]) -> List[str]:
        """The archs of ``archs`` this spec is compiled for (sorted): all of them, or those in
        ``self.archs``."""
        return sorted(a for a in set(archs) if self.archs is None or a in self.archs)

    def sort_key(self) -> Tuple[str, str]:
        spec = Specialization.make(self.signature, self.divisibility, self.constexprs,
                                   self.num_warps or self.kernel.num_warps,
                                   cluster=self.kernel._cluster(self.cluster),
                                   fp_fusion=self.kernel.fp_fusion,
                                   maxnreg=self.kernel._maxnreg(self.maxnreg))
        return self.kernel_name, spec.key()


@dataclass
class Image:
    spec: Spec
    arch: str
    meta: Dict[str, Any]
    cubin: bytes
    tool: str
    seconds: float


def collect(package: str) -> List[Spec]:
    """The specializations declared by ``package`` (its ``MODULES``, or the
    package itself when it declares ``AOT_SPECIALIZATIONS``)."""
    pkg = importlib.import_module(package)
    specs: List[Spec] = list(getattr(pkg, "AOT_SPECIALIZATIONS", []))
    for mod_name in getattr(pkg, "MODULES", []):
        mod = importlib.import_module(f"{package}.{mod_name}")
        found = getattr(mod, "AOT_SPECIALIZATIONS", None)
        if found is None:
            raise ValueError(f"{package}.{mod_name} declares no AOT_SPECIALIZATIONS")
        specs.extend(found)
    specs = [x for s in specs for x in s.expand()]
    seen = {}
    for s in specs:
        key = s.sort_key()
        if key in seen:
            raise ValueError(f"duplicate specialization of '{key[0]}': {key[1]}")
        seen[key] = s
    return [seen[k] for k in sorted(seen)]


def compile_spec(spec: Spec, arch: str) -> Image:
    t0 = time.perf_counter()
    ck = spec.kernel.compile(spec.signature, spec.constexprs, spec.divisibility,
                             num_warps=spec.num_warps, arch=arch, name=spec.kernel_name,
                             cluster=spec.cluster, maxnreg=spec.maxnreg)
    return Image(spec, arch, ck.meta, ck.cubin, ck.cubin_tool or "?", time.perf_counter() - t0)


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def build(specs: Sequence[Spec], archs: Sequence[str], output: str,
          jobs: Optional[int] = None, log: Callable[[str], None] = print) -> List[Image]:
    """Compiles ``specs`` for ``archs`` (each for the archs of ``archs`` it allows:
    ``Spec.archs``; one allowing none of them is left out) and writes the bundle at
    ``output``."""
    archs = sorted(set(archs))
    specs = [x for s in specs for x in s.expand()]
    skipped = [s for s in specs if not s.archs_in(archs)]
    specs = [s for s in specs if s.archs_in(archs)]
    work = [(i, a) for i, s in enumerate(specs) for a in s.archs_in(archs)]
    jobs = jobs or min(len(work), os.cpu_count() or 1) or 1
    t0 = time.perf_counter()
    done = 0
    images: Dict[Tuple[int, str], Image] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(compile_spec, specs[i], a): (i, a) for i, a in work}
        for fut, (i, a) in futures.items():
            img = fut.result()
            done += 1
            images[(i, a)] = img
            consts = ", ".join(f"{k}={v}" for k, v in img.meta["constexprs"].items())
            types = ",".join(p["dtype"] for p in img.meta["params"] if p["kind"] == "ptr")
            log(f"[{done}/{len(work)}] {img.spec.kernel_name}[{consts}] ptrs({types}) {a}: "
                f"{_human(len(img.cubin))} ({img.tool}, {img.seconds * 1000:.0f} ms)")
    total = time.perf_counter() - t0

    writer = BundleWriter(compiler_version())
    ordered: List[Image] = []
    for si, spec in enumerate(specs):
        per_arch = [images[(si, a)] for a in spec.archs_in(archs)]
        meta = merge_arch_metadata(img.meta for img in per_arch)
        if spec.autotune is not None:
            meta = dict(meta, autotune=spec.autotune)
        writer.add_kernel(meta, [(img.arch, "cubin", img.cubin) for img in per_arch])
        ordered.extend(per_arch)
    out_dir = os.path.dirname(os.path.abspath(output))
    os.makedirs(out_dir, exist_ok=True)
    writer.write(output)

    names = sorted({s.kernel_name for s in specs})
    log(f"kiln.aot: {len(specs)} specializations of {len(names)} kernels "
        f"({', '.join(names)}) x {len(archs)} archs ({', '.join(archs)}) -> {output} "
        f"({_human(os.path.getsize(output))})")
    if skipped:
        log(f"  left out: {len(skipped)} specializations for other archs only (" + ", ".join(
            sorted({f"{s.kernel_name} ({', '.join(s.archs)})" for s in skipped})) + ")")
    for a in archs:
        imgs = [img for img in ordered if img.arch == a]
        log(f"  {a}: {len(imgs)} images, {_human(sum(len(i.cubin) for i in imgs))}, "
            f"compile {sum(i.seconds for i in imgs):.2f} s")
    log(f"  total compile time {sum(i.seconds for i in ordered):.2f} s "
        f"(wall {total:.2f} s, {jobs} threads)")
    return ordered


def add_arguments(parser: Any) -> None:
    """The command line's arguments on an ``argparse`` parser (``python -m kiln.aot`` and
    ``kiln aot``)."""
    parser.add_argument("package", help="package declaring AOT_SPECIALIZATIONS "
                                        "(e.g. kernels_dsl.kimi_k3)")
    parser.add_argument("--arch", default=",".join(DEFAULT_ARCHS),
                        help="comma-separated target archs (default: %(default)s)")
    parser.add_argument("-o", "--output", required=True, help="bundle to write")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="compile threads")


def run(args: Any) -> int:
    """Compiles ``args.package`` (parsed ``add_arguments``) into the bundle ``args.output``;
    returns the exit status."""
    if os.getcwd() not in sys.path:  # the kernel package lives in the working tree
        sys.path.insert(0, os.getcwd())
    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    try:
        from .. import _C  # noqa: PLC0415 - the compiler extension, needed from here on
    except ImportError as e:
        print(f"kiln.aot: the compiler extension kiln._C does not load ({e}); the kiln-runtime "
              f"package has none: install kiln", file=sys.stderr)
        return 2

    bad = [a for a in archs if a not in _C.supported_archs()]
    if bad:
        print(f"kiln.aot: unsupported arch {', '.join(bad)} (supported: "
              f"{', '.join(_C.supported_archs())})", file=sys.stderr)
        return 2
    try:
        specs = collect(args.package)
        if not specs:
            print(f"kiln.aot: {args.package} declares no specializations", file=sys.stderr)
            return 1
        bad = sorted({f"{s.kernel_name}: {a}" for s in specs for a in s.archs or ()
                      if a not in _C.supported_archs()})
        if bad:
            print(f"kiln.aot: a Spec's archs name an unsupported arch ({'; '.join(bad)})",
                  file=sys.stderr)
            return 2
        if not any(s.archs_in(archs) for s in specs):
            print(f"kiln.aot: {args.package} declares no specializations for "
                  f"{', '.join(archs)}", file=sys.stderr)
            return 1
        build(specs, archs, args.output, args.jobs)
    except CompilationError as e:
        print(str(e), file=sys.stderr)
        return 1
    except _C.MLIRError as e:
        print(f"kiln.aot: compilation failed:\n{e}", file=sys.stderr)
        return 1
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse  # noqa: PLC0415 - the command line only

    parser = argparse.ArgumentParser(prog="python -m kiln.aot",
                                     description="AOT-compile a kernel package into a bundle")
    add_arguments(parser)
    return run(parser.parse_args(argv))
