"""Candidate rows for robust-probe synthesis, evaluated in batch on the numpy model.

The synthesis loop (``synth.robust_probe``) first looks for splitting vectors among cheap
rows whose outputs the numpy model computes for every configuration of the space at once;
the solver is asked only when no row of the pool splits a class that still mixes feature
values.  The pool has two parts:

- structured rows (``models.rows.structured_rows``: a large pair cancelling exactly and
  small terms at every alignment distance around the space's accumulator widths);
- the discriminator pool of ``models.rows.pool_rows`` (targeted alignment rows, edge-case
  rows, and [KM25]'s ISSM normal and edge rows).

Every row is made to respect the input constraints (fixed zeros and signs imposed, rows
violating finite/normal/exponent range dropped: ``admissible``).
"""

from __future__ import annotations

import numpy as np

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.formats import Format, get_format
from mmaprobe.models.rows import pool_rows, structured_rows

from .constraints import Constraints

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]

def candidate_rows(space: list[AccumulatorConfig], n: int, seed: int,
                   constraints: Constraints) -> Rows:
    """About n admissible rows: half structured, half from vectors.rows.pool_rows."""
    rng = np.random.default_rng(seed)
    a1, b1, c1 = structured_rows(space, n // 2, rng)
    (a2, b2, c2), _ = pool_rows(space[0], n - n // 2, rng)
    a = np.concatenate([a1, a2])
    b = np.concatenate([b1, b2])
    c = np.concatenate([c1, c2])
    return impose(space[0], a, b, c, constraints)


# -- input constraints on rows -------------------------------------------------------------

def _fields(fmt: Format, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    body = (x >> np.uint64(fmt.pad)) & np.uint64((1 << fmt.bits) - 1)
    efield = (body >> np.uint64(fmt.t)) & np.uint64((1 << fmt.ebits) - 1)
    frac = body & np.uint64((1 << fmt.t) - 1)
    return body, efield, frac


def _entry_ok(fmt: Format, x: np.ndarray, cons: Constraints,
              exp_range: tuple[int, int] | None) -> np.ndarray:
    """Elementwise: x satisfies finite / normal / exponent range (constraints.entry)."""
    body, efield, frac = _fields(fmt, x)
    top = np.uint64((1 << fmt.ebits) - 1)
    ok = np.ones(x.shape, dtype=bool)
    if cons.finite:
        if fmt.kind == "ieee":
            ok &= efield != top
        elif fmt.kind == "fn":
            ok &= ~((efield == top) & (frac == np.uint64((1 << fmt.t) - 1)))
        elif fmt.kind == "fnuz":
            ok &= body != np.uint64(1 << (fmt.bits - 1))
    if cons.normal:
        ok &= (efield != 0) | (frac == 0)
    if exp_range is not None:
        nonzero = (body & np.uint64((1 << (fmt.bits - 1)) - 1)) != 0
        e = np.where(efield == 0, 1, efield.astype(np.int64)) - fmt.bias
        ok &= ~nonzero | ((e >= exp_range[0]) & (e <= exp_range[1]))
    return ok


def _with_signs(fmt: Format, x: np.ndarray, signs: str) -> np.ndarray:
    bit = np.uint64(1 << (fmt.pad + fmt.bits - 1))
    x = x.copy()
    for i, ch in enumerate(signs):
        if ch == "+":
            x[..., i] &= ~bit
        elif ch == "-":
            x[..., i] |= bit
    return x


def impose(cfg: AccumulatorConfig, a: np.ndarray, b: np.ndarray, c: np.ndarray,
           cons: Constraints) -> Rows:
    """Rows made to respect cons: fixed zeros and signs set on the k entries of a and b (in
    their own formats; packed scale factors after them are free) and on c, rows that break
    finite / normal / exponent range dropped."""
    fa, fb, fc = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.c_format)
    k = cfg.k
    a, b, c = a.copy(), b.copy(), c.copy()
    for i in cons.zero_a:
        a[:, i] = 0
    for i in cons.zero_b:
        b[:, i] = 0
    if cons.zero_c:
        c[:] = 0
    if cons.sign_a is not None:
        a[:, :k] = _with_signs(fa, a[:, :k], cons.sign_a)
    if cons.sign_b is not None:
        b[:, :k] = _with_signs(fb, b[:, :k], cons.sign_b)
    if cons.sign_c != "?" and not cons.zero_c:
        c = _with_signs(fc, c[:, None], cons.sign_c)[:, 0]
    ok = (_entry_ok(fa, a[:, :k], cons, cons.exp_range).all(axis=1)
          & _entry_ok(fb, b[:, :k], cons, cons.exp_range).all(axis=1)
          & _entry_ok(fc, c, cons, cons.c_exp_range))
    return a[ok], b[ok], c[ok]


def mutations(cfg: AccumulatorConfig, a: list[int], b: list[int], c: int, n: int, seed: int,
              constraints: Constraints) -> Rows:
    """About n admissible rows near one vector (a solver's answer): its products moved to
    other positions (other blocks), single fraction or exponent bits flipped, signs flipped.
    A vector that splits one pair of configurations often splits its neighbours' too."""
    fin, fc = get_format(cfg.in_format), get_format(cfg.c_format)
    k = cfg.k
    rng = np.random.default_rng(seed)
    ra = np.tile(np.array(a, dtype=np.uint64), (n, 1))
    rb = np.tile(np.array(b, dtype=np.uint64), (n, 1))
    rc = np.full(n, c, dtype=np.uint64)
    for r in range(1, n):
        op = int(rng.integers(0, 4))
        if op == 0:  # move the products to other positions
            perm = rng.permutation(k)
            ra[r] = ra[r, perm]
            rb[r] = rb[r, perm]
        elif op == 1:  # one bit of one input entry (fraction or exponent)
            row = ra if rng.random() < 0.5 else rb
            i = int(rng.integers(0, k))
            if row[r, i] != 0:
                bit = int(rng.integers(0, fin.t + fin.ebits))
                row[r, i] ^= np.uint64(1 << (fin.pad + bit))
        elif op == 2:  # one bit of c
            bit = int(rng.integers(0, fc.t + fc.ebits))
            rc[r] ^= np.uint64(1 << (fc.pad + bit))
        else:  # one product's sign
            i = int(rng.integers(0, k))
            ra[r, i] ^= np.uint64(1 << (fin.pad + fin.bits - 1))
    return impose(cfg, ra, rb, rc, constraints)
