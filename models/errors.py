"""The project's error types: every one means bad input and maps to exit code 2."""

from __future__ import annotations

from pathlib import Path


class MmaprobeError(Exception):
    """Base of all input and usage errors (the CLI prints the message and exits 2)."""


class InputError(MmaprobeError, ValueError):
    """Malformed or inconsistent input data: files, rows, shapes, names."""


class SchemaError(InputError):
    """A YAML file that does not follow its schema (file, line, field, what was expected)."""


#: Largest text file read whole (suite and observed JSON, data files).
MAX_TEXT_BYTES = 512 << 20


def read_text(path: str | Path, what: str, limit: int = MAX_TEXT_BYTES,
              error: type[InputError] = InputError) -> str:
    """A regular file's UTF-8 text of at most ``limit`` bytes, or an ``error`` naming the
    file and what it should have held."""
    p = Path(path)
    try:
        if not p.is_file():
            kind = "a directory" if p.is_dir() else ("not found" if not p.exists()
                                                     else "not a regular file")
            raise error(f"{p}: cannot read {what}: {kind}")
        with p.open("rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as e:
        raise error(f"{p}: cannot read {what}: {e.strerror}") from None
    if len(raw) > limit:
        raise error(f"{p}: {what} larger than {limit >> 20} MiB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{p}: {what} is not UTF-8 text (byte {e.start})") from None
