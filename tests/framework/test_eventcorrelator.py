"""client-go's correlator rules, driven by MockClock."""

from __future__ import annotations

import trio.testing

from kubetrio.runtime.events.correlator import (
    AGGREGATE_MAX_EVENTS,
    COMBINED_PREFIX,
    MAX_LRU_CACHE_ENTRIES,
    Aggregator,
    EventKey,
    SpamFilter,
)


def key(message: str = "m", reason: str = "R", name: str = "o") -> EventKey:
    return EventKey("c", "", "v1", "Node", "", name, "uid", "Normal", reason, message)


def test_similar_events_are_combined_from_the_tenth_message_on() -> None:
    clock = trio.testing.MockClock()
    agg = Aggregator(clock.current_time)
    keys = [agg.aggregate(key(f"msg {i}")) for i in range(AGGREGATE_MAX_EVENTS + 3)]
    assert [k.message for k in keys[: AGGREGATE_MAX_EVENTS - 1]] == [
        f"msg {i}" for i in range(AGGREGATE_MAX_EVENTS - 1)
    ]
    combined = keys[AGGREGATE_MAX_EVENTS - 1 :]
    assert {k.message for k in combined} == {COMBINED_PREFIX}
    assert len(set(combined)) == 1  # one Event for all of them


def test_repeats_of_one_message_are_never_combined() -> None:
    agg = Aggregator(trio.testing.MockClock().current_time)
    assert {agg.aggregate(key("same")).message for _ in range(50)} == {"same"}


def test_other_reasons_or_objects_are_not_similar() -> None:
    agg = Aggregator(trio.testing.MockClock().current_time)
    for i in range(AGGREGATE_MAX_EVENTS * 2):
        assert agg.aggregate(key(f"m{i}", reason=f"R{i}")).message == f"m{i}"
        assert agg.aggregate(key(f"m{i}", name=f"o{i}")).message == f"m{i}"


def test_aggregation_window_of_ten_minutes_starts_over() -> None:
    clock = trio.testing.MockClock()
    agg = Aggregator(clock.current_time)
    for i in range(AGGREGATE_MAX_EVENTS - 1):
        agg.aggregate(key(f"msg {i}"))
    clock.jump(601)
    assert agg.aggregate(key("late")).message == "late"


def test_spam_filter_burst_25_then_one_per_five_minutes() -> None:
    clock = trio.testing.MockClock()
    spam = SpamFilter(clock.current_time)
    assert sum(spam.allow(key(str(i))) for i in range(40)) == 25
    assert spam.allow(key("other object", name="p"))  # buckets are per object
    clock.jump(299)
    assert not spam.allow(key())
    clock.jump(1)
    assert spam.allow(key())
    assert not spam.allow(key())
    clock.jump(10 * 3600)
    assert sum(spam.allow(key()) for _ in range(40)) == 25  # never more than the burst


def test_per_object_caches_stop_at_client_gos_lru_size() -> None:
    """Events about objects long gone (a manager rolling thousands of machines) fill the
    aggregator's and the spam filter's caches up to 4096 entries each, never past it."""
    clock = trio.testing.MockClock()
    aggregator, spam = Aggregator(clock.current_time), SpamFilter(clock.current_time)
    for i in range(MAX_LRU_CACHE_ENTRIES + 1000):
        event = key(name=f"n-{i}")
        aggregator.aggregate(event)
        spam.allow(event)
    assert len(aggregator._seen._items) == MAX_LRU_CACHE_ENTRIES
    assert len(spam._buckets._items) == MAX_LRU_CACHE_ENTRIES
