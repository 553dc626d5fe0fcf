"""check fails on silence: every observable feature of every configuration decided by some
probe (models/observable.py), K from 2 to 64, every format and algorithm the library
covers; the known gaps (probes/gaps.yaml) reported, not hidden."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import probe_matrix as matrix
import pytest

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import SchemaError
from mmaprobe.models.space import SPACES_DIR, CandidateSpace, load_spaces
from mmaprobe.probes.checker import run_check
from mmaprobe.probes.gaps import load_gaps
from mmaprobe.probes.library import library_files, load_probes, load_text
from mmaprobe.vectors.cli import main

LIBRARY = load_probes(library_files())
GAPS = load_gaps()


def _assert_decided(rep) -> None:
    bad = [(r.probe.id, r.counterexamples[:1] or r.errors[:1]) for r in rep.results
           if r.wrong or r.errors]
    assert not bad
    undecided = [(c.space, c.feature, c.undecided, c.examples[:2]) for c in rep.coverage
                 if c.undecided]
    assert not undecided


def test_k2_does_not_crash_and_decides(tmp_path: Path) -> None:
    # final-rounding used to fail with "position 2 ... outside 0..1" at K=2
    sp = tmp_path / "k2.yaml"
    sp.write_text("id: k2\nformats: {in: binary16, c: binary32, out: binary32}\nk: [2]\n"
                  "vary:\n  nfma: [1, 2]\n  neab: [0, 2]\n  final_rounding: [rz, rne, ru]\n")
    assert main(["check", "--space", str(sp), "--quiet", "--json"]) == 0


# a fast subset of the probe-by-space matrix (the whole of it is test_matrix_full, slow)
FAST = [("binary16", "binary32", 4), ("binary16", "binary32", 64), ("e2m1", "binary32", 2),
        ("bfloat16", "bfloat16", 8), ("e4m3fnuz", "binary32", 16), ("binary64", "binary64", 2),
        ("e4m3xe5m2", "binary32", 16), ("e2m1xe3m2", "binary16", 8)]


@pytest.mark.parametrize("fin,fout,k", FAST)
def test_matrix_subset_decided(fin: str, fout: str, k: int) -> None:
    rep = run_check(LIBRARY, [matrix.matrix_space(fin, fout, k)], gaps=GAPS)
    _assert_decided(rep)


@pytest.mark.parametrize("fin,fout,k", [("e4m3@ue8m0", "binary32", 32),
                                         ("e2m1@ue4m3", "binary32", 64),
                                         ("e4m3xe2m1@ue8m0", "binary16", 64)])
def test_matrix_block_scaled_cells_decided(fin: str, fout: str, k: int) -> None:
    # block-scaled rows of the matrix (probe_matrix.SCALED_IN): every probe that applies is
    # right, with unit scale factors or scale factors of its own, and every observable
    # feature is decided or in a known gap
    rep = run_check(LIBRARY, [matrix.matrix_space(fin, fout, k)], gaps=GAPS)
    assert rep.configurations > 0
    assert not [(r.probe.id, r.counterexamples[:1]) for r in rep.results if r.failed]
    _assert_decided(rep)


@pytest.mark.slow
@pytest.mark.parametrize("fin", matrix.ALL_IN)
def test_matrix_full(fin: str) -> None:
    """Every input format x output format x K in 2..64 x algorithm of the matrix template:
    0 wrong and 0 undecided, and no cell (feature x input format x algorithm) hides more
    configurations behind a known gap (probes/gaps.yaml) than
    tests/probes/matrix_baseline.json records (the gaps only go down: `python3
    tests/probes/probe_matrix.py --write-baseline` after a probe closes some)."""
    baseline = json.loads(matrix.BASELINE.read_text())
    got = matrix.cells(fin, matrix.check_format(fin))
    assert got[f"wrong|{fin}"] == {"wrong": 0, "errors": 0}
    undecided = {key: c["undecided"] for key, c in got.items() if c.get("undecided")}
    assert not undecided, f"cells with undecided configurations: {undecided}"
    worse = {key: (c["gap"], baseline.get(key, {}).get("gap", 0))
             for key, c in got.items() if "gap" in c
             and c["gap"] > baseline.get(key, {}).get("gap", 0)}
    assert not worse, f"cells with more configurations in known gaps (now, baseline): {worse}"


def test_silence_fails_with_the_undecided_line(tmp_path: Path, capsys) -> None:
    # a library of one neab probe: three products in a block decide nothing with nfma 1
    probe = tmp_path / "p.yaml"
    probe.write_text((SPACES_DIR.parent.parent / "probes" / "library" / "core.yaml")
                     .read_text().split("---\n")[1])
    sp = tmp_path / "s.yaml"
    sp.write_text("id: silent\nformats: {in: binary16, c: binary32, out: binary32}\nk: [4]\n"
                  "vary: {nfma: [1, 4], neab: [0, 1]}\n")
    strict = ["check", "--space", str(sp), "--probe-file", str(probe), "--quiet",
              "--require-decided"]
    assert main(strict) == 1
    out = capsys.readouterr().out
    assert "undecided: neab on 2 of 4 configurations of space silent" in out
    assert main([*strict, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["undecided"] == 2 and doc["failed"]
    # without --require-decided a probe file's silence is reported, not a failure
    assert main(strict[:-1]) == 0
    out = capsys.readouterr().out
    assert "undecided: neab on 2 of 4" in out and "2 configuration-features left" in out


def test_carry_bits_exact_count_at_k4() -> None:
    # a 5-term block (four products and c) wraps with 2 carry bits and never with 3: the
    # library decides 2 exactly and 'at least 3' (= unbounded) for 3 and null
    cfgs = [AccumulatorConfig(in_format="binary16", k=4, carry_bits=cb) for cb in (None, 2, 3)]
    rep = run_check(LIBRARY, [CandidateSpace("k4", "<t>", cfgs)], gaps=GAPS)
    _assert_decided(rep)
    (cov,) = [c for c in rep.coverage if c.feature == "carry_bits"]
    assert cov.observable == 3 and cov.decided == 3


def test_known_gaps_are_reported_not_hidden(tmp_path: Path, capsys) -> None:
    sp = tmp_path / "fp4.yaml"
    # e2m1 into binary16 at K = 64 with c late under rne: the bit 2^g of a product beside
    # an earlier result changes the output only near a midpoint no product reaches, a known
    # gap of neab
    sp.write_text("id: fp4\nformats: {in: e2m1, c: binary16, out: binary16}\nk: [64]\n"
                  "vary: {nfma: [1, 64], neab: [0, 2], c_placement: [late], "
                  "final_rounding: [rne]}\n")
    assert main(["check", "--space", str(sp), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "known gap: neab on" in out and "as above for e2m1" in out
    rep = run_check(LIBRARY, load_spaces([sp]))  # without the gaps: silence fails
    assert rep.undecided > 0 and rep.failed


def test_carry_wrap_decides_block_structure(tmp_path: Path) -> None:
    # e2m1 into binary32 with c late and two carry bits: the block structure shows only
    # through which sums wrap (probes/library/carry-wrap-narrow.yaml), once a known gap
    sp = tmp_path / "fp4.yaml"
    sp.write_text("id: fp4\nformats: {in: e2m1, c: binary32, out: binary32}\nk: [16]\n"
                  "vary: {nfma: [4, 8, 16], c_placement: [early, late], carry_bits: [2]}\n")
    rep = run_check(LIBRARY, load_spaces([sp]))  # without the gaps
    _assert_decided(rep)
    (cov,) = [c for c in rep.coverage if c.feature == "nfma"]
    assert cov.observable == cov.decided == 6


def test_gap_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "g.yaml"
    bad.write_text("gaps:\n  - {feature: colour, why: x}\n")
    with pytest.raises(SchemaError, match=r"g.yaml:2: gaps.0.feature: expected a feature"):
        load_gaps(bad)
    bad.write_text("gaps:\n  - {feature: neab, in: binary17, why: x}\n")
    with pytest.raises(SchemaError, match=r"gaps.0.in: unknown format"):
        load_gaps(bad)


def test_probe_that_cannot_instantiate_is_a_failure_not_a_crash() -> None:
    (p,) = load_text("id: t\ntitle: t\nfeature: neab\nsource: s\nvectors:\n"
                     "  - {name: v, a: {2: 1}, b: {2: 1}}\ndecide:\n  - otherwise: inconclusive\n",
                     "t.yaml")
    rep = run_check([p], [CandidateSpace("k2", "<t>", [AccumulatorConfig(in_format="binary16",
                                                                         k=2)])])
    (r,) = rep.results
    assert r.failed and "outside 0..1 for k=2" in r.errors[0]


def test_block_tail_tie_reads_f_where_one_product_cannot() -> None:
    # e3m2 into binary16, blocks of 4 products, c late, rne (once a known gap: no single
    # e3m2 product holds a midpoint and a tail).  Twelve products 28 * 28 make A = 9408 (et
    # = 13, ulp 8, even); the last block adds h = 2 * 2 = 4 (A + h a tie, down to 9408) and
    # the tail 2^-4 * 2^-4 = 2^-8, which the alignment keeps iff F >= 13 + 8 = 21
    from mmaprobe.models.accumulator import evaluate
    from mmaprobe.models.formats import get_format

    e3m2, b16 = get_format("e3m2"), get_format("binary16")
    row = [e3m2.exact_bits(v) for v in [28] * 12 + [2, Fraction(1, 16), 0, 0]]
    a = np.array([row], dtype=np.uint64)
    c = np.array([0], dtype=np.uint64)
    got = {}
    for neab in (-3, -2, 0):
        cfg = AccumulatorConfig(in_format="e3m2", c_format="binary16", out_format="binary16",
                                k=16, nfma=4, neab=neab, c_placement="late",
                                final_rounding="rne")
        got[neab] = b16.to_fraction(int(evaluate(cfg, a, a, c)[0]))
    assert got == {-3: 9408, -2: 9416, 0: 9416}
    # and the probe reads it: F = 20 exactly, F >= 21 beyond
    cfgs = [AccumulatorConfig(in_format="e3m2", c_format="binary16", out_format="binary16",
                              k=16, nfma=4, neab=neab, c_placement="late", final_rounding="rne")
            for neab in (-3, 0, 2)]
    (probe,) = [p for p in LIBRARY if p.id == "neab-block-tail-tie"]
    rep = run_check([probe], [CandidateSpace("t", "<t>", cfgs)])
    (res,) = rep.results
    assert res.tried == 3 and res.correct == 3 and res.wrong == 0
    rep = run_check(LIBRARY, [CandidateSpace("t", "<t>", cfgs)])  # without the gaps
    (cov,) = [c for c in rep.coverage if c.feature == "neab"]
    assert cov.observable == cov.decided == 3


def _e4m3_sticky(neab: int, **kw) -> AccumulatorConfig:
    return AccumulatorConfig(in_format="e4m3", c_format="binary32", out_format="binary32",
                             k=16, nfma=1, neab=neab, align_rounding="rz_sticky",
                             out_frac_bits=13, **kw)


def _row(cfg: AccumulatorConfig, products, c=0) -> Fraction:
    """The model's output on products (a_i, b_i) and c, as a value."""
    from mmaprobe.models.accumulator import evaluate
    from mmaprobe.models.formats import get_format

    fin, fc, fout = (get_format(n) for n in (cfg.in_format, cfg.c_format, cfg.out_format))
    a = np.zeros((1, cfg.k), dtype=np.uint64)
    b = np.zeros((1, cfg.k), dtype=np.uint64)
    for i, (x, y) in enumerate(products):
        a[0, i], b[0, i] = fin.exact_bits(Fraction(x)), fin.exact_bits(Fraction(y))
    cc = np.array([fc.exact_bits(Fraction(c))], dtype=np.uint64)
    return fout.to_fraction(int(evaluate(cfg, a, b, cc)[0]))


