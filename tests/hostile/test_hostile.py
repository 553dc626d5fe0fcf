"""The hostile corpus as pytest cases (marker ``hostile``; excluded unless selected).

Run:  pytest -m hostile tests/hostile            (all, about 10 minutes on 2 cores)
      pytest -m hostile tests/hostile -k output  (one class)

Each case asserts the promise of the command line: the expected exit code (2 for bad
input), no traceback, no hang (the case's wall-clock timeout, CPU limit), no memory blow-up
(2 GiB of address space), the message naming the file / line / field, and no half-written,
misplaced or clobbered file.  See cases.py for the corpus and runner.py for the rules.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES  # noqa: E402
from runner import run_case  # noqa: E402

pytestmark = pytest.mark.hostile


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile(case, tmp_path):
    r = run_case(case, workdir=tmp_path)
    assert r.outcome == "ok", (
        f"{r.outcome}: {r.detail}\n"
        f"argv: mmaprobe {' '.join(r.argv)}\n"
        f"expected exit {'/'.join(map(str, r.expected))}, got {r.rc} in {r.seconds} s"
        f" ({case.why})\n"
        f"stderr: {r.stderr_head[-1500:]}")
