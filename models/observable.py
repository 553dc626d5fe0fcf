"""Which values of a feature a configuration's outputs can tell apart.

``mmaprobe check`` requires every feature of :data:`CHECKED_FEATURES` to be decided by some
applicable probe on every configuration where the feature is *observable*: where another
value of it gives a unit that some input tells apart.  :func:`alternatives` lists those
values; a probe's outcome decides the feature when it holds for the true value and for
none of them.

Equivalence is claimed only where the bounds below prove it, so the analysis is sound in
one direction: a value is treated as different unless shown to give the same outputs on
every input.  A check can therefore fail on a feature no input reveals (refine the bounds
here), but never pass on one that some input would reveal.  The bounds:

* every input value is a multiple of its format's smallest subnormal, so every product is
  a multiple of ``2^(2 (in.emin - in.t))`` and every value a fused block sees (products,
  c, partial sums: rounding to a coarser quantum keeps a multiple) is a multiple of the
  finest of these grids, ``G``;
* a block's alignment drops nothing when every term's lowest bit lies at or above
  ``emax - F`` for the largest possible alignment exponent ``emax``: then neab (beyond that
  F), the alignment rounding and the product normalisation change nothing;
* a block result needs at most ``F + 2 + ceil(log2 n)`` bits (one more with a sticky bit,
  fewer when alignment is exact and the sum is bounded, or when an earlier result below
  ``2^(E + 1)`` sits beside n products that are small against it): when the output holds
  that many and the result's quantum never falls below the output's subnormal quantum,
  the final rounding only shows in the sign of an exact zero (round-down gives -0), and
  the output's kept precision does not show at all; at K = 2 with c late and a, b of at
  most 8 bits, one row per pair of product classes decides the final rounding exactly;
* when every block is exact in that sense, the block structure (nfma, interleaving) only
  reorders exact additions and is not observable either;
* the sum of a block's aligned terms stays below ``2^(emax + 2 + carry_bits)`` (no wrap)
  when ``n`` terms of the largest significands fit: carry bits at or above that count are
  the same as unbounded;
* a block of two terms (nfma 1) truncated with a sticky bit, or rounded down at alignment
  and at the end, is correctly rounded once F covers the output's precision plus guard,
  round and sticky positions: every such F (and both of those alignments under a
  round-down) gives the same unit;
* a product below binary32's smallest normal exists only for wide input formats (bfloat16,
  tf32, binary32, binary64); a subnormal block result only where a block can make one
  (cancellation down to the grid) or pass on a subnormal c, and a flush between blocks
  only shows where the output itself is not flushed.

Features an algorithm does not use (neab of an IEEE FMA chain, the rounding mode of
CDNA2's round-to-nearest GPS, the c placement of FDRDA, ...) have no alternatives.

>>> from mmaprobe.models.config import AccumulatorConfig
>>> late = AccumulatorConfig(in_format="e2m1", k=8, nfma=4, c_placement="late")
>>> alternatives(late, "neab")[-1], alternatives(late, "nfma")   # fp4 sums are exact
(-15, ())
>>> alternatives(late, "final_rounding")                     # only the sign of x - x shows
('rd',)
>>> alternatives(AccumulatorConfig(in_format="binary16", k=4), "carry_bits")
(0, 1, 2)
"""

from __future__ import annotations

import dataclasses
import functools
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from .accumulator import evaluate
from .config import (
    ALGORITHMS,
    ALIGN_ROUNDINGS,
    FLUSH_STAGES,
    INTERLEAVES,
    NAN_STYLES,
    NORMALISATIONS,
    PLACEMENTS,
    AccumulatorConfig,
    ConfigError,
)
from .features import feature_value
from .formats import ROUNDING_MODES, ZERO_SIGN_RULES, Format, get_format

#: Features ``mmaprobe check`` requires a decision for on every configuration where they
#: are observable.  New configuration fields slot in by adding their name here and, where
#: some configurations cannot reveal them, a rule to :func:`alternatives`.
CHECKED_FEATURES: tuple[str, ...] = (
    "neab", "nfma", "align_rounding", "final_rounding", "product_normalisation",
    "carry_bits", "c_placement", "interleave", "subnormal_inputs", "subnormal_products",
    "subnormal_sums", "subnormal_output", "nan",
)

#: Values tried for the integer features (the configuration's domains).
NEAB_VALUES = tuple(range(-23, 41))
CARRY_VALUES: tuple[int | None, ...] = (None,) + tuple(range(17))

_FLUSH_OF = {"subnormal_inputs": "inputs", "subnormal_products": "products",
             "subnormal_sums": "sums", "subnormal_output": "output"}
_B32 = get_format("binary32")


def _clog2(n: int) -> int:
    """ceil(log2 n) for n >= 1."""
    return (n - 1).bit_length()


def _flog2_int(n: int) -> int:
    """floor(log2 n) for n >= 1."""
    return n.bit_length() - 1


@functools.lru_cache(maxsize=65536)
def _bounds(cfg: AccumulatorConfig, clamp: bool = True) -> dict[str, Any]:
    """Grids and magnitude bounds of the values a configuration's blocks see (a product's
    factors in a's and b's formats, which differ on mixed-format units).  ``clamp=False``:
    an earlier block's result bounded by the products alone, not by the output's range or
    a carry wrap (which hold only where the products' exponents are the unit's own)."""
    fin, fb, fc, fout = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                         get_format(cfg.c_format), get_format(cfg.out_format))
    c_in_blocks = cfg.algorithm == "fdrda" or cfg.c_placement == "early"
    g_p = (fin.emin - fin.t) + (fb.emin - fb.t)        # product grid
    g_c = fc.emin - fc.t                               # c grid
    grid = min(g_p, g_c) if c_in_blocks else g_p
    # magnitude bound of any product, c and partial sum (exact, as an integer multiple of
    # 2^grid); products' alignment exponent is e_a + e_b (+1 when normalised)
    pmax = fin.max_sig * fb.max_sig << ((fin.emax - fin.t) + (fb.emax - fb.t) - grid)
    cmax = fc.max_sig << (fc.emax - fc.t - grid)
    total = cfg.k * pmax + (cmax if c_in_blocks else 0)
    e_prod = fin.emax + fb.emax + (cfg.product_normalisation == "normalised")
    e_sum = _flog2_int(total) + grid                   # |any partial sum| < 2^(e_sum + 1)
    e_top = max(e_prod, fc.emax if c_in_blocks else e_prod,
                min(e_sum, fout.emax) if cfg.blocks > 1 or cfg.interleave == "pairs"
                else e_prod)
    # smallest alignment exponent of a non-zero term: a subnormal product, c or block result
    # (a product left by the flush below binary32's smallest normal is at least 2^-126, so
    # its exponent field is too)
    e_p_low = fin.emin + fb.emin
    if "products" in cfg.flush:
        e_p_low = max(e_p_low, _B32.emin)
    e_low = min(e_p_low, fc.emin if c_in_blocks else e_p_low, fout.emin)
    # F at and above which alignment drops nothing: the largest distance from a block's
    # alignment exponent (set by one term) down to the lowest bit of a term that can share
    # the block with it.  Terms: products P, c (first block, early), the accumulator A (an
    # earlier block's result, below the bound of the products and c before the last block).
    early = cfg.algorithm == "fused" and cfg.c_placement == "early"
    last = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
    top = {"P": e_prod}
    low = {"P": g_p}
    own = {"P": fin.t + fb.t + (cfg.product_normalisation == "normalised")}
    if early:
        top["C"], low["C"], own["C"] = fc.emax, g_c, fc.t
    if cfg.k > last and cfg.algorithm == "fused":
        acc_bound = (cfg.k - last) * pmax + (cmax if early else 0)
        top["A"] = _flog2_int(acc_bound) + grid
        wrapped = _wrapped_acc_top(cfg, e_prod, g_p, fout) if clamp else None
        if clamp:
            top["A"] = min(fout.emax, top["A"])
        if wrapped is not None:
            top["A"] = min(top["A"], wrapped)
        low["A"] = grid
        own["A"] = min(fout.t, top["A"] - grid)
    f_exact = max(own.values())
    for x in top:
        for y in low:
            if {x, y} != {"C", "A"} and (x != y or x == "P"):
                f_exact = max(f_exact, top[x] - low[y])
    return {"fin": fin, "fb": fb, "fc": fc, "fout": fout, "grid": grid, "g_p": g_p,
            "e_top": e_top, "e_prod": e_prod, "e_sum": e_sum, "e_low": e_low,
            "pmax": pmax, "total": total, "c_in_blocks": c_in_blocks, "f_exact": f_exact}


def _wrapped_acc_top(cfg: AccumulatorConfig, e_prod: int, g_p: int, fout) -> int | None:
    """Exponent bound on an earlier block's result where few carry bits wrap it (c late).

    With c late (fused) the first block holds products only and aligns at most at
    e_prod; a block that aligns at E wraps its sum below 2^(E + 2 + carry_bits).  For
    the F this bound serves (at or above f_exact, so no block drops a bit) every block
    result is a multiple of the product grid 2^g_p below 2^(E + 2 + carry_bits): when the
    output holds E + 2 + carry_bits - g_p bits it is that sum exactly, at exponent E + 1 +
    carry_bits at most (else rounding may reach 2^(E + 2 + carry_bits) itself); the next
    block aligns at the larger of that and e_prod.  e2m1 at K = 16, nfma = 8, 2 carry
    bits: the first block's result stays below 2^8 (at most 255.75), so the second block
    aligns at 2^7 or below and F = 9 drops nothing, where the unwrapped bound 8 * 36 =
    288 would ask F = 10 (a random search with accumulator.evaluate finds no row telling
    F = 9 from F = 10 or 23 there; see the commit).  None where c is in the blocks or the
    carry bits are unbounded.
    """
    if cfg.carry_bits is None or cfg.c_placement != "late" or cfg.algorithm != "fused":
        return None
    p_out = (cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t) + 1
    blocks_before = 1 if cfg.interleave == "pairs" else (cfg.k - cfg.nfma) // cfg.nfma
    e = None
    for _ in range(blocks_before):
        E = e_prod if e is None else max(e, e_prod)
        lim = E + 2 + cfg.carry_bits
        e = lim - 1 if lim - g_p <= p_out else lim
    return e


def block_terms(cfg: AccumulatorConfig) -> int:
    """Terms one fused sum aligns together: the products of a block plus the accumulator
    (fused; none for FDRDA, whose c is added after the dot product)."""
    n = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
    if cfg.algorithm == "fdrda":
        return n // 2 if cfg.interleave == "even_odd" else n
    first_has_acc = cfg.c_placement == "early"
    return n + (1 if first_has_acc or cfg.blocks > 1 or cfg.interleave == "pairs" else 0)


def alignment_exact(cfg: AccumulatorConfig, neab: int | None = None,
                    products_only: bool = False) -> bool:
    """Whether alignment to F fraction bits can drop no bit of any term (with neab given,
    for that neab; ``products_only``: FDRDA's dot product, where c is not aligned)."""
    b = _bounds(cfg)
    F = 23 + (cfg.neab if neab is None else neab)
    if products_only:
        # the dot product aligns at its largest product's exponent: e_a + e_b for
        # denormalised products (their significand's integer bits sit above it, dropped
        # nothing), one more for a normalised product of significand >= 2 (e_prod)
        return F >= max(b["e_prod"] - b["g_p"], b["fin"].t + b["fb"].t + 1)
    return F >= b["f_exact"]


def late_pairs_normalisation_exact(cfg: AccumulatorConfig) -> bool:
    """Whether blocks of one product with c late align every term exactly under either
    normalisation, so that it cannot show (no scale factors, no interleaving).

    Each block sums an earlier result A (0 in the first) and one product p of exponent
    fields E: it aligns at max(e_A, E) denormalised, at max(e_A, E') normalised, E' <= E + 1
    the binade.  Where e_A > E + 1 both align at e_A, bit for bit the same.  Otherwise the
    alignment exponent is at most E + 1 <= a.emax + b.emax + 1 either way: p's last bit E -
    a.t - b.t is kept from F >= a.t + b.t + 1, and A, a sum of products rounded to coarser
    powers of two and to the output (whose spacings are powers of two as well), is a
    multiple of the smallest product's last bit 2^(a.emin + b.emin - a.t - b.t), kept from
    F >= (a.emax - a.emin) + (b.emax - b.emin) + a.t + b.t + 1 (e2m3: 11, e2m1: 7, e3m2:
    17).  No bit dropped, no sticky bit and the same exact sums: the normalisation moves
    only the quantum and the carry limit (carry_needed bounds the latter).

    >>> late_pairs_normalisation_exact(AccumulatorConfig(
    ...     in_format="e2m3", k=8, nfma=1, neab=-10, c_placement="late"))
    True
    >>> late_pairs_normalisation_exact(AccumulatorConfig(
    ...     in_format="e3m2", k=8, nfma=1, neab=-10, c_placement="late"))
    False
    """
    if (cfg.algorithm != "fused" or cfg.c_placement != "late" or cfg.nfma != 1
            or cfg.interleave != "none" or cfg.scale_format is not None):
        return False
    fin, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    return cfg.frac_bits >= (fin.emax - fin.emin) + (fb.emax - fb.emin) + fin.t + fb.t + 1


def carry_needed(cfg: AccumulatorConfig) -> int:
    """Carry bits at and above which no block sum can wrap (fewer can, on some input).

    In units of 2^emax (the block's alignment exponent) a product is at most the product of
    the two factors' largest significands (below 4 when denormalised, 2 when normalised;
    at any exponent, not only at emax: e4m3's 1.875 exists below 2^8), the accumulator (c
    or an earlier block's result) below 2, and alignment may round each term up by one
    quantum 2^-F (rd), half of one (rne, rz_sticky) or not at all (rz); the fixed-point
    sum wraps at 2^(2 + carry_bits).
    """
    if cfg.algorithm == "gdfs":
        return _gdfs_carry_needed(cfg)
    b = _bounds(cfg)
    fin, fb, fc, fout = b["fin"], b["fb"], b["fc"], b["fout"]
    psig = Fraction(_top_sig(fin) * _top_sig(fb), 1 << (fin.t + fb.t))
    if cfg.product_normalisation == "normalised":
        # the largest significand a normalised product has, not the largest product halved:
        # e4m3's 9 x 14 / 64 = 1.96875 stays in [1, 2), while 15 x 15 / 64 halves to 1.76
        psig = _max_normalised_product_sig(_top_sig(fin), _top_sig(fb))
    if cfg.scale_format is not None:
        # a block-scaled product (FDA, [XWYY25] Sec. IV-C) is a product of four factors:
        # the scale factors' significands multiply it (ue8m0's are 1); normalised, it stays
        # below 2 by at least one unit of its last bit (_max_normalised_product_sig)
        fs = get_format(cfg.scale_format)
        ssig = Fraction(_top_sig(fs), 1 << fs.t) ** 2
        top = 2 - Fraction(1, 1 << (fin.p + fb.p + 2 * fs.p - 1))
        psig = min(psig * ssig, top) if cfg.product_normalisation == "normalised" \
            else psig * ssig
    n = block_terms(cfg)
    n_prod = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
    if cfg.algorithm == "fdrda":
        n_prod = n
    n_acc = n - n_prod
    acc = max(Fraction(fc.max_sig, 1 << fc.t), Fraction(fout.max_sig, 1 << fout.t))
    one = _single_product_acc(cfg)
    if one is not None:
        acc = one
    return _carry_bits_below(n_prod * psig + n_acc * acc + n * _round_up(cfg))


