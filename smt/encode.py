"""The accumulator configuration compiled to z3 bit-vectors.

``encode(cfg, a, b, c)`` returns a z3 bit-vector term (the output format's width) computing
the output bit pattern from bit-vector terms for the inputs; it mirrors
:mod:`mmaprobe.models.reference` step by step (that module is the specification).

Encoding choices, all for solver speed:

- widths are computed per configuration: exponents live in a small signed word sized from
  the formats, the fixed-point sum in ``F + 4 + log2(terms)`` bits, each product in ``2p``;
- inputs that are bit-vector constants equal to +0 (a_i and b_i both fixed) are removed at
  Python level, so a sparse support gives a circuit over the free terms only;
- identical sub-terms (decoders, products of the same inputs) are built identically, so
  z3's hash-consing shares them between configurations encoded over the same inputs;
- leading-zero counts are logarithmic shifters, not priority chains;
- the IEEE additions (late c, SFMA, GPS) align with guard bits and a
  sticky bit instead of an exact wide register.

Encoded: every algorithm of the model ('fused' with every feature and block scaling,
'fdrda' with 'even_odd', 'sfma' with every NaN rule, 'gps' with or without flushes,
'gdfs'), a and b in different formats (b_format) and both zero-sign rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import MmaprobeError
from mmaprobe.models.formats import (
    Format,
    exact_zero_sign,
    get_format,
    round_increment,
    rounded_zero_sign,
)
from mmaprobe.models.reference import FDRDA_DOT_BITS, GFDRDA_C_RZ_BELOW

BV = z3.BitVecRef
BoolT = z3.BoolRef


class NotEncodable(MmaprobeError):
    """The configuration uses a feature the z3 encoding does not cover."""


# -- small helpers ------------------------------------------------------------------------

def _val(v: int, w: int) -> BV:
    return z3.BitVecVal(v, w)


def _fit(x: BV, w: int) -> BV:
    """Zero-extend or truncate x to width w."""
    n = x.size()
    if n == w:
        return x
    if n < w:
        return z3.ZeroExt(w - n, x)
    return z3.Extract(w - 1, 0, x)


def _sfit(x: BV, w: int) -> BV:
    """Sign-extend or truncate x to width w."""
    n = x.size()
    if n == w:
        return x
    if n < w:
        return z3.SignExt(w - n, x)
    return z3.Extract(w - 1, 0, x)


def _bit(x: BV, i: int) -> BoolT:
    return z3.Extract(i, i, x) == 1


def _is_const(x: BV) -> bool:
    return z3.is_bv_value(x)


def _max(xs: list[BV]) -> BV:
    m = xs[0]
    for x in xs[1:]:
        m = z3.If(x > m, x, m)
    return m


def _normalise(x: BV) -> tuple[BV, BV]:
    """(x shifted left until its top bit is set, the shift) by a logarithmic shifter."""
    w = x.size()
    lz = _val(0, w)
    s = 1
    while s * 2 < w:
        s *= 2
    while s >= 1:
        top_zero = z3.Extract(w - 1, w - s, x) == 0
        x = z3.If(top_zero, x << s, x)
        lz = z3.If(top_zero, lz + s, lz)
        s //= 2
    return x, lz


def _clamp_shift(amount: BV, limit: int, w: int) -> BV:
    """max(0, min(amount, limit)) of a signed exponent word, as an unsigned w-bit word."""
    ew = amount.size()
    a = z3.If(amount < 0, _val(0, ew), amount)
    a = z3.If(a > limit, _val(limit, ew), a)
    return _fit(a, w)


@dataclass
class _Round:
    """Truncation of x >> s and what was shifted out."""

    trunc: BV
    nonzero: BoolT  # any bit shifted out
    half: BoolT     # the most significant shifted-out bit
    below: BoolT    # any shifted-out bit below the half bit


def _shift_out(x: BV, s: BV) -> _Round:
    """x >> s (logical) with round/sticky information; s is unsigned of x's width."""
    w = x.size()
    one = _val(1, w)
    trunc = z3.LShR(x, s)
    mask = (one << s) - 1
    rem = x & mask
    hmask = z3.LShR(one << s, 1)  # 0 when s == 0
    half = (rem & hmask) != 0
    below = (rem & (hmask - 1) & mask) != 0
    below = z3.And(below, s != 0)
    return _Round(trunc, rem != 0, half, below)


# -- decoding --------------------------------------------------------------------------------

@dataclass
class Num:
    """A decoded operand or exact product: (-1)**sign * sig * 2**(exp - d).

    ``exp`` is the alignment exponent (signed, width EW); d is a constant per term kind.
    ``nan``/``inf`` flag special values (then the numeric fields are meaningless).
    """

    sign: BoolT
    sig: BV
    exp: BV
    d: int
    nan: BoolT
    inf: BoolT
    zero: BoolT
    #: a finite product that overflows (product_overflow): it counts only when no input is
    #: NaN or infinite (FDRDA steps 1-3, reference._specials)
    ovf: BoolT = field(default_factory=lambda: z3.BoolVal(False))

    @property
    def live(self) -> BoolT:
        return self.sig != 0


