"""Fixtures both the unit and the end-to-end tests use."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture
def restore_gc() -> Iterator[None]:
    """Thresholds and the frozen set are process-wide: later tests in this worker get them back."""
    threshold = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
