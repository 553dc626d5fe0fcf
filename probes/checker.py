"""The robustness checker: run probes on every configuration of candidate spaces.

For each configuration, the rows of every applicable probe instance are concatenated
(duplicates removed; the batch is cached for the next configuration with the same
instances) and evaluated by the model in one call; each probe's decision is then compared
with the configuration's true feature value.  Silence fails too: on every configuration,
each checked feature that the configuration's outputs can reveal
(:func:`mmaprobe.models.observable.alternatives`) must be decided by some applicable
probe -- a decision that holds for the true value and for none of the others.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mmaprobe.models.accumulator import evaluate_variants, variant_groups
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.features import expression_bindings, feature_value
from mmaprobe.models.formats import get_format
from mmaprobe.models.observable import CHECKED_FEATURES, alternatives
from mmaprobe.models.space import CandidateSpace

from .decide import Outcome, decide
from .gaps import Gap
from .port import carriers, port_instance
from .probe import Instance, InstantiationError, Probe

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
    errors: list[str] = field(default_factory=list)  # instantiations that failed

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
        return (self.wrong > 0 or bool(self.errors)
                or (self.inconclusive > 0 and not self.probe.may_be_inconclusive))

    def to_json(self) -> dict[str, Any]:
        p = self.probe
        return {"id": p.id, "feature": p.feature, "source": p.source, "file": p.file,
                "tried": self.tried, "correct": self.correct, "wrong": self.wrong,
                "inconclusive": self.inconclusive, "not_applicable": self.not_applicable,
                "counterexamples": self.counterexamples,
                "inconclusive_examples": self.inconclusive_examples,
                "instantiation_errors": self.errors[:MAX_COUNTEREXAMPLES]}


@dataclass
class CheckReport:
    results: list[ProbeResult]
    spaces: list[dict[str, Any]]
    configurations: int
    rows: int
    model_calls: int
    seconds: float
    coverage: list[Coverage] = field(default_factory=list)
    #: whether a feature left undecided fails the check (the library's own check); a probe
    #: file under development is checked for robustness and its silence only reported
    silence_fails: bool = True

    @property
    def undecided(self) -> int:
        """Configurations x features left undecided, over every space."""
        return sum(c.undecided for c in self.coverage)

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.results) or (
            self.silence_fails and self.undecided > 0)


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
        row = {"vector": names.get(r, str(r)),
               "a": [f"{x:#0{wi + 2}x}" for x in inst.a[r]],
               "b": [f"{x:#0{wi + 2}x}" for x in inst.b[r]],
               "c": f"{inst.c[r]:#0{wc + 2}x}",
               "d": f"{outputs[r]:#0{wo + 2}x}"}
        if inst.sa is not None:
            row["scale_a"] = [f"{x:#04x}" for x in inst.sa[r]]
            row["scale_b"] = [f"{x:#04x}" for x in inst.sb[r]]
        rows.append(row)
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


@dataclass
class Coverage:
    """Per space and feature: configurations where the feature is observable, decided by
    some applicable probe, or not observable at all (see models/observable.py)."""

    space: str
    feature: str
    configurations: int = 0
    observable: int = 0
    decided: int = 0
    gaps: int = 0      # undecided, but covered by a known gap (probes/gaps.yaml)
    examples: list[str] = field(default_factory=list)  # undecided configurations
    gap_reasons: dict[str, int] = field(default_factory=dict)
    #: algorithm -> [observable, decided, known gap]
    by_algorithm: dict[str, list[int]] = field(default_factory=dict)

    @property
    def undecided(self) -> int:
        """Observable and decided by no probe, outside every known gap: a failure."""
        return self.observable - self.decided - self.gaps

    def to_json(self) -> dict[str, Any]:
        return {"space": self.space, "feature": self.feature,
                "configurations": self.configurations, "observable": self.observable,
                "decided": self.decided, "undecided": self.undecided,
                "known_gaps": self.gaps, "gap_reasons": self.gap_reasons,
                "undecided_examples": self.examples}


def _instances(p: Probe, cfg: AccumulatorConfig, caches: dict,
               carrier: str | None = None) -> Instance | None:
    """The instance of p for cfg, or None when p does not apply (memoised); ``carrier``:
    the input format it is instantiated for (cfg's a format by default), its rows then
    written in cfg's a and b formats (probes/port.py).  A probe written per side (``a.*``,
    ``b.*``) is instantiated for cfg's own a and b formats instead."""
    carrier = carrier or cfg.in_format
    fb = None
    if p.per_side:
        if carrier != cfg.in_format:
            return None
        fb = None if cfg.b_fmt == cfg.in_format else cfg.b_fmt
    fs = cfg.scale_format if p.scaled else None
    fkey = (p.id, carrier, cfg.c_format, cfg.out_format, cfg.k, fb, fs)
    fmt_cache, app_cache, inst_cache, errors = (caches["fmt"], caches["app"], caches["inst"],
                                                caches["errors"])
    ok = fmt_cache.get(fkey)
    if ok is None:
        ok = fmt_cache[fkey] = p.applies_to_formats(*fkey[1:5], fb, fs)
    if not ok:
        return None
    if p.requires or p.when:
        names = caches["names"].get(p.id)
        if names is None:
            names = caches["names"][p.id] = tuple(sorted(set(p.requires) | set(p.when)))
        truth = {n: feature_value(cfg, n) for n in names}
        if not p.when_matches(truth):
            return None
    if not p.applies_to_config(cfg):
        return None
    decided = expression_bindings(cfg, p.requires)
    ikey = fkey + (tuple(sorted(decided.items())),)
    if ikey not in app_cache:
        app_cache[ikey] = p.applies_when_holds(*fkey[1:5], decided, fb, fs)
    if not app_cache[ikey]:
        return None
    if ikey in errors:
        return None
    inst = inst_cache.get(ikey)
    if inst is None:
        try:
            inst = p.instantiate(carrier, cfg.c_format, cfg.out_format, cfg.k, decided, fb,
                                 fs)
        except InstantiationError as e:
            # a probe that claims to apply but cannot build its vectors is a failure of
            # the probe, reported as such (never a crash of the whole check)
            errors[ikey] = str(e)
            return None
        inst_cache[ikey] = inst
    if p.per_side or (carrier, carrier) == (cfg.in_format, cfg.b_fmt):
        return inst
    pkey = ikey + (cfg.in_format, cfg.b_fmt)
    if pkey not in caches["port"]:
        caches["port"][pkey] = port_instance(inst, carrier, cfg.in_format, cfg.b_fmt)
    return caches["port"][pkey]


