"""The robustness checker: run probes on every configuration of candidate spaces.

For each configuration, the rows of every applicable probe instance are concatenated
(duplicates removed) and evaluated by the model in one call; each probe's decision is then
compared with the configuration's true feature value.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.features import expression_bindings, feature_value
from mmaprobe.models.formats import get_format
from mmaprobe.models.space import CandidateSpace

from .decide import Outcome, decide
from .probe import Instance, Probe

MAX_COUNTEREXAMPLES = 3


@dataclass
class ProbeResult:
    probe: Probe
    tried: int = 0
    correct: int = 0
    wrong: int = 0
    inconclusive: int = 0
    not_applicable: int = 0
    counterexamples: list[dict[str, Any]] = field(default_factory=list)
    inconclusive_examples: list[dict[str, Any]] = field(default_factory=list)
    wrong_configs: list[AccumulatorConfig] = field(default_factory=list)
    tried_configs: list[AccumulatorConfig] = field(default_factory=list)

    def wrong_where(self) -> dict[str, list[str]]:
        """Fields whose values among the wrong configurations are a strict subset of the
        values among the tried ones: where the probe fails, in the space's own terms."""
        out: dict[str, list[str]] = {}
        if not self.wrong_configs:
            return out
        for f in dataclasses.fields(AccumulatorConfig):
            tried = {_show(getattr(c, f.name)) for c in self.tried_configs}
            wrong = {_show(getattr(c, f.name)) for c in self.wrong_configs}
            if wrong < tried:
                out[f.name] = sorted(wrong)
        return out

    @property
    def failed(self) -> bool:
        return self.wrong > 0 or (self.inconclusive > 0 and not self.probe.may_be_inconclusive)

    def to_json(self) -> dict[str, Any]:
        p = self.probe
        return {"id": p.id, "feature": p.feature, "source": p.source, "file": p.file,
                "tried": self.tried, "correct": self.correct, "wrong": self.wrong,
                "inconclusive": self.inconclusive, "not_applicable": self.not_applicable,
                "counterexamples": self.counterexamples,
                "inconclusive_examples": self.inconclusive_examples}


@dataclass
class CheckReport:
    results: list[ProbeResult]
    spaces: list[dict[str, Any]]
    configurations: int
    rows: int
    model_calls: int
    seconds: float

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.results)


def _example(cfg: AccumulatorConfig, inst: Instance, outputs: list[int], outcome: Outcome,
             truth: Any) -> dict[str, Any]:
    fin, fc, fout = (get_format(cfg.in_format), get_format(cfg.c_format),
                     get_format(cfg.out_format))
    wi = (fin.width or fin.bits + 3) // 4
    wc = (fc.width or fc.bits + 3) // 4
    wo = (fout.width or fout.bits + 3) // 4
    rows = []
    names = {r: n for n, r in inst.rows.items()}
    for s, items in inst.sweeps.items():
        for i, r in items:
            names[r] = f"{s}[i={i}]"
    for r in range(len(inst.c)):
        rows.append({"vector": names.get(r, str(r)),
                     "a": [f"{x:#0{wi + 2}x}" for x in inst.a[r]],
                     "b": [f"{x:#0{wi + 2}x}" for x in inst.b[r]],
                     "c": f"{inst.c[r]:#0{wc + 2}x}",
                     "d": f"{outputs[r]:#0{wo + 2}x}"})
    return {"configuration": cfg.to_dict(), "describe": cfg.describe(),
            "decided": outcome.describe(), "true": _jsonable(truth), "vectors": rows}


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return "+".join(v) if v else "none"
    return str(v)


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return list(v)
    return v


