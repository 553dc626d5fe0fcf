"""The vectorised model (models/accumulator.py) against the exact reference, bit for bit."""

from __future__ import annotations

import dataclasses
import itertools
import zlib
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mmaprobe.models import accumulator, engine_float, engine_int
from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import (
    ALIGN_ROUNDINGS,
    FLUSH_STAGES,
    AccumulatorConfig,
)
from mmaprobe.models.errors import InputError
from mmaprobe.models.formats import ROUNDING_MODES, get_format
from mmaprobe.models.reference import reference_dot
from mmaprobe.models.sampling import KINDS, random_rows, round_to_format


def C(in_format, k, **kw) -> AccumulatorConfig:
    return AccumulatorConfig(in_format=in_format, k=k, **kw)


SMALL_INPUTS = ("binary16", "bfloat16", "tf32", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz",
                "e2m3", "e3m2", "e2m1")

#: An explicit list in which every algorithm and every field value appears at least once.
CONFIGS = [
    # NVIDIA-style fused blocks
    C("binary16", 16, nfma=16, neab=2),                                   # H100
    C("bfloat16", 16, nfma=8, neab=1),                                    # A100 CoFDA
    C("binary16", 8, nfma=4, neab=0),                                     # V100-like
    C("tf32", 8, nfma=4, neab=1),
    C("e4m3", 32, nfma=16, neab=-10, out_frac_bits=13),                   # Hopper QGMMA
    C("e5m2", 16, neab=-10, out_frac_bits=13, final_rounding="rne"),
    C("e4m3", 16, interleave="pairs", nfma=8, neab=-10, out_frac_bits=13),  # mma.sync
    C("e5m2", 8, interleave="pairs", nfma=4, late_rounding="rz", final_rounding="rne"),
    C("e2m1", 8, neab=2, align_rounding="rne", carry_bits=3),
    C("e2m3", 8, nfma=4, align_rounding="rd", carry_bits=0),
    C("e3m2", 8, align_rounding="rz_sticky", final_rounding="ru", carry_bits=1),
    C("binary16", 8, product_normalisation="normalised", final_rounding="rd"),
    C("bfloat16", 8, product_normalisation="normalised", align_rounding="rz_sticky"),
    C("binary16", 8, nfma=4, flush=("inputs", "products", "sums", "output"),
      final_rounding="rna"),
    C("bfloat16", 8, nfma=2, flush=("sums",), final_rounding="ro", nan="ieee"),
    C("bfloat16", 8, product_overflow=True, flush=("products",)),
    C("binary16", 8, nfma=2, c_format="binary16", out_format="binary16", final_rounding="rne"),
    C("bfloat16", 8, nfma=4, c_format="bfloat16", out_format="bfloat16", flush=("output",)),
    C("binary16", 8, c_placement="late", late_rounding="rne"),
    C("bfloat16", 8, nfma=4, c_placement="late", late_rounding="ru", flush=("output",)),
    C("binary16", 8, nfma=4, c_placement="late", final_rounding="rd", late_rounding="rd",
      c_format="binary16", out_format="binary16"),
    C("tf32", 4, neab=24, carry_bits=16),                                 # wide F: int64
    C("binary16", 16, neab=40, align_rounding="rne"),                     # object path
    C("binary16", 8, nfma=4, c_format="binary64", out_format="binary64", neab=30),
    C("binary32", 4, neab=3, final_rounding="rne"),
    # AMD CDNA3 FDRDA / GFDRDA
    C("binary16", 8, algorithm="fdrda", neab=2, final_rounding="rne"),
    C("e4m3fnuz", 16, algorithm="fdrda", nfma=16, neab=8),
    C("e5m2fnuz", 16, algorithm="fdrda", nfma=8, interleave="even_odd", neab=8,
      final_rounding="rne", carry_bits=2),
    C("e4m3", 8, algorithm="fdrda", interleave="even_odd", align_rounding="rd",
      flush=("inputs", "output")),
    # sequential FMAs
    C("binary16", 4, algorithm="sfma", nfma=1, final_rounding="rne"),
    C("binary32", 4, algorithm="sfma", nfma=1, final_rounding="rd", flush=("output",)),
    C("binary64", 4, algorithm="sfma", nfma=1, c_format="binary64", out_format="binary64",
      final_rounding="rne"),
    C("bfloat16", 4, algorithm="sfma", nfma=1, c_format="bfloat16", out_format="bfloat16",
      final_rounding="ro"),
    # AMD CDNA2 group pairwise sums (flushing), CDNA1 (no flushing)
    C("binary16", 8, algorithm="gps", nfma=4, flush=FLUSH_STAGES),
    C("bfloat16", 8, algorithm="gps", nfma=8, flush=FLUSH_STAGES),
    C("binary32", 4, algorithm="gps", nfma=2, flush=FLUSH_STAGES),
    C("binary16", 8, algorithm="gps", nfma=4),
    # zero_sign 'positive' on every fused algorithm and engine, with the flushes and
    # roundings that make a non-zero sum a zero
    C("binary16", 16, neab=2, zero_sign="positive"),                      # float64
    C("binary16", 8, c_format="binary16", out_format="binary16", final_rounding="rne",
      flush=("output",), zero_sign="positive"),
    C("e5m2", 16, interleave="pairs", nfma=8, neab=2, c_placement="late",
      c_format="binary16", out_format="binary16", final_rounding="rne", zero_sign="positive"),
    C("tf32", 8, neab=30, final_rounding="rd", zero_sign="positive"),     # int64
    C("binary16", 8, neab=40, flush=("sums", "output"), zero_sign="positive"),  # object
    C("bfloat16", 8, algorithm="fdrda", nfma=4, neab=1, final_rounding="rne",
      product_overflow=True, zero_sign="positive"),
    C("e4m3fnuz", 16, algorithm="fdrda", nfma=8, interleave="even_odd", neab=1,
      final_rounding="rd", zero_sign="positive"),
    # NaN payload propagation (Hopper DMMA) in three formats
    C("binary64", 4, algorithm="sfma", nfma=1, c_format="binary64", out_format="binary64",
      final_rounding="rne", nan="propagate"),
    C("binary32", 4, algorithm="sfma", nfma=1, final_rounding="rz", nan="propagate"),
    C("binary16", 4, algorithm="sfma", nfma=1, c_format="binary16", out_format="binary16",
      final_rounding="rne", nan="propagate", flush=("output",)),
    # a and b in different formats, on every algorithm and engine
    C("e4m3", 32, b_format="e5m2", nfma=32, neab=-10, out_frac_bits=13),  # float64
    C("e5m2", 32, b_format="e4m3", interleave="pairs", nfma=16, neab=2, c_placement="late"),
    C("binary16", 16, b_format="bfloat16", neab=2, zero_sign="positive"),
    C("tf32", 8, b_format="binary16", nfma=4, neab=30),                  # int64
    C("e2m1", 16, b_format="e3m2", neab=40),                              # object
    C("e5m2fnuz", 16, b_format="e4m3fnuz", algorithm="fdrda", nfma=16, neab=1,
      interleave="even_odd", final_rounding="rne", product_overflow=True),
    C("binary16", 4, b_format="bfloat16", algorithm="sfma", nfma=1, final_rounding="rne"),
    C("bfloat16", 8, b_format="binary16", algorithm="gps", nfma=4, flush=FLUSH_STAGES),
    # block scaling: MXFP8/6/4 (UE8M0, block 32) on fused blocks, NVFP4 GDFS (UE4M3, 16)
    C("e4m3", 32, neab=2, scale_format="ue8m0", scale_block=32, zero_sign="positive"),
    C("e2m1", 32, b_format="e5m2", nfma=16, neab=2, scale_format="ue8m0", scale_block=16,
      final_rounding="rne", flush=("output",)),
    C("e3m2", 32, b_format="e2m3", neab=2, scale_format="ue4m3", scale_block=8,
      product_normalisation="normalised", align_rounding="rne"),
    C("e2m1", 64, algorithm="gdfs", nfma=16, neab=12, scale_format="ue4m3", scale_block=16,
      zero_sign="positive"),
    C("e2m1", 64, algorithm="gdfs", nfma=16, neab=12, scale_format="ue8m0", scale_block=32),
    C("e3m2", 32, b_format="e2m3", algorithm="gdfs", nfma=8, neab=4, scale_format="ue8m0",
      scale_block=16, final_rounding="rne", align_rounding="rd", carry_bits=2,
      flush=("inputs", "output")),
]


