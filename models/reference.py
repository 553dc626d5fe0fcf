"""The plain exact reference: one row at a time, with Python integers and Fractions.

This is the specification of every configuration field, written for clarity rather than
speed; the vectorised model (:mod:`mmaprobe.models.accumulator`) and the z3 encoding must
agree with it bit for bit.  ``trace`` (a list) receives the steps in words, which is what
``mmaprobe eval --explain`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .config import AccumulatorConfig
from .formats import (
    Format,
    exact_zero_sign,
    get_format,
    round_fraction,
    round_increment,
    round_to_bits,
    rounded_zero_sign,
)

#: CDNA3 FDRDA: the dot product is rounded down at 31 fraction bits when c is added
#: ([XWYY25], Sec. IV-F step 6).
FDRDA_DOT_BITS = 31
#: CDNA3 GFDRDA: c is rounded toward zero, not down, when e_c < e_max - 25 (IV-H step 8).
GFDRDA_C_RZ_BELOW = 25

BINARY32 = get_format("binary32")


@dataclass
class Term:
    """One addend: (-1)**sign * sig * 2**lsb, aligned as if its exponent were ``exp``."""

    sign: int
    sig: int
    lsb: int
    exp: int
    name: str

    @property
    def value(self) -> Fraction:
        v = Fraction(self.sig) * _p2(self.lsb)
        return -v if self.sign else v


class Special(Exception):
    """Raised inside a block when the result is decided by special values."""

    def __init__(self, kind: str, sign: int = 0):
        super().__init__(kind)
        self.kind, self.sign = kind, sign


def _p2(e: int) -> Fraction:
    return Fraction(1 << e) if e >= 0 else Fraction(1, 1 << -e)


def _floor_log2(x: Fraction) -> int:
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if x >= _p2(e) else e - 1


def nan_bits(cfg: AccumulatorConfig, fmt: Format) -> int:
    if cfg.nan == "canonical":
        # NVIDIA's canonical NaN: all ones but the sign ([XWYY25], FDA step 1).
        return (1 << (fmt.bits - 1)) - 1
    return fmt.nan_bits()


def _out(fmt: Format, x: Fraction, mode: str, cfg: AccumulatorConfig, zero_sign: int,
         frac_bits: int | None = None, flush: bool = False, overflow_inf: bool = True) -> int:
    """Round an exact result of a fused block to fmt, the matrix units' way: overflow gives
    infinity; a zero takes zero_sign when x is an exact zero, else cfg.zero_sign's rule."""
    p = fmt.p if frac_bits is None else frac_bits + 1
    if x == 0:
        return fmt.zero_bits(zero_sign)
    sign, sig, exp = round_fraction(x, p, fmt.emin, mode)
    if overflow_inf and exp > fmt.emax:
        return fmt.inf_bits(sign)
    zs = int(rounded_zero_sign(cfg.zero_sign, bool(sign)))
    bits = round_to_bits(x, fmt, mode, p=p, zero_sign=zs)
    if flush and abs(x) < fmt.fmin:
        return fmt.zero_bits(zs)
    return bits


# -- decoding and products ---------------------------------------------------

def _decode(fmt: Format, bits: int, name: str, flush: bool, trace) -> tuple:
    cls, sign, sig, exp = fmt.decode(bits)
    if cls == "finite" and flush and sig < (1 << fmt.t):
        if trace is not None:
            trace.append(f"  {name}: subnormal flushed to +0")
        return ("zero", 0, 0, fmt.emin)
    return cls, sign, sig, exp


