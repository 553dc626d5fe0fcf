"""Suite generation: probes in pipeline order, discriminators for the space, ISSM rows.

``build_suite`` returns a :class:`~mmaprobe.vectors.suitefile.Suite` whose vectors are

1. every applicable library probe, instantiated in pipeline order (a probe that requires
   decided features is instantiated once per distinct binding of those features across the
   candidate space, since the device's values are not known yet);
2. random rows ([KM25]'s ISSM: normal-distribution inputs plus a Schryer-style edge mix);
3. discriminators: rows chosen greedily from a model-evaluated pool of targeted rows to split
   the candidate space as finely as possible, then, for classes still together, vectors
   synthesised by the SMT engine (``smt.synth.distinguish``, time-bounded) or, where the
   encoding does not cover a configuration or the solver gives up, by a model-based search
   over fresh rows aimed at that class.  Provenance says which method made each vector.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmaprobe.models import limits
from mmaprobe.models.errors import InputError
from mmaprobe.models.features import expression_bindings, feature_value
from mmaprobe.models.observable import proven_classes
from mmaprobe.models.partition import (
    classes,
    refine,
    row_classes,
    split_fields,
)
from mmaprobe.models.rows import issm_rows, pool_rows
from mmaprobe.models.space import CandidateSpace
from mmaprobe.models.split_search import RowPool, SplitSearch
from mmaprobe.probes.library import library_files, load_probes
from mmaprobe.probes.port import instantiation_formats, port_instance
from mmaprobe.probes.probe import InstantiationError
from mmaprobe.smt.distinguish import pair_solver

from .suitefile import Suite

Progress = Callable[[str], None] | None


@dataclass
class SuiteOptions:
    seed: int = 0
    random: int = 64
    pool: int = 1500
    max_discriminators: int = 200
    smt_seconds: float = 8.0
    smt_pair_seconds: float = 4.0
    local_rows: int = 600
    local_searches: int = 40
    use_smt: bool = True
    probe_files: list[str] | None = None
    jobs: int = 1  # processes for the model's evaluation of the space on many rows


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
        k = self.space.configs[0].row_width
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
                  max_bindings: int = 16, jobs: int = 1
                  ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Instantiate applicable probes into bld (in ``jobs`` processes when there are many).

    Returns the instance records (probe id and digest, bindings, vector ids) and the
    documents of the probes used, which the suite embeds so that ``infer`` decides with
    exactly these probes on any machine.
    """
    sp = bld.space
    # b in a format of its own: a probe is instantiated for a's format, else for b's, else
    # for the pair's virtual carrier A~B, and its products written again per side;
    # block-scaled rows carry scale factors of 1, or a scaled probe's own (probes/port.py;
    # the record names the carrier, which infer instantiates again)
    first = sp.configs[0]
    fa, fb, fs = first.in_format, first.b_fmt, first.scale_format
    if (fa, first.scales) != (fb, 0):
        notes.append("probes: instantiated for a's format, b's or the pair's virtual carrier "
                     "and written again product by product (probes/port.py), or per side "
                     "where a probe names a.* and b.*; rows with scale factors carry scale "
                     "factors of 1, save those of scaled probes (sa, sb)")
    paths = files if files is not None else [str(p) for p in library_files("library")]
    probes = pipeline_order([p for p in load_probes(paths)
                             if any(p.applies_to_formats(x, sp.c_format, sp.out_format, sp.k,
                                                         y, fs)
                                    for x, y in instantiation_formats(p, fa, fb))])
    records = []
    documents: dict[str, Any] = {}
    for p, (p_notes, instances) in zip(probes, _all_instances(probes, sp, max_bindings,
                                                              jobs)):
        notes += p_notes
        for rec, vids, provs, rows_a, rows_b, cs in instances:
            for r, (vid, prov) in enumerate(zip(vids, provs)):
                bld.add(vid, rows_a[r], rows_b[r], cs[r], prov)
            documents[p.id] = p.document
            records.append(rec)
    return records, documents


#: probes per process below which instantiating in one process is faster than forking
PARALLEL_PROBES = 50
_WORK: tuple = ()  # (probes, space, max_bindings) for the forked workers


