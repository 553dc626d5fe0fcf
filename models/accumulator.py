"""The vectorised accumulator model: d = f(config, a, b, c) over N rows at once.

Two engines implement the arithmetic of :mod:`mmaprobe.models.reference` (the
specification) bit for bit; :func:`evaluate` picks one per configuration and processes the
rows in cache-sized chunks:

* :mod:`.engine_int` (every configuration) keeps significands as signed integers at an
  explicit power-of-two unit, on int64 where a width bound proves it exact and on Python
  integers otherwise;
* :mod:`.engine_float` (fused blocks of small input formats with a binary32-range
  accumulator, and CDNA3's FDRDA blocks of the same inputs) stays in float64 where
  float64 is provably exact.

>>> import numpy as np
>>> from mmaprobe.models.presets import get_preset
>>> cfg = get_preset("v100-fp16-fp32").config          # products 1.5*1.5 + 2^-12*2^-12 ...
>>> a = np.array([[0x3E00, 0x0C00, 0x0C00, 0]], np.uint64)
>>> hex(int(evaluate(cfg, a, a, np.zeros(1, np.uint64))[0]))
'0x40100000'
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from .config import AccumulatorConfig
from .engine_float import product_key, run_fdrda, run_float, run_float_variants, variant_key
from .engine_int import int_dtype, int_product_key, log2ceil, run_int
from .errors import InputError
from .formats import get_format
from .reference import FDRDA_DOT_BITS

#: Rows per chunk: a (chunk, k) float64 array stays within the L2 cache for k <= 32.
CHUNK = 8192


def evaluate(cfg: AccumulatorConfig, a, b, c, scale_a=None, scale_b=None,
             memo: dict | None = None) -> np.ndarray:
    """Output bit patterns (uint64, shape (N,)) for a, b of shape (N, k) and c of shape (N,).

    a holds in_format bit patterns, b b_format (cfg.b_fmt) ones, c c_format ones; with
    block scaling (cfg.scale_format) scale_a and scale_b hold the scale factors, shape
    (N, k / scale_block).  ``memo``: a dict kept by a caller that evaluates many
    configurations on the same a and b, in order of :func:`products_key`, to share their
    products (see ``engine_float.block_products``).
    """
    if cfg.scales and scale_a is None and scale_b is None:
        a, b, scale_a, scale_b = unpack(cfg, a, b)
    a, b, c = _check_shapes(cfg, a, b, c)
    scales = _check_scales(cfg, a.shape[0], scale_a, scale_b)
    run = _engine(cfg)
    out = np.empty(a.shape[0], dtype=np.uint64)
    for lo in range(0, a.shape[0], CHUNK):
        hi = lo + CHUNK
        chunk_memo = None if memo is None else memo.setdefault(lo, {})
        if scales is None:
            out[lo:hi] = run(cfg, a[lo:hi], b[lo:hi], c[lo:hi], memo=chunk_memo)
        elif run is run_float:
            out[lo:hi] = run(cfg, a[lo:hi], b[lo:hi], c[lo:hi],
                             (scales[0][lo:hi], scales[1][lo:hi]), memo=chunk_memo)
        else:
            out[lo:hi] = run_int(cfg, a[lo:hi], b[lo:hi], c[lo:hi],
                                 (scales[0][lo:hi], scales[1][lo:hi]))
    return out


def evaluate_variants(cfgs: Sequence[AccumulatorConfig], a, b, c,
                      memo: dict | None = None) -> np.ndarray:
    """(len(cfgs), N): :func:`evaluate` of each configuration, where all of them have one
    :func:`variants_key` (the float64 engine evaluates them at once), or of one
    configuration of any engine (a group of :func:`variant_groups`).

    >>> import dataclasses
    >>> from mmaprobe.models.presets import get_preset
    >>> rz = get_preset("v100-fp16-fp32").config
    >>> rn = dataclasses.replace(rz, final_rounding="rne", neab=1)
    >>> a = np.array([[0x3FFF, 0x3FFF, 0, 0]] * 2, np.uint64)
    >>> b = np.array([[0x3C00, 0x3C00, 0, 0]] * 2, np.uint64)
    >>> c = np.array([0, 0x34C00000], np.uint64)
    >>> [[hex(int(x)) for x in row] for row in evaluate_variants([rz, rn], a, b, c)]
    [['0x407fe000', '0x407fe001'], ['0x407fe000', '0x407fe002']]
    """
    cfg = cfgs[0]
    if len(cfgs) == 1:
        return evaluate(cfg, a, b, c, memo=memo)[None, :]
    key = variants_key(cfg)
    if key is None or any(variants_key(x) != key for x in cfgs[1:]):
        raise ValueError("evaluate_variants: configurations of different variants_key")
    if cfg.scales:
        a, b, scale_a, scale_b = unpack(cfg, a, b)
    a, b, c = _check_shapes(cfg, a, b, c)
    scales = _check_scales(cfg, a.shape[0], scale_a, scale_b) if cfg.scales else None
    out = np.empty((len(cfgs), a.shape[0]), dtype=np.uint64)
    for lo in range(0, a.shape[0], CHUNK):
        hi = lo + CHUNK
        chunk_memo = None if memo is None else memo.setdefault(lo, {})
        sc = None if scales is None else (scales[0][lo:hi], scales[1][lo:hi])
        out[:, lo:hi] = run_float_variants(cfgs, a[lo:hi], b[lo:hi], c[lo:hi], sc,
                                           memo=chunk_memo)
    return out


def variants_key(cfg: AccumulatorConfig) -> tuple | None:
    """Configurations of the float64 engine (:func:`engine_name`) that differ at most in
    neab and the final rounding share a key, which :func:`evaluate_variants` evaluates at
    once; None for the other engines."""
    return variant_key(cfg) if _engine(cfg) is run_float else None


def variant_groups(cfgs: Sequence[AccumulatorConfig]) -> list[list[int]]:
    """Indices of cfgs by :func:`variants_key` (each group one call of
    :func:`evaluate_variants`), in order of first appearance; the configurations of other
    engines alone.

    >>> import dataclasses
    >>> from mmaprobe.models.presets import get_preset
    >>> rz = get_preset("v100-fp16-fp32").config
    >>> variant_groups([rz, get_preset("mi250x-fp32-fp32").config,
    ...                 dataclasses.replace(rz, neab=2)])
    [[0, 2], [1]]
    """
    groups: dict[object, list[int]] = {}
    for i, cfg in enumerate(cfgs):
        key = variants_key(cfg)
        groups.setdefault(("alone", i) if key is None else key, []).append(i)
    return list(groups.values())


def products_key(cfg: AccumulatorConfig) -> tuple:
    """Configurations with one key compute the same products from the same rows: evaluating
    them one after another with one memo computes those products once."""
    if _engine(cfg) in (run_float, run_fdrda):
        return product_key(cfg)
    if cfg.algorithm in ("fused", "fdrda") and cfg.scale_format is None:
        return int_product_key(cfg)
    return ("other",)


def unpack(cfg: AccumulatorConfig, a, b):
    """(a, b, scale_a, scale_b) of packed rows (cfg.row_width entries: k values, then the
    scale factors); rows of k entries come back as they are, with no scale factors."""
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    if not cfg.scales or a.shape[-1] != cfg.row_width:
        return a, b, None, None
    k = cfg.k
    return a[..., :k], b[..., :k], a[..., k:], b[..., k:]


def pack(cfg: AccumulatorConfig, a, b, scale_a, scale_b):
    """Packed rows (see :func:`unpack`)."""
    if not cfg.scales:
        return np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)
    return (np.concatenate([np.asarray(a, np.uint64), np.asarray(scale_a, np.uint64)], -1),
            np.concatenate([np.asarray(b, np.uint64), np.asarray(scale_b, np.uint64)], -1))


def unit_scales(cfg: AccumulatorConfig, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Scale factors of 1 (the scale format's 1 in every block) for n rows of a block-scaled
    unit, for a and for b; None without block scaling."""
    if not cfg.scales:
        return None
    one = get_format(cfg.scale_format).exact_bits(1)
    s = np.full((n, cfg.scales), one, dtype=np.uint64)
    return s, s.copy()


