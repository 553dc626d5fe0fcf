"""Commands on devices: ``devices`` (what the local GPU runs) and ``survey``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from mmaprobe.models.errors import InputError

from . import cliargs, cuda
from .output import check_output
from .suite import SuiteOptions
from .survey import report, run_survey, targets, to_json, write_report


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("devices", help="list the tensor-core instructions the local GPU runs",
                       description="List the instructions of the CUDA harness (PTX shapes, "
                                   "formats, K) and which the local GPU supports; --all lists "
                                   "the catalogue without a GPU.")
    p.add_argument("--all", action="store_true", help="the whole catalogue (no GPU needed)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("survey", help="a GPU's arithmetic, instruction by instruction",
                       description="For every instruction of the device: suite, run, infer "
                                   "and identify; then one report (the analogue of [KM25] "
                                   "Table II for this GPU) with the matching presets, what "
                                   "no preset explains, and the raw outputs.")
    p.add_argument("--device", required=True,
                   help="cuda (the local GPU), virtual:DEVICE (every preset of a device, "
                        "e.g. virtual:H100), or one device spec (preset:, config:, cuda:, "
                        "exec:, recorded:)")
    p.add_argument("--instr", action="append", metavar="NAME",
                   help="only this instruction (repeatable; PTX shape or preset name)")
    p.add_argument("-o", "--output", metavar="REPORT", help="write the Markdown report here")
    p.add_argument("--raw", metavar="DIR",
                   help="keep suites and outputs here (default: REPORT's name + '.raw')")
    p.add_argument("--seed", type=cliargs.seed, default=0)
    p.add_argument("--pool", type=cliargs.positive_int, default=1000,
                   help="model-evaluated rows per suite")
    p.add_argument("--random", type=cliargs.count, default=64,
                   help="ISSM random rows per suite")
    p.add_argument("--smt-seconds", type=cliargs.seconds, default=10.0,
                   help="solver time per suite and per identification (0: none)")
    p.add_argument("--max-queries", type=cliargs.positive_int, default=16)
    p.add_argument("--jobs", type=cliargs.positive_int, default=min(8, os.cpu_count() or 1),
                   help="processes building the suites of distinct shapes (default: the "
                        "CPUs, at most 8)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_survey)


def cmd_devices(args: argparse.Namespace) -> int:
    if args.all:
        instrs, supported, gpu = list(cuda.INSTRUCTIONS.values()), None, None
    else:
        harness = cuda.local_harness()
        instrs = harness.instructions()
        supported = {i.name for i in instrs if harness.supported(i)}
        gpu = harness.gpu
    rows = [{"name": i.name, "ptx": i.ptx, "a": i.a_format, "b": i.b_format, "c": i.c_format,
             "d": i.out_format, "k": i.K, "min_arch": i.min_arch,
             "supported": None if supported is None else i.name in supported}
            for i in instrs]
    if args.json:
        print(json.dumps({"gpu": gpu.name if gpu else None, "instructions": rows}, indent=1))
        return 0
    if gpu is not None:
        print(f"GPU: {gpu.name} ({gpu.arch})")
    for r in rows:
        mark = "" if r["supported"] is None else ("  " if r["supported"] else "- ")
        print(f"{mark}{r['name']:34s} {r['a']} x {r['b']} + {r['c']} -> {r['d']}, K={r['k']}"
              f" (sm_{r['min_arch']}+)")
    if supported is not None:
        print(f"{len(supported)} of {len(rows)} instructions supported ('-': not on this GPU)")
    return 0


def cmd_survey(args: argparse.Namespace) -> int:
    if (args.pool < 1 or args.random < 0 or args.max_queries < 1 or args.jobs < 1
            or not args.smt_seconds >= 0):
        raise InputError("--pool, --max-queries and --jobs must be >= 1, --random and "
                         "--smt-seconds >= 0")
    kind, _, rest = args.device.partition(":")
    inputs = [rest] if kind in ("recorded", "config") and rest else []
    out = check_output(args.output, "survey report", inputs) if args.output else None
    raw = Path(args.raw) if args.raw else (out.with_suffix(".raw") if out else None)
    t0 = time.monotonic()
    tlist, notes = targets(args.device, args.instr)
    if not tlist:
        raise InputError(f"{args.device}: nothing to survey"
                         + (f" ({'; '.join(notes[:3])})" if notes else ""))
    opts = SuiteOptions(seed=args.seed, random=args.random, pool=args.pool,
                        smt_seconds=args.smt_seconds, use_smt=args.smt_seconds > 0)
    rows = run_survey(tlist, opts, raw, args.max_queries, args.smt_seconds, _progress,
                      args.jobs)
    seconds = time.monotonic() - t0
    text = report(rows, args.device, notes, seconds)
    if out is not None:
        write_report(out, text)
    if args.json:
        print(to_json(rows, notes, seconds))
    elif out is None:
        print(text, end="")
    else:
        print(f"wrote {out} ({len(rows)} instructions; raw outputs in {raw})")
    return 0 if all(r.status in ("identified", "equivalent") for r in rows) else 1
