"""The float64 engine of the vectorised model: fused blocks, exactly, at float speed.

Fused blocks with small input formats and a binary32-range accumulator stay in float64
where float64 is provably exact, following [XWYY25] Sec. IV-A (FDA steps 2-5): products of
at most 2 x 13 significand bits are exact; scaling by a power of two is exact (no value
comes near the float64 subnormal range); truncation (trunc/floor/rint) to the alignment
quantum is exact; the aligned integers are below 2**(F + 3) and their sum below 2**53, so
every addition is exact; the final rounding scales the exact sum by a power of two and
rounds it to an integer, which is exact too.  Block scaling on FDA ([XWYY25] Sec. IV-C)
multiplies each product by two scale factors: at most two more 4-bit significands, and
magnitudes that stay within float64's normal range.  CDNA3's FDRDA blocks ([XWYY25] Sec.
IV-F, IV-H) of the same inputs follow the same argument (:func:`run_fdrda`).  Special
values, the late addition of c and the block order are shared with :mod:`.engine_int`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np

from .config import AccumulatorConfig
from .engine_int import DEAD, _apply_specials, _decode, _late_c, in_block_order
from .formats import Format, exact_zero_sign, get_format
from .reference import FDRDA_DOT_BITS as _FDRDA_DOT_BITS
from .reference import GFDRDA_C_RZ_BELOW as _GFDRDA_C_RZ_BELOW

_B32 = get_format("binary32")
#: products (variants x rows x nfma) of one pass of :func:`run_float_variants`: a few
#: megabytes per array, few passes (each pass loops over the blocks in Python)
VARIANT_PRODUCTS = 1 << 18


@functools.lru_cache(maxsize=32)
def _tables(fmt: Format, flush: bool):
    """float64 value and alignment exponent of every pattern (flushed subnormals are +0)."""
    pats = np.arange(1 << (fmt.width - fmt.pad), dtype=np.uint64) << np.uint64(fmt.pad)
    spec, sign, sig, exp = _decode(fmt, pats, flush)
    val = np.ldexp(sig.astype(np.float64), (exp - fmt.t).astype(np.int32))
    val = np.where(sign != 0, -val, val)
    val = np.where(spec == 1, np.where(sign != 0, -np.inf, np.inf), val)
    val = np.where(spec == 2, np.nan, val)
    return val, exp.astype(np.int32)


def _pow2(e) -> np.ndarray:
    """2.0**e for integer arrays e in [-1022, 1023], built from the float64 encoding."""
    return ((e + 1023).astype(np.uint64) << np.uint64(52)).view(np.float64)


def _flog2(v) -> np.ndarray:
    """floor(log2 |v|) for normal float64 v (-1023 for zero)."""
    return ((v.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023


def _acc_float(fmt: Format, bits, flush: bool) -> np.ndarray:
    """float64 values of binary32/binary16/bfloat16 patterns (flushed subnormals are +0)."""
    if fmt.name == "binary32":
        v = bits.astype(np.uint32).view(np.float32).astype(np.float64)
    elif fmt.name == "binary16":
        v = bits.astype(np.uint16).view(np.float16).astype(np.float64)
    else:
        v = (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if flush:
        v = np.where((v != 0) & (np.abs(v) < float(fmt.fmin)), 0.0, v)
    return v


def _float_bits(fmt: Format, v) -> np.ndarray:
    """Patterns of float64 values that fmt represents exactly (or infinities)."""
    if fmt.name == "binary32":
        return v.astype(np.float32).view(np.uint32).astype(np.uint64)
    if fmt.name == "binary16":
        return v.astype(np.float16).view(np.uint16).astype(np.uint64)
    return (v.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint64)


def product_key(cfg: AccumulatorConfig) -> tuple:
    """What the blocks' products depend on besides the rows (see :func:`block_products`)."""
    return ("float", cfg.in_format, cfg.b_fmt, "inputs" in cfg.flush,
            cfg.interleave == "pairs", cfg.nfma, cfg.product_normalisation,
            cfg.scale_format, cfg.scale_block)


