"""Plain data (a file's, or everything merged) converted to ``ManagerConfig`` by msgspec, its
error turned into one line that names the field, the value and where the value came from."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from kubetrio.cmd.config.errors import ConfigError, dotted, show
from kubetrio.cmd.config.sections import ManagerConfig, type_at
from kubetrio.cmd.config.sources import Sources, lookup
from kubetrio.runtime.util.duration import Duration

__all__ = ["as_seconds", "convert", "file_dec_hook"]

_ERROR_PATH = re.compile(r" - at `\$((?:\.[^.\[`]+|\[[^\]]*\])*)`$")


def _dec_hook(kind: type, value: Any) -> Any:
    if kind is Duration:
        return Duration.parse(value)
    raise NotImplementedError(kind)  # msgspec turns this into "unsupported type"


def file_dec_hook(kind: type, value: Any) -> Any:
    """A file states durations as strings: a bare ``30`` could mean seconds or minutes (or a
    forgotten unit), and Go's config files reject it for the same reason."""
    if kind is Duration and not isinstance(value, str):
        raise ValueError(f'expected a duration string like "15s", got {show(value)}')
    return _dec_hook(kind, value)


def as_seconds(value: Any) -> Any:
    """``enc_hook`` for merging: durations as the seconds flags and variables give."""
    if isinstance(value, Duration):
        return float(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def convert(
    data: Mapping[str, Any],
    sources: Sources,
    *,
    everything_from: str | None,
    dec_hook: Callable[[type, Any], Any] = _dec_hook,
) -> ManagerConfig:
    """msgspec's conversion, its error turned into one line that names where the value came from.

    ``everything_from`` labels every error (the file, when it is checked on its own); otherwise
    the source is looked up by the error's field path.
    """
    try:
        return msgspec.convert(data, ManagerConfig, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _ERROR_PATH.search(text)
        path: list[str] = []
        if match:
            text = text[: match.start()]
            # "[...]" stands for a mapping key msgspec does not name; the mapping's path will do.
            path = [p for p in re.split(r"\.|\[|\]", match.group(1)) if p and p != "..."]
        message = _readable(text, path, data)
        if everything_from is not None:
            where = dotted(path)
            prefix = f"{everything_from}: {where}" if where else everything_from
            raise ConfigError(f"{prefix}: {message}") from None
        raise sources.error(path, message) from None


def _readable(message: str, path: Sequence[str], data: Mapping[str, Any]) -> str:
    unknown = re.fullmatch(r"Object contains unknown field `(.*)`", message)
    if unknown:
        name = unknown.group(1)
        hint = difflib.get_close_matches(name, _field_names(path), n=1)
        suggestion = f' (did you mean "{hint[0]}"?)' if hint else ""
        return f'unknown field "{name}"{suggestion}'
    if message.startswith("Invalid enum value"):
        allowed = _allowed_values(path)
        if allowed:
            message = f"Expected one of {', '.join(map(show, allowed))}"
    message = message.replace("`", "")
    if message.startswith("Expected object"):
        message = message.replace("Expected object", "Expected a mapping", 1)
    if ", got " not in message and "got " not in message:
        found, value = lookup(data, path)
        if found:
            message += f", got {show(value)}"
    return message[:1].lower() + message[1:]


def _field_names(path: Sequence[str]) -> list[str]:
    found = type_at(path)
    return (
        [f.encode_name for f in found.fields]
        if isinstance(found, msgspec.inspect.StructType)
        else []
    )


def _allowed_values(path: Sequence[str]) -> list[Any]:
    found = type_at(path)
    return list(found.values) if isinstance(found, msgspec.inspect.LiteralType) else []
