"""Query options validated as kube-apiserver validates them (apimachinery's
``ValidateCreateOptions``, ``ValidateUpdateOptions``, ``ValidatePatchOptions``,
``ValidateDeleteOptions`` and ``ValidateListOptions``): each broken rule is a cause of one 422
Invalid naming the options kind (``CreateOptions.meta.k8s.io "" is invalid: ...``), so a client
meets the refusal, and the wording, a cluster gives. Runs before anything else a request does."""

from __future__ import annotations

import json

from kubetrio.emulator import errors
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.http import Request
from kubetrio.emulator.validation.causes import Causes

FIELD_MANAGER_MAX = 128
APPLY = "application/apply-patch+yaml"
_OPTIONS_KIND = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}
_FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")


def refused(kind: str, causes: Causes) -> ApiError:
    """The 422 kube answers for invalid request options of ``kind``."""
    return errors.invalid("meta.k8s.io", kind, "", causes.items)


def check_write(req: Request, verb: str) -> None:
    """The options of a create, update, patch or delete; raises 422 naming each broken one."""
    kind = _OPTIONS_KIND.get(verb)
    if kind is None:
        return
    causes = Causes()
    q = req.query
    if verb == "patch":
        apply = req.header("content-type").split(";")[0].strip() == APPLY
        if not apply and "force" in q:
            causes.forbidden("force", "may not be specified for non-apply patch")
        if apply and not q.get("fieldManager"):
            causes.required("fieldManager", "is required for apply patch")
    if kind != "DeleteOptions":
        _field_manager(q.get("fieldManager", ""), causes)
    dry_run = q.get("dryRun")
    if dry_run not in (None, "", "All"):
        # a list of values: printed as one
        causes.items.append(
            (
                "FieldValueNotSupported",
                "dryRun",
                f'Unsupported value: {json.dumps([dry_run])}: supported values: "All"',
            )
        )
    if kind != "DeleteOptions":
        value = q.get("fieldValidation", "")
        if value not in _FIELD_VALIDATION:
            causes.unsupported("fieldValidation", value, list(_FIELD_VALIDATION))
    if causes:
        raise refused(kind, causes)


def _field_manager(manager: str, causes: Causes) -> None:
    if len(manager.encode()) > FIELD_MANAGER_MAX:
        causes.too_long("fieldManager", FIELD_MANAGER_MAX)
        return
    offset = 0
    for ch in manager:
        if not ch.isprintable():
            causes.invalid(
                "fieldManager", manager, f"invalid character U+{ord(ch):04X} (at position {offset})"
            )
            return
        offset += len(ch.encode())


def check_list(req: Request, watch: bool) -> None:
    """ListOptions as kube validates them for a list (``watch`` False) or a watch."""
    q = req.query
    causes = Causes()
    match = q.get("resourceVersionMatch", "")
    rv = q.get("resourceVersion", "")
    initial = "sendInitialEvents" in q
    if watch and initial and match != "NotOlderThan":
        causes.forbidden(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        )
    if match:
        if watch:
            if not initial:
                causes.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            if match != "NotOlderThan":
                causes.unsupported("resourceVersionMatch", match, ["NotOlderThan"])
        else:
            if not rv:
                causes.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            if q.get("continue"):
                causes.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            if match not in ("Exact", "NotOlderThan"):
                causes.unsupported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""])
            elif match == "Exact" and rv == "0":
                causes.forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
    if initial and not watch:
        causes.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
    if causes:
        raise refused("ListOptions", causes)
    if rv and not rv.isdigit():
        raise errors.bad_request(
            f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
            f'strconv.ParseUint: parsing "{rv}": invalid syntax'
        )
