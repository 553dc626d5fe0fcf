"""The accumulator configuration: the one feature vector every engine speaks.

A configuration says how a matrix unit computes one output element
``d = c + sum_i a_i * b_i`` of one instruction (K products).  Field names are the project's
vocabulary (README, "The accumulator configuration"); probes decide them, the numpy model
and the z3 encoding evaluate them, presets fix them per device.

algorithm
    'fused'  fused dot-add blocks ([XWYY25] FDA, chained blocks = CoFDA; [KM25] Table II).
    'fdrda'  AMD CDNA3 fused-dot-round-down-add ([XWYY25] FDRDA/CoFDRDA; with
             interleave='even_odd' the fp8 GFDRDA/CoGFDRDA).
    'sfma'   sequential IEEE fused multiply-adds, d = fma(a_k, b_k, ... fma(a_0, b_0, c)),
             in the output format ([XWYY25] SFMA; [KM25] Sec. IV-A2 fp64 order).
    'gps'    AMD CDNA1/CDNA2 group-pairwise-sum with IEEE binary32 operations ([XWYY25]
             GPS); nfma is the group size G.  CDNA2 flushes subnormals at every stage
             (flush: all four stages); CDNA1 flushes none (flush: [], [XWYY25] ISA table).
    'gdfs'   NVIDIA Blackwell group-dot-fused-sum for block-scaled fp4 ([XWYY25] Sec. IV-E):
             the products of each group of nfma (16) are summed exactly, each group sum is
             multiplied by its block's scale factors and aligned at the scale factors'
             exponent (F = 23 + neab = 35 fraction bits) with c, then rounded once.
nfma
    products fused before one normalisation and rounding; the K products form K/nfma
    consecutive blocks chained through the accumulator (CoFDA).
neab
    extra alignment bits beyond binary32's 23 fraction bits: the aligned significands keep
    F = 23 + neab fraction bits below the largest exponent (V100 0, A100 1, H100 2,
    Hopper/Ada fp8 -10).
product_normalisation
    'denormalised': a product is aligned with exponent e_a + e_b and a significand in
    [0, 4) (two integer bits, [KM25] Sec. IV-A1); 'normalised': exponent floor(log2 |p|).
align_rounding
    what happens to bits shifted out at alignment: 'rz' truncation of the magnitude, 'rd'
    truncation in two's complement, 'rne', or 'rz_sticky' (truncate, plus one sticky bit
    below the F fraction bits, [KM25] Sec. IV-C stkbitenabled).
carry_bits
    bits above the two integer bits of the fixed-point sum; a sum that needs more wraps
    (sign-magnitude).  None: unbounded.
c_placement
    'early': c is the accumulator of the first block, aligned and summed with its products;
    'late': the blocks are chained from a zero accumulator and c is added to the last
    block's output by one IEEE addition in the output format, rounded with late_rounding
    ([KM25] Table II, fp8 via mma.sync).
interleave
    'none'; 'pairs' (H100/B200 fp8 via mma.sync, [KM25] Sec. IV-A5): alternating pairs of
    products form two groups, {0,1,4,5,...} and {2,3,6,7,...}, taken as two chained blocks
    of k/2 (nfma = k/2); 'even_odd' (CDNA3 fp8 GFDRDA): even and odd products are fused
    separately inside each block, then combined ([XWYY25] Sec. IV-H).
final_rounding, out_frac_bits
    rounding of the fused sum to the output format, optionally at a reduced number of
    fraction bits (13 on Ada QMMA / Hopper QGMMA fp8).  A fused or fdrda result of
    magnitude >= 2**(emax+1) after rounding is infinite in every mode ([XWYY25] FDA step 5);
    the IEEE operations (late c, sfma, gps) overflow as IEEE 754 says for their mode.
late_rounding
    rounding of the late addition of c (c_placement='late').
flush
    stages whose subnormals are flushed to zero: inputs, products, sums, output ('gps'
    flushes all four or none; 'sfma' allows only output; 'gdfs' inputs and output).
nan
    'canonical': NVIDIA's canonical NaN (0x7fffffff for binary32, 0x7fff for binary16);
    'ieee': the format's default quiet NaN;
    'propagate' (algorithm 'sfma' with one IEEE format for a, b, c and d; Hopper DMMA,
    measured on an H100 (shared/hwdata/H100-ptx)): each FMA whose result is NaN returns its
    first NaN operand in the order b_k, accumulator, a_k, quietened (quiet bit set, sign
    and payload kept); an invalid operation without a NaN operand (0 x inf, inf - inf)
    returns the default NaN with the sign bit set (0xfff8000000000000 in binary64); the
    result is not made canonical at the end.
product_overflow
    products of magnitude >= 2**128 become infinities (CDNA3, [XWYY25] FDRDA step 2); they
    are looked at only when no input is NaN or infinite (FDRDA step 3 after step 1).
zero_sign
    sign of a zero that a fused block ('fused', 'fdrda', 'gdfs') returns.  'ieee': IEEE
    754's rules (an exact zero sum is -0 only when every term is -0, or any is under RD; a
    non-zero sum rounded or flushed to zero keeps its sign).  'positive': every zero a block
    returns is +0 (all fused NVIDIA Hopper instructions: HMMA, HGMMA, QGMMA, measured on an
    H100; [XWYY25]'s FDA/GDFS sum in fixed point, so a zero is +0).  The IEEE operations
    (late c, 'sfma', 'gps') always follow IEEE 754.
b_format
    format of b when it differs from a's (mixed fp8 e4m3 x e5m2 on Hopper, measured on an
    H100; the f8f6f4 mixes of [XWYY25] Table III); null: b is in in_format.
scale_format, scale_block
    block scaling ([XWYY25] Sec. IV-C "Scale factor" and IV-E): each run of scale_block
    consecutive products shares one scale factor of a and one of b (extra inputs, in
    scale_format: ue8m0 for MXFP8/6/4, ue4m3 for NVFP4); a product's alignment exponent
    includes both scale exponents; a NaN scale factor makes the result NaN.  null: none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import MmaprobeError
from .formats import ROUNDING_MODES, ZERO_SIGN_RULES, FormatError, get_format
from .yamldoc import load_doc

ALGORITHMS = ("fused", "fdrda", "sfma", "gps", "gdfs")
#: algorithms whose blocks are fused sums (the zero_sign rule applies to them)
FUSED_ALGORITHMS = ("fused", "fdrda", "gdfs")
NORMALISATIONS = ("denormalised", "normalised")
ALIGN_ROUNDINGS = ("rz", "rd", "rne", "rz_sticky")
PLACEMENTS = ("early", "late")
INTERLEAVES = ("none", "pairs", "even_odd")
FLUSH_STAGES = ("inputs", "products", "sums", "output")
NAN_STYLES = ("canonical", "ieee", "propagate")
ZERO_SIGNS = ZERO_SIGN_RULES
SCALE_FORMATS = ("ue8m0", "ue4m3")

#: binary32's fraction bits; neab counts alignment bits beyond these ([KM25] Sec. II).
ACC_FRACTION_BITS = 23


class ConfigError(MmaprobeError, ValueError):
    """A configuration field has a value outside its domain."""


#: Largest K (products per output element) a configuration may have.
MAX_K = 1024


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_in(lo: int, hi: int | None = None, null: bool = False):
    def ok(v: Any) -> bool:
        if v is None:
            return null
        return _is_int(v) and v >= lo and (hi is None or v <= hi)
    return ok


#: Each field's domain on its own: (test, what is expected).  Cross-field rules are in
#: AccumulatorConfig.validate.
_DOMAINS: dict[str, tuple[Any, str]] = {
    "k": (_int_in(1, MAX_K), f"an integer in [1, {MAX_K}]"),
    "algorithm": (lambda v: v in ALGORITHMS, f"one of {', '.join(ALGORITHMS)}"),
    "nfma": (_int_in(0, MAX_K), "a positive integer dividing k (0: k)"),
    "neab": (_int_in(-23, 40), "an integer in [-23, 40]"),
    "product_normalisation": (lambda v: v in NORMALISATIONS,
                              f"one of {', '.join(NORMALISATIONS)}"),
    "align_rounding": (lambda v: v in ALIGN_ROUNDINGS, f"one of {', '.join(ALIGN_ROUNDINGS)}"),
    "carry_bits": (_int_in(0, 16, null=True), "null or an integer in [0, 16]"),
    "c_placement": (lambda v: v in PLACEMENTS, f"one of {', '.join(PLACEMENTS)}"),
    "interleave": (lambda v: v in INTERLEAVES, f"one of {', '.join(INTERLEAVES)}"),
    "final_rounding": (lambda v: v in ROUNDING_MODES, f"one of {', '.join(ROUNDING_MODES)}"),
    "out_frac_bits": (_int_in(1, 52, null=True), "null or an integer in [1, 52]"),
    "late_rounding": (lambda v: v in ROUNDING_MODES, f"one of {', '.join(ROUNDING_MODES)}"),
    "flush": (lambda v: isinstance(v, (tuple, list)) and all(
        isinstance(x, str) and x in FLUSH_STAGES for x in v),
        f"a list of stages from {', '.join(FLUSH_STAGES)}"),
    "nan": (lambda v: v in NAN_STYLES, f"one of {', '.join(NAN_STYLES)}"),
    "product_overflow": (lambda v: isinstance(v, bool), "true or false"),
    "zero_sign": (lambda v: v in ZERO_SIGNS, f"one of {', '.join(ZERO_SIGNS)}"),
    "scale_format": (lambda v: v is None or v in SCALE_FORMATS,
                     f"null or one of {', '.join(SCALE_FORMATS)}"),
    "scale_block": (_int_in(1, MAX_K, null=True), f"null or an integer in [1, {MAX_K}]"),
}


def field_problem(name: str, value: Any) -> str | None:
    """What a field's value should be, when ``value`` is outside the field's own domain
    (None when it is inside; formats are checked by name elsewhere)."""
    test = _DOMAINS.get(name)
    if test is None:
        return None
    try:
        ok = bool(test[0](value))
    except TypeError:
        ok = False
    return None if ok else test[1]


@dataclass(frozen=True)
class AccumulatorConfig:
    """How a matrix unit computes one output element (the fields: module docstring).

    Frozen and canonical: equal configurations compare (and hash) equal, so sets and
    dictionaries of configurations work; ``replace`` makes a variant.

    >>> cfg = AccumulatorConfig(in_format="fp16", k=16, neab=2)
    >>> cfg.in_format, cfg.nfma, cfg.frac_bits
    ('binary16', 16, 25)
    >>> cfg.replace(nfma=8).describe()
    'binary16->binary32 k=16 fused nfma=8 neab=2'
    >>> AccumulatorConfig(in_format="binary16", k=16, nfma=3)
    Traceback (most recent call last):
    ...
    mmaprobe.models.config.ConfigError: nfma: got 3, expected a divisor of k=16
    """

    in_format: str
    k: int
    c_format: str = "binary32"
    out_format: str = "binary32"
    algorithm: str = "fused"
    nfma: int = 0  # 0 means k
    neab: int = 0
    product_normalisation: str = "denormalised"
    align_rounding: str = "rz"
    carry_bits: int | None = None
    c_placement: str = "early"
    interleave: str = "none"
    final_rounding: str = "rz"
    out_frac_bits: int | None = None
    late_rounding: str = "rne"
    flush: tuple[str, ...] = field(default_factory=tuple)
    nan: str = "canonical"
    product_overflow: bool = False
    zero_sign: str = "ieee"
    b_format: str | None = None
    scale_format: str | None = None
    scale_block: int | None = None

    def __post_init__(self) -> None:
        # Canonicalise format names and defaults so equal configurations compare equal.
        for name in ("in_format", "c_format", "out_format"):
            try:
                object.__setattr__(self, name, get_format(getattr(self, name)).name)
            except FormatError as e:
                raise ConfigError(f"{name}: {e}") from None
        if self.b_format is not None:
            try:
                bname = get_format(self.b_format).name
            except (FormatError, TypeError) as e:
                raise ConfigError(f"b_format: {e}") from None
            # b in a's format is spelled null, so equal configurations compare equal
            object.__setattr__(self, "b_format", None if bname == self.in_format else bname)
        if isinstance(self.scale_format, str):
            try:
                object.__setattr__(self, "scale_format", get_format(self.scale_format).name)
            except FormatError:
                pass  # reported by validate with the field's domain
        problem = field_problem("k", self.k) or field_problem("flush", self.flush)
        if problem:
            bad = "k" if field_problem("k", self.k) else "flush"
            raise ConfigError(f"{bad}: got {getattr(self, bad)!r}, expected {problem}")
        if self.nfma == 0 and _is_int(self.nfma):
            object.__setattr__(self, "nfma", self.k)
        object.__setattr__(self, "flush", tuple(sorted(set(self.flush),
                                                       key=FLUSH_STAGES.index)))
        self.validate()

    # -- checks ---------------------------------------------------------------
    def validate(self, names: Iterable[str] = _DOMAINS) -> None:
        """Raise ConfigError naming the first field outside its domain or inconsistent
        with the others (``names``: the fields whose domains to check, all by default)."""
        for name in names:
            problem = field_problem(name, getattr(self, name))
            if problem:
                raise ConfigError(f"{name}: got {getattr(self, name)!r}, expected {problem}")

        def need(cond: bool, fieldname: str, expected: str) -> None:
            if not cond:
                raise ConfigError(f"{fieldname}: got {getattr(self, fieldname)!r}, "
                                  f"expected {expected}")

        need(1 <= self.nfma <= self.k and self.k % self.nfma == 0, "nfma",
             f"a divisor of k={self.k}")
        out = get_format(self.out_format)
        need(self.out_frac_bits is None or self.out_frac_bits <= out.t,
             "out_frac_bits", f"null or an integer in [1, {out.t}]")
        need(out.name in ("binary32", "binary16", "bfloat16", "binary64"), "out_format",
             "binary64, binary32, binary16 or bfloat16")
        if self.interleave == "pairs":
            need(self.algorithm == "fused" and self.k % 4 == 0 and self.nfma == self.k // 2,
                 "interleave", "'pairs' only with algorithm 'fused', k a multiple of 4 and "
                 "nfma = k/2 (two interleaved groups)")
        if self.interleave == "even_odd":
            need(self.algorithm == "fdrda" and self.nfma % 2 == 0, "interleave",
                 "'even_odd' only with algorithm 'fdrda' and an even nfma")
        if self.algorithm in ("sfma", "gps"):
            need(not self.product_overflow, "product_overflow",
                 f"false for algorithm {self.algorithm!r} (IEEE products)")
        if self.algorithm == "sfma":
            need(self.nfma == 1, "nfma", "1 for algorithm 'sfma'")
            need(set(self.flush) <= {"output"}, "flush",
                 "at most ('output',) for algorithm 'sfma' (IEEE FMAs keep subnormals)")
        if self.algorithm == "gps":
            need(self.nfma & (self.nfma - 1) == 0, "nfma",
                 "a power of two (the GPS group size)")
            need(self.out_format == "binary32" and self.c_format == "binary32",
                 "out_format", "binary32 for algorithm 'gps'")
            need(self.flush in ((), FLUSH_STAGES), "flush",
                 "all four stages (CDNA2) or none (CDNA1) for algorithm 'gps' "
                 "([XWYY25] Alg. 3)")
        if self.algorithm in ("fdrda", "gdfs"):
            need(self.out_format == "binary32" and self.c_format == "binary32",
                 "out_format", f"binary32 for algorithm {self.algorithm!r}")
        if self.zero_sign != "ieee":
            need(self.algorithm in FUSED_ALGORITHMS, "zero_sign",
                 "'ieee' for algorithm 'sfma' and 'gps' (IEEE operations)")
        if self.nan == "propagate":
            fin = get_format(self.in_format)
            need(self.algorithm == "sfma" and fin.kind == "ieee" and fin.pad == 0
                 and self.in_format == self.b_fmt == self.c_format == self.out_format,
                 "nan", "'propagate' only with algorithm 'sfma' and one IEEE format for "
                 "a, b, c and d")
        need((self.scale_format is None) == (self.scale_block is None), "scale_block",
             "set together with scale_format (both null without block scaling)")
        if self.scale_format is not None:
            need(self.k % self.scale_block == 0, "scale_block", f"a divisor of k={self.k}")
            need(self.algorithm in ("fused", "gdfs") and self.interleave == "none",
                 "scale_format", "null except for algorithm 'fused' (interleave 'none') "
                 "and 'gdfs'")
        if self.algorithm == "gdfs":
            need(self.scale_format is not None, "scale_format",
                 "ue8m0 or ue4m3 for algorithm 'gdfs' (block-scaled groups)")
            need(self.scale_block % self.nfma == 0, "nfma",
                 f"a divisor of scale_block={self.scale_block} (one scale factor per group)")
            need(self.interleave == "none" and self.c_placement == "early", "interleave",
                 "'none' with c_placement 'early' for algorithm 'gdfs'")
            need(set(self.flush) <= {"inputs", "output"}, "flush",
                 "at most inputs and output for algorithm 'gdfs'")
            need(not self.product_overflow, "product_overflow",
                 "false for algorithm 'gdfs' (exact group sums)")

    # -- derived -----------------------------------------------------------------
    @property
    def frac_bits(self) -> int:
        """F: fraction bits kept below the largest exponent at alignment."""
        return ACC_FRACTION_BITS + self.neab

    @property
    def b_fmt(self) -> str:
        """The format of b: b_format, or in_format when they are the same.

        >>> AccumulatorConfig(in_format="e4m3", b_format="e5m2", k=32).b_fmt
        'e5m2'
        """
        return self.b_format or self.in_format

    @property
    def scales(self) -> int:
        """Scale factors per operand and row (k / scale_block; 0 without block scaling)."""
        return 0 if self.scale_block is None else self.k // self.scale_block

    @property
    def operands(self) -> tuple[str, str | None, int | None]:
        """What a row holds beyond the shape (in, c, out, k): b's format and the block
        scaling (scale_format, scale_block); (in_format, None, None) for plain rows."""
        return self.b_fmt, self.scale_format, self.scale_block

    @property
    def row_width(self) -> int:
        """Entries of a packed row of a (or b): its k values, then its scale factors.

        Flows that move rows around (suites, pools, devices) carry the scale factors of a
        block-scaled configuration packed after the k values; the engines accept packed
        rows or the scale factors given apart.

        >>> AccumulatorConfig(in_format="e2m1", k=64, algorithm="gdfs", nfma=16, neab=12,
        ...                   scale_format="ue4m3", scale_block=16).row_width
        68
        """
        return self.k + self.scales

    @property
    def blocks(self) -> int:
        return self.k // self.nfma

    @property
    def block_order(self) -> tuple[int, ...]:
        """Product indices in the order the blocks take them.

        interleave='pairs' ([KM25] Sec. IV-A5, Fig. 5(c)): alternating pairs form two
        groups, {0,1, 4,5, ...} then {2,3, 6,7, ...}, each one fused block (an fp16 HMMA on
        Hopper), the second chained on the first.  Reproduces every H100 fp8 -> fp16 row of
        the MATLAB-tensor-core dataset (recorded with mma.sync m16n8k32).

        >>> AccumulatorConfig(in_format="e4m3", k=8, nfma=4, interleave="pairs").block_order
        (0, 1, 4, 5, 2, 3, 6, 7)
        """
        if self.interleave == "pairs":
            return tuple([i for i in range(self.k) if (i // 2) % 2 == 0]
                         + [i for i in range(self.k) if (i // 2) % 2 == 1])
        return tuple(range(self.k))

    def replace(self, **changes: Any) -> AccumulatorConfig:
        """A variant with ``changes``, validated as a new configuration.  Fields that need
        no canonical spelling are set directly and only their domains checked again (the
        others held before), which keeps the many variants models/observable.py builds
        cheap; formats, k, flush and nfma 0 go through the constructor."""
        if not changes.keys() <= _PLAIN_FIELDS or changes.get("nfma") == 0:
            return dataclasses.replace(self, **changes)
        new = object.__new__(type(self))
        new.__dict__.update({name: getattr(self, name) for name in _FIELD_NAMES})
        new.__dict__.update(changes)
        new.validate([name for name in _DOMAINS if name in changes])  # the constructor's order
        return new

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["flush"] = list(self.flush)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "configuration") -> AccumulatorConfig:
        """A configuration from a mapping of fields (YAML, JSON); errors start with where."""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a mapping of configuration fields")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(x) for x in set(data) - names)
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                              f"valid fields: {', '.join(sorted(names))}")
        for req in ("in_format", "k"):
            if req not in data:
                raise ConfigError(f"{where}: missing required field {req!r}")
        data = dict(data)
        if "flush" in data:
            fl = data["flush"]
            if fl is None:
                fl = []
            if isinstance(fl, str):
                fl = [fl]
            if not isinstance(fl, (list, tuple)):
                raise ConfigError(f"{where}: flush: got {fl!r}, expected "
                                  f"{field_problem('flush', fl)}")
            data["flush"] = tuple(fl)
        try:
            return cls(**data)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None

    @classmethod
    def load(cls, path: str | Path) -> AccumulatorConfig:
        """A configuration YAML file (a mapping of fields); errors name file and line."""
        doc = load_doc(path, "configuration")
        if not isinstance(doc.data, dict):
            raise ConfigError(f"{path}:{doc.line(())}: expected a mapping of configuration "
                              f"fields, e.g. 'in_format: binary16' and 'k: 16'")
        try:
            return cls.from_dict(doc.data, str(path))
        except ConfigError as e:
            # point at the line of the field the message names
            msg = str(e)[len(str(path)) + 2:]
            field = msg.split(":", 1)[0].strip()
            line = doc.line((field,)) if field in doc.data else doc.line(())
            raise ConfigError(f"{path}:{line}: {msg}") from None

    def describe(self) -> str:
        """One line naming the non-default features."""
        ab = self.in_format if self.b_format is None else f"{self.in_format}x{self.b_format}"
        parts = [f"{ab}->{self.out_format}", f"k={self.k}", self.algorithm]
        if self.algorithm in FUSED_ALGORITHMS:
            parts += [f"nfma={self.nfma}", f"neab={self.neab}"]
        defaults = AccumulatorConfig(in_format=self.in_format, k=self.k)
        for f in dataclasses.fields(self):
            if f.name in ("in_format", "b_format", "out_format", "k", "algorithm", "nfma",
                          "neab"):
                continue
            v = getattr(self, f.name)
            if v != getattr(defaults, f.name):
                parts.append(f"{f.name}={v if not isinstance(v, tuple) else ','.join(v)}")
        return " ".join(parts)


#: the fields, in order, and those ``replace`` may set without the constructor's canonical
#: spelling (not formats, k, flush or the scale format)
_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(AccumulatorConfig))
_PLAIN_FIELDS = frozenset(_DOMAINS) - {"k", "flush", "scale_format"}
