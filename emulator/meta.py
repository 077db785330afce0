"""Object metadata plumbing shared by every kind: uids, generated names, the shapes of
metadata fields (the rules on their contents live in ``validation.objectmeta``)."""

from __future__ import annotations

import random
import uuid
from typing import Any

from kubetrio.emulator.errors import ApiError, bad_request, invalid

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_rand = random.Random()


def new_uid() -> str:
    return str(uuid.uuid4())


def generate_name(prefix: str) -> str:
    return prefix + "".join(_rand.choice(_GENERATE_ALPHABET) for _ in range(5))


def metadata_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's metadata dict (created when absent); 400 when it is not an object."""
    md = obj.get("metadata")
    if md is None:
        md = obj["metadata"] = {}
    if not isinstance(md, dict):
        raise bad_request("metadata: Invalid value: must be an object")
    return md


def check_string_map(group: str, kind: str, name: str, md: dict[str, Any], key: str) -> None:
    value = md.get(key)
    if value is None:
        return
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise invalid(
            group,
            kind,
            name,
            [("FieldValueInvalid", f"metadata.{key}", "Invalid value: must be a map of strings")],
        )


def check_finalizers(group: str, kind: str, name: str, md: dict[str, Any]) -> None:
    fins = md.get("finalizers")
    if fins is None:
        return
    if not isinstance(fins, list) or not all(isinstance(f, str) for f in fins):
        raise invalid(
            group,
            kind,
            name,
            [
                (
                    "FieldValueInvalid",
                    "metadata.finalizers",
                    "Invalid value: must be a list of strings",
                )
            ],
        )


def check_type_meta(obj: Any, api_versions: tuple[str, ...], kind: str) -> dict[str, Any]:
    """The body as a dict whose apiVersion/kind fit the URL (defaulted when absent)."""
    if not isinstance(obj, dict):
        raise bad_request("the request body must be a JSON object")
    av = obj.get("apiVersion")
    k = obj.get("kind")
    if av is None:
        obj["apiVersion"] = api_versions[0]
    elif av not in api_versions:
        raise bad_request(
            f"the API version in the data ({av}) does not match the expected API version "
            f"({api_versions[0]})"
        )
    if k is None:
        obj["kind"] = kind
    elif k != kind:
        raise bad_request(f"the kind in the data ({k}) does not match the expected kind ({kind})")
    return obj


def api_error_field(group: str, kind: str, name: str, field: str, message: str) -> ApiError:
    return invalid(group, kind, name, [("FieldValueInvalid", field, message)])


def check_object_fields(kind: str, obj: dict[str, Any]) -> None:
    """Built-in kinds decode into Go structs: ``spec`` and ``status`` must be objects."""
    for field in ("spec", "status"):
        value = obj.get(field)
        if value is not None and not isinstance(value, dict):
            raise bad_request(
                f"json: cannot unmarshal {type(value).__name__} into Go struct field "
                f"{kind}.{field} of type object"
            )


def sub_object(parent: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """``parent[key]`` as a dict ({} when absent); 400 naming ``path`` when it is not one."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad_request(f"{path}: Invalid value: must be an object")
    return value
