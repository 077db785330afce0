"""The name formats of apimachinery's ``validation`` package that pod and workload rules use
(DNS-1123 labels, qualified names as label keys, label values, IANA service names), with the
explanations kube appends to an ``Invalid value``."""

from __future__ import annotations

import functools
import re

from kubetrio.emulator.validation.causes import Causes

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_PORT_NAME = re.compile(r"[-a-z0-9]+\Z")
_PORT_NAME_LETTER = re.compile(r"[a-z]")
_ENV_NAME = re.compile(r"[ -<>-~]+\Z")

DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value', "
    " or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def dns_label(causes: Causes, field: str, value: str) -> None:
    """A DNS-1123 label (container, volume and port names' cousins, hostnames)."""
    if len(value) > 63:
        causes.invalid(field, value, "must be no more than 63 characters")
    if not _LABEL.match(value):
        causes.invalid(field, value, DNS_LABEL_MSG)


def dns_subdomain(causes: Causes, field: str, value: str) -> None:
    if len(value) > 253:
        causes.invalid(field, value, "must be no more than 253 characters")
    if not _SUBDOMAIN.match(value):
        causes.invalid(field, value, _SUBDOMAIN_MSG)


@functools.lru_cache(maxsize=1024)
def label_key_problems(key: str) -> tuple[str, ...]:
    """Why ``key`` is no qualified name (``[prefix/]name``), as IsQualifiedName words it
    (cached: the same few keys come back on every pod)."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ("prefix part must be non-empty",)
        if len(prefix) > 253 or not _SUBDOMAIN.match(prefix):
            return (f"prefix part {_SUBDOMAIN_MSG}",)
    else:
        return (
            "a valid label key " + _QUALIFIED_MSG + " with an optional DNS subdomain prefix and "
            "'/' (e.g. 'example.com/MyName')",
        )
    if not name:
        return ("name part must be non-empty",)
    if len(name) > 63:
        return ("name part must be no more than 63 characters",)
    if not _QUALIFIED.match(name):
        return (
            "name part " + _QUALIFIED_MSG + " with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')",
        )
    return ()


def labels(causes: Causes, field: str, value: object) -> None:
    """A map of label keys to label values (nodeSelector, matchLabels)."""
    if not isinstance(value, dict):
        return
    for key, val in value.items():
        for problem in label_key_problems(str(key)):
            causes.invalid(field, key, problem)
        label_value(causes, field, val)


def label_value(causes: Causes, field: str, value: object) -> None:
    text = value if isinstance(value, str) else str(value)
    if len(text) > 63:
        causes.invalid(field, text, "must be no more than 63 characters")
    if not _LABEL_VALUE.match(text):
        causes.invalid(field, text, _LABEL_VALUE_MSG)


def port_name(causes: Causes, field: str, value: str) -> None:
    """An IANA service name: at most 15 lowercase letters, digits and non-adjacent hyphens."""
    if len(value) > 15:
        causes.invalid(field, value, "must be no more than 15 characters")
    if not _PORT_NAME.match(value):
        causes.invalid(
            field, value, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
        )
    elif "--" in value:
        causes.invalid(field, value, "must not contain consecutive hyphens")
    elif not _PORT_NAME_LETTER.search(value):
        causes.invalid(field, value, "must contain at least one letter (a-z)")
    elif value.startswith("-") or value.endswith("-"):
        causes.invalid(field, value, "must not begin or end with a hyphen")


def env_name(causes: Causes, field: str, value: str) -> None:
    if not _ENV_NAME.match(value):
        causes.invalid(
            field,
            value,
            "a valid environment variable name must consist only of printable ASCII characters "
            "other than '='",
        )
