"""Command line: ``python -m kiln <command> ...``.

    python -m kiln bundle inspect PATH [--json]   kernels, archs, params, constexprs, sizes
    python -m kiln bundle verify PATH             exit 0 if PATH is a valid bundle, else 1

Subcommands register themselves in ``build_parser``; each handler returns the
exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional


def _bundle_inspect(args: argparse.Namespace) -> int:
    from kiln.runtime import Bundle, KilnError

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
    from kiln.runtime import Bundle, KilnError

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kiln", description="kiln command line")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    add_bundle_commands(subparsers)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
