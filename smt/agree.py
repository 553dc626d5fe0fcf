"""Agreement of the z3 encoding with the numpy model: random rows, exhaustive small cases.

``random_rows`` draws rows that exercise the arithmetic rather than the special cases:
mostly finite values with nearby exponents (so alignment, cancellation and carries happen),
some subnormals, zeros of both signs and a few arbitrary patterns (NaN, inf).
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import z3

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.formats import Format, get_format

from .encode import encode, inputs, scale_inputs


def random_pattern(fmt: Format, rng: random.Random, spread: int = 4) -> int:
    r = rng.random()
    sign = rng.randrange(2) << (fmt.bits - 1)
    if r < 0.04:
        return rng.randrange(0, 1 << fmt.bits) << fmt.pad
    if r < 0.1:
        return (sign | rng.randrange(0, 1 << fmt.t)) << fmt.pad
    if r < 0.14:
        return sign << fmt.pad
    w = min(fmt.bias - 1, spread)
    e = max(1, min(fmt.bias + rng.randrange(-w, w + 1), (1 << fmt.ebits) - 2))
    frac = rng.randrange(0, 1 << fmt.t)
    if rng.random() < 0.3:  # sparse significands make ties and exact cancellations likely
        frac &= ~((1 << max(0, fmt.t - 2)) - 1)
    return (sign | (e << fmt.t) | frac) << fmt.pad


def random_rows(cfg: AccumulatorConfig, n: int, seed: int = 0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = random.Random(seed)
    fin, fb, fc = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.c_format)
    a = np.zeros((n, cfg.k), dtype=np.uint64)
    b = np.zeros((n, cfg.k), dtype=np.uint64)
    c = np.zeros(n, dtype=np.uint64)
    for r in range(n):
        spread = rng.choice([1, 3, 8])
        for i in range(cfg.k):
            a[r, i] = random_pattern(fin, rng, spread)
            b[r, i] = random_pattern(fb, rng, spread)
        c[r] = random_pattern(fc, rng, 2 * spread)
    return a, b, c


def random_scales(cfg: AccumulatorConfig, n: int, seed: int = 0
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """Scale factors of a and b for n rows (block scaling), or None without it: mostly
    near 1 (so scaled products meet c), some far, a few NaN or zero patterns."""
    if cfg.scale_format is None:
        return None
    rng = random.Random(seed + 7919)
    fs = get_format(cfg.scale_format)
    one = fs.exact_bits(1)
    out = []
    for _ in range(2):
        x = np.zeros((n, cfg.scales), dtype=np.uint64)
        for r in range(n):
            for j in range(cfg.scales):
                u = rng.random()
                if u < 0.05:
                    x[r, j] = rng.randrange(0, 1 << fs.width)
                elif u < 0.6:
                    x[r, j] = one + (rng.randrange(-3, 4) << fs.t)
                else:
                    x[r, j] = rng.randrange(0, 1 << fs.width)
        out.append(x)
    return out[0], out[1]


class Evaluator:
    """Concrete evaluation through one symbolic encoding (substitute constants, simplify)."""

    def __init__(self, cfg: AccumulatorConfig, support: tuple[int, ...] | None = None):
        """support: positions with symbolic a_i, b_i; the others are the constant +0."""
        self.cfg = cfg
        self.a, self.b, self.c = inputs(cfg)
        self.scales = scale_inputs(cfg)
        if support is not None:
            wa, wb = self.a[0].size(), self.b[0].size()
            self.a = [x if i in support else z3.BitVecVal(0, wa) for i, x in enumerate(self.a)]
            self.b = [x if i in support else z3.BitVecVal(0, wb) for i, x in enumerate(self.b)]
        self.term = encode(cfg, self.a, self.b, self.c, scales=self.scales)

    def __call__(self, a: list[int], b: list[int], c: int,
                 scales: tuple[list[int], list[int]] | None = None) -> int:
        xs, vs = self.a + self.b + [self.c], list(a) + list(b) + [c]
        if self.scales is not None:
            assert scales is not None, "this configuration needs scale factors"
            xs = xs + self.scales[0] + self.scales[1]
            vs = vs + list(scales[0]) + list(scales[1])
        pairs = [(x, z3.BitVecVal(int(v), x.size())) for x, v in zip(xs, vs)
                 if not z3.is_bv_value(x)]
        out = z3.simplify(z3.substitute(self.term, *pairs))
        if not z3.is_bv_value(out):
            raise AssertionError("the encoding did not reduce to a constant")
        return out.as_long()


def mismatches(cfg: AccumulatorConfig, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               limit: int = 5, support: tuple[int, ...] | None = None,
               scales: tuple[np.ndarray, np.ndarray] | None = None) -> list[str]:
    """Rows where the encoding and the numpy model differ (at most limit, described).

    With a support, the encoding is built with the other a_i, b_i constant +0 (the sparse
    circuits synthesis uses) and those entries of the rows are set to +0.  scales: the
    rows' scale factors of a and b (block scaling).
    """
    if support is not None:
        off = [i for i in range(cfg.k) if i not in support]
        a, b = a.copy(), b.copy()
        a[:, off] = 0
        b[:, off] = 0
    want = evaluate(cfg, a, b, c, *(scales or ()))
    ev = Evaluator(cfg, support)
    bad: list[str] = []
    for r in range(a.shape[0]):
        sc = None if scales is None else ([int(x) for x in scales[0][r]],
                                          [int(x) for x in scales[1][r]])
        got = ev([int(x) for x in a[r]], [int(x) for x in b[r]], int(c[r]), sc)
        if got != int(want[r]):
            extra = "" if sc is None else f" scales={[hex(x) for x in sc[0] + sc[1]]}"
            bad.append(f"a={[hex(int(x)) for x in a[r]]} b={[hex(int(x)) for x in b[r]]} "
                       f"c={int(c[r]):#x}{extra}: model {int(want[r]):#x}, z3 {got:#x}")
            if len(bad) >= limit:
                break
    return bad


def exhaustive_rows(cfg: AccumulatorConfig, c_values: list[int]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every a, b pattern combination (small formats and k only) with each c value."""
    pa = get_format(cfg.in_format).all_patterns()
    pb = get_format(cfg.b_fmt).all_patterns()
    combos = list(itertools.product(*([pa] * cfg.k + [pb] * cfg.k)))
    n = len(combos) * len(c_values)
    if n > 2_000_000:
        raise ValueError(f"{n} rows is too many for an exhaustive check")
    ab = np.array(combos, dtype=np.uint64)
    a = np.tile(ab[:, :cfg.k], (len(c_values), 1))
    b = np.tile(ab[:, cfg.k:], (len(c_values), 1))
    c = np.repeat(np.array(c_values, dtype=np.uint64), len(combos))
    return a, b, c


