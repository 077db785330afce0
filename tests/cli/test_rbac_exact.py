"""The shipped RBAC is exact: ``kubetrio run`` under the shipped ServiceAccount's token (never the
admin's) goes through a machine lifecycle, drains with evictions, a forced deletion, node
deletion, storage node-delete and GC, and leader election with no request denied — and every
(apiGroup, resource, verb) of the shipped roles allowed at least one request (the emulator's audit
log names the rule that allowed each). The same holds for a user's plugin controller under the
roles ``kubetrio rbac --controllers`` makes from its declaration."""

from __future__ import annotations

import os
import socket
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import requests
import trio
import yaml

from kubetrio.emulator import Emulator, EmulatorOptions
from kubetrio.emulator.faults import FaultRule
from kubetrio.runtime.gen.rbac import LEADER_ELECTION_ROLE, MANAGER_ROLE, PolicyRule, role_rules
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import ClusterSimulation
from kubetrio.sim.storage import serve_storage_sim
from tests.helpers.kube import Kubectl, kubectl_env
from tests.helpers.plugins import install_plugin
from tests.helpers.rbac_scenario import (
    NAMESPACE,
    REPO,
    SERVICE_ACCOUNT,
    Coverage,
    Usage,
    coverage,
    lifecycle,
    manager_args,
    manager_process,
    objects,
    read_usage,
    sa_kubeconfig,
    storage_until,
    until,
)
from tests.helpers.storage import add_ready_node

# Pods start at once and end quickly; a detach takes long enough that a forced deletion finds
# the volume still attached and deletes its VolumeAttachment itself.
SIM = ClusterSimulation(pod_start_delay=0.05, grace_factor=0.01, detach_delay=10.0)
# The scrapes skip verifying the self-signed serving certificate, as `curl -k`.
pytestmark = [
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),
    pytest.mark.kubectl,
    pytest.mark.process,
    pytest.mark.slow,
]

CLUSTER_ROLE = f"ClusterRole/{MANAGER_ROLE}"
ROLE = f"Role/{NAMESPACE}/{LEADER_ELECTION_ROLE}"
METRICS_AUTH_ROLE = "ClusterRole/kubetrio-metrics-auth-role"


