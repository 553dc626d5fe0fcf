"""Published suites (Fasi et al. 2021, Khattak & Mikaitis 2025): each test reproduces its
paper's conclusion on the device it was written for, and authentication finds the flaws
[KM25] Sec. V-A describes and the ones our spaces expose."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.formats import get_format
from mmaprobe.models.presets import get_preset
from mmaprobe.models.space import CandidateSpace
from mmaprobe.probes.checker import run_check
from mmaprobe.probes.decide import decide
from mmaprobe.probes.library import suite_probes
from mmaprobe.vectors.cli import main


def _space(*cfgs: AccumulatorConfig) -> CandidateSpace:
    return CandidateSpace("test", "<test>", list(cfgs))


def _results(suite: str, *cfgs: AccumulatorConfig) -> dict:
    rep = run_check(suite_probes(suite), [_space(*cfgs)])
    return {r.probe.id: r for r in rep.results}


def test_suites_load_and_cite_their_source() -> None:
    for suite, prefix, cite in (("fasi2021", "fasi-", "Fasi et al. 2021 ([FHMP21])"),
                                ("khattak2025", "km-", "Khattak & Mikaitis 2025 ([KM25])")):
        probes = suite_probes(suite)
        assert len(probes) >= 9
        for p in probes:
            assert p.id.startswith(prefix) and p.suite == suite
            assert p.source.startswith(cite), p.id


def test_fasi_reproduces_its_v100_conclusions() -> None:
    res = _results("fasi2021", get_preset("v100-fp16-fp32").config,
                   get_preset("v100-fp16-fp16").config)
    for r in res.values():
        assert r.wrong == 0 and r.tried >= 1, r.probe.id
    # the monotonicity counterexample of the paper holds on the V100 model
    assert res["fasi-monotonicity"].correct == 1


@pytest.mark.parametrize("test_id, preset", [
    ("km-denormalised-products-v100", "v100-fp16-fp32"),
    ("km-denormalised-products-a100", "a100-fp16-fp32"),
    ("km-denormalised-products-h100", "h100-fp16-fp32"),
    ("km-fp8-accumulator-bits", "l40s-e4m3-fp32"),
    ("km-c-early", "l40s-e5m2-fp32"),
    ("km-interleave-walk", "h100-e5m2-fp32-mma"),
    ("km-fp64-order", "a100-fp64-fp64"),
    ("km-subnormal-inputs", "b200-fp16-fp32"),
])
def test_khattak_reproduces_its_device_conclusions(test_id: str, preset: str) -> None:
    r = _results("khattak2025", get_preset(preset).config)[test_id]
    assert (r.tried, r.correct) == (1, 1)


def test_known_flaws_are_found() -> None:
    # [KM25] Sec. IV-A2: the A100 denormalised-products vector needs neab = 1; on V100 (neab 0)
    # it concludes 'normalised'
    r = _results("khattak2025", get_preset("v100-fp16-fp32").config)
    assert r["km-denormalised-products-a100"].wrong == 1
    # Fasi's rounding test on a neab = 1 unit with final RNE sees RZ (the FTTN flaw of
    # [KM25] Sec. V-A, shared by the first suite)
    cfg = AccumulatorConfig(in_format="binary16", k=8, neab=1, final_rounding="rne")
    r = _results("fasi2021", cfg)
    assert r["fasi-rounding"].counterexamples[0]["decided"] == "rz"
    # carry tests assume one block: with nfma = 1 the three-carry-bit test still says 8
    cfg = AccumulatorConfig(in_format="binary16", k=4, nfma=1, carry_bits=0)
    r = _results("fasi2021", cfg)
    assert r["fasi-carry-three-bits"].wrong == 1
    # binary32-mode 'subnormal output' is a normal number: an output flush goes unseen
    cfg = AccumulatorConfig(in_format="binary16", k=4, flush=("output",))
    assert _results("fasi2021", cfg)["fasi-subnormal-out"].wrong == 1


# k 16 for the FTTN tests (K = 16 only): a suite none of whose tests applies is an error
SPACE = """\
id: auth-fp16
formats: {in: binary16, c: binary32, out: binary32}
k: [4, 8, 16]
vary:
  neab: [0, 1]
  nfma: [1, 4]
  final_rounding: [rz, rne]
  carry_bits: [null, 0]