class Encoder:
    """Builds the output term of one configuration; exponent width ``ew`` is shared."""

    def __init__(self, cfg: AccumulatorConfig, ew: int | None = None):
        self.cfg = cfg
        self.fin = get_format(cfg.in_format)
        self.fb = get_format(cfg.b_fmt)
        self.fc = get_format(cfg.c_format)
        self.fout = get_format(cfg.out_format)
        self.fs = get_format(cfg.scale_format) if cfg.scale_format else None
        for f in (self.fin, self.fb, self.fc):
            if not f.signed:
                raise NotEncodable(f"unsigned format {f.name} as an operand")
        self.ew = ew if ew is not None else exponent_width(cfg)

    # -- decoding ----------------------------------------------------------------------
    def decode(self, fmt: Format, x: BV, flush: bool) -> Num:
        ew = self.ew
        if fmt.kind == "ue8m0":  # 2**(e - 127), NaN 0xff ([XWYY25] Appendix B)
            nan = x == 0xFF
            return Num(z3.BoolVal(False), z3.If(nan, _val(0, 1), _val(1, 1)),
                       _fit(x, ew) - fmt.bias, 0, nan, z3.BoolVal(False), z3.BoolVal(False))
        if fmt.kind == "ue4m3":  # the top bit is ignored ([XWYY25] GDFS step 0)
            num = self.decode(get_format("e4m3"), z3.Concat(_val(0, 1), z3.Extract(6, 0, x)),
                              False)
            return num
        body = z3.Extract(fmt.pad + fmt.bits - 1, fmt.pad, x)
        sign = _bit(body, fmt.bits - 1)
        efield = z3.Extract(fmt.t + fmt.ebits - 1, fmt.t, body)
        frac = z3.Extract(fmt.t - 1, 0, body) if fmt.t > 0 else None
        top = (1 << fmt.ebits) - 1
        normal = efield != 0
        fzero = z3.BoolVal(True) if frac is None else frac == 0
        if fmt.kind == "ieee":
            nan = z3.And(efield == top, z3.Not(fzero))
            inf = z3.And(efield == top, fzero)
        elif fmt.kind == "fn":
            nan = z3.And(efield == top, frac == (1 << fmt.t) - 1)
            inf = z3.BoolVal(False)
        elif fmt.kind == "fnuz":
            nan = body == (1 << (fmt.bits - 1))
            inf = z3.BoolVal(False)
        elif fmt.kind == "finite":
            nan = z3.BoolVal(False)
            inf = z3.BoolVal(False)
        else:
            raise NotEncodable(f"format {fmt.name}")
        hidden = z3.If(normal, _val(1, 1), _val(0, 1))
        sig = hidden if frac is None else z3.Concat(hidden, frac)
        exp = z3.If(normal, _fit(efield, ew) - fmt.bias, _val(fmt.emin, ew))
        zero = z3.And(z3.Not(normal), fzero)
        if flush:
            sub = z3.And(z3.Not(normal), z3.Not(fzero))
            sig = z3.If(sub, _val(0, fmt.p), sig)
            sign = z3.And(sign, z3.Not(sub))
            zero = z3.Or(zero, sub)
        special = z3.Or(nan, inf)
        sig = z3.If(special, _val(0, fmt.p), sig)
        return Num(sign, sig, exp, fmt.t, nan, inf, zero)

    def product(self, a: BV, b: BV, scales: tuple[BV, BV] | None = None) -> Num | None:
        """The exact product (times its block's scale factors), or None when both inputs
        are the constant +0 and there are no scale factors (dropped)."""
        cfg, fin, fb, ew = self.cfg, self.fin, self.fb, self.ew
        if (scales is None and _is_const(a) and _is_const(b) and a.as_long() == 0
                and b.as_long() == 0):
            return None
        flush_in = "inputs" in cfg.flush
        factors = [self.decode(fin, a, flush_in), self.decode(fb, b, flush_in)]
        fmts = [fin, fb]
        if scales is not None:
            factors += [self.decode(self.fs, scales[0], False),
                        self.decode(self.fs, scales[1], False)]
            fmts += [self.fs, self.fs]
        p2 = sum(f.p for f in fmts)
        sig = _val(1, p2)
        for f in factors:
            sig = sig * _fit(f.sig, p2)
        sign = factors[0].sign
        for f in factors[1:]:
            sign = z3.Xor(sign, f.sign)
        anyinf = z3.Or([f.inf for f in factors])
        nan = z3.Or(z3.Or([f.nan for f in factors]),
                    z3.And(anyinf, z3.Or([f.zero for f in factors])))
        inf = z3.And(anyinf, z3.Not(nan))
        ovf = z3.BoolVal(False)
        exp = factors[0].exp
        for f in factors[1:]:
            exp = exp + f.exp
        d = sum(f.t for f in fmts)
        need_top = (cfg.product_normalisation == "normalised" or cfg.product_overflow
                    or "products" in cfg.flush)
        if need_top:
            nsig, lz = _normalise(sig)
            # exponent of the leading bit: (exp - d) + (p2 - 1) - lz
            top = exp + (p2 - 1 - d) - _fit(lz, ew)
            live = sig != 0
            if cfg.product_overflow:
                ovf = z3.And(live, top >= 128, z3.Not(nan), z3.Not(inf))
            if "products" in cfg.flush:
                tiny = z3.And(live, top < -126)
                sig = z3.If(tiny, _val(0, p2), sig)
                nsig = z3.If(tiny, _val(0, p2), nsig)
            if cfg.product_normalisation == "normalised":
                return Num(sign, nsig, top, p2 - 1, nan, inf, sig == 0, ovf)
        return Num(sign, sig, exp, d, nan, inf, sig == 0, ovf)

    # -- the fused sum -----------------------------------------------------------------
    def fused_sum(self, terms: list[Num], static_zeros: int,
                  counts: list[BoolT] | None = None) -> tuple[BV, BV, BoolT, BoolT]:
        """(signed total, exponent of its unit, any live term, sign of an exact zero sum);
        ``static_zeros`` +0 terms were dropped before encoding; ``counts`` says which terms
        set the alignment exponent (default: the non-zero ones)."""
        cfg, ew = self.cfg, self.ew
        F = cfg.frac_bits
        sticky = cfg.align_rounding == "rz_sticky"
        signs = [t.sign for t in terms]
        any_neg = z3.Or(signs) if signs else z3.BoolVal(False)
        all_neg = z3.And(signs) if signs and not static_zeros else z3.BoolVal(False)
        if not terms:
            return (_val(0, 2), _val(0, ew), z3.BoolVal(False),
                    exact_zero_sign(cfg.final_rounding, z3.BoolVal(False), any_neg, all_neg,
                                    cfg.zero_sign))
        low = _val(-(1 << (ew - 2)), ew)
        counts = [t.live for t in terms] if counts is None else counts
        emax = _max([z3.If(n, t.exp, low) for t, n in zip(terms, counts)])
        ws = F + 4 + int(sticky) + len(terms).bit_length() + 1
        total = _val(0, ws)
        for t in terms:
            l0 = max(0, F - t.d)
            extra = max(0, t.d - F)
            wr = t.sig.size() + l0 + 1
            r = _fit(t.sig, wr) << l0 if l0 else _fit(t.sig, wr)
            shift = emax - t.exp + extra
            s = _clamp_shift(shift, wr, wr)
            ro = _shift_out(r, s)
            if sticky:
                mag = _fit(ro.trunc, ws) * 2 + z3.If(ro.nonzero, _val(1, ws), _val(0, ws))
            else:
                inc = round_increment(cfg.align_rounding, t.sign, _bit(ro.trunc, 0), ro.half,
                                      ro.below)
                mag = _fit(ro.trunc, ws) + z3.If(inc, _val(1, ws), _val(0, ws))
            total = total + z3.If(t.sign, -mag, mag)
        if cfg.carry_bits is not None:
            lim = F + 2 + cfg.carry_bits + int(sticky)
            if lim < ws - 1:
                neg_t = total < 0
                mag = z3.If(neg_t, -total, total)
                wrapped = _fit(z3.Extract(lim - 1, 0, mag), ws)
                total = z3.If(neg_t, -wrapped, wrapped)
        unit = emax - (F + int(sticky))
        live = z3.Or([t.live for t in terms])
        return total, unit, live, exact_zero_sign(cfg.final_rounding, live, any_neg, all_neg,
                                                  cfg.zero_sign)

    # -- rounding to a format ------------------------------------------------------------
    def round_to(self, fmt: Format, total: BV, unit: BV, mode: str, prec: int | None,
                 overflow: str, flush: bool, zero_sign: BoolT, zero_rule: str = "ieee") -> BV:
        """Bits of total * 2**unit rounded to fmt (precision prec); total is signed.

        overflow 'inf': the matrix units' way (reference._out); 'ieee': IEEE 754 by mode.
        A zero total gives the zero of sign zero_sign; an underflow to zero takes
        formats.rounded_zero_sign(zero_rule, sign of x).
        """
        ew = self.ew
        p = fmt.p if prec is None else prec
        neg = total < 0
        mag = z3.If(neg, -total, total)
        wm = max(total.size(), p + 2)
        mag = _fit(mag, wm)
        mn, lz = _normalise(mag)
        e = unit + (wm - 1) - _fit(lz, ew)
        sub = e < fmt.emin
        e1 = z3.If(sub, _val(fmt.emin, ew), e)
        r_amt = (wm - p) + z3.If(sub, _val(fmt.emin, ew) - e, _val(0, ew))
        s = _clamp_shift(r_amt, wm, wm)
        ro = _shift_out(mn, s)
        p1 = p + 1
        trunc = _fit(ro.trunc, p1)
        inc = round_increment(mode, neg, _bit(ro.trunc, 0), ro.half, ro.below)
        sig = trunc + z3.If(inc, _val(1, p1), _val(0, p1))
        carry = _bit(sig, p)
        sig = z3.If(carry, z3.LShR(sig, 1), sig)
        e2 = z3.If(carry, e1 + 1, e1)
        sig = _fit(sig, p)
        width = fmt.width
        sbit = fmt.bits - 1

        def with_sign(body: BV, sgn: BoolT) -> BV:
            return z3.If(sgn, body | (1 << sbit), body)

        zero_pos = _val(0, width)
        inf_body = _val(((1 << fmt.ebits) - 1) << fmt.t, width)
        max_body = _val((((1 << fmt.ebits) - 2) << fmt.t) | ((1 << fmt.t) - 1), width)
        full = _fit(sig, fmt.p) << (fmt.p - p) if fmt.p > p else _fit(sig, fmt.p)
        is_norm = _bit(full, fmt.t)
        efield = z3.If(is_norm, _fit(e2 + fmt.bias, fmt.ebits), _val(0, fmt.ebits))
        frac = z3.Extract(fmt.t - 1, 0, full)
        body = _fit(z3.Concat(efield, frac), width)
        finite = with_sign(body, neg)
        if overflow == "inf":
            to_inf = z3.BoolVal(True)
        else:
            if mode in ("rne", "rna"):
                to_inf = z3.BoolVal(True)
            elif mode == "ru":
                to_inf = z3.Not(neg)
            elif mode == "rd":
                to_inf = neg
            else:
                to_inf = z3.BoolVal(False)
        over = with_sign(z3.If(to_inf, inf_body, max_body), neg)
        out = z3.If(e2 > fmt.emax, over, finite)
        zneg = rounded_zero_sign(zero_rule, neg)
        out = z3.If(sig == 0, with_sign(zero_pos, zneg), out)
        if flush:
            out = z3.If(sub, with_sign(zero_pos, zneg), out)
        return z3.If(total == 0, with_sign(zero_pos, zero_sign), out)

    def nan_out(self, fmt: Format) -> BV:
        if self.cfg.nan == "canonical":
            return _val((1 << (fmt.bits - 1)) - 1, fmt.width)
        return _val(fmt.nan_bits(), fmt.width)

    def inf_out(self, fmt: Format, sign: BoolT) -> BV:
        return z3.If(sign, _val(fmt.inf_bits(1), fmt.width), _val(fmt.inf_bits(0), fmt.width))

    # -- IEEE sum of operands, rounded once ------------------------------------------------
    def ieee_sum(self, fout: Format, ops: list[Num], mode: str, flush: bool) -> BV:
        """One IEEE operation: the exact sum of ops (numbers or exact products) rounded once.

        NaN results are fout's default NaN (reference._ieee_sum).
        """
        ew = self.ew
        nan = z3.Or([o.nan for o in ops])
        infp = z3.Or([z3.And(o.inf, z3.Not(o.sign)) for o in ops])
        infn = z3.Or([z3.And(o.inf, o.sign) for o in ops])
        nan = z3.Or(nan, z3.And(infp, infn))
        # Align to the largest exponent with guard bits, one extra bit for the sticky.
        dmax = max(o.d for o in ops)
        g = dmax + fout.p + 4
        lows = [z3.If(o.live, o.exp, _val(-(1 << (ew - 2)), ew)) for o in ops]
        emax = _max(lows)
        ws = g + 3 + len(ops).bit_length() + 1
        total = _val(0, ws)
        for o in ops:
            wr = o.sig.size() + (g - o.d) + 1
            r = _fit(o.sig, wr) << (g - o.d + 1)  # value sig * 2**(e - d) at unit 2**(E-g-1)
            s = _clamp_shift(emax - o.exp, wr, wr)
            ro = _shift_out(r, s)
            mag = _fit(ro.trunc | z3.If(ro.nonzero, _val(1, wr), _val(0, wr)), ws)
            total = total + z3.If(o.sign, -mag, mag)
        unit = emax - (g + 1)
        zs = exact_zero_sign(mode, z3.Or([o.live for o in ops]), z3.Or([o.sign for o in ops]),
                             z3.And([o.sign for o in ops]))
        val = self.round_to(fout, total, unit, mode, None, "ieee", flush, zs)
        val = z3.If(infp, _val(fout.inf_bits(0), fout.width), val)
        val = z3.If(infn, _val(fout.inf_bits(1), fout.width), val)
        return z3.If(nan, _val(fout.nan_bits(), fout.width), val)

    def operand(self, fmt: Format, x: BV) -> Num:
        return self.decode(fmt, x, False)

    # -- blocks ------------------------------------------------------------------------------
    def _specials(self, items: list[Num]) -> tuple[BoolT, BoolT, BoolT]:
        nan = z3.Or([t.nan for t in items])
        infp = z3.Or([z3.And(t.inf, z3.Not(t.sign)) for t in items])
        infn = z3.Or([z3.And(t.inf, t.sign) for t in items])
        # overflowing products count only where no input is special (FDRDA steps 1-3)
        quiet = z3.Not(z3.Or(nan, infp, infn))
        op = z3.And(quiet, z3.Or([z3.And(t.ovf, z3.Not(t.sign)) for t in items]))
        on = z3.And(quiet, z3.Or([z3.And(t.ovf, t.sign) for t in items]))
        infp, infn = z3.Or(infp, op), z3.Or(infn, on)
        return z3.Or(nan, z3.And(infp, infn)), infp, infn

    def fused_block(self, a: list[BV], b: list[BV], acc: BV, acc_fmt: Format,
                    first: bool, scales: list[tuple[BV, BV]] | None = None) -> BV:
        cfg, fout = self.cfg, self.fout
        flush_c = ("inputs" in cfg.flush) if first else ("sums" in cfg.flush)
        prods: list[Num | None] = [self.product(x, y, None if scales is None else scales[i])
                                   for i, (x, y) in enumerate(zip(a, b))]
        live_prods = [p for p in prods if p is not None]
        if not live_prods and acc_fmt == fout and cfg.frac_bits >= fout.t and (
                cfg.out_frac_bits is None or not first):
            return self._empty_block(acc, flush_c)
        cterm = self.decode(acc_fmt, acc, flush_c)
        nan, infp, infn = self._specials(live_prods + [cterm])
        mode = cfg.final_rounding
        terms = live_prods + [cterm]
        total, unit, _, zs = self.fused_sum(terms, len(prods) - len(live_prods))
        d = self.round_to(fout, total, unit, mode, _prec(cfg.out_frac_bits), "inf",
                          "output" in cfg.flush, zs, cfg.zero_sign)
        d = z3.If(z3.Or(infp, infn), self.inf_out(fout, infn), d)
        return z3.If(nan, self.nan_out(fout), d)

    def _empty_block(self, acc: BV, flush_c: bool) -> BV:
        """A block whose products are all constant +0: the accumulator passes through.

        Its c term is exact at alignment (F >= t) and already representable, so the block
        only maps NaN to the unit's NaN, zeros (and flushed subnormals) to +0 (the +0
        products make the all-zero sign positive) and flushes a subnormal output.
        """
        fout = self.fout
        x = self.decode(fout, acc, False)
        subnormal = z3.And(z3.Not(x.nan), z3.Not(x.inf), z3.Not(x.zero),
                           z3.Extract(fout.t + fout.ebits - 1, fout.t, acc) == 0)
        res = acc
        if "output" in self.cfg.flush:
            res = z3.If(subnormal, z3.If(x.sign, _val(fout.zero_bits(1), fout.width),
                                         _val(0, fout.width)), res)
        if "output" in self.cfg.flush and self.cfg.zero_sign == "positive":
            res = z3.If(subnormal, _val(0, fout.width), res)
        gone = z3.Or(x.zero, subnormal) if flush_c else x.zero
        res = z3.If(gone, _val(0, fout.width), res)
        return z3.If(x.nan, self.nan_out(fout), res)

    def _ieee_product(self, x: BV, y: BV, flush_inputs: bool) -> Num:
        fin, fb = self.fin, self.fb
        u = self.decode(fin, x, flush_inputs)
        v = self.decode(fb, y, flush_inputs)
        p2 = fin.p + fb.p
        sig = _fit(u.sig, p2) * _fit(v.sig, p2)
        nan = z3.Or(u.nan, v.nan, z3.And(u.inf, v.zero), z3.And(u.zero, v.inf))
        inf = z3.And(z3.Or(u.inf, v.inf), z3.Not(nan))
        return Num(z3.Xor(u.sign, v.sign), sig, u.exp + v.exp, fin.t + fb.t, nan, inf,
                   sig == 0)

    def sfma(self, a: list[BV], b: list[BV], c: BV) -> BV:
        cfg, fout = self.cfg, self.fout
        acc, acc_fmt = c, self.fc
        for x, y in zip(a, b):
            prod = self._ieee_product(x, y, False)
            acc_in = acc
            acc = self.ieee_sum(fout, [self.operand(acc_fmt, acc), prod], cfg.final_rounding,
                                "output" in cfg.flush)
            if cfg.nan == "propagate":
                # one format throughout (config): b_k, then the accumulator, then a_k,
                # quietened; an invalid operation gives the default NaN with the sign set
                quiet = _val(1 << (fout.t - 1 + fout.pad), fout.width)
                pick = _val(fout.nan_bits(1), fout.width)
                for op in (x, acc_in, y):  # a_k, acc, b_k: the last If (b_k) wins
                    pick = z3.If(self.operand(fout, op).nan, op | quiet, pick)
                acc = z3.If(self.operand(fout, acc).nan, pick, acc)
            acc_fmt = fout
        return acc

    def gps(self, a: list[BV], b: list[BV], c: BV) -> BV:
        cfg = self.cfg
        f32 = get_format("binary32")
        fl = bool(cfg.flush)  # CDNA2: every stage; CDNA1: none (config)
        prods = [self.ieee_sum(f32, [self._ieee_product(x, y, fl)], "rne", fl)
                 for x, y in zip(a, b)]

        def pairwise(ps: list[BV]) -> BV:
            if len(ps) == 1:
                return ps[0]
            h = len(ps) // 2
            return self.ieee_sum(f32, [self.operand(f32, pairwise(ps[:h])),
                                       self.operand(f32, pairwise(ps[h:]))], "rne", fl)

        dbits = c
        if fl:
            d = self.decode(f32, c, True)
            # flush_in keeps the bits of non-subnormal c, including specials
            dbits = z3.If(z3.And(d.zero, z3.Extract(30, 0, c) != 0), _val(0, 32), c)
        g = cfg.nfma
        for k in range(0, cfg.k, g):
            grp = pairwise(prods[k:k + g])
            dbits = self.ieee_sum(f32, [self.operand(f32, dbits), self.operand(f32, grp)],
                                  "rne", fl)
        return dbits

    # -- AMD CDNA3 FDRDA / GFDRDA ------------------------------------------------------------
    def fdrda_block(self, a: list[BV], b: list[BV], acc: BV) -> BV:
        """One FDRDA (GFDRDA with interleave 'even_odd') block ([XWYY25] Sec. IV-F..I;
        reference._fdrda_block): the dot product fused at F bits (even and odd products
        separately for GFDRDA, then rounded down at F bits), rounded down at 31 fraction
        bits of e_max, c rounded down (toward zero for GFDRDA when e_c < e_max - 25) at F
        bits, summed and rounded once."""
        cfg, ew = self.cfg, self.ew
        f32 = get_format("binary32")
        F = cfg.frac_bits
        W = max(FDRDA_DOT_BITS, F)
        sticky = cfg.align_rounding == "rz_sticky"
        prods = [self.product(x, y) for x, y in zip(a, b)]
        live_prods = [p for p in prods if p is not None]
        cterm = self.decode(f32, acc, "inputs" in cfg.flush)
        nan, infp, infn = self._specials(live_prods + [cterm])
        low = _val(-(1 << (ew - 2)), ew)
        # the dot product as a signed integer at unit dot_u, and its alignment exponent
        if cfg.interleave == "even_odd":
            parts = []
            for g in (0, 1):
                grp = [p for i, p in enumerate(prods) if i % 2 == g and p is not None]
                if not grp:
                    continue
                zeros = sum(1 for i, p in enumerate(prods) if i % 2 == g and p is None)
                tot, unit, lv, _ = self.fused_sum(grp, zeros)
                parts.append((tot, unit + (F + int(sticky)), lv, unit))
            if parts:
                any_dot = z3.Or([lv for _, _, lv, _ in parts])
                e_dot = _max([z3.If(lv, e, low) for _, e, lv, _ in parts])
                wd = max(t.size() for t, _, _, _ in parts) + 2
                dot = _val(0, wd)
                for tot, _, lv, unit in parts:
                    # floor(part / 2**(e_dot - F)); the part's unit is e_g - F (- sticky)
                    s = _clamp_shift(e_dot - F - unit, wd, wd)
                    fl = _sfit(tot, wd) >> s
                    dot = dot + z3.If(lv, fl, _val(0, wd))
                dot_u = e_dot - F
            else:
                any_dot, e_dot, dot, dot_u = z3.BoolVal(False), low, _val(0, 2), _val(0, ew)
        else:
            zeros = len(prods) - len(live_prods)
            if live_prods:
                dot, dot_u, any_dot, _ = self.fused_sum(live_prods, zeros)
                e_dot = dot_u + (F + int(sticky))
            else:
                any_dot, e_dot, dot, dot_u = z3.BoolVal(False), low, _val(0, 2), _val(0, ew)
        live_c = cterm.live
        e_max = _max([z3.If(any_dot, e_dot, low), z3.If(live_c, cterm.exp, low)])
        U = e_max - W  # the unit of the sum
        wt = max(dot.size() + W - F + 3, W + 6, cterm.sig.size() + W + 3)
        # dot rounded down at 2**(e_max - 31), expressed at unit U = e_max - W
        dot_w = _sfit(dot, wt)
        r = (e_max - FDRDA_DOT_BITS) - dot_u
        dot_left = dot_w << _clamp_shift(dot_u - U, wt, wt)
        dot_fl = (dot_w >> _clamp_shift(r, wt, wt)) << (W - FDRDA_DOT_BITS)
        dot_r = z3.If(r <= 0, dot_left, dot_fl)
        dot_r = z3.If(any_dot, dot_r, _val(0, wt))
        # c rounded at 2**(e_max - F): down, or toward zero for GFDRDA far below e_max
        cmag = _fit(cterm.sig, wt)
        c_lsb = cterm.exp - f32.t
        c_up = c_lsb - (e_max - F)
        cs = z3.If(cterm.sign, -cmag, cmag)
        c_left = cs << _clamp_shift(c_up, wt, wt)
        sh = _clamp_shift(-c_up, wt, wt)
        c_floor = cs >> sh
        if cfg.interleave == "even_odd":
            tz = z3.LShR(cmag, sh)
            c_tz = z3.If(cterm.sign, -tz, tz)
            rz = z3.And(live_c, cterm.exp < e_max - GFDRDA_C_RZ_BELOW)
            c_floor = z3.If(rz, c_tz, c_floor)
        c_r = z3.If(c_up >= 0, c_left, c_floor)
        c_r = c_r << (W - F)  # unit e_max - F -> unit U
        c_r = z3.If(live_c, c_r, _val(0, wt))
        total = dot_r + c_r
        signs = [p.sign for p in live_prods]
        any_neg = z3.Or(signs + [cterm.sign])
        all_neg = (z3.And(signs + [cterm.sign])
                   if len(live_prods) == len(prods) else z3.BoolVal(False))
        zs = exact_zero_sign(cfg.final_rounding, z3.Or(any_dot, live_c), any_neg, all_neg,
                             cfg.zero_sign)
        d = self.round_to(f32, total, U, cfg.final_rounding, _prec(cfg.out_frac_bits), "inf",
                          "output" in cfg.flush, zs, cfg.zero_sign)
        d = z3.If(z3.Or(infp, infn), self.inf_out(f32, infn), d)
        return z3.If(nan, self.nan_out(f32), d)

    # -- NVIDIA Blackwell GDFS ------------------------------------------------------------------
    def gdfs(self, a: list[BV], b: list[BV], c: BV, sa: list[BV], sb: list[BV]) -> BV:
        """Group-dot-fused-sum ([XWYY25] Sec. IV-E; reference._gdfs): exact group sums
        times their scale factors, aligned at the scale factors' exponents with c."""
        cfg, fin, fb, fs = self.cfg, self.fin, self.fb, self.fs
        f32 = get_format("binary32")
        G, mode = cfg.nfma, cfg.final_rounding
        flush_in = "inputs" in cfg.flush
        cterm = self.decode(f32, c, flush_in)
        u0 = (fin.emin - fin.t) + (fb.emin - fb.t)  # the smallest product unit
        span = (fin.emax - fin.emin) + (fb.emax - fb.emin) + 4
        wg = fin.p + fb.p + span + G.bit_length() + 2  # a group sum, signed
        wv = wg + 2 * fs.p
        items: list[Num] = [cterm]
        groups: list[Num] = []
        counts: list[BoolT] = []
        scale_nan = []
        for g in range(cfg.k // G):
            sigma = _val(0, wg)
            signs, lives = [], []
            for i in range(g * G, (g + 1) * G):
                x = self.decode(fin, a[i], flush_in)
                y = self.decode(fb, b[i], flush_in)
                psig = _fit(x.sig, wg) * _fit(y.sig, wg)
                sgn = z3.Xor(x.sign, y.sign)
                nan = z3.Or(x.nan, y.nan, z3.And(x.inf, y.zero), z3.And(x.zero, y.inf))
                inf = z3.And(z3.Or(x.inf, y.inf), z3.Not(nan))
                items.append(Num(sgn, psig, x.exp + y.exp, fin.t + fb.t, nan, inf, psig == 0))
                # value psig * 2**(e_a + e_b - t_a - t_b) at unit 2**u0
                sh = _clamp_shift(x.exp + y.exp - (fin.t + fb.t) - u0, wg, wg)
                mag = psig << sh
                sigma = sigma + z3.If(sgn, -mag, mag)
                signs.append(sgn)
                lives.append(psig != 0)
            j = g * G // cfg.scale_block
            ua, ub = self.decode(fs, sa[j], False), self.decode(fs, sb[j], False)
            scale_nan += [ua.nan, ub.nan]
            neg = sigma < 0
            smag = _fit(z3.If(neg, -sigma, sigma), wv)
            v = smag * _fit(ua.sig, wv) * _fit(ub.sig, wv)
            zs = exact_zero_sign(mode, z3.Or(lives), z3.Or(signs), z3.And(signs),
                                 cfg.zero_sign)
            sgn = z3.If(v != 0, neg, zs)
            # value v * 2**(u0 - 2 t_s + e_sa + e_sb): exponent e_sa + e_sb, d = 2 t_s - u0
            groups.append(Num(sgn, v, ua.exp + ub.exp, 2 * fs.t - u0, z3.BoolVal(False),
                              z3.BoolVal(False), v == 0))
            counts.append(z3.And(ua.sig != 0, ub.sig != 0))
        nan, infp, infn = self._specials(items)
        nan = z3.Or(nan, z3.Or(scale_nan))
        total, unit, _, zs = self.fused_sum(groups + [cterm], 0, counts + [cterm.live])
        d = self.round_to(f32, total, unit, mode, _prec(cfg.out_frac_bits), "inf",
                          "output" in cfg.flush, zs, cfg.zero_sign)
        d = z3.If(z3.Or(infp, infn), self.inf_out(f32, infn), d)
        return z3.If(nan, self.nan_out(f32), d)

    def output(self, a: list[BV], b: list[BV], c: BV,
               scales: tuple[list[BV], list[BV]] | None = None) -> BV:
        cfg = self.cfg
        if len(a) != cfg.k or len(b) != cfg.k:
            raise ValueError(f"expected k={cfg.k} terms in a and b")
        if (cfg.scale_format is None) != (scales is None) or (
                scales is not None and not len(scales[0]) == len(scales[1]) == cfg.scales):
            raise ValueError(f"expected {cfg.scales} scale factors each for a and b")
        if cfg.algorithm in ("sfma", "gps"):
            d = self.sfma(a, b, c) if cfg.algorithm == "sfma" else self.gps(a, b, c)
            if cfg.nan == "propagate":
                return d
            return z3.If(self.operand(self.fout, d).nan, self.nan_out(self.fout), d)
        if cfg.algorithm == "gdfs":
            assert scales is not None
            return self.gdfs(a, b, c, scales[0], scales[1])
        per = None
        if scales is not None:  # interleave is 'none' with scales: product i, block i // S
            per = [(scales[0][i // cfg.scale_block], scales[1][i // cfg.scale_block])
                   for i in range(cfg.k)]
        order = cfg.block_order
        a, b = [a[i] for i in order], [b[i] for i in order]
        n = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
        late = cfg.algorithm == "fused" and cfg.c_placement == "late"
        fout = self.fout
        acc, acc_fmt = (_val(fout.zero_bits(0), fout.width), fout) if late else (c, self.fc)
        for blk in range(cfg.k // n):
            lo = blk * n
            if cfg.algorithm == "fdrda":
                acc = self.fdrda_block(a[lo:lo + n], b[lo:lo + n], acc)
            else:
                acc = self.fused_block(a[lo:lo + n], b[lo:lo + n], acc, acc_fmt, blk == 0,
                                       None if per is None else per[lo:lo + n])
            acc_fmt = fout
        if late:
            # c joins once, after the chain, by one IEEE addition; NaN is the unit's own
            # a late c is an input: flushed to +0 when subnormal and inputs flush
            d = self.ieee_sum(fout, [self.operand(fout, acc),
                                     self.decode(self.fc, c, "inputs" in cfg.flush)],
                              cfg.late_rounding, "output" in cfg.flush)
            x = self.operand(fout, d)
            acc = z3.If(x.nan, self.nan_out(fout), d)
        return acc


def _prec(out_frac_bits: int | None) -> int | None:
    return None if out_frac_bits is None else out_frac_bits + 1


def exponent_width(cfg: AccumulatorConfig) -> int:
    """Signed width holding every exponent the encoding of cfg computes."""
    bound = 0
    names = [cfg.in_format, cfg.b_fmt, cfg.c_format, cfg.out_format]
    for name in names:
        f = get_format(name)
        bound = max(bound, 2 * (abs(f.emin) + f.t + 2), 2 * (f.emax + 2))
    bound += 2 * (cfg.frac_bits + get_format(cfg.in_format).p + get_format(cfg.b_fmt).p + 64)
    if cfg.scale_format is not None:
        fs = get_format(cfg.scale_format)
        bound += 4 * (abs(fs.emin) + fs.emax + fs.t + 4)
    return bound.bit_length() + 2


def shared_exponent_width(cfgs: list[AccumulatorConfig]) -> int:
    return max(exponent_width(c) for c in cfgs)


def check_encodable(cfg: AccumulatorConfig) -> None:
    Encoder(cfg)


def inputs(cfg: AccumulatorConfig, tag: str = "") -> tuple[list[BV], list[BV], BV]:
    """Fresh symbolic inputs a_i (in_format width), b_i (b_format width), c (c_format)."""
    fin, fb, fc = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.c_format)
    a = [z3.BitVec(f"a{i}{tag}", fin.width) for i in range(cfg.k)]
    b = [z3.BitVec(f"b{i}{tag}", fb.width) for i in range(cfg.k)]
    return a, b, z3.BitVec(f"c{tag}", fc.width)


def scale_inputs(cfg: AccumulatorConfig, tag: str = "") -> tuple[list[BV], list[BV]] | None:
    """Fresh symbolic scale factors of a and b (block scaling), or None without it."""
    if cfg.scale_format is None:
        return None
    w = get_format(cfg.scale_format).width
    return ([z3.BitVec(f"sa{j}{tag}", w) for j in range(cfg.scales)],
            [z3.BitVec(f"sb{j}{tag}", w) for j in range(cfg.scales)])


def encode(cfg: AccumulatorConfig, a: list[BV], b: list[BV], c: BV,
           ew: int | None = None, scales: tuple[list[BV], list[BV]] | None = None) -> BV:
    """The output bit pattern of cfg as a z3 term over the input terms a, b, c (and the
    scale factors of a and b with block scaling)."""
    return Encoder(cfg, ew).output(list(a), list(b), c, scales)
