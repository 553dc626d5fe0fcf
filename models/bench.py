"""Throughput benchmark of the vectorised model (figures are printed, never asserted)."""

from __future__ import annotations

import time

import numpy as np

from .accumulator import engine_name, evaluate
from .config import AccumulatorConfig
from .sampling import random_rows


def bench_model(cfg: AccumulatorConfig, rows: int = 10**6, seed: int = 0,
                repeat: int = 1) -> dict:
    """Time :func:`evaluate` on random normal rows rounded to the input format.

    Parameters
    ----------
    cfg : AccumulatorConfig
        The configuration to evaluate.
    rows : int
        Rows per timed run.
    seed : int
        Seed of the input generator (inputs are generated before timing starts).
    repeat : int
        Timed runs; the best one is reported.

    Returns
    -------
    dict
        ``config`` (one-line description), ``engine`` ('float64', 'int64' or 'object'),
        ``rows``, ``repeat``, ``seconds`` (best run) and ``rows_per_s``.
    """
    if rows < 1 or repeat < 1:
        raise ValueError("rows and repeat must be positive")
    rng = np.random.default_rng(seed)
    a, b, c = random_rows(cfg, rows, rng, "normal")
    evaluate(cfg, a[:1], b[:1], c[:1])  # build lookup tables outside the timing
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        evaluate(cfg, a, b, c)
        best = min(best, time.perf_counter() - t0)
    return {"config": cfg.describe(), "engine": engine_name(cfg), "rows": rows,
            "repeat": repeat, "seconds": best, "rows_per_s": rows / best}


def main() -> None:  # pragma: no cover - manual use: python -m mmaprobe.models.bench
    cfgs = [AccumulatorConfig(in_format="binary16", k=16, nfma=16, neab=2),
            AccumulatorConfig(in_format="bfloat16", k=16, nfma=8, neab=1)]
    for cfg in cfgs:
        r = bench_model(cfg)
        print(f"{r['rows_per_s']:12.3e} rows/s  {r['seconds']:.3f} s  [{r['engine']}] "
              f"{r['config']}")


if __name__ == "__main__":  # pragma: no cover
    main()
