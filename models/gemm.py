"""GEMM on a preset: D = alpha*A*B + beta*C by chaining the unit over K.

Two accumulation schemes:

'ab_first' (default)
    The unit accumulates A*B alone, starting from a zero accumulator, chained over K in
    steps of k (each step's output is the next step's c); alpha and beta are applied
    afterwards in binary32: D = fl(fl(alpha * AB) + fl(beta * C)).  This is how a
    GEMM with a separate epilogue runs, and it is the scheme that reproduces the NVIDIA
    values of the [FTTN24] Sec. V porting hazard (0 on V100 and A100, 191.875 on H100) and
    its CPU value 0: the large product 2^20 fixes the alignment exponent of every later
    block, so the small products survive only where the unit keeps enough fraction bits.
    The CDNA2 fp16 presets (GPS, G=4) give 255.875 -- [FTTN24]'s MI100 value; its MI250X
    value 0 comes only from one product per binary32 addition (G=1, e.g. mi250x-fp32-fp32).
'c_first'
    beta*C (rounded to c_format) is the unit's initial accumulator and alpha is folded
    into A (alpha*A must be exact in the input format); D is the last unit output.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .accumulator import evaluate, pack, unit_scales
from .config import AccumulatorConfig
from .errors import InputError
from .formats import Format, get_format

SCHEMES = ("ab_first", "c_first")


def to_bits(values, fmt: Format, what: str, exact: bool = True) -> np.ndarray:
    """Float values -> bit patterns; exactness required unless exact=False (then RNE)."""
    arr = np.asarray(values, dtype=np.float64)
    uniq, inv = np.unique(arr, return_inverse=True)
    table = np.empty(len(uniq), dtype=np.uint64)
    for i, v in enumerate(uniq):
        if np.isnan(v):
            table[i] = fmt.nan_bits()
            continue
        if np.isinf(v):
            table[i] = fmt.inf_bits(int(v < 0))
            continue
        bits = fmt.exact_bits(float(v)) if exact else fmt.from_fraction(Fraction(float(v)))
        if bits is None:
            raise InputError(f"{what}: {float(v)!r} is not representable in {fmt.name}")
        table[i] = bits
    return table[inv].reshape(arr.shape)


def to_values(bits, fmt: Format) -> np.ndarray:
    arr = np.asarray(bits, dtype=np.uint64)
    uniq, inv = np.unique(arr, return_inverse=True)
    table = np.array([fmt.to_float(int(u)) for u in uniq], dtype=np.float64)
    return table[inv].reshape(arr.shape)


def gemm(cfg: AccumulatorConfig, A, B, C=None, alpha: float = 1.0, beta: float = 0.0,
         scheme: str = "ab_first") -> np.ndarray:
    """D = alpha*A*B + beta*C on the unit described by cfg; returns out_format values.

    A (m x K) and B (K x n) must hold values exact in cfg.in_format and b's format, C (m x n)
    is rounded to binary32 (RNE).  K is padded with zero products to a multiple of cfg.k.
    With block scaling every scale factor is 1.
    """
    if scheme not in SCHEMES:
        raise InputError(f"unknown GEMM scheme {scheme!r}; expected one of {SCHEMES}")
    A, B = np.atleast_2d(np.asarray(A, float)), np.atleast_2d(np.asarray(B, float))
    m, K = A.shape
    if B.shape[0] != K:
        raise InputError(f"A is {m}x{K} so B must have {K} rows; got shape {B.shape}")
    n = B.shape[1]
    C = np.zeros((m, n)) if C is None else np.broadcast_to(np.asarray(C, float), (m, n))
    fin, fc, fout = (get_format(cfg.in_format), get_format(cfg.c_format),
                     get_format(cfg.out_format))
    f32 = get_format("binary32")
    k = cfg.k
    pad = (-K) % k
    if scheme == "c_first":
        A = A * alpha
    a_bits = to_bits(np.pad(A, ((0, 0), (0, pad))), fin,
                     "alpha*A (--scheme c_first scales A before the unit)"
                     if scheme == "c_first" else "A")
    b_bits = to_bits(np.pad(B, ((0, pad), (0, 0))), get_format(cfg.b_fmt), "B")
    # one unit row per output element
    rows_a = np.repeat(a_bits, n, axis=0)                   # (m*n, K)
    rows_b = np.tile(b_bits.T, (m, 1))                      # (m*n, K)
    if scheme == "c_first":
        acc = to_bits(to_values(to_bits(beta * C, f32, "beta*C", exact=False), f32),
                      fc, "beta*C", exact=False).reshape(-1)
    else:
        acc = np.full(m * n, fc.zero_bits(0), dtype=np.uint64)
    acc_fmt = fc
    for s in range(0, K + pad, k):
        if acc_fmt is not fc:
            acc = to_bits(to_values(acc, acc_fmt), fc, "accumulator", exact=False)
        ra, rb = rows_a[:, s:s + k], rows_b[:, s:s + k]
        if cfg.scales:  # unit scale factors, packed after the k values
            ra, rb = pack(cfg, ra, rb, *unit_scales(cfg, ra.shape[0]))
        acc = evaluate(cfg, ra, rb, acc)
        acc_fmt = fout
    D = to_values(acc, acc_fmt).reshape(m, n)
    if scheme == "c_first":
        return D
    ab = to_values(to_bits(alpha * D, f32, "alpha*AB", exact=False), f32)
    bc = to_values(to_bits(beta * C, f32, "beta*C", exact=False), f32)
    return to_values(to_bits(ab + bc, f32, "D", exact=False), f32)
