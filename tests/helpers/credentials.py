"""ServiceAccounts whose tokens the credential tests hand out, and kubeconfigs that use them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from kubetrio.emulator.testclient import EmuClient
from tests.helpers.rbac import bind, ok, sa_subject, service_account, token

PLUGIN = str(Path(__file__).with_name("exec_plugin.py"))
V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"


async def admin_account(admin: EmuClient, name: str) -> None:
    """A ServiceAccount bound to cluster-admin, so what it is refused is authentication's."""
    await service_account(admin, name)
    await bind(admin, f"{name}-admin", "ClusterRole", "cluster-admin", [sa_subject(name)], ns=None)


async def revoke(admin: EmuClient, name: str) -> None:
    """Every token of ServiceAccount ``name`` stops working: it is deleted and made anew (a
    token is bound to the account's uid), keeping its binding."""
    await ok(admin.request("DELETE", f"/api/v1/namespaces/default/serviceaccounts/{name}"))
    await service_account(admin, name)


async def fresh_token(admin: EmuClient, name: str, seconds: int = 3600) -> str:
    return await token(admin, name, seconds=seconds)


def write_kubeconfig(path: Path, server: str, user: dict[str, Any], **cluster: Any) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "emu", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "me"}}],
        "current-context": "emu",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def exec_user(state: Path, api_version: str = V1, **extra: Any) -> dict[str, Any]:
    stanza: dict[str, Any] = {
        "apiVersion": api_version,
        "command": sys.executable,
        "args": [PLUGIN, str(state)],
        "env": [{"name": "PLUGIN_GREETING", "value": "hello"}],
        **extra,
    }
    if api_version == V1:
        stanza.setdefault("interactiveMode", "Never")
    return {"exec": stanza}


def plugin_runs(state: Path) -> int:
    calls = state / "calls"
    return len(calls.read_text().splitlines()) if calls.exists() else 0
