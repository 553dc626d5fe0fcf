"""The observability rules claim equivalences (a feature value that no input tells apart):
check every claim on a sample of configurations against the model on many rows.  A claim
that some row refutes would let `mmaprobe check` pass a feature no probe decides."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig, ConfigError
from mmaprobe.models.features import feature_value
from mmaprobe.models.formats import get_format
from mmaprobe.models.observable import (
    CARRY_VALUES,
    CHECKED_FEATURES,
    NEAB_VALUES,
    _directed_pairs_exact,
    _product_class_key,
    _product_classes,
    _scaled_normalisation_bound,
    alternatives,
    carry_needed,
    late_pairs_normalisation_exact,
    proven_classes,
    rounding_exact,
)
from mmaprobe.models.rows import pool_rows
from mmaprobe.models.sampling import pack_scales
from mmaprobe.models.space import SPACES_DIR, load_spaces, neighbourhood

_DOMAIN = {
    "neab": NEAB_VALUES, "carry_bits": CARRY_VALUES,
    "nfma": None, "align_rounding": ("rz", "rd", "rne", "rz_sticky"),
    "final_rounding": ("rne", "rz", "rd", "ru", "rna", "ro"),
    "product_normalisation": ("denormalised", "normalised"),
    "c_placement": ("early", "late"), "interleave": ("none", "pairs", "even_odd"),
    "nan": ("canonical", "ieee"),
}
_STAGE = {"subnormal_inputs": "inputs", "subnormal_products": "products",
          "subnormal_sums": "sums", "subnormal_output": "output"}


def _variant(cfg: AccumulatorConfig, feature: str, value) -> AccumulatorConfig | None:
    try:
        if feature in _STAGE:
            fl = set(cfg.flush)
            (fl.add if value == "flush" else fl.discard)(_STAGE[feature])
            return cfg.replace(flush=tuple(fl))
        return cfg.replace(**{feature: value})
    except ConfigError:
        return None


def claimed_equivalent(cfg: AccumulatorConfig, feature: str) -> list:
    """Valid values other than the true one that the rules say no input tells apart."""
    truth = feature_value(cfg, feature)
    alts = set(map(repr, alternatives(cfg, feature)))
    domain = _DOMAIN.get(feature) or (("keep", "flush") if feature in _STAGE else
                                      [d for d in range(1, cfg.k + 1) if cfg.k % d == 0])
    out = []
    for v in domain:
        if v == truth or repr(v) in alts:
            continue
        alt = _variant(cfg, feature, v)
        if alt is not None and alt != cfg:
            out.append(v)
    return out


def _rows(cfg: AccumulatorConfig, n: int, seed: int):
    rng = np.random.default_rng(seed)
    (a, b, c), _ = pool_rows(cfg, n, rng)
    fin, fb, fc = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                   get_format(cfg.c_format))
    # raw bit patterns too: subnormals, specials, every exponent
    m = n // 2
    ra = (rng.integers(0, 1 << fin.bits, size=(m, cfg.k)).astype(np.uint64)
          << np.uint64(fin.pad))
    rb = (rng.integers(0, 1 << fb.bits, size=(m, cfg.k)).astype(np.uint64)
          << np.uint64(fb.pad))
    rc = rng.integers(0, 1 << min(fc.bits, 63), size=m).astype(np.uint64) << np.uint64(fc.pad)
    if cfg.scales:  # any scale factors: extreme exponents, ue4m3 zeros, NaN
        ra, rb = pack_scales(cfg, ra, rb, rng, "edge")
    return np.concatenate([a, ra]), np.concatenate([b, rb]), np.concatenate([c, rc])


@pytest.mark.parametrize("fin,fout,k,share", [("e2m1", "binary32", 16, 0.75),
                                              ("e3m2", "binary16", 8, 0.75),
                                              # wider products: fewer sums exact
                                              ("e3m2xe4m3", "binary32", 8, 0.9),
                                              pytest.param("e2m3xe2m1", "binary16", 16, 0.75,
                                                           marks=pytest.mark.slow)])
def test_proven_classes_hold_on_the_model(fin: str, fout: str, k: int, share: float) -> None:
    """The suite evaluates one configuration per proven class: every member of a class
    must give its representative's outputs, bit for bit (the closure joins configurations
    that differ in several features at once, which no single claim above covers)."""
    fa, _, fb = fin.partition("x")
    space = neighbourhood(fa, None, fout, k, operands=(fb, None, None) if fb else None)
    labels = proven_classes(space.configs)
    assert labels.max() + 1 < share * len(space.configs)  # fp4/fp6 sums are often exact
    a, b, c = _rows(space.configs[0], 1200, k)
    first: dict[int, np.ndarray] = {}
    joined = 0
    for cfg, label in zip(space.configs, labels.tolist()):
        got = evaluate(cfg, a, b, c)
        if label not in first:
            first[label] = got
            continue
        bad = np.flatnonzero(got != first[label])
        assert not len(bad), f"{cfg.describe()}: proven class {label}, row {bad[0]} differs"
        joined += 1
    assert joined > (1 - share) * len(space.configs)


SHAPES = [("binary16", "binary32", 4), ("e2m1", "binary32", 8), ("e4m3", "binary16", 16),
          # a and b in formats of their own: the rules bound products by both factors
          ("e4m3xe5m2", "binary32", 8), ("e2m1xe3m2", "binary16", 8),
          ("e2m3xe2m1", "binary32", 16),
          pytest.param("binary16xbfloat16", "binary32", 4, marks=pytest.mark.slow),
          pytest.param("e5m2xe4m3", "binary16", 16, marks=pytest.mark.slow),
          pytest.param("bfloat16", "bfloat16", 4, marks=pytest.mark.slow),
          pytest.param("binary32", "binary32", 2, marks=pytest.mark.slow),
          pytest.param("e3m2", "binary16", 8, marks=pytest.mark.slow),
          pytest.param("tf32", "binary32", 8, marks=pytest.mark.slow)]


def _check_claims(configs: list[AccumulatorConfig], seed: int, sample: int, rows: int) -> None:
    """Every equivalence claimed on a random sample of the configurations holds on
    random rows: the alternative gives the configuration's outputs, bit for bit."""
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(configs), size=min(sample, len(configs)), replace=False)
    checked = 0
    for i in sorted(pick.tolist()):
        cfg = configs[i]
        a, b, c = _rows(cfg, rows, i)
        ref = evaluate(cfg, a, b, c)
        for f in CHECKED_FEATURES:
            for v in claimed_equivalent(cfg, f):
                bad = np.flatnonzero(evaluate(_variant(cfg, f, v), a, b, c) != ref)
                assert not len(bad), (f"{cfg.describe()}: {f}={v!r} claimed equivalent, "
                                       f"row {bad[0]} differs")
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("fin,fout,k", SHAPES)
def test_claimed_equivalences_hold_on_the_model(fin: str, fout: str, k: int) -> None:
    fa, _, fb = fin.partition("x")
    space = neighbourhood(fa, None, fout, k, operands=(fb, None, None) if fb else None)
    _check_claims(space.configs, k, 25, 3000)


SCALED_SHAPES = [("e4m3", "ue8m0", 32, "binary64"), ("e2m1", "ue4m3", 16, "binary64"),
                 ("e2m1", "ue4m3", 16, "binary16"), ("e2m1", "ue4m3", 32, "binary16"),
                 ("e2m1", "ue4m3", 16, "binary32"), ("e2m1", "ue8m0", 32, "binary16"),
                 pytest.param("e3m2", "ue8m0", 32, "bfloat16", marks=pytest.mark.slow),
                 pytest.param("e5m2", "ue8m0", 64, "binary16", marks=pytest.mark.slow)]


@pytest.mark.parametrize("fin,sf,k,fout", SCALED_SHAPES)
def test_claimed_equivalences_hold_under_scale_factors(fin: str, sf: str, k: int,
                                                       fout: str) -> None:
    """As above for block-scaled units (the matrix's configurations, one scale factor per
    block of k products): random scale factors reach products far below and above the
    plain ones, where some claims of the plain rules would fail."""
    (space,) = load_spaces([SPACES_DIR / "matrix.yaml"], (fin, fout, fout, k),
                           operands=(fin, sf, k))
    _check_claims(space.configs, k, 30, 2000)


def test_scaled_subnormal_accumulator_shows_f() -> None:
    """Scale factors put e2m1 products at the output's smallest subnormal: the first
    block returns 2^-149, which the next block aligns at binary32's emin, 23 binades above
    it, so F = 23 drops the next product -2^-151 and F = 25 keeps it (rz: 0).  The
    unscaled unit shows no F from 12 on; the scaled one shows F at any depth there, and
    the rules say so (models/observable.py, _scaled_alignment_exact)."""
    e2, s = get_format("e2m1"), get_format("ue8m0")
    cfg = AccumulatorConfig(in_format="e2m1", out_format="binary32", k=32, nfma=1, neab=0,
                            c_placement="late", scale_format="ue8m0", scale_block=32)
    assert 2 in alternatives(cfg, "neab")
    assert 2 not in alternatives(cfg.replace(scale_format=None, scale_block=None), "neab")
    a = np.zeros((1, 33), dtype=np.uint64)
    b = np.zeros((1, 33), dtype=np.uint64)
    a[0, :2] = [e2.exact_bits(1), e2.exact_bits(Fraction(-1, 2))]
    b[0, :2] = [e2.exact_bits(1), e2.exact_bits(Fraction(1, 2))]
    a[0, 32], b[0, 32] = s.exact_bits(Fraction(1, 2 ** 75)), s.exact_bits(Fraction(1, 2 ** 74))
    c = np.zeros(1, dtype=np.uint64)
    assert evaluate(cfg, a, b, c)[0] == 1                     # 2^-149
    assert evaluate(cfg.replace(neab=2), a, b, c)[0] == 0


def test_scaled_subnormal_accumulator_on_the_products_grid() -> None:
    """NVFP4 into binary16 in blocks of 8 (c late, F = 25): an earlier block's subnormal
    result is aligned at binary16's emin, but every product lies on 2^-20 (0.25 under
    two scale factors 2^-9), which F >= 6 keeps there, and an overflowing one is an
    infinity or the largest value (models/observable.py, _scaled_edges_aligned): the
    alignment rounding does not show, and F only up to the bound.  Under ue8m0 scale
    factors the grid is 2^-256, and it shows."""
    cfg = AccumulatorConfig(in_format="e2m1", out_format="binary16", c_format="binary16",
                            k=16, nfma=8, neab=2, c_placement="late", scale_format="ue4m3",
                            scale_block=16)
    assert alternatives(cfg, "align_rounding") == ()
    assert max(alternatives(cfg, "neab")) < 2
    assert alternatives(cfg.replace(scale_format="ue8m0"), "align_rounding")


