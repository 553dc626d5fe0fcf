"""Number formats: exact decode, encode and rounding of rationals, and named constants.

Every value is exact: a finite value is ``(-1)**sign * sig * 2**(exp - t)`` with an integer
significand ``sig`` (hidden bit included) and ``t`` stored fraction bits; rationals are
``fractions.Fraction``.  Bit patterns are Python ints (scalar API) or unsigned numpy arrays
(vectorised :func:`decode_array`).

Special encodings follow each format's definition: IEEE formats (binary16/32/64, bfloat16,
tf32, E5M2) have infinities and NaNs; OCP E4M3 ("FN") has no infinity and one NaN mantissa
(S.1111.111); the FNUZ variants (AMD CDNA3) have no infinity, no negative zero, and 0x80 is
NaN; fp6/fp4 have neither infinity nor NaN; UE8M0 is an unsigned power of two (0xFF NaN) and
UE4M3 is an unsigned E4M3 whose top bit is ignored.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .errors import MmaprobeError

ROUNDING_MODES = ("rne", "rz", "rd", "ru", "rna", "ro")


class FormatError(MmaprobeError, ValueError):
    """An unknown format name or a value that a format cannot hold."""


@dataclass(frozen=True)
class Format:
    """A binary floating-point format.

    name       canonical name
    ebits      exponent field width
    t          stored fraction bits (precision p = t + 1)
    bias       exponent bias
    kind       special-value scheme: 'ieee', 'fn' (E4M3), 'fnuz', 'finite' (fp6/fp4),
               'ue8m0', 'ue4m3'
    width      bits in the stored pattern (tf32 lives in a 32-bit binary32 container)
    pad        low bits of the container that the format ignores (13 for tf32)
    top        emax where it is set apart from what the exponent field could hold (the
               virtual carriers of :func:`pair_carrier`), else None
    """

    name: str
    ebits: int
    t: int
    bias: int
    kind: str = "ieee"
    width: int = 0
    pad: int = 0
    top: int | None = None

    # -- derived constants -------------------------------------------------
    @property
    def signed(self) -> bool:
        return self.kind not in ("ue8m0", "ue4m3")

    @property
    def bits(self) -> int:
        """Significant bits of the encoding (sign + exponent + fraction)."""
        return int(self.signed) + self.ebits + self.t

    @property
    def p(self) -> int:
        return self.t + 1

    @property
    def has_inf(self) -> bool:
        return self.kind == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.kind != "finite"

    @property
    def has_negative_zero(self) -> bool:
        return self.kind not in ("fnuz", "ue8m0", "ue4m3")

    @property
    def emin(self) -> int:
        return 1 - self.bias if self.kind != "ue8m0" else -self.bias

    @property
    def emax(self) -> int:
        if self.top is not None:
            return self.top
        top = (1 << self.ebits) - 1
        if self.kind == "ieee":
            return top - 1 - self.bias
        if self.kind == "ue8m0":
            return top - 1 - self.bias
        return top - self.bias

    @property
    def max_sig(self) -> int:
        """Largest integer significand at exponent emax."""
        full = (1 << self.p) - 1
        if self.kind in ("fn", "ue4m3"):
            return full - 1  # mantissa 111 at the top exponent is NaN
        if self.kind == "ue8m0":
            return 1
        return full

    @property
    def fmax(self) -> Fraction:
        return Fraction(self.max_sig) * _pow2(self.emax - self.t)

    @property
    def fmin(self) -> Fraction:
        """Smallest positive normal number."""
        return _pow2(self.emin)

    @property
    def smin(self) -> Fraction:
        """Smallest positive subnormal number (fmin for formats without subnormals)."""
        return _pow2(self.emin - self.t)

    @property
    def ulp(self) -> Fraction:
        """Unit in the last place of 1 (machine epsilon)."""
        return _pow2(-self.t)

    @property
    def u(self) -> Fraction:
        """Unit roundoff for round-to-nearest."""
        return _pow2(-self.p)

    def constants(self) -> dict[str, Fraction | int]:
        """The named constants probes and users refer to."""
        return {"p": self.p, "t": self.t, "emin": self.emin, "emax": self.emax,
                "ulp": self.ulp, "u": self.u, "fmin": self.fmin, "smin": self.smin,
                "fmax": self.fmax}

    # -- canonical special patterns ----------------------------------------
    def nan_bits(self, sign: int = 0) -> int:
        if self.kind == "ieee":
            top = ((1 << self.ebits) - 1) << self.t
            return ((sign << (self.bits - 1)) | top | (1 << (self.t - 1))) << self.pad
        if self.kind == "fn":
            return ((sign << 7) | 0x7F)
        if self.kind == "fnuz":
            return 1 << (self.bits - 1)
        if self.kind == "ue8m0":
            return 0xFF
        if self.kind == "ue4m3":
            return 0x7F
        raise FormatError(f"{self.name} has no NaN")

    def inf_bits(self, sign: int = 0) -> int:
        if not self.has_inf:
            raise FormatError(f"{self.name} has no infinity")
        return ((sign << (self.bits - 1)) | (((1 << self.ebits) - 1) << self.t)) << self.pad

    def zero_bits(self, sign: int = 0) -> int:
        if sign and self.has_negative_zero:
            return (1 << (self.bits - 1)) << self.pad
        if self.kind == "ue8m0":
            raise FormatError("ue8m0 has no zero")
        return 0

    # -- scalar decode / encode ---------------------------------------------
    def decode(self, bits: int) -> tuple[str, int, int, int]:
        """Bits -> (class, sign, sig, exp) with class in zero/finite/inf/nan.

        A finite value is (-1)**sign * sig * 2**(exp - t); exp is emin for subnormals.
        """
        bits = int(bits)
        if bits < 0 or bits >> (self.width or self.bits):
            raise FormatError(f"bit pattern {bits:#x} does not fit {self.name}")
        bits >>= self.pad
        if self.kind == "ue4m3":
            bits &= 0x7F  # the top bit is ignored ([XWYY25], GDFS step 0)
        sign = (bits >> (self.bits - 1)) & 1 if self.signed else 0
        efield = (bits >> self.t) & ((1 << self.ebits) - 1)
        frac = bits & ((1 << self.t) - 1)
        top = (1 << self.ebits) - 1
        if self.kind == "ue8m0":
            if efield == top:
                return ("nan", 0, 0, 0)
            return ("finite", 0, 1, efield - self.bias)
        if self.kind == "fnuz" and bits == 1 << (self.bits - 1):
            return ("nan", 1, 0, 0)
        if self.kind == "ieee" and efield == top:
            return ("nan", sign, frac, 0) if frac else ("inf", sign, 0, 0)
        if self.kind in ("fn", "ue4m3") and efield == top and frac == (1 << self.t) - 1:
            return ("nan", sign, frac, 0)
        if efield == 0:
            if frac == 0:
                return ("zero", sign, 0, self.emin)
            return ("finite", sign, frac, self.emin)
        return ("finite", sign, frac | (1 << self.t), efield - self.bias)

    def to_fraction(self, bits: int) -> Fraction:
        cls, sign, sig, exp = self.decode(bits)
        if cls in ("inf", "nan"):
            raise FormatError(f"{self.name} pattern {bits:#x} is {cls}, not a rational")
        v = Fraction(sig) * _pow2(exp - self.t)
        return -v if sign else v

    def to_float(self, bits: int) -> float:
        cls, sign, _, _ = self.decode(bits)
        if cls == "nan":
            return float("nan")
        if cls == "inf":
            return float("-inf") if sign else float("inf")
        if cls == "zero":
            return -0.0 if sign else 0.0
        return float(self.to_fraction(bits))

    def encode(self, sign: int, sig: int, exp: int) -> int:
        """Pattern of the finite value (-1)**sign * sig * 2**(exp - t), which must be exact.

        sig must be < 2**p; exp >= emin; sig < 2**t only with exp == emin (subnormal).
        """
        if sig == 0:
            return self.zero_bits(sign)
        if sign and not self.signed:
            raise FormatError(f"{self.name} is unsigned")
        if not (0 < sig < (1 << self.p)) or exp < self.emin:
            raise FormatError(f"({sig}, {exp}) is not a {self.name} significand/exponent")
        if sig < (1 << self.t):
            if exp != self.emin:
                raise FormatError(f"unnormalised ({sig}, {exp}) for {self.name}")
            efield = 0
        else:
            efield = exp + self.bias
        if exp > self.emax or (exp == self.emax and sig > self.max_sig):
            raise FormatError(f"({sig}, {exp}) overflows {self.name}")
        if self.kind == "ue8m0":
            return exp + self.bias
        frac = sig & ((1 << self.t) - 1)
        bits = (sign << (self.bits - 1) if self.signed else 0) | (efield << self.t) | frac
        return bits << self.pad

    def from_fraction(self, x: Fraction | int | float, mode: str = "rne",
                      saturate: bool = False) -> int:
        """Round an exact value to this format; returns the bit pattern."""
        return round_to_bits(Fraction(x), self, mode, saturate=saturate)

    def exact_bits(self, x: Fraction | int | float) -> int | None:
        """The pattern of the exact value x if this format holds it (no rounding, no
        overflow, no flush), else None; +0 for zero.

        >>> get_format("binary16").exact_bits(Fraction(3, 4)), get_format("e2m1").exact_bits(5)
        (14848, None)
        """
        x = Fraction(x)
        if x == 0:
            return self.zero_bits(0)
        sign, sig, exp = round_fraction(x, self.p, self.emin, "rz")
        if Fraction(sig) * _pow2(exp - self.t) != abs(x):
            return None
        try:
            return self.encode(sign, sig, exp)
        except FormatError:
            return None

    def all_patterns(self) -> range | list[int]:
        """Every distinct bit pattern (for exhaustive tests of small formats)."""
        return [i << self.pad for i in range(1 << self.bits)]


def _pow2(e: int) -> Fraction:
    return Fraction(1 << e) if e >= 0 else Fraction(1, 1 << -e)


# -- rounding ---------------------------------------------------------------

def round_increment(mode: str, negative, odd, half, below):
    """Whether rounding a magnitude to an integer adds one unit in the last place.

    ``half`` is the first dropped bit, ``below`` whether any dropped bit under it is set,
    ``odd`` the last kept bit and ``negative`` the sign of the value.  The one definition of
    the six modes for every engine: the arguments may be Python bools, numpy bool arrays or
    z3 Booleans (only ``&``, ``|`` and ``^`` are used).  Round-to-odd sets the last bit of
    an inexact result, which is the same as adding one to an even one.

    >>> [round_increment(m, False, True, True, False) for m in ROUNDING_MODES]
    [True, False, False, True, True, False]
    """
    inexact = half | below
    if mode == "rne":
        return half & (below | odd)
    if mode == "rz":
        return inexact & False
    if mode == "rd":
        return inexact & negative
    if mode == "ru":
        return inexact & (negative ^ True)
    if mode == "rna":
        return half
    if mode == "ro":
        return inexact & (odd ^ True)
    raise FormatError(f"unknown rounding mode {mode!r}; expected one of {ROUNDING_MODES}")


#: the zero-sign rules of a fused block (configuration field ``zero_sign``)
ZERO_SIGN_RULES = ("ieee", "positive")


def exact_zero_sign(mode: str, any_nonzero, any_negative, all_negative, rule: str = "ieee"):
    """The sign of an exact zero sum (True: -0), the one zero-sign rule of every engine.

    rule 'ieee' (IEEE 754 Sec. 6.3, generalised to many addends): a sum of non-zero terms
    that cancels exactly is +0, or -0 under round-down; a sum of zeros is -0 when every
    addend is -0, or under round-down when any is.  rule 'positive' (the fused units of
    NVIDIA Hopper, measured on an H100 (shared/hwdata/H100-ptx); [XWYY25] FDA sums in fixed
    point): every zero is +0.  The arguments may be Python bools, numpy bool arrays or z3
    Booleans (only ``&``, ``|``, ``^``).  A non-zero sum that rounds or flushes to zero
    takes :func:`rounded_zero_sign`.

    >>> exact_zero_sign("rne", False, True, True), exact_zero_sign("rd", True, False, False)
    (True, True)
    >>> exact_zero_sign("rne", False, True, True, "positive")
    False
    """
    if rule == "positive":
        return any_nonzero & False
    if rule != "ieee":
        raise FormatError(f"unknown zero-sign rule {rule!r}; expected one of {ZERO_SIGN_RULES}")
    if mode == "rd":
        return any_nonzero | any_negative
    return (any_nonzero ^ True) & all_negative


def rounded_zero_sign(rule: str, negative):
    """The sign of a zero that a non-zero value rounded or flushed to (True: -0): its own
    sign under rule 'ieee', +0 under 'positive' (see :func:`exact_zero_sign`).

    >>> rounded_zero_sign("ieee", True), rounded_zero_sign("positive", True)
    (True, False)
    """
    return negative & False if rule == "positive" else negative


def round_fraction(x: Fraction, p: int, emin: int, mode: str) -> tuple[int, int, int]:
    """Round x to precision p with unbounded exponent range above emin (subnormals below).

    Returns (sign, sig, exp) with value (-1)**sign * sig * 2**(exp - (p - 1)), where
    sig < 2**p, and exp >= emin; sig may equal 2**p only never (renormalised here).
    """
    sign = int(x < 0)
    a = -x if sign else x
    if a == 0:
        return sign, 0, emin
    num, den = a.numerator, a.denominator
    e = num.bit_length() - den.bit_length()
    if (num << max(0, -e)) < (den << max(0, e)):
        e -= 1
    e = max(e, emin)
    # scaled = a * 2**(p - 1 - e), round to integer
    s = p - 1 - e
    if s >= 0:
        n, d = num << s, den
    else:
        n, d = num, den << -s
    q, r = divmod(n, d)
    if r:
        # exact comparisons with the half-way point: 2r >= d is the first dropped bit
        q += bool(round_increment(mode, bool(sign), bool(q & 1), 2 * r >= d, 2 * r != d))
    if q >> p:
        q >>= 1
        e += 1
    return sign, q, e


def round_to_bits(x: Fraction, fmt: Format, mode: str = "rne", saturate: bool = False,
                  p: int | None = None, zero_sign: int | None = None) -> int:
    """Round an exact rational to fmt (optionally to a reduced precision p <= fmt.p).

    Overflow follows IEEE 754 for the mode (to infinity or to the largest finite value); a
    format without infinity gives NaN where IEEE would give infinity, or saturates if it has
    no NaN or ``saturate`` is set.
    """
    prec = fmt.p if p is None else p
    sign, sig, exp = round_fraction(x, prec, fmt.emin, mode)
    if sig == 0:
        zs = sign if zero_sign is None else zero_sign
        return fmt.zero_bits(zs if fmt.has_negative_zero else 0)
    if sign and not fmt.signed:
        raise FormatError(f"{fmt.name} cannot hold negative {x}")
    # back to fmt's fraction width
    sig <<= fmt.p - prec
    if exp > fmt.emax or (exp == fmt.emax and sig > fmt.max_sig):
        to_inf = mode in ("rne", "rna") or (mode == "ru" and not sign) or (
            mode == "rd" and sign)
        if to_inf and not saturate:
            if fmt.has_inf:
                return fmt.inf_bits(sign)
            if fmt.has_nan:
                return fmt.nan_bits(sign)
        return fmt.encode(sign, fmt.max_sig, fmt.emax)
    return fmt.encode(sign, sig, exp)


# -- the format table ---------------------------------------------------------

_FORMATS = [
    Format("binary64", 11, 52, 1023, width=64),
    Format("binary32", 8, 23, 127, width=32),
    Format("tf32", 8, 10, 127, width=32, pad=13),
    Format("bfloat16", 8, 7, 127, width=16),
    Format("binary16", 5, 10, 15, width=16),
    Format("e4m3", 4, 3, 7, "fn", width=8),
    Format("e5m2", 5, 2, 15, width=8),
    Format("e4m3fnuz", 4, 3, 8, "fnuz", width=8),
    Format("e5m2fnuz", 5, 2, 16, "fnuz", width=8),
    Format("e2m3", 2, 3, 1, "finite", width=6),
    Format("e3m2", 3, 2, 3, "finite", width=6),
    Format("e2m1", 2, 1, 1, "finite", width=4),
    Format("ue8m0", 8, 0, 127, "ue8m0", width=8),
    Format("ue4m3", 4, 3, 7, "ue4m3", width=8),
]

FORMATS: dict[str, Format] = {f.name: f for f in _FORMATS}

ALIASES = {
    "fp64": "binary64", "double": "binary64",
    "fp32": "binary32", "single": "binary32",
    "tf19": "tf32", "xf32": "tf32",
    "bf16": "bfloat16",
    "fp16": "binary16", "half": "binary16",
    "fp8-e4m3": "e4m3", "e4m3fn": "e4m3", "fp8_e4m3": "e4m3",
    "fp8-e5m2": "e5m2", "fp8_e5m2": "e5m2",
    "fp8": "e4m3fnuz", "bf8": "e5m2fnuz",
    "fp6-e2m3": "e2m3", "fp6-e3m2": "e3m2", "fp4-e2m1": "e2m1", "fp4": "e2m1",
}


def get_format(name: str | Format) -> Format:
    """Look a format up by canonical name or alias (case-insensitive), or the virtual
    carrier "A~B" of :func:`pair_carrier`."""
    if isinstance(name, Format):
        return name
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if "~" in key:
        return pair_carrier(*key.split("~", 1))
    try:
        return FORMATS[key]
    except KeyError:
        raise FormatError(
            f"unknown format {name!r}; valid formats: {', '.join(FORMATS)} "
            f"(aliases: {', '.join(sorted(ALIASES))})") from None


#: formats whose pairs get a virtual carrier: patterns of at most this many bits, so that
#: probes/port.py can search every factor of one format for a product
PAIR_CARRIER_BITS = 8


@functools.cache
def pair_carrier(fa: str, fb: str) -> Format:
    """The virtual input format "fa~fb" that probes written for one input format (``in.*``)
    are instantiated for on a unit whose a is in fa and b in fb: the precision of the
    narrower, and exponents halfway between the two formats' own, so that its products
    span nearly what the pair's products span (e3m2 x e4m3: 2^-12 to 2^13.6 against 2^-13
    to 2^13.6, where e3m2's own reach 2^-8 to 2^9.6 and e4m3's lie beyond the pair's top).
    No infinity or NaN: probes/port.py writes each product again with a in fa and b in fb,
    the same value and the same exponent field sum.

    >>> v = pair_carrier("e3m2", "e4m3")
    >>> v.name, v.t, v.emin, v.emax, v.smin, v.fmax
    ('e3m2~e4m3', 2, -4, 6, Fraction(1, 64), Fraction(112, 1))
    >>> get_format("e3m2~e4m3") is v
    True
    """
    a, b = get_format(fa), get_format(fb)
    if a == b or max(a.bits, b.bits) > PAIR_CARRIER_BITS or not (a.signed and b.signed):
        raise FormatError(f"no virtual carrier for {fa} x {fb}: two different signed "
                          f"formats of at most {PAIR_CARRIER_BITS} bits are needed")
    emin = -((-(a.emin + b.emin)) // 2)  # ceil: subnormals at the pair's grid or above
    emax = (a.emax + b.emax) // 2
    ebits, t = max(1, (emax - emin + 2).bit_length()), min(a.t, b.t)
    return Format(f"{a.name}~{b.name}", ebits, t, 1 - emin, "finite", width=1 + ebits + t,
                  top=emax)


# -- vectorised decode -------------------------------------------------------

#: formats of at most this many bits decode by table lookup (the table is the formula's
#: result on every pattern, built once per format)
TABLE_BITS = 16


def decode_array(fmt: Format, bits: np.ndarray):
    """Vectorised decode of bit patterns.

    Returns (sign, sig, exp, special) as int64 arrays of bits' shape, with value
    (-1)**sign * sig * 2**(exp - t) for finite entries (sig = 0 for zeros); special is 0
    for finite, 1 for +-inf, 2 for NaN.  Bits above the format's (and below its padding)
    are ignored.
    """
    if fmt.bits > TABLE_BITS:
        return _decode_formula(fmt, bits)
    b = np.asarray(bits).astype(np.uint64) >> np.uint64(fmt.pad)
    idx = (b & np.uint64((1 << fmt.bits) - 1)).astype(np.intp)
    return tuple(col[idx] for col in _decode_table(fmt))


@functools.cache
def _decode_table(fmt: Format):
    return _decode_formula(fmt, np.arange(1 << fmt.bits, dtype=np.uint64) << np.uint64(fmt.pad))


def _decode_formula(fmt: Format, bits: np.ndarray):
    """decode_array by the encoding's fields."""
    b = np.asarray(bits).astype(np.uint64) >> np.uint64(fmt.pad)
    if fmt.kind == "ue4m3":
        b = b & np.uint64(0x7F)
    t, eb = fmt.t, fmt.ebits
    sign = ((b >> np.uint64(fmt.bits - 1)) & np.uint64(1)).astype(np.int64) if fmt.signed \
        else np.zeros(b.shape, np.int64)
    efield = ((b >> np.uint64(t)) & np.uint64((1 << eb) - 1)).astype(np.int64)
    frac = (b & np.uint64((1 << t) - 1)).astype(np.int64)
    top = (1 << eb) - 1
    normal = efield != 0
    sig = np.where(normal, frac | (1 << t), frac)
    exp = np.where(normal, efield - fmt.bias, fmt.emin)
    special = np.zeros(b.shape, np.int64)
    if fmt.kind == "ieee":
        special = np.where(efield == top, np.where(frac != 0, 2, 1), 0)
    elif fmt.kind in ("fn", "ue4m3"):
        special = np.where((efield == top) & (frac == (1 << t) - 1), 2, 0)
    elif fmt.kind == "fnuz":
        special = np.where(b == np.uint64(1 << (fmt.bits - 1)), 2, 0)
    elif fmt.kind == "ue8m0":
        special = np.where(efield == top, 2, 0)
        sig = np.ones(b.shape, np.int64)
        exp = efield - fmt.bias
    sig = np.where(special != 0, 0, sig)
    return sign, sig, exp, special
