"""The Kubernetes REST API over the store: URL parsing, verbs, content negotiation, auth,
fault injection and request counting."""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import trio
import yaml

from kubetrio.emulator import crdconvert, discovery, errors, fieldcheck, gaps, scale
from kubetrio.emulator.admission.dispatch import Admission, Outcome
from kubetrio.emulator.admission.rules import Attributes
from kubetrio.emulator.audit import AuditLog, AuditRecord
from kubetrio.emulator.auth import Access
from kubetrio.emulator.auth.users import ANONYMOUS_USER, UserInfo
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.eventlog import Entry
from kubetrio.emulator.eviction import evict
from kubetrio.emulator.faults import Counters, Decision, Faults, reason_for
from kubetrio.emulator.fieldvalidation import duplicate_fields
from kubetrio.emulator.gc.policy import delete_warning
from kubetrio.emulator.http import (
    JSON,
    Request,
    Response,
    StreamResponse,
    StreamWriter,
    json_response,
)
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.kubepb import negotiate as pbneg
from kubetrio.emulator.kubepb import rest as pb
from kubetrio.emulator.meta import check_type_meta, sub_object
from kubetrio.emulator.openapi import OpenApi
from kubetrio.emulator.options import DeleteOptions, parse_delete_options
from kubetrio.emulator.patch import json_patch, merge_patch, strategic_merge
from kubetrio.emulator.schema_admit import field_validation
from kubetrio.emulator.selectors import FieldSelector, LabelSelector, combine
from kubetrio.emulator.store import Store
from kubetrio.emulator.tables import table
from kubetrio.emulator.watch import Encoder, Watch, WatchSpec
from kubetrio.runtime.util.clock import now
from kubetrio.runtime.util.inflight import waiting_on_simulated_time

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Target:
    rt: ResourceType
    version: str
    namespace: str | None  # None: all namespaces (or cluster-scoped)
    name: str
    sub: str
    watch_path: bool
    pb: bool = False  # the response is protobuf (negotiated from Accept)
    user: UserInfo = ANONYMOUS_USER  # who asks (authenticated and authorized already)
    audit: AuditRecord | None = None  # where webhooks' audit annotations go


@dataclass(slots=True)
class ApiSettings:
    bookmark_interval: float = 60.0
    server_address: str = "127.0.0.1:0"


def _decode(body: bytes) -> Any:
    if not body:
        raise errors.bad_request("the request body is empty")
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from None


_TOKEN_REQUEST = ("authentication.k8s.io/v1", "TokenRequest")
_EVICTION = ("policy/v1", "Eviction")
_BINDING = ("v1", "Binding")
_DELETE_OPTIONS = ("meta.k8s.io/v1", "DeleteOptions")
_PATCH_TYPES = frozenset(
    {
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
    }
)


def _read(req: Request, rt: ResourceType, expect: tuple[str, str] | None = None) -> Any:
    """A request body by its Content-Type: protobuf for built-in kinds, otherwise JSON.
    ``expect`` names the kind an endpoint takes when it is not the resource's own (an
    Eviction, a Binding, DeleteOptions, a TokenRequest): a protobuf body without type meta
    decodes as that, as Go decodes "into" the handler's type."""
    if pbneg.is_protobuf_body(req.header("content-type")):
        return pb.read_body(req.body, rt, expect)
    return _decode(req.body)


def _status(
    req: Request, status: dict[str, Any], code: int, headers: list[tuple[str, str]] | None = None
) -> Response:
    """A Status body (error or success), protobuf when the client prefers it."""
    if pbneg.status_protobuf(req.header("accept")):
        return pb.status_response(status, code, headers)
    return json_response(status, code, headers)


def _wants_table(req: Request) -> bool:
    return "as=Table" in req.header("accept")


_GO_BOOLS = {v: True for v in ("1", "t", "T", "true", "TRUE", "True")} | {
    v: False for v in ("0", "f", "F", "false", "FALSE", "False")
}


def _bool_param(v: str | None) -> bool:
    return v in ("1", "true", "True")


def _int_param(req: Request, name: str) -> int | None:
    v = req.query.get(name)
    if v in (None, ""):
        return None
    try:
        return int(v)
    except ValueError:
        raise errors.bad_request(f'{name}: Invalid value: "{v}": must be an integer') from None


