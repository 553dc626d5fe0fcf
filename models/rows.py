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
from .formats import Format, get_format
from .sampling import pack_scales, random_rows, round_to_format

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
    fin, fb, fc = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.c_format)
    k = cfg.k
    # reachable product exponents (normal factors)
    lo_p, hi_p = fin.emin + fb.emin, fin.emax + fb.emax
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
    eb = np.clip(pe - ea, fb.emin - fb.t, fb.emax)
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
        bv[big] = np.where(rng.random((int(big.sum()), k)) < 0.5, 1.0, float(fb.fmax) / 4)
    a = round_to_format(av, fin)
    b = round_to_format(bv, fb)
    # c: zero, a large power of two near the top (or above the products), or the negated top
    ckind = rng.integers(0, 4, size=n)
    ce = np.clip(top + rng.integers(-1, 3, size=n), fc.emin, fc.emax)
    cv = np.ldexp(_sig(rng, (n,), min(fc.p, fin.p + 2)), ce.astype(np.int32))
    cv = np.where(rng.random(n) < 0.5, -cv, cv)
    cv = np.where(ckind == 0, 0.0, np.where(ckind == 3, -np.ldexp(1.0, ce.astype(np.int32)),
                                            cv))
    c = round_to_format(cv, fc)
    if cfg.scales:
        a, b = pack_scales(cfg, a, b, rng)
    return a, b, c


def issm_rows(cfg: AccumulatorConfig, n: int, rng: np.random.Generator) -> tuple[Rows, list[str]]:
    """Seed 000's ISSM mix: half normal-distribution rows, half edge rows; with their kinds."""
    n_norm = (n + 1) // 2
    a1, b1, c1 = random_rows(cfg, n_norm, rng, "normal")
    a2, b2, c2 = random_rows(cfg, n - n_norm, rng, "edge")
    kinds = ["normal"] * n_norm + ["edge"] * (n - n_norm)
    return (np.concatenate([a1, a2]), np.concatenate([b1, b2]), np.concatenate([c1, c2])), kinds


