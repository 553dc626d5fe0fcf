"""JSON output that stays JSON: NaN and infinities written as strings.

Python's ``json.dumps`` writes bare ``NaN`` and ``Infinity`` for such floats, which strict JSON
readers reject; every ``--json`` output goes through :func:`dumps`.

>>> dumps({"d": float("nan"), "e": [1.5, float("-inf")]})
'{"d": "nan", "e": [1.5, "-inf"]}'
"""

from __future__ import annotations

import json
import math
from typing import Any


def number(x: float) -> float | str:
    """x, or its text ('nan', 'inf', '-inf') when JSON has no number for it."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def clean(obj: Any) -> Any:
    """obj with every non-finite float replaced by its text (lists, tuples, dicts)."""
    if isinstance(obj, float):
        return number(obj)
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    """json.dumps of clean(obj); never writes NaN or Infinity."""
    return json.dumps(clean(obj), allow_nan=False, **kw)
