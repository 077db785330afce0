"""Secret rules (``ValidateSecret``/``ValidateSecretUpdate``): keys, size, the keys each
well-known type requires, and the type and ``immutable`` contents frozen."""

from __future__ import annotations

import json
from typing import Any

from kubetrio.emulator.validation import configdata, objectmeta
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]

ACCOUNT_NAME = "kubernetes.io/service-account.name"
_REDACTED = "<secret contents redacted>"


def create(obj: Obj, causes: Causes) -> None:
    data = configdata.decode_base64("Secret", obj.get("data"))
    configdata.keys(data, "data", causes)
    if sum(len(v) for v in data.values()) > configdata.MAX_SIZE:
        causes.too_long("data", configdata.MAX_SIZE)
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not annotations.get(ACCOUNT_NAME):
            causes.required(f"metadata.annotations[{ACCOUNT_NAME}]")
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            causes.required(f"data[{key}]")
        else:
            problem = _json_object_error(data[key])
            if problem:
                causes.invalid(f"data[{key}]", _REDACTED, problem)
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            causes.required("data[username]")
            causes.required("data[password]")
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            causes.required("data[ssh-privatekey]")
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                causes.required(f"data[{key}]")


def _json_object_error(raw: bytes) -> str:
    """What Go's json.Unmarshal into a map says of ``raw`` ("" when it is a JSON object)."""
    try:
        value = json.loads(raw)
    except ValueError:
        text = raw.decode(errors="replace").lstrip()
        if not text:
            return "unexpected end of JSON input"
        return f"invalid character '{text[0]}' looking for beginning of value"
    if isinstance(value, dict) or value is None:
        return ""
    kind = {list: "array", str: "string", bool: "bool"}.get(type(value), "number")
    return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"


def update(new: Obj, old: Obj, causes: Causes) -> None:
    if new.get("type") != old.get("type"):
        causes.invalid("type", new.get("type"), "field is immutable")
    configdata.frozen(new, old, ("data",), causes)
    objectmeta.fields(new.get("metadata") or {}, causes)
    create(new, causes)


RULES = {"secrets": (create, update, None)}
