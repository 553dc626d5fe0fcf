"""Suite and observed-output files: versioned JSON, plus the MATLAB-tensor-core row layout.

A suite (``schema: mmaprobe-suite``) holds the formats, K, and vectors with ids, hex bit
patterns a (K), b (K), c and a provenance record (which probe or query made it).  Where b has
a format of its own, ``formats`` names it (``b``); with block scaling, ``formats`` names the
scale factors' format (``scale``), ``scale_block`` their block, and each vector carries
``scale_a`` and ``scale_b`` (K / scale_block patterns each; in memory they are packed after
the K values of a and b, ``AccumulatorConfig.row_width``).  An observed file (``schema:
mmaprobe-observed``) holds, per vector id, the output bit pattern d.  Every reading error
names the file and the entry.  Bit patterns are kept exactly through every file (NaN
payloads included).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmaprobe.models import limits
from mmaprobe.models.config import SCALE_FORMATS, field_problem
from mmaprobe.models.errors import InputError, read_text
from mmaprobe.models.formats import Format, FormatError, get_format

from .matlab_tc import (
    FOLDER_FORMATS,
    bin_rows_text,
    convert_exact,
    hex_rows_text,
    read_bin_rows,
    read_hex_rows,
)
from .output import write_atomic, write_files

SUITE_SCHEMA = "mmaprobe-suite"
OBSERVED_SCHEMA = "mmaprobe-observed"
VERSION = 1


@dataclass
class Suite:
    in_format: str
    c_format: str
    out_format: str
    k: int
    ids: list[str]
    a: np.ndarray  # uint64 (N, k)
    b: np.ndarray
    c: np.ndarray  # uint64 (N,)
    provenance: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = "suite"  # the file it was read from, for messages
    b_format: str | None = None      # b's format where it differs from in_format
    scale_format: str | None = None  # block scaling: the scale factors' format ...
    scale_block: int | None = None   # ... and the products per scale factor

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def operands(self) -> tuple[str, str | None, int | None]:
        """(b's format, scale_format, scale_block), as AccumulatorConfig.operands."""
        return self.b_format or self.in_format, self.scale_format, self.scale_block

    @property
    def scales(self) -> int:
        return 0 if self.scale_block is None else self.k // self.scale_block

    def _formats_json(self) -> dict[str, Any]:
        fm: dict[str, Any] = {"in": self.in_format, "c": self.c_format, "out": self.out_format}
        if self.b_format and self.b_format != self.in_format:
            fm["b"] = self.b_format
        if self.scale_format:
            fm["scale"] = self.scale_format
        return fm

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(f"{self.in_format}/{self.c_format}/{self.out_format}/{self.k}".encode())
        if self.operands != (self.in_format, None, None):  # plain suites keep their digest
            h.update(f"/{self.operands}".encode())
        for i, vid in enumerate(self.ids):
            h.update(vid.encode())
            h.update(self.a[i].tobytes() + self.b[i].tobytes() + self.c[i:i + 1].tobytes())
        return h.hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        fin, fb, fc = (get_format(self.in_format), get_format(self.operands[0]),
                       get_format(self.c_format))
        fs = get_format(self.scale_format) if self.scale_format else None
        k = self.k
        vecs = []
        for i, vid in enumerate(self.ids):
            v = {"id": vid, "a": hexlist(fin, self.a[i, :k]), "b": hexlist(fb, self.b[i, :k])}
            if fs is not None:
                v["scale_a"] = hexlist(fs, self.a[i, k:])
                v["scale_b"] = hexlist(fs, self.b[i, k:])
            v.update({"c": hexbits(fc, int(self.c[i])), "provenance": self.provenance[i]})
            vecs.append(v)
        extra = {"scale_block": self.scale_block} if self.scale_format else {}
        return {"schema": SUITE_SCHEMA, "version": VERSION, "formats": self._formats_json(),
                "k": self.k, **extra, "digest": self.digest(), **self.meta, "vectors": vecs}


@dataclass
class Observed:
    ids: list[str]
    d: np.ndarray  # uint64 (N,)
    out_format: str
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self, suite: Suite) -> dict[str, Any]:
        fout = get_format(self.out_format)
        return {"schema": OBSERVED_SCHEMA, "version": VERSION,
                "formats": suite._formats_json(), "k": suite.k,
                **({"scale_block": suite.scale_block} if suite.scale_format else {}),
                "suite_digest": suite.digest(), **self.meta,
                "outputs": [{"id": vid, "d": hexbits(fout, int(x))}
                            for vid, x in zip(self.ids, self.d.tolist())]}


