"""Shared test helpers: evaluate one row on a preset with values given as numbers."""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import numpy as np

from mmaprobe.models import evaluate, get_format, reference_dot
from mmaprobe.models.presets import get_preset

HWDATA = Path(os.environ.get("MMAPROBE_HWDATA",
                             Path(__file__).resolve().parents[1].parent / "shared" / "hwdata"))


def bits_of(fmt, x) -> int:
    """Exact value -> bit pattern (fails if not representable)."""
    if isinstance(x, str):
        return int(x, 16)
    b = fmt.exact_bits(Fraction(x))
    assert b is not None, f"{x} not representable in {fmt.name}"
    return b


def run_row(cfg, a, b, c=0, sa=None, sb=None):
    """d for one row (a in a's format, b in b's, padded with zeros to k; with block scaling
    the scale factors sa and sb, padded with ones), checked on both engines; returns bits."""
    if isinstance(cfg, str):
        cfg = get_preset(cfg).config
    fin, fb, fc = (get_format(cfg.in_format), get_format(cfg.b_fmt),
                   get_format(cfg.c_format))
    a = [bits_of(fin, x) for x in a] + [0] * (cfg.k - len(a))
    b = [bits_of(fb, x) for x in b] + [0] * (cfg.k - len(b))
    cb = bits_of(fc, c)
    scales = {}
    if cfg.scale_format is not None:
        fs = get_format(cfg.scale_format)
        for name, s in (("scale_a", list(sa or [])), ("scale_b", list(sb or []))):
            scales[name] = [bits_of(fs, x) for x in s + [1] * (cfg.scales - len(s))]
    ref = reference_dot(cfg, a, b, cb, **scales)
    fast = int(evaluate(cfg, np.array([a], np.uint64), np.array([b], np.uint64),
                        np.array([cb], np.uint64),
                        **{n: np.array([s], np.uint64) for n, s in scales.items()})[0])
    assert fast == ref, f"model {fast:#x} != reference {ref:#x}"
    return ref


def value_of(cfg, a, b, c=0, sa=None, sb=None) -> Fraction:
    if isinstance(cfg, str):
        cfg = get_preset(cfg).config
    return get_format(cfg.out_format).to_fraction(run_row(cfg, a, b, c, sa, sb))
