"""The manager's configuration: one typed value from defaults, a file, the environment and flags.

Precedence is flags > environment > file > defaults, per setting. Every setting has one flag; its
environment variable is ``KUBETRIO_`` plus the flag's name in upper snake case (``--leader-elect``
is ``KUBETRIO_LEADER_ELECT``), and ``KUBECONFIG`` is honoured below ``KUBETRIO_KUBECONFIG``.

Everything is validated before the manager starts, and a problem is reported as one line that
says where the bad value came from (file and field path, environment variable or flag), because
that is what the operator has to go and fix. The file is checked on its own first, so a file
error always names the file; values from the environment and flags are parsed by kind (integer,
duration, list, …) as they are read, and then the whole merged value is checked once more.

One module per job: ``sections`` (the typed value; the controllers' sections are their own
options), ``settings`` (the flag and variable of each field), ``flags``, ``files``, ``parsing``
(text by kind), ``convert`` (msgspec's errors made readable), ``sources`` (who set what),
``validation`` and ``loading`` (the layering).
"""

from kubetrio.cmd.config.errors import ConfigError
from kubetrio.cmd.config.flags import add_config_flags
from kubetrio.cmd.config.loading import load_config
from kubetrio.cmd.config.sections import (
    DEFAULT_CONTROLLERS,
    DEFAULT_WORKERS,
    ManagerConfig,
    config_to_dict,
)
from kubetrio.cmd.config.settings import SETTINGS, Setting, env_var

__all__ = [
    "DEFAULT_CONTROLLERS",
    "DEFAULT_WORKERS",
    "SETTINGS",
    "ConfigError",
    "ManagerConfig",
    "Setting",
    "add_config_flags",
    "config_to_dict",
    "env_var",
    "load_config",
]