def _products(cfg, fin: Format, a: list[int], b: list[int], base: int, trace,
              scales: tuple[list[int], list[int]] | None = None) -> list:
    """Exact products as Terms, or special markers ('nan'/'inf'/'ovf', sign).

    a is in fin (in_format), b in cfg.b_fmt.  With block scaling (scales = the row's scale
    factors of a and b) product i is also multiplied by the scale factors of its block, and
    its alignment exponent includes theirs ([XWYY25] Sec. IV-C "Scale factor").  A product
    that overflows (product_overflow) is the marker ('ovf', sign): FDRDA step 2 comes after
    the input specials of step 1 (:func:`_specials`).
    """
    flush_in = "inputs" in cfg.flush
    fb = get_format(cfg.b_fmt)
    fs = get_format(cfg.scale_format) if scales is not None else None
    out = []
    for i, (ab, bb) in enumerate(zip(a, b)):
        factors = [_decode(fin, ab, f"a{base + i}", flush_in, trace),
                   _decode(fb, bb, f"b{base + i}", flush_in, trace)]
        fmts = [fin, fb]
        if scales is not None:
            j = (base + i) // cfg.scale_block
            factors += [fs.decode(scales[0][j]), fs.decode(scales[1][j])]
            fmts += [fs, fs]
        classes = {f[0] for f in factors}
        s = 0
        for f in factors:
            s ^= f[1]
        if "nan" in classes or {"inf", "zero"} <= classes:
            out.append(("nan", 0))
            continue
        if "inf" in classes:
            out.append(("inf", s))
            continue
        sig, lsb, exp = 1, 0, 0
        for (_, _, m, e), f in zip(factors, fmts):
            sig, lsb, exp = sig * m, lsb + e - f.t, exp + e
        if sig and cfg.product_normalisation == "normalised":
            exp = lsb + sig.bit_length() - 1
        t = Term(s, sig, lsb, exp, f"p{base + i}")
        if sig and cfg.product_overflow and abs(t.value) >= _p2(128):
            out.append(("ovf", s))
            continue
        if sig and "products" in cfg.flush and abs(t.value) < BINARY32.fmin:
            if trace is not None:
                trace.append(f"  {t.name}: subnormal product flushed to zero")
            t = Term(s, 0, lsb, exp, t.name)
        out.append(t)
    return out


def _c_term(cfg, fmt: Format, bits: int, trace, flush: bool) -> Term | tuple:
    cls, s, m, e = _decode(fmt, bits, "c", flush, trace)
    if cls == "nan":
        return ("nan", 0)
    if cls == "inf":
        return ("inf", s)
    return Term(s, m, e - fmt.t, e, "c")


def _specials(items: list) -> None:
    """FDA step 1 ([XWYY25]): NaN wins; +inf with -inf is NaN; else the infinity.

    Overflowing products ('ovf', product_overflow) are looked at only when no input is NaN
    or infinite: FDRDA steps 1-3 ([XWYY25] Sec. IV-F), so an input infinity wins over an
    overflowing product of the other sign.
    """
    for stage in (("nan", "inf"), ("ovf",)):
        kinds = [x for x in items if isinstance(x, tuple) and x[0] in stage]
        if not kinds:
            continue
        if any(k == "nan" for k, _ in kinds):
            raise Special("nan")
        signs = {s for _, s in kinds}
        if len(signs) == 2:
            raise Special("nan")
        raise Special("inf", signs.pop())


def _describe(t: Term) -> str:
    return f"{'-' if t.sign else '+'}{t.sig} x 2^{t.lsb} (exponent {t.exp})"


# -- the fused sum ---------------------------------------------------------------

def _align(t: Term, q: int, mode: str) -> int:
    """Signed integer multiple of 2**q representing t after alignment (see config)."""
    if t.lsb >= q:
        n = t.sig << (t.lsb - q)
        return -n if t.sign else n
    shift = q - t.lsb
    mag, rem = t.sig >> shift, t.sig & ((1 << shift) - 1)
    if mode == "rz_sticky":
        # units of 2**(q-1): truncated bits, then one sticky bit (caller halves q)
        raise AssertionError("rz_sticky is handled by aligning at q - 1")
    half = 1 << (shift - 1)
    # 'rd' truncates in two's complement: a negative magnitude with dropped bits grows
    mag += round_increment(mode, bool(t.sign), bool(mag & 1), rem >= half,
                           bool(rem & (half - 1)))
    return -mag if t.sign else mag


