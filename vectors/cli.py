"""The ``mmaprobe`` command line: one subcommand per flow (README, "Commands").

Each command module defines ``register(subparsers)``; a registered command stores its
handler as ``func`` and returns an exit code: 0 ok, 1 check failed or mismatch found,
2 usage or input error.
"""

from __future__ import annotations

import argparse
import os
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


#: exit status of a command whose reader went away (128 + SIGPIPE, as a shell reports a
#: Unix tool killed by SIGPIPE in ``mmaprobe presets | head``)
EXIT_BROKEN_PIPE = 128 + 13


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        try:
            rc = int(args.func(args) or 0)
        except MmaprobeError as e:
            sys.stdout.flush()
            print(f"mmaprobe {args.command}: error: {e}", file=sys.stderr)
            return 2
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return rc
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _discard_stdout() -> None:
    """After the reader of stdout went away: point stdout at /dev/null so that the
    interpreter's final flush of what is still buffered fails silently (Python's advice
    for SIGPIPE, https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
