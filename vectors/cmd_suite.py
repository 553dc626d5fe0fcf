"""Commands on test-vector suites: suite, run, infer, identify."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

from mmaprobe.models.errors import InputError
from mmaprobe.models.space import canonical_shape, space_for

from . import cliargs
from . import identify as ident_mod
from . import infer as infer_mod
from .devices import EXEC_TIMEOUT, KINDS, device_from_args, operands_from_args
from .output import check_creatable, check_output, write_atomic, write_files
from .suite import SuiteOptions, build_suite, check_options
from .suitefile import (
    Observed,
    layout_inputs,
    layout_paths,
    layout_texts,
    read_observed,
    read_suite,
    suite_text,
    write_d_file,
    write_observed,
)


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def add_jobs_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=cliargs.positive_int, default=min(4, os.cpu_count() or 1),
                   metavar="N", help="processes for the model's evaluation of the candidate "
                   "space (default: the cores, at most 4)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suite", help="generate a test-vector suite for a format pair and K")
    p.add_argument("--in", dest="fin", required=True, help="input format (e.g. binary16)")
    p.add_argument("--out", dest="fout", required=True, help="output format (e.g. binary32)")
    p.add_argument("--c", dest="fc", help="accumulator (c) format (default: the output format)")
    p.add_argument("--k", type=cliargs.k_value, required=True,
                   help="products per output element")
    add_operand_args(p)
    p.add_argument("--space", help="candidate space YAML (default: the neighbourhood space)")
    p.add_argument("--seed", type=cliargs.seed, default=0)
    p.add_argument("--random", type=cliargs.count, default=64,
                   help="ISSM random rows (normal + edge)")
    p.add_argument("--pool", type=cliargs.positive_int, default=1500,
                   help="model-evaluated candidate rows")
    p.add_argument("--smt-seconds", type=cliargs.seconds, default=8.0,
                   help="total SMT solver time for discriminators (0: model search only)")
    p.add_argument("-o", "--output", required=True, help="suite JSON file to write")
    add_jobs_arg(p)
    p.add_argument("--layout", choices=["json", "matlab-tc"], default="json",
                   help="matlab-tc: also write a_/b_/c_ hex-row files for CUDA harnesses")
    p.add_argument("--layout-dir", help="root of the matlab-tc files (default: beside -o)")
    p.add_argument("--gpu", type=cliargs.folder_name, default="DEVICE",
                   help="GPU folder name of the matlab-tc layout")
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
    add_jobs_arg(p)
    p.set_defaults(func=cmd_infer)

    p = sub.add_parser("identify", help="adaptively query a device until its configuration "
                                        "(or a class proven equivalent) remains")
    add_device_args(p, shape=True)
    p.add_argument("--space", help="candidate space YAML (default: the neighbourhood space)")
    p.add_argument("--max-queries", type=cliargs.positive_int, default=16)
    p.add_argument("--seed", type=cliargs.seed, default=0)
    p.add_argument("--smt-seconds", type=cliargs.seconds, default=20.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_identify)


def add_operand_args(p: argparse.ArgumentParser) -> None:
    """--b, --scale and --scale-block: b's own format and block scaling."""
    p.add_argument("--b", dest="fb", help="b's format where it differs from --in (e.g. e5m2 "
                                          "for e4m3 x e5m2)")
    p.add_argument("--scale", dest="scale_format", choices=["ue8m0", "ue4m3"],
                   help="block scaling: the scale factors' format (with --scale-block)")
    p.add_argument("--scale-block", type=cliargs.positive_int,
                   help="block scaling: products per scale factor")


def add_device_args(p: argparse.ArgumentParser, shape: bool = False) -> None:
    """--preset / --config / --device (one of them), --device-timeout, and with shape the
    formats and K of a device that does not know its own (exec:)."""
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--preset", help="the model of a preset (see `mmaprobe presets`)")
    g.add_argument("--config", help="the model of an accumulator configuration YAML")
    g.add_argument("--device", help="a device spec: " + ", ".join(KINDS.values()))
    p.add_argument("--device-timeout", type=cliargs.timeout, default=EXEC_TIMEOUT, metavar="S",
                   help=f"seconds an exec: harness may take per batch (default "
                        f"{EXEC_TIMEOUT:g})")
    if shape:
        p.add_argument("--in", dest="fin", help="input format of an exec: device")
        p.add_argument("--out", dest="fout", help="output format of an exec: device")
        p.add_argument("--c", dest="fc", help="c format of an exec: device (default: --out)")
        p.add_argument("--k", type=cliargs.k_value, help="K of an exec: device")
        add_operand_args(p)