def _all_instances(probes: list[Any], sp: CandidateSpace, max_bindings: int,
                   jobs: int) -> list[tuple[list[str], list[tuple]]]:
    """:func:`_probe_instances` of every probe, in order (forked workers share them out by
    interleaved probes: the costly ones spread over the workers)."""
    global _WORK
    if jobs < 2 or len(probes) < PARALLEL_PROBES * jobs:
        columns: dict[str, list[Any]] = {}
        return [_probe_instances(p, sp, max_bindings, columns) for p in probes]
    nchunks = 4 * jobs
    chunks = [list(range(i, len(probes), nchunks)) for i in range(nchunks)]
    out: list[Any] = [None] * len(probes)
    _WORK = (probes, sp, max_bindings)
    try:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            for chunk, part in zip(chunks, pool.map(_chunk_instances, chunks)):
                for i, x in zip(chunk, part):
                    out[i] = x
    finally:
        _WORK = ()
    return out


def _chunk_instances(chunk: list[int]) -> list[tuple[list[str], list[tuple]]]:
    probes, sp, max_bindings = _WORK
    columns: dict[str, list[Any]] = {}
    return [_probe_instances(probes[i], sp, max_bindings, columns) for i in chunk]


def _probe_instances(p: Any, sp: CandidateSpace, max_bindings: int,
                     columns: dict[str, list[Any]]) -> tuple[list[str], list[tuple]]:
    """(notes, instances) of one probe on the space: per distinct binding of the features
    it requires, the record, vector ids, provenances, and rows (a and b as the model reads
    them, c).  ``columns``: a feature's value on every configuration, memoised."""
    first = sp.configs[0]
    fa, fb, fs = first.in_format, first.b_fmt, first.scale_format
    notes: list[str] = []

    def column(name: str) -> list[Any]:
        if name not in columns:
            columns[name] = [feature_value(cfg, name) for cfg in sp.configs]
        return columns[name]

    bindings: list[dict[str, int]] = []
    holds: dict[tuple, bool] = {}  # applies_when per binding: many configurations share one
    fields = sorted(set(p.requires) | set(p.when))
    # `when` and the bindings depend on these features' values only (the space fixes the
    # formats and K): one evaluation per distinct tuple of values, and unless the probe
    # names the configurations it was verified on, the first configuration of a tuple
    # stands for all of them
    by_values: dict[tuple, dict[str, int] | None] = {}
    per_config = p.verified_on is not None
    tuples = zip(*(column(n) for n in fields)) if fields else [()] * len(sp.configs)
    for cfg, vals in zip(sp.configs, tuples):
        if vals in by_values and not per_config:
            continue
        if vals not in by_values:
            by_values[vals] = (expression_bindings(cfg, p.requires)
                               if p.when_matches(dict(zip(fields, vals))) else None)
        bnd = by_values[vals]
        if bnd is None or bnd in bindings or not p.applies_to_config(cfg):
            continue
        key = tuple(sorted(bnd.items()))
        if key not in holds:
            holds[key] = any(
                p.applies_to_formats(x, sp.c_format, sp.out_format, sp.k, y, fs)
                and p.applies_when_holds(x, sp.c_format, sp.out_format, sp.k, bnd, y, fs)
                for x, y in instantiation_formats(p, fa, fb))
        if holds[key]:
            bindings.append(bnd)
            if len(bindings) > max_bindings:  # the rest would not be instantiated
                break
    if len(bindings) > max_bindings:
        notes.append(f"probe {p.id}: more than {max_bindings} bindings of "
                     f"{list(p.requires)} in the space; instantiated the first "
                     f"{max_bindings}")
        bindings = bindings[:max_bindings]
    instances = []
    for bnd in bindings:
        inst, carrier = _instance(p, sp, bnd, fa, fb, notes)
        if inst is None:
            continue
        tag = "" if not bnd else "@" + ",".join(f"{n}={v}" for n, v in sorted(bnd.items()))
        names = {r: (n, None) for n, r in inst.rows.items()}
        for sname, items in inst.sweeps.items():
            for i, r in items:
                names[r] = (sname, i)
        rows_a, rows_b = inst.packed(first)  # rows as the model reads them
        vids, provs = [], []
        for r in range(len(inst.c)):
            name, idx = names[r]
            vids.append(f"probe.{p.id}.{name}{'' if idx is None else f'[{idx}]'}{tag}")
            prov = {"kind": "probe", "probe": p.id, "feature": p.feature,
                    "vector": name, "source": p.source}
            if idx is not None:
                prov["sweep_index"] = idx
            if bnd:
                prov["bindings"] = dict(bnd)
            provs.append(prov)
        rec = {"probe": p.id, "digest": p.digest, "feature": p.feature,
               "bindings": dict(bnd), "vectors": vids}
        if carrier != sp.in_format:
            rec["carrier"] = carrier
        instances.append((rec, vids, provs, np.asarray(rows_a, np.uint64),
                          np.asarray(rows_b, np.uint64), [int(x) for x in inst.c]))
    return notes, instances


