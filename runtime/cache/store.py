"""The informer's in-memory copy of one kind, with indexes and typed listers.

Objects are keyed by ``ObjectKey(namespace, name)``. Index functions map an object to the
values it is filed under (e.g. pods by ``spec.nodeName``); indexes are maintained on every write
so ``by_index`` is a dictionary lookup, never a scan. Objects handed out are the stored ones:
treat them as read-only (msgspec Structs are cheap to copy with ``msgspec.structs.replace``).

A large cache costs the garbage collector nothing. The decoded objects are msgspec Structs of
strings and dicts of strings, which Python does not track; ``ObjectKey`` instances, a tuple
subclass, would be tracked for good, and every full collection would walk all of them, a cost that
grows with the cache and stalls the trio thread. So the store files its objects under plain
``(namespace, name)`` tuples, which the collector stops tracking the first time it sees them, and
hands ``ObjectKey``s out::

    store = Store[Pod]()
    store.put(ObjectKey("default", "web-0"), pod)
    store.get(ObjectKey("default", "web-0"))  # the pod: both kinds of key compare equal
    store.keys()                              # [ObjectKey(namespace='default', name='web-0')]
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Generic, TypeVar

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.controller.queue import ObjectKey

T = TypeVar("T", bound=KubeObject)

IndexFunc = Callable[[T], Iterable[str]]
NAMESPACE_INDEX = "namespace"
_Key = tuple[str, str]  # an ObjectKey's fields in a plain, untracked tuple
_NONE: frozenset[_Key] = frozenset()


def key_of(obj: KubeObject) -> ObjectKey:
    return ObjectKey(obj.metadata.namespace, obj.metadata.name)


class DeletedFinalStateUnknown(Generic[T]):
    """A delete the informer inferred on relist: the watch missed it, ``obj`` may be stale."""

    __slots__ = ("key", "obj")

    def __init__(self, key: ObjectKey, obj: T) -> None:
        self.key = key
        self.obj = obj

    def __repr__(self) -> str:
        return f"DeletedFinalStateUnknown({self.key})"


def by_namespace(obj: KubeObject) -> Iterable[str]:
    return (obj.metadata.namespace,)


class Store(Generic[T]):
    """Objects by key plus the indexes over them."""

    def __init__(self) -> None:
        # Keys are plain tuples (see the module's docstring), equal to the ObjectKeys asked for.
        self._objects: dict[_Key, T] = {}
        self._index_funcs: dict[str, IndexFunc[T]] = {NAMESPACE_INDEX: by_namespace}
        self._indexes: dict[str, dict[str, set[_Key]]] = {NAMESPACE_INDEX: {}}

    def add_index(self, name: str, func: IndexFunc[T]) -> None:
        """Register an index; existing objects are filed at once."""
        if name in self._index_funcs:
            raise ValueError(f"index {name!r} already exists")
        self._index_funcs[name] = func
        index: dict[str, set[_Key]] = {}
        for key, obj in self._objects.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        self._indexes[name] = index

    def get(self, key: _Key) -> T | None:
        return self._objects.get(key)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def keys(self) -> list[ObjectKey]:
        return list(map(ObjectKey._make, self._objects))

    def items(self) -> list[tuple[ObjectKey, T]]:
        return [(ObjectKey._make(key), obj) for key, obj in self._objects.items()]

    def values(self) -> list[T]:
        return list(self._objects.values())

    def put(self, key: _Key, obj: T) -> T | None:
        """Store ``obj`` under ``key`` (an ``ObjectKey`` or its plain tuple); returns what it
        replaced."""
        old = self._objects.get(key)
        # Plain (see above); an existing entry keeps its own key.
        filed = key if type(key) is tuple else (key[0], key[1])
        self._objects[filed] = obj
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            new_values = tuple(func(obj))
            if old is not None:
                old_values = tuple(func(old))
                if old_values == new_values:
                    continue  # the common update: filed under the same values as before
                for value in old_values:
                    if value not in new_values:
                        self._unfile(index, value, key)
            for value in new_values:
                keys = index.get(value)
                if keys is None:  # (not setdefault: that builds a set for every put)
                    keys = index[value] = set()
                keys.add(filed)
        return old

    def remove(self, key: _Key) -> T | None:
        old = self._objects.pop(key, None)
        if old is not None:
            for name, func in self._index_funcs.items():
                for value in func(old):
                    self._unfile(self._indexes[name], value, key)
        return old

    @staticmethod
    def _unfile(index: dict[str, set[_Key]], value: str, key: _Key) -> None:
        keys = index.get(value)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del index[value]

    def keys_by_index(self, name: str, value: str) -> list[ObjectKey]:
        return list(map(ObjectKey._make, self._filed(name, value)))

    def values_by_index(self, name: str, value: str) -> list[T]:
        objects = self._objects
        return [objects[key] for key in self._filed(name, value)]

    def _filed(self, name: str, value: str) -> AbstractSet[_Key]:
        try:
            index = self._indexes[name]
        except KeyError:
            raise KeyError(f"no index named {name!r}") from None
        return index.get(value, _NONE)


def matches_labels(obj: KubeObject, selector: Mapping[str, str]) -> bool:
    labels = obj.metadata.labels
    return all(labels.get(key) == value for key, value in selector.items())


class Lister(Generic[T]):
    """Read-only typed queries over a store."""

    def __init__(self, store: Store[T]) -> None:
        self._store = store

    def get(self, namespace: str, name: str) -> T | None:
        return self._store.get(ObjectKey(namespace, name))

    def list(
        self,
        namespace: str | None = None,
        selector: Mapping[str, str] | Callable[[T], bool] | None = None,
    ) -> builtins.list[T]:
        """Objects in ``namespace`` (all when None) matching ``selector``.

        ``selector`` is either equality on labels (``{"app": "web"}``) or any predicate.
        """
        if namespace is None:
            candidates = self._store.values()
        else:
            candidates = self.by_index(NAMESPACE_INDEX, namespace)
        if selector is None:
            return candidates
        if callable(selector):
            return [obj for obj in candidates if selector(obj)]
        return [obj for obj in candidates if matches_labels(obj, selector)]

    def by_index(self, index: str, value: str) -> builtins.list[T]:
        return self._store.values_by_index(index, value)

    def __len__(self) -> int:
        return len(self._store)