def test_scaled_normalisation_hidden_beside_subnormal_accumulators() -> None:
    """MXFP4 at K = 32 into binary32 with c late (F = 23): scale factors near 2^-127 put
    an earlier block's result at binary32's subnormals, aligned at emin above its value,
    so F and the alignment rounding show; the normalisation moves the alignment exponent
    only where a product sets it, and there every term lies on the products' grid
    (models/observable.py, _scaled_normalisation_hidden).  On rows whose scale factors
    reach both ends, F shows and the normalisation does not."""
    cfg = AccumulatorConfig(in_format="e2m1", out_format="binary32", k=32, nfma=16, neab=0,
                            c_placement="late", scale_format="ue8m0", scale_block=32)
    assert alternatives(cfg, "product_normalisation") == ()
    assert 2 in alternatives(cfg, "neab")
    rng = np.random.default_rng(5)
    n = 4000
    a = rng.integers(0, 16, (n, 32)).astype(np.uint64)
    a[rng.random((n, 32)) < 0.5] = 0
    b = rng.integers(0, 16, (n, 32)).astype(np.uint64)
    tiny = rng.random(n) < 0.5
    sa, sb = ((np.where(tiny, rng.integers(0, 12, n), rng.integers(0, 255, n))
               .astype(np.uint64)[:, None]) for _ in range(2))
    c = np.zeros(n, dtype=np.uint64)
    out = evaluate(cfg, a, b, c, sa, sb)
    assert (evaluate(cfg.replace(neab=2), a, b, c, sa, sb) != out).any()
    assert (evaluate(cfg.replace(product_normalisation="normalised"), a, b, c, sa, sb)
            == out).all()


@pytest.mark.parametrize("fa, fb, sf, blk, bound", [
    ("e2m1", "e2m1", "ue4m3", 16, 14),   # NVFP4: 6 x 6 x (15/8)^2 at 2^6, last bit 2^-8
    ("e4m3", "e2m1", "ue8m0", 32, 21),   # 448 x 6 at 2^11, last bit 2^-10
    ("e3m2", "e3m2", "ue8m0", 32, 17),
])
def test_scaled_normalisation_bound_is_tight(fa, fb, sf, blk, bound) -> None:
    """One scale block, c late: from F = v - low (v the largest product's value exponent,
    low the smallest product's last bit) the normalisation never shows, whatever the
    earlier results and the scale factors (models/observable.py,
    _scaled_normalisation_bound); one bit less and random rows under random scale factors
    tell the two apart.  The rows: a tenth of a's elements the largest magnitude, the
    rest anything."""
    rng = np.random.default_rng(blk + bound)
    A, B, S = get_format(fa), get_format(fb), get_format(sf)
    n = 3000
    for out, nfma in (("binary32", 1), ("binary32", blk), ("bfloat16", 2)):
        base = AccumulatorConfig(in_format=fa, b_format=fb, out_format=out, c_format=out,
                                 k=blk, nfma=nfma, c_placement="late", scale_format=sf,
                                 scale_block=blk)
        a = rng.integers(0, 1 << A.bits, (n, blk)).astype(np.uint64)
        b = rng.integers(0, 1 << B.bits, (n, blk)).astype(np.uint64)
        big = rng.random((n, blk)) < 0.1
        a[big] = A.encode(0, A.max_sig, A.emax)
        sa, sb = (rng.integers(0, 1 << S.bits, (n, 1)).astype(np.uint64) for _ in range(2))
        c = np.zeros(n, dtype=np.uint64)
        for f, shows in ((bound, False), (bound + 3, False), (bound - 1, True)):
            cfg = base.replace(neab=f - base.frac_bits + base.neab)
            assert _scaled_normalisation_bound(cfg) == bound
            assert bool(alternatives(cfg, "product_normalisation")) == shows
            other = cfg.replace(product_normalisation="normalised")
            differ = (evaluate(cfg, a, b, c, sa, sb) != evaluate(other, a, b, c, sa, sb))
            if not shows:
                assert not differ.any(), (out, nfma, f)
            elif out == "binary32":
                assert differ.any(), (out, nfma, f)


def test_scaled_one_block_bound_is_tight() -> None:
    """NVFP4 FDA at K = 16 with c late (one pair of ue4m3 scale factors, two-term blocks)
    into binary32: every sum of the 16 products fits binary32 (16 x 144 x 225 < 2^19), so
    the blocks are exact from the F where alignment drops nothing, 18 (the earlier result
    15 x 36 x 225/64 = 1898.4375 at 2^10, a product's last bit at 2^-8;
    models/observable.py, _scaled_sums_fit and _scaled_alignment_exact).  The row of
    neab-scaled-one-block-deep tells F = 17 from 18, and no extreme row tells 18 from 40."""
    e2, s = get_format("e2m1"), get_format("ue4m3")
    cfg = AccumulatorConfig(in_format="e2m1", out_format="binary32", k=16, nfma=1, neab=0,
                            c_placement="late", scale_format="ue4m3", scale_block=16)
    alts = alternatives(cfg, "neab")
    assert -6 in alts and -5 not in alts          # F = 17 shows, F = 18 does not
    assert alternatives(cfg, "align_rounding") == ()
    # into bfloat16 the block results round: one binade more for an earlier result
    bf = cfg.replace(out_format="bfloat16", c_format="bfloat16")
    assert -5 in alternatives(bf, "neab") and -4 not in alternatives(bf, "neab")
    rng = np.random.default_rng(16)
    n = 4000
    vals = [e2.exact_bits(Fraction(v)) for v in (6, -6, 4, 3, Fraction(3, 2), Fraction(1, 2))]
    a = rng.choice(vals, size=(n, 16)).astype(np.uint64)
    b = rng.choice(vals, size=(n, 16)).astype(np.uint64)
    odd = [s.exact_bits(Fraction(m, 8)) for m in (9, 11, 13, 15)]
    sa = rng.choice(odd, size=(n, 1)).astype(np.uint64)
    sb = rng.choice(odd, size=(n, 1)).astype(np.uint64)
    a[0, :15], b[0, :15] = e2.exact_bits(6), e2.exact_bits(6)
    a[0, 15], b[0, 15] = e2.exact_bits(Fraction(3, 2)), e2.exact_bits(Fraction(3, 2))
    sa[0, 0] = sb[0, 0] = s.exact_bits(Fraction(15, 8))
    c = np.zeros(n, dtype=np.uint64)
    f17, f18, f40 = (evaluate(cfg.replace(neab=v), a, b, c, sa, sb) for v in (-6, -5, 17))
    f32 = get_format("binary32")
    assert f32.to_fraction(int(f18[0])) == Fraction(15 * 36 * 225 * 4 + 9 * 225, 256)
    assert f17[0] != f18[0]
    assert (f18 == f40).all()


def test_fdrda_denormalised_dot_aligns_at_the_exponent_fields() -> None:
    """FDRDA's dot product aligns at its largest product's exponent: e_a + e_b for
    denormalised products, so e3m2 x e4m3 (grid 2^-13, fields up to 4 + 8) drops nothing
    at F = 25, while a normalised unit aligns 28 x 448 = 12544 at 13 and rounds the tail
    63 x 2^-13 of align-rounding-fdrda-c-norm-sides (31.5 quanta) one way or another."""
    e3, e4, f32 = get_format("e3m2"), get_format("e4m3"), get_format("binary32")
    cfg = AccumulatorConfig(in_format="e3m2", b_format="e4m3", k=2, nfma=2, neab=2,
                            algorithm="fdrda", out_format="binary32", c_format="binary32")
    norm = cfg.replace(product_normalisation="normalised")
    assert alternatives(cfg, "align_rounding") == ()
    assert set(alternatives(norm, "align_rounding")) == {"rd", "rne", "rz_sticky"}
    a = np.array([[e3.exact_bits(Fraction(28)), e3.exact_bits(Fraction(7, 16))]], np.uint64)
    b = np.array([[e4.exact_bits(Fraction(448)), e4.exact_bits(Fraction(9, 512))]], np.uint64)
    c = np.array([f32.exact_bits(Fraction(-12544))], np.uint64)
    for mode, quanta in (("rz", 31), ("rne", 32), ("rz_sticky", Fraction(63, 2))):
        for unit, want in ((cfg, Fraction(63, 2 ** 13)), (norm, quanta * Fraction(1, 2 ** 12))):
            got = evaluate(unit.replace(align_rounding=mode), a, b, c)[0]
            assert f32.to_fraction(int(got)) == want, (unit.product_normalisation, mode)
    _check_claims([cfg.replace(k=k, nfma=n, interleave=i) for k, n, i in
                   ((4, 4, "none"), (8, 4, "even_odd"), (16, 16, "even_odd"), (8, 2, "none"))],
                  25, 4, 3000)


def test_nearest_pairs_threshold_e4m3_binary16() -> None:
    """Two-term blocks rounded to nearest: e4m3 into binary16 shows F = 24 against 25 (a
    product with a subnormal factor aligns at its exponent field, t binades above its value)
    and nothing beyond (models/observable.py, _nearest_pairs_exact)."""
    e4, h = get_format("e4m3"), get_format("binary16")
    base = dict(in_format="e4m3", c_format="binary16", out_format="binary16", k=1, nfma=1,
                final_rounding="rne")
    f24, f25, f40 = (AccumulatorConfig(neab=n, **base) for n in (1, 2, 17))
    assert 2 not in alternatives(f40, "neab") and 1 in alternatives(f40, "neab")
    assert 2 in alternatives(f24, "neab")
    # 2^8 * 2^-9 (exponent field 2, value 2^-1) against c = -(2^-13 + 2^-23)
    a = np.array([[e4.exact_bits(2 ** 8)]], dtype=np.uint64)
    b = np.array([[e4.exact_bits(Fraction(1, 2 ** 9))]], dtype=np.uint64)
    c = np.array([h.exact_bits(-(Fraction(1, 2 ** 13) + Fraction(1, 2 ** 23)))], dtype=np.uint64)
    assert evaluate(f24, a, b, c)[0] != evaluate(f25, a, b, c)[0]
    # every positive a, every subnormal b, 512 c: F = 25 and F = 40 agree
    rng = np.random.default_rng(5)
    av, bv = np.meshgrid(np.arange(1, 128, dtype=np.uint64), np.arange(1, 8, dtype=np.uint64))
    cs = rng.integers(0, 1 << 16, size=512).astype(np.uint64)
    a = np.repeat(av.reshape(-1, 1), len(cs), axis=0)
    b = np.repeat(bv.reshape(-1, 1), len(cs), axis=0)
    c = np.tile(cs, av.size)
    for cfg in (f25, AccumulatorConfig(**dict(base, neab=2, final_rounding="rna"))):
        far = cfg.replace(neab=17)
        assert np.array_equal(evaluate(cfg, a, b, c), evaluate(far, a, b, c))