def _round_up(cfg: AccumulatorConfig) -> Fraction:
    """How far alignment may move a term's magnitude up, in units of 2^emax: less than one
    quantum 2^-F (rd: a negative term's two's-complement truncation), half of one at most
    (rne; rz_sticky: the truncation plus a sticky half quantum), never (rz: truncation).
    With rz a sum of products just below 4 each stays below the next power of two
    (binary64 inputs at K = 2: two (2 - 2^-52)^2 never reach 8, so one carry bit is as good
    as unbounded)."""
    up = {"rz": 0, "rz_sticky": Fraction(1, 2), "rne": Fraction(1, 2)}.get(
        cfg.align_rounding, Fraction(1))
    return up * Fraction(1, 1 << max(0, cfg.frac_bits))


def _carry_bits_below(bound: Fraction) -> int:
    """The fewest carry bits with which no sum up to ``bound`` (units of 2^emax) wraps: the
    fixed-point sum wraps at 2^(2 + carry_bits)."""
    cb = 0
    while bound >= 1 << (2 + cb):
        cb += 1
    return cb


def _carry_alternatives(cfg: AccumulatorConfig) -> tuple[Any, ...]:
    """Carry-bit values some input tells from cfg's: those at or above carry_needed are one
    unit (as unbounded), each below it a unit of its own."""
    need = carry_needed(cfg)

    def cls(v: int | None) -> int | None:
        return None if v is None or v >= need else v
    return tuple(v for v in CARRY_VALUES if cls(v) != cls(cfg.carry_bits))


def _gdfs_carry_needed(cfg: AccumulatorConfig) -> int:
    """carry_needed of GDFS ([XWYY25] Sec. IV-E; engine_int._gdfs): a group's exact sum
    times its scale factors is aligned at the scale factors' exponent sum, however large
    the sum is, so in units of 2^emax each group is at most nfma products of the largest
    values (e2m1: 6 x 6 = 36) times the scale significands' product (ue4m3: 1.875^2, at
    any exponent), c below 2, and each term may round up by one quantum 2^-F (or half of
    one).  Tight: 64 products 6 x 6 under scale factors 1.875 and c = 2 - 2^-20 sum to
    8102 (NVFP4, K = 64), which 10 carry bits wrap and 11 do not."""
    fa, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    fs = get_format(cfg.scale_format)
    prod = Fraction(fa.fmax) * Fraction(fb.fmax)
    ssig = Fraction(_top_sig(fs), 1 << fs.t) ** 2
    terms = cfg.k // cfg.nfma + 1
    return _carry_bits_below(cfg.k * prod * ssig + 2 + terms * _round_up(cfg))


def rounding_exact(cfg: AccumulatorConfig) -> bool:
    """Whether every fused block result is representable in the output (so the final
    rounding never rounds): few enough bits, no quantum below the output's subnormal one."""
    b = _bounds(cfg)
    fout = b["fout"]
    if cfg.algorithm != "fused":
        return False
    p_out = (cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t) + 1
    quantum = fout.emin - (p_out - 1)        # the output's quantum at its smallest exponent
    sticky = int(cfg.align_rounding == "rz_sticky")
    bits = cfg.frac_bits + sticky + 2 + _clog2(block_terms(cfg))
    low_ok = b["e_low"] - cfg.frac_bits - sticky >= quantum
    if alignment_exact(cfg):
        bits = min(bits, b["e_sum"] + 1 - b["grid"])
        low_ok = low_ok or b["grid"] >= quantum
    return (bits <= p_out and low_ok) or _block_sums_fit(cfg, b, p_out)


def _block_sums_fit(cfg: AccumulatorConfig, b: dict[str, Any], p_out: int) -> bool:
    """Whether every fused block result fits p_out bits on the output's grid, bounded by
    the block's alignment exponent E rather than by F alone (rounding_exact's count).

    A block holds n products (each at most pmax) and at most one other term X, c or an
    earlier result, whose exponent is at most E, so |X| < 2^(E + 1).  Every term lies on
    the grid 2^grid, and alignment keeps it a multiple of 2^q, q = E - F (- 1 with a
    sticky bit), so the sum is a multiple of 2^Q, Q = max(q, grid), at most
    B(E) = 2^(E + 1) + n pmax + (n + 1) 2^Q (each term rounded up by at most a quantum;
    a carry wrap only lowers it).  It fits p_out bits when B(E) < 2^(Q + p_out).  Where
    q <= grid, Q is fixed and B grows with E; where q >= grid, B(E) / 2^Q falls as E
    grows: the worst E is grid + F (+ 1), clipped to the exponents the blocks align at.
    e2m1 into binary32 at F = 12 with c late, 13 fraction bits kept: every block result
    (at most 2^11 + 4 x 36 on the grid 2^-2 at E = 10) has 14 bits, though F + 2 + log2 5
    counts 17.  The last block's result is the output, so it is never rounded.
    """
    if cfg.algorithm != "fused" or cfg.scale_format is not None:
        return False
    sticky = int(cfg.align_rounding == "rz_sticky")
    shift = cfg.frac_bits + sticky
    grid, fout = b["grid"], b["fout"]
    if max(b["e_low"] - shift, grid) < fout.emin - (p_out - 1):
        return False  # some block result may lie below the output's quantum
    n = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
    E = min(max(grid + shift, b["e_low"]), b["e_top"])
    Q = max(E - shift, grid)
    two = Fraction(2)
    bound = two ** (E + 1) + n * b["pmax"] * two ** grid + (n + 1) * two ** Q
    return bound < two ** (Q + p_out)


def _scaled_sums_normal(cfg: AccumulatorConfig) -> bool:
    """Whether every non-zero sum of a block-scaled unit's products is at least the
    output's smallest normal: such sums are multiples of the products' grid, the smallest
    product under the smallest scale factors (e4m3 under ue8m0: 2^-272, normal in
    binary64)."""
    fin, fb, fs = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                   get_format(cfg.scale_format))
    return fin.smin * fb.smin * fs.smin ** 2 >= get_format(cfg.out_format).fmin


def _scaled_sums_in_range(cfg: AccumulatorConfig) -> bool:
    """Whether every non-zero sum of a block-scaled unit's products lies in the output's
    normal range: at least the smallest normal (_scaled_sums_normal) and below the
    largest value (K largest products under the largest scale factors)."""
    fa, fb, fs = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                  get_format(cfg.scale_format))
    return _scaled_sums_normal(cfg) and (
        cfg.k * fa.fmax * fb.fmax * fs.fmax ** 2 < get_format(cfg.out_format).fmax)


def _renormalised(cfg: AccumulatorConfig) -> AccumulatorConfig:
    """cfg with the other product normalisation."""
    other, = (v for v in NORMALISATIONS if v != cfg.product_normalisation)
    return cfg.replace(product_normalisation=other)


def _scaled_normalisation_hidden(cfg: AccumulatorConfig) -> bool:
    """Whether the normalisation of a unit with one scale block and c late never shows,
    though subnormal earlier results make F and the alignment rounding show (the
    docstring of _scaled_alignment_exact): the normalisation moves a block's alignment
    exponent only where a product sets it (its value a binade above its exponent field).
    A subnormal earlier result that sets it is aligned at the output's emin under both,
    and every term then aligns alike (a value's alignment to a quantum does not depend on
    how the product was written).  Where a product or a normal result sets it, every
    earlier result is the exact sum of products under the same scale factors, or that
    sum rounded onto a coarser grid (the output's subnormal grid, or its largest value),
    and the unscaled bound moved by the scale factors holds as in _scaled_alignment_exact
    (edges), under both normalisations; an infinity no later sum changes.  MX at K = 32
    with c late, into any output: e2m1 from F = 12 (blocks of 16) or 13 (blocks of one),
    e3m2 from 22 or 23; and, whatever the blocks, from _scaled_normalisation_bound (MX
    e2m1 7, e3m2 17).  The carry bits must hold both."""
    if cfg.algorithm != "fused" or cfg.c_placement != "late" or cfg.scales != 1:
        return False
    alt = _renormalised(cfg)
    if cfg.carry_bits is not None and cfg.carry_bits < max(carry_needed(cfg), carry_needed(alt)):
        return False
    return cfg.frac_bits >= _scaled_normalisation_bound(cfg) or (
        _scaled_alignment_exact(cfg, edges=True) and _scaled_alignment_exact(alt, edges=True))


def _scaled_normalisation_bound(cfg: AccumulatorConfig) -> int:
    """The F from which the normalisation of a unit with one scale block and c late never
    shows, however large the earlier results.  It moves a block's alignment exponent only
    where a product sets it, above the earlier result: there every term (the products,
    and the earlier result, their sum or that sum rounded onto a coarser power-of-two
    grid) is a multiple of the smallest product's last bit 2^(s + low) and lies below
    2^(s + v + 1), v the largest product's value exponent (the largest exponent field
    is at most v, which covers the denormalised products of subnormal inputs), so with F
    >= v - low both alignments drop nothing and the block returns the same exact sum.
    Where an earlier result sets the exponent, it sets it alike under both.  NVFP4 (e2m1
    under ue4m3: 6 x 6 x (15/8)^2 = 126.56, value 2^6, last bit 2^-8): 14, where
    product-normalisation-scaled-one-block reads 12 and 13; MX e4m3 x e2m1 (448 x 6
    below 2^12, last bit 2^-10): 21; MX e2m1: 7."""
    fa, fb, fs = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                  get_format(cfg.scale_format))
    top = _flog2_int(fa.max_sig * fb.max_sig * fs.max_sig ** 2)
    return top + (fa.emax - fa.emin) + (fb.emax - fb.emin)


def _scaled_edges_aligned(cfg: AccumulatorConfig) -> bool:
    """Whether earlier block results out of the output's normal range keep a later block
    of a unit with one scale block exact once F is past _scaled_alignment_exact's bound.
    A subnormal result is aligned at the output's emin, and every term is a multiple of
    the products' smallest grid g (the smallest products under the smallest scale
    factors) or of the output's subnormal grid above it: with F >= emin - log2 g the
    quantum 2^(emin - F) is at most g, so nothing drops (NVFP4 into binary16: g = 2^-20,
    F >= 6).  An overflowing result is an infinity, which no later sum changes, or the
    largest finite value, a rounded result below the exact sum, a multiple of its ulp,
    which the bound counts already (rounds).  Under ue8m0 g is 2^-256 and below: no F
    reaches it (the docstring's e2m1 into binary32)."""
    if _scaled_sums_normal(cfg):
        return True
    fin, fb, fs = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                   get_format(cfg.scale_format))
    grid = fin.smin * fb.smin * fs.smin ** 2
    return Fraction(2) ** (get_format(cfg.out_format).emin - cfg.frac_bits) <= grid


def _scaled_alignment_exact(cfg: AccumulatorConfig, neab: int | None = None,
                            edges: bool = False) -> bool:
    """alignment_exact for block-scaled FDA units with one scale block and c late, whose
    blocks see products only, all under the same scale factors: every product is the
    unscaled one times a common M 2^s (M the scale significands' product, 1 for ue8m0).
    Where no block result lies below the output's smallest normal or overflows, an
    earlier block's result is the exact sum of its products (_scaled_rounding_exact,
    _scaled_sums_fit) or that sum rounded, a multiple of the grid at most one binade
    higher, and the unscaled unit's bound on F holds with all exponents moved by s (taken
    without the output's emax, which s moves past), plus, under M, the 2 s.t bits M adds
    below each product and the binades it adds above an earlier block's result (ue4m3:
    M < 1.875^2 < 4), one more where that result rounds.
    So it does with a single block (nfma = k), which meets no earlier result, and with
    earlier results out of the normal range where _scaled_edges_aligned says so (edges:
    every block whose alignment exponent a product or a normal result sets, whatever
    the range: _scaled_normalisation_hidden).  Elsewhere
    it does not: a later block aligns a subnormal earlier result at the output's emin,
    above its value, and drops the products' bits below 2^(emin - F) at any depth (e2m1
    under 2^-150 into binary32: 2^-149 then -2^-151 gives 2^-149 at F = 23 and, under rz,
    0 at F = 25)."""
    if cfg.algorithm != "fused" or cfg.c_placement != "late" or cfg.scales != 1:
        return False
    at = cfg if neab is None else cfg.replace(neab=neab)
    if cfg.blocks > 1 and not (edges or _scaled_sums_in_range(cfg)
                               or _scaled_edges_aligned(at)):
        return False
    # a block result that rounds (more bits than the output holds) is still a multiple
    # of the products' grid, its last bit at or above the grid, and lies at most one
    # binade above its exact sum's bound (rounded up onto a power of two)
    rounds = int(cfg.blocks > 1 and not (_scaled_rounding_exact(at) or _scaled_sums_fit(cfg)))
    plain = cfg.replace(scale_format=None, scale_block=None)
    b = _bounds(plain, clamp=False)
    fs = get_format(cfg.scale_format)
    if not fs.t:
        return at.frac_bits >= b["f_exact"] + rounds
    # M adds 2 s.t bits below every product.  Above, it moves the largest normalised
    # product's exponent (plain: a.emax + b.emax + 1) and an earlier result's bound
    # (k - last) pmax 2^grid by the binades M_max adds to them (e2m1 at K = 16, nfma = 1:
    # 15 x 144 x 225 / 64 < 2^11 against 15 x 144 < 2^12, one), but not a denormalised
    # product's exponent field
    m_max = fs.max_sig ** 2
    above = 0
    if cfg.product_normalisation == "normalised":
        sig = b["fin"].max_sig * b["fb"].max_sig
        above = _flog2_int(sig * m_max) - b["fin"].t - b["fb"].t - 2 * fs.t - 1
    last = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
    if cfg.k > last:
        acc = (cfg.k - last) * b["pmax"]
        above = max(above, _flog2_int(acc * m_max) - 2 * fs.t - _flog2_int(acc) + rounds)
    return at.frac_bits >= b["f_exact"] + 2 * fs.t + above


def _scaled_sums_fit(cfg: AccumulatorConfig) -> bool:
    """Whether every sum of up to K products under one pair of scale factors is exact in
    the output: the products are M 2^s times the unscaled ones (M the scale significands'
    product, an integer over 2^(2 s.t)), so such a sum is an integer multiple of M 2^(s +
    g) (g the unscaled product grid), at most K pmax / 2^g times it in magnitude, and so
    has at most bit_length(K (pmax / 2^g) max_sig(s)^2) significant bits, whatever the
    scale factors; with those bits in the output's precision and every such sum in its
    normal range (_scaled_sums_normal, and below its largest value), a block that drops
    no bit returns its exact sum.  NVFP4 (e2m1 under ue4m3) at K = 16: 16 x 144 x 225
    < 2^19, so binary32 holds every block result, whatever F beyond the alignment bound,
    though _scaled_rounding_exact counts F + 7 bits."""
    if cfg.scales != 1:
        return False
    fa, fb, fs, fout = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                        get_format(cfg.scale_format), get_format(cfg.out_format))
    g_p = (fa.emin - fa.t) + (fb.emin - fb.t)
    pmax = fa.max_sig * fb.max_sig << ((fa.emax - fa.t) + (fb.emax - fb.t) - g_p)
    p_out = (cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t) + 1
    return (cfg.k * pmax * fs.max_sig ** 2).bit_length() <= p_out and _scaled_sums_in_range(cfg)