def _values_of(indices: list[int]) -> Callable[[tuple], Any]:
    """A function picking ``indices`` out of a tuple (a key: one value, a tuple or ())."""
    return operator.itemgetter(*indices) if indices else lambda values: ()


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _batch(todo: list[tuple[Probe, Instance]], cfg: AccumulatorConfig):
    """The rows of several instances as cfg reads them, duplicates removed, and each
    instance's rows in it: (a, b, c, picks), ``picks[i]`` the batch rows of instance i in
    its row order; a and b of a block-scaled unit are packed rows (the k values, then the
    scale factors: a scaled probe's own, else 1)."""
    return _unique_rows([_row_matrix(inst, cfg) for _, inst in todo])


def _union(batches: list[tuple]) -> tuple:
    """(a, b, c, picks): the rows of several batches (see :func:`_batch`) once each, and
    per batch the indices of its rows among them."""
    if all(x is batches[0] for x in batches):
        a, b, c, _ = batches[0]
        return a, b, c, [slice(None)] * len(batches)
    return _unique_rows([np.column_stack([a, b, c]) for a, b, c, _ in batches])


def _unique_rows(blocks: list[np.ndarray]) -> tuple:
    """(a, b, c, picks) of row matrices (a, then b, then c in each row): every distinct
    row once, and per block the indices of its rows among them.

    >>> a, b, c, picks = _unique_rows([np.array([[1, 2, 3], [4, 5, 6]], np.uint64),
    ...                                np.array([[4, 5, 6], [0, 0, 1]], np.uint64)])
    >>> sorted(c.tolist()), [c[p].tolist() for p in picks]  # each block's rows, by c
    ([1, 3, 6], [[3, 6], [6, 1]])
    """
    rows = np.concatenate(blocks)
    # equal rows by a 64-bit hash of each (np.unique on uint64 is fast), checked: on a
    # collision, rows as opaque records (np.unique sorting whole rows)
    with np.errstate(over="ignore"):
        mult = (np.arange(1, rows.shape[1] + 1, dtype=np.uint64) * _MIX) | np.uint64(1)
        keys = (rows * mult).sum(1, dtype=np.uint64)
        keys ^= keys >> np.uint64(31)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if not np.array_equal(rows[first][inverse.ravel()], rows):
        width = rows.dtype.itemsize * rows.shape[1]
        records = np.ascontiguousarray(rows).view(np.dtype((np.void, width))).ravel()
        _, first, inverse = np.unique(records, return_index=True, return_inverse=True)
    unique = rows[first]
    w = (rows.shape[1] - 1) // 2
    ends = np.cumsum([len(m) for m in blocks])
    picks = np.split(inverse.ravel(), ends[:-1])
    return (np.ascontiguousarray(unique[:, :w]), np.ascontiguousarray(unique[:, w:2 * w]),
            np.ascontiguousarray(unique[:, 2 * w]), picks)


