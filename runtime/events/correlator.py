"""client-go's EventCorrelator (``tools/record/events_cache.go``), on the trio clock.

Three jobs, so a hot loop cannot flood the API server with Events:

- aggregation: once ``AGGREGATE_MAX_EVENTS`` events about one object share source, type and
  reason but differ in message within ``AGGREGATE_INTERVAL`` seconds, further ones become one
  event whose message starts with ``(combined from similar events): ``;
- deduplication: a repeat of an event already written becomes a PATCH of its ``count`` and
  ``lastTimestamp`` (the sender keeps what it wrote in an ``ObservedEvents`` LRU);
- spam filter: a token bucket per source + object (burst 25, one token per 5 minutes).

Every time here is ``clock()`` (``trio.current_time`` in production), so tests drive it with
MockClock; the Event's own timestamps stay wall-clock times.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

# client-go's defaults (events_cache.go).
MAX_LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A bounded map forgetting the least recently used key, as client-go's caches do."""

    def __init__(self, size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.size:
            self._items.popitem(last=False)

    def pop(self, key: K) -> None:
        self._items.pop(key, None)


@dataclass(frozen=True, slots=True)
class EventKey:
    """What makes two events "the same": client-go's getEventKey fields."""

    component: str
    host: str
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str

    @property
    def spam_key(self) -> tuple[str, ...]:
        """The spam filter's bucket: source and object only (client-go's getSpamKey)."""
        return (self.component, self.host, self.api_version, self.kind, self.namespace,
                self.name, self.uid)  # fmt: skip

    @property
    def aggregate_key(self) -> tuple[str, ...]:
        return (*self.spam_key, self.type, self.reason)


@dataclass(slots=True)
class _Similar:
    messages: set[str] = field(default_factory=set)
    last_seen: float = 0.0


class Aggregator:
    """Folds many similar events (same object and reason, different messages) into one."""

    def __init__(
        self,
        clock: Callable[[], float],
        max_events: int = AGGREGATE_MAX_EVENTS,
        interval: float = AGGREGATE_INTERVAL,
    ) -> None:
        self.clock = clock
        self.max_events = max_events
        self.interval = interval
        self._seen: LRU[tuple[str, ...], _Similar] = LRU()

    def aggregate(self, key: EventKey) -> EventKey:
        """The key to record: ``key`` itself, or the combined one once too many differ."""
        now = self.clock()
        similar = self._seen.get(key.aggregate_key)
        if similar is None or now - similar.last_seen > self.interval:
            similar = _Similar()
        similar.last_seen = now
        similar.messages.add(key.message)
        self._seen.put(key.aggregate_key, similar)
        if len(similar.messages) < self.max_events:
            return key
        # As client-go: forget one message so the set stays bounded; the combined event keeps
        # the latest message, and its key is the same for every combined one (one Event).
        similar.messages.pop()
        return EventKey(*key.aggregate_key, message=COMBINED_PREFIX)  # type: ignore[misc]


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class SpamFilter:
    """A token bucket per source + object; ``allow`` takes a token or says no."""

    def __init__(
        self, clock: Callable[[], float], burst: int = SPAM_BURST, qps: float = SPAM_QPS
    ) -> None:
        self.clock = clock
        self.burst = burst
        self.qps = qps
        self._buckets: LRU[tuple[str, ...], _Bucket] = LRU()

    def allow(self, key: EventKey) -> bool:
        now = self.clock()
        bucket = self._buckets.get(key.spam_key)
        if bucket is None:
            bucket = _Bucket(tokens=float(self.burst), updated=now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.qps)
        bucket.updated = now
        self._buckets.put(key.spam_key, bucket)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True


@dataclass(slots=True)
class Observed:
    """An Event as the API server last returned it: what a repeat patches."""

    name: str
    namespace: str
    count: int
    first_timestamp: str | None
