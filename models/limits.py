"""Limits that keep hostile inputs cheap: each one names itself and how to raise it.

A limit is checked on an estimate *before* anything is allocated or computed (the number of
rows a flag asks for times K, the vectors a suite file declares, the rows a probe's sweeps
expand to), so that ``--rows 10**12`` or a suite claiming K = 10**9 fails in milliseconds
with a message, never with a memory error after minutes.  Every limit can be raised through
its environment variable, read when it is checked.

>>> ROWS.check(1000, "--pool", k=16)
>>> ROWS.check(10**9, "--pool", k=16)
Traceback (most recent call last):
...
mmaprobe.models.errors.InputError: --pool: 1000000000 rows of K=16 (16000000000 products) \
exceed the limit of 33554432 products (raise it with MMAPROBE_MAX_PRODUCTS=N)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import InputError


@dataclass(frozen=True)
class Limit:
    """A named upper bound with an environment override (``env``)."""

    env: str
    default: int
    unit: str

    @property
    def value(self) -> int:
        raw = os.environ.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            v = int(raw.strip())
        except ValueError:
            v = 0
        if v < 1:
            raise InputError(f"{self.env}={raw!r}: expected a positive integer")
        return v

    def exceeded(self, n: int, what: str) -> InputError:
        return InputError(f"{what}: {n} {self.unit} exceed the limit of {self.value} "
                          f"{self.unit} (raise it with {self.env}=N)")

    def check(self, n: int, what: str) -> None:
        """An InputError naming ``what``, the limit and its variable when n is above it."""
        if n > self.value:
            raise self.exceeded(n, what)


@dataclass(frozen=True)
class ProductLimit(Limit):
    """A bound on rows x K: the memory of one batch of dot products (about 100 bytes per
    product in the model, inputs and intermediates together)."""

    def check(self, n: int, what: str, k: int = 1) -> None:  # type: ignore[override]
        if n * k > self.value:
            raise InputError(f"{what}: {n} rows of K={k} ({n * k} products) exceed the limit "
                             f"of {self.value} products (raise it with {self.env}=N)")


#: rows x K one flag (``--rows``, ``--pool``, ``--random``) or one probe may ask the model
#: for in one go: 2^25 products is about 3 GB at the model's peak
ROWS = ProductLimit("MMAPROBE_MAX_PRODUCTS", 1 << 25, "products")
#: vectors one suite, observed or data file may hold
VECTORS = Limit("MMAPROBE_MAX_VECTORS", 2_000_000, "vectors")
#: size of one JSON file (suite, observed outputs): parsed, it takes about ten times as much
#: memory
JSON_MB = Limit("MMAPROBE_MAX_JSON_MB", 64, "MiB")
#: rows one probe expands to (its vectors and every value of its sweeps), per configuration
PROBE_ROWS = Limit("MMAPROBE_MAX_PROBE_ROWS", 65536, "rows")
#: seconds any time budget (--timeout, --smt-seconds, --device-timeout) may be: the solver
#: takes milliseconds as an unsigned 32-bit integer (49.7 days)
MAX_SECONDS = 10**6
