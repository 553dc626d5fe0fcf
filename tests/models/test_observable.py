"""The observability rules claim equivalences (a feature value that no input tells apart):
check every claim on a sample of configurations against the model on many rows.  A claim
that some row refutes would let `mmaprobe check` pass a feature no probe decides."""

from __future__ import annotations

import numpy as np
import pytest

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig, ConfigError
from mmaprobe.models.features import feature_value
from mmaprobe.models.formats import get_format
from mmaprobe.models.observable import (
    CARRY_VALUES,
    CHECKED_FEATURES,
    NEAB_VALUES,
    alternatives,
)
from mmaprobe.models.rows import pool_rows
from mmaprobe.models.space import neighbourhood

_DOMAIN = {
    "neab": NEAB_VALUES, "carry_bits": CARRY_VALUES,
    "nfma": None, "align_rounding": ("rz", "rd", "rne", "rz_sticky"),
    "final_rounding": ("rne", "rz", "rd", "ru", "rna", "ro"),
    "product_normalisation": ("denormalised", "normalised"),
    "c_placement": ("early", "late"), "interleave": ("none", "pairs", "even_odd"),
    "nan": ("canonical", "ieee"),
}
_STAGE = {"subnormal_inputs": "inputs", "subnormal_products": "products",
          "subnormal_sums": "sums", "subnormal_output": "output"}


def _variant(cfg: AccumulatorConfig, feature: str, value) -> AccumulatorConfig | None:
    try:
        if feature in _STAGE:
            fl = set(cfg.flush)
            (fl.add if value == "flush" else fl.discard)(_STAGE[feature])
            return cfg.replace(flush=tuple(fl))
        return cfg.replace(**{feature: value})
    except ConfigError:
        return None


def claimed_equivalent(cfg: AccumulatorConfig, feature: str) -> list:
    """Valid values other than the true one that the rules say no input tells apart."""
    truth = feature_value(cfg, feature)
    alts = set(map(repr, alternatives(cfg, feature)))
    domain = _DOMAIN.get(feature) or (("keep", "flush") if feature in _STAGE else
                                      [d for d in range(1, cfg.k + 1) if cfg.k % d == 0])
    out = []
    for v in domain:
        if v == truth or repr(v) in alts:
            continue
        alt = _variant(cfg, feature, v)
        if alt is not None and alt != cfg:
            out.append(v)
    return out


def _rows(cfg: AccumulatorConfig, n: int, seed: int):
    rng = np.random.default_rng(seed)
    (a, b, c), _ = pool_rows(cfg, n, rng)
    fin, fc = get_format(cfg.in_format), get_format(cfg.c_format)
    # raw bit patterns too: subnormals, specials, every exponent
    m = n // 2
    ra = (rng.integers(0, 1 << fin.bits, size=(m, cfg.k)).astype(np.uint64)
          << np.uint64(fin.pad))
    rb = (rng.integers(0, 1 << fin.bits, size=(m, cfg.k)).astype(np.uint64)
          << np.uint64(fin.pad))
    rc = rng.integers(0, 1 << min(fc.bits, 63), size=m).astype(np.uint64) << np.uint64(fc.pad)
    return np.concatenate([a, ra]), np.concatenate([b, rb]), np.concatenate([c, rc])


SHAPES = [("binary16", "binary32", 4), ("e2m1", "binary32", 8), ("e4m3", "binary16", 16),
          pytest.param("bfloat16", "bfloat16", 4, marks=pytest.mark.slow),
          pytest.param("binary32", "binary32", 2, marks=pytest.mark.slow),
          pytest.param("e3m2", "binary16", 8, marks=pytest.mark.slow),
          pytest.param("tf32", "binary32", 8, marks=pytest.mark.slow)]


@pytest.mark.parametrize("fin,fout,k", SHAPES)
def test_claimed_equivalences_hold_on_the_model(fin: str, fout: str, k: int) -> None:
    space = neighbourhood(fin, None, fout, k)
    rng = np.random.default_rng(k)
    pick = rng.choice(len(space.configs), size=min(25, len(space.configs)), replace=False)
    checked = 0
    for i in sorted(pick.tolist()):
        cfg = space.configs[i]
        a, b, c = _rows(cfg, 3000, i)
        ref = evaluate(cfg, a, b, c)
        for f in CHECKED_FEATURES:
            for v in claimed_equivalent(cfg, f):
                alt = _variant(cfg, f, v)
                got = evaluate(alt, a, b, c)
                bad = np.flatnonzero(got != ref)
                assert not len(bad), (f"{cfg.describe()}: {f}={v!r} claimed equivalent, "
                                       f"row {bad[0]} differs")
                checked += 1
    assert checked > 0