class KubeApi:
    def __init__(
        self,
        store: Store,
        faults: Faults,
        counters: Counters,
        settings: ApiSettings,
        access: Access,
    ) -> None:
        self.store = store
        self.access = access
        self.types = store.types
        self.faults = faults
        self.counters = counters
        self.settings = settings
        # Unfiltered LIST bodies of unchanged resources, reused as the watch cache would be.
        self._list_cache: dict[tuple[str, str | None, str], tuple[object, bytes]] = {}
        self.openapi = OpenApi(store)
        self.audit: AuditLog | None = None  # set when the emulator keeps an audit log
        self.admission = Admission(store)

    async def __call__(self, req: Request) -> Response | StreamResponse:
        if self.audit is None:
            return await self._answer(req, None)
        record = self.audit.begin(req.method, req.path, req.query, req.headers, req.body, now())
        response = await self._answer(req, record)
        response.headers.append(("Audit-Id", record.audit_id))
        if isinstance(response, StreamResponse):
            response.produce = self._audited_stream(response, record)
        else:
            self.audit.complete(record, response.status, now())
        return response

    def _audited_stream(
        self, response: StreamResponse, record: AuditRecord
    ) -> Callable[[StreamWriter], Awaitable[None]]:
        """A watch is audited once its stream ends, however it ends."""
        produce, audit = response.produce, self.audit
        assert audit is not None

        async def audited(writer: StreamWriter) -> None:
            try:
                await produce(writer)
            finally:
                audit.complete(record, response.status, now())

        return audited

    async def _answer(self, req: Request, record: AuditRecord | None) -> Response | StreamResponse:
        try:
            try:
                return await self._handle(req, record)
            except RecursionError:
                # Python's recursion limit, not Go's decoder's depth limit, is what a deeply
                # nested body meets first (in decoding, pruning or validating): refuse it.
                raise errors.bad_request("the request body is nested too deeply") from None
        except ApiError as exc:
            status = exc.status()
            if record is not None:
                record.status = {
                    k: status[k] for k in ("status", "message", "reason") if k in status
                }
            return _status(req, status, exc.code, exc.headers)

    async def _handle(self, req: Request, record: AuditRecord | None) -> Response | StreamResponse:
        user = self.access.admit(req, record)  # 401/403 before anything else, as the apiserver
        parts = [p for p in req.path.split("/") if p]
        if not parts:
            return json_response({"paths": ["/api", "/api/v1", "/apis", "/version"]})
        head = parts[0]
        if head == "version" and len(parts) == 1:
            return json_response(discovery.VERSION_INFO)
        if head in ("healthz", "readyz", "livez"):
            return Response(200, b"ok", "text/plain; charset=utf-8")
        if head == "openapi":
            return self.openapi.serve(req, parts[1:])
        if head == "api":
            if len(parts) == 1:
                return json_response(discovery.api_versions(self.settings.server_address))
            group, version, rest = "", parts[1], parts[2:]
        elif head == "apis":
            if len(parts) == 1:
                return json_response(discovery.api_group_list(self.types))
            if len(parts) == 2:
                doc = discovery.api_group(self.types, parts[1])
                if doc is None:
                    raise errors.no_such_resource()
                return json_response(doc)
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise errors.no_such_resource()
        if not rest:
            doc = discovery.api_resource_list(self.types, group, version)
            if doc is None:
                raise errors.no_such_resource()
            return json_response(doc)
        target = self._target(group, version, rest)
        target.user, target.audit = user, record
        if self.access.serves(target.rt, target.sub):
            # Reviews and TokenRequests are requests like any other: counted, and faulted.
            verb = self._verb(req, target)
            self.counters.inc(verb, target.rt.plural, target.sub)
            await self._fault(verb, target)
            expect = _TOKEN_REQUEST if target.sub == "token" else None
            answer = self.access.serve(
                req.method,
                target.rt,
                target.namespace or "",
                target.name,
                user,
                lambda: _read(req, target.rt, expect),
            )
            if pb.wants_protobuf(req.header("accept"), target.rt):
                return pb.review_response(answer)
            return json_response(answer, 201)
        return await self._resource(req, target)

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        watch_path = False
        if rest[0] == "watch":
            watch_path, rest = True, rest[1:]
            if not rest:
                raise errors.no_such_resource()
        ns: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            rt = self.types.lookup(group, version, rest[2])
            if rt is not None and rt.namespaced:
                ns, rest = rest[1], rest[2:]
        rt = self.types.lookup(group, version, rest[0])
        if (
            rt is not None
            and len(rest) > 3
            and rest[2] in gaps.UNSERVED_SUBRESOURCES.get(rt.key, ())
        ):
            raise gaps.unserved(rt.plural, rest[2])  # proxy/<path> and the like
        if rt is None or len(rest) > 3:
            raise errors.no_such_resource()
        if rt.namespaced is False and ns is not None:
            raise errors.no_such_resource()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in rt.subresources:
            if sub in gaps.UNSERVED_SUBRESOURCES.get(rt.key, ()):
                raise gaps.unserved(rt.plural, sub)
            raise errors.no_such_resource()
        return Target(rt, version, ns, name, sub, watch_path)

    @staticmethod
    def _verb(req: Request, t: Target) -> str:
        m = req.method
        if m == "GET":
            # A named GET ignores ?watch (only the list route watches), as the apiserver's
            # request info and routes agree; the /watch/ path prefix watches one object.
            if t.watch_path or (not t.name and _bool_param(req.query.get("watch"))):
                return "watch"
            return "get" if t.name else "list"
        if m == "POST":
            return "create"
        if m == "PUT":
            return "update"
        if m == "PATCH":
            return "patch"
        if m == "DELETE":
            return "delete" if t.name else "deletecollection"
        return m.lower()

    async def _fault(self, verb: str, t: Target) -> Decision:
        """The injected fault for this request: its latency waited, its error raised (but a
        410 on a watch, which the watch itself reports)."""
        decision = self.faults.decide(verb, t.rt.plural, t.sub, t.namespace or "", t.name)
        if decision.latency > 0:
            with waiting_on_simulated_time():
                await trio.sleep(decision.latency)
        rule = decision.rule
        if rule is None or rule.status is None or (rule.status == 410 and verb == "watch"):
            return decision
        headers = [("Retry-After", str(rule.retry_after))] if rule.retry_after is not None else []
        details: dict[str, Any] = {}
        if rule.retry_after is not None:
            details["retryAfterSeconds"] = rule.retry_after
        raise ApiError(
            rule.status,
            rule.reason or reason_for(rule.status),
            rule.message or f"injected fault: {verb} {t.rt.plural}",
            details,
            headers,
        )

    async def _resource(self, req: Request, t: Target) -> Response | StreamResponse:
        verb = self._verb(req, t)
        self.counters.inc(verb, t.rt.plural, t.sub)
        t.pb = pb.wants_protobuf(req.header("accept"), t.rt)
        decision = await self._fault(verb, t)
        rule = decision.rule
        if rule is not None and rule.status == 410 and verb == "watch":
            # kube-apiserver opens the stream and says "too old" in it: an ERROR event.
            return self._watch(req, t, decision.cut_watch_after, expired=True)
        dry_run = req.query.get("dryRun") == "All"
        if req.query.get("dryRun") not in (None, "", "All"):
            raise errors.bad_request(
                f'dryRun: Unsupported value: "{req.query["dryRun"]}": supported values: "All"'
            )
        ns = t.namespace or ""
        if verb == "watch":
            return self._watch(req, t, decision.cut_watch_after)
        if verb == "list":
            return await self._list(req, t)
        if t.sub == "scale" and verb in ("get", "update", "patch"):
            return self._scale(req, t, verb, dry_run)
        if verb == "get":
            if t.sub not in ("", "status"):
                raise errors.method_not_allowed()
            entry = await self._shown(t, self.store.get(t.rt, ns, t.name))
            return self._object(req, t, entry, 200)
        if verb == "create":
            if t.sub == "eviction":
                pods = t.rt
                pdbs = self.types.lookup("policy", "v1", "poddisruptionbudgets")
                assert pdbs is not None
                status = evict(
                    self.store, pods, pdbs, ns, t.name, _read(req, t.rt, _EVICTION), dry_run
                )
                return _status(req, status, 201)
            if t.sub == "binding":
                return self._bind(req, t, dry_run)
            if t.name:
                raise errors.method_not_allowed()
            obj = self._body_object(req, t)
            warnings = self._field_warnings(req, t, obj, "create", req.body)
            self.access.check_write(t.rt, ns, t.user, obj)
            obj, warnings = await self._admit(t, None, obj, dry_run, warnings)
            obj = await self._to_storage(t, obj)
            entry = await self._shown(t, self.store.create(t.rt, ns, obj, dry_run=dry_run))
            return self._object(req, t, entry, 201, warnings)
        if verb == "update":
            self._check_writable_sub(t)
            obj = self._body_object(req, t)
            warnings = self._field_warnings(req, t, obj, "update", req.body)
            self.access.check_write(t.rt, ns, t.user, obj)
            old = (await self._shown(t, self.store.get(t.rt, ns, t.name))).obj
            obj, warnings = await self._admit(t, old, obj, dry_run, warnings)
            obj = await self._to_storage(t, obj)
            entry = self.store.update(t.rt, ns, t.name, obj, t.sub, dry_run=dry_run)
            return self._object(req, t, await self._shown(t, entry), 200, warnings)
        if verb == "patch":
            self._check_writable_sub(t)
            return await self._patch(req, t, dry_run)
        if verb == "delete":
            if t.sub:
                raise errors.method_not_allowed()
            old = (await self._shown(t, self.store.get(t.rt, ns, t.name))).obj
            _, warnings = await self._admit(t, old, None, dry_run, [])
            return await self._delete(req, t, dry_run, warnings)
        if verb == "deletecollection":
            return await self._delete_collection(req, t, dry_run)
        raise errors.method_not_allowed()

    async def _shown(self, t: Target, entry: Entry) -> Entry:
        """The stored object in the requested version (its CRD's conversion webhook called
        when it has one; see ``crdconvert``)."""
        shown = await crdconvert.convert_entries(self.store, t.rt, [entry], self._want(t), True)
        return shown[0]

    def _want(self, t: Target) -> str:
        return t.rt.api_version(t.version)

    async def _to_storage(self, t: Target, obj: Any) -> Any:
        """A write in a version other than the storage version, converted by the CRD's
        conversion webhook (kept as written when the CRD has none)."""
        if crdconvert.webhook_of(self.store, t.rt) is None or not isinstance(obj, dict):
            return obj
        storage = t.rt.api_version(t.rt.storage_version)
        return (await crdconvert.convert(self.store, t.rt, [obj], storage, True))[0]

    async def _admit(
        self,
        t: Target,
        old: dict[str, Any] | None,
        obj: dict[str, Any] | None,
        dry_run: bool,
        warnings: list[tuple[str, str]],
    ) -> tuple[Any, list[tuple[str, str]]]:
        """The write's admission webhooks (``admission/``): the object as mutated, and the
        Warning headers to send. Validating webhooks see the object as it would be stored: a
        dry run of the store's write (defaults, schema, validation) before the real one."""
        op = "CREATE" if old is None else "DELETE" if obj is None else "UPDATE"
        ns = t.namespace or ""
        attrs = Attributes(t.rt, t.version, op, ns, t.name, t.sub, obj, old, dry_run)
        outcome = Outcome()
        try:
            obj = await self._webhooks(attrs, t, outcome)
        except ApiError as exc:  # a refusal carries the warnings given before it, as in kube
            exc.headers += [errors.warning(w) for w in outcome.warnings]
            raise
        finally:
            if t.audit is not None:
                t.audit.annotations.update(outcome.annotations)
        return obj, warnings + [errors.warning(w) for w in outcome.warnings]

    async def _webhooks(self, attrs: Attributes, t: Target, outcome: Outcome) -> Any:
        """Mutating webhooks, then validating ones on the object as it would be stored."""
        if not self.admission.configured():
            return attrs.obj  # what both rounds give back when no webhook matches
        ns, old = attrs.namespace, attrs.old
        obj = await self.admission.mutate(attrs, t.user, outcome)

        def rehearsed() -> dict[str, Any] | None:
            if obj is None:
                return None
            trial = copy.deepcopy(obj)
            if old is None:
                made = self.store.create(t.rt, ns, trial, dry_run=True).obj
                # a generated name is kept, so the webhooks saw the name that is stored
                obj.setdefault("metadata", {})["name"] = made["metadata"]["name"]
                return made
            return self.store.update(t.rt, ns, t.name, trial, t.sub, dry_run=True).obj

        attrs = dataclasses.replace(attrs, obj=obj)
        await self.admission.validate(attrs, t.user, outcome, rehearsed)
        return obj

    def _scale(self, req: Request, t: Target, verb: str, dry_run: bool) -> Response:
        """A custom resource's autoscaling/v1 Scale: read, or written back as an update of the
        object's replicas (the object's own update path, so watches and RBAC see it)."""
        ns = t.namespace or ""
        paths = scale.scale_paths(self.store.crd_of(t.rt))
        current = self.store.get(t.rt, ns, t.name)
        if verb == "get":
            return json_response(scale.to_scale(paths, current.obj))
        if verb == "update":
            wanted = _decode(req.body)
        else:
            ctype = req.header("content-type").split(";")[0].strip()
            wanted = scale.patched_scale(
                scale.to_scale(paths, current.obj), ctype, _decode(req.body)
            )
        new = scale.apply_scale(paths, t.name, current.clone(), wanted)
        self.access.check_write(t.rt, ns, t.user, new)
        entry = self.store.update(t.rt, ns, t.name, new, "", dry_run=dry_run)
        return json_response(scale.to_scale(paths, entry.obj))

    @staticmethod
    def _check_writable_sub(t: Target) -> None:
        if not t.name or t.sub not in ("", "status"):
            raise errors.method_not_allowed()

    def _body_object(self, req: Request, t: Target) -> dict[str, Any]:
        api_versions = tuple(t.rt.api_version(v) for v in t.rt.versions)
        return check_type_meta(
            _read(req, t.rt), (t.rt.api_version(t.version), *api_versions), t.rt.kind
        )

    def _field_warnings(
        self, req: Request, t: Target, obj: dict[str, Any], operation: str, body: bytes | None
    ) -> list[tuple[str, str]]:
        """fieldValidation: built-in kinds against their OpenAPI schema (what decoding into the
        Go type does), custom resources against their CRD's structural schema; returns the
        Warning headers to send."""
        if body is not None and pbneg.is_protobuf_body(req.header("content-type")):
            body = None  # repeated keys are a JSON matter
        if t.rt.builtin:
            return fieldcheck.check(t.rt, t.version, obj, req.query, body, operation)
        crd = self.store.crd_of(t.rt)
        return field_validation(crd, obj, req.query.get("fieldValidation"), body)

    def _raw_for(self, t: Target, entry: Entry) -> bytes:
        """The object as the requested version names it (stored once, converted on the way
        out only when a CRD serves several versions)."""
        want = t.rt.api_version(t.version)
        if entry.obj.get("apiVersion") in (want, None):
            return entry.raw
        obj = dict(entry.obj)
        obj["apiVersion"] = want
        return msgspec.json.encode(obj)

    def _object(
        self,
        req: Request,
        t: Target,
        entry: Entry,
        code: int,
        warnings: list[tuple[str, str]] | None = None,
    ) -> Response:
        if _wants_table(req):
            rv = entry.rv or None
            return json_response(
                table(t.rt, [entry.obj], rv, req.query.get("includeObject", "Metadata")),
                code,
                warnings,
            )
        if t.pb:
            return pb.object_response(t.rt, t.version, entry.obj, code, warnings)
        return Response(code, self._raw_for(t, entry), headers=warnings or [])

    def _selectors(self, req: Request, t: Target) -> Any:
        label = LabelSelector(req.query.get("labelSelector", ""))
        fields = FieldSelector(req.query.get("fieldSelector", ""), t.rt.field_labels)
        return combine(label, fields)

    async def _list(self, req: Request, t: Target) -> Response:
        pred = self._selectors(req, t)
        limit = _int_param(req, "limit") or 0
        cont = req.query.get("continue", "")
        table_wanted = _wants_table(req)
        exact = self._exact_rv(req)
        joined: bytes | None = None
        cache_key = (t.rt.key, t.namespace, t.version)
        converting = crdconvert.webhook_of(self.store, t.rt) is not None
        plain = (
            not converting
            and pred is None
            and not limit
            and not cont
            and not table_wanted
            and exact is None
            and not t.pb
        )
        # Moves with every write to this resource and with every change of its CRD (which may
        # re-default stored objects without a write).
        crd = None if t.rt.builtin else self.store.crd_of(t.rt)
        stamp = (self.store.log_for(t.rt).end, crd and crd["metadata"].get("resourceVersion"))
        if plain:
            hit = self._list_cache.get(cache_key)
            if hit is not None and hit[0] == stamp:
                joined = hit[1]
        rv = self.store.rv
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if joined is None:
            result = self.store.list_entries(t.rt, t.namespace, pred, limit, cont, exact)
            if converting:  # one ConversionReview for the page, as kube batches a list
                entries = await crdconvert.convert_entries(
                    self.store, t.rt, result.entries, self._want(t), True
                )
                result = dataclasses.replace(result, entries=entries)
            if table_wanted:
                return json_response(
                    table(
                        t.rt,
                        [e.obj for e in result.entries],
                        result.rv,
                        req.query.get("includeObject", "Metadata"),
                        continue_token=result.continue_token,
                    )
                )
            meta["resourceVersion"] = str(result.rv)
            if result.continue_token:
                meta["continue"] = result.continue_token
            if result.remaining is not None:
                meta["remainingItemCount"] = result.remaining
            if t.pb:
                return pb.list_response(t.rt, t.version, meta, [e.obj for e in result.entries])
            if len(t.rt.versions) == 1:
                joined = b",".join([e.raw for e in result.entries])
            else:
                joined = b",".join([self._raw_for(t, e) for e in result.entries])
            if plain:
                if len(self._list_cache) >= 64:
                    self._list_cache.clear()
                self._list_cache[cache_key] = (stamp, joined)
        head = (
            b'{"kind":"'
            + t.rt.kind.encode()
            + b'List","apiVersion":"'
            + t.rt.api_version(t.version).encode()
            + b'","metadata":'
            + msgspec.json.encode(meta)
            + b',"items":['
        )
        return Response(200, [head, joined, b"]}"])

    @staticmethod
    def _exact_rv(req: Request) -> int | None:
        match = req.query.get("resourceVersionMatch", "")
        rv = req.query.get("resourceVersion", "")
        if not match:
            # kube-apiserver's legacy rule: a paged list at a resourceVersion other than "0"
            # (with no resourceVersionMatch) is served exactly at it, from etcd.
            if rv in ("", "0") or not _int_param(req, "limit") or req.query.get("continue"):
                return None
            match = "Exact"
        if match not in ("Exact", "NotOlderThan"):
            raise errors.bad_request(
                f'resourceVersionMatch: Unsupported value: "{match}": supported values: '
                '"Exact", "NotOlderThan"'
            )
        if not rv:
            raise errors.bad_request(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                "resourceVersion is provided"
            )
        try:
            value = int(rv)
        except ValueError:
            raise errors.bad_request(
                f'resourceVersion: Invalid value: "{rv}": must be a non-negative integer'
            ) from None
        return value if match == "Exact" else None

    def _watch(
        self, req: Request, t: Target, cut_after: float | None, expired: bool = False
    ) -> StreamResponse:
        pred = self._selectors(req, t)
        rv = req.query.get("resourceVersion", "")
        if rv not in ("", "0"):
            try:
                if int(rv) < 0:
                    raise ValueError
            except ValueError:
                raise errors.bad_request(
                    f'resourceVersion: Invalid value: "{rv}": must be a non-negative integer'
                ) from None
        timeout = _int_param(req, "timeoutSeconds")
        encode: Encoder | None = None
        proto = t.pb and not _wants_table(req)
        if _wants_table(req):
            first = [True]
            rt = t.rt

            def table_line(type_: str, entry: Entry) -> bytes:
                if type_ == "BOOKMARK":
                    obj: Any = entry.obj
                else:
                    obj = table(rt, [entry.obj], entry.rv, headers=first[0])
                    first[0] = False
                return msgspec.json.encode({"type": type_, "object": obj}) + b"\n"

            encode = table_line
        elif proto:
            encode = pb.watch_encoder(t.rt, t.version)

        initial_events = _bool_param(req.query.get("sendInitialEvents"))
        if initial_events and (
            req.query.get("resourceVersionMatch") != "NotOlderThan"
            or not _bool_param(req.query.get("allowWatchBookmarks"))
        ):
            raise errors.bad_request(
                "sendInitialEvents: Forbidden: sendInitialEvents requires "
                "resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true"
            )
        spec = WatchSpec(
            rt=t.rt,
            namespace=t.namespace,
            pred=pred,
            resource_version=rv,
            bookmarks=_bool_param(req.query.get("allowWatchBookmarks")),
            bookmark_interval=self.settings.bookmark_interval,
            timeout=float(timeout) if timeout else None,
            cut_after=cut_after,
            encode=encode,
            initial_events=initial_events,
            encode_error=pb.watch_error if proto else None,
        )
        if crdconvert.webhook_of(self.store, t.rt) is not None:
            store, rt, want = self.store, t.rt, self._want(t)

            async def convert(entries: list[Entry]) -> list[Entry]:
                return await crdconvert.convert_entries(store, rt, entries, want)

            spec.convert = convert
        if t.name:
            name = t.name
            inner = spec.pred

            def by_name(o: dict[str, Any]) -> bool:
                return bool(o["metadata"].get("name") == name and (inner is None or inner(o)))

            spec.pred = by_name
        watch = Watch(self.store, self.faults, spec)
        if expired:
            watch.expire()
        if proto:
            return StreamResponse(watch.run, content_type=pbneg.PROTOBUF_WATCH)
        return StreamResponse(watch.run)

    async def _patch(self, req: Request, t: Target, dry_run: bool) -> Response:
        ctype = req.header("content-type").split(";")[0].strip()
        ns = t.namespace or ""
        if ctype == "application/apply-patch+yaml":
            return await self._apply(req, t, dry_run)
        if ctype not in _PATCH_TYPES or (
            ctype == "application/strategic-merge-patch+json" and not t.rt.builtin
        ):
            raise errors.unsupported_media_type(ctype)
        current = await self._shown(t, self.store.get(t.rt, ns, t.name))
        patch_body = _decode(req.body)
        # Repeated keys are a property of the body alone: decided here, against the decoded
        # patch before patching shares its subtrees, the common clean body skips the re-parse.
        dup_body: bytes | None = req.body if duplicate_fields(req.body, patch_body) else None
        base = current.clone()
        if ctype == "application/merge-patch+json":
            if not isinstance(patch_body, dict):
                raise errors.bad_request("a JSON merge patch must be a JSON object")
            new = merge_patch(base, patch_body)
        elif ctype == "application/json-patch+json":
            new = json_patch(base, patch_body)
        elif ctype == "application/strategic-merge-patch+json":
            if not t.rt.builtin:
                raise errors.unsupported_media_type(ctype)
            if not isinstance(patch_body, dict):
                raise errors.bad_request("a strategic merge patch must be a JSON object")
            new = strategic_merge(base, patch_body)
        else:
            raise errors.unsupported_media_type(ctype)
        if not isinstance(new, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        api_versions = tuple(t.rt.api_version(v) for v in t.rt.versions)
        check_type_meta(new, api_versions, t.rt.kind)
        md = new.get("metadata")
        if not isinstance(md, dict):
            raise errors.bad_request("metadata: the patch removed the object's metadata")
        if md.get("name") != t.name:
            raise errors.bad_request(
                f"the name of the object ({md.get('name')}) does not match the name on the URL "
                f"({t.name})"
            )
        warnings = self._field_warnings(req, t, new, "patch", dup_body)
        self.access.check_write(t.rt, ns, t.user, new)
        new, warnings = await self._admit(t, current.obj, new, dry_run, warnings)
        new = await self._to_storage(t, new)
        entry = self.store.update(t.rt, ns, t.name, new, t.sub, dry_run=dry_run)
        return self._object(req, t, await self._shown(t, entry), 200, warnings)

    async def _apply(self, req: Request, t: Target, dry_run: bool) -> Response:
        """Server-side apply, approximated: create when missing, otherwise merge the applied
        configuration in (strategic for built-ins). Field ownership is not tracked, so fields
        dropped from a later apply are kept rather than removed."""
        if not req.query.get("fieldManager"):
            raise errors.bad_request(
                "PATCH, fieldManager is required for apply requests (application/apply-patch+yaml)"
            )
        try:
            applied = yaml.safe_load(req.body)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from None
        api_versions = tuple(t.rt.api_version(v) for v in t.rt.versions)
        applied = check_type_meta(applied, api_versions, t.rt.kind)
        md = applied.get("metadata")
        if not isinstance(md, dict) or md.get("name") != t.name:
            raise errors.bad_request(
                f"the name of the object ({(md or {}).get('name')}) does not match the name on "
                f"the URL ({t.name})"
            )
        ns = t.namespace or ""
        warnings = self._field_warnings(req, t, applied, "apply", None)
        current = self.store.find(t.rt, ns, t.name)
        if current is not None:
            current = await self._shown(t, current)
        if current is None:
            if t.sub:
                raise errors.not_found(t.rt.group, t.rt.plural, t.name)
            # A patch that creates is a create too: the apiserver asks for both verbs.
            self.access.require(t.user, "create", t.rt, ns, t.name)
            self.access.check_write(t.rt, ns, t.user, applied)
            applied, warnings = await self._admit(t, None, applied, dry_run, warnings)
            applied = await self._to_storage(t, applied)
            entry = self.store.create(t.rt, ns, applied, dry_run=dry_run)
            return self._object(req, t, await self._shown(t, entry), 201, warnings)
        merge = strategic_merge if t.rt.builtin else merge_patch
        new = merge(current.clone(), applied)
        self.access.check_write(t.rt, ns, t.user, new)
        new, warnings = await self._admit(t, current.obj, new, dry_run, warnings)
        new = await self._to_storage(t, new)
        entry = self.store.update(t.rt, ns, t.name, new, t.sub, dry_run=dry_run)
        return self._object(req, t, await self._shown(t, entry), 200, warnings)

    def _delete_options(self, req: Request, t: Target) -> DeleteOptions:
        body: Any = _read(req, t.rt, _DELETE_OPTIONS) if req.body else {}
        if isinstance(body, dict):
            grace = _int_param(req, "gracePeriodSeconds")
            if grace is not None:
                body["gracePeriodSeconds"] = grace
            if "propagationPolicy" in req.query:
                body["propagationPolicy"] = req.query["propagationPolicy"]
            orphan = req.query.get("orphanDependents")
            if orphan is not None:  # Go's strconv.ParseBool spellings
                if orphan not in _GO_BOOLS:
                    raise errors.bad_request(
                        f'orphanDependents: Invalid value: "{orphan}": must be a boolean'
                    )
                body["orphanDependents"] = _GO_BOOLS[orphan]
        return parse_delete_options(body)

    async def _delete(
        self, req: Request, t: Target, dry_run: bool, warnings: list[tuple[str, str]]
    ) -> Response:
        opts = self._delete_options(req, t)
        entry, _removed = self.store.delete(
            t.rt,
            t.namespace or "",
            t.name,
            grace=opts.grace_period,
            preconditions=opts.preconditions,
            dry_run=dry_run or opts.dry_run,
            propagation=opts.propagation,
            orphan_dependents=opts.orphan_dependents,
        )
        warning = delete_warning(t.rt, opts.propagation, opts.orphan_dependents)
        warnings = warnings + ([errors.warning(warning)] if warning else [])
        return self._object(req, t, await self._shown(t, entry), 200, warnings)

    async def _delete_collection(self, req: Request, t: Target, dry_run: bool) -> Response:
        opts = self._delete_options(req, t)
        pred = self._selectors(req, t)
        result = self.store.list_entries(t.rt, t.namespace, pred)
        deleted: list[Entry] = []
        for e in result.entries:
            md = e.obj["metadata"]
            # each object is admitted as its own DELETE, as kube-apiserver does
            one = dataclasses.replace(t, namespace=md.get("namespace") or None, name=md["name"])
            await self._admit(one, (await self._shown(t, e)).obj, None, dry_run, [])
            try:
                entry, _ = self.store.delete(
                    t.rt,
                    md.get("namespace", ""),
                    md["name"],
                    grace=opts.grace_period,
                    dry_run=dry_run or opts.dry_run,
                    propagation=opts.propagation,
                    orphan_dependents=opts.orphan_dependents,
                )
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(entry)
        deleted = await crdconvert.convert_entries(self.store, t.rt, deleted, self._want(t), True)
        if t.pb:
            meta = {"resourceVersion": str(self.store.rv)}
            return pb.list_response(t.rt, t.version, meta, [e.obj for e in deleted])
        items = [self._raw_for(t, e) for e in deleted]
        head = (
            b'{"kind":"'
            + t.rt.kind.encode()
            + b'List","apiVersion":"'
            + t.rt.api_version(t.version).encode()
            + b'","metadata":{"resourceVersion":"'
            + str(self.store.rv).encode()
            + b'"},"items":['
        )
        return Response(200, [head, b",".join(items), b"]}"], JSON)

    def _bind(self, req: Request, t: Target, dry_run: bool) -> Response:
        body = _read(req, t.rt, _BINDING)
        if not isinstance(body, dict) or body.get("kind", "Binding") != "Binding":
            raise errors.bad_request("the request body must be a Binding")
        node = sub_object(body, "target", "target").get("name")
        if not node or not isinstance(node, str):
            raise errors.invalid(
                "", "Binding", t.name, [("FieldValueRequired", "target.name", "Required value")]
            )
        ns = t.namespace or ""
        pod = self.store.get(t.rt, ns, t.name)
        if (pod.obj.get("spec") or {}).get("nodeName"):
            raise errors.conflict(
                "",
                "pods",
                t.name,
                f'pod {t.name} is already assigned to node "{pod.obj["spec"]["nodeName"]}"',
            )
        new = pod.clone()
        new.setdefault("spec", {})["nodeName"] = node
        self.store.update(t.rt, ns, t.name, new, dry_run=dry_run)
        return _status(req, errors.success(201), 201)
