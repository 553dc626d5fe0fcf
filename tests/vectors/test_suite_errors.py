"""Bad suite / observed input: clear errors naming file and entry, exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmaprobe.vectors.cli import main

SUITE_ARGS = ["suite", "--in", "binary16", "--out", "binary32", "--k", "4", "--random", "8",
              "--pool", "100", "--smt-seconds", "0"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("suite")
    s, o = d / "s.json", d / "o.json"
    assert main(SUITE_ARGS + ["-o", str(s), "--layout", "matlab-tc", "--gpu", "V100"]) == 0
    assert main(["run", str(s), "--preset", "v100-fp16-fp32", "-o", str(o)]) == 0
    return d, s, o


def _fail(args, capsys, *needles):
    assert main(args) == 2
    err = capsys.readouterr().err
    for n in needles:
        assert n in err, err
    return err


def test_round_trip_and_d_file(files, capsys):
    d, s, o = files
    assert main(["infer", str(s), str(o), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "v100-fp16-fp32" in out["matching_presets"]
    # a matlab-tc d-file written by run -o is accepted as observed outputs too; run writes
    # nowhere but -o (the suite's layout record never chooses where)
    dfile = d / "s" / "V100" / "fp16" / "d_V100_fp32.txt"
    assert not dfile.exists()
    assert main(["run", str(s), "--preset", "v100-fp16-fp32", "-o", str(dfile)]) == 0
    assert main(["infer", str(s), str(dfile), "--report", str(d / "r.md")]) == 0
    assert "v100-fp16-fp32" in (d / "r.md").read_text()


def test_observed_id_mismatch(files, tmp_path, capsys):
    _, s, o = files
    data = json.loads(o.read_text())
    data["outputs"][3]["id"] = "nope"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    _fail(["infer", str(s), str(bad)], capsys, str(bad), "nope")


def test_observed_count_mismatch(files, tmp_path, capsys):
    _, s, o = files
    data = json.loads(o.read_text())
    dropped = data["outputs"].pop()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    _fail(["infer", str(s), str(bad)], capsys, str(bad), dropped["id"], "no output")


def test_observed_format_mismatch(files, tmp_path, capsys):
    _, s, o = files
    data = json.loads(o.read_text())
    data["formats"]["out"] = "binary16"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    _fail(["infer", str(s), str(bad)], capsys, str(bad), "output format")


def test_truncated_json(files, tmp_path, capsys):
    _, s, o = files
    bad = tmp_path / "trunc.json"
    bad.write_text(o.read_text()[: len(o.read_text()) // 2])
    _fail(["infer", str(s), str(bad)], capsys, str(bad), "truncated")
    bads = tmp_path / "strunc.json"
    bads.write_text(s.read_text()[:500])
    _fail(["run", str(bads), "--preset", "v100-fp16-fp32", "-o", str(tmp_path / "x.json")],
          capsys, str(bads))


def test_nan_payloads_rejected(files, tmp_path, capsys):
    _, s, o = files
    text = o.read_text()
    data = json.loads(text)
    vid = data["outputs"][0]["id"]
    bad = tmp_path / "nan.json"
    bad.write_text(text.replace(f'"d": "{data["outputs"][0]["d"]}"', '"d": NaN', 1))
    _fail(["infer", str(s), str(bad)], capsys, str(bad), "NaN")
    data["outputs"][0]["d"] = "0x1ffffffff"
    bad.write_text(json.dumps(data))
    _fail(["infer", str(s), str(bad)], capsys, str(bad), vid, "wider")


def test_bad_suite_entry_and_digest(files, tmp_path, capsys):
    _, s, _ = files
    data = json.loads(s.read_text())
    vid = data["vectors"][2]["id"]
    data["vectors"][2]["a"] = data["vectors"][2]["a"][:3]
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps(data))
    _fail(["run", str(bad), "--preset", "v100-fp16-fp32", "-o", str(tmp_path / "x.json")],
          capsys, str(bad), vid, "k=4")
    data = json.loads(s.read_text())
    data["vectors"][1]["c"] = "0x3f812345"
    bad.write_text(json.dumps(data))
    _fail(["run", str(bad), "--preset", "v100-fp16-fp32", "-o", str(tmp_path / "x.json")],
          capsys, str(bad), "digest")


def test_run_shape_mismatch_and_bad_device(files, tmp_path, capsys):
    _, s, _ = files
    _fail(["run", str(s), "--preset", "h100-fp16-fp32", "-o", str(tmp_path / "x.json")],
          capsys, "do not match")
    _fail(["identify", "--device", "h100-fp16-fp32"], capsys, "preset:NAME")
    _fail(["suite", "--in", "binary17", "--out", "binary32", "--k", "4", "-o",
           str(tmp_path / "y.json")], capsys, "binary17")


def test_suite_is_self_contained(files, tmp_path, monkeypatch, capsys):
    """A suite carries its probes (documents and digests), never a path of the machine that
    made it: infer elsewhere gives the same answer; an edited embedded probe is refused."""
    d, s, o = files
    text = s.read_text()
    assert str(d) not in text and str(Path.cwd()) not in text
    data = json.loads(text)
    gen = data["generator"]
    assert gen["probes"] and all("file" not in r for r in gen["probe_instances"])
    assert main(["infer", str(s), str(o), "--json"]) == 0
    here = json.loads(capsys.readouterr().out)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "s.json").write_text(text)
    (other / "o.json").write_text(o.read_text())
    monkeypatch.chdir(other)
    assert main(["infer", "s.json", "o.json", "--json"]) == 0
    there = json.loads(capsys.readouterr().out)
    assert there["decided"] == here["decided"] and there["consistent"] == here["consistent"]
    pid = next(iter(gen["probes"]))
    gen["probes"][pid]["title"] = "edited"
    (other / "s.json").write_text(json.dumps(data))
    _fail(["infer", "s.json", "o.json"], capsys, "s.json", pid, "edited")
