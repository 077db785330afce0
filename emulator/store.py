"""The object store: every write goes through here, so the rules on stored objects (names,
metadata, defaults, custom resource schemas, ownerReferences, finalizers, generations) live in
one place; what depends on the request (authorization, field validation, media types) is the
REST layer's.

All operations are synchronous; in a single trio thread that makes each of them atomic, which
is what a real apiserver's per-object compare-and-swap gives. Each committed change gets the next
global resourceVersion, is appended to its resource's event log (for HTTP watches) and is passed
to subscribers: the hook where in-process cluster behaviours (kubelet, PDB controller, …) react.
"""

from __future__ import annotations

import base64
import bisect
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from kubetrio.emulator import daemonsets, errors, podviews, services
from kubetrio.emulator.clock import EmuClock
from kubetrio.emulator.crd import crd_status, validate_crd
from kubetrio.emulator.defaults import apply_defaults
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.eventlog import Entry, EventLog, WatchEvent
from kubetrio.emulator.gc.policy import deletion_finalizers
from kubetrio.emulator.gc.validation import check_gc_metadata
from kubetrio.emulator.jsoncopy import json_copy
from kubetrio.emulator.kinds import ResourceType, ResourceTypes, from_crd
from kubetrio.emulator.managedfields import MISSING, Writer, record_update, schema_for
from kubetrio.emulator.meta import (
    check_finalizers,
    check_object_fields,
    check_string_map,
    generate_name,
    metadata_of,
    new_uid,
    sub_object,
)
from kubetrio.emulator.namespace_conditions import deletion_conditions
from kubetrio.emulator.podadmission import admit as admit_pod
from kubetrio.emulator.podadmission import admit_update as admit_pod_update
from kubetrio.emulator.schema_admit import admit, default_stored
from kubetrio.emulator.validation import check_create, check_update

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
Hook = Callable[[ResourceType, WatchEvent], None]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"
_SERVER_MANAGED = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
)


