"""Survey: a GPU's arithmetic, instruction by instruction, in one report.

For every instruction of a device (every one the local GPU supports with ``cuda``, every
preset of a device with ``virtual:DEVICE``, or one device spec), ``survey`` builds a suite
for the instruction's formats and K (one per shape, shared by instructions of the same
shape), runs it on the device, infers the consistent configurations, and identifies the
device from them adaptively.  The report is the analogue of Khattak & Mikaitis' Table II
[KM25] for this GPU: the features per instruction, the matching presets, and for what no
preset explains, the closest candidates and the features their mismatches implicate.  The
raw outputs (suite and observed files per instruction) are kept, so that the run can be
re-inferred offline with ``mmaprobe infer``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError
from mmaprobe.models.features import feature_value
from mmaprobe.models.presets import presets_for
from mmaprobe.models.space import CandidateSpace, neighbourhood

from . import cuda
from .devices import Device, parse_device, virtual_device
from .identify import Identification, identify
from .infer import infer
from .output import write_atomic
from .suite import SuiteOptions, build_suite
from .suitefile import Observed, Suite, write_observed, write_suite

Progress = Callable[[str], None] | None

#: the columns of the report: (heading, feature)
COLUMNS = [("NFMA", "nfma"), ("F (neab)", "neab"), ("align", "align_rounding"),
           ("final", "final_rounding"), ("products", "product_normalisation"),
           ("carry", "carry_bits"), ("c", "c_placement"), ("interleave", "interleave"),
           ("zero", "zero_sign"), ("NaN", "nan"), ("flush", "flush")]


@dataclass
class Target:
    """One instruction to survey and the device that runs it."""

    name: str
    device: Device


@dataclass
class SurveyRow:
    target: str
    device: str
    shape: tuple[str, str, str, int]
    status: str
    features: dict[str, str]
    presets: list[str]
    note: str
    queries: int
    rows: int
    seconds: float
    unexplained: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def targets(spec: str, names: list[str] | None = None) -> tuple[list[Target], list[str]]:
    """The instructions a survey covers, and notes on those it skips.

    ``cuda``: every instruction the local GPU supports (or those named); ``virtual:DEV``:
    every preset of device DEV as a virtual instruction; anything else: one device spec.
    """
    notes: list[str] = []
    if spec == "cuda":
        harness = cuda.local_harness()
        chosen = [cuda.get_instruction(n) for n in names] if names else [
            i for i in harness.instructions()]
        out = []
        for instr in chosen:
            if not harness.supported(instr):
                notes.append(f"{instr.name}: not supported by this GPU")
            else:
                out.append(Target(instr.name, parse_device(f"cuda:{instr.name}")))
        return out, notes
    if spec.startswith("virtual:"):
        dev = spec.split(":", 1)[1]
        presets = presets_for(dev)
        if not presets:
            raise InputError(f"{spec}: no presets for device {dev!r} (see `mmaprobe presets`)")
        if names:
            presets = [p for p in presets if p.name in names or p.instruction in names]
            if not presets:
                raise InputError(f"{spec}: no preset named {', '.join(names)}")
        return [Target(p.name, virtual_device(p.config, f"preset:{p.name}"))
                for p in presets], notes
    if names:
        raise InputError("--instr goes with --device cuda or --device virtual:DEVICE")
    dev = parse_device(spec)
    return [Target(dev.name, dev)], notes


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "target"


def _shown(c: AccumulatorConfig, feature: str) -> str:
    """A feature's value as the report writes it."""
    if feature not in c.to_dict():
        return "-"
    if feature == "neab":
        return f"{c.frac_bits} ({c.neab})" if c.algorithm in ("fused", "fdrda") else "-"
    v = feature_value(c, feature)
    if isinstance(v, tuple):
        return "+".join(v) or "none"
    if v is None:
        return "unbounded" if feature == "carry_bits" else "-"
    return str(v)


def _agreed(cfgs: list[AccumulatorConfig], feature: str) -> str:
    vals: list[str] = []
    for c in cfgs:
        v = _shown(c, feature)
        if v not in vals:
            vals.append(v)
    return vals[0] if len(vals) == 1 else "{" + " | ".join(vals[:3]) + \
        (" | ..." if len(vals) > 3 else "") + "}"


