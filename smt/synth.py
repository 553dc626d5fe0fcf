"""Synthesis queries over the z3 encoding: distinguish, separate, robust probes.

Every vector returned has been evaluated on the numpy model (``models.accumulator.evaluate``)
and checked to have the claimed property there; the solver only proposes.

Speed levers (shared/DESIGN.md, "Calibration"):

- sparse supports grown step by step: a query first frees one product (every other a_i and
  b_i fixed to +0, which the encoder drops), then two, three, ... at positions chosen to
  straddle block and pair boundaries, and only last frees every entry;
- a first pass per support with an exponent window (|e| <= 6 for a, b; c within the
  product range) before the unrestricted pass;
- every configuration of a query is encoded over the same input terms, so z3 shares the
  decoders and products between them;
- robust probes by greedy refinement over the whole space on the numpy model: candidate
  rows (``pool``) are evaluated for every configuration at once and the solver is asked
  only for a pair of configurations no pool row separates (and then for that pair only).

A query that proves nothing within its time budget reports 'unknown'.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import z3

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError
from mmaprobe.models.formats import get_format

from .constraints import Constraints, entry
from .encode import encode, shared_exponent_width

#: exponent window of the first pass per support (unbiased exponents of a and b entries)
WINDOW = 6


class EncodingMismatch(RuntimeError):
    """The solver's vector does not behave on the numpy model as the encoding predicted."""


@dataclass
class Vector:
    a: list[int]
    b: list[int]
    c: int


@dataclass
class Distinction:
    status: str                 # 'distinct', 'equivalent' or 'unknown'
    vector: Vector | None
    out_a: int | None
    out_b: int | None
    seconds: float
    detail: str                 # which stage answered, or why equivalent/unknown


def model_outputs(cfgs: list[AccumulatorConfig], vec: Vector) -> list[int]:
    a = np.array([vec.a], dtype=np.uint64)
    b = np.array([vec.b], dtype=np.uint64)
    c = np.array([vec.c], dtype=np.uint64)
    return [int(evaluate(cfg, a, b, c)[0]) for cfg in cfgs]


def _same_shape(cfgs: list[AccumulatorConfig]) -> None:
    first = cfgs[0]
    for cfg in cfgs[1:]:
        for name in ("in_format", "c_format", "out_format", "k"):
            if getattr(cfg, name) != getattr(first, name):
                raise InputError(
                    f"configurations must share formats and k to be compared: {name} is "
                    f"{getattr(first, name)!r} and {getattr(cfg, name)!r}")


