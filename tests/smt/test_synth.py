"""Synthesis: distinguish and robust probes, each verified on the model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.space import SPACES_DIR
from mmaprobe.smt.constraints import Constraints
from mmaprobe.smt.distinguish import distinguish, model_outputs
from mmaprobe.smt.synth import robust_probe

BASE = AccumulatorConfig(in_format="binary16", k=8, nfma=8, neab=1)


def test_distinguish_neab() -> None:
    d = distinguish(BASE, BASE.replace(neab=2), timeout=60)
    assert d.status == "distinct" and d.vector is not None
    outs = model_outputs([BASE, BASE.replace(neab=2)], d.vector)
    assert outs == [d.out_a, d.out_b] and outs[0] != outs[1]


def test_distinguish_with_constraints() -> None:
    cons = Constraints(normal=True, exp_range=(-4, 4), sign_a="+" * 8)
    d = distinguish(BASE, BASE.replace(nfma=4), cons, timeout=60)
    assert d.status == "distinct" and d.vector is not None
    assert all(x >> 15 == 0 for x in d.vector.a)


def test_identical_is_equivalent() -> None:
    assert distinguish(BASE, BASE.replace()).status == "equivalent"


def test_equivalence_proof_small() -> None:
    # flushing the output cannot matter when no result can be subnormal: e2m1 products
    # with c fixed to zero and binary32 output
    a = AccumulatorConfig(in_format="e2m1", k=2, neab=2)
    b = a.replace(flush=("output",))
    d = distinguish(a, b, Constraints(zero_c=True), timeout=60)
    assert d.status == "equivalent"


SMT_SPACE = SPACES_DIR / "smt-fp16-fp32-k8.yaml"
DEFAULT_SPACE = SPACES_DIR / "fp16-fp32.yaml"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mmaprobe.vectors.cli", *args],
                          capture_output=True, text=True)


def _synthesise_and_check(tmp_path: Path, feature: str, space: Path) -> None:
    """Synthesise with the CLI, then let `mmaprobe check` verify the probe independently:
    0 wrong and 0 inconclusive on every configuration of the space."""
    out = tmp_path / f"{feature}.yaml"
    r = _cli("synthesize", "--feature", feature, "--space", str(space), "-o", str(out),
             "--timeout", "240", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    for s in summary["probes"]:
        assert s["status"] == "ok" and s["inconclusive_configs"] == 0, s
    r = _cli("check", "--space", str(space), "--probe-file", str(out), "--json", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert not doc["failed"] and doc["probes"]
    for probe in doc["probes"]:
        assert probe["wrong"] == 0 and probe["inconclusive"] == 0, probe
        assert probe["tried"] == probe["correct"] > 0, probe


@pytest.mark.parametrize("feature", ["neab", "nfma"])
def test_synthesised_probe_passes_check_48(tmp_path: Path, feature: str) -> None:
    _synthesise_and_check(tmp_path, feature, SMT_SPACE)


@pytest.mark.parametrize("feature", ["neab", "nfma"])
def test_synthesised_probe_passes_check_default_space(tmp_path: Path, feature: str) -> None:
    _synthesise_and_check(tmp_path, feature, DEFAULT_SPACE)


def test_robust_probe_decides_every_configuration() -> None:
    space = [BASE.replace(neab=n, final_rounding=m, nfma=f) for n in (0, 2)
             for m in ("rz", "rne") for f in (2, 8)]
    p = robust_probe("neab", space, lambda c: c.neab, timeout=120)
    assert p is not None and p.vectors
    assert p.wrong == 0 and p.inconclusive == 0
    for cfg in space:
        found, value = p.decide([model_outputs([cfg], v)[0] for v in p.vectors])
        assert found and value == cfg.neab


def test_robust_probe_respects_constraints() -> None:
    cons = Constraints(normal=True, exp_range=(-8, 8), zero_a=frozenset({7}),
                       sign_b="+" * 8)
    space = [BASE.replace(nfma=f, final_rounding=m) for f in (2, 4, 8) for m in ("rz", "rne")]
    p = robust_probe("nfma", space, lambda c: c.nfma, cons, timeout=120)
    assert p is not None and p.inconclusive == 0
    for v in p.vectors:
        assert v.a[7] == 0 and all(x >> 15 == 0 for x in v.b)
        for x in v.a + v.b:
            e = (x >> 10) & 0x1F
            assert x & 0x7FFF == 0 or (e != 0 and -8 <= e - 15 <= 8)


def test_cli_distinguish_exit_codes(tmp_path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mmaprobe.vectors.cli", "distinguish",
                               *args], capture_output=True, text=True)
    r = run("--preset", "h100-fp16-fp32", "--preset", "a100-fp16-fp32-k16")
    assert r.returncode == 0 and "distinct" in r.stdout
    assert run("--preset", "h100-fp16-fp32", "--preset", "nope").returncode == 2
    r = run("--preset", "h100-fp16-fp32", "--preset", "b200-fp16-fp32")
    assert r.returncode == 0 and "equivalent" in r.stdout
    # the solver runs out of time; the model search that follows finds a vector and says so
    r = run("--preset", "v100-fp16-fp32", "--preset", "t4-fp16-fp32-884", "--timeout", "0.01")
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert r.stdout.startswith("distinct (model search") and "solver" in r.stdout
    # two configurations that compute the same function (a late c hides the zero-sign rule
    # of the blocks): no proof in time, no vector from the model search: exit 1, reported
    # on both streams (exit 1 never comes without a message)
    cfg = tmp_path / "ieee.yaml"
    cfg.write_text("{in_format: e4m3, k: 32, nfma: 16, neab: 2, interleave: pairs, "
                   "c_placement: late, late_rounding: rne, zero_sign: ieee}\n")
    r = run("--preset", "h100-e4m3-fp32-mma", "--config", str(cfg), "--timeout", "0.01")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stdout.startswith("unknown:") and "timeout" in r.stderr
    assert "model search" in r.stdout


def test_synthesised_probe_declares_where_it_was_verified(tmp_path: Path) -> None:
    # a probe synthesised on the 48-configuration space applies only there: on the shipped
    # spaces it is never wrong (it used to claim every fused unit: wrong on 436)
    out = tmp_path / "neab.yaml"
    r = _cli("synthesize", "--feature", "neab", "--space", str(SMT_SPACE), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "verified_on:" in out.read_text()
    r = _cli("check", "--probe-file", str(out), "--json", "--quiet")
    doc = json.loads(r.stdout)
    (probe,) = doc["probes"]
    assert probe["wrong"] == 0 and probe["tried"] >= 48  # its 48, wherever they recur
    # it decides nothing elsewhere: reported, and a failure once asked for
    assert r.returncode == 0 and doc["undecided"] > 0 and not doc["failed"]
    r = _cli("check", "--probe-file", str(out), "--json", "--quiet", "--require-decided")
    assert r.returncode == 1 and json.loads(r.stdout)["failed"]


def test_synthesize_exits_1_when_it_leaves_configurations_undecided(tmp_path: Path) -> None:
    # neab of an IEEE FMA chain is no feature of the unit: equal outputs, never decided
    sp = tmp_path / "s.yaml"
    sp.write_text("id: s\nformats: {in: binary16, c: binary32, out: binary32}\nk: [2]\n"
                  "vary: {neab: [0, 3], final_rounding: [rz, rne]}\n"
                  "fixed: {algorithm: sfma, nfma: 1}\n")
    out = tmp_path / "p.yaml"
    r = _cli("synthesize", "--feature", "neab", "--space", str(sp), "-o", str(out),
             "--timeout", "20")
    assert r.returncode == 1
    assert "left undecided" in r.stderr or "timeout" in r.stderr
