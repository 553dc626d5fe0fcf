"""Probes on units whose a and b have formats of their own, or whose rows carry scale factors.

A probe is written for one input format (``in.*``).  On a unit with a in format A and b in
format B (Hopper's e4m3 x e5m2, Blackwell's f8f6f4 and fp16 x bf16, MI300X's fp8 x bf8) it is
instantiated for a *carrier* format X, A or B, and each product's two factors are then
written again, a's in A and b's in B.  A factor is carried over only where the unit sees the
same thing in the new format as the probe meant in X:

- the same class (zero, finite, infinity, canonical NaN) and sign;
- for a finite factor, the same value and the same exponent field: a normal factor stays
  normal, and a subnormal one stays subnormal with the same emin.  The exponent field is what
  a denormalised product aligns on ([KM25] Sec. IV-A1), and being subnormal is what flushing
  inputs acts on.

A product whose factors do not carry over in place may carry over swapped (a's factor into B,
b's into A), and two normal factors may trade a power of two (2^-63 * 2^-63 in bfloat16
becomes 2^-112 * 2^-14 in bfloat16 x binary16): the product, its exponent field sum and the
positions are unchanged.  A probe one of whose products carries over in no way does not
apply to the unit (its bit patterns written as hex carry over only where the formats agree).

Where a probe applies for neither A nor B, a pair of narrow formats offers a third carrier:
the virtual format A~B (models/formats.py, ``pair_carrier``), with the narrower precision
and exponents halfway between, whose products span nearly the pair's (e3m2 x e4m3: 2^-12 to
2^13.6, where e3m2's own stop at 2^-8 and e4m3's top lies beyond the pair's).  Its normal
factors trade powers of two as above; a product with a subnormal factor is written again
with the same value, the same exponent field sum and again some factor subnormal, which is
all the unit sees of it (flushing inputs zeroes the product either way).

Rows of a block-scaled unit carry unit scale factors (``accumulator.unit_scales``: the scale
format's 1 in every block), so the probe's products are the unit's.

The ported rows are the carrier's rows to the unit: tests/probes/test_port.py checks that
the model gives the same outputs on them as the carrier's plain unit gives on the rows as
written, for every configuration of mixed neighbourhoods.  A probe's decisions on such units
are still checked as on plain ones: ``mmaprobe check`` runs the ported instances on
``models/spaces/mixed.yaml`` and compares each decision with the model's truth.  Probes that
name ``a.*`` and ``b.*`` are written per side and need no carrier
(:func:`instantiation_formats`).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from fractions import Fraction

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.formats import Format, FormatError, get_format, pair_carrier

from .probe import Instance, Probe


def carriers(cfg: AccumulatorConfig) -> tuple[str, ...]:
    """The input formats a probe may be instantiated for on cfg: a's, then b's if it
    differs, then the pair's virtual carrier (models/formats.py, ``pair_carrier``) where
    both are narrow.

    >>> carriers(AccumulatorConfig(in_format="e4m3", b_format="e5m2", k=32))
    ('e4m3', 'e5m2', 'e4m3~e5m2')
    >>> carriers(AccumulatorConfig(in_format="binary16", b_format="bfloat16", k=32))
    ('binary16', 'bfloat16')
    """
    return _carriers(cfg.in_format, cfg.b_fmt)


@functools.cache
def _carriers(fa: str, fb: str) -> tuple[str, ...]:
    if fa == fb:
        return (fa,)
    try:
        return (fa, fb, pair_carrier(fa, fb).name)
    except FormatError:
        return (fa, fb)


def instantiation_formats(probe: Probe, fa: str, fb: str) -> list[tuple[str, str | None]]:
    """How ``probe`` may be instantiated for a unit with a in fa and b in fb, in order of
    preference: (the format it is instantiated for, b's format where the probe writes b's
    values in it).  A probe written per side (``a.*``, ``b.*``) takes the unit's own formats;
    any other is tried for each of :func:`carriers` in turn."""
    if probe.per_side:
        return [(fa, None if fb == fa else fb)]
    return [(x, None) for x in _carriers(fa, fb)]


@functools.lru_cache(maxsize=1 << 16)
def port_factor(bits: int, fx: str, fy: str) -> int | None:
    """The pattern in format fy of the factor ``bits`` of format fx, or None where fy holds
    no factor the unit would treat alike (see the module's notes).

    >>> hex(port_factor(0x30, "e4m3", "e5m2"))       # 2^-1 is normal in both
    '0x38'
    >>> port_factor(0x01, "e4m3", "e5m2") is None    # 2^-9: subnormal in e4m3, normal in e5m2
    True
    >>> port_factor(0x39, "e4m3", "e5m2") is None    # 9/8 needs 4 significand bits
    True
    """
    if fx == fy:
        return bits
    x, y = get_format(fx), get_format(fy)
    cls, sign, sig, exp = x.decode(bits)
    try:
        if cls == "zero":
            return y.zero_bits(sign) if (not sign or y.has_negative_zero) else None
        if cls == "inf":
            return y.inf_bits(sign) if y.has_inf else None
        if cls == "nan":
            return _port_nan(bits, x, y)
    except FormatError:
        return None
    out = y.exact_bits(x.to_fraction(bits))
    if out is None:
        return None
    _, _, ysig, yexp = y.decode(out)
    subnormal_x, subnormal_y = sig < (1 << x.t), ysig < (1 << y.t)
    if subnormal_x != subnormal_y or exp != yexp:
        return None
    return out


def _port_nan(bits: int, x: Format, y: Format) -> int | None:
    """Only a canonical NaN carries over (to y's canonical NaN of that sign)."""
    if not (x.has_nan and y.has_nan):
        return None
    for sign in (0, 1):
        try:
            if bits == x.nan_bits(sign):
                return y.nan_bits(sign)
        except FormatError:
            continue
    return None


@functools.lru_cache(maxsize=1 << 16)
def port_product(xa: int, xb: int, carrier: str, fa: str, fb: str) -> tuple[int, int] | None:
    """The factors (in fa, in fb) of the product of ``xa`` and ``xb`` (patterns of the
    carrier format), or None: in place, else swapped, else -- for two normal factors -- with
    a power of two moved from one factor to the other (the smallest move that fits).  The
    product's value, its exponent field sum and both factors' being normal are unchanged.

    >>> port_product(0x2000, 0x2000, "bfloat16", "bfloat16", "binary16")  # 2^-63 * 2^-63
    (1920, 1024)
    >>> port_product(0x0001, 0x3c00, "binary16", "bfloat16", "binary16")  # 2^-24 * 1, swapped
    (16256, 1)

    (2^-112 * 2^-14 in the first; in the second 2^-24 stays a binary16 subnormal.)
    """
    for u, v in ((xa, xb), (xb, xa)):
        ya, yb = port_factor(u, carrier, fa), port_factor(v, carrier, fb)
        if ya is not None and yb is not None:
            return ya, yb
    x, a, b = get_format(carrier), get_format(fa), get_format(fb)
    da, db = x.decode(xa), x.decode(xb)
    if not all(d[0] == "finite" for d in (da, db)):
        return None
    if not all(d[2] >> x.t for d in (da, db)):
        # a, b's own subnormals carry over in place; a virtual carrier's may not
        virtual = x.top is not None
        return _port_subnormal_product(da, db, x, a, b) if virtual else None
    best = None
    for (_, su, gu, eu), (_, sv, gv, ev) in ((da, db), (db, da)):
        for shift in range(a.emin - eu, a.emax - eu + 1):
            if not (b.emin <= ev - shift <= b.emax):
                continue
            if best is not None and abs(shift) >= best[0]:
                continue
            ya = _normal_bits(a, su, gu, eu + shift, x.t)
            yb = _normal_bits(b, sv, gv, ev - shift, x.t)
            if ya is not None and yb is not None:
                best = (abs(shift), ya, yb)
    return None if best is None else best[1:]


def _port_subnormal_product(da: tuple, db: tuple, x: Format, a: Format,
                            b: Format) -> tuple[int, int] | None:
    """Factors (in a, in b) of a product of the carrier x with a subnormal factor: the
    same value, the same exponent field sum and a subnormal factor again (what flushing
    inputs acts on), each factor keeping its sign, in place or swapped; the factor in a
    nearest the carrier's own.  Only a virtual carrier's subnormals need it (a subnormal of
    a or b's own format carries over in place): 2^-6 x 2^-6 of e3m2~e4m3 (exponent fields
    -4 and -4) is 2^-4 x 2^-8 in e3m2 x e4m3 (fields -2 and -6)."""
    value = Fraction(da[2] * db[2]) * Fraction(2) ** (da[3] + db[3] - 2 * x.t)
    fields = da[3] + db[3]
    best = None
    for (su, _, eu), (sv, _, _) in ((da[1:], db[1:]), (db[1:], da[1:])):
        for ya in _finite_positive(a):
            _, _, ga, ea = a.decode(ya)
            yb = b.exact_bits(value / a.to_fraction(ya))
            if yb is None:
                continue
            _, _, gb, eb = b.decode(yb)
            if ea + eb != fields or (ga >> a.t and gb >> b.t):
                continue
            if best is None or abs(ea - eu) < best[0]:
                sign_a = ya | (su << (a.bits - 1))
                sign_b = yb | (sv << (b.bits - 1))
                best = (abs(ea - eu), sign_a, sign_b)
    return None if best is None else best[1:]


@functools.cache
def _finite_positive(fmt: Format) -> tuple[int, ...]:
    """Every positive finite pattern of a narrow format."""
    return tuple(y for y in range(1, 1 << (fmt.bits - 1)) if fmt.decode(y)[0] == "finite")


def _normal_bits(fmt: Format, sign: int, sig: int, exp: int, t: int) -> int | None:
    """fmt's pattern of the normal value (-1)^sign sig 2^(exp - t), or None."""
    bits = fmt.exact_bits(Fraction(-sig if sign else sig) * Fraction(2) ** (exp - t))
    if bits is None or not fmt.decode(bits)[2] >> fmt.t:
        return None
    return bits


def port_instance(inst: Instance, carrier: str, fa: str, fb: str) -> Instance | None:
    """The instance's rows with a in fa and b in fb (``inst`` was instantiated for the
    carrier format), or None when some product carries over in no way
    (:func:`port_product`)."""
    if carrier == fa == fb:
        return inst
    a_rows, b_rows = [], []
    for ra, rb in zip(inst.a, inst.b):
        na, nb = [], []
        for xa, xb in zip(ra, rb):
            pair = port_product(xa, xb, carrier, fa, fb)
            if pair is None:
                return None
            na.append(pair[0])
            nb.append(pair[1])
        a_rows.append(na)
        b_rows.append(nb)
    out = replace(inst, key=inst.key + (("ported", fa, fb),), a=a_rows, b=b_rows)
    out.__dict__.pop("_matrix", None)
    return out