def supports(k: int, constraints: Constraints) -> list[tuple[int, ...]]:
    """Free positions per stage: small supports straddling block/pair boundaries, then all."""
    cands: list[tuple[int, ...]] = [(0,), (0, 1), (0, k // 2), (0, 2), (0, 1, 2),
                                    (0, k // 4, k // 2), (0, 1, k // 2), (0, 1, 2, 3),
                                    (0, k // 4, k // 2, 3 * k // 4),
                                    (0, 1, k // 2, k // 2 + 1), (0, k - 1)]
    out: list[tuple[int, ...]] = []
    for s in cands:
        s2 = tuple(sorted({i for i in s if i < k and not constraints.fixed_zero(i)}))
        if s2 and s2 not in out and len(s2) < k:
            out.append(s2)
    full = tuple(i for i in range(k) if not constraints.fixed_zero(i))
    out.append(full)
    return out


@dataclass
class _Query:
    """Symbolic inputs over one support, with every configuration's output term."""

    cfgs: list[AccumulatorConfig]
    support: tuple[int, ...]
    constraints: Constraints
    window: bool
    a: list[z3.BitVecRef] = field(default_factory=list)
    b: list[z3.BitVecRef] = field(default_factory=list)
    c: z3.BitVecRef | None = None
    outs: list[z3.BitVecRef] = field(default_factory=list)
    side: list[z3.BoolRef] = field(default_factory=list)

    def build(self) -> _Query:
        cfg0 = self.cfgs[0]
        fin, fc = get_format(cfg0.in_format), get_format(cfg0.c_format)
        cons = self.constraints
        ew = shared_exponent_width(self.cfgs)
        win = (-WINDOW, WINDOW) if self.window else None
        for i in range(cfg0.k):
            if i in self.support:
                x, y = z3.BitVec(f"a{i}", fin.width), z3.BitVec(f"b{i}", fin.width)
                for var, zero, sign in ((x, cons.zero_a, cons.sign_a),
                                        (y, cons.zero_b, cons.sign_b)):
                    if i in zero:
                        self.side.append(var == 0)
                    rng = _narrow(cons.exp_range, win)
                    self.side += entry(fin, var, cons.finite, cons.normal, rng,
                                       "?" if sign is None else sign[i])
            else:
                x, y = z3.BitVecVal(0, fin.width), z3.BitVecVal(0, fin.width)
            self.a.append(x)
            self.b.append(y)
        if cons.zero_c:
            self.c = z3.BitVecVal(0, fc.width)
        else:
            self.c = z3.BitVec("c", fc.width)
            cwin = (-8 * WINDOW, 8 * WINDOW) if self.window else None
            self.side += entry(fc, self.c, cons.finite, cons.normal,
                               _narrow(cons.c_exp_range, cwin), cons.sign_c)
        self.outs = [encode(cfg, self.a, self.b, self.c, ew) for cfg in self.cfgs]
        return self

    def vector(self, model: z3.ModelRef) -> Vector:
        def get(x: z3.BitVecRef) -> int:
            return model.eval(x, model_completion=True).as_long()
        return Vector([get(x) for x in self.a], [get(y) for y in self.b], get(self.c))

    def predicted(self, model: z3.ModelRef) -> list[int]:
        return [model.eval(o, model_completion=True).as_long() for o in self.outs]


def _narrow(user: tuple[int, int] | None, win: tuple[int, int] | None) -> tuple[int, int] | None:
    if user is None:
        return win
    if win is None:
        return user
    return (max(user[0], win[0]), min(user[1], win[1])) if max(user[0], win[0]) <= min(
        user[1], win[1]) else user


def _solve(goal: list[z3.BoolRef], seconds: float,
           attempt: int = 0) -> tuple[z3.CheckSatResult, z3.ModelRef | None]:
    """One check; successive attempts alternate solvers (SAT run times vary widely)."""
    if attempt % 2 == 0:
        s = z3.SolverFor("QF_BV")
    else:
        s = z3.Then("simplify", "solve-eqs", "bit-blast", "sat").solver()
    s.set("timeout", max(1, int(seconds * 1000)))
    s.add(*goal)
    r = s.check()
    return r, (s.model() if r == z3.sat else None)


#: per-stage time budgets of successive rounds over the stages (iterative deepening)
BUDGETS = (1.0, 3.0, 10.0, 30.0, 120.0)
#: stages tried in round r: the first STAGES_PER_ROUND * (r + 1) (then all, in the last)
STAGES_PER_ROUND = 4


def _plan(k: int, cons: Constraints) -> list[tuple[tuple[int, ...], bool]]:
    stages: list[tuple[tuple[int, ...], bool]] = []
    for sup in supports(k, cons):
        stages.append((sup, True))
        stages.append((sup, False))
    return stages


def distinguish(a_cfg: AccumulatorConfig, b_cfg: AccumulatorConfig,
                constraints: Constraints | None = None, timeout: float = 60.0) -> Distinction:
    """Inputs on which a_cfg and b_cfg give different outputs, or a proof that none exist."""
    t0 = time.monotonic()
    cons = constraints or Constraints()
    _same_shape([a_cfg, b_cfg])
    cons.check(a_cfg.k)
    if a_cfg == b_cfg:
        return Distinction("equivalent", None, None, None, 0.0, "identical configurations")
    stages = _plan(a_cfg.k, cons)
    done: set[int] = set()
    cache: dict[int, _Query] = {}
    for rnd, budget in enumerate(BUDGETS):
        upto = len(stages) if rnd == len(BUDGETS) - 1 else STAGES_PER_ROUND * (rnd + 1)
        order = list(range(min(upto, len(stages))))
        if rnd >= 2 and len(stages) - 1 not in order:
            order.append(len(stages) - 1)  # the full support, for the equivalence proof
        for n in order:
            sup, window = stages[n]
            if n in done:
                continue
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                return Distinction("unknown", None, None, None, time.monotonic() - t0,
                                   f"solver timeout/unknown after {timeout:g} s")
            if n not in cache:
                cache[n] = _Query([a_cfg, b_cfg], sup, cons, window).build()
            q = cache[n]
            r, m = _solve(q.side + [q.outs[0] != q.outs[1]], min(left, budget), rnd)
            where = f"support {list(sup)}{' window' if window else ''}, round {rnd}"
            if r == z3.sat:
                assert m is not None
                vec = q.vector(m)
                pred = q.predicted(m)
                got = model_outputs([a_cfg, b_cfg], vec)
                if got != pred:
                    raise EncodingMismatch(f"z3 predicted {[hex(x) for x in pred]}, model "
                                           f"gives {[hex(x) for x in got]} on {vec}")
                return Distinction("distinct", vec, got[0], got[1], time.monotonic() - t0,
                                   where)
            if r == z3.unsat:
                done.add(n)
                if n == len(stages) - 1:
                    return Distinction("equivalent", None, None, None,
                                       time.monotonic() - t0,
                                       "unsat with every entry free under the constraints")
    return Distinction("unknown", None, None, None, time.monotonic() - t0,
                       f"solver unknown after {time.monotonic() - t0:.1f} s")


# -- separating a set -----------------------------------------------------------------------

@dataclass
class Separation:
    status: str                         # 'one_vector', 'suite', 'partial'
    vectors: list[Vector]
    table: dict[tuple[int, ...], list[int]]  # outputs on the vectors -> config indices
    inseparable: list[list[int]]        # groups proven equivalent (or identical)
    unknown: list[tuple[int, int]]      # pairs the solver could not decide
    seconds: float


def _partition(cfgs: list[AccumulatorConfig], vectors: list[Vector]) -> dict[tuple[int, ...],
                                                                                 list[int]]:
    outs = [model_outputs(cfgs, v) for v in vectors]
    table: dict[tuple[int, ...], list[int]] = {}
    for i in range(len(cfgs)):
        table.setdefault(tuple(o[i] for o in outs), []).append(i)
    return table


def separate(cfgs: list[AccumulatorConfig], constraints: Constraints | None = None,
             timeout: float = 120.0) -> Separation:
    """One vector with pairwise distinct outputs over cfgs, else a small identifying suite."""
    t0 = time.monotonic()
    cons = constraints or Constraints()
    if not cfgs:
        raise InputError("separate: empty set of configurations")
    _same_shape(cfgs)
    cons.check(cfgs[0].k)
    uniq: list[int] = []
    inseparable: dict[int, list[int]] = {}
    for i, cfg in enumerate(cfgs):
        j = next((u for u in uniq if cfgs[u] == cfg), None)
        if j is None:
            uniq.append(i)
            inseparable[i] = [i]
        else:
            inseparable[j].append(i)
    ucfgs = [cfgs[i] for i in uniq]
    # 1. one vector with pairwise distinct outputs (small sets only)
    if 2 <= len(ucfgs) <= 6:
        for sup, window in _plan(ucfgs[0].k, cons)[:6]:
            left = timeout / 3 - (time.monotonic() - t0)
            if left <= 0:
                break
            q = _Query(ucfgs, sup, cons, window).build()
            r, m = _solve(q.side + [z3.Distinct(*q.outs)], min(left, timeout / 12))
            if r == z3.sat:
                assert m is not None
                vec = q.vector(m)
                table = _partition(ucfgs, [vec])
                if len(table) == len(ucfgs):
                    return _separation("one_vector", [vec], table, uniq, inseparable, [],
                                       t0)
    # 2. greedy suite: split the largest undecided class with a distinguishing vector
    vectors: list[Vector] = []
    merged: list[tuple[int, int]] = []
    unknown: list[tuple[int, int]] = []
    while True:
        table = _partition(ucfgs, vectors) if vectors else {(): list(range(len(ucfgs)))}
        todo = None
        for members in sorted(table.values(), key=len, reverse=True):
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    pair = (members[x], members[y])
                    if pair not in merged and pair not in unknown:
                        todo = pair
                        break
                if todo:
                    break
            if todo:
                break
        left = timeout - (time.monotonic() - t0)
        if todo is None or left <= 0:
            break
        d = distinguish(ucfgs[todo[0]], ucfgs[todo[1]], cons, timeout=min(left, 60.0))
        if d.status == "distinct":
            assert d.vector is not None
            vectors.append(d.vector)
        elif d.status == "equivalent":
            merged.append(todo)
        else:
            unknown.append(todo)
    table = _partition(ucfgs, vectors) if vectors else {(): list(range(len(ucfgs)))}
    for x, y in merged:
        inseparable[uniq[x]].extend(inseparable.pop(uniq[y], []))
    status = "suite" if not unknown else "partial"
    return _separation(status, vectors, table, uniq, inseparable, unknown, t0)


def _separation(status: str, vectors: list[Vector], table: dict[tuple[int, ...], list[int]],
                uniq: list[int], inseparable: dict[int, list[int]],
                unknown: list[tuple[int, int]], t0: float) -> Separation:
    full = {key: [uniq[i] for i in members] for key, members in table.items()}
    groups = [sorted(g) for g in inseparable.values() if len(g) > 1]
    unk = [(uniq[x], uniq[y]) for x, y in unknown]
    return Separation(status, vectors, full, groups, unk, time.monotonic() - t0)


#: solver budgets per pair: pair_timeout, then 4x and 16x for the pairs it gave up on
PAIR_LEVELS = 3
#: rows added to the pool around each vector the solver finds
MUTATIONS = 400


# -- robust probes -----------------------------------------------------------------------------

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


def _mixed(labels: np.ndarray, vid: np.ndarray, nv: int, outs: np.ndarray) -> np.ndarray:
    """Per column of outs: ordered pairs of configurations of different feature values that
    the column leaves in one class (0: every class is pure)."""
    from mmaprobe.models.partition import split_scores

    return split_scores(labels, outs) - split_scores(labels * nv + vid, outs)


def _open_pair(fields: list[tuple[str, ...]], labels: np.ndarray, vid: np.ndarray,
               given_up: set[tuple[int, int]]) -> tuple[int, int] | None:
    """Two configurations of different values in one class, not yet given up, differing in
    as few fields as possible (so a distinguishing vector targets the feature); the largest
    mixed class first."""
    groups: dict[int, list[int]] = {}
    for i, lab in enumerate(labels.tolist()):
        groups.setdefault(lab, []).append(i)
    for members in sorted(groups.values(), key=len, reverse=True):
        if len({int(vid[i]) for i in members}) < 2:
            continue
        best: tuple[int, int] | None = None
        score = 1 << 30
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                i, j = members[x], members[y]
                if vid[i] == vid[j] or (i, j) in given_up:
                    continue
                d = sum(1 for u, v in zip(fields[i], fields[j]) if u != v)
                if d < score:
                    best, score = (i, j), d
        if best is not None:
            return best
    return None


def _decided(cols: list[np.ndarray], vid: np.ndarray) -> np.ndarray:
    """Per configuration: its class under the columns holds one feature value only."""
    from mmaprobe.models.partition import refine

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


def robust_probe(feature: str, space: list[AccumulatorConfig], value_of,
                 constraints: Constraints | None = None,
                 timeout: float = 300.0, progress=None,
                 pair_timeout: float = 10.0, pool_size: int = 4000,
                 pool_batches: int = 3, seed: int = 0) -> RobustProbe | None:
    """Vectors whose outputs decide feature on every configuration of space.

    Counterexample-guided refinement over the whole space, evaluated in batch on the numpy
    model: keep the partition of the configurations by their outputs on the vectors so far;
    while a class mixes configurations of different feature values, add the vector that
    leaves the fewest mixed pairs -- first from a pool of candidate rows (``pool``; up to
    ``pool_batches`` batches of ``pool_size``), then from ``distinguish`` between the two
    closest configurations of different values in the largest mixed class.  Pairs the solver
    proves equivalent are left together; pairs it cannot decide within ``pair_timeout`` are
    retried with 4x and 16x the budget once every other pair is done; whatever stays mixed
    is reported inconclusive.  Redundant vectors are then pruned, and the decision
    table maps each configuration's output prefix, at the depth its class became pure, to
    its value.  The table is re-verified on the model before it is returned.  Returns None
    only when no vector at all was found.
    """
    from mmaprobe.models.partition import outputs_matrix, refine

    from .pool import candidate_rows, mutations

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
    nv = len(values)
    fields = [tuple(str(v) for v in cfg.to_dict().values()) for cfg in space]
    labels = np.zeros(len(space), dtype=np.int64)
    vectors: list[Vector] = []
    cols: list[np.ndarray] = []
    given_up: set[tuple[int, int]] = set()  # proven equivalent
    tried: dict[tuple[int, int], float] = {}  # pair -> the budget the solver gave up at
    level = 0
    equivalent: list[tuple[int, int]] = []
    k = space[0].k
    pa = np.zeros((0, k), dtype=np.uint64)
    pb = np.zeros((0, k), dtype=np.uint64)
    pc = np.zeros(0, dtype=np.uint64)
    outs = np.zeros((len(space), 0), dtype=np.uint64)
    batches = 0
    rounds = 0
    smt_used = False
    while True:
        none = np.zeros((len(space), 1), dtype=np.uint64)
        base = float(_mixed(labels, vid, nv, none)[0])
        if base == 0:
            break
        if outs.shape[1]:
            scores = _mixed(labels, vid, nv, outs)
            j = int(np.argmin(scores))
            if scores[j] < base:
                vectors.append(Vector([int(x) for x in pa[j]], [int(x) for x in pb[j]],
                                      int(pc[j])))
                cols.append(outs[:, j].copy())
                labels = refine(labels, outs[:, j])
                say(f"vector {len(vectors) - 1} from the pool: {base:.0f} -> "
                    f"{scores[j]:.0f} mixed pairs")
                continue
        if batches < pool_batches and time.monotonic() - t0 < timeout / 2:
            a, b, c = candidate_rows(space, pool_size, seed + batches, cons)
            batches += 1
            pa, pb, pc = np.concatenate([pa, a]), np.concatenate([pb, b]), np.concatenate([pc, c])
            outs = np.concatenate([outs, outputs_matrix(space, a, b, c)], axis=1)
            say(f"pool batch {batches}: {outs.shape[1]} rows evaluated on {len(space)} "
                f"configurations ({time.monotonic() - t0:.1f} s)")
            continue
        budget = pair_timeout * 4 ** level
        skip = given_up | {pq for pq, t in tried.items() if t >= budget}
        pair = _open_pair(fields, labels, vid, skip)
        left = timeout - (time.monotonic() - t0)
        if pair is None:
            if level + 1 < PAIR_LEVELS and tried and left > 1:
                level += 1  # retry the pairs the solver gave up on, with 4x the time
                continue
            break
        if left <= 1:
            say("time is up: the configurations still mixed are left inconclusive")
            break
        i, j = pair
        d = distinguish(space[i], space[j], cons, timeout=min(left, budget))
        rounds += 1
        say(f"solver: {values[vid[i]]} vs {values[vid[j]]}: {d.status} in {d.seconds:.1f} s")
        if d.status == "distinct":
            assert d.vector is not None
            smt_used = True
            col = outputs_matrix(space, np.array([d.vector.a], dtype=np.uint64),
                                 np.array([d.vector.b], dtype=np.uint64),
                                 np.array([d.vector.c], dtype=np.uint64))[:, 0]
            vectors.append(d.vector)
            cols.append(col)
            labels = refine(labels, col)
            # the solver's vector's neighbours join the pool: they often split the
            # neighbouring pairs of the same mixed classes without another query
            a, b, c = mutations(space[0], d.vector.a, d.vector.b, d.vector.c, MUTATIONS,
                                seed + rounds, cons)
            pa, pb, pc = np.concatenate([pa, a]), np.concatenate([pb, b]), np.concatenate([pc, c])
            outs = np.concatenate([outs, outputs_matrix(space, a, b, c)], axis=1)
            continue
        if d.status == "equivalent":
            given_up.add((i, j))
            equivalent.append((i, j))
            continue
        # the solver cannot split these two values here within this budget: skip the
        # class's other pairs of the same two values until the next level
        members = np.flatnonzero(labels == labels[i]).tolist()
        for x in members:
            for y in members:
                if x < y and {int(vid[x]), int(vid[y])} == {int(vid[i]), int(vid[j])}:
                    tried[(x, y)] = budget
    unknown = [pq for pq in tried if pq not in given_up and labels[pq[0]] == labels[pq[1]]]
    if not vectors:
        return None
    keep = _prune(cols, vid)
    vectors = [vectors[n] for n in keep]
    cols = [cols[n] for n in keep]
    table = _table(cols, vid, values)
    probe = RobustProbe(feature, vectors, table, len(space), 0.0, rounds, [],
                        "pool+smt" if smt_used else "pool", equivalent=equivalent,
                        unknown=unknown, pool_rows=int(outs.shape[1]))
    _verify(probe, space, values, vid)
    probe.seconds = time.monotonic() - t0
    say(f"{len(vectors)} vector(s), {probe.inconclusive} inconclusive, {probe.wrong} wrong "
        f"({probe.seconds:.1f} s)")
    return probe


def _verify(probe: RobustProbe, space: list[AccumulatorConfig], values: list[object],
            vid: np.ndarray) -> None:
    """Re-evaluate the vectors on the model and count wrong and inconclusive decisions."""
    from mmaprobe.models.partition import outputs_matrix

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
