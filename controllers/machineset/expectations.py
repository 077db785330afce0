"""client-go's controller expectations: what a controller waits to see in its cache before it
trusts the cache again.

After creating N machines, the informer may lag behind the API server; a reconcile that ran
before the creations show up would count too few machines and create them again. So a set
records how many creations (and which deletions) it expects, the informer's handlers count
them off as they arrive, and the set only manages replicas again once they all arrived — or
after ``EXPECTATIONS_TIMEOUT``, in case an event was lost for good (a dropped watch that
relisted past a deletion, say).

Time is trio's clock, so a test's MockClock drives the timeout.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import trio

# client-go's ExpectationsTimeout (and MCM's).
EXPECTATIONS_TIMEOUT = 300.0

K = TypeVar("K", bound=Hashable)


@dataclass
class _Expected:
    adds: int
    deletes: set[str] = field(default_factory=set)
    since: float = 0.0

    @property
    def fulfilled(self) -> bool:
        return self.adds <= 0 and not self.deletes


class Expectations(Generic[K]):
    """Per-controller-key expected creations (a count) and deletions (by machine name, as
    client-go's UID-tracking variant: a deletion observed twice is counted once)."""

    def __init__(self, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self.timeout = timeout
        self._by_key: dict[K, _Expected] = {}

    def satisfied(self, key: K) -> bool:
        """Whether ``key`` may act on its cache: nothing pending, or pending for too long."""
        expected = self._by_key.get(key)
        return expected is None or expected.fulfilled or self._expired(expected)

    def expires_in(self, key: K) -> float | None:
        """Seconds until unfulfilled expectations of ``key`` time out; None when satisfied
        (also by expiry: a pass after that must not be asked for again and again)."""
        expected = self._by_key.get(key)
        if expected is None or expected.fulfilled or self._expired(expected):
            return None
        return expected.since + self.timeout - trio.current_time()

    def pending(self, key: K) -> tuple[int, int]:
        """(creations, deletions) still expected; for logs and tests."""
        expected = self._by_key.get(key)
        return (0, 0) if expected is None else (max(expected.adds, 0), len(expected.deletes))

    def expect_creations(self, key: K, count: int) -> None:
        """Replaces whatever ``key`` expected, as client-go's SetExpectations does."""
        self._by_key[key] = _Expected(adds=count, since=trio.current_time())

    def expect_deletions(self, key: K, names: Iterable[str]) -> None:
        self._by_key[key] = _Expected(adds=0, deletes=set(names), since=trio.current_time())

    def creation_observed(self, key: K) -> None:
        expected = self._by_key.get(key)
        if expected is not None:
            expected.adds -= 1

    def deletion_observed(self, key: K, name: str) -> None:
        expected = self._by_key.get(key)
        if expected is not None:
            expected.deletes.discard(name)

    def forget(self, key: K) -> None:
        self._by_key.pop(key, None)

    def _expired(self, expected: _Expected) -> bool:
        return trio.current_time() - expected.since > self.timeout
