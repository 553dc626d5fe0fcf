"""The model commands end to end: presets, eval, gemm, and bad input (exit 2)."""

from __future__ import annotations

import json

from mmaprobe.models.presets import get_preset, list_presets
from mmaprobe.vectors.cli import main


def test_presets_cover_the_literature(capsys):
    devices = {p.device for p in list_presets()}
    assert {"V100", "T4", "A100", "A2", "A30", "L40S", "Ada", "RTX4090", "H100", "H200", "B200",
            "RTXPRO6000", "MI250X", "MI300X"} <= devices
    assert all(p.citation.startswith("[") for p in list_presets())
    assert main(["presets", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out) == len(list_presets())


def test_table_ii_values():
    # [KM25] Table II: alignment fraction bits 23/24/25/13 and NFMA per device and format
    cases = {"v100-fp16-fp32": (23, 4), "a100-fp16-fp32": (24, 8), "a100-tf32-fp32": (24, 4),
             "h100-fp16-fp32": (25, 16), "h100-tf32-fp32-k8": (25, 8),
             "h100-e4m3-fp32": (13, 32), "l40s-e4m3-fp32": (13, 16),
             "b200-bf16-fp32": (25, 16)}
    for name, (F, nfma) in cases.items():
        cfg = get_preset(name).config
        assert (cfg.frac_bits, cfg.nfma) == (F, nfma), name


def test_eval_and_explain(capsys):
    rc = main(["eval", "--preset", "v100-fp16-fp32", "--a", "1.5,0x0c00,0x0c00,0",
               "--b", "1.5,0x1000,0x1000,0", "--explain"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "alignment exponent 0" in out and "d = 0x40100001" in out
    rc = main(["eval", "--preset", "v100-fp16-fp32", "--a", "1,1,1,1", "--b", "1,1.5,1.75,1.875",
               "--c", "1.875", "--json"])
    assert json.loads(capsys.readouterr().out)["d_value"] == 8.0


def test_gemm_hazard(capsys):
    assert main(["gemm", "--preset", "h100-fp16-fp32", "--hazard"]) == 0
    out = capsys.readouterr().out
    assert "D_ij = 191.875" in out and "MI250X 0" in out and "why: fused blocks" in out


def test_bad_input_exit_2(capsys, tmp_path):
    assert main(["eval", "--preset", "h999", "--a", "1", "--b", "1"]) == 2
    assert "valid presets" in capsys.readouterr().err
    assert main(["eval", "--preset", "v100-fp16-fp32", "--a", "1,2", "--b", "1,2"]) == 2
    assert "k=4" in capsys.readouterr().err
    assert main(["eval", "--preset", "v100-fp16-fp32", "--a", "1,2,x,4", "--b", "1,2,3,4"]) == 2
    bad = tmp_path / "cfg.yaml"
    bad.write_text("in_format: binary16\nk: 4\nneab: [1\n")
    assert main(["eval", "--config", str(bad), "--a", "1,1,1,1", "--b", "1,1,1,1"]) == 2
    assert "cfg.yaml:" in capsys.readouterr().err
    bad.write_text("in_format: fp12\nk: 4\n")
    assert main(["eval", "--config", str(bad), "--a", "1,1,1,1", "--b", "1,1,1,1"]) == 2
    assert "valid formats" in capsys.readouterr().err
    bad.write_text("in_format: binary16\nk: 4\nnfma: 3\n")
    assert main(["eval", "--config", str(bad), "--a", "1,1,1,1", "--b", "1,1,1,1"]) == 2
    assert "nfma" in capsys.readouterr().err
    assert main(["presets", "--device", "Z80"]) == 2
