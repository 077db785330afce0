"""The audit log records each authorization as kube-apiserver does (``authorization.k8s.io/
decision`` and ``/reason`` annotations, denials included) and, the emulator's own, which rule
of which role allowed the request — what proves a role's rules are all needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubetrio.emulator import EmulatorOptions
from kubetrio.emulator.testclient import EmuClient
from kubetrio.sim import serve_world
from tests.helpers.kube import Kubectl, kubectl_env
from tests.helpers.rbac import bind, role, rule, sa_subject, service_account, token

pytestmark = pytest.mark.kubectl


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_the_audit_log_names_the_decision_its_reason_and_the_rule(
    tmp_path: Path, kubectl_binary: str
) -> None:
    audit = tmp_path / "audit.log"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        admin = EmuClient(emu.url, emu.token)
        await service_account(admin, "reader")
        await role(admin, "cm-reader", [rule(["get"], ["secrets"]), rule(["list"], ["configmaps"])])
        await bind(admin, "read-cm", "Role", "cm-reader", [sa_subject("reader")])
        await role(admin, "node-reader", [rule(["list"], ["nodes"])], ns=None)
        await bind(admin, "read-nodes", "ClusterRole", "node-reader", [sa_subject("reader")], None)
        reader = EmuClient(emu.url, await token(admin, "reader"))
        assert (await reader.get("/api/v1/namespaces/default/configmaps")).status == 200
        assert (await reader.get("/api/v1/nodes")).status == 200
        assert (await reader.get("/api/v1/namespaces/default/pods")).status == 403
        kubectl = Kubectl(kubectl_binary, kubectl_env(emu, tmp_path))
        await kubectl.run("get", "namespaces")
    by_reader = [
        e
        for e in events(audit)
        if e["user"].get("username") == "system:serviceaccount:default:reader"
    ]
    assert [(e["objectRef"]["resource"], e["annotations"]) for e in by_reader] == [
        (
            "configmaps",
            {
                "authorization.k8s.io/decision": "allow",
                "authorization.k8s.io/reason": 'RBAC: allowed by RoleBinding "read-cm/default" '
                'of Role "cm-reader" to ServiceAccount "reader/default"',
                "emulator.kubetrio.io/rbac-rule": "Role/default/cm-reader#1",
            },
        ),
        (
            "nodes",
            {
                "authorization.k8s.io/decision": "allow",
                "authorization.k8s.io/reason": 'RBAC: allowed by ClusterRoleBinding "read-nodes" '
                'of ClusterRole "node-reader" to ServiceAccount "reader/default"',
                "emulator.kubetrio.io/rbac-rule": "ClusterRole/node-reader#0",
            },
        ),
        (
            "pods",
            {"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": ""},
        ),
    ]
    assert by_reader[2]["responseStatus"]["code"] == 403
    # The admin (system:masters) is allowed without a rule, as by the privileged-group
    # authorizer; a request that never authenticated was never authorized.
    by_kubectl = [e for e in events(audit) if e["userAgent"].startswith("kubectl")]
    assert by_kubectl[-1]["annotations"] == {
        "authorization.k8s.io/decision": "allow",
        "authorization.k8s.io/reason": "",
    }
