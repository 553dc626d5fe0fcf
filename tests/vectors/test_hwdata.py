"""Bit-exact against every recorded GPU row in ../shared/hwdata (skipped when absent): the
MATLAB-tensor-core datasets and the per-instruction H100 recording (H100-ptx)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmaprobe.models import evaluate
from mmaprobe.models.presets import get_preset
from mmaprobe.vectors.cli import main
from mmaprobe.vectors.rowsfile import read_rows
from mmaprobe.vectors.validate import validate

EXPECTED = {  # (gpu, in_format, out_format) -> preset the dataset's instruction maps to
    ("V100", "binary16", "binary32"): "v100-fp16-fp32",
    ("V100", "binary16", "binary16"): "v100-fp16-fp16",
    ("A100", "binary16", "binary32"): "a100-fp16-fp32",
    ("A100", "binary16", "binary16"): "a100-fp16-fp16",
    ("A100", "bfloat16", "binary32"): "a100-bf16-fp32",
    ("A100", "tf32", "binary32"): "a100-tf32-fp32",
    ("H100", "binary16", "binary32"): "h100-fp16-fp32",
    ("H100", "binary16", "binary16"): "h100-fp16-fp16",
    ("H100", "bfloat16", "binary32"): "h100-bf16-fp32",
    ("H100", "tf32", "binary32"): "h100-tf32-fp32",
    ("H100", "e4m3", "binary32"): "h100-e4m3-fp32",
    ("H100", "e4m3", "binary16"): "h100-e4m3-fp16-mma",
    ("H100", "e5m2", "binary32"): "h100-e5m2-fp32",
    ("H100", "e5m2", "binary16"): "h100-e5m2-fp16-mma",
}


#: H100-ptx file -> the preset of its instruction (measured on an H100: mma.sync and wgmma of
#: the same formats and K share one function except fp8, whose mma.sync is interleaved)
EXPECTED_PTX = {
    "dmma_f64_k4": "h100-fp64-fp64",
    "mma_bf16_f32_k16": "h100-bf16-fp32",
    "mma_bf16_f32_k8": "h100-bf16-fp32-k8",
    "mma_e4m3_f16_k32": "h100-e4m3-fp16-mma",
    "mma_e4m3_f32_k16": "h100-e4m3-fp32-mma-k16",
    "mma_e4m3_f32_k32": "h100-e4m3-fp32-mma",
    "mma_e4m3e5m2_f32_k32": "h100-e4m3xe5m2-fp32-mma",
    "mma_e5m2_f16_k32": "h100-e5m2-fp16-mma",
    "mma_e5m2_f32_k16": "h100-e5m2-fp32-mma-k16",
    "mma_e5m2_f32_k32": "h100-e5m2-fp32-mma",
    "mma_e5m2e4m3_f32_k32": "h100-e5m2xe4m3-fp32-mma",
    "mma_f16_f16_k16": "h100-fp16-fp16",
    "mma_f16_f16_k8": "h100-fp16-fp16-k8",
    "mma_f16_f32_k16": "h100-fp16-fp32",
    "mma_f16_f32_k8": "h100-fp16-fp32-k8",
    "mma_tf32_f32_k4": "h100-tf32-fp32",
    "mma_tf32_f32_k8": "h100-tf32-fp32-k8",
    "wgmma_bf16_f32_k16": "h100-bf16-fp32",
    "wgmma_e4m3_f16_k32": "h100-e4m3-fp16",
    "wgmma_e4m3_f32_k32": "h100-e4m3-fp32",
    "wgmma_e4m3e5m2_f32_k32": "h100-e4m3xe5m2-fp32",
    "wgmma_e5m2_f16_k32": "h100-e5m2-fp16",
    "wgmma_e5m2_f32_k32": "h100-e5m2-fp32",
    "wgmma_f16_f16_k16": "h100-fp16-fp16",
    "wgmma_f16_f32_k16": "h100-fp16-fp32",
    "wgmma_tf32_f32_k8": "h100-tf32-fp32-k8",
}


@pytest.fixture(scope="module")
def all_results(request):
    hw = request.getfixturevalue("hwdata")
    return validate(hw)


@pytest.fixture(scope="module")
def results(all_results):
    return {(r.gpu, r.in_format, r.out_format): r for r in all_results if not r.instruction}


@pytest.fixture(scope="module")
def ptx_results(all_results):
    return {Path(r.path).stem: r for r in all_results if r.instruction}


@pytest.mark.parametrize("combo", list(EXPECTED), ids=lambda c: "-".join(c))
def test_every_recorded_row_matches(results, combo):
    if combo not in results:
        pytest.skip(f"{combo} not in this copy of the dataset")
    r = results[combo]
    assert r.preset == EXPECTED[combo]
    assert r.rows == 5000
    assert r.mismatches == 0, r.first


def test_validate_cli_json(hwdata, capsys):
    rc = main(["validate", str(hwdata), "--gpu", "V100", "--limit", "50", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert {"gpu", "in_format", "out_format", "preset", "rows", "mismatches"} <= set(out[0])
    assert [o["rows"] for o in out] == [50, 50]


def test_validate_reports_mismatches(hwdata, tmp_path, capsys):
    # a corrupted copy of one output file: exit 1 and the row named with both results
    src = hwdata / "V100" / "fp16"
    dst = tmp_path / "V100" / "fp16"
    dst.mkdir(parents=True)
    for f in src.iterdir():
        (dst / f.name).write_text(f.read_text())
    lines = (dst / "d_V100_fp32.txt").read_text().splitlines()
    lines[2] = lines[2][:-1] + ("0" if lines[2][-1] == "1" else "1")
    (dst / "d_V100_fp32.txt").write_text("\n".join(lines) + "\n")
    (dst / "d_V100_fp16.txt").unlink()
    rc = main(["validate", str(tmp_path), "--limit", "10"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "row 3: model" in out and "1 mismatches" in out


def test_validate_bad_inputs(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nowhere")]) == 2
    d = tmp_path / "V100" / "fp16"
    d.mkdir(parents=True)
    (d / "a_V100_fp16.txt").write_text("3c000000 zz\n")
    (d / "b_V100_fp16.txt").write_text("3f800000\n")
    (d / "c_V100_fp32.txt").write_text("0" * 32 + "\n")
    (d / "d_V100_fp32.txt").write_text("0" * 32 + "\n")
    assert main(["validate", str(tmp_path)]) == 2
    assert "a_V100_fp16.txt:1" in capsys.readouterr().err
    assert main(["validate", str(tmp_path), "--gpu", "Z999"]) == 2


@pytest.mark.parametrize("stem", list(EXPECTED_PTX))
def test_every_h100_ptx_row_matches(ptx_results, stem):
    """0 mismatches on every instruction of the H100 recording (NaN payloads and signs
    included: the DMMA file compares bit for bit)."""
    if stem not in ptx_results:
        pytest.skip(f"{stem}.txt not in this copy of H100-ptx")
    r = ptx_results[stem]
    assert not r.error, r.error
    assert r.preset == EXPECTED_PTX[stem]
    assert r.rows >= 2000
    assert r.mismatches == 0, r.first


def test_every_ptx_file_is_expected(ptx_results):
    assert set(ptx_results) <= set(EXPECTED_PTX), set(ptx_results) - set(EXPECTED_PTX)


def test_h100_dmma_needs_nan_propagation(hwdata):
    """The DMMA file decides nan: 'propagate' (the IEEE default NaN misses 3 721 rows)."""
    path = hwdata / "H100-ptx" / "dmma_f64_k4.txt"
    if not path.is_file():
        pytest.skip("dmma_f64_k4.txt not in this copy of H100-ptx")
    f = read_rows(path)
    cfg = get_preset("h100-fp64-fp64").config
    assert (evaluate(cfg, f.a, f.b, f.c) == f.d).all()
    assert (evaluate(cfg.replace(nan="ieee"), f.a, f.b, f.c) != f.d).sum() > 3000


def test_validate_reports_a_shape_without_preset_and_goes_on(tmp_path, capsys):
    """A file whose instruction has no preset is a failing row, not an abort (exit 1)."""
    d = tmp_path / "H100-ptx"
    d.mkdir()
    row = " ".join(["3c00"] * 16) + " 00000000 41000000\n"
    (d / "ok.txt").write_text("# mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32\n"
                              "# a: binary16 x8, b: binary16 x8, c: binary32, d: binary32\n"
                              + row)
    (d / "odd.txt").write_text("# mma.sync.aligned.m16n8k8.row.col.f32.f16.bf16.f32\n"
                               "# a: binary16 x8, b: bfloat16 x8, c: binary32, d: binary32\n"
                               + row)
    rc = main(["validate", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "no preset for this shape" in out and "h100-fp16-fp32-k8" in out
    assert "1 without a preset" in out
    rc = main(["validate", str(tmp_path), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert rc == 1 and [bool(r["error"]) for r in res] == [True, False]


def test_validate_set_counts_rows_a_claim_contradicts(hwdata, capsys):
    # Valpey et al. [Valpey25]: round-to-odd accumulation and 3 carry bits, on the V100 rows
    rc = main(["validate", str(hwdata), "--gpu", "V100", "--set", "final_rounding=ro",
               "--json"])
    out = {o["out_format"]: o for o in json.loads(capsys.readouterr().out)}
    assert rc == 1
    assert out["binary32"]["preset"] == "v100-fp16-fp32+final_rounding=ro"
    assert out["binary32"]["mismatches"] == 665
    for bits, bad in ((1, 8), (2, 0), (3, 0)):
        rc = main(["validate", str(hwdata), "--gpu", "V100", "--set", f"carry_bits={bits}",
                   "--json"])
        assert [o["mismatches"] for o in json.loads(capsys.readouterr().out)] == [bad, bad]
    assert main(["validate", str(hwdata), "--gpu", "V100", "--set", "colour=3"]) == 2
    assert "unknown field(s) colour" in capsys.readouterr().err
    assert main(["validate", str(hwdata), "--gpu", "V100", "--set", "carry_bits"]) == 2


def test_authenticate_claims_against_recorded_rows(hwdata, tmp_path, capsys):
    # [Valpey25]: round-to-odd is rejected by 665 V100 rows; 3 carry bits fit, so do 2
    from mmaprobe.vectors.claims import evaluate_claims, load_claims

    f = tmp_path / "t.claims.yaml"
    f.write_text("suite: t\nsource: s\nclaims:\n"
                 "  - {id: ro, claim: round to odd, kind: is, set: {final_rounding: ro},"
                 " gpus: [V100], outputs: [binary32]}\n"
                 "  - {id: cb, claim: three carry bits, kind: is, set: {carry_bits: 3},"
                 " alternatives: [{carry_bits: 2}], gpus: [V100], outputs: [binary32]}\n")
    verdicts = {v["claim"]: v for v in evaluate_claims(load_claims(f), hwdata)}
    assert verdicts["ro"]["verdict"] == "rejected"
    assert verdicts["ro"]["rows"][0]["contradicting"] == 665
    assert verdicts["cb"]["verdict"] == "consistent, not decided"
    assert main(["authenticate", str(f), "--data", str(hwdata), "--quiet"]) == 0
    assert "665 of 5000 recorded rows contradict it" in capsys.readouterr().out
    (tmp_path / "bad.claims.yaml").write_text("claims:\n  - {id: x, claim: y, kind: maybe,"
                                              " set: {}, gpus: [V100]}\n")
    assert main(["authenticate", str(tmp_path / "bad.claims.yaml"), "--data",
                 str(hwdata)]) == 2
    assert "expected 'is' or 'is_not'" in capsys.readouterr().err
