"""The MATLAB-tensor-core ``model_validation`` layout: reading and writing hex/binary rows.

``<DIR>/<GPU>/<informat>/`` holds ``a_<GPU>_<informat>.txt`` and ``b_...`` (K binary32 hex
patterns per line, each an input-format value), ``c_<GPU>_fp32.txt`` (one 32-character
binary string per line) and ``d_<GPU>_fp32.txt`` / ``d_<GPU>_fp16.txt`` (outputs as binary32
binary strings; fp16 outputs converted exactly).  See shared/hwdata/README.md.

mmaprobe's extensions for inputs the dataset does not have: a and b in different formats
live in ``<informat of a>x<informat of b>/`` (each file holding its own format's values), and
block-scaled suites add ``sa_...`` / ``sb_...`` with the raw scale-factor bit patterns (one
8-digit hex word per scale factor; UE8M0 and UE4M3 patterns have no exact binary32 twin for
every bit).  NaNs keep their payloads through binary32 (:func:`nan_convert`).
"""

from __future__ import annotations

import io
import re
from array import array
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from mmaprobe.models import limits
from mmaprobe.models.errors import InputError, read_text
from mmaprobe.models.formats import Format, get_format

from .output import write_atomic

BINARY32 = get_format("binary32")

#: folder names of the dataset's input formats
FOLDER_FORMATS = {"fp16": "binary16", "bf16": "bfloat16", "tf32": "tf32", "e4m3": "e4m3",
                  "e5m2": "e5m2", "fp32": "binary32", "fp64": "binary64",
                  # formats the MATLAB dataset does not have, named as mmaprobe names them
                  "e4m3fnuz": "e4m3fnuz", "e5m2fnuz": "e5m2fnuz", "e2m3": "e2m3",
                  "e3m2": "e3m2", "e2m1": "e2m1"}
#: output file suffixes
OUTPUT_FORMATS = {"fp32": "binary32", "fp16": "binary16"}
KNOWN_GPUS = ("V100", "A100", "A2", "A30", "Ada", "L40S", "H100", "H200", "B200")


_HEX_WORD = re.compile(r"[0-9a-fA-F]{8}")
_BIN_WORD = re.compile(r"[01]{32}")


def read_hex_rows(path: Path, k: int | None = None, lines: Any = None) -> np.ndarray:
    """Lines of whitespace-separated 8-digit hex words -> uint64 array (N, K); the line
    number of each row is appended to ``lines`` when given.  Blank lines are skipped;
    anything else that is not K words of exactly 8 hex digits is an error naming the
    file and line.  Rows are packed as they are read (8 bytes a word)."""
    words_out = array("Q")
    n = 0
    for lineno, line in enumerate(io.StringIO(_text(path)), 1):
        words = line.split()
        if not words:
            continue
        if k is not None and len(words) != k:
            raise InputError(f"{path}:{lineno}: expected {k} hex values, got {len(words)}")
        if k is None:
            k = len(words)
        for j, w in enumerate(words):
            if not _HEX_WORD.fullmatch(w):
                raise InputError(f"{path}:{lineno}: word {j + 1}: expected 8 hex digits (a "
                                 f"binary32 bit pattern), got {w[:20]!r}")
        words_out.extend(int(w, 16) for w in words)
        n += 1
        if lines is not None:
            lines.append(lineno)
        limits.VECTORS.check(n, f"{path}:{lineno}")
    if not n:
        raise InputError(f"{path}: no rows")
    return np.frombuffer(words_out, dtype=np.uint64).reshape(n, k).copy()


def read_bin_rows(path: Path, lines: Any = None) -> np.ndarray:
    """Lines holding one 32-character binary string -> uint64 array (N,)."""
    out = array("Q")
    for lineno, line in enumerate(io.StringIO(_text(path)), 1):
        s = line.strip()
        if not s:
            continue
        if not _BIN_WORD.fullmatch(s):
            raise InputError(f"{path}:{lineno}: expected a 32-character binary string, "
                             f"got {s[:40]!r}")
        out.append(int(s, 2))
        if lines is not None:
            lines.append(lineno)
        limits.VECTORS.check(len(out), f"{path}:{lineno}")
    if not out:
        raise InputError(f"{path}: no rows")
    return np.frombuffer(out, dtype=np.uint64).copy()


