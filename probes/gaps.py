"""Known gaps of the probe library: where a feature is observable but no probe decides it.

``probes/gaps.yaml`` lists them, each with the configurations it covers and why no probe
decides the feature there yet.  ``mmaprobe check`` counts an undecided configuration that
a gap covers as a *known gap* (reported with its reason, not a failure); every other
undecided configuration fails the check.  A gap is a promise to write a probe, not a
claim that the feature cannot be read.

>>> gaps = load_gaps()
>>> all(g.why for g in gaps)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.features import FEATURES, feature_value
from mmaprobe.models.formats import FormatError, get_format
from mmaprobe.models.yamldoc import load_doc

from .probe import same_value

GAPS_FILE = Path(__file__).resolve().parent / "gaps.yaml"
GAP_KEYS = {"feature", "where", "in", "out", "k", "why"}


@dataclass(frozen=True)
class Gap:
    features: tuple[str, ...]
    where: tuple[tuple[str, tuple[Any, ...]], ...]
    ins: tuple[str, ...] | None
    outs: tuple[str, ...] | None
    ks: tuple[int, ...] | None
    why: str

    def covers(self, cfg: AccumulatorConfig, feature: str) -> bool:
        if feature not in self.features:
            return False
        if self.ins is not None and cfg.in_format not in self.ins:
            return False
        if self.outs is not None and cfg.out_format not in self.outs:
            return False
        if self.ks is not None and cfg.k not in self.ks:
            return False
        return all(any(same_value(feature_value(cfg, name), v) for v in values)
                   for name, values in self.where)


def load_gaps(path: Path | str = GAPS_FILE) -> list[Gap]:
    """The gaps of a gaps file (errors name the file, line and field)."""
    doc = load_doc(path, "gaps")
    d = doc.data
    if not isinstance(d, dict) or not isinstance(d.get("gaps"), list):
        raise doc.error((), "expected a mapping with a list 'gaps'")
    out = []
    for i, g in enumerate(d["gaps"]):
        p = ("gaps", i)
        if not isinstance(g, dict) or set(g) - GAP_KEYS or "feature" not in g or "why" not in g:
            raise doc.error(p, f"expected a mapping with feature, why and optional where, in, "
                               f"out, k ({', '.join(sorted(GAP_KEYS))})")
        feats = g["feature"] if isinstance(g["feature"], list) else [g["feature"]]
        if not feats or any(f not in FEATURES for f in feats):
            raise doc.error(p + ("feature",), f"expected a feature or a list of features: "
                                              f"{', '.join(FEATURES)}")
        where = g.get("where", {}) or {}
        if not isinstance(where, dict) or set(where) - set(FEATURES):
            raise doc.error(p + ("where",), "expected a mapping feature -> value or list")

        ks = g.get("k")
        out.append(Gap(tuple(feats),
                       tuple((n, tuple(v if isinstance(v, list) else [v]))
                             for n, v in where.items()),
                       _formats(doc, p, g, "in"), _formats(doc, p, g, "out"),
                       None if ks is None else tuple(ks if isinstance(ks, list) else [ks]),
                       " ".join(str(g["why"]).split())))
    return out


def _formats(doc, path: tuple, g: dict, key: str) -> tuple[str, ...] | None:
    if key not in g:
        return None
    names = g[key] if isinstance(g[key], list) else [g[key]]
    try:
        return tuple(get_format(n).name for n in names)
    except FormatError as e:
        raise doc.error(path + (key,), str(e)) from None
