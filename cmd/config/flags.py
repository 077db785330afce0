"""The command line's configuration flags: ``--config`` and one flag per setting, each help
text ending with the setting's default (from its field's definition) and environment variable."""

from __future__ import annotations

import argparse

from kubetrio.cmd.argparser import format_default
from kubetrio.cmd.config.sections import ManagerConfig, config_to_dict
from kubetrio.cmd.config.settings import CONFIG_FLAG, SETTINGS, env_var
from kubetrio.cmd.config.sources import lookup

__all__ = ["add_config_flags"]


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--config`` and one flag per setting. Values are parsed by ``load_config``, so a bad
    one is reported like any other configuration error, naming the flag."""
    group = parser.add_argument_group(
        "configuration", "Flags override KUBETRIO_* environment variables, which override the file."
    )
    group.add_argument(
        CONFIG_FLAG,
        metavar="FILE",
        default=None,
        help=f"YAML or TOML config file (env {env_var(CONFIG_FLAG)})",
    )
    defaults = config_to_dict(ManagerConfig())
    for setting in SETTINGS:
        given, default = lookup(defaults, setting.path)
        shown = f"default: {format_default(default)}; " if given else ""
        help_text = f"{setting.help} ({shown}env {setting.env})"
        if setting.kind == "bool":
            group.add_argument(
                setting.flag,
                dest=setting.dest,
                nargs="?",
                const="true",
                default=None,
                metavar="BOOL",
                help=help_text,
            )
        elif setting.kind == "workers":
            group.add_argument(
                setting.flag,
                dest=setting.dest,
                action="append",
                default=None,
                metavar="NAME=N",
                help=help_text,
            )
        else:
            group.add_argument(
                setting.flag,
                dest=setting.dest,
                default=None,
                metavar=setting.kind.upper(),
                help=help_text,
            )
