"""Our probe library: every probe decides every preset it applies to, stays robust on a
compact space that exercises all of them, and the language's error paths are clear."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import SchemaError
from mmaprobe.models.formats import get_format
from mmaprobe.models.observable import alternatives
from mmaprobe.models.presets import list_presets
from mmaprobe.models.reference import reference_dot
from mmaprobe.models.space import CandidateSpace, load_spaces, space_files
from mmaprobe.probes.checker import run_check
from mmaprobe.probes.decide import Outcome
from mmaprobe.probes.gaps import load_gaps
from mmaprobe.probes.library import library_files, load_probes, load_text
from mmaprobe.probes.probe import InstantiationError
from mmaprobe.vectors.cli import main

from helpers import value_of

LIBRARY = load_probes(library_files())
IDS = [p.id for p in LIBRARY]
GAPS = load_gaps()


def _space(*cfgs: AccumulatorConfig) -> CandidateSpace:
    return CandidateSpace("test", "<test>", list(cfgs))


@pytest.fixture(scope="module")
def preset_report():
    return run_check(LIBRARY, [_space(*(p.config for p in list_presets()))], gaps=GAPS)


@pytest.mark.parametrize("probe_id", IDS)
def test_probe_decides_every_preset_it_applies_to(preset_report, probe_id: str) -> None:
    (r,) = [r for r in preset_report.results if r.probe.id == probe_id]
    assert r.wrong == 0, r.counterexamples[:1]
    assert not r.errors, r.errors[:1]
    if not r.probe.may_be_inconclusive:
        assert r.inconclusive == 0, r.inconclusive_examples[:1]


def test_every_preset_has_every_observable_feature_decided(preset_report) -> None:
    # real devices: no silence and no known gap (the nfma walk of fp8 into binary16 reads c
    # as the large term, probes/library/two-term-narrow.yaml; fp6/fp4 inputs, Blackwell
    # f8f6f4, are decided by probes/library/narrow-inputs.yaml).  The mixed-format
    # instructions are decided by the probes ported product by product (probes/port.py) and
    # those written per side; the block-scaled ones by probes with scale factors of their
    # own where unit scale factors do not reach (probes/library/scaled.yaml: FDA products
    # and sums below 2^-126, GDFS groups aligned on their scale factors).
    undecided = [(c.feature, c.examples[:2]) for c in preset_report.coverage if c.undecided]
    assert not undecided
    found = {why.split(":")[0] for c in preset_report.coverage for why in c.gap_reasons}
    assert not found, found


def test_presets_decided_features(preset_report) -> None:
    # every decidable feature of the issue is decided on some preset by some probe
    decided = {r.probe.feature for r in preset_report.results if r.correct}
    assert decided >= {"neab", "nfma", "final_rounding", "align_rounding", "carry_bits",
                       "product_normalisation", "c_placement", "interleave", "monotone",
                       "product_exact", "subnormal_inputs", "subnormal_output",
                       "subnormal_sums", "nan", "specials", "algorithm"}


COMPACT = """\
id: compact-fp16
formats: {in: binary16, c: binary32, out: binary32}
k: [8]
vary:
  neab: [0, 2]
  nfma: [1, 2, 8]
  align_rounding: [rz, rd, rne, rz_sticky]
  final_rounding: [rz, rne, ru]
  c_placement: [early, late]
  product_normalisation: [denormalised, normalised]
  carry_bits: [null, 0]
---
id: compact-fp16-fp16
formats: {in: binary16, c: binary16, out: binary16}
k: [8]
vary:
  nfma: [2, 8]
  flush: [[], [output], [sums], [inputs]]
  final_rounding: [rd, rne]
---
id: compact-fp8
formats: {in: e4m3, c: binary32, out: binary32}
k: [16]
vary:
  interleave: [none, pairs]
  nfma: [8, 16]
  neab: [-10, 2]
  out_frac_bits: [13, null]
  c_placement: [early, late]
---
id: compact-fp64
formats: {in: binary64, c: binary64, out: binary64}
k: [4]
fixed: {algorithm: sfma, nfma: 1, nan: ieee}
vary:
  final_rounding: [rz, rne, rd, ru]
"""


def test_library_robust_on_compact_space(tmp_path: Path) -> None:
    sp = tmp_path / "compact.yaml"
    sp.write_text(COMPACT)
    rep = run_check(LIBRARY, load_spaces([sp]), gaps=GAPS)
    bad = [(r.probe.id, r.counterexamples[:1] or r.inconclusive_examples[:1] or r.errors[:1])
           for r in rep.results if r.failed]
    assert not bad
    assert rep.undecided == 0, [(c.feature, c.space, c.examples[:1]) for c in rep.coverage
                                if c.undecided]
    assert main(["check", "--space", str(sp), "--quiet", "--probes", "carry-*"]) == 0


def test_default_spaces_vary_the_new_features() -> None:
    spaces = load_spaces(space_files(), templates=False)
    seen: dict[str, set] = {}
    for s in spaces:
        for c in s.configs:
            for f in ("carry_bits", "product_normalisation", "interleave", "flush",
                      "algorithm", "in_format"):
                seen.setdefault(f, set()).add(getattr(c, f))
    assert {None, 0, 1, 2, 3} <= seen["carry_bits"]
    assert seen["product_normalisation"] == {"denormalised", "normalised"}
    assert {"none", "pairs"} <= seen["interleave"]
    assert {(), ("inputs",), ("output",)} <= seen["flush"]
    assert "sfma" in seen["algorithm"] and "binary64" in seen["in_format"]
    assert 2000 < sum(len(s.configs) for s in spaces) < 20000


@pytest.mark.slow
def test_default_spaces_all_robust_json(capsys) -> None:
    import json

    assert main(["check", "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seconds"] < 240
    assert all(p["wrong"] == 0 for p in out["probes"])


# -- the language: outcomes, error paths --------------------------------------------------

def test_unbounded_carry_satisfies_at_least_only() -> None:
    assert Outcome("at_least", 3).holds(None) is True
    assert Outcome("at_most", 3).holds(None) is False
    (p,) = [p for p in LIBRARY if p.id == "interleave"]
    assert p.feature == "interleave"  # 'none' stays a string for non-integer features


HEAD = "id: t\ntitle: t\nfeature: nfma\nsource: s\n"


@pytest.mark.parametrize("body, msg", [
    ("vectors:\n  - {name: w, sweep: {var: i, from: 0}, a: {i: 1}}\n"
     "decide:\n  - otherwise: inconclusive\n", r"t.yaml:6: vectors.0.sweep: expected a mapping"),
    ("vectors:\n  - {name: w, sweep: {var: I, from: 0, to: 1}, a: {0: 1}}\n"
     "decide:\n  - otherwise: inconclusive\n", r"sweep.var: expected a lower-case"),
    ("vectors:\n  - {name: w, sweep: {var: i, from: 0, to: 1, by: 2}, a: {0: 1}}\n"
     "decide:\n  - otherwise: inconclusive\n", r"sweep: expected a mapping"),
    ("vectors:\n  - {name: w, a: {0: 1}}\ndecide:\n  - first: {sweep: w, where: 'd == 0'}\n"
     "    then: 1\n", r"first.sweep: expected the name of a swept vector"),
    ("requires: [neab]\nwhen: {nfma: [4]}\nvectors:\n  - {name: w, a: {0: 1}}\n"
     "decide:\n  - otherwise: inconclusive\n", r"t.yaml:6: when.nfma: expected a feature listed "
                                               r"in requires"),
    ("applies_when: 'nfma > 2'\nvectors:\n  - {name: w, a: {0: 1}}\n"
     "decide:\n  - otherwise: inconclusive\n", r"applies_when: unknown name 'nfma'"),
    ("vectors:\n  - {name: w, a: {0: 1}}\ndecide:\n  - first: {sweep: w, where: 'd > v'}\n"
     "    then: 1\n", r"expected the name of a swept vector|unknown name 'v'"),
])
def test_schema_error_paths(body: str, msg: str) -> None:
    with pytest.raises(SchemaError, match=msg):
        load_text(HEAD + body, "t.yaml")


@pytest.mark.parametrize("sweep, msg", [
    ("{var: i, from: 0, to: 3, step: 0}", "positive step"),
    ("{var: i, from: 0, to: 100000}", "at most 4096"),
    ("{var: i, from: 0, to: 'k'}", r"position 'i' gives 4..4, outside 0..3 for k=4"),
])
def test_bad_sweeps_fail_at_instantiation(sweep: str, msg: str) -> None:
    (p,) = load_text(HEAD + f"vectors:\n  - {{name: w, sweep: {sweep}, a: {{i: 1}}, b: {{i: 1}}}}\n"
                     "decide:\n  - otherwise: inconclusive\n", "s.yaml")
    with pytest.raises(InstantiationError, match=msg):
        p.instantiate("binary16", "binary32", "binary32", 4)


def test_unrepresentable_instantiation_names_probe_format_term() -> None:
    # [KM25]'s interleaving walk uses 2^-24 = 2^-12 * 2^-12: not an e4m3 product
    from mmaprobe.probes.library import suite_probes

    (p,) = [p for p in suite_probes("khattak2025") if p.id == "km-interleave-walk"]
    p.instantiate("e5m2", "binary32", "binary32", 32)
    with pytest.raises(InstantiationError,
                       match=r"probe km-interleave-walk .*format e4m3, vector at3 a\[1\]: "
                             r"'2\^-12' = 1/4096 .*not representable in e4m3"):
        p.instantiate("e4m3", "binary32", "binary32", 32)
    # a library probe that needs decided features says so when one is missing
    (q,) = [q for q in LIBRARY if q.id == "carry-bits"]
    with pytest.raises(InstantiationError, match=r"probe carry-bits .*unknown name 'nfma'"):
        q.instantiate("binary16", "binary32", "binary32", 8)


def test_applies_when_limits_a_probe_to_its_range() -> None:
    (p,) = [p for p in LIBRARY if p.id == "c-placement"]
    assert p.applies_when_holds("binary16", "binary32", "binary32", 8, {"neab": 1, "F": 24,
                                                                        "out_t": 23})
    assert not p.applies_when_holds("binary16", "binary32", "binary32", 8, {"neab": 0, "F": 23,
                                                                            "out_t": 23})
    rep = run_check([p], [_space(AccumulatorConfig(in_format="binary16", k=8, neab=0))])
    assert rep.results[0].not_applicable == 1 and rep.results[0].tried == 0


def test_flog2_is_exact_floor_log2() -> None:
    from fractions import Fraction

    from mmaprobe.probes import expr as ex

    assert ex.evaluate("flog2(9 / 4 * 15)", {}) == 5
    assert ex.evaluate("flog2(3 / 1024)", {}) == -9
    assert ex.evaluate("flog2(2^-2000)", {}) == -2000
    assert ex.evaluate("flog2(k)", {"k": Fraction(16)}) == 4
    for bad in ("flog2(0)", "flog2(-1)"):
        with pytest.raises(ex.ExprError, match="non-positive"):
            ex.evaluate(bad, {})


def _matrix(neabs, nfmas, placements, frac_bits) -> list[AccumulatorConfig]:
    """Every input format x output format x K of the issue, with some accumulators."""
    import itertools

    from mmaprobe.models.config import ConfigError

    cfgs = []
    for fin, fout, k, neab, nf, il, cp, ofb in itertools.product(
            ["binary16", "bfloat16", "tf32", "e4m3", "e5m2"], ["binary32", "binary16"],
            [4, 8, 16, 32], neabs, nfmas, ["none", "pairs"], placements, frac_bits):
        nfma = {"k": k, "half": k // 2}.get(nf, nf)
        if ofb and fout != "binary32":
            continue
        try:
            cfgs.append(AccumulatorConfig(
                in_format=fin, k=k, c_format=fout, out_format=fout, neab=neab, nfma=nfma,
                interleave=il, c_placement=cp, out_frac_bits=ofb,
                final_rounding="rne" if fout == "binary16" else "rz"))
        except ConfigError:
            pass  # e.g. pairs with nfma != k/2
    return cfgs


def _check_matrix(cfgs: list[AccumulatorConfig]) -> None:
    rep = run_check(LIBRARY, [_space(*cfgs)])
    assert not [(r.probe.id, r.counterexamples[:1] or r.inconclusive_examples[:1])
                for r in rep.results if r.failed]
    fmts = {(c.in_format, c.out_format) for r in rep.results for c in r.tried_configs}
    assert len(fmts) == 10  # every probe family instantiates somewhere for every pair


def test_library_instantiates_for_every_format_pair_and_k() -> None:
    _check_matrix(_matrix([-10, 2], ["half"], ["early"], [None]))


@pytest.mark.slow
def test_library_instantiates_for_every_format_pair_and_k_full() -> None:
    _check_matrix(_matrix([-10, 0, 1, 2, 3], ["k", "half", 1, 2], ["early", "late"],
                          [None, 13]))


BLOCK_SCALED = """\
id: nvfp4-varied
formats: {in: e2m1, c: binary32, out: binary32}
k: [64]
fixed: {algorithm: gdfs, scale_format: ue4m3, scale_block: 16}
vary:
  nfma: [1, 4, 16]
  neab: [0, 2, 12]
  final_rounding: [rz, rne, ro]
  align_rounding: [rz, rne, rz_sticky]
  carry_bits: [null, 6, 10]
