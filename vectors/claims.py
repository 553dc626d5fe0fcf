"""Published claims read as configurations and checked against recorded GPU outputs.

A claims file (``probes/published/claims/*.yaml``) lists a paper's statements about a
unit, each as a change of configuration fields (``set``) of the preset that reproduces the
recorded rows (`mmaprobe validate`).  ``kind: is`` claims that the unit has that
configuration: any recorded row the change contradicts rejects it.  ``kind: is_not``
claims that it has not: contradicted rows confirm it.  ``alternatives`` are other readings
the rows must rule out for the claim to be decided; ``rejected_alternatives`` readings the
rows are expected to rule out (they show what the rows do decide).

>>> c = load_claims(CLAIMS_DIR / "valpey2025.yaml")
>>> [x.id for x in c.claims][:2]
['valpey-not-ieee-rz', 'valpey-round-to-odd']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError
from mmaprobe.models.yamldoc import load_doc

from .validate import Result, validate

CLAIMS_DIR = Path(__file__).resolve().parents[1] / "probes" / "published" / "claims"
CLAIM_KEYS = {"id", "claim", "kind", "reading", "set", "alternatives",
              "rejected_alternatives", "gpus", "outputs", "notes"}
FIELDS = set(AccumulatorConfig.__dataclass_fields__)


@dataclass
class Claim:
    id: str
    claim: str
    kind: str
    reading: str
    set: dict[str, Any]
    gpus: list[str]
    outputs: list[str]
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    rejected_alternatives: list[dict[str, Any]] = field(default_factory=list)
    notes: str = ""


@dataclass
class ClaimSuite:
    name: str
    source: str
    claims: list[Claim]


def claim_suites() -> list[str]:
    return sorted(p.stem for p in CLAIMS_DIR.glob("*.yaml"))


def claim_file(name: str) -> Path | None:
    p = CLAIMS_DIR / f"{name}.yaml"
    return p if p.is_file() else None


def load_claims(path: Path | str) -> ClaimSuite:
    """A claims file; errors name the file, line and field."""
    doc = load_doc(path, "claims")
    d = doc.data
    if not isinstance(d, dict) or not isinstance(d.get("claims"), list):
        raise doc.error((), "expected a mapping with 'suite', 'source' and a list 'claims'")
    out = []
    for i, c in enumerate(d["claims"]):
        path_ = ("claims", i)
        if not isinstance(c, dict):
            raise doc.error(path_, "expected a claim mapping")
        doc.check_keys(path_, c, CLAIM_KEYS)
        for key in ("id", "claim", "kind", "set", "gpus"):
            if key not in c:
                raise doc.error(path_, f"expected required field {key!r}")
        if c["kind"] not in ("is", "is_not"):
            raise doc.error(path_ + ("kind",), "expected 'is' or 'is_not'")
        for key in ("set",):
            _fields(doc, path_ + (key,), c[key])
        for key in ("alternatives", "rejected_alternatives"):
            for j, alt in enumerate(c.get(key, []) or []):
                _fields(doc, path_ + (key, j), alt)
        out.append(Claim(str(c["id"]), str(c["claim"]), c["kind"], str(c.get("reading", "")),
                         dict(c["set"]), [str(g) for g in c["gpus"]],
                         [str(o) for o in c.get("outputs", ["binary32", "binary16"])],
                         list(c.get("alternatives", []) or []),
                         list(c.get("rejected_alternatives", []) or []),
                         " ".join(str(c.get("notes", "")).split())))
    return ClaimSuite(str(d.get("suite", Path(path).stem)), str(d.get("source", "")), out)


def _fields(doc, path: tuple, data: Any) -> None:
    if not isinstance(data, dict):
        raise doc.error(path, "expected a mapping of configuration fields")
    bad = sorted(str(k) for k in set(data) - FIELDS)
    if bad:
        raise doc.error(path + (bad[0],), f"unknown configuration field; valid: "
                                          f"{', '.join(sorted(FIELDS))}")


def _mismatches(root: Path, claim: Claim, overrides: dict[str, Any],
                progress: Callable[[str], None] | None) -> list[Result]:
    res = validate(root, claim.gpus, None, 0, progress, overrides=overrides or None)
    return [r for r in res if r.out_format in claim.outputs]


def evaluate_claims(suite: ClaimSuite, root: Path,
                    progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """A verdict per claim: confirmed, rejected, consistent, or not decided."""
    verdicts = []
    for c in suite.claims:
        main = _mismatches(root, c, c.set, progress)
        if not main:
            raise InputError(f"claim {c.id}: no recorded rows for {', '.join(c.gpus)} "
                             f"({', '.join(c.outputs)}) under {root}")
        bad = sum(r.mismatches for r in main)
        alts = [(a, sum(r.mismatches for r in _mismatches(root, c, a, progress)))
                for a in c.alternatives]
        rejected = [(a, sum(r.mismatches for r in _mismatches(root, c, a, progress)))
                    for a in c.rejected_alternatives]
        fitting = [a for a, n in alts if n == 0]
        if c.kind == "is_not":
            verdict = "confirmed" if all(r.mismatches for r in main) else "not confirmed"
        elif bad:
            verdict = "rejected"
        elif fitting:
            verdict = "consistent, not decided"
        else:
            verdict = "consistent"
        verdicts.append({
            "claim": c.id, "text": c.claim, "kind": c.kind, "reading": c.reading,
            "set": c.set, "verdict": verdict,
            "rows": [{"gpu": r.gpu, "in": r.in_format, "out": r.out_format,
                      "preset": r.preset, "rows": r.rows, "contradicting": r.mismatches}
                     for r in main],
            "alternatives": [{"set": a, "contradicting": n} for a, n in alts],
            "rejected_alternatives": [{"set": a, "contradicting": n} for a, n in rejected],
            "notes": c.notes})
    return verdicts


def _show(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "the preset itself"


def print_verdicts(suite: ClaimSuite, verdicts: list[dict[str, Any]]) -> None:
    import textwrap
    print(f"{suite.name}: {suite.source}")
    for v in verdicts:
        print(f"{v['claim']:26s} {v['verdict']}")
        print(textwrap.fill(f"claim: {v['text']}", width=100, initial_indent="    ",
                            subsequent_indent="      "))
        print(f"    read as: {_show(v['set'])}" + (f" ({v['reading']})" if v["reading"] else ""))
        for r in v["rows"]:
            print(f"    {r['gpu']} {r['in']}->{r['out']} ({r['preset']}): "
                  f"{r['contradicting']} of {r['rows']} recorded rows contradict it")
        for a in v["alternatives"]:
            print(f"    alternative {_show(a['set'])}: {a['contradicting']} rows contradict it"
                  + (" -- fits as well" if not a["contradicting"] else ""))
        for a in v["rejected_alternatives"]:
            print(f"    {_show(a['set'])}: {a['contradicting']} rows contradict it")
        if v["notes"]:
            print(textwrap.fill(f"note: {v['notes']}", width=100, initial_indent="    ",
                                subsequent_indent="      "))
