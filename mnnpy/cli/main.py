"""`mnnpy` console script: finds its subcommands by module name in `mnnpy.cli` (no list to edit)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import mnnpy.cli as cli_pkg
from mnnpy.schema.errors import ModelError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mnnpy", description="MNN-style inference engine in Python")
    parser.add_argument("--version", action="version", version=f"mnnpy {importlib.import_module('mnnpy').version()}")
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(cli_pkg.__path__), key=lambda m: m.name):
        if info.name == "main":
            continue
        module = importlib.import_module(f"mnnpy.cli.{info.name}")
        name = getattr(module, "COMMAND", None)
        if name is None:
            continue
        sub = subs.add_parser(name, help=module.__doc__.splitlines()[0], description=module.__doc__)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except ModelError as exc:
        print(f"mnnpy {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a missing folder, a full disk, no permission: say which file, no traceback
        where = f": {exc.filename}" if exc.filename else ""
        print(f"mnnpy {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `mnnpy dump m.mnn | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
