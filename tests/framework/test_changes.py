"""``InformerChanges`` is shared per informer and never keeps its informer alive (a cache that
is dropped, say at the end of a test, must be collectable with everything it built)."""

from __future__ import annotations

import gc
import weakref

from kubetrio.api.core import ConfigMap
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client


def test_one_notifier_per_informer_that_does_not_outlive_it() -> None:
    client = Client.from_url("http://127.0.0.1:9", token="t")
    informer = Informer(client, ConfigMap)
    other = Informer(client, ConfigMap)
    changes = InformerChanges.of(informer)
    assert InformerChanges.of(informer) is changes
    assert InformerChanges.of(other) is not changes
    gone = weakref.ref(informer)
    del informer
    gc.collect()
    assert gone() is None
    assert changes.waiting == 0
