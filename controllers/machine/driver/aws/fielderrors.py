"""apimachinery's ``field.Error`` and ``ErrorList`` aggregate, rendered as Go renders them.

provider-aws reports a bad class as one ``InvalidArgument`` whose message is the aggregate of its
field errors; operators and alerts match those texts, so they are kept character for character:
``path: Required value: detail``, ``path: Invalid value: "x": detail``, several in brackets,
each distinct text once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubetrio.runtime.util.gotext import go_quote


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str
    type: str  # "Required value", "Invalid value", "Unsupported value", "Forbidden"
    detail: str
    value: str | None = None  # the bad value as Go prints it; None for types that omit it

    def __str__(self) -> str:
        body = self.type if self.value is None else f"{self.type}: {self.value}"
        return f"{self.path}: {body}: {self.detail}" if self.detail else f"{self.path}: {body}"


def required(path: str, detail: str) -> FieldError:
    return FieldError(path, "Required value", detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, "Forbidden", detail)


def invalid(path: str, value: str | int, detail: str) -> FieldError:
    """An invalid value: strings quoted as Go's ``%q``, numbers plain."""
    shown = go_quote(value) if isinstance(value, str) else str(value)
    return FieldError(path, "Invalid value", detail, shown)


def invalid_shown(path: str, shown: str, detail: str) -> FieldError:
    """An invalid value already rendered (a struct as Go's ``%#v`` prints it)."""
    return FieldError(path, "Invalid value", detail, shown)


def not_supported(path: str, value: str, supported: Sequence[str]) -> FieldError:
    listed = ", ".join(go_quote(v) for v in supported)
    return FieldError(path, "Unsupported value", f"supported values: {listed}", go_quote(value))


def aggregate(errors: Sequence[FieldError]) -> str:
    """``utilerrors.NewAggregate(list).Error()``: one error as it is, several bracketed and
    comma-separated, repeats dropped."""
    seen: list[str] = []
    for error in errors:
        text = str(error)
        if text not in seen:
            seen.append(text)
    return seen[0] if len(seen) == 1 else f"[{', '.join(seen)}]"
