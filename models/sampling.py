"""Random input rows for a configuration: normal values, raw bit patterns, edge values.

:func:`random_rows` returns ``(a, b, c)`` as uint64 bit-pattern arrays of shapes (n, k),
(n, k) and (n,), a in the configuration's in_format, b in its b format, c in c_format; with
block scaling the scale factors are packed after the k values (``cfg.row_width`` columns).
It is used by the model-vs-reference tests, the benchmarks and test-suite generation.
"""

from __future__ import annotations

import numpy as np

from .config import AccumulatorConfig
from .errors import InputError
from .formats import Format, get_format

KINDS = ("normal", "bits", "edge")

#: Probability that an 'edge' entry is an infinity or NaN (when the format has them).
EDGE_SPECIAL_RATE = 0.01
#: Fraction of 'edge' rows in which one product is made to cancel its neighbour.
EDGE_CANCEL_RATE = 0.35


def random_rows(cfg: AccumulatorConfig, n: int, rng: np.random.Generator,
                kind: str = "normal"):
    """Random inputs (a, b, c) for cfg as bit patterns.

    Parameters
    ----------
    cfg : AccumulatorConfig
        Gives k, in_format and c_format.
    n : int
        Number of rows.
    rng : numpy.random.Generator
        Source of randomness (the caller owns the seed).
    kind : {'normal', 'bits', 'edge'}
        'normal': standard normal values rounded to nearest-even to the format ([KM25]);
        'bits': uniform random bit patterns (specials included);
        'edge': a Schryer-style mix of zeros of both signs, extreme subnormals and normals,
        1 +- ulp, powers of two across the exponent range, rare infinities/NaNs, and
        neighbouring products that cancel.

    Returns
    -------
    a, b : numpy.ndarray
        uint64 arrays of shape (n, k).
    c : numpy.ndarray
        uint64 array of shape (n,).
    """
    fin, fb, fc = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.c_format)
    k = cfg.k
    if kind == "normal":
        a = round_to_format(rng.standard_normal((n, k)), fin)
        b = round_to_format(rng.standard_normal((n, k)), fb)
        c = round_to_format(rng.standard_normal(n), fc)
    elif kind == "bits":
        a, b, c = _bits(fin, (n, k), rng), _bits(fb, (n, k), rng), _bits(fc, (n,), rng)
    elif kind == "edge":
        a, b, c = _edge(fin, (n, k), rng), _edge(fb, (n, k), rng), _edge(fc, (n,), rng)
        if k >= 2 and n:
            # make product j+1 the negation of product j in some rows
            rows = np.flatnonzero(rng.random(n) < EDGE_CANCEL_RATE)
            j = rng.integers(0, k - 1, size=rows.size)
            a[rows, j + 1] = _negate(fin, a[rows, j])
            b[rows, j + 1] = b[rows, j]
    else:
        raise InputError(f"unknown sample kind {kind!r}; expected one of {KINDS}")
    if cfg.scales:
        a, b = pack_scales(cfg, a, b, rng, kind)
    return a, b, c


def random_scales(cfg: AccumulatorConfig, n: int, rng: np.random.Generator,
                  kind: str = "normal") -> tuple[np.ndarray, np.ndarray]:
    """Scale factors of a and b, each of shape (n, cfg.scales): near 1 (exponents within
    +-4) for 'normal', any pattern for 'bits', and for 'edge' a mix of near 1, any pattern
    (extreme exponents, UE4M3 zeros) and NaN."""
    fs = get_format(cfg.scale_format)
    shape = (n, cfg.scales)
    one = fs.exact_bits(1)

    def draw() -> np.ndarray:
        near = one + (rng.integers(-4, 5, size=shape) << fs.t)
        if fs.t:  # UE4M3 significands other than 1 in half the entries
            near = near + rng.integers(0, 1 << fs.t, size=shape) * (rng.random(shape) < 0.5)
        anything = rng.integers(0, 1 << fs.width, size=shape)
        if kind == "bits":
            return anything
        if kind == "edge":
            pick = rng.random(shape)
            out = np.where(pick < 0.6, near, anything)
            return np.where(pick > 0.97, fs.nan_bits(), out)
        return near

    return draw().astype(np.uint64), draw().astype(np.uint64)


def pack_scales(cfg: AccumulatorConfig, a: np.ndarray, b: np.ndarray,
                rng: np.random.Generator, kind: str = "normal"):
    """a and b with random scale factors packed after their k values (cfg.row_width)."""
    sa, sb = random_scales(cfg, a.shape[0], rng, kind)
    return np.concatenate([a, sa], 1), np.concatenate([b, sb], 1)


