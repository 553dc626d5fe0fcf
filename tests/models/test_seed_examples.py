"""Every worked example of the seeds, with the paper's numbers."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

from mmaprobe.models.gemm import gemm
from mmaprobe.models.presets import get_preset
from mmaprobe.vectors.cmd_models import hazard_matrices

from helpers import run_row, value_of


def p2(e: int) -> F:
    return F(2) ** e


# -- [KM25] (Khattak & Mikaitis) -------------------------------------------------------

def test_000_v100_denormalised_products():
    # Sec. IV-A1: c=0, p1=2.25, p2=p3=2^-23; a1=b1=1.5 gives 2.25+2^-22, a1=1,b1=2.25 gives 2.25
    small = ([p2(-12), p2(-12)], [p2(-11), p2(-11)])
    assert value_of("v100-fp16-fp32", [1.5] + small[0], [1.5] + small[1]) == F(9, 4) + p2(-22)
    assert value_of("v100-fp16-fp32", [1] + small[0], [2.25] + small[1]) == F(9, 4)
    # c=2.25 with p1=0: d = c
    assert value_of("v100-fp16-fp32", [0] + small[0], [0] + small[1], 2.25) == F(9, 4)


def test_000_a100_denormalised_products():
    # Sec. IV-A2: c=0, p1=2.25 (1.5*1.5), p2=2^-23, p3=p4=2^-24 -> 2.25+2^-22
    a = [1.5, p2(-12), p2(-12), p2(-12)]
    b = [1.5, p2(-11), p2(-12), p2(-12)]
    assert value_of("a100-fp16-fp32", a, b) == F(9, 4) + p2(-22)


def test_000_h100_denormalised_products():
    # Sec. IV-A5: p1=2.25, p2=2^-23+2^-24+2^-25, p3=2^-25 -> 2.25+2^-22
    a = [1.5, F(7, 4) * p2(-12), p2(-12)]
    b = [1.5, p2(-11), p2(-13)]
    assert value_of("h100-fp16-fp32", a, b) == F(9, 4) + p2(-22)
    # with normalised products the largest product's exponent is 1 and the rest is lost
    cfg = get_preset("h100-fp16-fp32").config.replace(product_normalisation="normalised")
    assert value_of(cfg, a, b) == F(9, 4)


def test_000_ada_fp8_thirteen_fraction_bits():
    # Sec. IV-A4: p1=1, p2=p3=2^(-23-neab); at neab=-10, d = 1 + 2^-12 (13 fraction bits)
    a, b = [1, p2(-7), p2(-7)], [1, p2(-6), p2(-6)]
    assert value_of("l40s-e4m3-fp32", a, b) == 1 + p2(-12)
    # one step further (neab=-11) the small products are lost
    a, b = [1, p2(-8), p2(-8)], [1, p2(-6), p2(-6)]
    assert value_of("l40s-e4m3-fp32", a, b) == 1
    # c is added early: c=1, p1=p2=2^-14 gives d=1 in fp32 output mode
    assert value_of("l40s-e4m3-fp32", [p2(-7), p2(-7)], [p2(-7), p2(-7)], 1) == 1


@pytest.mark.parametrize("pos", range(2, 32))
def test_000_h100_fp8_mma_interleaved_pairs(pos):
    # Sec. IV-A5: p1=1, p2=2^-24, then 2^-24 at position pos: same group -> 1+2^-23, else 1
    a = [0] * 32
    b = [0] * 32
    a[0], b[0] = 1, 1
    a[1], b[1] = p2(-8), p2(-16)
    a[pos], b[pos] = p2(-8), p2(-16)
    same_group = (pos // 2) % 2 == 0
    expect = 1 + p2(-23) if same_group else 1
    assert value_of("h100-e5m2-fp32-mma", a, b) == expect
    # without interleaving the first 16 positions would all be in p1's group
    plain = get_preset("h100-e5m2-fp32-mma").config.replace(
        interleave="none", c_placement="early", nfma=16)
    assert value_of(plain, a, b) == (1 + p2(-23) if pos < 16 else 1)


def test_000_fp64_sequential_fma_order():
    # Sec. IV-A2: permutations of 1, 2^-53, 2^-53 over c, p1, p2: only c=p1=2^-53, p2=1
    # gives 1+2^-52; every other permutation returns 1 (RNE)
    vals = [F(1), p2(-53), p2(-53)]
    for perm in set(itertools.permutations(vals)):
        c, x1, x2 = perm
        d = value_of("a100-fp64-fp64", [x1, x2], [1, 1], c)
        expect = 1 + p2(-52) if (c, x1, x2) == (p2(-53), p2(-53), 1) else 1
        assert d == expect, perm


# -- [FHMP21] (Fasi et al.) ------------------------------------------------------------------

V100, V100H = "v100-fp16-fp32", "v100-fp16-fp16"


def test_001_subnormals():
    for cfg in (V100, V100H):
        assert value_of(cfg, [p2(-24)], [4]) == p2(-22)          # subnormal input
        assert value_of(cfg, [p2(-14)], [F(1, 2)]) == p2(-15)    # subnormal from normals
        assert value_of(cfg, [p2(-14)], [1], -p2(-15)) == p2(-15)
    assert value_of(V100, [], [], p2(-149)) == p2(-149)          # binary32 subnormal c
    # b11 = 2^-23+2^-24 (subnormal) added to 2: RZ in the unit gives 2
    assert value_of(V100, [1, 1], [p2(-23) + p2(-24), 2]) == 2


def test_001_products_exact():
    x = 1 - p2(-11)
    assert value_of(V100, [x] * 4, [x] * 4) == 4 * (1 - p2(-10) + p2(-22))
    # the same holds with binary16 c and d
    assert value_of(V100H, [x, x], [x, p2(-11)]) == 1 - p2(-10) + p2(-11)


def test_001_rounding_modes():
    assert value_of(V100, [1, 1], [2, p2(-23) + p2(-24)]) == 2
    assert value_of(V100, [1, 1], [-2, -(p2(-23) + p2(-24))]) == -2
    # binary16 output rounds to nearest: 2^-25+2^-26 -> 2^-24
    assert value_of(V100H, [p2(-24), p2(-24)], [F(1, 2), F(1, 4)]) == p2(-24)


def test_001_no_guard_digit_and_no_normalisation():
    assert value_of(V100, [1], [1], -1 + p2(-24)) == p2(-23)
    # partial sums are not normalised: c=1-2^-24 plus four 2^-24 gives 1+2^-23 ...
    four = ([1] * 4, [p2(-24)] * 4)
    assert value_of(V100, *four, 1 - p2(-24)) == 1 + p2(-23)
    # ... while c=1 gives 1: the dot product is not monotonic
    assert value_of(V100, *four, 1) == 1
    # subtraction: c=-1+2^-24 with products 1 and -2^-24 gives 2^-23
    assert value_of(V100, [1, 1], [1, -p2(-24)], -1 + p2(-24)) == p2(-23)
    # five cases with one addend 1 and the rest 2^-24 all return 1
    for pos in range(5):
        terms = [p2(-24)] * 5
        terms[pos] = F(1)
        assert value_of(V100, [1] * 4, terms[:4], terms[4]) == 1


def test_001_carry_bits():
    c = 1 + p2(-22) + p2(-23)
    for perm in set(itertools.permutations([1, 1, 1, p2(-23)])):
        assert value_of(V100, [1] * 4, list(perm), c) == 4 + p2(-21)
    # c=1.875 plus products 1, 1.5, 1.75, 1.875 returns 8 (three carry bits) ...
    b = [1, F(3, 2), F(7, 4), F(15, 8)]
    assert value_of(V100, [1] * 4, b, F(15, 8)) == 8
    # ... and an adder with too few carry bits wraps to 0, as the paper says
    few = get_preset(V100).config.replace(carry_bits=1)
    assert value_of(few, [1] * 4, b, F(15, 8)) == 0


# -- [XWYY25] (MMA-Sim) -------------------------------------------------------------------------

def test_002_cdna3_round_down_example():
    # Sec. VI-C(a): 2048*2048 - 2048*2048 - 0.000001 gives -0.25 on CDNA3 ...
    from mmaprobe.models import get_format

    c = get_format("binary32").to_fraction(get_format("binary32").from_fraction(F(-1, 10**6)))
    a, b = [2048, 2048], [2048, -2048]
    assert value_of("mi300x-fp16-fp32", a, b, c) == F(-1, 4)
    # ... and 0.0 with round-toward-zero alignment (the hypothetical _rz instruction)
    rz = get_preset("mi300x-fp16-fp32").config.replace(algorithm="fused", c_placement="early",
                                                       final_rounding="rne")
    assert value_of(rz, a, b, c) == 0


def test_002_tf32_low_bits_ignored():
    # Step 0: the 13 low bits of a TF32 operand are zero, so 0x7F800001 (NaN) becomes +inf
    d = run_row("a100-tf32-fp32", ["7f800001"], ["3f800000"])
    assert d == 0x7F800000


def test_002_canonical_nan_and_infinities():
    assert run_row("h100-fp16-fp32", ["7c00"], ["0000"]) == 0x7FFFFFFF          # inf * 0
    assert run_row("h100-fp16-fp32", ["7c00", "fc00"], ["3c00", "3c00"]) == 0x7FFFFFFF
    assert run_row("h100-fp16-fp16", ["7c00"], ["3c00"]) == 0x7C00
    assert run_row("h100-fp16-fp16", ["7e00"], ["3c00"]) == 0x7FFF


# -- [FTTN24] (FTTN) ---------------------------------------------------------------------------

@pytest.mark.parametrize("preset,expected", [
    ("v100-fp16-fp32", 0.0), ("a100-fp16-fp32", 0.0), ("h100-fp16-fp32", 191.875),
    # CDNA2 GPS (G=4) gives [FTTN24]'s MI100 value; its MI250X 0 needs G=1 (fp32 MFMA, SFMA)
    pytest.param("mi250x-fp16-fp32", 255.875, marks=pytest.mark.slow),
    pytest.param("mi250x-fp32-fp32", 0.0, marks=pytest.mark.slow)])
def test_004_porting_hazard(preset, expected):
    # Sec. V: m=n=k=8192, D = -A*B + C; every D_ij equals the one computed here
    A, B, C = hazard_matrices()
    D = gemm(get_preset(preset).config, A, B, C, alpha=-1.0, beta=1.0)
    assert float(D[0, 0]) == expected


def test_004_hazard_identical_entries():
    A, B, C = hazard_matrices(1024)
    A2, B2 = np.vstack([A, A]), np.hstack([B, B])
    D = gemm(get_preset("h100-fp16-fp32").config, A2, B2, np.full((2, 2), 2.0**20), -1.0, 1.0)
    assert len(set(D.ravel().tolist())) == 1
