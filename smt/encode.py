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

Encoded algorithms: 'fused' (all features), 'sfma' and 'gps'.  'fdrda' (CDNA3) raises
:class:`NotEncodable`.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import MmaprobeError
from mmaprobe.models.formats import Format, exact_zero_sign, get_format, round_increment

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

    @property
    def live(self) -> BoolT:
        return self.sig != 0


class Encoder:
    """Builds the output term of one configuration; exponent width ``ew`` is shared."""

    def __init__(self, cfg: AccumulatorConfig, ew: int | None = None):
        if cfg.algorithm == "fdrda":
            raise NotEncodable(
                "algorithm 'fdrda' (AMD CDNA3 FDRDA/GFDRDA) is not encodable in the z3 "
                "encoding; supported algorithms: fused, sfma, gps")
        self.cfg = cfg
        self.fin = get_format(cfg.in_format)
        self.fc = get_format(cfg.c_format)
        self.fout = get_format(cfg.out_format)
        for f in (self.fin, self.fc):
            if not f.signed:
                raise NotEncodable(f"unsigned format {f.name} as an operand")
        self.ew = ew if ew is not None else exponent_width(cfg)

    # -- decoding ----------------------------------------------------------------------
    def decode(self, fmt: Format, x: BV, flush: bool) -> Num:
        ew = self.ew
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

    def product(self, a: BV, b: BV) -> Num | None:
        """The exact product, or None when both inputs are the constant +0 (dropped)."""
        cfg, fin, ew = self.cfg, self.fin, self.ew
        if _is_const(a) and _is_const(b) and a.as_long() == 0 and b.as_long() == 0:
            return None
        flush_in = "inputs" in cfg.flush
        x = self.decode(fin, a, flush_in)
        y = self.decode(fin, b, flush_in)
        p2 = 2 * fin.p
        sig = _fit(x.sig, p2) * _fit(y.sig, p2)
        sign = z3.Xor(x.sign, y.sign)
        nan = z3.Or(x.nan, y.nan, z3.And(x.inf, y.zero), z3.And(x.zero, y.inf))
        inf = z3.And(z3.Or(x.inf, y.inf), z3.Not(nan))
        exp = x.exp + y.exp
        d = 2 * fin.t
        need_top = (cfg.product_normalisation == "normalised" or cfg.product_overflow
                    or "products" in cfg.flush)
        if need_top:
            nsig, lz = _normalise(sig)
            # exponent of the leading bit: (exp - 2t) + (2p - 1) - lz
            top = exp + (p2 - 1 - d) - _fit(lz, ew)
            live = sig != 0
            if cfg.product_overflow:
                ovf = z3.And(live, top >= 128)
                inf = z3.Or(inf, z3.And(ovf, z3.Not(nan)))
            if "products" in cfg.flush:
                tiny = z3.And(live, top < -126)
                sig = z3.If(tiny, _val(0, p2), sig)
                nsig = z3.If(tiny, _val(0, p2), nsig)
            if cfg.product_normalisation == "normalised":
                return Num(sign, nsig, top, p2 - 1, nan, inf, sig == 0)
        return Num(sign, sig, exp, d, nan, inf, sig == 0)

    # -- the fused sum -----------------------------------------------------------------
    def fused_sum(self, terms: list[Num], static_zeros: int) -> tuple[BV, BV, BoolT, BoolT]:
        """(signed total, exponent of its unit, any live term, sign of an exact zero sum);
        ``static_zeros`` +0 terms were dropped before encoding."""
        cfg, ew = self.cfg, self.ew
        F = cfg.frac_bits
        sticky = cfg.align_rounding == "rz_sticky"
        signs = [t.sign for t in terms]
        any_neg = z3.Or(signs) if signs else z3.BoolVal(False)
        all_neg = z3.And(signs) if signs and not static_zeros else z3.BoolVal(False)
        if not terms:
            return (_val(0, 2), _val(0, ew), z3.BoolVal(False),
                    exact_zero_sign(cfg.final_rounding, z3.BoolVal(False), any_neg, all_neg))
        low = _val(-(1 << (ew - 2)), ew)
        emax = _max([z3.If(t.live, t.exp, low) for t in terms])
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
        return total, unit, live, exact_zero_sign(cfg.final_rounding, live, any_neg, all_neg)

    # -- rounding to a format ------------------------------------------------------------
    def round_to(self, fmt: Format, total: BV, unit: BV, mode: str, prec: int | None,
                 overflow: str, flush: bool, zero_sign: BoolT) -> BV:
        """Bits of total * 2**unit rounded to fmt (precision prec); total is signed.

        overflow 'inf': the matrix units' way (reference._out); 'ieee': IEEE 754 by mode.
        A zero total gives the zero of sign zero_sign; an underflow to zero keeps x's sign.
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
        out = z3.If(sig == 0, with_sign(zero_pos, neg), out)
        if flush:
            out = z3.If(sub, with_sign(zero_pos, neg), out)
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
        return z3.Or(nan, z3.And(infp, infn)), infp, infn

    def fused_block(self, a: list[BV], b: list[BV], acc: BV, acc_fmt: Format,
                    first: bool) -> BV:
        cfg, fout = self.cfg, self.fout
        flush_c = ("inputs" in cfg.flush) if first else ("sums" in cfg.flush)
        prods: list[Num | None] = [self.product(x, y) for x, y in zip(a, b)]
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
                          "output" in cfg.flush, zs)
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
        gone = z3.Or(x.zero, subnormal) if flush_c else x.zero
        res = z3.If(gone, _val(0, fout.width), res)
        return z3.If(x.nan, self.nan_out(fout), res)

    def _ieee_product(self, x: BV, y: BV, flush_inputs: bool) -> Num:
        fin = self.fin
        u = self.decode(fin, x, flush_inputs)
        v = self.decode(fin, y, flush_inputs)
        p2 = 2 * fin.p
        sig = _fit(u.sig, p2) * _fit(v.sig, p2)
        nan = z3.Or(u.nan, v.nan, z3.And(u.inf, v.zero), z3.And(u.zero, v.inf))
        inf = z3.And(z3.Or(u.inf, v.inf), z3.Not(nan))
        return Num(z3.Xor(u.sign, v.sign), sig, u.exp + v.exp, 2 * fin.t, nan, inf, sig == 0)

    def sfma(self, a: list[BV], b: list[BV], c: BV) -> BV:
        cfg, fout = self.cfg, self.fout
        acc, acc_fmt = c, self.fc
        for x, y in zip(a, b):
            prod = self._ieee_product(x, y, False)
            acc = self.ieee_sum(fout, [self.operand(acc_fmt, acc), prod], cfg.final_rounding,
                                "output" in cfg.flush)
            acc_fmt = fout
        return acc

    def gps(self, a: list[BV], b: list[BV], c: BV) -> BV:
        cfg = self.cfg
        f32 = get_format("binary32")
        prods = [self.ieee_sum(f32, [self._ieee_product(x, y, True)], "rne", True)
                 for x, y in zip(a, b)]

        def pairwise(ps: list[BV]) -> BV:
            if len(ps) == 1:
                return ps[0]
            h = len(ps) // 2
            return self.ieee_sum(f32, [self.operand(f32, pairwise(ps[:h])),
                                       self.operand(f32, pairwise(ps[h:]))], "rne", True)

        d = self.decode(f32, c, True)
        # flush_in keeps the bits of non-subnormal c, including specials
        dbits = z3.If(z3.And(d.zero, z3.Extract(30, 0, c) != 0), _val(0, 32), c)
        g = cfg.nfma
        for k in range(0, cfg.k, g):
            grp = pairwise(prods[k:k + g])
            dbits = self.ieee_sum(f32, [self.operand(f32, dbits), self.operand(f32, grp)],
                                  "rne", True)
        return dbits

    def output(self, a: list[BV], b: list[BV], c: BV) -> BV:
        cfg = self.cfg
        if len(a) != cfg.k or len(b) != cfg.k:
            raise ValueError(f"expected k={cfg.k} terms in a and b")
        if cfg.algorithm in ("sfma", "gps"):
            d = self.sfma(a, b, c) if cfg.algorithm == "sfma" else self.gps(a, b, c)
            return z3.If(self.operand(self.fout, d).nan, self.nan_out(self.fout), d)
        order = cfg.block_order
        a, b = [a[i] for i in order], [b[i] for i in order]
        n = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
        late = cfg.c_placement == "late"
        fout = self.fout
        acc, acc_fmt = (_val(fout.zero_bits(0), fout.width), fout) if late else (c, self.fc)
        for blk in range(cfg.k // n):
            lo = blk * n
            acc = self.fused_block(a[lo:lo + n], b[lo:lo + n], acc, acc_fmt, blk == 0)
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
    for name in (cfg.in_format, cfg.c_format, cfg.out_format):
        f = get_format(name)
        bound = max(bound, 2 * (abs(f.emin) + f.t + 2), 2 * (f.emax + 2))
    bound += 2 * (cfg.frac_bits + 2 * get_format(cfg.in_format).p + 64)
    return bound.bit_length() + 2


def shared_exponent_width(cfgs: list[AccumulatorConfig]) -> int:
    return max(exponent_width(c) for c in cfgs)


def check_encodable(cfg: AccumulatorConfig) -> None:
    Encoder(cfg)


def inputs(cfg: AccumulatorConfig, tag: str = "") -> tuple[list[BV], list[BV], BV]:
    """Fresh symbolic inputs a_i, b_i (in_format width) and c (c_format width)."""
    fin, fc = get_format(cfg.in_format), get_format(cfg.c_format)
    a = [z3.BitVec(f"a{i}{tag}", fin.width) for i in range(cfg.k)]
    b = [z3.BitVec(f"b{i}{tag}", fin.width) for i in range(cfg.k)]
    return a, b, z3.BitVec(f"c{tag}", fc.width)


def encode(cfg: AccumulatorConfig, a: list[BV], b: list[BV], c: BV,
           ew: int | None = None) -> BV:
    """The output bit pattern of cfg as a z3 term over the input terms a, b, c."""
    return Encoder(cfg, ew).output(list(a), list(b), c)
