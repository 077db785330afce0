"""Fixtures for every test folder: the collector's state restored, and (from
``tests.helpers.kube``) the emulator fixtures the end-to-end tests of each subject share."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

# A plugin rather than a conftest per folder: the tests of one subject sit in one folder, unit
# and end-to-end alike, and the emulator fixtures are needed in most of them.
pytest_plugins = ["tests.helpers.kube"]


@pytest.fixture
def restore_gc() -> Iterator[None]:
    """Thresholds and the frozen set are process-wide: later tests in this worker get them back."""
    threshold = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
