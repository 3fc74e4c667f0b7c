"""Command line: ``kiln <command> ...``, or ``python -m kiln <command> ...``.

    kiln version [--json]              kiln's version and its toolchain: LLVM, the PTX ISA
                                       it emits, nvJitLink and ptxas, libdevice, the bundle
                                       format (compiler fields absent in kiln-runtime)
    kiln aot PACKAGE --arch A,B -o OUT AOT-compile a kernel package into a bundle (as
                                       ``python -m kiln.aot``)
    kiln bundle inspect PATH [--json]  kernels, archs, params, constexprs, sizes
    kiln bundle verify PATH            exit 0 if PATH is a valid bundle, else 1
    kiln bundle coverage PATH [--json] per kernel, each specialization's constexprs and
                                       what it assumes of its arguments (alignment,
                                       divisibility; "any arguments" for none)
    kiln bundle diff OLD NEW [--json]  what changed; exit 1 if NEW lost something (a
                                       kernel, a specialization, an arch, a feature such
                                       as PDL/TMA/vector16, an alignment assumption, a
                                       parameter), 2 if a bundle is unreadable

Subcommands register themselves in ``build_parser``; each handler returns the
exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import List, Optional

from . import aot
from ._version import __version__
from .compiler import toolchain
from .runtime import FORMAT_VERSION, Bundle, KilnError, driver_available


def _bundle_inspect(args: argparse.Namespace) -> int:
    try:
        bundle = Bundle(args.path)
    except KilnError as e:
        print(str(e), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"compiler_version": bundle.compiler_version,
                          "file_size": bundle.file_size,
                          "kernels": bundle.kernels()}, indent=2, sort_keys=True))
    else:
        print(bundle.describe(), end="")
    return 0


def _bundle_verify(args: argparse.Namespace) -> int:
    try:
        bundle = Bundle(args.path)
    except KilnError as e:
        print(str(e), file=sys.stderr)
        return 1
    kernels = bundle.kernels()
    archs = sorted({im["arch"] for k in kernels for im in k["images"]})
    images = sum(len(k["images"]) for k in kernels)
    print(f"ok: bundle '{bundle.name}': {len(kernels)} kernels, {images} images, "
          f"archs: {', '.join(archs) or '(none)'}")
    return 0


def coverage(kernels):
    """What bundle manifest entries ``kernels`` serve: [(name, [(constexprs, pointer dtypes,
    [(param, kind, divisibility > 1)])])], the kernels in manifest order. A launch takes, of
    the entries of its name and constexprs, the most specialized whose assumptions its
    arguments meet; one that assumes nothing serves every argument of its types."""
    out = {}
    for k in kernels:
        params = k.get("params", [])
        assumes = [(p["name"], p["kind"], p["divisibility"]) for p in params
                   if p.get("divisibility", 1) > 1]
        out.setdefault(k["name"], []).append(
            (k.get("constexprs", {}), [p["dtype"] for p in params if p["kind"] == "ptr"],
             assumes))
    return list(out.items())


def _assumption_text(assumes) -> str:
    return ", ".join(f"{n} {d}-byte aligned" if kind == "ptr" else f"{n} % {d} == 0"
                     for n, kind, d in assumes) or "any arguments"


def _bundle_coverage(args: argparse.Namespace) -> int:
    try:
        bundle = Bundle(args.path)
    except KilnError as e:
        print(str(e), file=sys.stderr)
        return 1
    table = coverage(bundle.kernels())
    if args.json:
        print(json.dumps({"bundle": bundle.name, "kernels": [
            {"name": name, "specializations": [
                {"constexprs": c, "pointers": p,
                 "assumes": [{"param": n, "kind": k, "divisibility": d} for n, k, d in a]}
                for c, p, a in specs]}
            for name, specs in table]}, indent=2))
        return 0
    print(f"bundle '{bundle.name}': {len(bundle.kernels())} specializations of {len(table)} "
          f"kernels; a launch takes the most specialized whose assumptions its arguments meet")
    for name, specs in table:
        print(f"\n{name}")
        for consts, ptrs, assumes in specs:
            cx = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(consts.items()))
            print(f"  [{cx}] ptrs({','.join(ptrs)}): {_assumption_text(assumes)}")
    return 0


def _spec_key(meta) -> str:
    return json.dumps(meta.get("constexprs", {}), sort_keys=True)


def _spec_label(meta) -> str:
    consts = ", ".join(f"{k}={json.dumps(v)}"
                       for k, v in sorted(meta.get("constexprs", {}).items()))
    ptrs = ",".join(p["dtype"] for p in meta.get("params", []) if p["kind"] == "ptr")
    return f"{meta['name']}[{consts}]" + (f" ptrs({ptrs})" if ptrs else "")


def _param_text(p) -> str:
    t = f"ptr<{p['dtype']}>" if p["kind"] == "ptr" else p["dtype"]
    div = p.get("divisibility", 1)
    return f"{p['name']}: {t}" + (f" (div {div})" if div > 1 else "")


def diff_bundles(old, new):
    """Changes from bundle manifest entries ``old`` to ``new`` (lists of kernel metadata
    dicts). Returns a list of (severity, kernel label, message); severity "lost" marks what
    a port must not silently drop, "changed" a difference worth a look, "added" new things."""
    out = []
    old_by = {(k["name"], _spec_key(k)): k for k in old}
    new_by = {(k["name"], _spec_key(k)): k for k in new}
    old_names = {k["name"] for k in old}
    new_names = {k["name"] for k in new}
    for name in sorted(old_names - new_names):
        out.append(("lost", name, "kernel removed"))
    for name in sorted(new_names - old_names):
        out.append(("added", name, "kernel added"))
    for key in sorted(set(old_by) - set(new_by)):
        if key[0] in new_names:
            out.append(("lost", _spec_label(old_by[key]), "specialization removed"))
    for key in sorted(set(new_by) - set(old_by)):
        if key[0] in old_names:
            out.append(("added", _spec_label(new_by[key]), "specialization added"))
    for key in sorted(set(old_by) & set(new_by)):
        a, b = old_by[key], new_by[key]
        label = _spec_label(a)
        pa = {p["name"]: p for p in a.get("params", [])}
        pb = {p["name"]: p for p in b.get("params", [])}
        for n in pa:
            if n not in pb:
                out.append(("lost", label, f"parameter removed: {_param_text(pa[n])}"))
        for n in pb:
            if n not in pa:
                out.append(("changed", label, f"parameter added: {_param_text(pb[n])}"))
        for n in pa:
            if n in pb and (pa[n]["kind"], pa[n]["dtype"]) != (pb[n]["kind"], pb[n]["dtype"]):
                out.append(("lost", label, f"parameter type changed: {_param_text(pa[n])} -> "
                                           f"{_param_text(pb[n])}"))
            elif n in pb:
                da, db = pa[n].get("divisibility", 1), pb[n].get("divisibility", 1)
                if db < da:
                    out.append(("lost", label, f"alignment assumption dropped: {n} divisibility "
                                               f"{da} -> {db} (fast path lost)"))
                elif db > da:
                    out.append(("changed", label, f"{n} divisibility {da} -> {db} (callers must "
                                                  f"now guarantee it)"))
        order_a = [p["name"] for p in a.get("params", []) if p["name"] in pb]
        order_b = [p["name"] for p in b.get("params", []) if p["name"] in pa]
        if order_a != order_b:
            out.append(("lost", label, f"parameter order changed: ({', '.join(order_a)}) -> "
                                       f"({', '.join(order_b)})"))
        if a.get("pdl", False) and not b.get("pdl", False):
            out.append(("lost", label, "PDL launch attribute dropped (pdl true -> false)"))
        elif b.get("pdl", False) and not a.get("pdl", False):
            out.append(("added", label, "PDL launch attribute added"))
        for field, what in (("threads_per_block", "threads per block"),
                            ("shared_bytes", "dynamic shared memory (B)"),
                            ("cluster", "cluster shape")):
            if a.get(field) != b.get(field):
                out.append(("changed", label, f"{what}: {a.get(field)} -> {b.get(field)}"))
        fa, fb = set(a.get("features", [])), set(b.get("features", []))
        for f in sorted(fa - fb):
            out.append(("lost", label, f"feature dropped: {f}"))
        for f in sorted(fb - fa):
            out.append(("added", label, f"feature added: {f}"))
        arch_a = {(im["arch"], im["kind"]) for im in a.get("images", [])}
        arch_b = {(im["arch"], im["kind"]) for im in b.get("images", [])}
        for arch, kind in sorted(arch_a - arch_b):
            out.append(("lost", label, f"{kind} image for {arch} removed"))
        for arch, kind in sorted(arch_b - arch_a):
            out.append(("added", label, f"{kind} image for {arch} added"))
        ta, tb = a.get("targets", {}), b.get("targets", {})
        for arch in sorted(set(ta) & set(tb)):
            x, y = ta[arch], tb[arch]
            for f in sorted(set(x.get("features", [])) - set(y.get("features", []))):
                if f in fb:  # still used on another arch: lost on this one
                    out.append(("lost", label, f"{arch}: feature dropped: {f}"))
            for field, what in (("registers", "registers"), ("stack_bytes", "stack (B)"),
                                ("shared_static_bytes", "static shared memory (B)"),
                                ("spill_store_bytes", "spill stores (B)"),
                                ("spill_load_bytes", "spill loads (B)")):
                va, vb = x.get(field), y.get(field)
                if va is None or vb is None or va == vb:
                    continue
                sev = "lost" if field.startswith("spill") and vb > va else "changed"
                out.append((sev, label, f"{arch}: {what} {va} -> {vb} ({vb - va:+d})"))
            for field in ("ptx_isa", "assembler_version"):
                if x.get(field) and y.get(field) and x[field] != y[field]:
                    out.append(("changed", label, f"{arch}: {field} {x[field]} -> {y[field]}"))
        if a.get("source_hash") and b.get("source_hash") and a["source_hash"] != b["source_hash"]:
            out.append(("changed", label, "source changed (source_hash differs)"))
    return out


def _bundle_diff(args: argparse.Namespace) -> int:
    try:
        old, new = Bundle(args.old), Bundle(args.new)
    except KilnError as e:
        print(str(e), file=sys.stderr)
        return 2
    changes = diff_bundles(old.kernels(), new.kernels())
    lost = [c for c in changes if c[0] == "lost"]
    if args.json:
        print(json.dumps({"old": old.name, "new": new.name, "lost": len(lost),
                          "changes": [{"severity": s, "kernel": k, "change": m}
                                      for s, k, m in changes]}, indent=2))
    else:
        if old.compiler_version != new.compiler_version:
            print(f"compiler: {old.compiler_version} -> {new.compiler_version}")
        if not changes:
            print(f"no differences in kernels, signatures, features or resources "
                  f"({len(new.kernels())} kernels)")
        for sev, label, msg in changes:
            print(f"{'LOST' if sev == 'lost' else sev:8} {label}: {msg}")
        if lost:
            print(f"\n{len(lost)} loss{'es' if len(lost) != 1 else ''} from {old.name} to "
                  f"{new.name}", file=sys.stderr)
    return 1 if lost else 0


def add_bundle_commands(subparsers: "argparse._SubParsersAction") -> None:
    bundle = subparsers.add_parser("bundle", help="inspect and verify kernel bundles (.kbundle)")
    sub = bundle.add_subparsers(dest="bundle_command", metavar="COMMAND")
    sub.required = True
    inspect = sub.add_parser("inspect", help="print kernels, archs, params, constexprs, sizes")
    inspect.add_argument("path")
    inspect.add_argument("--json", action="store_true", help="print the manifest as JSON")
    inspect.set_defaults(handler=_bundle_inspect)
    verify = sub.add_parser("verify", help="check every checksum and field; exit 1 if bad")
    verify.add_argument("path")
    verify.set_defaults(handler=_bundle_verify)
    cover = sub.add_parser("coverage", help="per kernel, each specialization's constexprs and "
                                            "what it assumes of its arguments")
    cover.add_argument("path")
    cover.add_argument("--json", action="store_true", help="print the table as JSON")
    cover.set_defaults(handler=_bundle_coverage)
    diff = sub.add_parser("diff", help="compare two bundles; exit 1 if NEW lost a kernel, a "
                                       "specialization, an arch, a feature or a parameter")
    diff.add_argument("old")
    diff.add_argument("new")
    diff.add_argument("--json", action="store_true", help="print the changes as JSON")
    diff.set_defaults(handler=_bundle_diff)


def versions() -> dict:
    """kiln's version and its toolchain on this machine (``kiln version --json``): the
    compiler's fields are None where the extension does not load (the runtime-only
    package)."""
    tools = toolchain() or {}
    libdevice = tools.get("libdevice")
    return {"kiln": __version__, "package": os.path.dirname(os.path.abspath(__file__)),
            "python": platform.python_version(), "compiler": bool(tools),
            "llvm": tools.get("llvm"), "ptx_isa": tools.get("ptx_isa"),
            "nvjitlink": tools.get("nvjitlink") or None,
            "nvjitlink_error": tools.get("nvjitlink_error") or None,
            "ptxas": tools.get("ptxas") or None, "cuda_home": tools.get("cuda_home"),
            "libdevice": libdevice,
            "libdevice_found": bool(libdevice) and os.path.isfile(libdevice),
            "bundle_format": FORMAT_VERSION, "cuda_driver": driver_available()}


def _version(args: argparse.Namespace) -> int:
    v = versions()
    if args.json:
        print(json.dumps(v, indent=2, sort_keys=True))
        return 0
    print(f"kiln       {v['kiln']} ({v['package']}, Python {v['python']})")
    if not v["compiler"]:
        print("compiler   none: kiln._C is not installed (the kiln-runtime package launches "
              "bundles only)")
    else:
        print(f"compiler   LLVM {v['llvm']}, PTX ISA {v['ptx_isa']}")
        print(f"nvJitLink  {v['nvjitlink'] or 'not found (' + str(v['nvjitlink_error']) + ')'}")
        print(f"ptxas      {v['ptxas'] or 'not found'} (CUDA_HOME {v['cuda_home']})")
        print(f"libdevice  {v['libdevice']}" + ("" if v["libdevice_found"] else
              " MISSING: install the CUDA 13 toolkit, or set CUDA_HOME or KILN_LIBDEVICE"))
    print(f"runtime    bundle format {v['bundle_format']}; CUDA driver "
          f"{'loads' if v['cuda_driver'] else 'does not load on this machine'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kiln", description="kiln command line (also `python -m kiln`)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    add_bundle_commands(subparsers)
    version = subparsers.add_parser("version", help="kiln's version and its toolchain (LLVM, "
                                                    "PTX ISA, nvJitLink, libdevice)")
    version.add_argument("--json", action="store_true", help="print them as JSON")
    version.set_defaults(handler=_version)
    compile_ = subparsers.add_parser("aot", help="AOT-compile a kernel package into a bundle "
                                                 "(as python -m kiln.aot)")
    aot.add_arguments(compile_)
    compile_.set_defaults(handler=aot.run)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
