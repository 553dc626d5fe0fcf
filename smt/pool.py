"""Candidate rows for robust-probe synthesis, evaluated in batch on the numpy model.

The synthesis loop (``synth.robust_probe``) first looks for splitting vectors among cheap
rows whose outputs the numpy model computes for every configuration of the space at once;
the solver is asked only when no row of the pool splits a class that still mixes feature
values.  The pool has two parts:

- structured rows (``structured_rows``): a large pair cancelling exactly, so that a small
  term's fate at alignment is the exact output, with the small term 2^(2s - j) at every
  alignment distance j around the accumulator widths F of the space, short significands
  (rounding ties, half units), a second small term, products or c as the cancelling term,
  positions at block and pair boundaries;
- the discriminator pool of ``vectors.rows.pool_rows`` (targeted alignment rows plus
  [KM25]'s ISSM normal and edge rows).

Every row is made to respect the input constraints (fixed zeros and signs imposed, rows
violating finite/normal/exponent range dropped: ``admissible``).
"""

from __future__ import annotations

import numpy as np

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.formats import Format, get_format
from mmaprobe.models.rows import pool_rows
from mmaprobe.models.sampling import round_to_format

from .constraints import Constraints

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]

#: significands of the small terms: exact ones, ties (1.5 = half unit after a shift),
#: one ulp above one, nearly two
_SIGS = (1.0, 1.5, 1.25, 1.75, 1.125)


def _scale(fin: Format, fout: Format, fc: Format) -> int:
    """s such that 2^(2s+1) fits the output and c formats and 2^s the input format."""
    return max(1, min(fin.emax, (min(fout.emax, fc.emax) - 1) // 2))


def _positions(rng: np.random.Generator, k: int, nfmas: list[int], n: int) -> list[int]:
    """n distinct positions, mostly at block boundaries (multiples of an nfma, +-1)."""
    cands: list[int] = []
    for m in nfmas:
        for q in range(0, k, max(m, 1)):
            cands += [q, q - 1, q + 1]
    cands = sorted({p for p in cands if 0 <= p < k})
    out: list[int] = []
    while len(out) < min(n, k):
        p = int(rng.choice(cands)) if rng.random() < 0.7 else int(rng.integers(0, k))
        if p not in out:
            out.append(p)
    return out


def structured_rows(space: list[AccumulatorConfig], n: int, rng: np.random.Generator) -> Rows:
    """n rows (a, b, c) of bit patterns: a cancelling pair and small terms near 2^-F."""
    cfg0 = space[0]
    fin, fc, fout = (get_format(cfg0.in_format), get_format(cfg0.c_format),
                     get_format(cfg0.out_format))
    k = cfg0.k
    s = _scale(fin, fout, fc)
    fs = sorted({cfg.frac_bits for cfg in space})
    nfmas = sorted({cfg.nfma for cfg in space})
    jmax = max(fs) + 6
    av = np.zeros((n, k))
    bv = np.zeros((n, k))
    cv = np.zeros(n)
    for r in range(n):
        template = int(rng.integers(0, 3))  # 0: products cancel, 1: c cancels, 2: c large
        need = 4 if template == 0 else 3
        pos = _positions(rng, k, nfmas, need)
        big = 2.0 ** s
        sign = 1.0 if rng.random() < 0.5 else -1.0
        if fs and rng.random() < 0.7:
            j = int(rng.choice(fs)) + int(rng.integers(-3, 4))
        else:
            j = int(rng.integers(1, jmax + 1))
        j = max(1, j)
        if template == 0 and len(pos) >= 3:
            av[r, pos[0]], bv[r, pos[0]] = sign * big, big
            av[r, pos[2]], bv[r, pos[2]] = -sign * big, big
            small = pos[1]
            extra = pos[3] if len(pos) > 3 else -1
        elif len(pos) >= 2:
            cfac = 1.0 if template == 1 else float(rng.choice([1.0, 1.5, 0.75]))
            cv[r] = -sign * big * big * cfac
            if template == 1:
                av[r, pos[0]], bv[r, pos[0]] = sign * big, big
                small = pos[1]
                extra = pos[2] if len(pos) > 2 else -1
            else:
                small = pos[0]
                extra = pos[1]
        else:
            small, extra = pos[0], -1
        m = float(rng.choice(_SIGS))
        half = j // 2
        ssign = 1.0 if rng.random() < 0.6 else -1.0
        av[r, small] = ssign * m * 2.0 ** (s - half)
        bv[r, small] = 2.0 ** (s - j + half)
        if extra >= 0 and rng.random() < 0.5:
            j2 = j + int(rng.integers(-2, 3))
            h2 = j2 // 2
            m2 = float(rng.choice(_SIGS))
            s2 = 1.0 if rng.random() < 0.5 else -1.0
            av[r, extra] = s2 * m2 * 2.0 ** (s - h2)
            bv[r, extra] = 2.0 ** (s - j2 + h2)
    return round_to_format(av, fin), round_to_format(bv, fin), round_to_format(cv, fc)


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
    """Rows made to respect cons: fixed zeros and signs set, inadmissible rows dropped."""
    fin, fc = get_format(cfg.in_format), get_format(cfg.c_format)
    a, b, c = a.copy(), b.copy(), c.copy()
    for i in cons.zero_a:
        a[:, i] = 0
    for i in cons.zero_b:
        b[:, i] = 0
    if cons.zero_c:
        c[:] = 0
    if cons.sign_a is not None:
        a = _with_signs(fin, a, cons.sign_a)
    if cons.sign_b is not None:
        b = _with_signs(fin, b, cons.sign_b)
    if cons.sign_c != "?" and not cons.zero_c:
        c = _with_signs(fc, c[:, None], cons.sign_c)[:, 0]
    ok = (_entry_ok(fin, a, cons, cons.exp_range).all(axis=1)
          & _entry_ok(fin, b, cons, cons.exp_range).all(axis=1)
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
