"""Candidate input rows for discrimination: targeted alignment rows plus ISSM random rows.

Targeted rows put one large term (c or a product) and small terms a chosen number of binades
below it, with random signs and short significands, so that the outputs expose the alignment
width (neab), the rounding of shifted-out bits, block boundaries (nfma), the final rounding,
c placement and carries; special rows add same-sign large sums (carries, overflow), tiny
values (flushing) and NaN/inf (specials).  Random rows follow [KM25]'s ISSM: normal values
and a Schryer-style edge mix (models.sampling).
"""

from __future__ import annotations

import numpy as np

from .config import AccumulatorConfig
from .formats import get_format
from .sampling import random_rows, round_to_format

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]


def _sig(rng: np.random.Generator, shape: tuple[int, ...], p: int) -> np.ndarray:
    """Significands in [1, 2) with few or many random fraction bits (exact in float64)."""
    t = max(p - 1, 0)
    kind = rng.integers(0, 4, size=shape)
    bits = min(t, 52)
    frac = rng.integers(0, 1 << bits, size=shape) if bits else np.zeros(shape, dtype=np.int64)
    one_bit = np.where(bits > 0, 1 << rng.integers(0, max(bits, 1), size=shape), 0)
    frac = np.where(kind == 0, 0, np.where(kind == 1, one_bit, np.where(
        kind == 2, (1 << bits) - 1 if bits else 0, frac)))
    return 1.0 + frac.astype(np.float64) / float(1 << bits) if bits else np.ones(shape)


def targeted_rows(cfg: AccumulatorConfig, n: int, rng: np.random.Generator) -> Rows:
    """n rows (a, b, c) of bit patterns aimed at the alignment and rounding features."""
    fin, fc = get_format(cfg.in_format), get_format(cfg.c_format)
    k = cfg.k
    lo_p, hi_p = 2 * fin.emin, 2 * fin.emax  # reachable product exponents (normal factors)
    span = hi_p - lo_p
    # the large exponent, chosen so that small terms up to ~40 binades below stay reachable
    top = rng.integers(lo_p + min(span, 40) // 2, hi_p + 1, size=n)
    top = np.clip(top, lo_p, hi_p)
    state = rng.choice(4, size=(n, k), p=[0.3, 0.2, 0.45, 0.05])  # zero, big, small, tiny
    shift = rng.integers(1, min(max(span, 2), 40), size=(n, k))
    pe = np.where(state == 1, top[:, None] - rng.integers(0, 3, size=(n, k)),
                  np.where(state == 2, top[:, None] - shift, lo_p - rng.integers(0, 4, (n, k))))
    pe = np.clip(pe, lo_p - fin.t, hi_p)
    ea = np.clip(pe // 2 + rng.integers(-2, 3, size=(n, k)), fin.emin, fin.emax)
    eb = np.clip(pe - ea, fin.emin - fin.t, fin.emax)
    sa = np.where(rng.random((n, k)) < 0.5, -1.0, 1.0)
    sb = np.where(rng.random((n, k)) < 0.15, -1.0, 1.0)
    av = sa * _sig(rng, (n, k), fin.p) * np.ldexp(1.0, ea.astype(np.int32))
    bv = sb * np.ldexp(1.0, eb.astype(np.int32))
    av = np.where(state == 0, 0.0, av)
    # same-sign large rows (carries, overflow) in about 6% of rows
    big = rng.random(n) < 0.06
    if big.any():
        m = float(fin.fmax) / 2
        av[big] = m * _sig(rng, (int(big.sum()), k), 2) / 2
        bv[big] = np.where(rng.random((int(big.sum()), k)) < 0.5, 1.0, m / 2)
    a = round_to_format(av, fin)
    b = round_to_format(bv, fin)
    # c: zero, a large power of two near the top (or above the products), or the negated top
    ckind = rng.integers(0, 4, size=n)
    ce = np.clip(top + rng.integers(-1, 3, size=n), fc.emin, fc.emax)
    cv = np.ldexp(_sig(rng, (n,), min(fc.p, fin.p + 2)), ce.astype(np.int32))
    cv = np.where(rng.random(n) < 0.5, -cv, cv)
    cv = np.where(ckind == 0, 0.0, np.where(ckind == 3, -np.ldexp(1.0, ce.astype(np.int32)),
                                            cv))
    c = round_to_format(cv, fc)
    return a, b, c


def issm_rows(cfg: AccumulatorConfig, n: int, rng: np.random.Generator) -> tuple[Rows, list[str]]:
    """Seed 000's ISSM mix: half normal-distribution rows, half edge rows; with their kinds."""
    n_norm = (n + 1) // 2
    a1, b1, c1 = random_rows(cfg, n_norm, rng, "normal")
    a2, b2, c2 = random_rows(cfg, n - n_norm, rng, "edge")
    kinds = ["normal"] * n_norm + ["edge"] * (n - n_norm)
    return (np.concatenate([a1, a2]), np.concatenate([b1, b2]), np.concatenate([c1, c2])), kinds


def pool_rows(cfg: AccumulatorConfig, n: int, rng: np.random.Generator) -> tuple[Rows, list[str]]:
    """A discrimination pool: 3/4 targeted rows, 1/4 ISSM rows; with their kinds."""
    nt = (3 * n) // 4
    a1, b1, c1 = targeted_rows(cfg, nt, rng)
    (a2, b2, c2), kinds = issm_rows(cfg, n - nt, rng)
    return ((np.concatenate([a1, a2]), np.concatenate([b1, b2]), np.concatenate([c1, c2])),
            ["targeted"] * nt + kinds)
