"""The request-in-flight seam: nothing without a hook, balanced counts with one, and the kit's
MockClock hold on top of it."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from kubetrio.runtime.util import inflight
from kubetrio.runtime.util.inflight import (
    add_hook,
    remove_hook,
    request_in_flight,
    waiting_on_simulated_time,
)
from kubetrio.testing.clockhold import hold_mock_clock


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, requests: int, simulated_waits: int) -> None:
        self.calls.append((requests, simulated_waits))


@pytest.fixture
def no_hooks() -> Iterator[None]:
    """This session's hooks (the kit's plugin installs one) set aside meanwhile."""
    saved = inflight._hooks
    inflight._hooks = ()
    yield
    inflight._hooks = saved


def test_without_a_hook_a_mark_is_one_shared_object(no_hooks: None) -> None:
    assert request_in_flight() is request_in_flight() is waiting_on_simulated_time()
    with request_in_flight(), waiting_on_simulated_time():
        pass


def test_a_hook_hears_every_mark_and_its_end_even_if_removed_meanwhile(no_hooks: None) -> None:
    hook = Recorder()
    add_hook(hook)
    with request_in_flight():
        with waiting_on_simulated_time():
            remove_hook(hook)
        late = Recorder()
        add_hook(late)  # installed mid-request: it never hears that request's end
    remove_hook(late)
    assert hook.calls == [(1, 0), (0, 1), (0, -1), (-1, 0)]
    assert late.calls == []


async def test_the_kit_holds_a_mock_clock_while_a_request_is_in_flight(
    no_hooks: None, mock_clock: trio.testing.MockClock
) -> None:
    add_hook(hold_mock_clock)
    try:
        threshold = mock_clock.autojump_threshold
        with request_in_flight():
            assert mock_clock.autojump_threshold == math.inf
            with waiting_on_simulated_time():  # the server answers by sleeping on the clock
                assert mock_clock.autojump_threshold == threshold
            assert mock_clock.autojump_threshold == math.inf
        assert mock_clock.autojump_threshold == threshold
    finally:
        remove_hook(hold_mock_clock)
