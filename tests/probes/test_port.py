"""Probes on mixed-format and block-scaled units (probes/port.py).

The port is sound when the unit cannot tell a ported row from the carrier's: the same
products, the same exponent field sums, the same factors subnormal.  The tests check that
factor by factor over every pattern of the narrow formats, and then end to end: the model's
outputs of a mixed unit on ported rows equal those of the carrier's plain unit (the same
configuration with b in a's format) on the rows as written, for every configuration of a
neighbourhood.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from mmaprobe.models.accumulator import evaluate, unit_scales
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.features import expression_bindings
from mmaprobe.models.formats import get_format
from mmaprobe.models.space import neighbourhood
from mmaprobe.probes.library import library_files, load_probes
from mmaprobe.probes.port import carriers, port_factor, port_instance, port_product

NARROW = ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e2m3", "e3m2", "e2m1")


def _shape(fmt, bits):
    """What the unit sees of a factor: class, sign, value, exponent field, subnormal."""
    cls, sign, sig, exp = fmt.decode(bits)
    if cls == "nan":
        return (cls,)  # an FNUZ NaN's sign bit is its pattern, not a sign
    if cls in ("inf", "zero"):
        return cls, sign
    return cls, sign, fmt.to_fraction(bits), exp, sig < (1 << fmt.t)


@pytest.mark.parametrize("fx,fy", list(itertools.permutations(NARROW, 2)))
def test_port_factor_keeps_what_the_unit_sees(fx, fy):
    x, y = get_format(fx), get_format(fy)
    ported = 0
    for bits in x.all_patterns():
        out = port_factor(bits, fx, fy)
        if out is None:
            continue
        ported += 1
        assert _shape(y, out) == _shape(x, bits), (fx, fy, hex(bits), hex(out))
    assert ported > 0


def test_port_factor_refuses_what_would_change():
    # 2^-9 is an e4m3 subnormal but a normal e5m2 number; e2m1's 1/2 is subnormal
    # (emin 0) but normal in e3m2; -0 has no FNUZ pattern; a NaN payload has no twin
    assert port_factor(0x01, "e4m3", "e5m2") is None
    assert port_factor(0x1, "e2m1", "e3m2") is None
    assert port_factor(0x80, "e4m3", "e5m2fnuz") is None
    assert port_factor(0x7f, "e4m3", "e5m2") == get_format("e5m2").nan_bits()


def test_port_product_keeps_product_and_exponent_sum():
    rng = np.random.default_rng(7)
    for carrier, fa, fb in (("e4m3", "e4m3", "e5m2"), ("e5m2", "e4m3", "e5m2"),
                            ("binary16", "binary16", "bfloat16"),
                            ("bfloat16", "binary16", "bfloat16"), ("e3m2", "e2m1", "e3m2"),
                            ("e3m2~e4m3", "e3m2", "e4m3"), ("e2m1~e3m2", "e2m1", "e3m2"),
                            ("e2m3~e2m1", "e2m3", "e2m1"), ("e4m3~e5m2", "e4m3", "e5m2")):
        x, a, b = get_format(carrier), get_format(fa), get_format(fb)
        virtual = x.top is not None
        for xa, xb in rng.integers(0, 1 << x.bits, size=(3000, 2)):
            pair = port_product(int(xa), int(xb), carrier, fa, fb)
            if pair is None:
                continue
            sa, sb = _shape(x, int(xa)), _shape(x, int(xb))
            ya, yb = _shape(a, pair[0]), _shape(b, pair[1])
            if sa[0] != "finite" or sb[0] != "finite":
                assert sorted([ya, yb], key=str) == sorted([sa, sb], key=str)
                continue
            assert ya[2] * yb[2] == sa[2] * sb[2]                 # the product
            assert ya[3] + yb[3] == sa[3] + sb[3]                 # its exponent field sum
            if virtual:
                # a virtual carrier's subnormal lies on no grid of a or b: what the unit
                # sees is whether some factor is subnormal (flushing inputs zeroes the product)
                assert (ya[4] or yb[4]) == (sa[4] or sb[4])
            else:
                assert sorted([ya[4], yb[4]]) == sorted([sa[4], sb[4]])  # subnormal factors
    # two normal factors trade a power of two: 2^-63 * 2^-63 (bfloat16) is 2^-14 * 2^-112
    # in binary16 x bfloat16, which also swaps them
    ya, yb = port_product(0x2000, 0x2000, "bfloat16", "binary16", "bfloat16")
    assert (get_format("binary16").to_fraction(ya), get_format("bfloat16").to_fraction(yb)) \
        == (Fraction(1, 2 ** 14), Fraction(1, 2 ** 112))


def _portable_rows(carrier, fa, fb, k, n, rng):
    """n rows of the carrier format whose every product ports, and the ported rows."""
    x = get_format(carrier)
    pool = []
    while len(pool) < 4000:
        xa, xb = (int(v) for v in rng.integers(0, 1 << x.bits, size=2))
        pair = port_product(xa, xb, carrier, fa, fb)
        if pair is not None:
            pool.append((xa, xb, *pair))
    pick = np.array(pool, dtype=np.uint64)[rng.integers(0, len(pool), size=(n, k))]
    return pick[..., 0], pick[..., 1], pick[..., 2], pick[..., 3]


def _same_outputs(fa, fb, fout, k, step, rng):
    fc = get_format(fout)
    space = neighbourhood(fa, fout, fout, k, operands=(fb, None, None))
    for carrier in carriers(space.configs[0]):
        a, b, pa, pb = _portable_rows(carrier, fa, fb, k, 600, rng)
        c = rng.integers(0, 1 << fc.bits, size=600).astype(np.uint64)
        for cfg in space.configs[::step]:
            plain = cfg.replace(in_format=carrier, b_format=None)
            want, got = evaluate(plain, a, b, c), evaluate(cfg, pa, pb, c)
            assert (want == got).all(), (cfg.describe(), carrier)


@pytest.mark.parametrize("fa,fb,fout,k", [("e4m3", "e5m2", "binary32", 16),
                                          ("binary16", "bfloat16", "binary32", 8),
                                          ("e2m1", "e3m2", "binary16", 8)])
def test_ported_rows_give_the_carrier_units_outputs(fa, fb, fout, k):
    _same_outputs(fa, fb, fout, k, 17, np.random.default_rng(3))


@pytest.mark.slow
@pytest.mark.parametrize("fa,fb,fout,k", [("e4m3", "e5m2", "binary32", 16),
                                          ("e5m2", "e4m3", "binary16", 32),
                                          ("binary16", "bfloat16", "binary32", 8),
                                          ("e2m1", "e3m2", "binary32", 8),
                                          ("e3m2", "e4m3", "binary16", 8),
                                          ("e4m3fnuz", "e5m2fnuz", "binary32", 16)])
def test_ported_rows_give_the_carrier_units_outputs_everywhere(fa, fb, fout, k):
    _same_outputs(fa, fb, fout, k, 1, np.random.default_rng(5))


def test_port_instance_and_unit_scales():
    probes = {p.id: p for p in load_probes(library_files())}
    walk = probes["nfma-walk"]
    cfg = AccumulatorConfig(in_format="e4m3", b_format="e5m2", k=32, nfma=16, neab=2)
    inst = walk.instantiate("e4m3", "binary32", "binary32", 32,
                            expression_bindings(cfg, walk.requires))
    ported = port_instance(inst, "e4m3", "e4m3", "e5m2")
    assert ported is not None and ported.rows == inst.rows and ported.sweeps == inst.sweeps
    fa, fb = get_format("e4m3"), get_format("e5m2")
    for ra, rb, pa, pb in zip(inst.a, inst.b, ported.a, ported.b):
        assert [fa.to_fraction(u) * fa.to_fraction(v) for u, v in zip(ra, rb)] == \
            [fa.to_fraction(u) * fb.to_fraction(v) for u, v in zip(pa, pb)]
    assert port_instance(inst, "e4m3", "e4m3", "e4m3") is inst
    cfg = AccumulatorConfig(in_format="e2m1", k=64, algorithm="gdfs", nfma=16, neab=12,
                            scale_format="ue4m3", scale_block=16)
    sa, sb = unit_scales(cfg, 3)
    ue4m3 = get_format("ue4m3")
    assert sa.shape == (3, 4) and {ue4m3.to_fraction(int(s)) for s in sa.ravel()} == {1}
    assert unit_scales(AccumulatorConfig(in_format="e4m3", k=32), 3) is None


def test_per_side_probes_reach_both_formats_ranges():
    # e3m2 x e4m3 into binary16 with c late: products from 2^-13 to 2^12, so F is observable
    # beyond what e3m2's probes read when ported; neab-scan-sides (mixed.yaml) scans a term
    # from 2^11 down to both formats' smallest subnormals and pins F = 23 and 24
    from mmaprobe.models.space import CandidateSpace
    from mmaprobe.probes.checker import run_check

    cfgs = [AccumulatorConfig(in_format="e3m2", b_format="e4m3", c_format="binary16",
                              out_format="binary16", k=32, nfma=16, neab=neab,
                              c_placement="late") for neab in (0, 1)]
    probes = load_probes(library_files())
    rep = run_check(probes, [CandidateSpace("t", "<t>", cfgs)], coverage=("neab",))
    (cov,) = rep.coverage
    assert cov.observable == cov.decided == 2
    (scan,) = [r for r in rep.results if r.probe.id == "neab-scan-sides"]
    assert scan.correct == 2 and not scan.wrong
    # without the per-side probe the ported ones leave F undecided there
    rep = run_check([p for p in probes if not p.per_side], [CandidateSpace("t", "<t>", cfgs)],
                    coverage=("neab",))
    assert rep.coverage[0].decided == 0


@pytest.mark.parametrize("feature,probe_id", [("align_rounding", "align-rounding-sides"),
                                              ("product_normalisation",
                                               "product-normalisation-sides")])
def test_per_side_alignment_and_normalisation(feature, probe_id):
    # e3m2 x e4m3 into binary32 with c late: the cancelling pair at 2^12 (2^4 from a, 2^8
    # from b) and the small term down to 2^-4 x 2^-9 read F = 23 exactly; the ported probes
    # of either format reach neither end
    from mmaprobe.models.space import CandidateSpace
    from mmaprobe.probes.checker import run_check

    cfgs = [AccumulatorConfig(in_format="e3m2", b_format="e4m3", k=16, nfma=8, neab=0,
                              c_placement="late", align_rounding=align,
                              product_normalisation=pn)
            for align in ("rz", "rd", "rne", "rz_sticky")
            for pn in ("denormalised", "normalised")]
    probes = load_probes(library_files())
    rep = run_check(probes, [CandidateSpace("t", "<t>", cfgs)], coverage=(feature,))
    (cov,) = rep.coverage
    assert cov.observable == cov.decided == len(cfgs)
    (r,) = [r for r in rep.results if r.probe.id == probe_id]
    assert r.correct == len(cfgs) and not r.wrong


def test_per_side_late_scan_reaches_the_pairs_grid():
    # e2m1 x e3m2 with c late: the products' grid is 2^(-1 - 4) = 2^-5, below either
    # format's own; neab-late-scan-sides scans 2^(6 - j) down to it and reads F <= 10
    # exactly (F <= 9 with a sticky bit, which shows one j later)
    from mmaprobe.models.space import CandidateSpace
    from mmaprobe.probes.checker import run_check

    cfgs = [AccumulatorConfig(in_format="e2m1", b_format="e3m2", k=16, nfma=8, neab=neab,
                              c_placement="late", align_rounding=align)
            for neab in (-16, -14, -13) for align in ("rz", "rne", "rz_sticky")
            if (neab, align) != (-13, "rz_sticky")]
    rep = run_check(load_probes(library_files()), [CandidateSpace("t", "<t>", cfgs)],
                    coverage=("neab",))
    (cov,) = rep.coverage
    assert cov.observable == cov.decided == len(cfgs)
    done = {r.probe.id: r.correct for r in rep.results
            if r.probe.id.startswith("neab-late-scan-sides")}
    assert done == {"neab-late-scan-sides": 6, "neab-late-scan-sides-sticky": 2}


def test_virtual_carrier_reaches_what_neither_format_does(monkeypatch):
    # e3m2 x e4m3 into binary32, two-term blocks with c late: final-rounding-cross needs
    # products that e3m2's few binades do not hold and whose top e4m3 puts beyond the pair's;
    # instantiated for the virtual format e3m2~e4m3 it applies and decides the rounding
    import mmaprobe.probes.checker as checker
    from mmaprobe.models.space import CandidateSpace

    cfgs = [AccumulatorConfig(in_format="e3m2", b_format="e4m3", k=16, nfma=1, neab=0,
                              c_placement="late", final_rounding=fr)
            for fr in ("rz", "rne", "rd", "ru")]
    space = [CandidateSpace("t", "<t>", cfgs)]
    probes = load_probes(library_files())
    rep = checker.run_check(probes, space, coverage=("final_rounding",))
    (cov,) = rep.coverage
    assert cov.observable == cov.decided == len(cfgs)
    (cross,) = [r for r in rep.results if r.probe.id == "final-rounding-cross"]
    assert cross.correct >= 2 and not cross.wrong and not rep.failed
    monkeypatch.setattr(checker, "carriers", lambda cfg: (cfg.in_format, cfg.b_fmt))
    rep = checker.run_check(probes, space, coverage=("final_rounding",))
    assert rep.coverage[0].decided < len(cfgs)


def test_per_side_two_term_chains_read_the_pairs_grid():
    # e3m2 x e4m3 into binary32, blocks of one product with c late: F = 23 to 26 need a term
    # 2^-13 (both smallest subnormals) next to 2^12, or, at F = 26, next to the sum of eight
    # blocks of 2^12: neab-2t-chain-sides reads them exactly, and
    # product-normalisation-2t-chain-sides the normalisation up to F = 25 (2^-13 one
    # quantum below 2.25 x 2^12), where the ported probes stop at the normal products' 2^-8;
    # from F = 26 on the normalisation is not observable
    from mmaprobe.models.space import CandidateSpace
    from mmaprobe.probes.checker import run_check

    cfgs = [AccumulatorConfig(in_format="e3m2", b_format="e4m3", k=16, nfma=1, neab=neab,
                              c_placement="late", align_rounding=align,
                              product_normalisation=pn)
            for neab in (0, 2, 3) for align in ("rz", "rne")
            for pn in ("denormalised", "normalised")]
    probes = load_probes(library_files())
    rep = run_check(probes, [CandidateSpace("t", "<t>", cfgs)],
                    coverage=("neab", "product_normalisation"))
    assert not any(r.wrong for r in rep.results)
    # neab 0 and 2: from F = 26 = (4 + 2) + (8 + 6) + 2 + 3 + 1 blocks of one product
    # align every term exactly under either normalisation, so it does not show there
    # (models/observable.py, late_pairs_normalisation_exact)
    reach = {"neab": len(cfgs), "product_normalisation": 8}
    for cov in rep.coverage:
        assert cov.observable == cov.decided == reach[cov.feature], cov.feature
    for pid, n in (("neab-2t-chain-sides", len(cfgs)),
                   ("product-normalisation-2t-chain-sides", 8)):
        (r,) = [r for r in rep.results if r.probe.id == pid]
        assert r.correct == n and not r.wrong, pid


def test_per_side_chain_under_a_final_rne():
    # as above under round-to-nearest-even: eight blocks of 2^12 sum to 2^15, and
    # -(1 + 2^-m) 2^-10 (1 + 2^-m on e4m3's side, 2^-4 a subnormal e3m2) meets the midpoint
    # below it once its last bit is dropped: F = 24 to 26 exactly
    from mmaprobe.models.space import CandidateSpace
    from mmaprobe.probes.checker import run_check

    cfgs = [AccumulatorConfig(in_format="e3m2", b_format="e4m3", k=16, nfma=1, neab=neab,
                              c_placement="late", final_rounding="rne")
            for neab in (-10, 0, 1, 2, 3)]
    probes = load_probes(library_files())
    rep = run_check(probes, [CandidateSpace("t", "<t>", cfgs)], coverage=("neab",))
    assert rep.coverage[0].decided == rep.coverage[0].observable == len(cfgs)
    (r,) = [r for r in rep.results if r.probe.id == "neab-2t-chain-rne-sides"]
    assert r.correct == len(cfgs) and not r.wrong
