"""Loading a kubeconfig with errors a person can act on.

pykube-ng does the authentication once it has a config, but a broken file surfaces from it as
a bare ``KeyError('contexts')``. Here the file is checked first and every problem is named:
which file, which field, which context.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pykube
import yaml

from kubetrio.runtime.client.kubeconfig_files import credential_file_problem


class KubeconfigError(ValueError):
    """A kubeconfig (or in-cluster configuration) that cannot be used; ``str`` is one line
    naming the file and the field."""


def kubeconfig_path(path: str | None = None) -> Path:
    """``path``, else the first entry of ``$KUBECONFIG``, else ``~/.kube/config``."""
    if not path:
        entries = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        path = entries[0] if entries else "~/.kube/config"
    return Path(path).expanduser()


def _named(doc: dict[str, Any], section: str, name: str, where: Path) -> dict[str, Any]:
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(section[:-1])
            if isinstance(body, dict):
                return body
            raise KubeconfigError(f"kubeconfig {where}: {section}[{name}] has no {section[:-1]}")
    raise KubeconfigError(f"kubeconfig {where}: no {section[:-1]} named {name!r}")


def load_kubeconfig(
    path: str | None = None, context: str | None = None, server: str | None = None
) -> pykube.KubeConfig:
    """``server`` replaces the chosen cluster's (``--master``): its user still authenticates."""
    where = kubeconfig_path(path)
    try:
        text = where.read_text()
    except OSError as error:
        raise KubeconfigError(f"kubeconfig {where}: {error.strerror or error}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise KubeconfigError(f"kubeconfig {where}: not valid YAML ({error})") from None
    if not isinstance(doc, dict):
        raise KubeconfigError(f"kubeconfig {where}: expected a mapping at the top level")
    for section in ("clusters", "contexts", "users"):
        if not isinstance(doc.get(section), list) or not doc[section]:
            raise KubeconfigError(f"kubeconfig {where}: {section} is missing or empty")
    chosen = context or doc.get("current-context")
    if not chosen:
        raise KubeconfigError(f"kubeconfig {where}: no current-context and no --context given")
    ctx = _named(doc, "contexts", str(chosen), where)
    cluster = _named(doc, "clusters", str(ctx.get("cluster", "")), where)
    if server:
        cluster["server"] = server
    if not cluster.get("server"):
        raise KubeconfigError(f"kubeconfig {where}: cluster {ctx.get('cluster')!r} has no server")
    if ctx.get("user"):
        _named(doc, "users", str(ctx["user"]), where)
    config = pykube.KubeConfig(doc, current_context=str(chosen))
    config.filepath = where
    if (problem := credential_file_problem(config)) is not None:
        raise KubeconfigError(f"kubeconfig {where}: {problem}")
    return config
