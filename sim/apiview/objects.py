"""``Objects`` on any API server: a mirror to read, writes sent behind the pass.

The simulated controllers decide synchronously, in passes, on what they read, and a pass must
see its own writes (a ReplicaSet pass that created two pods must not create them again on the
next pass because the watch has not brought them yet). So every write is applied to the view
at once (optimistically) and queued for its object; writers send each object's queue in order:

- a **create** posts the object as the pass created it (names from
  ``generateName`` are chosen here, with the API server's alphabet, so the object has its key
  at once; until the server answers it has no uid, and the controllers leave uid-less objects
  alone where a uid matters);
- a **change** (``mutate``) keeps the pass's change function: the writer applies the object's
  queued changes, in order, to the version the server last showed and sends the difference (a
  merge patch of metadata and spec, then one of status to the status subresource), each guarded
  by that version's resourceVersion; a conflict reads the object afresh and applies the changes
  again, as client-go's RetryOnConflict does, so a change is never computed from a stale copy
  nor lost to another writer;
- a **bind** posts ``pods/{name}/binding``, whose answer is a Status, not the pod: the writer
  waits for the watch to bring the bound pod (reading it only if the watch is slow), so what
  follows starts from it; a **delete** deletes with the pass's grace, and shows in the view
  only once the server has it (a decision elsewhere may hang on it).

A write the server refuses otherwise is logged at info and undone: the view takes the server's
object again and every controller decides again, as a real controller requeues. Once an
object's queue is empty its view is the server's latest version.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import random
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from kubetrio.api.registry import KindInfo
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client, object_path
from kubetrio.runtime.util import clock
from kubetrio.runtime.util.mergepatch import merge_patch
from kubetrio.sim.apiview.reflector import Reflector
from kubetrio.sim.cluster.objects import (
    RESOURCES,
    Key,
    Obj,
    Objects,
    Subscriber,
    clone,
    key_of,
    node_name,
)
from kubetrio.sim.cluster.objects import Change as Event

log = logging.getLogger("kubetrio.sim")

# kube-apiserver's generateName alphabet (no vowels, no look-alikes) and suffix length.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SUFFIX = 5
# Fields only the server sets: never part of a patch.
_SERVER_META = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "selfLink",
)
WRITERS = 64
RETRY_TRANSIENT = 1.0  # seconds before a write that got no answer (or a 5xx) is sent again
# Seconds a writer waits for the watch to show what its write did before it reads the object.
WATCH_GRACE = 2.0


Change = Callable[[Obj], None]
# Conflicts one change meets before it is given up (the view then shows the server's object).
CONFLICT_RETRIES = 5


@dataclass(slots=True)
class _Op:
    verb: str  # create, change, bind, delete
    node: str = ""
    grace: int | None = None
    # For a change: the functions to apply, in order, with whether each is a status write.
    changes: list[tuple[Change, bool]] = field(default_factory=list)
    # For a create: the object as the pass created it, encoded (what follows goes as its own
    # writes).
    body: bytes = b""


def _version(obj: Obj | None) -> int:
    """An object's resourceVersion as a number (both servers count with etcd's revision);
    -1 when it has none (not created yet) or it is not a number."""
    if obj is None:
        return -1
    text = obj["metadata"].get("resourceVersion", "")
    return int(text) if str(text).isdigit() else -1


def _main(obj: Obj) -> Obj:
    """The object without status or server-set metadata: what a main-resource patch may move."""
    body = {k: v for k, v in obj.items() if k not in ("status", "apiVersion", "kind")}
    body["metadata"] = {k: v for k, v in obj.get("metadata", {}).items() if k not in _SERVER_META}
    return body


class ApiObjects(Objects):
    def __init__(
        self,
        client: Client | None = None,
        resources: tuple[KindInfo, ...] = RESOURCES,
        writers: int = WRITERS,
    ) -> None:
        """``client`` may come later, as ``run``'s argument (when the server's address is
        known only once it listens)."""
        super().__init__()
        self._client = client
        self._wanted = trio.Event()
        self._synced = trio.Event()
        self.resources = resources
        self.writers = writers
        # What passes read: the server's objects with this process's writes applied.
        self._view: dict[KindInfo, dict[Key, Obj]] = {kind: {} for kind in resources}
        # The latest version the server has shown (by answer or by event).
        self._server: dict[KindInfo, dict[Key, Obj]] = {kind: {} for kind in resources}
        self._queues: dict[tuple[KindInfo, Key], deque[_Op]] = {}
        # Set when the watch shows a new version of the object (a writer waits for it).
        self._seen: dict[tuple[KindInfo, Key], trio.Event] = {}
        self._subscribers: list[Subscriber] = []
        self._send, self._receive = trio.open_memory_channel[tuple[KindInfo, Key]](float("inf"))
        self._names = random.Random()
        self.writes = 0  # requests the writers sent (a benchmark reads it)
        self.refused = 0  # writes the server refused
        self.reads = 0  # objects read back (after a conflict, a refusal, a slow watch)

    # -- running

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("ApiObjects: no client yet (run() takes one)")
        return self._client

    async def ready(self) -> None:
        """The first call starts the lists (a world part that has nothing to do yet, such as an
        idle cloud, sends no request before it asks); returns once they are in."""
        self._wanted.set()
        await self._synced.wait()

    async def run(
        self,
        client: Client | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Once a part asks (``ready``): list every resource, report started (the view is
        complete), then follow the server and send the writes; until cancelled."""
        if client is not None:
            self._client = client
        await self._wanted.wait()
        reflectors = [
            Reflector(
                self.client,
                kind,
                functools.partial(self._observed, kind),
                functools.partial(self._relisted, kind),
            )
            for kind in self.resources
        ]
        async with trio.open_nursery() as nursery:
            for reflector in reflectors:
                nursery.start_soon(reflector.list)
            # The lists run concurrently; started only once all of them are in.
        async with trio.open_nursery() as nursery:
            for reflector in reflectors:
                nursery.start_soon(reflector.watch)
            for _ in range(self.writers):
                nursery.start_soon(self._writer)
            self._synced.set()
            task_status.started()

    # -- Objects: reads

    def all(self, rt: KindInfo, ns: str | None = None) -> Iterator[Obj]:
        objects = list(self._view[rt].values())
        if ns is None:
            yield from objects
        else:
            yield from (o for o in objects if o["metadata"].get("namespace", "") == ns)

    def get(self, rt: KindInfo, ns: str, name: str) -> Obj | None:
        return self._view[rt].get((ns, name))

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def now(self) -> dt.datetime:
        return clock.now()

    # -- Objects: writes (applied to the view now, sent by a writer)

    def create(self, rt: KindInfo, ns: str, obj: Obj) -> Obj | None:
        new = clone(obj)
        md = new.setdefault("metadata", {})
        if not md.get("name"):
            prefix = md.pop("generateName", "")
            if not prefix:
                log.info("simulated create refused kind=%s err=no name", rt.kind)
                return None
            suffix = "".join(self._names.choice(_NAME_ALPHABET) for _ in range(_NAME_SUFFIX))
            md["name"] = prefix + suffix
        if rt.namespaced:
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
        for server_set in _SERVER_META:
            md.pop(server_set, None)
        md["creationTimestamp"] = self.now_rfc3339()
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        key = key_of(new)
        if key in self._view[rt]:
            log.info("simulated create refused kind=%s name=%s: exists", rt.kind, md["name"])
            return None
        self._show(rt, key, new)
        self._queue(rt, key, _Op("create", body=msgspec.json.encode(_main(new))))
        return new

    def mutate(
        self, rt: KindInfo, obj: Obj, change: Callable[[Obj], None], status: bool = False
    ) -> Obj | None:
        key = key_of(obj)
        current = self._view[rt].get(key)
        if current is None:
            return None
        new = clone(current)
        change(new)
        if new == current:
            return current
        self._show(rt, key, new)
        self._queue(rt, key, _Op("change", changes=[(change, status)]))
        return new

    def delete(self, rt: KindInfo, obj: Obj, grace: int | None = None) -> None:
        """Not applied to the view before the server has it: another pass's decision may hang
        on the object being gone (a new attachment only once the old one is), and writes to
        different objects go out in no particular order."""
        key = key_of(obj)
        if key not in self._view[rt]:
            return
        queue = self._queues.get((rt, key))
        if queue and queue[-1].verb == "delete":
            return
        self._queue(rt, key, _Op("delete", grace=grace))

    def bind(self, pod: Obj, node: str) -> bool:
        key = key_of(pod)
        current = self._view[self.pods].get(key)
        if current is None or (current.get("spec") or {}).get("nodeName"):
            return False
        new = clone(current)
        new.setdefault("spec", {})["nodeName"] = node
        conditions = new.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": self.now_rfc3339()}
        )
        self._show(self.pods, key, new)
        self._queue(self.pods, key, _Op("bind", node=node))
        return True

    # -- the view

    def _show(self, rt: KindInfo, key: Key, obj: Obj | None) -> None:
        """Make ``obj`` what passes read for ``key`` (None: gone) and tell the subscribers."""
        view = self._view[rt]
        prev = view.get(key)
        if obj is None:
            if prev is None:
                return
            del view[key]
            event = Event("DELETED", prev, prev)
        else:
            if prev is obj:
                return
            view[key] = obj
            event = Event("ADDED" if prev is None else "MODIFIED", obj, prev)
        for subscriber in list(self._subscribers):
            subscriber(rt, event)

    def _observed(self, rt: KindInfo, type_: str, obj: Obj) -> None:
        """An event of the server's watch."""
        key = key_of(obj)
        server = self._server[rt]
        known = server.get(key)
        if type_ == "DELETED":
            if known is not None and _version(obj) < _version(known):
                return  # an older incarnation's end, after the newer one was seen
            server.pop(key, None)
        else:
            if known is not None and _version(obj) <= _version(known):
                return  # already seen (our own write's answer came first)
            server[key] = obj
        seen = self._seen.pop((rt, key), None)
        if seen is not None:
            seen.set()
        if (rt, key) not in self._queues:
            self._show(rt, key, server.get(key))

    def _relisted(self, rt: KindInfo, items: list[Obj]) -> None:
        """A full list: what it lacks is gone, the rest is as it says."""
        listed = {key_of(obj): obj for obj in items}
        for key in [k for k in self._server[rt] if k not in listed]:
            known = self._server[rt][key]
            self._observed(rt, "DELETED", known)
        for obj in items:
            self._observed(rt, "MODIFIED", obj)

    def _settle(self, rt: KindInfo, key: Key) -> None:
        """The queue of ``key`` is empty: the view is the server's version again."""
        self._show(rt, key, self._server[rt].get(key))

    # -- the writers

    def _queue(self, rt: KindInfo, key: Key, op: _Op) -> None:
        queue = self._queues.get((rt, key))
        if queue is None:
            self._queues[(rt, key)] = deque([op])
            self._send.send_nowait((rt, key))
        elif op.verb == "change" and queue and queue[-1].verb == "change" and len(queue) > 1:
            queue[-1].changes += op.changes  # not the one being sent: one patch for both
        else:
            queue.append(op)

    async def _writer(self) -> None:
        async for rt, key in self._receive:
            queue = self._queues[(rt, key)]
            while queue:
                op = queue[0]
                try:
                    go_on = await self._send_op(rt, key, op)
                except ApiError as error:
                    if _transient(error):
                        log.info(
                            "simulated %s failed kind=%s name=%s err=%s, retrying",
                            op.verb,
                            rt.kind,
                            key[1],
                            error,
                        )
                        await trio.sleep(RETRY_TRANSIENT)
                        continue  # the same op again
                    go_on = await self._refused(rt, key, op, error)
                queue.popleft()
                if not go_on:
                    queue.clear()
            del self._queues[(rt, key)]
            self._settle(rt, key)

    async def _send_op(self, rt: KindInfo, key: Key, op: _Op) -> bool:
        """Send one write; whether the rest of the object's queue still makes sense."""
        ns, name = key
        if op.verb == "create":
            # As created: a binding or status the passes wrote since follows as its own write,
            # as the API server would have them (a pod posted bound gets no PodScheduled).
            self.writes += 1
            answer = await self.client.request("POST", object_path(rt, ns or None), body=op.body)
            self._answered(rt, answer)
            return True
        if op.verb == "change":
            return await self._change(rt, key, op)
        if op.verb == "bind":
            self.writes += 1
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": ns},
                "target": {"apiVersion": "v1", "kind": "Node", "name": op.node},
            }
            await self.client.request(
                "POST",
                object_path(rt, ns, name, "binding"),
                body=msgspec.json.encode(binding),
            )
            # What comes next (and the view once the queue is done) starts from the bound pod,
            # never from the unbound one (a scheduler pass would bind it again).
            await self._until_seen(rt, key, lambda pod: pod is None or bool(node_name(pod)))
            return True
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if op.grace is not None:
            options["gracePeriodSeconds"] = op.grace
        self.writes += 1
        try:
            await self.client.request(
                "DELETE", object_path(rt, ns, name), body=msgspec.json.encode(options)
            )
        except ApiError as error:
            if error.status != 404:
                raise
        await self._refresh(rt, key)  # gone, or terminating: what the passes read next
        return True

    async def _change(self, rt: KindInfo, key: Key, op: _Op) -> bool:
        """Apply the changes to the server's latest version and send the difference; on a
        conflict, read it afresh and apply them again."""
        for _ in range(CONFLICT_RETRIES):
            base = self._server[rt].get(key)
            if base is None:
                return False  # gone (or never created): nothing to change
            try:
                await self._patch(rt, key, base, op.changes)
            except ApiError as error:
                if error.status != 409:
                    raise
                await self._refresh(rt, key)
                continue
            return True
        self.refused += 1
        log.info("simulated change given up kind=%s name=%s: conflicts", rt.kind, key[1])
        return False

    async def _patch(
        self, rt: KindInfo, key: Key, base: Obj, changes: list[tuple[Change, bool]]
    ) -> None:
        ns, name = key
        new = _applied(base, changes)
        patch = merge_patch(_main(base), _main(new))
        if patch:
            patch.setdefault("metadata", {})["resourceVersion"] = base["metadata"][
                "resourceVersion"
            ]
            self.writes += 1
            base = self._answered(
                rt,
                await self.client.request(
                    "PATCH",
                    object_path(rt, ns, name),
                    body=msgspec.json.encode(patch),
                    content_type="application/merge-patch+json",
                ),
            )
        delta = merge_patch(base.get("status") or {}, new.get("status") or {})
        if delta:
            patch = {
                "metadata": {"resourceVersion": base["metadata"]["resourceVersion"]},
                "status": delta,
            }
            self.writes += 1
            self._answered(
                rt,
                await self.client.request(
                    "PATCH",
                    object_path(rt, ns, name, "status"),
                    body=msgspec.json.encode(patch),
                    content_type="application/merge-patch+json",
                ),
            )

    def _answered(self, rt: KindInfo, payload: bytes) -> Obj:
        obj: Obj = msgspec.json.decode(payload)
        key = key_of(obj)
        if _version(obj) > _version(self._server[rt].get(key)):
            self._server[rt][key] = obj
        return self._server[rt][key]

    async def _until_seen(
        self, rt: KindInfo, key: Key, holds: Callable[[Obj | None], bool]
    ) -> None:
        """Until the server's version of ``key`` (None: gone) ``holds``, as the watch brings it;
        read it instead after ``WATCH_GRACE`` seconds (a watch down or lagging)."""
        with trio.move_on_after(WATCH_GRACE):
            while not holds(self._server[rt].get(key)):
                await self._seen.setdefault((rt, key), trio.Event()).wait()
            return
        await self._refresh(rt, key)

    async def _refresh(self, rt: KindInfo, key: Key) -> None:
        ns, name = key
        self.reads += 1
        try:
            self._answered(rt, await self.client.request("GET", object_path(rt, ns, name)))
        except ApiError as error:
            if error.status == 404:
                self._server[rt].pop(key, None)
            else:
                log.info("simulation read failed kind=%s name=%s err=%s", rt.kind, name, error)

    async def _refused(self, rt: KindInfo, key: Key, op: _Op, error: ApiError) -> bool:
        """A write the server did not take: the view goes back to the server's object (read
        afresh) and the passes decide again."""
        self.refused += 1
        log.info("simulated %s refused kind=%s name=%s err=%s", op.verb, rt.kind, key[1], error)
        await self._refresh(rt, key)
        return False


def _transient(error: ApiError) -> bool:
    """No answer, or the server's own trouble: worth the same request again."""
    return error.status == 0 or error.status >= 500


def _applied(base: Obj, changes: list[tuple[Change, bool]]) -> Obj:
    """``base`` with each change applied in order as the server would take it: a status
    change moves only the status, any other change everything but the status. Each change
    works on a copy of its own; what the result takes from it is never written again."""
    new = base
    for change, to_status in changes:
        changed = clone(new)
        change(changed)
        if to_status:
            new = {**new, "status": changed["status"]} if "status" in changed else new
        else:
            changed.pop("status", None)
            if "status" in new:
                changed["status"] = new["status"]
            new = changed
    return new
