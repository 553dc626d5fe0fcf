"""The README's Python API example and eval example run as written."""

from __future__ import annotations

import re
from pathlib import Path

from mmaprobe.vectors.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def test_python_api_block_runs():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})


def test_eval_example_output(capsys):
    text = README.read_text()
    m = re.search(r"\$ mmaprobe (eval .*)\n(?:.*\n)*?(d = .*)\n", text)
    assert m, "README eval example not found"
    assert main(m.group(1).split()) == 0
    assert m.group(2) in capsys.readouterr().out
