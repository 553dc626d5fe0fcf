"""The greedy search for rows that split a set of candidate configurations.

One search serves every flow that must tell configurations apart: ``suite`` (split the
whole candidate space into classes), ``identify`` (split the candidates a device's answers
have left) and ``synthesize`` (split only the pairs whose feature values differ).  Each call
of :meth:`SplitSearch.next_split` tries, in order:

1. **pool rows**: rows whose outputs the model has computed for every configuration at once
   (a :class:`RowPool`); the row that leaves the fewest pairs together wins, if it leaves
   fewer than now.  When no pool row helps, ``grow`` may add rows and the pool is tried
   again;
2. **local rows**: fresh targeted rows aimed at the largest class still holding pairs that
   matter, evaluated on that class only;
3. **a solver pair**: two configurations of that class (those differing in the fewest
   fields), handed to ``solver`` (the SMT engine's ``distinguish``); a vector it returns is
   checked on the model like any other row, and ``neighbours`` of it may join the pool.
   Pairs the solver proves equivalent are never asked again; pairs it gives up on are asked
   again with 4x and 16x the time once no other pair is open.

A *pair that matters* is any pair of configurations in one class, or, with ``values``, a
pair whose values differ (a feature to decide).  The search holds no device: callers apply
each split themselves (refining their labels, querying a device), so the same search runs
on a model, a recording or a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .config import AccumulatorConfig
from .observable import product_overflow_observable
from .partition import classes, outputs_matrix, split_scores
from .rows import local_rows

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]
Row = tuple[np.ndarray, np.ndarray, int]
#: solver answer: (status 'distinct' | 'equivalent' | 'unknown', row or None, detail)
SolverAnswer = tuple[str, Row | None, str]
Solver = Callable[[AccumulatorConfig, AccumulatorConfig, float], SolverAnswer]

#: budgets of a pair the solver gave up on, as multiples of the pair budget
PAIR_LEVELS = (1, 4, 16)


@dataclass
class RowPool:
    """Candidate rows and every configuration's output on each (evaluated once, by the
    model).  ``kinds`` says where each row came from."""

    configs: Sequence[AccumulatorConfig]
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    outs: np.ndarray
    kinds: list[str]
    jobs: int = 1  # processes for evaluating added rows (partition.outputs_matrix)

    @classmethod
    def empty(cls, configs: Sequence[AccumulatorConfig], jobs: int = 1) -> RowPool:
        k = configs[0].row_width  # k values, and packed scale factors with block scaling
        return cls(configs, np.zeros((0, k), np.uint64), np.zeros((0, k), np.uint64),
                   np.zeros(0, np.uint64), np.zeros((len(configs), 0), np.uint64), [], jobs)

    def add(self, rows: Rows, kinds: str | list[str], progress=None) -> None:
        a, b, c = rows
        if not len(c):
            return
        self.outs = np.concatenate([self.outs, outputs_matrix(self.configs, a, b, c,
                                                              progress, self.jobs)], axis=1)
        self.a = np.concatenate([self.a, a])
        self.b = np.concatenate([self.b, b])
        self.c = np.concatenate([self.c, c])
        self.kinds += [kinds] * len(c) if isinstance(kinds, str) else list(kinds)

    def row(self, j: int) -> Row:
        return self.a[j], self.b[j], int(self.c[j])


@dataclass
class Split:
    """A row that splits the candidates, with every configuration's output on it."""

    row: Row
    column: np.ndarray      # outputs of every configuration of the search
    method: str             # 'pool', 'local' or 'solver'
    kind: str = ""          # the row's origin (pool kind, 'targeted', solver detail)
    pair: tuple[int, int] | None = None  # the configurations a solver row separates


