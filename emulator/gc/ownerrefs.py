"""``metadata.ownerReferences``: the apiserver's validation of them on every write, and the
reading the collector does (which tolerates what validation lets through)."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.errors import bad_request, invalid

_FIELD = "metadata.ownerReferences"
_BANNED_OWNERS = frozenset({("v1", "Event")})
_STRING_FIELDS = ("apiVersion", "kind", "name", "uid")
_BOOL_FIELDS = ("controller", "blockOwnerDeletion")


def owner_refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The object's owner references (validated on write, so well-typed)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def owner_uids(obj: dict[str, Any]) -> set[str]:
    return {str(r.get("uid", "")) for r in owner_refs(obj)}


def check_owner_references(group: str, kind: str, name: str, md: dict[str, Any]) -> None:
    """ValidateOwnerReferences: a wrong type is a decoding error (400); a missing field, a bad
    apiVersion, an Event as owner or two controllers is 422 naming the field."""
    refs = md.get("ownerReferences")
    if refs is None:
        return
    if not isinstance(refs, list):
        raise bad_request(f"{_FIELD}: Invalid value: must be an array")
    causes: list[tuple[str, str, str]] = []
    controller = ""
    for i, ref in enumerate(refs):
        path = f"{_FIELD}[{i}]"
        if not isinstance(ref, dict):
            raise bad_request(f"{path}: Invalid value: must be an object")
        for f in _STRING_FIELDS:
            if not isinstance(ref.get(f, ""), str):
                raise bad_request(f"{path}.{f}: Invalid value: must be a string")
        for f in _BOOL_FIELDS:
            if ref.get(f) is not None and not isinstance(ref.get(f), bool):
                raise bad_request(f"{path}.{f}: Invalid value: must be a boolean")
        api_version = ref.get("apiVersion") or ""
        if not api_version:
            causes.append(
                ("FieldValueRequired", f"{path}.apiVersion", "Required value: must not be empty")
            )
        elif not _valid_group_version(api_version):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.apiVersion",
                    f'Invalid value: "{api_version}": must be <group>/<version> or <version>',
                )
            )
        for f in ("kind", "name", "uid"):
            if not ref.get(f):
                causes.append(
                    ("FieldValueRequired", f"{path}.{f}", "Required value: must not be empty")
                )
        if (api_version, ref.get("kind")) in _BANNED_OWNERS:
            causes.append(
                (
                    "FieldValueInvalid",
                    path,
                    f"Invalid value: {_go_ref(ref)}: /v1, Kind=Event is disallowed from being an "
                    "owner",
                )
            )
        if ref.get("controller"):
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if controller:
                causes.append(
                    (
                        "FieldValueInvalid",
                        _FIELD,
                        "Invalid value: "
                        + "[]v1.OwnerReference{"
                        + ", ".join(_go_ref(r) for r in refs)
                        + "}: Only one reference can have Controller set to true. Found "
                        f'"true" in references for {controller} and {current}',
                    )
                )
            else:
                controller = current
    if causes:
        raise invalid(group, kind, name, causes)


def _valid_group_version(api_version: str) -> bool:
    """schema.ParseGroupVersion plus a non-empty version: "v1" or "group/version"."""
    parts = api_version.split("/")
    if len(parts) == 1:
        return bool(parts[0])
    return len(parts) == 2 and bool(parts[1])


def _go_ref(ref: dict[str, Any]) -> str:
    """An owner reference as Go's %#v shows it in a field error's value."""

    def opt(v: Any) -> str:
        return "(*bool)(nil)" if v is None else f"&{str(v).lower()}"

    return (
        f'v1.OwnerReference{{APIVersion:"{ref.get("apiVersion", "")}", '
        f'Kind:"{ref.get("kind", "")}", Name:"{ref.get("name", "")}", '
        f'UID:"{ref.get("uid", "")}", Controller:{opt(ref.get("controller"))}, '
        f"BlockOwnerDeletion:{opt(ref.get('blockOwnerDeletion'))}}}"
    )
