"""AccumulatorConfig.replace: the direct path for plain fields agrees with the constructor."""

from __future__ import annotations

import dataclasses
import functools
import random

import pytest

from mmaprobe.models.config import AccumulatorConfig, ConfigError
from mmaprobe.models.space import default_spaces

#: values to set per plain field, valid and not
CHANGES = {
    "algorithm": ["fused", "sfma", "gps", "fdrda", "gdfs", "fma"],
    "nfma": [1, 2, 3, 4, 8, 16, 64, -1, "4"],
    "neab": [-23, -10, 0, 3, 40, 41, 2.5],
    "product_normalisation": ["denormalised", "normalised", "other"],
    "align_rounding": ["rz", "rd", "rne", "rz_sticky", "ru"],
    "carry_bits": [None, 0, 2, 5, -1],
    "c_placement": ["early", "late", "middle"],
    "interleave": ["none", "pairs", "even_odd", "odd"],
    "final_rounding": ["rz", "rne", "rna", "ru", "rd", "ro", "up"],
    "out_frac_bits": [None, 5, 10, 23, 60],
    "nan": ["canonical", "ieee", "propagate", "payload"],
    "product_overflow": [False, True, 1],
    "zero_sign": ["ieee", "positive", "minus"],
    "scale_block": [None, 16, 32, 3],
}


@functools.lru_cache(maxsize=1)
def _shipped() -> list[AccumulatorConfig]:
    return [c for s in default_spaces() for c in s.configs]


def _outcome(make, *args, **changes):
    try:
        return make(*args, **changes)
    except ConfigError as e:
        return str(e)


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_replace_of_plain_fields_matches_the_constructor(field: str) -> None:
    rng = random.Random(field)
    for cfg in rng.sample(_shipped(), 300):
        for value in CHANGES[field]:
            fast = _outcome(cfg.replace, **{field: value})
            slow = _outcome(dataclasses.replace, cfg, **{field: value})
            assert fast == slow, (cfg.describe(), field, value)
            if isinstance(fast, AccumulatorConfig):
                assert hash(fast) == hash(slow) and fast.describe() == slow.describe()


def test_replace_of_formats_canonicalises() -> None:
    cfg = AccumulatorConfig(in_format="e4m3", k=16)
    assert cfg.replace(in_format="fp16").in_format == "binary16"
    assert cfg.replace(b_format="e4m3").b_format is None
    assert cfg.replace(nfma=0).nfma == 16
    assert cfg.replace(flush=["output", "inputs"]).flush == ("inputs", "output")
