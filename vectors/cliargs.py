"""Argument types for every numeric flag of the command line, in one place.

Each type reads one flag's text strictly and says what was expected when it cannot, so
that argparse prints ``mmaprobe CMD: error: argument --rows: expected a positive integer,
got '0'`` and exits 2.  No flag takes NaN, an infinity, a negative count or a negative
seed; time budgets are finite and at most :data:`~mmaprobe.models.limits.MAX_SECONDS`.

>>> positive_int("16"), count("0"), seconds("2.5"), finite_float("-1e3")
(16, 0, 2.5, -1000.0)
>>> positive_int("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected a positive integer, got '0'
"""

from __future__ import annotations

import argparse
import math
import re

from mmaprobe.models.config import MAX_K
from mmaprobe.models.limits import MAX_SECONDS

_INT = re.compile(r"[+-]?\d{1,30}")


def _int(text: str, what: str) -> int:
    s = text.strip()
    if not _INT.fullmatch(s):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return int(s)


def positive_int(text: str) -> int:
    """An integer >= 1 (counts that cannot be zero: --rows, --pool, --limit, --max-queries)."""
    v = _int(text, "a positive integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def count(text: str) -> int:
    """An integer >= 0 (--random, --show)."""
    v = _int(text, "a non-negative integer")
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return v


def seed(text: str) -> int:
    """A random seed: an integer in [0, 2^64) (numpy's generators take no negative seed)."""
    what = "an integer seed in [0, 2^64)"
    v = _int(text, what)
    if not 0 <= v < 1 << 64:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return v


def k_value(text: str) -> int:
    """K, products per output element: an integer in [1, MAX_K]."""
    v = _int(text, f"an integer in [1, {MAX_K}]")
    if not 1 <= v <= MAX_K:
        raise argparse.ArgumentTypeError(f"expected an integer in [1, {MAX_K}], got {text!r}")
    return v


def _float(text: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r} (not finite)")
    return v


def finite_float(text: str) -> float:
    """A finite real number (--alpha, --beta): no NaN, no infinity, nothing that
    overflows to one (1e999)."""
    return _float(text, "a finite number")


def seconds(text: str) -> float:
    """A time budget that may be 0 (none): finite, in [0, MAX_SECONDS] (--smt-seconds)."""
    what = f"a number of seconds in [0, {MAX_SECONDS}]"
    v = _float(text, what)
    if not 0 <= v <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return v


def timeout(text: str) -> float:
    """A time limit: finite, positive, at most MAX_SECONDS (--timeout, --device-timeout)."""
    what = f"a positive number of seconds, at most {MAX_SECONDS}"
    v = _float(text, what)
    if not 0 < v <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return v


def name(text: str) -> str:
    """A non-empty name (a device, a GPU folder): no leading or trailing spaces."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a non-empty name, got {text!r}")
    return text.strip()


def folder_name(text: str) -> str:
    """One path component (the GPU folder of a layout): not empty, no '/', not '.' or
    '..', so that files stay inside the chosen directory."""
    s = name(text)
    if "/" in s or "\\" in s or s in (".", "..") or "\0" in s:
        raise argparse.ArgumentTypeError(f"expected a folder name (no '/', not '.' or '..'), "
                                         f"got {text!r}")
    return s


_NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def allow_negative_values(parser: argparse.ArgumentParser) -> None:
    """Let ``--a -1.5,2,3,4`` give the values to --a: argparse otherwise takes anything
    starting with '-' that is not a plain number for an option (for parsers whose options
    never start with a digit, '.', 'inf' or 'nan')."""
    parser._negative_number_matcher = _NEGATIVE_VALUE  # noqa: SLF001 (argparse hook)
