"""Probes: schema validation, instantiation per format pair, and decisions.

See probes/README.md for the language.  A :class:`Probe` is validated when loaded (errors
name file, line, field and what was expected); :meth:`Probe.instantiate` turns it into
concrete bit patterns for one format triple, K and set of decided features; :func:`decide`
maps the observed outputs to an :class:`Outcome`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from mmaprobe.models.errors import MmaprobeError
from mmaprobe.models.formats import Format, FormatError, get_format, round_fraction

from . import expr as ex
from .features import FEATURES, INTEGER_FEATURES
from .yamlsrc import Doc, SchemaError, load_docs

PROBE_KEYS = {"id", "title", "feature", "source", "suite", "formats", "k", "applies_if",
              "applies_when", "requires", "when", "let", "vectors", "facts", "decide", "notes",
              "may_be_inconclusive"}
REQUIRED_KEYS = ("id", "title", "feature", "source", "vectors", "decide")
VECTOR_KEYS = {"name", "a", "b", "c", "sweep"}
RULE_KEYS = {"if", "first", "then", "not_found", "otherwise"}
FORMAT_ROLES = ("in", "c", "out")
SPECIAL_VALUES = ("+0", "-0", "inf", "-inf", "nan")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
MAX_SWEEP = 4096


class InstantiationError(MmaprobeError, ValueError):
    """A probe value that a format cannot represent, or a bad position (names the term)."""


@dataclass(frozen=True)
class Outcome:
    """A decision: 'inconclusive', a value, or a constraint (one_of / at_least / at_most)."""

    kind: str  # inconclusive, equals, one_of, at_least, at_most
    value: Any = None

    def holds(self, truth: Any) -> bool | None:
        """True/False whether the true value satisfies it; None for inconclusive."""
        if self.kind == "inconclusive":
            return None
        if self.kind == "equals":
            return _same(truth, self.value)
        if self.kind == "one_of":
            return any(_same(truth, v) for v in self.value)
        if truth is None:
            # None is 'unbounded' (carry_bits): above every bound, below none
            return self.kind == "at_least"
        if self.kind == "at_least":
            return truth >= self.value
        return truth <= self.value

    def describe(self) -> str:
        if self.kind == "inconclusive":
            return "inconclusive"
        if self.kind == "equals":
            return str(self.value)
        if self.kind == "one_of":
            return "one of " + ", ".join(str(v) for v in self.value)
        return f"{'>=' if self.kind == 'at_least' else '<='} {self.value}"


def _same(truth: Any, value: Any) -> bool:
    if isinstance(truth, bool) or isinstance(value, bool):
        return truth is value or str(truth).lower() == str(value).lower()
    if isinstance(truth, tuple):
        return list(truth) == (value if isinstance(value, list) else [value])
    return truth == value or str(truth) == str(value)


INCONCLUSIVE = Outcome("inconclusive")


@dataclass
class VectorSpec:
    name: str
    path: tuple
    a: Any
    b: Any
    c: Any
    sweep: dict[str, Any] | None


@dataclass
class Rule:
    path: tuple
    cond: Any = None  # parsed expression or None
    first: dict[str, Any] | None = None
    then: Any = None
    not_found: Any = None
    otherwise: bool = False


@dataclass
class Instance:
    """Concrete vectors of one probe for one format triple / K / decided features."""

    probe: Probe
    key: tuple
    a: list[list[int]]
    b: list[list[int]]
    c: list[int]
    rows: dict[str, int] = field(default_factory=dict)  # plain vector -> row
    sweeps: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # (i, row)
    env: dict[str, Any] = field(default_factory=dict)


@dataclass
class Probe:
    doc: Doc
    id: str
    title: str
    feature: str
    source: str
    suite: str
    formats: dict[str, tuple[str, ...] | None]
    ks: tuple[int, ...] | None
    applies_if: Any
    requires: tuple[str, ...]
    when: dict[str, tuple[Any, ...]]
    let: list[tuple[str, Any]]
    vectors: list[VectorSpec]
    facts: list[tuple[str, Any]]
    rules: list[Rule]
    may_be_inconclusive: bool
    notes: str = ""
    applies_when_expr: Any = None

    @property
    def file(self) -> str:
        return self.doc.file

    # -- applicability ---------------------------------------------------------------
    def applies_to_formats(self, fin: str, fc: str, fout: str, k: int) -> bool:
        for role, name in zip(FORMAT_ROLES, (fin, fc, fout)):
            allowed = self.formats.get(role)
            if allowed is not None and name not in allowed:
                return False
        if self.ks is not None and k not in self.ks:
            return False
        if self.applies_if is not None:
            env = base_env(fin, fc, fout, k)
            try:
                return bool(ex._truth(ex.evaluate(self.applies_if, env)))
            except ex.ExprError as e:
                raise self.doc.error(("applies_if",), str(e)) from None
        return True

    def applies_decided(self, fin: str, fc: str, fout: str, k: int,
                        decided: dict[str, int]) -> bool:
        """``applies_when``: a boolean over format constants and decided integer features."""
        if self.applies_when_expr is None:
            return True
        env = base_env(fin, fc, fout, k)
        env.update({n: Fraction(v) for n, v in decided.items()})
        try:
            return bool(ex._truth(ex.evaluate(self.applies_when_expr, env)))
        except ex.ExprError as e:
            raise self.doc.error(("applies_when",), str(e)) from None

    def applies_when(self, truth: dict[str, Any]) -> bool:
        for name, allowed in self.when.items():
            if not any(_same(truth[name], v) for v in allowed):
                return False
        return True

    # -- instantiation --------------------------------------------------------------
    def instantiate(self, fin: str, fc: str, fout: str, k: int,
                    decided: dict[str, int] | None = None) -> Instance:
        """Concrete vectors; ``decided`` binds the integer names of ``requires``."""
        decided = dict(decided or {})
        env: dict[str, Any] = base_env(fin, fc, fout, k)
        env.update({n: Fraction(v) for n, v in decided.items()})
        fmt_in, fmt_c = get_format(fin), get_format(fc)
        for name, node in self.let:
            env[name] = self._eval(node, env, ("let", name), fin, fout)
        key = (fin, fc, fout, k, tuple(sorted(decided.items())))
        inst = Instance(self, key, [], [], [], env=env)
        for vec in self.vectors:
            if vec.sweep is None:
                inst.rows[vec.name] = len(inst.c)
                self._row(inst, vec, env, fmt_in, fmt_c, k, fout)
                continue
            var = vec.sweep["var"]
            lo = ex.to_int(self._eval(vec.sweep["from"], env, vec.path + ("sweep", "from"),
                                      fin, fout), "sweep.from")
            hi = ex.to_int(self._eval(vec.sweep["to"], env, vec.path + ("sweep", "to"),
                                      fin, fout), "sweep.to")
            step = ex.to_int(self._eval(vec.sweep["step"], env, vec.path + ("sweep", "step"),
                                        fin, fout), "sweep.step")
            if step <= 0 or (hi - lo) // step + 1 > MAX_SWEEP:
                raise InstantiationError(f"probe {self.id}: sweep {vec.name} needs a positive "
                                         f"step and at most {MAX_SWEEP} values")
            inst.sweeps[vec.name] = []
            for i in range(lo, hi + 1, step):
                senv = dict(env)
                senv[var] = Fraction(i)
                inst.sweeps[vec.name].append((i, len(inst.c)))
                self._row(inst, vec, senv, fmt_in, fmt_c, k, fout, f"{var}={i}")
        return inst

    def _eval(self, node: Any, env: dict[str, Any], path: tuple, fin: str, fout: str) -> Any:
        try:
            return ex.evaluate(node, env)
        except ex.ExprError as e:
            raise InstantiationError(f"probe {self.id} ({self.file}:{self.doc.line(path)}), "
                                     f"formats {fin}->{fout}, {'.'.join(map(str, path))}: "
                                     f"{e}") from None

    def _row(self, inst: Instance, vec: VectorSpec, env: dict[str, Any], fmt_in: Format,
             fmt_c: Format, k: int, fout: str, tag: str = "") -> None:
        row = {}
        for side in ("a", "b"):
            bits = [fmt_in.zero_bits(0)] * k
            spec = getattr(vec, side)
            items = _entries(spec)
            for pos_src, val_src in items:
                where = vec.path + (side, pos_src)
                positions = self._positions(pos_src, env, where, fmt_in.name, fout, k)
                for pos in positions:
                    term = f"vector {vec.name}{f' ({tag})' if tag else ''} {side}[{pos}]"
                    bits[pos] = self._value(val_src, env, fmt_in, term, where, fout)
            row[side] = bits
        c = self._value(vec.c, env, fmt_c, f"vector {vec.name}{f' ({tag})' if tag else ''} c",
                        vec.path + ("c",), fout) if vec.c is not None else fmt_c.zero_bits(0)
        inst.a.append(row["a"])
        inst.b.append(row["b"])
        inst.c.append(c)

    def _positions(self, src: Any, env: dict[str, Any], where: tuple, fin: str, fout: str,
                   k: int) -> list[int]:
        if isinstance(src, int) and not isinstance(src, bool):
            lo = hi = src
        else:
            text = str(src)
            if ".." in text:
                left, right = text.split("..", 1)
                lo = ex.to_int(self._eval(left, env, where, fin, fout), "position")
                hi = ex.to_int(self._eval(right, env, where, fin, fout), "position")
            else:
                lo = hi = ex.to_int(self._eval(text, env, where, fin, fout), "position")
        if not (0 <= lo <= hi < k):
            raise InstantiationError(f"probe {self.id} ({self.file}:{self.doc.line(where)}), "
                                     f"formats {fin}->{fout}: position {src!r} gives "
                                     f"{lo}..{hi}, outside 0..{k - 1} for k={k}")
        return list(range(lo, hi + 1))

    def _value(self, src: Any, env: dict[str, Any], fmt: Format, term: str, where: tuple,
               fout: str) -> int:
        if isinstance(src, str):
            s = src.strip()
            if s in SPECIAL_VALUES:
                try:
                    if s in ("+0", "-0"):
                        return fmt.zero_bits(int(s == "-0"))
                    if s == "nan":
                        return fmt.nan_bits()
                    return fmt.inf_bits(int(s == "-inf"))
                except FormatError as e:
                    raise InstantiationError(f"probe {self.id}, format {fmt.name}, {term}: "
                                             f"{e}") from None
            if re.fullmatch(r"0[xX][0-9a-fA-F_]+", s):
                bits = int(s[2:].replace("_", ""), 16)
                width = fmt.width or fmt.bits
                if bits >> width:
                    raise InstantiationError(f"probe {self.id}, format {fmt.name}, {term}: "
                                             f"bit pattern {s} wider than {width} bits")
                return bits
        x = self._eval(str(src) if not isinstance(src, str) else src, env, where, fmt.name,
                       fout)
        if not isinstance(x, Fraction):
            raise InstantiationError(f"probe {self.id}, format {fmt.name}, {term}: expected a "
                                     f"number, got {x!r}")
        bits = exact_bits(fmt, x)
        if bits is None:
            raise InstantiationError(f"probe {self.id} ({self.file}:{self.doc.line(where)}), "
                                     f"format {fmt.name}, {term}: {src!r} = {_show(x)} is not "
                                     f"representable in {fmt.name}")
        return bits


def _show(x: Fraction) -> str:
    if x.denominator == 1 or x.numerator.bit_length() > 64:
        return str(x) if x.numerator.bit_length() < 64 else f"~{float(x):.6g}"
    return f"{x} (~{float(x):.6g})"


def exact_bits(fmt: Format, x: Fraction) -> int | None:
    """The pattern of x if fmt holds it exactly (no rounding, no overflow), else None."""
    if x == 0:
        return fmt.zero_bits(0)
    sign, sig, exp = round_fraction(x, fmt.p, fmt.emin, "rz")
    v = Fraction(sig) * (Fraction(2) ** (exp - fmt.t))
    if (-v if sign else v) != x:
        return None
    try:
        return fmt.encode(sign, sig, exp)
    except FormatError:
        return None


def _entries(spec: Any) -> list[tuple[Any, Any]]:
    if spec is None:
        return []
    if isinstance(spec, dict):
        return list(spec.items())
    return [(i, v) for i, v in enumerate(spec)]


def base_env(fin: str, fc: str, fout: str, k: int) -> dict[str, Any]:
    env: dict[str, Any] = {"k": Fraction(k)}
    for prefix, name in (("in", fin), ("acc", fc), ("out", fout)):
        for cname, v in get_format(name).constants().items():
            env[f"{prefix}.{cname}"] = Fraction(v)
    return env


# -- decisions -----------------------------------------------------------------------

def observe(fmt: Format, bits: int) -> ex.Observed:
    cls, sign, _, _ = fmt.decode(int(bits))
    value = fmt.to_fraction(int(bits)) if cls in ("zero", "finite") else None
    return ex.Observed(int(bits), cls, sign, value)


def decide(inst: Instance, outputs: list[int], fout: Format) -> Outcome:
    """Apply the probe's facts and rules to one instance's observed outputs."""
    probe = inst.probe
    env: dict[str, Any] = dict(inst.env)
    for name, row in inst.rows.items():
        env[name] = observe(fout, outputs[row])
    try:
        for name, node in probe.facts:
            env[name] = ex.evaluate(node, env)
        for rule in probe.rules:
            if rule.otherwise:
                return _outcome(probe, rule.then, env, rule.path + ("otherwise",))
            if rule.cond is not None and not ex._truth(ex.evaluate(rule.cond, env)):
                continue
            if rule.first is None:
                return _outcome(probe, rule.then, env, rule.path + ("then",))
            found = None
            others = {n: dict(items) for n, items in inst.sweeps.items()
                      if n != rule.first["sweep"]}
            for i, row in inst.sweeps[rule.first["sweep"]]:
                senv = dict(env)
                senv["i"] = Fraction(i)
                senv["d"] = observe(fout, outputs[row])
                for n, rows in others.items():
                    # another sweep's output at the same index (pairs of sweeps)
                    if i in rows:
                        senv[n] = observe(fout, outputs[rows[i]])
                if ex._truth(ex.evaluate(rule.first["where"], senv)):
                    found = senv
                    break
            if found is not None:
                return _outcome(probe, rule.then, found, rule.path + ("then",))
            if rule.not_found is not None:
                return _outcome(probe, rule.not_found, env, rule.path + ("not_found",))
    except ex.ExprError as e:
        raise InstantiationError(f"probe {probe.id}: decision: {e}") from None
    return INCONCLUSIVE


def _outcome(probe: Probe, spec: Any, env: dict[str, Any], path: tuple) -> Outcome:
    if spec == "inconclusive":
        return INCONCLUSIVE
    if isinstance(spec, dict):
        (kind, val), = spec.items()
        if kind == "one_of":
            return Outcome("one_of", tuple(_scalar(probe, v, env) for v in val))
        return Outcome(kind, _scalar(probe, val, env))
    return Outcome("equals", _scalar(probe, spec, env))


def _scalar(probe: Probe, v: Any, env: dict[str, Any]) -> Any:
    if probe.feature in INTEGER_FEATURES and isinstance(v, str) and v not in ("none",):
        return ex.to_int(ex.evaluate(v, env), f"outcome of probe {probe.id}")
    if v == "none" and probe.feature in INTEGER_FEATURES:
        return None
    return v


# -- schema ------------------------------------------------------------------------------

def _need(doc: Doc, cond: bool, path: tuple, expected: str) -> None:
    if not cond:
        raise doc.error(path, f"expected {expected}")


def _parse_expr(doc: Doc, src: Any, path: tuple) -> Any:
    if isinstance(src, bool) or not isinstance(src, (str, int, float)):
        raise doc.error(path, f"expected an expression (string or number), got {src!r}")
    if isinstance(src, float):
        raise doc.error(path, "expected an exact expression; write decimals as strings, "
                              "e.g. '0.75' or '3/4'")
    try:
        return ex.parse(str(src))
    except ex.ExprError as e:
        raise doc.error(path, str(e)) from None


def _check_value(doc: Doc, src: Any, path: tuple) -> None:
    if isinstance(src, str) and (src.strip() in SPECIAL_VALUES
                                 or re.fullmatch(r"0[xX][0-9a-fA-F_]+", src.strip())):
        return
    _parse_expr(doc, src, path)


def _check_outcome(doc: Doc, feature: str, spec: Any, path: tuple) -> None:
    if spec == "inconclusive":
        return
    if isinstance(spec, dict):
        _need(doc, len(spec) == 1 and next(iter(spec)) in ("one_of", "at_least", "at_most"),
              path, "an outcome: a value, 'inconclusive', or one of {one_of: [...]}, "
                    "{at_least: X}, {at_most: X}")
        (kind, val), = spec.items()
        if kind == "one_of":
            _need(doc, isinstance(val, list) and len(val) >= 1, path + (kind,),
                  "a non-empty list of values")
            for i, v in enumerate(val):
                _check_scalar(doc, feature, v, path + (kind, i))
        else:
            _need(doc, feature in INTEGER_FEATURES, path + (kind,),
                  f"an equality outcome: {kind} needs an integer feature, not {feature}")
            _check_scalar(doc, feature, val, path + (kind,))
        return
    _need(doc, not isinstance(spec, list), path, "a single outcome, not a list")
    _check_scalar(doc, feature, spec, path)


def _check_scalar(doc: Doc, feature: str, v: Any, path: tuple) -> None:
    if feature in INTEGER_FEATURES:
        if v == "none":
            return
        _parse_expr(doc, v, path)
    else:
        _need(doc, isinstance(v, (str, bool, int)), path, f"a value of feature {feature}")


def parse_probe(doc: Doc) -> Probe:
    d = doc.data
    if not isinstance(d, dict):
        raise doc.error((), "expected a mapping (a probe document)")
    unknown = sorted(str(x) for x in set(d) - PROBE_KEYS)
    if unknown:
        raise doc.error((unknown[0],), f"unknown field; valid fields: "
                                       f"{', '.join(sorted(PROBE_KEYS))}")
    for key in REQUIRED_KEYS:
        _need(doc, key in d, (), f"required field {key!r}")
    _need(doc, isinstance(d["id"], str) and bool(ID_RE.match(d["id"])), ("id",),
          "an identifier of lower-case letters, digits, '_', '.', '-'")
    for key in ("title", "source"):
        _need(doc, isinstance(d[key], str) and d[key].strip() != "", (key,),
              "a non-empty string")
    feature = d["feature"]
    _need(doc, feature in FEATURES, ("feature",), f"a feature: one of {', '.join(FEATURES)}")
    formats: dict[str, tuple[str, ...] | None] = {r: None for r in FORMAT_ROLES}
    if "formats" in d:
        _need(doc, isinstance(d["formats"], dict), ("formats",),
              "a mapping with keys in, c, out")
        for role, names in d["formats"].items():
            _need(doc, role in FORMAT_ROLES, ("formats", role), "one of in, c, out")
            if isinstance(names, str):
                names = [names]
            _need(doc, isinstance(names, list) and names != [], ("formats", role),
                  "a format name or a list of format names")
            canon = []
            for i, n in enumerate(names):
                try:
                    canon.append(get_format(n).name)
                except FormatError as e:
                    raise doc.error(("formats", role, i), str(e)) from None
            formats[role] = tuple(canon)
    ks = None
    if "k" in d:
        kv = d["k"] if isinstance(d["k"], list) else [d["k"]]
        _need(doc, all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 1024
                       for x in kv) and kv != [], ("k",),
              "a positive integer or a list of them")
        ks = tuple(kv)
    applies_if = _parse_expr(doc, d["applies_if"], ("applies_if",)) \
        if "applies_if" in d else None
    applies_when = _parse_expr(doc, d["applies_when"], ("applies_when",)) \
        if "applies_when" in d else None
    requires = d.get("requires", [])
    _need(doc, isinstance(requires, list), ("requires",), "a list of feature names")
    for i, r in enumerate(requires):
        _need(doc, r in FEATURES, ("requires", i), f"a feature: one of {', '.join(FEATURES)}")
    when: dict[str, tuple[Any, ...]] = {}
    if "when" in d:
        _need(doc, isinstance(d["when"], dict), ("when",),
              "a mapping feature -> list of values")
        for name, vals in d["when"].items():
            _need(doc, name in FEATURES, ("when", name), "a feature name")
            _need(doc, name in requires or name == "algorithm", ("when", name),
                  "a feature listed in requires (or 'algorithm')")
            when[name] = tuple(vals if isinstance(vals, list) else [vals])
    lets: list[tuple[str, Any]] = []
    if "let" in d:
        _need(doc, isinstance(d["let"], dict), ("let",), "a mapping name -> expression")
        for name, src in d["let"].items():
            _need(doc, isinstance(name, str) and bool(NAME_RE.match(name)), ("let", name),
                  "a lower-case name")
            lets.append((name, _parse_expr(doc, src, ("let", name))))
    vectors = _parse_vectors(doc)
    facts: list[tuple[str, Any]] = []
    if "facts" in d:
        _need(doc, isinstance(d["facts"], dict), ("facts",), "a mapping name -> expression")
        for name, src in d["facts"].items():
            _need(doc, isinstance(name, str) and bool(NAME_RE.match(name)), ("facts", name),
                  "a lower-case name")
            facts.append((name, _parse_expr(doc, src, ("facts", name))))
    rules = _parse_rules(doc, feature, {v.name for v in vectors if v.sweep is not None})
    inconc = d.get("may_be_inconclusive", False)
    _need(doc, isinstance(inconc, bool), ("may_be_inconclusive",), "true or false")
    probe = Probe(doc, d["id"], d["title"].strip(), feature, d["source"].strip(),
                  str(d.get("suite", "library")), formats, ks, applies_if, tuple(requires),
                  when, lets, vectors, facts, rules, inconc, str(d.get("notes", "")),
                  applies_when)
    _check_names(probe)
    return probe


def _parse_vectors(doc: Doc) -> list[VectorSpec]:
    d = doc.data
    _need(doc, isinstance(d["vectors"], list) and d["vectors"] != [], ("vectors",),
          "a non-empty list of vectors")
    out: list[VectorSpec] = []
    names: set[str] = set()
    for i, v in enumerate(d["vectors"]):
        path = ("vectors", i)
        _need(doc, isinstance(v, dict), path, "a mapping with name, a, b, c (and sweep)")
        unknown = sorted(str(x) for x in set(v) - VECTOR_KEYS)
        if unknown:
            raise doc.error(path + (unknown[0],), f"unknown field; valid: "
                                                  f"{', '.join(sorted(VECTOR_KEYS))}")
        name = v.get("name", f"v{i}")
        _need(doc, isinstance(name, str) and bool(NAME_RE.match(name)) and name not in names,
              path + ("name",), "a unique lower-case name")
        names.add(name)
        for side in ("a", "b"):
            spec = v.get(side)
            _need(doc, spec is None or isinstance(spec, (dict, list)), path + (side,),
                  "a mapping position -> value or a list of values")
            for pos, val in _entries(spec):
                if isinstance(spec, dict) and not (isinstance(pos, int)
                                                   and not isinstance(pos, bool)):
                    for part in str(pos).split("..", 1):
                        _parse_expr(doc, part, path + (side, pos))
                _check_value(doc, val, path + (side, pos))
        if v.get("c") is not None:
            _check_value(doc, v["c"], path + ("c",))
        sweep = v.get("sweep")
        if sweep is not None:
            _need(doc, isinstance(sweep, dict) and {"var", "from", "to"} <= set(sweep)
                  and set(sweep) <= {"var", "from", "to", "step"}, path + ("sweep",),
                  "a mapping {var, from, to[, step]}")
            _need(doc, isinstance(sweep["var"], str) and bool(NAME_RE.match(sweep["var"])),
                  path + ("sweep", "var"), "a lower-case variable name")
            sweep = {"var": sweep["var"],
                     "from": _parse_expr(doc, sweep["from"], path + ("sweep", "from")),
                     "to": _parse_expr(doc, sweep["to"], path + ("sweep", "to")),
                     "step": _parse_expr(doc, sweep.get("step", 1), path + ("sweep", "step"))}
        out.append(VectorSpec(name, path, v.get("a"), v.get("b"), v.get("c"), sweep))
    return out


def _parse_rules(doc: Doc, feature: str, sweeps: set[str]) -> list[Rule]:
    d = doc.data
    _need(doc, isinstance(d["decide"], list) and d["decide"] != [], ("decide",),
          "a non-empty list of rules")
    rules: list[Rule] = []
    for i, r in enumerate(d["decide"]):
        path = ("decide", i)
        _need(doc, isinstance(r, dict), path, "a rule mapping (if/first/then/not_found or "
                                              "otherwise)")
        unknown = sorted(str(x) for x in set(r) - RULE_KEYS)
        if unknown:
            raise doc.error(path + (unknown[0],), f"unknown field; valid: "
                                                  f"{', '.join(sorted(RULE_KEYS))}")
        if "otherwise" in r:
            _need(doc, set(r) == {"otherwise"}, path, "'otherwise' alone in its rule")
            _need(doc, i == len(d["decide"]) - 1, path, "'otherwise' as the last rule")
            _check_outcome(doc, feature, r["otherwise"], path + ("otherwise",))
            rules.append(Rule(path, then=r["otherwise"], otherwise=True))
            continue
        _need(doc, "then" in r, path, "a 'then' outcome")
        _check_outcome(doc, feature, r["then"], path + ("then",))
        cond = _parse_expr(doc, r["if"], path + ("if",)) if "if" in r else None
        first = None
        if "first" in r:
            f = r["first"]
            _need(doc, isinstance(f, dict) and set(f) == {"sweep", "where"}, path + ("first",),
                  "a mapping {sweep: NAME, where: EXPR}")
            _need(doc, f["sweep"] in sweeps, path + ("first", "sweep"),
                  f"the name of a swept vector ({', '.join(sorted(sweeps)) or 'none'})")
            first = {"sweep": f["sweep"], "where": _parse_expr(doc, f["where"],
                                                               path + ("first", "where"))}
        if "not_found" in r:
            _need(doc, first is not None, path + ("not_found",), "'not_found' only with "
                                                                 "'first'")
            _check_outcome(doc, feature, r["not_found"], path + ("not_found",))
        rules.append(Rule(path, cond, first, r["then"], r.get("not_found")))
    return rules


def _check_names(probe: Probe) -> None:
    """Static check that every expression only uses names it may use."""
    doc = probe.doc
    base = set(base_env("binary16", "binary32", "binary32", 1))
    decided = set()
    for r in probe.requires:
        if r in INTEGER_FEATURES:
            decided.add(r)
    if "neab" in probe.requires:
        decided.add("F")
    if "out_frac_bits" in probe.requires or "out_t" in probe.requires:
        decided.add("out_t")
    known = base | decided | {"true", "false"}
    if probe.applies_if is not None:
        _names_ok(doc, probe.applies_if, base | {"true", "false"}, ("applies_if",))
    if probe.applies_when_expr is not None:
        _names_ok(doc, probe.applies_when_expr, known, ("applies_when",))
    for name, node in probe.let:
        _names_ok(doc, node, known, ("let", name))
        known = known | {name}
    for v in probe.vectors:
        vk = known | ({v.sweep["var"]} if v.sweep else set())
        if v.sweep:
            for part in ("from", "to", "step"):
                _names_ok(doc, v.sweep[part], known, v.path + ("sweep", part))
        for side in ("a", "b"):
            for pos, val in _entries(getattr(v, side)):
                if isinstance(pos, str):
                    for part in pos.split("..", 1):
                        _names_ok(doc, ex.parse(part), vk, v.path + (side, pos))
                if not _is_literal(val):
                    _names_ok(doc, ex.parse(str(val)), vk, v.path + (side, pos))
        if v.c is not None and not _is_literal(v.c):
            _names_ok(doc, ex.parse(str(v.c)), vk, v.path + ("c",))
    obs = known | {v.name for v in probe.vectors if v.sweep is None}
    for name, node in probe.facts:
        _names_ok(doc, node, obs, ("facts", name))
        obs = obs | {name}
    for rule in probe.rules:
        if rule.cond is not None:
            _names_ok(doc, rule.cond, obs, rule.path + ("if",))
        if rule.first is not None:
            sweeps = {v.name for v in probe.vectors if v.sweep is not None}
            _names_ok(doc, rule.first["where"], obs | {"i", "d"} | sweeps,
                      rule.path + ("first",))


def _is_literal(val: Any) -> bool:
    return isinstance(val, str) and (val.strip() in SPECIAL_VALUES
                                     or bool(re.fullmatch(r"0[xX][0-9a-fA-F_]+", val.strip())))


def _names_ok(doc: Doc, node: Any, known: set[str], path: tuple) -> None:
    bad = sorted(ex.names_in(node) - known)
    if bad:
        raise doc.error(path, f"unknown name {bad[0]!r}; valid names here: "
                              f"{', '.join(sorted(known))}")


# -- loading ------------------------------------------------------------------------------

PACKAGE_DIR = Path(__file__).resolve().parent


def load_probes(paths: list[Path | str]) -> list[Probe]:
    """Probes of the given files, with ids unique across them."""
    probes: list[Probe] = []
    seen: dict[str, str] = {}
    for p in paths:
        for doc in load_docs(p):
            probe = parse_probe(doc)
            if probe.id in seen:
                raise doc.error(("id",), f"unique id; {probe.id!r} is also defined in "
                                         f"{seen[probe.id]}")
            seen[probe.id] = f"{doc.file}:{doc.line(('id',))}"
            probes.append(probe)
    return probes


def library_files(folder: str = "library") -> list[Path]:
    return sorted((PACKAGE_DIR / folder).glob("*.yaml"))


def load_text(text: str, name: str = "<text>") -> list[Probe]:
    return [parse_probe(d) for d in load_docs(name, text)]


__all__ = ["Instance", "InstantiationError", "Outcome", "Probe", "SchemaError", "decide",
           "exact_bits", "library_files", "load_probes", "load_text", "observe",
           "parse_probe"]
