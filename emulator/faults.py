"""Test hooks: injected faults and per-request counters.

Both are plain Python objects that tests reach as ``emu.faults`` / ``emu.counters`` and that the
admin endpoint drives over HTTP, so a benchmark in another process sees the same numbers.
"""

from __future__ import annotations

import fnmatch
import itertools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import trio

_ids = itertools.count(1)


@dataclass(slots=True)
class FaultRule:
    """What to match (None matches anything) and what to do. ``count`` limits how many
    requests the rule hits; ``probability`` makes it hit at random (seeded, reproducible)."""

    verb: str | None = None
    resource: str | None = None
    subresource: str | None = None
    name: str | None = None  # fnmatch pattern
    namespace: str | None = None
    status: int | None = None
    reason: str | None = None
    message: str | None = None
    retry_after: int | None = None
    latency: float = 0.0
    cut_watch_after: float | None = None
    probability: float = 1.0
    count: int | None = None
    id: int = field(default_factory=lambda: next(_ids))

    def matches(self, verb: str, resource: str, sub: str, ns: str, name: str) -> bool:
        if self.verb is not None and self.verb != verb:
            return False
        if self.resource is not None and self.resource != resource:
            return False
        if self.subresource is not None and self.subresource != sub:
            return False
        if self.namespace is not None and self.namespace != ns:
            return False
        return self.name is None or fnmatch.fnmatchcase(name, self.name)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(slots=True)
class Decision:
    """The combined effect of every rule that hit one request."""

    latency: float = 0.0
    rule: FaultRule | None = None  # the first rule that returns a status
    cut_watch_after: float | None = None


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def reason_for(code: int) -> str:
    return _REASONS.get(code, "Unknown")


class Faults:
    def __init__(self, seed: int = 0) -> None:
        self.rules: list[FaultRule] = []
        self._random = random.Random(seed)
        self._watches: dict[int, Callable[[], None]] = {}
        self._watch_ids = itertools.count()
        self._watches_changed = trio.Event()
        self.expire_history: Callable[[], None] = lambda: None
        # Requests answered with an injected status, by (verb, status): what a soak reports.
        self.injected: Counter[tuple[str, int]] = Counter()

    def add(self, rule: FaultRule | None = None, **kwargs: Any) -> FaultRule:
        """Add a rule (``faults.add(verb="list", resource="pods", status=500, count=1)``)."""
        rule = rule if rule is not None else FaultRule(**kwargs)
        self.rules.append(rule)
        return rule

    def remove(self, rule_id: int) -> None:
        self.rules = [r for r in self.rules if r.id != rule_id]

    def clear(self) -> None:
        self.rules.clear()

    def decide(self, verb: str, resource: str, sub: str, ns: str, name: str) -> Decision:
        out = Decision()
        for rule in list(self.rules):
            if not rule.matches(verb, resource, sub, ns, name):
                continue
            if rule.probability < 1.0 and self._random.random() >= rule.probability:
                continue
            if rule.count is not None:
                rule.count -= 1
                if rule.count <= 0:
                    self.rules.remove(rule)
            out.latency += rule.latency
            if rule.status is not None and out.rule is None:
                out.rule = rule
                self.injected[(verb, rule.status)] += 1
            if rule.cut_watch_after is not None and verb == "watch":
                prev = out.cut_watch_after
                out.cut_watch_after = (
                    rule.cut_watch_after if prev is None else min(prev, rule.cut_watch_after)
                )
        return out

    # -- open watches

    def register_watch(self, cut: Callable[[], None]) -> int:
        wid = next(self._watch_ids)
        self._watches[wid] = cut
        self._notify_watches()
        return wid

    def unregister_watch(self, wid: int) -> None:
        self._watches.pop(wid, None)
        self._notify_watches()

    def _notify_watches(self) -> None:
        changed, self._watches_changed = self._watches_changed, trio.Event()
        changed.set()

    async def wait_open_watches(self, predicate: Callable[[int], bool]) -> None:
        """Until ``predicate(number of open watch streams)`` holds."""
        while not predicate(len(self._watches)):
            await self._watches_changed.wait()

    @property
    def open_watches(self) -> int:
        return len(self._watches)

    def cut_watches(self) -> int:
        """End every open watch stream abruptly (as a dropped connection would)."""
        cuts = list(self._watches.values())
        for cut in cuts:
            cut()
        return len(cuts)

    def expire_watch_history(self) -> None:
        """Any watch from a resourceVersion older than now gets 410 Gone."""
        self.expire_history()


class Counters:
    """Requests served per (verb, resource, subresource)."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str, str]] = Counter()

    def inc(self, verb: str, resource: str, sub: str = "") -> None:
        self._counts[(verb, resource, sub)] += 1

    def get(self, verb: str, resource: str, sub: str = "") -> int:
        return self._counts[(verb, resource, sub)]

    def total(self) -> int:
        return sum(self._counts.values())

    def snapshot(self) -> dict[str, int]:
        """``"verb resource[/sub]" -> count``, the admin endpoint's JSON shape."""
        return {
            f"{v} {r}{'/' + s if s else ''}": n for (v, r, s), n in sorted(self._counts.items())
        }

    def reset(self) -> None:
        self._counts.clear()
