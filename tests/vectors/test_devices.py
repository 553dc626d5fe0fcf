"""The device layer: exec: harnesses (the README's example and failing ones), recorded rows,
cuda: without a GPU, and survey on a virtual GPU."""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from mmaprobe.models.errors import MmaprobeError
from mmaprobe.models.presets import get_preset
from mmaprobe.models.space import neighbourhood
from mmaprobe.vectors.cli import main
from mmaprobe.vectors.devices import DeviceError, device_from_args, parse_device
from mmaprobe.vectors.identify import identify
from mmaprobe.vectors.rowsfile import format_rows, parse_rows, read_rows
from mmaprobe.vectors.suitefile import Suite, write_suite

README = Path(__file__).resolve().parents[2] / "README.md"
SUITE = ["suite", "--in", "binary16", "--out", "binary32", "--k", "4", "--random", "8",
         "--pool", "200", "--smt-seconds", "0"]


def _readme_harness(tmp_path: Path) -> Path:
    text = README.read_text()
    code = re.search(r"### An external harness.*?```python\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "sim.py"
    path.write_text(code)
    return path


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(body)
    return f"exec:{sys.executable} {path}"


@pytest.fixture(scope="module")
def suite_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("dev")
    s = d / "s.json"
    assert main(SUITE + ["-o", str(s)]) == 0
    return s


def _f16(bits: int) -> float:
    return struct.unpack("<e", struct.pack("<H", bits))[0]


def test_readme_harness_runs_as_a_device(suite_file, tmp_path, monkeypatch):
    """The README's complete example harness: run through exec:, outputs as it computes
    them, nothing left in the temporary directory."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    sim = _readme_harness(tmp_path)
    out = tmp_path / "o.json"
    assert main(["run", str(suite_file), "--device", f"exec:{sys.executable} {sim}",
                 "-o", str(out)]) == 0
    suite = json.loads(suite_file.read_text())
    got = {o["id"]: int(o["d"], 16) for o in json.loads(out.read_text())["outputs"]}
    for v in suite["vectors"][:40]:
        c = struct.unpack("<f", struct.pack("<I", int(v["c"], 16)))[0]
        acc = c + sum(_f16(int(x, 16)) * _f16(int(y, 16)) for x, y in zip(v["a"], v["b"]))
        assert got[v["id"]] == struct.unpack("<I", struct.pack("<f", acc))[0]
    assert not list(tmp.iterdir())


def test_exec_model_harness_is_identified(tmp_path):
    """An external harness that is really the model of a preset: identify finds it."""
    dev = parse_device(_script(tmp_path, "model.py", (
        "import sys\n"
        "from mmaprobe.models.presets import get_preset\n"
        "from mmaprobe.vectors.suitefile import Observed, read_suite, write_observed\n"
        "from mmaprobe.models.accumulator import evaluate\n"
        "s = read_suite(sys.argv[1])\n"
        "d = evaluate(get_preset('v100-fp16-fp32').config, s.a, s.b, s.c)\n"
        "write_observed(sys.argv[2], Observed(s.ids, d, s.out_format), s)\n")))
    cfg = get_preset("v100-fp16-fp32").config
    dev = dev.with_shape((cfg.in_format, cfg.c_format, cfg.out_format, cfg.k))
    res = identify(dev, neighbourhood("binary16", None, "binary32", 4), pool=400,
                   smt_seconds=20.0)
    assert res.decided, res.note
    assert cfg in {res.space.configs[i] for i in res.remaining}
    assert "v100-fp16-fp32" in res.presets and dev.calls == len(res.queries)


@pytest.mark.parametrize("body, needles", [
    ("import sys\nprint('boom: no GPU here', file=sys.stderr)\nsys.exit(3)\n",
     ["exited with code 3", "boom: no GPU here"]),
    ("import time\ntime.sleep(60)\n", ["no answer within 2 s"]),
    ("import sys\nopen(sys.argv[2], 'w').write('{not json')\n", ["bad output", "JSON"]),
    ("import sys, json\ns = json.load(open(sys.argv[1]))\n"
     "json.dump({'schema': 'mmaprobe-observed', 'version': 1, 'formats': s['formats'], "
     "'k': s['k'], 'outputs': [{'id': v['id'], 'd': '0x0'} for v in s['vectors'][1:]]}, "
     "open(sys.argv[2], 'w'))\n", ["bad output", "no output"]),
    ("pass\n", ["wrote no output file"]),
], ids=["exit-code", "hang", "garbage", "missing-output", "no-file"])
def test_failing_harness_is_a_clear_error(suite_file, tmp_path, capsys, body, needles):
    spec = _script(tmp_path, "bad.py", body)
    out = tmp_path / "o.json"
    code = main(["run", str(suite_file), "--device", spec, "--device-timeout", "2",
                 "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "exec:" in err and all(n in err for n in needles), err
    assert not out.exists()


def test_exec_spec_errors(capsys):
    assert main(["identify", "--device", "exec:", "--in", "binary16", "--out", "binary32",
                 "--k", "4"]) == 2
    assert main(["identify", "--device", "exec:/no/such/harness"]) == 2
    assert "--in/--out/--k" in capsys.readouterr().err
    with pytest.raises(DeviceError, match="cannot start"):
        parse_device("exec:/no/such/harness").with_shape(
            ("binary16", "binary32", "binary32", 4)).run(
            np.zeros((1, 4), np.uint64), np.zeros((1, 4), np.uint64), np.zeros(1, np.uint64))


def test_cuda_without_a_gpu_or_instruction(capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("MMAPROBE_NVIDIA_SMI", "/nonexistent/nvidia-smi")
    assert main(["identify", "--device", "cuda:mma.m99.f32"]) == 2
    err = capsys.readouterr().err
    assert "unknown CUDA instruction" in err and "mma.m16n8k16.f32.f16.f16.f32" in err
    assert main(["identify", "--device", "cuda:mma.m16n8k16.f32.f16.f16.f32"]) == 2
    assert "GPU" in capsys.readouterr().err
    assert main(["devices"]) == 2
    assert main(["devices", "--all", "--json"]) == 0
    names = {r["name"] for r in json.loads(capsys.readouterr().out)["instructions"]}
    assert {"mma.m8n8k4.f64", "wgmma.m64n8k32.f32.e4m3.e5m2"} <= names


def test_rows_file_round_trip_keeps_nan_payloads():
    text = ("# mma.m8n8k4.f64\n# a: binary64 x2, b: binary64 x2, c: binary64, d: binary64\n"
            "7ff0000000000001 3ff0000000000000 fff8000000000123 0 8000000000000000 "
            "7ff4000000000001\n")
    rec = parse_rows(text, "x.txt")
    back = parse_rows(format_rows(rec), "y.txt")
    for x, y in zip((rec.a, rec.b, rec.c, rec.d), (back.a, back.b, back.c, back.d)):
        assert np.array_equal(x, y)
    assert int(back.d[0]) == 0x7FF4000000000001 and int(back.a[0, 0]) == 0x7FF0000000000001
    with pytest.raises(MmaprobeError, match=r"x.txt:3: expected 6 hex patterns"):
        parse_rows(text.replace(" 7ff4000000000001", ""), "x.txt")
    with pytest.raises(MmaprobeError, match=r"x.txt:3: pattern 1 .* not hex"):
        parse_rows(text.replace("7ff0000000000001", "zz"), "x.txt")


def test_recorded_device_identifies_the_h100(hwdata, capsys):
    """identify on the real H100's recorded rows (pool = the recording, nothing else asked)."""
    path = hwdata / "H100-ptx" / "mma_f16_f32_k8.txt"
    if not path.is_file():
        pytest.skip(f"{path} not in this copy of the dataset")
    dev = parse_device(f"recorded:{path}")
    assert dev.shape == ("binary16", "binary32", "binary32", 8)
    assert len(read_rows(path).c) == len(dev.rows[2])
    res = identify(dev, neighbourhood(*dev.shape), smt_seconds=30.0)
    assert res.status in ("identified", "equivalent", "undecided"), res.note
    assert "h100-fp16-fp32-k8" in res.presets


def test_survey_virtual_gpu(tmp_path, capsys):
    report = tmp_path / "r.md"
    code = main(["survey", "--device", "virtual:V100", "--instr", "v100-fp16-fp16",
                 "--pool", "300", "--random", "8", "--smt-seconds", "10", "-o", str(report)])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    text = report.read_text()
    assert "| v100-fp16-fp16 | binary16 -> binary16 | 4 |" in text and "23 (0)" in text
    raw = tmp_path / "r.raw"
    suite, obs = raw / "v100-fp16-fp16.suite.json", raw / "v100-fp16-fp16.observed.json"
    assert suite.is_file() and obs.is_file()
    assert main(["infer", str(suite), str(obs), "--json"]) == 0
    assert "v100-fp16-fp16" in json.loads(capsys.readouterr().out)["matching_presets"]
    assert main(["survey", "--device", "virtual:NoSuchGPU"]) == 2
    assert main(["survey", "--device", "preset:v100-fp16-fp16", "--instr", "x"]) == 2
    assert os.path.exists(report)


MODEL_HARNESS = (
    "import sys\n"
    "from mmaprobe.models.presets import get_preset\n"
    "from mmaprobe.vectors.suitefile import Observed, read_suite, write_observed\n"
    "from mmaprobe.models.accumulator import evaluate\n"
    "s = read_suite(sys.argv[1])\n"
    "cfg = get_preset(sys.argv[3] if len(sys.argv) > 3 else '{preset}').config\n"
    "assert s.operands == cfg.operands, (s.operands, cfg.operands)\n"
    "d = evaluate(cfg, s.a, s.b, s.c)\n"
    "write_observed(sys.argv[2], Observed(s.ids, d, s.out_format), s)\n")


@pytest.mark.parametrize("preset, flags", [
    ("h100-e4m3xe5m2-fp32-mma", ["--b", "e5m2"]),
    ("b200-e4m3-fp32-ue8m0-b32", ["--scale", "ue8m0", "--scale-block", "32"]),
])
def test_exec_harness_gets_b_format_and_scale_factors(preset, flags, tmp_path, capsys):
    """An exec: harness is handed b's own format and the scale factors (formats.b,
    formats.scale, scale_block, scale_a/scale_b): its outputs equal the preset's."""
    cfg = get_preset(preset).config
    rng = np.random.default_rng(7)
    n, k = 64, cfg.k
    sblock = cfg.scale_block
    width = k + (k // sblock if sblock else 0)
    a = rng.integers(0, 256, (n, width), dtype=np.uint64)
    b = rng.integers(0, 256, (n, width), dtype=np.uint64)
    if sblock:  # UE8M0 scale factors 2^-7 .. 2^7 after the K values
        a[:, k:] = rng.integers(120, 135, (n, width - k))
        b[:, k:] = rng.integers(120, 135, (n, width - k))
    c = rng.integers(0, 2**32, n, dtype=np.uint64)
    suite = tmp_path / "s.json"
    write_suite(suite, Suite(cfg.in_format, cfg.c_format, cfg.out_format, k,
                             [f"r{i}" for i in range(n)], a, b, c, [{"kind": "random"}] * n,
                             b_format=cfg.b_format, scale_format=cfg.scale_format,
                             scale_block=sblock))
    dev = _script(tmp_path, "model.py", MODEL_HARNESS.format(preset=preset))
    got, want = tmp_path / "exec.json", tmp_path / "model.json"
    assert main(["run", str(suite), "--device", dev, "-o", str(got)]) == 0
    assert main(["run", str(suite), "--preset", preset, "-o", str(want)]) == 0
    outs = [[o["d"] for o in json.loads(p.read_text())["outputs"]] for p in (got, want)]
    assert outs[0] == outs[1] and len(outs[0]) == n
    # identify and survey take the same operands for a device that knows no shape
    args = argparse.Namespace(device=dev, preset=None, config=None, device_timeout=60.0,
                              fin=cfg.in_format, fout=cfg.out_format, fc=None, k=cfg.k,
                              fb=dict(zip(flags, flags[1:])).get("--b"),
                              scale_format=dict(zip(flags, flags[1:])).get("--scale"),
                              scale_block=cfg.scale_block)
    shaped = device_from_args(args)
    assert shaped.operands == cfg.operands == shaped.runner.operands
    capsys.readouterr()
    assert main(["identify", "--device", dev, *flags]) == 2
    assert "give them with --in, --out and --k" in capsys.readouterr().err
