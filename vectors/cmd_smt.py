"""``mmaprobe distinguish`` and ``mmaprobe synthesize``: the SMT engine's commands."""

from __future__ import annotations

import json
import sys

import z3

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError
from mmaprobe.models.features import FEATURES, feature_value
from mmaprobe.models.formats import get_format
from mmaprobe.models.presets import get_preset
from mmaprobe.models.space import load_spaces
from mmaprobe.smt.constraints import Constraints
from mmaprobe.smt.distinguish import EncodingMismatch, distinguish
from mmaprobe.smt.encode import check_encodable
from mmaprobe.smt.probe_yaml import dump_probes, probe_document
from mmaprobe.smt.synth import robust_probe

from . import cliargs
from .jsonout import dumps, number
from .output import check_output, write_atomic


def register(sub) -> None:
    p = sub.add_parser(
        "distinguish", help="synthesise inputs on which two configurations differ",
        description="Find a, b, c on which two configurations (presets or YAML files) give "
                    "different outputs, verified on the numpy model, or prove that none "
                    "exist under the input constraints. Exit 0: vector found or equivalent; "
                    "1: solver timeout/unknown; 2: input error.")
    p.add_argument("--preset", action="append", default=[], metavar="NAME",
                   help="a device preset (give two, or one with --config)")
    p.add_argument("--config", action="append", default=[], metavar="FILE",
                   help="an accumulator configuration YAML instead of a preset (repeatable)")
    p.add_argument("--constraints", metavar="FILE",
                   help="input constraints YAML (finite, normal, exp_range, c_exp_range, "
                        "zero_a, zero_b, zero_c, sign_a, sign_b, sign_c)")
    p.add_argument("--timeout", type=cliargs.timeout, default=60.0, metavar="S",
                   help="total solver time in seconds (default 60)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_distinguish)

    s = sub.add_parser(
        "synthesize", help="synthesise a robust probe for a feature over a candidate space",
        description="Synthesise vectors whose outputs decide FEATURE on every configuration "
                    "of the space (one probe per format triple and K of the space), verified "
                    "on the numpy model, and write them as a YAML probe that `mmaprobe check` "
                    "verifies independently.")
    s.add_argument("--feature", required=True, help="configuration field or derived feature")
    s.add_argument("--space", required=True, metavar="FILE", help="candidate space YAML")
    s.add_argument("-o", "--output", required=True, metavar="FILE", help="probe YAML to write")
    s.add_argument("--constraints", metavar="FILE", help="input constraints YAML")
    s.add_argument("--timeout", type=cliargs.timeout, default=300.0, metavar="S",
                   help="total time per probe in seconds (default 300)")
    s.add_argument("--json", action="store_true", help="machine-readable summary")
    s.set_defaults(func=cmd_synthesize)


def _configs(args) -> list[tuple[str, AccumulatorConfig]]:
    out = [(name, get_preset(name).config) for name in args.preset]
    out += [(path, AccumulatorConfig.load(path)) for path in args.config]
    if len(out) != 2:
        raise InputError(f"distinguish needs exactly two configurations (--preset or "
                         f"--config), got {len(out)}")
    return out


def _vec_json(cfg: AccumulatorConfig, a: list[int], b: list[int], c: int) -> dict:
    """A row as JSON: a in in_format, b in b's format, c; scale factors (block scaling,
    packed after the k values) under scale_a and scale_b."""
    fin, fb, fc = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.c_format)
    k = cfg.k
    out = {"a": [f"{x:#x}" for x in a[:k]], "b": [f"{x:#x}" for x in b[:k]], "c": f"{c:#x}",
           "a_value": [number(fin.to_float(x)) for x in a[:k]],
           "b_value": [number(fb.to_float(x)) for x in b[:k]], "c_value": number(fc.to_float(c))}
    if cfg.scales:
        out["scale_a"] = [f"{x:#x}" for x in a[k:]]
        out["scale_b"] = [f"{x:#x}" for x in b[k:]]
    return out