def fused_sum(cfg: AccumulatorConfig, terms: list[Term], trace,
              frac_bits: int | None = None, emax: int | None = None) -> tuple[Fraction, int]:
    """Align terms to their largest exponent keeping F fraction bits and add them exactly.

    Returns (value, emax): the exact fixed-point result and the alignment exponent (zero
    terms do not set it, unless the caller gives emax).
    """
    F = cfg.frac_bits if frac_bits is None else frac_bits
    live = [t for t in terms if t.sig]
    if not live:
        return Fraction(0), 0 if emax is None else emax
    if emax is None:
        emax = max(t.exp for t in live)
    q = emax - F
    if trace is not None:
        trace.append(f"  alignment exponent {emax}; keep F={F} fraction bits: quantum 2^{q}")
    total = 0
    unit = q
    if cfg.align_rounding == "rz_sticky":
        unit = q - 1
        for t in live:
            n = _align(t, q, "rz")
            exact = Fraction(abs(n)) * _p2(q) == abs(t.value)
            a = 2 * abs(n) + (0 if exact else 1)
            total += -a if t.sign else a
            if trace is not None:
                trace.append(f"    {t.name}: {_describe(t)} -> {'-' if t.sign else ''}"
                             f"{a} x 2^{unit}{'' if exact else ' (sticky set)'}")
    else:
        for t in live:
            n = _align(t, q, cfg.align_rounding)
            total += n
            if trace is not None:
                dropped = t.value - Fraction(n) * _p2(q)
                trace.append(f"    {t.name}: {_describe(t)} -> {n} x 2^{q}"
                             + (f" (dropped {dropped})" if dropped else ""))
    if cfg.carry_bits is not None:
        limit = 1 << (F + 2 + cfg.carry_bits + (unit < q))
        if abs(total) >= limit:
            wrapped = abs(total) % limit
            if trace is not None:
                trace.append(f"  carry overflow: |{total}| >= 2^{limit.bit_length() - 1}, "
                             f"wraps to {wrapped}")
            total = -wrapped if total < 0 else wrapped
    value = Fraction(total) * _p2(unit)
    if trace is not None:
        trace.append(f"  fixed-point sum {total} x 2^{unit} = {value}")
    return value, emax


def terms_zero_sign(mode: str, terms: list[Term], rule: str = "ieee") -> int:
    """The sign of an exact zero sum of these terms (formats.exact_zero_sign)."""
    signs = [bool(t.sign) for t in terms]
    return int(exact_zero_sign(mode, any(t.sig for t in terms), any(signs),
                               bool(signs) and all(signs), rule))


# -- blocks ----------------------------------------------------------------------------

def _fused_block(cfg, fin, fout, acc_fmt, a, b, acc_bits, base, trace, first,
                 scales=None) -> int:
    flush_c = "inputs" in cfg.flush if first else "sums" in cfg.flush
    prods = _products(cfg, fin, a, b, base, trace, scales)
    cterm = _c_term(cfg, acc_fmt, acc_bits, trace, flush_c)
    try:
        _specials(prods + [cterm])
    except Special as s:
        if trace is not None:
            trace.append(f"  special values decide the result: {s.kind}")
        return nan_bits(cfg, fout) if s.kind == "nan" else fout.inf_bits(s.sign)
    mode = cfg.final_rounding
    terms = prods + [cterm]
    v, _ = fused_sum(cfg, terms, trace)
    d = _out(fout, v, mode, cfg, terms_zero_sign(mode, terms, cfg.zero_sign),
             cfg.out_frac_bits, "output" in cfg.flush)
    if trace is not None:
        bits = "" if cfg.out_frac_bits is None else f", {cfg.out_frac_bits} fraction bits"
        trace.append(f"  normalise and round ({mode}{bits}) to {fout.name}: {d:#x}")
    return d


def _fdrda_block(cfg, fin, a, b, acc_bits, base, trace, first) -> int:
    """CDNA3 FDRDA / GFDRDA ([XWYY25], Sec. IV-F and IV-H)."""
    fout = BINARY32
    prods = _products(cfg, fin, a, b, base, trace)
    cterm = _c_term(cfg, BINARY32, acc_bits, trace, "inputs" in cfg.flush)
    try:
        _specials(prods + [cterm])
    except Special as s:
        return nan_bits(cfg, fout) if s.kind == "nan" else fout.inf_bits(s.sign)
    F = cfg.frac_bits
    if cfg.interleave == "even_odd":
        parts = []
        for g in (0, 1):
            grp = [p for i, p in enumerate(prods) if i % 2 == g]
            v, e = fused_sum(cfg, grp, trace)
            if any(t.sig for t in grp):
                parts.append((v, e))
        if parts:
            e_dot = max(e for _, e in parts)
            q = e_dot - F
            # groups aligned to e_dot, rounded down at F fraction bits (step 6)
            dot = sum((Fraction(_floor_div(v, _p2(q))) * _p2(q) for v, _ in parts),
                      Fraction(0))
            if trace is not None:
                trace.append(f"  even/odd groups rounded down to 2^{q}: dot = {dot}")
        else:
            e_dot, dot = None, Fraction(0)
    else:
        dot, e_dot = fused_sum(cfg, prods, trace)
        if not any(t.sig for t in prods):
            e_dot = None
    live = [x for x in (e_dot, cterm.exp if cterm.sig else None) if x is not None]
    if not live:
        return fout.zero_bits(terms_zero_sign(cfg.final_rounding, prods + [cterm],
                                              cfg.zero_sign))
    e_max = max(live)
    dot_r = Fraction(_floor_div(dot, _p2(e_max - FDRDA_DOT_BITS))) * _p2(e_max - FDRDA_DOT_BITS)
    cq = _p2(e_max - F)
    cv = cterm.value
    if cfg.interleave == "even_odd" and cterm.sig and cterm.exp < e_max - GFDRDA_C_RZ_BELOW:
        c_r = Fraction(int(cv / cq)) * cq  # toward zero
    else:
        c_r = Fraction(_floor_div(cv, cq)) * cq
    total = dot_r + c_r
    if trace is not None:
        trace.append(f"  e_max {e_max}: dot rounded down at 2^{e_max - FDRDA_DOT_BITS} -> "
                     f"{dot_r}; c rounded at 2^{e_max - F} -> {c_r}; sum {total}")
    return _out(fout, total, cfg.final_rounding, cfg,
                terms_zero_sign(cfg.final_rounding, prods + [cterm], cfg.zero_sign),
                cfg.out_frac_bits, "output" in cfg.flush)


