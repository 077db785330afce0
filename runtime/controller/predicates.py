"""Event filters in front of a controller's queue (controller-runtime's predicates).

A predicate decides per event whether it is worth a reconcile. They only save work: a
reconciler must be correct whatever is filtered, because it reads the cache, not the event.
Caveats worth knowing (as in controller-runtime): ``generation_changed`` drops status-only
writes and periodic resyncs; Deployments bump generation on annotation changes too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubetrio.api.meta import KubeObject

CreateFilter = Callable[[Any], bool]
UpdateFilter = Callable[[Any, Any], bool]
DeleteFilter = Callable[[Any], bool]


def _always(*_: object) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Predicate:
    """Three filters, one per event type; each defaults to letting the event through."""

    create: CreateFilter = _always
    update: UpdateFilter = _always
    delete: DeleteFilter = _always

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)

    def __invert__(self) -> Predicate:
        return not_(self)


def and_(*predicates: Predicate) -> Predicate:
    """Pass an event only when every one of ``predicates`` passes it (also ``p & q``)."""
    return Predicate(
        create=lambda o: all(p.create(o) for p in predicates),
        update=lambda old, new: all(p.update(old, new) for p in predicates),
        delete=lambda o: all(p.delete(o) for p in predicates),
    )


def or_(*predicates: Predicate) -> Predicate:
    """Pass an event when any of ``predicates`` passes it (also ``p | q``)."""
    return Predicate(
        create=lambda o: any(p.create(o) for p in predicates),
        update=lambda old, new: any(p.update(old, new) for p in predicates),
        delete=lambda o: any(p.delete(o) for p in predicates),
    )


def not_(predicate: Predicate) -> Predicate:
    """Pass exactly the events ``predicate`` drops (also ``~p``)."""
    return Predicate(
        create=lambda o: not predicate.create(o),
        update=lambda old, new: not predicate.update(old, new),
        delete=lambda o: not predicate.delete(o),
    )


def on_events(*, create: bool = True, update: bool = True, delete: bool = True) -> Predicate:
    """Pass only the named event types, e.g. ``on_events(create=False, update=False)``."""
    return Predicate(create=lambda _: create, update=lambda _o, _n: update, delete=lambda _: delete)


def _update_only(changed: Callable[[KubeObject, KubeObject], bool]) -> Predicate:
    return Predicate(update=changed)


def generation_changed() -> Predicate:
    """Updates only when ``metadata.generation`` moved (a spec change)."""
    return _update_only(lambda old, new: old.metadata.generation != new.metadata.generation)


def resource_version_changed() -> Predicate:
    """Updates only when the object changed at all (drops periodic resyncs)."""
    return _update_only(
        lambda old, new: old.metadata.resource_version != new.metadata.resource_version
    )


def label_changed() -> Predicate:
    """Updates only when ``metadata.labels`` changed."""
    return _update_only(lambda old, new: old.metadata.labels != new.metadata.labels)


def annotation_changed() -> Predicate:
    """Updates only when ``metadata.annotations`` changed."""
    return _update_only(lambda old, new: old.metadata.annotations != new.metadata.annotations)


def has_labels(selector: dict[str, str]) -> Predicate:
    """Only objects carrying all of ``selector``'s labels (old or new, on update)."""

    def matches(obj: KubeObject) -> bool:
        labels = obj.metadata.labels
        return all(labels.get(k) == v for k, v in selector.items())

    return Predicate(
        create=matches, update=lambda old, new: matches(old) or matches(new), delete=matches
    )
