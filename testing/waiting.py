"""Waiting for the cache to show something: ``wait_for``, ``wait_gone``, ``eventually``.

A controller test waits for the controller to have acted. Sleeping a while and looking is slow
when the guess is long and flaky when it is short; polling the API server adds load and still
guesses. These wake on the informers' own change notifications and re-check at once, so they
return on the change that satisfies them, and on the mock clock a generous timeout is free::

    cm = await wait_for(manager, ConfigMap, "hello", condition=lambda c: c.data is not None)
    await wait_gone(manager, ConfigMap, "hello")

    async def replicas_match() -> None:
        assert len(manager.cache.informer(Pod).lister.list("default")) == 3

    await eventually(replicas_match)  # re-checked on every change of the manager's informers

``eventually`` also re-checks every ``interval`` (1 s of the trio clock), so a check that reads
the API server — an Event the controller recorded, which no informer of the manager caches —
holds as soon as the next re-check sees it.

On timeout they fail the test with an ``AssertionError`` naming what was awaited and the last
object seen (``eventually`` re-raises the check's last assertion).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import Any, TypeAlias, TypeVar

import trio

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.cache.changes import InformerChanges, any_change
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.manager.manager import Manager

T = TypeVar("T", bound=KubeObject)

# The managers ``run_manager`` is running in this task: ``eventually``'s default informers.
running_managers: ContextVar[tuple[Manager, ...]] = ContextVar("running_managers", default=())

Source: TypeAlias = Manager | InformerCache


async def _until(
    informers: Iterable[Informer[Any]],
    holds: Callable[[], Awaitable[bool]],
    within: float,
    every: float = math.inf,
) -> bool:
    """True once ``holds()`` is true, re-checked after each change of ``informers`` and at
    least every ``every`` seconds; False if ``within`` seconds (of the trio clock) passed
    first."""
    watched = [InformerChanges.of(informer) for informer in informers]
    with trio.move_on_after(within):
        while True:
            with any_change(watched) as changed:  # registered before the (awaiting) check
                if await holds():
                    return True
                with trio.move_on_after(every):
                    await changed.wait()
    return False


def _cache(source: Source) -> InformerCache:
    return source.cache if isinstance(source, Manager) else source


def _describe(kind: type[KubeObject], namespace: str, name: str) -> str:
    return f"{kind.KIND.kind} {namespace}/{name}" if namespace else f"{kind.KIND.kind} {name}"


async def wait_for(
    source: Source,
    kind: type[T],
    name: str,
    namespace: str = "default",
    *,
    condition: Callable[[T], bool] | None = None,
    timeout: float = 60.0,  # noqa: ASYNC109 (the API: the failure names the timeout)
) -> T:
    """The cached ``kind`` ``namespace/name`` once it exists and satisfies ``condition``.
    ``namespace`` is ignored for cluster-scoped kinds."""
    informer = _cache(source).informer(kind)
    namespace = namespace if kind.KIND.namespaced else ""

    async def holds() -> bool:
        obj = informer.lister.get(namespace, name)
        return obj is not None and (condition is None or condition(obj))

    if not await _until([informer], holds, timeout):
        what = "to satisfy the condition" if condition is not None else "to exist"
        raise AssertionError(
            f"timed out after {timeout:g}s waiting for {_describe(kind, namespace, name)} {what}"
            f"; last seen: {informer.lister.get(namespace, name)!r}"
        )
    found = informer.lister.get(namespace, name)
    assert found is not None
    return found


async def wait_gone(
    source: Source,
    kind: type[KubeObject],
    name: str,
    namespace: str = "default",
    *,
    timeout: float = 60.0,  # noqa: ASYNC109 (the API: the failure names the timeout)
) -> None:
    """Returns once the cache no longer holds ``kind`` ``namespace/name``."""
    informer = _cache(source).informer(kind)
    namespace = namespace if kind.KIND.namespaced else ""

    async def holds() -> bool:
        return informer.lister.get(namespace, name) is None

    if not await _until([informer], holds, timeout):
        raise AssertionError(
            f"timed out after {timeout:g}s waiting for {_describe(kind, namespace, name)} to be "
            f"gone; last seen: {informer.lister.get(namespace, name)!r}"
        )


def _informers_of(on: Source | Iterable[Informer[Any]] | None) -> list[Informer[Any]]:
    if on is None:
        managers = running_managers.get()
        if not managers:
            raise TypeError(
                "eventually(): on= is required outside run_manager (a manager, a cache or "
                "informers whose changes re-run the check)"
            )
        return [informer for manager in managers for informer in manager.cache.informers]
    if isinstance(on, Manager | InformerCache):
        return _cache(on).informers
    return list(on)


async def eventually(
    check: Callable[[], object],
    *,
    timeout: float = 60.0,  # noqa: ASYNC109 (the API: the failure names the timeout)
    on: Source | Iterable[Informer[Any]] | None = None,
    interval: float = 1.0,
) -> None:
    """Until ``check`` (sync or async) holds: returns without raising an ``AssertionError``
    and not ``False``. Re-run after every change of the informers ``on`` (a manager's or a
    cache's informers; by default those of the managers ``run_manager`` runs here), and at
    least every ``interval`` seconds, for checks that read what no informer caches (Events
    the manager records, objects read from the API server)."""
    last: AssertionError | None = None

    async def holds() -> bool:
        nonlocal last
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
        except AssertionError as error:
            last = error
            return False
        if result is False:
            last = None
            return False
        return True

    if not await _until(_informers_of(on), holds, timeout, every=interval):
        if last is not None:
            raise last
        raise AssertionError(f"timed out after {timeout:g}s: {check!r} stayed false")
