"""Every option of the manager's configuration is reachable all three ways (flag, environment
variable, config file) and has one default: the one its definition declares (for the
controllers' sections, in their own packages), which is both what ``--help`` shows and what an
unset option gets.

Parametrized over the options themselves, read off ``ManagerConfig``'s type, so an option added
without a flag fails here rather than going unnoticed.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from kubetrio.cmd.argparser import format_default
from kubetrio.cmd.config import SETTINGS, ManagerConfig, Setting
from kubetrio.cmd.config.errors import dotted
from kubetrio.cmd.config.settings import kind_of
from kubetrio.cmd.config.sources import FieldPath
from kubetrio.runtime.util.duration import Duration
from tests.helpers.config import apart_for, load, parser, sample_text, value_at, write


def leaves(
    struct: msgspec.inspect.StructType, path: FieldPath = ()
) -> Iterator[tuple[FieldPath, Any]]:
    """Each option below ``struct``: its file path and its declared default."""
    for field in struct.fields:
        here = (*path, field.encode_name)
        if isinstance(field.type, msgspec.inspect.StructType):
            yield from leaves(field.type, here)
        elif field.default_factory is not msgspec.NODEFAULT:
            yield here, field.default_factory()
        else:
            yield here, field.default


config_type = msgspec.inspect.type_info(ManagerConfig)
assert isinstance(config_type, msgspec.inspect.StructType)
DEFAULTS: dict[FieldPath, Any] = dict(leaves(config_type))


def settings_for(path: FieldPath) -> list[Setting]:
    return [setting for setting in SETTINGS if setting.path == path]


def as_in_file(value: Any) -> Any:
    """A value as a config file (and a dump) writes it: durations Go's way, lists as lists."""
    if isinstance(value, Duration):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def file_value(path: FieldPath, text: str) -> Any:
    """What a config file writes for the command line's ``text``."""
    kind = kind_of(path)
    if kind in ("bool", "int", "float"):
        return yaml.safe_load(text)
    if kind == "list":
        return text.split(",")
    if kind == "workers":
        name, count = text.split("=")
        return {name: int(count)}
    return text


def flag_help(flag: str) -> str:
    actions: list[argparse.Action] = parser()._actions
    action = next(action for action in actions if flag in action.option_strings)
    assert action.help is not None
    return action.help


@pytest.mark.parametrize("path", DEFAULTS, ids=dotted)
def test_every_option_is_a_flag_a_variable_and_a_file_field(
    tmp_path: Path, path: FieldPath
) -> None:
    settings = settings_for(path)
    assert settings, f"{dotted(path)} has no flag: add it to kubetrio.cmd.config.settings"
    text = sample_text(path)
    apart = apart_for(path)
    document: Any = file_value(path, text)
    for part in reversed(path):
        document = {part: document}
    from_file = value_at(
        load([*apart, "--config", write(tmp_path, yaml.safe_dump(document))]), path
    )
    assert from_file != value_at(load(apart), path), "the sample must differ from the default"
    for setting in settings:
        assert value_at(load([*apart, setting.flag, text]), path) == from_file, setting.flag
        assert value_at(load(apart, {setting.env: text}), path) == from_file, setting.env


@pytest.mark.parametrize("path", DEFAULTS, ids=dotted)
def test_an_options_default_is_the_one_its_definition_declares(path: FieldPath) -> None:
    declared = as_in_file(DEFAULTS[path])
    assert value_at(load(), path) == declared  # unset (a dump leaves out what is None)
    for setting in settings_for(path):
        shown = "" if declared is None else f"default: {format_default(declared)}; "
        assert flag_help(setting.flag).endswith(f" ({shown}env {setting.env})"), setting.flag
