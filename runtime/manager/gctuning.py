"""How a long-running manager sets CPython's garbage collector (``kubetrio run --gc``).

Why: CPython's defaults (a young-generation collection every 700 net allocations, and a full
collection whenever the survivors since the last one exceed a quarter of the old generation)
suit short scripts. A controller manager lives long and keeps most of what it allocated at
start-up (modules, classes, functions, its tasks, the containers of its caches and queues), and
every full collection walks all of it again to find little garbage; a young collection every 700
allocations also runs many times per event. In ``tests/bench/reconcile.py`` (``--gc``) a
consumer of events spent about a quarter of its CPU in the collector, single full collections
taking 0.1-0.9 s on a loaded 2-core machine.

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

Measured on 2 shared cores at load 2-5, the two sides alternating in one window.
``tests/bench/scale.py`` (pristine main against this module's ``tuned``): with N = 2 000
machines (20 000 Pods cached) the manager spent 0.46-1.07 s of its 10-15 s of CPU inside the
collector with CPython's settings and 0.17-0.41 s tuned; with N = 5 000, 1.15-1.33 s of 29 s
against 0.48 s; the longest single collection went from 0.11-0.32 s to 0.05-0.12 s. That is
3-4 % of the manager's CPU, within the run-to-run spread of CPU per machine (N = 2 000: medians
of six runs 6.1 ms default, 5.6 ms tuned, each spread over 4.3-6.9 ms; N = 5 000: 5.4 and 5.5
ms against 5.7 and 5.6 ms). ``tests/bench/machines.py --gc default|tuned`` (3 waves of 500
lifecycles on one manager, CPU per lifecycle as the slope over the waves): 11.28, 11.92, 11.49
ms default against 11.05, 11.18, 14.03 ms tuned (the last at load 4.7); the manager's CPU over
all waves 17.4-18.8 s against 16.7-17.3 s in the first two pairs. Memory: scale.py's peak RSS
did not move (140/139 MiB at 2 000, 211/211 MiB at 5 000); machines.py's grew by the larger
young generation, 78.4 to 79.5 MB after one wave and 82.6 to 84.5 MB after three (+2 %).

The gain is modest because the caches hold msgspec Structs of strings, which CPython does not
track at all: a full collection walks 130 000-190 000 objects (modules, functions, tasks,
containers), not the cached Pods. After the freeze a run of 5 000 machines saw one full
collection (0.05 s), so freezing again later has nothing left to win, while it would freeze
what churns - and leak its cycles.

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
