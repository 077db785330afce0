"""The collector policy of ``kubetrio run --gc``: thresholds, one freeze after the sync, the
memory trade it documents, and ``default`` leaving CPython's collector alone."""

from __future__ import annotations

import gc
import weakref

import pytest

from kubetrio.runtime.manager.gctuning import TUNED_THRESHOLD, GcTuning, tuned_gc

pytestmark = pytest.mark.usefixtures("restore_gc")


class Node:
    """A tracked container that can take part in a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A two-object cycle nothing else refers to: only the collector can free it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_tuned_raises_the_young_threshold_at_start_and_restores_it() -> None:
    gc.set_threshold(700, 10, 10)
    tuning = GcTuning("tuned")
    tuning.start()
    assert gc.get_threshold() == TUNED_THRESHOLD == (10_000, 10, 10)
    assert gc.get_freeze_count() == 0  # nothing frozen before the caches synced
    tuning.restore()
    assert gc.get_threshold() == (700, 10, 10)


def test_synced_collects_then_freezes_once() -> None:
    tuning = GcTuning("tuned")
    tuning.start()
    garbage = cycle()
    kept = [Node() for _ in range(1000)]
    tuning.synced()
    assert garbage() is None, "garbage of the start-up is collected, not frozen"
    frozen = gc.get_freeze_count()
    assert frozen >= len(kept)
    later = [Node() for _ in range(1000)]
    tuning.synced()  # a second sync (another cluster's, a relist) freezes nothing more
    # Fewer is no freeze: a frozen object another thread of the process (pytest-xdist's)
    # lets go of leaves the permanent generation.
    assert gc.get_freeze_count() <= frozen
    scanned = {id(o) for o in gc.get_objects()}  # every generation but the frozen one
    assert not any(id(n) in scanned for n in kept)
    assert all(id(n) in scanned for n in later), "allocated after the freeze: still scanned"
    tuning.restore()
    assert gc.get_freeze_count() == 0


def test_a_frozen_cycle_is_only_collected_once_unfrozen() -> None:
    """The documented trade: a cycle that was alive at the freeze and dies later stays."""
    tuning = GcTuning("tuned")
    tuning.start()
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    tuning.synced()
    del a, b
    gc.collect()
    assert ref() is not None, "frozen: no collection scans it"
    tuning.restore()
    gc.collect()
    assert ref() is None


def test_default_leaves_the_collector_alone() -> None:
    gc.set_threshold(123, 4, 5)
    tuning = GcTuning("default")
    tuning.start()
    tuning.synced()
    assert gc.get_threshold() == (123, 4, 5)
    assert gc.get_freeze_count() == 0
    tuning.restore()
    assert gc.get_threshold() == (123, 4, 5)


def test_synced_before_start_does_nothing() -> None:
    tuning = GcTuning("tuned")
    tuning.synced()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() != TUNED_THRESHOLD
    tuning.restore()  # nothing started: nothing to restore, no error


def test_an_unknown_mode_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match=r"^gc: expected one of tuned, default, got 'fast'$"):
        GcTuning("fast")  # type: ignore[arg-type]


def test_tuned_gc_block_freezes_what_exists_and_restores() -> None:
    gc.set_threshold(700, 10, 10)
    with tuned_gc():
        assert gc.get_threshold() == TUNED_THRESHOLD
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0
    with tuned_gc("default"):
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0
