"""The literature's instruction tables (models/instructions.yaml) against the presets."""

from __future__ import annotations

from collections import Counter

import pytest

from mmaprobe.models.errors import InputError
from mmaprobe.models.instruction_table import (
    NEEDS,
    NotExpressible,
    config_mismatches,
    implied_config,
    load_rows,
    needs,
)
from mmaprobe.models.presets import get_preset

ROWS = load_rows()


def test_rows_per_source():
    counts = Counter(r.source for r in ROWS)
    # [XWYY25] Table IV has 49 (instruction, architecture) cells; MMA-Sim's ISA tables list
    # 223 distinct variants (RTX Blackwell's f8 x f8 m16n8k32 appear there twice).
    assert counts["[XWYY25] Table IV"] == 49
    assert counts["[XWYY25] ISA table"] == 223
    assert counts["[XWYY25] Table III"] == 258
    assert counts["[KM25] Table II"] == 77
    assert counts["[KM25] Table II note"] == 9


def test_rows_are_distinct():
    keys = Counter((r.source, r.architecture, r.device, r.instruction, r.a_format, r.b_format,
                    r.c_format, r.d_format, r.k) for r in ROWS)
    dup = [k for k, n in keys.items() if n > 1]
    assert not dup, f"duplicate rows: {dup}"


def test_every_row_is_expressible():
    """b_format, block scaling and GPS without flushes are in the vocabulary: every row's
    stated fields form a configuration."""
    bad = []
    for r in ROWS:
        try:
            cfg = implied_config(r)
        except NotExpressible as e:
            assert e.need in NEEDS, r.label()
            bad.append(f"{r.label()}: {e}")
            continue
        assert cfg["k"] == r.k and cfg["in_format"] == r.a_format, r.label()
        assert cfg["b_format"] == r.b_format, r.label()
    assert not bad, "\n".join(bad)


def test_named_presets_match_their_rows():
    bad = []
    for r in ROWS:
        if r.preset is None:
            continue
        try:
            p = get_preset(r.preset)
        except InputError as e:
            bad.append(f"{r.label()}: {e}")
            continue
        c = p.config
        if (p.device, c.in_format, c.b_fmt, c.c_format, c.out_format, c.k) != (
                r.device, r.a_format, r.b_format, r.c_format, r.d_format, r.k):
            bad.append(f"{r.label()}: preset {p.name} is {p.device} {c.in_format}x{c.b_fmt}, "
                       f"c {c.c_format}, d {c.out_format}, K={c.k}")
            continue
        try:
            diff = config_mismatches(r, c)
        except NotExpressible as e:
            diff = [f"row not expressible ({e})"]
        if diff:
            bad.append(f"{r.label()}: preset {p.name}: {'; '.join(diff)}")
    assert not bad, "rows whose preset disagrees with the table:\n" + "\n".join(bad)


def test_every_row_has_a_preset():
    missing = [r for r in ROWS if r.preset is None]
    if not missing:
        return
    by_need: dict[str, list[str]] = {}
    for r in missing:
        by_need.setdefault(needs(r) or "expressible now", []).append(r.label())
    summary = ", ".join(f"{k}: {len(v)}" for k, v in sorted(by_need.items()))
    lines = [f"{len(missing)} of {len(ROWS)} table rows have no preset ({summary})"]
    for need, labels in sorted(by_need.items()):
        lines.append(f"-- {need}:")
        lines += [f"   {x}" for x in labels]
    pytest.fail("\n".join(lines), pytrace=False)


# ---------------------------------------------------------------- the loader's messages
GOOD = """rows:
  - {source: "[XWYY25] Table III", architecture: Ampere, device: A100,
     instruction: "HMMA.16816.F32", a_format: binary16, b_format: binary16,
     c_format: binary32, d_format: binary32, k: 16, algorithm: CoFDA,
     params: {F: 24, nfma: 8}, preset: a100-fp16-fp32-k16}
"""


@pytest.mark.parametrize("old,new,message", [
    ("k: 16", "k: 0", "t.yaml:4: k: got 0, expected a positive integer"),
    ("a_format: binary16", "a_format: fp17", "t.yaml:3: a_format: got 'fp17'"),
    ("a_format: binary16", "a_format: fp16", "expected the canonical name 'binary16'"),
    ("algorithm: CoFDA", "algorithm: FMA", "t.yaml:4: algorithm: got 'FMA', expected one of"),
    ("{F: 24, nfma: 8}", "{F: 24}", "t.yaml:5: params: got {'F': 24}, expected CoFDA with nfma"),
    ("{F: 24, nfma: 8}", "{F: 24, nfma: 8, G: 2}", "parameters of CoFDA only"),
    ("device: A100", "device: A101", "t.yaml:2: device: got 'A101'"),
    ("source: \"[XWYY25] Table III\"", "source: Table III", "t.yaml:2: source:"),
    (", preset: a100-fp16-fp32-k16", "", "t.yaml:2: preset: missing"),
    ("preset:", "colour: red, preset:", "t.yaml:5: colour: got 'red', expected no such field"),
    ("params: {F: 24, nfma: 8}", "params: {F: 24, nfma: [8}", "t.yaml:5: malformed YAML"),
])
def test_loader_names_file_line_and_field(tmp_path, old, new, message):
    assert old in GOOD
    p = tmp_path / "t.yaml"
    p.write_text(GOOD.replace(old, new))
    with pytest.raises(InputError) as e:
        load_rows(p)
    assert message in str(e.value)


def test_loader_accepts_the_sample(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text(GOOD)
    (r,) = load_rows(p)
    assert r.where == "t.yaml:2" and r.k == 16 and r.params == {"F": 24, "nfma": 8}
    assert config_mismatches(r, get_preset(r.preset).config) == []
