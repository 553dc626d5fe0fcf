"""The probe schema: a YAML document -> a validated :class:`~mmaprobe.probes.probe.Probe`.

Every error names the file, the line, the field and what was expected (probes/README.md).
"""

from __future__ import annotations

import re
from typing import Any

from mmaprobe.models.features import FEATURES, INTEGER_FEATURES
from mmaprobe.models.formats import FormatError, get_format
from mmaprobe.models.yamldoc import Doc

from . import expr as ex
from .probe import (
    FORMAT_ROLES,
    HEX_RE,
    SPECIAL_VALUES,
    Probe,
    Rule,
    VectorSpec,
    _entries,
    base_env,
    verified_configs,
)

PROBE_KEYS = {"id", "title", "feature", "source", "suite", "formats", "k", "applies_if",
              "applies_when", "requires", "when", "let", "vectors", "facts", "decide", "notes",
              "may_be_inconclusive", "verified_on"}
VERIFIED_KEYS = {"fixed", "vary", "families", "exclude"}
REQUIRED_KEYS = ("id", "title", "feature", "source", "vectors", "decide")
VECTOR_KEYS = {"name", "a", "b", "c", "sweep", "sa", "sb"}
RULE_KEYS = {"if", "first", "then", "not_found", "otherwise"}
ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")



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


def _constant(node: Any) -> Any:
    """The value of an expression without names, or None."""
    try:
        return ex.evaluate(node, {})
    except ex.ExprError:
        return None


def _check_value(doc: Doc, src: Any, path: tuple) -> None:
    if isinstance(src, str) and (src.strip() in SPECIAL_VALUES
                                 or HEX_RE.fullmatch(src.strip())):
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
    doc.check_keys((), d, PROBE_KEYS, "valid fields")
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
        _need(doc, r != feature, ("requires", i),
              f"a feature other than the one the probe decides ({feature})")
    # names an expression sees: k, the first-rule's i and d, and the required features
    reserved = {"k", "i", "d", *requires}
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
            _need(doc, name not in reserved, ("let", name),
                  f"a name other than {', '.join(sorted(reserved))} (let {name} would shadow "
                  f"one)")
            lets.append((name, _parse_expr(doc, src, ("let", name))))
    vectors = _parse_vectors(doc)
    for v in vectors:
        for side in ("sa", "sb"):
            _need(doc, getattr(v, side) is None or "scale_block" in requires, v.path + (side,),
                  "no scale factors: a probe writes them only when it lists scale_block "
                  "in requires (a scaled probe, for block-scaled units)")
        if v.sweep is not None:
            taken = {"k", *requires} | {n for n, _ in lets}  # i: the first-rules' index
            _need(doc, v.sweep["var"] not in taken, v.path + ("sweep", "var"),
                  f"a variable name other than {', '.join(sorted(taken))} (it would shadow "
                  f"one)")
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
    verified = d.get("verified_on")
    if verified is not None:
        _need(doc, isinstance(verified, dict) and set(verified) <= VERIFIED_KEYS
              and verified != {}, ("verified_on",),
              "a template space: a mapping with fixed, vary, families and/or exclude")
    probe = Probe(doc, d["id"], d["title"].strip(), feature, d["source"].strip(),
                  str(d.get("suite", "library")), formats, ks, applies_if, tuple(requires),
                  when, lets, vectors, facts, rules, inconc, str(d.get("notes", "")),
                  applies_when, verified)
    _check_names(probe)
    if verified is not None and all(formats.get(r) for r in FORMAT_ROLES) and ks:
        # the space must parse for the probe's own formats and K (line-accurate errors)
        for k in ks:
            verified_configs(doc, verified, (formats["in"][0], formats["c"][0],
                                             formats["out"][0], k))
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
        doc.check_keys(path, v, VECTOR_KEYS)
        name = v.get("name", f"v{i}")
        _need(doc, isinstance(name, str) and bool(NAME_RE.match(name)) and name not in names,
              path + ("name",), "a unique lower-case name")
        names.add(name)
        for side in ("a", "b", "sa", "sb"):
            spec = v.get(side)
            _need(doc, spec is None or isinstance(spec, (dict, list)), path + (side,),
                  "a mapping position -> value or a list of values" if len(side) == 1 else
                  "a mapping scale factor index -> value or a list of values")
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
            # bounds that are plain numbers can be checked now; bounds over k or the
            # features may give an empty sweep on some configurations, which is allowed
            lo, hi = _constant(sweep["from"]), _constant(sweep["to"])
            _need(doc, lo is None or hi is None or lo <= hi, path + ("sweep",),
                  f"from <= to (a sweep from {lo} to {hi} is empty)")
        out.append(VectorSpec(name, path, v.get("a"), v.get("b"), v.get("c"), sweep,
                              v.get("sa"), v.get("sb")))
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
        doc.check_keys(path, r, RULE_KEYS)
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
                  f"the name of a swept vector ({', '.join(sorted(sweeps)) or 'none'}), "
                  f"got {f['sweep']!r}")
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
    base = set(base_env("binary16", "binary32", "binary32", 1,
                        fs="ue8m0" if probe.scaled else None))
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
    for name, node in probe.let:
        _names_ok(doc, node, known, ("let", name))
        known = known | {name}
    if probe.applies_when is not None:
        _names_ok(doc, probe.applies_when, known, ("applies_when",))
    for v in probe.vectors:
        vk = known | ({v.sweep["var"]} if v.sweep else set())
        if v.sweep:
            for part in ("from", "to", "step"):
                _names_ok(doc, v.sweep[part], known, v.path + ("sweep", part))
        for side in ("a", "b", "sa", "sb"):
            for pos, val in _entries(getattr(v, side)):
                if isinstance(pos, str):
                    for part in pos.split("..", 1):
                        _names_ok(doc, ex.parse(part), vk, v.path + (side, pos))
                if not _is_literal(val):
                    # a range's values may use 'pos', the position they are written at
                    pk = vk | ({"pos"} if isinstance(pos, str) else set())
                    _names_ok(doc, ex.parse(str(val)), pk, v.path + (side, pos))
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
                                     or bool(HEX_RE.fullmatch(val.strip())))


def _names_ok(doc: Doc, node: Any, known: set[str], path: tuple) -> None:
    bad = sorted(ex.names_in(node) - known)
    if bad:
        raise doc.error(path, f"unknown name {bad[0]!r}; valid names here: "
                              f"{', '.join(sorted(known))}")