def edge_case_rows(cfg: AccumulatorConfig, n: int, rng: np.random.Generator) -> Rows:
    """n rows aimed at the features plain random rows rarely reach.

    A quarter each: *carries* (every product the largest significand squared, at one
    exponent, mostly of one sign, so that the fixed-point sum needs log2(K) + 2 integer
    bits); *subnormal factors* (one input subnormal times a factor that brings the product
    into the normal range, or two small normals whose product is subnormal in binary32,
    beside an exact term); *overflowing products* (two large factors, with a finite or
    opposite term, for units that turn products >= 2^128 into infinities); *signed zeros*
    (every product -0 and c = -0, or one tiny negative product below the output's range:
    the zero-sign rule of fused blocks, [XWYY25] Sec. III-F).
    """
    fin, fc = get_format(cfg.in_format), get_format(cfg.c_format)
    fout = get_format(cfg.out_format)
    k = cfg.k
    top = 2.0 - 2.0 ** -fin.t
    av, bv, cv = np.zeros((n, k)), np.zeros((n, k)), np.zeros(n)
    kind = rng.integers(0, 4, size=n)
    for r in range(n):
        if kind[r] == 0:  # carries
            e = int(rng.integers(-3, 4))
            e = max(min(e, fin.emax, (fout.emax - 8 - k.bit_length()) // 2), fin.emin)
            sign = np.where(rng.random(k) < 0.9, 1.0, -1.0) * (1 if rng.random() < 0.5 else -1)
            av[r] = sign * top * 2.0 ** e
            bv[r] = top * 2.0 ** e
            # c at the products' exponent (a larger c would move the alignment up)
            cv[r] = float(rng.choice([0.0, 1.5, -1.5, top])) * 2.0 ** (2 * e)
        elif kind[r] == 1:  # subnormal factors and subnormal products
            i = int(rng.integers(0, k))
            if fin.t and rng.random() < 0.6:
                sub = int(rng.integers(1, 1 << min(fin.t, 52)))
                av[r, i] = sub * 2.0 ** (fin.emin - fin.t) * (1 if rng.random() < 0.5 else -1)
                bv[r, i] = 2.0 ** min(fin.emax, max(0, -fin.emin))
            else:
                e = max(fin.emin, -75)
                av[r, i] = 2.0 ** e * (1 if rng.random() < 0.5 else -1)
                bv[r, i] = 2.0 ** e
            j = (i + 1) % k
            if k > 1 and rng.random() < 0.5:
                av[r, j], bv[r, j] = 1.0, 2.0 ** int(rng.integers(-4, 1))
            cv[r] = float(rng.choice([0.0, 2.0 ** max(fc.emin, -20)]))
        elif kind[r] == 3:  # signed zeros
            if rng.random() < 0.6:
                av[r] = -0.0
                bv[r] = np.abs(rng.standard_normal(k)) + 0.5
                cv[r] = -0.0
            else:
                i = int(rng.integers(0, k))
                av[r, i] = -(2.0 ** max(fin.emin - fin.t, -500))
                bv[r, i] = 2.0 ** max(fin.emin - fin.t, -500)
                cv[r] = float(rng.choice([0.0, -0.0]))
        else:  # overflowing products
            e = min(fin.emax, 100)
            i = int(rng.integers(0, k))
            av[r, i] = top * 2.0 ** e * (1 if rng.random() < 0.5 else -1)
            bv[r, i] = top * 2.0 ** e
            if k > 1 and rng.random() < 0.5:
                j = (i + 1) % k
                av[r, j], bv[r, j] = -av[r, i], bv[r, i]
            cv[r] = float(rng.choice([0.0, 1.0]))
    return _finish(cfg, av, bv, cv, rng)


def pool_rows(cfg: AccumulatorConfig, n: int, rng: np.random.Generator) -> tuple[Rows, list[str]]:
    """A discrimination pool with the kind of each row: 2/3 targeted rows, 1/12 edge-case
    rows, 1/4 ISSM rows."""
    nt = (2 * n) // 3
    ne = n // 12
    a1, b1, c1 = targeted_rows(cfg, nt, rng)
    a3, b3, c3 = edge_case_rows(cfg, ne, rng)
    (a2, b2, c2), kinds = issm_rows(cfg, n - nt - ne, rng)
    return ((np.concatenate([a1, a3, a2]), np.concatenate([b1, b3, b2]),
             np.concatenate([c1, c3, c2])), ["targeted"] * nt + ["edge-case"] * ne + kinds)


def local_rows(cfgs: list[AccumulatorConfig], n: int, rng: np.random.Generator) -> Rows:
    """Fresh rows aimed at a class of configurations: targeted, structured (sized to the
    class's accumulator widths) and edge-case rows."""
    n1, n2 = n // 2, n // 4
    parts = [targeted_rows(cfgs[0], n1, rng), structured_rows(cfgs, n2, rng),
             edge_case_rows(cfgs[0], n - n1 - n2, rng)]
    return tuple(np.concatenate(x) for x in zip(*parts))  # type: ignore[return-value]


# -- structured rows (a cancelling pair and small terms near 2^-F) -----------------------

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
    return _finish(cfg0, av, bv, cv, rng)


def _finish(cfg: AccumulatorConfig, av, bv, cv, rng: np.random.Generator) -> Rows:
    """Values rounded to the formats of a, b (b's own format) and c, with scale factors
    packed after the k values under block scaling."""
    a = round_to_format(av, get_format(cfg.in_format))
    b = round_to_format(bv, get_format(cfg.b_fmt))
    c = round_to_format(cv, get_format(cfg.c_format))
    if cfg.scales:
        a, b = pack_scales(cfg, a, b, rng)
    return a, b, c
