"""The model's outputs over a candidate space: one process or many, the same matrix."""

import numpy as np
import pytest

from mmaprobe.models import partition
from mmaprobe.models.accumulator import engine_name, evaluate, products_key
from mmaprobe.models.rows import pool_rows
from mmaprobe.models.space import neighbourhood
from mmaprobe.models.split_search import RowPool, SplitSearch


@pytest.mark.parametrize("fin,k,step,engines", [("binary16", 8, 7, {"float64", "int64"}),
                                                ("binary32", 4, 11, {"int64"})])
def test_parallel_outputs_equal_serial(monkeypatch, fin, k, step, engines):
    # targeted and random rows, some duplicated, over every engine the space uses, shared
    # out over two processes: the same matrix as one process
    cfgs = neighbourhood(fin, None, "binary32", k).configs[::step]
    (a, b, c), _ = pool_rows(cfgs[0], 300, np.random.default_rng(3))
    a, b, c = (np.concatenate([x, x[:40]]) for x in (a, b, c))
    serial = partition.outputs_matrix(cfgs, a, b, c)
    monkeypatch.setattr(partition, "PARALLEL_WORK", 1)
    msgs: list[str] = []
    parallel = partition.outputs_matrix(cfgs, a, b, c, msgs.append, jobs=2)
    assert parallel.dtype == np.uint64 and parallel.shape == (len(cfgs), 340)
    assert np.array_equal(serial, parallel)
    assert np.array_equal(parallel[:, 300:], parallel[:, :40])
    assert msgs and "in 2 processes" in msgs[-1]
    assert {engine_name(x) for x in cfgs} == engines


@pytest.mark.parametrize("fin,fout,k", [("e4m3", "binary32", 16), ("bfloat16", "binary16", 8)])
def test_shared_products_equal_one_configuration_at_a_time(fin, fout, k):
    # outputs_matrix evaluates configurations in order of their products and shares them
    # (the memo, both engines); each row must be what evaluate gives alone,
    # across interleaving, normalisation, input and product flushes and overflow
    cfgs = neighbourhood(fin, None, fout, k).configs
    assert len({products_key(x) for x in cfgs}) > 8
    (a, b, c), _ = pool_rows(cfgs[0], 400, np.random.default_rng(9))
    rng = np.random.default_rng(10)  # raw patterns too: subnormals and specials
    a = np.concatenate([a, rng.integers(0, 1 << 8 if fin == "e4m3" else 1 << 16, a.shape)])
    b = np.concatenate([b, rng.integers(0, 1 << 8 if fin == "e4m3" else 1 << 16, b.shape)])
    c = np.concatenate([c, c])
    shared = partition.outputs_matrix(cfgs, a, b, c)
    for i, cfg in enumerate(cfgs):
        assert np.array_equal(shared[i], evaluate(cfg, a, b, c)), cfg.describe()
    assert {"float64", "int64"} <= {engine_name(x) for x in cfgs}


def _partition(labels):
    return sorted(sorted(np.flatnonzero(labels == x).tolist()) for x in set(labels.tolist()))


@pytest.mark.parametrize("stages", [1, 2, 4, 1000])
def test_row_classes_same_partition_as_the_whole_matrix(stages):
    # configurations dropped once alone: the partition of the full outputs matrix, whatever
    # the stages, with duplicated rows
    cfgs = neighbourhood("binary16", None, "binary32", 4).configs[::5]
    (a, b, c), _ = pool_rows(cfgs[0], 200, np.random.default_rng(5))
    a, b, c = (np.concatenate([x, x[:30]]) for x in (a, b, c))
    whole = partition.classes_of(partition.outputs_matrix(cfgs, a, b, c))
    labels = partition.row_classes(cfgs, a, b, c, stages=stages)
    assert labels.min() == 0 and labels.max() == whole.max()
    assert _partition(labels) == _partition(whole)
    assert 1 < whole.max() + 1 < len(cfgs)  # some configurations split, some together


def test_open_columns_evaluate_only_the_configurations_still_together():
    # a search whose columns are read only on the classes it refines (suite, identify)
    # evaluates a split's row on the members that share a class; the members alone read 0,
    # and the refined classes are those of the full column
    cfgs = neighbourhood("binary16", None, "binary32", 4).configs[::9]
    (a, b, c), _ = pool_rows(cfgs[0], 200, np.random.default_rng(5))
    labels = partition.classes_of(partition.outputs_matrix(cfgs, a[:3], b[:3], c[:3]))
    together = np.bincount(labels)[labels] > 1
    assert together.any() and not together.all()
    searches = [SplitSearch(cfgs, RowPool.empty(cfgs), np.random.default_rng(1),
                            local_rows=400, open_columns=scoped) for scoped in (False, True)]
    full, scoped = (s.next_split(labels) for s in searches)
    assert full is not None and scoped is not None and full.row[2] == scoped.row[2]
    assert np.array_equal(scoped.column[together], full.column[together])
    assert not scoped.column[~together].any()
    assert np.array_equal(partition.refine(labels, scoped.column),
                          partition.refine(labels, full.column))