def round_to_format(x, fmt: Format | str) -> np.ndarray:
    """Round float64 values to fmt with round-to-nearest-even; returns uint64 patterns.

    Values beyond the largest finite number become infinity where the format has one and
    saturate otherwise; NaN becomes the format's NaN (or raises for formats without one).
    """
    fmt = get_format(fmt)
    x = np.asarray(x, dtype=np.float64)
    if fmt.name == "binary64":
        return x.view(np.uint64).copy()
    if fmt.name == "binary32":
        with np.errstate(over="ignore"):
            return x.astype(np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(x)
    if nan.any() and not fmt.has_nan:
        raise InputError(f"{fmt.name} has no NaN")
    neg = np.signbit(x) & fmt.signed
    mag = np.where(nan, 0.0, np.abs(x))
    _, e = np.frexp(mag)
    e = np.maximum(e.astype(np.int64) - 1, fmt.emin)
    q = np.ldexp(np.ones_like(mag), (e - fmt.t).astype(np.int32))
    r = np.rint(mag / q).astype(np.int64)  # mag / q is exact: a power-of-two scaling
    up = r >> fmt.p
    r, e = r >> up, e + up
    fmax = float(fmt.fmax)
    over = (e > fmt.emax) | (np.ldexp(r.astype(np.float64), (e - fmt.t).astype(np.int32))
                             > fmax)
    if fmt.has_inf:
        big_r, big_e = 0, fmt.emax + 1  # the infinity's exponent field, fraction 0
    else:
        big_r, big_e = fmt.max_sig, fmt.emax
    r = np.where(over | np.isinf(mag), big_r | (1 << fmt.t), r)
    e = np.where(over | np.isinf(mag), big_e, e)
    efield = np.where(r >> fmt.t != 0, e + fmt.bias, 0)
    sign_bit = neg.astype(np.int64) << (fmt.bits - 1) if fmt.signed else 0
    bits = sign_bit | (efield << fmt.t) | (r & ((1 << fmt.t) - 1))
    if not fmt.has_negative_zero:
        bits = np.where((r == 0) & (efield == 0), 0, bits)
    bits = bits.astype(np.uint64) << np.uint64(fmt.pad)
    if nan.any():
        bits = np.where(nan, np.uint64(fmt.nan_bits()), bits)
    return bits


def _bits(fmt: Format, shape, rng: np.random.Generator) -> np.ndarray:
    raw = rng.integers(0, 1 << fmt.bits, size=shape, dtype=np.uint64, endpoint=False)
    return raw << np.uint64(fmt.pad)


def _negate(fmt: Format, bits: np.ndarray) -> np.ndarray:
    if not fmt.signed:
        return bits
    flipped = bits ^ np.uint64(1 << (fmt.bits - 1 + fmt.pad))
    if fmt.kind == "fnuz":
        # 0x80 is NaN in the FNUZ formats: +0 stays +0
        flipped = np.where(bits == 0, bits, flipped)
    return flipped


def edge_values(fmt: Format | str) -> tuple[list[int], list[int]]:
    """(finite, special) edge-case bit patterns of fmt, each sign included."""
    fmt = get_format(fmt)
    finite = set()
    mags = [fmt.encode(0, 1, fmt.emin),                    # smallest subnormal
            fmt.encode(0, (1 << fmt.t) - 1, fmt.emin) if fmt.t else None,  # largest subn.
            fmt.encode(0, 1 << fmt.t, fmt.emin),           # smallest normal
            fmt.encode(0, fmt.max_sig, fmt.emax),          # largest finite
            fmt.encode(0, fmt.max_sig - 1, fmt.emax) if fmt.t else None]
    if fmt.emin <= 0 <= fmt.emax:
        mags += [fmt.encode(0, 1 << fmt.t, 0),                       # 1
                 fmt.encode(0, (1 << fmt.t) + 1, 0) if fmt.t else None,  # 1 + ulp
                 fmt.encode(0, (1 << fmt.p) - 1, -1) if fmt.emin <= -1 else None]  # 1 - ulp/2
    for e in range(fmt.emin, fmt.emax + 1):
        mags.append(fmt.encode(0, 1 << fmt.t, e))  # powers of two
    for m in mags:
        if m is None:
            continue
        finite.add(m)
        if fmt.signed:
            cls, _, _, _ = fmt.decode(m | (1 << (fmt.bits - 1 + fmt.pad)))
            if cls == "finite":
                finite.add(m | (1 << (fmt.bits - 1 + fmt.pad)))
    finite.add(fmt.zero_bits(0))
    if fmt.has_negative_zero:
        finite.add(fmt.zero_bits(1))
    special = []
    if fmt.has_inf:
        special += [fmt.inf_bits(0), fmt.inf_bits(1)]
    if fmt.has_nan:
        special.append(fmt.nan_bits())
    return sorted(finite), special


def _edge(fmt: Format, shape, rng: np.random.Generator) -> np.ndarray:
    finite, special = edge_values(fmt)
    finite = np.array(finite, dtype=np.uint64)
    out = finite[rng.integers(0, finite.size, size=shape)]
    # a quarter random patterns keeps ordinary values in the mix
    mixed = rng.random(shape) < 0.25
    out = np.where(mixed, _bits(fmt, shape, rng), out)
    if special:
        special = np.array(special, dtype=np.uint64)
        sp = rng.random(shape) < EDGE_SPECIAL_RATE
        out = np.where(sp, special[rng.integers(0, special.size, size=shape)], out)
    return out