def _check_scales(cfg: AccumulatorConfig, n: int, scale_a, scale_b):
    if cfg.scale_format is None:
        if scale_a is not None or scale_b is not None:
            raise InputError(f"scale factors given, but {cfg.describe()} has no block scaling")
        return None
    if scale_a is None or scale_b is None:
        raise InputError(f"{cfg.describe()} needs scale factors of a and b "
                         f"(shape (N, {cfg.scales}), {cfg.scale_format})")
    out = []
    width = get_format(cfg.scale_format).width
    for name, x in (("scale_a", scale_a), ("scale_b", scale_b)):
        x = np.asarray(x, dtype=np.uint64)
        if x.ndim == 1 and n == 1:
            x = x[None, :]
        if x.shape != (n, cfg.scales):
            raise InputError(f"{name} must have shape ({n}, {cfg.scales}); got {x.shape}")
        if x.size and int(x.max()) >> width:
            raise InputError(f"{name} holds a bit pattern wider than {width} bits, which is "
                             f"not a {cfg.scale_format} value: {int(x.max()):#x}")
        out.append(x)
    return out[0], out[1]


def engine_name(cfg: AccumulatorConfig) -> str:
    """Which engine evaluates cfg: 'float64', 'int64' or 'object' (for benchmarks)."""
    run = _engine(cfg)
    if run in (run_float, run_fdrda):
        return "float64"
    return "int64" if int_dtype(cfg) is np.int64 else "object"


