"""suite + run + infer and identify on presets as virtual devices."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mmaprobe.models.presets import get_preset, list_presets
from mmaprobe.models.space import neighbourhood
from mmaprobe.vectors.devices import virtual_device
from mmaprobe.vectors.identify import identify
from mmaprobe.vectors.infer import infer
from mmaprobe.vectors.suite import SuiteOptions, build_suite
from mmaprobe.vectors.suitefile import (
    Observed,
    read_observed,
    read_suite,
    write_observed,
    write_suite,
)

#: one preset per algorithm / format family (fused fp16, fp16 out, bf16, tf32, fp8 narrow,
#: fp8 interleaved pairs, fp4, sfma fp64/fp32, gps, fdrda, fdrda even/odd fp8)
REPRESENTATIVE = ["h100-fp16-fp32-k8", "v100-fp16-fp16", "a100-bf16-fp32", "a100-tf32-fp32",
                  "l40s-e4m3-fp32", "h100-e4m3-fp32-mma-k16", "mi250x-fp32-fp32",
                  "mi250x-fp16-fp32-k4", "mi300x-xf32-fp32", "mi300x-fp8-fp32"]
#: the default run keeps one per algorithm family (NVIDIA fused, binary16 output, CDNA2 GPS,
#: CDNA3 FDRDA); the rest (the K=32 fp8 suites take ~30 s each) run with -m slow
SLOW = {"h100-e4m3-fp32-mma-k16", "mi300x-fp8-fp32", "a100-tf32-fp32",
        "mi250x-fp32-fp32", "l40s-e4m3-fp32", "a100-bf16-fp32"}
REPS = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in REPRESENTATIVE]
FAST = SuiteOptions(seed=1, random=32, pool=400, smt_seconds=0.0, use_smt=False,
                    local_rows=200, local_searches=8)


def _unique_presets() -> list[str]:
    seen, out = set(), []
    for p in list_presets():
        if p.config not in seen:
            seen.add(p.config)
            out.append(p.name)
    return out


def _space(cfg):
    return neighbourhood(cfg.in_format, cfg.c_format, cfg.out_format, cfg.k)


def _suite_run_infer(name: str, tmp_path, opts: SuiteOptions = FAST):
    cfg = get_preset(name).config
    space = _space(cfg)
    suite = build_suite(space, opts)
    sp, op = tmp_path / "suite.json", tmp_path / "obs.json"
    write_suite(sp, suite)
    suite = read_suite(sp)
    obs = Observed(list(suite.ids), virtual_device(cfg)(suite.a, suite.b, suite.c),
                   suite.out_format, {"device": f"preset:{name}"})
    write_observed(op, obs, suite)
    obs = read_observed(op, suite, sp)
    return cfg, space, suite, infer(suite, obs, space)


def _check_recovered(name, cfg, space, inf):
    assert inf.explained
    cons = {space.configs[i] for i in inf.consistent}
    assert cfg in cons
    matching = [p["preset"] for p in inf.presets if p["matches"]]
    assert name in matching
    # every consistent configuration agrees with the preset on every suite vector
    assert len(cons) <= 12, [c.describe() for c in cons]


@pytest.mark.parametrize("name", REPS)
def test_suite_run_infer_recovers_preset(name, tmp_path):
    cfg, space, suite, inf = _suite_run_infer(name, tmp_path)
    assert len(space.configs) >= 1000
    _check_recovered(name, cfg, space, inf)


@pytest.mark.parametrize("name", REPS)
def test_identify_within_budget(name):
    cfg = get_preset(name).config
    space = _space(cfg)
    res = identify(virtual_device(cfg), space, max_queries=16, pool=800, use_smt=False)
    assert res.status in ("identified", "equivalent", "class"), res.note
    assert len(res.queries) <= 16
    assert cfg in {space.configs[i] for i in res.remaining}
    assert name in res.presets


def test_suite_json_has_provenance_and_probe_vectors(tmp_path):
    cfg, space, suite, inf = _suite_run_infer("h100-fp16-fp32-k8", tmp_path)
    data = json.loads((tmp_path / "suite.json").read_text())
    assert data["schema"] == "mmaprobe-suite" and data["version"] == 1
    assert data["formats"] == {"in": "binary16", "c": "binary32", "out": "binary32"}
    kinds = {v["provenance"]["kind"] for v in data["vectors"]}
    assert {"probe", "random", "discriminator"} <= kinds
    assert all(len(v["a"]) == 8 and v["c"].startswith("0x") for v in data["vectors"])
    # probes decide in the pipeline and agree with the configuration: some neab probe
    # reads exactly 2, none contradicts it
    neab = [p for p in inf.probe_decisions if p["feature"] == "neab"]
    assert any(p["outcome"] == "2" for p in neab), neab
    assert all(p["agrees_with_candidate"] is not False for p in neab), neab
    assert inf.decided["neab"]["value"] == 2


def test_device_outside_space_is_unexplained(tmp_path):
    cfg = get_preset("h100-fp16-fp32-k8").config.replace(neab=7)  # the space has 0..4
    space = _space(cfg)
    assert cfg not in set(space.configs)
    suite = build_suite(space, FAST)
    obs = Observed(list(suite.ids), virtual_device(cfg)(suite.a, suite.b, suite.c),
                   suite.out_format)
    inf = infer(suite, obs, space)
    assert not inf.explained
    assert not any(p["matches"] for p in inf.presets)
    top = inf.closest[0]
    assert top["vectors"] and "neab" in top["implicated_features"]
    # the refinement loop finds a neab beyond the space's values that explains everything
    assert any(m["feature"] == "neab" and m["value"] >= 5 and m["explains_all"]
               for c in inf.closest for m in c["refinements"])
    res = identify(virtual_device(cfg), space, pool=800, use_smt=False)
    assert res.status == "unexplained" and not res.remaining
    assert res.inference is not None and res.inference.closest


def test_identify_with_smt_budget_reports_class():
    # the SMT engine is consulted when no model row splits the remaining class
    cfg = get_preset("v100-fp16-fp32").config
    res = identify(virtual_device(cfg), _space(cfg), pool=600, smt_seconds=4.0)
    assert res.status in ("identified", "equivalent"), res.note
    assert len(res.queries) <= 16 and "v100-fp16-fp32" in res.presets


@pytest.mark.slow
@pytest.mark.parametrize("name", _unique_presets())
def test_every_preset_suite_and_identify(name, tmp_path):
    cfg, space, suite, inf = _suite_run_infer(name, tmp_path,
                                              SuiteOptions(seed=2, smt_seconds=0.0,
                                                           use_smt=False))
    assert len(space.configs) >= 1000
    _check_recovered(name, cfg, space, inf)
    res = identify(virtual_device(cfg), space, max_queries=16, use_smt=False)
    assert res.status in ("identified", "equivalent", "class") and len(res.queries) <= 16
    assert name in res.presets


def test_device_callable_shapes():
    cfg = get_preset("v100-fp16-fp32").config
    dev = virtual_device(cfg)
    d = dev(np.zeros((3, 4), np.uint64), np.zeros((3, 4), np.uint64), np.zeros(3, np.uint64))
    assert d.shape == (3,)


def test_probe_vectors_in_processes_match_one_process(monkeypatch):
    """Probes instantiated in forked workers (interleaved) come back in pipeline order:
    the same vectors, provenance, records and notes as in one process."""
    from mmaprobe.vectors import suite as suite_mod

    space = neighbourhood("e4m3", "binary32", "binary32", 8)
    monkeypatch.setattr(suite_mod, "PARALLEL_PROBES", 1)
    out = []
    for jobs in (1, 2):
        bld, notes = suite_mod._Builder(space), []
        records, documents = suite_mod.probe_vectors(bld, None, notes, jobs=jobs)
        out.append((bld.ids, [x.tolist() for x in bld.a], [x.tolist() for x in bld.b], bld.c,
                    bld.prov, records, sorted(documents), notes))
    assert len(out[0][0]) > 1000
    assert out[0] == out[1]
