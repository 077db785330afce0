"""``kubetrio_informer_undecodable_objects``: how many objects of each kind the informers keep out
of their caches because they do not fit the typed view (see ``kubetrio.runtime.cache.undecodable``).

A gauge, not a counter: what an operator must act on is the objects that are poison *now*
(it falls back to 0 once they are fixed or deleted). Computed at scrape time from the caches,
so the informers carry no metric code; one collector per registry serves every cache on it.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.metrics.server import Passing

NAME = "kubetrio_informer_undecodable_objects"


class UndecodableObjects(Collector):
    """``kubetrio_informer_undecodable_objects``: the objects each kind's informers hold back
    because they do not fit the typed view, counted at scrape time from every live cache."""

    def __init__(self) -> None:
        self.caches: weakref.WeakSet[InformerCache] = weakref.WeakSet()

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for kind, keys in sorted(undecodable_by_kind(list(self.caches)).items()):
            family.add_metric([kind], len(keys))
        return [family]

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            NAME,
            "Objects kept out of the informer cache because they do not fit the typed view",
            labels=["kind"],
        )


def undecodable_by_kind(caches: Iterable[InformerCache]) -> dict[str, set[ObjectKey]]:
    """Every informer's kind (0 included, so alerts see the series) and its poison objects;
    informers of one kind with different selectors may see the same object: counted once."""
    found: dict[str, set[ObjectKey]] = {}
    for cache in caches:
        for informer in cache.informers:
            found.setdefault(informer.kind.KIND.kind, set()).update(informer.undecodable)
    return found


def undecodable_detail(cache: InformerCache, shown: int = 3) -> Passing | None:
    """For ``/readyz?verbose``: a poison object does not make the manager unready (the other
    objects are served), but it is said, with the first few objects and their field paths."""
    poisons = [
        (informer.kind.KIND.kind, poison)
        for informer in cache.informers
        for poison in informer.undecodable.values()
    ]
    if not poisons:
        return None
    first = "; ".join(f"{kind} {p} ({p.error})" for kind, p in poisons[:shown])
    more = f"; and {len(poisons) - shown} more" if len(poisons) > shown else ""
    return Passing(f"{len(poisons)} undecodable object(s) kept out of the cache: {first}{more}")


_collectors: weakref.WeakKeyDictionary[CollectorRegistry, UndecodableObjects] = (
    weakref.WeakKeyDictionary()
)


def report_undecodable(registry: CollectorRegistry, cache: InformerCache) -> None:
    """Report ``cache``'s poison objects on ``registry`` (the family registers only once)."""
    collector = _collectors.get(registry)
    if collector is None:
        collector = _collectors[registry] = UndecodableObjects()
        registry.register(collector)
    collector.caches.add(cache)