def _row_matrix(inst: Instance, cfg: AccumulatorConfig) -> np.ndarray:
    """The instance's rows as one uint64 matrix, a then b (each packed with its scale
    factors on a block-scaled unit) then c (memoised per scale layout)."""
    layout = (cfg.scale_format, cfg.scales)
    memo = inst.__dict__.setdefault("_matrix", {})
    m = memo.get(layout)
    if m is None:
        w = cfg.row_width
        m = np.empty((len(inst.c), 2 * w + 1), dtype=np.uint64)
        m[:, :w], m[:, w:2 * w] = inst.packed(cfg)
        m[:, 2 * w] = np.array(inst.c, dtype=np.uint64)
        memo[layout] = m
    return m


def run_check(probes: list[Probe], spaces: list[CandidateSpace],
              progress: Callable[[str], None] | None = None,
              coverage: tuple[str, ...] | None = None,
              gaps: list[Gap] | None = None) -> CheckReport:
    """Run every applicable probe on every configuration of the spaces and compare each
    decision with the configuration's true feature value (robust: never wrong).

    ``coverage``: features that some applicable probe must decide on every configuration
    where they are observable (``models.observable``); default: those of
    ``CHECKED_FEATURES`` that the probes decide.  A configuration on which an observable
    feature is left undecided fails the check ('undecided'), as a wrong decision does,
    unless one of ``gaps`` (known gaps of the library, probes/gaps.yaml) covers it.

    >>> from mmaprobe.models.presets import get_preset
    >>> from mmaprobe.models.space import CandidateSpace
    >>> from mmaprobe.probes.library import library_files, load_probes
    >>> space = CandidateSpace("h100", "example", [get_preset("h100-fp16-fp32").config])
    >>> rep = run_check(load_probes(library_files()), [space])
    >>> rep.failed, sum(r.correct for r in rep.results) > 10, rep.undecided
    (False, True, 0)
    """
    start = time.perf_counter()
    results = {p.id: ProbeResult(p) for p in probes}
    if coverage is None:
        have = {p.feature for p in probes}
        coverage = tuple(f for f in CHECKED_FEATURES if f in have)
    caches: dict[str, dict] = {"fmt": {}, "app": {}, "inst": {}, "errors": {}, "names": {},
                               "port": {}}
    batch_cache: dict[tuple, Any] = {}
    dec_cache: dict[tuple, Outcome] = {}
    total_rows = calls = nconf = 0
    space_info = []
    cover: list[Coverage] = []
    # a probe's instance depends only on the shape and the values of the features it
    # requires (or restricts with when): probes reading the same features form a group,
    # and each group's applicable (probe, instance) list is memoised on those values
    names_of = {p.id: tuple(sorted(set(p.requires) | set(p.when))) for p in probes}
    all_names = sorted({n for ns in names_of.values() for n in ns})
    by_names: dict[tuple[str, ...], list[Probe]] = {}
    per_config: list[Probe] = []  # verified_on: decided configuration by configuration
    for p in probes:
        if p.verified_on is None:
            by_names.setdefault(names_of[p.id], []).append(p)
        else:
            per_config.append(p)
    groups = [(_values_of([all_names.index(n) for n in ns]), ps)
              for ns, ps in by_names.items()]
    group_cache: dict[tuple, list[tuple[Probe, Instance]]] = {}
    for si, space in enumerate(spaces):
        space_info.append({"id": space.id, "file": space.source,
                           "configurations": len(space.configs),
                           "rejected": space.rejected, "excluded": space.excluded})
        cov = {f: Coverage(space.id, f) for f in coverage}
        cover.extend(cov.values())
        todos: list[list[tuple[Probe, Instance]]] = []
        for ci, cfg in enumerate(space.configs):
            nconf += 1
            if progress and ci % 200 == 0:
                progress(f"space {space.id} ({si + 1}/{len(spaces)}): configuration "
                         f"{ci}/{len(space.configs)}")
            todo: list[tuple[Probe, Instance]] = []
            # probes speak one input format: on a unit whose b has a format of its own they
            # are instantiated for a's format, else for b's, else for the pair's virtual
            # carrier, and written again per side (probes/port.py); a probe applies at most
            # once
            fv = tuple(feature_value(cfg, n) for n in all_names)
            for carrier in carriers(cfg):
                shape = (carrier, cfg.c_format, cfg.out_format, cfg.k)
                have = {p.id for p, _ in todo}
                for gi, (values, ps) in enumerate(groups):
                    gkey = (gi, shape, cfg.in_format, cfg.b_fmt, cfg.scale_format, values(fv))
                    found = group_cache.get(gkey)
                    if found is None:
                        found = group_cache[gkey] = [
                            (p, inst) for p in ps
                            if (inst := _instances(p, cfg, caches, carrier)) is not None]
                    todo.extend(x for x in found if x[0].id not in have)
                for p in per_config:
                    inst = _instances(p, cfg, caches, carrier)
                    if inst is not None and p.id not in have:
                        todo.append((p, inst))
            todos.append(todo)
        # the model on each configuration's rows; configurations that differ only in neab
        # and the final rounding in one call on the union of their rows
        # (accumulator.evaluate_variants), as one call costs about as much as a few hundred
        # rows (its loop over the blocks)
        batches: list[tuple | None] = []
        for cfg, todo in zip(space.configs, todos):
            bkey = tuple(id(inst) for _, inst in todo) + (cfg.scale_format, cfg.scales)
            if todo and bkey not in batch_cache:
                batch_cache[bkey] = _batch(todo, cfg)
            batches.append(batch_cache[bkey] if todo else None)
        tried = [ci for ci, todo in enumerate(todos) if todo]
        outs: dict[int, np.ndarray] = {}
        for members in variant_groups([space.configs[ci] for ci in tried]):
            group = [tried[i] for i in members]
            a_arr, b_arr, c_arr, picks = _union([batches[i] for i in group])
            many = evaluate_variants([space.configs[i] for i in group], a_arr, b_arr, c_arr)
            outs.update((i, many[j][pick]) for j, (i, pick) in enumerate(zip(group, picks)))
            calls += 1
            total_rows += len(c_arr) * len(group)
        for ci, (cfg, todo) in enumerate(zip(space.configs, todos)):
            outcomes: dict[str, list[tuple[Outcome, Any]]] = {}
            if todo:
                out, maps = outs[ci], batches[ci][3]
                fout = get_format(cfg.out_format)
                for (p, inst), m in zip(todo, maps):
                    outputs = out[m].tolist()
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
                        outcomes.setdefault(p.feature, []).append((outcome, p.id))
                    else:
                        res.wrong += 1
                        res.wrong_configs.append(cfg)
                        if len(res.counterexamples) < MAX_COUNTEREXAMPLES:
                            res.counterexamples.append(
                                _example(cfg, inst, outputs, outcome, truth))
            for f, c in cov.items():
                c.configurations += 1
                alts = alternatives(cfg, f)
                if not alts:
                    continue
                c.observable += 1
                ba = c.by_algorithm.setdefault(cfg.algorithm, [0, 0, 0])
                ba[0] += 1
                if any(not any(o.holds(v) for v in alts) for o, _ in outcomes.get(f, ())):
                    c.decided += 1
                    ba[1] += 1
                    continue
                gap = next((g for g in gaps or () if g.covers(cfg, f)), None)
                if gap is not None:
                    c.gaps += 1
                    ba[2] += 1
                    c.gap_reasons[gap.why] = c.gap_reasons.get(gap.why, 0) + 1
                elif len(c.examples) < MAX_COUNTEREXAMPLES:
                    c.examples.append(cfg.describe())
    for res in results.values():
        # on each configuration a probe is tried or does not apply
        res.not_applicable = nconf - res.tried
    errors = {}
    for ikey, msg in caches["errors"].items():
        errors.setdefault(ikey[0], []).append(msg)
    for pid, msgs in errors.items():
        results[pid].errors = msgs
    return CheckReport(list(results.values()), space_info, nconf, total_rows, calls,
                       time.perf_counter() - start, cover)


