"""What a resource URL names and which verb a request is (kube's ``RequestInfo``): the resource
type, version, namespace, name and subresource after ``/api/<v>/`` or ``/apis/<g>/<v>/``, and
get, list, watch, create, update, patch, delete or deletecollection from the method and
whether a name is given. Counting, faults and RBAC all key on these, so they are decided once,
before any handler runs."""

from __future__ import annotations

from kubetrio.emulator import errors, gaps
from kubetrio.emulator.handlers.params import bool_param
from kubetrio.emulator.handlers.scope import Target
from kubetrio.emulator.http import Request
from kubetrio.emulator.kinds import ResourceTypes


def parse_target(types: ResourceTypes, group: str, version: str, rest: list[str]) -> Target:
    """The target of the path segments after the group version; 404 for what is not served."""
    watch_path = False
    if rest[0] == "watch":
        watch_path, rest = True, rest[1:]
        if not rest:
            raise errors.no_such_resource()
    ns: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rt = types.lookup(group, version, rest[2])
        if rt is not None and rt.namespaced:
            ns, rest = rest[1], rest[2:]
    rt = types.lookup(group, version, rest[0])
    if rt is not None and len(rest) > 3 and rest[2] in gaps.UNSERVED_SUBRESOURCES.get(rt.key, ()):
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


def verb_of(req: Request, t: Target) -> str:
    m = req.method
    if m == "GET":
        # A named GET ignores ?watch (only the list route watches), as the apiserver's
        # request info and routes agree; the /watch/ path prefix watches one object.
        if t.watch_path or (not t.name and bool_param(req.query.get("watch"))):
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
