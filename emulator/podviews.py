"""A pod's ``ephemeralcontainers`` and ``resize`` subresources: updates that change one part
of the pod and ignore the rest of the body, as kube's pod storage does for ``kubectl debug``
(ephemeral containers added) and in-place resizing (container resources changed)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

VIEWS = ("ephemeralcontainers", "resize")
_RESIZABLE = ("resources", "resizePolicy")


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def changed(subresource: str, current: Obj, body: Obj) -> Obj:
    """``current`` (a copy of the stored pod) with the view's part taken from ``body``."""
    spec = current.setdefault("spec", {})
    wanted = _spec(body)
    if subresource == "ephemeralcontainers":
        if wanted.get("ephemeralContainers") is None:
            spec.pop("ephemeralContainers", None)
        else:
            spec["ephemeralContainers"] = wanted["ephemeralContainers"]
        return current
    given = {
        c.get("name"): c
        for key in ("initContainers", "containers")
        for c in wanted.get(key) or []
        if isinstance(c, dict)
    }
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            new = given.get(c.get("name")) if isinstance(c, dict) else None
            if new is None:
                continue
            for field in _RESIZABLE:
                if field in new:
                    c[field] = new[field]
                else:
                    c.pop(field, None)
    return current
