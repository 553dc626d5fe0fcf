"""Commands on the model: presets, eval, validate, gemm, bench."""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import sys
import textwrap
import time
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import yaml

from mmaprobe.models import limits
from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.bench import bench_model
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError, read_text
from mmaprobe.models.formats import Format, FormatError, get_format
from mmaprobe.models.gemm import gemm
from mmaprobe.models.presets import get_preset, list_presets
from mmaprobe.models.reference import reference_dot
from mmaprobe.smt.bench import bench_smt

from . import cliargs
from .jsonout import dumps, number
from .validate import validate


def default_hwdata() -> Path:
    """$MMAPROBE_HWDATA, else ../shared/hwdata beside the working directory or checkout."""
    env = os.environ.get("MMAPROBE_HWDATA")
    if env:
        return Path(env)
    for base in (Path.cwd(), Path(__file__).resolve().parents[1]):
        cand = base.parent / "shared" / "hwdata"
        if cand.is_dir():
            return cand
    raise InputError("no dataset directory given and ../shared/hwdata not found; "
                     "pass DATA_DIR or set MMAPROBE_HWDATA")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("presets", help="list the device presets and their sources")
    p.add_argument("--device", type=cliargs.name, help="only this device (e.g. H100)")
    p.add_argument("--verbose", "-v", action="store_true", help="show every field")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("eval", help="evaluate one dot product d = c + sum a_i*b_i")
    add_config_args(p)
    p.add_argument("--a", required=True, help="k comma-separated values: decimal or 0x bits")
    p.add_argument("--b", required=True, help="k comma-separated values: decimal or 0x bits")
    p.add_argument("--c", default="0", help="c: decimal or 0x bits (default 0)")
    p.add_argument("--scale-a", help="block scaling: the scale factors of a, comma-separated "
                                     "(decimal or 0x bits; default all 1)")
    p.add_argument("--scale-b", help="block scaling: the scale factors of b (default all 1)")
    p.add_argument("--explain", action="store_true", help="print the steps")
    p.add_argument("--json", action="store_true")
    cliargs.allow_negative_values(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("validate", help="check presets bit for bit against recorded GPU "
                                        "outputs (MATLAB-tensor-core model_validation layout, "
                                        "and <DEVICE>-ptx folders of per-instruction files)")
    p.add_argument("data_dir", nargs="?", help="dataset root (default: ../shared/hwdata "
                                               "beside the checkout)")
    p.add_argument("--gpu", action="append", help="only this GPU folder (repeatable)")
    p.add_argument("--limit", type=cliargs.positive_int, help="first N rows of each file")
    p.add_argument("--show", type=cliargs.count, default=3,
                   help="mismatching rows shown per combination")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE",
                   help="change a configuration field of every chosen preset (repeatable; "
                        "e.g. final_rounding=ro, carry_bits=2): how many recorded rows a "
                        "claimed feature contradicts")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("gemm", help="D = alpha*A*B + beta*C chained over K on a preset")
    add_config_args(p)
    p.add_argument("--A", dest="A", help="A as a .npy file or a text file (rows of numbers)")
    p.add_argument("--B", dest="B", help="B, same forms")
    p.add_argument("--C", dest="C", help="C, same forms (default 0)")
    p.add_argument("--alpha", type=cliargs.finite_float, default=1.0)
    p.add_argument("--beta", type=cliargs.finite_float, default=0.0)
    p.add_argument("--scheme", choices=["ab_first", "c_first"], default="ab_first",
                   help="ab_first: unit sums A*B, alpha/beta applied after in binary32 "
                        "(default); c_first: beta*C is the unit's first accumulator")
    p.add_argument("--hazard", action="store_true",
                   help="run the [FTTN24] Sec. V porting-hazard matrices (m=n=k=8192)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gemm)

    p = sub.add_parser("bench", help="print dot products per second (and solver times)")
    p.add_argument("--preset", action="append", help="preset to time (repeatable)")
    p.add_argument("--rows", type=cliargs.positive_int, default=10**6)
    p.add_argument("--smt", action="store_true", help="also time the SMT queries")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)


# -- shared argument handling ------------------------------------------------------

def add_config_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--preset", help="a preset name (see `mmaprobe presets`)")
    g.add_argument("--config", help="a configuration YAML file (AccumulatorConfig fields)")


def config_from_args(args) -> tuple[str, AccumulatorConfig]:
    if getattr(args, "preset", None):
        p = get_preset(args.preset)
        return p.name, p.config
    return args.config, AccumulatorConfig.load(args.config)