# The built-in resources whose objects carry metadata.generation (their registry strategies set
# it on create and bump it when the spec changes); custom resources always do. ConfigMaps,
# Secrets, Services, Namespaces, Nodes, Leases, RBAC objects and the like have none.
GENERATION_TRACKED = frozenset(
    {
        "pods",
        "jobs.batch",
        "cronjobs.batch",
        "ingresses.networking.k8s.io",
        "priorityclasses.scheduling.k8s.io",
        "poddisruptionbudgets.policy",
        "daemonsets.apps",
        "replicasets.apps",
        "statefulsets.apps",
        "deployments.apps",
        "replicationcontrollers",
        "podtemplates",
        "networkpolicies.networking.k8s.io",
        "ingressclasses.networking.k8s.io",
        "endpointslices.discovery.k8s.io",
        CRD_KEY,
        "mutatingwebhookconfigurations.admissionregistration.k8s.io",
        "validatingwebhookconfigurations.admissionregistration.k8s.io",
    }
)
# What besides the spec raises a tracked kind's generation on update (its PrepareForUpdate):
# a Deployment's annotations are copied to its ReplicaSets, so changing them is a rollout.
GENERATION_ALSO_TRACKS: dict[str, tuple[str, ...]] = {"deployments.apps": ("annotations",)}
# Tracked kinds whose strategy never raises it: they keep the 1 they were created with.
GENERATION_FIXED = frozenset({"priorityclasses.scheduling.k8s.io"})
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# The status a create leaves on built-ins whose strategies reset it (what a client sent is
# dropped); Go serialises the fields without omitempty, so they read back as zeros.
CREATED_STATUS: dict[str, dict[str, Any]] = {
    "deployments.apps": {},
    "replicasets.apps": {"replicas": 0},
    "statefulsets.apps": {"replicas": 0, "availableReplicas": 0},
    "daemonsets.apps": {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
    "jobs.batch": {},
    "cronjobs.batch": {},
    "poddisruptionbudgets.policy": {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    },
    "persistentvolumeclaims": {"phase": "Pending"},
    "horizontalpodautoscalers.autoscaling": {"currentMetrics": None, "desiredReplicas": 0},
    "replicationcontrollers": {"replicas": 0},
}


@dataclass(slots=True)
class ListResult:
    entries: list[Entry]
    rv: int
    continue_token: str
    remaining: int | None


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    """What ``generation`` tracks: everything but metadata, status and type meta."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


def _generation_moves(rt: ResourceType, new: dict[str, Any], old: dict[str, Any]) -> bool:
    if rt.key in GENERATION_FIXED:
        return False
    if _spec_part(new) != _spec_part(old):
        return True
    new_md, old_md = new["metadata"], old["metadata"]
    return any(new_md.get(f) != old_md.get(f) for f in GENERATION_ALSO_TRACKS.get(rt.key, ()))


NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def _taint_not_ready(node: dict[str, Any]) -> None:
    """kube-apiserver's TaintNodesByCondition admission: a new Node is not ready until its
    lifecycle controller says so, so nothing is scheduled to it before; the taint is added
    unless one with its key and effect is there already."""
    taints = node.setdefault("spec", {}).setdefault("taints", [])
    if not any(
        t.get("key") == NOT_READY_TAINT["key"] and t.get("effect") == NOT_READY_TAINT["effect"]
        for t in taints
    ):
        taints.append(dict(NOT_READY_TAINT))


def _label_namespace(obj: dict[str, Any]) -> None:
    """A namespace always carries its name as a label (the apiserver sets it on every write)."""
    md = obj["metadata"]
    labels = md.get("labels")
    if not isinstance(labels, dict):
        labels = md["labels"] = {}
    labels[NAMESPACE_NAME_LABEL] = md["name"]


def _continue_token(rv: int, last: Key) -> str:
    raw = msgspec.json.encode({"rv": rv, "start": f"{last[0]}/{last[1]}"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _parse_continue(token: str) -> tuple[int, Key]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = msgspec.json.decode(raw)
        ns, _, name = str(data["start"]).partition("/")
        return int(data["rv"]), (ns, name)
    except Exception:
        raise errors.bad_request(f"invalid continue token: {token!r}") from None


class Store:
    def __init__(
        self, types: ResourceTypes, clock: EmuClock, window: int = 10_000, rv: int = 0
    ) -> None:
        self.types = types
        self.clock = clock
        self.window = window
        self.rv = rv
        # History is complete from here on: a log created later (first write of a kind, a new
        # CRD) still holds every event since, so only positions before this are too old.
        self.origin_rv = rv
        self._objects: dict[str, dict[Key, Entry]] = {}
        self._sorted: dict[str, list[Key]] = {}
        self._logs: dict[str, EventLog] = {}
        self._hooks: list[Hook] = []
        self.on_change: Callable[[], None] = lambda: None

    # ----------------------------------------------------------------- plumbing

    def bucket(self, rt: ResourceType) -> dict[Key, Entry]:
        return self._objects.setdefault(rt.key, {})

    def count_of(self, key: str) -> int:
        """How many objects of the resource ``key`` are stored (0 for an unknown one)."""
        return len(self._objects.get(key, ()))

    def log_for(self, rt: ResourceType) -> EventLog:
        lg = self._logs.get(rt.key)
        if lg is None:
            lg = self._logs[rt.key] = EventLog(self.window, self.origin_rv)
        return lg

    def subscribe(self, hook: Hook) -> Callable[[], None]:
        """Call ``hook(resource_type, event)`` after every committed change; returns an
        unsubscribe function. Hooks run synchronously inside the write and may write in turn."""
        self._hooks.append(hook)
        return lambda: self._hooks.remove(hook) if hook in self._hooks else None

    def _commit(self, rt: ResourceType, type_: str, entry: Entry, prev: Entry | None) -> None:
        key = _key_of(entry.obj)
        bucket = self.bucket(rt)
        keys = self._sorted.get(rt.key)  # kept sorted in place: no re-sort per LIST
        if type_ == "DELETED":
            if bucket.pop(key, None) is not None and keys is not None:
                i = bisect.bisect_left(keys, key)
                if i < len(keys) and keys[i] == key:
                    del keys[i]
        else:
            if key not in bucket and keys is not None:
                bisect.insort(keys, key)
            bucket[key] = entry
        ev = WatchEvent(type_, entry, prev)
        self.log_for(rt).append(ev)
        self.on_change()
        for hook in list(self._hooks):
            try:
                hook(rt, ev)
            except Exception:
                log.exception("store hook failed event=%r", ev)

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def sorted_keys(self, rt: ResourceType) -> list[Key]:
        keys = self._sorted.get(rt.key)
        if keys is None:
            keys = self._sorted[rt.key] = sorted(self.bucket(rt))
        return keys

    def expire_history(self) -> None:
        self.origin_rv = self.rv
        for lg in self._logs.values():
            lg.expire(self.rv)

    def history(self, rt: ResourceType) -> list[WatchEvent]:
        """The retained events of one resource, oldest first (what watches replay)."""
        return self.log_for(rt).history()

    # ----------------------------------------------------------------- reads

    def get(self, rt: ResourceType, ns: str, name: str) -> Entry:
        entry = self.bucket(rt).get((ns if rt.namespaced else "", name))
        if entry is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return entry

    def find(self, rt: ResourceType, ns: str, name: str) -> Entry | None:
        return self.bucket(rt).get((ns if rt.namespaced else "", name))

    def iter(self, rt: ResourceType, ns: str | None = None) -> Iterator[Entry]:
        bucket = self.bucket(rt)
        for key in self.sorted_keys(rt):
            if ns is None or key[0] == ns:
                yield bucket[key]

    def list_entries(
        self,
        rt: ResourceType,
        ns: str | None,
        pred: Callable[[dict[str, Any]], bool] | None,
        limit: int = 0,
        continue_token: str = "",
        exact_rv: int | None = None,
    ) -> ListResult:
        """Objects in key order; ``exact_rv`` lists the state as of that resourceVersion
        (``resourceVersionMatch=Exact``), as long as the event window still reaches it."""
        keys = self.sorted_keys(rt)
        bucket = self.bucket(rt)
        snapshot = self.rv
        start = 0
        if exact_rv is not None and not continue_token:
            lg = self.log_for(rt)
            if exact_rv < lg.compacted_rv:
                raise errors.gone(f"too old resource version: {exact_rv} ({lg.oldest_rv(self.rv)})")
            if exact_rv > self.rv:
                raise errors.ApiError(
                    504,
                    "Timeout",
                    f"Too large resource version: {exact_rv}, current: {self.rv}",
                    {
                        "causes": [
                            {
                                "reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version",
                            }
                        ]
                    },
                )
            snapshot = exact_rv
            past = self._state_at(rt, snapshot)
            if past is not None:
                keys, bucket = past
        if continue_token:
            snapshot, last = _parse_continue(continue_token)
            if snapshot < self.log_for(rt).compacted_rv or snapshot > self.rv:
                raise errors.gone(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter, or use "
                    "the continue token in this response to retrieve the remainder of the "
                    "results. Continuing with the provided token results in an inconsistent "
                    "list - objects that were created, modified, or deleted between the time "
                    "the first chunk was returned and now may show up in the list."
                )
            past = self._state_at(rt, snapshot)
            if past is not None:
                keys, bucket = past
            start = bisect.bisect_right(keys, last)
        out: list[Entry] = []
        token = ""
        remaining: int | None = None
        for i in range(start, len(keys)):
            key = keys[i]
            if ns is not None and key[0] != ns:
                continue
            entry = bucket[key]
            if pred is not None and not pred(entry.obj):
                continue
            if limit and len(out) == limit:
                token = _continue_token(snapshot, _key_of(out[-1].obj))
                if pred is None and ns is None:
                    remaining = len(keys) - i
                break
            out.append(entry)
        return ListResult(out, snapshot, token, remaining)

    def _state_at(self, rt: ResourceType, rv: int) -> tuple[list[Key], dict[Key, Entry]] | None:
        """The resource's objects as of ``rv``, rebuilt by undoing the logged events after it
        (None when nothing changed since), so every page of a paginated LIST shows the same
        snapshot, as the apiserver's continue tokens do."""
        lg = self.log_for(rt)
        seq = lg.seq_after(rv, self.rv)
        events = lg.read(seq, lg.end - seq)
        if not events:
            return None
        overlay: dict[Key, Entry | None] = {}
        for ev in reversed(events):
            overlay[_key_of(ev.entry.obj)] = None if ev.type == "ADDED" else ev.prev
        bucket = dict(self.bucket(rt))
        for key, entry in overlay.items():
            if entry is None:
                bucket.pop(key, None)
            else:
                bucket[key] = entry
        return sorted(bucket), bucket

    # ----------------------------------------------------------------- writes

    def create(
        self,
        rt: ResourceType,
        ns: str,
        obj: dict[str, Any],
        dry_run: bool = False,
        writer: Writer | None = None,
    ) -> Entry:
        """``writer``: who creates, recorded in managedFields (None: the body's are kept)."""
        md = metadata_of(obj)
        sent = md.get("managedFields", MISSING)
        if rt.builtin:
            check_object_fields(rt.kind, obj)
        name = md.get("name")
        if not name:
            prefix = md.get("generateName")
            if not prefix:
                raise errors.invalid(
                    rt.group,
                    rt.kind,
                    "",
                    [
                        (
                            "FieldValueRequired",
                            "metadata.name",
                            "Required value: name or generateName is required",
                        )
                    ],
                )
            if not isinstance(prefix, str):
                raise errors.bad_request("metadata.generateName: must be a string")
            for _ in range(16):
                name = generate_name(prefix)
                if self.find(rt, ns, name) is None:
                    break
            md["name"] = name
        if not isinstance(name, str):
            raise errors.bad_request("metadata.name: must be a string")
        self._check_namespace(rt, ns, md, name)
        check_string_map(rt.group, rt.kind, name, md, "labels")
        check_string_map(rt.group, rt.kind, name, md, "annotations")
        check_finalizers(rt.group, rt.kind, name, md)
        check_gc_metadata(rt.group, rt.kind, name, md)
        if md.get("resourceVersion"):
            # Refused by the storage layer itself, hence a bare 500.
            raise errors.ApiError(
                500, "", "resourceVersion should not be set on objects to be created"
            )
        for f in _SERVER_MANAGED:
            md.pop(f, None)
        md["uid"] = new_uid()
        md["creationTimestamp"] = self.clock.wall_rfc3339()
        if not rt.builtin or rt.key in GENERATION_TRACKED:
            md["generation"] = 1
        if writer is not None and rt.builtin:
            # The creator owns what it sent, defaulted as decoding defaults it; not what
            # the create itself fills in next (allocated IPs, a namespace's finalizer).
            apply_defaults(rt.key, obj)
            self._track(rt, None, obj, sent, writer)
        self._prepare_create(rt, obj)
        check_create(rt, obj)
        if not rt.builtin:
            admit(self.crd_of(rt), rt.group, rt.kind, obj)
        if writer is not None and not rt.builtin:
            self._track(rt, None, obj, sent, writer)
        if self.find(rt, ns, name) is not None:
            raise errors.already_exists(rt.group, rt.plural, name)
        if dry_run:
            return Entry(obj, 0)
        md["resourceVersion"] = str(self._next_rv())
        entry = Entry(_ordered(obj), self.rv)
        self._commit(rt, "ADDED", entry, None)
        if rt.key == CRD_KEY:
            self._register_crd(entry.obj)
        return entry

    def _track(
        self,
        rt: ResourceType,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        sent: Any,
        writer: Writer,
    ) -> None:
        """Record ``writer``'s fields in ``new``'s managedFields (or set the entries an
        apply computed)."""
        if writer.result is not None:
            if writer.result:
                new["metadata"]["managedFields"] = writer.result
            else:
                new["metadata"].pop("managedFields", None)
            return
        version = str(new.get("apiVersion", "")).rpartition("/")[2]
        schema = schema_for(rt, None if rt.builtin else self.crd_of(rt), version)
        # Writes through scale are recorded without a time, as the apiserver's scale handler
        # records them.
        now = None if writer.subresource == "scale" else self.clock.wall_rfc3339()
        record_update(schema, old, new, sent, writer, now)

    def _service_account(self, ns: str, name: str) -> dict[str, Any] | None:
        accounts = self.types.lookup("", "v1", "serviceaccounts")
        entry = self.find(accounts, ns, name) if accounts is not None else None
        return entry.obj if entry is not None else None

    def _priority_class(self, name: str) -> dict[str, Any] | None:
        classes = self.types.lookup("scheduling.k8s.io", "v1", "priorityclasses")
        entry = self.find(classes, "", name) if classes is not None else None
        return entry.obj if entry is not None else None

    def _priority_classes(self) -> Iterator[dict[str, Any]]:
        classes = self.types.lookup("scheduling.k8s.io", "v1", "priorityclasses")
        if classes is not None:
            for entry in self.iter(classes):
                yield entry.obj

    def _check_namespace(self, rt: ResourceType, ns: str, md: dict[str, Any], name: str) -> None:
        if not rt.namespaced:
            md.pop("namespace", None)
            return
        body_ns = md.get("namespace")
        if body_ns and body_ns != ns:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        md["namespace"] = ns
        ns_rt = self.types.lookup("", "v1", "namespaces")
        assert ns_rt is not None
        namespace = self.find(ns_rt, "", ns)
        if namespace is None:
            raise errors.not_found("", "namespaces", ns)
        if namespace.obj["metadata"].get("deletionTimestamp"):
            refused = errors.forbidden(
                rt.group,
                rt.plural,
                name,
                f"unable to create new content in namespace {ns} because it is being terminated",
            )
            refused.details = refused.details or {}
            refused.details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {ns} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise refused

    def _prepare_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Kind-specific defaults the apiserver applies on create (PrepareForCreate)."""
        apply_defaults(rt.key, obj)
        if rt.key == "pods":
            admit_pod(
                obj,
                obj["metadata"]["namespace"],
                self._service_account,
                self._priority_class,
                self._priority_classes,
            )
        elif rt.key == "services":
            services.allocate(obj, (e.obj for e in self.iter(rt)))
            obj["status"] = {"loadBalancer": {}}
        elif rt.key == "namespaces":
            _label_namespace(obj)
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
        elif rt.key == CRD_KEY:
            validate_crd(self.types, obj)
            obj["status"] = crd_status(obj, self.clock.wall_rfc3339())
        elif rt.key in CREATED_STATUS:
            obj["status"] = json_copy(CREATED_STATUS[rt.key])
        elif rt.key == "nodes":
            _taint_not_ready(obj)
        elif rt.key == "persistentvolumes":
            obj["status"] = {
                "phase": "Pending",
                "lastPhaseTransitionTime": self.clock.wall_rfc3339(),
            }
        elif not rt.builtin and rt.has_status:
            obj.pop("status", None)
        if rt.key == "daemonsets.apps":
            daemonsets.prepare_create(obj)

    def update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        obj: dict[str, Any],
        subresource: str = "",
        dry_run: bool = False,
        writer: Writer | None = None,
    ) -> Entry:
        """``writer``: who updates, recorded in managedFields (None: the body's are kept,
        or the old object's on a status write)."""
        old = self.get(rt, ns, name)
        md = metadata_of(obj)
        sent = md.get("managedFields", MISSING)
        if rt.builtin:
            check_object_fields(rt.kind, obj)
        body_name = md.get("name")
        if body_name is None:
            md["name"] = name
        elif body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        if rt.namespaced:
            body_ns = md.get("namespace")
            if body_ns and body_ns != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
        want_rv = md.get("resourceVersion")
        if want_rv not in (None, "") and str(want_rv) != str(old.rv):
            raise errors.conflict(rt.group, rt.plural, name)
        old_md = old.obj["metadata"]
        uid = md.get("uid")
        if uid and uid != old_md.get("uid"):
            raise errors.conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{old_md.get('uid')}",
            )
        if subresource == "status":
            new = old.clone()
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            apply_defaults(rt.key, new)  # a status write is decoded, so defaulted, too
        elif subresource == "finalize":
            new = old.clone()
            finalizers = sub_object(obj, "spec", "spec").get("finalizers")
            new["spec"] = {"finalizers": finalizers} if finalizers else {}
        elif subresource in podviews.VIEWS:
            new = podviews.changed(subresource, old.clone(), obj)
            apply_defaults(rt.key, new)
        elif subresource == "binding":
            # A pod's binding writes its node and PodScheduled condition together, as
            # kube's binding storage does, past the pod's update rules.
            new = old.clone()
            new["spec"] = obj.get("spec") or {}
            new["status"] = obj.get("status") or {}
        else:
            check_string_map(rt.group, rt.kind, name, md, "labels")
            check_string_map(rt.group, rt.kind, name, md, "annotations")
            check_finalizers(rt.group, rt.kind, name, md)
            check_gc_metadata(rt.group, rt.kind, name, md)
            new = obj
            if rt.has_status:
                if "status" in old.obj:
                    new["status"] = json_copy(old.obj["status"])
                else:
                    new.pop("status", None)
            for f in _SERVER_MANAGED:
                if f in old_md:
                    md[f] = old_md[f]
                else:
                    md.pop(f, None)
            if rt.namespaced:
                md["namespace"] = ns
            else:
                md.pop("namespace", None)
            if rt.key == CRD_KEY:
                validate_crd(self.types, new)
                new["status"] = crd_status(new, self.clock.wall_rfc3339())
            apply_defaults(rt.key, new)
            if rt.key == "pods":
                admit_pod_update(new)
            elif rt.key == "daemonsets.apps":
                daemonsets.prepare_update(new, old.obj)
            elif rt.key == "namespaces":
                _label_namespace(new)
                # spec.finalizers change only through the finalize subresource.
                new["spec"] = json_copy(old.obj.get("spec") or {})
            if rt.key == "services":
                services.keep_allocated(new, old.obj, (e.obj for e in self.iter(rt)))
        check_update(rt, new, old.obj, subresource)
        if not rt.builtin:
            admit(self.crd_of(rt), rt.group, rt.kind, new, old.obj)
        if writer is not None:
            self._track(rt, old.obj, new, sent, writer)
        new_md = new["metadata"]
        new_md["resourceVersion"] = old_md.get("resourceVersion")
        if (
            "generation" in old_md
            and subresource != "binding"
            and _generation_moves(rt, new, old.obj)
        ):
            new_md["generation"] = int(old_md["generation"]) + 1
        new = _ordered(new)
        if new == old.obj:
            return old  # a no-op write does not bump the resourceVersion, as in etcd3 storage
        if dry_run:
            return Entry(new, old.rv)
        new_md["resourceVersion"] = str(self._next_rv())
        entry = Entry(new, self.rv)
        if (
            new_md.get("deletionTimestamp")
            and not new_md.get("finalizers")
            and old_md.get("finalizers")
            and not new_md.get("deletionGracePeriodSeconds")
        ):
            self._remove(rt, entry, old)
            return entry
        self._commit(rt, "MODIFIED", entry, old)
        if rt.key == CRD_KEY:
            self._register_crd(entry.obj)
        return entry

    def delete(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        grace: int | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        propagation: str | None = None,
        orphan_dependents: bool | None = None,
    ) -> tuple[Entry, bool]:
        """Delete or mark deleting; returns (object, removed now). ``propagation`` /
        ``orphan_dependents`` set the garbage collector's finalizers (see gc.policy)."""
        old = self.get(rt, ns, name)
        if rt.key == "namespaces" and name in PROTECTED_NAMESPACES:
            raise errors.forbidden("", "namespaces", name, "this namespace may not be deleted")
        if rt.key == "namespaces" and not dry_run:
            return self._delete_namespace(rt, old)
        md = old.obj["metadata"]
        if preconditions:
            uid = preconditions.get("uid")
            if uid and uid != md.get("uid"):
                raise errors.conflict(
                    rt.group,
                    rt.plural,
                    name,
                    f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                    f"{md.get('uid')}",
                )
            prv = preconditions.get("resourceVersion")
            if prv and str(prv) != md.get("resourceVersion"):
                raise errors.conflict(
                    rt.group,
                    rt.plural,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {prv}, "
                    f"ResourceVersion in object meta: {md.get('resourceVersion')}",
                )
        period = self._grace_period(rt, old.obj, grace)
        gc_finalizers = deletion_finalizers(rt, md, propagation, orphan_dependents)
        finalizers = md.get("finalizers") or [] if gc_finalizers is None else gc_finalizers
        if dry_run:
            return old, not finalizers and not period
        if md.get("deletionTimestamp"):
            current = md.get("deletionGracePeriodSeconds") or 0
            if period < current:
                return self._mark_deleting(rt, old, period, finalizers)
            if current or gc_finalizers is None:
                return old, False  # graceful deletion pending: its options are settled
            return self._mark_deleting(rt, old, 0, finalizers)
        if finalizers or period > 0:
            return self._mark_deleting(rt, old, period, finalizers)
        new = old.clone()
        new["metadata"]["resourceVersion"] = str(self._next_rv())
        entry = Entry(new, self.rv)
        self._remove(rt, entry, old)
        return entry, True

    def _mark_deleting(
        self, rt: ResourceType, old: Entry, period: int, finalizers: list[str]
    ) -> tuple[Entry, bool]:
        new = old.clone()
        nmd = new["metadata"]
        if not nmd.get("deletionTimestamp") and isinstance(nmd.get("generation"), int):
            nmd["generation"] += 1  # the apiserver bumps generation when deletion starts
        if not nmd.get("deletionTimestamp") or nmd.get("deletionGracePeriodSeconds"):
            nmd["deletionTimestamp"] = self.clock.now_rfc3339(period)
        nmd["deletionGracePeriodSeconds"] = period
        if finalizers:
            nmd["finalizers"] = finalizers
        else:
            nmd.pop("finalizers", None)
        nmd["resourceVersion"] = str(self._next_rv())
        entry = Entry(new, self.rv)
        if period == 0 and not finalizers:
            self._remove(rt, entry, old)
            return entry, True
        self._commit(rt, "MODIFIED", entry, old)
        return entry, False

    def _grace_period(self, rt: ResourceType, obj: dict[str, Any], grace: int | None) -> int:
        """Seconds of graceful termination: only pods bound to a node get any."""
        if rt.key != "pods":
            return 0
        spec = obj.get("spec") or {}
        if not spec.get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        if grace is None:
            g = spec.get("terminationGracePeriodSeconds")
            grace = int(g) if isinstance(g, int) else 30
        return 1 if grace < 0 else grace

    def _remove(self, rt: ResourceType, entry: Entry, prev: Entry) -> None:
        self._commit(rt, "DELETED", entry, prev)
        if rt.key == CRD_KEY:
            self._unregister_crd(entry.obj)
        elif rt.namespaced:
            self._finish_namespace_if_empty(entry.obj["metadata"].get("namespace", ""))

    # ----------------------------------------------------------------- namespaces

    def _delete_namespace(self, rt: ResourceType, old: Entry) -> tuple[Entry, bool]:
        """The namespace goes Terminating, its contents are deleted by the usual rules (so
        finalizers and graceful pod termination hold it), and it disappears once empty: the
        namespace controller's job, done synchronously."""
        name = old.obj["metadata"]["name"]
        if old.obj["metadata"].get("deletionTimestamp"):
            return old, False
        new = old.clone()
        new["metadata"]["deletionTimestamp"] = self.clock.now_rfc3339()
        new.setdefault("status", {})["phase"] = "Terminating"
        new["metadata"]["resourceVersion"] = str(self._next_rv())
        marked = Entry(new, self.rv)
        self._commit(rt, "MODIFIED", marked, old)
        for content_rt in self.types.all():
            if not content_rt.namespaced:
                continue
            for entry in list(self.iter(content_rt, name)):
                if not entry.obj["metadata"].get("deletionTimestamp"):
                    # The namespace controller deletes in the background.
                    self.delete(
                        content_rt, name, entry.obj["metadata"]["name"], propagation="Background"
                    )
        self._finish_namespace_if_empty(name)
        # The answer is the namespace as marked: the controller's conditions come after it.
        return marked, self.find(rt, "", name) is None

    def _finish_namespace_if_empty(self, ns: str) -> None:
        ns_rt = self.types.lookup("", "v1", "namespaces")
        assert ns_rt is not None
        namespace = self.find(ns_rt, "", ns)
        if namespace is None or not namespace.obj["metadata"].get("deletionTimestamp"):
            return
        remaining: Counter[str] = Counter()
        finalizers: Counter[str] = Counter()
        for rt in self.types.all():
            if not rt.namespaced:
                continue
            for key, entry in self.bucket(rt).items():
                if key[0] == ns:
                    remaining[f"{rt.plural}.{rt.group}"] += 1
                    finalizers.update(entry.obj["metadata"].get("finalizers") or [])
        if remaining:
            self._report_namespace_content(ns_rt, namespace, remaining, finalizers)
            return
        new = namespace.clone()
        new["metadata"]["resourceVersion"] = str(self._next_rv())
        new.get("spec", {}).pop("finalizers", None)
        self._commit(ns_rt, "DELETED", Entry(new, self.rv), namespace)

    def _report_namespace_content(
        self,
        ns_rt: ResourceType,
        namespace: Entry,
        remaining: Counter[str],
        finalizers: Counter[str],
    ) -> None:
        status = namespace.obj.get("status") or {}
        conditions = deletion_conditions(
            remaining, finalizers, status.get("conditions"), self.clock.wall_rfc3339()
        )
        if conditions == status.get("conditions"):
            return
        new = namespace.clone()
        new.setdefault("status", {})["conditions"] = conditions
        new["metadata"]["resourceVersion"] = str(self._next_rv())
        self._commit(ns_rt, "MODIFIED", Entry(new, self.rv), namespace)

    # ----------------------------------------------------------------- CRDs

    def _register_crd(self, obj: dict[str, Any]) -> None:
        rt = from_crd(obj)
        if rt.key != CRD_KEY:
            new = self.types.by_key(rt.key) is None
            self.types.add(rt)
            if new:
                # Its watch cache starts now: a watch from an older resourceVersion is 410.
                self.log_for(rt).expire(self.rv)
            for entry in list(self.iter(rt)):
                self._default_stored(rt, entry)

    def crd_of(self, rt: ResourceType) -> dict[str, Any] | None:
        """The CRD that serves ``rt`` (None for built-ins)."""
        entry = self._objects.get(CRD_KEY, {}).get(("", rt.key))
        return entry.obj if entry is not None else None

    def _default_stored(self, rt: ResourceType, entry: Entry) -> None:
        """Reads from storage see the current schema's defaults, as kube defaults on every
        read from etcd: the stored entry is replaced, its resourceVersion kept."""
        new = default_stored(self.crd_of(rt), entry.obj)
        if new is not None:
            self.bucket(rt)[_key_of(new)] = Entry(_ordered(new), entry.rv)

    def _unregister_crd(self, obj: dict[str, Any]) -> None:
        """The CRD is gone, so are its objects (the apiextensions cleanup finalizer's job)."""
        try:
            rt = from_crd(obj)
        except ValueError:
            return
        served = self.types.by_key(rt.key)
        if served is None or served.builtin:
            return
        for entry in list(self.iter(served)):
            new = entry.clone()
            new["metadata"]["resourceVersion"] = str(self._next_rv())
            self._commit(served, "DELETED", Entry(new, self.rv), entry)
        self.types.remove(rt.key)

    # ----------------------------------------------------------------- bootstrapping

    def ensure_default_namespaces(self) -> None:
        ns_rt = self.types.lookup("", "v1", "namespaces")
        assert ns_rt is not None
        for ns in DEFAULT_NAMESPACES:
            if self.find(ns_rt, "", ns) is None:
                self.create(
                    ns_rt,
                    "",
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                )
        svc_rt = self.types.lookup("", "v1", "services")
        assert svc_rt is not None
        if self.find(svc_rt, "default", "kubernetes") is None:
            self.create(svc_rt, "default", services.kubernetes_service())

    def load(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Put a persisted object back without an event (restoring, not writing)."""
        rv = int(obj["metadata"].get("resourceVersion") or 0)
        self.bucket(rt)[_key_of(obj)] = Entry(obj, rv)
        if not rt.builtin:
            self._default_stored(rt, Entry(obj, rv))
        self._sorted.pop(rt.key, None)
        if rt.key == CRD_KEY:
            self._register_crd(obj)

    def snapshot(self) -> Iterator[tuple[str, Entry]]:
        """(resource key, entry) for every stored object, CRDs first."""
        crds = self._objects.get(CRD_KEY, {})
        for entry in crds.values():
            yield CRD_KEY, entry
        for key, bucket in self._objects.items():
            if key == CRD_KEY:
                continue
            for entry in bucket.values():
                yield key, entry


def _key_of(obj: dict[str, Any]) -> Key:
    md = obj["metadata"]
    return (md.get("namespace") or "", md["name"])


def _ordered(obj: dict[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata, spec…, status: the field order kubectl users expect."""
    out: dict[str, Any] = {}
    for k in ("apiVersion", "kind", "metadata"):
        if k in obj:
            out[k] = obj[k]
    for k, v in obj.items():
        if k not in out and k != "status":
            out[k] = v
    if "status" in obj:
        out["status"] = obj["status"]
    return out


__all__ = ["CRD_KEY", "ApiError", "Entry", "ListResult", "Store", "WatchEvent"]
