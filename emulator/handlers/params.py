"""Query parameters as kube-apiserver reads them: booleans, integers (a 400 naming the
parameter when one is not) and the label and field selectors that list, watch and
deletecollection share."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.handlers.scope import Target
from kubetrio.emulator.http import Request
from kubetrio.emulator.selectors import FieldSelector, LabelSelector, combine

# Go's strconv.ParseBool spellings.
GO_BOOLS = {v: True for v in ("1", "t", "T", "true", "TRUE", "True")} | {
    v: False for v in ("0", "f", "F", "false", "FALSE", "False")
}


def bool_param(v: str | None) -> bool:
    return v in ("1", "true", "True")


def int_param(req: Request, name: str) -> int | None:
    v = req.query.get(name)
    if v in (None, ""):
        return None
    try:
        return int(v)
    except ValueError:
        raise errors.bad_request(f'{name}: Invalid value: "{v}": must be an integer') from None


def selectors(req: Request, t: Target) -> Any:
    """The predicate of ``labelSelector`` and ``fieldSelector`` (None: everything)."""
    label = LabelSelector(req.query.get("labelSelector", ""))
    fields = FieldSelector(req.query.get("fieldSelector", ""), t.rt.field_labels)
    return combine(label, fields)
