"""``KubeApi``: the handler the emulator's server mounts for everything that is not an
extension. It does what kube-apiserver's filter chain and non-resource routes do before a
resource handler runs: the audit record (completed when a watch's stream ends), authentication
and authorization (401/403 before anything else), the root, ``/version``, health, OpenAPI and
discovery documents, and the reviews and TokenRequests ``Access`` serves; every ``ApiError``
raised below becomes a Status answer here, in one place."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from kubetrio.emulator import discovery, errors
from kubetrio.emulator.admission.dispatch import Admission
from kubetrio.emulator.audit import AuditLog, AuditRecord
from kubetrio.emulator.auth import Access
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.faults import Counters, Faults
from kubetrio.emulator.handlers.body import read_body
from kubetrio.emulator.handlers.dispatch import inject_fault, serve_resource
from kubetrio.emulator.handlers.requestinfo import parse_target, verb_of
from kubetrio.emulator.handlers.response import status_response
from kubetrio.emulator.handlers.scope import ApiSettings, Backend
from kubetrio.emulator.http import Request, Response, StreamResponse, StreamWriter, json_response
from kubetrio.emulator.kubepb import rest as pb
from kubetrio.emulator.openapi import OpenApi
from kubetrio.emulator.store import Store
from kubetrio.runtime.util.clock import now

_TOKEN_REQUEST = ("authentication.k8s.io/v1", "TokenRequest")


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
        self.openapi = OpenApi(store)
        self.audit: AuditLog | None = None  # set when the emulator keeps an audit log
        self.admission = Admission(store)
        self.backend = Backend(store, access, self.admission, faults, counters, settings)

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
            return status_response(req, status, exc.code, exc.headers)

    def _root_discovery(self, req: Request, core: bool) -> Response:
        """/api or /apis: aggregated (apidiscovery.k8s.io/v2) when the client asks for it,
        else the legacy APIVersions or APIGroupList."""
        form = discovery.negotiate(req.header("accept"))
        if form is None:
            return json_response(discovery.not_acceptable(), 406)
        if form == "aggregated":
            body = msgspec.json.encode(discovery.aggregated(self.types, core))
            return Response(200, body, discovery.AGGREGATED, [("Vary", "Accept")])
        if core:
            return json_response(discovery.api_versions(self.settings.server_address))
        return json_response(discovery.api_group_list(self.types))

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
        if head in ("api", "apis") and len(parts) == 1:
            return self._root_discovery(req, head == "api")
        if head == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif head == "apis":
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
        target = parse_target(self.types, group, version, rest)
        target.user, target.audit = user, record
        if self.access.serves(target.rt, target.sub):
            # Reviews and TokenRequests are requests like any other: counted, and faulted.
            verb = verb_of(req, target)
            self.counters.inc(verb, target.rt.plural, target.sub)
            await inject_fault(self.backend, verb, target)
            expect = _TOKEN_REQUEST if target.sub == "token" else None
            answer = self.access.serve(
                req.method,
                target.rt,
                target.namespace or "",
                target.name,
                user,
                lambda: read_body(req, target.rt, expect),
            )
            if pb.wants_protobuf(req.header("accept"), target.rt):
                return pb.review_response(answer)
            return json_response(answer, 201)
        return await serve_resource(self.backend, req, target)
