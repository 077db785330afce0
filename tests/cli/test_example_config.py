"""config/kubetrio.example.yaml, the documented config file, cannot drift from ManagerConfig: as
shipped it loads to exactly the defaults, with its commented-out settings enabled it still
loads, and together they name every field of the configuration."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kubetrio.cmd.assets import EXAMPLE_CONFIG, example_config_text
from kubetrio.cmd.config import ManagerConfig, add_config_flags, load_config
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.runtime.manager.plugins import ControllerRegistry

# "#name: value" (or "#  nested: value") is a setting to enable; "# text" is an explanation.
COMMENTED_SETTING = re.compile(r"^(\s*)#(?! \S)(?=\S| {2})", re.MULTILINE)


def load(path: Path) -> ManagerConfig:
    parser = argparse.ArgumentParser()
    add_config_flags(parser)
    args = parser.parse_args(["--config", str(path)])
    names = ControllerRegistry(BUILTIN_CONTROLLERS).names()
    return load_config(args, {}, names)


def field_paths(kind: type[msgspec.Struct], prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """Every setting's dotted file path (the names a file uses)."""
    for field in msgspec.structs.fields(kind):
        path = (*prefix, field.encode_name)
        annotation: Any = field.type
        if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
            yield from field_paths(annotation, path)
        else:
            yield ".".join(path)


def keys(data: Any, prefix: tuple[str, ...] = ()) -> set[str]:
    found: set[str] = set()
    for key, value in data.items():
        path = (*prefix, str(key))
        found.add(".".join(path))
        if isinstance(value, dict) and prefix != ("workers",) and key != "workers":
            found |= keys(value, path)
    return found


def enabled(text: str) -> str:
    """Every commented-out setting enabled; a certificate folder is only valid for secure
    metrics, so those are switched on with it."""
    text = COMMENTED_SETTING.sub(r"\1", text)
    assert "\nmetricsSecure: false\n" in text
    return text.replace("\nmetricsSecure: false\n", "\nmetricsSecure: true\n")


def test_the_example_as_shipped_loads_to_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / EXAMPLE_CONFIG
    path.write_text(example_config_text())
    assert load(path) == ManagerConfig()


def test_the_example_with_every_setting_enabled_loads_and_names_every_field(
    tmp_path: Path,
) -> None:
    text = enabled(example_config_text())
    assert text != example_config_text()  # the optional settings are there, commented out
    # The per-cluster kubeconfig files must exist to load; the example's paths are /etc's.
    for role in ("control", "target"):
        (tmp_path / f"{role}.kubeconfig").write_text("")
    path = tmp_path / EXAMPLE_CONFIG
    path.write_text(text.replace("/etc/kubetrio/", f"{tmp_path}/"))
    config = load(path)
    assert config.master == "https://api.example.com:6443"
    assert config.storage.backend_url is not None
    missing = set(field_paths(ManagerConfig)) - keys(yaml.safe_load(text))
    assert not missing, f"{EXAMPLE_CONFIG} does not document: {', '.join(sorted(missing))}"


def test_every_explanation_is_a_comment_and_every_setting_has_one() -> None:
    """A line enabled by mistake (an explanation read as a setting) would break the loads above;
    here: every top-level setting is introduced by an explanation right above it."""
    lines = example_config_text().splitlines()
    for number, line in enumerate(lines):
        if re.match(r"^#?[A-Za-z]\w*:", line):
            above = lines[number - 1]
            assert above.startswith("# ") or re.match(r"^#?[A-Za-z]\w*:", above), line