def shipped(folder: Path, secure_metrics: bool = True) -> list[tuple[str, list[PolicyRule]]]:
    """The roles the manager's ServiceAccount is bound to (the metrics-auth one is only used
    when it serves /metrics securely)."""

    def rules(name: str) -> list[PolicyRule]:
        return role_rules(yaml.safe_load((folder / name).read_text()))

    return [
        (CLUSTER_ROLE, rules("role.yaml")),
        (ROLE, rules("leader_election_role.yaml")),
        *([(METRICS_AUTH_ROLE, rules("metrics_auth_role.yaml"))] if secure_metrics else []),
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def scraper_token(kubectl: Kubectl) -> str:
    """A token of a ServiceAccount bound to the shipped metrics-reader role, as Prometheus'."""
    await kubectl.run("create", "serviceaccount", "prometheus", "-n", NAMESPACE)
    await kubectl.run(
        "create", "clusterrolebinding", "prometheus-metrics",
        "--clusterrole", "kubetrio-metrics-reader",
        "--serviceaccount", f"{NAMESPACE}:prometheus",
    )  # fmt: skip
    return (await kubectl.out("create", "token", "prometheus", "-n", NAMESPACE)).strip()


async def scrape(port: int, token: str) -> requests.Response:
    url = f"https://127.0.0.1:{port}/metrics"
    return await trio.to_thread.run_sync(
        lambda: requests.get(
            url, headers={"Authorization": f"Bearer {token}"}, verify=False, timeout=10
        )
    )


async def install(emu: Emulator, kubectl: Kubectl, rbac: Path, home: Path) -> Path:
    """The CRDs, the namespace and ``rbac`` applied with kubectl; a kubeconfig holding only
    the ServiceAccount's token (from the TokenRequest API, as ``kubectl create token``)."""
    await kubectl.run("apply", "-k", str(REPO / "config" / "crd"))
    await kubectl.run("create", "namespace", NAMESPACE)
    await kubectl.run("apply", "-k", str(rbac))
    token = await kubectl.out("create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE)
    return sa_kubeconfig(home / "sa.kubeconfig", emu.url, token.strip())


def kubeconfig_token(kubeconfig: Path) -> str:
    """The manager's own token: it may review others' access, not scrape itself."""
    token: str = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
    return token


def report(title: str, usage: Usage, figures: Coverage) -> None:
    print(
        f"\n{title}: {usage.requests} requests by the ServiceAccount, {len(usage.denied)} "
        f"denied; rules used {figures.rules_used}/{figures.rules}, atoms used "
        f"{figures.atoms_used}/{figures.atoms}; unused: {figures.unused or 'none'}",
        file=sys.stderr,
    )


async def test_the_shipped_roles_allow_the_whole_lifecycle_and_nothing_more(
    tmp_path: Path, kubectl_binary: str
) -> None:
    audit = tmp_path / "audit.log"
    options = EmulatorOptions(audit_log_path=audit)
    async with (
        serve_world(options=options, simulate=SIM) as emu,
        serve_storage_sim(emu, offline_after=(0.0, 0.0), lock_seconds=0.0) as storage,
    ):
        kubectl = Kubectl(kubectl_binary, kubectl_env(emu, tmp_path))
        kubeconfig = await install(emu, kubectl, REPO / "config" / "rbac", tmp_path)
        # Storage GC's case: a node deleted while no manager ran leaves its storage node.
        add_ready_node(emu, "gone-while-down")
        await storage_until(
            storage, lambda: storage.node("gone-while-down") is not None, "registered"
        )
        emu.delete("v1", "Node", "gone-while-down")
        # A bootstrap token's create answered "already there" (an earlier attempt's, as after
        # a timeout): the controller reads it back.
        emu.faults.add(
            FaultRule(
                verb="create", resource="secrets", namespace="kube-system", status=409, count=1
            )
        )
        prometheus = await scraper_token(kubectl)
        metrics_port = free_port()
        secure = ("--metrics-secure", "--metrics-bind-address", f"127.0.0.1:{metrics_port}")
        started = trio.current_time()
        log = tmp_path / "manager.log"
        async with manager_process(kubeconfig, log, *manager_args(emu, storage), *secure):
            await until(
                emu,
                lambda: any(
                    lease["metadata"]["name"] == "kubetrio-leader"
                    and lease["spec"].get("holderIdentity")
                    for lease in objects(emu, "leases", "coordination.k8s.io", NAMESPACE)
                ),
                "the manager holds its Lease",
            )
            await storage_until(
                storage, lambda: storage.node("gone-while-down") is None, "the GC deleted it"
            )
            scenario = await lifecycle(emu, storage)
            # Secure metrics: the manager reviews the scraper's token and access itself.
            scraped = await scrape(metrics_port, prometheus)
            assert scraped.status_code == 200, scraped.text
            assert "controller_runtime_reconcile_total" in scraped.text
            assert (await scrape(metrics_port, kubeconfig_token(kubeconfig))).status_code == 403
        seconds = trio.current_time() - started
    assert scenario.evicted >= 2 and scenario.attachments_deleted >= 1
    usage = read_usage(audit)
    figures = coverage(usage, shipped(REPO / "config" / "rbac"))
    report("built-in controllers", usage, figures)
    print(f"scenario: {seconds:.1f} s, {scenario}", file=sys.stderr)
    assert usage.requests > 100
    assert [(e["verb"], e["requestURI"]) for e in usage.denied] == []
    assert figures.unused == [], "shipped but never needed: over-broad"
    assert figures.atoms_used == figures.atoms > 40


PLUGIN = textwrap.dedent(
    '''
    """A user's controller: stamps labelled ConfigMaps, declaring what that takes."""
    from kubetrio.api.core import ConfigMap
    from kubetrio.runtime.controller.controller import Result
    from kubetrio.runtime.gen.rbac import Permissions, cached, on

    RBAC = Permissions(cluster=(*cached(ConfigMap.KIND), on(ConfigMap.KIND, "patch")))


    class Stamp:
        def __init__(self, manager):
            self.client = manager.client
            self.lister = manager.cache.informer(ConfigMap, label_selector="stamp=yes").lister

        async def reconcile(self, key):
            obj = self.lister.get(key.namespace, key.name)
            if obj is not None and "stamped" not in obj.metadata.annotations:
                await self.client.patch(
                    ConfigMap, key.name, {"metadata": {"annotations": {"stamped": "yes"}}},
                    namespace=key.namespace,
                )
            return Result()


    def setup(manager, config):
        manager.controller("stamp").for_(ConfigMap, label_selector="stamp=yes").complete(
            Stamp(manager)
        )
    '''
)


def config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"stamp": "yes"}},
    }


async def test_a_plugin_runs_under_the_roles_made_from_its_declaration(
    tmp_path: Path, kubectl_binary: str
) -> None:
    plugins = install_plugin(tmp_path / "plugins", PLUGIN, {"stamp": "setup"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBETRIO_")}
    env["PYTHONPATH"] = str(plugins)
    rbac = tmp_path / "rbac"
    kubetrio = [sys.executable, "-m", "kubetrio.cmd.main", "rbac", "--controllers", "stamp"]
    printed = await trio.run_process(kubetrio, capture_stdout=True, env=env)
    cluster_role, role = yaml.safe_load_all(printed.stdout)
    assert cluster_role["metadata"]["name"] == MANAGER_ROLE
    assert cluster_role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "patch", "watch"]}
    ]
    assert role["metadata"] == {"name": LEADER_ELECTION_ROLE, "namespace": NAMESPACE}
    await trio.run_process([*kubetrio, "--write", str(rbac)], env=env)
    assert sorted(p.name for p in rbac.iterdir()) == sorted(
        p.name for p in (REPO / "config" / "rbac").glob("*.yaml")
    )

    audit = tmp_path / "audit.log"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        kubectl = Kubectl(kubectl_binary, kubectl_env(emu, tmp_path))
        kubeconfig = await install(emu, kubectl, rbac, tmp_path)
        async with manager_process(
            kubeconfig,
            tmp_path / "manager.log",
            "--controllers",
            "stamp",
            "--leader-elect",
            "--leader-election-namespace",
            NAMESPACE,
            env=env,
        ):
            emu.create(config_map("one"))
            await until(
                emu,
                lambda: (
                    "stamped"
                    in (
                        (emu.get("v1", "ConfigMap", "one", "default") or {})
                        .get("metadata", {})
                        .get("annotations")
                        or {}
                    )
                ),
                "the plugin stamped the ConfigMap",
            )
    usage = read_usage(audit)
    figures = coverage(usage, shipped(rbac, secure_metrics=False))
    report("plugin", usage, figures)
    assert [(e["verb"], e["requestURI"]) for e in usage.denied] == []
    assert figures.unused == []