def _ids(cfgs):
    return [cfg.describe() for cfg in cfgs]


def _compare(cfg, a, b, c, what=""):
    got = evaluate(cfg, a, b, c)
    assert got.dtype == np.uint64 and got.shape == (a.shape[0],)
    for i in range(a.shape[0]):
        want = reference_dot(cfg, a[i], b[i], c[i])
        if int(got[i]) != want:
            pytest.fail(f"{cfg.describe()} {what} row {i}: a={[hex(x) for x in a[i]]} "
                        f"b={[hex(x) for x in b[i]]} c={int(c[i]):#x}: model {int(got[i]):#x}, "
                        f"reference {want:#x}")


def test_config_list_covers_every_field_value():
    seen = {f: {getattr(cfg, f) for cfg in CONFIGS}
            for f in ("algorithm", "product_normalisation", "align_rounding", "c_placement",
                      "interleave", "final_rounding", "late_rounding", "nan",
                      "product_overflow", "in_format", "out_format")}
    assert seen["algorithm"] == {"fused", "fdrda", "sfma", "gps", "gdfs"}
    assert seen["align_rounding"] == set(ALIGN_ROUNDINGS)
    assert seen["final_rounding"] == set(ROUNDING_MODES)
    assert seen["interleave"] == {"none", "pairs", "even_odd"}
    assert seen["c_placement"] == {"early", "late"}
    assert seen["product_normalisation"] == {"denormalised", "normalised"}
    assert seen["nan"] == {"canonical", "ieee", "propagate"}
    assert seen["product_overflow"] == {True, False}
    assert {cfg.zero_sign for cfg in CONFIGS} == {"ieee", "positive"}
    assert {cfg.scale_format for cfg in CONFIGS} == {None, "ue8m0", "ue4m3"}
    assert {(cfg.algorithm, cfg.zero_sign) for cfg in CONFIGS} >= {
        ("fused", "positive"), ("fdrda", "positive"), ("gdfs", "positive")}
    assert {cfg.algorithm for cfg in CONFIGS if cfg.b_format} == {
        "fused", "fdrda", "sfma", "gps", "gdfs"}
    for flag in ("positive", "mixed"):
        engines = {accumulator.engine_name(cfg) for cfg in CONFIGS
                   if (cfg.zero_sign == "positive" if flag == "positive" else cfg.b_format)}
        assert engines == {"float64", "int64", "object"}, flag
    assert set(SMALL_INPUTS) <= seen["in_format"]
    assert seen["out_format"] == {"binary32", "binary16", "bfloat16", "binary64"}
    assert {s for cfg in CONFIGS for s in cfg.flush} == set(FLUSH_STAGES)
    assert {cfg.carry_bits for cfg in CONFIGS} >= {None, 0, 3, 16}
    assert {accumulator.engine_name(cfg) for cfg in CONFIGS} == {"float64", "int64", "object"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cfg", CONFIGS, ids=_ids(CONFIGS))
def test_random_rows(cfg, kind):
    rng = np.random.default_rng(zlib.crc32(f"{cfg.describe()}/{kind}".encode()))
    a, b, c = random_rows(cfg, 60, rng, kind)
    _compare(cfg, a, b, c, kind)


FLOAT_CONFIGS = [cfg for cfg in CONFIGS if accumulator.engine_name(cfg) == "float64"]


@pytest.mark.parametrize("cfg", FLOAT_CONFIGS, ids=_ids(FLOAT_CONFIGS))
def test_float_engine_matches_integer_engine(cfg):
    """Many rows (several chunks) through both engines: the float64 one must be exact."""
    rng = np.random.default_rng(7)
    for kind in KINDS:
        a, b, c = random_rows(cfg, 2 * accumulator.CHUNK + 17, rng, kind)
        fast = evaluate(cfg, a, b, c)
        a, b, scale_a, scale_b = accumulator.unpack(cfg, a, b)  # packed scale factors
        slow = engine_int.run_int(cfg, a, b, c, None if scale_a is None else (scale_a, scale_b))
        bad = np.flatnonzero(fast != slow)
        assert bad.size == 0, (cfg.describe(), kind, bad[:5])


# -- hypothesis: configurations and rows drawn together ------------------------------------

@st.composite
def configs(draw):
    algorithm = draw(st.sampled_from(["fused", "fused", "fused", "fdrda", "sfma", "gps",
                                      "gdfs"]))
    if algorithm == "sfma":
        fin = draw(st.sampled_from(SMALL_INPUTS + ("binary32", "binary64")))
        fout = draw(st.sampled_from(["binary32", "binary16", "bfloat16", "binary64"]))
        if draw(st.booleans()) and fin in ("binary16", "bfloat16", "binary32", "binary64"):
            # payload propagation: one IEEE format throughout
            return C(fin, draw(st.integers(1, 6)), algorithm="sfma", nfma=1, c_format=fin,
                     out_format=fin, nan="propagate",
                     final_rounding=draw(st.sampled_from(ROUNDING_MODES)))
        return C(fin, draw(st.integers(1, 6)), algorithm="sfma", nfma=1,
                 b_format=draw(st.sampled_from([None, "binary16", "e5m2"])),
                 c_format=draw(st.sampled_from([fout, "binary32"])), out_format=fout,
                 final_rounding=draw(st.sampled_from(ROUNDING_MODES)),
                 flush=draw(st.sampled_from([(), ("output",)])))
    fin = draw(st.sampled_from(SMALL_INPUTS))
    fb = draw(st.sampled_from([None, None, *SMALL_INPUTS]))
    if algorithm == "gps":
        g = draw(st.sampled_from([1, 2, 4]))
        return C(fin, g * draw(st.integers(1, 3)), algorithm="gps", nfma=g, b_format=fb,
                 flush=draw(st.sampled_from([(), FLUSH_STAGES])))
    scale = draw(st.sampled_from([None, None, "ue8m0", "ue4m3"]))
    if algorithm == "gdfs":
        g = draw(st.sampled_from([1, 2, 4, 8]))
        block = g * draw(st.sampled_from([1, 2]))
        return C(fin, block * draw(st.integers(1, 3)), algorithm="gdfs", nfma=g, b_format=fb,
                 neab=draw(st.sampled_from([-10, 0, 2, 12, 30])),
                 scale_format=scale or "ue8m0", scale_block=block,
                 align_rounding=draw(st.sampled_from(ALIGN_ROUNDINGS)),
                 carry_bits=draw(st.sampled_from([None, None, 0, 2])),
                 final_rounding=draw(st.sampled_from(ROUNDING_MODES)),
                 flush=tuple(draw(st.sets(st.sampled_from(("inputs", "output"))))),
                 zero_sign=draw(st.sampled_from(["ieee", "positive"])))
    interleave = "none"
    if algorithm == "fused":
        interleave = draw(st.sampled_from(["none", "none", "pairs"]))
    if interleave == "pairs":
        k = 4 * draw(st.integers(1, 3))
        nfma = k // 2
    else:
        nfma = draw(st.integers(1, 6))
        if algorithm == "fdrda":
            interleave = draw(st.sampled_from(["none", "even_odd"]))
            if interleave == "even_odd":
                nfma = 2 * draw(st.integers(1, 4))
        k = nfma * draw(st.integers(1, 3))
    fout = "binary32"
    fc = "binary32"
    if algorithm == "fused" and interleave == "none":
        fout = draw(st.sampled_from(["binary32", "binary32", "binary16", "bfloat16",
                                     "binary64"]))
        fc = draw(st.sampled_from([fout, "binary32"]))
    else:
        scale = None
    block = None
    if scale:
        block = draw(st.sampled_from([b for b in range(1, k + 1) if k % b == 0]))
    out_t = get_format(fout).t
    return C(fin, k, algorithm=algorithm, nfma=nfma, interleave=interleave, b_format=fb,
             scale_format=scale, scale_block=block,
             zero_sign=draw(st.sampled_from(["ieee", "positive"])),
             c_format=fc, out_format=fout,
             neab=draw(st.sampled_from([-23, -10, -3, 0, 1, 2, 3, 8, 20, 30, 40])),
             product_normalisation=draw(st.sampled_from(["denormalised", "normalised"])),
             align_rounding=draw(st.sampled_from(ALIGN_ROUNDINGS)),
             carry_bits=draw(st.sampled_from([None, None, 0, 1, 3])),
             c_placement=draw(st.sampled_from(["early", "early", "late"])),
             final_rounding=draw(st.sampled_from(ROUNDING_MODES)),
             late_rounding=draw(st.sampled_from(ROUNDING_MODES)),
             out_frac_bits=draw(st.sampled_from([None, None, min(13, out_t), 1])),
             flush=tuple(draw(st.sets(st.sampled_from(FLUSH_STAGES)))),
             nan=draw(st.sampled_from(["canonical", "ieee"])),
             product_overflow=draw(st.booleans()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs(), seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(KINDS))
def test_hypothesis_configs(cfg, seed, kind):
    a, b, c = random_rows(cfg, 24, np.random.default_rng(seed), kind)
    _compare(cfg, a, b, c, kind)


@st.composite
def rows_for(draw, cfg):
    fin, fb, fc = get_format(cfg.in_format), get_format(cfg.b_fmt), get_format(cfg.c_format)
    a = draw(st.lists(st.integers(0, (1 << fin.bits) - 1), min_size=cfg.k, max_size=cfg.k))
    b = draw(st.lists(st.integers(0, (1 << fb.bits) - 1), min_size=cfg.k, max_size=cfg.k))
    c = draw(st.integers(0, (1 << fc.bits) - 1))
    return ([x << fin.pad for x in a], [x << fb.pad for x in b], c << fc.pad)


HYPO_ROW_CONFIGS = [CONFIGS[0], CONFIGS[6], CONFIGS[10], CONFIGS[19], CONFIGS[27],
                    CONFIGS[29], CONFIGS[33]] + [c for c in CONFIGS if c.nan == "propagate"
                                                 or c.zero_sign == "positive"][:4]


@pytest.mark.parametrize("cfg", HYPO_ROW_CONFIGS, ids=_ids(HYPO_ROW_CONFIGS))
def test_hypothesis_rows(cfg):
    @settings(max_examples=40, deadline=None)
    @given(row=rows_for(cfg))
    def check(row):
        a, b, c = row
        _compare(cfg, np.array([a], np.uint64), np.array([b], np.uint64),
                 np.array([c], np.uint64))

    check()


# -- adversarial hand-built rows -------------------------------------------------------------

def _rows(cfg, rows):
    """Rows of exact values (numbers or 'inf'/'-inf'/'nan'/'-0' or hex strings) -> bits."""
    fin, fc = get_format(cfg.in_format), get_format(cfg.c_format)

    def enc(fmt, x):
        if isinstance(x, str):
            if x.startswith("0x"):
                return int(x, 16)
            return {"inf": fmt.inf_bits(0), "-inf": fmt.inf_bits(1), "nan": fmt.nan_bits(),
                    "-0": fmt.zero_bits(1)}[x]
        bits = fmt.from_fraction(Fraction(x))
        assert fmt.to_fraction(bits) == Fraction(x), (x, fmt.name)
        return bits

    A, B, Cc = [], [], []
    for a, b, c in rows:
        a = list(a) + [0] * (cfg.k - len(a))
        b = list(b) + [0] * (cfg.k - len(b))
        A.append([enc(fin, x) for x in a])
        B.append([enc(fin, x) for x in b])
        Cc.append(enc(fc, c))
    return np.array(A, np.uint64), np.array(B, np.uint64), np.array(Cc, np.uint64)


F16_TINY = Fraction(1, 2**24)  # smallest binary16 subnormal
ADVERSARIAL = [
    # massive cancellation: the big terms cancel exactly, the small ones decide
    ([2**15, -(2**15), 3 * F16_TINY, 1], [2**15, 2**15, 1, F16_TINY], 0),
    ([1 + Fraction(1, 1024), -1, 1], [1, 1 + Fraction(1, 1024), Fraction(1, 2**14)], -1),
    ([65504, -65504, Fraction(1, 1024)], [65504, 65504, Fraction(1, 1024)],
     Fraction(-1, 2**20)),
    # carries: many equal large products
    ([65504] * 8, [65504] * 8, 2**127),
    ([-65504] * 8, [65504] * 8, -(2**127)),
    ([1.9990234375] * 8, [1.9990234375] * 8, 1),
    # subnormal products and a subnormal c
    ([F16_TINY, -F16_TINY, 3 * F16_TINY], [F16_TINY, F16_TINY, F16_TINY], Fraction(1, 2**149)),
    ([F16_TINY] * 4, [Fraction(1, 2**14)] * 4, Fraction(-3, 2**149)),
    ([1023 * F16_TINY], [1023 * F16_TINY], Fraction(1, 2**126) - Fraction(1, 2**149)),
    # all-zero rows with mixed zero signs
    (["-0", 0, "-0"], [1, "-0", "-0"], "-0"),
    (["-0", "-0"], [1, 1], "-0"),
    ([0, "-0"], [1, 1], 0),
    (["-0"] * 8, [1] * 8, "-0"),
    # exact cancellation to zero with live terms (sign depends on the rounding mode)
    ([1, -1], [2, 2], 0),
    ([1], [1], -1),
    # infinities and NaNs
    (["inf", 1], [1, 1], 1),
    (["inf", "-inf"], [1, 1], 0),
    (["inf", 0], [0, 1], 0),
    (["nan"], [1], 1),
    ([1], [1], "inf"),
    (["-inf"], [2], "-inf"),
    ([2], [3], "nan"),
    (["inf"], [1], "-inf"),
    # overflow to infinity
    ([65504] * 8, [65504] * 8, Fraction(2**127) * (2 - Fraction(1, 2**23))),
    ([-65504] * 8, [65504] * 8, -Fraction(2**127) * (2 - Fraction(1, 2**23))),
    # c far below / far above the products
    ([1, 1], [1, Fraction(1, 2**10)], Fraction(1, 2**40)),
    ([1], [Fraction(1, 2**14)], 2**100),
    ([1], [1], Fraction(-1, 2**30)),
]

ADVERSARIAL_CONFIGS = [
    C("binary16", 8, nfma=8, neab=2),
    C("binary16", 8, nfma=4, neab=0, carry_bits=0, align_rounding="rd"),
    C("binary16", 8, nfma=2, neab=1, carry_bits=1, align_rounding="rz_sticky",
      final_rounding="rd"),
    C("binary16", 8, neab=3, align_rounding="rne", final_rounding="ru",
      product_normalisation="normalised"),
    C("binary16", 8, flush=("inputs", "products", "sums", "output"), final_rounding="rne"),
    C("binary16", 8, c_placement="late", final_rounding="rd", late_rounding="rd"),
    C("binary16", 8, interleave="pairs", nfma=4, final_rounding="rna", late_rounding="rz"),
    C("binary16", 8, algorithm="fdrda", neab=8, carry_bits=3, nan="ieee"),
    C("binary16", 8, algorithm="fdrda", interleave="even_odd", neab=8, final_rounding="ro"),
    C("binary16", 8, algorithm="sfma", nfma=1, final_rounding="rd"),
    C("binary16", 8, algorithm="gps", nfma=4, flush=FLUSH_STAGES),
    C("binary16", 8, algorithm="gps", nfma=4),
    C("binary16", 8, nfma=8, neab=2, zero_sign="positive", final_rounding="rd"),
    C("binary16", 8, algorithm="fdrda", neab=1, product_overflow=True, zero_sign="positive"),
    C("binary16", 8, nfma=4, neab=30, final_rounding="ro"),
    C("binary16", 8, nfma=8, neab=40, carry_bits=16),
]


@pytest.mark.parametrize("cfg", ADVERSARIAL_CONFIGS, ids=_ids(ADVERSARIAL_CONFIGS))
def test_adversarial_rows(cfg):
    a, b, c = _rows(cfg, ADVERSARIAL)
    _compare(cfg, a, b, c, "adversarial")


def test_adversarial_low_precision_inputs():
    """fp8/fp6/fp4 extremes: saturating formats, FNUZ NaN 0x80, product overflow."""
    for fin, neab in (("e4m3", -10), ("e5m2", 2), ("e4m3fnuz", 0), ("e2m1", 0), ("e3m2", 1)):
        f = get_format(fin)
        cfgs = [C(fin, 4, neab=neab), C(fin, 4, neab=neab, carry_bits=0, final_rounding="rne"),
                C(fin, 4, algorithm="fdrda", neab=neab, product_overflow=True)]
        big, small = f.fmax, f.smin
        rows = [([big] * 4, [big] * 4, 0), ([big, -big, small], [big, big, small], 0),
                ([small] * 4, [small] * 4, "-0"), ([1, -1], [small, small], 0),
                ([big, big, -big, -big], [small, big, big, small], 1)]
        extra_a = [[f.nan_bits(), 0, 0, 0]] if f.has_nan else []
        for cfg in cfgs:
            a, b, c = _rows(cfg, rows)
            if extra_a:
                a = np.vstack([a, np.array(extra_a, np.uint64)])
                b = np.vstack([b, np.ones((1, 4), np.uint64) * np.uint64(f.encode(0, 1 << f.t,
                                                                                   0))])
                c = np.append(c, np.uint64(0))
            _compare(cfg, a, b, c, "low precision")


def test_round_to_format_is_rne():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(300) * 2.0 ** rng.integers(-30, 30, 300),
                        [0.0, -0.0, 1e300, -1e300, 5e-324]])
    for name in SMALL_INPUTS + ("binary32",):
        fmt = get_format(name)
        bits = round_to_format(x, fmt)
        for xi, bi in zip(x, bits):
            want = fmt.from_fraction(Fraction(float(xi)), saturate=not fmt.has_inf)
            if xi == 0 and np.signbit(xi):
                want = fmt.zero_bits(1)
            assert int(bi) == want, (name, float(xi), hex(int(bi)), hex(want))