def prove_agreement(cfg: AccumulatorConfig, c_values: list[int],
                    timeout: float = 120.0) -> str:
    """Unsat proof that the encoding equals the model's table on every a, b (fixed c).

    The model is tabulated exhaustively over a, b for each c (small formats and k only);
    the table is encoded as a choice over output values (the inputs mapping to each value),
    and the solver must show that no input makes the encoding differ from it.  Returns
    'proved', 'refuted: <row>' or 'unknown'.
    """
    if cfg.b_format is not None or cfg.scale_format is not None:
        raise ValueError("prove_agreement takes one format for a and b and no scale factors")
    fin, fout = get_format(cfg.in_format), get_format(cfg.out_format)
    a, b, c = exhaustive_rows(cfg, c_values)
    want = evaluate(cfg, a, b, c)
    xa, xb, xc = inputs(cfg)
    term = encode(cfg, xa, xb, xc)
    key = z3.Concat(*(xa + xb)) if len(xa + xb) > 1 else xa[0]
    per_c = len(want) // len(c_values)
    disj = []
    for ci, cv in enumerate(c_values):
        keys_of: dict[int, list[int]] = {}
        for row in range(ci * per_c, (ci + 1) * per_c):
            k = 0
            for x in list(a[row]) + list(b[row]):
                k = (k << fin.width) | int(x)
            keys_of.setdefault(int(want[row]), []).append(k)
        table = None
        for v, keys in sorted(keys_of.items(), key=lambda kv: len(kv[1])):
            out = z3.BitVecVal(v, fout.width)
            table = out if table is None else z3.If(z3.Or([key == k for k in keys]), out, table)
        disj.append(z3.And(xc == cv, term != table))
    s = z3.SolverFor("QF_BV")
    s.set("timeout", int(timeout * 1000))
    for x in xa + xb:
        if fin.pad:
            s.add(z3.Extract(fin.pad - 1, 0, x) == 0)
    s.add(z3.Or(*disj))
    r = s.check()
    if r == z3.unsat:
        return "proved"
    if r == z3.sat:
        m = s.model()
        return f"refuted: {[m.eval(x, True) for x in xa + xb]} c={m.eval(xc, True)}"
    return "unknown"
