"""Adaptive identification: query a device one row at a time until its configuration is
known.

Each query is the split search's best row for the candidates the device's answers have
left (:mod:`mmaprobe.models.split_search`: pool rows, then rows aimed at the remaining
class, then the SMT engine on a pair).  Identification ends

- *identified*: one configuration remains;
- *equivalent*: several remain and every pair is proven to give the same output on every
  input (static rules, or the SMT engine) -- the device is decided up to that class;
- *undecided*: several remain and some pair is neither split nor proven equivalent; the
  report says which pair and why (solver timeout, not encodable);
- *class*: several remain and no solver was allowed to settle them;
- *unexplained*: no candidate matches the device's answers (with the refinement analysis
  of :mod:`.infer`); or *budget*: the query budget ran out.

A recorded device (``recorded:FILE``) can only answer the rows it holds: the pool is those
rows, and no other row is asked.
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

from .devices import Device
from .infer import Inference, infer
from .infer import report as infer_mod_report
from .suitefile import Observed, Suite

Progress = Callable[[str], None] | None


@dataclass
class Identification:
    space: CandidateSpace
    queries: list[dict[str, Any]]
    remaining: list[int]
    status: str        # identified, equivalent, undecided, class, unexplained, budget
    note: str
    seconds: float
    presets: list[str] = field(default_factory=list)
    inference: Inference | None = None
    proofs: list[str] = field(default_factory=list)      # why remaining pairs are equal
    open_pairs: list[str] = field(default_factory=list)  # pairs neither split nor proven

    @property
    def decided(self) -> bool:
        return self.status in ("identified", "equivalent")

    def to_json(self) -> dict[str, Any]:
        cfgs = self.space.configs
        out: dict[str, Any] = {
            "status": self.status, "note": self.note, "queries_used": len(self.queries),
            "space": {"id": self.space.id, "source": self.space.source,
                      "configurations": len(cfgs)},
            "remaining": [{"describe": cfgs[i].describe(), "configuration": cfgs[i].to_dict()}
                          for i in self.remaining[:50]],
            "remaining_count": len(self.remaining), "matching_presets": self.presets,
            "queries": self.queries, "seconds": round(self.seconds, 2),
            "equivalence_proofs": self.proofs, "open_pairs": self.open_pairs}
        if self.inference is not None:
            out["closest"] = self.inference.closest
        return out


def _query(device, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> int:
    d = np.asarray(device(a[None, :], b[None, :], np.array([c], dtype=np.uint64)),
                   dtype=np.uint64).reshape(-1)
    return int(d[0])


def identify(device: Device, space: CandidateSpace, max_queries: int = 16, seed: int = 0,
             pool: int = 2000, smt_seconds: float = 20.0, use_smt: bool = True,
             progress: Progress = None) -> Identification:
    """Query ``device`` one row at a time (see the module docstring) until one
    configuration, or a class proven equivalent, remains, none remains, or
    ``max_queries`` are used."""
    t0 = time.monotonic()
    rng = np.random.default_rng(seed)
    cfgs = space.configs
    if progress:
        progress(f"identify: evaluating {len(cfgs)} candidates on a pool of rows")
    rows_pool = RowPool.empty(cfgs)
    recorded = getattr(device, "rows", None)
    if recorded is not None:
        rows_pool.add(recorded, "recorded", progress)
    else:
        rows, kinds = pool_rows(cfgs[0], pool, rng)
        rows_pool.add(rows, kinds, progress)
    solver = pair_solver() if use_smt else None
    search = SplitSearch(cfgs, rows_pool, rng, local_rows=1000, local_tries=2,
                         local_budget=0 if recorded is not None else None,
                         solver=solver if recorded is None else None,
                         solver_seconds=smt_seconds if use_smt else 0.0, pair_seconds=10.0,
                         open_columns=True)  # a split's column is read on R only
    R = np.arange(len(cfgs))
    asked: list[tuple[np.ndarray, np.ndarray, int, int]] = []
    queries: list[dict[str, Any]] = []
    status, note = "budget", f"query budget of {max_queries} used up"
    proofs: list[str] = []
    open_pairs: list[str] = []
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
            if recorded is not None:
                search.solver = solver  # settle the class without asking the device
            split, proofs, open_pairs = search.settle(R.tolist())
            if split is None:
                status, note = _class_status(R.size, proofs, open_pairs, use_smt, recorded)
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
    ops = cfgs[0].operands
    presets = [p.name for p in presets_with(space.in_format, space.c_format, space.out_format,
                                            space.k, operands=ops)
               if p.config in {cfgs[i] for i in R}]
    ident = Identification(space, queries, [int(i) for i in R], status, note,
                           time.monotonic() - t0, presets, proofs=proofs,
                           open_pairs=open_pairs)
    if status == "unexplained" and asked:
        suite = Suite(space.in_format, space.c_format, space.out_format, space.k,
                      [f"query.{i + 1}" for i in range(len(asked))],
                      np.stack([q[0] for q in asked]).astype(np.uint64),
                      np.stack([q[1] for q in asked]).astype(np.uint64),
                      np.array([q[2] for q in asked], dtype=np.uint64),
                      [{"kind": "query", "query": i + 1, "method": q["method"],
                        "features": q["features"]} for i, q in enumerate(queries)],
                      b_format=None if ops[0] == space.in_format else ops[0],
                      scale_format=ops[1], scale_block=ops[2])
        obs = Observed(list(suite.ids), np.array([q[3] for q in asked], dtype=np.uint64),
                       space.out_format)
        ident.inference = infer(suite, obs, space)
    ident.seconds = time.monotonic() - t0
    return ident


def _class_status(n: int, proofs: list[str], open_pairs: list[str], use_smt: bool,
                  recorded) -> tuple[str, str]:
    if not open_pairs:
        return "equivalent", (f"{n} configurations remain, proven to give the same output "
                               f"on every input")
    if not use_smt:
        where = "the recorded rows" if recorded is not None else "model rows"
        return "class", (f"{n} configurations not split by {where}; the solver was not "
                         f"allowed to settle them")
    return "undecided", (f"{n} configurations remain; {len(open_pairs)} pair(s) neither "
                         f"split nor proven equivalent, e.g. {open_pairs[0]}")


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
    if ident.proofs:
        L += ["", "Proven equivalent:", ""] + [f"- {p}" for p in ident.proofs[:10]]
    if ident.open_pairs:
        L += ["", "Neither split nor proven equivalent:", ""]
        L += [f"- {p}" for p in ident.open_pairs[:10]]
    L += ["", "Matching presets: " + (", ".join(ident.presets) or "none")]
    if ident.inference is not None:
        L += ["", infer_mod_report(ident.inference)]
    return "\n".join(L) + "\n"
