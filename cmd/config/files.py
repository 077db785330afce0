"""Reading the config file: YAML or TOML by its extension, refused in one line naming the file
when it cannot be read, does not parse, or sets nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from kubetrio.cmd.config.errors import ConfigError

__all__ = ["read_file"]


def read_file(path: Path) -> dict[str, Any]:
    label = f"config file {path}"
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise ConfigError(f"{label}: unsupported extension {suffix!r}; use .yaml, .yml or .toml")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{label}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{label}: not UTF-8 text ({exc.reason})") from None
    try:
        data = tomllib.loads(text) if suffix == ".toml" else yaml.safe_load(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{label}: invalid TOML: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{label}: invalid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(data, dict | None):
        raise ConfigError(f"{label}: expected a mapping at the top, got {type(data).__name__}")
    if not data:
        # Almost always the wrong file or a template that rendered to nothing, not a wish
        # for all defaults (which needs no --config at all).
        raise ConfigError(f"{label}: the file is empty (it sets nothing)")
    return data


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())
