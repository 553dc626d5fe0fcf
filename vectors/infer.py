"""Inference: which candidate configurations explain a device's observed outputs.

Every candidate is evaluated on the whole suite (one vectorised model call per candidate);
the consistent ones are those matching every observed output.  Features on which all of
them agree are decided (with the probe, or else the vector, that ruled out the other
values).  When none is consistent, the closest candidates are reported with the vectors that
rule them out, and the refinement loop of [KM25]'s Algorithm 1 is run automatically: each
feature of a closest candidate is changed, one at a time, to every value of its domain, and
the changes that explain more of the mismatching vectors are reported (the features those
vectors implicate) -- including values the space lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import (
    ALGORITHMS,
    ALIGN_ROUNDINGS,
    INTERLEAVES,
    NAN_STYLES,
    NORMALISATIONS,
    PLACEMENTS,
    AccumulatorConfig,
    ConfigError,
)
from mmaprobe.models.errors import InputError, MmaprobeError
from mmaprobe.models.features import FEATURES, expression_bindings, feature_value
from mmaprobe.models.formats import ROUNDING_MODES, get_format
from mmaprobe.models.observable import proven_classes
from mmaprobe.models.partition import outputs_matrix
from mmaprobe.models.presets import presets_with
from mmaprobe.models.space import CandidateSpace
from mmaprobe.probes.decide import decide
from mmaprobe.probes.library import library_files, load_probes, probes_from_documents
from mmaprobe.probes.probe import Probe

from .suitefile import Observed, Suite, hexbits

Progress = Callable[[str], None] | None
MAX_CLOSEST = 3
MAX_REFINE = 8
MAX_SHOWN = 8

#: domains tried by the refinement loop (single-feature changes of a closest candidate)
DOMAINS: dict[str, list[Any]] = {
    "algorithm": list(ALGORITHMS),
    "neab": list(range(-12, 9)),
    "product_normalisation": list(NORMALISATIONS),
    "align_rounding": list(ALIGN_ROUNDINGS),
    "carry_bits": [None, 0, 1, 2, 3, 4, 5],
    "c_placement": list(PLACEMENTS),
    "interleave": list(INTERLEAVES),
    "final_rounding": list(ROUNDING_MODES),
    "out_frac_bits": [None, 7, 10, 13, 16, 20, 22],
    "late_rounding": list(ROUNDING_MODES),
    "flush": [(), ("inputs",), ("output",), ("inputs", "output"),
              ("inputs", "products", "sums", "output")],
    "nan": list(NAN_STYLES),
    "product_overflow": [False, True],
}


@dataclass
class Inference:
    suite: Suite
    observed: Observed
    space: CandidateSpace
    mismatches: np.ndarray            # per candidate: number of mismatching vectors
    consistent: list[int]
    decided: dict[str, dict[str, Any]]
    probe_decisions: list[dict[str, Any]]
    presets: list[dict[str, Any]]
    closest: list[dict[str, Any]] = field(default_factory=list)

    @property
    def explained(self) -> bool:
        return bool(self.consistent)


def _value(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _feature_table(cfgs: list[AccumulatorConfig]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in FEATURES:
        out[f] = {repr(_value(feature_value(c, f))) for c in cfgs}
    return out


def _decided_features(space: CandidateSpace, O: np.ndarray, d: np.ndarray, consistent: list[int],
                      suite: Suite, probe_dec: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    cfgs = space.configs
    cons = [cfgs[i] for i in consistent]
    out: dict[str, dict[str, Any]] = {}
    mism = O != d[None, :]
    for f in FEATURES:
        vals = {repr(_value(feature_value(c, f))) for c in cons}
        if len(vals) != 1:
            continue
        value = _value(feature_value(cons[0], f))
        others = [i for i, c in enumerate(cfgs) if repr(_value(feature_value(c, f))) not in vals]
        if not others:
            continue  # the space never varied it: not decided by the device
        by_probe = [p["probe"] for p in probe_dec if p["feature"] == f and p["holds"]]
        cover = mism[others].sum(0)
        j = int(np.argmax(cover))
        prov = suite.provenance[j]
        out[f] = {"value": value, "probes": by_probe,
                  "ruled_out": len(others),
                  "vector": suite.ids[j], "vector_provenance": _prov_brief(prov),
                  "vector_rules_out": int(cover[j])}
    return out


def _prov_brief(prov: dict[str, Any]) -> str:
    kind = prov.get("kind", "?")
    if kind == "probe":
        return f"probe {prov.get('probe')} ({prov.get('feature')})"
    if kind == "discriminator":
        feats = ",".join(prov.get("features", [])[:4])
        return f"{prov.get('method')}{f' [{feats}]' if feats else ''}"
    if kind == "query":
        return f"identify query {prov.get('query')}"
    return str(prov.get("method", kind))


def suite_probes_of(suite: Suite) -> dict[str, Probe]:
    """The probes a suite was made with: the documents it embeds (validated like probe
    files, and checked against the digests of its instance records), or, for a suite that
    embeds none, the shipped library's probes of the same id and digest."""
    where = suite.source
    gen = suite.meta.get("generator", {}) if isinstance(suite.meta, dict) else {}
    docs = gen.get("probes") if isinstance(gen, dict) else None
    if not docs:
        return {p.id: p for p in load_probes(library_files())}
    if not isinstance(docs, dict):
        raise InputError(f"{where}: generator.probes must map probe ids to documents")
    probes = {p.id: p for p in probes_from_documents(docs, where)}
    for r in gen.get("probe_instances", []):
        p = probes.get(r.get("probe")) if isinstance(r, dict) else None
        if p is not None and r.get("digest") != p.digest:
            raise InputError(f"{where}: probe {p.id}: the embedded document's digest "
                             f"{p.digest} is not the one its vectors were made with "
                             f"({r.get('digest')}): the suite was edited")
    return probes


