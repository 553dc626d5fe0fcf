"""The probe-by-space matrix of issue 10: every input format x output format x K in 2..64 x
algorithm of models/spaces/matrix.yaml, checked with the whole library.

``python3 tests/probes/probe_matrix.py [-o FILE]`` prints the feature x input format x algorithm
table (decided + known gap / observable, '*' where some configuration is left undecided)
and writes the counts as JSON; ``--write-baseline`` writes them to
tests/probes/matrix_baseline.json, which the slow test ``test_matrix_full`` holds the library
to (0 wrong and 0 undecided everywhere; no cell may hide more configurations behind a known
gap of probes/gaps.yaml than it records).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from mmaprobe.models.space import SPACES_DIR, CandidateSpace, load_spaces
from mmaprobe.probes.checker import CheckReport, run_check_parallel
from mmaprobe.probes.gaps import load_gaps
from mmaprobe.probes.library import library_files, load_probes

ALL_IN = ["binary64", "binary32", "tf32", "bfloat16", "binary16", "e4m3", "e5m2", "e4m3fnuz",
          "e5m2fnuz", "e2m3", "e3m2", "e2m1",
          # a x b in formats of their own (the probes ported product by product,
          # probes/port.py): Hopper/Ada fp8, MI300X fp8 x bf8, Blackwell f8f6f4, fp16 x bf16
          "e4m3xe5m2", "e5m2xe4m3", "e4m3fnuzxe5m2fnuz", "e2m1xe3m2", "e3m2xe4m3",
          "e2m3xe2m1", "binary16xbfloat16"]
#: block-scaled ("@scale format", SCALE_BLOCK products per scale factor): MXFP8/6/4 on FDA
#: and GDFS, NVFP4 on GDFS, Blackwell's mixed f8f6f4 with MX scale factors (in the
#: baseline since 2026-11-24: 0 undecided, the rest of what scale factors make observable
#: in known gaps of probes/gaps.yaml)
SCALED_IN = ["e4m3@ue8m0", "e5m2@ue8m0", "e3m2@ue8m0", "e2m1@ue8m0", "e2m1@ue4m3",
             "e4m3xe2m1@ue8m0"]
ALL_IN += SCALED_IN
ALL_OUT = ["binary64", "binary32", "binary16", "bfloat16"]
ALL_K = [2, 4, 8, 16, 32, 64]
ALGORITHMS = ["fused", "sfma", "gps", "fdrda", "gdfs"]
#: products per scale factor: 32 for MX (OCP MX v1.0), 16 for NVFP4; K below it has none
SCALE_BLOCK = {"ue8m0": 32, "ue4m3": 16}
BASELINE = Path(__file__).with_name("matrix_baseline.json")


def matrix_space(fin: str, fout: str, k: int) -> CandidateSpace:
    """The matrix template for one input format ("AxB": a in A, b in B, the probes ported
    product by product, probes/port.py; "A@S": block-scaled by S, SCALE_BLOCK products per
    scale factor, an empty space where K is smaller), output format and K."""
    fmts, _, sf = fin.partition("@")
    fa, _, fb = fmts.partition("x")
    block = SCALE_BLOCK[sf] if sf else None
    operands = (fb or fa, sf or None, block) if fb or sf else None
    sid = f"matrix-{fin}-{fout}-k{k}"
    if block and k % block:
        return CandidateSpace(sid, "matrix.yaml", [])
    (sp,) = load_spaces([SPACES_DIR / "matrix.yaml"], (fa, fout, fout, k), operands=operands)
    sp.id = sid
    return sp


def matrix_spaces(fin: str) -> list[CandidateSpace]:
    """The matrix template instantiated for one input format, every output format and K."""
    return [matrix_space(fin, fout, k) for fout in ALL_OUT for k in ALL_K]


def check_format(fin: str, jobs: int = 2) -> CheckReport:
    return run_check_parallel(load_probes(library_files()), matrix_spaces(fin), jobs,
                              gaps=load_gaps())


def cells(fin: str, rep: CheckReport) -> dict[str, dict]:
    """'feature|in|algorithm' -> observable, decided, gap, undecided; 'wrong|in' -> wrong."""
    out: dict[str, dict] = {}
    for c in rep.coverage:
        for alg, (obs, dec, gap) in c.by_algorithm.items():
            cell = out.setdefault(f"{c.feature}|{fin}|{alg}",
                                  {"observable": 0, "decided": 0, "gap": 0, "undecided": 0})
            cell["observable"] += obs
            cell["decided"] += dec
            cell["gap"] += gap
            cell["undecided"] += obs - dec - gap
    out[f"wrong|{fin}"] = {"wrong": sum(r.wrong for r in rep.results),
                           "errors": sum(len(r.errors) for r in rep.results)}
    return out


def table(counts: dict[str, dict]) -> str:
    lines = [f"{'feature':22s} {'in':15s} " + " ".join(f"{a:>15s}" for a in ALGORITHMS)]
    features = sorted({k.split("|")[0] for k in counts if not k.startswith("wrong|")},
                      key=lambda f: [c.split("|")[0] for c in counts].index(f))
    for f in features:
        for fin in ALL_IN:
            row = []
            for a in ALGORITHMS:
                c = counts.get(f"{f}|{fin}|{a}")
                if not c or not c["observable"]:
                    row.append("-")
                    continue
                mark = "*" if c["undecided"] else " "
                row.append(f"{c['decided']}+{c['gap']}/{c['observable']}{mark}")
            if any(x != "-" for x in row):
                lines.append(f"{f:22s} {fin:15s} " + " ".join(f"{x:>15s}" for x in row))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--in", dest="fin", action="append", help="only these input formats")
    ap.add_argument("-o", "--output", help="write the counts as JSON here")
    ap.add_argument("--write-baseline", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    counts: dict[str, dict] = {}
    reasons: collections.Counter = collections.Counter()
    t0 = time.time()
    for fin in args.fin or ALL_IN:
        rep = check_format(fin, args.jobs)
        counts.update(cells(fin, rep))
        for c in rep.coverage:
            reasons.update(c.gap_reasons)
        print(f"{fin}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    print(table(counts))
    print("\nknown gaps by entry of probes/gaps.yaml (configuration-features, reason):")
    for why, n in reasons.most_common():
        print(f"{n:7d}  {why[:150]}")
    und = sum(c.get("undecided", 0) for c in counts.values())
    obs = sum(c.get("observable", 0) for c in counts.values())
    wrong = sum(c.get("wrong", 0) for c in counts.values())
    print(f"{obs} observable configuration-features, {und} undecided, {wrong} wrong decisions; "
          f"{time.time() - t0:.0f} s")
    for path in filter(None, [args.output, BASELINE if args.write_baseline else None]):
        Path(path).write_text(json.dumps(counts, indent=0, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
