"""Model-based discrimination: outputs of many configurations on many rows, and row choice.

``outputs_matrix`` evaluates every configuration on every row (one vectorised model call per
configuration over all rows; with ``jobs`` > 1, large matrices are shared out over forked
processes by blocks of configurations).  ``split_scores`` scores every row by how evenly it
splits the current classes (sum of squared class sizes after the split: the number of
ordered configuration pairs the row leaves together), all rows at once with one sort.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from .accumulator import evaluate_variants, products_key, variant_groups
from .config import AccumulatorConfig

_MIX1 = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)

#: (calls x FIXED_ROWS + configurations x rows) x K below which one process is faster than
#: forking workers (about 1 s of model time: forking and gathering cost about 0.5 s)
PARALLEL_WORK = 25_000_000
#: one model call (a configuration, or a float64 configuration's variants together) costs
#: about as much as this many rows besides its rows (its Python-level loop over the blocks)
FIXED_ROWS = 500


def outputs_matrix(configs: Sequence[AccumulatorConfig], a: np.ndarray, b: np.ndarray,
                   c: np.ndarray, progress: Callable[[str], None] | None = None,
                   jobs: int = 1) -> np.ndarray:
    """uint64 array (len(configs), N): output bits of each configuration on each row
    (each distinct row is evaluated once; in up to ``jobs`` processes when the matrix is
    large, with the same result).

    >>> from mmaprobe.models.presets import get_preset
    >>> rz = get_preset("v100-fp16-fp32").config              # truncates
    >>> rn = dataclasses.replace(rz, final_rounding="rne")
    >>> a = np.array([[0x3FFF, 0x3FFF, 0, 0]] * 3, np.uint64)  # 2 * (2 - 2^-10) ...
    >>> b = np.array([[0x3C00, 0x3C00, 0, 0]] * 3, np.uint64)
    >>> c = np.array([0x34C00000, 0, 0x34C00000], np.uint64)   # ... + 1.5 * 2^-22
    >>> [[hex(int(x)) for x in row] for row in outputs_matrix([rz, rn], a, b, c)]
    [['0x407fe001', '0x407fe000', '0x407fe001'], ['0x407fe002', '0x407fe000', '0x407fe002']]
    """
    a, b, c = np.asarray(a, np.uint64), np.asarray(b, np.uint64), np.asarray(c, np.uint64)
    inv = None
    if a.shape[0] > 1:
        rows = np.concatenate([a, b, c.reshape(-1, 1)], axis=1)
        uniq, first, inv = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        if len(uniq) < a.shape[0]:
            a, b, c = a[first], b[first], c[first]
        else:
            inv = None
    groups = variant_groups(configs)
    work = (len(groups) * FIXED_ROWS + len(configs) * a.shape[0]) * a.shape[1]
    if jobs > 1 and len(configs) > 1 and work >= PARALLEL_WORK:
        out = _outputs_parallel(configs, groups, a, b, c, progress, jobs)
    else:
        out = _outputs_block((configs, a, b, c), progress)
    return out if inv is None else out[:, inv]


def _outputs_block(job: tuple, progress: Callable[[str], None] | None = None) -> np.ndarray:
    """Every configuration on the rows, in order of their products (evaluate's memo), the
    float64 engine's variants of one configuration at once (evaluate_variants)."""
    configs, a, b, c = job
    out = np.empty((len(configs), a.shape[0]), dtype=np.uint64)
    memo: dict = {}
    order = sorted(variant_groups(configs), key=lambda g: products_key(configs[g[0]]))
    done = 0
    for group in order:
        if progress and done // 500 != (done + len(group)) // 500:
            progress(f"evaluated {done}/{len(configs)} configurations on {a.shape[0]} rows")
        done += len(group)
        out[group] = evaluate_variants([configs[i] for i in group], a, b, c, memo=memo)
    return out


def _outputs_parallel(configs, groups, a, b, c, progress, jobs: int) -> np.ndarray:
    """outputs_matrix's loop over blocks of configurations in forked processes (blocks of
    interleaved configurations, so that slow engines spread over the workers; a float64
    configuration's variants, one of ``groups``, stay in one block, which evaluates them
    at once)."""
    nblocks = min(len(groups), 4 * jobs)
    blocks: list[list[int]] = [[] for _ in range(nblocks)]
    for n, group in enumerate(groups):
        blocks[n % nblocks] += group
    out = np.empty((len(configs), a.shape[0]), dtype=np.uint64)
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        parts = pool.map(_outputs_block, [([configs[i] for i in blk], a, b, c)
                                          for blk in blocks])
        for n, (blk, part) in enumerate(zip(blocks, parts)):
            out[blk] = part
            if progress:
                progress(f"evaluated {n + 1}/{nblocks} blocks of configurations on "
                         f"{a.shape[0]} rows in {jobs} processes")
    return out


def classes_of(outs: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
    """Class labels (0..m-1) of the configurations (rows of outs) by all their outputs at
    once, refining ``labels`` when given: the same as refining column by column."""
    if outs.shape[1] == 0:
        return np.zeros(outs.shape[0], np.int64) if labels is None else labels
    cols = outs if labels is None else np.concatenate(
        [labels.astype(np.uint64).reshape(-1, 1), outs], axis=1)
    _, inv = np.unique(cols, axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


def row_classes(configs: Sequence[AccumulatorConfig], a: np.ndarray, b: np.ndarray,
                c: np.ndarray, progress: Callable[[str], None] | None = None, jobs: int = 1,
                stages: int = 4) -> np.ndarray:
    """The classes of ``classes_of(outputs_matrix(configs, a, b, c))`` (the same partition,
    labels 0..m-1 numbered otherwise), evaluating each configuration only while it shares
    its class.

    A configuration alone in its class stays alone whatever further rows say.  So one row
    in ``stages`` (spread over the rows' order) is evaluated on every configuration first,
    and the remaining rows only on the configurations still sharing a class: with probe
    vectors, about half a space is alone after the first quarter of its rows.  Two stages,
    not many: one model call has a fixed cost of about a thousand rows' worth.

    >>> from mmaprobe.models.presets import get_preset
    >>> rz = get_preset("v100-fp16-fp32").config
    >>> rn = dataclasses.replace(rz, final_rounding="rne")
    >>> a = np.array([[0x3FFF, 0x3FFF, 0, 0]] * 2, np.uint64)
    >>> b = np.array([[0x3C00, 0x3C00, 0, 0]] * 2, np.uint64)
    >>> c = np.array([0, 0x34C00000], np.uint64)  # the second row tells rz from rne
    >>> row_classes([rz, rn, rz], a, b, c, stages=2).tolist()
    [0, 1, 0]
    """
    a, b, c = np.asarray(a, np.uint64), np.asarray(b, np.uint64), np.asarray(c, np.uint64)
    if len(c) > 1:  # each distinct row once, in the order of first appearance
        first = np.sort(np.unique(np.concatenate([a, b, c.reshape(-1, 1)], axis=1), axis=0,
                                  return_index=True)[1])
        a, b, c = a[first], b[first], c[first]
    labels = np.zeros(len(configs), np.int64)
    spread = np.arange(len(c)) % max(1, stages) == 0
    for rows in (np.flatnonzero(spread), np.flatnonzero(~spread)):
        shared = np.flatnonzero(np.bincount(labels)[labels] > 1)
        if not len(shared) or not len(rows):
            continue
        if progress:
            progress(f"partition: {len(rows)} rows on the {len(shared)} of {len(configs)} "
                     f"configurations that share a class")
        outs = outputs_matrix([configs[i] for i in shared], a[rows], b[rows], c[rows],
                              progress, jobs)
        labels = labels.copy()
        labels[shared] = len(configs) + classes_of(outs, labels[shared])
        labels = np.unique(labels, return_inverse=True)[1].reshape(-1)
    return labels


def _keys(labels: np.ndarray, outs: np.ndarray) -> np.ndarray:
    """64-bit hashes of (class label, output) per configuration and row: (C, N)."""
    with np.errstate(over="ignore"):
        lab = labels.astype(np.uint64)[:, None] * _MIX1
        return ((outs ^ lab) * _MIX2) ^ (outs >> np.uint64(29))


def split_scores(labels: np.ndarray, outs: np.ndarray) -> np.ndarray:
    """For each row (column of outs): sum over the refined classes of size**2 (lower is better)."""
    C, N = outs.shape
    if N == 0:
        return np.zeros(0)
    keys = np.sort(_keys(labels, outs), axis=0)
    marks = np.ones((N, C + 1), dtype=bool)
    marks[:, 1:C] = (keys[1:] != keys[:-1]).T
    idx = np.flatnonzero(marks.ravel())
    lengths = np.diff(idx)
    valid = (idx[:-1] % (C + 1)) != C
    cols = idx[:-1][valid] // (C + 1)
    return np.bincount(cols, weights=lengths[valid].astype(np.float64) ** 2, minlength=N)


def refine(labels: np.ndarray, column: np.ndarray) -> np.ndarray:
    """New class labels (0..m-1) after splitting by one row's outputs (exact, no hashing)."""
    pairs = np.stack([labels.astype(np.uint64), column.astype(np.uint64)], axis=1)
    _, inv = np.unique(pairs, axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


def classes(labels: np.ndarray) -> list[np.ndarray]:
    """Index arrays of the classes, largest first."""
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    groups = np.split(order, cuts)
    return sorted(groups, key=len, reverse=True)


def differing_fields(cfgs: Sequence[AccumulatorConfig]) -> list[str]:
    """Configuration fields on which the given configurations do not all agree."""
    if len(cfgs) < 2:
        return []
    out = []
    for f in dataclasses.fields(cfgs[0]):
        vals = {repr(getattr(c, f.name)) for c in cfgs}
        if len(vals) > 1:
            out.append(f.name)
    return out


def split_fields(cfgs: Sequence[AccumulatorConfig], column: np.ndarray) -> list[str]:
    """Fields that differ between configurations a row separates (the features it tests).

    A field counts when some pair separated by the row differs in it; fields on which every
    separated pair agrees are dropped.  Falls back to all differing fields.
    """
    if len(cfgs) < 2:
        return []
    groups: dict[int, list[int]] = {}
    for i, v in enumerate(column.tolist()):
        groups.setdefault(int(v), []).append(i)
    if len(groups) < 2:
        return []
    reps = [cfgs[g[0]] for g in groups.values()]
    base = differing_fields(reps)
    # keep fields that differ between the two largest output groups' members
    big = sorted(groups.values(), key=len, reverse=True)[:2]
    left = [cfgs[i] for i in big[0][:50]]
    right = [cfgs[i] for i in big[1][:50]]
    keep = []
    for f in base:
        lv = {repr(getattr(c, f)) for c in left}
        rv = {repr(getattr(c, f)) for c in right}
        if lv != rv:
            keep.append(f)
    return keep or base
