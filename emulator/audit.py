"""The audit log, as kube-apiserver writes it with ``--audit-log-path`` and a policy of level
``Metadata`` for everything: one ``audit.k8s.io/v1`` ``Event`` JSON line per request at stage
``ResponseComplete`` (a watch's when its stream ends), naming who (user, userAgent,
sourceIPs), what (verb, objectRef, requestURI), the answer (responseStatus) and when.

As kube-apiserver does, a client's ``Audit-ID`` header becomes the event's ``auditID`` and is
echoed in the response; without one a UUID is made up. Lines are flushed as they are written,
so a reader (a test, ``tail -f``) sees each request once it is answered.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode

import msgspec

from kubetrio.emulator.auth.users import UserInfo

AUDIT_ID_HEADER = "audit-id"

# The peer of the connection a request came on; set by the listener for each connection.
peer_address: contextvars.ContextVar[str] = contextvars.ContextVar("peer_address", default="")

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def micro_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def request_info(method: str, path: str, query: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The verb and objectRef of a request, by kube's RequestInfoFactory rules (the path alone
    decides; an objectRef is empty for non-resource URLs such as /version)."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return method.lower(), {}
    if parts[0] == "api" and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return method.lower(), {}  # discovery
    if not rest:
        return method.lower(), {}
    watch_path = rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
    ref: dict[str, str] = {}
    if rest[0] == "namespaces" and len(rest) > 1:
        # A namespace is its own namespace, as kube records it; status and finalize are
        # subresources of it, anything else a namespaced resource.
        ref["namespace"] = rest[1]
        if len(rest) > 2 and rest[2] not in ("status", "finalize"):
            rest = rest[2:]
    if not rest:
        return method.lower(), {}
    ref["resource"] = rest[0]
    if len(rest) > 1:
        ref["name"] = rest[1]
    if len(rest) > 2:
        ref["subresource"] = rest[2]
    if group:
        ref["apiGroup"] = group
    ref["apiVersion"] = version
    named = len(rest) > 1
    if method == "GET":
        if watch_path or (not named and query.get("watch") in ("1", "true", "True")):
            verb = "watch"
        else:
            verb = "get" if named else "list"
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return verb, ref


class _Meta(msgspec.Struct):
    name: str = ""


class _Named(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_named = msgspec.json.Decoder(_Named)


def _created_name(body: bytes, content_type: str) -> str:
    """``metadata.name`` of a JSON body ("" when absent, undecodable or not JSON)."""
    if "json" not in content_type:
        return ""
    try:
        return _named.decode(body).metadata.name
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ""


@dataclass(slots=True)
class AuditRecord:
    """One request's event, filled in as the request is served."""

    audit_id: str
    received: dt.datetime
    verb: str
    request_uri: str
    object_ref: dict[str, str]
    user_agent: str
    source_ips: list[str]
    user: UserInfo | None = None
    status: dict[str, Any] = field(default_factory=dict)
    # authorization.k8s.io/decision and /reason (and the emulator's rule), once authorized
    annotations: dict[str, str] = field(default_factory=dict)


class AuditLog:
    """Where the events go: a file (appended to), or standard output for ``-``."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._out: IO[str] = (
            sys.stdout if self.path == "-" else Path(path).open("a", encoding="utf-8")  # noqa: SIM115
        )

    def begin(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: bytes,
        now: dt.datetime,
    ) -> AuditRecord:
        verb, ref = request_info(method, path, query)
        if verb == "create" and ref and "name" not in ref:
            # As kube's LogRequestObject: a create's objectRef names the object it carries.
            name = _created_name(body, headers.get("content-type", ""))
            if name:
                ref["name"] = name
        forwarded = [ip.strip() for ip in headers.get("x-forwarded-for", "").split(",")]
        peer = peer_address.get()
        ips = [ip for ip in forwarded if ip] + ([peer] if peer else [])
        return AuditRecord(
            audit_id=headers.get(AUDIT_ID_HEADER) or str(uuid.uuid4()),
            received=now,
            verb=verb,
            request_uri=path + (f"?{urlencode(query)}" if query else ""),
            object_ref=ref,
            user_agent=headers.get("user-agent", ""),
            source_ips=list(dict.fromkeys(ips)),
        )

    def complete(self, record: AuditRecord, code: int, now: dt.datetime) -> None:
        event: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": record.audit_id,
            "stage": "ResponseComplete",
            "requestURI": record.request_uri,
            "verb": record.verb,
            "user": record.user.to_json() if record.user is not None else {},
            "sourceIPs": record.source_ips,
            "userAgent": record.user_agent,
        }
        if record.object_ref:
            event["objectRef"] = record.object_ref
        event["responseStatus"] = {"metadata": {}, **record.status, "code": code}
        event["requestReceivedTimestamp"] = micro_time(record.received)
        event["stageTimestamp"] = micro_time(now)
        if record.annotations:
            event["annotations"] = record.annotations
        self._out.write(msgspec.json.encode(event).decode() + "\n")
        self._out.flush()

    def close(self) -> None:
        if self._out is not sys.stdout:
            self._out.close()
