"""``DeleteOptions`` as DELETE bodies, query parameters and eviction bodies carry them,
validated once so the store only sees well-typed values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrio.emulator.errors import bad_request, invalid

PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    grace_period: int | None = None
    preconditions: dict[str, Any] | None = None
    dry_run: bool = False
    propagation: str | None = None  # Orphan / Background / Foreground (see gc.policy)
    orphan_dependents: bool | None = None  # the deprecated form of the same choice


def parse_delete_options(body: Any, prefix: str = "") -> DeleteOptions:
    """``body`` is the decoded DeleteOptions (None when absent); errors name ``prefix+field``."""
    if body is None:
        return DeleteOptions()
    if not isinstance(body, dict):
        raise bad_request(f"{prefix or 'DeleteOptions'}: Invalid value: must be an object")
    grace = body.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool) or grace < 0):
        raise bad_request(
            f"{prefix}gracePeriodSeconds: Invalid value: {grace!r}: must be >= 0 integer"
        )
    pre = body.get("preconditions")
    if pre is not None and (
        not isinstance(pre, dict)
        or not all(isinstance(pre.get(k), str | None) for k in ("uid", "resourceVersion"))
    ):
        raise bad_request(f"{prefix}preconditions: Invalid value: must be an object of strings")
    dry = body.get("dryRun")
    if dry is not None and (not isinstance(dry, list) or any(d != "All" for d in dry)):
        raise bad_request(f'{prefix}dryRun: Unsupported value: {dry!r}: supported values: "All"')
    policy = body.get("propagationPolicy")
    if policy is not None and not isinstance(policy, str):
        raise bad_request(f"{prefix}propagationPolicy: Invalid value: must be a string")
    orphan = body.get("orphanDependents")
    if orphan is not None and not isinstance(orphan, bool):
        raise bad_request(f"{prefix}orphanDependents: Invalid value: must be a boolean")
    _validate_propagation(policy, orphan, prefix)
    return DeleteOptions(
        grace_period=grace,
        preconditions=pre or None,
        dry_run=bool(dry),
        propagation=policy,
        orphan_dependents=orphan,
    )


def _validate_propagation(policy: str | None, orphan: bool | None, prefix: str) -> None:
    """ValidateDeleteOptions: 422 on DeleteOptions.meta.k8s.io, naming the field."""
    causes: list[tuple[str, str]] = []
    field = f"{prefix}propagationPolicy"
    if policy is not None and orphan is not None:
        causes.append(
            (
                "FieldValueInvalid",
                f'Invalid value: "{policy}": orphanDependents and deletionPropagation cannot be '
                "both set",
            )
        )
    if policy is not None and policy not in PROPAGATION_POLICIES:
        causes.append(
            (
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Foreground", "Background", '
                '"Orphan", "nil"',
            )
        )
    if not causes:
        return
    raise invalid("meta.k8s.io", "DeleteOptions", "", [(t, field, m) for t, m in causes])
