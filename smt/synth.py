"""Robust probes: vectors whose outputs decide one feature on every configuration of a space.

Synthesis is the split search of :mod:`mmaprobe.models.split_search` with the feature's
values as the pairs that matter: pool rows first (structured and targeted rows evaluated on
the numpy model for every configuration at once, :mod:`.pool`), then fresh rows aimed at a
class that still mixes values, then ``distinguish`` on the two closest configurations of
different values in it (the solver's answers grow the pool with their neighbours).  Every
vector is verified on the model; the decision table is re-verified before it is returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError
from mmaprobe.models.partition import outputs_matrix, refine
from mmaprobe.models.split_search import RowPool, SplitSearch

from .constraints import Constraints
from .distinguish import EncodingMismatch, Vector, _same_shape, pair_solver
from .pool import candidate_rows, mutations

#: rows added to the pool around each vector the solver finds
MUTATIONS = 400


@dataclass
class RobustProbe:
    """Vectors and a decision table (output prefix -> feature value) over a space.

    ``table`` maps the outputs of the first n vectors (n >= 1, the depth at which the
    configuration's class became pure) to the feature value; output tuples not in it are
    inconclusive.  Every figure below was measured on the numpy model.
    """

    feature: str
    vectors: list[Vector]
    table: dict[tuple[int, ...], object]
    configs: int
    seconds: float
    rounds: int                            # solver queries (distinguish calls)
    ambiguous: list[tuple[int, int]]       # config pairs of different values left together
    method: str                            # 'pool' or 'pool+smt'
    inconclusive: int = 0                  # configurations the table does not decide
    wrong: int = 0                         # configurations the table decides wrongly
    equivalent: list[tuple[int, int]] = field(default_factory=list)  # proven inseparable
    unknown: list[tuple[int, int]] = field(default_factory=list)     # solver gave up
    pool_rows: int = 0                     # candidate rows evaluated on the model

    def decide(self, outs: list[int]) -> tuple[bool, object]:
        """(True, value) when the outputs on the vectors decide the feature, else (False, None)."""
        for n in range(1, len(outs) + 1):
            key = tuple(outs[:n])
            if key in self.table:
                return True, self.table[key]
        return False, None


def _decided(cols: list[np.ndarray], vid: np.ndarray) -> np.ndarray:
    """Per configuration: its class under the columns holds one feature value only."""
    labels = np.zeros(len(vid), dtype=np.int64)
    for col in cols:
        labels = refine(labels, col)
    n = int(labels.max()) + 1 if len(labels) else 0
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, -1)
    np.minimum.at(lo, labels, vid)
    np.maximum.at(hi, labels, vid)
    return (lo == hi)[labels]


def _prune(cols: list[np.ndarray], vid: np.ndarray) -> list[int]:
    """Indices of the columns to keep: drop each column whose removal decides no fewer
    configurations (latest first, so the greedy's strong early splits stay)."""
    keep = list(range(len(cols)))
    target = _decided(cols, vid)
    for n in reversed(range(len(cols))):
        trial = [m for m in keep if m != n]
        if trial and not (target & ~_decided([cols[m] for m in trial], vid)).any():
            keep = trial
    return keep


def _table(cols: list[np.ndarray], vid: np.ndarray,
           values: list[object]) -> dict[tuple[int, ...], object]:
    """Output prefix -> value, each configuration at the first depth its class is pure."""
    table: dict[tuple[int, ...], object] = {}
    done = np.zeros(len(vid), dtype=bool)
    for depth in range(1, len(cols) + 1):
        pure = _decided(cols[:depth], vid)
        for i in np.flatnonzero(pure & ~done).tolist():
            table[tuple(int(col[i]) for col in cols[:depth])] = values[int(vid[i])]
        done |= pure
    return table


def robust_probe(feature: str, space: list[AccumulatorConfig],
                 value_of: Callable[[AccumulatorConfig], object],
                 constraints: Constraints | None = None,
                 timeout: float = 300.0, progress=None,
                 pair_timeout: float = 10.0, pool_size: int = 4000,
                 pool_batches: int = 3, seed: int = 0) -> RobustProbe | None:
    """Vectors whose outputs decide ``feature`` on every configuration of ``space``.

    The split search runs until every class of the partition by the vectors' outputs holds
    one value of the feature: up to ``pool_batches`` batches of ``pool_size`` candidate
    rows, fresh targeted rows per mixed class, and the solver with ``pair_timeout`` per pair
    (4x and 16x for pairs it gave up on) within ``timeout`` in all.  Whatever stays mixed is
    reported inconclusive.  Redundant vectors are then pruned, and the decision table maps
    each configuration's output prefix, at the depth its class became pure, to its value.
    Returns None only when no vector at all was found.
    """
    t0 = time.monotonic()
    cons = constraints or Constraints()
    if not space:
        raise InputError("robust probe: empty space")
    _same_shape(space)
    cons.check(space[0].k)
    values: list[object] = []
    ids: list[int] = []
    for cfg in space:
        v = value_of(cfg)
        if v not in values:
            values.append(v)
        ids.append(values.index(v))
    if len(values) < 2:
        raise InputError(f"robust probe: the space has one value of {feature}; nothing to decide")
    say = progress or (lambda msg: None)
    vid = np.array(ids, dtype=np.int64)
    batches = [0]

    def grow():
        if batches[0] >= pool_batches or time.monotonic() - t0 > timeout / 2:
            return None
        rows = candidate_rows(space, pool_size, seed + batches[0], cons)
        batches[0] += 1
        say(f"pool batch {batches[0]}: {len(rows[2])} rows ({time.monotonic() - t0:.1f} s)")
        return rows

    def neighbours(row):
        a, b, c = row
        return mutations(space[0], [int(x) for x in a], [int(x) for x in b], int(c), MUTATIONS,
                         seed + search.solver_queries, cons)

    search = SplitSearch(space, RowPool.empty(space), np.random.default_rng(seed), values=vid,
                         local=lambda cfgs, rng: candidate_rows(cfgs, 600, int(rng.integers(
                             1 << 30)), cons),
                         solver=pair_solver(cons), solver_seconds=timeout,
                         pair_seconds=pair_timeout, grow=grow, neighbours=neighbours)
    labels = np.zeros(len(space), dtype=np.int64)
    vectors: list[Vector] = []
    cols: list[np.ndarray] = []
    methods: set[str] = set()
    while time.monotonic() - t0 < timeout:
        split = search.next_split(labels)
        if split is None:
            break
        a, b, c = split.row
        vectors.append(Vector([int(x) for x in a], [int(x) for x in b], int(c)))
        cols.append(split.column)
        methods.add(split.method)
        labels = refine(labels, split.column)
        say(f"vector {len(vectors) - 1} ({split.method}): "
            f"{len(search.stuck(labels))} mixed classes left")
    if not vectors:
        return None
    unknown = [pq for pq in search.gave_up if labels[pq[0]] == labels[pq[1]]]
    keep = _prune(cols, vid)
    vectors = [vectors[n] for n in keep]
    cols = [cols[n] for n in keep]
    table = _table(cols, vid, values)
    probe = RobustProbe(feature, vectors, table, len(space), 0.0, search.solver_queries, [],
                        "pool+smt" if "solver" in methods else "pool",
                        equivalent=list(search.equivalent), unknown=unknown,
                        pool_rows=int(search.pool.outs.shape[1]))
    _verify(probe, space, values, vid)
    probe.seconds = time.monotonic() - t0
    say(f"{len(vectors)} vector(s), {probe.inconclusive} inconclusive, {probe.wrong} wrong "
        f"({probe.seconds:.1f} s)")
    return probe


def _verify(probe: RobustProbe, space: list[AccumulatorConfig], values: list[object],
            vid: np.ndarray) -> None:
    """Re-evaluate the vectors on the model and count wrong and inconclusive decisions."""
    a = np.array([v.a for v in probe.vectors], dtype=np.uint64)
    b = np.array([v.b for v in probe.vectors], dtype=np.uint64)
    c = np.array([v.c for v in probe.vectors], dtype=np.uint64)
    outs = outputs_matrix(space, a, b, c)
    wrong = 0
    undecided: list[int] = []
    for i in range(len(space)):
        ok, value = probe.decide([int(x) for x in outs[i]])
        if not ok:
            undecided.append(i)
        elif value != values[int(vid[i])]:
            wrong += 1
    probe.wrong = wrong
    probe.inconclusive = len(undecided)
    probe.ambiguous = [(x, y) for x in undecided for y in undecided
                       if x < y and vid[x] != vid[y]
                       and (outs[x] == outs[y]).all()]
    if wrong:
        raise EncodingMismatch(f"robust probe for {probe.feature}: {wrong} configuration(s) "
                               f"decided wrongly on the model; the table is inconsistent")
