"""What ConfigMaps and Secrets share: data keys, base64 values, the size cap, and the
``immutable`` switch that freezes their contents."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.validation import names
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]

MAX_SIZE = 1024 * 1024
FROZEN = "field is immutable when `immutable` is set"
_BASE64 = re.compile(r"[A-Za-z0-9+/]")


def decode_base64(kind: str, values: Any) -> dict[str, bytes]:
    """Values as the Go decoder reads a ``[]byte`` map: standard padded base64, or 400 naming
    the first offending byte as a cluster does."""
    if not isinstance(values, dict):
        return {}
    out: dict[str, bytes] = {}
    for key, value in values.items():
        text = value if isinstance(value, str) else ""
        try:
            out[key] = base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            raise errors.bad_request(
                f'{kind} in version "v1" cannot be handled as a {kind}: illegal base64 data at '
                f"input byte {_bad_byte(text)}"
            ) from None
    return out


def _bad_byte(text: str) -> int:
    body = text.rstrip("=")
    for i, ch in enumerate(body):
        if not _BASE64.match(ch) and ch not in "\r\n":
            return i
    return len(text) - len(text) % 4


def keys(values: Any, field: str, causes: Causes) -> None:
    if isinstance(values, dict):
        for key in values:
            causes.extend(f"{field}[{key}]", key, names.config_key(key))


def frozen(new: Obj, old: Obj, fields: tuple[str, ...], causes: Causes) -> None:
    """Once ``immutable`` is true, it and the contents can no longer change."""
    if old.get("immutable") is not True:
        return
    if new.get("immutable") is not True:
        causes.forbidden("immutable", FROZEN)
    for field in fields:
        if new.get(field) != old.get(field):
            causes.forbidden(field, FROZEN)
