"""The z3 encoding agrees bit for bit with the numpy model."""

from __future__ import annotations

import pytest

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.smt.agree import (
    exhaustive_rows,
    mismatches,
    prove_agreement,
    random_rows,
    random_scales,
)
from mmaprobe.smt.encode import NotEncodable, check_encodable


def _unique_presets() -> list:
    from mmaprobe.models.presets import list_presets

    seen: list[AccumulatorConfig] = []
    out = []
    for p in list_presets():
        if p.config in seen:
            continue
        seen.append(p.config)
        out.append(p)
    return out


def _representatives() -> list:
    """One preset per structure (algorithm, interleave, c placement, output format, NaN
    rule, mixed operands, block scaling, input format): the default run; every preset is
    checked under -m slow."""
    seen: dict[tuple, object] = {}
    for p in _unique_presets():
        c = p.config
        seen.setdefault((c.algorithm, c.interleave, c.c_placement, c.out_format, c.nan,
                         c.b_format is not None, c.scale_format, c.in_format), p)
    return list(seen.values())


def _check_preset(preset) -> None:
    check_encodable(preset.config)
    a, b, c = random_rows(preset.config, 40, seed=1)
    scales = random_scales(preset.config, 40, seed=1)
    assert mismatches(preset.config, a, b, c, scales=scales) == []


@pytest.mark.parametrize("preset", _representatives(), ids=lambda p: p.name)
def test_random_rows_representative_presets(preset) -> None:
    """Every algorithm and feature of the presets (CDNA3 FDRDA/GFDRDA, GDFS, block scaling,
    mixed formats, NaN propagation included) is encodable and agrees with the model."""
    _check_preset(preset)


@pytest.mark.slow
@pytest.mark.parametrize("preset", _unique_presets(), ids=lambda p: p.name)
def test_random_rows_every_preset(preset) -> None:
    _check_preset(preset)


HAND_MADE = [
    AccumulatorConfig(in_format="binary16", k=8, nfma=2, neab=1, align_rounding="rne",
                      carry_bits=1, final_rounding="rne"),
    AccumulatorConfig(in_format="e4m3", k=8, nfma=4, neab=-3, align_rounding="rz_sticky",
                      product_normalisation="normalised", out_frac_bits=9,
                      final_rounding="ru"),
    AccumulatorConfig(in_format="e5m2", k=8, nfma=4, neab=2, c_placement="late",
                      interleave="pairs", late_rounding="rd", flush=("inputs", "output")),
    AccumulatorConfig(in_format="bfloat16", k=4, out_format="bfloat16", c_format="bfloat16",
                      nfma=2, align_rounding="rd", final_rounding="rd", nan="ieee",
                      product_overflow=True, flush=("products", "sums")),
    AccumulatorConfig(in_format="binary16", k=4, algorithm="sfma", nfma=1,
                      final_rounding="rne"),
    # the fields of the H100 measurements and of block scaling, on hand-made neighbours
    AccumulatorConfig(in_format="binary16", k=8, nfma=4, neab=1, zero_sign="positive",
                      final_rounding="rd", flush=("sums", "output")),
    AccumulatorConfig(in_format="binary32", k=4, algorithm="sfma", nfma=1, nan="propagate",
                      final_rounding="rz"),
    AccumulatorConfig(in_format="e5m2", k=8, b_format="e4m3", nfma=4, neab=2,
                      interleave="pairs", c_placement="late", zero_sign="positive"),
    AccumulatorConfig(in_format="bfloat16", k=8, algorithm="fdrda", nfma=4, neab=3,
                      align_rounding="rz_sticky", carry_bits=2, nan="ieee",
                      product_overflow=True, zero_sign="positive"),
    AccumulatorConfig(in_format="e3m2", k=16, b_format="e2m1", algorithm="fdrda", nfma=8,
                      neab=1, interleave="even_odd", final_rounding="rd"),
    AccumulatorConfig(in_format="binary16", k=8, algorithm="gps", nfma=2),
    AccumulatorConfig(in_format="e2m1", k=16, nfma=8, neab=4, scale_format="ue4m3",
                      scale_block=8, product_normalisation="normalised"),
    AccumulatorConfig(in_format="e2m1", k=32, b_format="e2m3", algorithm="gdfs", nfma=8,
                      neab=12, scale_format="ue8m0", scale_block=16, final_rounding="rne",
                      zero_sign="positive"),
]


