"""Recorded outputs, one file per PTX instruction (the layout of shared/hwdata/H100-ptx).

A file starts with two comment lines: the exact PTX instruction, then the formats
(``# a: e4m3 x32, b: e5m2 x32, c: binary32, d: binary32; ...``).  Every other non-empty line
is one dot product ``d = c + sum a_i*b_i``: K hex bit patterns of a, K of b, then c and the
hardware's d, each in its own format (tf32 in its 32-bit container).  A folder of such files
is named ``<DEVICE>-ptx`` (e.g. ``H100-ptx``).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "mma_f16_f32_k8.txt"
>>> _ = p.write_text("# mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32\\n"
...                  "# a: binary16 x8, b: binary16 x8, c: binary32, d: binary32; hex\\n"
...                  + " ".join(["3c00"] * 16) + " 00000000 41000000\\n")
>>> f = read_ptx_file(p)
>>> f.instruction, f.a_format, f.k, hex(int(f.d[0]))
('mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32', 'binary16', 8, '0x41000000')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mmaprobe.models.errors import InputError, read_text
from mmaprobe.models.formats import FormatError, get_format

#: the suffix of a folder of per-instruction files; the device is the name before it
FOLDER_SUFFIX = "-ptx"

_FORMATS = re.compile(r"#\s*a:\s*(\S+)\s+x(\d+)\s*,\s*b:\s*(\S+)\s+x(\d+)\s*,\s*c:\s*(\S+?)\s*,"
                      r"\s*d:\s*([^;\s]+)")


@dataclass
class PtxFile:
    """The rows of one instruction's file."""

    path: Path
    instruction: str
    a_format: str
    b_format: str
    c_format: str
    d_format: str
    a: np.ndarray  # uint64 (N, K)
    b: np.ndarray
    c: np.ndarray  # uint64 (N,)
    d: np.ndarray

    @property
    def k(self) -> int:
        return int(self.a.shape[1])

    @property
    def rows(self) -> int:
        return int(self.a.shape[0])


def read_ptx_file(path: str | Path) -> PtxFile:
    """One per-instruction file; errors name the file, the line and what was expected."""
    p = Path(path)
    lines = read_text(p, "recorded PTX outputs").splitlines()
    if len(lines) < 2 or not lines[0].startswith("#"):
        raise InputError(f"{p}:1: expected '# <PTX instruction>' as the first line")
    instr = lines[0].lstrip("#").strip()
    m = _FORMATS.match(lines[1].strip())
    if not m:
        raise InputError(f"{p}:2: expected '# a: FORMAT xK, b: FORMAT xK, c: FORMAT, "
                         f"d: FORMAT; ...', got {lines[1][:60]!r}")
    fa, ka, fb, kb, fc, fd = m.groups()
    if ka != kb:
        raise InputError(f"{p}:2: a has {ka} values per row but b has {kb}")
    try:
        fmts = [get_format(x) for x in (fa, fb, fc, fd)]
    except FormatError as e:
        raise InputError(f"{p}:2: {e}") from None
    k = int(ka)
    widths = [f.width for f in fmts]
    rows = []
    for lineno, line in enumerate(lines[2:], 3):
        words = line.split()
        if not words or line.lstrip().startswith("#"):
            continue
        if len(words) != 2 * k + 2:
            raise InputError(f"{p}:{lineno}: expected {2 * k + 2} hex values (a x{k}, b x{k}, "
                             f"c, d), got {len(words)}")
        try:
            vals = [int(w, 16) for w in words]
        except ValueError:
            raise InputError(f"{p}:{lineno}: expected hex bit patterns, got "
                             f"{line.strip()[:60]!r}") from None
        for j, v in enumerate(vals):
            w = widths[0] if j < k else widths[1] if j < 2 * k else widths[2 + j - 2 * k]
            if v >> w:
                raise InputError(f"{p}:{lineno}: value {j + 1} ({words[j]}) is wider than "
                                 f"{w} bits")
        rows.append(vals)
    if not rows:
        raise InputError(f"{p}: no rows")
    arr = np.array(rows, dtype=np.uint64)
    return PtxFile(p, instr, *(f.name for f in fmts), arr[:, :k], arr[:, k:2 * k],
                   arr[:, 2 * k], arr[:, 2 * k + 1])


def find_ptx_folders(root: Path) -> list[tuple[str, Path]]:
    """(device, folder) for every ``<DEVICE>-ptx`` folder in root (or root itself)."""
    root = Path(root)
    folders = [root] if root.name.endswith(FOLDER_SUFFIX) else sorted(
        p for p in root.iterdir() if p.is_dir() and p.name.endswith(FOLDER_SUFFIX))
    return [(f.name[:-len(FOLDER_SUFFIX)], f) for f in folders]