def probe_decisions(suite: Suite, d: np.ndarray, truth: AccumulatorConfig | None
                    ) -> list[dict[str, Any]]:
    """Decisions of the suite's probe instances on the observed outputs.

    Instances of a probe that needs decided features are reported only when their bindings
    and its ``when`` match ``truth`` (a consistent or closest candidate), as the pipeline
    would have chosen; without a candidate, only instances that need nothing.
    """
    recs = suite.meta.get("generator", {}).get("probe_instances", [])
    if not recs:
        return []
    probes = suite_probes_of(suite)
    index = {vid: i for i, vid in enumerate(suite.ids)}
    fout = get_format(suite.out_format)
    out = []
    for r in recs:
        p = probes.get(r.get("probe"))
        if p is None or r.get("digest") != p.digest or any(v not in index for v in r["vectors"]):
            continue
        bnd = {k: int(v) for k, v in r.get("bindings", {}).items()}
        if truth is not None:
            # the pipeline runs an instance only where its bindings and its `when` hold
            # (a probe may restrict string features without binding an integer one)
            if bnd and expression_bindings(truth, p.requires) != bnd:
                continue
            tv = {n: feature_value(truth, n) for n in set(p.requires) | set(p.when)}
            if not p.when_matches(tv):
                continue
        elif bnd or p.when:
            continue
        try:
            # a probe on a mixed-format suite names the format it was instantiated for
            # (probes/port.py): the same rows, sweeps and names, whose outputs it decides on
            inst = p.instantiate(r.get("carrier", suite.in_format), suite.c_format,
                                 suite.out_format, suite.k, bnd,
                                 suite.operands[0] if p.per_side else None,
                                 suite.scale_format)
        except MmaprobeError:
            continue
        if len(inst.c) != len(r["vectors"]):
            continue
        outputs = [int(d[index[v]]) for v in r["vectors"]]
        outcome = decide(inst, outputs, fout)
        holds = None
        if truth is not None and outcome.kind != "inconclusive":
            holds = bool(outcome.holds(feature_value(truth, p.feature)))
        out.append({"probe": p.id, "feature": p.feature, "outcome": outcome.describe(),
                    "bindings": bnd, "holds": bool(holds) if holds is not None else False,
                    "agrees_with_candidate": holds})
    return out


