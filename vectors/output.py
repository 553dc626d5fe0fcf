"""Writing result files: checked before the work, written whole or not at all.

:func:`check_writable` is called before a long computation, so that an unwritable ``-o``
fails in a second, not after minutes; :func:`write_atomic` writes to a temporary file in the
same directory and renames it over the target, so that a failure (full disk, interrupt)
leaves the old file intact and never a truncated one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from mmaprobe.models.errors import InputError


def check_writable(path: str | Path, what: str = "output") -> Path:
    """The path, after checking that a file can be created there (InputError if not)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory; give a file name for the {what}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{p}: directory {parent} does not exist (for the {what})")
    if p.exists() and not p.is_file():
        raise InputError(f"{p}: not a regular file; give a file name for the {what}")
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"{p}: not writable (for the {what})")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{p}: cannot create files in {parent} (for the {what})")
    return p


def write_atomic(path: str | Path, data: str | bytes, what: str = "output") -> None:
    """Write data to path whole: a temporary file beside it, then a rename."""
    p = check_writable(path, what)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"{p}: cannot write the {what}: {e.strerror or e}") from None