def run_check(probes: list[Probe], spaces: list[CandidateSpace],
              progress: Callable[[str], None] | None = None) -> CheckReport:
    """Run every applicable probe on every configuration of the spaces and compare each
    decision with the configuration's true feature value (robust: never wrong).

    >>> from mmaprobe.models.presets import get_preset
    >>> from mmaprobe.models.space import CandidateSpace
    >>> from mmaprobe.probes.library import library_files, load_probes
    >>> space = CandidateSpace("h100", "example", [get_preset("h100-fp16-fp32").config])
    >>> rep = run_check(load_probes(library_files()), [space])
    >>> rep.failed, sum(r.correct for r in rep.results) > 10
    (False, True)
    """
    start = time.perf_counter()
    results = {p.id: ProbeResult(p) for p in probes}
    inst_cache: dict[tuple, Instance] = {}
    fmt_cache: dict[tuple, bool] = {}
    app_cache: dict[tuple, bool] = {}
    dec_cache: dict[tuple, Outcome] = {}
    total_rows = calls = nconf = 0
    space_info = []
    for si, space in enumerate(spaces):
        space_info.append({"id": space.id, "file": space.source,
                           "configurations": len(space.configs),
                           "rejected": space.rejected, "excluded": space.excluded})
        for ci, cfg in enumerate(space.configs):
            nconf += 1
            if progress and ci % 200 == 0:
                progress(f"space {space.id} ({si + 1}/{len(spaces)}): configuration "
                         f"{ci}/{len(space.configs)}")
            todo: list[tuple[Probe, Instance]] = []
            if cfg.operands != (cfg.in_format, None, None):
                # probes speak one input format and rows of K values: configurations with
                # b in a format of its own or with scale factors are not instantiated yet
                for p in probes:
                    results[p.id].not_applicable += 1
                continue
            for p in probes:
                fkey = (p.id, cfg.in_format, cfg.c_format, cfg.out_format, cfg.k)
                if fkey not in fmt_cache:
                    fmt_cache[fkey] = p.applies_to_formats(*fkey[1:])
                truth = {n: feature_value(cfg, n) for n in set(p.requires) | set(p.when)}
                if not fmt_cache[fkey] or not p.when_matches(truth):
                    results[p.id].not_applicable += 1
                    continue
                decided = expression_bindings(cfg, p.requires)
                ikey = fkey + (tuple(sorted(decided.items())),)
                if ikey not in app_cache:
                    app_cache[ikey] = p.applies_when_holds(*fkey[1:], decided)
                if not app_cache[ikey]:
                    results[p.id].not_applicable += 1
                    continue
                inst = inst_cache.get(ikey)
                if inst is None:
                    inst = p.instantiate(cfg.in_format, cfg.c_format, cfg.out_format, cfg.k,
                                         decided)
                    inst_cache[ikey] = inst
                todo.append((p, inst))
            if not todo:
                continue
            index: dict[tuple, int] = {}
            a_rows: list[list[int]] = []
            b_rows: list[list[int]] = []
            c_rows: list[int] = []
            maps: list[list[int]] = []
            for _, inst in todo:
                m = []
                for r in range(len(inst.c)):
                    key = (tuple(inst.a[r]), tuple(inst.b[r]), inst.c[r])
                    if key not in index:
                        index[key] = len(c_rows)
                        a_rows.append(inst.a[r])
                        b_rows.append(inst.b[r])
                        c_rows.append(inst.c[r])
                    m.append(index[key])
                maps.append(m)
            out = evaluate(cfg, np.array(a_rows, dtype=np.uint64),
                           np.array(b_rows, dtype=np.uint64),
                           np.array(c_rows, dtype=np.uint64))
            calls += 1
            total_rows += len(c_rows)
            out_list = [int(x) for x in out]
            fout = get_format(cfg.out_format)
            for (p, inst), m in zip(todo, maps):
                outputs = [out_list[j] for j in m]
                # a decision is a function of the instance and its outputs: memoise it
                dkey = (id(inst), tuple(outputs))
                outcome = dec_cache.get(dkey)
                if outcome is None:
                    outcome = decide(inst, outputs, fout)
                    dec_cache[dkey] = outcome
                truth = feature_value(cfg, p.feature)
                res = results[p.id]
                res.tried += 1
                res.tried_configs.append(cfg)
                ok = outcome.holds(truth)
                if ok is None:
                    res.inconclusive += 1
                    if len(res.inconclusive_examples) < MAX_COUNTEREXAMPLES:
                        res.inconclusive_examples.append(
                            _example(cfg, inst, outputs, outcome, truth))
                elif ok:
                    res.correct += 1
                else:
                    res.wrong += 1
                    res.wrong_configs.append(cfg)
                    if len(res.counterexamples) < MAX_COUNTEREXAMPLES:
                        res.counterexamples.append(_example(cfg, inst, outputs, outcome, truth))
    return CheckReport(list(results.values()), space_info, nconf, total_rows, calls,
                       time.perf_counter() - start)


def stderr_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