def _text(path: Path) -> str:
    return read_text(path, "data file of the MATLAB-tensor-core layout")


def hex_rows_text(rows: np.ndarray) -> str:
    return "".join(" ".join(f"{int(x):08x}" for x in r) + " \n"
                   for r in np.asarray(rows, dtype=np.uint64))


def bin_rows_text(values: np.ndarray) -> str:
    return "".join(f"{int(v):032b}\n" for v in np.asarray(values, dtype=np.uint64))


def write_hex_rows(path: Path, rows: np.ndarray) -> None:
    write_atomic(path, hex_rows_text(rows), "hex-row file")


def write_bin_rows(path: Path, values: np.ndarray) -> None:
    write_atomic(path, bin_rows_text(values), "binary-row file")


def nan_convert(src: Format, dst: Format, bits: int) -> int:
    """A NaN of src as a NaN of dst, keeping its sign and payload where dst can hold them.

    Between IEEE-style formats the fraction (payload) moves with its top bit: widened by
    zero bits, or narrowed by dropping low bits (the quiet bit is set if nothing is left),
    so a narrow NaN written in a wider container and read back is the same pattern (the
    binary16 NaN 0x7fff is 0x7fffe000 in binary32, and back).  Formats with one NaN
    pattern per sign (E4M3) or one NaN (FNUZ, UE8M0) give that.

    >>> from mmaprobe.models.formats import get_format
    >>> h, s = get_format("binary16"), get_format("binary32")
    >>> hex(nan_convert(h, s, 0x7fff)), hex(nan_convert(s, h, 0x7fffe000))
    ('0x7fffe000', '0x7fff')
    """
    _, sign, frac, _ = src.decode(bits)
    if dst.kind != "ieee":
        return dst.nan_bits(sign if dst.kind == "fn" else 0)
    if src.kind != "ieee" and src.kind != "fn":
        frac = 0
    shift = dst.t - src.t
    frac = frac << shift if shift >= 0 else frac >> -shift
    if frac == 0:
        frac = 1 << (dst.t - 1)  # nothing of the payload left: the quiet NaN
    top = ((1 << dst.ebits) - 1) << dst.t
    return ((sign << (dst.bits - 1)) | top | frac) << dst.pad


def convert_exact(bits: np.ndarray, src: Format, dst: Format, path: Path | str = "",
                  mode: str | None = None, lines: Any = None) -> np.ndarray:
    """Re-encode patterns of src as patterns of dst; values must be exact unless mode is given.

    The same format is the identity on every pattern; NaNs keep their sign and payload
    where dst can hold them (:func:`nan_convert`), infinities map to dst's infinities.  An
    inexact value without a rounding mode is an error naming the file and line
    (``lines[row]`` when the reader recorded them, else row + 1) and, for rows of K words,
    the word.
    """
    bits = np.asarray(bits, dtype=np.uint64)
    if src.name == dst.name:
        return bits.copy()
    uniq, inverse = np.unique(bits, return_inverse=True)
    table = np.empty(len(uniq), dtype=np.uint64)
    for i, u in enumerate(uniq):
        cls, sign, _, _ = src.decode(int(u))
        if cls == "nan":
            table[i] = nan_convert(src, dst, int(u))
        elif cls == "inf":
            table[i] = dst.inf_bits(sign)
        elif cls == "zero":
            table[i] = dst.zero_bits(sign if dst.has_negative_zero else 0)
        else:
            x = src.to_fraction(int(u))
            y = dst.from_fraction(x, mode or "rne")
            if mode is None and dst.to_fraction(y) != x:
                where = np.nonzero(bits == u)
                row = int(where[0][0])
                line = lines[row] if lines is not None and row < len(lines) else row + 1
                word = f" word {int(where[1][0]) + 1}:" if bits.ndim == 2 else ""
                raise InputError(f"{path}:{line}:{word} value {float(x)!r} ({int(u):#x}) is "
                                 f"not representable in {dst.name}")
            table[i] = y
    return table[inverse].reshape(bits.shape)


