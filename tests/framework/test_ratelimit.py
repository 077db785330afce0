"""Rate limiter arithmetic against client-go's numbers."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.runtime.controller.ratelimit import (
    BucketRateLimiter,
    ExponentialFailureRateLimiter,
    FastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_doubles_from_base_and_reaches_cap_on_19th_failure() -> None:
    limiter = ExponentialFailureRateLimiter()
    delays = [limiter.when("k") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == pytest.approx(0.005 * 2**17)  # 655.36 s, still under the cap
    assert delays[18] == 1000.0
    assert delays[19] == 1000.0
    assert limiter.num_requeues("k") == 20
    assert limiter.when("other") == 0.005, "failures are counted per item"


def test_exponential_is_overflow_safe() -> None:
    limiter = ExponentialFailureRateLimiter(base=0.001, cap=3600)
    for _ in range(5000):
        delay = limiter.when("k")
    assert delay == 3600


def test_exponential_forget_starts_over() -> None:
    limiter = ExponentialFailureRateLimiter()
    limiter.when("k")
    limiter.when("k")
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0
    assert limiter.when("k") == 0.005


def test_fast_then_slow() -> None:
    limiter = FastSlowRateLimiter(fast=0.1, slow=10, max_fast_attempts=3)
    assert [limiter.when("k") for _ in range(5)] == [0.1, 0.1, 0.1, 10, 10]
    assert limiter.num_requeues("k") == 5
    limiter.forget("k")
    assert limiter.when("k") == 0.1


async def test_bucket_burst_then_qps_spacing(autojump_clock: trio.testing.MockClock) -> None:
    limiter = BucketRateLimiter(qps=10, burst=100)
    burst = [limiter.when(i) for i in range(100)]
    assert burst == [0.0] * 100
    after = [limiter.when(i) for i in range(3)]
    assert after == pytest.approx([0.1, 0.2, 0.3])
    assert limiter.num_requeues(0) == 0
    await trio.sleep(10)  # refills 100 tokens, of which 3 were borrowed ahead
    assert [limiter.when(i) for i in range(97)] == [0.0] * 97
    assert limiter.when("x") == pytest.approx(0.1)


async def test_bucket_never_holds_more_than_burst(autojump_clock: trio.testing.MockClock) -> None:
    limiter = BucketRateLimiter(qps=1, burst=2)
    await trio.sleep(1000)
    assert [limiter.when(i) for i in range(3)] == pytest.approx([0.0, 0.0, 1.0])


async def test_max_of_takes_longest_and_forgets_all(
    autojump_clock: trio.testing.MockClock,
) -> None:
    exponential = ExponentialFailureRateLimiter(1.0, 100.0)
    fast_slow = FastSlowRateLimiter(3.0, 50.0, 1)
    limiter = MaxOfRateLimiter(exponential, fast_slow)
    assert [limiter.when("k") for _ in range(4)] == [3.0, 50.0, 50.0, 50.0]
    assert limiter.num_requeues("k") == 4
    limiter.forget("k")
    assert exponential.num_requeues("k") == 0
    assert fast_slow.num_requeues("k") == 0


async def test_default_controller_limiter(autojump_clock: trio.testing.MockClock) -> None:
    limiter = default_controller_rate_limiter()
    # One item failing: the per-item exponential dominates.
    assert [limiter.when("k") for _ in range(3)] == [0.005, 0.01, 0.02]
    # Many distinct items at once: after the burst of 100 the 10 qps bucket dominates.
    delays = [limiter.when(i) for i in range(110)]
    assert delays[96] == 0.005
    assert delays[97] == pytest.approx(0.1)
    assert delays[109] == pytest.approx(1.3)


async def test_capped_controller_limiter_never_waits_past_its_cap(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """An outage's worth of failures (one a retry period apart) leaves the next wait at the
    cap, not at the 1000 s client-go's default would have reached."""
    cap = 5.0
    limiter = default_controller_rate_limiter(cap=cap)
    delays = []
    for _ in range(20):
        delays.append(limiter.when("k"))
        await trio.sleep(delays[-1])
    assert delays[:3] == [0.005, 0.01, 0.02]
    assert max(delays) == cap == delays[-1]
    assert default_controller_rate_limiter().limiters[0].when("k") == 0.005


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="base and cap"):
        ExponentialFailureRateLimiter(base=0)
    with pytest.raises(ValueError, match="qps"):
        BucketRateLimiter(qps=0)
    with pytest.raises(ValueError, match="at least one"):
        MaxOfRateLimiter()