def block_products(cfg: AccumulatorConfig, a, b, memo: dict | None = None,
                   scales=None) -> list[tuple]:
    """Per block: the exact products p (n, nfma), their alignment exponents pe, the
    largest exponent of a non-zero product per row (DEAD where none), and per row whether
    any product and whether every product is negative (-0 included: the zero-sign rule's
    inputs, which neither flushing nor overflow changes).

    ``scales`` (block scaling, FDA: [XWYY25] Sec. IV-C): the (n, k / scale_block) scale
    factors of a and b; a product is then a_i b_i S_a S_b, exact in float64 (at most four
    13-bit significands, magnitudes within 2^-300 .. 2^280), aligned at the sum of the four
    exponent fields, as engine_int._products has it.

    ``memo`` (a dict the caller keeps while it evaluates configurations on the same a and
    b) holds the last :func:`product_key`'s blocks: evaluating configurations in order of
    that key computes each block's products once.
    """
    key = product_key(cfg)
    if memo is not None and memo.get("key") == key:
        return memo["blocks"]
    fin, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    val, ex = _tables(fin, "inputs" in cfg.flush)
    valb, exb = (val, ex) if fb is fin else _tables(fb, "inputs" in cfg.flush)
    a, b = in_block_order(cfg, a, b)
    ia = (a >> np.uint64(fin.pad)).astype(np.intp) if fin.pad else a.astype(np.intp)
    ib = (b >> np.uint64(fb.pad)).astype(np.intp) if fb.pad else b.astype(np.intp)
    if scales is not None:
        # one column per product (interleave is 'none' with scales)
        vals, exs = _tables(get_format(cfg.scale_format), False)
        sfa, sfb = (np.repeat(x.astype(np.intp), cfg.scale_block, axis=1) for x in scales)
    n = cfg.nfma
    blocks = []
    with np.errstate(invalid="ignore", over="ignore"):
        for blk in range(cfg.blocks):
            sa, sb = ia[:, blk * n:(blk + 1) * n], ib[:, blk * n:(blk + 1) * n]
            p = val[sa] * valb[sb]
            if scales is not None:
                ta, tb = sfa[:, blk * n:(blk + 1) * n], sfb[:, blk * n:(blk + 1) * n]
                p = p * vals[ta] * vals[tb]
            if cfg.product_normalisation == "normalised":
                pe = _flog2(p)
            else:
                pe = ex[sa] + exb[sb]
                if scales is not None:
                    pe = pe + exs[ta] + exs[tb]
            emax = np.where(p != 0, pe, DEAD).max(1)
            neg = np.signbit(p)
            blk_data = (p, pe, emax, neg.any(1), neg.all(1))
            for x in blk_data:
                x.flags.writeable = False  # shared by the configurations of one memo
            blocks.append(blk_data)
    if memo is not None:
        memo.clear()
        memo.update(key=key, blocks=blocks)
    return blocks


def run_float(cfg: AccumulatorConfig, a, b, c, scales=None,
              memo: dict | None = None) -> np.ndarray:
    """Fused blocks (FDA/CoFDA) in float64, exact by the module docstring's argument
    (``scales`` and ``memo``: see :func:`block_products`)."""
    blocks = block_products(cfg, a, b, memo, scales)
    return _chain(cfg, blocks, np.asarray(c, np.uint64), cfg.frac_bits, cfg.final_rounding)


def variant_key(cfg: AccumulatorConfig) -> tuple:
    """Configurations with one key differ at most in neab and the final rounding:
    :func:`run_float_variants` evaluates them together."""
    return tuple(getattr(cfg, f.name) for f in dataclasses.fields(cfg)
                 if f.name not in ("neab", "final_rounding"))