def _sticky_unit(neab: int, **kw) -> AccumulatorConfig:
    return AccumulatorConfig(k=1, nfma=1, neab=neab, align_rounding="rz_sticky", **kw)


def test_sticky_pairs_width_bound_binary16() -> None:
    """A sticky bit keeps one dropped bit exactly, not two: with the inputs flushed, c =
    2^2 and the product -(2 - 2^-10)^2 = -(4 - 2^-8 + 2^-20) leave 4095 * 2^-20, a tie
    for binary16 that rounds to even 2^-8; at F = 20 the alignment drops the product's two
    lowest bits (01), the sticky bit puts back 10 and the sum 4094 * 2^-20 is exact
    (models/observable.py, _sticky_pairs_exact: F >= ta + tb + 2 - 1)."""
    h = get_format("binary16")
    kw = dict(in_format="binary16", c_format="binary16", out_format="binary16",
              final_rounding="rne", flush=("inputs",))
    f20, f21, f40 = (_sticky_unit(n - 23, **kw) for n in (20, 21, 40))
    m = Fraction(2 ** 11 - 1, 2 ** 10)
    a = np.array([[h.exact_bits(-m)]], dtype=np.uint64)
    b = np.array([[h.exact_bits(m)]], dtype=np.uint64)
    c = np.array([h.exact_bits(Fraction(4))], dtype=np.uint64)
    got = [h.to_fraction(int(evaluate(cfg, a, b, c)[0])) for cfg in (f20, f21, f40)]
    assert got == [Fraction(4094, 2 ** 20), Fraction(1, 2 ** 8), Fraction(1, 2 ** 8)]
    assert 20 - 23 in alternatives(f40, "neab") and 21 - 23 not in alternatives(f40, "neab")


def _boundary_terms(fin: str, fout: str, factors, depths, fb: str | None = None):
    """(a, b, c, s) patterns of one product P = a * b * 2^s (factors (x, y) or (x, y, s);
    y in fb's format where given, else fin's) and c = M - P + tail: M a grid point or
    midpoint of the output near P (in P's binade or the one below), the tail +-1 or +-3
    times 2^(E - depth), E = P's exponent field.  Such rows put the exact sum a tail away
    from a rounding boundary, where a block that drops or rounds the tail differs."""
    fi, fo = get_format(fin), get_format(fout)
    fy = get_format(fb or fin)
    for x, y, *scale in factors:
        sc = scale[0] if scale else 0
        p = x * y * Fraction(2) ** sc
        e_field = fi.decode(fi.exact_bits(x))[3] + fy.decode(fy.exact_bits(y))[3] + sc
        v = p.numerator.bit_length() - p.denominator.bit_length()
        v -= Fraction(2) ** v > p
        for drop in (0, 1):
            g = Fraction(2) ** (max(v - drop, fo.emin) - fo.t)
            for j in range(-2, 4):
                m = (p / g).__floor__() * g + j * g / 2
                for depth in depths:
                    for t in (1, -1, 3, -3):
                        cb = fo.exact_bits(m - p + t * Fraction(2) ** (e_field - depth))
                        if cb is not None:
                            yield fi.exact_bits(x), fy.exact_bits(y), cb, sc


def _boundary_rows(fin: str, fout: str, factors, depths, fb: str | None = None):
    """Rows (a, b, c) of _boundary_terms (one product, K = 1)."""
    rows = list(_boundary_terms(fin, fout, factors, depths, fb))
    return (np.array([[r[0]] for r in rows], dtype=np.uint64),
            np.array([[r[1]] for r in rows], dtype=np.uint64),
            np.array([r[2] for r in rows], dtype=np.uint64))


def _differing(unit, a, b, c, fs) -> dict[int, int]:
    far = evaluate(unit(40), a, b, c)
    return {f: int((evaluate(unit(f - 23), a, b, c) != far).sum()) for f in fs}


def _scaled_boundary_rows(fin: str, fout: str, sf: str, k: int, factors, depths):
    """_boundary_rows for a block-scaled unit (one scale block of k): the product P = x y
    2^s of row position 0 under scale factors 2^s and 1, c = M - P + tail as there (the
    tail below P's exponent field, e_x + e_y + s)."""
    fs = get_format(sf)
    rows = list(_boundary_terms(fin, fout, factors, depths))
    n = len(rows)
    a = np.zeros((n, k), dtype=np.uint64)
    b = np.zeros((n, k), dtype=np.uint64)
    a[:, 0] = [r[0] for r in rows]
    b[:, 0] = [r[1] for r in rows]
    sa = np.array([[fs.exact_bits(Fraction(2) ** r[3])] for r in rows], dtype=np.uint64)
    sb = np.full((n, 1), fs.exact_bits(1), dtype=np.uint64)
    return a, b, np.array([r[2] for r in rows], dtype=np.uint64), sa, sb


@pytest.mark.parametrize("fin,fout,final,align,first", [
    ("e2m1", "binary16", "rne", "rz", 24),
    ("e2m1", "bfloat16", "rna", "rne", 18),
    ("e3m2", "binary16", "rne", "rd", 26),
    ("e2m1", "binary16", "rne", "rz_sticky", 14),   # a sticky bit: _sticky_pairs_exact
    ("e3m2", "binary16", "rz", "rz_sticky", 15),
])
def test_nearest_pairs_threshold_under_power_of_two_scale_factors(
        fin: str, fout: str, final: str, align: str, first: int) -> None:
    """MX two-term blocks (ue8m0 scale factors, c early) rounded to nearest, or with a
    sticky bit: the scale factors move a product anywhere and add no bit, so the unscaled
    proofs hold with the products' exponent fields unbounded (models/observable.py,
    _nearest_pairs_bounds, _sticky_pairs_exact):
    F = first - 1 tells some boundary row from F = 63 (e2m1 into binary16: 0.5 x 1 2^s
    at field s + 0, 2 binades above its value, beside c's midpoint and a tail 11 bits
    below it), F >= first none, and alternatives() claims exactly that."""
    fi = get_format(fin)
    pos = [fi.to_fraction(i) for i in range(1, (1 << (fi.bits - 1)) - 1)
           if fi.decode(i)[0] == "finite"]
    factors = [(x, sg * y, sc) for x in pos[:3] for y in pos for sg in (1, -1)
               for sc in (-20, -3, 0, 6)]
    a, b, c, sa, sb = _scaled_boundary_rows(fin, fout, "ue8m0", 32, factors,
                                            range(first - 4, first + 2))

    def unit(n):
        return AccumulatorConfig(in_format=fin, c_format=fout, out_format=fout, k=32, nfma=1,
                                 neab=n, final_rounding=final, align_rounding=align,
                                 scale_format="ue8m0", scale_block=32)
    far = evaluate(unit(40), a, b, c, sa, sb)
    differ = {f: int((evaluate(unit(f - 23), a, b, c, sa, sb) != far).sum())
              for f in range(first - 1, first + 3)}
    assert differ[first - 1], differ
    assert not any(differ[f] for f in range(first, first + 3)), differ
    claimed = set(alternatives(unit(40), "neab"))
    assert first - 1 - 23 in claimed and not claimed & set(range(first - 23, first + 3 - 23))
    # the alignment roundings and normalisations claimed one unit there give its outputs
    u = unit(first - 23)
    ref = evaluate(u, a, b, c, sa, sb)
    same = [u.replace(align_rounding=v) for v in ("rz", "rd", "rne", "rz_sticky")
            if v != align and v not in alternatives(u, "align_rounding")]
    if not alternatives(u, "product_normalisation"):
        same.append(u.replace(product_normalisation="normalised"))
    assert same
    for alt in same:
        assert (evaluate(alt, a, b, c, sa, sb) == ref).all(), alt.describe()


@pytest.mark.parametrize("final,same,first", [("ru", "rd", 24), ("rne", "rne", 23)])
def test_same_alignment_under_power_of_two_scale_factors(final: str, same: str,
                                                         first: int) -> None:
    """e2m1 two-term blocks under ue8m0 scale factors into binary16: below the bound of
    test_nearest_pairs_threshold_under_power_of_two_scale_factors (24), round-up makes rz
    and rd alignment one unit from F = 24 (_ru_pairs_same_alignment) and rne makes rz and
    rne alignment one unit at F = 23 (_nearest_pairs_same_alignment), as for unscaled
    units; one F lower some boundary row tells them apart, and alternatives() says so."""
    fi = get_format("e2m1")
    pos = [fi.to_fraction(i) for i in range(1, 7)]
    factors = [(x, sg * y, sc) for x in pos[:3] for y in pos for sg in (1, -1)
               for sc in (-20, -3, 0, 6)]
    a, b, c, sa, sb = _scaled_boundary_rows("e2m1", "binary16", "ue8m0", 32, factors,
                                            range(first - 4, first + 2))

    def unit(f, align):
        return AccumulatorConfig(in_format="e2m1", c_format="binary16", out_format="binary16",
                                 k=32, nfma=1, neab=f - 23, final_rounding=final,
                                 align_rounding=align, scale_format="ue8m0", scale_block=32)
    for f in (first - 1, first):
        one = np.array_equal(evaluate(unit(f, "rz"), a, b, c, sa, sb),
                             evaluate(unit(f, same), a, b, c, sa, sb))
        assert one == (f >= first), f
        assert (same in alternatives(unit(f, "rz"), "align_rounding")) == (f < first), f


def test_sticky_pairs_threshold_bfloat16_binary16() -> None:
    """bfloat16 products with a subnormal factor into binary16 (rne, rz_sticky alignment):
    P = a * b aligns at its exponent field E = -126 + e_b, 7 binades above the value for
    the smallest subnormal a; c = M - P + tail puts the exact sum a tail away from an
    output midpoint or grid point M.  F = 18 tells some such row from F = 63, F >= 19
    none (models/observable.py, _sticky_pairs_exact: F >= d + 1 + out_t + extra = 7 + 1 +
    10 + 1)."""
    factors = [(Fraction(ma, 2 ** 133), Fraction(mb, 128) * 2 ** eb)
               for ma in (1, 2, 3, 5, 127) for mb in (128, 129, 191, 255)
               for eb in (100, 110, 118, 127)]
    a, b, c = _boundary_rows("bfloat16", "binary16", factors, range(15, 26))

    def unit(n):
        return _sticky_unit(n, in_format="bfloat16", c_format="binary16",
                            out_format="binary16", final_rounding="rne")
    differ = _differing(unit, a, b, c, range(17, 24))
    assert differ[17] and differ[18], differ
    assert not any(differ[f] for f in range(19, 24)), differ
    claimed = set(alternatives(unit(40), "neab"))
    assert 18 - 23 in claimed and not claimed & set(range(19 - 23, 24 - 23))


