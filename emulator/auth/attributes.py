"""What a request asks to do, read from its URL alone as the apiserver's RequestInfoFactory
does: authorization happens before routing, so a request for a resource that does not exist
is still judged (and refused) by name."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kubetrio.emulator.auth.users import UserInfo
from kubetrio.emulator.http import Request

_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True, slots=True)
class Attributes:
    user: UserInfo
    verb: str
    resource_request: bool
    path: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def with_user(self, user: UserInfo) -> Attributes:
        return replace(self, user=user)


def _truthy(v: str | None) -> bool:
    return v in ("1", "true", "True")


def request_attributes(req: Request, user: UserInfo) -> Attributes:
    path = req.path
    parts = [p for p in path.split("/") if p]
    non_resource = Attributes(user, req.method.lower(), False, path=path)
    if not parts or parts[0] not in ("api", "apis"):
        return non_resource
    if parts[0] == "apis":
        if len(parts) < 3:
            return non_resource
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        if len(parts) < 2:
            return non_resource
        group, version, rest = "", parts[1], parts[2:]
    if not rest:
        return non_resource
    verb = _METHOD_VERBS.get(req.method, req.method.lower())
    if rest[0] == "watch":
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if _truthy(req.query.get("watch")) else "list"
    if not name and verb == "delete":
        verb = "deletecollection"
    if verb in ("list", "watch"):
        # kubectl get NAME -w asks by field selector: authorized as that one name.
        for term in req.query.get("fieldSelector", "").split(","):
            key, _, value = term.partition("=")
            value = value.removeprefix("=").strip()  # "=" and "==" both mean equals
            if key.strip() == "metadata.name" and value:
                name = value
    return Attributes(
        user,
        verb,
        True,
        path=path,
        group=group,
        version=version,
        resource=resource,
        subresource=sub,
        namespace=namespace,
        name=name,
    )
