"""Rows beyond one input format: b in a format of its own (mixed fp8), scale factors (block
scaling), and bit patterns kept exactly through every file (NaN payloads included)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from mmaprobe.models import evaluate
from mmaprobe.models.formats import get_format
from mmaprobe.models.presets import get_preset
from mmaprobe.models.sampling import random_rows
from mmaprobe.smt.constraints import Constraints
from mmaprobe.smt.distinguish import distinguish, model_search
from mmaprobe.vectors.cli import main
from mmaprobe.vectors.suitefile import (
    Observed,
    Suite,
    read_d_file,
    read_layout_inputs,
    read_observed,
    read_suite,
    write_d_file,
    write_layout,
    write_observed,
    write_suite,
)


def _suite(preset: str, n: int = 24, seed: int = 3) -> Suite:
    cfg = get_preset(preset).config
    a, b, c = [], [], []
    rng = np.random.default_rng(seed)
    for kind in ("normal", "edge", "bits"):
        x, y, z = random_rows(cfg, n // 3, rng, kind)
        a.append(x)
        b.append(y)
        c.append(z)
    a, b, c = np.concatenate(a), np.concatenate(b), np.concatenate(c)
    ids = [f"v{i:03d}" for i in range(len(c))]
    b_fmt, sf, sb = cfg.operands
    return Suite(cfg.in_format, cfg.c_format, cfg.out_format, cfg.k, ids, a, b, c,
                 [{"kind": "random"}] * len(ids),
                 b_format=None if b_fmt == cfg.in_format else b_fmt, scale_format=sf,
                 scale_block=sb)


@pytest.mark.parametrize("preset", ["h100-e4m3xe5m2-fp32-mma", "b200-e2m1-fp32-ue4m3-b16-k64",
                                    "b200-e4m3xe2m1-fp32-ue8m0-b32"])
def test_suite_json_and_layout_round_trip(tmp_path, preset):
    suite = _suite(preset)
    p = tmp_path / "s.json"
    write_suite(p, suite)
    data = json.loads(p.read_text())
    cfg = get_preset(preset).config
    if cfg.b_format:
        assert data["formats"]["b"] == cfg.b_format
    if cfg.scale_format:
        assert data["formats"]["scale"] == cfg.scale_format
        assert data["scale_block"] == cfg.scale_block
        assert len(data["vectors"][0]["scale_a"]) == cfg.scales
    back = read_suite(p)
    assert back.operands == cfg.operands and back.digest() == suite.digest()
    assert (back.a == suite.a).all() and (back.b == suite.b).all() and (back.c == suite.c).all()
    paths = write_layout(tmp_path / "m", "B200", suite)
    a, b, c = read_layout_inputs(paths, suite)
    assert (a == suite.a).all() and (b == suite.b).all() and (c == suite.c).all()
    # run on the preset (packed rows), observed JSON, and infer on a one-preset space
    obs = tmp_path / "o.json"
    assert main(["run", str(p), "--preset", preset, "-o", str(obs)]) == 0
    d = read_observed(obs, back).d
    assert (d == evaluate(cfg, suite.a, suite.b, suite.c)).all()
    # infer on a space given as a file: its configurations take the suite's operands
    space = tmp_path / "space.yaml"
    space.write_text(f"id: one\nformats: {{in: {cfg.in_format}, c: {cfg.c_format}, out: "
                     f"{cfg.out_format}}}\nk: {cfg.k}\nfixed: {{algorithm: {cfg.algorithm}, "
                     f"nfma: {cfg.nfma}, interleave: {cfg.interleave}, c_placement: "
                     f"{cfg.c_placement}, zero_sign: {cfg.zero_sign}}}\n"
                     f"vary: {{neab: [{cfg.neab}, {cfg.neab + 3}]}}\n")
    assert main(["infer", str(p), str(obs), "--space", str(space), "--json"]) == 0


def test_mixed_suite_needs_a_mixed_device(tmp_path, capsys):
    p = tmp_path / "s.json"
    write_suite(p, _suite("h100-e4m3xe5m2-fp32-mma"))
    assert main(["run", str(p), "--preset", "h100-e4m3-fp32-mma", "-o",
                 str(tmp_path / "o.json")]) == 2
    assert "b format and block scaling" in capsys.readouterr().err


def test_scale_factors_are_checked_when_read(tmp_path, capsys):
    p = tmp_path / "s.json"
    write_suite(p, _suite("b200-e2m1-fp32-ue4m3-b16-k64", n=3))
    data = json.loads(p.read_text())
    data["vectors"][0]["scale_a"] = data["vectors"][0]["scale_a"][:2]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["infer", str(bad), str(bad)]) == 2
    assert "'scale_a' must be a list of 4 hex patterns" in capsys.readouterr().err


@pytest.mark.parametrize("fmt,values", [
    ("binary32", [0x7FFFFFFF, 0x7FC00000, 0xFFC00001, 0x7F800001, 0xFF800000, 0x80000000]),
    ("binary16", [0x7FFF, 0x7E00, 0xFE00, 0x7C01, 0xFC00, 0x8000]),
])
def test_d_file_keeps_nan_payloads(tmp_path, fmt, values):
    """The MATLAB-layout d-file holds binary32 words; every output pattern reads back
    exactly (a canonical 0x7fffffff stays 0x7fffffff; binary16 payloads ride in the top of
    the binary32 fraction)."""
    suite = Suite("binary16", fmt, fmt, 1, [f"v{i}" for i in range(len(values))],
                  np.zeros((len(values), 1), np.uint64), np.zeros((len(values), 1), np.uint64),
                  np.zeros(len(values), np.uint64), [{}] * len(values))
    obs = Observed(list(suite.ids), np.array(values, np.uint64), fmt)
    path = tmp_path / "d.txt"
    write_d_file(path, obs)
    assert [int(x) for x in read_d_file(path, suite).d] == values
    write_observed(tmp_path / "o.json", obs, suite)
    assert [int(x) for x in read_observed(tmp_path / "o.json", suite).d] == values


def test_eval_json_is_json_for_nan_and_inf(capsys):
    zeros = ",".join(["0"] * 15)
    for a, b in (("inf," + zeros, "0," + zeros), ("inf," + zeros, "1," + zeros)):
        assert main(["eval", "--preset", "h100-fp16-fp32", "--a", a, "--b", b, "--json"]) == 0
        out = capsys.readouterr().out

        def no_constants(name):
            raise AssertionError(f"bare {name} in JSON output")
        doc = json.loads(out, parse_constant=no_constants)
        assert doc["d_value"] in ("nan", "inf")


def test_eval_mixed_and_scaled(capsys):
    ones = ",".join(["1"] * 32)
    b = ",".join(["57344"] + ["0"] * 31)  # e5m2's largest finite value: not an e4m3 value
    assert main(["eval", "--preset", "h100-e4m3xe5m2-fp32", "--a", ones, "--b", b]) == 0
    assert "d = 0x47600000 (57344.0)" in capsys.readouterr().out
    a = ",".join(["1"] * 64)
    b = ",".join(["2"] + ["0"] * 15 + ["6"] + ["0"] * 47)
    assert main(["eval", "--preset", "b200-e2m1-fp32-ue4m3-b16-k64", "--a", a, "--b", b,
                 "--scale-b", "1,1.5,1,1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["d_value"] == 11.0 and doc["scale_b"][1] == "0x3c"
    assert main(["eval", "--preset", "h100-fp16-fp32", "--a", a[:31], "--b", a[:31],
                 "--scale-a", "1"]) == 2


def test_distinguish_falls_back_to_a_model_search():
    """When the solver cannot answer in time, a model search answers and says so."""
    x = get_preset("h100-e4m3xe5m2-fp32-mma").config
    y = x.replace(neab=0)
    d = distinguish(x, y, timeout=0.01)
    assert d.status == "distinct" and "model search" in d.detail
    assert "solver" in d.detail
    a, b = np.array([d.vector.a], np.uint64), np.array([d.vector.b], np.uint64)
    c = np.array([d.vector.c], np.uint64)
    assert int(evaluate(x, a, b, c)[0]) == d.out_a != d.out_b == int(evaluate(y, a, b, c)[0])
    # equivalent configurations: the search finds nothing and says 'unknown' with why
    same = model_search(x, x.replace(zero_sign="ieee"), Constraints(), time.monotonic(),
                        "test", rows=200)
    assert same.status == "unknown" and "found no difference" in same.detail


def test_distinguish_block_scaled_configurations():
    x = get_preset("b200-e4m3-fp32-ue8m0-b32").config
    d = distinguish(x, x.replace(neab=1), timeout=30)
    assert d.status == "distinct"
    assert len(d.vector.a) == x.row_width  # the scale factors, packed after a's values


@pytest.mark.parametrize("preset", ["h100-e4m3xe5m2-fp32", "b200-e4m3xe2m1-fp32-ue8m0-b32"])
def test_probes_on_mixed_and_scaled_suites(tmp_path, capsys, preset):
    # the library's probes reach a suite whose b has a format of its own, or whose rows
    # carry scale factors (probes/port.py: products written again per side, unit scales);
    # infer instantiates each record again for the format it names and decides with it
    cfg = get_preset(preset).config
    space = tmp_path / "space.yaml"
    space.write_text(f"id: mixed\nformats: {{in: {cfg.in_format}, c: {cfg.c_format}, out: "
                     f"{cfg.out_format}}}\nk: {cfg.k}\nfixed: {{nfma: {cfg.nfma}, zero_sign: "
                     f"{cfg.zero_sign}, out_frac_bits: {cfg.out_frac_bits or 'null'}}}\n"
                     f"vary: {{neab: [{cfg.neab}, {cfg.neab + 2}, 30], "
                     f"final_rounding: [rz, rne]}}\n")
    b_fmt, sf, sb = cfg.operands
    scale = ["--scale", sf, "--scale-block", str(sb)] if sf else []
    suite, obs = tmp_path / "s.json", tmp_path / "o.json"
    assert main(["suite", "--in", cfg.in_format, "--b", b_fmt, *scale, "--out",
                 cfg.out_format, "--c", cfg.c_format, "--k", str(cfg.k), "--space", str(space),
                 "--smt-seconds", "0", "--jobs", "1", "-o", str(suite)]) == 0
    data = json.loads(suite.read_text())
    recs = data["generator"]["probe_instances"]
    assert recs and data["generator"]["probe_vectors"] > 0
    # some probes are carried by b's format (their values lie outside a's)
    assert any(r.get("carrier") == b_fmt for r in recs)
    assert main(["run", str(suite), "--preset", preset, "-o", str(obs)]) == 0
    capsys.readouterr()
    assert main(["infer", str(suite), str(obs), "--space", str(space), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["consistent"]) == 1, out["consistent"]
    neab = out["decided"]["neab"]
    assert neab["value"] == cfg.neab and neab["probes"], neab


def test_scaled_probes_decide_gdfs_and_fda_features_in_suites(tmp_path, capsys):
    # probes with scale factors of their own (probes/library/scaled.yaml) reach features
    # that unit scale factors cannot: NVFP4 on GDFS aligns each group on its scale factors'
    # exponents, and an FDA product below 2^-126 exists only under a small scale factor
    space = tmp_path / "space.yaml"
    space.write_text(
        "id: nvfp4\nformats: {in: e2m1, c: binary32, out: binary32}\nk: 64\n"
        "fixed: {algorithm: gdfs, scale_format: ue4m3, scale_block: 16}\n"
        "vary: {nfma: [4, 16], neab: [0, 2], final_rounding: [rz, rne]}\n"
        "---\nid: mxfp8\nformats: {in: e4m3, c: binary32, out: binary32}\nk: 32\n"
        "fixed: {nfma: 16, neab: 2, scale_format: ue8m0, scale_block: 32}\n"
        "vary: {flush: [[], [products], [sums]]}\n")
    for sid, fmt, sf, sb, k, truth in (
            ("nvfp4", "e2m1", "ue4m3", 16, 64,
             "{in_format: e2m1, k: 64, algorithm: gdfs, nfma: 4, neab: 2, "
             "final_rounding: rne, scale_format: ue4m3, scale_block: 16}"),
            ("mxfp8", "e4m3", "ue8m0", 32, 32,
             "{in_format: e4m3, k: 32, nfma: 16, neab: 2, flush: [products], "
             "scale_format: ue8m0, scale_block: 32}")):
        one = tmp_path / f"{sid}.yaml"
        one.write_text(space.read_text().split("---\n")[0 if sid == "nvfp4" else 1])
        config = tmp_path / f"{sid}-config.yaml"
        config.write_text(truth + "\n")
        suite, obs = tmp_path / f"{sid}.json", tmp_path / f"{sid}-obs.json"
        assert main(["suite", "--in", fmt, "--scale", sf, "--scale-block", str(sb),
                     "--out", "binary32", "--c", "binary32", "--k", str(k), "--space",
                     str(one), "--smt-seconds", "0", "--jobs", "1", "-o", str(suite)]) == 0
        data = json.loads(suite.read_text())
        scaled = [r for r in data["generator"]["probe_instances"]
                  if r["probe"].endswith(("-gdfs", "-gdfs-sticky", "-scaled"))]
        assert scaled and all(r["bindings"]["scale_block"] == sb for r in scaled)
        # their rows carry scale factors other than 1
        one_bits = get_format(sf).exact_bits(1)
        vids = {v for r in scaled for v in r["vectors"]}
        rows = [v for v in data["vectors"] if v["id"] in vids]
        assert any(int(x, 16) != one_bits for v in rows for x in v["scale_a"])
        assert main(["run", str(suite), "--config", str(config), "-o", str(obs)]) == 0
        capsys.readouterr()
        assert main(["infer", str(suite), str(obs), "--space", str(one), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert len(out["consistent"]) == 1, out["consistent"]
        feature = "nfma" if sid == "nvfp4" else "subnormal_products"
        want = 4 if sid == "nvfp4" else "flush"
        got = out["decided"][feature]
        assert got["value"] == want and any(p.endswith(("gdfs", "scaled")) for p in
                                            got["probes"]), got