@pytest.mark.parametrize("align", ["rne", "rd"])
def test_nearest_pairs_threshold_e4m3_bfloat16(align: str) -> None:
    """e4m3 into bfloat16 under rne with rne or rd alignment: the extra bit those
    alignments need (an all-ones accumulator rounded onto a midpoint beside a product) is
    needed only where the product is odd on the output's grid, and e4m3 products of
    subnormal inputs (7 bits at most with one, 6 with two; the deepest binades) never are:
    F = 21 (rd: 20) tells some row from F = 63, F >= 22 none (models/observable.py,
    _nearest_pairs_exact; 23 before)."""
    e4 = get_format("e4m3")
    pos = [e4.to_fraction(i) for i in range(1, 0x7F)]
    factors = [(x, y) for x in pos[:7] for y in pos[:7] + pos[7::3]]
    a, b, c = _boundary_rows("e4m3", "bfloat16", factors, range(19, 25))

    def unit(n):
        return AccumulatorConfig(in_format="e4m3", c_format="bfloat16", out_format="bfloat16",
                                 k=1, nfma=1, neab=n, final_rounding="rne",
                                 align_rounding=align)
    differ = _differing(unit, a, b, c, range(20, 26))
    assert differ[21 if align == "rne" else 20], differ
    assert not any(differ[f] for f in range(22, 26)), differ
    claimed = set(alternatives(unit(40), "neab"))
    assert 21 - 23 in claimed and not claimed & set(range(22 - 23, 26 - 23))