def _check_shapes(cfg: AccumulatorConfig, a, b, c):
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    c = np.asarray(c, dtype=np.uint64)
    if a.ndim == 1:
        a, b, c = a[None, :], b[None, :], c.reshape(1)
    if a.ndim != 2 or a.shape[1] != cfg.k or b.shape != a.shape:
        packed = f" (or {cfg.row_width} with the scale factors packed)" if cfg.scales else ""
        raise InputError(f"a and b must have shape (N, k={cfg.k}){packed}; got {a.shape} "
                         f"and {b.shape}")
    if c.shape != (a.shape[0],):
        raise InputError(f"c must have shape ({a.shape[0]},); got {c.shape}")
    for name, x, fmt in (("a", a, cfg.in_format), ("b", b, cfg.b_fmt),
                         ("c", c, cfg.c_format)):
        width = get_format(fmt).width
        if x.size and width < 64 and int(x.max()) >> width:
            raise InputError(f"{name} holds a bit pattern wider than {width} bits, which is "
                             f"not a {fmt} value: {int(x.max()):#x}")
    return a, b, c


_FLOAT_ACC = ("binary32", "binary16", "bfloat16")


def _scale_bits(cfg: AccumulatorConfig) -> int:
    """Integer bits a product gains from its scale factors' significands (ue4m3: below 2
    each; ue8m0: none, powers of two)."""
    if cfg.scale_format is None or get_format(cfg.scale_format).p == 1:
        return 0
    return 2


@functools.lru_cache(maxsize=256)
def _engine(cfg: AccumulatorConfig):
    fin, fb = get_format(cfg.in_format), get_format(cfg.b_fmt)
    # block-scaled FDA too: scale factors add at most 2 x 4 significand bits and keep
    # every product within float64's normal range (engine_float.block_products)
    if (cfg.algorithm == "fused"
            and all((f.width <= 16 or f.name == "tf32") and f.p <= 13 for f in (fin, fb))
            and (cfg.c_format in _FLOAT_ACC or cfg.c_placement == "late")
            and cfg.out_format in _FLOAT_ACC
            and cfg.frac_bits + 3 + _scale_bits(cfg) + log2ceil(cfg.nfma + 1) <= 53):
        return run_float
    # FDRDA: the dot product floored at 31 bits below e_max and c at F bits, both counted
    # in units of the finer quantum (engine_float.run_fdrda)
    if (cfg.algorithm == "fdrda"
            and all((f.width <= 16 or f.name == "tf32") and f.p <= 13 for f in (fin, fb))
            and max(cfg.frac_bits, FDRDA_DOT_BITS) + 5 + log2ceil(cfg.nfma + 1) <= 53):
        return run_fdrda
    return run_int


