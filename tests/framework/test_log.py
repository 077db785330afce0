"""Structured logging: formats, levels, stdlib records, tracebacks and redaction."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from kubetrio.runtime.util.log import (
    REDACTED,
    configure_logging,
    get_logger,
    parse_level,
    redact_text,
    redact_value,
)

# The shape of a text line's leading keys.
TEXT_LINE = re.compile(r"^ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z level=(\w+) logger=(\S+) ")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Each test configures logging; put the root logger back as pytest had it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.contextvars.clear_contextvars()


def configured(fmt: str = "text", level: str = "debug") -> io.StringIO:
    out = io.StringIO()
    configure_logging(fmt, level, out)  # type: ignore[arg-type]
    return out


def json_lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_text_line_has_timestamp_level_logger_msg_then_fields() -> None:
    out = configured("text")
    get_logger("kubetrio.machine", controller="machine").info(
        "drained node", node="n1", pods=3, forced=False, note="two words"
    )
    (line,) = out.getvalue().splitlines()
    assert TEXT_LINE.match(line)
    assert line.split(" ", 3)[3] == (
        'controller=machine msg="drained node" node=n1 pods=3 forced=false note="two words"'
    )


def test_json_line_is_one_object_with_the_same_keys() -> None:
    out = configured("json")
    get_logger("kubetrio.machine", controller="machine").warning("slow", seconds=1.5)
    (record,) = json_lines(out)
    assert list(record)[:5] == ["ts", "level", "logger", "controller", "msg"]
    assert record["level"] == "warning"
    assert record["logger"] == "kubetrio.machine"
    assert record["msg"] == "slow"
    assert record["seconds"] == 1.5


def test_bind_adds_fields_and_keeps_the_logger_name() -> None:
    out = configured("json")
    log = get_logger("kubetrio.nodedelete").bind(key="default/n1")
    log.bind(attempt=2).error("failed")
    (record,) = json_lines(out)
    assert record["logger"] == "kubetrio.nodedelete"
    assert (record["key"], record["attempt"], record["level"]) == ("default/n1", 2, "error")


def test_context_variables_are_merged() -> None:
    out = configured("json")
    structlog.contextvars.bind_contextvars(reconcile_id="r-1")
    get_logger("x").info("inside")
    assert json_lines(out)[0]["reconcile_id"] == "r-1"


def test_level_filters_our_events_and_library_records() -> None:
    out = configured("text", "warning")
    log = get_logger("kubetrio.x")
    log.debug("hidden")
    log.info("hidden")
    logging.getLogger("urllib3.connectionpool").info("hidden")
    log.warning("shown")
    logging.getLogger("pykube").error("also shown")
    levels = [TEXT_LINE.match(line).group(1) for line in out.getvalue().splitlines()]  # type: ignore[union-attr]
    assert levels == ["warning", "error"]


def test_a_module_level_logger_follows_reconfiguration() -> None:
    log = get_logger("kubetrio.early")  # made before any configuration, like a module global
    first = configured("text")
    log.info("one")
    second = configured("json")
    log.info("two")
    assert "msg=one" in first.getvalue()
    assert "two" not in first.getvalue()
    assert json_lines(second)[0]["msg"] == "two"


def test_reconfiguring_replaces_our_handler_only() -> None:
    other = logging.NullHandler()
    logging.getLogger().addHandler(other)
    configured()
    configured()
    out = configured()
    ours = [h for h in logging.getLogger().handlers if h.get_name() == "kubetrio"]
    assert len(ours) == 1
    assert other in logging.getLogger().handlers
    get_logger("x").info("once")
    assert out.getvalue().count("msg=once") == 1


def test_stdlib_records_come_out_in_the_same_format() -> None:
    out = configured("json")
    logging.getLogger("urllib3.connectionpool").warning("Retrying (%r) after %s", 3, "reset")
    (record,) = json_lines(out)
    assert record["logger"] == "urllib3.connectionpool"
    assert record["level"] == "warning"
    assert record["msg"] == "Retrying (3) after reset"
    assert "ts" in record

    text = configured("text")
    logging.getLogger("pykube.http").info("GET %s", "/api/v1/nodes")
    (line,) = text.getvalue().splitlines()
    assert TEXT_LINE.match(line)
    assert line.endswith('logger=pykube.http msg="GET /api/v1/nodes"')


def boom() -> None:
    raise ValueError("bad thing")


def test_text_traceback_follows_its_line() -> None:
    out = configured("text")
    try:
        boom()
    except ValueError:
        get_logger("kubetrio.x").exception("reconcile failed", key="ns/a")
    lines = out.getvalue().splitlines()
    assert TEXT_LINE.match(lines[0])
    assert lines[0].endswith('msg="reconcile failed" key=ns/a')
    assert "level=error" in lines[0]
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: bad thing"


def test_json_traceback_is_in_the_exception_key() -> None:
    out = configured("json")
    try:
        boom()
    except ValueError:
        logging.getLogger("pykube").exception("request failed")
    (record,) = json_lines(out)
    assert record["level"] == "error"
    assert record["exception"].startswith("Traceback (most recent call last):")
    assert record["exception"].endswith("ValueError: bad thing")


def test_text_values_never_break_the_line() -> None:
    out = configured("text")
    get_logger("x").info("multi\nline", value="a\nb\rc", quoted='say "hi"')
    (line,) = out.getvalue().splitlines()
    assert 'msg=multi\\nline value=a\\nb\\rc quoted="say \\"hi\\""' in line


@pytest.mark.parametrize(
    "key",
    [
        "token",
        "bearer_token",
        "bootstrap_token",
        "password",
        "secret",
        "clientSecret",
        "userData",
        "user_data",
        "Authorization",
        "client-key-data",
        "api_key",
        "credentials",
    ],
)
def test_secret_keys_are_redacted_in_both_formats(key: str) -> None:
    for fmt in ("text", "json"):
        out = configured(fmt)
        get_logger("x").info("creating machine", **{key: "s3cr3t-value"})
        assert "s3cr3t-value" not in out.getvalue()
        assert REDACTED in out.getvalue()


@pytest.mark.parametrize("key", ["secretName", "tokenFile", "name", "passwordPolicyName"])
def test_harmless_keys_are_kept(key: str) -> None:
    out = configured("json")
    get_logger("x").info("e", **{key: "visible"})
    assert json_lines(out)[0][key] == "visible"


def test_secret_values_are_redacted_anywhere() -> None:
    out = configured("json")
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
    get_logger("x").info(
        "joining with abcdef.0123456789abcdef",
        header="Authorization: Bearer abc.def-ghi",
        nested={"spec": {"userData": "#cloud-config", "ok": "kept"}, "list": [jwt]},
        cmd="kubeadm join --token=abcdef.0123456789abcdef",
    )
    logging.getLogger("urllib3").warning("sent password=hunter2 to %s", "host")
    raw = out.getvalue()
    for secret in ("abcdef.0123456789abcdef", "abc.def-ghi", "#cloud-config", jwt, "hunter2"):
        assert secret not in raw
    first, second = json_lines(out)
    assert first["msg"] == f"joining with {REDACTED}"
    assert first["header"] == f"Authorization: Bearer {REDACTED}"
    assert first["nested"]["spec"] == {"userData": REDACTED, "ok": "kept"}
    assert second["msg"] == f"sent password={REDACTED} to host"


def test_secrets_in_exceptions_are_redacted() -> None:
    out = configured("json")
    try:
        raise RuntimeError("auth failed for token abcdef.0123456789abcdef")
    except RuntimeError:
        get_logger("x").exception("failed")
    assert "0123456789abcdef" not in out.getvalue()


def test_kubeconfig_path_is_kept_but_inline_content_is_not() -> None:
    assert redact_value("kubeconfig", "/home/me/.kube/config") == "/home/me/.kube/config"
    assert redact_value("kubeconfig", "apiVersion: v1\nusers: []") == REDACTED
    assert redact_value("kubeconfig", {"users": []}) == REDACTED
    user = {"name": "admin", "user": {"client-key-data": "LS0t", "token": "x"}}
    assert redact_value("users", [user]) == [
        {"name": "admin", "user": {"client-key-data": REDACTED, "token": REDACTED}}
    ]


def test_redact_text_leaves_ordinary_text_alone() -> None:
    text = "node ip-10-0-0-1.ec2.internal drained in 3.5s (version 1.30.2)"
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("name", "number"),
    [("debug", 10), ("INFO", 20), ("warn", 30), ("Warning", 30), ("error", 40)],
)
def test_parse_level(name: str, number: int) -> None:
    assert parse_level(name) == number


def test_bad_level_and_format_name_the_value() -> None:
    with pytest.raises(ValueError, match=r"log level: expected one of debug, .*got 'verbose'"):
        configure_logging("text", "verbose")
    with pytest.raises(ValueError, match=r"log format: expected one of text, json, got 'xml'"):
        configure_logging("xml", "info")  # type: ignore[arg-type]