@pytest.mark.parametrize("cfg", HAND_MADE, ids=lambda c: c.describe())
def test_random_rows_hand_made(cfg) -> None:
    a, b, c = random_rows(cfg, 60, seed=2)
    scales = random_scales(cfg, 60, seed=2)
    assert mismatches(cfg, a, b, c, scales=scales) == []
    # the sparse circuits synthesis builds (constant +0 entries dropped) agree too
    assert mismatches(cfg, a, b, c, support=(0, cfg.k - 1), scales=scales) == []


def test_unsigned_operand_is_rejected_clearly() -> None:
    cfg = AccumulatorConfig(in_format="ue4m3", k=4)
    with pytest.raises(NotEncodable, match="unsigned format ue4m3"):
        check_encodable(cfg)


def test_exhaustive_e2m1_k2() -> None:
    cfg = AccumulatorConfig(in_format="e2m1", k=2, nfma=1, neab=-20, final_rounding="rne")
    a, b, c = exhaustive_rows(cfg, [0x3F800000])
    rows = range(0, a.shape[0], 7)  # every seventh of the 65536 rows in the default run
    assert mismatches(cfg, a[rows], b[rows], c[rows], limit=3) == []


@pytest.mark.slow
@pytest.mark.parametrize("k,fmt", [(2, "e2m1"), (1, "e2m3")])
def test_exhaustive_small(k: int, fmt: str) -> None:
    cfg = AccumulatorConfig(in_format=fmt, k=k, nfma=1 if k == 1 else 2, neab=-20,
                            final_rounding="rne")
    a, b, c = exhaustive_rows(cfg, [0, 0x3F800000, 0xBE000000])
    assert mismatches(cfg, a, b, c, limit=3) == []


@pytest.mark.parametrize("cfg", [
    AccumulatorConfig(in_format="e2m1", k=1, neab=-20, final_rounding="rz"),
    AccumulatorConfig(in_format="e2m1", k=1, neab=-21, final_rounding="rne",
                      align_rounding="rz_sticky"),
    AccumulatorConfig(in_format="e2m1", k=1, neab=-20, flush=("inputs", "output"),
                      c_placement="late"),
], ids=["rz", "rne-sticky", "late-flush"])
def test_unsat_proof_against_the_model_table(cfg) -> None:
    """For every a, b (and a few c), the encoding equals the model's exhaustive table."""
    assert prove_agreement(cfg, [0, 0x3F800000, 0xBF000000, 0x00000001], timeout=60) == "proved"


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [
    AccumulatorConfig(in_format="e2m1", k=2, nfma=2, neab=-20, zero_sign="positive",
                      final_rounding="rne"),
    AccumulatorConfig(in_format="e2m1", k=1, b_format="e3m2", algorithm="fdrda", neab=-20,
                      final_rounding="rne", product_overflow=True, zero_sign="positive"),
    AccumulatorConfig(in_format="e3m2", k=1, b_format="e2m1", nfma=1, neab=-18,
                      zero_sign="positive", flush=("output",), final_rounding="rd"),
], ids=lambda c: c.describe())
def test_exhaustive_new_fields(cfg) -> None:
    """Every a, b pattern (e2m1 x e2m1 with K=2; e2m1 x e3m2 with K=1) with c values of both
    zero signs."""
    a, b, c = exhaustive_rows(cfg, [0, 0x80000000, 0x3F800000, 0xBE000000])
    assert mismatches(cfg, a, b, c, limit=3) == []


@pytest.mark.slow
def test_exhaustive_block_scaled_k2() -> None:
    """e2m1 K=2 with every UE8M0 scale pair near 1 and every a, b."""
    import numpy as np

    cfg = AccumulatorConfig(in_format="e2m1", k=2, nfma=2, neab=-16, scale_format="ue8m0",
                            scale_block=2, zero_sign="positive")
    a, b, c = exhaustive_rows(cfg, [0, 0x3F800000])
    n = a.shape[0]
    for sa_v, sb_v in ((0x7F, 0x7F), (0x80, 0x7D), (0xFF, 0x7F), (0x00, 0xFE)):
        scales = (np.full((n, 1), sa_v, np.uint64), np.full((n, 1), sb_v, np.uint64))
        rows = range(0, n, 5)
        assert mismatches(cfg, a[rows], b[rows], c[rows], limit=3,
                          scales=(scales[0][rows], scales[1][rows])) == []
