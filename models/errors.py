"""The project's error types (every one means bad input and maps to exit code 2), and the
file readers that turn I/O and syntax failures into them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class MmaprobeError(Exception):
    """Base of all input and usage errors (the CLI prints the message and exits 2)."""


class InputError(MmaprobeError, ValueError):
    """Malformed or inconsistent input data: files, rows, shapes, names."""


def read_text(path: str | Path, what: str) -> str:
    """A file's text, or an InputError naming the file and what it should have held."""
    p = Path(path)
    try:
        return p.read_text()
    except OSError as e:
        raise InputError(f"{p}: cannot read {what}: {e.strerror}") from None


def load_yaml(path: str | Path, what: str) -> Any:
    """Parsed YAML, or an InputError naming the file and line of the syntax error."""
    text = read_text(path, what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise InputError(f"{where}: malformed YAML {what}: "
                         f"{getattr(e, 'problem', None) or e}") from None