@dataclass
class DataSet:
    """One GPU / input format / output format combination of the dataset."""

    gpu: str
    folder: str
    in_format: str
    out_format: str
    a: np.ndarray  # binary32 patterns (N, K)
    b: np.ndarray
    c: np.ndarray  # binary32 patterns (N,)
    d: np.ndarray  # binary32 patterns (N,)
    path: Path
    lines: dict[str, Any] = field(default_factory=dict)  # the file line of each row

    @property
    def k(self) -> int:
        return int(self.a.shape[1])

    @property
    def rows(self) -> int:
        return int(self.a.shape[0])


def find_datasets(root: Path, gpus: list[str] | None = None) -> list[tuple[str, str, Path]]:
    """(gpu, folder, path) triples below root, in a stable order."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    wanted = None if not gpus else {g.lower() for g in gpus}
    if wanted:
        present = {p.name.lower() for p in _subdirs(root)}
        missing = wanted - present
        if missing:
            raise InputError(f"{root}: no data for GPU(s) {', '.join(sorted(missing))}; "
                             f"present: {', '.join(sorted(present)) or 'none'}")
    out = []
    for gdir in _subdirs(root):
        if wanted and gdir.name.lower() not in wanted:
            continue
        for fdir in _subdirs(gdir):
            out.append((gdir.name, fdir.name, fdir))
    if not out:
        raise InputError(f"{root}: no <GPU>/<informat>/ folders found")
    return out


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if p.is_dir())
    except OSError as e:
        raise InputError(f"{path}: cannot list the folder: {e.strerror or e}") from None


def load_dataset(gpu: str, folder: str, path: Path, out: str,
                 limit: int | None = None) -> DataSet:
    key = folder.lower()
    if key not in FOLDER_FORMATS:
        raise InputError(f"{path}: unknown input format folder {folder!r}; expected one of "
                         f"{', '.join(FOLDER_FORMATS)}")
    files = {n: path / f"{n}_{gpu}_{folder}.txt" for n in ("a", "b")}
    files["c"] = path / f"c_{gpu}_fp32.txt"
    files["d"] = path / f"d_{gpu}_{out}.txt"
    for n, p in files.items():
        if not p.is_file():
            raise InputError(f"{p}: missing ({n} file of the MATLAB-tensor-core layout)")
    lines: dict[str, Any] = {n: array("q") for n in files}  # 8 bytes a row
    a = read_hex_rows(files["a"], lines=lines["a"])
    b = read_hex_rows(files["b"], a.shape[1], lines=lines["b"])
    c, d = read_bin_rows(files["c"], lines["c"]), read_bin_rows(files["d"], lines["d"])
    n = {len(a), len(b), len(c), len(d)}
    if len(n) != 1:
        raise InputError(f"{path}: row counts differ: a {len(a)}, b {len(b)}, c {len(c)}, "
                         f"d {len(d)}")
    if limit is not None:
        if limit < 1:
            raise InputError(f"--limit must be a positive number of rows, got {limit}")
        a, b, c, d = a[:limit], b[:limit], c[:limit], d[:limit]
    return DataSet(gpu, folder, FOLDER_FORMATS[key], OUTPUT_FORMATS[out], a, b, c, d, path,
                   lines)


def output_files(path: Path, gpu: str) -> list[str]:
    """Output suffixes (fp32, fp16) present in a dataset folder."""
    return [o for o in OUTPUT_FORMATS if (path / f"d_{gpu}_{o}.txt").is_file()]


def fraction_of(bits: int) -> Fraction:
    return BINARY32.to_fraction(bits)
