"""Core (v1) Event rules: an event written without ``eventTime`` through the v1 API names its
object in its own namespace (``legacyValidateEvent``); nothing else is checked there."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.validation import names
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]

REPORTING_INSTANCE_LIMIT = 128


def create(obj: Obj, causes: Causes) -> None:
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    involved = obj.get("involvedObject") or {}
    their = (involved.get("namespace") or "") if isinstance(involved, dict) else ""
    field = "involvedObject.namespace"
    if not obj.get("eventTime"):
        if their != namespace and (their or namespace not in ("", "default")):
            causes.invalid(field, their, "does not match event.namespace")
    else:
        if not their and namespace not in ("default", "kube-system"):
            causes.invalid(field, their, "does not match event.namespace")
        controller = obj.get("reportingComponent") or ""
        if not controller:
            causes.required("reportingComponent")
        causes.extend("reportingComponent", controller, names.qualified_name(controller))
        instance = obj.get("reportingInstance") or ""
        if not instance:
            causes.required("reportingInstance")
        if len(instance) > REPORTING_INSTANCE_LIMIT:
            causes.invalid(
                "reportingInstance", "", f"can have at most {REPORTING_INSTANCE_LIMIT} characters"
            )
    causes.extend("namespace", namespace, names.dns_subdomain(namespace) if namespace else [])


def update(new: Obj, old: Obj, causes: Causes) -> None:
    create(new, causes)


RULES = {"events": (create, update, None)}
