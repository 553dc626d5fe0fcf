"""Commands on test-vector suites: suite, run, infer, identify."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mmaprobe.models.errors import InputError
from mmaprobe.models.space import canonical_shape, space_for

from . import identify as ident_mod
from . import infer as infer_mod
from .devices import KINDS, device_from_args
from .suite import SuiteOptions, build_suite
from .suitefile import (
    Observed,
    read_observed,
    read_suite,
    write_d_file,
    write_layout,
    write_observed,
    write_suite,
)


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suite", help="generate a test-vector suite for a format pair and K")
    p.add_argument("--in", dest="fin", required=True, help="input format (e.g. binary16)")
    p.add_argument("--out", dest="fout", required=True, help="output format (e.g. binary32)")
    p.add_argument("--c", dest="fc", help="accumulator (c) format (default: the output format)")
    p.add_argument("--k", type=int, required=True, help="products per output element")
    p.add_argument("--space", help="candidate space YAML (default: the neighbourhood space)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--random", type=int, default=64, help="ISSM random rows (normal + edge)")
    p.add_argument("--pool", type=int, default=1500, help="model-evaluated candidate rows")
    p.add_argument("--smt-seconds", type=float, default=8.0,
                   help="total SMT solver time for discriminators (0: model search only)")
    p.add_argument("-o", "--output", required=True, help="suite JSON file to write")
    p.add_argument("--layout", choices=["json", "matlab-tc"], default="json",
                   help="matlab-tc: also write a_/b_/c_ hex-row files for CUDA harnesses")
    p.add_argument("--layout-dir", help="root of the matlab-tc files (default: beside -o)")
    p.add_argument("--gpu", default="DEVICE", help="GPU folder name of the matlab-tc layout")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(func=cmd_suite)

    p = sub.add_parser("run", help="run a suite on a device (a preset, a configuration, ...)")
    p.add_argument("suite")
    add_device_args(p)
    p.add_argument("-o", "--output", required=True,
                   help="observed JSON (or a .txt MATLAB d-file) to write")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("infer", help="infer features and consistent configurations from "
                                     "observed outputs")
    p.add_argument("suite")
    p.add_argument("observed", help="observed JSON, or a MATLAB-layout d-file (.txt)")
    p.add_argument("--space", help="candidate space YAML (default: the neighbourhood space)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--report", help="write the Markdown report to this file")
    p.set_defaults(func=cmd_infer)

    p = sub.add_parser("identify", help="adaptively query a device until its configuration "
                                        "(or an indistinguishable class) remains")
    add_device_args(p)
    p.add_argument("--space", help="candidate space YAML (default: the neighbourhood space)")
    p.add_argument("--max-queries", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smt-seconds", type=float, default=20.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_identify)


def add_device_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--preset", help="the model of a preset (see `mmaprobe presets`)")
    g.add_argument("--config", help="the model of an accumulator configuration YAML")
    g.add_argument("--device", help="a device spec: " + ", ".join(KINDS.values()))


def cmd_suite(args: argparse.Namespace) -> int:
    fin, fc, fout, k = canonical_shape(args.fin, args.fc, args.fout, args.k)
    if args.random < 0 or args.pool < 1:
        raise InputError("--random must be >= 0 and --pool >= 1")
    space = space_for(args.space, fin, fc, fout, k)
    opts = SuiteOptions(seed=args.seed, random=args.random, pool=args.pool,
                        smt_seconds=args.smt_seconds, use_smt=args.smt_seconds > 0)
    suite = build_suite(space, opts, _progress)
    files = {}
    if args.layout == "matlab-tc":
        root = Path(args.layout_dir) if args.layout_dir else Path(args.output).with_suffix("")
        files = {n: str(p) for n, p in write_layout(root, args.gpu, suite).items() if n != "d"}
        # file names relative to the suite, for the record; nothing ever writes by them
        base = Path(args.output).resolve().parent
        suite.meta["layout"] = {"kind": "matlab-tc", "gpu": args.gpu, "files": {
            n: os.path.relpath(Path(p).resolve(), base) for n, p in files.items()}}
    write_suite(args.output, suite)
    st = suite.meta["generator"]["discrimination"]
    summary = {"suite": args.output, "vectors": suite.size,
               "probe_vectors": suite.meta["generator"]["probe_vectors"],
               "random": args.random, "discriminators": st["discriminators"],
               "space": space.describe(), "classes": st["classes"],
               "unsplit_classes": st["unsplit_class_count"],
               "seconds": suite.meta["generator"]["seconds"], "layout_files": files}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"wrote {args.output}: {suite.size} vectors ({summary['probe_vectors']} probe, "
              f"{args.random} random, {st['discriminators']} discriminators) for "
              f"{space.describe()}; the suite splits it into {st['classes']} classes "
              f"({st['unsplit_class_count']} with more than one configuration) in "
              f"{summary['seconds']} s")
        for n, f in files.items():
            print(f"  {n}: {f}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    suite = read_suite(args.suite)
    dev = device_from_args(args)
    dev.check_shape((suite.in_format, suite.c_format, suite.out_format, suite.k), args.suite)
    device = dev.name
    d = dev.run(suite.a, suite.b, suite.c)
    obs = Observed(list(suite.ids), d, suite.out_format, {"device": device})
    out = Path(args.output)
    if out.suffix == ".txt":
        write_d_file(out, obs)
    else:
        write_observed(out, obs, suite)
    if args.json:
        print(json.dumps({"observed": str(out), "device": device, "vectors": suite.size}))
    else:
        print(f"wrote {out}: {suite.size} outputs of {device}")
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    suite = read_suite(args.suite)
    obs = read_observed(args.observed, suite, args.suite)
    space = space_for(args.space, suite.in_format, suite.c_format, suite.out_format, suite.k)
    inf = infer_mod.infer(suite, obs, space, _progress)
    text = infer_mod.report(inf)
    if args.report:
        Path(args.report).write_text(text)
    if args.json:
        print(json.dumps(infer_mod.to_json(inf), indent=1))
    elif not args.report:
        print(text, end="")
    else:
        print(f"wrote {args.report}: {len(inf.consistent)} consistent configuration(s)")
    return 0 if inf.explained else 1


def cmd_identify(args: argparse.Namespace) -> int:
    dev = device_from_args(args)
    name = dev.name
    if args.max_queries < 1:
        raise InputError("--max-queries must be at least 1")
    space = space_for(args.space, *dev.shape)
    res = ident_mod.identify(dev, space, args.max_queries, args.seed,
                             smt_seconds=args.smt_seconds, use_smt=args.smt_seconds > 0,
                             progress=_progress)
    if args.json:
        out = res.to_json()
        out["device"] = name
        print(json.dumps(out, indent=1))
    else:
        print(f"device {name}")
        print(ident_mod.report(res), end="")
    return 0 if res.status in ("identified", "class") else 1