def run_check_parallel(probes: list[Probe], spaces: list[CandidateSpace], workers: int,
                       progress: Callable[[str], None] | None = None,
                       coverage: tuple[str, ...] | None = None,
                       gaps: list[Gap] | None = None) -> CheckReport:
    """run_check over groups of spaces in ``workers`` processes, merged into one report
    (the same counts as one process; spaces keep their order)."""
    if workers <= 1 or len(spaces) < 2:
        return run_check(probes, spaces, progress, coverage, gaps)
    import multiprocessing

    start = time.perf_counter()
    # balance by configurations x K (the model's work), largest first
    order = sorted(range(len(spaces)), key=lambda i: -sum(c.k for c in spaces[i].configs))
    groups: list[list[int]] = [[] for _ in range(workers)]
    load = [0] * workers
    for i in order:
        w = load.index(min(load))
        groups[w].append(i)
        load[w] += sum(c.k for c in spaces[i].configs)
    jobs = [(probes, [spaces[i] for i in sorted(g)], coverage, gaps) for g in groups if g]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(len(jobs)) as pool:
        parts = pool.map(_check_job, jobs)
    by_id = {p.id: ProbeResult(p) for p in probes}
    for rep in parts:
        for r in rep.results:
            m = by_id[r.probe.id]
            for name in ("tried", "correct", "wrong", "inconclusive", "not_applicable"):
                setattr(m, name, getattr(m, name) + getattr(r, name))
            m.counterexamples = (m.counterexamples + r.counterexamples)[:MAX_COUNTEREXAMPLES]
            m.inconclusive_examples = (m.inconclusive_examples
                                       + r.inconclusive_examples)[:MAX_COUNTEREXAMPLES]
            m.wrong_configs += r.wrong_configs
            m.tried_configs += r.tried_configs
            m.errors += [e for e in r.errors if e not in m.errors]
    index = {s.id: i for i, s in enumerate(spaces)}
    infos = sorted((x for rep in parts for x in rep.spaces), key=lambda x: index[x["id"]])
    cover = sorted((c for rep in parts for c in rep.coverage), key=lambda c: index[c.space])
    return CheckReport(list(by_id.values()), infos, sum(r.configurations for r in parts),
                       sum(r.rows for r in parts), sum(r.model_calls for r in parts),
                       time.perf_counter() - start, cover)


def _check_job(job: tuple) -> CheckReport:
    probes, spaces, coverage, gaps = job
    return run_check(probes, spaces, None, coverage, gaps)


def stderr_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