#: ASCII digits only (re.ASCII): no full-width, superscript or other scripts' digits
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,12})?|[+-]?\d{1,400}/\d{1,400}",
                      re.ASCII)
_HEX = re.compile(r"0[xX][0-9a-fA-F]{1,32}")
#: decimal exponents beyond this overflow or underflow every format anyway
MAX_DECIMAL_EXPONENT = 2000


def parse_value(text: str, fmt: Format, what: str) -> tuple[int, str | None]:
    """A value given on the command line -> (bits, note).

    '0x3c00' is a bit pattern (it must be one of fmt); 'inf', '-inf', 'nan' and decimals
    ('1.5', '-2e-3', '3/4') are values, rounded to nearest-even when fmt does not hold them
    exactly; the note then says what happened ('rounded to ...', 'overflows to inf').
    """
    s = text.strip()
    low = s.lower()
    if low.startswith("0x"):
        try:
            if not _HEX.fullmatch(s):
                raise ValueError(s)
            bits = int(s, 16)
            fmt.decode(bits)
        except (ValueError, FormatError):
            raise InputError(f"{what}: {text!r} is not a {fmt.name} bit pattern (0x and hex "
                             f"digits, at most {fmt.width} bits)") from None
        return bits, None
    if low in ("inf", "+inf", "-inf", "nan"):
        try:
            if low == "nan":
                return fmt.nan_bits(), None
            return fmt.inf_bits(int(low.startswith("-"))), None
        except FormatError as e:
            raise InputError(f"{what}: {e}") from None
    if len(s) > 200 or not _DECIMAL.fullmatch(s):
        raise InputError(f"{what}: cannot read {text!r} as a decimal number (e.g. 1.5, "
                         f"-2e-3, 3/4), inf, nan or 0x bit pattern")
    mant, _, exp = low.partition("e")
    if exp and abs(int(exp)) > MAX_DECIMAL_EXPONENT:
        raise InputError(f"{what}: exponent of {text!r} beyond +-{MAX_DECIMAL_EXPONENT}")
    try:
        x = Fraction(s)
    except ZeroDivisionError:
        raise InputError(f"{what}: {text!r} divides by zero") from None
    if s.startswith("-") and x == 0:
        return fmt.zero_bits(1), None
    exact = fmt.exact_bits(x)
    if exact is not None:
        return exact, None
    bits = fmt.from_fraction(x, "rne")
    cls = fmt.decode(bits)[0]
    if cls in ("inf", "nan"):
        return bits, f"{text} overflows {fmt.name} to {show(fmt, bits)}"
    return bits, f"{text} rounded to {show(fmt, bits)}"


def show(fmt: Format, bits: int) -> str:
    width = (fmt.width + 3) // 4
    return f"0x{bits:0{width}x} ({fmt.to_float(bits)!r})"


# -- presets -----------------------------------------------------------------------------

def cmd_presets(args) -> int:
    ps = [p for p in list_presets()
          if not args.device or p.device.lower() == args.device.lower()]
    if args.device and not ps:
        devices = sorted({p.device for p in list_presets()})
        raise InputError(f"unknown device {args.device!r}; devices: {', '.join(devices)}")
    if args.json:
        print(json.dumps([{"name": p.name, "device": p.device, "architecture": p.architecture,
                           "instruction": p.instruction, "citation": p.citation,
                           "config": p.config.to_dict()} for p in ps], indent=1))
        return 0
    for p in ps:
        print(f"{p.name:28s} {p.config.describe()}")
        print(f"{'':28s} {p.instruction}; {p.citation}")
        if args.verbose:
            print(yaml.safe_dump(p.config.to_dict(), sort_keys=False).rstrip().replace(
                "\n", "\n" + " " * 29).join([" " * 29, ""]))
    print(f"{len(ps)} presets", file=sys.stderr)
    return 0


# -- eval -------------------------------------------------------------------------------

