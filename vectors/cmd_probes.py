"""CLI: ``mmaprobe probes``, ``mmaprobe check``, ``mmaprobe authenticate``."""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from mmaprobe.models.errors import InputError
from mmaprobe.models.space import default_spaces, load_spaces
from mmaprobe.probes.checker import (
    CheckReport,
    run_check,
    run_check_parallel,
    stderr_progress,
)
from mmaprobe.probes.gaps import load_gaps
from mmaprobe.probes.library import (
    SUITES_DIR,
    library_files,
    load_probes,
    suite_names,
    suite_probes,
)
from mmaprobe.probes.probe import Probe

from .claims import claim_file, claim_suites, evaluate_claims, load_claims, print_verdicts
from .cmd_models import default_hwdata


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probes", help="list the probe library",
                       description="List probes: id, feature, formats, source.")
    p.add_argument("--published", action="store_true", help="list the published suites too")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_probes)

    c = sub.add_parser("check", help="check that probes decide correctly across spaces",
                       description="Run every probe on every configuration of the candidate "
                                   "spaces and compare its decision with the true feature. "
                                   "Exit 1 on any wrong (or unexpected inconclusive) decision, "
                                   "and, for the library, on any observable feature no probe "
                                   "decides outside the known gaps (probes/gaps.yaml).")
    c.add_argument("--space", action="append", metavar="FILE",
                   help="candidate space YAML (repeatable; default: the shipped spaces)")
    c.add_argument("--probes", metavar="GLOB", default="*",
                   help="only probes whose id matches (default '*')")
    c.add_argument("--probe-file", action="append", metavar="FILE",
                   help="probe YAML files (default: the library)")
    c.add_argument("--require-decided", action="store_true",
                   help="with --probe-file: fail when a feature the probes decide is left "
                        "undecided somewhere (the library's own check always does)")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), metavar="N",
                   help="processes to check the spaces in (default: 2 where there are two "
                        "cores)")
    c.set_defaults(func=cmd_check)

    a = sub.add_parser("authenticate", help="authenticate a published test suite",
                       description="Check a published suite's tests across a candidate space: "
                                   "a verdict per test, robust or wrong on which "
                                   "configurations.")
    a.add_argument("suite", metavar="SUITE",
                   help="suite name (" + ", ".join(suite_names() + claim_suites())
                        + ") or a YAML file")
    a.add_argument("--data", metavar="DIR",
                   help="recorded GPU outputs for a claims suite (default: ../shared/hwdata "
                        "beside the checkout, or $MMAPROBE_HWDATA)")
    a.add_argument("--space", action="append", metavar="FILE",
                   help="candidate space YAML (repeatable; default: the shipped spaces)")
    a.add_argument("--json", action="store_true", help="machine-readable output")
    a.add_argument("--quiet", action="store_true", help="no progress on stderr")
    a.set_defaults(func=cmd_authenticate)


def _formats(p: Probe) -> str:
    parts = []
    for role in ("in", "c", "out"):
        v = p.formats.get(role)
        parts.append(f"{role}={'/'.join(v) if v else 'any'}")
    ks = "/".join(str(k) for k in p.ks) if p.ks else "any"
    # written with a.* and b.*: instantiated for a unit's own a and b formats; scaled:
    # scale factors of its own, for block-scaled units only
    return (" ".join(parts) + f" k={ks}" + (" per-side" if p.per_side else "")
            + (" scaled" if p.scaled else ""))


def cmd_probes(args: argparse.Namespace) -> int:
    files = library_files()
    if args.published:
        files += library_files(SUITES_DIR)
    probes = load_probes(files)
    if args.json:
        print(json.dumps([{"id": p.id, "title": p.title, "feature": p.feature,
                           "suite": p.suite, "source": p.source, "requires": list(p.requires),
                           "formats": {r: list(v) if v else None
                                       for r, v in p.formats.items()},
                           "k": list(p.ks) if p.ks else None, "file": p.file}
                          for p in probes], indent=1))
        return 0
    for p in probes:
        req = f" requires {','.join(p.requires)}" if p.requires else ""
        print(f"{p.id:28s} {p.feature:22s} {_formats(p)}{req}\n{'':28s} {p.source}")
    print(f"{len(probes)} probes")
    return 0


def _spaces(paths: list[str] | None):
    if not paths:
        return default_spaces()
    return load_spaces([Path(s) for s in paths])