---
id: mxfp4-gdfs
formats: {in: e2m1, c: binary32, out: binary32}
k: [64]
fixed: {algorithm: gdfs, scale_format: ue8m0, scale_block: 32, final_rounding: rne}
vary: {nfma: [8, 32], neab: [0, 12], flush: [[], [output]]}
---
id: mxfp8-varied
formats: {in: e4m3, c: binary32, out: binary32}
k: [32, 64]
fixed: {scale_format: ue8m0, scale_block: 32, neab: 2}
vary:
  nfma: [4, 32]
  c_placement: [early, late]
  product_normalisation: [denormalised, normalised]
  carry_bits: [null, 3]
  flush: [[], [products], [sums], [output]]
---
id: mxfp8-binary16
formats: {in: e4m3, c: binary16, out: binary16}
k: [32]
fixed: {scale_format: ue8m0, scale_block: 32, neab: 2}
vary:
  nfma: [8, 32]
  final_rounding: [rz, rne, ru, rd]
  flush: [[], [products]]
---
id: mxfp8-two-blocks
formats: {in: e4m3, c: binary32, out: binary32}
k: [64]
fixed: {scale_format: ue8m0, scale_block: 32, neab: 2}
vary:
  nfma: [1, 64]
  align_rounding: [rz, rne, rz_sticky]
---
id: mxfp8-two-blocks-normalised
formats: {in: e4m3, c: binary32, out: binary32}
k: [64]
fixed: {scale_format: ue8m0, scale_block: 32, neab: 2, nfma: 64, align_rounding: rz,
        product_normalisation: normalised}
"""


#: the scaled probes for FDA with c late (scaled.yaml), checked on NVFP4-style units below
SCALED_LATE = ("neab-scaled-one-block-deep", "neab-scaled-one-block-scan",
               "neab-scaled-late-scan", "neab-scaled-late-scan-near",
               "align-rounding-scaled-late", "product-normalisation-scaled-late",
               "nfma-walk-scaled-late-tie", "product-normalisation-scaled-one-block")
NVFP4_FDA_LATE = """\
id: nvfp4-fda-late-one-scale-block
formats: {in: e2m1, c: binary32, out: binary32}
k: [16]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: [1, 8, 16]
  neab: [-10, 0, 2]
  final_rounding: [rz, rne]
---
id: nvfp4-fda-late-four-scale-blocks
formats: {in: e2m1, c: binary32, out: binary32}
k: [64]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: [1, 16]
  neab: [-10, 0, 2]
  final_rounding: [rz, rne]
"""


def test_scaled_late_probes_read_fda_with_c_late(tmp_path) -> None:
    # e2m1 under ue4m3 scale factors with c late: under one pair of scale factors (K = 16)
    # the one-block probes decide F on every configuration (binary32 holds the largest
    # earlier result beside the smallest product); across scale blocks (K = 64) each
    # *-scaled-late probe reads its feature beside 2^h from the first one
    _decided_by(tmp_path, NVFP4_FDA_LATE, SCALED_LATE, "neab",
                "nvfp4-fda-late-one-scale-block")


def _never_wrong(tmp_path, spaces: str):
    """The library's report on these spaces (YAML text), no probe wrong on any of them."""
    path = tmp_path / "spaces.yaml"
    path.write_text(spaces)
    rep = run_check(LIBRARY, load_spaces([path]))
    assert not [(r.probe.id, r.counterexamples[:1]) for r in rep.results if r.failed]
    return rep


def _decided_more_with(tmp_path, rep, probe_ids, features=("neab",)) -> None:
    """Each feature decided on more configurations of the spaces _never_wrong last wrote
    (rep, its report) with the probes probe_ids than without them."""
    without = run_check([p for p in LIBRARY if p.id not in probe_ids],
                        load_spaces([tmp_path / "spaces.yaml"]))
    for f in features:
        assert (sum(c.decided for c in without.coverage if c.feature == f)
                < sum(c.decided for c in rep.coverage if c.feature == f)), f


def _file_probes_right(tmp_path, spaces: str, file: str, count: int):
    """The library on these spaces, no probe wrong, and each of the count probes of the
    library file ``file`` right somewhere: (the report, their ids)."""
    ids = {p.id for p in LIBRARY if p.file.endswith(file)}
    rep = _never_wrong(tmp_path, spaces)
    tried = {r.probe.id: r.correct for r in rep.results if r.probe.id in ids}
    assert len(tried) == count and min(tried.values()) > 0, tried
    return rep, ids


def _decided_by(tmp_path, spaces: str, probe_ids, feature: str, space: str, also=()):
    """The library on these spaces: no probe wrong, each of probe_ids right somewhere, and
    feature decided on every configuration of space where it is observable, and so each
    (feature, space) of ``also`` (the report; one run of the library)."""
    rep = _never_wrong(tmp_path, spaces)
    tried = {r.probe.id: r.correct for r in rep.results if r.probe.id in probe_ids}
    assert len(tried) == len(probe_ids) and min(tried.values(), default=1) > 0, tried
    for f, sp in ((feature, space), *also):
        (cov,) = [c for c in rep.coverage if c.feature == f and c.space == sp]
        assert cov.observable == cov.decided > 0, cov.to_json()
    return rep


NVFP4_CARRY = """\
id: nvfp4-fda-carry-late
formats: {in: e2m1, c: binary32, out: binary32}
k: [16, 32]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: [1, 8, 16]
  carry_bits: [null, 0, 1, 2, 3, 4, 5]
  flush: [[], [inputs]]
---
id: nvfp4-fda-carry-late-bfloat16
formats: {in: e2m1, c: binary32, out: bfloat16}
k: [16]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: [1, 8]
  carry_bits: [null, 0, 1, 2, 3, 4, 5]
---
id: nvfp4-fda-carry-normalised
formats: {in: e2m1, c: binary32, out: binary32}
k: [32, 64]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16,
        product_normalisation: normalised, nfma: 32}
vary:
  carry_bits: [null, 3, 4, 5]
"""


def test_scaled_carry_probes_read_every_carry_bit(tmp_path) -> None:
    # NVFP4 on FDA: a scaled product reaches 1.5^2 x 1.875^2 = 7.91, so with c late a
    # block of one product tells 0 carry bits from more and only an earlier result just
    # below 2^(E + 1) beside it (6 x 1.5 x 1.875^2 = 1.98 x 2^4, then 7.91 x 2^4) wraps
    # one; normalised products need c just below 2 units of their exponent (32 x 1.98 +
    # 2 reaches 64, five carry bits)
    rep = _decided_by(tmp_path, NVFP4_CARRY, ("carry-bits-scaled-late-chain-deno",
                                              "carry-bits-scaled-c-norm"), "carry_bits",
                      "nvfp4-fda-carry-late")
    for space in ("nvfp4-fda-carry-late-bfloat16", "nvfp4-fda-carry-normalised"):
        (cov,) = [c for c in rep.coverage if c.feature == "carry_bits" and c.space == space]
        assert cov.observable == cov.decided > 0, cov.to_json()


NVFP4_TWO_TERM = """\
id: nvfp4-2t-near
formats: {in: e2m1, c: binary16, out: binary16}
k: [16]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, nfma: 1}
vary:
  neab: [0, 1, 2]
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne]
---
id: nvfp4-2t-rz-flushed
formats: {in: e2m1, c: binary16, out: binary16}
k: [16]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, nfma: 1, flush: [inputs]}
vary:
  neab: [0, 2]
  product_normalisation: [denormalised, normalised]
---
id: nvfp4-2t-rz-flushed-binary32
formats: {in: e2m1, c: binary32, out: binary32}
k: [16]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, nfma: 1, flush: [inputs]}
vary:
  neab: [0, 2, 12]
  product_normalisation: [denormalised, normalised]
---
id: nvfp4-2t-bfloat16
formats: {in: e2m1, c: bfloat16, out: bfloat16}
k: [16]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, nfma: 1, neab: 0}
vary:
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne]
"""


def test_deep_field_of_subnormal_scale_factors() -> None:
    # a subnormal factor aligns its product at its exponent field: 0.5 x 4 under scale
    # factors 2^-9 and 2^8 is 1, aligned at 2^4 (depth 1 + 3), so c = -(2^-12 + 2^-22)
    # beside it loses its last bit at F = 25, where the sum is the midpoint 1 - 2^-12 and
    # rounds to even (1), and keeps it at F = 26 (1 - 2^-11)
    f2, fs, fh = get_format("e2m1"), get_format("ue4m3"), get_format("binary16")
    row = [f2.exact_bits(Fraction(1, 2))] + [0] * 15, [f2.exact_bits(4)] + [0] * 15
    c = fh.exact_bits(-(Fraction(1, 2**12) + Fraction(1, 2**22)))
    scales = [fs.exact_bits(Fraction(1, 2**9))], [fs.exact_bits(256)]
    out = {}
    for neab in (1, 2, 3):
        cfg = AccumulatorConfig(in_format="e2m1", out_format="binary16", c_format="binary16",
                                k=16, nfma=1, neab=neab, final_rounding="rne",
                                scale_format="ue4m3", scale_block=16)
        out[23 + neab] = fh.to_fraction(reference_dot(cfg, *row, c, scale_a=scales[0],
                                                       scale_b=scales[1]))
    assert out == {24: 1, 25: 1, 26: 1 - Fraction(1, 2**11)}


def test_scaled_two_term_probes_read_the_deep_field(tmp_path) -> None:
    # NVFP4 two-term blocks with c early into 16-bit outputs: the unit-scale probes stop at
    # e2m1's depth; scaled-two-term.yaml reads F, the normalisation and the alignment
    # rounding beside products of subnormal scale factors (nearest final roundings) and
    # of the scale format's range (truncation, flushed inputs)
    rep = _never_wrong(tmp_path, NVFP4_TWO_TERM)
    tried = {r.probe.id: r.correct for r in rep.results
             if r.probe.file.endswith("scaled-two-term.yaml")}
    assert len(tried) == 11 and min(tried.values()) > 0, tried
    want = {"nvfp4-2t-near": ("neab", "product_normalisation"),
            "nvfp4-2t-rz-flushed": ("neab", "align_rounding"),
            "nvfp4-2t-rz-flushed-binary32": ("neab", "product_normalisation", "align_rounding"),
            "nvfp4-2t-bfloat16": ("neab", "product_normalisation")}
    for c in rep.coverage:
        if c.feature in want[c.space]:
            assert c.observable == c.decided > 0, c.to_json()


# on binary16 c cannot hold u's tail (u = 2^-24 is its smallest subnormal): these two apply
# where the output's spacing below P is a normal number of c's format
STICKY_TAIL_TIE = {"neab-2t-sticky-grid-tail-sides", "neab-2t-sticky-grid-tie-sides"}
MIXED_DEEP = """\
id: e3m2xe4m3-2t-deep-binary16
formats: {in: e3m2, c: binary16, out: binary16}
k: [2, 8]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1}
vary:
  neab: [-8, -7, -1, 0, 1, 3]
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne]
---
id: e3m2xe4m3-2t-deep-bfloat16
formats: {in: e3m2, c: bfloat16, out: bfloat16}
k: [4]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1}
vary:
  neab: [-9, -8, -3, -2, 0, 2]
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne]
---
id: e3m2xe4m3-2t-sticky-binary16
formats: {in: e3m2, c: binary16, out: binary16}
k: [2, 8]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1, align_rounding: rz_sticky}
vary:
  neab: [-10, -9, -8, -1, 0, 2]
  final_rounding: [rz, rne, rna, rd]
"""


def test_deep_field_probes_of_mixed_pairs(tmp_path) -> None:
    # two-term-deep.yaml: e3m2 x e4m3 two-term blocks with c early into 16-bit outputs.
    # a.smin 2^2 is 2^-2 at field 2^0: c = 2^-14 + 2^-24 beside -2^-2 loses its tail at F =
    # 23 (the midpoint rounds to -2^-2) and keeps it at F = 24, from which
    # models/observable.py proves every F one unit; into bfloat16 a.smin b.smin (2^-13, five
    # binades deep) reads F up to 20 and "F >= 21", the proof's bound there; with a sticky
    # bit, c = -3 2^-24 beside a.smin b.smin reads F >= 15 (the bound).  Without the file
    # 16 of 72, 28 of 36 and 36 of 48 configurations leave F undecided.
    e3, e4, h = get_format("e3m2"), get_format("e4m3"), get_format("binary16")
    a, b = [e3.exact_bits(Fraction(-1, 16))], [e4.exact_bits(4)]
    c = h.exact_bits(Fraction(1, 2**14) + Fraction(1, 2**24))
    out = {}
    for neab in (0, 1):
        cfg = AccumulatorConfig(in_format="e3m2", b_format="e4m3", c_format="binary16",
                                out_format="binary16", k=1, nfma=1, neab=neab,
                                final_rounding="rne")
        out[23 + neab] = h.to_fraction(reference_dot(cfg, a, b, c))
    assert out == {23: Fraction(-1, 4), 24: -(Fraction(1, 4) - Fraction(1, 2**13))}
    rep = _never_wrong(tmp_path, MIXED_DEEP)
    tried = {r.probe.id: r.correct for r in rep.results
             if r.probe.file.endswith("two-term-deep.yaml") and r.probe.id not in STICKY_TAIL_TIE}
    assert len(tried) == 6 and min(tried.values()) > 0, tried
    for cov in rep.coverage:
        if cov.feature == "neab" or (cov.feature == "product_normalisation"
                                     and "sticky" not in cov.space):
            assert cov.observable == cov.decided > 0, cov.to_json()