def _instance(p: Any, sp: CandidateSpace, bnd: dict[str, int], fa: str, fb: str,
              notes: list[str]) -> tuple[Any, str]:
    """The instance of p with bindings bnd, its rows in a's and b's formats, and the
    carrier format it was instantiated for; (None, "") when no carrier gives one."""
    fs = sp.configs[0].scale_format
    for carrier, fy in instantiation_formats(p, fa, fb):
        if not (p.applies_to_formats(carrier, sp.c_format, sp.out_format, sp.k, fy, fs)
                and p.applies_when_holds(carrier, sp.c_format, sp.out_format, sp.k, bnd, fy,
                                         fs)):
            continue
        try:
            inst = p.instantiate(carrier, sp.c_format, sp.out_format, sp.k, bnd, fy, fs)
        except InstantiationError as e:
            # no path of this machine in the suite: the probe file by name only
            msg = str(e).replace(p.file, Path(p.file).name)
            notes.append(f"probe {p.id} skipped for {bnd}: {msg}")
            continue
        ported = inst if p.per_side else port_instance(inst, carrier, fa, fb)
        if ported is not None:
            return ported, carrier
    return None, ""


# -- discriminators -----------------------------------------------------------------------------

def discriminate(bld: _Builder, opts: SuiteOptions, rng: np.random.Generator,
                 notes: list[str], progress: Progress = None) -> dict[str, Any]:
    """Add discriminators to bld until the suite splits the space into classes no search
    stage splits further (or the budget is used).

    A configuration the vectors so far already tell from every other needs no further row:
    the pool and the search work on the configurations left in classes of two or more
    (typically a third to a half of the space once the probes are in)."""
    everyone = bld.space.configs
    # one representative per class of configurations proven to give the same outputs:
    # no row splits such a class, so the model evaluates and the search considers only it
    proven = proven_classes(everyone)
    cfgs = [everyone[i] for i in np.unique(proven, return_index=True)[1]]
    a0, b0, c0 = bld.arrays()
    labels = np.zeros(len(cfgs), dtype=np.int64)
    if len(bld.ids):
        labels = row_classes(cfgs, a0, b0, c0, progress, opts.jobs)
    start_classes = int(labels.max()) + 1
    shared = np.flatnonzero(np.bincount(labels)[labels] > 1)  # configurations not yet alone
    alone = len(cfgs) - len(shared)
    sub = [cfgs[i] for i in shared]
    sub_labels = np.unique(labels[shared], return_inverse=True)[1].reshape(-1)
    counts = {"pool": 0, "local": 0, "solver": 0}
    after_pool = None
    search = None
    if len(sub):
        if progress:
            progress(f"suite: evaluating the {len(sub)} configurations the vectors so far "
                     f"leave together on a pool of {opts.pool} rows")
        pool = RowPool.empty(sub, opts.jobs)
        rows, kinds = pool_rows(cfgs[0], opts.pool, rng)
        pool.add(rows, kinds, progress)
        search = SplitSearch(sub, pool, rng, local_rows=opts.local_rows, local_tries=1,
                             local_budget=opts.local_searches,
                             solver=pair_solver() if opts.use_smt else None,
                             solver_seconds=opts.smt_seconds if opts.use_smt else 0.0,
                             pair_seconds=opts.smt_pair_seconds, open_columns=True)
    while search is not None and len(bld.ids) - len(a0) < opts.max_discriminators:
        split = search.next_split(sub_labels, progress=progress)
        if split is None:
            break
        if split.method != "pool" and after_pool is None:
            after_pool = alone + int(sub_labels.max()) + 1
        # the configurations the row may separate: the pair's class, or all not yet alone
        # (a column holds only theirs)
        group = (np.flatnonzero(sub_labels == sub_labels[split.pair[0]]) if split.pair
                 else np.flatnonzero(np.bincount(sub_labels)[sub_labels] > 1))
        fields = split_fields([sub[i] for i in group], split.column[group])
        sub_labels = refine(sub_labels, split.column)
        counts[split.method] += 1
        n = sum(counts.values())
        method = {"pool": "model-search (pool)", "local": "model-search (local)",
                  "solver": "smt (distinguish)"}[split.method]
        prov: dict[str, Any] = {"kind": "discriminator", "method": method, "features": fields}
        if split.method == "pool":
            prov["row_kind"] = split.kind
        if split.pair:
            prov["separates"] = [sub[split.pair[0]].describe(), sub[split.pair[1]].describe()]
        tag = {"pool": "pool", "local": "local", "solver": "smt"}[split.method]
        bld.add(f"disc.{tag}.{n:03d}", split.row[0], split.row[1], split.row[2], prov)
    labels = labels.copy()
    labels[shared] = start_classes + sub_labels
    equivalent = []
    if search is not None:
        notes += [f"smt: {n}" for n in search.solver_notes[:20]]
        equivalent = [[sub[x].describe(), sub[y].describe()] for x, y in search.equivalent]
        notes += [f"smt: {x} and {y}: equivalent" for x, y in equivalent[:20]]
    labels = labels[proven]
    final = classes(labels)
    together = [g for g in final if len(g) > 1]
    return {"configurations": len(everyone), "proven_classes": len(cfgs),
            "classes_before": start_classes,
            "classes_after_pool": after_pool or len(final), "classes": len(final),
            "largest_class": int(len(final[0])) if final else 0,
            "discriminators": sum(counts.values()),
            "smt_queries": search.solver_queries if search else 0,
            "smt_vectors": counts["solver"], "smt_equivalent_pairs": equivalent[:20],
            "unsplit_classes": [[everyone[int(i)].describe() for i in g[:6]]
                                for g in together[:10]],
            "unsplit_class_count": len(together)}


