"""Structured logging: one event per line, as logfmt text or JSON, never with a secret in it.

Everything goes through the standard library's ``logging`` so that records from libraries (urllib3,
pykube, trio) and from our own structlog loggers share one handler, one level and one format.
structlog does the event-dict work; the only processors written here are the ones it has no
equivalent for: redaction, and putting a text-mode traceback under its line instead of
escaping it into one unreadable value.

Loggers are lazy proxies (structlog does not cache them), so ``log = get_logger(__name__)`` at
module level picks up whatever ``configure_logging`` was called with last, including in tests that
reconfigure it many times.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from typing import Final, Literal, TextIO, get_args

from kubetrio.runtime.util.lean import import_without

# structlog's development console draws tracebacks with rich when it is installed; the
# manager's renderers (logfmt, JSON) never do.
import_without("structlog", hidden=("rich",))

import structlog  # noqa: E402
from structlog.typing import EventDict, Processor, WrappedLogger  # noqa: E402

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "REDACTED",
    "LogFormat",
    "Logger",
    "configure_default_logging",
    "configure_logging",
    "get_logger",
    "parse_level",
    "redact_text",
    "redact_value",
]

LogFormat = Literal["text", "json"]
LOG_FORMATS: Final[tuple[str, ...]] = get_args(LogFormat)

Logger = structlog.stdlib.BoundLogger

# The names accepted by ``--log-level`` (case-insensitive); "warn" because Go tools spell it so.
LOG_LEVELS: Final[Mapping[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

REDACTED: Final = "[REDACTED]"

# Key names are compared lower-cased with everything but letters and digits dropped, so
# ``user_data``, ``userData`` and ``User-Data`` are one name. A key is secret when it ends with one
# of these: ``bearer_token`` and ``clientSecret`` are caught, ``secretName`` (the name of a Secret,
# useful and harmless) is not.
_SECRET_KEY_SUFFIXES: Final = (
    "token",
    "password",
    "passwd",
    "secret",
    "userdata",
    "authorization",
    "apikey",
    "privatekey",
    "secretkey",
    "accesskey",
    "keydata",  # kubeconfig client-key-data
    "credentials",
    "cookie",
)
_NON_ALNUM = re.compile(r"[^a-z0-9]")

# Values that are credentials wherever they appear: bearer/basic credentials in header dumps,
# JWTs (service-account tokens), kubeadm bootstrap tokens, and ``token=…``-style pairs inside
# free text (a library's message or an exception). Each keeps its label and loses its value.
_SECRET_PATTERNS: Final = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"), rf"\1 {REDACTED}"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"), REDACTED),
    (re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b"), REDACTED),
    (
        re.compile(r"(?i)\b((?:token|password|passwd|secret)[\"']?\s*[=:]\s*[\"']?)[^\s\"',;&]+"),
        rf"\1{REDACTED}",
    ),
)

# The keys every line starts with, in this order; the rest follow as they were bound.
_LEAD_KEYS: Final = ("ts", "level", "logger", "controller", "msg")

# Ours, so a re-configuration can find and replace it without touching anyone else's handlers.
_HANDLER_NAME: Final = "kubetrio"


def parse_level(level: str) -> int:
    """The ``logging`` level for a level name, or a ValueError that names the bad value."""
    number = LOG_LEVELS.get(level.strip().lower()) if isinstance(level, str) else None
    if number is None:
        raise ValueError(
            f"log level: expected one of {', '.join(LOG_LEVELS)}, got {level!r}",
        )
    return number


def _is_secret_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    name = _NON_ALNUM.sub("", key.lower())
    return name.endswith(_SECRET_KEY_SUFFIXES)


def redact_text(text: str) -> str:
    """``text`` with every credential-looking substring replaced; used for messages too."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_value(key: object, value: object) -> object:
    """``value`` as it may be logged under ``key``: containers are walked, secrets replaced.

    A ``kubeconfig`` is a path (fine to log) unless it is inline content, which holds
    credentials; content is recognised by being a mapping or spanning lines.
    """
    if _is_secret_key(key) and value is not None:
        return REDACTED
    if key == "kubeconfig" and (isinstance(value, Mapping) or "\n" in str(value)):
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: redact_value(k, v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [redact_value(None, v) for v in value]
    return value


def _redact(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    for key, value in list(event_dict.items()):
        if not key.startswith("_"):
            event_dict[key] = redact_value(key, value)
    return event_dict


def _lead_keys_first(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    ordered = {key: event_dict.pop(key) for key in _LEAD_KEYS if key in event_dict}
    ordered.update(event_dict)
    return ordered


class _TextRenderer:
    """logfmt for the line; a traceback, if any, follows it verbatim so it stays readable."""

    def __init__(self) -> None:
        self._logfmt = structlog.processors.LogfmtRenderer(bool_as_flag=False)

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> str:
        traceback = event_dict.pop("exception", None)
        line = self._logfmt(logger, name, {k: _one_line(v) for k, v in event_dict.items()})
        if traceback:
            return f"{line}\n{str(traceback).rstrip()}"
        return line


def _one_line(value: object) -> object:
    # logfmt escapes \n but not \r; a bare \r would let a value overwrite the line on a terminal.
    return value.replace("\r", "\\r") if isinstance(value, str) else value


def _shared_processors() -> list[Processor]:
    """What both our events and foreign ``logging`` records get before rendering."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
    ]


def configure_logging(
    format: LogFormat = "text",  # matches the --log-format flag
    level: str = "info",
    stream: TextIO | None = None,
) -> None:
    """Route every log record (ours and the libraries') to ``stream`` in one format.

    Safe to call again: the previous kubetrio handler is replaced, other handlers are left alone.
    """
    if format not in LOG_FORMATS:
        raise ValueError(f"log format: expected one of {', '.join(LOG_FORMATS)}, got {format!r}")
    number = parse_level(level)
    renderer: Processor = (
        structlog.processors.JSONRenderer() if format == "json" else _TextRenderer()
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*_shared_processors(), structlog.stdlib.PositionalArgumentsFormatter()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            _redact,
            structlog.processors.EventRenamer("msg"),
            _lead_keys_first,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter)

    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    _route_structlog_through_logging()


def configure_default_logging() -> None:
    """``configure_logging()``'s defaults, unless the application configured logging itself
    (the root logger has a handler): a manager started from a script then logs as the binary
    does, and one inside an application leaves its logging alone."""
    if not logging.getLogger().handlers:
        configure_logging()


def _route_structlog_through_logging() -> None:
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


def get_logger(name: str, **bound: object) -> Logger:
    """A logger named ``name`` (shown as ``logger=``) carrying ``bound`` on every event.

    The result is a lazy proxy, so a module-level logger follows later ``configure_logging``
    calls; ``.bind()`` on it makes a concrete logger, meant for short-lived per-request use.
    """
    return structlog.stdlib.get_logger(name, **bound)


# Before configure_logging runs, our events still go through ``logging`` (and so nowhere, or to
# its last-resort stderr handler for warnings), never to structlog's own stdout default.
if not structlog.is_configured():
    _route_structlog_through_logging()
