"""The garbage collector (kube-controller-manager's): deletes objects whose owners are all
gone, orphans dependents of owners deleted with the ``orphan`` finalizer, and holds owners
deleted in the foreground until their blocking dependents are gone.

Like the real one it keeps a graph (owner UID -> dependent UIDs) fed by every committed change,
and two work queues (attempt-to-delete, attempt-to-orphan). A store hook only updates the graph
and queues UIDs, in O(1) per change for objects without ownerReferences; the collector's own
task on the emulator's trio clock drains the queues, so dependents go shortly after their
owner without wall time, and no pass ever scans every object.

Owners are verified as the real collector's ``isDangling`` does: by name in the dependent's
namespace (or cluster-wide for a cluster-scoped kind) and then by UID, so a reference to a UID
that does not exist, or to an owner in another namespace, is dangling. A cluster-scoped
dependent naming a namespaced owner kind is never collected. Both invalid cases are reported
as an ``OwnerRefInvalidNamespace`` Warning Event when the referenced UID exists.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.eventlog import Entry, WatchEvent
from kubetrio.emulator.gc.ownerrefs import owner_refs, owner_uids
from kubetrio.emulator.gc.policy import FOREGROUND, ORPHAN
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Store

log = logging.getLogger("kubetrio.emulator.gc")

Loc = tuple[str, str, str]  # (resource key, namespace, name)
COMPONENT = "garbage-collector-controller"
# Queue items handled before the task yields to the rest of the run.
_BATCH = 500


class GarbageCollector:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.types = store.types
        self._where: dict[str, Loc] = {}  # every stored object's UID
        self._dependents: dict[str, set[str]] = {}  # owner UID -> dependent UIDs
        self._foreground: set[str] = set()  # owners deleting their dependents first
        self._to_delete: dict[str, None] = {}  # insertion-ordered sets: queues without duplicates
        self._to_orphan: dict[str, None] = {}
        self._reported: set[tuple[str, str]] = set()
        self._wakeup = trio.Event()
        self._pass_done = trio.Event()
        # What a restored state holds is verified as the real collector's first sync does.
        for rt in self.types.all():
            for entry in store.iter(rt):
                self._observe(rt, entry.obj, None)
        if self._to_delete or self._to_orphan:
            self._wakeup.set()
        store.subscribe(self._on_change)

    # ----------------------------------------------------------------- graph (store hook)

    def _on_change(self, rt: ResourceType, ev: WatchEvent) -> None:
        prev = ev.prev.obj if ev.prev is not None else None
        if ev.type == "DELETED":
            self._forget(ev.entry.obj)
        else:
            self._observe(rt, ev.entry.obj, prev)
        if self._to_delete or self._to_orphan:
            self._wakeup.set()

    def _observe(self, rt: ResourceType, obj: dict[str, Any], prev: dict[str, Any] | None) -> None:
        md = obj["metadata"]
        uid = str(md.get("uid", ""))
        if prev is None:
            self._where[uid] = (rt.key, md.get("namespace", ""), md["name"])
        refs = md.get("ownerReferences")
        old_refs = prev["metadata"].get("ownerReferences") if prev is not None else None
        if (refs or old_refs) and refs != old_refs:
            new = owner_uids(obj)
            old = owner_uids(prev) if prev is not None else set()
            for owner in old - new:
                self._unlink(owner, uid)
            for owner in new - old:
                self._dependents.setdefault(owner, set()).add(uid)
            if new - old:
                self._to_delete[uid] = None  # verify the new owners exist
            # A foreground owner may be waiting for exactly this change (a reference dropped
            # or made non-blocking).
            for owner in old | new:
                if owner in self._foreground:
                    self._to_delete[owner] = None
        if md.get("deletionTimestamp"):
            finalizers = md.get("finalizers") or ()
            was = prev["metadata"] if prev is not None else {}
            if ORPHAN in finalizers and not (
                was.get("deletionTimestamp") and ORPHAN in (was.get("finalizers") or ())
            ):
                self._to_orphan[uid] = None
            if FOREGROUND in finalizers:
                if uid not in self._foreground:
                    self._foreground.add(uid)
                    self._to_delete[uid] = None
                    for dep in self._dependents.get(uid, ()):
                        self._to_delete[dep] = None
            else:
                self._foreground.discard(uid)

    def _forget(self, obj: dict[str, Any]) -> None:
        uid = str(obj["metadata"].get("uid", ""))
        self._where.pop(uid, None)
        self._foreground.discard(uid)
        self._to_orphan.pop(uid, None)
        for owner in owner_uids(obj):
            self._unlink(owner, uid)
            if owner in self._foreground:
                self._to_delete[owner] = None
        for dep in self._dependents.get(uid, ()):
            self._to_delete[dep] = None

    def _unlink(self, owner: str, dependent: str) -> None:
        deps = self._dependents.get(owner)
        if deps is not None:
            deps.discard(dependent)
            if not deps:
                del self._dependents[owner]

    # ----------------------------------------------------------------- the task

    async def run(self) -> None:
        """Until cancelled: drain the queues whenever a change gave them work."""
        while True:
            await self._wakeup.wait()
            self._wakeup = trio.Event()
            self.process()
            done, self._pass_done = self._pass_done, trio.Event()
            done.set()
            await trio.lowlevel.checkpoint()

    async def settled(self) -> None:
        """Until every queued item has been handled: what the changes so far give the collector
        to do is done (tests wait on this rather than on time)."""
        while self._to_delete or self._to_orphan:
            await self._pass_done.wait()

    def process(self, budget: int = _BATCH) -> None:
        """Handle up to ``budget`` queued items (what one pass does; the rest waits for the
        next, after a checkpoint)."""
        for _ in range(budget):
            if self._to_orphan:
                queue, handle = self._to_orphan, self._attempt_to_orphan
            elif self._to_delete:
                queue, handle = self._to_delete, self._attempt_to_delete
            else:
                return
            uid = next(iter(queue))
            del queue[uid]
            try:
                handle(uid)
            except ApiError as exc:
                log.info("garbage collector write refused uid=%s err=%s", uid, exc)
            except Exception:
                log.exception("garbage collector failed uid=%s", uid)
        if self._to_delete or self._to_orphan:
            self._wakeup.set()

    # ----------------------------------------------------------------- workers

    def _find(self, uid: str) -> tuple[ResourceType, Entry] | None:
        loc = self._where.get(uid)
        if loc is None:
            return None
        rt = self.types.by_key(loc[0])
        if rt is None:
            return None
        entry = self.store.find(rt, loc[1], loc[2])
        if entry is None or entry.obj["metadata"].get("uid") != uid:
            return None
        return rt, entry

    def _attempt_to_delete(self, uid: str) -> None:
        found = self._find(uid)
        if found is None:
            return
        rt, entry = found
        md = entry.obj["metadata"]
        finalizers = md.get("finalizers") or ()
        if md.get("deletionTimestamp"):
            if FOREGROUND in finalizers:
                self._process_deleting_dependents(uid, rt, entry)
            return
        refs = owner_refs(entry.obj)
        if not refs:
            return
        verdict = self._classify(rt, entry, refs)
        if verdict is None:
            return
        solid, dangling, waiting = verdict
        if solid:
            gone = {str(r.get("uid")) for r in dangling + waiting}
            if gone:
                self._drop_refs(rt, entry, gone)
            return
        if waiting and self._dependents.get(uid):
            if any(dep in self._foreground for dep in self._dependents[uid]):
                # Its own dependent waits for it too: unblock to avoid a cycle, as kube does.
                self._unblock(rt, entry)
            self._delete(rt, entry, "Foreground")
            return
        if ORPHAN in finalizers:
            self._delete(rt, entry, "Orphan")
        elif FOREGROUND in finalizers:
            self._delete(rt, entry, "Foreground")
        else:
            self._delete(rt, entry, "Background")

    def _classify(
        self, rt: ResourceType, entry: Entry, refs: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]] | None:
        """(solid, dangling, waiting-for-dependents-deletion) owners; None when an owner cannot
        be resolved (an unserved kind, or a namespaced owner of a cluster-scoped object): the
        real collector leaves such an object alone."""
        ns = entry.obj["metadata"].get("namespace", "")
        solid: list[dict[str, Any]] = []
        dangling: list[dict[str, Any]] = []
        waiting: list[dict[str, Any]] = []
        for ref in refs:
            owner_rt = self.types.by_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
            if owner_rt is None:
                log.info("owner kind not served ref=%s", ref)
                return None
            if owner_rt.namespaced and not rt.namespaced:
                self._report_invalid(rt, entry, ref)
                return None
            owner = self.store.find(owner_rt, ns, str(ref.get("name", "")))
            if owner is None or owner.obj["metadata"].get("uid") != ref.get("uid"):
                if owner_rt.namespaced:
                    self._report_invalid(rt, entry, ref)
                dangling.append(ref)
                continue
            omd = owner.obj["metadata"]
            if omd.get("deletionTimestamp") and FOREGROUND in (omd.get("finalizers") or ()):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    def _process_deleting_dependents(self, uid: str, rt: ResourceType, entry: Entry) -> None:
        blocking = []
        for dep in self._dependents.get(uid, ()):
            found = self._find(dep)
            if found is not None and any(
                r.get("uid") == uid and r.get("blockOwnerDeletion") is True
                for r in owner_refs(found[1].obj)
            ):
                blocking.append(dep)
        if not blocking:
            self._remove_finalizer(rt, entry, FOREGROUND)
            return
        for dep in blocking:
            if dep not in self._foreground:
                self._to_delete[dep] = None

    def _attempt_to_orphan(self, uid: str) -> None:
        found = self._find(uid)
        if found is None:
            return
        _, entry = found
        md = entry.obj["metadata"]
        if not md.get("deletionTimestamp") or ORPHAN not in (md.get("finalizers") or ()):
            return
        for dep in list(self._dependents.get(uid, ())):
            dep_found = self._find(dep)
            if dep_found is not None:
                self._drop_refs(*dep_found, {uid})
        current = self._find(uid)
        if current is not None:
            self._remove_finalizer(*current, ORPHAN)

    # ----------------------------------------------------------------- writes

    def _write(self, rt: ResourceType, entry: Entry, obj: dict[str, Any]) -> None:
        md = entry.obj["metadata"]
        self.store.update(rt, md.get("namespace", ""), md["name"], obj)

    def _drop_refs(self, rt: ResourceType, entry: Entry, uids: set[str]) -> None:
        new = entry.clone()
        refs = [r for r in owner_refs(new) if str(r.get("uid")) not in uids]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        self._write(rt, entry, new)

    def _unblock(self, rt: ResourceType, entry: Entry) -> None:
        new = entry.clone()
        for ref in owner_refs(new):
            if ref.get("blockOwnerDeletion"):
                ref["blockOwnerDeletion"] = False
        self._write(rt, entry, new)

    def _remove_finalizer(self, rt: ResourceType, entry: Entry, finalizer: str) -> None:
        new = entry.clone()
        rest = [f for f in new["metadata"].get("finalizers") or [] if f != finalizer]
        if rest:
            new["metadata"]["finalizers"] = rest
        else:
            new["metadata"].pop("finalizers", None)
        self._write(rt, entry, new)

    def _delete(self, rt: ResourceType, entry: Entry, policy: str) -> None:
        md = entry.obj["metadata"]
        try:
            self.store.delete(
                rt,
                md.get("namespace", ""),
                md["name"],
                preconditions={"uid": md.get("uid")},
                propagation=policy,
            )
        except ApiError as exc:
            if exc.code != 404:
                raise

    # ----------------------------------------------------------------- events

    def _report_invalid(self, rt: ResourceType, entry: Entry, ref: dict[str, Any]) -> None:
        """The Warning Event kube's graph builder records when a namespaced owner's UID is
        referenced from another namespace or from a cluster-scoped object."""
        md = entry.obj["metadata"]
        uid = str(md.get("uid", ""))
        owner_uid = str(ref.get("uid", ""))
        owner_loc = self._where.get(owner_uid)
        ns = md.get("namespace", "")
        if owner_loc is None or not owner_loc[1] or owner_loc[1] == ns:
            return
        if (uid, owner_uid) in self._reported:
            return
        self._reported.add((uid, owner_uid))
        events = self.types.lookup("", "v1", "events")
        if events is None:
            return
        event_ns = ns or "default"
        now = self.store.clock.now_rfc3339()
        # client-go names an event <object>.<unix nanoseconds in hex>
        stamp = int(self.store.clock.now().timestamp() * 1e9)
        involved = {
            "kind": entry.obj.get("kind", rt.kind),
            "namespace": ns,
            "name": md["name"],
            "uid": uid,
            "apiVersion": entry.obj.get("apiVersion", rt.api_version()),
        }
        if not ns:
            del involved["namespace"]
        message = (
            f"ownerRef [{ref.get('apiVersion', '')}/{ref.get('kind', '')}, namespace: {ns}, "
            f'name: {ref.get("name", "")}, uid: {owner_uid}] does not exist in namespace "{ns}"'
        )
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{md['name']}.{stamp:x}", "namespace": event_ns},
            "involvedObject": involved,
            "reason": "OwnerRefInvalidNamespace",
            "message": message,
            "source": {"component": COMPONENT},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": "Warning",
            "reportingComponent": COMPONENT,
            "reportingInstance": "",
        }
        try:
            self.store.create(events, event_ns, event)
        except ApiError as exc:
            log.info("garbage collector event refused err=%s", exc)
