"""Distinguishing inputs: a, b, c on which two configurations give different outputs.

Every vector returned has been evaluated on the numpy model (``models.accumulator.evaluate``)
and checked to have the claimed property there; the solver only proposes.

Speed levers ([Valpey25] synthesises discriminating inputs the same way, per pair):

- sparse supports grown step by step: a query first frees one product (every other a_i and
  b_i fixed to +0, which the encoder drops), then two, three, ... at positions chosen to
  straddle block and pair boundaries, and only last frees every entry;
- a first pass per support with an exponent window (|e| <= 6 for a, b; c within the
  product range) before the unrestricted pass;
- both configurations are encoded over the same input terms, so z3 shares the decoders and
  products between them;
- successive rounds over the stages with growing budgets (iterative deepening).

Where the solver cannot answer (a query that proves nothing within its time budget, or a
configuration the encoding does not cover), ``distinguish`` falls back to a search on the
numpy model over targeted and random rows (under the same constraints) and says so in its
detail; it reports 'unknown' only when that search finds nothing either.

Mixed operand formats (b_format) and block scaling are encoded: the scale factors are free
variables, returned packed after the k values of a and b (``AccumulatorConfig.row_width``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import z3

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError, MmaprobeError
from mmaprobe.models.formats import get_format
from mmaprobe.models.rows import pool_rows
from mmaprobe.models.sampling import KINDS, random_rows
from mmaprobe.models.split_search import Solver, SolverAnswer

from .constraints import Constraints, entry
from .encode import NotEncodable, check_encodable, encode, shared_exponent_width
from .pool import impose

#: exponent window of the first pass per support (unbiased exponents of a and b entries)
WINDOW = 6


class EncodingMismatch(RuntimeError):
    """The solver's vector does not behave on the numpy model as the encoding predicted."""


#: rows the model search of the fallback evaluates (targeted, then random, per round)
FALLBACK_ROWS = 4000


@dataclass
class Vector:
    """A row: a and b (packed with their scale factors under block scaling) and c."""

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


#: the fields two configurations must share to be compared on one input vector
SHAPE_FIELDS = ("in_format", "b_fmt", "c_format", "out_format", "k", "scale_format",
                "scale_block")


def shape(cfg: AccumulatorConfig) -> tuple:
    """The key of the configurations comparable with cfg (same formats, K and scaling)."""
    return tuple(getattr(cfg, name) for name in SHAPE_FIELDS)


def _same_shape(cfgs: list[AccumulatorConfig]) -> None:
    first = cfgs[0]
    for cfg in cfgs[1:]:
        for name in SHAPE_FIELDS:
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
        fb = get_format(cfg0.b_fmt)
        cons = self.constraints
        ew = shared_exponent_width(self.cfgs)
        win = (-WINDOW, WINDOW) if self.window else None
        for i in range(cfg0.k):
            if i in self.support:
                x, y = z3.BitVec(f"a{i}", fin.width), z3.BitVec(f"b{i}", fb.width)
                for var, fmt, zero, sign in ((x, fin, cons.zero_a, cons.sign_a),
                                             (y, fb, cons.zero_b, cons.sign_b)):
                    if i in zero:
                        self.side.append(var == 0)
                    rng = _narrow(cons.exp_range, win)
                    self.side += entry(fmt, var, cons.finite, cons.normal, rng,
                                       "?" if sign is None else sign[i])
            else:
                x, y = z3.BitVecVal(0, fin.width), z3.BitVecVal(0, fb.width)
            self.a.append(x)
            self.b.append(y)
        if cons.zero_c:
            self.c = z3.BitVecVal(0, fc.width)
        else:
            self.c = z3.BitVec("c", fc.width)
            cwin = (-8 * WINDOW, 8 * WINDOW) if self.window else None
            self.side += entry(fc, self.c, cons.finite, cons.normal,
                               _narrow(cons.c_exp_range, cwin), cons.sign_c)
        self.scales = None
        if cfg0.scales:
            w = get_format(cfg0.scale_format).width
            self.scales = ([z3.BitVec(f"sa{j}", w) for j in range(cfg0.scales)],
                           [z3.BitVec(f"sb{j}", w) for j in range(cfg0.scales)])
        self.outs = [encode(cfg, self.a, self.b, self.c, ew, self.scales) for cfg in self.cfgs]
        return self

    def vector(self, model: z3.ModelRef) -> Vector:
        def get(x: z3.BitVecRef) -> int:
            return model.eval(x, model_completion=True).as_long()
        sa, sb = self.scales or ([], [])
        return Vector([get(x) for x in self.a + sa], [get(y) for y in self.b + sb],
                      get(self.c))

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
    try:
        check_encodable(a_cfg)
        check_encodable(b_cfg)
    except NotEncodable as e:
        return model_search(a_cfg, b_cfg, cons, t0, f"not encodable ({e})")
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
                return model_search(a_cfg, b_cfg, cons, t0,
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
    return model_search(a_cfg, b_cfg, cons, t0,
                        f"solver unknown after {time.monotonic() - t0:.1f} s")


def model_search(a_cfg: AccumulatorConfig, b_cfg: AccumulatorConfig, cons: Constraints,
                 t0: float, why: str, rows: int = FALLBACK_ROWS, seed: int = 0) -> Distinction:
    """The fallback where the solver cannot answer: targeted and random rows (under the
    constraints) on the numpy model; 'distinct' with the first row the two configurations
    disagree on, else 'unknown'.  The detail says that the solver did not answer and why."""
    rng = np.random.default_rng(seed)
    batches = [("targeted", *pool_rows(a_cfg, rows, rng)[0])]
    batches += [(kind, *random_rows(a_cfg, rows // 2, rng, kind)) for kind in KINDS]
    tried = 0
    for kind, a, b, c in batches:
        a, b, c = impose(a_cfg, a, b, c, cons)
        if not len(c):
            continue
        tried += len(c)
        da, db = evaluate(a_cfg, a, b, c), evaluate(b_cfg, a, b, c)
        diff = np.flatnonzero(da != db)
        if diff.size:
            i = int(diff[0])
            vec = Vector([int(x) for x in a[i]], [int(x) for x in b[i]], int(c[i]))
            return Distinction("distinct", vec, int(da[i]), int(db[i]), time.monotonic() - t0,
                               f"model search ({kind} rows; the solver did not answer: {why})")
    return Distinction("unknown", None, None, None, time.monotonic() - t0,
                       f"{why}; a model search over {tried} rows found no difference either")


def pair_solver(constraints: Constraints | None = None) -> Solver:
    """``distinguish`` as the split search's solver: never raises, says why it gave up
    (not encodable, solver failure) in the answer's detail."""
    def solve(x: AccumulatorConfig, y: AccumulatorConfig, seconds: float) -> SolverAnswer:
        try:
            d = distinguish(x, y, constraints, timeout=seconds)
        except MmaprobeError as e:
            return "unknown", None, f"not encodable ({e})"
        except (z3.Z3Exception, EncodingMismatch) as e:
            return "unknown", None, f"failed ({type(e).__name__}: {str(e)[:120]})"
        if d.status == "distinct" and d.vector is not None:
            row = (np.array(d.vector.a, dtype=np.uint64), np.array(d.vector.b, dtype=np.uint64),
                   int(d.vector.c))
            return "distinct", row, f"smt: {d.detail}, {d.seconds:.1f} s"
        return d.status, None, d.detail
    return solve
