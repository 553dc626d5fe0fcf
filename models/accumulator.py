"""The vectorised accumulator model: d = f(config, a, b, c) over N rows at once.

TEMPORARY: evaluates row by row with the exact reference until the vectorised
implementation lands (same API).
"""

from __future__ import annotations

import numpy as np

from .config import AccumulatorConfig
from .errors import InputError
from .reference import reference_dot


def evaluate(cfg: AccumulatorConfig, a, b, c) -> np.ndarray:
    """Output bit patterns (uint64, shape (N,)) for a, b of shape (N, k) and c of shape (N,).

    a and b hold in_format bit patterns, c holds c_format bit patterns.
    """
    a, b, c = _check_shapes(cfg, a, b, c)
    return np.array([reference_dot(cfg, a[i], b[i], c[i]) for i in range(a.shape[0])],
                    dtype=np.uint64)


def _check_shapes(cfg: AccumulatorConfig, a, b, c):
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    c = np.asarray(c, dtype=np.uint64)
    if a.ndim == 1:
        a, b, c = a[None, :], b[None, :], c.reshape(1)
    if a.ndim != 2 or a.shape[1] != cfg.k or b.shape != a.shape:
        raise InputError(f"a and b must have shape (N, k={cfg.k}); got {a.shape} and {b.shape}")
    if c.shape != (a.shape[0],):
        raise InputError(f"c must have shape ({a.shape[0]},); got {c.shape}")
    return a, b, c
