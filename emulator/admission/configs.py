"""Defaults and validation of ``admissionregistration.k8s.io/v1`` webhook configurations.

kube-apiserver fills the same defaults in (so ``kubectl get -o yaml`` shows them) and refuses a
configuration it could never call with a 422 naming the field, as here.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cryptography import x509

from kubetrio.emulator import errors

GROUP = "admissionregistration.k8s.io"
MUTATING = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
VALIDATING = "validatingwebhookconfigurations.admissionregistration.k8s.io"

_OPERATIONS = ("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
_CHOICES = {
    "failurePolicy": ("Ignore", "Fail"),
    "matchPolicy": ("Exact", "Equivalent"),
    "reinvocationPolicy": ("Never", "IfNeeded"),
}
Cause = tuple[str, str, str]


def _supported(field: str, value: Any, allowed: tuple[str, ...]) -> Cause:
    quoted = ", ".join(f'"{a}"' for a in allowed)
    return (
        "FieldValueNotSupported",
        field,
        f'Unsupported value: "{value}": supported values: {quoted}',
    )


def _default(hook: dict[str, Any], mutating: bool) -> None:
    hook.setdefault("failurePolicy", "Fail")
    hook.setdefault("matchPolicy", "Equivalent")
    hook.setdefault("namespaceSelector", {})
    hook.setdefault("objectSelector", {})
    hook.setdefault("timeoutSeconds", 10)
    if mutating:
        hook.setdefault("reinvocationPolicy", "Never")
    for rule in hook.get("rules") or []:
        if isinstance(rule, dict):
            rule.setdefault("scope", "*")
    service = (hook.get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


def _client_config(config: Any, at: str) -> list[Cause]:
    if not isinstance(config, dict) or ("url" in config) == ("service" in config):
        return [
            ("FieldValueRequired", at, "Required value: exactly one of url or service is required")
        ]
    out: list[Cause] = []
    url = config.get("url")
    if url is not None and (not isinstance(url, str) or not url.startswith("https://")):
        out.append(
            (
                "FieldValueInvalid",
                f"{at}.url",
                f"Invalid value: \"{url}\": 'https' is the only allowed URL scheme",
            )
        )
    ca = config.get("caBundle")
    if ca is not None:
        try:
            x509.load_pem_x509_certificates(base64.b64decode(str(ca), validate=True))
        except (ValueError, binascii.Error):
            out.append(
                (
                    "FieldValueInvalid",
                    f"{at}.caBundle",
                    "Invalid value: must be PEM-encoded certificates",
                )
            )
    return out


def _hook_causes(hook: Any, at: str, mutating: bool) -> list[Cause]:
    if not isinstance(hook, dict):
        return [("FieldValueInvalid", at, "Invalid value: must be an object")]
    out: list[Cause] = []
    name = hook.get("name")
    if not isinstance(name, str) or name.count(".") < 2:
        out.append(
            (
                "FieldValueInvalid",
                f"{at}.name",
                f'Invalid value: "{name}": should be a domain with at least three segments '
                "separated by dots",
            )
        )
    versions = hook.get("admissionReviewVersions")
    if not isinstance(versions, list) or "v1" not in versions:
        out.append(
            (
                "FieldValueRequired",
                f"{at}.admissionReviewVersions",
                "Required value: must include v1 (the only version the emulator sends)",
            )
        )
    side = hook.get("sideEffects")
    if side is None:
        out.append(
            (
                "FieldValueRequired",
                f"{at}.sideEffects",
                "Required value: must specify one of None, NoneOnDryRun",
            )
        )
    elif side not in ("None", "NoneOnDryRun"):
        out.append(_supported(f"{at}.sideEffects", side, ("None", "NoneOnDryRun")))
    for field, allowed in _CHOICES.items():
        if (
            field in hook
            and (mutating or field != "reinvocationPolicy")
            and hook[field] not in allowed
        ):
            out.append(_supported(f"{at}.{field}", hook[field], allowed))
    timeout = hook.get("timeoutSeconds")
    if not isinstance(timeout, int) or not 1 <= timeout <= 30:
        out.append(
            (
                "FieldValueInvalid",
                f"{at}.timeoutSeconds",
                f"Invalid value: {timeout}: the timeout value must be between 1 and 30 seconds",
            )
        )
    for i, rule in enumerate(hook.get("rules") or []):
        ops = rule.get("operations") if isinstance(rule, dict) else None
        for op in ops or []:
            if op not in _OPERATIONS:
                out.append(_supported(f"{at}.rules[{i}].operations", op, _OPERATIONS))
    return out + _client_config(hook.get("clientConfig"), f"{at}.clientConfig")


def admit_configuration(obj: dict[str, Any], mutating: bool) -> None:
    """Default a configuration in place, then refuse it (422) when a webhook could not be
    called as written."""
    hooks = obj.get("webhooks") or []
    if not isinstance(hooks, list):
        hooks = []
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, hook in enumerate(hooks):
        if isinstance(hook, dict):
            _default(hook, mutating)
        causes += _hook_causes(hook, f"webhooks[{i}]", mutating)
        name = hook.get("name") if isinstance(hook, dict) else None
        if isinstance(name, str):
            if name in seen:
                causes.append(
                    ("FieldValueDuplicate", f"webhooks[{i}].name", f'Duplicate value: "{name}"')
                )
            seen.add(name)
    if causes:
        kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise errors.invalid(GROUP, kind, name, causes)