def cmd_check(args: argparse.Namespace) -> int:
    files = [Path(f) for f in args.probe_file] if args.probe_file else library_files()
    probes = [p for p in load_probes(files) if fnmatch.fnmatch(p.id, args.probes)]
    if not probes:
        raise InputError(f"no probe matches {args.probes!r}")
    spaces = _spaces(args.space)
    # the library's known gaps (probes/gaps.yaml) apply to the library's own probes
    gaps = load_gaps() if not args.probe_file else None
    if args.jobs < 1:
        raise InputError(f"--jobs must be at least 1, got {args.jobs}")
    report = run_check_parallel(probes, spaces, args.jobs,
                                None if args.quiet else stderr_progress, gaps=gaps)
    _require_applicable(report)
    report.silence_fails = not args.probe_file or args.require_decided
    if args.json:
        print(json.dumps(_report_json(report), indent=1))
    else:
        _print_report(report)
    return 1 if report.failed else 0


def _require_applicable(report: CheckReport) -> None:
    """An InputError when no probe applied to any configuration: a check of nothing must
    not report success."""
    if any(r.tried for r in report.results):
        return
    errors = [e for r in report.results for e in r.errors]
    if errors:
        # every instance failed to build: the probe file is at fault, not the spaces
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(f"{errors[0]}{more}")
    where = "; ".join(f"{s['id']} ({s['file']})" for s in report.spaces[:4])
    ids = ", ".join(r.probe.id for r in report.results[:4])
    raise InputError(f"no probe applies to any configuration of the space(s) {where}: "
                     f"nothing was checked (probes {ids}{' ...' if len(report.results) > 4 else ''}"
                     f"; compare their formats and k with the spaces)")


def _report_json(report: CheckReport) -> dict[str, Any]:
    return {"spaces": report.spaces, "configurations": report.configurations,
            "rows": report.rows, "model_calls": report.model_calls,
            "seconds": round(report.seconds, 3), "failed": report.failed,
            "undecided": report.undecided,
            "probes": [r.to_json() for r in report.results],
            "coverage": [c.to_json() for c in report.coverage]}


def _print_report(report: CheckReport) -> None:
    for s in report.spaces:
        print(f"space {s['id']}: {s['configurations']} configurations "
              f"({s['rejected']} invalid combinations skipped, {s['excluded']} excluded)")
    print(f"{'probe':30s} {'tried':>7s} {'correct':>7s} {'wrong':>6s} {'inconc':>6s}  n/a")
    for r in report.results:
        flag = "FAIL" if r.failed else ("ok" if r.tried else "-")
        print(f"{r.probe.id:30s} {r.tried:7d} {r.correct:7d} {r.wrong:6d} "
              f"{r.inconclusive:6d} {r.not_applicable:5d} {flag}")
        for ex in r.counterexamples:
            _print_example("wrong", ex)
        if not r.probe.may_be_inconclusive:
            for ex in r.inconclusive_examples[:1]:
                _print_example("inconclusive", ex)
        for msg in r.errors[:2]:
            print(f"    cannot instantiate: {msg}")
    _print_coverage(report)
    print(f"{report.configurations} configurations, {report.rows} rows in "
          f"{report.model_calls} model calls; wall time {report.seconds:.1f} s")
    if report.failed:
        print(f"FAILED ({report.undecided} undecided)" if report.undecided else "FAILED")
    elif report.undecided:
        print(f"all probes robust; {report.undecided} configuration-features left undecided "
              f"(--require-decided makes that a failure)")
    else:
        gaps = sum(c.gaps for c in report.coverage)
        print("all probes robust; every observable feature decided"
              + (f" or a known gap ({gaps} configuration-features, probes/gaps.yaml)"
                 if gaps else ""))


def _print_coverage(report: CheckReport) -> None:
    """Per feature: configurations where it is observable / decided; then each space and
    feature left undecided somewhere (silence is a failure)."""
    if not report.coverage:
        return
    totals: dict[str, list[int]] = {}
    for c in report.coverage:
        t = totals.setdefault(c.feature, [0, 0, 0, 0])
        t[0] += c.configurations
        t[1] += c.observable
        t[2] += c.decided
        t[3] += c.gaps
    print(f"{'feature':24s} {'configs':>8s} {'observable':>10s} {'decided':>8s} "
          f"{'known gap':>9s} {'undecided':>9s}")
    for f, (n, obs, dec, gap) in totals.items():
        und = obs - dec - gap
        flag = ("  FAIL" if report.silence_fails else "  (reported)") if und else ""
        print(f"{f:24s} {n:8d} {obs:10d} {dec:8d} {gap:9d} {und:9d}{flag}")
    reasons: dict[tuple[str, str], int] = {}
    for c in report.coverage:
        for why, n in c.gap_reasons.items():
            reasons[(c.feature, why)] = reasons.get((c.feature, why), 0) + n
    for (f, why), n in reasons.items():
        print(f"known gap: {f} on {n} configurations: {why}")
    for c in report.coverage:
        if c.undecided:
            print(f"undecided: {c.feature} on {c.undecided} of {c.configurations} "
                  f"configurations of space {c.space}, e.g. {'; '.join(c.examples[:2])}")