def _one_product(cfg: AccumulatorConfig, a0, b0, c) -> Fraction:
    return _row(cfg, [(a0, b0)], c)


def test_sticky_blocks_with_c_late_cancelled_above_the_accumulator() -> None:
    # e4m3 into 13 output fraction bits, c late, two-term blocks with a sticky bit: once a
    # known gap whose reason guessed F = 16 gives the same unit as F >= 17.  It does not.
    # Blocks 1-2 build A = -(2^-3 - 2^-16); block 3 adds 2^8 * 2^-9 = 2^-1, which a
    # denormalised unit aligns at 2^(8 - 6) = 2^2.  At F = 16 (q = 2^-14) A's last bit is
    # below q/2 and the sticky half 2^-15 replaces it: 2^-1 - 2^-3 + 2^-15, one ulp above the
    # exact 2^-1 - 2^-3 + 2^-16 (a midpoint rz and rne take down).  From F = 17 it is exact.
    cut = [(-2**-6, 2**3), (2**-9, 2**-7), (2**8, 2**-9)]
    top, ulp = Fraction(3, 8), Fraction(1, 2**15)
    for fr in ("rz", "rne"):
        assert _row(_e4m3_sticky(-7, c_placement="late", final_rounding=fr), cut) == top + ulp
        for neab in (-6, 0, 3):
            assert _row(_e4m3_sticky(neab, c_placement="late", final_rounding=fr), cut) == top
    # under rne F = 17 differs from F >= 18 on A = -5 * 2^-18 beside 2^-1: below the quantum
    # 2^-15 at F = 17, A leaves the sticky half 2^-16, and 2^-1 - 2^-16 is a tie whose even
    # neighbour is 2^-1; exactly, 2^-1 - 5 * 2^-18 rounds to 2^-1 - 2^-15
    mid = [(-5 * 2**-9, 2**-9), (2**8, 2**-9)]
    rne = {neab: _row(_e4m3_sticky(neab, c_placement="late", final_rounding="rne"), mid)
           for neab in (-7, -6, -5, 0)}
    assert rne == {-7: Fraction(1, 2) - ulp, -6: Fraction(1, 2), -5: Fraction(1, 2) - ulp,
                   0: Fraction(1, 2) - ulp}
    # neab-2t-sticky-late-cancel(-rne) decide neab on every such unit, down to F = 15
    cfgs = [_e4m3_sticky(neab, c_placement="late", final_rounding=fr)
            for neab in (-8, -7, -6, -5, 0, 3) for fr in ("rz", "rd", "rne")]
    rep = run_check(LIBRARY, [CandidateSpace("t", "<t>", cfgs)])  # without the gaps
    assert not [r.probe.id for r in rep.results if r.wrong or r.errors]
    (cov,) = [c for c in rep.coverage if c.feature == "neab"]
    assert cov.observable == cov.decided == len(cfgs)