def hexbits(fmt: Format, x: int) -> str:
    digits = ((fmt.width or fmt.bits) + 3) // 4
    return f"0x{int(x):0{digits}x}"


@functools.lru_cache(maxsize=16)
def _hex_table(fmt: Format) -> list[str]:
    return [hexbits(fmt, x) for x in range(1 << (fmt.width or fmt.bits))]


def hexlist(fmt: Format, xs: np.ndarray) -> list[str]:
    """hexbits of every pattern of xs (a table lookup for formats of up to 16 bits)."""
    if (fmt.width or fmt.bits) <= 16:
        table = _hex_table(fmt)
        return [table[x] for x in xs.tolist()]
    return [hexbits(fmt, x) for x in xs.tolist()]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-JSON constant {name}")


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"duplicate key {key!r} in one object (the second would "
                                f"silently win)")
        out[key] = value
    return out


def read_json(path: str | Path, what: str) -> Any:
    """A JSON file: strict (no NaN/Infinity constants, no duplicate keys, nesting within
    the interpreter's recursion limit; a leading UTF-8 BOM is skipped); errors name the
    file (and line where the parser knows it)."""
    p = Path(path)
    try:
        size = p.stat().st_size if p.is_file() else 0
    except OSError:
        size = 0  # read_text says why the file cannot be read
    limits.JSON_MB.check(-(-size >> 20), f"{p}: {what}")
    text = read_text(p, what).removeprefix("\ufeff")  # a UTF-8 BOM, as in the YAML files
    try:
        return json.loads(text, parse_constant=_reject_constant,
                          object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        raise InputError(f"{p}:{e.lineno}: malformed or truncated JSON {what}: {e.msg}") from None
    except _DuplicateKey as e:
        raise InputError(f"{p}: malformed JSON {what}: {e}") from None
    except ValueError as e:
        raise InputError(f"{p}: malformed JSON {what}: {e} (bit patterns must be hex "
                         f"strings, e.g. \"0x7fc00000\")") from None
    except RecursionError:
        raise InputError(f"{p}: JSON {what} nested too deeply") from None


_HEX = re.compile(r"0[xX][0-9a-fA-F]{1,32}")


def _parse_bits(p: Path, where: str, v: Any, fmt: Format) -> int:
    if not isinstance(v, str) or not v.lower().startswith("0x"):
        raise InputError(f"{p}: {where}: expected a hex bit pattern string like \"0x3c00\", "
                         f"got {json.dumps(v)[:40]}")
    if not _HEX.fullmatch(v):
        raise InputError(f"{p}: {where}: malformed hex bit pattern {v[:40]!r} (expected 0x "
                         f"and hex digits only)")
    x = int(v[2:], 16)
    width = fmt.width or fmt.bits
    if x >> width:
        raise InputError(f"{p}: {where}: {v} is wider than {fmt.name}'s {width} bits")
    if fmt.pad and x & ((1 << fmt.pad) - 1):
        raise InputError(f"{p}: {where}: {v} sets the {fmt.pad} padding bits of {fmt.name}")
    return x


def _formats(p: Path, data: dict[str, Any]) -> tuple[str, str, str, int]:
    fm = data.get("formats")
    if not isinstance(fm, dict) or not {"in", "c", "out"} <= set(fm):
        raise InputError(f"{p}: 'formats' must be a mapping with in, c and out")
    extra = sorted(str(x) for x in set(fm) - {"in", "b", "c", "out", "scale"})
    if extra:
        raise InputError(f"{p}: formats: unknown role(s) {', '.join(extra)}; expected in, b, "
                         f"c, out and scale")
    try:
        names = [get_format(fm[r]).name for r in ("in", "c", "out")]
    except (FormatError, TypeError) as e:
        raise InputError(f"{p}: formats: {e}") from None
    k = data.get("k")
    problem = field_problem("k", k)
    if problem:
        raise InputError(f"{p}: k: got {str(k)[:40]}, expected {problem}")
    return names[0], names[1], names[2], k


def _operands(p: Path, data: dict[str, Any], fin: str, k: int
              ) -> tuple[str | None, str | None, int | None]:
    """(b_format or None, scale_format, scale_block) of a suite or observed file."""
    fm = data["formats"]
    b = None
    if fm.get("b") is not None:
        try:
            b = get_format(fm["b"]).name
        except (FormatError, TypeError) as e:
            raise InputError(f"{p}: formats: b: {e}") from None
        b = None if b == fin else b
    sf, sb = fm.get("scale"), data.get("scale_block")
    if sf is None and sb is None:
        return b, None, None
    if sf not in SCALE_FORMATS:
        raise InputError(f"{p}: formats: scale: got {sf!r}, expected one of "
                         f"{', '.join(SCALE_FORMATS)} (with 'scale_block')")
    problem = field_problem("scale_block", sb)
    if sb is None or problem or k % sb:
        raise InputError(f"{p}: 'scale_block' must be a positive divisor of k={k} with "
                         f"formats.scale, got {sb!r}")
    return b, sf, sb


def _check_schema(p: Path, data: Any, schema: str) -> None:
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a JSON object ({schema})")
    if data.get("schema") != schema:
        raise InputError(f"{p}: not a {schema} file (schema is {data.get('schema')!r})")
    if data.get("version") != VERSION:
        raise InputError(f"{p}: unsupported {schema} version {data.get('version')!r}; "
                         f"this mmaprobe reads version {VERSION}")


def read_suite(path: str | Path) -> Suite:
    p = Path(path)
    data = read_json(p, "suite")
    _check_schema(p, data, SUITE_SCHEMA)
    fin_n, fc_n, fout_n, k = _formats(p, data)
    b_n, sf_n, sblock = _operands(p, data, fin_n, k)
    fin, fc = get_format(fin_n), get_format(fc_n)
    fb = get_format(b_n or fin_n)
    fs = get_format(sf_n) if sf_n else None
    nsc = 0 if sblock is None else k // sblock
    vecs = data.get("vectors")
    if not isinstance(vecs, list) or not vecs:
        raise InputError(f"{p}: 'vectors' must be a non-empty list")
    limits.VECTORS.check(len(vecs), f"{p}: vectors")
    if "layout" in data:
        _check_layout(p, data["layout"])
    ids: list[str] = []
    seen: set[str] = set()
    a = np.zeros((len(vecs), k + nsc), dtype=np.uint64)
    b = np.zeros((len(vecs), k + nsc), dtype=np.uint64)
    c = np.zeros(len(vecs), dtype=np.uint64)
    prov = []
    for i, v in enumerate(vecs):
        where = f"vectors[{i}]"
        if not isinstance(v, dict) or not isinstance(v.get("id"), str):
            raise InputError(f"{p}: {where}: expected an object with a string 'id'")
        vid = v["id"]
        where = f"vectors[{i}] (id {vid})"
        if vid in seen:
            raise InputError(f"{p}: {where}: duplicate id")
        seen.add(vid)
        for side, arr, fmt in (("a", a, fin), ("b", b, fb)):
            row = v.get(side)
            if not isinstance(row, list) or len(row) != k:
                raise InputError(f"{p}: {where}: '{side}' must be a list of k={k} hex patterns")
            for j, x in enumerate(row):
                arr[i, j] = _parse_bits(p, f"{where} {side}[{j}]", x, fmt)
        for side, arr in (("scale_a", a), ("scale_b", b)):
            row = v.get(side)
            if fs is None:
                if row is not None:
                    raise InputError(f"{p}: {where}: '{side}' given, but the suite has no "
                                     f"block scaling (formats.scale)")
                continue
            if not isinstance(row, list) or len(row) != nsc:
                raise InputError(f"{p}: {where}: '{side}' must be a list of {nsc} hex "
                                 f"patterns ({sf_n}, k={k}, scale_block={sblock})")
            for j, x in enumerate(row):
                arr[i, k + j] = _parse_bits(p, f"{where} {side}[{j}]", x, fs)
        c[i] = _parse_bits(p, f"{where} c", v.get("c"), fc)
        ids.append(vid)
        prov.append(v.get("provenance", {}) if isinstance(v.get("provenance"), dict) else {})
    meta = {key: data[key] for key in ("space", "generator", "layout") if key in data}
    suite = Suite(fin_n, fc_n, fout_n, k, ids, a, b, c, prov, meta, str(p), b_n, sf_n, sblock)
    dg = data.get("digest")
    if dg is not None and dg != suite.digest():
        raise InputError(f"{p}: digest {dg} does not match the vectors ({suite.digest()}): "
                         f"the file was edited or corrupted")
    return suite


def suite_text(suite: Suite) -> str:
    """The suite as JSON: the header indented, then one vector per line."""
    doc = suite.to_json()
    vectors = doc.pop("vectors")
    head = json.dumps(doc, indent=1)
    body = ",\n".join("  " + json.dumps(v) for v in vectors)
    return head[:-2] + ',\n "vectors": [\n' + body + ("\n ]\n}\n" if vectors else " ]\n}\n")


def write_suite(path: str | Path, suite: Suite) -> None:
    write_atomic(path, suite_text(suite), "suite")


LAYOUT_KEYS = {"kind", "gpu", "files"}


def _check_layout(p: Path, lay: Any) -> None:
    """The suite's record of its MATLAB-layout files (informational: ``run`` never writes
    by it, but refuses to overwrite the files it names)."""
    if not isinstance(lay, dict):
        raise InputError(f"{p}: layout: expected a mapping {{kind, gpu, files}}, got "
                         f"{json.dumps(lay)[:40]}")
    unknown = sorted(set(lay) - LAYOUT_KEYS)
    if unknown:
        raise InputError(f"{p}: layout: unknown field {unknown[0]!r}; valid: "
                         f"{', '.join(sorted(LAYOUT_KEYS))}")
    if lay.get("kind") != "matlab-tc":
        raise InputError(f"{p}: layout: kind must be \"matlab-tc\", got "
                         f"{json.dumps(lay.get('kind'))[:40]}")
    gpu = lay.get("gpu")
    if not isinstance(gpu, str) or not gpu.strip() or "/" in gpu or gpu in (".", ".."):
        raise InputError(f"{p}: layout: gpu must be a folder name, got {json.dumps(gpu)[:40]}")
    files = lay.get("files")
    if not isinstance(files, dict) or not set(files) <= {"a", "b", "c", "sa", "sb"} or not all(
            isinstance(v, str) and v for v in files.values()):
        raise InputError(f"{p}: layout: files must map a, b, c (sa, sb) to file names "
                         f"relative to the suite")


def layout_inputs(suite: Suite) -> list[Path]:
    """The files a suite's layout record names (relative to the suite file)."""
    lay = suite.meta.get("layout")
    if not isinstance(lay, dict):
        return []
    base = Path(suite.source).parent
    return [base / f for f in lay.get("files", {}).values()]


def read_observed(path: str | Path, suite: Suite, suite_path: str | Path = "suite") -> Observed:
    """Observed outputs for suite: a JSON observed file, or a MATLAB-layout d-file (.txt)."""
    p = Path(path)
    if p.suffix == ".txt":
        return read_d_file(p, suite)
    data = read_json(p, "observed outputs")
    _check_schema(p, data, OBSERVED_SCHEMA)
    fin_n, fc_n, fout_n, k = _formats(p, data)
    b_n, sf_n, sblock = _operands(p, data, fin_n, k)
    for name, mine, theirs in (("input format", fin_n, suite.in_format),
                               ("b format", b_n or fin_n, suite.operands[0]),
                               ("c format", fc_n, suite.c_format),
                               ("output format", fout_n, suite.out_format),
                               ("k", k, suite.k),
                               ("scale format", sf_n, suite.scale_format),
                               ("scale block", sblock, suite.scale_block)):
        if mine != theirs:
            raise InputError(f"{p}: {name} {mine} does not match the suite {suite_path} "
                             f"({theirs})")
    dg = data.get("suite_digest")
    if dg is not None and dg != suite.digest():
        raise InputError(f"{p}: suite_digest {dg} is not the digest of {suite_path} "
                         f"({suite.digest()}): outputs of a different suite")
    outs = data.get("outputs")
    if not isinstance(outs, list):
        raise InputError(f"{p}: 'outputs' must be a list of {{id, d}} objects")
    fout = get_format(fout_n)
    got: dict[str, int] = {}
    for i, o in enumerate(outs):
        if not isinstance(o, dict) or not isinstance(o.get("id"), str):
            raise InputError(f"{p}: outputs[{i}]: expected an object with a string 'id'")
        vid = o["id"]
        if vid in got:
            raise InputError(f"{p}: outputs[{i}] (id {vid}): duplicate id")
        got[vid] = _parse_bits(p, f"outputs[{i}] (id {vid}) d", o.get("d"), fout)
    known = set(suite.ids)
    extra = [x for x in got if x not in known]
    if extra:
        raise InputError(f"{p}: output id(s) not in the suite {suite_path}: "
                         f"{', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''}")
    missing = [x for x in suite.ids if x not in got]
    if missing:
        raise InputError(f"{p}: {len(missing)} of the suite's {suite.size} vectors have no "
                         f"output, e.g. {', '.join(missing[:5])}")
    d = np.array([got[x] for x in suite.ids], dtype=np.uint64)
    meta = {key: data[key] for key in ("device",) if key in data}
    return Observed(list(suite.ids), d, fout_n, meta)


def write_observed(path: str | Path, obs: Observed, suite: Suite) -> None:
    write_atomic(path, json.dumps(obs.to_json(suite), indent=1) + "\n", "observed outputs")


# -- MATLAB-tensor-core layout ---------------------------------------------------------------

_B32 = get_format("binary32")


def folder_of(fmt_name: str) -> str:
    for folder, name in FOLDER_FORMATS.items():
        if name == fmt_name:
            return folder
    raise InputError(f"the MATLAB-tensor-core layout has no folder for input format "
                     f"{fmt_name}; known: {', '.join(FOLDER_FORMATS.values())}")


def out_suffix(fmt_name: str) -> str:
    if fmt_name == "binary32":
        return "fp32"
    if fmt_name == "binary16":
        return "fp16"
    raise InputError(f"the MATLAB-tensor-core layout has no d-file for output {fmt_name}")


def layout_paths(root: Path, gpu: str, suite: Suite) -> dict[str, Path]:
    folder = folder_of(suite.in_format)
    if suite.operands[0] != suite.in_format:
        folder = f"{folder}x{folder_of(suite.operands[0])}"
    base = root / gpu / folder
    paths = {"a": base / f"a_{gpu}_{folder}.txt", "b": base / f"b_{gpu}_{folder}.txt",
             "c": base / f"c_{gpu}_fp32.txt",
             "d": base / f"d_{gpu}_{out_suffix(suite.out_format)}.txt"}
    if suite.scale_format:
        paths["sa"] = base / f"sa_{gpu}_{folder}.txt"
        paths["sb"] = base / f"sb_{gpu}_{folder}.txt"
    return paths


def layout_texts(root: Path, gpu: str, suite: Suite) -> dict[Path, str]:
    """The files of the layout (path -> text): a_/b_/c_ with the inputs as binary32
    patterns (exact), rows in suite order; sa_/sb_ with the raw scale-factor patterns of a
    block-scaled suite."""
    paths = layout_paths(root, gpu, suite)
    fin, fb, fc = (get_format(suite.in_format), get_format(suite.operands[0]),
                   get_format(suite.c_format))
    k = suite.k
    out = {paths["a"]: hex_rows_text(convert_exact(suite.a[:, :k], fin, _B32, "suite a")),
           paths["b"]: hex_rows_text(convert_exact(suite.b[:, :k], fb, _B32, "suite b")),
           paths["c"]: bin_rows_text(convert_exact(suite.c, fc, _B32, "suite c"))}
    if suite.scale_format:
        out[paths["sa"]] = hex_rows_text(suite.a[:, k:])
        out[paths["sb"]] = hex_rows_text(suite.b[:, k:])
    return out


def write_layout(root: Path, gpu: str, suite: Suite) -> dict[str, Path]:
    """Write the layout files (all or none, directories created as needed)."""
    paths = layout_paths(root, gpu, suite)
    write_files(layout_texts(root, gpu, suite), "MATLAB-layout files", make_dirs=True)
    return paths


def write_d_file(path: Path, obs: Observed) -> None:
    fout = get_format(obs.out_format)
    write_atomic(path, bin_rows_text(convert_exact(obs.d, fout, _B32, str(path))), "d-file")


def read_d_file(path: Path, suite: Suite) -> Observed:
    """A d-file (binary32 binary strings, one per suite vector in order)."""
    d32 = read_bin_rows(path)
    if len(d32) != suite.size:
        raise InputError(f"{path}: {len(d32)} output rows, but the suite has {suite.size} "
                         f"vectors")
    fout = get_format(suite.out_format)
    d = convert_exact(d32, _B32, fout, path)
    return Observed(list(suite.ids), d, fout.name, {"device": f"d-file {path.name}"})


def read_layout_inputs(paths: dict[str, Path], suite: Suite) -> tuple[np.ndarray, ...]:
    """Read back a_/b_/c_ (and sa_/sb_) files as suite-format patterns (packed rows)."""
    fin, fb, fc = (get_format(suite.in_format), get_format(suite.operands[0]),
                   get_format(suite.c_format))
    a = convert_exact(read_hex_rows(paths["a"], suite.k), _B32, fin, paths["a"])
    b = convert_exact(read_hex_rows(paths["b"], suite.k), _B32, fb, paths["b"])
    c = convert_exact(read_bin_rows(paths["c"]), _B32, fc, paths["c"])
    if suite.scale_format:
        a = np.concatenate([a, read_hex_rows(paths["sa"], suite.scales)], 1)
        b = np.concatenate([b, read_hex_rows(paths["sb"], suite.scales)], 1)
    return a, b, c