def survey_one(target: Target, opts: SuiteOptions, suites: dict[tuple, Suite],
               raw_dir: Path | None, max_queries: int, smt_seconds: float,
               progress: Progress = None) -> SurveyRow:
    t0 = time.monotonic()
    dev = target.device
    shape = dev.shape
    key = _key(dev)
    space = neighbourhood(*shape, operands=dev.operands)
    if key not in suites:
        if progress:
            progress(f"survey: building the suite for {shape[0]}/{shape[1]}->{shape[2]} "
                     f"k={shape[3]} ({len(space.configs)} candidates)")
        suites[key] = build_suite(space, opts, progress)
    suite = suites[key]
    d = dev.run(suite.a, suite.b, suite.c)
    obs = Observed(list(suite.ids), d, suite.out_format, {"device": dev.name})
    raw = {}
    if raw_dir is not None:
        base = raw_dir / _slug(target.name)
        write_suite(f"{base}.suite.json", suite)
        write_observed(f"{base}.observed.json", obs, suite)
        raw = {"suite": f"{base}.suite.json", "observed": f"{base}.observed.json"}
    inf = infer(suite, obs, space, progress)
    ident: Identification | None = None
    if inf.explained and len(inf.consistent) > 1:
        sub = CandidateSpace(space.id + "-consistent", "consistent with the suite",
                             [space.configs[i] for i in inf.consistent], shapes=[shape])
        ident = identify(dev, sub, max_queries=max_queries, seed=opts.seed,
                         smt_seconds=smt_seconds, use_smt=smt_seconds > 0,
                         progress=progress)
        remaining = [sub.configs[i] for i in ident.remaining]
        status, note = ident.status, ident.note
    elif inf.explained:
        remaining = [space.configs[inf.consistent[0]]]
        status, note = "identified", "the suite leaves one configuration"
    else:
        remaining = []
        status, note = "unexplained", "no candidate configuration explains the outputs"
    features = {head: _agreed(remaining, f) if remaining else "?" for head, f in COLUMNS}
    presets = [p["preset"] for p in inf.presets if p["matches"]]
    if ident is not None:
        presets = [p for p in presets if p in ident.presets] or presets
    unexplained = [{"closest": c["describe"], "mismatches": c["mismatches"],
                    "implicated_features": c["implicated_features"][:5]}
                   for c in inf.closest[:2]]
    return SurveyRow(target.name, dev.name, shape, status, features, presets, note,
                     len(ident.queries) if ident else 0, suite.size,
                     round(time.monotonic() - t0, 1), unexplained, raw)


def _key(dev) -> tuple:
    """The suite a device needs: its shape and operands (b's format, block scaling)."""
    return tuple(dev.shape) + tuple(dev.operands or (dev.shape[0], None, None))


def _suite_for(key: tuple, opts: SuiteOptions) -> Suite:
    return build_suite(neighbourhood(*key[:4], operands=key[4:]), opts)


def run_survey(tlist: list[Target], opts: SuiteOptions, raw_dir: Path | None = None,
               max_queries: int = 16, smt_seconds: float = 10.0,
               progress: Progress = None, jobs: int = 1) -> list[SurveyRow]:
    """Survey every target (see the module docstring); with ``jobs`` > 1 the suites of
    distinct shapes are built in that many processes first (the device runs stay in
    order, one at a time)."""
    if raw_dir is not None:
        raw_dir.mkdir(parents=True, exist_ok=True)
    suites: dict[tuple, Suite] = {}
    shapes = list(dict.fromkeys(_key(t.device) for t in tlist))
    if jobs > 1 and len(shapes) > 1:
        if progress:
            progress(f"survey: building {len(shapes)} suites in {jobs} processes")
        with ProcessPoolExecutor(max_workers=min(jobs, len(shapes))) as pool:
            futures = {key: pool.submit(_suite_for, key, opts) for key in shapes}
            suites = {key: f.result() for key, f in futures.items()}
    rows = []
    for i, t in enumerate(tlist):
        if progress:
            progress(f"survey: {t.name} ({i + 1}/{len(tlist)})")
        rows.append(survey_one(t, opts, suites, raw_dir, max_queries, smt_seconds, progress))
    return rows


def report(rows: list[SurveyRow], title: str, notes: list[str], seconds: float) -> str:
    """The survey as Markdown: one table row per instruction, then what is unexplained."""
    heads = [h for h, _ in COLUMNS]
    L = [f"# mmaprobe survey: {title}", "",
         f"{len(rows)} instructions in {seconds:.0f} s.  Features agreed by every "
         f"configuration that remains; {{a | b}}: not decided between a and b.  F = 23 + "
         f"neab fraction bits kept at alignment.", "",
         "| instruction | in -> out | K | " + " | ".join(heads) + " | presets | status |",
         "|" + "---|" * (len(heads) + 5)]
    for r in rows:
        fin, fc, fout, k = r.shape
        L.append(f"| {r.target} | {fin} -> {fout} | {k} | "
                 + " | ".join(r.features[h] for h in heads)
                 + f" | {', '.join(r.presets[:3]) or 'none'} | {r.status} |")
    bad = [r for r in rows if r.status not in ("identified", "equivalent")]
    if bad:
        L += ["", "## Not decided or not explained", ""]
        for r in bad:
            L.append(f"- **{r.target}** ({r.status}): {r.note}")
            for u in r.unexplained:
                L.append(f"  - closest: `{u['closest']}` ({u['mismatches']} mismatching "
                         f"vectors; implicated: {', '.join(u['implicated_features']) or '-'})")
    if notes:
        L += ["", "## Skipped", ""] + [f"- {n}" for n in notes]
    if any(r.raw for r in rows):
        L += ["", "Raw outputs (re-infer offline with `mmaprobe infer SUITE OBSERVED`): "
              + ", ".join(f"`{Path(r.raw['observed']).name}`" for r in rows if r.raw)]
    return "\n".join(L) + "\n"


def write_report(path: Path, text: str) -> None:
    write_atomic(path, text, "survey report")


def to_json(rows: list[SurveyRow], notes: list[str], seconds: float) -> str:
    return json.dumps({"instructions": [r.to_json() for r in rows], "skipped": notes,
                       "seconds": round(seconds, 1)}, indent=1, default=str)