@dataclass
class SplitSearch:
    """Greedy split search over ``configs`` (see the module docstring).

    ``values`` (one integer per configuration) restricts the pairs that matter to pairs of
    different values; ``local`` makes fresh rows for a class (default:
    :func:`mmaprobe.models.rows.local_rows`); ``solver`` answers a pair within a time
    budget; ``solver_seconds`` bounds its total time and ``pair_seconds`` one question;
    ``grow`` returns more pool rows (or None when there are none); ``neighbours`` returns
    rows near a solver row.  ``open_columns``: a split's column holds the outputs of the
    members that still share a class only (the rest read 0, unevaluated), which is all a
    caller that refines those classes or filters those candidates reads; otherwise every
    configuration's.
    """

    configs: Sequence[AccumulatorConfig]
    pool: RowPool
    rng: np.random.Generator
    values: np.ndarray | None = None
    local: Callable[[list[AccumulatorConfig], np.random.Generator], Rows] | None = None
    local_tries: int = 2
    local_rows: int = 600
    local_budget: int | None = None
    solver: Solver | None = None
    solver_seconds: float = 0.0
    pair_seconds: float = 10.0
    grow: Callable[[], Rows | None] | None = None
    neighbours: Callable[[Row], Rows] | None = None
    equivalent: list[tuple[int, int]] = field(default_factory=list)
    equivalent_why: dict[tuple[int, int], str] = field(default_factory=dict)
    gave_up: dict[tuple[int, int], float] = field(default_factory=dict)
    solver_queries: int = 0
    solver_notes: list[str] = field(default_factory=list)
    level: int = 0
    open_columns: bool = False

    def __post_init__(self) -> None:
        self.fields = [tuple(repr(v) for v in c.to_dict().values()) for c in self.configs]
        self._solver_left = self.solver_seconds if self.solver else 0.0
        self._stuck: set[frozenset[int]] = set()
        self._open: np.ndarray | None = None  # the members column() evaluates (open_columns)

    # -- the objective ---------------------------------------------------------------------
    def pending(self, labels: np.ndarray, outs: np.ndarray, members: np.ndarray) -> np.ndarray:
        """Per column of ``outs`` (one row per member, whose classes are ``labels``): the
        ordered pairs that matter and that the column leaves in one class."""
        together = split_scores(labels, outs)
        if self.values is None:
            return together
        nv = int(self.values.max()) + 1
        return together - split_scores(labels * nv + self.values[members], outs)

    def _pending_now(self, labels: np.ndarray, members: np.ndarray) -> float:
        none = np.zeros((len(labels), 1), dtype=np.uint64)
        return float(self.pending(labels, none, members)[0])

    def _matters(self, i: int, j: int) -> bool:
        return self.values is None or self.values[i] != self.values[j]

    # -- the three stages ------------------------------------------------------------------
    def next_split(self, labels: np.ndarray, members: np.ndarray | None = None,
                   progress=None) -> Split | None:
        """The best next row for the configurations ``members`` (default: all), whose
        current classes are ``labels`` (one per member); None when no stage splits a pair
        that matters (see :meth:`stuck`)."""
        members = np.arange(len(self.configs)) if members is None else np.asarray(members)
        labels = np.asarray(labels)
        base = self._pending_now(labels, members)
        if base == 0:
            return None
        self._open = members[np.bincount(labels)[labels] > 1]
        while True:
            split = self._from_pool(labels, members, base)
            if split is not None:
                return split
            more = self.grow() if self.grow else None
            if more is None or not len(more[2]):
                break
            self.pool.add(more, "grown", progress)
        for group in self._open_groups(labels, members):
            key = frozenset(group.tolist())
            if key in self._stuck:
                continue
            split = self._from_local(group)
            if split is None:
                split = self._from_solver(group)
            if split is not None:
                return split
            self._stuck.add(key)
        return None

    def _from_pool(self, labels: np.ndarray, members: np.ndarray, base: float) -> Split | None:
        if not self.pool.outs.shape[1]:
            return None
        scores = self.pending(labels, self.pool.outs[members], members)
        j = int(np.argmin(scores))
        if scores[j] >= base:
            return None
        return Split(self.pool.row(j), self.pool.outs[:, j].copy(), "pool",
                     self.pool.kinds[j])

    def _open_groups(self, labels: np.ndarray, members: np.ndarray) -> list[np.ndarray]:
        """The classes (as configuration indices) that still hold a pair that matters,
        largest first."""
        out = []
        for g in classes(labels):
            idx = members[g]
            if len(idx) > 1 and (self.values is None or len(set(self.values[idx].tolist())) > 1):
                out.append(idx)
        return out

    def _from_local(self, group: np.ndarray) -> Split | None:
        sub = [self.configs[i] for i in group]
        make = self.local or (lambda cfgs, rng: local_rows(cfgs, self.local_rows, rng))
        zeros = np.zeros(len(group), dtype=np.int64)
        base = self._pending_now(zeros, group)
        for _ in range(self.local_tries):
            if self.local_budget is not None:
                if self.local_budget <= 0:
                    return None
                self.local_budget -= 1
            a, b, c = make(sub, self.rng)
            if not len(c):
                continue
            sc = self.pending(zeros, outputs_matrix(sub, a, b, c), group)
            j = int(np.argmin(sc))
            if sc[j] < base:
                row = (a[j], b[j], int(c[j]))
                return Split(row, self.column(row), "local", "targeted")
        return None

    def _from_solver(self, group: np.ndarray) -> Split | None:
        if self.solver is None:
            return None
        while True:
            budget = self.pair_seconds * PAIR_LEVELS[self.level]
            pair = self._closest_pair(group, budget)
            if pair is None:
                if self.level + 1 < len(PAIR_LEVELS) and self.gave_up \
                        and self._solver_left > 1:
                    self.level += 1
                    continue
                return None
            if self._solver_left <= 0.5:
                if "solver time used up" not in self.solver_notes:
                    self.solver_notes.append("solver time used up")
                return None
            x, y = pair
            why = static_equivalence(self.configs[x], self.configs[y])
            if why:
                self.equivalent.append(pair)
                self.equivalent_why[pair] = why
                continue
            t0 = time.monotonic()
            status, row, detail = self.solver(self.configs[x], self.configs[y],
                                              min(budget, self._solver_left))
            self._solver_left -= time.monotonic() - t0
            self.solver_queries += 1
            if status == "distinct" and row is not None:
                column = self.column(row)
                if column[x] != column[y]:
                    if self.neighbours is not None:
                        self.pool.add(self.neighbours(row), "solver neighbour")
                    return Split(row, column, "solver", detail, pair)
                detail = f"the solver's row does not split them on the model ({detail})"
            if status == "equivalent":
                self.equivalent.append(pair)
                self.equivalent_why[pair] = f"the solver proves it ({detail})"
            else:
                self.gave_up[pair] = budget
                self.solver_notes.append(f"{self.configs[x].describe()} vs "
                                         f"{self.configs[y].describe()}: {status} ({detail})")

    def _closest_pair(self, group: np.ndarray, budget: float) -> tuple[int, int] | None:
        """Two members of the group that matter, not proven equivalent nor given up at this
        budget, differing in the fewest fields."""
        best, score = None, 1 << 30
        done = set(self.equivalent)
        members = group.tolist()
        for u in range(len(members)):
            for w in range(u + 1, len(members)):
                i, j = members[u], members[w]
                if (i, j) in done or self.gave_up.get((i, j), 0) >= budget \
                        or not self._matters(i, j):
                    continue
                d = sum(1 for p, q in zip(self.fields[i], self.fields[j]) if p != q)
                if d < score:
                    best, score = (i, j), d
        return best

    # -- the end: a class no stage splits -------------------------------------------------
    def settle(self, members: Sequence[int]) -> tuple[Split | None, list[str], list[str]]:
        """Prove the members equivalent, pair by pair along a chain from the first (static
        rules, then the solver); equivalence is transitive, so that proves the class.

        Returns (split, proofs, open): a Split when the solver finds a row after all (the
        class was not one), the reason each pair is equivalent, and for each pair neither
        split nor proven, which and why.
        """
        members = list(members)
        proofs, open_pairs = [], []
        self._open = np.asarray(members)
        x = members[0]
        for y in members[1:]:
            pair = (min(x, y), max(x, y))
            cx, cy = self.configs[x], self.configs[y]
            why = self.equivalent_why.get(pair) or static_equivalence(cx, cy)
            if not why and self.solver is not None and self._solver_left > 0.5:
                t0 = time.monotonic()
                status, row, detail = self.solver(
                    cx, cy, min(self.pair_seconds * PAIR_LEVELS[-1], self._solver_left))
                self._solver_left -= time.monotonic() - t0
                self.solver_queries += 1
                if status == "distinct" and row is not None:
                    column = self.column(row)
                    if column[x] != column[y]:
                        return Split(row, column, "solver", detail, pair), proofs, open_pairs
                if status == "equivalent":
                    why = f"the solver proves it ({detail})"
                else:
                    open_pairs.append(f"{cx.describe()} vs {cy.describe()}: {status} "
                                      f"({detail})")
                    continue
            elif not why:
                reason = "no solver" if self.solver is None else "solver time used up"
                open_pairs.append(f"{cx.describe()} vs {cy.describe()}: not split by model "
                                  f"rows ({reason})")
                continue
            self.equivalent_why[pair] = why
            proofs.append(f"{cx.describe()} = {cy.describe()}: {why}")
        return None, proofs, open_pairs

    # -- helpers ------------------------------------------------------------------------------
    def column(self, row: Row) -> np.ndarray:
        """Every configuration's output on one row (with ``open_columns``, those of the
        members the last split searched for that share a class; 0 for the rest)."""
        a, b, c = row
        rows = (np.asarray(a, np.uint64)[None, :], np.asarray(b, np.uint64)[None, :],
                np.array([c], dtype=np.uint64))
        if not self.open_columns or self._open is None:
            return outputs_matrix(self.configs, *rows, jobs=self.pool.jobs)[:, 0]
        out = np.zeros(len(self.configs), dtype=np.uint64)
        out[self._open] = outputs_matrix([self.configs[i] for i in self._open], *rows,
                                         jobs=self.pool.jobs)[:, 0]
        return out

    def stuck(self, labels: np.ndarray, members: np.ndarray | None = None) -> list[list[int]]:
        """The classes (configuration indices) that still hold a pair that matters."""
        members = np.arange(len(self.configs)) if members is None else np.asarray(members)
        return [[int(i) for i in g] for g in self._open_groups(np.asarray(labels), members)]


