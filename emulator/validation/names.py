"""The string formats kube-apiserver checks (``k8s.io/apimachinery/pkg/util/validation``): DNS
names, qualified names, label values, config keys. Each check returns the messages a real
server gives for the value (none when it is valid), for rules to attach to a field."""

from __future__ import annotations

import functools
import re

_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1035_FMT = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_FMT = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_CONFIG_KEY_FMT = r"[-._a-zA-Z0-9]+"
_PERCENT_FMT = r"[0-9]+%"


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = ",  or ".join(f"'{e}'" for e in examples)
    return f"{message} (e.g. {shown}, regex used for validation is '{fmt}')"


def _full(fmt: str, value: str) -> bool:
    return re.fullmatch(fmt, value) is not None


SUBDOMAIN_ERROR = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character",
    _SUBDOMAIN_FMT,
    "example.com",
)
LABEL_ERROR = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character",
    _LABEL_FMT,
    "my-name",
    "123-abc",
)
DNS1035_ERROR = _regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character",
    _DNS1035_FMT,
    "my-name",
    "abc-123",
)
_QUALIFIED_PART = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)


def _checked(value: str, limit: int, fmt: str, error: str) -> list[str]:
    errors = [f"must be no more than {limit} characters"] if len(value) > limit else []
    return errors if _full(fmt, value) else [*errors, error]


def dns_subdomain(value: str) -> list[str]:
    return _checked(value, 253, _SUBDOMAIN_FMT, SUBDOMAIN_ERROR)


def dns_label(value: str) -> list[str]:
    return _checked(value, 63, _LABEL_FMT, LABEL_ERROR)


def label_name(value: str) -> list[str]:
    """A Namespace or Service name: a DNS label, where a dot gets its own plainer message."""
    return ["must not contain dots"] if "." in value else dns_label(value)


def dns1035_label(value: str) -> list[str]:
    return _checked(value, 63, _DNS1035_FMT, DNS1035_ERROR)


def port_number(value: int) -> list[str]:
    return [] if 1 <= value <= 65535 else ["must be between 1 and 65535, inclusive"]


def port_name(value: str) -> list[str]:
    """IANA_SVC_NAME: a named container or target port."""
    errors = ["must be no more than 15 characters"] if len(value) > 15 else []
    if not _full("[-a-z0-9]+", value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def qualified_name(value: str) -> list[str]:
    """A label key, annotation key, taint key or finalizer: ``[prefix/]name``."""
    return list(_qualified_name(value))


@functools.lru_cache(maxsize=4096)
def _qualified_name(value: str) -> tuple[str, ...]:
    """Cached: the same few keys come back on every object."""
    parts = value.split("/")
    if len(parts) > 2:
        return (
            "a valid label key "
            + _regex_error(_QUALIFIED_PART, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + m for m in dns_subdomain(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 bytes")
    if not _full(_QUALIFIED_FMT, name):
        errors.append(
            "name part "
            + _regex_error(_QUALIFIED_PART, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
        )
    return tuple(errors)


def label_value(value: str) -> list[str]:
    return list(_label_value(value))


@functools.lru_cache(maxsize=4096)
def _label_value(value: str) -> tuple[str, ...]:
    errors = ["must be no more than 63 bytes"] if len(value) > 63 else []
    if not _full(_LABEL_VALUE_FMT, value):
        errors.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return tuple(errors)


def config_key(value: str) -> list[str]:
    """A ConfigMap or Secret data key (also a projected file name)."""
    errors: list[str] = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _full(_CONFIG_KEY_FMT, value):
        errors.append(
            _regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                _CONFIG_KEY_FMT,
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def percent(value: str) -> list[str]:
    if _full(_PERCENT_FMT, value):
        return []
    return [
        _regex_error(
            "a valid percent string must be a numeric string followed by an ending '%'",
            _PERCENT_FMT,
            "1%",
            "93%",
        )
    ]


def path_segment(value: str) -> list[str]:
    """Names that are only ever one URL segment (RBAC objects: ``system:discovery``)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def env_var_name(value: str) -> list[str]:
    """An environment variable's name: printable ASCII but '='."""
    if _full(r"[ -<>-~]+", value):
        return []
    return [
        "a valid environment variable name must consist only of printable ASCII characters "
        "other than '='"
    ]
