"""A corpus of hostile inputs for every ``mmaprobe`` command, as data.

Each :class:`Case` is one command line run in a fresh temporary directory (the working
directory of the command) holding the files the case creates.  The promise every case
checks (README, "Commands"; shared/DESIGN.md): bad input exits 2 with a message naming the
file, the line and the field and what was expected -- never a traceback, a hang, a memory
blow-up, a silent wrong answer (exit 0 on bad input) or a half-written file.

The cases are written against the command line only (``mmaprobe COMMAND ...``), never
against internal modules.  Placeholders, substituted by the runner:

``{tmp}``   the case's temporary directory (also the working directory)
``{CFG}``   the flag of ``distinguish`` that takes an accumulator-configuration YAML
            (``--config-file`` today; ``--config`` once constraints move to ``--constraints``)
``{CONS}``  the flag of ``distinguish`` / ``synthesize`` that takes SMT input constraints
            (``--config`` today, ``--constraints`` after the restructuring)

Expected exit codes: 2 for bad input, unless the case says otherwise in ``why`` (a valid
but unusual input that must work: 0; a legitimate "check failed / mismatch": 1).  A tuple
lists the acceptable codes (e.g. (0, 2): reject it, or accept it with a note on stderr).

Classes (``cls``):

yaml      YAML the loader cannot construct or must refuse (tags, merge keys, aliases,
          huge integers, deep nesting, duplicate keys, wrong document shapes)
expr      values and expressions: huge/tiny decimals, overflow to inf, superscripts,
          probe expressions that overflow or cannot be evaluated
explode   inputs that make spaces, suites, sweeps, matrices or K explode
types     wrong types accepted silently (4.0 for an integer, "2", true), contradictory
          fields, selections that check nothing
data      MATLAB-layout data files (validate, d-files) and GEMM matrices
output    output paths: missing directory, directory, /dev/full, read-only, overwriting
          inputs, writing outside the chosen directory, half-written files
cli       argument parsing and numbers on the command line (NaN, inf, negative, huge)
pipe      stdout closed early (``mmaprobe presets | head``) and unencodable output
schema    JSON suites / observed files with wrong schemas, mismatched suite/observed pairs
probe     probe files that break the schema or the expression language
smt       distinguish / synthesize inputs (constraints, unencodable configurations)
fs        file-system objects: FIFOs, /dev/zero, directories, symlink loops, unreadable
          files, over-long paths, non-UTF-8 text
unicode   look-alike characters, invisible characters, non-ASCII names
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

# -- file-system objects a case may create -----------------------------------------------


@dataclass(frozen=True)
class Fifo:
    """A named pipe with no writer: opening it for reading blocks forever."""


@dataclass(frozen=True)
class Dir:
    """A directory (created before the files inside it; its mode is set last, and the case
    then runs as an unprivileged user when the runner is root)."""

    mode: int | None = None


@dataclass(frozen=True)
class Symlink:
    target: str  # may contain {tmp}


@dataclass(frozen=True)
class Chmod:
    """A file with these contents and this mode (the case then runs as an unprivileged
    user when the runner is root, so that the mode is honoured)."""

    content: str | bytes
    mode: int


@dataclass(frozen=True)
class Repeat:
    """A large file written in chunks: head + body * count + tail."""

    head: str | bytes
    body: str | bytes
    count: int
    tail: str | bytes = ""


FileSpec = Any  # str | bytes | Fifo | Dir | Symlink | Chmod | Repeat


@dataclass
class Case:
    id: str
    cls: str
    argv: list[str | bytes]
    files: dict[str, FileSpec] = field(default_factory=dict)
    expect: int | tuple[int, ...] = 2
    why: str = ""  # what the case is about / why the expected code is not 2
    mentions: list[str] = field(default_factory=list)  # on exit != 0, stderr names each
    note: list[str] = field(default_factory=list)  # on exit 0, stderr must name each
    stream: str = "stderr"  # where mentions/notes are looked for: "stderr" or "any"
    line: int | tuple[int, ...] | None = None  # stderr must name this line (or one of these)
    no_file: list[str] = field(default_factory=list)  # paths that must not exist afterwards
    unchanged: list[str] = field(default_factory=list)  # created files that must keep bytes
    timeout: float = 20.0
    env: dict[str, str] = field(default_factory=dict)
    pipe_close: int | None = None  # read this many bytes of stdout, then close the pipe
    fsize: int | None = None  # RLIMIT_FSIZE (bytes): writes beyond it fail with EFBIG
    stdin: bytes | None = None
    json_stdout: bool = False  # on exit 0, stdout must be strict JSON (no NaN/Infinity)

    @property
    def expected(self) -> tuple[int, ...]:
        return self.expect if isinstance(self.expect, tuple) else (self.expect,)

    @property
    def nonroot(self) -> bool:
        return any(isinstance(f, Chmod) or (isinstance(f, Dir) and f.mode is not None)
                   for f in self.files.values())


CASES: list[Case] = []
_IDS: set[str] = set()


def add(case_id: str, cls: str, argv: list, **kw: Any) -> Case:
    if case_id in _IDS:
        raise ValueError(f"duplicate case id {case_id}")
    _IDS.add(case_id)
    c = Case(case_id, cls, list(argv), **kw)
    CASES.append(c)
    return c


# -- valid base files ---------------------------------------------------------------------

CFG_OK = "in_format: binary16\nk: 4\nneab: 1\n"  # poison line 3 (neab)
CFG_OK_LINES = {"in_format": 1, "k": 2, "neab": 3}

SPACE_OK = """id: small
formats: {in: binary16, c: binary32, out: binary32}
k: [4]
vary:
  neab: [0, 1]
  nfma: [1, 4]
"""

PROBE_OK = """id: t-base
title: base probe of the hostile corpus
feature: neab
source: "hostile corpus"
formats: {in: [binary16], out: [binary32]}
may_be_inconclusive: true
vectors:
  - name: v
    a: {0: "1"}
    b: {0: "1"}
decide:
  - otherwise: inconclusive