def static_equivalence(x: AccumulatorConfig, y: AccumulatorConfig) -> str | None:
    """Why x and y give the same output on every input, when a rule shows it without a
    solver; None otherwise.

    >>> from mmaprobe.models.presets import get_preset
    >>> h = get_preset("h100-fp16-fp32").config
    >>> static_equivalence(h, h.replace(product_overflow=True))
    'they differ only in product_overflow, and no binary16 x binary16 product reaches 2^128'
    """
    diff = {f for f, u, v in zip(x.to_dict(), x.to_dict().values(), y.to_dict().values())
            if u != v}
    if diff == {"product_overflow"} and not product_overflow_observable(x):
        return (f"they differ only in product_overflow, and no {x.in_format} x {x.b_fmt} "
                f"product reaches 2^128")
    if diff == {"carry_bits"} and x.algorithm == "fused":
        need = carry_bits_needed(x)
        if all(cb is None or cb >= need for cb in (x.carry_bits, y.carry_bits)):
            return (f"they differ only in carry_bits, and a block of {x.nfma} products "
                    f"never needs more than {need}")
    if diff <= {"interleave", "nfma"} and x.k == 4 and {x.interleave, y.interleave} == {
            "none", "pairs"} and x.nfma == y.nfma == 2:
        return "interleave 'pairs' at k=4 forms the same two blocks as nfma 2"
    return None


def carry_bits_needed(cfg: AccumulatorConfig) -> int:
    """The carry bits beyond which a fused block's sum never wraps.

    Aligned at the largest exponent, a product is below 4 units of it (denormalised: two
    integer bits; normalised: below 2) and c below 2, so a block of nfma products sums
    below M * nfma + 2 units; the sum wraps at 2**(2 + carry_bits) units, and M * nfma + 2
    (2 modulo 4) never equals a power of two, so carry_bits >= log2(M * nfma + 2) - 2
    never wraps.

    >>> from mmaprobe.models.presets import get_preset
    >>> carry_bits_needed(get_preset("v100-fp16-fp32").config)
    3
    """
    m = 4 if cfg.product_normalisation == "denormalised" else 2
    total = m * cfg.nfma + 2
    return max(0, (total - 1).bit_length() - 2)