STICKY_GRID = """\
id: e4m3xe5m2-2t-sticky-bfloat16
formats: {in: e4m3, c: bfloat16, out: bfloat16}
k: [2, 4]
fixed: {algorithm: fused, b_format: e5m2, nfma: 1, align_rounding: rz_sticky}
vary:
  neab: [-13, -12, -11, -10, -9, -8, 0, 2]
  final_rounding: [rz, rd, rne, rna]
  product_normalisation: [denormalised, normalised]
---
id: e3m2xe4m3-2t-sticky-bfloat16
formats: {in: e3m2, c: bfloat16, out: bfloat16}
k: [8]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1, align_rounding: rz_sticky}
vary:
  neab: [-13, -12, -11, -10, -9, 0]
  final_rounding: [rz, rd, rne, rna]
"""


def test_sticky_grid_probes_reach_the_proven_bound(tmp_path) -> None:
    # two-term-deep.yaml, neab-2t-sticky-grid-{tail,tie}-sides: e4m3 x e5m2 into bfloat16,
    # P = 2^-9 2^-16 = 2^-25 aligned at 2^-20, u = 2^-33 the output's spacing below P.
    # c = -(u + 2^-40) gives the exact sum's 2^-25 - 2u (0x32fe) under rz from F = 13 and
    # 2^-25 - u (0x32ff) at F = 12, where c is the sticky u alone; under rne c = -(u/2 +
    # 2^-41) is a tie (2^-25, 0x3300) at F = 13 only.  models/observable.py proves F >= 13
    # (rz) and F >= 14 (rne) one unit: the probes read F up to that bound, and without them
    # F is left undecided there.
    e4, e5, bf = get_format("e4m3"), get_format("e5m2"), get_format("bfloat16")
    a, b = [e4.exact_bits(Fraction(1, 2**9))], [e5.exact_bits(Fraction(1, 2**16))]
    out = {}
    for final, c in (("rz", -(Fraction(1, 2**33) + Fraction(1, 2**40))),
                     ("rne", -(Fraction(1, 2**34) + Fraction(1, 2**41)))):
        for f in (12, 13, 14):
            cfg = AccumulatorConfig(in_format="e4m3", b_format="e5m2", c_format="bfloat16",
                                    out_format="bfloat16", k=1, nfma=1, neab=f - 23,
                                    align_rounding="rz_sticky", final_rounding=final)
            out[final, f] = reference_dot(cfg, a, b, bf.exact_bits(c))
            if f == 14:
                bound = 23 + max(alternatives(cfg.replace(neab=40), "neab"))
                assert bound == {"rz": 12, "rne": 13}[final]
    assert out == {("rz", 12): 0x32ff, ("rz", 13): 0x32fe, ("rz", 14): 0x32fe,
                   ("rne", 12): 0x32ff, ("rne", 13): 0x3300, ("rne", 14): 0x32ff}
    rep = _never_wrong(tmp_path, STICKY_GRID)
    tried = {r.probe.id: r.correct for r in rep.results if r.probe.id in STICKY_TAIL_TIE}
    assert len(tried) == 2 and min(tried.values()) > 0, tried
    for cov in rep.coverage:
        if cov.feature == "neab":
            assert cov.observable == cov.decided > 0, cov.to_json()
    _decided_more_with(tmp_path, rep, STICKY_TAIL_TIE)


LATE_SIDES = """\
id: e4m3xe5m2-2t-late-bfloat16
formats: {in: e4m3, c: bfloat16, out: bfloat16}
k: [4, 8]
fixed: {algorithm: fused, b_format: e5m2, nfma: 1, c_placement: late}
vary:
  neab: [-10, -8, -6, -5, -4, 0, 2]
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne]
---
id: e5m2xe4m3-2t-late-binary16
formats: {in: e5m2, c: binary16, out: binary16}
k: [4]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1, c_placement: late}
vary:
  neab: [-9, -7, -6, -5, -4, -3, -2, 0, 2]
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne]
"""


def test_late_accumulator_probes_per_side(tmp_path) -> None:
    # two-term-late-sides.yaml: e4m3 x e5m2 into bfloat16 with c late.  P = -2^-9 x 2^15 =
    # -2^6 aligns at 2^9; two earlier blocks sum A = 2^-3 + 2^(9 - j) (2^8 x 2^-11 and 2^4 x
    # 2^-14 at j = 19), whose tail is kept iff j <= F: F = 19 rounds -(2^6 - 2^-3 - 2^-10)
    # to -(2^6 - 2^-2), F = 18 gives the midpoint, which rne takes to -2^6.  That reaches
    # models/observable.py's bound (F >= 19 correctly rounded), where the ported
    # single-format probes read F >= 16 and leave the F of 19 and beyond undecided.
    e4, e5, bf = get_format("e4m3"), get_format("e5m2"), get_format("bfloat16")
    a = [e4.exact_bits(Fraction(2**8)), e4.exact_bits(Fraction(2**4)),
         e4.exact_bits(Fraction(-1, 2**9))]
    b = [e5.exact_bits(Fraction(1, 2**11)), e5.exact_bits(Fraction(1, 2**14)),
         e5.exact_bits(Fraction(2**15))]
    out = {}
    for f in (18, 19):
        cfg = AccumulatorConfig(in_format="e4m3", b_format="e5m2", c_format="bfloat16",
                                out_format="bfloat16", k=3, nfma=1, neab=f - 23,
                                c_placement="late", final_rounding="rne")
        out[f] = bf.to_fraction(reference_dot(cfg, a, b, bf.exact_bits(Fraction(0))))
        if f == 19:
            assert 23 + max(alternatives(cfg.replace(k=4, neab=40), "neab")) == 18
    assert out == {18: -64, 19: -(64 - Fraction(1, 4))}
    # the normalisation and the alignment rounding of those blocks, read beside the same P,
    # are decided on more configurations with the file than without it
    rep, ids = _file_probes_right(tmp_path, LATE_SIDES, "two-term-late-sides.yaml", 8)
    for cov in rep.coverage:
        if cov.feature == "neab":
            assert cov.observable == cov.decided > 0, cov.to_json()
    _decided_more_with(tmp_path, rep, ids, ("neab", "product_normalisation", "align_rounding"))


FLUSHED_MIXED = """\
id: e3m2xe4m3-late-flushed-binary16
formats: {in: e3m2, c: binary16, out: binary16}
k: [2, 4, 8]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1, c_placement: late}
vary:
  neab: [-10, -4, -2, 0, 2]
  final_rounding: [rz, rd]
  flush: [[inputs], [inputs, products, sums, output]]
---
id: e3m2xe4m3-late-flushed-binary64
formats: {in: e3m2, c: binary64, out: binary64}
k: [4, 8]
fixed: {algorithm: fused, b_format: e4m3, c_placement: late, flush: [inputs]}
vary:
  nfma: [1, 2]
  neab: [-10, -4, 0, 2, 5]
---
id: e3m2xe4m3-late-flushed-binary32
formats: {in: e3m2, c: binary32, out: binary32}
k: [4, 8]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1, c_placement: late, flush: [inputs]}
vary:
  neab: [-1, 0, 1, 2, 3]
"""


def test_mixed_pairs_of_normal_factors_read_units_that_flush_inputs(tmp_path) -> None:
    # mixed-normal.yaml: e3m2 x e4m3 with c late and subnormal inputs flushed.  Into
    # binary32 at K = 4 the earlier blocks hold A = 3 x 28 x 448 = 37632 (u = 2^-8 there);
    # -1.5 x 2^-8 = (1.5 x 2^-2)(2^-6) keeps its tail 2^-9 from F = 24, and rz then gives A
    # - 2^-7, while F = 23 drops it: A - 2^-8.  Into binary16 the first two blocks cancel
    # to 2^-13 (45 - 44 units of 2^-13), which beside -2^4 x 1.75 x 2^8 survives from F =
    # 25, the bound of models/observable.py; without the file F is undecided there.
    e3, e4, f32 = get_format("e3m2"), get_format("e4m3"), get_format("binary32")
    row_a = [e3.exact_bits(28)] * 3 + [e3.exact_bits(Fraction(-3, 8))]
    row_b = [e4.exact_bits(448)] * 3 + [e4.exact_bits(Fraction(1, 64))]
    out = {}
    for f in (23, 24):
        cfg = AccumulatorConfig(in_format="e3m2", b_format="e4m3", c_format="binary32",
                                out_format="binary32", k=4, nfma=1, neab=f - 23,
                                c_placement="late", flush=("inputs",))
        out[f] = f32.to_fraction(reference_dot(cfg, row_a, row_b, 0))
    assert out == {23: 37632 - Fraction(1, 2**8), 24: 37632 - Fraction(1, 2**7)}
    ids = {p.id for p in LIBRARY if p.file.endswith("mixed-normal.yaml")}
    rep = _never_wrong(tmp_path, FLUSHED_MIXED)
    tried = {r.probe.id: r.correct for r in rep.results if r.probe.id in ids}
    assert len(tried) == 5 and min(tried.values()) > 0, tried
    for cov in rep.coverage:
        if cov.feature == "neab" and "binary32" not in cov.space:
            assert cov.observable == cov.decided > 0, cov.to_json()
    _decided_more_with(tmp_path, rep, ids)


SMALL_F_MIXED = """\
id: e3m2xe4m3-small-f
formats: {in: e3m2, c: binary16, out: binary16}
k: [2, 3, 4, 8]
fixed: {algorithm: fused, b_format: e4m3, c_placement: late, nfma: 1}
vary:
  neab: [-20, -18, -14, -12, -8, -5, -3, -1, 1]
  final_rounding: [rz, ru, rd, rne]
  align_rounding: [rz, rne, rd, rz_sticky]
  product_normalisation: [denormalised, normalised]
  flush: [[inputs], []]
---
id: e5m2xe4m3-small-f
formats: {in: e5m2, c: bfloat16, out: bfloat16}
k: [4, 16]
fixed: {algorithm: fused, b_format: e4m3, c_placement: late}
vary:
  nfma: [1, 2]
  neab: [-20, -16, -12, -8, -4, 0]
  final_rounding: [rz, ru, rd]
  align_rounding: [rz, rne, rd]
  product_normalisation: [denormalised, normalised]
  flush: [[inputs], [], [inputs, products, sums, output]]
---
id: e3m2xe4m3-small-f-binary32
formats: {in: e3m2, c: binary32, out: binary32}
k: [2, 4]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1}
vary:
  neab: [-12, 0, 1, 2]
  final_rounding: [rne, rna]
  align_rounding: [rz, rne]
  product_normalisation: [denormalised, normalised]
---
id: e2m3xe2m1-small-f-binary64
formats: {in: e2m3, c: binary64, out: binary64}
k: [4, 8]
fixed: {algorithm: fused, b_format: e2m1, c_placement: late}
vary:
  nfma: [1, 2]
  neab: [-20, -18, -16, -12, -8, 0]
  final_rounding: [rz, rne]
  align_rounding: [rz, rne, rd]
  flush: [[inputs], []]
"""


@pytest.mark.slow
def test_mixed_pairs_at_small_f_never_wrong(tmp_path) -> None:
    # F down to 3 (neab -20), below the shipped spaces (F >= 12): the probes that read F
    # from a scan beside the largest accumulator or product, a cancelled small accumulator,
    # a walked small product or a normalised tie must not misread a scan that starts
    # dropped, a cancellation or a product that does not come out whole, or F = out_t + 1
    # under round-to-nearest-even alignment (five probes did before).
    _never_wrong(tmp_path, SMALL_F_MIXED)


NEAR_TIE_ALIGNMENTS = """\
id: nvfp4-2t-deep-low-f
formats: {in: e2m1, c: bfloat16, out: bfloat16}
k: [16]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16}
vary:
  nfma: [1, 16]
  neab: [-12, -11, -10, -9, -8, -7, -6, -5]
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne]
  product_normalisation: [denormalised, normalised]
---
id: e3m2xe4m3-2t-deep-low-f
formats: {in: e3m2, c: binary16, out: binary16}
k: [4]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1}
vary:
  neab: [-11, -10, -9, -8, -7, -6]
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne]
  product_normalisation: [denormalised, normalised]
"""


