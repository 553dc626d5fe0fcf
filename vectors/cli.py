"""The ``mmaprobe`` command line: one subcommand per flow (README, "Commands").

Each command module defines ``register(subparsers)``; a registered command stores its
handler as ``func`` and returns an exit code: 0 ok, 1 check failed or mismatch found,
2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys

from mmaprobe.models.errors import MmaprobeError

from . import cmd_devices, cmd_models, cmd_probes, cmd_smt, cmd_suite

#: presets, eval, validate, gemm, bench | probes, check, authenticate |
#: distinguish, synthesize | suite, run, infer, identify | devices, survey
COMMAND_MODULES = (cmd_models, cmd_probes, cmd_smt, cmd_suite, cmd_devices)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mmaprobe",
        description="Probe, model and check the arithmetic of hardware matrix-multiply units.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except MmaprobeError as e:
        print(f"mmaprobe {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
