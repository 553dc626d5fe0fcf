"""Hostile input on the command line: a clear error, bounded time and memory, nothing
half-written (README, "Commands"; shared/DESIGN.md, "Quality bar").

Each case runs ``python -m mmaprobe.vectors ARGV`` in a subprocess, in a fresh directory
holding the files it creates, under a wall-clock timeout (20 s for most), RLIMIT_AS 2 GiB,
RLIMIT_CPU and RLIMIT_FSIZE (see runner.py), and asserts the promise: the expected exit code
(2 for bad input), a message naming the file (and the line and field where the case says),
no traceback, no hang, no memory blow-up, no half-written, misplaced or clobbered file.

Two tests over the same corpus (cases.py, 873 cases in 13 classes):

- ``test_hostile_default``: a representative subset, two or three cases of every class
  (``DEFAULT``), run by plain ``pytest`` (about 30 s);
- ``test_hostile_corpus``: every case, marked ``slow`` (``pytest -m slow tests/hostile``,
  about 10 minutes on 2 cores; ``python tests/hostile/runner.py -j 2`` runs the same cases
  two at a time and writes a report).

Both carry the marker ``hostile`` (``pytest -m hostile`` selects them).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES  # noqa: E402
from runner import run_case  # noqa: E402

BY_ID = {c.id: c for c in CASES}

#: The default run: the classes' most telling cases, each a second or less.
DEFAULT = (
    # yaml: an alias bomb, a merge key, a code-execution tag (PWNED must not appear)
    "yaml-eval-config-alias-bomb", "yaml-check-space-merge-key",
    "yaml-check-probe-tag-python-apply",
    # fs: a FIFO (would block for ever), /dev/zero (endless), a FIFO as a d-file
    # (the unreadable-file cases need setpriv when run as root: full corpus only)
    "fs-eval-config-fifo", "fs-check-space-dev-zero", "fs-dfile-fifo",
    # expr: a 10^9 exponent, a probe value beyond every format
    "expr-eval-huge-exponent", "expr-value-huge-value",
    # explode: K = 10^9 in a suite, --rows 10^12, a .npy header claiming 8 TB
    "explode-run-k-1e9", "explode-bench-rows-1e12", "explode-gemm-npy-header",
    # types: true for an integer field, a check where no probe applies
    "types-config-neab-bool", "types-check-no-probe-applies",
    # data: the line of a bad value, a negative hex word, a folder without d-file
    "data-unrepresentable-line40", "data-negative-hex", "data-no-d-file",
    # output: a write cut half-way (EFBIG), run -o onto its own suite, --gpu ../escape,
    # a report path that is a directory
    "output-run-efbig", "output-run-overwrite-suite", "output-suite-gpu-traversal",
    "output-infer-report-dir",
    # cli: --rows 0, --timeout nan, --alpha nan
    "cli-bench-rows-0", "cli-distinguish-timeout-nan", "cli-gemm-alpha-nan",
    # pipe: `mmaprobe presets | head`, and validate's table into a closed pipe
    "pipe-head-presets", "pipe-head-validate",
    # schema: a duplicate JSON key, JSON nested 100 000 deep
    "schema-suite-dup-keys", "schema-suite-deep-nesting",
    # probe: an empty sweep, an integer feature decided as 1/3 (file and line of 'then')
    "probe-sweep-from-gt-to", "probe-rule-then-bad", "probe-sa-unrepresentable",
    # smt: constraints given as a configuration, an impossible exponent range
    "smt-distinguish-config-is-cons", "smt-distinguish-cons-impossible",
    # unicode: a full-width digit, non-ASCII file names (valid)
    "unicode-eval-fullwidth", "unicode-path-names",
)


def _check(case, tmp_path: Path) -> None:
    r = run_case(case, workdir=tmp_path)
    assert r.outcome == "ok", (
        f"{r.outcome}: {r.detail}\n"
        f"argv: mmaprobe {' '.join(r.argv)}\n"
        f"expected exit {'/'.join(map(str, r.expected))}, got {r.rc} in {r.seconds} s"
        f" ({case.why})\n"
        f"stderr: {r.stderr_head[-1500:]}")


def test_default_covers_every_class() -> None:
    assert len(set(DEFAULT)) == len(DEFAULT)
    missing = [i for i in DEFAULT if i not in BY_ID]
    assert not missing, missing
    per_class: dict[str, int] = {}
    for i in DEFAULT:
        per_class[BY_ID[i].cls] = per_class.get(BY_ID[i].cls, 0) + 1
    assert set(per_class) == {c.cls for c in CASES}
    assert min(per_class.values()) >= 2, per_class


@pytest.mark.hostile
@pytest.mark.parametrize("case", [BY_ID[i] for i in DEFAULT], ids=list(DEFAULT))
def test_hostile_default(case, tmp_path: Path) -> None:
    _check(case, tmp_path)


@pytest.mark.slow
@pytest.mark.hostile
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_corpus(case, tmp_path: Path) -> None:
    _check(case, tmp_path)