CHAIN_TOP = """\
id: e2m3xe2m1-chain-top
formats: {in: e2m3, c: bfloat16, out: bfloat16}
k: [2, 4, 8]
fixed: {algorithm: fused, b_format: e2m1, nfma: 1, c_placement: late}
vary:
  neab: [-16, -15, -14, -10, 0, 2]
  final_rounding: [rz, rne, rd]
---
id: e3m2xe4m3-chain-top
formats: {in: e3m2, c: binary16, out: binary16}
k: [2, 8]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1, c_placement: late}
vary:
  neab: [-10, -6, 0, 2]
  final_rounding: [rz, rne]
"""


def test_chain_top_probes_read_f_beside_the_pairs_top_product(tmp_path) -> None:
    # two-term-chain-top.yaml: beside 1.5 x 2^sa x 1.5 x 2^sb (a binade above the pair's
    # powers of two) the scan and the midpoint tails read one F further: e2m3 x e2m1 into
    # bfloat16 at K = 2 tells F = 8 from 9 (P = 36, last bit 2^-4), which the power-of-two
    # chains stop short of
    rep, ids = _file_probes_right(tmp_path, CHAIN_TOP, "two-term-chain-top.yaml", 2)
    _decided_more_with(tmp_path, rep, ids, ("neab",))


def test_deep_field_ties_under_round_to_nearest_alignment(tmp_path) -> None:
    # where the alignment quantum q is 2^(m + 1) or 2^m (F = f0 - 1, f0), a round-to-
    # nearest-even alignment rounds c = 2^m + tail up, so the tie reads as kept: the deep
    # field's neab probes tell those F by the guards rt, far and near3, and the
    # normalisation probes start at j = 2 (they were wrong on 8 + 4 + 8 NVFP4 configurations
    # into bfloat16 at F = 12 to 17 before)
    rep = _never_wrong(tmp_path, NEAR_TIE_ALIGNMENTS)
    deep = {r.probe.id: r.correct for r in rep.results
            if "2t-deep-near" in r.probe.id and r.probe.feature == "neab"}
    assert min(deep.values()) > 0, deep


def test_scaled_probes_decide_block_scaled_units(tmp_path) -> None:
    # probes with scale factors of their own (scaled.yaml) are never wrong and decide, on
    # GDFS, F, the group size, both roundings, the carry bits and subnormal outputs, and on
    # FDA the subnormal products and sums, which unit scale factors do not reach
    path = tmp_path / "scaled.yaml"
    path.write_text(BLOCK_SCALED)
    rep = run_check(LIBRARY, load_spaces([path]))
    assert not [r.probe.id for r in rep.results if r.failed]
    assert not rep.undecided and not any(c.gaps for c in rep.coverage)
    tried = {r.probe.id: r.correct for r in rep.results
             if r.probe.scaled and r.probe.id not in
             SCALED_LATE + SCALED_CARRY + SCALED_NARROW + SCALED_NORMALISATION + SCALED_C_TIE
             and not r.probe.file.endswith("scaled-two-term.yaml")}  # their own tests
    assert min(tried.values()) > 0, tried
    decided = {c.feature: (c.observable, c.decided) for c in rep.coverage if c.observable}
    for f in ("neab", "nfma", "align_rounding", "final_rounding", "carry_bits",
              "subnormal_products", "subnormal_sums", "subnormal_output"):
        assert decided[f][0] == decided[f][1] > 0, (f, decided[f])


NORMAL_TAILS = ("align-rounding-acc-sides", "align-rounding-top-sides",
                "align-rounding-fdrda-c-sides", "align-rounding-fdrda-c-norm-sides",
                "align-rounding-fdrda-c-even-sides", "product-normalisation-cancel-sides",
                "product-normalisation-cancel-sides-sticky")
F8F6F4_FLUSHED = """\
id: e3m2-e4m3-flushed-inputs
formats: {in: e3m2, c: binary64, out: binary64}
k: [8]
fixed: {b_format: e4m3, algorithm: fused, c_placement: late, flush: [inputs]}
vary:
  nfma: [1, 4]
  neab: [0, 2]
  align_rounding: [rz, rd, rne, rz_sticky]
  product_normalisation: [denormalised, normalised]
---
id: e3m2-e4m3-fdrda
formats: {in: e3m2, c: binary32, out: binary32}
k: [8]
fixed: {b_format: e4m3, algorithm: fdrda}
vary:
  nfma: [4, 8]
  neab: [0, 2]
  align_rounding: [rz, rd, rne, rz_sticky]
  product_normalisation: [denormalised, normalised]
  interleave: [none, even_odd]
  flush: [[], [inputs]]
"""


def test_normal_tail_probes_read_mixed_pairs(tmp_path) -> None:
    # e3m2 x e4m3 (Blackwell f8f6f4): tails of normal factors on a tie reach the pair's
    # grid with subnormal inputs flushed, where the per-side probes built on subnormal
    # factors do not apply; every probe of mixed.yaml that uses them decides somewhere,
    # none is ever wrong, and the alignment rounding is decided on every configuration
    # of blocks after the first with c late into binary64 (one block of normalised
    # products at F = 25 is left: the top product 2^a.emax x b.fmax aligns a binade low)
    _decided_by(tmp_path, F8F6F4_FLUSHED, NORMAL_TAILS, "align_rounding",
                "e3m2-e4m3-flushed-inputs")


SUBNORMAL_SIDES = ("subnormal-output-cancel-late-sides", "subnormal-output-cancel-sides",
                   "subnormal-output-tail-sides")
F6F4_SUBNORMAL_OUTPUT = """\
id: e2m3-e2m1-binary16-flush
formats: {in: e2m3, c: binary16, out: binary16}
k: [4]
fixed: {b_format: e2m1, algorithm: fused}
vary:
  nfma: [1, 4]
  c_placement: [early, late]
  flush: [[inputs], [sums], [output], [inputs, output], [sums, output]]
"""


def test_subnormal_output_sides_read_fp6_fp4_pairs(tmp_path) -> None:
    # e2m3 x e2m1 into binary16: every product is a multiple of 2^-4, far above binary16's
    # subnormals, and neither format's own probe builds the pair's grid; a cancelling pair
    # of normal products (1.125 x 1.5 - 1.625 x 1) or the product of both smallest
    # subnormals beside c = -(2^-4 - 2^-15) leaves the subnormal 2^-15 for the output stage
    _decided_by(tmp_path, F6F4_SUBNORMAL_OUTPUT, SUBNORMAL_SIDES, "subnormal_output",
                "e2m3-e2m1-binary16-flush")


def _late_sticky_spaces() -> str:
    docs = []
    for fin, fb, out in (("e4m3", None, "binary32"), ("e2m1", None, "binary32"),
                         ("e3m2", "e4m3", "binary64"), ("bfloat16", None, "bfloat16")):
        b = f", b_format: {fb}" if fb else ""
        docs.append(f"id: late-sticky-{fin}-{out}\nformats: {{in: {fin}, c: {out}, out: {out}}}\n"
                    f"k: [8]\nfixed: {{algorithm: fused, c_placement: late{b}}}\n"
                    "vary:\n  nfma: [1, 4, 8]\n  neab: [-10, 0, 2]\n"
                    "  align_rounding: [rz_sticky, rne]\n"
                    "  product_normalisation: [denormalised, normalised]\n")
    return "---\n".join(docs)


def test_late_probes_never_wrong_under_a_sticky_bit(tmp_path) -> None:
    # the matrix varies the alignment rounding with c early only; with c late a sticky
    # bit keeps a lone dropped bit half a quantum below F exactly, which once made
    # neab-exact-norm-sides read F = 25 as F >= 26 (e3m2 x e4m3, flushed inputs)
    assert _never_wrong(tmp_path, _late_sticky_spaces()).configurations == 4 * 36


INTERLEAVE_LATE_SIDES = """\
id: e3m2xe4m3-pairs-late
formats: {in: e3m2, c: binary32, out: binary32}
k: [8, 16]
fixed: {algorithm: fused, b_format: e4m3, c_placement: late}
vary:
  nfma: [half]
  neab: [-6, 0, 2]
  interleave: [none, pairs]
  align_rounding: [rz, rd, rne, rz_sticky]
  carry_bits: [null, 1]
---
id: e2m3xe2m1-pairs-late-binary16
formats: {in: e2m3, c: binary16, out: binary16}
k: [8]
fixed: {algorithm: fused, b_format: e2m1, c_placement: late}
vary:
  nfma: [half]
  neab: [-10, 0, 2]
  interleave: [none, pairs]
  final_rounding: [rz, rne, ru, rna]
"""


def test_interleaved_pairs_read_through_the_second_blocks_accumulator(tmp_path) -> None:
    # interleave-wide.yaml, c late.  e3m2 x e4m3 into binary32 at K = 8, F = 25: X = 28 x
    # 448 = 12544 at positions 0 and 1, y = 2^-4 x 2^-9 = 2^-13 at 2, -X at 4 and 5.
    # Interleaved pairs cancel the X in the first group and give y exact; blocks of four
    # meet R = 2X + y (exponent 14, quantum 2^-11) beside -X, -X and drop y.  The product
    # range alone (2^-13 to 2^13.6) is too narrow for interleave-cancel-wide at F = 25.
    e3, e4, b32 = get_format("e3m2"), get_format("e4m3"), get_format("binary32")
    x, y = [e3.exact_bits(Fraction(28)), e4.exact_bits(Fraction(448))], \
        [e3.exact_bits(Fraction(1, 16)), e4.exact_bits(Fraction(1, 512))]
    neg = e3.exact_bits(Fraction(-28))
    a = [x[0], x[0], y[0], 0, neg, neg, 0, 0]
    b = [x[1], x[1], y[1], 0, x[1], x[1], 0, 0]
    got = {}
    for il in ("none", "pairs"):
        cfg = AccumulatorConfig(in_format="e3m2", b_format="e4m3", c_format="binary32",
                                out_format="binary32", k=8, nfma=4, neab=2,
                                c_placement="late", interleave=il)
        got[il] = b32.to_fraction(reference_dot(cfg, a, b, 0))
    assert got == {"none": 0, "pairs": Fraction(1, 2**13)}
    ids = {"interleave-late-acc-sides", "interleave-late-acc3-sides"}
    rep = _decided_by(tmp_path, INTERLEAVE_LATE_SIDES, ids, "interleave",
                      "e3m2xe4m3-pairs-late")
    (cov,) = [c for c in rep.coverage
              if c.feature == "interleave" and c.space == "e2m3xe2m1-pairs-late-binary16"]
    assert cov.observable == cov.decided > 0, cov.to_json()
    _decided_more_with(tmp_path, rep, ids, ("interleave",))


NORMAL_TAIL = """\
id: e3m2xe4m3-flushed-binary64
formats: {in: e3m2, c: binary64, out: binary64}
k: [2, 4]
fixed: {algorithm: fused, b_format: e4m3, flush: [inputs]}
vary:
  nfma: pow2_divisors
  neab: [-4, 0]
  c_placement: [early, late]
  product_normalisation: [denormalised, normalised]
  align_rounding: [rz, rd, rne, rz_sticky]
---
id: e3m2xe4m3-flushed-binary32
formats: {in: e3m2, c: binary32, out: binary32}
k: [4]
fixed: {algorithm: fused, b_format: e4m3, flush: [inputs], c_placement: late}
vary:
  nfma: [1, 2, 4]
  neab: [0, 2]
  final_rounding: [rz, rd]
  product_normalisation: [denormalised, normalised]
  align_rounding: [rz, rne]
"""


def test_a_tail_of_normal_factors_reads_normalisation_and_blocks(tmp_path) -> None:
    # normal-tail.yaml: e3m2 x e4m3 into binary64, inputs flushed, c late, K = 2, F = 23.
    # P = 1.5 x 2^4 x 1.5 x 2^8 = 2.25 x 2^12 and y = 1.25 x 1.125 x 2^-6 = 45 x 2^-11,
    # whose last bit is 2^(12 - F): aligned at E = 12 (denormalised, P in y's block) y is
    # exact; at 13 (normalised, or P passed on by an earlier block as a float) its last bit
    # is dropped.  The probes that put a lone 2^-11 there need a subnormal input.
    e3, e4, b64 = get_format("e3m2"), get_format("e4m3"), get_format("binary64")
    p = [e3.exact_bits(Fraction(24)), e4.exact_bits(Fraction(384))]
    y = [e3.exact_bits(Fraction(5, 4)), e4.exact_bits(Fraction(9, 512))]
    big, small = Fraction(9216), Fraction(45, 2048)
    got = {}
    for nfma, norm in ((2, "denormalised"), (1, "denormalised"), (2, "normalised")):
        cfg = AccumulatorConfig(in_format="e3m2", b_format="e4m3", c_format="binary64",
                                out_format="binary64", k=2, nfma=nfma, neab=0,
                                c_placement="late", flush=("inputs",),
                                product_normalisation=norm)
        got[nfma, norm] = b64.to_fraction(reference_dot(cfg, [p[0], y[0]], [p[1], y[1]], 0))
    assert got == {(2, "denormalised"): big + small, (1, "denormalised"): big + small
                   - Fraction(1, 2048), (2, "normalised"): big + small - Fraction(1, 2048)}
    rep, ids = _file_probes_right(tmp_path, NORMAL_TAIL, "normal-tail.yaml", 5)
    # into binary32 P + y needs F + 2 > 24 bits: -y1 + y2 = -2^(12 - F) beside P shows
    # as the grid point below P under rz and rd (product-normalisation-tail-dir-sides).
    # The block size shows beside P only where products are denormalised.
    for cov in rep.coverage:
        if cov.feature == "product_normalisation":
            assert cov.observable == cov.decided > 0, cov.to_json()
    _decided_more_with(tmp_path, rep, ids, ("nfma", "product_normalisation"))