def _scaled_blocks_exact(cfg: AccumulatorConfig) -> bool:
    """blocks_exact for block-scaled FDA units: alignment and rounding exact
    (_scaled_alignment_exact, _scaled_rounding_exact), no sum wraps, and every non-zero
    block result, however the scale factors move it, stays in the output's normal range
    (at least the smallest product, at most K largest ones): every block then returns
    its exact sum, so the blocks' boundaries do not show (e2m1 under ue8m0 scale factors
    into binary64: 2^-256 to 2^262)."""
    if not (_scaled_alignment_exact(cfg) and (_scaled_rounding_exact(cfg)
                                              or _scaled_sums_fit(cfg))):
        return False
    if cfg.carry_bits is not None and cfg.carry_bits < carry_needed(cfg):
        return False
    return _scaled_sums_in_range(cfg)


def _scaled_output_observable(cfg: AccumulatorConfig, stage: str = "output") -> bool:
    """Whether a block-scaled FDA unit can return a result in the output's subnormal range
    (stage 'output'), or carry one from block to block ('sums').
    A sum of products is a multiple of their smallest quantum (the grid, scale factors
    at their smallest included), so where that grid lies at or above the output's
    smallest normal no sum of products is subnormal, nor is c + P for a product sum P
    that is not zero (|c + P| >= 2^grid - |c|).  Only c alone can then be one: never when
    the inputs are flushed (c with them), when c's format has no value below the
    output's normal range, or when c joins the first of several blocks whose sums are
    flushed (e4m3 under ue8m0 scale factors into binary64: products at 2^-272 at least).
    Between blocks c can be one only where it joins the first block."""
    if cfg.algorithm != "fused":
        return True
    fc, fout = get_format(cfg.c_format), get_format(cfg.out_format)
    if not _scaled_sums_normal(cfg):
        return True
    c_hidden = ("inputs" in cfg.flush or fc.smin >= fout.fmin
                or (cfg.c_placement == "early" and cfg.blocks > 1 and "sums" in cfg.flush))
    if stage == "sums":
        c_hidden = c_hidden or cfg.c_placement == "late"
    return not c_hidden


def _scaled_rounding_exact(cfg: AccumulatorConfig) -> bool:
    """rounding_exact for block-scaled FDA units ([XWYY25] Sec. IV-C), where a product is
    a x b x S_a x S_b: a block aligned at E keeps F bits below it (and a sticky half
    quantum), so its sum is a multiple of q = 2^(E - F - sticky) below n 2^(E + h): n
    terms, each a product of significands below 2^h (h = 2 for two factors, 4 with the
    significands of ue4m3 scale factors; 1 normalised) or an accumulator below 2^(E + 1).
    It has at most F + sticky + h + clog2 n bits, and q lies on the output's grid when E
    does not go below the smallest exponent of any non-zero term: a product's lies on its
    grid, whatever the scale factors, c's at its emin, an earlier block's at the output's.
    e4m3 under ue8m0 scale factors into binary64: 23 + 2 + 6 bits at most, a quantum far
    above 2^-1074, so no block result ever rounds."""
    if cfg.algorithm != "fused":
        return False
    fin, fb, fs = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                   get_format(cfg.scale_format))
    fc, fout = get_format(cfg.c_format), get_format(cfg.out_format)
    p_out = (cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t) + 1
    quantum = fout.emin - (p_out - 1)
    sticky = int(cfg.align_rounding == "rz_sticky")
    h = 1 if cfg.product_normalisation == "normalised" else 2 + 2 * (fs.t > 0)
    grid = (fin.emin - fin.t) + (fb.emin - fb.t) + 2 * (fs.emin - fs.t)
    c_in_blocks = cfg.c_placement == "early"
    e_low = min(grid, fc.emin if c_in_blocks else grid, fout.emin)
    bits = cfg.frac_bits + sticky + h + _clog2(block_terms(cfg))
    return bits <= p_out and e_low - cfg.frac_bits - sticky >= quantum


def rounding_flushed(cfg: AccumulatorConfig) -> bool:
    """Whether every fused block result that the final rounding rounds is flushed: the
    output stage flushes subnormals, and a block sum of few bits needs rounding only far
    below the output's smallest normal.

    A block keeps F bits below its alignment exponent E (and a sticky half quantum): its
    sum is a multiple of q = 2^(E - F - sticky) below 2^(E + 2 + clog2 n) in magnitude (n
    terms, each below 4 * 2^E), so it has at most b = F + sticky + 2 + clog2 n bits and
    rounds only when q lies below the output's quantum 2^(out.emin - out_t).  Then |x| <
    2^(out.emin - out_t + b - 1), and with b <= out_t the rounded value stays below
    2^(out.emin - 1): the flush turns it into a zero of x's sign whatever the rounding
    mode (binary64 into binary64 at F far below 52).  A late c is added with
    late_rounding, not the final rounding."""
    if cfg.algorithm != "fused" or "output" not in cfg.flush:
        return False
    fout = get_format(cfg.out_format)
    t_out = cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t
    sticky = int(cfg.align_rounding == "rz_sticky")
    return cfg.frac_bits + sticky + 2 + _clog2(block_terms(cfg)) <= t_out


def blocks_exact(cfg: AccumulatorConfig) -> bool:
    """Whether every fused block is an exact addition (nothing dropped, rounded, wrapped,
    flushed between blocks or overflowing): the block structure is then unobservable."""
    b = _bounds(cfg)
    fout = b["fout"]
    if cfg.algorithm != "fused" or not (alignment_exact(cfg) and rounding_exact(cfg)):
        return False
    if cfg.carry_bits is not None and cfg.carry_bits < carry_needed(cfg):
        return False
    if "sums" in cfg.flush and b["grid"] < fout.emin:
        return False
    return b["e_sum"] < fout.emax


def _product_grid(cfg: AccumulatorConfig) -> int:
    """Exponent g of the grid 2^g every non-zero product lies on: a's smallest subnormal
    times b's, or, where products below binary32's smallest normal are flushed,
    2^(-127 - t_a - t_b) (a product P * 2^L with P < 2^(t_a + t_b + 2) reaches 2^-126 only
    if L >= -127 - t_a - t_b): binary64 units that flush products never see one below
    2^-233, so their blocks cannot cancel down to a binary64 subnormal."""
    fa, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    g = fa.emin - fa.t + fb.emin - fb.t
    if "products" in cfg.flush and cfg.scale_format is None:
        g = max(g, -127 - fa.t - fb.t)
    return g


@functools.lru_cache(maxsize=256)
def _products(fa_name: str, fb_name: str) -> tuple[Fraction, ...] | None:
    """The distinct positive finite products of two formats of at most 8 bits (None for
    wider formats: too many to list)."""
    fa, fb = get_format(fa_name), get_format(fb_name)
    if fa.bits > 8 or fb.bits > 8:
        return None

    def finite(f):
        # magnitudes as integer multiples of the format's smallest quantum 2^(emin - t)
        out = set()
        for bits in f.all_patterns():
            cls, _, sig, exp = f.decode(bits)
            if cls == "finite":
                out.add(sig << (exp - f.emin))
        return out
    unit = Fraction(2) ** (fa.emin - fa.t + fb.emin - fb.t)
    return tuple(n * unit for n in sorted({x * y for x in finite(fa) for y in finite(fb)}))


def _sums_representable(cfg: AccumulatorConfig, m: int) -> bool:
    """Whether every sum of at most m products (a's and b's formats, subnormal inputs
    included) is a finite value of the output at its kept precision (out_t + 1 bits), at
    least the output's smallest normal when non-zero.

    A non-zero sum S whose lowest set bit is 2^l holds a product that is not a multiple of
    2^(l + 1), at most M_l (the largest such product), and at most m - 1 others of at most
    pmax: |S| <= (m - 1) pmax + M_l.  S fits p bits when |S| < 2^(l + p).  Checked for every
    level l the products reach (formats of at most 8 bits, whose products are listed)."""
    prods = _products(cfg.in_format, cfg.b_fmt)
    if prods is None or m < 1 or cfg.scale_format is not None:
        return False
    fout = get_format(cfg.out_format)
    p_out = (cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t) + 1
    g = _product_grid(cfg)
    if g < fout.emin:
        return False
    pmax = prods[-1]
    if m * pmax > fout.fmax:
        return False
    levels: dict[int, Fraction] = {}
    for x in prods:
        if "products" in cfg.flush and x < _B32.fmin:
            continue
        low = 0                       # exponent of x's lowest set bit
        num, den = x.numerator, x.denominator
        while num % 2 == 0:
            num //= 2
            low += 1
        while den % 2 == 0:
            den //= 2
            low -= 1
        levels[low] = max(levels.get(low, Fraction(0)), x)
    return all((m - 1) * pmax + big < Fraction(2) ** (low + p_out)
               for low, big in levels.items())


def late_chain_exact(cfg: AccumulatorConfig) -> bool:
    """Whether a fused unit with c late returns the exactly summed products rounded once
    (then late c), whatever its block structure: alignment drops nothing (F covers every
    term the blocks can see, or, for listed products, the span from the largest product or
    accumulator exponent down to the product grid), no block sum
    wraps, and every block before the last ends on a sum of at most k - nfma products
    (k / 2 for interleaved pairs) that the output holds exactly (:func:`_sums_representable`):
    every such block result is the exact partial sum, so the last block rounds the exact
    total.  Two block structures that both satisfy it give one unit (nfma and interleave not
    observable between them).  An exhaustive search over every tuple of e2m1 products
    (K = 4, into bfloat16, rz and rne, F = 13 and 23, accumulator.evaluate) finds no input
    telling nfma 2 from 4 (which this rule claims), and finds those telling 1 from 2
    (which it does not: three products 36 + 36 + 2.25 need 9 bits)."""
    if (cfg.algorithm != "fused" or cfg.c_placement != "late" or cfg.scale_format is not None
            or cfg.interleave == "even_odd"):
        return False
    if cfg.carry_bits is not None and cfg.carry_bits < carry_needed(cfg):
        return False
    m = cfg.k // 2 if cfg.interleave == "pairs" else cfg.k - cfg.nfma
    if alignment_exact(cfg):
        return m == 0 or _sums_representable(cfg, m)
    # a narrower F that still aligns every block exactly: every term is a multiple of the
    # product grid 2^g, a product's alignment exponent is at most e_prod, an accumulator (an
    # exact sum of at most m products) below 2^(flog2(m pmax) + 1)
    prods = _products(cfg.in_format, cfg.b_fmt)
    if prods is None:
        return False
    g, top = _product_grid(cfg), _bounds(cfg)["e_prod"]
    if m:
        top = max(top, _flog2_int(int(m * prods[-1] * 2 ** -g)) + g)
    return top - g <= cfg.frac_bits and (m == 0 or _sums_representable(cfg, m))


def _single_product_acc(cfg: AccumulatorConfig) -> Fraction | None:
    """Bound on the accumulator's significand where it is one product (else None).

    With c late (fused) the first block starts from zero, so where the blocks before the
    last hold a single product (k - nfma = 1: k = 2, nfma = 1) the last block's
    accumulator is that product rounded to the output.  Where the output holds every
    product exactly (out_t >= t_a + t_b + 1: at most t_a + t_b + 2 significant bits) its
    significand, normalised to [1, 2), is at most the largest of i * j / 2^floor(log2(i * j))
    over the integer significands i, j of the two inputs (subnormals included), which
    for e2m1 is 1.5 (products 0.25 .. 36 have significands 1, 1.5 and 1.125), not the
    output's 2 - 2^-t: 2.25 + 1.5 < 4, so no carry bit is ever used.  An exhaustive
    search confirms it for e2m1 at K = 2, nfma = 1, c late (every a, b of 16^4 rows;
    binary16, bfloat16, binary32 outputs with out_frac_bits null, 3 and 7; neab 0, 2,
    -10; rz/rne/rd/ru final and rz/rd/rne/rz_sticky alignment rounding; accumulator.evaluate:
    carry_bits 0 and null give the same outputs on every row).  Formats with more than 5
    fraction bits (the search over significand pairs grows as 4^t) keep the general bound.
    """
    last = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
    if (cfg.algorithm != "fused" or cfg.c_placement != "late" or cfg.k - last != 1
            or cfg.scale_format is not None):
        return None
    fa, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    out_t = cfg.out_frac_bits if cfg.out_frac_bits is not None else get_format(cfg.out_format).t
    if max(fa.t, fb.t) > 5 or out_t < fa.t + fb.t + 1:
        return None
    return _max_normalised_product_sig(_top_sig(fa), _top_sig(fb))


def _top_sig(fmt) -> int:
    """The largest integer significand at any exponent (2^p - 1: e4m3 holds 1.875 below its
    top binade, where 1.875 x 2^8 would be NaN; Format.max_sig is the one at emax)."""
    return (1 << fmt.p) - 1