def _mutations(cfg: AccumulatorConfig, suite: Suite, d: np.ndarray, bad: np.ndarray
               ) -> list[dict[str, Any]]:
    """Single-feature changes of cfg and how many mismatching vectors each explains."""
    rows = np.flatnonzero(bad)
    res = []
    n_bad = int(rows.size)
    for fname, dom in DOMAINS.items():
        for v in dom:
            cur = getattr(cfg, fname)
            if v == cur or (isinstance(cur, tuple) and tuple(v) == cur):
                continue
            changes: dict[str, Any] = {fname: v}
            if fname == "algorithm" and v == "sfma":
                changes["nfma"] = 1
            try:
                alt = cfg.replace(**changes)
            except (ConfigError, TypeError):
                continue
            try:
                o = evaluate(alt, suite.a, suite.b, suite.c)
            except MmaprobeError:
                continue
            mism = o != d
            fixed = int(n_bad - mism[rows].sum())
            broke = int(mism.sum() - mism[rows].sum())
            if fixed > 0 and fixed > broke:
                res.append({"feature": fname, "value": _value(v), "from": _value(cur),
                            "explains": fixed, "of": n_bad, "breaks": broke,
                            "explains_all": bool(not mism.any())})
    res.sort(key=lambda r: (-(r["explains"] - r["breaks"]), r["feature"]))
    return res[:10]


def infer(suite: Suite, observed: Observed, space: CandidateSpace,
          progress: Progress = None, jobs: int = 1) -> Inference:
    """Which configurations of ``space`` explain the observed outputs of ``suite``.

    Every candidate is evaluated on the whole suite (the model runs once per class of
    candidates that models/observable.py proves equivalent); the consistent ones match every
    output.  The result says which features they agree on (and which probe or vector
    decided each), which presets match, and, when none is consistent, the closest
    candidates and the single-feature changes that explain the mismatching vectors.
    """
    cfgs = space.configs
    d = observed.d
    if progress:
        progress(f"infer: evaluating {len(cfgs)} candidates on {suite.size} vectors")
    # one configuration per class proven to give the same outputs (observable.py)
    proven = proven_classes(cfgs)
    reps = np.unique(proven, return_index=True)[1]
    O = outputs_matrix([cfgs[i] for i in reps], suite.a, suite.b, suite.c, progress,
                       jobs)[proven]
    mism = (O != d[None, :])
    counts = mism.sum(1)
    consistent = [int(i) for i in np.flatnonzero(counts == 0)]
    truth = cfgs[consistent[0]] if consistent else cfgs[int(np.argmin(counts))]
    pdec = probe_decisions(suite, d, truth)
    decided = _decided_features(space, O, d, consistent, suite, pdec) if consistent else {}
    presets = []
    for p in presets_with(suite.in_format, suite.c_format, suite.out_format, suite.k,
                          operands=suite.operands):
        o = evaluate(p.config, suite.a, suite.b, suite.c)
        n = int((o != d).sum())
        presets.append({"preset": p.name, "mismatches": n, "matches": n == 0,
                        "in_space": p.config in set(cfgs), "citation": p.citation})
    presets.sort(key=lambda r: (r["mismatches"], r["preset"]))
    inf = Inference(suite, observed, space, counts, consistent, decided, pdec, presets)
    if not consistent:
        # refine the MAX_REFINE closest; report first those a one-feature change explains
        order = np.argsort(counts, kind="stable")[:MAX_REFINE]
        fout = get_format(suite.out_format)
        for ci in order:
            ci = int(ci)
            bad = mism[ci]
            rows = np.flatnonzero(bad)
            vecs = []
            feats: dict[str, int] = {}
            for j in rows:
                prov = suite.provenance[int(j)]
                fl = [prov["feature"]] if prov.get("kind") == "probe" else list(
                    prov.get("features", []))
                for f in fl:
                    feats[f] = feats.get(f, 0) + 1
                if len(vecs) < MAX_SHOWN:
                    vecs.append({"id": suite.ids[int(j)], "provenance": _prov_brief(prov),
                                 "observed": hexbits(fout, int(d[j])),
                                 "candidate": hexbits(fout, int(O[ci, j]))})
            muts = _mutations(cfgs[ci], suite, d, bad)
            for m in muts:
                feats[m["feature"]] = feats.get(m["feature"], 0) + m["explains"]
            implicated = sorted(feats, key=lambda f: -feats[f])
            inf.closest.append({"configuration": cfgs[ci].to_dict(),
                                "describe": cfgs[ci].describe(), "mismatches": int(counts[ci]),
                                "vectors": vecs, "implicated_features": implicated,
                                "refinements": muts})
        inf.closest.sort(key=lambda c: (not any(m["explains_all"] for m in c["refinements"]),
                                        c["mismatches"]))
        inf.closest = inf.closest[:MAX_CLOSEST]
    return inf


