"""Fixtures shared by every test package."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import HWDATA


@pytest.fixture(scope="session")
def hwdata() -> Path:
    if not HWDATA.is_dir():
        pytest.skip(f"recorded GPU outputs not found at {HWDATA} (set MMAPROBE_HWDATA)")
    return HWDATA
