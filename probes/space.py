"""Candidate spaces: YAML cartesian products of configuration values, with exclusions."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmaprobe.models.config import AccumulatorConfig, ConfigError
from mmaprobe.models.formats import FormatError, get_format

from .features import FIELD_NAMES
from .yamlsrc import Doc, load_docs

SPACE_KEYS = {"id", "title", "formats", "k", "fixed", "vary", "exclude"}
MAX_SPACE = 200_000


@dataclass
class Space:
    id: str
    file: str
    configs: list[AccumulatorConfig]
    rejected: int  # combinations the configuration itself rejects
    excluded: int


def parse_space(doc: Doc) -> Space:
    d = doc.data
    if not isinstance(d, dict):
        raise doc.error((), "expected a mapping (a candidate space)")
    unknown = sorted(str(x) for x in set(d) - SPACE_KEYS)
    if unknown:
        raise doc.error((unknown[0],), f"unknown field; valid: {', '.join(sorted(SPACE_KEYS))}")
    for key in ("id", "formats", "k"):
        if key not in d:
            raise doc.error((), f"expected required field {key!r}")
    fm = d["formats"]
    if not isinstance(fm, dict) or "in" not in fm or set(fm) - {"in", "c", "out"}:
        raise doc.error(("formats",), "expected a mapping {in: F, c: F, out: F}")
    names = {}
    for role in ("in", "c", "out"):
        try:
            names[role] = get_format(fm.get(role, "binary32")).name
        except FormatError as e:
            raise doc.error(("formats", role), str(e)) from None
    ks = d["k"] if isinstance(d["k"], list) else [d["k"]]
    if not all(isinstance(x, int) and x >= 1 for x in ks):
        raise doc.error(("k",), "expected a positive integer or a list of them")
    fixed = d.get("fixed", {}) or {}
    vary = d.get("vary", {}) or {}
    for key, part in (("fixed", fixed), ("vary", vary)):
        if not isinstance(part, dict):
            raise doc.error((key,), "expected a mapping of configuration fields")
        for f in part:
            if f not in FIELD_NAMES or f in ("in_format", "c_format", "out_format", "k"):
                raise doc.error((key, f), f"expected a configuration field other than "
                                          f"formats and k; valid: {', '.join(FIELD_NAMES)}")
    for f, vals in vary.items():
        if not isinstance(vals, list) or not vals:
            raise doc.error(("vary", f), "expected a non-empty list of values")
    excl = d.get("exclude", []) or []
    if not isinstance(excl, list):
        raise doc.error(("exclude",), "expected a list of partial configurations")
    for i, e in enumerate(excl):
        if not isinstance(e, dict) or not set(e) <= set(FIELD_NAMES):
            raise doc.error(("exclude", i), "expected a mapping of configuration fields")
    fields = list(vary)
    total = len(ks)
    for f in fields:
        total *= len(vary[f])
    if total > MAX_SPACE:
        raise doc.error(("vary",), f"expected at most {MAX_SPACE} combinations, got {total}")
    configs, rejected, excluded = [], 0, 0
    seen = set()
    for k in ks:
        for combo in itertools.product(*(vary[f] for f in fields)):
            values: dict[str, Any] = dict(fixed)
            values.update(zip(fields, combo))
            values.update({"in_format": names["in"], "c_format": names["c"],
                           "out_format": names["out"], "k": k})
            if any(all(_eq(values.get(f), v) for f, v in e.items()) for e in excl):
                excluded += 1
                continue
            if values.get("nfma", 0) and k % values["nfma"]:
                rejected += 1
                continue
            try:
                cfg = AccumulatorConfig.from_dict(values)
            except ConfigError:
                rejected += 1
                continue
            if cfg in seen:
                continue
            seen.add(cfg)
            configs.append(cfg)
    return Space(str(d["id"]), doc.file, configs, rejected, excluded)


def _eq(a: Any, b: Any) -> bool:
    return a == b or str(a) == str(b)


def load_spaces(paths: list[Path | str]) -> list[Space]:
    out = []
    for p in paths:
        for doc in load_docs(p):
            out.append(parse_space(doc))
    return out


def default_space_files() -> list[Path]:
    return sorted((Path(__file__).resolve().parent / "spaces").glob("*.yaml"))