def cmd_eval(args) -> int:
    name, cfg = config_from_args(args)
    fin, fb, fc, fout = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                         get_format(cfg.c_format), get_format(cfg.out_format))
    a_txt, b_txt = args.a.split(","), args.b.split(",")
    if len(a_txt) != cfg.k or len(b_txt) != cfg.k:
        raise InputError(f"{name} has k={cfg.k}: --a and --b need {cfg.k} comma-separated "
                         f"values each, got {len(a_txt)} and {len(b_txt)}")
    notes = []
    a, b = [], []
    for i, (x, y) in enumerate(zip(a_txt, b_txt)):
        ba, na = parse_value(x, fin, f"a{i}")
        bb, nb = parse_value(y, fb, f"b{i}")
        a.append(ba)
        b.append(bb)
        notes += [f"a{i}: {na}"] * bool(na) + [f"b{i}: {nb}"] * bool(nb)
    c, nc = parse_value(args.c, fc, "c")
    notes += [f"c: {nc}"] * bool(nc)
    scales: tuple[list[int], list[int]] | None = None
    if cfg.scales:
        fs = get_format(cfg.scale_format)
        given = []
        for opt, txt in (("--scale-a", args.scale_a), ("--scale-b", args.scale_b)):
            parts = ["1"] * cfg.scales if txt is None else txt.split(",")
            if len(parts) != cfg.scales:
                raise InputError(f"{name} has {cfg.scales} scale factor(s) per operand "
                                 f"({cfg.scale_format}, block {cfg.scale_block}): {opt} needs "
                                 f"{cfg.scales} comma-separated values, got {len(parts)}")
            vals = []
            for j, x in enumerate(parts):
                v, note = parse_value(x, fs, f"{opt[2:]}{j}")
                vals.append(v)
                notes += [f"{opt[2:]}{j}: {note}"] * bool(note)
            given.append(vals)
        scales = (given[0], given[1])
    elif args.scale_a is not None or args.scale_b is not None:
        raise InputError(f"{name} has no block scaling: --scale-a/--scale-b do not apply")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    trace: list[str] | None = [] if args.explain else None
    d_ref = reference_dot(cfg, a, b, c, trace, *(scales or ()))
    sc = () if scales is None else tuple(np.array([x], np.uint64) for x in scales)
    d = int(evaluate(cfg, np.array([a], np.uint64), np.array([b], np.uint64),
                     np.array([c], np.uint64), *sc)[0])
    if d != d_ref:  # the two engines must agree; say so loudly if they do not
        raise AssertionError(f"model {d:#x} and reference {d_ref:#x} disagree")
    if args.json:
        doc = {"config": name, "a": [f"{x:#x}" for x in a], "b": [f"{x:#x}" for x in b],
               "c": f"{c:#x}", "d": f"{d:#x}", "d_value": number(fout.to_float(d)),
               "steps": trace}
        if scales is not None:
            doc["scale_a"] = [f"{x:#x}" for x in scales[0]]
            doc["scale_b"] = [f"{x:#x}" for x in scales[1]]
        print(dumps(doc, indent=1))
        return 0
    print(f"{name}: {cfg.describe()}")
    for i in range(cfg.k):
        print(f"  a{i} = {show(fin, a[i])}  b{i} = {show(fb, b[i])}")
    if scales is not None:
        fs = get_format(cfg.scale_format)
        for j in range(cfg.scales):
            print(f"  scale_a{j} = {show(fs, scales[0][j])}  "
                  f"scale_b{j} = {show(fs, scales[1][j])}")
    print(f"  c  = {show(fc, c)}")
    if trace:
        print("steps:")
        for line in trace:
            print("  " + line)
    print(f"d = {show(fout, d)}")
    return 0


# -- validate -----------------------------------------------------------------------------

def parse_overrides(items: list[str] | None) -> dict:
    """``--set FIELD=VALUE`` items as a mapping (values read as YAML scalars: 2, ro, null);
    fields and values are checked when the configuration is rebuilt."""
    overrides: dict = {}
    for item in items or []:
        name, eq, text = item.partition("=")
        if not eq or not name.strip():
            raise InputError(f"--set {item!r}: expected FIELD=VALUE, e.g. final_rounding=ro")
        try:
            overrides[name.strip()] = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            raise InputError(f"--set {item!r}: the value is not a YAML scalar") from None
    return overrides


def cmd_validate(args) -> int:
    root = Path(args.data_dir) if args.data_dir else default_hwdata()
    overrides = parse_overrides(args.set)
    t0 = time.time()
    results = validate(root, args.gpu, args.limit, args.show,
                       progress=lambda m: print(m, file=sys.stderr), overrides=overrides)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1))
    else:
        print(f"{'gpu':6s} {'in':14s} {'out':9s} {'preset':30s} {'k':>3s} {'rows':>7s} "
              f"{'mismatches':>10s}")
        for r in results:
            if r.error:
                print(f"{r.gpu:6s} {r.in_format:14s} {r.out_format:9s} {'-':30s} {r.k:3d} "
                      f"{r.rows:7d} {'FAILED':>10s}")
                print(f"    {r.error}")
                continue
            print(f"{r.gpu:6s} {r.in_format:14s} {r.out_format:9s} {r.preset:30s} {r.k:3d} "
                  f"{r.rows:7d} {r.mismatches:10d}"
                  + (f"  {r.instruction}" if r.instruction else ""))
            for m in r.first:
                print(f"    row {m['row']}: model {m['model']} hardware {m['hardware']} "
                      f"(c {m['c']}; a {' '.join(m['a'])}; b {' '.join(m['b'])})")
        total = sum(r.rows for r in results)
        bad = sum(r.mismatches for r in results)
        unmatched = sum(bool(r.error) for r in results)
        print(f"{len(results)} combinations, {total} rows, {bad} mismatches"
              + (f", {unmatched} without a preset" if unmatched else "")
              + f" ({time.time() - t0:.1f} s)")
    return 1 if any(r.failed for r in results) else 0


