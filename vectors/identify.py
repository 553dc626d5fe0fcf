"""Adaptive identification: query a device one vector at a time until one class remains.

A device is any callable ``device(a, b, c) -> d`` on bit-pattern arrays of shapes (n, k),
(n, k), (n,) returning n output patterns, so a hardware backend can plug in unchanged.
Each step picks, among a model-evaluated pool of candidate rows, the one that splits the
remaining candidates most evenly (least expected number of survivors); when no pool row
splits them, fresh rows aimed at the remaining class are searched, then the SMT engine is
asked for a distinguishing vector between two of them (time-bounded); if nothing splits
them, they are reported as an indistinguishable class.  If no candidate survives, the
device is reported as unexplained with the refinement analysis of :mod:`.infer`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mmaprobe.models.partition import split_fields
from mmaprobe.models.presets import presets_with
from mmaprobe.models.rows import pool_rows
from mmaprobe.models.space import CandidateSpace
from mmaprobe.models.split_search import RowPool, SplitSearch
from mmaprobe.smt.distinguish import pair_solver

from .infer import Inference, infer
from .infer import report as infer_mod_report
from .suitefile import Observed, Suite

Device = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
Progress = Callable[[str], None] | None


@dataclass
class Identification:
    space: CandidateSpace
    queries: list[dict[str, Any]]
    remaining: list[int]
    status: str                     # identified, class, unexplained, budget
    note: str
    seconds: float
    presets: list[str] = field(default_factory=list)
    inference: Inference | None = None

    def to_json(self) -> dict[str, Any]:
        cfgs = self.space.configs
        out: dict[str, Any] = {
            "status": self.status, "note": self.note, "queries_used": len(self.queries),
            "space": {"id": self.space.id, "source": self.space.source,
                      "configurations": len(cfgs)},
            "remaining": [{"describe": cfgs[i].describe(), "configuration": cfgs[i].to_dict()}
                          for i in self.remaining[:50]],
            "remaining_count": len(self.remaining), "matching_presets": self.presets,
            "queries": self.queries, "seconds": round(self.seconds, 2)}
        if self.inference is not None:
            out["closest"] = self.inference.closest
        return out


def _query(device: Device, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> int:
    d = np.asarray(device(a[None, :], b[None, :], np.array([c], dtype=np.uint64)),
                   dtype=np.uint64).reshape(-1)
    return int(d[0])


def identify(device: Device, space: CandidateSpace, max_queries: int = 16, seed: int = 0,
             pool: int = 2000, smt_seconds: float = 20.0, use_smt: bool = True,
             progress: Progress = None) -> Identification:
    """Query ``device`` one row at a time, each row the split search's best split of the
    candidates its answers have left, until one configuration (or a class no stage splits)
    remains, none remains (the device is unexplained), or ``max_queries`` are used."""
    t0 = time.monotonic()
    rng = np.random.default_rng(seed)
    cfgs = space.configs
    if progress:
        progress(f"identify: evaluating {len(cfgs)} candidates on a pool of {pool} rows")
    rows_pool = RowPool.empty(cfgs)
    rows, kinds = pool_rows(cfgs[0], pool, rng)
    rows_pool.add(rows, kinds, progress)
    search = SplitSearch(cfgs, rows_pool, rng, local_rows=1000, local_tries=2,
                         solver=pair_solver() if use_smt else None,
                         solver_seconds=smt_seconds if use_smt else 0.0, pair_seconds=10.0)
    R = np.arange(len(cfgs))
    asked: list[tuple[np.ndarray, np.ndarray, int, int]] = []
    queries: list[dict[str, Any]] = []
    status, note = "budget", f"query budget of {max_queries} used up"
    while True:
        if R.size == 1:
            status, note = "identified", "one configuration remains"
            break
        if R.size == 0:
            status, note = "unexplained", "no candidate configuration explains the outputs"
            break
        if len(queries) >= max_queries:
            break
        split = search.next_split(np.zeros(R.size, dtype=np.int64), R)
        if split is None:
            status = "class"
            note = f"{R.size} configurations not split by {pool} pool rows, targeted rows"
            if use_smt:
                why = "; ".join(search.solver_notes[-2:])
                note += " or the SMT engine" + (f" ({why})" if why else "")
            break
        method = {"pool": f"model-search (pool, {split.kind})", "local": "model-search (local)",
                  "solver": "smt (distinguish)"}[split.method]
        row, col = split.row, split.column[R]
        d = _query(device, *row)
        before = R.size
        fields = split_fields([cfgs[i] for i in R], col)
        R = R[col == d]
        asked.append((row[0], row[1], row[2], d))
        queries.append({"query": len(queries) + 1, "method": method, "features": fields,
                        "candidates_before": int(before), "candidates_after": int(R.size)})
        if progress:
            progress(f"identify: query {len(queries)} ({method}): {before} -> {R.size}")
    presets = [p.name for p in presets_with(space.in_format, space.c_format, space.out_format,
                                            space.k) if p.config in {cfgs[i] for i in R}]
    ident = Identification(space, queries, [int(i) for i in R], status, note,
                           time.monotonic() - t0, presets)
    if status == "unexplained" and asked:
        suite = Suite(space.in_format, space.c_format, space.out_format, space.k,
                      [f"query.{i + 1}" for i in range(len(asked))],
                      np.stack([q[0] for q in asked]).astype(np.uint64),
                      np.stack([q[1] for q in asked]).astype(np.uint64),
                      np.array([q[2] for q in asked], dtype=np.uint64),
                      [{"kind": "query", "query": i + 1, "method": q["method"],
                        "features": q["features"]} for i, q in enumerate(queries)])
        obs = Observed(list(suite.ids), np.array([q[3] for q in asked], dtype=np.uint64),
                       space.out_format)
        ident.inference = infer(suite, obs, space)
    ident.seconds = time.monotonic() - t0
    return ident


def report(ident: Identification) -> str:
    cfgs = ident.space.configs
    L = ["# mmaprobe identify", "",
         f"Space: {ident.space.describe()}.", "",
         f"**{ident.status}** after {len(ident.queries)} queries ({ident.note}; "
         f"{ident.seconds:.1f} s).", "", "| query | method | features split | candidates |",
         "|---|---|---|---|"]
    for q in ident.queries:
        L.append(f"| {q['query']} | {q['method']} | {', '.join(q['features'][:5])} | "
                 f"{q['candidates_before']} -> {q['candidates_after']} |")
    L += ["", "## Remaining configurations", ""]
    for i in ident.remaining[:20]:
        L.append(f"- `{cfgs[i].describe()}`")
    if len(ident.remaining) > 20:
        L.append(f"- ... {len(ident.remaining) - 20} more")
    L += ["", "Matching presets: " + (", ".join(ident.presets) or "none")]
    if ident.inference is not None:
        L += ["", infer_mod_report(ident.inference)]
    return "\n".join(L) + "\n"