def to_json(inf: Inference) -> dict[str, Any]:
    cfgs = inf.space.configs
    cons = [cfgs[i] for i in inf.consistent]
    return {"suite_vectors": inf.suite.size, "space": {"id": inf.space.id,
                                                        "source": inf.space.source,
                                                        "configurations": len(cfgs)},
            "explained": inf.explained, "consistent_count": len(cons),
            "consistent": [{"describe": c.describe(), "configuration": c.to_dict()}
                           for c in cons[:50]],
            "decided": inf.decided, "probe_decisions": inf.probe_decisions,
            "matching_presets": [p["preset"] for p in inf.presets if p["matches"]],
            "presets": inf.presets, "closest": inf.closest}


def report(inf: Inference) -> str:
    cfgs = inf.space.configs
    su = inf.suite
    b_fmt, sf, sb = su.operands
    ab = su.in_format if b_fmt == su.in_format else f"{su.in_format} x {b_fmt}"
    scaled = f", scale factors {sf} per {sb} products" if sf else ""
    L = ["# mmaprobe infer", "",
         f"Suite: {su.size} vectors, {ab} x {su.k}{scaled} + {su.c_format} -> "
         f"{su.out_format}.  Space: {inf.space.describe()}.", ""]
    if inf.explained:
        L += [f"**{len(inf.consistent)} candidate configuration(s) consistent with every "
              f"observed output.**", ""]
        for i in inf.consistent[:20]:
            L.append(f"- `{cfgs[i].describe()}`")
        if len(inf.consistent) > 20:
            L.append(f"- ... {len(inf.consistent) - 20} more")
        L += ["", "## Decided features", "", "| feature | value | decided by |", "|---|---|---|"]
        for f, r in inf.decided.items():
            by = ", ".join(f"probe {p}" for p in r["probes"]) or \
                f"vector {r['vector']} ({r['vector_provenance']})"
            L.append(f"| {f} | {r['value']} | {by} |")
    else:
        L += ["**No candidate configuration explains the observed outputs** (the device is "
              "outside the space, or a feature value is missing from it).", "",
              "## Closest candidates", ""]
        for c in inf.closest:
            L += [f"### `{c['describe']}`: {c['mismatches']} mismatching vector(s)", "",
                  "Implicated features: " + (", ".join(c["implicated_features"]) or "none"), "",
                  "| vector | made by | observed | candidate |", "|---|---|---|---|"]
            for v in c["vectors"]:
                L.append(f"| {v['id']} | {v['provenance']} | {v['observed']} | "
                         f"{v['candidate']} |")
            if c["refinements"]:
                L += ["", "Refinements (one feature changed):", ""]
                for m in c["refinements"][:5]:
                    L.append(f"- {m['feature']}: {m['from']} -> {m['value']} explains "
                             f"{m['explains']}/{m['of']} (breaks {m['breaks']})"
                             f"{' -- explains every output' if m['explains_all'] else ''}")
            L.append("")
    if inf.probe_decisions:
        L += ["", "## Probe decisions", "", "| probe | feature | outcome |", "|---|---|---|"]
        for p in inf.probe_decisions:
            L.append(f"| {p['probe']} | {p['feature']} | {p['outcome']} |")
    L += ["", "## Presets", ""]
    match = [p["preset"] for p in inf.presets if p["matches"]]
    L.append("Matching: " + (", ".join(match) if match else "none"))
    near = [p for p in inf.presets if not p["matches"]][:5]
    if near:
        L.append("")
        L.append("Nearest others: " + ", ".join(f"{p['preset']} ({p['mismatches']} mismatches)"
                                                 for p in near))
    return "\n".join(L) + "\n"


__all__ = ["Inference", "infer", "report", "to_json"]
