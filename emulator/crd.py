"""CustomResourceDefinition rules: which CRDs can be served and the status they report."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.crdconvert import conversion_causes
from kubetrio.emulator.kinds import ResourceTypes, from_crd
from kubetrio.emulator.schema_structural import check_crd


def validate_crd(types: ResourceTypes, obj: dict[str, Any]) -> None:
    """422 naming the field when the CRD cannot be served (or would shadow a built-in)."""
    name = obj["metadata"].get("name", "")
    try:
        rt = from_crd(obj)
    except ValueError as exc:
        fld, _, msg = str(exc).partition(": ")
        raise errors.invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            [("FieldValueInvalid", fld, msg)],
        ) from None
    causes = [c.triple() for c in check_crd(obj)] + conversion_causes(obj)
    if causes:
        raise errors.invalid("apiextensions.k8s.io", "CustomResourceDefinition", name, causes)
    want = f"{rt.plural}.{rt.group}"
    if name != want:
        raise errors.invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            [
                (
                    "FieldValueInvalid",
                    "metadata.name",
                    f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
                )
            ],
        )
    existing = types.by_key(rt.key)
    if existing is not None and existing.builtin:
        raise errors.invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            [("FieldValueInvalid", "spec.group", f'Invalid value: "{rt.group}": is reserved')],
        )


def crd_status(obj: dict[str, Any], now: str) -> dict[str, Any]:
    """What the apiextensions controllers report once the names are accepted: Established at
    once, since serving starts with the write."""
    spec = obj.get("spec") or {}
    storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": storage,
    }
