"""Rows files: recorded dot products as hex rows, one instruction per file.

The layout of the real-H100 recording (shared/hwdata/H100-ptx) and of ``survey``'s raw
outputs::

    # mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
    # a: binary16 x16, b: binary16 x16, c: binary32, d: binary32; hex bit patterns ...
    3c00 0000 ... (K hex patterns of a) ... (K of b) c d

The first line names the instruction, the second the formats (tf32 in its 32-bit binary32
container); every following line is one row ``d = c + sum a_i*b_i``.  Bit patterns stay
exact (NaN payloads included) through reading and writing.

>>> import io
>>> text = ("# mma.m8n8k4.f64\\n# a: binary64 x1, b: binary64 x1, c: binary64, d: binary64\\n"
...         "3ff0000000000000 4000000000000000 0 4000000000000000\\n")
>>> rec = parse_rows(text, "x.txt")
>>> rec.instruction, rec.formats, rec.k, hex(int(rec.d[0]))
('mma.m8n8k4.f64', ('binary64', 'binary64', 'binary64', 'binary64'), 1, '0x4000000000000000')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mmaprobe.models.errors import InputError, read_text
from mmaprobe.models.formats import FormatError, get_format

_FORMATS = re.compile(r"#\s*a:\s*(\S+)\s+x(\d+),\s*b:\s*(\S+)\s+x(\d+),\s*c:\s*([^,;\s]+),"
                      r"\s*d:\s*([^,;\s]+)")


@dataclass
class RowsFile:
    """One instruction's recorded rows: formats (a, b, c, d), K and the bit patterns."""

    instruction: str
    formats: tuple[str, str, str, str]
    k: int
    a: np.ndarray  # uint64 (N, K)
    b: np.ndarray
    c: np.ndarray  # uint64 (N,)
    d: np.ndarray
    source: str = ""


def parse_rows(text: str, source: str) -> RowsFile:
    """A rows file's text -> RowsFile; errors name the file, the line and what was wrong."""
    lines = text.splitlines()
    if len(lines) < 2 or not lines[0].startswith("#"):
        raise InputError(f"{source}:1: expected '# <instruction>' and a formats line")
    instruction = lines[0][1:].strip()
    m = _FORMATS.match(lines[1].strip())
    if not m:
        raise InputError(f"{source}:2: expected '# a: FORMAT xK, b: FORMAT xK, c: FORMAT, "
                         f"d: FORMAT'")
    try:
        fa, fb, fc, fd = (get_format(m.group(i)) for i in (1, 3, 5, 6))
    except FormatError as e:
        raise InputError(f"{source}:2: {e}") from None
    k = int(m.group(2))
    if k < 1 or int(m.group(4)) != k:
        raise InputError(f"{source}:2: a and b must have the same positive K")
    widths = [fa] * k + [fb] * k + [fc, fd]
    rows = []
    for lineno, line in enumerate(lines[2:], 3):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) != 2 * k + 2:
            raise InputError(f"{source}:{lineno}: expected {2 * k + 2} hex patterns "
                             f"(a x{k}, b x{k}, c, d), got {len(words)}")
        row = []
        for j, (w, fmt) in enumerate(zip(words, widths)):
            if not re.fullmatch(r"[0-9a-fA-F]{1,16}", w):
                raise InputError(f"{source}:{lineno}: pattern {j + 1} {w[:20]!r} is not hex")
            x = int(w, 16)
            if x >> fmt.width:
                raise InputError(f"{source}:{lineno}: pattern {j + 1} {w} is wider than "
                                 f"{fmt.name}'s {fmt.width} bits")
            row.append(x)
        rows.append(row)
    if not rows:
        raise InputError(f"{source}: no rows")
    arr = np.array(rows, dtype=np.uint64)
    return RowsFile(instruction, (fa.name, fb.name, fc.name, fd.name), k, arr[:, :k],
                    arr[:, k:2 * k], arr[:, 2 * k], arr[:, 2 * k + 1], source)


def read_rows(path: str | Path) -> RowsFile:
    return parse_rows(read_text(path, "rows file"), str(path))


def format_rows(rec: RowsFile) -> str:
    """The text of a rows file (what :func:`parse_rows` reads back, bit for bit)."""
    fa, fb, fc, fd = (get_format(f) for f in rec.formats)
    digits = [(f.width + 3) // 4 for f in (fa, fb, fc, fd)]
    lines = [f"# {rec.instruction}",
             f"# a: {fa.name} x{rec.k}, b: {fb.name} x{rec.k}, c: {fc.name}, d: {fd.name}; "
             f"hex bit patterns (tf32 as its binary32 container)"]
    for i in range(len(rec.c)):
        words = ([f"{int(x):0{digits[0]}x}" for x in rec.a[i]]
                 + [f"{int(x):0{digits[1]}x}" for x in rec.b[i]]
                 + [f"{int(rec.c[i]):0{digits[2]}x}", f"{int(rec.d[i]):0{digits[3]}x}"])
        lines.append(" ".join(words))
    return "\n".join(lines) + "\n"