def cmd_distinguish(args) -> int:
    (na, ca), (nb, cb) = _configs(args)
    cons = Constraints.load(args.constraints) if args.constraints else Constraints()
    check_encodable(ca)
    check_encodable(cb)
    cons.check(ca.k, get_format(ca.in_format), get_format(ca.c_format))
    try:
        d = distinguish(ca, cb, cons, timeout=args.timeout)
    except EncodingMismatch as e:
        print(f"mmaprobe distinguish: internal error, encoding and model disagree: {e}",
              file=sys.stderr)
        return 1
    except z3.Z3Exception as e:
        print(f"unknown: the solver failed ({e})")
        print(f"mmaprobe distinguish: solver error: {e}", file=sys.stderr)
        return 1
    fout = get_format(ca.out_format)
    if args.json:
        doc: dict = {"a": na, "b": nb, "status": d.status, "seconds": round(d.seconds, 3),
                     "detail": d.detail}
        if d.vector is not None:
            doc["vector"] = _vec_json(ca, d.vector.a, d.vector.b, d.vector.c)
            doc["outputs"] = {na: f"{d.out_a:#x}", nb: f"{d.out_b:#x}"}
        print(dumps(doc, indent=2))
    elif d.status == "distinct":
        assert d.vector is not None and d.out_a is not None and d.out_b is not None
        v = _vec_json(ca, d.vector.a, d.vector.b, d.vector.c)
        print(f"distinct ({d.detail}; {d.seconds:.2f} s; verified on the model)")
        for i in range(ca.k):
            if d.vector.a[i] or d.vector.b[i]:
                print(f"  a[{i}] = {v['a'][i]} ({v['a_value'][i]!r})   "
                      f"b[{i}] = {v['b'][i]} ({v['b_value'][i]!r})")
        print("  every other a[i], b[i] = 0x0 (+0)")
        if ca.scales:
            print(f"  scale factors of a: {' '.join(v['scale_a'])}; of b: "
                  f"{' '.join(v['scale_b'])} ({ca.scale_format})")
        print(f"  c    = {v['c']} ({v['c_value']!r})")
        print(f"  {na}: d = {d.out_a:#x} ({fout.to_float(d.out_a)!r})")
        print(f"  {nb}: d = {d.out_b:#x} ({fout.to_float(d.out_b)!r})")
    elif d.status == "equivalent":
        print(f"equivalent: {d.detail} ({d.seconds:.2f} s)")
    else:
        print(f"unknown: {d.detail} ({d.seconds:.2f} s; no vector found and no proof of "
              f"equivalence; a larger --timeout may decide)")
    if d.status == "unknown":
        # on stderr too, so that a caller reading either stream sees why the exit is 1
        print(f"mmaprobe distinguish: solver timeout/unknown after {d.seconds:.2f} s "
              f"(--timeout {args.timeout:g})", file=sys.stderr)
        return 1
    return 0


def cmd_synthesize(args) -> int:
    if args.feature not in FEATURES:
        raise InputError(f"unknown feature {args.feature!r}; valid features: "
                         f"{', '.join(FEATURES)}")
    out = check_output(args.output, "probe file", [args.space, args.constraints])
    cons = Constraints.load(args.constraints) if args.constraints else Constraints()
    spaces = load_spaces([args.space])
    docs = []
    summary = []
    failed = False
    plan = []
    for sp in spaces:  # every shape checked before the first (long) synthesis
        shapes: dict[tuple, list[AccumulatorConfig]] = {}
        for cfg in sp.configs:
            check_encodable(cfg)
            key = (cfg.in_format, cfg.c_format, cfg.out_format, cfg.k)
            shapes.setdefault(key, []).append(cfg)
        for key in shapes:
            cons.check(key[3], get_format(key[0]), get_format(key[1]))
        plan.append((sp, shapes))
    for sp, shapes in plan:
        for key, cfgs in shapes.items():
            def say(msg: str, key=key, sid=sp.id) -> None:
                if not args.json:
                    print(f"[{sid} {'/'.join(map(str, key))}] {msg}", file=sys.stderr)
            try:
                p = robust_probe(args.feature, cfgs, lambda c: feature_value(c, args.feature),
                                 cons, timeout=args.timeout, progress=say)
            except EncodingMismatch as e:
                print(f"mmaprobe synthesize: internal error, encoding and model disagree: {e}",
                      file=sys.stderr)
                return 1
            except InputError as e:
                raise InputError(f"{sp.source} (space {sp.id}): {e}") from None
            if p is None:
                failed = True
                summary.append({"space": sp.id, "shape": list(key), "status": "timeout"})
                continue
            docs.append(probe_document(p, cfgs[0], sp.id,
                                       sorted({c.algorithm for c in cfgs}), sp.spec))
            summary.append({"space": sp.id, "shape": list(key), "status": "ok",
                            "vectors": len(p.vectors), "configs": p.configs,
                            "inconclusive_configs": p.inconclusive, "wrong": p.wrong,
                            "solver_queries": p.rounds, "method": p.method,
                            "seconds": round(p.seconds, 2)})
    if docs:
        write_atomic(out, dump_probes(docs), "probe file")
    if args.json:
        print(json.dumps({"output": args.output, "probes": summary}, indent=2))
    else:
        for s in summary:
            if s["status"] == "ok":
                print(f"{s['space']} {'/'.join(map(str, s['shape']))}: {s['vectors']} vector(s), "
                      f"{s['configs']} configurations, {s['inconclusive_configs']} left "
                      f"inconclusive ({s['method']}, {s['seconds']} s)")
            else:
                print(f"{s['space']} {'/'.join(map(str, s['shape']))}: solver timeout",
                      file=sys.stderr)
        if docs:
            print(f"wrote {len(docs)} probe(s) to {args.output}")
    undecided = sum(s.get("inconclusive_configs", 0) for s in summary)
    if undecided:
        # classes the vectors could not split are silence, not success
        print(f"mmaprobe synthesize: {undecided} configuration(s) left undecided "
              f"(inconclusive); the probe declares may_be_inconclusive", file=sys.stderr)
    return 1 if failed or not docs or undecided else 0