def test_shape_errors():
    cfg = C("binary16", 4)
    with pytest.raises(InputError, match="shape"):
        evaluate(cfg, np.zeros((2, 3)), np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(InputError, match="c must have shape"):
        evaluate(cfg, np.zeros((2, 4)), np.zeros((2, 4)), np.zeros(3))
    with pytest.raises(InputError, match="not a binary16 value"):
        evaluate(cfg, np.full((1, 4), 0x10000), np.zeros((1, 4)), np.zeros(1))
    with pytest.raises(InputError, match="not a binary32 value"):
        evaluate(cfg, np.zeros((1, 4)), np.zeros((1, 4)), np.full(1, 1 << 32))
    assert evaluate(cfg, np.zeros(4), np.zeros(4), 0).shape == (1,)
    assert evaluate(cfg, np.zeros((0, 4)), np.zeros((0, 4)), np.zeros(0)).shape == (0,)


# -- exhaustive / large checks (pytest -m slow) ---------------------------------------------

SLOW_E2M1 = [
    C("e2m1", 2, neab=0),
    C("e2m1", 2, neab=-23, align_rounding="rne", final_rounding="rne", carry_bits=0),
    C("e2m1", 2, nfma=1, neab=-20, align_rounding="rd", final_rounding="rd",
      c_format="bfloat16", out_format="bfloat16"),
    C("e2m1", 2, neab=-22, align_rounding="rz_sticky", final_rounding="ro",
      product_normalisation="normalised", out_frac_bits=1),
    C("e2m1", 2, algorithm="fdrda", interleave="even_odd", neab=-20),
    C("e2m1", 2, algorithm="gps", nfma=2),
    C("e2m1", 2, algorithm="gps", nfma=2, flush=FLUSH_STAGES),
    C("e2m1", 2, neab=-20, zero_sign="positive", final_rounding="rne"),
    C("e2m1", 2, b_format="e3m2", algorithm="fdrda", neab=-20, zero_sign="positive"),
    C("e2m1", 2, algorithm="sfma", nfma=1, out_format="binary16", c_format="binary16",
      final_rounding="rna"),
]


@pytest.mark.slow
@pytest.mark.parametrize("cfg", SLOW_E2M1, ids=_ids(SLOW_E2M1))
def test_exhaustive_e2m1_pairs(cfg):
    """Every (a0, a1, b0, b1) in e2m1 with a few c values near the products' scale."""
    fc = get_format(cfg.c_format)
    quads = np.array(list(itertools.product(range(16), repeat=4)), np.uint64)
    a, b = quads[:, :2].copy(), quads[:, 2:].copy()
    for cval in (0, "-0", Fraction(1, 4), -3, Fraction(-1, 2**20), 36):
        cbits = _rows(cfg, [([0], [0], cval)])[2][0]
        c = np.full(a.shape[0], cbits, np.uint64)
        got = evaluate(cfg, a, b, c)
        want = np.array([reference_dot(cfg, a[i], b[i], c[i]) for i in range(a.shape[0])],
                        np.uint64)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (cfg.describe(), fc.name, cval, bad[:5])


@pytest.mark.slow
@pytest.mark.parametrize("cfg", CONFIGS, ids=_ids(CONFIGS))
def test_many_random_rows(cfg):
    rng = np.random.default_rng(11)
    for kind in KINDS:
        a, b, c = random_rows(cfg, 3000, rng, kind)
        _compare(cfg, a, b, c, kind)


# -- the float64 engine's variants evaluated at once ----------------------------------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs().filter(lambda c: accumulator.variants_key(c) is not None),
       seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(KINDS),
       changes=st.lists(st.tuples(st.sampled_from([-23, -10, -3, 0, 1, 2, 3, 8, 20]),
                                  st.sampled_from(ROUNDING_MODES)), min_size=2, max_size=6))
def test_variants_at_once_match_one_by_one(cfg, seed, kind, changes):
    """evaluate_variants (variants' rows stacked, the final roundings by slices of rows,
    several passes over the rows) gives each configuration's own evaluate."""
    key = accumulator.variants_key(cfg)
    variants = [cfg]
    for neab, mode in changes:
        try:
            v = dataclasses.replace(cfg, neab=neab, final_rounding=mode)
        except ValueError:
            continue
        if accumulator.variants_key(v) == key:
            variants.append(v)
    a, b, c = random_rows(cfg, 40, np.random.default_rng(seed), kind)
    saved = engine_float.VARIANT_PRODUCTS
    engine_float.VARIANT_PRODUCTS = 64  # passes of 64 // (len(variants) nfma) rows
    try:
        together = accumulator.evaluate_variants(variants, a, b, c)
    finally:
        engine_float.VARIANT_PRODUCTS = saved
    for v, row in zip(variants, together):
        bad = np.flatnonzero(row != evaluate(v, a, b, c))
        assert bad.size == 0, (v.describe(), kind, bad[:5])
