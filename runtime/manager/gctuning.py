"""How a long-running manager sets CPython's garbage collector (``kubetrio run --gc``).

Why: CPython's defaults (a young-generation collection every 700 net allocations, and a full
collection whenever the survivors since the last one exceed a quarter of the old generation)
suit short scripts. A controller manager lives long and keeps most of what it allocated at
start-up (modules, classes, functions, its tasks, the containers of its caches and queues), and
every full collection walks all of it again to find little garbage; a young collection every 700
allocations also runs many times per event. In ``tests/bench/reconcile.py`` (``--gc``) a
consumer of events spent a large share of its CPU in the collector, in full collections long
enough to stall everything else on the trio thread.

``tuned`` does two things:

* **freeze what the initial sync built**: once every informer has listed, one ``gc.collect()``
  then ``gc.freeze()`` moves every surviving object into the permanent generation, which no
  later collection scans. Objects allocated afterwards (cache entries of objects created
  after the sync, reconcile state) are tracked and collected as usual.
* **a larger young generation**: a threshold of 10 000 allocations instead of 700, set when the
  manager starts, so the short-lived garbage of one event (a decoded object, its diff, a log
  line) is rarely collected more than once.

The trade: memory for CPU. A frozen object freed by reference counting goes away as always -
most of a cache's entries are replaced or deleted that way - but a *reference cycle* among
frozen objects is never collected while frozen. So the freeze happens once, after the
initial sync, whose objects live as long as the manager does. ``default`` leaves the
collector exactly as CPython set it.

``tests/bench/scale.py`` and ``tests/bench/machines.py`` take ``--gc default|tuned`` for an A/B
of this module. What they measured is in ``docs/performance.md``: ``tuned`` spends less of the
manager's CPU in the collector and shortens its longest pauses, a gain within the run-to-run
spread of CPU per machine, for a little more memory (the larger young generation).

The gain is modest because the caches hold msgspec Structs of strings, which CPython does not
track at all: a full collection walks the modules, functions, tasks and containers, not the
cached Pods. After the freeze full collections are rare and short, so freezing again later has
nothing left to win, while it would freeze what churns - and leak its cycles.

Example::

    from kubetrio.runtime.manager.gctuning import GcTuning

    tuning = GcTuning("tuned")
    tuning.start()  # the larger threshold, before the caches fill
    ...  # informers list and sync
    tuning.synced()  # collect once, freeze the survivors
    ...  # run
    tuning.restore()  # unfreeze, CPython's threshold back (tests, embedders)

    with tuned_gc():  # the same around a block (benchmarks: "a service after start-up")
        ...
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Final, Literal, get_args

from kubetrio.runtime.util.log import get_logger

__all__ = ["GC_MODES", "TUNED_THRESHOLD", "GcMode", "GcTuning", "tuned_gc"]

log = get_logger("kubetrio.gc")

GcMode = Literal["tuned", "default"]
GC_MODES: Final[tuple[str, ...]] = get_args(GcMode)
# Only the young generation changes; CPython's default is (700, 10, 10).
TUNED_THRESHOLD: Final[tuple[int, int, int]] = (10_000, 10, 10)


class GcTuning:
    """One manager's collector policy: ``start`` when it starts, ``synced`` once its caches
    synced, ``restore`` when it stops. With ``default`` every step leaves the collector be."""

    def __init__(self, mode: GcMode) -> None:
        if mode not in GC_MODES:  # config validation names the field; this guards embedders
            raise ValueError(f"gc: expected one of {', '.join(GC_MODES)}, got {mode!r}")
        self.mode: GcMode = mode
        self._saved: tuple[int, int, int] | None = None  # set while started
        self.frozen = False

    def start(self) -> None:
        if self.mode == "default" or self._saved is not None:
            return
        self._saved = gc.get_threshold()
        gc.set_threshold(*TUNED_THRESHOLD)

    def synced(self) -> None:
        """Freeze what exists now; only the first call after ``start`` does anything, so a
        manager whose caches sync again (a new cluster, a restart of an informer) keeps the
        one freeze the docstring's trade is about."""
        if self._saved is None or self.frozen:
            return
        gc.collect()
        gc.freeze()
        self.frozen = True
        log.info(
            "garbage collector tuned",
            frozen_objects=gc.get_freeze_count(),
            young_threshold=gc.get_threshold()[0],
        )

    def restore(self) -> None:
        if self._saved is None:
            return
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
        gc.set_threshold(*self._saved)
        self._saved = None


@contextlib.contextmanager
def tuned_gc(mode: GcMode = "tuned") -> Iterator[None]:
    """``mode`` for the block, with what exists on entry frozen: a service right after its
    start-up. The collector is as it was after the block."""
    tuning = GcTuning(mode)
    tuning.start()
    tuning.synced()
    try:
        yield
    finally:
        tuning.restore()