---
id: auth-fp8
formats: {in: e5m2, c: binary32, out: binary32}
k: [16]
vary:
  interleave: [none, pairs]
  nfma: [8, 16]
  neab: [-10, 2]
  out_frac_bits: [13, null]
  c_placement: [early, late]
"""


@pytest.mark.parametrize("suite", ["fasi2021", "khattak2025", "fttn"])
def test_authenticate_end_to_end(tmp_path: Path, capsys, suite: str) -> None:
    sp = tmp_path / "s.yaml"
    sp.write_text(SPACE)
    rc = main(["authenticate", suite, "--space", str(sp), "--quiet", "--json"])
    out = json.loads(capsys.readouterr().out)
    verdicts = {t["test"]: t for t in out["tests"]}
    assert rc == (1 if any(t["verdict"] == "not robust" for t in out["tests"]) else 0)
    for t in out["tests"]:
        assert t["verdict"] in ("robust", "robust where conclusive", "not robust",
                                "not applicable")
        if t["verdict"] == "not robust":
            assert t["wrong_on"] and t["counterexamples"]
    if suite == "fasi2021":
        assert verdicts["fasi-rounding"]["verdict"] == "not robust"
        # the three-carry-bit test fails exactly where the sum of 8 overflows 2 + 0 bits
        where = verdicts["fasi-carry-three-bits"]["wrong_where"]
        assert where == {"carry_bits": ["0"]}
        assert verdicts["fasi-carry-three-bits"]["verdict"] == "not robust"
    if suite == "khattak2025":
        assert verdicts["km-interleave-walk"]["tried"] > 0
        assert verdicts["km-c-early"]["verdict"] == "not robust"  # assumes 13 bits
    assert main(["authenticate", suite, "--space", str(sp), "--quiet"]) == rc
    assert "wall time" in capsys.readouterr().out


def _fttn_width(cfg: AccumulatorConfig) -> str:
    (p,) = [q for q in suite_probes("fttn") if q.id == "fttn-t-blk-fma-width"]
    inst = p.instantiate(cfg.in_format, cfg.c_format, cfg.out_format, cfg.k)
    out = evaluate(cfg, np.array(inst.a, dtype=np.uint64), np.array(inst.b, dtype=np.uint64),
                   np.array(inst.c, dtype=np.uint64))
    return decide(inst, [int(x) for x in out], get_format(cfg.out_format)).describe()


def test_fttn_blk_fma_width_reads_on_the_wmma_chains() -> None:
    # The artifact (fp16in.cpp) keeps the half ulp at position 0 for the whole walk; on a
    # 16x16x16 WMMA, i.e. the presets chained to k = 16, it reads V100 1 (neab 0: case 3),
    # A100 8, H100 >= 16.  [FTTN24] Table III's V100 4 needs an extra alignment bit.
    v100 = get_preset("v100-fp16-fp32").config.replace(k=16)
    assert _fttn_width(v100) == "1"
    assert _fttn_width(v100.replace(neab=1)) == "4"
    assert _fttn_width(get_preset("a100-fp16-fp32").config.replace(k=16)) == "8"
    assert _fttn_width(get_preset("a100-fp16-fp32-k16").config) == "8"
    assert _fttn_width(get_preset("h100-fp16-fp32").config) == ">= 16"
    # CDNA2 GPS: ord0 = 1 + 2^-24 + 2^-24 ties to 1, sumc does not: case 2, width 1
    assert _fttn_width(get_preset("mi250x-fp16-fp32").config.replace(k=16)) == "1"


def test_authenticate_prints_a_tests_notes(tmp_path: Path, capsys) -> None:
    sp = tmp_path / "v100.yaml"
    sp.write_text("id: v100-k16\nformats: {in: binary16, c: binary32, out: binary32}\n"
                  "k: [16]\nvary: {nfma: [4], neab: [0, 1]}\n")
    assert main(["authenticate", "fttn", "--quiet", "--space", str(sp)]) == 1
    out = capsys.readouterr().out
    assert "note: As in the artifact" in out and "V100 1" in out
