"""Suite generation: probes in pipeline order, discriminators for the space, ISSM rows.

``build_suite`` returns a :class:`~mmaprobe.vectors.suitefile.Suite` whose vectors are

1. every applicable library probe, instantiated in pipeline order (a probe that requires
   decided features is instantiated once per distinct binding of those features across the
   candidate space, since the device's values are not known yet);
2. random rows (seed 000's ISSM: normal-distribution inputs plus a Schryer-style edge mix);
3. discriminators: rows chosen greedily from a model-evaluated pool of targeted rows to split
   the candidate space as finely as possible, then, for classes still together, vectors
   synthesised by the SMT engine (``smt.synth.distinguish``, time-bounded) or, where the
   encoding does not cover a configuration or the solver gives up, by a model-based search
   over fresh rows aimed at that class.  Provenance says which method made each vector.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import MmaprobeError
from mmaprobe.models.formats import get_format
from mmaprobe.models.partition import classes, outputs_matrix, refine, split_fields, split_scores
from mmaprobe.models.rows import issm_rows, pool_rows, targeted_rows
from mmaprobe.models.space import CandidateSpace

from .suitefile import Suite

Progress = Callable[[str], None] | None


@dataclass
class SuiteOptions:
    seed: int = 0
    random: int = 64
    pool: int = 1500
    max_discriminators: int = 200
    smt_seconds: float = 30.0
    smt_pair_seconds: float = 8.0
    local_rows: int = 600
    local_searches: int = 40
    use_smt: bool = True
    probe_files: list[str] | None = None


@dataclass
class _Builder:
    space: CandidateSpace
    ids: list[str] = field(default_factory=list)
    a: list[np.ndarray] = field(default_factory=list)
    b: list[np.ndarray] = field(default_factory=list)
    c: list[int] = field(default_factory=list)
    prov: list[dict[str, Any]] = field(default_factory=list)

    def add(self, vid: str, a: np.ndarray, b: np.ndarray, c: int, prov: dict[str, Any]) -> None:
        self.ids.append(vid)
        self.a.append(np.asarray(a, dtype=np.uint64))
        self.b.append(np.asarray(b, dtype=np.uint64))
        self.c.append(int(c))
        self.prov.append(prov)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = self.space.k
        if not self.ids:
            z = np.zeros((0, k), dtype=np.uint64)
            return z, z.copy(), np.zeros(0, dtype=np.uint64)
        return (np.stack(self.a), np.stack(self.b), np.array(self.c, dtype=np.uint64))


# -- probes ---------------------------------------------------------------------------------

def pipeline_order(probes: list[Any]) -> list[Any]:
    """Probes sorted so that each comes after the probes deciding what it requires."""
    done: set[str] = set()
    left = list(probes)
    out = []
    while left:
        ready = [p for p in left if all(r in done or not any(q.feature == r for q in left)
                                        for r in p.requires)]
        if not ready:  # a cycle or a requirement nobody decides: keep file order
            ready = left[:1]
        for p in ready:
            out.append(p)
            done.add(p.feature)
            left.remove(p)
    return out


def probe_vectors(bld: _Builder, files: list[str] | None, notes: list[str],
                  max_bindings: int = 16) -> list[dict[str, Any]]:
    """Instantiate applicable probes into bld; returns the instance records for infer."""
    from mmaprobe.models.features import expression_bindings, feature_value
    from mmaprobe.probes.library import library_files, load_probes
    from mmaprobe.probes.probe import InstantiationError

    sp = bld.space
    paths = files if files is not None else [str(p) for p in library_files("library")]
    if not paths:
        notes.append("probe library is empty: no probe vectors")
        return []
    try:
        loaded = load_probes(paths)
    except MmaprobeError as e:
        if files is not None:
            raise
        # the shipped library is broken (being edited?): say so, build the rest of the suite
        notes.append(f"probe library not loaded, no probe vectors: {e}")
        print(f"mmaprobe suite: warning: probe library not loaded: {e}", file=sys.stderr)
        return []
    probes = [p for p in loaded
              if p.applies_to_formats(sp.in_format, sp.c_format, sp.out_format, sp.k)]
    records = []
    for p in pipeline_order(probes):
        bindings: list[dict[str, int]] = []
        for cfg in sp.configs:
            truth = {n: feature_value(cfg, n) for n in set(p.requires) | set(p.when)}
            if not p.when_matches(truth):
                continue
            bnd = expression_bindings(cfg, p.requires)
            if bnd not in bindings:
                bindings.append(bnd)
        if not bindings:
            continue
        if len(bindings) > max_bindings:
            notes.append(f"probe {p.id}: {len(bindings)} bindings of {list(p.requires)} in "
                         f"the space; instantiated the first {max_bindings}")
            bindings = bindings[:max_bindings]
        for bnd in bindings:
            try:
                inst = p.instantiate(sp.in_format, sp.c_format, sp.out_format, sp.k, bnd)
            except InstantiationError as e:
                notes.append(f"probe {p.id} skipped for {bnd}: {e}")
                continue
            tag = "" if not bnd else "@" + ",".join(f"{n}={v}" for n, v in sorted(bnd.items()))
            names = {r: (n, None) for n, r in inst.rows.items()}
            for s, items in inst.sweeps.items():
                for i, r in items:
                    names[r] = (s, i)
            vids = []
            for r in range(len(inst.c)):
                name, idx = names[r]
                vid = f"probe.{p.id}.{name}{'' if idx is None else f'[{idx}]'}{tag}"
                prov = {"kind": "probe", "probe": p.id, "feature": p.feature,
                        "vector": name, "source": p.source}
                if idx is not None:
                    prov["sweep_index"] = idx
                if bnd:
                    prov["bindings"] = dict(bnd)
                bld.add(vid, inst.a[r], inst.b[r], inst.c[r], prov)
                vids.append(vid)
            records.append({"probe": p.id, "file": p.file, "feature": p.feature,
                            "bindings": dict(bnd), "vectors": vids})
    return records


# -- discriminators -----------------------------------------------------------------------------

def _smt_pair(x: AccumulatorConfig, y: AccumulatorConfig, seconds: float):
    """(vector or None, status note) from smt.synth.distinguish, never raising."""
    try:
        from mmaprobe.smt.synth import distinguish
    except Exception as e:  # the SMT engine is optional at runtime
        return None, f"unavailable ({type(e).__name__}: {e})"
    try:
        d = distinguish(x, y, timeout=seconds)
    except MmaprobeError as e:
        return None, f"not encodable ({e})"
    except Exception as e:  # an encoding mismatch or solver failure: fall back, say why
        return None, f"failed ({type(e).__name__}: {str(e)[:120]})"
    if d.status == "distinct" and d.vector is not None:
        return d.vector, f"distinct ({d.detail}, {d.seconds:.1f} s)"
    return None, f"{d.status} ({d.detail})"


def discriminate(bld: _Builder, opts: SuiteOptions, rng: np.random.Generator,
                 notes: list[str], progress: Progress = None) -> dict[str, Any]:
    sp = bld.space
    cfgs = sp.configs
    a0, b0, c0 = bld.arrays()
    labels = np.zeros(len(cfgs), dtype=np.int64)
    if len(bld.ids):
        base = outputs_matrix(cfgs, a0, b0, c0, progress)
        for j in range(base.shape[1]):
            labels = refine(labels, base[:, j])
    start_classes = int(labels.max()) + 1
    ref = cfgs[0]
    (pa, pb, pc), kinds = pool_rows(ref, opts.pool, rng)
    if progress:
        progress(f"suite: evaluating {len(cfgs)} configurations on a pool of {opts.pool} rows")
    pool = outputs_matrix(cfgs, pa, pb, pc, progress)
    added = 0
    n_disc = 0
    # 1. greedy selection from the pool
    while added < opts.max_discriminators:
        live = np.concatenate([g for g in classes(labels) if len(g) > 1]) \
            if (np.bincount(labels) > 1).any() else np.zeros(0, dtype=np.int64)
        if live.size == 0:
            break
        scores = split_scores(labels[live], pool[live])
        j = int(np.argmin(scores))
        if scores[j] >= float(np.sum(np.bincount(labels[live]) ** 2.0)):
            break
        sub = [cfgs[i] for i in live]
        fields = split_fields(sub, pool[live, j])
        labels = refine(labels, pool[:, j])
        n_disc += 1
        bld.add(f"disc.pool.{n_disc:03d}", pa[j], pb[j], int(pc[j]),
                {"kind": "discriminator", "method": "model-search (pool)", "row_kind": kinds[j],
                 "features": fields})
        added += 1
    after_pool = int(labels.max()) + 1
    # 2. classes still together: SMT distinguish on representative pairs, else local search
    smt_left = opts.smt_seconds if opts.use_smt else 0.0
    smt_used = smt_found = 0
    equivalent: list[list[str]] = []
    unresolved: list[list[int]] = []
    tried: set[tuple[int, int]] = set()
    local_budget = opts.local_searches
    while added < opts.max_discriminators:
        groups = [g for g in classes(labels) if len(g) > 1]
        groups = [g for g in groups if (int(g[0]), int(g[-1])) not in tried]
        if not groups:
            break
        g = groups[0]
        x, y = int(g[0]), int(g[-1])
        tried.add((x, y))
        vec = None
        method = ""
        if smt_left > 0.5:
            t0 = time.monotonic()
            v, status = _smt_pair(cfgs[x], cfgs[y], min(opts.smt_pair_seconds, smt_left))
            smt_left -= time.monotonic() - t0
            smt_used += 1
            if v is not None:
                vec = (np.array(v.a, dtype=np.uint64), np.array(v.b, dtype=np.uint64), int(v.c))
                method = "smt (distinguish)"
                smt_found += 1
            elif status.startswith("equivalent"):
                equivalent.append([cfgs[x].describe(), cfgs[y].describe()])
                notes.append(f"smt: {cfgs[x].describe()} and {cfgs[y].describe()}: {status}")
            else:
                notes.append(f"smt {status} for {cfgs[x].describe()} vs {cfgs[y].describe()}; "
                             "model-based search used")
        if vec is None and local_budget > 0:
            local_budget -= 1
            sub = [cfgs[i] for i in g]
            la, lb, lc = targeted_rows(sub[0], opts.local_rows, rng)
            lo = outputs_matrix(sub, la, lb, lc)
            sc = split_scores(np.zeros(len(sub), dtype=np.int64), lo)
            j = int(np.argmin(sc))
            if sc[j] < len(sub) ** 2:
                vec = (la[j], lb[j], int(lc[j]))
                method = "model-search (local)"
        if vec is None:
            unresolved.append([int(i) for i in g])
            continue
        col = outputs_matrix(cfgs, vec[0][None, :], vec[1][None, :],
                             np.array([vec[2]], dtype=np.uint64))[:, 0]
        fields = split_fields([cfgs[i] for i in g], col[g])
        labels = refine(labels, col)
        n_disc += 1
        bld.add(f"disc.{'smt' if method.startswith('smt') else 'local'}.{n_disc:03d}",
                vec[0], vec[1], vec[2], {"kind": "discriminator", "method": method,
                                         "separates": [cfgs[x].describe(), cfgs[y].describe()],
                                         "features": fields})
        added += 1
    final = classes(labels)
    together = [g for g in final if len(g) > 1]
    return {"configurations": len(cfgs), "classes_before": start_classes,
            "classes_after_pool": after_pool, "classes": len(final),
            "largest_class": int(len(final[0])) if final else 0,
            "discriminators": added, "smt_queries": smt_used, "smt_vectors": smt_found,
            "smt_equivalent_pairs": equivalent[:20],
            "unsplit_classes": [[cfgs[int(i)].describe() for i in g[:6]] for g in together[:10]],
            "unsplit_class_count": len(together)}


def build_suite(space: CandidateSpace, opts: SuiteOptions, progress: Progress = None) -> Suite:
    t0 = time.monotonic()
    rng = np.random.default_rng(opts.seed)
    bld = _Builder(space)
    notes: list[str] = []
    records = probe_vectors(bld, opts.probe_files, notes)
    n_probe = len(bld.ids)
    ref = space.configs[0]
    if opts.random:
        (ra, rb, rc), kinds = issm_rows(ref, opts.random, rng)
        for i in range(opts.random):
            bld.add(f"random.{kinds[i]}.{i:04d}", ra[i], rb[i], int(rc[i]),
                    {"kind": "random", "method": f"ISSM {kinds[i]} (seed 000 Sec. III-B)",
                     "seed": opts.seed})
    stats = discriminate(bld, opts, rng, notes, progress)
    a, b, c = bld.arrays()
    meta = {"space": {"id": space.id, "source": space.source,
                      "configurations": len(space.configs)},
            "generator": {"tool": "mmaprobe suite", "seed": opts.seed, "random": opts.random,
                          "pool": opts.pool, "smt_seconds": opts.smt_seconds,
                          "probe_vectors": n_probe, "probe_instances": records,
                          "discrimination": stats, "notes": notes,
                          "seconds": round(time.monotonic() - t0, 2)}}
    fin = get_format(space.in_format)
    del fin
    return Suite(space.in_format, space.c_format, space.out_format, space.k, list(bld.ids),
                 a, b, c, list(bld.prov), meta)
