"""Writing result files: checked before the work, written whole or not at all.

Every file mmaprobe writes (suites, observed outputs, d-files, MATLAB-layout files, probes,
reports) goes through this module:

- :func:`check_output` is called before a long computation, so that an unwritable ``-o``
  (a missing directory, a directory, a device such as /dev/full, a read-only file, a name
  too long) fails in a second, not after minutes, and so that no command overwrites one of
  its own inputs (``run S -o S``, ``suite --space X -o X``);
- :func:`write_atomic` writes to a temporary file in the same directory and renames it
  over the target, so that a failure (full disk, file-size limit, interrupt) leaves the old
  file intact and never a truncated one; :func:`write_files` does the same for a group of
  files that belong together (a suite and its layout files): all of them, or none.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> write_atomic(d / "x.txt", "hello\\n")
>>> (d / "x.txt").read_text()
'hello\\n'
>>> check_output(d / "x.txt", "report", inputs=[d / "x.txt"])
Traceback (most recent call last):
...
mmaprobe.models.errors.InputError: ...x.txt: the report would overwrite an input of this \
command; choose another file
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from mmaprobe.models.errors import InputError

PathLike = str | Path


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def check_writable(path: PathLike, what: str = "output") -> Path:
    """The path, after checking that a file can be created there (InputError if not)."""
    if str(path) == "":
        raise InputError(f"empty file name for the {what}")
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{p}: is a directory; give a file name for the {what}")
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            why = "is not a directory" if parent.exists() else "does not exist"
            raise InputError(f"{p}: directory {parent} {why} (for the {what})")
        if p.exists() and not p.is_file():
            raise InputError(f"{p}: not a regular file; give a file name for the {what}")
        if p.exists() and not os.access(p, os.W_OK):
            raise InputError(f"{p}: not writable (for the {what})")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise InputError(f"{p}: cannot create files in {parent} (for the {what})")
    except FileNotFoundError:
        pass
    except OSError as e:
        raise InputError(f"{p}: cannot write the {what}: {_why(e)}") from None
    return p


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether two paths name the same file (through links and relative paths)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        try:
            return Path(a).resolve() == Path(b).resolve()
        except (OSError, RuntimeError):
            return False


def check_output(path: PathLike, what: str, inputs: Iterable[PathLike | None] = ()) -> Path:
    """check_writable, and an InputError when path is one of the command's inputs."""
    p = check_writable(path, what)
    for src in inputs:
        if src is not None and str(src) and same_file(p, src):
            raise InputError(f"{p}: the {what} would overwrite an input of this command; "
                             f"choose another file")
    return p


def check_creatable(path: PathLike, what: str, inputs: Iterable[PathLike | None] = ()
                    ) -> Path:
    """check_output for a file whose directories :func:`write_files` may still have to
    create: the nearest existing ancestor must be a writable directory."""
    p = Path(path)
    missing = _missing_dirs(p)
    if not missing:
        return check_output(p, what, inputs)
    top = missing[0]
    try:
        if top.is_symlink():
            raise InputError(f"{p}: {top} is a dangling link (for the {what})")
        check_writable(top, what)
    except OSError as e:
        raise InputError(f"{p}: cannot write the {what}: {_why(e)}") from None
    return p


def write_atomic(path: PathLike, data: str | bytes, what: str = "output") -> None:
    """Write data to path whole: a temporary file beside it, then a rename."""
    write_files({path: data}, what)


def _missing_dirs(p: Path) -> list[Path]:
    """The ancestors of p that do not exist yet, outermost first."""
    out: list[Path] = []
    d = p.parent
    try:
        while str(d) not in ("", ".", "/") and not d.exists() and len(out) < 64:
            out.append(d)
            d = d.parent
    except OSError:
        pass  # an over-long name: check_writable reports it
    return out[::-1]


def write_files(files: dict[PathLike, str | bytes], what: str = "output",
                make_dirs: bool = False) -> None:
    """Write a group of files whole, all or none: every one is checked, written to a
    temporary file beside its target, and only when all are written are they renamed into
    place.  With make_dirs, missing parent directories are created (and removed again if
    the writing fails)."""
    paths = {Path(p): (d.encode() if isinstance(d, str) else d) for p, d in files.items()}
    created: list[Path] = []
    temps: list[str] = []
    current = next(iter(paths), Path(""))
    done = False
    try:
        if make_dirs:
            for p in paths:
                current = p
                for d in _missing_dirs(p):
                    if d.is_symlink():
                        raise InputError(f"{p}: {d} is a dangling link (for the {what})")
            for p in paths:
                current = p
                for d in _missing_dirs(p):
                    check_writable(d, what)
                    d.mkdir()
                    created.append(d)
        for p in paths:
            check_writable(p, what)
        staged = []
        for p, raw in paths.items():
            current = p
            fd, tmp = tempfile.mkstemp(prefix=f".{p.name[:100]}.", suffix=".tmp",
                                       dir=p.parent if str(p.parent) else ".")
            temps.append(tmp)
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
                fh.flush()
                os.fsync(fh.fileno())
            staged.append((tmp, p))
        for tmp, p in staged:
            current = p
            os.replace(tmp, p)
        done = True
    except OSError as e:
        raise InputError(f"{current}: cannot write the {what}: {_why(e)}") from None
    finally:
        if not done:
            for tmp in temps:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            for d in reversed(created):
                try:
                    d.rmdir()
                except OSError:
                    pass