def test_sticky_blocks_with_c_wider_than_the_output() -> None:
    # e4m3 into binary32 with 13 output fraction bits and a sticky bit (once a known gap:
    # the probes read F through the output, which these blocks round correctly from F = 21).
    # c = 2^13 - 2^-11 beside 2^-6 * 2^-6: kept whole at F = 23 (the sticky half of the
    # product leaves the sum below 2^13: truncated to 8191.5); at F = 22 c's last bit is the
    # sticky half itself and the product adds another: 8192 exactly
    c = 8192 - Fraction(1, 2**11)
    assert _one_product(_e4m3_sticky(0), Fraction(1, 64), Fraction(1, 64), c) == Fraction(16383, 2)
    assert _one_product(_e4m3_sticky(-1), Fraction(1, 64), Fraction(1, 64), c) == 8192
    # c = 2^-18 (1 + 2^-19) beside -(2^-9)^2: a denormalised product aligns at 2^-12, so F =
    # 23 leaves c's last bit below the quantum and the sum is the sticky half 2^-36; a
    # normalised one aligns at 2^-18 and the sum is exact
    c = Fraction(1, 2**18) * (1 + Fraction(1, 2**19))
    s = -Fraction(1, 2**9)
    assert _one_product(_e4m3_sticky(0), s, -s, c) == Fraction(1, 2**36)
    assert _one_product(_e4m3_sticky(0, product_normalisation="normalised"), s, -s, c) \
        == Fraction(1, 2**37)
    # the probes of two-term-sticky-c.yaml decide both features on every such unit with c
    # early (c late is left a known gap)
    cfgs = [_e4m3_sticky(neab, product_normalisation=pn, final_rounding=fr)
            for neab in (-10, 0, 2, 3) for pn in ("denormalised", "normalised")
            for fr in ("rz", "rne")]
    rep = run_check(LIBRARY, [CandidateSpace("t", "<t>", cfgs)])  # without the gaps
    _assert_decided(rep)
    for f in ("neab", "product_normalisation"):
        (cov,) = [c for c in rep.coverage if c.feature == f]
        assert cov.observable == cov.decided == len(cfgs)


