"""Features a probe may decide: every configuration field, plus a few derived ones.

A feature's true value for a configuration is what a probe's decision is compared with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .config import AccumulatorConfig
from .formats import get_format

FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(AccumulatorConfig))

#: feature names whose values are integers (decision expressions evaluate to integers)
INTEGER_FEATURES = ("k", "nfma", "neab", "carry_bits", "out_frac_bits", "extra_bits", "out_t",
                    "scale_block")


def _flush(stage: str) -> Callable[[AccumulatorConfig], str]:
    def get(cfg: AccumulatorConfig) -> str:
        return "flush" if stage in cfg.flush else "keep"
    return get


def _out_t(cfg: AccumulatorConfig) -> int:
    if cfg.out_frac_bits is not None:
        return cfg.out_frac_bits
    return get_format(cfg.out_format).t


def _monotone(cfg: AccumulatorConfig) -> bool:
    # Fasi et al. ([FHMP21], Sec. 4.5): truncating alignment to the largest exponent of a
    # fused block is not monotonic: raising one addend can shift the others out.
    if cfg.algorithm in ("sfma", "gps"):
        return True
    if cfg.nfma == 1 and cfg.interleave == "none":
        return True
    return False


DERIVED: dict[str, Callable[[AccumulatorConfig], Any]] = {
    "subnormal_inputs": _flush("inputs"),
    "subnormal_products": _flush("products"),
    "subnormal_sums": _flush("sums"),
    "subnormal_output": _flush("output"),
    "extra_bits": lambda cfg: max(0, min(cfg.neab, 3)),
    "out_t": _out_t,
    "product_exact": lambda cfg: True,
    "monotone": _monotone,
    "sticky": lambda cfg: cfg.align_rounding == "rz_sticky",
    # FDA step 1 ([XWYY25] Sec. III): NaN wins, inf - inf and 0 * inf give NaN, an infinity
    # propagates with its sign.  Every engine of the model does this.
    "specials": lambda cfg: "ieee",
}

FEATURES: tuple[str, ...] = FIELD_NAMES + tuple(DERIVED)


def feature_value(cfg: AccumulatorConfig, name: str) -> Any:
    if name in DERIVED:
        return DERIVED[name](cfg)
    return getattr(cfg, name)


def expression_bindings(cfg: AccumulatorConfig, required: tuple[str, ...]) -> dict[str, int]:
    """Integer names a probe's expressions may use once ``required`` features are decided."""
    env: dict[str, int] = {}
    for name in required:
        v = feature_value(cfg, name)
        if name in INTEGER_FEATURES and v is not None:
            env[name] = int(v)
    if "neab" in required:
        env["F"] = cfg.frac_bits
    if "out_frac_bits" in required or "out_t" in required:
        env["out_t"] = _out_t(cfg)
    return env