"""

CONS_OK = "finite: true\nnormal: true\nsign_c: \"?\"\n"

ONE16, ZERO16, ZERO32 = "0x3c00", "0x0000", "0x00000000"


def suite_doc(n: int = 3, **over: Any) -> dict:
    """A small valid binary16 x 4 + binary32 -> binary32 suite (no digest: optional);
    over replaces top-level fields (k=... changes the field, not the rows)."""
    k = 4
    vecs = []
    for i in range(n):
        a = [ONE16, ONE16] + [ZERO16] * (k - 2)
        b = [ONE16, ZERO16 if i == 0 else ONE16] + [ZERO16] * (k - 2)
        vecs.append({"id": f"v{i}", "a": a, "b": b, "c": ZERO32})
    doc = {"schema": "mmaprobe-suite", "version": 1,
           "formats": {"in": "binary16", "c": "binary32", "out": "binary32"}, "k": k,
           "vectors": vecs}
    doc.update(over)
    return doc


def obs_doc(n: int = 3, **over: Any) -> dict:
    """Outputs of suite_doc(n) on any fused binary16 unit (exact: 1, 2, 2, ...)."""
    outs = [{"id": f"v{i}", "d": "0x3f800000" if i == 0 else "0x40000000"} for i in range(n)]
    doc = {"schema": "mmaprobe-observed", "version": 1,
           "formats": {"in": "binary16", "c": "binary32", "out": "binary32"}, "k": 4,
           "outputs": outs}
    doc.update(over)
    return doc


def js(doc: Any) -> str:
    return json.dumps(doc, indent=1) + "\n"


SUITE_OK = js(suite_doc())
OBS_OK = js(obs_doc())
BASE = {"cfg.yaml": CFG_OK, "space.yaml": SPACE_OK, "probe.yaml": PROBE_OK,
        "cons.yaml": CONS_OK, "suite.json": SUITE_OK, "obs.json": OBS_OK,
        "A.txt": "1 2 3 4\n", "B.txt": "1\n1\n1\n1\n"}


def base(*names: str, **extra: FileSpec) -> dict[str, FileSpec]:
    out = {n: BASE[n] for n in names}
    out.update(extra)
    return out


# -- a synthetic MATLAB-tensor-core dataset ---------------------------------------------------


def f32hex(x: float) -> str:
    return f"{struct.unpack('>I', struct.pack('>f', x))[0]:08x}"


def f32bin(x: float) -> str:
    return f"{struct.unpack('>I', struct.pack('>f', x))[0]:032b}"


def dataset(gpu: str = "V100", folder: str = "fp16", rows: int = 48, k: int = 4,
            outs: tuple[str, ...] = ("fp32",), patch: dict | None = None,
            drop: tuple[str, ...] = (), root: str = "data") -> dict[str, FileSpec]:
    """Files of a valid dataset: small exact values, so that every fused unit agrees with
    d = c + sum a_i b_i.  patch = {"a": {line: text}, ...} replaces whole lines."""
    av = [1.0, 2.0, 0.5, 0.0, 1.0, 2.0, 0.5, 0.0] * 4
    bv = [1.0, 1.0, 2.0, 0.25, 1.0, 1.0, 2.0, 0.25] * 4
    lines: dict[str, list[str]] = {"a": [], "b": [], "c": []}
    dl: list[str] = []
    for r in range(rows):
        a, b, c = av[:k], bv[:k], float(r % 8)
        lines["a"].append(" ".join(f32hex(x) for x in a) + " ")
        lines["b"].append(" ".join(f32hex(x) for x in b) + " ")
        lines["c"].append(f32bin(c))
        dl.append(f32bin(c + sum(x * y for x, y in zip(a, b))))
    base_dir = f"{root}/{gpu}/{folder}"
    names = {"a": f"{base_dir}/a_{gpu}_{folder}.txt", "b": f"{base_dir}/b_{gpu}_{folder}.txt",
             "c": f"{base_dir}/c_{gpu}_fp32.txt"}
    for o in outs:
        names["d" + o] = f"{base_dir}/d_{gpu}_{o}.txt"
        lines["d" + o] = list(dl)
    for key, rep in (patch or {}).items():
        for ln, text in rep.items():
            lines[key][ln - 1] = text
    return {names[key]: "\n".join(ls) + "\n" for key, ls in lines.items() if key not in drop}


def dpath(gpu: str = "V100", folder: str = "fp16", kind: str = "a", out: str = "fp32") -> str:
    base_dir = f"data/{gpu}/{folder}"
    if kind in ("a", "b"):
        return f"{base_dir}/{kind}_{gpu}_{folder}.txt"
    if kind == "c":
        return f"{base_dir}/c_{gpu}_fp32.txt"
    return f"{base_dir}/d_{gpu}_{out}.txt"


def npy(descr: str, shape: str, payload: bytes) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


# -- hostile YAML payloads -------------------------------------------------------------------

BIGINT = "9" * 5000
DEEP = 30000
# a billion-laughs value: nine levels of nine aliases (9^9 leaves from ~300 bytes)
ALIAS_BOMB = "\n".join(
    ["  - &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"  - &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]"
       for p, n in zip("abcdefgh", "bcdefghi")])


def poison(base_text: str, fld: str, payload: str) -> tuple[str, int]:
    """Replace the line 'fld: ...' of base_text by payload; returns (text, its line)."""
    lines = base_text.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith(fld + ":"):
            lines[i:i + 1] = payload.splitlines()
            return "\n".join(lines) + "\n", i + 1
    raise ValueError(f"{fld} not in base text")


# payload(field) -> the replacement text of the field's line; the line the message must name
# is the line of the (first) replaced line unless the tuple says otherwise (offset).
FIELD_PAYLOADS: dict[str, tuple[str, str]] = {
    "tag-int": ("{f}: !!int abc", "!!int with a non-integer: ValueError inside the loader"),
    "tag-float": ("{f}: !!float abc", "!!float with a non-number"),
    "tag-timestamp": ("{f}: !!timestamp 2024-13-45", "!!timestamp with month 13"),
    "tag-python-name": ("{f}: !!python/name:os.system", "python tags must be refused"),
    "tag-python-apply": ("{f}: !!python/object/apply:os.system [\"touch {tmp}/PWNED\"]",
                         "code execution tag must be refused (and must not run)"),
    "tag-binary": ("{f}: !!binary 'not base64!'", "!!binary with bad base64"),
    "tag-set": ("{f}: !!set {a, b}", "a set where a scalar is expected"),
    "tag-custom": ("{f}: !custom 3", "an unknown local tag"),
    "bigint": ("{f}: " + BIGINT, "an integer of 5000 digits (over Python's 4300-digit "
                                 "str->int limit)"),
    "merge-key": ("<<: {{f}: 1}", "a YAML merge key"),
    "anchor-alias": ("x_anchor: &x 1\n{f}: *x", "anchors/aliases (refused in project files)"),
    "alias-bomb": ("{f}:\n" + ALIAS_BOMB, "a 300-byte billion-laughs alias bomb as the "
                                          "field's value"),
    "deep-flow": ("{f}: " + "[" * DEEP + "]" * DEEP, "flow nesting deep enough for a "
                                                     "RecursionError"),
    "dup-key": ("{f}: 1\n{f}: 2", "a duplicate key (the second would silently win)"),
    "complex-key": ("? [a, b]\n: 1", "a sequence as a mapping key"),
    "null-key": ("~: 1", "a null mapping key"),
    "tab-indent": ("{f}:\n\t- 1", "a tab used for indentation"),
    "unclosed-flow": ("{f}: [1, 2", "an unclosed flow sequence"),
}

FILE_PAYLOADS: dict[str, tuple[FileSpec, str]] = {
    "empty": ("", "an empty file"),
    "comments-only": ("# nothing here\n# at all\n", "a file with only comments"),
    "scalar-doc": ("42\n", "a scalar instead of a mapping"),
    "list-doc": ("- 1\n- 2\n", "a list instead of a mapping"),
    "string-doc": ("hello world\n", "a plain string"),
    "two-docs": (None, "two YAML documents (the base file twice, '---' between)"),
    "binary-garbage": (bytes(range(256)) * 4, "binary garbage (not UTF-8)"),
    "nul-bytes": (None, "the base file with NUL bytes in it"),
    "latin1": (None, "the base file with a Latin-1 byte in a comment"),
    "huge-file": (Repeat("", "# padding padding padding padding padding padding pad\n",
                         60000), "a 3 MB file of comments"),
    "long-line": (Repeat("x: \"", "y" * 1000, 3000, "\"\n"), "one 3 MB line"),
    "directory": (Dir(), "a directory where a file is expected"),
    "fifo": (Fifo(), "a named pipe with no writer (opening it blocks)"),
    "symlink-loop": (Symlink("{tmp}/LOOPFILE"), "a symlink pointing to itself"),
    "dangling-symlink": (Symlink("{tmp}/nowhere/none.yaml"), "a symlink to nothing"),
    "unreadable": (None, "a file with mode 000 (run as an unprivileged user)"),
    "missing": (None, "a file that does not exist"),
    "dev-zero": (None, "/dev/zero as the file: endless NUL bytes"),
}


def file_payload(name: str, base_text: str) -> tuple[dict[str, FileSpec], str]:
    """Files and the path to pass for a whole-file payload (the file is 'F.yaml')."""
    spec, _ = FILE_PAYLOADS[name]
    if name == "two-docs":
        return {"F.yaml": base_text + "---\n" + base_text}, "F.yaml"
    if name == "nul-bytes":
        return {"F.yaml": base_text.encode() + b"\x00\x00junk: 1\n"}, "F.yaml"
    if name == "latin1":
        return {"F.yaml": b"# caf\xe9\n" + base_text.encode()}, "F.yaml"
    if name == "unreadable":
        return {"F.yaml": Chmod(base_text, 0o000)}, "F.yaml"
    if name == "missing":
        return {}, "F.yaml"
    if name == "dev-zero":
        return {}, "/dev/zero"
    if name == "symlink-loop":
        return {"F.yaml": Symlink("{tmp}/F.yaml")}, "F.yaml"
    return {"F.yaml": spec}, "F.yaml"


# Entry points that read a YAML file: (kind, argv template with FILE, base files, outputs)
ENTRY = {
    # accumulator configurations
    "eval-config": ("config", ["eval", "--config", "FILE", "--a", "1,1,1,1", "--b", "1,1,1,1"],
                    (), []),
    "gemm-config": ("config", ["gemm", "--config", "FILE", "--A", "A.txt", "--B", "B.txt"],
                    ("A.txt", "B.txt"), []),
    "run-config": ("config", ["run", "suite.json", "--config", "FILE", "-o", "out.json"],
                   ("suite.json",), ["out.json"]),
    "identify-config": ("config", ["identify", "--device", "config:FILE", "--space",
                                   "space.yaml", "--smt-seconds", "0"], ("space.yaml",), []),
    "distinguish-config": ("config", ["distinguish", "--preset", "v100-fp16-fp32", "{CFG}",
                                      "FILE", "--timeout", "10"], (), []),
    # candidate spaces
    "check-space": ("space", ["check", "--space", "FILE", "--probe-file", "probe.yaml",
                              "--quiet"], ("probe.yaml",), []),
    "authenticate-space": ("space", ["authenticate", "probe.yaml", "--space", "FILE",
                                     "--quiet"], ("probe.yaml",), []),
    "suite-space": ("space", ["suite", "--in", "binary16", "--out", "binary32", "--k", "4",
                              "--space", "FILE", "--pool", "1", "--random", "0",
                              "--smt-seconds", "0", "-o", "out.json"], (), ["out.json"]),
    "infer-space": ("space", ["infer", "suite.json", "obs.json", "--space", "FILE"],
                    ("suite.json", "obs.json"), []),
    "identify-space": ("space", ["identify", "--device", "preset:v100-fp16-fp32", "--space",
                                 "FILE", "--smt-seconds", "0"], (), []),
    "synthesize-space": ("space", ["synthesize", "--feature", "neab", "--space", "FILE",
                                   "-o", "out.yaml", "--timeout", "10"], (), ["out.yaml"]),
    # probes
    "check-probe": ("probe", ["check", "--probe-file", "FILE", "--space", "space.yaml",
                              "--quiet"], ("space.yaml",), []),
    "authenticate-probe": ("probe", ["authenticate", "FILE", "--space", "space.yaml",
                                     "--quiet"], ("space.yaml",), []),
    # SMT input constraints
    "distinguish-cons": ("cons", ["distinguish", "--preset", "v100-fp16-fp32", "{CFG}",
                                  "cfg.yaml", "{CONS}", "FILE", "--timeout", "10"],
                         ("cfg.yaml",), []),
    "synthesize-cons": ("cons", ["synthesize", "--feature", "neab", "--space", "space.yaml",
                                 "-o", "out.yaml", "{CONS}", "FILE", "--timeout", "10"],
                        ("space.yaml",), ["out.yaml"]),
}
KIND_BASE = {"config": (CFG_OK, "neab"), "space": (SPACE_OK, "k"), "probe": (PROBE_OK, "title"),
             "cons": (CONS_OK, "normal")}

# Which entry points get the full set of payloads; the others get a representative subset.
FULL_ENTRIES = ("eval-config", "check-space", "check-probe", "distinguish-cons")
SUBSET_FIELD = ("tag-int", "tag-python-apply", "bigint", "merge-key", "alias-bomb",
                "deep-flow", "dup-key")
SUBSET_FILE = ("empty", "list-doc", "binary-garbage", "fifo", "dev-zero", "directory",
               "missing")


def _argv(template: list[str], path: str) -> list[str]:
    return [a.replace("FILE", path) for a in template]


for entry, (kind, template, needs, outputs) in ENTRY.items():
    base_text, fld = KIND_BASE[kind]
    full = entry in FULL_ENTRIES
    for pname, (ptext, why) in FIELD_PAYLOADS.items():
        if not full and pname not in SUBSET_FIELD:
            continue
        text, ln = poison(base_text, fld, ptext.replace("{f}", fld))
        files = base(*needs, **{"F.yaml": text})
        no_file = list(outputs) + (["PWNED"] if pname == "tag-python-apply" else [])
        line = ln
        if pname == "alias-bomb":
            line = None  # the anchors' line or the alias's line are both fair
        if pname in ("dup-key", "tab-indent", "unclosed-flow"):
            line = (ln, ln + 1)  # where the construct starts or where it is detected
        if pname in ("deep-flow", "bigint", "merge-key", "anchor-alias", "complex-key",
                     "null-key"):
            line = None if pname in ("deep-flow", "anchor-alias") else ln
        add(f"yaml-{entry}-{pname}", "yaml", _argv(template, "F.yaml"), files=files,
            why=f"{kind} file with {why}", mentions=["F.yaml"], line=line, no_file=no_file)
    for pname, (_spec, why) in FILE_PAYLOADS.items():
        if not full and pname not in SUBSET_FILE:
            continue
        pfiles, path = file_payload(pname, base_text)
        files = base(*needs, **pfiles)
        cls = "fs" if pname in ("directory", "fifo", "symlink-loop", "dangling-symlink",
                                "unreadable", "missing", "dev-zero") else "yaml"
        mention = "/dev/zero" if pname == "dev-zero" else "F.yaml"
        exp: Any = 2
        note = ""
        if kind == "cons" and pname in ("empty", "comments-only", "huge-file"):
            exp, note = (0, 2), " (an empty constraints file may mean 'no constraints')"
        add(f"{cls}-{entry}-{pname}", cls, _argv(template, path), files=files, expect=exp,
            why=f"{kind} file: {why}{note}", mentions=[mention] if exp == 2 else [],
            no_file=list(outputs) if exp == 2 else [])


# -- expr: values on the command line and in probe expressions --------------------------------

def ev(case_id: str, a: str, b: str = "1,1,1,1", c: str | None = None,
       preset: str = "v100-fp16-fp32", **kw: Any) -> Case:
    argv = ["eval", "--preset", preset, f"--a={a}", f"--b={b}"]
    if c is not None:
        argv += [f"--c={c}"]
    return add(case_id, kw.pop("cls", "expr"), argv, **kw)


ev("expr-eval-huge-exponent", "1e999999999,1,1,1", mentions=["a0"], timeout=20,
   why="a decimal with a 10^9 exponent: Fraction builds 10^999999999 (minutes, GBs); must "
       "be refused or saturate at once")
ev("expr-eval-tiny-exponent", "1e-999999999,1,1,1", expect=(0, 2), mentions=["a0"],
   note=["a0"],
   why="a decimal with exponent -10^9: rounds to +0 (note 'rounded') or is refused, "
       "quickly")
ev("expr-eval-huge-exponent-c", "1,1,1,1", c="1e999999999", mentions=["c"],
   why="same for --c")
ev("expr-eval-overflow-to-inf", "100000,1,1,1", expect=(0, 2), mentions=["a0"], note=["a0"],
   why="100000 overflows binary16 and becomes inf: a note must say so (or exit 2); "
       "today it is silent")
ev("expr-eval-overflow-to-inf-c", "1,1,1,1", c="1e39", expect=(0, 2), mentions=["c"],
   note=["c"],
   why="1e39 overflows binary32 c: must be noted or refused")
ev("expr-eval-overflow-e4m3", "1000" + ",1" * 31, b=",".join(["1"] * 32),
   preset="h100-e4m3-fp32", expect=(0, 2), mentions=["a0"], note=["a0"],
   why="1000 is above e4m3's 448 (no infinity in e4m3): saturation/NaN must be noted")
ev("expr-eval-inf-e4m3", "inf" + ",1" * 31, b=",".join(["1"] * 32), preset="h100-e4m3-fp32",
   mentions=["a0"], why="e4m3 has no infinity: 'inf' cannot be an input")
ev("expr-eval-superscript", "2²,1,1,1", mentions=["a0"], why="superscript digit")
ev("expr-eval-power-syntax", "2**10,1,1,1", mentions=["a0"], why="'2**10' is not a decimal")
ev("expr-eval-div-zero", "1/0,1,1,1", mentions=["a0"], why="a fraction with denominator 0")
ev("expr-eval-fraction", "1/3,1,1,1", expect=0, why="a fraction is a valid exact decimal "
   "input; rounded with a note", note=["rounded"])
ev("expr-eval-hex-empty", "0x,1,1,1", mentions=["a0"], why="'0x' with no digits")
ev("expr-eval-hex-garbage", "0xZZZZ,1,1,1", mentions=["a0"], why="non-hex digits")
ev("expr-eval-hex-too-wide", "0x10000,1,1,1", mentions=["a0"],
   why="17-bit pattern for binary16")
ev("expr-eval-hex-negative", "-0x3c00,1,1,1", mentions=["a0"], why="a negative bit pattern")
ev("expr-eval-hex-inner-sign", "0x-1,1,1,1", mentions=["a0"], why="'0x-1'")
ev("expr-eval-hex-plus", "0x+3c00,1,1,1", mentions=["a0"],
   why="'0x+3c00' is not a bit pattern (int() accepts the sign)")
ev("expr-eval-hex-underscore", "0x3c_00,1,1,1", mentions=["a0"],
   why="'0x3c_00' is not a bit pattern (int() accepts underscores)")
ev("expr-eval-hex-fraction", "0x3c00.5,1,1,1", mentions=["a0"], why="'0x3c00.5'")
ev("expr-eval-empty-value", "1,,1,1", mentions=["a1"], why="an empty value between commas")
ev("expr-eval-nan-payload", "nan(123),1,1,1", mentions=["a0"], why="'nan(123)'")
ev("expr-eval-words", "one,two,three,four", mentions=["a0"], why="words")
ev("expr-eval-too-few", "1,1", mentions=["k=4"], why="2 values for k=4")
ev("expr-eval-too-many", ",".join(["1"] * 30000), mentions=["k=4"],
   why="30 000 values for k=4")
ev("expr-eval-fp64-overflow-explain", "1e308,1e308,0,0", b="1e308,1e308,0,0",
   preset="a100-fp64-fp64", expect=0,
   why="valid: binary64 products overflow to inf; --explain must not crash on values too "
       "large for a float") .argv.append("--explain")
ev("expr-eval-explain-huge-fraction", "65504,65504,65504,65504", b="65504,65504,65504,65504",
   c="3.4e38", expect=0, why="valid: the largest binary16 values with a huge c under "
                             "--explain").argv.append("--explain")
ev("expr-eval-subnormal-c-explain", "0x0001,0x0001,0,0", b="0x0001,0x0001,0,0", c="0x00000001",
   expect=0, why="valid: subnormals everywhere under --explain").argv.append("--explain")
ev("expr-eval-json-inf", "inf,1,1,1", b="-inf,1,1,1", expect=0, json_stdout=True,
   why="valid: inf - inf = NaN; --json must stay valid JSON (no bare NaN)").argv.append("--json")


def probe_text(**over: str) -> str:
    """PROBE_OK with fields replaced (values are YAML text)."""
    lines = PROBE_OK.splitlines()
    out = []
    for ln in lines:
        key = ln.split(":", 1)[0]
        if key in over and not ln.startswith(" "):
            out.append(f"{key}: {over.pop(key)}")
        else:
            out.append(ln)
    for k, v in over.items():
        out.append(f"{k}: {v}")
    return "\n".join(out) + "\n"


def probe_with_let(expr: str) -> str:
    return PROBE_OK.replace("vectors:\n", f"let:\n  x: \"{expr}\"\nvectors:\n", 1)


def probe_with_value(expr: str) -> str:
    return PROBE_OK.replace('a: {0: "1"}', f'a: {{0: "{expr}"}}', 1)


def chk(case_id: str, probe: str, cls: str = "probe", space: str = SPACE_OK, **kw: Any) -> Case:
    kw.setdefault("mentions", ["p.yaml"])
    return add(case_id, cls, ["check", "--probe-file", "p.yaml", "--space", "s.yaml",
                              "--quiet"], files={"p.yaml": probe, "s.yaml": space}, **kw)


LET_LINE = 8  # the 'x:' line of probe_with_let
VAL_LINE = 9  # the 'a:' line of the first vector
for cid, e, why in [
        ("huge-division", "2^2048 / 3 * 2^2048 / 3", "values too large for a float in a "
                                                     "division"),
        ("float-overflow-compare", "(2^2048 / 3) > 1.5", "comparison of a huge rational"),
        ("superscript", "2²", "a superscript digit"),
        ("fullwidth-digit", "２", "a full-width digit"),
        ("exponent-limit", "2^2049", "exponent beyond the documented 2048"),
        ("nested-power", "2^2^2^2^2", "2^65536 through right-associative powers"),
        ("div-zero", "1/0", "division by zero"),
        ("log2-non-power", "log2(3)", "log2 of a non-power of two"),
        ("flog2-zero", "flog2(0)", "flog2 of 0"),
        ("unknown-name", "frobnicate + 1", "an unknown name"),
        ("unknown-function", "sqrt(4)", "an unknown function"),
        ("too-long", "1+" * 250 + "1", "over the 400-character limit"),
        ("too-deep", "(" * 45 + "1" + ")" * 45, "over the 40-level nesting limit"),
        ("dangling-op", "1 +", "an incomplete expression"),
        ("huge-hex", "0x" + "f" * 300, "a 1200-bit hexadecimal literal"),
        ("unused-unknown", "nope_name * 2", "an unknown name in a let nothing uses"),
        ("exp-notation", "1e400", "exponent notation (not in the grammar)"),
        ("bool-arith", "(1 < 2) + 1", "arithmetic on a boolean"),
        ("min-no-args", "min()", "min of nothing"),
        ("unicode-minus", "\u22121", "a Unicode minus sign"),
        ("nul-char", "1\\u0000", "a NUL character inside the expression"),
        ("floor-huge", "floor(2^2048/3) * floor(2^2048/3) * 64", "a 4099-bit integer "
                                                                 "(over the 4096-bit cap)")]:
    exp = {"float-overflow-compare": 0, "huge-hex": 0, "fullwidth-digit": (0, 2)}.get(cid, 2)
    chk(f"expr-let-{cid}", probe_with_let(e), cls="expr", line=LET_LINE, expect=exp,
        mentions=["p.yaml", "x"], why=f"let expression: {why}"
        + ("" if exp == 2 else " (valid: exact rationals; within the documented caps)"
           if exp == 0 else " (read as 2, or refused)"))
for cid, e, why in [
        ("huge-value", "2^2048 / 3", "a vector entry too large for every format"),
        ("tiny-value", "2^-2048 / 3", "a vector entry below every format's range"),
        ("superscript-value", "2²", "a superscript digit in a vector entry"),
        ("nan-expr", "0/0", "0/0 as an entry"),
        ("unrepresentable", "1/3", "a value binary16 cannot represent exactly")]:
    chk(f"expr-value-{cid}", probe_with_value(e), cls="expr", line=VAL_LINE,
        mentions=["p.yaml"], why=why)


# -- explode: sizes that blow up ---------------------------------------------------------------

def cfg_text(**fields: Any) -> str:
    d = {"in_format": "binary16", "k": 4}
    d.update(fields)
    return "".join(f"{k}: {v}\n" for k, v in d.items())


add("explode-identify-k-1e9", "explode", ["identify", "--device", "config:big.yaml",
                                          "--smt-seconds", "0"],
    files={"big.yaml": cfg_text(k=1000000000)}, mentions=["k"],
    why="k = 10^9 in a configuration: the default neighbourhood enumerates divisors of k "
        "and builds 10^9-wide rows")
add("explode-eval-k-1e9", "explode", ["eval", "--config", "big.yaml", "--a", "1", "--b", "1"],
    files={"big.yaml": cfg_text(k=1000000000)}, mentions=["k"],
    why="k = 10^9: must be refused as out of range (or by the value count) at once")
add("explode-run-k-1e9", "explode", ["run", "s.json", "--config", "big.yaml", "-o", "o.json"],
    files={"big.yaml": cfg_text(k=1000000000),
           "s.json": js(suite_doc() | {"k": 1000000000})},
    mentions=["s.json"], no_file=["o.json"],
    why="a suite declaring K = 10^9 (with 4-entry rows): must not allocate 10^9 columns")
add("explode-infer-k-1e9", "explode", ["infer", "s.json", "obs.json", "--space", "space.yaml"],
    files=base("obs.json", "space.yaml", **{"s.json": js(suite_doc() | {"k": 10**9})}),
    mentions=["s.json"], why="K = 10^9 in JSON: np.zeros((N, 10^9)) before any row check")
add("explode-suite-k-1e9", "explode", ["suite", "--in", "binary16", "--out", "binary32",
                                       "--k", "1000000000", "--smt-seconds", "0", "-o",
                                       "o.json"], mentions=["k"], no_file=["o.json"],
    why="--k 10^9")
add("explode-suite-k-1e5", "explode", ["suite", "--in", "binary16", "--out", "binary32",
                                       "--k", "100000", "--smt-seconds", "0", "-o", "o.json"],
    mentions=["k"], no_file=["o.json"],
    why="--k 100000: no device has it; the neighbourhood and probes explode")
add("explode-space-k-1e9", "explode", ["check", "--space", "s.yaml", "--probe-file",
                                       "probe.yaml", "--quiet"],
    files=base("probe.yaml", **{"s.yaml": SPACE_OK.replace("k: [4]", "k: [1000000000]")}),
    mentions=["s.yaml", "k"], line=3, why="a space with k: 10^9")
big_vary = "id: big\nformats: {in: binary16, c: binary32, out: binary32}\nk: [4]\nvary:\n" \
           "  neab: [" + ", ".join(str(i % 40) for i in range(500)) + "]\n" \
           "  carry_bits: [" + ", ".join(str(i % 17) for i in range(400)) + "]\n"
add("explode-space-200k", "explode", ["check", "--space", "s.yaml", "--probe-file",
                                      "probe.yaml", "--quiet"],
    files=base("probe.yaml", **{"s.yaml": big_vary}), expect=(0, 2), timeout=20,
    mentions=["s.yaml"],
    why="200 000 combinations (just under the cap): must finish in bounded time or be "
        "refused with the cap named")
add("explode-space-200k-suite", "explode", ["suite", "--in", "binary16", "--out", "binary32",
                                            "--k", "4", "--space", "s.yaml", "--smt-seconds",
                                            "0", "-o", "o.json"],
    files={"s.yaml": big_vary}, expect=(0, 2), mentions=["s.yaml"],
    why="the same space for suite generation")
add("explode-space-1e12", "explode", ["check", "--space", "s.yaml", "--probe-file",
                                      "probe.yaml", "--quiet"],
    files=base("probe.yaml", **{"s.yaml": SPACE_OK.replace(
        "  nfma: [1, 4]", "\n".join(f"  {f}: [{', '.join(['rz', 'rne', 'rd', 'ru'] * 25)}]"
                                    for f in ("final_rounding", "late_rounding"))
        + "\n  carry_bits: [" + ", ".join(str(i % 17) for i in range(10000)) + "]")}),
    mentions=["s.yaml"], why="10^9 combinations: the cap must refuse it at once")
add("explode-space-dup-values", "explode", ["check", "--space", "s.yaml", "--probe-file",
                                            "probe.yaml", "--quiet"],
    files=base("probe.yaml", **{"s.yaml": SPACE_OK.replace(
        "neab: [0, 1]", "neab: [" + ", ".join(["1"] * 150000) + "]")}),
    expect=(0, 2), mentions=["s.yaml"],
    why="150 000 copies of one value: deduplicated quickly, or refused")
sweep_probe = PROBE_OK.replace("vectors:\n", "vectors:\n" + "".join(
    f"  - name: s{i}\n    sweep: {{var: j, from: 0, to: 4095}}\n    a: {{0: \"1\"}}\n"
    f"    b: {{0: \"1\"}}\n" for i in range(400)), 1)
chk("explode-sweep-400x4096", sweep_probe, cls="explode", expect=(1, 2), timeout=20,
    why="400 sweeps of 4096 rows (1.6M rows per configuration): must be refused (a total "
        "row cap) or finish in bounded time and memory")
chk("explode-sweep-1e9", PROBE_OK.replace("vectors:\n", "vectors:\n  - name: s\n    sweep: "
                                          "{var: j, from: 0, to: 1000000000}\n    a: {0: \"1\"}"
                                          "\n    b: {0: \"1\"}\n", 1),
    cls="explode", line=9, mentions=["p.yaml", "sweep"], why="a sweep of 10^9 rows")
chk("explode-sweep-step-0", PROBE_OK.replace("vectors:\n", "vectors:\n  - name: s\n    sweep: "
                                             "{var: j, from: 0, to: 10, step: 0}\n    a: {0: "
                                             "\"1\"}\n    b: {0: \"1\"}\n", 1),
    cls="explode", line=9, mentions=["p.yaml", "step"], why="a sweep with step 0 (infinite)")
chk("explode-sweep-step-neg", PROBE_OK.replace("vectors:\n", "vectors:\n  - name: s\n    sweep:"
                                               " {var: j, from: 0, to: 10, step: -1}\n    a: "
                                               "{0: \"1\"}\n    b: {0: \"1\"}\n", 1),
    cls="explode", line=9, mentions=["p.yaml", "step"], why="a sweep with a negative step")
chk("explode-range-positions", probe_with_value("1").replace('a: {0: "1"}',
                                                            'a: {"0..100000000": "1"}', 1),
    cls="explode", line=VAL_LINE, mentions=["p.yaml"],
    why="a position range of 10^8 entries for k=4")
add("explode-suite-1e6-vectors", "explode", ["run", "big.json", "--preset", "v100-fp16-fp32",
                                             "-o", "o.json"],
    files={"big.json": Repeat(
        '{"schema": "mmaprobe-suite", "version": 1, "formats": {"in": "binary16", "c": '
        '"binary32", "out": "binary32"}, "k": 4, "vectors": [',
        '{"id": "x", "a": ["0x3c00","0x3c00","0x0","0x0"], "b": ["0x3c00","0x3c00","0x0",'
        '"0x0"], "c": "0x0"},', 1000000, '{"id": "last", "a": [], "b": [], "c": "0x0"}]}')},
    mentions=["big.json"], no_file=["o.json"], timeout=20,
    why="a 110 MB suite of 10^6 vectors whose ids repeat: the duplicate at vectors[1] must "
        "be reported at once, without first loading everything")
add("explode-gemm-npy-header", "explode", ["gemm", "--preset", "v100-fp16-fp32", "--A",
                                           "A.npy", "--B", "B.txt"],
    files=base("B.txt", **{"A.npy": npy("<f8", "(1000000, 1000000)", b"")}),
    mentions=["A.npy"], why="a .npy header claiming 10^6 x 10^6 doubles (8 TB), no data")
add("explode-gemm-huge-text", "explode", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.txt",
                                          "--B", "B.txt"],
    files={"A.txt": Repeat("", " ".join(["1"] * 4000) + "\n", 4000),
           "B.txt": Repeat("", "1\n", 4000)}, expect=(0, 2), timeout=20,
    why="A 4000x4000 text (32 MB): must finish in bounded time or refuse by size")
add("explode-bench-rows-1e12", "explode", ["bench", "--rows", "1000000000000"],
    mentions=["rows"], why="--rows 10^12 allocates terabytes")
add("explode-suite-pool-1e9", "explode", ["suite", "--in", "binary16", "--out", "binary32",
                                          "--k", "4", "--space", "space.yaml", "--pool",
                                          "1000000000", "--smt-seconds", "0", "-o", "o.json"],
    files=base("space.yaml"), mentions=["pool"], no_file=["o.json"], why="--pool 10^9")
add("explode-suite-random-1e9", "explode", ["suite", "--in", "binary16", "--out", "binary32",
                                            "--k", "4", "--space", "space.yaml", "--random",
                                            "1000000000", "--pool", "1", "--smt-seconds", "0",
                                            "-o", "o.json"],
    files=base("space.yaml"), mentions=["random"], no_file=["o.json"], why="--random 10^9")
add("explode-identify-max-queries", "explode", ["identify", "--device", "preset:v100-fp16-fp32",
                                                "--space", "space.yaml", "--max-queries",
                                                "1000000000", "--smt-seconds", "0"],
    files=base("space.yaml"), expect=0,
    why="valid: a huge query budget must not matter once the device is identified")
add("explode-identify-smt-1e9", "explode", ["identify", "--device", "preset:v100-fp16-fp32",
                                            "--smt-seconds", "1e12"], expect=(0, 1, 2),
    timeout=60, why="--smt-seconds 10^12 on the default neighbourhood: must not hang for "
                    "ever (and z3's millisecond timeout must not overflow)")
add("explode-distinguish-timeout-huge", "explode", ["distinguish", "--preset", "v100-fp16-fp32",
                                                    "--preset", "v100-fp16-fp32", "--timeout",
                                                    "1e300"], expect=(0, 2), timeout=30,
    why="--timeout 1e300: z3 takes milliseconds as an unsigned int; overflow must not crash")
add("explode-validate-wide-row", "explode", ["validate", "data"],
    files=dataset(patch={"a": {1: " ".join(["3f800000"] * 200000)}}),
    mentions=["a_V100_fp16.txt"], line=2,
    why="a 200 000-word first line sets K = 200 000; line 2 must be reported, quickly")


# -- types: wrong types accepted silently ----------------------------------------------------

CFG_TYPE_CASES = [
    ("nfma-float", {"nfma": "4.0"}, "nfma", "nfma: 4.0 (a float)"),
    ("nfma-string", {"nfma": '"4"'}, "nfma", 'nfma: "4"'),
    ("neab-string", {"neab": '"2"'}, "neab", 'neab: "2"'),
    ("neab-float", {"neab": "2.0"}, "neab", "neab: 2.0"),
    ("neab-bool", {"neab": "true"}, "neab", "neab: true (bool is an int in Python)"),
    ("k-bool", {"k": "true"}, "k", "k: true"),
    ("k-float", {"k": "4.0"}, "k", "k: 4.0"),
    ("k-string", {"k": '"4"'}, "k", 'k: "4"'),
    ("k-zero", {"k": "0"}, "k", "k: 0"),
    ("k-negative", {"k": "-4"}, "k", "k: -4"),
    ("k-null", {"k": "null"}, "k", "k: null"),
    ("k-list", {"k": "[4]"}, "k", "k: [4]"),
    ("carry-float", {"carry_bits": "2.0"}, "carry_bits", "carry_bits: 2.0"),
    ("carry-bool", {"carry_bits": "false"}, "carry_bits", "carry_bits: false"),
    ("overflow-string", {"product_overflow": '"yes"'}, "product_overflow", 'a string'),
    ("overflow-int", {"product_overflow": "1"}, "product_overflow", "1 for a boolean"),
    ("flush-int", {"flush": "5"}, "flush", "flush: 5"),
    ("flush-mapping", {"flush": "{inputs: 1}"}, "flush", "flush: a mapping"),
    ("flush-unknown", {"flush": "[input]"}, "flush", "flush: [input] (typo)"),
    ("flush-nested", {"flush": "[[inputs]]"}, "flush", "flush: a nested list"),
    ("in-format-int", {"in_format": "16"}, "in_format", "in_format: 16"),
    ("in-format-list", {"in_format": "[binary16]"}, "in_format", "in_format: a list"),
    ("in-format-unknown", {"in_format": "binary17"}, "in_format", "an unknown format"),
    ("algorithm-null", {"algorithm": "null"}, "algorithm", "algorithm: null"),
    ("algorithm-list", {"algorithm": "[fused]"}, "algorithm", "algorithm: a list "
                                                               "(unhashable)"),
    ("nan-bool", {"nan": "true"}, "nan", "nan: true"),
    ("interleave-off", {"interleave": "off"}, "interleave", "interleave: off (YAML 1.1 "
                                                            "false)"),
    ("c-placement-no", {"c_placement": "no"}, "c_placement", "c_placement: no (false)"),
    ("out-frac-float", {"out_frac_bits": "10.0"}, "out_frac_bits", "out_frac_bits: 10.0"),
    ("final-rounding-list", {"final_rounding": "[rz]"}, "final_rounding", "a list"),
    ("unknown-field", {"nefa": "2"}, "nefa", "a misspelt field"),
    ("neab-huge", {"neab": "100000"}, "neab", "neab out of range"),
    ("nfma-not-divisor", {"nfma": "3"}, "nfma", "nfma not dividing k"),
    ("gps-binary16", {"algorithm": "gps", "out_format": "binary16", "c_format": "binary16"},
     "out_format", "contradictory: gps with binary16 output"),
    ("sfma-nfma4", {"algorithm": "sfma", "nfma": "4"}, "nfma", "contradictory: sfma, nfma=4"),
    ("pairs-k4-nfma4", {"interleave": "pairs"}, "interleave",
     "contradictory: interleave pairs with nfma=k"),
]
for cid, fields, fld, why in CFG_TYPE_CASES:
    add(f"types-config-{cid}", "types", ["eval", "--config", "c.yaml", "--a", "1,1,1,1", "--b",
                                         "1,1,1,1"],
        files={"c.yaml": cfg_text(**fields)}, mentions=["c.yaml", fld], why=why)
for cid, fields, fld, why in CFG_TYPE_CASES[:8]:
    add(f"types-run-config-{cid}", "types", ["run", "suite.json", "--config", "c.yaml", "-o",
                                             "o.json"],
        files=base("suite.json", **{"c.yaml": cfg_text(**fields)}),
        mentions=["c.yaml", fld], no_file=["o.json"], why=why + " (run --config)")
for cid, fields, fld, why in CFG_TYPE_CASES[:6]:
    add(f"types-distinguish-config-{cid}", "types",
        ["distinguish", "--preset", "v100-fp16-fp32", "{CFG}", "c.yaml", "--timeout", "10"],
        files={"c.yaml": cfg_text(**fields)}, mentions=["c.yaml", fld],
        why=why + " (distinguish)")
add("types-config-flush-string", "types", ["eval", "--config", "c.yaml", "--a", "1,1,1,1",
                                           "--b", "1,1,1,1"],
    files={"c.yaml": cfg_text(flush="inputs")}, expect=0,
    why="valid: a single flush stage may be written as a string (documented)")
add("types-config-format-case", "types", ["eval", "--config", "c.yaml", "--a", "1,1,1,1",
                                          "--b", "1,1,1,1"],
    files={"c.yaml": cfg_text(in_format="BINARY16")}, expect=0,
    why="valid: format names are case-insensitive")
add("types-config-bom", "types", ["eval", "--config", "c.yaml", "--a", "1,1,1,1", "--b",
                                  "1,1,1,1"],
    files={"c.yaml": "\ufeff" + CFG_OK}, expect=0, why="valid: a UTF-8 byte-order mark")
add("types-config-crlf", "types", ["eval", "--config", "c.yaml", "--a", "1,1,1,1", "--b",
                                   "1,1,1,1"],
    files={"c.yaml": CFG_OK.replace("\n", "\r\n")}, expect=0,
    why="valid: Windows line endings")

SPACE_TYPE_CASES = [
    ("k-bool", ("k: [4]", "k: true"), "k", 3, "k: true"),
    ("k-bool-in-list", ("k: [4]", "k: [4, true]"), "k", 3, "k: [4, true]"),
    ("k-float", ("k: [4]", "k: 4.0"), "k", 3, "k: 4.0"),
    ("k-string", ("k: [4]", 'k: "4"'), "k", 3, 'k: "4"'),
    ("k-empty-list", ("k: [4]", "k: []"), "k", 3, "k: [] (no K at all)"),
    ("neab-string", ("neab: [0, 1]", 'neab: ["0", "1"]'), "neab", 5, 'neab values as strings'),
    ("nfma-float", ("nfma: [1, 4]", "nfma: [1.0, 4.0]"), "nfma", 6, "nfma values as floats"),
    ("vary-scalar", ("neab: [0, 1]", "neab: 1"), "neab", 5, "vary value not a list"),
    ("vary-empty", ("neab: [0, 1]", "neab: []"), "neab", 5, "vary value an empty list"),
    ("vary-k", ("neab: [0, 1]", "k: [4, 8]"), "k", 5, "k inside vary"),
    ("vary-unknown", ("neab: [0, 1]", "nefa: [0, 1]"), "nefa", 5, "unknown field in vary"),
    ("formats-unknown", ("in: binary16", "in: binary17"), "in", 2, "unknown input format"),
    ("formats-int", ("in: binary16", "in: 16"), "in", 2, "format as integer"),
    ("formats-extra", ("c: binary32", "c: binary32, acc: binary32"), "formats", 2,
     "an unknown role in formats"),
    ("id-list", ("id: small", "id: [a, b]"), "id", 1, "id: a list"),
    ("id-missing", ("id: small", "title: no id"), "id", None, "no id"),
    ("unknown-top", ("id: small", "id: small\nfixd: {neab: 1}"), "fixd", 2,
     "misspelt top-level field"),
    ("fixed-k", ("vary:", "fixed: {k: 8}\nvary:"), "k", 4, "k inside fixed"),
    ("fixed-list", ("vary:", "fixed: [neab]\nvary:"), "fixed", 4, "fixed: a list"),
    ("exclude-unknown", ("vary:", "exclude: [{nefa: 1}]\nvary:"), "exclude", 4,
     "exclude naming an unknown field"),
    ("exclude-scalar", ("vary:", "exclude: 3\nvary:"), "exclude", 4, "exclude: 3"),
    ("all-invalid", ("  nfma: [1, 4]", "  nfma: [3]"), None, None,
     "contradictory: every combination invalid (nfma 3 does not divide k 4): '0 "
     "configurations, 2 invalid combinations skipped' must not exit 0"),
    ("all-excluded", ("vary:", "exclude: [{algorithm: fused}]\nvary:"), None, None,
     "exclude {algorithm: fused} (a default, not varied) must exclude every configuration "
     "or be refused; it silently matches nothing"),
    ("gps-binary16", ("vary:", "fixed: {algorithm: gps}\nvary:"), None, None,
     "fixed gps with neab/nfma 1 (gps rejects nfma=1? and binary32 out): contradictions"),
]
for cid, (old, new), fld, ln, why in SPACE_TYPE_CASES:
    text = SPACE_OK.replace(old, new, 1)
    if cid == "gps-binary16":
        text = text.replace("binary32, out: binary32", "binary16, out: binary16")
    ments = ["s.yaml"] + ([fld] if fld else [])
    add(f"types-space-{cid}", "types", ["check", "--space", "s.yaml", "--probe-file",
                                        "probe.yaml", "--quiet"],
        files=base("probe.yaml", **{"s.yaml": text}), mentions=ments, line=ln, why=why)
for cid, (old, new), fld, _ln, why in SPACE_TYPE_CASES[:3] + SPACE_TYPE_CASES[-3:]:
    text = SPACE_OK.replace(old, new, 1)
    if cid == "gps-binary16":
        text = text.replace("binary32, out: binary32", "binary16, out: binary16")
    ments = ["s.yaml"] + ([fld] if fld else [])
    add(f"types-suite-space-{cid}", "types", ["suite", "--in", "binary16", "--out", "binary32",
                                              "--k", "4", "--space", "s.yaml", "--pool", "1",
                                              "--random", "0", "--smt-seconds", "0", "-o",
                                              "o.json"],
        files={"s.yaml": text}, mentions=ments, no_file=["o.json"], why=why + " (suite)")
add("types-check-no-probe-applies", "types", ["check", "--space", "s.yaml", "--probe-file",
                                              "probe.yaml", "--quiet"],
    files=base("probe.yaml", **{"s.yaml": SPACE_OK.replace("in: binary16", "in: e5m2")}),
    mentions=["s.yaml"],
    why="no probe applies to any configuration of the space: the check checked nothing "
        "and must not report success")
add("types-check-glob-no-space-match", "types", ["check", "--probes", "t-*", "--space",
                                                 "s.yaml", "--probe-file", "probe.yaml",
                                                 "--quiet"],
    files=base("probe.yaml", **{"s.yaml": SPACE_OK.replace("k: [4]", "k: [4]").replace(
        "binary32, out: binary32", "binary16, out: binary16")}),
    mentions=["s.yaml"], why="formats of the space match no probe (out binary16 vs binary32)")
add("types-authenticate-no-test-applies", "types", ["authenticate", "probe.yaml", "--space",
                                                    "s.yaml", "--quiet"],
    files=base("probe.yaml", **{"s.yaml": SPACE_OK.replace("in: binary16", "in: e5m2")}),
    mentions=["s.yaml"], why="authenticate where every test is 'not applicable': exit 0 "
                             "says the suite was authenticated")
add("types-synthesize-zero-configs", "types", ["synthesize", "--feature", "neab", "--space",
                                               "s.yaml", "-o", "o.yaml"],
    files={"s.yaml": SPACE_OK.replace("  nfma: [1, 4]", "  nfma: [3]")},
    mentions=["s.yaml"], no_file=["o.yaml"], why="synthesize over a space with 0 "
                                                 "configurations")
add("types-synthesize-one-value", "types", ["synthesize", "--feature", "neab", "--space",
                                            "s.yaml", "-o", "o.yaml", "--timeout", "10"],
    files={"s.yaml": SPACE_OK.replace("neab: [0, 1]", "neab: [1]")}, expect=(0, 2),
    why="every configuration has the same neab: nothing to decide (a trivial probe or a "
        "clear refusal; no traceback)")
add("types-infer-zero-configs", "types", ["infer", "suite.json", "obs.json", "--space",
                                          "s.yaml"],
    files=base("suite.json", "obs.json", **{"s.yaml": SPACE_OK.replace("  nfma: [1, 4]",
                                                                       "  nfma: [3]")}),
    mentions=["s.yaml"], why="infer over an empty space")

CONS_TYPE_CASES = [
    ("finite-string", 'finite: "yes"', "finite"), ("finite-int", "finite: 1", "finite"),
    ("exp-range-float", "exp_range: [1.5, 2]", "exp_range"),
    ("exp-range-bool", "exp_range: [true, false]", "exp_range"),
    ("exp-range-reversed", "exp_range: [4, -4]", "exp_range"),
    ("exp-range-huge", "exp_range: [-1000000, 1000000]", "exp_range"),
    ("zero-a-bool", "zero_a: [true]", "zero_a"), ("zero-a-out-of-k", "zero_a: [1000]", "zero_a"),
    ("zero-a-negative", "zero_a: [-1]", "zero_a"),
    ("sign-a-int", "sign_a: 5", "sign_a"), ("sign-a-bad-char", 'sign_a: "+*+-"', "sign_a"),
    ("sign-a-wrong-length", 'sign_a: "++"', "sign_a"), ("sign-c-empty", 'sign_c: ""', "sign_c"),
    ("unknown-field", "finit: true", "finit"),
    ("contradiction", 'zero_a: [0, 1, 2, 3]\nzero_c: true\nsign_c: "-"', None),
]
for cid, text, fld in CONS_TYPE_CASES:
    ments = ["c2.yaml"] + ([fld] if fld else [])
    exp: Any = 2
    why = f"constraints: {text!r}"
    if cid == "exp-range-huge":
        exp, why = (0, 2), ("an exponent range wider than any format: a no-op constraint "
                            "(accepted) or refused; no overflow in the encoding")
        ments = ["c2.yaml"]
    if cid == "contradiction":
        exp, why = (0, 2), ("constraints that force every product and c to zero: "
                            "'equivalent' is a proof under them, or refused; no traceback")
        ments = []
    add(f"types-cons-{cid}", "types", ["distinguish", "--preset", "v100-fp16-fp32", "{CFG}",
                                       "cfg.yaml", "{CONS}", "c2.yaml", "--timeout", "10"],
        files=base("cfg.yaml", **{"c2.yaml": text + "\n"}), mentions=ments, expect=exp,
        why=why)


# -- data: MATLAB-layout files, d-files, GEMM matrices ---------------------------------------

def val(case_id: str, files: dict, argv_extra: tuple = (), **kw: Any) -> Case:
    return add(case_id, kw.pop("cls", "data"), ["validate", "data", *argv_extra], files=files,
               **kw)


val("data-validate-ok", dataset(), expect=0, why="valid: the synthetic dataset validates")
val("data-validate-ok-fp16-out", dataset(outs=("fp32", "fp16")), expect=0,
    why="valid: fp32 and fp16 outputs")
A = "a_V100_fp16.txt"
val("data-binary-garbage", dataset() | {dpath(): bytes(range(256)) * 8}, mentions=[A],
    why="binary garbage in the a-file (UnicodeDecodeError)")
val("data-latin1-byte", dataset(patch={"a": {5: "3f800000 3f800000 3f800000 3f800000 \xe9"}}),
    mentions=[A], line=5, why="a stray non-ASCII character on line 5")
val("data-negative-hex", dataset(patch={"a": {3: "-0000001 3f800000 3f800000 3f800000"}}),
    mentions=[A], line=3, why="a negative hex word")
val("data-short-hex", dataset(patch={"a": {3: "3c00 3f800000 3f800000 3f800000"}}),
    mentions=[A], line=3, why="a hex word of 4 digits (8 expected) is read as 0x00003c00")
val("data-plus-hex", dataset(patch={"a": {3: "+3f80000 3f800000 3f800000 3f800000"}}),
    mentions=[A], line=3, why="'+3f80000' (int() accepts the sign)")
val("data-underscore-hex", dataset(patch={"a": {3: "3f80_000 3f800000 3f800000 3f800000"}}),
    mentions=[A], line=3, why="'3f80_000' (int() accepts underscores)")
val("data-0x-hex", dataset(patch={"a": {3: "0x3f8000 3f800000 3f800000 3f800000"}}),
    mentions=[A], line=3, why="'0x3f8000': int(w, 16) accepts the prefix")
val("data-long-hex", dataset(patch={"a": {3: "3f8000000 3f800000 3f800000 3f800000"}}),
    mentions=[A], line=3, why="a 9-digit word")
val("data-ragged-row", dataset(patch={"a": {7: "3f800000 3f800000 3f800000"}}),
    mentions=[A], line=7, why="3 words where 4 are expected")
val("data-unrepresentable-line40", dataset(patch={"a": {40: "3f800001 3f800000 3f800000 "
                                                           "3f800000"}}),
    mentions=[A], line=40, why="a value binary16 cannot hold on line 40 (reported at line "
                               "10 today: index divided by K)")
val("data-unrepresentable-b-line33", dataset(patch={"b": {33: "3f800000 3f800000 3f800000 "
                                                             "3f801000"}}),
    mentions=["b_V100_fp16.txt"], line=33, why="same in the b-file, last column")
val("data-c-31-chars", dataset(patch={"c": {12: "0" * 31}}), mentions=["c_V100_fp32.txt"],
    line=12, why="a 31-character binary string")
val("data-c-bad-char", dataset(patch={"c": {12: "0" * 30 + "2" + "0"}}),
    mentions=["c_V100_fp32.txt"], line=12, why="a '2' in a binary string")
val("data-c-spaces-inside", dataset(patch={"c": {12: "0" * 16 + " " + "0" * 16}}),
    mentions=["c_V100_fp32.txt"], line=12, why="a space inside a binary string")
val("data-d-bad-line", dataset(patch={"dfp32": {20: "x" * 32}}), mentions=["d_V100_fp32.txt"],
    line=20, why="garbage in the d-file")
val("data-row-count-mismatch", dataset() | {dpath(kind="c"): "\n".join(
    [f32bin(0.0)] * 47) + "\n"}, mentions=["c", "47"], why="47 c rows for 48 a rows")
val("data-crlf", {k: v.replace("\n", "\r\n") for k, v in dataset().items()}, expect=0,
    why="valid: CRLF line endings")
val("data-tabs", {k: (v.replace(" ", "\t") if "/a_" in k else v)
                  for k, v in dataset().items()}, expect=0, why="valid: tab separators")
val("data-blank-lines", {k: v.replace("\n", "\n\n") for k, v in dataset().items()}, expect=0,
    why="valid: blank lines are skipped")
val("data-no-d-file", dataset(drop=("dfp32",)), mentions=["d_"],
    why="a folder without a d-file: '0 combinations, 0 mismatches', exit 0 today")
val("data-only-d-file", {dpath(kind="d"): dataset()[dpath(kind="d")]},
    mentions=["a_V100_fp16.txt"], why="a folder with only the d-file")
val("data-unknown-folder", dataset(folder="fp12"), mentions=["fp12"],
    why="an unknown format folder")
val("data-unknown-gpu", dataset(gpu="Z999"), mentions=["Z999"], expect=1, stream="any",
    why="a GPU with no presets: a failing row 'no preset for this shape' (exit 1), as "
        "validate reports every shape it cannot check")
val("data-empty-root", {"data": Dir()}, mentions=["data"], why="an empty dataset root")
val("data-root-is-file", {"data": "not a directory\n"}, mentions=["data"],
    why="the dataset root is a file")
val("data-empty-a", dataset() | {dpath(): ""}, mentions=[A], why="an empty a-file")
val("data-whitespace-a", dataset() | {dpath(): "   \n\n \t\n"}, mentions=[A],
    why="an a-file of whitespace")
val("data-a-is-dir", {k: v for k, v in dataset().items() if k != dpath()} | {dpath(): Dir()},
    mentions=[A], why="the a-file is a directory")
val("data-a-fifo", {k: v for k, v in dataset().items() if k != dpath()} | {dpath(): Fifo()},
    cls="fs", mentions=[A], why="the a-file is a FIFO (blocks)")
val("data-a-dev-zero", {k: v for k, v in dataset().items() if k != dpath()}
    | {dpath(): Symlink("/dev/zero")}, cls="fs", mentions=[A],
    why="the a-file is a symlink to /dev/zero (one endless line)")
val("data-a-unreadable", dataset() | {dpath(): Chmod(dataset()[dpath()], 0)}, cls="fs",
    mentions=[A], why="an unreadable a-file")
val("data-subdir-loop", dataset() | {"data/V100/loop": Symlink("{tmp}/data/V100")}, cls="fs",
    mentions=["loop"], expect=(0, 2),
    why="a symlink loop as a format folder: ignored or refused, no recursion")
val("data-k-zero-rows", dataset() | {dpath(): "\n".join([" "] * 48) + "\n"}, mentions=[A],
    why="48 lines without words")
val("data-nan-rows", dataset(patch={"a": {2: "7fc00000 3f800000 3f800000 3f800000"},
                                    "dfp32": {2: "0" + "1" * 9 + "0" * 22}}),
    expect=(0, 1), why="valid: a NaN input with a NaN output (exit 0), or 1 if the NaN "
                       "pattern differs; never 2 or a traceback")
val("data-mismatch", dataset(patch={"dfp32": {5: f32bin(123.0)}}), expect=1,
    mentions=[], why="legitimate mismatch: exit 1 (check failed)")
val("data-limit-negative", dataset(), argv_extra=("--limit", "-5"), mentions=["limit"],
    why="--limit -5 silently drops the last 5 rows")
val("data-limit-zero", dataset(), argv_extra=("--limit", "0"), mentions=["limit"],
    why="--limit 0 silently means 'all rows'")
val("data-show-negative", dataset(), argv_extra=("--show", "-1"), mentions=["show"],
    why="--show -1")
val("data-gpu-traversal", dataset(), argv_extra=("--gpu", "../../etc"), mentions=["etc"],
    why="--gpu ../../etc: not a GPU folder")
val("data-gpu-empty", dataset(), argv_extra=("--gpu", ""), mentions=["gpu"],
    why="--gpu ''")
add("data-validate-missing-root", "data", ["validate", "nowhere"], mentions=["nowhere"],
    why="a dataset root that does not exist")
add("data-validate-default-limit-negative", "data", ["validate", "--limit", "-1", "--gpu",
                                                     "V100"],
    mentions=["limit"], why="--limit -1 on the default dataset (../shared/hwdata)",
    timeout=30)

# infer with MATLAB d-files
INF = ["infer", "suite.json", "d.txt", "--space", "space.yaml"]
D_OK = "\n".join([f32bin(1.0), f32bin(2.0), f32bin(2.0)]) + "\n"
for cid, text, ln, why, exp in [
        ("ok", D_OK, None, "valid d-file", 0),
        ("short", "\n".join([f32bin(1.0), f32bin(2.0)]) + "\n", None, "2 rows for 3 vectors", 2),
        ("long", D_OK + f32bin(2.0) + "\n", None, "4 rows for 3 vectors", 2),
        ("bad-char", D_OK.replace("1", "2", 1), 1, "a '2' on line 1", 2),
        ("33-chars", D_OK + "0" * 33 + "\n", 4, "33 characters", 2),
        ("hex-not-binary", "3f800000\n40000000\n40000000\n", 1, "hex words instead of binary", 2),
        ("binary-garbage", bytes(range(256)) * 4, None, "binary garbage", 2),
        ("empty", "", None, "an empty d-file", 2),
        ("crlf", D_OK.replace("\n", "\r\n"), None, "valid: CRLF", 0)]:
    add(f"data-dfile-{cid}", "data", INF, files=base("suite.json", "space.yaml", **{"d.txt": text}),
        expect=exp, mentions=["d.txt"] if exp == 2 else [], line=ln, why=why)
suite16 = js(suite_doc() | {"formats": {"in": "binary16", "c": "binary16", "out": "binary16"}})
add("data-dfile-unrepresentable-fp16", "data", ["infer", "s16.json", "d.txt"],
    files={"s16.json": suite16, "d.txt": "\n".join([f32bin(1.0), f32bin(1.0 + 2**-20),
                                                     f32bin(2.0)]) + "\n"},
    mentions=["d.txt"], line=2, why="a binary32 d value that a binary16 output cannot be")

# gemm matrices
GEMM = ["gemm", "--preset", "v100-fp16-fp32", "--A", "A", "--B", "B.txt"]
for cid, content, why, exp, ment in [
        ("ok", "1 2 3 4\n", "valid: a 1x4 matrix", 0, None),
        ("garbage", "1 2 x 4\n", "a word in a text matrix", 2, "A"),
        ("ragged", "1 2 3 4\n1 2\n", "ragged rows", 2, "A"),
        ("empty", "", "an empty file", 2, "A"),
        ("binary", bytes(range(256)) * 4, "binary garbage", 2, "A"),
        ("nan", "nan 1 1 1\n", "NaN in A (the result is NaN: valid, or refused)", (0, 2), None),
        ("inf", "inf 1 1 1\n", "inf in A (valid, or refused)", (0, 2), None),
        ("huge", "1e400 1 1 1\n", "1e400 reads as inf silently", (0, 2), None),
        ("unrepresentable", "1.0001 1 1 1\n", "1.0001 is not a binary16 value", 2, "A"),
        ("3d-shape-mismatch", "1 2 3\n", "A 1x3 with B 4x1 (shape error)", 2, "A"),
        ("comma-separated", "1,2,3,4\n", "commas instead of spaces", 2, "A"),
        ("hex", "0x3c00 1 1 1\n", "hex in a text matrix", 2, "A")]:
    add(f"data-gemm-{cid}", "data", GEMM, files=base("B.txt", A=content), expect=exp,
        mentions=[ment] if ment else [], why=why)


for cid, content, why in [
        ("npy-object", npy("|O", "(1, 4)", b"\x80\x04N."), "an object .npy (pickle)"),
        ("npy-complex", npy("<c16", "(1, 4)", b"\x00" * 64), "complex values"),
        ("npy-3d", npy("<f8", "(1, 2, 2)", b"\x00" * 32), "a 3-D array"),
        ("npy-truncated", npy("<f8", "(1, 4)", b"\x00" * 7), "data shorter than the header "
                                                             "says"),
        ("npy-strings", npy("<U3", "(1, 4)", "abc".encode("utf-32-le") * 4), "strings"),
        ("npy-bad-header", b"\x93NUMPY\x01\x00\x10\x00{'descr': 1}   \n", "a broken header"),
        ("npy-not-npy", b"hello", "a .npy that is not one"),
        ("npy-0d", npy("<f8", "()", b"\x00" * 8), "a 0-d array")]:
    add(f"data-gemm-{cid}", "data", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.npy",
                                     "--B", "B.txt"],
        files=base("B.txt", **{"A.npy": content}), mentions=["A.npy"], why=why)
add("data-gemm-B-shape", "data", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.txt",
                                  "--B", "B2.txt"],
    files=base("A.txt", **{"B2.txt": "1 1\n1 1\n1 1\n"}), mentions=["B"],
    why="A 1x4, B 3x2: shape error naming B")
add("data-gemm-C-shape", "data", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.txt",
                                  "--B", "B.txt", "--C", "C.txt"],
    files=base("A.txt", "B.txt", **{"C.txt": "1 2 3\n4 5 6\n"}), mentions=["C"],
    why="C 2x3 for a 1x1 product: cannot broadcast")
add("data-gemm-no-B", "data", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.txt"],
    files=base("A.txt"), mentions=["--B"], why="--A without --B")
add("data-gemm-c-first-inexact-alpha", "data", ["gemm", "--preset", "v100-fp16-fp32", "--A",
                                                "A.txt", "--B", "B.txt", "--scheme", "c_first",
                                                "--alpha", "0.1"],
    files=base("A.txt", "B.txt"), mentions=["alpha"],
    why="c_first needs alpha*A exact in binary16; 0.1*A is not")


# -- output: where and how results are written ---------------------------------------------------

RUN = ["run", "suite.json", "--preset", "v100-fp16-fp32", "-o"]


def run_out(case_id: str, out: str, files: dict | None = None, **kw: Any) -> Case:
    f = base("suite.json")
    f.update(files or {})
    return add(case_id, "output", RUN + [out], files=f, **kw)


run_out("output-run-missing-dir", "nodir/o.json", mentions=["nodir"], no_file=["nodir"],
        why="-o into a directory that does not exist")
run_out("output-run-dir", "outdir", {"outdir": Dir()}, mentions=["outdir"],
        why="-o names a directory")
run_out("output-run-dev-full", "/dev/full", mentions=["/dev/full"],
        why="-o /dev/full: the write fails with ENOSPC")
run_out("output-run-readonly-file", "ro.json", {"ro.json": Chmod("PREVIOUS\n", 0o444)},
        mentions=["ro.json"], unchanged=["ro.json"], why="-o a read-only file")
run_out("output-run-readonly-dir", "rodir/o.json", {"rodir": Dir(0o555)},
        mentions=["rodir"], no_file=["rodir/o.json"],
        why="-o inside a read-only directory")
run_out("output-run-overwrite-suite", "suite.json", unchanged=["suite.json"],
        mentions=["suite.json"], why="-o the suite itself: the input is destroyed")
run_out("output-run-empty-name", "", mentions=["output"], why="-o ''")
run_out("output-run-efbig", "o.json", fsize=200, no_file=["o.json"], mentions=["o.json"],
        why="the write fails after 200 bytes (EFBIG): no half-written file may remain")
run_out("output-run-efbig-existing", "o.json", {"o.json": "PREVIOUS CONTENT\n"}, fsize=200,
        unchanged=["o.json"], mentions=["o.json"],
        why="a failed write must leave the previous file intact")
run_out("output-run-efbig-dfile", "o.txt", fsize=40, no_file=["o.txt"], mentions=["o.txt"],
        why="a d-file write that fails after one row")
run_out("output-run-unicode-name", "sortie-é-😀.json", expect=0,
        why="valid: a non-ASCII output name")
run_out("output-run-undecodable-name", b"o-\xff.json", expect=0,
        why="valid on Linux: a file name that is not UTF-8 (printing it must not crash)")
run_out("output-run-newline-name", "o\nx.json", expect=(0, 2),
        why="a newline in the output name: written, or refused; no traceback")
run_out("output-run-long-name", "x" * 300 + ".json", mentions=["x" * 20],
        why="a 300-character file name (ENAMETOOLONG)")
run_out("output-run-long-path", "/".join(["d" * 200] * 25) + "/o.json", mentions=["ddd"],
        why="a 5000-character path")
run_out("output-run-symlink-dir-loop", "loop/o.json", {"loop": Symlink("{tmp}/loop")},
        mentions=["loop"], why="a directory that is a symlink loop")

# A suite's layout record (suite --layout matlab-tc) is {kind, gpu, files: {a, b, c}} with
# file names relative to the suite; run never writes by it (only where -o says), and refuses
# an -o that is one of the files it names.
def lay_files(root: str, gpu: str) -> dict:
    return {n: f"{root}/{gpu}/fp16/{n}_{gpu}_{'fp32' if n == 'c' else 'fp16'}.txt"
            for n in ("a", "b", "c")}


lay_suite = suite_doc() | {"layout": {"kind": "matlab-tc", "gpu": "DEV",
                                      "files": lay_files("elsewhere", "DEV")}}
run_out("output-run-layout-field-writes", "o.json",
        {"suite.json": js(lay_suite), "elsewhere/DEV/fp16": Dir()}, expect=0,
        no_file=["elsewhere/DEV/fp16/d_DEV_fp32.txt"],
        why="valid: a suite's 'layout' record (data in the input file) names its layout "
            "files; run writes only -o, never a second file where the record points")
trav_suite = suite_doc() | {"layout": {"kind": "matlab-tc", "gpu": "../escape",
                                       "files": lay_files("lay", "../escape")}}
run_out("output-run-layout-gpu-traversal", "o.json",
        {"suite.json": js(trav_suite), "lay": Dir(), "escape/fp16/d_..": Dir()},
        mentions=["gpu"], no_file=["escape/fp16/d_../escape_fp32.txt", "o.json"],
        why="a layout record whose gpu is '../escape' (not a folder name) is malformed")
old_layout = suite_doc() | {"layout": {"kind": "matlab-tc", "root": "{tmp}/L", "gpu": "G",
                                       "files": {}}}
run_out("output-run-layout-root", "o.json", {"suite.json": js(old_layout)},
        mentions=["root"], no_file=["o.json"],
        why="a layout record with a 'root' (the record names files; nothing writes by it)")
bad_layout = suite_doc() | {"layout": {"kind": "matlab-tc"}}
run_out("output-run-layout-incomplete", "o.json", {"suite.json": js(bad_layout)},
        mentions=["layout"], why="a layout field without root/gpu (KeyError)")
bad_layout2 = suite_doc() | {"layout": "matlab-tc"}
run_out("output-run-layout-string", "o.json", {"suite.json": js(bad_layout2)},
        mentions=["layout"], why="a layout field that is a string (AttributeError)")
lay_self = suite_doc() | {"layout": {"kind": "matlab-tc", "gpu": "G",
                                     "files": lay_files("L", "G")}}
run_out("output-run-overwrites-layout", "L/G/fp16/a_G_fp16.txt",
        {"suite.json": js(lay_self), "L/G/fp16/a_G_fp16.txt": "3c00 3c00 0 0\n"},
        unchanged=["L/G/fp16/a_G_fp16.txt"], mentions=["a_G_fp16.txt"], expect=2,
        why="run -o onto the suite's own layout a-file (a .txt: written as a d-file) "
            "destroys the inputs")

SUITE_ARGS = ["suite", "--in", "binary16", "--out", "binary32", "--k", "4", "--space",
              "space.yaml", "--pool", "1", "--random", "0", "--smt-seconds", "0"]


def suite_out(case_id: str, extra: list, files: dict | None = None, **kw: Any) -> Case:
    f = base("space.yaml")
    f.update(files or {})
    return add(case_id, "output", SUITE_ARGS + extra, files=f, **kw)


suite_out("output-suite-missing-dir", ["-o", "nodir/s.json"], mentions=["nodir"],
          no_file=["nodir"], why="suite -o into a missing directory")
suite_out("output-suite-dir", ["-o", "outdir"], {"outdir": Dir()}, mentions=["outdir"],
          why="suite -o a directory")
suite_out("output-suite-dev-full", ["-o", "/dev/full"], mentions=["/dev/full"],
          why="suite -o /dev/full")
suite_out("output-suite-readonly", ["-o", "ro.json"], {"ro.json": Chmod("PREV\n", 0o444)},
          mentions=["ro.json"], unchanged=["ro.json"], why="suite -o a read-only file")
suite_out("output-suite-overwrite-space", ["-o", "space.yaml"], unchanged=["space.yaml"],
          mentions=["space.yaml"], why="suite -o its own --space file")
suite_out("output-suite-efbig", ["-o", "s.json"], fsize=1000, no_file=["s.json"],
          mentions=["s.json"], why="suite JSON write fails after 1000 bytes")
suite_out("output-suite-gpu-traversal", ["-o", "s.json", "--layout", "matlab-tc",
                                         "--layout-dir", "lay", "--gpu", "../escape"],
          no_file=["escape", "s.json"], mentions=["gpu"],
          why="--gpu ../escape writes the a/b/c files outside --layout-dir")
suite_out("output-suite-gpu-absolute", ["-o", "s.json", "--layout", "matlab-tc",
                                        "--layout-dir", "lay", "--gpu", "{tmp}/abs"],
          no_file=["abs", "s.json"], mentions=["gpu"],
          why="--gpu with an absolute path escapes --layout-dir")
suite_out("output-suite-gpu-empty", ["-o", "s.json", "--layout", "matlab-tc",
                                     "--layout-dir", "lay", "--gpu", ""],
          no_file=["s.json"], mentions=["gpu"], why="--gpu '' (files named a__fp16.txt)")
suite_out("output-suite-layout-dir-is-file", ["-o", "s.json", "--layout", "matlab-tc",
                                              "--layout-dir", "lay"], {"lay": "a file\n"},
          no_file=["s.json"], mentions=["lay"], why="--layout-dir names a file")
suite_out("output-suite-layout-unsupported-format", ["-o", "s.json", "--layout", "matlab-tc"],
          expect=0, why="valid: binary16 has a layout folder; (control for the next case)")
add("output-suite-layout-no-folder", "output",
    ["suite", "--in", "binary64", "--out", "binary64", "--k", "4", "--pool", "1", "--random",
     "0", "--smt-seconds", "0", "-o", "s.json", "--layout", "matlab-tc"],
    no_file=["s.json", "s"], mentions=["binary64"],
    why="the layout has no fp64 d-file: refused before writing anything (today the a/b/c "
        "files may be half-written)")
suite_out("output-suite-layout-efbig", ["-o", "s.json", "--layout", "matlab-tc",
                                        "--layout-dir", "lay"], fsize=300,
          no_file=["s.json"], mentions=["lay"],
          why="layout files cut after 300 bytes: error, and no suite naming half files")
add("output-suite-late-unwritable", "output",
    ["suite", "--in", "binary16", "--out", "binary32", "--k", "16", "-o", "nodir/s.json"],
    mentions=["nodir"], timeout=15,
    why="an unwritable -o must be found before a long generation (default pool and 30 s "
        "of SMT)")
add("output-synthesize-missing-dir", "output", ["synthesize", "--feature", "neab", "--space",
                                                "space.yaml", "-o", "nodir/p.yaml"],
    files=base("space.yaml"), mentions=["nodir"], why="synthesize -o into a missing directory")
add("output-synthesize-dir", "output", ["synthesize", "--feature", "neab", "--space",
                                        "space.yaml", "-o", "outdir"],
    files=base("space.yaml", outdir=Dir()), mentions=["outdir"], why="synthesize -o a dir")
add("output-synthesize-dev-full", "output", ["synthesize", "--feature", "neab", "--space",
                                             "space.yaml", "-o", "/dev/full"],
    files=base("space.yaml"), mentions=["/dev/full"], why="synthesize -o /dev/full")
add("output-synthesize-overwrite-space", "output", ["synthesize", "--feature", "neab",
                                                    "--space", "space.yaml", "-o",
                                                    "space.yaml"],
    files=base("space.yaml"), unchanged=["space.yaml"], mentions=["space.yaml"],
    why="synthesize -o its own --space file")
add("output-synthesize-efbig", "output", ["synthesize", "--feature", "neab", "--space",
                                          "space.yaml", "-o", "p.yaml"],
    files=base("space.yaml"), fsize=100, no_file=["p.yaml"], mentions=["p.yaml"],
    why="probe write fails after 100 bytes")
INFER = ["infer", "suite.json", "obs.json", "--space", "space.yaml", "--report"]
for cid, target, extra, kw in [
        ("missing-dir", "nodir/r.md", {}, {"mentions": ["nodir"]}),
        ("dir", "rdir", {"rdir": Dir()}, {"mentions": ["rdir"]}),
        ("dev-full", "/dev/full", {}, {"mentions": ["/dev/full"]}),
        ("readonly", "r.md", {"r.md": Chmod("PREV\n", 0o444)},
         {"mentions": ["r.md"], "unchanged": ["r.md"]}),
        ("overwrite-suite", "suite.json", {}, {"mentions": ["suite.json"],
                                               "unchanged": ["suite.json"]}),
        ("overwrite-observed", "obs.json", {}, {"mentions": ["obs.json"],
                                                "unchanged": ["obs.json"]}),
        ("efbig", "r.md", {}, {"mentions": ["r.md"], "no_file": ["r.md"], "fsize": 100})]:
    add(f"output-infer-report-{cid}", "output", INFER + [target],
        files=base("suite.json", "obs.json", "space.yaml", **extra),
        why=f"infer --report {target}", **kw)


# -- cli: arguments and numbers -----------------------------------------------------------

def cli(case_id: str, argv: list, **kw: Any) -> Case:
    return add(case_id, kw.pop("cls", "cli"), argv, **kw)


cli("cli-no-command", [], stream="any", mentions=["usage"],
    why="no command: the usage and exit 2 (on stdout or stderr)")
cli("cli-eval-negative-first-value", ["eval", "--preset", "v100-fp16-fp32", "--a",
                                      "-1.5,2,3,4", "--b", "1,1,1,1"], expect=0,
    why="a negative first value written as a separate argument (as the help shows for "
        "'--a A'): argparse takes '-1.5,2,3,4' for an option; it must be read as values")
cli("cli-eval-negative-hex-separate", ["eval", "--preset", "v100-fp16-fp32", "--a",
                                       "0xbc00,0,0,0", "--b", "1,1,1,1", "--c", "-0x1"],
    mentions=["c"], why="'--c -0x1': a negative bit pattern (and argparse takes it for an "
                        "option): the message must be about c")
cli("cli-unknown-command", ["frobnicate"], mentions=["frobnicate"], why="unknown command")
cli("cli-unknown-flag", ["presets", "--frobnicate"], mentions=["--frobnicate"],
    why="unknown flag")
cli("cli-bench-rows-0", ["bench", "--rows", "0"], mentions=["rows"], why="--rows 0 "
                                                                        "(division by zero)")
cli("cli-bench-rows-negative", ["bench", "--rows", "-1"], mentions=["rows"], why="--rows -1")
cli("cli-bench-rows-text", ["bench", "--rows", "many"], mentions=["rows"], why="argparse")
cli("cli-bench-unknown-preset", ["bench", "--preset", "nope", "--rows", "10"],
    mentions=["nope"], why="unknown preset")
cli("cli-bench-ok", ["bench", "--rows", "100", "--preset", "v100-fp16-fp32"], expect=0,
    why="valid: a tiny benchmark")
cli("cli-suite-seed-negative", SUITE_ARGS + ["--seed", "-1", "-o", "s.json"],
    files=base("space.yaml"), mentions=["seed"], no_file=["s.json"],
    why="--seed -1: numpy rejects negative seeds")
cli("cli-suite-seed-huge", SUITE_ARGS + ["--seed", str(2**130), "-o", "s.json"],
    files=base("space.yaml"), expect=(0, 2), why="--seed 2^130: accepted or refused, no "
                                                 "traceback")
cli("cli-identify-seed-negative", ["identify", "--device", "preset:v100-fp16-fp32", "--space",
                                   "space.yaml", "--seed", "-1", "--smt-seconds", "0"],
    files=base("space.yaml"), mentions=["seed"], why="--seed -1")
for flag_val in ("nan", "inf", "-1", "0", "-inf", "1e-300"):
    exp: Any = {"1e-300": (1, 2), "inf": (0, 1, 2)}.get(flag_val, 2)
    cli(f"cli-distinguish-timeout-{flag_val}", ["distinguish", "--preset", "v100-fp16-fp32",
                                                "{CFG}", "cfg.yaml", "--timeout", flag_val],
        files=base("cfg.yaml"), mentions=["timeout"],
        expect=(0, 1, 2) if flag_val == "1e-300" else exp,
        why=f"--timeout {flag_val}" + (" (rounds to 0 ms: z3's 0 means 'no limit'; the "
                                       "solver gives up (1) or distinguish's model search "
                                       "finds a vector (0))" if flag_val == "1e-300" else ""))
    cli(f"cli-synthesize-timeout-{flag_val}", ["synthesize", "--feature", "neab", "--space",
                                               "space.yaml", "-o", "p.yaml", "--timeout",
                                               flag_val],
        files=base("space.yaml"), mentions=["timeout"], expect=exp,
        no_file=["p.yaml"] if exp == 2 else [], why=f"synthesize --timeout {flag_val}")
for flag_val in ("nan", "-1", "inf"):
    exp = (0, 2) if flag_val == "inf" else 2  # inf: 'no limit' is a fair reading
    cli(f"cli-suite-smt-seconds-{flag_val}", SUITE_ARGS[:-2] + ["--smt-seconds", flag_val,
                                                                "-o", "s.json"],
        files=base("space.yaml"), mentions=["smt-seconds"], expect=exp,
        no_file=["s.json"] if exp == 2 else [], why=f"--smt-seconds {flag_val}")
    cli(f"cli-identify-smt-seconds-{flag_val}", ["identify", "--device",
                                                 "preset:v100-fp16-fp32", "--space",
                                                 "space.yaml", "--smt-seconds", flag_val],
        files=base("space.yaml"), mentions=["smt-seconds"], expect=exp,
        why=f"--smt-seconds {flag_val}")
cli("cli-identify-max-queries-0", ["identify", "--device", "preset:v100-fp16-fp32",
                                   "--max-queries", "0"], mentions=["max-queries"],
    why="--max-queries 0")
cli("cli-identify-max-queries-neg", ["identify", "--device", "preset:v100-fp16-fp32",
                                     "--max-queries", "-3"], mentions=["max-queries"],
    why="--max-queries -3")
for cid, dev, ment in [("empty-preset", "preset:", "preset"), ("empty-config", "config:",
                                                                 "config"),
                       ("no-prefix", "v100-fp16-fp32", "preset:"),
                       ("unknown-preset", "preset:nope", "nope"),
                       ("missing-config", "config:missing.yaml", "missing.yaml"),
                       ("upper-prefix", "PRESET:v100-fp16-fp32", "preset")]:
    cli(f"cli-identify-device-{cid}", ["identify", "--device", dev, "--smt-seconds", "0"],
        mentions=[ment], why=f"--device {dev!r}")
cli("cli-suite-random-negative", SUITE_ARGS[:-6] + ["--random", "-1", "--pool", "1",
                                                    "--smt-seconds", "0", "-o", "s.json"],
    files=base("space.yaml"), mentions=["random"], no_file=["s.json"], why="--random -1")
cli("cli-suite-pool-0", SUITE_ARGS[:-6] + ["--random", "0", "--pool", "0", "--smt-seconds",
                                           "0", "-o", "s.json"],
    files=base("space.yaml"), mentions=["pool"], no_file=["s.json"], why="--pool 0")
cli("cli-suite-k-0", ["suite", "--in", "binary16", "--out", "binary32", "--k", "0", "-o",
                      "s.json"], mentions=["k"], no_file=["s.json"], why="--k 0")
cli("cli-suite-k-negative", ["suite", "--in", "binary16", "--out", "binary32", "--k", "-4",
                             "-o", "s.json"], mentions=["k"], no_file=["s.json"], why="--k -4")
cli("cli-suite-unknown-format", ["suite", "--in", "binary17", "--out", "binary32", "--k", "4",
                                 "-o", "s.json"], mentions=["binary17"], no_file=["s.json"],
    why="unknown input format")
cli("cli-suite-out-e4m3", ["suite", "--in", "binary16", "--out", "e4m3", "--k", "4", "-o",
                           "s.json", "--smt-seconds", "0"], mentions=["e4m3"],
    no_file=["s.json"], why="an output format no unit has (e4m3 output)")
cli("cli-suite-c-format-bad", ["suite", "--in", "binary16", "--out", "binary32", "--c",
                               "e5m2", "--k", "4", "-o", "s.json", "--smt-seconds", "0"],
    mentions=["e5m2"], expect=(0, 2),
    why="c in e5m2 with binary32 output: no unit has it; a suite for it (0) or a refusal")
cli("cli-suite-no-presets-k7", ["suite", "--in", "binary16", "--out", "binary32", "--k", "7",
                                "--pool", "10", "--random", "0", "--smt-seconds", "0", "-o",
                                "s.json"], expect=0, timeout=60,
    why="valid: an unusual K with no preset (the neighbourhood still applies)")
for cid, a in [("nan", "nan"), ("inf", "inf"), ("huge", "1e999")]:
    cli(f"cli-gemm-alpha-{cid}", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.txt", "--B",
                                  "B.txt", "--alpha", a],
        files=base("A.txt", "B.txt"), mentions=["alpha"], expect=(0, 2) if cid == "inf" else 2,
        why=f"--alpha {a}: a NaN scale, or 1e999 silently read as inf, turns every output "
            f"into NaN/inf" + (" (an explicit inf may be meant)" if cid == "inf" else ""))
cli("cli-gemm-beta-nan", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.txt", "--B", "B.txt",
                          "--beta", "nan"], files=base("A.txt", "B.txt"), mentions=["beta"],
    why="--beta nan")
cli("cli-gemm-scheme-bad", ["gemm", "--preset", "v100-fp16-fp32", "--hazard", "--scheme",
                            "late"], mentions=["scheme"], why="argparse choices")
cli("cli-gemm-hazard-with-A", ["gemm", "--preset", "v100-fp16-fp32", "--hazard", "--A",
                               "A.txt"], files=base("A.txt"), mentions=["hazard"],
    why="--hazard silently ignores --A")
cli("cli-eval-both-configs", ["eval", "--preset", "v100-fp16-fp32", "--config", "cfg.yaml",
                              "--a", "1,1,1,1", "--b", "1,1,1,1"], files=base("cfg.yaml"),
    why="argparse: mutually exclusive")
cli("cli-eval-missing-b", ["eval", "--preset", "v100-fp16-fp32", "--a", "1,1,1,1"],
    mentions=["--b"], why="--b missing")
cli("cli-eval-unknown-preset", ["eval", "--preset", "nope", "--a", "1", "--b", "1"],
    mentions=["nope"], why="unknown preset")
cli("cli-eval-preset-whitespace", ["eval", "--preset", " v100-fp16-fp32 ", "--a", "1,1,1,1",
                                   "--b", "1,1,1,1"], expect=(0, 2),
    why="surrounding spaces: stripped (0) or refused (2)")
cli("cli-presets-unknown-device", ["presets", "--device", "Z999"], mentions=["Z999"],
    why="unknown device")
cli("cli-presets-empty-device", ["presets", "--device", ""], mentions=["device"],
    why="--device '' silently lists everything")
cli("cli-validate-limit-text", ["validate", "--limit", "ten"], mentions=["limit"],
    why="argparse")
cli("cli-check-glob-none", ["check", "--probes", "zzz*", "--probe-file", "probe.yaml",
                            "--space", "space.yaml"], files=base("probe.yaml", "space.yaml"),
    mentions=["zzz"], why="no probe matches the glob")
cli("cli-check-missing-space", ["check", "--space", "nope.yaml", "--probe-file", "probe.yaml"],
    files=base("probe.yaml"), mentions=["nope.yaml"], why="missing --space file")
cli("cli-authenticate-unknown-suite", ["authenticate", "fasi2077"], mentions=["fasi2077"],
    why="unknown suite name")
cli("cli-authenticate-suite-dir", ["authenticate", "d"], files={"d": Dir()}, mentions=["d"],
    why="a directory as SUITE")
cli("cli-authenticate-yml-missing", ["authenticate", "missing.yml"], mentions=["missing.yml"],
    why="a .yml that does not exist")
cli("cli-synthesize-unknown-feature", ["synthesize", "--feature", "nefa", "--space",
                                       "space.yaml", "-o", "p.yaml"],
    files=base("space.yaml"), mentions=["nefa"], no_file=["p.yaml"], why="unknown feature")
cli("cli-synthesize-missing-space", ["synthesize", "--feature", "neab", "--space", "no.yaml",
                                     "-o", "p.yaml"], mentions=["no.yaml"], no_file=["p.yaml"],
    why="missing space file")
cli("cli-distinguish-one", ["distinguish", "--preset", "v100-fp16-fp32"],
    mentions=["two"], why="one configuration")
cli("cli-distinguish-three", ["distinguish", "--preset", "v100-fp16-fp32", "--preset",
                              "v100-fp16-fp32", "--preset", "v100-fp16-fp32"],
    mentions=["two"], why="three configurations")
cli("cli-distinguish-same", ["distinguish", "--preset", "v100-fp16-fp32", "--preset",
                             "v100-fp16-fp32", "--timeout", "20"], expect=0, timeout=30,
    why="valid: a configuration against itself is 'equivalent'")
cli("cli-distinguish-shape-mismatch", ["distinguish", "--preset", "v100-fp16-fp32", "--preset",
                                       "a100-fp16-fp32"], mentions=["k"],
    why="different K")
cli("cli-run-missing-suite", ["run", "nope.json", "--preset", "v100-fp16-fp32", "-o",
                              "o.json"], mentions=["nope.json"], no_file=["o.json"],
    why="missing suite")
cli("cli-run-shape-mismatch", ["run", "suite.json", "--preset", "a100-fp16-fp32", "-o",
                               "o.json"], files=base("suite.json"),
    mentions=["suite.json"], no_file=["o.json"], why="suite K=4 on a K=8 preset")
cli("cli-infer-missing-observed", ["infer", "suite.json", "nope.json"],
    files=base("suite.json"), mentions=["nope.json"], why="missing observed file")
cli("cli-argv-undecodable-preset", ["eval", "--preset", b"v100-\xff", "--a", "1", "--b", "1"],
    mentions=["v100-"], why="a preset name that is not UTF-8 (surrogate escapes)")
cli("cli-argv-huge-preset", ["eval", "--preset", "x" * 100000, "--a", "1", "--b", "1"],
    mentions=["preset"], why="a 100 000-character preset name (the message may quote it "
                             "whole; it must not list 148 presets after it, at least)")


# -- pipe: stdout closed early, unencodable output ---------------------------------------------

for cid, argv in [("presets", ["presets"]), ("presets-verbose", ["presets", "-v"]),
                  ("presets-json", ["presets", "--json"]), ("probes", ["probes"]),
                  ("probes-published", ["probes", "--published", "--json"]),
                  ("eval-explain", ["eval", "--preset", "v100-fp16-fp32", "--a",
                                    "1,0x0c00,0x0c00,0", "--b", "1,0x1000,0x1000,0",
                                    "--explain"]),
                  ("check", ["check", "--probe-file", "probe.yaml", "--space", "space.yaml"]),
                  ("gemm-hazard", ["gemm", "--preset", "v100-fp16-fp32", "--hazard"]),
                  ("validate", ["validate", "data"])]:
    files = base("probe.yaml", "space.yaml") if cid == "check" else {}
    if cid == "validate":
        files = dataset()
    add(f"pipe-head-{cid}", "pipe", argv, files=files, pipe_close=0, expect=(0, 141, -13),
        why="`mmaprobe ... | head -c 0` (the reader closes the pipe at once, so that the "
            "case is deterministic; `| head` does the same once the pipe buffer fills): a "
            "closed pipe must end the command quietly (exit 0, or killed by SIGPIPE like any "
            "Unix filter), never a BrokenPipeError traceback")
for cid, argv in [("probes", ["probes"]), ("presets", ["presets", "-v"]),
                  ("probes-published", ["probes", "--published"])]:
    add(f"pipe-ascii-stdout-{cid}", "pipe", argv, env={"PYTHONIOENCODING": "ascii"}, expect=0,
        why="an ASCII-only stdout (PYTHONIOENCODING=ascii): non-ASCII text in titles must "
            "not crash the listing")
add("pipe-stdin-closed", "pipe", ["presets"], stdin=b"", expect=0,
    why="valid: stdin at EOF does not matter")


# -- schema: suite and observed JSON ------------------------------------------------------------

def suite_case(case_id: str, content: str | bytes, cmd: str = "run", **kw: Any) -> Case:
    kw.setdefault("mentions", ["s.json"])
    if cmd == "run":
        argv = ["run", "s.json", "--preset", "v100-fp16-fp32", "-o", "o.json"]
        kw.setdefault("no_file", ["o.json"])
        files = {"s.json": content}
    else:
        argv = ["infer", "s.json", "obs.json", "--space", "space.yaml"]
        files = base("obs.json", "space.yaml", **{"s.json": content})
    return add(case_id, kw.pop("cls", "schema"), argv, files=files, **kw)


def vec_patch(i: int, **over: Any) -> str:
    d = suite_doc()
    d["vectors"][i].update(over)
    return js(d)


SUITE_BAD = [
    ("not-json", "this is not json\n", 1, "not JSON"),
    ("truncated", SUITE_OK[: len(SUITE_OK) // 2], None, "a truncated file"),
    ("empty", "", None, "an empty file"),
    ("array", "[]\n", None, "a JSON array"),
    ("schema-wrong", js(suite_doc(schema="mmaprobe-observed")), None, "the observed schema"),
    ("schema-missing", js({k: v for k, v in suite_doc().items() if k != "schema"}), None,
     "no schema"),
    ("version-2", js(suite_doc(version=2)), None, "version 2"),
    ("version-string", js(suite_doc(version="1")), None, 'version "1"'),
    ("nan-constant", SUITE_OK.replace('"k": 4', '"k": NaN'), None, "a bare NaN"),
    ("formats-missing", js({k: v for k, v in suite_doc().items() if k != "formats"}), None,
     "no formats"),
    ("formats-unknown", js(suite_doc(formats={"in": "binary17", "c": "binary32",
                                              "out": "binary32"})), None, "unknown format"),
    ("formats-list", js(suite_doc(formats=["binary16", "binary32", "binary32"])), None,
     "formats as a list"),
    ("formats-int", js(suite_doc(formats={"in": 16, "c": 32, "out": 32})), None,
     "formats as numbers"),
    ("k-zero", js(suite_doc(k=0)), None, "k 0"),
    ("k-float", js(suite_doc(k=4.0)), None, "k 4.0"),
    ("k-bool", js(suite_doc(k=True)), None, "k true"),
    ("k-string", js(suite_doc(k="4")), None, 'k "4"'),
    ("k-mismatch-rows", js(suite_doc(k=8) | {"vectors": suite_doc()["vectors"]}), None,
     "k 8 with 4-entry rows"),
    ("k-bigint", SUITE_OK.replace('"k": 4', '"k": ' + "9" * 5000), None,
     "k with 5000 digits (Python's int-string limit)"),
    ("k-1e400", SUITE_OK.replace('"k": 4', '"k": 1e400'), None, "k 1e400 (float inf)"),
    ("vectors-empty", js(suite_doc(vectors=[])), None, "no vectors"),
    ("vectors-object", js(suite_doc(vectors={"v0": {}})), None, "vectors as an object"),
    ("vector-no-id", js(suite_doc() | {"vectors": [{"a": [], "b": []}]}), None, "no id"),
    ("vector-int-id", vec_patch(0, id=7), None, "id 7"),
    ("vector-dup-id", vec_patch(1, id="v0"), None, "duplicate id"),
    ("vector-a-string", vec_patch(0, a="0x3c00"), None, "a as a string"),
    ("vector-a-short", vec_patch(0, a=[ONE16]), None, "a of length 1"),
    ("vector-a-int", vec_patch(0, a=[15360, 0, 0, 0]), None, "a entries as integers"),
    ("vector-a-float", vec_patch(0, a=[1.0, 0, 0, 0]), None, "a entries as floats"),
    ("vector-a-wide", vec_patch(0, a=["0x13c00", ZERO16, ZERO16, ZERO16]), None,
     "a 17-bit pattern"),
    ("vector-a-negative", vec_patch(0, a=["0x-1", ZERO16, ZERO16, ZERO16]), None, "0x-1"),
    ("vector-a-plus", vec_patch(0, a=["0x+3c00", ZERO16, ZERO16, ZERO16]), None,
     "0x+3c00 (int() accepts it)"),
    ("vector-a-underscore", vec_patch(0, a=["0x3c_00", ZERO16, ZERO16, ZERO16]), None,
     "0x3c_00 (int() accepts it)"),
    ("vector-a-space", vec_patch(0, a=["0x 3c00", ZERO16, ZERO16, ZERO16]), None,
     "'0x 3c00' (int() strips spaces)"),
    ("vector-a-huge-hex", vec_patch(0, a=["0x" + "f" * 5000, ZERO16, ZERO16, ZERO16]), None,
     "a 20000-bit hex pattern"),
    ("vector-c-missing", js(suite_doc() | {"vectors": [
        {k: v for k, v in suite_doc()["vectors"][0].items() if k != "c"}]}), None, "no c"),
    ("vector-c-null", vec_patch(0, c=None), None, "c null"),
    ("vector-provenance-list", vec_patch(0, provenance=[1, 2]), None,
     "provenance a list (should be an object; silently dropped today)"),
    ("digest-wrong", js(suite_doc(digest="0123456789abcdef")), None, "a wrong digest"),
    ("digest-int", js(suite_doc(digest=12345)), None, "a digest that is a number"),
    ("deep-nesting", '{"schema": "mmaprobe-suite", "version": 1, "x": ' + "[" * 100000
     + "]" * 100000 + "}", None, "100 000 nested arrays (RecursionError)"),
    ("dup-keys", SUITE_OK.replace('"k": 4', '"k": 8, "k": 4'), None,
     "a duplicate key (the last silently wins)"),
    ("binary", bytes(range(256)) * 4, None, "binary garbage"),
    ("utf16", SUITE_OK.encode("utf-16"), None, "UTF-16 text"),
    ("layout-list", js(suite_doc(layout=[1, 2])), None, "a layout that is a list"),
    ("generator-string", js(suite_doc(generator="x")), None, "a generator field of the "
                                                               "wrong type"),
]
for cid, content, ln, why in SUITE_BAD:
    exp: Any = 2
    ment = ["s.json"]
    if cid in ("vector-provenance-list", "layout-list", "generator-string"):
        exp = (0, 2)  # ignoring an optional field of the wrong type is acceptable
    suite_case(f"schema-suite-{cid}", content, line=ln, expect=exp, mentions=ment, why=why,
               no_file=["o.json"] if exp == 2 else [])
for cid, content, ln, why in SUITE_BAD[:6] + SUITE_BAD[13:19] + SUITE_BAD[24:28]:
    suite_case(f"schema-suite-infer-{cid}", content, cmd="infer", line=ln, why=why + " (infer)")
suite_case("schema-suite-bom", "\ufeff" + SUITE_OK, expect=(0, 2), mentions=[],
           why="a UTF-8 BOM before the JSON: accepted or refused, no traceback")
suite_case("schema-suite-unicode-ids", js(suite_doc() | {"vectors": [
    dict(v, id=f"vecteur-é-{i}-😀") for i, v in enumerate(suite_doc()["vectors"])]}),
    expect=0, mentions=[], no_file=[], why="valid: non-ASCII ids")
suite_case("schema-suite-with-digest-ok", js(suite_doc()), expect=0, mentions=[], no_file=[],
           why="valid control")


def obs_case(case_id: str, content: str | bytes, **kw: Any) -> Case:
    kw.setdefault("mentions", ["o2.json"])
    return add(case_id, kw.pop("cls", "schema"),
               ["infer", "suite.json", "o2.json", "--space", "space.yaml"],
               files=base("suite.json", "space.yaml", **{"o2.json": content}), **kw)


def obs_patch(**over: Any) -> str:
    return js(obs_doc(**over))


for cid, content, why in [
        ("not-json", "{{{\n", "not JSON"), ("empty", "", "empty"),
        ("is-suite", SUITE_OK, "the suite given as the observed file"),
        ("schema-missing", js({k: v for k, v in obs_doc().items() if k != "schema"}),
         "no schema"),
        ("formats-mismatch", obs_patch(formats={"in": "bfloat16", "c": "binary32",
                                                "out": "binary32"}), "other input format"),
        ("k-mismatch", obs_patch(k=8), "k 8 for a k=4 suite"),
        ("digest-mismatch", obs_patch(suite_digest="0123456789abcdef"), "outputs of another "
                                                                         "suite"),
        ("missing-output", obs_patch(outputs=obs_doc()["outputs"][:2]), "an output missing"),
        ("extra-output", obs_patch(outputs=obs_doc()["outputs"] + [{"id": "zz",
                                                                     "d": "0x0"}]),
         "an output for an unknown id"),
        ("dup-output", obs_patch(outputs=obs_doc()["outputs"] + [{"id": "v0",
                                                                   "d": "0x0"}]),
         "a duplicate id"),
        ("d-int", obs_patch(outputs=[{"id": "v0", "d": 1065353216}] + obs_doc()["outputs"][1:]),
         "d as an integer"),
        ("d-wide", obs_patch(outputs=[{"id": "v0", "d": "0x1ffffffff"}]
                             + obs_doc()["outputs"][1:]), "a 33-bit d"),
        ("d-nan-string", obs_patch(outputs=[{"id": "v0", "d": "nan"}]
                                   + obs_doc()["outputs"][1:]), "d 'nan'"),
        ("outputs-object", obs_patch(outputs={"v0": "0x3f800000"}), "outputs as an object"),
        ("outputs-missing", js({k: v for k, v in obs_doc().items() if k != "outputs"}),
         "no outputs"),
        ("output-not-object", obs_patch(outputs=["0x3f800000"] * 3), "outputs as strings"),
        ("version-0", obs_patch(version=0), "version 0"),
        ("deep-nesting", '{"x": ' + "[" * 100000 + "]" * 100000 + "}", "RecursionError"),
        ("binary", bytes(range(256)) * 4, "binary garbage")]:
    obs_case(f"schema-observed-{cid}", content, why=why)
obs_case("schema-observed-ok", OBS_OK, expect=0, mentions=[], why="valid control")
obs_case("schema-observed-inconsistent", obs_patch(outputs=[{"id": "v0", "d": "0x40400000"}]
                                                   + obs_doc()["outputs"][1:]),
         expect=1, mentions=[], why="legitimate: outputs no candidate explains -> exit 1")
add("schema-observed-as-suite", "schema", ["infer", "obs.json", "suite.json"],
    files=base("obs.json", "suite.json"), mentions=["obs.json"],
    why="suite and observed swapped")
add("schema-observed-txt-is-json", "schema", ["infer", "suite.json", "o.txt", "--space",
                                              "space.yaml"],
    files=base("suite.json", "space.yaml", **{"o.txt": OBS_OK}), mentions=["o.txt"], line=1,
    why="an observed JSON named .txt (read as a d-file)")
add("schema-run-then-infer-other-suite", "schema", ["infer", "s2.json", "obs.json",
                                                    "--space", "space.yaml"],
    files=base("obs.json", "space.yaml", **{"s2.json": js(suite_doc(n=4))}),
    mentions=["obs.json"], why="observed outputs of a 3-vector suite given with a 4-vector "
                               "suite")


# -- probe files -----------------------------------------------------------------------------

P = "p.yaml"
for cid, text, ln, fld, why in [
        ("missing-decide", PROBE_OK.split("decide:")[0], None, "decide", "no decide"),
        ("unknown-key", probe_text(sauce='"x"'), 13, "sauce", "a misspelt key"),
        ("id-caps", probe_text(id="T-Base"), 1, "id", "an id with capitals"),
        ("id-int", probe_text(id="42"), 1, "id", "an id that is a number"),
        ("feature-unknown", probe_text(feature="nefa"), 3, "feature", "unknown feature"),
        ("feature-list", probe_text(feature="[neab]"), 3, "feature", "feature as a list"),
        ("formats-unknown", probe_text(formats="{in: [binary17]}"), 5, "formats",
         "unknown format"),
        ("formats-string", probe_text(formats="binary16"), 5, "formats", "formats as a string"),
        ("k-zero", probe_text(k="[0]"), 13, "k", "k: [0]"),
        ("k-string", probe_text(k='"4"'), 13, "k", 'k: "4"'),
        ("k-float", probe_text(k="[4.0]"), 13, "k", "k: [4.0]"),
        ("requires-unknown", probe_text(requires="[nefa]"), 13, "requires", "unknown "
                                                                            "requirement"),
        ("requires-self", probe_text(requires="[neab]"), 13, "requires", "requires itself"),
        ("when-unknown", probe_text(when="{nefa: 1}"), 13, "when", "when on an unknown field"),
        ("when-not-required", probe_text(when="{nfma: 4}"), 13, "when",
         "when on a feature not in requires"),
        ("may-be-string", probe_text(may_be_inconclusive='"yes"'), 6, "may_be_inconclusive",
         "a string for a boolean"),
        ("vectors-empty", PROBE_OK.replace("vectors:\n  - name: v\n    a: {0: \"1\"}\n    b: "
                                           "{0: \"1\"}\n", "vectors: []\n"), 7, "vectors",
         "no vectors"),
        ("vector-dup-name", PROBE_OK.replace("decide:", "  - name: v\n    a: {0: \"1\"}\n"
                                                        "decide:"), 11, "name",
         "a duplicate vector name"),
        ("vector-unknown-key", PROBE_OK.replace("    b: {0: \"1\"}", "    b: {0: \"1\"}\n"
                                                                   "    d: \"1\""), 11, "d",
         "an unknown vector key"),
        ("position-out-of-k", probe_with_value("1").replace('a: {0: "1"}', 'a: {100: "1"}'),
         9, "a", "position 100 for k=4"),
        ("position-negative", probe_with_value("1").replace('a: {0: "1"}', 'a: {-1: "1"}'),
         9, "a", "position -1"),
        ("position-float", probe_with_value("1").replace('a: {0: "1"}', 'a: {0.5: "1"}'),
         9, "a", "position 0.5"),
        ("value-list-of-lists", probe_with_value("1").replace('a: {0: "1"}', 'a: [[1]]'),
         9, "a", "a nested list"),
        ("c-list", PROBE_OK.replace("    b: {0: \"1\"}", "    b: {0: \"1\"}\n    c: [1, 2]"),
         11, "c", "c as a list"),
        ("a-string", probe_with_value("1").replace('a: {0: "1"}', 'a: "1"'), 9, "a",
         "a as a string"),
        ("hex-too-wide", probe_with_value("0x1ffff"), 9, "a", "a 17-bit hex pattern"),
        ("rule-unknown-key", PROBE_OK.replace("  - otherwise: inconclusive",
                                              "  - otherwize: inconclusive"), 12, "otherwize",
         "misspelt rule key"),
        ("rule-then-bad", PROBE_OK.replace("  - otherwise: inconclusive",
                                           "  - if: \"v == 1\"\n    then: \"1/3\"\n"
                                           "  - otherwise: inconclusive"), 13, "then",
         "an integer feature decided as 1/3"),
        ("rule-then-huge", PROBE_OK.replace("  - otherwise: inconclusive",
                                            "  - if: \"v == 1\"\n    then: \"2^2000/3\"\n"
                                            "  - otherwise: inconclusive"), 13, "then",
         "an outcome too large for a float"),
        ("rule-if-unknown-obs", PROBE_OK.replace("  - otherwise: inconclusive",
                                                 "  - if: \"w == 1\"\n    then: 0\n"
                                                 "  - otherwise: inconclusive"), 12, "w",
         "if naming an unknown observation"),
        ("first-unknown-sweep", PROBE_OK.replace("  - otherwise: inconclusive",
                                                 "  - first: {sweep: nope, where: \"d == 1\"}"
                                                 "\n    then: \"i\"\n  - otherwise: "
                                                 "inconclusive"), 12, "nope",
         "first over an unknown sweep"),
        ("sweep-from-gt-to", PROBE_OK.replace("vectors:\n", "vectors:\n  - name: s\n    sweep: "
                                              "{var: j, from: 10, to: 1}\n    a: {0: \"1\"}\n"
                                              "    b: {0: \"1\"}\n", 1), 9, "sweep",
         "a sweep from 10 to 1"),
        ("sweep-var-keyword", PROBE_OK.replace("vectors:\n", "vectors:\n  - name: s\n    sweep: "
                                               "{var: k, from: 0, to: 1}\n    a: {0: \"1\"}\n"
                                               "    b: {0: \"1\"}\n", 1), 9, "var",
         "a sweep variable shadowing k"),
        ("sweep-to-expr-huge", PROBE_OK.replace("vectors:\n", "vectors:\n  - name: s\n    "
                                                "sweep: {var: j, from: 0, to: \"2^2048\"}\n"
                                                "    a: {0: \"1\"}\n    b: {0: \"1\"}\n", 1),
         9, "sweep", "a sweep to 2^2048"),
        ("let-name-bad", PROBE_OK.replace("vectors:\n", "let:\n  2x: \"1\"\nvectors:\n", 1), 8,
         "2x", "a let name starting with a digit"),
        ("let-shadows", PROBE_OK.replace("vectors:\n", "let:\n  k: \"1\"\nvectors:\n", 1), 8,
         "k", "a let name shadowing k"),
        ("let-cycle", PROBE_OK.replace("vectors:\n", "let:\n  x: \"y\"\n  y: \"x\"\nvectors:\n",
                                       1), 8, "x", "let referring forward"),
        ("applies-when-not-bool", probe_text(applies_when='"1 + 1"'), 13, "applies_when",
         "applies_when that is a number"),
        ("applies-when-huge", probe_text(applies_when='"2^2048^2 > 1"'), 13, "applies_when",
         "applies_when with a huge power"),
]:
    ments = [P] + ([fld] if fld else [])
    chk(f"probe-{cid}", text, line=ln, mentions=ments, why=why)
# scale factors of a probe's own (sa, sb): only with scale_block in requires, in the
# unit's scale format, within k / scale_block
SCALED_SPACE = ("id: mx\nformats: {in: e4m3, c: binary32, out: binary32}\nk: [32]\n"
                "fixed: {scale_format: ue8m0, scale_block: 32}\nvary: {neab: [0, 2]}\n")
chk("probe-sa-without-scale-block", PROBE_OK.replace('    b: {0: "1"}', '    b: {0: "1"}\n'
                                                     '    sa: {0: "2^-3"}'),
    line=11, mentions=[P, "sa", "scale_block"],
    why="scale factors in a probe that does not require scale_block")
chk("probe-s-name-unscaled", probe_with_value("s.emax"), line=VAL_LINE,
    mentions=[P, "s.emax"], why="s.* constants outside a scaled probe")
SCALED_PROBE = probe_text(formats="{in: [e4m3], out: [binary32]}",
                          requires="[scale_block]").replace(
    '    b: {0: "1"}', '    b: {0: "1"}\n    sa: {0: "SV"}')
chk("probe-sa-unrepresentable", SCALED_PROBE.replace("SV", "3"), space=SCALED_SPACE,
    mentions=[P, "ue8m0", "sa[0]"],
    why="a scale factor 3 that ue8m0 (powers of two) cannot hold")
chk("probe-sa-position-out-of-range", SCALED_PROBE.replace('{0: "SV"}', '{1: "2"}'),
    space=SCALED_SPACE, mentions=[P, "k/scale_block=1"],
    why="scale factor index 1 with one scale factor per row (k = scale_block = 32)")
chk("probe-scaled-ok", SCALED_PROBE.replace("SV", "2^-3"), space=SCALED_SPACE, expect=0,
    mentions=[], why="valid: a scaled probe on a block-scaled space")
chk("probe-dup-id-two-files", PROBE_OK, mentions=["t-base"],
    why="two probe files with the same id").argv[1:1] = ["--probe-file", "probe.yaml"]
CASES[-1].files.update(base("probe.yaml"))
chk("probe-dup-id-two-docs", PROBE_OK + "---\n" + PROBE_OK, mentions=[P, "t-base"], line=14,
    why="the same id twice in one file")
chk("probe-two-docs-ok", PROBE_OK + "---\n" + PROBE_OK.replace("t-base", "t-base2"), expect=0,
    mentions=[], why="valid: two probes in one file")
chk("probe-top-list-ok", "- " + PROBE_OK.replace("\n", "\n  ").rstrip() + "\n", expect=0,
    mentions=[], why="valid: a top-level list of probes")
chk("probe-wrong-decision", PROBE_OK.replace("  - otherwise: inconclusive",
                                             "  - if: \"v == 1\"\n    then: 7\n"
                                             "  - otherwise: inconclusive"), expect=1,
    mentions=[], why="legitimate: a probe that decides neab=7 is wrong -> check fails (1)")
add("probe-authenticate-wrong", "probe", ["authenticate", P, "--space", "space.yaml",
                                          "--quiet"],
    files=base("space.yaml", **{P: PROBE_OK.replace(
        "  - otherwise: inconclusive", "  - if: \"v == 1\"\n    then: 7\n"
                                      "  - otherwise: inconclusive")}), expect=1,
    why="legitimate: a not-robust test -> exit 1")
add("probe-authenticate-txt-file", "probe", ["authenticate", "p.txt", "--space", "space.yaml",
                                             "--quiet"],
    files=base("space.yaml", **{"p.txt": PROBE_OK}), expect=(0, 2),
    why="a probe file named .txt: read (exists) or refused; no traceback")


# -- smt: distinguish / synthesize specifics ---------------------------------------------------

add("smt-distinguish-fdrda", "smt", ["distinguish", "{CFG}", "f.yaml", "{CFG}", "g.yaml"],
    files={"f.yaml": "in_format: binary16\nk: 4\nalgorithm: fdrda\n",
           "g.yaml": "in_format: binary16\nk: 4\nalgorithm: fdrda\nneab: 1\n"},
    expect=0, timeout=30,
    why="valid: the z3 encoding covers fdrda (it refused it when the corpus was written)")
add("smt-distinguish-config-twice", "smt", ["distinguish", "{CFG}", "cfg.yaml", "{CFG}",
                                            "cfg.yaml", "--timeout", "20"],
    files=base("cfg.yaml"), expect=0, timeout=30,
    why="valid: the same file twice is 'equivalent'")
add("smt-distinguish-config-missing", "smt", ["distinguish", "--preset", "v100-fp16-fp32",
                                              "{CFG}", "nope.yaml"], mentions=["nope.yaml"],
    why="missing configuration file")
add("smt-distinguish-cons-missing", "smt", ["distinguish", "--preset", "v100-fp16-fp32",
                                            "{CFG}", "cfg.yaml", "{CONS}", "nope.yaml"],
    files=base("cfg.yaml"), mentions=["nope.yaml"], why="missing constraints file")
add("smt-distinguish-cons-is-config", "smt", ["distinguish", "--preset", "v100-fp16-fp32",
                                              "{CFG}", "cfg.yaml", "{CONS}", "cfg.yaml"],
    files=base("cfg.yaml"), mentions=["cfg.yaml"],
    why="an accumulator configuration passed as constraints (the flag being renamed)")
add("smt-distinguish-config-is-cons", "smt", ["distinguish", "--preset", "v100-fp16-fp32",
                                              "{CFG}", "cons.yaml"],
    files=base("cons.yaml"), mentions=["cons.yaml"],
    why="constraints passed as a configuration")
add("smt-synthesize-fdrda-space", "smt", ["synthesize", "--feature", "neab", "--space", "s.yaml",
                                          "-o", "p.yaml"],
    files={"s.yaml": SPACE_OK.replace("vary:", "fixed: {algorithm: fdrda}\nvary:")},
    expect=0, timeout=30,
    why="valid: a space of fdrda configurations (the encoding covers fdrda now)")
add("smt-synthesize-derived-feature", "smt", ["synthesize", "--feature", "extra_bits",
                                              "--space", "space.yaml", "-o", "p.yaml",
                                              "--timeout", "20"],
    files=base("space.yaml"), expect=0, timeout=40, why="valid: a derived feature")
add("smt-synthesize-ok-then-check", "smt", ["synthesize", "--feature", "nfma", "--space",
                                            "space.yaml", "-o", "p.yaml", "--timeout", "20"],
    files=base("space.yaml"), expect=0, timeout=40, why="valid control")
add("smt-distinguish-cons-impossible", "smt", ["distinguish", "--preset", "v100-fp16-fp32",
                                               "{CFG}", "cfg.yaml", "{CONS}", "c2.yaml",
                                               "--timeout", "10"],
    files=base("cfg.yaml", **{"c2.yaml": "exp_range: [100, 200]\n"}), expect=(0, 2),
    mentions=[], why="an exponent range binary16 cannot reach: 'equivalent under the "
                     "constraints' (0) or refused (2)")


# -- unicode --------------------------------------------------------------------------------------

cli("unicode-preset-zero-width", ["eval", "--preset", "v100-fp16-fp32\u200b", "--a", "1,1,1,1",
                                  "--b", "1,1,1,1"], cls="unicode", mentions=["preset"],
    why="a zero-width space after the preset name")
cli("unicode-preset-hyphen", ["eval", "--preset", "v100\u2010fp16\u2010fp32", "--a", "1,1,1,1",
                              "--b", "1,1,1,1"], cls="unicode", mentions=["preset"],
    why="Unicode hyphens")
cli("unicode-eval-fullwidth", ["eval", "--preset", "v100-fp16-fp32", "--a", "１,1,1,1", "--b",
                               "1,1,1,1"], cls="unicode", expect=(0, 2),
    why="a full-width digit: read as 1 or refused; no traceback")
cli("unicode-eval-arabic-indic", ["eval", "--preset", "v100-fp16-fp32", "--a", "١,1,1,1", "--b",
                                  "1,1,1,1"], cls="unicode", expect=(0, 2),
    why="an Arabic-Indic digit")
cli("unicode-eval-minus", ["eval", "--preset", "v100-fp16-fp32", "--a", "\u22121,1,1,1", "--b",
                           "1,1,1,1"], cls="unicode", mentions=["a0"], why="a Unicode minus")
cli("unicode-eval-nbsp", ["eval", "--preset", "v100-fp16-fp32", "--a", "1\u00a0,1,1,1", "--b",
                          "1,1,1,1"], cls="unicode", expect=(0, 2),
    why="a no-break space after a value (str.strip removes it)")
add("unicode-config-format", "unicode", ["eval", "--config", "c.yaml", "--a", "1,1,1,1",
                                         "--b", "1,1,1,1"],
    files={"c.yaml": cfg_text(in_format="bínary16")}, mentions=["c.yaml", "in_format"],
    why="a look-alike letter in a format name")
add("unicode-config-key-cyrillic", "unicode", ["eval", "--config", "c.yaml", "--a", "1,1,1,1",
                                               "--b", "1,1,1,1"],
    files={"c.yaml": CFG_OK.replace("neab", "nеab")}, mentions=["c.yaml"],
    why="a Cyrillic 'е' in a field name")
add("unicode-config-rtl", "unicode", ["eval", "--config", "c.yaml", "--a", "1,1,1,1", "--b",
                                      "1,1,1,1"],
    files={"c.yaml": cfg_text(algorithm="\"fused\u202e\"")}, mentions=["c.yaml", "algorithm"],
    why="a right-to-left override inside a value")
add("unicode-space-id-emoji", "unicode", ["check", "--space", "s.yaml", "--probe-file",
                                          "probe.yaml", "--quiet"],
    files=base("probe.yaml", **{"s.yaml": SPACE_OK.replace("id: small", "id: \"😀 espace\"")}),
    expect=0, why="valid: a non-ASCII space id")
add("unicode-path-names", "unicode", ["check", "--space", "espace-é.yaml", "--probe-file",
                                      "sonde-😀.yaml", "--quiet"],
    files={"espace-é.yaml": SPACE_OK, "sonde-😀.yaml": PROBE_OK}, expect=0,
    why="valid: non-ASCII file names")
add("unicode-undecodable-path", "unicode", ["check", "--space", b"s-\xff.yaml", "--probe-file",
                                            "probe.yaml", "--quiet"],
    files=base("probe.yaml", **{"s-\udcff.yaml": SPACE_OK}), expect=0,
    why="valid on Linux: a file name that is not UTF-8; messages must not crash on it")
add("unicode-undecodable-path-missing", "unicode", ["eval", "--config", b"c-\xff.yaml", "--a",
                                                    "1", "--b", "1"],
    mentions=["c-"], why="a missing non-UTF-8 file name: the message must print it")
add("unicode-probe-id", "unicode", ["check", "--probe-file", P, "--space", "space.yaml"],
    files=base("space.yaml", **{P: probe_text(id="t-bаse")}), mentions=[P, "id"], line=1,
    why="a Cyrillic 'а' in a probe id")


# -- fs: a few more file-system objects ---------------------------------------------------------

add("fs-suite-fifo", "fs", ["run", "s.json", "--preset", "v100-fp16-fp32", "-o", "o.json"],
    files={"s.json": Fifo()}, mentions=["s.json"], no_file=["o.json"], why="a FIFO suite")
add("fs-suite-dev-zero", "fs", ["run", "/dev/zero", "--preset", "v100-fp16-fp32", "-o",
                                "o.json"], mentions=["/dev/zero"], no_file=["o.json"],
    why="/dev/zero as the suite")
add("fs-suite-dev-urandom", "fs", ["run", "/dev/urandom", "--preset", "v100-fp16-fp32", "-o",
                                   "o.json"], mentions=["/dev/urandom"], no_file=["o.json"],
    why="/dev/urandom as the suite")
add("fs-suite-dir", "fs", ["run", "sdir", "--preset", "v100-fp16-fp32", "-o", "o.json"],
    files={"sdir": Dir()}, mentions=["sdir"], no_file=["o.json"], why="a directory as suite")
add("fs-suite-unreadable", "fs", ["run", "s.json", "--preset", "v100-fp16-fp32", "-o",
                                  "o.json"], files={"s.json": Chmod(SUITE_OK, 0)},
    mentions=["s.json"], no_file=["o.json"], why="an unreadable suite")
add("fs-observed-fifo", "fs", ["infer", "suite.json", "o.json"],
    files=base("suite.json", **{"o.json": Fifo()}), mentions=["o.json"],
    why="a FIFO observed file")
add("fs-dfile-fifo", "fs", ["infer", "suite.json", "d.txt"],
    files=base("suite.json", **{"d.txt": Fifo()}), mentions=["d.txt"], why="a FIFO d-file")
add("fs-dfile-dev-zero", "fs", ["infer", "suite.json", "d.txt"],
    files=base("suite.json", **{"d.txt": Symlink("/dev/zero")}), mentions=["d.txt"],
    why="a d-file that is /dev/zero (one endless line)")
add("fs-gemm-fifo", "fs", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.txt", "--B",
                           "B.txt"], files=base("B.txt", **{"A.txt": Fifo()}),
    mentions=["A.txt"], why="a FIFO matrix")
add("fs-gemm-dev-zero", "fs", ["gemm", "--preset", "v100-fp16-fp32", "--A", "/dev/zero",
                               "--B", "B.txt"], files=base("B.txt"), mentions=["/dev/zero"],
    why="/dev/zero as a matrix")
add("fs-gemm-dir", "fs", ["gemm", "--preset", "v100-fp16-fp32", "--A", "adir", "--B",
                          "B.txt"], files=base("B.txt", adir=Dir()), mentions=["adir"],
    why="a directory as a matrix")
add("fs-gemm-unreadable-npy", "fs", ["gemm", "--preset", "v100-fp16-fp32", "--A", "A.npy",
                                     "--B", "B.txt"],
    files=base("B.txt", **{"A.npy": Chmod(npy("<f8", "(1, 4)", struct.pack("<4d", 1, 2, 3, 4)),
                                          0)}), mentions=["A.npy"], why="unreadable .npy")
add("fs-authenticate-fifo", "fs", ["authenticate", "p.yaml", "--space", "space.yaml"],
    files=base("space.yaml", **{"p.yaml": Fifo()}), mentions=["p.yaml"], why="FIFO suite YAML")
add("fs-long-path-config", "fs", ["eval", "--config", "/".join(["d" * 250] * 20) + "/c.yaml",
                                  "--a", "1", "--b", "1"], mentions=["c.yaml"],
    why="a 5000-character path (ENAMETOOLONG)")
add("fs-config-proc-self", "fs", ["eval", "--config", "/proc/self/environ", "--a", "1", "--b",
                                  "1"], mentions=["environ"],
    why="/proc/self/environ: NUL-separated text; must not echo the environment in a "
        "traceback")


# -- expectations settled after the first fixes ---------------------------------------------
# Cases written with several acceptable exit codes where one answer is now clearly right
# (the design chose it, and the same input elsewhere gets the same answer).  Each entry:
# id -> (the one expected code, the reason[, the mentions the message needs, or a dict of
# fields to replace]).
SETTLED: dict[str, tuple] = {
    **{f"yaml-{e}-cons-{p}": (2, "a constraints file with no document is refused, like an "
                                  "empty configuration, space or probe file (no constraints: "
                                  "leave out --constraints)", ["F.yaml"])
       for e, p in (("distinguish", "empty"), ("distinguish", "comments-only"),
                    ("distinguish", "huge-file"), ("synthesize", "empty"))},
    "expr-eval-tiny-exponent": (2, "decimal exponents are bounded (+-2000) both ways, as for "
                                   "1e999999999"),
    "expr-eval-overflow-to-inf": (0, "eval rounds every value to the format and notes each "
                                     "rounding or overflow on stderr (the note is required)"),
    "expr-eval-overflow-to-inf-c": (0, "as expr-eval-overflow-to-inf, for c"),
    "expr-eval-overflow-e4m3": (0, "as expr-eval-overflow-to-inf; e4m3 overflows to NaN"),
    "expr-let-fullwidth-digit": (2, "numbers are ASCII digits only, in probe expressions and "
                                    "on the command line"),
    "unicode-eval-fullwidth": (2, "numbers are ASCII digits only (as in probe expressions)",
                               ["a0"]),
    "unicode-eval-arabic-indic": (2, "numbers are ASCII digits only (as in probe "
                                     "expressions)", ["a0"]),
    "unicode-eval-nbsp": (0, "surrounding white space, a no-break space included, is "
                             "stripped"),
    "cli-eval-preset-whitespace": (0, "surrounding white space is stripped"),
    "explode-space-200k": (2, "over the configurations-per-space limit, which names itself "
                              "and MMAPROBE_MAX_CONFIGURATIONS"),
    "explode-space-200k-suite": (2, "as explode-space-200k"),
    "explode-space-dup-values": (2, "as explode-space-200k (duplicates count)"),
    "explode-sweep-400x4096": (2, "over the rows-per-probe limit (MMAPROBE_MAX_PROBE_ROWS)"),
    "explode-gemm-huge-text": (0, "valid: 4000x4000 times 4000x1 is within the limits and "
                                  "takes seconds"),
    "explode-identify-smt-1e9": (2, "time budgets are at most 10^6 s (z3 takes an unsigned "
                                    "32-bit millisecond count)", ["smt-seconds"]),
    "explode-distinguish-timeout-huge": (2, "as explode-identify-smt-1e9", ["timeout"]),
    "types-synthesize-one-value": (2, "nothing to decide: refused with the reason",
                                   ["s.yaml", "neab"]),
    "types-cons-exp-range-huge": (0, "an exponent range wider than the format's is no "
                                     "constraint at all"),
    "data-subdir-loop": (2, "every folder under a GPU folder must be a known input format "
                            "(fp16, bf16, ...)"),
    "data-gemm-nan": (0, "valid: NaN is a value the unit takes"),
    "data-gemm-inf": (0, "valid: inf is a value the unit takes"),
    "data-gemm-huge": (2, "1e400 is not inf: a number that overflows binary64 is refused "
                          "(write inf for an infinity)", ["1e400"]),
    "output-run-newline-name": (0, "valid on Linux"),
    "cli-suite-seed-huge": (2, "seeds are integers in [0, 2^64)", ["seed"]),
    "cli-distinguish-timeout-inf": (2, "time limits are finite (at most 10^6 s)"),
    "cli-synthesize-timeout-inf": (2, "time limits are finite (at most 10^6 s)"),
    "cli-suite-smt-seconds-inf": (2, "time budgets are finite (at most 10^6 s)"),
    "cli-identify-smt-seconds-inf": (2, "time budgets are finite (at most 10^6 s)"),
    "cli-gemm-alpha-inf": (2, "--alpha and --beta are finite numbers"),
    **{f"pipe-head-{p}": ((141, -13), "a closed stdout ends the command as SIGPIPE ends a "
                                      "Unix tool (exit 141); exit 0 would hide lost output")
       for p in ("presets", "presets-verbose", "presets-json", "probes", "probes-published",
                 "eval-explain", "check", "gemm-hazard", "validate")},
    "schema-suite-layout-list": (2, "the layout record names files run refuses to overwrite: "
                                    "a malformed one is an error"),
    "schema-suite-bom": (0, "a leading UTF-8 BOM is skipped, as in the YAML files",
                         {"no_file": []}),
    "smt-distinguish-cons-impossible": (2, "an exponent range outside the format's admits "
                                           "only zeros: refused, naming the format's range",
                                        ["c2.yaml", "exp_range"]),
}
for _c in CASES:
    if _c.id in SETTLED:
        _c.expect, _reason, *_more = SETTLED[_c.id]
        _c.why = f"{_c.why} [settled: {_reason}]"
        if _c.expect == 0:
            _c.mentions = []
        if _more:  # the mentions the message needs, or fields to replace
            over = _more[0] if isinstance(_more[0], dict) else {"mentions": _more[0]}
            for _k, _v in over.items():
                setattr(_c, _k, list(_v))
_missing = set(SETTLED) - {c.id for c in CASES}
if _missing:
    raise ValueError(f"SETTLED names unknown cases: {sorted(_missing)}")


def count_by_class() -> dict[str, int]:
    out: dict[str, int] = {}
    for c in CASES:
        out[c.cls] = out.get(c.cls, 0) + 1
    return out


COMMANDS = ("presets", "eval", "validate", "gemm", "bench", "probes", "check", "authenticate",
            "distinguish", "synthesize", "suite", "run", "infer", "identify")


def count_by_command() -> dict[str, int]:
    out = {c: 0 for c in COMMANDS}
    for c in CASES:
        cmd = c.argv[0] if c.argv else "(none)"
        out[cmd] = out.get(cmd, 0) + 1
    return out


if __name__ == "__main__":
    print(len(CASES), "cases")
    print(count_by_class())
    print(count_by_command())
