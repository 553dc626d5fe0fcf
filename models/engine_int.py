"""The integer engine of the vectorised model: every configuration, exactly.

Significands are signed integers at an explicit power-of-two unit.  The engine runs on
int64 when a width bound (:func:`int_dtype`) proves that no intermediate exceeds 62 bits,
and otherwise on numpy object arrays of Python integers (binary64 products, very wide
neab): the same code, slower, still exact.

IEEE operations on two operands (late c, SFMA, GPS) use a round-to-odd reduction: the exact
sum is rounded to odd at a quantum at least four times finer than the output quantum, which
rounds to the same result in every mode (the far operand only contributes a sticky bit;
close operands are added exactly).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .config import AccumulatorConfig
from .formats import (
    Format,
    decode_array,
    exact_zero_sign,
    get_format,
    round_increment,
    rounded_zero_sign,
)
from .reference import FDRDA_DOT_BITS, GFDRDA_C_RZ_BELOW
from .reference import nan_bits as _nan_bits

#: Exponent standing for "no live term" (below every real exponent).
DEAD = -(1 << 20)

_B32 = get_format("binary32")


@functools.lru_cache(maxsize=256)
def int_dtype(cfg: AccumulatorConfig):
    """int64 when every intermediate provably fits in 62 bits, else object (Python ints)."""
    fin, fc, fout = (get_format(cfg.in_format), get_format(cfg.c_format),
                     get_format(cfg.out_format))
    fb = get_format(cfg.b_fmt)
    sig_bits = max(fin.p + fb.p, fc.p, fout.p)
    if cfg.scale_format is not None:
        sig_bits += 2 * get_format(cfg.scale_format).p
    if cfg.algorithm == "gdfs":
        # group sums at the smallest product unit, times the scale significands; aligned
        # group values stay below 2**(F + log2 G + emax_a + emax_b + 4) (see _gdfs)
        spread = (fin.emax - fin.emin) + (fb.emax - fb.emin) + fin.p + fb.p
        groups = cfg.k // cfg.nfma
        need = max(spread + log2ceil(cfg.nfma + 1) + 2 * get_format(cfg.scale_format).p,
                   cfg.frac_bits + log2ceil(cfg.nfma) + fin.emax + fb.emax + 6
                   + log2ceil(groups + 2))
        return np.int64 if need <= 61 else object
    if cfg.algorithm in ("sfma", "gps"):
        # two-operand round-to-odd sums: max(operand bits, p + 3) + 3 (see _add2)
        need = max(sig_bits, fout.p + 3) + 3
    else:
        F = cfg.frac_bits
        # aligned terms < 2**(F + 3) (sticky unit), m of them; products shifted < 2**61
        need = F + 3 + log2ceil(cfg.k + 1)
        if cfg.algorithm == "fdrda":
            need = max(F, FDRDA_DOT_BITS) + 5 + log2ceil(cfg.k + 1)
        if cfg.c_placement == "late":
            need = max(need, fc.p + 3, fout.p + 6)
        need = max(need, sig_bits + 1)
    return np.int64 if need <= 61 else object


def log2ceil(n: int) -> int:
    return max(0, math.ceil(math.log2(n)))


# -- integer helpers (int64 or object arrays) ------------------------------------------------

def _bitlen(x):
    """Bit length of non-negative integers (0 for 0), as int64."""
    if x.dtype == object:
        return _PY_BITLEN(x).astype(np.int64)
    _, e = np.frexp(x.astype(np.float64))
    e = e.astype(np.int64)
    # float(x) may have rounded up to a power of two when x >= 2**53
    e = e - ((x >> np.maximum(e - 1, 0)) == 0)
    return np.where(x == 0, 0, e)


_PY_BITLEN = np.frompyfunc(int.bit_length, 1, 1)


def _cap(s, x):
    """Clamp shift amounts at 62 for int64 data (values stay below 2**61 there)."""
    s = np.maximum(s, 0)
    return s if x.dtype == object else np.minimum(s, 62)


def _shl(x, s):
    s = np.maximum(s, 0)
    if x.dtype == object:
        return x << s.astype(object)
    return x << s


def _shr(x, s):
    if x.dtype == object:
        return x >> np.maximum(s, 0).astype(object)
    return x >> _cap(s, x)


def _floor_shift(x, s):
    """(floor(x / 2**s), inexact) for signed integers x and shifts s >= 0."""
    if x.dtype == object:
        so = np.maximum(s, 0).astype(object)
        fl = x >> so
        return fl, (x - (fl << so)) != 0
    sc = _cap(s, x)
    fl = x >> sc
    return fl, (x & ((np.int64(1) << sc) - 1)) != 0


def _to_unit(x, xunit, unit):
    """x * 2**xunit as a multiple of 2**unit (exact: requires unit <= xunit)."""
    return _shl(x, xunit - unit)


def _pick(cond, x, y):
    out = np.where(cond, x, y)
    return out if out.dtype == x.dtype or x.dtype != object else out.astype(object)


# -- decoding ---------------------------------------------------------------------------------

def _decode(fmt: Format, bits, flush: bool):
    """(special, sign, sig, exp): special 0 finite/zero, 1 inf, 2 NaN; exp as in decode."""
    sign, sig, exp, special = decode_array(fmt, bits)
    if flush:
        sub = (special == 0) & (sig != 0) & (sig < (1 << fmt.t))
        sig = np.where(sub, 0, sig)
        sign = np.where(sub, 0, sign)
    return special, sign, sig, exp


def int_product_key(cfg: AccumulatorConfig) -> tuple:
    """The memo key of run_int's products: the fields _products reads, the block order
    (which sets the columns) and the integer type."""
    return ("int", str(int_dtype(cfg)), cfg.in_format, cfg.b_fmt, "inputs" in cfg.flush,
            "products" in cfg.flush, cfg.product_normalisation, cfg.product_overflow,
            cfg.interleave == "pairs")


def _products(cfg: AccumulatorConfig, fin: Format, a, b, dt, scales=None):
    """Exact products (special, sign, sig, lsb, exp), each (n, m); exp is the alignment one.

    a is in fin, b in cfg.b_fmt; scales (block scaling) are the (n, m) scale factors of a
    and b of each product.  special: 0 finite, 1 infinite, 2 NaN, 3 a finite product that
    overflows (product_overflow; reference._products 'ovf').
    """
    flush_in = "inputs" in cfg.flush
    fb = get_format(cfg.b_fmt)
    factors = [_decode(fin, a, flush_in), _decode(fb, b, flush_in)]
    fmts = [fin, fb]
    if scales is not None:
        fs = get_format(cfg.scale_format)
        factors += [_decode(fs, scales[0], False), _decode(fs, scales[1], False)]
        fmts += [fs, fs]
    anynan = np.zeros(a.shape, bool)
    anyinf = np.zeros(a.shape, bool)
    anyzero = np.zeros(a.shape, bool)
    sign = np.zeros(a.shape, np.int64)
    sig = np.ones(a.shape, dt)
    lsb = np.zeros(a.shape, np.int64)
    exp = np.zeros(a.shape, np.int64)
    for (x, sx, mx, ex), f in zip(factors, fmts):
        anynan |= x == 2
        anyinf |= x == 1
        anyzero |= (x == 0) & (mx == 0)
        sign = sign ^ sx
        sig = sig * mx.astype(dt)
        lsb = lsb + ex - f.t
        exp = exp + ex
    special = np.where(anynan | (anyinf & anyzero), 2, np.where(anyinf, 1, 0))
    top = lsb + _bitlen(sig) - 1  # floor(log2 |p|) where sig != 0
    live = sig != 0
    if cfg.product_normalisation == "normalised":
        exp = np.where(live, top, exp)
    if cfg.product_overflow:
        special = np.where((special == 0) & live & (top >= 128), 3, special)
    if "products" in cfg.flush:
        sig = _pick(live & (top < _B32.emin), np.zeros_like(sig), sig)
    sig = _pick(special != 0, np.zeros_like(sig), sig)
    return special, sign, sig, lsb, exp


def _special_rows(spec, sign, cspec, csign):
    """FDA step 1 ([XWYY25] Sec. IV-A): NaN wins, +inf with -inf is NaN, else the infinity.

    Overflowing products (spec 3) count only in rows whose inputs hold no NaN or infinity
    (FDRDA steps 1-3, reference._specials).
    """
    pos = ((spec == 1) & (sign == 0)).any(1) | ((cspec == 1) & (csign == 0))
    neg = ((spec == 1) & (sign == 1)).any(1) | ((cspec == 1) & (csign == 1))
    nan = (spec == 2).any(1) | (cspec == 2) | (pos & neg)
    quiet = ~(nan | pos | neg)
    opos = quiet & ((spec == 3) & (sign == 0)).any(1)
    oneg = quiet & ((spec == 3) & (sign == 1)).any(1)
    nan |= opos & oneg
    pos, neg = pos | opos, neg | oneg
    inf = ~nan & (pos | neg)
    return nan, inf, neg


# -- exact rounding to an output format ----------------------------------------------------

def _round_bits(fmt: Format, total, unit, mode: str, zero_sign, p: int | None = None,
                flush: bool = False, ieee_overflow: bool = False,
                zero_rule: str = "ieee") -> np.ndarray:
    """Round total * 2**unit (total a signed integer, possibly rounded to odd) to fmt bits.

    zero_sign gives the sign of an exact zero, zero_rule (formats.rounded_zero_sign) that
    of a non-zero value rounded or flushed to zero; overflow gives infinity (the matrix
    units' way, reference._out) or follows IEEE 754 for the mode when ieee_overflow is set.
    """
    p = fmt.p if p is None else p
    neg = total < 0
    mag = _pick(neg, -total, total)
    nz = mag != 0
    E = unit + _bitlen(mag) - 1
    Ec = np.maximum(E, fmt.emin)
    sh = Ec - (p - 1) - unit  # right shift to the output quantum
    up = sh <= 0
    q = _pick(up, _shl(mag, -sh), _shr(mag, sh))
    if mode != "rz":
        r1 = np.maximum(sh - 1, 0)
        rbit = (_shr(mag, r1) & 1) != 0
        rbit &= ~up
        fl, sticky = _floor_shift(mag, r1)
        sticky &= ~up
        q = q + round_increment(mode, neg, (q & 1) != 0, rbit, sticky)
    q = np.asarray(q).astype(np.int64)
    carry = q >> p
    q = q >> carry
    Ec = Ec + carry
    sbit = neg.astype(np.uint64) << np.uint64(fmt.bits - 1)
    normal = q >= (1 << (p - 1))
    efield = np.where(normal, Ec + fmt.bias, 0).astype(np.uint64)
    frac = ((q << (fmt.p - p)) & ((1 << fmt.t) - 1)).astype(np.uint64)
    bits = sbit | (efield << np.uint64(fmt.t)) | frac
    over = Ec > fmt.emax
    inf = sbit | np.uint64(fmt.inf_bits())
    if ieee_overflow:
        to_inf = {"rne": True, "rna": True, "rz": False, "ro": False}.get(mode)
        if to_inf is None:
            to_inf = ~neg if mode == "ru" else neg
        big = sbit | np.uint64(fmt.encode(0, fmt.max_sig, fmt.emax))
        bits = np.where(over, np.where(to_inf, inf, big), bits)
    else:
        bits = np.where(over, inf, bits)
    zneg = rounded_zero_sign(zero_rule, neg) & fmt.has_negative_zero
    zero = zneg.astype(np.uint64) << np.uint64(fmt.bits - 1)
    bits = np.where(q == 0, zero, bits)
    if flush:
        bits = np.where(nz & (E < fmt.emin), zero, bits)
    zs = np.asarray(zero_sign).astype(np.uint64) << np.uint64(fmt.bits - 1)
    return np.where(nz, bits, zs)


# -- the fused sum -------------------------------------------------------------------------

def _fused_sum(cfg: AccumulatorConfig, sign, sig, lsb, exp, counts=None):
    """Align terms (n, m) at their largest exponent with F fraction bits; add them.

    Returns (total, unit, any_live, zero_sign, emax): the fixed-point sum
    total * 2**unit, whether any term is non-zero, the sign of an exact zero sum and the
    alignment exponent (reference.fused_sum).  counts marks the terms whose exponent sets
    the alignment (default: the non-zero ones).
    """
    F = cfg.frac_bits
    live = sig != 0
    any_live = live.any(1)
    counts = live if counts is None else counts
    emax = np.where(counts, exp, DEAD).max(1)
    emax = np.where(counts.any(1), emax, 0)
    q = (emax - F)[:, None]
    d = lsb - q
    left = d >= 0
    neg = sign != 0
    up = _shl(sig, _cap(d, sig))
    mag, inexact = _floor_shift(sig, -d)
    mode = cfg.align_rounding
    sticky = mode == "rz_sticky"
    if mode in ("rd", "rne"):
        # the dropped bits of a magnitude: its first bit, and any bit below it
        r1 = np.maximum(-d - 1, 0)
        rbit = ((_shr(sig, r1) & 1) != 0) & inexact
        _, below = _floor_shift(sig, r1)
        mag = mag + round_increment(mode, neg, (mag & 1) != 0, rbit, below & inexact)
    n = _pick(left, up, mag)
    if sticky:
        n = 2 * n + (~left & inexact)
    n = _pick(neg, -n, n)
    total = n.sum(1)
    if cfg.carry_bits is not None:
        width = F + 2 + cfg.carry_bits + int(sticky)
        if sig.dtype == object or width < 62:
            limit = 1 << width
            tneg = total < 0
            tmag = _pick(tneg, -total, total)
            tmag = _pick(tmag >= limit, tmag & (limit - 1), tmag)
            total = _pick(tneg, -tmag, tmag)
    zero_sign = exact_zero_sign(cfg.final_rounding, any_live, neg.any(1), neg.all(1),
                                cfg.zero_sign)
    return total, emax - F - int(sticky), any_live, zero_sign, emax


# -- IEEE two-operand sums ---------------------------------------------------------------------

def _add2(x, y, p: int):
    """Exact x + y rounded to odd at a quantum >= 4x finer than any p-bit result quantum.

    x, y are (sign, sig, lsb) with sig >= 0.  Returns (total, unit).  If the operands'
    leading bits are at most one position apart they are added exactly; otherwise the sum
    has a leading bit at least at top - 1, so a quantum 2**(top - p - 2) leaves two bits
    below the output's round position and the smaller operand enters floored, with its
    inexactness as the sticky (odd) bit.
    """
    (sx, mx, lx), (sy, my, ly) = x, y
    tx = np.where(mx != 0, lx + _bitlen(mx) - 1, DEAD)
    ty = np.where(my != 0, ly + _bitlen(my) - 1, DEAD)
    swap = ty > tx
    sa, ma, la, ta = (np.where(swap, sy, sx), _pick(swap, my, mx), np.where(swap, ly, lx),
                      np.maximum(tx, ty))
    sb, mb, lb, tb = (np.where(swap, sx, sy), _pick(swap, mx, my), np.where(swap, lx, ly),
                      np.minimum(tx, ty))
    close = ta - tb <= 1
    Q = np.where(close, np.minimum(la, lb), np.minimum(la, ta - p - 2))
    Q = np.where(ta == DEAD, 0, Q)
    A = _shl(ma, la - Q)
    A = _pick(sa != 0, -A, A)
    B = _pick(sb != 0, -mb, mb)
    Bl = _shl(B, lb - Q)
    Bf, inexact = _floor_shift(B, Q - lb)
    Bq = _pick(lb >= Q, Bl, Bf)
    inexact &= lb < Q
    total = A + Bq
    total = _pick(inexact, total | 1, total)
    return total, Q


def _ieee_add(fout: Format, x, y, mode: str, flush: bool, dt) -> np.ndarray:
    """IEEE 754 sum of two operands given as (special, sign, sig, lsb) (reference._ieee_sum)."""
    (xs, xsg, xm, xl), (ys, ysg, ym, yl) = x, y
    nan = (xs == 2) | (ys == 2) | ((xs == 1) & (ys == 1) & (xsg != ysg))
    inf = ~nan & ((xs == 1) | (ys == 1))
    inf_sign = np.where(xs == 1, xsg, ysg)
    xm = _pick(xs != 0, np.zeros_like(xm), xm).astype(dt)
    ym = _pick(ys != 0, np.zeros_like(ym), ym).astype(dt)
    total, unit = _add2((xsg, xm, xl), (ysg, ym, yl), fout.p)
    zs = exact_zero_sign(mode, (xm != 0) | (ym != 0), (xsg | ysg) != 0,
                         (xsg != 0) & (ysg != 0))
    bits = _round_bits(fout, total, unit, mode, zs, flush=flush, ieee_overflow=True)
    bits = np.where(inf, np.uint64(fout.inf_bits()) | (inf_sign.astype(np.uint64)
                                                       << np.uint64(fout.bits - 1)), bits)
    return np.where(nan, np.uint64(fout.nan_bits()), bits)


def _operand(fmt: Format, bits, flush: bool = False):
    """(special, sign, sig, lsb) of stored values."""
    spec, sign, sig, exp = _decode(fmt, bits, flush)
    return spec, sign, sig, exp - fmt.t


# -- the integer engine --------------------------------------------------------------------

def run_int(cfg: AccumulatorConfig, a, b, c, scales=None, memo: dict | None = None
            ) -> np.ndarray:
    """The integer engine; scales = (scale_a, scale_b), each (n, k/scale_block), with block
    scaling (cfg.scale_format).  ``memo``: as engine_float.block_products's, for the
    products of fused and FDRDA blocks without scales."""
    if cfg.algorithm in ("sfma", "gps"):
        fout = get_format(cfg.out_format)
        d = _sfma(cfg, a, b, c) if cfg.algorithm == "sfma" else _gps(cfg, a, b, c)
        if cfg.nan == "propagate":
            return d
        return np.where(d == np.uint64(fout.nan_bits()), np.uint64(_nan_bits(cfg, fout)), d)
    if cfg.algorithm == "gdfs":
        return _gdfs(cfg, a, b, c, scales)
    fin, fc, fout = (get_format(cfg.in_format), get_format(cfg.c_format),
                     get_format(cfg.out_format))
    a, b = in_block_order(cfg, a, b)
    n = cfg.nfma
    late = cfg.algorithm == "fused" and cfg.c_placement == "late"
    acc, acc_fmt = (np.zeros_like(c), fout) if late else (c, fc)
    prods = None
    if scales is not None:  # one column per product (interleave is 'none' with scales)
        scales = tuple(np.repeat(x, cfg.scale_block, axis=1) for x in scales)
    else:  # products are elementwise: every block's at once, shared through the memo
        key = int_product_key(cfg)
        if memo is not None and memo.get("key") == key:
            prods = memo["products"]
        else:
            prods = _products(cfg, fin, a, b, int_dtype(cfg))
            if memo is not None:
                for x in prods:
                    x.flags.writeable = False  # shared by the configurations of one memo
                memo.clear()
                memo.update(key=key, products=prods)
    for blk in range(cfg.k // n):
        sl = slice(blk * n, (blk + 1) * n)
        blk_prods = None if prods is None else tuple(x[:, sl] for x in prods)
        if cfg.algorithm == "fdrda":
            acc = _fdrda_block(cfg, fin, a[:, sl], b[:, sl], acc, blk_prods)
        else:
            acc = _fused_block(cfg, fin, fout, acc_fmt, a[:, sl], b[:, sl], acc, blk == 0,
                               None if scales is None else (scales[0][:, sl], scales[1][:, sl]),
                               blk_prods)
        acc_fmt = fout
    return _late_c(cfg, fout, fc, acc, c) if late else acc


def in_block_order(cfg: AccumulatorConfig, a, b):
    """Columns of a and b in the order the blocks take them (cfg.block_order)."""
    if cfg.interleave != "pairs":
        return a, b
    return a[:, cfg.block_order], b[:, cfg.block_order]


def _late_c(cfg, fout, fc, acc, c) -> np.ndarray:
    """c_placement='late': one IEEE addition of c to the chained blocks' output."""
    d = _ieee_add(fout, _operand(fout, acc), _operand(fc, c, "inputs" in cfg.flush),
                  cfg.late_rounding,
                  "output" in cfg.flush, int_dtype(cfg))
    # a NaN is the unit's own (canonical on NVIDIA), not the IEEE default
    return np.where(d == np.uint64(fout.nan_bits()), np.uint64(_nan_bits(cfg, fout)), d)


def _fused_block(cfg, fin, fout, acc_fmt, a, b, acc, first, scales=None, prods=None
                 ) -> np.ndarray:
    dt = int_dtype(cfg)
    flush_c = ("inputs" if first else "sums") in cfg.flush
    pspec, psign, psig, plsb, pexp = prods or _products(cfg, fin, a, b, dt, scales)
    cspec, csign, csig, cexp = _decode(acc_fmt, acc, flush_c)
    nan, inf, inf_neg = _special_rows(pspec, psign, cspec, csign)
    csig = np.where(cspec != 0, 0, csig).astype(dt)
    mode = cfg.final_rounding
    p_out = None if cfg.out_frac_bits is None else cfg.out_frac_bits + 1
    total, unit, _, zero_sign, _ = _fused_sum(
        cfg, np.column_stack([psign, csign]), _hstack(psig, csig),
        np.column_stack([plsb, cexp - acc_fmt.t]), np.column_stack([pexp, cexp]))
    d = _round_bits(fout, total, unit, mode, zero_sign, p_out,
                    "output" in cfg.flush, zero_rule=cfg.zero_sign)
    return _apply_specials(cfg, fout, d, nan, inf, inf_neg)


def _hstack(m, col):
    return np.concatenate([m, col[:, None].astype(m.dtype)], axis=1)


def _apply_specials(cfg, fout, d, nan, inf, inf_neg):
    infb = np.uint64(fout.inf_bits()) | (inf_neg.astype(np.uint64) << np.uint64(fout.bits - 1))
    d = np.where(inf, infb, d)
    return np.where(nan, np.uint64(_nan_bits(cfg, fout)), d)


def _fdrda_block(cfg, fin, a, b, acc, prods=None) -> np.ndarray:
    """CDNA3 FDRDA / GFDRDA ([XWYY25], Sec. IV-F and IV-H; reference._fdrda_block)."""
    dt = int_dtype(cfg)
    F = cfg.frac_bits
    pspec, psign, psig, plsb, pexp = prods or _products(cfg, fin, a, b, dt)
    cspec, csign, csig, cexp = _decode(_B32, acc, "inputs" in cfg.flush)
    nan, inf, inf_neg = _special_rows(pspec, psign, cspec, csign)
    csig = np.where(cspec != 0, 0, csig).astype(dt)
    if cfg.interleave == "even_odd":
        parts = []
        for h in (0, 1):
            sl = slice(h, None, 2)
            parts.append(_fused_sum(cfg, psign[:, sl], psig[:, sl], plsb[:, sl], pexp[:, sl]))
        any_dot = parts[0][2] | parts[1][2]
        e_dot = np.maximum(*[np.where(pt[2], pt[4], DEAD) for pt in parts])
        e_dot = np.where(any_dot, e_dot, 0)
        dot_unit = e_dot - F
        dot = 0
        for total, unit, live, _, _ in parts:
            fl, _ = _floor_shift(total, dot_unit - unit)  # dot_unit >= unit
            dot = dot + _pick(live, fl, np.zeros_like(fl))
    else:
        dot, dot_unit, any_dot, _, e_dot = _fused_sum(cfg, psign, psig, plsb, pexp)
    live_c = csig != 0
    e_max = np.maximum(np.where(any_dot, e_dot, DEAD), np.where(live_c, cexp, DEAD))
    e_max = np.where(any_dot | live_c, e_max, 0)
    u_dot, u_c = e_max - FDRDA_DOT_BITS, e_max - F
    unit = np.minimum(u_dot, u_c)
    # the dot product rounded down at 2**u_dot (exact when its unit is coarser)
    dfl, _ = _floor_shift(dot, u_dot - dot_unit)
    dot_r = _pick(dot_unit >= u_dot, _to_unit(dot, dot_unit, unit),
                  _to_unit(dfl, u_dot, unit))
    # c rounded at 2**u_c: down, or toward zero for GFDRDA when e_c < e_max - 25
    clsb = cexp - _B32.t
    cneg = csign != 0
    cs = _pick(cneg, -csig, csig)
    cfl, _ = _floor_shift(cs, u_c - clsb)
    if cfg.interleave == "even_odd":
        tz, _ = _floor_shift(csig, u_c - clsb)
        rz = live_c & (cexp < e_max - GFDRDA_C_RZ_BELOW)
        cfl = _pick(rz, _pick(cneg, -tz, tz), cfl)
    c_r = _pick(clsb >= u_c, _to_unit(cs, clsb, unit), _to_unit(cfl, u_c, unit))
    total = dot_r + c_r
    mode = cfg.final_rounding
    p_out = None if cfg.out_frac_bits is None else cfg.out_frac_bits + 1
    zs = exact_zero_sign(mode, any_dot | live_c, psign.any(1) | cneg, psign.all(1) & cneg,
                         cfg.zero_sign)
    d = _round_bits(_B32, total, unit, mode, zs, p_out, "output" in cfg.flush,
                    zero_rule=cfg.zero_sign)
    return _apply_specials(cfg, _B32, d, nan, inf, inf_neg)


def _sfma(cfg, a, b, c) -> np.ndarray:
    """Sequential IEEE fused multiply-adds in the output format ([XWYY25] SFMA)."""
    dt = int_dtype(cfg)
    fin, fout = get_format(cfg.in_format), get_format(cfg.out_format)
    acc, acc_fmt = c, get_format(cfg.c_format)
    plain = _PLAIN.replace(in_format=fin.name, b_format=cfg.b_format, k=1)
    for i in range(cfg.k):
        pspec, psign, psig, plsb, _ = _products(plain, fin, a[:, i:i + 1], b[:, i:i + 1], dt)
        prod = (pspec[:, 0], psign[:, 0], psig[:, 0], plsb[:, 0])
        acc_in = acc
        acc = _ieee_add(fout, _operand(acc_fmt, acc), prod, cfg.final_rounding,
                        "output" in cfg.flush, dt)
        if cfg.nan == "propagate":
            acc = _propagate_nan(fout, acc, [b[:, i], acc_in, a[:, i]])
        acc_fmt = fout
    return acc


def _propagate_nan(fmt: Format, d, operands):
    """nan='propagate' (reference.propagated_nan): a NaN result is the first NaN operand,
    quietened, or the default NaN with the sign set when no operand is NaN."""
    nan = _decode(fmt, d, False)[0] == 2
    out = np.where(nan, np.uint64(fmt.nan_bits(1)), d)
    quiet = np.uint64(1 << (fmt.t - 1 + fmt.pad))
    for x in reversed(operands):  # the first operand in the list wins
        out = np.where(nan & (_decode(fmt, x, False)[0] == 2), x | quiet, out)
    return out


#: Product decoding without flushes or overflow (SFMA and GPS products are plain IEEE).
_PLAIN = AccumulatorConfig(in_format="binary16", k=1)


def _gps(cfg, a, b, c) -> np.ndarray:
    """CDNA2 group-pairwise-sum, binary32 RNE with flushes ([XWYY25], Alg. 2 and 3)."""
    dt = int_dtype(cfg)
    fin = get_format(cfg.in_format)
    fl = bool(cfg.flush)  # CDNA2 flushes at every stage, CDNA1 nowhere (config)
    plain = _PLAIN.replace(in_format=fin.name, b_format=cfg.b_format, k=1,
                           flush=("inputs",) if fl else ())
    prods = []
    for i in range(cfg.k):
        pspec, psign, psig, plsb, _ = _products(plain, fin, a[:, i:i + 1], b[:, i:i + 1], dt)
        zero = (
            np.zeros_like(pspec[:, 0]), psign[:, 0], np.zeros_like(psig[:, 0]), plsb[:, 0])
        prods.append(_ieee_add(_B32, (pspec[:, 0], psign[:, 0], psig[:, 0], plsb[:, 0]),
                               zero, "rne", fl, dt))

    def pairwise(ps):
        if len(ps) == 1:
            return ps[0]
        h = len(ps) // 2
        return _ieee_add(_B32, _operand(_B32, pairwise(ps[:h])),
                         _operand(_B32, pairwise(ps[h:])), "rne", fl, dt)

    d = c
    G = cfg.nfma
    for k in range(0, cfg.k, G):
        g = pairwise(prods[k:k + G])
        d = _ieee_add(_B32, _operand(_B32, d, flush=fl and k == 0), _operand(_B32, g), "rne",
                      fl, dt)
    return d


def _gdfs(cfg: AccumulatorConfig, a, b, c, scales) -> np.ndarray:
    """NVIDIA Blackwell group-dot-fused-sum ([XWYY25] Sec. IV-E; reference._gdfs)."""
    dt = int_dtype(cfg)
    fin, fb, fs = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.scale_format)
    plain = cfg.replace(algorithm="fused", scale_format=None, scale_block=None)
    pspec, psign, psig, plsb, _ = _products(plain, fin, a, b, dt)
    cspec, csign, csig, cexp = _decode(_B32, c, "inputs" in cfg.flush)
    nan, inf, inf_neg = _special_rows(pspec, psign, cspec, csign)
    xsa, _, msa, esa = _decode(fs, scales[0], False)
    xsb, _, msb, esb = _decode(fs, scales[1], False)
    nan = nan | (xsa == 2).any(1) | (xsb == 2).any(1)
    inf &= ~nan
    csig = np.where(cspec != 0, 0, csig).astype(dt)
    mode, G, n = cfg.final_rounding, cfg.nfma, a.shape[0]
    u0 = (fin.emin - fin.t) + (fb.emin - fb.t)  # the smallest product unit
    groups = cfg.k // G
    gsign = np.zeros((n, groups), np.int64)
    gsig = np.zeros((n, groups), dt)
    glsb = np.zeros((n, groups), np.int64)
    gexp = np.zeros((n, groups), np.int64)
    gcount = np.zeros((n, groups), bool)
    for g in range(groups):
        sl = slice(g * G, (g + 1) * G)
        ps, pm = psign[:, sl] != 0, psig[:, sl]
        x = _shl(pm, plsb[:, sl] - u0)
        sigma = _pick(ps, -x, x).sum(1)
        j = g * G // cfg.scale_block
        v = sigma * (msa[:, j].astype(dt) * msb[:, j].astype(dt))
        vneg = v < 0
        zs = exact_zero_sign(mode, (pm != 0).any(1), ps.any(1), ps.all(1), cfg.zero_sign)
        gsign[:, g] = np.where(v != 0, vneg, zs)
        gsig[:, g] = _pick(vneg, -v, v)
        glsb[:, g] = u0 - 2 * fs.t + esa[:, j] + esb[:, j]
        gexp[:, g] = esa[:, j] + esb[:, j]
        gcount[:, g] = (msa[:, j] != 0) & (msb[:, j] != 0)
    total, unit, _, zero_sign, _ = _fused_sum(
        cfg, np.column_stack([gsign, csign]), _hstack(gsig, csig),
        np.column_stack([glsb, cexp - _B32.t]), np.column_stack([gexp, cexp]),
        counts=np.column_stack([gcount, csig != 0]))
    p_out = None if cfg.out_frac_bits is None else cfg.out_frac_bits + 1
    d = _round_bits(_B32, total, unit, mode, zero_sign, p_out, "output" in cfg.flush,
                    zero_rule=cfg.zero_sign)
    return _apply_specials(cfg, _B32, d, nan, inf, inf_neg)


