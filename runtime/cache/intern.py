"""Sharing the strings thousands of cached objects repeat.

In a cache of many pods most label keys and values, owner references, namespaces and node
names recur (``app: web``, the ReplicaSet's name and UID, ``tier: backend``), and so do the
strings a pod template stamps on every replica: ``generateName``, volume names, the phase.
Decoding gives every object its own copies; interning them on ingest makes equal strings one
object, which saves much of the memory of a typical pod's metadata. Annotation values are left
alone: they are usually unique (hashes, timestamps, JSON) and interning them would only grow
the table, except short ones ("true", a port number), which are shared.

The informer calls ``share_strings`` on each object as soon as it is decoded, before the next
one is (``Client.list(each=...)``): the copies it drops are then freed while the allocator can
hand their memory straight to the next object. Interning a whole list after decoding it would
leave those copies' memory as holes between the kept objects, which the process keeps
(``tests/bench/informer.py`` measures both; the figures are in ``docs/performance.md``).

Example::

    pod = share_strings(decoder.decode(raw))
    assert pod.metadata.namespace is sys.intern("default")
"""

from __future__ import annotations

import sys
from typing import Any, TypeVar

from kubetrio.api.meta import KubeObject

T = TypeVar("T", bound=KubeObject)

_intern = sys.intern
SHORT = 16  # annotation values up to this length are flags and numbers, worth sharing


def share_strings(obj: T) -> T:
    """Intern the repeated strings of ``obj`` in place; returns ``obj``."""
    meta = obj.metadata
    meta.namespace = _intern(meta.namespace)
    if meta.labels:
        meta.labels = {_intern(k): _intern(v) for k, v in meta.labels.items()}
    # A view may keep less than an ObjectMeta (the sharder's Placement).
    if getattr(meta, "generate_name", None):
        meta.generate_name = _intern(meta.generate_name)
    if getattr(meta, "annotations", None):
        meta.annotations = {
            _intern(k): _intern(v) if len(v) <= SHORT else v for k, v in meta.annotations.items()
        }
    for ref in meta.owner_references:
        ref.api_version = _intern(ref.api_version)
        ref.kind = _intern(ref.kind)
        ref.name = _intern(ref.name)
        ref.uid = _intern(ref.uid)
    spec: Any = getattr(obj, "spec", None)
    node_name = getattr(spec, "node_name", None)
    if node_name:
        spec.node_name = _intern(node_name)
    for volume in getattr(spec, "volumes", None) or ():
        name = getattr(volume, "name", None)
        if isinstance(name, str):
            volume.name = _intern(name)
    status: Any = getattr(obj, "status", None)
    phase = getattr(status, "phase", None)
    if isinstance(phase, str) and phase:
        status.phase = _intern(phase)
    return obj