def run_float_variants(cfgs: Sequence[AccumulatorConfig], a, b, c, scales=None,
                       memo: dict | None = None) -> np.ndarray:
    """(len(cfgs), n): :func:`run_float` of configurations of one :func:`variant_key` at
    once, as (variants, rows) arrays beside one copy of the blocks' products (the loop over
    the blocks, the cost of a chained unit with narrow blocks, runs once for all of them)."""
    # variants of one final rounding together: the rounding works on slices of variants
    order = sorted(range(len(cfgs)), key=lambda i: cfgs[i].final_rounding)
    cfgs = [cfgs[i] for i in order]
    cfg = cfgs[0]
    blocks = block_products(cfg, a, b, memo, scales)
    c = np.asarray(c, np.uint64)
    n, g = len(c), len(cfgs)
    F = np.array([x.frac_bits for x in cfgs])[:, None]  # (variants, 1): one per variant
    modes = [x.final_rounding for x in cfgs]
    mode = (modes[0] if modes[0] == modes[-1] else
            [(md, slice(modes.index(md), len(modes) - modes[::-1].index(md)))
             for md in dict.fromkeys(modes)])
    out = np.empty((g, n), dtype=np.uint64)
    step = max(1, VARIANT_PRODUCTS // (g * cfg.nfma))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        part = [tuple(x[lo:hi] for x in blk) for blk in blocks]
        out[order, lo:hi] = _chain(cfg, part, np.tile(c[lo:hi], (g, 1)), F, mode)
    return out


def _chain(cfg: AccumulatorConfig, blocks: list[tuple], c, F, mode) -> np.ndarray:
    """The blocks' products added to c block by block (c late: after them), each block's
    sum rounded to the output format.  F: the fraction bits, an int, or (variants, 1) for
    variants' c of shape (variants, rows), beside which the blocks' products (rows, nfma)
    broadcast; mode: the final rounding, a name or [(name, slice of variants), ...]."""
    fout = get_format(cfg.out_format)
    amode = cfg.align_rounding
    sticky = amode == "rz_sticky"
    p_out = fout.p if cfg.out_frac_bits is None else cfg.out_frac_bits + 1
    late = cfg.c_placement == "late"
    fc = get_format(cfg.c_format)
    acc, acc_fmt = (np.zeros_like(c), fout) if late else (c, fc)
    with np.errstate(invalid="ignore", over="ignore"):
        for blk, (p, pe, emax, neg_any, neg_all) in enumerate(blocks):
            p_in = p  # the products before overflow: the input specials decide first
            p, emax = _unit_products(cfg, p, pe, emax)
            flush_c = ("inputs" if blk == 0 else "sums") in cfg.flush
            vc = _acc_float(acc_fmt, acc, flush_c)
            ce = np.maximum(_flog2(vc), acc_fmt.emin)
            emax = np.maximum(emax, np.where(vc != 0, ce, DEAD))
            live = emax != DEAD
            # an inf/NaN c or product has exponent 1024 in float64: keep the scale finite
            emax = np.where(live, np.minimum(emax, 900), 0)
            scale = _pow2(F + int(sticky) - emax)
            x = _align(p * scale[..., None], amode)
            xc = _align(vc * scale, amode)
            total = x.sum(-1) + xc
            # any inf/NaN term makes the exact-float sum inf/NaN exactly as FDA step 1 says
            special = ~np.isfinite(total)
            any_special = special.any()
            if any_special:
                special, spec_nan, spec_neg = _special_rows(cfg, total, p_in, vc)
                total = np.where(special, 0.0, total)
            unit = emax - F - int(sticky)
            if cfg.carry_bits is not None:
                limit = _pow2(F + 2 + cfg.carry_bits + int(sticky) + np.zeros_like(emax))
                total = np.where(np.abs(total) < limit, total, np.fmod(total, limit))
            cneg = np.signbit(vc)
            zs = _by_mode(mode, lambda md, *x: exact_zero_sign(md, *x, cfg.zero_sign),
                          live, neg_any | cneg, neg_all & cneg)
            d = _float_round(fout, total, unit, mode, zs, p_out, "output" in cfg.flush,
                             cfg.zero_sign == "positive")
            if any_special:
                d = _apply_specials(cfg, fout, d, spec_nan, special & ~spec_nan, spec_neg)
            acc, acc_fmt = d, fout
    if not late:
        return acc
    return _late_c(cfg, fout, fc, acc.reshape(-1), c.reshape(-1)).reshape(c.shape)


def _by_mode(mode, f, *xs):
    """f(mode, *xs) for a rounding mode's name; for [(name, variants), ...], f(name, ...)
    of each slice of variants (the first axis of xs), concatenated."""
    if isinstance(mode, str):
        return f(mode, *xs)
    return np.concatenate([f(md, *(x[rows] for x in xs)) for md, rows in mode])


def _unit_products(cfg: AccumulatorConfig, p, pe, emax):
    """(p, emax) after the unit's product stages: products of 2^128 or more overflow to
    infinity (product_overflow) and products below binary32's smallest normal are flushed
    to a signed zero (flush 'products')."""
    if cfg.product_overflow:
        p = np.where(np.abs(p) >= 2.0 ** 128, p * np.inf, p)
    if "products" in cfg.flush:
        p = np.where(np.abs(p) < float(_B32.fmin), p * 0.0, p)
        emax = np.where(p != 0, pe, DEAD).max(1)
    return p, emax


def _align(x, amode: str) -> np.ndarray:
    """Terms already scaled to the alignment quantum (half of it with a sticky bit), rounded
    to integers as the alignment rounding says."""
    if amode == "rz":
        return np.trunc(x)
    if amode == "rd":
        return np.floor(x)
    if amode == "rne":
        return np.rint(x)  # ties to even, like the magnitude
    # x is in units of half the quantum: truncate at the quantum and set the sticky (last)
    # bit when bits were dropped
    return _sticky(x)


def run_fdrda(cfg: AccumulatorConfig, a, b, c, memo: dict | None = None) -> np.ndarray:
    """CDNA3 FDRDA / GFDRDA ([XWYY25] Sec. IV-F and IV-H; engine_int._fdrda_block) in float64.

    Exact for the configurations :func:`accumulator._engine` sends here: products and c
    are exact float64 values; the aligned products are integers below 2^(F + 3) whose sum
    stays below 2^53; flooring the dot product at 2^(e_max - 31) and c at 2^(e_max - F) are
    float floors of values scaled by powers of two within float64's normal range; and the
    two rounded terms, counted in units of the finer of the two quanta, add below 2^53.
    """
    F = cfg.frac_bits
    amode, mode = cfg.align_rounding, cfg.final_rounding
    sticky = int(amode == "rz_sticky")
    p_out = _B32.p if cfg.out_frac_bits is None else cfg.out_frac_bits + 1
    halves = (slice(0, None, 2), slice(1, None, 2)) if cfg.interleave == "even_odd" else None
    acc = c
    with np.errstate(invalid="ignore", over="ignore"):
        for p, pe, emax, neg_any, neg_all in block_products(cfg, a, b, memo):
            p_in = p  # the products before overflow: the input specials decide first
            p, emax = _unit_products(cfg, p, pe, emax)
            vc = _acc_float(_B32, acc, "inputs" in cfg.flush)
            special, spec_nan, spec_neg = _special_rows(cfg, p.sum(1) + vc, p_in, vc)
            any_special = special.any()
            pf = np.where(np.isfinite(p), p, 0.0)
            vcf = np.where(special, 0.0, vc)
            if halves is None:
                dot, e_dot = _fixed_sum(cfg, pf, emax, amode), emax
                dot_unit = e_dot - F - sticky
            else:  # GFDRDA: each half fused alone, both rounded down at the larger one's F
                parts = [(pf[:, h], np.where(pf[:, h] != 0, pe[:, h], DEAD).max(1))
                         for h in halves]
                e_dot = np.maximum(parts[0][1], parts[1][1])
                dot_unit = e_dot - F
                dot = 0.0
                for ph, eh in parts:
                    th = _fixed_sum(cfg, ph, eh, amode)
                    dot = dot + np.floor(th * _pow2(np.where(eh != DEAD, eh - e_dot - sticky,
                                                             0)))
            any_dot = e_dot != DEAD
            live_c = vcf != 0
            ce = np.maximum(_flog2(vcf), _B32.emin)
            e_max = np.maximum(np.where(any_dot, e_dot, DEAD), np.where(live_c, ce, DEAD))
            e_max = np.where(any_dot | live_c, e_max, 0)
            u_dot, u_c = e_max - _FDRDA_DOT_BITS, e_max - F
            unit = np.minimum(u_dot, u_c)
            # the dot product rounded down at 2^u_dot (exact when its unit is coarser)
            dot_r = np.floor(dot * _pow2(np.where(any_dot, dot_unit - u_dot, 0)))
            dot_r = dot_r * _pow2(u_dot - unit)
            # c rounded at 2^u_c: down, or toward zero for GFDRDA when e_c < e_max - 25
            cv = vcf * _pow2(-u_c)
            c_r = np.floor(cv)
            if halves is not None:
                c_r = np.where(live_c & (ce < e_max - _GFDRDA_C_RZ_BELOW), np.trunc(cv), c_r)
            total = dot_r + c_r * _pow2(u_c - unit)
            cneg = np.signbit(vc)
            zs = exact_zero_sign(mode, any_dot | live_c, neg_any | cneg, neg_all & cneg,
                                 cfg.zero_sign)
            d = _float_round(_B32, total, unit, mode, zs, p_out, "output" in cfg.flush,
                             cfg.zero_sign == "positive")
            acc = (_apply_specials(cfg, _B32, d, spec_nan, special & ~spec_nan, spec_neg)
                   if any_special else d)
    return acc


def _special_rows(cfg: AccumulatorConfig, total, p_in, vc):
    """(special, nan, negative): the rows whose sum of terms is infinite or NaN (any inf/NaN
    term makes the float64 sum so, as FDA step 1 says), which of them are NaN, and the sign
    of the others.  With product_overflow, where an input is inf or NaN the overflowing
    products do not count (FDRDA steps 1-3, reference._specials): p_in are the products
    before the overflow stage, vc the accumulator or c."""
    special, nan, neg = ~np.isfinite(total), np.isnan(total), total < 0
    if cfg.product_overflow:
        raw = p_in.sum(1) + vc
        insp = ~np.isfinite(raw)
        nan = np.where(insp, np.isnan(raw), nan)
        neg = np.where(insp, raw < 0, neg)
    return special, nan, neg


def _fixed_sum(cfg: AccumulatorConfig, p, emax, amode: str) -> np.ndarray:
    """The products of a block aligned at emax with F fraction bits (a sticky bit below
    with rz_sticky) and added: the integer total of engine_int._fused_sum, as float64."""
    sticky = int(amode == "rz_sticky")
    live = emax != DEAD
    x = _align(p * _pow2(np.where(live, cfg.frac_bits + sticky - emax, 0))[:, None], amode)
    total = x.sum(1)
    if cfg.carry_bits is not None:
        limit = 2.0 ** (cfg.frac_bits + 2 + cfg.carry_bits + sticky)
        total = np.where(np.abs(total) < limit, total, np.fmod(total, limit))
    return total


def _sticky(x):
    """x in units of half the quantum: 2*trunc(x/2) plus one if anything was dropped."""
    t = np.trunc(x * 0.5) * 2.0
    return np.where(t != x, t + np.copysign(1.0, x), t)


def _round_integer(y, mode: str) -> np.ndarray:
    """The float64 y rounded to an integer with mode."""
    if mode == "rz":
        return np.trunc(y)
    if mode == "rd":
        return np.floor(y)
    if mode == "ru":
        return np.ceil(y)
    if mode == "rne":
        return np.rint(y)
    if mode == "rna":
        t = np.trunc(y)
        return t + np.copysign((np.abs(y - t) >= 0.5).astype(np.float64), y)
    # ro
    t = np.trunc(y)
    m = np.abs(t)
    m = np.where((t != y) & (np.fmod(m, 2.0) == 0), m + 1.0, m)
    return np.copysign(m, y)


def _float_round(fmt: Format, total, unit, mode, zero_sign, p, flush,
                 positive_zero: bool = False) -> np.ndarray:
    """Round the exact float64 integer total * 2**unit to fmt with mode (see _round_bits);
    positive_zero: a non-zero total rounded or flushed to zero gives +0
    (formats.rounded_zero_sign, zero_sign 'positive')."""
    nz = total != 0
    E = _flog2(total) + unit
    Ec = np.maximum(E, fmt.emin)
    qe = Ec - (p - 1)
    y = total * _pow2(np.where(nz, unit - qe, 0))
    r = _by_mode(mode, lambda md, x: _round_integer(x, md), y)
    v = r * _pow2(qe)
    v = np.where(np.abs(v) >= 2.0 ** (fmt.emax + 1), np.copysign(np.inf, total), v)
    zero = 0.0 if positive_zero else np.copysign(0.0, total)
    v = np.where(v == 0, zero, v)
    if flush:
        v = np.where(nz & (E < fmt.emin), zero, v)
    v = np.where(nz, v, np.where(zero_sign, -0.0, 0.0))
    return _float_bits(fmt, v)