# -- gemm -----------------------------------------------------------------------------------

def _load_matrix(path: str | None, what: str) -> np.ndarray | None:
    """A matrix operand: a .npy file (numbers, 1-D or 2-D; its header is checked before
    any data is read) or a text file of rows of numbers; errors name the operand and file."""
    if path is None:
        return None
    if path.endswith(".npy"):
        p = Path(path)
        if not p.is_file():
            kind = "not found" if not p.exists() else "not a regular file"
            raise InputError(f"{what} ({path}): cannot read the matrix: {kind}")
        try:  # memory-mapped: a header claiming terabytes fails here, nothing is allocated
            arr = np.load(p, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise InputError(f"{what} ({path}): not a readable .npy array: {e}") from None
    else:
        text = read_text(path, f"{what} matrix")
        if not text.strip():
            raise InputError(f"{what} ({path}): no rows of numbers (empty file)")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # an empty file is an error, not a warning
                arr = np.loadtxt(io.StringIO(text), ndmin=2)
        except (ValueError, UserWarning) as e:
            raise InputError(f"{what} ({path}): expected rows of numbers: {e}") from None
        if np.isinf(arr).any():  # 1e400 reads as inf: say so rather than compute with it
            for lineno, line in enumerate(text.splitlines(), 1):
                for word in line.split():
                    if "inf" not in word.lower() and math.isinf(float(word)):
                        raise InputError(f"{what} ({path}):{lineno}: {word[:40]} overflows "
                                         f"binary64; write inf for an infinity")
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
        kind = getattr(arr, "dtype", type(arr))
        raise InputError(f"{what} ({path}): expected real numbers, got an array of {kind}")
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise InputError(f"{what} ({path}): expected a non-empty 1-D or 2-D array, got shape "
                         f"{arr.shape}")
    return np.atleast_2d(np.array(arr, dtype=np.float64))


def _fits(shape: tuple[int, ...], target: tuple[int, int]) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def hazard_matrices(K: int = 8192):
    """Seed 004 Sec. V: one row of A and one column of B (every D_ij is the same).

    A_i0 = 2^10, A_ij = -2^-2 (odd j), -2^-3 (even j > 0) -- the minus sign is implied by
    the paper's result formula; B_0j = 2^10, other B_ij = 2^-3; C = 2^20, alpha=-1, beta=1.
    """
    A = np.empty((1, K))
    A[0, 0] = 2.0**10
    A[0, 1::2] = -(2.0**-2)
    A[0, 2::2] = -(2.0**-3)
    B = np.full((K, 1), 2.0**-3)
    B[0, 0] = 2.0**10
    C = np.full((1, 1), 2.0**20)
    return A, B, C


#: [FTTN24] abstract and Sec. V: D_ij of the porting hazard as published per device.
HAZARD_PUBLISHED = "V100 0, A100 0, MI250X 0, CPU 0, MI100 255.875, H100 191.875"
HAZARD_EXACT = 191.984375

#: Why a preset's algorithm gives what it gives (ab_first, small entries of A negative);
#: figures from the model and from a direct binary32 simulation of [XWYY25] Alg. 2/3.
HAZARD_NOTES = {
    "gps": "CDNA2 GPS ([XWYY25] Alg. 3) adds each group of 4 products pairwise in binary32 "
           "RNE: each later group of small products, -3*2^-5, is 1.5 ulp (2^-4) of the "
           "accumulator just below 2^20, a tie that rounds to even 2 ulp down (1 ulp once), "
           "so D = 4094 ulp = 255.875 -- the value [FTTN24] publishes for MI100, not MI250X. "
           "Every CDNA2 fp16 MFMA shape (k=4, 8, 16) is GPS with G=4 and gives the same; G=2 "
           "gives 255.9375, G=8 and 16 give 191.9375, K split into S separately accumulated "
           "parts 191.875 + 64/S, c added first 191.96875. [FTTN24]'s MI250X 0 needs one "
           "product per binary32 addition (G=1: the fp32 MFMA, mi250x-fp32-fp32, a vector-ALU "
           "loop, or a CPU).",
    "sfma": "one product per binary32 addition: after 2^20 every small product is at most half "
            "an ulp and ties to even, so A*B stays 2^20 and D = 0 ([FTTN24]'s MI250X and CPU "
            "value); with c first (--scheme c_first) the small products sum exactly.",
    "fused": "fused blocks truncate at alignment to the F = 23+neab fraction bits below the "
             "block's largest exponent: after 2^20 the small products vanish where F <= 24 "
             "(V100, A100: 0) and partly survive where F = 25 (H100: 191.875).",
}


def hazard_report(name: str, cfg: AccumulatorConfig, scheme: str, value: float) -> dict:
    """The hazard's D_ij with the published values and why the algorithm gives it."""
    note = HAZARD_NOTES.get(cfg.algorithm, "")
    return {"config": name, "scheme": scheme, "D_ij": value, "exact": HAZARD_EXACT,
            "published": HAZARD_PUBLISHED, "note": note if scheme == "ab_first" else ""}


def cmd_gemm(args) -> int:
    name, cfg = config_from_args(args)
    if args.hazard:
        given = [f for f in ("A", "B", "C") if getattr(args, f) is not None]
        given += [f for f, v, d in (("alpha", args.alpha, 1.0), ("beta", args.beta, 0.0))
                  if v != d]
        if given:
            raise InputError(f"--hazard runs the [FTTN24] Sec. V matrices with their own "
                             f"alpha and beta; drop --{', --'.join(given)}")
        A, B, C = hazard_matrices()
        alpha, beta = -1.0, 1.0
    else:
        if args.A is None or args.B is None:
            raise InputError("gemm needs --A and --B (or --hazard)")
        A, B = _load_matrix(args.A, "A"), _load_matrix(args.B, "B")
        C, alpha, beta = _load_matrix(args.C, "C"), args.alpha, args.beta
        (m, K), n = A.shape, B.shape[1]
        if B.shape[0] != K:
            raise InputError(f"B ({args.B}): A is {m}x{K} so B must have {K} rows; got shape "
                             f"{B.shape}")
        if C is not None and not _fits(C.shape, (m, n)):
            raise InputError(f"C ({args.C}): shape {C.shape} does not fit D, which is "
                             f"{m}x{n}")
        limits.ROWS.check(m * n, f"gemm: {m}x{n} outputs", K + (-K) % cfg.k)
    D = gemm(cfg, A, B, C, alpha, beta, args.scheme)
    rep = hazard_report(name, cfg, args.scheme, float(D[0, 0])) if args.hazard else None
    if args.json:
        out = {"config": name, "scheme": args.scheme, "D": D.tolist()}
        if rep is not None:
            out["hazard"] = rep
        print(dumps(out))
    else:
        if rep is not None:
            print(f"[FTTN24] Sec. V hazard on {name} ({args.scheme}): D_ij = {rep['D_ij']!r} "
                  f"(exact {HAZARD_EXACT})")
            print(f"  published: {HAZARD_PUBLISHED}")
            if rep["note"]:
                print(textwrap.fill(rep["note"], width=100, initial_indent="  why: ",
                                    subsequent_indent="       "))
        else:
            np.savetxt(sys.stdout, D, fmt="%.9g")
    return 0


# -- bench ---------------------------------------------------------------------------------

BENCH_PRESETS = ["h100-fp16-fp32", "a100-bf16-fp32-k16"]


def cmd_bench(args) -> int:
    names = args.preset or BENCH_PRESETS
    presets = [get_preset(name) for name in names]
    for p in presets:  # before generating any input
        limits.ROWS.check(args.rows, f"--rows on {p.name}", p.config.k)
    out = []
    for p in presets:
        r = bench_model(p.config, rows=args.rows)
        r["preset"] = p.name
        out.append(r)
        if not args.json:
            print(f"{p.name:24s} {args.rows:>9d} rows  {r['seconds']:7.3f} s  "
                  f"{r['rows_per_s']:12.0f} dot products/s")
    if args.smt:
        say = (lambda m: print(m, file=sys.stderr)) if args.json else print
        out.append({"smt": bench_smt(out=say)})
    if args.json:
        print(json.dumps(out, indent=1, default=str))
    return 0
