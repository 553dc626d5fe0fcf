"""The literature's instruction tables as data (instructions.yaml) and what each row implies.

Each row of ``instructions.yaml`` is one instruction variant of one published table on one
architecture: Xie, Wang, Yang & Yang [XWYY25] Tables III and IV, the instruction lists of the
MMA-Sim repository that accompanies [XWYY25] ("[XWYY25] ISA table"), and Khattak & Mikaitis
[KM25] Table II.  A row names the vendor instruction, the formats of a, b, c and d, K (products
per output element), the algorithm and parameters as the source gives them, and the preset
that models it (or null).

:func:`load_rows` reads and checks the file; every error names ``file:line: field``.
:func:`implied_config` turns a row into the configuration fields its source states, or says
what is missing (``other``: a device, or a vocabulary gap);
:func:`config_mismatches` compares a preset's configuration with a row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import FUSED_ALGORITHMS, AccumulatorConfig, ConfigError
from .errors import InputError
from .formats import FormatError, get_format
from .presets import ARCHITECTURES
from .yamldoc import load_doc

SOURCES = ("[XWYY25] Table III", "[XWYY25] Table IV", "[XWYY25] ISA table",
           "[KM25] Table II", "[KM25] Table II note")

#: the algorithms as the sources name them, and the parameters each may carry
ALGORITHM_PARAMS: dict[str, set[str]] = {
    # [XWYY25] Sec. IV-C/D: F fraction bits, nfma products per FDA, out_frac_bits (Step 5),
    # block/scale_format for QMMA.SF and UTCQMMMA with scale factors (Sec. IV-C "Scale factor")
    "FDA": {"F", "nfma", "out_frac_bits", "block", "scale_format"},
    "CoFDA": {"F", "nfma", "out_frac_bits", "block", "scale_format"},
    "SFMA": {"rounding"},                                    # [XWYY25] Sec. IV-A
    "GPS": {"G", "flush"},                                   # [XWYY25] Sec. IV-B
    "FDRDA": {"F", "nfma"},                                  # [XWYY25] Sec. IV-F
    "CoFDRDA": {"F", "nfma"},                                # [XWYY25] Sec. IV-G
    "GFDRDA": {"F", "nfma"},                                 # [XWYY25] Sec. IV-H
    "CoGFDRDA": {"F", "nfma"},                               # [XWYY25] Sec. IV-I
    "GDFS": {"F", "group", "block", "scale_format"},         # [XWYY25] Sec. IV-E
    # [KM25] Table II columns: product alignment (2, F), accumulator output bits, NFMA, final
    # rounding, c early/late, interleaving; block_rounding where the text names it
    "BFMA": {"F", "acc_bits", "nfma", "final_rounding", "c", "interleave", "block_rounding"},
}
REQUIRED_PARAMS: dict[str, set[str]] = {
    "FDA": {"F", "nfma"}, "CoFDA": {"F", "nfma"}, "SFMA": set(), "GPS": {"G", "flush"},
    "FDRDA": {"F", "nfma"}, "CoFDRDA": {"F", "nfma"}, "GFDRDA": {"F", "nfma"},
    "CoGFDRDA": {"F", "nfma"}, "GDFS": {"F", "group", "block", "scale_format"},
    "BFMA": {"F", "nfma", "final_rounding", "c", "interleave"},
}
ROW_FIELDS = ("source", "architecture", "device", "instruction", "a_format", "b_format",
              "c_format", "d_format", "k", "algorithm", "params", "preset", "note")
REQUIRED_FIELDS = ROW_FIELDS[:11] + ("preset",)
#: what a row without a preset needs before a preset can express it (b_format and
#: block_scale are in the vocabulary now; kept so older tables still load)
NEEDS = ("b_format", "block_scale", "other")


@dataclass(frozen=True)
class InstructionRow:
    where: str          # "file:line"
    source: str
    architecture: str
    device: str | None
    instruction: str
    a_format: str
    b_format: str
    c_format: str
    d_format: str
    k: int
    algorithm: str
    params: dict[str, Any] = field(hash=False)
    preset: str | None
    note: str | None = None

    def label(self) -> str:
        fm = (self.a_format if self.a_format == self.b_format
              else f"{self.a_format}x{self.b_format}")
        return (f"{self.where} {self.source} {self.architecture} {self.instruction} "
                f"[{fm}, c {self.c_format}, d {self.d_format}, K={self.k}, {self.algorithm}]")


class NotExpressible(Exception):
    """The row needs configuration vocabulary that does not exist yet."""

    def __init__(self, need: str, why: str):
        super().__init__(f"{need}: {why}")
        self.need = need
        self.why = why


def default_path() -> Path:
    return Path(__file__).resolve().parent / "instructions.yaml"


def load_rows(path: str | Path | None = None) -> list[InstructionRow]:
    """Every row of the table file, checked; InputError names file:line: field."""
    path = Path(path) if path is not None else default_path()
    name = path.name
    doc = load_doc(path, "instruction table")
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise InputError(f"{name}:1: rows: expected a mapping with a list 'rows'")
    rows = []
    for i, raw in enumerate(data["rows"]):
        lines = {k: doc.line(("rows", i, k)) for k in raw} if isinstance(raw, dict) else {}
        rows.append(_check_row(raw, name, doc.line(("rows", i)), lines))
    return rows


def _check_row(raw: Any, name: str, line: int, lines: dict[str, int]) -> InstructionRow:
    def fail(fieldname: str, expected: str) -> None:
        got = raw.get(fieldname) if isinstance(raw, dict) else raw
        raise InputError(f"{name}:{lines.get(fieldname, line)}: {fieldname}: got {got!r}, "
                         f"expected {expected}")

    if not isinstance(raw, dict):
        fail("row", "a mapping of " + ", ".join(ROW_FIELDS))
    unknown = sorted(set(raw) - set(ROW_FIELDS))
    if unknown:
        fail(unknown[0], "no such field; valid fields: " + ", ".join(ROW_FIELDS))
    for f in REQUIRED_FIELDS:
        if f not in raw:
            raise InputError(f"{name}:{line}: {f}: missing")
    if raw["source"] not in SOURCES:
        fail("source", "one of " + ", ".join(SOURCES))
    for f in ("architecture", "instruction"):
        if not isinstance(raw[f], str) or not raw[f].strip():
            fail(f, "a non-empty string")
    if raw["device"] is not None and raw["device"] not in ARCHITECTURES:
        fail("device", "null or one of " + ", ".join(ARCHITECTURES))
    for f in ("a_format", "b_format", "c_format", "d_format"):
        try:
            canon = get_format(str(raw[f])).name
        except FormatError as e:
            fail(f, f"a format name ({e})")
        if canon != raw[f]:
            fail(f, f"the canonical name {canon!r}")
    if not isinstance(raw["k"], int) or isinstance(raw["k"], bool) or raw["k"] < 1:
        fail("k", "a positive integer")
    alg = raw["algorithm"]
    if alg not in ALGORITHM_PARAMS:
        fail("algorithm", "one of " + ", ".join(ALGORITHM_PARAMS))
    params = raw["params"]
    if params is None:
        params = {}
    if not isinstance(params, dict):
        fail("params", "a mapping")
    extra = sorted(set(params) - ALGORITHM_PARAMS[alg])
    if extra:
        fail("params", f"parameters of {alg} only ({', '.join(sorted(ALGORITHM_PARAMS[alg]))}); "
                       f"not {', '.join(extra)}")
    missing = sorted(REQUIRED_PARAMS[alg] - set(params))
    if missing:
        fail("params", f"{alg} with {', '.join(missing)}")
    for p in ("F", "nfma", "G", "group", "block", "acc_bits", "out_frac_bits"):
        if p in params and (not isinstance(params[p], int) or params[p] < 1):
            fail("params", f"{p} a positive integer")
    if "nfma" in params and raw["k"] % min(params["nfma"], raw["k"]) != 0:
        fail("params", f"nfma dividing k={raw['k']} (or k dividing nfma)")
    if "G" in params and raw["k"] % min(params["G"], raw["k"]) != 0:
        fail("params", f"G dividing k={raw['k']}")
    if "scale_format" in params and params["scale_format"] not in ("ue8m0", "ue4m3"):
        fail("params", "scale_format ue8m0 or ue4m3")
    if ("block" in params) != ("scale_format" in params):
        fail("params", "block and scale_format together")
    for p, dom in (("final_rounding", ("rz", "rne")), ("block_rounding", ("rz", "rne")),
                   ("c", ("early", "late")), ("flush", (True, False)),
                   ("interleave", (True, False))):
        if p in params and params[p] not in dom:
            fail("params", f"{p} one of {dom}")
    if "rounding" in params and (not isinstance(params["rounding"], list)
                                 or not params["rounding"]):
        fail("params", "rounding a non-empty list of rounding modes")
    if raw["preset"] is not None and not isinstance(raw["preset"], str):
        fail("preset", "null or a preset name")
    if raw.get("note") is not None and not isinstance(raw["note"], str):
        fail("note", "a string")
    return InstructionRow(f"{name}:{line}", raw["source"], raw["architecture"], raw["device"],
                          raw["instruction"], raw["a_format"], raw["b_format"],
                          raw["c_format"], raw["d_format"], raw["k"], alg, dict(params),
                          raw["preset"], raw.get("note"))


class OneOf(frozenset):
    """An implied field whose source admits several configuration values."""


def implied_config(row: InstructionRow) -> dict[str, Any]:
    """The configuration fields the row's source states (AccumulatorConfig names).

    A value may be a :class:`OneOf` where the source admits several (NaN payloads that are
    "not canonical": the format's default NaN or a propagated one).  Raises NotExpressible
    naming what is missing (a device, or something else).
    """
    p = row.params
    if row.device is None:
        raise NotExpressible("other", f"no mmaprobe device for {row.architecture}")
    cfg: dict[str, Any] = {"in_format": row.a_format, "b_format": row.b_format,
                           "c_format": row.c_format, "out_format": row.d_format, "k": row.k}
    alg = row.algorithm
    xwyy = row.source.startswith("[XWYY25]")
    if alg in ("FDA", "CoFDA"):
        cfg.update(algorithm="fused", nfma=p["nfma"], neab=p["F"] - 23, c_placement="early",
                   interleave="none", nan="canonical",
                   # FDA Step 5: RZ to binary32 (at out_frac_bits), RNE to binary16
                   final_rounding="rz" if row.d_format == "binary32" else "rne",
                   out_frac_bits=p.get("out_frac_bits"))
        # Sec. IV-C "Scale factor": scale factors per block of products, or none
        cfg.update(scale_format=p.get("scale_format"), scale_block=p.get("block"))
    elif alg == "GDFS":
        cfg.update(algorithm="gdfs", nfma=p["group"], neab=p["F"] - 23, final_rounding="rz",
                   nan="canonical", scale_format=p["scale_format"], scale_block=p["block"])
    elif alg == "SFMA":
        cfg.update(algorithm="sfma", nfma=1, final_rounding=(p.get("rounding") or ["rne"])[0])
        if xwyy:
            # [XWYY25] Sec. V: DMMA/MFMA NaNs are not canonical (the default NaN, or the
            # operand's payload propagated as measured on an H100)
            cfg["nan"] = OneOf({"ieee", "propagate"})
    elif alg == "GPS":
        cfg.update(algorithm="gps", nfma=p["G"], final_rounding="rne", nan="ieee",
                   flush=("inputs", "products", "sums", "output") if p["flush"] else ())
    elif alg in ("FDRDA", "CoFDRDA", "GFDRDA", "CoGFDRDA"):
        cfg.update(algorithm="fdrda", nfma=p["nfma"], neab=p["F"] - 23, final_rounding="rne",
                   nan="ieee", product_overflow=True,
                   interleave="even_odd" if "GFDRDA" in alg else "none")
    elif alg == "BFMA":
        nfma = p["nfma"]
        if p["interleave"]:
            # two interleaved groups of K/2 products each ([KM25] Sec. IV-A5, Fig. 5(c))
            nfma = min(nfma, row.k // 2)
        cfg.update(algorithm="fused", nfma=nfma, neab=p["F"] - 23,
                   interleave="pairs" if p["interleave"] else "none", c_placement=p["c"])
        if p["c"] == "late":
            cfg["late_rounding"] = p["final_rounding"]
            if "block_rounding" in p:
                cfg["final_rounding"] = p["block_rounding"]
        else:
            cfg["final_rounding"] = p["final_rounding"]
    else:  # pragma: no cover - the loader admits only the algorithms above
        raise NotExpressible("other", f"algorithm {alg}")
    if xwyy and cfg["algorithm"] in FUSED_ALGORITHMS:
        # [XWYY25] Sec. III-F tests whether -0 + sum (+0)(-0) gives -0; its fused
        # algorithms sum in fixed point and return +0 for every zero
        cfg["zero_sign"] = "positive"
    if cfg["k"] % cfg["nfma"] != 0:
        raise NotExpressible("other", f"nfma {cfg['nfma']} does not divide K={row.k}")
    try:  # the stated fields must form a valid configuration by themselves
        AccumulatorConfig.from_dict({k: (sorted(v)[0] if isinstance(v, OneOf) else v)
                                     for k, v in cfg.items() if v is not None
                                     or k == "out_frac_bits"}, row.where)
    except ConfigError as e:
        raise NotExpressible("other", str(e)) from None
    return cfg


def config_mismatches(row: InstructionRow, cfg: AccumulatorConfig) -> list[str]:
    """Fields where a configuration differs from what the row's source states."""
    want = implied_config(row)
    out = []
    for key, value in want.items():
        have = cfg.b_fmt if key == "b_format" else getattr(cfg, key)
        if key == "flush":
            have = tuple(have)
        if have not in value if isinstance(value, OneOf) else have != value:
            shown = sorted(value) if isinstance(value, OneOf) else value
            out.append(f"{key}: preset {have!r}, table {shown!r}")
    return out


def needs(row: InstructionRow) -> str | None:
    """None when the current vocabulary expresses the row, else one of NEEDS."""
    try:
        implied_config(row)
    except NotExpressible as e:
        return e.need
    return None
