"""Bit-exact against every recorded GPU row in ../shared/hwdata (skipped when absent)."""

from __future__ import annotations

import json

import pytest

from mmaprobe.vectors.cli import main
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


@pytest.fixture(scope="module")
def results(request):
    hw = request.getfixturevalue("hwdata")
    return {(r.gpu, r.in_format, r.out_format): r for r in validate(hw)}


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
