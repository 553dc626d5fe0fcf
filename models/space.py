"""Candidate spaces: the configurations a device might have, one YAML type for every flow.

A space document is a union of cartesian products of configuration fields::

    id: fp16-fp32
    title: binary16 in, binary32 out, the K of the NVIDIA presets
    formats: {in: binary16, c: binary32, out: binary32}
    k: [4, 8, 16]
    fixed: {algorithm: fused}          # fields every configuration has
    vary:                              # one product over these lists ...
      neab: [0, 1, 2, 3]
      nfma: [1, 2, 4, 8, 16]           # ... or a keyword: divisors, divisors_ge2,
    families:                          #     pow2_divisors, k, half (of each k)
      - {id: late, fixed: {c_placement: late}, vary: {late_rounding: [rne, rz]}}
    exclude:                           # partial configurations left out
      - {k: 8, nfma: 16}

With ``families``, the space is the union of one product per family (each family's
``fixed``/``vary`` on top of the document's; ``only_out`` limits a family to output
formats); without, it is the one product of ``vary``.  A *template* space (``template:
true``) has no ``formats`` or ``k``: it is instantiated for the formats and K of a suite
(:func:`neighbourhood`, the default space of ``suite``, ``infer`` and ``identify``).

A value outside a field's domain (``nfma: 4.0``, ``neab: "2"``) is an error naming the file
and line; a combination the configuration rejects (``interleave: pairs`` with an nfma other
than k/2) is skipped and counted, and a space where every combination is rejected is an
error.  Spaces of more than :data:`MAX_CONFIGURATIONS` combinations are refused before any
is built.

>>> sp, = parse_spaces(load_docs("s.yaml", text="id: s\\nformats: {in: binary16}\\n"
...                             "k: [8]\\nvary: {nfma: divisors}\\n"))
>>> [c.nfma for c in sp.configs], sp.shape
([1, 2, 4, 8], ('binary16', 'binary32', 'binary32', 8))
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import AccumulatorConfig, ConfigError, field_problem
from .errors import InputError
from .features import FIELD_NAMES
from .formats import FormatError, get_format
from .presets import presets_with
from .yamldoc import Doc, load_docs

SPACE_KEYS = {"id", "title", "template", "formats", "k", "fixed", "vary", "exclude",
              "families"}
FAMILY_KEYS = {"id", "fixed", "vary", "exclude", "only_out"}
SHAPE_FIELDS = ("in_format", "c_format", "out_format", "k")
NFMA_KEYWORDS = ("divisors", "divisors_ge2", "pow2_divisors", "k", "half")
#: Combinations one space may expand to (raise with MMAPROBE_MAX_CONFIGURATIONS).
MAX_CONFIGURATIONS = int(os.environ.get("MMAPROBE_MAX_CONFIGURATIONS", "50000"))
SPACES_DIR = Path(__file__).resolve().parent / "spaces"
NEIGHBOURHOOD = SPACES_DIR / "neighbourhood.yaml"

Shape = tuple[str, str, str, int]
#: (b's format, scale_format, scale_block) of the rows beyond the shape
Operands = tuple[str | None, str | None, int | None]


@dataclass
class CandidateSpace:
    """Configurations a device might have, with where they came from.

    ``rejected`` counts combinations the configuration itself rejects, ``excluded`` those
    the space's ``exclude`` list removes.
    """

    id: str
    source: str
    configs: list[AccumulatorConfig]
    rejected: int = 0
    excluded: int = 0
    title: str = ""
    shapes: list[Shape] = field(default_factory=list)
    #: the document's fixed/vary/families/exclude (a template without formats and K):
    #: what a probe synthesised on this space declares as ``verified_on``
    spec: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.shapes:
            seen: dict[Shape, None] = {}
            for c in self.configs:
                seen.setdefault((c.in_format, c.c_format, c.out_format, c.k))
            self.shapes = list(seen)

    @property
    def shape(self) -> Shape:
        """The one (in, c, out, k) of every configuration (an error if there are several)."""
        if len(self.shapes) != 1:
            raise InputError(f"space {self.id} holds {len(self.shapes)} format/K shapes; "
                             f"restrict it to one first")
        return self.shapes[0]

    in_format = property(lambda self: self.shape[0])
    c_format = property(lambda self: self.shape[1])
    out_format = property(lambda self: self.shape[2])
    k = property(lambda self: self.shape[3])

    def restrict(self, fin: str, fc: str, fout: str, k: int) -> CandidateSpace:
        """The configurations of one shape (an error naming the shapes there are if none)."""
        want = (fin, fc, fout, k)
        configs = [c for c in self.configs
                   if (c.in_format, c.c_format, c.out_format, c.k) == want]
        if not configs:
            have = ", ".join(f"{a}/{b}->{c} k={d}" for a, b, c, d in self.shapes[:8])
            raise InputError(f"{self.source}: space {self.id} has no configuration with "
                             f"formats {fin}/{fc}->{fout} and k={k} (it has: {have})")
        return CandidateSpace(self.id, self.source, configs, title=self.title,
                              shapes=[want])

    def describe(self) -> str:
        return f"{self.id} ({len(self.configs)} configurations, {self.source})"


# -- parsing ----------------------------------------------------------------------------------

def canonical_shape(fin: Any, fc: Any, fout: Any, k: Any) -> Shape:
    """Canonical format names and K; c defaults to the output format."""
    try:
        fi = get_format(fin).name
        fo = get_format(fout).name
        fcn = get_format(fc).name if fc else fo
    except FormatError as e:
        raise InputError(str(e)) from None
    problem = field_problem("k", k)
    if problem:
        raise InputError(f"k: got {k!r}, expected {problem}")
    try:  # formats no configuration can have (an e4m3 output) are refused here, by name
        AccumulatorConfig(in_format=fi, c_format=fcn, out_format=fo, k=k)
    except ConfigError as e:
        raise InputError(f"formats {fi}/{fcn}->{fo}: {e}") from None
    return fi, fcn, fo, k


def _nfma_values(doc: Doc, path: tuple, spec: Any, k: int) -> list[Any]:
    divs = [d for d in range(1, k + 1) if k % d == 0]
    table = {"divisors": divs, "divisors_ge2": [d for d in divs if d >= 2],
             "pow2_divisors": [d for d in divs if d & (d - 1) == 0],
             "k": [k], "half": [k // 2] if k % 2 == 0 else []}
    out: list[Any] = []
    for v in [spec] if isinstance(spec, str) else spec:
        if isinstance(v, str):
            if v not in table:
                raise doc.error(path, f"unknown nfma keyword {v!r}; expected an integer or "
                                      f"one of {', '.join(NFMA_KEYWORDS)}")
            out.extend(table[v])
        else:
            out.append(v)
    return out


def _check_fields(doc: Doc, path: tuple, part: Any, lists: bool) -> dict[str, Any]:
    if part is None:
        return {}
    if not isinstance(part, dict):
        raise doc.error(path, "expected a mapping of configuration fields")
    for name, val in part.items():
        if name not in FIELD_NAMES or name in SHAPE_FIELDS:
            valid = ", ".join(f for f in FIELD_NAMES if f not in SHAPE_FIELDS)
            raise doc.error(path + (name,), f"expected a configuration field other than "
                                            f"formats and k; valid: {valid}")
        values = val if lists else [val]
        if lists:
            if name == "nfma" and isinstance(val, str):
                continue  # a keyword, checked when expanded
            if not isinstance(val, list) or not val:
                raise doc.error(path + (name,), "expected a non-empty list of values")
        for i, v in enumerate(values):
            if name == "nfma" and isinstance(v, str):
                continue
            if name == "flush":
                v = [] if v is None else ([v] if isinstance(v, str) else v)
            problem = field_problem(name, v)
            if problem:
                where = path + (name, i) if lists else path + (name,)
                raise doc.error(where, f"got {v!r}, expected {problem}")
    return part


def _formats(doc: Doc) -> tuple[str, str, str]:
    fm = doc.data["formats"]
    if not isinstance(fm, dict) or "in" not in fm or set(fm) - {"in", "c", "out"}:
        raise doc.error(("formats",), "expected a mapping {in: F, c: F, out: F}")
    names = {}
    for role in ("in", "out", "c"):
        default = names.get("out", "binary32") if role == "c" else "binary32"
        try:
            names[role] = get_format(fm.get(role, default)).name
        except FormatError as e:
            raise doc.error(("formats", role), str(e)) from None
    return names["in"], names["c"], names["out"]


def _ks(doc: Doc) -> list[int]:
    ks = doc.data["k"] if isinstance(doc.data["k"], list) else [doc.data["k"]]
    for i, x in enumerate(ks):
        problem = field_problem("k", x)
        if problem:
            raise doc.error(("k", i) if isinstance(doc.data["k"], list) else ("k",),
                            f"got {x!r}, expected {problem}")
    if not ks:
        raise doc.error(("k",), "expected a positive integer or a non-empty list of them")
    return ks


def _families(doc: Doc) -> list[tuple[tuple, dict[str, Any]]]:
    d = doc.data
    fixed = _check_fields(doc, ("fixed",), d.get("fixed"), lists=False)
    vary = _check_fields(doc, ("vary",), d.get("vary"), lists=True)
    fams = d.get("families")
    if fams is None:
        return [((), {"fixed": fixed, "vary": vary, "exclude": [], "only_out": None})]
    if not isinstance(fams, list) or not fams:
        raise doc.error(("families",), "expected a non-empty list of families")
    out = []
    for i, fam in enumerate(fams):
        path = ("families", i)
        if not isinstance(fam, dict):
            raise doc.error(path, "expected a mapping {id, fixed, vary, exclude, only_out}")
        doc.check_keys(path, fam, FAMILY_KEYS)
        ffixed = dict(fixed)
        ffixed.update(_check_fields(doc, path + ("fixed",), fam.get("fixed"), lists=False))
        fvary = dict(vary)
        fvary.update(_check_fields(doc, path + ("vary",), fam.get("vary"), lists=True))
        only = fam.get("only_out")
        if only is not None:
            only = only if isinstance(only, list) else [only]
            try:
                only = [get_format(x).name for x in only]
            except FormatError as e:
                raise doc.error(path + ("only_out",), str(e)) from None
        out.append((path, {"fixed": ffixed, "vary": fvary, "only_out": only,
                           "exclude": _excludes(doc, path + ("exclude",), fam.get("exclude"))}))
    return out


def _excludes(doc: Doc, path: tuple, excl: Any) -> list[dict[str, Any]]:
    if excl is None:
        return []
    if not isinstance(excl, list):
        raise doc.error(path, "expected a list of partial configurations")
    for i, e in enumerate(excl):
        if not isinstance(e, dict) or not set(e) <= set(FIELD_NAMES):
            raise doc.error(path + (i,), f"expected a mapping of configuration fields "
                                         f"({', '.join(FIELD_NAMES)})")
    return excl


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(AccumulatorConfig)
             if f.default is not dataclasses.MISSING}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return a == b or str(a) == str(b)


def parse_space(doc: Doc, shape: Shape | None = None,
                operands: Operands | None = None) -> CandidateSpace:
    """The configurations of one space document (a template needs ``shape``); operands
    (b's format, scale_format, scale_block) are set on every combination before it is
    checked, so families that need them (gdfs needs scale factors) are kept."""
    d = doc.data
    if not isinstance(d, dict):
        raise doc.error((), "expected a mapping (a candidate space)")
    doc.check_keys((), d, SPACE_KEYS)
    if "id" not in d or not isinstance(d["id"], str) or not d["id"].strip():
        raise doc.error(("id",), "expected a required field 'id' (a non-empty string)")
    template = d.get("template", False)
    if not isinstance(template, bool):
        raise doc.error(("template",), "expected true or false")
    if template:
        if "formats" in d or "k" in d:
            raise doc.error(("template",), "a template space has no formats or k: they come "
                                           "from the suite it is instantiated for")
        if shape is None:
            raise doc.error(("template",), "a template space (formats and k come from the "
                                           "suite); give it to suite/infer/identify --space")
        fin, fc, fout, k0 = shape
        ks = [k0]
    else:
        for key in ("formats", "k"):
            if key not in d:
                raise doc.error((), f"expected required field {key!r}")
        fin, fc, fout = _formats(doc)
        ks = _ks(doc)
    families = _families(doc)
    top_excl = _excludes(doc, ("exclude",), d.get("exclude"))
    total = 0
    for _, fam in families:
        n = len(ks)
        for f, vals in fam["vary"].items():
            n *= len(vals) if not (f == "nfma" and isinstance(vals, str)) else max(ks)
        total += n
    if total > MAX_CONFIGURATIONS:
        raise doc.error(("vary",), f"expected at most {MAX_CONFIGURATIONS} combinations, got "
                                   f"{total} (raise the limit with "
                                   f"MMAPROBE_MAX_CONFIGURATIONS)")
    configs: list[AccumulatorConfig] = []
    seen: set[AccumulatorConfig] = set()
    rejected = excluded = 0
    for path, fam in families:
        if fam["only_out"] is not None and fout not in fam["only_out"]:
            continue
        excl = top_excl + fam["exclude"]
        for k in ks:
            vary = dict(fam["vary"])
            if "nfma" in vary:
                vary["nfma"] = _nfma_values(doc, path + ("vary", "nfma"), vary["nfma"], k)
            names = list(vary)
            for combo in itertools.product(*(vary[n] for n in names)):
                values: dict[str, Any] = dict(fam["fixed"])
                values.update(zip(names, combo))
                values.update({"in_format": fin, "c_format": fc, "out_format": fout, "k": k})
                if operands is not None:
                    values.update(zip(("b_format", "scale_format", "scale_block"), operands))
                # an exclusion matches a field's value whether the space sets it or
                # leaves it at its default
                full = {**_DEFAULTS, **values}
                if any(all(_same(full.get(f), v) for f, v in e.items()) for e in excl):
                    excluded += 1
                    continue
                try:
                    cfg = AccumulatorConfig.from_dict(values)
                except ConfigError:
                    rejected += 1
                    continue
                if cfg not in seen:
                    seen.add(cfg)
                    configs.append(cfg)
    if not configs:
        raise doc.error((), f"space {d['id']}: no valid configuration ({rejected} "
                            f"combinations rejected, {excluded} excluded)")
    spec = {key: d[key] for key in ("fixed", "vary", "families", "exclude") if key in d}
    return CandidateSpace(d["id"], f"{doc.file}:{doc.line(())}", configs, rejected, excluded,
                          str(d.get("title", "")), spec=spec)


def parse_spaces(docs: list[Doc], shape: Shape | None = None) -> list[CandidateSpace]:
    return [parse_space(doc, shape) for doc in docs]


def load_spaces(paths: list[Path | str], shape: Shape | None = None,
                templates: bool = True, operands: Operands | None = None
                ) -> list[CandidateSpace]:
    """The spaces of the given files; templates are instantiated for ``shape`` (or, with
    ``templates=False``, skipped); operands as in :func:`parse_space`."""
    out = []
    seen: dict[str, str] = {}
    for p in paths:
        docs = load_docs(p, what="candidate space")
        if not docs:
            raise InputError(f"{p}: no candidate space in the file (it is empty or holds "
                             f"only comments)")
        for doc in docs:
            if not templates and isinstance(doc.data, dict) and doc.data.get("template"):
                continue
            sp = parse_space(doc, shape, operands)
            if sp.id in seen:
                raise doc.error(("id",), f"a unique space id; {sp.id!r} is also the id of "
                                         f"the space at {seen[sp.id]}")
            seen[sp.id] = sp.source
            out.append(sp)
    return out


def space_files() -> list[Path]:
    """The shipped candidate spaces."""
    return sorted(SPACES_DIR.glob("*.yaml"))


def default_spaces() -> list[CandidateSpace]:
    """The shipped spaces with formats and K of their own (what ``mmaprobe check`` proves
    every probe robust on)."""
    return load_spaces(space_files(), templates=False)


def neighbourhood(fin: str, fc: str, fout: str, k: int,
                  operands: Operands | None = None) -> CandidateSpace:
    """The default candidate space around formats (fin, fc, fout) and K: the template
    ``neighbourhood`` instantiated for them, plus every preset of that shape (with
    operands: b's format and block scaling set on every configuration)."""
    shape = canonical_shape(fin, fc, fout, k)
    space, = load_spaces([NEIGHBOURHOOD], shape, operands=operands)
    seen = set(space.configs)
    for p in presets_with(*shape, operands=operands):
        if p.config not in seen:
            seen.add(p.config)
            space.configs.append(p.config)
    space.id = f"neighbourhood-{shape[0]}-{shape[2]}-k{shape[3]}"
    space.source = f"default neighbourhood ({NEIGHBOURHOOD.name})"
    return space


def space_for(path: str | Path | None, fin: str, fc: str, fout: str, k: int,
              operands: Operands | None = None) -> CandidateSpace:
    """The candidates of one shape: the configurations of a space file (templates
    instantiated) with these formats and K, or the neighbourhood; operands (b's format,
    scale_format, scale_block) are set on every configuration."""
    shape = canonical_shape(fin, fc, fout, k)
    if not path:
        return neighbourhood(*shape, operands=operands)
    spaces = load_spaces([path], shape, operands=operands)
    configs: list[AccumulatorConfig] = []
    seen: set[AccumulatorConfig] = set()
    for sp in spaces:
        for cfg in sp.configs:
            if (cfg.in_format, cfg.c_format, cfg.out_format, cfg.k) == shape and cfg not in seen:
                seen.add(cfg)
                configs.append(cfg)
    ids = "+".join(sp.id for sp in spaces)
    if not configs:
        raise InputError(f"{path}: no configuration of space(s) {ids} has formats "
                         f"{shape[0]}/{shape[1]}->{shape[2]} and k={shape[3]}")
    return CandidateSpace(ids, str(path), configs, shapes=[shape])