@pytest.mark.parametrize("flush", [("output",), ("products",)])
def test_binary64_final_rounding_shows_only_in_zero_signs(flush) -> None:
    """binary64 into binary64 at F = 23: a block sum has at most 27 bits, so it is exact
    unless it lies far below 2^-1022, where a flushed output hides the rounding
    (rounding_flushed), and with products below 2^-126 flushed no block aligns that low
    (rounding_exact): only round-down shows, through the sign of an exact zero."""
    rng = np.random.default_rng(7)
    base = dict(in_format="binary64", c_format="binary64", out_format="binary64", k=4,
                nfma=2, flush=flush)
    cfgs = {m: AccumulatorConfig(final_rounding=m, **base) for m in ("rne", "rz", "ru", "rd")}
    assert alternatives(cfgs["rne"], "final_rounding") == ("rd",)
    (a, b, c), _ = pool_rows(cfgs["rne"], 4000, rng)
    n = 4000                                            # tiny sums too
    e = rng.integers(-1050, -100, size=(n, 4))
    sign = np.where(rng.random((n, 4)) < 0.5, -1.0, 1.0)
    ta = ((rng.random((n, 4)) + 1) * np.exp2(e // 2)).view(np.uint64)
    tb = (sign * (rng.random((n, 4)) + 1) * np.exp2(e - e // 2)).view(np.uint64)
    tc = ((rng.random(n) + 1) * np.exp2(rng.integers(-1074, -1000, size=n))).view(np.uint64)
    a, b, c = np.concatenate([a, ta]), np.concatenate([b, tb]), np.concatenate([c, tc])
    ref = evaluate(cfgs["rne"], a, b, c)
    for m in ("rz", "ru"):
        assert np.array_equal(evaluate(cfgs[m], a, b, c), ref), m
    rd = evaluate(cfgs["rd"], a, b, c)
    mag = np.uint64(0x7FFF_FFFF_FFFF_FFFF)
    differ = rd != ref
    assert differ.any() and not ((rd[differ] & mag).any() or (ref[differ] & mag).any())


@pytest.mark.parametrize("fin,fout,final,align,first", [
    ("e5m2", "binary16", "rne", "rz", 24),   # products of two subnormals lie below the grid
    ("e5m2", "binary16", "rna", "rne", 24),
    ("e4m3", "binary16", "rna", "rd", 25),   # rna: the extra bit only on the far side
    ("e5m2", "bfloat16", "rna", "rne", 20),
])
def test_nearest_pairs_threshold_fp8(fin: str, fout: str, final: str, align: str,
                                     first: int) -> None:
    """fp8 two-term blocks rounded to nearest, from the F that models/observable.py
    (_nearest_pairs_exact) proves correctly rounded: F = first - 1 tells some boundary row
    from F = 63, F >= first none, and alternatives() claims exactly that.
    * e5m2 into binary16: a product of two subnormal inputs (2^-32) lies below binary16's
      grid, but its exponent field (-28) lies below any non-zero accumulator's (-14), so it
      never sets the alignment beside one; the bound holds as for e4m3.
    * rna: the all-ones accumulator T2 = o -+ q/2 that rne or rd alignment rounds onto the
      tie T1 + o changes the result only where rna takes the tie away from T1, on T1's far
      side, where the output's spacing is the coarser one: no extra bit beyond the near
      side's (e4m3 into binary16: 25, not 26; e5m2 into bfloat16: 20, not 21)."""
    fi = get_format(fin)
    pos = [fi.to_fraction(i) for i in range(1, 0x7B)]      # finite in e4m3 and e5m2
    factors = [(x, s * y) for x in pos[:2] for y in pos for s in (1, -1)]  # a subnormal a
    a, b, c = _boundary_rows(fin, fout, factors, range(first - 4, first + 2))

    def unit(n):
        return AccumulatorConfig(in_format=fin, c_format=fout, out_format=fout, k=1, nfma=1,
                                 neab=n, final_rounding=final, align_rounding=align)
    differ = _differing(unit, a, b, c, range(first - 1, first + 3))
    assert differ[first - 1], differ
    assert not any(differ[f] for f in range(first, first + 3)), differ
    claimed = set(alternatives(unit(40), "neab"))
    assert first - 1 - 23 in claimed and not claimed & set(range(first - 23, first + 3 - 23))


@pytest.mark.parametrize("fin,fb,fout,align,first", [
    ("e3m2", "e4m3", "binary16", "rz", 24),   # was 27: a.smin b.smin aligns at 2^-8
    ("e3m2", "e4m3", "binary16", "rd", 24),
    ("e3m2", "e3m2", "binary16", "rne", 24),  # was 26: e3m2.smin^2 aligns at 2^-4
    ("e3m2", "e4m3", "bfloat16", "rz", 21),   # bfloat16's grid lies far below: as before
])
def test_nearest_pairs_c_early_accumulator_on_the_output_grid(fin: str, fb: str, fout: str,
                                                              align: str, first: int) -> None:
    """With c early on the output's grid, a two-term block whose product sets the alignment
    at field e keeps the accumulator whole once F >= e - (out.emin - out_t)
    (models/observable.py, _nearest_pairs_bounds): a product of two subnormals of e3m2 x
    e4m3, 2^-13 at field 2^-8, is exact beside binary16's 2^-24 grid from F = 16, below
    the deep field's nearest bound (27).  The bound is then set by a.smin 2^8 (field 2^6,
    two binades deep): F = 23 tells some boundary row from F = 63, F >= 24 none, and
    alternatives() claims exactly that."""
    fa, fy = get_format(fin), get_format(fb)
    pos_b = [fy.to_fraction(i) for i in range(1, 1 << (fy.bits - 1))
             if fy.decode(i)[0] not in ("inf", "nan")]
    subs_a = [fa.to_fraction(i) for i in range(1, 1 << fa.t)]          # a's subnormals
    factors = [(x, s * y) for x in subs_a + [Fraction(1), fa.fmax] for y in pos_b
               for s in (1, -1)]
    a, b, c = _boundary_rows(fin, fout, factors, range(first - 4, first + 2), fb)

    def unit(n):
        return AccumulatorConfig(in_format=fin, b_format=fb, c_format=fout, out_format=fout,
                                 k=1, nfma=1, neab=n, final_rounding="rne",
                                 align_rounding=align)
    differ = _differing(unit, a, b, c, range(first - 1, first + 3))
    assert differ[first - 1], differ
    assert not any(differ[f] for f in range(first, first + 3)), differ
    claimed = set(alternatives(unit(40), "neab"))
    assert first - 1 - 23 in claimed and not claimed & set(range(first - 23, first + 3 - 23))


@pytest.mark.parametrize("final", ["rz", "rne"])
def test_sticky_pairs_c_early_on_the_output_grid(final: str) -> None:
    """A sticky bit beside a product of field e keeps an accumulator on the output's grid
    2^q whole from F = e - q and exactly one F lower, where the one bit it drops is the
    sticky half quantum (models/observable.py, _sticky_pairs_exact): e3m2 x e4m3 into
    binary16, a.smin b.smin = 2^-13 at field 2^-8 beside c = -3 2^-24 gives 2^-13 - 2^-23 at
    F = 14 (c cut to -2^-23, the sticky bit adds nothing) and the exact 2^-13 - 3 2^-24 from
    F = 15.  Rows of every product with a subnormal factor against every subnormal c find
    the bound tight: F = 14 differs from F = 63, F >= 15 does not, as alternatives()
    claims (it claimed F <= 16 before)."""
    e3, e4, h = get_format("e3m2"), get_format("e4m3"), get_format("binary16")

    def unit(n):
        return AccumulatorConfig(in_format="e3m2", b_format="e4m3", c_format="binary16",
                                 out_format="binary16", k=1, nfma=1, neab=n,
                                 final_rounding=final, align_rounding="rz_sticky")
    a = np.array([[e3.exact_bits(Fraction(1, 16))]], dtype=np.uint64)
    b = np.array([[e4.exact_bits(Fraction(1, 2**9))]], dtype=np.uint64)
    c = np.array([h.exact_bits(Fraction(-3, 2**24))], dtype=np.uint64)
    got = {f: h.to_fraction(int(evaluate(unit(f - 23), a, b, c)[0])) for f in (14, 15, 40)}
    exact = Fraction(1, 2**13) - Fraction(3, 2**24)
    assert got == {14: Fraction(1, 2**13) - Fraction(1, 2**23), 15: exact, 40: exact}
    fins = [[i for i in range(1, 1 << (f.bits - 1)) if f.decode(i)[0] == "finite"]
            for f in (e3, e4)]
    pairs = [(x, y) for x in fins[0] for y in fins[1] if x < 4 or y < 8]  # a subnormal
    pairs += [(x | 1 << (e3.bits - 1), y) for x, y in pairs]
    cs = np.arange(0, 0x400, dtype=np.uint64)
    cs = np.concatenate([cs, cs | np.uint64(0x8000)])
    a = np.repeat(np.array([[x] for x, _ in pairs], dtype=np.uint64), len(cs), axis=0)
    b = np.repeat(np.array([[y] for _, y in pairs], dtype=np.uint64), len(cs), axis=0)
    c = np.tile(cs, len(pairs))
    differ = _differing(unit, a, b, c, range(14, 17))
    assert differ[14] and not differ[15] and not differ[16], differ
    claimed = set(alternatives(unit(17), "neab"))
    assert 14 - 23 in claimed and not claimed & {15 - 23, 16 - 23}


def test_nearest_pairs_rz_rne_alignment_one_below_the_bound() -> None:
    """e4m3 into binary16 under rne (bound 25): at F = 24 rne alignment gives the rz unit
    (models/observable.py, _nearest_pairs_same_alignment: a tail rounded onto a midpoint
    leaves the tie to the even product), while rd and a sticky bit still differ from rz
    (2^-9 * 2^7 against c = -(2^-14 + 2^-24), the tie the tail q/2 leaves); at F = 23 rne
    and rz alignment differ too."""
    fi = get_format("e4m3")
    pos = [fi.to_fraction(i) for i in range(1, 0x7F)]
    factors = [(x, s * y) for x in pos[:2] for y in pos for s in (1, -1)]
    a, b, c = _boundary_rows("e4m3", "binary16", factors, range(21, 27))

    def unit(f, align):
        return AccumulatorConfig(in_format="e4m3", c_format="binary16", out_format="binary16",
                                 k=1, nfma=1, neab=f - 23, final_rounding="rne",
                                 align_rounding=align)
    rz24 = evaluate(unit(24, "rz"), a, b, c)
    assert np.array_equal(rz24, evaluate(unit(24, "rne"), a, b, c))
    for other in ("rd", "rz_sticky"):
        assert not np.array_equal(rz24, evaluate(unit(24, other), a, b, c)), other
    assert not np.array_equal(evaluate(unit(23, "rz"), a, b, c),
                              evaluate(unit(23, "rne"), a, b, c))
    assert set(alternatives(unit(24, "rz"), "align_rounding")) == {"rd", "rz_sticky"}
    assert "rne" in alternatives(unit(23, "rz"), "align_rounding")


@pytest.mark.parametrize("fout,first", [("binary16", 25), ("bfloat16", 22)])
def test_ru_pairs_rz_rd_alignment(fout: str, first: int) -> None:
    """e4m3 two-term blocks under round-up: rz and rd alignment differ only where the
    floored sum lands on an output grid point (binary16, F = 24: 2^-9 * 2^7 against c =
    -2047 * 2^-24; bfloat16, F = 21: 2^-9 * 2^-9 against c = -255 * 2^-34), and give one
    unit from the bound of models/observable.py (_ru_pairs_same_alignment) on."""
    fi = get_format("e4m3")
    pos = [fi.to_fraction(i) for i in range(1, 0x7F)]
    factors = [(x, s * y) for x in pos[:2] for y in pos for s in (1, -1)]
    a, b, c = _boundary_rows("e4m3", fout, factors, range(first - 4, first + 2))

    def unit(f, align):
        return AccumulatorConfig(in_format="e4m3", c_format=fout, out_format=fout, k=1,
                                 nfma=1, neab=f - 23, final_rounding="ru", align_rounding=align)
    for f in (first - 1, first, first + 1):
        same = np.array_equal(evaluate(unit(f, "rz"), a, b, c), evaluate(unit(f, "rd"), a, b, c))
        assert same == (f >= first), f
        assert ("rd" in alternatives(unit(f, "rz"), "align_rounding")) == (f < first), f


def test_nearest_pairs_flushed_output_boundary() -> None:
    """A flushed output tests the unrounded sum against 2^out.emin, a boundary that is no
    midpoint: beside c = 2^-126 a bfloat16 product -2^-133 * 2^-52 below binary32's grid is
    dropped at F = 56 (2^-126, kept) and kept at F = 63 (just below 2^-126, flushed to
    zero), so models/observable.py claims no F one unit there (_nearest_pairs_bounds)."""
    bf, s = get_format("bfloat16"), get_format("binary32")
    a = np.array([[bf.exact_bits(-Fraction(1, 2 ** 133))]], dtype=np.uint64)
    b = np.array([[bf.exact_bits(Fraction(1, 2 ** 52))]], dtype=np.uint64)
    c = np.array([s.exact_bits(Fraction(1, 2 ** 126))], dtype=np.uint64)

    def unit(f):
        return AccumulatorConfig(in_format="bfloat16", c_format="binary32",
                                 out_format="binary32", k=1, nfma=1, neab=f - 23,
                                 final_rounding="rne", flush=("output",))
    got = [s.to_fraction(int(evaluate(unit(f), a, b, c)[0])) for f in (56, 63)]
    assert got == [Fraction(1, 2 ** 126), 0]
    assert 56 - 23 in alternatives(unit(63), "neab")


def _late_rows(fin: str, fout: str, factors, depths):
    """_boundary_rows with c late (k = 4): c = M - P + tail split greedily into at most three
    products of the earlier blocks (a product of the top t + 1 bits and a power of two at
    each step), P = a * b the last product.  Rows whose c does not split are left out."""
    fi, fo = get_format(fin), get_format(fout)
    a1, b1, c1 = _boundary_rows(fin, fout, factors, depths)
    zero = fi.exact_bits(Fraction(0))
    rows_a, rows_b = [], []
    for x, y, cb in zip(a1[:, 0], b1[:, 0], c1):
        rest, terms = fo.to_fraction(int(cb)), []
        while rest and len(terms) < 3:
            e = abs(rest).numerator.bit_length() - abs(rest).denominator.bit_length()
            e -= Fraction(2) ** e > abs(rest)
            unit = Fraction(2) ** (e - fi.t)
            top = (abs(rest) / unit).__floor__() * unit * (1 if rest > 0 else -1)
            half = e // 2
            pair = (fi.exact_bits(top / Fraction(2) ** half), fi.exact_bits(Fraction(2) ** half))
            if None in pair:
                break
            terms.append(pair)
            rest -= top
        if rest or not terms:
            continue
        terms += [(zero, zero)] * (3 - len(terms))
        rows_a.append([t[0] for t in terms] + [int(x)])
        rows_b.append([t[1] for t in terms] + [int(y)])
    a, b = np.array(rows_a, dtype=np.uint64), np.array(rows_b, dtype=np.uint64)
    return a, b, np.zeros(len(a), dtype=np.uint64)


@pytest.mark.parametrize("fout,final,align,first", [
    ("binary16", "rne", "rz", 22),
    ("bfloat16", "rna", "rne", 19),
    ("bfloat16", "rne", "rz_sticky", 12),
])
def test_nearest_pairs_late_accumulator_on_the_products_grid(fout: str, final: str, align: str,
                                                             first: int) -> None:
    """With c late every accumulator is a rounded sum of products, a multiple of the
    products' grid 2^(2 emin - 2t) (e4m3: 2^-18), so beside a product of exponent field at
    most e_top it loses no bit once F >= e_top - grid (models/observable.py,
    _nearest_pairs_bounds): a product with a subnormal factor (e_top = emax + emin = 2)
    bounds F at 20, below the c-early bound 25, and e4m3 into binary16 rounds correctly from
    F = 22 (the products of normal inputs), into bfloat16 from 19 (the subnormal factor's, 2
    + 2 * 7 + 1 + 4 = 19 < 20).  The same holds for a sticky bit (_sticky_pairs_exact): beside
    a product of two subnormal inputs (exponent field 2 emin = -12, d = 6 binades above its
    value) the accumulator loses no bit from F = 6, so e4m3 into bfloat16 rounds correctly
    from F = 12 (one subnormal factor: d + 1 + out_t + 1), not 15.  F = first - 1 tells
    some boundary row (c split into earlier products) from F = 63, F >= first none, and
    alternatives() claims exactly that."""
    fi = get_format("e4m3")
    pos = [fi.to_fraction(i) for i in range(1, 0x7F)]
    factors = ([(x, s * y) for x in pos[:2] for y in pos[::3] for s in (1, -1)]
               + [(x, s * y) for x in pos[-8:] for y in pos[-8:] for s in (1, -1)])
    a, b, c = _late_rows("e4m3", fout, factors, range(first - 3, first + 3))
    assert len(a) > 1000

    def unit(n):
        return AccumulatorConfig(in_format="e4m3", c_format=fout, out_format=fout, k=4, nfma=1,
                                 neab=n, final_rounding=final, align_rounding=align,
                                 c_placement="late")
    differ = _differing(unit, a, b, c, range(first - 1, first + 3))
    assert differ[first - 1], differ
    assert not any(differ[f] for f in range(first, first + 3)), differ
    claimed = set(alternatives(unit(40), "neab"))
    assert first - 1 - 23 in claimed and not claimed & set(range(first - 23, first + 3 - 23))
    early = set(alternatives(unit(40).replace(c_placement="early"), "neab"))
    assert first - 23 in early                       # c early: the bound lies higher


def _e3m2_late_unit(n: int, **kw) -> AccumulatorConfig:
    return AccumulatorConfig(in_format="e3m2", c_format="binary16", out_format="binary16",
                             k=4, nfma=1, neab=n, c_placement="late", final_rounding="rne",
                             **kw)


def test_nearest_pairs_late_accumulator_products_that_land() -> None:
    """c late, final rne, an accumulator A setting the alignment beside a product P: the two
    round apart only where P, aligned, lands on a midpoint offset, an odd multiple of half
    the output's spacing (models/observable.py, _late_acc_pairs_bound).  e3m2 products have
    odd parts up to 49, with runs of at most three zeros (35 = 100011b, 49 = 110001b), so
    into binary16 none lands from F = 16, where the width bound said 17.  At F = 15,
    A = 512 = 2 * 16 * 16 and P = -1.25 * 2^-2 * 1.75 * 2^-2 = -35/256: truncated to the
    quantum 2^-6 it is -1/8, the midpoint below 512 (spacing 1/4 there), which ties to the
    even 512, while the exact sum rounds to 511.75.  Random rows of products find F = 15
    apart from F = 40 and F >= 16 never."""
    fi, fo = get_format("e3m2"), get_format("binary16")

    def bits(*xs):
        return np.array([[fi.exact_bits(Fraction(x)) for x in xs]], dtype=np.uint64)
    a = bits(16, 16, 0, Fraction(-5, 16))
    b = bits(16, 16, 0, Fraction(7, 16))
    c = np.zeros(1, dtype=np.uint64)
    got = {f: fo.to_fraction(int(evaluate(_e3m2_late_unit(f - 23), a, b, c)[0]))
           for f in (15, 16, 40)}
    assert got == {15: 512, 16: Fraction(2047, 4), 40: Fraction(2047, 4)}
    for align in ("rz", "rne", "rd"):
        claimed = set(alternatives(_e3m2_late_unit(40, align_rounding=align), "neab"))
        assert 15 - 23 in claimed and not claimed & set(range(16 - 23, 40 - 23)), align
    # random rows of products, every sign: F = 15 differs somewhere, F >= 16 nowhere
    rng = np.random.default_rng(5)
    pats = [x for x in fi.all_patterns() if fi.decode(x)[0] == "finite"]
    a = np.array(pats, dtype=np.uint64)[rng.integers(0, len(pats), size=(300_000, 4))]
    b = np.array(pats, dtype=np.uint64)[rng.integers(0, len(pats), size=(300_000, 4))]
    c = np.zeros(len(a), dtype=np.uint64)
    differ = _differing(_e3m2_late_unit, a, b, c, (15, 16, 17))
    assert differ[15] and not differ[16] and not differ[17], differ


def _k2_late_unit(n: int, **kw) -> AccumulatorConfig:
    return AccumulatorConfig(in_format="e4m3", c_format="binary16", out_format="binary16",
                             k=2, nfma=1, neab=n, c_placement="late", final_rounding="rne",
                             **kw)


def test_nearest_pairs_late_k2_first_product() -> None:
    """K = 2 with c late, final rne: the accumulator of the second block is the first
    product rounded alone, a product's 8 bits and not binary16's 11 (models/observable.py,
    _nearest_pairs_bounds), so e4m3 into binary16 rounds correctly from F = 20 (the
    products' grid beside the subnormal factor's product 2^-9 * 2^8, exponent field 2:
    2 + 18), not 22 as at K = 4.  At F = 19 the first product 5 * 2^-9 * 13 * 2^-9 =
    2^-12 + 2^-18 beside 2^-1 loses its tail 2^-18 (half the quantum 2^-17), and the tie
    2^-1 + 2^-12 goes to the even 2^-1."""
    fi = get_format("e4m3")
    a = np.array([[0x05, 0x01]], dtype=np.uint64)
    b = np.array([[0x0D, 0x78]], dtype=np.uint64)
    c = np.zeros(1, dtype=np.uint64)
    assert fi.to_fraction(0x05) * fi.to_fraction(0x0D) == Fraction(65, 2 ** 18)
    far = evaluate(_k2_late_unit(40), a, b, c)
    assert evaluate(_k2_late_unit(19 - 23), a, b, c)[0] == 0x3800 and far[0] == 0x3801
    claimed = set(alternatives(_k2_late_unit(40), "neab"))
    assert 19 - 23 in claimed and not claimed & {20 - 23, 21 - 23, 22 - 23}
    assert 21 - 23 in set(alternatives(_k2_late_unit(40).replace(k=4), "neab"))


@pytest.mark.slow
def test_nearest_pairs_late_k2_exhaustive() -> None:
    """Every pair of e4m3 product classes (value, exponent field), every sign, at K = 2 with
    c late: F = 20 gives the F = 63 unit on every row (the bound of the test above)."""
    fi = get_format("e4m3")
    pos = [(i, fi.to_fraction(i)) for i in range(1, 0x7F)]

    def field(x: Fraction) -> int:
        e = x.numerator.bit_length() - x.denominator.bit_length()
        return max(fi.emin, e - (Fraction(2) ** e > x))
    classes: dict = {}
    for ia, xa in pos:
        for ib, xb in pos:
            classes.setdefault((xa * xb, field(xa) + field(xb)), (ia, ib))
    reps = np.array(list(classes.values()), dtype=np.uint64)
    n = len(reps)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    i, j = i.ravel(), j.ravel()
    unit, far = _k2_late_unit(20 - 23), _k2_late_unit(40)
    for s0, s1 in ((0, 0), (0x80, 0), (0, 0x80), (0x80, 0x80)):
        for lo in range(0, n * n, 1 << 20):
            sl = slice(lo, lo + (1 << 20))
            a = np.stack([reps[i[sl], 0] | np.uint64(s0), reps[j[sl], 0] | np.uint64(s1)], axis=1)
            b = np.stack([reps[i[sl], 1], reps[j[sl], 1]], axis=1)
            c = np.zeros(len(a), dtype=np.uint64)
            assert np.array_equal(evaluate(unit, a, b, c), evaluate(far, a, b, c))


def _cancelling_rows(fin: str, fout: str, k: int):
    """Rows that build the smallest accumulators of two-term blocks with c early: c = -P1
    moved by up to two of its ulps (P1 every product of normal inputs, either sign), then
    the two smallest and four largest products P2 of either sign; zeros after."""
    fi, fo = get_format(fin), get_format(fout)
    normal = [i << fi.pad for i in range(1 << fi.bits)
              if fi.decode(i << fi.pad)[0] == "finite" and fi.decode(i << fi.pad)[2] >> fi.t]
    rep: dict = {}
    for x in normal:
        for y in normal:
            rep.setdefault(fi.to_fraction(x) * fi.to_fraction(y), (x, y))
    prods = sorted(rep)
    neg = 1 << (fi.bits - 1 + fi.pad)
    second = [(x ^ s, y) for p in prods[:2] + prods[-4:] for x, y in [rep[p]] for s in (0, neg)]
    mag = (1 << (fo.bits - 1 + fo.pad)) - 1
    rows_a, rows_b, rows_c = [], [], []
    for p in prods:
        for s in (0, neg):
            x1, y1 = rep[p]
            cb = fo.exact_bits(p if s else -p)       # c = -P1, then moved by d of its ulps
            for d in range(-2, 3):
                if (cb & mag) + d < 0:
                    continue
                for x2, y2 in second:
                    rows_a.append([x1 ^ s, x2] + [0] * (k - 2))
                    rows_b.append([y1, y2] + [0] * (k - 2))
                    rows_c.append(cb + d)
    return (np.array(rows_a, dtype=np.uint64), np.array(rows_b, dtype=np.uint64),
            np.array(rows_c, dtype=np.uint64))


def test_directed_pairs_flushed_inputs_tight() -> None:
    """Two-term blocks of e3m2 into binary16 with inputs flushed, final rz: c = -(2^-4 -
    2^-15) against 2^-4 leaves the accumulator 2^-15, which beside -28 * 28 = -784 (exponent
    field 8, or 9 normalised) survives alignment while F >= 8 + 15 (models/observable.py,
    _directed_pairs_exact).  So denormalised products round correctly from F = 23 and
    normalised ones from F = 24, and at F = 23 the two normalisations differ on this row.
    The other bounds are tight too: a tail truncated onto a grid point (e2m3), the smallest
    accumulator with c late."""
    e3, h = get_format("e3m2"), get_format("binary16")
    base = dict(in_format="e3m2", c_format="binary16", out_format="binary16", k=4, nfma=1,
                flush=("inputs",))
    deno, norm = (AccumulatorConfig(neab=0, product_normalisation=p, **base)
                  for p in ("denormalised", "normalised"))
    a = np.array([[e3.exact_bits(Fraction(1, 4)), e3.exact_bits(-28), 0, 0]], dtype=np.uint64)
    b = np.array([[e3.exact_bits(Fraction(1, 4)), e3.exact_bits(28), 0, 0]], dtype=np.uint64)
    c = np.array([h.exact_bits(-(Fraction(1, 16) - Fraction(1, 2 ** 15)))], dtype=np.uint64)
    out = {n: h.to_fraction(int(evaluate(cfg.replace(neab=n), a, b, c)[0]))
           for cfg in (deno,) for n in (-1, 0, 17)}
    assert out == {-1: -784, 0: Fraction(-1567, 2), 17: Fraction(-1567, 2)}
    assert h.to_fraction(int(evaluate(norm, a, b, c)[0])) == -784
    assert h.to_fraction(int(evaluate(norm.replace(neab=1), a, b, c)[0])) == Fraction(-1567, 2)
    assert set(alternatives(deno, "neab")) == set(range(-23, 0))
    assert 1 in alternatives(norm, "neab") and 2 not in alternatives(norm.replace(neab=1), "neab")
    assert alternatives(deno, "product_normalisation") == ("normalised",)
    assert alternatives(deno.replace(neab=1), "product_normalisation") == ()
    # e2m3: c = -(2^-7 + 2^-17) beside 2^4 truncated to -2^-7 (F = 20) lands on the grid
    # point 2^4 - 2^-7, which rz keeps; the exact sum rounds to 2^4 - 2^-6 (F >= 21)
    e2 = get_format("e2m3")
    unit = AccumulatorConfig(**dict(base, in_format="e2m3", neab=21 - 23))
    a2 = np.array([[e2.exact_bits(4), 0, 0, 0]], dtype=np.uint64)
    c2 = np.array([h.exact_bits(-(Fraction(1, 2 ** 7) + Fraction(1, 2 ** 17)))], dtype=np.uint64)
    got = {n: h.to_fraction(int(evaluate(unit.replace(neab=n - 23), a2, a2, c2)[0]))
           for n in (20, 21, 63)}
    assert got == {20: 16 - Fraction(1, 2 ** 7), 21: 16 - Fraction(1, 2 ** 6),
                   63: 16 - Fraction(1, 2 ** 6)}
    assert set(alternatives(unit, "neab")) == set(range(-23, 20 - 23 + 1))
    # c late: every accumulator is a multiple of the products' grid, the smallest 2^-8 =
    # (1.25 * 2^-2)^2 - (1.5 * 2^-2) * 2^-2, which beside -784 survives while F >= 16
    late = AccumulatorConfig(**dict(base, neab=16 - 23, c_placement="late"))
    q = Fraction(1, 4)
    a3 = np.array([[e3.exact_bits(x) for x in (Fraction(5, 4) * q, -Fraction(3, 2) * q, -28, 0)]],
                  dtype=np.uint64)
    b3 = np.array([[e3.exact_bits(x) for x in (Fraction(5, 4) * q, q, 28, 0)]], dtype=np.uint64)
    z = np.zeros(1, dtype=np.uint64)
    got = {n: h.to_fraction(int(evaluate(late.replace(neab=n - 23), a3, b3, z)[0]))
           for n in (15, 16, 63)}
    assert got == {15: -784, 16: Fraction(-1567, 2), 63: Fraction(-1567, 2)}
    assert set(alternatives(late, "neab")) == set(range(-23, 15 - 23 + 1))
    # flushed subnormal sums take the accumulator 2^-15 away: the unit rounds correctly at 22
    flushed = deno.replace(flush=("inputs", "sums"))
    assert alternatives(flushed, "product_normalisation") == ()
    assert set(alternatives(flushed, "neab")) == set(range(-23, -1))


_SLOW = pytest.mark.slow


@pytest.mark.parametrize("fin,k,finals", [
    ("e3m2", 2, ("rz", "ru")), pytest.param("e3m2", 4, ("rz", "rd", "ru", "ro"), marks=_SLOW),
    pytest.param("e2m3", 4, ("rz", "rd", "ru", "ro"), marks=_SLOW),
    pytest.param("e2m1", 4, ("rz", "rd", "ru", "ro"), marks=_SLOW)])
def test_directed_pairs_flushed_inputs_claims(fin: str, k: int, finals) -> None:
    """Every equivalence _directed_pairs_exact adds (F, alignment rounding, normalisation of
    two-term blocks with inputs flushed, under rz, rd, ru and ro) holds on the rows that
    build the smallest accumulators (_cancelling_rows)."""
    a, b, c = _cancelling_rows(fin, "binary16", k)
    checked = 0
    for neab, norm, final, align, flush in itertools.product(
            (-1, 0, 2), ("denormalised", "normalised"), finals,
            ("rz", "rne", "rd"), (("inputs",), ("inputs", "sums"))):
        cfg = AccumulatorConfig(in_format=fin, c_format="binary16", out_format="binary16",
                                k=k, nfma=1, neab=neab, product_normalisation=norm,
                                final_rounding=final, align_rounding=align, flush=flush)
        if not _directed_pairs_exact(cfg, None, align):
            continue
        ref = evaluate(cfg, a, b, c)
        for f in ("neab", "align_rounding", "product_normalisation"):
            claims = claimed_equivalent(cfg, f)
            if f == "neab":                 # the nearest F above, and one far off
                claims = [v for v in claims if v in (neab + 1, neab + 2, 40)]
            for v in claims:
                bad = np.flatnonzero(evaluate(_variant(cfg, f, v), a, b, c) != ref)
                assert not len(bad), (cfg.describe(), f, v, a[bad[0]], b[bad[0]], c[bad[0]])
                checked += 1
    assert checked > 30


def _first_then_every_product(fa_name: str, fb_name: str):
    """K = 2 rows: a product within four binades of the largest, then every product of normal
    inputs, each value once and of either sign, in both orders."""
    fa, fb = get_format(fa_name), get_format(fb_name)

    def normal(f):
        return [i << f.pad for i in range(1 << f.bits)
                if f.decode(i << f.pad)[0] == "finite" and f.decode(i << f.pad)[2] >> f.t]

    na, nb = normal(fa), normal(fb)
    rep: dict = {}                                   # one pair per product value
    for x in na:
        for y in nb:
            rep.setdefault(fa.to_fraction(x) * fb.to_fraction(y), (x, y))
    big = fa.fmax * fb.fmax
    firsts = [xy for v, xy in rep.items() if abs(v) * 16 > big]
    seconds = list(rep.values())
    rows_a = [[x0, x1] for x0, _ in firsts for x1, _ in seconds]
    rows_b = [[y0, y1] for _, y0 in firsts for _, y1 in seconds]
    a, b = np.array(rows_a, dtype=np.uint64), np.array(rows_b, dtype=np.uint64)
    a, b = np.concatenate([a, a[:, ::-1]]), np.concatenate([b, b[:, ::-1]])
    return a, b, np.zeros(len(a), dtype=np.uint64)


@pytest.mark.parametrize("fa,fb,fout", [("e3m2", "e4m3", "binary16"),
                                        pytest.param("e4m3", "e5m2", "bfloat16", marks=_SLOW)])
def test_directed_pairs_c_late_at_k2_the_accumulator_is_one_product(fa, fb, fout) -> None:
    """With c late and inputs flushed, the second block's accumulator at K = 2 is the first
    product alone, at least the smallest normal product and with a product's tail, not any
    multiple of the products' grid (_directed_pairs_exact).  e3m2 x e4m3 into binary16: 20
    x 416 = 8320 (E = 13) beside -2^-8 rounds toward zero from F = 21 on, and F = 20 drops
    it; the bound F >= 21 (not 25) holds on every product beside every product of the top
    binades, and F = 20 differs from it on some, under rz, rd and ru."""
    a, b, c = _first_then_every_product(fa, fb)
    for final in ("rz", "rd", "ru"):
        cfg = AccumulatorConfig(in_format=fa, b_format=fb, c_format=fout, out_format=fout,
                                k=2, nfma=1, neab=40, c_placement="late",
                                final_rounding=final, flush=("inputs",))
        first = 23 + max(alternatives(cfg, "neab")) + 1
        far = evaluate(cfg, a, b, c)
        at = evaluate(cfg.replace(neab=first - 23), a, b, c)
        below = evaluate(cfg.replace(neab=first - 24), a, b, c)
        assert np.array_equal(at, far) and not np.array_equal(below, far), (final, first)
        if (fa, fout) == ("e3m2", "binary16"):
            assert first == 21


@pytest.mark.parametrize("fa,fb,fout,bound", [("e2m1", "e2m1", "binary32", 7),
                                              ("e2m3", "e2m3", "binary64", 11),
                                              ("e2m3", "e2m1", "binary16", 9),
                                              pytest.param("e3m2", "e3m2", "binary64", 17,
                                                           marks=_SLOW)])
def test_late_pairs_hide_the_normalisation_from_the_bound(fa, fb, fout, bound) -> None:
    """Blocks of one product with c late (late_pairs_normalisation_exact): from F = bound
    the two normalisations give every row alike, under every alignment and final rounding
    and with K long enough for a large accumulator; one F below, the product 2.25 x 2^E
    (6 x 6 = 36 for e2m1, E = 4) after the smallest product puts the quantum 2^(E - F) at
    the latter's last bit, which normalised alignment (quantum 2^(E + 1 - F)) drops."""
    fmt_a, fmt_b = get_format(fa), get_format(fb)
    rows = []
    for align, final in itertools.product(("rz", "rd", "rne", "rz_sticky"),
                                          ("rz", "rne", "ru")):
        cfg = AccumulatorConfig(in_format=fa, b_format=fb, c_format=fout, out_format=fout,
                                k=8, nfma=1, neab=bound - 23, c_placement="late",
                                align_rounding=align, final_rounding=final)
        assert late_pairs_normalisation_exact(cfg)
        assert alternatives(cfg, "product_normalisation") == ()
        if not rows:
            rows = _rows(cfg, 20000, bound)
        alt = cfg.replace(product_normalisation="normalised")
        assert np.array_equal(evaluate(cfg, *rows), evaluate(alt, *rows)), (align, final)
        below = cfg.replace(neab=bound - 24)
        assert not late_pairs_normalisation_exact(below)
        # the smallest product, then 1.5 x 2^a.emax x 1.5 x 2^b.emax, in the last two
        # blocks (a later block would align the result alone, at its own exponent)
        a = [fmt_a.exact_bits(fmt_a.smin), fmt_a.exact_bits(Fraction(3, 2) * 2 ** fmt_a.emax)]
        b = [fmt_b.exact_bits(fmt_b.smin), fmt_b.exact_bits(Fraction(3, 2) * 2 ** fmt_b.emax)]
        a = np.array([[0] * 6 + a], dtype=np.uint64)
        b = np.array([[0] * 6 + b], dtype=np.uint64)
        c = np.zeros(1, dtype=np.uint64)
        if align in ("rz", "rd"):
            assert evaluate(below, a, b, c) != evaluate(
                below.replace(product_normalisation="normalised"), a, b, c), (align, final)


def test_carry_bound_counts_the_significands_below_the_top_binade() -> None:
    # e4m3's largest significand at emax is 1.75 (1.875 x 2^8 is NaN), but 1.875 exists
    # below: four products 1.875^2 and c = 2 - 2^-23 sum to 16.06 and wrap two carry bits,
    # so carry_bits 2 is a unit of its own, not the unbounded one
    f32 = get_format("binary32")
    row = np.full((1, 4), 0x3F, np.uint64), np.array([f32.exact_bits(2 - Fraction(1, 2 ** 23))],
                                                     np.uint64)
    cfg = AccumulatorConfig(in_format="e4m3", k=4, nfma=4, neab=0)
    assert 2 in alternatives(cfg, "carry_bits")
    wide = evaluate(cfg, row[0], row[0], row[1])
    two = evaluate(cfg.replace(carry_bits=2), row[0], row[0], row[1])
    assert f32.to_fraction(int(wide[0])) > 16 and f32.to_fraction(int(two[0])) < 1
    # and the bound takes b's own format: e4m3fnuz x e5m2fnuz products stay below
    # 1.875 x 1.75, four of them and c below 16, so two carry bits never wrap there
    mixed = AccumulatorConfig(in_format="e4m3fnuz", b_format="e5m2fnuz", k=4, nfma=4, neab=0)
    assert 2 not in alternatives(mixed, "carry_bits")
    assert 2 in alternatives(mixed.replace(b_format="e4m3fnuz"), "carry_bits")


def test_carry_bound_of_normalised_products_is_their_largest_significand() -> None:
    # a normalised product's significand is at most max(i * j scaled into [1, 2)), which for
    # e4m3 is 9 x 14 / 64 = 1.96875, not the largest product 1.875^2 halved (1.76): sixteen
    # products 1.125 x 1.75 and c = 2 - 2^-20 sum to 33.5 and wrap three carry bits
    f32, e4m3 = get_format("binary32"), get_format("e4m3")
    a = np.full((1, 32), e4m3.exact_bits(Fraction(9, 8)), np.uint64)
    b = np.full((1, 32), e4m3.exact_bits(Fraction(7, 4)), np.uint64)
    c = np.array([f32.exact_bits(2 - Fraction(1, 2 ** 20))], np.uint64)
    for nfma, wraps in ((16, 3), (32, 4)):
        cfg = AccumulatorConfig(in_format="e4m3", k=32, nfma=nfma, neab=2,
                                product_normalisation="normalised")
        assert wraps in alternatives(cfg, "carry_bits")
        assert wraps + 1 not in alternatives(cfg, "carry_bits")
        wide = f32.to_fraction(int(evaluate(cfg, a, b, c)[0]))
        cut = f32.to_fraction(int(evaluate(cfg.replace(carry_bits=wraps), a, b, c)[0]))
        assert 64 < wide <= 65  # 32 x 1.96875 + c
        assert cut < 2


def test_carry_bound_of_gdfs_groups_is_tight() -> None:
    # a GDFS group is aligned at its scale factors' exponent however large its sum: 64
    # products 6 x 6 under ue4m3 scale factors 1.875 and c just below 2 sum to 8102, which
    # 10 carry bits wrap and 11 do not (models/observable.py _gdfs_carry_needed)
    e2m1, ue4m3, f32 = get_format("e2m1"), get_format("ue4m3"), get_format("binary32")
    cfg = AccumulatorConfig(in_format="e2m1", k=64, algorithm="gdfs", nfma=16,
                            scale_format="ue4m3", scale_block=16)
    assert carry_needed(cfg) == 11
    assert alternatives(cfg, "carry_bits") == tuple(range(11))
    a = np.full((1, 64), e2m1.exact_bits(6), np.uint64)
    s = np.full((1, 4), ue4m3.exact_bits(Fraction(15, 8)), np.uint64)
    c = np.array([f32.exact_bits(2 - Fraction(1, 2 ** 20))], np.uint64)
    full = f32.to_fraction(int(evaluate(cfg, a, a, c, s, s)[0]))
    assert 8101 < full < 8102  # 8102 - 2^-20, rounded to binary32
    assert f32.to_fraction(int(evaluate(cfg.replace(carry_bits=11), a, a, c, s, s)[0])) == full
    assert f32.to_fraction(int(evaluate(cfg.replace(carry_bits=10), a, a, c, s, s)[0])) < 4096
    # on FDA, ue8m0 scale factors (powers of two) leave the bound of unit scale factors
    fda = AccumulatorConfig(in_format="e4m3", k=32, nfma=16, neab=2, scale_format="ue8m0",
                            scale_block=32)
    assert carry_needed(fda) == carry_needed(fda.replace(scale_format=None, scale_block=None))


@pytest.mark.parametrize("fin,fout", [("binary16", "binary32"), ("bfloat16", "bfloat16"),
                                      ("e4m3", "binary16"), ("e2m1", "bfloat16"),
                                      ("e5m2xe4m3", "binary16"), ("tf32", "binary32")])
def test_zero_sign_joined_only_where_every_zero_is_positive(fin: str, fout: str) -> None:
    """proven_classes joins zero_sign 'ieee' and 'positive' where _zero_sign_hidden proves
    them equal: with c late, no final rd, and the smallest product's quantum at or above
    the output's smallest normal.  Wherever it joins them, both give the same bits on
    pool rows, raw bit patterns and every zero sign; binary16 into binary32 with c late
    under rz is joined, and with c early or under rd it is not."""
    fa, _, fb = fin.partition("x")
    joined = 0
    for nfma, neab, norm, final, place, align in itertools.product(
            (1, 4), (-10, 0, 3), ("denormalised", "normalised"), ("rz", "rne", "rd"),
            ("early", "late"), ("rz", "rz_sticky")):
        cfg = AccumulatorConfig(in_format=fa, b_format=fb or None, c_format=fout,
                                out_format=fout, k=4, nfma=nfma, neab=neab,
                                product_normalisation=norm, final_rounding=final,
                                c_placement=place, align_rounding=align)
        other = cfg.replace(zero_sign="positive")
        if proven_classes([cfg, other]).tolist() != [0, 0]:
            continue
        joined += 1
        assert place == "late" and final != "rd", cfg.describe()
        a, b, c = _rows(cfg, 600, neab + 20)
        zero = np.zeros_like(a)
        for sa in (0, 1):  # signed zero products too: +-0 x anything
            za = zero | (np.uint64(sa) << np.uint64(get_format(fa).bits - 1))
            for x in (a, np.where(np.arange(cfg.k) % 2 == 0, za, a)):
                assert (evaluate(cfg, x, b, c) == evaluate(other, x, b, c)).all(), \
                    cfg.describe()
    # products of binary16 (2^-28 at the least) and e2m1 (2^0) stay far above the output's
    # smallest normal; those of bfloat16, tf32, e4m3 and e5m2 x e4m3 come within F of it
    assert (joined > 0) == (fin in ("binary16", "e2m1")), joined
    if fin == "binary16":
        base = AccumulatorConfig(in_format="binary16", k=4, c_placement="late")
        assert proven_classes([base, base.replace(zero_sign="positive")]).tolist() == [0, 0]
        for other in (base.replace(c_placement="early"), base.replace(final_rounding="rd")):
            assert proven_classes([other, other.replace(zero_sign="positive")]
                                  ).tolist() == [0, 1]


@pytest.mark.parametrize("fin", ["binary16", "e4m3", "e2m1", "e5m2xe4m3", "bfloat16",
                                 "tf32"])
def test_sfma_joined_with_gps_of_one_only_where_products_are_exact(fin: str) -> None:
    """SFMA and GPS with groups of one product are joined where every product is exact in
    binary32 (binary16 and the fp8/fp4 formats), and there they agree on pool rows and raw
    bit patterns; bfloat16 and tf32 products leave binary32's range, and some row tells
    the two apart."""
    fa, _, fb = fin.partition("x")
    sfma = AccumulatorConfig(in_format=fa, b_format=fb or None, k=8, algorithm="sfma",
                             nfma=1, final_rounding="rne")
    gps = sfma.replace(algorithm="gps")
    joined = proven_classes([sfma, gps]).tolist() == [0, 0]
    assert joined == (fin not in ("bfloat16", "tf32"))
    a, b, c = _rows(sfma, 2000, 3)
    same = (evaluate(sfma, a, b, c) == evaluate(gps, a, b, c)).all()
    assert same if joined else not same
    # other roundings or flushing are never joined
    assert proven_classes([sfma.replace(final_rounding="rz"),
                           gps.replace(final_rounding="rz")]).tolist() == [0, 1]


def _carry_rows(cfg: AccumulatorConfig, n: int, seed: int):
    """Rows whose c and block sums sit just below powers of two (the carries that make a
    block result one or two binades wider): every product the largest of a's format or a
    random one, c = +-(2^j - 2^(j - s)) for j over the products' range."""
    rng = np.random.default_rng(seed)
    fa, fc = get_format(cfg.in_format), get_format(cfg.c_format)
    top = fa.exact_bits(fa.fmax)
    a = np.where(rng.random((n, cfg.k)) < 0.6, np.uint64(top),
                 rng.integers(0, 1 << fa.bits, size=(n, cfg.k)).astype(np.uint64))
    b = np.where(rng.random((n, cfg.k)) < 0.6, np.uint64(top),
                 rng.integers(0, 1 << fa.bits, size=(n, cfg.k)).astype(np.uint64))
    c = np.array([fc.exact_bits((-1) ** int(rng.integers(2))
                                * (Fraction(2) ** int(j) - Fraction(2) ** int(j - s)))
                  for j, s in zip(rng.integers(-4, 14, size=n), rng.integers(1, 25, size=n))],
                 dtype=np.uint64)
    return a, b, c


def test_block_sums_that_fit_the_kept_bits_join_the_output_precision() -> None:
    """rounding_exact bounds a block result by its alignment exponent E (an earlier result
    below 2^(E + 1) beside n products): e2m1 into binary32 at F = 12 with c late keeps 13
    fraction bits or 23 to the same effect, since no block result has more than 14 bits.
    Everywhere it claims so (e2m1, K = 16, every nfma, F 6..14, 5..13 kept bits, c early
    and late), another kept width and another final rounding (not rd: the sign of x - x)
    give the same bits on pool rows, raw bit patterns and rows of carries.  With c early
    and blocks of one product it claims nothing at F = 12, and c = 2 - 2^-12 beside a last
    product 2.25 shows why: 4.25 - 2^-12 has 15 bits."""
    late = AccumulatorConfig(in_format="e2m1", k=64, nfma=4, neab=-11, c_placement="late")
    assert rounding_exact(late.replace(out_frac_bits=13))
    assert proven_classes([late, late.replace(out_frac_bits=13)]).tolist() == [0, 0]
    claims = 0
    for nfma, F, kept, place in itertools.product((1, 2, 4, 16), range(6, 15), range(5, 14),
                                                 ("early", "late")):
        cfg = AccumulatorConfig(in_format="e2m1", k=16, nfma=nfma, neab=F - 23,
                                c_placement=place, out_frac_bits=kept)
        if not rounding_exact(cfg):
            continue
        claims += 1
        a, b, c = _rows(cfg, 300, F + kept)
        ca, cb, cc = _carry_rows(cfg, 300, F * kept)
        a, b, c = np.concatenate([a, ca]), np.concatenate([b, cb]), np.concatenate([c, cc])
        want = evaluate(cfg, a, b, c)
        for other in (cfg.replace(out_frac_bits=None, final_rounding="rne"),
                      cfg.replace(final_rounding="ru")):
            bad = np.flatnonzero(evaluate(other, a, b, c) != want)
            assert not len(bad), f"{cfg.describe()} vs {other.describe()}: row {bad[0]}"
    assert claims > 100, claims
    early = AccumulatorConfig(in_format="e2m1", k=64, nfma=1, neab=-11)
    assert not rounding_exact(early.replace(out_frac_bits=13))
    fa, fc = get_format("e2m1"), get_format("binary32")
    a = np.zeros((1, 64), dtype=np.uint64)
    a[0, 63] = fa.exact_bits(Fraction(3, 2))
    c = np.array([fc.exact_bits(2 - Fraction(1, 4096))], dtype=np.uint64)
    got = [fc.to_fraction(int(evaluate(x, a, a, c)[0]))
           for x in (early, early.replace(out_frac_bits=13))]
    assert got == [Fraction(17, 4) - Fraction(1, 4096), Fraction(17, 4) - Fraction(1, 2048)]



@pytest.mark.parametrize("nfma,neab,flush,norm", [(1, 0, (), "denormalised"),
                                                   (2, -10, ("inputs",), "denormalised"),
                                                   (2, 2, (), "normalised"),
                                                   (1, -10, ("output",), "normalised")])
def test_two_late_products_final_rounding_by_every_pair_of_products(nfma, neab, flush,
                                                                     norm) -> None:
    """At K = 2 with c late, _two_products_late_roundings evaluates one row per pair of
    product classes.  The classes are sound: on every pair of e2m1 bit patterns (65 536
    rows) each gives its class representatives' output.  e2m1 into bfloat16: every sum of
    two products fits 8 bits, so the final rounding shows only through rd's zero sign
    (the bound of F alone counts 16 bits), which pool rows with any c confirm; e2m3 x
    e2m1 products span more (45 + 0.375 = 101101.011b has 9 bits) and every rounding is
    its own."""
    cfg = AccumulatorConfig(in_format="e2m1", k=2, nfma=nfma, neab=neab, c_placement="late",
                            out_format="bfloat16", c_format="bfloat16", flush=flush,
                            product_normalisation=norm)
    fa = get_format("e2m1")
    pats = [int(x) for x in fa.all_patterns()]
    ra, rb = _product_classes("e2m1", "e2m1")
    rep = {_product_class_key(fa, fa, int(x), int(y)): (x, y) for x, y in zip(ra, rb)}
    pairs = list(itertools.product(pats, pats))
    cls = np.array([rep[_product_class_key(fa, fa, x, y)] for x, y in pairs], dtype=np.uint64)
    own = np.array(pairs, dtype=np.uint64)
    i, j = np.divmod(np.arange(len(pairs) ** 2), len(pairs))
    c = np.full(len(i), get_format("bfloat16").zero_bits(1), dtype=np.uint64)
    got = evaluate(cfg, np.stack([own[i, 0], own[j, 0]], 1), np.stack([own[i, 1], own[j, 1]], 1),
                   c)
    via = evaluate(cfg, np.stack([cls[i, 0], cls[j, 0]], 1), np.stack([cls[i, 1], cls[j, 1]], 1),
                   c)
    assert (got == via).all()
    assert alternatives(cfg, "final_rounding") == ("rd",)
    rows = _rows(cfg, 1500, nfma - neab)
    want = evaluate(cfg, *rows)
    for v in ("rne", "ru", "rna", "ro"):
        assert (evaluate(cfg.replace(final_rounding=v), *rows) == want).all(), v
    mixed = cfg.replace(in_format="e2m3", b_format="e2m1")
    assert set(alternatives(mixed, "final_rounding")) == {"rne", "rd", "ru", "rna", "ro"}