def _floor_div(x: Fraction, q: Fraction) -> int:
    return (x / q).__floor__()


# -- IEEE operations (SFMA, GPS, late additions) --------------------------------------

def _ieee_round(fmt: Format, x: Fraction, mode: str, zero_sign: int, flush: bool) -> int:
    if x == 0:
        return fmt.zero_bits(zero_sign)
    bits = round_to_bits(x, fmt, mode, zero_sign=int(x < 0))
    if flush and abs(x) < fmt.fmin:
        # flush a subnormal (or underflowing) result to zero, keeping its sign
        return fmt.zero_bits(int(x < 0))
    if flush:
        cls, _, sig, _ = fmt.decode(bits)
        if cls == "finite" and sig < (1 << fmt.t):
            return fmt.zero_bits(int(x < 0))
    return bits


def _ieee_sum(fmt_out: Format, operands: list[tuple[Format, int]], mode: str,
              flush: bool = False, product: tuple | None = None) -> int:
    """Exact sum of operands (and optionally one exact product), rounded once: IEEE."""
    vals, signs, infs, nan = [], [], set(), False
    items = list(operands)
    for fmt, bits in items:
        cls, s, _, _ = fmt.decode(bits)
        if cls == "nan":
            nan = True
        elif cls == "inf":
            infs.add(s)
        else:
            vals.append(fmt.to_fraction(bits))
            signs.append(s)
    if product is not None:
        (fa, ab), (fb, bb) = product
        ca, sa, _, _ = fa.decode(ab)
        cb, sb, _, _ = fb.decode(bb)
        if "nan" in (ca, cb) or {ca, cb} == {"inf", "zero"}:
            nan = True
        elif "inf" in (ca, cb):
            infs.add(sa ^ sb)
        else:
            vals.append(fa.to_fraction(ab) * fb.to_fraction(bb))
            signs.append(sa ^ sb)
    if nan or len(infs) == 2:
        return fmt_out.nan_bits()
    if infs:
        return fmt_out.inf_bits(infs.pop())
    x = sum(vals, Fraction(0))
    if x == 0:
        zs = exact_zero_sign(mode, any(v != 0 for v in vals), any(signs), all(signs))
        return fmt_out.zero_bits(int(zs))
    return _ieee_round(fmt_out, x, mode, 0, flush)


def _ieee_add(fx: Format, x: int, fy: Format, y: int, fout: Format, mode: str,
              flush: bool = False) -> int:
    return _ieee_sum(fout, [(fx, x), (fy, y)], mode, flush)


def propagated_nan(fmt: Format, operands: list[int]) -> int:
    """nan='propagate': the first NaN operand, quietened (sign and payload kept), or the
    default NaN with the sign bit set when no operand is NaN (an invalid operation)."""
    for x in operands:
        if fmt.decode(x)[0] == "nan":
            return x | (1 << (fmt.t - 1 + fmt.pad))
    return fmt.nan_bits(1)