def check_options(opts: SuiteOptions, k: int) -> None:
    """InputError unless the row counts are non-negative and within the row limit for K
    (checked before any row is generated)."""
    if opts.pool < 1 or opts.random < 0 or opts.seed < 0:
        raise InputError("--pool must be >= 1, --random and --seed >= 0")
    limits.ROWS.check(opts.pool, "--pool", k)
    limits.ROWS.check(opts.random, "--random", k)


def build_suite(space: CandidateSpace, opts: SuiteOptions, progress: Progress = None) -> Suite:
    """A test-vector suite for new hardware of the space's formats and K.

    The vectors are the applicable probes in pipeline order, ``opts.random`` ISSM rows, and
    discriminators that split the candidate space as finely as the split search can; each
    carries its provenance, and the suite embeds the probes it used.

    >>> from mmaprobe.models.space import neighbourhood
    >>> opts = SuiteOptions(random=8, pool=200, use_smt=False, local_searches=2)
    >>> space = neighbourhood("binary16", None, "binary32", 4)
    >>> suite = build_suite(space, opts)
    >>> suite.k, suite.size > 50, sorted({p["kind"] for p in suite.provenance})[-2:]
    (4, True, ['probe', 'random'])

    Without probes, discriminators split the space:

    >>> opts.probe_files = []
    >>> sorted({p["kind"] for p in build_suite(space, opts).provenance})
    ['discriminator', 'random']
    """
    check_options(opts, space.k)
    t0 = time.monotonic()
    rng = np.random.default_rng(opts.seed)
    bld = _Builder(space)
    notes: list[str] = []
    records, documents = probe_vectors(bld, opts.probe_files, notes, jobs=opts.jobs)
    n_probe = len(bld.ids)
    ref = space.configs[0]
    if opts.random:
        (ra, rb, rc), kinds = issm_rows(ref, opts.random, rng)
        for i in range(opts.random):
            bld.add(f"random.{kinds[i]}.{i:04d}", ra[i], rb[i], int(rc[i]),
                    {"kind": "random", "method": f"ISSM {kinds[i]} ([KM25] Sec. III-B)",
                     "seed": opts.seed})
    stats = discriminate(bld, opts, rng, notes, progress)
    a, b, c = bld.arrays()
    meta = {"space": {"id": space.id, "source": space.source,
                      "configurations": len(space.configs)},
            "generator": {"tool": "mmaprobe suite", "seed": opts.seed, "random": opts.random,
                          "pool": opts.pool, "smt_seconds": opts.smt_seconds,
                          "probe_vectors": n_probe, "probe_instances": records,
                          "probes": documents,
                          "discrimination": stats, "notes": notes,
                          "seconds": round(time.monotonic() - t0, 2)}}
    b_fmt, scale_format, scale_block = space.configs[0].operands
    return Suite(space.in_format, space.c_format, space.out_format, space.k, list(bld.ids),
                 a, b, c, list(bld.prov), meta,
                 b_format=None if b_fmt == space.in_format else b_fmt,
                 scale_format=scale_format, scale_block=scale_block)