#: scaled probes for one scale block at F = 35 (GDFS) or 16-bit outputs, which the
#: spaces of BLOCK_SCALED do not hold: test_gdfs_group_size_in_one_scale_block_from_ties
#: and test_scaled_narrow_outputs_read_through_cancellation hold them right
SCALED_NARROW = ("nfma-gdfs-c-tie-odd-scales", "nfma-gdfs-c-tie-fill",
                 "subnormal-output-scaled-c-cancel")
#: the scaled normalisation probes for outputs narrower than F and c beside the products,
#: and their spaces: NVFP4 with c late into 16-bit outputs and 13 fraction bits (one scale
#: block: the cancelled largest product; two: the result below P), c early under flushed
#: input subnormals (a normal c beside a product lifted by its scale factors)
SCALED_NORMALISATION = ("product-normalisation-scaled-one-block-cancel",
                        "product-normalisation-scaled-late-exact",
                        "product-normalisation-c-scaled-down")
NVFP4_NORMALISATION = """\
id: nvfp4-normalisation-late-narrow
formats: {in: e2m1, c: binary16, out: binary16}
k: [16, 32]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: [1, 16]
  neab: [-10, 0, 2]
  final_rounding: [rz, rne]
  product_normalisation: [denormalised, normalised]
---
id: nvfp4-normalisation-late-wide
formats: {in: e2m1, c: binary64, out: binary64}
k: [32]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: [1, 16]
  neab: [0, 2]
  final_rounding: [rz, rne, ru]
  product_normalisation: [denormalised, normalised]
---
id: nvfp4-normalisation-c-flushed
formats: {in: e2m1, c: binary16, out: binary16}
k: [16]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, flush: [inputs]}
vary:
  nfma: [1, 16]
  neab: [0, 2, 3]
  final_rounding: [rz, rd]
  product_normalisation: [denormalised, normalised]
"""


def test_scaled_normalisation_probes_read_narrow_outputs_and_flushed_c(tmp_path) -> None:
    # each probe right where it applies and never wrong; with them the normalisation is
    # decided on more of these configurations than without (before them NVFP4's
    # normalisation had 226 known gaps in the probe matrix)
    rep = _never_wrong(tmp_path, NVFP4_NORMALISATION)
    tried = {r.probe.id: r.correct for r in rep.results if r.probe.id in SCALED_NORMALISATION}
    assert len(tried) == len(SCALED_NORMALISATION) and min(tried.values()) > 0, tried
    _decided_more_with(tmp_path, rep, SCALED_NORMALISATION, ("product_normalisation",))


#: the scaled probes beside a product on a tie of bfloat16 (NVFP4 only)
SCALED_C_TIE = ("align-rounding-scaled-c-tie-deno", "align-rounding-scaled-c-tie-norm",
                "neab-scaled-c-tie-deno", "neab-scaled-c-tie-norm",
                "product-normalisation-scaled-c-tie")
NVFP4_C_TIE = """\
id: nvfp4-c-tie-bfloat16
formats: {in: e2m1, c: bfloat16, out: bfloat16}
k: [16, 32]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16}
vary:
  nfma: [1, 16]
  neab: [0, 3]
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne, rz_sticky]
  product_normalisation: [denormalised, normalised]
  flush: [[], [inputs]]
"""


def test_scaled_c_tie_reads_the_alignment_rounding_into_bfloat16(tmp_path) -> None:
    # NVFP4 into bfloat16 with c early: 1 x 1.5 under scale significands 1.375 x 1.375 is
    # 363/128, a tie of bfloat16, and c = -3q/4, +3q/4, -q/4 beside it read every
    # alignment rounding under a final rounding to nearest (before: a known gap), for
    # either normalisation and with flushed input subnormals (c is normal)
    rep = _decided_by(tmp_path, NVFP4_C_TIE, SCALED_C_TIE, "align_rounding",
                      "nvfp4-c-tie-bfloat16")
    # and, beside the same tie, F (a scan of c = -2^(E - j)) and the normalisation
    _decided_more_with(tmp_path, rep, SCALED_C_TIE, ("align_rounding", "neab",
                                                     "product_normalisation"))


#: the scaled probes that read a carry into the next binade across scale blocks
SCALED_CARRY = ("nfma-walk-scaled-carry", "final-rounding-scaled-carry")
NVFP4_CARRY_ACROSS = """\
id: nvfp4-carry-binary64
formats: {in: e2m1, c: binary64, out: binary64}
k: [32, 64]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: divisors
  neab: [0, 2]
  align_rounding: [rz, rne]
---
id: nvfp4-carry-binary32
formats: {in: e2m1, c: binary32, out: binary32}
k: [32]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: [1, 16, 32]
  neab: [0, 2]
  final_rounding: [rz, rd, ru, rne, rna, ro]
"""


def test_a_carry_across_scale_blocks_reads_block_size_and_final_rounding(tmp_path) -> None:
    # NVFP4 (e2m1, ue4m3 scale factors per 16) with c late, K = 32, F = 23: r = 1 x 1
    # under 2^-4 x 2^-3 at position 0, and 2^16 = 1 x 1 under 2^8 x 2^8 at positions 16
    # and j.  Every partial sum keeps r (aligned at 2^16 at most), and binary64 holds
    # 2^17 + 2^-7; a later block aligns it at 2^17, where r is half the quantum and
    # truncation drops it.  So r survives only where j lies in the last block.
    e2, ue, b32 = get_format("e2m1"), get_format("ue4m3"), get_format("binary32")
    one, b64 = e2.exact_bits(Fraction(1)), get_format("binary64")

    def row(j, first=Fraction(1), second=Fraction(1)):
        a = [e2.zero_bits(0)] * 32
        b = list(a)
        a[0], b[0] = e2.exact_bits(first), e2.exact_bits(second)
        a[16] = b[16] = a[j] = b[j] = one
        small, large = ue.exact_bits(Fraction(1, 16)), ue.exact_bits(Fraction(256))
        return a, b, [small, large], [ue.exact_bits(Fraction(1, 8)), large]

    def out(fmt, j, **kw):
        a, b, sa, sb = row(j, *kw.pop("first", ()))
        cfg = AccumulatorConfig(in_format="e2m1", c_format=fmt.name, out_format=fmt.name,
                                k=32, neab=0, c_placement="late", scale_format="ue4m3",
                                scale_block=16, **kw)
        return fmt.to_fraction(reference_dot(cfg, a, b, fmt.zero_bits(0), scale_a=sa,
                                             scale_b=sb))
    top, r = Fraction(2) ** 17, Fraction(1, 128)
    assert [out(b64, j, nfma=8) for j in (20, 23, 24, 31)] == [top, top, top + r, top + r]
    assert {out(b64, j, nfma=n) for n in (16, 32) for j in (17, 31)} == {top + r}
    # into binary32 the same rows with F = out_t = 23 end on a tie of the output
    # (2^17 + 2^-7, and 2^17 + 3 x 2^-7 with 1.5 x 2 in position 0), whatever the block size
    ties = {mode: [out(b32, 17, nfma=n, final_rounding=mode, **first)
                   for n in (1, 32) for first in ({}, {"first": (Fraction(3, 2), 2)})]
            for mode in ("rz", "rne", "ru")}
    assert ties == {"rz": [top, top + 2 * r] * 2, "rne": [top, top + 4 * r] * 2,
                    "ru": [top + 2 * r, top + 4 * r] * 2}
    rep = _decided_by(tmp_path, NVFP4_CARRY_ACROSS, SCALED_CARRY, "nfma",
                      "nvfp4-carry-binary64", also=(("final_rounding", "nvfp4-carry-binary32"),))
    _decided_more_with(tmp_path, rep, SCALED_CARRY, ("nfma", "final_rounding"))


MX_SUBNORMAL_ACC = """\
id: mxfp4-subnormal-acc
formats: {in: e2m1, c: binary32, out: binary32}
k: [32, 64]
fixed: {algorithm: fused, scale_format: ue8m0, scale_block: 32, c_placement: late}
vary:
  nfma: [1, 16]
  neab: [-10, -1, 0, 1, 3]
  final_rounding: [rz, rd]
---
id: mxfp4-subnormal-acc-rounding
formats: {in: e2m1, c: binary32, out: binary32}
k: [32]
fixed: {algorithm: fused, scale_format: ue8m0, scale_block: 32, c_placement: late}
vary:
  nfma: [1, 16]
  neab: [-10, -1, 0, 2]
  align_rounding: [rd, rne, rz_sticky]
  final_rounding: [rz, rne, ru]
  flush: [[], [sums], [output]]
---
id: mxfp4-subnormal-acc-rne
formats: {in: e2m1, c: binary32, out: binary32}
k: [32]
fixed: {algorithm: fused, scale_format: ue8m0, scale_block: 32, c_placement: late,
        final_rounding: rne}
vary:
  nfma: [1, 16]
  neab: [-10, -1, 0]
---
id: mxfp4-subnormal-acc-grid
formats: {in: e2m1, c: binary32, out: binary32}
k: [32]
fixed: {algorithm: fused, scale_format: ue8m0, scale_block: 32, final_rounding: rz}
vary: {nfma: [1, 16], neab: [0, 2], align_rounding: [rz, rd, rne, rz_sticky],
       c_placement: [early, late]}
"""


