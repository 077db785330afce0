"""A few quick retries of an idempotent request that failed transiently.

One long operation made of many requests (a node drain: cordon, a consistent list, an eviction
per pod) fails as a whole if any request fails, and the whole operation is then redone after
the caller's retry period. Under the soak's injected faults many drains failed that way
(``docs/performance.md``) though every failure was a one-off. Retrying the one request, a few
times within a second, makes the operation's odds those of a single request.

Only answers that say nothing happened or that the server may do it next time are retried —
5xx, no response at all (status 0), 410 (a paged list whose continue token expired: a fresh
list is what the server asks for) — and only for requests that are safe to repeat: reads,
conditional writes (a repeat of a write that did land fails with a conflict the caller already
handles), evictions and deletions (a repeat finds the pod gone: 404). 429 is the client's own
business (it waits out Retry-After) or a disruption budget's answer, never retried here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

import trio

from kubetrio.runtime.client.errors import ApiError

T = TypeVar("T")
P = ParamSpec("P")

TRANSIENT_STATUSES = frozenset({0, 410, 500, 502, 503, 504})
# Three retries 0.1, 0.2 and 0.4 s apart: under a second in all, short next to any retry
# period a controller would fall back on, long enough to outlast a blip.
RETRY_DELAYS = (0.1, 0.2, 0.4)


def transient(error: ApiError) -> bool:
    """Whether a repeat of the same request could succeed without anything else changing."""
    return error.status in TRANSIENT_STATUSES


async def retry_transient(
    call: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
) -> T:
    """``await call(*args, **kwargs)``, repeated after each of ``RETRY_DELAYS`` while it
    fails transiently; the last failure (or any other) propagates."""
    for delay in RETRY_DELAYS:
        try:
            return await call(*args, **kwargs)
        except ApiError as error:
            if not transient(error):
                raise
        await trio.sleep(delay)
    return await call(*args, **kwargs)
