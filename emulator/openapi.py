"""/openapi/v2 and /openapi/v3: the schemas and operations of every served resource.

Built-in kinds publish the real apiserver's definitions (``openapi_schemas``); each CRD
publishes its served versions' ``openAPIV3Schema`` as the apiextensions publisher does, so the
documents change as CRDs come and go (the v3 index names each document by its hash, and clients
cache by that URL).

/openapi/v2 is served as JSON or, as client-go asks for it, protobuf (``openapi_proto``):
kubectl 1.27/1.28 ``explain`` and ``apply --validate`` read it; later ones read /openapi/v3.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

import msgspec

from kubetrio.emulator import errors, openapi_proto
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.http import JSON, Request, Response
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.openapi_paths import resource_paths
from kubetrio.emulator.openapi_schemas import (
    COMMON,
    builtin_definitions,
    closure,
    crd_definitions,
    crd_definitions_v3,
    definition_name,
    to_v3,
)
from kubetrio.emulator.store import CRD_KEY, Store

_INFO = {"title": "Kubernetes", "version": "v1.33.0"}
_V3_IMMUTABLE = "public, immutable"
_YEAR = 365 * 24 * 3600


@dataclass(slots=True)
class _Doc:
    stamp: Any
    body: bytes
    digest: str
    tree: dict[str, Any] | None = None
    proto: bytes | None = None


class OpenApi:
    """Builds documents on demand and keeps them until the served types change."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._v3: dict[tuple[str, str], _Doc] = {}
        self._v2: _Doc | None = None

    # ------------------------------------------------------------- inputs

    def _crds(self) -> dict[str, dict[str, Any]]:
        """resource key -> the CRD object that serves it."""
        rt = self.store.types.by_key(CRD_KEY)
        if rt is None:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for entry in self.store.iter(rt):
            spec = entry.obj.get("spec") or {}
            names = spec.get("names") or {}
            out[f"{names.get('plural')}.{spec.get('group')}"] = entry.obj
        return out

    def _stamp(self, served: list[ResourceType]) -> Any:
        """What a document depends on: the served types, and the CRDs when any is custom."""
        key = tuple(sorted((rt.key, rt.versions, rt.subresources) for rt in served))
        if all(rt.builtin for rt in served):
            return key
        crd_rt = self.store.types.by_key(CRD_KEY)
        return (key, self.store.log_for(crd_rt).end if crd_rt else 0)

    # ------------------------------------------------------------- v3

    def _v3_doc(self, group: str, version: str) -> _Doc | None:
        served = sorted(self.store.types.in_group_version(group, version), key=lambda r: r.plural)
        if not served:
            return None
        stamp = self._stamp(served)
        cached = self._v3.get((group, version))
        if cached is not None and cached.stamp == stamp:
            return cached
        builtins = builtin_definitions()
        crds = self._crds() if not all(rt.builtin for rt in served) else {}
        schemas: dict[str, Any] = {}
        roots = list(COMMON)
        paths: dict[str, Any] = {}
        for rt in served:
            paths.update(resource_paths(rt, version, v3=True))
            if rt.builtin:
                roots += [
                    definition_name(rt, version),
                    definition_name(rt, version, rt.kind + "List"),
                ]
                roots += _sub_bodies(rt)
            elif rt.key in crds:
                schemas.update(crd_definitions_v3(rt, crds[rt.key]))
                if "scale" in rt.subresources:
                    roots.append("io.k8s.api.autoscaling.v1.Scale")
        for name, d in closure(builtins, roots).items():
            schemas[name] = to_v3(name, d)
        # CRD schemas reach ObjectMeta/ListMeta through refs the closure above did not see.
        extra = closure(builtins, [_META_OBJ, _META_LIST])
        for name, d in extra.items():
            schemas.setdefault(name, to_v3(name, d))
        doc = {
            "openapi": "3.0.0",
            "info": _INFO,
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": dict(sorted(schemas.items()))},
        }
        body = msgspec.json.encode(doc)
        built = _Doc(stamp, body, hashlib.sha512(body).hexdigest().upper())
        self._v3[(group, version)] = built
        return built

    def v3_index(self) -> dict[str, Any]:
        index: dict[str, Any] = {}
        for group, versions in sorted(self.store.types.group_versions().items()):
            for v in versions:
                doc = self._v3_doc(group, v)
                if doc is None:
                    continue
                path = f"apis/{group}/{v}" if group else f"api/{v}"
                index[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={doc.digest}"}
        return {"paths": index}

    # ------------------------------------------------------------- v2

    def _v2_doc(self) -> _Doc:
        served = sorted(self.store.types.all(), key=lambda r: r.key)
        stamp = self._stamp(served)
        if self._v2 is not None and self._v2.stamp == stamp:
            return self._v2
        crds = self._crds()
        definitions = dict(builtin_definitions())
        paths: dict[str, Any] = {}
        for rt in served:
            for v in rt.versions:
                paths.update(resource_paths(rt, v, v3=False))
            if not rt.builtin and rt.key in crds:
                definitions.update(crd_definitions(rt, crds[rt.key]))
        doc = {
            "swagger": "2.0",
            "info": _INFO,
            "paths": dict(sorted(paths.items())),
            "definitions": dict(sorted(definitions.items())),
        }
        body = msgspec.json.encode(doc)
        self._v2 = _Doc(stamp, body, hashlib.sha512(body).hexdigest().upper(), doc)
        return self._v2

    # ------------------------------------------------------------- HTTP

    def serve(self, req: Request, rest: list[str]) -> Response:
        if rest == ["v2"]:
            return self._serve_v2(req)
        if not rest or rest[0] != "v3":
            raise errors.no_such_resource()
        if len(rest) == 1:
            return Response(200, msgspec.json.encode(self.v3_index()))
        gv = rest[1:]
        doc: _Doc | None = None
        if gv[0] == "api" and len(gv) == 2:
            doc = self._v3_doc("", gv[1])
        elif gv[0] == "apis" and len(gv) == 3:
            doc = self._v3_doc(gv[1], gv[2])
        if doc is None:
            raise errors.no_such_resource()
        headers = [("Etag", f'"{doc.digest}"')]
        want = req.query.get("hash")
        if want == doc.digest:
            # A hashed URL never changes content: clients may keep it (kubectl's disk cache).
            headers.append(("Cache-Control", _V3_IMMUTABLE))
            headers.append(("Expires", formatdate(time.time() + _YEAR, usegmt=True)))
        elif want:
            # A stale hash: send the client to the current document, as kube-openapi does.
            return Response(
                301,
                b"",
                headers=[("Location", f"{req.path}?hash={doc.digest}")],
            )
        return _conditional(req, doc, doc.body, headers)

    def _serve_v2(self, req: Request) -> Response:
        form = _negotiate(req.header("accept"))
        if form is None:
            raise ApiError(406, "NotAcceptable", "the accepted media types are not served")
        doc = self._v2_doc()
        headers = [("Etag", f'"{doc.digest}"')]
        if form == "json":
            return _conditional(req, doc, doc.body, headers)
        if doc.proto is None:
            assert doc.tree is not None
            doc.proto = openapi_proto.encode(doc.tree)
        # The apiserver labels both accepted spellings with the one Go can parse.
        return _conditional(req, doc, doc.proto, headers, openapi_proto.MIMES[1])


_META_OBJ = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_META_LIST = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"


def _conditional(
    req: Request, doc: _Doc, body: bytes, headers: list[tuple[str, str]], ctype: str = JSON
) -> Response:
    """304 when the client already holds this version of the document."""
    if req.header("if-none-match").strip() == f'"{doc.digest}"':
        return Response(304, b"", ctype, headers)
    return Response(200, body, ctype, headers)


def _sub_bodies(rt: ResourceType) -> list[str]:
    bodies = {
        "eviction": "io.k8s.api.policy.v1.Eviction",
        "binding": "io.k8s.api.core.v1.Binding",
        "token": "io.k8s.api.authentication.v1.TokenRequest",
    }
    return [bodies[s] for s in rt.subresources if s in bodies]


def _negotiate(accept: str) -> str | None:
    """ "json" or "proto" by the first Accept clause served (no header: JSON), None for 406."""
    if not accept.strip():
        return "json"
    for clause in accept.split(","):
        mime = clause.split(";")[0].strip().lower()
        if mime in ("*/*", "application/*", "application/json"):
            return "json"
        if mime in openapi_proto.MIMES:
            return "proto"
    return None
