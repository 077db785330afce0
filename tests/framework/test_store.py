"""The informer's store: typed keys out, untracked keys inside (a large cache must cost the
garbage collector nothing), indexes kept on every write."""

from __future__ import annotations

import gc

import pytest

from kubetrio.api.core import ConfigMap
from kubetrio.api.meta import ObjectMeta
from kubetrio.runtime.cache.store import Lister, Store, key_of
from kubetrio.runtime.controller.queue import ObjectKey


def cm(namespace: str, name: str, app: str = "a", rv: str = "1") -> ConfigMap:
    meta = ObjectMeta(name=name, namespace=namespace, labels={"app": app}, resource_version=rv)
    return ConfigMap(metadata=meta, data={"k": "v"})


def by_app(obj: ConfigMap) -> tuple[str, ...]:
    return (obj.metadata.labels["app"],)


def test_keys_handed_out_are_object_keys_equal_to_those_put() -> None:
    store: Store[ConfigMap] = Store()
    store.add_index("app", by_app)
    for i in range(3):
        store.put(ObjectKey("ns", f"c{i}"), cm("ns", f"c{i}"))
    keys = store.keys()
    assert sorted(keys) == [ObjectKey("ns", "c0"), ObjectKey("ns", "c1"), ObjectKey("ns", "c2")]
    assert all(type(key) is ObjectKey for key in keys)
    assert all(type(key) is ObjectKey for key, _ in store.items())
    assert {key.name for key in store.keys_by_index("app", "a")} == {"c0", "c1", "c2"}
    assert all(type(key) is ObjectKey for key in store.keys_by_index("app", "a"))
    assert store.get(ObjectKey("ns", "c1")) is not None and ObjectKey("ns", "c1") in store


def test_indexes_follow_updates_and_removals() -> None:
    store: Store[ConfigMap] = Store()
    store.add_index("app", by_app)
    lister = Lister(store)
    key = ObjectKey("ns", "c")
    store.put(key, cm("ns", "c", app="a"))
    assert [o.metadata.name for o in lister.by_index("app", "a")] == ["c"]
    old = store.put(key, cm("ns", "c", app="b", rv="2"))
    assert old is not None and old.metadata.resource_version == "1"
    assert lister.by_index("app", "a") == [] and len(lister.by_index("app", "b")) == 1
    assert store.remove(key) is not None
    assert lister.by_index("app", "b") == [] and lister.list("ns") == [] and len(store) == 0
    assert lister.by_index("app", "nothing") == []


@pytest.mark.slow
def test_cached_objects_add_no_objects_the_garbage_collector_tracks() -> None:
    """A full collection walks every tracked object: with ObjectKeys (a tuple subclass, tracked
    for good) as its keys, the store would add one per cached object and its namespace index."""
    store: Store[ConfigMap] = Store()
    objects = [cm("ns", f"c{i}") for i in range(5000)]
    gc.collect()
    before = len(gc.get_objects())
    for obj in objects:
        store.put(key_of(obj), obj)
    gc.collect()
    assert len(gc.get_objects()) - before < 100
    assert len(store) == 5000
