"""Rows (hex) that pin each hardware rule: zero signs, DMMA NaN payloads, mixed fp8, the
FDRDA order of special values and block scaling.  Each row is checked on the reference, the
numpy model and the z3 encoding; and against the other setting of the field, to show the row
decides it.

Expected outputs: measured on an H100 (shared/hwdata/H100-ptx) for the DMMA and mixed fp8
rows (copied from that recording); the zero-sign rows follow the measured rule (every zero
result of HMMA/HGMMA/QGMMA is +0; DMMA follows IEEE 754); the FDRDA rows follow
[XWYY25] Sec. IV-F steps 1-3; the block-scaling rows [XWYY25] Sec. IV-C "Scale factor" and
IV-E (GDFS), worked by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from mmaprobe.models import evaluate, reference_dot
from mmaprobe.models.presets import get_preset
from mmaprobe.smt.agree import Evaluator


def _row(text: str, k: int):
    v = [int(x, 16) for x in text.split()]
    assert len(v) == 2 * k + 1, (len(v), k)
    return v[:k], v[k:2 * k], v[2 * k]


def _d(cfg, a, b, c, scales=None) -> int:
    """d on the reference, checked equal on the numpy model and the z3 encoding."""
    ref = reference_dot(cfg, a, b, c, None, *(scales or ()))
    sc = () if scales is None else tuple(np.array([s], np.uint64) for s in scales)
    fast = int(evaluate(cfg, np.array([a], np.uint64), np.array([b], np.uint64),
                        np.array([c], np.uint64), *sc)[0])
    assert fast == ref, f"model {fast:#x} != reference {ref:#x}"
    z = Evaluator(cfg)(a, b, c, scales)
    assert z == ref, f"z3 {z:#x} != reference {ref:#x}"
    return ref


def _pad(k, a, b, c):
    """a, b given for their first entries; the rest +0."""
    return " ".join([*a, *["0"] * (k - len(a)), *b, *["0"] * (k - len(b)), c])


# (preset, row, d with the preset's rule, d with the other rule (zero_sign='ieee'))
ZERO_ROWS = [
    # every product -0 and c = -0: IEEE says -0, the H100 returns +0
    ("h100-fp16-fp32", _pad(16, ["8000"] * 16, [], "80000000"), 0x0, 0x80000000),
    ("h100-tf32-fp32", _pad(4, ["80000000"] * 4, [], "80000000"), 0x0, 0x80000000),
    ("h100-e4m3-fp32", _pad(32, ["80"] * 32, [], "80000000"), 0x0, 0x80000000),
    ("h100-e4m3-fp16", _pad(32, ["80"] * 32, [], "8000"), 0x0, 0x8000),
    ("h100-fp16-fp16", _pad(16, ["8000"] * 16, [], "8000"), 0x0, 0x8000),
    # a non-zero sum below the output's range: RZ (fp32) / RNE (fp16) give the sign of the
    # exact sum under IEEE, +0 on the H100
    ("h100-bf16-fp32", _pad(16, ["8001"], ["0001"], "0"), 0x0, 0x80000000),   # -2^-266
    ("h100-bf16-fp32-k8", _pad(8, ["8001"], ["0001"], "0"), 0x0, 0x80000000),
    ("h100-tf32-fp32-k8", _pad(8, ["80002000"], ["00002000"], "0"), 0x0, 0x80000000),
    ("h100-fp16-fp16", _pad(16, ["8001"], ["0001"], "0"), 0x0, 0x8000),       # -2^-48
    ("h100-fp16-fp16-k8", _pad(8, ["8001"], ["0001"], "0"), 0x0, 0x8000),
    ("h100-e5m2-fp16", _pad(32, ["81"], ["01"], "0"), 0x0, 0x8000),           # -2^-32
    # mma.sync fp8 -> fp16: the second block (products 2,3,6,7,...) rounds -2^-32 to a
    # zero; +0 on the H100, then +0 + (-0) = +0 by the late IEEE addition of c
    ("h100-e5m2-fp16-mma", _pad(32, ["0", "0", "81"], ["0", "0", "01"], "8000"), 0x0, 0x8000),
]

# rows where both rules agree (IEEE operations)
ZERO_ROWS_SAME = [
    # DMMA: IEEE FMAs, all -0 gives -0 (measured on an H100)
    ("h100-fp64-fp64", _pad(4, ["8000000000000000"] * 4, [], "8000000000000000"),
     0x8000000000000000),
    # mma.sync fp8 -> fp32: the blocks start from +0, so c = -0 gives +0 either way
    ("h100-e4m3-fp32-mma", _pad(32, ["80"] * 32, [], "80000000"), 0x0),
]


@pytest.mark.parametrize("name,row,want,ieee", ZERO_ROWS, ids=[r[0] for r in ZERO_ROWS])
def test_zero_sign_positive(name, row, want, ieee):
    cfg = get_preset(name).config
    assert cfg.zero_sign == "positive"
    a, b, c = _row(row, cfg.k)
    assert _d(cfg, a, b, c) == want
    assert _d(cfg.replace(zero_sign="ieee"), a, b, c) == ieee


@pytest.mark.parametrize("name,row,want", ZERO_ROWS_SAME,
                         ids=[r[0] for r in ZERO_ROWS_SAME])
def test_zero_sign_ieee_operations(name, row, want):
    cfg = get_preset(name).config
    a, b, c = _row(row, cfg.k)
    assert _d(cfg, a, b, c) == want


# DMMA rows from the H100 recording (a0..a3 b0..b3 c d): one per NaN rule
DMMA_ROWS = {
    # a signalling NaN in b3 (sign set): quietened, sign and payload kept
    "snan quietened": "bf99a5ba0fdd3df1 53aca8616bebfa7d f4d5fdafc4401c14 e446052fde406910 "
                      "3d8cbcfdd9ae8eeb 6824bc174aeaa0ac 9f8da391e8aef54b fff2e6592b197261 "
                      "3997e07a9bb25651 fffae6592b197261",
    # b0 and c NaN: b_k wins over the accumulator
    "b before acc": "3ff2a875995b1b80 3fe4e619dc0fd7e9 bf98b91a7123c711 3fe5636099866881 "
                    "7ffce775c5bb9aa4 bfb807c8885201c3 bfeeab15a19bd874 bfe6c9dd2f02b6ee "
                    "fffd077214f67f67 7ffce775c5bb9aa4",
    # accumulator (from b0) and a3 NaN: the accumulator wins over a_k
    "acc before a": "3f5427a31c1ffc58 3fd31ea59a5b303e bfd18b7980d81558 fff8613082e9f5b8 "
                    "fffde21bc79301bb 3fd79baeefa04d9a 3fe5391dcee20dd6 bfd30c2be951fabc "
                    "3ffe8c9553a0d841 fffde21bc79301bb",
    # a1 and b1 NaN: b_k wins over a_k
    "b before a": "bfdd19537e309692 fffe9d29b97cc4fb 3faecb246c7071e5 3ff571858a941e07 "
                  "3fe4c5e8ee2fc246 fffd972e03ade538 bfe76b81eba227da bffccec9f9d771d6 "
                  "3fdf3b982df50dbf fffd972e03ade538",
    # a later b_k NaN replaces an earlier NaN accumulator (b2 over c and a0)
    "b over everything": "7ff33115e18dc574 3fed7bf931956436 fff4f6e1effa1eaa "
                         "7ff02c3c7a17323b bfca9ba0f6e5b6da bfe950e29f79efc7 "
                         "7ffaa6dcd0a330be 3ff68abf19125f97 7ffe3c7ff703a038 "
                         "7ffaa6dcd0a330be",
    # 0 x inf: the default NaN with the sign bit set
    "0 x inf": "3ff05e507f1644f6 bfc2242379a86c81 fff0000000000000 3f92645ca33ba426 "
               "0000000000000000 3fe37e20c552e30d 0000000000000000 bfe69ae151f3a883 "
               "bff423473aa7d544 fff8000000000000",
    # -inf + inf: the same
    "inf - inf": "fff0000000000000 7ff0000000000000 bfd5658e80fb4f6c 3fe9a50e25b7ba06 "
                 "3ff20260ef7c6982 3fd8fba9becefbce bff43e7eed4e706b bfe580d944cd716f "
                 "bfc0f6adb186716c fff8000000000000",
}


@pytest.mark.parametrize("what", list(DMMA_ROWS))
def test_dmma_nan_propagation(what):
    cfg = get_preset("h100-fp64-fp64").config
    assert cfg.nan == "propagate"
    v = [int(x, 16) for x in DMMA_ROWS[what].split()]
    a, b, c, d = v[:4], v[4:8], v[8], v[9]
    assert _d(cfg, a, b, c) == d
    assert _d(cfg.replace(nan="ieee"), a, b, c) == 0x7FF8000000000000  # the old model


# mixed fp8, the first rows of the H100 recording (a x32, b x32, c, d)
MIXED_ROWS = {
    "h100-e4m3xe5m2-fp32-mma": (
        "2f 41 89 39 18 b8 3a b1 36 13 ba 3e b3 c1 bd b8 be 3b 31 2f 2b b9 b2 28 3a 27 03 b8 "
        "b8 b2 ad 28 ba b4 38 3f b9 bc be bb 27 39 b6 3d b5 bc ac bc bc 34 be b4 b8 3a b9 3c "
        "30 a4 3f 3e b9 26 c1 40", "mma_e4m3e5m2_f32_k32"),
    "h100-e5m2xe4m3-fp32-mma": (
        "ba b7 3d b6 3c ae bd 37 b3 be 3e b6 3e 2f 39 bb a9 37 39 c0 b8 3b 3d b8 c0 bb c1 42 "
        "40 b3 b8 be 31 b1 c3 39 bb 1d 98 16 31 2e 3d bb 3d b6 b7 1d bb c1 1c a7 30 bb ba 10 "
        "a8 29 a8 ab 3e a6 b8 b4", "mma_e5m2e4m3_f32_k32"),
}


@pytest.mark.parametrize("name", list(MIXED_ROWS))
def test_mixed_fp8_first_recorded_row(name, hwdata):
    ab, stem = MIXED_ROWS[name]
    lines = (hwdata / "H100-ptx" / f"{stem}.txt").read_text().splitlines()
    v = [int(x, 16) for x in lines[2].split()]
    assert v[:64] == [int(x, 16) for x in ab.split()]
    cfg = get_preset(name).config
    assert _d(cfg, v[:32], v[32:64], v[64]) == v[65]


# CDNA3 FDRDA ([XWYY25] Sec. IV-F): step 1 (input infinities/NaN) before step 2 (products
# that overflow), so an input infinity beats an overflowing product of the other sign.
FDRDA_ROWS = [
    # c = +inf, p0 = -2 x 2^127 = -2^128 overflows: +inf (the model said NaN)
    ("mi300x-bf16-fp32", _pad(8, ["c000"], ["7f00"], "7f800000"), 0x7F800000),
    # a0 = +inf input, p1 = -2^128 overflows, c = 0: +inf
    ("mi300x-bf16-fp32", _pad(8, ["7f80", "c000"], ["3f80", "7f00"], "0"), 0x7F800000),
    # no input special: overflows of both signs give NaN, one sign its infinity
    ("mi300x-bf16-fp32", _pad(8, ["4000", "c000"], ["7f00", "7f00"], "3f800000"),
     0x7FC00000),
    ("mi300x-bf16-fp32", _pad(8, ["c000"], ["7f00"], "3f800000"), 0xFF800000),
    # tf32 (xf32): c = -inf, p0 = +2^128: -inf
    ("mi300x-xf32-fp32", _pad(4, ["40000000"], ["7f000000"], "ff800000"), 0xFF800000),
    # CoFDRDA: block 0 overflows to +inf, block 1's overflow of the other sign does not
    # count against that accumulator: +inf
    ("mi300x-bf16-fp32-k16", _pad(16, ["4000", "0", "0", "0", "0", "0", "0", "0", "c000"],
                                  ["7f00", "0", "0", "0", "0", "0", "0", "0", "7f00"], "0"),
     0x7F800000),
]


@pytest.mark.parametrize("name,row,want", FDRDA_ROWS)
def test_fdrda_input_specials_before_product_overflow(name, row, want):
    cfg = get_preset(name).config
    a, b, c = _row(row, cfg.k)
    assert _d(cfg, a, b, c) == want


def test_mixed_fp8_wgmma_decodes_b_as_e5m2(hwdata):
    """wgmma e4m3 x e5m2: b decoded as e4m3 gives other outputs on the recording."""
    lines = (hwdata / "H100-ptx" / "wgmma_e4m3e5m2_f32_k32.txt").read_text().splitlines()
    rows = np.array([[int(x, 16) for x in ln.split()] for ln in lines[2:] if ln.strip()],
                    dtype=np.uint64)
    cfg = get_preset("h100-e4m3xe5m2-fp32").config
    a, b, c, d = rows[:, :32], rows[:, 32:64], rows[:, 64], rows[:, 65]
    assert (evaluate(cfg, a, b, c) == d).all()
    assert (evaluate(cfg.replace(b_format=None), a, b, c) != d).sum() > 1000


# Block scaling ([XWYY25] Sec. IV-C "Scale factor", IV-E GDFS), worked by hand.
# UE8M0 0x7f = 1, 0x80 = 2, 0x7e = 1/2, 0xff NaN; UE4M3 0x38 = 1, 0x3c = 1.5 (top bit ignored).
def test_mxfp8_scales_multiply_products():
    cfg = get_preset("b200-e4m3-fp32-ue8m0-b32").config
    assert (cfg.scale_format, cfg.scale_block) == ("ue8m0", 32)
    one, two = 0x38, 0x40                                       # e4m3 1.0 and 2.0
    a, b = [one] + [0] * 31, [two] + [0] * 31
    assert _d(cfg, a, b, 0, ([0x7F], [0x7F])) == 0x40000000     # 1 x 2 = 2
    assert _d(cfg, a, b, 0, ([0x80], [0x7E])) == 0x40000000     # x 2 x 1/2
    assert _d(cfg, a, b, 0, ([0x81], [0x7F])) == 0x41000000     # x 4: 8
    assert _d(cfg, a, b, 0x3F800000, ([0xFF], [0x7F])) == 0x7FFFFFFF  # NaN scale
    # the scale exponents align the product: 2 x 2^-40 vanishes beside c = 1 (F = 25)
    assert _d(cfg, a, b, 0x3F800000, ([0x7F - 40], [0x7F])) == 0x3F800000


def test_nvfp4_gdfs_groups_and_scales():
    cfg = get_preset("b200-e2m1-fp32-ue4m3-b16-k64").config
    assert cfg.algorithm == "gdfs" and cfg.frac_bits == 35 and cfg.nfma == 16
    # e2m1: 0x2 = 1.0, 0x4 = 2.0, 0x7 = 6.0; 0xA = -1.0
    a = [0x2] * 64
    b = [0x4] + [0] * 15 + [0x7] + [0] * 47                    # 2 in group 0, 6 in group 1
    scales = ([0x38, 0x3C, 0x38, 0x38], [0x38, 0xB8, 0x38, 0x38])  # group 1 x 1.5 x 1
    assert _d(cfg, a, b, 0, scales) == 0x41300000              # 2 + 6 x 1.5 = 11
    # a zero scale removes its group; a NaN scale (0x7f) makes the result NaN
    assert _d(cfg, a, b, 0, ([0x38, 0x00, 0x38, 0x38], scales[1])) == 0x40000000
    assert _d(cfg, a, b, 0, ([0x38, 0x7F, 0x38, 0x38], scales[1])) == 0x7FFFFFFF
    # c = -inf decides the result (step 1)
    assert _d(cfg, a, b, 0xFF800000, scales) == 0xFF800000


def test_gdfs_group_exponent_counts_when_its_sum_is_zero():
    """Step 5 aligns at max{e_c, e_0..e_3}: a group whose sum is 0 but whose scale factors
    are large still sets the alignment exponent, truncating the others ([XWYY25] IV-E)."""
    cfg = get_preset("b200-e2m1-fp32-ue8m0-b32-k64").config
    a = [0x2] * 64                                              # 1.0
    b = [0x1] + [0] * 63                                        # 0.5 in group 0, others 0
    base = [0x7F, 0x7F]
    tiny = 0x7F - 30                                            # group 0 scaled by 2^-30
    # block 1 (groups 2, 3) scaled by 2^20 but all zero: 0.5 x 2^-30 sits 51 bits below
    # 2^20, beyond F = 35: truncated to +0
    assert _d(cfg, a, b, 0, ([tiny, 0x7F + 20], base)) == 0
    # the same with block 1 at scale 1: 2^-31 exactly
    assert _d(cfg, a, b, 0, ([tiny, 0x7F], base)) == 0x30000000
