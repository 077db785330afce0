"""``load_config``: defaults, then the file, then the environment, then flags, one field at a
time, checked as a whole before the manager starts."""

from __future__ import annotations

import argparse
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import msgspec

from kubetrio.cmd.config.convert import as_seconds, convert, file_dec_hook
from kubetrio.cmd.config.errors import ConfigError, dotted, show
from kubetrio.cmd.config.files import read_file
from kubetrio.cmd.config.parsing import parse_text
from kubetrio.cmd.config.sections import DEFAULT_WORKERS, ManagerConfig
from kubetrio.cmd.config.settings import CONFIG_FLAG, OPTIONAL_STRINGS, SETTINGS, Setting, env_var
from kubetrio.cmd.config.sources import FieldPath, Sources
from kubetrio.cmd.config.validation import validate

__all__ = ["load_config"]


def load_config(
    args: argparse.Namespace, environ: Mapping[str, str], known_controllers: Collection[str]
) -> ManagerConfig:
    """The validated configuration from defaults, file, environment and ``args``.

    ``args`` comes from a parser that had ``add_config_flags``; ``known_controllers`` are the
    names a controller registry can set up. Raises ConfigError with a one-line message.
    """
    file_flag = getattr(args, "config", None)
    file_name = file_flag if file_flag is not None else environ.get(env_var(CONFIG_FLAG)) or None
    file_data = read_file(Path(file_name)) if file_name else {}
    file_label = f"config file {file_name}" if file_name else None
    sources = Sources(file_label, file_data)

    # The file alone first, so that its errors always name the file.
    base = convert(
        _with_default_workers(file_data, file_label),
        sources,
        everything_from=file_label,
        dec_hook=file_dec_hook,
    )
    merged = msgspec.to_builtins(base, enc_hook=as_seconds)
    assert isinstance(merged, dict)

    kubeconfig = environ.get("KUBECONFIG")
    if kubeconfig:
        _put(merged, ("kubeconfig",), kubeconfig, "environment variable KUBECONFIG", sources)
    for setting in SETTINGS:
        if setting.env in environ:
            label = f"environment variable {setting.env}"
            _apply(merged, setting, [environ[setting.env]], label, sources)
    given_as: dict[FieldPath, tuple[str, Any]] = {}  # two flags for one field (--namespace)
    for setting in SETTINGS:
        given = getattr(args, setting.dest, None)
        if given is not None:
            values = given if isinstance(given, list) else [given]
            other = given_as.setdefault(setting.path, (setting.flag, values))
            if other[1] != values:
                raise ConfigError(
                    f"flag {setting.flag}: disagrees with flag {other[0]} (both set "
                    f"{dotted(setting.path)})"
                )
            _apply(merged, setting, values, f"flag {setting.flag}", sources)

    config = convert(merged, sources, everything_from=None)
    validate(config, sources, known_controllers)
    return config


def _with_default_workers(data: dict[str, Any], label: str | None) -> dict[str, Any]:
    """A file's ``workers`` adds to and overrides the defaults rather than replacing them all.

    Counts are checked here because msgspec would not name the key of a bad one.
    """
    workers = data.get("workers")
    if not isinstance(workers, dict):
        return data
    for name, count in workers.items():
        if isinstance(count, bool) or not isinstance(count, int):
            raise ConfigError(f"{label}: workers.{name}: expected an integer, got {show(count)}")
    return {**data, "workers": {**DEFAULT_WORKERS, **workers}}


def _apply(
    merged: dict[str, Any], setting: Setting, values: list[str], label: str, sources: Sources
) -> None:
    """Parse text from a flag or variable by the setting's kind and put it on its path."""
    if setting.kind == "workers":
        for item in (part.strip() for value in values for part in value.split(",")):
            if not item:
                continue
            name, sep, count = item.partition("=")
            if not sep or not name.strip():
                raise ConfigError(f"{label}: expected NAME=N, got {show(item)}")
            number = parse_text("int", count.strip(), label)
            _put(merged, (*setting.path, name.strip()), number, label, sources)
        return
    empty_is_unset = setting.path in OPTIONAL_STRINGS
    value = parse_text(setting.kind, values[-1], label, empty_is_unset=empty_is_unset)
    _put(merged, setting.path, value, label, sources)


def _put(merged: dict[str, Any], path: FieldPath, value: Any, label: str, sources: Sources) -> None:
    node = merged
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    sources.set(path, label)
