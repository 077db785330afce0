"""The conditions the namespace controller writes on a terminating Namespace: what it could
discover, parse and delete, and what content (and which of its finalizers) still holds it.
Clients waiting on a namespace read these to say why it is stuck."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Condition = dict[str, Any]

# (type, status, reason, message) of the checks that always pass here.
_SETTLED = (
    (
        "NamespaceDeletionDiscoveryFailure",
        "False",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "False",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "False",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
)


def deletion_conditions(
    remaining: Mapping[str, int], finalizers: Mapping[str, int], old: Any, now: str
) -> list[Condition]:
    """``remaining`` counts objects by ``resource.group``, ``finalizers`` the objects each
    finalizer holds; a condition keeps its transition time while its status stays."""
    if remaining:
        shown = sorted(f"{gr} has {n} resource instances" for gr, n in remaining.items())
        content = (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: " + ", ".join(shown),
        )
    else:
        content = ("False", "ContentRemoved", "All content successfully removed")
    if finalizers:
        held = sorted(f"{f} in {n} resource instances" for f, n in finalizers.items())
        holding = (
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: " + ", ".join(held),
        )
    else:
        holding = ("False", "ContentHasNoFinalizers", "All content-preserving finalizers finished")
    rows = [
        *_SETTLED,
        ("NamespaceContentRemaining", *content),
        ("NamespaceFinalizersRemaining", *holding),
    ]
    before = {c.get("type"): c for c in old or [] if isinstance(c, dict)}
    out = []
    for type_, status, reason, message in rows:
        prev = before.get(type_)
        since = prev.get("lastTransitionTime") if prev and prev.get("status") == status else now
        out.append(
            {
                "type": type_,
                "status": status,
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }
        )
    return out
