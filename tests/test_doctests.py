"""Every module's doctests (the examples in the docstrings are part of the documentation)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ["mmaprobe.models", "mmaprobe.smt", "mmaprobe.probes", "mmaprobe.vectors"]


def _modules() -> list[str]:
    out = []
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        out.append(pkg)
        out += [f"{pkg}.{m.name}" for m in pkgutil.iter_modules(mod.__path__)
                if m.name != "__main__"]
    return out


@pytest.mark.parametrize("name", _modules())
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