def _sfma(cfg, fin, fc, fout, a, b, c, trace) -> int:
    fb = get_format(cfg.b_fmt)
    acc, acc_fmt = c, fc
    for i, (ab, bb) in enumerate(zip(a, b)):
        acc_in = acc
        acc = _ieee_sum(fout, [(acc_fmt, acc)], cfg.final_rounding,
                        "output" in cfg.flush, product=((fin, ab), (fb, bb)))
        if cfg.nan == "propagate" and fout.decode(acc)[0] == "nan":
            # one format throughout (config): b_k first, then the accumulator, then a_k
            acc = propagated_nan(fout, [bb, acc_in, ab])
        acc_fmt = fout
        if trace is not None:
            trace.append(f"  fma step {i}: {acc:#x} = {fout.to_float(acc)!r}")
    return acc


def _gps(cfg, fin, a, b, c, trace) -> int:
    """CDNA2 group-pairwise-sum with sign-preserving flushes ([XWYY25], Alg. 2 and 3);
    CDNA1's (flush: none) is the same in plain IEEE binary32 RNE."""
    f32, mode = BINARY32, "rne"
    fb = get_format(cfg.b_fmt)
    fl = bool(cfg.flush)  # all four stages or none (config)

    def flush_in(fmt, bits):
        cls, _, sig, _ = fmt.decode(bits)
        if fl and cls == "finite" and sig < (1 << fmt.t):
            return fmt.zero_bits(0)
        return bits

    prods = []
    for ab, bb in zip(a, b):
        ab, bb = flush_in(fin, ab), flush_in(fb, bb)
        prods.append(_ieee_sum(f32, [], mode, fl, product=((fin, ab), (fb, bb))))

    def pairwise(ps):
        if len(ps) == 1:
            return ps[0]
        h = len(ps) // 2
        return _ieee_add(f32, pairwise(ps[:h]), f32, pairwise(ps[h:]), f32, mode, fl)

    d = flush_in(f32, c)
    G = cfg.nfma
    for k in range(0, cfg.k, G):
        g = pairwise(prods[k:k + G])
        d = _ieee_add(f32, d, f32, g, f32, mode, fl)
        if trace is not None:
            trace.append(f"  group {k // G}: sum {g:#010x}; accumulator {d:#010x}")
    return d


# -- entry point ------------------------------------------------------------------------