@functools.lru_cache(maxsize=64)
def _max_normalised_product_sig(ma: int, mb: int) -> Fraction:
    """max over 1 <= i <= ma, 1 <= j <= mb of i * j scaled into [1, 2); where ma has more
    than 16 bits, the bound 2 - 2^-(bits of ma + bits of mb - 1), which none exceeds (i * j
    has at most that many bits after its leading one).

    Per i and binade [2^m, 2^(m+1)) the largest i * j in it has j = (2^(m+1) - 1) // i, so
    the search takes ma * log2(ma mb) steps, not ma * mb.

    >>> _max_normalised_product_sig(15, 15)   # e4m3: 9 x 14 = 126
    Fraction(63, 32)
    >>> _max_normalised_product_sig(3, 3)     # e2m1: 1 x 3 = 3, 1.5 once normalised
    Fraction(3, 2)
    """
    if ma.bit_length() > 16:
        return 2 - Fraction(1, 1 << (ma.bit_length() + mb.bit_length() - 1))
    best = Fraction(1)
    for i in range(1, ma + 1):
        for m in range(_flog2_int(i), _flog2_int(i * mb) + 1):
            j = min(mb, ((1 << (m + 1)) - 1) // i)
            if i * j >= 1 << m:
                best = max(best, Fraction(i * j, 1 << m))
    return best


def _valid(cfg: AccumulatorConfig, **change: Any) -> AccumulatorConfig | None:
    try:
        alt = cfg.replace(**change)
    except ConfigError:
        return None
    return alt


#: the most rows :func:`_two_products_late_roundings` evaluates (pairs of product classes)
_PAIR_ROWS_MAX = 100_000


@functools.lru_cache(maxsize=64)
def _product_classes(fa_name: str, fb_name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """One (a, b) pair of bit patterns per class of products a unit cannot tell apart: the
    same sign, significand product, sum of exponent fields and subnormal factors (what
    every engine reads of a product: its value, its alignment exponent, and what a flush
    of inputs removes), or the same zero or special value.  None for formats of more than
    8 bits."""
    fa, fb = get_format(fa_name), get_format(fb_name)
    if fa.bits > 8 or fb.bits > 8:
        return None
    reps: dict[tuple, tuple[int, int]] = {}
    for x in fa.all_patterns():
        for y in fb.all_patterns():
            reps.setdefault(_product_class_key(fa, fb, x, y), (x, y))
    pairs = np.array(list(reps.values()), dtype=np.uint64)
    return pairs[:, 0], pairs[:, 1]


def _product_class_key(fa: Format, fb: Format, x: int, y: int) -> tuple:
    """The class of the product of patterns x (a's format) and y (b's): see
    :func:`_product_classes`."""
    ca, sa, ga, ea = fa.decode(x)
    cb, sb, gb, eb = fb.decode(y)
    suba, subb = ca == "finite" and ga < 1 << fa.t, cb == "finite" and gb < 1 << fb.t
    if ca in ("nan", "inf") or cb in ("nan", "inf"):
        return (ca, cb, sa, sb)
    if ga * gb == 0:
        return ("zero", sa ^ sb, suba, subb)
    return (sa ^ sb, ga * gb, ea + eb, suba, subb)


@functools.lru_cache(maxsize=1024)
def _two_products_late_roundings(cfg: AccumulatorConfig) -> dict[str, int] | None:
    """Exhaustively, for a fused unit of K = 2 that adds c late (no scale factors, a and
    b of at most 8 bits, few enough classes of products): each final rounding the
    configuration accepts -> a label, equal where the two roundings give the same output
    on every input.  None where this does not apply.

    With c late the output is d + c, rounded by late_rounding, where d, the result of the
    blocks, depends only on the two products (one row per pair of
    :func:`_product_classes`).  c = -0 (+0 under a late rd) keeps d whole, the sign of a
    zero too, so two roundings give the same output for every c exactly when they give
    the same output on these rows.  e2m1 into bfloat16: every sum of two products fits 8
    bits, so only the sign of x - x under rd shows; bounds of F alone count 16 bits."""
    if not (cfg.k == 2 and cfg.algorithm == "fused" and cfg.c_placement == "late"
            and cfg.scale_format is None):
        return None
    reps = _product_classes(cfg.in_format, cfg.b_fmt)
    if reps is None or len(reps[0]) ** 2 > _PAIR_ROWS_MAX:
        return None
    i, j = np.divmod(np.arange(len(reps[0]) ** 2), len(reps[0]))
    a = np.stack([reps[0][i], reps[0][j]], axis=1)
    b = np.stack([reps[1][i], reps[1][j]], axis=1)
    fc = get_format(cfg.c_format)
    c = np.full(len(a), fc.zero_bits(int(cfg.late_rounding != "rd")), dtype=np.uint64)
    labels: dict[str, int] = {}
    outs: list[np.ndarray] = []
    for v in ROUNDING_MODES:
        alt = _valid(cfg, final_rounding=v)
        if alt is None:
            continue
        d = evaluate(alt, a, b, c)
        same = [n for n, o in enumerate(outs) if np.array_equal(o, d)]
        if not same:
            outs.append(d)
        labels[v] = same[0] if same else len(outs) - 1
    return labels


def _zero_sign_shows(cfg: AccumulatorConfig) -> bool:
    """Whether a block's zero shows how it came about (IEEE 754 Sec. 6.3): an exact zero
    sum is -0 under round-down, and a non-zero sum rounded or flushed to zero keeps its
    sign, so a tiny negative term tells itself from none; a unit whose zeros are always +0
    (zero_sign 'positive') shows neither."""
    return getattr(cfg, "zero_sign", "ieee") != "positive"


@functools.lru_cache(maxsize=65536)
def alternatives(cfg: AccumulatorConfig, feature: str) -> tuple[Any, ...]:
    """Values of ``feature`` that give a configuration some input tells apart from ``cfg``
    (the other fields unchanged); empty when the feature is not observable on ``cfg``.

    Values are written as probes write them: strings, integers, None (unbounded carry
    bits), 'keep'/'flush' for the subnormal stages.
    """
    alg = cfg.algorithm
    if cfg.scale_format is not None:
        return _scaled_alternatives(cfg, feature)
    if feature == "neab":
        if alg not in ("fused", "fdrda"):
            return ()
        # F values that give one unit: any two with exact alignment; correctly rounded
        # two-term blocks (with exact alignment one more such F); two products rounded to
        # nearest at K = 2 with c late (likewise)
        exact = alg == "fused" and alignment_exact(cfg)
        cr = _correctly_rounded_pairs(cfg)
        tpn = _two_products_round_nearest(cfg)
        out = []
        for v in NEAB_VALUES:
            if v == cfg.neab:
                continue
            ve = alg == "fused" and alignment_exact(cfg, v)
            if ((exact and ve) or (cr and (ve or _correctly_rounded_pairs(cfg, v)))
                    or (tpn and (ve or _two_products_round_nearest(cfg.replace(neab=v))))):
                continue
            out.append(v)
        return tuple(out)
    if feature == "nfma":
        if alg == "sfma" or cfg.interleave == "pairs":
            return ()  # nfma is 1, or k/2 (the two interleaved groups)
        exact = blocks_exact(cfg)
        late = late_chain_exact(cfg)
        if _two_products_round_nearest(cfg):
            return tuple(d for d in (1, 2) if d != cfg.nfma
                         and not _two_products_round_nearest(cfg.replace(nfma=d))
                         and not (late and late_chain_exact(cfg.replace(nfma=d))))
        out = []
        for d in range(1, cfg.k + 1):
            if cfg.k % d or d == cfg.nfma:
                continue
            if (alg == "gps" and d & (d - 1)) or (cfg.interleave == "even_odd" and d % 2):
                continue  # not a valid configuration (config.py)
            if exact or late:
                alt = _valid(cfg, nfma=d)
                if alt is None or (exact and blocks_exact(alt)) or (
                        late and late_chain_exact(alt)):
                    continue
            out.append(d)
        return tuple(out)
    if feature == "interleave":
        out = []
        for v in INTERLEAVES:
            alt = None if v == cfg.interleave else _valid(cfg, interleave=v)
            if alt is None or (blocks_exact(cfg) and blocks_exact(alt)) or (
                    late_chain_exact(cfg) and late_chain_exact(alt)):
                continue
            if {cfg.interleave, v} == {"none", "pairs"} and alt.block_order == cfg.block_order:
                continue  # k = 4: the two interleaved groups are the two blocks
            out.append(v)
        return tuple(out)
    if feature == "align_rounding":
        if alg not in ("fused", "fdrda") or alignment_exact(
                cfg, products_only=alg == "fdrda"):
            return ()
        if _two_products_round_nearest(cfg):
            return tuple(v for v in ALIGN_ROUNDINGS if v != cfg.align_rounding and not
                         _two_products_round_nearest(cfg.replace(align_rounding=v)))
        cr = _correctly_rounded_pairs(cfg)
        same = (_gfdrda_same_alignment(cfg) | _bf16_pairs_ru_same_alignment(cfg)
                | _nearest_pairs_same_alignment(cfg) | _ru_pairs_same_alignment(cfg))
        return tuple(v for v in ALIGN_ROUNDINGS if v != cfg.align_rounding
                     and not (cr and _correctly_rounded_pairs(cfg, align=v))
                     and not (same and v in same))
    if feature == "product_normalisation":
        if alg not in ("fused", "fdrda"):
            return ()
        alt = _renormalised(cfg)
        # no term ever loses a bit under either normalisation: only the carry limit moves
        exact = alg == "fused" and ((alignment_exact(cfg) and alignment_exact(alt))
                                    or late_pairs_normalisation_exact(cfg))
        if exact and (cfg.carry_bits is None or cfg.carry_bits >= max(carry_needed(cfg),
                                                                      carry_needed(alt))):
            return ()
        if _correctly_rounded_pairs(cfg) and _correctly_rounded_pairs(alt):
            return ()  # correctly rounded blocks do not depend on the alignment exponent
        if _two_products_round_nearest(cfg) and _two_products_round_nearest(alt):
            return ()
        return tuple(v for v in NORMALISATIONS if v != cfg.product_normalisation)
    if feature == "carry_bits":
        if alg not in ("fused", "fdrda"):
            return ()
        return _carry_alternatives(cfg)
    if feature == "c_placement":
        if alg != "fused":
            return ()
        return tuple(v for v in PLACEMENTS if v != cfg.c_placement)
    if feature == "final_rounding":
        if alg == "gps":
            return ()  # CDNA2 GPS rounds every operation to nearest even ([XWYY25] Alg. 3)
        if rounding_exact(cfg) or rounding_flushed(cfg):
            if not _zero_sign_shows(cfg):
                return ()
            rd = cfg.final_rounding == "rd"
            return tuple(v for v in ROUNDING_MODES if (v == "rd") != rd)
        seen = _two_products_late_roundings(cfg)
        if seen is not None:
            return tuple(v for v in seen if seen[v] != seen[cfg.final_rounding])
        return tuple(v for v in ROUNDING_MODES if v != cfg.final_rounding)
    if feature in _FLUSH_OF:
        stage = _FLUSH_OF[feature]
        now = "flush" if stage in cfg.flush else "keep"
        if alg == "gps" or (alg == "sfma" and stage != "output"):
            return ()  # GPS flushes every stage; IEEE FMAs only may flush their output
        if not _stage_observable(cfg, stage):
            return ()
        return ("keep" if now == "flush" else "flush",)
    if feature == "nan":
        # 'propagate' is a style of IEEE FMA chains only (config.py): no alternative elsewhere
        return tuple(v for v in NAN_STYLES if v != cfg.nan and _valid(cfg, nan=v))
    if feature == "algorithm":
        return tuple(v for v in ALGORITHMS if v != alg and _valid(cfg, algorithm=v))
    raise KeyError(f"no observability rule for feature {feature!r}")


def _scaled_alternatives(cfg: AccumulatorConfig, feature: str) -> tuple[Any, ...]:
    """Block scaling ([XWYY25] Sec. IV-C/E): scale factors move every product by a power of
    two, which the bounds above do not follow, so every other value of the feature that
    gives a valid configuration counts, save where a rule below proves it unseen:

    * the normalisation of GDFS, whose groups align on their scale factors' exponents
      (engine_int._gdfs);
    * carry bits at or above carry_needed, which counts the scale factors' significands;
    * the flush of sums where no block takes one in, and the flush of sums and outputs
      where no result reaches the output's subnormal range (_scaled_output_observable);
    * the flush of products as _stage_observable has it (its arguments hold for any
      product below 2^-126, and it counts the scale factors in the smallest product);
    * the final rounding of FDA blocks whose results are always outputs
      (_scaled_rounding_exact);
    * F, the alignment rounding and the normalisation of FDA blocks that see one scale
      block's products only and drop no bit (_scaled_alignment_exact), the normalisation
      there also where subnormal earlier results drop bits at the output's emin
      (_scaled_normalisation_hidden, _scaled_normalisation_bound), and the block size
      where every block returns its exact sum (_scaled_blocks_exact);
    * F, the alignment rounding and the normalisation of two-term blocks rounded to
      nearest or with a sticky bit under power-of-two scale factors, with c early
      (_nearest_pairs_bounds, _sticky_pairs_exact), and the alignment roundings those
      bounds give one unit below them (_nearest_pairs_same_alignment,
      _ru_pairs_same_alignment).

    tests/models/test_observable.py checks these claims on rows with any scale factors."""
    if feature == "algorithm":
        return tuple(v for v in ALGORITHMS if v != cfg.algorithm
                     and _valid(cfg, algorithm=v))
    if feature == "product_normalisation" and (cfg.algorithm == "gdfs"
                                                or _scaled_normalisation_hidden(cfg)):
        return ()
    if feature in ("neab", "align_rounding", "product_normalisation") and \
            _scaled_alignment_exact(cfg):
        if feature == "align_rounding":
            return ()
        if feature == "product_normalisation":
            # both exact (and the carry bits enough) returned () above, with the edges
            return (_renormalised(cfg).product_normalisation,)
        return tuple(v for v in NEAB_VALUES if v != cfg.neab and _valid(cfg, neab=v)
                     and not _scaled_alignment_exact(cfg, v))
    if feature == "align_rounding":
        # two-term blocks under power-of-two scale factors: the unscaled rules that give
        # two alignment roundings one unit below the correct-rounding bound, on the same
        # bounds (_nearest_pairs_bounds)
        same = _nearest_pairs_same_alignment(cfg) | _ru_pairs_same_alignment(cfg)
        cr = _correctly_rounded_pairs(cfg)
        if same or cr:
            return tuple(v for v in ALIGN_ROUNDINGS if v != cfg.align_rounding
                         and _valid(cfg, align_rounding=v) and v not in same
                         and not (cr and _correctly_rounded_pairs(cfg, align=v)))
    if feature in ("neab", "product_normalisation") and _correctly_rounded_pairs(cfg):
        # two-term blocks rounded correctly under power-of-two scale factors
        # (_nearest_pairs_bounds, _sticky_pairs_exact): as the unscaled rules
        if feature == "neab":
            return tuple(v for v in NEAB_VALUES if v != cfg.neab and _valid(cfg, neab=v)
                         and not _correctly_rounded_pairs(cfg, v))
        if _correctly_rounded_pairs(_renormalised(cfg)):
            return ()
    if feature == "nfma" and _scaled_blocks_exact(cfg):
        return tuple(d for d in range(1, cfg.k + 1) if cfg.k % d == 0 and d != cfg.nfma
                     and _valid(cfg, nfma=d) and not _scaled_blocks_exact(cfg.replace(nfma=d)))
    if feature == "final_rounding" and (_scaled_rounding_exact(cfg) or (
            _scaled_alignment_exact(cfg) and _scaled_sums_fit(cfg))):
        # every block result is an output: only an exact zero's sign shows round-down
        if not _zero_sign_shows(cfg):
            return ()
        return tuple(v for v in ROUNDING_MODES if (v == "rd") != (cfg.final_rounding == "rd"))
    if feature == "carry_bits":
        # the bound of carry_needed holds under scale factors (it counts their significands)
        return _carry_alternatives(cfg)
    if feature in _FLUSH_OF:
        stage = _FLUSH_OF[feature]
        if stage == "sums" and (cfg.algorithm != "fused" or "output" in cfg.flush
                                or not (cfg.blocks > 1 or cfg.interleave == "pairs")):
            return ()  # no later block takes a sum in, or every block result is flushed
        if stage in ("output", "sums") and not _scaled_output_observable(cfg, stage):
            return ()  # no subnormal result ever reaches the output, or the next block
        if stage == "products" and not _stage_observable(cfg, "products"):
            return ()  # no product so small, or none an output of that range can show
        other = tuple(x for x in FLUSH_STAGES if (x in cfg.flush) != (x == stage))
        return ("keep" if stage in cfg.flush else "flush",) if _valid(cfg, flush=other) \
            else ()
    domain = {"neab": NEAB_VALUES, "carry_bits": CARRY_VALUES,
              "nfma": tuple(d for d in range(1, cfg.k + 1) if cfg.k % d == 0),
              "align_rounding": ALIGN_ROUNDINGS, "final_rounding": ROUNDING_MODES,
              "product_normalisation": NORMALISATIONS, "c_placement": PLACEMENTS,
              "interleave": INTERLEAVES, "nan": NAN_STYLES}[feature]
    return tuple(v for v in domain if v != getattr(cfg, feature)
                 and _valid(cfg, **{feature: v}))


def _generates_subnormal(cfg: AccumulatorConfig) -> bool:
    """Whether a block can produce a non-zero result below the output's smallest normal
    from terms that are not such results themselves: sums of products are multiples of the
    product grid 2^g; with an accumulator (c, or an earlier block's result) that cancels
    them, multiples of its quantum near 2^(g - 1), 2^(g - 1 - t); a sticky bit adds half
    an alignment quantum, 2^(g - F - 2) at the least."""
    b = _bounds(cfg)
    fc, fout = b["fc"], b["fout"]
    if _pairs_of_normals_stay_normal(cfg):
        return False
    low = g_p = _product_grid(cfg)
    chained = cfg.blocks > 1 or cfg.interleave == "pairs"
    acc_t = max(fc.t if b["c_in_blocks"] or cfg.algorithm == "sfma" else 0,
                fout.t if chained or cfg.algorithm == "sfma" else 0)
    if acc_t:
        low = min(low, g_p - 1 - acc_t)
    if cfg.align_rounding == "rz_sticky":
        low = min(low, g_p - cfg.frac_bits - 2)
    return low < fout.emin


def _pairs_of_normals_stay_normal(cfg: AccumulatorConfig) -> bool:
    """Whether no block of a fused chain of two-term blocks (nfma 1, c early) with inputs
    flushed can give a non-zero result below the output's smallest normal.

    Each block adds a product p of two normal inputs (or 0) to an accumulator A: c (normal
    after the input flush, or 0) or an earlier result.  By induction A is 0 or at least
    out.fmin in magnitude.  Let P = 2^(ea + eb) (ea, eb: the input formats' emin), the
    smallest such product, and G = 2^(ea - ta + eb - tb) their grid.  A block result r
    rounds the aligned sum s; |s| >= out.fmin gives |r| >= out.fmin (rounding is monotone
    and out.fmin is representable), so take 0 < |s| < out.fmin:
    * A = 0 or p = 0: s is the other term truncated at F bits below its own exponent, at
      least 2^e >= min(P, out.fmin) in magnitude: excluded;
    * exponent fields e_A >= e_p + 3: |A + p| >= 2^(e_A - 1), minus at most two alignment
      quanta 2^(e_A - F): at least 2^(e_A - 2) >= 2 P: excluded (likewise e_p >= e_A + 2
      gives |s| >= 2^(e_p - 2) >= P / 4 >= out.fmin);
    * otherwise the block's alignment exponent is at most 3 above both terms, so
      F >= max(tA, ta + tb) + 3 (tA: the accumulator's fraction bits, c's or the
      output's) drops nothing: s = A + p exactly, |A| > P - out.fmin >= P / 2, so s is a
      multiple of min(G, 2^(log2(P) - 1 - tA)) >= out.fmin: excluded.
    No carry wraps (carry bits as carry_needed asks).  An exhaustive search confirms it
    for e2m3 into binary16 (c over every binary16 value from a quarter of the smallest to
    four times the largest product, every product of normals, F = 23 and 25, rne/rz/rd/ru,
    rz and rz_sticky alignment, accumulator.evaluate: flushing the output changes none of
    6.7 million rows), and finds the rows for e3m2 (P = 2^-4: c = 2^-4 - 2^-15 minus P)."""
    if (not _two_term_blocks(cfg)
            or cfg.c_placement != "early" or "inputs" not in cfg.flush
            or cfg.scale_format is not None):
        return False
    if cfg.carry_bits is not None and cfg.carry_bits < carry_needed(cfg):
        return False
    fa, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    fc, fout = get_format(cfg.c_format), get_format(cfg.out_format)
    p_exp = fa.emin + fb.emin
    grid = fa.emin - fa.t + fb.emin - fb.t
    t_acc = max(fc.t, fout.t)
    return (fc.emin >= fout.emin and p_exp - 2 >= fout.emin and grid >= fout.emin
            and p_exp - 1 - t_acc >= fout.emin
            and cfg.frac_bits >= max(t_acc, fa.t + fb.t) + 3)


def _lone_flushed_product_passes(cfg: AccumulatorConfig) -> bool:
    """Whether the only partial sum a fused chain passes on is one product alone, flushed
    below binary32's smallest normal, into an output whose smallest normal is no larger (or
    a product of normal inputs, subnormal inputs flushed, at or above the output's smallest
    normal): then no partial sum is subnormal and a flush between blocks changes nothing.

    K = 2, nfma 1, c late: the first block holds the product p_0 and a zero accumulator.
    p_0 is 0 (flushed) or at least 2^-126 = binary32.fmin in magnitude.  Alignment at its
    own exponent field keeps it a multiple of the quantum q = 2^(e - F): truncated,
    rounded (rne, rd) or with a sticky half quantum, a magnitude of at least 2^-126 stays
    at least 2^-126 when q <= 2^-126 (2^-126 lies on the grid), and is 0 or at least
    q/2 >= 2^-126 otherwise (|p_0| < q would need q >= 2^-125); a carry wrap of the one
    term (at most 2^(F + 2) quanta) gives 0.  Rounding to an output with emin <= -126
    keeps a value of at least 2^-126 at or above it (monotone, 2^-126 representable)."""
    if (cfg.algorithm != "fused" or cfg.c_placement != "late" or cfg.nfma != 1
            or cfg.k != 2 or cfg.interleave != "none" or cfg.scale_format is not None):
        return False
    out_emin = get_format(cfg.out_format).emin
    if "products" in cfg.flush and out_emin <= _B32.emin:
        return True
    # inputs flushed: p_0 is 0 or a product of normals, at least 2^(emin_a + emin_b) (its
    # exponent field), and alignment at that field keeps its leading bit
    return ("inputs" in cfg.flush and get_format(cfg.in_format).emin
            + get_format(cfg.b_fmt).emin >= out_emin)


def _late_results_on_grid(cfg: AccumulatorConfig) -> bool:
    """Whether no block of a fused unit with c late can return a non-zero result below the
    output's smallest normal (so flushing the sums between blocks changes nothing).

    No block sees c, so every term is a product (a multiple of the product grid 2^g) or an
    earlier block's result.  Alignment truncates or rounds a term to a multiple of its
    quantum only when that quantum lies above the grid (a finer one drops nothing), a
    sticky half quantum is set only then (a multiple of the grid too), a carry wrap takes
    off a power of two above the grid, and rounding a multiple of 2^g to the output keeps
    a multiple of 2^g (or is exact): by induction every block result is a multiple of 2^g,
    a non-zero one at least 2^g.  (The late addition of c can still make a subnormal
    output: that is the output stage, not this one.)"""
    return (cfg.algorithm == "fused" and cfg.c_placement == "late"
            and cfg.scale_format is None
            and _product_grid(cfg) >= get_format(cfg.out_format).emin)


def _c_small(cfg: AccumulatorConfig) -> bool:
    """Whether some c the unit accepts (after an input flush) lies below the output's
    smallest normal."""
    fc, fout = get_format(cfg.c_format), get_format(cfg.out_format)
    smallest = fc.fmin if "inputs" in cfg.flush else fc.smin
    return smallest < fout.fmin


def _stage_observable(cfg: AccumulatorConfig, stage: str) -> bool:
    """Whether flushing subnormals at one stage changes some output (the other stages as
    cfg has them)."""
    b = _bounds(cfg)
    fin, fb = b["fin"], b["fb"]
    if stage == "products":
        # products below binary32's smallest normal are flushed ([XWYY25] FDRDA, GPS); a
        # block-scaled product also has its scale factors (at least the smallest each)
        small = (fin.fmin * fb.fmin if "inputs" in cfg.flush else fin.smin * fb.smin)
        if cfg.scale_format is not None:
            small *= get_format(cfg.scale_format).smin ** 2
        if small >= _B32.fmin:
            return False
        fout = get_format(cfg.out_format)
        if (fout.smin > Fraction(1, 2 ** 100) and cfg.align_rounding in ("rz", "rne")
                and cfg.final_rounding in ("rne", "rna", "rz") and not _zero_sign_shows(cfg)):
            # K products below 2^-126 sum to less than half the output's smallest
            # subnormal (binary16: 2^-24), and every other term lies more than F bits above
            # them: truncated or rounded to nearest in the alignment they vanish, and a
            # nearest or toward-zero final rounding does not see them either, save in the
            # sign of a zero (-2^-127 alone rounds to -0, a flushed one leaves +0)
            return False
        fc = get_format(cfg.c_format)
        if (fout.smin > Fraction(1, 2 ** 100) and cfg.algorithm == "fused" and cfg.nfma == 1
                and cfg.interleave == "none" and fc.t <= fout.t and fc.emin >= fout.emin
                and cfg.final_rounding in ("rne", "rna") and not _zero_sign_shows(cfg)):
            # two-term blocks: the tiny product meets an accumulator the output can hold,
            # and that plus a tiny term is never a midpoint, whatever the alignment keeps
            # (beside an accumulator 0 its sign shows, as above)
            return False
        return True
    if stage == "inputs":
        return True  # a subnormal input times a large one is a normal product
    chained = cfg.blocks > 1 or cfg.interleave == "pairs"
    gen = _generates_subnormal(cfg)
    small_c = _c_small(cfg)
    if stage == "sums":
        if cfg.algorithm != "fused" or not chained or "output" in cfg.flush:
            # FDRDA flushes its c as an input, GPS and SFMA fix the stage; with the
            # output flushed no block passes a subnormal on
            return False
        if _lone_flushed_product_passes(cfg) or _late_results_on_grid(cfg):
            return False
        return gen or (cfg.c_placement == "early" and small_c)
    # output
    if gen:
        return True
    if cfg.algorithm == "fused" and cfg.c_placement == "early" and chained:
        return small_c and "sums" not in cfg.flush
    return small_c


#: bits below the output's precision p a two-term block must keep for a sticky-bit alignment
#: to round correctly: round-to-odd needs none beyond p - 1 (the sticky bit is its odd
#: bit), the directed modes the bit at p, the nearest modes one more (the round bit).
_CR_EXTRA = {"ro": -1, "rz": 0, "rd": 0, "ru": 0, "rne": 1, "rna": 1}


def _two_products_round_nearest(cfg: AccumulatorConfig) -> bool:
    """Whether a fused unit with K = 2 and c late returns the two products' exact sum
    rounded to nearest (rne or rna), FR(p0 + p1), on every input, whatever its block
    structure (nfma 1 or 2), alignment rounding and product normalisation: the products are
    exact in the output and F lies far enough below them that no bit alignment drops can
    reach a rounding midpoint.  Configurations where it holds are one unit, so neab,
    align_rounding, product_normalisation and nfma are not observable among them.

    A block aligns its terms at the larger alignment exponent M (a product's exponent
    field, or its binade when normalised; r0 = FR(p0) = p0, passed on by a first block of
    one product, at its binade).  The term L that sets M keeps every bit (its lowest bit is
    at least M - (ta + tb) - 1 and F >= ta + tb + 1), and L's binade e0 is at least
    M - max(ta, tb) (a subnormal factor; 0 with the inputs flushed).  If the other term S
    loses a bit, its lowest bit is below M - F, so |S| < 2^(M - F + ta + tb + 2) (a
    significand below 2^(ta + tb + 2)), and so is the aligned S' (truncated, rounded, or a
    sticky half quantum).  L is representable and the midpoints nearest to it are at least
    h = 2^(e0 - out_t - 2) away (half the ulp of the binade below); F >= out_t + ta + tb +
    max(ta, tb) + 5 makes |S'| < h and |S| < h, so the result FR(L + S') and the exact
    FR(L + S) are both L.  If S loses nothing, the block sum is exact.  Either way the
    result is FR(p0 + p1).  r0 = p0 needs the products on the output's grid and in range,
    and normal in the output when sums are flushed between blocks; no sum may wrap (carry
    bits as carry_needed asks).  The late c only adds c to this same result.  An
    exhaustive search over every pair of e4m3 products (each value with each exponent
    field it has, the second of either sign) with accumulator.evaluate finds no difference
    between nfma 1 and 2 into bfloat16 at F = 21, 23, 25 under rne and rna (also with the
    inputs flushed at F = 18, and sums flushed), and likewise for e5m2 at F = 18, e2m1 at
    F = 15, e3m2 into binary16 at F = 21, e2m3 and e4m3fnuz into binary16 at F = 24;
    it finds one at F = 13 (neab -10), below the bound."""
    if (cfg.algorithm != "fused" or cfg.k != 2 or cfg.interleave != "none"
            or cfg.c_placement != "late" or cfg.final_rounding not in ("rne", "rna")
            or cfg.scale_format is not None):
        return False
    fa, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    fout = get_format(cfg.out_format)
    t_out = cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t
    t2 = fa.t + fb.t
    deficit = 0 if "inputs" in cfg.flush else max(fa.t, fb.t)
    lsb_min = fa.emin + fb.emin - t2                    # every product's grid
    if t2 + 2 > t_out + 1 or lsb_min < fout.emin - t_out:
        return False                                     # a product the output rounds
    if fa.emax + fb.emax + 1 > fout.emax:
        return False                                     # a product the output overflows
    smallest = fa.emin + fb.emin if "inputs" in cfg.flush else lsb_min
    if "sums" in cfg.flush and smallest < fout.emin:
        return False                                     # r0 flushed between blocks
    if cfg.frac_bits < t_out + t2 + deficit + 5:
        return False
    return cfg.carry_bits is None or cfg.carry_bits >= carry_needed(cfg)


def _two_term_blocks(cfg: AccumulatorConfig) -> bool:
    """Whether every block of cfg holds two terms: the accumulator and one product (a fused
    unit with nfma 1, not interleaved)."""
    return cfg.algorithm == "fused" and cfg.nfma == 1 and cfg.interleave == "none"


def _correctly_rounded_pairs(cfg: AccumulatorConfig, neab: int | None = None,
                             align: str | None = None) -> bool:
    """Whether every block of two terms (nfma 1: the accumulator and one product) is
    correctly rounded: under a nearest final rounding with truncating, nearest or
    round-down alignment (_nearest_pairs_exact), or with a sticky bit, or round-down
    alignment under a round-down final rounding (_sticky_pairs_exact), each from the F its
    function proves.  (Round-down alignment under rna is not: a product of p + 1 bits can sit on
    a midpoint, and flooring a positive tail of a negative sum lands on it, which rounds
    away while the exact sum rounds toward zero; probes/library/two-term-align-split.yaml.)"""
    if not _two_term_blocks(cfg):
        return False
    align = cfg.align_rounding if align is None else align
    if cfg.final_rounding in ("rne", "rna") and align in ("rz", "rne", "rd"):
        return _nearest_pairs_exact(cfg, neab, align)
    return _sticky_pairs_exact(cfg, neab, align) or _directed_pairs_exact(cfg, neab, align)


def _subnormal_products(fa, fb) -> list[tuple[int, int, int]]:
    """Products of a subnormal input with a normal one (either factor) and of two subnormal
    inputs, denormalised, as (d, E, w): their exponent field lies at most d binades above
    their value and is at most E, and they have at most w significant bits."""
    return [(fa.t, fa.emin + fb.emax, fa.t + fb.t + 1),
            (fb.t, fa.emax + fb.emin, fa.t + fb.t + 1),
            (fa.t + fb.t, fa.emin + fb.emin, fa.t + fb.t)]


class _PairTerms(NamedTuple):
    """What the two-term rules read of a configuration: the a, b, c and output formats, the
    output's fraction bits, c early, products normalised, and F."""
    fa: Format
    fb: Format
    fc: Format
    fout: Format
    t_out: int
    early: bool
    normalised: bool
    f: int


def _pair_terms(cfg: AccumulatorConfig, neab: int | None) -> _PairTerms | None:
    """cfg's formats and F for the two-term rules (neab given: that neab), or None where
    they do not apply: block-scaled products (save under power-of-two scale factors with c
    early and no flushed output, as _nearest_pairs_bounds), or carry bits few enough that a
    sum wraps."""
    if cfg.scale_format is not None and (get_format(cfg.scale_format).t
                                         or cfg.c_placement != "early"
                                         or "output" in cfg.flush):
        return None
    if cfg.carry_bits is not None and cfg.carry_bits < carry_needed(cfg):
        return None
    fout = get_format(cfg.out_format)
    return _PairTerms(get_format(cfg.in_format), get_format(cfg.b_fmt),
                      get_format(cfg.c_format), fout,
                      cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t,
                      cfg.c_placement == "early", cfg.product_normalisation == "normalised",
                      23 + (cfg.neab if neab is None else neab))


def _sticky_pairs_exact(cfg: AccumulatorConfig, neab: int | None, align: str) -> bool:
    """Whether every block of two terms (nfma 1) with truncation and a sticky bit (or
    round-down alignment under a round-down final rounding) is correctly rounded: the
    block result is the exact sum of its terms rounded to the output.

    Let T1 be the term whose exponent field E sets the alignment, T2 the other, q =
    2^(E - F).  F at least T1's width below E (a product's ta + tb, one more normalised;
    the accumulator's out_t; c's t) keeps T1 whole, a multiple of q.  Where T2 keeps its
    bits too the block is exact.  Else T2' (T2 truncated plus a sticky half quantum, or
    floored) differs from T2, and both T1 + T2 and T1 + T2' lie strictly inside one interval
    (m q, (m + 1) q) (floored: T1 + T2' = m q, the interval's closed lower end, which
    round-down treats as the exact sum).  The final rounding maps the whole interval to
    one value unless it holds a rounding boundary that is no multiple of q: a grid point of
    the output (spacing g) for the directed modes, a midpoint for the nearest ones (q <=
    g/2 suffices), and for round-to-odd an even grid point (q <= 2g) -- _CR_EXTRA.  So
    the block rounds correctly once q <= g 2^-extra wherever the sum can lie:
    * anywhere, when q <= 2^(out.emin - out_t - extra), the output's finest spacing: F >=
      E - out.emin + out_t + extra, bounded where E is (a product with a subnormal factor:
      E <= emin_a + emax_b; c subnormal: E = c.emin);
    * near T1 otherwise.  |T1| >= 2^(E - d): d = 0 for a normal accumulator or c and for a
      product of normal inputs or a normalised one, t for one subnormal factor (its
      exponent field lies t binades above its value), ta + tb for two, c.t for a
      subnormal c.  T2' != T2 needs T2's lowest bit at or below 2^(E - F - 1 - lost)
      (lost = 1: one dropped bit is kept exactly by the sticky bit; floored: 0), so
      |T2|, |T2'| <= 2^(E - F - 1 - lost + w2) (w2: the bits from T2's lowest possible
      one to its top, ta + tb + 2 for a product, out_t + 1 or c.t + 1 for the
      accumulator); F >= d + w2 - lost keeps both sums at or above 2^(E - d - 1), where g
      >= 2^(E - d - 1 - out_t): F >= d + 1 + out_t + extra.
    A block whose T2 is the accumulator is exact outright once q is at most its grid (c
    late: the products' grid; c early, c on the output's grid: the output's quantum), and
    with a sticky bit exact one F lower too, where the one bit it drops is the sticky half
    quantum.
    (The overflow threshold is a grid point or midpoint too; a flushed stage only removes
    terms; no sum may wrap: carry bits as carry_needed asks.)  Block-scaled products are
    covered only under power-of-two scale factors (_pair_terms).  The searches of
    tests/models/test_observable.py build the sums that sit
    on a boundary (c = M - P + a tail below q) and find the bound tight where they reach it.
    """
    if align == "rz_sticky":
        extra, lost = _CR_EXTRA[cfg.final_rounding], 1
    elif align == "rd" and cfg.final_rounding == "rd":
        extra, lost = 0, 0
    else:
        return False
    pair = _pair_terms(cfg, neab)
    if pair is None:
        return False
    fa, fb, fc, fout, t_out, early, normalised, f = pair
    keep_sub = "inputs" not in cfg.flush
    if f < max(fa.t + fb.t + normalised, t_out, fc.t if early else 0):
        return False                                     # T1 not kept whole
    w_prod = fa.t + fb.t + 2
    w_acc = max(t_out, fc.t if early else 0) + 1
    if not early and cfg.k == 2:
        w_acc = min(w_acc, w_prod)         # the first product rounded alone

    # with c late the accumulator T2 beside a product T1 is a multiple of the products' grid
    # (_nearest_pairs_bounds), with c early on the output's grid one of its quantum: it
    # loses no bit once F >= T1's largest exponent field - that grid, and one F lower the
    # only bit it loses is the sticky half quantum, kept exactly (lost = 1)
    grid = fa.emin - fa.t + fb.emin - fb.t
    top_normal = fa.emax + fb.emax + normalised
    quantum = fout.emin - t_out
    on_grid = early and fc.emin - fc.t >= quantum

    def rounds_correctly(d: int, e_top: int | None, w2: int, t2_acc: bool) -> bool:
        anywhere = e_top is not None and f >= e_top - fout.emin + t_out + extra
        exact = t2_acc and (
            (not early and f >= (top_normal if e_top is None else e_top) - grid - lost)
            or (on_grid and e_top is not None and f >= e_top - quantum - lost))
        return anywhere or exact or (f >= d + 1 + t_out + extra and f >= d + w2 - lost)

    # (d, the largest E, T2's width, T2 the accumulator) for each kind of T1
    kinds = [(0, None, w_prod, False),                   # normal accumulator or c
             (t_out, fout.emin, w_prod, False),          # subnormal earlier result
             (0, None, w_acc, True)]                     # product of normal inputs
    if keep_sub and not normalised:
        # under scale factors a product's exponent field is unbounded (_pair_terms)
        kinds += [(d, None if cfg.scale_format else e, w_acc, True)
                  for d, e, _ in _subnormal_products(fa, fb)]
    if keep_sub and early:
        kinds.append((fc.t, fc.emin, w_prod, False))     # subnormal c
    return all(rounds_correctly(*k) for k in kinds)


@functools.lru_cache(maxsize=64)
def _product_runs(ta: int, tb: int) -> tuple[int, int]:
    """The longest run of zeros between two ones, and of ones with a one further down, in a
    product of two significands of ta + 1 and tb + 1 bits (normal inputs): how many bits a
    product's part above a truncated (zeros) or rounded-up (ones) tail can span.  e3m2: 3
    zeros (49 = 110001b; 33 = 100001b is no product).  Wide significands get the bounds of
    their width, ta + tb and ta + tb + 1.

    >>> _product_runs(2, 2), _product_runs(3, 3), _product_runs(1, 1)
    ((3, 3), (5, 5), (2, 1))
    """
    if ta + tb > 14:
        return ta + tb, ta + tb + 1
    zeros = ones = 0
    for p in {x * y for x in range(1 << ta, 2 << ta) for y in range(1 << tb, 2 << tb)}:
        bits = bin(p).rstrip("0")[2:-1]                # without the lowest one
        zeros = max(zeros, max(map(len, bits.lstrip("0").split("1"))))
        ones = max(ones, max(map(len, bits.split("0"))))
    return zeros, ones


def _directed_pairs_exact(cfg: AccumulatorConfig, neab: int | None, align: str) -> bool:
    """Whether every block of two terms (nfma 1) with subnormal inputs flushed is correctly
    rounded under a directed final rounding (rz, rd, ru, or ro) with truncating, nearest or
    round-down alignment: no term that loses bits to alignment can move the sum across a
    grid point, and no term is small enough to vanish.

    Let T1 be the term whose exponent field E sets the alignment, T2 the other, q =
    2^(E - F).  With inputs (and so c) flushed every product, c and accumulator is at least
    2^E, E its exponent field (a product of normal inputs, a normal c; a subnormal earlier
    result never sets E beside a product when the smallest product, 2^(ea_min + eb_min), is
    normal in the output).  F at least T1's width keeps T1 whole; T1 lies on the output's
    grid when a product has at most out_t + 1 bits above the output's quantum.  If T2 loses
    bits, its lowest bit lies below q, and T2' differs from it by less than q.  T1 + T2 is
    no multiple of q, T1 + T2' is, and so are the grid points near them (q below the
    spacing), so a directed rounding (or round-to-odd) sends them apart only if T1 + T2' is
    a grid point: T2' = 0, or T2' a non-zero difference of grid points, at least the
    spacing g >= 2^(E - 1 - out_t) next to T1.  Truncated (|T2'| < |T2|), T2 then holds
    zeros from q up to g between a one at or above g and a tail below q; rounded up in
    magnitude (rne, rd alignment), ones from q up to g above a non-zero tail.  Either run
    spans log2(g / q) >= F - 1 - out_t bits, so none reaches once F >= run + 2 + out_t:
    for products the longest runs of _product_runs (e3m2: 3 zeros), for c or an
    accumulator of t_U + 1 bits t_U - 1 zeros or t_U ones.  With c late an accumulator is
    a multiple of the products' grid and loses no bit beside a product once F >= the
    products' largest field - grid.  T2' = 0 with T2 != 0 (a truncated, floored or
    rounded-to-even tail) needs |T2| < q; it cannot happen when every non-zero T2 is at
    least q:
    * T2 a product beside c or an accumulator (E <= c.emax, or the field of (k - 1) in.fmax^2
      (+ c.fmax) rounded up, within out.emax): |T2| >= 2^(ea_min + eb_min);
    * T2 c or an accumulator beside a product (E <= the products' largest field): c >=
      2^(c.emin), and an accumulator is a rounded sum U + P of an earlier accumulator or c
      U and a product P, non-zero only at least 2^m, m the least of c.emin (U alone),
      ea_min + eb_min - 1 (no cancellation: one term at most half the other, whichever
      loses bits to alignment), and, with cancellation (|P|/2 < |U| < 2 |P|, both kept
      whole), the finer of U's spacing 2^(ea_min + eb_min - 1 - t_U) and the products' grid;
      with c late a multiple of the products' grid (a rounded sum of products:
      _nearest_pairs_bounds), and at K = 2 the first product alone, at least 2^(ea_min +
      eb_min) and with a product's tail; at least the output's smallest normal where
      subnormal sums or outputs are flushed.
    Under a nearest final rounding the vanishing tail does not matter and
    _nearest_pairs_exact gives the bound; with a sticky bit _sticky_pairs_exact does.
    tests/models/test_observable.py finds both bounds tight (e3m2 into binary16: the
    accumulator 2^-15 beside the product 784 at F = 23, normalised; e2m3: c = -(2^-7 +
    2^-17) beside 2^4 at F = 20) and checks every equivalence on rows that build the
    smallest accumulators (test_directed_pairs_flushed_inputs_*).
    """
    if (cfg.final_rounding not in ("rz", "rd", "ru", "ro") or align not in ("rz", "rne", "rd")
            or cfg.scale_format is not None):   # its bounds on products' ranges: unscaled
        return False
    pair = _pair_terms(cfg, neab) if "inputs" in cfg.flush else None
    if pair is None:
        return False
    fa, fb, fc, fout, t_out, early, normalised, f = pair
    quantum = fout.emin - t_out                        # the output's finest spacing
    grid = fa.emin - fa.t + fb.emin - fb.t             # every product's lowest bit
    p_low = fa.emin + fb.emin                          # the smallest product, 2^p_low
    w_prod = fa.t + fb.t + 2
    if w_prod > t_out + 1 or grid < quantum or p_low < fout.emin:
        return False                                   # a product off the output's grid
    if early and (fc.t > t_out or fc.emin - fc.t < quantum):
        return False                                   # c off the output's grid
    t_u = max(t_out, fc.t if early else 0)
    if f < max(fa.t + fb.t + normalised, t_u):
        return False                                   # T1 not kept whole
    top_p = fa.emax + fb.emax + normalised             # the products' largest field
    # a tail may reach a grid point: a product's beside c or an accumulator, and c's or an
    # accumulator's beside a product (with c late a multiple of the products' grid, whole
    # once F >= top_p - grid)
    up = align in ("rne", "rd")                        # may round a tail up in magnitude
    zeros, ones = _product_runs(fa.t, fb.t)
    p_tail = max(zeros, ones if up else 0) + 2 + t_out
    u_tail = (t_u + 1 if up else t_u - 1) + 2 + t_out   # any pattern of t_u + 1 bits
    # with c late at K = 2 the second block's accumulator is the first product alone
    # (whole in the output: w_prod <= t_out + 1), its tail a product's, at least 2^p_low
    first_alone = not early and cfg.k == 2
    if f < p_tail or (f < u_tail and not first_alone and (early or f < top_p - grid)):
        return False
    low_a = p_low if first_alone else min(fc.emin, p_low - 1 - t_u, grid) if early else grid
    if {"sums", "output"} & set(cfg.flush):
        low_a = max(low_a, fout.emin)                  # a subnormal accumulator is flushed
    low_u = min(fc.emin, low_a) if early else low_a
    # an accumulator's field: that of the largest sum before the last product, rounded up
    bound = (cfg.k - 1) * fa.fmax * fb.fmax + (fc.fmax if early else 0)
    top_a = bound.numerator.bit_length() - bound.denominator.bit_length()
    top_a -= Fraction(2) ** top_a > bound
    top_a += bound > Fraction(2) ** (top_a + 1) - Fraction(2) ** (top_a - t_out)
    top_a = min(top_a, fout.emax)
    top_u = max(fc.emax, top_a) if early else top_a
    return f >= top_u - p_low and f >= top_p - low_u


def _nearest_pairs_exact(cfg: AccumulatorConfig, neab: int | None, align: str) -> bool:
    """Whether every block of two terms (nfma 1) rounds to nearest (rne, rna) as the exact
    sum would, with truncating, round-to-nearest or round-down alignment: no input tells
    such an F (or alignment rounding) from any larger one.

    Let T1 be the term whose alignment exponent E is the block's, T2 the other, q = 2^(E-F).
    Where T1 lies on the output's grid (c no wider than the output and its lowest bit on the
    output's subnormal grid, each product's significand within out_t + 1 bits and, if its
    exponent field reaches a non-zero accumulator's, its lowest bit on that grid: a product
    further down, as e5m2's 2^-16 * 2^-16 into binary16, only meets a larger accumulator as
    T2, or a zero one alone), T1 is kept whole once F covers its own width, and T2 loses
    bits only when its lowest set bit lies below q: then |T2| < 2^(E - F + w2) (w2: T2's
    significant bits, at most the accumulator's out_t + 1 or a product's ta + tb + 2), far
    below T1.  T1 + T2 and T1 + T2' (T2 aligned: |T2 - T2'| < q, no multiple of q strictly
    between them) round differently only across or onto a midpoint T1 + o, o an odd multiple
    of g/2, g the output's spacing next to T1 (at least 2^(max(v1 - 1, out.emin) - out_t),
    v1 = floor(log2 |T1|); the overflow threshold is such a midpoint too).  Once q <= g/4, o
    is a multiple of q, so T2' = o exactly while T2 != o: T2 holds o's bit (|T2| > |o| >=
    g/2 truncated, |T2| > |o| - q/2 >= g/4 rounded or floored) and a bit below q, at least
    log2(g) - (E - F) bits (one more when alignment only truncates).  That is impossible
    once F >= w2 + E - log2(g) (+ 1 for rne and rd alignment, where T2 may have exactly that
    many bits: T2 = o -+ q/2, all ones, rounded onto o; a product of two significands is
    never all ones at its full width, and the tie T1 + o rounds to even as the exact sum
    rounds to T1 unless T1 is odd on the output's grid, which under final rne a product of
    at most out_t bits on a grid above the output's quantum is not: only an all-ones
    accumulator beside a product that can be odd needs the extra bit; rna takes the tie away
    from zero, so it differs only where o lies on T1's far side, whose spacing is the
    coarser one when T1 is a power of two).  E - log2(g) is at most out_t + 1 when T1 is the
    accumulator (its exponent is E), and out_t + min(E - v1 + 1, E - out.emin) when T1 is a
    product (E - v1 without the + 1 on its far side): E - v1 <= 0 for normalised products or
    products of normal inputs (v1 is E or E + 1), up to the subnormal factor's t for a
    denormalised product of one subnormal and one normal input (its exponent field lies t
    binades above its value), and ta + tb for two subnormal inputs (E = emin_a + emin_b).
    Every block then equals the exactly rounded sum, so all such F give one unit, and so do
    the alignment roundings.  A block is exact outright where T2 keeps all its bits: with
    c late an accumulator is a multiple of the products' grid, with c early (c on the
    output's grid) one of the output's quantum 2^(out.emin - out_t), so beside a product
    of field at most e it is whole from F = e minus that exponent, below the rounding
    bound for the deepest products (e3m2 x e4m3 into binary16: a.smin b.smin aligns at
    2^-8, whole from F = 16, so a.smin 2^8's F = 24 sets the bound, not 27).

    Searches with accumulator.evaluate agree: e4m3 into binary16 with a subnormal factor
    tells F = 24 from 25 (rz alignment: 2^8 * 2^-9 against c = -(2^-13 + 2^-23), the
    truncated tail leaves the tie 2^-1 - 2^-13, which rounds to even 2^-1), and rows on
    rounding boundaries (tests/models/test_observable.py) find the bound tight for fp8
    inputs into binary16 and bfloat16 (rne and rna, each alignment rounding)."""
    bounds = _nearest_pairs_bounds(cfg, align, listed=True)
    if bounds is None:
        return False
    p, r, _ = bounds
    return 23 + (cfg.neab if neab is None else neab) >= max(p, r)


def _lands_on_midpoint(odd_parts: frozenset[int], align: str, D: int) -> bool:
    """Whether some product m 2^l (m odd) aligned with s >= 1 of its bits below the quantum
    q becomes a multiple of q 2^D that is not one of q 2^(D + 1): an odd multiple of half
    the output's spacing g/2 = q 2^D, the midpoint offset o of _nearest_pairs_exact.
    Truncation ('rz') floors m / 2^s, round-down alignment ('rd') floors or ceils it (a
    positive or a negative product), 'rne' rounds it to nearest, ties to even.

    Under truncation this asks for a run of at least D zeros between two set bits of m:

    >>> _lands_on_midpoint(frozenset({9}), "rz", 2), _lands_on_midpoint(frozenset({9}), "rz", 3)
    (True, False)
    """
    half, whole = 1 << D, 1 << (D + 1)
    for m in odd_parts:
        for s in range(1, m.bit_length() + 1):
            lo, rem = m >> s, m & ((1 << s) - 1)
            if align == "rz":
                cands: tuple[int, ...] = (lo,)
            elif align == "rd":
                cands = (lo, lo + 1)
            else:
                up = 2 * rem > (1 << s) or (2 * rem == 1 << s and lo % 2 == 1)
                cands = (lo + up,)
            if any(n % whole == half for n in cands):
                return True
    return False


@functools.lru_cache(maxsize=1024)
def _late_acc_pairs_bound(fa_name: str, fb_name: str, align: str, t_out: int) -> int | None:
    """F from which a two-term block whose accumulator sets the alignment (T1, c late: an
    earlier result on the output's grid) beside a product (T2) rounds to nearest as the
    exact sum does, from the products themselves (formats of at most 8 bits; None else).

    _nearest_pairs_exact's bound w_prod + out_t + 1 counts every product as able to hold
    o's bit and a bit below q, o = q 2^D an odd multiple of g/2 with D = F - out_t - 1 (or
    F - out_t - 2 below a power of two, where the spacing halves): the aligned product must
    land on o.  Which products do is read off their odd parts (_lands_on_midpoint), from
    q <= g/4 (D >= 1) on.  e3m2 x e3m2 (odd parts up to 49 = 110001b): a run of three zeros
    at most, so no product lands from D = 4, F = out_t + 6, where the width bound asks
    out_t + 7 (under truncation; rd and rne alignment land from wider runs too).  The
    alignment rounding (here 'rz', 'rd' or 'rne') is the unit's."""
    prods = _products(fa_name, fb_name)
    if prods is None:
        return None
    odd = set()
    for x in prods:
        n = x.numerator
        odd.add(n // (n & -n))
    odd_parts = frozenset(odd)
    width = max(m.bit_length() for m in odd_parts)
    f = t_out + 3                                      # D >= 1 on both sides of T1
    for F in range(t_out + 3, t_out + width + 4):
        if any(_lands_on_midpoint(odd_parts, align, D) for D in (F - t_out - 1, F - t_out - 2)):
            f = F + 1
    return f


def _nearest_pairs_bounds(cfg: AccumulatorConfig, align: str, below: int = 0,
                          listed: bool = False) -> tuple[int, int, bool] | None:
    """_nearest_pairs_exact's bounds: (p, r, even), blocks whose T1 is a product rounding
    correctly from F = p and the others from F = r; even: under final rne, no product that
    sets the alignment is ever odd on the output's grid.  below: p for a claim that holds
    that many F below the rounding bound (but never below the F from which the accumulator
    loses no bit).  None where the proof does not apply."""
    # scale factors that are powers of two (ue8m0: no fraction bits, no subnormals) move a
    # product to any exponent and change nothing else the proof reads, save the bounds on
    # where products lie: with c early, no flushed output, each kind of product's exponent
    # field is taken unbounded (ue4m3's significands and subnormals would widen and deepen
    # the products: not covered)
    scaled = cfg.scale_format is not None
    if scaled and (get_format(cfg.scale_format).t or cfg.c_placement != "early"
                   or "output" in cfg.flush):
        return None
    if cfg.carry_bits is not None and cfg.carry_bits < carry_needed(cfg):
        return None
    fa, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    fc, fout = get_format(cfg.c_format), get_format(cfg.out_format)
    t_out = cfg.out_frac_bits if cfg.out_frac_bits is not None else fout.t
    quantum = fout.emin - t_out                       # the output's grid at its bottom
    if cfg.c_placement == "early" and (fc.t > t_out or fc.emin - fc.t < quantum
                                       or fc.emax > fout.emax):
        return None
    w_prod = fa.t + fb.t + 2
    normalised = cfg.product_normalisation == "normalised"
    # a non-zero accumulator's exponent field is at least acc_emin; a product that sets the
    # alignment beside it has its exponent field at or above that, so its lowest bit is
    # at least 2^t1_lsb (products further down, as two e5m2 subnormals' 2^-32, only ever
    # meet a larger accumulator as T2, or a zero one, and are kept whole alone)
    acc_emin = min(fout.emin, fc.emin) if cfg.c_placement == "early" else fout.emin
    t1_lsb = acc_emin - fa.t - fb.t - normalised
    if w_prod > t_out + 1 or t1_lsb < quantum:
        return None
    # a flushed output tests the unrounded sum against 2^out.emin, which is no midpoint: a
    # product below the grid, dropped or kept beside an accumulator there, would cross it;
    # beside one aligned at out.emin it is kept whole once F >= out.emin - its lowest bit
    flush_whole = fout.emin - (fa.emin - fa.t + fb.emin - fb.t) if "output" in cfg.flush else 0
    keep_sub = "inputs" not in cfg.flush
    # E - log2(g) - out_t for T1 the accumulator: 1 (its exponent is its value's), or a
    # subnormal c whose exponent field emin lies above its value
    gap_acc = 1
    if keep_sub and cfg.c_placement == "early":
        gap_acc = max(1, min(fc.t + 1, fc.emin - fout.emin))

    def extra(width: int) -> int:
        # the extra bit of rne/rd alignment: T2 = o -+ q/2 (all ones) rounded onto the
        # midpoint T1 + o; T1 + o then rounds to even, as the exact sum does (to T1)
        # unless T1 is odd on the output's grid, which a product narrower than the
        # output's precision, on a grid above its smallest quantum, never is
        if align == "rz" or (cfg.final_rounding == "rne" and width <= t_out
                             and t1_lsb > quantum):
            return 0
        return 1

    # T1 a product, T2 the accumulator (which can be all ones): E - log2(g) - out_t is
    # E - v1 + 1 on the near side of T1 (toward zero: below a power of two the spacing
    # halves), E - v1 on the far side, and never more than E - out.emin; E - v1 is at most
    # 0 for normal inputs or normalised products, t with one subnormal factor and ta + tb
    # with two.  The extra bit's T2 = o -+ q/2 sits between T1 and the tie T1 + o: rne
    # takes the tie to T1's odd neighbour on either side, rna away from zero, to the far
    # side only
    kinds = [(0, None, w_prod)]
    if keep_sub and cfg.product_normalisation == "denormalised":
        kinds += [(d, None if scaled else e, w) for d, e, w in _subnormal_products(fa, fb)]

    def gap(d: int, e: int | None, near: bool) -> int:
        return d + near if e is None else min(d + near, e - fout.emin)

    # with c late every accumulator is a rounded sum of products, a multiple of the products'
    # grid 2^grid (the output's rounding keeps multiples of a power of two no larger than its
    # spacing); beside a product of exponent field at most e_top it loses no bit once
    # 2^(e_top - F) <= 2^grid: that kind of block is exact from F = e_top - grid
    grid = fa.emin - fa.t + fb.emin - fb.t
    top_normal = fa.emax + fb.emax + normalised

    # K = 2 with c late: the accumulator is the first product rounded alone, of a product's
    # bits at most, never all ones at their full width (no extra bit), not out_t + 1
    single = cfg.c_placement == "late" and cfg.k == 2

    def bound(d: int, e: int | None, w: int) -> int:
        if single:
            b = max(1, gap(d, e, True)) + w_prod
        elif cfg.final_rounding == "rna":
            b = max(1, gap(d, e, True), gap(d, e, False) + extra(w)) + t_out + 1
        else:
            b = max(1, gap(d, e, True)) + extra(w) + t_out + 1
        b += t_out - below
        if cfg.c_placement == "late":
            b = min(b, (top_normal if e is None else e) - grid)
        elif e is not None:
            # c early: the accumulator is c or an earlier result, on the output's grid
            # 2^quantum (c's checked above), and loses no bit beside a product of field at
            # most e once F >= e - quantum (e3m2 x e4m3 into binary16: a product of two
            # subnormals, field 2^-8, is exact beside any accumulator from F = 16)
            b = min(b, e - quantum)
        return b

    p = max(bound(d, e, w) for d, e, w in kinds)
    # T1 the accumulator, T2 a product: a product of two significands of ta + 1 and tb + 1
    # bits is below 2^(ta + tb + 2) - 1, never all ones at full width: no extra bit
    r_acc = w_prod + t_out + gap_acc
    if listed and cfg.c_placement == "late":
        # the accumulator beside a product: which products can land on a midpoint
        r_acc = min(r_acc, _late_acc_pairs_bound(cfg.in_format, cfg.b_fmt, align, t_out)
                    or r_acc)
    r = max(r_acc, fc.t, t_out, fa.t + fb.t + 1,  # and T1 kept whole
            flush_whole)
    even = (cfg.final_rounding == "rne" and t1_lsb > quantum
            and all(w <= t_out for _, _, w in kinds))
    return p, r, even


def _nearest_pairs_same_alignment(cfg: AccumulatorConfig) -> frozenset[str]:
    """'rz' and 'rne' alignment give one unit for two-term blocks (nfma 1) under a final
    rne from one F below the bound of _nearest_pairs_exact for truncation, where no product
    that sets the alignment is odd on the output's grid.

    With the notation of _nearest_pairs_exact: rne alignment moves T2' one quantum q away
    from zero beyond the truncated one, and the two sums (multiples of q) round apart only
    when one of them is a midpoint T1 + o (o a multiple of q, q <= g/4).  Truncated onto o:
    T2 = o + r with r > q/2 (r = q/2 ties to o, even on q's grid), bits from g/2 down to
    q/4 or below, two more than the truncation bound allows at its F: none.  Rounded onto
    o: |o| - q/2 <= |T2| < |o|, so the truncated sum and the exact one both round to T1,
    and rne alignment's tie T1 + o to the even one of T1 and its neighbour: T1 itself,
    since a product that sets the alignment is never odd (T1 the accumulator, T2 a product,
    is correctly rounded under both from its own bound, which this F must reach).  Round-
    to-odd or rna ties differ.  e4m3 into binary16 at F = 24 and e5m2 at F = 23: the
    boundary rows tell rd and a sticky bit from rz there, never rne from rz."""
    if (not _two_term_blocks(cfg)
            or cfg.final_rounding != "rne" or cfg.align_rounding not in ("rz", "rne")):
        return frozenset()
    bounds = _nearest_pairs_bounds(cfg, "rz", below=1)
    if bounds is None:
        return frozenset()
    p, r, even = bounds
    return frozenset(("rz", "rne")) if even and cfg.frac_bits >= max(p, r) else frozenset()


def _ru_pairs_same_alignment(cfg: AccumulatorConfig) -> frozenset[str]:
    """'rz' and 'rd' alignment give one unit for two-term blocks (nfma 1) under a round-up
    final rounding from the F of _nearest_pairs_exact's bounds for truncation (where the
    terms lie on the output's grid as that proof asks).

    They differ only on a negative T2 with bits below q: rd gives S = T1 - K q (K =
    ceil(|T2| / q)), truncation S + q, the exact sum lies strictly between, and no grid
    point lies in (S, S + q] (q is at most the spacing there, both powers of two), so round-
    up tells rd apart only where S itself is a grid point of spacing g_S.  T1 the
    accumulator (a multiple of its ulp 2^(E - out_t)): K q is a multiple of g_S, or of
    the ulp where g_S is twice it, so |T2| > 2^(E - out_t - 1) - q and T2 spans F - out_t
    bits: none of a product once F >= w_prod + out_t + 1 (with a subnormal c as in the
    nearest bound).  T1 a product: with r = T1 mod g_S, K q >= g_S when r = 0, and T2,
    of at most out_t + 1 bits, spans from g_S/2 to below q, F - out_t - gap + 1 bits with
    gap = min(E - v1 + 1, E - out.emin) as for the near side of a midpoint: none once F >=
    2 out_t + 1 + gap; when r > 0 (a product wider than the grid), K q >= r >= T1's lowest
    bit 2^(v1 - w + 1), F - (E - v1) - w + 2 bits, fewer than before.  The boundary rows
    find e4m3 into bfloat16 rz and rd apart at F = 21 and one unit from 22 on."""
    if (not _two_term_blocks(cfg)
            or cfg.final_rounding != "ru" or cfg.align_rounding not in ("rz", "rd")):
        return frozenset()
    bounds = _nearest_pairs_bounds(cfg, "rz")
    if bounds is None:
        return frozenset()
    p, r, _ = bounds
    return frozenset(("rz", "rd")) if cfg.frac_bits >= max(p, r) else frozenset()


def _gfdrda_same_alignment(cfg: AccumulatorConfig) -> frozenset[str]:
    """Alignment roundings that give the same GFDRDA unit as cfg's own (interleave
    'even_odd': the even and the odd products are fused in groups of nfma / 2, each group
    sum rounded down at 2^(e_dot - F) before the two are added, [XWYY25] Sec. IV-H).

    The term that sets a group's alignment exponent e keeps all of its bits when F >= 2t + 1 (a
    product's significand spans 2t fraction bits below e_a + e_b, its normalised exponent at
    most one more).  A group of one product is then exact: every alignment rounding is the same.
    A group of two (or of one product wider than F) has at most one inexact term x (the other,
    exact, L is a multiple of the quantum q): 'rd' gives L + floor(x), 'rz_sticky' L + trunc(x)
    +- q/2 (strictly between floor(x) and ceil(x)), and the round-down at 2^(e_dot - F) >= q
    maps both to the same multiple; the carry limit is the same too (in half quanta for the
    sticky bit), so where no group sum can wrap, 'rd' and 'rz_sticky' are one unit (a search
    over pool, structured and random rows with accumulator.evaluate finds no input telling them
    apart, binary16/bfloat16/e4m3fnuz at nfma 2 and 4)."""
    if cfg.algorithm != "fdrda" or cfg.interleave != "even_odd":
        return frozenset()
    exact_top = cfg.frac_bits >= get_format(cfg.in_format).t + get_format(cfg.b_fmt).t + 1
    group = cfg.nfma // 2
    if group == 1 and exact_top:
        return frozenset(ALIGN_ROUNDINGS)
    # one inexact term at most: a group of one product (binary64 inputs, F < 2t + 1), or of
    # two whose larger is exact
    if (group == 1 or (group == 2 and exact_top)) and cfg.align_rounding in (
            "rd", "rz_sticky") and (cfg.carry_bits is None
                                    or cfg.carry_bits >= carry_needed(cfg)):
        return frozenset(("rd", "rz_sticky"))
    return frozenset()


def _bf16_pairs_ru_same_alignment(cfg: AccumulatorConfig) -> frozenset[str]:
    """'rz' and 'rd' alignment give one unit for two-term blocks (nfma 1) of bfloat16
    products and a bfloat16 accumulator (c and d bfloat16) under a round-up final rounding
    with F >= 23 (and with a binary16 accumulator, c and d binary16, F >= 26).

    They differ only on a negative term X with bits below q = 2^(E - F) (E: the block's
    alignment exponent, set by the other, exact term Y): rd takes ceil(|X| / q) q off Y, rz
    one quantum less, and round-up tells them apart only where Y -+ ceil(|X| / q) q lands
    on the output's grid, i.e. |X| lies within q below a multiple m q of the output's ulp.
    Y the accumulator (8 bits, exponent E), X a product (16 bits at most, A * B <= 255^2):
    the ulp is 2^(E-8) or more, so |X| would need the 16 bits 2^16 - 1 (or 17) just below
    it.  Y a product (at least 2^(E-7): a normal factor times at most a subnormal's 2^-7),
    X the accumulator (8 bits, lowest bit below q): |X| < 2^(E-F+7) <= 2^(E-16) while the
    ulp of the result is at least 2^(E-15).  Neither exists; a search over random, pool and
    structured rows with accumulator.evaluate finds none either (while it tells rz from rd
    at once under rne and rz).

    The same holds with a binary16 accumulator and output (11 bits) for F >= 26.  Y the
    accumulator (exponent field E, a multiple of its ulp 2^(E-10)), X a product: the rd sum
    Y - K q lands on the grid (at least 2^(E-11) there: |X| < 255^2 q / 2 < 2^(E-11)) only
    for K >= 2^(F-11) >= 2^15, while K < |X| / q + 1 <= 255^2 / 2 + 1.  Y a product (E its
    alignment exponent, lowest bit at least 2^(E-15)), X the accumulator: a bit of X below q
    needs q > 2^-24 (binary16's quantum), so E >= 3, which no product with a subnormal
    factor reaches (2^-126 * 2^127 * 2 at most): the result, above 2^(E-1), has a grid of
    at least 2^(E-11), and K q >= 2^(E-15) needs K >= 2^(F-15) >= 2^11 quanta from an X of
    11 bits below q (K <= 2^10)."""
    wide = {"bfloat16": 23, "binary16": 26}.get(cfg.out_format)
    if (not _two_term_blocks(cfg)
            or cfg.final_rounding != "ru" or cfg.align_rounding not in ("rz", "rd")
            or cfg.in_format != "bfloat16" or cfg.b_fmt != "bfloat16"
            or cfg.scale_format is not None or cfg.out_frac_bits is not None
            or wide is None or cfg.c_format != cfg.out_format
            or cfg.frac_bits < wide):
        return frozenset()
    if cfg.carry_bits is not None and cfg.carry_bits < carry_needed(cfg):
        return frozenset()
    return frozenset(("rz", "rd"))


def observable(cfg: AccumulatorConfig, feature: str) -> bool:
    return bool(alternatives(cfg, feature))


def product_overflow_observable(cfg: AccumulatorConfig) -> bool:
    """Whether a product can reach 2^128, product_overflow's only effect: |a b| is below
    2^(emax_a + 1) 2^(emax_b + 1) (block scaling may scale it further)."""
    fa, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    return cfg.scale_format is not None or fa.emax + fb.emax + 2 > 128


def _without(cfg: AccumulatorConfig, feature: str) -> tuple:
    """cfg's fields with the one that holds ``feature`` blanked (for grouping neighbours)."""
    stage = _FLUSH_OF.get(feature)
    return tuple(tuple(s for s in cfg.flush if s != stage) if f.name == "flush" and stage
                 else None if f.name == feature else getattr(cfg, f.name)
                 for f in dataclasses.fields(cfg))


def proven_classes(configs: list[AccumulatorConfig]) -> np.ndarray:
    """Labels (0..m-1, in order of first appearance) of the classes of configurations these
    rules prove to give the same output on every input.

    Two configurations of rows without scale factors (a and b in one format or two) that
    differ in one checked feature are joined when the second's value is not among the first's
    :func:`alternatives` (or only in product_overflow, where no product reaches 2^128, or
    only in late_rounding, which no engine reads unless a fused unit adds c late); two that
    differ in several flushing stages are joined when a path adding or removing one stage
    at a time has each step proven so (the configurations on the way need not be in the
    list); two that differ only in out_frac_bits are joined where no block result is
    rounded at either width (:func:`rounding_exact`); and SFMA is joined with GPS of
    groups of one where both round the same exact products (:func:`_sfma_is_gps`); classes
    are the transitive closure (equality of outputs is transitive).  Configurations the
    rules cannot join stay apart, so a class never holds two units that some input tells
    apart, while two classes may still hold units no input tells apart.

    >>> from mmaprobe.models.config import AccumulatorConfig
    >>> late = AccumulatorConfig(in_format="e2m1", k=8, nfma=4, c_placement="late")
    >>> proven_classes([late, late.replace(neab=-2), late.replace(neab=-15),
    ...                 late.replace(nfma=8)]).tolist()      # fp4 sums are exact
    [0, 0, 1, 0]
    >>> one = AccumulatorConfig(in_format="binary16", k=16, flush=("inputs",))
    >>> proven_classes([one, one.replace(flush=("inputs", "products", "sums", "output")),
    ...                 one.replace(late_rounding="rz"), one.replace(flush=())]).tolist()
    [0, 0, 0, 1]
    """
    parent = list(range(len(configs)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for feature in CHECKED_FEATURES + ("product_overflow", "late_rounding", "zero_sign"):
        groups: dict[tuple, list[int]] = {}
        for i, cfg in enumerate(configs):
            # rows without scale factors only: the rules' equivalences are tested on them,
            # a and b in one format or two (tests/models/test_observable.py); under block
            # scaling they claim few, and those only for the checker
            if cfg.operands[1:] == (None, None):
                groups.setdefault(_without(cfg, feature), []).append(i)
        for members in groups.values():
            if len(members) < 2:
                continue
            for i in members:
                others = _observable_values(configs[i], feature)
                for j in members:
                    if (j != i and root(i) != root(j)
                            and feature_value(configs[j], feature) not in others):
                        parent[root(j)] = root(i)
    # several flushing stages apart: one stage at a time, in FLUSH_STAGES order
    groups = {}
    for i, cfg in enumerate(configs):
        if cfg.operands[1:] == (None, None):
            groups.setdefault(_without(cfg, "flush"), []).append(i)
    for members in groups.values():
        for n, i in enumerate(members):
            for j in members[n + 1:]:
                if root(i) != root(j) and _flush_path_proven(configs[i], configs[j]):
                    parent[root(j)] = root(i)
    # the output's kept precision, where every block result fits both widths (nothing is
    # rounded; a late c is added at the output format's own precision)
    groups = {}
    for i, cfg in enumerate(configs):
        if cfg.operands[1:] == (None, None) and rounding_exact(cfg):
            groups.setdefault(_without(cfg, "out_frac_bits"), []).append(i)
    for members in groups.values():
        for i in members[1:]:
            parent[root(i)] = root(members[0])
    # SFMA and GPS with groups of one product: the same chain of roundings where products
    # are exact in binary32
    gps = {dataclasses.replace(cfg, algorithm="sfma"): i for i, cfg in enumerate(configs)
           if cfg.algorithm == "gps" and cfg.nfma == 1 and not cfg.flush}
    for i, cfg in enumerate(configs):
        j = gps.get(cfg) if cfg.algorithm == "sfma" else None
        if j is not None and _sfma_is_gps(cfg):
            parent[root(j)] = root(i)
    roots = [root(i) for i in range(len(configs))]
    first: dict[int, int] = {}
    return np.array([first.setdefault(r, len(first)) for r in roots], dtype=np.int64)


def _observable_values(cfg: AccumulatorConfig, feature: str) -> tuple:
    """The values of ``feature`` some input tells from cfg's (proven_classes's rules)."""
    if feature == "product_overflow":
        return (True, False) if product_overflow_observable(cfg) else ()
    if feature == "late_rounding":
        late = cfg.algorithm == "fused" and cfg.c_placement == "late"
        return ROUNDING_MODES if late else ()
    if feature == "zero_sign":
        return () if _zero_sign_hidden(cfg) else ZERO_SIGN_RULES
    return alternatives(cfg, feature)


def _zero_sign_hidden(cfg: AccumulatorConfig) -> bool:
    """Whether zero_sign 'ieee' and 'positive' give the same outputs on every input.

    They differ only in the sign of a zero a fused block returns.  With c added late
    (fused blocks, no scale factors) the first block's accumulator is +0, and under a
    final rounding other than rd an exact zero sum of +0 with any terms is +0 under IEEE
    754's rule too (formats.exact_zero_sign), so every block passes +0 on; and no
    non-zero block sum rounds or flushes to zero when the alignment quantum of the smallest
    non-zero product, 2^(E - F) (E: its exponent fields, or its value's exponent once
    normalised; half of it with a sticky bit), is at least the output's smallest normal: a
    non-zero sum is a multiple of that in a block holding a non-zero product, and a block
    without one passes its accumulator on unchanged.
    """
    if (cfg.algorithm != "fused" or cfg.c_placement != "late" or cfg.scale_format is not None
            or cfg.final_rounding == "rd"):
        return False
    fa, fb, fout = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.out_format)
    e = fa.emin + fb.emin
    if cfg.product_normalisation == "normalised":
        e -= fa.t + fb.t
    return e - cfg.frac_bits - (cfg.align_rounding == "rz_sticky") >= fout.emin


def _sfma_is_gps(cfg: AccumulatorConfig) -> bool:
    """Whether the SFMA unit cfg computes what GPS with groups of one product computes.

    GPS ([XWYY25] Alg. 2, 3) rounds each product to binary32 (RNE), sums a group pairwise
    and adds the group to d with one RNE rounding; with groups of one that is
    d + fl32(a_k b_k).  SFMA's fused multiply-add rounds d + a_k b_k once, in the same
    order.  They agree when every product is exact in binary32 -- at most 24 significand
    bits, no bit below 2^-149, below 2^128 -- and both round to nearest even with no
    flushing (GPS flushes all four stages or none; SFMA at most the output).
    """
    fa, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    return (cfg.final_rounding == "rne" and not cfg.flush and cfg.nan != "propagate"
            and fa.p + fb.p <= _B32.p
            and (fa.emin - fa.t) + (fb.emin - fb.t) >= _B32.emin - _B32.t
            and (fa.emax + 1) + (fb.emax + 1) <= _B32.emax + 1)


def _flush_path_proven(x: AccumulatorConfig, y: AccumulatorConfig) -> bool:
    """Whether x and y, equal but for their flushing stages, give the same outputs by a path
    that adds or removes one stage at a time, each step's stage unobservable where it is
    taken (its value not among the alternatives of the configuration before it)."""
    feature_of = {stage: f for f, stage in _FLUSH_OF.items()}
    cur = x
    for stage in FLUSH_STAGES:
        if (stage in cur.flush) == (stage in y.flush):
            continue
        flush = (tuple(s for s in cur.flush if s != stage) if stage in cur.flush
                 else cur.flush + (stage,))
        try:
            nxt = cur.replace(flush=flush)
        except ConfigError:
            return False
        f = feature_of[stage]
        if feature_value(nxt, f) in alternatives(cur, f):
            return False
        cur = nxt
    return True
