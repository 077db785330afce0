"""ConfigMap rules (``ValidateConfigMap``/``ValidateConfigMapUpdate``)."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.validation import configdata, objectmeta
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]


def create(obj: Obj, causes: Causes) -> None:
    binary = configdata.decode_base64("ConfigMap", obj.get("binaryData"))
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    assert isinstance(data, dict)
    size = 0
    for key, value in data.items():
        configdata.keys({key: value}, "data", causes)
        if key in binary:
            causes.invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
        size += len(str(value).encode())
    configdata.keys(binary, "binaryData", causes)
    size += sum(len(v) for v in binary.values())
    if size > configdata.MAX_SIZE:
        causes.too_long("", configdata.MAX_SIZE)


def update(new: Obj, old: Obj, causes: Causes) -> None:
    configdata.frozen(new, old, ("data", "binaryData"), causes)
    objectmeta.fields(new.get("metadata") or {}, causes)
    create(new, causes)


RULES = {"configmaps": (create, update, None)}