def _gdfs(cfg, fin, a, b, c, scales, trace) -> int:
    """NVIDIA Blackwell group-dot-fused-sum ([XWYY25] Sec. IV-E, steps 1-7).

    Each group of nfma products is summed exactly (step 3), multiplied by its block's scale
    factors (step 4: value sigma * S_a * S_b, alignment exponent e_Sa + e_Sb whether or not
    sigma is zero; a zero scale factor makes the group vanish), aligned with c at the
    largest exponent keeping F fraction bits (step 5), summed (6) and rounded (7).
    """
    fout, fs = BINARY32, get_format(cfg.scale_format)
    plain = cfg.replace(algorithm="fused", scale_format=None, scale_block=None)
    prods = _products(plain, fin, a, b, 0, trace)
    cterm = _c_term(cfg, BINARY32, c, trace, "inputs" in cfg.flush)
    try:
        if any(fs.decode(x)[0] == "nan" for x in scales[0] + scales[1]):
            raise Special("nan")
        _specials(prods + [cterm])
    except Special as sp:
        if trace is not None:
            trace.append(f"  special values decide the result: {sp.kind}")
        return nan_bits(cfg, fout) if sp.kind == "nan" else fout.inf_bits(sp.sign)
    mode, G = cfg.final_rounding, cfg.nfma
    groups: list[Term] = []
    exps = []
    for g in range(cfg.k // G):
        grp = prods[g * G:(g + 1) * G]
        sigma = sum((t.value for t in grp), Fraction(0))
        j = g * G // cfg.scale_block
        (_, _, ms, es), (_, _, mt, et) = fs.decode(scales[0][j]), fs.decode(scales[1][j])
        v = sigma * ms * mt * _p2(es + et - 2 * fs.t)
        zs = (int(v < 0) if v else terms_zero_sign(mode, grp, cfg.zero_sign))
        lsb = -(v.denominator.bit_length() - 1)
        groups.append(Term(zs, abs(v.numerator), lsb, es + et, f"group {g}"))
        if ms and mt:
            exps.append(es + et)  # the scale factors' exponent counts even when sigma = 0
        if trace is not None:
            trace.append(f"  group {g}: sum {sigma} x scales 2^{es + et} "
                         f"(x {ms * mt}/{1 << 2 * fs.t}) = {v}")
    if cterm.sig:
        exps.append(cterm.exp)
    terms = groups + [cterm]
    v, _ = fused_sum(cfg, terms, trace, emax=max(exps) if exps else None)
    d = _out(fout, v, mode, cfg, terms_zero_sign(mode, terms, cfg.zero_sign),
             cfg.out_frac_bits, "output" in cfg.flush)
    if trace is not None:
        trace.append(f"  normalise and round ({mode}) to {fout.name}: {d:#x}")
    return d


def reference_dot(cfg: AccumulatorConfig, a: list[int], b: list[int], c: int,
                  trace: list[str] | None = None, scale_a: list[int] | None = None,
                  scale_b: list[int] | None = None) -> int:
    """d = c + sum a_i b_i for one row of bit patterns, exactly as cfg specifies.

    With block scaling (cfg.scale_format) scale_a and scale_b hold the row's k/scale_block
    scale factors of a and b, or a and b are packed rows (cfg.row_width: the k values, then
    the scale factors).
    """
    fin, fc, fout = (get_format(cfg.in_format), get_format(cfg.c_format),
                     get_format(cfg.out_format))
    a, b = [int(x) for x in a], [int(x) for x in b]
    if cfg.scales and scale_a is None and scale_b is None and len(a) == len(b) == cfg.row_width:
        a, b, scale_a, scale_b = a[:cfg.k], b[:cfg.k], a[cfg.k:], b[cfg.k:]  # packed rows
    if len(a) != cfg.k or len(b) != cfg.k:
        raise ValueError(f"expected k={cfg.k} values in a and b, got {len(a)} and {len(b)}")
    scales = None
    if cfg.scale_format is not None:
        if scale_a is None or scale_b is None or len(scale_a) != cfg.scales or len(
                scale_b) != cfg.scales:
            raise ValueError(f"expected {cfg.scales} scale factors each for a and b "
                             f"(k={cfg.k}, scale_block={cfg.scale_block})")
        scales = ([int(x) for x in scale_a], [int(x) for x in scale_b])
    elif scale_a is not None or scale_b is not None:
        raise ValueError("scale factors given for a configuration without block scaling")
    if cfg.algorithm in ("sfma", "gps"):
        d = (_sfma(cfg, fin, fc, fout, a, b, int(c), trace) if cfg.algorithm == "sfma"
             else _gps(cfg, fin, a, b, int(c), trace))
        if cfg.nan == "propagate":
            return d
        return nan_bits(cfg, fout) if fout.decode(d)[0] == "nan" else d
    if cfg.algorithm == "gdfs":
        return _gdfs(cfg, fin, a, b, int(c), scales, trace)
    order = cfg.block_order
    a, b = [a[i] for i in order], [b[i] for i in order]
    n = cfg.k // 2 if cfg.interleave == "pairs" else cfg.nfma
    late = cfg.algorithm == "fused" and cfg.c_placement == "late"
    acc, acc_fmt = (fout.zero_bits(0), fout) if late else (int(c), fc)
    for blk in range(cfg.k // n):
        lo = blk * n
        if trace is not None:
            trace.append(f"block {blk} (products {', '.join(map(str, order[lo:lo + n]))}):")
        if cfg.algorithm == "fdrda":
            acc = _fdrda_block(cfg, fin, a[lo:lo + n], b[lo:lo + n], acc, lo, trace,
                               blk == 0)
        else:
            acc = _fused_block(cfg, fin, fout, acc_fmt, a[lo:lo + n], b[lo:lo + n], acc, lo,
                               trace, blk == 0, scales)
        acc_fmt = fout
    if late:
        cb = int(c)
        if "inputs" in cfg.flush and fc.decode(cb)[0] == "finite" and fc.decode(cb)[2] >> fc.t == 0:
            cb = fc.zero_bits(0)  # a subnormal c is an input: flushed to +0
        d = _ieee_add(fout, acc, fc, cb, fout, cfg.late_rounding, "output" in cfg.flush)
        if fout.decode(d)[0] == "nan":
            d = nan_bits(cfg, fout)  # the unit's own NaN, canonical on NVIDIA
        if trace is not None:
            trace.append(f"c added late ({cfg.late_rounding}) to {acc:#x}: {d:#x}")
        acc = d
    return acc
