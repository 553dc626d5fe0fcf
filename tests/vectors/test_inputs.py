"""The mechanisms behind the hostile-input promise (tests/hostile runs the command lines):
argument types, limits, outputs written whole or not at all, strict readers."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pytest

from mmaprobe.models import limits
from mmaprobe.models.errors import InputError
from mmaprobe.models.formats import get_format
from mmaprobe.vectors import cliargs, output
from mmaprobe.vectors.cli import EXIT_BROKEN_PIPE, main
from mmaprobe.vectors.matlab_tc import convert_exact, read_hex_rows
from mmaprobe.vectors.suitefile import read_json


@pytest.mark.parametrize("kind, text, value", [
    (cliargs.positive_int, "7", 7), (cliargs.count, "0", 0), (cliargs.seed, "0", 0),
    (cliargs.k_value, "1024", 1024), (cliargs.finite_float, "-2.5e3", -2500.0),
    (cliargs.seconds, "0", 0.0), (cliargs.timeout, "1e-3", 1e-3),
    (cliargs.folder_name, "H100", "H100"),
])
def test_argument_types_accept(kind, text, value) -> None:
    assert kind(text) == value


@pytest.mark.parametrize("kind, text", [
    (cliargs.positive_int, "0"), (cliargs.positive_int, "-1"), (cliargs.positive_int, "1.0"),
    (cliargs.positive_int, "1e3"), (cliargs.count, "-5"), (cliargs.seed, "-1"),
    (cliargs.seed, str(1 << 64)), (cliargs.k_value, "1025"), (cliargs.k_value, "0"),
    (cliargs.finite_float, "nan"), (cliargs.finite_float, "inf"),
    (cliargs.finite_float, "1e999"), (cliargs.seconds, "-1"), (cliargs.seconds, "nan"),
    (cliargs.seconds, "1e12"), (cliargs.timeout, "0"), (cliargs.timeout, "inf"),
    (cliargs.name, "  "), (cliargs.folder_name, "../x"), (cliargs.folder_name, "/abs"),
    (cliargs.folder_name, ".."), (cliargs.folder_name, ""),
])
def test_argument_types_refuse(kind, text) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected"):
        kind(text)


def test_limits_name_their_variable(monkeypatch) -> None:
    with pytest.raises(InputError, match="MMAPROBE_MAX_PRODUCTS"):
        limits.ROWS.check(1 << 30, "--pool", 4)
    monkeypatch.setenv("MMAPROBE_MAX_PRODUCTS", str(1 << 32))
    limits.ROWS.check(1 << 30, "--pool", 4)
    monkeypatch.setenv("MMAPROBE_MAX_PRODUCTS", "lots")
    with pytest.raises(InputError, match="MMAPROBE_MAX_PRODUCTS"):
        limits.ROWS.check(1, "--pool", 4)


def test_write_files_all_or_none(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "b.txt").write_text("OLD")
    calls = []

    def failing_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    files = {tmp_path / "new" / "a.txt": "A", tmp_path / "b.txt": "B"}
    with pytest.raises(InputError, match="b.txt: cannot write the x: No space left"):
        output.write_files(files, "x", make_dirs=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt"]  # no temp, no new/
    assert (tmp_path / "b.txt").read_text() == "OLD"
    monkeypatch.undo()
    output.write_files(files, "x", make_dirs=True)
    assert (tmp_path / "new" / "a.txt").read_text() == "A"
    assert (tmp_path / "b.txt").read_text() == "B"


def test_check_output(tmp_path: Path) -> None:
    src = tmp_path / "in.json"
    src.write_text("{}")
    with pytest.raises(InputError, match="overwrite an input"):
        output.check_output(tmp_path / "." / "in.json", "suite", [src])
    for bad, why in ((tmp_path, "is a directory"), (tmp_path / "no" / "x", "does not exist"),
                     ("/dev/full", "not a regular file"), ("", "empty file name"),
                     (tmp_path / ("x" * 300), "too long")):
        with pytest.raises(InputError, match=why):
            output.check_output(bad, "suite")


def test_read_json_strict(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    for text, why in (('{"k": 8, "k": 4}', "duplicate key 'k'"),
                      ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
                      ('{"x": NaN}', "non-JSON constant NaN")):
        p.write_text(text)
        with pytest.raises(InputError, match=why):
            read_json(p, "suite")
    p.write_text('\ufeff{"k": 4}')
    assert read_json(p, "suite") == {"k": 4}


def test_hex_rows_strict_with_lines(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    for word in ("-0000001", "3c00", "+3f80000", "3f80_000", "0x3f8000", "3f8000000"):
        p.write_text("3f800000 3f800000\n\n" + word + " 3f800000\n")
        with pytest.raises(InputError, match=r"a.txt:3: word 1: expected 8 hex digits"):
            read_hex_rows(p)
    p.write_text("3f800000 3f800000\n\n3f800000 3f800001\n")
    lines: list[int] = []
    rows = read_hex_rows(p, lines=lines)
    assert lines == [1, 3]
    with pytest.raises(InputError, match=r"a.txt:3: word 2: value .* not representable"):
        convert_exact(rows, get_format("binary32"), get_format("binary16"), p, lines=lines)


def test_broken_pipe_exits_quietly(monkeypatch, capsys) -> None:
    def closed(*_a, **_k):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("mmaprobe.vectors.cmd_models.cmd_presets", closed)
    monkeypatch.setattr(os, "dup2", lambda *a: None)  # keep pytest's stdout
    assert main(["presets"]) == EXIT_BROKEN_PIPE
    assert "Traceback" not in capsys.readouterr().err


def test_eval_takes_a_negative_first_value(capsys) -> None:
    assert main(["eval", "--preset", "v100-fp16-fp32", "--a", "-1.5,2,3,4",
                 "--b", "1,1,1,1"]) == 0
    assert "d = 0x40f00000" in capsys.readouterr().out


def test_gemm_matrices_checked_before_reading(tmp_path: Path, capsys) -> None:
    header = ("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }"
              .ljust(117) + "\n")
    (tmp_path / "A.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                                     + header.encode())
    np.savetxt(tmp_path / "B.txt", np.ones((4, 1)))
    assert main(["gemm", "--preset", "v100-fp16-fp32", "--A", str(tmp_path / "A.npy"),
                 "--B", str(tmp_path / "B.txt")]) == 2
    assert "A.npy" in capsys.readouterr().err