def test_mixed_and_block_scaled_units_without_the_gaps() -> None:
    # probes reach mixed-format and block-scaled units through probes/port.py and, under
    # scale factors, with scale factors of their own (probes/library/scaled.yaml): with no
    # known gap to lean on, every observable feature of an MXFP8 unit on FDA, an NVFP4
    # unit on GDFS and e4m3 x e5m2 is decided (until 2026-11-24 the first two left the
    # carry bits and subnormal products and sums, and neab, nfma, both roundings, the carry
    # bits and the subnormal output, undecided)
    from mmaprobe.models.presets import get_preset

    fda = get_preset("b200-e4m3-fp32-ue8m0-b32").config
    gdfs = AccumulatorConfig(in_format="e2m1", k=64, algorithm="gdfs", nfma=16, neab=12,
                             scale_format="ue4m3", scale_block=16)
    mixed = AccumulatorConfig(in_format="e4m3", b_format="e5m2", k=32, nfma=16, neab=2)
    for cfg in (fda, gdfs, mixed):
        rep = run_check(LIBRARY, [CandidateSpace("t", "<t>", [cfg])])
        assert not [r.probe.id for r in rep.results if r.wrong or r.errors]
        assert not rep.failed and not {c.feature for c in rep.coverage if c.undecided}
        assert sum(c.decided for c in rep.coverage) >= 8