def cmd_suite(args: argparse.Namespace) -> int:
    fin, fc, fout, k = canonical_shape(args.fin, args.fc, args.fout, args.k)
    operands = operands_from_args(args, fin, k)
    opts = SuiteOptions(seed=args.seed, random=args.random, pool=args.pool,
                        smt_seconds=args.smt_seconds, use_smt=args.smt_seconds > 0,
                        jobs=args.jobs)
    check_options(opts, k)
    out = check_output(args.output, "suite", [args.space])
    space = space_for(args.space, fin, fc, fout, k, operands=operands)
    lay_root = None
    if args.layout == "matlab-tc":  # every file checked before the generation
        lay_root = Path(args.layout_dir) if args.layout_dir else out.with_suffix("")
        b_fmt, scale_format, _ = operands or (fin, None, None)
        shape = SimpleNamespace(in_format=fin, out_format=fout, scale_format=scale_format,
                                operands=(b_fmt, scale_format, None))
        for p in layout_paths(lay_root, args.gpu, shape).values():
            check_creatable(p, "MATLAB-layout files", [args.space, out])
    suite = build_suite(space, opts, _progress)
    files: dict[str, str] = {}
    texts: dict[Path, str] = {}
    if lay_root is not None:
        texts = layout_texts(lay_root, args.gpu, suite)
        files = {n: str(p) for n, p in layout_paths(lay_root, args.gpu, suite).items()
                 if n != "d"}
        # file names relative to the suite, for the record; nothing ever writes by them
        base = out.resolve().parent
        suite.meta["layout"] = {"kind": "matlab-tc", "gpu": args.gpu, "files": {
            n: os.path.relpath(Path(p).resolve(), base) for n, p in files.items()}}
    # the layout files and the suite that names them: all of them or none
    write_files({**texts, out: suite_text(suite)},
                "suite and its MATLAB-layout files" if texts else "suite", make_dirs=True)
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


def _device_inputs(args: argparse.Namespace) -> list[str]:
    """Files a --config or --device spec reads (config:FILE, recorded:FILE)."""
    out = [args.config] if getattr(args, "config", None) else []
    spec = getattr(args, "device", None) or ""
    kind, _, rest = spec.partition(":")
    if kind in ("config", "recorded") and rest:
        out.append(rest)
    return out


def cmd_run(args: argparse.Namespace) -> int:
    suite = read_suite(args.suite)
    inputs = [args.suite, *_device_inputs(args), *layout_inputs(suite)]
    out = check_output(args.output, "observed outputs", inputs)
    shape = (suite.in_format, suite.c_format, suite.out_format, suite.k)
    dev = device_from_args(args)
    dev.check_shape(shape, args.suite)  # the message names the suite
    dev = dev.with_shape(shape, suite.operands)
    dev.check_shape(shape, args.suite, suite.operands)
    device = dev.name
    d = dev.run(suite.a, suite.b, suite.c)
    obs = Observed(list(suite.ids), d, suite.out_format, {"device": device})
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
    report_path = None
    if args.report:
        report_path = check_output(args.report, "report",
                                   [args.suite, args.observed, args.space])
    suite = read_suite(args.suite)
    obs = read_observed(args.observed, suite, args.suite)
    space = space_for(args.space, suite.in_format, suite.c_format, suite.out_format, suite.k,
                      operands=suite.operands)
    inf = infer_mod.infer(suite, obs, space, _progress, args.jobs)
    text = infer_mod.report(inf)
    if report_path is not None:
        write_atomic(report_path, text, "report")
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
    if dev.shape is None:
        raise InputError(f"{name}: give the device's formats and K with --in/--out/--k "
                         f"(and --c when c differs from the output format)")
    space = space_for(args.space, *dev.shape, operands=dev.operands)
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
    return 0 if res.decided else 1