def _print_example(kind: str, ex: dict[str, Any]) -> None:
    print(f"    {kind}: {ex['describe']}: decided {ex['decided']}, true {ex['true']}")
    for v in ex["vectors"][:6]:
        nz = [(i, a, b) for i, (a, b) in enumerate(zip(v["a"], v["b"]))
              if int(a, 16) or int(b, 16)]
        terms = " ".join(f"a{i}={a} b{i}={b}" for i, a, b in nz)
        print(f"      {v['vector']}: {terms} c={v['c']} -> d={v['d']}")
    if len(ex["vectors"]) > 6:
        print(f"      ... {len(ex['vectors']) - 6} more rows (see --json)")


def cmd_authenticate(args: argparse.Namespace) -> int:
    cfile = claim_file(args.suite)
    if cfile is not None or str(args.suite).endswith(".claims.yaml"):
        return _authenticate_claims(args, cfile or Path(args.suite))
    probes = suite_probes(args.suite)
    spaces = _spaces(args.space)
    report = run_check(probes, spaces, None if args.quiet else stderr_progress)
    _require_applicable(report)
    verdicts = []
    for r in report.results:
        if r.tried == 0:
            verdict = "not applicable"
        elif r.wrong:
            verdict = "not robust"
        elif r.inconclusive:
            verdict = "robust where conclusive"
        else:
            verdict = "robust"
        verdicts.append({"test": r.probe.id, "title": r.probe.title,
                         "feature": r.probe.feature, "source": r.probe.source,
                         "verdict": verdict, "tried": r.tried, "correct": r.correct,
                         "wrong": r.wrong, "inconclusive": r.inconclusive,
                         "wrong_on": [c.describe() for c in r.wrong_configs[:50]],
                         "wrong_where": r.wrong_where(),
                         "notes": r.probe.notes.strip(),
                         "counterexamples": r.counterexamples})
    if args.json:
        print(json.dumps({"suite": args.suite, "seconds": round(report.seconds, 3),
                          "configurations": report.configurations, "tests": verdicts},
                         indent=1))
    else:
        for v in verdicts:
            print(f"{v['test']:26s} {v['feature']:16s} {v['verdict']:24s} tried {v['tried']}, "
                  f"correct {v['correct']}, wrong {v['wrong']}, "
                  f"inconclusive {v['inconclusive']}")
            for ex in v["counterexamples"][:2]:
                _print_example("wrong", ex)
            if v["wrong"] > 2:
                print(f"    wrong on {v['wrong']} configurations, e.g. "
                      + "; ".join(v["wrong_on"][:4]))
            if v["wrong_where"]:
                print("    wrong only where " + "; ".join(
                    f"{k} in {{{', '.join(vals)}}}" for k, vals in v["wrong_where"].items()))
            elif v["wrong"]:
                print("    wrong across every value the space varies")
            if v["notes"] and v["verdict"] != "robust":
                # the test's own account of what it assumes and reads (the suite file's notes)
                print(textwrap.fill(" ".join(v["notes"].split()), width=100,
                                    initial_indent="    note: ", subsequent_indent="      "))
        print(f"{report.configurations} configurations; wall time {report.seconds:.1f} s",
              file=sys.stdout)
    return 1 if any(v["verdict"] == "not robust" for v in verdicts) else 0


def _authenticate_claims(args: argparse.Namespace, path: Path) -> int:
    """A paper's claims against recorded outputs (vectors/claims.py)."""
    suite = load_claims(path)
    root = Path(args.data) if args.data else default_hwdata()
    verdicts = evaluate_claims(suite, root, None if args.quiet else stderr_progress)
    if args.json:
        print(json.dumps({"suite": suite.name, "source": suite.source, "data": str(root),
                          "claims": verdicts}, indent=1))
    else:
        print_verdicts(suite, verdicts)
    return 0
