"""Probe language, schema, checker, authentication ([KM25] Sec. V-A) and presets."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import SchemaError
from mmaprobe.models.presets import list_presets
from mmaprobe.models.space import CandidateSpace
from mmaprobe.probes import expr as ex
from mmaprobe.probes.checker import _batch, run_check
from mmaprobe.probes.library import library_files, load_probes, load_text, suite_probes
from mmaprobe.probes.probe import InstantiationError
from mmaprobe.vectors.cli import main

ENV = {"in.ulp": Fraction(1, 1024), "k": Fraction(16)}


def test_evaluator_exact() -> None:
    assert ex.evaluate("1 + in.ulp / 2", ENV) == Fraction(2049, 2048)
    assert ex.evaluate("2^-3^2", ENV) == Fraction(1, 512)  # right associative
    assert ex.evaluate("-2^2", ENV) == -4
    assert ex.evaluate("0.75 * k", ENV) == 12
    assert ex.evaluate("k == 16 and not k < 4", ENV) is True
    assert ex.evaluate("floor(7/2) + log2(1/8)", ENV) == 0


@pytest.mark.parametrize("text, msg", [
    ("__import__('os')", "unexpected character"),
    ("open(1)", "unknown function"),
    ("x + 1", "unknown name 'x'"),
    ("2^100000", "exponent"),
    ("2^2^2^2^2^2", "exponent"),
    ("1/0", "division by zero"),
    ("0^-1", "division by zero"),
    ("(" * 60 + "1" + ")" * 60, "nested deeper"),
    ("-" * 60 + "1", "nested deeper"),
    ("1+" * 300 + "1", "longer than"),
    ("1 < 2 < 3", "chained"),
    ("k.__class__", "unknown name"),
    ("", "empty"),
    ("3^(1/2)", "not an integer"),
])
def test_evaluator_rejects_hostile(text: str, msg: str) -> None:
    with pytest.raises(ex.ExprError, match=msg):
        ex.evaluate(text, ENV)


def test_schema_errors_name_file_line_field() -> None:
    text = "id: bad\ntitle: t\nfeature: nfma\nsource: s\nvectors:\n  - {a: {0: 'zz'}}\n" \
           "decide:\n  - otherwise: inconclusive\n"
    with pytest.raises(SchemaError, match=r"bad.yaml:6: vectors.0.a.0: unknown name 'zz'"):
        load_text(text, "bad.yaml")
    with pytest.raises(SchemaError, match=r"x.yaml:3: feature: expected a feature"):
        load_text("id: a\ntitle: t\nfeature: colour\nsource: s\nvectors: []\ndecide: []\n",
                  "x.yaml")
    with pytest.raises(SchemaError, match=r"y.yaml:1: .*malformed YAML|y.yaml:2"):
        load_text("id: [\n", "y.yaml")
    with pytest.raises(SchemaError, match="anchors/aliases"):
        load_text("a: &x [1]\nb: *x\n", "z.yaml")


def test_unrepresentable_value_names_probe_format_term() -> None:
    (p,) = load_text("id: rep\ntitle: t\nfeature: nfma\nsource: s\n"
                     "vectors:\n  - {name: v, a: {0: '1 + 2^-10'}, b: {0: 1}}\n"
                     "decide:\n  - otherwise: inconclusive\n", "r.yaml")
    p.instantiate("binary16", "binary32", "binary32", 4)
    with pytest.raises(InstantiationError, match=r"probe rep.*format e4m3, vector v a\[0\]"):
        p.instantiate("e4m3", "binary32", "binary32", 4)


def test_probe_written_per_side() -> None:
    # a.* and b.* are a's and b's own constants; b's values are written in b's format
    text = ("id: sides\ntitle: t\nfeature: neab\nsource: s\napplies_if: 'b.p <= 4'\n"
            "let: {v: a.smin * b.smin}\n"
            "vectors:\n  - {name: v, a: {0: a.smin, 1: in.fmin}, b: {0: b.smin, 1: 1}}\n"
            "decide:\n  - {if: 'v == 0', then: 0}\n  - otherwise: inconclusive\n")
    (p,) = load_text(text, "s.yaml")
    assert p.per_side
    (q,) = load_text(text.replace("a.smin", "in.smin").replace("b.smin", "in.smin")
                     .replace("b.p", "in.p"), "s.yaml")
    assert not q.per_side
    (n,) = load_text(text.replace("a.smin", "in.smin").replace("b.smin", "in.smin")
                     .replace("b.p", "in.p").replace("source: s", "source: s\nnotes: 'b.p'"),
                     "s.yaml")
    assert not n.per_side  # prose that reads like a name does not count
    inst = p.instantiate("e4m3", "binary32", "binary32", 4, fb="e5m2")
    assert inst.a[0][:2] == [0x01, 0x08] and inst.b[0][:2] == [0x01, 0x3c]
    assert inst.env["v"] == Fraction(1, 2 ** 9) * Fraction(1, 2 ** 16)
    plain = p.instantiate("e4m3", "binary32", "binary32", 4)  # one format: a.* = b.* = in.*
    assert plain.b[0][:2] == [0x01, 0x38] and plain.env["v"] == Fraction(1, 2 ** 18)
    assert p.applies_to_formats("e4m3", "binary32", "binary32", 4, "e5m2")
    assert not p.applies_to_formats("e4m3", "binary32", "binary32", 4, "binary16")
    (r,) = load_text(text.replace("b: {0: b.smin", "b: {0: a.smin"), "s.yaml")
    with pytest.raises(InstantiationError, match=r"format e2m1, vector v b\[0\]"):
        r.instantiate("e4m3", "binary32", "binary32", 4, fb="e2m1")  # no 2^-9 in e2m1


def test_probe_with_scale_factors_of_its_own() -> None:
    # sa and sb write a row's scale factors (1 where not given) in the unit's scale format,
    # s.* are its constants; such a probe requires scale_block and applies to
    # block-scaled units only
    text = ("id: scaled\ntitle: t\nfeature: neab\nsource: s\nrequires: [scale_block]\n"
            "vectors:\n  - {name: v, a: {0: 1}, b: {0: 1}, sa: {1: s.smin},"
            " sb: {'0..k/scale_block-1': '2^s.emax'}}\n"
            "decide:\n  - {if: 'v == 0', then: 0}\n  - otherwise: inconclusive\n")
    (p,) = load_text(text, "s.yaml")
    assert p.scaled
    assert not p.applies_to_formats("e2m1", "binary32", "binary32", 64)
    assert p.applies_to_formats("e2m1", "binary32", "binary32", 64, fs="ue4m3")
    inst = p.instantiate("e2m1", "binary32", "binary32", 64, {"scale_block": 16}, fs="ue4m3")
    assert inst.sa == [[0x38, 0x01, 0x38, 0x38]] and inst.sb == [[0x78] * 4]
    # the checker packs them after the k values, as the model reads block-scaled rows
    cfg = AccumulatorConfig(in_format="e2m1", k=64, algorithm="gdfs", nfma=16,
                            scale_format="ue4m3", scale_block=16)
    a, b, c, _ = _batch([(p, inst)], cfg)
    assert a.shape == (1, 68) and list(a[0, 64:]) == [0x38, 0x01, 0x38, 0x38]
    with pytest.raises(InstantiationError, match="scale factors' format and scale_block"):
        p.instantiate("e2m1", "binary32", "binary32", 64, {"scale_block": 16})
    with pytest.raises(InstantiationError, match=r"position 4 gives 4\.\.4, outside 0\.\.3 for "
                                                 r"k/scale_block=4"):
        load_text(text.replace("sa: {1:", "sa: {4:"), "s.yaml")[0].instantiate(
            "e2m1", "binary32", "binary32", 64, {"scale_block": 16}, fs="ue4m3")
    with pytest.raises(SchemaError, match=r"s\.yaml:6: vectors\.0\.sa: expected no scale "
                                          r"factors: a probe writes them only when it lists "
                                          r"scale_block"):
        load_text(text.replace("requires: [scale_block]\n", ""), "s.yaml")
    with pytest.raises(SchemaError, match="unknown name 's.smin'"):
        load_text(text.replace("requires: [scale_block]\n", "").replace(
            ", sa: {1: s.smin}, sb: {'0..k/scale_block-1': '2^s.emax'}", ", c: s.smin"),
            "s.yaml")


def test_library_loads_and_lists(capsys) -> None:
    probes = load_probes(library_files() + library_files("published"))
    assert {p.id for p in probes} >= {"nfma-walk", "neab-scan", "fttn-t-blk-fma-width"}
    assert main(["probes", "--published"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # probes written with a.* and b.* say so in the listing
    (gdfs,) = [ln for ln in lines if ln.startswith("nfma-gdfs ")]
    assert " scaled requires scale_block" in gdfs  # and those with scale factors of their own
    (scan,) = [ln for ln in lines if ln.startswith("neab-scan-sides ")]
    assert scan.split()[-1] == "nfma,interleave,subnormal_inputs,subnormal_products"
    assert " per-side " in scan and not any(
        " per-side " in ln for ln in lines if ln.startswith("neab-scan "))


def _space(*cfgs: AccumulatorConfig) -> CandidateSpace:
    return CandidateSpace("test", "<test>", list(cfgs))


def _va(neab: int, rounding: str) -> AccumulatorConfig:
    # Seed 000 Sec. V-A: custom unit, binary16 in, binary32 out, NFMA 8.  K = 16: FTTN runs
    # a 16x16x16 WMMA and its Alg. 1 walks positions up to 16 ("NFMA >= 16").
    return AccumulatorConfig(in_format="binary16", k=16, nfma=8, neab=neab,
                             final_rounding=rounding)


def _verdicts(cfg: AccumulatorConfig) -> dict[str, tuple[str, int, int]]:
    rep = run_check(suite_probes("fttn"), [_space(cfg)])
    out = {}
    for r in rep.results:
        ex_ = r.counterexamples[0]["decided"] if r.counterexamples else ""
        out[r.probe.id] = (ex_, r.correct, r.wrong)
    return out


def test_seed000_va_finding_1_neab0_rne() -> None:
    v = _verdicts(_va(0, "rne"))
    assert v["fttn-t-blk-fma-width"] == ("1", 0, 1)      # NFMA = 1 / no block FMA
    assert v["fttn-t-1bit"][1:] == (1, 0)                # no extra bit: correct
    assert v["fttn-t-rnd-dir"] == ("rz", 0, 1)           # RZ instead of RNE


def test_seed000_va_finding_2_neab1_ru() -> None:
    v = _verdicts(_va(1, "ru"))
    assert v["fttn-t-blk-fma-width"] == (">= 16", 0, 1)  # NFMA >= 16: wrong
    assert v["fttn-t-1bit"][1:] == (1, 0)                # the extra bit: correct
    assert v["fttn-t-rnd-dir"][1:] == (1, 0)             # RU: correct


def test_check_and_authenticate_cli(tmp_path: Path) -> None:
    sp = tmp_path / "s.yaml"
    sp.write_text("id: s\nformats: {in: binary16, out: binary32}\nk: 16\n"
                  "fixed: {nfma: 8}\nvary: {neab: [0, 1], final_rounding: [rne, ru]}\n")
    assert main(["check", "--space", str(sp), "--quiet"]) == 0
    assert main(["authenticate", "fttn", "--space", str(sp), "--quiet", "--json"]) == 1
    assert main(["authenticate", "nosuch", "--space", str(sp)]) == 2
    bad = tmp_path / "b.yaml"
    bad.write_text("id: s\nformats: {in: binary16}\nk: 16\nvary: {colour: [1]}\n")
    assert main(["check", "--space", str(bad), "--quiet"]) == 2


def test_library_decides_every_preset() -> None:
    cfgs = [p.config for p in list_presets()]
    rep = run_check(load_probes(library_files()), [_space(*cfgs)])
    bad = [(r.probe.id, r.counterexamples[:1]) for r in rep.results if r.failed]
    assert not bad
    assert sum(r.tried for r in rep.results) > 0


@pytest.mark.slow
def test_default_spaces_all_robust() -> None:
    assert main(["check", "--quiet"]) == 0