def test_a_subnormal_earlier_result_reads_f_at_the_outputs_emin(tmp_path) -> None:
    # MXFP4 (e2m1, ue8m0 scale factors) into binary32 with c late, K = 32, blocks of one
    # product: a subnormal block result enters the next block with the exponent field
    # -126, so that block's quantum is 2^(-126 - F) however small its terms.  x = 2 x 1
    # and -y = -1 x 1 under 2^-149 (2^-74 x 2^-75): y = 2^-149 is kept while F >= 23
    # (x - y = y); with x = 2 x 1 under 2^-150, -2^-150 is kept from F = 24 on (x - y
    # rounds to 0 toward zero), dropped at F = 23 (the output is x).
    e2, e8, b32 = get_format("e2m1"), get_format("ue8m0"), get_format("binary32")

    def out(neab, scale):
        cfg = AccumulatorConfig(in_format="e2m1", c_format="binary32", out_format="binary32",
                                k=32, nfma=1, neab=neab, c_placement="late",
                                scale_format="ue8m0", scale_block=32)
        a = [e2.exact_bits(Fraction(2))] + [e2.zero_bits(0)] * 30 + [e2.exact_bits(-1)]
        b = [e2.exact_bits(Fraction(1))] + [e2.zero_bits(0)] * 30 + [e2.exact_bits(1)]
        half = e8.exact_bits(Fraction(2) ** (scale // 2))
        return b32.to_fraction(reference_dot(cfg, a, b, 0, scale_a=[half], scale_b=[
            e8.exact_bits(Fraction(2) ** (scale - scale // 2))]))
    u = Fraction(2) ** -149
    assert [out(neab, -149) for neab in (-1, 0)] == [2 * u, u]
    assert [out(neab, -150) for neab in (0, 1)] == [u, 0]
    ids = ("neab-scaled-subnormal-acc", "neab-scaled-subnormal-acc-deep",
           "neab-scaled-subnormal-acc-tie", "align-rounding-scaled-subnormal-acc-rz")
    # truncated alignment, final rz or rd: F read up to out_t + 4 = 27 (e2m1's 2^4 is the
    # largest power-of-two product); the other roundings read it up to out_t (rd, rne),
    # and a sticky bit or flushing is left to other probes; under a final rne 2^-149 -
    # 2^-150 is a tie, which reads F = 23 (-tie)
    # (and the alignment rounding there under a final rz: the test below)
    _decided_by(tmp_path, MX_SUBNORMAL_ACC, ids, "neab", "mxfp4-subnormal-acc",
                also=(("neab", "mxfp4-subnormal-acc-rne"),
                      ("align_rounding", "mxfp4-subnormal-acc-grid")))


TOP_GRID = """\
id: e3m2xe4m3-2t-top-grid-binary32
formats: {in: e3m2, c: binary32, out: binary32}
k: [2, 4]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1, neab: 2, final_rounding: rz}
vary:
  align_rounding: [rz, rd, rne, rz_sticky]
  c_placement: [early, late]
  flush: [[], [output]]
---
id: e3m2xe4m3-2t-top-grid-binary16
formats: {in: e3m2, c: binary16, out: binary16}
k: [4, 8]
fixed: {algorithm: fused, b_format: e4m3, c_placement: late, final_rounding: rz}
vary:
  nfma: [1, 2]
  neab: [0, 2]
  align_rounding: [rz, rd, rne, rz_sticky]
---
id: e3m2xe4m3-2t-top-grid-rne
formats: {in: e3m2, c: binary32, out: binary32}
k: [4, 8]
fixed: {algorithm: fused, b_format: e4m3, neab: 2, c_placement: late, final_rounding: rne}
vary:
  nfma: [1, 2]
  align_rounding: [rz, rd, rne, rz_sticky]
"""


def test_two_term_alignment_rounding_read_through_the_outputs_grid(tmp_path) -> None:
    # two-term-top-grid.yaml: e3m2 x e4m3 into binary32 at F = 25, K = 2, c late, final
    # rz.  The first block leaves top = 28 x 448 = 12544 (exponent 13, q = 2^-12, the
    # output's spacing u = 4 q); the second adds -q/2 = -2^-4 x 2^-9, 7 q/2 = 2^-4 x 7 x
    # 2^-9, or (beside -top) +q/2.  Only crossings of the grid show: round-down alignment
    # and a sticky bit take top - q/2 to top - u, round to nearest even takes top + 7q/2
    # to top + u, and a sticky bit alone leaves -top + q/2 inside (-top, -(top - u)).
    e3, e4, f32 = get_format("e3m2"), get_format("e4m3"), get_format("binary32")
    top, u = Fraction(12544), Fraction(1, 2**10)

    def out(align, sign, tail_a, tail_b):
        cfg = AccumulatorConfig(in_format="e3m2", b_format="e4m3", c_format="binary32",
                                out_format="binary32", k=2, nfma=1, neab=2,
                                c_placement="late", align_rounding=align)
        a = [e3.exact_bits(sign * 28), e3.exact_bits(tail_a)]
        return f32.to_fraction(reference_dot(cfg, a, [e4.exact_bits(448),
                                                      e4.exact_bits(tail_b)], 0))
    s = Fraction(1, 16)  # e3m2's smallest subnormal
    rows = {m: (out(m, 1, -s, Fraction(1, 512)), out(m, 1, s, Fraction(7, 512)),
                out(m, -1, s, Fraction(1, 512))) for m in ("rz", "rd", "rne", "rz_sticky")}
    assert rows == {"rz": (top, top, -top), "rd": (top - u, top, -top),
                    "rne": (top, top + u, -top), "rz_sticky": (top - u, top, -(top - u))}
    # into binary16 at F = 23 and 25 (u = 2^13 q and more) only -3q/4 and -q/2 beside
    # top = 2 x 12544 (K >= 4: q/4 = 2^-13 is the pair's grid) tell the four apart
    # under a final rne (K >= 3) the ties lie 2q from the grid: -+5q/2 beside top, and
    # +3q/2 beside top + u, odd, which an earlier block adds (2^-4 x 2^-6): truncation
    # leaves top + u + q, below the tie, round to nearest even aligns onto it
    def rise(align):
        cfg = AccumulatorConfig(in_format="e3m2", b_format="e4m3", c_format="binary32",
                                out_format="binary32", k=3, nfma=1, neab=2,
                                c_placement="late", align_rounding=align,
                                final_rounding="rne")
        a = [e3.exact_bits(x) for x in (28, s, s)]
        b = [e4.exact_bits(x) for x in (448, Fraction(1, 64), Fraction(3, 512))]
        return f32.to_fraction(reference_dot(cfg, a, b, 0))
    assert [rise(m) for m in ("rz", "rne")] == [top + u, top + 2 * u]
    ids = ("align-rounding-2t-top-grid-rz", "align-rounding-2t-top-quarter-rz",
           "align-rounding-2t-top-grid-rne")
    _decided_by(tmp_path, TOP_GRID, ids, "align_rounding", "e3m2xe4m3-2t-top-grid-binary32",
                also=(("align_rounding", "e3m2xe4m3-2t-top-grid-binary16"),
                      ("align_rounding", "e3m2xe4m3-2t-top-grid-rne")))


def _e2m1_first_last(scaling, k, nfma, align, first, last, scales):
    """The binary32 output (F = 25, final rz) of a block-scaled e2m1 unit on a row whose
    products are first = (a, b) at position 0 and last at k - 1, under the scale factors
    scales (one per scale block, the same for a and b)."""
    e2, fs, f32 = get_format("e2m1"), get_format(scaling[0]), get_format("binary32")
    cfg = AccumulatorConfig(in_format="e2m1", c_format="binary32", out_format="binary32",
                            k=k, nfma=nfma, neab=2, align_rounding=align,
                            scale_format=scaling[0], scale_block=scaling[1])
    zero = [e2.zero_bits(0)] * (k - 2)
    a = [e2.exact_bits(first[0])] + zero + [e2.exact_bits(last[0])]
    b = [e2.exact_bits(first[1])] + zero + [e2.exact_bits(last[1])]
    s = [fs.exact_bits(x) for x in scales]
    return f32.to_fraction(reference_dot(cfg, a, b, 0, scale_a=s, scale_b=s))


NVFP4_LATE_GRID = """\
id: nvfp4-late-grid-binary32
formats: {in: e2m1, c: binary32, out: binary32}
k: [32]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, neab: 2, final_rounding: rz}
vary:
  nfma: [1, 16]
  align_rounding: [rz, rd, rne, rz_sticky]
  c_placement: [early, late]
"""


def test_alignment_rounding_across_scale_blocks_read_through_the_outputs_grid(tmp_path):
    # NVFP4 (e2m1, ue4m3 scale factors of 16 products) into binary32 at F = 25, final rz:
    # 1 x 1 under 2^7 x 2^7 in the first scale block gives 2^14, so q = 2^-11 and the
    # output's spacing below 2^14 is 2^-10.  -1.5 x 1 under 2^-6 x 2^-6 in the second,
    # -3q/4, leaves 2^14 under truncation only; round-down alignment gives 2^14 - 2^-11,
    # which the final rz takes to the grid point 2^14 - 2^-10
    three = [_e2m1_first_last(("ue4m3", 16), 32, 16, m, (1, 1), (Fraction(-3, 2), 1),
                              (2**7, Fraction(1, 64))) for m in ("rz", "rd")]
    assert three == [2**14, 2**14 - Fraction(1, 2**10)]
    _decided_by(tmp_path, NVFP4_LATE_GRID, ("align-rounding-scaled-late-grid-rz",),
                "align_rounding", "nvfp4-late-grid-binary32")



def test_alignment_rounding_through_a_subnormal_earlier_result() -> None:
    # MXFP4 into binary32 at F = 25, K = 32 (one pair of scale factors, 2^-76 each):
    # x = 4 x 4 = 2^-148 = 2u in the first block enters the next with the exponent field
    # -126, so its quantum is q = 2^-151 = u/4 however small the product there:
    # -1.5 x 1 = -3q/4 leaves 2u under truncation, u (the grid point below) under
    # round-down alignment
    u = Fraction(1, 2**149)
    three = [_e2m1_first_last(("ue8m0", 32), 32, 1, m, (4, 4), (Fraction(-3, 2), 1),
                              (Fraction(1, 2**76),)) for m in ("rz", "rd")]
    assert three == [2 * u, u]
    # decided on every configuration of mxfp4-subnormal-acc-grid (MX_SUBNORMAL_ACC, with
    # the test above)


LATE_TIE_SIDES = """\
id: e2m1xe3m2-late-tie-binary16
formats: {in: e2m1, c: binary16, out: binary16}
k: [4, 8, 16]
fixed: {algorithm: fused, b_format: e3m2, c_placement: late}
vary:
  nfma: pow2_divisors
  neab: [0, 2]
  final_rounding: [rz, rne]
"""


def test_block_size_walked_beside_the_largest_product_of_a_pair(tmp_path) -> None:
    # e2m1 x e3m2 into binary16 with c late: 6 x 28 = 168 and two products h = 0.5 x 0.125
    # = 2^-4, half the output's ulp at 168.  In one block they add to 168 + 2^-3; across
    # a block boundary each block ends on the tie 168 + 2^-4 and rounds back to 168
    e2, e3, f16 = get_format("e2m1"), get_format("e3m2"), get_format("binary16")

    def row(nfma, j):
        cfg = AccumulatorConfig(in_format="e2m1", b_format="e3m2", c_format="binary16",
                                out_format="binary16", k=8, nfma=nfma, neab=0,
                                c_placement="late")
        a, b = [e2.zero_bits(0)] * 8, [e3.zero_bits(0)] * 8
        a[0], b[0] = e2.exact_bits(6), e3.exact_bits(28)
        for i in (j, j + 1):
            a[i], b[i] = e2.exact_bits(Fraction(1, 2)), e3.exact_bits(Fraction(1, 8))
        return f16.to_fraction(reference_dot(cfg, a, b, 0))
    assert [row(4, j) for j in (2, 3, 4)] == [Fraction(1345, 8), 168, Fraction(1345, 8)]
    _decided_by(tmp_path, LATE_TIE_SIDES, ("nfma-walk-late-tie-sides",), "nfma",
                "e2m1xe3m2-late-tie-binary16")


NORMALISATION_TIE = """\
id: e3m2-13-bit-tie
formats: {in: e3m2, c: binary32, out: binary32}
k: [4, 8]
fixed: {algorithm: fused, neab: -10, out_frac_bits: 13, c_placement: late,
        final_rounding: rne}
vary:
  nfma: [1, 2]
  product_normalisation: [denormalised, normalised]
---
id: e3m2xe4m3-binary32-tie
formats: {in: e3m2, c: binary32, out: binary32}
k: [2, 8]
fixed: {algorithm: fused, b_format: e4m3, neab: 0, nfma: 1, c_placement: late,
        final_rounding: rne}
vary:
  product_normalisation: [denormalised, normalised]
"""


def test_normalisation_read_through_a_tie_at_f_equal_to_out_t(tmp_path) -> None:
    # e3m2 into 13 fraction bits at F = 13 with c late: P = 1.5 x 16 squared = 576 (field
    # 2^8, value 2^9), the output's spacing at P g = 2^-4, and an earlier result T = 3q =
    # 3 x 2^-5.  Denormalised, P + T = P + 3g/2 is a tie to the even P + 2g; normalised,
    # truncation leaves P + 2q = P + g
    e3, f32 = get_format("e3m2"), get_format("binary32")

    def out(norm):
        cfg = AccumulatorConfig(in_format="e3m2", c_format="binary32", out_format="binary32",
                                k=2, nfma=1, neab=-10, out_frac_bits=13, c_placement="late",
                                final_rounding="rne", product_normalisation=norm)
        a = [e3.exact_bits(Fraction(3, 16)), e3.exact_bits(24)]
        b = [e3.exact_bits(Fraction(1, 2)), e3.exact_bits(24)]
        return f32.to_fraction(reference_dot(cfg, a, b, 0))
    assert [out(n) for n in ("denormalised", "normalised")] == [576 + Fraction(1, 8),
                                                                576 + Fraction(1, 16)]
    _decided_by(tmp_path, NORMALISATION_TIE, ("product-normalisation-2t-tie-rne-sides",),
                "product_normalisation", "e3m2-13-bit-tie",
                also=(("product_normalisation", "e3m2xe4m3-binary32-tie"),))


SUBNORMAL_SIDES_F13 = """\
id: binary16xbfloat16-f13-binary32
formats: {in: binary16, c: binary32, out: binary32}
k: [2, 8]
fixed: {algorithm: fused, b_format: bfloat16, neab: -10}
vary:
  nfma: [1, 2]
  final_rounding: [rz, rne, rd, ru, rna, ro]
  c_placement: [early, late]
  align_rounding: [rz, rne]
"""


def test_final_rounding_on_the_subnormal_grid_of_a_mixed_pair(tmp_path) -> None:
    # binary16 x bfloat16 into binary32 at F = 13: every block result of normal-range
    # products fits binary32, so the final rounding shows only on binary32's subnormal
    # grid u = 2^-149.  3 x 2^-24 (a binary16 subnormal) x 2^-126 = 1.5u is aligned at its
    # exponent fields -14 - 126 = -140, kept whole at F = 13, and rounds once: to u under
    # rz, to 2u under rne (the even neighbour); 5 x 2^-24 x 2^-126 = 2.5u to 2u and 3u
    f16, bf16, f32 = get_format("binary16"), get_format("bfloat16"), get_format("binary32")

    def out(rounding, sig):
        cfg = AccumulatorConfig(in_format="binary16", b_format="bfloat16", k=2, nfma=1,
                                neab=-10, final_rounding=rounding)
        a = [f16.zero_bits(0), f16.exact_bits(Fraction(sig, 2 ** 24))]
        b = [bf16.zero_bits(0), bf16.exact_bits(Fraction(2) ** -126)]
        return f32.to_fraction(reference_dot(cfg, a, b, 0)) * 2 ** 149
    assert [out(r, 3) for r in ("rz", "rne", "ru")] == [1, 2, 2]
    assert [out(r, 5) for r in ("rz", "rne", "ru", "rna")] == [2, 2, 3, 3]
    _decided_by(tmp_path, SUBNORMAL_SIDES_F13, ("final-rounding-subnormal-sides",),
                "final_rounding", "binary16xbfloat16-f13-binary32")


TOP_TIE_SIDES = """\
id: e2m3xe2m1-k2-bfloat16
formats: {in: e2m3, c: bfloat16, out: bfloat16}
k: [2]
fixed: {algorithm: fused, b_format: e2m1, c_placement: late}
vary:
  nfma: [1, 2]
  neab: [-10, 0]
  final_rounding: [rz, rne, rd, ru, rna, ro]
  align_rounding: [rz, rne]
---
id: e2m3xe2m1-k4-binary16
formats: {in: e2m3, c: binary16, out: binary16}
k: [4]
fixed: {algorithm: fused, b_format: e2m1, c_placement: late}
vary:
  nfma: [1, 2, 4]
  neab: [-10, 0]
  final_rounding: [rz, rne, rd, ru, rna, ro]
"""


def test_final_rounding_on_a_tie_beside_the_top_products_of_a_mixed_pair(tmp_path) -> None:
    # e2m3 x e2m1 (Blackwell f8f6f4): the largest product 7.5 x 6 = 45 = 101101b beside
    # 0.75 x 0.5 = 0.375 is 101101.011b, a tie of bfloat16's grid (spacing 1/4 from 32)
    # whose lower neighbour 45.25 is odd: rz keeps it, rne goes to 45.5; beside
    # 0.25 x 0.5 = 0.125 the lower neighbour 45 is even, which rne keeps and round-to-odd
    # leaves.  At K = 4 into binary16 three of them, 135, sit on a grid of spacing 1/8:
    # 135 + 0.1875 rounds to 135.125 or 135.25, 135 + 0.0625 to 135 or 135.125.
    e2m3, e2m1 = get_format("e2m3"), get_format("e2m1")

    def out(fout, k, rounding, small):
        cfg = AccumulatorConfig(in_format="e2m3", b_format="e2m1", k=k, nfma=1, neab=-10,
                                c_format=fout, out_format=fout, c_placement="late",
                                final_rounding=rounding)
        # k - 1 top products 7.5 x 6, then the small one
        a = [e2m3.exact_bits(Fraction(15, 2))] * (k - 1) + [e2m3.exact_bits(small)]
        b = [e2m1.exact_bits(6)] * (k - 1) + [e2m1.exact_bits(Fraction(1, 2))]
        return get_format(fout).to_fraction(reference_dot(cfg, a, b, 0))
    q = Fraction(1, 4)
    assert [out("bfloat16", 2, r, Fraction(3, 4)) for r in ("rz", "rne")] == [45 + q, 45 + 2 * q]
    assert [out("bfloat16", 2, r, Fraction(1, 4)) for r in ("rne", "ro")] == [45, 45 + q]
    e = Fraction(1, 8)
    assert [out("binary16", 4, r, Fraction(3, 8)) for r in ("rz", "rne")] == [135 + e, 135 + 2 * e]
    assert [out("binary16", 4, r, Fraction(1, 8)) for r in ("rne", "ro")] == [135, 135 + e]
    _decided_by(tmp_path, TOP_TIE_SIDES, ("final-rounding-top-tie-sides",), "final_rounding",
                "e2m3xe2m1-k2-bfloat16", also=(("final_rounding", "e2m3xe2m1-k4-binary16"),))


def _dot(fa: str, fb: str, fout: str, k: int, av, bv, c=0, **cfg) -> Fraction:
    """The output's value for a in fa, b in fb, c and the output in fout (k products, the
    rest +0), by the reference and the model alike (tests/helpers.py)."""
    return value_of(AccumulatorConfig(in_format=fa, b_format=None if fb == fa else fb, k=k,
                                      c_format=fout, out_format=fout, **cfg), av, bv, c)


TIE_BOTH = """\
id: e2m1-2t-binary16-f23
formats: {in: e2m1, c: binary16, out: binary16}
k: [4]
fixed: {algorithm: fused, nfma: 1, neab: 0, c_placement: early}
vary:
  final_rounding: [rne, rna]
  align_rounding: [rz, rd, rne, rz_sticky]
---
# under ru round-down alignment stays undecided against round-to-nearest (both land c =
# -(2h - q/2) on the grid point P - 2h, and the quarter-quantum tails that split them lie
# below binary16's smallest subnormal): a known gap
id: e2m1-2t-binary16-f23-ru
formats: {in: e2m1, c: binary16, out: binary16}
k: [4]
fixed: {algorithm: fused, nfma: 1, neab: 0, c_placement: early, final_rounding: ru}
vary:
  align_rounding: [rz, rne, rz_sticky]
"""


def test_half_quantum_ties_beside_the_smallest_subnormal_product(tmp_path) -> None:
    # e2m1 into binary16 at F = 23: 0.5 x 0.5 = 0.25 has exponent field 0, two binades above
    # its value, so the quantum is 2^-23; c = -(2^-14 + 2^-24) puts the sum a half quantum
    # below the midpoint 0.25 - 2^-14, which truncation drops (the tie goes to the even 0.25)
    # and round-down alignment floors (0.25 - 2^-13)
    def out(align, rounding="rne", c=-(Fraction(1, 2**14) + Fraction(1, 2**24))):
        return _dot("e2m1", "e2m1", "binary16", 4, [0.5], [0.5], c, nfma=1, neab=0,
                    align_rounding=align, final_rounding=rounding)
    assert [out(r) for r in ("rz", "rne", "rd", "rz_sticky")] == [
        Fraction(1, 4), Fraction(1, 4), Fraction(2047, 8192), Fraction(2047, 8192)]
    # under rna, c = 2^-13 - 2^-24 lies below the midpoint 0.25 + 2^-13: only a
    # round-to-nearest alignment lifts it to the tie, which rna takes away
    near = Fraction(1, 2**13) - Fraction(1, 2**24)
    assert [out(r, "rna", near) for r in ("rz", "rne")] == [Fraction(1, 4),
                                                            Fraction(1, 4) + Fraction(1, 2**12)]
    _decided_by(tmp_path, TIE_BOTH, ("align-rounding-2t-subnormal-near-tie-both",
                                     "align-rounding-2t-subnormal-ru-tie-both",
                                     "align-rounding-2t-subnormal-rna-tie-both"),
                "align_rounding", "e2m1-2t-binary16-f23",
                also=(("align_rounding", "e2m1-2t-binary16-f23-ru"),))


LATE_TIES = """\
id: e3m2-late-binary16
formats: {in: e3m2, c: binary16, out: binary16}
k: [4]
fixed: {algorithm: fused, nfma: 1, c_placement: late, final_rounding: rne}
vary:
  neab: [-8, 0, 2]
  align_rounding: [rz, rd, rne]
---
id: e3m2xe4m3-late-binary32
formats: {in: e3m2, c: binary32, out: binary32}
k: [4]
fixed: {algorithm: fused, b_format: e4m3, nfma: 1, neab: 0, c_placement: late,
        final_rounding: rne}
vary:
  align_rounding: [rz, rd, rne]
---
id: e2m1xe3m2-late-binary16
formats: {in: e2m1, c: binary16, out: binary16}
k: [4]
fixed: {algorithm: fused, b_format: e3m2, c_placement: late, final_rounding: rne}
vary:
  nfma: [1, 2]
  neab: [0, 2]
  align_rounding: [rz, rd]
"""


def test_late_two_term_f_read_through_ties_the_products_build(tmp_path) -> None:
    # c late, blocks of one product (rne): e3m2 into binary16, 0.25 + 2^-8 summed by two
    # blocks beside 784 = 28 x 28: the tail 2^-8 breaks the tie 784.25 only while F >= 16
    def e3m2(neab):
        return _dot("e3m2", "e3m2", "binary16", 4, [0.5, 0.0625, 28], [0.5, 0.0625, 28],
                    nfma=1, neab=neab, c_placement="late", final_rounding="rne")
    assert [e3m2(n) for n in (-8, -7, 0)] == [784, Fraction(1569, 2), Fraction(1569, 2)]
    # e3m2 x e4m3 into binary32: 2^12 + 2^-11 (odd) and then 2^-12, a tie kept from F = 24
    def pair(neab):
        return _dot("e3m2", "e4m3", "binary32", 4, [16, 2**-3, 2**-4], [256, 2**-8, 2**-8],
                    nfma=1, neab=neab, c_placement="late", final_rounding="rne")
    assert [pair(n) for n in (-1, 0, 1)] == [4096, 4096 + Fraction(1, 2**11),
                                             4096 + Fraction(1, 2**10)]
    # e2m1 x e3m2 into binary16: twice 6 x 28 = 336, then 0.5 x 0.3125 = 2^-3 + 2^-5, a tie
    # above 336 plus a tail kept from F = 13
    def top(neab):
        return _dot("e2m1", "e3m2", "binary16", 4, [6, 6, 0.5], [28, 28, 0.3125],
                    nfma=1, neab=neab, c_placement="late", final_rounding="rne")
    assert [top(n) for n in (-11, -10)] == [336, 336 + Fraction(1, 4)]
    _decided_by(tmp_path, LATE_TIES, ("neab-2t-late-acc-rne", "neab-2t-late-output-tie-sides",
                                      "neab-2t-top-sum-tie-b"),
                "neab", "e3m2-late-binary16",
                also=(("neab", "e3m2xe4m3-late-binary32"), ("neab", "e2m1xe3m2-late-binary16")))


TAILS_AND_STICKY = """\
id: e3m2xe4m3-blocks-late-bfloat16
formats: {in: e3m2, c: bfloat16, out: bfloat16}
k: [4]
fixed: {algorithm: fused, b_format: e4m3, nfma: 2, neab: 0, c_placement: late,
        final_rounding: rne}
vary:
  align_rounding: [rz, rd, rne, rz_sticky]
---
id: e3m2-top-tail-binary32
formats: {in: e3m2, c: binary32, out: binary32}
k: [4]
fixed: {algorithm: fused, nfma: 1, neab: -10, c_placement: late}
vary:
  final_rounding: [rz, rne]
  align_rounding: [rz, rd, rne, rz_sticky]
---
id: e2m1-sticky-binary32
formats: {in: e2m1, c: binary32, out: binary32}
k: [4]
fixed: {algorithm: fused, nfma: 1, neab: 2, align_rounding: rz_sticky, final_rounding: rne}
vary:
  product_normalisation: [denormalised, normalised]
"""


def test_alignment_rounding_and_normalisation_from_product_tails(tmp_path) -> None:
    # e3m2 x e4m3 into bfloat16, blocks of two (c late, rne, F = 23): 2^12 + 2^5 (odd), then
    # 2^4 (the tie) and -2^-12 (half the quantum 2^-11): truncation leaves the tie, which
    # goes to the even 2^12 + 2^6; round-down alignment falls below it
    def blocks(align):
        return _dot("e3m2", "e4m3", "bfloat16", 4, [16, 2, 1, -0.125], [256, 16, 16, 2**-9],
                    nfma=2, neab=0, c_placement="late", final_rounding="rne",
                    align_rounding=align)
    assert [blocks(r) for r in ("rz", "rd")] == [4096 + 64, 4096 + 32]
    # e3m2 into binary32 at F = 13 (c late): 256 beside -3 x 2^-7, three quarters of the
    # quantum 2^-5, which the output holds whatever the alignment leaves of it
    def tail(align):
        return _dot("e3m2", "e3m2", "binary32", 4, [16, -0.1875], [16, 0.125], nfma=1,
                    neab=-10, c_placement="late", align_rounding=align)
    assert [tail(r) for r in ("rz", "rd", "rne", "rz_sticky")] == [
        256, 256 - Fraction(1, 32), 256 - Fraction(1, 32), 256 - Fraction(1, 64)]
    # e2m1 into binary32 at F = 25 with a sticky bit: -1 = -2 x 0.5 is aligned at exponent 1
    # when denormalised, so c = 3 x 2^-26 becomes the sticky half 2^-25: the midpoint, to -1
    def sticky(norm):
        return _dot("e2m1", "e2m1", "binary32", 4, [-2], [0.5], Fraction(3, 2**26), nfma=1,
                    neab=2, align_rounding="rz_sticky", final_rounding="rne",
                    product_normalisation=norm)
    assert [sticky(n) for n in ("denormalised", "normalised")] == [-1, -1 + Fraction(1, 2**24)]
    _decided_by(tmp_path, TAILS_AND_STICKY, ("align-rounding-late-blocks-tie-sides",
                                             "align-rounding-top-tail",
                                             "product-normalisation-sticky-subnormal-tie"),
                "align_rounding", "e3m2xe4m3-blocks-late-bfloat16",
                also=(("align_rounding", "e3m2-top-tail-binary32"),
                      ("product_normalisation", "e2m1-sticky-binary32")))


GDFS_ONE_BLOCK = """\
id: nvfp4-gdfs-one-block
formats: {in: e2m1, c: binary32, out: binary32}
k: [16]
fixed: {algorithm: gdfs, neab: 12, scale_format: ue4m3, scale_block: 16}
vary:
  nfma: [1, 2, 4, 8, 16]
  final_rounding: [rne, rna]
  align_rounding: [rz, rne, rz_sticky]
---
id: mxfp4-gdfs-one-block
formats: {in: e2m1, c: binary32, out: binary32}
k: [32]
fixed: {algorithm: gdfs, neab: 12, scale_format: ue8m0, scale_block: 32}
vary:
  nfma: [1, 16, 32]
  final_rounding: [rne, rna]
  align_rounding: [rz, rne, rz_sticky]
---
id: mxfp6-gdfs-one-block
formats: {in: e3m2, c: binary32, out: binary32}
k: [32]
fixed: {algorithm: gdfs, neab: 12, final_rounding: rne, scale_format: ue8m0, scale_block: 32}
vary:
  nfma: [1, 4, 32]
  align_rounding: [rz, rne, rz_sticky]
"""


def test_gdfs_group_size_in_one_scale_block_from_ties(tmp_path) -> None:
    # NVFP4 at K = 16 into binary32 at F = 35, groups of 8: c = -2^31 sets the quantum
    # 2^-4; under scale factors 1.25 x 1.25 the walk 0.75, 0.25 (18.75 q, 6.25 q) and the
    # products 6 x 6 + 2 x 2 (1000 q) sum to 1025 q in one group, just above the midpoint
    # 64 of the spacing 128 below 2^31, and truncated group by group (positions 0 and 8)
    # to the midpoint itself, which goes to the even -2^31
    def plus(n, align="rz"):
        a = [1.5] + [0] * 13 + [2, 6]
        b = [0.5] + [0] * 13 + [2, 6]
        a[n], b[n] = 0.5, 0.5
        cfg = AccumulatorConfig(in_format="e2m1", k=16, algorithm="gdfs", nfma=8, neab=12,
                                final_rounding="rne", align_rounding=align,
                                scale_format="ue4m3", scale_block=16)
        return value_of(cfg, a, b, -2**31, sa=[1.25], sb=[1.25])
    assert [plus(4), plus(8)] == [-2**31 + 128, -2**31]
    # under 1.75 x 1.75, 0.75 and -0.25 (36.75 q, -12.25 q) beside 2 x 6 x 6 + 2 x 4 x 4
    # (5096 q): 5120.5 q in one group, rounded to the tie 5120 q (320, to the even 256)
    # and 5121 q group by group (to 384)
    def minus(n):
        a = [1.5] + [0] * 11 + [4, 4, 6, 6]
        b = [0.5] + [0] * 11 + [4, 4, 6, 6]
        a[n], b[n] = -0.5, 0.5
        cfg = AccumulatorConfig(in_format="e2m1", k=16, algorithm="gdfs", nfma=8, neab=12,
                                final_rounding="rne", align_rounding="rne",
                                scale_format="ue4m3", scale_block=16)
        return value_of(cfg, a, b, -2**31, sa=[1.75], sb=[1.75])
    assert [minus(4), minus(8)] == [-2**31 + 256, -2**31 + 384]
    # MXFP4 at K = 32 (no scale significands): 28 products 6 x 6 and 2 x 4 + 2 x 4 sum the
    # midpoint 1024 below c = -2^35 (spacing 2^11), where groups of 16 truncate the walk
    # 0.75, 0.25 at positions 0 and 16 onto it (to the even -2^35) against 1025 in one
    def fill(n):
        a, b = [1.5] + [6] * 29 + [2, 2], [0.5] + [6] * 29 + [4, 4]
        a[n], b[n] = 0.5, 0.5
        cfg = AccumulatorConfig(in_format="e2m1", k=32, algorithm="gdfs", nfma=16, neab=12,
                                final_rounding="rne", scale_format="ue8m0", scale_block=32)
        return value_of(cfg, a, b, -2**35)
    assert [fill(8), fill(16)] == [-2**35 + 2**11, -2**35]
    _decided_by(tmp_path, GDFS_ONE_BLOCK, ("nfma-gdfs-c-tie-odd-scales", "nfma-gdfs-c-tie-deep",
                                           "nfma-gdfs-c-tie-fill"),
                "nfma", "nvfp4-gdfs-one-block", also=(("nfma", "mxfp4-gdfs-one-block"),
                                                      ("nfma", "mxfp6-gdfs-one-block")))


NVFP4_NARROW = """\
id: nvfp4-narrow-outputs
formats: {in: e2m1, c: binary16, out: binary16}
k: [16, 32]
fixed: {algorithm: fused, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  nfma: [8, 16]
  neab: [-18, -14, -12, 2]
---
id: nvfp4-narrow-outputs-flushed
formats: {in: e2m1, c: binary16, out: binary16}
k: [16]
fixed: {algorithm: fused, neab: 2, scale_format: ue4m3, scale_block: 16}
vary:
  nfma: [1, 16]
  c_placement: [early, late]
  flush: [[inputs], [inputs, products, sums, output]]
---
id: nvfp4-narrow-outputs-bfloat16
formats: {in: e2m1, c: bfloat16, out: bfloat16}
k: [16]
fixed: {algorithm: fused, nfma: 16, scale_format: ue4m3, scale_block: 16, c_placement: late}
vary:
  neab: [-18, -14, -12, 2]
  align_rounding: [rz, rne]
"""


def test_scaled_narrow_outputs_read_through_cancellation(tmp_path) -> None:
    # NVFP4 into binary16, one block: 6 x 6 - 6 x 6 under scale factors 1.875 x 1.875 set
    # the alignment exponent 4 and cancel; 1.5 x 1.5 x 225/64 = 2025/256 beside them keeps
    # its last bit 2^-8, 12 binades below, from F = 12 on (truncated to 2024/256 at F = 11)
    def tail(neab):
        cfg = AccumulatorConfig(in_format="e2m1", k=16, nfma=16, neab=neab, c_format="binary16",
                                out_format="binary16", c_placement="late",
                                scale_format="ue4m3", scale_block=16)
        return value_of(cfg, [0] * 13 + [6, -6, 1.5], [0] * 13 + [6, 6, 1.5], 0,
                        sa=[1.875], sb=[1.875])
    assert [tail(-12), tail(-11)] == [Fraction(2024, 256), Fraction(2025, 256)]
    # normal inputs and scale factors, flushed subnormal inputs: 1.5 x 1.5 x (1.875 x 2^-6)^2
    # = 2025 x 2^-20 beside c = -2^-9 leaves -23 x 2^-20, below binary16's 2^-14, or 0
    def cancel(flush):
        cfg = AccumulatorConfig(in_format="e2m1", k=16, nfma=16, c_format="binary16",
                                out_format="binary16", flush=flush, scale_format="ue4m3",
                                scale_block=16)
        return value_of(cfg, [1.5], [1.5], -Fraction(1, 2**9), sa=[Fraction(15, 2**9)],
                        sb=[Fraction(15, 2**9)])
    assert [cancel(("inputs",)), cancel(("inputs", "output"))] == [Fraction(-23, 2**20), 0]
    _decided_by(tmp_path, NVFP4_NARROW, ("neab-scaled-one-block-cancel",
                                         "neab-scaled-one-block-cancel-subnormal",
                                         "subnormal-output-scaled-c-cancel",
                                         "subnormal-sums-scaled"),
                "neab", "nvfp4-narrow-outputs-bfloat16",
                also=(("subnormal_output", "nvfp4-narrow-outputs-flushed"),
                      ("subnormal_sums", "nvfp4-narrow-outputs")))


#: wide inputs into 16-bit outputs, one product per block beside c, alignment with a sticky bit
STICKY_WIDE = ("neab-cancel-c-sticky-tail", "neab-cancel-c-sticky-cross",
               "product-normalisation-sticky-wide", "product-normalisation-sticky-wide-near")
WIDE_STICKY = """\
id: binary64-sticky-binary16
formats: {in: binary64, c: binary16, out: binary16}
k: [2, 8]
fixed: {algorithm: fused, nfma: 1, align_rounding: rz_sticky, c_placement: early}
vary:
  neab: [-4, 0, 1, 2, 5]
  final_rounding: [rz, rne, rd]
  product_normalisation: [normalised, denormalised]
---
id: binary32-sticky-binary16
formats: {in: binary32, c: binary16, out: binary16}
k: [2]
fixed: {algorithm: fused, nfma: 1, align_rounding: rz_sticky, c_placement: early}
vary:
  neab: [-2, -1, 0, 1, 2, 3]
  final_rounding: [rz, rne]
---
id: binary32-sticky-bfloat16
formats: {in: binary32, c: bfloat16, out: bfloat16}
k: [4]
fixed: {algorithm: fused, nfma: 1, align_rounding: rz_sticky, c_placement: early}
vary:
  neab: [-4, 0]
  final_rounding: [rz, rne]
  product_normalisation: [normalised, denormalised]
"""


def test_sticky_probes_read_wide_products_into_narrow_outputs(tmp_path) -> None:
    # a binary64 product cancelled by c leaves its low bits to the sticky bit, which the
    # output shows as an ulp (F = 23 from 25 into binary16, the tail scan; binary32 through
    # the cross term of (1 + 2^-23)(1 + 2^-m), inconclusive only at F = 22); with F known,
    # (2 - 2^-F) x 1.5 beside c = 2^(E - F) reaches an output value only when the product
    # is aligned a binade up (normalised)
    _decided_by(tmp_path, WIDE_STICKY, STICKY_WIDE, "neab", "binary64-sticky-binary16",
                also=(("neab", "binary32-sticky-binary16"),
                      ("product_normalisation", "binary64-sticky-binary16"),
                      ("product_normalisation", "binary32-sticky-bfloat16")))


STICKY_SPLIT = """\
id: binary32-sticky-split-binary16
formats: {in: binary32, c: binary16, out: binary16}
k: [2, 4]
fixed: {algorithm: fused, nfma: 1, align_rounding: rz_sticky, c_placement: early}
vary:
  neab: [1, 2, 3]
  final_rounding: [rz, rne, rd, rna]
  product_normalisation: [normalised, denormalised]
"""


def test_sticky_split_products_read_the_normalisation_beyond_the_input_precision(
        tmp_path) -> None:
    # binary32 into binary16 at F = 25 > in.t: 1.5 (1 + 2^-m + 2^-j) x 2 (1 - 2^-j) leaves
    # 1.5 q (1 + 2^(m - j)) below an output value (m = 9, rz) or a midpoint (m = 10, rne),
    # which the sticky bit of the normalised quantum 2q fills exactly
    rep = _decided_by(tmp_path, STICKY_SPLIT, ("product-normalisation-sticky-split",
                                               "product-normalisation-sticky-split-near"),
                      "product_normalisation", "binary32-sticky-split-binary16")
    tried = {r.probe.id: r.tried for r in rep.results}
    assert tried["product-normalisation-sticky-split"] >= 16  # F = 24..26, rz and rd


WIDE_K2 = """\
id: binary64-k2-binary16
formats: {in: binary64, c: binary16, out: binary16}
k: [2]
fixed: {algorithm: fused, c_placement: late}
vary:
  nfma: [1, 2]
  neab: [-8, 0, 2]
  final_rounding: [rz, rne, ru, rna]
---
id: binary32-k2-bfloat16
formats: {in: binary32, c: bfloat16, out: bfloat16}
k: [2]
fixed: {algorithm: fused}
vary:
  nfma: [1, 2]
  neab: [-14, 0, 2]
  c_placement: [early, late]
  final_rounding: [rz, rne]
"""


def test_wide_products_tell_one_block_from_two_at_k2(tmp_path) -> None:
    # 2^E (1 + 2^-(out_t + 2)) - 2^E: one block keeps the quarter ulp, a block of the first
    # product alone rounds it away (binary64 into binary16 with c late under rne, which the
    # order-swap probes leave open)
    _decided_by(tmp_path, WIDE_K2, ("nfma-pair-wide-cancel",), "nfma", "binary64-k2-binary16",
                also=(("nfma", "binary32-k2-bfloat16"),))


FP8_K2_WIDE = """\
id: e4m3-k2-binary64
formats: {in: e4m3, c: binary64, out: binary64}
k: [2]
fixed: {algorithm: fused, c_placement: late}
vary:
  nfma: [1, 2]
  neab: [-10, 0, 2]
  final_rounding: [rne, rna, ru]
  align_rounding: [rz, rne, rd, rz_sticky]
"""


def test_pair_scan_reads_f_where_the_output_holds_the_difference(tmp_path) -> None:
    # 2^16 - 2^(16 - j) from two e4m3 products: binary64 holds it exactly whatever the final
    # rounding, so the first j that leaves it is F + 1 (neab-pair-dn reads only rz and rd)
    rep = _never_wrong(tmp_path, FP8_K2_WIDE)
    (res,) = [r for r in rep.results if r.probe.id == "neab-pair-dn-exact"]
    # every configuration but the sticky ones: nfma x neab x final x three alignments
    assert res.tried == res.correct == 2 * 3 * 3 * 3, (res.tried, res.correct)
    _decided_more_with(tmp_path, rep, ("neab-pair-dn-exact",), ("neab",))
