"""Formats: exhaustive round trips, named constants ([KM25] Table I, [FHMP21] Table 3),
rounding in every mode against a brute-force definition."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from mmaprobe.models import formats
from mmaprobe.models.formats import FORMATS, FormatError, decode_array, get_format

SMALL = [f for f in FORMATS.values() if f.bits <= 16 or f.name == "tf32"]


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_exhaustive_round_trip(fmt):
    pats = fmt.all_patterns()
    sign, sig, exp, special = decode_array(fmt, np.array(pats, dtype=np.uint64))
    for i, bits in enumerate(pats):
        cls, s, m, e = fmt.decode(bits)
        assert special[i] == {"finite": 0, "zero": 0, "inf": 1, "nan": 2}[cls]
        if cls in ("finite", "zero"):
            assert (sign[i], sig[i]) == (s, m) and (m == 0 or exp[i] == e)
            x = fmt.to_fraction(bits)
            back = fmt.from_fraction(x)
            if x == 0:  # a Fraction has no sign: +0 comes back
                assert back == fmt.zero_bits(0)
            else:
                assert back == bits, (fmt.name, hex(bits))
        elif cls == "inf":
            assert fmt.has_inf and fmt.inf_bits(s) == bits


@pytest.mark.parametrize("fmt", [f for f in FORMATS.values() if f.bits <= formats.TABLE_BITS],
                         ids=lambda f: f.name)
def test_decode_table_is_the_formula(fmt):
    # every pattern, with stray bits in its padding, shaped (n, 2); stray bits above the
    # format are ignored by the table (the formula's NaN test of FNUZ formats would read them)
    rng = np.random.default_rng(len(fmt.name))
    pats = np.arange(1 << fmt.bits, dtype=np.uint64) << np.uint64(fmt.pad)
    junk = rng.integers(0, 1 << 62, pats.size, dtype=np.uint64)
    high = (junk >> np.uint64(fmt.bits + fmt.pad)) << np.uint64(fmt.bits + fmt.pad)
    low = junk & np.uint64((1 << fmt.pad) - 1)
    bits = np.stack([pats, pats | low], axis=1)
    table = decode_array(fmt, bits)
    formula = formats._decode_formula(fmt, bits)
    for x, y in zip(table, formula):
        assert x.dtype == y.dtype == np.int64 and x.shape == bits.shape
        assert np.array_equal(x, y)
        assert np.array_equal(x[:, 0], x[:, 1])
    for x, y in zip(decode_array(fmt, pats | high), table):
        assert np.array_equal(x, y[:, 0])


TABLE_I = {  # [KM25] Table I: precision, min normal, max
    "binary64": (53, F(2) ** -1022, None), "binary32": (24, F(2) ** -126, None),
    "tf32": (11, F(2) ** -126, None), "bfloat16": (8, F(2) ** -126, None),
    "binary16": (11, F(2) ** -14, 65504), "e4m3": (4, F(2) ** -6, 448),
    "e5m2": (3, F(2) ** -14, 57344), "e2m3": (4, F(1), F(15, 2)), "e3m2": (3, F(1, 4), 28),
    "e2m1": (2, F(1), 6),
}


@pytest.mark.parametrize("name", TABLE_I)
def test_constants_table_i(name):
    p, fmin, fmax = TABLE_I[name]
    f = get_format(name)
    assert (f.p, f.fmin) == (p, fmin)
    if fmax is not None:
        assert f.fmax == fmax
    assert f.ulp == F(2) ** (1 - p) and f.u == F(2) ** -p


def test_constants_fasi_table_3():
    # smallest subnormals: binary16 2^-24, bfloat16 2^-133, tf32 2^-136, binary32 2^-149
    for name, e in (("binary16", -24), ("bfloat16", -133), ("tf32", -136), ("binary32", -149),
                    ("binary64", -1074)):
        assert get_format(name).smin == F(2) ** e
    assert round(float(get_format("bfloat16").fmax) / 1e38, 3) == 3.390
    assert get_format("e4m3fnuz").fmax == 240 and get_format("e5m2fnuz").fmax == 57344


def test_specials_per_format():
    assert get_format("e4m3").decode(0x7F)[0] == "nan" and not get_format("e4m3").has_inf
    assert get_format("e4m3fnuz").decode(0x80)[0] == "nan"
    assert get_format("e2m1").from_fraction(100) == 0x7  # saturates: no inf, no NaN
    assert get_format("e4m3").from_fraction(1000) == 0x7F  # overflow -> NaN (no inf)
    assert get_format("e4m3").from_fraction(1000, "rz") == 0x7E
    assert get_format("ue8m0").to_fraction(0x7F) == 1
    assert get_format("ue4m3").decode(0xFF)[0] == "nan"  # top bit ignored
    assert get_format("binary32").from_fraction(F(2) ** 128, "rz") == 0x7F7FFFFF
    assert get_format("binary32").from_fraction(F(2) ** 128, "rd") == 0x7F7FFFFF
    assert get_format("binary32").from_fraction(-F(2) ** 128, "rd") == 0xFF800000


def _brute(fmt, x, mode, lo, hi):
    """The representable neighbour of x (lo <= x <= hi) chosen by the mode's definition."""
    if lo == hi:
        return lo
    if mode == "rz":
        return lo if x > 0 else hi
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "ro":
        even = lambda v: fmt.from_fraction(v) >> fmt.pad & 1 == 0  # noqa: E731
        return hi if even(lo) else lo
    d_lo, d_hi = x - lo, hi - x
    if d_lo != d_hi:
        return lo if d_lo < d_hi else hi
    if mode == "rna":
        return hi if x > 0 else lo
    return lo if fmt.from_fraction(lo) & 1 == 0 else hi


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e2m3", "e2m1", "e3m2"])
@pytest.mark.parametrize("mode", ["rne", "rz", "rd", "ru", "rna", "ro"])
def test_rounding_modes_brute_force(name, mode):
    fmt = get_format(name)
    vals = sorted({fmt.to_fraction(b) for b in fmt.all_patterns()
                   if fmt.decode(b)[0] in ("finite", "zero")})
    for lo, hi in zip(vals, vals[1:]):
        for frac in (F(1, 4), F(1, 2), F(3, 4)):
            x = lo + (hi - lo) * frac
            if x == 0:
                continue
            got = fmt.to_fraction(fmt.from_fraction(x, mode, saturate=True))
            assert got == _brute(fmt, x, mode, lo, hi), (name, mode, x)


def test_unknown_format_lists_valid_names():
    with pytest.raises(FormatError, match="valid formats: binary64"):
        get_format("fp12")
    assert get_format("BF16").name == "bfloat16" and get_format("fp8").name == "e4m3fnuz"
