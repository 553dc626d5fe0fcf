"""The one YAML reader: libyaml for the files mmaprobe ships, the Python parser for the rest."""

from pathlib import Path

import pytest
import yaml

from mmaprobe.models import yamldoc
from mmaprobe.models.errors import SchemaError

ROOT = Path(yamldoc.__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "probes").rglob("*.yaml")) + sorted((ROOT / "models").rglob("*.yaml"))


def test_shipped_files_read_alike_by_both_parsers(monkeypatch) -> None:
    # the same data and the same line of every field, whichever parser composed the nodes
    assert len(SHIPPED) > 20
    fast = [[(d.data, d.lines) for d in yamldoc.load_docs(f)] for f in SHIPPED]
    monkeypatch.setattr(yamldoc, "_loader", lambda source, text_given: yaml.SafeLoader)
    assert fast == [[(d.data, d.lines) for d in yamldoc.load_docs(f)] for f in SHIPPED]


def test_user_files_go_through_the_python_parser(tmp_path: Path) -> None:
    # libyaml's composer recurses in C: a deeply nested user file must meet the Python
    # parser's RecursionError (a clear error), never a crash of the interpreter
    p = tmp_path / "deep.yaml"
    p.write_text("[" * 100_000 + "]" * 100_000)
    assert yamldoc._loader(p, False) is yaml.SafeLoader
    with pytest.raises(SchemaError, match="nested too deeply"):
        yamldoc.load_docs(p)
    assert yamldoc._loader(SHIPPED[0], True) is yaml.SafeLoader  # text given: not a file
    if yaml.__with_libyaml__:
        assert yamldoc._loader(SHIPPED[0], False) is yaml.CSafeLoader
